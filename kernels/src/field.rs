//! Field arithmetic on the device, element by element, for differential tests.
//!
//! Each function runs one test kernel of `cuda/field_ops.cu` and returns, per input pair,
//! `[a + b, a - b, a * b, a^2, -a, 2a]`. Fp and Fp2 elements are blst's `blst_fp` /
//! `blst_fp2` (blstrs does not export its `Fp`).

use blst::{blst_fp, blst_fp2};
use blstrs::Scalar;
use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};

use crate::compile::FIELD;
use crate::device::{check_len, GpuDevice};
use crate::error::Result;
use crate::layout::{fp2_from_limbs, fp_from_limbs, DeviceElem};

/// Operations computed per input pair, in output order.
pub const OPS: [&str; 6] = ["add", "sub", "mul", "square", "neg", "double"];

fn run<T: DeviceRepr + ValidAsZeroBits + Copy + Unpin>(
    dev: &GpuDevice,
    kernel: &'static str,
    a: &[T],
    b: &[T],
) -> Result<Vec<T>> {
    run_n(dev, kernel, a, b, OPS.len())
}

/// Runs a test kernel `(const F* a[n], const F* b[n], F* out[ops n], u32 n)`.
fn run_n<T: DeviceRepr + ValidAsZeroBits + Copy + Unpin>(
    dev: &GpuDevice,
    kernel: &'static str,
    a: &[T],
    b: &[T],
    ops: usize,
) -> Result<Vec<T>> {
    check_len(kernel, a.len(), b.len())?;
    let s = dev.stream();
    let da = s.clone_htod(a).map_err(dev.drv("copying to the device"))?;
    let db = s.clone_htod(b).map_err(dev.drv("copying to the device"))?;
    let mut out: CudaSlice<T> = s
        .alloc_zeros(a.len() * ops)
        .map_err(dev.drv("allocating"))?;
    let f = dev.function(&FIELD, kernel)?;
    let n = a.len() as u32;
    let mut l = s.launch_builder(&f);
    l.arg(&da).arg(&db).arg(&mut out).arg(&n);
    let cfg = LaunchConfig {
        grid_dim: (n.div_ceil(128).max(1), 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: (const F* a[n], const F* b[n], F* out[ops n], u32 n) with matching lengths.
    unsafe { l.launch(cfg) }.map_err(dev.drv("launching a field test kernel"))?;
    let v = s.clone_dtoh(&out).map_err(dev.drv("copying to the host"))?;
    dev.synchronize()?;
    Ok(v)
}

/// Fr operations on the device.
pub fn fr_ops(dev: &GpuDevice, a: &[Scalar], b: &[Scalar]) -> Result<Vec<[Scalar; 6]>> {
    let raw = run(dev, "fr_test_ops", Scalar::as_raw(a), Scalar::as_raw(b))?;
    let mut out = vec![Scalar::filler(); raw.len()];
    Scalar::as_raw_mut(&mut out).copy_from_slice(&raw);
    Ok(out
        .chunks(6)
        .map(|c| [c[0], c[1], c[2], c[3], c[4], c[5]])
        .collect())
}

/// Fp operations on the device.
pub fn fp_ops(dev: &GpuDevice, a: &[blst_fp], b: &[blst_fp]) -> Result<Vec<[blst_fp; 6]>> {
    let ra: Vec<[u64; 6]> = a.iter().map(|x| x.l).collect();
    let rb: Vec<[u64; 6]> = b.iter().map(|x| x.l).collect();
    let raw = run(dev, "fp_test_ops", &ra, &rb)?;
    Ok(raw
        .chunks(6)
        .map(|c| std::array::from_fn(|i| fp_from_limbs(&c[i])))
        .collect())
}

/// Fp2 operations on the device.
pub fn fp2_ops(dev: &GpuDevice, a: &[blst_fp2], b: &[blst_fp2]) -> Result<Vec<[blst_fp2; 6]>> {
    let conv = |x: &blst_fp2| -> [u64; 12] {
        let mut l = [0u64; 12];
        l[..6].copy_from_slice(&x.fp[0].l);
        l[6..].copy_from_slice(&x.fp[1].l);
        l
    };
    let ra: Vec<[u64; 12]> = a.iter().map(conv).collect();
    let rb: Vec<[u64; 12]> = b.iter().map(conv).collect();
    let raw = run(dev, "fp2_test_ops", &ra, &rb)?;
    Ok(raw
        .chunks(6)
        .map(|c| std::array::from_fn(|i| fp2_from_limbs(&c[i])))
        .collect())
}

/// `(a[i] b[i] + b[i] a[i], a[i]^2 - b[i]^2)` by the sum of two products with one reduction
/// (`mul_sum` of cuda/field.cuh, the G1 mixed addition's Y3).
pub fn fp_mul_sum(dev: &GpuDevice, a: &[blst_fp], b: &[blst_fp]) -> Result<Vec<[blst_fp; 2]>> {
    let ra: Vec<[u64; 6]> = a.iter().map(|x| x.l).collect();
    let rb: Vec<[u64; 6]> = b.iter().map(|x| x.l).collect();
    let raw = run_n(dev, "fp_test_mul_sum", &ra, &rb, 2)?;
    Ok(raw
        .chunks(2)
        .map(|c| [fp_from_limbs(&c[0]), fp_from_limbs(&c[1])])
        .collect())
}
