//! 01: prove a real Filecoin proof on the CPU, as a library user.
//!
//! Seals a 2 KiB test sector, builds its WindowPoSt request, makes sure (insecure, test-only)
//! parameters exist, proves it through an Engine on the CPU (the same runtime the daemon
//! uses, here with the host's cores as its only device), and checks the proof again from its
//! bytes.
//!
//! ```sh
//! cargo run --release --example 01_prove_on_cpu
//! ```

use std::time::Duration;

use cuzk::{
    DeviceChoice, Engine, EngineConfig, ProofKind, RegisteredProof, SectorSize, SrsStore,
    SubmitOptions,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
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

    // An Engine on the CPU (`DeviceChoice::Auto`, the default, would take the GPUs when
    // there are any). Submitting checks the request at once; every partition is verified
    // before the bytes are returned.
    let mut config = EngineConfig::new(&params);
    config.devices = DeviceChoice::Cpu;
    let engine = Engine::start(config)?;
    let job = engine.submit(request, SubmitOptions::default())?.job;
    let result = engine.wait(job, None)?;
    engine.shutdown(Duration::from_secs(10))?;
    println!(
        "proof: {} bytes, synthesis {:.3}s, prove {:.3}s, total {:.3}s",
        result.proof.len(),
        result.timings.synthesis.as_secs_f64(),
        result.timings.gpu_compute.as_secs_f64(),
        result.timings.total.as_secs_f64()
    );

    // Anyone holding the request's public data can check the bytes.
    assert!(cuzk::verify(&store, request, &result.proof)?);
    println!("verified");
    Ok(())
}
