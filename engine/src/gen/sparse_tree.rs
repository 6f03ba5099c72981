//! A Merkle tree of which only a few leaves are known: every node that is neither a known
//! leaf nor an ancestor of one gets a value from a filler (a random field element, or the root
//! of an all-zero subtree). Its root and the paths of its known leaves are exactly those of a
//! full tree holding those values, so filecoin-proofs' verifiers accept them, at the cost of
//! hashing only the known leaves' ancestors.
//!
//! Levels are listed from the leaves up with their arity, so compound trees (a base arity
//! over sub-trees and a top tree) are a tree whose upper levels have other arities: a 32 GiB
//! `tree_r_last` (8-8-0) is nine levels of arity 8 over 2^27 leaves per base tree and one
//! level of arity 8 over the eight base roots.

use std::collections::{BTreeMap, BTreeSet};

use filecoin_hashers::Hasher;
// filecoin-proofs' hash functions hash a node's children through merkletree's trait
use filecoin_hashers::PoseidonArity;
use generic_array::typenum::Unsigned;
use merkletree::hash::Algorithm;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};

use crate::error::{Error, Result};

/// The arities of a filecoin-proofs tree shape with `leaves` leaves, from the leaves up.
///
/// Invariant: the product of the arities is `leaves`.
pub(crate) fn shape_arities<Tree: MerkleTreeTrait>(leaves: u64) -> Result<Vec<usize>> {
    let base = Tree::Arity::to_usize();
    let sub = Tree::SubTreeArity::to_usize();
    let top = Tree::TopTreeArity::to_usize();
    let trees = sub.max(1) as u64 * top.max(1) as u64;
    let mut arities = uniform_arities(base, leaves / trees)?;
    arities.extend([sub, top].into_iter().filter(|&a| a > 0));
    if arities.iter().map(|&a| a as u64).product::<u64>() != leaves {
        return Err(Error::InvalidRequest(format!(
            "{leaves} leaves do not fit a {base}-{sub}-{top} tree"
        )));
    }
    Ok(arities)
}

/// `arity` repeated as often as it takes to reach `leaves` (which must be a power of it).
pub(crate) fn uniform_arities(arity: usize, leaves: u64) -> Result<Vec<usize>> {
    let mut levels = Vec::new();
    let mut n = leaves;
    while n > 1 {
        if !n.is_multiple_of(arity as u64) {
            return Err(Error::InvalidRequest(format!(
                "{leaves} leaves are not a power of {arity}"
            )));
        }
        n /= arity as u64;
        levels.push(arity);
    }
    Ok(levels)
}

/// The known part of a Merkle tree: the known leaves, their ancestors, and the filler value of
/// every sibling on their paths.
///
/// Invariant: `levels[i]` holds a node for every child of every node of `levels[i + 1]`, and
/// `levels[arities.len()]` holds exactly the root at index 0.
pub(crate) struct SparseTree<H: Hasher> {
    arities: Vec<usize>,
    levels: Vec<BTreeMap<u64, H::Domain>>,
}

impl<H: Hasher> SparseTree<H> {
    /// Builds the tree over `leaves` (index -> value). `filler(level, index)` gives the value of
    /// each node that is needed but not known; it is called in ascending (level, index) order,
    /// so a seeded random filler makes the tree reproducible.
    pub(crate) fn build(
        arities: Vec<usize>,
        leaves: BTreeMap<u64, H::Domain>,
        mut filler: impl FnMut(usize, u64) -> H::Domain,
    ) -> Result<Self> {
        let width: u64 = arities.iter().map(|&a| a as u64).product();
        if let Some((&last, _)) = leaves.last_key_value() {
            if last >= width {
                return Err(Error::InvalidRequest(format!(
                    "leaf {last} is outside a tree of {width} leaves"
                )));
            }
        } else {
            return Err(Error::InvalidRequest(
                "a sparse tree needs at least one known leaf".into(),
            ));
        }
        let mut levels = vec![leaves];
        for (height, &arity) in arities.iter().enumerate() {
            let a = arity as u64;
            let below = &mut levels[height];
            let parents: BTreeSet<u64> = below.keys().map(|i| i / a).collect();
            let mut above = BTreeMap::new();
            for p in parents {
                let children: Vec<H::Domain> = (p * a..(p + 1) * a)
                    .map(|i| *below.entry(i).or_insert_with(|| filler(height, i)))
                    .collect();
                above.insert(p, H::Function::default().multi_node(&children, height));
            }
            levels.push(above);
        }
        Ok(Self { arities, levels })
    }

    /// The root.
    pub(crate) fn root(&self) -> H::Domain {
        // The last level holds the root alone (see the invariant).
        self.levels[self.arities.len()]
            .get(&0)
            .copied()
            .unwrap_or_default()
    }

    /// A leaf's value, if the tree holds it.
    pub(crate) fn leaf(&self, index: u64) -> Option<H::Domain> {
        self.levels[0].get(&index).copied()
    }

    /// The path of a known leaf as filecoin-proofs lists it: for each level from the leaves
    /// up, the siblings and the node's position among them.
    pub(crate) fn path(&self, index: u64) -> Result<Vec<(Vec<H::Domain>, usize)>> {
        let mut path = Vec::with_capacity(self.arities.len());
        let mut i = index;
        for (height, &arity) in self.arities.iter().enumerate() {
            let a = arity as u64;
            let first = i / a * a;
            let siblings = (first..first + a)
                .filter(|&j| j != i)
                .map(|j| {
                    self.levels[height].get(&j).copied().ok_or_else(|| {
                        Error::InvalidRequest(format!(
                            "node {j} at height {height} is not in the sparse tree (leaf {index} is not known)"
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            path.push((siblings, (i - first) as usize));
            i /= a;
        }
        Ok(path)
    }

    /// The filecoin-proofs inclusion proof of a known leaf, for a tree of shape `Tree` (whose
    /// base, sub and top arities must be those the tree was built with).
    pub(crate) fn proof<A, B, C>(&self, index: u64) -> Result<MerkleProof<H, A, B, C>>
    where
        A: PoseidonArity,
        B: PoseidonArity,
        C: PoseidonArity,
    {
        let leaf = self.leaf(index).ok_or_else(|| {
            Error::InvalidRequest(format!("leaf {index} is not in the sparse tree"))
        })?;
        Ok(MerkleProof::from_parts(
            leaf,
            self.root(),
            self.path(index)?,
        ))
    }
}

/// The roots of all-zero trees of each height for a hasher and arity: `zeros[h]` is the root
/// of an arity-`arity` tree of height `h` whose leaves are all zero (as in a committed-capacity
/// sector's data tree).
pub(crate) fn zero_roots<H: Hasher>(arity: usize, heights: usize) -> Vec<H::Domain> {
    let mut zeros = vec![H::Domain::default()];
    for h in 0..heights {
        let children = vec![zeros[h]; arity];
        zeros.push(H::Function::default().multi_node(&children, h));
    }
    zeros
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::Scalar as Fr;
    use ff::Field;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_hashers::sha256::Sha256Hasher;
    use generic_array::typenum::{U0, U2, U8};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use storage_proofs_core::merkle::{
        create_base_merkle_tree, MerkleProofTrait, MerkleTreeTrait, MerkleTreeWrapper,
    };

    type P = PoseidonHasher;

    /// A sparse tree whose filler returns the full tree's nodes has the full tree's root and
    /// paths: the sparse construction changes nothing but what is computed.
    #[test]
    fn matches_a_full_tree() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let leaves: Vec<<P as Hasher>::Domain> =
            (0..64).map(|_| Fr::random(&mut rng).into()).collect();
        let full = create_base_merkle_tree::<
            MerkleTreeWrapper<P, storage_proofs_core::merkle::DiskStore<_>, U8, U0, U0>,
        >(None, 64, &leaves_bytes(&leaves))
        .expect("full tree");
        // every node of a full tree, level by level
        let mut nodes = vec![leaves.clone()];
        for h in 0..2 {
            let next = nodes[h]
                .chunks(8)
                .map(|c| <P as Hasher>::Function::default().multi_node(c, h))
                .collect();
            nodes.push(next);
        }
        let known: BTreeMap<u64, _> = [5u64, 6, 40]
            .iter()
            .map(|&i| (i, leaves[i as usize]))
            .collect();
        let sparse = SparseTree::<P>::build(vec![8, 8], known, |h, i| nodes[h][i as usize])
            .expect("sparse tree");
        assert_eq!(sparse.root(), full.root());
        for i in [5u64, 6, 40] {
            let p: MerkleProof<P, U8> = sparse.proof(i).expect("proof");
            assert!(p.validate(i as usize), "path of leaf {i}");
            assert_eq!(p.root(), full.root());
            let real = full.gen_proof(i as usize).expect("full proof");
            assert_eq!(p.path(), real.path(), "leaf {i}");
        }
        assert!(
            sparse.proof::<U8, U0, U0>(20).is_err(),
            "a leaf off every known path has no proof"
        );
    }

    fn leaves_bytes(leaves: &[<P as Hasher>::Domain]) -> Vec<u8> {
        leaves
            .iter()
            .flat_map(|l| AsRef::<[u8]>::as_ref(l).to_vec())
            .collect()
    }

    #[test]
    fn zero_roots_are_roots_of_zero_trees() {
        let zeros = zero_roots::<Sha256Hasher>(2, 3);
        let known: BTreeMap<u64, _> = [(3u64, Default::default())].into_iter().collect();
        let t =
            SparseTree::<Sha256Hasher>::build(vec![2, 2, 2], known, |h, _| zeros[h]).expect("tree");
        assert_eq!(t.root(), zeros[3]);
        let p: MerkleProof<Sha256Hasher, U2> = t.proof(3).expect("proof");
        assert!(p.validate(3));
    }

    #[test]
    fn compound_shapes() {
        type S32 = filecoin_proofs::SectorShape32GiB;
        type S64 = filecoin_proofs::SectorShape64GiB;
        let a = shape_arities::<S32>(1 << 30).expect("32 GiB");
        assert_eq!(a, [vec![8; 9], vec![8]].concat());
        let a = shape_arities::<S64>(1 << 31).expect("64 GiB");
        assert_eq!(a, [vec![8; 9], vec![8, 2]].concat());
        assert!(shape_arities::<S32>(1 << 29).is_err());
    }
}
