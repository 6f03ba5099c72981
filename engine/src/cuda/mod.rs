//! The CUDA backend: Groth16 partitions proved on one NVIDIA GPU with `cuzk-kernels`, byte
//! for byte the proofs of the CPU backend. Circuit parameters stay resident on the device
//! between proofs, several circuits within a VRAM budget, least recently used evicted first.
//!
//! | module | holds |
//! |---|---|
//! | [`partition`] | one partition: upload, H by NTTs, the five MSMs, per-phase times |
//! | [`batch`] | partitions with streamed bases proved as a batch that shares each transfer |
//! | [`streamed`] | the rings that stream a circuit's bases from host memory |
//! | [`ntt`] | the H polynomial on the device (bellperson's conventions) |
//! | [`masks`] | a circuit's A and B density masks on the device, kept between partitions |
//! | [`ops`] | the kernels one operation at a time behind the device-operation seam (`dual`) |
//! | [`resident`] | a circuit's bases on the device, the LRU set under a budget |
//! | [`vram`] | device memory accounting for the scheduler |
//!
//! A `CudaBackend` is created and used by one thread, the device actor's, which owns it:
//! every method that changes the resident set takes `&mut self`, so there is no lock
//! between a lease and the device. It is `Send` (cudarc's device types are) so the actor's
//! thread can own it.

pub mod batch;
pub mod masks;
pub mod ntt;
pub mod ops;
pub mod partition;
pub mod resident;
pub mod streamed;
pub mod vram;

use std::collections::HashMap;
use std::sync::Arc;

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use cuzk_kernels::{GpuDevice, PciId, Staging};
use cuzk_pce::Assignment;
use tracing::info_span;

use crate::error::{Error, Result};
use crate::pinned::HostSrs;
use crate::prover::{check_shape, Backend, BatchItem, Blinding, Upcoming};
use crate::srs::Srs;
pub use masks::QueryMasks;
pub use partition::{
    prove_msms, upload_assignment, Ahead, PhaseTimes, Proved, Queries, Transfers, Uploaded,
};
pub use resident::DeviceSrs;
pub use vram::{QueryLens, Residency};

/// Share of the device memory leases may use that resident parameters may take, in eighths:
/// 5/8 (88 GB of an H200, 48 GiB of an H100) holds PoRep 32 GiB's ~45 GiB of bases and
/// leaves room for a 2^27 partition's working memory (about 30 GB). A circuit whose bases
/// take more is streamed.
const DEFAULT_RESIDENT_EIGHTHS: u64 = 5;

/// Most partitions of a streamed circuit a device proves as one batch: a SnapDeals 32 GiB
/// job's 16 (a PoRep C2 has 10). A batch whose scalars do not fit the device's room walks
/// the bases once for each group that does ([`batch::prove_streamed_batch`]).
pub const MAX_BATCH: usize = 16;

/// Device memory kept back from leases for the CUDA context, the loaded kernel modules and
/// the allocator's slack.
pub const CONTEXT_RESERVE: u64 = 1 << 30;

/// Device bytes leases may use on a device of `total` bytes under a configured budget of
/// `limit` bytes (`None`: the whole device): the smaller, less [`CONTEXT_RESERVE`].
pub fn usable_memory(total: u64, limit: Option<u64>) -> u64 {
    limit
        .map_or(total, |l| l.min(total))
        .saturating_sub(CONTEXT_RESERVE)
}

/// What one partition of a circuit reserves on a device: how it reaches the bases, the
/// bytes of the lease, and the part of them held once a device for all the circuit's
/// leases there (the resident bases and masks; with streamed bases, the rings and the
/// working memory, which the device's partitions of the circuit use one at a time or as a
/// batch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeasePlan {
    /// Resident or streamed.
    pub residency: Residency,
    /// Device bytes a partition's lease reserves, the shared part included.
    pub bytes: u64,
    /// The part shared by the circuit's leases on a device: resident bases and masks, or a
    /// streamed circuit's rings and working memory.
    pub shared: u64,
}

impl LeasePlan {
    /// Most partitions of the circuit a device proves as one batch: [`MAX_BATCH`] where its
    /// parameters stream (the batch shares each transfer), else 1.
    pub fn batch_limit(&self) -> usize {
        match self.residency {
            Residency::Streamed { .. } => MAX_BATCH,
            Residency::Resident => 1,
        }
    }
}

/// The plan for `srs`'s partitions on a device with `usable` bytes for leases (see
/// [`usable_memory`]); `chunk` forces streaming in chunks of that many G1 points. `Err`
/// carries the fewest bytes a partition would need (streamed, smallest chunk).
pub fn lease_plan(
    srs: &Srs,
    usable: u64,
    chunk: Option<usize>,
) -> std::result::Result<LeasePlan, u64> {
    let q = QueryLens::of(&srs.params);
    let n = srs.domain_size();
    let resident_cap = usable / 8 * DEFAULT_RESIDENT_EIGHTHS;
    let residency = vram::plan(&q, n, usable, resident_cap, chunk)?;
    Ok(match residency {
        Residency::Resident => LeasePlan {
            residency,
            bytes: vram::vram_needed(&q, n),
            shared: q.resident_bytes(),
        },
        Residency::Streamed { chunk } => {
            // a device proves its streamed partitions of a circuit one at a time or as a
            // batch: the rings and the working memory serve them all
            let working = vram::streamed_needed(&q, n, chunk);
            LeasePlan {
                residency,
                bytes: working + vram::batch_share(&q, chunk),
                shared: working,
            }
        }
    })
}

/// A device resource made at first use. Its creation is tried once: after a failure the
/// backend goes on without it (and says so once, in the log).
enum Lazy<T> {
    Untried,
    Ready(T),
    Unavailable,
}

impl<T> Lazy<T> {
    /// The resource, made by `make` on the first call; `None` if that failed.
    fn get_or_make(&mut self, make: impl FnOnce() -> std::result::Result<T, ()>) -> Option<&mut T> {
        if matches!(self, Lazy::Untried) {
            *self = match make() {
                Ok(v) => Lazy::Ready(v),
                Err(()) => Lazy::Unavailable,
            };
        }
        match self {
            Lazy::Ready(v) => Some(v),
            _ => None,
        }
    }
}

/// Where a partition's bases are: resident on the device, or streamed from host memory
/// (from the registered copy where there is one).
enum Bases {
    Resident(Arc<DeviceSrs>),
    Streamed(Option<Arc<HostSrs>>),
}

/// `e` with the partition it happened to named.
fn for_partition(e: Error, partition: usize) -> Error {
    match e {
        Error::Prover {
            backend, reason, ..
        } => Error::Prover {
            partition,
            backend,
            reason,
        },
        e => e,
    }
}

/// The device's page-locked staging buffers, made at its first proof; `None` when that
/// failed (uploads then go from pageable memory: slower, the same results).
fn staging_of<'a>(
    staging: &'a mut Lazy<Staging>,
    dev: &GpuDevice,
    label: &str,
) -> Option<&'a mut Staging> {
    staging.get_or_make(|| {
        Staging::new(dev).map_err(|e| {
            tracing::warn!(device = %label, error = %e,
            "no page-locked staging memory: uploading from pageable memory")
        })
    })
}

/// The upload of `next` on the device's side stream (made when first needed), and `next`'s
/// token; neither without a next partition or a side stream (uploads are then not
/// overlapped).
fn upload_ahead<'a>(
    side: &'a mut Lazy<GpuDevice>,
    dev: &GpuDevice,
    label: &str,
    next: Option<Upcoming<'a>>,
) -> (Option<u64>, Option<partition::Ahead<'a>>) {
    let Some(next) = next else {
        return (None, None);
    };
    let side = side.get_or_make(|| {
        dev.side_stream().map_err(|e| {
            tracing::warn!(device = %label, error = %e,
            "no side stream: partitions' uploads are not overlapped")
        })
    });
    match side {
        Some(side) => (
            Some(next.token),
            Some(partition::Ahead {
                dev: side,
                assignment: next.assignment,
            }),
        ),
        None => (None, None),
    }
}

/// Proves on one CUDA device. See the module documentation.
pub struct CudaBackend {
    dev: GpuDevice,
    label: String,
    resident: resident::Lru<DeviceSrs>,
    /// Density masks of resident circuits, by circuit id, made at each circuit's first
    /// partition. Invariant: only circuits in `resident` have masks here (their bytes are
    /// part of the resident budget).
    masks: HashMap<u64, QueryMasks>,
    b_g2_on_host: bool,
    /// Page-locked upload buffers, made at the first proof; unavailable after their
    /// allocation failed (uploads then go straight from pageable memory, slower, same results).
    staging: Lazy<Staging>,
    /// A second stream of the device, for the next partition's upload; made when a caller
    /// first pipelines; unavailable after its creation failed (uploads then not overlapped).
    side: Lazy<GpuDevice>,
    /// The assignment of the partition named by the token, uploaded during the previous
    /// proof. Taken by the next proof: used if the token matches, freed otherwise.
    ahead: Option<(u64, Uploaded)>,
    /// Device bytes leases may use ([`usable_memory`]); every plan stays within it.
    usable: u64,
    /// Streams every circuit in chunks of this many G1 points (tests and benchmarks).
    stream_chunk: Option<usize>,
    /// The rings of streamed partitions, kept between them (freed by a resident one).
    rings: Option<streamed::Rings>,
    /// Bytes of bases streamed to the device by rings since it was opened, rings gone included.
    streamed_before: u64,
    /// How the last partition reached its bases.
    last_residency: Option<Residency>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("device", &self.dev)
            .field("resident_bytes", &self.resident_bytes())
            .finish()
    }
}

impl CudaBackend {
    /// Opens device `ordinal` (numbered under the current `CUDA_VISIBLE_DEVICES`), with a
    /// resident-parameter budget of 5/8 of its memory. Errors (no driver, no such device)
    /// are [`Error::Device`]; nothing is allocated until the first proof.
    pub fn open(ordinal: usize) -> Result<CudaBackend> {
        let dev = GpuDevice::open(ordinal).map_err(|source| Error::Device {
            device: format!("cuda:{ordinal}"),
            context: "opening the device".into(),
            source: Box::new(source),
        })?;
        let usable = usable_memory(dev.total_memory() as u64, None);
        let budget = usable / 8 * DEFAULT_RESIDENT_EIGHTHS;
        Ok(CudaBackend {
            usable,
            stream_chunk: None,
            rings: None,
            streamed_before: 0,
            last_residency: None,
            label: dev.pci_id().to_string(),
            dev,
            resident: resident::Lru::new(budget),
            masks: HashMap::new(),
            b_g2_on_host: false,
            staging: Lazy::Untried,
            side: Lazy::Untried,
            ahead: None,
        })
    }

    /// Holds this device's leases to `limit` bytes of device memory (`None`: the whole
    /// device), as on a card of that size: circuits whose bases and working memory do not
    /// fit are streamed from host memory, and the resident budget becomes 5/8 of it.
    pub fn with_memory_limit(mut self, limit: Option<u64>) -> Self {
        self.usable = usable_memory(self.dev.total_memory() as u64, limit);
        self.resident
            .set_budget(self.usable / 8 * DEFAULT_RESIDENT_EIGHTHS);
        drop_masks_of_evicted(&mut self.masks, &self.resident);
        self
    }

    /// Reads and stores compiled kernel modules in `dir` (`None`: the default,
    /// `cuzk_kernels::compile::default_cache_dir`). Set before the first proof: modules
    /// already loaded stay as they are.
    pub fn with_kernel_cache(mut self, dir: Option<std::path::PathBuf>) -> Self {
        if let Some(dir) = dir {
            self.dev.set_kernel_cache(dir);
        }
        self
    }

    /// Streams every circuit's bases in chunks of `chunk` G1 points (`None`: resident where
    /// they fit, else the largest chunk that fits). For tests and benchmarks of the streamed
    /// path; the proofs are the same either way.
    pub fn with_stream_chunk(mut self, chunk: Option<usize>) -> Self {
        self.stream_chunk = chunk;
        self
    }

    /// Device bytes this backend's leases may use.
    pub fn usable_memory(&self) -> u64 {
        self.usable
    }

    /// How `srs`'s partitions run on this device, and what each reserves; an error naming
    /// the bytes needed when not even streaming fits.
    pub fn plan(&self, srs: &Srs) -> Result<LeasePlan> {
        lease_plan(srs, self.usable, self.stream_chunk).map_err(|need| Error::Prover {
            partition: 0,
            backend: self.label.clone(),
            reason: format!(
                "a partition of {} needs at least {need} bytes of device memory with its \
                 parameters streamed; this device's budget is {} bytes",
                srs.path.display(),
                self.usable
            ),
        })
    }

    /// How the last partition reached its bases (`None` before the first).
    pub fn last_residency(&self) -> Option<Residency> {
        self.last_residency
    }

    /// Bytes of parameters streamed from host memory to this device so far.
    pub fn bytes_streamed(&self) -> u64 {
        self.streamed_before + self.rings.as_ref().map_or(0, |r| r.bytes_moved())
    }

    /// The most device memory this backend's buffers held at once since it was opened or
    /// the last [`CudaBackend::reset_peak_memory`], as the driver measured it (`None`
    /// without memory pools).
    pub fn peak_memory(&self) -> Result<Option<u64>> {
        self.dev
            .peak_memory()
            .map_err(|source| self.device_error("reading the peak of device memory".into(), source))
    }

    /// Starts [`CudaBackend::peak_memory`] afresh.
    pub fn reset_peak_memory(&self) -> Result<()> {
        self.dev.reset_peak_memory().map_err(|source| {
            self.device_error("resetting the peak of device memory".into(), source)
        })
    }

    /// Times the device's MSM or NTT steps apart on stderr (`cuzk_kernels::profile`): for
    /// measurements only, each step waits for the device. Off by default.
    pub fn with_step_timing(mut self, timing: cuzk_kernels::StepTiming) -> Self {
        self.dev.set_step_timing(timing);
        self
    }

    /// Computes the B query in G2 on the host's cores (the CPU backend's MSM) while the
    /// device does the rest, instead of on the device. Same proofs either way; it pays when
    /// the host has cores to spare (see docs/benchmarks.md). Off by default.
    pub fn with_b_g2_on_host(mut self, on: bool) -> Self {
        self.b_g2_on_host = on;
        self
    }

    /// Whether the B query in G2 runs on the host (see [`CudaBackend::with_b_g2_on_host`]).
    pub fn b_g2_on_host(&self) -> bool {
        self.b_g2_on_host
    }

    /// Sets the budget, in bytes, for resident parameters (all circuits together), evicting
    /// least recently used circuits until the rest fit. A circuit whose bases alone exceed
    /// the budget cannot be proved on this backend.
    pub fn with_resident_budget(mut self, bytes: u64) -> Self {
        self.resident.set_budget(bytes);
        drop_masks_of_evicted(&mut self.masks, &self.resident);
        self
    }

    /// The budget for resident parameters, in bytes.
    pub fn resident_budget(&self) -> u64 {
        self.resident.budget()
    }

    /// The device's PCI location (stable across `CUDA_VISIBLE_DEVICES`).
    pub fn pci_id(&self) -> PciId {
        self.dev.pci_id()
    }

    /// The device's UUID.
    pub fn uuid(&self) -> [u8; 16] {
        self.dev.uuid()
    }

    /// The device's marketing name, e.g. "NVIDIA H200". ([`Backend::name`] is the PCI id.)
    pub fn device_name(&self) -> &str {
        self.dev.name()
    }

    /// Total device memory in bytes.
    pub fn total_memory(&self) -> u64 {
        self.dev.total_memory() as u64
    }

    /// Free device memory in bytes, as the driver reports it now.
    pub fn free_memory(&self) -> Result<u64> {
        self.dev
            .free_memory()
            .map(|b| b as u64)
            .map_err(|source| self.device_error("reading free memory".into(), source))
    }

    /// The underlying device, for callers that run kernels themselves (benchmarks).
    pub fn device(&self) -> &GpuDevice {
        &self.dev
    }

    /// Device bytes to reserve for one partition of `srs`'s circuit with `num_constraints`
    /// constraints: its resident bases plus the partition's working memory (a, b, c, NTT
    /// buffers, query scalars, MSM scratch). An upper bound; excludes the CUDA context.
    pub fn vram_needed(srs: &Srs, num_constraints: usize) -> u64 {
        vram::vram_needed(&QueryLens::of(&srs.params), num_constraints)
    }

    /// Device bytes `srs`'s circuit takes once resident: its bases and, from its first
    /// partition, its density masks ([`CudaBackend::mask_bytes_of`]).
    pub fn resident_bytes_of(srs: &Srs) -> u64 {
        QueryLens::of(&srs.params).resident_bytes()
    }

    /// Device bytes of `srs`'s density masks, part of [`CudaBackend::resident_bytes_of`]
    /// (held from the circuit's first partition on).
    pub fn mask_bytes_of(srs: &Srs) -> u64 {
        QueryLens::of(&srs.params).mask_bytes()
    }

    /// Device bytes of all resident circuits now, as the budget counts them (bases and
    /// density masks, the masks counted from the upload of the bases).
    pub fn resident_bytes(&self) -> u64 {
        self.resident.used()
    }

    /// Bytes of the device buffers that hold the resident bases and density masks now,
    /// summed from the buffers themselves (not from the parameters' shapes, as
    /// [`CudaBackend::resident_bytes`] is): a check that what the budget counts is what the
    /// device holds (less the masks of circuits not proved yet).
    pub fn resident_device_bytes(&self) -> u64 {
        let bases: u64 = self.resident.values().map(DeviceSrs::bytes).sum();
        let masks: u64 = self.masks.values().map(QueryMasks::num_bytes).sum();
        bases + masks
    }

    /// Whether `srs`'s bases are resident on this device now.
    pub fn is_resident(&self, srs: &Srs) -> bool {
        self.resident.contains(srs.id())
    }

    /// Drops `srs`'s bases from the device (freed once no proof in progress uses them).
    /// Returns whether they were resident.
    pub fn evict(&mut self, srs: &Srs) -> bool {
        let removed = self.resident.remove(srs.id());
        drop_masks_of_evicted(&mut self.masks, &self.resident);
        removed
    }

    /// Proves one partition, as [`Backend::prove`], and returns the time of each phase on
    /// the device. The first proof of a circuit also uploads its bases (not in the phase
    /// times; see the `upload_srs` span).
    pub fn prove_timed(
        &mut self,
        srs: &Srs,
        asg: Assignment,
        r: Scalar,
        s: Scalar,
        partition: usize,
    ) -> Result<(Proof<Bls12>, PhaseTimes)> {
        self.prove_timed_pipelined(srs, asg, (r, s), partition, None, None)
    }

    /// As [`CudaBackend::prove_timed`], with pipelining as [`Backend::prove_pipelined`]
    /// describes: `token` names this partition (its upload, done during the previous proof,
    /// is used when the tokens match), and `next` is uploaded on a side stream while this
    /// partition's kernels run. The upload phase's time is zero when it was done ahead.
    pub fn prove_timed_pipelined(
        &mut self,
        srs: &Srs,
        asg: Assignment,
        (r, s): (Scalar, Scalar),
        partition: usize,
        token: Option<u64>,
        next: Option<Upcoming<'_>>,
    ) -> Result<(Proof<Bls12>, PhaseTimes)> {
        // Whatever was uploaded ahead is this partition's or nobody's: never kept longer.
        let uploaded = match (self.ahead.take(), token) {
            (Some((t, up)), Some(token)) if t == token => Some(up),
            _ => None,
        };
        check_shape(&srs.params, &asg, &srs.path.display().to_string())?;
        let plan = self.plan(srs).map_err(|e| for_partition(e, partition))?;
        self.last_residency = Some(plan.residency);
        let bases = self.bases_for(srs, plan, partition)?;
        let host_g2 = self.b_g2_on_host.then(|| srs.params.b_g2.as_slice());
        // The next partition is uploaded ahead only if its shape is valid for its parameters
        // and those are resident already (an SRS upload is not something to overlap).
        let next = next.filter(|n| {
            self.resident.contains(n.srs.id())
                && check_shape(&n.srs.params, n.assignment, "").is_ok()
        });
        // the circuit's masks, taken out for this partition and put back after it (a
        // streamed circuit keeps none: they are made for each partition)
        let mut masks = self.masks.remove(&srs.id());
        let keep_masks = matches!(bases, Bases::Resident(_));
        let (dev, label) = (&self.dev, &self.label);
        let queries = match (&bases, self.rings.as_mut()) {
            (Bases::Resident(resident), _) => Queries::Resident(resident),
            (Bases::Streamed(host), Some(rings)) => Queries::Streamed {
                host: host.as_deref().map_or_else(
                    || streamed::HostQueries::of(&srs.params),
                    streamed::HostSrs::queries,
                ),
                rings,
            },
            (Bases::Streamed(_), None) => {
                return Err(Error::Prover {
                    partition,
                    backend: label.clone(),
                    reason: "streamed bases without rings".into(),
                })
            }
        };
        let staging = staging_of(&mut self.staging, dev, label);
        let (next_token, ahead) = upload_ahead(&mut self.side, dev, label, next);
        // The proof's witness-independent terms (five scalar multiplications on the host)
        // are computed beside the kernels, not after them on the device's critical path.
        let params = &srs.params;
        let (proved, blinding) = std::thread::scope(|scope| {
            let blinding = scope.spawn(move || Blinding::new(params, r, s));
            let proved = prove_msms(
                dev,
                queries,
                asg,
                partition,
                host_g2,
                Transfers {
                    staging,
                    uploaded,
                    ahead,
                    masks: keep_masks.then_some(&mut masks),
                },
            );
            let blinding = blinding.join().unwrap_or_else(|_| {
                Err(Error::Prover {
                    partition,
                    backend: label.clone(),
                    reason: "the thread computing the proof's blinding terms panicked".into(),
                })
            });
            (proved, blinding)
        });
        if let Some(kept) = masks.filter(|_| keep_masks) {
            self.masks.insert(srs.id(), kept);
        }
        let (proved, blinding) = (proved?, blinding?);
        drop(bases);
        let (ahead_ms, ahead_bytes) = self.keep_upload_ahead(proved.ahead, next_token);
        let (msm, times) = (proved.msm, proved.times);
        let proof = blinding.assemble(&msm);
        tracing::debug!(device = %self.label, partition, %times, ahead_ms, ahead_bytes,
            residency = plan.residency.as_str(), streamed_bytes = self.bytes_streamed(),
            "partition proved");
        Ok((proof, times))
    }

    /// Where this partition's bases come from under `plan`: resident on the device (the
    /// rings of earlier streamed partitions are freed), or streamed through the device's
    /// rings (made for the plan's chunk when they are not already), from the registered host
    /// copy where there is one.
    fn bases_for(&mut self, srs: &Srs, plan: LeasePlan, partition: usize) -> Result<Bases> {
        match plan.residency {
            Residency::Resident => {
                if let Some(rings) = self.rings.take() {
                    self.streamed_before += rings.bytes_moved();
                }
                Ok(Bases::Resident(self.resident_bases(srs, partition)?))
            }
            Residency::Streamed { chunk } => {
                self.make_room_to_stream(plan.bytes);
                self.ensure_rings(chunk, partition)?;
                Ok(Bases::Streamed(streamed::host_srs(&self.dev, srs)))
            }
        }
    }

    /// Keeps the next partition's upload, made during this proof, for the proof of
    /// `next_token`; a failed one is only logged (the partition is uploaded in its turn).
    /// Returns the upload's time in milliseconds and its bytes, for the log.
    fn keep_upload_ahead(
        &mut self,
        ahead: Option<Result<Uploaded>>,
        next_token: Option<u64>,
    ) -> (f64, usize) {
        let (ms, bytes) = match &ahead {
            Some(Ok(up)) => (up.took().as_secs_f64() * 1e3, up.num_bytes()),
            _ => (0.0, 0),
        };
        match (ahead, next_token) {
            (Some(Ok(up)), Some(t)) => self.ahead = Some((t, up)),
            (Some(Err(e)), _) => tracing::warn!(device = %self.label, error = %e,
                "uploading the next partition ahead failed; it will be uploaded in its turn"),
            _ => {}
        }
        (ms, bytes)
    }

    /// The rings for streamed bases in G1 chunks of `chunk` points, made (or made again,
    /// for another chunk) when needed.
    fn ensure_rings(&mut self, chunk: usize, partition: usize) -> Result<()> {
        if self.rings.as_ref().is_some_and(|r| r.chunk() != chunk) {
            if let Some(rings) = self.rings.take() {
                self.streamed_before += rings.bytes_moved();
            }
        }
        if self.rings.is_none() {
            let rings = streamed::Rings::new(&self.dev, chunk).map_err(|source| {
                self.device_error(
                    format!("partition {partition}: allocating the rings of streamed bases"),
                    source,
                )
            })?;
            self.rings = Some(rings);
        }
        Ok(())
    }

    /// Proves a batch of `srs`'s partitions, as [`Backend::prove_batch`], with each one's
    /// phase times. With streamed bases, the L, A and B bases cross the link once for the
    /// batch ([`batch::prove_streamed_batch`]; each partition's times hold its share of those
    /// phases); with resident bases the partitions are proved in turn.
    pub fn prove_batch_timed(
        &mut self,
        srs: &Srs,
        items: Vec<BatchItem>,
    ) -> Result<Vec<(Proof<Bls12>, PhaseTimes)>> {
        let Some(first) = items.first() else {
            return Ok(Vec::new());
        };
        let (first_partition, n) = (first.partition, first.assignment.num_constraints());
        for it in &items {
            check_shape(&srs.params, &it.assignment, &srs.path.display().to_string())?;
            if it.assignment.num_constraints() != n {
                return Err(Error::Prover {
                    partition: it.partition,
                    backend: self.label.clone(),
                    reason: "the partitions of a batch must have the same shape".into(),
                });
            }
        }
        let plan = self.plan(srs)?;
        let Residency::Streamed { chunk } = plan.residency else {
            return items
                .into_iter()
                .map(|it| self.prove_timed(srs, it.assignment, it.r, it.s, it.partition))
                .collect();
        };
        self.last_residency = Some(plan.residency);
        self.ahead = None; // an upload ahead is for a single partition's path
        self.make_room_to_stream(plan.bytes);
        self.ensure_rings(chunk, first_partition)?;
        let host = streamed::host_srs(&self.dev, srs);
        let queries = host.as_deref().map_or_else(
            || streamed::HostQueries::of(&srs.params),
            streamed::HostSrs::queries,
        );
        let room = vram::batch_room(&queries.lens(), n, chunk);
        let (dev, label) = (&self.dev, &self.label);
        let staging = staging_of(&mut self.staging, dev, label);
        let Some(rings) = self.rings.as_mut() else {
            return Err(Error::Prover {
                partition: first_partition,
                backend: label.clone(),
                reason: "streamed bases without rings".into(),
            });
        };
        let params = &srs.params;
        let keys: Vec<(Scalar, Scalar)> = items.iter().map(|it| (it.r, it.s)).collect();
        let work = items.into_iter().map(|it| (it.assignment, it.partition));
        // the witness-independent terms on a host thread, beside the kernels
        let (proved, blindings) = std::thread::scope(|scope| {
            let blindings = scope.spawn(move || {
                keys.into_iter()
                    .map(|(r, s)| Blinding::new(params, r, s))
                    .collect::<Result<Vec<_>>>()
            });
            let proved = batch::prove_streamed_batch(dev, queries, rings, work, staging, room);
            (proved, blindings.join())
        });
        let blindings = blindings.map_err(|_| Error::Prover {
            partition: first_partition,
            backend: self.label.clone(),
            reason: "the thread computing the proofs' blinding terms panicked".into(),
        })??;
        let proved = proved?;
        drop(host);
        tracing::debug!(device = %self.label, partitions = proved.len(), chunk,
            streamed_bytes = self.bytes_streamed(), "batch proved");
        Ok(proved
            .into_iter()
            .zip(blindings)
            .map(|((msm, times), b)| (b.assemble(&msm), times))
            .collect())
    }

    /// Evicts resident circuits, least recently used first, until a streamed partition of
    /// `bytes` fits beside the rest within the device's budget.
    fn make_room_to_stream(&mut self, bytes: u64) {
        for key in self.resident.keys_by_age() {
            if self.resident.used().saturating_add(bytes) <= self.usable {
                break;
            }
            self.resident.remove(key);
        }
        drop_masks_of_evicted(&mut self.masks, &self.resident);
    }

    /// Whether an assignment uploaded ahead is held (for tests and status).
    pub fn holds_upload_ahead(&self) -> bool {
        self.ahead.is_some()
    }

    /// `srs`'s bases on the device: the resident copy, or a fresh upload after evicting
    /// least recently used circuits to make room.
    /// Uploads `srs`'s bases when they fit beside the resident circuits without evicting
    /// any (see [`Backend::preload`]); whether they are resident afterwards.
    fn preload_bases(&mut self, srs: &Srs) -> Result<bool> {
        let lens = QueryLens::of(&srs.params);
        if let Some(bases) = self.resident.get(srs.id()) {
            if bases.lens() == lens {
                return Ok(true);
            }
        }
        let fits = self
            .resident
            .used()
            .checked_add(lens.resident_bytes())
            .is_some_and(|total| total <= self.resident.budget());
        if !fits {
            tracing::debug!(device = %self.label, bytes = lens.resident_bytes(),
                "not preloading parameters: they would evict another circuit's");
            return Ok(false);
        }
        self.resident_bases(srs, 0).map(|_| true)
    }

    fn resident_bases(&mut self, srs: &Srs, partition: usize) -> Result<Arc<DeviceSrs>> {
        let lens = QueryLens::of(&srs.params);
        let label = self.label.clone();
        let dev = &self.dev;
        let set = &mut self.resident;
        let masks = &mut self.masks;
        if let Some(bases) = set.get(srs.id()) {
            if bases.lens() == lens {
                return Ok(bases);
            }
            set.remove(srs.id()); // parameters replaced under the same Srs: upload again
        }
        let bytes = lens.resident_bytes();
        let over = |budget: u64| Error::Prover {
            partition,
            backend: label.clone(),
            reason: format!(
                "the circuit's parameters take {bytes} bytes on the device, more than the \
                 resident budget of {budget} bytes"
            ),
        };
        let room = set.make_room(bytes);
        drop_masks_of_evicted(masks, set); // replaced or evicted above, even if no room
        let evicted = room.ok_or_else(|| over(set.budget()))?;
        let span = info_span!("upload_srs", device = %label, bytes, evicted = evicted.len());
        let _g = span.enter();
        let device_error = |context: String, source: cuzk_kernels::Error| Error::Device {
            device: label.clone(),
            context,
            source: Box::new(source),
        };
        let uploaded = match DeviceSrs::upload(dev, &srs.params) {
            Ok(b) => b,
            Err(first) if set.used() > 0 => {
                // out of memory, perhaps: retry once with nothing else resident
                tracing::warn!(error = %first, "upload failed; evicting every circuit and retrying");
                set.clear();
                drop_masks_of_evicted(masks, set);
                DeviceSrs::upload(dev, &srs.params).map_err(|source| {
                    device_error(
                        format!("partition {partition}: uploading parameters"),
                        source,
                    )
                })?
            }
            Err(source) => {
                return Err(device_error(
                    format!("partition {partition}: uploading parameters"),
                    source,
                ))
            }
        };
        set.insert(srs.id(), uploaded, bytes)
            .map_err(|_| over(set.budget()))
    }

    fn device_error(&self, context: String, source: cuzk_kernels::Error) -> Error {
        Error::Device {
            device: self.label.clone(),
            context,
            source: Box::new(source),
        }
    }
}

/// Frees the masks of circuits not in `resident`: called after every change to the
/// resident set, which keeps the invariant of [`CudaBackend`]'s `masks`.
fn drop_masks_of_evicted(
    masks: &mut HashMap<u64, QueryMasks>,
    resident: &resident::Lru<DeviceSrs>,
) {
    masks.retain(|id, _| resident.contains(*id));
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        self.label.clone()
    }

    fn prove(
        &mut self,
        srs: &Srs,
        assignment: Assignment,
        r: Scalar,
        s: Scalar,
        partition: usize,
    ) -> Result<Proof<Bls12>> {
        self.prove_timed(srs, assignment, r, s, partition)
            .map(|(proof, _)| proof)
    }

    fn prove_pipelined(
        &mut self,
        srs: &Srs,
        assignment: Assignment,
        rs: (Scalar, Scalar),
        partition: usize,
        token: u64,
        next: Option<Upcoming<'_>>,
    ) -> Result<Proof<Bls12>> {
        self.prove_timed_pipelined(srs, assignment, rs, partition, Some(token), next)
            .map(|(proof, _)| proof)
    }

    fn preload(&mut self, srs: &Srs) -> Result<bool> {
        self.preload_bases(srs)
    }

    fn batch_limit(&self, srs: &Srs) -> usize {
        self.plan(srs).map_or(1, |p| p.batch_limit())
    }

    fn prove_batch(&mut self, srs: &Srs, batch: Vec<BatchItem>) -> Result<Vec<Proof<Bls12>>> {
        self.prove_batch_timed(srs, batch)
            .map(|v| v.into_iter().map(|(proof, _)| proof).collect())
    }

    fn memory_report(&self) -> Option<crate::prover::MemoryReport> {
        Some(crate::prover::MemoryReport {
            residency: self.last_residency?.as_str(),
            bytes_streamed: self.bytes_streamed(),
            peak_bytes: self.dev.peak_memory().ok().flatten(),
            usable_bytes: self.usable,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_is_send() {
        fn check<T: Send>() {}
        check::<CudaBackend>();
    }

    #[test]
    fn open_without_a_driver_is_a_clear_error() {
        if cuzk_kernels::driver_present() {
            return; // a GPU machine: the device tests cover opening
        }
        let err = CudaBackend::open(0).expect_err("no driver, no device");
        assert!(matches!(err, Error::Device { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("cuda:0") && msg.contains("driver"), "{msg}");
    }
}
