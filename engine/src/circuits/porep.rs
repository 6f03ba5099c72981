//! PoRep commit phase 2: circuits from a C1 output (`SealCommitPhase1Output` JSON).

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use filecoin_hashers::Hasher;
use filecoin_proofs::{
    parameters::setup_params, DefaultPieceDomain, DefaultPieceHasher, PoRepConfig,
    SealCommitPhase1Output,
};
use storage_proofs_core::{
    compound_proof::{self, CompoundProof},
    merkle::MerkleTreeTrait,
    proof::ProofScheme,
};
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

use super::{safe_domain, with_shape, CircuitBox, PartitionJob, ProofPlan};
use crate::error::{Error, Result};
use crate::kind::RegisteredProof;

/// The PoRep configuration filecoin-proofs uses for `proof`.
pub fn config(proof: RegisteredProof) -> PoRepConfig {
    PoRepConfig::new_groth16(
        proof.sector_size.bytes(),
        proof.porep_id(),
        proof.api_version(),
    )
}

pub(super) fn params_identifier(proof: RegisteredProof) -> Result<String> {
    with_shape!(proof.sector_size, Tree => config(proof)
        .get_cache_identifier::<Tree>()
        .map_err(Error::filecoin))
}

pub(super) fn generate_params<R: rand_core::RngCore>(
    proof: RegisteredProof,
    rng: &mut R,
) -> anyhow::Result<Parameters<Bls12>> {
    with_shape!(proof.sector_size, Tree => {
        let pp = filecoin_proofs::parameters::public_params::<Tree>(&config(proof))?;
        let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            StackedCircuit<Tree, DefaultPieceHasher>,
        >>::blank_circuit(&pp);
        Ok(bellperson::groth16::generate_random_parameters::<Bls12, _, _>(blank, rng)?)
    })
}

pub(super) fn plan(proof: RegisteredProof, c1_json: &[u8]) -> Result<ProofPlan> {
    with_shape!(proof.sector_size, Tree => plan_for::<Tree>(proof, c1_json))
}

fn plan_for<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredProof,
    c1_json: &[u8],
) -> Result<ProofPlan> {
    let config = config(proof);
    let c1: SealCommitPhase1Output<Tree> =
        serde_json::from_slice(c1_json).map_err(|e| Error::Decode {
            what: "C1 output JSON (SealCommitPhase1Output)".into(),
            reason: e.to_string(),
        })?;
    let partitions = usize::from(config.partitions);
    check_shape(&c1, partitions, proof)?;
    for (what, v) in [
        ("comm_d", &c1.comm_d),
        ("comm_r", &c1.comm_r),
        ("seed", &c1.seed),
    ] {
        if *v == [0u8; 32] {
            return Err(Error::InvalidRequest(format!(
                "C1 output has an all-zero {what}"
            )));
        }
    }
    let pub_in = stacked::PublicInputs::<<Tree::Hasher as Hasher>::Domain, DefaultPieceDomain> {
        replica_id: c1.replica_id,
        tau: Some(stacked::Tau {
            comm_d: safe_domain(&c1.comm_d, "comm_d")?,
            comm_r: safe_domain(&c1.comm_r, "comm_r")?,
        }),
        k: None,
        seed: Some(c1.seed),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(&config).map_err(Error::filecoin)?,
        partitions: Some(partitions),
        priority: false,
    };
    let pp = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .map_err(Error::filecoin)?;
    // Check the vanilla proofs against this proof's public parameters before building
    // circuits: a C1 output of another sector size, registered proof or sector is refused here
    // with a clear message instead of failing later inside the prover.
    let valid =
        <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::verify_all_partitions(
            &pp.vanilla_params,
            &pub_in,
            &c1.vanilla_proofs,
        )
        .unwrap_or(false);
    if !valid {
        return Err(Error::InvalidRequest(format!(
            "the C1 output's vanilla proofs do not verify as {proof}: wrong sector size or registered proof, or a corrupt C1 output"
        )));
    }
    let mut jobs = Vec::with_capacity(partitions);
    for (k, vanilla) in c1.vanilla_proofs.iter().enumerate() {
        let public_inputs = StackedCompound::<Tree, DefaultPieceHasher>::generate_public_inputs(
            &pub_in,
            &pp.vanilla_params,
            Some(k),
        )
        .map_err(Error::filecoin)?;
        let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::circuit(&pub_in, (), vanilla, &pp.vanilla_params, Some(k))
        .map_err(Error::filecoin)?;
        jobs.push(PartitionJob {
            index: k,
            public_inputs,
            circuit: Box::new(CircuitBox(circuit)),
        });
    }
    let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(&pp.vanilla_params);
    Ok(ProofPlan {
        proof,
        blank: Box::new(CircuitBox(blank)),
        params_identifier: config
            .get_cache_identifier::<Tree>()
            .map_err(Error::filecoin)?,
        partitions: jobs,
    })
}

/// Checks the number of partitions and of challenges per partition against the config, so
/// that a C1 output for another sector size or proof version is refused with a clear message.
fn check_shape<Tree: MerkleTreeTrait>(
    c1: &SealCommitPhase1Output<Tree>,
    partitions: usize,
    proof: RegisteredProof,
) -> Result<()> {
    if c1.vanilla_proofs.is_empty() {
        return Err(Error::InvalidRequest(
            "C1 output contains no vanilla proofs".into(),
        ));
    }
    if c1.vanilla_proofs.len() != partitions {
        return Err(Error::InvalidRequest(format!(
            "C1 output has {} partitions but {proof} has {partitions}",
            c1.vanilla_proofs.len()
        )));
    }
    let per_partition = setup_params(&config(proof))
        .map_err(Error::filecoin)?
        .challenges
        .num_challenges_per_partition();
    for (k, p) in c1.vanilla_proofs.iter().enumerate() {
        if p.len() != per_partition {
            return Err(Error::InvalidRequest(format!(
                "C1 output partition {k} has {} challenge proofs but {proof} needs {per_partition}",
                p.len()
            )));
        }
    }
    Ok(())
}
