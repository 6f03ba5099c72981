//! How an engine is set up ([`EngineConfig`], with the devices it proves on) and the
//! options of one submission ([`SubmitOptions`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cuzk_engine::{ProofKind, ProveOptions};

use crate::device::DeviceSelector;
use crate::driver::DeviceDriver;
use crate::job::Priority;
use crate::mock::MockDriver;
use crate::policy::Limits;
use crate::report::JobHook;

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
    /// Where recorded circuits (PCE) are cached: `None` = `<params_dir>/cuzk-pce`.
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
    /// Where the GPUs' compiled kernel modules are read and stored (`None`:
    /// `$XDG_CACHE_HOME/cuzk/kernels`, else `~/.cache/cuzk/kernels`). A module missing there
    /// is compiled with NVRTC at its first use on each device (tens of seconds for the G2
    /// MSM's).
    pub kernel_cache: Option<PathBuf>,
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
            kernel_cache: None,
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
