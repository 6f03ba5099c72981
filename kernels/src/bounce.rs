//! Small copies between host and device through page-locked bounce buffers.
//!
//! A copy between the device and ordinary (pageable) host memory is synchronous in the CUDA
//! driver: it waits for everything queued before it on its stream, and while it waits, the
//! driver calls of the process's other threads on the same context wait too (NVIDIA's
//! developer forum, "Cross-thread pageable D2H copy appears to delay cudaLaunchKernel in
//! another thread"). A partition reads back a few hundred bytes at every step of every MSM
//! and uploads its density bitmaps for the compactions, while another thread uploads the
//! next partition on a side stream: each of those small pageable copies held the other
//! thread's copies back until the kernels before it had finished (measured on an H200:
//! 4 MB uploaded ahead took 15-18 ms, 16 MB 20-26 ms).
//!
//! With a page-locked buffer the copy is an ordinary queued DMA, and a read-back waits for
//! its stream with a stream synchronisation, which holds nobody else back.
//!
//! Invariant: a bounce buffer belongs to whoever took it from the pool, until it is given
//! back; an upload's buffer is written again only after the event recorded behind its copy
//! has completed. The pool is a channel of owned buffers, no lock.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DevicePtr, DeviceRepr, PinnedHostSlice};

/// Copies of at most this many bytes go through a bounce buffer; larger ones are bulk
/// data, for [`crate::Staging`] or a pageable copy.
pub const BOUNCE_MAX_BYTES: usize = 16 << 20;
/// Smallest bounce buffer allocated (pinned allocations are slow: a few sizes serve all).
const MIN_BYTES: usize = 256 << 10;
/// Buffers kept for reuse per device.
const KEPT: usize = 8;

/// One page-locked host buffer (cached, not write-combined: read-backs are read by the host).
pub(crate) struct Bounce {
    mem: PinnedHostSlice<u8>,
    /// Recorded behind the last upload out of `mem`.
    done: CudaEvent,
}

impl Bounce {
    fn bytes(&self) -> usize {
        self.mem.len()
    }
}

impl Drop for Bounce {
    /// A buffer dropped right after its upload was queued (the pool was full) is freed only
    /// once the copy has read it.
    fn drop(&mut self) {
        let _ = self.done.synchronize();
    }
}

/// The bounce buffers of one device: taken, used, given back.
pub(crate) struct BouncePool {
    ctx: Arc<CudaContext>,
    tx: crossbeam_channel::Sender<Bounce>,
    rx: crossbeam_channel::Receiver<Bounce>,
}

impl Clone for BouncePool {
    /// Another handle to the same pool (a side stream's device handle shares its buffers).
    fn clone(&self) -> Self {
        BouncePool {
            ctx: self.ctx.clone(),
            tx: self.tx.clone(),
            rx: self.rx.clone(),
        }
    }
}

impl BouncePool {
    pub(crate) fn new(ctx: Arc<CudaContext>) -> Self {
        let (tx, rx) = crossbeam_channel::bounded(KEPT);
        BouncePool { ctx, tx, rx }
    }

    /// A buffer of at least `bytes`: a kept one, or a new one.
    fn take(&self, bytes: usize) -> std::result::Result<Bounce, cudarc::driver::DriverError> {
        let mut small = Vec::new();
        let found = loop {
            match self.rx.try_recv() {
                Ok(b) if b.bytes() >= bytes => break Some(b),
                Ok(b) => small.push(b),
                Err(_) => break None,
            }
        };
        for b in small {
            self.give(b);
        }
        if let Some(b) = found {
            return Ok(b);
        }
        let size = bytes.max(MIN_BYTES).next_power_of_two();
        // SAFETY: the bytes are uninitialised; every use writes what it then reads (an upload
        // writes before its copy; a read-back's copy writes before the host reads).
        let mem = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(size, 0) }?;
        let done = self.ctx.new_event(None)?;
        Ok(Bounce { mem, done })
    }

    /// Keeps `b` for reuse (dropped, and freed, when [`KEPT`] are kept already).
    fn give(&self, b: Bounce) {
        let _ = self.tx.try_send(b);
    }

    /// Queues a copy of `host` into `dst` on `stream` through a bounce buffer. Returns as
    /// soon as the copy is queued; `host` may be reused at once.
    pub(crate) fn upload<T: DeviceRepr + Copy, D: cudarc::driver::DevicePtrMut<T>>(
        &self,
        stream: &Arc<CudaStream>,
        host: &[T],
        dst: &mut D,
    ) -> std::result::Result<(), cudarc::driver::DriverError> {
        let bytes = std::mem::size_of_val(host);
        let mut b = self.take(bytes)?;
        b.done.synchronize()?; // the last copy out of this buffer has read it
        let ptr = b.mem.as_mut_ptr()?;
        // SAFETY: `mem` holds at least `bytes` bytes of page-locked memory, page aligned (so
        // aligned for T); this thread owns the buffer and no copy reads it (its event
        // completed just above); the slice lives until the copy is queued below.
        let buf: &mut [T] = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<T>(), host.len()) };
        buf.copy_from_slice(host);
        stream.memcpy_htod(&*buf, dst)?;
        b.done.record(stream)?;
        self.give(b);
        Ok(())
    }

    /// Copies `src` to a new host vector through a bounce buffer, waiting for `stream`
    /// (everything queued on it before the copy included).
    pub(crate) fn read_back<T: DeviceRepr + Copy, S: DevicePtr<T>>(
        &self,
        stream: &Arc<CudaStream>,
        src: &S,
    ) -> std::result::Result<Vec<T>, cudarc::driver::DriverError> {
        let len = src.len();
        let mut b = self.take(len * std::mem::size_of::<T>())?;
        b.done.synchronize()?;
        let ptr = b.mem.as_mut_ptr()?;
        // SAFETY: as in `upload`; the device writes these bytes (the copy below) before the
        // host reads them, after the stream synchronisation.
        let buf: &mut [T] = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<T>(), len) };
        stream.memcpy_dtoh(src, buf)?;
        stream.synchronize()?;
        let out = buf.to_vec();
        self.give(b);
        Ok(out)
    }
}

/// Whether a copy of `bytes` goes through a bounce buffer.
pub(crate) fn bounced(bytes: usize) -> bool {
    bytes <= BOUNCE_MAX_BYTES
}
