//! WinningPoSt and WindowPoSt: circuits from per-sector vanilla proofs
//! (`FallbackPoStSectorProof`, bincode-encoded, one per sector).

use filecoin_hashers::Hasher;
use filecoin_proofs::{
    parameters::{window_post_setup_params, winning_post_setup_params},
    partition_vanilla_proofs, single_partition_vanilla_proofs, FallbackPoStSectorProof, PoStConfig,
    PoStType, VanillaProof, WINDOW_POST_CHALLENGE_COUNT, WINDOW_POST_SECTOR_COUNT,
    WINNING_POST_CHALLENGE_COUNT, WINNING_POST_SECTOR_COUNT,
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

/// The public inputs of a PoSt, over the sectors of `Tree`'s shape.
type PostPublicInputs<Tree> =
    fallback::PublicInputs<<<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain>;

/// One partition of a PoSt to prove: the public inputs the verifier derives its inputs from
/// (and this partition's index among the verifier's), the circuit's own (and its index
/// there), and the partition's vanilla proof.
struct PostPartition<Tree: MerkleTreeTrait> {
    verifier_in: PostPublicInputs<Tree>,
    verifier_k: usize,
    circuit_in: PostPublicInputs<Tree>,
    circuit_k: usize,
    vanilla: VanillaProof<Tree>,
}

fn plan_for<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredProof,
    inputs: &PostInputs,
) -> Result<ProofPlan> {
    let config = config(proof)?;
    let vanilla = decode_sector_proofs::<Tree>(&inputs.vanilla_proofs)?;
    let pub_in = fallback::PublicInputs {
        randomness: safe_domain(&inputs.randomness, "randomness")?,
        prover_id: safe_domain(&inputs.prover_id, "prover_id")?,
        sectors: vanilla
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: None,
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: vanilla_setup(&config)?,
        partitions: None,
        priority: false,
    };
    let pp =
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::setup(&setup)
            .map_err(Error::filecoin)?;
    let vp = &pp.vanilla_params;
    let parts = match (config.typ.clone(), inputs.partition_index) {
        (PoStType::Winning, Some(_)) => {
            return Err(Error::InvalidRequest(
                "WinningPoSt has a single partition; partition_index must not be set".into(),
            ));
        }
        (PoStType::Winning, None) => winning_partitions(&config, vp, pub_in, &vanilla)?,
        (PoStType::Window, None) => window_partitions(&config, vp, pub_in, &vanilla)?,
        (PoStType::Window, Some(index)) => {
            vec![window_partition(
                &config,
                vp,
                pub_in,
                index as usize,
                &vanilla,
            )?]
        }
    };
    let jobs = parts
        .into_iter()
        .enumerate()
        .map(|(index, part)| partition_job(vp, index, part))
        .collect::<Result<Vec<_>>>()?;
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

/// WinningPoSt's partition: exactly the configured number of sectors.
fn winning_partitions<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    vp: &fallback::PublicParams,
    pub_in: PostPublicInputs<Tree>,
    vanilla: &[FallbackPoStSectorProof<Tree>],
) -> Result<Vec<PostPartition<Tree>>> {
    if vanilla.len() != config.sector_count {
        return Err(Error::InvalidRequest(format!(
            "WinningPoSt needs exactly {} vanilla proof(s), got {}",
            config.sector_count,
            vanilla.len()
        )));
    }
    // The verifier (filecoin-proofs' verify_winning_post) lists the sector once per
    // challenge slot, so each slot derives its own challenge.
    let verifier_in = fallback::PublicInputs {
        sectors: (0..vp.sector_count)
            .flat_map(|_| pub_in.sectors.iter().cloned())
            .collect(),
        ..pub_in.clone()
    };
    let proofs =
        partition_vanilla_proofs(config, vp, &pub_in, 1, vanilla).map_err(Error::filecoin)?;
    Ok(proofs
        .into_iter()
        .enumerate()
        .map(|(k, p)| PostPartition {
            verifier_in: verifier_in.clone(),
            verifier_k: k,
            circuit_in: pub_in.clone(),
            circuit_k: k,
            vanilla: p,
        })
        .collect())
}

/// Every partition of a WindowPoSt over all of the deadline's sectors.
fn window_partitions<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    vp: &fallback::PublicParams,
    pub_in: PostPublicInputs<Tree>,
    vanilla: &[FallbackPoStSectorProof<Tree>],
) -> Result<Vec<PostPartition<Tree>>> {
    let n = vanilla.len().div_ceil(config.sector_count);
    let proofs =
        partition_vanilla_proofs(config, vp, &pub_in, n, vanilla).map_err(Error::filecoin)?;
    Ok(proofs
        .into_iter()
        .enumerate()
        .map(|(k, p)| PostPartition {
            verifier_in: pub_in.clone(),
            verifier_k: k,
            circuit_in: pub_in.clone(),
            circuit_k: k,
            vanilla: p,
        })
        .collect())
}

/// Partition `index` of a WindowPoSt, over that partition's sectors only.
fn window_partition<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    vp: &fallback::PublicParams,
    pub_in: PostPublicInputs<Tree>,
    index: usize,
    vanilla: &[FallbackPoStSectorProof<Tree>],
) -> Result<PostPartition<Tree>> {
    if vanilla.len() > config.sector_count {
        return Err(Error::InvalidRequest(format!(
            "one WindowPoSt partition holds at most {} sectors, got {}",
            config.sector_count,
            vanilla.len()
        )));
    }
    let circuit_in = fallback::PublicInputs {
        k: Some(index),
        ..pub_in.clone()
    };
    let p = single_partition_vanilla_proofs(config, vp, &circuit_in, vanilla)
        .map_err(Error::filecoin)?;
    // The verifier sees this partition at position `index` of the deadline's sector
    // list: pad the list in front so that challenge derivation uses the right
    // sector positions (API versions before 1.2 depend on them).
    let sectors = &pub_in.sectors;
    let mut padded = Vec::with_capacity(index * config.sector_count + sectors.len());
    for _ in 0..index * config.sector_count {
        padded.push(sectors[0].clone());
    }
    padded.extend(sectors.iter().cloned());
    let verifier_in = fallback::PublicInputs {
        sectors: padded,
        ..pub_in
    };
    Ok(PostPartition {
        verifier_in,
        verifier_k: index,
        circuit_in,
        circuit_k: 0,
        vanilla: p,
    })
}

/// A partition's job: its circuit and the public inputs the verifier will compute.
fn partition_job<Tree: 'static + MerkleTreeTrait>(
    vp: &fallback::PublicParams,
    index: usize,
    part: PostPartition<Tree>,
) -> Result<PartitionJob> {
    let public_inputs = FallbackPoStCompound::<Tree>::generate_public_inputs(
        &part.verifier_in,
        vp,
        Some(part.verifier_k),
    )
    .map_err(Error::filecoin)?;
    let circuit =
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
            &part.circuit_in,
            Default::default(),
            &part.vanilla,
            vp,
            Some(part.circuit_k),
        )
        .map_err(Error::filecoin)?;
    Ok(PartitionJob {
        index,
        public_inputs,
        circuit: Box::new(CircuitBox(circuit)),
    })
}
