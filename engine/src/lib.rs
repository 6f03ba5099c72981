//! cuzk's engine: what to prove and how. Proof kinds and requests, Filecoin circuit
//! builders, the SRS store, and Groth16 from assignments behind a device-backend trait
//! (the CPU backend, and the CUDA backend on NVIDIA GPUs).
//!
//! | module | holds |
//! |---|---|
//! | [`kind`] | proof kinds, sector sizes, registered-proof numbers |
//! | [`request`] | requests and the input file format |
//! | [`aggregate`] | SnarkPack: a non-interactive PoRep's partitions as one aggregate proof |
//! | [`c1`] | PoRep C1 outputs in every form node software writes (Curio's envelope, the api form) |
//! | [`circuits`] | vanilla proofs -> per-partition circuits and public inputs |
//! | [`srs`] | parameter files: load once, share, generate test sizes atomically |
//! | [`param_file`] | the parameter file format, read with the points decoded on every core |
//! | [`recordings`] | the PCE store: recorded constraint systems, cached on disk |
//! | [`prover`] | the backend trait, shape checks, final proof assembly |
//! | [`cpu`] | the CPU backend: NTT for H, multi-threaded MSMs |
//! | [`cuda`] | the CUDA backend: H and MSMs on a GPU, parameters resident per device |
//! | [`pipeline`] | one request end to end: plan, synthesise, prove, verify |
//! | [`gen`] | real test inputs: seal a sector, C1, PoSt and SnapDeals vanilla proofs |
//! | [`error`] | the crate's error type |
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod aggregate;
pub mod c1;
pub mod circuits;
pub mod cpu;
pub mod cuda;
pub mod error;
pub mod gen;
pub mod kind;
pub mod param_file;
pub mod paramgen;
pub mod pipeline;
pub mod prover;
pub mod recordings;
pub mod request;
pub mod srs;

pub use cpu::CpuBackend;
pub use cuda::CudaBackend;
pub use cuzk_kernels as kernels;
pub use cuzk_pce as pce;
pub use error::{Error, Result};
pub use kind::{ProofKind, RegisteredProof, SectorSize};
pub use pipeline::{prove, prove_circuit, verify, ProofOutput, ProveOptions, Randomness, Timings};
pub use prover::{Backend, MemoryReport, Upcoming};
pub use request::{PostInputs, ProofInputs, ProofRequest, SectorRef, SnapInputs};
pub use srs::{Srs, SrsStore};
