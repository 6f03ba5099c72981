//! BLS12-381 GPU math for cuzk: Fr NTT and G1/G2 multi-scalar multiplication on CUDA
//! devices, with CUDA C++ sources compiled at run time by NVRTC through cudarc.
//! No Groth16 and no Filecoin here: every operation is tested against blstrs.
//!
//! | module | what it holds |
//! |---|---|
//! | [`device`] | [`GpuDevice`]: context, stream, PCI id / UUID, module cache, typed [`DeviceBuffer`]s |
//! | [`compact`] | selecting the scalars of a bitmap (density masks) on the device |
//! | [`compile`] | the kernel modules, NVRTC compilation (no GPU needed), the on-disk CUBIN cache |
//! | [`layout`] | device layouts of blstrs types (`Scalar`, `G1Affine`, `G2Affine`) with size assertions |
//! | [`ones`] | scalar vectors kept as a bitmap of their ones and a list of the rest |
//! | [`batch`] | MSMs of several such vectors over one set of streamed bases, each chunk crossing the link once |
//! | [`ntt`] | forward / inverse / coset Fr NTT with bellperson's conventions, element-wise Fr ops |
//! | [`curve`] | the curve groups the MSMs run over ([`MsmCurve`]: [`G1`], [`G2`]) |
//! | [`msm`] | G1 and G2 Pippenger MSM over resident bases |
//! | [`fixed_base`] | one fixed point times many scalars, by window tables (parameter generation) |
//! | [`field`] | element-wise Fr / Fp / Fp2 arithmetic on the device, for differential tests |
//! | [`stream`] | bases streamed from page-locked host memory through a ring of device buffers ([`PinnedPoints`], [`BaseRing`]) |
//! | [`staging`] | [`Staging`]: page-locked buffers that large uploads pass through |
//! | [`bounce`] | page-locked bounce buffers for small copies, which never hold other threads back |
//! | [`profile`] | each step of the MSMs or transforms timed apart, for measurements, as a device's [`StepTiming`] asks |
//! | [`reference`](mod@reference) | CPU references (NTT as bellperson computes it) |
//! | `testdata` | test support, with the `testdata` feature: seeded random scalars and points, CPU MSM for comparison |
//! | [`error`] | [`Error`] and [`Result`] |
//!
//! Memory layouts are blst's: buffers of blstrs values upload without conversion.
//! Building needs no CUDA toolkit; running needs the NVIDIA driver (`libcuda`) and NVRTC
//! (`libnvrtc.so.13`).

#![warn(missing_docs)]

pub mod batch;
pub mod bounce;
pub mod compact;
pub mod compile;
pub mod curve;
pub mod device;
pub mod error;
pub mod field;
pub mod fixed_base;
pub mod layout;
pub mod msm;
pub mod ntt;
pub mod ones;
pub mod profile;
pub mod reference;
pub mod staging;
pub mod stream;
#[cfg(feature = "testdata")]
pub mod testdata;
mod twiddles;

pub use batch::{gathered_bytes, ones_scratch_bytes};
pub use compact::DeviceBitmap;
pub use curve::{MsmCurve, G1, G2};
pub use device::{device_count, driver_present, DeviceBuffer, GpuDevice, PciId};
pub use error::{Error, Result};
pub use msm::{
    msm_scratch_bytes, streamed_msm_scratch_bytes, Bases, G1Bases, G2Bases, SortedScalars,
    WindowSpan,
};
pub use ntt::{coset_z_inverse, NttKind, NttOptions};
pub use ones::{DeviceOnesAndRest, OnesAndRest};
pub use profile::StepTiming;
pub use staging::Staging;
pub use stream::{BaseRing, PinnedPoints};
