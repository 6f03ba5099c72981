//! The crate's error type.

/// Errors raised while synthesising a circuit.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The circuit itself reported an error while it was synthesised (a missing witness value,
    /// an unsatisfiable gadget, ...).
    #[error("circuit synthesis failed: {0}")]
    Synthesis(#[from] bellpepper_core::SynthesisError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
