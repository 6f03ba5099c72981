//! The daemon's handle on the proving engine: the one seam between the gRPC service and
//! the runtime that proves.
//!
//! The service speaks only to [`DaemonEngine`], in the daemon's own types ([`Submitted`],
//! [`JobEnd`], [`Snapshot`], ...), so the runtime underneath can change without touching
//! the service.
//!
//! Until the actor runtime's `Engine` (crate `cuzk-actors`) lands, this module runs jobs
//! itself: one prover thread takes jobs in priority order (first come first served within a
//! priority) and proves them with the engine's CPU pipeline, which is multi-threaded inside.
//! A running job cannot be interrupted there, so cancelling it answers its waiters at once
//! and discards the result when the prover thread finishes.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cuzk_actors::Priority;
use tokio::sync::watch;

use crate::{CpuBackend, ProofKind, ProofRequest, ProveOptions, RegisteredProof, SrsStore};

/// Why a submission was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The request is malformed or inconsistent.
    #[error("{0}")]
    Invalid(String),
    /// Too much work is queued.
    #[error("too busy: {0} jobs waiting or running; submit again later")]
    Backpressure(usize),
    /// The daemon is shutting down.
    #[error("the daemon is shutting down and accepts no new work")]
    ShuttingDown,
}

/// An accepted submission.
#[derive(Clone, Debug)]
pub struct Submitted {
    /// The job's id, as the wire carries it.
    pub job: String,
    /// True when the request id named a job already submitted.
    pub existing: bool,
    /// Jobs ahead of this one.
    pub queue_position: usize,
}

/// Measured durations of a finished job.
#[derive(Clone, Debug, Default)]
pub struct PhaseTimes {
    /// Waiting in the queue.
    pub queue_wait: Duration,
    /// Building circuits from the vanilla proofs.
    pub plan: Duration,
    /// Loading parameters (zero when they were loaded).
    pub srs_load: Duration,
    /// Synthesis (witness and a/b/c evaluations), summed over partitions.
    pub synthesis: Duration,
    /// NTT and MSMs on the device, summed over partitions.
    pub prove: Duration,
    /// Verification, summed over partitions.
    pub verify: Duration,
    /// Submission to end.
    pub total: Duration,
}

impl PhaseTimes {
    /// `(phase name, duration)` pairs, as metrics and the wire name them.
    pub fn phases(&self) -> [(&'static str, Duration); 6] {
        [
            ("queue_wait", self.queue_wait),
            ("plan", self.plan),
            ("srs_load", self.srs_load),
            ("synthesis", self.synthesis),
            ("prove", self.prove),
            ("verify", self.verify),
        ]
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
    /// Devices the partitions ran on.
    pub devices: Vec<String>,
}

/// How a job ended.
#[derive(Clone, Debug)]
pub enum JobEnd {
    /// Proved (and verified).
    Completed(Arc<Done>),
    /// Failed; `cause` is a short class for metrics (`invalid-input`, `params`, ...).
    Failed {
        /// The engine's message.
        message: String,
        /// The failure class.
        cause: &'static str,
        /// Durations up to the failure.
        timings: PhaseTimes,
    },
    /// Cancelled by a caller or by shutdown.
    Cancelled {
        /// Who cancelled.
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
    /// No such job (never submitted, or forgotten after the retention time).
    Unknown,
}

/// What a cancellation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// No such job.
    Unknown,
    /// The job had already ended.
    AlreadyEnded,
    /// Cancelled; `was_running` tells whether it had started.
    Cancelled {
        /// The job was running (its result will be discarded).
        was_running: bool,
    },
}

/// One finished job, as metrics see it.
#[derive(Clone, Debug)]
pub struct JobReport {
    /// Proof kind.
    pub kind: ProofKind,
    /// How it ended.
    pub end: JobEnd,
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
    /// Memory in bytes (device memory; 0 for the CPU).
    pub vram_total: u64,
    /// Free memory in bytes.
    pub vram_free: u64,
    /// Memory reserved by active leases in bytes.
    pub vram_leased: u64,
    /// The job running now, and its kind.
    pub current: Option<(String, ProofKind)>,
    /// The device receives no work after repeated failures.
    pub quarantined: bool,
    /// Time spent running work since start.
    pub busy: Duration,
}

/// Loaded parameters as status shows them.
#[derive(Clone, Debug)]
pub struct SrsView {
    /// The circuit.
    pub proof: RegisteredProof,
    /// Parameter identifier.
    pub identifier: String,
    /// Bytes.
    pub size_bytes: u64,
    /// Jobs using it now.
    pub users: u32,
}

/// One kind's queue.
#[derive(Clone, Debug)]
pub struct QueueView {
    /// Kind.
    pub kind: ProofKind,
    /// Jobs waiting.
    pub pending: u32,
    /// Jobs running.
    pub in_progress: u32,
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
}

/// What the engine is started with.
#[derive(Clone)]
pub struct EngineSettings {
    /// Parameter directory.
    pub params_dir: std::path::PathBuf,
    /// PCE cache directory.
    pub pce_dir: Option<std::path::PathBuf>,
    /// Jobs waiting or running at most.
    pub max_jobs: usize,
    /// Finished jobs stay awaitable this long.
    pub retention: Duration,
    /// Verify proofs before returning them.
    pub verify: bool,
    /// A job running longer fails (checked when it ends: the CPU pipeline cannot be
    /// interrupted).
    pub job_timeout: Option<Duration>,
    /// Called once per finished job.
    pub on_job_done: Arc<dyn Fn(&JobReport) + Send + Sync>,
}

enum Phase {
    Pending(Box<ProofRequest>),
    Running,
    Ended,
}

struct Job {
    kind: ProofKind,
    identifier: String,
    priority: Priority,
    seq: u64,
    submitted: Instant,
    phase: Phase,
    end: watch::Sender<Option<JobEnd>>,
    ended_at: Option<Instant>,
    request_key: Option<(String, [u8; 32])>,
}

#[derive(Default)]
struct State {
    jobs: HashMap<u64, Job>,
    queue: BTreeSet<(Reverse<Priority>, u64, u64)>,
    running: Option<u64>,
    by_request: HashMap<String, (u64, [u8; 32])>,
    next_id: u64,
    seq: u64,
    accepting: bool,
    stopped: bool,
    completed: u64,
    failed: u64,
    cancelled: u64,
    busy: Duration,
    /// Parameter identifiers seen, and a registered proof that uses each (for status).
    circuits: HashMap<String, RegisteredProof>,
}

struct Shared {
    settings: EngineSettings,
    store: SrsStore,
    state: Mutex<State>,
    wake: Condvar,
    started: Instant,
}

/// The daemon's engine handle. Cheap to clone.
#[derive(Clone)]
pub struct DaemonEngine {
    shared: Arc<Shared>,
}

/// The wire form of a job id.
fn job_name(id: u64) -> String {
    format!("job-{id}")
}

fn parse_job(name: &str) -> Option<u64> {
    name.strip_prefix("job-")?.parse().ok()
}

/// Classifies an engine error for metrics and the wire's `failure_cause`.
pub fn failure_cause(e: &crate::Error) -> &'static str {
    use crate::Error as E;
    match e {
        E::InvalidRequest(_) | E::Decode { .. } => "invalid-input",
        E::ParamsMissing { .. } | E::ParamsInvalid { .. } => "params",
        E::Synthesis { .. } => "synthesis",
        E::Prover { .. } => "device",
        E::VerificationFailed { .. } => "verification",
        E::Filecoin(_) => "filecoin",
        E::Io { .. } => "io",
    }
}

impl DaemonEngine {
    /// Starts the engine and its prover thread.
    pub fn start(settings: EngineSettings) -> super::error::Result<Self> {
        let store =
            SrsStore::new(settings.params_dir.clone()).with_pce_dir(settings.pce_dir.clone());
        let shared = Arc::new(Shared {
            settings,
            store,
            state: Mutex::new(State {
                accepting: true,
                ..State::default()
            }),
            wake: Condvar::new(),
            started: Instant::now(),
        });
        let worker = shared.clone();
        std::thread::Builder::new()
            .name("cuzk-prover".into())
            .spawn(move || prover_loop(&worker))
            .map_err(|e| {
                super::error::DaemonError::Engine(format!("cannot start the prover thread: {e}"))
            })?;
        Ok(DaemonEngine { shared })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    /// Validates `request` (builds its circuits: may take a second for a large PoRep, so call
    /// it off the async runtime) and queues it. With a `request_id` already used for the
    /// same request (`digest`), the existing job is returned; for a different request, an
    /// error.
    pub fn submit(
        &self,
        request: ProofRequest,
        priority: Priority,
        request_id: Option<(String, [u8; 32])>,
    ) -> Result<Submitted, SubmitError> {
        if let Some(found) = self.existing(&request_id)? {
            return Ok(found);
        }
        {
            let st = self.state();
            if !st.accepting {
                return Err(SubmitError::ShuttingDown);
            }
        }
        let plan =
            crate::circuits::plan(&request).map_err(|e| SubmitError::Invalid(e.to_string()))?;
        let identifier = plan.params_identifier.clone();
        drop(plan);
        let mut st = self.state();
        // Checked again: another call with the same id may have won while we planned.
        if let Some(found) = existing_locked(&st, &request_id)? {
            return Ok(found);
        }
        if !st.accepting {
            return Err(SubmitError::ShuttingDown);
        }
        self.prune(&mut st);
        let live = st.queue.len() + usize::from(st.running.is_some());
        if live >= self.shared.settings.max_jobs {
            return Err(SubmitError::Backpressure(live));
        }
        st.next_id += 1;
        st.seq += 1;
        let (id, seq) = (st.next_id, st.seq);
        let queue_position = st.queue.iter().filter(|(p, _, _)| p.0 >= priority).count()
            + usize::from(st.running.is_some());
        let (tx, _) = watch::channel(None);
        if let Some((rid, digest)) = &request_id {
            st.by_request.insert(rid.clone(), (id, *digest));
        }
        st.circuits.insert(identifier.clone(), request.proof);
        st.jobs.insert(
            id,
            Job {
                kind: request.proof.kind,
                identifier,
                priority,
                seq,
                submitted: Instant::now(),
                phase: Phase::Pending(Box::new(request)),
                end: tx,
                ended_at: None,
                request_key: request_id,
            },
        );
        st.queue.insert((Reverse(priority), seq, id));
        drop(st);
        self.shared.wake.notify_all();
        Ok(Submitted {
            job: job_name(id),
            existing: false,
            queue_position,
        })
    }

    fn existing(
        &self,
        request_id: &Option<(String, [u8; 32])>,
    ) -> Result<Option<Submitted>, SubmitError> {
        existing_locked(&self.state(), request_id)
    }

    /// Waits for `job` to end, at most `timeout` (`None`: until it ends).
    pub async fn wait(&self, job: &str, timeout: Option<Duration>) -> WaitOutcome {
        let rx = {
            let st = self.state();
            match parse_job(job).and_then(|id| st.jobs.get(&id)) {
                Some(j) => j.end.subscribe(),
                None => return WaitOutcome::Unknown,
            }
        };
        let mut rx = rx;
        let ended = async {
            match rx.wait_for(|e| e.is_some()).await {
                Ok(v) => v.clone(),
                Err(_) => None,
            }
        };
        let res = match timeout {
            Some(t) => match tokio::time::timeout(t, ended).await {
                Ok(r) => r,
                Err(_) => return WaitOutcome::Timeout,
            },
            None => ended.await,
        };
        match res {
            Some(end) => WaitOutcome::Ended(end),
            None => WaitOutcome::Unknown,
        }
    }

    /// Cancels `job`: a pending job is dropped from the queue; a running one is answered
    /// as cancelled at once and its result discarded.
    pub fn cancel(&self, job: &str, why: &str) -> CancelOutcome {
        let mut st = self.state();
        let Some(id) = parse_job(job) else {
            return CancelOutcome::Unknown;
        };
        let Some(j) = st.jobs.get(&id) else {
            return CancelOutcome::Unknown;
        };
        let was_running = match j.phase {
            Phase::Ended => return CancelOutcome::AlreadyEnded,
            Phase::Running => true,
            Phase::Pending(_) => false,
        };
        let key = (Reverse(j.priority), j.seq, id);
        st.queue.remove(&key);
        self.finish_locked(
            &mut st,
            id,
            JobEnd::Cancelled {
                message: why.to_string(),
            },
        );
        CancelOutcome::Cancelled { was_running }
    }

    fn finish_locked(&self, st: &mut State, id: u64, end: JobEnd) {
        let Some(j) = st.jobs.get_mut(&id) else {
            return;
        };
        if matches!(j.phase, Phase::Ended) {
            return;
        }
        j.phase = Phase::Ended;
        j.ended_at = Some(Instant::now());
        let kind = j.kind;
        j.end.send_replace(Some(end.clone()));
        match &end {
            JobEnd::Completed(_) => st.completed += 1,
            JobEnd::Failed { .. } => st.failed += 1,
            JobEnd::Cancelled { .. } => st.cancelled += 1,
        }
        (self.shared.settings.on_job_done)(&JobReport { kind, end });
    }

    fn prune(&self, st: &mut State) {
        let keep = self.shared.settings.retention;
        let old: Vec<u64> = st
            .jobs
            .iter()
            .filter(|(_, j)| j.ended_at.is_some_and(|t| t.elapsed() > keep))
            .map(|(id, _)| *id)
            .collect();
        for id in old {
            if let Some(j) = st.jobs.remove(&id) {
                if let Some((rid, _)) = j.request_key {
                    st.by_request.remove(&rid);
                }
            }
        }
    }

    /// A status snapshot.
    pub fn status(&self) -> Snapshot {
        let st = self.state();
        let mut queues: Vec<QueueView> = ProofKind::ALL
            .iter()
            .map(|k| QueueView {
                kind: *k,
                pending: 0,
                in_progress: 0,
            })
            .collect();
        let mut users: HashMap<String, u32> = HashMap::new();
        for j in st.jobs.values() {
            let q = queues.iter_mut().find(|q| q.kind == j.kind);
            match (&j.phase, q) {
                (Phase::Pending(_), Some(q)) => q.pending += 1,
                (Phase::Running, Some(q)) => {
                    q.in_progress += 1;
                    *users.entry(j.identifier.clone()).or_default() += 1;
                }
                _ => {}
            }
        }
        let current = st.running.and_then(|id| {
            st.jobs
                .get(&id)
                .filter(|j| matches!(j.phase, Phase::Running))
                .map(|j| (job_name(id), j.kind))
        });
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let cpu = DeviceView {
            ordinal: 0,
            name: format!("cpu ({threads} threads)"),
            current,
            busy: st.busy,
            ..DeviceView::default()
        };
        let srs = self
            .shared
            .store
            .loaded()
            .into_iter()
            .filter_map(|(identifier, size_bytes)| {
                Some(SrsView {
                    users: users.get(&identifier).copied().unwrap_or(0),
                    proof: *st.circuits.get(&identifier)?,
                    identifier,
                    size_bytes,
                })
            })
            .collect();
        Snapshot {
            devices: vec![cpu],
            srs,
            queues,
            completed: st.completed,
            failed: st.failed,
            cancelled: st.cancelled,
            uptime: self.shared.started.elapsed(),
            shutting_down: !st.accepting,
        }
    }

    /// Loads `proof`'s parameters. Returns whether they were loaded already, the time it
    /// took, and their size in bytes.
    pub fn preload(&self, proof: RegisteredProof) -> crate::Result<(bool, Duration, u64)> {
        let identifier = crate::circuits::params_identifier(proof)?;
        self.state().circuits.insert(identifier.clone(), proof);
        let already = self
            .shared
            .store
            .loaded()
            .iter()
            .any(|(id, _)| *id == identifier);
        let t = Instant::now();
        let srs = self.shared.store.get(proof)?;
        Ok((
            already,
            if already { Duration::ZERO } else { t.elapsed() },
            srs.file_bytes,
        ))
    }

    /// Drops `proof`'s parameters. `Ok(None)`: they were not loaded; `Err(users)`: a running
    /// job uses them.
    pub fn evict(&self, proof: RegisteredProof) -> crate::Result<Result<Option<u64>, u32>> {
        let identifier = crate::circuits::params_identifier(proof)?;
        let st = self.state();
        let users = st
            .jobs
            .values()
            .filter(|j| matches!(j.phase, Phase::Running) && j.identifier == identifier)
            .count() as u32;
        if users > 0 {
            return Ok(Err(users));
        }
        let size = self
            .shared
            .store
            .loaded()
            .into_iter()
            .find(|(id, _)| *id == identifier)
            .map(|(_, b)| b);
        // Under the state lock: no job can start using them meanwhile.
        let was = self.shared.store.evict(proof)?;
        Ok(Ok(if was { size } else { None }))
    }

    /// Stops accepting work, lets queued and running work finish within `grace`, then
    /// cancels what is left. Every waiter is answered before this returns.
    pub async fn shutdown(&self, grace: Duration) {
        {
            let mut st = self.state();
            st.accepting = false;
        }
        let deadline = Instant::now() + grace;
        loop {
            let idle = {
                let st = self.state();
                st.queue.is_empty() && st.running.is_none()
            };
            if idle || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut st = self.state();
        let live: Vec<u64> = st
            .jobs
            .iter()
            .filter(|(_, j)| !matches!(j.phase, Phase::Ended))
            .map(|(id, _)| *id)
            .collect();
        st.queue.clear();
        for id in live {
            self.finish_locked(
                &mut st,
                id,
                JobEnd::Cancelled {
                    message: "cancelled: the daemon shut down before the job finished".into(),
                },
            );
        }
        st.stopped = true;
        drop(st);
        self.shared.wake.notify_all();
    }
}

fn existing_locked(
    st: &State,
    request_id: &Option<(String, [u8; 32])>,
) -> Result<Option<Submitted>, SubmitError> {
    let Some((rid, digest)) = request_id else {
        return Ok(None);
    };
    let Some((id, known)) = st.by_request.get(rid) else {
        return Ok(None);
    };
    if known != digest {
        return Err(SubmitError::Invalid(format!(
            "request_id {rid:?} was already used for a different request ({}); use a new request_id",
            job_name(*id)
        )));
    }
    Ok(Some(Submitted {
        job: job_name(*id),
        existing: true,
        queue_position: 0,
    }))
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock leaves consistent bookkeeping (updates are single
    // statements); keep serving rather than poison every later call.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn prover_loop(shared: &Arc<Shared>) {
    let handle = DaemonEngine {
        shared: shared.clone(),
    };
    loop {
        let (id, request, queued_for) = {
            let mut st = lock(&shared.state);
            loop {
                if st.stopped {
                    return;
                }
                if let Some(first) = st.queue.iter().next().copied() {
                    st.queue.remove(&first);
                    let id = first.2;
                    let Some(j) = st.jobs.get_mut(&id) else {
                        continue;
                    };
                    let Phase::Pending(_) = j.phase else { continue };
                    let Phase::Pending(req) = std::mem::replace(&mut j.phase, Phase::Running)
                    else {
                        continue;
                    };
                    let waited = j.submitted.elapsed();
                    st.running = Some(id);
                    break (id, req, waited);
                }
                st = shared.wake.wait(st).unwrap_or_else(|p| p.into_inner());
            }
        };
        let span = tracing::info_span!("job", id = %job_name(id), kind = %request.proof.kind);
        let _g = span.enter();
        let t = Instant::now();
        let opts = ProveOptions {
            verify: shared.settings.verify,
            ..ProveOptions::default()
        };
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::prove(&shared.store, &CpuBackend, &request, &opts, &|_| {})
        }));
        let ran = t.elapsed();
        drop(request);
        let end = match out {
            Ok(Ok(o)) => match shared.settings.job_timeout {
                Some(limit) if ran > limit => JobEnd::Failed {
                    message: format!(
                        "the job ran {:.1}s, over the {}s limit",
                        ran.as_secs_f64(),
                        limit.as_secs()
                    ),
                    cause: "timeout",
                    timings: PhaseTimes::default(),
                },
                _ => JobEnd::Completed(Arc::new(Done {
                    partitions: o.partitions.len(),
                    verified: o.verified,
                    devices: vec!["cpu".into()],
                    timings: PhaseTimes {
                        queue_wait: queued_for,
                        plan: o.timings.plan,
                        srs_load: o.timings.srs_load,
                        synthesis: o.timings.synthesis,
                        prove: o.timings.prove,
                        verify: o.timings.verify,
                        total: queued_for + ran,
                    },
                    proof: o.bytes,
                })),
            },
            Ok(Err(e)) => JobEnd::Failed {
                cause: failure_cause(&e),
                message: e.to_string(),
                timings: PhaseTimes {
                    queue_wait: queued_for,
                    total: queued_for + ran,
                    ..PhaseTimes::default()
                },
            },
            Err(_) => JobEnd::Failed {
                message: "the prover panicked on this input".into(),
                cause: "panic",
                timings: PhaseTimes::default(),
            },
        };
        let mut st = lock(&shared.state);
        st.busy += ran;
        st.running = None;
        // A job cancelled while it ran is already answered: its result is discarded here.
        handle.finish_locked(&mut st, id, end);
    }
}
