// Pippenger MSM with signed window digits and counting-sort bucketing.
// Requires field.cuh and curve.cuh; the host prepends `#define MSM_G1` or `#define MSM_G2`.
//
// Pipeline for n points, window width c, nw = ceil(256 / c) windows, nb = 2^(c-1)
// buckets per window (digit d in [-2^(c-1), 2^(c-1)], bucket |d| - 1, zero digits skipped):
//   msm_scalars     scalars from Montgomery form to canonical 256-bit integers
//   msm_histogram   count points per (window, bucket)
//   msm_scan        exclusive prefix sum of the counts (one block)
//   msm_scatter     write (point index | sign << 31) into per-bucket lists
//   msm_accumulate  one thread per bucket sums its affine points in XYZZ
//   msm_segments    per window segment: running sums weighted by bucket index
//   msm_sum_groups  sums consecutive groups of XYZZ points (tree reduction)
//   msm_final       Horner over windows, writes one Jacobian point

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

// Window w of a canonical 256-bit scalar (8 little-endian words), c <= 31 bits.
DEVI u32 window_bits(const u32* s, u32 w, u32 c) {
    u32 bit = w * c;
    u32 word = bit >> 5;
    u32 shift = bit & 31;
    u64 lo = word < 8 ? s[word] : 0;
    u64 hi = word + 1 < 8 ? s[word + 1] : 0;
    u64 v = (lo | (hi << 32)) >> shift;
    return (u32)(v & ((1ull << c) - 1));
}

// Signed digit of window w; returns |d| and sets neg. `carry` runs across windows.
DEVI u32 signed_digit(const u32* s, u32 w, u32 c, u32& carry, bool& neg) {
    u32 d = window_bits(s, w, c) + carry;
    u32 half = 1u << (c - 1);
    if (d > half) {
        carry = 1;
        neg = true;
        return (1u << c) - d;
    }
    carry = 0;
    neg = false;
    return d;
}

extern "C" __global__ void MSM_NAME(msm_scalars)(const Fr* __restrict__ in, Fr* __restrict__ out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = from_mont(in[i]);
}

extern "C" __global__ void MSM_NAME(msm_histogram)(const Fr* __restrict__ canon, u32 n, u32 c, u32 nw,
                                                   u32* __restrict__ counts) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr s = canon[i];
    u32 nb = 1u << (c - 1);
    u32 carry = 0;
    for (u32 w = 0; w < nw; w++) {
        bool neg;
        u32 d = signed_digit(s.v, w, c, carry, neg);
        if (d != 0) atomicAdd(&counts[w * nb + d - 1], 1u);
    }
}

// Exclusive scan of `len` counts into offsets[0..=len], and a copy into cursor[0..len).
// One block of 1024 threads; each thread scans a contiguous chunk.
extern "C" __global__ void MSM_NAME(msm_scan)(const u32* __restrict__ counts, u32 len, u32* __restrict__ offsets,
                                              u32* __restrict__ cursor) {
    __shared__ u32 sums[1024];
    u32 t = threadIdx.x;
    u32 chunk = (len + blockDim.x - 1) / blockDim.x;
    u32 begin = min(t * chunk, len);
    u32 end = min(begin + chunk, len);
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
    u32 run = sums[t] - local;
    for (u32 i = begin; i < end; i++) {
        offsets[i] = run;
        cursor[i] = run;
        run += counts[i];
    }
    if (t == blockDim.x - 1) offsets[len] = sums[t];
}

extern "C" __global__ void MSM_NAME(msm_scatter)(const Fr* __restrict__ canon, u32 n, u32 c, u32 nw,
                                                 u32* __restrict__ cursor, u32* __restrict__ sorted) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr s = canon[i];
    u32 nb = 1u << (c - 1);
    u32 carry = 0;
    for (u32 w = 0; w < nw; w++) {
        bool neg;
        u32 d = signed_digit(s.v, w, c, carry, neg);
        if (d != 0) {
            u32 pos = atomicAdd(&cursor[w * nb + d - 1], 1u);
            sorted[pos] = i | (neg ? 0x80000000u : 0u);
        }
    }
}

// One thread per bucket: buckets[b] = sum of its (possibly negated) affine points.
extern "C" __global__ void MSM_NAME(msm_accumulate)(const PAffine* __restrict__ bases, const u32* __restrict__ sorted,
                                                    const u32* __restrict__ offsets, u32 nbuckets,
                                                    PXyzz* __restrict__ buckets) {
    u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbuckets) return;
    u32 begin = offsets[b];
    u32 end = offsets[b + 1];
    PXyzz acc = PXyzz::inf();
    for (u32 k = begin; k < end; k++) {
        u32 e = sorted[k];
        PAffine p = bases[e & 0x7fffffffu];
        if (e >> 31) p = neg(p);
        xyzz_add_affine(acc, p);
    }
    buckets[b] = acc;
}

// One thread per (window, segment of `seg` buckets): out = sum_{b in segment} (b + 1) * B_b,
// with b the bucket index inside its window.
extern "C" __global__ void MSM_NAME(msm_segments)(const PXyzz* __restrict__ buckets, u32 nb, u32 seg, u32 nsegs_total,
                                                  PXyzz* __restrict__ out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nsegs_total) return;
    u32 per_window = nb / seg;
    u32 w = t / per_window;
    u32 first = (t % per_window) * seg;  // bucket index of the segment's first bucket
    const PXyzz* B = buckets + (size_t)w * nb + first;
    PXyzz running = PXyzz::inf();
    PXyzz total = PXyzz::inf();
    for (int j = (int)seg - 1; j >= 0; j--) {
        xyzz_add(running, B[j]);
        xyzz_add(total, running);
    }
    // total = sum (j + 1) B_j; add first * sum B_j to weight by (first + j + 1)
    if (first != 0) {
        xyzz_mul_small(running, first);
        xyzz_add(total, running);
    }
    out[t] = total;
}

// out[t] = sum of in[t * group .. (t + 1) * group).
extern "C" __global__ void MSM_NAME(msm_sum_groups)(const PXyzz* __restrict__ in, u32 group, u32 nout,
                                                    PXyzz* __restrict__ out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nout) return;
    PXyzz acc = in[(size_t)t * group];
    for (u32 j = 1; j < group; j++) xyzz_add(acc, in[(size_t)t * group + j]);
    out[t] = acc;
}

// One thread: result = sum_w 2^(c w) W_w, written as a blst Jacobian point.
extern "C" __global__ void MSM_NAME(msm_final)(const PXyzz* __restrict__ windows, u32 nw, u32 c,
                                               Jacobian<PF>* __restrict__ out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    PXyzz acc = windows[nw - 1];
    for (int w = (int)nw - 2; w >= 0; w--) {
        for (u32 k = 0; k < c; k++) xyzz_dbl(acc);
        xyzz_add(acc, windows[w]);
    }
    out[0] = xyzz_to_jacobian(acc);
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
