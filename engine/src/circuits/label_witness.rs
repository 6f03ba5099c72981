//! The witness of a PoRep labeling, computed natively.
//!
//! A labeling (`storage_proofs_porep::stacked::create_label_circuit`, after the parents'
//! `to_bits_le`) is a SHA-256 of 20 blocks over the replica id, the layer, the challenged
//! node and 37 parents' labels, written with bellperson 0.27's gadgets. Run in a witness-only
//! constraint system it is most of a PoRep partition's synthesis time, although its
//! constraints are never looked at: only the values its `alloc` calls produce are kept.
//!
//! This module produces those values, in the same order, without a constraint system, with
//! the SHA-256 gadgets' mirror ([`super::sha256_witness`]).
//!
//! Invariant: [`labeling`] returns exactly the aux values (and the label) that the gadgets
//! allocate after the labeling's context, value for value. The tests below check that
//! against the gadgets themselves for both Filecoin shapes (2 and 11 layers, layer 1 and
//! above); `pce_matches_full_synthesis_for_every_kind` checks whole partitions. The mirror
//! follows bellperson 0.27 / bellpepper-core 0.2 and storage-proofs-porep 19.1; a release that
//! changes those gadgets changes the witness, which the tests then refuse.

use bellpepper_core::SynthesisError;
use blstrs::Scalar;

use super::sha256_witness::{hash_packed, message_bits, to_bits_le, Aux, Bit, FIELD_BITS};

/// Parents a label hashes (storage-proofs-porep's `TOTAL_PARENTS`).
pub(super) const TOTAL_PARENTS: usize = 37;

/// Message bits the labeling hashes: replica id, layer and node, the parents, 32 bytes each.
const MESSAGE_BITS: usize = (2 + TOTAL_PARENTS) * 256;

/// The parents as the labeling hashes them: repeated to [`TOTAL_PARENTS`] (above layer 1 the
/// expander parents follow the base ones), as storage-proofs-porep's circuit does.
///
/// Errors: too few parents to expand (the circuit needs 6 base parents, and 8 expander
/// parents above layer 1).
pub(super) fn expand_parents<T: Clone>(
    parents: Vec<T>,
    layer: usize,
) -> std::result::Result<Vec<T>, SynthesisError> {
    let missing = || SynthesisError::AssignmentMissing;
    let mut expanded = parents.clone();
    if layer > 1 {
        expanded.extend_from_slice(&parents);
        expanded.extend_from_slice(parents.get(..9).ok_or_else(missing)?);
    } else {
        for _ in 0..5 {
            expanded.extend_from_slice(&parents);
        }
        expanded.push(parents.first().ok_or_else(missing)?.clone());
    }
    Ok(expanded)
}

/// The witness of the labeling of `node` at `layer` (1-based): what `to_bits_le` of each of
/// `parents` (their labels, base parents then, above layer 1, expander parents) and then
/// `create_label_circuit` allocate, in the context of `replica_id` and `node` already
/// allocated as bits. Pushes those values to `aux` (the label last) and returns the label.
///
/// Errors: a layer beyond `u32`, or parents that do not expand to [`TOTAL_PARENTS`].
pub(super) fn labeling(
    replica_id: &Scalar,
    layer: usize,
    node: u64,
    parents: &[Scalar],
    aux: &mut Aux,
) -> std::result::Result<Scalar, SynthesisError> {
    let layer_index = u32::try_from(layer).map_err(|_| SynthesisError::Unsatisfiable)?;
    let expanded = expand_parents((0..parents.len()).collect(), layer)?;
    if expanded.len() != TOTAL_PARENTS {
        return Err(SynthesisError::Unsatisfiable);
    }
    aux.0.reserve(parents.len() * FIELD_BITS + 20 * 25_000);

    // the parents' `to_bits_le`
    for p in parents {
        to_bits_le(p, aux);
    }

    // the message: replica id | layer (constant) | node | zeros to 64 bytes | parents
    let mut message = Vec::with_capacity(MESSAGE_BITS + 512);
    message_bits(replica_id, &mut message);
    message.extend(
        (0..32)
            .rev()
            .map(|i| Bit::Constant(layer_index >> i & 1 == 1)),
    );
    message.extend((0..64).rev().map(|i| Bit::Is(node >> i & 1 == 1)));
    message.resize(512, Bit::Constant(false));
    for &p in &expanded {
        message_bits(&parents[p], &mut message);
    }
    hash_packed(message, aux)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::gadgets::{boolean::Boolean, num::AllocatedNum, uint32::UInt32};
    use cuzk_pce::WitnessCs;
    use ff::Field;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use storage_proofs_core::{gadgets::uint64::UInt64, util::reverse_bit_numbering};
    use storage_proofs_porep::stacked::create_label_circuit;

    /// The labeling by the gadgets: context (replica id and its bits, the node's bits, the
    /// parents' labels), then the parents' bits and `create_label_circuit`.
    fn by_gadgets(
        replica_id: Scalar,
        layer: usize,
        node: u64,
        parents: &[Scalar],
    ) -> (Vec<Scalar>, Vec<Scalar>, Scalar) {
        let mut cs = WitnessCs {
            input: vec![Scalar::ONE],
            aux: Vec::new(),
        };
        let id = AllocatedNum::alloc(&mut cs, || Ok(replica_id)).expect("alloc");
        let id_bits = reverse_bit_numbering(id.to_bits_le(&mut cs).expect("bits"));
        let challenge = UInt64::alloc(&mut cs, Some(node)).expect("alloc");
        let nums: Vec<_> = parents
            .iter()
            .map(|&p| AllocatedNum::alloc(&mut cs, || Ok(p)).expect("alloc"))
            .collect();
        let (inputs, aux) = (cs.input.len(), cs.aux.len());
        let bits: Vec<Vec<Boolean>> = nums
            .iter()
            .map(|n| reverse_bit_numbering(n.to_bits_le(&mut cs).expect("bits")))
            .collect();
        let label = create_label_circuit(
            &mut cs,
            &id_bits,
            expand_parents(bits, layer).expect("expands"),
            UInt32::constant(layer as u32),
            challenge,
        )
        .expect("labels");
        (
            cs.input.split_off(inputs),
            cs.aux.split_off(aux),
            label.get_value().expect("a value"),
        )
    }

    fn random_case(rng: &mut ChaCha8Rng, layer: usize) -> (Scalar, u64, Vec<Scalar>) {
        let parents = if layer > 1 { 14 } else { 6 };
        (
            Scalar::random(&mut *rng),
            rng.gen(),
            (0..parents).map(|_| Scalar::random(&mut *rng)).collect(),
        )
    }

    /// The native labeling allocates what the gadgets do, value for value, at layer 1 and
    /// above (2 KiB sectors have 2 layers, production ones 11).
    #[test]
    fn native_labeling_equals_the_gadgets() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x1abe1);
        for layer in [1, 2, 1, 2, 7, 11] {
            let (id, node, parents) = random_case(&mut rng, layer);
            let (inputs, expected, label) = by_gadgets(id, layer, node, &parents);
            let mut aux = Aux(Vec::new());
            let native = labeling(&id, layer, node, &parents, &mut aux).expect("labels");
            assert!(inputs.is_empty(), "a labeling allocates no input");
            assert_eq!(aux.0.len(), expected.len(), "layer {layer}");
            if let Some(i) = (0..expected.len()).find(|&i| aux.0[i] != expected[i]) {
                panic!("layer {layer}: aux {i} of {} differs", expected.len());
            }
            assert_eq!(native, label);
        }
    }

    /// Edge values (zero and all-ones words, a replica id of 0, the largest node) take the
    /// gadgets' constant-free paths the same way.
    #[test]
    fn native_labeling_equals_the_gadgets_on_edge_values() {
        let max = -Scalar::ONE;
        for (layer, node, fill) in [(1, 0, Scalar::ZERO), (2, u64::MAX, max), (11, 1, max)] {
            let parents = vec![fill; if layer > 1 { 14 } else { 6 }];
            let (_, expected, label) = by_gadgets(fill, layer, node, &parents);
            let mut aux = Aux(Vec::new());
            let native = labeling(&fill, layer, node, &parents, &mut aux).expect("labels");
            assert!(aux.0 == expected, "layer {layer}");
            assert_eq!(native, label);
        }
    }

    /// Parents that do not expand to 37 are refused, not hashed.
    #[test]
    fn wrong_parent_counts_are_refused() {
        for (layer, n) in [(1, 5), (1, 7), (2, 13), (2, 6), (1, 0)] {
            let parents = vec![Scalar::ONE; n];
            assert!(
                labeling(&Scalar::ONE, layer, 3, &parents, &mut Aux(Vec::new())).is_err(),
                "{layer} {n}"
            );
        }
    }
}
