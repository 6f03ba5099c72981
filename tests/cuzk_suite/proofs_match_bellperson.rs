//! For each proof kind at 2 KiB: our proof with fixed r and s, made through an Engine on the
//! CPU (the path every front end takes), is byte-identical to bellperson 0.27's
//! `create_proof` on the same circuit, verifies with the real verifier, and the same proof
//! with one public input changed is rejected. The proof through the PCE (the default) and
//! through full synthesis are the same bytes (checked by proving twice for the PoSt kinds,
//! and by comparing assignments in the PCE tests for all kinds).

use crate::support;

use std::time::Duration;

use blstrs::Scalar;
use cuzk::{ProofKind, ProveOptions, Randomness, SubmitOptions};

fn check(kind: ProofKind) {
    support::store_with(kind);
    let request = support::inputs().get(kind);
    let (r, s) = (Scalar::from(0xdead_beefu64), Scalar::from(0x0bad_cafeu64));
    let opts = ProveOptions {
        randomness: Randomness::Fixed(r, s),
        verify: true,
        pce: true,
    };
    let engine = support::cpu_engine(opts.clone());
    let ours = engine
        .prove(request, SubmitOptions::default())
        .unwrap_or_else(|e| panic!("{kind}: {e}"));
    assert!(ours.verified);
    assert_eq!(ours.proof.len(), 192 * ours.partitions);

    if matches!(kind, ProofKind::WinningPost | ProofKind::WindowPost) {
        // Cheap kinds: prove again through full synthesis. (For PoRep and SnapDeals the PCE
        // tests compare the assignments themselves, which determine the proof.)
        let full = ProveOptions {
            pce: false,
            ..opts.clone()
        };
        let without_pce = support::prove_through_cpu_engine(request, full);
        assert_eq!(
            ours.proof, without_pce.proof,
            "{kind}: PCE and full synthesis differ"
        );
    }

    // bellperson proves, and the proof is verified, with the parameters the engine loaded
    // (PoRep's are 1.1 GB: 8.6 s to load again on two cores, a third of the proof)
    support::assert_matches_bellperson(engine.store(), request, r, s, &ours.proof, "cuzk");
    engine.shutdown(Duration::from_secs(5)).expect("shutdown");
}

#[test]
fn winning_post_2k_matches_bellperson() {
    let _cores = support::cores_shared();
    check(ProofKind::WinningPost);
}

#[test]
fn window_post_2k_matches_bellperson() {
    let _cores = support::cores_shared();
    check(ProofKind::WindowPost);
}

#[test]
fn porep_2k_matches_bellperson() {
    let _cores = support::cores_shared();
    check(ProofKind::PorepC2);
}

#[test]
fn snap_deals_2k_matches_bellperson() {
    let _cores = support::cores_shared();
    check(ProofKind::SnapDeals);
}
