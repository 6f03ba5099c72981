//! The crate's error type.

use crate::failure::FailureCause;
use crate::identity::DeviceId;

/// Errors of device resolution and leasing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration names a device that is not present.
    #[error("no device matches {0} (present: {1})")]
    NoSuchDevice(String, String),
    /// The configuration names one physical device twice (perhaps by ordinal and by PCI id).
    #[error("device {0} is selected twice ({1} and {2}); each physical device may appear once")]
    DuplicateDevice(DeviceId, String, String),
    /// A selector could not be parsed.
    #[error("cannot parse device selector {0:?}: {1}")]
    BadSelector(String, String),
    /// A lease names a device the table does not hold.
    #[error("device {0} is not in the lease table")]
    UnknownDevice(DeviceId),
    /// The device already runs a GPU phase.
    #[error("device {0} is busy (lease {1} active)")]
    Busy(DeviceId, u64),
    /// The reservation does not fit the device's free memory.
    #[error("device {device}: {want} bytes requested, {free} of {total} free")]
    NoVram {
        /// The device.
        device: DeviceId,
        /// Bytes asked for.
        want: u64,
        /// Bytes free now.
        free: u64,
        /// Usable bytes in all.
        total: u64,
    },
    /// The lease is not (or no longer) active.
    #[error("lease {0} is not active")]
    NoSuchLease(u64),
    /// Too much work is waiting; submit again later.
    #[error("too busy: {0} partitions are waiting; submit again later")]
    Backpressure(usize),
    /// The job cannot be accepted.
    #[error("job rejected: {0}")]
    Rejected(String),
    /// The request is invalid or its inputs cannot be used (from the engine, with context).
    #[error(transparent)]
    Engine(#[from] cuzk_engine::Error),
    /// The engine is shutting down and accepts no new work.
    #[error("the engine is shutting down and accepts no new work")]
    ShuttingDown,
    /// The engine's threads have stopped (after shutdown, or a fatal error).
    #[error("the engine has stopped")]
    Stopped,
    /// No job with this id is known (never submitted, or its result was already dropped).
    #[error("no job {0} is known to this engine")]
    UnknownJob(u64),
    /// The job did not finish within the wait's timeout; it keeps running.
    #[error("job {job} not finished after {waited:?}; it keeps running")]
    Timeout {
        /// The job.
        job: u64,
        /// How long the caller waited.
        waited: std::time::Duration,
    },
    /// The job ended with an error.
    #[error("job {job} failed ({cause}): {reason}")]
    JobFailed {
        /// The job.
        job: u64,
        /// The class of failure, decided where it happened.
        cause: FailureCause,
        /// What happened.
        reason: String,
    },
    /// The job was cancelled.
    #[error("job {job} was cancelled{}", reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
    Cancelled {
        /// The job.
        job: u64,
        /// Why, when not by a caller's request (e.g. shutdown).
        reason: Option<String>,
    },
    /// A resource is in use and cannot be released now.
    #[error("{0} is in use: {1}")]
    InUse(String, String),
    /// The engine's synthesis threads could not be started (the OS refused new threads).
    #[error("cannot start the synthesis threads: {0}")]
    SynthesisPool(String),
    /// No device can run work (none found, or the configured ones failed to open).
    #[error("no usable device: {0}")]
    NoDevice(String),
    /// A device failed in a way that ends it (open failed, lost).
    #[error("device {device}: {reason}")]
    Device {
        /// The device, as PCI address (or `cpu`).
        device: String,
        /// What happened.
        reason: String,
    },
    /// Writing the trace file failed.
    #[error("cannot write trace {path}: {source}")]
    Trace {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
