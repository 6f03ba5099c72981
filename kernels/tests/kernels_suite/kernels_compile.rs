//! Every kernel module compiles with NVRTC for sm_90, on a machine with no GPU.
//!
//! Needs `libnvrtc.so.13` on the library path (CI: `pip install --target .ci/nvrtc
//! 'nvidia-cuda-nvrtc==13.0.*'` and `LD_LIBRARY_PATH=.ci/nvrtc/nvidia/cu13/lib`). Without it
//! this test fails, on purpose: broken CUDA must not land silently.

use cuzk_kernels::compile::{
    compile_module, ensure_nvrtc, nvrtc_version, KernelModule, KERNEL_STACK_BYTES, MODULES, MSM_G1,
    MSM_G1_ACCUMULATE, MSM_G2, MSM_G2_ACCUMULATE,
};

use crate::compiled;

/// MSM kernels the host launches from [`MSM_G1`] / [`MSM_G2`] (before the `_g1`/`_g2` suffix).
/// The inlined modules ([`MSM_G1_ACCUMULATE`] / [`MSM_G2_ACCUMULATE`]) hold [`ACCUMULATE_KERNELS`].
const MSM_KERNELS: &[&str] = &[
    "msm_scalars",
    "msm_histogram",
    "msm_block_sums",
    "msm_scan",
    "msm_run_first",
    "msm_bin_flags",
    "msm_scatter",
    "msm_bin_sort",
    "msm_segments",
    "msm_sum_groups",
    "ones_count",
    "ones_emit",
    "ones_buckets",
    "ones_runs",
    "gather_points",
    "curve_test_ops",
];

/// MSM kernels the host launches from the inlined modules (no calls through the ABI).
const ACCUMULATE_KERNELS: &[&str] = &["msm_accumulate", "msm_fix_round", "msm_fix_store"];

/// Of [`ACCUMULATE_KERNELS`], those G2 runs on lane pairs only ([`PAIR_KERNELS`]): its
/// inlined module has no one-lane form of them.
const PAIR_ONLY_KERNELS: &[&str] = &["msm_accumulate", "msm_fix_round"];

/// Kernels whose lane-pair forms (`{name}_pair_g2`, fp2_pair.cuh) the host launches from the
/// inlined G2 module (`MsmCurve::PAIR_KERNELS`).
const PAIR_KERNELS: &[&str] = &["msm_accumulate", "msm_fix_round", "msm_segments"];

/// The out-of-line device functions of a module: ptxas's verbose log names every function
/// it compiles ("Function properties for NAME"); entry functions are also announced
/// ("Compiling entry function 'NAME'"), the others are subroutines the kernels call.
fn subroutines(log: &str) -> Vec<String> {
    let entries: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split("Compiling entry function '").nth(1))
        .filter_map(|rest| rest.split('\'').next())
        .collect();
    let mut out: Vec<String> = log
        .lines()
        .filter_map(|l| l.split("Function properties for ").nth(1))
        .map(|n| n.trim().to_string())
        .filter(|n| !entries.contains(&n.as_str()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Every stack size ptxas's verbose log reports ("N bytes stack frame", "N bytes cumulative
/// stack size").
fn stack_sizes(log: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for line in log.lines() {
        for marker in [" bytes stack frame", " bytes cumulative stack size"] {
            if let Some(end) = line.find(marker) {
                let digits: String = line[..end]
                    .chars()
                    .rev()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                if let Ok(n) = digits.chars().rev().collect::<String>().parse() {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// Whether the CUBIN (an ELF file) names `symbol`: its string tables hold each kernel's name,
/// NUL-terminated.
fn names(cubin: &[u8], symbol: &str) -> bool {
    let mut want = symbol.as_bytes().to_vec();
    want.push(0);
    cubin.windows(want.len()).any(|w| w == want.as_slice())
}

#[test]
fn kernels_compile_for_sm_90() {
    if let Err(e) = ensure_nvrtc() {
        panic!("{e}");
    }
    let (major, minor) = nvrtc_version().unwrap_or_else(|e| panic!("{e}"));
    let t = std::time::Instant::now();
    let mut cubins = Vec::with_capacity(MODULES.len());
    // every module at once, on every core (two cores halve this test's time in CI), once for
    // this and the SASS tests
    for (m, result) in compiled::all() {
        let (cubin, log) = result.as_ref().unwrap_or_else(|e| panic!("{e}"));
        // every kernel's stack fits what each context reserves up front (KERNEL_STACK_BYTES)
        let stacks = stack_sizes(log);
        assert!(!stacks.is_empty(), "{}: no ptxas report in {log}", m.name);
        let most = stacks.iter().copied().max().unwrap_or(0);
        assert!(
            most <= KERNEL_STACK_BYTES,
            "{}: a kernel needs {most} bytes of stack, contexts reserve {KERNEL_STACK_BYTES}",
            m.name
        );
        println!(
            "nvrtc {major}.{minor}: {} -> {} bytes of CUBIN for sm_90",
            m.name,
            cubin.len()
        );
        assert!(!cubin.is_empty(), "{}: empty CUBIN", m.name);
        // the only out-of-line function a kernel may call is the Montgomery product (a leaf,
        // mangled `_Zml...`): ptxas miscompiles calls between point functions in divergent
        // code (compile::INLINE_POINTS)
        let calls = subroutines(log);
        assert!(
            calls.iter().all(|f| f.starts_with("_Zml")),
            "{}: out-of-line functions other than the field product: {calls:?}",
            m.name
        );
        cubins.push((m.name, cubin));
    }
    println!("all modules in {:.1?}", t.elapsed());

    // The MSM is split over two modules per curve: every kernel the host looks up must be
    // in the module it looks in, and msm_accumulate only in the inlined one.
    let cubin = |m: &KernelModule| {
        &cubins
            .iter()
            .find(|(n, _)| *n == m.name)
            .unwrap_or_else(|| panic!("{} is not in MODULES", m.name))
            .1
    };
    for (main, acc, suffix) in [
        (&MSM_G1, &MSM_G1_ACCUMULATE, "_g1"),
        (&MSM_G2, &MSM_G2_ACCUMULATE, "_g2"),
    ] {
        for k in MSM_KERNELS {
            let name = format!("{k}{suffix}");
            assert!(names(cubin(main), &name), "{}: no {name}", main.name);
        }
        for k in ACCUMULATE_KERNELS {
            let name = format!("{k}{suffix}");
            let one_lane = suffix == "_g1" || !PAIR_ONLY_KERNELS.contains(k);
            assert_eq!(names(cubin(acc), &name), one_lane, "{}: {name}", acc.name);
            assert!(
                !names(cubin(main), &name),
                "{}: {name} belongs to {} only",
                main.name,
                acc.name
            );
        }
        for k in PAIR_KERNELS {
            let name = format!("{k}_pair{suffix}");
            let want = suffix == "_g2";
            assert_eq!(names(cubin(acc), &name), want, "{}: {name}", acc.name);
        }
        let accumulate = format!("msm_accumulate{suffix}");
        assert!(
            !names(cubin(main), &accumulate),
            "{}: {accumulate} belongs to {} only",
            main.name,
            acc.name
        );
        assert!(
            !names(cubin(acc), &format!("msm_scatter{suffix}")),
            "{}: holds more than the accumulation",
            acc.name
        );
    }
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

/// A device reads its modules from the cache directory it is given: an entry placed at a
/// module's key in a fresh directory is what `load_or_compile` returns, marked cached,
/// without compiling; the same module in another directory is not found there.
#[test]
fn modules_are_read_from_the_cache_directory_given() {
    use cuzk_kernels::compile::{cache_path, load_or_compile};
    let root = std::env::temp_dir().join(format!("cuzk-kernel-cache-{}", std::process::id()));
    let (given, other) = (root.join("given"), root.join("other"));
    std::fs::create_dir_all(&given).expect("a temporary directory");
    let module = &MODULES[0];
    let entry = cache_path(&given, module, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert!(entry.starts_with(&given), "{}", entry.display());
    std::fs::write(&entry, b"a cached cubin").expect("write the entry");
    let (bytes, cached) =
        load_or_compile(&given, module, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert!(cached);
    assert_eq!(bytes, b"a cached cubin");
    let elsewhere = cache_path(&other, module, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert!(!elsewhere.exists());
    std::fs::remove_dir_all(&root).expect("clean up");
}
