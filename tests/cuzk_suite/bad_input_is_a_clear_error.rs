//! Bad input never panics and never yields a proof: each case gives an error that names the
//! problem.

use crate::support;

use cuzk::actors::{Error as EngineError, FailureCause};
use cuzk::{
    circuits, DeviceChoice, Engine, EngineConfig, Error, PostInputs, ProofInputs, ProofKind,
    ProofRequest, RegisteredProof, SectorSize, SrsStore, SubmitOptions,
};

fn c1_json() -> Vec<u8> {
    match &support::inputs().porep.inputs {
        ProofInputs::Porep { c1_json, .. } => c1_json.clone(),
        _ => unreachable!("porep request carries a C1 output"),
    }
}

fn plan_err(request: &ProofRequest) -> String {
    match circuits::plan(request) {
        Ok(_) => panic!("plan accepted bad input"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn truncated_c1_json_is_rejected() {
    let _cores = support::cores_shared();
    let json = c1_json();
    let e = ProofRequest::porep_from_c1(Some(5), &json[..json.len() / 2], None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot decode the C1 output"), "{e}");
}

#[test]
fn garbled_c1_json_is_rejected() {
    let _cores = support::cores_shared();
    let mut json = c1_json();
    let mid = json.len() / 3;
    for b in &mut json[mid..mid + 64] {
        *b = b'#';
    }
    let e = ProofRequest::porep_from_c1(Some(5), &json, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot decode the C1 output"), "{e}");

    let e = ProofRequest::porep_from_c1(Some(5), br#"{"comm_r": 5}"#, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no vanilla_proofs"), "{e}");
    let e =
        plan_err(&ProofRequest::porep_from_c1(Some(5), br#"{"vanilla_proofs": 5}"#, None).unwrap());
    assert!(e.contains("C1 output JSON"), "{e}");
}

#[test]
fn c1_for_another_sector_size_is_rejected() {
    let _cores = support::cores_shared();
    // The 2 KiB C1 output presented as an 8 MiB sector's.
    let req = ProofRequest::porep_from_c1(Some(6), &c1_json(), None).unwrap();
    let e = plan_err(&req);
    assert!(e.contains("do not verify as porep-c2 8MiB"), "{e}");

    // A request file whose sector size contradicts its registered proof.
    let mut file: serde_json::Value =
        serde_json::from_slice(&support::inputs().porep.to_json().unwrap()).unwrap();
    file["sector_size"] = serde_json::json!(8u64 << 20);
    let e = ProofRequest::from_json(&serde_json::to_vec(&file).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not match registered proof"), "{e}");
}

#[test]
fn registered_proof_of_another_kind_is_rejected() {
    let _cores = support::cores_shared();
    let e = RegisteredProof::new(ProofKind::WindowPost, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a window-post proof"), "{e}");

    // WinningPoSt vanilla proofs presented as a WindowPoSt request: decodes, but the
    // challenges do not match, so no proof is built.
    let winning = match &support::inputs().winning_post.inputs {
        ProofInputs::Post(p) => p.clone(),
        _ => unreachable!(),
    };
    let window = RegisteredProof::latest(ProofKind::WindowPost, SectorSize::S2KiB);
    let req = ProofRequest::new(
        window,
        ProofInputs::Post(PostInputs {
            partition_index: Some(0),
            ..winning
        }),
    )
    .unwrap();
    assert!(circuits::plan(&req).is_err());

    // PoSt inputs under a PoRep registered proof.
    let porep = RegisteredProof::latest(ProofKind::PorepC2, SectorSize::S2KiB);
    let e = ProofRequest::new(porep, support::inputs().window_post.inputs.clone())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot carry PoSt inputs"), "{e}");
}

#[test]
fn empty_vanilla_proof_list_is_rejected() {
    let _cores = support::cores_shared();
    let mut post = match &support::inputs().window_post.inputs {
        ProofInputs::Post(p) => p.clone(),
        _ => unreachable!(),
    };
    post.vanilla_proofs.clear();
    let proof = RegisteredProof::latest(ProofKind::WindowPost, SectorSize::S2KiB);
    let e = ProofRequest::new(proof, ProofInputs::Post(post))
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty"), "{e}");
    let e = ProofRequest::porep_from_c1(Some(5), &[], None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a JSON object"), "{e}");
}

#[test]
fn garbled_post_vanilla_proof_is_rejected() {
    let _cores = support::cores_shared();
    let mut post = match &support::inputs().window_post.inputs {
        ProofInputs::Post(p) => p.clone(),
        _ => unreachable!(),
    };
    post.vanilla_proofs[0].truncate(10);
    let proof = RegisteredProof::latest(ProofKind::WindowPost, SectorSize::S2KiB);
    let e = plan_err(&ProofRequest::new(proof, ProofInputs::Post(post)).unwrap());
    assert!(e.contains("bincode FallbackPoStSectorProof"), "{e}");
}

/// `request` proved through an Engine on the CPU over parameter directory `dir`: the error
/// its job ends with (the engine is shut down before returning).
fn engine_error(dir: &std::path::Path, request: &ProofRequest) -> EngineError {
    let mut cfg = EngineConfig::new(dir);
    cfg.devices = DeviceChoice::Cpu;
    let engine = Engine::start(cfg).expect("a CPU engine starts");
    let err = engine
        .prove(request, SubmitOptions::default())
        .expect_err("no proof from unusable parameters");
    engine
        .shutdown(std::time::Duration::from_secs(5))
        .expect("shutdown");
    err
}

#[test]
fn missing_parameter_file_is_reported_with_its_path() {
    let _cores = support::cores_shared();
    let dir = tempfile::tempdir().unwrap();
    let store = SrsStore::new(dir.path());
    let req = &support::inputs().window_post;
    let err = store.get(req.proof).unwrap_err();
    assert!(matches!(err, Error::ParamsMissing { .. }), "{err}");
    let e = err.to_string();
    assert!(
        e.contains(&dir.path().display().to_string()) && e.contains("cuzk params"),
        "{e}"
    );
    // Through the Engine: the job fails as a parameter problem, with the same message.
    let err = engine_error(dir.path(), req);
    assert!(
        matches!(
            err,
            EngineError::JobFailed {
                cause: FailureCause::Params,
                ..
            }
        ),
        "{err}"
    );
    let e = err.to_string();
    assert!(
        e.contains(&dir.path().display().to_string()) && e.contains("cuzk params"),
        "{e}"
    );
}

#[test]
fn truncated_or_foreign_parameter_file_is_refused() {
    let _cores = support::cores_shared();
    let shared = support::store_with(ProofKind::WindowPost);
    let window = RegisteredProof::latest(ProofKind::WindowPost, SectorSize::S2KiB);
    let id = circuits::params_identifier(window).unwrap();
    let good = std::fs::read(shared.params_path(&id)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let store = SrsStore::new(dir.path());
    std::fs::write(store.params_path(&id), &good[..good.len() - 1000]).unwrap();
    let e = store.get(window).unwrap_err().to_string();
    assert!(e.contains("truncated"), "{e}");

    let mut extra = good.clone();
    extra.extend_from_slice(b"junk");
    std::fs::write(store.params_path(&id), &extra).unwrap();
    let e = SrsStore::new(dir.path())
        .get(window)
        .unwrap_err()
        .to_string();
    assert!(e.contains("trailing bytes"), "{e}");

    // Parameters of another circuit under this circuit's name: refused before proving.
    let winning_store = support::store_with(ProofKind::WinningPost);
    let winning = RegisteredProof::latest(ProofKind::WinningPost, SectorSize::S2KiB);
    let other =
        std::fs::read(winning_store.params_path(&circuits::params_identifier(winning).unwrap()))
            .unwrap();
    std::fs::write(store.params_path(&id), other).unwrap();
    let req = &support::inputs().window_post;
    let err = engine_error(dir.path(), req);
    assert!(
        matches!(
            err,
            EngineError::JobFailed {
                cause: FailureCause::Params,
                ..
            }
        ),
        "{err}"
    );
    let e = err.to_string();
    assert!(e.contains("parameters are for another circuit"), "{e}");
}
