//! The engine's error type: every failure a user, a file or a device can cause, with context.

use std::path::PathBuf;

/// Errors of the engine. Each message names what failed and where (job, partition, file), so
/// a one-line report is enough for an operator to act on it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request is malformed or inconsistent (wrong sizes, unknown proof, empty input).
    #[error("invalid request: {0}")]
    InvalidRequest(String),

    /// The vanilla proof input could not be decoded.
    #[error("cannot decode {what}: {reason}")]
    Decode {
        /// What was being decoded (e.g. "C1 output JSON").
        what: String,
        /// The decoder's own message.
        reason: String,
    },

    /// A parameter (SRS) file is missing.
    #[error("parameter file {path} is missing; generate test parameters with `cuzk params --kind {kind} --sector-size {sector_size}` or install the published ones")]
    ParamsMissing {
        /// The file looked for.
        path: PathBuf,
        /// The proof kind, as the CLI spells it.
        kind: String,
        /// The sector size, as the CLI spells it.
        sector_size: String,
    },

    /// A parameter file exists but is unusable (truncated, corrupt, or for another circuit).
    #[error("parameter file {path} is unusable: {reason}")]
    ParamsInvalid {
        /// The offending file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// Building a partition's circuit or synthesising it failed.
    #[error("partition {partition}: synthesis failed: {reason}")]
    Synthesis {
        /// Partition index within the proof.
        partition: usize,
        /// The underlying reason.
        reason: String,
    },

    /// The prover failed (a backend error, or shapes that do not match the parameters).
    #[error("partition {partition}: proving failed on {backend}: {reason}")]
    Prover {
        /// Partition index within the proof.
        partition: usize,
        /// Backend name ("cpu", a GPU's PCI id, ...).
        backend: String,
        /// The underlying reason.
        reason: String,
    },

    /// A CUDA device operation failed (opening the device, an upload, a kernel, an
    /// allocation). `context` says what was being done, for which partition.
    #[error("device {device}: {context}: {source}")]
    Device {
        /// The device: its PCI id, or `cuda:<ordinal>` before it is open.
        device: String,
        /// What was being done (e.g. "partition 3: H MSM").
        context: String,
        /// The GPU library's error (boxed: it is large, and errors travel by value).
        #[source]
        source: Box<cuzk_kernels::Error>,
    },

    /// Two implementations of a device operation gave different results (the `dual`
    /// backend runs both on every operation): the partition stopped at that operation, no
    /// later one ran, and no proof was returned.
    #[error("partition {partition}: {op} differs between {first} and {second}: {detail}; no proof was returned")]
    Mismatch {
        /// Partition index within the proof.
        partition: usize,
        /// The operation ("H coefficients (NTT)", "L MSM", ...).
        op: &'static str,
        /// The implementation whose result is the reference (its name).
        first: String,
        /// The implementation checked against it.
        second: String,
        /// What differed: the first differing coefficient and both values, or both points.
        detail: String,
    },

    /// A proof was computed but does not verify: it is never returned.
    #[error("proof does not verify ({what}); it was not returned")]
    VerificationFailed {
        /// Which proof or partition failed.
        what: String,
    },

    /// Filecoin's own code reported an error (sealing, vanilla proofs, public inputs).
    #[error("filecoin-proofs: {0}")]
    Filecoin(String),

    /// An I/O error, with the path it concerns.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// `Result` with the engine's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Wraps an error from filecoin-proofs / storage-proofs (they use `anyhow`).
    pub fn filecoin(e: impl std::fmt::Display) -> Self {
        Error::Filecoin(format!("{e:#}"))
    }
}

impl From<cuzk_pce::Error> for Error {
    fn from(e: cuzk_pce::Error) -> Self {
        Error::Synthesis {
            partition: 0,
            reason: e.to_string(),
        }
    }
}

/// Runs `f`, turning a panic inside Filecoin's circuit or vanilla-proof code into an error.
///
/// storage-proofs indexes into vanilla proofs without checking their shape; a malformed input
/// must become a clear error, never a crashed engine.
pub(crate) fn catch_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::InvalidRequest(format!(
                "{what}: the input is malformed ({msg})"
            )))
        }
    }
}
