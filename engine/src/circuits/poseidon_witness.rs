//! Poseidon as neptune's circuit computes it, for witnesses computed without it.
//!
//! `neptune::circuit::poseidon_hash` (the circuit filecoin-hashers and storage-proofs-porep
//! use for tree C, tree R and the columns) runs the optimised permutation: compressed round
//! constants, a dense pre-sparse matrix, then sparse matrices in the partial rounds. It keeps
//! each state element either allocated or as a linear combination of allocated ones, and
//! allocates only where an S-box needs its input as a variable. In a witness-only system
//! its linear combinations are built and never looked at; [`hash`] computes the same state
//! values with plain field arithmetic and pushes what the circuit allocates, in order:
//!
//! - first full round: for each input element (not the domain tag, a constant) `(x + c)^2`,
//!   its square, and `(x + c)^5 + c'`;
//! - every other full round, for each element: the element itself (it is a linear
//!   combination after the matrix), `x^2`, `x^4`, `x^5 + c` (no `c` in the last round);
//! - every partial round, the same four for the first element only;
//! - then the result, the second element, allocated once more.
//!
//! Invariant: [`hash`] pushes exactly the aux values the circuit allocates after its
//! preimage, and returns the hash. The tests compare it with the circuit at every arity
//! Filecoin uses (2, 4 and 8 for trees, 11 for columns). The mirror follows neptune 11.

use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use ff::Field;
use neptune::{poseidon::PoseidonConstants, Arity};

use super::sha256_witness::Aux;

/// Pushes `x`, `x^2`, `x^4` and returns `x^5 + post`, all but the first allocated by the
/// circuit's `quintic_s_box` (the first by `ensure_allocated`).
fn s_box(x: Scalar, post: Option<Scalar>, aux: &mut Aux) -> Scalar {
    let x2 = x.square();
    let x4 = x2.square();
    let mut x5 = x4 * x;
    if let Some(c) = post {
        x5 += c;
    }
    aux.0.extend_from_slice(&[x, x2, x4, x5]);
    x5
}

/// `state * matrix` (row vector times matrix), as `product_mds_with_matrix`.
fn dense(state: &[Scalar], matrix: &[Vec<Scalar>]) -> Vec<Scalar> {
    (0..state.len())
        .map(|j| state.iter().zip(matrix).map(|(x, row)| *x * row[j]).sum())
        .collect()
}

/// neptune's `circuit::poseidon_hash` of `preimage` with `constants`: pushes what the
/// circuit allocates after the preimage to `aux` and returns the hash.
///
/// Errors: a preimage whose length is not the arity (the circuit asserts it).
pub(super) fn hash<A: Arity<Scalar>>(
    preimage: &[Scalar],
    constants: &PoseidonConstants<Scalar, A>,
    aux: &mut Aux,
) -> std::result::Result<Scalar, SynthesisError> {
    let width = constants.width();
    if preimage.len() + 1 != width {
        return Err(SynthesisError::Unsatisfiable);
    }
    let rc = &constants.compressed_round_constants;
    let round_constant = |i: usize| rc.get(i).copied().ok_or(SynthesisError::Unsatisfiable);
    let mut state = Vec::with_capacity(width);
    state.push(constants.domain_tag);
    state.extend_from_slice(preimage);
    let mut offset = 0;
    let mut round = 0;
    let half = constants.half_full_rounds;
    let partial = constants.partial_rounds;

    // the matrix after `round`, as `product_mds` picks it
    let mix = |state: &[Scalar], round: usize| -> Vec<Scalar> {
        if round == half - 1 {
            dense(state, &constants.pre_sparse_matrix)
        } else if round > half - 1 && round < half + partial {
            let sparse = &constants.sparse_matrixes[round - half];
            let first = state.iter().zip(&sparse.w_hat).map(|(x, w)| *x * w).sum();
            let mut next = Vec::with_capacity(state.len());
            next.push(first);
            for (x, v) in state[1..].iter().zip(&sparse.v_rest) {
                next.push(*x + state[0] * v);
            }
            next
        } else {
            dense(state, &constants.mds_matrices.m)
        }
    };

    // first full round: round keys added before and after the S-box; the tag's is a constant
    for (i, x) in state.iter_mut().enumerate() {
        let pre = round_constant(offset + i)?;
        let post = round_constant(offset + width + i)?;
        let y = *x + pre;
        let y2 = y.square();
        let y4 = y2.square();
        let y5 = y4 * y + post;
        if i > 0 {
            aux.0.extend_from_slice(&[y2, y4, y5]);
        }
        *x = y5;
    }
    offset += 2 * width;
    state = mix(&state, round);
    round += 1;

    let full_round = |state: &mut Vec<Scalar>,
                      offset: &mut usize,
                      round: &mut usize,
                      last: bool,
                      aux: &mut Aux|
     -> std::result::Result<(), SynthesisError> {
        for (i, x) in state.iter_mut().enumerate() {
            let post = if last {
                None
            } else {
                Some(round_constant(*offset + i)?)
            };
            *x = s_box(*x, post, aux);
        }
        if !last {
            *offset += width;
        }
        *state = mix(state, *round);
        *round += 1;
        Ok(())
    };

    for _ in 1..half {
        full_round(&mut state, &mut offset, &mut round, false, aux)?;
    }
    for _ in 0..partial {
        let post = round_constant(offset)?;
        offset += 1;
        state[0] = s_box(state[0], Some(post), aux);
        state = mix(&state, round);
        round += 1;
    }
    for _ in 1..half {
        full_round(&mut state, &mut offset, &mut round, false, aux)?;
    }
    full_round(&mut state, &mut offset, &mut round, true, aux)?;

    let result = state[1];
    aux.0.push(result);
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::gadgets::num::AllocatedNum;
    use cuzk_pce::WitnessCs;
    use filecoin_hashers::{
        POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8,
    };
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn by_circuit<A: Arity<Scalar>>(
        preimage: &[Scalar],
        constants: &PoseidonConstants<Scalar, A>,
    ) -> (Vec<Scalar>, Scalar) {
        let mut cs = WitnessCs {
            input: vec![Scalar::ONE],
            aux: Vec::new(),
        };
        let nums: Vec<_> = preimage
            .iter()
            .map(|&x| AllocatedNum::alloc(&mut cs, || Ok(x)).expect("alloc"))
            .collect();
        let at = cs.aux.len();
        let h = neptune::circuit::poseidon_hash(&mut cs, nums, constants).expect("hashes");
        (cs.aux.split_off(at), h.get_value().expect("a value"))
    }

    fn check<A: Arity<Scalar>>(constants: &PoseidonConstants<Scalar, A>, rng: &mut ChaCha8Rng) {
        let arity = constants.width() - 1;
        for preimage in [
            (0..arity).map(|_| Scalar::random(&mut *rng)).collect(),
            vec![Scalar::ZERO; arity],
        ] {
            let (expected, h) = by_circuit(&preimage, constants);
            let mut aux = Aux(Vec::new());
            let native = hash(&preimage, constants, &mut aux).expect("hashes");
            assert_eq!(native, h, "arity {arity}: hash");
            assert!(aux.0 == expected, "arity {arity}: allocations");
        }
        let mut aux = Aux(Vec::new());
        assert!(hash(&vec![Scalar::ONE; arity + 1], constants, &mut aux).is_err());
    }

    /// The native hash allocates what neptune's circuit does, value for value, at every
    /// arity Filecoin's circuits hash with; a preimage of the wrong length is refused.
    #[test]
    fn native_poseidon_equals_the_circuit() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x905e1d0);
        check(&POSEIDON_CONSTANTS_2, &mut rng);
        check(&POSEIDON_CONSTANTS_4, &mut rng);
        check(&POSEIDON_CONSTANTS_8, &mut rng);
        check(&POSEIDON_CONSTANTS_11, &mut rng);
    }
}
