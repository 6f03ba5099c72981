//! The curve groups the MSM kernels are instantiated for ([`MsmCurve`]: [`G1`], [`G2`]):
//! each one's device point layout, kernel modules and tuning, and the conversion of the
//! kernels' XYZZ results to blstrs points. Kept apart from the MSM itself so that the base
//! rings ([`crate::stream`]) and fixed-base tables name a curve without the MSM.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::Group;

use crate::compile::{KernelModule, MSM_G1, MSM_G1_ACCUMULATE, MSM_G2, MSM_G2_ACCUMULATE};
use crate::layout::{fp2_from_limbs, fp_from_limbs, host, DeviceElem};

/// A curve group the MSM kernels are instantiated for.
pub trait MsmCurve: Send + Sync + 'static {
    /// Affine point type as stored on the device.
    type Affine: DeviceElem;
    /// Result type.
    type Projective: Group + Copy;
    /// Kernel module (every MSM kernel but `msm_accumulate`).
    const MODULE: KernelModule;
    /// Kernel module of `msm_accumulate` (everything inlined).
    const ACCUMULATE_MODULE: KernelModule;
    /// Suffix of the kernel names (`_g1`, `_g2`).
    const SUFFIX: &'static str;
    /// u64 limbs of one XYZZ point (4 coordinates).
    const XYZZ_LIMBS: usize;
    /// Short name for spans and errors.
    const NAME: &'static str;
    /// Whether the accumulation module also holds lane-pair forms (each lane with one half
    /// of every Fp2 value, `fp2_pair.cuh`) of `msm_accumulate`, `msm_fix_round` and
    /// `msm_segments`, named `{kernel}_pair{SUFFIX}`: G2's.
    const PAIR_KERNELS: bool;
    /// Mean bucket sizes a run of the accumulation holds, at least 4 (the scratch that
    /// [`crate::msm::msm_scratch_bytes`] counts holds runs of at least 4 mean bucket sizes). Longer
    /// runs split fewer buckets (whose pieces cost the piece sums) and make fewer threads.
    /// Measured on an H200 (random scalars): G2 2^24 344.6-344.8
    /// ms at 4, 341.6-341.9 at 8 (piece sums 10.0 -> 4.7 ms), 342.4 at 16, 2^20 and 2^22 the
    /// same; G1 2^26 395.5-395.7 at 4, 396.8-397.4 at 8, and 2^20 / 2^22 10.5 / 32.2 ms at 4
    /// against 12.0 / 39.2 at 8 (too few threads). So 4 for G1, 8 for G2 (two threads a run).
    const RUN_FACTOR: usize;
    /// Converts device XYZZ limbs (Montgomery form) to a projective point.
    fn from_xyzz(limbs: &[u64]) -> Self::Projective;
}

/// Marker for G1 (points over Fp).
#[derive(Debug)]
pub enum G1 {}
/// Marker for G2 (points over Fp2).
#[derive(Debug)]
pub enum G2 {}

impl MsmCurve for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;
    const MODULE: KernelModule = MSM_G1;
    const ACCUMULATE_MODULE: KernelModule = MSM_G1_ACCUMULATE;
    const SUFFIX: &'static str = "_g1";
    const XYZZ_LIMBS: usize = 24;
    const NAME: &'static str = "G1";
    const PAIR_KERNELS: bool = false;
    const RUN_FACTOR: usize = 4;
    fn from_xyzz(l: &[u64]) -> G1Projective {
        if l[12..18].iter().all(|&x| x == 0) {
            return G1Projective::identity();
        }
        let (x, y, zz, zzz) = (
            fp_from_limbs(&l[0..6]),
            fp_from_limbs(&l[6..12]),
            fp_from_limbs(&l[12..18]),
            fp_from_limbs(&l[18..24]),
        );
        // Jacobian with Z = ZZZ: X = x ZZ^2, Y = y ZZZ^2 (since ZZ^3 = ZZZ^2)
        let jx = host::fp_mul(&x, &host::fp_sqr(&zz));
        let jy = host::fp_mul(&y, &host::fp_sqr(&zzz));
        G1Projective::from_raw_unchecked(jx.into(), jy.into(), zzz.into())
    }
}

impl MsmCurve for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    const MODULE: KernelModule = MSM_G2;
    const ACCUMULATE_MODULE: KernelModule = MSM_G2_ACCUMULATE;
    const SUFFIX: &'static str = "_g2";
    const XYZZ_LIMBS: usize = 48;
    const NAME: &'static str = "G2";
    const PAIR_KERNELS: bool = true;
    const RUN_FACTOR: usize = 8;
    fn from_xyzz(l: &[u64]) -> G2Projective {
        if l[24..36].iter().all(|&x| x == 0) {
            return G2Projective::identity();
        }
        let (x, y, zz, zzz) = (
            fp2_from_limbs(&l[0..12]),
            fp2_from_limbs(&l[12..24]),
            fp2_from_limbs(&l[24..36]),
            fp2_from_limbs(&l[36..48]),
        );
        let jx = host::fp2_mul(&x, &host::fp2_sqr(&zz));
        let jy = host::fp2_mul(&y, &host::fp2_sqr(&zzz));
        G2Projective::from_raw_unchecked(jx.into(), jy.into(), zzz.into())
    }
}
