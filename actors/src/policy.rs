//! The scheduling policy: in what order partitions are synthesised and leased, what the host
//! and the devices may hold, and what happens after a failure. All of it is pure and
//! synchronous (`&mut self`, no clocks of its own, no threads), so the scheduler actor that
//! applies it stays plumbing and simulation tests can drive thousands of partitions through
//! it in milliseconds.
//!
//! - Priorities: each kind's default class ([`default_priority`]); waiting partitions are
//!   taken highest priority first, first come first served within a priority, both for
//!   synthesis ([`SynthesisQueue`]) and for devices ([`SchedulerCore`]); a submission is told
//!   how many partitions are ahead of it ([`partitions_ahead`]).
//! - Host memory: synthesis waits while synthesised partitions hold the budget
//!   ([`SynthesisQueue`]).
//! - Devices: leases, retries, quarantine, cancellation and lease timeouts
//!   ([`SchedulerCore`]).
//!
//! Invariants [`SchedulerCore`] keeps (I1-I5 of docs/architecture.md):
//! - I1/I2 through the [`LeaseTable`];
//! - I3: each partition of an accepted job is recorded done exactly once, or the job ends
//!   failed or cancelled; results of revoked or cancelled leases are discarded;
//! - a lease whose device finished its part ([`SchedulerCore::left_device`]) no longer holds
//!   the device (its slot and VRAM are free for the next partition) but its partition's
//!   result is still pending: it is recorded, discarded or retried by
//!   [`SchedulerCore::complete`] exactly as for an active lease, so I3 holds unchanged;
//! - I5: a device asking for work gets the highest-priority waiting partition it may run
//!   (first come first served within a priority). A partition that failed on a device waits
//!   for another device when there is one, so a lower-priority partition may run on the
//!   failing device meanwhile.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use cuzk_engine::ProofKind;

use crate::error::{Error, Result};
use crate::failure::{Failure, FailureCause};
use crate::identity::DeviceId;
use crate::job::WorkKind;
pub use crate::job::{JobId, Priority};
use crate::lease::{Lease, LeaseId, LeaseTable, SharedVram};

/// The default priority of a kind: WinningPoSt (a block is at stake) above WindowPoSt above
/// PoRep and SnapDeals.
pub fn default_priority(kind: WorkKind) -> Priority {
    match kind {
        WorkKind::Proof(ProofKind::WinningPost) => Priority::Critical,
        WorkKind::Proof(ProofKind::WindowPost) => Priority::High,
        _ => Priority::Normal,
    }
}

/// Partitions of other jobs ahead of a job of `priority`, the `seq`-th submitted: those of
/// jobs of a higher priority, or of the same priority submitted earlier. `others` holds
/// (priority, submission order, partitions not yet proved) of every other running job.
pub fn partitions_ahead(
    priority: Priority,
    seq: u64,
    others: impl IntoIterator<Item = (Priority, u64, usize)>,
) -> usize {
    others
        .into_iter()
        .filter(|&(p, s, _)| queue_key(p, s, 0, 0) < queue_key(priority, seq, 0, 0))
        .map(|(_, _, left)| left)
        .sum()
}

/// What the scheduler needs to know of a job.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// Priority class.
    pub priority: Priority,
    /// Number of partitions.
    pub partitions: usize,
    /// VRAM one partition's GPU phase needs, in bytes.
    pub vram_per_partition: u64,
}

/// Limits of the scheduler.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Attempts per partition before its job fails.
    pub max_attempts: u32,
    /// Consecutive failures after which a device is quarantined.
    pub quarantine_after: u32,
    /// Partitions waiting at most; submissions beyond are refused (back-pressure).
    pub max_waiting_partitions: usize,
    /// A lease not completed within this time is revoked and its partition re-run.
    pub lease_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_attempts: 3,
            quarantine_after: 3,
            max_waiting_partitions: 100_000,
            lease_timeout: Duration::from_secs(600),
        }
    }
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobOutcome<T> {
    /// Every partition's output, in partition order.
    Completed(Vec<T>),
    /// A partition failed too often, or no device can run it, or the job was failed from
    /// outside ([`SchedulerCore::fail`]).
    Failed(Failure),
    /// Cancelled by the caller.
    Cancelled,
}

/// What became of a completion report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Recorded.
    Accepted,
    /// The lease had been revoked or its job cancelled: the result is discarded.
    Discarded,
}

struct Job<T> {
    spec: JobSpec,
    seq: u64,
    outputs: Vec<Option<T>>,
    attempts: Vec<u32>,
    remaining: usize,
    outcome: Option<JobOutcome<T>>,
    /// Partitions wait for [`SchedulerCore::ready`] before they may be leased, and go back to
    /// the owner for new input after a failure (the input was consumed by the device).
    staged: bool,
    /// The part of `spec.vram_per_partition` that is the circuit's parameters, shared with
    /// other leases of the same circuit on a device ([`SchedulerCore::set_shared_vram`]).
    shared: Option<SharedVram>,
}

/// Waiting partitions, ordered by (priority desc, submission order, partition).
type QueueKey = (Reverse<Priority>, u64, JobId, usize);

/// Where partition `p` of `job` (of `priority`, the `seq`-th submitted) waits in a queue.
fn queue_key(priority: Priority, seq: u64, job: JobId, p: usize) -> QueueKey {
    (Reverse(priority), seq, job, p)
}

/// The scheduler's state. `T` is a partition's output (a proof, or a simulated token).
pub struct SchedulerCore<T> {
    limits: Limits,
    leases: LeaseTable,
    /// Leases whose device has finished its part, and whose result is being checked on the
    /// host: out of the lease table, not yet completed.
    checking: HashMap<LeaseId, Lease>,
    waiting: BTreeSet<QueueKey>,
    avoid: HashMap<(JobId, usize), DeviceId>,
    jobs: HashMap<JobId, Job<T>>,
    lease_started: HashMap<LeaseId, Instant>,
    failures: HashMap<DeviceId, u32>,
    quarantined: Vec<DeviceId>,
    next_job: JobId,
    seq: u64,
    needs_input: Vec<(JobId, usize)>,
    finished: Vec<JobId>,
}

impl<T: Clone> SchedulerCore<T> {
    /// A scheduler over the devices of `leases`.
    pub fn new(leases: LeaseTable, limits: Limits) -> Self {
        SchedulerCore {
            limits,
            leases,
            checking: HashMap::new(),
            waiting: BTreeSet::new(),
            avoid: HashMap::new(),
            jobs: HashMap::new(),
            lease_started: HashMap::new(),
            failures: HashMap::new(),
            quarantined: Vec::new(),
            next_job: 0,
            seq: 0,
            needs_input: Vec::new(),
            finished: Vec::new(),
        }
    }

    /// Accepts a job whose partitions may be leased at once, or refuses it when too many
    /// partitions wait (back-pressure) or the job is empty.
    pub fn submit(&mut self, spec: JobSpec) -> Result<JobId> {
        self.accept(spec, false)
    }

    /// Accepts a job whose partitions are not ready yet: each waits for
    /// [`ready`](Self::ready) (its input, e.g. a synthesised witness, exists) before it may be
    /// leased, and a partition whose attempt failed is handed back through
    /// [`take_needing_input`](Self::take_needing_input) instead of being queued again, since
    /// the failed attempt consumed its input.
    pub fn submit_staged(&mut self, spec: JobSpec) -> Result<JobId> {
        self.accept(spec, true)
    }

    fn accept(&mut self, spec: JobSpec, staged: bool) -> Result<JobId> {
        if spec.partitions == 0 {
            return Err(Error::Rejected("a job needs at least one partition".into()));
        }
        if self.waiting.len() + spec.partitions > self.limits.max_waiting_partitions {
            return Err(Error::Backpressure(self.waiting.len()));
        }
        self.next_job += 1;
        self.seq += 1;
        let id = self.next_job;
        if !staged {
            for p in 0..spec.partitions {
                self.waiting
                    .insert(queue_key(spec.priority, self.seq, id, p));
            }
        }
        self.jobs.insert(
            id,
            Job {
                outputs: vec![None; spec.partitions],
                attempts: vec![0; spec.partitions],
                remaining: spec.partitions,
                seq: self.seq,
                spec,
                outcome: None,
                staged,
                shared: None,
            },
        );
        Ok(id)
    }

    /// A staged partition's input exists: it may now be leased. Returns false (and queues
    /// nothing) when the job has ended or the partition is already done or queued.
    pub fn ready(&mut self, job_id: JobId, p: usize) -> bool {
        let Some(job) = self.jobs.get(&job_id) else {
            return false;
        };
        if job.outcome.is_some() || p >= job.outputs.len() || job.outputs[p].is_some() {
            return false;
        }
        self.waiting
            .insert(queue_key(job.spec.priority, job.seq, job_id, p))
    }

    /// Staged partitions whose attempt failed and which need new input before another
    /// attempt, oldest first. Partitions of jobs that have ended are left out.
    pub fn take_needing_input(&mut self) -> Vec<(JobId, usize)> {
        let all = std::mem::take(&mut self.needs_input);
        all.into_iter()
            .filter(|(j, _)| self.jobs.get(j).is_some_and(|job| job.outcome.is_none()))
            .collect()
    }

    /// Jobs that ended (completed, failed or cancelled) since the last call, in the order they
    /// ended; their outcomes are taken with [`take_outcome`](Self::take_outcome).
    pub fn take_finished(&mut self) -> Vec<JobId> {
        std::mem::take(&mut self.finished)
    }

    fn end(&mut self, job_id: JobId, outcome: JobOutcome<T>) {
        if let Some(job) = self.jobs.get_mut(&job_id) {
            if job.outcome.is_none() {
                job.outcome = Some(outcome);
                self.finished.push(job_id);
            }
        }
    }

    /// The device holding `lease` has started proving it: the lease's timeout counts from
    /// `now`, not from the grant (a pipelining device holds a second lease while it proves
    /// the first; that wait is not a hang). Nothing happens for a lease no longer active.
    pub fn began(&mut self, lease: LeaseId, now: Instant) {
        if let Some(t) = self.lease_started.get_mut(&lease) {
            *t = now;
        }
    }

    /// A device with room asks for work: the highest-priority waiting partition that fits it
    /// is leased to it. `None` when nothing fits or the device is quarantined.
    pub fn next_for(&mut self, device: DeviceId, now: Instant) -> Option<Lease> {
        if self.quarantined.contains(&device) {
            return None;
        }
        let pick = self
            .waiting
            .iter()
            .copied()
            .find(|&(_, _, job, p)| self.eligible(device, job, p))?;
        let (_, _, job, p) = pick;
        let entry = self.jobs.get(&job)?;
        let (bytes, shared) = (entry.spec.vram_per_partition, entry.shared);
        let lease = self
            .leases
            .grant_shared(device, job, p, bytes, shared)
            .ok()?;
        self.waiting.remove(&pick);
        self.lease_started.insert(lease.id, now);
        Some(lease)
    }

    /// The device holding `lease` has finished its part of the partition (its result is
    /// computed and now checked on the host): the lease leaves the lease table, so the
    /// device's slot and VRAM are free for its next partition, while the partition's result
    /// stays pending until [`complete`](Self::complete) (which accepts, discards or retries it
    /// exactly as for an active lease) or the lease's timeout. Returns false, changing
    /// nothing, for a lease that is not active (revoked, withdrawn, already left).
    pub fn left_device(&mut self, lease: LeaseId) -> bool {
        match self.leases.release(lease) {
            Ok(l) => {
                self.checking.insert(lease, l);
                true
            }
            Err(_) => false,
        }
    }

    /// Whether `lease` still counts: active on its device, or left it with its result
    /// pending ([`left_device`](Self::left_device)).
    pub fn is_pending(&self, lease: LeaseId) -> bool {
        self.checking.contains_key(&lease) || self.leases.is_active(lease)
    }

    /// Leases whose device has finished its part and whose result is pending.
    pub fn checking(&self) -> usize {
        self.checking.len()
    }

    /// Ends `lease`, active or left its device, and returns it; `None` when it ended already.
    fn end_lease(&mut self, lease: LeaseId) -> Option<Lease> {
        let l = match self.leases.release(lease) {
            Ok(l) => Some(l),
            Err(_) => self.checking.remove(&lease),
        };
        self.lease_started.remove(&lease);
        l
    }

    /// Records a partition's result (or error) and ends its lease (active, or left its
    /// device with the result pending).
    pub fn complete(
        &mut self,
        lease: LeaseId,
        result: std::result::Result<T, Failure>,
    ) -> Completion {
        let Some(l) = self.end_lease(lease) else {
            return Completion::Discarded; // revoked (timeout, lost device) earlier
        };
        let Some(job) = self.jobs.get_mut(&l.job) else {
            return Completion::Discarded;
        };
        if job.outcome.is_some() {
            return Completion::Discarded; // cancelled or already failed
        }
        match result {
            Ok(out) => {
                self.failures.insert(l.device, 0);
                if job.outputs[l.partition].is_none() {
                    job.outputs[l.partition] = Some(out);
                    job.remaining -= 1;
                }
                if job.remaining == 0 {
                    let outs = job.outputs.iter_mut().filter_map(Option::take).collect();
                    self.end(l.job, JobOutcome::Completed(outs));
                }
                Completion::Accepted
            }
            Err(failure) => {
                // the partition's own attempt first: if its attempts are spent, its job fails
                // with this failure's cause, not with what quarantining the device leads to
                self.retry(l.job, l.partition, Some(l.device), &failure);
                let f = self.failures.entry(l.device).or_insert(0);
                *f += 1;
                if *f >= self.limits.quarantine_after && !self.quarantined.contains(&l.device) {
                    self.quarantine(l.device);
                }
                Completion::Accepted
            }
        }
    }

    /// Queues partition `p` again after a failed attempt, or fails its job once the attempts
    /// are spent, with the last attempt's cause.
    fn retry(&mut self, job_id: JobId, p: usize, failed_on: Option<DeviceId>, last: &Failure) {
        let max = self.limits.max_attempts;
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return;
        };
        if job.outcome.is_some() {
            return;
        }
        job.attempts[p] += 1;
        if job.attempts[p] >= max {
            let why = Failure::new(
                last.cause,
                format!(
                    "partition {p} failed {} times; last error: {}",
                    job.attempts[p], last.message
                ),
            );
            self.end(job_id, JobOutcome::Failed(why));
            self.waiting.retain(|&(_, _, j, _)| j != job_id);
            return;
        }
        if let Some(d) = failed_on {
            if self.leases.devices().count() > 1 {
                self.avoid.insert((job_id, p), d);
            }
        }
        self.requeue(job_id, p);
    }

    /// Queues partition `p` of a running job again: it waits for a device, or (staged jobs,
    /// whose input a device consumed) for new input first.
    fn requeue(&mut self, job_id: JobId, p: usize) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        let (priority, seq, staged) = (job.spec.priority, job.seq, job.staged);
        if staged {
            self.needs_input.push((job_id, p));
        } else {
            self.waiting.insert(queue_key(priority, seq, job_id, p));
        }
    }

    /// A device dropped `lease` before starting it, because its result would have been
    /// discarded (its job ended, or the lease was revoked). Ends the lease if it is still
    /// active, and queues the partition again (no attempt counted: it never ran) in the
    /// unexpected case that its job still runs. Returns whether the lease was still active.
    pub fn withdrawn(&mut self, lease: LeaseId) -> bool {
        let Ok(l) = self.leases.release(lease) else {
            return false; // revoked earlier: its partition was queued again then
        };
        self.lease_started.remove(&lease);
        if self.jobs.get(&l.job).is_some_and(|j| j.outcome.is_none()) {
            self.requeue(l.job, l.partition);
        }
        true
    }

    /// Removes a device (lost, or failing too often): its active leases are revoked and
    /// their partitions queued again.
    pub fn quarantine(&mut self, device: DeviceId) {
        self.quarantined.push(device);
        for l in self.leases.remove_device(device) {
            self.lease_started.remove(&l.id);
            let why = Failure::new(FailureCause::Device, "device quarantined");
            self.retry(l.job, l.partition, None, &why);
        }
        self.fail_unrunnable();
    }

    /// Fails jobs no remaining device can ever run (no devices left, or too little VRAM).
    fn fail_unrunnable(&mut self) {
        if self.leases.devices().next().is_some() {
            return;
        }
        let ids: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.outcome.is_none())
            .map(|(i, _)| *i)
            .collect();
        for id in ids {
            let why = Failure::new(FailureCause::Device, "no usable device remains");
            self.end(id, JobOutcome::Failed(why));
        }
        self.waiting.clear();
    }

    /// Revokes leases older than the timeout (a hung device) and queues their partitions on
    /// other devices; their late results will be discarded. Returns the revoked leases.
    pub fn expire(&mut self, now: Instant) -> Vec<Lease> {
        let timeout = self.limits.lease_timeout;
        let stale: Vec<LeaseId> = self
            .lease_started
            .iter()
            .filter(|(_, t)| now.saturating_duration_since(**t) >= timeout)
            .map(|(id, _)| *id)
            .collect();
        let mut out = Vec::new();
        for id in stale {
            if let Some(l) = self.end_lease(id) {
                *self.failures.entry(l.device).or_insert(0) += 1;
                let why = Failure::new(
                    FailureCause::Device,
                    format!("lease timed out on {} after {timeout:?}", l.device),
                );
                self.retry(l.job, l.partition, Some(l.device), &why);
                out.push(l);
            }
        }
        out
    }

    /// Cancels a job: its waiting partitions are dropped; results of its active leases will be
    /// discarded. Returns whether it was still running.
    pub fn cancel(&mut self, job_id: JobId) -> bool {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return false;
        };
        if job.outcome.is_some() {
            return false;
        }
        self.end(job_id, JobOutcome::Cancelled);
        self.waiting.retain(|&(_, _, j, _)| j != job_id);
        true
    }

    /// Takes a finished job's outcome (the job is then forgotten).
    pub fn take_outcome(&mut self, job: JobId) -> Option<JobOutcome<T>> {
        let done = self.jobs.get(&job)?.outcome.is_some();
        if !done {
            return None;
        }
        self.jobs.remove(&job).and_then(|j| j.outcome)
    }

    /// The highest priority among waiting partitions.
    pub fn best_waiting_priority(&self) -> Option<Priority> {
        self.waiting.iter().next().map(|k| k.0 .0)
    }

    /// The highest priority among waiting partitions that `device` may run now (it fits, and
    /// the partition did not just fail there while other devices exist).
    pub fn best_waiting_priority_for(&self, device: DeviceId) -> Option<Priority> {
        self.waiting
            .iter()
            .find(|&&(_, _, job, p)| self.eligible(device, job, p))
            .map(|k| k.0 .0)
    }

    fn eligible(&self, device: DeviceId, job: JobId, p: usize) -> bool {
        let (bytes, shared) = self
            .jobs
            .get(&job)
            .map_or((0, None), |j| (j.spec.vram_per_partition, j.shared));
        self.avoid.get(&(job, p)) != Some(&device)
            && self.leases.can_grant_shared(device, bytes, shared)
    }

    /// Fails a job from outside (its input could not be built, its deadline passed): waiting
    /// partitions are dropped and results of its active leases will be discarded. Returns
    /// whether it was still running.
    pub fn fail(&mut self, job_id: JobId, reason: Failure) -> bool {
        let running = self.jobs.get(&job_id).is_some_and(|j| j.outcome.is_none());
        if running {
            self.end(job_id, JobOutcome::Failed(reason));
            self.waiting.retain(|&(_, _, j, _)| j != job_id);
        }
        running
    }

    /// Sets the device memory each partition of a job reserves (known once its parameters
    /// are loaded); applies to leases granted from now on.
    pub fn set_vram_per_partition(&mut self, job_id: JobId, bytes: u64) {
        if let Some(job) = self.jobs.get_mut(&job_id) {
            job.spec.vram_per_partition = bytes;
        }
    }

    /// Says which part of a job's per-partition reservation is its circuit's parameters
    /// (`shared.key` names the circuit): a device reserves that part once for all the leases
    /// of the circuit it holds, so a second lease of the same circuit (pipelining) needs only
    /// the partition's own memory. Applies to leases granted from now on.
    pub fn set_shared_vram(&mut self, job_id: JobId, shared: SharedVram) {
        if let Some(job) = self.jobs.get_mut(&job_id) {
            job.shared = Some(shared);
        }
    }

    /// Whether `device` is quarantined.
    pub fn is_quarantined(&self, device: DeviceId) -> bool {
        self.quarantined.contains(&device)
    }

    /// Partitions waiting for a device.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Jobs not yet taken.
    pub fn jobs(&self) -> usize {
        self.jobs.len()
    }

    /// The lease table (read only).
    pub fn leases(&self) -> &LeaseTable {
        &self.leases
    }

    /// Devices quarantined so far.
    pub fn quarantined(&self) -> &[DeviceId] {
        &self.quarantined
    }
}

/// The partitions waiting for synthesis, and what synthesis may take of the host. A
/// partition goes to a synthesis worker, highest priority first (first come first served
/// within a priority), while a worker is free and the host-memory budget allows; one
/// partition may always be in flight, so a budget smaller than a partition still makes
/// progress, one at a time. A partition's bytes count from then until the scheduler releases
/// them (its input was consumed by a device, or dropped). Host vectors kept for reuse
/// ([`set_kept`](Self::set_kept)) count too: a new partition takes its room from them first,
/// so admitting it brings the host to `used + max(its bytes, kept)`.
#[derive(Debug)]
pub struct SynthesisQueue {
    waiting: BTreeSet<QueueKey>,
    workers: usize,
    in_flight: usize,
    host_budget: u64,
    host_used: u64,
    kept: u64,
}

impl SynthesisQueue {
    /// A queue for `workers` synthesis workers (at least 1) under `host_budget` bytes.
    pub fn new(workers: usize, host_budget: u64) -> Self {
        SynthesisQueue {
            waiting: BTreeSet::new(),
            workers: workers.max(1),
            in_flight: 0,
            host_budget,
            host_used: 0,
            kept: 0,
        }
    }

    /// Bytes of host vectors kept for the next partitions now (`cuzk_pce::buffers`).
    pub fn set_kept(&mut self, bytes: u64) {
        self.kept = bytes;
    }

    /// Queues partition `p` of `job`, of `priority` and the `seq`-th submitted.
    pub fn push(&mut self, priority: Priority, seq: u64, job: JobId, p: usize) {
        self.waiting.insert(queue_key(priority, seq, job, p));
    }

    /// The next partition to synthesise and its bytes, if a worker is free and the budget
    /// allows; its bytes count as used from now. `host_bytes(job)` is what one partition of
    /// `job` holds in host memory once synthesised, or `None` for a job that cannot be
    /// synthesised (any more): its waiting partitions are dropped.
    pub fn next(
        &mut self,
        host_bytes: impl Fn(JobId) -> Option<u64>,
    ) -> Option<(JobId, usize, u64)> {
        while self.in_flight < self.workers {
            let &key = self.waiting.iter().next()?;
            let (_, _, job, p) = key;
            let Some(bytes) = host_bytes(job) else {
                self.forget(job);
                continue;
            };
            let after = self.host_used.saturating_add(bytes.max(self.kept));
            if self.host_used > 0 && after > self.host_budget {
                return None;
            }
            self.waiting.remove(&key);
            self.in_flight += 1;
            self.host_used += bytes;
            return Some((job, p, bytes));
        }
        None
    }

    /// A synthesis sent by [`next`](Self::next) has ended: its worker is free.
    pub fn synthesized(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// `bytes` of host memory counted by [`next`](Self::next) are free again.
    pub fn release(&mut self, bytes: u64) {
        self.host_used = self.host_used.saturating_sub(bytes);
    }

    /// Drops the waiting partitions of `job`.
    pub fn forget(&mut self, job: JobId) {
        self.waiting.retain(|k| k.2 != job);
    }

    /// Syntheses in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Host memory held by synthesised partitions (and those being synthesised).
    pub fn host_used(&self) -> u64 {
        self.host_used
    }

    /// The budget for it.
    pub fn host_budget(&self) -> u64 {
        self.host_budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kept vectors count against the budget beyond what the next partition reuses of them.
    #[test]
    fn kept_vectors_count_beyond_the_next_partitions_room() {
        let mut q = SynthesisQueue::new(3, 100);
        for p in 0..3 {
            q.push(Priority::Normal, 1, 1, p);
        }
        assert_eq!(q.next(|_| Some(40)), Some((1, 0, 40)));
        // 40 kept: the next partition reuses them, 40 + 40 fits
        q.set_kept(40);
        assert_eq!(q.next(|_| Some(40)), Some((1, 1, 40)));
        // 30 more than the next partition takes stay kept: 80 + 40 + 30 would not fit
        q.set_kept(70);
        assert_eq!(q.next(|_| Some(40)), None);
        q.set_kept(0);
        assert_eq!(q.next(|_| Some(20)), Some((1, 2, 20)));
    }

    #[test]
    fn synthesis_takes_priority_order_within_workers_and_budget() {
        let mut q = SynthesisQueue::new(2, 100);
        q.push(Priority::Normal, 1, 1, 0);
        q.push(Priority::Normal, 1, 1, 1);
        q.push(Priority::Critical, 2, 2, 0);
        let bytes = |_| Some(60);
        // the critical job first, although submitted later; the second does not fit beside it
        assert_eq!(q.next(bytes), Some((2, 0, 60)));
        assert_eq!(q.next(bytes), None);
        q.synthesized();
        q.release(60);
        assert_eq!(q.next(bytes), Some((1, 0, 60)));
        assert_eq!((q.in_flight(), q.host_used()), (1, 60));
        // a job that cannot be synthesised any more loses its waiting partitions
        assert_eq!(q.next(|_| None), None);
        q.synthesized();
        q.release(60);
        assert_eq!(q.next(bytes), None);
    }

    #[test]
    fn one_partition_always_runs_whatever_the_budget() {
        let mut q = SynthesisQueue::new(4, 10);
        q.push(Priority::Low, 1, 1, 0);
        q.push(Priority::Low, 1, 1, 1);
        assert_eq!(q.next(|_| Some(50)), Some((1, 0, 50)));
        assert_eq!(q.next(|_| Some(50)), None);
    }

    #[test]
    fn partitions_ahead_count_higher_priorities_and_earlier_peers() {
        let others = [
            (Priority::Critical, 5, 3),
            (Priority::Normal, 1, 4),
            (Priority::Normal, 9, 7),
            (Priority::Low, 0, 100),
        ];
        assert_eq!(partitions_ahead(Priority::Normal, 2, others), 3 + 4);
        assert_eq!(
            default_priority(WorkKind::Proof(ProofKind::WinningPost)),
            Priority::Critical
        );
        assert_eq!(default_priority(WorkKind::Simulated), Priority::Normal);
    }
}
