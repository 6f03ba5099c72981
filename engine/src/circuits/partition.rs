//! One partition's circuit, whatever its kind: the object-safe [`PartitionCircuit`] every
//! circuit builder returns, when its synthesis spreads over the pool, the check that its
//! witness satisfies it, and what a request turns into ([`ProofPlan`]).

use bellpepper_core::Circuit;
use bellperson::groth16::{self, Parameters};
use blstrs::{Bls12, Scalar};
use cuzk_pce::{Assignment, R1cs};

use crate::error::{catch_panic, Error, Result};
use crate::kind::RegisteredProof;

/// One partition's circuit, ready to be synthesised. Object-safe so that partitions of every
/// kind and shape travel through the same queues.
pub trait PartitionCircuit: Send {
    /// A copy of this circuit (a partition that failed on a device is synthesised again from
    /// a copy; the circuit itself holds only the vanilla proof data).
    fn clone_box(&self) -> Box<dyn PartitionCircuit>;

    /// Synthesises the circuit: witness, constraint evaluations and densities.
    fn synthesize(self: Box<Self>) -> Result<Assignment>;

    /// Computes only the witness: `(inputs with ONE first, aux)`.
    fn witness(self: Box<Self>) -> Result<(Vec<Scalar>, Vec<Scalar>)>;

    /// The same witness as [`PartitionCircuit::witness`], computed on several threads where
    /// the circuit allows it (PoRep: each layer's label of each challenge on its own thread,
    /// see `porep_witness`). For a partition that is
    /// alone on the host: beside other syntheses the cores are busy already.
    fn witness_parallel(self: Box<Self>) -> Result<(Vec<Scalar>, Vec<Scalar>)> {
        self.witness()
    }

    /// Synthesises the circuit and checks every constraint on the way, holding only the
    /// witness: for production-size partitions whose full assignment would not fit.
    fn check(self: Box<Self>) -> Result<cuzk_pce::CheckReport>;

    /// Records the constraint structure (allocation closures are not run).
    fn record(self: Box<Self>) -> Result<R1cs>;

    /// The namespace path of constraint `row`, numbered as [`PartitionCircuit::record`]
    /// numbers rows (`None` if the circuit has no such row or cannot be run). Runs the
    /// circuit's structure once: for error reports only.
    fn constraint_path(self: Box<Self>, row: usize) -> Option<String>;

    /// Proves the circuit with bellperson 0.27's `create_proof` and the given `r`, `s`.
    ///
    /// This is the reference implementation every cuzk backend must match byte for byte;
    /// tests and benchmarks use it as the oracle.
    fn prove_with_bellperson(
        self: Box<Self>,
        params: &Parameters<Bls12>,
        r: Scalar,
        s: Scalar,
    ) -> Result<groth16::Proof<Bls12>>;
}

/// Whether a witness on several threads ([`PartitionCircuit::witness_parallel`]) is worth it
/// on this host: rayon's pool has at least 4 threads. Measured: on 32 cores a PoRep 2 KiB
/// job's latency fell from 1.0-1.3 s to 0.71-0.93 s; on the 2-vCPU build machine its PCE
/// synthesis rose from 0.78 to 1.08 s.
pub fn parallel_witness_pays() -> bool {
    rayon::current_num_threads() >= 4
}

/// Constraint rows from which a partition's witness, evaluation and check always spread over
/// the synthesis pool, even beside other syntheses. Below it (2 KiB to 512 MiB sectors, at
/// most a few million rows) a partition runs on its worker's thread unless it is alone:
/// many small partitions fill the cores by themselves. A 32 GiB PoRep partition
/// (130M rows) on its worker's thread took 55 s beside two others on 16 cores, against 10.4 s
/// alone on the pool; its pieces (one labeling of one challenge is about 0.2% of it) are
/// small enough that the pool's threads share them between partitions.
pub const LARGE_PARTITION_ROWS: usize = 1 << 24;

/// Whether a partition of `rows` constraint rows is synthesised on the pool
/// ([`PartitionCircuit::witness_parallel`] and the parallel evaluation and check), given
/// whether it is the only partition in synthesis: alone or large, on a host where the pool
/// pays ([`parallel_witness_pays`]).
pub fn synthesize_on_pool(rows: usize, alone: bool) -> bool {
    parallel_witness_pays() && (alone || rows >= LARGE_PARTITION_ROWS)
}

/// Adapts any bellpepper-core circuit to [`PartitionCircuit`].
pub struct CircuitBox<C>(pub C);

impl<C: Circuit<Scalar> + Send + Clone + 'static> PartitionCircuit for CircuitBox<C> {
    fn clone_box(&self) -> Box<dyn PartitionCircuit> {
        Box::new(CircuitBox(self.0.clone()))
    }

    fn synthesize(self: Box<Self>) -> Result<Assignment> {
        catch_panic("circuit synthesis", || Ok(cuzk_pce::synthesize(self.0)?))
    }

    fn witness(self: Box<Self>) -> Result<(Vec<Scalar>, Vec<Scalar>)> {
        catch_panic("witness synthesis", || Ok(cuzk_pce::witness(self.0)?))
    }

    fn check(self: Box<Self>) -> Result<cuzk_pce::CheckReport> {
        catch_panic("constraint check", || Ok(cuzk_pce::check(self.0)?))
    }

    fn record(self: Box<Self>) -> Result<R1cs> {
        catch_panic("circuit recording", || Ok(cuzk_pce::record(self.0)?))
    }

    fn constraint_path(self: Box<Self>, row: usize) -> Option<String> {
        catch_panic("naming a constraint", || {
            Ok(cuzk_pce::constraint_path(self.0, row).ok().flatten())
        })
        .ok()
        .flatten()
    }

    fn prove_with_bellperson(
        self: Box<Self>,
        params: &Parameters<Bls12>,
        r: Scalar,
        s: Scalar,
    ) -> Result<groth16::Proof<Bls12>> {
        groth16::create_proof(self.0, params, r, s).map_err(|e| Error::Prover {
            partition: 0,
            backend: "bellperson".into(),
            reason: e.to_string(),
        })
    }
}

/// Refuses an assignment that does not satisfy its circuit: a tampered vanilla proof, or one
/// that does not belong to the request's public data. The error is invalid input (never
/// worth a retry) and names the partition, the first failing row and its gadget path
/// (found by running `circuit`, a copy of the partition's circuit, once more).
///
/// `parallel`: check the rows on the current rayon pool (see
/// [`cuzk_pce::Assignment::first_unsatisfied`]).
pub fn check_satisfied(
    circuit: Box<dyn PartitionCircuit>,
    assignment: &Assignment,
    partition: usize,
    parallel: bool,
) -> Result<()> {
    let first = tracing::info_span!(
        "check_constraints",
        partition,
        rows = assignment.num_constraints()
    )
    .in_scope(|| assignment.first_unsatisfied(parallel));
    let Some(row) = first else {
        return Ok(());
    };
    let name = circuit
        .constraint_path(row)
        .unwrap_or_else(|| "unnamed".into());
    Err(Error::InvalidRequest(format!(
        "partition {partition}: the witness does not satisfy constraint {row} ({name}) of {} rows; the vanilla proof is corrupt or does not match its public data",
        assignment.num_constraints()
    )))
}

/// One partition of a proof: its circuit and the public inputs a verifier will use.
pub struct PartitionJob {
    /// Index of the partition within the proof (0-based).
    pub index: usize,
    /// Public inputs, without the leading ONE, as the verifier computes them.
    pub public_inputs: Vec<Scalar>,
    /// The circuit to synthesise.
    pub circuit: Box<dyn PartitionCircuit>,
}

/// What a request turns into: the parameter set it needs and its partitions in order.
pub struct ProofPlan {
    /// The registered proof being produced.
    pub proof: RegisteredProof,
    /// The parameter-cache identifier of the circuit (file `v28-<identifier>.params`).
    pub params_identifier: String,
    /// Partitions, in index order; the proof is their concatenation.
    pub partitions: Vec<PartitionJob>,
    /// A blank circuit of the same shape, for recording the constraint system (PCE).
    pub blank: Box<dyn PartitionCircuit>,
    /// Non-interactive PoRep: the partition proofs are returned as one SnarkPack aggregate
    /// bound to this ([`crate::aggregate`]); `None`: as their concatenation.
    pub aggregation: Option<crate::aggregate::Aggregation>,
}

impl ProofPlan {
    /// The identity of the circuit shape: all partitions of all requests with the same
    /// identity share one constraint structure. It includes the engine's version, so a
    /// recording made by another build (whose Filecoin circuits may differ) is never reused.
    pub fn shape_identity(&self) -> String {
        format!(
            "{}-{}-v{}-{}-cuzk{}",
            self.proof.kind,
            self.proof.sector_size,
            crate::param_file::PARAMS_VERSION,
            self.params_identifier,
            env!("CARGO_PKG_VERSION")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{synthesize_on_pool, LARGE_PARTITION_ROWS};

    fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool")
            .install(f)
    }

    /// A production-size partition spreads over the pool even beside other syntheses; a
    /// small one only when alone; neither where the pool is too small to pay.
    #[test]
    fn large_partitions_always_spread_small_ones_only_alone() {
        let small = 1 << 13;
        let large = 1 << 27;
        assert!(large >= LARGE_PARTITION_ROWS && small < LARGE_PARTITION_ROWS);
        let on_16 = in_pool(16, || {
            [
                synthesize_on_pool(small, true),
                synthesize_on_pool(small, false),
                synthesize_on_pool(large, true),
                synthesize_on_pool(large, false),
            ]
        });
        assert_eq!(on_16, [true, false, true, true]);
        let on_2 = in_pool(2, || {
            [
                synthesize_on_pool(small, true),
                synthesize_on_pool(large, false),
            ]
        });
        assert_eq!(on_2, [false, false]);
    }
}
