//! Uploads through page-locked staging buffers.
//!
//! A copy from ordinary (pageable) host memory runs at the driver's pace through its own
//! bounce buffer, one chunk at a time, with the calling thread blocked: about 8 GB/s
//! measured on an H200 host. [`Staging`] owns a few page-locked buffers; an upload fills one
//! with the host's cores in parallel while the DMA engine copies the previous one to the
//! device, so the transfer runs at the link's speed instead.
//!
//! Invariant: a staging buffer is written by the host only after the event recorded behind
//! its previous copy has completed, so the device never reads a half-overwritten chunk.
//! `Staging` is owned (`&mut`) by the one thread that drives its device: no lock.
//!
//! The host's part of a copy runs on a small thread pool of the `Staging`'s own, not on
//! rayon's global pool: there, witness generation for other partitions keeps every thread
//! busy for hundreds of milliseconds at a time, and a device waiting for its upload would
//! wait behind them (measured: 130 ms of device time per PoRep 2 KiB partition became 220).

use cudarc::driver::{CudaContext, CudaEvent, PinnedHostSlice};
use rayon::prelude::*;
use std::sync::Arc;

use crate::device::{range_end, DeviceBuffer, GpuDevice};
use crate::error::{Error, Result};
use crate::layout::DeviceElem;

/// Bytes of one staging buffer.
pub const STAGE_BYTES: usize = 32 << 20;
/// Number of staging buffers (the host fills one while the others are copied).
pub const STAGES: usize = 3;
/// Threads of a `Staging`'s copy pool (memory bandwidth, not core count, bounds a copy).
pub const STAGE_THREADS: usize = 8;

struct Stage {
    mem: PinnedHostSlice<u8>,
    /// Recorded on the device's stream after the last copy out of `mem`.
    done: CudaEvent,
}

/// Page-locked staging buffers of one device ([`STAGES`] x [`STAGE_BYTES`]).
pub struct Staging {
    ctx: Arc<CudaContext>,
    stages: Vec<Stage>,
    next: usize,
    /// Threads that fill the staging buffers.
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Staging[{} x {} MiB]",
            self.stages.len(),
            STAGE_BYTES >> 20
        )
    }
}

impl Staging {
    /// Allocates the staging buffers for `dev` (page-locked, write-combined host memory).
    pub fn new(dev: &GpuDevice) -> Result<Staging> {
        let ctx = dev.context().clone();
        let mut stages = Vec::with_capacity(STAGES);
        for _ in 0..STAGES {
            // SAFETY: the memory is uninitialised; it is only ever written by the host (below)
            // before a copy reads the bytes just written.
            let mem = unsafe { ctx.alloc_pinned::<u8>(STAGE_BYTES) }
                .map_err(dev.drv("allocating page-locked staging memory"))?;
            let done = ctx
                .new_event(None)
                .map_err(dev.drv("creating a staging event"))?;
            stages.push(Stage { mem, done });
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(STAGE_THREADS)
            .thread_name(|i| format!("cuzk-stage-{i}"))
            .build()
            .map_err(|e| Error::Unsupported {
                op: "Staging::new",
                detail: format!("cannot start the copy threads: {e}"),
            })?;
        Ok(Staging {
            ctx,
            stages,
            next: 0,
            pool,
        })
    }

    /// Bytes of page-locked host memory held.
    pub fn num_bytes(&self) -> usize {
        self.stages.len() * STAGE_BYTES
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // The device may still be reading the last chunks: the memory is freed only after.
        for stage in &self.stages {
            let _ = stage.done.synchronize();
        }
    }
}

impl GpuDevice {
    /// Copies `host` into `dst[start .. start + host.len()]` through `staging`: the same
    /// result as [`GpuDevice::copy_to_device_at`], faster for large copies. The copy is queued
    /// on the device's stream (later operations see the data); the host slice may be reused
    /// as soon as this returns.
    pub fn copy_to_device_staged<T: DeviceElem>(
        &self,
        staging: &mut Staging,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
        start: usize,
    ) -> Result<()> {
        if !Arc::ptr_eq(&staging.ctx, self.context()) {
            return Err(Error::Unsupported {
                op: "copy_to_device_staged",
                detail: "staging buffers belong to another device".into(),
            });
        }
        let end = range_end("copy_to_device_staged", dst.len(), start, host.len())?;
        let raw = T::as_raw(host);
        let elem = std::mem::size_of::<T::Raw>();
        if elem > STAGE_BYTES {
            return self.copy_to_device_at(host, dst, start); // one element would not fit
        }
        let per = STAGE_BYTES / elem;
        let mut at = start;
        for chunk in raw.chunks(per) {
            let n_stages = staging.stages.len();
            let stage = &mut staging.stages[staging.next];
            staging.next = (staging.next + 1) % n_stages;
            stage
                .done
                .synchronize()
                .map_err(self.drv("waiting for a staging buffer"))?;
            let ptr = stage
                .mem
                .as_mut_ptr()
                .map_err(self.drv("reaching a staging buffer"))?;
            // SAFETY: `mem` holds STAGE_BYTES >= chunk.len() * elem bytes of page-locked memory,
            // page aligned (so aligned for T::Raw); no copy is reading it (its last copy's event
            // completed just above); the slice lives only within this iteration.
            let buf: &mut [T::Raw] =
                unsafe { std::slice::from_raw_parts_mut(ptr.cast::<T::Raw>(), chunk.len()) };
            staging.pool.install(|| {
                buf.par_chunks_mut(1 << 16)
                    .zip(chunk.par_chunks(1 << 16))
                    .for_each(|(d, s)| d.copy_from_slice(s))
            });
            let mut view = dst.inner.slice_mut(at..at + chunk.len());
            self.stream()
                .memcpy_htod(&*buf, &mut view)
                .map_err(self.drv("copying to the device"))?;
            stage
                .done
                .record(self.stream())
                .map_err(self.drv("recording a staging event"))?;
            at += chunk.len();
        }
        debug_assert_eq!(at, end);
        Ok(())
    }

    /// `host` on the device: through `staging` where given ([`GpuDevice::upload_staged`]),
    /// else as [`GpuDevice::upload`] does.
    pub(crate) fn upload_maybe_staged<T: DeviceElem>(
        &self,
        host: &[T],
        staging: Option<&mut Staging>,
    ) -> Result<DeviceBuffer<T>> {
        match staging {
            Some(staging) => self.upload_staged(staging, host, host.len()),
            None => self.upload(host),
        }
    }

    /// A new device buffer of `len >= host.len()` elements: `host` copied through `staging`,
    /// then zeros.
    pub fn upload_staged<T: DeviceElem>(
        &self,
        staging: &mut Staging,
        host: &[T],
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        if len < host.len() {
            return Err(Error::Length {
                op: "upload_staged",
                expected: len,
                got: host.len(),
            });
        }
        let mut buf = if len == host.len() {
            self.alloc_uninit(len)?
        } else {
            self.alloc_zeroed(len)?
        };
        self.copy_to_device_staged(staging, host, &mut buf, 0)?;
        Ok(buf)
    }
}
