// Radix-2 Fr NTT over 2^logn points (1 <= logn <= 28), natural order in and out, in
// passes of ntt_pass: a pass runs DIT stages [s + 1, s + k] (k <= NTT_MAX_K) in shared
// memory for groups ("columns") of 2^k elements spaced 2^s apart, 2^c columns per block.
// - ntt_bitrev_tiled (or ntt_bitrev below 2^8) permutes the input first, unless the input
//   is already in bit-reversed order (the output of the DIF passes below) or the first pass
//   does it (NTT_REV, below).
// - ntt_pass_dif runs the transposed network: the same passes in reverse order, stages in
//   reverse within each, Gentleman-Sande butterflies (x, y) -> (x + y, (x - y) t) with the
//   same twiddles: natural order in, bit-reversed order out, no permutation.
// - The first pass (s = 0) takes 2^c consecutive columns (contiguous). A plain DIT network
//   runs it as ntt_pass_s0 (below), which also skips stage 3's products by one a warp.
// - A later pass (s > 0) takes 2^c adjacent columns (low .. low + 2^c - 1), so each read
//   and write of a warp covers runs of 2^c consecutive elements (32 * 2^c bytes).
// - Each thread runs two stages at a time on 4 elements in registers (radix-4 step).
// Twiddles: at stage t the butterfly of element index idx uses w_{2^t}^(idx mod 2^(t-1));
// for a column with low bits `low` this is w_{2^t}^low * w_{2^(t-s)}^j'. Tables:
//   small[i] = w_512^i for i < 256 (w_512 the 512th root of unity, or its inverse);
//   stage[2^(t-1) + x] = w_{2^t}^x for t <= NTT_STAGE_BITS and x < 2^(t-1): every twiddle of
//   the first 18 stages, read as it is by a pass with s + k <= NTT_STAGE_BITS (8 MiB, mostly
//   in L2; the middle pass of a 2^27 transform: 15.8 -> 12.7 ms on an H200);
//   root_lo[x] = w28^x, root_hi[x] = w28^(x * 2^14) for x < 2^14 (w28 the 2^28-th root),
//   so w_{2^t}^low = w28^(low * 2^(28 - t)) is one product of two entries, and a later
//   stage's twiddle one more product (a pass with s + k > NTT_STAGE_BITS: about one product
//   an element).
//   top[x] = w27^x for x < 2^26 (NTT_TOP_BITS = 27; 2 GiB, built once per device on the
//   device, optional): with it a pass with s + k > NTT_STAGE_BITS (the last pass of a 2^19..
//   2^27 transform) reads every twiddle, w_{2^t}^x = top[x << (27 - t)], instead of computing
//   it (the inverse: w^-x = -top[2^26 - x] for x > 0, since w27^(2^26) = -1). Coset passes
//   use it only with NTT_COSET_LOW (below).
// Source and destination: a pass reads `src` and writes `dst`. A strided pass touches the
// same positions in both, so it may run in place (src == dst) or move the data to another
// buffer. The first pass (s == 0) may fuse the bit reversal (flag NTT_REV, src != dst): the
// DIT pass then reads its columns from natural-order `src` at bit-reversed positions, and
// the DIF pass (the last of the transposed network) writes them to `dst` in natural order.
// Block b then takes the columns rev(b 2^c + cc), cc < 2^c (rev over logn - k bits), so that
// the bit-reversed side of consecutive blocks lies in runs: element j of that column is
// at (rev_k(j) << (logn - k)) | (b 2^c + cc).
// Coset transforms (ntt_pass_coset, ntt_pass_dif_coset): a DIT network on bit-reversed input
// absorbs input factors gamma^e, and a DIF network on natural input output factors gamma^e,
// into its twiddles: every twiddle of stage t (of logn) times ct[t] = gamma^(2^(logn - t))
// (stage 1's becomes gamma^(n/2), no longer 1). gamma = g for the coset forward transform,
// g^-1 (with the inverse roots) for the inverse one. The host passes a coset stage table (the
// stage table's entries times ct[t]) as `stage`; the first pass reads its twiddles from it
// too, and the last (non-tabled) pass multiplies its per-column factors by ct[t] (without
// NTT_COSET_LOW).
// Coset transforms with the top table (flag NTT_COSET_LOW, transforms of 2^19..2^27): the
// factors of the m stages of the last pass, gamma^(e mod 2^m) for natural index e, are not in
// that pass's twiddles (which it then reads from the top table like a plain pass) but applied
// in the pass with s = 0, where they are one factor f a column (e mod 2^m is the reversal of
// the top m bits of the bit-reversed position): stage 1's butterflies take x0 f and x1 (ct[1]
// f) for the DIT (f times the input), (x0 + x1) f and (x0 - x1) ct[1] f for the DIF (f times
// the output). `low` holds gamma^x for x < 2^NTT_MAX_K. Half a product an element in the first
// pass instead of one in the last. Only with one column a block (c == 0), and not on a DIT
// pass with NTT_REV (a coset DIT reads bit-reversed data as it is).
// Lazy values: inside a pass the elements are kept in [0, 2r) (field.cuh's lazy operations:
// products without their final subtraction), and each pass reduces what it stores, so every
// buffer between passes and kernels holds values in [0, r). Twiddles and factors are in [0, r)
// (the product's first operand). ntt_pass_dif_coset keeps the full operations: lazy, it took
// 86 registers instead of 76 (a block an SM fewer).
// Loads: the first pass and the passes whose stages all lie in the stage table copy their
// columns and twiddles into shared memory by cp.async, every copy of a thread in flight at
// once; a pass beyond the stage table loads its elements and top-table twiddles through
// registers (copied, the last 2^27 pass ran 8% slower).
// Shared memory holds Fr as two arrays of 16-byte halves (lo, hi), so a quarter warp
// reading consecutive elements touches 128 consecutive bytes; the data array is padded by
// one slot per 8 (pad()) against bank conflicts in the early stages.
// Requires field.cuh.

#define NTT_MAX_K 9
#define NTT_ROOT_BITS 14
#define NTT_STAGE_BITS 18
#define NTT_TOP_BITS 27
// flags of a pass
#define NTT_REV 1u
#define NTT_TOP_INV 2u
#define NTT_COSET_LOW 4u
// with NTT_COSET_LOW, bits 8.. of the flags hold m, the stages of the last (non-tabled) pass
#define NTT_LOW_SHIFT 8

DEVI u32 bitrev_bits(u32 x, u32 bits) { return bits ? __brev(x) >> (32 - bits) : 0u; }
DEVI u32 pad(u32 e) { return e + (e >> 3); }

DEVI Fr fr_join(uint4 lo, uint4 hi) {
    Fr r;
    r.v[0] = lo.x; r.v[1] = lo.y; r.v[2] = lo.z; r.v[3] = lo.w;
    r.v[4] = hi.x; r.v[5] = hi.y; r.v[6] = hi.z; r.v[7] = hi.w;
    return r;
}
DEVI uint4 fr_lo(const Fr& x) { return make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]); }
DEVI uint4 fr_hi(const Fr& x) { return make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]); }

// An array of Fr in shared memory, stored as lo halves then hi halves.
struct SplitFr {
    uint4* lo;
    uint4* hi;
    DEVI Fr get(u32 e) const { return fr_join(lo[e], hi[e]); }
    DEVI void set(u32 e, const Fr& x) const {
        lo[e] = fr_lo(x);
        hi[e] = fr_hi(x);
    }
};

// Global to shared memory without registers (cp.async, sm_80 and later), 16 bytes a copy: a
// pass issues every copy of its columns and twiddles at once, so a block waits for one
// round trip to memory instead of one for its data and another for its twiddles. A thread's
// copies are complete after cp_async_wait, and visible to the block after a barrier. `.cg`
// (L2 only) for the data, read once; `.ca` for the twiddle tables, read by many blocks.
template <bool L1>
DEVI void cp_async16(uint4* smem, const void* g) {
    const u32 sa = (u32)__cvta_generic_to_shared(smem);
    if (L1) asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(g) : "memory");
    else asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(g) : "memory");
}
DEVI void cp_async_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// a.set(e, *p) by two asynchronous copies
template <bool L1>
DEVI void set_async(const SplitFr& a, u32 e, const Fr* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    cp_async16<L1>(a.lo + e, q);
    cp_async16<L1>(a.hi + e, q + 1);
}

// Bytes of dynamic shared memory ntt_pass needs (the host computes the same):
// data pad(2^(k+c)) + twiddle tables (1 if s == 0 else 2^c) * 2^k + w_low 2^c * NTT_MAX_K.

// Field operations of a pass: lazy (field.cuh: values in [0, 2r), a pass reduces what it
// stores) when LAZY, else the full ones. Twiddles and factors t are in [0, r) either way.
template <bool LAZY>
DEVI Fr tw_mul(const Fr& t, const Fr& x) { return LAZY ? fr_mul_lazy(t, x) : x * t; }
template <bool LAZY>
DEVI Fr el_add(const Fr& x, const Fr& y) { return LAZY ? fr_add_lazy(x, y) : x + y; }
template <bool LAZY>
DEVI Fr el_sub(const Fr& x, const Fr& y) { return LAZY ? fr_sub_lazy(x, y) : x - y; }
template <bool LAZY>
DEVI Fr el_out(const Fr& x) { return LAZY ? fr_reduce_lazy(x) : x; }

// v = y * t; (x, y) = (x + v, x - v)
template <bool LAZY>
DEVI void butterfly(Fr& x, Fr& y, const Fr& t) {
    Fr v = tw_mul<LAZY>(t, y);
    y = el_sub<LAZY>(x, v);
    x = el_add<LAZY>(x, v);
}
template <bool LAZY>
DEVI void butterfly1(Fr& x, Fr& y) {
    Fr v = y;
    y = el_sub<LAZY>(x, v);
    x = el_add<LAZY>(x, v);
}
// The transposed butterflies: (x, y) = (x + y, (x - y) * t), and with t = 1.
template <bool LAZY>
DEVI void butterfly_dif(Fr& x, Fr& y, const Fr& t) {
    Fr d = el_sub<LAZY>(x, y);
    x = el_add<LAZY>(x, y);
    y = tw_mul<LAZY>(t, d);
}
template <bool LAZY>
DEVI void butterfly1_dif(Fr& x, Fr& y) {
    Fr d = el_sub<LAZY>(x, y);
    x = el_add<LAZY>(x, y);
    y = d;
}


extern "C" __global__ void ntt_bitrev(Fr* __restrict__ a, u32 logn) {
    u32 n = 1u << logn;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 j = bitrev_bits(i, logn);
    if (i < j) {
        Fr t = ld_vec(a + i);
        st_vec(a + i, ld_vec(a + j));
        st_vec(a + j, t);
    }
}

// Bit reversal by 16 x 16 tiles, for logn >= 8: index = (hi: 4 bits, mid, lo: 4 bits) and
// rev(index) = (rev(lo), rev(mid), rev(hi)). Block `mid` (with mid <= rev(mid)) loads the
// tiles of mid and rev(mid), rows of 16 consecutive elements, and writes each into the
// other's place transposed. grid: 2^(logn - 8) blocks of 256 threads.
#define BR_B 4
#define BR_T (1 << BR_B)
extern "C" __global__ void ntt_bitrev_tiled(Fr* __restrict__ a, u32 logn) {
    __shared__ uint4 sm[4 * BR_T * BR_T];
    const SplitFr t0{sm, sm + BR_T * BR_T};
    const SplitFr t1{sm + 2 * BR_T * BR_T, sm + 3 * BR_T * BR_T};
    const u32 mbits = logn - 2 * BR_B;
    const u32 mid = blockIdx.x;
    const u32 rmid = mbits ? bitrev_bits(mid, mbits) : 0;
    if (mid > rmid) return;
    const u32 lo = threadIdx.x & (BR_T - 1);
    const u32 hi = threadIdx.x >> BR_B;
    const u32 shift_hi = BR_B + mbits;
    const size_t i0 = ((size_t)hi << shift_hi) | ((size_t)mid << BR_B) | lo;
    const size_t i1 = ((size_t)hi << shift_hi) | ((size_t)rmid << BR_B) | lo;
    t0.set(hi * BR_T + lo, ld_vec(a + i0));
    if (mid != rmid) t1.set(hi * BR_T + lo, ld_vec(a + i1));
    __syncthreads();
    const u32 src = bitrev_bits(lo, BR_B) * BR_T + bitrev_bits(hi, BR_B);
    st_vec(a + i1, t0.get(src));
    if (mid != rmid) st_vec(a + i0, t1.get(src));
}

// One radix-2 stage i (span 2^i) of a pass, DIT or DIF, then a barrier. Stage 1 of a plain
// transform (s == 0, i == 0) has twiddle 1.
template <bool DIF, bool COSET, bool LAZY>
DEVI void ntt_radix2(const SplitFr& buf, const SplitFr& tw, u32 s, u32 k, u32 i, u32 tid, u32 nthr, u32 nb) {
    const u32 h = 1u << i;
    for (u32 b = tid; b < (nb >> 1); b += nthr) {
        const u32 col = b >> (k - 1);
        const u32 bi = b & ((1u << (k - 1)) - 1);
        const u32 jp = bi & (h - 1);
        const u32 j0 = (col << k) + ((bi >> i) << (i + 1)) + jp;
        const u32 tb = s == 0 ? 0u : col << k;
        Fr x0 = buf.get(pad(j0));
        Fr x1 = buf.get(pad(j0 + h));
        if (!COSET && s == 0 && i == 0) {
            if (DIF) butterfly1_dif<LAZY>(x0, x1);
            else butterfly1<LAZY>(x0, x1);
        } else {
            if (DIF) butterfly_dif<LAZY>(x0, x1, tw.get(tb + h + jp));
            else butterfly<LAZY>(x0, x1, tw.get(tb + h + jp));
        }
        buf.set(pad(j0), x0);
        buf.set(pad(j0 + h), x1);
    }
    __syncthreads();
}

// f times the even elements of a block's one column, then a barrier. Each thread takes the
// same number (nb / (2 nthr)), so no lane waits on another: multiplied on load or store
// (element l by thread l mod nthr), the even threads took every product and the odd ones
// waited, and the coset forward's first 2^27 pass took 15.4 ms against the plain one's 10.9.
template <bool LAZY>
DEVI void scale_even(const SplitFr& buf, const Fr& f, u32 nb, u32 tid, u32 nthr) {
    for (u32 e = 2 * tid; e < nb; e += 2 * nthr) buf.set(pad(e), tw_mul<LAZY>(f, buf.get(pad(e))));
    __syncthreads();
}

// DIF: the transposed pass (ntt_pass_dif), stages in reverse order.
// COSET: a coset transform; ct[t] (1 <= t <= logn) multiplies every twiddle of stage t, and
// `stage` is the matching coset stage table (see the top). Plain transforms do not read ct.
// flags: NTT_REV (s == 0 only) fuses the bit reversal; NTT_TOP_INV: `top` holds the forward
// powers and this pass wants the inverse twiddles. top: the top table, or null.
template <bool DIF, bool COSET, bool LAZY, bool S0 = false>
DEVI void ntt_pass_body(Fr* dst, const Fr* src, u32 logn, u32 s, u32 k, u32 c, u32 flags,
                        const Fr* __restrict__ small, const Fr* __restrict__ root_lo,
                        const Fr* __restrict__ root_hi, const Fr* __restrict__ stage,
                        const Fr* __restrict__ top, const Fr* __restrict__ ct, const Fr* __restrict__ low) {
    extern __shared__ uint4 sm[];
    const u32 cols = 1u << c;
    const u32 nb = 1u << (k + c);
    const u32 np = pad(nb);
    const u32 ntab = s == 0 ? 1u : cols;
    const u32 ntw = ntab << k;
    const SplitFr buf{sm, sm + np};
    const SplitFr tw{sm + 2 * np, sm + 2 * np + ntw};
    const SplitFr wl{sm + 2 * np + 2 * ntw, sm + 2 * np + 2 * ntw + cols * NTT_MAX_K};
    const u32 tid = threadIdx.x;
    const u32 nthr = blockDim.x;
    const u32 kmask = (1u << k) - 1;
    // a strided pass whose stages all lie in the stage table reads its twiddles from it,
    // another reads them from the top table when there is one (a coset pass only with
    // NTT_COSET_LOW)
    const bool tabled = s != 0 && s + k <= NTT_STAGE_BITS;
    const bool coset_low = COSET && (flags & NTT_COSET_LOW);
    const bool topped = (!COSET || coset_low) && s != 0 && !tabled && top != nullptr;
    const bool rev = s == 0 && (flags & NTT_REV);
    // the first pass with the bit reversal: log2 of the column count
    const u32 hb = logn - k;
    // a coset pass with s == 0 and the low factors (see the top; one column a block): the
    // column's factor f, taken by its even elements (scale_even: after the DIT's load, before
    // the DIF's store), while its odd ones take ct[1] f through stage 1's twiddle (table entry
    // 1). f waits in the table's unused entry 0: multiplied inside the radix-4 steps from
    // registers instead, it took both coset kernels to 88 registers.
    const bool lowf = coset_low && s == 0;
    const auto low_factor = [&]() -> Fr {
        const u32 m = flags >> NTT_LOW_SHIFT;
        // the column's index among the bit-reversed order's columns
        const u32 colp = rev ? bitrev_bits(blockIdx.x, hb) : blockIdx.x;
        return ld_vec(low + bitrev_bits(colp >> (hb - m), m));
    };

    // 1. load the block's columns: column col, element j at smem pad((col << k) + j)
    size_t base = 0;
    u32 low0 = 0;
    if (rev && !DIF) {
        // element j of column rev(r) from bit-reversed position (rev(j) << hb) | r; cc
        // fastest, so a warp reads runs of 2^c consecutive elements
#pragma unroll 4
        for (u32 l = tid; l < nb; l += nthr) {
            const u32 cc = l & (cols - 1);
            const u32 j = l >> c;
            const size_t r = ((size_t)blockIdx.x << c) + cc;
            set_async<false>(buf, pad((cc << k) + j), src + (((size_t)bitrev_bits(j, k) << hb) | r));
        }
    } else if (rev) {
        // column rev(r), contiguous in src
#pragma unroll 4
        for (u32 l = tid; l < nb; l += nthr) {
            const u32 cc = l >> k;
            const u32 j = l & kmask;
            const size_t col = bitrev_bits((blockIdx.x << c) + cc, hb);
            set_async<false>(buf, pad(l), src + (col << k) + j);
        }
    } else if (s == 0) {
        // the first pass: 2^c consecutive columns, contiguous
        base = (size_t)blockIdx.x << (k + c);
#pragma unroll 4
        for (u32 l = tid; l < nb; l += nthr) set_async<false>(buf, pad(l), src + base + l);
    } else {
        const u32 lowblocks = 1u << (s - c);
        low0 = (blockIdx.x & (lowblocks - 1)) << c;
        const size_t high = blockIdx.x >> (s - c);
        base = low0 + (high << (s + k));
        // copied where the stage table holds the twiddles; a later pass (stride 2^18 and up at
        // 2^27) loads: copied, its elements took the last 2^27 pass from 13.5 to 14.6 ms
        if (tabled) {
#pragma unroll 4
            for (u32 l = tid; l < nb; l += nthr) {
                const u32 col = l & (cols - 1);
                const u32 j = l >> c;
                set_async<false>(buf, pad((col << k) + j), src + base + col + ((size_t)j << s));
            }
        } else {
#pragma unroll 4
            for (u32 l = tid; l < nb; l += nthr) {
                const u32 col = l & (cols - 1);
                const u32 j = l >> c;
                buf.set(pad((col << k) + j), ld_vec(src + base + col + ((size_t)j << s)));
            }
        }
        // w_low of column col at stage i (t = s + i + 1): w28^(low << (28 - t))
        for (u32 e = tid; !tabled && !topped && e < cols * k; e += nthr) {
            const u32 col = e / k;
            const u32 i = e - col * k;
            const u32 x = (low0 + col) << (28 - (s + i + 1));
            Fr v = root_hi[x >> NTT_ROOT_BITS] * root_lo[x & ((1u << NTT_ROOT_BITS) - 1)];
            if (COSET) v = v * ld_vec(ct + s + i + 1);
            wl.set(col * NTT_MAX_K + i, v);
        }
        __syncthreads();
    }
    // 2. twiddle tables: table tb, entry 2^i + j' = w_{2^(i+1)}^j' (* w_low of stage i);
    // copied from a table where one holds them
    for (u32 e = tid; e < ntw; e += nthr) {
        const u32 r = e & kmask;
        if (lowf && e == 0) tw.set(0, low_factor());
        if (r == 0) continue;
        const u32 i = 31 - __clz(r);
        const u32 jp = r - (1u << i);
        if (tabled) {
            // w_{2^t}^(low + j' 2^s) with t = s + i + 1
            set_async<true>(tw, e, stage + (1u << (s + i)) + low0 + (e >> k) + (jp << s));
        } else if (topped) {
            // the same power of w_{2^t} as a power of w27: x < 2^(t-1) << (27 - t) = 2^26.
            // Loaded, as this pass's elements are: with both copied the last pass of a 2^27
            // transform took 14.6 ms instead of 13.5, and with these alone copied (the
            // inverse negated after the wait) the 2^27 NTT took 38.7 ms instead of 37.1 and
            // the H polynomial 288.8 instead of 278.7 (measured on an H200).
            const u32 x = (low0 + (e >> k) + (jp << s)) << (NTT_TOP_BITS - (s + i + 1));
            Fr w;
            if ((flags & NTT_TOP_INV) && x != 0) w = neg(ld_vec(top + ((1u << (NTT_TOP_BITS - 1)) - x)));
            else w = ld_vec(top + x);
            tw.set(e, w);
        } else if (COSET && s == 0) {
            // the coset table's entry 2^i + j' (the stage table's layout); stage 1's times f
            Fr w = ld_vec(stage + r);
            if (lowf && r == 1) w = w * low_factor();
            tw.set(e, w);
        } else if (s == 0) {
            set_async<true>(tw, e, small + (jp << (NTT_MAX_K - 1 - i)));
        } else {
            tw.set(e, small[jp << (NTT_MAX_K - 1 - i)] * wl.get((e >> k) * NTT_MAX_K + i));
        }
    }
    cp_async_wait();
    __syncthreads();
    if (!DIF && lowf) scale_even<LAZY>(buf, tw.get(0), nb, tid, nthr);

    // 3. butterflies: radix-4 steps (stages i, i + 1) and a radix-2 step when k is odd;
    // DIT: i = 0, 2, ... then the radix-2 step last; DIF: the radix-2 step first (top
    // stage), then i = k - 2 (or k - 3), ..., 0, each step's stages in reverse.
    int i = DIF ? (int)k - 2 - (int)(k & 1) : 0;
    if (DIF && (k & 1)) ntt_radix2<true, COSET, LAZY>(buf, tw, s, k, k - 1, tid, nthr, nb);
    for (; DIF ? i >= 0 : i + 1 < (int)k; i += DIF ? -2 : 2) {
        const u32 h = 1u << i;
        // ntt_pass_s0's step at stages 3 and 4 (i == 2, h == 4): j' from the top two bits
        // of the thread's index in its column (the rest picks the group), so that each warp
        // has one j' when a column has 128 threads (k == 9); the warp with j' == 0 then skips
        // its products by one (below). Any other order of the groups gives the same result.
        const bool jp_high = S0 && i == 2 && k >= NTT_MAX_K;
        for (u32 q = tid; q < (nb >> 2); q += nthr) {
            const u32 col = q >> (k - 2);
            const u32 qi = q & ((1u << (k - 2)) - 1);
            const u32 jp = jp_high ? qi >> (k - 4) : qi & (h - 1);
            const u32 grp = jp_high ? qi & ((1u << (k - 4)) - 1) : qi >> i;
            const u32 j0 = (col << k) + (grp << (i + 2)) + jp;
            const u32 tb = s == 0 ? 0u : col << k;
            Fr x0 = buf.get(pad(j0));
            Fr x1 = buf.get(pad(j0 + h));
            Fr x2 = buf.get(pad(j0 + 2 * h));
            Fr x3 = buf.get(pad(j0 + 3 * h));
            // stage 1 of a plain transform (s == 0, i == 0) has twiddle 1, and so has stage
            // 2's butterfly (x0, x2): w_4^0. The products are written apart from the
            // butterflies ((x, y t) for DIT, (x + y, (x - y) t) for DIF) and in this order
            // because other forms of the same skips took ntt_pass to 88-96 registers and
            // ntt_pass_dif to 82, which costs a block an SM (80 fit 6 blocks of 128 threads).
            // In a pass with s == 0 every step's butterflies with j' == 0 have twiddle 1 too
            // (stage i + 1's w_{2h}^0 and stage i + 2's (x0, x2) w_{4h}^0): ntt_pass_s0 skips
            // them at i == 2, where a warp shares j'.
            const bool one = !COSET && s == 0 && (i == 0 || (jp_high && jp == 0));
            if (!DIF) {
                if (!one) {
                    const Fr t1 = tw.get(tb + h + jp);
                    x1 = tw_mul<LAZY>(t1, x1);
                    x3 = tw_mul<LAZY>(t1, x3);
                }
                butterfly1<LAZY>(x0, x1);
                butterfly1<LAZY>(x2, x3);
                if (!one) x2 = tw_mul<LAZY>(tw.get(tb + 2 * h + jp), x2);
                butterfly1<LAZY>(x0, x2);
                butterfly<LAZY>(x1, x3, tw.get(tb + 3 * h + jp));
            } else {
                butterfly_dif<LAZY>(x1, x3, tw.get(tb + 3 * h + jp));
                butterfly1_dif<LAZY>(x0, x2);
                if (!one) x2 = tw_mul<LAZY>(tw.get(tb + 2 * h + jp), x2);
                if (one) {
                    butterfly1_dif<LAZY>(x0, x1);
                    butterfly1_dif<LAZY>(x2, x3);
                } else {
                    const Fr t1 = tw.get(tb + h + jp);
                    butterfly_dif<LAZY>(x0, x1, t1);
                    butterfly_dif<LAZY>(x2, x3, t1);
                }
            }
            buf.set(pad(j0), x0);
            buf.set(pad(j0 + h), x1);
            buf.set(pad(j0 + 2 * h), x2);
            buf.set(pad(j0 + 3 * h), x3);
        }
        __syncthreads();
    }
    if (!DIF && (k & 1)) ntt_radix2<false, COSET, LAZY>(buf, tw, s, k, k - 1, tid, nthr, nb);
    if (DIF && lowf) scale_even<LAZY>(buf, tw.get(0), nb, tid, nthr);

    // 4. store where the block read (in dst), or with the bit reversal where it belongs
    if (rev && !DIF) {
        // column rev(r), contiguous in dst
#pragma unroll 4
        for (u32 l = tid; l < nb; l += nthr) {
            const u32 cc = l >> k;
            const u32 j = l & kmask;
            const size_t col = bitrev_bits((blockIdx.x << c) + cc, hb);
            st_vec(dst + (col << k) + j, el_out<LAZY>(buf.get(pad(l))));
        }
    } else if (rev) {
        // element j of column rev(r) to natural position (rev(j) << hb) | r
#pragma unroll 4
        for (u32 l = tid; l < nb; l += nthr) {
            const u32 cc = l & (cols - 1);
            const u32 j = l >> c;
            const size_t r = ((size_t)blockIdx.x << c) + cc;
            st_vec(dst + (((size_t)bitrev_bits(j, k) << hb) | r), el_out<LAZY>(buf.get(pad((cc << k) + j))));
        }
    } else if (s == 0) {
#pragma unroll 4
        for (u32 l = tid; l < nb; l += nthr) {
            st_vec(dst + base + l, el_out<LAZY>(buf.get(pad(l))));
        }
    } else {
#pragma unroll 4
        for (u32 l = tid; l < nb; l += nthr) {
            const u32 col = l & (cols - 1);
            const u32 j = l >> c;
            st_vec(dst + base + col + ((size_t)j << s), el_out<LAZY>(buf.get(pad((col << k) + j))));
        }
    }
}

// grid: 2^(logn - k - c) blocks of any number of threads (the host uses 2^(k+c-2), >= 1).
// Needs c <= s for s > 0 and c <= logn - k for s == 0; src == dst, or two buffers of 2^logn
// that do not overlap; NTT_REV only with s == 0 and src != dst (see the top); top non-null
// only for logn <= NTT_TOP_BITS.
extern "C" __global__ void ntt_pass(Fr* dst, const Fr* src, u32 logn, u32 s, u32 k, u32 c, u32 flags,
                                    const Fr* __restrict__ small, const Fr* __restrict__ root_lo,
                                    const Fr* __restrict__ root_hi, const Fr* __restrict__ stage,
                                    const Fr* __restrict__ top) {
    ntt_pass_body<false, false, true>(dst, src, logn, s, k, c, flags, small, root_lo, root_hi, stage, top, nullptr, nullptr);
}

// ntt_pass for the pass with s == 0 of a plain (not coset) DIT network, with s == 0 compiled in
// and the products by one of the step at stages 3 and 4 skipped by the warp whose j' is 0 (see
// jp_high): a quarter of that step's threads skip three of its four products. The same
// arguments (s is ignored), launch shape and shared memory as ntt_pass. __maxnreg__(80) keeps
// six blocks of 128 threads an SM (the per-warp j' takes ptxas to 86 registers otherwise).
extern "C" __global__ void __maxnreg__(80) ntt_pass_s0(Fr* dst, const Fr* src, u32 logn, u32 s, u32 k, u32 c,
                                                        u32 flags, const Fr* __restrict__ small,
                                                        const Fr* __restrict__ root_lo,
                                                        const Fr* __restrict__ root_hi,
                                                        const Fr* __restrict__ stage, const Fr* __restrict__ top) {
    ntt_pass_body<false, false, true, true>(dst, src, logn, 0u, k, c, flags, small, root_lo, root_hi, stage, top, nullptr,
                                            nullptr);
}

// The same launch shape and shared memory as ntt_pass; the host runs the passes in reverse.
extern "C" __global__ void ntt_pass_dif(Fr* dst, const Fr* src, u32 logn, u32 s, u32 k, u32 c, u32 flags,
                                        const Fr* __restrict__ small, const Fr* __restrict__ root_lo,
                                        const Fr* __restrict__ root_hi, const Fr* __restrict__ stage,
                                        const Fr* __restrict__ top) {
    ntt_pass_body<true, false, true>(dst, src, logn, s, k, c, flags, small, root_lo, root_hi, stage, top, nullptr, nullptr);
}

// The coset transforms (DIT with input factors g^e, DIF with output factors g^-e): the same
// launch shape and shared memory, `stage` a coset stage table and ct its multipliers; with
// NTT_COSET_LOW also the top table and `low` (gamma^x, x < 2^NTT_MAX_K; see the top), else
// both null.
extern "C" __global__ void ntt_pass_coset(Fr* dst, const Fr* src, u32 logn, u32 s, u32 k, u32 c, u32 flags,
                                          const Fr* __restrict__ small, const Fr* __restrict__ root_lo,
                                          const Fr* __restrict__ root_hi, const Fr* __restrict__ stage,
                                          const Fr* __restrict__ ct, const Fr* __restrict__ top,
                                          const Fr* __restrict__ low) {
    ntt_pass_body<false, true, true>(dst, src, logn, s, k, c, flags, small, root_lo, root_hi, stage, top, ct, low);
}
extern "C" __global__ void ntt_pass_dif_coset(Fr* dst, const Fr* src, u32 logn, u32 s, u32 k, u32 c,
                                              u32 flags, const Fr* __restrict__ small,
                                              const Fr* __restrict__ root_lo, const Fr* __restrict__ root_hi,
                                              const Fr* __restrict__ stage, const Fr* __restrict__ ct,
                                              const Fr* __restrict__ top, const Fr* __restrict__ low) {
    ntt_pass_body<true, true, false>(dst, src, logn, s, k, c, flags, small, root_lo, root_hi, stage, top, ct, low);
}

// The top table (see the top): out[x] = w27^x = w28^(2x) = root_hi[2x >> 14] root_lo[2x mod
// 2^14] for x < n <= 2^26.
extern "C" __global__ void ntt_top_table(Fr* __restrict__ out, const Fr* __restrict__ root_lo,
                                         const Fr* __restrict__ root_hi, u32 n) {
    const u32 x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= n) return;
    const u32 y = x << 1;
    st_vec(out + x, ld_vec(root_hi + (y >> NTT_ROOT_BITS)) * ld_vec(root_lo + (y & ((1u << NTT_ROOT_BITS) - 1))));
}

// A coset stage table from the plain one (ntt.rs, CosetTables): out[e] = stage[e] * ct[t] for
// the entries 2^(t-1) <= e < 2^t of stage t, out[0] = stage[0]; e < n <= 2^NTT_STAGE_BITS.
extern "C" __global__ void ntt_coset_table(const Fr* __restrict__ stage, const Fr* __restrict__ ct,
                                           Fr* __restrict__ out, u32 n) {
    const u32 e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    Fr v = ld_vec(stage + e);
    if (e != 0) v = v * ld_vec(ct + (32 - __clz(e)));
    st_vec(out + e, v);
}

// a[i] *= scale * g^e with e = i, or e = bitrev(i) over `rev` bits when rev > 0 (data in
// bit-reversed order); g^e = lo[e & (2^lobits - 1)] * hi[e >> lobits] from two tables.
// Where a block's elements share one of the two entries (natural order: the hi entry, since a
// block of 2^b <= 2^lobits aligned indices lies in one run of 2^lobits; bit-reversed order
// with rev >= lobits + b: the lo entry, since the block's varying low bits of i become the
// top bits of e), that entry times scale is computed once for the block: two products an
// element instead of three.
extern "C" __global__ void ntt_distribute(Fr* __restrict__ a, u32 n, const Fr* __restrict__ lo,
                                          const Fr* __restrict__ hi, u32 lobits, Fr scale, u32 rev) {
    __shared__ Fr part;
    const u32 mask = (1u << lobits) - 1;
    const u32 i0 = blockIdx.x * blockDim.x;
    const u32 i = i0 + threadIdx.x;
    const u32 bbits = 31 - __clz(blockDim.x);
    const bool pow2 = (blockDim.x & (blockDim.x - 1)) == 0;
    const bool hi_shared = pow2 && rev == 0 && bbits <= lobits;
    const bool lo_shared = pow2 && rev != 0 && rev >= lobits + bbits;
    if (hi_shared || lo_shared) {
        if (threadIdx.x == 0) {
            const u32 e0 = rev ? bitrev_bits(i0, rev) : i0;
            part = ld_vec(hi_shared ? hi + (e0 >> lobits) : lo + (e0 & mask)) * scale;
        }
        __syncthreads();
        if (i >= n) return;
        const u32 e = rev ? bitrev_bits(i, rev) : i;
        const Fr f = ld_vec(hi_shared ? lo + (e & mask) : hi + (e >> lobits));
        st_vec(a + i, ld_vec(a + i) * (f * part));
        return;
    }
    if (i >= n) return;
    u32 e = rev ? bitrev_bits(i, rev) : i;
    Fr p = ld_vec(lo + (e & mask)) * ld_vec(hi + (e >> lobits));
    st_vec(a + i, ld_vec(a + i) * (p * scale));
}

extern "C" __global__ void fr_scale(Fr* __restrict__ a, u32 n, Fr c) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st_vec(a + i, ld_vec(a + i) * c);
}

extern "C" __global__ void fr_mul_assign(Fr* __restrict__ a, const Fr* __restrict__ b, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st_vec(a + i, ld_vec(a + i) * ld_vec(b + i));
}

extern "C" __global__ void fr_sub_assign(Fr* __restrict__ a, const Fr* __restrict__ b, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st_vec(a + i, ld_vec(a + i) - ld_vec(b + i));
}

// a[i] = a[i] * b[i] - c[i] (Groth16's A*B - C on the coset, one pass instead of two).
extern "C" __global__ void fr_mul_sub(Fr* __restrict__ a, const Fr* __restrict__ b, const Fr* __restrict__ c,
                                      u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st_vec(a + i, ld_vec(a + i) * ld_vec(b + i) - ld_vec(c + i));
}

// a[i] = a[i] * b[i] - c[i] * f (the H polynomial's A*B - m C, see ntt.rs).
extern "C" __global__ void fr_mul_sub_scaled(Fr* __restrict__ a, const Fr* __restrict__ b,
                                             const Fr* __restrict__ c, u32 n, Fr f) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st_vec(a + i, ld_vec(a + i) * ld_vec(b + i) - ld_vec(c + i) * f);
}

// a[i] = a[i] - c[i] * f (the end of the H polynomial's six-transform form, see ntt.rs).
extern "C" __global__ void fr_sub_scaled(Fr* __restrict__ a, const Fr* __restrict__ c, u32 n, Fr f) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st_vec(a + i, ld_vec(a + i) - ld_vec(c + i) * f);
}

// *flag = 1 if a[i] * b[i] != c[i] for some i < n (the assignment does not satisfy its
// constraints); the caller zeroes *flag. Threads that find a difference all store 1.
extern "C" __global__ void fr_check_product(const Fr* __restrict__ a, const Fr* __restrict__ b,
                                            const Fr* __restrict__ c, u32 n, u32* __restrict__ flag) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (!(ld_vec(a + i) * ld_vec(b + i)).eq(ld_vec(c + i))) *flag = 1u;
}

extern "C" __global__ void fr_add_assign(Fr* __restrict__ a, const Fr* __restrict__ b, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    st_vec(a + i, ld_vec(a + i) + ld_vec(b + i));
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
    st_vec(dst + prefix[i >> 6] + rank, ld_vec(src + i));
}
