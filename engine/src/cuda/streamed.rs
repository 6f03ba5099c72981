//! Circuit parameters streamed from host memory: for devices whose memory budget cannot
//! hold a circuit's bases beside a partition's working memory.
//!
//! A circuit's five queries are registered as page-locked host memory once per process
//! ([`HostSrs`], kept with the [`Srs`] and shared by every device); each device streams them
//! through two rings of device buffers ([`Rings`]), a chunk of points at a time, while its
//! kernels work on the previous chunk. Where registration fails (the system refuses to lock
//! that much memory), the bases are copied from ordinary memory: the same proofs, slower.

use std::sync::Arc;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine};
use cuzk_kernels::{BaseRing, GpuDevice, PinnedPoints, G1, G2};

use super::vram::QueryLens;
use crate::srs::Srs;

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

/// `srs`'s registered host copy, registered through `dev` at the first call for this `Srs`
/// in the process (every later call, from any device, shares it); `None` when registration
/// failed, which is tried once and logged.
pub fn host_srs(dev: &GpuDevice, srs: &Srs) -> Option<Arc<HostSrs>> {
    srs.host_pinned
        .get_or_init(|| {
            let started = std::time::Instant::now();
            match HostSrs::register(dev, &srs.params) {
                Ok(h) => {
                    tracing::info!(bytes = h.num_bytes(), ms = started.elapsed().as_millis() as u64,
                        path = %srs.path.display(), "parameters registered as page-locked host memory");
                    Some(Arc::new(h))
                }
                Err(e) => {
                    tracing::warn!(error = %e, path = %srs.path.display(),
                        "cannot register the parameters as page-locked memory: streaming them \
                         from ordinary memory (slower)");
                    None
                }
            }
        })
        .clone()
}

/// A circuit's five queries in host memory, for [`super::prove_msms`]'s streamed MSMs.
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

    /// Point counts of the five queries.
    pub fn lens(&self) -> QueryLens {
        QueryLens {
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
            b_g2: self.b_g2.len(),
        }
    }
}

/// A device's two rings for streamed MSMs: G1 bases in chunks of `chunk` points, G2 bases
/// in chunks of half as many (the same bytes a buffer).
#[derive(Debug)]
pub struct Rings {
    /// G1 chunks (H, L, A, B in G1).
    pub g1: BaseRing<G1>,
    /// G2 chunks (B in G2).
    pub g2: BaseRing<G2>,
}

/// Buffers of each ring: one read by the kernels while the next is filled.
pub const RING_SLOTS: usize = 2;

impl Rings {
    /// Rings of [`RING_SLOTS`] buffers on `dev` for G1 chunks of `chunk` points.
    pub fn new(dev: &GpuDevice, chunk: usize) -> cuzk_kernels::Result<Self> {
        Ok(Rings {
            g1: BaseRing::new(dev, chunk, RING_SLOTS)?,
            g2: BaseRing::new(dev, g2_chunk(chunk), RING_SLOTS)?,
        })
    }

    /// Device bytes of rings for G1 chunks of `chunk` points.
    pub fn bytes_for(chunk: usize) -> u64 {
        BaseRing::<G1>::bytes_for(chunk, RING_SLOTS)
            + BaseRing::<G2>::bytes_for(g2_chunk(chunk), RING_SLOTS)
    }

    /// The G1 chunk.
    pub fn chunk(&self) -> usize {
        self.g1.chunk()
    }

    /// Bytes both rings have copied from the host.
    pub fn bytes_moved(&self) -> u64 {
        self.g1.bytes_moved() + self.g2.bytes_moved()
    }
}

/// G2 points a ring buffer of `chunk` G1 points' bytes holds (at least 1).
pub fn g2_chunk(chunk: usize) -> usize {
    (chunk / 2).max(1)
}
