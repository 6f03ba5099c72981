//! Every kernel module compiles with NVRTC for sm_90, on a machine with no GPU.
//!
//! Needs `libnvrtc.so.13` on the library path (CI: `pip install --target .ci/nvrtc
//! 'nvidia-cuda-nvrtc==13.0.*'` and `LD_LIBRARY_PATH=.ci/nvrtc/nvidia/cu13/lib`). Without it
//! this test fails, on purpose: broken CUDA must not land silently.

use cuzk_kernels::compile::{
    compile_all, compile_module, ensure_nvrtc, nvrtc_version, KernelModule, MODULES,
};

#[test]
fn kernels_compile_for_sm_90() {
    if let Err(e) = ensure_nvrtc() {
        panic!("{e}");
    }
    let (major, minor) = nvrtc_version().unwrap_or_else(|e| panic!("{e}"));
    let t = std::time::Instant::now();
    let compiled = compile_all("sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(compiled.len(), MODULES.len());
    for (name, bytes) in compiled {
        println!("nvrtc {major}.{minor}: {name} -> {bytes} bytes of CUBIN for sm_90");
        assert!(bytes > 0, "{name}: empty CUBIN");
    }
    println!("all modules in {:.1?}", t.elapsed());
}

#[test]
fn kernels_compile_reports_the_nvrtc_log() {
    if let Err(e) = ensure_nvrtc() {
        panic!("{e}");
    }
    const BROKEN: &str = "extern \"C\" __global__ void k() { this_is_not_cuda; }";
    let m = KernelModule {
        name: "broken",
        defines: &[],
        sources: &[BROKEN],
    };
    let err = compile_module(&m, "sm_90")
        .expect_err("a syntax error must fail")
        .to_string();
    assert!(
        err.contains("this_is_not_cuda"),
        "the error should carry NVRTC's log: {err}"
    );
}
