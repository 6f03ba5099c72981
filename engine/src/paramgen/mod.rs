//! Groth16 parameter generation for test circuits: bellperson's `generate_random_parameters`,
//! the same parameters for the same randomness, several times faster.
//!
//! bellperson multiplies its generators by each of the tens of millions of query scalars
//! with `group`'s fixed-base wNAF: about 255 doublings a product. Here each product is at
//! most 16 mixed additions from precomputed window tables ([`fixed_base`]). Everything else
//! follows bellperson's generator step for step: the same draws from the random generator,
//! the same QAP (the blank circuit, then one `input * 0 = 0` row per input), powers of tau,
//! the H query from `(tau^m - 1) / delta`, Lagrange coefficients by an inverse FFT (our CPU
//! NTT, which follows bellperson's domain conventions), and the queries with points at
//! infinity dropped from A and B. The unit tests compare the serialised parameters with
//! bellperson's byte for byte.
//!
//! Parameters made this way are as insecure as bellperson's random ones (the toxic waste
//! passes through memory): for tests and benchmarks only, never for mainnet.

pub mod assembly;
pub mod fixed_base;
pub mod products;
pub mod streaming;

use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;
use tracing::info_span;

use crate::cpu::ntt::{powers, Twiddles};
use crate::domain::Domain;
use assembly::{Assembly, Terms};
use fixed_base::FixedBase;

/// Which implementation generates parameters: the same parameters either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ParamGenerator {
    /// [`generate_random_parameters`]: window tables.
    #[default]
    Cuzk,
    /// bellperson's `generate_random_parameters`: fixed-base wNAF (the oracle).
    Bellperson,
}

impl ParamGenerator {
    /// Random parameters for `circuit` from `rng`, by this generator.
    pub fn generate<C: Circuit<Scalar>, R: RngCore>(
        self,
        circuit: C,
        rng: &mut R,
    ) -> Result<Parameters<Bls12>, SynthesisError> {
        match self {
            ParamGenerator::Cuzk => generate_random_parameters(circuit, rng),
            ParamGenerator::Bellperson => {
                bellperson::groth16::generate_random_parameters::<Bls12, _, _>(circuit, rng)
            }
        }
    }
}

/// Random parameters for `circuit`: the draws of bellperson's `generate_random_parameters`
/// (g1, g2, alpha, beta, gamma, delta, tau, in that order) from `rng`, then
/// [`generate_parameters`]. For the same `rng` state, bellperson's parameters exactly.
pub fn generate_random_parameters<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    rng: &mut R,
) -> Result<Parameters<Bls12>, SynthesisError> {
    let (g1, g2, toxic) = random_draws(rng);
    generate_parameters(circuit, g1, g2, toxic)
}

/// The draws of bellperson's `generate_random_parameters`, in its order: the generators g1
/// and g2, then `[alpha, beta, gamma, delta, tau]`.
pub(crate) fn random_draws<R: RngCore + ?Sized>(
    rng: &mut R,
) -> (G1Projective, G2Projective, [Scalar; 5]) {
    let g1 = G1Projective::random(&mut *rng);
    let g2 = G2Projective::random(&mut *rng);
    let toxic = std::array::from_fn(|_| Scalar::random(&mut *rng));
    (g1, g2, toxic)
}

/// Parameters for `circuit` from the given generators and toxic waste `[alpha, beta, gamma,
/// delta, tau]` (bellperson's `generate_parameters`). Errors as bellperson's: a synthesis
/// error, a domain past Fr's 2-adicity, gamma or delta zero, or a variable in no constraint.
pub fn generate_parameters<C: Circuit<Scalar>>(
    circuit: C,
    g1: G1Projective,
    g2: G2Projective,
    [alpha, beta, gamma, delta, tau]: [Scalar; 5],
) -> Result<Parameters<Bls12>, SynthesisError> {
    let span = info_span!("generate_parameters");
    let _g = span.enter();
    let mut cs = Assembly::new();
    cs.alloc_input(|| "", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    // input * 0 = 0 for each input: the IC query is then fully dense
    for i in 0..cs.num_inputs {
        cs.enforce(
            || "",
            |lc| lc + bellpepper_core::Variable::new_unchecked(bellpepper_core::Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    let domain = Domain::for_size(cs.num_constraints)
        .map_err(|_| SynthesisError::PolynomialDegreeTooLarge)?;
    let m = domain.m;
    let gamma_inv =
        Option::<Scalar>::from(gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inv =
        Option::<Scalar>::from(delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let vars = cs.num_inputs + cs.num_aux;
    tracing::debug!(
        constraints = cs.num_constraints,
        m,
        inputs = cs.num_inputs,
        aux = cs.num_aux,
        "blank circuit synthesised"
    );
    let (g1_table, g2_table) = info_span!("window_tables").in_scope(|| {
        (
            FixedBase::new(g1, (m - 1) + 3 * vars),
            FixedBase::new(g2, vars),
        )
    });

    // H: g1 (tau^i t(tau) / delta) for i < m - 1, with t(tau) = tau^m - 1
    let mut tau_powers = powers(tau, m);
    let h = info_span!("h_query", n = m - 1).in_scope(|| {
        let coeff = (tau.pow_vartime([m as u64]) - Scalar::ONE) * delta_inv;
        let h_scalars: Vec<Scalar> = tau_powers[..m - 1].par_iter().map(|p| *p * coeff).collect();
        g1_table.mul_all(&h_scalars)
    });

    // Lagrange coefficients at tau
    info_span!("lagrange", m).in_scope(|| Twiddles::new(domain).ifft(&mut tau_powers));
    let lagrange = tau_powers;

    let tables = Tables {
        g1: &g1_table,
        g2: &g2_table,
        lagrange: &lagrange,
        alpha,
        beta,
    };
    let inputs = info_span!("input_queries", n = cs.num_inputs)
        .in_scope(|| tables.queries(&cs.inputs, gamma_inv));
    let aux =
        info_span!("aux_queries", n = cs.num_aux).in_scope(|| tables.queries(&cs.aux, delta_inv));
    if aux.ext.iter().any(|p| bool::from(p.is_identity())) {
        return Err(SynthesisError::UnconstrainedVariable);
    }

    let (g1, g2) = (g1.to_affine(), g2.to_affine());
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1 * alpha).to_affine(),
        beta_g1: (g1 * beta).to_affine(),
        beta_g2: (g2 * beta).to_affine(),
        gamma_g2: (g2 * gamma).to_affine(),
        delta_g1: (g1 * delta).to_affine(),
        delta_g2: (g2 * delta).to_affine(),
        ic: inputs.ext,
    };
    // points at infinity dropped from A and B (their polynomials vanish at tau)
    fn finite<P: group::prime::PrimeCurveAffine>(a: Vec<P>, b: Vec<P>) -> Vec<P> {
        a.into_iter()
            .chain(b)
            .filter(|p| !bool::from(p.is_identity()))
            .collect()
    }
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(aux.ext),
        a: Arc::new(finite(inputs.a, aux.a)),
        b_g1: Arc::new(finite(inputs.b_g1, aux.b_g1)),
        b_g2: Arc::new(finite(inputs.b_g2, aux.b_g2)),
    })
}

/// What the per-variable queries are computed from.
struct Tables<'a> {
    g1: &'a FixedBase<G1Projective>,
    g2: &'a FixedBase<G2Projective>,
    lagrange: &'a [Scalar],
    alpha: Scalar,
    beta: Scalar,
}

/// One kind of variables' query points (identity where a polynomial vanishes at tau).
struct Queries {
    a: Vec<G1Affine>,
    b_g1: Vec<G1Affine>,
    b_g2: Vec<G2Affine>,
    /// `(beta a + alpha b + c) inv`: the IC query for inputs, L for aux variables.
    ext: Vec<G1Affine>,
}

impl Tables<'_> {
    /// The queries of variables whose A, B, C terms are `terms`.
    fn queries(&self, terms: &[Vec<Terms>; 3], inv: Scalar) -> Queries {
        let at_tau = |t: &Terms| -> Scalar {
            t.iter()
                .map(|(coeff, row)| self.lagrange[*row] * coeff)
                .fold(Scalar::ZERO, |acc, x| acc + x)
        };
        let evals: Vec<[Scalar; 3]> = (0..terms[0].len())
            .into_par_iter()
            .map(|v| {
                [
                    at_tau(&terms[0][v]),
                    at_tau(&terms[1][v]),
                    at_tau(&terms[2][v]),
                ]
            })
            .collect();
        let a: Vec<Scalar> = evals.iter().map(|e| e[0]).collect();
        let b: Vec<Scalar> = evals.iter().map(|e| e[1]).collect();
        let ext: Vec<Scalar> = evals
            .par_iter()
            .map(|[a, b, c]| (*a * self.beta + *b * self.alpha + c) * inv)
            .collect();
        // a zero scalar gives the identity, as bellperson leaves it
        Queries {
            a: self.g1.mul_all(&a),
            b_g1: self.g1.mul_all(&b),
            b_g2: self.g2.mul_all(&b),
            ext: self.g1.mul_all(&ext),
        }
    }
}

#[cfg(test)]
mod tests;
