//! The `dual` backend: every device operation run by two implementations, compared before
//! the next one starts. [`Dual`] pairs any two [`DeviceOps`]; [`DualBackend`] pairs the CPU
//! (the reference) with one GPU, as `--backend dual` and the daemon's
//! `devices.backend = "dual"` do, to find the first operation where a device goes wrong.
//!
//! A difference is an [`Error::Mismatch`] naming the operation, the partition, both
//! implementations and what differed (the first differing H coefficient, or both points);
//! the partition stops there, so no later operation runs and no proof is returned.

use blstrs::{G1Projective, G2Projective, Scalar};
use group::Curve;
use tracing::info_span;

use crate::cpu::CpuOps;
use crate::cuda::ops::CudaOps;
use crate::device_ops::{DeviceOps, Op, OpsBackend, QueryScalars};
use crate::error::{Error, Result};
use crate::param_file::Srs;

/// Two implementations of the device operations run one after the other on every
/// operation. Returns `first`'s result when both agree, an [`Error::Mismatch`] when they do
/// not, and the first error either returns (`first` runs first; after its error `second`
/// does not run). Each operation costs both implementations' time: a debug and test path.
#[derive(Clone, Debug, Default)]
pub struct Dual<A, B> {
    first: A,
    second: B,
}

impl<A: DeviceOps, B: DeviceOps> Dual<A, B> {
    /// `first` is the reference, `second` is checked against it.
    pub fn new(first: A, second: B) -> Self {
        Dual { first, second }
    }

    /// The reference implementation.
    pub fn first(&self) -> &A {
        &self.first
    }

    /// The implementation checked against the reference.
    pub fn second(&self) -> &B {
        &self.second
    }

    /// Runs `op` on both sides (each in a span naming its side), then compares: `differ`
    /// says what differs between the two results, `None` when they are equal.
    fn both<T>(
        &mut self,
        op: Op,
        partition: usize,
        on_first: impl FnOnce(&mut A) -> Result<T>,
        on_second: impl FnOnce(&mut B) -> Result<T>,
        differ: impl FnOnce(&T, &T) -> Option<String>,
    ) -> Result<T> {
        let (first, second) = (self.first.name(), self.second.name());
        let want = info_span!("dual_side", op = op.name(), side = %first, partition)
            .in_scope(|| on_first(&mut self.first))?;
        let got = info_span!("dual_side", op = op.name(), side = %second, partition)
            .in_scope(|| on_second(&mut self.second))?;
        match differ(&want, &got) {
            None => Ok(want),
            Some(detail) => {
                tracing::error!(partition, op = op.name(), %first, %second, %detail,
                    "device operations differ: stopping the partition");
                Err(Error::Mismatch {
                    partition,
                    op: op.name(),
                    first,
                    second,
                    detail,
                })
            }
        }
    }
}

/// What differs between two coefficient vectors: their lengths, or the first index where
/// they differ with both values; `None` when they are equal.
pub fn coefficients_differ(want: &[Scalar], got: &[Scalar]) -> Option<String> {
    if want.len() != got.len() {
        return Some(format!("{} coefficients against {}", want.len(), got.len()));
    }
    let i = want.iter().zip(got).position(|(x, y)| x != y)?;
    let rest = want[i..]
        .iter()
        .zip(&got[i..])
        .filter(|(x, y)| x != y)
        .count();
    Some(format!(
        "coefficient {i} of {} is {:?} against {:?} ({rest} differ from there on)",
        want.len(),
        want[i],
        got[i]
    ))
}

/// What differs between two points (both compressed, in hex); `None` when they are equal.
fn points_differ<P: Curve + PartialEq>(want: &P, got: &P) -> Option<String>
where
    P::AffineRepr: group::GroupEncoding,
{
    use group::GroupEncoding;
    (want != got).then(|| {
        format!(
            "{} against {}",
            hex::encode(want.to_affine().to_bytes()),
            hex::encode(got.to_affine().to_bytes())
        )
    })
}

impl<A: DeviceOps, B: DeviceOps> DeviceOps for Dual<A, B> {
    fn name(&self) -> String {
        format!("dual({}, {})", self.first.name(), self.second.name())
    }

    fn h_coefficients(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        partition: usize,
    ) -> Result<Vec<Scalar>> {
        let copies = (a.clone(), b.clone(), c.clone());
        self.both(
            Op::H,
            partition,
            |x| x.h_coefficients(copies.0, copies.1, copies.2, partition),
            |y| y.h_coefficients(a, b, c, partition),
            |want, got| coefficients_differ(want, got),
        )
    }

    fn msm_h(
        &mut self,
        srs: &Srs,
        coefficients: &[Scalar],
        partition: usize,
    ) -> Result<G1Projective> {
        self.both(
            Op::MsmH,
            partition,
            |x| x.msm_h(srs, coefficients, partition),
            |y| y.msm_h(srs, coefficients, partition),
            points_differ,
        )
    }

    fn msm_l(&mut self, srs: &Srs, aux: &[Scalar], partition: usize) -> Result<G1Projective> {
        self.both(
            Op::MsmL,
            partition,
            |x| x.msm_l(srs, aux, partition),
            |y| y.msm_l(srs, aux, partition),
            points_differ,
        )
    }

    fn msm_a(&mut self, srs: &Srs, w: &QueryScalars<'_>, partition: usize) -> Result<G1Projective> {
        self.both(
            Op::MsmA,
            partition,
            |x| x.msm_a(srs, w, partition),
            |y| y.msm_a(srs, w, partition),
            points_differ,
        )
    }

    fn msm_b_g1(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        partition: usize,
    ) -> Result<G1Projective> {
        self.both(
            Op::MsmBG1,
            partition,
            |x| x.msm_b_g1(srs, w, partition),
            |y| y.msm_b_g1(srs, w, partition),
            points_differ,
        )
    }

    fn msm_b_g2(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        partition: usize,
    ) -> Result<G2Projective> {
        self.both(
            Op::MsmBG2,
            partition,
            |x| x.msm_b_g2(srs, w, partition),
            |y| y.msm_b_g2(srs, w, partition),
            points_differ,
        )
    }
}

/// The `dual` backend: the CPU's operations as the reference, one GPU's checked against
/// them on every operation of every partition. Its proofs are the CPU backend's.
pub type DualBackend = OpsBackend<Dual<CpuOps, CudaOps>>;

impl DualBackend {
    /// The CPU paired with CUDA device `ordinal` (numbered under the current
    /// `CUDA_VISIBLE_DEVICES`). Without a driver or such a device this is an
    /// [`Error::Device`] saying so; nothing is allocated on the device until the first proof.
    pub fn open(ordinal: usize) -> Result<Self> {
        Ok(Self::with_gpu(CudaOps::open(ordinal)?))
    }

    /// The CPU paired with `gpu` (opened, and its settings made, by the caller).
    pub fn with_gpu(gpu: CudaOps) -> Self {
        OpsBackend::new(Dual::new(CpuOps, gpu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::synthetic::{Empty, Shape};
    use crate::options::{ProveOptions, Randomness};
    use crate::prove_circuit;
    use crate::CpuBackend;
    use bellperson::groth16::{create_proof, generate_random_parameters, Proof};
    use blstrs::Bls12;
    use ff::Field;
    use group::Group;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn bytes(p: &Proof<Bls12>) -> Vec<u8> {
        let mut v = Vec::new();
        p.write(&mut v).expect("serialise");
        v
    }

    fn fixed(r: Scalar, s: Scalar) -> ProveOptions {
        ProveOptions {
            randomness: Randomness::Fixed(r, s),
            verify: true,
            pce: true,
        }
    }

    /// A circuit of `squarings` chained squarings, `inputs` inputs and `linear` linear rows,
    /// its parameters, and a witness.
    fn shape(rng: &mut ChaCha8Rng, squarings: usize, inputs: usize, linear: usize) -> (Srs, Shape) {
        let blank = Shape {
            x: None,
            squarings,
            inputs,
            linear,
        };
        let params = generate_random_parameters::<Bls12, _, _>(blank, &mut *rng).expect("params");
        let circuit = Shape {
            x: Some(Scalar::random(&mut *rng)),
            squarings,
            inputs,
            linear,
        };
        (Srs::from_parameters(params), circuit)
    }

    /// The CPU's operations, with one operation's result made wrong: coefficient
    /// `WRONG_COEFFICIENT` of H, or an MSM's point moved by the generator. Records every
    /// operation it is asked for.
    struct Faulty {
        wrong: Op,
        calls: Vec<Op>,
    }

    const WRONG_COEFFICIENT: usize = 5;

    impl Faulty {
        fn g1(&self, op: Op, p: Result<G1Projective>) -> Result<G1Projective> {
            p.map(|p| {
                if op == self.wrong {
                    p + G1Projective::generator()
                } else {
                    p
                }
            })
        }
    }

    impl DeviceOps for Faulty {
        fn name(&self) -> String {
            "faulty".into()
        }

        fn h_coefficients(
            &mut self,
            a: Vec<Scalar>,
            b: Vec<Scalar>,
            c: Vec<Scalar>,
            partition: usize,
        ) -> Result<Vec<Scalar>> {
            self.calls.push(Op::H);
            let mut h = CpuOps.h_coefficients(a, b, c, partition)?;
            if self.wrong == Op::H {
                h[WRONG_COEFFICIENT] += Scalar::ONE;
            }
            Ok(h)
        }

        fn msm_h(&mut self, srs: &Srs, h: &[Scalar], partition: usize) -> Result<G1Projective> {
            self.calls.push(Op::MsmH);
            self.g1(Op::MsmH, CpuOps.msm_h(srs, h, partition))
        }

        fn msm_l(&mut self, srs: &Srs, aux: &[Scalar], partition: usize) -> Result<G1Projective> {
            self.calls.push(Op::MsmL);
            self.g1(Op::MsmL, CpuOps.msm_l(srs, aux, partition))
        }

        fn msm_a(
            &mut self,
            srs: &Srs,
            w: &QueryScalars<'_>,
            partition: usize,
        ) -> Result<G1Projective> {
            self.calls.push(Op::MsmA);
            self.g1(Op::MsmA, CpuOps.msm_a(srs, w, partition))
        }

        fn msm_b_g1(
            &mut self,
            srs: &Srs,
            w: &QueryScalars<'_>,
            partition: usize,
        ) -> Result<G1Projective> {
            self.calls.push(Op::MsmBG1);
            self.g1(Op::MsmBG1, CpuOps.msm_b_g1(srs, w, partition))
        }

        fn msm_b_g2(
            &mut self,
            srs: &Srs,
            w: &QueryScalars<'_>,
            partition: usize,
        ) -> Result<G2Projective> {
            self.calls.push(Op::MsmBG2);
            let p = CpuOps.msm_b_g2(srs, w, partition)?;
            Ok(if self.wrong == Op::MsmBG2 {
                p + G2Projective::generator()
            } else {
                p
            })
        }
    }

    /// The dual path with the CPU's operations on both sides proves the CPU backend's
    /// bytes, which are bellperson's, for circuits of several shapes (no public input, a
    /// domain of one point, a domain just past a power of two).
    #[test]
    fn dual_cpu_against_cpu_proves_the_cpu_backends_bytes() {
        let mut rng = ChaCha8Rng::seed_from_u64(50);
        let mut dual = OpsBackend::new(Dual::new(CpuOps, CpuOps));
        assert_eq!(crate::Backend::name(&dual), "dual(cpu, cpu)");
        for (squarings, inputs, linear) in [(1, 0, 0), (3, 5, 1), (62, 1, 0), (500, 3, 20)] {
            let (srs, circuit) = shape(&mut rng, squarings, inputs, linear);
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let opts = fixed(r, s);
            let theirs = create_proof(circuit.clone(), &srs.params, r, s).expect("bellperson");
            let (cpu, _) =
                prove_circuit(&srs, &mut CpuBackend, circuit.clone(), &opts).expect("CPU");
            let (ours, _) = prove_circuit(&srs, &mut dual, circuit, &opts).expect("dual");
            let name = format!("{squarings}/{inputs}/{linear}");
            assert_eq!(bytes(&ours), bytes(&cpu), "{name}: dual vs CPU backend");
            assert_eq!(bytes(&ours), bytes(&theirs), "{name}: dual vs bellperson");
        }
        let params = generate_random_parameters::<Bls12, _, _>(Empty, &mut rng).expect("params");
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let theirs = create_proof(Empty, &params, r, s).expect("bellperson");
        let srs = Srs::from_parameters(params);
        let (ours, _) = prove_circuit(&srs, &mut dual, Empty, &fixed(r, s)).expect("dual");
        assert_eq!(bytes(&ours), bytes(&theirs), "a domain of one point");
    }

    /// A wrong result in any one operation stops the partition at that operation with an
    /// error naming it, the partition and both sides: no later operation runs on either
    /// side, and no proof is returned.
    #[test]
    fn an_injected_difference_fails_at_its_operation_and_returns_no_proof() {
        let mut rng = ChaCha8Rng::seed_from_u64(51);
        let (srs, circuit) = shape(&mut rng, 40, 2, 3);
        let asg = cuzk_pce::synthesize(circuit).expect("synthesis");
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        for (i, wrong) in Op::ALL.into_iter().enumerate() {
            let faulty = Faulty {
                wrong,
                calls: Vec::new(),
            };
            let mut dual = OpsBackend::new(Dual::new(CpuOps, faulty));
            let got = crate::Backend::prove(&mut dual, &srs, asg.clone(), r, s, 7);
            let err = match got {
                Ok(_) => panic!("{wrong}: a proof was returned despite the difference"),
                Err(e) => e,
            };
            let msg = err.to_string();
            match &err {
                Error::Mismatch {
                    partition,
                    op,
                    first,
                    second,
                    detail,
                } => {
                    assert_eq!(*partition, 7, "{msg}");
                    assert_eq!(*op, wrong.name(), "{msg}");
                    assert_eq!((first.as_str(), second.as_str()), ("cpu", "faulty"));
                    if wrong == Op::H {
                        let want = format!("coefficient {WRONG_COEFFICIENT} of ");
                        assert!(detail.contains(&want), "{msg}");
                        assert!(detail.contains("(1 differ from there on)"), "{msg}");
                    } else {
                        assert!(detail.contains(" against "), "{msg}");
                    }
                }
                other => panic!("{wrong}: not a mismatch: {other:?}"),
            }
            assert!(msg.starts_with("partition 7: "), "{msg}");
            assert!(msg.contains(wrong.name()), "{msg}");
            assert!(msg.contains("no proof was returned"), "{msg}");
            // the faulty side ran every operation up to the wrong one, and nothing after it
            assert_eq!(dual.ops().second().calls, Op::ALL[..=i], "{wrong}");
        }
    }

    #[test]
    fn coefficient_differences_name_the_first_index() {
        let v: Vec<Scalar> = (0..6u64).map(Scalar::from).collect();
        assert_eq!(coefficients_differ(&v, &v), None);
        assert_eq!(
            coefficients_differ(&v, &v[..4]).as_deref(),
            Some("6 coefficients against 4")
        );
        let mut w = v.clone();
        w[2] = Scalar::ZERO;
        w[4] = Scalar::ZERO;
        let d = coefficients_differ(&v, &w).expect("they differ");
        assert!(d.starts_with("coefficient 2 of 6 is "), "{d}");
        assert!(d.ends_with("(2 differ from there on)"), "{d}");
        assert!(points_differ(&G1Projective::generator(), &G1Projective::generator()).is_none());
        let d = points_differ(&G2Projective::generator(), &G2Projective::identity())
            .expect("they differ");
        assert!(d.contains(" against c0"), "{d}"); // the identity, compressed: 0xc0 then zeros
    }

    #[test]
    fn without_a_device_the_dual_backend_is_a_clear_error() {
        if cuzk_kernels::driver_present() {
            return; // a GPU machine: the device tests cover opening
        }
        let err = DualBackend::open(0).expect_err("no driver, no device");
        assert!(matches!(err, Error::Device { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("cuda:0") && msg.contains("driver"), "{msg}");
    }
}
