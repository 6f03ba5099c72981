//! The prover takes any bellpepper-core circuit: on circuits of many shapes (one constraint,
//! no public input, many inputs, linear-only rows, sizes around powers of two) our CPU proof equals bellperson's `create_proof` byte for byte with fixed r and s.

use bellpepper_core::{num::AllocatedNum, Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16::{create_proof, generate_random_parameters};
use blstrs::{Bls12, Scalar};
use cuzk::{prove_circuit, CpuBackend, ProveOptions, Randomness, Srs};
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// `squarings` chained squarings of a private x, `inputs` public inputs each tied to the
/// chain, `linear` linear-only rows. (bellperson's parameter generator refuses variables
/// that appear in no constraint, so every variable is used.)
#[derive(Clone)]
struct Shape {
    x: Option<Scalar>,
    squarings: usize,
    inputs: usize,
    linear: usize,
}

impl Circuit<Scalar> for Shape {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut cur = AllocatedNum::alloc(cs.namespace(|| "x"), || {
            self.x.ok_or(SynthesisError::AssignmentMissing)
        })?;
        let mut chain = vec![cur.clone()];
        for i in 0..self.squarings {
            cur = cur.square(cs.namespace(|| format!("sq{i}")))?;
            chain.push(cur.clone());
        }
        for i in 0..self.inputs {
            let v = chain[i % chain.len()].clone();
            let inp = AllocatedNum::alloc_input(cs.namespace(|| format!("in{i}")), || {
                v.get_value().ok_or(SynthesisError::AssignmentMissing)
            })?;
            cs.enforce(
                || format!("in{i} = v"),
                |lc| lc + inp.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + v.get_variable(),
            );
        }
        for i in 0..self.linear {
            let v = &chain[i % chain.len()];
            cs.enforce(
                || format!("lin{i}"),
                |lc| lc + v.get_variable() + v.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + (Scalar::from(2), v.get_variable()),
            );
        }
        Ok(())
    }
}

#[test]
fn arbitrary_shapes_match_bellperson() {
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let shapes = [
        (1, 0, 0),
        (0, 1, 0),
        (3, 5, 1),
        (30, 40, 3),
        (61, 1, 0), // 64 constraints with the input rows
        (62, 1, 0), // just past a power of two
        (1000, 3, 20),
    ];
    for (squarings, inputs, linear) in shapes {
        let blank = Shape {
            x: None,
            squarings,
            inputs,
            linear,
        };
        let params = generate_random_parameters::<Bls12, _, _>(blank, &mut rng).expect("params");
        let circuit = Shape {
            x: Some(Scalar::random(&mut rng)),
            squarings,
            inputs,
            linear,
        };
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let theirs = create_proof(circuit.clone(), &params, r, s).expect("bellperson");
        let srs = Srs::from_parameters(params);
        let opts = ProveOptions {
            randomness: Randomness::Fixed(r, s),
            verify: true,
            ..Default::default()
        };
        let (ours, _) = prove_circuit(&srs, &mut CpuBackend, circuit, &opts).expect("cuzk");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        ours.write(&mut a).unwrap();
        theirs.write(&mut b).unwrap();
        assert_eq!(a, b, "shape {squarings}/{inputs}/{linear}");
    }
}

#[test]
fn unsatisfied_circuit_yields_no_proof() {
    struct Wrong;
    impl Circuit<Scalar> for Wrong {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let a = AllocatedNum::alloc(cs.namespace(|| "a"), || Ok(Scalar::from(3)))?;
            let out = AllocatedNum::alloc_input(cs.namespace(|| "out"), || Ok(Scalar::from(10)))?;
            // claims a * a = out, but 9 != 10
            cs.enforce(
                || "sq",
                |lc| lc + a.get_variable(),
                |lc| lc + a.get_variable(),
                |lc| lc + out.get_variable(),
            );
            Ok(())
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let params = generate_random_parameters::<Bls12, _, _>(Wrong, &mut rng).unwrap();
    let srs = Srs::from_parameters(params);
    let err = prove_circuit(&srs, &mut CpuBackend, Wrong, &ProveOptions::default()).unwrap_err();
    assert!(err.to_string().contains("does not verify"), "{err}");
}
