//! Synthetic circuits of chosen shapes, for tests that prove circuits other than Filecoin's:
//! the engine's own (`cuzk::circuits::synthetic`), which its parameter generator's tests use
//! too.

pub use cuzk::circuits::synthetic::{Empty, Shape};
