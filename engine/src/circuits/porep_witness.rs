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
//! Each piece's values are computed natively, without a constraint system: the values the
//! gadgets would allocate, in their order ([`label_witness`] for the labelings,
//! [`por_witness`] for the inclusion paths, [`poseidon_witness`] for the column hashes).
//! The values a piece reads (the commitments, the parents' columns, the labels) are
//! allocated by earlier pieces; a piece's own variables are those it allocates. A witness
//! system never looks at variable indices, so the pieces' values, concatenated in the
//! circuit's order, are its witness. Through the gadgets, on one thread, a 32 GiB
//! partition's labelings took about 27 s and its heads about 12 s (8 of them tree D's
//! SHA-256 paths). The tests keep the gadget labeling as a reference; each mirror module
//! compares itself with its gadgets. Each path's root is checked against its commitment
//! here, as the circuit constrains it, so a bad input is a synthesis error.
//!
//! Invariant: [`piecewise_witness`] returns exactly the sequential witness of the same
//! circuit, variable for variable. The `pce_matches_full_synthesis_for_every_kind` tests
//! (`tests/cuzk_suite/`) check that on a real PoRep partition, and every proof is verified
//! before it is returned.
//! The pieces' layout follows storage-proofs-porep 19.1; a release that changes the circuit
//! also changes the recorded circuit's shape, which `cuzk_pce::evaluate` refuses.

use bellpepper_core::SynthesisError;
#[cfg(test)]
use bellperson::gadgets::num::AllocatedNum;
use blstrs::Scalar;
use cuzk_pce::WitnessCs;
use ff::Field;
use filecoin_hashers::{POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::DefaultPieceHasher;
use rayon::prelude::*;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, StackedCircuit};

use super::label_witness;
use super::por_witness::{self, PathLevel, TreeHash};
use super::poseidon_witness;
use super::sha256_witness::Aux;
use crate::error::Error;

/// A challenge's vanilla proof, as a C1 output holds it.
type VanillaChallenge<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

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

/// What one piece allocated besides its aux values (which it pushes to the buffer it is
/// given): its inputs and (labelings) the label.
struct PieceWitness {
    input: Vec<Scalar>,
    label: Option<Scalar>,
}

/// A piece's inputs and label, or why it could not be computed.
type PieceResult = std::result::Result<PieceWitness, SynthesisError>;

/// A fresh witness system holding ONE, ready for a piece's context.
fn fresh() -> WitnessCs {
    WitnessCs {
        input: vec![Scalar::ONE],
        aux: Vec::new(),
    }
}

/// A context value: allocated before the piece's mark, so not part of its witness.
#[cfg(test)]
fn known(
    cs: &mut WitnessCs,
    v: Scalar,
) -> std::result::Result<AllocatedNum<Scalar>, SynthesisError> {
    AllocatedNum::alloc(cs, || Ok(v))
}

/// Where a piece's own variables begin: everything allocated so far is context.
#[cfg(test)]
fn mark(cs: &WitnessCs) -> (usize, usize) {
    (cs.input.len(), cs.aux.len())
}

/// The variables allocated since `mark`: the aux values pushed to `out`.
#[cfg(test)]
fn since(
    mut cs: WitnessCs,
    (inputs, aux): (usize, usize),
    label: Option<Scalar>,
    out: &mut Aux,
) -> PieceWitness {
    out.0.extend_from_slice(&cs.aux[aux..]);
    PieceWitness {
        input: cs.input.split_off(inputs),
        label,
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

/// Appends the variables `challenges` allocate after the circuit's top level to `input`
/// and `aux` (which hold the top level's), computed in pieces on rayon's pool: afterwards
/// they hold what the sequential witness holds.
///
/// Errors: a request whose challenges do not all have 2 or 11 layers (the only Filecoin
/// PoRep shapes) is invalid; a gadget's error is a synthesis error.
pub(super) fn piecewise_witness<Tree: 'static + MerkleTreeTrait>(
    values: TopValues,
    challenges: Vec<VanillaChallenge<Tree>>,
    input: &mut Vec<Scalar>,
    aux: &mut Vec<Scalar>,
) -> crate::error::Result<()> {
    let layers = match challenges.first() {
        Some(c) => c.labeling_proofs.len(),
        None => return Ok(()),
    };
    if !matches!(layers, 2 | 11) || challenges.iter().any(|c| c.labeling_proofs.len() != layers) {
        return Err(Error::InvalidRequest(format!(
            "PoRep challenge proofs with {layers} layers, or disagreeing on it (Filecoin has 2 or 11)"
        )));
    }
    let count = challenges.len();
    let pieces = piece_fn::<Tree>(values, challenges, Labeler::Native).and_then(|piece| {
        let _span = tracing::debug_span!("porep piecewise witness", layers).entered();
        run_pieces(count, layers, piece, input, aux)
    });
    pieces.map_err(|e| Error::Synthesis {
        partition: 0,
        reason: e.to_string(),
    })
}

/// How a labeling piece is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Labeler {
    /// Natively ([`label_witness`]): the product's path.
    Native,
    /// By storage-proofs-porep's gadgets in a witness system: the reference.
    #[cfg(test)]
    Gadgets,
}

/// The parents' label rows of one challenge: (base parents, expander parents), each a
/// column of one label per layer.
type ParentColumns = (Vec<Vec<Scalar>>, Vec<Vec<Scalar>>);

/// The parents' labels a labeling at `layer` (1-based) hashes: the base parents' labels at
/// this layer, then (above layer 1) the expander parents' at the layer below.
fn parent_labels(
    (drg, exp): &ParentColumns,
    layer: usize,
) -> std::result::Result<Vec<Scalar>, SynthesisError> {
    let missing = || SynthesisError::AssignmentMissing;
    let at = |column: &Vec<Scalar>, layer: usize| {
        layer
            .checked_sub(1)
            .and_then(|row| column.get(row))
            .copied()
            .ok_or_else(missing)
    };
    let mut labels = Vec::with_capacity(drg.len() + exp.len());
    for column in drg {
        labels.push(at(column, layer)?);
    }
    if layer > 1 {
        for column in exp {
            labels.push(at(column, layer - 1)?);
        }
    }
    Ok(labels)
}

/// The rows of each of `parents`' columns, allocated by `alloc` in a scratch system (the
/// circuit's columns keep their rows private; their type is the circuit's own, named only
/// through `alloc`).
fn column_rows<C: Clone>(
    parents: &[C],
    alloc: impl Fn(C, &mut WitnessCs) -> std::result::Result<(), SynthesisError>,
) -> std::result::Result<Vec<Vec<Scalar>>, SynthesisError> {
    parents
        .iter()
        .map(|parent| {
            let mut scratch = fresh();
            alloc(parent.clone(), &mut scratch)?;
            Ok(scratch.aux)
        })
        .collect()
}

/// A challenge's inclusion paths, read from its vanilla proof.
struct Paths {
    /// The data leaf's in tree D.
    d: Vec<PathLevel>,
    /// The encoded node's in tree R.
    r: Vec<PathLevel>,
    /// The challenged column's in tree C.
    c_x: Vec<PathLevel>,
    /// Each parent's column's in tree C: base parents, then expander parents.
    parents: Vec<Vec<PathLevel>>,
}

impl Paths {
    fn of<Tree: 'static + MerkleTreeTrait>(
        c: &VanillaChallenge<Tree>,
    ) -> std::result::Result<Paths, SynthesisError> {
        let columns = &c.replica_column_proofs;
        Ok(Paths {
            d: c.comm_d_proofs.as_options(),
            r: c.comm_r_last_proof.as_options(),
            c_x: column_path(&columns.c_x)?,
            parents: columns
                .drg_parents
                .iter()
                .chain(&columns.exp_parents)
                .map(column_path)
                .collect::<std::result::Result<_, _>>()?,
        })
    }
}

/// The inclusion path of a vanilla column proof. storage-proofs-porep keeps the proof's
/// fields to its crate; its serialized form names them, so the path is read back from it.
fn column_path<P: MerkleProofTrait>(
    proof: &stacked::ColumnProof<P>,
) -> std::result::Result<Vec<PathLevel>, SynthesisError> {
    #[derive(serde::Deserialize)]
    #[serde(bound = "P: serde::de::DeserializeOwned")]
    struct Path<P> {
        inclusion_proof: P,
    }
    let value = serde_json::to_value(proof).map_err(|_| SynthesisError::AssignmentMissing)?;
    let path: Path<P> =
        serde_json::from_value(value).map_err(|_| SynthesisError::AssignmentMissing)?;
    Ok(path.inclusion_proof.as_options())
}

/// The circuit's constraint that a path leads to its root, checked here so that a bad
/// input is a synthesis error rather than a proof that fails verification.
fn check_root(computed: Scalar, root: Scalar) -> std::result::Result<(), SynthesisError> {
    if computed == root {
        Ok(())
    } else {
        Err(SynthesisError::Unsatisfiable)
    }
}

/// storage-proofs-porep's `hash_single_column`: Poseidon of arity 2 or 11, the only layer
/// counts Filecoin has.
fn column_hash(column: &[Scalar], aux: &mut Aux) -> std::result::Result<Scalar, SynthesisError> {
    match column.len() {
        2 => poseidon_witness::hash(column, &POSEIDON_CONSTANTS_2, aux),
        11 => poseidon_witness::hash(column, &POSEIDON_CONSTANTS_11, aux),
        // refused before any piece runs (`piecewise_witness`)
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// A challenge's head: the data leaf and its inclusion in tree D, each parent's column,
/// its hash and its inclusion in tree C, then the challenge as 64 bits packed into an
/// input.
fn head(
    values: &TopValues,
    data_leaf: Scalar,
    node: u64,
    paths: &Paths,
    (drg, exp): &ParentColumns,
    aux: &mut Aux,
) -> PieceResult {
    let mut input = Vec::new();
    aux.0.push(data_leaf);
    let root = por_witness::inclusion(data_leaf, &paths.d, TreeHash::Sha256, aux, &mut input)?;
    check_root(root, values.comm_d)?;
    if drg.len() + exp.len() != paths.parents.len() {
        return Err(SynthesisError::AssignmentMissing);
    }
    for (rows, path) in drg.iter().chain(exp).zip(&paths.parents) {
        aux.0.extend_from_slice(rows);
        let hash = column_hash(rows, aux)?;
        let root = por_witness::inclusion(hash, path, TreeHash::Poseidon, aux, &mut input)?;
        check_root(root, values.comm_c)?;
    }
    // `UInt64::alloc` allocates the challenge's bits; `pack_into_input`, one input
    for i in 0..64 {
        aux.bit(node >> i & 1 == 1);
    }
    input.push(Scalar::from(node));
    Ok(PieceWitness { input, label: None })
}

/// A challenge's tail: the encoding of its last label and the data leaf, its inclusion in
/// tree R, the challenged column's hash (`labels`) and its inclusion in tree C.
fn tail(
    values: &TopValues,
    data_leaf: Scalar,
    labels: &[Scalar],
    paths: &Paths,
    aux: &mut Aux,
) -> PieceResult {
    let key = labels.last().ok_or(SynthesisError::AssignmentMissing)?;
    let encoded = *key + data_leaf;
    let mut input = Vec::new();
    aux.0.push(encoded);
    let root = por_witness::inclusion(encoded, &paths.r, TreeHash::Poseidon, aux, &mut input)?;
    check_root(root, values.comm_r_last)?;
    let hash = column_hash(labels, aux)?;
    let root = por_witness::inclusion(hash, &paths.c_x, TreeHash::Poseidon, aux, &mut input)?;
    check_root(root, values.comm_c)?;
    Ok(PieceWitness { input, label: None })
}

/// One piece of one of `challenges` as a function of the challenge's index, the piece,
/// (for the tail only) the challenge's labels, and the buffer its aux values go to.
fn piece_fn<Tree: 'static + MerkleTreeTrait>(
    values: TopValues,
    challenges: Vec<VanillaChallenge<Tree>>,
    labeler: Labeler,
) -> std::result::Result<
    impl Fn(usize, Piece, &[Scalar], &mut Aux) -> PieceResult + Sync,
    SynthesisError,
> {
    // the paths, read from the vanilla proofs before they become the circuit's
    let paths = challenges
        .iter()
        .map(Paths::of)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let proofs = circuit_proofs(
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize::<WitnessCs>,
        challenges,
    );
    let missing = || SynthesisError::AssignmentMissing;

    // Each challenge's parents' columns, read once for all its pieces.
    let mut columns: Vec<ParentColumns> = Vec::with_capacity(proofs.len());
    for p in &proofs {
        let drg = column_rows(p.drg_parents_proofs.as_slice(), |c, cs| {
            c.alloc(cs).map(drop)
        })?;
        let exp = column_rows(p.exp_parents_proofs.as_slice(), |c, cs| {
            c.alloc(cs).map(drop)
        })?;
        columns.push((drg, exp));
    }

    let piece = move |c: usize,
                      piece: Piece,
                      labels: &[Scalar],
                      aux: &mut Aux|
          -> std::result::Result<PieceWitness, SynthesisError> {
        let p = proofs.get(c).ok_or_else(missing)?;
        let data_leaf = p.data_leaf.ok_or_else(missing)?;
        let node = p.challenge.ok_or_else(missing)?;
        let paths = paths.get(c).ok_or_else(missing)?;
        let columns = columns.get(c).ok_or_else(missing)?;
        match piece {
            Piece::Head => head(&values, data_leaf, node, paths, columns, aux),
            Piece::Labeling(layer) => match labeler {
                Labeler::Native => {
                    let parents = parent_labels(columns, layer)?;
                    let label =
                        label_witness::labeling(&values.replica_id, layer, node, &parents, aux)?;
                    Ok(PieceWitness {
                        input: Vec::new(),
                        label: Some(label),
                    })
                }
                #[cfg(test)]
                Labeler::Gadgets => {
                    use bellperson::gadgets::{boolean::Boolean, uint32::UInt32};
                    use storage_proofs_core::{
                        gadgets::uint64::UInt64, util::reverse_bit_numbering,
                    };
                    use storage_proofs_porep::stacked::create_label_circuit;

                    let mut cs = fresh();
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
                        label_witness::expand_parents(parents, layer)?,
                        UInt32::constant(layer as u32),
                        challenge,
                    )?;
                    let value = label.get_value().ok_or_else(missing)?;
                    Ok(since(cs, at, Some(value), aux))
                }
            },
            Piece::Tail => tail(&values, data_leaf, labels, paths, aux),
        }
    };
    Ok(piece)
}

/// Room for `more` values after `aux`'s: a vector a proved partition left when one is kept
/// (its pages mapped already, [`cuzk_pce::buffers`]), else a new one.
fn make_room(aux: &mut Vec<Scalar>, more: usize) {
    if aux.capacity() - aux.len() < more {
        let mut room = cuzk_pce::buffers::take_empty(aux.len() + more);
        room.extend_from_slice(aux);
        *aux = room;
    }
}

/// Runs every piece of `challenges` challenges of `layers` layers through `piece`, on
/// rayon's pool, and appends their inputs and aux values to `input` and `aux` in the
/// circuit's order (each challenge's head, labelings and tail).
///
/// Every challenge allocates as much as the first (the circuit's shape does not depend on
/// the values), so after the first challenge's pieces `aux` grows once, filled in parallel,
/// and each piece's values are copied into their place from a buffer its thread reuses: a
/// 32 GiB partition's 4.2 GB witness is not built twice, nor its pages faulted in twice.
///
/// Errors: a piece's error; a piece allocating other than the first challenge's piece
/// did (`Unsatisfiable`).
fn run_pieces(
    challenges: usize,
    layers: usize,
    piece: impl Fn(usize, Piece, &[Scalar], &mut Aux) -> PieceResult + Sync,
    input: &mut Vec<Scalar>,
    aux: &mut Vec<Scalar>,
) -> std::result::Result<(), SynthesisError> {
    let missing = || SynthesisError::AssignmentMissing;
    if challenges == 0 {
        return Ok(());
    }
    let first_pieces = |c: usize| {
        std::iter::once(Piece::Head)
            .chain((1..=layers).map(Piece::Labeling))
            .map(move |p| (c, p))
    };

    // The first challenge into buffers of its own: its pieces' sizes are every challenge's.
    let first: Vec<(PieceWitness, Vec<Scalar>)> = first_pieces(0)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(c, p)| {
            let mut own = Aux(Vec::new());
            piece(c, p, &[], &mut own).map(|w| (w, own.0))
        })
        .collect::<Result<_, _>>()?;
    let labels0: Vec<Scalar> = first[1..]
        .iter()
        .map(|(w, _)| w.label.ok_or_else(missing))
        .collect::<Result<_, _>>()?;
    let mut tail0 = Aux(Vec::new());
    let tail0_witness = piece(0, Piece::Tail, &labels0, &mut tail0)?;
    let sizes: Vec<usize> = first
        .iter()
        .map(|(_, a)| a.len())
        .chain(std::iter::once(tail0.0.len()))
        .collect();
    let per_challenge: usize = sizes.iter().sum();

    // The whole witness's room at once, its pages touched on every thread.
    let base = aux.len();
    make_room(aux, per_challenge * challenges);
    aux.par_extend(rayon::iter::repeat_n(
        Scalar::ZERO,
        per_challenge * challenges,
    ));
    let mut slots: Vec<Vec<&mut [Scalar]>> = Vec::with_capacity(challenges);
    for mut rest in aux[base..].chunks_mut(per_challenge) {
        let mut own = Vec::with_capacity(sizes.len());
        for &len in &sizes {
            let (slot, after) = rest.split_at_mut(len);
            own.push(slot);
            rest = after;
        }
        slots.push(own);
    }
    let mut slots = slots.into_iter();
    let mut slots0 = slots.next().ok_or_else(missing)?;
    for (slot, (_, values)) in slots0.iter_mut().zip(&first) {
        slot.copy_from_slice(values);
    }
    if let Some(slot) = slots0.last_mut() {
        slot.copy_from_slice(&tail0.0);
    }

    // Then every other challenge: heads and labelings at once, then the tails, which read
    // the labels; each into its place.
    let mut tails_slots = Vec::with_capacity(challenges - 1);
    let mut work = Vec::with_capacity((challenges - 1) * (layers + 1));
    for (c, mut own) in (1..challenges).zip(slots) {
        let tail = own.pop().ok_or_else(missing)?;
        tails_slots.push((c, tail));
        work.extend(first_pieces(c).zip(own).map(|((c, p), slot)| (c, p, slot)));
    }
    let into_place = |scratch: &mut Aux,
                      (c, p, slot): (usize, Piece, &mut [Scalar]),
                      labels: &[Scalar]|
     -> PieceResult {
        scratch.0.clear();
        let w = piece(c, p, labels, scratch)?;
        if scratch.0.len() != slot.len() {
            return Err(SynthesisError::Unsatisfiable);
        }
        slot.copy_from_slice(&scratch.0);
        Ok(w)
    };
    let done: Vec<PieceWitness> = work
        .into_par_iter()
        .map_init(|| Aux(Vec::new()), |scratch, w| into_place(scratch, w, &[]))
        .collect::<Result<_, _>>()?;
    let labels: Vec<Vec<Scalar>> = done
        .chunks(layers + 1)
        .map(|pieces| {
            pieces[1..]
                .iter()
                .map(|w| w.label.ok_or_else(missing))
                .collect()
        })
        .collect::<Result<_, _>>()?;
    let tails: Vec<PieceWitness> = tails_slots
        .into_par_iter()
        .zip(labels.par_iter())
        .map_init(
            || Aux(Vec::new()),
            |scratch, ((c, slot), labels)| into_place(scratch, (c, Piece::Tail, slot), labels),
        )
        .collect::<Result<_, _>>()?;

    // the inputs, in the circuit's order
    let mut firsts = first.iter().map(|(w, _)| w).chain(done.iter());
    let tails = std::iter::once(&tail0_witness).chain(tails.iter());
    for tail in tails {
        for _ in 0..=layers {
            input.extend_from_slice(&firsts.next().ok_or_else(missing)?.input);
        }
        input.extend_from_slice(&tail.input);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use ff::PrimeField;
    use filecoin_proofs::{SealCommitPhase1Output, SectorShape32GiB};
    use sha2::{Digest, Sha256};

    use super::*;
    use crate::circuits;
    use crate::gen::sparse::porep;
    use crate::kind::{ProofKind, RegisteredProof, SectorSize};

    /// SHA-256 digests of `values` by chunks of a million: two witnesses compared without
    /// holding both.
    fn digests(values: &[Scalar]) -> Vec<[u8; 32]> {
        values
            .chunks(1 << 20)
            .map(|chunk| {
                let mut h = Sha256::new();
                for v in chunk {
                    h.update(v.to_repr());
                }
                h.finalize().into()
            })
            .collect()
    }

    /// A toy piece: its values name the challenge, the piece and the value's place; the
    /// tail of challenge `longer` allocates one value more.
    fn toy(longer: usize) -> impl Fn(usize, Piece, &[Scalar], &mut Aux) -> PieceResult + Sync {
        move |c, p, labels, aux| {
            let k = match p {
                Piece::Head => 0,
                Piece::Labeling(l) => l,
                Piece::Tail => 9,
            };
            let n = 3 + k % 2 + usize::from(p == Piece::Tail && c == longer);
            for i in 0..n {
                aux.0.push(Scalar::from((c * 100 + k * 10 + i) as u64));
            }
            let sum = labels.iter().fold(Scalar::ZERO, |a, b| a + b);
            Ok(PieceWitness {
                input: vec![Scalar::from(c as u64) + sum],
                label: match p {
                    Piece::Labeling(l) => Some(Scalar::from((c * 100 + l) as u64)),
                    _ => None,
                },
            })
        }
    }

    /// Pieces land in the circuit's order (each challenge's head, labelings, tail; the
    /// tails given their labels) after what the buffers held, as one sequential run puts
    /// them; a piece allocating other than the first challenge's is refused.
    #[test]
    fn pieces_land_in_order_and_other_sizes_are_refused() {
        let (challenges, layers) = (5, 2);
        let piece = toy(usize::MAX);
        let (mut want_input, mut want_aux) = (vec![Scalar::ONE], Aux(vec![Scalar::ONE]));
        for c in 0..challenges {
            let mut labels = Vec::new();
            for p in std::iter::once(Piece::Head).chain((1..=layers).map(Piece::Labeling)) {
                let w = piece(c, p, &[], &mut want_aux).expect("piece");
                want_input.extend(w.input);
                labels.extend(w.label);
            }
            let w = piece(c, Piece::Tail, &labels, &mut want_aux).expect("tail");
            want_input.extend(w.input);
        }
        let (mut input, mut aux) = (vec![Scalar::ONE], vec![Scalar::ONE]);
        run_pieces(challenges, layers, &piece, &mut input, &mut aux).expect("pieces");
        assert_eq!(input, want_input);
        assert!(aux == want_aux.0);
        let (mut input, mut aux) = (Vec::new(), Vec::new());
        assert!(run_pieces(challenges, layers, toy(3), &mut input, &mut aux).is_err());
    }

    /// Partition 0 of a sparse 32 GiB PoRep: every labeling piece computed natively equals
    /// the gadgets' (both timed on this one thread), and the whole witness computed in
    /// pieces on a pool of one thread equals full synthesis.
    #[test]
    #[ignore = "a 130M-variable partition: minutes and about 9 GB"]
    fn sparse_32gib_labelings_and_witness_equal_the_gadgets() {
        let proof = RegisteredProof::latest(ProofKind::PorepC2, SectorSize::S32GiB);
        let sparse = porep(proof, 3).expect("a sparse 32 GiB sector");
        let c1: SealCommitPhase1Output<SectorShape32GiB> =
            serde_json::from_slice(&sparse.c1_json).expect("C1 JSON");
        let challenges = c1.vanilla_proofs[0].clone();
        let layers = challenges[0].labeling_proofs.len();
        let values = TopValues {
            replica_id: c1.replica_id.into(),
            comm_d: Scalar::ZERO,
            comm_c: Scalar::ZERO,
            comm_r_last: Scalar::ZERO,
        };
        let count = challenges.len();
        let native = piece_fn::<SectorShape32GiB>(values, challenges.clone(), Labeler::Native)
            .expect("pieces");
        let gadgets =
            piece_fn::<SectorShape32GiB>(values, challenges, Labeler::Gadgets).expect("pieces");
        let (mut by_native, mut by_gadgets, mut compared) = (Duration::ZERO, Duration::ZERO, 0);
        for c in 0..count {
            for layer in 1..=layers {
                let (mut a_aux, mut b_aux) = (Aux(Vec::new()), Aux(Vec::new()));
                let t = Instant::now();
                let a = native(c, Piece::Labeling(layer), &[], &mut a_aux).expect("native");
                by_native += t.elapsed();
                let t = Instant::now();
                let b = gadgets(c, Piece::Labeling(layer), &[], &mut b_aux).expect("gadgets");
                by_gadgets += t.elapsed();
                assert!(a.input == b.input, "challenge {c} layer {layer}: inputs");
                assert!(a_aux.0 == b_aux.0, "challenge {c} layer {layer}: aux");
                assert_eq!(a.label, b.label, "challenge {c} layer {layer}: label");
                compared += a_aux.0.len();
            }
        }
        eprintln!(
            "32 GiB partition 0: {} labelings ({compared} aux) equal; gadgets {:.2}s, native {:.2}s",
            count * layers,
            by_gadgets.as_secs_f64(),
            by_native.as_secs_f64()
        );
        drop((native, gadgets));

        let mut plan = circuits::plan(&sparse.request).expect("plans");
        let job = plan.partitions.swap_remove(0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("a pool");
        let circuit = job.circuit.clone_box();
        let t = Instant::now();
        let (input, aux) = pool
            .install(move || circuit.witness_parallel())
            .expect("witness in pieces");
        let in_pieces = t.elapsed();
        let (pieces_len, pieces_digests) = (aux.len(), digests(&aux));
        drop(aux);
        let t = Instant::now();
        let (full_input, full_aux) = job.circuit.witness().expect("full synthesis");
        let full = t.elapsed();
        eprintln!(
            "32 GiB partition 0: {} aux; in pieces on 1 thread {:.1}s, full synthesis {:.1}s",
            full_aux.len(),
            in_pieces.as_secs_f64(),
            full.as_secs_f64()
        );
        assert_eq!(input, full_input);
        assert_eq!(pieces_len, full_aux.len());
        let full_digests = digests(&full_aux);
        let first = (0..full_digests.len()).find(|&i| pieces_digests[i] != full_digests[i]);
        assert_eq!(first, None, "first differing chunk of 2^20 aux values");
    }
}
