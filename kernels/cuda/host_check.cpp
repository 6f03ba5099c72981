// Runs the field arithmetic of field.cuh on the host (carry primitives emulated), for
// kernels/tests/kernels_suite/field_algorithms_on_host.rs. Input lines: "<fp|fr> <a> <b>", each operand
// the raw Montgomery limbs as one big-endian hex number; output: a+b, a-b, a*b, a^2 the same way,
// and the word "mul2-mismatch" when the interleaved pair (mul2, compiled as in the modules that
// define PAIRED_PRODUCTS) differs from the lone products, and "sqr-mismatch" when the dedicated square
// (sqr_dedicated) differs from a*a, and "sum-mismatch" / "sum4-mismatch" when the sum of two
// / four products with one reduction (mul_sum, mul_sum4, Fp) differs from the products, and
// "pair-mismatch" when a lane-pair Fp2 product, square or sum of two products (fp2_pair.cuh)
// differs from the Fp2 one, and "lazy-mismatch" when the lazy Fr
// operations (fr_mul_lazy, fr_add_lazy, fr_sub_lazy on values in [0, 2r)) go wrong.
#include <cstdint>
#include <cstdio>
#include <cstring>
#define __device__
#define __constant__ static
#define __forceinline__ inline
#define __noinline__
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
#define PAIRED_PRODUCTS
#include "field.cuh"
#include "fp2_pair.cuh"

template <class C>
static bool parse(const char* hex, Mont<C>& x) {
    if (strlen(hex) != 8 * C::N) return false;
    for (int i = 0; i < C::N; i++) {
        unsigned v;
        if (sscanf(hex + 8 * (C::N - 1 - i), "%8x", &v) != 1) return false;
        x.v[i] = v;
    }
    return true;
}
template <class C>
static void print(const Mont<C>& x) {
    printf(" ");
    for (int i = C::N - 1; i >= 0; i--) printf("%08x", x.v[i]);
}
// "sum-mismatch" when mul_sum (Fp only: it needs 4m < R) differs from the two products.
static void check_sum(const Fp& x, const Fp& y) {
    Fp ny = neg(y);
    if (!mul_sum(x, y, y, x).eq(x * y + y * x) || !mul_sum(x, x, y, ny).eq(x * x - y * y) ||
        !mul_sum(x, y, x, neg(y)).is_zero() || !mul_sum(ny, ny, ny, ny).eq(y * y + y * y))
        printf(" sum-mismatch");
    // mul_sum4, with the largest operands where x or y is p - 1 or 1 (an edge line)
    Fp nx = neg(x);
    if (!mul_sum4(x, y, y, x, nx, ny, ny, nx).eq(x * y + y * x + nx * ny + ny * nx) ||
        !mul_sum4(x, x, x, x, y, y, y, y).eq(sqr(x) + sqr(x) + sqr(y) + sqr(y)) ||
        !mul_sum4(nx, nx, nx, nx, ny, ny, ny, ny).eq(sqr(nx) + sqr(nx) + sqr(ny) + sqr(ny)) ||
        !mul_sum4(x, y, x, ny, y, x, y, nx).is_zero() ||
        !mul_sum4(x, x, y, ny, x, y, nx, y).eq(x * x - y * y + x * y - x * y))
        printf(" sum4-mismatch");
}
static void check_sum(const Fr&, const Fr&) {}
// "pair-mismatch" when the two lanes of a lane-pair Fp2 product or square (fp2_pair.cuh) differ
// from the Fp2 product (Karatsuba, field.cuh), on Fp2 values made of x and y.
static bool pair_agrees(const Fp2& a, const Fp2& b) {
    Fp2 p = a * b, q = sqr(a);
    return pair_mul_lane(a.c0, b.c0, a.c1, b.c1, false).eq(p.c0) &&
           pair_mul_lane(a.c1, b.c1, a.c0, b.c0, true).eq(p.c1) &&
           pair_sqr_lane(a.c0, a.c1, false).eq(q.c0) && pair_sqr_lane(a.c1, a.c0, true).eq(q.c1);
}
// ... and when the lanes of a b + c d with one reduction (pair_mul_sum_lane) differ from the
// Fp2 products' sum.
static bool pair_sum_agrees(const Fp2& a, const Fp2& b, const Fp2& c, const Fp2& d) {
    Fp2 s = a * b + c * d;
    return pair_mul_sum_lane(a.c0, b.c0, a.c1, b.c1, c.c0, d.c0, c.c1, d.c1, false).eq(s.c0) &&
           pair_mul_sum_lane(a.c1, b.c1, a.c0, b.c0, c.c1, d.c1, c.c0, d.c0, true).eq(s.c1);
}
static void check_pair(const Fp& x, const Fp& y) {
    Fp z = Fp::zero();
    Fp2 u{x, y}, v{y, x}, w{x, neg(y)}, t{neg(x), y}, k{x, z}, l{z, y};
    if (!pair_agrees(u, v) || !pair_agrees(w, t) || !pair_agrees(k, l) || !pair_agrees(Fp2{y, y}, Fp2{x, x}) ||
        !pair_sum_agrees(u, v, w, t) || !pair_sum_agrees(t, t, w, w) || !pair_sum_agrees(k, l, u, neg(v)) ||
        !pair_sum_agrees(u, v, u, neg(v)))
        printf(" pair-mismatch");
}
static void check_pair(const Fr&, const Fr&) {}
// "lazy-mismatch" when the lazy Fr operations (field.cuh) on x or x + r and y or y + r (the
// values in [0, 2r) the NTT keeps) leave [0, 2r) or differ from the full operations mod r.
static Fr plus_r(const Fr& v) {
    Fr s;
    s.v[0] = add_cc(v.v[0], FR_MOD[0]);
    for (int i = 1; i < 8; i++) s.v[i] = addc_cc(v.v[i], FR_MOD[i]);
    return s;
}
static bool below_2r(const Fr& v) {
    sub_cc(v.v[0], FR_MOD2[0]);
    for (int i = 1; i < 8; i++) subc_cc(v.v[i], FR_MOD2[i]);
    return subc(0, 0) != 0;
}
static bool lazy_ok(const Fr& v, const Fr& want) { return below_2r(v) && fr_reduce_lazy(v).eq(want); }
static void check_lazy(const Fr& x, const Fr& y) {
    const Fr xs[2] = {x, plus_r(x)}, ys[2] = {y, plus_r(y)};
    bool ok = true;
    for (const Fr& xi : xs) {
        ok = ok && fr_reduce_lazy(xi).eq(x);
        for (const Fr& yi : ys) {
            ok = ok && lazy_ok(fr_mul_lazy(y, xi), x * y) && lazy_ok(fr_mul_lazy(x, yi), x * y);
            ok = ok && (y * xi).eq(x * y) && (x * yi).eq(x * y);
            ok = ok && lazy_ok(fr_add_lazy(xi, yi), x + y) && lazy_ok(fr_sub_lazy(xi, yi), x - y);
        }
    }
    if (!ok) printf(" lazy-mismatch");
}
static void check_lazy(const Fp&, const Fp&) {}
template <class C>
static void run(const char* a, const char* b) {
    Mont<C> x, y;
    if (!parse(a, x) || !parse(b, y)) {
        printf("parse error\n");
        return;
    }
    print(x + y);
    print(x - y);
    print(x * y);
    print(sqr(x));
    Mont<C> p, s;
    mul2(p, s, x, y, x, x);
    if (!p.eq(x * y) || !s.eq(sqr(x))) printf(" mul2-mismatch");
    if (!sqr_dedicated(x).eq(x * x) || !sqr_dedicated(y).eq(y * y)) printf(" sqr-mismatch");
    check_sum(x, y);
    check_pair(x, y);
    check_lazy(x, y);
    printf("\n");
}
int main() {
    char kind[8], a[200], b[200];
    while (scanf("%7s %199s %199s", kind, a, b) == 3) {
        if (!strcmp(kind, "fp")) run<FpCfg>(a, b);
        else run<FrCfg>(a, b);
    }
    return 0;
}
