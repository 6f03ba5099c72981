//! Shared fixtures for the scenario tests: one parameter directory for every test binary
//! and run (generated once, under a file lock), one set of real 2 KiB inputs for the suite,
//! and the lock through which tests share the machine's cores.

pub mod shape;

use std::path::PathBuf;
use std::sync::OnceLock;

use cuzk::gen::GeneratedInputs;
use cuzk::{ProofKind, RegisteredProof, SectorSize, SrsStore};

/// The machine's cores. A test that proves through a daemon holds them alone, so that no
/// other proof shares CI's two cores with it (timing windows such as "cancel while on the
/// device" stay wide); a test that proves on the CPU in this process, or through the `cuzk`
/// binary, holds them together with other such tests. An async lock: daemon tests hold it
/// across awaits.
static CORES: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Takes [`CORES`] together with other proving tests, in a plain test (not inside a runtime).
pub fn cores_shared() -> tokio::sync::RwLockReadGuard<'static, ()> {
    CORES.blocking_read()
}

/// Takes [`CORES`] alone, in an async test.
pub async fn cores_alone() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    CORES.write().await
}

/// Takes [`CORES`] alone, in a plain test (not inside a runtime).
pub fn cores_alone_blocking() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    CORES.blocking_write()
}

/// The shared test parameter directory: `$CUZK_TEST_PARAMS`, else `target/cuzk-test-params`.
pub fn params_dir() -> PathBuf {
    std::env::var_os("CUZK_TEST_PARAMS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/cuzk-test-params")
        })
}

/// A store over the shared directory with `kind`'s 2 KiB parameters present.
pub fn store_with(kind: ProofKind) -> SrsStore {
    let store = SrsStore::new(params_dir());
    let proof = RegisteredProof::latest(kind, SectorSize::S2KiB);
    let (path, made) = store.generate(proof, 1).expect("generate test parameters");
    if made {
        eprintln!("generated {}", path.display());
    }
    store
}

/// Real inputs for all four kinds from one sealed 2 KiB sector (made once for the suite).
pub fn inputs() -> &'static GeneratedInputs {
    static INPUTS: OnceLock<GeneratedInputs> = OnceLock::new();
    INPUTS.get_or_init(|| {
        let dir = std::env::temp_dir();
        cuzk::gen::generate(SectorSize::S2KiB, &dir, 7).expect("generate 2KiB inputs")
    })
}

/// A synthetic-PoRep C2 request (registered proof 10) from a 2 KiB sector sealed as such
/// (made once for the suite).
pub fn synthetic_porep() -> &'static cuzk::ProofRequest {
    static REQUEST: OnceLock<cuzk::ProofRequest> = OnceLock::new();
    REQUEST.get_or_init(|| {
        let proof = RegisteredProof::new(ProofKind::PorepC2, 10).expect("synthetic 2KiB");
        cuzk::gen::generate_with(proof, &std::env::temp_dir(), 7)
            .expect("seal a synthetic 2KiB sector")
            .porep
    })
}

/// An Engine on the CPU over the shared parameters, with `prove`'s options (r and s,
/// verification, PCE).
pub fn cpu_engine(prove: cuzk::ProveOptions) -> cuzk::Engine {
    let mut cfg = cuzk::EngineConfig::new(params_dir());
    cfg.devices = cuzk::DeviceChoice::Cpu;
    cfg.prove = prove;
    cuzk::Engine::start(cfg).expect("a CPU engine starts")
}

/// `request` proved through an Engine on the CPU, the path every front end takes, with
/// `prove`'s options (r and s, verification, PCE); the engine is shut down before returning.
pub fn prove_through_cpu_engine(
    request: &cuzk::ProofRequest,
    prove: cuzk::ProveOptions,
) -> cuzk::JobResult {
    let engine = cpu_engine(prove);
    let result = engine
        .prove(request, cuzk::SubmitOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", request.proof));
    engine
        .shutdown(std::time::Duration::from_secs(5))
        .expect("shutdown");
    result
}

/// The r and s of the proofs that tests compare byte for byte with [`cpu_reference`]: one
/// pair for all of them, so that each kind's reference is proved once.
pub fn fixed_rs() -> (blstrs::Scalar, blstrs::Scalar) {
    (blstrs::Scalar::from(7u64), blstrs::Scalar::from(11u64))
}

/// `kind`'s test request proved on the CPU backend with [`fixed_rs`], each partition verified
/// ([`prove_on_backend`]): the bytes every other path must give for it (made once for the
/// suite).
pub fn cpu_reference(kind: ProofKind) -> &'static [u8] {
    static REFERENCES: [OnceLock<Vec<u8>>; ProofKind::ALL.len()] =
        [const { OnceLock::new() }; ProofKind::ALL.len()];
    let at = ProofKind::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("one of the kinds");
    REFERENCES[at].get_or_init(|| {
        let store = store_with(kind);
        let (r, s) = fixed_rs();
        prove_on_backend(&store, &mut cuzk::CpuBackend, inputs().get(kind), r, s)
            .unwrap_or_else(|e| panic!("{kind} on the CPU backend: {e}"))
            .bytes
    })
}

/// A request's partitions proved on one backend, in this thread (see [`prove_on_backend`]).
pub struct OnBackend {
    /// The partitions' proofs, concatenated in partition order.
    pub bytes: Vec<u8>,
    /// Number of partitions.
    pub partitions: usize,
    /// Time in `Backend::prove`, summed over the partitions.
    pub prove: std::time::Duration,
}

/// `request`'s partitions proved one after the other on `backend` with fixed `r` and `s`,
/// from the engine's own steps (plan, parameters, the partition's synthesis through the
/// PCE, `Backend::prove`), each proof verified: the reference a backend is held to where
/// the test, not the Engine, picks the device. Not for aggregated (non-interactive PoRep)
/// requests: the bytes are the partition proofs, concatenated.
pub fn prove_on_backend(
    store: &SrsStore,
    backend: &mut dyn cuzk::Backend,
    request: &cuzk::ProofRequest,
    r: blstrs::Scalar,
    s: blstrs::Scalar,
) -> cuzk::Result<OnBackend> {
    use bellperson::groth16::verify_proof;
    assert!(
        cuzk::circuits::plan(request)?.aggregation.is_none(),
        "an aggregated request"
    );
    let (srs, parts) = synthesized(store, request)?;
    let mut out = OnBackend {
        bytes: Vec::new(),
        partitions: parts.len(),
        prove: std::time::Duration::ZERO,
    };
    for (asg, inputs, index) in parts {
        let t = std::time::Instant::now();
        let proof = backend.prove(&srs, asg, r, s, index)?;
        out.prove += t.elapsed();
        assert!(
            verify_proof(&srs.pvk, &proof, &inputs).expect("verifier runs"),
            "{}: partition {index} proved on {} does not verify",
            request.proof,
            backend.name()
        );
        proof.write(&mut out.bytes).expect("serialise");
    }
    Ok(out)
}

/// A partition's assignment with its public inputs and its index.
pub type Synthesized = (cuzk::pce::Assignment, Vec<blstrs::Scalar>, usize);

/// `request`'s partitions synthesized through the PCE, with their public inputs, and its
/// parameters: what a test hands to `Backend::prove_batch`.
pub fn synthesized(
    store: &SrsStore,
    request: &cuzk::ProofRequest,
) -> cuzk::Result<(std::sync::Arc<cuzk::Srs>, Vec<Synthesized>)> {
    let plan = cuzk::circuits::plan(request)?;
    let srs = store.get_by_identifier(request.proof, &plan.params_identifier)?;
    let r1cs = store
        .pce()
        .get_or_record(&plan.shape_identity(), plan.blank)?;
    let mut out = Vec::new();
    for job in plan.partitions {
        let asg = cuzk::synthesis::synthesize_partition(
            job.circuit,
            Some(&r1cs),
            &job.public_inputs,
            job.index,
            None,
        )?;
        out.push((asg, job.public_inputs, job.index));
    }
    Ok((srs, out))
}

/// The oracle every backend is held to: `proof` (our proof bytes for `request` with fixed
/// `r`, `s`: the partitions' proofs, concatenated) is byte-identical to bellperson 0.27's
/// `create_proof` on the same circuits, each partition read back from the bytes verifies, a
/// changed public input is rejected, and the bytes verify through `cuzk::verify`.
pub fn assert_matches_bellperson(
    store: &SrsStore,
    request: &cuzk::ProofRequest,
    r: blstrs::Scalar,
    s: blstrs::Scalar,
    proof: &[u8],
    who: &str,
) {
    use bellperson::groth16::{verify_proof, Proof};
    use ff::Field;
    let kind = request.proof.kind;
    let srs = store.get(request.proof).expect("params");
    let plan = cuzk::circuits::plan(request).expect("plan");
    let mut theirs = Vec::new();
    let mut inputs = Vec::new();
    for job in plan.partitions {
        let p = job
            .circuit
            .prove_with_bellperson(&srs.params, r, s)
            .expect("bellperson proves");
        p.write(&mut theirs).expect("serialise");
        inputs.push(job.public_inputs);
    }
    assert_eq!(
        hex::encode(proof),
        hex::encode(&theirs),
        "{kind}: {who} and bellperson proofs differ"
    );
    assert_eq!(
        proof.len(),
        192 * inputs.len(),
        "{kind}: 192 bytes a partition"
    );
    for (chunk, inputs) in proof.chunks(192).zip(&inputs) {
        let p = Proof::<blstrs::Bls12>::read(chunk).expect("a partition proof");
        assert!(verify_proof(&srs.pvk, &p, inputs).expect("verifier runs"));
        let mut wrong = inputs.clone();
        wrong[0] += blstrs::Scalar::ONE;
        assert!(
            !verify_proof(&srs.pvk, &p, &wrong).unwrap_or(false),
            "{kind}: proof accepted with a changed public input"
        );
    }
    assert!(cuzk::verify(store, request, proof).expect("verify bytes"));
}

/// A non-interactive PoRep (registered proof 15) through an Engine on `devices`: its 13
/// partitions (at 2 KiB) are proved, then folded into one SnarkPack aggregate, which our
/// verifier and filecoin-proofs' `verify_seal` accept and a changed byte breaks. Needs
/// `$FIL_PROOFS_PARAMETER_CACHE` = [`params_dir`] (filecoin-proofs reads its keys there).
pub fn non_interactive_porep_round_trip(devices: cuzk::DeviceChoice) {
    use filecoin_proofs::SectorShape2KiB;
    let params = params_dir();
    assert_eq!(
        std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").map(PathBuf::from),
        Some(params.clone()),
        "filecoin-proofs' verify_seal reads $FIL_PROOFS_PARAMETER_CACHE: run with it set to the test parameters (.ci/run does)"
    );
    let store = store_with(ProofKind::PorepC2);
    store
        .generate_aggregation_srs(1)
        .expect("test inner-product SRS");
    let ni = RegisteredProof::new(ProofKind::PorepC2, 15).expect("NI-PoRep 2KiB");
    let request = cuzk::gen::generate_with(ni, &std::env::temp_dir(), 11)
        .expect("seal a non-interactive 2KiB sector")
        .porep;
    let mut cfg = cuzk::EngineConfig::new(params);
    cfg.devices = devices;
    let engine = cuzk::Engine::start(cfg).expect("engine starts");
    let result = engine
        .prove(&request, cuzk::SubmitOptions::default())
        .expect("the NI-PoRep is proved and aggregated");
    engine
        .shutdown(std::time::Duration::from_secs(5))
        .expect("shutdown");
    assert_eq!(result.partitions, 13);
    assert_ne!(
        result.proof.len(),
        13 * 192,
        "an aggregate, not the partitions"
    );
    assert!(cuzk::verify(&store, &request, &result.proof).expect("verifier runs"));

    let filecoin = |proof: &[u8]| filecoin_verify_seal::<SectorShape2KiB>(&request, proof);
    assert!(
        filecoin(&result.proof),
        "filecoin-proofs rejects the aggregate"
    );
    let mut changed = result.proof.clone();
    let mid = changed.len() / 2;
    changed[mid] ^= 1;
    assert!(
        !filecoin(&changed),
        "filecoin-proofs accepts a changed aggregate"
    );
    assert!(!cuzk::verify(&store, &request, &changed).unwrap_or(false));
}

/// filecoin-proofs' own `verify_seal` on a PoRep `request` made by `cuzk::gen` (miner
/// `GEN_MINER`, sector `GEN_SECTOR`; its C1 output in filecoin-proofs' form) and proof
/// bytes. Reads the verifying key from `$FIL_PROOFS_PARAMETER_CACHE`.
pub fn filecoin_verify_seal<Tree: 'static + storage_proofs_core::merkle::MerkleTreeTrait>(
    request: &cuzk::ProofRequest,
    proof: &[u8],
) -> bool {
    let cuzk::ProofInputs::Porep { c1_json, .. } = &request.inputs else {
        panic!("a PoRep request")
    };
    let c1: serde_json::Value = serde_json::from_slice(c1_json).expect("C1 JSON");
    let b32 = |k: &str| -> [u8; 32] {
        serde_json::from_value::<Vec<u8>>(c1[k].clone())
            .expect("32 bytes")
            .try_into()
            .expect("32 bytes")
    };
    filecoin_proofs::verify_seal::<Tree>(
        &cuzk::circuits::porep::config(request.proof),
        b32("comm_r"),
        b32("comm_d"),
        cuzk::gen::prover_id_from_miner(cuzk::gen::GEN_MINER),
        cuzk::gen::GEN_SECTOR.into(),
        b32("ticket"),
        b32("seed"),
        proof,
    )
    .unwrap_or(false)
}
