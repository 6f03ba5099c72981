//! The integration tests of `cuzk-actors`, one binary whose modules were test binaries of
//! their own (each linked the whole crate; one link is quicker). Filter by module:
//! `cargo test --profile ci -p cuzk-actors --test actors_suite engine_simulation::`.

mod engine_simulation;
mod no_locks_on_the_device_path;
mod scheduler_simulation;
