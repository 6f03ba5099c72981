// Short Weierstrass points with a = 0 (G1 over Fp, G2 over Fp2).
// Affine layout matches blst_p1_affine / blst_p2_affine: {x, y}, and the point at
// infinity is x = y = 0 (blst has no infinity flag in affine form).
// Accumulation uses XYZZ coordinates (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2); ZZ = 0 is
// infinity. Output uses blst's Jacobian layout {X, Y, Z} (x = X/Z^2, y = Y/Z^3).
// Requires field.cuh.
// Every module defines POINT_FN as __forceinline__ (compile.rs, INLINE_POINTS): out of
// line, point functions calling point functions in divergent code were miscompiled by ptxas
// (a value kept in a warp's uniform registers, overwritten by the other lanes' call), and
// kernels_compile fails on any out-of-line function but the field product.

#ifndef POINT_FN
#define POINT_FN __device__ __noinline__
#endif

template <class F>
struct Affine {
    F x, y;
    DEVI bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

template <class F>
struct Jacobian {
    F X, Y, Z;
};

template <class F>
struct Xyzz {
    F X, Y, ZZ, ZZZ;
    static DEVI Xyzz inf() { return Xyzz{F::zero(), F::zero(), F::zero(), F::zero()}; }
    DEVI bool is_inf() const { return ZZ.is_zero(); }
};

// a b - c d: every formula's Y3. A field type with a cheaper form overloads it (Fp2Pair: one
// sum of products with one reduction a lane, fp2_pair.cuh); G1's mixed addition takes
// mul_sum where SUM_PRODUCTS.
template <class F>
DEVI F mul_sub(const F& a, const F& b, const F& c, const F& d) {
    return a * b - c * d;
}

template <class F>
DEVI Affine<F> neg(const Affine<F>& p) {
    return Affine<F>{p.x, neg(p.y)};
}

// dbl-2008-s-1 with a = 0.
template <class F>
POINT_FN void xyzz_dbl(Xyzz<F>& p) {
    F U = dbl(p.Y);
    F V = sqr(U);
    F W = U * V;
    F S = p.X * V;
    F X2 = sqr(p.X);
    F M = X2 + dbl(X2);
    F X3 = sqr(M) - dbl(S);
    F Y3 = mul_sub(M, S - X3, W, p.Y);
    p.ZZ = p.ZZ * V;
    p.ZZZ = p.ZZZ * W;
    p.X = X3;
    p.Y = Y3;
}

// mdbl-2008-s-1: p = 2q for affine q (not infinity).
template <class F>
POINT_FN void xyzz_set_dbl_affine(Xyzz<F>& p, const Affine<F>& q) {
    F U = dbl(q.y);
    F V = sqr(U);
    F W = U * V;
    F S = q.x * V;
    F X2 = sqr(q.x);
    F M = X2 + dbl(X2);
    p.X = sqr(M) - dbl(S);
    p.Y = mul_sub(M, S - p.X, W, q.y);
    p.ZZ = V;
    p.ZZZ = W;
}

// madd-2008-s: p += q for affine q, handling infinity, doubling and p = -q.
template <class F>
POINT_FN void xyzz_add_affine(Xyzz<F>& p, const Affine<F>& q) {
    if (q.is_inf()) return;
    if (p.is_inf()) {
        p.X = q.x;
        p.Y = q.y;
        p.ZZ = F::one();
        p.ZZZ = F::one();
        return;
    }
    F U2, S2;
    mul2(U2, S2, q.x, p.ZZ, q.y, p.ZZZ);  // interleaved where PAIRED_PRODUCTS, else in turn
    F P = U2 - p.X;
    F R = S2 - p.Y;
    if (P.is_zero()) {
        if (R.is_zero())
            xyzz_set_dbl_affine(p, q);
        else
            p = Xyzz<F>::inf();
        return;
    }
#ifdef PAIRED_PRODUCTS
    // the same formulas, the products in independent pairs (mul2, field.cuh); only where
    // mul2 interleaves, since this order made the G2 accumulation spill more (416-byte stack
    // instead of 256)
#ifdef DEDICATED_SQR
    // the two squares by the dedicated square (field.cuh), the rest paired
    F PP = sqr(P), RR = sqr(R);
#else
    F PP, RR;
    mul2(PP, RR, P, P, R, R);
#endif
    F PPP, Q;
    mul2(PPP, Q, P, PP, p.X, PP);
    F X3 = RR - PPP - dbl(Q);
#ifdef SUM_PRODUCTS
    // Y3 = R (Q - X3) - Y PPP as one sum of products with one reduction (mul_sum, field.cuh)
    F ZZ3, ZZZ3;
    mul2(ZZ3, ZZZ3, p.ZZ, PP, p.ZZZ, PPP);
    p.Y = mul_sum(R, Q - X3, p.Y, neg(PPP));
#else
    F T, ZZ3;
    mul2(T, ZZ3, R, Q - X3, p.ZZ, PP);
    F W, ZZZ3;
    mul2(W, ZZZ3, p.Y, PPP, p.ZZZ, PPP);
    p.Y = T - W;
#endif
    p.X = X3;
    p.ZZ = ZZ3;
    p.ZZZ = ZZZ3;
#else
    F PP = sqr(P);
    F PPP = P * PP;
    F Q = p.X * PP;
    F X3 = sqr(R) - PPP - dbl(Q);
    p.Y = mul_sub(R, Q - X3, p.Y, PPP);
    p.X = X3;
    p.ZZ = p.ZZ * PP;
    p.ZZZ = p.ZZZ * PPP;
#endif
}

// add-2008-s: p += q, handling infinity, doubling and p = -q.
template <class F>
POINT_FN void xyzz_add(Xyzz<F>& p, const Xyzz<F>& q) {
    if (q.is_inf()) return;
    if (p.is_inf()) {
        p = q;
        return;
    }
    F U1 = p.X * q.ZZ;
    F U2 = q.X * p.ZZ;
    F S1 = p.Y * q.ZZZ;
    F S2 = q.Y * p.ZZZ;
    F P = U2 - U1;
    F R = S2 - S1;
    if (P.is_zero()) {
        if (R.is_zero())
            xyzz_dbl(p);
        else
            p = Xyzz<F>::inf();
        return;
    }
    F PP = sqr(P);
    F PPP = P * PP;
    F Q = U1 * PP;
    F X3 = sqr(R) - PPP - dbl(Q);
    p.Y = mul_sub(R, Q - X3, S1, PPP);
    p.X = X3;
    p.ZZ = p.ZZ * q.ZZ * PP;
    p.ZZZ = p.ZZZ * q.ZZZ * PPP;
}

// p = k * p for a small non-negative k (double-and-add from k's highest set bit).
template <class F>
DEVI void xyzz_mul_small(Xyzz<F>& p, u32 k) {
    Xyzz<F> acc = Xyzz<F>::inf();
    for (int bit = k ? 31 - __clz(k) : -1; bit >= 0; bit--) {
        xyzz_dbl(acc);
        if ((k >> bit) & 1) xyzz_add(acc, p);
    }
    p = acc;
}

// Jacobian with Z = ZZZ: X' = X * ZZ^2, Y' = Y * ZZZ^2; infinity gives Z = 0 as in blst.
template <class F>
DEVI Jacobian<F> xyzz_to_jacobian(const Xyzz<F>& p) {
    if (p.is_inf()) return Jacobian<F>{F::zero(), F::zero(), F::zero()};
    return Jacobian<F>{p.X * sqr(p.ZZ), p.Y * sqr(p.ZZZ), p.ZZZ};
}
