//! A PoRep partition's witness computed in pieces, on as many threads as there are pieces.
//!
//! `StackedCircuit` allocates its top level, then each challenge in turn. A challenge
//! allocates, in this order ([`Piece`]): its *head* (the data leaf and its inclusion in tree
//! D, the parents' columns with their hashes and inclusions in tree C, the challenge index);
//! one *labeling* per layer (the parents' values as bits, then the SHA-256 label, which is
//! most of the challenge); and its *tail* (the encoding and its inclusion in tree R, the
//! challenged column's hash and its inclusion in tree C). storage-proofs-porep 19.1's
//! `Proof::synthesize` does exactly this (`stacked/circuit/params.rs`).
//!
//! Each piece here runs the same gadgets, in the same order, in a fresh witness system whose
//! first variables are the values the piece reads (the "context": commitments, the replica
//! id's bits, the challenge's bits, the parents' columns, the labels). The piece's own
//! variables are those allocated after the context. A witness system never looks at
//! variable indices (it skips every `enforce`), so the values come out as in one sequential
//! run; concatenated in the circuit's order, they are its witness.
//!
//! Invariant: [`piecewise_witness`] returns exactly the sequential witness of the same
//! circuit, variable for variable. The `pce_matches_full_synthesis_for_every_kind` tests
//! (`tests/cuzk_suite/`) check that on a real PoRep partition, and every proof is verified
//! before it is returned.
//! The pieces' layout follows storage-proofs-porep 19.1; a release that changes the circuit
//! also changes the recorded circuit's shape, which `cuzk_pce::evaluate` refuses.

use bellpepper_core::{ConstraintSystem, SynthesisError};
use bellperson::gadgets::{boolean::Boolean, num::AllocatedNum, uint32::UInt32};
use blstrs::Scalar;
use cuzk_pce::WitnessCs;
use ff::Field;
use filecoin_hashers::{Hasher, PoseidonArity, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::DefaultPieceHasher;
use generic_array::typenum::{U11, U2};
use rayon::prelude::*;
use storage_proofs_core::{
    gadgets::{
        encode::encode,
        por::{AuthPath, PoRCircuit},
        uint64::UInt64,
        variables::Root,
    },
    merkle::{DiskStore, MerkleTreeTrait, MerkleTreeWrapper},
    util::reverse_bit_numbering,
};
use storage_proofs_porep::stacked::{self, create_label_circuit, StackedCircuit};

use crate::error::Error;

/// A challenge's vanilla proof, as a C1 output holds it.
type VanillaChallenge<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

/// Variables a piece allocated: (inputs, aux), in allocation order.
pub(super) type Variables = (Vec<Scalar>, Vec<Scalar>);

/// The top level's values that the challenges read.
#[derive(Clone, Copy, Debug)]
pub(super) struct TopValues {
    /// The replica id.
    pub replica_id: Scalar,
    /// Root of tree D (the data).
    pub comm_d: Scalar,
    /// Root of tree C (the columns).
    pub comm_c: Scalar,
    /// Root of tree R (the replica).
    pub comm_r_last: Scalar,
}

/// The pieces of one challenge, in the circuit's order of allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece {
    /// Data leaf, parents' columns, challenge index.
    Head,
    /// The label of this layer (1-based).
    Labeling(usize),
    /// Encoding and the challenged column.
    Tail,
}

/// What one piece allocated: its inputs, its aux variables, and (labelings) the label.
struct PieceWitness {
    input: Vec<Scalar>,
    aux: Vec<Scalar>,
    label: Option<Scalar>,
}

/// A piece's variables, or why it could not be computed.
type PieceResult = std::result::Result<PieceWitness, SynthesisError>;

/// A fresh witness system holding ONE, ready for a piece's context.
fn fresh() -> WitnessCs {
    WitnessCs {
        input: vec![Scalar::ONE],
        aux: Vec::new(),
    }
}

/// A context value: allocated before the piece's mark, so not part of its witness.
fn known(
    cs: &mut WitnessCs,
    v: Scalar,
) -> std::result::Result<AllocatedNum<Scalar>, SynthesisError> {
    AllocatedNum::alloc(cs, || Ok(v))
}

/// Where a piece's own variables begin: everything allocated so far is context.
fn mark(cs: &WitnessCs) -> (usize, usize) {
    (cs.input.len(), cs.aux.len())
}

/// The variables allocated since `mark`.
fn since(mut cs: WitnessCs, (inputs, aux): (usize, usize), label: Option<Scalar>) -> PieceWitness {
    PieceWitness {
        input: cs.input.split_off(inputs),
        aux: cs.aux.split_off(aux),
        label,
    }
}

/// `leaf`'s inclusion under `root` along `path` (the circuit's own `enforce_inclusion`).
fn enforce_inclusion<H, U, V, W, CS>(
    cs: CS,
    path: AuthPath<H, U, V, W>,
    root: &AllocatedNum<Scalar>,
    leaf: &AllocatedNum<Scalar>,
) -> std::result::Result<(), SynthesisError>
where
    H: 'static + Hasher,
    U: 'static + PoseidonArity,
    V: 'static + PoseidonArity,
    W: 'static + PoseidonArity,
    CS: ConstraintSystem<Scalar>,
{
    PoRCircuit::<MerkleTreeWrapper<H, DiskStore<H::Domain>, U, V, W>>::synthesize(
        cs,
        Root::from_allocated::<CS>(leaf.clone()),
        path,
        Root::from_allocated::<CS>(root.clone()),
        true,
    )
}

/// The hash of a column of labels (the circuit's `hash_single_column`: Poseidon of arity 2
/// or 11, the only layer counts Filecoin has).
fn hash_single_column<CS: ConstraintSystem<Scalar>>(
    cs: CS,
    column: &[AllocatedNum<Scalar>],
) -> std::result::Result<AllocatedNum<Scalar>, SynthesisError> {
    match column.len() {
        2 => neptune::circuit::poseidon_hash::<CS, Scalar, U2>(
            cs,
            column.to_vec(),
            &POSEIDON_CONSTANTS_2,
        ),
        11 => neptune::circuit::poseidon_hash::<CS, Scalar, U11>(
            cs,
            column.to_vec(),
            &POSEIDON_CONSTANTS_11,
        ),
        // refused before any piece runs (`piecewise_witness`)
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// The circuit's form of the challenges' proofs. Its type lives in a private module of
/// storage-proofs-porep; it is inferred here from `StackedCircuit::synthesize`'s signature,
/// and its public fields are read where the type is known.
fn circuit_proofs<P, F, A, R1, R2, R3, R4, R5>(_synthesize: F, vanilla: Vec<A>) -> Vec<P>
where
    F: FnOnce(WitnessCs, R1, R2, R3, R4, R5, Vec<P>) -> std::result::Result<(), SynthesisError>,
    A: Into<P>,
{
    vanilla.into_iter().map(Into::into).collect()
}

/// The variables `challenges` allocate after the circuit's top level, computed in pieces on
/// rayon's pool: a list of (inputs, aux) whose concatenation, in order, is what the
/// sequential witness holds after the top level's variables.
///
/// Errors: a request whose challenges do not all have 2 or 11 layers (the only Filecoin
/// PoRep shapes) is invalid; a gadget's error is a synthesis error.
pub(super) fn piecewise_witness<Tree: 'static + MerkleTreeTrait>(
    values: TopValues,
    challenges: Vec<VanillaChallenge<Tree>>,
) -> crate::error::Result<Vec<Variables>> {
    let layers = match challenges.first() {
        Some(c) => c.labeling_proofs.len(),
        None => return Ok(Vec::new()),
    };
    if !matches!(layers, 2 | 11) || challenges.iter().any(|c| c.labeling_proofs.len() != layers) {
        return Err(Error::InvalidRequest(format!(
            "PoRep challenge proofs with {layers} layers, or disagreeing on it (Filecoin has 2 or 11)"
        )));
    }
    pieces::<Tree>(values, challenges, layers).map_err(|e| Error::Synthesis {
        partition: 0,
        reason: e.to_string(),
    })
}

/// [`piecewise_witness`] once the shape is checked.
fn pieces<Tree: 'static + MerkleTreeTrait>(
    values: TopValues,
    challenges: Vec<VanillaChallenge<Tree>>,
    layers: usize,
) -> std::result::Result<Vec<Variables>, SynthesisError> {
    let proofs = circuit_proofs(
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize::<WitnessCs>,
        challenges,
    );
    let missing = || SynthesisError::AssignmentMissing;

    // One piece of one challenge; `labels` are the challenge's labels (for the tail only).
    let piece = |c: usize,
                 piece: Piece,
                 labels: &[Scalar]|
     -> std::result::Result<PieceWitness, SynthesisError> {
        let p = &proofs[c];
        let mut cs = fresh();
        match piece {
            Piece::Head => {
                let comm_d = known(&mut cs, values.comm_d)?;
                let comm_c = known(&mut cs, values.comm_c)?;
                let at = mark(&cs);
                let data_leaf = AllocatedNum::alloc(&mut cs, || p.data_leaf.ok_or_else(missing))?;
                enforce_inclusion(&mut cs, p.comm_d_path.clone(), &comm_d, &data_leaf)?;
                for parent in p.drg_parents_proofs.iter().chain(&p.exp_parents_proofs) {
                    let (column, path) = parent.clone().alloc(&mut cs)?;
                    let hash = column.hash(&mut cs)?;
                    enforce_inclusion(&mut cs, path, &comm_c, &hash)?;
                }
                let challenge = UInt64::alloc(&mut cs, p.challenge)?;
                challenge.pack_into_input(&mut cs)?;
                Ok(since(cs, at, None))
            }
            Piece::Labeling(layer) => {
                let replica_id = known(&mut cs, values.replica_id)?;
                let replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(&mut cs)?);
                let challenge = UInt64::alloc(&mut cs, p.challenge)?;
                let mut drg = Vec::with_capacity(p.drg_parents_proofs.len());
                for parent in &p.drg_parents_proofs {
                    drg.push(parent.clone().alloc(&mut cs)?.0);
                }
                let mut exp = Vec::with_capacity(p.exp_parents_proofs.len());
                if layer > 1 {
                    for parent in &p.exp_parents_proofs {
                        exp.push(parent.clone().alloc(&mut cs)?.0);
                    }
                }
                let at = mark(&cs);
                let mut parents: Vec<Vec<Boolean>> = Vec::with_capacity(drg.len() + exp.len());
                for column in &drg {
                    parents.push(reverse_bit_numbering(
                        column.get_value(layer).to_bits_le(&mut cs)?,
                    ));
                }
                // expander parents hold no value for the first layer, hence `layer - 1`
                for column in &exp {
                    parents.push(reverse_bit_numbering(
                        column.get_value(layer - 1).to_bits_le(&mut cs)?,
                    ));
                }
                let label = create_label_circuit(
                    &mut cs,
                    &replica_id_bits,
                    expand_parents(parents, layer)?,
                    UInt32::constant(layer as u32),
                    challenge,
                )?;
                let value = label.get_value().ok_or_else(missing)?;
                Ok(since(cs, at, Some(value)))
            }
            Piece::Tail => {
                let comm_c = known(&mut cs, values.comm_c)?;
                let comm_r_last = known(&mut cs, values.comm_r_last)?;
                let data_leaf = AllocatedNum::alloc(&mut cs, || p.data_leaf.ok_or_else(missing))?;
                let mut column = Vec::with_capacity(labels.len());
                for &l in labels {
                    column.push(known(&mut cs, l)?);
                }
                let at = mark(&cs);
                let key = column.last().ok_or_else(missing)?;
                let encoded = encode(&mut cs, key, &data_leaf)?;
                enforce_inclusion(&mut cs, p.comm_r_last_path.clone(), &comm_r_last, &encoded)?;
                let hash = hash_single_column(&mut cs, &column)?;
                enforce_inclusion(&mut cs, p.comm_c_path.clone(), &comm_c, &hash)?;
                Ok(since(cs, at, None))
            }
        }
    };

    run_pieces(proofs.len(), layers, piece)
}

/// Runs every piece of `challenges` challenges of `layers` layers through `piece`, on
/// rayon's pool, and returns their variables in the circuit's order (each challenge's head,
/// labelings and tail).
fn run_pieces(
    challenges: usize,
    layers: usize,
    piece: impl Fn(usize, Piece, &[Scalar]) -> PieceResult + Sync,
) -> std::result::Result<Vec<Variables>, SynthesisError> {
    let missing = || SynthesisError::AssignmentMissing;
    // First the heads and the labelings of every challenge, all at once; then the tails,
    // which read the labels.
    let first: Vec<(usize, Piece)> = (0..challenges)
        .flat_map(|c| {
            std::iter::once((c, Piece::Head))
                .chain((1..=layers).map(move |l| (c, Piece::Labeling(l))))
        })
        .collect();
    let done = first
        .par_iter()
        .map(|&(c, p)| piece(c, p, &[]))
        .collect::<Result<Vec<_>, _>>()?;
    let per_challenge = layers + 1;
    let labels: Vec<Vec<Scalar>> = done
        .chunks(per_challenge)
        .map(|pieces| {
            pieces[1..]
                .iter()
                .map(|w| w.label.ok_or_else(missing))
                .collect()
        })
        .collect::<Result<_, _>>()?;
    let tails = (0..challenges)
        .into_par_iter()
        .map(|c| piece(c, Piece::Tail, &labels[c]))
        .collect::<Result<Vec<_>, _>>()?;

    let mut tails = tails.into_iter();
    let mut ordered = Vec::with_capacity(done.len() + challenges);
    for (i, w) in done.into_iter().enumerate() {
        ordered.push((w.input, w.aux));
        if i % per_challenge == layers {
            let tail = tails.next().ok_or_else(missing)?;
            ordered.push((tail.input, tail.aux));
        }
    }
    Ok(ordered)
}

/// The parents' label bits as the labeling hash reads them: repeated to 37 parents (above
/// layer 1, the expander parents follow the base ones).
fn expand_parents(
    parents: Vec<Vec<Boolean>>,
    layer: usize,
) -> std::result::Result<Vec<Vec<Boolean>>, SynthesisError> {
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
