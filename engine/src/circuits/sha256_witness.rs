//! SHA-256 as bellperson's gadgets compute it, for witnesses computed without them.
//!
//! A SHA-256 gadget run in a witness-only constraint system spends its time on `Boolean`
//! and `UInt32` values whose constraints are never looked at: only the values its `alloc`
//! calls produce are kept. [`hash_packed`] produces those values, in the same order, without
//! a constraint system. It mirrors which operations *allocate* in the gadgets, not their
//! constraints:
//!
//! - a gadget `Boolean` is [`Bit`]: a constant, or a variable read as is or negated; only
//!   constants and negations are free, and which one an operand is decides whether the
//!   gadget allocates (`Boolean::xor`, `and`, `sha256_ch`, `sha256_maj` special-case
//!   constants) and, for `xor`, which value it allocates (that of the variables, not of the
//!   negated Booleans);
//! - a gadget `UInt32` is [`Word`]: the same three facts for 32 bits at once, as masks, so
//!   that the usual case (no constant bit) is a few word operations;
//! - `UInt32::addmany` allocates every bit of the operands' full sum (up to 35 bits), unless
//!   every operand bit is constant.
//!
//! Its users: the PoRep labelings ([`super::label_witness`]) and tree D's inclusion paths
//! ([`super::por_witness`]). The mirror follows bellperson 0.27 / bellpepper-core 0.2; a
//! release that changes those gadgets changes the witness, which their tests then refuse.

use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use ff::{Field, PrimeField};

/// SHA-256's round constants.
#[allow(clippy::unreadable_literal)]
const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256's initial hash value.
#[allow(clippy::unreadable_literal)]
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// Bits `AllocatedNum::to_bits_le` allocates for a field element (`Scalar::NUM_BITS`).
pub(super) const FIELD_BITS: usize = Scalar::NUM_BITS as usize;

/// Bits of a digest packed into a field element (`Scalar::CAPACITY`).
const PACKED_BITS: usize = Scalar::CAPACITY as usize;

/// A gadget `Boolean`: a constant, or a variable (holding the value given) read as is or
/// negated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Bit {
    Constant(bool),
    Is(bool),
    Not(bool),
}

impl Bit {
    /// The Boolean's value.
    fn value(self) -> bool {
        match self {
            Bit::Constant(v) | Bit::Is(v) => v,
            Bit::Not(v) => !v,
        }
    }

    /// `Boolean::not`: free.
    fn not(self) -> Bit {
        match self {
            Bit::Constant(v) => Bit::Constant(!v),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }
}

/// The aux values allocated so far, in order.
pub(super) struct Aux(pub(super) Vec<Scalar>);

impl Aux {
    /// An allocated bit.
    pub(super) fn bit(&mut self, b: bool) {
        self.0.push(if b { Scalar::ONE } else { Scalar::ZERO });
    }

    /// The bits of `value` where `mask` is set, least significant first (the order in which
    /// the gadgets walk a `UInt32`).
    fn bits(&mut self, value: u32, mask: u32) {
        if mask == u32::MAX {
            self.0.extend((0..32).map(|i| {
                if value >> i & 1 == 1 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                }
            }));
        } else {
            for i in (0..32).filter(|i| mask >> i & 1 == 1) {
                self.bit(value >> i & 1 == 1);
            }
        }
    }
}

/// A gadget `UInt32`, bit i of each mask being bit i of the word (least significant first).
///
/// Invariant: `not & constant == 0` (a constant is never a negated variable).
#[derive(Clone, Copy, Debug)]
struct Word {
    /// Bits that are constants.
    constant: u32,
    /// Bits that are negated variables.
    not: u32,
    /// The Booleans' values (a negated variable's is the negation of the variable's).
    value: u32,
}

impl Word {
    /// `UInt32::constant`.
    fn constant(value: u32) -> Word {
        Word {
            constant: u32::MAX,
            not: 0,
            value,
        }
    }

    /// Bit `i` as a Boolean.
    fn bit(self, i: u32) -> Bit {
        let v = self.value >> i & 1 == 1;
        if self.constant >> i & 1 == 1 {
            Bit::Constant(v)
        } else if self.not >> i & 1 == 1 {
            Bit::Not(!v)
        } else {
            Bit::Is(v)
        }
    }

    /// Sets bit `i` (all of whose masks' bits are clear) to `b`.
    fn set(&mut self, i: u32, b: Bit) {
        let at = 1 << i;
        match b {
            Bit::Constant(_) => self.constant |= at,
            Bit::Not(_) => self.not |= at,
            Bit::Is(_) => {}
        }
        if b.value() {
            self.value |= at;
        }
    }

    /// `UInt32::from_bits_be`: `bits[0]` is the most significant.
    fn from_bits_be(bits: &[Bit]) -> Word {
        let mut w = Word {
            constant: 0,
            not: 0,
            value: 0,
        };
        for (k, &b) in bits.iter().take(32).enumerate() {
            w.set(31 - k as u32, b);
        }
        w
    }

    /// `UInt32::rotr`: free.
    fn rotr(self, by: u32) -> Word {
        Word {
            constant: self.constant.rotate_right(by),
            not: self.not.rotate_right(by),
            value: self.value.rotate_right(by),
        }
    }

    /// `UInt32::shr` (`0 < by < 32`): free, the top bits become constant zeros.
    fn shr(self, by: u32) -> Word {
        Word {
            constant: self.constant >> by | !(u32::MAX >> by),
            not: self.not >> by,
            value: self.value >> by,
        }
    }

    /// `UInt32::xor`. Per bit (`Boolean::xor`): with a constant false operand the other one,
    /// with a constant true its negation, both free; otherwise a variable holding the xor of
    /// the two *variables*, negated when exactly one operand was.
    fn xor(self, other: Word, aux: &mut Aux) -> Word {
        let constant = self.constant & other.constant;
        let value = self.value ^ other.value;
        let not =
            (self.not ^ other.not ^ (self.constant & self.value) ^ (other.constant & other.value))
                & !constant;
        // the allocated variable's value is the result's, undone of its negation
        aux.bits(value ^ not, !self.constant & !other.constant);
        Word {
            constant,
            not,
            value,
        }
    }

    /// `UInt32::sha256_ch`: bit by bit (`Boolean::sha256_ch`), a single allocation per bit
    /// when no operand bit is constant.
    fn ch(e: Word, f: Word, g: Word, aux: &mut Aux) -> Word {
        let value = (e.value & f.value) ^ (!e.value & g.value);
        if e.constant | f.constant | g.constant == 0 {
            aux.bits(value, u32::MAX);
            return Word {
                constant: 0,
                not: 0,
                value,
            };
        }
        Word::per_bit(|i, aux| ch_bit(e.bit(i), f.bit(i), g.bit(i), aux), aux)
    }

    /// `UInt32::sha256_maj`: bit by bit (`Boolean::sha256_maj`), which allocates the
    /// majority and then `b and c` when no operand bit is constant.
    fn maj(a: Word, b: Word, c: Word, aux: &mut Aux) -> Word {
        Word::per_bit(|i, aux| maj_bit(a.bit(i), b.bit(i), c.bit(i), aux), aux)
    }

    /// A word built bit by bit, least significant first (as the gadgets' `triop` does).
    fn per_bit(mut f: impl FnMut(u32, &mut Aux) -> Bit, aux: &mut Aux) -> Word {
        let mut w = Word {
            constant: 0,
            not: 0,
            value: 0,
        };
        for i in 0..32 {
            w.set(i, f(i, aux));
        }
        w
    }

    /// `UInt32::addmany`: a constant when every operand bit is, else every bit of the full
    /// sum (as many as the largest possible sum has), of which the low 32 are the result.
    fn addmany(operands: &[Word], aux: &mut Aux) -> Word {
        let sum: u64 = operands.iter().map(|w| u64::from(w.value)).sum();
        if operands.iter().all(|w| w.constant == u32::MAX) {
            return Word::constant(sum as u32);
        }
        let max = operands.len() as u64 * u64::from(u32::MAX);
        for i in 0..u64::BITS - max.leading_zeros() {
            aux.bit(sum >> i & 1 == 1);
        }
        Word {
            constant: 0,
            not: 0,
            value: sum as u32,
        }
    }
}

/// `Boolean::and`: free with a constant operand, else one variable holding the conjunction.
fn and(a: Bit, b: Bit, aux: &mut Aux) -> Bit {
    match (a, b) {
        (Bit::Constant(false), _) | (_, Bit::Constant(false)) => Bit::Constant(false),
        (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x,
        _ => {
            let v = a.value() & b.value();
            aux.bit(v);
            Bit::Is(v)
        }
    }
}

/// `Boolean::sha256_ch`, case for case.
fn ch_bit(a: Bit, b: Bit, c: Bit, aux: &mut Aux) -> Bit {
    let v = (a.value() & b.value()) ^ (!a.value() & c.value());
    match (a, b, c) {
        (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(v),
        (Bit::Constant(false), _, c) => c,
        (a, Bit::Constant(false), c) => and(a.not(), c, aux),
        (a, b, Bit::Constant(false)) => and(a, b, aux),
        (a, b, Bit::Constant(true)) => and(a, b.not(), aux).not(),
        (a, Bit::Constant(true), c) => and(a.not(), c.not(), aux).not(),
        // a constant true `a` included
        _ => {
            aux.bit(v);
            Bit::Is(v)
        }
    }
}

/// `Boolean::sha256_maj`, case for case.
fn maj_bit(a: Bit, b: Bit, c: Bit, aux: &mut Aux) -> Bit {
    let v = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
    match (a, b, c) {
        (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(v),
        (Bit::Constant(false), b, c) => and(b, c, aux),
        (a, Bit::Constant(false), c) => and(a, c, aux),
        (a, b, Bit::Constant(false)) => and(a, b, aux),
        (a, b, Bit::Constant(true)) => and(a.not(), b.not(), aux).not(),
        (a, Bit::Constant(true), c) => and(a.not(), c.not(), aux).not(),
        (Bit::Constant(true), b, c) => and(b.not(), c.not(), aux).not(),
        _ => {
            aux.bit(v);
            // the gadget's `b and c`, for its constraint
            and(b, c, aux);
            Bit::Is(v)
        }
    }
}

/// A value of the compression's `a` or `e`: known, or a sum not yet computed.
enum Maybe {
    Concrete(Word),
    Deferred(Vec<Word>),
}

impl Maybe {
    /// The value; a deferred sum is computed with `others` added (a known one ignores them,
    /// as the gadget's does).
    fn compute(self, others: &[Word], aux: &mut Aux) -> Word {
        match self {
            Maybe::Concrete(w) => w,
            Maybe::Deferred(mut v) => {
                v.extend_from_slice(others);
                Word::addmany(&v, aux)
            }
        }
    }
}

/// bellperson's `sha256_compression_function` of one 16-word block.
fn compress(block: &[Word], current: &[Word; 8], aux: &mut Aux) -> [Word; 8] {
    let mut w: Vec<Word> = Vec::with_capacity(64);
    w.extend_from_slice(block);
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(w[i - 15].rotr(18), aux);
        let s0 = s0.xor(w[i - 15].shr(3), aux);
        let s1 = w[i - 2].rotr(17).xor(w[i - 2].rotr(19), aux);
        let s1 = s1.xor(w[i - 2].shr(10), aux);
        let next = Word::addmany(&[w[i - 16], s0, w[i - 7], s1], aux);
        w.push(next);
    }

    let [h0, h1, h2, h3, h4, h5, h6, h7] = *current;
    let mut a = Maybe::Concrete(h0);
    let (mut b, mut c, mut d) = (h1, h2, h3);
    let mut e = Maybe::Concrete(h4);
    let (mut f, mut g, mut h) = (h5, h6, h7);
    for (k, wi) in ROUND_CONSTANTS.iter().zip(&w) {
        let new_e = e.compute(&[], aux);
        let s1 = new_e.rotr(6).xor(new_e.rotr(11), aux);
        let s1 = s1.xor(new_e.rotr(25), aux);
        let ch = Word::ch(new_e, f, g, aux);
        let temp1 = [h, s1, ch, Word::constant(*k), *wi];

        let new_a = a.compute(&[], aux);
        let s0 = new_a.rotr(2).xor(new_a.rotr(13), aux);
        let s0 = s0.xor(new_a.rotr(22), aux);
        let maj = Word::maj(new_a, b, c, aux);

        h = g;
        g = f;
        f = new_e;
        let mut next_e = temp1.to_vec();
        next_e.push(d);
        e = Maybe::Deferred(next_e);
        d = c;
        c = b;
        b = new_a;
        let mut next_a = temp1.to_vec();
        next_a.extend_from_slice(&[s0, maj]);
        a = Maybe::Deferred(next_a);
    }

    [
        a.compute(&[h0], aux),
        Word::addmany(&[h1, b], aux),
        Word::addmany(&[h2, c], aux),
        Word::addmany(&[h3, d], aux),
        e.compute(&[h4], aux),
        Word::addmany(&[h5, f], aux),
        Word::addmany(&[h6, g], aux),
        Word::addmany(&[h7, h], aux),
    ]
}

/// A field element's bits as `reverse_bit_numbering(x.to_bits_le())` gives them (each byte
/// of its little-endian representation, most significant bit first), the top bit (never
/// allocated) a constant zero.
pub(super) fn message_bits(x: &Scalar, out: &mut Vec<Bit>) {
    let bytes = x.to_repr();
    for (j, byte) in bytes.iter().enumerate() {
        for t in (0..8).rev() {
            if j * 8 + t < FIELD_BITS {
                out.push(Bit::Is(byte >> t & 1 == 1));
            } else {
                out.push(Bit::Constant(false));
            }
        }
    }
}

/// `AllocatedNum::to_bits_le` of `x`: its [`FIELD_BITS`] bits, least significant first.
pub(super) fn to_bits_le(x: &Scalar, aux: &mut Aux) {
    let bytes = x.to_repr();
    for k in 0..FIELD_BITS {
        aux.bit(bytes[k / 8] >> (k % 8) & 1 == 1);
    }
}

/// bellperson's `sha256` of `message` (padded with constants), then `multipack::pack_bits` of
/// the first [`PACKED_BITS`] bits of `reverse_bit_numbering(digest)`: what the gadgets
/// allocate, pushed to `aux`, the packed value last and returned.
///
/// Errors: none in practice (a 254-bit value is always a field element); kept so that a
/// mistake here is a synthesis error, not a panic.
pub(super) fn hash_packed(
    mut message: Vec<Bit>,
    aux: &mut Aux,
) -> std::result::Result<Scalar, SynthesisError> {
    // SHA-256's padding, all constants
    let length = message.len() as u64;
    message.push(Bit::Constant(true));
    while !(message.len() + 64).is_multiple_of(512) {
        message.push(Bit::Constant(false));
    }
    message.extend((0..64).rev().map(|i| Bit::Constant(length >> i & 1 == 1)));

    let mut current = IV.map(Word::constant);
    for block in message.chunks(512) {
        let words: Vec<Word> = block.chunks(32).map(Word::from_bits_be).collect();
        current = compress(&words, &current, aux);
    }

    // the digest's bytes read little-endian, cut to 254 bits
    let mut repr = [0u8; 32];
    for (chunk, word) in repr.chunks_mut(4).zip(&current) {
        chunk.copy_from_slice(&word.value.to_be_bytes());
    }
    repr[PACKED_BITS / 8] &= (1u8 << (PACKED_BITS % 8)) - 1;
    let packed: Scalar =
        Option::from(Scalar::from_repr(repr)).ok_or(SynthesisError::Unsatisfiable)?;
    aux.0.push(packed);
    Ok(packed)
}
