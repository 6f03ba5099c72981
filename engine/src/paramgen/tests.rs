//! The generator against bellperson's: the same serialised parameters for the same seed.

use bellpepper_core::{num::AllocatedNum, Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16::{self, Parameters};
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::generate_random_parameters;
use crate::circuits::synthetic::{Empty, Shape};

fn blank(squarings: usize, inputs: usize, linear: usize) -> Shape {
    Shape {
        x: None,
        squarings,
        inputs,
        linear,
    }
}

/// A shape with one more private variable, in no constraint.
struct Loose(Shape);

impl Circuit<Scalar> for Loose {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.0.synthesize(cs)?;
        AllocatedNum::alloc(cs.namespace(|| "loose"), || Ok(Scalar::ONE))?;
        Ok(())
    }
}

fn bytes(p: &Parameters<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).expect("serialise");
    v
}

#[test]
fn parameters_equal_bellpersons_byte_for_byte() {
    let shapes = [
        (0, 0, 0),  // x in no constraint: refused by both
        (1, 0, 0),  // no public input besides ONE
        (0, 1, 0),  // no aux variable in B
        (3, 5, 1),  // inputs tied to the chain
        (61, 1, 0), // 64 constraints with the input rows: a full domain
        (62, 1, 0), // 65: the next domain, mostly padding
        (300, 3, 40),
    ];
    for (k, (squarings, inputs, linear)) in shapes.into_iter().enumerate() {
        let seed = 1000 + k as u64;
        let theirs = groth16::generate_random_parameters::<Bls12, _, _>(
            blank(squarings, inputs, linear),
            &mut ChaCha8Rng::seed_from_u64(seed),
        );
        let ours = generate_random_parameters(
            blank(squarings, inputs, linear),
            &mut ChaCha8Rng::seed_from_u64(seed),
        );
        match (theirs, ours) {
            (Ok(theirs), Ok(ours)) => {
                assert_eq!(
                    bytes(&ours),
                    bytes(&theirs),
                    "{squarings}/{inputs}/{linear}"
                );
                assert!(!ours.h.is_empty());
            }
            (Err(t), Err(o)) => assert_eq!(o.to_string(), t.to_string()),
            (t, o) => panic!(
                "{squarings}/{inputs}/{linear}: bellperson {:?}, ours {:?}",
                t.err(),
                o.err()
            ),
        }
    }
}

#[test]
fn a_domain_of_one_point_equals_bellpersons() {
    let theirs = groth16::generate_random_parameters::<Bls12, _, _>(
        Empty,
        &mut ChaCha8Rng::seed_from_u64(9),
    )
    .expect("bellperson");
    let ours = generate_random_parameters(Empty, &mut ChaCha8Rng::seed_from_u64(9)).expect("ours");
    assert!(ours.h.is_empty() && ours.l.is_empty());
    assert_eq!(ours.vk.ic.len(), 1);
    assert_eq!(bytes(&ours), bytes(&theirs));
}

#[test]
fn a_variable_in_no_constraint_is_refused_as_bellperson_does() {
    let theirs = groth16::generate_random_parameters::<Bls12, _, _>(
        Loose(blank(2, 1, 0)),
        &mut ChaCha8Rng::seed_from_u64(7),
    )
    .map(|_| ())
    .expect_err("bellperson refuses");
    let ours = generate_random_parameters(Loose(blank(2, 1, 0)), &mut ChaCha8Rng::seed_from_u64(7))
        .map(|_| ())
        .expect_err("refused");
    assert!(
        matches!(ours, SynthesisError::UnconstrainedVariable),
        "{ours:?}"
    );
    assert_eq!(ours.to_string(), theirs.to_string());
}

#[test]
fn proofs_made_with_them_verify() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let params = generate_random_parameters(blank(20, 2, 3), &mut rng).expect("params");
    let pvk = groth16::prepare_verifying_key(&params.vk);
    let circuit = Shape {
        x: Some(Scalar::from(3u64)),
        ..blank(20, 2, 3)
    };
    let proof = groth16::create_random_proof(circuit, &params, &mut rng).expect("proof");
    // the inputs: chain[0] = 3 and chain[1] = 9
    let inputs = [Scalar::from(3u64), Scalar::from(9u64)];
    assert!(groth16::verify_proof(&pvk, &proof, &inputs).expect("verifier runs"));
    let wrong = [Scalar::from(3u64), Scalar::from(10u64)];
    assert!(!groth16::verify_proof(&pvk, &proof, &wrong).expect("verifier runs"));
}
