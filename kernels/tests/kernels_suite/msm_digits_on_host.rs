//! The MSM's window digits (`cuda/msm_digits.cuh`, the code the sorting kernels run) on the
//! host: `cuda/digits_check.cpp` walks the windows of random and edge-case scalars at every
//! width 8..=20 from held words, as `msm_scatter_tiled` does, and checks them against
//! `signed_digit` and against the scalar itself (the digits must sum to it). An earlier form
//! of the tiled scatter read an uninitialised word in window 0, found only on a device; this
//! finds that class of fault on any machine with a C++ compiler.

use std::process::Command;

use cuzk_kernels::testdata::{compile_host_check, seed};

#[test]
#[ignore = "needs a host C++ compiler (c++ or $CXX)"]
fn msm_digits_on_host_sum_to_their_scalars() {
    let seed = seed();
    println!("seed {seed}");
    let exe = compile_host_check("digits_check", &["-Wall", "-Werror"]);
    let out = Command::new(&exe).arg(seed.to_string()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if let Some(dir) = exe.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
    assert!(out.status.success(), "digits_check (seed {seed}): {text}");
    let words: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"ok"), "digits_check: {text}");
    // 4000 scalars, each at 13 widths with two window counts: over a million digits
    let scalars: u64 = words[1].parse().unwrap();
    let digits: u64 = words[2].parse().unwrap();
    assert_eq!(scalars, 4000, "{text}");
    assert!(digits > 1_000_000, "{text}");
}
