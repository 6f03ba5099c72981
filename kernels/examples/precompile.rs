//! Fills the CUBIN cache with every kernel module for an architecture (default `sm_90`), so
//! a GPU machine given the cache directory (`CUZK_KERNEL_CACHE=DIR`) skips NVRTC at first
//! use (the G2 MSM module takes tens of seconds to compile). Needs NVRTC, no GPU:
//! `CUZK_KERNEL_CACHE=DIR cargo run --release -p cuzk-kernels --example precompile [sm_XY]`.
//! Entries are keyed by source, options and NVRTC version: a machine with another NVRTC
//! simply compiles again.

fn main() {
    let arch = std::env::args().nth(1).unwrap_or_else(|| "sm_90".into());
    let dir = cuzk_kernels::compile::cache_dir();
    for m in cuzk_kernels::compile::MODULES {
        let t = std::time::Instant::now();
        match cuzk_kernels::compile::load_or_compile(m, &arch) {
            Ok((cubin, cached)) => println!(
                "{} for {arch}: {} bytes ({}, {:.1?}) in {}",
                m.name,
                cubin.len(),
                if cached { "already cached" } else { "compiled" },
                t.elapsed(),
                dir.display()
            ),
            Err(e) => {
                eprintln!("{}: {e}", m.name);
                std::process::exit(1);
            }
        }
    }
}
