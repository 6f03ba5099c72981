//! R1CS tools for cuzk: constraint systems that turn a bellpepper-core `Circuit` into what a
//! Groth16 prover consumes, either by full synthesis or, with the PCE (pre-compiled
//! constraint evaluator), by recording A, B, C once and then computing only the witness and
//! three sparse products per proof.
//!
//! This crate knows nothing of Filecoin, actors or GPUs. It is tested against bellperson's own
//! synthesis; the engine builds its provers on top of it.
//!
//! | module | holds |
//! |---|---|
//! | [`buffers`] | partition-sized scalar vectors kept for the next partition |
//! | [`density`] | bit sets saying which variables reach the A and B queries |
//! | [`synthesis`] | full synthesis: assignments plus the a/b/c evaluations of every constraint |
//! | [`r1cs`] | recorded A, B, C in CSR form, coefficient table, densities |
//! | [`recording`] | the recording constraint system (structure only) |
//! | [`witness`](mod@witness) | witness-only synthesis (allocations only) |
//! | [`eval`] | a, b, c from a recording and a witness (sparse products) |
//! | [`check`](mod@check) | checking every constraint during synthesis, keeping only the witness |
//! | [`naming`] | the namespace path of a row, for reporting an unsatisfied constraint |
//! | [`cache`] | the on-disk format of recordings |
//! | [`error`] | the crate's error type |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod buffers;
pub mod cache;
pub mod check;
pub mod density;
pub mod error;
pub mod eval;
pub mod naming;
pub mod r1cs;
pub mod recording;
pub mod synthesis;
pub mod witness;

pub use check::{check, CheckReport, CheckingCs};
pub use density::Density;
pub use error::{Error, Result};
pub use eval::{evaluate, evaluate_sequential};
pub use naming::constraint_path;
pub use r1cs::{Csr, R1cs};
pub use recording::{record, RecordingCs};
pub use synthesis::{synthesize, Assignment, SynthesisCs};
pub use witness::{witness, WitnessCs};
