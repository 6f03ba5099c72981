//! The daemon's handle on the proving engine: the one seam between the gRPC service and
//! the runtime that proves ([`cuzk_actors::Engine`]).
//!
//! The service speaks only to [`DaemonEngine`], in the daemon's own types ([`Submitted`],
//! [`JobEnd`], [`Snapshot`], ...). What the daemon adds on top of the engine lives here:
//! - job ids on the wire carry a per-start prefix (`<boot>-<n>`), so a job id from before a
//!   restart is `NOT_FOUND`, never some other job;
//! - a job may be named by its `request_id` too (Curio knows its requests by their ids):
//!   the newest job submitted under that id;
//! - a parameter identifier is named by its wire circuit id (`wpost-32g`) in status.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cuzk_actors::{
    DeviceChoice, DeviceSelector, Engine, EngineConfig, EngineStatus, FailureCause, JobResult,
    Limits, Priority, ReportOutcome, SubmitOptions, WorkKind,
};

use super::config::{Backend, DaemonConfig};
use super::error::{DaemonError, Result};
use crate::{ProofKind, ProofRequest, ProveOptions, RegisteredProof};

/// Why a submission was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The request is malformed or inconsistent.
    #[error("{0}")]
    Invalid(String),
    /// Too much work is queued.
    #[error("{0}")]
    Backpressure(String),
    /// The daemon is shutting down.
    #[error("the daemon is shutting down and accepts no new work")]
    ShuttingDown,
    /// The engine failed.
    #[error("{0}")]
    Internal(String),
}

/// An accepted submission.
#[derive(Clone, Debug)]
pub struct Submitted {
    /// The job's id, as the wire carries it.
    pub job: String,
    /// True when the request id named a job already submitted.
    pub existing: bool,
    /// Partitions of other jobs ahead of this one.
    pub queue_position: usize,
}

/// Measured durations of a job.
#[derive(Clone, Debug, Default)]
pub struct PhaseTimes {
    /// From submission until its first partition reached a device.
    pub queue_wait: Duration,
    /// Loading parameters (zero when they were loaded).
    pub srs_load: Duration,
    /// Synthesis, summed over partitions.
    pub synthesis: Duration,
    /// Device time (NTT, MSMs, verification), summed over partitions.
    pub gpu_compute: Duration,
    /// Submission to end.
    pub total: Duration,
}

impl PhaseTimes {
    /// `(phase name, duration)` pairs, as metrics and the wire name them.
    pub fn phases(&self) -> [(&'static str, Duration); 4] {
        [
            ("queue_wait", self.queue_wait),
            ("srs_load", self.srs_load),
            ("synthesis", self.synthesis),
            ("gpu_compute", self.gpu_compute),
        ]
    }

    fn from_engine(t: &cuzk_actors::JobTimings) -> Self {
        PhaseTimes {
            queue_wait: t.queue_wait,
            srs_load: t.srs_load,
            synthesis: t.synthesis,
            gpu_compute: t.gpu_compute,
            total: t.total,
        }
    }
}

/// A completed job's output.
#[derive(Clone, Debug)]
pub struct Done {
    /// Concatenated partition proofs.
    pub proof: Vec<u8>,
    /// Number of partitions.
    pub partitions: usize,
    /// Whether each partition proof was verified.
    pub verified: bool,
    /// Durations.
    pub timings: PhaseTimes,
    /// Devices the partitions ran on (PCI id, or `cpu`).
    pub devices: Vec<String>,
}

/// How a job ended.
#[derive(Clone, Debug)]
pub enum JobEnd {
    /// Proved (and verified).
    Completed(Arc<Done>),
    /// Failed; `cause` was decided where the failure happened (metrics and the wire's
    /// `failure_cause` use its short name).
    Failed {
        /// The engine's message.
        message: String,
        /// The failure class.
        cause: FailureCause,
    },
    /// Cancelled by a caller or by shutdown.
    Cancelled {
        /// Who cancelled, or why.
        message: String,
    },
}

/// What a wait returned.
#[derive(Clone, Debug)]
pub enum WaitOutcome {
    /// The job ended.
    Ended(JobEnd),
    /// The timeout passed first; the job goes on.
    Timeout,
    /// No such job (never submitted here, or its result is no longer kept).
    Unknown,
    /// The engine has stopped.
    Stopped,
}

/// What a cancellation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// No such job.
    Unknown,
    /// The job had already ended.
    AlreadyEnded,
    /// Cancelled; `was_running` tells whether a partition of it was on a device.
    Cancelled {
        /// A partition was on a device (its result will be discarded).
        was_running: bool,
    },
}

/// How a finished job ended, as metrics count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Proved.
    Completed,
    /// Failed, with its cause class.
    Failed(FailureCause),
    /// Cancelled.
    Cancelled,
}

/// One finished job, as metrics see it.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// The engine's job number (the wire id is `<boot>-<job>`).
    pub job: u64,
    /// Proof kind.
    pub kind: ProofKind,
    /// How it ended.
    pub ending: Ending,
    /// What went wrong, for a failed job.
    pub message: Option<String>,
    /// Durations.
    pub timings: PhaseTimes,
}

/// A job not finished, as status shows it.
#[derive(Clone, Debug)]
pub struct RunningJob {
    /// Wire id.
    pub job: String,
    /// The request id it was submitted under, when it has one.
    pub request_id: Option<String>,
    /// Proof kind.
    pub kind: ProofKind,
    /// Partitions in all.
    pub partitions: usize,
    /// Partitions synthesised so far (attempts).
    pub synthesized: usize,
    /// Partitions proved.
    pub proved: usize,
}

/// A device as status shows it.
#[derive(Clone, Debug, Default)]
pub struct DeviceView {
    /// Ordinal at discovery (for display only).
    pub ordinal: u32,
    /// Name.
    pub name: String,
    /// PCI id (`""` for the CPU).
    pub pci: String,
    /// UUID (`""` for the CPU).
    pub uuid: String,
    /// Device memory in bytes (0 for the CPU).
    pub vram_total: u64,
    /// Device memory leases may still reserve, in bytes (0 for the CPU).
    pub vram_free: u64,
    /// Memory reserved by active leases in bytes.
    pub vram_leased: u64,
    /// The job running now, and its kind.
    pub current: Option<(String, ProofKind)>,
    /// The device receives no work after repeated failures (or is down).
    pub quarantined: bool,
    /// Time spent running work since start.
    pub busy: Duration,
    /// Partitions proved on it since start.
    pub partitions_ok: u64,
    /// Partition attempts that failed on it since start (each retried elsewhere or again).
    pub partitions_failed: u64,
    /// How its last partition reached its parameters, bytes streamed and the measured peak
    /// of device memory (GPUs, after their first partition).
    pub memory: Option<cuzk_engine::MemoryReport>,
}

/// Loaded parameters as status shows them.
#[derive(Clone, Debug)]
pub struct SrsView {
    /// The circuit (`None` when the identifier is not one this daemon has seen).
    pub proof: Option<RegisteredProof>,
    /// Parameter identifier.
    pub identifier: String,
    /// Host memory, bytes.
    pub size_bytes: u64,
    /// Jobs using it now.
    pub users: u32,
}

/// One kind's queue. Curio compares `pending + in_progress` (jobs) with its own limit.
#[derive(Clone, Debug)]
pub struct QueueView {
    /// Kind.
    pub kind: ProofKind,
    /// Jobs none of whose partitions is on a device.
    pub pending: u32,
    /// Jobs with a partition on a device.
    pub in_progress: u32,
    /// Partitions not yet on a device.
    pub pending_partitions: u32,
    /// Partitions on a device.
    pub in_progress_partitions: u32,
}

/// A status snapshot.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Devices.
    pub devices: Vec<DeviceView>,
    /// Loaded parameters.
    pub srs: Vec<SrsView>,
    /// Queues, one per kind.
    pub queues: Vec<QueueView>,
    /// Jobs completed since start.
    pub completed: u64,
    /// Jobs failed since start.
    pub failed: u64,
    /// Jobs cancelled since start.
    pub cancelled: u64,
    /// Time since start.
    pub uptime: Duration,
    /// No new work is accepted.
    pub shutting_down: bool,
    /// Host memory held by synthesised partitions, bytes.
    pub host_memory_used: u64,
    /// Its budget, bytes.
    pub host_memory_budget: u64,
    /// Jobs not finished, oldest first.
    pub running: Vec<RunningJob>,
}

/// Which circuits status can name: identifier -> registered proof, filled lazily from the
/// registered proofs seen in requests and preloads.
#[derive(Default)]
struct Circuits {
    seen: HashSet<(ProofKind, crate::SectorSize)>,
    resolved: HashSet<(ProofKind, crate::SectorSize)>,
    names: HashMap<String, RegisteredProof>,
}

struct Keys {
    /// request_id -> the wire id of the newest job submitted under it.
    by_request: HashMap<String, String>,
    circuits: Circuits,
}

/// The daemon's engine handle. Cheap to clone.
#[derive(Clone)]
pub struct DaemonEngine {
    engine: Engine,
    boot: Arc<str>,
    keys: Arc<Mutex<Keys>>,
    retained: usize,
}

/// Three quarters of the machine's memory (from /proc/meminfo), else 16 GiB.
fn default_host_budget() -> u64 {
    let total_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    });
    total_kib.map(|k| k * 1024 / 4 * 3).unwrap_or(16 << 30)
}

/// The engine configuration a daemon configuration asks for.
pub fn engine_config(
    config: &DaemonConfig,
    on_done: Arc<dyn Fn(&JobReport) + Send + Sync>,
) -> Result<EngineConfig> {
    let selectors = config
        .devices
        .gpus
        .iter()
        .map(|g| g.parse::<DeviceSelector>())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| DaemonError::Config {
            source_name: "devices.gpus".into(),
            reason: e.to_string(),
        })?;
    let devices = match (config.devices.backend, selectors.is_empty()) {
        (Backend::Cpu, _) => DeviceChoice::Cpu,
        (Backend::Auto, true) => DeviceChoice::Auto,
        (Backend::Auto | Backend::Gpu, _) => DeviceChoice::Gpus(selectors),
        (Backend::Dual, _) => DeviceChoice::Dual(selectors),
    };
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let l = &config.limits;
    let mut ec = EngineConfig::new(config.params.dir());
    ec.pce_dir = Some(config.params.pce_dir());
    ec.kernel_cache = config.devices.kernel_cache.clone();
    ec.devices = devices;
    ec.gpu_pipeline_depth = config.devices.pipeline_depth;
    ec.gpu_memory_limit = match config.devices.memory_limit.0 {
        0 => None,
        n => Some(n),
    };
    ec.gpu_stream_chunk = match config.devices.stream_chunk_points {
        0 => None,
        n => Some(n),
    };
    ec.synthesis_niceness = config.devices.synthesis_niceness;
    ec.synthesis_workers = match config.devices.synthesis_workers {
        0 => (cores / 2).max(1),
        n => n,
    };
    ec.host_memory_budget = match config.memory.host_budget.0 {
        0 => default_host_budget(),
        n => n,
    };
    ec.limits = Limits {
        max_attempts: l.max_attempts,
        max_waiting_partitions: l.max_outstanding_partitions,
        ..Limits::default()
    };
    ec.max_outstanding_partitions = l.max_outstanding_partitions;
    ec.job_timeout = l.job_timeout();
    ec.prove = ProveOptions {
        verify: l.verify_proofs,
        ..ProveOptions::default()
    };
    ec.priorities = ProofKind::ALL
        .iter()
        .map(|k| (*k, config.priorities.of(*k)))
        .collect();
    ec.retain_results = l.retained_results;
    ec.on_job_done = Some(Arc::new(move |r: &cuzk_actors::JobReport| {
        let WorkKind::Proof(kind) = r.kind else {
            return;
        };
        let (ending, message) = match &r.outcome {
            ReportOutcome::Completed => (Ending::Completed, None),
            ReportOutcome::Failed(f) => (Ending::Failed(f.cause), Some(f.message.clone())),
            ReportOutcome::Cancelled(_) => (Ending::Cancelled, None),
        };
        on_done(&JobReport {
            job: r.job,
            kind,
            ending,
            message,
            timings: PhaseTimes::from_engine(&r.timings),
        });
    }));
    Ok(ec)
}

fn device_name(id: &cuzk_actors::DeviceId) -> String {
    if id.is_cpu() {
        "cpu".into()
    } else {
        id.pci.to_string()
    }
}

fn boot_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let seed = format!("{nanos}-{}", std::process::id());
    blake3::hash(seed.as_bytes()).to_hex()[..8].to_string()
}

impl DaemonEngine {
    /// Starts the engine (devices, scheduler, synthesis pool).
    pub fn start(config: EngineConfig) -> Result<Self> {
        let retained = config.retain_results;
        let engine = Engine::start(config).map_err(|e| DaemonError::Engine(e.to_string()))?;
        for d in engine.devices() {
            tracing::info!(device = %device_name(&d.id), name = %d.name, ordinal = d.ordinal, "proving on");
        }
        Ok(DaemonEngine {
            engine,
            boot: boot_prefix().into(),
            keys: Arc::new(Mutex::new(Keys {
                by_request: HashMap::new(),
                circuits: Circuits::default(),
            })),
            retained,
        })
    }

    fn keys(&self) -> MutexGuard<'_, Keys> {
        // Updates are single map operations: a panic elsewhere leaves them consistent.
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The wire id of engine job `id`.
    pub fn job_name(&self, id: u64) -> String {
        format!("{}-{id}", self.boot)
    }

    /// The engine job a wire name stands for: a job id of this start (`<boot>-<n>`), else a
    /// request id, naming the newest job submitted under it.
    fn parse_job(&self, name: &str) -> Option<u64> {
        let own = |name: &str| {
            let (boot, n) = name.rsplit_once('-')?;
            (boot == &*self.boot).then(|| n.parse().ok()).flatten()
        };
        own(name).or_else(|| own(self.keys().by_request.get(name)?))
    }

    /// Validates `request` (the engine builds its circuits on this thread: it may take a
    /// second for a large PoRep, so call it off the async runtime) and queues it. Under a
    /// `request_id`, the same request attaches to its running or proved job and runs again
    /// after a failure or cancellation; a different request is a job of its own.
    pub fn submit(
        &self,
        request: ProofRequest,
        priority: Priority,
        request_id: Option<String>,
    ) -> std::result::Result<Submitted, SubmitError> {
        self.keys()
            .circuits
            .seen
            .insert((request.proof.kind, request.proof.sector_size));
        let opts = SubmitOptions {
            priority: Some(priority),
            request_id: request_id.clone(),
            timeout: None,
        };
        let s = self.engine.submit(&request, opts).map_err(|e| match e {
            cuzk_actors::Error::Engine(inner) => SubmitError::Invalid(strip(inner.to_string())),
            cuzk_actors::Error::Rejected(m) => SubmitError::Invalid(m),
            cuzk_actors::Error::Backpressure(_) => SubmitError::Backpressure(e.to_string()),
            cuzk_actors::Error::ShuttingDown | cuzk_actors::Error::Stopped => {
                SubmitError::ShuttingDown
            }
            other => SubmitError::Internal(other.to_string()),
        })?;
        let job = self.job_name(s.job);
        if let Some(rid) = request_id {
            let mut k = self.keys();
            // Bounded like the engine's own memory of finished jobs.
            if k.by_request.len() >= self.retained.max(1) * 2 {
                k.by_request.clear();
            }
            k.by_request.insert(rid, job.clone());
        }
        Ok(Submitted {
            job,
            existing: s.existing,
            queue_position: s.queue_position,
        })
    }

    /// Waits for `job` to end, at most `timeout` (`None`: until it ends).
    pub async fn wait(&self, job: &str, timeout: Option<Duration>) -> WaitOutcome {
        let Some(id) = self.parse_job(job) else {
            return WaitOutcome::Unknown;
        };
        match self.engine.wait_async(id, timeout).await {
            Ok(r) => WaitOutcome::Ended(JobEnd::Completed(Arc::new(done(&r)))),
            Err(cuzk_actors::Error::Timeout { .. }) => WaitOutcome::Timeout,
            Err(cuzk_actors::Error::UnknownJob(_)) => WaitOutcome::Unknown,
            Err(cuzk_actors::Error::Stopped) => WaitOutcome::Stopped,
            Err(cuzk_actors::Error::Cancelled { reason, .. }) => {
                WaitOutcome::Ended(JobEnd::Cancelled {
                    message: reason.unwrap_or_else(|| "cancelled by CancelProof".into()),
                })
            }
            Err(cuzk_actors::Error::JobFailed { reason, cause, .. }) => {
                WaitOutcome::Ended(JobEnd::Failed {
                    cause,
                    message: reason,
                })
            }
            // a wait answers only the errors above; anything else is the engine's own fault
            Err(other) => WaitOutcome::Ended(JobEnd::Failed {
                cause: FailureCause::Internal,
                message: other.to_string(),
            }),
        }
    }

    /// Cancels `job`: a pending job is dropped; a partition on a device finishes there and
    /// its result is discarded. Waiters are answered `CANCELLED` at once.
    pub async fn cancel(&self, job: &str) -> CancelOutcome {
        let Some(id) = self.parse_job(job) else {
            return CancelOutcome::Unknown;
        };
        let on_device = match self.engine.status_async().await {
            Ok(s) => s
                .devices
                .iter()
                .any(|d| d.current.as_ref().is_some_and(|c| c.0 == id)),
            Err(_) => false,
        } || self.engine.progress(id).is_some_and(|p| p.proved > 0);
        match self.engine.cancel_async(id).await {
            Ok(true) => CancelOutcome::Cancelled {
                was_running: on_device,
            },
            Ok(false) => CancelOutcome::AlreadyEnded,
            Err(_) => CancelOutcome::Unknown,
        }
    }

    /// A status snapshot (an empty one marked shutting down once the engine stopped).
    pub async fn status(&self) -> Snapshot {
        match self.engine.status_async().await {
            Ok(s) => self.snapshot(&s),
            Err(_) => Snapshot {
                shutting_down: true,
                ..Snapshot::default()
            },
        }
    }

    fn circuit_of(&self, identifier: &str) -> Option<RegisteredProof> {
        let mut k = self.keys();
        if let Some(p) = k.circuits.names.get(identifier) {
            return Some(*p);
        }
        let todo: Vec<_> = k
            .circuits
            .seen
            .difference(&k.circuits.resolved)
            .copied()
            .collect();
        for (kind, size) in todo {
            let proof = RegisteredProof::latest(kind, size);
            if let Ok(id) = crate::circuits::params_identifier(proof) {
                k.circuits.names.insert(id, proof);
            }
            k.circuits.resolved.insert((kind, size));
        }
        k.circuits.names.get(identifier).copied()
    }

    fn snapshot(&self, s: &EngineStatus) -> Snapshot {
        let devices = s
            .devices
            .iter()
            .map(|d| {
                let cpu = d.info.id.is_cpu();
                DeviceView {
                    ordinal: d.info.ordinal,
                    name: d.info.name.clone(),
                    pci: if cpu {
                        String::new()
                    } else {
                        d.info.id.pci.to_string()
                    },
                    uuid: if cpu {
                        String::new()
                    } else {
                        d.info.id.uuid_string()
                    },
                    vram_total: d.info.total_memory,
                    vram_free: if cpu {
                        0
                    } else {
                        d.usable_vram.saturating_sub(d.vram_leased)
                    },
                    vram_leased: d.vram_leased,
                    current: d.current.as_ref().and_then(|(job, kind, _)| match kind {
                        WorkKind::Proof(k) => Some((self.job_name(*job), *k)),
                        WorkKind::Simulated => None,
                    }),
                    quarantined: d.quarantined || d.down.is_some(),
                    busy: d.busy,
                    partitions_ok: d.partitions_ok,
                    partitions_failed: d.partitions_failed,
                    memory: d.memory,
                }
            })
            .collect();
        let queues = ProofKind::ALL
            .iter()
            .map(|kind| {
                let q = s.queues.iter().find(|q| q.kind == WorkKind::Proof(*kind));
                let (jobs, pending, running) =
                    q.map_or((0, 0, 0), |q| (q.jobs, q.pending, q.in_progress));
                // Jobs with a partition on a device: at most one per running partition.
                let in_progress = jobs.min(running);
                QueueView {
                    kind: *kind,
                    pending: clamp(jobs - in_progress),
                    in_progress: clamp(in_progress),
                    pending_partitions: clamp(pending),
                    in_progress_partitions: clamp(running),
                }
            })
            .collect();
        let srs = s
            .srs
            .iter()
            .map(|r| SrsView {
                proof: self.circuit_of(&r.identifier),
                identifier: r.identifier.clone(),
                size_bytes: r.size_bytes,
                users: clamp(r.users),
            })
            .collect();
        Snapshot {
            devices,
            srs,
            queues,
            completed: s.completed,
            failed: s.failed,
            cancelled: s.cancelled,
            uptime: s.uptime,
            shutting_down: s.draining,
            host_memory_used: s.host_memory_used,
            host_memory_budget: s.host_memory_budget,
            running: self.running(),
        }
    }

    fn running(&self) -> Vec<RunningJob> {
        let jobs = self.engine.running();
        let k = self.keys();
        jobs.into_iter()
            .filter_map(|(id, p)| {
                let WorkKind::Proof(kind) = p.kind else {
                    return None;
                };
                let job = self.job_name(id);
                let request_id = k
                    .by_request
                    .iter()
                    .find(|(_, j)| **j == job)
                    .map(|(r, _)| r.clone());
                Some(RunningJob {
                    job,
                    request_id,
                    kind,
                    partitions: p.partitions,
                    synthesized: p.synthesized,
                    proved: p.proved,
                })
            })
            .collect()
    }

    /// Loads `proof`'s parameters. Returns whether they were loaded already, the time it
    /// took and their size in host memory, bytes. Blocking.
    pub fn preload(
        &self,
        proof: RegisteredProof,
    ) -> std::result::Result<(bool, Duration, u64), cuzk_actors::Error> {
        self.keys()
            .circuits
            .seen
            .insert((proof.kind, proof.sector_size));
        let (already, took) = self.engine.preload_srs(proof)?;
        let id = crate::circuits::params_identifier(proof)?;
        let bytes = self
            .engine
            .store()
            .loaded()
            .iter()
            .find(|(i, _)| *i == id)
            .map_or(0, |(_, s)| s.memory_bytes());
        Ok((already, took, bytes))
    }

    /// Drops `proof`'s parameters. `Ok(None)`: they were not loaded; `Err(message)`: a job
    /// uses them (or another failure). Blocking.
    pub fn evict(
        &self,
        proof: RegisteredProof,
    ) -> std::result::Result<Option<u64>, (bool, String)> {
        self.engine.evict_srs(proof).map_err(|e| {
            let in_use = matches!(e, cuzk_actors::Error::InUse(..));
            (in_use, e.to_string())
        })
    }

    /// Stops accepting work, lets running work finish within `grace`, cancels the rest,
    /// answers every waiter and stops the engine. Blocking.
    pub fn shutdown(&self, grace: Duration) {
        if let Err(e) = self.engine.shutdown(grace) {
            tracing::warn!(error = %e, "engine shutdown reported an error");
        }
    }
}

fn clamp(n: usize) -> u32 {
    n.min(u32::MAX as usize) as u32
}

/// The engine's errors read "invalid request: ..."; the gRPC status says that already.
fn strip(s: String) -> String {
    s.strip_prefix("invalid request: ")
        .map(str::to_string)
        .unwrap_or(s)
}

fn done(r: &JobResult) -> Done {
    Done {
        proof: r.proof.clone(),
        partitions: r.partitions,
        verified: r.verified,
        timings: PhaseTimes::from_engine(&r.timings),
        devices: r.devices.iter().map(device_name).collect(),
    }
}
