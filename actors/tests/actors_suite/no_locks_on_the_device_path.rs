//! Mutual exclusion on devices comes from ownership, never from locks or environment
//! variables (docs/architecture.md). This test reads the sources: no `Mutex`/`RwLock` in
//! the code between a lease and a device (scheduler, lease table, actors, drivers, the
//! backends and kernels a device actor calls), and no `set_var` anywhere in the workspace.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if p.is_dir() {
            if !name.starts_with('.') && !name.starts_with("target") && name != "shared" {
                rust_files(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

/// Code lines (comments dropped) of a file.
fn code(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

#[test]
fn no_lock_between_a_lease_and_a_device() {
    let r = root();
    let mut files = Vec::new();
    for d in ["actors/src/runtime", "engine/src/cpu", "engine/src/cuda"] {
        rust_files(&r.join(d), &mut files);
    }
    for f in [
        "actors/src/lease.rs",
        "actors/src/policy.rs",
        "actors/src/driver.rs",
        "actors/src/mock.rs",
        "actors/src/engine.rs",
        "engine/src/prover.rs",
        "kernels/src/device.rs",
        "kernels/src/msm.rs",
        "kernels/src/ntt.rs",
    ] {
        files.push(r.join(f));
    }
    assert!(
        files.len() > 12,
        "the paths moved: update this test ({files:?})"
    );
    let mut found = Vec::new();
    for f in &files {
        for (n, line) in code(f) {
            if line.contains("Mutex") || line.contains("RwLock") {
                found.push(format!("{}:{n}: {}", f.display(), line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "locks on the device path:\n{}",
        found.join("\n")
    );
}

#[test]
fn nothing_sets_environment_variables() {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    assert!(files.len() > 50, "found only {} files", files.len());
    let needles = [concat!("set", "_var("), concat!("remove", "_var(")];
    let mut found = Vec::new();
    for f in &files {
        for (n, line) in code(f) {
            if needles.iter().any(|x| line.contains(x)) {
                found.push(format!("{}:{n}: {}", f.display(), line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "CUDA reads CUDA_VISIBLE_DEVICES once at start-up; cuzk never sets variables:\n{}",
        found.join("\n")
    );
}
