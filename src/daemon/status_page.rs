//! The live status page (`GET /status` on the daemon's HTTP port): devices, queues, running
//! jobs with their progress and recent failures, as plain server-rendered HTML that reloads
//! itself every few seconds. Read-only; answered to loopback clients only unless
//! `daemon.status_page = "all"`.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime};

use super::engine::Snapshot;
use super::metrics::FailedJob;

/// Seconds between the page's reloads.
pub const REFRESH_SECS: u32 = 5;

/// How far back the busy share looks.
pub const BUSY_WINDOW: Duration = Duration::from_secs(300);

/// Device busy times sampled on each view, to give each device's busy share over the last
/// minutes (since the daemon started until samples span a few seconds).
#[derive(Default)]
pub struct BusyHistory {
    samples: VecDeque<(Instant, Vec<(String, Duration)>)>,
}

impl BusyHistory {
    /// Records `snapshot`'s busy times and returns each device's busy share (0-1) over the
    /// window, keyed as the devices are listed.
    pub fn observe(&mut self, snapshot: &Snapshot, now: Instant) -> Vec<f64> {
        let current: Vec<(String, Duration)> = snapshot
            .devices
            .iter()
            .map(|d| (device_key(d), d.busy))
            .collect();
        while self
            .samples
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > BUSY_WINDOW)
        {
            self.samples.pop_front();
        }
        let oldest = self
            .samples
            .front()
            .filter(|(t, _)| now.duration_since(*t) >= Duration::from_secs(2))
            .cloned();
        self.samples.push_back((now, current.clone()));
        current
            .iter()
            .map(|(key, busy)| {
                let since = oldest.as_ref().and_then(|(t, old)| {
                    let before = old.iter().find(|(k, _)| k == key)?.1;
                    Some((now.duration_since(*t), busy.saturating_sub(before)))
                });
                let (span, worked) = since.unwrap_or((snapshot.uptime, *busy));
                if span.is_zero() {
                    0.0
                } else {
                    (worked.as_secs_f64() / span.as_secs_f64()).clamp(0.0, 1.0)
                }
            })
            .collect()
    }
}

fn device_key(d: &super::engine::DeviceView) -> String {
    if d.uuid.is_empty() {
        format!("{}#{}", d.name, d.ordinal)
    } else {
        d.uuid.clone()
    }
}

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn ago(at: SystemTime) -> String {
    let s = SystemTime::now()
        .duration_since(at)
        .unwrap_or_default()
        .as_secs();
    match s {
        0..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        _ => format!("{} h ago", s / 3600),
    }
}

/// The page for `snapshot`, with each device's busy share (as [`BusyHistory::observe`]
/// returns them), the recent failures (newest first) and a function naming a job.
pub fn render(
    snapshot: &Snapshot,
    busy_share: &[f64],
    failures: &[FailedJob],
    job_name: &dyn Fn(u64) -> String,
) -> String {
    let mut h = String::with_capacity(16 << 10);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_SECS}\">\
         <title>cuzk status</title><style>{STYLE}</style></head><body>\n"
    );
    let state = if snapshot.shutting_down {
        "<span class=\"bad\">shutting down</span>"
    } else {
        "<span class=\"ok\">serving</span>"
    };
    let _ = writeln!(
        h,
        "<h1>cuzk</h1><p class=\"summary\">{state} &middot; up {} s &middot; {} completed, {} failed, {} cancelled &middot; host memory {} of {} held by partitions</p>",
        snapshot.uptime.as_secs(),
        snapshot.completed,
        snapshot.failed,
        snapshot.cancelled,
        gib(snapshot.host_memory_used),
        gib(snapshot.host_memory_budget),
    );

    write_devices(&mut h, snapshot, busy_share);
    write_queues(&mut h, snapshot);
    write_running(&mut h, snapshot);
    write_failures(&mut h, failures, job_name);
    let _ = writeln!(
        h,
        "<p class=\"foot\">Reloads every {REFRESH_SECS} s. Metrics: <a href=\"/metrics\">/metrics</a>.</p></body></html>"
    );
    h
}

/// The devices table: each device's busy share, running partition, memory and state.
fn write_devices(h: &mut String, snapshot: &Snapshot, busy_share: &[f64]) {
    h.push_str("<h2>Devices</h2>\n<table id=\"devices\"><tr><th>#</th><th>device</th><th>PCI</th><th>UUID</th><th>busy (last minutes)</th><th>running</th><th>VRAM leased / total</th><th>state</th></tr>\n");
    for (i, d) in snapshot.devices.iter().enumerate() {
        let share = busy_share.get(i).copied().unwrap_or(0.0);
        let running = d.current.as_ref().map_or_else(
            || "idle".to_string(),
            |(job, kind)| format!("{} {}", esc(job), kind),
        );
        let vram = if d.vram_total == 0 {
            "host".to_string()
        } else {
            let params = d.memory.map_or(String::new(), |m| {
                format!(
                    " (parameters {}, peak {})",
                    m.residency,
                    m.peak_bytes.map_or("?".to_string(), gib)
                )
            });
            format!("{} / {}{params}", gib(d.vram_leased), gib(d.vram_total))
        };
        let state = if d.quarantined {
            "<span class=\"bad\">quarantined</span>"
        } else {
            "<span class=\"ok\">ok</span>"
        };
        let _ = writeln!(
            h,
            "<tr class=\"device\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><meter min=\"0\" max=\"1\" value=\"{share:.3}\"></meter> {:.0}%</td><td>{running}</td><td>{vram}</td><td>{state}</td></tr>",
            d.ordinal,
            esc(&d.name),
            esc(&d.pci),
            esc(&d.uuid),
            share * 100.0,
        );
    }
    h.push_str("</table>\n");
}

/// The queues table: jobs and partitions waiting and on a device, by kind.
fn write_queues(h: &mut String, snapshot: &Snapshot) {
    h.push_str("<h2>Queues</h2>\n<table id=\"queues\"><tr><th>kind</th><th>jobs waiting</th><th>jobs on a device</th><th>partitions waiting</th><th>partitions on a device</th></tr>\n");
    for q in &snapshot.queues {
        let _ = writeln!(
            h,
            "<tr class=\"queue\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            q.kind, q.pending, q.in_progress, q.pending_partitions, q.in_progress_partitions
        );
    }
    h.push_str("</table>\n");
}

/// The running jobs and their progress.
fn write_running(h: &mut String, snapshot: &Snapshot) {
    h.push_str("<h2>Running jobs</h2>\n");
    if snapshot.running.is_empty() {
        h.push_str("<p class=\"none\">none</p>\n");
    } else {
        h.push_str("<table id=\"jobs\"><tr><th>job</th><th>request id</th><th>kind</th><th>progress</th></tr>\n");
        for j in &snapshot.running {
            let done = j.proved as f64 / j.partitions.max(1) as f64;
            let _ = writeln!(
                h,
                "<tr class=\"job\"><td>{}</td><td>{}</td><td>{}</td><td><progress max=\"1\" value=\"{done:.3}\"></progress> {} of {} proved, {} synthesised</td></tr>",
                esc(&j.job),
                esc(j.request_id.as_deref().unwrap_or("")),
                j.kind,
                j.proved,
                j.partitions,
                j.synthesized,
            );
        }
        h.push_str("</table>\n");
    }
}

/// The recent failures, newest first.
fn write_failures(h: &mut String, failures: &[FailedJob], job_name: &dyn Fn(u64) -> String) {
    h.push_str("<h2>Recent failures</h2>\n");
    if failures.is_empty() {
        h.push_str("<p class=\"none\">none</p>\n");
    } else {
        h.push_str("<table id=\"failures\"><tr><th>when</th><th>job</th><th>kind</th><th>cause</th><th>what happened</th></tr>\n");
        for f in failures {
            let _ = writeln!(
                h,
                "<tr class=\"failure\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                ago(f.at),
                esc(&job_name(f.job)),
                f.kind,
                esc(f.cause.as_str()),
                esc(&f.message),
            );
        }
        h.push_str("</table>\n");
    }
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin-bottom:1em}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}\
th{background:#f3f3f3}.ok{color:#1a7f37}.bad{color:#c62828;font-weight:bold}.none{color:#777}\
.summary{color:#444}meter,progress{width:8em}";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::engine::{DeviceView, RunningJob};
    use crate::ProofKind;
    use cuzk_actors::FailureCause;

    fn snapshot(busy: Duration, uptime: Duration) -> Snapshot {
        Snapshot {
            devices: vec![DeviceView {
                ordinal: 0,
                name: "NVIDIA <H100>".into(),
                pci: "0000:65:00".into(),
                uuid: "GPU-1234".into(),
                vram_total: 80 << 30,
                vram_leased: 40 << 30,
                current: Some(("b-7".into(), ProofKind::PorepC2)),
                busy,
                ..Default::default()
            }],
            running: vec![RunningJob {
                job: "b-7".into(),
                request_id: Some("porep-1000-3".into()),
                kind: ProofKind::PorepC2,
                partitions: 10,
                synthesized: 4,
                proved: 3,
            }],
            uptime,
            ..Default::default()
        }
    }

    #[test]
    fn the_page_lists_devices_jobs_and_failures_escaped() {
        let failures = vec![FailedJob {
            at: SystemTime::now(),
            job: 3,
            kind: ProofKind::WinningPost,
            cause: FailureCause::InvalidInput,
            message: "constraint 5 <broken>".into(),
        }];
        let page = render(
            &snapshot(Duration::from_secs(5), Duration::from_secs(10)),
            &[0.5],
            &failures,
            &|n| format!("b-{n}"),
        );
        assert!(page.contains("<tr class=\"device\"><td>0</td><td>NVIDIA &lt;H100&gt;</td><td>0000:65:00</td><td>GPU-1234</td>"));
        assert!(page.contains("50%"));
        assert!(page.contains("40.0 GiB / 80.0 GiB"));
        assert!(page.contains("porep-1000-3"));
        assert!(page.contains("3 of 10 proved, 4 synthesised"));
        assert!(page.contains("constraint 5 &lt;broken&gt;"));
        assert!(page.contains("<td>b-3</td>"));
        assert!(!page.contains("<broken>"));
    }

    #[test]
    fn busy_share_covers_the_last_minutes() {
        let mut hist = BusyHistory::default();
        let t0 = Instant::now();
        // first view: since start (5 of 10 s)
        let s = hist.observe(
            &snapshot(Duration::from_secs(5), Duration::from_secs(10)),
            t0,
        );
        assert!((s[0] - 0.5).abs() < 1e-9, "{s:?}");
        // 10 s later the device worked all of them
        let s = hist.observe(
            &snapshot(Duration::from_secs(15), Duration::from_secs(20)),
            t0 + Duration::from_secs(10),
        );
        assert!((s[0] - 1.0).abs() < 1e-9, "{s:?}");
        // then idle: the share falls with the window, whose old samples are dropped
        hist.observe(
            &snapshot(Duration::from_secs(15), Duration::from_secs(210)),
            t0 + Duration::from_secs(200),
        );
        let s = hist.observe(
            &snapshot(Duration::from_secs(15), Duration::from_secs(420)),
            t0 + Duration::from_secs(410),
        );
        assert!(s[0] < 1e-9, "{s:?}");
        assert_eq!(hist.samples.len(), 2, "samples past the window are dropped");
    }
}
