//! Full synthesis: run a circuit and keep everything a Groth16 prover needs.
//!
//! [`SynthesisCs`] reproduces bellperson 0.27's `ProvingAssignment` exactly: the same input
//! and aux assignments, the same per-constraint evaluations of the A, B and C linear
//! combinations, the same density bit sets, and the same `extend` semantics. [`synthesize`]
//! adds what bellperson's prover adds around it: the constant ONE as input 0 and one
//! constraint `input_i * 0 = 0` per input after the circuit, so that the parameters'
//! input queries are linearly independent.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use crate::density::Density;
use crate::error::Result;

/// The witness of one circuit and the evaluations of its constraints.
///
/// Invariants: `input[0] == ONE`; `a`, `b`, `c` have one entry per constraint, including the
/// trailing `input_i * 0 = 0` constraints; `b_input_density.len() == input.len()`;
/// `a_aux_density.len() == b_aux_density.len() == aux.len()`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Assignment {
    /// Public inputs, ONE first.
    pub input: Vec<Scalar>,
    /// Private (auxiliary) variables, in allocation order.
    pub aux: Vec<Scalar>,
    /// Evaluation of each constraint's A linear combination.
    pub a: Vec<Scalar>,
    /// Evaluation of each constraint's B linear combination.
    pub b: Vec<Scalar>,
    /// Evaluation of each constraint's C linear combination.
    pub c: Vec<Scalar>,
    /// Aux variables that appear in some A combination.
    pub a_aux_density: Density,
    /// Inputs that appear in some B combination.
    pub b_input_density: Density,
    /// Aux variables that appear in some B combination.
    pub b_aux_density: Density,
}

impl Assignment {
    /// Number of constraints (rows), including the input constraints.
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// The public inputs a verifier sees: every input but the leading ONE.
    pub fn public_inputs(&self) -> &[Scalar] {
        &self.input[1..]
    }

    /// The first row whose evaluations break `a * b = c`, if any: a witness that does not
    /// satisfy its circuit (a tampered or mismatched vanilla proof). Rows whose `a` or `b` is
    /// 0 or 1 (most of a Filecoin witness's) cost a comparison, the others one product.
    /// `parallel`: spread the rows over the current rayon pool (else the calling thread only,
    /// as [`crate::evaluate_sequential`] does).
    pub fn first_unsatisfied(&self, parallel: bool) -> Option<usize> {
        use rayon::prelude::*;
        let row_holds = |i: usize| {
            let (a, b, c) = (&self.a[i], &self.b[i], &self.c[i]);
            if bool::from(a.is_zero()) || bool::from(b.is_zero()) {
                bool::from(c.is_zero())
            } else if *a == Scalar::ONE {
                b == c
            } else if *b == Scalar::ONE {
                a == c
            } else {
                *a * b == *c
            }
        };
        let rows = self.a.len().min(self.b.len()).min(self.c.len());
        if self.a.len() != self.b.len() || self.b.len() != self.c.len() {
            return Some(rows);
        }
        if parallel {
            (0..rows).into_par_iter().find_first(|&i| !row_holds(i))
        } else {
            (0..rows).find(|&i| !row_holds(i))
        }
    }
}

/// A constraint system that records the assignment and the A/B/C evaluations.
#[derive(Debug, Default)]
pub struct SynthesisCs {
    asg: Assignment,
}

impl SynthesisCs {
    /// Consumes the system and returns what it recorded.
    pub fn into_assignment(self) -> Assignment {
        self.asg
    }
}

/// Evaluates `lc` against the assignment, marking the variables it uses in the densities.
/// Zero coefficients neither contribute nor count as use, as in bellperson.
#[inline]
pub(crate) fn eval(
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
    input: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += mul_coeff(input[i], coeff);
        if let Some(d) = input_density.as_deref_mut() {
            d.set(i);
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += mul_coeff(aux[i], coeff);
        if let Some(d) = aux_density.as_deref_mut() {
            d.set(i);
        }
    }
    acc
}

#[inline]
fn mul_coeff(value: Scalar, coeff: &Scalar) -> Scalar {
    if *coeff == Scalar::ONE {
        value
    } else {
        value * coeff
    }
}

impl ConstraintSystem<Scalar> for SynthesisCs {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.asg.aux.push(f()?);
        self.asg.a_aux_density.push_unset();
        self.asg.b_aux_density.push_unset();
        Ok(Variable(Index::Aux(self.asg.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.asg.input.push(f()?);
        self.asg.b_input_density.push_unset();
        Ok(Variable(Index::Input(self.asg.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let g = &mut self.asg;
        let av = eval(&a, None, Some(&mut g.a_aux_density), &g.input, &g.aux);
        let bv = eval(
            &b,
            Some(&mut g.b_input_density),
            Some(&mut g.b_aux_density),
            &g.input,
            &g.aux,
        );
        let cv = eval(&c, None, None, &g.input, &g.aux);
        g.a.push(av);
        g.b.push(bv);
        g.c.push(cv);
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

    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`, which started with its own ONE input: that ONE is dropped and its
    /// density bit merged, exactly as bellperson's `ProvingAssignment::extend` does.
    fn extend(&mut self, other: &Self) {
        let (g, o) = (&mut self.asg, &other.asg);
        g.a_aux_density.extend(&o.a_aux_density, false);
        g.b_input_density.extend(&o.b_input_density, true);
        g.b_aux_density.extend(&o.b_aux_density, false);
        g.a.extend_from_slice(&o.a);
        g.b.extend_from_slice(&o.b);
        g.c.extend_from_slice(&o.c);
        g.input.extend_from_slice(o.input.get(1..).unwrap_or(&[]));
        g.aux.extend_from_slice(&o.aux);
    }
}

/// Synthesises `circuit` the way bellperson's prover does: ONE as input 0, the circuit, then
/// one `input_i * 0 = 0` constraint per input.
#[tracing::instrument(level = "debug", skip_all)]
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Assignment> {
    let mut cs = SynthesisCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.asg.input.len() {
        cs.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
    }
    let asg = cs.into_assignment();
    tracing::debug!(
        inputs = asg.input.len(),
        aux = asg.aux.len(),
        constraints = asg.num_constraints(),
        "synthesised"
    );
    Ok(asg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::boolean::{AllocatedBit, Boolean};
    use bellpepper_core::num::AllocatedNum;

    /// x^3 + x + 5 = y with y public, plus a boolean and a packed sum, so every kind of
    /// column (input, aux, A-only, B-used) appears.
    struct Cubic(Option<u64>);

    impl Circuit<Scalar> for Cubic {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> std::result::Result<(), SynthesisError> {
            let x = AllocatedNum::alloc(cs.namespace(|| "x"), || {
                self.0
                    .map(Scalar::from)
                    .ok_or(SynthesisError::AssignmentMissing)
            })?;
            let x2 = x.square(cs.namespace(|| "x2"))?;
            let x3 = x2.mul(cs.namespace(|| "x3"), &x)?;
            let y = AllocatedNum::alloc_input(cs.namespace(|| "y"), || {
                let v = self.0.ok_or(SynthesisError::AssignmentMissing)?;
                Ok(Scalar::from(v * v * v + v + 5))
            })?;
            cs.enforce(
                || "y = x3 + x + 5",
                |lc| lc + x3.get_variable() + x.get_variable() + (Scalar::from(5), CS::one()),
                |lc| lc + CS::one(),
                |lc| lc + y.get_variable(),
            );
            let bit = AllocatedBit::alloc(cs.namespace(|| "bit"), self.0.map(|v| v & 1 == 1))?;
            let _ = Boolean::from(bit);
            Ok(())
        }
    }

    #[test]
    fn cubic_assignment_matches_hand_computation() {
        let asg = synthesize(Cubic(Some(3))).expect("synthesis");
        assert_eq!(asg.input, vec![Scalar::ONE, Scalar::from(35)]);
        assert_eq!(asg.aux[0], Scalar::from(3));
        // every constraint holds: a * b == c
        for i in 0..asg.num_constraints() {
            assert_eq!(asg.a[i] * asg.b[i], asg.c[i], "constraint {i}");
        }
        // two inputs -> two trailing input constraints with a = input, b = c = 0
        let n = asg.num_constraints();
        assert_eq!(asg.a[n - 1], Scalar::from(35));
        assert_eq!(asg.b[n - 1], Scalar::ZERO);
        assert!(asg.b_input_density.get(0), "ONE is used in B");
        assert_eq!(asg.b_input_density.len(), 2);
        assert_eq!(asg.a_aux_density.len(), asg.aux.len());
    }

    #[test]
    fn a_broken_row_is_found_first_and_named() {
        let mut asg = synthesize(Cubic(Some(3))).expect("synthesis");
        assert_eq!(asg.first_unsatisfied(true), None);
        assert_eq!(asg.first_unsatisfied(false), None);
        // tamper with the evaluations of rows 1 and 2 (x3 = x2 * x, then the sum)
        asg.c[2] += Scalar::ONE;
        asg.c[1] += Scalar::ONE;
        assert_eq!(asg.first_unsatisfied(true), Some(1));
        assert_eq!(asg.first_unsatisfied(false), Some(1));
        let name = crate::constraint_path(Cubic(None), 1).unwrap().unwrap();
        assert!(name.starts_with("x3/"), "{name}");
        // rows a 0 or 1 decides are checked too
        let mut asg = synthesize(Cubic(Some(3))).expect("synthesis");
        let n = asg.num_constraints();
        asg.c[n - 1] = Scalar::ONE; // input row: input * 0 must be 0
        assert_eq!(asg.first_unsatisfied(true), Some(n - 1));
    }

    #[test]
    fn missing_witness_is_an_error() {
        assert!(synthesize(Cubic(None)).is_err());
    }

    #[test]
    fn extend_equals_sequential_synthesis() {
        let mut whole = SynthesisCs::new();
        whole.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        Cubic(Some(2)).synthesize(&mut whole).unwrap();
        Cubic(Some(7)).synthesize(&mut whole).unwrap();

        let mut parts = SynthesisCs::new();
        parts.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
        for v in [2, 7] {
            let mut child = SynthesisCs::new();
            child.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
            Cubic(Some(v)).synthesize(&mut child).unwrap();
            parts.extend(&child);
        }
        assert_eq!(whole.into_assignment(), parts.into_assignment());
    }
}
