//! cuzk's runtime: where and when partitions run, and who may touch a GPU.
//!
//! Exclusivity comes from ownership: a GPU is named by what it physically is (PCI address
//! and UUID, never an ordinal or an environment variable); one device actor per physical
//! device, alone on its own OS thread, is the only code that reaches it; and a partition
//! reaches a device only through a lease granted by the scheduler actor, which alone owns
//! the [`lease::LeaseTable`] keyed by that identity. There is no `Mutex` between a lease and
//! a device, and cuzk never sets `CUDA_VISIBLE_DEVICES`.
//!
//! | module | holds |
//! |---|---|
//! | [`engine`] | the [`Engine`] handle users embed |
//! | [`config`] | how an engine is set up, and the options of a submission |
//! | [`report`] | what an engine reports: results, job reports, progress, status |
//! | [`identity`] | what a device physically is: PCI address and UUID |
//! | [`device`] | devices as discovered, configuration selectors, resolution |
//! | [`driver`] | device drivers: discovery, opening on the device thread, proving (CPU, CUDA, dual) |
//! | [`mock`] | mock devices for simulation tests, recording every interval they run |
//! | [`lease`] | the lease table: one GPU phase per device, VRAM reservations |
//! | [`job`] | what names and ranks a job: id, kind, priority class |
//! | [`policy`] | the scheduling policy: priority order, host-memory budget, leases, retries, quarantine, timeouts |
//! | [`work`] | what travels to a device; simulated jobs |
//! | [`trace`] | Chrome/Perfetto trace files, one track per device |
//! | [`failure`] | why a job failed (a cause decided where it happened, carried to every reader), why a device attempt did |
//! | [`error`] | the crate's error type |
//!
//! The actix actors themselves (scheduler, synthesis pool, device actors) are private to
//! the crate: the [`Engine`] is their only door.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod device;
pub mod driver;
pub mod engine;
pub mod error;
pub mod failure;
pub mod identity;
pub mod job;
pub mod lease;
pub mod mock;
pub mod policy;
pub mod report;
mod runtime;
pub mod trace;
pub mod work;

/// The scheduling policy under its earlier name: [`policy`].
pub use policy as scheduler;

pub use config::{
    DeviceChoice, EngineConfig, SubmitOptions, DEFAULT_SYNTHESIS_NICENESS, MAX_SYNTHESIS_NICENESS,
};
pub use device::{DeviceInfo, DeviceSelector};
pub use driver::{DeviceDriver, DeviceWorker};
pub use engine::{cuda_driver, dual_driver, Engine};
pub use error::{Error, Result};
pub use failure::{DeviceFault, Failure, FailureCause};
pub use identity::{DeviceId, PciAddress};
pub use job::{JobId, Priority, WorkKind};
pub use lease::{Lease, LeaseId, LeaseTable, SharedVram};
pub use mock::{Interval, MockDevice, MockDriver, MockRecorder};
pub use policy::{JobOutcome, JobSpec, Limits, SchedulerCore, SynthesisQueue};
pub use report::{
    DeviceLive, DeviceStatus, EngineStatus, JobHook, JobProgress, JobReport, JobResult, JobTimings,
    QueueStatus, ReportOutcome, SrsStatus, Submitted,
};
pub use work::SimulatedJob;
