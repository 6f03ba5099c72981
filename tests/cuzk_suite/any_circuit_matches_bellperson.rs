//! The prover takes any bellpepper-core circuit: on circuits of many shapes (one constraint,
//! no public input, many inputs, linear-only rows, sizes around powers of two) our CPU proof equals bellperson's `create_proof` byte for byte with fixed r and s.

use crate::support;

use bellpepper_core::{num::AllocatedNum, Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16::{create_proof, generate_random_parameters};
use blstrs::{Bls12, Scalar};
use cuzk::{prove_circuit, CpuBackend, ProveOptions, Randomness, Srs};
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use support::shape::{Empty, Shape};

#[test]
fn arbitrary_shapes_match_bellperson() {
    let _cores = support::cores_shared();
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
fn empty_circuit_matches_bellperson() {
    let _cores = support::cores_shared();
    // no variable, no constraint: a domain of one point and an empty H query
    let mut rng = ChaCha8Rng::seed_from_u64(2027);
    let params = generate_random_parameters::<Bls12, _, _>(Empty, &mut rng).expect("params");
    assert!(params.h.is_empty());
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let theirs = create_proof(Empty, &params, r, s).expect("bellperson");
    let srs = Srs::from_parameters(params);
    let opts = ProveOptions {
        randomness: Randomness::Fixed(r, s),
        verify: true,
        ..Default::default()
    };
    let (ours, inputs) = prove_circuit(&srs, &mut CpuBackend, Empty, &opts).expect("cuzk");
    assert!(inputs.is_empty());
    assert_eq!(ours, theirs);
}

#[test]
fn unsatisfied_circuit_yields_no_proof() {
    let _cores = support::cores_shared();
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
