//! The `dual` backend on the CPU: the device-operation seam with the CPU's operations on
//! both sides proves real partitions byte for byte as the CPU backend does; a wrong result
//! in one operation (an H coefficient changed, an MSM moved by the generator) stops the
//! partition at that operation with an error naming it, and no proof comes back; without a
//! CUDA device, the dual backend and a dual engine are clear errors. Device runs: the
//! `dual` tests of `gpu_proofs` and `gpu_engine`.

use crate::support;

use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk::device_ops::{DeviceOps, Op, QueryScalars};
use cuzk::{
    DeviceChoice, Dual, DualBackend, Engine, EngineConfig, Error, OpsBackend, ProofKind, Srs,
};
use ff::Field;
use group::Group;

/// The CPU's operations with one made wrong: `op`'s result changed (coefficient 3 of H, or
/// the point plus the generator). Records the operations it is asked for.
struct Wrong {
    op: Op,
    calls: Vec<Op>,
}

impl Wrong {
    fn new(op: Op) -> Self {
        Wrong {
            op,
            calls: Vec::new(),
        }
    }

    fn g1(&mut self, op: Op, p: cuzk::Result<G1Projective>) -> cuzk::Result<G1Projective> {
        self.calls.push(op);
        p.map(|p| {
            if op == self.op {
                p + G1Projective::generator()
            } else {
                p
            }
        })
    }
}

impl DeviceOps for Wrong {
    fn name(&self) -> String {
        format!("wrong {}", self.op)
    }

    fn h_coefficients(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        partition: usize,
    ) -> cuzk::Result<Vec<Scalar>> {
        self.calls.push(Op::H);
        let mut h = cuzk::cpu::CpuOps.h_coefficients(a, b, c, partition)?;
        if self.op == Op::H {
            h[3] += Scalar::ONE;
        }
        Ok(h)
    }

    fn msm_h(&mut self, srs: &Srs, h: &[Scalar], p: usize) -> cuzk::Result<G1Projective> {
        let out = cuzk::cpu::CpuOps.msm_h(srs, h, p);
        self.g1(Op::MsmH, out)
    }

    fn msm_l(&mut self, srs: &Srs, aux: &[Scalar], p: usize) -> cuzk::Result<G1Projective> {
        let out = cuzk::cpu::CpuOps.msm_l(srs, aux, p);
        self.g1(Op::MsmL, out)
    }

    fn msm_a(&mut self, srs: &Srs, w: &QueryScalars<'_>, p: usize) -> cuzk::Result<G1Projective> {
        let out = cuzk::cpu::CpuOps.msm_a(srs, w, p);
        self.g1(Op::MsmA, out)
    }

    fn msm_b_g1(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        p: usize,
    ) -> cuzk::Result<G1Projective> {
        let out = cuzk::cpu::CpuOps.msm_b_g1(srs, w, p);
        self.g1(Op::MsmBG1, out)
    }

    fn msm_b_g2(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        p: usize,
    ) -> cuzk::Result<G2Projective> {
        self.calls.push(Op::MsmBG2);
        let p = cuzk::cpu::CpuOps.msm_b_g2(srs, w, p)?;
        Ok(if self.op == Op::MsmBG2 {
            p + G2Projective::generator()
        } else {
            p
        })
    }
}

/// Every partition of a real 2 KiB request (WindowPoSt, the smallest circuit: the seam does
/// not depend on the kind; the device suite runs every kind through it) through the dual
/// path with the CPU's operations on both sides: the CPU backend's bytes, each partition
/// verified.
#[test]
fn dual_cpu_against_cpu_proves_real_partitions_as_the_cpu_backend() {
    let _cores = support::cores_shared();
    let kind = ProofKind::WindowPost;
    let (r, s) = support::fixed_rs();
    let mut dual = OpsBackend::new(Dual::new(cuzk::cpu::CpuOps, cuzk::cpu::CpuOps));
    let store = support::store_with(kind);
    let request = support::inputs().get(kind);
    // each partition's proof is verified by prove_on_backend
    let ours = support::prove_on_backend(&store, &mut dual, request, r, s).expect("dual");
    assert_eq!(
        hex::encode(&ours.bytes),
        hex::encode(support::cpu_reference(kind)),
        "{kind}: dual(cpu, cpu) and the CPU backend differ"
    );
}

/// On a real WindowPoSt partition, one H coefficient changed, then the L MSM moved by the
/// generator: each time the error names the operation and the partition, no later
/// operation ran, and no proof came back.
#[test]
fn dual_with_an_injected_difference_fails_loudly_and_returns_no_proof() {
    let _cores = support::cores_shared();
    let kind = ProofKind::WindowPost;
    let store = support::store_with(kind);
    let request = support::inputs().get(kind);
    let (r, s) = (Scalar::from(3u64), Scalar::from(4u64));
    for (wrong, ran) in [(Op::H, 1), (Op::MsmL, 3)] {
        let mut dual = OpsBackend::new(Dual::new(cuzk::cpu::CpuOps, Wrong::new(wrong)));
        let err = match support::prove_on_backend(&store, &mut dual, request, r, s) {
            Ok(_) => panic!("{wrong} differs, yet a proof was returned"),
            Err(e) => e,
        };
        let msg = err.to_string();
        assert!(
            matches!(&err, Error::Mismatch { op, partition: 0, .. } if *op == wrong.name()),
            "{msg}"
        );
        assert!(
            msg.starts_with(&format!(
                "partition 0: {wrong} differs between cpu and wrong"
            )),
            "{msg}"
        );
        assert!(msg.ends_with("no proof was returned"), "{msg}");
        if wrong == Op::H {
            assert!(msg.contains("coefficient 3 of "), "{msg}");
        }
        assert_eq!(dual.ops().second().calls, Op::ALL[..ran], "{msg}");
    }
}

/// Without a CUDA device the dual backend does not open, and an engine asked for it does
/// not start: each a one-line error saying why, never a panic.
#[test]
fn dual_without_a_device_is_a_clear_error() {
    if cuzk::kernels::driver_present() {
        return; // a GPU machine: the device tests prove through it
    }
    let err = DualBackend::open(0).expect_err("no device to pair with the CPU");
    let msg = err.to_string();
    assert!(msg.contains("cuda:0") && msg.contains("driver"), "{msg}");
    let mut cfg = EngineConfig::new(support::params_dir());
    cfg.devices = DeviceChoice::Dual(Vec::new());
    let err = match Engine::start(cfg) {
        Ok(_) => panic!("a dual engine started without a CUDA device"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("dual backend") && err.contains("no CUDA device"),
        "{err}"
    );
}
