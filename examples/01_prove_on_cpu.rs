//! 01: prove a real Filecoin proof on the CPU, as a library user.
//!
//! Seals a 2 KiB test sector, builds its WindowPoSt request, makes sure (insecure, test-only)
//! parameters exist, proves, and checks the proof again from its bytes.
//!
//! ```sh
//! cargo run --release --example 01_prove_on_cpu
//! ```

use cuzk::{CpuBackend, ProofKind, ProveOptions, RegisteredProof, SectorSize, SrsStore};

fn main() -> cuzk::Result<()> {
    // Test parameters go to a directory of their own, never the node's parameter cache.
    let params = std::env::temp_dir().join("cuzk-example-params");
    let store = SrsStore::new(&params);
    let kind = ProofKind::WindowPost;
    let (path, generated) = store.generate(RegisteredProof::latest(kind, SectorSize::S2KiB), 1)?;
    println!(
        "parameters: {} ({})",
        path.display(),
        if generated { "generated" } else { "present" }
    );

    // Real inputs: a sealed sector and its vanilla proofs, as node software would hold them.
    let inputs = cuzk::gen::generate(SectorSize::S2KiB, &std::env::temp_dir(), 42)?;
    let request = inputs.get(kind);
    println!(
        "request: {} with {} partition(s)",
        request.proof,
        cuzk::circuits::plan(request)?.partitions.len()
    );

    // Prove. Every partition is verified before the bytes are returned.
    let out = cuzk::prove(
        &store,
        &mut CpuBackend,
        request,
        &ProveOptions::default(),
        &|_| {},
    )?;
    println!(
        "proof: {} bytes, synthesis {:.3}s, prove {:.3}s",
        out.bytes.len(),
        out.timings.synthesis.as_secs_f64(),
        out.timings.prove.as_secs_f64()
    );

    // Anyone holding the request's public data can check the bytes.
    assert!(cuzk::verify(&store, request, &out.bytes)?);
    println!("verified");
    Ok(())
}
