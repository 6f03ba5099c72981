//! A Merkle inclusion's witness computed natively: what storage-proofs-core's `PoRCircuit`
//! allocates for a leaf's path to a root, without running its gadgets.
//!
//! `PoRCircuit::synthesize` walks the path level by level. At each level it allocates the
//! leaf's index among the level's inputs as bits (`AllocatedBit`, least significant first),
//! then the siblings (`AllocatedNum`), then inserts the current value among the siblings
//! (`insert_2` / `insert_8`: one `pick` per output position and intermediate, plus a `nor`
//! and an `and` of the index bits at arity 8), then hashes the level's inputs with the
//! tree's hash. After the last level it packs every index bit into public inputs
//! (`multipack::pack_into_inputs`, 254 bits an input); the root is compared, not allocated
//! (the paths in a PoRep are private).
//!
//! Only the hash differs between trees. Tree D's is SHA-256 ([`super::sha256_witness`]):
//! the level's two inputs as bits (`to_bits_le`), then the digest packed into a field
//! element, as filecoin-hashers' `Sha256Function::hash_multi_leaf_circuit` does.
//!
//! Invariant: [`inclusion`] pushes exactly the values the gadgets allocate after the leaf's
//! own allocation, in order (aux to `aux`, inputs to `input`); the tests below compare it
//! with `PoRCircuit` itself, and the PoRep partition tests compare whole witnesses. The
//! mirror follows storage-proofs-core 19.1 and filecoin-hashers 14.1.

use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use ff::{Field, PrimeField};

use filecoin_hashers::{POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_8};

use super::poseidon_witness;
use super::sha256_witness::{self, hash_packed, message_bits, Aux};

/// One level of an inclusion path, as `MerkleProofTrait::as_options` gives it: the
/// siblings, and the index of the path's node among the level's inputs.
pub(super) type PathLevel = (Vec<Option<Scalar>>, Option<usize>);

/// A tree's hash, as its gadget computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TreeHash {
    /// filecoin-hashers' SHA-256 (tree D): binary levels.
    Sha256,
    /// filecoin-hashers' Poseidon (trees C and R): levels of 8, and 2 at the top of 64 GiB
    /// sectors' trees.
    Poseidon,
}

/// The witness of `leaf`'s inclusion along `path` in a tree hashed with `hash`: pushes what
/// the gadgets allocate to `aux` and `input`, and returns the root the path leads to.
///
/// Errors: a level without its index or a sibling's value (`AssignmentMissing`), an index
/// beyond its level, or a level width the gadgets do not insert into (Filecoin's trees have
/// levels of 2 and 8), or one the hash does not take (SHA-256 levels are binary).
pub(super) fn inclusion(
    leaf: Scalar,
    path: &[PathLevel],
    hash: TreeHash,
    aux: &mut Aux,
    input: &mut Vec<Scalar>,
) -> std::result::Result<Scalar, SynthesisError> {
    let missing = || SynthesisError::AssignmentMissing;
    let mut cur = leaf;
    let mut index_bits = Vec::new();
    for (siblings, index) in path {
        let width = siblings.len() + 1;
        let index = index.ok_or_else(missing)?;
        if !width.is_power_of_two() || index >= width {
            return Err(SynthesisError::Unsatisfiable);
        }
        let bits: Vec<bool> = (0..width.trailing_zeros())
            .map(|i| index >> i & 1 == 1)
            .collect();
        for &b in &bits {
            aux.bit(b);
        }
        index_bits.extend_from_slice(&bits);
        let siblings = siblings
            .iter()
            .map(|s| s.ok_or_else(missing))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        aux.0.extend_from_slice(&siblings);
        let inputs = insert(cur, &bits, &siblings, aux)?;
        cur = match hash {
            TreeHash::Sha256 => sha256_node(&inputs, aux)?,
            TreeHash::Poseidon => poseidon_node(&inputs, aux)?,
        };
    }
    for chunk in index_bits.chunks(Scalar::CAPACITY as usize) {
        let mut packed = Scalar::ZERO;
        for &b in chunk.iter().rev() {
            packed = packed.double();
            if b {
                packed += Scalar::ONE;
            }
        }
        input.push(packed);
    }
    Ok(cur)
}

/// `pick(condition, a, b)`: one variable, `a` when the condition holds, else `b`.
fn pick(condition: bool, a: Scalar, b: Scalar, aux: &mut Aux) -> Scalar {
    let c = if condition { a } else { b };
    aux.0.push(c);
    c
}

/// storage-proofs-core's `insert`: `element` placed at the position `bits` spell among
/// `others`, with the allocations of its hand-written forms for 2 and 8 inputs.
fn insert(
    element: Scalar,
    bits: &[bool],
    others: &[Scalar],
    aux: &mut Aux,
) -> std::result::Result<Vec<Scalar>, SynthesisError> {
    match (bits, others) {
        (&[b0], &[o]) => Ok(vec![pick(b0, o, element, aux), pick(b0, element, o, aux)]),
        (&[b0, b1, b2], &[b, c, d, e, f, g, h]) => {
            let a = element;
            // `AllocatedBit::nor` and `AllocatedBit::and` of the two low bits
            let nor = !b0 && !b1;
            aux.bit(nor);
            let and = b0 && b1;
            aux.bit(and);
            let mut p = |cond, x, y| pick(cond, x, y, aux);
            let p0 = p(nor, a, b);
            let p0 = p(b2, b, p0);
            let p1 = p(b0, a, b);
            let p1 = p(b1, c, p1);
            let p1 = p(b2, c, p1);
            let p2 = p(b0, d, a);
            let p2 = p(b1, p2, c);
            let p2 = p(b2, d, p2);
            let p3 = p(and, a, d);
            let p3 = p(b2, e, p3);
            let p4 = p(nor, a, f);
            let p4 = p(b2, p4, e);
            let p5 = p(b0, a, f);
            let p5 = p(b1, g, p5);
            let p5 = p(b2, p5, f);
            let p6 = p(b0, h, a);
            let p6 = p(b1, p6, g);
            let p6 = p(b2, p6, g);
            let p7 = p(and, a, h);
            let p7 = p(b2, p7, h);
            Ok(vec![p0, p1, p2, p3, p4, p5, p6, p7])
        }
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// filecoin-hashers' `Sha256Function::hash_multi_leaf_circuit` of a binary level: both
/// inputs' bits, then the digest of their bytes packed into a field element.
fn sha256_node(inputs: &[Scalar], aux: &mut Aux) -> std::result::Result<Scalar, SynthesisError> {
    if inputs.len() != 2 {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut message = Vec::with_capacity(512);
    for x in inputs {
        sha256_witness::to_bits_le(x, aux);
        message_bits(x, &mut message);
    }
    hash_packed(message, aux)
}

/// filecoin-hashers' `PoseidonFunction::hash_multi_leaf_circuit`: neptune's circuit with the
/// constants of the level's arity.
fn poseidon_node(inputs: &[Scalar], aux: &mut Aux) -> std::result::Result<Scalar, SynthesisError> {
    match inputs.len() {
        2 => poseidon_witness::hash(inputs, &POSEIDON_CONSTANTS_2, aux),
        8 => poseidon_witness::hash(inputs, &POSEIDON_CONSTANTS_8, aux),
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::gadgets::num::AllocatedNum;
    use cuzk_pce::WitnessCs;
    use filecoin_hashers::{
        poseidon::{PoseidonDomain, PoseidonHasher},
        sha256::{Sha256Domain, Sha256Hasher},
    };
    use generic_array::typenum::{U0, U2, U8};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use storage_proofs_core::{
        gadgets::{
            por::{AuthPath, PoRCircuit},
            variables::Root,
        },
        merkle::{DiskStore, MerkleTreeTrait, MerkleTreeWrapper},
    };

    type Sha256Tree = MerkleTreeWrapper<Sha256Hasher, DiskStore<Sha256Domain>, U2, U0, U0>;
    /// A 64 GiB sector's tree C and tree R: levels of 8, 8 and 2.
    type PoseidonTree = MerkleTreeWrapper<PoseidonHasher, DiskStore<PoseidonDomain>, U8, U8, U2>;

    /// What `PoRCircuit` allocates after the leaf and the root, and its inputs.
    fn by_gadgets<Tree: MerkleTreeTrait>(
        leaf: Scalar,
        root: Scalar,
        path: Vec<PathLevel>,
    ) -> (Vec<Scalar>, Vec<Scalar>) {
        let mut cs = WitnessCs {
            input: vec![Scalar::ONE],
            aux: Vec::new(),
        };
        let root = AllocatedNum::alloc(&mut cs, || Ok(root)).expect("alloc");
        let leaf = AllocatedNum::alloc(&mut cs, || Ok(leaf)).expect("alloc");
        let (inputs, aux) = (cs.input.len(), cs.aux.len());
        let path: AuthPath<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity> =
            path.into();
        PoRCircuit::<Tree>::synthesize(
            &mut cs,
            Root::from_allocated::<WitnessCs>(leaf),
            path,
            Root::from_allocated::<WitnessCs>(root),
            true,
        )
        .expect("synthesizes");
        (cs.input.split_off(inputs), cs.aux.split_off(aux))
    }

    /// The native path against the gadgets', value for value.
    fn compare<Tree: MerkleTreeTrait>(leaf: Scalar, path: Vec<PathLevel>, hash: TreeHash) {
        let levels = path.len();
        let (mut aux, mut input) = (Aux(Vec::new()), Vec::new());
        let root = inclusion(leaf, &path, hash, &mut aux, &mut input).expect("native path");
        let (expected_input, expected_aux) = by_gadgets::<Tree>(leaf, root, path);
        assert_eq!(input, expected_input, "{hash:?}, {levels} levels: inputs");
        assert_eq!(aux.0.len(), expected_aux.len(), "{hash:?}, {levels} levels");
        if let Some(i) = (0..expected_aux.len()).find(|&i| aux.0[i] != expected_aux[i]) {
            panic!(
                "{hash:?}, {levels} levels: aux {i} of {} differs",
                expected_aux.len()
            );
        }
    }

    fn random_path(rng: &mut ChaCha8Rng, widths: &[usize]) -> Vec<PathLevel> {
        widths
            .iter()
            .map(|&width| {
                let siblings = (0..width - 1)
                    .map(|_| Some(Scalar::random(&mut *rng)))
                    .collect();
                (siblings, Some(rng.gen_range(0..width)))
            })
            .collect()
    }

    /// A SHA-256 path computed natively allocates what `PoRCircuit` does, value for value,
    /// inputs included, for short and full-height (30 levels) paths.
    #[test]
    fn native_sha256_inclusion_equals_the_gadgets() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x7eed);
        for levels in [1, 3, 30] {
            let leaf = Scalar::random(&mut rng);
            let path = random_path(&mut rng, &vec![2; levels]);
            compare::<Sha256Tree>(leaf, path, TreeHash::Sha256);
        }
    }

    /// A Poseidon path of a 64 GiB sector's shape (base levels of 8, a sub level of 8, a
    /// top level of 2) computed natively allocates what `PoRCircuit` does, at every index
    /// of the levels of 8.
    #[test]
    fn native_poseidon_inclusion_equals_the_gadgets() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x9a78);
        for index in 0..8 {
            let leaf = Scalar::random(&mut rng);
            let mut path = random_path(&mut rng, &[8, 8, 8, 2]);
            path[0].1 = Some(index);
            compare::<PoseidonTree>(leaf, path, TreeHash::Poseidon);
        }
    }

    /// Levels the gadgets cannot take are refused: a missing index or sibling, an index
    /// beyond the level, a width that is not a power of two, a wide level under SHA-256.
    #[test]
    fn malformed_levels_are_refused() {
        let one = Some(Scalar::ONE);
        let bad: [PathLevel; 5] = [
            (vec![one], None),
            (vec![None], Some(0)),
            (vec![one], Some(2)),
            (vec![one, one], Some(0)),
            (vec![one; 7], Some(3)),
        ];
        for level in bad {
            let (mut aux, mut input) = (Aux(Vec::new()), Vec::new());
            let path = vec![level.clone()];
            assert!(
                inclusion(Scalar::ONE, &path, TreeHash::Sha256, &mut aux, &mut input).is_err(),
                "{level:?}"
            );
        }
    }
}
