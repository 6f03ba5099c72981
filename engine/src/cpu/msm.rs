//! Multi-scalar multiplication on the CPU, tuned for Filecoin witnesses.
//!
//! Scalars are split by size before any curve work: zeros are dropped, bases whose scalar
//! is one are summed with blst's batch-affine addition, small scalars go to a Pippenger
//! run with only as many bits as they need, and the rest to a full 255-bit run. Filecoin
//! aux assignments are mostly bits, so most of an MSM becomes plain additions.
//! blst's Pippenger and batch addition are multi-threaded over all cores.
//!
//! G2's Pippenger runs use [`super::batch_affine`]'s buckets (rayon's pool), a run of more
//! than 2^24 points in chunks of 2^24: on the 2-core build machine they ran 1.07-1.44x as fast
//! as blst's (median 1.23x) from 2^10 to 2^22 points of random scalars, and 1.22-1.68x on 32-
//! and 64-bit ones; on 16 cores, 1.13-1.41x from 2^20 to 2^24 and 1.07-1.41x at 2^26 in
//! chunks (1.03x on 2 cores; docs/benchmarks.md, CHANGELOG.md). G1's stay blst's:
//! batch-affine buckets gained little (1.01-1.19x from 2^16 to 2^22 on 2 cores, 1.04-1.07x at
//! 2^22 and 2^24 on 16, none below 2^16) and nothing measurable in a whole proof. The
//! `cpu_msm` example compares the two on any size.

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_pce::Density;
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Group};

use super::batch_affine;

/// Which bases take part: all of them, or those whose bit is set in a density.
#[derive(Clone, Copy, Debug)]
pub enum Selection<'a> {
    /// Scalar i pairs with base i.
    All,
    /// The k-th scalar whose bit is set pairs with base k; other scalars are skipped.
    Dense(&'a Density),
}

/// Scalars grouped by how they are handled.
struct Split<P> {
    ones: Vec<P>,
    small: Vec<P>,
    small_bytes: Vec<u8>,
    small_bits: usize,
    large: Vec<P>,
    large_bytes: Vec<u8>,
}

/// Scalars below 2^SMALL_BITS go to the short Pippenger run.
const SMALL_BITS: usize = 64;

fn bit_len(repr: &[u8; 32]) -> usize {
    for i in (0..32).rev() {
        if repr[i] != 0 {
            return i * 8 + (8 - repr[i].leading_zeros() as usize);
        }
    }
    0
}

/// Pairs scalars with bases and sorts them into the groups. `to_raw` gives a base's blst
/// form, or `None` for the identity (which contributes nothing).
fn split<B, P: Copy>(
    bases: &[B],
    scalars: &[Scalar],
    sel: Selection<'_>,
    to_raw: impl Fn(&B) -> Option<P>,
) -> Result<Split<P>, String> {
    let mut s = Split {
        ones: Vec::new(),
        small: Vec::new(),
        small_bytes: Vec::new(),
        small_bits: 1,
        large: Vec::new(),
        large_bytes: Vec::new(),
    };
    let mut next_base = 0usize;
    for (i, scalar) in scalars.iter().enumerate() {
        if let Selection::Dense(d) = sel {
            if !d.get(i) {
                continue;
            }
        }
        let base = bases
            .get(next_base)
            .ok_or_else(|| format!("{} bases are too few for the selected scalars", bases.len()))?;
        next_base += 1;
        if bool::from(scalar.is_zero()) {
            continue;
        }
        let Some(raw) = to_raw(base) else { continue };
        if *scalar == Scalar::ONE {
            s.ones.push(raw);
            continue;
        }
        let repr = scalar.to_repr();
        let bits = bit_len(&repr);
        if bits <= SMALL_BITS {
            s.small.push(raw);
            s.small_bytes.extend_from_slice(&repr[..SMALL_BITS / 8]);
            s.small_bits = s.small_bits.max(bits);
        } else {
            s.large.push(raw);
            s.large_bytes.extend_from_slice(&repr);
        }
    }
    if next_base != bases.len() {
        return Err(format!(
            "{} bases but {next_base} selected scalars",
            bases.len()
        ));
    }
    Ok(s)
}

/// Repacks `bytes` (groups of `from` bytes) into groups of `to <= from` bytes.
fn narrow(bytes: &[u8], from: usize, to: usize) -> Vec<u8> {
    if to == from {
        return bytes.to_vec();
    }
    bytes
        .chunks(from)
        .flat_map(|c| c[..to].iter().copied())
        .collect()
}

fn g1_from_raw(p: &blst_p1) -> G1Projective {
    G1Projective::from_raw_unchecked(Fp::from(p.x), Fp::from(p.y), Fp::from(p.z))
}

fn g2_from_raw(p: &blst_p2) -> G2Projective {
    G2Projective::from_raw_unchecked(Fp2::from(p.x), Fp2::from(p.y), Fp2::from(p.z))
}

/// G1's Pippenger runs over `nbits`-bit scalars of `nbits.div_ceil(8)` bytes each: blst's.
fn wide_g1(points: &[blst_p1_affine], bytes: &[u8], nbits: usize) -> Result<G1Projective, String> {
    Ok(g1_from_raw(&points.mult(bytes, nbits)))
}

/// The most points one batch-affine run takes: a longer G2 run goes in chunks of this many
/// (`batch_affine::msm_chunked`). It is the largest single run measured (on 16 cores, 1.37-1.41x
/// blst's speed at 2^24 and 1.13-1.21x at 2^23; on 2 cores, 1.19x at 2^22); 2^26 points in
/// chunks of it ran 1.07x, 1.31x and 1.41x blst's speed on 16 cores (three pairs) and
/// 1.03x on 2.
const G2_BATCH_AFFINE_CHUNK: usize = 1 << 24;

/// G2's Pippenger runs, as [`wide_g1`]'s: batch-affine buckets, in chunks of at most
/// [`G2_BATCH_AFFINE_CHUNK`] points.
fn wide_g2(points: &[blst_p2_affine], bytes: &[u8], nbits: usize) -> Result<G2Projective, String> {
    batch_affine::msm_chunked::<batch_affine::G2>(
        points,
        bytes,
        nbits.div_ceil(8),
        nbits,
        G2_BATCH_AFFINE_CHUNK,
    )
}

macro_rules! msm_impl {
    ($name:ident, $affine:ty, $proj:ty, $raw_affine:ty, $from_raw:ident, $wide:ident) => {
        /// Computes `sum scalar_i * base_i` over the selected pairs.
        ///
        /// Errors if the number of bases differs from the number of selected scalars.
        pub fn $name(
            bases: &[$affine],
            scalars: &[Scalar],
            sel: Selection<'_>,
        ) -> Result<$proj, String> {
            let s = split(bases, scalars, sel, |b: &$affine| {
                if bool::from(b.is_identity()) {
                    None
                } else {
                    Some(*AsRef::<$raw_affine>::as_ref(b))
                }
            })?;
            let mut acc = <$proj>::identity();
            if !s.ones.is_empty() {
                acc += $from_raw(&s.ones.as_slice().add());
            }
            if !s.small.is_empty() {
                let nbytes = s.small_bits.div_ceil(8);
                let bytes = narrow(&s.small_bytes, SMALL_BITS / 8, nbytes);
                acc += $wide(&s.small, &bytes, nbytes * 8)?;
            }
            if !s.large.is_empty() {
                acc += $wide(&s.large, &s.large_bytes, 255)?;
            }
            Ok(acc)
        }
    };
}

msm_impl!(
    msm_g1,
    G1Affine,
    G1Projective,
    blst_p1_affine,
    g1_from_raw,
    wide_g1
);
msm_impl!(
    msm_g2,
    G2Affine,
    G2Projective,
    blst_p2_affine,
    g2_from_raw,
    wide_g2
);

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    fn naive(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
        bases
            .iter()
            .zip(scalars)
            .map(|(b, s)| G1Projective::from(b) * s)
            .sum()
    }

    fn scalar_mix(rng: &mut ChaCha8Rng, n: usize) -> Vec<Scalar> {
        (0..n)
            .map(|i| match i % 5 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                2 => Scalar::from(rng.next_u64()),
                3 => -Scalar::ONE, // r - 1
                _ => Scalar::random(&mut *rng),
            })
            .collect()
    }

    #[test]
    fn g1_matches_naive_on_mixed_scalars() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for n in [0usize, 1, 2, 3, 33, 1000, 1025] {
            let bases: Vec<G1Affine> = (0..n)
                .map(|i| {
                    if i % 7 == 3 {
                        G1Affine::generator() // repeated point
                    } else {
                        G1Projective::random(&mut rng).into()
                    }
                })
                .collect();
            let scalars = scalar_mix(&mut rng, n);
            let got = msm_g1(&bases, &scalars, Selection::All).unwrap();
            assert_eq!(got, naive(&bases, &scalars), "n={n}");
        }
    }

    #[test]
    fn identity_bases_and_density() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let scalars = scalar_mix(&mut rng, 40);
        let mut d = Density::new();
        for i in 0..40 {
            d.push(i % 3 != 0);
        }
        let mut bases: Vec<G1Affine> = (0..d.count())
            .map(|_| G1Projective::random(&mut rng).into())
            .collect();
        bases[2] = G1Affine::identity();
        let picked: Vec<Scalar> = (0..40).filter(|i| d.get(*i)).map(|i| scalars[i]).collect();
        let got = msm_g1(&bases, &scalars, Selection::Dense(&d)).unwrap();
        assert_eq!(got, naive(&bases, &picked));
        assert!(msm_g1(&bases[1..], &scalars, Selection::Dense(&d)).is_err());
    }

    #[test]
    fn g2_matches_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        let n = 70;
        let bases: Vec<G2Affine> = (0..n)
            .map(|_| G2Projective::random(&mut rng).into())
            .collect();
        let scalars = scalar_mix(&mut rng, n);
        let want: G2Projective = bases
            .iter()
            .zip(&scalars)
            .map(|(b, s)| G2Projective::from(b) * s)
            .sum();
        assert_eq!(msm_g2(&bases, &scalars, Selection::All).unwrap(), want);
    }

    /// G2 through a density, with identity, repeated and negated bases among 600: the
    /// batch-affine runs meet doublings and cancellations in their buckets.
    #[test]
    fn g2_with_density_matches_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(14);
        let n = 900;
        let mut d = Density::new();
        for i in 0..n {
            d.push(i % 3 != 1);
        }
        let g = G2Projective::random(&mut rng);
        let bases: Vec<G2Affine> = (0..d.count())
            .map(|i| match i % 6 {
                0 => g.into(),
                1 => (-g).into(),
                2 if i % 12 == 2 => G2Affine::identity(),
                _ => G2Projective::random(&mut rng).into(),
            })
            .collect();
        let scalars = scalar_mix(&mut rng, n);
        let picked: Vec<Scalar> = (0..n).filter(|i| d.get(*i)).map(|i| scalars[i]).collect();
        let want: G2Projective = bases
            .iter()
            .zip(&picked)
            .map(|(b, s)| G2Projective::from(b) * s)
            .sum();
        assert_eq!(
            msm_g2(&bases, &scalars, Selection::Dense(&d)).unwrap(),
            want
        );
    }
}
