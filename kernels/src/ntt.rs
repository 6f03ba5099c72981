//! Fr NTT on the device, following bellperson 0.27's `EvaluationDomain` conventions.
//!
//! For a buffer of m = 2^k scalars (1 <= k <= 28), with
//! `omega = Scalar::ROOT_OF_UNITY^(2^(32 - k))` and `g = Scalar::MULTIPLICATIVE_GENERATOR`:
//! - [`NttKind::Forward`]: `a'_i = sum_j a_j omega^(ij)` (bellperson `fft`);
//! - [`NttKind::Inverse`]: the same with `omega^-1`, then every element times `1/m` (`ifft`);
//! - [`NttKind::CosetForward`]: `a_i *= g^i`, then forward (`coset_fft`);
//! - [`NttKind::CosetInverse`]: inverse, then `a_i *= g^-i` (`icoset_fft`).
//!
//! Input and output are in natural order. Also here: the element-wise Fr operations the H
//! polynomial needs ([`GpuDevice::fr_mul_assign`], [`GpuDevice::fr_sub_assign`],
//! [`GpuDevice::fr_scale`]).

use blstrs::Scalar;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use ff::{Field, PrimeField};

use crate::compile::NTT;
use crate::device::{check_len, DeviceBuffer, GpuDevice};
use crate::error::{Error, Result};
use crate::layout::{scalar_raw, FrRaw};

/// Largest supported log2 size.
pub const MAX_LOG_SIZE: u32 = 28;
/// Elements handled in shared memory by one block: 2^NTT_MAX_K (matches ntt.cu).
const NTT_MAX_K: u32 = 9;
/// The two tables of coset powers hold 2^COSET_BITS entries each (covers 2^28).
const COSET_BITS: u32 = 14;

/// Which transform to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttKind {
    /// Evaluate at the powers of omega.
    Forward,
    /// Interpolate from the powers of omega (includes the 1/m scaling).
    Inverse,
    /// Evaluate at g * omega^i.
    CosetForward,
    /// Interpolate from g * omega^i.
    CosetInverse,
}

/// Per-device twiddle tables, independent of the transform size (about 0.5 MiB).
pub(crate) struct NttTables {
    fwd_pow2: CudaSlice<FrRaw>,
    inv_pow2: CudaSlice<FrRaw>,
    fwd_small: CudaSlice<FrRaw>,
    inv_small: CudaSlice<FrRaw>,
    g_lo: CudaSlice<FrRaw>,
    g_hi: CudaSlice<FrRaw>,
    ginv_lo: CudaSlice<FrRaw>,
    ginv_hi: CudaSlice<FrRaw>,
}

/// `[w^(2^m) for m in 0..=S]`.
fn pow2_table(w: Scalar) -> Vec<Scalar> {
    let mut t = Vec::with_capacity(Scalar::S as usize + 1);
    let mut x = w;
    for _ in 0..=Scalar::S {
        t.push(x);
        x = x.square();
    }
    t
}

/// `[w^i for i in 0..len]`.
fn powers(w: Scalar, len: usize) -> Vec<Scalar> {
    let mut t = Vec::with_capacity(len);
    let mut x = Scalar::ONE;
    for _ in 0..len {
        t.push(x);
        x *= w;
    }
    t
}

/// The 2^k-th root of unity bellperson uses for a domain of size 2^k.
pub fn omega(log_n: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    w
}

fn invert(x: Scalar) -> Scalar {
    // the constants inverted here are roots of unity and the generator: never zero
    Option::from(x.invert()).unwrap_or(Scalar::ZERO)
}

impl NttTables {
    fn build(dev: &GpuDevice) -> Result<Self> {
        let root = Scalar::ROOT_OF_UNITY;
        let root_inv = invert(root);
        let w1024 = omega(NTT_MAX_K);
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let ginv = invert(g);
        let lo_len = 1usize << COSET_BITS;
        let up = |v: Vec<Scalar>| -> Result<CudaSlice<FrRaw>> { Ok(dev.upload(&v)?.inner) };
        Ok(Self {
            fwd_pow2: up(pow2_table(root))?,
            inv_pow2: up(pow2_table(root_inv))?,
            fwd_small: up(powers(w1024, 1 << (NTT_MAX_K - 1)))?,
            inv_small: up(powers(invert(w1024), 1 << (NTT_MAX_K - 1)))?,
            g_lo: up(powers(g, lo_len))?,
            g_hi: up(powers(g.pow_vartime([lo_len as u64]), lo_len))?,
            ginv_lo: up(powers(ginv, lo_len))?,
            ginv_hi: up(powers(ginv.pow_vartime([lo_len as u64]), lo_len))?,
        })
    }
}

/// Splits `log_n` stages into passes of at most NTT_MAX_K stages, as even as possible.
fn passes(log_n: u32) -> Vec<(u32, u32)> {
    let count = log_n.div_ceil(NTT_MAX_K);
    let mut out = Vec::with_capacity(count as usize);
    let mut s = 0;
    for p in 0..count {
        let k = (log_n - s) / (count - p);
        out.push((s, k));
        s += k;
    }
    out
}

fn grid(n: usize, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(block), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl GpuDevice {
    fn ntt_tables(&self) -> Result<&NttTables> {
        if let Some(t) = self.ntt_tables.get() {
            return Ok(t);
        }
        let t = NttTables::build(self)?;
        Ok(self.ntt_tables.get_or_init(|| t))
    }

    /// Runs an NTT of `kind` in place on `data`, whose length must be 2^k, 1 <= k <= 28.
    /// Queued on the device's stream; call [`GpuDevice::synchronize`] or download to wait.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = data.len(), ?kind))]
    pub fn ntt(&self, data: &mut DeviceBuffer<Scalar>, kind: NttKind) -> Result<()> {
        let n = data.len();
        if !n.is_power_of_two() || !(2..=1 << MAX_LOG_SIZE).contains(&n) {
            return Err(Error::Unsupported {
                op: "ntt",
                detail: format!("length {n} is not 2^k with 1 <= k <= 28"),
            });
        }
        let log_n = n.trailing_zeros();
        let inverse = matches!(kind, NttKind::Inverse | NttKind::CosetInverse);
        let one = scalar_raw(&Scalar::ONE);
        if kind == NttKind::CosetForward {
            self.distribute_powers(data, false, one)?;
        }
        self.ntt_core(data, log_n, inverse)?;
        let minv = scalar_raw(&invert(Scalar::from(n as u64)));
        match kind {
            NttKind::Forward | NttKind::CosetForward => {}
            NttKind::Inverse => self.fr_scale_raw(data, minv)?,
            NttKind::CosetInverse => self.distribute_powers(data, true, minv)?,
        }
        Ok(())
    }

    fn ntt_core(&self, data: &mut DeviceBuffer<Scalar>, log_n: u32, inverse: bool) -> Result<()> {
        let n = data.len();
        let t = self.ntt_tables()?;
        let (pow2, small) = if inverse {
            (&t.inv_pow2, &t.inv_small)
        } else {
            (&t.fwd_pow2, &t.fwd_small)
        };
        // CUZK_NTT_PROFILE=1 prints the time of each kernel (synchronising after each)
        let profile = std::env::var_os("CUZK_NTT_PROFILE").is_some();
        let mut last = std::time::Instant::now();
        let mut mark = |what: String| {
            if profile {
                let _ = self.stream().synchronize();
                eprintln!("ntt 2^{log_n} {what}: {:.2?}", last.elapsed());
                last = std::time::Instant::now();
            }
        };
        mark("start".into());
        // tiled bit reversal from 2^8 up (rows of 16 consecutive elements), plain below
        let (name, cfg) = if log_n >= 8 {
            let tiles = LaunchConfig {
                grid_dim: (1u32 << (log_n - 8), 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            ("ntt_bitrev_tiled", tiles)
        } else {
            ("ntt_bitrev", grid(n, 256))
        };
        let bitrev = self.function(&NTT, name)?;
        let mut b = self.stream().launch_builder(&bitrev);
        b.arg(&mut data.inner).arg(&log_n);
        // SAFETY: ntt_bitrev(Fr*, u32) and ntt_bitrev_tiled(Fr*, u32) (2^(log_n-8) blocks of 256)
        // touch indices < 2^log_n = data.len().
        unsafe { b.launch(cfg) }.map_err(self.drv("launching the bit reversal"))?;
        mark("bitrev".into());
        let pass = self.function(&NTT, "ntt_pass")?;
        for (s, k) in passes(log_n) {
            let cfg = LaunchConfig {
                grid_dim: (1u32 << (log_n - k), 1, 1),
                block_dim: (1u32 << (k - 1), 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = self.stream().launch_builder(&pass);
            b.arg(&mut data.inner)
                .arg(&log_n)
                .arg(&s)
                .arg(&k)
                .arg(pow2)
                .arg(small);
            // SAFETY: ntt_pass(Fr*, u32 logn, u32 s, u32 k, const Fr* [33], const Fr* [256]) with
            // s + k <= log_n and 2^(log_n-k) blocks of 2^(k-1) threads touches indices < 2^log_n.
            unsafe { b.launch(cfg) }.map_err(self.drv("launching ntt_pass"))?;
            mark(format!("pass s={s} k={k}"));
        }
        Ok(())
    }

    fn distribute_powers(
        &self,
        data: &mut DeviceBuffer<Scalar>,
        inverse: bool,
        scale: FrRaw,
    ) -> Result<()> {
        let t = self.ntt_tables()?;
        let (lo, hi) = if inverse {
            (&t.ginv_lo, &t.ginv_hi)
        } else {
            (&t.g_lo, &t.g_hi)
        };
        let f = self.function(&NTT, "ntt_distribute")?;
        let n = data.len() as u32;
        let mut b = self.stream().launch_builder(&f);
        b.arg(&mut data.inner)
            .arg(&n)
            .arg(lo)
            .arg(hi)
            .arg(&COSET_BITS)
            .arg(&scale);
        // SAFETY: ntt_distribute(Fr*, u32 n, const Fr* lo[2^14], const Fr* hi[2^14], u32, Fr);
        // n <= 2^28 so i >> 14 < 2^14.
        unsafe { b.launch(grid(n as usize, 256)) }.map_err(self.drv("launching ntt_distribute"))?;
        Ok(())
    }

    fn fr_scale_raw(&self, data: &mut DeviceBuffer<Scalar>, c: FrRaw) -> Result<()> {
        let f = self.function(&NTT, "fr_scale")?;
        let n = u32::try_from(data.len()).map_err(|_| Error::Unsupported {
            op: "fr_scale",
            detail: "more than 2^32 elements".into(),
        })?;
        let mut b = self.stream().launch_builder(&f);
        b.arg(&mut data.inner).arg(&n).arg(&c);
        // SAFETY: fr_scale(Fr*, u32 n, Fr) touches indices < n = data.len().
        unsafe { b.launch(grid(n as usize, 256)) }.map_err(self.drv("launching fr_scale"))?;
        Ok(())
    }

    /// `a_i *= c` for every element.
    pub fn fr_scale(&self, a: &mut DeviceBuffer<Scalar>, c: Scalar) -> Result<()> {
        self.fr_scale_raw(a, scalar_raw(&c))
    }

    fn fr_binary(
        &self,
        name: &'static str,
        a: &mut DeviceBuffer<Scalar>,
        b: &DeviceBuffer<Scalar>,
    ) -> Result<()> {
        check_len(name, a.len(), b.len())?;
        let n = u32::try_from(a.len()).map_err(|_| Error::Unsupported {
            op: name,
            detail: "more than 2^32 elements".into(),
        })?;
        let f = self.function(&NTT, name)?;
        let mut l = self.stream().launch_builder(&f);
        l.arg(&mut a.inner).arg(&b.inner).arg(&n);
        // SAFETY: (Fr* a, const Fr* b, u32 n) with a.len() == b.len() == n.
        unsafe { l.launch(grid(n as usize, 256)) }
            .map_err(self.drv("launching an element-wise kernel"))?;
        Ok(())
    }

    /// `a_i *= b_i`; lengths must match.
    pub fn fr_mul_assign(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &DeviceBuffer<Scalar>,
    ) -> Result<()> {
        self.fr_binary("fr_mul_assign", a, b)
    }

    /// `a_i -= b_i`; lengths must match.
    pub fn fr_sub_assign(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &DeviceBuffer<Scalar>,
    ) -> Result<()> {
        self.fr_binary("fr_sub_assign", a, b)
    }

    /// `a_i += b_i`; lengths must match.
    pub fn fr_add_assign(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &DeviceBuffer<Scalar>,
    ) -> Result<()> {
        self.fr_binary("fr_add_assign", a, b)
    }
}

/// The inverse of Z(x) = x^m - 1 on bellperson's coset, `(g^m - 1)^-1`: multiply the coset
/// evaluations of `a*b - c` by this to divide by Z.
pub fn coset_z_inverse(log_n: u32) -> Scalar {
    let m = 1u64 << log_n;
    invert(Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([m]) - Scalar::ONE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_cover_every_stage() {
        for log_n in 1..=MAX_LOG_SIZE {
            let p = passes(log_n);
            let mut s = 0;
            for &(ps, k) in &p {
                assert_eq!(ps, s);
                assert!((1..=NTT_MAX_K).contains(&k));
                s += k;
            }
            assert_eq!(s, log_n);
        }
    }
}
