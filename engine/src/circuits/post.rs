//! WinningPoSt and WindowPoSt: circuits from per-sector vanilla proofs
//! (`FallbackPoStSectorProof`, bincode-encoded, one per sector).

use filecoin_hashers::Hasher;
use filecoin_proofs::{
    parameters::{window_post_setup_params, winning_post_setup_params},
    partition_vanilla_proofs, single_partition_vanilla_proofs, FallbackPoStSectorProof, PoStConfig,
    PoStType, WINDOW_POST_CHALLENGE_COUNT, WINDOW_POST_SECTOR_COUNT, WINNING_POST_CHALLENGE_COUNT,
    WINNING_POST_SECTOR_COUNT,
};
use storage_proofs_core::{
    compound_proof::{self, CompoundProof},
    merkle::MerkleTreeTrait,
    parameter_cache::CacheableParameters,
};
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

use super::decode::{decode_each, safe_domain};
use super::partition::{CircuitBox, PartitionJob, ProofPlan};
use super::shape::with_shape;
use crate::error::{Error, Result};
use crate::kind::{ProofKind, RegisteredProof};
use crate::paramgen::streaming::BlankCircuit;
use crate::request::PostInputs;

/// The PoSt configuration filecoin-proofs uses for `proof` (winning or window).
pub fn config(proof: RegisteredProof) -> Result<PoStConfig> {
    let bytes = proof.sector_size.bytes();
    let (typ, challenge_count, sector_count) = match proof.kind {
        ProofKind::WinningPost => (
            PoStType::Winning,
            WINNING_POST_CHALLENGE_COUNT,
            WINNING_POST_SECTOR_COUNT,
        ),
        ProofKind::WindowPost => {
            let count = WINDOW_POST_SECTOR_COUNT
                .read()
                .map_err(|_| Error::Filecoin("WINDOW_POST_SECTOR_COUNT lock poisoned".into()))?
                .get(&bytes)
                .copied()
                .ok_or_else(|| {
                    Error::InvalidRequest(format!("no WindowPoSt for {bytes}-byte sectors"))
                })?;
            (PoStType::Window, WINDOW_POST_CHALLENGE_COUNT, count)
        }
        other => {
            return Err(Error::InvalidRequest(format!("{other} is not a PoSt kind")));
        }
    };
    Ok(PoStConfig {
        sector_size: bytes.into(),
        challenge_count,
        sector_count,
        typ,
        priority: false,
        api_version: proof.api_version(),
    })
}

/// filecoin-proofs' vanilla setup for `config` (WinningPoSt's treats each challenge as a sector).
pub(crate) fn vanilla_setup(config: &PoStConfig) -> Result<fallback::SetupParams> {
    match config.typ {
        PoStType::Winning => winning_post_setup_params(config).map_err(Error::filecoin),
        PoStType::Window => Ok(window_post_setup_params(config)),
    }
}

pub(super) fn params_identifier(proof: RegisteredProof) -> Result<String> {
    let config = config(proof)?;
    with_shape!(proof.sector_size, Tree => config
        .get_cache_identifier::<Tree>()
        .map_err(Error::filecoin))
}

/// The blank circuit parameters are made for.
pub(super) fn blank(proof: RegisteredProof) -> anyhow::Result<Box<dyn BlankCircuit>> {
    let config = config(proof)?;
    with_shape!(proof.sector_size, Tree => {
        let pp = <FallbackPoSt<Tree> as storage_proofs_core::proof::ProofScheme>::setup(&vanilla_setup(&config)?)?;
        let blank = <FallbackPoStCompound<Tree> as CompoundProof<
            FallbackPoSt<'_, Tree>,
            FallbackPoStCircuit<Tree>,
        >>::blank_circuit(&pp);
        Ok(Box::new(blank))
    })
}

pub(super) fn plan(proof: RegisteredProof, inputs: &PostInputs) -> Result<ProofPlan> {
    with_shape!(proof.sector_size, Tree => plan_for::<Tree>(proof, inputs))
}

/// Decodes the bincode `FallbackPoStSectorProof` of each sector.
pub fn decode_sector_proofs<Tree: MerkleTreeTrait>(
    raw: &[Vec<u8>],
) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
    decode_each(raw, "FallbackPoStSectorProof")
}

fn plan_for<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredProof,
    inputs: &PostInputs,
) -> Result<ProofPlan> {
    let config = config(proof)?;
    let vanilla = decode_sector_proofs::<Tree>(&inputs.vanilla_proofs)?;
    let sectors: Vec<PublicSector<_>> = vanilla
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();
    let randomness: <Tree::Hasher as Hasher>::Domain =
        safe_domain(&inputs.randomness, "randomness")?;
    let prover_id: <Tree::Hasher as Hasher>::Domain = safe_domain(&inputs.prover_id, "prover_id")?;
    let setup = compound_proof::SetupParams {
        vanilla_params: vanilla_setup(&config)?,
        partitions: None,
        priority: false,
    };
    let pp =
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::setup(&setup)
            .map_err(Error::filecoin)?;
    let vp = &pp.vanilla_params;

    // (public inputs for the verifier, public inputs for the circuit, partition index, vanilla)
    let mut parts = Vec::new();
    match (config.typ.clone(), inputs.partition_index) {
        (PoStType::Winning, Some(_)) => {
            return Err(Error::InvalidRequest(
                "WinningPoSt has a single partition; partition_index must not be set".into(),
            ));
        }
        (PoStType::Winning, None) => {
            if vanilla.len() != config.sector_count {
                return Err(Error::InvalidRequest(format!(
                    "WinningPoSt needs exactly {} vanilla proof(s), got {}",
                    config.sector_count,
                    vanilla.len()
                )));
            }
            // The verifier (filecoin-proofs' verify_winning_post) lists the sector once per
            // challenge slot, so each slot derives its own challenge.
            let repeated: Vec<_> = (0..vp.sector_count)
                .flat_map(|_| sectors.iter().cloned())
                .collect();
            let verifier_in = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors: repeated,
                k: None,
            };
            let pub_in = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors,
                k: None,
            };
            let proofs = partition_vanilla_proofs(&config, vp, &pub_in, 1, &vanilla)
                .map_err(Error::filecoin)?;
            for (k, p) in proofs.into_iter().enumerate() {
                parts.push((verifier_in.clone(), pub_in.clone(), k, k, p));
            }
        }
        (PoStType::Window, None) => {
            let n = vanilla.len().div_ceil(config.sector_count);
            let pub_in = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors,
                k: None,
            };
            let proofs = partition_vanilla_proofs(&config, vp, &pub_in, n, &vanilla)
                .map_err(Error::filecoin)?;
            for (k, p) in proofs.into_iter().enumerate() {
                parts.push((pub_in.clone(), pub_in.clone(), k, k, p));
            }
        }
        (PoStType::Window, Some(index)) => {
            let index = index as usize;
            if vanilla.len() > config.sector_count {
                return Err(Error::InvalidRequest(format!(
                    "one WindowPoSt partition holds at most {} sectors, got {}",
                    config.sector_count,
                    vanilla.len()
                )));
            }
            let pub_in = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors: sectors.clone(),
                k: Some(index),
            };
            let p = single_partition_vanilla_proofs(&config, vp, &pub_in, &vanilla)
                .map_err(Error::filecoin)?;
            // The verifier sees this partition at position `index` of the deadline's sector
            // list: pad the list in front so that challenge derivation uses the right
            // sector positions (API versions before 1.2 depend on them).
            let mut padded = Vec::with_capacity(index * config.sector_count + sectors.len());
            for _ in 0..index * config.sector_count {
                padded.push(sectors[0].clone());
            }
            padded.extend(sectors.iter().cloned());
            let verifier_in = fallback::PublicInputs {
                randomness,
                prover_id,
                sectors: padded,
                k: None,
            };
            parts.push((verifier_in, pub_in, index, 0, p));
        }
    }

    let mut jobs = Vec::with_capacity(parts.len());
    for (verifier_in, circuit_in, verifier_k, circuit_k, vanilla_proof) in parts {
        let public_inputs = FallbackPoStCompound::<Tree>::generate_public_inputs(
            &verifier_in,
            vp,
            Some(verifier_k),
        )
        .map_err(Error::filecoin)?;
        let circuit =
            <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
                &circuit_in,
                Default::default(),
                &vanilla_proof,
                vp,
                Some(circuit_k),
            )
            .map_err(Error::filecoin)?;
        jobs.push(PartitionJob {
            index: jobs.len(),
            public_inputs,
            circuit: Box::new(CircuitBox(circuit)),
        });
    }
    let identifier = <FallbackPoStCompound<Tree> as CacheableParameters<
        FallbackPoStCircuit<Tree>,
        _,
    >>::cache_identifier(vp);
    let blank =
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::blank_circuit(vp);
    Ok(ProofPlan {
        proof,
        blank: Box::new(CircuitBox(blank)),
        params_identifier: identifier,
        partitions: jobs,
        aggregation: None,
    })
}
