//! Circuit parameters streamed from host memory: for devices whose memory budget cannot
//! hold a circuit's bases beside a partition's working memory.
//!
//! A circuit's five queries are registered as page-locked host memory once per process
//! ([`host_srs`]: a [`HostSrs`] of [`crate::pinned`], kept with the [`Srs`] and shared by
//! every device); each device streams them through two rings of device buffers ([`Rings`],
//! sized by [`super::vram`]), a chunk of points at a time, while its kernels work on the
//! previous chunk. Where registration fails (the system refuses to lock that much memory),
//! the bases are copied from ordinary memory: the same proofs, slower.

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, Scalar};
use cuzk_kernels::{BaseRing, DeviceBuffer, GpuDevice, G1, G2};

pub use super::vram::{g2_chunk, h_chunk, h_span, QueryLens, QUERY_SPAN, RING_SLOTS};
pub use crate::pinned::{HostQueries, HostSrs};
use crate::srs::Srs;

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

/// A device's two rings for streamed MSMs: G1 bases in chunks of `chunk` points, G2 bases
/// in chunks of half as many (the same bytes a buffer).
#[derive(Debug)]
pub struct Rings {
    /// G1 chunks (H, L, A, B in G1).
    pub g1: BaseRing<G1>,
    /// G2 chunks (B in G2).
    pub g2: BaseRing<G2>,
    /// Bytes the H MSMs' own rings copied ([`Rings::msm_h`]).
    h_moved: u64,
}

impl Rings {
    /// Rings of [`RING_SLOTS`] buffers on `dev` for G1 chunks of `chunk` points.
    pub fn new(dev: &GpuDevice, chunk: usize) -> cuzk_kernels::Result<Self> {
        Ok(Rings {
            g1: BaseRing::new(dev, chunk, RING_SLOTS)?,
            g2: BaseRing::new(dev, g2_chunk(chunk), RING_SLOTS)?,
            h_moved: 0,
        })
    }

    /// The H MSM of a partition whose queries have the counts `lens`: `sum_i scalars[from +
    /// i] * h[i]` for `i < n` (`scalars` is the domain buffer). It streams in chunks of
    /// [`h_chunk`] points, through a ring of its own allocated for the call where that
    /// exceeds these rings' chunk (its buffers are freed on return), planned as [`h_span`]
    /// says; the device memory plan counts that ring in the H phase.
    pub fn msm_h(
        &mut self,
        dev: &GpuDevice,
        h: &[G1Affine],
        n: usize,
        scalars: &DeviceBuffer<Scalar>,
        from: usize,
        lens: &QueryLens,
    ) -> cuzk_kernels::Result<G1Projective> {
        let chunk = self.chunk();
        let m = scalars.len().max(1).next_power_of_two() as u64;
        let h_chunk = h_chunk(lens, m, chunk);
        let span = h_span(h_chunk);
        if h_chunk <= chunk {
            return dev.msm_streamed(h, 0..n, scalars, from, &mut self.g1, span);
        }
        let mut ring = BaseRing::<G1>::new(dev, h_chunk, RING_SLOTS)?;
        let sum = dev.msm_streamed(h, 0..n, scalars, from, &mut ring, span);
        // no copy may still be writing into the ring's buffers when they are freed
        let waited = ring.wait();
        self.h_moved += ring.bytes_moved();
        let sum = sum?;
        waited?;
        Ok(sum)
    }

    /// Device bytes of rings for G1 chunks of `chunk` points.
    pub fn bytes_for(chunk: usize) -> u64 {
        super::vram::rings_bytes(chunk)
    }

    /// The G1 chunk.
    pub fn chunk(&self) -> usize {
        self.g1.chunk()
    }

    /// Bytes both rings, and the H MSMs' own, have copied from the host.
    pub fn bytes_moved(&self) -> u64 {
        self.g1.bytes_moved() + self.g2.bytes_moved() + self.h_moved
    }
}
