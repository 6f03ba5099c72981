//! Multi-scalar multiplication over G1 and G2 on the device.
//!
//! Bases are uploaded once ([`GpuDevice::upload_g1_bases`], [`GpuDevice::upload_g2_bases`])
//! and stay resident; each call multiplies a contiguous range of them by host or device
//! scalars (blstrs `Scalar`, Montgomery form) and returns a blstrs projective point.
//!
//! Algorithm (see `cuda/msm.cu`): Pippenger with signed c-bit digits (2^(c-1) buckets per
//! window), c and the number of windows chosen from the scalars' bit lengths
//! ([`WindowPlan`]), a counting sort of (point, sign) entries by bucket, the sorted entries
//! cut into runs of k (across bucket boundaries), one thread per run accumulating affine
//! points in XYZZ coordinates (every thread the same number of additions), the pieces of a
//! bucket split over runs summed pairwise (a crowded bucket, such as the one all the scalars
//! equal to 1 land in, costs log depth), parallel running sums per window
//! segment, a tree reduction per window, and a final Horner step over windows on the host
//! with blstrs. Inputs of more than [`MAX_CHUNK`] points are processed in chunks, one after
//! another; a chunk whose window plan has the previous chunks' width and no more windows adds
//! its points to their bucket sums, so the windows are summed once (a chunk with another plan
//! sums the buckets so far first). The bucket lists depend on the scalars only: scalars
//! summed with two sets of bases (the B query in G1 and G2) can be sorted once
//! ([`GpuDevice::msm_sort`], [`GpuDevice::msm_sorted`]).

use std::marker::PhantomData;
use std::ops::Range;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, CudaView, LaunchConfig, PushKernelArg};
use group::Group;

use crate::curve::{MsmCurve, G1, G2};
use crate::device::{check_len, DeviceBuffer, GpuDevice, PciId};
use crate::error::{Error, Result};
use crate::layout::{DeviceElem, FrRaw};
use crate::profile::Steps;
use crate::stream::BaseRing;

/// Largest number of points one pipeline run handles; larger inputs are chunked. Measured
/// on an H200 (CHANGELOG.md): one 2^27 chunk saves the second chunk's window and piece
/// sums (15.7 ms) and 6.8 ms of accumulation, but its 8192 bins a window scatter with twice
/// the L2 requests an entry (slabs of 4 where 2^26 chunks fill slabs of 8): 57-67 ms
/// against 2 x 15.8 (untiled: 104-109). A 32 GiB partition's H MSM took
/// 795.5-796.9 ms as one chunk against 794.3-794.7 as two, for about 8 GiB more scratch.
pub const MAX_CHUNK: usize = 1 << 26;

/// Affine bases resident on one device. No device memory is allocated for zero points
/// (the driver refuses empty allocations).
pub struct Bases<C: MsmCurve> {
    buf: Option<DeviceBuffer<C::Affine>>,
    _c: PhantomData<C>,
}

/// G1 bases on a device.
pub type G1Bases = Bases<G1>;
/// G2 bases on a device.
pub type G2Bases = Bases<G2>;

impl<C: MsmCurve> Bases<C> {
    fn new(buf: Option<DeviceBuffer<C::Affine>>) -> Self {
        Bases {
            buf: buf.filter(|b| !b.is_empty()),
            _c: PhantomData,
        }
    }
    /// Number of points.
    pub fn len(&self) -> usize {
        self.buf.as_ref().map_or(0, |b| b.len())
    }
    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Device memory used, in bytes.
    pub fn num_bytes(&self) -> usize {
        self.buf.as_ref().map_or(0, |b| b.num_bytes())
    }
    /// The raw device buffer of affine points; `None` when there are no points.
    pub fn raw(&self) -> Option<&cudarc::driver::CudaSlice<<C::Affine as DeviceElem>::Raw>> {
        self.buf.as_ref().map(|b| b.raw())
    }
}

impl<C: MsmCurve> std::fmt::Debug for Bases<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}Bases[{}]", C::NAME, self.len())
    }
}

/// Where the bases of an MSM's chunks come from.
pub(crate) enum Source<'a, C: MsmCurve> {
    /// No points (an empty range).
    None,
    /// Resident on the device.
    Device(&'a DeviceBuffer<C::Affine>),
    /// In host memory, copied into a ring of device buffers chunk by chunk.
    Host(&'a [C::Affine], &'a mut BaseRing<C>),
}

/// Fewest buckets a segment of the window sums must hold for `msm_segments_pair_g2` to be
/// used. Measured on an H200: with 128 buckets a segment (a random 2^24 G2 MSM) the pair
/// kernel saves about 12 ms of 42, with 64 (2^23) about 2 ms; with 8 or 16 (2^20 and 2^22
/// random, witness-shaped 2^24) it loses 3.5-7 ms, its per-thread fixed part (the weight
/// `first` by double-and-add) being longer on pairs.
const PAIR_SEGMENTS_MIN: usize = 64;

/// Whether the window sums of curve `C` run on lane pairs, with `seg` buckets a segment: where
/// the curve has lane-pair kernels ([`MsmCurve::PAIR_KERNELS`]) and a segment holds at least
/// [`PAIR_SEGMENTS_MIN`] buckets. (The accumulation and the piece sums of such a curve always
/// run on pairs: G2 2^24 accumulation 307.4-310.1 ms on one lane, 295.3-297.1 on pairs.)
fn pair_segments<C: MsmCurve>(seg: usize) -> bool {
    C::PAIR_KERNELS && seg >= PAIR_SEGMENTS_MIN
}

/// Window width c (bits) for n points: minimises windows x (n + 3 * 2^(c-1)), a count of
/// point additions in accumulation plus bucket reduction, with c in 8..=20.
pub fn window_bits(n: usize) -> u32 {
    (8..=20u32)
        .min_by_key(|&c| (256u64.div_ceil(c as u64)) * (n as u64 + 3 * (1u64 << (c - 1))))
        .unwrap_or(16)
}

/// Window width and count of one MSM, chosen from its scalars' bit lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowPlan {
    /// Window width c in bits (8..=20, at most [`window_bits`] of the point count).
    pub c: u32,
    /// Number of windows: enough for the longest scalar plus the signed digits' last carry.
    pub windows: u32,
}

impl WindowPlan {
    /// The plan for `n` scalars with `hist[b]` of bit length b (`hist.len() == 257`), or
    /// `None` when every scalar is zero. Minimises the point additions: one per non-zero
    /// digit (about ceil(b / c) for a scalar of b bits) plus 3 per bucket of every window
    /// (the running sums), with c no wider than [`window_bits`]`(n)` so that the scratch
    /// memory stays within [`msm_scratch_bytes`]. Random full-width scalars get the same
    /// plan as before ([`window_bits`], ceil(256 / c) windows); Filecoin's witnesses, mostly
    /// 0 and 1, get fewer windows.
    pub fn choose(hist: &[u32], n: usize) -> Option<WindowPlan> {
        Self::choose_for(hist, n, n)
    }

    /// The plan for a chunk of `n` scalars with `hist[b]` of bit length b, chosen for an MSM
    /// of `total` >= `n` scalars of the same mix whose chunks add to one set of bucket sums
    /// ([`WindowSpan::Whole`]): the digits are counted as `total / n` times the chunk's and
    /// the running sums once, so c may be as wide as [`window_bits`]`(total)` (at most
    /// [`MAX_CHUNK`]'s, so that the buckets stay within [`streamed_msm_scratch_bytes`]). With
    /// `total == n`, [`WindowPlan::choose`].
    pub fn choose_for(hist: &[u32], n: usize, total: usize) -> Option<WindowPlan> {
        let max_bits = hist.iter().rposition(|&h| h > 0).filter(|&b| b > 0)? as u32;
        let total = total.max(n);
        let widest = window_bits(total.min(MAX_CHUNK).max(n));
        (8..=widest)
            .map(|c| {
                // a window's raw value is below 2^(c-1) in the top window, so its carry fits
                let windows = (max_bits + 1).div_ceil(c);
                let digits: u128 = hist
                    .iter()
                    .enumerate()
                    .map(|(b, &h)| u128::from(h) * (b as u128).div_ceil(u128::from(c)))
                    .sum();
                let scaled = digits * total as u128 / n.max(1) as u128;
                let cost = scaled + 3 * u128::from(windows) * (1u128 << (c - 1));
                (cost, WindowPlan { c, windows })
            })
            .min_by_key(|&(cost, p)| (cost, std::cmp::Reverse(p.c)))
            .map(|(_, p)| p)
    }
}

/// What the window plan of a chunked MSM is chosen for.
///
/// A plan chosen for a chunk alone has the widths [`window_bits`] gives its points (16 bits,
/// 16 windows for full-width scalars at 2^21 points) where one for a 2^27-point H query has
/// 20 (13 windows): about 1.2 times the additions. The chunks of one plan add to one set of
/// bucket sums, so the whole range's plan pays its running sums once, at the price of its
/// buckets' device memory ([`streamed_msm_scratch_bytes`]) and of buckets split between the
/// accumulation's runs when a chunk holds few points a bucket. Measured on an H100 (the H
/// query streamed, `kernels_bench --only streamed-h`): in chunks of 2^23, 863 ms planned
/// whole against 930 alone; in chunks of 2^21, 1104 against 1056.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowSpan {
    /// Each chunk planned for its own points (the least scratch: [`msm_scratch_bytes`] of a
    /// chunk).
    Chunk,
    /// Every chunk planned for the whole range ([`WindowPlan::choose_for`]): for MSMs of
    /// many chunks of full-width scalars, such as the H query's.
    Whole,
}

/// Most entries a bin sorted in shared memory may hold: 2^15, in 128 KiB of the 227 KiB an
/// H200's block may take.
const BIN_CAP_MAX: usize = 1 << 15;

/// Bytes of static shared memory `msm_bin_sort` takes besides its dynamic buffer (256
/// bucket cursors).
const BIN_SORT_STATIC_SHARED: usize = 256 * 4;

/// Entries a bin may hold on a device whose blocks may take `shared_per_block` bytes of
/// shared memory: the largest power of two up to [`BIN_CAP_MAX`] whose words fit beside
/// `msm_bin_sort`'s static cursors (16384 on GPUs with 99 KiB a block, 8192 with 48 KiB).
/// A fuller bin's entries go straight to their buckets.
fn bin_capacity(shared_per_block: usize) -> usize {
    let words = shared_per_block.saturating_sub(BIN_SORT_STATIC_SHARED) / 4;
    if words == 0 {
        return 1;
    }
    (1usize << words.ilog2()).min(BIN_CAP_MAX)
}

/// log2 of the buckets per bin for `entries` digits over `nbuckets` buckets of a window width
/// `c`, with bins of at most `cap` entries: the largest s <= min(8, c - 1) whose bins hold at
/// most `cap / 2` entries on average, so that nearly every bin of uniformly spread digits
/// fits, and bins as wide as that allows, so that few of them (2^12 a window at 2^26 G1 on an
/// H200) are written at once (0: one bucket a bin, no bin sort).
fn bin_shift(entries: usize, nbuckets: usize, c: u32, cap: usize) -> u32 {
    let per_bucket = entries.div_ceil(nbuckets.max(1)).max(1);
    let mut s = 0;
    while s < 8 && s + 1 < c && per_bucket << (s + 1) <= cap / 2 {
        s += 1;
    }
    s
}

/// Points a thread of `msm_scatter_tiled` takes (`SCATTER_PPT` in msm.cu).
const SCATTER_PPT: usize = 16;

/// Threads of a `msm_scatter_tiled` block: a tile of 16384 points.
const SCATTER_THREADS: u32 = 1024;

/// Most bins a window may have for `msm_scatter_tiled` (its per-bin counters and slabs live
/// in shared memory); a window with more bins, or none (s = 0), takes `msm_scatter`. 8192
/// bins (a 2^27 random G1 chunk: 256 entries a bucket, 64 buckets a bin) take 224 KiB with
/// slabs of 4, within an H200's 227 KiB a block; 2^26 chunks have 4096.
const SCATTER_TILED_MAX_BINS: usize = 8192;

/// Largest slab (entries of one bin a tile holds in shared memory) `msm_scatter_tiled` takes.
const SCATTER_MAX_SLAB_LOG: u32 = 6;

/// log2 of the slab for `msm_scatter_tiled` with `nbw` bins a window and `per_bin` entries
/// of a bin a tile on average: the smallest slab of at least 2 `per_bin` entries (a tile's
/// entries past its bin's slab take msm_scatter's path; every slab is written out, so
/// oversized ones cost: 64-entry slabs for witness-shaped scalars, with most windows nearly
/// empty, made the scatter slower than msm_scatter), at least 4, and no larger than fits
/// `shared_per_block` (`8 nbw + 5 nbw 2^slab_log` bytes) or 2^[`SCATTER_MAX_SLAB_LOG`].
/// `None` (take `msm_scatter`) when the window has no bins (s = 0), too many, or not even
/// slabs of 4 fit. A random 2^26 G1 chunk (4096 bins, about 4 entries of a bin a tile) gets
/// slabs of 8 on an H200.
fn scatter_slab_log(s: u32, nbw: usize, per_bin: f64, shared_per_block: usize) -> Option<u32> {
    if s == 0 || nbw == 0 || nbw > SCATTER_TILED_MAX_BINS {
        return None;
    }
    let fits = |l: u32| scatter_shared_bytes(nbw, l) <= shared_per_block;
    let largest = (2..=SCATTER_MAX_SLAB_LOG).rev().find(|&l| fits(l))?;
    let wanted = (2.0 * per_bin).max(4.0).log2().ceil() as u32;
    Some(wanted.min(largest))
}

/// Entries of one bin a tile of `msm_scatter_tiled` takes on average, for `entries` digits of
/// `n` points over `nw` windows of `nbw` bins.
fn scatter_per_bin(entries: usize, n: usize, nw: u32, nbw: usize) -> f64 {
    let tile = (SCATTER_PPT * SCATTER_THREADS as usize).min(n.max(1));
    tile as f64 * entries as f64 / (n.max(1) as f64 * f64::from(nw.max(1)) * nbw.max(1) as f64)
}

/// Bytes of dynamic shared memory `msm_scatter_tiled` takes.
fn scatter_shared_bytes(nbw: usize, slab_log: u32) -> usize {
    8 * nbw + ((5 * nbw) << slab_log)
}

/// Bucket sums of one or more chunks of an MSM under one window plan (msm.cu's step 6), on
/// the device: `nw` windows of 2^(c-1) XYZZ sums. The chunks of [`GpuDevice::msm_chunked`]
/// add to them in turn, and their windows are summed once.
pub(crate) struct Buckets {
    pub(crate) c: u32,
    pub(crate) nw: u32,
    pub(crate) sums: CudaSlice<u64>,
}

impl Buckets {
    /// Whether a chunk sorted into `lists` can add to these sums: the same window width (so
    /// the same bucket of each digit) and no more windows than they have.
    fn takes(&self, lists: &BucketLists) -> bool {
        lists.c == self.c && lists.nw <= self.nw
    }
}

/// One chunk's scalars as bucket lists (msm.cu's steps 1-5), which depend on the scalars
/// only: any bases of the chunk's length can be summed with them (step 6 on).
pub(crate) struct BucketLists {
    /// Window width.
    pub(crate) c: u32,
    /// Number of windows; there are `nw << (c - 1)` buckets.
    pub(crate) nw: u32,
    /// Entries in the lists (non-zero digits).
    pub(crate) entries: usize,
    /// Entries a run (one accumulating thread).
    pub(crate) k: u32,
    /// Runs: `ceil(entries / k)`.
    pub(crate) nruns: usize,
    /// Rounds of the pairwise sum of split buckets' pieces.
    pub(crate) rounds: u32,
    /// The lists: (point index | sign << 31), bucket by bucket.
    pub(crate) sorted: CudaSlice<u32>,
    /// Bucket b's entries are `sorted[offsets[b]..offsets[b + 1]]`.
    pub(crate) offsets: CudaSlice<u32>,
    /// The bucket of each run's first entry.
    pub(crate) run_first: CudaSlice<u32>,
}

/// Scalars sorted into bucket lists once, for MSMs with several sets of bases: the B query
/// of a Groth16 proof has the same scalars in G1 and in G2
/// ([`GpuDevice::msm_sort`], [`GpuDevice::msm_sorted`]). Holds device memory (about 5 bytes a
/// non-zero digit) until dropped; at most [`MAX_CHUNK`] scalars. Only the device that sorted
/// them can use them (checked), on the stream that sorted them: dropping frees the lists in
/// that stream's order.
pub struct SortedScalars {
    /// The device holding the lists.
    pci: PciId,
    len: usize,
    /// `None` when there are no scalars or every scalar is zero.
    lists: Option<BucketLists>,
}

impl SortedScalars {
    /// Number of scalars sorted.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no scalars were sorted.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for SortedScalars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("SortedScalars");
        d.field("pci", &self.pci).field("len", &self.len);
        if let Some(l) = &self.lists {
            d.field("c", &l.c)
                .field("windows", &l.nw)
                .field("entries", &l.entries);
        }
        d.finish()
    }
}

/// With the device's MSM step timing ([`crate::profile`]), the time of each step of a
/// chunk, labelled `msm <what> n=<points>`.
pub(crate) fn marks(dev: &GpuDevice, what: &'static str, n: usize) -> Steps {
    Steps::new(dev.step_timing().msm, || format!("msm {what} n={n}"))
}

/// Threads an item of a step takes: two on lane pairs (`fp2_pair.cuh`), else one.
fn lanes(pair: bool) -> usize {
    if pair {
        2
    } else {
        1
    }
}

pub(crate) fn cfg(threads: usize, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((threads as u32).div_ceil(block), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl GpuDevice {
    /// Uploads G1 bases once; they stay on this device until dropped.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = points.len()))]
    pub fn upload_g1_bases(&self, points: &[G1Affine]) -> Result<G1Bases> {
        self.upload_bases(points)
    }

    /// Uploads G2 bases once; they stay on this device until dropped.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = points.len()))]
    pub fn upload_g2_bases(&self, points: &[G2Affine]) -> Result<G2Bases> {
        self.upload_bases(points)
    }

    /// Uploads bases of either curve once; they stay on this device until dropped.
    pub fn upload_bases<C: MsmCurve>(&self, points: &[C::Affine]) -> Result<Bases<C>> {
        if points.is_empty() {
            return Ok(Bases::new(None));
        }
        Ok(Bases::new(Some(self.upload(points)?)))
    }

    /// Bases of `len` points repeating `points` (`points[i % points.len()]` at index i),
    /// filled on the device from one upload of `points`: a large synthetic SRS for
    /// benchmarks without generating every point. `points` must not be empty unless `len`
    /// is 0.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), curve = C::NAME, distinct = points.len(), len))]
    pub fn tile_bases<C: MsmCurve>(&self, points: &[C::Affine], len: usize) -> Result<Bases<C>> {
        if len == 0 {
            return Ok(Bases::new(None));
        }
        if points.is_empty() {
            return Err(Error::Unsupported {
                op: "tile_bases",
                detail: format!("no points to repeat into {len} bases"),
            });
        }
        let unique = self.upload(points)?;
        // SAFETY: every element is written by the copies below before the buffer is used.
        let mut inner = unsafe { self.stream().alloc::<<C::Affine as DeviceElem>::Raw>(len) }
            .map_err(self.drv("allocating bases"))?;
        let mut start = 0;
        while start < len {
            let end = (start + points.len()).min(len);
            let src = unique.view(0..end - start);
            let mut dst = inner.slice_mut(start..end);
            self.stream()
                .memcpy_dtod(&src, &mut dst)
                .map_err(self.drv("copying bases on the device"))?;
            start = end;
        }
        Ok(Bases::new(Some(DeviceBuffer::from_raw(inner))))
    }

    /// `sum_i scalars[i] * bases[range.start + i]` over G1; `scalars.len()` must equal
    /// `range.len()` and the range must lie within the bases.
    pub fn msm_g1(
        &self,
        bases: &G1Bases,
        range: Range<usize>,
        scalars: &[Scalar],
    ) -> Result<G1Projective> {
        self.msm_host(bases, range, scalars)
    }

    /// As [`GpuDevice::msm_g1`] over G2.
    pub fn msm_g2(
        &self,
        bases: &G2Bases,
        range: Range<usize>,
        scalars: &[Scalar],
    ) -> Result<G2Projective> {
        self.msm_host(bases, range, scalars)
    }

    /// As [`GpuDevice::msm_g1`] with scalars already on the device.
    pub fn msm_g1_device(
        &self,
        bases: &G1Bases,
        range: Range<usize>,
        scalars: &DeviceBuffer<Scalar>,
    ) -> Result<G1Projective> {
        self.msm(bases, range, scalars)
    }

    /// As [`GpuDevice::msm_g2`] with scalars already on the device.
    pub fn msm_g2_device(
        &self,
        bases: &G2Bases,
        range: Range<usize>,
        scalars: &DeviceBuffer<Scalar>,
    ) -> Result<G2Projective> {
        self.msm(bases, range, scalars)
    }

    /// Generic MSM with host scalars.
    pub fn msm_host<C: MsmCurve>(
        &self,
        bases: &Bases<C>,
        range: Range<usize>,
        scalars: &[Scalar],
    ) -> Result<C::Projective> {
        check_len("msm", range.len(), scalars.len())?;
        if scalars.is_empty() {
            check_range(bases.len(), &range)?;
            return Ok(C::Projective::identity());
        }
        let s = self.upload(scalars)?;
        self.msm(bases, range, &s)
    }

    /// Generic MSM with device scalars (`scalars.len() == range.len()`).
    pub fn msm<C: MsmCurve>(
        &self,
        bases: &Bases<C>,
        range: Range<usize>,
        scalars: &DeviceBuffer<Scalar>,
    ) -> Result<C::Projective> {
        check_len("msm", range.len(), scalars.len())?;
        self.msm_at(bases, range, scalars, 0)
    }

    /// `sum_i scalars[from + i] * bases[range.start + i]` for `i < range.len()`: as
    /// [`GpuDevice::msm`] with the scalars a sub-range of a longer device buffer (for example
    /// the first m - 1 of m NTT outputs). Both ranges must lie within their buffers.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), curve = C::NAME, n = range.len()))]
    pub fn msm_at<C: MsmCurve>(
        &self,
        bases: &Bases<C>,
        range: Range<usize>,
        scalars: &DeviceBuffer<Scalar>,
        from: usize,
    ) -> Result<C::Projective> {
        self.msm_chunked(bases, range, scalars, from, MAX_CHUNK)
    }

    /// As [`GpuDevice::msm_at`], in chunks of at most `chunk` points (`chunk` >= 1; the
    /// result does not depend on it), one after another on the device's stream. Chunks with
    /// the same window width (a later one with no more windows) share one set of bucket sums:
    /// measured on an H200, a 32 GiB WindowPoSt partition's five two-chunk MSMs took
    /// 44 ms less, a PoRep partition's 13 ms less.
    /// [`GpuDevice::msm_at`] uses [`MAX_CHUNK`]; smaller chunks are for tests of the chunked
    /// path.
    pub fn msm_chunked<C: MsmCurve>(
        &self,
        bases: &Bases<C>,
        range: Range<usize>,
        scalars: &DeviceBuffer<Scalar>,
        from: usize,
        chunk: usize,
    ) -> Result<C::Projective> {
        check_range(bases.len(), &range)?;
        let source = match bases.buf.as_ref() {
            Some(buf) => Source::<C>::Device(buf),
            // no points: the range is empty (checked above); the scalars are still checked
            None => Source::None,
        };
        self.msm_over(source, range, scalars, from, chunk, WindowSpan::Chunk)
    }

    /// `sum_i scalars[from + i] * host[range.start + i]` for `i < range.len()`, with the
    /// bases streamed from host memory through `ring` a chunk at a time (the ring's chunk):
    /// the next chunk crosses the link while the device accumulates the current one. The
    /// same result as [`GpuDevice::msm_at`] over the same points resident.
    ///
    /// `span` says what each chunk's window plan is chosen for ([`WindowSpan`]); its
    /// scratch memory is [`streamed_msm_scratch_bytes`]. `host` should be
    /// [`crate::PinnedPoints`] memory: from pageable memory each copy waits for the device
    /// first (correct, slower). The range must lie within `host` and the scalars' window
    /// within `scalars`.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), curve = C::NAME, n = range.len(), chunk = ring.chunk(), ?span))]
    pub fn msm_streamed<C: MsmCurve>(
        &self,
        host: &[C::Affine],
        range: Range<usize>,
        scalars: &DeviceBuffer<Scalar>,
        from: usize,
        ring: &mut BaseRing<C>,
        span: WindowSpan,
    ) -> Result<C::Projective> {
        check_range(host.len(), &range)?;
        let chunk = ring.chunk();
        self.msm_over(Source::Host(host, ring), range, scalars, from, chunk, span)
    }

    /// The chunk loop of [`GpuDevice::msm_chunked`] and [`GpuDevice::msm_streamed`]:
    /// `sum_i scalars[from + i] * bases[range.start + i]`, each chunk's window plan chosen as
    /// `span` says; `range` has been checked against the bases.
    pub(crate) fn msm_over<C: MsmCurve>(
        &self,
        mut bases: Source<'_, C>,
        range: Range<usize>,
        scalars: &DeviceBuffer<Scalar>,
        from: usize,
        chunk: usize,
        span: WindowSpan,
    ) -> Result<C::Projective> {
        if from
            .checked_add(range.len())
            .is_none_or(|end| end > scalars.len())
        {
            return Err(Error::Length {
                op: "msm (scalars)",
                expected: from.saturating_add(range.len()),
                got: scalars.len(),
            });
        }
        if chunk == 0 {
            return Err(Error::Unsupported {
                op: "msm_chunked",
                detail: "chunks of 0 points".into(),
            });
        }
        let mut acc = C::Projective::identity();
        if matches!(bases, Source::None) || range.is_empty() {
            return Ok(acc);
        }
        // A chunk whose plan has the previous chunks' width and no more windows adds its points
        // to their bucket sums (msm_accumulate's `into`), so that the windows are summed once
        // for all of them; another plan sums the buckets so far and starts its own.
        let mut held: Option<Buckets> = None;
        // Streamed bases: the first chunk's copy is queued now, and each next chunk's as soon
        // as the current chunk's accumulation is queued, so that it crosses the link beside
        // it and the next chunk's sort (whose plan waits for the host) rather than after them.
        let mut next_slot = match &mut bases {
            Source::Host(host, ring) => {
                let first = range.start..range.start + chunk.min(range.len());
                Some(ring.fill(&host[first])?)
            }
            _ => None,
        };
        let mut start = 0;
        while start < range.len() {
            let end = (start + chunk).min(range.len());
            let slot = next_slot.take();
            let points = range.start + start..range.start + end;
            let s = scalars.view(from + start..from + end);
            let mut marks = marks(self, C::NAME, end - start);
            let total = match span {
                WindowSpan::Chunk => end - start,
                WindowSpan::Whole => range.len(),
            };
            if let Some(lists) = self.bucket_lists::<C>(s, total, &mut marks)? {
                let b = match (&bases, slot) {
                    (Source::Device(buf), _) => buf.view(points.clone()),
                    (Source::Host(_, ring), Some(slot)) => ring.view(slot, points.len()),
                    (Source::Host(..), None) | (Source::None, _) => break,
                };
                let into = match held.take() {
                    Some(h) if h.takes(&lists) => Some(h),
                    Some(h) => {
                        acc += self.window_sums::<C>(h, &mut marks)?;
                        None
                    }
                    None => None,
                };
                held = Some(self.accumulate_lists::<C>(b, &lists, into, &mut marks)?);
            } // else every scalar of the chunk is zero
            if let (Source::Host(host, ring), true) = (&mut bases, end < range.len()) {
                let next = range.start + end..range.start + (end + chunk).min(range.len());
                next_slot = Some(ring.fill(&host[next])?);
            }
            start = end;
        }
        if let Some(held) = held {
            let mut marks = marks(self, C::NAME, range.len());
            acc += self.window_sums::<C>(held, &mut marks)?;
        }
        Ok(acc)
    }

    /// Sorts `scalars[range]` (at most [`MAX_CHUNK`] of them) into bucket lists once, for
    /// [`GpuDevice::msm_sorted`] with bases of either curve: two MSMs over the same scalars
    /// (the B query in G1 and G2) then pay for the sort once.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = range.len()))]
    pub fn msm_sort(
        &self,
        scalars: &DeviceBuffer<Scalar>,
        range: Range<usize>,
    ) -> Result<SortedScalars> {
        check_range(scalars.len(), &range)?;
        if range.len() > MAX_CHUNK {
            return Err(Error::Unsupported {
                op: "msm_sort",
                detail: format!("{} scalars (at most {MAX_CHUNK})", range.len()),
            });
        }
        let (pci, len) = (self.pci_id(), range.len());
        if len == 0 {
            return Ok(SortedScalars {
                pci,
                len,
                lists: None,
            });
        }
        let mut marks = marks(self, "sort", len);
        let lists = self.bucket_lists::<G1>(scalars.view(range), len, &mut marks)?;
        Ok(SortedScalars { pci, len, lists })
    }

    /// `sum_i s_i * bases[range.start + i]` for the scalars s that `sorted` was built from
    /// ([`GpuDevice::msm_sort`]); `range.len()` must equal `sorted.len()` and lie within the
    /// bases. The same result as [`GpuDevice::msm`] with those scalars.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), curve = C::NAME, n = range.len()))]
    pub fn msm_sorted<C: MsmCurve>(
        &self,
        bases: &Bases<C>,
        range: Range<usize>,
        sorted: &SortedScalars,
    ) -> Result<C::Projective> {
        check_range(bases.len(), &range)?;
        check_len("msm_sorted", sorted.len(), range.len())?;
        if sorted.pci != self.pci_id() {
            return Err(Error::Unsupported {
                op: "msm_sorted",
                detail: format!(
                    "scalars sorted on device {}, summed on device {}",
                    sorted.pci,
                    self.pci_id()
                ),
            });
        }
        match (&sorted.lists, bases.buf.as_ref()) {
            (Some(lists), Some(buf)) => {
                let mut marks = marks(self, C::NAME, range.len());
                self.reduce_lists::<C>(buf.view(range), lists, &mut marks)
            }
            // no scalars, or every scalar zero (an empty range when there are no bases)
            _ => Ok(C::Projective::identity()),
        }
    }

    /// Steps 1-5 of one chunk (see msm.cu): the scalars' window plan (chosen for an MSM of
    /// `total` such scalars: [`WindowPlan::choose_for`]) and their bucket lists, or `None`
    /// when every scalar is zero. Independent of the curve; `C` picks the module whose copy
    /// of the sorting kernels runs.
    fn bucket_lists<C: MsmCurve>(
        &self,
        scalars: CudaView<'_, FrRaw>,
        total: usize,
        marks: &mut Steps,
    ) -> Result<Option<BucketLists>> {
        let n = scalars.len();
        let Some((canon, WindowPlan { c, windows: nw })) =
            self.window_plan::<C>(scalars, total, marks)?
        else {
            return Ok(None); // every scalar is zero
        };
        let nbuckets = nw as usize * (1usize << (c - 1));
        let (offsets, cursor, entries) = self.bucket_offsets::<C>(&canon, n, (c, nw), marks)?;
        let sorted = self.sort_entries::<C>(canon, (c, nw), &offsets, cursor, entries, marks)?;
        let (k, nruns, rounds, run_first) = self.split_runs::<C>(&offsets, entries, nbuckets)?;
        marks.mark(self, "runs");
        Ok(Some(BucketLists {
            c,
            nw,
            entries,
            k,
            nruns,
            rounds,
            sorted,
            offsets,
            run_first,
        }))
    }

    /// A kernel of `C`'s MSM module, by its name without the curve's suffix.
    pub(crate) fn msm_kernel<C: MsmCurve>(&self, name: &str) -> Result<CudaFunction> {
        self.function(&C::MODULE, &format!("{name}{}", C::SUFFIX))
    }

    /// `len` zeroed words of MSM scratch on this device's stream.
    pub(crate) fn zeroed_u32(&self, len: usize) -> Result<CudaSlice<u32>> {
        self.stream()
            .alloc_zeros::<u32>(len)
            .map_err(self.drv("allocating MSM scratch"))
    }

    /// Step 1: the scalars as canonical integers (transposed, as the later steps read
    /// them) and the window plan their bit lengths give for an MSM of `total` such scalars;
    /// `None` when every scalar is zero.
    fn window_plan<C: MsmCurve>(
        &self,
        scalars: CudaView<'_, FrRaw>,
        total: usize,
        marks: &mut Steps,
    ) -> Result<Option<(CudaSlice<FrRaw>, WindowPlan)>> {
        let n = scalars.len();
        let n32 = n as u32;
        let stream = self.stream();
        // SAFETY: written by msm_scalars before use.
        let mut canon =
            unsafe { stream.alloc::<FrRaw>(n) }.map_err(self.drv("allocating MSM scalars"))?;
        let mut bit_hist = self.zeroed_u32(257)?;
        let f = self.msm_kernel::<C>("msm_scalars")?;
        let mut l = stream.launch_builder(&f);
        l.arg(&scalars).arg(&mut canon).arg(&n32).arg(&mut bit_hist);
        // SAFETY: (const Fr* in[n], u32* out[8 n] (the transposed scalars: `canon` holds n Fr),
        // u32 n, u32* hist[257] zeroed).
        unsafe { l.launch(cfg(n, 256)) }.map_err(self.drv("launching msm_scalars"))?;
        let bit_hist = self.read_back(&bit_hist, "reading the scalars' bit lengths")?;
        let Some(plan) = WindowPlan::choose_for(&bit_hist, n, total) else {
            return Ok(None);
        };
        marks.mark(self, "scalars");
        marks.note(format_args!("plan: c={}, {} windows", plan.c, plan.windows));
        Ok(Some((canon, plan)))
    }

    /// Steps 2-3: the histogram of bucket sizes and its exclusive scan: the buckets'
    /// offsets (`nbuckets + 1` of them), cursors for the scatter (the same offsets), and
    /// the number of entries (non-zero digits).
    fn bucket_offsets<C: MsmCurve>(
        &self,
        canon: &CudaSlice<FrRaw>,
        n: usize,
        (c, nw): (u32, u32),
        marks: &mut Steps,
    ) -> Result<(CudaSlice<u32>, CudaSlice<u32>, usize)> {
        let n32 = n as u32;
        let nbuckets = nw as usize * (1usize << (c - 1));
        let mut counts = self.zeroed_u32(nbuckets)?;
        let f = self.msm_kernel::<C>("msm_histogram")?;
        let mut l = self.stream().launch_builder(&f);
        l.arg(canon).arg(&n32).arg(&c).arg(&nw).arg(&mut counts);
        // SAFETY: (const u32* canon[8 n] (transposed), u32 n, u32 c, u32 nw,
        // u32* counts[nw * 2^(c-1)]).
        unsafe { l.launch(cfg(n, 256)) }.map_err(self.drv("launching msm_histogram"))?;
        marks.mark(self, "histogram");

        let mut offsets = self.zeroed_u32(nbuckets + 1)?;
        let mut cursor = self.zeroed_u32(nbuckets)?;
        self.exclusive_scan::<C>(&counts, nbuckets, &mut offsets, Some(&mut cursor))?;
        drop(counts);
        let entries = self.read_back(
            &offsets.slice(nbuckets..nbuckets + 1),
            "reading the MSM entry count",
        )?;
        marks.mark(self, "scan");
        Ok((offsets, cursor, entries[0] as usize))
    }

    /// Step 4: the bucket lists. Entries are binned by 2^s consecutive buckets, then each
    /// bin sorted (see msm.cu; s = 0 writes final positions at once). Consumes the canonical
    /// scalars and the cursors; returns the sorted entries (point index | sign << 31).
    fn sort_entries<C: MsmCurve>(
        &self,
        canon: CudaSlice<FrRaw>,
        (c, nw): (u32, u32),
        offsets: &CudaSlice<u32>,
        mut cursor: CudaSlice<u32>,
        entries: usize,
        marks: &mut Steps,
    ) -> Result<CudaSlice<u32>> {
        let n = canon.len();
        let n32 = n as u32;
        let nb = 1usize << (c - 1);
        let nbuckets = nw as usize * nb;
        let stream = self.stream();
        let cap = bin_capacity(self.shared_memory_per_block());
        let s = bin_shift(entries, nbuckets, c, cap);
        let nbins = nbuckets >> s;
        let mut sorted = self.zeroed_u32(entries.max(1))?;
        let mut large = self.zeroed_u32(if s == 0 { 1 } else { nbins.div_ceil(32) })?;
        // SAFETY: msm_scatter (or msm_scatter_tiled) writes low[pos] for every entry of a small
        // bin before msm_bin_sort reads it; entries of large bins are never read from it.
        let mut low = unsafe { stream.alloc::<u8>(if s == 0 { 1 } else { entries.max(1) }) }
            .map_err(self.drv("allocating MSM scratch"))?;
        if s != 0 {
            let f = self.msm_kernel::<C>("msm_bin_flags")?;
            let nbins32 = nbins as u32;
            let mut l = stream.launch_builder(&f);
            let cap32 = cap as u32;
            l.arg(offsets)
                .arg(&nbins32)
                .arg(&s)
                .arg(&cap32)
                .arg(&mut large);
            // SAFETY: (const u32* offsets[nbuckets + 1], u32 nbins, u32 s, u32 cap, u32*
            // large[ceil(nbins / 32)]); nbins << s == nbuckets, so every offset read exists;
            // block of 256 (a multiple of 32, as its ballot needs).
            unsafe { l.launch(cfg(nbins, 256)) }.map_err(self.drv("launching msm_bin_flags"))?;
        }
        // the tiled scatter where it applies (35.7 -> 16 ms for a random 2^26 G1 chunk)
        let per_bin = scatter_per_bin(entries, n, nw, nb >> s);
        let slab_log = scatter_slab_log(s, nb >> s, per_bin, self.shared_memory_per_block());
        let (name, grid) = match slab_log {
            Some(slab_log) => {
                let smem = scatter_shared_bytes(nb >> s, slab_log) as u32;
                let tile = SCATTER_PPT * SCATTER_THREADS as usize;
                let grid = LaunchConfig {
                    grid_dim: (n.div_ceil(tile) as u32, 1, 1),
                    block_dim: (SCATTER_THREADS, 1, 1),
                    shared_mem_bytes: smem,
                };
                ("msm_scatter_tiled", grid)
            }
            None => ("msm_scatter", cfg(n, 256)),
        };
        let f = self.msm_kernel::<C>(name)?;
        if slab_log.is_some() {
            f.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                grid.shared_mem_bytes as i32,
            )
            .map_err(self.drv("allowing msm_scatter_tiled its shared memory"))?;
        }
        let mut l = stream.launch_builder(&f);
        l.arg(&canon).arg(&n32).arg(&c).arg(&nw).arg(&s);
        if let Some(slab_log) = slab_log.as_ref() {
            l.arg(slab_log);
        }
        l.arg(&large)
            .arg(&mut cursor)
            .arg(&mut sorted)
            .arg(&mut low);
        // SAFETY: msm_scatter(const u32* canon[8 n] (the transposed scalars msm_scalars
        // wrote), u32 n, u32 c, u32 nw, u32 s, const u32* large, u32* cursor,
        // u32* sorted[entries], u8* low[entries]), and msm_scatter_tiled with `u32 slab_log`
        // after s (s >= 1 there). The cursors start at exclusive offsets of the counts the
        // same digits produced (a small bin's entries advance the cursor of its first bucket,
        // within the bin's span; a tile's slab reserves at most the digits the histogram
        // counted for its bin), so every position written is < entries; nw windows hold every
        // digit (WindowPlan::choose); with s = 0 neither `large` nor `low` is touched. The
        // tiled kernel's shared memory is scatter_shared_bytes(nb >> s, slab_log), nb >> s <=
        // SCATTER_TILED_MAX_BINS, within the device's limit (scatter_slab_log), in blocks of
        // 1024 threads (its launch bound; a multiple of 32, as its warp votes need).
        unsafe { l.launch(grid) }.map_err(self.drv("launching the MSM scatter"))?;
        if s != 0 {
            marks.mark(self, "scatter");
            let f = self.msm_kernel::<C>("msm_bin_sort")?;
            let smem = (cap * 4) as u32;
            f.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                smem as i32,
            )
            .map_err(self.drv("allowing msm_bin_sort its shared memory"))?;
            let mut l = stream.launch_builder(&f);
            l.arg(offsets)
                .arg(&s)
                .arg(&large)
                .arg(&mut sorted)
                .arg(&low);
            let grid = LaunchConfig {
                grid_dim: (nbins as u32, 1, 1),
                block_dim: (1024, 1, 1),
                shared_mem_bytes: smem,
            };
            // SAFETY: (const u32* offsets[nbuckets + 1], u32 s <= 8, const u32* large, u32*
            // sorted[entries], const u8* low[entries]); one block per bin, nbins << s ==
            // nbuckets; a small bin has at most `cap` entries (msm_bin_flags was given `cap`),
            // the dynamic shared buffer's size in words, which with the static cursors fits
            // the device's opt-in limit (bin_capacity).
            unsafe { l.launch(grid) }.map_err(self.drv("launching msm_bin_sort"))?;
        }
        drop(large);
        drop(low);
        drop(cursor);
        drop(canon);
        marks.mark(self, if s == 0 { "scatter" } else { "bin sort" });
        Ok(sorted)
    }

    /// Step 5: runs of k consecutive entries, across bucket boundaries: one thread each, so
    /// every thread makes k additions whatever the bucket sizes. Returns k, the number of
    /// runs, the rounds of the pairwise sum of split buckets' pieces, and each run's first
    /// bucket.
    ///
    /// With one thread per bucket, a warp waited for its largest bucket: 85% of the
    /// additions' time did work for random G1 scalars at 2^26, 73% for G2 at 2^24, from the
    /// Poisson spread of bucket sizes. k is at least four times the mean bucket size
    /// (RUN_FACTOR: 4 for G1, 8 for G2), so there are at most nbuckets / 4 + 1 runs and
    /// nbuckets / 2 + 2 piece slots (msm_scratch_bytes counts 1.25 nbuckets + 1); each run
    /// boundary splits a bucket, whose pieces cost one more (non-mixed) addition: at twice
    /// the mean, that was 38 ms of a 2^24 G2 MSM, at four times 10.0 ms, at eight 4.7 ms.
    fn split_runs<C: MsmCurve>(
        &self,
        offsets: &CudaSlice<u32>,
        entries: usize,
        nbuckets: usize,
    ) -> Result<(u32, usize, u32, CudaSlice<u32>)> {
        // the scratch counted by msm_scratch_bytes holds runs of at least 4 mean bucket sizes
        const {
            assert!(
                C::RUN_FACTOR >= 4,
                "MsmCurve::RUN_FACTOR must be at least 4"
            )
        };
        let nbuckets32 = nbuckets as u32;
        let k = (C::RUN_FACTOR * entries.div_ceil(nbuckets)).max(16) as u32;
        let nruns = entries.div_ceil(k as usize);
        let mut run_first = self.zeroed_u32(nruns)?;
        let mut longest = self.zeroed_u32(1)?;
        let f = self.msm_kernel::<C>("msm_run_first")?;
        let mut l = self.stream().launch_builder(&f);
        l.arg(offsets)
            .arg(&nbuckets32)
            .arg(&k)
            .arg(&mut run_first)
            .arg(&mut longest);
        // SAFETY: (const u32* offsets[nbuckets + 1], u32 nbuckets, u32 k, u32* run_first[nruns],
        // u32* longest[1], zeroed); the runs a bucket writes start below offsets[nbuckets] =
        // entries, so their indices are < ceil(entries / k) = nruns.
        unsafe { l.launch(cfg(nbuckets, 256)) }.map_err(self.drv("launching msm_run_first"))?;
        let longest = self.read_back(&longest, "reading the MSM's longest split bucket")?;
        // rounds of the pairwise sum: ceil(log2(most pieces)), 0 when no bucket was split
        let rounds = longest[0].max(1).next_power_of_two().trailing_zeros();
        Ok((k, nruns, rounds, run_first))
    }

    /// Steps 6-9 of one chunk (see msm.cu): the bucket sums of `bases` (the chunk's points,
    /// as many as the scalars `lists` was built from) and the windows' weighted sums.
    fn reduce_lists<C: MsmCurve>(
        &self,
        bases: CudaView<'_, <C::Affine as DeviceElem>::Raw>,
        lists: &BucketLists,
        marks: &mut Steps,
    ) -> Result<C::Projective> {
        let held = self.accumulate_lists::<C>(bases, lists, None, marks)?;
        self.window_sums::<C>(held, marks)
    }

    /// Step 6 of one chunk (see msm.cu): the bucket sums of `bases` (the chunk's points, as
    /// many as the scalars `lists` was built from), added to `into`'s (earlier chunks' sums
    /// under the same plan: [`Buckets::takes`]) or from nothing.
    pub(crate) fn accumulate_lists<C: MsmCurve>(
        &self,
        bases: CudaView<'_, <C::Affine as DeviceElem>::Raw>,
        lists: &BucketLists,
        into: Option<Buckets>,
        marks: &mut Steps,
    ) -> Result<Buckets> {
        let stream = self.stream().clone();
        let BucketLists {
            c,
            nw,
            entries,
            k,
            nruns,
            rounds,
            ref sorted,
            ref offsets,
            ref run_first,
        } = *lists;
        let nb = 1usize << (c - 1);
        let nbuckets = nw as usize * nb;
        let nbuckets32 = nbuckets as u32;
        let (nruns32, entries32) = (nruns as u32, entries as u32);

        // 6. bucket sums: whole buckets straight from the runs, split ones from their pieces
        let alloc_zeroed_xyzz = |count: usize| -> Result<CudaSlice<u64>> {
            stream
                .alloc_zeros::<u64>(count * C::XYZZ_LIMBS)
                .map_err(self.drv("allocating MSM buckets"))
        };
        let (mut buckets, plan_nw, into32) = match into {
            Some(held) => {
                // Buckets::takes: the same width and at least this chunk's windows
                debug_assert!(held.c == c && held.nw >= nw);
                (held.sums, held.nw, 1u32)
            }
            None => (alloc_zeroed_xyzz(nbuckets)?, nw, 0u32),
        };
        let mut partial = alloc_zeroed_xyzz(2 * nruns)?;
        // G2's accumulation and piece sums on lane pairs (MsmCurve::PAIR_KERNELS):
        // `{name}_pair{suffix}` in the accumulation module, two threads where G1's one-lane
        // kernel takes one
        let pair = C::PAIR_KERNELS;
        let pair_kernel = |name: &str| self.pair_function::<C>(name);
        let f = self.accumulate_function::<C>()?;
        let mut l = stream.launch_builder(&f);
        l.arg(&bases)
            .arg(sorted)
            .arg(offsets)
            .arg(&nbuckets32)
            .arg(run_first)
            .arg(&nruns32)
            .arg(&entries32)
            .arg(&k);
        l.arg(&mut buckets).arg(&mut partial).arg(&into32);
        // SAFETY: (const Affine* bases[n], const u32* sorted[entries], const u32* offsets[nbuckets + 1],
        // u32 nbuckets, const u32* run_first[nruns], u32 nruns, u32 entries, u32 k,
        // Xyzz* buckets[plan_nw * nb >= nbuckets] zeroed or (into) an earlier chunk's sums,
        // Xyzz* partial[2 * nruns] zeroed, u32 into); sorted entries index points < n; a thread
        // (or lane pair) reads and writes only the buckets that begin in its run, and writes
        // its own two slots. The pair kernel takes two threads a run in blocks of 128 (even).
        unsafe { l.launch(cfg(lanes(pair) * nruns, 128)) }
            .map_err(self.drv("launching msm_accumulate"))?;
        marks.mark(self, "accumulate");
        let accumulate_kernel =
            |name: &str| self.function(&C::ACCUMULATE_MODULE, &format!("{name}{}", C::SUFFIX));
        let f = if pair {
            pair_kernel("msm_fix_round")?
        } else {
            accumulate_kernel("msm_fix_round")?
        };
        for r in 0..rounds {
            let stride = 1u32 << r;
            let mut l = stream.launch_builder(&f);
            l.arg(&mut partial)
                .arg(offsets)
                .arg(run_first)
                .arg(&nruns32)
                .arg(&k)
                .arg(&stride);
            // SAFETY: (Xyzz* partial[2 * nruns], const u32* offsets[nbuckets + 1],
            // const u32* run_first[nruns], u32 nruns, u32 k, u32 stride); thread p (or lane
            // pair p, in blocks of 128) writes only slot p and reads slot p + stride < 2 * nruns
            // only inside the same split bucket's pieces.
            unsafe { l.launch(cfg(lanes(pair) * 2 * nruns, 128)) }
                .map_err(self.drv("launching msm_fix_round"))?;
        }
        if rounds > 0 {
            let f = accumulate_kernel("msm_fix_store")?;
            let mut l = stream.launch_builder(&f);
            l.arg(&partial)
                .arg(offsets)
                .arg(run_first)
                .arg(&nruns32)
                .arg(&k)
                .arg(&mut buckets);
            // SAFETY: (const Xyzz* partial[2 * nruns], const u32* offsets[nbuckets + 1],
            // const u32* run_first[nruns], u32 nruns, u32 k, Xyzz* buckets[nbuckets]);
            // each split bucket is written by one boundary.
            unsafe { l.launch(cfg(nruns, 128)) }.map_err(self.drv("launching msm_fix_store"))?;
        }
        drop(partial);
        marks.mark(self, "fix");
        Ok(Buckets {
            c,
            nw: plan_nw,
            sums: buckets,
        })
    }

    /// The accumulation kernel of curve `C`: `msm_accumulate`, on lane pairs where
    /// [`MsmCurve::PAIR_KERNELS`] says so (G2).
    pub(crate) fn accumulate_function<C: MsmCurve>(&self) -> Result<CudaFunction> {
        if C::PAIR_KERNELS {
            self.pair_function::<C>("msm_accumulate")
        } else {
            self.function(
                &C::ACCUMULATE_MODULE,
                &format!("msm_accumulate{}", C::SUFFIX),
            )
        }
    }

    /// The lane-pair form of step `name` (see [`pair_segments`]): `{name}_pair{suffix}` in the
    /// accumulation module, two threads where the one-lane kernel takes one.
    fn pair_function<C: MsmCurve>(&self, name: &str) -> Result<CudaFunction> {
        self.function(&C::ACCUMULATE_MODULE, &format!("{name}_pair{}", C::SUFFIX))
    }

    /// Steps 7-9 (see msm.cu): the weighted sums of `held`'s windows, combined on the host.
    fn window_sums<C: MsmCurve>(&self, held: Buckets, marks: &mut Steps) -> Result<C::Projective> {
        let stream = self.stream().clone();
        let kernel = |name: &str| self.function(&C::MODULE, &format!("{name}{}", C::SUFFIX));
        let pair_kernel = |name: &str| self.pair_function::<C>(name);
        let alloc_xyzz = |count: usize| -> Result<CudaSlice<u64>> {
            // SAFETY: every element is written by the kernel that produces it before it is read.
            unsafe { stream.alloc::<u64>(count * C::XYZZ_LIMBS) }
                .map_err(self.drv("allocating MSM buckets"))
        };
        let Buckets {
            c,
            nw,
            sums: buckets,
        } = held;
        let nb = 1usize << (c - 1);
        let nbuckets = nw as usize * nb;

        // 7. weighted window sums per segment
        let seg = (nbuckets / 65536).next_power_of_two().clamp(1, nb);
        let mut per_window = nb / seg;
        let nsegs = nw as usize * per_window;
        let mut level = alloc_xyzz(nsegs)?;
        let pair_seg = pair_segments::<C>(seg);
        let f = if pair_seg {
            pair_kernel("msm_segments")?
        } else {
            kernel("msm_segments")?
        };
        let (nb32, seg32, nsegs32) = (nb as u32, seg as u32, nsegs as u32);
        let mut l = stream.launch_builder(&f);
        l.arg(&buckets)
            .arg(&nb32)
            .arg(&seg32)
            .arg(&nsegs32)
            .arg(&mut level);
        // SAFETY: (const Xyzz* buckets[nw * nb], u32 nb, u32 seg, u32 nsegs, Xyzz* out[nsegs]);
        // thread t (or lane pair t, in blocks of 128) writes only out[t].
        unsafe { l.launch(cfg(lanes(pair_seg) * nsegs, 128)) }
            .map_err(self.drv("launching msm_segments"))?;
        drop(buckets);
        marks.mark(self, "segments");

        // 8. tree reduction inside each window, four at a time: the last levels have few
        // threads, so their serial additions are latency (measured on an H200: groups of 32
        // took 4.7 ms for a G2 MSM of 2^20 Filecoin-shaped scalars)
        let f = kernel("msm_sum_groups")?;
        while per_window > 8 {
            let group = per_window.min(4);
            let nout = nw as usize * per_window / group;
            let mut next = alloc_xyzz(nout)?;
            let (g32, nout32) = (group as u32, nout as u32);
            let mut l = stream.launch_builder(&f);
            l.arg(&level).arg(&g32).arg(&nout32).arg(&mut next);
            // SAFETY: (const Xyzz* in[nout * group], u32 group, u32 nout, Xyzz* out[nout]).
            unsafe { l.launch(cfg(nout, 64)) }.map_err(self.drv("launching msm_sum_groups"))?;
            level = next;
            per_window /= group;
        }
        marks.mark(self, "reduce");

        // 9. host: finish each window and combine with Horner's rule
        let limbs = self.read_back(&level, "copying MSM windows to the host")?;
        let mut acc = C::Projective::identity();
        for w in (0..nw as usize).rev() {
            for _ in 0..c {
                acc = acc.double();
            }
            for j in 0..per_window {
                let at = (w * per_window + j) * C::XYZZ_LIMBS;
                acc += C::from_xyzz(&limbs[at..at + C::XYZZ_LIMBS]);
            }
        }
        marks.mark(self, "host");
        Ok(acc)
    }

    /// Exclusive prefix sum of `counts[..len]` into `offsets[..=len]` (and `cursor[..len]`).
    pub(crate) fn exclusive_scan<C: MsmCurve>(
        &self,
        counts: &CudaSlice<u32>,
        len: usize,
        offsets: &mut CudaSlice<u32>,
        cursor: Option<&mut CudaSlice<u32>>,
    ) -> Result<()> {
        const PER_BLOCK: usize = 8192;
        let stream = self.stream();
        let sums_f = self.function(&C::MODULE, &format!("msm_block_sums{}", C::SUFFIX))?;
        let scan_f = self.function(&C::MODULE, &format!("msm_scan{}", C::SUFFIX))?;
        let blocks = len.div_ceil(PER_BLOCK).max(1);
        let (len32, per32, blocks32) = (len as u32, PER_BLOCK as u32, blocks as u32);
        let block = |b: usize| LaunchConfig {
            grid_dim: (b as u32, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut sums = stream
            .alloc_zeros::<u32>(blocks)
            .map_err(self.drv("allocating scan scratch"))?;
        let mut base = stream
            .alloc_zeros::<u32>(blocks + 1)
            .map_err(self.drv("allocating scan scratch"))?;
        let mut l = stream.launch_builder(&sums_f);
        l.arg(counts).arg(&len32).arg(&per32).arg(&mut sums);
        // SAFETY: (const u32* counts[len], u32 len, u32 per_block, u32* sums[blocks]).
        unsafe { l.launch(block(blocks)) }.map_err(self.drv("launching msm_block_sums"))?;
        // scan of the block sums in one block (blocks <= 2^20 / 8192 * 2^12 fits easily)
        let null: u64 = 0;
        let big = blocks32.max(1);
        let mut l = stream.launch_builder(&scan_f);
        l.arg(&sums)
            .arg(&blocks32)
            .arg(&big)
            .arg(&null)
            .arg(&mut base)
            .arg(&null);
        // SAFETY: (const u32* sums[blocks], u32 len, u32 per_block = len, null base, u32* base[blocks + 1], null).
        unsafe { l.launch(block(1)) }.map_err(self.drv("launching msm_scan"))?;
        let mut l = stream.launch_builder(&scan_f);
        l.arg(counts)
            .arg(&len32)
            .arg(&per32)
            .arg(&base)
            .arg(offsets);
        match cursor {
            Some(c) => l.arg(c),
            None => l.arg(&null),
        };
        // SAFETY: (const u32* counts[len], u32 len, u32 per_block, const u32* base[blocks],
        // u32* offsets[len + 1], u32* cursor[len] or null).
        unsafe { l.launch(block(blocks)) }.map_err(self.drv("launching msm_scan"))?;
        Ok(())
    }
}

/// An upper bound, in bytes, on the device memory one MSM of `n` points over curve `C`
/// allocates besides its bases and scalars: the sum of every scratch buffer of one chunk of
/// `min(n, MAX_CHUNK)` points (the peak is lower: buffers are freed between steps). Chunks
/// run one after another, so larger `n` needs no more: the bucket sums a chunk hands to the
/// next are one of the buffers summed here, and the next chunk allocates no buckets of its own.
pub fn msm_scratch_bytes<C: MsmCurve>(n: usize) -> u64 {
    scratch_bytes::<C>(n, n)
}

/// An upper bound, in bytes, on the device memory [`GpuDevice::msm_streamed`] of `n` points
/// in chunks of `chunk` allocates besides its ring and scalars: [`msm_scratch_bytes`] of one
/// chunk with [`WindowSpan::Chunk`]; with [`WindowSpan::Whole`], one chunk's lists beside
/// the buckets of the widest plan for `n` points (a 2^27-point G1 MSM in chunks of 2^21:
/// about 5.6 GiB, against 0.7 GiB a chunk planned alone).
pub fn streamed_msm_scratch_bytes<C: MsmCurve>(n: usize, chunk: usize, span: WindowSpan) -> u64 {
    let chunk = chunk.min(n);
    match span {
        WindowSpan::Chunk => scratch_bytes::<C>(chunk, chunk),
        WindowSpan::Whole => scratch_bytes::<C>(n, chunk),
    }
}

/// The scratch of one chunk of `chunk` points whose plan is chosen for `n` >= `chunk`
/// points (both counted at most [`MAX_CHUNK`]): the sum of every buffer.
fn scratch_bytes<C: MsmCurve>(n: usize, chunk: usize) -> u64 {
    let n = n.min(MAX_CHUNK);
    let chunk = chunk.min(n) as u64;
    if chunk == 0 {
        return 0;
    }
    // The widest plan WindowPlan::choose_for may pick has the most buckets (windows x
    // 2^(c-1) grows with c from 8 up); the plan it picks costs no more than that plan, its
    // digits counted n / chunk times (at least once), so a chunk's digits are at most that
    // plan's cost, and signed recoding adds at most one carry digit per scalar.
    let c = window_bits(n);
    let nw = u64::from(256u32.div_ceil(c));
    let nbuckets = nw << (c - 1);
    let entries = chunk * nw + 3 * nbuckets + chunk;
    // the accumulation's runs of k >= 4 * entries / buckets entries: at most buckets / 4 + 1
    // runs, two piece slots each (the bound keeps the former per-bucket parts' 1.25 buckets)
    let nparts = nbuckets + nbuckets / 4 + 1;
    let xyzz = C::XYZZ_LIMBS as u64 * 8;
    let canon = chunk * 32;
    let counts_offsets_cursor = (3 * nbuckets + 1) * 4;
    let scan_scratch = (2 * nbuckets.div_ceil(8192) + 2) * 4;
    // the bucket lists, and the bucket's low bits of each binned entry (bin_shift)
    let sorted = entries * 4 + entries + nbuckets.div_ceil(32) * 4;
    let parts = (2 * nbuckets + 1 + nparts) * 4;
    // partial sums, buckets, segment sums (<= nbuckets) and their reductions (< nbuckets / 4)
    let points = (nparts + 3 * nbuckets) * xyzz;
    canon + counts_offsets_cursor + scan_scratch + sorted + parts + points
}

pub(crate) fn check_range(len: usize, range: &Range<usize>) -> Result<()> {
    if range.start <= range.end && range.end <= len {
        Ok(())
    } else {
        Err(Error::Unsupported {
            op: "msm",
            detail: format!("range {range:?} outside {len} bases"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_bound_covers_the_big_buffers() {
        assert_eq!(msm_scratch_bytes::<G1>(0), 0);
        for log in [0u32, 4, 10, 16, 20, 22, 24, 26] {
            let n = 1usize << log;
            let c = window_bits(n);
            let nw = 256u64.div_ceil(c as u64);
            let nb = nw << (c - 1);
            let g1 = msm_scratch_bytes::<G1>(n);
            let g2 = msm_scratch_bytes::<G2>(n);
            // canonical scalars, bucket lists, buckets and their partial sums at least
            let floor = n as u64 * 32 + n as u64 * nw * 4 + 2 * nb * 192;
            assert!(g1 >= floor, "n=2^{log}: {g1} < {floor}");
            assert!(g2 > g1);
        }
        // chunked: no more than one chunk
        assert_eq!(
            msm_scratch_bytes::<G1>(3 * MAX_CHUNK),
            msm_scratch_bytes::<G1>(MAX_CHUNK)
        );
        // about 9 GiB for a 2^26 G1 chunk: sanity of the units
        let gib = msm_scratch_bytes::<G1>(1 << 26) as f64 / (1u64 << 30) as f64;
        assert!((4.0..16.0).contains(&gib), "{gib} GiB");
    }

    #[test]
    fn bin_capacity_fits_the_device_shared_memory() {
        // H200: 227 KiB a block; consumer GPUs 99 KiB; every GPU at least 48 KiB
        assert_eq!(bin_capacity(232_448), 1 << 15);
        assert_eq!(bin_capacity(101_376), 1 << 14);
        assert_eq!(bin_capacity(49_152), 1 << 13);
        assert_eq!(bin_capacity(0), 1);
        for bytes in (0..300_000).step_by(997) {
            let cap = bin_capacity(bytes);
            assert!(cap.is_power_of_two() && cap <= BIN_CAP_MAX);
            assert!(cap == 1 || cap * 4 + BIN_SORT_STATIC_SHARED <= bytes);
        }
    }

    #[test]
    fn scatter_slabs_fit_the_device_shared_memory() {
        // a random 2^26 G1 chunk on an H200: 4096 bins a window, about 4 entries a bin a tile
        let per_bin = scatter_per_bin(13 << 26, 1 << 26, 13, 4096);
        assert!((per_bin - 4.0).abs() < 1e-9);
        assert_eq!(scatter_slab_log(7, 4096, per_bin, 232_448), Some(3));
        // consumer GPUs (99 KiB a block): 4096 bins do not fit (msm_scatter), 2048 do
        assert_eq!(scatter_slab_log(7, 4096, per_bin, 101_376), None);
        assert_eq!(scatter_slab_log(7, 2048, 2.0 * per_bin, 101_376), Some(3));
        // slabs of twice the mean, at least 4, at most what fits or 64
        assert_eq!(scatter_slab_log(7, 512, 4.5, 232_448), Some(4));
        assert_eq!(scatter_slab_log(7, 512, 0.1, 232_448), Some(2));
        assert_eq!(scatter_slab_log(7, 512, 1e6, 232_448), Some(6));
        assert_eq!(scatter_slab_log(7, 4096, 1e6, 232_448), Some(3));
        // no bins (s = 0), too many, or too little shared memory: msm_scatter
        assert_eq!(scatter_slab_log(0, 4096, 4.0, 232_448), None);
        // a random 2^27 G1 chunk: 8192 bins a window, about 2 entries a bin a tile; slabs of
        // 4 (224 KiB) fit an H200, 8 do not; 16384 bins never take the tiled scatter
        let per_bin = scatter_per_bin(13 << 27, 1 << 27, 13, 8192);
        assert!((per_bin - 2.0).abs() < 1e-9);
        assert_eq!(scatter_slab_log(6, 8192, per_bin, 232_448), Some(2));
        assert_eq!(scatter_slab_log(6, 8192, 4.0, 232_448), Some(2));
        assert_eq!(scatter_slab_log(6, 8192, per_bin, 101_376), None);
        assert_eq!(scatter_slab_log(5, 16384, 1.0, 1 << 30), None);
        assert_eq!(scatter_slab_log(7, 4096, 4.0, 49_152), None);
        for nbw in [1, 2, 64, 512, 1000, 4096, 8192] {
            for per_bin in [0.0, 1.0, 3.0, 17.0, 1e9] {
                for bytes in (0..300_000).step_by(4999) {
                    if let Some(l) = scatter_slab_log(3, nbw, per_bin, bytes) {
                        assert!((2..=SCATTER_MAX_SLAB_LOG).contains(&l));
                        assert!(scatter_shared_bytes(nbw, l) <= bytes);
                        // twice the mean, unless that does not fit
                        let fits_more =
                            l < SCATTER_MAX_SLAB_LOG && scatter_shared_bytes(nbw, l + 1) <= bytes;
                        assert!((1u64 << l) as f64 >= 2.0 * per_bin || !fits_more);
                    }
                }
            }
        }
        // a tile larger than the input counts the input's points only
        assert!((scatter_per_bin(100, 10, 10, 1) - 10.0).abs() < 1e-9);
    }

    /// The tile msm.cu's msm_scatter_tiled covers is the one the host's grid assumes.
    #[test]
    fn kernel_source_agrees_on_the_scatter_tile() {
        let src = crate::compile::MSM_G1.sources.concat();
        let line = format!("#define SCATTER_PPT {SCATTER_PPT}\n");
        assert!(src.contains(&line), "msm.cu lacks `{}`", line.trim_end());
        assert_eq!(
            SCATTER_THREADS % 32,
            0,
            "the kernel's warp votes need whole warps"
        );
        let bound = format!("__launch_bounds__({SCATTER_THREADS}, 1) MSM_NAME(msm_scatter_tiled)");
        assert!(src.contains(&bound), "msm.cu lacks `{bound}`");
    }

    #[test]
    fn bins_hold_about_half_the_capacity_and_never_cross_a_window() {
        let cap = BIN_CAP_MAX;
        // random 2^26 scalars, c = 20, 13 windows: 128 entries a bucket, 128 buckets a bin
        assert_eq!(bin_shift(13 << 26, 13 << 19, 20, cap), 7);
        // the same on a GPU with 99 KiB a block: 64 buckets a bin
        assert_eq!(bin_shift(13 << 26, 13 << 19, 20, 1 << 14), 6);
        // crowded buckets: one bucket a bin, no bin sort
        assert_eq!(bin_shift(1 << 24, 256, 9, cap), 0);
        // sparse digits: at most 256 buckets a bin (msm_bin_sort's shared counters)
        assert_eq!(bin_shift(1000, 13 << 19, 20, cap), 8);
        // never more buckets a bin than a window has (2^s divides 2^(c - 1))
        assert_eq!(bin_shift(10, 1 << 7, 8, cap), 7);
        for cap in [1usize, 1 << 13, 1 << 14, 1 << 15] {
            for c in 8..=20u32 {
                for entries in [0usize, 1, 1 << 10, 1 << 20, 1 << 30] {
                    let nbuckets = 13usize << (c - 1);
                    let s = bin_shift(entries, nbuckets, c, cap);
                    assert!(s <= 8 && s < c);
                    if s > 0 {
                        assert!(entries.div_ceil(nbuckets).max(1) << s <= cap / 2);
                    }
                }
            }
        }
    }

    fn hist_of(bits: &[(usize, u32)]) -> Vec<u32> {
        let mut h = vec![0u32; 257];
        for &(b, count) in bits {
            h[b] += count;
        }
        h
    }

    #[test]
    fn window_sums_run_on_lane_pairs_for_long_g2_segments_only() {
        assert!(pair_segments::<G2>(PAIR_SEGMENTS_MIN) && pair_segments::<G2>(128));
        assert!(!pair_segments::<G2>(PAIR_SEGMENTS_MIN - 1) && !pair_segments::<G2>(8));
        // G1 has no lane-pair kernels
        assert!(!pair_segments::<G1>(1 << 20));
    }

    #[test]
    fn window_plan_for_random_scalars_is_the_full_width_plan() {
        for log in [10u32, 16, 20, 22, 24, 26] {
            let n = 1usize << log;
            // random scalars below r < 2^255: half have 255 bits, a quarter 254, ...
            let h = hist_of(&[
                (255, (n / 2) as u32),
                (254, (n / 4) as u32),
                (253, (n / 4) as u32),
            ]);
            let p = WindowPlan::choose(&h, n).unwrap();
            assert_eq!(p.c, window_bits(n), "n=2^{log}");
            assert_eq!(p.windows, 256u32.div_ceil(p.c), "n=2^{log}");
        }
    }

    #[test]
    fn window_plan_for_small_scalars_has_fewer_windows() {
        assert_eq!(WindowPlan::choose(&hist_of(&[(0, 1000)]), 1000), None);
        assert_eq!(WindowPlan::choose(&hist_of(&[]), 0), None);
        // only zeros and ones: one window of the narrowest width
        let p = WindowPlan::choose(&hist_of(&[(0, 600), (1, 400)]), 1000).unwrap();
        assert_eq!(p, WindowPlan { c: 8, windows: 1 });
        // Filecoin-shaped: 40% zero, 35% one, 15% below 2^32, 10% full width
        let n = 1usize << 22;
        let part = |pct: usize| (n * pct / 100) as u32;
        let h = hist_of(&[
            (0, part(40)),
            (1, part(35)),
            (32, part(15)),
            (255, part(10)),
        ]);
        let p = WindowPlan::choose(&h, n).unwrap();
        assert!(p.c <= window_bits(n));
        assert_eq!(p.windows, 256u32.div_ceil(p.c)); // the full-width tenth needs every window
                                                     // scalars below 2^40: windows cover 41 bits (the last carry), no more
        let p = WindowPlan::choose(&hist_of(&[(40, 1 << 20)]), 1 << 20).unwrap();
        assert_eq!(p.windows, 41u32.div_ceil(p.c));
        assert!(p.windows * p.c > 40);
    }

    #[test]
    fn window_plan_for_the_whole_range_takes_the_wider_windows() {
        // a 2^21 chunk of random scalars of a 2^27 - 1 H query
        let (n, total) = (1usize << 21, (1usize << 27) - 1);
        let h = hist_of(&[
            (255, (n / 2) as u32),
            (254, (n / 4) as u32),
            (253, (n / 4) as u32),
        ]);
        let alone = WindowPlan::choose(&h, n).unwrap();
        let whole = WindowPlan::choose_for(&h, n, total).unwrap();
        assert_eq!(alone, WindowPlan::choose_for(&h, n, n).unwrap());
        assert_eq!(alone.c, window_bits(n));
        assert_eq!(whole.c, window_bits(MAX_CHUNK));
        assert!(
            whole.c > alone.c && whole.windows < alone.windows,
            "{whole:?} {alone:?}"
        );
        // never wider than the widest plan of MAX_CHUNK points, whose buckets the scratch
        // bound counts, however long the range
        let huge = WindowPlan::choose_for(&h, n, 1 << 40).unwrap();
        assert!(huge.c <= window_bits(MAX_CHUNK));
        // a chunk longer than `total` says is planned for itself
        assert_eq!(WindowPlan::choose_for(&h, n, 10), Some(alone));
        // mostly ones with a few full-width values: the digits of the ones do not depend
        // on c, and the whole range's buckets cost once
        let mixed = hist_of(&[
            (0, (n / 2) as u32),
            (1, (n / 2 - n / 64) as u32),
            (255, (n / 64) as u32),
        ]);
        let a = WindowPlan::choose(&mixed, n).unwrap();
        let w = WindowPlan::choose_for(&mixed, n, total).unwrap();
        assert!(w.c >= a.c && w.c <= window_bits(MAX_CHUNK), "{w:?} {a:?}");
        assert_eq!(
            WindowPlan::choose_for(&hist_of(&[(0, 10)]), 10, total),
            None
        );
    }

    #[test]
    fn streamed_scratch_counts_the_whole_plans_buckets() {
        let (n, chunk) = ((1usize << 27) - 1, 1usize << 21);
        let alone = streamed_msm_scratch_bytes::<G1>(n, chunk, WindowSpan::Chunk);
        let whole = streamed_msm_scratch_bytes::<G1>(n, chunk, WindowSpan::Whole);
        assert_eq!(alone, msm_scratch_bytes::<G1>(chunk));
        // the widest plan's buckets (13 windows of 2^19 G1 XYZZ sums: 1.3 GB) at least
        let c = window_bits(MAX_CHUNK);
        let buckets = u64::from(256u32.div_ceil(c)) << (c - 1);
        assert!(
            whole >= buckets * 192 + alone - chunk as u64 * 32,
            "{whole}"
        );
        // below the bound of one 2^26 chunk, whose lists are 32 times as long
        assert!(whole < msm_scratch_bytes::<G1>(n), "{whole}");
        let gib = whole as f64 / (1u64 << 30) as f64;
        assert!((3.0..8.0).contains(&gib), "{gib} GiB");
        // a chunk as long as the range: the same bound either way
        assert_eq!(
            streamed_msm_scratch_bytes::<G2>(1000, 4096, WindowSpan::Whole),
            msm_scratch_bytes::<G2>(1000)
        );
        assert_eq!(
            streamed_msm_scratch_bytes::<G1>(0, chunk, WindowSpan::Whole),
            0
        );
    }

    #[test]
    fn window_fits_the_kernels() {
        for log in 0..=28 {
            let n = 1usize << log;
            let c = window_bits(n);
            assert!((8..=20).contains(&c));
            // every index fits in 31 bits and n * nw in u32
            assert!((n.min(MAX_CHUNK) as u64) * 256u64.div_ceil(c as u64) < 1 << 32);
        }
    }
}
