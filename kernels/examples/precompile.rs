//! Fills the CUBIN cache with every kernel module for an architecture (default `sm_90`), so
//! a GPU machine given the cache directory (`CUZK_KERNEL_CACHE=DIR`) skips NVRTC at first
//! use (the G2 MSM module takes tens of seconds to compile). Needs NVRTC, no GPU:
//! `CUZK_KERNEL_CACHE=DIR cargo run --release -p cuzk-kernels --example precompile [sm_XY]`.
//! Entries are keyed by source, options and NVRTC version: a machine with another NVRTC
//! simply compiles again. Modules compile on as many threads as the machine has cores.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

fn main() {
    let arch = std::env::args().nth(1).unwrap_or_else(|| "sm_90".into());
    let dir = cuzk_kernels::compile::cache_dir();
    let modules = cuzk_kernels::compile::MODULES;
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(modules.len());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while let Some(m) = modules.get(next.fetch_add(1, Ordering::Relaxed)) {
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
                            failed.store(true, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    if failed.load(Ordering::Relaxed) {
        std::process::exit(1);
    }
}
