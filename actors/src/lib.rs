//! cuzk's runtime: where and when partitions run, and who may touch a GPU.
//!
//! Exclusivity comes from ownership: a GPU is named by what it physically is (PCI address
//! and UUID, never an ordinal or an environment variable), and a partition reaches a device
//! only through a lease in the [`lease::LeaseTable`], which is keyed by that identity and
//! owned by the scheduler alone.
//!
//! | module | holds |
//! |---|---|
//! | [`device`] | physical device identity, configuration selectors, resolution |
//! | [`lease`] | the lease table: one GPU phase per device, VRAM reservations |
//! | [`scheduler`] | the scheduler's state machine: priorities, retries, quarantine, timeouts |
//! | [`error`] | the crate's error type |
//!
//! The actix actors (scheduler, synthesis, one per GPU), mock devices and the `Engine`
//! handle build on these (issue 4, in progress).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod device;
pub mod error;
pub mod lease;
pub mod scheduler;

pub use device::{DeviceId, DeviceInfo, DeviceSelector, PciAddress};
pub use error::{Error, Result};
pub use lease::{Lease, LeaseId, LeaseTable};
pub use scheduler::{JobOutcome, JobSpec, Limits, Priority, SchedulerCore};
