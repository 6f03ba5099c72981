// BLS12-381 prime fields in Montgomery form, bit-compatible with blst:
// Fp (381-bit, R = 2^384) and Fr (255-bit, R = 2^256), stored as little-endian 32-bit
// limbs, which is the same memory as blst's little-endian 64-bit limbs.
// NVRTC has no standard headers: fixed-width types are declared here.
// Carry chains use inline PTX; every chain is `asm volatile` so that the compiler keeps
// the statements of one chain in order (the carry flag is not visible to it).

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

struct FpCfg {
    enum { N = 12 };
    static DEVI u32 m(int i) { return FP_MOD[i]; }
    static DEVI u32 one(int i) { return FP_ONE[i]; }
    static DEVI u32 r2(int i) { return FP_R2[i]; }
    static DEVI u32 inv() { return 0xfffcfffdu; }  // -p^-1 mod 2^32
};
struct FrCfg {
    enum { N = 8 };
    static DEVI u32 m(int i) { return FR_MOD[i]; }
    static DEVI u32 one(int i) { return FR_ONE[i]; }
    static DEVI u32 r2(int i) { return FR_R2[i]; }
    static DEVI u32 inv() { return 0xffffffffu; }  // -r^-1 mod 2^32
};

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
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(s[0]) : "r"(a[0]), "r"(C::m(0)));
#pragma unroll
    for (int i = 1; i < N; i++)
        asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(s[i]) : "r"(a[i]), "r"(C::m(i)));
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
#pragma unroll
    for (int i = 0; i < N; i++) a[i] = borrow ? a[i] : s[i];
}

template <class C>
DEVI Mont<C> operator+(const Mont<C>& a, const Mont<C>& b) {
    const int N = C::N;
    Mont<C> r;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
    for (int i = 1; i < N; i++)
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
    // both moduli are below 2^(32N-1), so a + b never carries out of the top limb
    mont_reduce_once<C>(r.v);
    return r;
}

template <class C>
DEVI Mont<C> operator-(const Mont<C>& a, const Mont<C>& b) {
    const int N = C::N;
    Mont<C> r;
    u32 borrow;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
    for (int i = 1; i < N; i++)
        asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
    // add the modulus back when the subtraction borrowed (mask is 0 or all ones)
    asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(r.v[0]) : "r"(C::m(0) & borrow));
#pragma unroll
    for (int i = 1; i < N; i++)
        asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(r.v[i]) : "r"(C::m(i) & borrow));
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

// Montgomery product a * b * 2^(-32N) mod m, CIOS with N + 2 accumulator words.
template <class C>
MUL_FN Mont<C> operator*(const Mont<C>& a, const Mont<C>& b) {
    const int N = C::N;
    u32 t[N + 2];
#pragma unroll
    for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const u32 bi = b.v[i];
        // t += a * b[i]: low halves into t[0..N), high halves into t[1..N]
        asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(a.v[0]), "r"(bi));
#pragma unroll
        for (int j = 1; j < N; j++)
            asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(a.v[j]), "r"(bi));
        asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[N]));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
        asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(a.v[0]), "r"(bi));
#pragma unroll
        for (int j = 1; j < N; j++)
            asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(a.v[j]), "r"(bi));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
        // t += m * modulus with m chosen so that t[0] becomes 0
        const u32 m = t[0] * C::inv();
        asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(C::m(0)), "r"(m));
#pragma unroll
        for (int j = 1; j < N; j++)
            asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(C::m(j)), "r"(m));
        asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[N]));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
        asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(C::m(0)), "r"(m));
#pragma unroll
        for (int j = 1; j < N; j++)
            asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(C::m(j)), "r"(m));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N + 1]));
        // divide by 2^32
#pragma unroll
        for (int j = 0; j <= N; j++) t[j] = t[j + 1];
        t[N + 1] = 0;
    }
    // t < 2m here; t[N] is 0
    Mont<C> r;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = t[i];
    mont_reduce_once<C>(r.v);
    return r;
}

template <class C>
DEVI Mont<C> sqr(const Mont<C>& a) {
    return a * a;
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
DEVI Fp2 sqr(const Fp2& a) {
    Fp s = a.c0 + a.c1;
    Fp d = a.c0 - a.c1;
    Fp p = a.c0 * a.c1;
    return Fp2{s * d, p + p};
}
