// Fp2 values split over the two lanes of a pair (warp lanes 2j and 2j + 1): the even lane
// holds c0, the odd lane c1. G2's accumulation, piece sums and window sums run each run, slot
// or segment on a pair of lanes with this type (msm_pair.cu): each lane keeps half of a G2
// XYZZ accumulator (48 registers instead of 96), and each Fp2 product becomes one sum of two Fp products with
// one reduction per lane (mul_sum), where the one-lane form takes three Fp products.
// Requires field.cuh (mul_sum: Fp has 4p < R) and, for the lane type, curve.cuh's users.
//
// The lane formulas below take the partner lane's values as arguments, so the host check
// (host_check.cpp, "pair-mismatch") runs both lanes of a product against the Fp2 product.

// Lane `odd` of a b for Fp2 values a = (a0, a1), b = (b0, b1), given this lane's parts
// (a, b) and the partner's (ao, bo):
//   even lane: c0 = a0 b0 - a1 b1 = mul_sum(a0, b0, a1, -b1)
//   odd lane:  c1 = a1 b0 + a0 b1 = mul_sum(a1, b0, a0, b1)
// so both lanes compute mul_sum(a, y, ao, w) with (y, w) = (b, -bo) or (bo, b).
// (The selections word by word: a selection of whole structs put them in local memory.)
DEVI Fp pair_mul_lane(const Fp& a, const Fp& b, const Fp& ao, const Fp& bo, bool odd) {
    Fp nbo = neg(bo), y, w;
#pragma unroll
    for (int i = 0; i < Fp::N; i++) {
        y.v[i] = odd ? bo.v[i] : b.v[i];
        w.v[i] = odd ? b.v[i] : nbo.v[i];
    }
    return mul_sum(a, y, ao, w);
}

// Lane `odd` of a b + c d for Fp2 values, with one reduction: both products' lane forms (as
// pair_mul_lane selects them) in one mul_sum4 (Fp has 5p < R), where two products and a sum
// take two mul_sums. Given the partner's parts ao, bo, co, dO.
DEVI Fp pair_mul_sum_lane(const Fp& a, const Fp& b, const Fp& ao, const Fp& bo, const Fp& c, const Fp& d,
                          const Fp& co, const Fp& dO, bool odd) {
    Fp nbo = neg(bo), ndo = neg(dO), y, w, y2, w2;
#pragma unroll
    for (int i = 0; i < Fp::N; i++) {
        y.v[i] = odd ? bo.v[i] : b.v[i];
        w.v[i] = odd ? b.v[i] : nbo.v[i];
        y2.v[i] = odd ? dO.v[i] : d.v[i];
        w2.v[i] = odd ? d.v[i] : ndo.v[i];
    }
    return mul_sum4(a, y, ao, w, c, y2, co, w2);
}

// Lane `odd` of a^2: c0 = (a0 + a1)(a0 - a1) on the even lane, c1 = (a1 + a1) a0 on the odd.
DEVI Fp pair_sqr_lane(const Fp& a, const Fp& ao, bool odd) {
    Fp d = a - ao, s, y;
#pragma unroll
    for (int i = 0; i < Fp::N; i++) {
        s.v[i] = odd ? a.v[i] : ao.v[i];
        y.v[i] = odd ? ao.v[i] : d.v[i];
    }
    return (a + s) * y;
}

#if defined(__CUDA_ARCH__) || defined(__CUDACC_RTC__)
// The lanes of this thread's pair, for the pair's shuffles and votes. A pair's two lanes run
// the same bucket run, so they take every branch together (each branch tests a pair-wide
// vote); pairs of one warp may diverge, hence the pair's own mask.
DEVI u32 pair_mask() { return 3u << ((threadIdx.x & 31) & 30); }
// Whether this lane holds c1 (blocks have an even number of threads).
DEVI bool pair_odd() { return threadIdx.x & 1; }

// The partner lane's value of x.
DEVI Fp pair_swap(const Fp& x) {
    const u32 mask = pair_mask();
    Fp r;
#pragma unroll
    for (int i = 0; i < Fp::N; i++) r.v[i] = __shfl_xor_sync(mask, x.v[i], 1);
    return r;
}

// This lane's half of an Fp2 value (see the top of the file). Has the interface the point
// formulas of curve.cuh use (zero, one, is_zero, +, -, neg, dbl, *, sqr, mul2, mul_sub), so
// Xyzz<Fp2Pair> and Affine<Fp2Pair> run them unchanged; is_zero is a vote of the pair.
struct Fp2Pair {
    Fp v;
    static DEVI Fp2Pair zero() { return Fp2Pair{Fp::zero()}; }
    static DEVI Fp2Pair one() { return Fp2Pair{pair_odd() ? Fp::zero() : Fp::one()}; }
    DEVI bool is_zero() const { return __all_sync(pair_mask(), v.is_zero()); }
};

DEVI Fp2Pair operator+(const Fp2Pair& a, const Fp2Pair& b) { return Fp2Pair{a.v + b.v}; }
DEVI Fp2Pair operator-(const Fp2Pair& a, const Fp2Pair& b) { return Fp2Pair{a.v - b.v}; }
DEVI Fp2Pair neg(const Fp2Pair& a) { return Fp2Pair{neg(a.v)}; }
DEVI Fp2Pair dbl(const Fp2Pair& a) { return Fp2Pair{dbl(a.v)}; }
DEVI Fp2Pair operator*(const Fp2Pair& a, const Fp2Pair& b) {
    return Fp2Pair{pair_mul_lane(a.v, b.v, pair_swap(a.v), pair_swap(b.v), pair_odd())};
}
// a b + c d with one reduction a lane (pair_mul_sum_lane).
DEVI Fp2Pair mul_sum(const Fp2Pair& a, const Fp2Pair& b, const Fp2Pair& c, const Fp2Pair& d) {
    return Fp2Pair{pair_mul_sum_lane(a.v, b.v, pair_swap(a.v), pair_swap(b.v), c.v, d.v, pair_swap(c.v),
                                     pair_swap(d.v), pair_odd())};
}
// a b - c d, the form of every point formula's Y3 (curve.cuh's mul_sub), as one mul_sum.
DEVI Fp2Pair mul_sub(const Fp2Pair& a, const Fp2Pair& b, const Fp2Pair& c, const Fp2Pair& d) {
    return mul_sum(a, b, c, neg(d));
}
DEVI Fp2Pair sqr(const Fp2Pair& a) { return Fp2Pair{pair_sqr_lane(a.v, pair_swap(a.v), pair_odd())}; }
DEVI void mul2(Fp2Pair& r1, Fp2Pair& r2, const Fp2Pair& a1, const Fp2Pair& b1, const Fp2Pair& a2,
               const Fp2Pair& b2) {
    r1 = a1 * b1;
    r2 = a2 * b2;
}
#endif
