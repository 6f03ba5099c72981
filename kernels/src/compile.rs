//! The kernel modules, their NVRTC compilation and the on-disk CUBIN cache.
//!
//! Every module is a concatenation of embedded `.cuh`/`.cu` sources (NVRTC sees no
//! include path and no standard headers) after a few `#define`s. [`compile_module`]
//! needs NVRTC but no GPU, which is how CI checks every module of [`MODULES`] (the
//! `kernels_compile` test).

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};

use cudarc::nvrtc::{result as nvrtc_result, sys as nvrtc_sys};

use crate::error::{Error, Result};

const FIELD_CUH: &str = include_str!("../cuda/field.cuh");
const CURVE_CUH: &str = include_str!("../cuda/curve.cuh");
const FIELD_OPS_CU: &str = include_str!("../cuda/field_ops.cu");
const NTT_CU: &str = include_str!("../cuda/ntt.cu");
const MSM_DIGITS_CUH: &str = include_str!("../cuda/msm_digits.cuh");
const MSM_CU: &str = include_str!("../cuda/msm.cu");
const MSM_ONES_CU: &str = include_str!("../cuda/msm_ones.cu");
const FP2_PAIR_CUH: &str = include_str!("../cuda/fp2_pair.cuh");
const MSM_PAIR_CU: &str = include_str!("../cuda/msm_pair.cu");
const FIXED_BASE_CU: &str = include_str!("../cuda/fixed_base.cu");

/// Keeps field products out of line in curve-heavy modules (compile time, code size).
const NOINLINE_MUL: &str = "MUL_FN __device__ __noinline__";

/// Inlines point operations into the kernels: with out-of-line Fp products this keeps a
/// single level of calls, to one leaf function. Nested out-of-line calls (xyzz_add calling
/// xyzz_dbl) are miscompiled by ptxas (NVRTC 13.0): in G2 they hit
/// CUDA_ERROR_ILLEGAL_INSTRUCTION on an H200 in msm_sum_groups_g2; in G1, `xyzz_add` keeps a
/// pointer in uniform registers (one per warp) that `xyzz_dbl`, called by the warp's other
/// lanes in the doubling branch, overwrites with limbs of the modulus, so lanes adding equal
/// points beside lanes adding distinct ones read through a bad pointer
/// (CUDA_ERROR_ILLEGAL_ADDRESS; read off the machine code, see CHANGELOG.md).
/// `kernels_compile` checks that no module has any other out-of-line function.
const INLINE_POINTS: &str = "POINT_FN __device__ __forceinline__";

/// One NVRTC compilation unit: defines, then sources, in order.
#[derive(Debug, Clone, Copy)]
pub struct KernelModule {
    /// Name used in the cache and in errors.
    pub name: &'static str,
    /// Lines `#define X` put in front of the sources.
    pub defines: &'static [&'static str],
    /// Embedded sources, concatenated in this order.
    pub sources: &'static [&'static str],
}

/// Field-operation test kernels (`fr_test_ops`, `fp_test_ops`, `fp2_test_ops`, `fr_test_mont`,
/// and `fp_test_mul_sum` for `mul_sum`). Squares by the dedicated square, as in the G1
/// accumulation.
pub const FIELD: KernelModule = KernelModule {
    name: "field",
    defines: &[DEDICATED_SQR],
    sources: &[FIELD_CUH, FIELD_OPS_CU],
};
/// Fr NTT and element-wise Fr kernels.
pub const NTT: KernelModule = KernelModule {
    name: "ntt",
    defines: &[],
    sources: &[FIELD_CUH, NTT_CU],
};
/// Leaves `msm_accumulate` out of a module (it lives in the `*_ACCUMULATE` modules).
const NO_ACCUMULATE: &str = "MSM_NO_ACCUMULATE";

/// Interleaves independent field products (`mul2`, field.cuh): in the inlined G1
/// accumulation only. Measured on an H200: G1 2^26 accumulation 386.5 -> 383.0 ms;
/// G2's (two of each Fp2 product's three) 317 -> 386 ms, more spills; the NTT's radix-4
/// butterflies in pairs, 2^27 46.1-46.3 -> 46.9-47.0 ms (94 registers instead of 80, fewer
/// warps).
const PAIRED_PRODUCTS: &str = "PAIRED_PRODUCTS";

/// Squares by the dedicated square (`sqr_dedicated`, field.cuh) instead of the product:
/// in modules whose products are inlined (an out-of-line module keeps one product function).
/// Measured on an H200: Fp squares 1.27x; G1 2^26 MSM 450.1 -> 437.4 ms.
const DEDICATED_SQR: &str = "DEDICATED_SQR";

/// Computes the G1 mixed addition's Y3 = R (Q - X3) - Y PPP as one sum of two products with
/// one reduction (`mul_sum`, field.cuh; Fp only). Measured on an H200: G1 2^26 MSM
/// 437.1-437.5 -> 418.2-418.3 ms, witness-shaped scalars 81.5 -> 77.8-78.1 ms.
const SUM_PRODUCTS: &str = "SUM_PRODUCTS";

/// Keeps only the accumulation's kernels in a module.
const ACCUMULATE_ONLY: &str = "MSM_ACCUMULATE_ONLY";

/// The sources of [`MSM_G1`] and [`MSM_G2`] (the curve is a define).
const MSM_SOURCES: &[&str] = &[
    FIELD_CUH,
    CURVE_CUH,
    MSM_DIGITS_CUH,
    MSM_CU,
    MSM_ONES_CU,
    FIXED_BASE_CU,
];

/// G1 MSM kernels (suffix `_g1`) except `msm_accumulate`, and the fixed-base products of
/// parameter generation (`fixed_base.cu`), with out-of-line field products and inlined point
/// operations (see `INLINE_POINTS`).
pub const MSM_G1: KernelModule = KernelModule {
    name: "msm_g1",
    defines: &["MSM_G1", NOINLINE_MUL, INLINE_POINTS, NO_ACCUMULATE],
    sources: MSM_SOURCES,
};
/// G2 MSM kernels (suffix `_g2`) except `msm_accumulate`, and G2's fixed-base products.
pub const MSM_G2: KernelModule = KernelModule {
    name: "msm_g2",
    defines: &["MSM_G2", NOINLINE_MUL, INLINE_POINTS, NO_ACCUMULATE],
    sources: MSM_SOURCES,
};
/// G1 `msm_accumulate_g1`, `msm_fix_round_g1` and `msm_fix_store_g1` with every field product
/// and point operation inlined: the bucket accumulation is most of an MSM's time, and out-of-line
/// calls keep the accumulator in local memory (ptxas: 768-byte stack frame; inlined: none,
/// 190 registers). Its own module so that only this kernel pays the inlined compile time.
pub const MSM_G1_ACCUMULATE: KernelModule = KernelModule {
    name: "msm_g1_accumulate",
    defines: &[
        "MSM_G1",
        INLINE_POINTS,
        ACCUMULATE_ONLY,
        PAIRED_PRODUCTS,
        DEDICATED_SQR,
        SUM_PRODUCTS,
    ],
    sources: &[FIELD_CUH, CURVE_CUH, MSM_CU],
};
/// G2 `msm_fix_store_g2` and the lane-pair kernels `msm_accumulate_pair_g2`,
/// `msm_fix_round_pair_g2` and `msm_segments_pair_g2` (`fp2_pair.cuh`, `msm_pair.cu`; their
/// point formulas' Y3 = a b - c d is one `mul_sum4` a lane: G2 2^24 accumulation 307.4-310.1
/// ms on one lane -> 295.3-297.1 ms on pairs on an H200, so G2 has no one-lane accumulation),
/// everything inlined as in [`MSM_G1_ACCUMULATE`] (ptxas: 256-byte stack with some spills,
/// against a 1760-byte stack out of line).
pub const MSM_G2_ACCUMULATE: KernelModule = KernelModule {
    name: "msm_g2_accumulate",
    defines: &["MSM_G2", INLINE_POINTS, ACCUMULATE_ONLY],
    sources: &[FIELD_CUH, CURVE_CUH, FP2_PAIR_CUH, MSM_CU, MSM_PAIR_CU],
};

/// Per-thread stack, in bytes, every device context reserves when it is opened: at least the
/// largest cumulative stack ptxas reports for any kernel of [`MODULES`] (`msm_segments_g2`,
/// 1320 bytes with field products taken by value, 4072 before; `kernels_compile` checks the
/// bound), so the driver never has to grow it at a kernel's first launch. On an H200 this
/// reserves 4 KiB x 2048 threads x 132 SMs = 1.1 GiB, which the largest kernel takes at its
/// first launch anyway. (It was once counted among the cures of an intermittent MSM fault,
/// whose cause turned out to be ptxas's code for out-of-line point functions, see
/// `INLINE_POINTS`.)
pub const KERNEL_STACK_BYTES: usize = 4096;

/// Every kernel module of the crate, the slowest to compile first (on 2 cores: the inlined
/// G2 accumulation, once 180-260 s with both its one-lane and its lane-pair kernels, now
/// pairs only; G2 50-60 s; the inlined G1 accumulation 12-15 s; the others a few seconds:
/// every module in 91 s on two workers), so that [`map_modules`] never starts a slow one
/// last.
pub const MODULES: &[KernelModule] = &[
    MSM_G2_ACCUMULATE,
    MSM_G2,
    MSM_G1_ACCUMULATE,
    MSM_G1,
    NTT,
    FIELD,
];

/// Runs `f` on every module of [`MODULES`], on as many threads as the machine has cores
/// (NVRTC compiles distinct programs concurrently), taking them in [`MODULES`]' order, and
/// returns each module with its result in that order. For tools that compile every module
/// at once (the `precompile` example, the `kernels_compile` test); a device compiles a
/// module at its first use.
pub fn map_modules<T: Send>(
    f: impl Fn(&'static KernelModule) -> T + Sync,
) -> Vec<(&'static KernelModule, T)> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(MODULES.len());
    let mut done: Vec<(usize, T)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(m) = MODULES.get(i) else { break };
                        mine.push((i, f(m)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            // a worker panics only if `f` does: pass the panic on
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(i, t)| (&MODULES[i], t)).collect()
}

impl KernelModule {
    /// The full source NVRTC compiles.
    pub fn source(&self) -> String {
        let mut s = String::new();
        for d in self.defines {
            s.push_str("#define ");
            s.push_str(d);
            s.push('\n');
        }
        for src in self.sources {
            s.push_str(src);
            s.push('\n');
        }
        s
    }
}

/// NVRTC options for an architecture such as `sm_90` (real architecture: NVRTC emits CUBIN).
pub fn options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "-default-device".into(),
    ]
}

/// Fails with [`Error::NvrtcUnavailable`] unless `libnvrtc` can be loaded.
pub fn ensure_nvrtc() -> Result<()> {
    // SAFETY: only tries to dlopen the library by its candidate names.
    if unsafe { nvrtc_sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::NvrtcUnavailable)
    }
}

/// NVRTC's version as (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    ensure_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; both pointers are valid for writes.
    let status = unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
    status.result().map_err(|e| Error::Compile {
        module: "-",
        arch: String::new(),
        status: format!("{e:?}"),
        options: vec![],
        log: "nvrtcVersion failed".into(),
    })?;
    Ok((major, minor))
}

/// Compiles one module for `arch` (e.g. `sm_90`) and returns its CUBIN. Needs NVRTC, no GPU.
#[tracing::instrument(skip_all, fields(module = module.name, arch))]
pub fn compile_module(module: &KernelModule, arch: &str) -> Result<Vec<u8>> {
    compile_module_with(module, arch, &[]).map(|(cubin, _)| cubin)
}

/// As [`compile_module`] with extra NVRTC options (e.g. `--ptxas-options=-v`); also returns
/// NVRTC's log.
pub fn compile_module_with(
    module: &KernelModule,
    arch: &str,
    extra: &[&str],
) -> Result<(Vec<u8>, String)> {
    ensure_nvrtc()?;
    let mut opts = options(arch);
    opts.extend(extra.iter().map(|s| s.to_string()));
    let fail = |status: String, log: String| Error::Compile {
        module: module.name,
        arch: arch.to_string(),
        status,
        options: opts.clone(),
        log,
    };
    let src =
        CString::new(module.source()).map_err(|_| fail("NUL in source".into(), String::new()))?;
    let name = CString::new(format!("{}.cu", module.name))
        .map_err(|_| fail("NUL in name".into(), String::new()))?;
    let prog = nvrtc_result::create_program(&src, Some(&name))
        .map_err(|e| fail(format!("{e:?}"), String::new()))?;
    let prog = Program(prog);
    // SAFETY: `prog` is a live program created above; `src` and `name` outlive it.
    let compiled = unsafe { nvrtc_result::compile_program(prog.0, &opts) };
    // SAFETY: `prog` is live.
    let log = unsafe { nvrtc_result::get_program_log(prog.0) }
        .map(|raw| {
            // SAFETY: NVRTC returns a NUL-terminated log.
            unsafe { CStr::from_ptr(raw.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_else(|e| format!("(no log: {e:?})"));
    if let Err(e) = compiled {
        return Err(fail(format!("{e:?}"), log));
    }
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully; `size` is valid for writes.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog.0, &mut size) }
        .result()
        .map_err(|e| fail(format!("nvrtcGetCUBINSize: {e:?}"), String::new()))?;
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` has exactly the size NVRTC reported.
    unsafe { nvrtc_sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr().cast()) }
        .result()
        .map_err(|e| fail(format!("nvrtcGetCUBIN: {e:?}"), String::new()))?;
    Ok((cubin, log))
}

/// Owns an NVRTC program and destroys it on drop.
struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by create_program and is destroyed once.
        let _ = unsafe { nvrtc_result::destroy_program(self.0) };
    }
}

/// 128-bit FNV-1a: a stable content hash for cache keys (not for security).
fn fnv128(parts: &[&[u8]]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    for part in parts {
        for &b in *part {
            h ^= b as u128;
            h = h.wrapping_mul(PRIME);
        }
        h ^= 0xff;
        h = h.wrapping_mul(PRIME);
    }
    h
}

/// The CUBIN cache a device uses unless its front end names one
/// ([`crate::GpuDevice::set_kernel_cache`]): `$XDG_CACHE_HOME/cuzk/kernels`, else
/// `$HOME/.cache/cuzk/kernels` (the XDG base-directory convention), else the system
/// temporary directory.
pub fn default_cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("cuzk").join("kernels");
    }
    if let Some(d) = std::env::var_os("HOME") {
        return PathBuf::from(d).join(".cache").join("cuzk").join("kernels");
    }
    std::env::temp_dir().join("cuzk-kernels")
}

/// Cache file for a module: keyed by a hash of source, options and NVRTC version.
pub fn cache_path(dir: &Path, module: &KernelModule, arch: &str) -> Result<PathBuf> {
    cache_path_with(dir, module, arch, &[])
}

/// As [`cache_path`] for a compilation with `extra` NVRTC options
/// ([`compile_module_with`]): the options are part of the key.
pub fn cache_path_with(
    dir: &Path,
    module: &KernelModule,
    arch: &str,
    extra: &[&str],
) -> Result<PathBuf> {
    let (major, minor) = nvrtc_version()?;
    let version = format!("nvrtc {major}.{minor}");
    let src = module.source();
    let mut opts = options(arch);
    opts.extend(extra.iter().map(|s| s.to_string()));
    let opts = opts.join(" ");
    let h = fnv128(&[src.as_bytes(), opts.as_bytes(), version.as_bytes()]);
    Ok(dir.join(format!("{}-{arch}-{h:032x}.cubin", module.name)))
}

/// The CUBIN of `module` for `arch`, from the disk cache in `dir` when present, else
/// compiled and stored there (written to a temporary file, then renamed, so readers never see
/// half a file). Cache write failures are logged and ignored; the compiled CUBIN is still
/// returned.
pub fn load_or_compile(dir: &Path, module: &KernelModule, arch: &str) -> Result<(Vec<u8>, bool)> {
    let path = cache_path(dir, module, arch)?;
    if let Ok(bytes) = std::fs::read(&path) {
        if !bytes.is_empty() {
            return Ok((bytes, true));
        }
    }
    let cubin = compile_module(module, arch)?;
    if let Err(e) = store(&path, &cubin) {
        tracing::warn!(error = %e, "could not write the kernel cache");
    }
    Ok((cubin, false))
}

/// Writes a cache entry at `path` (its directory made if missing) through a temporary file
/// renamed into place, so that a reader never sees half an entry.
pub fn store(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| Error::Cache { path: p, source }
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    Ok(())
}

/// Removes a cache entry (used when the driver rejects a cached CUBIN).
pub(crate) fn evict(dir: &Path, module: &KernelModule, arch: &str) {
    if let Ok(p) = cache_path(dir, module, arch) {
        let _ = std::fs::remove_file(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_every_part() {
        let a = fnv128(&[b"ab", b"c"]);
        assert_ne!(a, fnv128(&[b"a", b"bc"]));
        assert_ne!(a, fnv128(&[b"ab", b"d"]));
        assert_eq!(a, fnv128(&[b"ab", b"c"]));
    }

    #[test]
    fn map_modules_returns_every_module_once_in_order() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let got = map_modules(|m| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            m.name.len()
        });
        assert_eq!(calls.into_inner(), MODULES.len());
        let names: Vec<_> = got.iter().map(|(m, _)| m.name).collect();
        let want: Vec<_> = MODULES.iter().map(|m| m.name).collect();
        assert_eq!(names, want);
        assert!(got.iter().all(|(m, len)| m.name.len() == *len));
    }

    #[test]
    fn every_module_defines_its_kernels() {
        for m in MODULES {
            let s = m.source();
            assert!(s.contains("extern \"C\" __global__"), "{}", m.name);
            assert!(
                !s.contains("#include"),
                "{}: NVRTC has no include path",
                m.name
            );
        }
    }
}
