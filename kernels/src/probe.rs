//! Raw throughput probes (field products and mixed point additions per second), to compare
//! with the rates measured for sppark on the same GPU (docs/benchmarks.md).

use std::time::Instant;

use blstrs::Scalar;
use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::compile::{KernelModule, FIELD};
use crate::device::GpuDevice;
use crate::error::{Error, Result};
use crate::msm::{Bases, MsmCurve};

const THREADS: u32 = 132 * 2048;

/// Field products per second: `(Fr rate, Fp rate)`, inline products as in the NTT.
pub fn field_mul_rates(dev: &GpuDevice) -> Result<(f64, f64)> {
    Ok((
        product_rate(dev, "fr_mul_rate", 4, 2)?,
        product_rate(dev, "fp_mul_rate", 6, 2)?,
    ))
}

/// Fp squares per second: `(by the product a * a, by the dedicated square)`.
pub fn sqr_rates(dev: &GpuDevice) -> Result<(f64, f64)> {
    Ok((
        product_rate(dev, "fp_sqr_by_mul_rate", 6, 2)?,
        product_rate(dev, "fp_sqr_dedicated_rate", 6, 2)?,
    ))
}

/// Products per second of the kernel `name` of [`FIELD`], shaped as `mul_rate` (`(F* data,
/// u32 n, u32 iters)`, `per_iter` products an iteration), over elements of `limbs` 64-bit
/// words.
fn product_rate(dev: &GpuDevice, name: &str, limbs: usize, per_iter: u32) -> Result<f64> {
    let f = dev.function(&FIELD, name)?;
    let seed: Vec<Scalar> = crate::testdata::scalars(9, THREADS as usize * limbs / 4);
    let mut data = dev.upload(&seed)?; // reinterpreted as Fp limbs: any reduced-enough values work for timing
    let iters: u32 = 256;
    let best = best_of_three(dev, || {
        let mut l = dev.stream().launch_builder(&f);
        l.arg(&mut data.inner).arg(&THREADS).arg(&iters);
        // SAFETY: (F* data[THREADS], u32 n, u32 iters); data holds THREADS elements of F.
        unsafe { l.launch(grid(256)) }.map_err(dev.drv("launching a rate probe"))?;
        Ok(())
    })?;
    Ok(f64::from(per_iter) * THREADS as f64 * iters as f64 / best)
}

/// Field products per second on the FP64 pipe (field_f64.cuh), and the integer products
/// (field.cuh) in the Fp shape that [`field_mul_rates`] does not measure. The Fr shape is
/// [`field_mul_rates`]'s: compare `fr_f64` with its Fr rate.
#[derive(Clone, Copy, Debug)]
pub struct F64Rates {
    /// Fr by a constant (the NTT's twiddle products; `fr_mul_rate`'s shape), the constant
    /// prepared once.
    pub fr_f64: f64,
    /// Fp in three chains whose operands all change (the MSM's shape), integer products.
    pub fp_int: f64,
    /// The same on the FP64 pipe.
    pub fp_f64: f64,
    /// The same, every other warp on the FP64 pipe and the rest on the integer one (all
    /// products counted): above `fp_int` when an SM runs both pipes at once for different warps.
    pub fp_split: f64,
}

/// Measures [`F64Rates`].
pub fn f64_rates(dev: &GpuDevice) -> Result<F64Rates> {
    Ok(F64Rates {
        fr_f64: product_rate(dev, "fr_mul_f64_rate", 4, 2)?,
        fp_int: product_rate(dev, "fp_mul3_rate", 6, 3)?,
        fp_f64: product_rate(dev, "fp_mul3_f64_rate", 6, 3)?,
        fp_split: product_rate(dev, "fp_mul3_split_rate", 6, 3)?,
    })
}

/// Multiply instructions per second on the integer and the FP64 pipes (the `pipe_rate`
/// kernel): 64-bit integer multiply-adds alone, double FMAs alone, then both interleaved in
/// one loop.
#[derive(Clone, Copy, Debug)]
pub struct PipeRates {
    /// `IMAD.WIDE.U32` per second, alone.
    pub imad_wide: f64,
    /// `DFMA` per second, alone.
    pub dfma: f64,
    /// `IMAD.WIDE.U32` per second, and as many `DFMA`, when the two are interleaved.
    pub mixed: f64,
}

/// Measures [`PipeRates`]: whether a product could run partly on the FP64 pipe beside the
/// integer one (if so, the mixed rates stay near the lone ones).
pub fn pipe_rates(dev: &GpuDevice) -> Result<PipeRates> {
    let f = dev.function(&FIELD, "pipe_rate")?;
    let seed: Vec<u32> = (0..1024u32)
        .map(|i| i.wrapping_mul(2_654_435_761).rotate_left(7) | 1)
        .collect();
    let seed = dev.upload(&seed)?;
    let mut out = dev
        .stream()
        .alloc_zeros::<u64>(THREADS as usize)
        .map_err(dev.drv("allocating"))?;
    let iters: u32 = 2048;
    let ops = 8.0 * THREADS as f64 * iters as f64;
    let mut rate = |mode: u32| -> Result<f64> {
        let best = best_of_three(dev, || {
            let mut l = dev.stream().launch_builder(&f);
            l.arg(&mode).arg(&iters).arg(&seed.inner).arg(&mut out);
            // SAFETY: (u32 mode, u32 iters, const u32* seed[1024], u64* out[THREADS]).
            unsafe { l.launch(grid(256)) }.map_err(dev.drv("launching the pipe probe"))?;
            Ok(())
        })?;
        Ok(ops / best)
    };
    Ok(PipeRates {
        imad_wide: rate(1)?,
        dfma: rate(2)?,
        mixed: rate(3)?,
    })
}

/// Mixed additions (XYZZ += affine) per second for curve `C`, using the first points of
/// `bases`, as compiled for `msm_accumulate` (everything inlined, [`MsmCurve::ACCUMULATE_MODULE`]).
pub fn madd_rate<C: MsmCurve>(dev: &GpuDevice, bases: &Bases<C>) -> Result<f64> {
    madd_rate_in::<C>(dev, bases, &C::ACCUMULATE_MODULE)
}

/// As [`madd_rate`], compiled as the other MSM kernels ([`MsmCurve::MODULE`]: out-of-line
/// field products), for comparison.
pub fn madd_rate_out_of_line<C: MsmCurve>(dev: &GpuDevice, bases: &Bases<C>) -> Result<f64> {
    madd_rate_in::<C>(dev, bases, &C::MODULE)
}

fn madd_rate_in<C: MsmCurve>(
    dev: &GpuDevice,
    bases: &Bases<C>,
    module: &KernelModule,
) -> Result<f64> {
    let f = dev.function(module, &format!("curve_madd_rate{}", C::SUFFIX))?;
    let m = bases.len().min(1024) as u32;
    let iters: u32 = 64;
    let mut out = dev
        .stream()
        .alloc_zeros::<u64>(THREADS as usize * C::XYZZ_LIMBS)
        .map_err(dev.drv("allocating"))?;
    let raw = bases.raw().ok_or(Error::Unsupported {
        op: "madd_rate",
        detail: "no bases".into(),
    })?;
    let best = best_of_three(dev, || {
        let mut l = dev.stream().launch_builder(&f);
        l.arg(raw).arg(&m).arg(&THREADS).arg(&iters).arg(&mut out);
        // SAFETY: (const Affine* pts[m], u32 m, u32 n, u32 iters, Xyzz* out[n]); m <= bases.len().
        unsafe { l.launch(grid(128)) }.map_err(dev.drv("launching a rate probe"))?;
        Ok(())
    })?;
    Ok(THREADS as f64 * iters as f64 / best)
}

/// [`THREADS`] threads in blocks of `block` (a divisor of it).
fn grid(block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (THREADS / block, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The shortest of three runs of `launch`, each timed until the device is done, in seconds.
fn best_of_three(dev: &GpuDevice, mut launch: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        launch()?;
        dev.synchronize()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

/// A kernel of the batch-affine addition probe (`affine_batch_b*` in cuda/msm.cu, G1 and G2,
/// used by no MSM; a G1 MSM accumulation built on it was slower, see CHANGELOG.md): how
/// many affine accumulators a thread keeps, the slopes of a round sharing one inversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffineBatch {
    /// 64 accumulators a thread.
    B64,
    /// 256 accumulators a thread.
    B256,
    /// 1024 accumulators a thread.
    B1024,
    /// 1024 a thread, compiled for four blocks of 128 an SM (`__launch_bounds__`).
    B1024FourBlocks,
}

impl AffineBatch {
    /// Accumulators a thread.
    pub fn per_thread(self) -> u32 {
        match self {
            AffineBatch::B64 => 64,
            AffineBatch::B256 => 256,
            AffineBatch::B1024 | AffineBatch::B1024FourBlocks => 1024,
        }
    }
    /// The kernel of curve `C` (msm.cu's names end in the curve's suffix).
    fn function<C: MsmCurve>(self, dev: &GpuDevice) -> Result<cudarc::driver::CudaFunction> {
        let base = match self {
            AffineBatch::B64 => "affine_batch_b64",
            AffineBatch::B256 => "affine_batch_b256",
            AffineBatch::B1024 => "affine_batch_b1024",
            AffineBatch::B1024FourBlocks => "affine_batch_b1024_lb",
        };
        dev.function(&C::MODULE, &format!("{base}{}", C::SUFFIX))
    }
}

/// One run of the batch-affine probe on curve `C`: `n` threads with `kind.per_thread()` = B
/// affine accumulators each, every accumulator gaining one point a round for `rounds`
/// rounds. Accumulator j of thread t starts at point `(t B + j) & mask` of `bases` and gains
/// point `(t B + j + 7919 k) & mask` in round k, `mask + 1` being the largest power of two of
/// points in `bases` (at most 2^20). Returns the accumulators (thread t's j-th at `j n + t`).
/// Needs n B < 2^31 (the kernel's 32-bit indices).
pub fn affine_batch<C: MsmCurve>(
    dev: &GpuDevice,
    bases: &Bases<C>,
    kind: AffineBatch,
    n: u32,
    rounds: u32,
) -> Result<Vec<C::Affine>> {
    let (acc, _) = affine_batch_run(dev, bases, kind, n, rounds)?;
    dev.download(&acc)
}

/// Runs the probe; returns the accumulators on the device and the seconds the launch took.
fn affine_batch_run<C: MsmCurve>(
    dev: &GpuDevice,
    bases: &Bases<C>,
    kind: AffineBatch,
    n: u32,
    rounds: u32,
) -> Result<(crate::device::DeviceBuffer<C::Affine>, f64)> {
    let b = kind.per_thread();
    let total = n as usize * b as usize;
    if n == 0 || total >= 1 << 31 || bases.is_empty() {
        return Err(Error::Unsupported {
            op: "affine_batch",
            detail: format!(
                "{n} threads of {b} accumulators over {} bases (needs n > 0, n x {b} < 2^31, bases)",
                bases.len()
            ),
        });
    }
    let f = kind.function::<C>(dev)?;
    let mask = (1u32 << bases.len().min(1 << 20).ilog2()) - 1;
    let mut acc = dev.alloc_zeroed::<C::Affine>(total)?;
    // running products: one field element (a quarter of an XYZZ point) an accumulator
    let mut pre = dev
        .stream()
        .alloc_zeros::<u64>(total * (C::XYZZ_LIMBS / 4))
        .map_err(dev.drv("allocating"))?;
    let raw = bases.raw().ok_or(Error::Unsupported {
        op: "affine_batch",
        detail: "no bases".into(),
    })?;
    dev.synchronize()?;
    let t = Instant::now();
    let mut l = dev.stream().launch_builder(&f);
    l.arg(raw)
        .arg(&mask)
        .arg(&n)
        .arg(&rounds)
        .arg(acc.raw_mut())
        .arg(&mut pre);
    let cfg = LaunchConfig {
        grid_dim: (n.div_ceil(128), 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: (const Affine* pts[mask + 1], u32 mask, u32 n, u32 rounds, Affine* acc[b n],
    // F* pre[b n]); mask + 1 <= bases.len(), acc and pre hold b n < 2^31 elements.
    unsafe { l.launch(cfg) }.map_err(dev.drv("launching the batch-affine probe"))?;
    dev.synchronize()?;
    Ok((acc, t.elapsed().as_secs_f64()))
}

/// Batch-affine additions per second on curve `C` with the probe `kind` ([`affine_batch`]
/// over one full wave of the device, as many blocks of 128 as fit on every SM; 4096 additions
/// a thread, less the same launch with no rounds; best of three), to compare with
/// [`madd_rate`].
pub fn affine_batch_rate<C: MsmCurve>(
    dev: &GpuDevice,
    bases: &Bases<C>,
    kind: AffineBatch,
) -> Result<f64> {
    use cudarc::driver::sys::CUdevice_attribute;
    let f = kind.function::<C>(dev)?;
    let blocks = f
        .occupancy_max_active_blocks_per_multiprocessor(128, 0, None)
        .map_err(dev.drv("reading the probe's occupancy"))?;
    let sms = dev
        .context()
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(dev.drv("reading the SM count"))?;
    let n = blocks.max(1) * sms.max(1) as u32 * 128;
    let b = kind.per_thread();
    let rounds = 4096 / b;
    let (mut t0, mut t1) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        t0 = t0.min(affine_batch_run(dev, bases, kind, n, 0)?.1);
        t1 = t1.min(affine_batch_run(dev, bases, kind, n, rounds)?.1);
    }
    Ok(f64::from(n) * f64::from(b) * f64::from(rounds) / (t1 - t0).max(1e-9))
}
