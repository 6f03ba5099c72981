// Pippenger MSM with signed window digits and counting-sort bucketing.
// Requires field.cuh, curve.cuh and (but for the accumulation's module) msm_digits.cuh; the host
// prepends `#define MSM_G1` or `#define MSM_G2`.
// msm_accumulate is compiled in a module of its own (`#define MSM_ACCUMULATE_ONLY`, every
// product and point operation inlined); the other kernels with `#define MSM_NO_ACCUMULATE`.
//
// Pipeline for n points, window width c, nw = ceil((max bit length + 1) / c) windows, nb = 2^(c-1)
// buckets per window (digit d in [-2^(c-1), 2^(c-1)], bucket |d| - 1, zero digits skipped):
//   msm_scalars     scalars from Montgomery form to canonical 256-bit integers (stored
//                   transposed: word j of scalar i at j * n + i), and a histogram of their
//                   bit lengths (the host picks c and nw from it)
//   msm_histogram   count points per (window, bucket)
//   msm_block_sums, msm_scan   exclusive prefix sum of the counts (two levels)
//   msm_bin_flags, msm_scatter (or msm_scatter_tiled), msm_bin_sort   write (point index |
//                   sign << 31) into per-bucket lists: by bins of buckets first, then sorted
//                   within each bin
//   msm_run_first   run j (entries [j*k, (j+1)*k) of the bucket lists, across bucket and
//                   window boundaries) learns the bucket its first entry belongs to
//   msm_accumulate  one thread per run sums its affine points in XYZZ (from infinity, or from
//                   the earlier chunks' bucket sums, which the chunks of one MSM share):
//                   exactly k additions per thread, whatever the bucket sizes, so no warp waits for its largest
//                   bucket; a bucket that ends inside the run and began in it is written to
//                   `buckets` at once, the pieces of a bucket split over runs to `partial`
//   msm_fix_round   pairwise sums of a split bucket's pieces (contiguous in `partial`),
//                   log2(longest) rounds, so a crowded bucket (all the scalars equal to 1
//                   land in one) is summed in logarithmic depth
//   msm_fix_store   a split bucket takes the sum of its pieces
//   msm_segments    per window segment: running sums weighted by bucket index
//   msm_sum_groups  sums consecutive groups of XYZZ points (tree reduction)
//   (host)          Horner over windows with blstrs

#if defined(MSM_G1)
typedef Fp PF;
#define MSM_NAME(x) x##_g1
#elif defined(MSM_G2)
typedef Fp2 PF;
#define MSM_NAME(x) x##_g2
#else
#error "define MSM_G1 or MSM_G2"
#endif

typedef Affine<PF> PAffine;
typedef Xyzz<PF> PXyzz;

// The whole-lane accumulation (G1's) loads each point when it adds it; G2's, on lane pairs
// (msm_pair.cu), loads the next point into registers before adding the current one.
// In G1 that prefetch took the kernel to 218 registers (two blocks of 128 an SM); without it
// ptxas needs 168, three blocks an SM, and the 2^23..2^26 random G1 MSMs were 0.7-1.3% faster
// on an H200 (alternated in one run; prefetch hints into L1 or L2 instead of
// registers gained nothing). A whole G2 point did not fit in a one-lane G2 accumulation's
// registers either (ptxas spills).

// Lane views: how a kernel's threads map to its work items (runs, piece slots, segments) and
// which part of every value a thread holds. The bodies of the accumulation, the piece sums and
// the window sums (accumulate_runs, fix_round_slot, segment_sums) are written once against a
// view; each kernel instantiates one. WholeLanes: one thread an item, holding whole values.
// HalfLanes (msm_pair.cu, G2's accumulation module only): two lanes an item, each holding one
// half of every Fp2 value. A view has
//   A, X             the affine and XYZZ types a thread holds (its part of a point or sum)
//   PREFETCH_POINT   whether the accumulation loads the next point ahead
//   item()           this thread's work item (static)
// and, on a view object made once a thread has its item (it may hold which part is its own),
//   base(p)          this thread's part of the affine base *p, through the read-only cache
//   load<RO>(p)      its part of the XYZZ sum *p (RO: through the read-only cache)
//   store(p, a)      writes its part a of the XYZZ sum *p
struct WholeLanes {
    typedef PAffine A;
    typedef PXyzz X;
    enum { PREFETCH_POINT = false };  // an enum: a static data member would be a device variable
    static DEVI u32 item() { return blockIdx.x * blockDim.x + threadIdx.x; }
    DEVI A base(const PAffine* p) const { return ld_vec_ro(p); }
    template <bool RO>
    DEVI X load(const PXyzz* p) const {
        return ld_vec16<RO>(p);
    }
    DEVI void store(PXyzz* p, const X& a) const { st_vec(p, a); }
};

#ifndef MSM_ACCUMULATE_ONLY
// window_bits, recode, signed_digit and the held-word walk: msm_digits.cuh.

// Bit length of a canonical 256-bit scalar (0 for zero).
DEVI u32 bit_length(const Fr& s) {
#pragma unroll
    for (int w = 7; w >= 0; w--)
        if (s.v[w]) return 32 * w + 32 - __clz(s.v[w]);
    return 0;
}

// Scalar i of the transposed canonical scalars (msm_scalars).
DEVI Fr load_canon(const u32* __restrict__ canon, u32 n, u32 i) {
    Fr r;
#pragma unroll
    for (u32 j = 0; j < 8; j++) r.v[j] = canon[(size_t)j * n + i];
    return r;
}

// Scalars to canonical integers, and hist[b] += the number of scalars of bit length b
// (257 bins, zeroed by the caller): the host picks the window width from it.
// The canonical scalars are stored transposed, word j of scalar i at out[j * n + i], so that
// a warp reading one word of consecutive scalars reads consecutive words (msm_scatter_tiled
// reads the one or two words of a window, not the whole scalar).
extern "C" __global__ void MSM_NAME(msm_scalars)(const Fr* __restrict__ in, u32* __restrict__ out, u32 n,
                                                 u32* __restrict__ hist) {
    __shared__ u32 local[257];
    for (u32 j = threadIdx.x; j < 257; j += blockDim.x) local[j] = 0;
    __syncthreads();
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        Fr c = from_mont(in[i]);
#pragma unroll
        for (u32 j = 0; j < 8; j++) out[(size_t)j * n + i] = c.v[j];
        atomicAdd(&local[bit_length(c)], 1u);
    }
    __syncthreads();
    for (u32 j = threadIdx.x; j < 257; j += blockDim.x)
        if (local[j]) atomicAdd(&hist[j], local[j]);
}

// Window 0 of a witness's scalars is crowded: every scalar equal to 1 (about a third of a
// Filecoin witness) has digit 1 there, so their atomics on one counter (and one cursor in
// msm_scatter) were serialised: 19 ms of histogram and 21 ms of scatter for 2^26 such scalars
// (2 and 11 ms expected). In window 0 the lanes of a warp with equal buckets are grouped
// (__match_any_sync) and one lane of each group makes the group's atomic. Other windows of
// a scalar below 2^c have digit 0, and random digits seldom meet, so they keep one atomic
// per digit. NO_BUCKET marks a lane without a digit (zero digit, or past the end).
#define NO_BUCKET 0xffffffffu

// All 32 lanes of the warp must call this (the block size is a multiple of 32). Returns the
// lane's rank in its group of lanes with the same `key`, and sets `leader` and `count`.
DEVI u32 warp_group(u32 key, u32& leader, u32& count) {
    const u32 lane = threadIdx.x & 31;
    const u32 peers = __match_any_sync(0xffffffffu, key);
    leader = __ffs(peers) - 1;
    count = __popc(peers);
    return __popc(peers & ((1u << lane) - 1));
}

extern "C" __global__ void MSM_NAME(msm_histogram)(const u32* __restrict__ canon, u32 n, u32 c, u32 nw,
                                                   u32* __restrict__ counts) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    Fr s = i < n ? load_canon(canon, n, i) : Fr::zero();  // past the end: every digit 0, but in the warp
    u32 nb = 1u << (c - 1);
    u32 carry = 0;
    for (u32 w = 0; w < nw; w++) {
        bool neg;
        u32 d = signed_digit(s.v, w, c, carry, neg);
        u32 key = d != 0 ? w * nb + d - 1 : NO_BUCKET;
        if (w == 0) {
            u32 leader, count;
            u32 rank = warp_group(key, leader, count);
            if (key != NO_BUCKET && rank == 0) atomicAdd(&counts[key], count);
        } else if (key != NO_BUCKET) {
            atomicAdd(&counts[key], 1u);
        }
    }
}

// Block sums for a multi-block exclusive scan: block b sums counts[b*per_block, (b+1)*per_block).
extern "C" __global__ void MSM_NAME(msm_block_sums)(const u32* __restrict__ counts, u32 len, u32 per_block,
                                                    u32* __restrict__ sums) {
    __shared__ u32 part[1024];
    u32 begin = blockIdx.x * per_block;
    u32 end = min(begin + per_block, len);
    u32 local = 0;
    for (u32 i = begin + threadIdx.x; i < end; i += blockDim.x) local += counts[i];
    part[threadIdx.x] = local;
    __syncthreads();
    for (u32 off = blockDim.x / 2; off > 0; off >>= 1) {
        if (threadIdx.x < off) part[threadIdx.x] += part[threadIdx.x + off];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}

// Exclusive scan: block b (1024 threads) handles counts[b*per_block, (b+1)*per_block) and adds
// base[b] (or 0 when base is null). Writes offsets[i] for each i in its range, offsets[end]
// (the total so far), and the same values into cursor (when not null).
extern "C" __global__ void MSM_NAME(msm_scan)(const u32* __restrict__ counts, u32 len, u32 per_block,
                                              const u32* __restrict__ base, u32* __restrict__ offsets,
                                              u32* __restrict__ cursor) {
    __shared__ u32 sums[1024];
    u32 t = threadIdx.x;
    u32 block_begin = blockIdx.x * per_block;
    u32 block_end = min(block_begin + per_block, len);
    u32 span = block_end > block_begin ? block_end - block_begin : 0;
    u32 chunk = (span + blockDim.x - 1) / blockDim.x;
    u32 begin = min(block_begin + t * chunk, block_end);
    u32 end = min(begin + chunk, block_end);
    u32 local = 0;
    for (u32 i = begin; i < end; i++) local += counts[i];
    sums[t] = local;
    __syncthreads();
    // Hillis-Steele inclusive scan over the per-thread sums
    for (u32 off = 1; off < blockDim.x; off <<= 1) {
        u32 v = t >= off ? sums[t - off] : 0;
        __syncthreads();
        sums[t] += v;
        __syncthreads();
    }
    u32 b0 = base ? base[blockIdx.x] : 0;
    u32 run = b0 + sums[t] - local;
    for (u32 i = begin; i < end; i++) {
        offsets[i] = run;
        if (cursor) cursor[i] = run;
        run += counts[i];
    }
    if (t == blockDim.x - 1) offsets[block_end] = b0 + sums[t];
}

// Run j covers entries [j * k, (j + 1) * k) of the bucket lists. One thread per bucket b
// writes run_first[j] = b for every run whose first entry lies in b (each run's first
// entry lies in exactly one non-empty bucket), and raises longest[0] to the number of
// `partial` slots of b when b is split over runs (2 * (last run - first run)).
extern "C" __global__ void MSM_NAME(msm_run_first)(const u32* __restrict__ offsets, u32 nbuckets, u32 k,
                                                     u32* __restrict__ run_first, u32* __restrict__ longest) {
    u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbuckets) return;
    u32 s = offsets[b];
    u32 e = offsets[b + 1];
    if (s == e) return;
    for (u32 j = (s + k - 1) / k; j < (e + k - 1) / k; j++) run_first[j] = b;
    u32 t0 = s / k;
    u32 t1 = (e - 1) / k;
    if (t1 > t0) atomicMax(longest, 2 * (t1 - t0));
}

// The bucket lists in two passes, so that the writes stream. Writing each entry straight to
// its bucket's list (one cursor per bucket, millions of lists a few sectors long) left most
// 32-byte sectors of `sorted` partly written when L2 evicted them: 77 ms of a 2^26 G1 MSM
// whose histogram, with the same atomics and no stores, took 9 ms. Now buckets are grouped
// in bins of 2^s consecutive buckets (bins never cross a window: 2^s divides 2^(c-1)), few
// enough that the lines the bins' cursors write (in `sorted` and `low`) stay in L2 until
// full: at 2^26 with 2^14 bins a window (426K lines) the scatter took 106 ms, with 2^12
// bins a window at 2^24 half the former time.
//   msm_bin_flags   marks the bins holding more than `cap` entries ("large")
//   msm_scatter     writes each entry of a small bin at its bin's cursor (the cursor of the
//                   bin's first bucket; a bin's entries fill the bin's span of `sorted` in
//                   any order) with its bucket's low s bits in `low`; an entry of a large bin
//                   goes to its bucket's own cursor, as before (large bins have few, long
//                   lists, which stream anyway: the crowded buckets of Filecoin's witnesses,
//                   the top window's few buckets)
//   msm_bin_sort    one block per small bin orders its span by bucket in shared memory
// With s = 0 every bin is one bucket, msm_scatter writes final positions, and neither
// msm_bin_flags nor msm_bin_sort runs. The order within a bucket is unspecified, as before.
DEVI bool bin_is_large(const u32* __restrict__ large, u32 bin) { return (large[bin >> 5] >> (bin & 31)) & 1; }

// One thread per bin; the block size is a multiple of 32 and every lane reaches the ballot.
extern "C" __global__ void MSM_NAME(msm_bin_flags)(const u32* __restrict__ offsets, u32 nbins, u32 s, u32 cap,
                                                   u32* __restrict__ large) {
    u32 bin = blockIdx.x * blockDim.x + threadIdx.x;
    bool big = bin < nbins && offsets[(bin + 1) << s] - offsets[bin << s] > cap;
    u32 word = __ballot_sync(0xffffffffu, big);
    if ((threadIdx.x & 31) == 0 && bin < nbins) large[bin >> 5] = word;
}

extern "C" __global__ void MSM_NAME(msm_scatter)(const u32* __restrict__ canon, u32 n, u32 c, u32 nw, u32 s,
                                                 const u32* __restrict__ large, u32* __restrict__ cursor,
                                                 u32* __restrict__ sorted, unsigned char* __restrict__ low) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    Fr sc = i < n ? load_canon(canon, n, i) : Fr::zero();  // past the end: every digit 0, but in the warp
    u32 nb = 1u << (c - 1);
    u32 lowmask = (1u << s) - 1;
    u32 carry = 0;
    for (u32 w = 0; w < nw; w++) {
        bool neg;
        u32 d = signed_digit(sc.v, w, c, carry, neg);
        u32 key = d != 0 ? w * nb + d - 1 : NO_BUCKET;
        // the cursor this entry advances: its bin's, or its bucket's in a large bin
        bool binned = key != NO_BUCKET && s != 0 && !bin_is_large(large, key >> s);
        u32 cur = key == NO_BUCKET ? NO_BUCKET : (binned ? key & ~lowmask : key);
        u32 pos = 0;
        if (w == 0) {
            // one atomic per group of lanes with the same cursor; each lane takes the
            // group's base plus its rank
            u32 leader, count;
            u32 rank = warp_group(cur, leader, count);
            u32 base = 0;
            if (cur != NO_BUCKET && rank == 0) base = atomicAdd(&cursor[cur], count);
            pos = __shfl_sync(0xffffffffu, base, leader) + rank;
        } else if (cur != NO_BUCKET) {
            pos = atomicAdd(&cursor[cur], 1u);
        }
        if (cur != NO_BUCKET) {
            sorted[pos] = i | (neg ? 0x80000000u : 0u);
            if (binned) low[pos] = (unsigned char)(key & lowmask);
        }
    }
}

// msm_scatter by tiles, where a window has at most SCATTER_TILED_MAX_BINS bins (the host's
// choice; msm_scatter otherwise). msm_scatter makes one L2 atomic and two scattered stores (the
// entry, its low bits) per digit: for 2^26 random G1 scalars (0.87e9 digits) it took 35 ms
// with the L2 at 87% of its request rate and the DRAM at 8% (Nsight Compute). Here a
// block takes a tile of SCATTER_PPT * blockDim points and handles the windows in turn, the
// carries of its points and the two words a window reads in registers (the canonical scalars
// are transposed, so each word is read once, coalesced; reading both words every window read
// witness-shaped scalars, 16 windows of c = 17, four times over, though keeping them measured
// only about 0.7 ms of a random 2^26 G1 MSM):
//   1. each digit of a small bin takes the next slot (its rank, a shared atomic) of its bin's
//      slab of 2^slab_log entries in shared memory; past the slab it goes to the bin's cursor
//      as in msm_scatter
//   2. one global atomic per non-empty bin reserves the slab's entries at the bin's cursor
//   3. the slabs are written out, consecutive lanes to consecutive positions of a bin
// so that a random 2^26 chunk (4096 bins a window, 16384 points a tile, about 4 entries a
// bin) makes about a quarter of the atomics and a third of the store requests (by count; the
// scatter measured 35.7 -> 16 ms on an H200). Entries of
// large bins go to their buckets' cursors as in msm_scatter, one atomic per group of lanes
// with the same bucket (window 0's crowded buckets of a witness). The output is what
// msm_scatter writes: each small bin's entries somewhere in its span, with `low`.
// Dynamic shared memory: cnt[nbw] and base[nbw] words, ent[nbw << slab_log] words and
// lo[nbw << slab_log] bytes, nbw = 2^(c-1-s) bins a window (scatter_slab_log in msm.rs).
// grid: ceil(n / (SCATTER_PPT * blockDim)) blocks of 1024 threads (the launch bound, which
// keeps the registers within 64); s >= 1.
#define SCATTER_PPT 16
extern "C" __global__ void __launch_bounds__(1024, 1) MSM_NAME(msm_scatter_tiled)(
    const u32* __restrict__ canon, u32 n, u32 c, u32 nw, u32 s, u32 slab_log, const u32* __restrict__ large,
    u32* __restrict__ cursor, u32* __restrict__ sorted, unsigned char* __restrict__ low) {
    extern __shared__ u32 tsm[];
    const u32 nb = 1u << (c - 1);
    const u32 nbw = nb >> s;
    const u32 slab = 1u << slab_log;
    u32* cnt = tsm;
    u32* base = tsm + nbw;
    u32* ent = tsm + 2 * nbw;
    unsigned char* lo = (unsigned char*)(ent + (nbw << slab_log));
    const u32 lowmask = (1u << s) - 1;
    const u32 mask = (1u << c) - 1;
    const u32 nthr = blockDim.x;
    const u32 tid = threadIdx.x;
    const u32 first = blockIdx.x * SCATTER_PPT * nthr;
    u32 carries = 0;  // bit p: the carry into this window of point first + p * nthr + tid
    // words `held` and held + 1 of each point, each word read once (window_at, window_words)
    u32 lo_w[SCATTER_PPT], hi_w[SCATTER_PPT];
    u32 held = 0;
    for (u32 w = 0; w < nw; w++) {
        for (u32 b = tid; b < nbw; b += nthr) cnt[b] = 0;
        __syncthreads();
        const WindowAt at = window_at(w, c, held);
#pragma unroll
        for (u32 p = 0; p < SCATTER_PPT; p++) {
            const u32 i = first + p * nthr + tid;
            window_words(w, at, lo_w[p], hi_w[p], canon + i, n, i < n);
        }
        held = at.word;
#pragma unroll
        for (u32 p = 0; p < SCATTER_PPT; p++) {
            const u32 i = first + p * nthr + tid;
            u32 d = 0;
            bool neg = false;
            if (i < n) {
                u32 carry = (carries >> p) & 1u;
                d = recode(window_raw(lo_w[p], hi_w[p], at, mask), c, carry, neg);
                carries = (carries & ~(1u << p)) | (carry << p);
            }
            const u32 key = d != 0 ? w * nb + d - 1 : NO_BUCKET;
            const bool big = key != NO_BUCKET && bin_is_large(large, key >> s);
            const u32 entry = i | (neg ? 0x80000000u : 0u);
            if (__any_sync(0xffffffffu, big)) {
                // every lane is here (the loop and this test are uniform in the warp)
                u32 leader, count;
                const u32 rank = warp_group(big ? key : NO_BUCKET, leader, count);
                u32 at = 0;
                if (big && rank == 0) at = atomicAdd(&cursor[key], count);
                at = __shfl_sync(0xffffffffu, at, leader) + rank;
                if (big) sorted[at] = entry;
            }
            if (key != NO_BUCKET && !big) {
                const u32 bin = (d - 1) >> s;
                const unsigned char l = (unsigned char)((d - 1) & lowmask);
                const u32 r = atomicAdd(&cnt[bin], 1u);
                if (r < slab) {
                    ent[(bin << slab_log) + r] = entry;
                    lo[(bin << slab_log) + r] = l;
                } else {
                    const u32 at = atomicAdd(&cursor[key & ~lowmask], 1u);
                    sorted[at] = entry;
                    low[at] = l;
                }
            }
        }
        __syncthreads();
        for (u32 b = tid; b < nbw; b += nthr) {
            const u32 m = min(cnt[b], slab);
            if (m) base[b] = atomicAdd(&cursor[w * nb + (b << s)], m);
            cnt[b] = m;
        }
        __syncthreads();
        for (u32 e = tid; e < (nbw << slab_log); e += nthr) {
            const u32 b = e >> slab_log;
            const u32 r = e & (slab - 1);
            if (r < cnt[b]) {
                sorted[base[b] + r] = ent[e];
                low[base[b] + r] = lo[e];
            }
        }
        __syncthreads();
    }
}

// One block per bin (s in 1..=8), with `cap` words of dynamic shared memory, the `cap` given
// to msm_bin_flags. A small bin's span [offsets[bin << s], offsets[(bin + 1) << s]) holds its
// entries in any order and `low` their buckets' low bits; the block counting-sorts the span
// in shared memory (each bucket's start is known from `offsets`) and writes it back.
extern "C" __global__ void MSM_NAME(msm_bin_sort)(const u32* __restrict__ offsets, u32 s,
                                                  const u32* __restrict__ large, u32* __restrict__ sorted,
                                                  const unsigned char* __restrict__ low) {
    extern __shared__ u32 out[];
    __shared__ u32 next[256];
    u32 bin = blockIdx.x;
    if (bin_is_large(large, bin)) return;
    u32 first = bin << s;
    u32 start = offsets[first];
    u32 m = offsets[first + (1u << s)] - start;  // <= cap: the bin is small
    if (m < 2) return;
    for (u32 j = threadIdx.x; j < (1u << s); j += blockDim.x) next[j] = offsets[first + j] - start;
    __syncthreads();
    for (u32 j = threadIdx.x; j < m; j += blockDim.x) out[atomicAdd(&next[low[start + j]], 1u)] = sorted[start + j];
    __syncthreads();
    for (u32 j = threadIdx.x; j < m; j += blockDim.x) sorted[start + j] = out[j];
}

#endif  // MSM_ACCUMULATE_ONLY

#ifndef MSM_NO_ACCUMULATE
// The smallest bucket b >= lo whose entries reach past entry i (offsets[b + 1] > i); one
// exists below nbuckets because i < offsets[nbuckets]. Galloping, then bisection: a run of
// empty buckets (common in the upper windows of short scalars) costs its logarithm.
DEVI u32 bucket_after(const u32* __restrict__ offsets, u32 nbuckets, u32 lo, u32 i) {
    if (offsets[lo + 1] > i) return lo;
    u32 step = 1;
    u32 hi = lo + 1;  // offsets[lo + 1] <= i
    while (offsets[hi + 1] <= i) {
        lo = hi;
        step <<= 1;
        hi = min(lo + step, nbuckets - 1);
    }
    // offsets[lo + 1] <= i < offsets[hi + 1]
    while (hi - lo > 1) {
        u32 mid = lo + (hi - lo) / 2;
        if (offsets[mid + 1] > i) hi = mid;
        else lo = mid;
    }
    return hi;
}

// One thread per run t of k consecutive entries (the last one may be shorter). It sums
// each bucket's (possibly negated) affine points in XYZZ; a bucket's sum goes to
//   buckets[b]         when the bucket lies wholly in this run,
//   partial[2t]        when the bucket began before this run (its middle or last piece),
//   partial[2t + 1]    when it began in this run and goes on after it (its first piece).
// So a bucket split over runs t0 < t1 has its pieces in partial[2 t0 + 1 .. 2 t1], and
// the slots in between that no bucket writes stay zero (infinity): `partial` must be zeroed
// by the caller, and so must `buckets` unless `into` is set. With `into`, `buckets` holds an
// earlier chunk's bucket sums (the same window plan) and this chunk adds to them: a bucket's
// sum starts from buckets[b] instead of infinity where the bucket begins (in its first
// piece), and a bucket without entries here keeps its value. The next entry is loaded before
// the current point is added, so its memory latency overlaps the addition, and the next point
// too where V::PREFETCH_POINT. Run t is V's work item t (msm_accumulate: one thread a run).
template <class V>
DEVI void accumulate_runs(const PAffine* __restrict__ bases, const u32* __restrict__ sorted,
                          const u32* __restrict__ offsets, u32 nbuckets, const u32* __restrict__ run_first, u32 nruns,
                          u32 entries, u32 k, PXyzz* __restrict__ buckets, PXyzz* __restrict__ partial,
                          u32 into) {
    u32 t = V::item();
    if (t >= nruns) return;  // every thread of the item (V's lanes run an item together)
    const V lane{};
    u32 begin = t * k;  // < entries: the host launches ceil(entries / k) runs
    u32 end = min(begin + k, entries);  // entries + k < 2^32 (at most 33 digits a scalar)
    u32 b = run_first[t];
    u32 bend = offsets[b + 1];
    bool head = offsets[b] < begin;
    // a bucket's sum starts from the earlier chunks' where it begins (`into`), else infinity
    const auto start = [&](u32 bucket) {
        return into ? lane.template load<false>(buckets + bucket) : V::X::inf();
    };
    typename V::X acc = head ? V::X::inf() : start(b);
    u32 e = sorted[begin];
    typename V::A next;
    if (V::PREFETCH_POINT) next = lane.base(bases + (e & 0x7fffffffu));
    for (u32 i = begin; i < end; i++) {
        if (i == bend) {
            // bucket b ends here: it began in this run unless `head`
            if (head) lane.store(partial + 2 * t, acc);
            else lane.store(buckets + b, acc);
            head = false;
            b = bucket_after(offsets, nbuckets, b + 1, i);
            bend = offsets[b + 1];
            acc = start(b);
        }
        typename V::A q = V::PREFETCH_POINT ? next : lane.base(bases + (e & 0x7fffffffu));
        bool negate = e >> 31;
        if (i + 1 < end) {
            e = sorted[i + 1];
            if (V::PREFETCH_POINT) next = lane.base(bases + (e & 0x7fffffffu));
        }
        if (negate) q = neg(q);
        xyzz_add_affine(acc, q);
    }
    bool tail = bend > end;
    if (head) lane.store(partial + 2 * t, acc);
    else if (tail) lane.store(partial + 2 * t + 1, acc);
    else lane.store(buckets + b, acc);
}

// G2 accumulates and sums its pieces on lane pairs only (msm_pair.cu: 2^24 accumulation
// 307.4-310.1 ms on one lane, 295.3-297.1 on pairs, on an H200): the one-lane kernels are G1's.
#ifndef MSM_G2
extern "C" __global__ void MSM_NAME(msm_accumulate)(const PAffine* __restrict__ bases, const u32* __restrict__ sorted,
                                                    const u32* __restrict__ offsets, u32 nbuckets,
                                                    const u32* __restrict__ run_first, u32 nruns, u32 entries,
                                                    u32 k, PXyzz* __restrict__ buckets, PXyzz* __restrict__ partial,
                                                    u32 into) {
    accumulate_runs<WholeLanes>(bases, sorted, offsets, nbuckets, run_first, nruns, entries, k, buckets, partial,
                                into);
}
#endif

// The bucket split at run boundary q (between runs q - 1 and q), if any: the bucket of
// run q's first entry, when it began before that entry. Sets [first, end) to its pieces'
// slots in `partial` (see msm_accumulate).
DEVI bool split_at(const u32* __restrict__ offsets, const u32* __restrict__ run_first, u32 q, u32 k, u32& b,
                   u32& first, u32& end) {
    b = run_first[q];
    u32 s = offsets[b];
    if (s == q * k) return false;
    first = 2 * (s / k) + 1;
    end = 2 * ((offsets[b + 1] - 1) / k) + 1;
    return true;
}

// In the inlined module: out of line it took 38 ms of a 2^24 G2 MSM (15 ms inlined).
// One round of the pairwise sum of each split bucket's pieces: with `stride` = 2^r, the
// slot at offset j from the bucket's first slot (j a multiple of 2 * stride) adds the slot
// at j + stride when it is the bucket's. After rounds r = 0 .. ceil(log2(longest)) - 1 the
// first slot holds the bucket's sum. Slot p (1 <= p < 2 nruns - 1: slots 2q - 1 and 2q are
// those of run boundary q) is V's work item p (msm_fix_round: one thread a slot); rounds are
// separate launches, so every read sees the previous round's writes.
template <class V>
DEVI void fix_round_slot(PXyzz* __restrict__ partial, const u32* __restrict__ offsets,
                         const u32* __restrict__ run_first, u32 nruns, u32 k, u32 stride) {
    u32 p = V::item();
    if (p == 0 || p + 1 >= 2 * nruns) return;
    u32 b, first, end;
    if (!split_at(offsets, run_first, (p + 1) / 2, k, b, first, end)) return;
    if (((p - first) & (2 * stride - 1)) != 0) return;
    if (p + stride >= end) return;
    const V lane{};
    typename V::X acc = lane.template load<false>(partial + p);
    xyzz_add(acc, lane.template load<false>(partial + p + stride));
    lane.store(partial + p, acc);
}

#ifndef MSM_G2
extern "C" __global__ void MSM_NAME(msm_fix_round)(PXyzz* __restrict__ partial, const u32* __restrict__ offsets,
                                                   const u32* __restrict__ run_first, u32 nruns, u32 k,
                                                   u32 stride) {
    fix_round_slot<WholeLanes>(partial, offsets, run_first, nruns, k, stride);
}
#endif

// One thread per run boundary: a split bucket takes its first slot (the sum after the
// rounds), written by the boundary just after the bucket's first run.
extern "C" __global__ void MSM_NAME(msm_fix_store)(const PXyzz* __restrict__ partial, const u32* __restrict__ offsets,
                                                   const u32* __restrict__ run_first, u32 nruns, u32 k,
                                                   PXyzz* __restrict__ buckets) {
    u32 q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q == 0 || q >= nruns) return;
    u32 b, first, end;
    if (!split_at(offsets, run_first, q, k, b, first, end)) return;
    if (2 * q - 1 == first) st_vec(buckets + b, ld_vec_ro(partial + first));
}

#endif  // MSM_NO_ACCUMULATE

// Window sums by segments of `seg` buckets: out = sum_{b in segment} (b + 1) * B_b, with b the
// bucket index inside its window; segment t (of nsegs_total, all windows') is V's work item t.
// Outside the module guards: msm_segments (every module but the accumulation's) and
// msm_segments_pair_g2 (G2's accumulation module) instantiate it.
template <class V>
DEVI void segment_sums(const PXyzz* __restrict__ buckets, u32 nb, u32 seg, u32 nsegs_total,
                       PXyzz* __restrict__ out) {
    u32 t = V::item();
    if (t >= nsegs_total) return;
    const V lane{};
    u32 per_window = nb / seg;
    u32 w = t / per_window;
    u32 first = (t % per_window) * seg;  // bucket index of the segment's first bucket
    const PXyzz* B = buckets + (size_t)w * nb + first;
    typename V::X running = V::X::inf();
    typename V::X total = V::X::inf();
    for (int j = (int)seg - 1; j >= 0; j--) {
        xyzz_add(running, lane.template load<true>(B + j));
        xyzz_add(total, running);
    }
    // total = sum (j + 1) B_j; add first * sum B_j to weight by (first + j + 1)
    if (first != 0) {
        xyzz_mul_small(running, first);
        xyzz_add(total, running);
    }
    lane.store(out + t, total);
}

#ifndef MSM_ACCUMULATE_ONLY
// One thread per (window, segment): segment_sums.
extern "C" __global__ void MSM_NAME(msm_segments)(const PXyzz* __restrict__ buckets, u32 nb, u32 seg, u32 nsegs_total,
                                                  PXyzz* __restrict__ out) {
    segment_sums<WholeLanes>(buckets, nb, seg, nsegs_total, out);
}

// out[t] = sum of in[t * group .. (t + 1) * group).
extern "C" __global__ void MSM_NAME(msm_sum_groups)(const PXyzz* __restrict__ in, u32 group, u32 nout,
                                                    PXyzz* __restrict__ out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nout) return;
    PXyzz acc = ld_vec_ro(in + (size_t)t * group);
    for (u32 j = 1; j < group; j++) xyzz_add(acc, ld_vec_ro(in + (size_t)t * group + j));
    st_vec(out + t, acc);
}

// Test helpers: per i, out[3i] = p_i + q_i (mixed), out[3i+1] = p_i + p_i (XYZZ add),
// out[3i+2] = 2 p_i + q_i computed as doubling then XYZZ add.
extern "C" __global__ void MSM_NAME(curve_test_ops)(const PAffine* __restrict__ p, const PAffine* __restrict__ q, u32 n,
                                                    Jacobian<PF>* __restrict__ out) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    PXyzz a = PXyzz::inf();
    xyzz_add_affine(a, p[i]);
    PXyzz r0 = a;
    xyzz_add_affine(r0, q[i]);
    out[3 * i] = xyzz_to_jacobian(r0);
    PXyzz r1 = a;
    xyzz_add(r1, a);
    out[3 * i + 1] = xyzz_to_jacobian(r1);
    PXyzz r2 = a;
    xyzz_dbl(r2);
    PXyzz b = PXyzz::inf();
    xyzz_add_affine(b, q[i]);
    xyzz_add(r2, b);
    out[3 * i + 2] = xyzz_to_jacobian(r2);
}

#endif  // MSM_ACCUMULATE_ONLY
