//! MSMs of several sets of scalars over one set of streamed bases, each chunk of bases
//! crossing the link once for all of them ([`GpuDevice::msm_streamed_batch`]): the L, A and
//! B queries of a batch of Groth16 partitions of one circuit.
//!
//! The scalars are what a Filecoin witness mostly is, zeros and ones ([`DeviceOnesAndRest`]),
//! so a full Pippenger MSM a set and chunk (a sort of every scalar) would spend its time on
//! digits that are 0 or 1. Instead, in each chunk:
//! - the ones of all the sets become bucket lists of one bucket a set (`msm_ones.cu`:
//!   `ones_count`, the MSM's scan, `ones_emit`), and the MSM's own accumulation adds each
//!   set's points into its one sum, carried from chunk to chunk (about one mixed addition a
//!   one, in runs of equal length, at least [`ONES_RUN`], that fill whole waves of the
//!   kernel, so that every thread makes the same number);
//! - the points the other values (1.3% of a PoRep witness) pair with are copied out of the
//!   chunk (`gather_points`) into a buffer of the set's own.
//!
//! Once every chunk has passed, each set's gathered points and other values make one small
//! MSM ([`GpuDevice::msm_chunked`] in the ring's chunks, so that its scratch is no larger
//! than a streamed MSM's), added to its ones' sum.

use std::ops::Range;

use cudarc::driver::{CudaView, PushKernelArg};
use group::Group;

use crate::curve::MsmCurve;
use crate::device::{check_len, DeviceBuffer, GpuDevice};
use crate::error::{Error, Result};
use crate::layout::DeviceElem;
use crate::msm::{cfg, check_range, marks, BucketLists, Buckets, Source, WindowSpan};
use crate::ones::DeviceOnesAndRest;
use crate::profile::Steps;
use crate::stream::BaseRing;

/// Ones an accumulating thread adds in a batched MSM (the run length of the ones' bucket
/// lists). A set's ones all land in one bucket, so the MSM's own run length (a few times the
/// mean bucket size) would leave one thread a set; 64 gives a 2^22-point chunk of ten
/// half-ones sets about 330,000 threads, and the pieces of each set's bucket are then summed
/// pairwise in about 16 rounds.
pub const ONES_RUN: u32 = 64;

/// Most entries a chunk's ones lists may hold over all the sets (sets x chunk): the lists
/// index with 32 bits, and the accumulation's last run ends below entries + its length.
const MAX_LIST_ENTRIES: u64 = 1 << 31;

impl GpuDevice {
    /// `sum_i s_j[i] * host[range.start + i]` for every `s_j` of `sets` (each exactly
    /// `range.len()` scalars), with the bases streamed from host memory through `ring` once
    /// for all of them (see the module documentation). The results are in the order of
    /// `sets`, each the same as [`GpuDevice::msm_streamed`] with that set's scalars written
    /// out.
    ///
    /// Besides the ring, the device holds each set's gathered points (its count of other
    /// values, times a point) until the end, and one chunk's lists at a time: about
    /// [`ones_scratch_bytes`] a set. `host` should be [`crate::PinnedPoints`] memory.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), curve = C::NAME, n = range.len(), sets = sets.len(), chunk = ring.chunk()))]
    pub fn msm_streamed_batch<C: MsmCurve>(
        &self,
        host: &[C::Affine],
        range: Range<usize>,
        sets: &[&DeviceOnesAndRest],
        ring: &mut BaseRing<C>,
    ) -> Result<Vec<C::Projective>> {
        check_range(host.len(), &range)?;
        for set in sets {
            check_len("msm_streamed_batch (scalars)", range.len(), set.len())?;
        }
        let mut out = vec![C::Projective::identity(); sets.len()];
        if sets.is_empty() || range.is_empty() {
            return Ok(out);
        }
        let chunk = ring.chunk();
        if sets.len() as u64 * chunk.min(range.len()) as u64 > MAX_LIST_ENTRIES {
            return Err(Error::Unsupported {
                op: "msm_streamed_batch",
                detail: format!(
                    "{} sets of chunks of {chunk} points (at most 2^31 entries a chunk)",
                    sets.len()
                ),
            });
        }
        let mut gathered = sets
            .iter()
            .map(|set| match set.rest_count() {
                0 => Ok(None),
                n => self.alloc_uninit::<C::Affine>(n).map(Some),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut ones: Option<Buckets> = None;
        // the accumulation's runs in flight at once, for every chunk's run length
        let at_once = self.accumulate_runs_at_once::<C>()?;
        // the next chunk's copy is queued as soon as the current chunk's kernels are, so that
        // it crosses the link while they run
        let first = range.start..range.start + chunk.min(range.len());
        let mut slot = ring.fill(&host[first])?;
        let mut start = 0;
        while start < range.len() {
            let end = (start + chunk).min(range.len());
            let mut marks = marks(self, C::NAME, end - start);
            if let Some(lists) = self.ones_lists::<C>(sets, start..end, at_once, &mut marks)? {
                let bases = ring.view(slot, end - start);
                ones = Some(self.accumulate_lists::<C>(bases, &lists, ones.take(), &mut marks)?);
            }
            for (set, points) in sets.iter().zip(&mut gathered) {
                if let Some(points) = points.as_mut() {
                    self.gather_rest::<C>(ring.view(slot, end - start), set, start..end, points)?;
                }
            }
            marks.mark(self, "gather");
            if end < range.len() {
                let next = range.start + end..range.start + (end + chunk).min(range.len());
                slot = ring.fill(&host[next])?;
            }
            start = end;
        }
        // Copies no kernel read (chunks where no set has a one or another value) would still
        // be in flight: the caller may free `host` once this returns.
        ring.wait()?;
        if let Some(sums) = ones {
            let limbs = self.read_back(&sums.sums, "reading the sums of the ones")?;
            for (j, acc) in out.iter_mut().enumerate() {
                let at = j * C::XYZZ_LIMBS;
                *acc += C::from_xyzz(&limbs[at..at + C::XYZZ_LIMBS]);
            }
        }
        for ((set, points), acc) in sets.iter().zip(&gathered).zip(&mut out) {
            if let (Some(points), Some((_, values))) = (points, set.rest_parts()) {
                let n = points.len();
                let points = Source::<C>::Device(points);
                *acc += self.msm_over(points, 0..n, values, 0, chunk, WindowSpan::Chunk)?;
            }
        }
        Ok(out)
    }

    /// The ones of `sets` among positions `chunk` as bucket lists of one bucket a set (a
    /// window of width 1 a set: c = 1, nw = the number of sets), entries relative to the
    /// chunk's start, in runs of [`run_length`] for `at_once` runs in flight; `None` when no
    /// set has a one there.
    fn ones_lists<C: MsmCurve>(
        &self,
        sets: &[&DeviceOnesAndRest],
        chunk: Range<usize>,
        at_once: u64,
        marks: &mut Steps,
    ) -> Result<Option<BucketLists>> {
        let words = chunk.len().div_ceil(64);
        let total = words * sets.len();
        let k = sets.len();
        // the sets' lengths fit in u32 (OnesAndRest's invariant), and so does `total`
        // (msm_streamed_batch checked sets x chunk, which is at least it, against 2^31)
        let (start, end, words32) = (chunk.start as u32, chunk.end as u32, words as u32);
        let mut counts = self.zeroed_u32(total)?;
        let count = self.msm_kernel::<C>("ones_count")?;
        for (j, set) in sets.iter().enumerate() {
            let Some(bitmap) = set.ones_bitmap() else {
                continue; // no scalars (impossible here: the chunk is not empty)
            };
            let mut part = counts.slice_mut(j * words..(j + 1) * words);
            let mut l = self.stream().launch_builder(&count);
            l.arg(bitmap.raw())
                .arg(&start)
                .arg(&end)
                .arg(&words32)
                .arg(&mut part);
            // SAFETY: ones_count(const u64* ones, u32 start, u32 end, u32 words, u32*
            // counts[words]): `end` is at most the set's length (its bitmap has ceil(len / 64)
            // words, so every word ones_word reads exists), and thread w < words writes only
            // counts[w] of the `words` `part` holds.
            unsafe { l.launch(cfg(words, 256)) }.map_err(self.drv("launching ones_count"))?;
        }
        let mut offsets = self.zeroed_u32(total + 1)?;
        self.exclusive_scan::<C>(&counts, total, &mut offsets, None)?;
        drop(counts);
        let mut bucket_offsets = self.zeroed_u32(k + 1)?;
        let f = self.msm_kernel::<C>("ones_buckets")?;
        let k32 = k as u32;
        let mut l = self.stream().launch_builder(&f);
        l.arg(&offsets)
            .arg(&words32)
            .arg(&k32)
            .arg(&mut bucket_offsets);
        // SAFETY: ones_buckets(const u32* offsets[k words + 1], u32 words, u32 sets = k,
        // u32* bucket_offsets[k + 1]): thread j <= k reads offsets[j words] and writes
        // bucket_offsets[j].
        unsafe { l.launch(cfg(k + 1, 64)) }.map_err(self.drv("launching ones_buckets"))?;
        let host_offsets = self.read_back(&bucket_offsets, "reading the ones' counts")?;
        let entries = host_offsets.last().copied().unwrap_or(0) as usize;
        marks.mark(self, "ones count");
        if entries == 0 {
            return Ok(None);
        }
        // SAFETY: ones_emit writes every entry below (the offsets are the scan of the counts
        // of the same bits), before the accumulation reads any.
        let mut sorted = unsafe { self.stream().alloc::<u32>(entries) }
            .map_err(self.drv("allocating the ones' lists"))?;
        let emit = self.msm_kernel::<C>("ones_emit")?;
        for (j, set) in sets.iter().enumerate() {
            let Some(bitmap) = set.ones_bitmap() else {
                continue;
            };
            let at = offsets.slice(j * words..(j + 1) * words);
            let mut l = self.stream().launch_builder(&emit);
            l.arg(bitmap.raw())
                .arg(&start)
                .arg(&end)
                .arg(&words32)
                .arg(&at)
                .arg(&mut sorted);
            // SAFETY: ones_emit(const u64* ones, u32 start, u32 end, u32 words, const u32*
            // offsets[words], u32* sorted[entries]): the same bits ones_count counted, so
            // thread w writes offsets[w] .. offsets[w] + counts[w], within the scan's total
            // `entries`; the values are indices below the chunk's length.
            unsafe { l.launch(cfg(words, 256)) }.map_err(self.drv("launching ones_emit"))?;
        }
        drop(offsets);
        let k_run = run_length(entries as u64, at_once, ONES_RUN);
        let runs = ones_runs(&host_offsets, k_run);
        let mut run_first = self.zeroed_u32(runs.nruns)?;
        let f = self.msm_kernel::<C>("ones_runs")?;
        let nruns32 = runs.nruns as u32;
        let mut l = self.stream().launch_builder(&f);
        l.arg(&bucket_offsets)
            .arg(&k32)
            .arg(&k_run)
            .arg(&nruns32)
            .arg(&mut run_first);
        // SAFETY: ones_runs(const u32* offsets[k + 1], u32 nbuckets = k, u32 k, u32 nruns,
        // u32* run_first[nruns]): thread j < nruns reads offsets[0..k] (a binary search) and
        // writes run_first[j].
        unsafe { l.launch(cfg(runs.nruns, 256)) }.map_err(self.drv("launching ones_runs"))?;
        marks.mark(self, "ones lists");
        Ok(Some(BucketLists {
            c: 1,
            nw: k32,
            entries,
            k: k_run,
            nruns: runs.nruns,
            rounds: runs.rounds,
            sorted,
            offsets: bucket_offsets,
            run_first,
        }))
    }

    /// Runs the ones' accumulation kernel (`msm_accumulate`, blocks of 128 threads, two
    /// lanes a run for G2) keeps on the device at once: its resident blocks a multiprocessor
    /// times the multiprocessors.
    fn accumulate_runs_at_once<C: MsmCurve>(&self) -> Result<u64> {
        let blocks = self
            .accumulate_function::<C>()?
            .occupancy_max_active_blocks_per_multiprocessor(128, 0, None)
            .map_err(self.drv("asking the accumulation's occupancy"))?;
        let sms = self
            .context()
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(self.drv("asking the multiprocessor count"))?;
        let lanes = if C::PAIR_KERNELS { 2 } else { 1 };
        Ok(u64::from(blocks) * u64::from(sms.max(0) as u32) * 128 / lanes)
    }

    /// Copies the points of `chunk` (of `set`'s positions; `bases` holds that chunk's points)
    /// that `set`'s other values pair with into `out`, at those values' indices.
    fn gather_rest<C: MsmCurve>(
        &self,
        bases: CudaView<'_, <C::Affine as DeviceElem>::Raw>,
        set: &DeviceOnesAndRest,
        chunk: Range<usize>,
        out: &mut DeviceBuffer<C::Affine>,
    ) -> Result<()> {
        let part = set.rest_in(&chunk);
        let Some((at, _)) = set.rest_parts().filter(|_| !part.is_empty()) else {
            return Ok(());
        };
        let (count, start) = (part.len() as u32, chunk.start as u32);
        let at = at.view(part.clone());
        let mut dst = out.view_mut(part.clone());
        let f = self.msm_kernel::<C>("gather_points")?;
        let mut l = self.stream().launch_builder(&f);
        l.arg(&bases).arg(&at).arg(&count).arg(&start).arg(&mut dst);
        // SAFETY: gather_points(const Affine* bases[chunk.len()], const u32* at[count], u32
        // count, u32 start, Affine* out[count]): `part` holds exactly the set's positions in
        // `chunk` (the host copy equals the device's), so at[t] - start < chunk.len(); `out`
        // has one point a value of the set (the caller allocated it so), `dst` the `count`
        // of this part.
        unsafe { l.launch(cfg(part.len(), 256)) }.map_err(self.drv("launching gather_points"))?;
        Ok(())
    }
}

/// The runs of the ones' bucket lists with bucket offsets `offsets` (one bucket a set, the
/// last offset the total) and `k` entries a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Runs {
    /// `ceil(entries / k)`.
    nruns: usize,
    /// Rounds of the pairwise sum of split buckets' pieces: ceil(log2) of the most `partial`
    /// slots a bucket has (two a run boundary inside it, as msm.cu's msm_run_first counts).
    rounds: u32,
}

fn ones_runs(offsets: &[u32], k: u32) -> Runs {
    let entries = offsets.last().copied().unwrap_or(0);
    let longest = offsets
        .windows(2)
        .filter(|w| w[0] < w[1])
        .map(|w| 2 * ((w[1] - 1) / k - w[0] / k))
        .max()
        .unwrap_or(0);
    Runs {
        nruns: entries.div_ceil(k) as usize,
        rounds: longest.max(1).next_power_of_two().trailing_zeros(),
    }
}

/// Entries a run takes when `entries` are spread over runs of at least `floor` entries, with
/// `at_once` runs in flight at a time: `floor`, or the least length that puts the runs in
/// whole waves of `at_once` (as many waves as runs of `floor` fill completely). With runs of
/// [`ONES_RUN`] a batch's runs fill a few waves and a sliver of one more (ten half-ones sets
/// of 2^21 points: 3.2 waves on an H100), which takes as long as a full one. Never below
/// `floor`, so the runs and their pieces stay within [`ones_scratch_bytes`].
fn run_length(entries: u64, at_once: u64, floor: u32) -> u32 {
    let floor64 = u64::from(floor);
    if at_once == 0 {
        return floor;
    }
    let waves = entries / (floor64 * at_once);
    if waves == 0 {
        return floor;
    }
    let k = entries.div_ceil(waves * at_once);
    u32::try_from(k.max(floor64)).unwrap_or(u32::MAX)
}

/// Device bytes a set of [`GpuDevice::msm_streamed_batch`] over curve `C` takes with chunks
/// of `chunk` points besides its scalars and its gathered points (a point for each value
/// neither 0 nor 1): its share of one chunk's ones lists at worst (every scalar a one), their
/// runs and the pieces of its bucket, and its counts.
pub fn ones_scratch_bytes<C: MsmCurve>(chunk: usize) -> u64 {
    let chunk = chunk as u64;
    let xyzz = (C::XYZZ_LIMBS * 8) as u64;
    let runs = chunk.div_ceil(u64::from(ONES_RUN)) + 1;
    // lists, counts and their offsets, run_first, two piece slots a run, the bucket
    chunk * 4 + 2 * chunk.div_ceil(64) * 4 + runs * 4 + 2 * runs * xyzz + xyzz + 8
}

/// Device bytes a set's gathered points take: one for each of its `rest` values.
pub fn gathered_bytes<C: MsmCurve>(rest: usize) -> u64 {
    (rest * std::mem::size_of::<C::Affine>()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::{G1, G2};

    #[test]
    fn runs_cover_the_entries_and_count_the_pieces() {
        // three sets: 130 ones, none, 64 ones; runs of 64
        let r = ones_runs(&[0, 130, 130, 194], 64);
        assert_eq!(r.nruns, 4);
        // the first set spans runs 0..=2: two boundaries, four slots, two rounds
        assert_eq!(r.rounds, 2);
        // a set inside one run: no split, no rounds
        assert_eq!(ones_runs(&[0, 10, 20], 64).rounds, 0);
        assert_eq!(ones_runs(&[0, 10, 20], 64).nruns, 1);
        // nothing at all
        assert_eq!(
            ones_runs(&[0, 0], 64),
            Runs {
                nruns: 0,
                rounds: 0
            }
        );
        // a 2^22 chunk of ten half-ones sets: about 16 rounds
        let offsets: Vec<u32> = (0..=10).map(|j| j * (1 << 21)).collect();
        let r = ones_runs(&offsets, ONES_RUN);
        assert_eq!(r.nruns, 10 << 15);
        assert_eq!(r.rounds, 16);
    }

    #[test]
    fn run_length_fills_whole_waves_and_never_drops_below_the_floor() {
        // ten half-ones sets of 2^21 points on 132 SMs x 3 blocks x 128 threads: 3.2 waves
        // of runs of 64, three whole waves of runs of 69
        let (entries, at_once) = (10 * (1u64 << 20), 132 * 3 * 128);
        let k = run_length(entries, at_once, 64);
        assert_eq!(k, 69);
        assert!(entries.div_ceil(u64::from(k)) <= 3 * at_once);
        assert!(entries.div_ceil(u64::from(k - 1)) > 3 * at_once);
        // fewer entries than one wave of the floor: the floor
        assert_eq!(run_length(1 << 20, at_once, 64), 64);
        assert_eq!(run_length(0, at_once, 64), 64);
        assert_eq!(run_length(entries, 0, 64), 64);
        // exactly whole waves already: unchanged
        assert_eq!(run_length(64 * at_once * 2, at_once, 64), 64);
        // never below the floor, whatever the rounding
        for e in [1u64, 63, 64 * at_once - 1, 64 * at_once + 1, 1 << 31] {
            assert!(run_length(e, at_once, 64) >= 64, "{e}");
        }
    }

    #[test]
    fn scratch_counts_the_lists_and_the_pieces() {
        assert!(ones_scratch_bytes::<G1>(1 << 22) >= (1 << 22) * 4);
        assert!(ones_scratch_bytes::<G2>(1 << 22) > ones_scratch_bytes::<G1>(1 << 22));
        // about 10 bytes a point in G1: far below the 32 of a written-out scalar
        let per_point = ones_scratch_bytes::<G1>(1 << 22) as f64 / (1u64 << 22) as f64;
        assert!((9.0..12.0).contains(&per_point), "{per_point}");
        assert_eq!(gathered_bytes::<G1>(10), 960);
        assert_eq!(gathered_bytes::<G2>(10), 1920);
    }
}
