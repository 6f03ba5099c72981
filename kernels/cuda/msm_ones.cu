// Batched MSMs over streamed bases whose scalars are mostly 0 and 1 (batch.rs). A chunk of
// bases is applied to K sets of scalars, each kept as a bitmap of its ones and a list of its
// other non-zero values. The ones of all K sets become bucket lists of one bucket a set (the
// accumulation of msm.cu then adds each set's points into its one sum); the points the other
// values pair with are copied out, for one small MSM a set once every chunk has passed.
// Compiled after msm.cu in the MSM modules (PAffine, MSM_NAME).
//
//   ones_count    per 64-bit word of a set's chunk: how many ones it holds
//   (msm_block_sums, msm_scan: exclusive prefix sum of the counts of all the sets)
//   ones_emit     per word: the chunk-relative index of each one, at the word's offset
//   ones_buckets  each set's first offset: the sets' bucket offsets
//   ones_runs     run j (entries [j k, (j + 1) k)) learns the set its first entry belongs to
//   gather_points out[t] = bases[at[t] - start]: the points the other values pair with

#ifndef MSM_ACCUMULATE_ONLY

// Bits [start + 64 w, start + 64 w + 64) of the bitmap `ones`, those at or past `end` cleared
// (`end` is at most the bitmap's length in bits, so every word read exists).
DEVI u64 ones_word(const u64* __restrict__ ones, u32 start, u32 end, u32 w) {
    u32 lo = start + 64 * w;
    if (lo >= end) return 0;
    u32 q = lo >> 6, r = lo & 63;
    u64 x = ones[q] >> r;
    // the next word holds bits from 64 (q + 1) on: read it only when one of them is wanted
    if (r != 0 && 64 * (q + 1) < end) x |= ones[q + 1] << (64 - r);
    u32 left = end - lo;
    if (left < 64) x &= (1ull << left) - 1;
    return x;
}

// counts[w] = ones among bits [start + 64 w, min(start + 64 w + 64, end)), for w < words.
extern "C" __global__ void MSM_NAME(ones_count)(const u64* __restrict__ ones, u32 start, u32 end, u32 words,
                                                u32* __restrict__ counts) {
    u32 w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= words) return;
    counts[w] = __popcll(ones_word(ones, start, end, w));
}

// For each one among bits [start + 64 w, ...) (as ones_count), its index relative to `start`,
// written in order from sorted[offsets[w]] on (offsets: the exclusive scan of the counts).
extern "C" __global__ void MSM_NAME(ones_emit)(const u64* __restrict__ ones, u32 start, u32 end, u32 words,
                                               const u32* __restrict__ offsets, u32* __restrict__ sorted) {
    u32 w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= words) return;
    u64 x = ones_word(ones, start, end, w);
    u32 at = offsets[w];
    while (x) {
        sorted[at++] = 64 * w + (u32)(__ffsll((long long)x) - 1);
        x &= x - 1;
    }
}

// bucket_offsets[j] = offsets[j * words] for j <= sets: where set j's entries begin (j = sets:
// the total).
extern "C" __global__ void MSM_NAME(ones_buckets)(const u32* __restrict__ offsets, u32 words, u32 sets,
                                                  u32* __restrict__ bucket_offsets) {
    u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > sets) return;
    bucket_offsets[j] = offsets[(size_t)j * words];
}

// run_first[j] = the bucket whose entries hold entry j k: the last b < nbuckets with
// offsets[b] <= j k (empty buckets before it share its offset).
extern "C" __global__ void MSM_NAME(ones_runs)(const u32* __restrict__ offsets, u32 nbuckets, u32 k, u32 nruns,
                                               u32* __restrict__ run_first) {
    u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= nruns) return;
    u32 e = j * k;
    u32 lo = 0, hi = nbuckets;  // offsets[lo] <= e (offsets[0] = 0), and lo < hi
    while (hi - lo > 1) {
        u32 mid = (lo + hi) / 2;
        if (offsets[mid] <= e) lo = mid; else hi = mid;
    }
    run_first[j] = lo;
}

// out[t] = bases[at[t] - start] for t < count.
extern "C" __global__ void MSM_NAME(gather_points)(const PAffine* __restrict__ bases, const u32* __restrict__ at,
                                                   u32 count, u32 start, PAffine* __restrict__ out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    out[t] = bases[at[t] - start];
}

#endif  // MSM_ACCUMULATE_ONLY
