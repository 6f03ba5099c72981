//! Bases streamed from host memory: an MSM whose points are not resident on the device.
//!
//! [`PinnedPoints`] registers a host vector of points as page-locked memory once per process
//! (portable: every device's context can copy from it), so that copies out of it run at the
//! link's speed without passing through a staging buffer. [`BaseRing`] holds a few device
//! buffers of one chunk of points each and a copy stream of its own: while the device's
//! stream accumulates one chunk, the copy stream brings the next one into the other
//! buffer ([`GpuDevice::msm_streamed`]).
//!
//! Ordering is cudarc's event tracking (the ring's copy stream is a second stream of the
//! context, which turns it on): a copy into a buffer waits for the kernels that read the
//! chunk it held before, and the kernels that read a chunk wait for its copy. So a chunk is
//! never overwritten while it is read, nor read before it has arrived; no lock is taken.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaView};

use crate::curve::MsmCurve;
use crate::device::{DeviceBuffer, GpuDevice};
use crate::error::{Error, Result};
use crate::layout::DeviceElem;

/// `CU_MEMHOSTREGISTER_PORTABLE`: the registration holds for every context of the process.
const REGISTER_PORTABLE: std::ffi::c_uint = 0x01;

/// A host vector of points registered as page-locked memory for as long as this value
/// lives. It keeps its own reference to the vector, so the memory cannot move or be freed
/// while registered.
pub struct PinnedPoints<T: DeviceElem> {
    data: Arc<Vec<T>>,
    /// The context the registration was made in (portable, but unregistered through it).
    ctx: Option<Arc<CudaContext>>,
}

impl<T: DeviceElem> std::fmt::Debug for PinnedPoints<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedPoints[{}]", self.data.len())
    }
}

impl<T: DeviceElem> PinnedPoints<T> {
    /// Registers `data`'s memory as page-locked, portable to every context, through `dev`'s
    /// context. An empty vector registers nothing.
    pub fn register(dev: &GpuDevice, data: Arc<Vec<T>>) -> Result<Self> {
        if data.is_empty() {
            return Ok(PinnedPoints { data, ctx: None });
        }
        let ctx = dev.context().clone();
        ctx.bind_to_thread()
            .map_err(dev.drv("binding the context to register host memory"))?;
        let bytes = std::mem::size_of_val(data.as_slice());
        // SAFETY: the pointer and length describe the live allocation of `data`, which this
        // value keeps alive and unmoved (an `Arc` clone: nobody can get `&mut` to it) until
        // `drop` unregisters it. The driver only pins the pages; it writes nothing.
        let rc = unsafe {
            cudarc::driver::sys::cuMemHostRegister_v2(
                data.as_ptr() as *mut std::ffi::c_void,
                bytes,
                REGISTER_PORTABLE,
            )
        };
        rc.result()
            .map_err(dev.drv("registering host memory as page-locked"))?;
        Ok(PinnedPoints {
            data,
            ctx: Some(ctx),
        })
    }

    /// The points.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// Bytes registered.
    pub fn num_bytes(&self) -> usize {
        std::mem::size_of_val(self.data.as_slice())
    }
}

impl<T: DeviceElem> Drop for PinnedPoints<T> {
    fn drop(&mut self) {
        let Some(ctx) = &self.ctx else { return };
        if ctx.bind_to_thread().is_err() {
            return; // the context is gone: so is the registration
        }
        // SAFETY: the pointer is the one registered in `register`, still alive (we hold the
        // `Arc`); every copy out of it was queued by a proof that has since synchronised.
        let rc = unsafe {
            cudarc::driver::sys::cuMemHostUnregister(self.data.as_ptr() as *mut std::ffi::c_void)
        };
        if let Err(e) = rc.result() {
            tracing::warn!(error = %e, "unregistering page-locked host memory failed");
        }
    }
}

/// Device buffers of one chunk of points each, filled in turn on a copy stream of their own
/// (see the module documentation). Owned by the thread that drives its device.
pub struct BaseRing<C: MsmCurve> {
    copy: GpuDevice,
    slots: Vec<DeviceBuffer<C::Affine>>,
    chunk: usize,
    next: usize,
    moved: u64,
}

impl<C: MsmCurve> std::fmt::Debug for BaseRing<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "BaseRing<{}>[{} x {}]",
            C::NAME,
            self.slots.len(),
            self.chunk
        )
    }
}

/// Fewest buffers of a ring: one read by kernels while the next is filled.
pub const MIN_SLOTS: usize = 2;

impl<C: MsmCurve> BaseRing<C> {
    /// A ring of `slots` (at least [`MIN_SLOTS`]) buffers of `chunk` points (at least 1) on
    /// `dev`, with its own copy stream.
    pub fn new(dev: &GpuDevice, chunk: usize, slots: usize) -> Result<Self> {
        if chunk == 0 || slots < MIN_SLOTS {
            return Err(Error::Unsupported {
                op: "BaseRing::new",
                detail: format!("{slots} buffers of {chunk} points"),
            });
        }
        // The copy stream first: with a second stream the context tracks events, and the
        // buffers allocated after it carry the events that order copies and kernels.
        let copy = dev.side_stream()?;
        let slots = (0..slots)
            .map(|_| dev.alloc_zeroed::<C::Affine>(chunk))
            .collect::<Result<Vec<_>>>()?;
        Ok(BaseRing {
            copy,
            slots,
            chunk,
            next: 0,
            moved: 0,
        })
    }

    /// Device bytes a ring of `slots` buffers of `chunk` points takes.
    pub fn bytes_for(chunk: usize, slots: usize) -> u64 {
        (chunk * slots * std::mem::size_of::<C::Affine>()) as u64
    }

    /// Points a buffer holds: the MSM's chunk.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Device bytes the ring's buffers take.
    pub fn num_bytes(&self) -> u64 {
        Self::bytes_for(self.chunk, self.slots.len())
    }

    /// Bytes copied from the host into the ring since it was made.
    pub fn bytes_moved(&self) -> u64 {
        self.moved
    }

    /// Queues the copy of `host` (at most one chunk) into the next buffer on the copy
    /// stream and returns that buffer's index, for [`BaseRing::view`] once kernels on the
    /// device's stream are to read it.
    ///
    /// `host` must stay alive and unchanged until the device's stream has passed the
    /// kernels that read the view: when it is registered memory ([`PinnedPoints`]) the copy
    /// runs after this returns. Callers pass slices of a [`PinnedPoints`] they hold for the
    /// whole MSM, which reads its result back (synchronising) before returning.
    pub(crate) fn fill(&mut self, host: &[C::Affine]) -> Result<usize> {
        if host.len() > self.chunk {
            return Err(Error::Length {
                op: "BaseRing::fill",
                expected: self.chunk,
                got: host.len(),
            });
        }
        let i = self.next;
        self.next = (self.next + 1) % self.slots.len();
        let copy = &self.copy;
        let slot = &mut self.slots[i];
        copy.stream()
            .memcpy_htod(
                <C::Affine as DeviceElem>::as_raw(host),
                &mut slot.view_mut(0..host.len()),
            )
            .map_err(copy.drv("copying bases to the device"))?;
        self.moved += std::mem::size_of_val(host) as u64;
        Ok(i)
    }

    /// Waits for every copy queued into the ring (a chunk whose scalars are all zero is
    /// copied but read by no kernel: its copy may still be in flight when an MSM returns).
    pub fn wait(&self) -> Result<()> {
        self.copy.synchronize()
    }

    /// The first `len` points of buffer `slot` (as [`BaseRing::fill`] returned it): kernels
    /// queued on any stream of the device that read it wait for its copy.
    pub(crate) fn view(
        &self,
        slot: usize,
        len: usize,
    ) -> CudaView<'_, <C::Affine as DeviceElem>::Raw> {
        self.slots[slot].view(0..len)
    }
}
