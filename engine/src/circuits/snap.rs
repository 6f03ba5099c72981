//! SnapDeals (EmptySectorUpdate): circuits from per-partition vanilla proofs
//! (`PartitionProof`, bincode-encoded, one per partition).

use filecoin_proofs::{PoRepConfig, SectorUpdateConfig};
use storage_proofs_core::{
    compound_proof::{self, CompoundProof},
    merkle::MerkleTreeTrait,
    parameter_cache::CacheableParameters,
};
use storage_proofs_update::{
    constants::TreeRHasher, EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
    PartitionProof, PublicInputs, PublicParams, SetupParams,
};

use super::decode::{decode_each, safe_domain};
use super::partition::{CircuitBox, PartitionJob, ProofPlan};
use super::shape::with_shape;
use crate::error::{Error, Result};
use crate::kind::{ProofKind, RegisteredProof};
use crate::paramgen::streaming::{BlankCircuit, Fresh};
use crate::request::SnapInputs;

/// The update circuit with a field-wise `Clone` (the crate's type has none), so a partition
/// can be synthesised again after a device failure.
struct SnapCircuit<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(EmptySectorUpdateCircuit<Tree>);

impl<Tree: MerkleTreeTrait<Hasher = TreeRHasher>> Clone for SnapCircuit<Tree> {
    fn clone(&self) -> Self {
        SnapCircuit(EmptySectorUpdateCircuit {
            pub_params: self.0.pub_params.clone(),
            pub_inputs: self.0.pub_inputs.clone(),
            priv_inputs: storage_proofs_update::circuit::PrivateInputs {
                comm_c: self.0.priv_inputs.comm_c,
                root_r_old: self.0.priv_inputs.root_r_old,
                root_r_new: self.0.priv_inputs.root_r_new,
                apex_leafs: self.0.priv_inputs.apex_leafs.clone(),
                challenge_proofs: self.0.priv_inputs.challenge_proofs.clone(),
            },
        })
    }
}

impl<Tree: MerkleTreeTrait<Hasher = TreeRHasher>> bellpepper_core::Circuit<blstrs::Scalar>
    for SnapCircuit<Tree>
{
    fn synthesize<CS: bellpepper_core::ConstraintSystem<blstrs::Scalar>>(
        self,
        cs: &mut CS,
    ) -> std::result::Result<(), bellpepper_core::SynthesisError> {
        self.0.synthesize(cs)
    }
}

/// The update configuration filecoin-proofs derives for `proof`'s sector size.
pub fn config(proof: RegisteredProof) -> SectorUpdateConfig {
    // The update circuit depends only on the sector size; any seal proof of that size
    // gives the same configuration.
    let seal = RegisteredProof::latest(ProofKind::PorepC2, proof.sector_size);
    SectorUpdateConfig::from_porep_config(&PoRepConfig::new_groth16(
        proof.sector_size.bytes(),
        seal.porep_id(),
        seal.api_version(),
    ))
}

fn public_params(proof: RegisteredProof) -> PublicParams {
    PublicParams::from_sector_size(proof.sector_size.bytes())
}

pub(super) fn params_identifier(proof: RegisteredProof) -> Result<String> {
    let pp = public_params(proof);
    Ok(with_shape!(proof.sector_size, Tree =>
        <EmptySectorUpdateCompound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(&pp)))
}

/// The blank circuit parameters are made for.
pub(super) fn blank(proof: RegisteredProof) -> anyhow::Result<Box<dyn BlankCircuit>> {
    let pp = public_params(proof);
    with_shape!(proof.sector_size, Tree => {
        // not Clone: made afresh for each pass
        Ok(Box::new(Fresh(move || {
            <EmptySectorUpdateCompound<Tree> as CompoundProof<
                EmptySectorUpdate<Tree>,
                EmptySectorUpdateCircuit<Tree>,
            >>::blank_circuit(&pp)
        })))
    })
}

pub(super) fn plan(proof: RegisteredProof, inputs: &SnapInputs) -> Result<ProofPlan> {
    with_shape!(proof.sector_size, Tree => plan_for::<Tree>(proof, inputs))
}

/// Decodes the bincode `PartitionProof` of each partition.
pub fn decode_partition_proofs<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(
    raw: &[Vec<u8>],
) -> Result<Vec<PartitionProof<Tree>>> {
    decode_each(raw, "PartitionProof")
}

fn plan_for<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredProof,
    inputs: &SnapInputs,
) -> Result<ProofPlan> {
    let config = config(proof);
    let partitions = usize::from(config.update_partitions);
    let vanilla = decode_partition_proofs::<Tree>(&inputs.vanilla_proofs)?;
    if vanilla.len() != partitions {
        return Err(Error::InvalidRequest(format!(
            "SnapDeals {} needs {partitions} partition proofs, got {}",
            proof.sector_size,
            vanilla.len()
        )));
    }
    let pub_in = PublicInputs {
        k: partitions,
        comm_r_old: safe_domain(&inputs.comm_r_old, "comm_r_old")?,
        comm_d_new: safe_domain(&inputs.comm_d_new, "comm_d_new")?,
        comm_r_new: safe_domain(&inputs.comm_r_new, "comm_r_new")?,
        h: config.h,
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: proof.sector_size.bytes(),
        },
        partitions: Some(partitions),
        priority: false,
    };
    let pp = <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::setup(
        &setup,
    )
    .map_err(Error::filecoin)?;
    let vp = &pp.vanilla_params;
    let mut jobs = Vec::with_capacity(partitions);
    for (k, p) in vanilla.iter().enumerate() {
        let public_inputs =
            EmptySectorUpdateCompound::<Tree>::generate_public_inputs(&pub_in, vp, Some(k))
                .map_err(Error::filecoin)?;
        let circuit = <EmptySectorUpdateCompound<Tree> as CompoundProof<
            EmptySectorUpdate<Tree>,
            _,
        >>::circuit(&pub_in, (), p, vp, Some(k))
        .map_err(Error::filecoin)?;
        jobs.push(PartitionJob {
            index: k,
            public_inputs,
            circuit: Box::new(CircuitBox(SnapCircuit(circuit))),
        });
    }
    let blank = <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::blank_circuit(vp);
    Ok(ProofPlan {
        proof,
        blank: Box::new(CircuitBox(SnapCircuit(blank))),
        params_identifier: params_identifier(proof)?,
        partitions: jobs,
        aggregation: None,
    })
}
