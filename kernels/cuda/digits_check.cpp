// Runs the MSM's window digits (msm_digits.cuh) on the host, for
// kernels/tests/kernels_suite/msm_digits_on_host.rs: for random scalars below 2^255 and edge values, at every
// window width 8..=20, the windows walked from held words as msm_scatter_tiled walks them give
// the digits signed_digit gives, each digit lies in [-2^(c-1), 2^(c-1)], the last window
// leaves no carry, and sum_w d_w 2^(w c) is the scalar. Prints "ok <scalars> <digits>", or the
// first failure and exits with 1. Argument: a seed.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#define DEVI static inline
typedef unsigned int u32;
typedef unsigned long long u64;
#include "msm_digits.cuh"

static u64 state;
static u64 next() {  // xorshift64*
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
}

static u32 bit_length(const u32* s) {
    for (int w = 7; w >= 0; w--)
        if (s[w]) return 32 * w + 32 - __builtin_clz(s[w]);
    return 0;
}

// acc (10 words, two's complement mod 2^320) += sign * d * 2^bit
static void add_shifted(u32* acc, u32 d, u32 bit, bool negative) {
    u32 t[10] = {0};
    u64 v = (u64)d << (bit & 31);
    u32 word = bit >> 5;
    if (word < 10) t[word] = (u32)v;
    if (word + 1 < 10) t[word + 1] = (u32)(v >> 32);
    if (negative) {  // t = -t
        u64 carry = 1;
        for (int i = 0; i < 10; i++) {
            u64 x = (u64)(u32)~t[i] + carry;
            t[i] = (u32)x;
            carry = x >> 32;
        }
    }
    u64 carry = 0;
    for (int i = 0; i < 10; i++) {
        u64 x = (u64)acc[i] + t[i] + carry;
        acc[i] = (u32)x;
        carry = x >> 32;
    }
}

static int fail(const char* what, const u32* s, u32 c, u32 w) {
    printf("%s: c=%u window %u scalar", what, c, w);
    for (int i = 7; i >= 0; i--) printf(" %08x", s[i]);
    printf("\n");
    return 1;
}

// Checks one scalar at width c over nw windows; adds the digits walked to *digits.
static int check(const u32* s, u32 c, u32 nw, u64* digits) {
    const u32 mask = (1u << c) - 1;
    // garbage before window 0, as in registers
    u32 held = 0, lo = 0xdeadbeef, hi = 0xdeadbeef, lo_out = 0xdeadbeef, hi_out = 0xdeadbeef;
    u32 carry = 0, carry_ref = 0;
    u32 acc[10] = {0};
    for (u32 w = 0; w < nw; w++) {
        // as msm_scatter_tiled walks them (its scalars transposed: stride n there)
        const WindowAt at = window_at(w, c, held);
        if (w > 0 && at.step && at.word != held + 1) return fail("window skipped a word", s, c, w);
        if (w == 0 && at.step) return fail("window 0 steps", s, c, w);
        window_words(w, at, lo, hi, s, 1, true);
        held = at.word;
        // a point past the end of the input: every word and digit zero
        window_words(w, at, lo_out, hi_out, s, 1, false);
        if (lo_out != 0 || hi_out != 0) return fail("a point past the end has words", s, c, w);
        bool neg = false, neg_ref = false;
        const u32 d = recode(window_raw(lo, hi, at, mask), c, carry, neg);
        const u32 d_ref = signed_digit(s, w, c, carry_ref, neg_ref);
        if (d != d_ref || neg != neg_ref || carry != carry_ref)
            return fail("held words differ from signed_digit", s, c, w);
        if (d > (1u << (c - 1))) return fail("digit out of range", s, c, w);
        if (d != 0) {
            add_shifted(acc, d, w * c, neg);
            ++*digits;
        }
    }
    if (carry != 0) return fail("carry out of the last window", s, c, nw);
    for (int i = 0; i < 10; i++)
        if (acc[i] != (i < 8 ? s[i] : 0u)) return fail("digits do not sum to the scalar", s, c, nw);
    return 0;
}

int main(int argc, char** argv) {
    state = (argc > 1 ? strtoull(argv[1], 0, 10) : 1) * 2654435761ULL + 1;
    const u32 r_minus_1[8] = {0x00000000, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                              0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
    u64 scalars = 0, digits = 0;
    for (int k = 0; k < 4000; k++) {
        u32 s[8];
        if (k < 512) {
            // edges: 2^k - 1 (k < 256: every bit below k, 0 for k = 0), 2^(k - 256) (one bit,
            // k < 511), r - 1
            memset(s, 0, sizeof s);
            if (k < 256) {
                for (int i = 0; i < k && i < 255; i++) s[i >> 5] |= 1u << (i & 31);
            } else if (k < 511) {
                s[(k - 256) >> 5] |= 1u << ((k - 256) & 31);
            } else {
                memcpy(s, r_minus_1, sizeof s);
            }
        } else {
            for (int i = 0; i < 8; i++) s[i] = (u32)next();
            s[7] &= 0x7fffffff;  // below 2^255, as canonical scalars (r < 2^255)
            const u32 cut = (u32)(next() % 256);  // and shorter ones
            if (k % 3 == 0)
                for (u32 i = cut; i < 256; i++) s[i >> 5] &= ~(1u << (i & 31));
        }
        for (u32 c = 8; c <= 20; c++) {
            // the fewest windows the host's plan may give (one bit past the length), and the
            // full-width plan
            const u32 fewest = (bit_length(s) + 1 + c - 1) / c;
            const u32 full = (256 + c - 1) / c;
            if (check(s, c, fewest > 0 ? fewest : 1, &digits) || check(s, c, full, &digits)) return 1;
        }
        scalars++;
    }
    printf("ok %llu %llu\n", scalars, digits);
    return 0;
}
