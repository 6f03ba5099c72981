//! Run traces in the Chrome trace-event format (opened by Perfetto and chrome://tracing):
//! each device is one track, each synthesis worker another, every partition's GPU phase
//! and synthesis one slice with its job and partition.
//!
//! Events are sent from the threads that measured them through a channel (never blocking a
//! device) and written when the engine shuts down.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde_json::json;

use crate::error::{Error, Result};

/// One measured slice.
#[derive(Clone, Debug)]
pub struct TraceEvent {
    /// The track: a device ("gpu 0000:00:06", "cpu") or a worker ("synthesis 2").
    pub track: String,
    /// What ran ("prove", "synthesis", "prepare").
    pub name: &'static str,
    /// Start, since the engine started.
    pub start: Duration,
    /// Duration.
    pub duration: Duration,
    /// Job id.
    pub job: u64,
    /// Partition index (None for job-level slices).
    pub partition: Option<usize>,
    /// Free-form detail (kind, outcome).
    pub detail: String,
}

/// Where threads send events; cloning is cheap. A disabled sink drops them.
#[derive(Clone)]
pub struct TraceSink {
    epoch: Instant,
    tx: Option<Sender<TraceEvent>>,
}

impl TraceSink {
    /// A sink and the receiver the writer drains; `enabled = false` records nothing.
    pub fn new(enabled: bool) -> (TraceSink, Option<Receiver<TraceEvent>>) {
        let epoch = Instant::now();
        if enabled {
            let (tx, rx) = crossbeam_channel::unbounded();
            (
                TraceSink {
                    epoch,
                    tx: Some(tx),
                },
                Some(rx),
            )
        } else {
            (TraceSink { epoch, tx: None }, None)
        }
    }

    /// Records a slice that started at `start` and ends now.
    pub fn slice(
        &self,
        track: &str,
        name: &'static str,
        start: Instant,
        job: u64,
        partition: Option<usize>,
        detail: impl Into<String>,
    ) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(TraceEvent {
                track: track.to_string(),
                name,
                start: start.saturating_duration_since(self.epoch),
                duration: start.elapsed(),
                job,
                partition,
                detail: detail.into(),
            });
        }
    }
}

/// Writes events as a Chrome trace JSON file: one process, one thread track per distinct
/// track name (named by metadata events), slices as complete ("X") events in microseconds.
pub fn write_chrome_trace(path: &Path, events: &[TraceEvent]) -> Result<()> {
    let mut tracks: BTreeMap<&str, usize> = BTreeMap::new();
    for e in events {
        let n = tracks.len();
        tracks.entry(e.track.as_str()).or_insert(n + 1);
    }
    let mut out = Vec::with_capacity(events.len() + tracks.len() + 1);
    out.push(
        json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "cuzk"}}),
    );
    for (name, tid) in &tracks {
        out.push(
            json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}),
        );
        out.push(json!({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid, "args": {"sort_index": tid}}));
    }
    for e in events {
        let tid = tracks.get(e.track.as_str()).copied().unwrap_or(0);
        let label = match e.partition {
            Some(p) => format!("{} job {} p{}", e.name, e.job, p),
            None => format!("{} job {}", e.name, e.job),
        };
        out.push(json!({
            "name": label,
            "cat": e.name,
            "ph": "X",
            "pid": 1,
            "tid": tid,
            "ts": e.start.as_secs_f64() * 1e6,
            "dur": e.duration.as_secs_f64() * 1e6,
            "args": {"job": e.job, "partition": e.partition, "detail": e.detail},
        }));
    }
    let text =
        serde_json::to_vec(&json!({"traceEvents": out, "displayTimeUnit": "ms"})).map_err(|e| {
            Error::Trace {
                path: path.into(),
                source: std::io::Error::other(e),
            }
        })?;
    std::fs::write(path, text).map_err(|source| Error::Trace {
        path: path.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_track_per_device_and_slices_in_microseconds() {
        let (sink, rx) = TraceSink::new(true);
        let t = Instant::now();
        sink.slice("gpu 0000:00:06", "prove", t, 1, Some(0), "ok");
        sink.slice("gpu 0000:00:07", "prove", t, 1, Some(1), "ok");
        sink.slice("gpu 0000:00:06", "prove", t, 2, Some(0), "ok");
        let events: Vec<_> = rx.unwrap().try_iter().collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        write_chrome_trace(&path, &events).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let names: Vec<&str> = evs
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["gpu 0000:00:06", "gpu 0000:00:07"]);
        assert_eq!(evs.iter().filter(|e| e["ph"] == "X").count(), 3);
        let (sink, rx) = TraceSink::new(false);
        sink.slice("x", "prove", t, 1, None, "");
        assert!(rx.is_none());
    }
}
