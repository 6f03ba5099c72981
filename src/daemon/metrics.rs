//! Prometheus metrics: counters and histograms fed by finished jobs and by the service,
//! gauges read from an engine status snapshot when the text is rendered.
//!
//! Names (all prefixed `cuzk_`): `jobs_submitted_total{kind}`,
//! `jobs_completed_total{kind}`, `jobs_failed_total{kind,cause}`,
//! `jobs_cancelled_total{kind}`, `requests_rejected_total{reason}` (a gRPC code, or
//! `wire_scan` for messages the codec refused before decoding),
//! `rpc_requests_total{method,code}`, `job_duration_seconds{kind}` and
//! `phase_duration_seconds{kind,phase}` (histograms), `queue_pending{kind}`,
//! `queue_in_progress{kind}`, `device_busy_seconds_total{device,name}`,
//! `device_partitions_total{device,name,outcome}` (`ok` or `failed`),
//! `device_vram_total_bytes`, `device_vram_leased_bytes`, `device_quarantined`,
//! `device_parameters_streamed`, `device_streamed_bytes_total`, `device_peak_memory_bytes`,
//! `srs_loaded_bytes{circuit}`, `srs_users{circuit}`, `host_memory_used_bytes`,
//! `host_memory_budget_bytes`, `uptime_seconds`, `shutting_down`.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::config::circuit_id;
use super::engine::{Ending, JobReport, Snapshot};
use crate::ProofKind;
use cuzk_actors::FailureCause;

/// Histogram bucket upper bounds, seconds: from a WinningPoSt phase (milliseconds) to a
/// PoRep 32 GiB job (minutes).
const BUCKETS: [f64; 17] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0, 120.0, 300.0, 600.0,
    1800.0,
];

#[derive(Clone, Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, d: Duration) {
        let s = d.as_secs_f64();
        for (c, le) in self.counts.iter_mut().zip(BUCKETS) {
            if s <= le {
                *c += 1;
            }
        }
        self.count += 1;
        self.sum += s;
    }
}

#[derive(Default)]
struct Inner {
    submitted: BTreeMap<ProofKind, u64>,
    completed: BTreeMap<ProofKind, u64>,
    failed: BTreeMap<(ProofKind, FailureCause), u64>,
    cancelled: BTreeMap<ProofKind, u64>,
    rejected: BTreeMap<&'static str, u64>,
    rpc: BTreeMap<(&'static str, String), u64>,
    job: BTreeMap<ProofKind, Histogram>,
    phase: BTreeMap<(ProofKind, &'static str), Histogram>,
    recent_failures: VecDeque<FailedJob>,
}

/// How many failed jobs [`Metrics::recent_failures`] keeps.
pub const RECENT_FAILURES: usize = 20;

/// A failed job, as the status page lists it.
#[derive(Clone, Debug)]
pub struct FailedJob {
    /// When it ended.
    pub at: SystemTime,
    /// The engine's job number.
    pub job: u64,
    /// Proof kind.
    pub kind: ProofKind,
    /// Cause class.
    pub cause: FailureCause,
    /// What went wrong.
    pub message: String,
}

/// The daemon's metrics registry.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
    telemetry: std::sync::OnceLock<std::sync::Arc<crate::telemetry::ExportStats>>,
}

impl Metrics {
    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    /// Counts an accepted submission (a resubmission is not counted again).
    pub fn job_submitted(&self, kind: ProofKind) {
        self.with(|m| *m.submitted.entry(kind).or_default() += 1);
    }

    /// Counts a refused request; `reason` is the gRPC code's name in snake case.
    pub fn request_rejected(&self, reason: &'static str) {
        self.with(|m| *m.rejected.entry(reason).or_default() += 1);
    }

    /// Counts a finished gRPC call.
    pub fn rpc_done(&self, method: &'static str, code: tonic::Code) {
        let code = format!("{code:?}");
        self.with(|m| *m.rpc.entry((method, code)).or_default() += 1);
    }

    /// Records a finished job (the engine calls this once per job).
    pub fn job_done(&self, report: &JobReport) {
        let kind = report.kind;
        self.with(|m| match report.ending {
            Ending::Completed => {
                *m.completed.entry(kind).or_default() += 1;
                m.job.entry(kind).or_default().observe(report.timings.total);
                for (phase, d) in report.timings.phases() {
                    m.phase.entry((kind, phase)).or_default().observe(d);
                }
            }
            Ending::Failed(cause) => {
                *m.failed.entry((kind, cause)).or_default() += 1;
                if m.recent_failures.len() == RECENT_FAILURES {
                    m.recent_failures.pop_back();
                }
                m.recent_failures.push_front(FailedJob {
                    at: SystemTime::now(),
                    job: report.job,
                    kind,
                    cause,
                    message: report.message.clone().unwrap_or_default(),
                });
            }
            Ending::Cancelled => *m.cancelled.entry(kind).or_default() += 1,
        });
    }

    /// The last [`RECENT_FAILURES`] failed jobs, newest first.
    pub fn recent_failures(&self) -> Vec<FailedJob> {
        self.with(|m| m.recent_failures.iter().cloned().collect())
    }

    /// Reports span export's counters (once; export is configured at start).
    pub fn set_telemetry(&self, stats: std::sync::Arc<crate::telemetry::ExportStats>) {
        let _ = self.telemetry.set(stats);
    }

    /// The Prometheus text exposition of the counters and of `status`'s gauges.
    pub fn render(&self, status: &Snapshot) -> String {
        let mut out = String::with_capacity(8 << 10);
        self.with(|m| render_counters(&mut out, m));
        let (exported, dropped) = self.telemetry.get().map_or((0, 0), |s| {
            use std::sync::atomic::Ordering::Relaxed;
            (s.exported.load(Relaxed), s.dropped.load(Relaxed))
        });
        header(
            &mut out,
            "telemetry_spans_exported_total",
            "counter",
            "Spans the OpenTelemetry collector accepted (0 while export is off).",
        );
        let _ = writeln!(out, "cuzk_telemetry_spans_exported_total {exported}");
        header(
            &mut out,
            "telemetry_spans_dropped_total",
            "counter",
            "Spans not exported: the export queue was full, or their batch failed or timed out.",
        );
        let _ = writeln!(out, "cuzk_telemetry_spans_dropped_total {dropped}");
        render_gauges(&mut out, status);
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP cuzk_{name} {help}");
    let _ = writeln!(out, "# TYPE cuzk_{name} {kind}");
}

/// Escapes a label value (backslash, double quote, newline).
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn per_kind(out: &mut String, name: &str, help: &str, map: &BTreeMap<ProofKind, u64>) {
    header(out, name, "counter", help);
    for kind in ProofKind::ALL {
        let v = map.get(&kind).copied().unwrap_or(0);
        let _ = writeln!(out, "cuzk_{name}{{kind=\"{kind}\"}} {v}");
    }
}

fn histogram(out: &mut String, name: &str, labels: &str, h: &Histogram) {
    for (le, c) in BUCKETS.iter().zip(h.counts) {
        let _ = writeln!(out, "cuzk_{name}_bucket{{{labels},le=\"{le}\"}} {c}");
    }
    let _ = writeln!(
        out,
        "cuzk_{name}_bucket{{{labels},le=\"+Inf\"}} {}",
        h.count
    );
    let _ = writeln!(out, "cuzk_{name}_sum{{{labels}}} {}", h.sum);
    let _ = writeln!(out, "cuzk_{name}_count{{{labels}}} {}", h.count);
}

fn render_counters(out: &mut String, m: &Inner) {
    per_kind(
        out,
        "jobs_submitted_total",
        "Jobs accepted, by proof kind.",
        &m.submitted,
    );
    per_kind(
        out,
        "jobs_completed_total",
        "Jobs proved and verified, by proof kind.",
        &m.completed,
    );
    per_kind(
        out,
        "jobs_cancelled_total",
        "Jobs cancelled (by a caller or by shutdown).",
        &m.cancelled,
    );
    header(
        out,
        "jobs_failed_total",
        "counter",
        "Jobs failed, by proof kind and cause.",
    );
    for ((kind, cause), v) in &m.failed {
        let _ = writeln!(
            out,
            "cuzk_jobs_failed_total{{kind=\"{kind}\",cause=\"{}\"}} {v}",
            esc(cause.as_str())
        );
    }
    header(
        out,
        "requests_rejected_total",
        "counter",
        "Requests refused at the boundary, by reason.",
    );
    let _ = writeln!(
        out,
        "cuzk_requests_rejected_total{{reason=\"wire_scan\"}} {}",
        super::codec::refused()
    );
    for (reason, v) in &m.rejected {
        let _ = writeln!(
            out,
            "cuzk_requests_rejected_total{{reason=\"{}\"}} {v}",
            esc(reason)
        );
    }
    header(
        out,
        "rpc_requests_total",
        "counter",
        "gRPC calls answered, by method and status code.",
    );
    for ((method, code), v) in &m.rpc {
        let _ = writeln!(
            out,
            "cuzk_rpc_requests_total{{method=\"{}\",code=\"{}\"}} {v}",
            esc(method),
            esc(code)
        );
    }
    header(
        out,
        "job_duration_seconds",
        "histogram",
        "Submission to proof, completed jobs, by kind.",
    );
    for (kind, h) in &m.job {
        histogram(out, "job_duration_seconds", &format!("kind=\"{kind}\""), h);
    }
    header(
        out,
        "phase_duration_seconds",
        "histogram",
        "Time per phase of completed jobs (summed over partitions), by kind and phase.",
    );
    for ((kind, phase), h) in &m.phase {
        histogram(
            out,
            "phase_duration_seconds",
            &format!("kind=\"{kind}\",phase=\"{phase}\""),
            h,
        );
    }
}

/// The circuit id of a loaded parameter set, else its identifier.
fn srs_name(r: &super::engine::SrsView) -> String {
    esc(&r.proof.map_or_else(
        || r.identifier.clone(),
        |p| circuit_id(p.kind, p.sector_size),
    ))
}

/// The gauges (and device counters) of a status snapshot.
fn render_gauges(out: &mut String, s: &Snapshot) {
    render_queue_gauges(out, s);
    render_device_gauges(out, s);
    render_srs_gauges(out, s);
    render_device_memory_gauges(out, s);
    render_host_gauges(out, s);
}

/// The labels of a device's samples: its PCI address (or `cpu`) and its name.
fn device_labels(d: &super::engine::DeviceView) -> String {
    let id = if d.pci.is_empty() {
        "cpu".to_string()
    } else {
        d.pci.clone()
    };
    format!("device=\"{}\",name=\"{}\"", esc(&id), esc(&d.name))
}

/// Jobs waiting and running, by kind.
fn render_queue_gauges(out: &mut String, s: &Snapshot) {
    header(
        out,
        "queue_pending",
        "gauge",
        "Jobs waiting, by proof kind.",
    );
    for q in &s.queues {
        let _ = writeln!(
            out,
            "cuzk_queue_pending{{kind=\"{}\"}} {}",
            q.kind, q.pending
        );
    }
    header(
        out,
        "queue_in_progress",
        "gauge",
        "Jobs running, by proof kind.",
    );
    for q in &s.queues {
        let _ = writeln!(
            out,
            "cuzk_queue_in_progress{{kind=\"{}\"}} {}",
            q.kind, q.in_progress
        );
    }
}

/// Each device's busy time, memory, leases, quarantine and partition outcomes.
fn render_device_gauges(out: &mut String, s: &Snapshot) {
    header(
        out,
        "device_busy_seconds_total",
        "counter",
        "Time each device spent running work.",
    );
    for d in &s.devices {
        let _ = writeln!(
            out,
            "cuzk_device_busy_seconds_total{{{}}} {}",
            device_labels(d),
            d.busy.as_secs_f64()
        );
    }
    header(
        out,
        "device_vram_total_bytes",
        "gauge",
        "Device memory, bytes.",
    );
    for d in &s.devices {
        let _ = writeln!(
            out,
            "cuzk_device_vram_total_bytes{{{}}} {}",
            device_labels(d),
            d.vram_total
        );
    }
    header(
        out,
        "device_vram_leased_bytes",
        "gauge",
        "Device memory reserved by active leases, bytes.",
    );
    for d in &s.devices {
        let _ = writeln!(
            out,
            "cuzk_device_vram_leased_bytes{{{}}} {}",
            device_labels(d),
            d.vram_leased
        );
    }
    header(
        out,
        "device_quarantined",
        "gauge",
        "1 when a device receives no work after repeated failures.",
    );
    for d in &s.devices {
        let _ = writeln!(
            out,
            "cuzk_device_quarantined{{{}}} {}",
            device_labels(d),
            u8::from(d.quarantined)
        );
    }
}

/// Loaded parameter sets and their users.
fn render_srs_gauges(out: &mut String, s: &Snapshot) {
    header(
        out,
        "srs_loaded_bytes",
        "gauge",
        "Loaded parameter sets, bytes, by circuit.",
    );
    for r in &s.srs {
        let _ = writeln!(
            out,
            "cuzk_srs_loaded_bytes{{circuit=\"{}\"}} {}",
            srs_name(r),
            r.size_bytes
        );
    }
    header(
        out,
        "srs_users",
        "gauge",
        "Running jobs using each loaded parameter set.",
    );
    for r in &s.srs {
        let _ = writeln!(
            out,
            "cuzk_srs_users{{circuit=\"{}\"}} {}",
            srs_name(r),
            r.users
        );
    }
}

/// How each device's last partition reached its parameters, what it streamed, its peak
/// memory, and its partition attempts.
fn render_device_memory_gauges(out: &mut String, s: &Snapshot) {
    header(
        out,
        "device_parameters_streamed",
        "gauge",
        "1 when a device's last partition streamed its parameters from host memory, 0 when they were resident.",
    );
    for d in &s.devices {
        if let Some(m) = d.memory {
            let _ = writeln!(
                out,
                "cuzk_device_parameters_streamed{{{}}} {}",
                device_labels(d),
                u8::from(m.residency == "streamed")
            );
        }
    }
    header(
        out,
        "device_streamed_bytes_total",
        "counter",
        "Bytes of parameters streamed from host memory to each device.",
    );
    for d in &s.devices {
        if let Some(m) = d.memory {
            let _ = writeln!(
                out,
                "cuzk_device_streamed_bytes_total{{{}}} {}",
                device_labels(d),
                m.bytes_streamed
            );
        }
    }
    header(
        out,
        "device_peak_memory_bytes",
        "gauge",
        "The most device memory the prover's buffers held at once since start, as the driver measured it.",
    );
    for d in &s.devices {
        if let Some(peak) = d.memory.and_then(|m| m.peak_bytes) {
            let _ = writeln!(
                out,
                "cuzk_device_peak_memory_bytes{{{}}} {peak}",
                device_labels(d)
            );
        }
    }
    header(
        out,
        "device_partitions_total",
        "counter",
        "Partition attempts on each device, by outcome (a failed one is retried).",
    );
    for d in &s.devices {
        for (outcome, v) in [("ok", d.partitions_ok), ("failed", d.partitions_failed)] {
            let _ = writeln!(
                out,
                "cuzk_device_partitions_total{{{},outcome=\"{outcome}\"}} {v}",
                device_labels(d)
            );
        }
    }
}

/// Host memory, uptime and shutdown.
fn render_host_gauges(out: &mut String, s: &Snapshot) {
    header(
        out,
        "host_memory_used_bytes",
        "gauge",
        "Host memory held by synthesised partitions.",
    );
    let _ = writeln!(out, "cuzk_host_memory_used_bytes {}", s.host_memory_used);
    header(
        out,
        "host_memory_budget_bytes",
        "gauge",
        "The budget synthesis keeps host memory within.",
    );
    let _ = writeln!(
        out,
        "cuzk_host_memory_budget_bytes {}",
        s.host_memory_budget
    );
    header(
        out,
        "uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
    );
    let _ = writeln!(out, "cuzk_uptime_seconds {}", s.uptime.as_secs());
    header(
        out,
        "shutting_down",
        "gauge",
        "1 once the daemon stopped accepting work.",
    );
    let _ = writeln!(out, "cuzk_shutting_down {}", u8::from(s.shutting_down));
}

#[cfg(test)]
mod tests {
    use super::super::engine::{PhaseTimes, QueueView};
    use super::*;

    /// Every sample line is `name{labels} value` with a parseable value, and every sample's
    /// family has a TYPE line before it.
    fn check_exposition(text: &str) {
        let mut typed = std::collections::HashSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                typed.insert(rest.split(' ').next().unwrap().to_string());
                continue;
            }
            if line.starts_with("# HELP ") {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').expect(line);
            assert!(value.parse::<f64>().is_ok(), "{line}");
            let name = series.split('{').next().unwrap();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s).filter(|f| typed.contains(*f)))
                .unwrap_or(name);
            assert!(typed.contains(family), "no TYPE for {line}");
            if series.contains('{') {
                assert!(series.ends_with('}'), "{line}");
            }
        }
    }

    #[test]
    fn exposition_is_well_formed_and_counts() {
        let m = Metrics::default();
        m.job_submitted(ProofKind::WindowPost);
        m.job_done(&JobReport {
            job: 1,
            kind: ProofKind::WindowPost,
            ending: Ending::Completed,
            message: None,
            timings: PhaseTimes {
                gpu_compute: Duration::from_millis(700),
                total: Duration::from_secs(2),
                ..PhaseTimes::default()
            },
        });
        m.job_done(&JobReport {
            job: 2,
            kind: ProofKind::PorepC2,
            ending: Ending::Failed(FailureCause::InvalidInput),
            message: Some("partition 0: constraint 7".into()),
            timings: PhaseTimes::default(),
        });
        let recent = m.recent_failures();
        assert_eq!(recent.len(), 1);
        assert_eq!((recent[0].job, recent[0].kind), (2, ProofKind::PorepC2));
        m.rpc_done("Prove", tonic::Code::Ok);
        m.request_rejected("invalid_argument");
        let snap = Snapshot {
            queues: vec![QueueView {
                kind: ProofKind::WinningPost,
                pending: 3,
                in_progress: 1,
                pending_partitions: 3,
                in_progress_partitions: 1,
            }],
            devices: vec![super::super::engine::DeviceView {
                name: "a \"quoted\" name".into(),
                busy: Duration::from_millis(1500),
                ..Default::default()
            }],
            ..Snapshot::default()
        };
        let text = m.render(&snap);
        check_exposition(&text);
        for want in [
            "cuzk_jobs_completed_total{kind=\"window-post\"} 1",
            "cuzk_jobs_failed_total{kind=\"porep-c2\",cause=\"invalid-input\"} 1",
            "cuzk_job_duration_seconds_bucket{kind=\"window-post\",le=\"1\"} 0",
            "cuzk_job_duration_seconds_bucket{kind=\"window-post\",le=\"2.5\"} 1",
            "cuzk_phase_duration_seconds_sum{kind=\"window-post\",phase=\"gpu_compute\"} 0.7",
            "cuzk_queue_pending{kind=\"winning-post\"} 3",
            "cuzk_device_busy_seconds_total{device=\"cpu\",name=\"a \\\"quoted\\\" name\"} 1.5",
            "cuzk_rpc_requests_total{method=\"Prove\",code=\"Ok\"} 1",
            "cuzk_requests_rejected_total{reason=\"invalid_argument\"} 1",
        ] {
            assert!(text.contains(want), "missing {want}\n{text}");
        }
    }

    /// The metric names an expression uses (`cuzk_` followed by lowercase letters and `_`).
    fn names_in(expr: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = expr;
        while let Some(at) = rest.find("cuzk_") {
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(tail.len());
            out.push(tail[..end].to_string());
            rest = &tail[end..];
        }
        out
    }

    /// Every query of the shipped Grafana dashboard and Prometheus alert rules names a
    /// metric family the daemon exports (a histogram's `_bucket`, `_sum`, `_count` too).
    #[test]
    fn dashboard_and_alert_queries_name_exported_metrics() {
        let m = Metrics::default();
        let snap = Snapshot {
            devices: vec![super::super::engine::DeviceView::default()],
            srs: vec![super::super::engine::SrsView {
                proof: None,
                identifier: "x".into(),
                size_bytes: 1,
                users: 0,
            }],
            ..Snapshot::default()
        };
        let text = m.render(&snap);
        let families: std::collections::BTreeSet<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        let exported = |name: &str| {
            families.contains(name)
                || ["_bucket", "_sum", "_count"].iter().any(|suffix| {
                    name.strip_suffix(suffix)
                        .is_some_and(|f| families.contains(f))
                })
        };
        let dashboard: serde_json::Value =
            serde_json::from_str(include_str!("../../docs/grafana/cuzk.json"))
                .expect("the dashboard is JSON");
        let panels = dashboard["panels"].as_array().expect("panels");
        let mut exprs: Vec<String> = panels
            .iter()
            .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t["expr"].as_str().map(String::from))
            .collect();
        assert!(exprs.len() >= 12, "{exprs:?}");
        let rules = include_str!("../../docs/prometheus/cuzk-alerts.yml");
        let alert_exprs: Vec<String> = rules
            .lines()
            .filter_map(|l| l.trim().strip_prefix("expr:"))
            .map(|e| e.trim().to_string())
            .collect();
        assert_eq!(alert_exprs.len(), 4);
        exprs.extend(alert_exprs);
        for e in &exprs {
            let names = names_in(e);
            assert!(!names.is_empty(), "a query with no cuzk metric: {e}");
            for n in names {
                assert!(exported(&n), "{n} (in `{e}`) is not exported");
            }
        }
    }
}
