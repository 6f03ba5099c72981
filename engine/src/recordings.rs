//! The PCE store: each circuit shape's recorded constraint system, recorded once per process
//! (or loaded from its cache file) and shared by every proof of that shape.
//!
//! Cache files live in `<parameter dir>/cuzk-pce/` (or where the front end's configuration
//! says), named by the circuit identity. A file that is corrupt, truncated, of another format
//! version or of another circuit is reported (a warning), rebuilt and overwritten: never used.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cuzk_pce::{cache, R1cs};

use crate::circuits::PartitionCircuit;
use crate::error::{Error, Result};

type Slot = Arc<Mutex<Option<Arc<R1cs>>>>;

/// Recorded circuits, in memory and on disk.
///
/// Invariant: for one identity, at most one thread records or loads at a time; the others
/// wait on the same slot and reuse its result, so concurrent first proofs record once.
pub struct PceStore {
    dir: Option<PathBuf>,
    slots: Mutex<HashMap<String, Slot>>,
    recorded: AtomicUsize,
    loaded: AtomicUsize,
}

impl PceStore {
    /// A store persisting under `dir` (`None`: memory only).
    pub fn new(dir: Option<PathBuf>) -> Self {
        PceStore {
            dir,
            slots: Mutex::new(HashMap::new()),
            recorded: AtomicUsize::new(0),
            loaded: AtomicUsize::new(0),
        }
    }

    /// The cache directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The cache file of an identity.
    pub fn path_for(&self, identity: &str) -> Option<PathBuf> {
        let name: String = identity
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.as_ref().map(|d| d.join(format!("{name}.pce")))
    }

    /// How many circuits this store recorded (not loaded) so far.
    pub fn recorded_count(&self) -> usize {
        self.recorded.load(Ordering::SeqCst)
    }

    /// How many circuits this store loaded from cache files so far.
    pub fn loaded_count(&self) -> usize {
        self.loaded.load(Ordering::SeqCst)
    }

    /// Returns the recording for `identity`, loading its cache file or recording `blank`.
    pub fn get_or_record(
        &self,
        identity: &str,
        blank: Box<dyn PartitionCircuit>,
    ) -> Result<Arc<R1cs>> {
        let slot = {
            let mut slots = self
                .slots
                .lock()
                .map_err(|_| Error::Filecoin("PCE store lock poisoned".into()))?;
            slots.entry(identity.to_string()).or_default().clone()
        };
        let mut guard = slot
            .lock()
            .map_err(|_| Error::Filecoin("PCE slot lock poisoned".into()))?;
        if let Some(r) = guard.as_ref() {
            return Ok(r.clone());
        }
        let path = self.path_for(identity);
        if let Some(p) = path.as_ref().filter(|p| p.exists()) {
            match cache::load(p, identity) {
                Ok(r1cs) => {
                    self.loaded.fetch_add(1, Ordering::SeqCst);
                    let r = Arc::new(r1cs);
                    *guard = Some(r.clone());
                    return Ok(r);
                }
                Err(e) => tracing::warn!(error = %e, "PCE cache file unusable; recording again"),
            }
        }
        let span = tracing::info_span!("pce_record", identity);
        let r1cs = span.in_scope(|| blank.record())?;
        self.recorded.fetch_add(1, Ordering::SeqCst);
        if let Some(p) = &path {
            if let Err(e) = cache::save(p, &r1cs, identity) {
                tracing::warn!(error = %e, "cannot save the PCE cache; keeping it in memory");
            }
        }
        let r = Arc::new(r1cs);
        *guard = Some(r.clone());
        Ok(r)
    }
}
