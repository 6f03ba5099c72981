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

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16;
use blstrs::Scalar;
use cuzk_pce::{Assignment, R1cs, WitnessCs};
use ff::Field;

use super::decode::safe_domain;
use super::partition::{CircuitBox, PartitionCircuit, PartitionJob, ProofPlan};
use super::porep_witness::{piecewise_witness, TopValues};
use super::shape::with_shape;
use crate::error::{catch_panic, Error, Result};
use crate::kind::RegisteredProof;
use crate::paramgen::streaming::BlankCircuit;
use crate::request::SectorRef;
use storage_proofs_core::api_version::ApiFeature;

/// The PoRep configuration filecoin-proofs uses for `proof`, with its feature (synthetic or
/// non-interactive PoRep) enabled: that sets the partition count and how challenges are
/// drawn.
pub fn config(proof: RegisteredProof) -> PoRepConfig {
    let mut config = PoRepConfig::new_groth16(
        proof.sector_size.bytes(),
        proof.porep_id(),
        proof.api_version(),
    );
    if let Some(feature) = proof.porep_feature() {
        // A fresh configuration has no feature, so none conflicts: this cannot fail.
        let _ = config.enable_feature(feature);
    }
    config
}

pub(super) fn params_identifier(proof: RegisteredProof) -> Result<String> {
    with_shape!(proof.sector_size, Tree => config(proof)
        .get_cache_identifier::<Tree>()
        .map_err(Error::filecoin))
}

/// The blank circuit parameters are made for.
pub(super) fn blank(proof: RegisteredProof) -> anyhow::Result<Box<dyn BlankCircuit>> {
    with_shape!(proof.sector_size, Tree => {
        let pp = filecoin_proofs::parameters::public_params::<Tree>(&config(proof))?;
        let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            StackedCircuit<Tree, DefaultPieceHasher>,
        >>::blank_circuit(&pp);
        Ok(Box::new(blank))
    })
}

pub(super) fn plan(
    proof: RegisteredProof,
    c1_json: &[u8],
    sector: Option<&SectorRef>,
) -> Result<ProofPlan> {
    with_shape!(proof.sector_size, Tree => plan_for::<Tree>(proof, c1_json, sector))
}

fn plan_for<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredProof,
    c1_json: &[u8],
    sector: Option<&SectorRef>,
) -> Result<ProofPlan> {
    let config = config(proof);
    let c1: SealCommitPhase1Output<Tree> =
        serde_json::from_slice(c1_json).map_err(|e| Error::Decode {
            what: "C1 output JSON (SealCommitPhase1Output)".into(),
            reason: e.to_string(),
        })?;
    if let Some(s) = sector {
        // The replica id binds the C1 output to its miner, sector number, ticket, comm_d and
        // registered proof: a C1 of another sector or proof type is refused here, by name.
        let expected = stacked::generate_replica_id::<Tree::Hasher, _>(
            &s.prover_id,
            s.sector_number,
            &c1.ticket,
            c1.comm_d,
            &config.porep_id,
        );
        if expected != c1.replica_id {
            return Err(Error::InvalidRequest(format!(
                "the C1 output is not sector {} of this miner as {proof}: its replica id differs from the one the miner, sector number, ticket, comm_d and registered proof give",
                s.sector_number
            )));
        }
    }
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
    check_paths(&c1)?;
    let mut jobs = Vec::with_capacity(partitions);
    for (k, vanilla) in c1.vanilla_proofs.iter().enumerate() {
        let public_inputs = StackedCompound::<Tree, DefaultPieceHasher>::generate_public_inputs(
            &pub_in,
            &pp.vanilla_params,
            Some(k),
        )
        .map_err(Error::filecoin)?;
        let circuit = StackedParts::<Tree>::new(&pub_in, vanilla)?;
        jobs.push(PartitionJob {
            index: k,
            public_inputs,
            circuit: Box::new(circuit),
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
        // A chain takes a non-interactive PoRep's partitions only as one SnarkPack
        // aggregate, bound to comm_r.
        aggregation: (proof.porep_feature() == Some(ApiFeature::NonInteractivePoRep))
            .then_some(crate::aggregate::Aggregation { comm_r: c1.comm_r }),
    })
}

/// Hashes every data (`tree_d`) and replica (`tree_r_last`) path of the C1 output up to its
/// root. filecoin-proofs' vanilla verifier checks only their positions (the circuit checks
/// the hashes), so without this a corrupt sibling would pass planning and fail as an
/// unsatisfied constraint after synthesis; here it is refused at submit, by location.
fn check_paths<Tree: MerkleTreeTrait>(c1: &SealCommitPhase1Output<Tree>) -> Result<()> {
    use storage_proofs_core::merkle::MerkleProofTrait;
    for (k, part) in c1.vanilla_proofs.iter().enumerate() {
        for (i, p) in part.iter().enumerate() {
            for (tree, holds) in [
                ("data (tree_d)", p.comm_d_proofs.verify()),
                ("replica (tree_r_last)", p.comm_r_last_proof.verify()),
            ] {
                if !holds {
                    return Err(Error::InvalidRequest(format!(
                        "the C1 output's vanilla proofs do not verify: partition {k}, challenge {i}: the {tree} path does not hash to its root"
                    )));
                }
            }
        }
    }
    Ok(())
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

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type VanillaChallenge<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

/// One PoRep partition's circuit, held as the parts `StackedCompound::circuit` would put in
/// a `StackedCircuit` (whose fields are private), so that its witness can be computed in
/// pieces on several threads (`porep_witness`). Synthesis, recording and the bellperson oracle run the crate's own
/// `StackedCircuit::synthesize` on all challenges, exactly as before.
pub struct StackedParts<Tree: 'static + MerkleTreeTrait> {
    replica_id: TreeDomain<Tree>,
    comm_d: Option<DefaultPieceDomain>,
    comm_r: Option<TreeDomain<Tree>>,
    comm_r_last: TreeDomain<Tree>,
    comm_c: TreeDomain<Tree>,
    challenges: Vec<VanillaChallenge<Tree>>,
}

impl<Tree: 'static + MerkleTreeTrait> Clone for StackedParts<Tree> {
    fn clone(&self) -> Self {
        StackedParts {
            replica_id: self.replica_id,
            comm_d: self.comm_d,
            comm_r: self.comm_r,
            comm_r_last: self.comm_r_last,
            comm_c: self.comm_c,
            challenges: self.challenges.clone(),
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait> StackedParts<Tree> {
    /// The parts of partition `vanilla`'s circuit, with the consistency checks
    /// `StackedCompound::circuit` makes.
    fn new(
        pub_in: &stacked::PublicInputs<TreeDomain<Tree>, DefaultPieceDomain>,
        vanilla: &[VanillaChallenge<Tree>],
    ) -> Result<Self> {
        let first = vanilla.first().ok_or_else(|| {
            Error::InvalidRequest("a PoRep partition has no challenge proofs".into())
        })?;
        let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
        if vanilla
            .iter()
            .any(|p| p.comm_r_last() != comm_r_last || p.comm_c() != comm_c)
        {
            return Err(Error::InvalidRequest(
                "the C1 output's challenge proofs disagree on comm_r_last or comm_c".into(),
            ));
        }
        Ok(StackedParts {
            replica_id: pub_in.replica_id,
            comm_d: pub_in.tau.as_ref().map(|t| t.comm_d),
            comm_r: pub_in.tau.as_ref().map(|t| t.comm_r),
            comm_r_last,
            comm_c,
            challenges: vanilla.to_vec(),
        })
    }

    /// Synthesises the circuit's top level and the given challenges into `cs`.
    fn synthesize_with<CS: ConstraintSystem<Scalar>>(
        &self,
        cs: CS,
        challenges: Vec<VanillaChallenge<Tree>>,
    ) -> std::result::Result<(), SynthesisError> {
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize(
            cs,
            Some(self.replica_id),
            self.comm_d,
            self.comm_r,
            Some(self.comm_r_last),
            Some(self.comm_c),
            challenges.into_iter().map(Into::into).collect(),
        )
    }

    /// The witness (ONE first) of the top level alone, without any challenge.
    fn top_witness(&self) -> std::result::Result<(Vec<Scalar>, Vec<Scalar>), SynthesisError> {
        let mut cs = WitnessCs::default();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        self.synthesize_with(&mut cs, Vec::new())?;
        Ok((cs.input, cs.aux))
    }

    /// The witness computed in pieces on rayon's pool: the top level alone, then each
    /// challenge's head, labelings (one per layer) and tail, each on its own thread
    /// (`porep_witness`). Equal to the sequential witness, variable for variable.
    pub fn parallel_witness(&self) -> Result<(Vec<Scalar>, Vec<Scalar>)> {
        let synthesis = |e: SynthesisError| Error::Synthesis {
            partition: 0,
            reason: e.to_string(),
        };
        let comm_d = self
            .comm_d
            .ok_or_else(|| Error::InvalidRequest("a PoRep partition without comm_d".into()))?;
        let values = TopValues {
            replica_id: self.replica_id.into(),
            comm_d: comm_d.into(),
            comm_c: self.comm_c.into(),
            comm_r_last: self.comm_r_last.into(),
        };
        // the top level alone, then the challenges' pieces after it
        let (mut input, mut aux) = self.top_witness().map_err(synthesis)?;
        piecewise_witness::<Tree>(values, self.challenges.clone(), &mut input, &mut aux)?;
        Ok((input, aux))
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for StackedParts<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> std::result::Result<(), SynthesisError> {
        let challenges = self.challenges.clone();
        self.synthesize_with(cs, challenges)
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionCircuit for StackedParts<Tree> {
    fn clone_box(&self) -> Box<dyn PartitionCircuit> {
        Box::new(self.clone())
    }

    fn synthesize(self: Box<Self>) -> Result<Assignment> {
        Box::new(CircuitBox(*self)).synthesize()
    }

    fn witness(self: Box<Self>) -> Result<(Vec<Scalar>, Vec<Scalar>)> {
        Box::new(CircuitBox(*self)).witness()
    }

    fn witness_parallel(self: Box<Self>) -> Result<(Vec<Scalar>, Vec<Scalar>)> {
        catch_panic("witness synthesis", || self.parallel_witness())
    }

    fn record(self: Box<Self>) -> Result<R1cs> {
        Box::new(CircuitBox(*self)).record()
    }

    fn check(self: Box<Self>) -> Result<cuzk_pce::CheckReport> {
        Box::new(CircuitBox(*self)).check()
    }

    fn constraint_path(self: Box<Self>, row: usize) -> Option<String> {
        Box::new(CircuitBox(*self)).constraint_path(row)
    }

    fn prove_with_bellperson(
        self: Box<Self>,
        params: &Parameters<Bls12>,
        r: Scalar,
        s: Scalar,
    ) -> Result<groth16::Proof<Bls12>> {
        Box::new(CircuitBox(*self)).prove_with_bellperson(params, r, s)
    }
}
