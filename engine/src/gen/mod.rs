//! Real test inputs: seal a sector with filecoin-proofs, run C1, and produce WinningPoSt,
//! WindowPoSt and SnapDeals vanilla proofs for it, all as [`ProofRequest`]s.
//!
//! Sealing is cheap at test sizes (milliseconds at 2 KiB once the SDR parent cache exists).
//! The work files live in a temporary directory removed afterwards; only the requests are
//! kept. Randomness comes from a seed so a run can be repeated.
//!
//! Production sizes (32 and 64 GiB) cannot be sealed on a test bench; [`sparse`] builds their
//! inputs from sparse sectors instead.

pub mod sparse;
mod sparse_tree;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use filecoin_proofs::{
    add_piece, encode_into, generate_fallback_sector_challenges, generate_partition_proofs,
    generate_piece_commitment, generate_single_vanilla_proof, generate_synth_proofs,
    seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2, PaddedBytesAmount,
    PieceInfo, PrivateReplicaInfo, SectorShape2KiB, UnpaddedBytesAmount,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::{api_version::ApiFeature, merkle::MerkleTreeTrait, sector::SectorId};
use storage_proofs_update::constants::TreeRHasher;

use crate::circuits::{porep, post, snap};
use crate::error::{Error, Result};
use crate::kind::{ProofKind, RegisteredProof, SectorSize};
use crate::request::{PostInputs, ProofInputs, ProofRequest, SectorRef, SnapInputs};

/// Requests for every kind, built from one sealed sector.
#[derive(Debug)]
pub struct GeneratedInputs {
    /// PoRep C2 request (the C1 output of the sealed sector).
    pub porep: ProofRequest,
    /// WinningPoSt request over the sector.
    pub winning_post: ProofRequest,
    /// WindowPoSt request (partition 0) over the sector.
    pub window_post: ProofRequest,
    /// SnapDeals request for an update of the sector with new random data.
    pub snap_deals: ProofRequest,
}

impl GeneratedInputs {
    /// The request of one kind.
    pub fn get(&self, kind: ProofKind) -> &ProofRequest {
        match kind {
            ProofKind::PorepC2 => &self.porep,
            ProofKind::WinningPost => &self.winning_post,
            ProofKind::WindowPost => &self.window_post,
            ProofKind::SnapDeals => &self.snap_deals,
        }
    }
}

/// A 32-byte value that is a valid field element (top two bits clear), as chain randomness
/// and commitments are.
pub(crate) fn fr_bytes(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut b: [u8; 32] = rng.gen();
    b[31] &= 0x3f;
    b
}

fn fc<T>(what: &str, r: anyhow::Result<T>) -> Result<T> {
    r.map_err(|e| Error::Filecoin(format!("{what}: {e:#}")))
}

/// The miner whose sectors `cuzk gen` seals (f01000), and the sector number it uses.
pub const GEN_MINER: u64 = 1000;
/// The sector number of the sector `cuzk gen` seals.
pub const GEN_SECTOR: u64 = 1;

/// Seals one sector of `size` under `work_dir` and returns requests for all four kinds.
///
/// Only sizes sharing the 2 KiB tree shape (2 KiB, 8 MiB, 512 MiB) are generated here: the
/// larger ones take hours and hundreds of GiB.
#[tracing::instrument(skip_all, fields(size = %size))]
pub fn generate(size: SectorSize, work_dir: &Path, seed: u64) -> Result<GeneratedInputs> {
    generate_with(
        RegisteredProof::latest(ProofKind::PorepC2, size),
        work_dir,
        seed,
    )
}

/// As [`generate`], with the sector sealed as `seal_proof` (any registered seal proof of a
/// test size: interactive, synthetic (10-14) or non-interactive (15-19) PoRep), so that the
/// PoRep request is a C2 of that kind.
#[tracing::instrument(skip_all, fields(seal_proof = %seal_proof))]
pub fn generate_with(
    seal_proof: RegisteredProof,
    work_dir: &Path,
    seed: u64,
) -> Result<GeneratedInputs> {
    if seal_proof.kind != ProofKind::PorepC2 {
        return Err(Error::InvalidRequest(format!(
            "{seal_proof} is not a seal proof"
        )));
    }
    match seal_proof.sector_size {
        SectorSize::S2KiB | SectorSize::S8MiB | SectorSize::S512MiB => {
            generate_for::<SectorShape2KiB>(seal_proof, work_dir, seed)
        }
        other => Err(Error::InvalidRequest(format!(
            "cuzk gen makes test inputs only (2KiB, 8MiB, 512MiB); {other} sectors must come from a real sealing pipeline"
        ))),
    }
}

/// The prover id filecoin-ffi derives from a miner's actor id: the id's unsigned LEB128
/// varint (the payload of its `f0` address), zero padded.
pub fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut n = miner_id;
    for b in out.iter_mut() {
        *b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            break;
        }
        *b |= 0x80;
    }
    out
}

fn generate_for<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    seal_proof: RegisteredProof,
    work_dir: &Path,
    seed: u64,
) -> Result<GeneratedInputs> {
    let size = seal_proof.sector_size;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let dir = tempfile::Builder::new()
        .prefix("cuzk-gen-")
        .tempdir_in(work_dir)
        .map_err(|e| Error::io(work_dir, e))?;
    let (porep, sector) = seal_and_c1::<Tree>(seal_proof, dir.path(), &mut rng)?;
    let winning_post = post_request::<Tree>(ProofKind::WinningPost, size, &sector, &mut rng)?;
    let window_post = post_request::<Tree>(ProofKind::WindowPost, size, &sector, &mut rng)?;
    let snap_deals = snap_request::<Tree>(size, dir.path(), &sector, &mut rng)?;
    Ok(GeneratedInputs {
        porep,
        winning_post,
        window_post,
        snap_deals,
    })
}

/// A sector sealed in a work directory: what its PoSt and SnapDeals proofs read.
struct SealedSector {
    cache: PathBuf,
    sealed: PathBuf,
    comm_r: [u8; 32],
    prover_id: [u8; 32],
    sector_id: SectorId,
}

/// `path` as an I/O error's subject.
fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(path, e)
}

/// Random data of `unpadded` bytes, staged at `path` as a piece; its piece info. `update`:
/// the piece of a SnapDeals update (for the error messages).
fn stage_random_piece(
    rng: &mut ChaCha20Rng,
    unpadded: UnpaddedBytesAmount,
    path: &Path,
    update: bool,
) -> Result<PieceInfo> {
    let piece: Vec<u8> = (0..u64::from(unpadded)).map(|_| rng.gen()).collect();
    let (commitment, add) = if update {
        ("new piece commitment", "add_piece (update)")
    } else {
        ("piece commitment", "add_piece")
    };
    let info = fc(commitment, generate_piece_commitment(&piece[..], unpadded))?;
    let mut f = std::fs::File::create(path).map_err(|e| io(path, e))?;
    fc(add, add_piece(&piece[..], &mut f, unpadded, &[]))?;
    f.flush().map_err(|e| io(path, e))?;
    Ok(info)
}

/// Seals a sector of random data as `seal_proof` in `dir` (PC1, PC2, the synthetic proofs
/// where the proof is synthetic, C1), and returns its C2 request and the sealed sector.
fn seal_and_c1<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    seal_proof: RegisteredProof,
    dir: &Path,
    rng: &mut ChaCha20Rng,
) -> Result<(ProofRequest, SealedSector)> {
    let config = porep::config(seal_proof);
    let unpadded: UnpaddedBytesAmount = PaddedBytesAmount(seal_proof.sector_size.bytes()).into();
    let prover_id = prover_id_from_miner(GEN_MINER);
    let sector_id = SectorId::from(GEN_SECTOR);
    let ticket = fr_bytes(rng);
    let seed_c1 = fr_bytes(rng);
    let staged = dir.join("staged");
    let piece_info = stage_random_piece(rng, unpadded, &staged, false)?;
    let (cache, sealed) = (dir.join("cache"), dir.join("sealed"));
    std::fs::create_dir_all(&cache).map_err(|e| io(&cache, e))?;
    std::fs::File::create(&sealed).map_err(|e| io(&sealed, e))?;
    let pc1 = fc(
        "seal_pre_commit_phase1",
        seal_pre_commit_phase1::<_, _, _, Tree>(
            &config,
            &cache,
            &staged,
            &sealed,
            prover_id,
            sector_id,
            ticket,
            std::slice::from_ref(&piece_info),
        ),
    )?;
    let pc2 = fc(
        "seal_pre_commit_phase2",
        seal_pre_commit_phase2(&config, pc1, &cache, &sealed),
    )?;
    let comm_r = pc2.comm_r;
    if seal_proof.porep_feature() == Some(ApiFeature::SyntheticPoRep) {
        // A synthetic sector keeps the vanilla proofs of its synthetic challenges (drawn from
        // comm_r) in its cache; C1 picks the seed's share of them.
        fc(
            "generate_synth_proofs",
            generate_synth_proofs::<_, Tree>(
                &config,
                &cache,
                &sealed,
                prover_id,
                sector_id,
                ticket,
                pc2.clone(),
                std::slice::from_ref(&piece_info),
            ),
        )?;
    }
    let c1 = fc(
        "seal_commit_phase1",
        seal_commit_phase1::<_, Tree>(
            &config,
            &cache,
            &sealed,
            prover_id,
            sector_id,
            ticket,
            seed_c1,
            pc2,
            &[piece_info],
        ),
    )?;
    let c1_json = serde_json::to_vec(&c1).map_err(|e| Error::Decode {
        what: "C1 output".into(),
        reason: e.to_string(),
    })?;
    let sector = Some(SectorRef {
        prover_id,
        sector_number: GEN_SECTOR,
    });
    let request = ProofRequest::new(seal_proof, ProofInputs::Porep { c1_json, sector })?;
    let sealed_sector = SealedSector {
        cache,
        sealed,
        comm_r,
        prover_id,
        sector_id,
    };
    Ok((request, sealed_sector))
}

/// A PoSt request of `kind` over the sealed sector: fresh randomness, its challenges and
/// the sector's vanilla proof.
fn post_request<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    kind: ProofKind,
    size: SectorSize,
    sector: &SealedSector,
    rng: &mut ChaCha20Rng,
) -> Result<ProofRequest> {
    let SealedSector {
        prover_id,
        sector_id,
        ..
    } = *sector;
    let replica = fc(
        "replica info",
        PrivateReplicaInfo::<Tree>::new(sector.sealed.clone(), sector.comm_r, sector.cache.clone()),
    )?;
    let proof = RegisteredProof::latest(kind, size);
    let cfg = post::config(proof)?;
    let randomness = fr_bytes(rng);
    let challenges = fc(
        "PoSt challenges",
        generate_fallback_sector_challenges::<Tree>(&cfg, &randomness, &[sector_id], prover_id),
    )?;
    let ch = challenges
        .get(&sector_id)
        .ok_or_else(|| Error::Filecoin("no challenges for the sector".into()))?;
    let vanilla = fc(
        "PoSt vanilla proof",
        generate_single_vanilla_proof::<Tree>(&cfg, sector_id, &replica, ch),
    )?;
    let bytes = bincode::serialize(&vanilla).map_err(|e| Error::Decode {
        what: "PoSt vanilla proof".into(),
        reason: e.to_string(),
    })?;
    ProofRequest::new(
        proof,
        ProofInputs::Post(PostInputs {
            randomness,
            prover_id,
            vanilla_proofs: vec![bytes],
            partition_index: (kind == ProofKind::WindowPost).then_some(0),
        }),
    )
}

/// A SnapDeals request: new random data encoded into the sealed sector (a replica of its
/// own in `dir`), with the update's partition proofs.
fn snap_request<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    size: SectorSize,
    dir: &Path,
    sector: &SealedSector,
    rng: &mut ChaCha20Rng,
) -> Result<ProofRequest> {
    let unpadded: UnpaddedBytesAmount = PaddedBytesAmount(size.bytes()).into();
    let new_staged = dir.join("new-staged");
    let new_info = stage_random_piece(rng, unpadded, &new_staged, true)?;
    let (new_cache, new_sealed) = (dir.join("new-cache"), dir.join("new-sealed"));
    std::fs::create_dir_all(&new_cache).map_err(|e| io(&new_cache, e))?;
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&new_sealed)
        .and_then(|f| f.set_len(size.bytes()))
        .map_err(|e| io(&new_sealed, e))?;
    let update_proof = RegisteredProof::latest(ProofKind::SnapDeals, size);
    let ucfg = snap::config(update_proof);
    let encoded = fc(
        "encode_into",
        encode_into::<Tree>(
            &ucfg,
            &new_sealed,
            &new_cache,
            &sector.sealed,
            &sector.cache,
            &new_staged,
            &[new_info],
        ),
    )?;
    let parts = fc(
        "SnapDeals partition proofs",
        generate_partition_proofs::<Tree>(
            ucfg,
            sector.comm_r,
            encoded.comm_r_new,
            encoded.comm_d_new,
            &sector.sealed,
            &sector.cache,
            &new_sealed,
            &new_cache,
        ),
    )?;
    let vanilla_proofs = parts
        .iter()
        .map(|p| {
            bincode::serialize(p).map_err(|e| Error::Decode {
                what: "SnapDeals vanilla proof".into(),
                reason: e.to_string(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    ProofRequest::new(
        update_proof,
        ProofInputs::Snap(SnapInputs {
            comm_r_old: sector.comm_r,
            comm_r_new: encoded.comm_r_new,
            comm_d_new: encoded.comm_d_new,
            vanilla_proofs,
        }),
    )
}
