//! What the engine reports: a submission's acceptance, a finished job's result and report,
//! a running job's progress, and status snapshots of the whole engine and each device.

use std::sync::Arc;
use std::time::Duration;

use crate::device::DeviceInfo;
use crate::failure::Failure;
use crate::identity::DeviceId;
use crate::job::{JobId, WorkKind};

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
    Failed(Failure),
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

/// Live counters of one device, written by its actor, read by status without a round trip.
#[derive(Clone, Debug, Default)]
pub struct DeviceLive {
    /// Time spent proving.
    pub busy: Duration,
    /// Partitions proved (and verified, for real ones).
    pub partitions_ok: u64,
    /// Attempts that failed.
    pub partitions_failed: u64,
    /// The partition running now: (job, partition).
    pub current: Option<(JobId, usize)>,
    /// The device backend's account after its last partition: resident or streamed
    /// parameters, bytes streamed, measured peak of device memory.
    pub memory: Option<cuzk_engine::MemoryReport>,
}

/// Progress of one job, written by the scheduler, read by callers without a round trip.
#[derive(Clone, Debug)]
pub struct JobProgress {
    /// What the job is.
    pub kind: WorkKind,
    /// Partitions in all.
    pub partitions: usize,
    /// Partitions synthesised so far (attempts, including re-synthesis after a failure).
    pub synthesized: usize,
    /// Partitions proved.
    pub proved: usize,
}
