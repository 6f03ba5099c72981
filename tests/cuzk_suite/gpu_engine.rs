//! The Engine on real GPUs (run on a GPU machine with `--include-ignored`): it finds the
//! GPUs by itself, proves each kind at 2 KiB on them, byte-identical to the CPU backend's
//! proofs of the same partitions with the same fixed r and s, verified; on a machine with several GPUs every one works
//! and no two partitions overlap on a device.

use crate::support;

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
    let (r, s) = (Scalar::from(3u64), Scalar::from(5u64));
    let opts = ProveOptions {
        randomness: Randomness::Fixed(r, s),
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
        let res = engine
            .wait(*job, Some(Duration::from_secs(600)))
            .expect("proved");
        assert!(res.verified);
        let req = support::inputs().get(*k);
        assert!(
            cuzk::verify(&store, req, &res.proof).expect("verifier"),
            "{k}"
        );
        if *round == 0 {
            let cpu = support::prove_on_backend(&store, &mut CpuBackend, req, r, s).expect("CPU");
            assert_eq!(
                res.proof, cpu.bytes,
                "{k}: GPU engine and CPU backend differ"
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

/// An engine on the `dual` driver (the daemon's `devices.backend = "dual"`): the GPUs, every
/// operation checked against the CPU, prove each kind at 2 KiB with the proof the CPU
/// backend gives the same partitions, verified.
#[test]
#[ignore = "needs a CUDA device"]
fn a_dual_engine_proves_every_kind_like_the_cpu() {
    let (r, s) = (Scalar::from(7u64), Scalar::from(11u64));
    let mut cfg = EngineConfig::new(support::params_dir());
    cfg.devices = DeviceChoice::Dual(Vec::new());
    cfg.prove = ProveOptions {
        randomness: Randomness::Fixed(r, s),
        verify: true,
        pce: true,
    };
    let engine = Engine::start(cfg).expect("a dual engine starts");
    assert_eq!(engine.driver_name(), "dual");
    for k in ProofKind::ALL {
        let store = support::store_with(k);
        let req = support::inputs().get(k);
        let res = engine
            .prove(req, SubmitOptions::default())
            .unwrap_or_else(|e| panic!("{k}: {e}"));
        assert!(res.verified, "{k}");
        let cpu = support::prove_on_backend(&store, &mut CpuBackend, req, r, s).expect("CPU");
        assert_eq!(
            res.proof, cpu.bytes,
            "{k}: dual engine and CPU backend differ"
        );
    }
    engine.shutdown(Duration::from_secs(10)).expect("shutdown");
}

/// A non-interactive PoRep's 13 partitions proved on the GPUs and aggregated: filecoin-proofs'
/// `verify_seal` accepts the aggregate (see `support::non_interactive_porep_round_trip`).
#[test]
#[ignore = "needs a CUDA device"]
fn a_non_interactive_porep_on_the_gpus_is_one_aggregate_filecoin_proofs_accepts() {
    support::non_interactive_porep_round_trip(DeviceChoice::Auto);
}

/// A production-size PoRep C2 end to end on one GPU: a sparse 32 GiB sector's C1 output
/// (`cuzk::gen::sparse`), its 10 partitions synthesised through the PCE (recorded on first
/// use) and proved on the GPU with `cuzk params`' 32 GiB test parameters, then checked by
/// our verifier and by filecoin-proofs' `verify_seal` with the generated verifying key.
///
/// Needs `$CUZK_PRODUCTION_TEST_PARAMS`: a directory holding those parameters (`cuzk
/// --params-dir DIR params --kind porep-c2 --sector-size 32GiB`, about 44 GiB), and
/// `$FIL_PROOFS_PARAMETER_CACHE` set to it; about 70 GiB of device memory and 100 GiB of
/// host memory. With `$CUZK_C2_STREAM=N`, N more sectors' C2s follow, submitted at once,
/// each verified by filecoin-proofs: the steady stream's proofs per hour.
#[test]
#[ignore = "needs a CUDA device, 32 GiB test parameters and 100 GiB of host memory"]
fn a_sparse_32gib_porep_c2_is_proved_on_the_gpu_and_filecoin_proofs_verifies_it() {
    use cuzk::{RegisteredProof, SectorSize};
    let dir = std::path::PathBuf::from(
        std::env::var_os("CUZK_PRODUCTION_TEST_PARAMS")
            .expect("set CUZK_PRODUCTION_TEST_PARAMS to the 32 GiB test parameters' directory"),
    );
    assert_eq!(
        std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").map(std::path::PathBuf::from),
        Some(dir.clone()),
        "filecoin-proofs' verify_seal reads the verifying key from $FIL_PROOFS_PARAMETER_CACHE"
    );
    let proof = RegisteredProof::latest(ProofKind::PorepC2, SectorSize::S32GiB);
    let t0 = std::time::Instant::now();
    let sparse = cuzk::gen::sparse::porep(proof, 1).expect("a sparse 32 GiB C1");
    let c1_time = t0.elapsed();

    let trace = dir.join("c2-32gib-trace.json");
    let mut cfg = EngineConfig::new(&dir);
    cfg.devices = DeviceChoice::Auto;
    cfg.trace_file = Some(trace.clone());
    cfg.synthesis_workers = 3;
    cfg.host_memory_budget = 64 << 30;
    let engine = Engine::start(cfg).expect("engine starts");
    assert_eq!(engine.driver_name(), "cuda");
    let t1 = std::time::Instant::now();
    let result = engine
        .prove(&sparse.request, SubmitOptions::default())
        .expect("the 32 GiB C2 is proved");
    let prove_time = t1.elapsed();
    // Then a stream: `$CUZK_C2_STREAM` more sectors' C2s submitted at once, with the
    // parameters and the recording loaded: proofs per hour in steady state.
    let stream: usize = std::env::var("CUZK_C2_STREAM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let sectors: Vec<_> = (0..stream as u64)
        .map(|i| cuzk::gen::sparse::porep(proof, 2 + i).expect("a sparse 32 GiB C1"))
        .collect();
    let t3 = std::time::Instant::now();
    let jobs: Vec<_> = sectors
        .iter()
        .map(|s| {
            engine
                .submit(&s.request, SubmitOptions::default())
                .expect("accepted")
                .job
        })
        .collect();
    let mut streamed = Vec::new();
    for job in jobs {
        let r = engine
            .wait(job, Some(Duration::from_secs(3600)))
            .expect("a streamed C2 is proved");
        assert!(r.verified);
        eprintln!(
            "stream: C2 {} done at {:.1}s",
            streamed.len(),
            t3.elapsed().as_secs_f64()
        );
        streamed.push((r, t3.elapsed()));
    }
    if let (Some((_, first)), Some((_, last))) = (streamed.first(), streamed.last()) {
        let steady = (last.as_secs_f64() - first.as_secs_f64()) / (stream - 1).max(1) as f64;
        eprintln!(
            "stream of {stream} C2s: {:.1}s in all ({:.1} per hour); first done at {:.1}s, then one every {steady:.1}s ({:.1} per hour)",
            last.as_secs_f64(),
            3600.0 * stream as f64 / last.as_secs_f64(),
            first.as_secs_f64(),
            3600.0 / steady
        );
    }
    let status = engine.status().expect("status");
    engine.shutdown(Duration::from_secs(10)).expect("shutdown");
    assert_eq!(result.partitions, 10);
    assert!(result.verified);
    eprintln!(
        "32 GiB C2: C1 built in {:.1}s; proved and verified in {:.1}s ({:?})",
        c1_time.as_secs_f64(),
        prove_time.as_secs_f64(),
        result.timings
    );
    for d in &status.devices {
        eprintln!(
            "{} {}: {} partitions, busy {:?}",
            d.info.id, d.info.name, d.partitions_ok, d.busy
        );
    }

    let store = cuzk::SrsStore::new(&dir);
    assert!(cuzk::verify(&store, &sparse.request, &result.proof).expect("verifier runs"));
    let t2 = std::time::Instant::now();
    let filecoin = |bytes: &[u8]| {
        support::filecoin_verify_seal::<filecoin_proofs::SectorShape32GiB>(&sparse.request, bytes)
    };
    assert!(filecoin(&result.proof), "filecoin-proofs rejects the proof");
    eprintln!(
        "filecoin-proofs' verify_seal accepted it in {:.2}s; total from C1 to verified proof {:.1}s",
        t2.elapsed().as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    for ((r, _), s) in streamed.iter().zip(&sectors) {
        assert!(
            support::filecoin_verify_seal::<filecoin_proofs::SectorShape32GiB>(
                &s.request, &r.proof
            ),
            "filecoin-proofs rejects a streamed proof"
        );
    }
    let mut changed = result.proof.clone();
    changed[5 * 192 + 7] ^= 1;
    assert!(
        !filecoin(&changed),
        "filecoin-proofs accepts a changed proof"
    );
}

/// Test parameters made with the fixed-base products on the GPU are the CPU's file, byte
/// for byte (PoRep 2 KiB: every query, G1 and G2), and the GPU's proofs with them verify.
#[test]
#[ignore = "needs a CUDA device"]
fn parameters_generated_on_the_gpu_equal_the_cpus_byte_for_byte() {
    use cuzk::paramgen::products::ProductsOn;
    use cuzk::{RegisteredProof, SectorSize, SrsStore};
    let proof = RegisteredProof::latest(ProofKind::PorepC2, SectorSize::S2KiB);
    let (cpu_dir, gpu_dir) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let make = |dir: &std::path::Path, on: &ProductsOn| {
        let t = std::time::Instant::now();
        let (path, made) = SrsStore::new(dir)
            .generate_with_progress(proof, 7, on, &mut |_| {})
            .expect("generates");
        assert!(made);
        eprintln!("{} in {:.1}s", on.describe(), t.elapsed().as_secs_f64());
        std::fs::read(path).expect("reads the file")
    };
    let gpu = make(gpu_dir.path(), &ProductsOn::gpu(0).expect("a GPU"));
    let cpu = make(cpu_dir.path(), &ProductsOn::Cpu);
    assert_eq!(gpu.len(), cpu.len());
    let first = gpu.iter().zip(&cpu).position(|(a, b)| a != b);
    assert_eq!(first, None, "the files differ from byte {first:?}");
}
