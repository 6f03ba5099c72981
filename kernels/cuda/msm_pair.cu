// G2's accumulation, piece sums and window sums on lane pairs (fp2_pair.cuh):
// msm_accumulate_pair_g2, msm_fix_round_pair_g2 and msm_segments_pair_g2 instantiate the
// bodies of G1's one-lane kernels in msm.cu (accumulate_runs, fix_round_slot, segment_sums)
// with the lane view HalfLanes. Appended to msm.cu in the inlined G2 accumulation module only
// (compile.rs, MSM_G2_ACCUMULATE), after the bodies and the point typedefs, so the other
// modules' sources stay as they were.
#if !defined(MSM_G2) || !defined(MSM_ACCUMULATE_ONLY)
#error "msm_pair.cu belongs to the inlined G2 accumulation module"
#endif

// Threads 2t and 2t + 1 take work item t together, the even lane with the c0 half of every
// Fp2 value, the odd lane with c1 (the host launches two threads an item, in blocks of an
// even size). Each lane reads and writes its half of the points and sums (the Fp at
// 2i + odd of a point or sum seen as Fp words), so every buffer's layout is that of the
// one-lane kernels. A lane holds half an accumulator and half a point, so the accumulation
// loads the next point ahead as in G1.
struct HalfLanes {
    typedef Affine<Fp2Pair> A;
    typedef Xyzz<Fp2Pair> X;
    enum { PREFETCH_POINT = true };
    static DEVI u32 item() { return (blockIdx.x * blockDim.x + threadIdx.x) >> 1; }
    bool odd;  // this lane holds c1
    DEVI HalfLanes() : odd(pair_odd()) {}
    DEVI A base(const PAffine* p) const {
        const Fp* f = reinterpret_cast<const Fp*>(p) + odd;
        return A{Fp2Pair{ld_vec_ro(f)}, Fp2Pair{ld_vec_ro(f + 2)}};
    }
    template <bool RO>
    DEVI X load(const PXyzz* p) const {
        const Fp* f = reinterpret_cast<const Fp*>(p) + odd;
        return X{Fp2Pair{ld_vec16<RO>(f)}, Fp2Pair{ld_vec16<RO>(f + 2)}, Fp2Pair{ld_vec16<RO>(f + 4)},
                 Fp2Pair{ld_vec16<RO>(f + 6)}};
    }
    DEVI void store(PXyzz* p, const X& a) const {
        Fp* f = reinterpret_cast<Fp*>(p) + odd;
        st_vec(f, a.X.v);
        st_vec(f + 2, a.Y.v);
        st_vec(f + 4, a.ZZ.v);
        st_vec(f + 6, a.ZZZ.v);
    }
};

// msm_accumulate on lane pairs: 2 nruns threads.
extern "C" __global__ void msm_accumulate_pair_g2(const PAffine* __restrict__ bases, const u32* __restrict__ sorted,
                                                  const u32* __restrict__ offsets, u32 nbuckets,
                                                  const u32* __restrict__ run_first, u32 nruns, u32 entries, u32 k,
                                                  PXyzz* __restrict__ buckets, PXyzz* __restrict__ partial,
                                                  u32 into) {
    accumulate_runs<HalfLanes>(bases, sorted, offsets, nbuckets, run_first, nruns, entries, k, buckets, partial,
                               into);
}

// msm_fix_round on lane pairs: 2 (2 nruns) threads.
extern "C" __global__ void msm_fix_round_pair_g2(PXyzz* __restrict__ partial, const u32* __restrict__ offsets,
                                                 const u32* __restrict__ run_first, u32 nruns, u32 k, u32 stride) {
    fix_round_slot<HalfLanes>(partial, offsets, run_first, nruns, k, stride);
}

// msm_segments on lane pairs: 2 nsegs_total threads.
extern "C" __global__ void msm_segments_pair_g2(const PXyzz* __restrict__ buckets, u32 nb, u32 seg, u32 nsegs_total,
                                                PXyzz* __restrict__ out) {
    segment_sums<HalfLanes>(buckets, nb, seg, nsegs_total, out);
}
