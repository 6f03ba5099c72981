//! One partition's synthesis: the step between a plan ([`crate::circuits::plan`]) and a
//! backend ([`crate::Backend::prove`]). The Engine's synthesis workers run it for every
//! partition they build; tests that hold one backend to another run it directly. It is a
//! step, not a way to prove requests: requests are proved through the Engine.

use blstrs::Scalar;
use cuzk_pce::{Assignment, R1cs};
use tracing::info_span;

use crate::circuits::{check_satisfied, PartitionCircuit};
use crate::error::{Error, Result};

/// Builds partition `partition`'s assignment from its circuit: through the PCE when `r1cs`
/// (the circuit shape's recording) is given (the witness alone, then the recorded
/// constraints evaluated), else by full synthesis. `pool` given, the witness, the
/// evaluation and the check spread over it; `None` runs them on the calling thread (beside
/// other partitions the cores are busy already).
///
/// Invariant: an assignment is returned only when it satisfies every constraint and its
/// public inputs equal `public_inputs` (the ones a verifier derives from the request), so
/// that a proof of it can verify. A witness that breaks a constraint, or public inputs that
/// differ, is the request's fault ([`Error::InvalidRequest`]); a failure to compute the
/// witness or the evaluation is [`Error::Synthesis`], naming `partition`.
pub fn synthesize_partition(
    circuit: Box<dyn PartitionCircuit>,
    r1cs: Option<&R1cs>,
    public_inputs: &[Scalar],
    partition: usize,
    pool: Option<&rayon::ThreadPool>,
) -> Result<Assignment> {
    let parallel = pool.is_some();
    let namer = circuit.clone_box();
    let assignment = match r1cs {
        Some(r1cs) => {
            let witness = info_span!("witness", parallel).in_scope(|| {
                on(pool, || {
                    if parallel {
                        circuit.witness_parallel()
                    } else {
                        circuit.witness()
                    }
                })
            });
            let (input, aux) = in_partition(witness, partition)?;
            // Alone, the rows spread over the pool; beside other partitions, on this thread:
            // in one shared pool every worker's rows queued behind the others' (two GPUs,
            // mixed stream: 24.7-26.1 proofs/s against 26.2-27.5 on the worker's thread;
            // CHANGELOG.md).
            info_span!("matvec", parallel)
                .in_scope(|| {
                    on(pool, || {
                        if parallel {
                            cuzk_pce::evaluate(r1cs, input, aux)
                        } else {
                            cuzk_pce::evaluate_sequential(r1cs, input, aux)
                        }
                    })
                })
                .map_err(|e| Error::Synthesis {
                    partition,
                    reason: format!("constraint evaluation failed: {e}"),
                })?
        }
        None => in_partition(circuit.synthesize(), partition)?,
    };
    // A witness that breaks a constraint is the request's fault, found here once: proving
    // it would only fail verification, attempt after attempt.
    on(pool, || {
        check_satisfied(namer, &assignment, partition, parallel)
    })?;
    if assignment.public_inputs() != public_inputs {
        return Err(Error::InvalidRequest(format!(
            "partition {partition}: the circuit's public inputs differ from the ones a verifier derives; the vanilla proof does not match its public data"
        )));
    }
    Ok(assignment)
}

/// Runs `f` on `pool` (its parallel loops spread over it), or on this thread.
fn on<T: Send>(pool: Option<&rayon::ThreadPool>, f: impl FnOnce() -> T + Send) -> T {
    match pool {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// A synthesis error names the partition it happened in (circuits report partition 0).
fn in_partition<T>(r: Result<T>, partition: usize) -> Result<T> {
    r.map_err(|e| match e {
        Error::Synthesis { reason, .. } => Error::Synthesis { partition, reason },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};

    use super::*;
    use crate::circuits::synthetic::Shape;
    use crate::circuits::CircuitBox;

    fn shape(x: Option<Scalar>) -> Box<dyn PartitionCircuit> {
        Box::new(CircuitBox(Shape {
            x,
            squarings: 9,
            inputs: 3,
            linear: 4,
        }))
    }

    /// x * x = y with y public, and a witness whose y is not x squared.
    #[derive(Clone)]
    struct Broken;
    impl Circuit<Scalar> for Broken {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> std::result::Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
            let y = cs.alloc_input(|| "y", || Ok(Scalar::from(10u64)))?;
            cs.enforce(|| "square", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }

    #[test]
    fn the_pce_and_full_synthesis_give_one_assignment_on_a_thread_or_a_pool() {
        let want = shape(Some(Scalar::from(3u64)))
            .synthesize()
            .expect("synthesis");
        let inputs = want.public_inputs().to_vec();
        let r1cs = shape(None).record().expect("recording");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool");
        for (r1cs, pool) in [
            (None, None),
            (None, Some(&pool)),
            (Some(&r1cs), None),
            (Some(&r1cs), Some(&pool)),
        ] {
            let got = synthesize_partition(shape(Some(Scalar::from(3u64))), r1cs, &inputs, 2, pool)
                .expect("a satisfied circuit");
            assert!(
                got == want,
                "pce {} pool {}",
                r1cs.is_some(),
                pool.is_some()
            );
        }
    }

    #[test]
    fn public_inputs_other_than_the_verifiers_are_the_requests_fault() {
        let mut inputs = shape(Some(Scalar::from(3u64)))
            .synthesize()
            .expect("synthesis")
            .public_inputs()
            .to_vec();
        inputs[1] += Scalar::from(1u64);
        let err = synthesize_partition(shape(Some(Scalar::from(3u64))), None, &inputs, 4, None)
            .expect_err("mismatched public inputs");
        assert!(matches!(err, Error::InvalidRequest(_)), "{err}");
        assert!(err.to_string().contains("partition 4"), "{err}");
    }

    #[test]
    fn a_broken_constraint_is_the_requests_fault_and_names_its_row() {
        let r1cs = Box::new(CircuitBox(Broken)).record().expect("recording");
        for r1cs in [None, Some(&r1cs)] {
            let err = synthesize_partition(
                Box::new(CircuitBox(Broken)),
                r1cs,
                &[Scalar::from(10u64)],
                1,
                None,
            )
            .expect_err("an unsatisfied constraint");
            assert!(matches!(err, Error::InvalidRequest(_)), "{err}");
            let e = err.to_string();
            assert!(e.contains("partition 1") && e.contains("square"), "{e}");
        }
    }

    #[test]
    fn a_witness_that_cannot_be_computed_names_its_partition() {
        let r1cs = shape(None).record().expect("recording");
        for r1cs in [None, Some(&r1cs)] {
            let err =
                synthesize_partition(shape(None), r1cs, &[], 6, None).expect_err("no value for x");
            assert!(
                matches!(err, Error::Synthesis { partition: 6, .. }),
                "{err}"
            );
        }
    }
}
