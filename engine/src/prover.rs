//! Groth16 from assignments: the backend seam, shape checks against the parameters, and the
//! final combination of the multi-scalar multiplications with r and s.
//!
//! With the same parameters, assignment, r and s every backend must produce the proof
//! bellperson 0.27's `create_proof` produces, byte for byte.

use bellperson::groth16::{Parameters, Proof};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use cuzk_pce::Assignment;
use group::{prime::PrimeCurveAffine, Curve};

use crate::error::{Error, Result};
use crate::param_file::Srs;

/// A device that proves synthesised partitions. The CPU backend is the reference; GPU
/// backends implement the same contract.
///
/// `prove` takes `&mut self`: a backend with device state (resident parameters, buffers) is
/// owned by one prover at a time (the device actor that holds the device), so it needs no
/// lock; stateless backends such as [`crate::CpuBackend`] are used as `&mut CpuBackend`.
pub trait Backend: Send {
    /// A stable name for logs and errors ("cpu", or a GPU's PCI id).
    fn name(&self) -> String;

    /// Proves one partition. `partition` is only used in error messages.
    fn prove(
        &mut self,
        srs: &Srs,
        assignment: Assignment,
        r: Scalar,
        s: Scalar,
        partition: usize,
    ) -> Result<Proof<Bls12>>;

    /// Proves one partition as [`Backend::prove`] does, and may start moving `next` (the
    /// partition its caller will ask for after this one) to the device while this one's
    /// kernels run. `token` names this partition; when it equals the `token` of the `next`
    /// given at the previous call, what was moved then is used now. Results are the same as
    /// [`Backend::prove`]'s whatever is given; a backend without a device ignores `next`.
    fn prove_pipelined(
        &mut self,
        srs: &Srs,
        assignment: Assignment,
        (r, s): (Scalar, Scalar),
        partition: usize,
        token: u64,
        next: Option<Upcoming<'_>>,
    ) -> Result<Proof<Bls12>> {
        let _ = (token, next);
        self.prove(srs, assignment, r, s, partition)
    }

    /// Makes `srs` ready for this backend's next partitions of its circuit ahead of them
    /// (a GPU uploads the parameters it keeps resident), when that costs no other circuit
    /// its place: never evicts. Returns whether `srs` is ready now. A backend without
    /// resident state has nothing to do (`Ok(false)`). Proofs do not depend on it.
    fn preload(&mut self, srs: &Srs) -> Result<bool> {
        let _ = srs;
        Ok(false)
    }

    /// How many partitions of `srs`'s circuit this backend proves best together, as one
    /// [`Backend::prove_batch`]: more than 1 where a batch shares work (a device streaming
    /// the circuit's parameters shares each transfer among the batch), 1 by default.
    fn batch_limit(&self, srs: &Srs) -> usize {
        let _ = srs;
        1
    }

    /// Proves several partitions of `srs`'s circuit, as [`Backend::prove`] would one by one:
    /// the proofs in the order given, each the bytes its own [`Backend::prove`] gives. A
    /// backend that streams its parameters shares each transfer among the batch's
    /// partitions; others prove them in turn (the default). An error fails the whole batch.
    fn prove_batch(&mut self, srs: &Srs, batch: Vec<BatchItem>) -> Result<Vec<Proof<Bls12>>> {
        batch
            .into_iter()
            .map(|it| self.prove(srs, it.assignment, it.r, it.s, it.partition))
            .collect()
    }

    /// How the last partition reached its parameters and what device memory it took, for
    /// status reports; `None` where that does not apply (the CPU).
    fn memory_report(&self) -> Option<MemoryReport> {
        None
    }
}

/// One partition of a batch ([`Backend::prove_batch`]).
pub struct BatchItem {
    /// Its assignment.
    pub assignment: Assignment,
    /// The proof's randomness r.
    pub r: Scalar,
    /// The proof's randomness s.
    pub s: Scalar,
    /// Its index, for error messages.
    pub partition: usize,
}

/// A device backend's account of its parameters and memory after a partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryReport {
    /// "resident" or "streamed": how the last partition reached its parameters.
    pub residency: &'static str,
    /// Bytes of parameters streamed from host memory to the device since it was opened.
    pub bytes_streamed: u64,
    /// The most device memory the backend's buffers held at once since it was opened, as
    /// the driver measured it (`None` without memory pools).
    pub peak_bytes: Option<u64>,
    /// Device bytes the backend's leases may use.
    pub usable_bytes: u64,
}

/// A partition that will be proved after the current one on the same backend (see
/// [`Backend::prove_pipelined`]): the backend may copy its assignment ahead of time.
#[derive(Clone, Copy)]
pub struct Upcoming<'a> {
    /// The token the caller will pass when it proves this partition.
    pub token: u64,
    /// Its parameters.
    pub srs: &'a Srs,
    /// Its assignment (read, not consumed).
    pub assignment: &'a Assignment,
}

/// The group elements a backend computes before randomisation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsmResults {
    /// `sum h_i * H_i`.
    pub h: G1Projective,
    /// `sum aux_i * L_i`.
    pub l: G1Projective,
    /// A query over inputs and (dense) aux.
    pub a: G1Projective,
    /// B query in G1.
    pub b_g1: G1Projective,
    /// B query in G2.
    pub b_g2: G2Projective,
}

/// Checks that the assignment has the shape the parameters were generated for, so that a
/// parameter file of another circuit is refused instead of producing a bad proof.
pub fn check_shape(params: &Parameters<Bls12>, asg: &Assignment, srs_name: &str) -> Result<()> {
    let m = crate::domain::Domain::for_size(asg.num_constraints())?.m;
    let checks = [
        ("inputs (vk.ic)", params.vk.ic.len(), asg.input.len()),
        ("H query", params.h.len(), m - 1),
        ("L query", params.l.len(), asg.aux.len()),
        (
            "A query",
            params.a.len(),
            asg.input.len() + asg.a_aux_density.count(),
        ),
        (
            "B query (G1)",
            params.b_g1.len(),
            asg.b_input_density.count() + asg.b_aux_density.count(),
        ),
        (
            "B query (G2)",
            params.b_g2.len(),
            asg.b_input_density.count() + asg.b_aux_density.count(),
        ),
    ];
    for (what, have, want) in checks {
        if have != want {
            return Err(Error::ParamsInvalid {
                path: srs_name.into(),
                reason: format!(
                    "{what} has {have} points but the circuit needs {want}: these parameters are for another circuit"
                ),
            });
        }
    }
    Ok(())
}

/// The terms of a proof that depend only on the verifying key, r and s (not on the
/// witness): computed while a device runs a partition's kernels, so that only two scalar
/// multiplications are left for [`Blinding::assemble`] once the MSM results are in.
#[derive(Clone, Debug)]
pub struct Blinding {
    r: Scalar,
    s: Scalar,
    /// `alpha + r*delta` (G1)
    a: G1Projective,
    /// `beta + s*delta` (G2)
    b: G2Projective,
    /// `r*s*delta + s*alpha + r*beta` (G1)
    c: G1Projective,
}

impl Blinding {
    /// The witness-independent terms for `params`' verifying key with `r` and `s`.
    /// Errors when delta is the identity (a subverted CRS).
    pub fn new(params: &Parameters<Bls12>, r: Scalar, s: Scalar) -> Result<Self> {
        let vk = &params.vk;
        if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
            return Err(Error::ParamsInvalid {
                path: "verifying key".into(),
                reason: "delta is the identity (subversion-CRS attack?)".into(),
            });
        }
        let delta_g1 = vk.delta_g1.to_curve();
        Ok(Blinding {
            r,
            s,
            a: delta_g1 * r + vk.alpha_g1,
            b: vk.delta_g2.to_curve() * s + vk.beta_g2,
            c: delta_g1 * (r * s) + vk.alpha_g1.to_curve() * s + vk.beta_g1.to_curve() * r,
        })
    }

    /// The proof: these terms combined with the MSM results, as [`assemble`] does.
    pub fn assemble(&self, msm: &MsmResults) -> Proof<Bls12> {
        let g_a = self.a + msm.a;
        let g_b = self.b + msm.b_g2;
        let g_c = msm.a * self.s + msm.b_g1 * self.r + self.c + msm.h + msm.l;
        Proof {
            a: g_a.to_affine(),
            b: g_b.to_affine(),
            c: g_c.to_affine(),
        }
    }
}

/// Combines the MSM results with the verifying key, r and s, exactly as bellperson does:
/// `A = alpha + a + r*delta`, `B = beta + b + s*delta`,
/// `C = s*a + r*b_g1 + r*s*delta + s*alpha + r*beta + h + l`.
pub fn assemble(
    params: &Parameters<Bls12>,
    msm: &MsmResults,
    r: Scalar,
    s: Scalar,
) -> Result<Proof<Bls12>> {
    Blinding::new(params, r, s).map(|b| b.assemble(msm))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use ff::Field;
    use group::Group;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    /// x * x = y, one input: the smallest circuit with parameters.
    struct Square;
    impl Circuit<Scalar> for Square {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> std::result::Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
            let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
            cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }

    fn params(rng: &mut ChaCha8Rng) -> Parameters<Bls12> {
        bellperson::groth16::generate_random_parameters::<Bls12, _, _>(Square, rng)
            .expect("parameters for a one-constraint circuit")
    }

    #[test]
    fn blinding_terms_then_msm_results_give_bellpersons_formula() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let p = params(&mut rng);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let msm = MsmResults {
            h: G1Projective::random(&mut rng),
            l: G1Projective::random(&mut rng),
            a: G1Projective::random(&mut rng),
            b_g1: G1Projective::random(&mut rng),
            b_g2: G2Projective::random(&mut rng),
        };
        let vk = &p.vk;
        let d1 = vk.delta_g1.to_curve();
        let want_a = d1 * r + vk.alpha_g1 + msm.a;
        let want_b = vk.delta_g2.to_curve() * s + vk.beta_g2 + msm.b_g2;
        let want_c = msm.a * s
            + msm.b_g1 * r
            + d1 * (r * s)
            + vk.alpha_g1.to_curve() * s
            + vk.beta_g1.to_curve() * r
            + msm.h
            + msm.l;
        let proof = assemble(&p, &msm, r, s).expect("valid parameters");
        assert_eq!(proof.a, want_a.to_affine());
        assert_eq!(proof.b, want_b.to_affine());
        assert_eq!(proof.c, want_c.to_affine());
        // r and s are not interchangeable: a swapped pair gives another proof
        let swapped = assemble(&p, &msm, s, r).expect("valid parameters");
        assert_ne!(swapped.c, proof.c);
    }

    #[test]
    fn an_identity_delta_is_refused() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut p = params(&mut rng);
        p.vk.delta_g1 = blstrs::G1Affine::identity();
        let err = Blinding::new(&p, Scalar::ONE, Scalar::ONE).expect_err("subverted CRS");
        assert!(err.to_string().contains("delta is the identity"), "{err}");
    }
}
