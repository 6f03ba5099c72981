//! The device actor: one per physical device, alone on its own named OS thread, the only code
//! that can reach its device. It opens the device on that thread (a CUDA context is bound
//! there), pulls leases from the scheduler when it has room, proves, and hands each proof to
//! its verification threads, which verify it and report it while the device goes on.
//!
//! Pipelining: a device whose driver allows a depth of 2 holds up to two leases. It proves
//! them one at a time, in the order granted, and names the second to its worker while the
//! first runs, so a GPU uploads the next partition during the current one's kernels. Before
//! it starts a partition with no second one in hand it waits for the scheduler's answer to
//! its outstanding `Pull` (`PullHandled`, which comes after any `Run` that `Pull` brought),
//! so the overlap does not depend on message timing. Proving itself never overlaps: one
//! attempt at a time, on this thread.
//!
//! Batches: where the worker proves several partitions of a circuit best together
//! ([`DeviceWorker::batch_limit`]: a GPU streaming the circuit's parameters), the actor asks
//! for that many leases once it is sent one of the circuit's (past its pipeline depth: the
//! lease table lets a device hold a batch of one circuit, [`crate::SharedVram::batch`]),
//! waits for the answers to its outstanding pulls, then hands every lease it holds of that
//! circuit, up to the limit, to one [`DeviceWorker::prove_batch`], and reports each
//! partition as it would alone. A batch holds what was granted by then: partitions
//! synthesized later make the next one.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use actix::{Actor, Addr, AsyncContext, Context, Handler, Message, System};
use bellperson::groth16::{verify_proof, Proof};
use blstrs::{Bls12, Scalar};
use cuzk_engine::Srs;
use tracing::{debug, info_span, warn};

use super::{
    Began, DeviceDown, Done, LeftDevice, Preload, Pull, PullHandled, Run, SchedulerInbox, Shared,
    StopDevice, Withdraw, Withdrawn,
};
use crate::device::DeviceInfo;
use crate::driver::{DeviceDriver, DeviceWorker, Proved};
use crate::error::{Error, Result};
use crate::failure::DeviceFault;
use crate::trace::TraceSink;
use crate::work::{simulated_token, Payload};

pub(crate) struct DeviceActor {
    info: DeviceInfo,
    track: String,
    driver: Arc<dyn DeviceDriver>,
    worker: Option<Box<dyn DeviceWorker>>,
    scheduler: SchedulerInbox,
    shared: Arc<Shared>,
    trace: TraceSink,
    verify: bool,
    /// Threads of this device's own that verify, encode and report its proofs while it
    /// proves the next partition (bellperson's verifier spawns rayon tasks: on the global
    /// pool they would queue behind synthesis work). `None` when the engine does not verify,
    /// or the pool could not be started: proofs are then checked on the device's thread.
    verifier: Option<rayon::ThreadPool>,
    lost: bool,
    /// Leases the device asks to hold at once: the driver's pipeline depth, raised to the
    /// batch limit of the circuits it has been sent (a streamed circuit's partitions are
    /// proved as one batch; the lease table lets a device hold that many of one circuit).
    want: usize,
    /// Leases granted and not yet proved, in the order granted.
    queue: VecDeque<Run>,
    /// Pulls sent that the scheduler has not acknowledged (`PullHandled`) yet. A `Run` does
    /// not count: it may answer an earlier `Pull` that got no lease when it was handled.
    unanswered: usize,
    /// A `Process` message is on its way to this actor.
    process_queued: bool,
}

/// Threads of a device's verification pool: the verifier's two Miller loops and the
/// public inputs' multi-scalar product run at once.
const VERIFY_THREADS: usize = 3;

/// Device actor -> itself: prove the first queued partition (sent to itself, so that answers
/// already in the mailbox are taken in first).
struct Process;
impl Message for Process {
    type Result = ();
}

impl DeviceActor {
    /// Starts the actor for `info` on a new OS thread named after the device, and returns its
    /// address once the thread's actor system runs.
    pub(crate) fn spawn(
        info: DeviceInfo,
        driver: Arc<dyn DeviceDriver>,
        scheduler: SchedulerInbox,
        shared: Arc<Shared>,
        trace: TraceSink,
        verify: bool,
    ) -> Result<Addr<DeviceActor>> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let track = if info.id.is_cpu() {
            "cpu".to_string()
        } else {
            format!("gpu {}", info.id)
        };
        let name = format!("cuzk-dev-{}", info.id);
        let device = info.id.to_string();
        std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                let sys = System::new();
                sys.block_on(async move {
                    let addr = DeviceActor {
                        info,
                        track,
                        driver,
                        worker: None,
                        scheduler,
                        shared,
                        trace,
                        verify,
                        verifier: None,
                        lost: false,
                        want: 1,
                        queue: VecDeque::new(),
                        unanswered: 0,
                        process_queued: false,
                    }
                    .start();
                    let _ = tx.send(addr);
                });
                if let Err(e) = sys.run() {
                    warn!(error = %e, "device actor system ended with an error");
                }
            })
            .map_err(|e| Error::Device {
                device: device.clone(),
                reason: format!("cannot start its thread: {e}"),
            })?;
        rx.recv().map_err(|_| Error::Device {
            device,
            reason: "its thread ended before its actor started".into(),
        })
    }

    /// Sends one `Pull`.
    fn pull(&mut self) {
        self.unanswered += 1;
        self.scheduler.pull.do_send(Pull(self.info.id));
    }

    /// Queues a `Process` unless one is queued already or there is nothing to prove.
    fn schedule(&mut self, ctx: &mut Context<Self>) {
        if !self.process_queued && !self.queue.is_empty() {
            self.process_queued = true;
            ctx.notify(Process);
        }
    }

    /// The device's part of one attempt: proving. A proof to verify comes back as
    /// [`Attempt::Check`]; everything else is the attempt's outcome.
    fn attempt(&mut self, run: Run, next: Option<&crate::work::PartitionWork>) -> Attempt {
        let Some(worker) = self.worker.as_mut() else {
            return Attempt::Finished(Err(DeviceFault::Lost("device is not open".into())));
        };
        let (job, partition) = (run.work.job, run.work.partition);
        let check = match &run.work.payload {
            Payload::Proof {
                srs, public_inputs, ..
            } => Some((srs.clone(), public_inputs.clone())),
            Payload::Simulated { .. } => None,
        };
        let proved = catch_unwind(AssertUnwindSafe(|| worker.prove(run.work, next)))
            .unwrap_or_else(|p| Err(panicked(p)));
        let span = tracing::Span::current();
        self.to_attempt(proved, (job, partition), check, span)
    }

    /// The device's part of a batch's attempts ([`DeviceWorker::prove_batch`]): one a run,
    /// in order, each checked under its own span.
    fn attempt_batch(&mut self, runs: Vec<Run>, spans: &[tracing::Span]) -> Vec<Attempt> {
        let k = runs.len();
        let keys: Vec<_> = runs
            .iter()
            .map(|run| {
                let check = match &run.work.payload {
                    Payload::Proof {
                        srs, public_inputs, ..
                    } => Some((srs.clone(), public_inputs.clone())),
                    Payload::Simulated { .. } => None,
                };
                ((run.work.job, run.work.partition), check)
            })
            .collect();
        let all = |f: DeviceFault| (0..k).map(|_| Err(f.clone())).collect::<Vec<_>>();
        let results = if self.lost {
            all(DeviceFault::Lost("device was lost earlier".into()))
        } else {
            match self.worker.as_mut() {
                None => all(DeviceFault::Lost("device is not open".into())),
                Some(worker) => {
                    let works = runs.into_iter().map(|r| r.work).collect();
                    match catch_unwind(AssertUnwindSafe(|| worker.prove_batch(works))) {
                        Ok(v) if v.len() == k => v,
                        Ok(v) => all(DeviceFault::WrongAnswer(format!(
                            "{} results for a batch of {k}",
                            v.len()
                        ))),
                        Err(p) => all(panicked(p)),
                    }
                }
            }
        };
        results
            .into_iter()
            .zip(keys)
            .zip(spans)
            .map(|((proved, (id, check)), span)| self.to_attempt(proved, id, check, span.clone()))
            .collect()
    }

    /// What the device's answer for partition `partition` of `job` leaves to do: its check
    /// (a proof of real work, to verify under `span`), or its outcome.
    fn to_attempt(
        &self,
        proved: std::result::Result<Proved, DeviceFault>,
        (job, partition): (u64, usize),
        check: Option<(Arc<Srs>, Vec<Scalar>)>,
        span: tracing::Span,
    ) -> Attempt {
        let proved = match proved {
            Ok(p) => p,
            Err(fault) => return Attempt::Finished(Err(fault)),
        };
        match (proved, check) {
            (Proved::Groth16(proof), Some((srs, inputs))) => {
                let check = Check {
                    device: self.info.id,
                    job,
                    partition,
                    proof,
                    srs,
                    inputs,
                    verify: self.verify,
                    span,
                };
                Attempt::Check(Box::new(check))
            }
            (Proved::Simulated, None) => Attempt::Finished(Ok(simulated_token(job, partition))),
            _ => Attempt::Finished(Err(DeviceFault::WrongAnswer(
                "the device answered a different kind of work than it was given".into(),
            ))),
        }
    }
}

/// A worker's panic as a failed attempt.
fn panicked(p: Box<dyn std::any::Any + Send>) -> DeviceFault {
    let msg = p
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into());
    DeviceFault::Failed(format!("panicked: {msg}"))
}

/// What the device's part of an attempt produced.
enum Attempt {
    /// The attempt's outcome, ready to report.
    Finished(std::result::Result<Vec<u8>, DeviceFault>),
    /// A proof still to be verified and encoded, which needs the host only.
    Check(Box<Check>),
}

/// A partition proof on its way from the device to the scheduler: verified (when the engine
/// verifies) and encoded on the host, beside the device's next partition.
struct Check {
    device: crate::identity::DeviceId,
    job: u64,
    partition: usize,
    proof: Proof<Bls12>,
    srs: Arc<Srs>,
    inputs: Vec<Scalar>,
    verify: bool,
    /// The partition's device span, so that the check on another thread nests under it.
    span: tracing::Span,
}

impl Check {
    /// [`Check::run`], with a panic turned into a failed attempt: on a verification thread an
    /// unhandled panic would abort the process (rayon's rule for spawned work).
    fn run_guarded(self) -> std::result::Result<Vec<u8>, DeviceFault> {
        let (job, partition) = (self.job, self.partition);
        catch_unwind(AssertUnwindSafe(|| self.run())).unwrap_or_else(|_| {
            Err(DeviceFault::Failed(format!(
                "verifying partition {partition} of job {job} panicked"
            )))
        })
    }

    /// Verifies (when asked) and encodes the proof: the attempt's outcome. A proof that does
    /// not verify is never passed on.
    fn run(self) -> std::result::Result<Vec<u8>, DeviceFault> {
        let Check {
            device,
            job,
            partition,
            proof,
            srs,
            inputs,
            verify,
            span,
        } = self;
        if verify {
            let ok = info_span!(parent: &span, "verify", device = %device, job, partition)
                .in_scope(|| verify_proof(&srs.pvk, &proof, &inputs));
            if !matches!(ok, Ok(true)) {
                return Err(DeviceFault::Unverified(format!(
                    "partition {partition} of job {job} proved on {device}"
                )));
            }
        }
        let mut bytes = Vec::with_capacity(192);
        proof
            .write(&mut bytes)
            .map_err(|e| DeviceFault::Failed(format!("cannot encode proof: {e}")))?;
        Ok(bytes)
    }
}

impl Actor for DeviceActor {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        let _span = info_span!("device_open", device = %self.info.id).entered();
        let driver = self.driver.clone();
        match catch_unwind(AssertUnwindSafe(|| driver.open(&self.info))) {
            Ok(Ok(worker)) => {
                self.worker = Some(worker);
                if self.verify {
                    let name = format!("cuzk-verify-{}", self.info.id);
                    self.verifier = rayon::ThreadPoolBuilder::new()
                        .num_threads(VERIFY_THREADS)
                        .thread_name(move |i| format!("{name}-{i}"))
                        .build()
                        .map_err(|e| {
                            warn!(device = %self.info.id, error = %e,
                                "no verification threads of its own: verifying on the shared pool")
                        })
                        .ok();
                }
                self.want = self.driver.pipeline_depth(&self.info).max(1);
                for _ in 0..self.want {
                    self.pull();
                }
            }
            Ok(Err(e)) => {
                self.lost = true;
                self.scheduler.device_down.do_send(DeviceDown {
                    device: self.info.id,
                    reason: e.to_string(),
                });
            }
            Err(_) => {
                self.lost = true;
                self.scheduler.device_down.do_send(DeviceDown {
                    device: self.info.id,
                    reason: "panicked while opening".into(),
                });
            }
        }
    }
}

impl Handler<Run> for DeviceActor {
    type Result = ();

    fn handle(&mut self, run: Run, ctx: &mut Self::Context) {
        // a circuit proved in batches: ask for as many of its leases as a batch holds
        let limit = self.batch_limit(&run);
        while self.want < limit && !self.lost {
            self.want += 1;
            self.pull();
        }
        self.queue.push_back(run);
        self.schedule(ctx);
    }
}

impl Handler<PullHandled> for DeviceActor {
    type Result = ();

    fn handle(&mut self, _msg: PullHandled, ctx: &mut Self::Context) {
        self.unanswered = self.unanswered.saturating_sub(1);
        self.schedule(ctx);
    }
}

impl Handler<Withdraw> for DeviceActor {
    type Result = ();

    /// Drops a queued lease whose result would be discarded, so the device spends no time on
    /// it, and asks for another lease in its place. A lease being proved is not in the queue
    /// (this actor handles no message while it proves), so nothing started is touched. When it
    /// was named to the worker as the next partition, whatever the worker prepared for it is
    /// stale and is dropped when the worker's next partition turns out to be another one.
    fn handle(&mut self, msg: Withdraw, ctx: &mut Self::Context) {
        let Some(i) = self.queue.iter().position(|r| r.lease.id == msg.0) else {
            return;
        };
        let Some(run) = self.queue.remove(i) else {
            return;
        };
        let (job, partition) = (run.work.job, run.work.partition);
        debug!(device = %self.info.id, job, partition, "queued lease withdrawn; not proved");
        self.scheduler
            .withdrawn
            .do_send(Withdrawn { lease: msg.0, job });
        if !self.lost {
            self.pull();
        }
        self.schedule(ctx);
    }
}

impl Handler<Process> for DeviceActor {
    type Result = ();

    fn handle(&mut self, _msg: Process, ctx: &mut Self::Context) {
        self.process_queued = false;
        if self.want > 1 && self.queue.len() < self.want && self.unanswered > 0 && !self.lost {
            return; // the answer to an outstanding Pull schedules us again
        }
        let Some(run) = self.queue.pop_front() else {
            return;
        };
        let mut batch = self.batch_with(run);
        match batch.len() {
            1 => {
                if let Some(run) = batch.pop() {
                    self.run(run);
                }
            }
            _ => self.run_batch(batch),
        }
        self.schedule(ctx);
    }
}

impl DeviceActor {
    /// Proves one leased partition (naming the next queued one to the worker), reports it,
    /// and asks for another lease.
    ///
    /// A proof to verify leaves the device before it is checked: the scheduler learns at once
    /// that the device is free (`LeftDevice`, which frees its lease slot and VRAM while the
    /// result stays pending), the device asks for its next lease, and the proof is verified
    /// and encoded on this device's verification threads, which report it (`Done`). The next
    /// partition's kernels do not wait for the host's checks, and the lease table has room to
    /// grant the partition after next in time to upload it ahead. Without verification
    /// threads the check runs here, before the report, as it must be reported either way.
    fn run(&mut self, run: Run) {
        let span = self.gpu_span(&run);
        let _g = span.enter();
        let meta = self.begin(&run);
        let t0 = Instant::now();
        let attempt = if self.lost {
            Attempt::Finished(Err(DeviceFault::Lost("device was lost earlier".into())))
        } else {
            let queue = std::mem::take(&mut self.queue);
            let a = self.attempt(run, queue.front().map(|r| &r.work));
            self.queue = queue;
            a
        };
        let took = t0.elapsed();
        self.record_memory(std::slice::from_ref(&span));
        self.report(meta, attempt, t0, took);
        if !self.lost {
            self.pull();
        }
    }

    /// How many partitions of `run`'s circuit the worker proves as one batch
    /// ([`DeviceWorker::batch_limit`]; 1 for a lost device or a simulated partition).
    fn batch_limit(&self, run: &Run) -> usize {
        match (&self.worker, &run.work.payload) {
            (Some(w), Payload::Proof { srs, .. }) if !self.lost => w.batch_limit(srs).max(1),
            _ => 1,
        }
    }

    /// `first` with the queued leases of the same circuit, up to what the worker proves as
    /// one batch ([`DeviceWorker::batch_limit`]; other leases keep their order).
    fn batch_with(&mut self, first: Run) -> Vec<Run> {
        let limit = self.batch_limit(&first);
        let circuit = match &first.work.payload {
            Payload::Proof { srs, .. } => Some(srs.id()),
            Payload::Simulated { .. } => None,
        };
        let mut batch = vec![first];
        if limit > 1 {
            let mut rest = VecDeque::with_capacity(self.queue.len());
            while let Some(run) = self.queue.pop_front() {
                let same = match &run.work.payload {
                    Payload::Proof { srs, .. } => Some(srs.id()) == circuit,
                    Payload::Simulated { .. } => false,
                };
                if same && batch.len() < limit {
                    batch.push(run);
                } else {
                    rest.push_back(run);
                }
            }
            self.queue = rest;
        }
        batch
    }

    /// Proves leased partitions of one circuit as one batch ([`DeviceWorker::prove_batch`]),
    /// then reports each as [`DeviceActor::run`] does (the device's time shared evenly among
    /// them) and asks for as many leases.
    fn run_batch(&mut self, runs: Vec<Run>) {
        let k = runs.len();
        let spans: Vec<tracing::Span> = runs.iter().map(|r| self.gpu_span(r)).collect();
        let metas: Vec<Meta> = runs.iter().map(|r| self.begin(r)).collect();
        let batch_span = info_span!("gpu_batch", device = %self.info.id, partitions = k);
        let t0 = Instant::now();
        let attempts = {
            let _g = batch_span.enter();
            self.attempt_batch(runs, &spans)
        };
        let took = t0.elapsed() / k.max(1) as u32;
        self.record_memory(&spans);
        for ((meta, attempt), span) in metas.into_iter().zip(attempts).zip(&spans) {
            let _g = span.enter();
            self.report(meta, attempt, t0, took);
        }
        if !self.lost {
            for _ in 0..k {
                self.pull();
            }
        }
    }

    /// The device span of one partition, under its job's span.
    fn gpu_span(&self, run: &Run) -> tracing::Span {
        let device = self.info.id;
        info_span!(
            parent: &run.work.span,
            "gpu",
            device = %device,
            device_uuid = %device.uuid_string(),
            job = run.work.job,
            partition = run.work.partition,
            lease = run.lease.id.0,
            vram_leased = run.work.reserved_vram,
            parameters = tracing::field::Empty,
            streamed_bytes_total = tracing::field::Empty
        )
    }

    /// Tells the scheduler and the status that `run` is on the device now.
    fn begin(&self, run: &Run) -> Meta {
        let (job, partition, lease) = (run.work.job, run.work.partition, run.lease.id);
        if let Some(mut live) = self.shared.devices.get_mut(&self.info.id) {
            live.current = Some((job, partition));
        }
        self.scheduler.began.do_send(Began(lease));
        Meta {
            job,
            partition,
            lease,
        }
    }

    /// Resident or streamed parameters, and the memory measured: on the spans and in status.
    fn record_memory(&self, spans: &[tracing::Span]) {
        let memory = self.worker.as_ref().and_then(|w| w.memory_report());
        if let Some(m) = memory {
            for span in spans {
                span.record("parameters", m.residency);
                span.record("streamed_bytes_total", m.bytes_streamed);
            }
            if let Some(mut live) = self.shared.devices.get_mut(&self.info.id) {
                live.memory = Some(m);
            }
        }
    }

    /// Reports one attempt (`took` of device time, started at `t0`): a proof to check leaves
    /// the device first and is verified on the verification threads; any other outcome is
    /// reported here.
    fn report(&mut self, meta: Meta, attempt: Attempt, t0: Instant, took: std::time::Duration) {
        let Meta {
            job,
            partition,
            lease,
        } = meta;
        let device = self.info.id;
        let report = Report {
            scheduler: self.scheduler.clone(),
            shared: self.shared.clone(),
            device,
            lease,
            job,
            partition,
            took,
        };
        match attempt {
            Attempt::Check(check) => {
                self.trace
                    .slice(&self.track, "prove", t0, job, Some(partition), "proved");
                report.left_device();
                match &self.verifier {
                    Some(pool) => pool.spawn(move || report.done(check.run_guarded())),
                    None => report.done(check.run_guarded()),
                }
            }
            Attempt::Finished(result) => {
                let outcome = match &result {
                    Ok(_) => "ok".to_string(),
                    Err(f) => f.to_string(),
                };
                self.trace
                    .slice(&self.track, "prove", t0, job, Some(partition), outcome);
                if matches!(result, Err(DeviceFault::Lost(_))) {
                    self.lost = true;
                    self.worker = None;
                }
                if let Some(mut live) = self.shared.devices.get_mut(&device) {
                    live.current = None;
                    live.busy += took;
                }
                report.done(result);
            }
        }
    }
}

/// The identity of a lease's attempt, for its report.
struct Meta {
    job: u64,
    partition: usize,
    lease: crate::lease::LeaseId,
}

/// How an attempt is reported, from the device's thread or a verification thread.
struct Report {
    scheduler: SchedulerInbox,
    shared: Arc<Shared>,
    device: crate::identity::DeviceId,
    lease: crate::lease::LeaseId,
    job: u64,
    partition: usize,
    /// Time the device spent on the attempt.
    took: std::time::Duration,
}

impl Report {
    /// The device is done with the lease; its result is checked elsewhere.
    fn left_device(&self) {
        if let Some(mut live) = self.shared.devices.get_mut(&self.device) {
            live.current = None;
            live.busy += self.took;
        }
        self.scheduler.left_device.do_send(LeftDevice {
            device: self.device,
            lease: self.lease,
        });
    }

    /// The attempt's outcome.
    fn done(self, result: std::result::Result<Vec<u8>, DeviceFault>) {
        if let Some(mut live) = self.shared.devices.get_mut(&self.device) {
            match &result {
                Ok(_) => live.partitions_ok += 1,
                Err(_) => live.partitions_failed += 1,
            }
        }
        self.scheduler.done.do_send(Done {
            device: self.device,
            lease: self.lease,
            job: self.job,
            partition: self.partition,
            result,
            took: self.took,
        });
    }
}

impl Handler<Preload> for DeviceActor {
    type Result = ();

    /// Gets a circuit ready on the device between partitions. A failure (or a panic) is only
    /// logged: the first partition of the circuit on this device uploads it, or fails, as it
    /// would have without the preload.
    fn handle(&mut self, msg: Preload, _ctx: &mut Self::Context) {
        let Some(worker) = self.worker.as_mut().filter(|_| !self.lost) else {
            return;
        };
        let _span = info_span!("preload", device = %self.info.id).entered();
        let t0 = Instant::now();
        let outcome = match catch_unwind(AssertUnwindSafe(|| worker.preload(&msg.0))) {
            Ok(Ok(true)) => "ready".to_string(),
            Ok(Ok(false)) => "not preloaded".to_string(),
            Ok(Err(e)) => {
                warn!(device = %self.info.id, error = %e,
                    "preloading parameters failed; the first partition will upload them");
                format!("failed: {e}")
            }
            Err(_) => {
                warn!(device = %self.info.id,
                    "preloading parameters panicked; the first partition will upload them");
                "panicked".to_string()
            }
        };
        debug!(device = %self.info.id, %outcome, ms = t0.elapsed().as_secs_f64() * 1e3, "preload");
        // job 0: no job (job ids start at 1)
        self.trace
            .slice(&self.track, "preload", t0, 0, None, outcome);
    }
}

impl Handler<StopDevice> for DeviceActor {
    type Result = ();

    fn handle(&mut self, _msg: StopDevice, _ctx: &mut Self::Context) {
        self.worker = None; // release the device (context, memory) on its own thread
        System::current().stop();
    }
}
