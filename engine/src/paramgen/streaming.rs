//! Parameters written while they are computed, in about 100 bytes of host memory per
//! variable instead of the whole QAP and every query at once.
//!
//! [`super::generate_parameters`] holds the circuit's constraints by variable and every query
//! point before it returns: about 175 GB for a 32 GiB PoRep circuit (130M constraints and
//! variables). Here the same parameters, byte for byte, are made in passes:
//!
//! 1. the blank circuit is synthesised once to count its constraints, which fixes the
//!    evaluation domain (2^27 rows at 32 GiB);
//! 2. the Lagrange basis is evaluated at tau (powers of tau, then an inverse FFT);
//! 3. the blank circuit is synthesised again, and each constraint adds its coefficients times
//!    its row's Lagrange value to the A, B, C evaluations of the variables it names: three
//!    field elements per variable, no matrices;
//! 4. each query (IC, H, L, A, B in G1 and G2) is multiplied from fixed-base window tables in
//!    chunks and written at once, in bellperson's file layout.
//!
//! The draws from the random generator are bellperson's, so for the same seed the file is the
//! one `generate_random_parameters` followed by `Parameters::write` gives. Insecure as those
//! (the toxic waste passes through memory): for tests and benchmarks only.

use std::io::{self, Write};

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, Scalar};
use ff::Field;
use group::{prime::PrimeCurve, Curve, GroupEncoding, UncompressedEncoding};
use rand_core::RngCore;
use rayon::prelude::*;
use tracing::info_span;

use super::fixed_base::FixedBase;
use super::products::{OnDevice, Products, ProductsOn};
use super::ParamGenerator;
use crate::cpu::ntt::{powers, Twiddles};
use crate::domain::Domain;
use cuzk_kernels::layout::DeviceElem;

/// Scalars multiplied and written per chunk (96 MiB of G1 points; small in unit tests, so
/// that they cross chunk boundaries).
const CHUNK: usize = if cfg!(test) { 64 } else { 1 << 20 };

/// A blank circuit (no witness) that parameters can be made for, by either generator.
/// Object-safe, so that every proof kind and shape goes through one function.
pub trait BlankCircuit: Send {
    /// Synthesises a copy into a counting constraint system.
    fn count(&self, cs: &mut Counter) -> Result<(), SynthesisError>;
    /// Synthesises a copy into an accumulating constraint system.
    fn accumulate(&self, cs: &mut Accumulator<'_>) -> Result<(), SynthesisError>;
    /// Generates the parameters in memory with `generator` (see [`ParamGenerator`]).
    fn generate(
        self: Box<Self>,
        generator: ParamGenerator,
        rng: &mut dyn RngCore,
    ) -> Result<Parameters<Bls12>, SynthesisError>;
}

impl<C: Circuit<Scalar> + Clone + Send> BlankCircuit for C {
    fn count(&self, cs: &mut Counter) -> Result<(), SynthesisError> {
        self.clone().synthesize(cs)
    }

    fn accumulate(&self, cs: &mut Accumulator<'_>) -> Result<(), SynthesisError> {
        self.clone().synthesize(cs)
    }

    fn generate(
        self: Box<Self>,
        generator: ParamGenerator,
        rng: &mut dyn RngCore,
    ) -> Result<Parameters<Bls12>, SynthesisError> {
        generator.generate(*self, &mut &mut *rng)
    }
}

/// A blank circuit made afresh for each pass, for circuit types that are not `Clone`.
pub struct Fresh<F>(pub F);

impl<C, F> BlankCircuit for Fresh<F>
where
    C: Circuit<Scalar>,
    F: Fn() -> C + Send,
{
    fn count(&self, cs: &mut Counter) -> Result<(), SynthesisError> {
        (self.0)().synthesize(cs)
    }

    fn accumulate(&self, cs: &mut Accumulator<'_>) -> Result<(), SynthesisError> {
        (self.0)().synthesize(cs)
    }

    fn generate(
        self: Box<Self>,
        generator: ParamGenerator,
        rng: &mut dyn RngCore,
    ) -> Result<Parameters<Bls12>, SynthesisError> {
        generator.generate((self.0)(), &mut &mut *rng)
    }
}

/// Where [`write_random_parameters`] is: reported as each phase starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Synthesising the blank circuit to count its constraints.
    Counting,
    /// Evaluating the Lagrange basis and each variable's A, B, C at tau (`m` rows).
    Evaluating {
        /// Constraints, with one row per input.
        constraints: usize,
        /// Domain size.
        m: usize,
    },
    /// Multiplying and writing a query of `points` points.
    Query {
        /// The query's name as bellperson's `Parameters` calls it (`ic`, `h`, `l`, `a`,
        /// `b_g1`, `b_g2`).
        name: &'static str,
        /// Points written (identities dropped from A and B).
        points: usize,
    },
}

/// Counts a blank circuit's variables and constraints.
#[derive(Debug, Default)]
pub struct Counter {
    inputs: usize,
    aux: usize,
    constraints: usize,
}

impl ConstraintSystem<Scalar> for Counter {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Each variable's A, B, C polynomials evaluated at tau, summed constraint by constraint.
///
/// Invariant: `lagrange` holds at least one value per constraint enforced.
pub struct Accumulator<'a> {
    lagrange: &'a [Scalar],
    row: usize,
    /// `[a, b, c]` at tau per input, ONE first.
    inputs: Vec<[Scalar; 3]>,
    /// `[a, b, c]` at tau per aux variable.
    aux: Vec<[Scalar; 3]>,
}

impl ConstraintSystem<Scalar> for Accumulator<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push([Scalar::ZERO; 3]);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push([Scalar::ZERO; 3]);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        // The count pass sized `lagrange`; a circuit that enforces more rows the second time
        // is caught after synthesis (the row count differs), so a missing value is zero here.
        let l = self.lagrange.get(self.row).copied().unwrap_or(Scalar::ZERO);
        let lcs = [
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        ];
        for (k, lc) in lcs.iter().enumerate() {
            for (var, coeff) in lc.iter() {
                let slot = match var.get_unchecked() {
                    Index::Input(i) => self.inputs.get_mut(i),
                    Index::Aux(i) => self.aux.get_mut(i),
                };
                if let Some(e) = slot {
                    e[k] += l * coeff;
                }
            }
        }
        self.row += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

fn other(msg: String) -> SynthesisError {
    SynthesisError::IoError(io::Error::other(msg))
}

/// Writes random parameters for `circuit` to `out`, drawing from `rng` exactly as bellperson's
/// `generate_random_parameters` does, and returns the verifying key. Errors as bellperson's
/// generator (a synthesis error, a domain past Fr's 2-adicity, gamma or delta zero, a
/// variable in no constraint), an I/O error, or a circuit that synthesises differently twice.
pub fn write_random_parameters(
    circuit: &dyn BlankCircuit,
    rng: &mut dyn RngCore,
    out: &mut dyn Write,
    on: &ProductsOn,
    progress: &mut dyn FnMut(Phase),
) -> Result<VerifyingKey<Bls12>, SynthesisError> {
    let (g1, g2, [alpha, beta, gamma, delta, tau]) = super::random_draws(rng);
    let _span = info_span!("write_random_parameters").entered();

    progress(Phase::Counting);
    let mut count = Counter::default();
    info_span!("count").in_scope(|| -> Result<(), SynthesisError> {
        count.alloc_input(|| "", || Ok(Scalar::ONE))?;
        circuit.count(&mut count)
    })?;
    // one `input * 0 = 0` row per input
    let constraints = count.constraints + count.inputs;
    let domain =
        Domain::for_size(constraints).map_err(|_| SynthesisError::PolynomialDegreeTooLarge)?;
    let m = domain.m;
    let gamma_inv =
        Option::<Scalar>::from(gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inv =
        Option::<Scalar>::from(delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;

    progress(Phase::Evaluating { constraints, m });
    let (mut inputs, mut aux) = evaluate(circuit, &count, domain, tau)?;
    // [a, b, c] -> [a, b, (beta a + alpha b + c) inv]: the IC query for inputs, L for aux
    let ext = |evals: &mut [[Scalar; 3]], inv: Scalar| {
        evals
            .par_iter_mut()
            .for_each(|e| e[2] = (e[0] * beta + e[1] * alpha + e[2]) * inv)
    };
    ext(&mut inputs, gamma_inv);
    ext(&mut aux, delta_inv);
    if aux.par_iter().any(|e| bool::from(e[2].is_zero())) {
        return Err(SynthesisError::UnconstrainedVariable);
    }

    let vars = count.inputs + count.aux;
    let (g1_table, g2_table) = info_span!("window_tables").in_scope(|| {
        (
            FixedBase::new(g1, (m - 1) + 3 * vars),
            FixedBase::new(g2, vars),
        )
    });
    let (g1_products, g2_products) = info_span!("upload_tables").in_scope(|| {
        Ok::<_, SynthesisError>((Products::new(on, &g1_table)?, Products::new(on, &g2_table)?))
    })?;
    let ic_scalars: Vec<Scalar> = inputs.iter().map(|e| e[2]).collect();
    let (g1a, g2a) = (g1.to_affine(), g2.to_affine());
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1a * alpha).to_affine(),
        beta_g1: (g1a * beta).to_affine(),
        beta_g2: (g2a * beta).to_affine(),
        gamma_g2: (g2a * gamma).to_affine(),
        delta_g1: (g1a * delta).to_affine(),
        delta_g2: (g2a * delta).to_affine(),
        ic: g1_products.mul_all(&ic_scalars)?,
    };
    progress(Phase::Query {
        name: "ic",
        points: vk.ic.len(),
    });
    vk.write(&mut *out)?;

    // H: g1 (tau^i t(tau) / delta) for i < m - 1, with t(tau) = tau^m - 1
    let coeff = (tau.pow_vartime([m as u64]) - Scalar::ONE) * delta_inv;
    let h_len = m - 1;
    write_query(out, "h", h_len, &g1_products, progress, |range| {
        let mut s = vec![Scalar::ZERO; range.len()];
        s.par_chunks_mut(1 << 12).enumerate().for_each(|(k, part)| {
            let first = range.start + (k << 12);
            let mut p = tau.pow_vartime([first as u64]) * coeff;
            for x in part {
                *x = p;
                p *= tau;
            }
        });
        s
    })?;
    // L: aux ext
    write_query(out, "l", aux.len(), &g1_products, progress, |r| {
        aux[r].iter().map(|e| e[2]).collect()
    })?;
    // A and B: inputs then aux, points at infinity (zero scalars) dropped
    for (name, k) in [("a", 0usize), ("b_g1", 1)] {
        let nonzero = nonzero_scalars(&inputs, &aux, k);
        write_query(out, name, nonzero.len(), &g1_products, progress, |r| {
            nonzero[r].to_vec()
        })?;
    }
    let nonzero = nonzero_scalars(&inputs, &aux, 1);
    write_query(out, "b_g2", nonzero.len(), &g2_products, progress, |r| {
        nonzero[r].to_vec()
    })?;
    Ok(vk)
}

/// A variable's [a, b, c] evaluated at tau.
type Evals = [Scalar; 3];

/// Every variable's [a, b, c] evaluated at tau (through the Lagrange coefficients of
/// `domain`, the inputs' `input * 0 = 0` rows included): the inputs', then the aux
/// variables'. An error when the circuit synthesises otherwise than it counted.
fn evaluate(
    circuit: &dyn BlankCircuit,
    count: &Counter,
    domain: Domain,
    tau: Scalar,
) -> Result<(Vec<Evals>, Vec<Evals>), SynthesisError> {
    let mut lagrange = powers(tau, domain.m);
    info_span!("lagrange", m = domain.m).in_scope(|| Twiddles::new(domain).ifft(&mut lagrange));
    let mut acc = Accumulator {
        lagrange: &lagrange,
        row: 0,
        inputs: Vec::with_capacity(count.inputs),
        aux: Vec::with_capacity(count.aux),
    };
    let constraints = count.constraints + count.inputs;
    info_span!("accumulate", constraints).in_scope(|| -> Result<(), SynthesisError> {
        acc.alloc_input(|| "", || Ok(Scalar::ONE))?;
        circuit.accumulate(&mut acc)
    })?;
    if (acc.inputs.len(), acc.aux.len(), acc.row) != (count.inputs, count.aux, count.constraints) {
        return Err(other(format!(
            "the circuit synthesised differently twice: {} inputs, {} aux, {} constraints, then {}, {}, {}",
            count.inputs, count.aux, count.constraints,
            acc.inputs.len(), acc.aux.len(), acc.row
        )));
    }
    for (i, e) in acc.inputs.iter_mut().enumerate() {
        e[0] += lagrange[count.constraints + i];
    }
    Ok((acc.inputs, acc.aux))
}

/// Slot `k` of every input's then every aux variable's evaluations, zeros left out (their
/// points would be the identity, which bellperson drops from A and B).
fn nonzero_scalars(inputs: &[[Scalar; 3]], aux: &[[Scalar; 3]], k: usize) -> Vec<Scalar> {
    inputs
        .iter()
        .chain(aux)
        .map(|e| e[k])
        .filter(|s| !bool::from(s.is_zero()))
        .collect()
}

/// Writes a query of `len` points as bellperson does (a big-endian u32 count, then each point
/// uncompressed), computing the scalars of each chunk with `scalars(range)`.
fn write_query<G>(
    out: &mut dyn Write,
    name: &'static str,
    len: usize,
    products: &Products<'_, G>,
    progress: &mut dyn FnMut(Phase),
    scalars: impl Fn(std::ops::Range<usize>) -> Vec<Scalar>,
) -> Result<(), SynthesisError>
where
    G: OnDevice,
    <G as PrimeCurve>::Affine: UncompressedEncoding + GroupEncoding + DeviceElem,
{
    progress(Phase::Query { name, points: len });
    let _span = info_span!("query", name, points = len).entered();
    let count = u32::try_from(len).map_err(|_| other(format!("{name} has {len} points")))?;
    out.write_all(&count.to_be_bytes())?;
    let mut start = 0;
    while start < len {
        let range = start..(start + CHUNK).min(len);
        let points = products.mul_all(&scalars(range.clone()))?;
        let width = std::mem::size_of::<
            <<G as PrimeCurve>::Affine as UncompressedEncoding>::Uncompressed,
        >();
        let mut bytes = vec![0u8; points.len() * width];
        bytes
            .par_chunks_mut(width)
            .zip(points.par_iter())
            .for_each(|(b, p)| b.copy_from_slice(p.to_uncompressed().as_ref()));
        out.write_all(&bytes)?;
        start = range.end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::synthetic::Shape;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    /// The streamed file equals bellperson's parameters written whole, for shapes with and
    /// without public inputs, across a domain boundary, and across several write chunks.
    #[test]
    fn streamed_parameters_equal_bellpersons_file() {
        for (k, (squarings, inputs, linear)) in
            [(1, 0, 0), (3, 5, 1), (61, 1, 0), (62, 1, 0), (300, 3, 40)]
                .into_iter()
                .enumerate()
        {
            let shape = Shape {
                x: None,
                squarings,
                inputs,
                linear,
            };
            let seed = 2000 + k as u64;
            let theirs = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
                shape.clone(),
                &mut ChaCha8Rng::seed_from_u64(seed),
            )
            .expect("bellperson generates");
            let mut want = Vec::new();
            theirs.write(&mut want).expect("serialise");
            let mut got = Vec::new();
            let mut phases = Vec::new();
            let vk = write_random_parameters(
                &shape,
                &mut ChaCha8Rng::seed_from_u64(seed),
                &mut got,
                &ProductsOn::Cpu,
                &mut |p| phases.push(p),
            )
            .expect("streams");
            assert!(got == want, "shape {k}: the streamed file differs");
            assert!(vk == theirs.vk, "shape {k}: verifying key");
            assert_eq!(phases.first(), Some(&Phase::Counting));
            assert_eq!(
                phases
                    .iter()
                    .filter(|p| matches!(p, Phase::Query { .. }))
                    .count(),
                6
            );
        }
    }

    /// A variable in no constraint is refused, as bellperson refuses it.
    #[test]
    fn an_unconstrained_variable_is_refused() {
        let shape = Shape {
            x: None,
            squarings: 0,
            inputs: 0,
            linear: 0,
        };
        let err = write_random_parameters(
            &shape,
            &mut ChaCha8Rng::seed_from_u64(1),
            &mut Vec::new(),
            &ProductsOn::Cpu,
            &mut |_| {},
        )
        .expect_err("x is in no constraint");
        assert!(matches!(err, SynthesisError::UnconstrainedVariable));
    }
}
