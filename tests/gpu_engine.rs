//! The Engine on real GPUs (run on a GPU machine with `--include-ignored`): it finds the
//! GPUs by itself, proves each kind at 2 KiB on them, byte-identical to the CPU pipeline
//! with the same fixed r and s, verified; on a machine with several GPUs every one works
//! and no two partitions overlap on a device.

mod support;

use std::time::Duration;

use blstrs::Scalar;
use cuzk::{
    CpuBackend, DeviceChoice, Engine, EngineConfig, ProofKind, ProveOptions, Randomness,
    SubmitOptions,
};

#[test]
#[ignore = "needs a CUDA device"]
fn engine_proves_every_kind_on_the_gpus_like_the_cpu() {
    for k in ProofKind::ALL {
        support::store_with(k);
    }
    let opts = ProveOptions {
        randomness: Randomness::Fixed(Scalar::from(3u64), Scalar::from(5u64)),
        verify: true,
        pce: true,
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("trace.json");
    let mut cfg = EngineConfig::new(support::params_dir());
    cfg.devices = DeviceChoice::Auto;
    cfg.prove = opts.clone();
    cfg.trace_file = Some(trace.clone());
    cfg.synthesis_workers = 4;
    let engine = Engine::start(cfg).expect("engine starts");
    assert_eq!(
        engine.driver_name(),
        "cuda",
        "a GPU machine proves on its GPUs"
    );
    let gpus = engine.devices().len();
    eprintln!("devices: {:?}", engine.devices());
    let mut jobs = Vec::new();
    for round in 0..(2 * gpus) {
        for k in ProofKind::ALL {
            let req = support::inputs().get(k);
            let s = engine
                .submit(req, SubmitOptions::default())
                .expect("accepted");
            jobs.push((round, k, s.job));
        }
    }
    let store = support::store_with(ProofKind::WinningPost);
    for (round, k, job) in &jobs {
        let r = engine
            .wait(*job, Some(Duration::from_secs(600)))
            .expect("proved");
        assert!(r.verified);
        let req = support::inputs().get(*k);
        assert!(
            cuzk::verify(&store, req, &r.proof).expect("verifier"),
            "{k}"
        );
        if *round == 0 {
            let cpu = cuzk::prove(&store, &mut CpuBackend, req, &opts, &|_| {}).expect("CPU");
            assert_eq!(
                r.proof, cpu.bytes,
                "{k}: GPU engine and CPU pipeline differ"
            );
        }
    }
    let st = engine.status().expect("status");
    engine.shutdown(Duration::from_secs(10)).expect("shutdown");
    for d in &st.devices {
        eprintln!(
            "{} {}: {} partitions, busy {:?}",
            d.info.id, d.info.name, d.partitions_ok, d.busy
        );
        assert!(d.partitions_ok > 0, "device {} did no work", d.info.id);
        assert_eq!(d.partitions_failed, 0);
    }
    let (overlaps, tracks) = cuzk::batch::check_trace(&trace).expect("trace");
    assert_eq!(overlaps, 0);
    assert_eq!(tracks.len(), gpus, "{tracks:?}");
}

/// A non-interactive PoRep's 13 partitions proved on the GPUs and aggregated: filecoin-proofs'
/// `verify_seal` accepts the aggregate (see `support::non_interactive_porep_round_trip`).
#[test]
#[ignore = "needs a CUDA device"]
fn a_non_interactive_porep_on_the_gpus_is_one_aggregate_filecoin_proofs_accepts() {
    support::non_interactive_porep_round_trip(DeviceChoice::Auto);
}
