//! cuzk: a proving engine for Filecoin. Vanilla proofs in, verified Groth16 SNARKs out.
//!
//! This facade re-exports the engine (`cuzk_engine`) for embedding and holds what the CLI
//! shares with tests: the benchmark against bellperson and the bellperson log probe.
//!
//! ```no_run
//! use cuzk::{CpuBackend, ProofRequest, ProveOptions, SrsStore};
//! # fn main() -> cuzk::Result<()> {
//! let request = ProofRequest::from_json(&std::fs::read("winning-post-2KiB.json").unwrap())?;
//! let store = SrsStore::new(cuzk::srs::default_dir());
//! let out = cuzk::prove(&store, &CpuBackend, &request, &ProveOptions::default(), &|_| {})?;
//! assert!(out.verified);
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod bench;
pub mod daemon;

pub use cuzk_engine::*;
