//! Every kernel module compiled once for sm_90, with ptxas's verbose log, for the tests that
//! read what NVRTC made of it (`kernels_compile`, `kernels_sass`): the G2 accumulation alone
//! takes more than a minute on CI's two cores, so no module is compiled twice. ptxas's `-v`
//! adds the log and changes nothing else of the code: the SASS is the one a device loads
//! (only the ELF note naming ptxas's options differs).
//!
//! What NVRTC gave is kept between runs, like the test parameters, in `$CUZK_TEST_KERNELS`
//! (else `target/cuzk-test-kernels`), each entry keyed by everything NVRTC sees: the module's
//! source, the options and NVRTC's version ([`cache_path_with`]). A kernel that changed, or
//! another NVRTC, is compiled afresh; an unchanged one is read back.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cuzk_kernels::compile::{
    cache_path_with, compile_module_with, map_modules, store, KernelModule,
};

/// A module's CUBIN and NVRTC's log, or NVRTC's error.
pub type Compiled = Result<(Vec<u8>, String), String>;

/// The architecture and the extra option every module is compiled with here.
const ARCH: &str = "sm_90";
const VERBOSE: &[&str] = &["--ptxas-options=-v"];

/// Where compiled modules are kept between runs.
fn kept_in() -> PathBuf {
    std::env::var_os("CUZK_TEST_KERNELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/cuzk-test-kernels")
        })
}

/// Each module of [`MODULES`](cuzk_kernels::compile::MODULES) with what compiling it gave, in that order: compiled on every
/// core at the first call, once for the test binary (or read back from an earlier run).
pub fn all() -> &'static [(&'static KernelModule, Compiled)] {
    static ALL: OnceLock<Vec<(&'static KernelModule, Compiled)>> = OnceLock::new();
    ALL.get_or_init(|| {
        let dir = kept_in();
        map_modules(|m| kept_or_compiled(&dir, m))
    })
}

/// `module` as an earlier run compiled it from the same source, options and NVRTC, else
/// compiled now and kept (a failure to keep it is reported, not fatal).
fn kept_or_compiled(dir: &Path, module: &KernelModule) -> Compiled {
    let cubin_path = cache_path_with(dir, module, ARCH, VERBOSE).map_err(|e| e.to_string())?;
    let log_path = cubin_path.with_extension("log");
    // the CUBIN is written last: where it is, its log is complete
    if let (Ok(cubin), Ok(log)) = (
        std::fs::read(&cubin_path),
        std::fs::read_to_string(&log_path),
    ) {
        if !cubin.is_empty() {
            return Ok((cubin, log));
        }
    }
    let (cubin, log) = compile_module_with(module, ARCH, VERBOSE).map_err(|e| e.to_string())?;
    let keep = store(&log_path, log.as_bytes()).and_then(|()| store(&cubin_path, &cubin));
    if let Err(e) = keep {
        eprintln!("{}: not kept in {}: {e}", module.name, dir.display());
    }
    Ok((cubin, log))
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
