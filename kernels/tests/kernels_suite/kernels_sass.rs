//! What ptxas makes of the Fr kernels that bound the NTT, and of the G1 accumulation, read on a
//! machine with no GPU: the SASS by `nvdisasm` and the register counts by ptxas's verbose log
//! (ptxas once split every reduction product of the Fr product in three, which cost the 2^27
//! NTT 5%; a G1 accumulation four registers over its three blocks an SM was measured 1.2%
//! slower).
//!
//! Needs `libnvrtc.so.13` (as `kernels_compile`) and `nvdisasm`: `$CUZK_NVDISASM`, else
//! `nvdisasm` on the PATH (CI: `pip install --target .ci/nvdisasm 'nvidia-cuda-nvdisasm==13.*'`).
//! Without them these tests fail, on purpose: a slower product must not land silently.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use cuzk_kernels::compile::{KernelModule, MSM_G1_ACCUMULATE, NTT};

use crate::compiled;

/// The NTT pass kernels (every form). Each must fit six blocks of 128 threads an SM: at most
/// [`PASS_MAX_REGISTERS`] registers (65,536 / 768), which the passes were measured at.
const PASS_KERNELS: &[&str] = &[
    "ntt_pass",
    "ntt_pass_s0",
    "ntt_pass_dif",
    "ntt_pass_coset",
    "ntt_pass_dif_coset",
];
/// The NTT module's other Fr kernels with products: the H polynomial's element-wise products
/// and the coset distribution. With [`PASS_KERNELS`], every product must be whole `IMAD.WIDE`.
const ELEMENT_KERNELS: &[&str] = &[
    "ntt_distribute",
    "fr_mul_assign",
    "fr_mul_sub",
    "fr_mul_sub_scaled",
];
const PASS_MAX_REGISTERS: u32 = 80;
/// The G1 accumulation's registers for three blocks of 128 threads an SM (65,536 / 384,
/// rounded down to ptxas's allocation unit of 8).
const G1_ACCUMULATE_MAX_REGISTERS: u32 = 168;

fn nvdisasm() -> PathBuf {
    std::env::var_os("CUZK_NVDISASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("nvdisasm"))
}

/// The opcodes of each kernel of a CUBIN (with their modifiers, without predicates or
/// operands), from `nvdisasm -c`: a kernel's code follows its `.text.NAME:` label.
fn sass(module: &KernelModule) -> HashMap<String, Vec<String>> {
    let (cubin, _) = compiled::module(module);
    // nvdisasm reads a file: one a process and module, removed once read
    let path = std::env::temp_dir().join(format!(
        "cuzk-sass-{}-{}.cubin",
        std::process::id(),
        module.name
    ));
    std::fs::write(&path, cubin).expect("the CUBIN is written");
    let out = Command::new(nvdisasm()).arg("-c").arg(&path).output();
    let _ = std::fs::remove_file(&path);
    let out = out.unwrap_or_else(|e| {
        panic!(
            "cannot run {} ({e}): install nvidia-cuda-nvdisasm and set CUZK_NVDISASM",
            nvdisasm().display()
        )
    });
    assert!(
        out.status.success(),
        "nvdisasm failed on {}: {}",
        module.name,
        String::from_utf8_lossy(&out.stderr)
    );
    parse_sass(&String::from_utf8_lossy(&out.stdout))
}

fn parse_sass(text: &str) -> HashMap<String, Vec<String>> {
    let mut kernels: HashMap<String, Vec<String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line
            .strip_prefix(".text.")
            .and_then(|l| l.strip_suffix(':'))
        {
            current = Some(name.to_string());
            kernels.entry(name.to_string()).or_default();
            continue;
        }
        let (Some(name), Some(rest)) = (&current, line.trim_start().strip_prefix("/*")) else {
            continue;
        };
        // "/*0040*/  @!P0 IMAD.WIDE.U32.X R4, P0, R2, R3, R4, P1 ;"
        let Some((addr, code)) = rest.split_once("*/") else {
            continue;
        };
        if !addr.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let mut words = code.split_whitespace();
        let Some(mut op) = words.next() else { continue };
        if op.starts_with('@') {
            let Some(next) = words.next() else { continue };
            op = next;
        }
        if let Some(list) = kernels.get_mut(name) {
            list.push(op.trim_end_matches(';').to_string());
        }
    }
    kernels
}

fn count(ops: &[String], op: &str) -> usize {
    ops.iter().filter(|o| *o == op).count()
}

#[test]
fn kernels_sass_parser_reads_opcodes_and_predicates() {
    let text = [
        "\t.section\t.text.a,\"ax\",@progbits",
        ".text.a:",
        "        /*0000*/                   IMAD.WIDE.U32.X R4, P0, R2, R3, R4, P1 ;",
        "        /* 0x000fe200078e00ff */",
        "        /*0010*/               @!P0 IMAD.HI.U32.X R5, R2, R3, R4, P2 ;",
        ".text.b:",
        "        /*0000*/                   EXIT ;",
    ]
    .join("\n");
    let k = parse_sass(&text);
    let ops = |name: &str| k.get(name).cloned().unwrap_or_default();
    assert_eq!(ops("a"), ["IMAD.WIDE.U32.X", "IMAD.HI.U32.X"]);
    assert_eq!(ops("b"), ["EXIT"]);
    assert_eq!(k.len(), 2);
}

/// Every Fr product in these kernels is whole `IMAD.WIDE.U32(.X)` multiplies: no product split
/// into `IMAD.X` and `IMAD.HI.U32.X` (which holds the multiply pipe as long as a whole one).
/// ptxas split each of the reduction's products while it could see that the row multiplier is a
/// negation (field.cuh, `low_one_mi`).
#[test]
fn kernels_sass_fr_products_are_whole_wide_multiplies() {
    let ntt_kernels: Vec<&str> = PASS_KERNELS
        .iter()
        .chain(ELEMENT_KERNELS)
        .copied()
        .collect();
    let kernels = sass(&NTT);
    for name in &ntt_kernels {
        let ops = kernels
            .get(*name)
            .unwrap_or_else(|| panic!("{}: no kernel {name} in the SASS", NTT.name));
        let wide = count(ops, "IMAD.WIDE.U32.X");
        let split = count(ops, "IMAD.HI.U32.X");
        assert!(
            wide > 0,
            "{}: {name} has no IMAD.WIDE.U32.X: not a product kernel?",
            NTT.name
        );
        assert_eq!(
            split, 0,
            "{}: {name} splits {split} products into IMAD.X + IMAD.HI.U32.X (beside {wide} whole ones)",
            NTT.name
        );
    }
}

/// ptxas's verbose log: registers and spill bytes of each entry function.
fn registers(log: &str) -> HashMap<String, (u32, u32)> {
    let number_before = |text: &str, key: &str| -> Option<u32> {
        let at = text.find(key)?;
        text[..at].split_whitespace().last()?.parse().ok()
    };
    let mut out = HashMap::new();
    for part in log.split("Compiling entry function '").skip(1) {
        let Some((name, body)) = part.split_once('\'') else {
            continue;
        };
        let regs = body
            .split("Used ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok());
        let spills = number_before(body, "bytes spill stores");
        if let (Some(r), Some(s)) = (regs, spills) {
            out.insert(name.to_string(), (r, s));
        }
    }
    out
}

/// The NTT passes fit six blocks of 128 threads an SM and spill nothing (ntt_pass_s0 by its
/// `__maxnreg__`: without it, 86 registers).
#[test]
fn kernels_sass_ntt_passes_fit_six_blocks_an_sm() {
    let (_, log) = compiled::module(&NTT);
    let regs = registers(log);
    for name in PASS_KERNELS {
        let (r, spills) = *regs
            .get(*name)
            .unwrap_or_else(|| panic!("no ptxas report for {name} in:\n{log}"));
        assert!(
            r <= PASS_MAX_REGISTERS,
            "{name}: {r} registers, more than {PASS_MAX_REGISTERS} (fewer than six blocks an SM)"
        );
        assert_eq!(spills, 0, "{name} spills {spills} bytes");
    }
}

/// The G1 accumulation (most of a G1 MSM's time) fits three blocks of 128 threads an SM and
/// spills nothing. Measured on an H200 (lazily reduced Fp, an experiment not merged):
/// the same kernel at 172 registers (two blocks an SM) made the 2^26 MSM 395.2 -> 400.0 ms, and
/// held to 168 by launch bounds, with 52 bytes of spills in its loop, 420.7 ms.
#[test]
fn kernels_sass_g1_accumulation_fits_three_blocks_an_sm() {
    let (_, log) = compiled::module(&MSM_G1_ACCUMULATE);
    let regs = registers(log);
    let name = "msm_accumulate_g1";
    let (r, spills) = *regs
        .get(name)
        .unwrap_or_else(|| panic!("no ptxas report for {name} in:\n{log}"));
    assert!(
        r <= G1_ACCUMULATE_MAX_REGISTERS,
        "{name}: {r} registers, more than {G1_ACCUMULATE_MAX_REGISTERS} (fewer than three blocks an SM)"
    );
    assert_eq!(spills, 0, "{name} spills {spills} bytes");
}
