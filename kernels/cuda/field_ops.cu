// Element-wise field operations for differential tests against blstrs.
// For inputs a_i, b_i: out[6i .. 6i+6) = a+b, a-b, a*b, a^2, -a, 2a.
// Requires field.cuh.

template <class F>
DEVI void field_test_ops(const F* a, const F* b, F* out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x = a[i];
    F y = b[i];
    out[6 * i + 0] = x + y;
    out[6 * i + 1] = x - y;
    out[6 * i + 2] = x * y;
    out[6 * i + 3] = sqr(x);
    out[6 * i + 4] = neg(x);
    out[6 * i + 5] = dbl(x);
}

extern "C" __global__ void fr_test_ops(const Fr* a, const Fr* b, Fr* out, u32 n) { field_test_ops(a, b, out, n); }
extern "C" __global__ void fp_test_ops(const Fp* a, const Fp* b, Fp* out, u32 n) { field_test_ops(a, b, out, n); }
extern "C" __global__ void fp2_test_ops(const Fp2* a, const Fp2* b, Fp2* out, u32 n) { field_test_ops(a, b, out, n); }

// out[2i] = canonical(a_i), out[2i+1] = to_mont(canonical(a_i)) (round trip).
extern "C" __global__ void fr_test_mont(const Fr* a, Fr* out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr c = from_mont(a[i]);
    out[2 * i] = c;
    out[2 * i + 1] = to_mont(c);
}

// Sums of two products with one reduction (mul_sum), for differential tests:
// out[2i] = a_i b_i + b_i a_i, out[2i + 1] = a_i^2 - b_i^2 (as mul_sum(a, a, b, -b)).
extern "C" __global__ void fp_test_mul_sum(const Fp* a, const Fp* b, Fp* out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fp x = a[i], y = b[i];
    out[2 * i] = mul_sum(x, y, y, x);
    out[2 * i + 1] = mul_sum(x, x, y, neg(y));
}
