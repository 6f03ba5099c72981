//! The CPU backend: rayon NTTs for H, and MSMs by Pippenger's method: blst's for G1,
//! batch-affine buckets ([`batch_affine`]) for G2, which measured faster there ([`msm`]).
//! [`ops`] puts them behind the device-operation seam ([`crate::device_ops`]), through which
//! [`CpuBackend`] proves. It is the embedded default when no GPU is present and the
//! reference for every other backend.

pub mod batch_affine;
pub mod msm;
pub mod ntt;
pub mod ops;

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use cuzk_pce::Assignment;

use crate::device_ops::prove_partition;
use crate::error::Result;
use crate::param_file::Srs;
use crate::prover::Backend;
pub use ops::CpuOps;

/// Proves on the host's cores: [`CpuOps`] through [`prove_partition`].
#[derive(Clone, Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn prove(
        &mut self,
        srs: &Srs,
        asg: Assignment,
        r: Scalar,
        s: Scalar,
        partition: usize,
    ) -> Result<Proof<Bls12>> {
        prove_partition(&mut CpuOps, srs, asg, r, s, partition)
    }
}
