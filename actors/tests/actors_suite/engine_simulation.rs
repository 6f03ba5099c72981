//! The actor runtime on mock devices: thousands of simulated partitions in seconds, checked
//! against the invariants I1-I5 (docs/architecture.md) on the intervals the devices themselves
//! recorded, plus every fault scenario of issue 4 and the seed incident as a regression.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use cuzk_actors::mock::find_overlap;
use cuzk_actors::work::simulated_token;
use cuzk_actors::{
    DeviceChoice, DeviceSelector, Engine, EngineConfig, Error, FailureCause, Interval, JobId,
    Limits, MockDevice, MockDriver, Priority, SimulatedJob, SubmitOptions,
};

fn config(driver: &MockDriver) -> EngineConfig {
    let mut c = EngineConfig::new(std::env::temp_dir().join("cuzk-sim-params-unused"));
    c.devices = DeviceChoice::mock(driver);
    c.synthesis_workers = 4;
    c.tick = Duration::from_millis(5);
    c
}

fn sim(partitions: usize, gpu_us: u64, vram: u64) -> SimulatedJob {
    SimulatedJob {
        partitions,
        vram_per_partition: vram,
        host_bytes_per_partition: 1 << 20,
        gpu_time: Duration::from_micros(gpu_us),
        ..SimulatedJob::default()
    }
}

/// Submits `count` copies of `job` with default options.
fn submit_many(engine: &Engine, count: usize, job: SimulatedJob) -> Vec<(JobId, usize)> {
    (0..count)
        .map(|_| {
            let n = job.partitions;
            let s = engine
                .submit_simulated(job.clone(), SubmitOptions::default())
                .unwrap();
            (s.job, n)
        })
        .collect()
}

/// Waits for every job and checks each partition's token landed once, in its place (I3).
fn wait_all(engine: &Engine, jobs: &[(JobId, usize)]) {
    for (j, n) in jobs {
        let r = engine.wait(*j, Some(Duration::from_secs(30))).unwrap();
        assert_eq!(r.proof, expected_proof(*j, *n), "job {j}");
    }
}

fn expected_proof(job: JobId, partitions: usize) -> Vec<u8> {
    (0..partitions)
        .flat_map(|p| simulated_token(job, p))
        .collect()
}

/// Checks I1 and I2 on recorded intervals, and returns ok-intervals per device.
fn check_devices(intervals: &[Interval], devices: &[MockDevice]) -> BTreeMap<String, usize> {
    if let Some((a, b)) = find_overlap(intervals) {
        panic!("I1 violated: two partitions overlap on one physical device:\n{a:?}\n{b:?}");
    }
    let mut per = BTreeMap::new();
    for i in intervals {
        let d = devices
            .iter()
            .find(|d| d.id == i.device)
            .expect("an interval on an unknown device");
        assert!(
            i.vram <= d.vram,
            "I2 violated: {i:?} reserves more than {}",
            d.vram
        );
        if i.outcome == "ok" {
            *per.entry(i.device.to_string()).or_insert(0) += 1;
        }
    }
    per
}

#[test]
fn thousands_of_partitions_hold_every_invariant() {
    let mut devs = vec![MockDevice::new(6), MockDevice::new(7), MockDevice::new(8)];
    devs[0].vram = 4 << 20;
    devs[1].speed = 2.0;
    devs[2].vram = 64 << 20;
    let driver = MockDriver::new(devs.clone());
    let rec = driver.recorder();
    let engine = Engine::start(config(&driver)).unwrap();
    let t0 = Instant::now();
    let mut jobs = Vec::new();
    let prios = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];
    for j in 0..600u64 {
        let parts = 1 + (j % 9) as usize;
        // some jobs need more VRAM than device 6 has: they may only run on 7 and 8
        let vram = if j % 5 == 0 { 8 << 20 } else { 1 << 20 };
        let s = engine
            .submit_simulated(
                sim(parts, 50 + (j % 7) * 30, vram),
                SubmitOptions {
                    priority: Some(prios[(j % 4) as usize]),
                    ..Default::default()
                },
            )
            .unwrap();
        jobs.push((s.job, parts, vram));
    }
    let total: usize = jobs.iter().map(|j| j.1).sum();
    for (job, parts, _) in &jobs {
        let r = engine.wait(*job, Some(Duration::from_secs(60))).unwrap();
        // I3: every partition exactly once, in its place
        assert_eq!(r.proof, expected_proof(*job, *parts), "job {job}");
        assert_eq!(r.partitions, *parts);
    }
    let elapsed = t0.elapsed();
    engine.shutdown(Duration::from_secs(1)).unwrap();
    let intervals = rec.take();
    let per = check_devices(&intervals, &devs);
    let ok: usize = per.values().sum();
    assert_eq!(
        ok, total,
        "each partition ran exactly once (no faults injected)"
    );
    assert_eq!(per.len(), 3, "every device worked: {per:?}");
    let big: BTreeSet<JobId> = jobs.iter().filter(|j| j.2 > 4 << 20).map(|j| j.0).collect();
    assert!(
        intervals
            .iter()
            .all(|i| !(big.contains(&i.job) && i.device == devs[0].id)),
        "a partition needing 8 MiB ran on the 4 MiB device"
    );
    eprintln!("{total} partitions on 3 mock devices in {elapsed:?}");
    assert!(total > 2500);
}

#[test]
fn a_waiting_higher_priority_partition_is_leased_first() {
    let devs = vec![MockDevice::new(6)];
    let driver = MockDriver::new(devs.clone());
    let rec = driver.recorder();
    let engine = Engine::start(config(&driver)).unwrap();
    // keep the only device busy while the queue fills
    let blocker = engine
        .submit_simulated(sim(1, 300_000, 1), SubmitOptions::default())
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let mut low = Vec::new();
    for _ in 0..10 {
        low.push(
            engine
                .submit_simulated(
                    sim(2, 100, 1),
                    SubmitOptions {
                        priority: Some(Priority::Low),
                        ..Default::default()
                    },
                )
                .unwrap()
                .job,
        );
    }
    let critical = engine
        .submit_simulated(
            sim(3, 100, 1),
            SubmitOptions {
                priority: Some(Priority::Critical),
                ..Default::default()
            },
        )
        .unwrap()
        .job;
    for j in low.iter().chain([&critical, &blocker.job]) {
        engine.wait(*j, Some(Duration::from_secs(30))).unwrap();
    }
    engine.shutdown(Duration::ZERO).unwrap();
    let iv = rec.take();
    let last_critical = iv
        .iter()
        .filter(|i| i.job == critical)
        .map(|i| i.start)
        .max()
        .unwrap();
    let first_low = iv
        .iter()
        .filter(|i| low.contains(&i.job))
        .map(|i| i.start)
        .min()
        .unwrap();
    assert!(
        last_critical < first_low,
        "I5: critical partitions submitted later must run before waiting low ones"
    );
}

fn run_workload(order: Vec<usize>) -> (BTreeMap<JobId, Vec<u8>>, BTreeSet<String>) {
    let devs = vec![MockDevice::new(6), MockDevice::new(7)];
    let driver = MockDriver::new(devs.clone())
        .with_ordinal_order(order)
        .unwrap();
    let rec = driver.recorder();
    let engine = Engine::start(config(&driver)).unwrap();
    let ids: Vec<(JobId, usize)> = (0..50)
        .map(|j| {
            let n = 1 + j % 4;
            (
                engine
                    .submit_simulated(sim(n, 200, 1), SubmitOptions::default())
                    .unwrap()
                    .job,
                n,
            )
        })
        .collect();
    let mut out = BTreeMap::new();
    for (j, _) in &ids {
        out.insert(
            *j,
            engine
                .wait(*j, Some(Duration::from_secs(30)))
                .unwrap()
                .proof,
        );
    }
    engine.shutdown(Duration::ZERO).unwrap();
    let iv = rec.take();
    let per = check_devices(&iv, &devs);
    (out, per.keys().cloned().collect())
}

#[test]
fn results_do_not_depend_on_ordinal_order() {
    let (a, da) = run_workload(vec![0, 1]);
    let (b, db) = run_workload(vec![1, 0]);
    assert_eq!(
        a, b,
        "I4: same jobs, same results, whatever the ordinal order"
    );
    assert_eq!(da, db);
    assert_eq!(da.len(), 2);
}

/// The incident of shared/seeds: per-ordinal mutexes while CUDA picked another device, more
/// workers than devices, ordinals permuted by CUDA_VISIBLE_DEVICES. Here devices are named
/// by PCI address, the ordinals are permuted, four synthesis workers feed two devices: no
/// two partitions ever overlap on one physical device, and both devices work.
#[test]
fn seed_incident_permuted_ordinals_never_overlap_on_a_physical_device() {
    let devs = vec![MockDevice::new(6), MockDevice::new(7)];
    let driver = MockDriver::new(devs.clone())
        .with_ordinal_order(vec![1, 0])
        .unwrap();
    let rec = driver.recorder();
    let mut cfg = config(&driver);
    cfg.devices = DeviceChoice::Driver(
        std::sync::Arc::new(driver.clone()),
        vec![
            "0000:00:06".parse::<DeviceSelector>().unwrap(),
            "0000:00:07".parse::<DeviceSelector>().unwrap(),
        ],
    );
    cfg.synthesis_workers = 4;
    let engine = Engine::start(cfg).unwrap();
    // ordinal 0 is physically 0000:00:07 here
    let d = engine.devices();
    assert_eq!(d.len(), 2);
    assert_eq!(d.iter().find(|x| x.ordinal == 0).unwrap().id, devs[1].id);
    let jobs = submit_many(&engine, 40, sim(10, 300, 1 << 20));
    wait_all(&engine, &jobs);
    engine.shutdown(Duration::ZERO).unwrap();
    let iv = rec.take();
    let per = check_devices(&iv, &devs);
    assert_eq!(per.len(), 2, "both physical devices did work: {per:?}");
    assert!(per.values().all(|&n| n >= 40), "{per:?}");
    assert_eq!(per.values().sum::<usize>(), 400);

    // naming one device twice (ordinal 0 is 0000:00:07) is refused at start
    let mut cfg = config(&driver);
    cfg.devices = DeviceChoice::Driver(
        std::sync::Arc::new(driver),
        vec!["0".parse().unwrap(), "0000:00:07".parse().unwrap()],
    );
    let e = Engine::start(cfg).err().expect("duplicate device accepted");
    assert!(e.to_string().contains("selected twice"), "{e}");
}

#[test]
fn a_device_failing_every_third_partition_loses_nothing() {
    let mut devs = vec![MockDevice::new(6), MockDevice::new(7)];
    devs[0].fail_every = Some(3);
    let driver = MockDriver::new(devs.clone());
    let rec = driver.recorder();
    let engine = Engine::start(config(&driver)).unwrap();
    let jobs = submit_many(&engine, 60, sim(5, 200, 1));
    wait_all(&engine, &jobs);
    let st = engine.status().unwrap();
    engine.shutdown(Duration::ZERO).unwrap();
    let iv = rec.take();
    check_devices(&iv, &devs);
    let failed = iv.iter().filter(|i| i.outcome == "failed").count();
    assert!(failed > 5, "faults were injected: {failed}");
    let ok = iv.iter().filter(|i| i.outcome == "ok").count();
    assert_eq!(ok, 300, "every partition landed exactly once");
    let d6 = st.devices.iter().find(|d| d.info.id == devs[0].id).unwrap();
    assert_eq!(d6.partitions_failed as usize, failed);
}

#[test]
fn a_hung_device_has_its_lease_revoked_and_the_late_result_discarded() {
    let mut devs = vec![MockDevice::new(6), MockDevice::new(7)];
    devs[0].hang_on = Some(1);
    devs[0].hang_for = Duration::from_millis(3000);
    let driver = MockDriver::new(devs.clone());
    let rec = driver.recorder();
    let mut cfg = config(&driver);
    cfg.limits = Limits {
        lease_timeout: Duration::from_millis(200),
        ..Limits::default()
    };
    let engine = Engine::start(cfg).unwrap();
    let t0 = Instant::now();
    let job = engine
        .submit_simulated(sim(6, 1000, 1), SubmitOptions::default())
        .unwrap()
        .job;
    let r = engine.wait(job, Some(Duration::from_secs(10))).unwrap();
    let took = t0.elapsed();
    assert_eq!(r.proof, expected_proof(job, 6));
    assert!(
        took < Duration::from_millis(2500),
        "the job waited for the hung device: {took:?}"
    );
    // the hung device answers later; its result must change nothing
    std::thread::sleep(Duration::from_millis(3200).saturating_sub(t0.elapsed()));
    let st = engine.status().unwrap();
    engine.shutdown(Duration::ZERO).unwrap();
    let iv = rec.take();
    check_devices(&iv, &devs);
    assert!(iv
        .iter()
        .any(|i| i.outcome == "hang" && i.device == devs[0].id));
    let ok_or_hang_per_partition = |p: usize| {
        iv.iter()
            .filter(|i| i.job == job && i.partition == p)
            .count()
    };
    let reruns = (0..6).filter(|&p| ok_or_hang_per_partition(p) == 2).count();
    assert_eq!(reruns, 1, "exactly the hung partition ran twice");
    assert_eq!(st.completed, 1);
}

#[test]
fn a_device_lost_mid_run_moves_its_work_elsewhere() {
    let mut devs = vec![MockDevice::new(6), MockDevice::new(7)];
    devs[0].lost_on = Some(4);
    let driver = MockDriver::new(devs.clone());
    let rec = driver.recorder();
    let engine = Engine::start(config(&driver)).unwrap();
    let jobs = submit_many(&engine, 20, sim(4, 300, 1));
    wait_all(&engine, &jobs);
    let st = engine.status().unwrap();
    engine.shutdown(Duration::ZERO).unwrap();
    let iv = rec.take();
    check_devices(&iv, &devs);
    let d6 = st.devices.iter().find(|d| d.info.id == devs[0].id).unwrap();
    assert!(
        d6.down.as_deref().unwrap_or("").contains("disappeared"),
        "{d6:?}"
    );
    assert_eq!(
        iv.iter()
            .filter(|i| i.device == devs[0].id && i.outcome == "lost")
            .count(),
        1
    );
    assert_eq!(
        iv.iter()
            .filter(|i| i.device == devs[0].id && i.outcome == "ok")
            .count(),
        3
    );
}

#[test]
fn a_panicking_device_is_a_failure_not_a_lost_job() {
    let mut devs = vec![MockDevice::new(6), MockDevice::new(7)];
    devs[0].panic_on = Some(2);
    let driver = MockDriver::new(devs.clone());
    let rec = driver.recorder();
    let engine = Engine::start(config(&driver)).unwrap();
    // 20 ms a partition: with 0.3 ms, device 7 could prove every remaining partition while
    // device 6's thread was still unwinding (CI's RUST_BACKTRACE capture takes milliseconds
    // on a loaded 2-core machine), leaving device 6 one ok partition (seen once in CI)
    let jobs = submit_many(&engine, 10, sim(3, 20_000, 1));
    wait_all(&engine, &jobs);
    engine.shutdown(Duration::ZERO).unwrap();
    let iv = rec.take();
    assert_eq!(iv.iter().filter(|i| i.outcome == "panic").count(), 1);
    assert!(
        iv.iter()
            .filter(|i| i.device == devs[0].id && i.outcome == "ok")
            .count()
            > 2,
        "the device keeps working after the panic"
    );
}

#[test]
fn a_panic_in_synthesis_fails_its_job_clearly_and_nothing_else() {
    let driver = MockDriver::new(vec![MockDevice::new(6)]);
    let engine = Engine::start(config(&driver)).unwrap();
    let bad = engine
        .submit_simulated(
            SimulatedJob {
                partitions: 4,
                panic_in_synthesis: Some(2),
                ..SimulatedJob::default()
            },
            SubmitOptions::default(),
        )
        .unwrap()
        .job;
    let good = engine
        .submit_simulated(sim(4, 100, 1), SubmitOptions::default())
        .unwrap()
        .job;
    match engine.wait(bad, Some(Duration::from_secs(10))) {
        Err(Error::JobFailed { reason, cause, .. }) => {
            assert!(reason.contains("synthesis panicked"), "{reason}");
            assert_eq!(cause, FailureCause::Synthesis, "{reason}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(
        engine
            .wait(good, Some(Duration::from_secs(10)))
            .unwrap()
            .proof,
        expected_proof(good, 4)
    );
    let st = engine.status().unwrap();
    assert_eq!((st.completed, st.failed), (1, 1));
    engine.shutdown(Duration::ZERO).unwrap();
}

#[test]
fn a_job_cancelled_mid_flight_ends_cancelled_and_the_device_moves_on() {
    let devs = vec![MockDevice::new(6)];
    let driver = MockDriver::new(devs.clone());
    let rec = driver.recorder();
    let engine = Engine::start(config(&driver)).unwrap();
    let job = engine
        .submit_simulated(sim(20, 30_000, 1), SubmitOptions::default())
        .unwrap()
        .job;
    std::thread::sleep(Duration::from_millis(100));
    assert!(engine.cancel(job).unwrap(), "it was running");
    let t = Instant::now();
    match engine.wait(job, Some(Duration::from_secs(5))) {
        Err(Error::Cancelled { .. }) => {}
        other => panic!("expected cancelled, got {other:?}"),
    }
    assert!(!engine.cancel(job).unwrap(), "already ended");
    assert!(matches!(engine.cancel(987_654), Err(Error::UnknownJob(_))));
    let next = engine
        .submit_simulated(sim(2, 100, 1), SubmitOptions::default())
        .unwrap()
        .job;
    assert_eq!(
        engine
            .wait(next, Some(Duration::from_secs(5)))
            .unwrap()
            .proof,
        expected_proof(next, 2)
    );
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "cancellation answered promptly"
    );
    engine.shutdown(Duration::ZERO).unwrap();
    let ran = rec.take().iter().filter(|i| i.job == job).count();
    assert!(
        (2..=6).contains(&ran),
        "only the partitions before the cancel ran: {ran}"
    );
}

#[test]
fn a_burst_of_ten_thousand_submissions_pushes_back_and_loses_nothing() {
    let driver = MockDriver::new(vec![MockDevice::new(6), MockDevice::new(7)]);
    let mut cfg = config(&driver);
    cfg.max_outstanding_partitions = 1500;
    cfg.host_memory_budget = 64 << 20; // 64 partitions of 1 MiB
    cfg.retain_results = 10_000; // every accepted job's result is kept until waited for here
    let engine = Engine::start(cfg).unwrap();
    let (mut accepted, mut refused) = (Vec::new(), 0usize);
    let mut max_host = 0;
    for i in 0..10_000 {
        match engine.submit_simulated(sim(1, 20, 1), SubmitOptions::default()) {
            Ok(s) => accepted.push(s.job),
            Err(Error::Backpressure(n)) => {
                assert!(n <= 1500);
                refused += 1;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
        if i % 500 == 0 {
            let st = engine.status().unwrap();
            max_host = max_host.max(st.host_memory_used);
            assert!(st.jobs_running <= 1500);
        }
    }
    assert!(refused > 0, "submit pushed back");
    for j in &accepted {
        assert_eq!(
            engine
                .wait(*j, Some(Duration::from_secs(60)))
                .unwrap()
                .proof,
            expected_proof(*j, 1)
        );
    }
    assert!(
        max_host <= 64 << 20,
        "host memory stayed within budget: {max_host}"
    );
    let st = engine.status().unwrap();
    assert_eq!(st.completed as usize, accepted.len());
    assert_eq!(st.jobs_running, 0);
    eprintln!("accepted {}, refused {refused}", accepted.len());
    engine.shutdown(Duration::ZERO).unwrap();
}

#[test]
fn host_memory_budget_holds_back_synthesis() {
    let driver = MockDriver::new(vec![MockDevice::new(6)]);
    let mut cfg = config(&driver);
    cfg.host_memory_budget = 3 << 20;
    let engine = Engine::start(cfg).unwrap();
    let job = engine
        .submit_simulated(sim(30, 5_000, 1), SubmitOptions::default())
        .unwrap()
        .job;
    let mut max = 0;
    while engine.progress(job).is_some() {
        let st = engine.status().unwrap();
        max = max.max(st.host_memory_used);
        assert!(st.partitions_ready <= 3);
        std::thread::sleep(Duration::from_millis(3));
    }
    engine.wait(job, None).unwrap();
    assert!(max <= 3 << 20 && max > 0, "{max}");
    engine.shutdown(Duration::ZERO).unwrap();
}

#[test]
fn timeouts_idempotency_and_late_waiters() {
    let driver = MockDriver::new(vec![MockDevice::new(6)]);
    let engine = Engine::start(config(&driver)).unwrap();
    let opts = SubmitOptions {
        request_id: Some("req-1".into()),
        ..Default::default()
    };
    let a = engine
        .submit_simulated(sim(3, 100_000, 1), opts.clone())
        .unwrap();
    let b = engine.submit_simulated(sim(3, 100_000, 1), opts).unwrap();
    assert_eq!(a.job, b.job);
    assert!(!a.existing && b.existing);
    // a wait that times out leaves the job running
    match engine.wait(a.job, Some(Duration::from_millis(50))) {
        Err(Error::Timeout { .. }) => {}
        other => panic!("expected timeout, got {other:?}"),
    }
    let r = engine.wait(a.job, None).unwrap();
    assert_eq!(r.proof, expected_proof(a.job, 3));
    // a late waiter gets the kept result
    assert_eq!(
        engine.wait(a.job, Some(Duration::ZERO)).unwrap().proof,
        r.proof
    );
    assert!(matches!(
        engine.wait(424_242, None),
        Err(Error::UnknownJob(_))
    ));
    // a job that cannot finish in its own timeout fails with a clear reason
    let slow = engine
        .submit_simulated(
            sim(5, 100_000, 1),
            SubmitOptions {
                timeout: Some(Duration::from_millis(150)),
                ..Default::default()
            },
        )
        .unwrap()
        .job;
    match engine.wait(slow, None) {
        Err(Error::JobFailed { reason, cause, .. }) => {
            assert!(reason.contains("timeout"), "{reason}");
            assert_eq!(cause, FailureCause::Timeout, "{reason}");
        }
        other => panic!("expected a timeout failure, got {other:?}"),
    }
    engine.shutdown(Duration::ZERO).unwrap();
}

#[test]
fn a_request_id_reruns_after_failure_and_names_other_content_apart() {
    let driver = MockDriver::new(vec![MockDevice::new(6)]);
    let engine = Engine::start(config(&driver)).unwrap();
    let id = |r: &str| SubmitOptions {
        request_id: Some(r.into()),
        ..Default::default()
    };
    // Different content under one id (Curio's WindowPoSt partitions): two jobs, both proved.
    let p0 = engine
        .submit_simulated(sim(1, 1000, 1), id("wdpost-1-0-9"))
        .unwrap();
    let p1 = engine
        .submit_simulated(sim(2, 1000, 1), id("wdpost-1-0-9"))
        .unwrap();
    assert_ne!(p0.job, p1.job);
    assert!(!p0.existing && !p1.existing);
    assert_eq!(
        engine.wait(p0.job, None).unwrap().proof,
        expected_proof(p0.job, 1)
    );
    assert_eq!(
        engine.wait(p1.job, None).unwrap().proof,
        expected_proof(p1.job, 2)
    );
    // ...and each is still found by id and content once proved.
    let again = engine
        .submit_simulated(sim(2, 1000, 1), id("wdpost-1-0-9"))
        .unwrap();
    assert_eq!((again.job, again.existing), (p1.job, true));
    // A failed job is not handed back: the same request runs again as a new job.
    let failing = SimulatedJob {
        panic_in_synthesis: Some(0),
        ..sim(1, 1000, 1)
    };
    let f1 = engine
        .submit_simulated(failing.clone(), id("porep-1-2"))
        .unwrap();
    assert!(matches!(
        engine.wait(f1.job, None),
        Err(Error::JobFailed { .. })
    ));
    let f2 = engine.submit_simulated(failing, id("porep-1-2")).unwrap();
    assert!(!f2.existing && f2.job != f1.job, "{f1:?} {f2:?}");
    assert!(matches!(
        engine.wait(f2.job, None),
        Err(Error::JobFailed { .. })
    ));
    // So is a cancelled one.
    let c1 = engine
        .submit_simulated(sim(4, 100_000, 1), id("snap-1-3"))
        .unwrap();
    assert!(engine.cancel(c1.job).unwrap());
    let c2 = engine
        .submit_simulated(sim(4, 100_000, 1), id("snap-1-3"))
        .unwrap();
    assert!(!c2.existing && c2.job != c1.job);
    assert_eq!(
        engine.wait(c2.job, None).unwrap().proof,
        expected_proof(c2.job, 4)
    );
    engine.shutdown(Duration::ZERO).unwrap();
}

#[test]
fn shutdown_answers_every_waiter_and_refuses_new_work() {
    let driver = MockDriver::new(vec![MockDevice::new(6)]);
    let engine = Engine::start(config(&driver)).unwrap();
    let quick = engine
        .submit_simulated(sim(1, 1000, 1), SubmitOptions::default())
        .unwrap()
        .job;
    let long = engine
        .submit_simulated(sim(50, 50_000, 1), SubmitOptions::default())
        .unwrap()
        .job;
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let e = engine.clone();
            std::thread::spawn(move || e.wait(long, None))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    engine.shutdown(Duration::from_millis(100)).unwrap();
    for w in waiters {
        match w.join().unwrap() {
            Err(Error::Cancelled {
                reason: Some(r), ..
            }) => assert!(r.contains("shut down"), "{r}"),
            other => panic!("expected cancelled by shutdown, got {other:?}"),
        }
    }
    assert!(engine.wait(quick, None).is_err(), "engine stopped");
    assert!(matches!(
        engine.submit_simulated(sim(1, 1, 1), SubmitOptions::default()),
        Err(Error::Stopped) | Err(Error::ShuttingDown)
    ));
    engine.shutdown(Duration::ZERO).unwrap(); // again: returns at once
}

#[test]
fn a_trace_file_has_one_track_per_device() {
    let devs = vec![MockDevice::new(6), MockDevice::new(7)];
    let driver = MockDriver::new(devs);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    let mut cfg = config(&driver);
    cfg.trace_file = Some(path.clone());
    let engine = Engine::start(cfg).unwrap();
    let jobs = submit_many(&engine, 10, sim(4, 2000, 1));
    wait_all(&engine, &jobs);
    engine.shutdown(Duration::ZERO).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let tracks: BTreeSet<&str> = ev
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tracks.contains("gpu 0000:00:06") && tracks.contains("gpu 0000:00:07"),
        "{tracks:?}"
    );
    let proves = ev.iter().filter(|e| e["cat"] == "prove").count();
    assert_eq!(proves, 40);
}

#[test]
fn works_from_inside_a_tokio_program() {
    let driver = MockDriver::new(vec![MockDevice::new(6), MockDevice::new(7)]);
    let engine = Engine::start(config(&driver)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let proofs = rt.block_on(async {
        let mut handles = Vec::new();
        for _ in 0..8 {
            let e = engine.clone();
            handles.push(tokio::spawn(async move {
                let s = e
                    .submit_simulated(sim(3, 500, 1), SubmitOptions::default())
                    .unwrap();
                let st = e.status_async().await.unwrap();
                assert_eq!(st.devices.len(), 2);
                (
                    s.job,
                    e.wait_async(s.job, Some(Duration::from_secs(10))).await,
                )
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    });
    for (job, r) in proofs {
        assert_eq!(r.unwrap().proof, expected_proof(job, 3));
    }
    engine.shutdown(Duration::ZERO).unwrap();
}

#[test]
fn a_device_that_fails_to_open_is_reported_and_the_others_work() {
    let mut devs = vec![MockDevice::new(6), MockDevice::new(7)];
    devs[1].fail_open = true;
    let driver = MockDriver::new(devs.clone());
    let engine = Engine::start(config(&driver)).unwrap();
    let job = engine
        .submit_simulated(sim(3, 100, 1), SubmitOptions::default())
        .unwrap()
        .job;
    engine.wait(job, Some(Duration::from_secs(10))).unwrap();
    let st = engine.status().unwrap();
    let d7 = st.devices.iter().find(|d| d.info.id == devs[1].id).unwrap();
    assert!(
        d7.down.as_deref().unwrap_or("").contains("fail at open"),
        "{d7:?}"
    );
    engine.shutdown(Duration::ZERO).unwrap();

    // with every device failing to open, submissions fail clearly instead of waiting forever
    let mut devs = vec![MockDevice::new(6)];
    devs[0].fail_open = true;
    let engine = Engine::start(config(&MockDriver::new(devs))).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    match engine.submit_simulated(sim(1, 1, 1), SubmitOptions::default()) {
        Err(Error::NoDevice(why)) => assert!(why.contains("fail at open"), "{why}"),
        other => panic!("expected no device, got {other:?}"),
    }
    engine.shutdown(Duration::ZERO).unwrap();
}

/// Pipelining (depth 2): a device still proves one partition at a time (I1 on the recorded
/// intervals), names the second lease it holds to its worker while the first runs, proves
/// exactly that one next, and holds a second lease only where VRAM allows two (I2): the small
/// device, with room for one partition, never names a next one.
#[test]
fn pipelined_devices_name_the_next_partition_and_hold_two_leases_only_where_vram_allows() {
    let mut big = MockDevice::new(1);
    big.depth = 2;
    big.vram = 4 << 20;
    let mut small = MockDevice::new(2);
    small.depth = 2;
    small.vram = 3 << 20; // one 2 MiB lease fits, two do not
    let devices = [big.clone(), small.clone()];
    let driver = MockDriver::new(devices.to_vec());
    let rec = driver.recorder();
    let engine = Engine::start(config(&driver)).unwrap();
    let jobs = submit_many(&engine, 60, sim(4, 1000, 2 << 20));
    wait_all(&engine, &jobs);
    engine.shutdown(Duration::from_secs(5)).unwrap();
    let iv = rec.take();
    let per = check_devices(&iv, &devices);
    assert_eq!(per.values().sum::<usize>(), 240, "{per:?}");
    for dev in &devices {
        let mut mine: Vec<&Interval> = iv.iter().filter(|i| i.device == dev.id).collect();
        mine.sort_by_key(|i| i.start);
        assert!(!mine.is_empty(), "{} did no work", dev.id);
        for w in mine.windows(2) {
            if let Some(next) = w[0].ahead {
                assert_eq!(
                    next,
                    (w[1].job, w[1].partition),
                    "{}: the partition named as next is not the one proved next",
                    dev.id
                );
            }
        }
        let named = mine.iter().filter(|i| i.ahead.is_some()).count();
        if dev.id == big.id {
            assert!(
                named * 2 >= mine.len(),
                "{}: only {named} of {} partitions had a next one named",
                dev.id,
                mine.len()
            );
        } else {
            assert_eq!(
                named, 0,
                "{}: a second lease did not fit, yet one was held",
                dev.id
            );
        }
    }
}

/// With two leases held, the second waits on its device while the first is proved. Its lease
/// timeout counts from when the device starts it, so a device that is merely busy is never
/// taken for hung: partitions of 400 ms under a 650 ms lease timeout all complete at their
/// first attempt (counted from the grant, the queued ones would reach 800 ms and be revoked;
/// 250 ms of slack either way, for a loaded test machine).
#[test]
fn a_queued_lease_is_timed_from_its_start_not_its_grant() {
    let mut d = MockDevice::new(3);
    d.depth = 2;
    let driver = MockDriver::new(vec![d.clone()]);
    let rec = driver.recorder();
    let mut cfg = config(&driver);
    cfg.limits.lease_timeout = Duration::from_millis(650);
    let engine = Engine::start(cfg).unwrap();
    let jobs = submit_many(&engine, 3, sim(2, 400_000, 1 << 20));
    wait_all(&engine, &jobs);
    engine.shutdown(Duration::from_secs(5)).unwrap();
    let iv = rec.take();
    check_devices(&iv, std::slice::from_ref(&d));
    assert_eq!(iv.len(), 6, "every partition proved exactly once: {iv:#?}");
    assert!(
        iv.iter().any(|i| i.ahead.is_some()),
        "the device held two leases at a time: {iv:#?}"
    );
}

/// A lease a device holds queued behind the partition it is proving is dropped, not proved,
/// when its job is cancelled meanwhile: the device spends no time on a result that would be
/// discarded, takes other work in its place, and the cancelled job ends as cancelled.
#[test]
fn a_queued_lease_of_a_cancelled_job_is_dropped_not_proved() {
    let mut d = MockDevice::new(4);
    d.depth = 2;
    let driver = MockDriver::new(vec![d.clone()]);
    let rec = driver.recorder();
    let engine = Engine::start(config(&driver)).unwrap();
    let first = submit_many(&engine, 1, sim(1, 400_000, 1 << 20));
    // the device starts the first job, then holds the second queued behind it
    std::thread::sleep(Duration::from_millis(100));
    let doomed = submit_many(&engine, 1, sim(1, 400_000, 1 << 20));
    let deadline = Instant::now() + Duration::from_secs(5);
    // each lease reserves 1 MiB
    while engine.status().unwrap().devices[0].vram_leased < 2 << 20 {
        assert!(
            Instant::now() < deadline,
            "the device never held two leases"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(engine.cancel(doomed[0].0).unwrap(), "the job was running");
    let after = submit_many(&engine, 1, sim(1, 50_000, 1 << 20));
    wait_all(&engine, &first);
    wait_all(&engine, &after);
    let err = engine.wait(doomed[0].0, None).unwrap_err();
    assert!(matches!(err, Error::Cancelled { .. }), "{err}");
    engine.shutdown(Duration::from_secs(5)).unwrap();
    let iv = rec.take();
    check_devices(&iv, std::slice::from_ref(&d));
    assert!(
        iv.iter().all(|i| i.job != doomed[0].0),
        "the cancelled job's queued partition was proved: {iv:#?}"
    );
    assert_eq!(
        iv.len(),
        2,
        "the first and the last job, once each: {iv:#?}"
    );
}
