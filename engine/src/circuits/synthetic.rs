//! Synthetic circuits of chosen shapes, for tests and benchmarks that prove or generate
//! parameters for circuits other than Filecoin's.

use bellpepper_core::{num::AllocatedNum, Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;

/// `squarings` chained squarings of a private x, `inputs` public inputs each tied to the
/// chain, `linear` linear-only rows. (bellperson's parameter generator refuses variables
/// that appear in no constraint, so every variable is used.) Constraints: `squarings +
/// inputs + linear`, plus one per input and one for ONE that bellperson appends.
#[derive(Clone)]
pub struct Shape {
    /// The private value (`None` for the blank circuit used to generate parameters).
    pub x: Option<Scalar>,
    /// Chained squarings.
    pub squarings: usize,
    /// Public inputs.
    pub inputs: usize,
    /// Linear-only rows.
    pub linear: usize,
}

impl Circuit<Scalar> for Shape {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut cur = AllocatedNum::alloc(cs.namespace(|| "x"), || {
            self.x.ok_or(SynthesisError::AssignmentMissing)
        })?;
        let mut chain = vec![cur.clone()];
        for i in 0..self.squarings {
            cur = cur.square(cs.namespace(|| format!("sq{i}")))?;
            chain.push(cur.clone());
        }
        for i in 0..self.inputs {
            let v = chain[i % chain.len()].clone();
            let inp = AllocatedNum::alloc_input(cs.namespace(|| format!("in{i}")), || {
                v.get_value().ok_or(SynthesisError::AssignmentMissing)
            })?;
            cs.enforce(
                || format!("in{i} = v"),
                |lc| lc + inp.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + v.get_variable(),
            );
        }
        for i in 0..self.linear {
            let v = &chain[i % chain.len()];
            cs.enforce(
                || format!("lin{i}"),
                |lc| lc + v.get_variable() + v.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + (Scalar::from(2), v.get_variable()),
            );
        }
        Ok(())
    }
}

/// A circuit with no variable and no constraint: only bellperson's row for ONE, so its
/// domain has one point and its H query is empty.
#[derive(Clone, Copy)]
pub struct Empty;

impl Circuit<Scalar> for Empty {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, _: &mut CS) -> Result<(), SynthesisError> {
        Ok(())
    }
}
