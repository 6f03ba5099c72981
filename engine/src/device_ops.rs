//! The device operations of a Groth16 prover behind one trait, [`DeviceOps`]: the H
//! polynomial's coefficients from a, b and c (the NTT work), and each of the five
//! multi-scalar multiplications (H, L, A, B in G1, B in G2). [`prove_partition`] proves a
//! partition with any implementation, and [`OpsBackend`] makes one a [`Backend`].
//!
//! Implementations: [`crate::cpu::CpuOps`] (the CPU backend's NTT and MSMs; the CPU backend
//! proves through it), [`crate::cuda::ops::CudaOps`] (the kernels on one GPU, one operation at
//! a time) and [`crate::dual::Dual`], which runs two implementations on every operation and
//! fails on the first difference.
//!
//! Every operation returns exact values: the coefficients themselves (not up to a constant
//! factor, as the CUDA backend's pipelined H is) and the group elements themselves, so two
//! implementations can be compared value for value after each operation.

use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use cuzk_pce::{Assignment, Density};
use tracing::info_span;

use crate::error::Result;
use crate::param_file::Srs;
use crate::prover::{check_shape, Backend, Blinding, MsmResults};

/// One operation of [`DeviceOps`], in the order [`prove_partition`] runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// [`DeviceOps::h_coefficients`].
    H,
    /// [`DeviceOps::msm_h`].
    MsmH,
    /// [`DeviceOps::msm_l`].
    MsmL,
    /// [`DeviceOps::msm_a`].
    MsmA,
    /// [`DeviceOps::msm_b_g1`].
    MsmBG1,
    /// [`DeviceOps::msm_b_g2`].
    MsmBG2,
}

impl Op {
    /// Every operation, in the order [`prove_partition`] runs them.
    pub const ALL: [Op; 6] = [Op::H, Op::MsmH, Op::MsmL, Op::MsmA, Op::MsmBG1, Op::MsmBG2];

    /// The operation's name in errors and logs.
    pub fn name(self) -> &'static str {
        match self {
            Op::H => "H coefficients (NTT)",
            Op::MsmH => "H MSM",
            Op::MsmL => "L MSM",
            Op::MsmA => "A MSM",
            Op::MsmBG1 => "B MSM in G1",
            Op::MsmBG2 => "B MSM in G2",
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A partition's scalars for the A and B queries, borrowed from its [`Assignment`].
///
/// A pairs every input, then the aux values whose `a_aux_density` bit is set, with the A
/// query; B pairs the inputs whose `b_input_density` bit is set, then the aux values whose
/// `b_aux_density` bit is set, with the B queries (G1 and G2). A bit past a density's end is
/// unset.
#[derive(Clone, Copy, Debug)]
pub struct QueryScalars<'a> {
    /// Input values (the first is the constant one).
    pub input: &'a [Scalar],
    /// Aux values.
    pub aux: &'a [Scalar],
    /// Which aux values the A query takes.
    pub a_aux_density: &'a Density,
    /// Which inputs the B queries take.
    pub b_input_density: &'a Density,
    /// Which aux values the B queries take.
    pub b_aux_density: &'a Density,
}

/// The operations a device performs to prove a Groth16 partition. The rest of a proof
/// (shape checks, the witness-independent terms, the final combination with r and s) is the
/// same for every device and lives in [`prove_partition`].
///
/// Contract, for every implementation:
/// - callers have checked the assignment's shape against `srs` ([`check_shape`]) before the
///   first operation of a partition; an implementation still returns an error, never a
///   wrong value or a panic, when lengths do not match;
/// - results are exact and do not depend on the implementation: the same inputs give the
///   same coefficients and the same group elements on every device;
/// - `partition` is only used in errors and logs.
pub trait DeviceOps: Send {
    /// A stable name for logs and errors ("cpu", a GPU's PCI id, ...).
    fn name(&self) -> String;

    /// The coefficients of `h = (A*B - C) / Z` from the evaluations `a`, `b`, `c` of the
    /// A, B and C polynomials on the domain (one per constraint, zero padded to the domain's
    /// `m` points): the first `m - 1`, the H query's scalars (the last is always zero).
    fn h_coefficients(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        partition: usize,
    ) -> Result<Vec<Scalar>>;

    /// `sum h_i * H_i` over `srs`' H query; `coefficients` has one scalar per point.
    fn msm_h(
        &mut self,
        srs: &Srs,
        coefficients: &[Scalar],
        partition: usize,
    ) -> Result<G1Projective>;

    /// `sum aux_i * L_i` over `srs`' L query; one aux value per point.
    fn msm_l(&mut self, srs: &Srs, aux: &[Scalar], partition: usize) -> Result<G1Projective>;

    /// The A query's MSM (see [`QueryScalars`] for which scalars pair with which points).
    fn msm_a(&mut self, srs: &Srs, w: &QueryScalars<'_>, partition: usize) -> Result<G1Projective>;

    /// The B query's MSM in G1 (see [`QueryScalars`]).
    fn msm_b_g1(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        partition: usize,
    ) -> Result<G1Projective>;

    /// The B query's MSM in G2 (see [`QueryScalars`]).
    fn msm_b_g2(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        partition: usize,
    ) -> Result<G2Projective>;
}

/// Proves one partition with `ops`: the shape check, the witness-independent terms, then
/// H's coefficients and the five MSMs one after the other (each in its own span, named as
/// the CUDA backend's phases), and the proof assembled from them. An error from any
/// operation ends the partition there: no later operation runs and no proof is returned.
///
/// With the same parameters, assignment, r and s every correct implementation gives the
/// proof bellperson 0.27's `create_proof` gives, byte for byte.
pub fn prove_partition<O: DeviceOps + ?Sized>(
    ops: &mut O,
    srs: &Srs,
    asg: Assignment,
    r: Scalar,
    s: Scalar,
    partition: usize,
) -> Result<Proof<Bls12>> {
    check_shape(&srs.params, &asg, &srs.path.display().to_string())?;
    let blinding = Blinding::new(&srs.params, r, s)?;
    let Assignment {
        input,
        aux,
        a,
        b,
        c,
        a_aux_density,
        b_input_density,
        b_aux_density,
    } = asg;
    let coefficients =
        info_span!("ntt", partition).in_scope(|| ops.h_coefficients(a, b, c, partition))?;
    let h = info_span!("msm_h", partition).in_scope(|| ops.msm_h(srs, &coefficients, partition))?;
    drop(coefficients); // m field elements: free before the other MSMs
    let l = info_span!("msm_l", partition).in_scope(|| ops.msm_l(srs, &aux, partition))?;
    let w = QueryScalars {
        input: &input,
        aux: &aux,
        a_aux_density: &a_aux_density,
        b_input_density: &b_input_density,
        b_aux_density: &b_aux_density,
    };
    let a = info_span!("msm_a", partition).in_scope(|| ops.msm_a(srs, &w, partition))?;
    let b_g1 = info_span!("msm_b_g1", partition).in_scope(|| ops.msm_b_g1(srs, &w, partition))?;
    let b_g2 = info_span!("msm_b_g2", partition).in_scope(|| ops.msm_b_g2(srs, &w, partition))?;
    Ok(blinding.assemble(&MsmResults {
        h,
        l,
        a,
        b_g1,
        b_g2,
    }))
}

/// A [`Backend`] that proves through a [`DeviceOps`], one operation after the other with
/// [`prove_partition`]: no pipelining, no uploads ahead (a debug and test path; the CPU
/// and CUDA backends are the production ones). Its proofs are those of any other backend.
#[derive(Clone, Debug, Default)]
pub struct OpsBackend<O> {
    ops: O,
}

impl<O: DeviceOps> OpsBackend<O> {
    /// A backend proving with `ops`.
    pub fn new(ops: O) -> Self {
        OpsBackend { ops }
    }

    /// The operations it proves with.
    pub fn ops(&self) -> &O {
        &self.ops
    }

    /// The operations it proves with, to change their settings.
    pub fn ops_mut(&mut self) -> &mut O {
        &mut self.ops
    }
}

impl<O: DeviceOps> Backend for OpsBackend<O> {
    fn name(&self) -> String {
        self.ops.name()
    }

    fn prove(
        &mut self,
        srs: &Srs,
        assignment: Assignment,
        r: Scalar,
        s: Scalar,
        partition: usize,
    ) -> Result<Proof<Bls12>> {
        prove_partition(&mut self.ops, srs, assignment, r, s, partition)
    }
}
