//! Constraint names: which gadget a row of a recorded circuit comes from.
//!
//! Recordings keep no names (a 130M-row circuit would carry gigabytes of strings). When a
//! witness fails a row ([`crate::Assignment::first_unsatisfied`]), [`constraint_path`] runs
//! the circuit's structure once more, counting `enforce` calls, and returns the namespace path
//! of that row, e.g. `challenge_3/labeling_layer_2/sha256/compression_17/and_5`.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;

/// A constraint system that keeps only the namespace stack and a row count, and remembers
/// the path of one row.
///
/// Like [`crate::RecordingCs`] it never runs allocation closures, and it numbers rows in the
/// same order: one row per `enforce`, in call order. (No Filecoin circuit extends a
/// constraint system, so extensibility does not change that order.)
struct NamingCs {
    stack: Vec<String>,
    rows: usize,
    inputs: usize,
    want: usize,
    found: Option<String>,
}

impl ConstraintSystem<Scalar> for NamingCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Ok(Variable::new_unchecked(Index::Aux(0)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, _a: LA, _b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if self.rows == self.want {
            let mut path = self.stack.join("/");
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(&annotation().into());
            self.found = Some(path);
        }
        self.rows += 1;
    }

    fn push_namespace<NR, N>(&mut self, name_fn: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        // Names are built only while the wanted row can still be ahead.
        let name = if self.found.is_none() {
            name_fn().into()
        } else {
            String::new()
        };
        self.stack.push(name);
    }

    fn pop_namespace(&mut self) {
        self.stack.pop();
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// The namespace path of row `row` of `circuit`, numbered as a recording numbers them: the
/// circuit's constraints in order, then one row per public input (ONE first), which
/// bellperson appends. `None` when the circuit has fewer rows (a recording of another shape).
///
/// Runs the circuit's structure once (no witness closures): for a large circuit that is the
/// cost of a recording without its matrices, so call it only on the failure path.
pub fn constraint_path<C: Circuit<Scalar>>(
    circuit: C,
    row: usize,
) -> Result<Option<String>, SynthesisError> {
    let mut cs = NamingCs {
        stack: Vec::new(),
        rows: 0,
        inputs: 1,
        want: row,
        found: None,
    };
    circuit.synthesize(&mut cs)?;
    if cs.found.is_some() {
        return Ok(cs.found);
    }
    let input = row - cs.rows;
    Ok((input < cs.inputs).then(|| format!("input constraint of public input {input}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Chain;

    impl Circuit<Scalar> for Chain {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(3)))?;
            let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9)))?;
            let mut outer = cs.namespace(|| "outer");
            outer.enforce(|| "square", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            let mut inner = outer.namespace(|| "inner");
            inner.enforce(|| "again", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }

    #[test]
    fn rows_are_named_by_their_namespaces_then_inputs() {
        assert_eq!(
            constraint_path(Chain, 0).unwrap().as_deref(),
            Some("outer/square")
        );
        assert_eq!(
            constraint_path(Chain, 1).unwrap().as_deref(),
            Some("outer/inner/again")
        );
        assert_eq!(
            constraint_path(Chain, 2).unwrap().as_deref(),
            Some("input constraint of public input 0")
        );
        assert_eq!(
            constraint_path(Chain, 3).unwrap().as_deref(),
            Some("input constraint of public input 1")
        );
        assert_eq!(constraint_path(Chain, 4).unwrap(), None);
    }
}
