//! The SRS store: Groth16 parameter files, loaded once and shared between proofs.
//!
//! Files follow filecoin-proofs' parameter cache: `<dir>/v28-<identifier>.params` (plus
//! `.vk` and `.meta`), where `<dir>` defaults to `FIL_PROOFS_PARAMETER_CACHE` or
//! `/var/tmp/filecoin-proof-parameters`. Test-size parameters are generated only when asked
//! ([`SrsStore::generate`]), under a file lock, written to a temporary name and renamed, so a
//! crash never leaves a half-written file under the real name.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use bellperson::groth16::aggregate::GenericSRS;
use blstrs::Bls12;

use crate::circuits;
use crate::error::{Error, Result};
use crate::kind::RegisteredProof;
use crate::param_file::write_atomic;
use crate::paramgen::products::ProductsOn;
use crate::paramgen::streaming::{write_random_parameters, Phase};
use crate::recordings::PceStore;

pub use crate::param_file::{load, Srs, PARAMS_VERSION};

/// The default parameter directory, as filecoin-proofs resolves it.
pub fn default_dir() -> PathBuf {
    std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/filecoin-proof-parameters"))
}

type Slot = Arc<OnceLock<Arc<Srs>>>;

/// Loads parameter files on first use and hands out shared references afterwards.
///
/// Invariant: a file is read at most once per store, even when many proofs ask for it at the
/// same time (the first caller loads, the others wait on the same slot).
pub struct SrsStore {
    dir: PathBuf,
    slots: Mutex<HashMap<String, Slot>>,
    pce: PceStore,
    /// The inner-product SRS (non-interactive PoRep's aggregation), once loaded.
    aggregation: Mutex<Option<Arc<GenericSRS<Bls12>>>>,
}

impl SrsStore {
    /// A store over `dir` (nothing is read yet). Recorded circuits (PCE) are cached in
    /// `<dir>/cuzk-pce` unless [`SrsStore::with_pce_dir`] names another directory.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        let pce_dir = dir.join("cuzk-pce");
        SrsStore {
            dir,
            slots: Mutex::new(HashMap::new()),
            pce: PceStore::new(Some(pce_dir)),
            aggregation: Mutex::new(None),
        }
    }

    /// The inner-product SRS of this directory ([`crate::aggregate::SRS_FILE`]), read on
    /// first use and kept. A missing or broken file is an error each time it is asked for.
    pub fn aggregation_srs(&self) -> Result<Arc<GenericSRS<Bls12>>> {
        let mut slot = self
            .aggregation
            .lock()
            .map_err(|_| Error::Filecoin("SRS store lock poisoned".into()))?;
        if let Some(srs) = slot.as_ref() {
            return Ok(srs.clone());
        }
        let srs = Arc::new(crate::aggregate::load_srs(
            &self.dir.join(crate::aggregate::SRS_FILE),
        )?);
        *slot = Some(srs.clone());
        Ok(srs)
    }

    /// Writes an insecure test inner-product SRS (known randomness, for up to 256 proofs)
    /// unless the directory has one. Returns its path and whether it was written.
    pub fn generate_aggregation_srs(&self, seed: u64) -> Result<(PathBuf, bool)> {
        let path = self.dir.join(crate::aggregate::SRS_FILE);
        fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let lock_path = path.with_extension("srs.lock");
        let lock = File::create(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
        lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        if path.is_file() {
            return Ok((path, false));
        }
        crate::aggregate::write_test_srs(&path, 256, seed)?;
        drop(lock);
        Ok((path, true))
    }

    /// Replaces the PCE store (e.g. another directory, or memory only with `None`).
    pub fn with_pce_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.pce = PceStore::new(dir);
        self
    }

    /// The recorded circuits shared by proofs using this store.
    pub fn pce(&self) -> &PceStore {
        &self.pce
    }

    /// The directory searched.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The parameter file path for an identifier.
    pub fn params_path(&self, identifier: &str) -> PathBuf {
        self.dir
            .join(format!("v{PARAMS_VERSION}-{identifier}.params"))
    }

    /// Whether `proof`'s parameter file is present (it may still be unusable).
    pub fn has(&self, proof: RegisteredProof) -> Result<bool> {
        let id = circuits::params_identifier(proof)?;
        Ok(self.params_path(&id).is_file())
    }

    /// Returns `proof`'s parameters, loading them on first use.
    pub fn get(&self, proof: RegisteredProof) -> Result<Arc<Srs>> {
        let id = circuits::params_identifier(proof)?;
        self.get_by_identifier(proof, &id)
    }

    /// As [`get`](Self::get) with a known identifier.
    pub fn get_by_identifier(&self, proof: RegisteredProof, identifier: &str) -> Result<Arc<Srs>> {
        let slot = {
            let mut slots = self
                .slots
                .lock()
                .map_err(|_| Error::Filecoin("SRS store lock poisoned".into()))?;
            slots.entry(identifier.to_string()).or_default().clone()
        };
        if let Some(srs) = slot.get() {
            return Ok(srs.clone());
        }
        // Several threads may race here; each loads, one wins the slot. Loading is rare
        // (once per file per process) and the losers' copies are dropped.
        let path = self.params_path(identifier);
        if !proof.sector_size.is_test_size() && self.holds_test_parameters() {
            tracing::warn!(
                %proof,
                dir = %self.dir.display(),
                "loading INSECURE test parameters (made by `cuzk params`): proofs made with them are worthless on a chain"
            );
        }
        let srs = Arc::new(load(&path, proof)?);
        Ok(slot.get_or_init(|| srs).clone())
    }

    /// The parameter sets loaded now, by identifier (for status reports). `Arc::strong_count`
    /// of each tells how many proofs hold it besides the store.
    pub fn loaded(&self) -> Vec<(String, Arc<Srs>)> {
        let Ok(slots) = self.slots.lock() else {
            return Vec::new();
        };
        let mut v: Vec<(String, Arc<Srs>)> = slots
            .iter()
            .filter_map(|(id, slot)| slot.get().map(|s| (id.clone(), s.clone())))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Drops a loaded parameter set (the memory is freed once no proof uses it). Returns
    /// whether it was loaded.
    pub fn evict(&self, proof: RegisteredProof) -> Result<bool> {
        let id = circuits::params_identifier(proof)?;
        let mut slots = self
            .slots
            .lock()
            .map_err(|_| Error::Filecoin("SRS store lock poisoned".into()))?;
        Ok(slots.remove(&id).is_some_and(|s| s.get().is_some()))
    }

    /// Generates insecure test parameters for `proof` unless a file is already there.
    ///
    /// Generation holds an exclusive lock on `<file>.lock`, so concurrent processes (test
    /// binaries, CLI runs) generate once. Returns the path and whether it generated.
    pub fn generate(&self, proof: RegisteredProof, seed: u64) -> Result<(PathBuf, bool)> {
        self.generate_with_progress(proof, seed, &ProductsOn::Cpu, &mut |_| {})
    }

    /// [`SrsStore::generate`] with the fixed-base products where `on` says (the file is the
    /// same either way), reporting each phase of the generator.
    ///
    /// Parameters are streamed to the file as they are computed (see
    /// [`crate::paramgen::streaming`]): about 100 bytes of host memory per circuit variable,
    /// 17 GB for a 32 GiB PoRep. Production sizes (32 and 64 GiB) are made only into a
    /// directory of their own: one holding no parameter file yet, or one cuzk marked as
    /// holding test parameters ([`TEST_MARKER`]), so that they are never mistaken for the
    /// published ones.
    pub fn generate_with_progress(
        &self,
        proof: RegisteredProof,
        seed: u64,
        on: &ProductsOn,
        progress: &mut dyn FnMut(Phase),
    ) -> Result<(PathBuf, bool)> {
        let id = circuits::params_identifier(proof)?;
        let path = self.params_path(&id);
        fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let lock_path = path.with_extension("params.lock");
        let lock = File::create(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
        lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        if path.is_file() {
            return Ok((path, false));
        }
        self.claim_for_test_parameters(proof)?;
        let span = tracing::info_span!("generate_params", %proof, identifier = %id);
        let _g = span.enter();
        let blank = circuits::blank(proof)?;
        let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(seed);
        let mut vk = None;
        write_atomic(&path, |w| {
            let key =
                write_random_parameters(&*blank, &mut rng, w, on, progress).map_err(
                    |e| match e {
                        bellpepper_core::SynthesisError::IoError(io) => io,
                        other => std::io::Error::other(other.to_string()),
                    },
                )?;
            vk = Some(key);
            Ok(())
        })?;
        let vk = vk.ok_or_else(|| Error::Filecoin("parameter generation made no key".into()))?;
        let vk_path = self.dir.join(format!("v{PARAMS_VERSION}-{id}.vk"));
        write_atomic(&vk_path, |w| vk.write(w))?;
        let meta_path = self.dir.join(format!("v{PARAMS_VERSION}-{id}.meta"));
        let meta = format!("{{\"sector_size\":{}}}", proof.sector_size.bytes());
        write_atomic(&meta_path, |w| w.write_all(meta.as_bytes()))?;
        drop(lock);
        Ok((path, true))
    }

    /// Whether this directory was marked as holding cuzk's test parameters.
    pub fn holds_test_parameters(&self) -> bool {
        self.dir.join(TEST_MARKER).is_file()
    }

    /// Marks the directory as holding test parameters when it holds no parameter file yet;
    /// refuses production-size test parameters in an unmarked directory that holds some.
    fn claim_for_test_parameters(&self, proof: RegisteredProof) -> Result<()> {
        if self.holds_test_parameters() {
            return Ok(());
        }
        let holds_params = fs::read_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?
            .filter_map(|e| e.ok())
            .any(|e| e.path().extension().is_some_and(|x| x == "params"));
        if !holds_params {
            let marker = self.dir.join(TEST_MARKER);
            return write_atomic(&marker, |w| {
                w.write_all(
                    b"Parameters in this directory were made by `cuzk params` from a known seed.\n\
                      They are INSECURE: for tests and benchmarks only, never for a chain.\n",
                )
            });
        }
        if proof.sector_size.is_test_size() {
            return Ok(());
        }
        Err(Error::InvalidRequest(format!(
            "refusing to write {proof} test parameters into {}: it holds parameter files cuzk did not mark as test parameters (the published ones?); use a directory of their own",
            self.dir.display()
        )))
    }
}

/// The file that marks a parameter directory as holding cuzk's insecure test parameters.
pub const TEST_MARKER: &str = "INSECURE-TEST-PARAMETERS";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::{ProofKind, SectorSize};

    /// The store streams the same file the in-memory generator writes, and marks the
    /// directory it started empty.
    #[test]
    fn streamed_test_parameters_equal_the_in_memory_ones_and_mark_their_directory() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SrsStore::new(dir.path().to_path_buf());
        // the smallest circuit of a test size (a quarter of WinningPoSt's parameters)
        let proof = RegisteredProof::latest(ProofKind::WindowPost, SectorSize::S2KiB);
        let mut phases = 0;
        let (path, made) = store
            .generate_with_progress(proof, 5, &ProductsOn::Cpu, &mut |_| phases += 1)
            .expect("generates");
        assert!(made);
        assert_eq!(phases, 8, "counting, evaluating and six queries");
        assert!(store.holds_test_parameters());
        let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(5);
        let mut want = Vec::new();
        circuits::generate_params(proof, &mut rng)
            .expect("in memory")
            .write(&mut want)
            .expect("serialise");
        let got = fs::read(&path).expect("read");
        assert!(got == want, "streamed and in-memory parameter files differ");
        store.get(proof).expect("the streamed file loads");
        let (_, again) = store.generate(proof, 5).expect("present");
        assert!(!again);
    }

    /// Production-size test parameters never land beside parameter files cuzk did not mark.
    #[test]
    fn production_size_test_parameters_need_a_directory_of_their_own() {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::write(dir.path().join("v28-published.params"), b"not ours").expect("write");
        let store = SrsStore::new(dir.path().to_path_buf());
        let proof = RegisteredProof::latest(ProofKind::PorepC2, SectorSize::S32GiB);
        let err = store.generate(proof, 1).expect_err("refused");
        assert!(err.to_string().contains("directory of their own"), "{err}");
        assert!(!store.holds_test_parameters());
        // a test size is still made there, and does not mark the directory
        let small = RegisteredProof::latest(ProofKind::WindowPost, SectorSize::S2KiB);
        store.generate(small, 1).expect("test size");
        assert!(!store.holds_test_parameters());
    }
}
