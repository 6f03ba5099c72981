//! Fr NTT on the device, following bellperson 0.27's `EvaluationDomain` conventions.
//!
//! For a buffer of m = 2^k scalars (1 <= k <= 28), with
//! `omega = Scalar::ROOT_OF_UNITY^(2^(32 - k))` and `g = Scalar::MULTIPLICATIVE_GENERATOR`:
//! - [`NttKind::Forward`]: `a'_i = sum_j a_j omega^(ij)` (bellperson `fft`);
//! - [`NttKind::Inverse`]: the same with `omega^-1`, then every element times `1/m` (`ifft`);
//! - [`NttKind::CosetForward`]: `a_i *= g^i`, then forward (`coset_fft`);
//! - [`NttKind::CosetInverse`]: inverse, then `a_i *= g^-i` (`icoset_fft`).
//!
//! Input and output are in natural order. The twiddle tables the passes read are built once
//! a device (the crate's `twiddles` module). Also here: the element-wise Fr operations the H
//! polynomial needs ([`GpuDevice::fr_mul_assign`], [`GpuDevice::fr_sub_assign`],
//! [`GpuDevice::fr_scale`]).

use blstrs::Scalar;
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use ff::{Field, PrimeField};

use crate::compile::NTT;
use crate::device::{check_len, DeviceBuffer, GpuDevice};
use crate::error::{Error, Result};
use crate::layout::{scalar_raw, FrRaw};
use crate::profile::Steps;
use crate::twiddles::{
    coset_multipliers, invert, powers, NttTables, COSET_BITS, NTT_MAX_K, STAGE_BITS,
};
pub use crate::twiddles::{omega, MAX_LOG_SIZE, TABLES_BYTES};

/// log2 of the columns one block of a pass takes: the pass kernels take 2^c columns a block
/// (ntt.cu), and the host launches them with one. Measured on an H200 at 2^27 (radix-4
/// passes, CHANGELOG.md): 1 column 46.8 ms, 2 columns 49.5 ms, 4 columns 62.4 ms; wider
/// blocks cost occupancy (each column has its own twiddle table in shared memory) more than
/// the longer runs of addresses gain.
const COLS_LOG: u32 = 0;

/// The top table holds w27^x for x < 2^(TOP_BITS - 1), w27 the 2^TOP_BITS-th root of unity
/// (matches NTT_TOP_BITS in ntt.cu): every twiddle of every stage up to TOP_BITS, so the last
/// pass of a 2^19..=2^TOP_BITS transform reads its twiddles instead of computing each with a
/// product.
const TOP_BITS: u32 = 27;

/// Device memory the top twiddle table takes, in bytes (2 GiB). Built on the device at the
/// first transform of 2^19..=2^27 points, kept with the device; where it cannot be allocated,
/// or without [`NttOptions::top_table`], the transforms compute those twiddles instead (same
/// results).
pub const TOP_TABLE_BYTES: u64 = (1u64 << (TOP_BITS - 1)) * std::mem::size_of::<FrRaw>() as u64;

/// Whether a transform of 2^log_n points can use the top table: it has a pass beyond the
/// stage table's stages and no stage beyond the top table's.
pub fn uses_top_table(log_n: u32) -> bool {
    (STAGE_BITS + 1..=TOP_BITS).contains(&log_n)
}

/// The device memory a transform may use beyond its data. The results never depend on it;
/// the speed does. The default, which every product path uses, takes both where the device
/// has room; a transform without room for one runs as with it turned off, so turning one
/// off is for tests of those paths (and a caller that needs the memory more than the time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NttOptions {
    /// Read the twiddles of a pass beyond the stage table's stages from the top table
    /// ([`TOP_TABLE_BYTES`], built once per device) instead of computing them, where the
    /// size allows (2^19..=2^27 points) and the device has room for the table.
    pub top_table: bool,
    /// Fuse the bit reversal of a natural-order transform into its first pass (the DIT
    /// network; the DIF network's last), which moves the data through a second buffer of the
    /// same size while the transform runs (from the device's pool; without room for one, the
    /// bit reversal runs as a pass of its own).
    pub fused_reversal: bool,
}

impl Default for NttOptions {
    /// Both: the top table (about 2.5 ms of a 2^27 transform) and the fused bit reversal.
    fn default() -> Self {
        NttOptions {
            top_table: true,
            fused_reversal: true,
        }
    }
}

/// Flags of a pass (ntt.cu): the bit reversal fused into a first pass (s = 0).
const FLAG_REV: u32 = 1;
/// Flags of a pass: the top table holds forward powers, the pass wants inverse twiddles.
const FLAG_TOP_INV: u32 = 2;
/// Flags of a coset pass: the factors of the last pass's stages go to the pass with s = 0,
/// and the last pass reads its twiddles from the top table (ntt.cu); bits LOW_SHIFT.. hold
/// that pass's stage count.
const FLAG_COSET_LOW: u32 = 4;
/// Where a coset pass's flags hold the last pass's stage count (NTT_LOW_SHIFT in ntt.cu).
const LOW_SHIFT: u32 = 8;

/// Device memory the coset tables take during one [`GpuDevice::h_polynomial_scaled`], in
/// bytes (a coset stage table of each direction and their stage multipliers, built on the
/// device at the start of the call and freed at its end).
pub const COSET_TABLES_BYTES: u64 = 2
    * ((1u64 << STAGE_BITS) + (1u64 << NTT_MAX_K) + MAX_LOG_SIZE as u64 + 1)
    * std::mem::size_of::<FrRaw>() as u64;

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

/// The twiddles of a coset transform of 2^L points with generator `gamma` (g forward, g^-1
/// inverse; see ntt.cu): every twiddle of stage t times `ct[t] = gamma^(2^(L - t))`.
/// Built on the device for one call ([`GpuDevice::coset_tables`]).
pub(crate) struct CosetTables {
    /// `[2^(t-1) + x] = w_{2^t}^x * ct[t]` for 1 <= t <= min(L, STAGE_BITS), x < 2^(t-1).
    stage: CudaSlice<FrRaw>,
    /// `gamma^x` for x < 2^NTT_MAX_K: the factors the pass with s = 0 applies for the last
    /// pass's stages (FLAG_COSET_LOW).
    low: CudaSlice<FrRaw>,
    /// `ct[t]` for 0 <= t <= MAX_LOG_SIZE (one beyond L).
    ct: CudaSlice<FrRaw>,
}

/// One launch of `ntt_pass`: stages `[s + 1, s + k]` on columns of 2^k elements spaced 2^s
/// apart, 2^c columns a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pass {
    s: u32,
    k: u32,
}

impl Pass {
    /// Elements one block holds.
    fn block_elems(&self) -> u32 {
        1 << (self.k + COLS_LOG)
    }

    /// Threads of a block: one per 4 elements (a radix-4 step each).
    fn threads(&self) -> u32 {
        (self.block_elems() / 4).max(1)
    }

    /// Dynamic shared memory in bytes (the layout in ntt.cu): padded data, twiddle tables
    /// (one when s == 0, one per column otherwise) and the columns' w_low values.
    fn shared_bytes(&self) -> u32 {
        let nb = self.block_elems();
        let tables = if self.s == 0 { 1 } else { 1 << COLS_LOG };
        let frs = nb + nb / 8 + (tables << self.k) + (1 << COLS_LOG) * NTT_MAX_K;
        frs * std::mem::size_of::<FrRaw>() as u32
    }
}

/// The tables one transform's passes read (ntt.cu), and their last argument.
struct PassTables<'a> {
    small: &'a CudaSlice<FrRaw>,
    root_lo: &'a CudaSlice<FrRaw>,
    root_hi: &'a CudaSlice<FrRaw>,
    stage: &'a CudaSlice<FrRaw>,
    last: LastArg<'a>,
}

/// The last arguments of a pass kernel: the top table (or null) for the plain passes; the
/// stage multipliers, the top table (or null) and the low factors for the coset ones.
enum LastArg<'a> {
    Top(Option<&'a CudaSlice<FrRaw>>),
    Coset {
        ct: &'a CudaSlice<FrRaw>,
        top: Option<&'a CudaSlice<FrRaw>>,
        low: &'a CudaSlice<FrRaw>,
    },
}

/// Splits `log_n` stages into passes of at most NTT_MAX_K stages, as even as possible.
fn passes(log_n: u32) -> Vec<Pass> {
    let count = log_n.div_ceil(NTT_MAX_K);
    let mut out = Vec::with_capacity(count as usize);
    let mut s = 0;
    for p in 0..count {
        let k = (log_n - s) / (count - p);
        out.push(Pass { s, k });
        s += k;
    }
    out
}

/// Element order into and out of [`GpuDevice::ntt_core`]'s network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// Bit reversal, then the DIT passes.
    NaturalToNatural,
    /// The DIT passes alone, on data already in bit-reversed order.
    BitrevToNatural,
    /// The DIF passes (the transposed network): bit-reversed order out.
    NaturalToBitrev,
    /// The DIF passes, then bit reversal: natural order out.
    NaturalToNaturalDif,
}

impl Order {
    /// Whether the network is the transposed (DIF) one.
    fn dif(self) -> bool {
        matches!(self, Order::NaturalToBitrev | Order::NaturalToNaturalDif)
    }

    /// Whether the order includes a bit reversal (before the DIT passes or after the DIF
    /// ones).
    fn reverses(self) -> bool {
        matches!(self, Order::NaturalToNatural | Order::NaturalToNaturalDif)
    }
}

/// log2 of an NTT length, or the error for a length that is not 2^k, 1 <= k <= 28.
fn check_ntt_len(n: usize) -> Result<u32> {
    if !n.is_power_of_two() || !(2..=1 << MAX_LOG_SIZE).contains(&n) {
        return Err(Error::Unsupported {
            op: "ntt",
            detail: format!("length {n} is not 2^k with 1 <= k <= 28"),
        });
    }
    Ok(n.trailing_zeros())
}

/// The common length of three element-wise operands, as the kernels' u32 count: an error
/// when the lengths differ or exceed 2^32.
fn ternary_len(
    op: &'static str,
    a: &DeviceBuffer<Scalar>,
    b: &DeviceBuffer<Scalar>,
    c: &DeviceBuffer<Scalar>,
) -> Result<u32> {
    check_len(op, a.len(), b.len())?;
    check_len(op, a.len(), c.len())?;
    u32::try_from(a.len()).map_err(|_| Error::Unsupported {
        op,
        detail: "more than 2^32 elements".into(),
    })
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
        let t = NttTables::build(|v| Ok(self.upload(v)?.inner))?;
        Ok(self.ntt_tables.get_or_init(|| t))
    }

    /// The top twiddle table ([`TOP_TABLE_BYTES`]) for a transform of 2^log_n points, built
    /// on first use; `None` when the transform has no use for it, it is turned off, or the
    /// device has no room for it (then the passes compute those twiddles: the same results).
    fn ntt_top(&self, log_n: u32) -> Result<Option<&CudaSlice<FrRaw>>> {
        if !uses_top_table(log_n) {
            return Ok(None);
        }
        if let Some(t) = self.ntt_top.get() {
            return Ok(Some(t));
        }
        let n = 1usize << (TOP_BITS - 1);
        let Ok(mut top) = self.alloc_uninit::<Scalar>(n) else {
            // tried again at the next transform (memory may have been freed), said once
            static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
                tracing::warn!(
                    pci = %self.pci_id(),
                    bytes = TOP_TABLE_BYTES,
                    "no room for the NTT's top twiddle table: computing those twiddles instead \
                     (the same results, about 2.5 ms slower a 2^27 transform)"
                );
            }
            return Ok(None);
        };
        let t = self.ntt_tables()?;
        let f = self.function(&NTT, "ntt_top_table")?;
        let len = n as u32;
        let mut b = self.stream().launch_builder(&f);
        b.arg(&mut top.inner)
            .arg(&t.fwd_root_lo)
            .arg(&t.fwd_root_hi)
            .arg(&len);
        // SAFETY: ntt_top_table(Fr* out[n], const Fr* root_lo[2^14], const Fr* root_hi[2^14],
        // u32 n) with n = 2^26 = top.len(): writes every out[x], x < n (so the uninitialised
        // buffer is filled), reads root_hi[2x >> 14] with 2x < 2^27 (index < 2^13) and
        // root_lo[2x mod 2^14].
        unsafe { b.launch(grid(n, 256)) }.map_err(self.drv("launching ntt_top_table"))?;
        Ok(Some(self.ntt_top.get_or_init(|| top.inner)))
    }

    /// Runs an NTT of `kind` in place on `data`, whose length must be 2^k, 1 <= k <= 28.
    /// Queued on the device's stream; call [`GpuDevice::synchronize`] or download to wait.
    /// Runs with [`NttOptions::default`]: from 2^10 points it moves the data through a
    /// second buffer of the same size (the bit reversal fused into the first pass), and from
    /// 2^19 to 2^27 points it reads the last pass's twiddles from the device's top table
    /// ([`TOP_TABLE_BYTES`], built at the first such transform). Without device memory for
    /// either, it runs without it, with the same result.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = data.len(), ?kind))]
    pub fn ntt(&self, data: &mut DeviceBuffer<Scalar>, kind: NttKind) -> Result<()> {
        self.ntt_with_options(data, kind, NttOptions::default())
    }

    /// As [`GpuDevice::ntt`] with `opts` instead of the defaults ([`NttOptions::default`]).
    pub fn ntt_with_options(
        &self,
        data: &mut DeviceBuffer<Scalar>,
        kind: NttKind,
        opts: NttOptions,
    ) -> Result<()> {
        self.ntt_full(data, kind, Scalar::ONE, opts)
    }

    /// As [`GpuDevice::ntt`], then every element times `scale`, folded into the transform's
    /// own scaling pass (one pass fewer than [`GpuDevice::fr_scale`] after it). For
    /// [`NttKind::Forward`], which has no scaling pass, a `scale` other than one costs one.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = data.len(), ?kind))]
    pub fn ntt_scaled(
        &self,
        data: &mut DeviceBuffer<Scalar>,
        kind: NttKind,
        scale: Scalar,
    ) -> Result<()> {
        self.ntt_full(data, kind, scale, NttOptions::default())
    }

    /// bellperson's `ifft` then `coset_fft` (evaluations on the domain to evaluations on the
    /// coset, the first step of Groth16's H for each of a, b and c), equal to
    /// [`NttKind::Inverse`] then [`NttKind::CosetForward`] element for element, in fewer
    /// passes: the inverse runs as the transposed (DIF) network, which leaves the
    /// coefficients in bit-reversed order, the coset factors and 1/m are applied in that order,
    /// and the forward network reads them so: no bit reversal and no separate 1/m pass.
    /// The length must be 2^k, 1 <= k <= 28.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = data.len()))]
    pub fn evaluations_to_coset(&self, data: &mut DeviceBuffer<Scalar>) -> Result<()> {
        let log_n = check_ntt_len(data.len())?;
        let opts = NttOptions::default();
        let minv = scalar_raw(&invert(Scalar::from(data.len() as u64)));
        self.ntt_core(data, log_n, true, opts, Order::NaturalToBitrev, None, None)?;
        self.distribute_powers(data, false, minv, log_n)?;
        self.ntt_core(data, log_n, false, opts, Order::BitrevToNatural, None, None)
    }

    /// Groth16's H polynomial with bellperson's conventions, up to a constant factor that it
    /// returns: given the evaluations of A, B and C on the domain (`a`, `b`, `c`, each zero
    /// padded to the same m = 2^k, 1 <= k <= 28), replaces `a` by h' with
    /// `kappa * h'_i = h_i`, where h holds the coefficients of (A B - C) / Z that bellperson's
    /// `ifft`, `coset_fft`, `mul_assign`, `sub_assign`, `divide_by_z_on_coset` and `icoset_fft`
    /// give. `b` and `c` are overwritten. The H query's MSM over h' times kappa is the MSM over
    /// h.
    ///
    /// How: each of a, b, c goes through the inverse transform unscaled (the DIF network,
    /// bit-reversed order out) and a coset transform that reads that order (DIT) with the
    /// coset factors g^e in its twiddles (see ntt.cu): m times its coset evaluations, with no
    /// pass of its own for the factors or 1/m. Then `a = a b - m c` (m^2 (A B - C) on the
    /// coset) in one pass, the inverse coset transform unscaled (DIF, the factors g^-e in its
    /// twiddles) whose last pass also reverses the bits (moving the data through `b`, whose
    /// contents are no longer needed). Every constant (1/m four times, 1/Z) is left to kappa
    /// = 1 / (m^3 (g^m - 1)): one scalar multiplication of the MSM's result instead of a pass
    /// over the data.
    ///
    /// Six transforms instead of seven when the assignment satisfies its constraints, c = a b
    /// element-wise on the domain (one pass over a, b and c checks it on the device first,
    /// and an assignment that does not satisfy it takes the seven transforms, so the result
    /// is the same for any input): then
    /// C(X) = A(X) B(X) mod (X^m - 1), and with A B = P_lo + X^m P_hi (degrees below m) the
    /// quotient is h = P_hi and C = P_lo + P_hi. On the coset of zeta, a primitive 2m-th root
    /// of unity (zeta^m = -1), A B takes the values of N = P_lo - P_hi (X^m = -1 there), so
    /// h = (C - N) / 2: a and b to the zeta coset (two transforms each, as above), their
    /// product, the inverse zeta-coset transform (m^3 N), the inverse transform of c (m C),
    /// and `a = m^3 N - m^2 (m C)` = -2 m^3 h: kappa = -1 / (2 m^3). The coefficients are
    /// bellperson's h exactly (the quotient is unique), not an approximation of them.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = a.len()))]
    pub fn h_polynomial_scaled(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &mut DeviceBuffer<Scalar>,
        c: &mut DeviceBuffer<Scalar>,
    ) -> Result<Scalar> {
        self.h_polynomial_scaled_with_options(a, b, c, NttOptions::default())
    }

    /// As [`GpuDevice::h_polynomial_scaled`] with `opts` (the result does not depend on them).
    pub fn h_polynomial_scaled_with_options(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &mut DeviceBuffer<Scalar>,
        c: &mut DeviceBuffer<Scalar>,
        opts: NttOptions,
    ) -> Result<Scalar> {
        let log_n = check_ntt_len(a.len())?;
        check_len("h_polynomial (b)", a.len(), b.len())?;
        check_len("h_polynomial (c)", a.len(), c.len())?;
        if self.satisfies_products(a, b, c)? {
            return self.h_negacyclic(a, b, c, log_n, opts);
        }
        tracing::warn!(
            n = a.len(),
            "a b != c on the domain: the assignment does not satisfy its constraints, so its \
             proof cannot verify (H by seven transforms)"
        );
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let fwd = self.coset_tables(log_n, false, g)?;
        let inv = self.coset_tables(log_n, true, g)?;
        for v in [&mut *a, &mut *b, &mut *c] {
            self.to_coset_unscaled(v, log_n, opts, &fwd)?;
        }
        let m = Scalar::from(a.len() as u64);
        self.fr_mul_sub_scaled(a, b, c, m)?;
        // b is free now: the last transform moves through it, its bit reversal fused into
        // its last pass
        self.inverse_natural(a, log_n, opts, Some(&inv), b)?;
        Ok(coset_z_inverse(log_n) * invert(m * m * m))
    }

    /// Evaluations on the domain to m times the evaluations on the coset of `fwd`: the
    /// unscaled inverse as the DIF network (bit-reversed order out), then the coset DIT network
    /// reading that order with the coset factors in its twiddles.
    fn to_coset_unscaled(
        &self,
        v: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        opts: NttOptions,
        fwd: &CosetTables,
    ) -> Result<()> {
        self.ntt_core(v, log_n, true, opts, Order::NaturalToBitrev, None, None)?;
        self.ntt_core(
            v,
            log_n,
            false,
            opts,
            Order::BitrevToNatural,
            Some(fwd),
            None,
        )
    }

    /// The unscaled inverse transform (the coset one with `coset`) as the DIF network, natural
    /// order in and out: with [`NttOptions::fused_reversal`] its bit reversal is fused into
    /// its last pass, moving the data through `spare` (whose contents are lost), else a pass
    /// of its own.
    fn inverse_natural(
        &self,
        v: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        opts: NttOptions,
        coset: Option<&CosetTables>,
        spare: &mut DeviceBuffer<Scalar>,
    ) -> Result<()> {
        let via = opts.fused_reversal.then_some(spare);
        self.ntt_core(v, log_n, true, opts, Order::NaturalToNaturalDif, coset, via)
    }

    /// [`GpuDevice::h_polynomial_scaled`]'s six-transform form, for a, b, c with c = a b
    /// element-wise (see there); returns kappa = -1 / (2 m^3).
    fn h_negacyclic(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &mut DeviceBuffer<Scalar>,
        c: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        opts: NttOptions,
    ) -> Result<Scalar> {
        // zeta = w_{2m}: omega of one size up (2m <= 2^29 < 2^S)
        let zeta = omega(log_n + 1);
        let fwd = self.coset_tables(log_n, false, zeta)?;
        let inv = self.coset_tables(log_n, true, zeta)?;
        for v in [&mut *a, &mut *b] {
            self.to_coset_unscaled(v, log_n, opts, &fwd)?;
        }
        // m^2 (A B)(zeta w^i) = m^2 N(zeta w^i)
        self.fr_mul_assign(a, b)?;
        // b is free now: the two inverse transforms move through it, their bit reversals
        // fused into their last passes
        self.inverse_natural(a, log_n, opts, Some(&inv), b)?;
        self.inverse_natural(c, log_n, opts, None, b)?;
        let m = Scalar::from(a.len() as u64);
        self.fr_sub_scaled(a, c, m * m)?;
        Ok(-invert(Scalar::from(2u64) * m * m * m))
    }

    /// Whether `a_i * b_i == c_i` for every i (an assignment that satisfies its constraints):
    /// one pass over the three on the device and a read-back of one flag, which waits for the
    /// device's stream.
    pub fn satisfies_products(
        &self,
        a: &DeviceBuffer<Scalar>,
        b: &DeviceBuffer<Scalar>,
        c: &DeviceBuffer<Scalar>,
    ) -> Result<bool> {
        let n = ternary_len("satisfies_products", a, b, c)?;
        let mut flag = self.alloc_zeroed::<u32>(1)?;
        let f = self.function(&NTT, "fr_check_product")?;
        let mut l = self.stream().launch_builder(&f);
        l.arg(&a.inner)
            .arg(&b.inner)
            .arg(&c.inner)
            .arg(&n)
            .arg(&mut flag.inner);
        // SAFETY: fr_check_product(const Fr* a, const Fr* b, const Fr* c, u32 n, u32* flag)
        // reads indices < n of a, b and c, all of length n, and writes flag[0] (length 1).
        unsafe { l.launch(grid(n as usize, 256)) }
            .map_err(self.drv("launching fr_check_product"))?;
        Ok(self.download(&flag)?[0] == 0)
    }

    /// The coset tables of a 2^log_n transform in one direction ([`CosetTables`]) for the
    /// coset of `g` (the forward generator; the inverse direction uses g^-1): the stage
    /// multipliers from the host (log_n squarings), the table from the plain stage table on
    /// the device (2^min(log_n, 18) products).
    fn coset_tables(&self, log_n: u32, inverse: bool, g: Scalar) -> Result<CosetTables> {
        let t = self.ntt_tables()?;
        let (plain, gamma) = if inverse {
            (&t.inv_stage, invert(g))
        } else {
            (&t.fwd_stage, g)
        };
        let ct = self.upload(&coset_multipliers(gamma, log_n))?.inner;
        let len = 1usize << log_n.min(STAGE_BITS);
        let mut stage = self.alloc_uninit::<Scalar>(len)?.inner;
        let f = self.function(&NTT, "ntt_coset_table")?;
        let n = len as u32;
        let mut b = self.stream().launch_builder(&f);
        b.arg(plain).arg(&ct).arg(&mut stage).arg(&n);
        // SAFETY: ntt_coset_table(const Fr* stage[2^18], const Fr* ct[29], Fr* out[n], u32 n)
        // with n = 2^min(log_n, 18): reads stage[e] and ct[t] for e < n, t = bit length of e
        // <= 18 < 29, and writes every out[e], e < n (so the uninitialised buffer is filled).
        unsafe { b.launch(grid(len, 256)) }.map_err(self.drv("launching ntt_coset_table"))?;
        let low = self.upload(&powers(gamma, 1 << NTT_MAX_K))?.inner;
        Ok(CosetTables { stage, low, ct })
    }

    fn ntt_full(
        &self,
        data: &mut DeviceBuffer<Scalar>,
        kind: NttKind,
        scale: Scalar,
        opts: NttOptions,
    ) -> Result<()> {
        let log_n = check_ntt_len(data.len())?;
        let inverse = matches!(kind, NttKind::Inverse | NttKind::CosetInverse);
        let raw = scalar_raw(&scale);
        if kind == NttKind::CosetForward {
            self.distribute_powers(data, false, raw, 0)?;
        }
        // the bit reversal fused into the first pass moves the data through a second buffer
        // (from the device's pool); without room for one it runs as a pass of its own
        let mut scratch = if opts.fused_reversal && log_n > NTT_MAX_K {
            self.alloc_uninit::<Scalar>(data.len()).ok()
        } else {
            None
        };
        self.ntt_core(
            data,
            log_n,
            inverse,
            opts,
            Order::NaturalToNatural,
            None,
            scratch.as_mut(),
        )?;
        let minv = scalar_raw(&(invert(Scalar::from(data.len() as u64)) * scale));
        match kind {
            NttKind::Forward if scale != Scalar::ONE => self.fr_scale_raw(data, raw)?,
            NttKind::Forward | NttKind::CosetForward => {}
            NttKind::Inverse => self.fr_scale_raw(data, minv)?,
            NttKind::CosetInverse => self.distribute_powers(data, true, minv, 0)?,
        }
        Ok(())
    }

    /// The passes of one transform in `order`; `coset` (the tables of this size and
    /// direction) makes it a coset transform with unscaled output: input factors g^e for
    /// the DIT network, output factors g^-e for the DIF one (see ntt.cu).
    ///
    /// With `via` (a second buffer of the same length) and an order that reverses the bits,
    /// the bit reversal is fused into the pass with s = 0 (the DIT network's first, the DIF
    /// network's last), which cannot run in place: the first pass moves the data from `data`
    /// into `via`, the passes between run in place there, and the last moves it back. The
    /// result is in `data` either way; `via`'s contents are left unspecified. A transform of
    /// one pass (2^9 points or fewer) runs its bit reversal apart.
    #[allow(clippy::too_many_arguments)]
    fn ntt_core(
        &self,
        data: &mut DeviceBuffer<Scalar>,
        log_n: u32,
        inverse: bool,
        opts: NttOptions,
        order: Order,
        coset: Option<&CosetTables>,
        via: Option<&mut DeviceBuffer<Scalar>>,
    ) -> Result<()> {
        let t = self.ntt_tables()?;
        let (small, root_lo, root_hi, plain_stage) = if inverse {
            (&t.inv_small, &t.inv_root_lo, &t.inv_root_hi, &t.inv_stage)
        } else {
            (&t.fwd_small, &t.fwd_root_lo, &t.fwd_root_hi, &t.fwd_stage)
        };
        let stage = coset.map_or(plain_stage, |c| &c.stage);
        let mut plan = passes(log_n);
        // (DIT order: the pass with s = 0 first, the one beyond the stage table last)
        let last_stages = plan[plan.len() - 1].k;
        // a coset transform with the top table gives the last pass's factors to the pass with
        // s = 0 (FLAG_COSET_LOW, ntt.cu: one column a block)
        let top = if opts.top_table {
            self.ntt_top(log_n)?
        } else {
            None
        };
        let coset_low = match (coset, top) {
            (Some(_), Some(_)) => FLAG_COSET_LOW | (last_stages << LOW_SHIFT),
            _ => 0,
        };
        // with the device's NTT step timing, the time of each kernel (crate::profile)
        let mut steps = Steps::new(self.step_timing().ntt, || format!("ntt 2^{log_n}"));
        steps.mark(self, "start");
        let dif = order.dif();
        if dif {
            // the transposed network: the last pass first
            plan.reverse();
        }
        let mut via = via.filter(|v| order.reverses() && plan.len() >= 2 && v.len() == data.len());
        if order.reverses() && via.is_none() && !dif {
            self.bit_reverse(data, log_n)?;
            steps.mark(self, "bitrev");
        }
        let name = match (dif, coset.is_some()) {
            (false, false) => "ntt_pass",
            (true, false) => "ntt_pass_dif",
            (false, true) => "ntt_pass_coset",
            (true, true) => "ntt_pass_dif_coset",
        };
        let pass_fn = self.function(&NTT, name)?;
        // a plain DIT network's pass with s = 0 has its own kernel (ntt.cu: s known, and a warp
        // of the stage-3 step that shares j' = 0 skips its products by one)
        let s0_fn = if !dif && coset.is_none() {
            Some(self.function(&NTT, "ntt_pass_s0")?)
        } else {
            None
        };
        let tables = PassTables {
            small,
            root_lo,
            root_hi,
            stage,
            last: match coset {
                Some(c) => LastArg::Coset {
                    ct: &c.ct,
                    top,
                    low: &c.low,
                },
                None => LastArg::Top(top),
            },
        };
        let count = plan.len();
        for (at, p) in plan.into_iter().enumerate() {
            let mut flags = coset_low;
            if inverse && top.is_some() {
                flags |= FLAG_TOP_INV;
            }
            if via.is_some() && p.s == 0 {
                flags |= FLAG_REV;
            }
            // with `via`: the first pass from data into it, the last back, the others in place
            // there; without: every pass in place in data
            let (dst, src) = match via.as_deref_mut() {
                Some(v) if at == 0 => (&mut v.inner, Some(&data.inner)),
                Some(v) if at + 1 == count => (&mut data.inner, Some(&v.inner)),
                Some(v) => (&mut v.inner, None),
                None => (&mut data.inner, None),
            };
            let f = match &s0_fn {
                Some(f) if p.s == 0 => f,
                _ => &pass_fn,
            };
            self.launch_pass(f, dst, src, log_n, p, flags, &tables)?;
            steps.mark(self, format_args!("pass s={} k={} flags={flags}", p.s, p.k));
        }
        if order.reverses() && via.is_none() && dif {
            self.bit_reverse(data, log_n)?;
            steps.mark(self, "bitrev");
        }
        Ok(())
    }

    /// Launches one pass of `f` (one of the four pass kernels, matching `tables.last`) from
    /// `src` into `dst`, or in place in `dst` when `src` is `None`.
    #[allow(clippy::too_many_arguments)]
    fn launch_pass(
        &self,
        f: &CudaFunction,
        dst: &mut CudaSlice<FrRaw>,
        src: Option<&CudaSlice<FrRaw>>,
        log_n: u32,
        p: Pass,
        flags: u32,
        tables: &PassTables<'_>,
    ) -> Result<()> {
        let smem = p.shared_bytes();
        f.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem as i32,
        )
        .map_err(self.drv("allowing ntt_pass its shared memory"))?;
        let cfg = LaunchConfig {
            grid_dim: (1u32 << (log_n - p.k - COLS_LOG), 1, 1),
            block_dim: (p.threads(), 1, 1),
            shared_mem_bytes: smem,
        };
        // in place: the source is the destination's own address (its write, recorded after
        // the launch, orders it for other streams)
        let same = src.is_none().then(|| {
            let (ptr, _read) = dst.device_ptr(self.stream());
            ptr
        });
        let null: u64 = 0;
        let mut b = self.stream().launch_builder(f);
        b.arg(dst);
        match (src, &same) {
            (Some(s), _) => b.arg(s),
            (None, Some(ptr)) => b.arg(ptr),
            (None, None) => unreachable!("`same` is set exactly when there is no source"),
        };
        b.arg(&log_n)
            .arg(&p.s)
            .arg(&p.k)
            .arg(&COLS_LOG)
            .arg(&flags)
            .arg(tables.small)
            .arg(tables.root_lo)
            .arg(tables.root_hi)
            .arg(tables.stage);
        match tables.last {
            LastArg::Top(Some(top)) => b.arg(top),
            LastArg::Top(None) => b.arg(&null),
            LastArg::Coset { ct, top, low } => {
                b.arg(ct);
                match top {
                    Some(t) => b.arg(t),
                    None => b.arg(&null),
                };
                b.arg(low)
            }
        };
        // SAFETY: ntt_pass, ntt_pass_s0 (only for s = 0) and ntt_pass_dif(Fr* dst, const Fr*
        // src, u32 logn, u32 s, u32 k, u32 c, u32 flags, const Fr* small[256], const Fr*
        // root_lo[2^14], const Fr* root_hi[2^14], const Fr* stage, const Fr* top), and the
        // _coset forms with last arguments const Fr* ct[29], const Fr* top, const Fr* low[512] instead of top, with
        // s + k <= log_n <= 28, c = COLS_LOG = 0 (one column a block), 2^(log_n-k) blocks and the dynamic shared memory of Pass::shared_bytes, touch src and dst
        // indices < 2^log_n: dst has that length (the
        // caller's data or a `via` buffer of the same length), so has src, a different
        // allocation when given (with FLAG_REV only then, at s = 0: the bit reversal of an
        // index below 2^log_n stays below it) or dst's own address; root indices < 2^14
        // (exponents < 2^28), stage indices 2^(s+i) + low + j' 2^s < 2^(s+k) <= 2^18 only when
        // s + k <= 18 (the plain table has 2^18 entries, a coset table 2^min(log_n, 18)), and
        // with a coset table also stage indices < 2^k <= 2^min(log_n, 9) when s == 0, and ct
        // indices s + i + 1 <= log_n < 29; top (2^26 entries, non-null only when log_n <= 27)
        // at x << (27 - t) < 2^26 or 2^26 minus that, for x < 2^(t-1), t <= log_n; low (coset,
        // FLAG_COSET_LOW: set only with a top table, so log_n >= 19, and one column a block in
        // the pass with s = 0) at the reversal of m <= 9 bits, below 2^9.
        unsafe { b.launch(cfg) }.map_err(self.drv("launching an NTT pass"))?;
        Ok(())
    }

    /// Permutes `data` (2^log_n elements) into bit-reversed order.
    fn bit_reverse(&self, data: &mut DeviceBuffer<Scalar>, log_n: u32) -> Result<()> {
        // tiled bit reversal from 2^8 up (rows of 16 consecutive elements), plain below
        let (name, cfg) = if log_n >= 8 {
            let tiles = LaunchConfig {
                grid_dim: (1u32 << (log_n - 8), 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            ("ntt_bitrev_tiled", tiles)
        } else {
            ("ntt_bitrev", grid(data.len(), 256))
        };
        let bitrev = self.function(&NTT, name)?;
        let mut b = self.stream().launch_builder(&bitrev);
        b.arg(&mut data.inner).arg(&log_n);
        // SAFETY: ntt_bitrev(Fr*, u32) and ntt_bitrev_tiled(Fr*, u32) (2^(log_n-8) blocks of 256)
        // touch indices < 2^log_n = data.len().
        unsafe { b.launch(cfg) }.map_err(self.drv("launching the bit reversal"))?;
        Ok(())
    }

    /// `data[i] *= scale * g^e` (or g^-e when `inverse`) with e = i, or e = bitrev(i) over
    /// `rev` bits when `rev > 0` (data in bit-reversed order; `rev` = log2 of the length).
    fn distribute_powers(
        &self,
        data: &mut DeviceBuffer<Scalar>,
        inverse: bool,
        scale: FrRaw,
        rev: u32,
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
            .arg(&scale)
            .arg(&rev);
        // SAFETY: ntt_distribute(Fr*, u32 n, const Fr* lo[2^14], const Fr* hi[2^14], u32, Fr,
        // u32 rev); n <= 2^28 and a bit reversal over rev = log2(n) bits stays below n, so
        // e >> 14 < 2^14.
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

    /// `a_i = a_i * b_i - c_i * f` in one pass; lengths must match.
    pub fn fr_mul_sub_scaled(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &DeviceBuffer<Scalar>,
        c: &DeviceBuffer<Scalar>,
        f: Scalar,
    ) -> Result<()> {
        let n = ternary_len("fr_mul_sub_scaled", a, b, c)?;
        let f = scalar_raw(&f);
        let k = self.function(&NTT, "fr_mul_sub_scaled")?;
        let mut l = self.stream().launch_builder(&k);
        l.arg(&mut a.inner)
            .arg(&b.inner)
            .arg(&c.inner)
            .arg(&n)
            .arg(&f);
        // SAFETY: (Fr* a, const Fr* b, const Fr* c, u32 n, Fr f) with a, b and c all of
        // length n.
        unsafe { l.launch(grid(n as usize, 256)) }
            .map_err(self.drv("launching fr_mul_sub_scaled"))?;
        Ok(())
    }

    /// `a_i = a_i - c_i * f` in one pass; lengths must match.
    pub fn fr_sub_scaled(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        c: &DeviceBuffer<Scalar>,
        f: Scalar,
    ) -> Result<()> {
        check_len("fr_sub_scaled", a.len(), c.len())?;
        let n = u32::try_from(a.len()).map_err(|_| Error::Unsupported {
            op: "fr_sub_scaled",
            detail: "more than 2^32 elements".into(),
        })?;
        let f = scalar_raw(&f);
        let k = self.function(&NTT, "fr_sub_scaled")?;
        let mut l = self.stream().launch_builder(&k);
        l.arg(&mut a.inner).arg(&c.inner).arg(&n).arg(&f);
        // SAFETY: (Fr* a, const Fr* c, u32 n, Fr f) with a and c both of length n.
        unsafe { l.launch(grid(n as usize, 256)) }.map_err(self.drv("launching fr_sub_scaled"))?;
        Ok(())
    }

    /// `a_i = a_i * b_i - c_i` in one pass (Groth16's A*B - C); lengths must match.
    pub fn fr_mul_sub_assign(
        &self,
        a: &mut DeviceBuffer<Scalar>,
        b: &DeviceBuffer<Scalar>,
        c: &DeviceBuffer<Scalar>,
    ) -> Result<()> {
        let n = ternary_len("fr_mul_sub", a, b, c)?;
        let f = self.function(&NTT, "fr_mul_sub")?;
        let mut l = self.stream().launch_builder(&f);
        l.arg(&mut a.inner).arg(&b.inner).arg(&c.inner).arg(&n);
        // SAFETY: (Fr* a, const Fr* b, const Fr* c, u32 n) with a, b and c all of length n.
        unsafe { l.launch(grid(n as usize, 256)) }.map_err(self.drv("launching fr_mul_sub"))?;
        Ok(())
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
    use crate::twiddles::{coset_stage_table, stage_table, ROOT_BITS};

    #[test]
    fn passes_cover_every_stage() {
        for log_n in 1..=MAX_LOG_SIZE {
            let p = passes(log_n);
            let mut s = 0;
            for q in &p {
                assert_eq!(q.s, s);
                assert!((1..=NTT_MAX_K).contains(&q.k));
                // fits the 227 KiB of shared memory one H200 block may use
                assert!(q.shared_bytes() <= 227 * 1024);
                assert!(q.threads() <= 1024);
                s += q.k;
            }
            assert_eq!(s, log_n);
        }
    }

    /// The sizes and flags ntt.cu is compiled with are the host's: a kernel that took a pass
    /// as tabled on a larger NTT_STAGE_BITS than the table's would read past it.
    #[test]
    fn kernel_source_agrees_on_table_sizes() {
        let src = crate::compile::NTT.sources.concat();
        for (name, value) in [
            ("NTT_MAX_K", NTT_MAX_K.to_string()),
            ("NTT_ROOT_BITS", ROOT_BITS.to_string()),
            ("NTT_STAGE_BITS", STAGE_BITS.to_string()),
            ("NTT_TOP_BITS", TOP_BITS.to_string()),
            ("NTT_REV", format!("{FLAG_REV}u")),
            ("NTT_TOP_INV", format!("{FLAG_TOP_INV}u")),
            ("NTT_COSET_LOW", format!("{FLAG_COSET_LOW}u")),
            ("NTT_LOW_SHIFT", LOW_SHIFT.to_string()),
        ] {
            let line = format!("#define {name} {value}\n");
            assert!(src.contains(&line), "ntt.cu lacks `{}`", line.trim_end());
        }
    }

    /// Where `ntt_pass` reads a twiddle of a pass beyond the stage table from the top table
    /// (ntt.cu): stage t's w_{2^t}^x at x << (27 - t), and its inverse w_{2^t}^-x negated
    /// from 2^26 minus that (x > 0), or entry 0 (x = 0).
    fn top_entry(t: u32, x: u64, inverse: bool) -> (u64, bool) {
        let at = x << (TOP_BITS - t);
        if inverse && at != 0 {
            ((1 << (TOP_BITS - 1)) - at, true)
        } else {
            (at, false)
        }
    }

    /// The top table read the way `ntt_pass` reads it gives the twiddle the pass otherwise
    /// computes, for the last pass of every size that uses the table, both directions, at
    /// each stage's corners and at random columns and butterflies; every index lies in the
    /// table. The table's entries are computed here with `pow_vartime`, not built whole.
    #[test]
    fn top_table_holds_every_topped_twiddle() {
        use rand_chacha::ChaCha8Rng;
        use rand_core::{RngCore, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(27);
        let w27 = omega(TOP_BITS);
        assert_eq!(w27.pow_vartime([1u64 << (TOP_BITS - 1)]), -Scalar::ONE);
        assert!(!uses_top_table(STAGE_BITS) && !uses_top_table(TOP_BITS + 1));
        for log_n in STAGE_BITS + 1..=TOP_BITS {
            assert!(uses_top_table(log_n));
            let p = *passes(log_n).last().expect("passes");
            assert!(
                p.s + p.k > STAGE_BITS,
                "2^{log_n}: the last pass is beyond the stage table"
            );
            for i in 0..p.k {
                let t = p.s + i + 1;
                let mut cases = vec![(0, 0), (1, 0), ((1u64 << p.s) - 1, (1u64 << i) - 1)];
                for _ in 0..4 {
                    cases.push((rng.next_u64() % (1 << p.s), rng.next_u64() % (1 << i)));
                }
                for (low, jp) in cases {
                    let x = low + (jp << p.s);
                    for inverse in [false, true] {
                        let (at, negate) = top_entry(t, x, inverse);
                        assert!(at < 1 << (TOP_BITS - 1), "2^{log_n} stage {t}: index {at}");
                        let entry = w27.pow_vartime([at]);
                        let got = if negate { -entry } else { entry };
                        let w = if inverse { invert(omega(t)) } else { omega(t) };
                        assert_eq!(
                            got,
                            w.pow_vartime([x]),
                            "2^{log_n} stage {t} x {x} inverse {inverse}"
                        );
                    }
                }
            }
        }
        assert_eq!(TOP_TABLE_BYTES, 2 << 30);
    }

    /// The first pass with the bit reversal fused (ntt.cu): block b's column cc is column
    /// rev(b 2^c + cc) of the bit-reversed array, and element j of it sits at natural
    /// position (rev_k(j) << (log_n - k)) | (b 2^c + cc). That is the bit reversal of its
    /// position (column << k) + j, and the blocks together touch every position once.
    #[test]
    fn fused_reversal_reads_each_element_from_its_reversed_place() {
        let rev = |x: u64, bits: u32| {
            if bits == 0 {
                0
            } else {
                x.reverse_bits() >> (64 - bits)
            }
        };
        let c = COLS_LOG;
        for log_n in [10u32, 11, 13, 18, 19, 20] {
            let p = passes(log_n)[0];
            let hb = log_n - p.k;
            let mut seen = vec![false; 1 << log_n];
            for b in 0..1u64 << (log_n - p.k - c) {
                for cc in 0..1u64 << c {
                    let r = (b << c) + cc;
                    let col = rev(r, hb);
                    for j in 0..1u64 << p.k {
                        let natural = (rev(j, p.k) << hb) | r;
                        let place = (col << p.k) + j;
                        assert_eq!(natural, rev(place, log_n), "2^{log_n}");
                        assert!(!std::mem::replace(&mut seen[natural as usize], true));
                    }
                }
            }
            assert!(seen.iter().all(|&x| x), "2^{log_n}");
        }
    }

    /// The stage table read the way `ntt_pass` reads it (column `low`, stage i of a pass
    /// starting after stage s, butterfly j') gives the twiddle the pass otherwise computes:
    /// w_{2^(s+i+1)}^low * w_{2^(i+1)}^j'. Checked at every stage's first and last entries and
    /// at the corners of every (s, i) a tabled pass can have.
    #[test]
    fn stage_table_holds_every_tabled_twiddle() {
        for inverse in [false, true] {
            let root = |t: u32| if inverse { invert(omega(t)) } else { omega(t) };
            let table = stage_table(root(STAGE_BITS));
            assert_eq!(table.len(), 1 << STAGE_BITS);
            assert_eq!(table[0], Scalar::ONE);
            for t in 1..=STAGE_BITS {
                let last = (1u64 << (t - 1)) - 1;
                assert_eq!(table[1 << (t - 1)], Scalar::ONE, "stage {t}, x = 0");
                assert_eq!(
                    table[(1usize << (t - 1)) + last as usize],
                    root(t).pow_vartime([last]),
                    "stage {t}, last entry"
                );
            }
            for s in 1..STAGE_BITS {
                for i in 0..(STAGE_BITS - s).min(NTT_MAX_K) {
                    let lows = [0u64, 1, (1 << s) - 1];
                    let jps = [0u64, 1.min((1 << i) - 1), (1 << i) - 1];
                    for (&low, &jp) in lows
                        .iter()
                        .zip(jps.iter().rev())
                        .chain(lows.iter().zip(jps.iter()))
                    {
                        let want =
                            root(s + i + 1).pow_vartime([low]) * root(i + 1).pow_vartime([jp]);
                        let at = (1u64 << (s + i)) + low + (jp << s);
                        assert_eq!(table[at as usize], want, "s {s}, i {i}, low {low}, j' {jp}");
                    }
                }
            }
        }
    }

    /// The coset transforms with the low factors moved (FLAG_COSET_LOW, ntt.cu): the last m
    /// stages' twiddles plain (no ct[t]), and each column's factor f = gamma^(rev_m(p >>
    /// (L - m))) for bit-reversed position p applied to the DIT's input (the kernel: x f for
    /// the even elements, ct[1] f in stage 1's twiddle for the odd ones, the same thing) or to
    /// the DIF's output. Equal to bellperson's coset transforms, for every L up to 2^10 and
    /// every m up to L - 1.
    #[test]
    fn coset_low_factors_move_to_the_first_pass() {
        use rand_chacha::ChaCha8Rng;
        use rand_core::SeedableRng;
        let mut rng = ChaCha8Rng::seed_from_u64(19);
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let rev = |x: usize, bits: u32| {
            if bits == 0 {
                0
            } else {
                x.reverse_bits() >> (usize::BITS - bits)
            }
        };
        for log_n in 2..=10u32 {
            let n = 1usize << log_n;
            for m in 1..log_n.min(NTT_MAX_K + 1) {
                for inverse in [false, true] {
                    let gamma = if inverse { invert(g) } else { g };
                    let ct = coset_multipliers(gamma, log_n);
                    let w = |t: u32| if inverse { invert(omega(t)) } else { omega(t) };
                    // stage t's twiddle of x: w_{2^t}^x, times ct[t] below the last m stages
                    let tw = |t: u32, x: usize| {
                        let v = w(t).pow_vartime([x as u64]);
                        if t > log_n - m {
                            v
                        } else {
                            v * ct[t as usize]
                        }
                    };
                    let low = powers(gamma, 1 << NTT_MAX_K);
                    let f = |p: usize| low[rev(p >> (log_n - m), m)];
                    let input: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
                    let mut got = input.clone();
                    if !inverse {
                        // DIT on bit-reversed input, the factors on the input
                        bitrev_permute(&mut got);
                        for (p, x) in got.iter_mut().enumerate() {
                            *x *= f(p);
                        }
                        for t in 1..=log_n {
                            let h = 1usize << (t - 1);
                            for base in (0..n).step_by(2 * h) {
                                for x in 0..h {
                                    let v = got[base + x + h] * tw(t, x);
                                    let u = got[base + x];
                                    got[base + x] = u + v;
                                    got[base + x + h] = u - v;
                                }
                            }
                        }
                        let mut want = input.clone();
                        crate::reference::ntt(&mut want, NttKind::CosetForward);
                        assert_eq!(got, want, "DIT 2^{log_n}, m = {m}");
                    } else {
                        // DIF on natural input, the factors on the (bit-reversed) output
                        for t in (1..=log_n).rev() {
                            let h = 1usize << (t - 1);
                            for base in (0..n).step_by(2 * h) {
                                for x in 0..h {
                                    let (u, v) = (got[base + x], got[base + x + h]);
                                    got[base + x] = u + v;
                                    got[base + x + h] = (u - v) * tw(t, x);
                                }
                            }
                        }
                        for (p, x) in got.iter_mut().enumerate() {
                            *x *= f(p);
                        }
                        bitrev_permute(&mut got);
                        let mut want = input.clone();
                        crate::reference::ntt(&mut want, NttKind::CosetInverse);
                        let scale = Scalar::from(n as u64);
                        assert!(
                            got.iter().zip(&want).all(|(x, y)| *x == *y * scale),
                            "DIF 2^{log_n}, m = {m}"
                        );
                    }
                }
            }
        }
    }

    fn bitrev_permute(a: &mut [Scalar]) {
        let bits = a.len().trailing_zeros();
        for i in 0..a.len() {
            let j = i.reverse_bits() >> (usize::BITS - bits);
            if i < j {
                a.swap(i, j);
            }
        }
    }

    /// Stage t's twiddle w_{2^t}^x * ct[t] from the coset stage table (t <= STAGE_BITS).
    fn coset_twiddle(table: &[Scalar], t: u32, x: usize) -> Scalar {
        table[(1 << (t - 1)) + x]
    }

    /// bellperson's H on the host (ifft, coset_fft, a b - c, divide by Z, icoset_fft) of
    /// `abc` = [a, b, c].
    fn bellperson_h(abc: &[Vec<Scalar>]) -> Vec<Scalar> {
        let n = abc[0].len();
        let mut t = abc.to_vec();
        for v in &mut t {
            crate::reference::ntt(v, NttKind::Inverse);
            crate::reference::ntt(v, NttKind::CosetForward);
        }
        let z = coset_z_inverse(n.trailing_zeros());
        let mut h: Vec<Scalar> = (0..n).map(|i| (t[0][i] * t[1][i] - t[2][i]) * z).collect();
        crate::reference::ntt(&mut h, NttKind::CosetInverse);
        h
    }

    /// Host model of the DIT network with coset twiddles (ntt.cu), input in bit-reversed
    /// order; the table's length bounds the size (every twiddle from the stage table).
    fn dit_model(a: &mut [Scalar], table: &[Scalar]) {
        let n = a.len();
        for t in 1..=n.trailing_zeros() {
            let h = 1usize << (t - 1);
            for base in (0..n).step_by(2 * h) {
                for x in 0..h {
                    let v = a[base + x + h] * coset_twiddle(table, t, x);
                    let u = a[base + x];
                    a[base + x] = u + v;
                    a[base + x + h] = u - v;
                }
            }
        }
    }

    /// Host model of the DIF network (the transposed one), output in bit-reversed order.
    fn dif_model(a: &mut [Scalar], table: &[Scalar]) {
        let n = a.len();
        for t in (1..=n.trailing_zeros()).rev() {
            let h = 1usize << (t - 1);
            for base in (0..n).step_by(2 * h) {
                for x in 0..h {
                    let (u, v) = (a[base + x], a[base + x + h]);
                    a[base + x] = u + v;
                    a[base + x + h] = (u - v) * coset_twiddle(table, t, x);
                }
            }
        }
    }

    /// The six-transform H of `h_negacyclic` on the host models, with its order of steps and
    /// its scalings (a and b to the zeta coset, their product, the inverse zeta-coset DIF,
    /// the plain unscaled inverse of c, a - m^2 c) times its kappa, equals bellperson's H when
    /// c = a b element-wise; with one c_i changed it does not (the recipe relies on it).
    /// Sizes 2^1 .. 2^10, with zeros and r - 1 among the values.
    #[test]
    fn negacyclic_h_equals_bellpersons_h_when_c_is_a_times_b() {
        use rand_chacha::ChaCha8Rng;
        use rand_core::SeedableRng;
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for log_n in 1..=10u32 {
            let n = 1usize << log_n;
            let m = Scalar::from(n as u64);
            let zeta = omega(log_n + 1);
            assert_eq!(zeta.pow_vartime([n as u64]), -Scalar::ONE);
            let fwd_w = omega(STAGE_BITS);
            let fwd_t = coset_stage_table(fwd_w, &coset_multipliers(zeta, log_n), log_n);
            let inv_t = coset_stage_table(
                invert(fwd_w),
                &coset_multipliers(invert(zeta), log_n),
                log_n,
            );
            let plain_inv =
                coset_stage_table(invert(fwd_w), &coset_multipliers(Scalar::ONE, log_n), log_n);
            let mut a: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let mut b: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            a[0] = Scalar::ZERO;
            b[n - 1] = -Scalar::ONE;
            let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
            let recipe = |c: &[Scalar]| {
                let (mut ta, mut tb, mut tc) = (a.clone(), b.clone(), c.to_vec());
                for v in [&mut ta, &mut tb] {
                    dif_model(v, &plain_inv);
                    dit_model(v, &fwd_t);
                }
                let mut p: Vec<Scalar> = ta.iter().zip(&tb).map(|(x, y)| x * y).collect();
                dif_model(&mut p, &inv_t);
                bitrev_permute(&mut p);
                dif_model(&mut tc, &plain_inv);
                bitrev_permute(&mut tc);
                let kappa = -invert(Scalar::from(2u64) * m * m * m);
                p.iter()
                    .zip(&tc)
                    .map(|(x, y)| (*x - *y * m * m) * kappa)
                    .collect::<Vec<Scalar>>()
            };
            let hw = bellperson_h(&[a.clone(), b.clone(), c.clone()]);
            assert_eq!(hw[n - 1], Scalar::ZERO, "h has m - 1 coefficients");
            assert_eq!(recipe(&c), hw, "six-transform H 2^{log_n}");
            let mut bad = c.clone();
            bad[n / 2] += Scalar::ONE;
            assert_ne!(recipe(&bad), hw, "unsatisfied 2^{log_n}");
        }
    }

    /// Host models of the two networks with coset twiddles (ntt.cu): DIT on bit-reversed
    /// input and DIF on natural input, every stage t's twiddles times ct[t], equal the
    /// transforms with the coset factors applied apart (bellperson's coset_fft, and
    /// icoset_fft without its 1/m); and the whole H recipe of `h_polynomial_scaled` times
    /// its kappa equals bellperson's H. Sizes 2^1 .. 2^10, so every twiddle comes from the
    /// coset stage table; the last pass's multiplied twiddles (stages beyond 18) are checked
    /// by the device tests.
    #[test]
    fn coset_twiddles_absorb_the_coset_factors() {
        use rand_chacha::ChaCha8Rng;
        use rand_core::SeedableRng;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        for log_n in 1..=10u32 {
            let n = 1usize << log_n;
            let fwd_w = omega(STAGE_BITS);
            let inv_w = invert(fwd_w);
            let fwd_ct = coset_multipliers(g, log_n);
            let inv_ct = coset_multipliers(invert(g), log_n);
            let fwd_t = coset_stage_table(fwd_w, &fwd_ct, log_n);
            let inv_t = coset_stage_table(inv_w, &inv_ct, log_n);
            assert_eq!(fwd_t.len(), n.min(1 << STAGE_BITS));
            let dit = |a: &mut [Scalar], table: &[Scalar]| dit_model(a, table);
            let dif = |a: &mut [Scalar], table: &[Scalar]| dif_model(a, table);
            let input: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let mut got = input.clone();
            bitrev_permute(&mut got);
            dit(&mut got, &fwd_t);
            let mut want = input.clone();
            crate::reference::ntt(&mut want, NttKind::CosetForward);
            assert_eq!(got, want, "coset DIT 2^{log_n}");
            let mut got = input.clone();
            dif(&mut got, &inv_t);
            bitrev_permute(&mut got);
            let mut want = input.clone();
            crate::reference::ntt(&mut want, NttKind::CosetInverse);
            let m = Scalar::from(n as u64);
            assert!(
                got.iter().zip(&want).all(|(x, y)| *x == *y * m),
                "coset DIF 2^{log_n}"
            );
            // the H recipe, against bellperson's steps
            let abc: Vec<Vec<Scalar>> = (0..3)
                .map(|_| (0..n).map(|_| Scalar::random(&mut rng)).collect())
                .collect();
            let mut t = abc.clone();
            let plain_inverse = |v: &mut Vec<Scalar>| {
                // unscaled inverse, bit-reversed out (the DIF with plain twiddles)
                crate::reference::ntt(v, NttKind::Inverse);
                for x in v.iter_mut() {
                    *x *= m;
                }
                bitrev_permute(v);
            };
            for v in &mut t {
                plain_inverse(v);
                dit(v, &fwd_t);
            }
            let mut h: Vec<Scalar> = (0..n).map(|i| t[0][i] * t[1][i] - t[2][i] * m).collect();
            dif(&mut h, &inv_t);
            bitrev_permute(&mut h);
            let kappa = coset_z_inverse(log_n) * invert(m * m * m);
            let hw = bellperson_h(&abc);
            assert!(
                h.iter().zip(&hw).all(|(x, y)| *x * kappa == *y),
                "H recipe 2^{log_n}"
            );
        }
        // the multipliers: ct[log_n] = gamma, each one below the square of the one above
        let ct = coset_multipliers(g, 5);
        assert_eq!(ct[5], g);
        assert_eq!(ct[1], g.pow_vartime([16u64]));
        assert_eq!(ct[0], Scalar::ONE);
        assert_eq!(ct[6], Scalar::ONE);
    }
}
