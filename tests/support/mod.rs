//! Shared fixtures for the scenario tests: one parameter directory for every test binary
//! and run (generated once, under a file lock), and one set of real 2 KiB inputs per binary.
#![allow(dead_code)]

pub mod shape;

use std::path::PathBuf;
use std::sync::OnceLock;

use cuzk::gen::GeneratedInputs;
use cuzk::{ProofKind, RegisteredProof, SectorSize, SrsStore};

/// The shared test parameter directory: `$CUZK_TEST_PARAMS`, else `target/cuzk-test-params`.
pub fn params_dir() -> PathBuf {
    std::env::var_os("CUZK_TEST_PARAMS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/cuzk-test-params")
        })
}

/// A store over the shared directory with `kind`'s 2 KiB parameters present.
pub fn store_with(kind: ProofKind) -> SrsStore {
    let store = SrsStore::new(params_dir());
    let proof = RegisteredProof::latest(kind, SectorSize::S2KiB);
    let (path, made) = store.generate(proof, 1).expect("generate test parameters");
    if made {
        eprintln!("generated {}", path.display());
    }
    store
}

/// Real inputs for all four kinds from one sealed 2 KiB sector (made once per binary).
pub fn inputs() -> &'static GeneratedInputs {
    static INPUTS: OnceLock<GeneratedInputs> = OnceLock::new();
    INPUTS.get_or_init(|| {
        let dir = std::env::temp_dir();
        cuzk::gen::generate(SectorSize::S2KiB, &dir, 7).expect("generate 2KiB inputs")
    })
}
