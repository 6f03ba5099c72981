//! The circuit's QAP as Groth16's parameter generation reads it: for every variable, the
//! constraints it appears in within A, B and C, with their coefficients.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;

/// `(coefficient, constraint)` pairs of one variable in one of A, B, C.
pub type Terms = Vec<(Scalar, usize)>;

/// A blank circuit's constraints, by variable (bellperson's `KeypairAssembly`, which is
/// private to it). Invariant: every list of a kind (inputs or aux) has one entry per
/// variable of that kind, and every constraint index is below `num_constraints`.
#[derive(Default)]
pub struct Assembly {
    /// Public inputs, ONE included.
    pub num_inputs: usize,
    /// Private variables.
    pub num_aux: usize,
    /// Constraints so far.
    pub num_constraints: usize,
    /// A, B, C terms of each input.
    pub inputs: [Vec<Terms>; 3],
    /// A, B, C terms of each aux variable.
    pub aux: [Vec<Terms>; 3],
}

impl ConstraintSystem<Scalar> for Assembly {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    /// Not extensible, as bellperson's generator: synthesis must be one sequential pass.
    fn is_extensible() -> bool {
        false
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.iter_mut().for_each(|t| t.push(Vec::new()));
        self.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.iter_mut().for_each(|t| t.push(Vec::new()));
        self.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let row = self.num_constraints;
        let lcs = [
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        ];
        for (kind, lc) in lcs.iter().enumerate() {
            for (var, coeff) in lc.iter() {
                match var.get_unchecked() {
                    Index::Input(i) => self.inputs[kind][i].push((*coeff, row)),
                    Index::Aux(i) => self.aux[kind][i].push((*coeff, row)),
                }
            }
        }
        self.num_constraints += 1;
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
