//! cuzk: a proving engine for Filecoin. Vanilla proofs in, verified Groth16 SNARKs out.
//!
//! This facade re-exports the engine (`cuzk_engine`: requests, circuits, backends, the
//! steps of a proof) and the runtime (`cuzk_actors`, as [`actors`], with its [`Engine`]
//! handle at the top level), and holds what the CLI shares with tests: the benchmark
//! against bellperson and the bellperson log probe.
//!
//! Proofs are made through the [`Engine`], the one path the CLI, the daemon and library
//! users share: it schedules partitions of many requests over every device (GPUs when
//! present, else the CPU; [`DeviceChoice::Cpu`] asks for the CPU), verifies every proof,
//! and reports progress:
//!
//! ```no_run
//! use cuzk::{Engine, EngineConfig, ProofRequest, SubmitOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let engine = Engine::start(EngineConfig::new(cuzk::srs::default_dir()))?;
//! let request = ProofRequest::from_json(&std::fs::read("winning-post-2KiB.json")?)?;
//! let job = engine.submit(&request, SubmitOptions::default())?.job; // bad input: error here
//! if let Some(p) = engine.progress(job) {
//!     println!("{} of {} partition(s) proved", p.proved, p.partitions);
//! }
//! let result = engine.wait(job, None)?;
//! assert!(result.verified);
//! assert!(cuzk::verify(engine.store(), &request, &result.proof)?);
//! engine.shutdown(std::time::Duration::from_secs(10))?;
//! # Ok(()) }
//! ```
//!
//! Below the Engine, [`prove_circuit`] proves one circuit of any kind (not only Filecoin's)
//! on one [`Backend`], in the caller's thread: a lower-level step, for circuits the Engine
//! does not plan and for tests that compare a backend with bellperson byte for byte:
//!
//! ```
//! use cuzk::circuits::synthetic::Shape;
//! use cuzk::{prove_circuit, CpuBackend, ProveOptions, Srs};
//! use rand_core::SeedableRng;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let shape = |x| Shape { x, squarings: 8, inputs: 1, linear: 2 };
//! // insecure parameters (their randomness is known): for a demonstration only
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
//! let params = cuzk::paramgen::generate_random_parameters(shape(None), &mut rng)?;
//! let srs = Srs::from_parameters(params);
//! let circuit = shape(Some(blstrs::Scalar::from(3u64)));
//! let opts = ProveOptions::default(); // fresh r and s, verified before it is returned
//! let (proof, inputs) = prove_circuit(&srs, &mut CpuBackend, circuit, &opts)?;
//! assert_eq!(inputs.len(), 1);
//! # let _ = proof;
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
