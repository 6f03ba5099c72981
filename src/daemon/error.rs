//! The daemon's error type: configuration, listening, the engine, and the client side.

use std::path::PathBuf;

/// Errors of the daemon and its client. Messages name the file, address or job concerned.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The configuration (file or environment) is unusable.
    #[error("configuration {source_name}: {reason}")]
    Config {
        /// The file, or the environment variable, that holds the bad value.
        source_name: String,
        /// What is wrong.
        reason: String,
    },
    /// The listening address cannot be parsed or bound.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address as configured.
        addr: String,
        /// Why.
        reason: String,
    },
    /// The engine refused to start or failed.
    #[error("engine: {0}")]
    Engine(String),
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The client cannot reach the daemon.
    #[error("cannot connect to the daemon at {addr}: {reason}")]
    Connect {
        /// The address tried.
        addr: String,
        /// Why.
        reason: String,
    },
    /// The daemon answered a call with an error.
    #[error("{call}: {code}: {message}")]
    Rpc {
        /// The gRPC method.
        call: &'static str,
        /// The gRPC status code, as tonic names it.
        code: String,
        /// The daemon's message.
        message: String,
    },
    /// A request could not be built from the caller's input.
    #[error(transparent)]
    Request(#[from] crate::Error),
}

/// `Result` with [`DaemonError`].
pub type Result<T> = std::result::Result<T, DaemonError>;

impl DaemonError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DaemonError::Io {
            path: path.into(),
            source,
        }
    }

    /// Wraps a gRPC status returned by `call`.
    pub fn rpc(call: &'static str, status: tonic::Status) -> Self {
        DaemonError::Rpc {
            call,
            code: format!("{:?}", status.code()),
            message: status.message().to_string(),
        }
    }
}
