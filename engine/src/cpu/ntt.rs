//! Radix-2 number-theoretic transforms over Fr, and the H polynomial of Groth16.
//!
//! Conventions are bellperson 0.27's `EvaluationDomain`: the domain has `m = 2^k` points,
//! the smallest power of two not below the number of constraints, with generator
//! `omega = ROOT_OF_UNITY^(2^(S-k))`. The H polynomial's coefficients are mathematically
//! unique for that domain, so any correct computation matches bellperson bit for bit; the
//! coset shift used internally is free (we use `MULTIPLICATIVE_GENERATOR`, as bellperson).

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use cuzk_kernels::ntt::omega;

use crate::error::{Error, Result};

/// The domain these transforms run over (defined in [`crate::domain`], which the shape
/// checks use without depending on the CPU backend).
pub use crate::domain::Domain;

/// `[1, w, w^2, ..., w^(len-1)]`, computed in parallel chunks.
pub(crate) fn powers(w: Scalar, len: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; len];
    let chunk = (len / rayon::current_num_threads().max(1)).max(1024);
    out.par_chunks_mut(chunk).enumerate().for_each(|(i, c)| {
        let mut acc = w.pow_vartime([(i * chunk) as u64]);
        for x in c.iter_mut() {
            *x = acc;
            acc *= w;
        }
    });
    out
}

fn bit_reverse(a: &mut [Scalar], log_m: u32) {
    if log_m == 0 {
        return;
    }
    let shift = usize::BITS - log_m;
    for i in 0..a.len() {
        let j = i.reverse_bits() >> shift;
        if i < j {
            a.swap(i, j);
        }
    }
}

/// Elements per cache-resident block (2^13 x 32 bytes = 256 KiB): the first stages of a
/// transform run block by block so the data stays in cache, the rest stream the array.
const LOCAL_LOG: u32 = 13;

/// One radix-2 butterfly pass over `lo`/`hi` (the two halves of a block), twiddles
/// `tw[(j0 + j) * stride]`.
#[inline]
fn butterflies(lo: &mut [Scalar], hi: &mut [Scalar], tw: &[Scalar], j0: usize, stride: usize) {
    for (j, (x, y)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let t = *y * tw[(j0 + j) * stride];
        *y = *x - t;
        *x += t;
    }
}

/// The twiddles of the stage with butterfly span `half`, contiguous: `tw[j * m/(2 half)]`.
fn stage_twiddles(tw: &[Scalar], half: usize, m: usize) -> Vec<Scalar> {
    let stride = m / (2 * half);
    (0..half)
        .into_par_iter()
        .with_min_len(4096)
        .map(|j| tw[j * stride])
        .collect()
}

/// Runs stages `half = 1, 2, ..` while `2*half <= a.len()` on one block; `local_tw` holds the
/// contiguous twiddles of stage `half` at offset `half - 1`.
fn local_stages(a: &mut [Scalar], local_tw: &[Scalar]) {
    let mut half = 1;
    while half < a.len() {
        let t = &local_tw[half - 1..2 * half - 1];
        for blk in a.chunks_mut(2 * half) {
            let (lo, hi) = blk.split_at_mut(half);
            butterflies(lo, hi, t, 0, 1);
        }
        half *= 2;
    }
}

/// In-place radix-2 decimation-in-time transform with twiddle table `tw[j] = w^j`,
/// `j < m/2`, where `w` is a primitive m-th root of unity (forward or inverse).
fn transform(a: &mut [Scalar], tw: &[Scalar], log_m: u32) {
    let m = a.len();
    bit_reverse(a, log_m);
    // stages inside cache-sized blocks, one block per task, with compact twiddle tables
    let local = 1usize << LOCAL_LOG.min(log_m);
    let mut local_tw = Vec::with_capacity(local);
    let mut half = 1;
    while half < local {
        local_tw.extend(stage_twiddles(tw, half, m));
        half *= 2;
    }
    a.par_chunks_mut(local)
        .for_each(|blk| local_stages(blk, &local_tw));
    // the remaining stages span several blocks: split each block's butterflies
    while half < m {
        let compact;
        let t: &[Scalar] = if m / (2 * half) == 1 {
            tw
        } else {
            compact = stage_twiddles(tw, half, m);
            &compact
        };
        let piece = (half / (rayon::current_num_threads() * 4)).clamp(1024, half);
        for blk in a.chunks_mut(2 * half) {
            let (lo, hi) = blk.split_at_mut(half);
            lo.par_chunks_mut(piece)
                .zip(hi.par_chunks_mut(piece))
                .enumerate()
                .for_each(|(p, (l, h))| butterflies(l, h, t, p * piece, 1));
        }
        half *= 2;
    }
}

/// Precomputed twiddles for one domain, forward and inverse.
pub struct Twiddles {
    domain: Domain,
    fwd: Vec<Scalar>,
    inv: Vec<Scalar>,
}

impl Twiddles {
    /// Tables for `domain` (m/2 elements each).
    pub fn new(domain: Domain) -> Self {
        let half = (domain.m / 2).max(1);
        let omega_inv = domain.omega.invert().unwrap_or(Scalar::ONE);
        Twiddles {
            fwd: powers(domain.omega, half),
            inv: powers(omega_inv, half),
            domain,
        }
    }

    /// Evaluations on the domain -> coefficients (with the 1/m scaling).
    pub fn ifft(&self, a: &mut [Scalar]) {
        transform(a, &self.inv, self.domain.log_m);
        let m_inv = m_inv(self.domain.m);
        a.par_iter_mut().for_each(|x| *x *= m_inv);
    }

    /// Coefficients -> evaluations on the domain.
    pub fn fft(&self, a: &mut [Scalar]) {
        transform(a, &self.fwd, self.domain.log_m);
    }
}

fn m_inv(m: usize) -> Scalar {
    Scalar::from(m as u64).invert().unwrap_or(Scalar::ONE)
}

/// Multiplies `a[i]` by `c * g^i`.
fn scale_by_powers(a: &mut [Scalar], g: Scalar, c: Scalar) {
    let chunk = (a.len() / rayon::current_num_threads().max(1)).max(1024);
    a.par_chunks_mut(chunk).enumerate().for_each(|(i, part)| {
        let mut acc = c * g.pow_vartime([(i * chunk) as u64]);
        for x in part.iter_mut() {
            *x *= acc;
            acc *= g;
        }
    });
}

/// Computes the coefficients of `h = (A*B - C) / Z` from the evaluations `a`, `b`, `c` of the
/// A, B, C polynomials on the domain (one entry per constraint, zero padded to `m`).
///
/// Returns `m - 1` coefficients: the degree of h is at most `m - 2`, and bellperson's H query
/// has exactly `m - 1` points.
#[tracing::instrument(level = "debug", skip_all, fields(n = a.len()))]
pub fn compute_h(
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
) -> Result<Vec<Scalar>> {
    let domain = Domain::for_size(a.len())?;
    let m = domain.m;
    for v in [&mut a, &mut b, &mut c] {
        v.resize(m, Scalar::ZERO);
    }
    let tw = Twiddles::new(domain);
    if m >= 2 {
        if satisfies_products(&a, &b, &c) {
            return Ok(h_negacyclic(a, b, c, &tw));
        }
        tracing::warn!(
            m,
            "a b != c on the domain: the assignment does not satisfy its constraints, so its \
             proof cannot verify (H by seven transforms)"
        );
    }
    h_coset(a, b, c, &tw)
}

/// [`compute_h`] by bellperson's seven transforms through the coset of the multiplicative
/// generator g (any a, b, c padded to the domain).
fn h_coset(
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
    tw: &Twiddles,
) -> Result<Vec<Scalar>> {
    let m = tw.domain.m;
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let minv = m_inv(m);
    // evaluations -> coefficients -> evaluations on the coset g*H; the 1/m of the inverse
    // transform is folded into the coset scaling.
    let to_coset = |v: &mut Vec<Scalar>| {
        transform(v, &tw.inv, tw.domain.log_m);
        scale_by_powers(v, g, minv);
        tw.fft(v);
    };
    to_coset(&mut a);
    to_coset(&mut b);
    to_coset(&mut c);
    // Z(x) = x^m - 1 is the constant g^m - 1 on the coset.
    let z_inv = (g.pow_vartime([m as u64]) - Scalar::ONE)
        .invert()
        .into_option()
        .ok_or_else(|| Error::InvalidRequest("vanishing polynomial is zero on the coset".into()))?;
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((x, y), z)| *x = (*x * y - z) * z_inv);
    drop(b);
    drop(c);
    // back to coefficients: inverse transform, then undo the coset shift (and 1/m)
    transform(&mut a, &tw.inv, tw.domain.log_m);
    let g_inv = g.invert().unwrap_or(Scalar::ONE);
    scale_by_powers(&mut a, g_inv, minv);
    a.truncate(m - 1);
    Ok(a)
}

/// Whether `a_i * b_i == c_i` for every i: the element-wise form of an assignment that
/// satisfies its constraints (each constraint's A, B and C values).
fn satisfies_products(a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> bool {
    a.par_iter()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .all(|((x, y), z)| *x * y == *z)
}

/// [`compute_h`] by six transforms instead of seven, for c = a b element-wise on the domain
/// (m >= 2). Then C(X) = A(X) B(X) mod (X^m - 1); with A B = P_lo + X^m P_hi (degrees below
/// m) the quotient by Z is h = P_hi and C = P_lo + P_hi. On the coset of zeta, a primitive
/// 2m-th root of unity (zeta^m = -1), A B takes the values of N = P_lo - P_hi, so
/// h = (C - N) / 2: a and b to the zeta coset, their product back to coefficients (N), c to
/// coefficients (C). The same recipe as the CUDA backend's (kernels' `h_polynomial_scaled`).
fn h_negacyclic(
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
    tw: &Twiddles,
) -> Vec<Scalar> {
    let (m, log_m) = (tw.domain.m, tw.domain.log_m);
    let minv = m_inv(m);
    // a primitive 2m-th root of unity (2m <= 2^S, since m < 2^S)
    let zeta = omega(log_m + 1);
    for v in [&mut a, &mut b] {
        transform(v, &tw.inv, log_m);
        scale_by_powers(v, zeta, minv);
        tw.fft(v);
    }
    a.par_iter_mut()
        .zip(b.par_iter())
        .for_each(|(x, y)| *x *= y);
    drop(b);
    transform(&mut a, &tw.inv, log_m);
    scale_by_powers(&mut a, zeta.invert().unwrap_or(Scalar::ONE), minv);
    transform(&mut c, &tw.inv, log_m);
    let half = Scalar::from(2u64).invert().unwrap_or(Scalar::ONE);
    let cs = minv * half;
    a.par_iter_mut()
        .zip(c.par_iter())
        .for_each(|(n, y)| *n = *y * cs - *n * half);
    a.truncate(m - 1);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn naive_eval(coeffs: &[Scalar], x: Scalar) -> Scalar {
        coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
    }

    #[test]
    fn fft_matches_naive_evaluation_and_inverts() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for log_m in [0u32, 1, 2, 3, 5, 10, 13, 14, 16] {
            let m = 1usize << log_m;
            let coeffs: Vec<Scalar> = (0..m).map(|_| Scalar::random(&mut rng)).collect();
            let d = Domain::for_size(m).unwrap();
            assert_eq!(d.m, m);
            let tw = Twiddles::new(d.clone());
            let mut v = coeffs.clone();
            tw.fft(&mut v);
            for i in [0, m / 2, m - 1] {
                assert_eq!(
                    v[i],
                    naive_eval(&coeffs, d.omega.pow_vartime([i as u64])),
                    "m={m} i={i}"
                );
            }
            tw.ifft(&mut v);
            assert_eq!(v, coeffs, "ifft(fft(x)) != x at m={m}");
        }
    }

    #[test]
    fn h_satisfies_the_qap_identity() {
        // Random a, b with c = a*b on the domain: then A*B - C = H*Z as polynomials.
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for n in [1usize, 2, 3, 5, 1000, 1025] {
            let a: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let b: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
            let h = compute_h(a.clone(), b.clone(), c.clone()).unwrap();
            let d = Domain::for_size(n).unwrap();
            assert_eq!(h.len(), d.m - 1);
            let tw = Twiddles::new(d.clone());
            let interp = |mut v: Vec<Scalar>| {
                v.resize(d.m, Scalar::ZERO);
                tw.ifft(&mut v);
                v
            };
            let (pa, pb, pc) = (interp(a), interp(b), interp(c));
            let x = Scalar::random(&mut rng);
            let lhs = naive_eval(&pa, x) * naive_eval(&pb, x) - naive_eval(&pc, x);
            let rhs = naive_eval(&h, x) * (x.pow_vartime([d.m as u64]) - Scalar::ONE);
            assert_eq!(lhs, rhs, "n={n}");
        }
    }

    /// The six-transform H equals bellperson's seven transforms when c = a b (zeros and
    /// r - 1 among the values), and compute_h takes the seven when one c_i differs.
    #[test]
    fn negacyclic_h_equals_the_coset_h_when_c_is_a_times_b() {
        let mut rng = ChaCha8Rng::seed_from_u64(10);
        for log_m in [1u32, 2, 3, 7, 12, 14] {
            let m = 1usize << log_m;
            let mut a: Vec<Scalar> = (0..m).map(|_| Scalar::random(&mut rng)).collect();
            let mut b: Vec<Scalar> = (0..m).map(|_| Scalar::random(&mut rng)).collect();
            a[0] = Scalar::ZERO;
            b[m - 1] = -Scalar::ONE;
            let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
            let tw = Twiddles::new(Domain::for_size(m).unwrap());
            let coset = h_coset(a.clone(), b.clone(), c.clone(), &tw).unwrap();
            assert_eq!(coset.len(), m - 1);
            assert!(satisfies_products(&a, &b, &c));
            assert_eq!(
                h_negacyclic(a.clone(), b.clone(), c.clone(), &tw),
                coset,
                "2^{log_m}"
            );
            assert_eq!(compute_h(a.clone(), b.clone(), c.clone()).unwrap(), coset);
            let mut bad = c.clone();
            bad[m / 2] += Scalar::ONE;
            assert!(!satisfies_products(&a, &b, &bad));
            let want = h_coset(a.clone(), b.clone(), bad.clone(), &tw).unwrap();
            assert_eq!(compute_h(a.clone(), b.clone(), bad.clone()).unwrap(), want);
            assert_ne!(h_negacyclic(a, b, bad, &tw), want, "2^{log_m}");
        }
    }
}
