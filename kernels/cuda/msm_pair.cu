// G2's accumulation, piece sums and window sums on lane pairs (fp2_pair.cuh):
// msm_accumulate_pair_g2, msm_fix_round_pair_g2 and msm_segments_pair_g2, each the body of
// its one-lane kernel in msm.cu with half-value loads and stores. Appended to msm.cu in the
// inlined G2 accumulation module only (compile.rs, MSM_G2_ACCUMULATE), after bucket_after
// and the point typedefs, so the other modules' sources stay as they were.
#if !defined(MSM_G2) || !defined(MSM_ACCUMULATE_ONLY)
#error "msm_pair.cu belongs to the inlined G2 accumulation module"
#endif

// Threads 2t and 2t + 1 run run t, the even lane with the c0 half of every Fp2 value, the odd
// lane with c1. Same inputs, outputs and rules as msm_accumulate (the host launches 2 nruns
// threads in blocks of an even size); each lane reads and writes its half of the points and
// sums (the Fp at 2i + odd of a point or sum seen as Fp words). A lane holds half an
// accumulator and half a point, so the next point is loaded ahead as in G1.
typedef Affine<Fp2Pair> HAffine;
typedef Xyzz<Fp2Pair> HXyzz;

DEVI HAffine ld_half(const PAffine* p, bool odd) {
    const Fp* f = reinterpret_cast<const Fp*>(p);
    return HAffine{Fp2Pair{ld_vec_ro(f + odd)}, Fp2Pair{ld_vec_ro(f + 2 + odd)}};
}

DEVI void st_half(PXyzz* p, const HXyzz& a, bool odd) {
    Fp* f = reinterpret_cast<Fp*>(p) + odd;
    st_vec(f, a.X.v);
    st_vec(f + 2, a.Y.v);
    st_vec(f + 4, a.ZZ.v);
    st_vec(f + 6, a.ZZZ.v);
}

extern "C" __global__ void msm_accumulate_pair_g2(const PAffine* __restrict__ bases, const u32* __restrict__ sorted,
                                                  const u32* __restrict__ offsets, u32 nbuckets,
                                                  const u32* __restrict__ run_first, u32 nruns, u32 entries, u32 k,
                                                  PXyzz* __restrict__ buckets, PXyzz* __restrict__ partial) {
    u32 t = (blockIdx.x * blockDim.x + threadIdx.x) >> 1;
    if (t >= nruns) return;  // both lanes of the pair
    bool odd = pair_odd();
    u32 begin = t * k;
    u32 end = min(begin + k, entries);
    u32 b = run_first[t];
    u32 bend = offsets[b + 1];
    bool head = offsets[b] < begin;
    HXyzz acc = HXyzz::inf();
    u32 e = sorted[begin];
    HAffine next = ld_half(bases + (e & 0x7fffffffu), odd);
    for (u32 i = begin; i < end; i++) {
        if (i == bend) {
            if (head) st_half(partial + 2 * t, acc, odd);
            else st_half(buckets + b, acc, odd);
            head = false;
            b = bucket_after(offsets, nbuckets, b + 1, i);
            bend = offsets[b + 1];
            acc = HXyzz::inf();
        }
        HAffine q = next;
        bool negate = e >> 31;
        if (i + 1 < end) {
            e = sorted[i + 1];
            next = ld_half(bases + (e & 0x7fffffffu), odd);
        }
        if (negate) q = neg(q);
        xyzz_add_affine(acc, q);
    }
    bool tail = bend > end;
    if (head) st_half(partial + 2 * t, acc, odd);
    else if (tail) st_half(partial + 2 * t + 1, acc, odd);
    else st_half(buckets + b, acc, odd);
}

// This lane's half of an XYZZ sum; READ_ONLY through the read-only cache.
template <bool READ_ONLY>
DEVI HXyzz ld_half_xyzz(const PXyzz* p, bool odd) {
    const Fp* f = reinterpret_cast<const Fp*>(p) + odd;
    return HXyzz{Fp2Pair{ld_vec16<READ_ONLY>(f)}, Fp2Pair{ld_vec16<READ_ONLY>(f + 2)},
                 Fp2Pair{ld_vec16<READ_ONLY>(f + 4)}, Fp2Pair{ld_vec16<READ_ONLY>(f + 6)}};
}

// msm_fix_round on lane pairs: threads 2p and 2p + 1 take slot p (2 (2 nruns) threads).
extern "C" __global__ void msm_fix_round_pair_g2(PXyzz* __restrict__ partial, const u32* __restrict__ offsets,
                                                 const u32* __restrict__ run_first, u32 nruns, u32 k, u32 stride) {
    u32 p = (blockIdx.x * blockDim.x + threadIdx.x) >> 1;
    if (p == 0 || p + 1 >= 2 * nruns) return;
    u32 b, first, end;
    if (!split_at(offsets, run_first, (p + 1) / 2, k, b, first, end)) return;
    if (((p - first) & (2 * stride - 1)) != 0) return;
    if (p + stride >= end) return;
    bool odd = pair_odd();
    HXyzz acc = ld_half_xyzz<false>(partial + p, odd);
    xyzz_add(acc, ld_half_xyzz<false>(partial + p + stride, odd));
    st_half(partial + p, acc, odd);
}

// msm_segments (msm.cu) on lane pairs: threads 2t and 2t + 1 take segment t (2 nsegs threads).
extern "C" __global__ void msm_segments_pair_g2(const PXyzz* __restrict__ buckets, u32 nb, u32 seg, u32 nsegs_total,
                                                PXyzz* __restrict__ out) {
    u32 t = (blockIdx.x * blockDim.x + threadIdx.x) >> 1;
    if (t >= nsegs_total) return;
    bool odd = pair_odd();
    u32 per_window = nb / seg;
    u32 w = t / per_window;
    u32 first = (t % per_window) * seg;
    const PXyzz* B = buckets + (size_t)w * nb + first;
    HXyzz running = HXyzz::inf();
    HXyzz total = HXyzz::inf();
    for (int j = (int)seg - 1; j >= 0; j--) {
        xyzz_add(running, ld_half_xyzz<true>(B + j, odd));
        xyzz_add(total, running);
    }
    if (first != 0) {
        xyzz_mul_small(running, first);
        xyzz_add(total, running);
    }
    st_half(out + t, total, odd);
}
