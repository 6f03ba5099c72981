//! Mock devices for simulation tests, public so integrators can test against them.
//!
//! A [`MockDriver`] presents configurable devices (count, memory, speed, faults) with real
//! physical identities, optionally enumerated in a permuted ordinal order (as
//! `CUDA_VISIBLE_DEVICES=1,0` permutes them). Each device records every interval in which it
//! ran a partition, as the device itself saw it, into a [`MockRecorder`]: tests check the
//! invariants I1-I5 (docs/architecture.md) on those intervals. Real partitions are proved through
//! the CPU backend; simulated partitions ([`crate::SimulatedJob`]) just take their time.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use cuzk_engine::{Backend, CpuBackend, Srs};

use crate::device::DeviceInfo;
use crate::driver::{scaled, DeviceDriver, DeviceWorker, Proved};
use crate::error::{Error, Result};
use crate::failure::DeviceFault;
use crate::identity::{DeviceId, PciAddress};
use crate::job::JobId;
use crate::work::{PartitionWork, Payload};

/// One mock device. Fault counters count partitions this device started, from 1.
#[derive(Clone, Debug)]
pub struct MockDevice {
    /// Physical identity.
    pub id: DeviceId,
    /// Device memory in bytes.
    pub vram: u64,
    /// Speed factor for simulated partitions (2.0 = twice as fast).
    pub speed: f64,
    /// Fail every k-th partition.
    pub fail_every: Option<u32>,
    /// Return a proof that does not verify (its A and C swapped) for every k-th real
    /// partition: a silently wrong device, which only the device actor's verification
    /// catches.
    pub corrupt_every: Option<u32>,
    /// Hang on the n-th partition for `hang_for`, then answer (too late).
    pub hang_on: Option<u32>,
    /// How long a hang lasts.
    pub hang_for: Duration,
    /// Disappear when starting the n-th partition (it and every later one report the device
    /// lost).
    pub lost_on: Option<u32>,
    /// Panic while proving the n-th partition.
    pub panic_on: Option<u32>,
    /// Fail to open at start-up.
    pub fail_open: bool,
    /// Leases the device may hold at once ([`DeviceDriver::pipeline_depth`]); 1 by default.
    pub depth: usize,
    /// Partitions of one circuit proved as a batch ([`DeviceWorker::batch_limit`]); 1 by
    /// default. A batch is recorded as one interval a partition, each with its size.
    pub batch: usize,
}

impl MockDevice {
    /// A healthy device at PCI `0000:00:<slot>` with 80 GiB and speed 1.0.
    pub fn new(slot: u32) -> Self {
        let mut uuid = [0u8; 16];
        uuid[0] = 0x4d; // 'M'
        uuid[12..16].copy_from_slice(&slot.to_be_bytes());
        MockDevice {
            id: DeviceId {
                pci: PciAddress {
                    domain: 0,
                    bus: 0,
                    device: slot,
                },
                uuid,
            },
            vram: 80 << 30,
            speed: 1.0,
            fail_every: None,
            corrupt_every: None,
            hang_on: None,
            hang_for: Duration::from_secs(1),
            lost_on: None,
            panic_on: None,
            fail_open: false,
            depth: 1,
            batch: 1,
        }
    }
}

/// One partition's run on a mock device, as the device saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// The physical device that ran it.
    pub device: DeviceId,
    /// The job.
    pub job: JobId,
    /// The partition.
    pub partition: usize,
    /// Start, since the recorder was created.
    pub start: Duration,
    /// End, since the recorder was created.
    pub end: Duration,
    /// Device memory the lease reserved.
    pub vram: u64,
    /// How the attempt ended ("ok", "failed", "lost", "panic", "hang", "corrupt").
    pub outcome: &'static str,
    /// The partition the device actor named as the next one while this one ran (job,
    /// partition), which a GPU would have uploaded meanwhile.
    pub ahead: Option<(JobId, usize)>,
    /// Whether the partition's parameters had been preloaded on this device before it
    /// started ([`crate::driver::DeviceWorker::preload`]); false for simulated work.
    pub preloaded: bool,
    /// Partitions in the batch it was proved in (1: alone).
    pub batch: usize,
}

/// Collects the intervals of every mock device of a driver. Cheap to clone; devices send
/// from their own threads through a channel, so recording never blocks a device.
#[derive(Clone)]
pub struct MockRecorder {
    epoch: Instant,
    tx: Sender<Interval>,
    rx: Receiver<Interval>,
    preload_tx: Sender<(DeviceId, u64)>,
    preload_rx: Receiver<(DeviceId, u64)>,
}

impl Default for MockRecorder {
    fn default() -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        let (preload_tx, preload_rx) = crossbeam_channel::unbounded();
        MockRecorder {
            epoch: Instant::now(),
            tx,
            rx,
            preload_tx,
            preload_rx,
        }
    }
}

impl MockRecorder {
    /// Every interval recorded since the last call, in the order they ended.
    pub fn take(&self) -> Vec<Interval> {
        self.rx.try_iter().collect()
    }

    /// Every preload (device, `Srs::id`) since the last call, in the order they happened.
    pub fn take_preloads(&self) -> Vec<(DeviceId, u64)> {
        self.preload_rx.try_iter().collect()
    }
}

/// Checks I1 on intervals: on each physical device no two intervals overlap. Returns the
/// first overlapping pair found.
pub fn find_overlap(intervals: &[Interval]) -> Option<(Interval, Interval)> {
    let mut v: Vec<&Interval> = intervals.iter().collect();
    v.sort_by_key(|i| (i.device, i.start, i.end));
    v.windows(2)
        .find(|w| w[0].device == w[1].device && w[1].start < w[0].end)
        .map(|w| (w[0].clone(), w[1].clone()))
}

/// A driver of mock devices.
#[derive(Clone)]
pub struct MockDriver {
    devices: Vec<MockDevice>,
    /// `order[ordinal]` = index into `devices`: the enumeration order this "process" sees.
    order: Vec<usize>,
    recorder: MockRecorder,
}

impl MockDriver {
    /// Devices enumerated in the order given.
    pub fn new(devices: Vec<MockDevice>) -> Self {
        let order = (0..devices.len()).collect();
        MockDriver {
            devices,
            order,
            recorder: MockRecorder::default(),
        }
    }

    /// Enumerates the devices in another order: `order[ordinal]` is the index of the device
    /// that appears at that ordinal (as `CUDA_VISIBLE_DEVICES=1,0` reorders GPUs). Indices
    /// may be left out (hidden devices); an index out of range is an error.
    pub fn with_ordinal_order(mut self, order: Vec<usize>) -> Result<Self> {
        if let Some(bad) = order.iter().find(|&&i| i >= self.devices.len()) {
            return Err(Error::Rejected(format!(
                "ordinal order names device {bad}, but only {} exist",
                self.devices.len()
            )));
        }
        self.order = order;
        Ok(self)
    }

    /// The recorder all devices of this driver write to.
    pub fn recorder(&self) -> MockRecorder {
        self.recorder.clone()
    }

    fn spec(&self, id: DeviceId) -> Option<&MockDevice> {
        self.devices.iter().find(|d| d.id == id)
    }
}

impl DeviceDriver for MockDriver {
    fn name(&self) -> &'static str {
        "mock"
    }

    fn discover(&self) -> Result<Vec<DeviceInfo>> {
        Ok(self
            .order
            .iter()
            .enumerate()
            .map(|(ordinal, &i)| DeviceInfo {
                id: self.devices[i].id,
                ordinal: ordinal as u32,
                name: format!("mock device {}", self.devices[i].id),
                total_memory: self.devices[i].vram,
            })
            .collect())
    }

    fn open(&self, device: &DeviceInfo) -> Result<Box<dyn DeviceWorker>> {
        // Open by ordinal, as a real driver does, then check the identity of what was opened.
        let physical = self
            .order
            .get(device.ordinal as usize)
            .map(|&i| self.devices[i].clone())
            .ok_or_else(|| Error::Device {
                device: device.id.to_string(),
                reason: format!("no device at ordinal {}", device.ordinal),
            })?;
        if physical.id != device.id {
            return Err(Error::Device {
                device: device.id.to_string(),
                reason: format!(
                    "ordinal {} is {}, not this device: refusing to use it",
                    device.ordinal, physical.id
                ),
            });
        }
        if physical.fail_open {
            return Err(Error::Device {
                device: device.id.to_string(),
                reason: "mock device configured to fail at open".into(),
            });
        }
        Ok(Box::new(MockWorker {
            spec: physical,
            started: 0,
            lost: false,
            ahead: None,
            recorder: self.recorder.clone(),
            cpu: CpuBackend,
            preloaded: HashSet::new(),
            preloaded_current: false,
            batch_now: 1,
        }))
    }

    fn vram_for(&self, device: &DeviceInfo, srs: &Srs) -> u64 {
        // As much as a GPU would need: parameters plus a partition's scalars; capped at
        // the device so small mocks still run real 2 KiB proofs.
        let want = srs.memory_bytes() + srs.partition_host_bytes();
        let cap = self.spec(device.id).map_or(device.total_memory, |d| d.vram);
        want.min(cap)
    }

    fn pipeline_depth(&self, device: &DeviceInfo) -> usize {
        self.spec(device.id).map_or(1, |d| d.depth.max(1))
    }

    fn lease_batch(&self, device: &DeviceInfo, _srs: &Srs) -> usize {
        self.spec(device.id).map_or(1, |d| d.batch.max(1))
    }
}

struct MockWorker {
    spec: MockDevice,
    started: u32,
    lost: bool,
    /// The upcoming partition named with the attempt in progress.
    ahead: Option<(JobId, usize)>,
    recorder: MockRecorder,
    cpu: CpuBackend,
    /// Parameters (by `Srs::id`) preloaded on this device.
    preloaded: HashSet<u64>,
    /// Whether the attempt in progress had its parameters preloaded.
    preloaded_current: bool,
    /// Size of the batch in progress (1: a single partition).
    batch_now: usize,
}

impl MockWorker {
    fn record(&self, work: (JobId, usize, u64), start: Instant, outcome: &'static str) {
        let epoch = self.recorder.epoch;
        // A send fails only when every receiver is gone, i.e. nobody is looking: fine.
        let _ = self.recorder.tx.send(Interval {
            device: self.spec.id,
            job: work.0,
            partition: work.1,
            start: start.saturating_duration_since(epoch),
            end: Instant::now().saturating_duration_since(epoch),
            vram: work.2,
            outcome,
            ahead: self.ahead,
            preloaded: self.preloaded_current,
            batch: self.batch_now,
        });
    }
}

impl DeviceWorker for MockWorker {
    fn prove(
        &mut self,
        work: PartitionWork,
        next: Option<&PartitionWork>,
    ) -> std::result::Result<Proved, DeviceFault> {
        let start = Instant::now();
        self.ahead = next.map(|n| (n.job, n.partition));
        self.preloaded_current = match &work.payload {
            Payload::Proof { srs, .. } => self.preloaded.contains(&srs.id()),
            Payload::Simulated { .. } => false,
        };
        self.started += 1;
        let n = self.started;
        let key = (work.job, work.partition, work.reserved_vram);
        let hit = |k: Option<u32>| k.is_some_and(|k| k > 0 && n.is_multiple_of(k));
        let at = |k: Option<u32>| k == Some(n);
        if self.lost || at(self.spec.lost_on) {
            self.lost = true;
            self.record(key, start, "lost");
            return Err(DeviceFault::Lost(format!(
                "mock device {} disappeared",
                self.spec.id
            )));
        }
        if at(self.spec.panic_on) {
            self.record(key, start, "panic");
            panic!("mock device {} panicked on partition {n}", self.spec.id);
        }
        let result = match work.payload {
            Payload::Simulated { gpu_time } => {
                std::thread::sleep(scaled(gpu_time, self.spec.speed));
                Ok(Proved::Simulated)
            }
            Payload::Proof {
                srs,
                assignment,
                r,
                s,
                ..
            } => self
                .cpu
                .prove(&srs, assignment, r, s, work.partition)
                .map(Proved::Groth16)
                .map_err(|e| DeviceFault::Failed(e.to_string())),
        };
        if at(self.spec.hang_on) {
            std::thread::sleep(self.spec.hang_for);
            self.record(key, start, "hang");
            return result;
        }
        if hit(self.spec.fail_every) {
            self.record(key, start, "failed");
            return Err(DeviceFault::Failed(format!(
                "mock device {} fails every {}th partition",
                self.spec.id,
                self.spec.fail_every.unwrap_or(0)
            )));
        }
        if hit(self.spec.corrupt_every) {
            self.record(key, start, "corrupt");
            return result.map(|p| match p {
                Proved::Groth16(mut proof) => {
                    std::mem::swap(&mut proof.a, &mut proof.c);
                    Proved::Groth16(proof)
                }
                other => other,
            });
        }
        self.record(key, start, if result.is_ok() { "ok" } else { "failed" });
        result
    }

    /// Remembers the parameters, as a GPU keeps them resident (a lost device refuses).
    fn preload(&mut self, srs: &Srs) -> std::result::Result<bool, String> {
        if self.lost {
            return Err(format!("mock device {} is lost", self.spec.id));
        }
        self.preloaded.insert(srs.id());
        let _ = self.recorder.preload_tx.send((self.spec.id, srs.id()));
        Ok(true)
    }

    fn batch_limit(&self, _srs: &Srs) -> usize {
        self.spec.batch.max(1)
    }

    /// Proves the partitions one by one, each recorded with the batch's size.
    fn prove_batch(
        &mut self,
        works: Vec<PartitionWork>,
    ) -> Vec<std::result::Result<Proved, DeviceFault>> {
        self.batch_now = works.len();
        let out = works.into_iter().map(|w| self.prove(w, None)).collect();
        self.batch_now = 1;
        out
    }
}

/// Shared handle type for drivers.
pub type SharedDriver = Arc<dyn DeviceDriver>;
