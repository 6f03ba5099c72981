//! The NTT's twiddle factors: the geometry of the tables a device keeps for its transforms
//! ([`NttTables`], built once a device) and the host-side computation of their entries. The
//! passes that read them are in [`crate::ntt`].

use blstrs::Scalar;
use cudarc::driver::CudaSlice;
use ff::{Field, PrimeField};

use crate::error::Result;
use crate::layout::FrRaw;

/// Largest supported log2 size.
pub const MAX_LOG_SIZE: u32 = 28;

/// Most stages of one pass, run in shared memory: 2^NTT_MAX_K elements a column (matches
/// ntt.cu).
pub(crate) const NTT_MAX_K: u32 = 9;

/// The two tables of powers of the 2^28-th root hold 2^ROOT_BITS entries each (matches
/// NTT_ROOT_BITS in ntt.cu).
pub(crate) const ROOT_BITS: u32 = 14;

/// The two tables of coset powers hold 2^COSET_BITS entries each (covers 2^28).
pub(crate) const COSET_BITS: u32 = 14;

/// The stage tables hold every twiddle of stages 1..=STAGE_BITS, 2^STAGE_BITS entries each
/// (matches NTT_STAGE_BITS in ntt.cu): a strided pass whose stages all lie there reads its
/// twiddles instead of computing each with a product.
pub(crate) const STAGE_BITS: u32 = 18;

/// Device memory the per-device NTT tables take, in bytes ([`crate::GpuDevice::ntt`] builds them
/// on first use and keeps them with the device): the root, coset and stage tables of both
/// directions and the two small tables.
pub const TABLES_BYTES: u64 = {
    let fr = std::mem::size_of::<FrRaw>() as u64;
    let root = 4 * (1u64 << ROOT_BITS);
    let coset = 4 * (1u64 << COSET_BITS);
    let stage = 2 * (1u64 << STAGE_BITS);
    let small = 2 * (1u64 << (NTT_MAX_K - 1));
    (root + coset + stage + small) * fr
};

/// Per-device twiddle tables, independent of the transform size ([`TABLES_BYTES`], about
/// 20 MiB).
pub(crate) struct NttTables {
    pub(crate) fwd_root_lo: CudaSlice<FrRaw>,
    pub(crate) fwd_root_hi: CudaSlice<FrRaw>,
    pub(crate) inv_root_lo: CudaSlice<FrRaw>,
    pub(crate) inv_root_hi: CudaSlice<FrRaw>,
    pub(crate) fwd_small: CudaSlice<FrRaw>,
    pub(crate) inv_small: CudaSlice<FrRaw>,
    /// `[2^(t-1) + x] = w_{2^t}^x` for 1 <= t <= STAGE_BITS, x < 2^(t-1); entry 0 is one.
    pub(crate) fwd_stage: CudaSlice<FrRaw>,
    pub(crate) inv_stage: CudaSlice<FrRaw>,
    pub(crate) g_lo: CudaSlice<FrRaw>,
    pub(crate) g_hi: CudaSlice<FrRaw>,
    pub(crate) ginv_lo: CudaSlice<FrRaw>,
    pub(crate) ginv_hi: CudaSlice<FrRaw>,
}

/// The stage multipliers `ct[t] = gamma^(2^(log_n - t))` for t <= log_n, one beyond.
pub(crate) fn coset_multipliers(gamma: Scalar, log_n: u32) -> Vec<Scalar> {
    let mut ct = vec![Scalar::ONE; MAX_LOG_SIZE as usize + 1];
    let mut x = gamma; // gamma^(2^(log_n - t)) for t = log_n, log_n - 1, ...
    for t in (1..=log_n as usize).rev() {
        ct[t] = x;
        x = x.square();
    }
    ct
}

/// The coset stage table: [`stage_table`] of root `w` (the 2^STAGE_BITS-th root or its
/// inverse), each stage t's entries times `ct[t]`, cut to the stages of a 2^log_n transform:
/// what `ntt_coset_table` builds on the device (the host model of the tests).
#[cfg(test)]
pub(crate) fn coset_stage_table(w: Scalar, ct: &[Scalar], log_n: u32) -> Vec<Scalar> {
    let stages = log_n.min(STAGE_BITS);
    let mut t = stage_table(w);
    t.truncate(1 << stages);
    for stage in 1..=stages {
        let from = 1usize << (stage - 1);
        for e in &mut t[from..2 * from] {
            *e *= ct[stage as usize];
        }
    }
    t
}

/// `[w^i for i in 0..len]`.
pub(crate) fn powers(w: Scalar, len: usize) -> Vec<Scalar> {
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

/// The stage table of root `w` (the 2^STAGE_BITS-th root of unity or its inverse):
/// `[2^(t-1) + x] = w_{2^t}^x` with w_{2^t} = w^(2^(STAGE_BITS - t)), entry 0 one.
pub(crate) fn stage_table(w: Scalar) -> Vec<Scalar> {
    let top = powers(w, 1 << (STAGE_BITS - 1));
    let mut t = Vec::with_capacity(1 << STAGE_BITS);
    t.push(Scalar::ONE);
    for stage in 1..=STAGE_BITS {
        let step = 1usize << (STAGE_BITS - stage);
        t.extend(top.iter().step_by(step).take(1 << (stage - 1)));
    }
    t
}

/// `1 / x`, for constants known not to be zero.
pub(crate) fn invert(x: Scalar) -> Scalar {
    // the constants inverted here are roots of unity and the generator: never zero
    Option::from(x.invert()).unwrap_or(Scalar::ZERO)
}

impl NttTables {
    /// Builds the tables, each put on the device by `upload`.
    pub(crate) fn build(
        mut upload: impl FnMut(&[Scalar]) -> Result<CudaSlice<FrRaw>>,
    ) -> Result<Self> {
        let w28 = omega(MAX_LOG_SIZE);
        let w28_inv = invert(w28);
        let root_len = 1usize << ROOT_BITS;
        let w512 = omega(NTT_MAX_K);
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let ginv = invert(g);
        let lo_len = 1usize << COSET_BITS;
        let mut up = |v: Vec<Scalar>| upload(&v);
        Ok(Self {
            fwd_root_lo: up(powers(w28, root_len))?,
            fwd_root_hi: up(powers(w28.pow_vartime([root_len as u64]), root_len))?,
            inv_root_lo: up(powers(w28_inv, root_len))?,
            inv_root_hi: up(powers(w28_inv.pow_vartime([root_len as u64]), root_len))?,
            fwd_small: up(powers(w512, 1 << (NTT_MAX_K - 1)))?,
            inv_small: up(powers(invert(w512), 1 << (NTT_MAX_K - 1)))?,
            fwd_stage: up(stage_table(omega(STAGE_BITS)))?,
            inv_stage: up(stage_table(invert(omega(STAGE_BITS))))?,
            g_lo: up(powers(g, lo_len))?,
            g_hi: up(powers(g.pow_vartime([lo_len as u64]), lo_len))?,
            ginv_lo: up(powers(ginv, lo_len))?,
            ginv_hi: up(powers(ginv.pow_vartime([lo_len as u64]), lo_len))?,
        })
    }
}
