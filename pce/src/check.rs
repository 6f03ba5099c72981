//! Checking a circuit's constraints while it is synthesised, keeping only the witness: the
//! way to check a production-size partition (130M constraints at 32 GiB) whose A/B/C
//! evaluations would not fit beside it.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use crate::error::Result;
use crate::synthesis::eval;

/// What [`check`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReport {
    /// Public inputs, without the leading ONE.
    pub public_inputs: Vec<Scalar>,
    /// Private (auxiliary) variables.
    pub aux: usize,
    /// Constraints, counted as [`crate::synthesize`] counts rows (with one `input_i * 0 = 0`
    /// row per input, ONE included).
    pub constraints: usize,
    /// The first row whose `a * b = c` fails, numbered as [`crate::synthesize`] numbers rows.
    pub first_unsatisfied: Option<usize>,
}

/// A constraint system that evaluates each constraint as it is enforced and keeps only the
/// witness, the row count and the first failing row.
#[derive(Debug, Default)]
pub struct CheckingCs {
    input: Vec<Scalar>,
    aux: Vec<Scalar>,
    rows: usize,
    first_unsatisfied: Option<usize>,
}

impl ConstraintSystem<Scalar> for CheckingCs {
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
        self.aux.push(f()?);
        Ok(Variable(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input.push(f()?);
        Ok(Variable(Index::Input(self.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let value = |lc: LinearCombination<Scalar>| eval(&lc, None, None, &self.input, &self.aux);
        let av = value(a(LinearCombination::zero()));
        let bv = value(b(LinearCombination::zero()));
        let cv = value(c(LinearCombination::zero()));
        if self.first_unsatisfied.is_none() && av * bv != cv {
            self.first_unsatisfied = Some(self.rows);
        }
        self.rows += 1;
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

    /// Appends `other` (checked against its own variables, which started with its own ONE),
    /// numbering its rows after ours, as [`crate::SynthesisCs`] does.
    fn extend(&mut self, other: &Self) {
        if self.first_unsatisfied.is_none() {
            self.first_unsatisfied = other.first_unsatisfied.map(|r| r + self.rows);
        }
        self.rows += other.rows;
        self.input
            .extend_from_slice(other.input.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
    }
}

/// Synthesises `circuit` as [`crate::synthesize`] does and checks every constraint on the
/// way, holding only the witness (32 bytes per variable) instead of three evaluations per row.
#[tracing::instrument(level = "debug", skip_all)]
pub fn check<C: Circuit<Scalar>>(circuit: C) -> Result<CheckReport> {
    let mut cs = CheckingCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    // the `input_i * 0 = 0` rows always hold
    cs.rows += cs.input.len();
    Ok(CheckReport {
        public_inputs: cs.input.split_off(1),
        aux: cs.aux.len(),
        constraints: cs.rows,
        first_unsatisfied: cs.first_unsatisfied,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::num::AllocatedNum;

    /// x * x = y with y public, x^3 = z private.
    #[derive(Clone)]
    struct Cube {
        x: Scalar,
        y: Scalar,
        z: Scalar,
    }

    impl Circuit<Scalar> for Cube {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> std::result::Result<(), SynthesisError> {
            let x = AllocatedNum::alloc(cs.namespace(|| "x"), || Ok(self.x))?;
            let y = AllocatedNum::alloc_input(cs.namespace(|| "y"), || Ok(self.y))?;
            let z = AllocatedNum::alloc(cs.namespace(|| "z"), || Ok(self.z))?;
            cs.enforce(
                || "square",
                |lc| lc + x.get_variable(),
                |lc| lc + x.get_variable(),
                |lc| lc + y.get_variable(),
            );
            cs.enforce(
                || "cube",
                |lc| lc + y.get_variable(),
                |lc| lc + x.get_variable(),
                |lc| lc + z.get_variable(),
            );
            Ok(())
        }
    }

    /// The checker agrees with full synthesis on the row count, the public inputs and the
    /// first failing row.
    #[test]
    fn agrees_with_full_synthesis() {
        let three = Scalar::from(3u64);
        for (circuit, bad) in [
            (
                Cube {
                    x: three,
                    y: Scalar::from(9u64),
                    z: Scalar::from(27u64),
                },
                None,
            ),
            (
                Cube {
                    x: three,
                    y: Scalar::from(9u64),
                    z: Scalar::from(26u64),
                },
                Some(1),
            ),
            (
                Cube {
                    x: three,
                    y: Scalar::from(8u64),
                    z: Scalar::from(24u64),
                },
                Some(0),
            ),
        ] {
            let full = crate::synthesize(circuit.clone()).expect("synthesis");
            let report = check(circuit).expect("check");
            assert_eq!(report.constraints, full.num_constraints());
            assert_eq!(report.aux, full.aux.len());
            assert_eq!(report.public_inputs, full.public_inputs());
            assert_eq!(report.first_unsatisfied, full.first_unsatisfied(false));
            assert_eq!(report.first_unsatisfied, bad);
        }
    }

    /// A sub-system merged with `extend` numbers its rows after the parent's.
    #[test]
    fn extended_rows_are_numbered_after_the_parent() {
        let mut parent = CheckingCs::new();
        parent
            .alloc_input(|| "one", || Ok(Scalar::ONE))
            .expect("one");
        parent.enforce(|| "ok", |lc| lc, |lc| lc, |lc| lc);
        let mut child = CheckingCs::new();
        child
            .alloc_input(|| "one", || Ok(Scalar::ONE))
            .expect("one");
        let v = child.alloc(|| "v", || Ok(Scalar::from(2u64))).expect("v");
        child.enforce(|| "ok", |lc| lc, |lc| lc, |lc| lc);
        child.enforce(|| "bad", |lc| lc + v, |lc| lc + v, |lc| lc + v);
        parent.extend(&child);
        assert_eq!(parent.rows, 3);
        assert_eq!(parent.first_unsatisfied, Some(2));
        assert_eq!(parent.aux.len(), 1);
    }
}
