//! R1CS tools for cuzk: constraint systems that turn a bellpepper-core `Circuit` into what a
//! Groth16 prover consumes.
//!
//! This crate knows nothing of Filecoin, actors or GPUs. It is tested against bellperson's own
//! synthesis; the engine builds its provers on top of it.
//!
//! | module | holds |
//! |---|---|
//! | [`density`] | bit sets saying which variables reach the A and B queries |
//! | [`synthesis`] | full synthesis: assignments plus the a/b/c evaluations of every constraint |
//! | [`error`] | the crate's error type |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod density;
pub mod error;
pub mod synthesis;

pub use density::Density;
pub use error::{Error, Result};
pub use synthesis::{synthesize, Assignment, SynthesisCs};
