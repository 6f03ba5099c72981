//! Witness-only synthesis: runs the allocation closures, skips every `enforce` (the linear
//! combinations are never even built).

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use crate::error::Result;

/// Collects input and aux assignments only. Same extensibility as [`crate::RecordingCs`].
#[derive(Debug, Default)]
pub struct WitnessCs {
    /// Inputs, ONE first.
    pub input: Vec<Scalar>,
    /// Aux variables.
    pub aux: Vec<Scalar>,
}

impl ConstraintSystem<Scalar> for WitnessCs {
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

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _a: LA, _b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
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

    fn extend(&mut self, other: &Self) {
        self.input
            .extend_from_slice(other.input.get(1..).unwrap_or(&[]));
        self.aux.extend_from_slice(&other.aux);
    }
}

/// Computes `circuit`'s witness: `(inputs with ONE first, aux)`.
#[tracing::instrument(level = "debug", skip_all)]
pub fn witness<C: Circuit<Scalar>>(circuit: C) -> Result<(Vec<Scalar>, Vec<Scalar>)> {
    let mut cs = WitnessCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    Ok((cs.input, cs.aux))
}
