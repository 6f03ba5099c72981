// msm_accumulate for G2 on lane pairs (fp2_pair.cuh). Appended to msm.cu in the inlined G2
// accumulation module only (compile.rs, MSM_G2_ACCUMULATE), after bucket_after and the point
// typedefs, so the other modules' sources stay as they were.
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
