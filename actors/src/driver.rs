//! Device drivers: how devices are discovered, opened on their own thread, and asked to
//! prove. The CPU driver is the embedded default; the CUDA driver finds GPUs through cudarc;
//! the mock driver ([`crate::mock`]) simulates them for tests.

use std::sync::Arc;
use std::time::Duration;

use bellperson::groth16::Proof;
use blstrs::Bls12;
use cuzk_engine::{Backend, BatchItem, CpuBackend, Srs, Upcoming};

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
pub use crate::failure::DeviceFault;
use crate::identity::{DeviceId, PciAddress};
use crate::work::{PartitionWork, Payload};

/// What a device returns for a partition.
// One value per partition, moved once: boxing the proof would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Proved {
    /// A Groth16 partition proof (verified by the device actor before it is reported).
    Groth16(Proof<Bls12>),
    /// A simulated partition is done.
    Simulated,
}

/// An opened device, living on its device actor's thread for its whole life. It is never
/// shared: the actor that opened it is the only code that can reach it.
pub trait DeviceWorker {
    /// Proves one partition. Consumes the work (its input is not kept after an attempt).
    ///
    /// `next` is the partition this worker will be given next, when its device actor holds
    /// one already (a device with a pipeline depth above 1): a GPU worker may copy it to the
    /// device while `work`'s kernels run. Results never depend on it; the worker must not
    /// keep anything of `next` past its own next call to `prove`.
    fn prove(
        &mut self,
        work: PartitionWork,
        next: Option<&PartitionWork>,
    ) -> std::result::Result<Proved, DeviceFault>;

    /// Gets `srs` ready on the device before its first partition there (a GPU uploads the
    /// parameters it keeps resident), when that evicts nothing. Returns whether it is ready.
    /// Called between partitions, on the device's thread; proofs never depend on it, and a
    /// failure is not a fault of the device (the first partition that needs `srs` uploads
    /// it, or fails, as it would have without this). Nothing to do by default.
    fn preload(&mut self, srs: &Srs) -> std::result::Result<bool, String> {
        let _ = srs;
        Ok(false)
    }

    /// How the last partition reached its parameters and what device memory it took
    /// ([`cuzk_engine::MemoryReport`]); `None` by default (no device memory to speak of).
    fn memory_report(&self) -> Option<cuzk_engine::MemoryReport> {
        None
    }

    /// How many partitions of `srs`'s circuit this worker proves best as one
    /// [`DeviceWorker::prove_batch`] (a GPU streaming the circuit's parameters shares each
    /// transfer among them); 1 by default. The device actor batches the leases it holds.
    fn batch_limit(&self, srs: &Srs) -> usize {
        let _ = srs;
        1
    }

    /// Proves several partitions of one circuit together: one result each, in the order
    /// given, each what [`DeviceWorker::prove`] would have returned for it. One by one by
    /// default.
    fn prove_batch(
        &mut self,
        works: Vec<PartitionWork>,
    ) -> Vec<std::result::Result<Proved, DeviceFault>> {
        works.into_iter().map(|w| self.prove(w, None)).collect()
    }
}

/// A kind of device: discovery at start-up, opening on the device's own thread, and what a
/// partition's lease must reserve on it.
pub trait DeviceDriver: Send + Sync + 'static {
    /// Short name for logs ("cpu", "cuda", "mock").
    fn name(&self) -> &'static str;

    /// The devices present, with their physical identity. Zero devices is a normal answer.
    fn discover(&self) -> Result<Vec<DeviceInfo>>;

    /// Opens `device`. Called once, on the device actor's dedicated thread, so a CUDA context
    /// created here is bound to that thread. Must check that what it opened is `device`
    /// (physical identity), not just the ordinal it was found at.
    fn open(&self, device: &DeviceInfo) -> Result<Box<dyn DeviceWorker>>;

    /// Device memory one partition with these parameters reserves (0 where memory is not a
    /// constraint, as on the CPU).
    fn vram_for(&self, device: &DeviceInfo, srs: &Srs) -> u64;

    /// The part of [`vram_for`](Self::vram_for) that is the parameters themselves, which a
    /// device holds once for all the partitions of the circuit it has leases for (the lease
    /// table reserves it once a device and circuit). 0 by default: every lease reserves all
    /// of `vram_for`.
    fn vram_shared_for(&self, device: &DeviceInfo, srs: &Srs) -> u64 {
        let _ = (device, srs);
        0
    }

    /// Device memory leases on `device` may reserve in all.
    fn usable_vram(&self, device: &DeviceInfo) -> u64 {
        device.total_memory
    }

    /// How many leases of `srs`'s circuit `device` may hold at once while it holds no
    /// other circuit's, beyond [`pipeline_depth`](Self::pipeline_depth): the partitions a
    /// GPU streaming the circuit's parameters proves as one batch (each lease still reserves
    /// its own memory). 1 by default: no more than the pipeline depth.
    fn lease_batch(&self, device: &DeviceInfo, srs: &Srs) -> usize {
        let _ = (device, srs);
        1
    }

    /// How many leases `device` may hold at once (at least 1): one proving, the others
    /// waiting on its actor, where the worker can use them early (uploads ahead). Each lease
    /// reserves its own VRAM, so a second lease is granted only where both fit. 1 by default.
    fn pipeline_depth(&self, device: &DeviceInfo) -> usize {
        let _ = device;
        1
    }
}

/// A [`DeviceWorker`] proving through an engine [`Backend`] (CPU, or a GPU backend), on a
/// dedicated thread pool when one is given.
pub struct BackendWorker {
    backend: Box<dyn Backend>,
    pool: Option<rayon::ThreadPool>,
}

impl BackendWorker {
    /// Wraps `backend`; with `threads`, its CPU work runs on a pool of that many threads.
    pub fn new(backend: Box<dyn Backend>, threads: Option<usize>) -> Result<Self> {
        let pool = match threads {
            Some(n) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n.max(1))
                    .thread_name(|i| format!("cuzk-cpu-{i}"))
                    .build()
                    .map_err(|e| Error::Device {
                        device: "cpu".into(),
                        reason: format!("cannot start {n} prover threads: {e}"),
                    })?,
            ),
            None => None,
        };
        Ok(BackendWorker { backend, pool })
    }
}

impl DeviceWorker for BackendWorker {
    fn prove(
        &mut self,
        work: PartitionWork,
        next: Option<&PartitionWork>,
    ) -> std::result::Result<Proved, DeviceFault> {
        let upcoming = next.and_then(|n| match &n.payload {
            Payload::Proof {
                srs, assignment, ..
            } => Some(Upcoming {
                token: n.lease.0,
                srs,
                assignment,
            }),
            Payload::Simulated { .. } => None,
        });
        match work.payload {
            Payload::Proof {
                srs,
                assignment,
                r,
                s,
                ..
            } => {
                let backend = &mut self.backend;
                let (partition, token) = (work.partition, work.lease.0);
                let run = || {
                    backend.prove_pipelined(&srs, assignment, (r, s), partition, token, upcoming)
                };
                let out = match &self.pool {
                    Some(pool) => pool.install(run),
                    None => run(),
                };
                out.map(Proved::Groth16)
                    .map_err(|e| DeviceFault::Failed(e.to_string()))
            }
            Payload::Simulated { .. } => Err(DeviceFault::Failed(format!(
                "{} proves real partitions only; simulated jobs need mock devices",
                self.backend.name()
            ))),
        }
    }

    fn preload(&mut self, srs: &Srs) -> std::result::Result<bool, String> {
        self.backend.preload(srs).map_err(|e| e.to_string())
    }

    fn memory_report(&self) -> Option<cuzk_engine::MemoryReport> {
        self.backend.memory_report()
    }

    fn batch_limit(&self, srs: &Srs) -> usize {
        self.backend.batch_limit(srs).max(1)
    }

    fn prove_batch(
        &mut self,
        works: Vec<PartitionWork>,
    ) -> Vec<std::result::Result<Proved, DeviceFault>> {
        let k = works.len();
        let all = |f: DeviceFault| (0..k).map(|_| Err(f.clone())).collect::<Vec<_>>();
        let mut circuit: Option<Arc<Srs>> = None;
        let mut items = Vec::with_capacity(k);
        for w in works {
            match w.payload {
                Payload::Proof {
                    srs,
                    assignment,
                    r,
                    s,
                    ..
                } => {
                    if circuit.as_ref().is_some_and(|c| c.id() != srs.id()) {
                        return all(DeviceFault::WrongAnswer(
                            "a batch must hold partitions of one circuit".into(),
                        ));
                    }
                    circuit.get_or_insert(srs);
                    items.push(BatchItem {
                        assignment,
                        r,
                        s,
                        partition: w.partition,
                    });
                }
                Payload::Simulated { .. } => {
                    return all(DeviceFault::Failed(format!(
                        "{} proves real partitions only; simulated jobs need mock devices",
                        self.backend.name()
                    )))
                }
            }
        }
        let Some(srs) = circuit else {
            return Vec::new();
        };
        let backend = &mut self.backend;
        let run = || backend.prove_batch(&srs, items);
        let out = match &self.pool {
            Some(pool) => pool.install(run),
            None => run(),
        };
        match out {
            Ok(proofs) if proofs.len() == k => {
                proofs.into_iter().map(|p| Ok(Proved::Groth16(p))).collect()
            }
            Ok(proofs) => all(DeviceFault::WrongAnswer(format!(
                "{} proofs for a batch of {k}",
                proofs.len()
            ))),
            Err(e) => all(DeviceFault::Failed(e.to_string())),
        }
    }
}

/// The host's cores as one device: the embedded default when no GPU is present.
#[derive(Clone, Debug, Default)]
pub struct CpuDriver {
    /// Prover threads (default: rayon's global pool, one per core).
    pub threads: Option<usize>,
}

impl DeviceDriver for CpuDriver {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn discover(&self) -> Result<Vec<DeviceInfo>> {
        Ok(vec![DeviceInfo {
            id: DeviceId::CPU,
            ordinal: 0,
            name: format!(
                "host CPU ({} threads)",
                self.threads.unwrap_or_else(rayon::current_num_threads)
            ),
            total_memory: 0,
        }])
    }

    fn open(&self, device: &DeviceInfo) -> Result<Box<dyn DeviceWorker>> {
        if !device.id.is_cpu() {
            return Err(Error::Device {
                device: device.id.to_string(),
                reason: "the CPU driver opens only the host CPU".into(),
            });
        }
        Ok(Box::new(BackendWorker::new(
            Box::new(CpuBackend),
            self.threads,
        )?))
    }

    fn vram_for(&self, _device: &DeviceInfo, _srs: &Srs) -> u64 {
        0
    }

    fn usable_vram(&self, _device: &DeviceInfo) -> u64 {
        u64::MAX
    }
}

/// Opens a GPU backend for the device at `ordinal` on the calling thread; supplied by the
/// engine's CUDA backend.
pub type GpuOpener = Arc<dyn Fn(usize) -> cuzk_engine::Result<Box<dyn Backend>> + Send + Sync>;

/// The device memory one partition of a circuit reserves on a device with the given bytes
/// for leases, as a GPU backend plans it.
pub type VramEstimate = Arc<dyn Fn(&Srs, u64) -> u64 + Send + Sync>;

/// The most partitions of a circuit a device with the given bytes for leases proves as one
/// batch, as a GPU backend plans it.
pub type BatchEstimate = Arc<dyn Fn(&Srs, u64) -> usize + Send + Sync>;

/// NVIDIA GPUs through cudarc. Discovery reads each device's PCI address and UUID (ordinals
/// are as `CUDA_VISIBLE_DEVICES` made them for this process and are used only right here,
/// at start-up).
pub struct CudaDriver {
    name: &'static str,
    opener: Option<GpuOpener>,
    vram: Option<VramEstimate>,
    shared: Option<VramEstimate>,
    batch: Option<BatchEstimate>,
    depth: usize,
    memory_limit: Option<u64>,
}

impl CudaDriver {
    /// A driver that can discover GPUs; `opener` proves on them (without one, opening fails
    /// with a clear error), `vram` says what a partition of a circuit reserves.
    pub fn new(opener: Option<GpuOpener>, vram: Option<VramEstimate>) -> Self {
        CudaDriver {
            name: "cuda",
            opener,
            vram,
            shared: None,
            batch: None,
            depth: 2,
            memory_limit: None,
        }
    }

    /// Sets what of a partition's reservation is its circuit's resident parameters (see
    /// [`DeviceDriver::vram_shared_for`]; at most what `vram` says): a second lease of the
    /// same circuit on a GPU then reserves only the partition's working memory. Without it
    /// every lease reserves the whole estimate.
    pub fn with_shared_vram(mut self, shared: VramEstimate) -> Self {
        self.shared = Some(shared);
        self
    }

    /// Sets how many leases of a circuit a GPU may hold to prove as one batch (see
    /// [`DeviceDriver::lease_batch`]). Without it, no more than the pipeline depth.
    pub fn with_lease_batch(mut self, batch: BatchEstimate) -> Self {
        self.batch = Some(batch);
        self
    }

    /// Holds each GPU's leases to `limit` bytes in all (`None`: the whole card), less what
    /// the context takes ([`cuzk_engine::cuda::usable_memory`]).
    pub fn with_memory_limit(mut self, limit: Option<u64>) -> Self {
        self.memory_limit = limit;
        self
    }

    /// Sets how many leases each GPU may hold (see [`DeviceDriver::pipeline_depth`]): 2 by
    /// default, so the next partition is uploaded while the current one's kernels run; 1
    /// turns that off.
    pub fn with_pipeline_depth(mut self, depth: usize) -> Self {
        self.depth = depth.max(1);
        self
    }

    /// Names the driver in logs, errors and status (`"cuda"` by default): the engine's
    /// `dual` driver is this driver opening another backend.
    pub fn with_name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Whether this build can prove on GPUs.
    pub fn can_prove(&self) -> bool {
        self.opener.is_some()
    }
}

impl DeviceDriver for CudaDriver {
    fn name(&self) -> &'static str {
        self.name
    }

    fn discover(&self) -> Result<Vec<DeviceInfo>> {
        if !cuzk_kernels::driver_present() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for ordinal in 0..cuzk_kernels::device_count() {
            let dev = cuzk_kernels::GpuDevice::open(ordinal).map_err(|e| Error::Device {
                device: format!("ordinal {ordinal}"),
                reason: format!("cannot read its identity: {e}"),
            })?;
            let pci = dev.pci_id();
            out.push(DeviceInfo {
                id: DeviceId {
                    pci: PciAddress {
                        domain: pci.domain,
                        bus: pci.bus,
                        device: pci.device,
                    },
                    uuid: dev.uuid(),
                },
                ordinal: ordinal as u32,
                name: dev.name().to_string(),
                total_memory: dev.total_memory() as u64,
            });
        }
        Ok(out)
    }

    fn open(&self, device: &DeviceInfo) -> Result<Box<dyn DeviceWorker>> {
        let fail = |reason: String| Error::Device {
            device: device.id.to_string(),
            reason,
        };
        let opener = self
            .opener
            .as_ref()
            .ok_or_else(|| fail("this build has no CUDA proving backend".into()))?;
        // Ordinals are stable within a process: the one found at discovery is still this
        // device; check its identity anyway, since proving on the wrong GPU is the failure
        // this whole design exists to prevent.
        let probe = cuzk_kernels::GpuDevice::open(device.ordinal as usize)
            .map_err(|e| fail(format!("cannot open: {e}")))?;
        let pci = probe.pci_id();
        if (pci.domain, pci.bus, pci.device)
            != (
                device.id.pci.domain,
                device.id.pci.bus,
                device.id.pci.device,
            )
            || probe.uuid() != device.id.uuid
        {
            return Err(fail(format!(
                "ordinal {} is now {pci}, not this device: refusing to use it",
                device.ordinal
            )));
        }
        drop(probe);
        let backend = opener(device.ordinal as usize).map_err(|e| fail(e.to_string()))?;
        Ok(Box::new(BackendWorker::new(backend, None)?))
    }

    fn vram_for(&self, device: &DeviceInfo, srs: &Srs) -> u64 {
        match &self.vram {
            Some(f) => f(srs, self.usable_vram(device)),
            // Without the backend's own estimate: parameters plus a partition's scalars,
            // doubled for scratch.
            None => 2 * (srs.memory_bytes() + srs.partition_host_bytes()),
        }
    }

    fn vram_shared_for(&self, device: &DeviceInfo, srs: &Srs) -> u64 {
        match (&self.vram, &self.shared) {
            (Some(_), Some(f)) => f(srs, self.usable_vram(device)).min(self.vram_for(device, srs)),
            _ => 0,
        }
    }

    fn lease_batch(&self, device: &DeviceInfo, srs: &Srs) -> usize {
        self.batch
            .as_ref()
            .map_or(1, |f| f(srs, self.usable_vram(device)).max(1))
    }

    fn usable_vram(&self, device: &DeviceInfo) -> u64 {
        // the budget, less room for the context, modules and allocator slack
        cuzk_engine::cuda::usable_memory(device.total_memory, self.memory_limit)
    }

    fn pipeline_depth(&self, _device: &DeviceInfo) -> usize {
        self.depth
    }
}

/// How long a simulated partition takes on a device of `speed` (1.0 = nominal).
pub fn scaled(gpu_time: Duration, speed: f64) -> Duration {
    if speed > 0.0 && speed.is_finite() {
        gpu_time.div_f64(speed)
    } else {
        gpu_time
    }
}
