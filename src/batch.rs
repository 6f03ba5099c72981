//! `cuzk batch`: a stream of real proofs of mixed kinds through the Engine, the way a busy
//! node drives it. Every proof is verified again from its bytes; the trace of the run is
//! checked for overlapping partitions on any device; throughput and per-device work are
//! measured. With fixed r and s the digest of all proofs is reproducible, so runs on
//! different device sets (or `CUDA_VISIBLE_DEVICES` orders) can be compared byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cuzk_actors::{Engine, EngineConfig, JobTimings, SubmitOptions};
use cuzk_engine::{ProofKind, ProofRequest};

/// What a batch run measured.
#[derive(Clone, Debug)]
pub struct BatchReport {
    /// Jobs proved (each verified).
    pub jobs: usize,
    /// Partitions proved.
    pub partitions: usize,
    /// From the first submission to the last result.
    pub wall: Duration,
    /// Jobs per kind.
    pub per_kind: BTreeMap<String, usize>,
    /// Per device: (partitions, busy time).
    pub per_device: BTreeMap<String, (u64, Duration)>,
    /// blake3 of all proofs concatenated in submission order.
    pub digest: String,
    /// Pairs of overlapping slices on one device track in the trace (must be 0).
    pub overlaps: usize,
    /// Device tracks that ran at least one partition, from the trace.
    pub busy_tracks: Vec<String>,
    /// Per kind: median time from submit to verified proof of one job alone on the warm,
    /// idle engine (three jobs one after another, before the stream), with that job's
    /// timings as the engine measured them.
    pub latency: BTreeMap<String, (Duration, JobTimings)>,
}

/// Loads `<dir>/<kind>-2KiB.json` (as written by `cuzk gen`) for each kind.
pub fn load_requests(dir: &Path, kinds: &[ProofKind]) -> cuzk_engine::Result<Vec<ProofRequest>> {
    kinds
        .iter()
        .map(|k| {
            let path = dir.join(format!("{k}-2KiB.json"));
            let bytes = std::fs::read(&path).map_err(|e| cuzk_engine::Error::io(&path, e))?;
            ProofRequest::from_json(&bytes)
        })
        .collect()
}

/// Runs `count` jobs, cycling through `requests`, on an engine started from `config` (which
/// must write a trace). Fails on the first job that fails or does not verify.
pub fn run(
    config: EngineConfig,
    requests: &[ProofRequest],
    count: usize,
    trace: &Path,
    progress: &dyn Fn(usize, usize),
) -> Result<BatchReport, Box<dyn std::error::Error>> {
    let mut config = config;
    config.trace_file = Some(trace.to_path_buf());
    config.max_outstanding_partitions = config.max_outstanding_partitions.max(count * 16);
    let engine = Engine::start(config)?;
    // warm-up: load parameters and PCE recordings once per kind, outside the timed part
    for r in requests {
        engine.prove(r, SubmitOptions::default())?;
    }
    // latency: one job at a time on the idle engine; `prove` returns once the engine has
    // verified the proof
    let mut latency = BTreeMap::new();
    for r in requests {
        let mut times = Vec::with_capacity(3);
        for _ in 0..3 {
            let t = Instant::now();
            let res = engine.prove(r, SubmitOptions::default())?;
            times.push((t.elapsed(), res.timings));
        }
        times.sort_by_key(|(t, _)| *t);
        let median = times.swap_remove(1);
        latency.insert(r.proof.kind.to_string(), median);
    }
    let before = engine.status()?;
    let t0 = Instant::now();
    let mut jobs = Vec::with_capacity(count);
    for i in 0..count {
        let r = &requests[i % requests.len()];
        jobs.push((
            i % requests.len(),
            engine.submit(r, SubmitOptions::default())?.job,
        ));
    }
    let mut proofs = Vec::with_capacity(count);
    let mut partitions = 0;
    for (n, (ri, job)) in jobs.iter().enumerate() {
        let res = engine.wait(*job, None)?;
        partitions += res.partitions;
        proofs.push((*ri, res.proof));
        progress(n + 1, count);
    }
    let wall = t0.elapsed();
    let after = engine.status()?;
    let store = engine.store().clone();
    let mut per_kind = BTreeMap::new();
    let mut hasher = blake3::Hasher::new();
    for (ri, proof) in &proofs {
        let req = &requests[*ri];
        if !cuzk_engine::verify(&store, req, proof)? {
            return Err(format!("a {} proof from the batch does not verify", req.proof).into());
        }
        *per_kind.entry(req.proof.kind.to_string()).or_insert(0) += 1;
        hasher.update(proof);
    }
    let mut per_device = BTreeMap::new();
    for d in &after.devices {
        let b = before.devices.iter().find(|x| x.info.id == d.info.id);
        let parts = d.partitions_ok - b.map_or(0, |x| x.partitions_ok);
        let busy = d.busy.saturating_sub(b.map_or(Duration::ZERO, |x| x.busy));
        per_device.insert(d.info.id.to_string(), (parts, busy));
    }
    engine.shutdown(Duration::from_secs(10))?;
    let (overlaps, busy_tracks) = check_trace(trace)?;
    Ok(BatchReport {
        jobs: count,
        partitions,
        wall,
        per_kind,
        per_device,
        digest: hasher.finalize().to_hex().to_string(),
        overlaps,
        busy_tracks,
        latency,
    })
}

/// Reads a Chrome trace written by the engine and counts overlapping "prove" slices on each
/// device track. Returns (overlaps, names of device tracks with at least one slice).
pub fn check_trace(path: &Path) -> Result<(usize, Vec<String>), Box<dyn std::error::Error>> {
    let v: serde_json::Value = serde_json::from_slice(
        &std::fs::read(path).map_err(|e| format!("cannot read trace {}: {e}", path.display()))?,
    )?;
    let events = v["traceEvents"]
        .as_array()
        .ok_or("trace has no traceEvents")?;
    let mut names = BTreeMap::new();
    let mut slices: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    for e in events {
        let tid = e["tid"].as_u64().unwrap_or(0);
        if e["name"] == "thread_name" {
            names.insert(tid, e["args"]["name"].as_str().unwrap_or("").to_string());
        } else if e["ph"] == "X" && e["cat"] == "prove" {
            let ts = e["ts"].as_f64().unwrap_or(0.0);
            let dur = e["dur"].as_f64().unwrap_or(0.0);
            slices.entry(tid).or_default().push((ts, ts + dur));
        }
    }
    let mut overlaps = 0;
    let mut busy = Vec::new();
    for (tid, mut s) in slices {
        s.sort_by(|a, b| a.0.total_cmp(&b.0));
        overlaps += s.windows(2).filter(|w| w[1].0 < w[0].1 - 0.5).count();
        busy.push(
            names
                .get(&tid)
                .cloned()
                .unwrap_or_else(|| format!("track {tid}")),
        );
    }
    Ok((overlaps, busy))
}

/// Default trace location for a batch run.
pub fn default_trace() -> PathBuf {
    std::env::temp_dir().join("cuzk-batch-trace.json")
}
