//! The scheduler actor: applies the scheduling policy ([`crate::policy`]) to the engine's
//! messages. It owns the job table, the [`SchedulerCore`] (and through it the lease table
//! keyed by physical device), the [`SynthesisQueue`] (and through it the host-memory budget),
//! and the partitions between synthesis and devices. It is the only code that grants leases;
//! device actors only receive them.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, Addr, AsyncContext, Context, Handler, System};
use blstrs::Scalar;
use cuzk_engine::aggregate::Aggregation;
use cuzk_engine::circuits::PartitionCircuit;
use cuzk_engine::pce::R1cs;
use cuzk_engine::{Srs, SrsStore};
use futures::channel::oneshot;
use tracing::{debug, info, info_span, warn};

use super::device::DeviceActor;
use super::synthesis::SynthesisActor;
use super::{
    Aggregated, Await, Began, Cancel, DeviceDown, Done, GetStatus, JobInput, LeftDevice, Preload,
    PreloadDevices, Prepare, Prepared, Pull, PullHandled, RequestKey, Run, SchedulerInbox, Shared,
    Shutdown, StopDevice, Submit, SynthInput, Synthesize, Synthesized, Withdraw, Withdrawn,
};
use crate::device::DeviceInfo;
use crate::driver::DeviceDriver;
use crate::error::{Error, Result};
use crate::failure::{DeviceFault, Failure, FailureCause};
use crate::identity::DeviceId;
use crate::job::{JobId, Priority, WorkKind};
use crate::lease::{LeaseId, SharedVram};
use crate::policy::{partitions_ahead, JobOutcome, JobSpec, Limits, SchedulerCore, SynthesisQueue};
use crate::report::{
    DeviceStatus, EngineStatus, JobProgress, JobReport, JobResult, JobTimings, QueueStatus,
    ReportOutcome, SrsStatus, Submitted,
};
use crate::trace::TraceSink;
use crate::work::{PartitionWork, Payload, SimulatedJob};

/// Everything the scheduler actor is configured with.
pub(crate) struct SchedulerSetup {
    pub store: Arc<SrsStore>,
    pub driver: Arc<dyn DeviceDriver>,
    pub devices: Vec<DeviceInfo>,
    pub limits: Limits,
    pub synthesis_workers: usize,
    /// Where synthesis runs (see `EngineConfig::synthesis_niceness`).
    pub synthesis_pool: Arc<rayon::ThreadPool>,
    /// The synthesis workers' and pool's OS niceness.
    pub synthesis_niceness: i32,
    pub host_memory_budget: u64,
    pub max_outstanding_partitions: usize,
    pub job_timeout: Option<Duration>,
    pub prove: cuzk_engine::ProveOptions,
    pub tick: Duration,
    pub retain_results: usize,
    pub on_job_done: Option<crate::report::JobHook>,
    pub shared: Arc<Shared>,
    pub trace: TraceSink,
}

enum EntryInput {
    Proof {
        circuits: Vec<Box<dyn PartitionCircuit>>,
        public_inputs: Vec<Vec<Scalar>>,
        srs: Option<Arc<Srs>>,
        r1cs: Option<Arc<R1cs>>,
        aggregation: Option<Aggregation>,
    },
    Simulated(SimulatedJob),
}

struct JobEntry {
    kind: WorkKind,
    priority: Priority,
    seq: u64,
    submitted: Instant,
    partitions: usize,
    input: EntryInput,
    host_bytes: u64,
    prepared: bool,
    on_device: usize,
    done: usize,
    timings: JobTimings,
    first_lease: Option<Instant>,
    devices: BTreeSet<DeviceId>,
    /// The job's span (a root), and one child span per partition, each closed when its
    /// partition is proved; `waiting` holds a partition's `queue_wait` span from its input
    /// being ready to its lease.
    span: tracing::Span,
    partition_spans: Vec<tracing::Span>,
    waiting: Vec<tracing::Span>,
}

impl JobEntry {
    /// Whether its partitions can be synthesised: simulated, or its parameters are loaded.
    fn synthesizable(&self) -> bool {
        !matches!(self.input, EntryInput::Proof { srs: None, .. })
    }

    /// The partitions' size: their parameters' evaluation domain (rows, rounded up).
    fn rows(&self) -> usize {
        match &self.input {
            EntryInput::Proof { srs: Some(srs), .. } => srs.domain_size(),
            _ => 0,
        }
    }

    /// Partition `p`'s span (a child of the job's).
    fn partition_span(&self, p: usize) -> tracing::Span {
        self.partition_spans
            .get(p)
            .cloned()
            .unwrap_or_else(tracing::Span::none)
    }

    /// What synthesis of partition `p` needs; `None` while the parameters are not loaded.
    fn synth_input(&self, p: usize, randomness: cuzk_engine::Randomness) -> Option<SynthInput> {
        match &self.input {
            EntryInput::Simulated(sim) => Some(SynthInput::Simulated {
                time: sim.synthesis_time,
                gpu_time: sim.gpu_time,
                panic: sim.panic_in_synthesis == Some(p),
            }),
            EntryInput::Proof {
                circuits,
                public_inputs,
                srs: Some(srs),
                r1cs,
                ..
            } => Some(SynthInput::Proof {
                circuit: circuits.get(p)?.clone_box(),
                srs: srs.clone(),
                r1cs: r1cs.clone(),
                public_inputs: public_inputs.get(p)?.clone(),
                randomness,
            }),
            EntryInput::Proof { srs: None, .. } => None,
        }
    }
}

/// How a finished job is remembered for late waiters.
#[derive(Clone)]
enum Finished {
    Ok(JobResult),
    Failed(Failure),
    Cancelled(Option<String>),
}

impl Finished {
    fn to_result(&self, job: JobId) -> Result<JobResult> {
        match self {
            Finished::Ok(r) => Ok(r.clone()),
            Finished::Failed(f) => Err(Error::JobFailed {
                job,
                cause: f.cause,
                reason: f.message.clone(),
            }),
            Finished::Cancelled(reason) => Err(Error::Cancelled {
                job,
                reason: reason.clone(),
            }),
        }
    }
}

struct DeviceSlot {
    info: DeviceInfo,
    addr: Option<Addr<DeviceActor>>,
    /// Leases the device has asked for (one `Pull` each) and not yet been sent.
    wants: usize,
    down: Option<String>,
    usable: u64,
}

type Waiter = (u64, oneshot::Sender<Result<JobResult>>);

pub(crate) struct SchedulerActor {
    setup: SchedulerSetup,
    core: SchedulerCore<Vec<u8>>,
    synth: Option<Addr<SynthesisActor>>,
    devices: BTreeMap<DeviceId, DeviceSlot>,
    jobs: HashMap<JobId, JobEntry>,
    finished: HashMap<JobId, Finished>,
    finished_order: VecDeque<JobId>,
    /// Jobs by request key, while they run and while a completed one's proof is retained
    /// (a failed or cancelled one is forgotten: the same request then runs again).
    request_ids: HashMap<RequestKey, JobId>,
    /// Jobs whose partitions are proved and whose aggregate is being made on a thread of its
    /// own (non-interactive PoRep): they end when it answers (`Aggregated`).
    aggregating: HashMap<JobId, (JobEntry, Vec<DeviceId>)>,
    /// This actor's address, for threads that answer it.
    me: Option<Addr<SchedulerActor>>,
    /// Partitions waiting for synthesis, and the host memory synthesised ones hold.
    synthesis: SynthesisQueue,
    ready: HashMap<(JobId, usize), Payload>,
    on_device: HashMap<LeaseId, u64>,
    /// Parameters (by `Srs::id`) every device has been asked to preload.
    preloaded: HashSet<u64>,
    waiters: HashMap<JobId, Vec<Waiter>>,
    next_waiter: u64,
    seq: u64,
    draining: bool,
    shutdown_replies: Vec<oneshot::Sender<()>>,
    counts: (u64, u64, u64),
    started: Instant,
    cancel_reasons: HashMap<JobId, String>,
}

impl SchedulerActor {
    /// Creates the scheduler, the synthesis pool and one device actor (own thread) per device.
    pub(crate) fn start(setup: SchedulerSetup) -> Result<Addr<SchedulerActor>> {
        let mut leases = crate::lease::LeaseTable::new();
        for d in &setup.devices {
            let depth = setup.driver.pipeline_depth(d).max(1);
            leases.add_device(d.id, setup.driver.usable_vram(d), depth)?;
        }
        let core = SchedulerCore::new(leases, setup.limits.clone());
        let mut device_err = None;
        let addr = SchedulerActor::create(|ctx| {
            let inbox = SchedulerInbox::of(&ctx.address());
            let synthesis_inbox = inbox.clone();
            let store = setup.store.clone();
            let trace = setup.trace.clone();
            let workers = setup.synthesis_workers.max(1);
            let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let pool = setup.synthesis_pool.clone();
            let niceness = setup.synthesis_niceness;
            let synth = actix::SyncArbiter::start(workers, move || {
                // runs on the worker's own thread
                super::synthesis::lower_this_thread(niceness);
                let i = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                SynthesisActor {
                    store: store.clone(),
                    scheduler: synthesis_inbox.clone(),
                    trace: trace.clone(),
                    track: format!("synthesis {}", i % workers),
                    pool: pool.clone(),
                }
            });
            let mut devices = BTreeMap::new();
            for info in &setup.devices {
                setup.shared.devices.insert(info.id, Default::default());
                let addr = match DeviceActor::spawn(
                    info.clone(),
                    setup.driver.clone(),
                    inbox.clone(),
                    setup.shared.clone(),
                    setup.trace.clone(),
                    setup.prove.verify,
                ) {
                    Ok(a) => Some(a),
                    Err(e) => {
                        device_err.get_or_insert(e);
                        None
                    }
                };
                devices.insert(
                    info.id,
                    DeviceSlot {
                        info: info.clone(),
                        addr,
                        wants: 0,
                        down: None,
                        usable: setup.driver.usable_vram(info),
                    },
                );
            }
            SchedulerActor {
                core,
                synth: Some(synth),
                devices,
                jobs: HashMap::new(),
                finished: HashMap::new(),
                finished_order: VecDeque::new(),
                request_ids: HashMap::new(),
                aggregating: HashMap::new(),
                me: None,
                synthesis: SynthesisQueue::new(setup.synthesis_workers, setup.host_memory_budget),
                ready: HashMap::new(),
                on_device: HashMap::new(),
                preloaded: HashSet::new(),
                waiters: HashMap::new(),
                next_waiter: 0,
                seq: 0,
                draining: false,
                shutdown_replies: Vec::new(),
                counts: (0, 0, 0),
                started: Instant::now(),
                cancel_reasons: HashMap::new(),
                setup,
            }
        });
        match device_err {
            Some(e) => Err(e),
            None => Ok(addr),
        }
    }

    /// Whether `id` has not ended: it is being proved, or its aggregate is being made.
    fn is_live(&self, id: JobId) -> bool {
        self.jobs.contains_key(&id) || self.aggregating.contains_key(&id)
    }

    /// No job is being proved or aggregated (shutdown may complete).
    fn holds_no_job(&self) -> bool {
        self.jobs.is_empty() && self.aggregating.is_empty()
    }

    fn live_partitions(&self) -> usize {
        self.jobs.values().map(|j| j.partitions - j.done).sum()
    }

    fn usable_devices(&self) -> usize {
        self.devices
            .values()
            .filter(|d| d.down.is_none() && !self.core.is_quarantined(d.info.id))
            .count()
    }

    /// Accepts a new job (its parameters are asked for at once), or answers with the job
    /// its request key already names.
    fn accept(&mut self, msg: Submit, ctx: &mut Context<Self>) -> Result<Submitted> {
        if let Some(existing) = self.existing_job(msg.request_key.as_ref()) {
            return Ok(existing);
        }
        self.admit(&msg)?;
        let partitions = msg.input.partitions();
        let id = self.core.submit_staged(JobSpec {
            priority: msg.priority,
            partitions,
            vram_per_partition: 0,
        })?;
        self.seq += 1;
        let (span, partition_spans) = job_spans(id, &msg, partitions);
        let input = self.entry_input(id, msg.input, &span);
        let simulated = matches!(input, EntryInput::Simulated(_));
        self.setup.shared.jobs.insert(
            id,
            JobProgress {
                kind: msg.kind,
                partitions,
                synthesized: 0,
                proved: 0,
            },
        );
        self.jobs.insert(
            id,
            JobEntry {
                kind: msg.kind,
                priority: msg.priority,
                seq: self.seq,
                submitted: Instant::now(),
                partitions,
                input,
                host_bytes: 0,
                prepared: false,
                on_device: 0,
                done: 0,
                timings: JobTimings::default(),
                first_lease: None,
                devices: BTreeSet::new(),
                span,
                waiting: vec![tracing::Span::none(); partitions],
                partition_spans,
            },
        );
        if let Some(r) = msg.request_key {
            self.request_ids.insert(r, id);
        }
        if let Some(t) = msg.timeout.or(self.setup.job_timeout) {
            Self::fail_after(ctx, id, t);
        }
        if simulated {
            self.prepared(id, None);
        }
        info!(job = id, kind = %msg.kind, partitions, priority = ?msg.priority, "job accepted");
        Ok(Submitted {
            job: id,
            existing: false,
            queue_position: self.queue_position(id),
        })
    }

    /// The job a request key names, when it runs or its proof is kept: a submission of the
    /// same request attaches to it.
    fn existing_job(&self, key: Option<&RequestKey>) -> Option<Submitted> {
        let &id = self.request_ids.get(key?)?;
        let live_or_proved =
            self.is_live(id) || matches!(self.finished.get(&id), Some(Finished::Ok(_)));
        live_or_proved.then(|| Submitted {
            job: id,
            existing: true,
            queue_position: self.queue_position(id),
        })
    }

    /// Refuses a new job while shutting down, without a usable device, beyond the
    /// outstanding partitions allowed, or simulated on real devices.
    fn admit(&self, msg: &Submit) -> Result<()> {
        if self.draining {
            return Err(Error::ShuttingDown);
        }
        if self.usable_devices() == 0 {
            return Err(Error::NoDevice(self.down_reasons()));
        }
        if matches!(msg.input, JobInput::Simulated(_)) && self.setup.driver.name() != "mock" {
            return Err(Error::Rejected(
                "simulated jobs run only on mock devices".into(),
            ));
        }
        let live = self.live_partitions();
        if live + msg.input.partitions() > self.setup.max_outstanding_partitions {
            return Err(Error::Backpressure(live));
        }
        Ok(())
    }

    /// What the scheduler keeps of a new job's input; a real proof's parameters are asked
    /// for (`Prepare`) on the way.
    fn entry_input(&self, id: JobId, input: JobInput, span: &tracing::Span) -> EntryInput {
        match input {
            JobInput::Proof {
                proof,
                params_identifier,
                shape_identity,
                circuits,
                public_inputs,
                blank,
                aggregation,
            } => {
                if let Some(synth) = &self.synth {
                    synth.do_send(Prepare {
                        job: id,
                        proof,
                        params_identifier,
                        shape_identity,
                        blank,
                        pce: self.setup.prove.pce,
                        span: span.clone(),
                    });
                }
                EntryInput::Proof {
                    circuits,
                    public_inputs,
                    srs: None,
                    r1cs: None,
                    aggregation,
                }
            }
            JobInput::Simulated(sim) => EntryInput::Simulated(sim),
        }
    }

    /// Fails job `id` if it has not finished after `timeout`.
    fn fail_after(ctx: &mut Context<Self>, id: JobId, timeout: Duration) {
        ctx.run_later(timeout, move |act, _ctx| {
            let why = Failure::new(
                FailureCause::Timeout,
                format!("did not finish within its timeout of {timeout:?}"),
            );
            if act.core.fail(id, why) {
                act.after_change();
            }
        });
    }

    /// Partitions of other jobs ahead of this one (see [`partitions_ahead`]).
    fn queue_position(&self, id: JobId) -> usize {
        let Some(me) = self.jobs.get(&id) else {
            return 0;
        };
        let others = self
            .jobs
            .iter()
            .filter(|(j, _)| **j != id)
            .map(|(_, e)| (e.priority, e.seq, e.partitions - e.done));
        partitions_ahead(me.priority, me.seq, others)
    }

    fn down_reasons(&self) -> String {
        let v: Vec<String> = self
            .devices
            .values()
            .map(|d| match &d.down {
                Some(r) => format!("{}: {r}", d.info.id),
                None => format!("{}: quarantined after repeated failures", d.info.id),
            })
            .collect();
        if v.is_empty() {
            "no devices configured".into()
        } else {
            v.join("; ")
        }
    }

    /// A job's parameters are ready (`srs` None for simulated jobs): queue its partitions
    /// for synthesis.
    fn prepared(&mut self, id: JobId, srs: Option<(Arc<Srs>, Option<Arc<R1cs>>, Duration)>) {
        let vram_for =
            |srs: &Srs, devices: &BTreeMap<DeviceId, DeviceSlot>, d: &dyn DeviceDriver| {
                devices
                    .values()
                    .map(|s| d.vram_for(&s.info, srs))
                    .max()
                    .unwrap_or(0)
            };
        let Some(entry) = self.jobs.get_mut(&id) else {
            return;
        };
        let (host, vram, shared) = match (&mut entry.input, srs) {
            (EntryInput::Simulated(sim), _) => {
                (sim.host_bytes_per_partition, sim.vram_per_partition, None)
            }
            (
                EntryInput::Proof {
                    srs: slot,
                    r1cs: rslot,
                    ..
                },
                Some((srs, r1cs, load)),
            ) => {
                entry.timings.srs_load = load;
                let host = srs.partition_host_bytes();
                let driver = self.setup.driver.as_ref();
                let vram = vram_for(&srs, &self.devices, driver);
                // the circuit's share of it: the smallest any device names, so that no
                // device reserves less than its own estimate; and the most leases of it a
                // device may hold to prove as a batch: the largest any device names (a
                // device asks for no more leases than its worker batches)
                let bytes = self
                    .devices
                    .values()
                    .map(|s| driver.vram_shared_for(&s.info, &srs))
                    .min()
                    .unwrap_or(0);
                let batch = self
                    .devices
                    .values()
                    .map(|s| driver.lease_batch(&s.info, &srs))
                    .max()
                    .unwrap_or(1);
                let shared = (bytes > 0 || batch > 1).then(|| SharedVram {
                    key: srs.id(),
                    bytes,
                    batch,
                });
                Self::preload_devices(&mut self.preloaded, &self.devices, &srs);
                *slot = Some(srs);
                *rslot = r1cs;
                (host, vram, shared)
            }
            (EntryInput::Proof { .. }, None) => return,
        };
        entry.host_bytes = host;
        entry.prepared = true;
        let fits = self.devices.values().any(|d| d.usable >= vram);
        if !fits {
            self.core.fail(
                id,
                Failure::new(
                    FailureCause::Device,
                    format!(
                        "a partition needs {vram} bytes of device memory; no device has that much"
                    ),
                ),
            );
            self.after_change();
            return;
        }
        self.core.set_vram_per_partition(id, vram);
        if let Some(shared) = shared {
            self.core.set_shared_vram(id, shared);
        }
        for p in 0..entry.partitions {
            self.synthesis.push(entry.priority, entry.seq, id, p);
        }
        self.after_change();
    }

    /// Asks every device in service to get `srs` ready before its first partition there
    /// (between partitions, where that evicts nothing: a device that never proved the circuit
    /// would otherwise pay the upload inside its first partition's time). Once per loaded
    /// parameter set (`Srs::id`): later jobs of the circuit send nothing.
    fn preload_devices(
        preloaded: &mut HashSet<u64>,
        devices: &BTreeMap<DeviceId, DeviceSlot>,
        srs: &Arc<Srs>,
    ) {
        if !preloaded.insert(srs.id()) {
            return;
        }
        for d in devices.values().filter(|d| d.down.is_none()) {
            if let Some(addr) = &d.addr {
                addr.do_send(Preload(srs.clone()));
            }
        }
    }

    /// Sends partitions to synthesis while workers and the host-memory budget allow (the
    /// policy's [`SynthesisQueue`]).
    fn pump_synthesis(&mut self) {
        let (_, kept) = cuzk_engine::pce::buffers::kept();
        self.synthesis
            .set_kept((kept * std::mem::size_of::<blstrs::Scalar>()) as u64);
        loop {
            let alone = self.synthesis.in_flight() == 0;
            let jobs = &self.jobs;
            let next = self.synthesis.next(|id| {
                jobs.get(&id)
                    .filter(|e| e.synthesizable())
                    .map(|e| e.host_bytes)
            });
            let Some((id, p, bytes)) = next else {
                break;
            };
            let randomness = self.setup.prove.randomness;
            let Some((input, rows, span)) = self
                .jobs
                .get(&id)
                .and_then(|e| Some((e.synth_input(p, randomness)?, e.rows(), e.partition_span(p))))
            else {
                // cannot happen: `synthesizable` said it could
                self.synthesis.synthesized();
                self.synthesis.release(bytes);
                continue;
            };
            // Alone, a partition's witness may spread over the host's cores (latency), where
            // the host has enough of them; beside other syntheses a small one stays on its
            // worker's thread, since they already fill the cores and a parallel witness would
            // queue the devices' own host work behind it (measured: docs/benchmarks.md). A
            // production-size partition always spreads: on one thread it takes about a minute.
            let parallel = cuzk_engine::circuits::synthesize_on_pool(rows, alone);
            if let Some(synth) = &self.synth {
                synth.do_send(Synthesize {
                    job: id,
                    partition: p,
                    input,
                    parallel,
                    span,
                });
            }
        }
    }

    /// Grants leases to devices that asked for them, highest-priority ready partition first,
    /// one per device per round, so that devices share the work before any takes a second.
    fn dispatch(&mut self) {
        let now = Instant::now();
        loop {
            let wanting: Vec<DeviceId> = self
                .devices
                .iter()
                .filter(|(_, d)| d.wants > 0 && d.down.is_none() && d.addr.is_some())
                .map(|(id, _)| *id)
                .collect();
            let mut granted = false;
            for dev in wanting {
                granted |= self.dispatch_one(dev, now);
            }
            if !granted {
                break;
            }
        }
    }

    /// Grants `dev` its best eligible partition, if any; returns whether it did.
    fn dispatch_one(&mut self, dev: DeviceId, now: Instant) -> bool {
        let Some(lease) = self.core.next_for(dev, now) else {
            return false;
        };
        let key = (lease.job, lease.partition);
        let Some(payload) = self.ready.remove(&key) else {
            // Cannot happen: a partition is queued in the core only once its input is
            // here. Fail the lease rather than lose the partition.
            warn!(
                job = lease.job,
                partition = lease.partition,
                "leased partition has no input"
            );
            let why = Failure::new(FailureCause::Internal, "leased partition has no input");
            self.core.complete(lease.id, Err(why));
            return false; // no second try this round: its retry needs new input
        };
        let bytes = self.jobs.get(&lease.job).map_or(0, |e| e.host_bytes);
        self.on_device.insert(lease.id, bytes);
        let mut span = tracing::Span::none();
        if let Some(e) = self.jobs.get_mut(&lease.job) {
            if let Some(w) = e.waiting.get_mut(lease.partition) {
                *w = tracing::Span::none(); // the queue wait ends
            }
            if let Some(s) = e.partition_spans.get(lease.partition) {
                span = s.clone();
            }
            e.on_device += 1;
            e.first_lease.get_or_insert(now);
            e.devices.insert(dev);
        }
        let slot = self.devices.get_mut(&dev);
        if let Some(slot) = slot {
            slot.wants = slot.wants.saturating_sub(1);
            if let Some(addr) = &slot.addr {
                addr.do_send(Run {
                    work: PartitionWork {
                        lease: lease.id,
                        job: lease.job,
                        partition: lease.partition,
                        reserved_vram: lease.bytes,
                        payload,
                        span,
                    },
                    lease,
                });
            }
        }
        true
    }

    /// After any change: re-queue partitions that need new input, answer finished jobs,
    /// feed synthesis and devices.
    fn after_change(&mut self) {
        for (id, p) in self.core.take_needing_input() {
            if let Some(e) = self.jobs.get(&id) {
                self.synthesis.push(e.priority, e.seq, id, p);
            }
        }
        for id in self.core.take_finished() {
            self.finish(id);
        }
        self.pump_synthesis();
        self.dispatch();
        if self.draining && self.holds_no_job() {
            self.complete_shutdown();
        }
    }

    fn finish(&mut self, id: JobId) {
        let Some(outcome) = self.core.take_outcome(id) else {
            return;
        };
        let Some(entry) = self.jobs.remove(&id) else {
            return;
        };
        // Inputs waiting for a device are dropped with the job.
        let stale: Vec<(JobId, usize)> = self.ready.keys().filter(|k| k.0 == id).copied().collect();
        for k in stale {
            self.ready.remove(&k);
            self.synthesis.release(entry.host_bytes);
        }
        self.synthesis.forget(id);
        self.setup.shared.jobs.remove(&id);
        if self.jobs.is_empty() {
            // Nothing to synthesise next: the partition-sized vectors kept for the next
            // partition go back to the host, on a thread of their own (gigabytes to unmap).
            let _ = std::thread::Builder::new()
                .name("cuzk-trim".into())
                .spawn(cuzk_engine::pce::buffers::trim);
        }
        // Leases of the job still held (queued behind another partition, or being proved):
        // their results would be discarded, so a device that has not started one drops it.
        let held: Vec<(DeviceId, LeaseId)> = self
            .devices
            .keys()
            .flat_map(|&d| {
                self.core
                    .leases()
                    .active_on(d)
                    .into_iter()
                    .map(move |l| (d, l))
            })
            .filter(|(_, l)| l.job == id)
            .map(|(d, l)| (d, l.id))
            .collect();
        for (d, lease) in held {
            self.withdraw(d, lease);
        }
        let devices: Vec<DeviceId> = entry.devices.iter().copied().collect();
        if let (
            JobOutcome::Completed(parts),
            EntryInput::Proof {
                aggregation: Some(agg),
                srs: Some(srs),
                public_inputs,
                ..
            },
        ) = (&outcome, &entry.input)
        {
            let span = entry.span.clone();
            self.aggregate(
                id,
                span,
                *agg,
                parts.concat(),
                srs.clone(),
                public_inputs.clone(),
            );
            self.aggregating.insert(id, (entry, devices));
            return;
        }
        self.conclude(id, entry, devices, outcome);
    }

    /// Makes a job's SnarkPack aggregate on a thread of its own (a few seconds for a 32 GiB
    /// non-interactive PoRep's 126 partitions: not on the scheduler's thread), which answers
    /// with `Aggregated`.
    fn aggregate(
        &self,
        id: JobId,
        span: tracing::Span,
        agg: Aggregation,
        parts: Vec<u8>,
        srs: Arc<Srs>,
        inputs: Vec<Vec<Scalar>>,
    ) {
        let Some(me) = self.me.clone() else {
            return;
        };
        let store = self.setup.store.clone();
        let spawned = std::thread::Builder::new()
            .name("cuzk-aggregate".into())
            .spawn(move || {
                let result = info_span!(parent: &span, "aggregate", job = id).in_scope(|| {
                    let proofs = cuzk_engine::aggregate::decode_partitions(&parts)?;
                    cuzk_engine::aggregate::aggregate(
                        &*store.aggregation_srs()?,
                        &srs.pvk,
                        &agg,
                        &proofs,
                        &inputs,
                    )
                });
                me.do_send(Aggregated { job: id, result });
            });
        if let Err(e) = spawned {
            if let Some(addr) = &self.me {
                addr.do_send(Aggregated {
                    job: id,
                    result: Err(cuzk_engine::Error::Prover {
                        partition: 0,
                        backend: "snarkpack".into(),
                        reason: format!("cannot start the aggregation thread: {e}"),
                    }),
                });
            }
        }
    }

    /// Ends a job: its result (concatenated partition proofs, or its aggregate) or failure
    /// goes to its waiters, its report to the hook, and is kept for late waiters.
    fn conclude(
        &mut self,
        id: JobId,
        mut entry: JobEntry,
        devices: Vec<DeviceId>,
        outcome: JobOutcome<Vec<u8>>,
    ) {
        entry.timings.total = entry.submitted.elapsed();
        entry.timings.queue_wait = entry
            .first_lease
            .map(|t| t.saturating_duration_since(entry.submitted))
            .unwrap_or(entry.timings.total);
        let (finished, report) = match outcome {
            JobOutcome::Completed(parts) => {
                self.counts.0 += 1;
                let proof: Vec<u8> = parts.concat();
                let verified =
                    self.setup.prove.verify && matches!(entry.input, EntryInput::Proof { .. });
                let r = JobResult {
                    job: id,
                    kind: entry.kind,
                    proof,
                    partitions: entry.partitions,
                    verified,
                    timings: entry.timings.clone(),
                    devices: devices.clone(),
                };
                (Finished::Ok(r), ReportOutcome::Completed)
            }
            JobOutcome::Failed(reason) => {
                self.counts.1 += 1;
                warn!(job = id, cause = %reason.cause, %reason, "job failed");
                (
                    Finished::Failed(reason.clone()),
                    ReportOutcome::Failed(reason),
                )
            }
            JobOutcome::Cancelled => {
                self.counts.2 += 1;
                let reason = self.cancel_reasons.remove(&id);
                (
                    Finished::Cancelled(reason.clone()),
                    ReportOutcome::Cancelled(reason),
                )
            }
        };
        info!(job = id, kind = %entry.kind, total_ms = entry.timings.total.as_millis() as u64, "job ended");
        if let Some(hook) = &self.setup.on_job_done {
            let report = JobReport {
                job: id,
                kind: entry.kind,
                partitions: entry.partitions,
                outcome: report,
                timings: entry.timings.clone(),
                devices,
            };
            // A panicking hook must not take the scheduler down.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&report)));
        }
        for (_, w) in self.waiters.remove(&id).unwrap_or_default() {
            let _ = w.send(finished.to_result(id));
        }
        self.finished.insert(id, finished);
        self.finished_order.push_back(id);
        while self.finished_order.len() > self.setup.retain_results.max(1) {
            if let Some(old) = self.finished_order.pop_front() {
                self.finished.remove(&old);
            }
        }
        // request keys map to a job while it runs and while its proof is retained
        let proved: std::collections::HashSet<JobId> = self
            .finished_order
            .iter()
            .copied()
            .filter(|j| matches!(self.finished.get(j), Some(Finished::Ok(_))))
            .collect();
        self.request_ids.retain(|_, j| {
            proved.contains(j) || self.jobs.contains_key(j) || self.aggregating.contains_key(j)
        });
    }

    fn complete_shutdown(&mut self) {
        for slot in self.devices.values_mut() {
            if let Some(addr) = slot.addr.take() {
                addr.do_send(StopDevice);
            }
        }
        self.synth = None;
        for r in self.shutdown_replies.drain(..) {
            let _ = r.send(());
        }
        System::current().stop();
    }

    fn status(&self) -> EngineStatus {
        let mut queues: BTreeMap<WorkKind, QueueStatus> = BTreeMap::new();
        for e in self.jobs.values() {
            let q = queues.entry(e.kind).or_insert(QueueStatus {
                kind: e.kind,
                pending: 0,
                in_progress: 0,
                jobs: 0,
            });
            q.jobs += 1;
            q.in_progress += e.on_device;
            q.pending += e.partitions - e.done - e.on_device;
        }
        let devices = self
            .devices
            .values()
            .map(|d| {
                let live = self
                    .setup
                    .shared
                    .devices
                    .get(&d.info.id)
                    .map(|l| l.clone())
                    .unwrap_or_default();
                let current = live.current.map(|(j, p)| {
                    let kind = self.jobs.get(&j).map_or(WorkKind::Simulated, |e| e.kind);
                    (j, kind, p)
                });
                DeviceStatus {
                    info: d.info.clone(),
                    usable_vram: d.usable,
                    vram_leased: self.core.leases().reserved(d.info.id),
                    current,
                    quarantined: self.core.is_quarantined(d.info.id),
                    down: d.down.clone(),
                    busy: live.busy,
                    partitions_ok: live.partitions_ok,
                    partitions_failed: live.partitions_failed,
                    memory: live.memory,
                }
            })
            .collect();
        let srs = self
            .setup
            .store
            .loaded()
            .into_iter()
            .map(|(identifier, s)| SrsStatus {
                identifier,
                size_bytes: s.memory_bytes(),
                file_bytes: s.file_bytes,
                users: self
                    .jobs
                    .values()
                    .filter(|e| {
                        matches!(&e.input, EntryInput::Proof { srs: Some(x), .. } if Arc::ptr_eq(x, &s))
                    })
                    .count(),
            })
            .collect();
        EngineStatus {
            devices,
            queues: queues.into_values().collect(),
            srs,
            jobs_running: self.jobs.len(),
            completed: self.counts.0,
            failed: self.counts.1,
            cancelled: self.counts.2,
            partitions_ready: self.ready.len(),
            partitions_synthesizing: self.synthesis.in_flight(),
            host_memory_used: self.synthesis.host_used(),
            host_memory_budget: self.setup.host_memory_budget,
            uptime: self.started.elapsed(),
            draining: self.draining,
        }
    }
}

/// A new job's span (a root) and one child span per partition.
fn job_spans(id: JobId, msg: &Submit, partitions: usize) -> (tracing::Span, Vec<tracing::Span>) {
    let sector_size = match &msg.input {
        JobInput::Proof { proof, .. } => proof.sector_size.to_string(),
        JobInput::Simulated(_) => String::new(),
    };
    let span = tracing::info_span!(
        parent: None,
        "job",
        job = id,
        kind = %msg.kind,
        sector_size = %sector_size,
        request_id = msg.request_key.as_ref().map_or("", |(r, _)| r.as_str()),
        partitions
    );
    let partition_spans = (0..partitions)
        .map(|p| tracing::info_span!(parent: &span, "partition", job = id, partition = p))
        .collect();
    (span, partition_spans)
}

impl Actor for SchedulerActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(usize::MAX);
        self.me = Some(ctx.address());
        let tick = self.setup.tick;
        ctx.run_interval(tick, |act, _ctx| {
            let revoked = act.core.expire(Instant::now());
            if !revoked.is_empty() {
                for l in &revoked {
                    warn!(device = %l.device, job = l.job, partition = l.partition, "lease timed out; revoked, partition runs again elsewhere");
                    if let Some(e) = act.jobs.get_mut(&l.job) {
                        e.on_device = e.on_device.saturating_sub(1);
                    }
                    // a device merely slow to reach a queued lease drops it instead of proving
                    // it for nothing
                    act.withdraw(l.device, l.id);
                }
                act.after_change();
            }
        });
    }

    fn stopping(&mut self, _ctx: &mut Self::Context) -> actix::Running {
        // Whoever still waits learns the engine stopped (their receivers see a dropped
        // sender), never waits forever.
        self.waiters.clear();
        actix::Running::Stop
    }
}

impl Handler<Submit> for SchedulerActor {
    type Result = Result<Submitted>;

    fn handle(&mut self, msg: Submit, ctx: &mut Self::Context) -> Self::Result {
        let r = self.accept(msg, ctx);
        self.after_change();
        r
    }
}

impl Handler<Prepared> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: Prepared, _ctx: &mut Self::Context) {
        match msg.result {
            Ok(srs) => self.prepared(msg.job, Some(srs)),
            Err(reason) => {
                self.core.fail(msg.job, reason);
                self.after_change();
            }
        }
    }
}

impl Handler<Synthesized> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: Synthesized, _ctx: &mut Self::Context) {
        self.synthesis.synthesized();
        let bytes = self.jobs.get(&msg.job).map_or(0, |e| e.host_bytes);
        match (msg.result, self.jobs.get_mut(&msg.job)) {
            (Ok(payload), Some(entry)) => {
                entry.timings.synthesis += msg.took;
                if let Some(mut p) = self.setup.shared.jobs.get_mut(&msg.job) {
                    p.synthesized += 1;
                }
                if self.core.ready(msg.job, msg.partition) {
                    if let (Some(w), Some(parent)) = (
                        entry.waiting.get_mut(msg.partition),
                        entry.partition_spans.get(msg.partition),
                    ) {
                        *w = tracing::info_span!(parent: parent, "queue_wait", partition = msg.partition);
                    }
                    self.ready.insert((msg.job, msg.partition), payload);
                } else {
                    self.synthesis.release(bytes);
                }
            }
            (Err(reason), Some(_)) => {
                self.synthesis.release(bytes);
                self.core.fail(msg.job, reason);
            }
            (_, None) => {
                // the job ended meanwhile; its bytes were counted against this job's size
                self.synthesis.release(bytes);
            }
        }
        self.after_change();
    }
}

impl Handler<Aggregated> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: Aggregated, _ctx: &mut Self::Context) {
        let Some((entry, devices)) = self.aggregating.remove(&msg.job) else {
            return;
        };
        let outcome = match msg.result {
            Ok(aggregate) => JobOutcome::Completed(vec![aggregate]),
            Err(e) => JobOutcome::Failed(
                Failure::from_engine(&e).context("aggregating the partition proofs"),
            ),
        };
        self.conclude(msg.job, entry, devices, outcome);
        self.after_change();
    }
}

impl Handler<PreloadDevices> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: PreloadDevices, _ctx: &mut Self::Context) {
        Self::preload_devices(&mut self.preloaded, &self.devices, &msg.0);
    }
}

impl Handler<Began> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: Began, _ctx: &mut Self::Context) {
        self.core.began(msg.0, Instant::now());
    }
}

impl Handler<Pull> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: Pull, _ctx: &mut Self::Context) {
        if let Some(d) = self.devices.get_mut(&msg.0) {
            if d.down.is_none() {
                d.wants += 1;
            }
        }
        self.after_change();
        // Every Pull is acknowledged, after the Run it brought if any (a device holding one
        // partition waits for this before it starts, so it can upload the next one ahead when
        // there is one). A Run is not an acknowledgement: it may answer an earlier Pull that
        // got no lease at the time. A device that is down is acknowledged too: it is never
        // left waiting.
        if let Some(addr) = self.devices.get(&msg.0).and_then(|d| d.addr.as_ref()) {
            addr.do_send(PullHandled);
        }
    }
}

impl Handler<LeftDevice> for SchedulerActor {
    type Result = ();

    /// The device is free for its next partition; the partition's result is still pending
    /// (its job still counts it as on a device until `Done`). Its input was consumed.
    fn handle(&mut self, msg: LeftDevice, _ctx: &mut Self::Context) {
        let bytes = self.on_device.remove(&msg.lease).unwrap_or(0);
        self.synthesis.release(bytes);
        if !self.core.left_device(msg.lease) {
            debug!(device = %msg.device, lease = msg.lease.0, "a lease no longer active left its device");
        }
        self.after_change();
    }
}

impl Handler<Done> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: Done, _ctx: &mut Self::Context) {
        let bytes = self.on_device.remove(&msg.lease).unwrap_or(0);
        self.synthesis.release(bytes);
        let active = self.core.is_pending(msg.lease);
        if let Some(e) = self.jobs.get_mut(&msg.job) {
            if active {
                e.on_device = e.on_device.saturating_sub(1);
            }
            e.timings.gpu_compute += msg.took;
        }
        let lost = match &msg.result {
            Err(DeviceFault::Lost(r)) => Some(r.clone()),
            _ => None,
        };
        if let Err(f) = &msg.result {
            warn!(device = %msg.device, job = msg.job, partition = msg.partition, fault = %f, "partition attempt failed");
        }
        let ok = msg.result.is_ok();
        let result = msg.result.map_err(|f| {
            Failure::new(
                FailureCause::of_device_fault(&f),
                format!("on {}: {f}", msg.device),
            )
        });
        let c = self.core.complete(msg.lease, result);
        if ok && c == crate::policy::Completion::Accepted {
            if let Some(e) = self.jobs.get_mut(&msg.job) {
                e.done += 1;
                if let Some(s) = e.partition_spans.get_mut(msg.partition) {
                    *s = tracing::Span::none(); // proved: the partition's span closes
                }
            }
            if let Some(mut p) = self.setup.shared.jobs.get_mut(&msg.job) {
                p.proved += 1;
            }
        }
        if let Some(reason) = lost {
            self.device_down(msg.device, reason);
        }
        self.after_change();
    }
}

impl SchedulerActor {
    fn device_down(&mut self, device: DeviceId, reason: String) {
        warn!(%device, %reason, "device down; its work moves to other devices");
        if let Some(d) = self.devices.get_mut(&device) {
            d.down = Some(reason);
            d.wants = 0;
        }
        for l in self.core.leases().active_on(device) {
            if let Some(e) = self.jobs.get_mut(&l.job) {
                e.on_device = e.on_device.saturating_sub(1);
            }
        }
        if !self.core.is_quarantined(device) {
            self.core.quarantine(device);
        }
    }
}

impl SchedulerActor {
    /// Asks `device` to drop `lease` if it has not started it.
    fn withdraw(&self, device: DeviceId, lease: LeaseId) {
        if let Some(addr) = self.devices.get(&device).and_then(|d| d.addr.as_ref()) {
            addr.do_send(Withdraw(lease));
        }
    }
}

impl Handler<Withdrawn> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: Withdrawn, _ctx: &mut Self::Context) {
        let bytes = self.on_device.remove(&msg.lease).unwrap_or(0);
        self.synthesis.release(bytes);
        if self.core.withdrawn(msg.lease) {
            if let Some(e) = self.jobs.get_mut(&msg.job) {
                e.on_device = e.on_device.saturating_sub(1);
            }
        }
        self.after_change();
    }
}

impl Handler<DeviceDown> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: DeviceDown, _ctx: &mut Self::Context) {
        self.device_down(msg.device, msg.reason);
        self.after_change();
    }
}

impl Handler<Await> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: Await, ctx: &mut Self::Context) {
        if let Some(f) = self.finished.get(&msg.job) {
            let _ = msg.reply.send(f.to_result(msg.job));
            return;
        }
        if !self.is_live(msg.job) {
            let _ = msg.reply.send(Err(Error::UnknownJob(msg.job)));
            return;
        }
        self.next_waiter += 1;
        let wid = self.next_waiter;
        self.waiters
            .entry(msg.job)
            .or_default()
            .push((wid, msg.reply));
        if let Some(t) = msg.timeout {
            let job = msg.job;
            ctx.run_later(t, move |act, _ctx| {
                if let Some(ws) = act.waiters.get_mut(&job) {
                    if let Some(i) = ws.iter().position(|(id, _)| *id == wid) {
                        let (_, w) = ws.swap_remove(i);
                        let _ = w.send(Err(Error::Timeout { job, waited: t }));
                    }
                }
            });
        }
    }
}

impl Handler<Cancel> for SchedulerActor {
    type Result = Result<bool>;

    fn handle(&mut self, msg: Cancel, _ctx: &mut Self::Context) -> Self::Result {
        if !self.is_live(msg.0) && !self.finished.contains_key(&msg.0) {
            return Err(Error::UnknownJob(msg.0));
        }
        let was_running = self.core.cancel(msg.0);
        self.after_change();
        Ok(was_running)
    }
}

impl Handler<GetStatus> for SchedulerActor {
    type Result = actix::MessageResult<GetStatus>;

    fn handle(&mut self, _msg: GetStatus, _ctx: &mut Self::Context) -> Self::Result {
        actix::MessageResult(self.status())
    }
}

impl Handler<Shutdown> for SchedulerActor {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, ctx: &mut Self::Context) {
        self.draining = true;
        self.shutdown_replies.push(msg.reply);
        if self.holds_no_job() {
            self.complete_shutdown();
            return;
        }
        info!(jobs = self.jobs.len(), grace = ?msg.grace, "shutting down: finishing running jobs");
        ctx.run_later(msg.grace, |act, _ctx| {
            let ids: Vec<JobId> = act.jobs.keys().copied().collect();
            for id in ids {
                act.cancel_reasons
                    .insert(id, "the engine shut down before it finished".into());
                act.core.cancel(id);
            }
            act.after_change();
        });
    }
}
