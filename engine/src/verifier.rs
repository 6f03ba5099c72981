//! Checking proof bytes against a request: what anyone holding the request's public data
//! can do, with the verifying key alone (no device, no engine).

use bellperson::groth16::{verify_proof, Proof};
use blstrs::{Bls12, Scalar};

use crate::circuits;
use crate::error::{Error, Result};
use crate::request::ProofRequest;
use crate::srs::SrsStore;

/// Bytes of one compressed Groth16 proof (one partition).
pub const PARTITION_PROOF_BYTES: usize = 192;

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
