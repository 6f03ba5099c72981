//! The crate's error type.

/// Errors raised while synthesising a circuit.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The circuit itself reported an error while it was synthesised (a missing witness value,
    /// an unsatisfiable gadget, ...).
    #[error("circuit synthesis failed: {0}")]
    Synthesis(#[from] bellpepper_core::SynthesisError),

    /// A recorded circuit has more variables or entries than the 32-bit format holds.
    #[error("circuit too large for the recorded format (over 2^31 variables or 2^32 entries per matrix)")]
    TooLarge,

    /// A witness does not fit the recorded circuit.
    #[error("witness does not fit the recorded circuit: {0}")]
    ShapeMismatch(String),

    /// A cache file is unusable (missing, truncated, corrupt, another version or circuit).
    #[error("PCE cache file {path}: {reason}")]
    Cache {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
