//! Test-parameter generation at 2 KiB, ours against bellperson's, in one run: for each kind
//! given (default all four), both generators from the same seed, timed, and their
//! serialised parameters compared byte for byte (the run fails if they differ).
//!
//! `cargo run --release -p cuzk-engine --example paramgen_bench -- [porep-c2 snap-deals
//! winning-post window-post] [--ours-only]`
use std::time::Instant;

use cuzk_engine::circuits::{generate_params_with, ParamGenerator};
use cuzk_engine::kind::{ProofKind, RegisteredProof, SectorSize};
use rand_core::SeedableRng;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ours_only = args.iter().any(|a| a == "--ours-only");
    let kinds: Vec<ProofKind> = match args.iter().filter(|a| !a.starts_with("--")).count() {
        0 => ProofKind::ALL.to_vec(),
        _ => ProofKind::ALL
            .into_iter()
            .filter(|k| args.iter().any(|a| a == k.as_str()))
            .collect(),
    };
    println!(
        "# test parameters at 2 KiB, {} threads",
        rayon::current_num_threads()
    );
    println!("| kind | cuzk | bellperson | speed-up | parameters |");
    println!("|---|---|---|---|---|");
    for kind in kinds {
        let proof = RegisteredProof::latest(kind, SectorSize::from_bytes(2048)?);
        let run = |generator| -> Result<_, Box<dyn std::error::Error>> {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5eed);
            let t = Instant::now();
            let params = generate_params_with(proof, &mut rng, generator)?;
            let took = t.elapsed();
            let mut bytes = Vec::new();
            params.write(&mut bytes)?;
            Ok((took, bytes))
        };
        let (ours, ours_bytes) = run(ParamGenerator::Cuzk)?;
        if ours_only {
            println!(
                "| {kind} | {:.1} s | | | {} MiB |",
                ours.as_secs_f64(),
                ours_bytes.len() >> 20
            );
            continue;
        }
        let (theirs, theirs_bytes) = run(ParamGenerator::Bellperson)?;
        if ours_bytes != theirs_bytes {
            return Err(format!("{kind}: the two generators' parameters differ").into());
        }
        println!(
            "| {kind} | {:.1} s | {:.1} s | {:.1}x | {} MiB, identical |",
            ours.as_secs_f64(),
            theirs.as_secs_f64(),
            theirs.as_secs_f64() / ours.as_secs_f64(),
            ours_bytes.len() >> 20
        );
    }
    Ok(())
}
