//! Malformed and hostile requests at the daemon's boundary: garbage in every bytes field,
//! wrong lengths, huge repeated fields, oversized messages, unknown enum values, kinds that
//! do not match their inputs, bad job and circuit ids. Each gets a clear error (never a
//! panic, never a proof), and the daemon keeps serving real work afterwards.

use crate::daemon_support::*;
use crate::support;

use cuzk::daemon::proto as pb;
use cuzk::ProofKind;
use pb::await_proof_response::Status as S;
use tonic::Code;

type Edit = Box<dyn Fn(&mut pb::SubmitProofRequest)>;

/// Deterministic junk of `n` bytes (seeded xorshift, so a failure is reproducible).
fn junk(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn case(
    kind: ProofKind,
    why: &str,
    edit: impl Fn(&mut pb::SubmitProofRequest) + 'static,
) -> (ProofKind, String, Edit) {
    (kind, why.to_string(), Box::new(edit))
}

/// Requests the boundary must refuse with `INVALID_ARGUMENT` before any work is queued.
fn refused_at_once() -> Vec<(ProofKind, String, Edit, &'static str)> {
    use ProofKind::*;
    let c = |k, why: &str, want: &'static str, e: Box<dyn Fn(&mut pb::SubmitProofRequest)>| {
        (k, why.to_string(), e, want)
    };
    vec![
        c(
            WindowPost,
            "unknown kind",
            "proof_kind 99",
            Box::new(|r| r.proof_kind = 99),
        ),
        c(
            WindowPost,
            "negative kind",
            "proof_kind -1",
            Box::new(|r| r.proof_kind = -1),
        ),
        c(
            WindowPost,
            "unspecified kind",
            "proof_kind is required",
            Box::new(|r| r.proof_kind = 0),
        ),
        c(
            WindowPost,
            "unknown priority",
            "priority 42",
            Box::new(|r| r.priority = 42),
        ),
        c(
            WindowPost,
            "registered proof of another kind",
            "not a window-post proof",
            Box::new(|r| r.registered_proof = 2),
        ),
        c(
            WindowPost,
            "registered proof out of range",
            "not a window-post proof",
            Box::new(|r| r.registered_proof = u64::MAX),
        ),
        c(
            WindowPost,
            "sector size against registered proof",
            "does not match",
            Box::new(|r| r.sector_size = 32 << 30),
        ),
        c(
            WindowPost,
            "short randomness",
            "randomness must be exactly 32 bytes, got 31",
            Box::new(|r| r.randomness.truncate(31)),
        ),
        c(
            WindowPost,
            "long randomness",
            "got 4096",
            Box::new(|r| r.randomness = junk(1, 4096)),
        ),
        c(
            WindowPost,
            "no randomness",
            "got 0",
            Box::new(|r| r.randomness.clear()),
        ),
        c(
            WindowPost,
            "prover id of 5 bytes",
            "prover_id must be exactly 32 bytes",
            Box::new(|r| {
                r.miner_id = 0;
                r.prover_id = junk(2, 5);
            }),
        ),
        c(
            WindowPost,
            "miner id and prover id",
            "either miner_id or prover_id",
            Box::new(|r| r.prover_id = vec![0; 32]),
        ),
        c(
            WindowPost,
            "huge repeated field",
            "repeats more than 20001 times",
            Box::new(|r| r.vanilla_proofs = vec![vec![7]; 500_000]),
        ),
        c(
            WindowPost,
            "repeated field one over the limit",
            "at most 20000",
            Box::new(|r| r.vanilla_proofs = vec![vec![7]; 20_001]),
        ),
        c(
            WindowPost,
            "empty vanilla proof entry",
            "vanilla_proofs[1] is empty",
            Box::new(|r| r.vanilla_proofs.push(Vec::new())),
        ),
        c(
            WindowPost,
            "garbage vanilla proofs",
            "PoSt",
            Box::new(|r| r.vanilla_proofs = vec![junk(3, 1000), junk(4, 70_000)]),
        ),
        c(
            WindowPost,
            "truncated vanilla proof",
            "PoSt",
            Box::new(|r| {
                let n = r.vanilla_proofs[0].len() / 2;
                r.vanilla_proofs[0].truncate(n);
            }),
        ),
        c(
            WindowPost,
            "PoRep bytes on a PoSt",
            "vanilla_proof is not used",
            Box::new(|r| r.vanilla_proof = junk(5, 100)),
        ),
        c(
            WindowPost,
            "SnapDeals commitments on a PoSt",
            "comm_r_old is not used",
            Box::new(|r| r.comm_r_old = junk(6, 32)),
        ),
        c(
            WinningPost,
            "partition index on WinningPoSt",
            "only meaningful for WindowPoSt",
            Box::new(|r| r.partition_index = 9),
        ),
        c(
            WinningPost,
            "WindowPoSt kind with WinningPoSt inputs",
            "not a window-post proof",
            Box::new(|r| {
                r.proof_kind = pb::ProofKind::WindowPostPartition as i32;
            }),
        ),
        c(
            WindowPost,
            "WinningPoSt kind, WindowPoSt proof number",
            "not a winning-post proof",
            Box::new(|r| {
                r.proof_kind = pb::ProofKind::WinningPost as i32;
            }),
        ),
        c(
            WindowPost,
            "PoRep kind with PoSt inputs",
            "vanilla_proofs is not used",
            Box::new(|r| {
                r.proof_kind = pb::ProofKind::PorepSealCommit as i32;
                r.registered_proof = 5;
            }),
        ),
        c(
            WindowPost,
            "PoRep garbage C1",
            "the C1 output is not a JSON object",
            Box::new(|r| {
                r.proof_kind = pb::ProofKind::PorepSealCommit as i32;
                r.registered_proof = 5;
                r.vanilla_proofs.clear();
                r.randomness.clear();
                r.miner_id = 0;
                r.vanilla_proof = junk(7, 10_000);
            }),
        ),
        c(
            WindowPost,
            "PoRep JSON that is not a C1 output",
            "C1",
            Box::new(|r| {
                r.proof_kind = pb::ProofKind::PorepSealCommit as i32;
                r.registered_proof = 5;
                r.vanilla_proofs.clear();
                r.randomness.clear();
                r.miner_id = 0;
                r.vanilla_proof =
                    br#"{"registered_proof":"StackedDrg2KiBV1_1","vanilla_proofs":{"x":[[1,2]]}}"#
                        .to_vec();
            }),
        ),
        c(
            WindowPost,
            "PoRep deeply nested JSON",
            "C1",
            Box::new(|r| {
                r.proof_kind = pb::ProofKind::PorepSealCommit as i32;
                r.registered_proof = 5;
                r.vanilla_proofs.clear();
                r.randomness.clear();
                r.miner_id = 0;
                let mut v = b"{\"a\":".to_vec();
                v.extend(std::iter::repeat_n(b'[', 100_000));
                r.vanilla_proof = v;
            }),
        ),
        c(
            WindowPost,
            "SnapDeals short commitment",
            "comm_d_new must be exactly 32 bytes, got 31",
            Box::new(|r| {
                r.proof_kind = pb::ProofKind::SnapDealsUpdate as i32;
                r.registered_proof = 0;
                r.randomness.clear();
                r.miner_id = 0;
                r.comm_r_old = junk(8, 32);
                r.comm_r_new = junk(9, 32);
                r.comm_d_new = junk(10, 31);
            }),
        ),
        c(
            WindowPost,
            "SnapDeals garbage partition proofs",
            "cannot decode vanilla proof 0 (bincode PartitionProof)",
            Box::new(|r| {
                r.proof_kind = pb::ProofKind::SnapDealsUpdate as i32;
                r.registered_proof = 0;
                r.randomness.clear();
                r.miner_id = 0;
                r.comm_r_old = junk(8, 32);
                r.comm_r_new = junk(9, 32);
                r.comm_d_new = junk(10, 32);
                r.vanilla_proofs = vec![junk(11, 5000)];
            }),
        ),
        c(
            WindowPost,
            "request id of 10 kB",
            "request_id is 10000 bytes",
            Box::new(|r| r.request_id = "r".repeat(10_000)),
        ),
        c(
            WindowPost,
            "request id with control characters",
            "control characters",
            Box::new(|r| r.request_id = "a\nb".into()),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_requests_get_clear_errors_and_the_daemon_keeps_serving() {
    let _g = support::cores_alone().await;
    let d = Daemon::start(Listen::Unix, "[limits]\nmax_message_bytes = \"8MiB\"");
    let mut c = d.client().await;
    let mut refused = 0;
    for (kind, why, edit, want) in refused_at_once() {
        let mut r = wire(kind, "");
        edit(&mut r);
        let e = c.submit_proof(r.clone()).await.expect_err(&why);
        assert_eq!(e.code(), Code::InvalidArgument, "{why}: {}", e.message());
        assert!(
            e.message().contains(want),
            "{why}: {:?} lacks {want:?}",
            e.message()
        );
        assert!(!e.message().contains("panick"), "{why}: {}", e.message());
        // The same through Prove.
        let e = c
            .prove(pb::ProveRequest { submit: Some(r) })
            .await
            .expect_err(&why);
        assert_eq!(
            e.code(),
            Code::InvalidArgument,
            "{why} (Prove): {}",
            e.message()
        );
        refused += 2;
    }

    // Garbage that passes the shape checks (right lengths, wrong values) is refused when
    // the engine builds circuits, or fails the job with a message; it never yields a proof.
    let cases = vec![
        case(ProofKind::WindowPost, "random randomness", |r| {
            r.randomness = junk(12, 32)
        }),
        case(ProofKind::WinningPost, "other randomness", |r| {
            r.randomness[0] ^= 1
        }),
        case(
            ProofKind::WindowPost,
            "flipped bits in a vanilla proof",
            |r| {
                let n = r.vanilla_proofs[0].len();
                for i in (0..n).step_by(97) {
                    r.vanilla_proofs[0][i] ^= 0x5a;
                }
            },
        ),
    ];
    for (kind, why, edit) in cases {
        let mut r = wire(kind, "");
        edit(&mut r);
        match c.prove(pb::ProveRequest { submit: Some(r) }).await {
            Err(e) => {
                assert_eq!(e.code(), Code::InvalidArgument, "{why}: {}", e.message());
                refused += 1;
            }
            Ok(resp) => {
                let a = resp.into_inner().result.unwrap();
                assert_eq!(status_of(&a), S::Failed, "{why}: {a:?}");
                assert!(
                    a.proof.is_empty() && !a.error_message.is_empty(),
                    "{why}: {a:?}"
                );
                // wrong values are the submitter's fault, and the cause says so
                assert_eq!(a.failure_cause, "invalid-input", "{why}: {a:?}");
            }
        }
    }

    // Messages over the configured limit are refused by the transport.
    let mut big = wire(ProofKind::WindowPost, "");
    big.vanilla_proofs = vec![vec![1u8; 1 << 20]; 9];
    let e = c.submit_proof(big).await.unwrap_err();
    assert!(
        matches!(
            e.code(),
            Code::OutOfRange | Code::ResourceExhausted | Code::Internal
        ),
        "{:?}: {}",
        e.code(),
        e.message()
    );
    assert!(
        e.message().to_lowercase().contains("message"),
        "{}",
        e.message()
    );
    let mut c = d.client().await;

    // Bad ids elsewhere.
    let e = c
        .prove(pb::ProveRequest { submit: None })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    for (job, code) in [
        ("", Code::InvalidArgument),
        (&*"j".repeat(5000), Code::InvalidArgument),
        ("00000000-1", Code::NotFound),
        ("not a job", Code::NotFound),
        ("deadbeef-18446744073709551615", Code::NotFound),
    ] {
        let e = c
            .await_proof(pb::AwaitProofRequest {
                job_id: job.into(),
                timeout_ms: 1,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), code, "await {job:.20}: {}", e.message());
        let e = c
            .cancel_proof(pb::CancelProofRequest { job_id: job.into() })
            .await
            .unwrap_err();
        assert_eq!(e.code(), code, "cancel {job:.20}: {}", e.message());
    }
    for id in [
        "",
        "porep",
        "porep-3g",
        "../../etc/passwd-2k",
        &"x".repeat(10_000),
    ] {
        let e = c
            .preload_srs(pb::PreloadSrsRequest {
                circuit_id: id.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(
            e.code(),
            Code::InvalidArgument,
            "preload {id:.20}: {}",
            e.message()
        );
        let e = c
            .evict_srs(pb::EvictSrsRequest {
                circuit_id: id.into(),
            })
            .await
            .unwrap_err();
        assert_eq!(
            e.code(),
            Code::InvalidArgument,
            "evict {id:.20}: {}",
            e.message()
        );
    }

    // Still serving: a real proof, and the refusals were counted.
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(wire(ProofKind::WindowPost, "after")),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(status_of(&r), S::Completed, "{r:?}");
    assert_verifies(ProofKind::WindowPost, &r.proof);
    let m = metrics_text(&mut c).await;
    let rejected = metric(
        &m,
        "cuzk_requests_rejected_total{reason=\"invalid_argument\"}",
    )
    .unwrap();
    assert!(rejected >= refused as f64, "{rejected} < {refused}");
    assert!(!d.log().contains("panicked"), "{}", d.log());
}
