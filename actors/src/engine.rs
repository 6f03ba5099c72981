//! The `Engine` handle users embed: start from a config, submit requests, await results
//! (blocking or async, from a plain `main` or inside any async runtime), cancel, read
//! status, shut down cleanly.
//!
//! The actors run on the engine's own threads (one for the scheduler, a pool for synthesis,
//! one per device); the handle only sends messages, so it is cheap to clone and safe to use
//! from any thread.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Addr, System};
use crossbeam_channel::Receiver;
use cuzk_engine::{circuits, ProofKind, ProofRequest, ProveOptions, RegisteredProof, SrsStore};
use futures::channel::oneshot;
use tracing::{info, warn};

use crate::device::{resolve, DeviceInfo, DeviceSelector};
use crate::driver::{CpuDriver, CudaDriver, DeviceDriver};
use crate::error::{Error, Result};
use crate::identity::DeviceId;
use crate::job::{JobId, Priority, WorkKind};
use crate::mock::MockDriver;
use crate::policy::{default_priority, Limits};
use crate::runtime::scheduler::{SchedulerActor, SchedulerSetup};
use crate::runtime::{
    Await, Cancel, GetStatus, JobInput, JobProgress, PreloadDevices, Shared, Shutdown, Submit,
};
use crate::trace::{write_chrome_trace, TraceEvent, TraceSink};
use crate::work::SimulatedJob;

/// Which devices the engine proves on.
#[derive(Clone)]
pub enum DeviceChoice {
    /// Every GPU found (with a CUDA backend in this build), else the CPU.
    Auto,
    /// The host CPU only.
    Cpu,
    /// These GPUs (by PCI address or UUID; an ordinal is resolved once, at start). Empty:
    /// every GPU found. An error when none is found.
    Gpus(Vec<DeviceSelector>),
    /// These GPUs (as [`DeviceChoice::Gpus`]), each proving through the `dual` backend
    /// ([`cuzk_engine::DualBackend`]): every operation on the CPU and on the GPU, compared
    /// before the next one; a difference fails the partition, naming the operation. A debug
    /// backend, slower than the CPU alone. An error when no GPU is found.
    Dual(Vec<DeviceSelector>),
    /// Devices of another driver (mock devices for simulations), selected as above.
    Driver(Arc<dyn DeviceDriver>, Vec<DeviceSelector>),
}

impl DeviceChoice {
    /// Every device of a mock driver.
    pub fn mock(driver: &MockDriver) -> Self {
        DeviceChoice::Driver(Arc::new(driver.clone()), Vec::new())
    }
}

impl std::fmt::Debug for DeviceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceChoice::Auto => f.write_str("Auto"),
            DeviceChoice::Cpu => f.write_str("Cpu"),
            DeviceChoice::Gpus(s) => write!(f, "Gpus({s:?})"),
            DeviceChoice::Dual(s) => write!(f, "Dual({s:?})"),
            DeviceChoice::Driver(d, s) => write!(f, "Driver({}, {s:?})", d.name()),
        }
    }
}

/// The synthesis threads' default OS niceness ([`EngineConfig::synthesis_niceness`]).
pub const DEFAULT_SYNTHESIS_NICENESS: i32 = 10;

/// The highest niceness the OS gives a thread: front ends accept 0 to this for
/// [`EngineConfig::synthesis_niceness`], and the engine clamps larger values to it.
pub const MAX_SYNTHESIS_NICENESS: i32 = 19;

/// How the engine is set up.
#[derive(Clone)]
pub struct EngineConfig {
    /// Parameter directory (`.params`/`.vk` files).
    pub params_dir: PathBuf,
    /// Where recorded circuits (PCE) are cached: `None` = `$CUZK_PCE_CACHE` or
    /// `<params_dir>/cuzk-pce`.
    pub pce_dir: Option<PathBuf>,
    /// Devices.
    pub devices: DeviceChoice,
    /// Prover threads of the CPU device (default: one per core).
    pub cpu_threads: Option<usize>,
    /// Synthesis workers (threads building witnesses), at least 1.
    pub synthesis_workers: usize,
    /// Host memory synthesised partitions may hold before synthesis waits, in bytes.
    pub host_memory_budget: u64,
    /// Retries, quarantine, lease timeout.
    pub limits: Limits,
    /// Unfinished partitions the engine accepts in all; beyond, submit pushes back.
    pub max_outstanding_partitions: usize,
    /// A job not finished within this time fails (per-request timeouts override it).
    pub job_timeout: Option<Duration>,
    /// Randomness, verification, PCE.
    pub prove: ProveOptions,
    /// Priority overrides per kind (defaults: WinningPoSt critical, WindowPoSt high, others
    /// normal).
    pub priorities: Vec<(ProofKind, Priority)>,
    /// Write a Chrome/Perfetto trace of the run here at shutdown.
    pub trace_file: Option<PathBuf>,
    /// Called once per finished job (metrics); must be quick.
    pub on_job_done: Option<JobHook>,
    /// How often lease timeouts are checked.
    pub tick: Duration,
    /// Finished jobs whose results are kept for late waiters (oldest dropped first; a wait
    /// for a dropped result answers `UnknownJob`). Size it above the number of jobs a caller
    /// may submit before waiting for them.
    pub retain_results: usize,
    /// Leases a GPU may hold at once: 2 (default) uploads the next partition while the
    /// current one's kernels run, where the device's memory holds both reservations; 1
    /// proves strictly one partition after the other.
    pub gpu_pipeline_depth: usize,
    /// Device memory each GPU's leases may use in all, bytes (`None`: the whole card, less
    /// what the context takes): an 80 GB card then stands in for a smaller one. Circuits
    /// whose bases and a partition's working memory do not fit are streamed from host
    /// memory; a partition that does not fit even so fails at preparation, before any device
    /// work, with the bytes it needs.
    pub gpu_memory_limit: Option<u64>,
    /// Streams every circuit's bases in chunks of this many G1 points, even where they
    /// would fit resident (`None`: automatic). For tests and benchmarks of the streamed path.
    pub gpu_stream_chunk: Option<usize>,
    /// OS niceness (0-19) of the threads that synthesise (the synthesis workers, and the
    /// engine's own pool, one thread per core, for synthesis's parallel loops). Above the
    /// device and verification threads' 0, so that a device thread never waits for a core
    /// behind synthesis when the host is full. 0 leaves them as they are. Linux only (the
    /// setting is ignored elsewhere); a failure to set it is logged, not fatal.
    pub synthesis_niceness: i32,
}

impl EngineConfig {
    /// Defaults: automatic devices, two synthesis workers, half the host memory... see the
    /// field docs; parameters from `params_dir`.
    pub fn new(params_dir: impl Into<PathBuf>) -> Self {
        EngineConfig {
            params_dir: params_dir.into(),
            pce_dir: None,
            devices: DeviceChoice::Auto,
            cpu_threads: None,
            synthesis_workers: 2,
            host_memory_budget: 16 << 30,
            limits: Limits::default(),
            max_outstanding_partitions: 10_000,
            job_timeout: None,
            prove: ProveOptions::default(),
            priorities: Vec::new(),
            trace_file: None,
            on_job_done: None,
            tick: Duration::from_millis(50),
            retain_results: 4096,
            gpu_pipeline_depth: 2,
            gpu_memory_limit: None,
            gpu_stream_chunk: None,
            synthesis_niceness: DEFAULT_SYNTHESIS_NICENESS,
        }
    }
}

/// Per-request options.
#[derive(Clone, Debug, Default)]
pub struct SubmitOptions {
    /// Priority (default: the kind's).
    pub priority: Option<Priority>,
    /// The caller's request id, as node software labels its requests (Curio:
    /// `porep-<miner>-<sector>`, `wdpost-<miner>-<deadline>-<rand>`, ...). The same id with
    /// the same content attaches to the job while it runs and returns its proof while the
    /// result is kept; after a failure or a cancellation the request runs again; the same id
    /// with other content is another job.
    pub request_id: Option<String>,
    /// Fail the job if it has not finished within this time.
    pub timeout: Option<Duration>,
}

/// An accepted submission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The job.
    pub job: JobId,
    /// True when `request_id` matched a job already submitted (nothing new was queued).
    pub existing: bool,
    /// Partitions of other jobs ahead of this one.
    pub queue_position: usize,
}

/// Measured durations of a job (wall clock).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobTimings {
    /// From submission until its first partition reached a device.
    pub queue_wait: Duration,
    /// Loading parameters (zero when already loaded).
    pub srs_load: Duration,
    /// Synthesis, summed over partitions (including re-synthesis after failures).
    pub synthesis: Duration,
    /// Device time, summed over partition attempts. Verifying a proof is not in it: that
    /// runs on the host after the proof has left its device, beside the device's next
    /// partition, and counts in `total`.
    pub gpu_compute: Duration,
    /// Submission to result.
    pub total: Duration,
}

/// A finished job's proof.
#[derive(Clone, Debug)]
pub struct JobResult {
    /// The job.
    pub job: JobId,
    /// What it was.
    pub kind: WorkKind,
    /// The partitions' compressed proofs (192 bytes each), concatenated in order.
    pub proof: Vec<u8>,
    /// Number of partitions.
    pub partitions: usize,
    /// Whether every partition was verified before it was accepted.
    pub verified: bool,
    /// Timings.
    pub timings: JobTimings,
    /// Devices that proved its partitions.
    pub devices: Vec<DeviceId>,
}

/// How a job ended, for [`JobReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportOutcome {
    /// Proved.
    Completed,
    /// Failed: its cause and message.
    Failed(crate::failure::Failure),
    /// Cancelled (with a reason when the engine did it).
    Cancelled(Option<String>),
}

/// The `on_job_done` callback: called on the scheduler's thread once per finished job.
pub type JobHook = Arc<dyn Fn(&JobReport) + Send + Sync>;

/// What `on_job_done` receives for every finished job.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// The job.
    pub job: JobId,
    /// What it was.
    pub kind: WorkKind,
    /// Partitions.
    pub partitions: usize,
    /// How it ended.
    pub outcome: ReportOutcome,
    /// Timings.
    pub timings: JobTimings,
    /// Devices that ran its partitions.
    pub devices: Vec<DeviceId>,
}

/// One device in a status report.
#[derive(Clone, Debug)]
pub struct DeviceStatus {
    /// Identity, ordinal at start-up, name, memory.
    pub info: DeviceInfo,
    /// Memory leases may reserve in all.
    pub usable_vram: u64,
    /// Memory reserved by active leases.
    pub vram_leased: u64,
    /// Partition running now: (job, kind, partition).
    pub current: Option<(JobId, WorkKind, usize)>,
    /// Quarantined after repeated failures.
    pub quarantined: bool,
    /// Why the device is out of service (failed to open, lost), if it is.
    pub down: Option<String>,
    /// Time spent proving.
    pub busy: Duration,
    /// Partitions proved.
    pub partitions_ok: u64,
    /// Attempts that failed.
    pub partitions_failed: u64,
    /// How its last partition reached its parameters and the device memory measured (GPUs
    /// after their first partition).
    pub memory: Option<cuzk_engine::MemoryReport>,
}

/// Work of one kind in a status report.
#[derive(Clone, Debug)]
pub struct QueueStatus {
    /// The kind.
    pub kind: WorkKind,
    /// Jobs running.
    pub jobs: usize,
    /// Partitions not yet on a device.
    pub pending: usize,
    /// Partitions on a device now.
    pub in_progress: usize,
}

/// A loaded parameter set in a status report.
#[derive(Clone, Debug)]
pub struct SrsStatus {
    /// Parameter-cache identifier.
    pub identifier: String,
    /// Host memory it occupies.
    pub size_bytes: u64,
    /// Size of its file.
    pub file_bytes: u64,
    /// Running jobs proving with it now.
    pub users: usize,
}

/// A snapshot of the engine.
#[derive(Clone, Debug)]
pub struct EngineStatus {
    /// Every device, ordered by physical identity.
    pub devices: Vec<DeviceStatus>,
    /// Running work per kind.
    pub queues: Vec<QueueStatus>,
    /// Loaded parameter sets.
    pub srs: Vec<SrsStatus>,
    /// Jobs not finished.
    pub jobs_running: usize,
    /// Jobs completed since start.
    pub completed: u64,
    /// Jobs failed since start.
    pub failed: u64,
    /// Jobs cancelled since start.
    pub cancelled: u64,
    /// Partitions synthesised and waiting for a device.
    pub partitions_ready: usize,
    /// Partitions being synthesised.
    pub partitions_synthesizing: usize,
    /// Host memory held by synthesised partitions.
    pub host_memory_used: u64,
    /// The budget for it.
    pub host_memory_budget: u64,
    /// Since start.
    pub uptime: Duration,
    /// Shutting down.
    pub draining: bool,
}

struct Inner {
    addr: Addr<SchedulerActor>,
    shared: Arc<Shared>,
    store: Arc<SrsStore>,
    devices: Vec<DeviceInfo>,
    driver_name: &'static str,
    priorities: Vec<(ProofKind, Priority)>,
    stopped: Receiver<()>,
    trace: Option<(PathBuf, Receiver<TraceEvent>)>,
}

/// The engine: cheap to clone, usable from any thread. Dropping the last clone shuts the
/// engine down at once (running jobs are cancelled, waiters answered).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// The CUDA driver of this build: the engine's CUDA backend, opened on each device actor's
/// thread; a lease reserves the backend's own plan for the circuit on that device (resident
/// bases + working memory, or streamed bases + their rings and working memory).
pub fn cuda_driver(config: &EngineConfig) -> CudaDriver {
    use cuzk_engine::cuda::CudaBackend;
    let (limit, chunk) = (config.gpu_memory_limit, config.gpu_stream_chunk);
    let opener: crate::driver::GpuOpener = Arc::new(move |ordinal| {
        let backend = CudaBackend::open(ordinal)?
            .with_memory_limit(limit)
            .with_stream_chunk(chunk);
        Ok(Box::new(backend) as Box<dyn cuzk_engine::Backend>)
    });
    gpu_driver(config, opener).with_pipeline_depth(config.gpu_pipeline_depth)
}

/// The `dual` driver: the CUDA driver's GPUs, each proving through
/// [`cuzk_engine::DualBackend`] (the CPU and the GPU on every operation, compared). Its
/// leases reserve what the CUDA backend's do; one lease a device at a time, since the dual
/// backend uploads nothing ahead.
pub fn dual_driver(config: &EngineConfig) -> CudaDriver {
    use cuzk_engine::cuda::ops::CudaOps;
    let (limit, chunk) = (config.gpu_memory_limit, config.gpu_stream_chunk);
    let opener: crate::driver::GpuOpener = Arc::new(move |ordinal| {
        let gpu = CudaOps::open(ordinal)?
            .with_memory_limit(limit)
            .with_stream_chunk(chunk);
        Ok(Box::new(cuzk_engine::DualBackend::with_gpu(gpu)) as Box<dyn cuzk_engine::Backend>)
    });
    gpu_driver(config, opener)
        .with_pipeline_depth(1)
        .with_name("dual")
}

/// A driver of the CUDA devices proving with the backends `opener` opens, their leases
/// reserving the CUDA backend's plan for a circuit.
fn gpu_driver(config: &EngineConfig, opener: crate::driver::GpuOpener) -> CudaDriver {
    use cuzk_engine::cuda::lease_plan;
    let (limit, chunk) = (config.gpu_memory_limit, config.gpu_stream_chunk);
    // what does not fit even streamed reserves more than any device has: refused at
    // preparation, naming the bytes
    let vram = Arc::new(move |srs: &cuzk_engine::Srs, usable: u64| {
        lease_plan(srs, usable, chunk)
            .map_or_else(|need| need.max(usable.saturating_add(1)), |p| p.bytes)
    });
    // the resident bases and masks: one copy a device, whatever the leases of the circuit
    let shared = Arc::new(move |srs: &cuzk_engine::Srs, usable: u64| {
        lease_plan(srs, usable, chunk).map_or(0, |p| p.shared)
    });
    CudaDriver::new(Some(opener), Some(vram))
        .with_shared_vram(shared)
        .with_memory_limit(limit)
}

impl Engine {
    /// Starts the engine: discovers and resolves devices, starts the scheduler, the synthesis
    /// pool and one thread per device. Fails with a clear error when a configured device is
    /// missing or named twice.
    pub fn start(config: EngineConfig) -> Result<Engine> {
        let cpu = || -> Arc<dyn DeviceDriver> {
            Arc::new(CpuDriver {
                threads: config.cpu_threads,
            })
        };
        let (driver, selectors): (Arc<dyn DeviceDriver>, Vec<DeviceSelector>) =
            match &config.devices {
                DeviceChoice::Cpu => (cpu(), Vec::new()),
                DeviceChoice::Auto => {
                    let cuda = cuda_driver(&config);
                    let found = if cuda.can_prove() {
                        cuda.discover().unwrap_or_else(|e| {
                            warn!(error = %e, "GPU discovery failed; proving on the CPU");
                            Vec::new()
                        })
                    } else {
                        Vec::new()
                    };
                    if found.is_empty() {
                        (cpu(), Vec::new())
                    } else {
                        (Arc::new(cuda), Vec::new())
                    }
                }
                DeviceChoice::Gpus(sel) => (Arc::new(cuda_driver(&config)), sel.clone()),
                DeviceChoice::Dual(sel) => (Arc::new(dual_driver(&config)), sel.clone()),
                DeviceChoice::Driver(d, sel) => (d.clone(), sel.clone()),
            };
        let discovered = driver.discover()?;
        let devices = resolve(&selectors, &discovered)?;
        if devices.is_empty() && matches!(config.devices, DeviceChoice::Dual(_)) {
            return Err(Error::NoDevice(
                "the dual backend checks a CUDA device against the CPU, and no CUDA device \
                 was found"
                    .into(),
            ));
        }
        if devices.is_empty() {
            return Err(Error::NoDevice(format!(
                "the {} driver found no device",
                driver.name()
            )));
        }
        for d in &devices {
            info!(device = %d.id, uuid = %d.id.uuid_string(), ordinal = d.ordinal, name = %d.name, memory = d.total_memory, "device");
        }
        let mut store = SrsStore::new(&config.params_dir);
        if let Some(dir) = &config.pce_dir {
            store = store.with_pce_dir(Some(dir.clone()));
        }
        let store = Arc::new(store);
        let shared = Arc::new(Shared::default());
        let (trace, trace_rx) = TraceSink::new(config.trace_file.is_some());
        let setup = SchedulerSetup {
            store: store.clone(),
            driver: driver.clone(),
            devices: devices.clone(),
            limits: config.limits.clone(),
            synthesis_workers: config.synthesis_workers.max(1),
            synthesis_pool: crate::runtime::synthesis::synthesis_pool(config.synthesis_niceness)?,
            synthesis_niceness: config.synthesis_niceness,
            host_memory_budget: config.host_memory_budget,
            max_outstanding_partitions: config.max_outstanding_partitions,
            job_timeout: config.job_timeout,
            prove: config.prove.clone(),
            tick: config.tick.max(Duration::from_millis(1)),
            retain_results: config.retain_results,
            on_job_done: config.on_job_done.clone(),
            shared: shared.clone(),
            trace,
        };
        let (addr_tx, addr_rx) = crossbeam_channel::bounded(1);
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        std::thread::Builder::new()
            .name("cuzk-engine".into())
            .spawn(move || {
                let _stopped = stop_tx; // dropped when this thread ends: waiters see it
                let sys = System::new();
                let started = sys.block_on(async move { SchedulerActor::start(setup) });
                let ok = started.is_ok();
                let _ = addr_tx.send(started);
                if ok {
                    if let Err(e) = sys.run() {
                        warn!(error = %e, "engine actor system ended with an error");
                    }
                }
            })
            .map_err(|e| Error::Device {
                device: "engine".into(),
                reason: format!("cannot start the engine thread: {e}"),
            })?;
        let addr = addr_rx.recv().map_err(|_| Error::Stopped)??;
        Ok(Engine {
            inner: Arc::new(Inner {
                addr,
                shared,
                store,
                devices,
                driver_name: driver.name(),
                priorities: config.priorities.clone(),
                stopped: stop_rx,
                trace: config.trace_file.clone().zip(trace_rx),
            }),
        })
    }

    /// The devices this engine proves on, ordered by physical identity.
    pub fn devices(&self) -> &[DeviceInfo] {
        &self.inner.devices
    }

    /// The driver in use ("cpu", "cuda", "dual", "mock").
    pub fn driver_name(&self) -> &'static str {
        self.inner.driver_name
    }

    /// The parameter store (shared with the engine's workers).
    pub fn store(&self) -> &Arc<SrsStore> {
        &self.inner.store
    }

    fn priority_for(&self, kind: ProofKind, opts: &SubmitOptions) -> Priority {
        opts.priority
            .or_else(|| {
                self.inner
                    .priorities
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map(|(_, p)| *p)
            })
            .unwrap_or_else(|| default_priority(WorkKind::Proof(kind)))
    }

    /// Validates a request (decodes its inputs and builds its circuits, on the calling
    /// thread) and queues it. Errors at once for a bad request, back-pressure, or shutdown.
    pub fn submit(&self, request: &ProofRequest, opts: SubmitOptions) -> Result<Submitted> {
        let plan = circuits::plan(request)?;
        let kind = request.proof.kind;
        let shape_identity = plan.shape_identity();
        let mut circuits = Vec::with_capacity(plan.partitions.len());
        let mut public_inputs = Vec::with_capacity(plan.partitions.len());
        for p in plan.partitions {
            circuits.push(p.circuit);
            public_inputs.push(p.public_inputs);
        }
        let msg = Submit {
            input: JobInput::Proof {
                proof: plan.proof,
                params_identifier: plan.params_identifier,
                shape_identity,
                circuits,
                public_inputs,
                blank: plan.blank,
                aggregation: plan.aggregation,
            },
            kind: WorkKind::Proof(kind),
            priority: self.priority_for(kind, &opts),
            request_key: opts.request_id.map(|r| (r, request.digest())),
            timeout: opts.timeout,
        };
        futures::executor::block_on(self.inner.addr.send(msg)).map_err(|_| Error::Stopped)?
    }

    /// As [`submit`](Self::submit), without blocking the caller's executor: validation runs
    /// on a short-lived thread. Works under any async runtime.
    pub async fn submit_async(
        &self,
        request: ProofRequest,
        opts: SubmitOptions,
    ) -> Result<Submitted> {
        let (tx, rx) = oneshot::channel();
        let me = self.clone();
        std::thread::Builder::new()
            .name("cuzk-submit".into())
            .spawn(move || {
                let _ = tx.send(me.submit(&request, opts));
            })
            .map_err(|e| Error::Rejected(format!("cannot start a validation thread: {e}")))?;
        rx.await.map_err(|_| Error::Stopped)?
    }

    /// Queues a simulated job (mock devices only).
    pub fn submit_simulated(&self, job: SimulatedJob, opts: SubmitOptions) -> Result<Submitted> {
        let request_key = opts.request_id.map(|r| (r, job.digest()));
        let msg = Submit {
            input: JobInput::Simulated(job),
            kind: WorkKind::Simulated,
            priority: opts.priority.unwrap_or(Priority::Normal),
            request_key,
            timeout: opts.timeout,
        };
        futures::executor::block_on(self.inner.addr.send(msg)).map_err(|_| Error::Stopped)?
    }

    /// Waits for a job (blocking): its result, or `Error::Timeout` after `timeout` (the job
    /// keeps running), `Error::JobFailed`, `Error::Cancelled`. Do not call it from inside an
    /// async task; use [`wait_async`](Self::wait_async) there.
    pub fn wait(&self, job: JobId, timeout: Option<Duration>) -> Result<JobResult> {
        futures::executor::block_on(self.wait_async(job, timeout))
    }

    /// As [`wait`](Self::wait), as a future that works under any async runtime (the timeout is
    /// kept by the engine, not by the caller's runtime).
    pub async fn wait_async(&self, job: JobId, timeout: Option<Duration>) -> Result<JobResult> {
        let (tx, rx) = oneshot::channel();
        self.inner
            .addr
            .try_send(Await {
                job,
                timeout,
                reply: tx,
            })
            .map_err(|_| Error::Stopped)?;
        rx.await.map_err(|_| Error::Stopped)?
    }

    /// Submits and waits.
    pub fn prove(&self, request: &ProofRequest, opts: SubmitOptions) -> Result<JobResult> {
        let s = self.submit(request, opts)?;
        self.wait(s.job, None)
    }

    /// Cancels a job; returns whether it was still running. Partitions on a device finish
    /// there and their results are discarded.
    pub fn cancel(&self, job: JobId) -> Result<bool> {
        futures::executor::block_on(self.cancel_async(job))
    }

    /// As [`cancel`](Self::cancel), as a future.
    pub async fn cancel_async(&self, job: JobId) -> Result<bool> {
        self.inner
            .addr
            .send(Cancel(job))
            .await
            .map_err(|_| Error::Stopped)?
    }

    /// A status snapshot.
    pub fn status(&self) -> Result<EngineStatus> {
        futures::executor::block_on(self.status_async())
    }

    /// As [`status`](Self::status), as a future.
    pub async fn status_async(&self) -> Result<EngineStatus> {
        self.inner
            .addr
            .send(GetStatus)
            .await
            .map_err(|_| Error::Stopped)
    }

    /// A running job's progress, read without a round trip (None once it has ended).
    pub fn progress(&self, job: JobId) -> Option<JobProgress> {
        self.inner.shared.jobs.get(&job).map(|p| p.clone())
    }

    /// The jobs not finished and their progress, oldest first (read without a round trip).
    pub fn running(&self) -> Vec<(JobId, JobProgress)> {
        let mut v: Vec<(JobId, JobProgress)> = self
            .inner
            .shared
            .jobs
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect();
        v.sort_by_key(|(id, _)| *id);
        v
    }

    /// Loads `proof`'s parameters into host memory now, and asks every device to make them
    /// resident in the background (where that evicts no other circuit's; a GPU uploads them
    /// between partitions), so the first proof of the circuit pays neither. Returns whether
    /// they were already loaded and the time the host load took (device uploads are not
    /// waited for).
    pub fn preload_srs(&self, proof: RegisteredProof) -> Result<(bool, Duration)> {
        let id = circuits::params_identifier(proof)?;
        let already = self.inner.store.loaded().iter().any(|(i, _)| *i == id);
        let t = Instant::now();
        let srs = self.inner.store.get(proof)?;
        let took = t.elapsed();
        // a stopped engine has no devices to ask: the host load still stands
        let _ = self.inner.addr.try_send(PreloadDevices(srs));
        Ok((already, took))
    }

    /// Drops `proof`'s loaded parameters. Refuses while a job uses them. Returns the bytes
    /// freed, or None when they were not loaded.
    pub fn evict_srs(&self, proof: RegisteredProof) -> Result<Option<u64>> {
        let id = circuits::params_identifier(proof)?;
        let loaded = self.inner.store.loaded();
        let Some((_, srs)) = loaded.iter().find(|(i, _)| *i == id) else {
            return Ok(None);
        };
        // the store's slot and `loaded`'s copy hold two references; more means users
        let users = Arc::strong_count(srs).saturating_sub(2);
        if users > 0 {
            return Err(Error::InUse(
                format!("parameters {id}"),
                format!("{users} job(s) are proving with them; evict after they finish"),
            ));
        }
        let bytes = srs.memory_bytes();
        drop(loaded);
        Ok(self.inner.store.evict(proof)?.then_some(bytes))
    }

    /// Stops accepting work, lets running jobs finish for up to `grace`, cancels the rest,
    /// answers every waiter, stops every actor and writes the trace file if one was asked
    /// for. Returns when the engine has stopped (a device stuck in a hung kernel is left
    /// behind on its own thread). Calling it again returns at once.
    pub fn shutdown(&self, grace: Duration) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        if self
            .inner
            .addr
            .try_send(Shutdown { grace, reply: tx })
            .is_ok()
        {
            let _ = futures::executor::block_on(rx);
        }
        // the engine thread ends right after; its end drops the sender
        let _ = self.inner.stopped.recv();
        if let Some((path, rx)) = &self.inner.trace {
            let events: Vec<TraceEvent> = rx.try_iter().collect();
            if !events.is_empty() {
                write_chrome_trace(path, &events)?;
                info!(path = %path.display(), events = events.len(), "trace written");
            }
        }
        Ok(())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let (tx, rx) = oneshot::channel();
        if self
            .addr
            .try_send(Shutdown {
                grace: Duration::ZERO,
                reply: tx,
            })
            .is_ok()
        {
            let _ = futures::executor::block_on(rx);
            let _ = self.stopped.recv();
        }
    }
}
