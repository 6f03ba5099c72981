//! The PCE on real Filecoin circuits: for each kind at 2 KiB the recorded constraints plus
//! witness-only synthesis (sequential, and on several threads) and the evaluation (on one
//! thread, and in parallel) give a, b, c, densities and assignments equal to full synthesis bit
//! for bit (WindowPoSt synthesises its sectors in child systems joined with `extend`); the
//! first proofs of a shape record it once even when they arrive together at an Engine;
//! damaged cache files are rebuilt, never used.

use crate::support;

use std::time::Duration;

use cuzk::{circuits, DeviceChoice, Engine, EngineConfig, ProofKind, SubmitOptions};

fn pce_equals_full(kind: ProofKind) {
    let request = support::inputs().get(kind);
    let full = circuits::plan(request).unwrap();
    let pce = circuits::plan(request).unwrap();
    let r1cs = pce.blank.record().expect("record");
    for (f, p) in full.partitions.into_iter().zip(pce.partitions) {
        let want = f.circuit.synthesize().expect("full synthesis");
        // the witness on several threads (PoRep: in pieces, one label each) is the same witness
        let (par_input, par_aux) = p.circuit.clone_box().witness_parallel().expect("witness");
        let (input, aux) = p.circuit.witness().expect("witness");
        assert!(
            par_input == input && par_aux == aux,
            "{kind}: the parallel witness differs from the sequential one"
        );
        // rows on one thread give what rows in parallel tasks give (PoRep has several tasks)
        let seq = cuzk::pce::evaluate_sequential(&r1cs, input.clone(), aux.clone())
            .expect("evaluate on one thread");
        let got = cuzk::pce::evaluate(&r1cs, input, aux).expect("evaluate");
        assert!(seq == got, "{kind}: the sequential evaluation differs");
        assert_eq!(got.input, want.input, "{kind}: inputs");
        assert_eq!(got.aux, want.aux, "{kind}: aux");
        assert!(
            got.a == want.a && got.b == want.b && got.c == want.c,
            "{kind}: a/b/c"
        );
        assert_eq!(
            got.a_aux_density, want.a_aux_density,
            "{kind}: A aux density"
        );
        assert_eq!(
            got.b_input_density, want.b_input_density,
            "{kind}: B input density"
        );
        assert_eq!(
            got.b_aux_density, want.b_aux_density,
            "{kind}: B aux density"
        );
    }
}

#[test]
fn pce_winning_post_equals_full_synthesis() {
    let _cores = support::cores_shared();
    pce_equals_full(ProofKind::WinningPost);
}

#[test]
fn pce_window_post_with_extend_equals_full_synthesis() {
    let _cores = support::cores_shared();
    pce_equals_full(ProofKind::WindowPost);
}

#[test]
fn pce_porep_equals_full_synthesis() {
    let _cores = support::cores_shared();
    pce_equals_full(ProofKind::PorepC2);
}

#[test]
fn pce_snap_deals_equals_full_synthesis() {
    let _cores = support::cores_shared();
    pce_equals_full(ProofKind::SnapDeals);
}

/// An Engine on the CPU whose recorded circuits live in `pce_dir` (a fresh store: a fresh
/// process), with `workers` synthesis workers, which also prepare jobs' recordings.
fn engine_with_recordings_in(pce_dir: &std::path::Path, workers: usize) -> Engine {
    let mut cfg = EngineConfig::new(support::params_dir());
    cfg.devices = DeviceChoice::Cpu;
    cfg.pce_dir = Some(pce_dir.to_path_buf());
    cfg.synthesis_workers = workers;
    Engine::start(cfg).expect("a CPU engine starts")
}

/// Proves `request` through `engine`, shuts it down, and answers whether it was verified.
fn prove_and_stop(engine: &Engine, request: &cuzk::ProofRequest) -> bool {
    let verified = engine
        .prove(request, SubmitOptions::default())
        .expect("proof")
        .verified;
    engine.shutdown(Duration::from_secs(5)).expect("shutdown");
    verified
}

#[test]
fn pce_concurrent_first_proofs_record_once_and_bad_cache_is_rebuilt() {
    let _cores = support::cores_shared();
    support::store_with(ProofKind::WindowPost);
    let pce_dir = tempfile::tempdir().unwrap();
    let request = support::inputs().window_post.clone();
    // Four first proofs of one shape at once: four workers prepare their jobs together.
    let engine = engine_with_recordings_in(pce_dir.path(), 4);
    let jobs: Vec<_> = (0..4)
        .map(|_| {
            engine
                .submit(&request, SubmitOptions::default())
                .expect("accepted")
                .job
        })
        .collect();
    for job in jobs {
        assert!(engine.wait(job, None).expect("proof").verified);
    }
    assert_eq!(
        engine.store().pce().recorded_count(),
        1,
        "four concurrent first proofs recorded once"
    );
    engine.shutdown(Duration::from_secs(5)).expect("shutdown");

    // A fresh process (store) loads the file instead of recording.
    let files: Vec<_> = std::fs::read_dir(pce_dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pce"))
        .collect();
    assert_eq!(files.len(), 1);
    let again = engine_with_recordings_in(pce_dir.path(), 2);
    assert!(prove_and_stop(&again, &request));
    let store = again.store();
    assert_eq!(
        (store.pce().loaded_count(), store.pce().recorded_count()),
        (1, 0)
    );

    // Corrupt it: the next store records again (and the proof still verifies).
    let mut bytes = std::fs::read(&files[0]).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0xff;
    std::fs::write(&files[0], &bytes).unwrap();
    let third = engine_with_recordings_in(pce_dir.path(), 2);
    assert!(prove_and_stop(&third, &request));
    let store = third.store();
    assert_eq!(
        (store.pce().loaded_count(), store.pce().recorded_count()),
        (0, 1)
    );
    // and the rebuilt file is good again
    let fourth = engine_with_recordings_in(pce_dir.path(), 2);
    assert!(prove_and_stop(&fourth, &request));
    assert_eq!(fourth.store().pce().loaded_count(), 1);
}

#[test]
fn a_porep_challenge_missing_a_layer_is_refused_before_any_witness() {
    let _cores = support::cores_shared();
    // The witness in pieces reads each challenge's layer count; the planner's verification
    // of the vanilla proofs refuses such a C1 output first, as invalid input.
    let mut request = support::inputs().get(ProofKind::PorepC2).clone();
    let cuzk::ProofInputs::Porep { c1_json, .. } = &mut request.inputs else {
        panic!("a PoRep request holds a C1 output");
    };
    let mut c1: serde_json::Value = serde_json::from_slice(c1_json).expect("C1 JSON");
    let labels = c1["vanilla_proofs"][0][1]["labeling_proofs"]
        .as_array_mut()
        .expect("the second challenge's labeling proofs");
    labels.pop();
    *c1_json = serde_json::to_vec(&c1).expect("JSON");
    let err = circuits::plan(&request)
        .err()
        .expect("a challenge with a layer fewer is refused");
    assert!(matches!(err, cuzk::Error::InvalidRequest(_)), "{err}");
}
