// The signed window digits of canonical 256-bit scalars (8 little-endian 32-bit words), shared
// by the MSM's sorting kernels (msm.cu) and checked on the host by digits_check.cpp. Requires
// u32, u64 and DEVI (field.cuh on the device).
//
// Window w of width c (8 <= c <= 20 from the host's plan; everything here needs c < 32) holds
// bits [w c, w c + c) of the scalar. Its signed digit d = raw + carry, taken as d - 2^c with a
// carry of 1 into the next window when d > 2^(c-1), lies in [-2^(c-1), 2^(c-1)]: so the
// scalar equals sum_w d_w 2^(w c) when the windows reach one bit past its length.

// Window w of a canonical 256-bit scalar, c <= 31 bits.
DEVI u32 window_bits(const u32* s, u32 w, u32 c) {
    u32 bit = w * c;
    u32 word = bit >> 5;
    u32 shift = bit & 31;
    u64 lo = word < 8 ? s[word] : 0;
    u64 hi = word + 1 < 8 ? s[word + 1] : 0;
    u64 v = (lo | (hi << 32)) >> shift;
    return (u32)(v & ((1ull << c) - 1));
}

// The signed digit of a window whose c raw bits are `raw`, given the carry from the window
// below: returns |d| (at most 2^(c-1)), sets neg, and sets carry for the window above.
DEVI u32 recode(u32 raw, u32 c, u32& carry, bool& neg) {
    const u32 d = raw + carry;
    neg = d > (1u << (c - 1));
    carry = neg ? 1u : 0u;
    return neg ? (1u << c) - d : d;
}

// Signed digit of window w; returns |d| and sets neg. `carry` runs across windows.
DEVI u32 signed_digit(const u32* s, u32 w, u32 c, u32& carry, bool& neg) {
    return recode(window_bits(s, w, c), c, carry, neg);
}

// Windows in turn from words held in registers (msm_scatter_tiled): a point holds words
// `held` and held + 1 of its scalar. Window 0 takes words 0 and 1; as c < 32, a later window
// starts in the word held or in the next one, and then steps: the high word moves down and
// word + 1 is read. So each word is read from memory once, not once a window.
struct WindowAt {
    u32 word;   // the word the window starts in
    u32 shift;  // its first bit within that word
    bool step;  // whether the held words move up one (never in window 0)
};

// Where window w starts, given the word held before it (0 before window 0); the caller
// holds at.word once the point's words have moved (window_words).
DEVI WindowAt window_at(u32 w, u32 c, u32 held) {
    const u32 bit = w * c;
    return WindowAt{bit >> 5, bit & 31, (bit >> 5) != held};
}

// A point's held words for window w (at from window_at): word j of its scalar is
// words[j * stride]; a point that is not `in` (past the end) has only zero words.
DEVI void window_words(u32 w, const WindowAt& at, u32& lo, u32& hi, const u32* words, size_t stride, bool in) {
    if (w == 0) {
        lo = in ? words[0] : 0u;
        hi = in ? words[stride] : 0u;
    } else if (at.step) {
        lo = hi;
        hi = in && at.word + 1 < 8 ? words[(at.word + 1) * stride] : 0u;
    }
}

// The window's c raw bits from the held words.
DEVI u32 window_raw(u32 lo, u32 hi, const WindowAt& at, u32 mask) {
    const u64 a = lo;
    const u64 b = hi;
    return (u32)(((a | (b << 32)) >> at.shift) & mask);
}
