//! The H polynomial of Groth16 on the device, with bellperson 0.27's conventions (the same
//! computation as [`crate::cpu::ntt::compute_h`]), up to a constant factor:
//! [`GpuDevice::h_polynomial_scaled`] leaves every constant scaling (1/m, 1/Z) to one factor
//! kappa, by which the prover multiplies the H MSM's result. An assignment that satisfies its
//! constraints (c = a b on the domain, which every valid proof needs) takes six transforms
//! instead of seven; the coefficients are the same either way.

use blstrs::Scalar;
use cuzk_kernels::{DeviceBuffer, GpuDevice};

/// Replaces `a` (the evaluations of A on the domain, zero padded to m = `a.len()`, a power
/// of two >= 2) by h' with `kappa * h' = h`, the coefficients of `h = (A*B - C) / Z`, and
/// returns kappa; `b` and `c` are consumed. The first m - 1 coefficients are the H query's
/// scalars (the last is zero): the H MSM over h' times kappa is the MSM over h. Queued on the
/// device's stream: synchronise before timing.
pub fn compute_h(
    dev: &GpuDevice,
    a: &mut DeviceBuffer<Scalar>,
    mut b: DeviceBuffer<Scalar>,
    mut c: DeviceBuffer<Scalar>,
) -> cuzk_kernels::Result<Scalar> {
    dev.h_polynomial_scaled(a, &mut b, &mut c)
}
