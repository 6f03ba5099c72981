//! The field arithmetic of `cuda/field.cuh`, compiled for the host with a C++ compiler (its
//! PTX carry primitives are emulated there), agrees with blstrs/blst. This checks the
//! algorithms without a GPU; the device tests check the real PTX.
//!
//! Needs `c++` (or `$CXX`) on the PATH, hence ignored by default:
//! `cargo test --release -p cuzk-kernels --test kernels_suite field_algorithms_on_host:: --
//! --include-ignored`.

use std::io::Write;
use std::process::{Command, Stdio};

use blstrs::Scalar;
use cuzk_kernels::layout::{fp_from_limbs, host, scalar_raw};
use cuzk_kernels::testdata::{compile_host_check, g1_points, scalars, seed};
use ff::Field;

fn hex(limbs: &[u64]) -> String {
    limbs.iter().rev().map(|l| format!("{l:016x}")).collect()
}

fn limbs(hex: &str) -> Vec<u64> {
    let words: Vec<u64> = (0..hex.len() / 16)
        .map(|i| u64::from_str_radix(&hex[16 * i..16 * i + 16], 16).unwrap_or(u64::MAX))
        .collect();
    words.into_iter().rev().collect()
}

#[test]
#[ignore = "needs a host C++ compiler (c++ or $CXX)"]
fn field_algorithms_on_host_match_blstrs() {
    let seed = seed();
    println!("seed {seed}");
    let exe = compile_host_check("host_check", &["-w"]);

    let n = 2000;
    let mut a = scalars(seed, n);
    let mut b = scalars(seed + 1, n);
    b[0] = Scalar::ZERO;
    b[1] = -Scalar::ONE;
    let pa = g1_points(seed, n);
    let pb = g1_points(seed + 1, n);
    let mut fa: Vec<_> = pa.iter().map(|p| blst::blst_fp::from(p.x())).collect();
    let mut fb: Vec<_> = pb.iter().map(|p| blst::blst_fp::from(p.y())).collect();
    // raw limb edges (any value below p is a valid Montgomery form): 0, 1, p - 1, a full low
    // half with a zero high half and the reverse, for the carries of the wide square
    let raw = |l: [u64; 6]| blst::blst_fp { l };
    let one = raw([1, 0, 0, 0, 0, 0]);
    let edges = [
        raw([0; 6]),
        one,
        host::fp_neg(&one),
        raw([u64::MAX, u64::MAX, u64::MAX, 0, 0, 0]),
        raw([0, 0, 0, u64::MAX, u64::MAX, 0x1a01_11ea_397f_e699]),
    ];
    for (i, e) in edges.iter().enumerate() {
        for (j, f) in edges.iter().enumerate() {
            fa[10 + 5 * i + j] = *e;
            fb[10 + 5 * i + j] = *f;
        }
    }
    // raw Fr limb edges (below r): 0, 1, r - 1, a full low half, the high words at their
    // largest; the lazy checks lift them to x + r, up to 2r - 1
    let fr_raw = |l: [u64; 4]| Scalar::from(blst::blst_fr { l });
    let fr_edges = [
        fr_raw([0; 4]),
        fr_raw([1, 0, 0, 0]),
        fr_raw([
            0xffff_ffff_0000_0000,
            0x53bd_a402_fffe_5bfe,
            0x3339_d808_09a1_d805,
            0x73ed_a753_299d_7d48,
        ]),
        fr_raw([u64::MAX, u64::MAX, 0, 0]),
        fr_raw([0, u64::MAX, u64::MAX, 0x73ed_a753_299d_7d47]),
    ];
    for (i, e) in fr_edges.iter().enumerate() {
        for (j, f) in fr_edges.iter().enumerate() {
            a[40 + 5 * i + j] = *e;
            b[40 + 5 * i + j] = *f;
        }
    }
    let mut input = String::new();
    for i in 0..n {
        input += &format!(
            "fr {} {}\n",
            hex(&scalar_raw(&a[i]).0),
            hex(&scalar_raw(&b[i]).0)
        );
        input += &format!("fp {} {}\n", hex(&fa[i].l), hex(&fb[i].l));
    }
    // feed stdin from a thread: the child's output would fill the pipe otherwise
    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 * n, "host_check output");
    for i in 0..n {
        let fr: Vec<&str> = lines[2 * i].split_whitespace().collect();
        // a fifth word is host_check's "mul2-mismatch" (the interleaved pair went wrong),
        // "sqr-mismatch" (the dedicated square did), "sum-mismatch" or "sum4-mismatch" (a
        // sum of products with one reduction did), "pair-mismatch" (a lane-pair Fp2 product or
        // sum of products did) or "lazy-mismatch" (the lazy operations)
        assert_eq!(fr.len(), 4, "Fr line {i}: {} (seed {seed})", lines[2 * i]);
        let want = [a[i] + b[i], a[i] - b[i], a[i] * b[i], a[i].square()];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                limbs(fr[k]),
                scalar_raw(w).0.to_vec(),
                "Fr op {k} at {i} (seed {seed})"
            );
        }
        let fp: Vec<&str> = lines[2 * i + 1].split_whitespace().collect();
        assert_eq!(
            fp.len(),
            4,
            "Fp line {i}: {} (seed {seed})",
            lines[2 * i + 1]
        );
        let (x, y) = (&fa[i], &fb[i]);
        let want = [
            host::fp_add(x, y),
            host::fp_sub(x, y),
            host::fp_mul(x, y),
            host::fp_sqr(x),
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                fp_from_limbs(&limbs(fp[k])).l,
                w.l,
                "Fp op {k} at {i} (seed {seed})"
            );
        }
    }
    if let Some(dir) = exe.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
