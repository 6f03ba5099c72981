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

/// Field products per second on the integer pipe (field.cuh) and on the FP64 pipe
/// (field_f64.cuh), each pair measured in the same shape.
#[derive(Clone, Copy, Debug)]
pub struct F64Rates {
    /// Fr by a constant (the NTT's twiddle products), integer products.
    pub fr_int: f64,
    /// The same on the FP64 pipe (the constant prepared once).
    pub fr_f64: f64,
    /// Fp in three chains whose operands all change (the MSM's shape), integer products.
    pub fp_int: f64,
    /// The same on the FP64 pipe.
    pub fp_f64: f64,
}

/// Measures [`F64Rates`].
pub fn f64_rates(dev: &GpuDevice) -> Result<F64Rates> {
    Ok(F64Rates {
        fr_int: product_rate(dev, "fr_mul_rate", 4, 2)?,
        fr_f64: product_rate(dev, "fr_mul_f64_rate", 4, 2)?,
        fp_int: product_rate(dev, "fp_mul3_rate", 6, 3)?,
        fp_f64: product_rate(dev, "fp_mul3_f64_rate", 6, 3)?,
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
