//! The crate's error type.

use crate::device::DeviceId;

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
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
