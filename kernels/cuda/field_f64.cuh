// Montgomery products on the FP64 pipe: a measured probe, used by no MSM or NTT kernel.
// On an H200 (kernels_bench --only rates; docs/benchmarks.md, CHANGELOG.md) they are slower than
// the integer products of field.cuh: Fr by a constant 0.97x, Fp 0.88x. Each limb product
// costs three FP64 instructions and about two integer additions, so they issue twice the
// instructions of the integer product and no pipe is saturated (Nsight Compute: FP64 pipe
// 54%, ALU 56%, issue 58%). Mixing them into the G1 mixed addition beside integer products
// (measured, not merged) slowed the accumulation (383 -> 420-466 ms at 2^26). Kept, with
// its differential tests, so the question can be asked again of another GPU in one run.
//
// An H200's integer multiply (IMAD.WIDE, 32 x 32 -> 64 bits) and its FP64 fused multiply-add
// (DFMA, 53 x 53 bits) run on different pipes: kernels_bench's pipe probe measured
// IMAD.WIDE 5.65e12/s alone, DFMA 1.45e13/s alone, and 4.81e12/s of each interleaved. A DFMA
// pair yields a full 52 x 52-bit product, so the FP64 pipe alone multiplies about 3.4x as
// many bits a second as the integer pipe. These products keep the operands as limbs of
// W <= 52 bits in doubles (exact integers) and compute each limb product a * b < 2^(2W) as
//   hi = fma_rz(a, b, C1)      with C1 = 2^(W + 52): hi = C1 + H 2^W, H = floor(a b / 2^W)
//   s  = C2 - hi               with C2 = C1 + 2^52: s = 2^52 - H 2^W, exact
//   lo = fma_rn(a, b, s)       = L + 2^52, L = a b mod 2^W, exact
// so that the bit patterns of hi and lo are H and L plus constants (a double's mantissa is
// its low 52 bits): columns of the schoolbook product are summed as 64-bit integers, and
// Montgomery's reduction runs word by word on those columns, its quotient digit computed
// with integer multiplies. The technique is Emmart, Zheng and Weems, "Faster modular
// exponentiation using double precision floating point arithmetic on the GPU" (ARITH 2018).
//
// - Fp: 8 limbs of 48 bits, R = 2^384, the same R as blst: mul_f64(a, b) == a * b.
// - Fr: 5 limbs of 52 bits, R' = 2^260. One operand is a constant prepared once
//   (FrTw: 16 w mod r, so that a w 2^-260 16 = a w 2^-256): mul_f64(a, tw(w)) == a * w, the
//   shape of the NTT's twiddle products.
// Requires field.cuh.

#if defined(__CUDA_ARCH__) || defined(__CUDACC_RTC__)
DEVI double f64_fma_rz(double a, double b, double c) { return __fma_rz(a, b, c); }
DEVI double f64_fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
DEVI double f64_sub_rn(double a, double b) { return __dsub_rn(a, b); }
DEVI u64 f64_bits(double x) { return (u64)__double_as_longlong(x); }
DEVI double f64_from_bits(u64 x) { return __longlong_as_double((i64)x); }
#endif
// (host_check.cpp defines the five for the host, with the rounding mode set per call.)

// 2^52 as a double, and its bit pattern: for an integer 0 <= x < 2^52, the double 2^52 + x
// has the bits F64_TWO52_BITS + x.
#define F64_TWO52 4503599627370496.0
#define F64_TWO52_BITS 0x4330000000000000ull

__constant__ double FR_MOD_F64[5] = {4503595332403201.0, 52776117727231.0, 2711223964777892.0,
                                     2203984808738944.0, 127464551688605.0};
__constant__ double FP_MOD_F64[8] = {281474976688811.0, 194974335351294.0, 270634993844222.0,
                                     113459389855408.0, 83034393350847.0,  73992301405303.0,
                                     253550359455670.0, 28591897852287.0};

struct FrF64Cfg {
    enum { K = 5, W = 52 };
    static DEVI double m(int i) { return FR_MOD_F64[i]; }
    static DEVI u64 inv() { return 0xffffeffffffffull; }  // -r^-1 mod 2^52
    static DEVI double c1() { return 20282409603651670423947251286016.0; }  // 2^104
};
struct FpF64Cfg {
    enum { K = 8, W = 48 };
    static DEVI double m(int i) { return FP_MOD_F64[i]; }
    static DEVI u64 inv() { return 0xfffcfffcfffdull; }  // -p^-1 mod 2^48
    static DEVI double c1() { return 1267650600228229401496703205376.0; }  // 2^100
};

// Limbs of W bits (as exact doubles) from 32-bit words: limb i holds bits [W i, W i + W).
template <int K, int W, int N>
DEVI void words_to_f64(double (&d)[K], const u32 (&v)[N]) {
#pragma unroll
    for (int i = 0; i < K; i++) {
        u64 acc = 0;
#pragma unroll
        for (int w = 0; w < N; w++) {
            const int sh = 32 * w - W * i;
            if (sh >= W || sh <= -32) continue;
            acc |= sh >= 0 ? (u64)v[w] << sh : (u64)v[w] >> -sh;
        }
        acc &= (1ull << W) - 1;
        d[i] = f64_sub_rn(f64_from_bits(acc | F64_TWO52_BITS), F64_TWO52);
    }
}

// 32-bit words from limbs of W bits (each below 2^W); bits at or above 32 N are dropped.
template <int K, int W, int N>
DEVI void f64_limbs_to_words(u32 (&v)[N], const u64 (&l)[K]) {
#pragma unroll
    for (int w = 0; w < N; w++) {
        u64 acc = 0;
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int sh = W * i - 32 * w;
            if (sh >= 32 || sh <= -W) continue;
            acc |= sh >= 0 ? l[i] << sh : l[i] >> -sh;
        }
        v[w] = (u32)acc;
    }
}

// col[k] += a b mod 2^W, col[k + 1] += floor(a b / 2^W), for limbs a, b < 2^W.
template <class C>
DEVI void f64_mad(u64* col, int k, double a, double b) {
    const double c1 = C::c1();
    const double c2 = c1 + F64_TWO52;  // exact: W + 1 <= 53 significant bits
    const double hi = f64_fma_rz(a, b, c1);
    const double lo = f64_fma_rn(a, b, f64_sub_rn(c2, hi));
    col[k] += f64_bits(lo) - F64_TWO52_BITS;
    col[k + 1] += f64_bits(hi) - f64_bits(c1);
}

// Montgomery product of limbs a, b (values below the modulus m) with R = 2^(W K): returns in
// `out` W-bit limbs of a b R^-1 mod m, below 2m. Column sums stay below 2^(W + 6) (K <= 8).
template <class C>
DEVI void f64_mont(u64 (&out)[C::K], const double (&a)[C::K], const double (&b)[C::K]) {
    const int K = C::K, W = C::W;
    const u64 mask = (1ull << W) - 1;
    u64 col[2 * K];
#pragma unroll
    for (int k = 0; k < 2 * K; k++) col[k] = 0;
#pragma unroll
    for (int i = 0; i < K; i++) {
#pragma unroll
        for (int j = 0; j < K; j++) f64_mad<C>(col, i + j, a[i], b[j]);
    }
#pragma unroll
    for (int k = 0; k < K; k++) {
        // quotient digit q = (col[k] mod 2^W) (-m^-1) mod 2^W, so col[k] + q m[0] = 0 mod 2^W
        const u64 t = col[k] & mask;
        const u64 q = (t * C::inv()) & mask;
        const double qd = f64_sub_rn(f64_from_bits(q | F64_TWO52_BITS), F64_TWO52);
        // the low half of q m[0] only cancels t: col[k] + q m[0] carries (col[k] >> W) + (t != 0)
        // out of the column, plus the high half of q m[0]
        const double c1 = C::c1();
        col[k + 1] += (col[k] >> W) + (t != 0) + (f64_bits(f64_fma_rz(qd, C::m(0), c1)) - f64_bits(c1));
#pragma unroll
        for (int j = 1; j < K; j++) f64_mad<C>(col, k + j, qd, C::m(j));
    }
    u64 carry = 0;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const u64 v = col[K + k] + carry;
        out[k] = v & mask;
        carry = v >> W;
    }
}

// A constant Fr operand prepared for mul_f64: limbs of 16 w mod r (see the top).
struct FrTw {
    double l[5];
};
DEVI FrTw fr_tw(const Fr& w) {
    const Fr w16 = dbl(dbl(dbl(dbl(w))));
    FrTw t;
    words_to_f64<5, 52, 8>(t.l, w16.v);
    return t;
}

// a w for a < r and t = fr_tw(w): equal to a * w.
DEVI Fr mul_f64(const Fr& a, const FrTw& t) {
    double ad[5];
    words_to_f64<5, 52, 8>(ad, a.v);
    u64 l[5];
    f64_mont<FrF64Cfg>(l, ad, t.l);
    Fr r;
    f64_limbs_to_words<5, 52, 8>(r.v, l);  // below 2r < 2^256: bits 256..259 are zero
    mont_reduce_once<FrCfg>(r.v);
    return r;
}

// a b for a, b < p: equal to a * b.
DEVI Fp mul_f64(const Fp& a, const Fp& b) {
    double ad[8], bd[8];
    words_to_f64<8, 48, 12>(ad, a.v);
    words_to_f64<8, 48, 12>(bd, b.v);
    u64 l[8];
    f64_mont<FpF64Cfg>(l, ad, bd);
    Fp r;
    f64_limbs_to_words<8, 48, 12>(r.v, l);
    mont_reduce_once<FpCfg>(r.v);
    return r;
}
