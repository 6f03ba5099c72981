//! The integration tests of `cuzk-kernels`, one binary whose modules were test binaries of
//! their own (each linked the whole crate; one link is quicker). Filter by module:
//! `cargo test --profile ci -p cuzk-kernels --test kernels_suite kernels_sass::`. The device
//! tests are `gpu_kernels::` (ignored without `--include-ignored`; `.ci/device-suite` runs
//! them on a GPU machine).

mod compiled;
mod field_algorithms_on_host;
mod gpu_kernels;
mod kernels_compile;
mod kernels_sass;
mod msm_digits_on_host;
