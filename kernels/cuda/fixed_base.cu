// Products s_i P of one fixed point P by many scalars, by P's window tables (parameter
// generation: every point of a Groth16 query is a fixed generator times a scalar).
// Part of the MSM modules (MSM_G1 / MSM_G2, without MSM_ACCUMULATE_ONLY): uses PF, PAffine,
// PXyzz and MSM_NAME from msm.cu, the point formulas from curve.cuh.
//
// The table is built on the host (cuzk-engine's `FixedBase`): for window k < nw and digit d
// in 1..=half (half = 2^(c-1)), table[k * half + d - 1] = d 2^(c k) P, affine. A scalar is
// recoded into nw signed c-bit digits, lowest first: the raw window value plus the carry; a
// value above half becomes value - 2^c with a carry of one into the next window. Since
// s < r < 2^255 and nw c >= 256, the top window's carry never leaves it. The product is the
// sum of at most nw table points (negated for negative digits): no doubling.

// Window k's raw c-bit value (c <= 16) of a canonical scalar.
DEVI u32 fixed_base_window(const Fr& s, u32 k, u32 c) {
    const u32 bit = k * c;
    const u32 w = bit / 32, sh = bit % 32;
    u32 raw = s.v[w] >> sh;
    if (sh + c > 32 && w + 1 < 8) raw |= s.v[w + 1] << (32 - sh);
    return raw & ((1u << c) - 1);
}

// out[i] = scalars[i] P in blst's Jacobian form (infinity: Z = 0); scalars in Montgomery form
// (blstrs' Scalar). One thread a product.
extern "C" __global__ void MSM_NAME(fixed_base_mul)(const PAffine* __restrict__ table, u32 c, u32 nw,
                                                    const Fr* __restrict__ scalars, u32 n,
                                                    Jacobian<PF>* __restrict__ out) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Fr s = from_mont(scalars[i]);
    const u32 half = 1u << (c - 1);
    PXyzz acc = PXyzz::inf();
    u32 carry = 0;
    for (u32 k = 0; k < nw; k++) {
        u32 d = fixed_base_window(s, k, c) + carry;
        carry = 0;
        bool negative = false;
        if (d > half) {
            d = (1u << c) - d;  // the digit is -(2^c - value)
            negative = true;
            carry = 1;
        }
        if (d == 0) continue;
        PAffine p = table[(size_t)k * half + d - 1];
        if (negative) p = neg(p);
        xyzz_add_affine(acc, p);
    }
    out[i] = xyzz_to_jacobian(acc);
}
