//! Parameter files and the parameter set loaded from one ([`Srs`], what every backend proves
//! with): their version in file names, written atomically, and read (bellperson's format:
//! the verifying key, then the h, l, a, b_g1 and b_g2 queries, each a big-endian u32 count
//! and that many uncompressed points) with the points decoded on every core.
//!
//! bellperson's `Parameters::read` decodes one point after another: 178 s for the 44 GiB
//! 32 GiB PoRep file on a 16-core host, nearly all of it converting coordinates into
//! Montgomery form. Here the file is read in chunks while the previous chunk's points are
//! decoded in parallel. The result equals bellperson's `read(_, false)` (no subgroup check),
//! and the same files are refused: a coordinate out of range or a point at infinity is
//! `InvalidData`, a short file `UnexpectedEof`.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bellperson::groth16::{prepare_verifying_key, Parameters, PreparedVerifyingKey, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::kind::RegisteredProof;

/// filecoin-proofs' parameter file version prefix (`v28-...`), in parameter and
/// verifying-key file names and in recorded circuits' identities.
pub const PARAMS_VERSION: usize = storage_proofs_core::parameter_cache::VERSION;

/// One loaded parameter set.
pub struct Srs {
    /// The proving parameters.
    pub params: Parameters<Bls12>,
    /// The verifying key, prepared for pairing checks.
    pub pvk: PreparedVerifyingKey<Bls12>,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// File size in bytes.
    pub file_bytes: u64,
    /// Time spent loading it.
    pub load_time: Duration,
    /// Process-unique identity (see [`Srs::id`]).
    id: u64,
    /// The query bases registered as page-locked host memory, for devices that stream them
    /// (made by the first such device, shared by all; `None` inside when that failed).
    pub(crate) host_pinned: OnceLock<Option<Arc<crate::pinned::HostSrs>>>,
}

/// Hands out [`Srs::id`]s: never reused within a process.
static NEXT_SRS_ID: AtomicU64 = AtomicU64::new(1);

fn next_srs_id() -> u64 {
    NEXT_SRS_ID.fetch_add(1, Ordering::Relaxed)
}

impl std::fmt::Debug for Srs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Srs")
            .field("path", &self.path)
            .field("file_bytes", &self.file_bytes)
            .finish()
    }
}

impl Srs {
    /// Bytes the parameters occupy in host memory (affine points as blst lays them out:
    /// 96 bytes in G1, 192 in G2), for status reports and budgets.
    pub fn memory_bytes(&self) -> u64 {
        let p = &self.params;
        let g1 = p.h.len() + p.l.len() + p.a.len() + p.b_g1.len() + p.vk.ic.len();
        (g1 as u64) * 96 + (p.b_g2.len() as u64) * 192
    }

    /// The evaluation domain size `m` (a power of two) of the circuit these parameters
    /// were made for: the H query holds `m - 1` points.
    pub fn domain_size(&self) -> usize {
        self.params.h.len() + 1
    }

    /// Host bytes one synthesised partition of this circuit holds (inputs, aux and the
    /// a, b, c evaluations over the domain), for the engine's host-memory budget.
    pub fn partition_host_bytes(&self) -> u64 {
        let p = &self.params;
        let scalars = 3 * self.domain_size() + p.l.len() + p.vk.ic.len();
        (scalars as u64) * 32
    }

    /// Wraps parameters that did not come from a file (a user's own circuit, tests).
    pub fn from_parameters(params: Parameters<Bls12>) -> Self {
        let pvk = prepare_verifying_key(&params.vk);
        Srs {
            params,
            pvk,
            path: PathBuf::from("<in memory>"),
            file_bytes: 0,
            load_time: Duration::ZERO,
            id: next_srs_id(),
            host_pinned: OnceLock::new(),
        }
    }

    /// An identity unique within the process: two `Srs` values never share one, even when
    /// one was dropped and another loaded from the same file. Device backends key the
    /// parameters they keep resident by it (the parameters of an `Srs` never change).
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// Reads and checks one parameter file.
#[tracing::instrument(skip_all, fields(path = %path.display()))]
pub fn load(path: &Path, proof: RegisteredProof) -> Result<Srs> {
    let t0 = Instant::now();
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::ParamsMissing {
                path: path.into(),
                kind: proof.kind.to_string(),
                sector_size: proof.sector_size.to_string(),
            })
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let file_bytes = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut reader = BufReader::with_capacity(1 << 22, file);
    // Points are read without the (slow) subgroup check, decoded on every core: the file is
    // trusted to come from a parameter ceremony or from `cuzk params`; every proof is verified
    // before it is returned, so a wrong point cannot produce an accepted proof.
    let params = read_parameters(&mut reader).map_err(|e| Error::ParamsInvalid {
        path: path.into(),
        reason: match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                format!("file is truncated ({file_bytes} bytes); delete it and regenerate or re-download it")
            }
            _ => format!("file is corrupt ({e}); delete it and regenerate or re-download it"),
        },
    })?;
    let mut rest = [0u8; 1];
    if reader.read(&mut rest).map_err(|e| Error::io(path, e))? != 0 {
        return Err(Error::ParamsInvalid {
            path: path.into(),
            reason: "file has trailing bytes after the parameters; it is not a parameter file written by filecoin-proofs".into(),
        });
    }
    let pvk = prepare_verifying_key(&params.vk);
    let load_time = t0.elapsed();
    tracing::info!(
        bytes = file_bytes,
        ms = load_time.as_millis() as u64,
        "parameters loaded"
    );
    Ok(Srs {
        params,
        pvk,
        path: path.into(),
        file_bytes,
        load_time,
        id: next_srs_id(),
        host_pinned: OnceLock::new(),
    })
}

/// Writes `path` through `f` atomically: into a temporary file beside it, synced, then
/// renamed over `path`. Readers see the old file or the whole new one, never a part; on an
/// error the temporary file is removed and `path` is left as it was.
pub(crate) fn write_atomic(
    path: &Path,
    f: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let res = (|| {
        let mut w = BufWriter::with_capacity(1 << 22, File::create(&tmp)?);
        f(&mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = res {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    Ok(())
}

/// Points read and decoded per step: 2^20 G1 points are 96 MiB of file.
const CHUNK_POINTS: usize = 1 << 20;

/// Reads parameters as bellperson's `Parameters::read(reader, false)` does.
pub fn read_parameters<R: Read + Send>(reader: &mut R) -> io::Result<Parameters<Bls12>> {
    let vk = VerifyingKey::<Bls12>::read(&mut *reader)?;
    let h = read_query::<G1Affine, R>(reader)?;
    let l = read_query::<G1Affine, R>(reader)?;
    let a = read_query::<G1Affine, R>(reader)?;
    let b_g1 = read_query::<G1Affine, R>(reader)?;
    let b_g2 = read_query::<G2Affine, R>(reader)?;
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(a),
        b_g1: Arc::new(b_g1),
        b_g2: Arc::new(b_g2),
    })
}

/// One query: its count, then its points, each chunk decoded while the next is read.
fn read_query<A, R: Read + Send>(reader: &mut R) -> io::Result<Vec<A>>
where
    A: UncompressedEncoding + PrimeCurveAffine + Send + Sync,
{
    let mut count = [0u8; 4];
    reader.read_exact(&mut count)?;
    let len = u32::from_be_bytes(count) as usize;
    let width = std::mem::size_of::<A::Uncompressed>();
    let mut out = Vec::with_capacity(len);
    let mut next = vec![0u8; len.min(CHUNK_POINTS) * width];
    let mut current = vec![0u8; next.len()];
    let mut left = len;
    let mut pending = 0; // points in `current` not decoded yet
    loop {
        let take = left.min(CHUNK_POINTS);
        let (read, decoded) = rayon::join(
            || reader.read_exact(&mut next[..take * width]),
            || decode::<A>(&current[..pending * width], width),
        );
        out.extend(decoded?);
        read?;
        if take == 0 {
            break;
        }
        left -= take;
        pending = take;
        std::mem::swap(&mut current, &mut next);
    }
    Ok(out)
}

/// Decodes uncompressed points in parallel, refusing those bellperson refuses.
fn decode<A>(bytes: &[u8], width: usize) -> io::Result<Vec<A>>
where
    A: UncompressedEncoding + PrimeCurveAffine + Send + Sync,
{
    bytes
        .par_chunks(width)
        .map(|b| {
            let mut repr = A::Uncompressed::default();
            repr.as_mut().copy_from_slice(b);
            let p: A = Option::from(A::from_uncompressed_unchecked(&repr))
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not on curve"))?;
            if bool::from(p.is_identity()) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "point at infinity",
                ));
            }
            Ok(p)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::synthetic::Shape;
    use crate::paramgen::generate_random_parameters;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn file() -> Vec<u8> {
        let shape = Shape {
            x: None,
            squarings: 300,
            inputs: 3,
            linear: 40,
        };
        let params = generate_random_parameters(shape, &mut ChaCha8Rng::seed_from_u64(3))
            .expect("parameters");
        let mut bytes = Vec::new();
        params.write(&mut bytes).expect("writes");
        bytes
    }

    fn refused(bytes: &[u8]) -> io::ErrorKind {
        match read_parameters(&mut &bytes[..]) {
            Ok(_) => panic!("read a bad file"),
            Err(e) => e.kind(),
        }
    }

    /// The parallel reader gives bellperson's parameters, and refuses what bellperson
    /// refuses with the same kind of error.
    #[test]
    fn reads_what_bellperson_reads_and_refuses_what_it_refuses() {
        let bytes = file();
        let ours = read_parameters(&mut bytes.as_slice()).expect("reads");
        let theirs = Parameters::<Bls12>::read(bytes.as_slice(), false).expect("reads");
        assert!(ours == theirs);
        assert!(!ours.h.is_empty() && !ours.b_g2.is_empty());

        let truncated = &bytes[..bytes.len() - 7];
        assert_eq!(refused(truncated), io::ErrorKind::UnexpectedEof);

        // the last point of b_g2 made the point at infinity (uncompressed: the flag bit)
        let mut inf = bytes.clone();
        let last = inf.len() - 192;
        inf[last..].fill(0);
        inf[last] = 0x40;
        assert_eq!(refused(&inf), io::ErrorKind::InvalidData);
        assert!(Parameters::<Bls12>::read(inf.as_slice(), false).is_err());

        // a coordinate above the field's modulus in the first point of h
        let vk_len = {
            let mut v = Vec::new();
            theirs.vk.write(&mut v).expect("vk");
            v.len()
        };
        let mut bad = bytes.clone();
        bad[vk_len + 4] = 0x1f; // top bits below the flags: x >= p
        bad[vk_len + 5..vk_len + 4 + 48].fill(0xff);
        assert_eq!(refused(&bad), io::ErrorKind::InvalidData);
        assert!(Parameters::<Bls12>::read(bad.as_slice(), false).is_err());
    }
}
