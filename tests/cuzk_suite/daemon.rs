//! The daemon as Curio meets it: the real binary on a temporary unix socket or a loopback
//! TCP port, driven through every call of `cuzk.v1.ProvingEngine` with our client. Real
//! WinningPoSt and WindowPoSt proofs at 2 KiB, verified here.

use crate::daemon_support::*;
use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use cuzk::daemon::proto as pb;
use cuzk::ProofKind;
use pb::await_proof_response::Status as S;
use tonic::Code;

async fn prove(c: &mut cuzk::daemon::Client, kind: ProofKind) -> pb::AwaitProofResponse {
    c.prove(pb::ProveRequest {
        submit: Some(wire(kind, "")),
    })
    .await
    .unwrap()
    .into_inner()
    .result
    .unwrap()
}

async fn submit_await(c: &mut cuzk::daemon::Client, kind: ProofKind) -> pb::AwaitProofResponse {
    let s = c.submit_proof(wire(kind, "")).await.unwrap().into_inner();
    assert!(!s.job_id.is_empty() && !s.existing);
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: s.job_id.clone(),
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.job_id, s.job_id);
    r
}

fn assert_completed(kind: ProofKind, r: &pb::AwaitProofResponse) {
    assert_eq!(status_of(r), S::Completed, "{kind}: {}", r.error_message);
    assert!(r.verified && r.partitions == 1, "{r:?}");
    assert!(
        r.total_ms >= r.gpu_compute_ms && r.gpu_compute_ms > 0,
        "{r:?}"
    );
    assert_eq!(r.devices, vec!["cpu".to_string()]);
    assert_verifies(kind, &r.proof);
}

/// Both kinds through Prove and through Submit/Await, then status and metrics reflect them.
async fn prove_both_ways_and_check_accounts(d: &Daemon) {
    let mut c = d.client().await;
    let winning = prove(&mut c, ProofKind::WinningPost).await;
    assert_completed(ProofKind::WinningPost, &winning);
    let window = submit_await(&mut c, ProofKind::WindowPost).await;
    assert_completed(ProofKind::WindowPost, &window);
    let window2 = prove(&mut c, ProofKind::WindowPost).await;
    assert_completed(ProofKind::WindowPost, &window2);
    let winning2 = submit_await(&mut c, ProofKind::WinningPost).await;
    assert_completed(ProofKind::WinningPost, &winning2);

    let s = status(&mut c).await;
    assert_eq!(s.total_proofs_completed, 4);
    assert_eq!(s.total_proofs_failed, 0);
    assert_eq!(s.gpus.len(), 1, "the CPU is one device");
    assert!(s.gpus[0].busy_ms > 0 && s.gpus[0].current_job_id.is_empty());
    let mut circuits: Vec<&str> = s.loaded_srs.iter().map(|r| r.circuit_id.as_str()).collect();
    circuits.sort();
    assert_eq!(circuits, ["winning-2k", "wpost-2k"]);
    for r in &s.loaded_srs {
        assert!(r.size_bytes > 1 << 20, "{r:?}: real sizes, not zero");
        assert_eq!(r.ref_count, 0, "{r:?}: nothing uses it now");
    }
    assert_eq!(s.queues.len(), 4);
    assert!(
        s.queues
            .iter()
            .all(|q| q.pending == 0 && q.in_progress == 0),
        "{s:?}"
    );
    assert!(s.pinned_memory_bytes >= s.loaded_srs.iter().map(|r| r.size_bytes).sum::<u64>());

    let m = metrics_text(&mut c).await;
    for kind in ["winning-post", "window-post"] {
        let done = format!("cuzk_jobs_completed_total{{kind=\"{kind}\"}}");
        assert_eq!(metric(&m, &done), Some(2.0), "{done}\n{m}");
        let count = format!("cuzk_job_duration_seconds_count{{kind=\"{kind}\"}}");
        assert_eq!(metric(&m, &count), Some(2.0), "{count}");
        let gpu =
            format!("cuzk_phase_duration_seconds_count{{kind=\"{kind}\",phase=\"gpu_compute\"}}");
        assert_eq!(metric(&m, &gpu), Some(2.0), "{gpu}");
    }
    assert_eq!(
        metric(&m, "cuzk_rpc_requests_total{method=\"Prove\",code=\"Ok\"}"),
        Some(2.0)
    );
    let busy: f64 = m
        .lines()
        .find(|l| l.starts_with("cuzk_device_busy_seconds_total{device=\"cpu\""))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap();
    assert!(busy > 0.0, "{m}");
}

#[tokio::test(flavor = "multi_thread")]
async fn unix_socket_proves_winning_and_window_post_both_ways() {
    let _g = support::cores_alone().await;
    let d = Daemon::start(Listen::Unix, "");
    let mode = std::fs::metadata(d.socket()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the socket is owner-only");
    prove_both_ways_and_check_accounts(&d).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tcp_loopback_proves_both_ways_and_serves_http_metrics() {
    let _g = support::cores_alone().await;
    let d = Daemon::start(Listen::Tcp, "metrics_listen = \"127.0.0.1:0\"");
    assert!(d.addr.starts_with("tcp://127.0.0.1:"), "{}", d.addr);
    prove_both_ways_and_check_accounts(&d).await;
    let url = d.metrics_url.as_deref().unwrap();
    let (code, body) = http_get(url, "/healthz");
    assert_eq!((code, body.trim()), (200, "ok"));
    let (code, body) = http_get(url, "/metrics");
    assert_eq!(code, 200);
    assert_eq!(
        metric(&body, "cuzk_jobs_completed_total{kind=\"window-post\"}"),
        Some(2.0),
        "{body}"
    );
    assert_eq!(http_get(url, "/nothing").0, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_id_attaches_the_same_request_and_names_each_other_one() {
    let _g = support::cores_alone().await;
    let d = Daemon::start(Listen::Unix, "");
    let mut c = d.client().await;
    let first = c
        .submit_proof(wire(ProofKind::WindowPost, "curio-42"))
        .await
        .unwrap()
        .into_inner();
    let mut again_req = wire(ProofKind::WindowPost, "curio-42");
    again_req.priority = pb::Priority::Low as i32; // priority is not part of the identity
    let again = c.submit_proof(again_req).await.unwrap().into_inner();
    assert_eq!(again.job_id, first.job_id);
    assert!(!first.existing && again.existing);
    // The same id for other content is a job of its own (Curio sends every partition of a
    // WindowPoSt deadline under one id), never a refusal.
    let other = c
        .prove(pb::ProveRequest {
            submit: Some(wire(ProofKind::WinningPost, "curio-42")),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_ne!(other.job_id, first.job_id);
    assert_completed(ProofKind::WinningPost, &other);
    // Prove with the same id and content waits for that same job.
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(wire(ProofKind::WindowPost, "curio-42")),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.job_id, first.job_id);
    assert_completed(ProofKind::WindowPost, &r);
    // And after it finished, the id still names it, with its proof.
    let late = c
        .submit_proof(wire(ProofKind::WindowPost, "curio-42"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (late.job_id.as_str(), late.existing),
        (first.job_id.as_str(), true)
    );
    let m = metrics_text(&mut c).await;
    assert_eq!(
        metric(&m, "cuzk_jobs_submitted_total{kind=\"window-post\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&m, "cuzk_jobs_completed_total{kind=\"window-post\"}"),
        Some(1.0)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_cancelled_under_its_id_runs_again_and_await_takes_the_id() {
    let _g = support::cores_alone().await;
    let d = Daemon::start(Listen::Unix, "");
    let mut c = d.client().await;
    let id = "wdpost-1000-0-77";
    // The one device is busy, so the job under the id waits and the cancellation finds it.
    let busy = c
        .submit_proof(wire(ProofKind::WinningPost, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    until_on_device(&mut c, &busy).await;
    let first = c
        .submit_proof(wire(ProofKind::WindowPost, id))
        .await
        .unwrap()
        .into_inner();
    // CancelProof and AwaitProof take the request id as well as the job id.
    let r = c
        .cancel_proof(pb::CancelProofRequest { job_id: id.into() })
        .await
        .unwrap()
        .into_inner();
    assert!(r.cancelled, "{r:?}");
    let cancelled = c
        .await_proof(pb::AwaitProofRequest {
            job_id: first.job_id.clone(),
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status_of(&cancelled), S::Cancelled, "{cancelled:?}");
    // Curio's retry: the same id and content after a cancellation is proved afresh.
    let retry = c
        .submit_proof(wire(ProofKind::WindowPost, id))
        .await
        .unwrap()
        .into_inner();
    assert!(!retry.existing, "a cancelled job is not handed back");
    assert_ne!(retry.job_id, first.job_id);
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: id.into(),
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.job_id, id, "the answer names the job as it was asked for");
    assert_completed(ProofKind::WindowPost, &r);
}

/// Curio's example and documented `cuzk.toml` load as they are: each of Curio's keys is
/// carried over or named in a note, none is a refusal.
#[test]
fn curio_s_configuration_files_load_with_a_note_for_every_key_they_do_not_share() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/curio");
    for (file, carried, noted) in [
        (
            "cuzk.example.toml",
            &[
                "0.0.0.0:9820",
                "/data/zk/params",
                "pipeline_depth: 2",
                "Json",
            ][..],
            &[
                "status_listen",
                "safety_margin",
                "eviction_min_idle",
                "gpu_threads",
                "scheduler.max_batch_size",
                "scheduler.max_batch_wait_ms",
                "scheduler.sort_by_type",
                "synthesis.threads",
                "pipeline.enabled",
                "pipeline.synthesis_lookahead",
                "pipeline.synthesis_concurrency",
            ][..],
        ),
        (
            "cuzk.documented.toml",
            &[
                "/var/tmp/filecoin-proof-parameters",
                "porep-32g",
                "synthesis_workers: 7",
            ][..],
            &[][..],
        ),
    ] {
        let check = std::process::Command::new(env!("CARGO_BIN_EXE_cuzk"))
            .args(["config", "check"])
            .arg(fixtures.join(file))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&check.stdout);
        assert!(
            check.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&check.stderr)
        );
        for c in carried {
            assert!(
                stdout.contains(c),
                "{file}: {c} not carried over:\n{stdout}"
            );
        }
        for n in noted {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with("note: ") && l.contains(n)),
                "{file}: no note names {n}:\n{stdout}"
            );
        }
    }
}

/// `cuzk --config F`, as Curio's documentation starts its daemon (no command), serves with a
/// configuration in Curio's own sections.
#[tokio::test(flavor = "multi_thread")]
async fn cuzk_with_only_a_curio_config_is_the_daemon() {
    let _g = support::cores_alone().await;
    support::store_with(ProofKind::WindowPost);
    let config = format!(
        "[daemon]\nlisten = \"unix://{{dir}}/cuzk.sock\"\n[srs]\nparam_cache = \"{}\"\n[gpus]\ndevices = []\ngpu_workers_per_device = 2\n[scheduler]\nsort_by_type = true\n[logging]\nlevel = \"info\"\nformat = \"json\"\n",
        support::params_dir().display()
    );
    let d = Daemon::start_as(tempfile::tempdir().unwrap(), &config, &[]);
    let mut c = d.client().await;
    let r = prove(&mut c, ProofKind::WindowPost).await;
    assert_eq!(status_of(&r), S::Completed, "{}", r.error_message);
    assert_verifies(ProofKind::WindowPost, &r.proof);
    let log = d.log();
    assert!(
        log.contains("scheduler.sort_by_type") && log.contains("ignored"),
        "the ignored key is named in the log:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn await_timeout_is_honoured_and_the_job_keeps_running() {
    let _g = support::cores_alone().await;
    let d = Daemon::start(Listen::Unix, "");
    let mut c = d.client().await;
    let s = c
        .submit_proof(wire(ProofKind::WinningPost, ""))
        .await
        .unwrap()
        .into_inner();
    let t = Instant::now();
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: s.job_id.clone(),
            timeout_ms: 100,
        })
        .await
        .unwrap()
        .into_inner();
    let waited = t.elapsed();
    assert_eq!(status_of(&r), S::Timeout, "{r:?}");
    assert!(r.proof.is_empty());
    assert!(
        waited >= Duration::from_millis(100) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: s.job_id,
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_completed(ProofKind::WinningPost, &r);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_pending_and_in_flight_jobs() {
    let _g = support::cores_alone().await;
    let d = Daemon::start(Listen::Unix, "");
    let mut c = d.client().await;
    let running = c
        .submit_proof(wire(ProofKind::WinningPost, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    until_on_device(&mut c, &running).await;
    let pending = c
        .submit_proof(wire(ProofKind::WindowPost, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let waiter = {
        let mut c = d.client().await;
        let job = running.clone();
        tokio::spawn(async move {
            c.await_proof(pb::AwaitProofRequest {
                job_id: job,
                timeout_ms: 0,
            })
            .await
        })
    };
    // The pending one never started.
    let r = c
        .cancel_proof(pb::CancelProofRequest {
            job_id: pending.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.cancelled && !r.was_running, "{r:?}");
    let a = c
        .await_proof(pb::AwaitProofRequest {
            job_id: pending,
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status_of(&a), S::Cancelled);
    // The running one: its waiter is answered at once; the partition's result is dropped.
    let t = Instant::now();
    let r = c
        .cancel_proof(pb::CancelProofRequest {
            job_id: running.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.cancelled && r.was_running, "{r:?}");
    let a = waiter.await.unwrap().unwrap().into_inner();
    assert_eq!(status_of(&a), S::Cancelled, "{a:?}");
    assert!(a.proof.is_empty());
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "the waiter was answered when cancelled"
    );
    // Cancelling again says it had ended; an unknown job is NOT_FOUND.
    let r = c
        .cancel_proof(pb::CancelProofRequest { job_id: running })
        .await
        .unwrap()
        .into_inner();
    assert!(!r.cancelled);
    let e = c
        .cancel_proof(pb::CancelProofRequest {
            job_id: "nope-1".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    // The device keeps working, and the discarded result was never counted.
    let ok = prove(&mut c, ProofKind::WindowPost).await;
    assert_completed(ProofKind::WindowPost, &ok);
    let s = status(&mut c).await;
    assert_eq!(
        (s.total_proofs_completed, s.total_proofs_cancelled),
        (1, 2),
        "{s:?}"
    );
    let m = metrics_text(&mut c).await;
    assert_eq!(
        metric(&m, "cuzk_jobs_cancelled_total{kind=\"winning-post\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&m, "cuzk_jobs_cancelled_total{kind=\"window-post\"}"),
        Some(1.0)
    );
    assert_eq!(
        metric(&m, "cuzk_jobs_completed_total{kind=\"winning-post\"}"),
        Some(0.0)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn preload_and_evict_parameters() {
    let _g = support::cores_alone().await;
    let d = Daemon::start(Listen::Unix, "");
    let mut c = d.client().await;
    let pre = |id: &str| pb::PreloadSrsRequest {
        circuit_id: id.into(),
    };
    let ev = |id: &str| pb::EvictSrsRequest {
        circuit_id: id.into(),
    };
    let p = c.preload_srs(pre("wpost-2k")).await.unwrap().into_inner();
    assert!(!p.already_loaded && p.size_bytes > 1 << 20, "{p:?}");
    let p = c.preload_srs(pre("wpost-2k")).await.unwrap().into_inner();
    assert!(p.already_loaded, "{p:?}");
    let s = status(&mut c).await;
    assert_eq!(s.loaded_srs.len(), 1);
    assert_eq!(s.loaded_srs[0].circuit_id, "wpost-2k");
    let e = c.evict_srs(ev("wpost-2k")).await.unwrap().into_inner();
    assert!(
        e.was_loaded && e.freed_bytes == s.loaded_srs[0].size_bytes,
        "{e:?}"
    );
    let e = c.evict_srs(ev("wpost-2k")).await.unwrap().into_inner();
    assert!(!e.was_loaded && e.freed_bytes == 0);
    let s = status(&mut c).await;
    assert!(s.loaded_srs.is_empty(), "{s:?}");

    // Refused while a job proves with them, and it says so.
    let job = c
        .submit_proof(wire(ProofKind::WinningPost, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    until_on_device(&mut c, &job).await;
    let e = c.evict_srs(ev("winning-2k")).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(e.message().contains("in use"), "{}", e.message());
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: job,
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_completed(ProofKind::WinningPost, &r);
    let e = c.evict_srs(ev("winning-2k")).await.unwrap().into_inner();
    assert!(e.was_loaded && e.freed_bytes > 0, "{e:?}");

    // Unknown circuits and missing files are clear errors.
    let e = c.preload_srs(pre("gpu-2k")).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("unknown kind"), "{}", e.message());
    let e = c.preload_srs(pre("porep-64g")).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{}", e.message());
    assert!(e.message().contains("missing"), "{}", e.message());
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_with_work_in_flight_answers_every_waiter_then_exits_zero() {
    let _g = support::cores_alone().await;
    let mut d = Daemon::start(Listen::Unix, "shutdown_grace_secs = 1");
    let mut c = d.client().await;
    let running = c
        .submit_proof(wire(ProofKind::WinningPost, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    until_on_device(&mut c, &running).await;
    let queued = c
        .submit_proof(wire(ProofKind::WindowPost, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let mut waiters = Vec::new();
    for job in [&running, &queued, &running] {
        let mut c = d.client().await;
        let job = job.clone();
        waiters.push(tokio::spawn(async move {
            c.await_proof(pb::AwaitProofRequest {
                job_id: job,
                timeout_ms: 0,
            })
            .await
            .map(|r| r.into_inner())
        }));
    }
    let prover = {
        let mut c = d.client().await;
        tokio::spawn(async move {
            c.prove(pb::ProveRequest {
                submit: Some(wire(ProofKind::WindowPost, "in-flight")),
            })
            .await
            .map(|r| r.into_inner().result.unwrap())
        })
    };
    // Every call is inside the daemon before the signal.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = status(&mut c).await;
        let jobs: u32 = s.queues.iter().map(|q| q.pending + q.in_progress).sum();
        if jobs == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "{s:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let t = Instant::now();
    d.signal("TERM");
    for w in waiters {
        let r = w
            .await
            .unwrap()
            .expect("every waiter gets an answer, not an error");
        assert!(
            matches!(status_of(&r), S::Completed | S::Cancelled),
            "{r:?}"
        );
        if status_of(&r) == S::Cancelled {
            assert!(r.error_message.contains("shut"), "{r:?}");
        }
    }
    let r = prover.await.unwrap().expect("Prove in flight is answered");
    assert!(
        matches!(status_of(&r), S::Completed | S::Cancelled),
        "{r:?}"
    );
    let status = d
        .wait_exit(Duration::from_secs(30))
        .expect("the daemon exits");
    assert_eq!(status.code(), Some(0), "{}", d.log());
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "grace is 1 s: {:?}",
        t.elapsed()
    );
    assert!(!d.socket().exists(), "the socket file is removed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_signal_exits_at_once() {
    let _g = support::cores_alone().await;
    let mut d = Daemon::start(
        Listen::Unix,
        "shutdown_grace_secs = 600\nmetrics_listen = \"127.0.0.1:0\"",
    );
    let mut c = d.client().await;
    let job = c
        .submit_proof(wire(ProofKind::WinningPost, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    until_on_device(&mut c, &job).await;
    d.signal("TERM");
    // While draining, new work is refused with UNAVAILABLE and status says so.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = status(&mut c).await;
        if s.shutting_down {
            break;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let e = c
        .submit_proof(wire(ProofKind::WindowPost, ""))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unavailable, "{}", e.message());
    let t = Instant::now();
    d.signal("INT");
    let status = d.wait_exit(Duration::from_secs(5)).expect("exits at once");
    assert_eq!(status.code(), Some(130));
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn client_subcommands_drive_a_running_daemon() {
    let _g = support::cores_alone_blocking();
    let d = Daemon::start(Listen::Unix, "");
    let dir = tempfile::tempdir().unwrap();
    let req = dir.path().join("window.json");
    std::fs::write(&req, request(ProofKind::WindowPost).to_json().unwrap()).unwrap();
    let proof = dir.path().join("window.proof");
    let run = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cuzk"));
        c.arg("client").arg("--addr").arg(&d.addr);
        for a in args {
            c.arg(a);
        }
        c.output().unwrap()
    };
    let out = run(&[&"prove", &"--input", &req, &"--out", &proof]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("completed: 1 partition(s), 192 bytes, verified: yes"),
        "{stdout}"
    );
    assert_verifies(ProofKind::WindowPost, &std::fs::read(&proof).unwrap());

    let out = run(&[&"status"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("completed 1"),
        "{stdout}"
    );
    assert!(stdout.contains("wpost-2k"), "{stdout}");

    let out = run(&[&"metrics"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        metric(&stdout, "cuzk_jobs_completed_total{kind=\"window-post\"}"),
        Some(1.0),
        "{stdout}"
    );

    let out = run(&[&"prove", &"--input", &req, &"--no-wait"]);
    let job = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(out.status.success() && !job.is_empty());
    let out = run(&[&"cancel", &job]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains(&job), "{stdout}");

    let out = run(&[&"cancel", &"no-such-job"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("NotFound"),
        "{stderr}"
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "client",
            "--addr",
            "unix:///nonexistent/cuzk.sock",
            "status",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("cannot connect"),
        "{stderr}"
    );
}

#[test]
fn config_example_is_a_valid_configuration() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["config", "example"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("cuzk.toml");
    std::fs::write(&f, &out.stdout).unwrap();
    let check = std::process::Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["config", "check"])
        .arg(&f)
        .env("CUZK_LISTEN", "tcp://127.0.0.1:9820")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(
        stdout.contains("127.0.0.1:9820"),
        "environment overrides the file: {stdout}"
    );
    // A bad file is one clear line naming the file.
    std::fs::write(&f, "[daemon]\nlisten = 5\n").unwrap();
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["config", "check"])
        .arg(&f)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && stderr.contains("cuzk.toml"),
        "{stderr}"
    );
}

/// The status page as an operator sees it: served to a loopback client and rendered by a
/// real browser (headless Chromium, `$CUZK_CHROMIUM` or `chromium` on the PATH), it shows
/// the device row, the queues, and a failed job with its cause. Without a browser the test
/// fails: CI installs Debian's `chromium`.
#[tokio::test(flavor = "multi_thread")]
async fn the_status_page_shows_devices_queues_and_failures_in_a_browser() {
    let _g = support::cores_alone().await;
    let d = Daemon::start(Listen::Unix, "metrics_listen = \"127.0.0.1:0\"");
    let mut c = d.client().await;
    let ok = c
        .prove(pb::ProveRequest {
            submit: Some(wire(ProofKind::WindowPost, "wdpost-status")),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_completed(ProofKind::WindowPost, &ok);
    // A WindowPoSt whose comm_r_last has its low bit flipped fails synthesis's check.
    let mut bad = request(ProofKind::WindowPost).clone();
    if let cuzk::ProofInputs::Post(p) = &mut bad.inputs {
        let n = p.vanilla_proofs[0].len();
        p.vanilla_proofs[0][n - 32] ^= 1;
    }
    let refused = c
        .prove(pb::ProveRequest {
            submit: Some(cuzk::daemon::validate::to_wire(&bad, "wdpost-tampered", 0)),
        })
        .await;
    assert_eq!(refused.unwrap_err().code(), Code::InvalidArgument);

    let url = d.metrics_url.clone().unwrap();
    let (code, page) = http_get(&url, "/status");
    assert_eq!(code, 200, "{page}");
    let chromium = std::env::var_os("CUZK_CHROMIUM").unwrap_or_else(|| "chromium".into());
    let dom = tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--virtual-time-budget=2000",
                "--dump-dom",
            ])
            .arg(format!("{url}/status"))
            .output()
            .unwrap_or_else(|e| {
                panic!("headless Chromium ({chromium:?}) must run for this test: {e}")
            });
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    })
    .await
    .unwrap();
    assert!(dom.contains("<title>cuzk status</title>"), "{dom}");
    let device_rows = dom.matches("<tr class=\"device\">").count();
    assert_eq!(device_rows, 1, "one row for the CPU device: {dom}");
    assert!(dom.contains("<span class=\"ok\">ok</span>"), "{dom}");
    assert_eq!(dom.matches("<tr class=\"queue\">").count(), 4, "{dom}");
    assert!(dom.contains("<tr class=\"failure\">"), "{dom}");
    assert!(dom.contains("invalid-input"), "{dom}");
    assert!(dom.contains("does not satisfy constraint"), "{dom}");
    assert!(dom.contains("1 completed, 1 failed"), "{dom}");
}

/// Debian's Prometheus (`$CUZK_PROMETHEUS_DIR` or the PATH; CI installs the `prometheus`
/// package) against a running daemon: `promtool` accepts the shipped alert rules, Prometheus
/// loads them, scrapes the daemon and answers a query for a proof just made.
#[tokio::test(flavor = "multi_thread")]
async fn prometheus_scrapes_the_daemon_and_loads_the_alert_rules() {
    let _g = support::cores_alone().await;
    let bin = |name: &str| match std::env::var_os("CUZK_PROMETHEUS_DIR") {
        Some(dir) => std::path::PathBuf::from(dir).join(name),
        None => std::path::PathBuf::from(name),
    };
    let rules =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/prometheus/cuzk-alerts.yml");
    let check = std::process::Command::new(bin("promtool"))
        .arg("check")
        .arg("rules")
        .arg(&rules)
        .output()
        .expect("promtool (Debian's prometheus package) must run for this test");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("SUCCESS: 4 rules found"));

    let d = Daemon::start(Listen::Unix, "metrics_listen = \"127.0.0.1:0\"");
    let mut c = d.client().await;
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(wire(ProofKind::WindowPost, "wdpost-prometheus")),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_completed(ProofKind::WindowPost, &r);

    let target = d.metrics_url.clone().unwrap();
    let target = target.trim_start_matches("http://");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: cuzk\n    static_configs:\n      - targets: ['{target}']\n",
            rules.display()
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let web = format!("127.0.0.1:{port}");
    let mut prom = std::process::Command::new(bin("prometheus"))
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={web}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
        .spawn()
        .expect("prometheus must run for this test");
    let query = "/api/v1/query?query=cuzk_jobs_completed_total%7Bkind%3D%22window-post%22%7D";
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut answer = String::new();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let w = web.clone();
        let got = tokio::task::spawn_blocking(move || {
            std::net::TcpStream::connect(&w)
                .ok()
                .map(|_| http_get(&format!("http://{w}"), query))
        })
        .await
        .unwrap();
        if let Some((200, body)) = got {
            if body.contains("\"value\":[") {
                answer = body;
                break;
            }
        }
    }
    let rules_loaded = http_get(&format!("http://{web}"), "/api/v1/rules").1;
    let _ = prom.kill();
    let _ = prom.wait();
    let log = std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    assert!(
        answer.contains("\"1\"]"),
        "Prometheus did not scrape the completed WindowPoSt: {answer}\n{log}"
    );
    for alert in [
        "CuzkDeviceQuarantined",
        "CuzkQueueNotMoving",
        "CuzkProofFailedVerification",
        "CuzkWinningPostLatencyAtRisk",
    ] {
        assert!(
            rules_loaded.contains(alert),
            "{alert} not loaded: {rules_loaded}"
        );
    }
}
