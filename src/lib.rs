//! cuzk: a proving engine for Filecoin. Vanilla proofs in, verified Groth16 SNARKs out.
//!
//! This facade re-exports the engine (`cuzk_engine`: requests, circuits, backends, the
//! single-request pipeline) and the runtime (`cuzk_actors`, as [`actors`], with its
//! [`Engine`] handle at the top level), and holds what the CLI shares with tests: the
//! benchmark against bellperson and the bellperson log probe.
//!
//! The usual way in is the [`Engine`]: it schedules partitions of many requests over every
//! device (GPUs when present, else the CPU), verifies every proof, and reports progress:
//!
//! ```no_run
//! use cuzk::{Engine, EngineConfig, ProofRequest, SubmitOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let engine = Engine::start(EngineConfig::new(cuzk::srs::default_dir()))?;
//! let request = ProofRequest::from_json(&std::fs::read("winning-post-2KiB.json")?)?;
//! let result = engine.prove(&request, SubmitOptions::default())?;
//! assert!(result.verified);
//! engine.shutdown(std::time::Duration::from_secs(10))?;
//! # Ok(()) }
//! ```
//!
//! One request on one backend, without the runtime:
//!
//! ```no_run
//! use cuzk::{CpuBackend, ProofRequest, ProveOptions, SrsStore};
//! # fn main() -> cuzk::Result<()> {
//! let request = ProofRequest::from_json(&std::fs::read("winning-post-2KiB.json").unwrap())?;
//! let store = SrsStore::new(cuzk::srs::default_dir());
//! let out = cuzk::prove(&store, &mut CpuBackend, &request, &ProveOptions::default(), &|_| {})?;
//! assert!(out.verified);
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod batch;
pub mod bench;
pub mod daemon;
pub mod telemetry;

pub use cuzk_actors as actors;
pub use cuzk_actors::{
    DeviceChoice, Engine, EngineConfig, EngineStatus, JobResult, MockDevice, MockDriver, Priority,
    SimulatedJob, SubmitOptions,
};
pub use cuzk_engine::*;
