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

// Throughput probes: each thread runs two independent chains of `iters` products.
template <class F>
DEVI void mul_rate(F* data, u32 n, u32 iters) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x = data[i], y = data[(i + 1) % n], z = data[(i + 2) % n];
    for (u32 k = 0; k < iters; k++) {
        x = x * y;
        z = z * y;
    }
    data[i] = x + z;
}
extern "C" __global__ void fr_mul_rate(Fr* data, u32 n, u32 iters) { mul_rate(data, n, iters); }
extern "C" __global__ void fp_mul_rate(Fp* data, u32 n, u32 iters) { mul_rate(data, n, iters); }
// Squares in the same chains: by the product (a * a) and by the dedicated square.
template <class F, class S>
DEVI void sqr_rate(F* data, u32 n, u32 iters, S sq) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F x = data[i], z = data[(i + 2) % n];
    for (u32 k = 0; k < iters; k++) {
        x = sq(x);
        z = sq(z);
    }
    data[i] = x + z;
}
extern "C" __global__ void fp_sqr_by_mul_rate(Fp* data, u32 n, u32 iters) {
    sqr_rate(data, n, iters, [](const Fp& a) { return a * a; });
}
extern "C" __global__ void fp_sqr_dedicated_rate(Fp* data, u32 n, u32 iters) {
    sqr_rate(data, n, iters, [](const Fp& a) { return sqr_dedicated(a); });
}

// Pipe probe: does the FP64 pipe multiply beside the integer one? Each thread runs, `iters`
// steps each, 8 dependent chains of 64-bit integer multiply-adds (IMAD.WIDE.U32, the field
// product's instruction) in mode 1, 8 chains of double fused multiply-adds (DFMA) in mode 2,
// and both in one loop in mode 3; the host times each. A chain's multiplier comes from its
// own value, so nothing is hoisted out of the loop.
extern "C" __global__ void pipe_rate(u32 mode, u32 iters, const u32* __restrict__ seed, u64* __restrict__ out) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u64 acc[8];
    double d[8];
#pragma unroll
    for (int j = 0; j < 8; j++) {
        acc[j] = seed[(t + j) & 1023] | 1u;
        d[j] = (double)seed[(t + 3 * j) & 1023] * 1e-10;
    }
    const double dx = 1.0 + (double)seed[t & 1023] * 1e-16, dy = (double)seed[(t + 1) & 1023] * 1e-12;
    if (mode == 1) {
        for (u32 k = 0; k < iters; k++) {
#pragma unroll
            for (int j = 0; j < 8; j++) acc[j] = (u64)(u32)(acc[j] >> 32) * (u32)acc[j] + acc[j];
        }
    } else if (mode == 2) {
        for (u32 k = 0; k < iters; k++) {
#pragma unroll
            for (int j = 0; j < 8; j++) d[j] = fma(d[j], dx, dy);
        }
    } else {
        for (u32 k = 0; k < iters; k++) {
#pragma unroll
            for (int j = 0; j < 8; j++) {
                acc[j] = (u64)(u32)(acc[j] >> 32) * (u32)acc[j] + acc[j];
                d[j] = fma(d[j], dx, dy);
            }
        }
    }
    u64 r = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) r ^= acc[j] ^ (u64)__double_as_longlong(d[j]);
    out[t] = r;
}

// The products of field_f64.cuh (on the FP64 pipe), for differential tests: out[i] = a_i b_i
// (Fr: b_i prepared as a constant operand first, fr_tw).
extern "C" __global__ void fr_test_mul_f64(const Fr* a, const Fr* b, Fr* out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = mul_f64(a[i], fr_tw(b[i]));
}
extern "C" __global__ void fp_test_mul_f64(const Fp* a, const Fp* b, Fp* out, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = mul_f64(a[i], b[i]);
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

// Rate probes of the FP64-pipe products, shaped as mul_rate: Fr by a constant (the NTT's
// twiddle products; prepared once), and Fp in three chains whose operands all change (the
// MSM's shape: each product converts about one operand), beside the integer products in the
// same three chains (fp_mul3_rate).
extern "C" __global__ void fr_mul_f64_rate(Fr* data, u32 n, u32 iters) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr x = data[i], y = data[(i + 1) % n], z = data[(i + 2) % n];
    const FrTw t = fr_tw(y);
    for (u32 k = 0; k < iters; k++) {
        x = mul_f64(x, t);
        z = mul_f64(z, t);
    }
    data[i] = x + z;
}
template <class M>
DEVI void fp_mul3(Fp* data, u32 n, u32 iters, M mul) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fp x = data[i], y = data[(i + 1) % n], z = data[(i + 2) % n];
    for (u32 k = 0; k < iters; k++) {
        Fp x2 = mul(x, y), y2 = mul(y, z), z2 = mul(z, x);
        x = x2;
        y = y2;
        z = z2;
    }
    data[i] = x + y + z;
}
extern "C" __global__ void fp_mul3_rate(Fp* data, u32 n, u32 iters) {
    fp_mul3(data, n, iters, [](const Fp& a, const Fp& b) { return a * b; });
}
extern "C" __global__ void fp_mul3_f64_rate(Fp* data, u32 n, u32 iters) {
    fp_mul3(data, n, iters, [](const Fp& a, const Fp& b) { return mul_f64(a, b); });
}
// Warp-split probe: does one SM run integer products in some warps and FP64-pipe products
// in others at once? Warps whose index within the block is odd use mul_f64, even ones the
// integer product; the same chains as fp_mul3_rate.
extern "C" __global__ void fp_mul3_split_rate(Fp* data, u32 n, u32 iters) {
    if ((threadIdx.x >> 5) & 1)
        fp_mul3(data, n, iters, [](const Fp& a, const Fp& b) { return mul_f64(a, b); });
    else
        fp_mul3(data, n, iters, [](const Fp& a, const Fp& b) { return a * b; });
}
