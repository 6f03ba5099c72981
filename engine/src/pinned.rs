//! A circuit's query bases in host memory, for GPUs that stream them: registered once a
//! process as page-locked memory ([`HostSrs`], kept with the [`crate::Srs`]), or read where
//! they lie ([`HostQueries::of`]). The CUDA backend streams them ([`crate::cuda::streamed`]).

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine};
use cuzk_kernels::{GpuDevice, PinnedPoints};

/// A circuit's query bases registered as page-locked host memory (portable: every device's
/// context copies from it at the link's speed). Unregistered when dropped.
#[derive(Debug)]
pub struct HostSrs {
    h: PinnedPoints<G1Affine>,
    l: PinnedPoints<G1Affine>,
    a: PinnedPoints<G1Affine>,
    b_g1: PinnedPoints<G1Affine>,
    b_g2: PinnedPoints<G2Affine>,
}

impl HostSrs {
    /// Registers `params`' five queries through `dev`'s context (no copy: the parameters'
    /// own vectors are pinned in place and kept alive by this value).
    pub fn register(dev: &GpuDevice, params: &Parameters<Bls12>) -> cuzk_kernels::Result<Self> {
        Ok(HostSrs {
            h: PinnedPoints::register(dev, params.h.clone())?,
            l: PinnedPoints::register(dev, params.l.clone())?,
            a: PinnedPoints::register(dev, params.a.clone())?,
            b_g1: PinnedPoints::register(dev, params.b_g1.clone())?,
            b_g2: PinnedPoints::register(dev, params.b_g2.clone())?,
        })
    }

    /// Bytes registered.
    pub fn num_bytes(&self) -> u64 {
        [
            self.h.num_bytes(),
            self.l.num_bytes(),
            self.a.num_bytes(),
            self.b_g1.num_bytes(),
            self.b_g2.num_bytes(),
        ]
        .iter()
        .map(|&b| b as u64)
        .sum()
    }

    /// The five queries as slices of the registered memory.
    pub fn queries(&self) -> HostQueries<'_> {
        HostQueries {
            h: self.h.as_slice(),
            l: self.l.as_slice(),
            a: self.a.as_slice(),
            b_g1: self.b_g1.as_slice(),
            b_g2: self.b_g2.as_slice(),
        }
    }
}

/// A circuit's five queries in host memory, for [`crate::cuda::prove_msms`]'s streamed MSMs.
#[derive(Clone, Copy, Debug)]
pub struct HostQueries<'a> {
    /// H query.
    pub h: &'a [G1Affine],
    /// L query.
    pub l: &'a [G1Affine],
    /// A query.
    pub a: &'a [G1Affine],
    /// B query in G1.
    pub b_g1: &'a [G1Affine],
    /// B query in G2.
    pub b_g2: &'a [G2Affine],
}

impl<'a> HostQueries<'a> {
    /// The queries of `params` in their own (pageable) memory.
    pub fn of(params: &'a Parameters<Bls12>) -> Self {
        HostQueries {
            h: &params.h,
            l: &params.l,
            a: &params.a,
            b_g1: &params.b_g1,
            b_g2: &params.b_g2,
        }
    }
}
