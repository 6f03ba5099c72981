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
//! Heads and tails run the same gadgets, in the same order, in a fresh witness system whose
//! first variables are the values the piece reads (the "context": commitments, the parents'
//! columns, the labels). The piece's own variables are those allocated after the context. A
//! witness system never looks at variable indices (it skips every `enforce`), so the values
//! come out as in one sequential run; concatenated in the circuit's order, they are its
//! witness. Labelings, two thirds of the time through the gadgets, are computed natively
//! ([`label_witness`]: the values the SHA-256 gadgets would allocate, without running them);
//! the tests keep the gadget path as its reference.
//!
//! Invariant: [`piecewise_witness`] returns exactly the sequential witness of the same
//! circuit, variable for variable. The `pce_matches_full_synthesis_for_every_kind` tests
//! (`tests/cuzk_suite/`) check that on a real PoRep partition, and every proof is verified
//! before it is returned.
//! The pieces' layout follows storage-proofs-porep 19.1; a release that changes the circuit
//! also changes the recorded circuit's shape, which `cuzk_pce::evaluate` refuses.

use bellpepper_core::{ConstraintSystem, SynthesisError};
use bellperson::gadgets::num::AllocatedNum;
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
};
use storage_proofs_porep::stacked::{self, StackedCircuit};

use super::label_witness;
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
    pieces::<Tree>(values, challenges, layers, Labeler::Native).map_err(|e| Error::Synthesis {
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

/// [`piecewise_witness`] once the shape is checked.
fn pieces<Tree: 'static + MerkleTreeTrait>(
    values: TopValues,
    challenges: Vec<VanillaChallenge<Tree>>,
    layers: usize,
    labeler: Labeler,
) -> std::result::Result<Vec<Variables>, SynthesisError> {
    let _span = tracing::debug_span!(
        "porep piecewise witness",
        challenges = challenges.len(),
        layers
    )
    .entered();
    let count = challenges.len();
    run_pieces(
        count,
        layers,
        piece_fn::<Tree>(values, challenges, labeler)?,
    )
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

/// One piece of one of `challenges` as a function of the challenge's index, the piece and
/// (for the tail only) the challenge's labels.
fn piece_fn<Tree: 'static + MerkleTreeTrait>(
    values: TopValues,
    challenges: Vec<VanillaChallenge<Tree>>,
    labeler: Labeler,
) -> std::result::Result<impl Fn(usize, Piece, &[Scalar]) -> PieceResult + Sync, SynthesisError> {
    let proofs = circuit_proofs(
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize::<WitnessCs>,
        challenges,
    );
    let missing = || SynthesisError::AssignmentMissing;

    // Each challenge's parents' columns, read once for all its labelings.
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
                      labels: &[Scalar]|
          -> std::result::Result<PieceWitness, SynthesisError> {
        let p = proofs.get(c).ok_or_else(missing)?;
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
            Piece::Labeling(layer) => match labeler {
                Labeler::Native => {
                    let node = p.challenge.ok_or_else(missing)?;
                    let parents = parent_labels(columns.get(c).ok_or_else(missing)?, layer)?;
                    let l = label_witness::labeling(&values.replica_id, layer, node, &parents)?;
                    Ok(PieceWitness {
                        input: Vec::new(),
                        aux: l.aux,
                        label: Some(l.label),
                    })
                }
                #[cfg(test)]
                Labeler::Gadgets => {
                    use bellperson::gadgets::{boolean::Boolean, uint32::UInt32};
                    use storage_proofs_core::util::reverse_bit_numbering;
                    use storage_proofs_porep::stacked::create_label_circuit;

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
                    Ok(since(cs, at, Some(value)))
                }
            },
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
    Ok(piece)
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
                let t = Instant::now();
                let a = native(c, Piece::Labeling(layer), &[]).expect("native labeling");
                by_native += t.elapsed();
                let t = Instant::now();
                let b = gadgets(c, Piece::Labeling(layer), &[]).expect("gadget labeling");
                by_gadgets += t.elapsed();
                assert!(a.input == b.input, "challenge {c} layer {layer}: inputs");
                assert!(a.aux == b.aux, "challenge {c} layer {layer}: aux");
                assert_eq!(a.label, b.label, "challenge {c} layer {layer}: label");
                compared += a.aux.len();
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
