// BLS12-381 prime fields in Montgomery form, bit-compatible with blst:
// Fp (381-bit, R = 2^384) and Fr (255-bit, R = 2^256), stored as little-endian 32-bit
// limbs, which is the same memory as blst's little-endian 64-bit limbs.
// NVRTC has no standard headers: fixed-width types are declared here.
// Carry chains use one-instruction inline PTX primitives (below), emulated on the host so
// the algorithms can be unit-tested with a plain C++ compiler.

typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;
typedef long long i64;

#define DEVI __device__ __forceinline__
// The Montgomery product is inlined by default; modules with heavy curve code define
// MUL_FN as `__device__ __noinline__` to keep NVRTC compile time and code size small.
#ifndef MUL_FN
#define MUL_FN DEVI
#endif

// Carry-chain primitives, one PTX instruction each. `asm volatile` keeps the statements of
// a chain in program order (the carry flag is invisible to the compiler). On the host (a
// plain C++ compiler, used to unit-test the algorithms) they are emulated with a carry
// variable.
#if defined(__CUDA_ARCH__) || defined(__CUDACC_RTC__)
#define PTX1(name, op)                                                              \
    DEVI u32 name(u32 a, u32 b) {                                                   \
        u32 d;                                                                      \
        asm volatile(op " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));                \
        return d;                                                                   \
    }
#define PTX2(name, op)                                                              \
    DEVI u32 name(u32 a, u32 b, u32 c) {                                            \
        u32 d;                                                                      \
        asm volatile(op " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));    \
        return d;                                                                   \
    }
PTX1(add_cc, "add.cc.u32")
PTX1(addc_cc, "addc.cc.u32")
PTX1(addc, "addc.u32")
PTX1(sub_cc, "sub.cc.u32")
PTX1(subc_cc, "subc.cc.u32")
PTX1(subc, "subc.u32")
PTX2(mad_lo_cc, "mad.lo.cc.u32")
PTX2(madc_lo_cc, "madc.lo.cc.u32")
PTX2(mad_hi_cc, "mad.hi.cc.u32")
PTX2(madc_hi_cc, "madc.hi.cc.u32")
PTX2(madc_hi, "madc.hi.u32")
#else
static u32 host_cc;
#define HOSTOP(name, expr, setcc)                                                   \
    inline u32 name(u32 a, u32 b) {                                                 \
        u64 t = (expr);                                                             \
        if (setcc) host_cc = (u32)(t >> 32) & 1;                                    \
        return (u32)t;                                                              \
    }
HOSTOP(add_cc, (u64)a + b, 1)
HOSTOP(addc_cc, (u64)a + b + host_cc, 1)
HOSTOP(addc, (u64)a + b + host_cc, 0)
HOSTOP(sub_cc, (u64)a - b, 1)
HOSTOP(subc_cc, (u64)a - b - host_cc, 1)
HOSTOP(subc, (u64)a - b - host_cc, 0)
#define HOSTMAD(name, part, cin, setcc)                                             \
    inline u32 name(u32 a, u32 b, u32 c) {                                          \
        u64 p = (u64)a * b;                                                         \
        u64 t = (u64)(u32)(part) + c + (cin);                                       \
        if (setcc) host_cc = (u32)(t >> 32);                                        \
        return (u32)t;                                                              \
    }
HOSTMAD(mad_lo_cc, p, 0, 1)
HOSTMAD(madc_lo_cc, p, host_cc, 1)
HOSTMAD(mad_hi_cc, p >> 32, 0, 1)
HOSTMAD(madc_hi_cc, p >> 32, host_cc, 1)
HOSTMAD(madc_hi, p >> 32, host_cc, 0)
#endif

__constant__ u32 FP_MOD[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                               0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                               0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
__constant__ u32 FP_ONE[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b,
                               0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853,
                               0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
__constant__ u32 FP_R2[12] = {0x1c341746, 0xf4df1f34, 0x09d104f1, 0x0a76e6a6,
                              0x4c95b6d5, 0x8de5476c, 0x939d83c0, 0x67eb88a9,
                              0xb519952d, 0x9a793e85, 0x92cae3aa, 0x11988fe5};
__constant__ u32 FR_MOD[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                              0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
__constant__ u32 FR_ONE[8] = {0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
                              0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};
__constant__ u32 FR_R2[8] = {0xf3f29c6d, 0xc999e990, 0x87925c23, 0x2b6cedcb,
                             0x7254398f, 0x05d31496, 0x9f59ff11, 0x0748d9d9};

// LOW_ONE: the modulus' two lowest words are 1 and 2^32 - 1 (Fr), so the reduction's first
// product of each chain needs no multiply (eo_mad_n_redc), and the row's multiplier is a
// negation (mi = -t0, since -r^-1 = -1 mod 2^32), computed by low_one_mi below.
// SUM_HEADROOM: 4m < R (= 2^(32N)), so a sum of two products can share one reduction
// (mul_sum); Fp has it (p < 2^381), Fr does not (r > 2^254). SUM4_HEADROOM: 5m < R, for four
// (mul_sum4; 5p < 0.51 R).
struct FpCfg {
    enum { N = 12, LOW_ONE = 0, SUM_HEADROOM = 1, SUM4_HEADROOM = 1 };
    static DEVI u32 m(int i) { return FP_MOD[i]; }
    static DEVI u32 one(int i) { return FP_ONE[i]; }
    static DEVI u32 r2(int i) { return FP_R2[i]; }
    static DEVI u32 inv() { return 0xfffcfffdu; }  // -p^-1 mod 2^32
};
struct FrCfg {
    enum { N = 8, LOW_ONE = 1, SUM_HEADROOM = 0, SUM4_HEADROOM = 0 };
    static DEVI u32 m(int i) { return FR_MOD[i]; }
    static DEVI u32 one(int i) { return FR_ONE[i]; }
    static DEVI u32 r2(int i) { return FR_R2[i]; }
    static DEVI u32 inv() { return 0xffffffffu; }  // -r^-1 mod 2^32
};

// The reduction multiplier of a LOW_ONE row, mi = -t0 (mod 2^32), hidden from ptxas behind
// a word it cannot see (OPAQUE_ZERO, 0 in constant memory). When ptxas knows mi = -t0 it
// splits every product mi * m[j] of the row into IMAD.X and IMAD.HI.U32.X plus an IADD3.X
// for the high word's addend, where it otherwise emits one IMAD.WIDE.U32.X: with the
// plain negation an Fr product took 285 multiply-pipe slots (the high products two
// each) and 352 instructions, with the hidden one 237 and 296 (SASS of NVRTC 13.0, sm_90;
// with eo_redc_row passing t0 as -mi). One LOP3 (an ALU instruction) a row. Measured on an
// H200: Fr products 5.45e10 -> 5.90e10 a second, NTT 2^27 37.1 -> 35.4 ms, H 239 -> 226 ms.
__constant__ u32 OPAQUE_ZERO[1] = {0u};
DEVI u32 low_one_mi(u32 t0) { return (0u - t0) ^ OPAQUE_ZERO[0]; }

// Invariant: v < modulus (fully reduced), Montgomery form.
template <class C>
struct Mont {
    enum { N = C::N };
    u32 v[N];

    static DEVI Mont zero() {
        Mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    static DEVI Mont one() {
        Mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = C::one(i);
        return r;
    }
    DEVI bool is_zero() const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    DEVI bool eq(const Mont& o) const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }
};

// r = a - m if a >= m else a (a < 2m < 2^(32N)).
template <class C>
DEVI void mont_reduce_once(u32 (&a)[C::N]) {
    const int N = C::N;
    u32 s[N];
    u32 borrow;
    s[0] = sub_cc(a[0], C::m(0));
#pragma unroll
    for (int i = 1; i < N; i++) s[i] = subc_cc(a[i], C::m(i));
    borrow = subc(0, 0);
#pragma unroll
    for (int i = 0; i < N; i++) a[i] = borrow ? a[i] : s[i];
}

template <class C>
DEVI Mont<C> operator+(const Mont<C>& a, const Mont<C>& b) {
    const int N = C::N;
    Mont<C> r;
    r.v[0] = add_cc(a.v[0], b.v[0]);
#pragma unroll
    for (int i = 1; i < N; i++) r.v[i] = addc_cc(a.v[i], b.v[i]);
    // both moduli are below 2^(32N-1), so a + b never carries out of the top limb
    mont_reduce_once<C>(r.v);
    return r;
}

template <class C>
DEVI Mont<C> operator-(const Mont<C>& a, const Mont<C>& b) {
    const int N = C::N;
    Mont<C> r;
    u32 borrow;
    r.v[0] = sub_cc(a.v[0], b.v[0]);
#pragma unroll
    for (int i = 1; i < N; i++) r.v[i] = subc_cc(a.v[i], b.v[i]);
    borrow = subc(0, 0);
    // add the modulus back when the subtraction borrowed (mask is 0 or all ones)
    r.v[0] = add_cc(r.v[0], C::m(0) & borrow);
#pragma unroll
    for (int i = 1; i < N; i++) r.v[i] = addc_cc(r.v[i], C::m(i) & borrow);
    return r;
}

template <class C>
DEVI Mont<C> neg(const Mont<C>& a) {
    return Mont<C>::zero() - a;
}

template <class C>
DEVI Mont<C> dbl(const Mont<C>& a) {
    return a + a;
}

// Montgomery product a * b * 2^(-32N) mod m, CIOS with the limbs split into two
// accumulators (the technique of sppark's mont_t): `even` collects a[2k] * b_i at positions
// 2k, 2k+1 and `odd` collects a[2k+1] * b_i one word up, so each row is two independent
// carry chains of N instructions. After each reduction the two arrays swap roles (the
// one-word shift is free): the new aligned array absorbs the lowest word of the other, whose
// carry enters the other's next chain. Needs N even and a modulus below 2^(32N - 1).
template <int N>
DEVI void eo_mul_n(u32* acc, const u32* a, u32 bi) {
#pragma unroll
    for (int j = 0; j < N; j += 2) {
        acc[j] = a[j] * bi;
        acc[j + 1] = __umulhi(a[j], bi);
    }
}
// The pairs j >= 2 of a chain already carrying: acc[j], acc[j + 1] += a[j] * bi.
template <int N>
DEVI void eo_madc_tail(u32* acc, const u32* a, u32 bi) {
#pragma unroll
    for (int j = 2; j < N; j += 2) {
        acc[j] = madc_lo_cc(a[j], bi, acc[j]);
        acc[j + 1] = madc_hi_cc(a[j], bi, acc[j + 1]);
    }
}
// The pairs j >= 2 of a chain that also shifts `odd` down two words: odd[j], odd[j + 1] =
// odd[j + 2], odd[j + 3] + a[j] * bi, the last pair into fresh words (no carry out).
template <int N>
DEVI void eo_madc_rshift_tail(u32* odd, const u32* a, u32 bi) {
    static_assert(N >= 4, "the first pair and the last are distinct");
#pragma unroll
    for (int j = 2; j < N - 2; j += 2) {
        odd[j] = madc_lo_cc(a[j], bi, odd[j + 2]);
        odd[j + 1] = madc_hi_cc(a[j], bi, odd[j + 3]);
    }
    odd[N - 2] = madc_lo_cc(a[N - 2], bi, 0);
    odd[N - 1] = madc_hi(a[N - 2], bi, 0);
}
template <int N>
DEVI void eo_cmad_n(u32* acc, const u32* a, u32 bi) {
    acc[0] = mad_lo_cc(a[0], bi, acc[0]);
    acc[1] = madc_hi_cc(a[0], bi, acc[1]);
    eo_madc_tail<N>(acc, a, bi);
}
template <int N>
DEVI void eo_madc_n_rshift(u32* odd, const u32* a, u32 bi) {
    odd[0] = madc_lo_cc(a[0], bi, odd[2]);
    odd[1] = madc_hi_cc(a[0], bi, odd[3]);
    eo_madc_rshift_tail<N>(odd, a, bi);
}
// eo_cmad_n with the first pair's product given: acc[0..1] += (lo0, hi0), then a[2..] * bi.
template <int N>
DEVI void eo_cmad_n_given(u32* acc, const u32* a, u32 bi, u32 lo0, u32 hi0) {
    acc[0] = add_cc(acc[0], lo0);
    acc[1] = addc_cc(acc[1], hi0);
    eo_madc_tail<N>(acc, a, bi);
}
// eo_madc_n_rshift with the first pair's product given: odd = odd >> 2 words + (lo0, hi0) +
// a[2..] * bi, continuing the carry chain.
template <int N>
DEVI void eo_madc_n_rshift_given(u32* odd, const u32* a, u32 bi, u32 lo0, u32 hi0) {
    odd[0] = addc_cc(odd[2], lo0);
    odd[1] = addc_cc(odd[3], hi0);
    eo_madc_rshift_tail<N>(odd, a, bi);
}
// The operand part of a CIOS row: (even, odd) += a * bi, the first row setting them, a later
// one first taking in the word the previous row's division left below the aligned
// accumulator and shifting the other by two words.
template <int N>
DEVI void eo_mad_n_row(u32* even, u32* odd, const u32* a, u32 bi, bool first) {
    if (first) {
        eo_mul_n<N>(odd, a + 1, bi);
        eo_mul_n<N>(even, a, bi);
    } else {
        even[0] = add_cc(even[0], odd[1]);
        eo_madc_n_rshift<N>(odd, a + 1, bi);
        eo_cmad_n<N>(even, a, bi);
        odd[N - 1] = addc(odd[N - 1], 0);
    }
}
// The reduction part of a CIOS row: mi from the aligned accumulator's lowest word, then
// (even, odd) += mi * m, so that even[0] becomes 0 (mod 2^32).
template <class C>
DEVI void eo_redc_row(u32* even, u32* odd, const u32* mod_even, const u32* mod_odd) {
    const int N = C::N;
    if (C::LOW_ONE) {
        // inv = -1, m[0] = 1, m[1] = 2^32 - 1: mi = -even[0], mi * 1 = (mi, 0) and
        // mi * (2^32 - 1) = (-mi, mi - 1), or (0, 0) for mi = 0: four products of the
        // row's 2N become additions (the Fr product, the NTT's inner loop, is IMAD-bound)
        // -mi is t0 itself: passed as it is, not negated again (ptxas cannot see through
        // low_one_mi: negated, it took a product 3 more multiply-pipe instructions)
        const u32 t0 = even[0];
        const u32 mi = low_one_mi(t0);
        eo_cmad_n_given<N>(odd, mod_odd, mi, t0, mi ? mi - 1 : 0u);
        eo_cmad_n_given<N>(even, mod_even, mi, mi, 0u);
    } else {
        u32 mi = even[0] * C::inv();
        eo_cmad_n<N>(odd, mod_odd, mi);
        eo_cmad_n<N>(even, mod_even, mi);
    }
    odd[N - 1] = addc(odd[N - 1], 0);
}
template <class C>
DEVI void eo_mad_n_redc(u32* even, u32* odd, const u32* a, const u32* mod_even, const u32* mod_odd, u32 bi,
                        bool first) {
    eo_mad_n_row<C::N>(even, odd, a, bi, first);
    eo_redc_row<C>(even, odd, mod_even, mod_odd);
}

// The modulus' words with a zero word above: mod_even = mod, mod_odd = mod + 1 for the rows.
template <class C>
DEVI void mont_mod_words(u32* mod) {
#pragma unroll
    for (int i = 0; i < C::N; i++) mod[i] = C::m(i);
    mod[C::N] = 0;
}

// The end of a product: r = even + odd one word down (mont_merge_sum), reduced once
// (mont_merge).
template <class C>
DEVI void mont_merge_sum(Mont<C>& r, const u32* even, const u32* odd) {
    const int N = C::N;
    r.v[0] = add_cc(even[0], odd[1]);
#pragma unroll
    for (int i = 1; i < N - 1; i++) r.v[i] = addc_cc(even[i], odd[i + 1]);
    r.v[N - 1] = addc(even[N - 1], 0);
}
template <class C>
DEVI void mont_merge(Mont<C>& r, const u32* even, const u32* odd) {
    mont_merge_sum<C>(r, even, odd);
    mont_reduce_once<C>(r.v);
}

// Montgomery reduction of a wide product t < m^2: t B^(-N) mod m, fully reduced (sppark's
// wide_t does the same: REDC of the low half, then the high half added).
// REDC(t_lo) by reduction-only rows (the CIOS rows without the operand product: the odd
// accumulator's shift rides the reduction's chain), which is at most m, then + t_hi (< m)
// reduced once.
template <class C>
DEVI Mont<C> redc_wide(const u32* t) {
    const int N = C::N;
    u32 mod[N + 1];
    mont_mod_words<C>(mod);
    u32 even[N], odd[N + 1];
#pragma unroll
    for (int i = 0; i < N; i++) even[i] = t[i];
    // with LOW_ONE (Fr: inv = -1, m[0] = 1, m[1] = 2^32 - 1) mi = -even[0], mi * m[0] = (mi, 0)
    // and mi * m[1] = (-mi, mi - 1), or (0, 0) for mi = 0, as in eo_mad_n_redc
    {
        const u32 t0 = even[0];
        u32 mi = C::LOW_ONE ? low_one_mi(t0) : t0 * C::inv();
        eo_mul_n<N>(odd, mod + 1, mi);
        if (C::LOW_ONE) {
            odd[0] = t0;
            odd[1] = mi ? mi - 1 : 0u;
            eo_cmad_n_given<N>(even, mod, mi, mi, 0u);
        } else {
            eo_cmad_n<N>(even, mod, mi);
        }
        odd[N - 1] = addc(odd[N - 1], 0);
    }
#pragma unroll
    for (int i = 1; i < N; i++) {
        u32* ev = (i & 1) ? odd : even;
        u32* od = (i & 1) ? even : odd;
        // the carry of this addition enters od's shifted chain below; mi is computed between
        // them by instructions that do not touch the carry flag (PTX: only .cc ones do)
        ev[0] = add_cc(ev[0], od[1]);
        if (C::LOW_ONE) {
            const u32 t0 = ev[0];
            const u32 mi = low_one_mi(t0);
            eo_madc_n_rshift_given<N>(od, mod + 1, mi, t0, mi ? mi - 1 : 0u);
            eo_cmad_n_given<N>(ev, mod, mi, mi, 0u);
        } else {
            u32 mi = ev[0] * C::inv();
            eo_madc_n_rshift<N>(od, mod + 1, mi);
            eo_cmad_n<N>(ev, mod, mi);
        }
        od[N - 1] = addc(od[N - 1], 0);
    }
    // after a row the other accumulator is the aligned one: the last row (N - 1, odd) reduced
    // `odd`, so `even` is aligned and `odd` one word down, as after the CIOS loop (mont_merge)
    Mont<C> lo, hi;
    lo.v[0] = add_cc(even[0], odd[1]);
#pragma unroll
    for (int i = 1; i < N - 1; i++) lo.v[i] = addc_cc(even[i], odd[i + 1]);
    lo.v[N - 1] = addc(even[N - 1], 0);
#pragma unroll
    for (int i = 0; i < N; i++) hi.v[i] = t[N + i];
    return lo + hi;
}

// One chain of sqr_wide's row i: acc += a_i a_j at word i + j for j = j0, j0 + 2, ... < N,
// then the chain's carry into the word above its last (when that word exists).
template <int N>
DEVI void sqr_gap_chain(u32* acc, const u32* a, int i, int j0) {
    acc[i + j0] = mad_lo_cc(a[i], a[j0], acc[i + j0]);
    acc[i + j0 + 1] = madc_hi_cc(a[i], a[j0], acc[i + j0 + 1]);
    int jl = j0;
#pragma unroll
    for (int j = j0 + 2; j < N; j += 2) {
        acc[i + j] = madc_lo_cc(a[i], a[j], acc[i + j]);
        acc[i + j + 1] = madc_hi_cc(a[i], a[j], acc[i + j + 1]);
        jl = j;
    }
    if (i + jl + 2 < 2 * N) acc[i + jl + 2] = addc(acc[i + jl + 2], 0);
}

// Wide square of an N-word number (N even): t[0 .. 2N) = a^2, as twice the products
// a_i a_j (i < j) plus the squares a_i^2. Row i's products a_i a_j sit at word i + j, which
// has the parity of j - i, so they go to two accumulators by that parity: `e` holds pairs
// (lo, hi) starting at even words, `o` at odd words. Each row starts two words above the
// last, so a word keeps its place in its pair from row to row (ptxas keeps the pairs in
// aligned registers, one IMAD.WIDE a product). A chain's carry goes to the word just above
// it, which holds at most an earlier carry and is taken by the next row's chain, so it never
// overflows. N(N - 1)/2 + N multiply-adds against the product's N^2.
template <int N>
DEVI void sqr_wide(u32* t, const u32* a) {
    u32 e[2 * N], o[2 * N];
#pragma unroll
    for (int k = 0; k < 2 * N; k++) {
        e[k] = 0;
        o[k] = 0;
    }
#pragma unroll
    for (int i = 0; i < N - 1; i++) {
        sqr_gap_chain<N>(o, a, i, i + 1);  // odd gaps j - i
        if (i + 2 < N) sqr_gap_chain<N>(e, a, i, i + 2);  // even gaps
    }
    // t = 2 (e + o) + sum a_i^2 B^(2i); e + o < B^(2N) / 2
    t[0] = add_cc(e[0], o[0]);
#pragma unroll
    for (int k = 1; k < 2 * N; k++) t[k] = addc_cc(e[k], o[k]);
    t[0] = add_cc(t[0], t[0]);
#pragma unroll
    for (int k = 1; k < 2 * N; k++) t[k] = addc_cc(t[k], t[k]);
    t[0] = mad_lo_cc(a[0], a[0], t[0]);
    t[1] = madc_hi_cc(a[0], a[0], t[1]);
#pragma unroll
    for (int i = 1; i < N; i++) {
        t[2 * i] = madc_lo_cc(a[i], a[i], t[2 * i]);
        t[2 * i + 1] = madc_hi_cc(a[i], a[i], t[2 * i + 1]);
    }
}

// The Montgomery square by sqr_wide and redc_wide: the same value as a * a.
template <class C>
DEVI Mont<C> sqr_dedicated(const Mont<C>& a) {
    u32 t[2 * C::N];
    sqr_wide<C::N>(t, a.v);
    return redc_wide<C>(t);
}

// The operands are taken by value: out of line (MUL_FN __noinline__), references made every
// call store its operands in the caller's stack frame (local memory) and the callee load
// them; by value they pass in registers (msm_segments_g2: 63.5 -> 42.7 ms of a 2^24 G2 MSM).
// mont_mul_unreduced: the product before its final subtraction (below 2m for a, b < m; the
// lazy Fr product below relies on its bound for b up to 2r).
template <class C>
DEVI Mont<C> mont_mul_unreduced(const Mont<C>& a, const Mont<C>& b) {
    const int N = C::N;
    u32 mod[N + 1];
    mont_mod_words<C>(mod);
    u32 even[N], odd[N + 1];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        eo_mad_n_redc<C>(even, odd, a.v, mod, mod + 1, b.v[i], i == 0);
        eo_mad_n_redc<C>(odd, even, a.v, mod, mod + 1, b.v[i + 1], false);
    }
    Mont<C> r;
    mont_merge_sum<C>(r, even, odd);
    return r;
}
template <class C>
MUL_FN Mont<C> operator*(Mont<C> a, Mont<C> b) {
    Mont<C> r = mont_mul_unreduced<C>(a, b);
    mont_reduce_once<C>(r.v);
    return r;
}

// One more operand product in a row of a sum of products: (even, odd) += c * di, the even
// chain's carry into the odd accumulator's top word.
template <int N>
DEVI void eo_cmad_sum(u32* even, u32* odd, const u32* c, u32 di) {
    eo_cmad_n<N>(odd, c + 1, di);
    eo_cmad_n<N>(even, c, di);
    odd[N - 1] = addc(odd[N - 1], 0);
}

// One row of mul_sum: eo_mad_n_redc with a second operand product c * di added before the
// reduction. With 4m < R the accumulator stays below 4mB before each division by B, so its
// word N (the odd accumulator's top) stays below 2^31 and the odd chains never carry out.
template <class C>
DEVI void eo_mad2_n_redc(u32* even, u32* odd, const u32* a, u32 bi, const u32* c, u32 di,
                         const u32* mod_even, const u32* mod_odd, bool first) {
    const int N = C::N;
    eo_mad_n_row<N>(even, odd, a, bi, first);
    eo_cmad_sum<N>(even, odd, c, di);
    eo_redc_row<C>(even, odd, mod_even, mod_odd);
}

// The CIOS frame of a sum of products with one reduction: `row(even, odd, i, mod, first)`
// adds the operand products of b_i (and the like) and reduces once; rows alternate the two
// accumulators' roles as in mont_mul_unreduced; the result reduced once.
template <class C, class Row>
DEVI Mont<C> mont_sum_rows(Row row) {
    const int N = C::N;
    u32 mod[N + 1];
    mont_mod_words<C>(mod);
    u32 even[N], odd[N + 1];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        row(even, odd, i, mod, i == 0);
        row(odd, even, i + 1, mod, false);
    }
    Mont<C> r;
    mont_merge<C>(r, even, odd);
    return r;
}

// (a b + c d) R^-1 mod m with one reduction (the technique of sppark's dot_n_redc): each
// row adds a * b_i and c * d_i, then reduces once, so the pair costs three chains a row
// where two products cost four. Needs C::SUM_HEADROOM (4m < R): the result is below
// (2m^2 + Rm) / R < 1.5m before the final subtraction. A difference a b - c d is
// mul_sum(a, b, c, neg(d)).
template <class C>
DEVI Mont<C> mul_sum(Mont<C> a, Mont<C> b, Mont<C> c, Mont<C> d) {
    static_assert(C::SUM_HEADROOM, "mul_sum needs 4m < R");
    return mont_sum_rows<C>([&](u32* even, u32* odd, int i, const u32* mod, bool first) {
        eo_mad2_n_redc<C>(even, odd, a.v, b.v[i], c.v, d.v[i], mod, mod + 1, first);
    });
}

// (a b + c d + e f + g h) R^-1 mod m with one reduction: mul_sum's rows with four operand
// products, five chains a row where two mul_sums take six. Needs C::SUM4_HEADROOM (5m < R;
// Fp: 5p < 0.51 R): a row adds below 4mB of products and mB of reduction to an accumulator
// below 5m, so before each division it is below 5m(B + 1) < B^(N + 1) and no chain carries
// out of the odd accumulator's top word (every partial sum is below the whole); the result
// is below (4m^2 + Rm) / R < 1.5m before the final subtraction. Operands below m.
template <class C>
DEVI Mont<C> mul_sum4(Mont<C> a, Mont<C> b, Mont<C> c, Mont<C> d, Mont<C> e, Mont<C> f, Mont<C> g,
                      Mont<C> h) {
    static_assert(C::SUM4_HEADROOM, "mul_sum4 needs 5m < R");
    return mont_sum_rows<C>([&](u32* even, u32* odd, int i, const u32* mod, bool first) {
        const int N = C::N;
        eo_mad_n_row<N>(even, odd, a.v, b.v[i], first);
        eo_cmad_sum<N>(even, odd, c.v, d.v[i]);
        eo_cmad_sum<N>(even, odd, e.v, f.v[i]);
        eo_cmad_sum<N>(even, odd, g.v, h.v[i]);
        eo_redc_row<C>(even, odd, mod, mod + 1);
    });
}

// Two independent Montgomery products, r1 = a1 b1 and r2 = a2 b2, with their rows
// interleaved. Each product is carry chains through the one carry flag, and ptxas
// interleaves only chains that are near in the program (in the SASS: four carry predicates in
// turn instead of two). msm_accumulate_g1 runs 2 warps a scheduler and keeps the multiply
// pipe 79.5% busy (Nsight Compute, an H200; 96% for independent products), so there was
// little to win: modules that define PAIRED_PRODUCTS (the inlined G1 accumulation: 386.5 ->
// 383.4 ms at 2^26, 232 registers instead of 218) get the interleaved form; the others two
// ordinary products, so out-of-line modules keep one product function.
template <class C>
DEVI void mul2(Mont<C>& r1, Mont<C>& r2, Mont<C> a1, Mont<C> b1, Mont<C> a2, Mont<C> b2) {
#ifdef PAIRED_PRODUCTS
    const int N = C::N;
    u32 mod[N + 1];
    mont_mod_words<C>(mod);
    u32 even1[N], odd1[N + 1], even2[N], odd2[N + 1];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        eo_mad_n_redc<C>(even1, odd1, a1.v, mod, mod + 1, b1.v[i], i == 0);
        eo_mad_n_redc<C>(even2, odd2, a2.v, mod, mod + 1, b2.v[i], i == 0);
        eo_mad_n_redc<C>(odd1, even1, a1.v, mod, mod + 1, b1.v[i + 1], false);
        eo_mad_n_redc<C>(odd2, even2, a2.v, mod, mod + 1, b2.v[i + 1], false);
    }
    mont_merge<C>(r1, even1, odd1);
    mont_merge<C>(r2, even2, odd2);
#else
    r1 = a1 * b1;
    r2 = a2 * b2;
#endif
}

// Modules that define DEDICATED_SQR (compile.rs: those with inlined products) square with
// sqr_dedicated: on an H200 1.27x the squares of the product, and the G1 2^26 MSM 450 ->
// 437 ms (two of the mixed addition's ten products are squares). Out-of-line modules keep
// the one product function.
template <class C>
DEVI Mont<C> sqr(const Mont<C>& a) {
#ifdef DEDICATED_SQR
    return sqr_dedicated(a);
#else
    return a * a;
#endif
}

// Montgomery form to canonical integer (multiply by 1).
template <class C>
DEVI Mont<C> from_mont(const Mont<C>& a) {
    Mont<C> one_raw = Mont<C>::zero();
    one_raw.v[0] = 1;
    return a * one_raw;
}

// Canonical integer (< modulus) to Montgomery form (multiply by R^2).
template <class C>
DEVI Mont<C> to_mont(const Mont<C>& a) {
    Mont<C> r2;
#pragma unroll
    for (int i = 0; i < C::N; i++) r2.v[i] = C::r2(i);
    return a * r2;
}

typedef Mont<FpCfg> Fp;
typedef Mont<FrCfg> Fr;

// Lazy Fr arithmetic (the NTT's butterflies): values in [0, 2r) instead of [0, r), which
// 2r < 2^256 allows (r < 0.46 * 2^256). Each function states what it takes and gives;
// fr_reduce_lazy brings a value back to [0, r). The saving is the Montgomery product's final
// subtraction: a < r and b < 2r give (a b + q r) / R below r (2r / R + 1) < 1.91 r < 2r
// before it, so the product can stop there. The sum needs one word more (a + b < 4r may
// exceed 2^256), the difference costs what the full one does.
// Which operand may be lazy matters: the product's rows add a * b_i (b by words), and its
// accumulator stays below (a + r) 2^32 before each division by 2^32 (a + r after), which the
// N + 1 words hold for a < r whatever b is, but not for a up to 2r.
__constant__ u32 FR_MOD2[8] = {0x00000002, 0xfffffffe, 0xfffcb7fd, 0xa77b4805,
                               0x1343b00a, 0x6673b010, 0x533afa90, 0xe7db4ea6};

// a b R^-1 mod r, in [0, 2r), for a < r (a twiddle, a factor) and b < 2r, in that order. The
// full product (operator*) takes the same inputs and returns the value in [0, r).
DEVI Fr fr_mul_lazy(Fr a, Fr b) { return mont_mul_unreduced<FrCfg>(a, b); }

// a + b, in [0, 2r), for a, b < 2r: the sum (up to 4r, nine words) less 2r when that does
// not borrow.
DEVI Fr fr_add_lazy(const Fr& a, const Fr& b) {
    const int N = FrCfg::N;
    Fr s, t;
    s.v[0] = add_cc(a.v[0], b.v[0]);
#pragma unroll
    for (int i = 1; i < N; i++) s.v[i] = addc_cc(a.v[i], b.v[i]);
    const u32 top = addc(0, 0);
    t.v[0] = sub_cc(s.v[0], FR_MOD2[0]);
#pragma unroll
    for (int i = 1; i < N; i++) t.v[i] = subc_cc(s.v[i], FR_MOD2[i]);
    // all ones when the nine-word sum is below 2r
    const u32 below = subc(top, 0);
#pragma unroll
    for (int i = 0; i < N; i++) s.v[i] = below ? s.v[i] : t.v[i];
    return s;
}

// a - b, in [0, 2r), for a, b < 2r: 2r added back when the difference borrows.
DEVI Fr fr_sub_lazy(const Fr& a, const Fr& b) {
    const int N = FrCfg::N;
    Fr r;
    r.v[0] = sub_cc(a.v[0], b.v[0]);
#pragma unroll
    for (int i = 1; i < N; i++) r.v[i] = subc_cc(a.v[i], b.v[i]);
    const u32 borrow = subc(0, 0);
    r.v[0] = add_cc(r.v[0], FR_MOD2[0] & borrow);
#pragma unroll
    for (int i = 1; i < N; i++) r.v[i] = addc_cc(r.v[i], FR_MOD2[i] & borrow);
    return r;
}

// a in [0, r) for a < 2r (the same value mod r).
DEVI Fr fr_reduce_lazy(Fr a) {
    mont_reduce_once<FrCfg>(a.v);
    return a;
}

// Fp2 = Fp[u] / (u^2 + 1), blst_fp2 layout {c0, c1}.
struct Fp2 {
    Fp c0, c1;
    static DEVI Fp2 zero() { return Fp2{Fp::zero(), Fp::zero()}; }
    static DEVI Fp2 one() { return Fp2{Fp::one(), Fp::zero()}; }
    DEVI bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    DEVI bool eq(const Fp2& o) const { return c0.eq(o.c0) && c1.eq(o.c1); }
};

DEVI Fp2 operator+(const Fp2& a, const Fp2& b) { return Fp2{a.c0 + b.c0, a.c1 + b.c1}; }
DEVI Fp2 operator-(const Fp2& a, const Fp2& b) { return Fp2{a.c0 - b.c0, a.c1 - b.c1}; }
DEVI Fp2 neg(const Fp2& a) { return Fp2{neg(a.c0), neg(a.c1)}; }
DEVI Fp2 dbl(const Fp2& a) { return Fp2{dbl(a.c0), dbl(a.c1)}; }
DEVI Fp2 operator*(const Fp2& a, const Fp2& b) {
    Fp t0 = a.c0 * b.c0;
    Fp t1 = a.c1 * b.c1;
    Fp t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
    return Fp2{t0 - t1, t2 - t0 - t1};
}
// Two Fp2 products, one after the other. (Pairing two of the three Fp products of each, as
// mul2 does, made the G2 accumulation spill more: 317 -> 386 ms at 2^24.)
DEVI void mul2(Fp2& r1, Fp2& r2, const Fp2& a1, const Fp2& b1, const Fp2& a2, const Fp2& b2) {
    r1 = a1 * b1;
    r2 = a2 * b2;
}
DEVI Fp2 sqr(const Fp2& a) {
    Fp s = a.c0 + a.c1;
    Fp d = a.c0 - a.c1;
    Fp p = a.c0 * a.c1;
    return Fp2{s * d, p + p};
}

#if defined(__CUDA_ARCH__) || defined(__CUDACC_RTC__)
// Device only: a value whose size is a multiple of 16 bytes (Fr, a point, an XYZZ sum) read
// from or written to global memory as 16-byte accesses, one instruction for four words, where
// a plain copy of these 4-byte aligned structs takes one for each. Every device buffer starts
// 256-byte aligned and the element sizes (32, 96, 192, 192, 384 bytes) are multiples of 16,
// so any element, also of a sub-slice, is 16-byte aligned. `ld_vec_ro` reads through the
// read-only cache (the array must not change during the kernel).
template <class T>
union Vec16 {
    T t;
    uint4 q[sizeof(T) / 16];
};
template <bool READ_ONLY, class T>
DEVI T ld_vec16(const T* p) {
    static_assert(sizeof(T) % 16 == 0, "16-byte accesses need a size a multiple of 16");
    Vec16<T> u;
    const uint4* s = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 16); i++) u.q[i] = READ_ONLY ? __ldg(s + i) : s[i];
    return u.t;
}
template <class T>
DEVI T ld_vec(const T* p) {
    return ld_vec16<false>(p);
}
template <class T>
DEVI T ld_vec_ro(const T* p) {
    return ld_vec16<true>(p);
}
template <class T>
DEVI void st_vec(T* p, const T& x) {
    static_assert(sizeof(T) % 16 == 0, "16-byte accesses need a size a multiple of 16");
    Vec16<T> u;
    u.t = x;
    uint4* d = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 16); i++) d[i] = u.q[i];
}
#endif
