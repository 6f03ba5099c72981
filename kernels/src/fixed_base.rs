//! Products of one fixed point by many scalars on the device, by the point's window tables:
//! what Groth16 parameter generation spends its time on (every point of every query is a
//! generator times a scalar).
//!
//! The tables are built on the host (`cuzk-engine`'s parameter generator builds them for its
//! CPU products too) and uploaded once; each scalar's product is then at most `windows`
//! mixed additions on one GPU thread (`cuda/fixed_base.cu`). Results come back in Jacobian
//! form, equal as points to the host's products (the tests compare them with blstrs).

use blstrs::Scalar;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use tracing::info_span;

use crate::curve::MsmCurve;
use crate::device::{DeviceBuffer, GpuDevice};
use crate::error::{Error, Result};
use crate::layout::DeviceElem;

/// Products computed per launch at most: bounds the device memory of one call (2^22 G2
/// products: 1.2 GiB of results, 128 MiB of scalars).
const LAUNCH: usize = 1 << 22;

/// Threads per block of `fixed_base_mul`.
const BLOCK: u32 = 256;

/// One point's window tables, resident on a device.
///
/// Invariant: `table[k * 2^(c-1) + d - 1] = d 2^(c k) P` for window `k < windows` and digit
/// `d` in `1..=2^(c-1)`, with `2 <= c <= 16` and `windows c >= 256`; the constructor checks
/// the shape, the caller vouches for the points.
pub struct FixedBaseTable<C: MsmCurve> {
    table: DeviceBuffer<C::Affine>,
    c: u32,
    windows: u32,
}

impl<C: MsmCurve> FixedBaseTable<C>
where
    C::Projective: DeviceElem,
{
    /// Uploads the tables of a point for `c`-bit windows (see the type's invariant).
    pub fn upload(dev: &GpuDevice, table: &[C::Affine], c: u32, windows: usize) -> Result<Self> {
        let op = "fixed_base_mul";
        if !(2..=16).contains(&c) || windows * (c as usize) < 256 {
            return Err(Error::Unsupported {
                op,
                detail: format!(
                    "{windows} windows of {c} bits: need 2 <= c <= 16 and windows c >= 256"
                ),
            });
        }
        let half = 1usize << (c - 1);
        if table.len() != windows * half {
            return Err(Error::Length {
                op,
                expected: windows * half,
                got: table.len(),
            });
        }
        Ok(FixedBaseTable {
            table: dev.upload(table)?,
            c,
            windows: windows as u32,
        })
    }

    /// `s P` for each scalar, in order. Synchronous.
    pub fn mul(&self, dev: &GpuDevice, scalars: &[Scalar]) -> Result<Vec<C::Projective>> {
        let _span = info_span!("fixed_base_mul", curve = C::NAME, n = scalars.len()).entered();
        let mut out = Vec::with_capacity(scalars.len());
        if scalars.is_empty() {
            return Ok(out);
        }
        let f = dev.function(&C::MODULE, &format!("fixed_base_mul{}", C::SUFFIX))?;
        for chunk in scalars.chunks(LAUNCH) {
            let n = chunk.len() as u32; // at most LAUNCH
            let input = dev.upload(chunk)?;
            let mut products: DeviceBuffer<C::Projective> = dev.alloc_uninit(chunk.len())?;
            let s = dev.stream();
            let mut l = s.launch_builder(&f);
            l.arg(self.table.raw())
                .arg(&self.c)
                .arg(&self.windows)
                .arg(input.raw())
                .arg(&n)
                .arg(products.raw_mut());
            let cfg = LaunchConfig {
                grid_dim: (n.div_ceil(BLOCK), 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: (const PAffine* table[windows 2^(c-1)], u32 c, u32 nw, const Fr*
            // scalars[n], u32 n, Jacobian* out[n]): the table's length was checked against c
            // and windows at upload, and each thread reads only table entries of its own
            // digits (k < nw, 1 <= d <= 2^(c-1)); scalars and out hold n elements, and
            // threads past n return at once. Every element of `products` is written before
            // it is read back.
            unsafe { l.launch(cfg) }.map_err(dev.drv("launching fixed_base_mul"))?;
            out.extend(dev.download(&products)?);
        }
        Ok(out)
    }

    /// Device memory the tables hold, in bytes.
    pub fn num_bytes(&self) -> usize {
        self.table.num_bytes()
    }
}
