//! Fills a CUBIN cache directory with every kernel module for an architecture (default
//! `sm_90`), so a GPU machine given that directory (`--kernel-cache DIR`, the daemon's
//! `devices.kernel_cache`, or the default `$XDG_CACHE_HOME/cuzk/kernels`) skips NVRTC at
//! first use (the G2 MSM module takes tens of seconds to compile). Needs NVRTC, no GPU:
//! `cargo run --release -p cuzk-kernels --example precompile [DIR] [sm_XY]` (DIR defaults to
//! the default cache directory).
//! Entries are keyed by source, options and NVRTC version: a machine with another NVRTC
//! simply compiles again. Modules compile on as many threads as the machine has cores.

use cuzk_kernels::compile::{default_cache_dir, load_or_compile, map_modules};

fn main() {
    // an argument that names an architecture is the architecture; another is the directory
    let (mut dir, mut arch) = (default_cache_dir(), "sm_90".to_string());
    for a in std::env::args().skip(1) {
        if a.starts_with("sm_") {
            arch = a;
        } else {
            dir = a.into();
        }
    }
    let results = map_modules(|m| {
        let t = std::time::Instant::now();
        load_or_compile(&dir, m, &arch).map(|(cubin, cached)| (cubin.len(), cached, t.elapsed()))
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
