// Radix-2 Fr NTT over 2^logn points (1 <= logn <= 28), natural order in and out:
// ntt_bitrev permutes the input, then ntt_pass runs DIT stages [s + 1, s + k] in shared
// memory for each group of 2^k elements spaced 2^s apart (k <= 9).
// Twiddles come from two small tables, so no per-size table is needed:
//   root_pow2[m] = w^(2^m) for m in 0..=32, w the 2^32-th root of unity (or its inverse);
//   small_roots[i] = w_512^i for i < 256, w_512 = w^(2^23) (or its inverse).
// At stage t the butterfly of element index idx uses w_{2^t}^(idx mod 2^(t-1)); for a group
// with low bits `low` this is w_{2^t}^low * w_{2^(t-s)}^j'.
// Requires field.cuh.

#define NTT_MAX_K 9
#define FR_TWO_ADICITY 32

DEVI u32 bitrev(u32 x, u32 bits) { return __brev(x) >> (32 - bits); }

extern "C" __global__ void ntt_bitrev(Fr* __restrict__ a, u32 logn) {
    u32 n = 1u << logn;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 j = bitrev(i, logn);
    if (i < j) {
        Fr t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

// Bit reversal by 16 x 16 tiles, for logn >= 8: index = (hi: 4 bits, mid, lo: 4 bits) and
// rev(index) = (rev(lo), rev(mid), rev(hi)). Block `mid` (with mid <= rev(mid)) loads the
// tiles of mid and rev(mid), rows of 16 consecutive elements, and writes each into the
// other's place transposed. grid: 2^(logn - 8) blocks of 256 threads.
#define BR_B 4
#define BR_T (1 << BR_B)
extern "C" __global__ void ntt_bitrev_tiled(Fr* __restrict__ a, u32 logn) {
    __shared__ Fr t0[BR_T * BR_T];
    __shared__ Fr t1[BR_T * BR_T];
    const u32 mbits = logn - 2 * BR_B;
    const u32 mid = blockIdx.x;
    const u32 rmid = mbits ? bitrev(mid, mbits) : 0;
    if (mid > rmid) return;
    const u32 lo = threadIdx.x & (BR_T - 1);
    const u32 hi = threadIdx.x >> BR_B;
    const u32 shift_hi = BR_B + mbits;
    const size_t i0 = ((size_t)hi << shift_hi) | ((size_t)mid << BR_B) | lo;
    const size_t i1 = ((size_t)hi << shift_hi) | ((size_t)rmid << BR_B) | lo;
    t0[hi * BR_T + lo] = a[i0];
    if (mid != rmid) t1[hi * BR_T + lo] = a[i1];
    __syncthreads();
    const u32 src = bitrev(lo, BR_B) * BR_T + bitrev(hi, BR_B);
    a[i1] = t0[src];
    if (mid != rmid) a[i0] = t1[src];
}

// grid: 2^(logn - k) blocks of 2^(k-1) threads.
extern "C" __global__ void ntt_pass(Fr* __restrict__ a, u32 logn, u32 s, u32 k, const Fr* __restrict__ root_pow2,
                                    const Fr* __restrict__ small_roots) {
    __shared__ Fr buf[1 << NTT_MAX_K];
    // twiddles of every stage of this block: stage i at tw[2^i - 1 .. 2^(i+1) - 1)
    __shared__ Fr tw[(1 << NTT_MAX_K) - 1];
    __shared__ Fr wlow[NTT_MAX_K];
    const u32 tid = threadIdx.x;
    const u32 half = 1u << (k - 1);
    const u32 group = blockIdx.x;
    const u32 low = group & ((1u << s) - 1);
    const u32 high = group >> s;
    const size_t base = (size_t)low + ((size_t)high << (s + k));
    const size_t stride = (size_t)1 << s;

    buf[tid] = a[base + tid * stride];
    buf[tid + half] = a[base + (tid + half) * stride];
    // wlow[i] = w_{2^t}^low for stage t = s + i + 1: product of root_pow2[32 - t + b] over set bits b
    if (low != 0 && tid < k) {
        u32 t = s + tid + 1;
        Fr acc = Fr::one();
        for (u32 b = 0; b < s; b++)
            if ((low >> b) & 1) acc = acc * root_pow2[FR_TWO_ADICITY - t + b];
        wlow[tid] = acc;
    }
    __syncthreads();
    const u32 ntw = (1u << k) - 1;
    for (u32 e = tid; e < ntw; e += blockDim.x) {
        u32 i = 31 - __clz(e + 1);
        u32 jp = e + 1 - (1u << i);
        Fr w = small_roots[jp << (NTT_MAX_K - 1 - i)];
        if (low != 0) w = w * wlow[i];
        tw[e] = w;
    }
    __syncthreads();
    for (u32 i = 0; i < k; i++) {
        u32 jp = tid & ((1u << i) - 1);
        u32 j0 = ((tid >> i) << (i + 1)) + jp;
        u32 j1 = j0 + (1u << i);
        Fr u = buf[j0];
        Fr v = buf[j1] * tw[(1u << i) - 1 + jp];
        buf[j0] = u + v;
        buf[j1] = u - v;
        __syncthreads();
    }
    a[base + tid * stride] = buf[tid];
    a[base + (tid + half) * stride] = buf[tid + half];
}

// a[i] *= scale * lo[i & (2^lobits - 1)] * hi[i >> lobits]  (powers g^i from two tables)
extern "C" __global__ void ntt_distribute(Fr* __restrict__ a, u32 n, const Fr* __restrict__ lo,
                                          const Fr* __restrict__ hi, u32 lobits, Fr scale) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Fr p = lo[i & ((1u << lobits) - 1)] * hi[i >> lobits];
    a[i] = a[i] * (p * scale);
}

extern "C" __global__ void fr_scale(Fr* __restrict__ a, u32 n, Fr c) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = a[i] * c;
}

extern "C" __global__ void fr_mul_assign(Fr* __restrict__ a, const Fr* __restrict__ b, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = a[i] * b[i];
}

extern "C" __global__ void fr_sub_assign(Fr* __restrict__ a, const Fr* __restrict__ b, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = a[i] - b[i];
}

extern "C" __global__ void fr_add_assign(Fr* __restrict__ a, const Fr* __restrict__ b, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = a[i] + b[i];
}

// Compaction by a bitmap (Groth16's density masks): for every i < n whose bit is set in
// `words` (bit i % 64 of word i / 64), dst[prefix[i / 64] + rank of bit i in its word] = src[i],
// where prefix[w] counts the set bits of words[0..w). Selected elements keep their order.
extern "C" __global__ void fr_compact(const Fr* __restrict__ src, u32 n, const u64* __restrict__ words,
                                      const u32* __restrict__ prefix, Fr* __restrict__ dst) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u64 w = words[i >> 6];
    u32 b = i & 63;
    if (((w >> b) & 1ull) == 0) return;
    u32 rank = __popcll(w & ((1ull << b) - 1ull));
    dst[prefix[i >> 6] + rank] = src[i];
}
