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
    let mut out = [0.0; 2];
    for (slot, (name, limbs)) in [("fr_mul_rate", 4usize), ("fp_mul_rate", 6)]
        .into_iter()
        .enumerate()
    {
        let f = dev.function(&FIELD, name)?;
        let seed: Vec<Scalar> = crate::testdata::scalars(9, THREADS as usize * limbs / 4);
        let mut data = dev.upload(&seed)?; // reinterpreted as Fp limbs: any reduced-enough values work for timing
        let iters: u32 = 256;
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            let mut l = dev.stream().launch_builder(&f);
            l.arg(&mut data.inner).arg(&THREADS).arg(&iters);
            let cfg = LaunchConfig {
                grid_dim: (THREADS / 256, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: (F* data[THREADS], u32 n, u32 iters); data holds THREADS elements of F.
            unsafe { l.launch(cfg) }.map_err(dev.drv("launching a rate probe"))?;
            dev.synchronize()?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        out[slot] = 2.0 * THREADS as f64 * iters as f64 / best;
    }
    Ok((out[0], out[1]))
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
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let mut l = dev.stream().launch_builder(&f);
        l.arg(raw).arg(&m).arg(&THREADS).arg(&iters).arg(&mut out);
        let cfg = LaunchConfig {
            grid_dim: (THREADS / 128, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: (const Affine* pts[m], u32 m, u32 n, u32 iters, Xyzz* out[n]); m <= bases.len().
        unsafe { l.launch(cfg) }.map_err(dev.drv("launching a rate probe"))?;
        dev.synchronize()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(THREADS as f64 * iters as f64 / best)
}
