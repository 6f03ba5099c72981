//! The H polynomial of Groth16 on the device, with bellperson 0.27's conventions (the same
//! computation as [`crate::cpu::ntt::compute_h`]): for each of a, b, c an inverse NTT then
//! a coset NTT (fused: [`GpuDevice::evaluations_to_coset`]), `(a*b - c) / Z` on the coset,
//! then an inverse coset NTT (the division by the constant Z folded into its scaling).

use blstrs::Scalar;
use cuzk_kernels::{coset_z_inverse, DeviceBuffer, GpuDevice, NttKind};

/// Replaces `a` (the evaluations of A on the domain, zero padded to m = `a.len()`, a power
/// of two >= 2) by the coefficients of `h = (A*B - C) / Z`; `b` and `c` are consumed. The
/// first m - 1 coefficients are the H query's scalars (the last is zero). Queued on the
/// device's stream: synchronise before timing.
pub fn compute_h(
    dev: &GpuDevice,
    a: &mut DeviceBuffer<Scalar>,
    mut b: DeviceBuffer<Scalar>,
    mut c: DeviceBuffer<Scalar>,
) -> cuzk_kernels::Result<()> {
    let log_m = a.len().trailing_zeros();
    for v in [&mut *a, &mut b, &mut c] {
        dev.evaluations_to_coset(v)?;
    }
    dev.fr_mul_sub_assign(a, &b, &c)?;
    drop(b);
    drop(c);
    // Z(x) = x^m - 1 is the constant g^m - 1 on the coset
    dev.ntt_scaled(a, NttKind::CosetInverse, coset_z_inverse(log_m))
}
