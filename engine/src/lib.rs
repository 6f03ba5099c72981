//! cuzk's engine: what to prove and how. Proof kinds and requests, Filecoin circuit
//! builders, the SRS store, and Groth16 from assignments behind a device-backend trait
//! (the CPU backend, the CUDA backend on NVIDIA GPUs, and `dual`, which checks a GPU against
//! the CPU operation by operation).
//!
//! These are the steps of a proof, not a way to prove requests: the runtime (`cuzk-actors`'
//! `Engine`) plans a request here, loads its parameters, synthesises each partition
//! ([`synthesis`]), proves it on a [`Backend`], verifies and assembles. Every front end (the
//! CLI, the daemon, library users) proves through that Engine. [`prove_circuit`] proves one
//! circuit of any kind on one backend, for circuits the Engine does not plan and for tests.
//!
//! | module | holds |
//! |---|---|
//! | [`kind`] | proof kinds, sector sizes, registered-proof numbers |
//! | [`request`] | requests and the input file format |
//! | [`aggregate`] | SnarkPack: a non-interactive PoRep's partitions as one aggregate proof |
//! | [`c1`] | PoRep C1 outputs in every form node software writes (Curio's envelope, the api form) |
//! | [`circuits`] | vanilla proofs -> per-partition circuits and public inputs |
//! | [`srs`] | parameter files: load once, share, generate test sizes atomically |
//! | [`param_file`] | parameter files: version in names, atomic writes, read with the points decoded on every core |
//! | [`pinned`] | a circuit's bases in host memory, registered once as page-locked memory for GPUs that stream them |
//! | [`recordings`] | the PCE store: recorded constraint systems, cached on disk |
//! | [`domain`] | the H polynomial's evaluation domain, sized from the constraint count |
//! | [`prover`] | the backend trait, shape checks, final proof assembly |
//! | [`cpu`] | the CPU backend: NTT for H, multi-threaded MSMs |
//! | [`cuda`] | the CUDA backend: H and MSMs on a GPU, parameters resident per device |
//! | [`device_ops`] | the device-operation seam: H and each MSM behind one trait, a backend over it |
//! | [`dual`] | the `dual` backend: two implementations on every operation, failing on a difference |
//! | [`options`] | how proofs are made: r and s, verification, PCE or full synthesis |
//! | [`synthesis`] | one partition's assignment, through the PCE or in full, checked |
//! | [`verifier`] | proof bytes checked against a request |
//! | [`any_circuit`] | any bellpepper-core circuit proved on one backend (a lower-level step) |
//! | [`gen`] | real test inputs: seal a sector, C1, PoSt and SnapDeals vanilla proofs |
//! | [`error`] | the crate's error type |
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod aggregate;
pub mod any_circuit;
pub mod c1;
pub mod circuits;
pub mod cpu;
pub mod cuda;
pub mod device_ops;
pub mod domain;
pub mod dual;
pub mod error;
pub mod gen;
pub mod kind;
pub mod options;
pub mod param_file;
pub mod paramgen;
pub mod pinned;
pub mod prover;
pub mod recordings;
pub mod request;
pub mod srs;
pub mod synthesis;
pub mod verifier;

pub use any_circuit::prove_circuit;
pub use cpu::CpuBackend;
pub use cuda::CudaBackend;
pub use cuzk_kernels as kernels;
pub use cuzk_pce as pce;
pub use device_ops::{DeviceOps, OpsBackend};
pub use dual::{Dual, DualBackend};
pub use error::{Error, Result};
pub use kind::{ProofKind, RegisteredProof, SectorSize};
pub use options::{ProveOptions, Randomness};
pub use prover::{Backend, BatchItem, MemoryReport, Upcoming};
pub use request::{PostInputs, ProofInputs, ProofRequest, SectorRef, SnapInputs};
pub use srs::{Srs, SrsStore};
pub use verifier::verify;
