//! The shape of real witnesses: for each request file given (`cuzk gen` writes one per kind),
//! the first partition's aux values by bit length, over all of them and over the subsets the
//! A and B queries take (their density masks), beside the synthetic "Filecoin-shaped"
//! scalars the GPU benchmarks use (40% zero, 35% one, 15% below 2^32, 10% full width).
//! Needs no parameters. `cargo run --release -p cuzk-engine --example witness_shape --
//! /tmp/gen/*.json`
use blstrs::Scalar;
use cuzk_engine::{circuits, ProofRequest};
use ff::PrimeField;

/// Classes of bit length: 0, 1, 2..=8, 9..=32, 33..=64, 65..=128, 129..=250, 251..=255.
const CLASSES: [(u32, u32, &str); 8] = [
    (0, 0, "zero"),
    (1, 1, "one"),
    (2, 8, "2-8 bits"),
    (9, 32, "9-32"),
    (33, 64, "33-64"),
    (65, 128, "65-128"),
    (129, 250, "129-250"),
    (251, 255, "251-255"),
];

fn bits(s: &Scalar) -> u32 {
    let repr = s.to_repr();
    let bytes = repr.as_ref();
    for (i, b) in bytes.iter().enumerate().rev() {
        if *b != 0 {
            return 8 * i as u32 + (8 - b.leading_zeros());
        }
    }
    0
}

/// Percentages of `values` in each class, and the mean count of non-zero signed digits a
/// value takes at window width `c` (one per started window of its bit length), the MSM's
/// additions a point.
fn shape<'a>(values: impl Iterator<Item = &'a Scalar>, c: u32) -> (Vec<f64>, f64, usize) {
    let mut counts = [0usize; CLASSES.len()];
    let mut digits = 0u64;
    let mut n = 0usize;
    for v in values {
        let b = bits(v);
        let k = CLASSES
            .iter()
            .position(|&(lo, hi, _)| (lo..=hi).contains(&b))
            .unwrap_or(CLASSES.len() - 1);
        counts[k] += 1;
        digits += u64::from(b.div_ceil(c));
        n += 1;
    }
    let pct = counts
        .iter()
        .map(|&k| 100.0 * k as f64 / n.max(1) as f64)
        .collect();
    (pct, digits as f64 / n.max(1) as f64, n)
}

fn row(name: &str, (pct, digits, n): (Vec<f64>, f64, usize)) {
    let cells: Vec<String> = pct.iter().map(|p| format!("{p:.1}")).collect();
    println!("| {name} | {n} | {} | {digits:.2} |", cells.join(" | "));
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let c = 17;
    let header: Vec<&str> = CLASSES.iter().map(|&(_, _, s)| s).collect();
    println!(
        "| values | count | {} | digits a value at c = {c} |",
        header.join(" % | ") + " %"
    );
    println!("|---|---|{}---|", "---|".repeat(CLASSES.len()));
    let synthetic = cuzk_engine::kernels::testdata::filecoin_scalars(1, 1 << 20);
    row("synthetic (gpu benchmarks)", shape(synthetic.iter(), c));
    for path in std::env::args().skip(1) {
        let request = ProofRequest::from_json(&std::fs::read(&path)?)?;
        let plan = circuits::plan(&request)?;
        let name = format!("{} {}", request.proof.kind, request.proof.sector_size);
        let r1cs = plan.blank.record()?;
        let job = plan
            .partitions
            .into_iter()
            .next()
            .ok_or("a plan without partitions")?;
        let (_inputs, aux) = job.circuit.witness()?;
        row(&format!("{name}: aux"), shape(aux.iter(), c));
        let a = r1cs.a_aux_density.iter().zip(&aux).filter(|(d, _)| *d);
        row(&format!("{name}: A's aux"), shape(a.map(|(_, v)| v), c));
        let b = r1cs.b_aux_density.iter().zip(&aux).filter(|(d, _)| *d);
        row(&format!("{name}: B's aux"), shape(b.map(|(_, v)| v), c));
    }
    Ok(())
}
