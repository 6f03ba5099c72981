//! Filecoin circuit builders: vanilla proofs in, one circuit and its public inputs per
//! partition out, for every proof kind and every published sector size.
//!
//! | module | kind |
//! |---|---|
//! | [`porep`] | PoRep commit phase 2 from a C1 output |
//! | [`post`] | WinningPoSt and WindowPoSt from sector vanilla proofs |
//! | [`snap`] | SnapDeals (EmptySectorUpdate) from partition vanilla proofs |
//! | [`synthetic`] | circuits of chosen shapes, for tests and benchmarks |
//! | [`partition`] | one partition's circuit of any kind, its checks, a request's plan |

mod decode;
mod label_witness;
pub mod partition;
mod por_witness;
pub mod porep;
mod porep_witness;
mod poseidon_witness;
pub mod post;
mod sha256_witness;
mod shape;
pub mod snap;
pub mod synthetic;

use bellperson::groth16::Parameters;
use blstrs::Bls12;

use crate::error::{catch_panic, Error, Result};
use crate::kind::{ProofKind, RegisteredProof};
use crate::paramgen::streaming::BlankCircuit;
use crate::request::{ProofInputs, ProofRequest};
pub use partition::{
    check_satisfied, parallel_witness_pays, synthesize_on_pool, CircuitBox, PartitionCircuit,
    PartitionJob, ProofPlan, LARGE_PARTITION_ROWS,
};
pub(crate) use shape::with_shape;

/// Builds the plan for a request: decodes its vanilla proofs, checks their shape, and builds
/// each partition's circuit and public inputs.
#[tracing::instrument(skip_all, fields(kind = %request.proof.kind, size = %request.proof.sector_size))]
pub fn plan(request: &ProofRequest) -> Result<ProofPlan> {
    let proof = request.proof;
    catch_panic("building circuits", || {
        match (&request.inputs, proof.kind) {
            (ProofInputs::Porep { c1_json, sector }, ProofKind::PorepC2) => {
                porep::plan(proof, c1_json, sector.as_ref())
            }
            (ProofInputs::Post(post), ProofKind::WinningPost | ProofKind::WindowPost) => {
                post::plan(proof, post)
            }
            (ProofInputs::Snap(snap), ProofKind::SnapDeals) => snap::plan(proof, snap),
            (inputs, kind) => Err(Error::InvalidRequest(format!(
                "a {kind} request cannot carry {} inputs",
                inputs.describe()
            ))),
        }
    })
}

pub use crate::paramgen::ParamGenerator;

/// The parameter-cache identifier of `proof`'s circuit, without touching any file.
pub fn params_identifier(proof: RegisteredProof) -> Result<String> {
    match proof.kind {
        ProofKind::PorepC2 => porep::params_identifier(proof),
        ProofKind::WinningPost | ProofKind::WindowPost => post::params_identifier(proof),
        ProofKind::SnapDeals => snap::params_identifier(proof),
    }
}

/// Generates fresh (insecure, test-only) Groth16 parameters for `proof`'s circuit, with
/// our generator ([`crate::paramgen`]: bellperson's parameters for the same `rng`, faster).
pub fn generate_params<R: rand_core::RngCore>(
    proof: RegisteredProof,
    rng: &mut R,
) -> Result<Parameters<Bls12>> {
    generate_params_with(proof, rng, ParamGenerator::Cuzk)
}

/// [`generate_params`] with the generator chosen: the same parameters either way (for
/// benchmarks and cross-checks).
pub fn generate_params_with<R: rand_core::RngCore>(
    proof: RegisteredProof,
    rng: &mut R,
    generator: ParamGenerator,
) -> Result<Parameters<Bls12>> {
    blank(proof)?
        .generate(generator, rng)
        .map_err(Error::filecoin)
}

/// The blank circuit (no witness) of `proof`, which its parameters are made for.
pub fn blank(proof: RegisteredProof) -> Result<Box<dyn BlankCircuit>> {
    let res = match proof.kind {
        ProofKind::PorepC2 => porep::blank(proof),
        ProofKind::WinningPost | ProofKind::WindowPost => post::blank(proof),
        ProofKind::SnapDeals => snap::blank(proof),
    };
    res.map_err(Error::filecoin)
}
