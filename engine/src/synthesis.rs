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
