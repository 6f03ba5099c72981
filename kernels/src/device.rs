//! A CUDA device handle: context, stream, identity, compiled-module cache, typed buffers.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaView, CudaViewMut,
    DriverError,
};
use cudarc::nvrtc::Ptx;

use crate::bounce::{bounced, BouncePool};
use crate::compile::{self, KernelModule};
use crate::error::{Error, Result};
use crate::layout::DeviceElem;

/// PCI location of a device: `domain:bus:device`, stable across `CUDA_VISIBLE_DEVICES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciId {
    /// PCI domain.
    pub domain: u32,
    /// PCI bus.
    pub bus: u32,
    /// PCI device.
    pub device: u32,
}

impl fmt::Display for PciId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}",
            self.domain, self.bus, self.device
        )
    }
}

/// Which operations of a device time their steps apart ([`GpuDevice::set_step_timing`]; [`crate::profile`]
/// does the timing).
/// Off (the default) for both; the results never depend on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepTiming {
    /// Each step of an MSM chunk (labelled `msm <curve> n=<points>`) and of the engine's
    /// query scalars (`query <name>`).
    pub msm: bool,
    /// Each pass of a transform (labelled `ntt 2^<log size>`).
    pub ntt: bool,
}

impl StepTiming {
    /// `msm`, `ntt` or `all`, as the benchmarks' `--profile` takes it; `None` for anything
    /// else.
    pub fn parse(what: &str) -> Option<StepTiming> {
        match what {
            "msm" => Some(StepTiming {
                msm: true,
                ntt: false,
            }),
            "ntt" => Some(StepTiming {
                msm: false,
                ntt: true,
            }),
            "all" => Some(StepTiming {
                msm: true,
                ntt: true,
            }),
            _ => None,
        }
    }
}

/// One CUDA device: its primary context, one stream on which every operation of this crate
/// is queued in order, and the kernel modules loaded so far.
///
/// Operations take `&self`; they are ordered on the device's stream. Use one `GpuDevice`
/// per device per process, owned by the thread that drives that device.
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    ordinal: usize,
    pci: PciId,
    uuid: [u8; 16],
    name: String,
    total_memory: usize,
    arch: String,
    /// Bytes of shared memory one block may opt in to (227 KiB on an H200, 99 KiB on
    /// consumer GPUs).
    shared_per_block: usize,
    /// One cell per module of [`compile::MODULES`], filled at first use. Cells, not a lock:
    /// a device is driven by the one thread that owns it; were two threads to race on a
    /// first load, both load and one result is kept.
    modules: HashMap<&'static str, OnceLock<Arc<CudaModule>>>,
    pub(crate) ntt_tables: std::sync::OnceLock<crate::twiddles::NttTables>,
    /// The NTT's top twiddle table (2 GiB, `ntt::TOP_TABLE_BYTES`), built at the first
    /// transform that can use it; empty while it could not be allocated. One per device:
    /// shared with the handles of [`GpuDevice::side_stream`].
    pub(crate) ntt_top: Arc<OnceLock<cudarc::driver::CudaSlice<crate::layout::FrRaw>>>,
    /// Page-locked buffers for small copies (shared with this device's side streams).
    pub(crate) bounce: BouncePool,
    /// Which operations time their steps apart (off unless set; copied to side streams).
    step_timing: StepTiming,
    /// Directory of the CUBIN cache ([`compile::default_cache_dir`] unless set; copied to
    /// side streams).
    kernel_cache: PathBuf,
}

impl fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuDevice")
            .field("ordinal", &self.ordinal)
            .field("pci", &self.pci.to_string())
            .field("name", &self.name)
            .field("arch", &self.arch)
            .finish()
    }
}

/// Makes the device's default memory pool keep the memory freed into it instead of handing
/// it back to the driver at every synchronisation (the default, release threshold 0).
///
/// cudarc allocates with `cuMemAllocAsync` from that pool, and a partition allocates and
/// frees gigabytes between phases that each end with a synchronisation: with the default,
/// every phase maps its memory afresh. Kept memory is reused by this process's next
/// allocations; the pool never holds more than the process's own peak.
fn keep_pool_memory(ctx: &Arc<CudaContext>) -> std::result::Result<(), DriverError> {
    if !ctx.has_async_alloc() {
        return Ok(()); // no pool: cudarc allocates synchronously
    }
    ctx.bind_to_thread()?;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `pool` is a valid out-pointer; the device handle comes from a live context.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }.result()?;
    let mut threshold: u64 = u64::MAX;
    // SAFETY: the release threshold attribute takes a pointer to a u64 (cuuint64_t), which
    // lives across the call; `pool` was just returned by the driver for this device.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()
}

/// Whether the CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library by its candidate names.
    unsafe { sys::is_culib_present() }
}

/// Number of CUDA devices visible to this process; 0 when there is no driver.
pub fn device_count() -> usize {
    if !driver_present() {
        return 0;
    }
    CudaContext::device_count()
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
}

impl GpuDevice {
    /// Opens device `ordinal` (as numbered under the current `CUDA_VISIBLE_DEVICES`).
    #[tracing::instrument(skip_all, fields(ordinal))]
    pub fn open(ordinal: usize) -> Result<Self> {
        if !driver_present() {
            return Err(Error::DriverUnavailable);
        }
        let drv = |op: &'static str| {
            move |source: DriverError| Error::Driver {
                op,
                ordinal,
                source,
            }
        };
        let ctx = CudaContext::new(ordinal).map_err(drv("opening the context"))?;
        let attr = |a| ctx.attribute(a).map_err(drv("reading a device attribute"));
        let pci = PciId {
            domain: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)? as u32,
            bus: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)? as u32,
            device: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)? as u32,
        };
        let uuid = ctx
            .uuid()
            .map_err(drv("reading the UUID"))?
            .bytes
            .map(|b| b as u8);
        let shared_per_block =
            attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                as usize;
        let name = ctx.name().map_err(drv("reading the name"))?;
        let total_memory = ctx.total_mem().map_err(drv("reading the memory size"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(drv("reading the compute capability"))?;
        keep_pool_memory(&ctx).map_err(drv("configuring the memory pool"))?;
        ctx.set_limit(
            sys::CUlimit::CU_LIMIT_STACK_SIZE,
            compile::KERNEL_STACK_BYTES,
        )
        .map_err(drv("reserving the kernels' stack"))?;
        let stream = ctx.default_stream();
        tracing::debug!(%pci, name, total_memory, major, minor, "opened CUDA device");
        Ok(Self {
            bounce: BouncePool::new(ctx.clone()),
            step_timing: StepTiming::default(),
            kernel_cache: compile::default_cache_dir(),
            ctx,
            stream,
            ordinal,
            pci,
            uuid,
            name,
            total_memory,
            arch: format!("sm_{major}{minor}"),
            shared_per_block,
            modules: compile::MODULES
                .iter()
                .map(|m| (m.name, OnceLock::new()))
                .collect(),
            ntt_tables: std::sync::OnceLock::new(),
            ntt_top: Arc::new(OnceLock::new()),
        })
    }

    /// CUDA ordinal under the current `CUDA_VISIBLE_DEVICES`.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
    /// PCI domain:bus:device.
    pub fn pci_id(&self) -> PciId {
        self.pci
    }
    /// The device UUID (16 bytes).
    pub fn uuid(&self) -> [u8; 16] {
        self.uuid
    }
    /// Marketing name, e.g. "NVIDIA H200".
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Bytes of shared memory one block may take when its kernel opts in (the driver's
    /// `MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
    pub fn shared_memory_per_block(&self) -> usize {
        self.shared_per_block
    }
    /// Total device memory in bytes.
    pub fn total_memory(&self) -> usize {
        self.total_memory
    }
    /// Free device memory in bytes, as the driver reports it now.
    pub fn free_memory(&self) -> Result<usize> {
        self.ctx
            .mem_get_info()
            .map(|(free, _)| free)
            .map_err(self.drv("reading free memory"))
    }
    /// The most device memory this process's allocations on the device have held at once
    /// since the device was opened or [`GpuDevice::reset_peak_memory`] (the default memory
    /// pool's `USED_MEM_HIGH`, measured by the driver: every buffer of this crate comes from
    /// that pool). Excludes the context and loaded modules. `None` where the driver has no
    /// memory pools (allocations are then synchronous and not counted).
    pub fn peak_memory(&self) -> Result<Option<u64>> {
        self.pool_attribute(
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
            None,
        )
        .map_err(self.drv("reading the memory pool's peak"))
    }

    /// Starts [`GpuDevice::peak_memory`] afresh from what is allocated now.
    pub fn reset_peak_memory(&self) -> Result<()> {
        self.pool_attribute(
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
            Some(0),
        )
        .map(|_| ())
        .map_err(self.drv("resetting the memory pool's peak"))
    }

    /// Reads (`set` None) or writes a u64 attribute of the device's default memory pool.
    fn pool_attribute(
        &self,
        attr: sys::CUmemPool_attribute,
        set: Option<u64>,
    ) -> std::result::Result<Option<u64>, DriverError> {
        if !self.ctx.has_async_alloc() {
            return Ok(None);
        }
        self.ctx.bind_to_thread()?;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is a valid out-pointer; the device handle comes from a live context.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device()) }.result()?;
        let mut value: u64 = set.unwrap_or(0);
        let ptr = (&mut value as *mut u64).cast();
        // SAFETY: the pool's memory attributes take a pointer to a u64 (cuuint64_t), which
        // lives across the call; `pool` was just returned by the driver for this device.
        unsafe {
            match set {
                Some(_) => sys::cuMemPoolSetAttribute(pool, attr, ptr),
                None => sys::cuMemPoolGetAttribute(pool, attr, ptr),
            }
        }
        .result()?;
        Ok(Some(value))
    }

    /// NVRTC architecture, e.g. `sm_90`.
    pub fn arch(&self) -> &str {
        &self.arch
    }
    /// The underlying context (for callers that need raw cudarc access).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// The stream on which this crate queues all work for this device.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A second handle to the same device and context with its own non-blocking stream: what
    /// is queued on it runs beside, not after, the work of this handle's stream (the copy
    /// engines move data while the SMs run kernels).
    ///
    /// Ordering between the two streams is cudarc's event tracking: once a context has a
    /// second stream, every buffer records the events of the work that wrote or read it, and
    /// a stream that uses the buffer next waits for them. So a buffer filled on the side
    /// stream is complete before a kernel on the main stream reads it, and it is freed only
    /// after that read. The first call moves the context into that mode (cudarc synchronises
    /// the context once, then). The handle has its own module cells and NTT tables, loaded
    /// only if kernels are queued on it, and shares the device's 2 GiB top twiddle table.
    pub fn side_stream(&self) -> Result<GpuDevice> {
        let stream = self
            .ctx
            .new_stream()
            .map_err(self.drv("creating a side stream"))?;
        Ok(GpuDevice {
            ctx: self.ctx.clone(),
            stream,
            ordinal: self.ordinal,
            pci: self.pci,
            uuid: self.uuid,
            name: self.name.clone(),
            total_memory: self.total_memory,
            arch: self.arch.clone(),
            shared_per_block: self.shared_per_block,
            modules: compile::MODULES
                .iter()
                .map(|m| (m.name, OnceLock::new()))
                .collect(),
            ntt_tables: std::sync::OnceLock::new(),
            ntt_top: self.ntt_top.clone(),
            bounce: self.bounce.clone(),
            step_timing: self.step_timing,
            kernel_cache: self.kernel_cache.clone(),
        })
    }

    /// Which operations time their steps apart on stderr ([`crate::profile`]).
    pub fn step_timing(&self) -> StepTiming {
        self.step_timing
    }

    /// Times the steps of the operations `timing` names apart, on stderr, synchronising
    /// after each (for measurements: slower, the same results); side streams made afterwards
    /// inherit it.
    pub fn set_step_timing(&mut self, timing: StepTiming) {
        self.step_timing = timing;
    }

    /// The directory whose CUBINs [`GpuDevice::load_module`] reads before compiling, and
    /// where it stores what it compiled.
    pub fn kernel_cache(&self) -> &Path {
        &self.kernel_cache
    }

    /// Reads and stores compiled modules in `dir` from now on (modules already loaded stay);
    /// side streams made afterwards inherit it. Front ends set it from their configuration
    /// before the first proof.
    pub fn set_kernel_cache(&mut self, dir: PathBuf) {
        self.kernel_cache = dir;
    }

    /// Waits until all queued work on the device's stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(self.drv("synchronizing"))
    }

    pub(crate) fn drv(&self, op: &'static str) -> impl Fn(DriverError) -> Error {
        let ordinal = self.ordinal;
        move |source| Error::Driver {
            op,
            ordinal,
            source,
        }
    }

    /// Loads a module (from the disk cache, or compiled with NVRTC), once per device for the
    /// modules of [`compile::MODULES`] (others are loaded on every call).
    pub fn load_module(&self, module: &KernelModule) -> Result<Arc<CudaModule>> {
        let cell = self.modules.get(module.name);
        if let Some(m) = cell.and_then(|c| c.get()) {
            return Ok(m.clone());
        }
        let span = tracing::info_span!("load_module", module = module.name, arch = %self.arch, pci = %self.pci);
        let _g = span.enter();
        let (cubin, cached) = compile::load_or_compile(&self.kernel_cache, module, &self.arch)?;
        let mut names = entry_names(&cubin);
        let loaded = match self.ctx.load_module(Ptx::from_binary(cubin)) {
            Ok(m) => m,
            Err(e) if cached => {
                // a corrupt or stale cache entry: drop it and compile afresh
                tracing::warn!(error = %e, "cached CUBIN rejected by the driver; recompiling");
                compile::evict(&self.kernel_cache, module, &self.arch);
                let cubin = compile::compile_module(module, &self.arch)?;
                names = entry_names(&cubin);
                self.ctx
                    .load_module(Ptx::from_binary(cubin))
                    .map_err(self.drv("loading a module"))?
            }
            Err(e) => return Err(self.drv("loading a module")(e)),
        };
        // Load every kernel of the module now, as eager module loading would, so a kernel's
        // first launch in a partition pays no loading. (This was once taken for the cure of
        // an intermittent MSM fault, whose cause turned out to be ptxas's code for
        // out-of-line point functions, see compile::INLINE_POINTS.)
        for name in &names {
            if let Ok(f) = loaded.load_function(name) {
                // SAFETY: `f` is a live function of the module loaded above.
                unsafe { sys::cuFuncLoad(f.cu_function()) }
                    .result()
                    .map_err(self.drv("loading a kernel"))?;
            }
        }
        tracing::debug!(cached, kernels = names.len(), "module loaded");
        Ok(match cell {
            Some(c) => c.get_or_init(|| loaded).clone(),
            None => loaded,
        })
    }

    /// A kernel function of a module (the module is loaded once per device; looking a
    /// function up in a loaded module is a driver table lookup).
    pub(crate) fn function(&self, module: &KernelModule, name: &str) -> Result<CudaFunction> {
        self.load_module(module)?
            .load_function(name)
            .map_err(self.drv("finding a kernel"))
    }

    /// Copies host elements into a new device buffer (queued; small copies go through a
    /// page-locked bounce buffer, see [`crate::bounce`]).
    pub fn upload<T: DeviceElem>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        if host.is_empty() || !bounced(std::mem::size_of_val(T::as_raw(host))) {
            let inner = self
                .stream
                .clone_htod(T::as_raw(host))
                .map_err(self.drv("copying to the device"))?;
            return Ok(DeviceBuffer {
                inner,
                _t: PhantomData,
            });
        }
        let mut buf = self.alloc_uninit(host.len())?;
        self.copy_raw_htod(T::as_raw(host), &mut buf.inner)?;
        Ok(buf)
    }

    /// Queues a copy of `host` into `dst`: through a bounce buffer when it is small, else
    /// straight from `host` (pageable: the driver waits for the stream first).
    fn copy_raw_htod<R: cudarc::driver::DeviceRepr + Copy, D: cudarc::driver::DevicePtrMut<R>>(
        &self,
        host: &[R],
        dst: &mut D,
    ) -> Result<()> {
        if bounced(std::mem::size_of_val(host)) {
            self.bounce.upload(&self.stream, host, dst)
        } else {
            self.stream.memcpy_htod(host, dst)
        }
        .map_err(self.drv("copying to the device"))
    }

    /// Copies `src` to a new host vector, waiting for the stream: through a bounce buffer
    /// when it is small (see [`crate::bounce`]).
    pub(crate) fn read_back<
        R: cudarc::driver::DeviceRepr + Copy,
        S: cudarc::driver::DevicePtr<R>,
    >(
        &self,
        src: &S,
        op: &'static str,
    ) -> Result<Vec<R>> {
        if bounced(src.len() * std::mem::size_of::<R>()) {
            self.bounce
                .read_back(&self.stream, src)
                .map_err(self.drv(op))
        } else {
            let v = self.stream.clone_dtoh(src).map_err(self.drv(op))?;
            self.synchronize()?;
            Ok(v)
        }
    }

    /// A new device buffer of `len` elements whose contents are unspecified: for buffers
    /// that are written in full before they are read (crate-internal).
    pub(crate) fn alloc_uninit<T: DeviceElem>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        // SAFETY: the bytes are unspecified, not undefined behaviour to hold on the device;
        // callers write every element before any kernel or copy reads it.
        let inner = unsafe { self.stream.alloc::<T::Raw>(len) }
            .map_err(self.drv("allocating device memory"))?;
        Ok(DeviceBuffer {
            inner,
            _t: PhantomData,
        })
    }

    /// A new device buffer of `len` elements, all bytes zero.
    pub fn alloc_zeroed<T: DeviceElem>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let inner = self
            .stream
            .alloc_zeros::<T::Raw>(len)
            .map_err(self.drv("allocating device memory"))?;
        Ok(DeviceBuffer {
            inner,
            _t: PhantomData,
        })
    }

    /// Overwrites a device buffer with host elements; lengths must match.
    pub fn copy_to_device<T: DeviceElem>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_len("copy_to_device", dst.len(), host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        self.copy_raw_htod(T::as_raw(host), &mut dst.inner)
    }

    /// Overwrites elements `start .. start + host.len()` of a device buffer with host
    /// elements; that range must lie within the buffer. The rest of `dst` is untouched.
    pub fn copy_to_device_at<T: DeviceElem>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
        start: usize,
    ) -> Result<()> {
        let end = range_end("copy_to_device_at", dst.len(), start, host.len())?;
        if host.is_empty() {
            return Ok(());
        }
        let mut view = dst.inner.slice_mut(start..end);
        self.copy_raw_htod(T::as_raw(host), &mut view)
    }

    /// Copies a device buffer into host elements; lengths must match. Synchronous.
    pub fn copy_to_host<T: DeviceElem>(&self, src: &DeviceBuffer<T>, host: &mut [T]) -> Result<()> {
        check_len("copy_to_host", src.len(), host.len())?;
        if host.is_empty() {
            return self.synchronize(); // nothing to copy; still synchronous
        }
        if !bounced(std::mem::size_of_val(T::as_raw_mut(host))) {
            self.stream
                .memcpy_dtoh(&src.inner, T::as_raw_mut(host))
                .map_err(self.drv("copying to the host"))?;
            return self.synchronize();
        }
        let v = self.read_back(&src.inner, "copying to the host")?;
        T::as_raw_mut(host).copy_from_slice(&v);
        Ok(())
    }

    /// Copies a device buffer into a new host vector. Synchronous.
    pub fn download<T: DeviceElem>(&self, src: &DeviceBuffer<T>) -> Result<Vec<T>> {
        let mut v = vec![T::filler(); src.len()];
        self.copy_to_host(src, &mut v)?;
        Ok(v)
    }
}

/// The end of `start .. start + len` inside a buffer of `dst_len` elements, or a length
/// error naming `op` when the range does not fit.
pub(crate) fn range_end(
    op: &'static str,
    dst_len: usize,
    start: usize,
    len: usize,
) -> Result<usize> {
    start
        .checked_add(len)
        .filter(|&end| end <= dst_len)
        .ok_or(Error::Length {
            op,
            expected: dst_len.saturating_sub(start),
            got: len,
        })
}

pub(crate) fn check_len(op: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::Length { op, expected, got })
    }
}

/// A typed device buffer of `len()` elements of `T`, laid out exactly as on the host.
pub struct DeviceBuffer<T: DeviceElem> {
    pub(crate) inner: CudaSlice<T::Raw>,
    _t: PhantomData<T>,
}

impl<T: DeviceElem> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DeviceBuffer<{}>[{}]",
            std::any::type_name::<T>(),
            self.len()
        )
    }
}

impl<T: DeviceElem> DeviceBuffer<T> {
    pub(crate) fn from_raw(inner: CudaSlice<T::Raw>) -> Self {
        Self {
            inner,
            _t: PhantomData,
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.inner.len()
    }
    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.inner.num_bytes()
    }
    /// A view of elements `range` (panics if out of bounds, like slice indexing).
    pub fn view(&self, range: std::ops::Range<usize>) -> CudaView<'_, T::Raw> {
        self.inner.slice(range)
    }
    /// A mutable view of elements `range` (panics if out of bounds).
    pub fn view_mut(&mut self, range: std::ops::Range<usize>) -> CudaViewMut<'_, T::Raw> {
        self.inner.slice_mut(range)
    }
    /// The raw cudarc slice.
    pub fn raw(&self) -> &CudaSlice<T::Raw> {
        &self.inner
    }
    /// The raw cudarc slice, mutable.
    pub fn raw_mut(&mut self) -> &mut CudaSlice<T::Raw> {
        &mut self.inner
    }
}

/// Names of the kernels a CUBIN may hold: every `.text.<name>` section name in its string
/// table (device functions too; looking those up fails and they are skipped).
fn entry_names(cubin: &[u8]) -> Vec<String> {
    const PREFIX: &[u8] = b".text.";
    let mut out = Vec::new();
    let mut i = 0;
    while i + PREFIX.len() <= cubin.len() {
        if &cubin[i..i + PREFIX.len()] == PREFIX && (i == 0 || cubin[i - 1] == 0) {
            let start = i + PREFIX.len();
            let end = cubin[start..]
                .iter()
                .position(|&b| b == 0)
                .map_or(cubin.len(), |p| start + p);
            if let Ok(name) = std::str::from_utf8(&cubin[start..end]) {
                if !name.is_empty() && !out.iter().any(|n: &String| n == name) {
                    out.push(name.to_string());
                }
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::entry_names;

    #[test]
    fn entry_names_reads_text_sections_once_each() {
        let strtab = b"\0.text.msm_scatter_g1\0.nv.info.msm_scatter_g1\0.text._Z3mulv\0\
                       x.text.not_a_section\0.text.msm_scatter_g1\0.text.ntt_pass";
        assert_eq!(
            entry_names(strtab),
            vec!["msm_scatter_g1", "_Z3mulv", "ntt_pass"]
        );
        assert!(entry_names(b"").is_empty());
        assert!(entry_names(b"\0.text.").is_empty());
    }
}
