//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong in `cuzk-kernels`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The CUDA driver library (`libcuda.so`) is not installed or cannot be loaded.
    #[error(
        "the CUDA driver library (libcuda) could not be loaded: no NVIDIA driver on this machine"
    )]
    DriverUnavailable,

    /// NVRTC (`libnvrtc.so.13`) is not installed or not on the library path.
    #[error(
        "NVRTC (libnvrtc.so.13) could not be loaded. Install it without a CUDA toolkit with \
         `pip install --target DIR 'nvidia-cuda-nvrtc==13.0.*'` and run with \
         `LD_LIBRARY_PATH=DIR/nvidia/cu13/lib` (CI uses DIR=.ci/nvrtc)"
    )]
    NvrtcUnavailable,

    /// NVRTC rejected a kernel module; `log` is NVRTC's program log.
    #[error("NVRTC failed to compile kernel module `{module}` for {arch} ({status}); options {options:?}; log:\n{log}")]
    Compile {
        /// Kernel module name (see [`crate::compile::MODULES`]).
        module: &'static str,
        /// Target architecture, e.g. `sm_90`.
        arch: String,
        /// NVRTC status code.
        status: String,
        /// Options passed to NVRTC.
        options: Vec<String>,
        /// NVRTC's program log.
        log: String,
    },

    /// A CUDA driver call failed.
    #[error("CUDA driver call failed during {op} on device {ordinal}: {source}")]
    Driver {
        /// What was being done.
        op: &'static str,
        /// CUDA device ordinal.
        ordinal: usize,
        /// The CUDA status.
        #[source]
        source: cudarc::driver::DriverError,
    },

    /// Buffer lengths do not match what the operation needs.
    #[error("length mismatch in {op}: expected {expected} elements, got {got}")]
    Length {
        /// The operation.
        op: &'static str,
        /// Elements expected.
        expected: usize,
        /// Elements given.
        got: usize,
    },

    /// A size or parameter outside what the kernels support.
    #[error("unsupported input to {op}: {detail}")]
    Unsupported {
        /// The operation.
        op: &'static str,
        /// Why.
        detail: String,
    },

    /// Reading or writing the on-disk kernel cache failed.
    #[error("kernel cache I/O error at {path}: {source}")]
    Cache {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
