//! The proving pipeline for one request, on one backend: plan, load parameters, synthesise
//! and prove each partition, verify, assemble.

use std::time::{Duration, Instant};

use bellperson::groth16::{verify_proof, Proof};
use blstrs::{Bls12, Scalar};
use ff::Field;
use tracing::info_span;

use crate::circuits::{self, ProofPlan};
use crate::error::{Error, Result};
use crate::prover::Backend;
use crate::recordings::PceStore;
use crate::request::ProofRequest;
use crate::srs::{Srs, SrsStore};

/// Bytes of one compressed Groth16 proof (one partition).
pub const PARTITION_PROOF_BYTES: usize = 192;

/// How the randomisers r and s are chosen.
#[derive(Clone, Copy, Debug, Default)]
pub enum Randomness {
    /// Fresh random r, s per partition (what production uses).
    #[default]
    Random,
    /// Fixed r, s for every partition: reproducible proofs, for tests against bellperson.
    Fixed(Scalar, Scalar),
}

/// Options of a proving run.
#[derive(Clone, Debug)]
pub struct ProveOptions {
    /// Choice of r and s.
    pub randomness: Randomness,
    /// Verify every partition proof before returning (default true). A proof that fails is
    /// an error, never an output.
    pub verify: bool,
    /// Synthesise through the PCE (recorded constraints + witness-only synthesis + sparse
    /// products) instead of full synthesis (default true: 1.64x as fast for a 2 KiB PoRep,
    /// the same assignment). Off, each partition is synthesised in full, as bellperson
    /// does; the tests compare the two.
    pub pce: bool,
}

impl Default for ProveOptions {
    fn default() -> Self {
        ProveOptions {
            randomness: Randomness::Random,
            verify: true,
            pce: true,
        }
    }
}

/// Measured durations of a run (wall clock).
#[derive(Clone, Debug, Default)]
pub struct Timings {
    /// Decoding inputs and building circuits.
    pub plan: Duration,
    /// Loading parameters (zero when already loaded).
    pub srs_load: Duration,
    /// Circuit synthesis, summed over partitions, including recording or loading the
    /// circuit's constraint structure the first time a shape is proved (PCE).
    pub synthesis: Duration,
    /// NTT + MSM proving, summed over partitions.
    pub prove: Duration,
    /// Verification, summed over partitions.
    pub verify: Duration,
    /// Whole run.
    pub total: Duration,
}

/// A finished, verified proof.
#[derive(Clone, Debug)]
pub struct ProofOutput {
    /// The partitions' compressed proofs, concatenated in partition order.
    pub bytes: Vec<u8>,
    /// The partition proofs.
    pub partitions: Vec<Proof<Bls12>>,
    /// Public inputs of each partition (without the leading ONE).
    pub public_inputs: Vec<Vec<Scalar>>,
    /// Whether the proofs were verified.
    pub verified: bool,
    /// Timings.
    pub timings: Timings,
}

/// Progress of a run, for progress bars and logs.
#[derive(Clone, Debug)]
pub enum Progress {
    /// Circuits built; this many partitions.
    Planned {
        /// Number of partitions.
        partitions: usize,
    },
    /// Parameters available.
    SrsReady {
        /// Load time (zero if already loaded).
        load: Duration,
    },
    /// A partition started a phase.
    Phase {
        /// Partition index.
        partition: usize,
        /// "synthesis", "prove" or "verify".
        phase: &'static str,
    },
    /// A partition is done.
    PartitionDone {
        /// Partition index.
        partition: usize,
    },
}

/// Proves `request` on `backend` with parameters from `store`.
#[tracing::instrument(name = "request", skip_all, fields(kind = %request.proof.kind, size = %request.proof.sector_size))]
pub fn prove(
    store: &SrsStore,
    backend: &mut dyn Backend,
    request: &ProofRequest,
    opts: &ProveOptions,
    progress: &dyn Fn(Progress),
) -> Result<ProofOutput> {
    let t0 = Instant::now();
    let mut timings = Timings::default();
    let plan = info_span!("plan").in_scope(|| circuits::plan(request))?;
    timings.plan = t0.elapsed();
    progress(Progress::Planned {
        partitions: plan.partitions.len(),
    });
    let t = Instant::now();
    let srs = store.get_by_identifier(request.proof, &plan.params_identifier)?;
    timings.srs_load = t.elapsed();
    progress(Progress::SrsReady {
        load: timings.srs_load,
    });
    let pce = opts.pce.then(|| store.pce());
    let aggregation = plan.aggregation;
    let mut out = prove_plan(plan, &srs, pce, backend, opts, progress, &mut timings)?;
    if let Some(agg) = aggregation {
        let t = Instant::now();
        out.bytes = info_span!("aggregate").in_scope(|| {
            crate::aggregate::aggregate(
                &*store.aggregation_srs()?,
                &srs.pvk,
                &agg,
                &out.partitions,
                &out.public_inputs,
            )
        })?;
        timings.prove += t.elapsed();
    }
    timings.total = t0.elapsed();
    out.timings = timings;
    Ok(out)
}

/// Proves an already-built plan with loaded parameters. The bytes are the concatenated
/// partition proofs, also for a plan whose proof is their aggregate ([`prove`] aggregates).
pub fn prove_plan(
    plan: ProofPlan,
    srs: &Srs,
    pce: Option<&PceStore>,
    backend: &mut dyn Backend,
    opts: &ProveOptions,
    progress: &dyn Fn(Progress),
    timings: &mut Timings,
) -> Result<ProofOutput> {
    let mut rng = rand::rngs::OsRng;
    // Recording (first proof of a shape) or loading the recording counts as synthesis time.
    let t = Instant::now();
    let r1cs = match pce {
        Some(store) => {
            let identity = plan.shape_identity();
            Some(store.get_or_record(&identity, plan.blank)?)
        }
        None => None,
    };
    timings.synthesis += t.elapsed();
    let n = plan.partitions.len();
    let mut proofs = Vec::with_capacity(n);
    let mut inputs = Vec::with_capacity(n);
    let mut bytes = Vec::with_capacity(n * PARTITION_PROOF_BYTES);
    for job in plan.partitions {
        let k = job.index;
        let span = info_span!("partition", index = k);
        let _g = span.enter();
        progress(Progress::Phase {
            partition: k,
            phase: "synthesis",
        });
        let t = Instant::now();
        let namer = job.circuit.clone_box();
        let asg = info_span!("synthesis", pce = r1cs.is_some())
            .in_scope(|| match &r1cs {
                Some(r1cs) => {
                    let (input, aux) = info_span!("witness").in_scope(|| {
                        if crate::circuits::parallel_witness_pays() {
                            job.circuit.witness_parallel()
                        } else {
                            job.circuit.witness()
                        }
                    })?;
                    Ok(info_span!("matvec").in_scope(|| cuzk_pce::evaluate(r1cs, input, aux))?)
                }
                None => job.circuit.synthesize(),
            })
            .map_err(|e| match e {
                Error::Synthesis { reason, .. } => Error::Synthesis {
                    partition: k,
                    reason,
                },
                other => other,
            })?;
        crate::circuits::check_satisfied(namer, &asg, k, true)?;
        timings.synthesis += t.elapsed();
        if asg.public_inputs() != job.public_inputs.as_slice() {
            return Err(Error::InvalidRequest(format!(
                "partition {k}: the circuit's public inputs differ from the ones a verifier derives; the vanilla proof does not match its public data"
            )));
        }
        let (r, s) = match opts.randomness {
            Randomness::Fixed(r, s) => (r, s),
            Randomness::Random => (Scalar::random(&mut rng), Scalar::random(&mut rng)),
        };
        progress(Progress::Phase {
            partition: k,
            phase: "prove",
        });
        let t = Instant::now();
        let proof = backend.prove(srs, asg, r, s, k)?;
        timings.prove += t.elapsed();
        if opts.verify {
            progress(Progress::Phase {
                partition: k,
                phase: "verify",
            });
            let t = Instant::now();
            let ok = info_span!("verify")
                .in_scope(|| verify_proof(&srs.pvk, &proof, &job.public_inputs));
            timings.verify += t.elapsed();
            if !matches!(ok, Ok(true)) {
                return Err(Error::VerificationFailed {
                    what: format!("partition {k} of {} on {}", n, backend.name()),
                });
            }
        }
        proof
            .write(&mut bytes)
            .map_err(|e| Error::io("proof buffer", e))?;
        proofs.push(proof);
        inputs.push(job.public_inputs);
        progress(Progress::PartitionDone { partition: k });
    }
    Ok(ProofOutput {
        bytes,
        partitions: proofs,
        public_inputs: inputs,
        verified: opts.verify,
        timings: Timings::default(),
    })
}

/// Proves any bellpepper-core circuit (not only Filecoin's) with `srs`'s parameters on
/// `backend`, and verifies the proof against the circuit's own public inputs unless
/// `opts.verify` is false. Returns the proof and the public inputs (without ONE).
pub fn prove_circuit<C: bellpepper_core::Circuit<Scalar> + Send>(
    srs: &Srs,
    backend: &mut dyn Backend,
    circuit: C,
    opts: &ProveOptions,
) -> Result<(Proof<Bls12>, Vec<Scalar>)> {
    let asg = cuzk_pce::synthesize(circuit).map_err(|e| Error::Synthesis {
        partition: 0,
        reason: e.to_string(),
    })?;
    let inputs = asg.public_inputs().to_vec();
    let (r, s) = match opts.randomness {
        Randomness::Fixed(r, s) => (r, s),
        Randomness::Random => {
            let mut rng = rand::rngs::OsRng;
            (Scalar::random(&mut rng), Scalar::random(&mut rng))
        }
    };
    let proof = backend.prove(srs, asg, r, s, 0)?;
    if opts.verify && !matches!(verify_proof(&srs.pvk, &proof, &inputs), Ok(true)) {
        return Err(Error::VerificationFailed {
            what: format!("circuit proof on {}", backend.name()),
        });
    }
    Ok((proof, inputs))
}

/// Verifies proof bytes (concatenated partition proofs, or a non-interactive PoRep's
/// aggregate) against a request's public inputs.
///
/// Returns `Ok(false)` for a well-formed proof that does not verify, and an error when the
/// bytes cannot be a proof of this request (wrong length, bad encoding).
pub fn verify(store: &SrsStore, request: &ProofRequest, proof_bytes: &[u8]) -> Result<bool> {
    let plan = circuits::plan(request)?;
    let n = plan.partitions.len();
    if let Some(agg) = &plan.aggregation {
        let srs = store.get_by_identifier(request.proof, &plan.params_identifier)?;
        let inputs: Vec<Vec<Scalar>> = plan
            .partitions
            .into_iter()
            .map(|p| p.public_inputs)
            .collect();
        return crate::aggregate::verify(
            &*store.aggregation_srs()?,
            &srs.pvk,
            agg,
            proof_bytes,
            &inputs,
        );
    }
    if proof_bytes.len() != n * PARTITION_PROOF_BYTES {
        return Err(Error::InvalidRequest(format!(
            "proof has {} bytes but {} needs {n} x {PARTITION_PROOF_BYTES}",
            proof_bytes.len(),
            request.proof
        )));
    }
    let srs = store.get_by_identifier(request.proof, &plan.params_identifier)?;
    for (job, chunk) in plan
        .partitions
        .iter()
        .zip(proof_bytes.chunks(PARTITION_PROOF_BYTES))
    {
        let proof = Proof::<Bls12>::read(chunk).map_err(|e| {
            Error::InvalidRequest(format!(
                "partition {} proof is not a valid encoding: {e}",
                job.index
            ))
        })?;
        if !matches!(verify_proof(&srs.pvk, &proof, &job.public_inputs), Ok(true)) {
            return Ok(false);
        }
    }
    Ok(true)
}
