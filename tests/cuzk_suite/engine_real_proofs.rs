//! Real 2 KiB proofs through the Engine on mock devices backed by the CPU prover (I6: every
//! returned proof verifies), with a device that fails every other partition so partitions
//! are synthesised again and proved elsewhere, and byte-identical to the CPU backend's
//! proofs of the same partitions with the same fixed r and s. Where the proof kind does not
//! matter, the tests prove WindowPoSt, the smallest circuit at 2 KiB (WinningPoSt's is about
//! four times its size).

use crate::support;

use std::time::Duration;

use cuzk::actors::mock::find_overlap;
use cuzk::actors::{Error as EngineError, FailureCause};
use cuzk::{
    DeviceChoice, Engine, EngineConfig, MockDevice, MockDriver, ProofKind, ProveOptions,
    Randomness, RegisteredProof, SectorSize, SubmitOptions,
};

/// Two kinds on two mock devices, one failing every other partition: every proof verifies,
/// equals the CPU backend's proofs of the same partitions with the same r and s, and was
/// proved on a device that had its circuit preloaded.
#[test]
fn real_post_proofs_on_mock_devices_verify_and_match_the_cpu_backend() {
    let _cores = support::cores_shared();
    let kinds = [ProofKind::WinningPost, ProofKind::WindowPost];
    for k in kinds {
        support::store_with(k);
    }
    let (r, s) = support::fixed_rs();
    let opts = ProveOptions {
        randomness: Randomness::Fixed(r, s),
        verify: true,
        pce: true,
    };
    let mut devs = vec![MockDevice::new(6), MockDevice::new(7)];
    devs[0].fail_every = Some(2);
    let driver = MockDriver::new(devs.clone());
    let rec = driver.recorder();
    let mut cfg = EngineConfig::new(support::params_dir());
    cfg.devices = DeviceChoice::mock(&driver);
    cfg.prove = opts;
    cfg.synthesis_workers = 2;
    let engine = Engine::start(cfg).expect("engine starts");
    // Parameters preloaded through the API reach every device before any job.
    let winning = RegisteredProof::latest(ProofKind::WinningPost, SectorSize::S2KiB);
    engine.preload_srs(winning).expect("preload");
    let mut preloads = Vec::new();
    let asked = std::time::Instant::now();
    while preloads.len() < 2 && asked.elapsed() < Duration::from_secs(60) {
        preloads.extend(rec.take_preloads());
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut on: Vec<_> = preloads.iter().map(|(d, _)| *d).collect();
    on.sort();
    assert_eq!(on, vec![devs[0].id, devs[1].id], "{preloads:?}");
    let mut jobs = Vec::new();
    for round in 0..2 {
        for k in kinds {
            let req = support::inputs().get(k).clone();
            let s = engine
                .submit(&req, SubmitOptions::default())
                .unwrap_or_else(|e| panic!("round {round} {k}: {e}"));
            jobs.push((k, s.job));
        }
    }
    let store = support::store_with(ProofKind::WinningPost);
    for (k, job) in &jobs {
        let res = engine
            .wait(*job, Some(Duration::from_secs(600)))
            .expect("job completes");
        assert!(res.verified);
        let req = support::inputs().get(*k);
        assert!(
            cuzk::verify(&store, req, &res.proof).expect("verifier runs"),
            "{k}"
        );
        assert_eq!(
            res.proof,
            support::cpu_reference(*k),
            "{k}: engine and CPU backend differ"
        );
    }
    let st = engine.status().expect("status");
    assert_eq!(st.completed, 4);
    assert!(
        st.srs.len() >= 2,
        "both parameter sets loaded: {:?}",
        st.srs
    );
    engine.shutdown(Duration::from_secs(5)).expect("shutdown");
    let iv = rec.take();
    assert!(find_overlap(&iv).is_none());
    assert!(
        iv.iter().any(|i| i.outcome == "failed"),
        "the failing device failed some partitions, which were proved again elsewhere"
    );
    // Each circuit's parameters reach every device before its first partition there
    // (`Preload`, sent when they are loaded), whichever device proves what.
    let cold: Vec<_> = iv.iter().filter(|i| !i.preloaded).collect();
    assert!(
        cold.is_empty(),
        "partitions on devices without their circuit preloaded: {cold:#?}"
    );
    for d in [devs[0].id, devs[1].id] {
        assert!(
            iv.iter().any(|i| i.device == d),
            "device {d} proved nothing: {iv:#?}"
        );
    }
}

/// A device that returns wrong proofs is caught by verification: with a healthy device
/// beside it every job still completes with a verified proof; alone, the job fails with the
/// cause `Verification` (decided where the proof was checked, not read from a message).
#[test]
fn wrong_proofs_from_a_device_never_escape_and_fail_as_verification() {
    let _cores = support::cores_shared();
    support::store_with(ProofKind::WindowPost);
    let start = |devs: Vec<MockDevice>| {
        let driver = MockDriver::new(devs);
        let mut cfg = EngineConfig::new(support::params_dir());
        cfg.devices = DeviceChoice::mock(&driver);
        cfg.synthesis_workers = 2;
        (
            Engine::start(cfg).expect("engine starts"),
            driver.recorder(),
        )
    };
    let req = support::inputs().window_post.clone();
    let store = support::store_with(ProofKind::WindowPost);

    let mut liar = MockDevice::new(8);
    liar.corrupt_every = Some(1);
    let (engine, rec) = start(vec![liar.clone(), MockDevice::new(9)]);
    for _ in 0..3 {
        let res = engine
            .prove(&req, SubmitOptions::default())
            .expect("the healthy device proves it");
        assert!(cuzk::verify(&store, &req, &res.proof).expect("verifier runs"));
    }
    engine.shutdown(Duration::from_secs(5)).expect("shutdown");
    let iv = rec.take();
    assert!(
        iv.iter()
            .all(|i| i.outcome != "corrupt" || i.device == liar.id),
        "{iv:?}"
    );

    let (engine, _rec) = start(vec![liar]);
    match engine.prove(&req, SubmitOptions::default()) {
        Err(EngineError::JobFailed { cause, reason, .. }) => {
            assert_eq!(cause, FailureCause::Verification, "{reason}");
            assert!(reason.contains("does not verify"), "{reason}");
        }
        other => panic!("a wrong proof escaped or failed otherwise: {other:?}"),
    }
    engine.shutdown(Duration::from_secs(5)).expect("shutdown");
}

#[test]
fn a_bad_request_is_refused_at_submit_and_the_engine_keeps_serving() {
    let _cores = support::cores_shared();
    support::store_with(ProofKind::WindowPost);
    let mut cfg = EngineConfig::new(support::params_dir());
    cfg.devices = DeviceChoice::Cpu;
    let engine = Engine::start(cfg).expect("engine starts");
    let mut bad = support::inputs().window_post.clone();
    if let cuzk::ProofInputs::Post(p) = &mut bad.inputs {
        p.vanilla_proofs = vec![vec![1, 2, 3]];
    }
    let e = engine
        .submit(&bad, SubmitOptions::default())
        .expect_err("garbage accepted");
    assert!(e.to_string().contains("vanilla"), "{e}");
    let good = engine
        .prove(&support::inputs().window_post, SubmitOptions::default())
        .expect("a good request still proves");
    assert!(good.verified);
    assert_eq!(engine.devices().len(), 1);
    assert!(engine.devices()[0].id.is_cpu());
    engine.shutdown(Duration::from_secs(1)).expect("shutdown");
}

/// A vanilla proof changed by one bit is the submitter's fault, found once: PoSt and
/// SnapDeals witnesses that break a constraint are refused during synthesis (naming the
/// partition and the constraint), a PoRep C1 by the planner's vanilla check at submit; none
/// reaches a device, so none is retried.
#[test]
fn a_tampered_vanilla_proof_of_each_kind_is_refused_once_as_invalid_input() {
    let _cores = support::cores_shared();
    for k in ProofKind::ALL {
        support::store_with(k);
    }
    let driver = MockDriver::new(vec![MockDevice::new(6), MockDevice::new(7)]);
    let rec = driver.recorder();
    let mut cfg = EngineConfig::new(support::params_dir());
    cfg.devices = DeviceChoice::mock(&driver);
    let engine = Engine::start(cfg).expect("engine starts");
    let flip_last_domain = |v: &mut Vec<u8>| {
        // the last 32 bytes of a PoSt sector proof are its comm_r_last; flipping their low
        // bit keeps a valid field element
        let n = v.len();
        v[n - 32] ^= 1;
    };
    for kind in ProofKind::ALL {
        let mut req = support::inputs().get(kind).clone();
        match &mut req.inputs {
            cuzk::ProofInputs::Porep { c1_json, .. } => {
                // the last digit of a labeling proof parent's first byte, kept a byte
                // (0<->1, 2<->3, ...: 255 becomes 254)
                let needle = b"\"labeling_proofs\":[{\"parents\":[[";
                let start = find(c1_json, needle) + needle.len();
                let end = start + find(&c1_json[start..], b",");
                c1_json[end - 1] ^= 1;
            }
            cuzk::ProofInputs::Post(p) => flip_last_domain(&mut p.vanilla_proofs[0]),
            cuzk::ProofInputs::Snap(s) => {
                // the partition proof's first field, comm_r_old
                s.vanilla_proofs[0][0] ^= 1;
            }
        }
        let failure = match engine.submit(&req, SubmitOptions::default()) {
            Err(EngineError::Engine(e)) => {
                assert_eq!(
                    FailureCause::of_engine_error(&e),
                    FailureCause::InvalidInput,
                    "{kind}: {e}"
                );
                e.to_string()
            }
            Err(other) => panic!("{kind}: refused as {other:?}"),
            Ok(s) => match engine.wait(s.job, None) {
                Err(EngineError::JobFailed { cause, reason, .. }) => {
                    assert_eq!(cause, FailureCause::InvalidInput, "{kind}: {reason}");
                    assert!(
                        reason.contains("partition 0") && reason.contains("constraint"),
                        "{kind}: {reason}"
                    );
                    reason
                }
                other => panic!("{kind}: a tampered request ended as {other:?}"),
            },
        };
        let want = match kind {
            ProofKind::PorepC2 => "vanilla proofs do not verify",
            _ => "does not satisfy constraint",
        };
        assert!(failure.contains(want), "{kind}: {failure}");
        eprintln!("{kind}: {failure}");
    }
    assert!(
        rec.take().is_empty(),
        "a tampered partition reached a device"
    );
    // and the engine still proves
    let good = engine
        .prove(&support::inputs().window_post, SubmitOptions::default())
        .expect("a good request still proves");
    assert!(good.verified);
    engine.shutdown(Duration::from_secs(5)).expect("shutdown");
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| panic!("{} not found", String::from_utf8_lossy(needle)))
}

/// Real proofs on a pipelining device: each proof is verified beside the device, after its
/// lease has left the device (`left_device`), and the device still gets its next lease in
/// time to name it to its worker (where a GPU uploads it during the current kernels). A lease
/// that stayed in the table until its verification ended would leave the table full when the
/// device asks for more, and no partition would ever be named (measured: 0 of 7).
#[test]
fn a_pipelining_device_names_its_next_real_partition_while_proofs_are_verified() {
    let _cores = support::cores_shared();
    support::store_with(ProofKind::WindowPost);
    let mut dev = MockDevice::new(5);
    dev.depth = 2;
    // The first partition after the warm-up holds the device for 2 s, so the other jobs are
    // synthesised by the time it ends however loaded the machine is: from then on a partition
    // is ready whenever the device asks, and only the lease table can stop the naming.
    dev.hang_on = Some(2);
    dev.hang_for = Duration::from_secs(2);
    let driver = MockDriver::new(vec![dev]);
    let rec = driver.recorder();
    let mut cfg = EngineConfig::new(support::params_dir());
    cfg.devices = DeviceChoice::mock(&driver);
    cfg.synthesis_workers = 2;
    let engine = Engine::start(cfg).expect("engine starts");
    let req = support::inputs().window_post.clone();
    engine
        .prove(&req, SubmitOptions::default())
        .expect("warm-up");
    let jobs: Vec<_> = (0..6)
        .map(|_| {
            engine
                .submit(&req, SubmitOptions::default())
                .expect("submit")
                .job
        })
        .collect();
    for job in jobs {
        let res = engine
            .wait(job, Some(Duration::from_secs(600)))
            .expect("job completes");
        assert!(res.verified);
    }
    engine.shutdown(Duration::from_secs(5)).expect("shutdown");
    let mut iv = rec.take();
    iv.sort_by_key(|i| i.start);
    assert!(find_overlap(&iv).is_none());
    let named = iv.iter().filter(|i| i.ahead.is_some()).count();
    assert!(
        named >= 3,
        "only {named} of {} partitions had the next one named: {iv:#?}",
        iv.len()
    );
}

/// A non-interactive PoRep (registered proof 15) through the Engine on the CPU: 13 PoRep
/// partitions take about 5 minutes on 2 cores, so CI leaves it to `--include-ignored`;
/// `gpu_engine` runs the same check on a GPU in the device suite, and the aggregation itself
/// is unit-tested in `engine::aggregate`.
#[test]
#[ignore = "13 PoRep partitions: about 5 minutes on 2 cores (gpu_engine runs it on a GPU)"]
fn a_non_interactive_porep_is_one_aggregate_filecoin_proofs_accepts() {
    let _cores = support::cores_shared();
    support::non_interactive_porep_round_trip(DeviceChoice::Cpu);
}

/// Mock devices of `vram` bytes (proving on the CPU) whose leases reserve what the CUDA
/// backend plans for a GPU of that size under `config`'s memory budget: admission as it is on
/// real cards, without one.
struct BudgetedMock {
    mock: MockDriver,
    cuda: cuzk::actors::driver::CudaDriver,
}

impl cuzk::actors::DeviceDriver for BudgetedMock {
    fn name(&self) -> &'static str {
        "budgeted-mock"
    }
    fn discover(&self) -> cuzk::actors::Result<Vec<cuzk::actors::DeviceInfo>> {
        self.mock.discover()
    }
    fn open(
        &self,
        device: &cuzk::actors::DeviceInfo,
    ) -> cuzk::actors::Result<Box<dyn cuzk::actors::DeviceWorker>> {
        self.mock.open(device)
    }
    fn vram_for(&self, device: &cuzk::actors::DeviceInfo, srs: &cuzk::Srs) -> u64 {
        self.cuda.vram_for(device, srs)
    }
    fn vram_shared_for(&self, device: &cuzk::actors::DeviceInfo, srs: &cuzk::Srs) -> u64 {
        self.cuda.vram_shared_for(device, srs)
    }
    fn usable_vram(&self, device: &cuzk::actors::DeviceInfo) -> u64 {
        self.cuda.usable_vram(device)
    }
    fn pipeline_depth(&self, device: &cuzk::actors::DeviceInfo) -> usize {
        self.mock.pipeline_depth(device)
    }
    fn lease_batch(&self, device: &cuzk::actors::DeviceInfo, srs: &cuzk::Srs) -> usize {
        self.cuda.lease_batch(device, srs)
    }
}

/// Device memory budgets as a GPU's leases see them: a budget that holds a partition only
/// with its parameters streamed admits it and reserves the streamed plan (no shared
/// parameters); a budget below what even streaming needs fails the job at preparation with
/// the bytes it needs, before any device work, and the engine goes on serving.
#[test]
fn device_memory_budgets_admit_streamed_partitions_and_refuse_what_cannot_fit() {
    let _cores = support::cores_shared();
    let kind = ProofKind::WindowPost;
    let store = support::store_with(kind);
    let req = support::inputs().get(kind).clone();
    let srs = store
        .get(RegisteredProof::latest(kind, SectorSize::S2KiB))
        .expect("parameters");
    let chunk = 64;
    let streamed = cuzk::cuda::lease_plan(&srs, u64::MAX, Some(chunk)).expect("plan");
    assert_eq!(
        streamed.residency,
        cuzk::cuda::Residency::Streamed { chunk }
    );
    // the rings and working memory serve all the circuit's partitions on a device, one at
    // a time or batched; each lease adds its share of a batch
    assert!(
        streamed.shared > 0 && streamed.shared < streamed.bytes,
        "{streamed:?}"
    );
    let resident = cuzk::cuda::lease_plan(&srs, u64::MAX, None).expect("plan");
    assert_eq!(resident.residency, cuzk::cuda::Residency::Resident);
    assert!(resident.shared > 0 && resident.shared < resident.bytes);

    let run = |limit: u64| {
        let devs = vec![MockDevice::new(6)];
        let mut devs = devs;
        devs[0].vram = 80 << 30;
        let mock = MockDriver::new(devs);
        let rec = mock.recorder();
        let mut cfg = EngineConfig::new(support::params_dir());
        cfg.gpu_memory_limit = Some(limit);
        cfg.gpu_stream_chunk = Some(chunk);
        cfg.prove = ProveOptions::default();
        let cuda = cuzk::actors::cuda_driver(&cfg);
        cfg.devices =
            DeviceChoice::Driver(std::sync::Arc::new(BudgetedMock { mock, cuda }), vec![]);
        let engine = Engine::start(cfg).expect("engine starts");
        let job = engine
            .submit(&req, SubmitOptions::default())
            .expect("submit")
            .job;
        let res = engine.wait(job, Some(Duration::from_secs(300)));
        let st = engine.status().expect("status");
        engine.shutdown(Duration::from_secs(5)).expect("shutdown");
        (res, rec.take(), st)
    };

    // room for one streamed partition: proved, each lease reserving the streamed plan
    let (res, intervals, st) = run(cuzk::cuda::CONTEXT_RESERVE + streamed.bytes);
    let res = res.expect("a streamed partition fits");
    assert!(res.verified);
    assert!(!intervals.is_empty());
    assert!(
        intervals.iter().all(|i| i.vram == streamed.bytes),
        "{intervals:?}"
    );
    assert_eq!(st.devices[0].usable_vram, streamed.bytes);

    // a byte less: refused before any device work, naming the bytes
    let (res, intervals, _) = run(cuzk::cuda::CONTEXT_RESERVE + streamed.bytes - 1);
    let err = res.expect_err("nothing fits");
    let msg = err.to_string();
    assert!(
        msg.contains("bytes of device memory") && msg.contains(&streamed.bytes.to_string()),
        "{msg}"
    );
    assert!(
        matches!(
            &err,
            EngineError::JobFailed {
                cause: FailureCause::Device,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        intervals.is_empty(),
        "no partition reached a device: {intervals:?}"
    );
}

/// Streamed partitions of one circuit that a device holds leases for are proved as one batch
/// (which, on a GPU, walks each chunk of the L, A and B bases once for all of them): a device
/// whose pipeline depth is 1 but which batches four, held up on its first partition, gets
/// the next ones granted meanwhile, past its depth (each lease reserving the shared working
/// memory once and its own share), and proves them together; every proof verifies.
#[test]
fn streamed_partitions_a_device_holds_are_proved_as_one_batch() {
    let _cores = support::cores_shared();
    let kind = ProofKind::WindowPost;
    let store = support::store_with(kind);
    let req = support::inputs().get(kind).clone();
    let srs = store
        .get(RegisteredProof::latest(kind, SectorSize::S2KiB))
        .expect("parameters");
    let chunk = 64;
    let plan = cuzk::cuda::lease_plan(&srs, u64::MAX, Some(chunk)).expect("plan");
    let mut dev = MockDevice::new(7);
    dev.depth = 1;
    dev.batch = 4;
    dev.hang_on = Some(1);
    dev.hang_for = Duration::from_secs(3);
    let mock = MockDriver::new(vec![dev]);
    let rec = mock.recorder();
    let mut cfg = EngineConfig::new(support::params_dir());
    // room for four leases of the circuit: the working memory once, four shares
    cfg.gpu_memory_limit =
        Some(cuzk::cuda::CONTEXT_RESERVE + plan.shared + 4 * (plan.bytes - plan.shared));
    cfg.gpu_stream_chunk = Some(chunk);
    cfg.prove = ProveOptions::default();
    let cuda = cuzk::actors::cuda_driver(&cfg);
    cfg.devices = DeviceChoice::Driver(std::sync::Arc::new(BudgetedMock { mock, cuda }), vec![]);
    let engine = Engine::start(cfg).expect("engine starts");
    let jobs: Vec<_> = (0..5)
        .map(|_| {
            engine
                .submit(&req, SubmitOptions::default())
                .expect("submit")
                .job
        })
        .collect();
    for job in jobs {
        let res = engine
            .wait(job, Some(Duration::from_secs(300)))
            .expect("job completes");
        assert!(res.verified);
    }
    engine.shutdown(Duration::from_secs(5)).expect("shutdown");
    let iv = rec.take();
    assert_eq!(iv.len(), 5, "{iv:#?}");
    assert!(iv.iter().all(|i| i.batch <= 4), "{iv:#?}");
    assert!(
        iv.iter().any(|i| i.batch >= 2),
        "no partitions were batched: {iv:#?}"
    );
    // the first lease reserves the working memory and its share, the others their share
    let share = plan.bytes - plan.shared;
    assert!(
        iv.iter().all(|i| i.vram == plan.bytes || i.vram == share),
        "{iv:#?}"
    );
}
