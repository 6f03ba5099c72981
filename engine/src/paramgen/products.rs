//! Where parameter generation computes its fixed-base products (every point of every query
//! is a generator times a scalar): on the host's cores, or on a GPU.
//!
//! Both give the same points, so the same file: the window tables are built on the host
//! ([`FixedBase`]) either way, and a point has one affine form. On a GPU the tables are
//! uploaded once per query generator, each product is computed on the device
//! (`cuzk_kernels::fixed_base`), and the host only normalises and encodes the results.

use bellpepper_core::SynthesisError;
use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk_kernels::fixed_base::FixedBaseTable;
use cuzk_kernels::layout::DeviceElem;
use cuzk_kernels::{GpuDevice, MsmCurve, G1, G2};
use group::{prime::PrimeCurve, Curve};
use rayon::prelude::*;

use super::fixed_base::FixedBase;
use crate::error::{Error, Result};

/// Where the fixed-base products run. The choice changes the time taken, never the file.
pub enum ProductsOn {
    /// The host's cores (rayon's pool).
    Cpu,
    /// An open GPU; the host still builds the tables and encodes the points.
    Gpu(Box<GpuDevice>),
}

impl ProductsOn {
    /// GPU `ordinal` (numbered under the current `CUDA_VISIBLE_DEVICES`); an error when
    /// there is no driver or no such device.
    pub fn gpu(ordinal: usize) -> Result<ProductsOn> {
        let dev = GpuDevice::open(ordinal).map_err(|source| Error::Device {
            device: format!("cuda:{ordinal}"),
            context: "opening the device for parameter generation".into(),
            source: Box::new(source),
        })?;
        Ok(ProductsOn::Gpu(Box::new(dev)))
    }

    /// Reads and stores the GPU's compiled kernel modules in `dir` (`None`, or on the CPU:
    /// as it was).
    pub fn with_kernel_cache(mut self, dir: Option<std::path::PathBuf>) -> Self {
        if let (ProductsOn::Gpu(dev), Some(dir)) = (&mut self, dir) {
            dev.set_kernel_cache(dir);
        }
        self
    }

    /// GPU 0 when the CUDA driver finds one, else the host's cores.
    pub fn auto() -> ProductsOn {
        if cuzk_kernels::driver_present() && cuzk_kernels::device_count() > 0 {
            if let Ok(on) = ProductsOn::gpu(0) {
                return on;
            }
        }
        ProductsOn::Cpu
    }

    /// "the CPU" or the GPU's name and PCI id, for progress lines and logs.
    pub fn describe(&self) -> String {
        match self {
            ProductsOn::Cpu => format!("the CPU ({} threads)", rayon::current_num_threads()),
            ProductsOn::Gpu(dev) => format!("{} at {}", dev.name(), dev.pci_id()),
        }
    }
}

/// A projective group whose products the GPU kernels compute: G1 and G2.
pub(crate) trait OnDevice:
    PrimeCurve<Scalar = Scalar> + Curve<AffineRepr = <Self as PrimeCurve>::Affine> + DeviceElem
{
    /// The kernels' marker for this group.
    type Marker: MsmCurve<Projective = Self, Affine = <Self as PrimeCurve>::Affine>;
}

impl OnDevice for G1Projective {
    type Marker = G1;
}

impl OnDevice for G2Projective {
    type Marker = G2;
}

/// One generator's products, where [`ProductsOn`] says.
pub(crate) enum Products<'a, G: OnDevice>
where
    G::Affine: DeviceElem,
{
    Cpu(&'a FixedBase<G>),
    Gpu {
        dev: &'a GpuDevice,
        table: FixedBaseTable<G::Marker>,
    },
}

impl<'a, G: OnDevice> Products<'a, G>
where
    G::Affine: DeviceElem,
{
    /// Products of `table`'s point: on the host, or with the tables uploaded to the device.
    pub fn new(
        on: &'a ProductsOn,
        table: &'a FixedBase<G>,
    ) -> std::result::Result<Self, SynthesisError> {
        match on {
            ProductsOn::Cpu => Ok(Products::Cpu(table)),
            ProductsOn::Gpu(dev) => {
                let t = FixedBaseTable::upload(
                    dev,
                    table.points(),
                    table.window_bits(),
                    table.windows(),
                )
                .map_err(|e| device_error(dev, "uploading window tables", e))?;
                Ok(Products::Gpu { dev, table: t })
            }
        }
    }

    /// `s P` for each scalar, in affine form.
    pub fn mul_all(
        &self,
        scalars: &[Scalar],
    ) -> std::result::Result<Vec<G::Affine>, SynthesisError> {
        match self {
            Products::Cpu(t) => Ok(t.mul_all(scalars)),
            Products::Gpu { dev, table } => {
                let proj = table
                    .mul(dev, scalars)
                    .map_err(|e| device_error(dev, "fixed-base products", e))?;
                let mut out = vec![<G as DeviceElem>::filler().to_affine(); proj.len()];
                out.par_chunks_mut(1 << 12)
                    .zip(proj.par_chunks(1 << 12))
                    .for_each(|(out, p)| G::batch_normalize(p, out));
                Ok(out)
            }
        }
    }
}

fn device_error(dev: &GpuDevice, what: &str, e: cuzk_kernels::Error) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!(
        "device {} ({what}): {e}",
        dev.pci_id()
    )))
}
