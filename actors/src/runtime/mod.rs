//! The actix actors: the scheduler (owns the lease table), the synthesis pool, and one
//! device actor per physical device on its own OS thread. Their messages are here; the
//! public handle is [`crate::Engine`].
//!
//! Ownership, not locks: the scheduler actor alone grants leases; a device actor alone
//! touches its device, and only for a lease it was sent; nothing else can reach a device.

pub(crate) mod device;
pub(crate) mod scheduler;
pub(crate) mod synthesis;

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, Context, Handler, Message, Recipient};
use blstrs::Scalar;
use cuzk_engine::aggregate::Aggregation;
use cuzk_engine::circuits::PartitionCircuit;
use cuzk_engine::pce::R1cs;
use cuzk_engine::{RegisteredProof, Srs};
use dashmap::DashMap;
use futures::channel::oneshot;

use crate::error::Result;
use crate::failure::{DeviceFault, Failure};
use crate::identity::DeviceId;
use crate::job::{JobId, Priority, WorkKind};
use crate::lease::{Lease, LeaseId};
use crate::report::{DeviceLive, EngineStatus, JobProgress, JobResult, Submitted};
use crate::work::{PartitionWork, Payload, SimulatedJob};

/// State shared between the handle and the actors: concurrent maps of counters only; no
/// decision is taken from them.
#[derive(Default)]
pub(crate) struct Shared {
    pub devices: DashMap<DeviceId, DeviceLive>,
    pub jobs: DashMap<JobId, JobProgress>,
}

/// A job as the scheduler receives it.
pub(crate) enum JobInput {
    Proof {
        proof: RegisteredProof,
        params_identifier: String,
        shape_identity: String,
        circuits: Vec<Box<dyn PartitionCircuit>>,
        public_inputs: Vec<Vec<Scalar>>,
        blank: Box<dyn PartitionCircuit>,
        aggregation: Option<Aggregation>,
    },
    Simulated(SimulatedJob),
}

impl JobInput {
    pub fn partitions(&self) -> usize {
        match self {
            JobInput::Proof { circuits, .. } => circuits.len(),
            JobInput::Simulated(s) => s.partitions,
        }
    }
}

/// Handle -> scheduler: a new job.
pub(crate) struct Submit {
    pub input: JobInput,
    pub kind: WorkKind,
    pub priority: Priority,
    /// The caller's request id with a digest of what the request asks for.
    pub request_key: Option<RequestKey>,
    pub timeout: Option<Duration>,
}
impl Message for Submit {
    type Result = Result<Submitted>;
}

/// A caller's request id and a digest of the request's content: a job is found again only
/// by both, so one id may name several requests (Curio reuses an id for every partition of a
/// WindowPoSt deadline), each its own job.
pub(crate) type RequestKey = (String, [u8; 32]);

/// Aggregation thread -> scheduler: the aggregate of a job's partition proofs (or why there
/// is none).
pub(crate) struct Aggregated {
    pub job: JobId,
    pub result: cuzk_engine::Result<Vec<u8>>,
}
impl Message for Aggregated {
    type Result = ();
}

/// Handle -> scheduler: answer `reply` when the job ends or `timeout` passes.
pub(crate) struct Await {
    pub job: JobId,
    pub timeout: Option<Duration>,
    pub reply: oneshot::Sender<Result<JobResult>>,
}
impl Message for Await {
    type Result = ();
}

/// Handle -> scheduler: cancel a job. Answers whether it was running.
pub(crate) struct Cancel(pub JobId);
impl Message for Cancel {
    type Result = Result<bool>;
}

/// Handle -> scheduler: a status snapshot.
pub(crate) struct GetStatus;
impl Message for GetStatus {
    type Result = EngineStatus;
}

/// Handle -> scheduler: stop accepting, finish within `grace` or cancel, answer everyone.
pub(crate) struct Shutdown {
    pub grace: Duration,
    pub reply: oneshot::Sender<()>,
}
impl Message for Shutdown {
    type Result = ();
}

/// Scheduler -> synthesis: load a job's parameters and constraint recording.
pub(crate) struct Prepare {
    pub job: JobId,
    pub proof: RegisteredProof,
    pub params_identifier: String,
    pub shape_identity: String,
    pub blank: Box<dyn PartitionCircuit>,
    pub pce: bool,
    /// The job's span: loading its parameters is part of it.
    pub span: tracing::Span,
}
impl Message for Prepare {
    type Result = ();
}

/// A job's loaded parameters, its constraint recording (PCE), and the load time.
pub(crate) type PreparedParts = (Arc<Srs>, Option<Arc<R1cs>>, Duration);

/// Synthesis -> scheduler: a job's parameters are loaded (or not).
pub(crate) struct Prepared {
    pub job: JobId,
    pub result: std::result::Result<PreparedParts, Failure>,
}
impl Message for Prepared {
    type Result = ();
}

/// What synthesis of one partition needs.
pub(crate) enum SynthInput {
    Proof {
        circuit: Box<dyn PartitionCircuit>,
        srs: Arc<Srs>,
        r1cs: Option<Arc<R1cs>>,
        public_inputs: Vec<Scalar>,
        randomness: cuzk_engine::Randomness,
    },
    Simulated {
        time: Duration,
        gpu_time: Duration,
        panic: bool,
    },
}

/// Scheduler -> synthesis: build one partition's input.
pub(crate) struct Synthesize {
    pub job: JobId,
    pub partition: usize,
    pub input: SynthInput,
    /// Nothing else is being synthesised: the witness may use several threads.
    pub parallel: bool,
    /// The partition's span (a child of the job's).
    pub span: tracing::Span,
}
impl Message for Synthesize {
    type Result = ();
}

/// Synthesis -> scheduler: one partition's input (or why not).
pub(crate) struct Synthesized {
    pub job: JobId,
    pub partition: usize,
    pub result: std::result::Result<Payload, Failure>,
    pub took: Duration,
}
impl Message for Synthesized {
    type Result = ();
}

/// Device -> scheduler: the device has room for one more partition.
pub(crate) struct Pull(pub DeviceId);
impl Message for Pull {
    type Result = ();
}

/// Device -> scheduler: the device starts proving this lease (its timeout counts from now).
pub(crate) struct Began(pub LeaseId);
impl Message for Began {
    type Result = ();
}

/// Scheduler -> device: a `Pull` of the device has been handled. Sent once per `Pull`, after
/// the `Run` it was granted, if any (messages from the scheduler to a device arrive in the
/// order sent), so a device that sees it holds every lease that `Pull` brought. A `Pull` that
/// got no lease still stands: its lease comes with a later `Run` when work does.
pub(crate) struct PullHandled;
impl Message for PullHandled {
    type Result = ();
}

/// Scheduler -> device: run this leased partition.
pub(crate) struct Run {
    pub lease: Lease,
    pub work: PartitionWork,
}
impl Message for Run {
    type Result = ();
}

/// Scheduler -> device: the result of this lease would be discarded (its job ended, or the
/// lease was revoked). A device that holds it queued, not started, drops it and answers
/// `Withdrawn`; one that has started or finished it (or never had it) ignores this.
pub(crate) struct Withdraw(pub LeaseId);
impl Message for Withdraw {
    type Result = ();
}

/// Device -> scheduler: the device dropped this queued lease without proving it.
pub(crate) struct Withdrawn {
    pub lease: LeaseId,
    pub job: JobId,
}
impl Message for Withdrawn {
    type Result = ();
}

/// Device -> scheduler: the device has finished its part of this lease; the proof is being
/// verified on the host, and its outcome comes with `Done`. Sent before the device's next
/// `Pull` (messages from one thread arrive in the order sent), so that `Pull` finds the
/// device's lease slot and VRAM free.
pub(crate) struct LeftDevice {
    pub device: DeviceId,
    pub lease: LeaseId,
}
impl Message for LeftDevice {
    type Result = ();
}

/// Device (or its verification threads) -> scheduler: a lease's outcome.
pub(crate) struct Done {
    pub device: DeviceId,
    pub lease: LeaseId,
    pub job: JobId,
    pub partition: usize,
    pub result: std::result::Result<Vec<u8>, DeviceFault>,
    pub took: Duration,
}
impl Message for Done {
    type Result = ();
}

/// Device -> scheduler: the device could not be opened, or is gone.
pub(crate) struct DeviceDown {
    pub device: DeviceId,
    pub reason: String,
}
impl Message for DeviceDown {
    type Result = ();
}

/// Scheduler -> device: a circuit's parameters are loaded; get them ready on the device
/// (see [`crate::driver::DeviceWorker::preload`]) before its first partition there.
pub(crate) struct Preload(pub Arc<Srs>);
impl Message for Preload {
    type Result = ();
}

/// Handle -> scheduler: parameters were loaded outside a job (`Engine::preload_srs`); ask
/// every device to get them ready.
pub(crate) struct PreloadDevices(pub Arc<Srs>);
impl Message for PreloadDevices {
    type Result = ();
}

/// Scheduler -> device: stop the device's thread.
pub(crate) struct StopDevice;
impl Message for StopDevice {
    type Result = ();
}

/// The scheduler as the actors it starts reach it: one recipient per message they send it,
/// all into the scheduler's one mailbox, so the messages of one sender arrive in the order
/// sent. Device and synthesis actors hold this rather than the scheduler's address.
#[derive(Clone)]
pub(crate) struct SchedulerInbox {
    pub pull: Recipient<Pull>,
    pub began: Recipient<Began>,
    pub left_device: Recipient<LeftDevice>,
    pub done: Recipient<Done>,
    pub withdrawn: Recipient<Withdrawn>,
    pub device_down: Recipient<DeviceDown>,
    pub prepared: Recipient<Prepared>,
    pub synthesized: Recipient<Synthesized>,
}

impl SchedulerInbox {
    /// The inbox of the scheduler at `addr`.
    pub fn of<S>(addr: &Addr<S>) -> Self
    where
        S: Actor<Context = Context<S>>
            + Handler<Pull>
            + Handler<Began>
            + Handler<LeftDevice>
            + Handler<Done>
            + Handler<Withdrawn>
            + Handler<DeviceDown>
            + Handler<Prepared>
            + Handler<Synthesized>,
    {
        SchedulerInbox {
            pull: addr.clone().recipient(),
            began: addr.clone().recipient(),
            left_device: addr.clone().recipient(),
            done: addr.clone().recipient(),
            withdrawn: addr.clone().recipient(),
            device_down: addr.clone().recipient(),
            prepared: addr.clone().recipient(),
            synthesized: addr.clone().recipient(),
        }
    }
}
