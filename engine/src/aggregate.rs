//! SnarkPack aggregation: a non-interactive PoRep's partition proofs as the one aggregate
//! proof a chain accepts.
//!
//! Non-interactive PoRep (registered seal proofs 15-19) proves 126 partitions at 32 GiB (13
//! at test sizes) of the interactive circuit, then folds their Groth16 proofs into one
//! SnarkPack (v2) proof, as filecoin-proofs' `seal_commit_phase2` does: the proofs padded to a
//! power of two by repeating the last, the transcript seeded with SHA-256 of comm_r, over the
//! inner-product SRS `v28-fil-inner-product-v1.srs` of the parameter directory.
//!
//! filecoin-proofs reads at most [`SRS_MAX_LEN`] powers of each of that file's four vectors,
//! and the verifier key it derives depends on that length; [`load_srs`] reads the same
//! prefix, so our aggregates verify with filecoin-proofs' `verify_seal`.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use bellperson::groth16::aggregate::{
    aggregate_proofs, setup_fake_srs, verify_aggregate_proof, AggregateProof, AggregateVersion,
    GenericSRS,
};
use bellperson::groth16::{PreparedVerifyingKey, Proof};
use blstrs::{Bls12, Scalar};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The inner-product SRS's file name in a parameter directory (filecoin-proofs' name).
pub const SRS_FILE: &str = "v28-fil-inner-product-v1.srs";

/// How many powers of each SRS vector filecoin-proofs reads (`(2 << 14) + 1`).
pub const SRS_MAX_LEN: usize = (2 << 14) + 1;

/// The SnarkPack version non-interactive PoRep uses.
pub const VERSION: AggregateVersion = AggregateVersion::V2;

/// Bytes of a compressed G1 and G2 point in the SRS file.
const G1_BYTES: usize = 48;
const G2_BYTES: usize = 96;

/// What an aggregate is bound to besides its proofs: the sector's comm_r (non-interactive
/// PoRep's transcript holds no seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aggregation {
    /// The sector's replica commitment.
    pub comm_r: [u8; 32],
}

impl Aggregation {
    /// The bytes the SnarkPack transcript starts from: SHA-256 of comm_r.
    pub fn transcript(&self) -> [u8; 32] {
        Sha256::digest(self.comm_r).into()
    }
}

/// The number of proofs an aggregate of `n` holds: the next power of two, at least 2.
pub fn target_len(n: usize) -> usize {
    n.max(2).next_power_of_two()
}

fn srs_err(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::ParamsInvalid {
        path: path.to_path_buf(),
        reason: format!("inner-product SRS: {reason}"),
    }
}

/// Reads the first [`SRS_MAX_LEN`] powers of each vector of an SRS file, skipping the rest
/// (the published file holds 2^19 + 1; only this prefix is used).
pub fn load_srs(path: &Path) -> Result<GenericSRS<Bls12>> {
    let file = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => srs_err(
            path,
            "missing: non-interactive PoRep needs filecoin-proofs' v28-fil-inner-product-v1.srs in the parameter directory",
        ),
        _ => Error::io(path, e),
    })?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    // The prefix is rewritten with its lengths cut to what was read, then decoded by
    // bellperson's own reader (which checks every point).
    let mut prefix = Vec::new();
    for point in [G1_BYTES, G1_BYTES, G2_BYTES, G2_BYTES] {
        let mut len = [0u8; 4];
        r.read_exact(&mut len).map_err(|e| srs_err(path, e))?;
        let len = u32::from_be_bytes(len) as usize;
        let take = len.min(SRS_MAX_LEN);
        prefix.extend_from_slice(&(take as u32).to_be_bytes());
        let start = prefix.len();
        prefix.resize(start + take * point, 0);
        r.read_exact(&mut prefix[start..])
            .map_err(|e| srs_err(path, format!("truncated: {e}")))?;
        r.seek(SeekFrom::Current(((len - take) * point) as i64))
            .map_err(|e| srs_err(path, e))?;
    }
    GenericSRS::read(&mut &prefix[..]).map_err(|e| srs_err(path, e))
}

/// Writes an insecure test SRS (known randomness) for up to `max_proofs` proofs.
pub fn write_test_srs(path: &Path, max_proofs: usize, seed: u64) -> Result<()> {
    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(seed);
    let srs = setup_fake_srs::<Bls12, _>(&mut rng, max_proofs);
    crate::param_file::write_atomic(path, |w| srs.write(w))
}

/// Pads `proofs` and their `inputs` to [`target_len`] by repeating the last of each.
fn padded<T: Clone>(items: &[T]) -> Vec<T> {
    let mut v = items.to_vec();
    if let Some(last) = items.last() {
        v.resize(target_len(items.len()), last.clone());
    }
    v
}

/// Aggregates the partition `proofs` (in partition order, with their public inputs) and
/// checks the aggregate with `pvk` before returning its bytes: no aggregate that does not
/// verify leaves here.
pub fn aggregate(
    srs: &GenericSRS<Bls12>,
    pvk: &PreparedVerifyingKey<Bls12>,
    agg: &Aggregation,
    proofs: &[Proof<Bls12>],
    inputs: &[Vec<Scalar>],
) -> Result<Vec<u8>> {
    if proofs.is_empty() || proofs.len() != inputs.len() {
        return Err(Error::InvalidRequest(format!(
            "cannot aggregate {} proofs with {} input lists",
            proofs.len(),
            inputs.len()
        )));
    }
    let n = target_len(proofs.len());
    if srs.g_alpha_powers.len() < 2 * n {
        return Err(Error::InvalidRequest(format!(
            "the inner-product SRS holds {} powers; aggregating {n} proofs needs {}",
            srs.g_alpha_powers.len(),
            2 * n
        )));
    }
    let (prover, verifier) = srs.specialize(n);
    let transcript = agg.transcript();
    let aggregate = aggregate_proofs::<Bls12>(&prover, &transcript, &padded(proofs), VERSION)
        .map_err(|e| Error::Prover {
            partition: 0,
            backend: "snarkpack".into(),
            reason: e.to_string(),
        })?;
    let ok = verify_aggregate_proof(
        &verifier,
        pvk,
        rand::rngs::OsRng,
        &padded(inputs),
        &aggregate,
        &transcript,
        VERSION,
    )
    .unwrap_or(false);
    if !ok {
        return Err(Error::VerificationFailed {
            what: format!(
                "the SnarkPack aggregate of {} partition proofs",
                proofs.len()
            ),
        });
    }
    let mut bytes = Vec::new();
    aggregate.write(&mut bytes).map_err(|e| Error::Prover {
        partition: 0,
        backend: "snarkpack".into(),
        reason: e.to_string(),
    })?;
    Ok(bytes)
}

/// Decodes concatenated 192-byte partition proofs.
pub fn decode_partitions(bytes: &[u8]) -> Result<Vec<Proof<Bls12>>> {
    const PROOF_BYTES: usize = 192;
    if bytes.is_empty() || !bytes.len().is_multiple_of(PROOF_BYTES) {
        return Err(Error::InvalidRequest(format!(
            "{} bytes are not whole {PROOF_BYTES}-byte partition proofs",
            bytes.len()
        )));
    }
    bytes
        .chunks(PROOF_BYTES)
        .enumerate()
        .map(|(i, c)| {
            Proof::read(c).map_err(|e| {
                Error::InvalidRequest(format!("partition {i} proof is not a valid encoding: {e}"))
            })
        })
        .collect()
}

/// Whether `bytes` is an aggregate of proofs of `inputs` (one list per partition) under
/// `pvk`, bound to `agg`.
pub fn verify(
    srs: &GenericSRS<Bls12>,
    pvk: &PreparedVerifyingKey<Bls12>,
    agg: &Aggregation,
    bytes: &[u8],
    inputs: &[Vec<Scalar>],
) -> Result<bool> {
    let aggregate = AggregateProof::<Bls12>::read(bytes)
        .map_err(|e| Error::InvalidRequest(format!("not a SnarkPack aggregate proof: {e}")))?;
    let n = target_len(inputs.len());
    if aggregate.tmipp.gipa.nproofs as usize != n || srs.g_alpha_powers.len() < 2 * n {
        return Ok(false);
    }
    let (_, verifier) = srs.specialize(n);
    Ok(verify_aggregate_proof(
        &verifier,
        pvk,
        rand::rngs::OsRng,
        &padded(inputs),
        &aggregate,
        &agg.transcript(),
        VERSION,
    )
    .unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_lengths_are_powers_of_two_from_two() {
        assert_eq!(
            [1, 2, 3, 13, 16, 126].map(target_len),
            [2, 2, 4, 16, 16, 128]
        );
    }

    #[test]
    fn an_aggregate_verifies_only_for_its_proofs_inputs_and_comm_r() {
        use crate::circuits::synthetic::Shape;
        use bellperson::groth16::{create_random_proof, generate_random_parameters};
        use rand_core::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let shape = |x: Option<u64>| Shape {
            x: x.map(Scalar::from),
            squarings: 3,
            inputs: 1,
            linear: 2,
        };
        let params = generate_random_parameters::<Bls12, _, _>(shape(None), &mut rng).unwrap();
        let pvk = bellperson::groth16::prepare_verifying_key(&params.vk);
        let xs = [3u64, 5, 7];
        let proofs: Vec<_> = xs
            .iter()
            .map(|&x| create_random_proof(shape(Some(x)), &params, &mut rng).unwrap())
            .collect();
        let inputs: Vec<Vec<Scalar>> = xs.iter().map(|&x| vec![Scalar::from(x)]).collect();
        let srs = setup_fake_srs::<Bls12, _>(&mut rng, 8);
        let agg = Aggregation { comm_r: [9; 32] };
        let bytes = aggregate(&srs, &pvk, &agg, &proofs, &inputs).unwrap();
        assert!(verify(&srs, &pvk, &agg, &bytes, &inputs).unwrap());
        let other = Aggregation { comm_r: [8; 32] };
        assert!(!verify(&srs, &pvk, &other, &bytes, &inputs).unwrap());
        let mut wrong = inputs.clone();
        wrong[1][0] += Scalar::from(1u64);
        assert!(!verify(&srs, &pvk, &agg, &bytes, &wrong).unwrap());
        // a proof that is not of these inputs is caught before anything is returned
        let e = aggregate(&srs, &pvk, &agg, &proofs, &wrong).unwrap_err();
        assert!(e.to_string().contains("aggregate"), "{e}");
        // and an SRS too small is a clear error
        let small = setup_fake_srs::<Bls12, _>(&mut rng, 1);
        let e = aggregate(&small, &pvk, &agg, &proofs, &inputs).unwrap_err();
        assert!(e.to_string().contains("needs 8"), "{e}");
    }

    #[test]
    fn an_srs_file_is_read_up_to_the_prefix_filecoin_proofs_uses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SRS_FILE);
        write_test_srs(&path, 8, 3).unwrap();
        let srs = load_srs(&path).unwrap();
        assert_eq!(srs.g_alpha_powers.len(), 16);
        assert_eq!(srs.h_beta_powers.len(), 16);
        // a cut file is an error naming it, not a panic
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        let e = load_srs(&path).unwrap_err().to_string();
        assert!(e.contains("truncated") && e.contains(SRS_FILE), "{e}");
        let e = load_srs(&dir.path().join("none")).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
