//! Every kernel module compiled once for sm_90, with ptxas's verbose log, for the tests that
//! read what NVRTC made of it (`kernels_compile`, `kernels_sass`): the G2 accumulation alone
//! takes more than a minute on CI's two cores, so no module is compiled twice. ptxas's `-v`
//! adds the log and changes nothing else of the code: the SASS is the one a device loads
//! (only the ELF note naming ptxas's options differs).

use std::sync::OnceLock;

use cuzk_kernels::compile::{compile_module_with, map_modules, KernelModule};

/// A module's CUBIN and NVRTC's log, or NVRTC's error.
pub type Compiled = Result<(Vec<u8>, String), String>;

/// Each module of [`MODULES`](cuzk_kernels::compile::MODULES) with what compiling it gave, in that order: compiled on every
/// core at the first call, once for the test binary.
pub fn all() -> &'static [(&'static KernelModule, Compiled)] {
    static ALL: OnceLock<Vec<(&'static KernelModule, Compiled)>> = OnceLock::new();
    ALL.get_or_init(|| {
        map_modules(|m| {
            compile_module_with(m, "sm_90", &["--ptxas-options=-v"]).map_err(|e| e.to_string())
        })
    })
}

/// `module`'s CUBIN and ptxas's log; panics with NVRTC's error where it did not compile.
pub fn module(module: &KernelModule) -> (&'static [u8], &'static str) {
    let (_, compiled) = all()
        .iter()
        .find(|(m, _)| m.name == module.name)
        .unwrap_or_else(|| panic!("{} is not in MODULES", module.name));
    match compiled {
        Ok((cubin, log)) => (cubin, log),
        Err(e) => panic!("{e}"),
    }
}
