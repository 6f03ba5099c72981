//! Fills the CUBIN cache with every kernel module for an architecture (default `sm_90`), so
//! a GPU machine given the cache directory (`CUZK_KERNEL_CACHE=DIR`) skips NVRTC at first
//! use (the G2 MSM module takes tens of seconds to compile). Needs NVRTC, no GPU:
//! `CUZK_KERNEL_CACHE=DIR cargo run --release -p cuzk-kernels --example precompile [sm_XY]`.
//! Entries are keyed by source, options and NVRTC version: a machine with another NVRTC
//! simply compiles again. Modules compile on as many threads as the machine has cores.

use cuzk_kernels::compile::{cache_dir, load_or_compile, map_modules};

fn main() {
    let arch = std::env::args().nth(1).unwrap_or_else(|| "sm_90".into());
    let dir = cache_dir();
    let results = map_modules(|m| {
        let t = std::time::Instant::now();
        load_or_compile(m, &arch).map(|(cubin, cached)| (cubin.len(), cached, t.elapsed()))
    });
    let mut failed = false;
    for (m, result) in results {
        match result {
            Ok((bytes, cached, took)) => println!(
                "{} for {arch}: {bytes} bytes ({}, {took:.1?}) in {}",
                m.name,
                if cached { "already cached" } else { "compiled" },
                dir.display()
            ),
            Err(e) => {
                eprintln!("{}: {e}", m.name);
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
