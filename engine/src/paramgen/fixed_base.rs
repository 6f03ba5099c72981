//! Multiplication of one fixed point by many scalars, by precomputed window tables.
//!
//! A scalar is cut into `W = ceil(256 / c)` signed c-bit digits `d_k` (each in
//! `[-(2^(c-1) - 1), 2^(c-1)]`), so `s P = sum_k d_k 2^(c k) P`; the table holds
//! `d 2^(c k) P` in affine form for every window k and every `d` in `1..=2^(c-1)`, and a
//! product is at most W mixed additions (16 at c = 16), without a doubling. `group`'s
//! fixed-base wNAF, which bellperson's parameter generator uses, makes about 255 doublings a
//! product besides its additions.

use blstrs::Scalar;
use group::prime::{PrimeCurve, PrimeCurveAffine};
use group::Curve;
use rayon::prelude::*;

/// Widest window: a G2 table at c = 16 holds 2^19 points (96 MiB).
const MAX_C: u32 = 16;

/// The window tables of one point. Invariant: `table[k * half + d - 1] = d 2^(c k) P` for
/// `k < windows` and `d` in `1..=half`, with `half = 2^(c-1)` and `windows c >= 256`.
pub struct FixedBase<G: PrimeCurve> {
    c: u32,
    windows: usize,
    table: Vec<G::Affine>,
}

impl<G> FixedBase<G>
where
    G: PrimeCurve<Scalar = Scalar> + Curve<AffineRepr = <G as PrimeCurve>::Affine>,
{
    /// Tables of `base` for about `count` products: the window width minimises the table's
    /// additions plus the products' (at most `MAX_C` bits).
    pub fn new(base: G, count: usize) -> Self {
        let c = window_bits(count);
        let windows = 256usize.div_ceil(c as usize);
        let half = 1usize << (c - 1);
        // 2^(c k) P for each window
        let mut starts = Vec::with_capacity(windows);
        let mut p = base;
        for _ in 0..windows {
            starts.push(p);
            for _ in 0..c {
                p = p.double();
            }
        }
        let mut table = vec![<G as PrimeCurve>::Affine::identity(); windows * half];
        table
            .par_chunks_mut(half)
            .zip(starts.par_iter())
            .for_each(|(out, start)| {
                let mut multiples = Vec::with_capacity(half);
                let mut acc = *start;
                for _ in 0..half {
                    multiples.push(acc);
                    acc += start;
                }
                G::batch_normalize(&multiples, out);
            });
        FixedBase { c, windows, table }
    }

    /// The window width c, in bits.
    pub fn window_bits(&self) -> u32 {
        self.c
    }

    /// The number of windows (`windows c >= 256`).
    pub fn windows(&self) -> usize {
        self.windows
    }

    /// The tables, laid out as the type's invariant states.
    pub fn points(&self) -> &[<G as PrimeCurve>::Affine] {
        &self.table
    }

    /// `s P`.
    pub fn mul(&self, s: &Scalar) -> G {
        let half = 1i64 << (self.c - 1);
        let mut acc = G::identity();
        for (k, d) in signed_digits(s, self.c, self.windows).enumerate() {
            if d == 0 {
                continue;
            }
            // within the table: 0 < |d| <= half (signed_digits' contract)
            let p = &self.table[k * half as usize + (d.unsigned_abs() as usize - 1)];
            if d > 0 {
                acc += p;
            } else {
                acc += &-*p;
            }
        }
        acc
    }

    /// `s P` for each scalar, in affine form, computed in parallel.
    pub fn mul_all(&self, scalars: &[Scalar]) -> Vec<<G as PrimeCurve>::Affine> {
        let mut out = vec![<G as PrimeCurve>::Affine::identity(); scalars.len()];
        out.par_chunks_mut(1 << 12)
            .zip(scalars.par_chunks(1 << 12))
            .for_each(|(out, s)| {
                let p: Vec<G> = s.iter().map(|s| self.mul(s)).collect();
                G::batch_normalize(&p, out);
            });
        out
    }
}

/// Window width for `count` products: minimises `ceil(256 / c) (2^(c-1) + count)`, the
/// table's additions plus the products', for c in 2..=[`MAX_C`].
fn window_bits(count: usize) -> u32 {
    (2..=MAX_C)
        .min_by_key(|&c| 256u64.div_ceil(u64::from(c)) * ((1u64 << (c - 1)) + count as u64))
        .unwrap_or(MAX_C)
}

/// The `windows` signed c-bit digits of `s` (c <= 16), lowest first: `s = sum_k d_k 2^(c k)`
/// with each `d_k` in `[-(2^(c-1) - 1), 2^(c-1)]`. Needs `windows c >= 256`: `s < r < 2^255`,
/// so the top window's raw value is below `2^(c-1)` and its carry never leaves it.
fn signed_digits(s: &Scalar, c: u32, windows: usize) -> impl Iterator<Item = i64> {
    let bytes = s.to_bytes_le();
    let mut limbs = [0u64; 5]; // one spare limb: a window may reach past bit 255
    for (i, chunk) in bytes.chunks(8).enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        limbs[i] = u64::from_le_bytes(w);
    }
    let mask = (1u64 << c) - 1;
    let half = 1i64 << (c - 1);
    let mut carry = 0i64;
    (0..windows).map(move |k| {
        let bit = k * c as usize;
        let (limb, shift) = (bit / 64, bit % 64);
        let mut raw = limbs[limb] >> shift;
        if shift + c as usize > 64 {
            raw |= limbs[limb + 1] << (64 - shift);
        }
        let mut d = (raw & mask) as i64 + carry;
        carry = 0;
        if d > half {
            d -= 1 << c;
            carry = 1;
        }
        d
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use ff::Field;
    use group::Group;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn edge_scalars() -> Vec<Scalar> {
        let mut v = vec![
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE, // r - 1
            Scalar::from(u64::MAX),
            Scalar::from(1u64 << 15),
            Scalar::from((1u64 << 16) - 1),
            Scalar::from(1u64 << 16),
        ];
        // 2^k for every k: each window's digit at its extremes, and the carries between them
        let mut p = Scalar::ONE;
        for _ in 0..255 {
            v.push(p);
            v.push(p - Scalar::ONE);
            p = p.double();
        }
        v
    }

    #[test]
    fn digits_recompose_the_scalar() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut scalars = edge_scalars();
        scalars.extend((0..200).map(|_| Scalar::random(&mut rng)));
        for c in [2u32, 3, 7, 13, 15, 16] {
            let windows = 256usize.div_ceil(c as usize);
            let half = 1i64 << (c - 1);
            for s in &scalars {
                let mut acc = Scalar::ZERO;
                let mut weight = Scalar::ONE;
                for _ in 0..c {
                    weight = weight.double();
                }
                let mut w_k = Scalar::ONE;
                for d in signed_digits(s, c, windows) {
                    assert!(-half < d && d <= half, "c={c}: digit {d}");
                    let m = Scalar::from(d.unsigned_abs());
                    acc += if d < 0 { -(m * w_k) } else { m * w_k };
                    w_k *= weight;
                }
                assert_eq!(acc, *s, "c={c}");
            }
        }
    }

    #[test]
    fn products_equal_scalar_multiplication() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let mut scalars = edge_scalars();
        scalars.extend((0..100).map(|_| Scalar::random(&mut rng)));
        let g1 = G1Projective::random(&mut rng);
        let g2 = G2Projective::random(&mut rng);
        for count in [1usize, 100, 1 << 20] {
            let t1 = FixedBase::new(g1, count);
            let t2 = FixedBase::new(g2, count.min(1000));
            let all = t1.mul_all(&scalars);
            for (s, a) in scalars.iter().zip(&all) {
                assert_eq!(t1.mul(s), g1 * s, "G1, count {count}");
                assert_eq!(G1Projective::from(*a), g1 * s);
                assert_eq!(t2.mul(s), g2 * s, "G2");
            }
        }
    }

    #[test]
    fn window_grows_with_the_count() {
        assert!(window_bits(1) <= 4);
        assert_eq!(window_bits(10_000_000), 16);
        assert!(window_bits(1000) < window_bits(1_000_000));
    }
}
