//! For each proof kind at 2 KiB: our CPU proof with fixed r and s is byte-identical to
//! bellperson 0.27's `create_proof` on the same circuit, verifies with the real verifier, and
//! the same proof with one public input changed is rejected. The proof through the PCE
//! (the default) and through full synthesis are the same bytes (checked by proving twice for
//! the PoSt kinds, and by comparing assignments in the PCE tests for all kinds).

mod support;

use bellperson::groth16::verify_proof;
use blstrs::Scalar;
use cuzk::{circuits, CpuBackend, ProofKind, ProveOptions, Randomness};
use ff::Field;

fn check(kind: ProofKind) {
    let store = support::store_with(kind);
    let request = support::inputs().get(kind);
    let (r, s) = (Scalar::from(0xdead_beefu64), Scalar::from(0x0bad_cafeu64));
    let opts = ProveOptions {
        randomness: Randomness::Fixed(r, s),
        verify: true,
        pce: true,
    };
    let ours = cuzk::prove(&store, &mut CpuBackend, request, &opts, &|_| {}).expect("cuzk proves");
    assert!(ours.verified);
    assert_eq!(ours.bytes.len(), 192 * ours.partitions.len());

    if matches!(kind, ProofKind::WinningPost | ProofKind::WindowPost) {
        // Cheap kinds: prove again through full synthesis. (For PoRep and SnapDeals the PCE
        // tests compare the assignments themselves, which determine the proof.)
        let full = ProveOptions {
            pce: false,
            ..opts.clone()
        };
        let without_pce = cuzk::prove(&store, &mut CpuBackend, request, &full, &|_| {})
            .expect("full synthesis proves");
        assert_eq!(
            ours.bytes, without_pce.bytes,
            "{kind}: PCE and full synthesis differ"
        );
    }

    let srs = store.get(request.proof).expect("params");
    let plan = circuits::plan(request).expect("plan");
    let mut theirs = Vec::new();
    for job in plan.partitions {
        let p = job
            .circuit
            .prove_with_bellperson(&srs.params, r, s)
            .expect("bellperson proves");
        p.write(&mut theirs).expect("serialise");
    }
    assert_eq!(
        hex::encode(&ours.bytes),
        hex::encode(&theirs),
        "{kind}: cuzk and bellperson proofs differ"
    );

    for (proof, inputs) in ours.partitions.iter().zip(&ours.public_inputs) {
        assert!(verify_proof(&srs.pvk, proof, inputs).expect("verifier runs"));
        let mut wrong = inputs.clone();
        wrong[0] += Scalar::ONE;
        assert!(
            !verify_proof(&srs.pvk, proof, &wrong).unwrap_or(false),
            "{kind}: proof accepted with a changed public input"
        );
    }
    assert!(cuzk::verify(&store, request, &ours.bytes).expect("verify bytes"));
}

#[test]
fn winning_post_2k_matches_bellperson() {
    check(ProofKind::WinningPost);
}

#[test]
fn window_post_2k_matches_bellperson() {
    check(ProofKind::WindowPost);
}

#[test]
fn porep_2k_matches_bellperson() {
    check(ProofKind::PorepC2);
}

#[test]
fn snap_deals_2k_matches_bellperson() {
    check(ProofKind::SnapDeals);
}
