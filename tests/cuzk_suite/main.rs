//! The integration tests of `cuzk`, one binary: each module was a test binary of its own, and
//! every binary linked the whole stack (on CI's two cores, linking was a large share of a
//! run). Filter by module: `cargo test --profile ci --test cuzk_suite daemon::`.
//!
//! Tests share this process: none sets an environment variable or changes the current
//! directory (configuration is passed explicitly), the fixtures in [`support`] are made once
//! for all modules, and a test that proves on the CPU shares the cores with others of its
//! kind but never with a daemon test ([`support::cores_shared`]).

mod daemon_support;
mod support;

mod any_circuit_matches_bellperson;
mod bad_input_is_a_clear_error;
mod cli;
mod daemon;
mod daemon_hostile;
mod daemon_python;
mod dual_backend;
mod engine_real_proofs;
mod gpu_engine;
mod gpu_proofs;
mod pce_matches_full_synthesis_for_every_kind;
mod proofs_match_bellperson;
