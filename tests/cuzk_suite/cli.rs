//! The `cuzk` binary as a user meets it: the demo proves and verifies; bad input exits
//! non-zero with a one-line reason.

use crate::support;

use std::process::Command;

fn cuzk() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    c.arg("--params-dir").arg(support::params_dir());
    c
}

#[test]
fn demo_proves_and_verifies() {
    let _cores = support::cores_shared();
    let out = cuzk()
        .args(["demo", "--kind", "window-post"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("verified: yes"), "{stdout}");
    assert!(stdout.contains("timings:"), "{stdout}");
}

/// Runs `cuzk` with `args` (paths allowed) and returns its output.
fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> std::process::Output {
    let mut c = cuzk();
    for a in args {
        c.arg(a);
    }
    c.output().unwrap()
}

/// As [`run`], asserting success (stderr in the failure message).
fn run_ok(args: &[&dyn AsRef<std::ffi::OsStr>]) -> std::process::Output {
    let out = run(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn gen_prove_verify_round_trip_and_tampered_proof_fails() {
    let _cores = support::cores_shared();
    // the kinds it proves: their parameters, whatever the other tests made before it
    support::store_with(cuzk::ProofKind::WindowPost);
    support::store_with(cuzk::ProofKind::WinningPost);
    let dir = tempfile::tempdir().unwrap();
    run_ok(&[&"gen", &"--out", &dir.path()]);
    let req = dir.path().join("window-post-2KiB.json");
    let proof = dir.path().join("window.proof");
    run_ok(&[&"prove", &"--input", &req, &"--out", &proof]);
    assert_eq!(std::fs::read(&proof).unwrap().len(), 192);
    // --log-spans: each phase span's duration on stderr as it closes, where RUST_LOG lets
    // its level through; without the flag, no span lines at the same level
    let closed = |log_spans: bool| {
        let mut c = cuzk();
        c.env("RUST_LOG", "info");
        if log_spans {
            c.arg("--log-spans");
        }
        let out = c
            .args(["prove", "--input"])
            .arg(&req)
            .arg("--out")
            .arg(&proof)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        let spans = err
            .lines()
            .filter(|l| l.contains("close") && l.contains("time.busy"))
            .map(str::to_owned)
            .collect::<Vec<_>>();
        (spans, err)
    };
    let (spans, err) = closed(true);
    assert!(
        spans.iter().any(|l| l.contains("synthesis")) && spans.iter().any(|l| l.contains("verify")),
        "{err}"
    );
    let (spans, err) = closed(false);
    assert!(spans.is_empty(), "{err}");
    run_ok(&[&"verify", &"--input", &req, &"--proof", &proof]);

    // The proof does not verify against other public data (the request of a fresh sector).
    let other_dir = tempfile::tempdir().unwrap();
    run_ok(&[&"gen", &"--seed", &"99", &"--out", &other_dir.path()]);
    let other_req = other_dir.path().join("window-post-2KiB.json");
    let bad = run(&[&"verify", &"--input", &other_req, &"--proof", &proof]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("does not verify"));

    // A stream of the same requests through the Engine on the CPU: every proof verified, no
    // overlap in the trace, a latency line per kind (each kind is also proved three times
    // alone for it, so two jobs keep the test short).
    let trace = dir.path().join("trace.json");
    let out = run_ok(&[
        &"batch",
        &"--inputs",
        &dir.path(),
        &"--cpu",
        &"--kind",
        &"window-post",
        &"--kind",
        &"winning-post",
        &"--count",
        &"2",
        &"--fixed-rs",
        &"--trace",
        &trace,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 jobs") && text.contains("every proof verified"),
        "{text}"
    );
    assert!(
        text.contains("overlapping partitions on a device: 0"),
        "{text}"
    );
    for kind in ["window-post", "winning-post"] {
        assert!(
            text.lines()
                .any(|l| l.contains(kind) && l.contains("ms from submit to verified proof")),
            "{text}"
        );
    }
    assert!(trace.exists());
}

#[test]
fn bad_input_exits_nonzero_with_one_line() {
    let _cores = support::cores_shared();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.json");
    std::fs::write(&f, b"{ not json").unwrap();
    let out = cuzk()
        .args(["prove", "--input"])
        .arg(&f)
        .arg("--out")
        .arg(dir.path().join("p"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: cannot decode request JSON"),
        "{err}"
    );
    assert!(!dir.path().join("p").exists(), "no proof file on failure");
}

#[test]
fn bench_refuses_an_unknown_backend_before_any_work() {
    let _cores = support::cores_shared();
    let out = cuzk().args(["bench", "--backend", "tpu"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .last()
            .is_some_and(|l| l.starts_with("error:") && l.contains("--backend tpu")),
        "{err}"
    );
    // refused before any step: no parameters checked, no inputs generated
    assert!(
        !err.contains("parameters") && !err.contains("generating"),
        "{err}"
    );
}

/// `cuzk bench --backend dual` without a CUDA device: a one-line error naming the device,
/// before any work, never a panic.
#[test]
fn bench_backend_dual_without_a_device_is_a_clear_error() {
    if cuzk::kernels::driver_present() {
        return; // a GPU machine: gpu_proofs::bench_backend_dual_proves_every_kind runs
    }
    let _cores = support::cores_shared();
    let out = cuzk()
        .args(["bench", "--backend", "dual"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.lines()
            .last()
            .is_some_and(|l| l.starts_with("error: device cuda:0") && l.contains("driver")),
        "{err}"
    );
    assert!(
        !err.contains("parameters") && !err.contains("generating"),
        "{err}"
    );
}
