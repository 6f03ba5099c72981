//! Device-side memory layouts of blstrs types.
//!
//! blstrs wraps blst's C structs with `#[repr(transparent)]`: `Scalar` is `blst_fr`
//! (4 x u64, little-endian limbs, Montgomery form), `Fp` is `blst_fp` (6 x u64), `G1Affine`
//! is `blst_p1_affine {x, y}` (infinity is x = y = 0, there is no flag), `G2Affine` is
//! `blst_p2_affine {x: blst_fp2, y: blst_fp2}` with `blst_fp2 {fp[2]}`. The CUDA kernels use
//! exactly these bytes (as 32-bit limbs), so buffers cross without conversion. The raw
//! newtypes below give those bytes a type cudarc can move; the size and alignment
//! assertions make a layout change in blstrs a compile error.

use blst::{blst_fp, blst_fp2};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// Raw bytes of one `Scalar` (blst_fr): 4 little-endian u64 limbs, Montgomery form.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrRaw(pub [u64; 4]);

/// Raw bytes of one `G1Affine` (blst_p1_affine): x then y, 6 limbs each.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct G1AffineRaw(pub [u64; 12]);

/// Raw bytes of one `G2Affine` (blst_p2_affine): x.c0, x.c1, y.c0, y.c1, 6 limbs each.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct G2AffineRaw(pub [u64; 24]);

/// Raw bytes of one `G1Projective` (blst_p1, Jacobian): X, Y, Z, 6 limbs each.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct G1ProjectiveRaw(pub [u64; 18]);

/// Raw bytes of one `G2Projective` (blst_p2, Jacobian over Fp2): X, Y, Z, 12 limbs each.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct G2ProjectiveRaw(pub [u64; 36]);

impl Default for G2ProjectiveRaw {
    fn default() -> Self {
        G2ProjectiveRaw([0; 36])
    }
}

// SAFETY: plain old data (arrays of u64) with no padding and no pointers; all-zero bytes are
// a valid value (zero field elements, the affine point at infinity).
unsafe impl DeviceRepr for FrRaw {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for FrRaw {}
// SAFETY: as above.
unsafe impl DeviceRepr for G1AffineRaw {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for G1AffineRaw {}
// SAFETY: as above.
unsafe impl DeviceRepr for G2AffineRaw {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for G2AffineRaw {}
// SAFETY: as above (all-zero bytes: Z = 0, the point at infinity).
unsafe impl DeviceRepr for G1ProjectiveRaw {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for G1ProjectiveRaw {}
// SAFETY: as above.
unsafe impl DeviceRepr for G2ProjectiveRaw {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for G2ProjectiveRaw {}

const _: () = {
    use std::mem::{align_of, size_of};
    assert!(size_of::<Scalar>() == 32 && size_of::<FrRaw>() == 32);
    assert!(align_of::<Scalar>() == align_of::<FrRaw>());
    assert!(size_of::<blst_fp>() == 48 && size_of::<blst_fp2>() == 96);
    assert!(size_of::<G1Affine>() == 96 && size_of::<G1AffineRaw>() == 96);
    assert!(align_of::<G1Affine>() == align_of::<G1AffineRaw>());
    assert!(size_of::<G2Affine>() == 192 && size_of::<G2AffineRaw>() == 192);
    assert!(align_of::<G2Affine>() == align_of::<G2AffineRaw>());
    assert!(size_of::<G1Projective>() == 144 && size_of::<G1ProjectiveRaw>() == 144);
    assert!(align_of::<G1Projective>() == align_of::<G1ProjectiveRaw>());
    assert!(size_of::<G2Projective>() == 288 && size_of::<G2ProjectiveRaw>() == 288);
    assert!(align_of::<G2Projective>() == align_of::<G2ProjectiveRaw>());
};

/// A host type whose bytes the kernels use as they are.
///
/// # Safety
/// `Self` and `Self::Raw` must have the same size and alignment, and every bit pattern the
/// device writes into a `Raw` must be a valid `Self` (the kernels keep field elements
/// reduced).
pub unsafe trait DeviceElem: Copy + Send + Sync + 'static {
    /// The device-side representation.
    type Raw: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + Unpin + 'static;

    /// Views host elements as raw device elements (no copy).
    fn as_raw(slice: &[Self]) -> &[Self::Raw] {
        // SAFETY: the trait contract guarantees identical size and alignment.
        unsafe { std::slice::from_raw_parts(slice.as_ptr().cast(), slice.len()) }
    }

    /// Views host elements as mutable raw device elements (no copy).
    fn as_raw_mut(slice: &mut [Self]) -> &mut [Self::Raw] {
        // SAFETY: identical size and alignment; the device only writes valid values.
        unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr().cast(), slice.len()) }
    }

    /// A value to fill freshly allocated host vectors with.
    fn filler() -> Self;
}

// SAFETY: repr(transparent) over blst_fr = [u64; 4], asserted above.
unsafe impl DeviceElem for Scalar {
    type Raw = FrRaw;
    fn filler() -> Self {
        <Scalar as ff::Field>::ZERO
    }
}
// SAFETY: repr(transparent) over blst_p1_affine = [u64; 12], asserted above.
unsafe impl DeviceElem for G1Affine {
    type Raw = G1AffineRaw;
    fn filler() -> Self {
        <G1Affine as group::prime::PrimeCurveAffine>::identity()
    }
}
// SAFETY: repr(transparent) over blst_p2_affine = [u64; 24], asserted above.
unsafe impl DeviceElem for G2Affine {
    type Raw = G2AffineRaw;
    fn filler() -> Self {
        <G2Affine as group::prime::PrimeCurveAffine>::identity()
    }
}
// SAFETY: repr(transparent) over blst_p1 = [u64; 18], asserted above; the kernels write
// reduced coordinates, and Z = 0 is blst's point at infinity.
unsafe impl DeviceElem for G1Projective {
    type Raw = G1ProjectiveRaw;
    fn filler() -> Self {
        <G1Projective as group::Group>::identity()
    }
}
// SAFETY: repr(transparent) over blst_p2 = [u64; 36], asserted above; as for G1.
unsafe impl DeviceElem for G2Projective {
    type Raw = G2ProjectiveRaw;
    fn filler() -> Self {
        <G2Projective as group::Group>::identity()
    }
}
// SAFETY: identical type.
unsafe impl DeviceElem for u32 {
    type Raw = u32;
    fn filler() -> Self {
        0
    }
}
// SAFETY: identical type.
unsafe impl DeviceElem for u64 {
    type Raw = u64;
    fn filler() -> Self {
        0
    }
}

/// Raw limbs of a scalar (Montgomery form).
pub fn scalar_raw(s: &Scalar) -> FrRaw {
    Scalar::as_raw(std::slice::from_ref(s))[0]
}

/// An Fp element (blst_fp) from 6 raw Montgomery limbs.
pub fn fp_from_limbs(l: &[u64]) -> blst_fp {
    let mut a = blst_fp::default();
    a.l.copy_from_slice(&l[..6]);
    a
}

/// An Fp2 element (blst_fp2) from 12 raw Montgomery limbs (c0 then c1).
pub fn fp2_from_limbs(l: &[u64]) -> blst_fp2 {
    blst_fp2 {
        fp: [fp_from_limbs(&l[..6]), fp_from_limbs(&l[6..12])],
    }
}

/// Host arithmetic on blst's Fp and Fp2 (blstrs does not export its `Fp` type), used to
/// finish MSM results and as the reference in field tests.
pub mod host {
    use blst::*;

    macro_rules! binary {
        ($name:ident, $t:ty, $f:ident) => {
            /// Field operation through blst.
            pub fn $name(a: &$t, b: &$t) -> $t {
                let mut r = <$t>::default();
                // SAFETY: blst reads two valid elements and writes one; no aliasing issues.
                unsafe { $f(&mut r, a, b) };
                r
            }
        };
    }
    macro_rules! unary {
        ($name:ident, $t:ty, $f:ident) => {
            /// Field operation through blst.
            pub fn $name(a: &$t) -> $t {
                let mut r = <$t>::default();
                // SAFETY: blst reads one valid element and writes one.
                unsafe { $f(&mut r, a) };
                r
            }
        };
    }
    binary!(fp_add, blst_fp, blst_fp_add);
    binary!(fp_sub, blst_fp, blst_fp_sub);
    binary!(fp_mul, blst_fp, blst_fp_mul);
    unary!(fp_sqr, blst_fp, blst_fp_sqr);
    binary!(fp2_add, blst_fp2, blst_fp2_add);
    binary!(fp2_sub, blst_fp2, blst_fp2_sub);
    binary!(fp2_mul, blst_fp2, blst_fp2_mul);
    unary!(fp2_sqr, blst_fp2, blst_fp2_sqr);

    /// -a in Fp.
    pub fn fp_neg(a: &blst_fp) -> blst_fp {
        let mut r = blst_fp::default();
        // SAFETY: valid input and output.
        unsafe { blst_fp_cneg(&mut r, a, true) };
        r
    }
    /// -a in Fp2.
    pub fn fp2_neg(a: &blst_fp2) -> blst_fp2 {
        let mut r = blst_fp2::default();
        // SAFETY: valid input and output.
        unsafe { blst_fp2_cneg(&mut r, a, true) };
        r
    }
}
