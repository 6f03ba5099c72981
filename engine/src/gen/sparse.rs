//! Production-size test inputs without sealing: sparse sectors.
//!
//! A C1 output opens only the challenged nodes, their parents' columns and the Merkle paths
//! to them, so a sector needs values only there. A *sparse* sector holds all-zero data (a
//! committed-capacity sector: `comm_d` is the root of the zero tree), a random label for every
//! parent cell (drawn as a masked SHA-256 output, as real labels are), the challenged cells'
//! labels computed with the real labelling function in (layer, node) order, and a random field
//! element for every subtree no path opens (not a default hash: repeated values would make
//! MSM timings unrepresentative). Parents come from the real graph, computed per node, so no
//! parent cache is needed. A 32 GiB PoRep C1 builds in seconds on two cores.
//!
//! Only interactive PoRep can be sparse: synthetic and non-interactive PoRep draw their
//! challenges from `comm_r`, which depends on the challenged leaves. WindowPoSt and
//! WinningPoSt challenges depend only on the randomness and sector ids, so their sectors are
//! sparse too (a random `comm_c` and a `tree_r_last` with the challenged leaves).
//!
//! Every input is checked with filecoin-proofs' vanilla verifier before it is returned. The
//! sectors exist nowhere but in these proofs: they are test inputs, never for a chain.

use std::collections::{BTreeMap, BTreeSet};

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::{sha256::Sha256Hasher, Domain, HashFunction, Hasher};
use filecoin_proofs::{
    generate_fallback_sector_challenges, parameters::setup_params, partition_vanilla_proofs,
    DefaultPieceHasher, FallbackPoStSectorProof, SealCommitPhase1Output,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use storage_proofs_core::{
    drgraph::Graph,
    merkle::{MerkleProof, MerkleTreeTrait},
    proof::ProofScheme,
    sector::SectorId,
};
use storage_proofs_porep::stacked::{
    self, Column, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof, StackedDrg,
    TOTAL_PARENTS,
};
use storage_proofs_post::fallback;

use super::sparse_tree::{shape_arities, uniform_arities, zero_roots, SparseTree};
use super::{fr_bytes, prover_id_from_miner, GEN_MINER, GEN_SECTOR};
use crate::circuits::{post, with_shape};
use crate::error::{Error, Result};
use crate::kind::{ProofKind, RegisteredProof};
use crate::request::{PostInputs, ProofInputs, ProofRequest, SectorRef};

/// A sparse PoRep C1: the request and the C1 output as filecoin-proofs serializes it.
#[derive(Debug)]
pub struct SparsePorep {
    /// The C2 request (miner [`GEN_MINER`], sector [`GEN_SECTOR`]).
    pub request: ProofRequest,
    /// `SealCommitPhase1Output` JSON as filecoin-proofs writes it.
    pub c1_json: Vec<u8>,
    /// How many distinct columns the proofs open (challenges and their parents).
    pub columns: usize,
}

/// Builds an interactive PoRep C1 output of a sparse committed-capacity sector of any size,
/// checked with filecoin-proofs' vanilla verifier, as a C2 request.
#[tracing::instrument(skip_all, fields(seal_proof = %seal_proof, seed))]
pub fn porep(seal_proof: RegisteredProof, seed: u64) -> Result<SparsePorep> {
    if seal_proof.kind != ProofKind::PorepC2 {
        return Err(Error::InvalidRequest(format!(
            "{seal_proof} is not a seal proof"
        )));
    }
    if let Some(feature) = seal_proof.porep_feature() {
        return Err(Error::InvalidRequest(format!(
            "{seal_proof} ({feature:?}) draws its challenges from comm_r, so its sector cannot be sparse; seal one with `cuzk gen --registered-proof` at a test size"
        )));
    }
    with_shape!(seal_proof.sector_size, Tree => porep_for::<Tree>(seal_proof, seed))
}

/// A label as the labelling function makes one: SHA-256 of the replica id, layer, node and
/// parents' labels, masked to a field element.
fn label<D: Domain>(replica_id: &D, layer: usize, node: u64, parents: &[D]) -> Result<D> {
    let mut h = Sha256::new();
    let mut buf = [0u8; 64];
    buf[..32].copy_from_slice(replica_id.as_ref());
    buf[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
    buf[36..44].copy_from_slice(&node.to_be_bytes());
    h.update(buf);
    for p in parents {
        h.update(p.as_ref());
    }
    masked::<D>(h.finalize().into())
}

/// 32 bytes with the top two bits cleared, as a field element (always below the modulus).
fn masked<D: Domain>(mut bytes: [u8; 32]) -> Result<D> {
    bytes[31] &= 0x3f;
    D::try_from_bytes(&bytes).map_err(|e| Error::Filecoin(format!("label: {e:#}")))
}

/// The labels of a sparse sector's cells, by (layer, node): the challenged cells computed
/// layer by layer, every other cell a proof reads drawn at random when first asked for.
struct Labels<D> {
    cells: BTreeMap<(usize, u64), D>,
    /// Draws the random cells, and the sparse trees' unopened nodes.
    rng: ChaCha20Rng,
    /// Base (DRG) parents of a node; the expander parents follow them.
    base_degree: usize,
}

impl<D: Domain> Labels<D> {
    /// The parents' labels the labelling function hashes for `layer` (1-based): the base
    /// (DRG) parents in this layer, then (above layer 1) the expander parents in the layer
    /// below, repeated in turn up to [`TOTAL_PARENTS`].
    fn parents(&mut self, parents: &[u32], layer: usize) -> Result<Vec<D>> {
        let mut labels = Vec::with_capacity(parents.len());
        for (i, &p) in parents.iter().enumerate() {
            let at = if i < self.base_degree {
                layer
            } else {
                layer - 1
            };
            if at == 0 {
                // layer 1 has no expander parents
                break;
            }
            labels.push(self.cell(at, u64::from(p))?);
        }
        Ok(labels.iter().copied().cycle().take(TOTAL_PARENTS).collect())
    }

    /// The label of a cell, drawn at random the first time an unchallenged cell is asked
    /// for.
    fn cell(&mut self, layer: usize, node: u64) -> Result<D> {
        if let Some(d) = self.cells.get(&(layer, node)) {
            return Ok(*d);
        }
        let d = masked::<D>(self.rng.gen())?;
        self.cells.insert((layer, node), d);
        Ok(d)
    }

    /// Labels the challenged nodes (the keys of `parents`) layer by layer, in node order, so
    /// that every parent that is itself challenged already holds its real label; returns
    /// the column (every layer's label) of each opened node: the challenged ones and their
    /// parents.
    fn label_columns(
        &mut self,
        replica_id: &D,
        parents: &Parents,
        layers: usize,
    ) -> Result<BTreeMap<u64, Vec<D>>> {
        for layer in 1..=layers {
            for (&c, p) in parents {
                let ps = self.parents(p, layer)?;
                let l = label(replica_id, layer, c, &ps)?;
                self.cells.insert((layer, c), l);
            }
        }
        let opened: BTreeSet<u64> = parents
            .iter()
            .flat_map(|(&c, p)| std::iter::once(c).chain(p.iter().map(|&x| u64::from(x))))
            .collect();
        let mut columns = BTreeMap::new();
        for &n in &opened {
            let rows = (1..=layers)
                .map(|l| self.cell(l, n))
                .collect::<Result<Vec<_>>>()?;
            columns.insert(n, rows);
        }
        Ok(columns)
    }
}

fn random_domain<D: Domain>(rng: &mut ChaCha20Rng) -> D {
    D::from(Fr::random(rng))
}

/// The domain of a tree's hasher.
type TreeDomain<T> = <<T as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// An inclusion proof in a tree of `T`'s shape.
type Inclusion<T> = MerkleProof<
    <T as MerkleTreeTrait>::Hasher,
    <T as MerkleTreeTrait>::Arity,
    <T as MerkleTreeTrait>::SubTreeArity,
    <T as MerkleTreeTrait>::TopTreeArity,
>;

/// The parents (base, then expander) of each challenged node, by node.
type Parents = BTreeMap<u64, Vec<u32>>;

/// The challenges of each partition, and the parents of every challenged node.
fn challenge_parents<Tree: 'static + MerkleTreeTrait>(
    pp: &stacked::PublicParams<Tree>,
    pub_in: &stacked::PublicInputs<TreeDomain<Tree>, <Sha256Hasher as Hasher>::Domain>,
    nodes: usize,
    partitions: usize,
) -> Result<(Vec<Vec<u64>>, Parents)> {
    let challenges: Vec<Vec<u64>> = (0..partitions)
        .map(|k| {
            pub_in
                .challenges(&pp.challenges, nodes, Some(k))
                .into_iter()
                .map(|c| c as u64)
                .collect()
        })
        .collect();
    let challenged: BTreeSet<u64> = challenges.iter().flatten().copied().collect();
    let mut parents = Parents::new();
    for &c in &challenged {
        let mut p = vec![0u32; pp.graph.degree()];
        pp.graph
            .parents(c as usize, &mut p)
            .map_err(Error::filecoin)?;
        parents.insert(c, p);
    }
    Ok((challenges, parents))
}

/// A sparse sector's three trees: tree_c over the opened columns' hashes, tree_r_last over
/// the encoded challenged nodes (data 0, so each is its last label), tree_d over zeros.
struct SparseTrees<Tree: MerkleTreeTrait> {
    c: SparseTree<Tree::Hasher>,
    r: SparseTree<Tree::Hasher>,
    d: SparseTree<Sha256Hasher>,
}

impl<Tree: 'static + MerkleTreeTrait> SparseTrees<Tree> {
    /// Builds the trees of a sector of `nodes` nodes from its opened `columns` and the last
    /// layer's labels of its challenged nodes; unopened subtrees are random (tree_c,
    /// tree_r_last) or zero (tree_d).
    fn build(
        nodes: u64,
        columns: &BTreeMap<u64, Vec<TreeDomain<Tree>>>,
        challenged: impl Iterator<Item = u64> + Clone,
        labels: &mut Labels<TreeDomain<Tree>>,
        layers: usize,
    ) -> Result<Self> {
        let arities = shape_arities::<Tree>(nodes)?;
        let c_leaves = columns
            .iter()
            .map(|(&n, rows)| {
                let col =
                    Column::<Tree::Hasher>::new(n as u32, rows.clone()).map_err(Error::filecoin)?;
                Ok((n, TreeDomain::<Tree>::from(col.hash())))
            })
            .collect::<Result<BTreeMap<_, _>>>()?;
        let rng = &mut labels.rng;
        let c = SparseTree::<Tree::Hasher>::build(arities.clone(), c_leaves, |_, _| {
            random_domain(rng)
        })?;
        let r_leaves = challenged
            .clone()
            .map(|n| (n, labels.cells[&(layers, n)]))
            .collect::<BTreeMap<_, _>>();
        let rng = &mut labels.rng;
        let r = SparseTree::<Tree::Hasher>::build(arities, r_leaves, |_, _| random_domain(rng))?;
        let d_arities = uniform_arities(2, nodes)?;
        let zeros = zero_roots::<Sha256Hasher>(2, d_arities.len());
        let d_leaves = challenged
            .map(|n| (n, Default::default()))
            .collect::<BTreeMap<_, _>>();
        let d = SparseTree::<Sha256Hasher>::build(d_arities, d_leaves, |h, _| zeros[h])?;
        Ok(SparseTrees { c, r, d })
    }

    /// comm_r: H(comm_c, comm_r_last).
    fn comm_r(&self) -> TreeDomain<Tree> {
        <Tree::Hasher as Hasher>::Function::hash2(&self.c.root(), &self.r.root())
    }

    /// The column of node `n` with its inclusion proof in tree_c.
    fn column_proof(
        &self,
        columns: &BTreeMap<u64, Vec<TreeDomain<Tree>>>,
        n: u64,
    ) -> Result<ColumnProof<Inclusion<Tree>>> {
        let col =
            Column::<Tree::Hasher>::new(n as u32, columns[&n].clone()).map_err(Error::filecoin)?;
        let inclusion = self.c.proof(n)?;
        ColumnProof::from_column(col, inclusion).map_err(Error::filecoin)
    }

    /// The vanilla proof of challenged node `c` (with `parents`).
    fn challenge_proof(
        &self,
        columns: &BTreeMap<u64, Vec<TreeDomain<Tree>>>,
        labels: &mut Labels<TreeDomain<Tree>>,
        c: u64,
        parents: &[u32],
        layers: usize,
    ) -> Result<stacked::Proof<Tree, DefaultPieceHasher>> {
        let base_degree = labels.base_degree;
        let labeling_proofs = (1..=layers)
            .map(|layer| {
                let ps = labels.parents(parents, layer)?;
                Ok(LabelingProof::<Tree::Hasher>::new(layer as u32, c, ps))
            })
            .collect::<Result<Vec<_>>>()?;
        let last = labels.parents(parents, layers)?;
        let column_proofs = |nodes: &[u32]| {
            nodes
                .iter()
                .map(|&x| self.column_proof(columns, u64::from(x)))
                .collect::<Result<Vec<_>>>()
        };
        Ok(stacked::Proof::<Tree, DefaultPieceHasher> {
            comm_d_proofs: self.d.proof(c)?,
            comm_r_last_proof: self.r.proof(c)?,
            replica_column_proofs: ReplicaColumnProof {
                c_x: self.column_proof(columns, c)?,
                drg_parents: column_proofs(&parents[..base_degree])?,
                exp_parents: column_proofs(&parents[base_degree..])?,
            },
            labeling_proofs,
            encoding_proof: EncodingProof::new(layers as u32, c, last),
        })
    }
}

fn porep_for<Tree: 'static + MerkleTreeTrait>(
    seal_proof: RegisteredProof,
    seed: u64,
) -> Result<SparsePorep> {
    let config = crate::circuits::porep::config(seal_proof);
    let vanilla_setup = setup_params(&config).map_err(Error::filecoin)?;
    let pp = <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::setup(&vanilla_setup)
        .map_err(Error::filecoin)?;
    let nodes = (seal_proof.sector_size.bytes() / 32) as usize;
    let layers = pp.num_layers;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let ticket = fr_bytes(&mut rng);
    let seed_c1 = fr_bytes(&mut rng);
    let prover_id = prover_id_from_miner(GEN_MINER);

    // The data tree of an all-zero sector.
    let d_heights = uniform_arities(2, nodes as u64)?.len();
    let comm_d = zero_roots::<Sha256Hasher>(2, d_heights)[d_heights];
    let mut comm_d_bytes = [0u8; 32];
    comm_d_bytes.copy_from_slice(comm_d.as_ref());
    let replica_id = stacked::generate_replica_id::<Tree::Hasher, _>(
        &prover_id,
        GEN_SECTOR,
        &ticket,
        comm_d_bytes,
        &config.porep_id,
    );

    // Challenges (they depend on the replica id and seed only) and their parents, labels,
    // trees, and the vanilla proofs, partition by partition.
    let mut pub_in = stacked::PublicInputs::<TreeDomain<Tree>, <Sha256Hasher as Hasher>::Domain> {
        replica_id,
        seed: Some(seed_c1),
        tau: None,
        k: None,
    };
    let partitions = usize::from(config.partitions);
    let (challenges, parents) = challenge_parents(&pp, &pub_in, nodes, partitions)?;
    let mut labels = Labels {
        cells: BTreeMap::new(),
        rng,
        base_degree: pp.graph.base_graph().degree(),
    };
    let columns = labels.label_columns(&replica_id, &parents, layers)?;
    let trees = SparseTrees::<Tree>::build(
        nodes as u64,
        &columns,
        parents.keys().copied(),
        &mut labels,
        layers,
    )?;
    let comm_r = trees.comm_r();
    let vanilla_proofs = challenges
        .iter()
        .map(|part| {
            part.iter()
                .map(|&c| trees.challenge_proof(&columns, &mut labels, c, &parents[&c], layers))
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;

    // filecoin-proofs' own check, as C2 will make it.
    pub_in.tau = Some(stacked::Tau { comm_d, comm_r });
    let valid =
        <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::verify_all_partitions(
            &pp,
            &pub_in,
            &vanilla_proofs,
        )
        .map_err(Error::filecoin)?;
    if !valid {
        return Err(Error::Filecoin(
            "the sparse sector's vanilla proofs do not verify".into(),
        ));
    }
    let mut comm_r_bytes = [0u8; 32];
    comm_r_bytes.copy_from_slice(comm_r.as_ref());
    let c1 = SealCommitPhase1Output::<Tree> {
        vanilla_proofs,
        comm_r: comm_r_bytes,
        comm_d: comm_d_bytes,
        replica_id,
        seed: seed_c1,
        ticket,
    };
    let c1_json = serde_json::to_vec(&c1).map_err(|e| Error::Decode {
        what: "C1 output".into(),
        reason: e.to_string(),
    })?;
    let request = ProofRequest::new(
        seal_proof,
        ProofInputs::Porep {
            c1_json: c1_json.clone(),
            sector: Some(SectorRef {
                prover_id,
                sector_number: GEN_SECTOR,
            }),
        },
    )?;
    Ok(SparsePorep {
        request,
        c1_json,
        columns: columns.len(),
    })
}

/// Builds a WindowPoSt (partition 0, `sectors` sectors, default: a full partition) or
/// WinningPoSt request over sparse sectors of any size, checked with filecoin-proofs' vanilla
/// verifier.
#[tracing::instrument(skip_all, fields(proof = %proof, seed))]
pub fn post(proof: RegisteredProof, seed: u64, sectors: Option<usize>) -> Result<ProofRequest> {
    with_shape!(proof.sector_size, Tree => post_for::<Tree>(proof, seed, sectors))
}

fn post_for<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredProof,
    seed: u64,
    sectors: Option<usize>,
) -> Result<ProofRequest> {
    let cfg = post::config(proof)?;
    let n = match proof.kind {
        ProofKind::WinningPost => 1,
        ProofKind::WindowPost => sectors.unwrap_or(cfg.sector_count),
        _ => {
            return Err(Error::InvalidRequest(format!(
                "{proof} is not a PoSt proof"
            )))
        }
    };
    if n == 0 || n > cfg.sector_count {
        return Err(Error::InvalidRequest(format!(
            "a {proof} partition holds 1 to {} sectors, not {n}",
            cfg.sector_count
        )));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let randomness = fr_bytes(&mut rng);
    let prover_id = prover_id_from_miner(GEN_MINER);
    let ids: Vec<SectorId> = (1..=n as u64).map(SectorId::from).collect();
    let challenges =
        generate_fallback_sector_challenges::<Tree>(&cfg, &randomness, &ids, prover_id)
            .map_err(Error::filecoin)?;
    let nodes = proof.sector_size.bytes() / 32;
    let arities = shape_arities::<Tree>(nodes)?;
    let sector_proofs = ids
        .par_iter()
        .map(|&id| {
            // each sector its own stream, so that the result does not depend on threads
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ u64::from(id).rotate_left(32));
            let ch = challenges
                .get(&id)
                .ok_or_else(|| Error::Filecoin(format!("no challenges for sector {id}")))?;
            let leaves = ch
                .iter()
                .map(|&c| (c, random_domain(&mut rng)))
                .collect::<BTreeMap<_, _>>();
            let mut fill = ChaCha20Rng::seed_from_u64(rng.gen());
            let tree = SparseTree::<Tree::Hasher>::build(arities.clone(), leaves, |_, _| {
                random_domain(&mut fill)
            })?;
            let comm_c = random_domain(&mut rng);
            let comm_r_last = tree.root();
            let inclusion_proofs = ch
                .iter()
                .map(|&c| tree.proof(c))
                .collect::<Result<Vec<_>>>()?;
            Ok(FallbackPoStSectorProof::<Tree> {
                sector_id: id,
                comm_r: <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last),
                vanilla_proof: fallback::Proof {
                    sectors: vec![fallback::SectorProof {
                        inclusion_proofs,
                        comm_c,
                        comm_r_last,
                    }],
                },
            })
        })
        .collect::<Result<Vec<_>>>()?;
    verify_post::<Tree>(&cfg, randomness, prover_id, &sector_proofs)?;
    let vanilla_proofs = sector_proofs
        .iter()
        .map(|p| {
            bincode::serialize(p).map_err(|e| Error::Decode {
                what: "PoSt vanilla proof".into(),
                reason: e.to_string(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    ProofRequest::new(
        proof,
        ProofInputs::Post(PostInputs {
            randomness,
            prover_id,
            vanilla_proofs,
            partition_index: (proof.kind == ProofKind::WindowPost).then_some(0),
        }),
    )
}

/// filecoin-proofs' vanilla check of PoSt sector proofs (it pads a short partition as the
/// prover does).
fn verify_post<Tree: 'static + MerkleTreeTrait>(
    cfg: &filecoin_proofs::PoStConfig,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    proofs: &[FallbackPoStSectorProof<Tree>],
) -> Result<()> {
    let setup = post::vanilla_setup(cfg)?;
    let pp = fallback::PublicParams {
        sector_size: setup.sector_size,
        challenge_count: setup.challenge_count,
        sector_count: setup.sector_count,
        api_version: setup.api_version,
    };
    let sectors = proofs
        .iter()
        .map(|p| fallback::PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect::<Vec<_>>();
    let pub_in = fallback::PublicInputs {
        randomness: Domain::try_from_bytes(&randomness).map_err(Error::filecoin)?,
        prover_id: Domain::try_from_bytes(&prover_id).map_err(Error::filecoin)?,
        sectors,
        k: None,
    };
    let partitions = proofs.len().div_ceil(pp.sector_count).max(1);
    partition_vanilla_proofs(cfg, &pp, &pub_in, partitions, proofs).map_err(|e| {
        Error::Filecoin(format!(
            "the sparse sectors' PoSt proofs do not verify: {e:#}"
        ))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits;
    use crate::kind::SectorSize;

    /// Adds one to the first number found under `path` in `v` (keys, or indices as digits).
    fn bump(v: &mut serde_json::Value, path: &[&str]) {
        let mut at = v;
        for key in path {
            at = match key.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*key],
            };
        }
        fn first(v: &mut serde_json::Value) -> bool {
            match v {
                serde_json::Value::Number(n) => {
                    let x = n.as_u64().expect("an unsigned number");
                    *v = serde_json::Value::from(if x == 0 { 1 } else { x - 1 });
                    true
                }
                serde_json::Value::Array(a) => a.iter_mut().any(first),
                serde_json::Value::Object(o) => o.values_mut().any(first),
                _ => false,
            }
        }
        assert!(first(at), "nothing to change under {path:?}");
    }

    fn with_c1(request: &ProofRequest, c1: &serde_json::Value) -> ProofRequest {
        let mut r = request.clone();
        if let ProofInputs::Porep { c1_json, .. } = &mut r.inputs {
            *c1_json = serde_json::to_vec(c1).expect("C1 JSON");
        }
        r
    }

    /// A sparse 32 GiB C1 passes filecoin-proofs' vanilla verifier (inside the generator and
    /// again when planned), is a committed-capacity sector of that size, and is refused when
    /// one label or one path sibling changes.
    #[test]
    fn sparse_32gib_porep_verifies_and_a_changed_value_is_refused() {
        let proof = RegisteredProof::latest(ProofKind::PorepC2, SectorSize::S32GiB);
        let t = std::time::Instant::now();
        let sparse = porep(proof, 3).expect("a sparse 32 GiB sector");
        eprintln!(
            "32 GiB C1: {} columns, {} bytes of JSON, {:.1}s",
            sparse.columns,
            sparse.c1_json.len(),
            t.elapsed().as_secs_f64()
        );
        let c1: serde_json::Value = serde_json::from_slice(&sparse.c1_json).expect("JSON");
        let comm_d: Vec<u8> = serde_json::from_value(c1["comm_d"].clone()).expect("comm_d");
        // filecoin-proofs' commitment of a 32 GiB all-zero piece
        let cc = filecoin_proofs::pieces::zero_padding(
            filecoin_proofs::PaddedBytesAmount(32 << 30).into(),
        )
        .expect("zero piece")
        .commitment;
        assert_eq!(comm_d, cc, "comm_d is that of an empty 32 GiB sector");
        let partitions = c1["vanilla_proofs"].as_array().expect("partitions");
        assert_eq!(partitions.len(), 10);
        assert!(partitions
            .iter()
            .all(|p| p.as_array().map(Vec::len) == Some(18)));
        let plan = circuits::plan(&sparse.request).expect("the sparse C1 plans and verifies");
        assert_eq!(plan.partitions.len(), 10);

        for (what, path, says) in [
            (
                "a label of the challenged column",
                &[
                    "vanilla_proofs",
                    "3",
                    "5",
                    "replica_column_proofs",
                    "c_x",
                    "column",
                    "rows",
                    "4",
                ][..],
                "do not verify",
            ),
            (
                "a label of a parent's column",
                &[
                    "vanilla_proofs",
                    "0",
                    "1",
                    "replica_column_proofs",
                    "exp_parents",
                    "2",
                    "column",
                    "rows",
                    "7",
                ][..],
                "do not verify",
            ),
            (
                "a sibling on a tree_c path",
                &[
                    "vanilla_proofs",
                    "2",
                    "3",
                    "replica_column_proofs",
                    "drg_parents",
                    "1",
                    "inclusion_proof",
                    "data",
                    "Sub",
                    "base_proof",
                    "path",
                    "3",
                    "hashes",
                    "5",
                ][..],
                "do not verify",
            ),
            (
                "a sibling on a tree_r_last path",
                &[
                    "vanilla_proofs",
                    "9",
                    "17",
                    "comm_r_last_proof",
                    "data",
                    "Sub",
                    "base_proof",
                    "path",
                    "6",
                    "hashes",
                    "3",
                ][..],
                "partition 9, challenge 17: the replica (tree_r_last) path",
            ),
            (
                "a sibling on a tree_d path",
                &[
                    "vanilla_proofs",
                    "0",
                    "0",
                    "comm_d_proofs",
                    "data",
                    "Single",
                    "path",
                    "path",
                    "12",
                    "hashes",
                    "0",
                ][..],
                "partition 0, challenge 0: the data (tree_d) path",
            ),
        ] {
            let mut bad = c1.clone();
            bump(&mut bad, path);
            match circuits::plan(&with_c1(&sparse.request, &bad)) {
                Err(Error::InvalidRequest(msg)) => {
                    assert!(msg.contains(says), "{what}: {msg}")
                }
                Err(e) => panic!("{what}: refused for another reason: {e}"),
                Ok(_) => panic!("{what} changed, yet the C1 output was accepted"),
            }
        }
    }

    /// The whole of partition 0 of a sparse 32 GiB C1, synthesised with every constraint
    /// checked; its public inputs are those filecoin-proofs computes for the verifier.
    #[test]
    #[ignore = "synthesises a 130M-constraint partition: minutes and about 4.3 GB"]
    fn a_sparse_32gib_partition_satisfies_every_constraint() {
        let proof = RegisteredProof::latest(ProofKind::PorepC2, SectorSize::S32GiB);
        let sparse = porep(proof, 3).expect("a sparse 32 GiB sector");
        let mut plan = circuits::plan(&sparse.request).expect("plans");
        let job = plan.partitions.swap_remove(0);
        let t = std::time::Instant::now();
        let report = job.circuit.check().expect("synthesis");
        eprintln!(
            "32 GiB partition 0: {} constraints, {} aux, {} public inputs, checked in {:.1}s",
            report.constraints,
            report.aux,
            report.public_inputs.len(),
            t.elapsed().as_secs_f64()
        );
        assert_eq!(report.first_unsatisfied, None);
        assert_eq!(report.public_inputs, job.public_inputs);
        assert!(report.constraints > 130_000_000, "{}", report.constraints);
    }

    /// The same at 64 GiB, whose trees have a top level (8-8-2).
    #[test]
    fn sparse_64gib_porep_verifies() {
        let proof = RegisteredProof::latest(ProofKind::PorepC2, SectorSize::S64GiB);
        let sparse = porep(proof, 4).expect("a sparse 64 GiB sector");
        let plan = circuits::plan(&sparse.request).expect("plans and verifies");
        assert_eq!(plan.partitions.len(), 10);
        let c1: serde_json::Value = serde_json::from_slice(&sparse.c1_json).expect("JSON");
        assert!(
            c1["vanilla_proofs"][0][0]["comm_r_last_proof"]["data"]["Top"].is_object(),
            "a 64 GiB tree_r_last path has a top level"
        );
    }

    /// Sparse inputs are reproducible from their seed, and differ across seeds.
    #[test]
    fn sparse_inputs_follow_their_seed() {
        let proof = RegisteredProof::latest(ProofKind::PorepC2, SectorSize::S2KiB);
        let a = porep(proof, 9).expect("2 KiB");
        let b = porep(proof, 9).expect("2 KiB");
        let c = porep(proof, 10).expect("2 KiB");
        assert_eq!(a.c1_json, b.c1_json);
        assert_ne!(a.c1_json, c.c1_json);
        circuits::plan(&a.request).expect("a sparse 2 KiB C1 plans");
    }

    #[test]
    fn synthetic_and_non_interactive_porep_cannot_be_sparse() {
        for id in [13, 18] {
            let proof = RegisteredProof::new(ProofKind::PorepC2, id).expect("registered");
            let err = porep(proof, 1).expect_err("comm_r-drawn challenges");
            assert!(err.to_string().contains("cannot be sparse"), "{err}");
        }
    }

    /// A full 32 GiB WindowPoSt partition (2349 sparse sectors) passes filecoin-proofs'
    /// vanilla verifier, and a changed sibling on one path is refused.
    #[test]
    fn sparse_32gib_window_post_verifies_and_a_changed_sibling_is_refused() {
        let proof = RegisteredProof::latest(ProofKind::WindowPost, SectorSize::S32GiB);
        let t = std::time::Instant::now();
        let request = post(proof, 5, None).expect("a 32 GiB WindowPoSt partition");
        eprintln!("32 GiB WindowPoSt: {:.1}s", t.elapsed().as_secs_f64());
        let ProofInputs::Post(inputs) = &request.inputs else {
            panic!("a PoSt request")
        };
        assert_eq!(inputs.vanilla_proofs.len(), 2349);
        let plan = circuits::plan(&request).expect("plans and verifies");
        assert_eq!(plan.partitions.len(), 1);

        let mut bad = request.clone();
        let ProofInputs::Post(bad_in) = &mut bad.inputs else {
            unreachable!()
        };
        let mut sector: FallbackPoStSectorProof<filecoin_proofs::SectorShape32GiB> =
            bincode::deserialize(&bad_in.vanilla_proofs[1000]).expect("sector proof");
        let mut v = serde_json::to_value(&sector.vanilla_proof).expect("to JSON");
        bump(
            &mut v,
            &[
                "sectors",
                "0",
                "inclusion_proofs",
                "4",
                "data",
                "Sub",
                "base_proof",
                "path",
                "2",
                "hashes",
            ],
        );
        sector.vanilla_proof = serde_json::from_value(v).expect("from JSON");
        bad_in.vanilla_proofs[1000] = bincode::serialize(&sector).expect("bincode");
        assert!(
            circuits::plan(&bad).is_err(),
            "a changed sibling was accepted"
        );
    }

    #[test]
    fn sparse_winning_post_and_short_window_post_verify() {
        for (kind, size, sectors) in [
            (ProofKind::WinningPost, SectorSize::S32GiB, None),
            (ProofKind::WinningPost, SectorSize::S64GiB, None),
            (ProofKind::WindowPost, SectorSize::S64GiB, Some(3)),
            (ProofKind::WindowPost, SectorSize::S2KiB, None),
        ] {
            let proof = RegisteredProof::latest(kind, size);
            let request = post(proof, 6, sectors).expect("sparse PoSt");
            circuits::plan(&request).unwrap_or_else(|e| panic!("{proof}: {e}"));
        }
        let proof = RegisteredProof::latest(ProofKind::WindowPost, SectorSize::S32GiB);
        assert!(
            post(proof, 1, Some(2350)).is_err(),
            "more sectors than a partition holds"
        );
    }
}
