//! Simulation of the scheduler core on mock devices in simulated time: thousands of
//! partitions, flaky and hanging devices, cancellations, a device lost mid-run. Checks the
//! invariants I1-I5 (docs/architecture.md) on every step.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use cuzk_actors::policy::Completion;
use cuzk_actors::{
    DeviceId, Failure, FailureCause, JobOutcome, JobSpec, Lease, LeaseTable, Limits, PciAddress,
    Priority, SchedulerCore, SharedVram,
};

fn dev(n: u32) -> DeviceId {
    let mut uuid = [0u8; 16];
    uuid[0] = n as u8;
    DeviceId {
        pci: PciAddress {
            domain: 0,
            bus: 0,
            device: n,
        },
        uuid,
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Behaviour {
    Good,
    FailEvery(u64),
    HangOnce,
}

/// One simulated device interval.
struct Interval {
    device: DeviceId,
    start: u64,
    end: u64,
}

struct Sim {
    core: SchedulerCore<(u64, usize)>,
    base: Instant,
    now: u64,
    running: BTreeMap<u64, Vec<(Lease, bool)>>, // finish time -> (lease, succeeds)
    busy: HashMap<DeviceId, u64>,               // device -> lease id it runs
    behaviour: HashMap<DeviceId, Behaviour>,
    served: HashMap<DeviceId, u64>,
    intervals: Vec<Interval>,
    capacity: u64,
    rng: Rng,
}

impl Sim {
    fn new(devices: &[(u32, Behaviour)], limits: Limits) -> Self {
        let mut t = LeaseTable::new();
        let capacity = 1000;
        for (d, _) in devices {
            t.add_device(dev(*d), capacity, 1).unwrap();
        }
        Sim {
            core: SchedulerCore::new(t, limits),
            base: Instant::now(),
            now: 0,
            running: BTreeMap::new(),
            busy: HashMap::new(),
            behaviour: devices.iter().map(|(d, b)| (dev(*d), *b)).collect(),
            served: HashMap::new(),
            intervals: Vec::new(),
            capacity,
            rng: Rng(0x9e37_79b9_7f4a_7c15),
        }
    }

    fn instant(&self) -> Instant {
        self.base + Duration::from_millis(self.now)
    }

    /// Idle devices pull work; checks I5 on each grant.
    fn dispatch(&mut self) {
        let devices: Vec<DeviceId> = self.core.leases().devices().collect();
        for d in devices {
            if self.busy.contains_key(&d) {
                continue;
            }
            let best = self.core.best_waiting_priority_for(d);
            let Some(lease) = self.core.next_for(d, self.instant()) else {
                continue;
            };
            let prio = self.prio_of(lease.job);
            assert!(
                Some(prio) >= best,
                "I5: leased {prio:?} while {best:?} waited"
            );
            let n = self.served.entry(d).or_insert(0);
            *n += 1;
            let (dur, ok) = match self.behaviour[&d] {
                Behaviour::Good => (5 + self.rng.next() % 20, true),
                Behaviour::FailEvery(k) => (5 + self.rng.next() % 20, !(*n).is_multiple_of(k)),
                Behaviour::HangOnce if *n == 1 => (1_000_000, true),
                Behaviour::HangOnce => (5 + self.rng.next() % 20, true),
            };
            self.busy.insert(d, lease.id.0);
            self.intervals.push(Interval {
                device: d,
                start: self.now,
                end: self.now + dur,
            });
            self.running
                .entry(self.now + dur)
                .or_default()
                .push((lease, ok));
        }
        for d in self.core.leases().devices() {
            assert!(self.core.leases().reserved(d) <= self.capacity, "I2");
            assert!(self.core.leases().active_on(d).len() <= 1, "I1");
        }
    }

    fn prio_of(&self, job: u64) -> Priority {
        match job % 4 {
            0 => Priority::Critical,
            1 => Priority::High,
            2 => Priority::Normal,
            _ => Priority::Low,
        }
    }

    /// Advances to the next completion (or timeout check) and reports it.
    fn step(&mut self) -> bool {
        let Some((&t, _)) = self.running.iter().next() else {
            return false;
        };
        let next_timeout = self.now + 200;
        if t > next_timeout {
            self.now = next_timeout;
            // a hung device stays busy (its thread is stuck) until its run ends; the scheduler
            // revokes the lease and re-runs the partition elsewhere
            let _revoked = self.core.expire(self.instant());
            return true;
        }
        self.now = t;
        let done = self.running.remove(&t).unwrap_or_default();
        for (lease, ok) in done {
            if self.busy.get(&lease.device) == Some(&lease.id.0) {
                self.busy.remove(&lease.device);
            }
            let r = if ok {
                Ok((lease.job, lease.partition))
            } else {
                Err(Failure::new(FailureCause::Verification, "injected"))
            };
            let _ = self.core.complete(lease.id, r);
        }
        true
    }
}

fn limits() -> Limits {
    Limits {
        max_attempts: 4,
        quarantine_after: 1000,
        max_waiting_partitions: 100_000,
        lease_timeout: Duration::from_millis(300),
    }
}

#[test]
fn thousands_of_partitions_keep_every_invariant() {
    let mut sim = Sim::new(
        &[
            (6, Behaviour::Good),
            (7, Behaviour::FailEvery(7)),
            (8, Behaviour::HangOnce),
        ],
        limits(),
    );
    let mut jobs = Vec::new();
    for j in 0..1000u64 {
        let prio = sim.prio_of(j + 1);
        let id = sim
            .core
            .submit(JobSpec {
                priority: prio,
                partitions: 1 + (j % 10) as usize,
                vram_per_partition: 100 + j % 900,
            })
            .unwrap();
        assert_eq!(sim.prio_of(id), prio);
        jobs.push((id, 1 + (j % 10) as usize));
    }
    loop {
        sim.dispatch();
        if !sim.step() {
            break;
        }
    }
    // I1 from the recorded intervals: no overlap on a device
    let mut by_dev: HashMap<DeviceId, Vec<(u64, u64)>> = HashMap::new();
    for i in &sim.intervals {
        by_dev.entry(i.device).or_default().push((i.start, i.end));
    }
    for (d, mut v) in by_dev {
        v.sort();
        for w in v.windows(2) {
            assert!(w[1].0 >= w[0].1, "I1: overlap on {d}: {w:?}");
        }
    }
    // I3: every job completed with each partition exactly once, in order
    let mut total = 0;
    for (id, parts) in jobs {
        match sim.core.take_outcome(id) {
            Some(JobOutcome::Completed(outs)) => {
                assert_eq!(outs, (0..parts).map(|p| (id, p)).collect::<Vec<_>>());
                total += parts;
            }
            other => panic!("job {id} ended {other:?}"),
        }
    }
    assert_eq!(total, 5500);
    assert_eq!(sim.core.jobs(), 0);
    assert!(
        sim.served[&dev(6)] > 100 && sim.served[&dev(7)] > 100,
        "{:?}",
        sim.served
    );
    assert_eq!(
        sim.served[&dev(8)],
        1,
        "the hung device took nothing more while stuck"
    );
}

#[test]
fn failing_device_is_quarantined_and_work_moves() {
    let mut l = limits();
    l.quarantine_after = 3;
    let mut sim = Sim::new(&[(6, Behaviour::Good), (7, Behaviour::FailEvery(1))], l);
    let id = sim
        .core
        .submit(JobSpec {
            priority: Priority::Normal,
            partitions: 50,
            vram_per_partition: 10,
        })
        .unwrap();
    loop {
        sim.dispatch();
        if !sim.step() {
            break;
        }
    }
    assert_eq!(sim.core.quarantined(), &[dev(7)]);
    assert!(matches!(sim.core.take_outcome(id), Some(JobOutcome::Completed(v)) if v.len() == 50));
}

#[test]
fn partition_failing_everywhere_fails_its_job_with_a_reason() {
    let mut sim = Sim::new(&[(6, Behaviour::FailEvery(1))], limits());
    let id = sim
        .core
        .submit(JobSpec {
            priority: Priority::High,
            partitions: 2,
            vram_per_partition: 10,
        })
        .unwrap();
    loop {
        sim.dispatch();
        if !sim.step() {
            break;
        }
    }
    match sim.core.take_outcome(id) {
        Some(JobOutcome::Failed(why)) => {
            assert!(why.message.contains("failed 4 times"), "{why}");
            // the job's cause is its last attempt's, not a generic one
            assert_eq!(why.cause, FailureCause::Verification, "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cancelled_job_discards_in_flight_results_and_lost_device_requeues() {
    let mut sim = Sim::new(&[(6, Behaviour::Good), (7, Behaviour::Good)], limits());
    let a = sim
        .core
        .submit(JobSpec {
            priority: Priority::Normal,
            partitions: 4,
            vram_per_partition: 10,
        })
        .unwrap();
    let b = sim
        .core
        .submit(JobSpec {
            priority: Priority::Normal,
            partitions: 4,
            vram_per_partition: 10,
        })
        .unwrap();
    sim.dispatch(); // two partitions of `a` in flight
    assert!(sim.core.cancel(a));
    assert!(!sim.core.cancel(a), "cancel is idempotent");
    // lose device 7 with its lease: the partition goes back to the queue
    sim.core.quarantine(dev(7));
    sim.busy.remove(&dev(7));
    let mut discarded = 0;
    loop {
        sim.dispatch();
        let Some((&t, _)) = sim.running.iter().next() else {
            break;
        };
        sim.now = t;
        for (lease, _) in sim.running.remove(&t).unwrap() {
            sim.busy.remove(&lease.device);
            if sim
                .core
                .complete(lease.id, Ok((lease.job, lease.partition)))
                == Completion::Discarded
            {
                discarded += 1;
            }
        }
    }
    assert_eq!(sim.core.take_outcome(a), Some(JobOutcome::Cancelled));
    assert!(matches!(sim.core.take_outcome(b), Some(JobOutcome::Completed(v)) if v.len() == 4));
    assert!(
        discarded >= 1,
        "results of the cancelled job and of the lost device are discarded"
    );
}

#[test]
fn burst_submissions_push_back() {
    let mut l = limits();
    l.max_waiting_partitions = 1000;
    let mut sim = Sim::new(&[(6, Behaviour::Good)], l);
    let mut accepted = 0;
    let mut refused = 0;
    for _ in 0..10_000 {
        match sim.core.submit(JobSpec {
            priority: Priority::Low,
            partitions: 1,
            vram_per_partition: 1,
        }) {
            Ok(_) => accepted += 1,
            Err(e) => {
                assert!(e.to_string().contains("too busy"));
                refused += 1;
            }
        }
    }
    assert_eq!((accepted, refused), (1000, 9000));
    assert_eq!(sim.core.waiting(), 1000);
}

/// A lease its device dropped unstarted ends without counting an attempt or a device
/// failure: once for a cancelled job (nothing requeued), a second time is a no-op, and for a
/// running job (not a case the runtime asks for, but the core must not lose the partition) the
/// partition is queued again and completes.
#[test]
fn withdrawn_leases_end_without_an_attempt_and_lose_no_partition() {
    let mut t = LeaseTable::new();
    t.add_device(dev(1), 1000, 2).unwrap();
    let mut core: SchedulerCore<u32> = SchedulerCore::new(
        t,
        Limits {
            max_attempts: 1, // a counted attempt would fail the job
            ..limits()
        },
    );
    let spec = JobSpec {
        priority: Priority::Normal,
        partitions: 1,
        vram_per_partition: 10,
    };
    let gone = core.submit(spec.clone()).unwrap();
    let kept = core.submit(spec).unwrap();
    let now = Instant::now();
    let l1 = core.next_for(dev(1), now).unwrap();
    let l2 = core.next_for(dev(1), now).unwrap();
    assert_eq!((l1.job, l2.job), (gone, kept));
    assert!(core.cancel(gone));
    assert!(
        core.withdrawn(l1.id),
        "the cancelled job's lease was active"
    );
    assert!(!core.withdrawn(l1.id), "a lease ends once");
    assert_eq!(core.leases().reserved(dev(1)), 10);
    assert!(core.withdrawn(l2.id));
    assert_eq!(core.leases().reserved(dev(1)), 0);
    let again = core
        .next_for(dev(1), now)
        .expect("the partition was queued again");
    assert_eq!((again.job, again.partition), (kept, 0));
    assert_eq!(core.complete(again.id, Ok(7)), Completion::Accepted);
    assert_eq!(core.take_outcome(gone), Some(JobOutcome::Cancelled));
    assert_eq!(
        core.take_outcome(kept),
        Some(JobOutcome::Completed(vec![7]))
    );
}

/// A lease whose device has finished its part (`left_device`: the proof is verified on the
/// host) frees the device's slot and VRAM at once, so the device is granted its next
/// partition while the check runs; the partition's result still counts exactly once: a
/// failed check retries it, a second report is discarded, and a check that never ends is
/// revoked by the lease timeout like a hung device.
#[test]
fn a_lease_that_left_its_device_frees_it_and_its_result_counts_once() {
    let mut t = LeaseTable::new();
    t.add_device(dev(1), 10, 1).unwrap(); // room for one partition at a time
    let mut core: SchedulerCore<u32> = SchedulerCore::new(t, limits());
    let job = core
        .submit(JobSpec {
            priority: Priority::Normal,
            partitions: 3,
            vram_per_partition: 10,
        })
        .unwrap();
    let now = Instant::now();
    let l1 = core.next_for(dev(1), now).unwrap();
    assert!(core.next_for(dev(1), now).is_none(), "the device is full");
    assert!(core.left_device(l1.id));
    assert!(!core.left_device(l1.id), "a lease leaves its device once");
    assert!(core.is_pending(l1.id));
    assert_eq!((core.leases().reserved(dev(1)), core.checking()), (0, 1));
    let l2 = core
        .next_for(dev(1), now)
        .expect("the device is free while the first proof is checked");
    assert_eq!((l2.job, l2.partition), (job, 1));
    // the first proof does not verify: its partition runs again
    let bad = Failure::new(FailureCause::Verification, "does not verify");
    assert_eq!(core.complete(l1.id, Err(bad)), Completion::Accepted);
    assert!(!core.is_pending(l1.id));
    assert_eq!(core.complete(l1.id, Ok(0)), Completion::Discarded);
    assert!(core.left_device(l2.id));
    assert_eq!(core.complete(l2.id, Ok(1)), Completion::Accepted);
    let l3 = core.next_for(dev(1), now).unwrap();
    assert_eq!(l3.partition, 0, "the failed partition is first again");
    assert!(core.left_device(l3.id));
    // its check never ends: the lease times out and the partition is queued again
    let revoked = core.expire(now + Duration::from_millis(301));
    assert_eq!(
        revoked.iter().map(|l| l.id).collect::<Vec<_>>(),
        vec![l3.id]
    );
    assert_eq!(core.checking(), 0);
    assert_eq!(core.complete(l3.id, Ok(0)), Completion::Discarded);
    let mut left = vec![0, 2];
    while let Some(l) = core.next_for(dev(1), now) {
        left.retain(|p| *p != l.partition);
        assert!(core.left_device(l.id));
        assert_eq!(
            core.complete(l.id, Ok(l.partition as u32)),
            Completion::Accepted
        );
    }
    assert!(left.is_empty(), "partitions {left:?} never ran again");
    assert_eq!(
        core.take_outcome(job),
        Some(JobOutcome::Completed(vec![0, 1, 2]))
    );
}

/// A pipelining device holds two leases of one circuit where its parameters fit once with two
/// partitions' working memory, though not twice (a 32 GiB WindowPoSt partition on an H200:
/// 56 GiB of parameters, 22 of working memory, 137 usable): the second lease reserves only
/// its own part, and when the first ends the second keeps the circuit's share, so a job of
/// another circuit waits until there is room for its own parameters.
#[test]
fn a_second_lease_of_a_circuit_reserves_only_its_working_memory() {
    let spec = |partitions| JobSpec {
        priority: Priority::Normal,
        partitions,
        vram_per_partition: 78,
    };
    let now = Instant::now();
    // without the share: one lease at a time
    let mut t = LeaseTable::new();
    t.add_device(dev(1), 137, 2).unwrap();
    let mut core: SchedulerCore<u32> = SchedulerCore::new(t, limits());
    let job = core.submit(spec(3)).unwrap();
    let first = core.next_for(dev(1), now).unwrap();
    assert!(core.next_for(dev(1), now).is_none(), "78 + 78 > 137");
    assert_eq!(core.complete(first.id, Ok(0)), Completion::Accepted);
    let _ = job;

    // with it: two, and the circuit's parameters reserved once
    let mut t = LeaseTable::new();
    t.add_device(dev(1), 137, 2).unwrap();
    let mut core: SchedulerCore<u32> = SchedulerCore::new(t, limits());
    let post = core.submit(spec(3)).unwrap();
    core.set_shared_vram(
        post,
        SharedVram {
            key: 7,
            bytes: 56,
            batch: 1,
        },
    );
    let other = core.submit(spec(1)).unwrap();
    core.set_shared_vram(
        other,
        SharedVram {
            key: 8,
            bytes: 56,
            batch: 1,
        },
    );
    let l1 = core.next_for(dev(1), now).unwrap();
    let l2 = core.next_for(dev(1), now).expect("56 + 22 + 22 <= 137");
    assert_eq!((l1.job, l2.job, l2.partition), (post, post, 1));
    assert_eq!(core.leases().reserved(dev(1)), 100);
    assert_eq!(core.complete(l1.id, Ok(1)), Completion::Accepted);
    assert_eq!(
        core.leases().reserved(dev(1)),
        78,
        "the second keeps the share"
    );
    // the third partition of the same circuit fits beside the second; the other circuit
    // (its own 56 of parameters) would not, and waits behind it in submission order anyway
    let l3 = core.next_for(dev(1), now).unwrap();
    assert_eq!((l3.job, l3.partition), (post, 2));
    assert!(core.next_for(dev(1), now).is_none(), "two leases at most");
    assert_eq!(core.complete(l2.id, Ok(2)), Completion::Accepted);
    assert!(
        core.next_for(dev(1), now).is_none(),
        "78 + 78 > 137: the other circuit waits for the device to empty"
    );
    assert_eq!(core.complete(l3.id, Ok(3)), Completion::Accepted);
    let l4 = core.next_for(dev(1), now).unwrap();
    assert_eq!(l4.job, other);
    assert_eq!(core.complete(l4.id, Ok(4)), Completion::Accepted);
    assert_eq!(
        core.take_outcome(post),
        Some(JobOutcome::Completed(vec![1, 2, 3]))
    );
}

/// A circuit proved in batches (a GPU streaming its parameters) is leased past the device's
/// pipeline depth, up to its batch, while the device holds nothing else: ten partitions of a
/// 32 GiB PoRep C2 on a 16 GiB budget, each reserving its share beside the working memory
/// the circuit's leases share. Another circuit waits for the depth again.
#[test]
fn a_batched_circuit_is_leased_past_the_pipeline_depth() {
    let now = Instant::now();
    let mut t = LeaseTable::new();
    // 16 units usable: 12 of shared working memory, 0.4 a partition's share (in tenths)
    t.add_device(dev(1), 160, 2).unwrap();
    let mut core: SchedulerCore<u32> = SchedulerCore::new(t, limits());
    let spec = |partitions| JobSpec {
        priority: Priority::Normal,
        partitions,
        vram_per_partition: 124,
    };
    let c2 = core.submit(spec(12)).unwrap();
    core.set_shared_vram(
        c2,
        SharedVram {
            key: 7,
            bytes: 120,
            batch: 10,
        },
    );
    let other = core
        .submit(JobSpec {
            vram_per_partition: 30,
            ..spec(1)
        })
        .unwrap();
    let leases: Vec<_> = std::iter::from_fn(|| core.next_for(dev(1), now)).collect();
    assert_eq!(leases.len(), 10, "a batch of ten, past the depth of two");
    assert!(leases.iter().all(|l| l.job == c2));
    assert_eq!(core.leases().reserved(dev(1)), 120 + 10 * 4);
    for l in &leases[..9] {
        assert_eq!(core.complete(l.id, Ok(0)), Completion::Accepted);
    }
    // the C2's last two partitions join the one left (first in submission order); the other
    // job's lease waits until the device holds fewer than its depth of two
    let rest: Vec<_> = std::iter::from_fn(|| core.next_for(dev(1), now)).collect();
    assert_eq!(
        rest.iter()
            .map(|l| (l.job, l.partition))
            .collect::<Vec<_>>(),
        vec![(c2, 10), (c2, 11)]
    );
    assert_eq!(core.complete(leases[9].id, Ok(0)), Completion::Accepted);
    assert_eq!(core.complete(rest[0].id, Ok(0)), Completion::Accepted);
    let last = core
        .next_for(dev(1), now)
        .expect("one C2 lease held: under the depth");
    assert_eq!(last.job, other);
}
