//! OpenTelemetry export of the engine's spans over OTLP/gRPC.
//!
//! Every job is a span tree: `job` (kind, sector size, request id) -> `partition` ->
//! `prepare`, `synthesis` (`witness`, `matvec`), `queue_wait`, `gpu` (device PCI id and
//! UUID, VRAM leased) with the backend's phases under it (uploads, NTT/H, each MSM) and
//! `verify`; `aggregate` for non-interactive PoRep. `tracing-opentelemetry` turns those spans
//! into OpenTelemetry spans; this module exports them.
//!
//! Export never slows proving: a finished span is offered to a bounded queue and, when the
//! queue is full, dropped and counted ([`ExportStats::dropped`]); one thread of its own takes
//! batches from the queue and sends them to the collector, each send bounded by a timeout.
//! A collector that is slow or gone costs counted drops, nothing else. Off (no endpoint), no
//! layer is installed and spans cost what they cost without export.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;
use serde::Deserialize;

/// Spans sent to the collector in one request at most.
const BATCH: usize = 512;

/// How long a batch waits to fill before it is sent anyway.
const LINGER: Duration = Duration::from_millis(200);

/// `[telemetry]` of the daemon's configuration: where spans go.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// OTLP/gRPC endpoint of an OpenTelemetry collector (`http://127.0.0.1:4317`); empty or
    /// absent exports nothing.
    #[serde(deserialize_with = "crate::daemon::config::empty_is_none")]
    pub otlp_endpoint: Option<String>,
    /// The exported spans' `service.name`.
    pub service_name: String,
    /// Finished spans waiting for export at most; beyond, new spans are dropped and counted.
    pub queue_spans: usize,
    /// Seconds one batch's export may take; a batch that fails or times out counts as
    /// dropped.
    pub export_timeout_secs: u64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            otlp_endpoint: None,
            service_name: "cuzk".into(),
            queue_spans: 8192,
            export_timeout_secs: 5,
        }
    }
}

impl TelemetryConfig {
    /// The endpoint, if export is on.
    pub fn endpoint(&self) -> Option<&str> {
        self.otlp_endpoint
            .as_deref()
            .filter(|e| !e.trim().is_empty())
    }
}

/// Counts of exported and dropped spans, for the daemon's metrics.
#[derive(Debug, Default)]
pub struct ExportStats {
    /// Spans the collector accepted.
    pub exported: AtomicU64,
    /// Spans dropped: the queue was full, or their batch failed or timed out.
    pub dropped: AtomicU64,
}

/// A running exporter: shut it down (flushing what is queued) before the process exits.
pub struct Telemetry {
    provider: SdkTracerProvider,
    stats: Arc<ExportStats>,
}

impl Telemetry {
    /// Starts the exporter for `cfg`'s endpoint (`None` when export is off) and returns it
    /// with the `tracing` layer that feeds it.
    pub fn start<S>(
        cfg: &TelemetryConfig,
    ) -> Result<Option<(Telemetry, impl tracing_subscriber::Layer<S>)>, String>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let Some(endpoint) = cfg.endpoint() else {
            return Ok(None);
        };
        let stats = Arc::new(ExportStats::default());
        let resource = Resource::builder()
            .with_attributes([KeyValue::new("service.name", cfg.service_name.clone())])
            .build();
        let processor = BoundedProcessor::start(
            endpoint.to_string(),
            Duration::from_secs(cfg.export_timeout_secs.max(1)),
            cfg.queue_spans.max(1),
            resource.clone(),
            stats.clone(),
        )?;
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("cuzk");
        let layer = tracing_opentelemetry::layer().with_tracer(tracer);
        Ok(Some((Telemetry { provider, stats }, layer)))
    }

    /// The export counters.
    pub fn stats(&self) -> Arc<ExportStats> {
        self.stats.clone()
    }

    /// Sends what is queued (within the export timeout) and stops the exporter.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "span export did not shut down cleanly");
        }
    }
}

/// A span processor that never blocks: finished spans go into a bounded queue, an export
/// thread sends them in batches.
#[derive(Debug)]
struct BoundedProcessor {
    queue: Mutex<Option<Sender<SpanData>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    stats: Arc<ExportStats>,
}

impl BoundedProcessor {
    fn start(
        endpoint: String,
        timeout: Duration,
        capacity: usize,
        resource: Resource,
        stats: Arc<ExportStats>,
    ) -> Result<Self, String> {
        let (tx, rx) = crossbeam_channel::bounded(capacity);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("span export: cannot start its runtime: {e}"))?;
        let mut exporter = rt
            .block_on(async {
                opentelemetry_otlp::SpanExporter::builder()
                    .with_tonic()
                    .with_endpoint(endpoint.clone())
                    .with_timeout(timeout)
                    .build()
            })
            .map_err(|e| format!("span export to {endpoint}: {e}"))?;
        exporter.set_resource(&resource);
        let s = stats.clone();
        let worker = std::thread::Builder::new()
            .name("cuzk-otlp".into())
            .spawn(move || export_loop(rt, exporter, rx, timeout, s))
            .map_err(|e| format!("span export: cannot start its thread: {e}"))?;
        Ok(BoundedProcessor {
            queue: Mutex::new(Some(tx)),
            worker: Mutex::new(Some(worker)),
            stats,
        })
    }
}

/// Takes batches from the queue and sends them until the queue is closed and empty.
fn export_loop(
    rt: tokio::runtime::Runtime,
    mut exporter: opentelemetry_otlp::SpanExporter,
    rx: Receiver<SpanData>,
    timeout: Duration,
    stats: Arc<ExportStats>,
) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        let until = Instant::now() + LINGER;
        while batch.len() < BATCH {
            match rx.recv_deadline(until) {
                Ok(s) => batch.push(s),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        let n = batch.len() as u64;
        let sent =
            rt.block_on(async { tokio::time::timeout(timeout, exporter.export(batch)).await });
        match sent {
            Ok(Ok(())) => stats.exported.fetch_add(n, Ordering::Relaxed),
            Ok(Err(_)) | Err(_) => stats.dropped.fetch_add(n, Ordering::Relaxed),
        };
    }
    let _ = exporter.shutdown();
}

impl SpanProcessor for BoundedProcessor {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let Some(tx) = queue.as_ref() else {
            return; // shut down
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = tx.try_send(span) {
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        // closing the queue lets the worker send what is left, then stop
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).take();
        let worker = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(worker) = worker else {
            return Ok(());
        };
        let until = Instant::now() + timeout;
        while !worker.is_finished() {
            if Instant::now() >= until {
                return Err(OTelSdkError::Timeout(timeout));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        worker
            .join()
            .map_err(|_| OTelSdkError::InternalFailure("the export thread panicked".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Off by default and for an empty endpoint: no exporter, no layer.
    #[test]
    fn export_is_off_without_an_endpoint() {
        type Reg = tracing_subscriber::Registry;
        assert!(Telemetry::start::<Reg>(&TelemetryConfig::default())
            .expect("no error")
            .is_none());
        let blank = TelemetryConfig {
            otlp_endpoint: Some("  ".into()),
            ..TelemetryConfig::default()
        };
        assert!(Telemetry::start::<Reg>(&blank).expect("no error").is_none());
    }

    /// With no collector listening, spans are counted as dropped and recording them never
    /// waits for the collector: 20,000 spans end in well under the export timeout.
    #[test]
    fn a_collector_that_is_down_costs_counted_drops_only() {
        use tracing_subscriber::layer::SubscriberExt;
        // a port nothing listens on: bound, then closed
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let cfg = TelemetryConfig {
            otlp_endpoint: Some(format!("http://127.0.0.1:{port}")),
            queue_spans: 100,
            export_timeout_secs: 2,
            ..TelemetryConfig::default()
        };
        let (telemetry, layer) = Telemetry::start(&cfg)
            .expect("starts")
            .expect("an endpoint turns export on");
        let stats = telemetry.stats();
        let subscriber = tracing_subscriber::registry().with(layer);
        let t = Instant::now();
        tracing::subscriber::with_default(subscriber, || {
            for i in 0..20_000u32 {
                let _s = tracing::info_span!("partition", i).entered();
            }
        });
        let took = t.elapsed();
        telemetry.shutdown();
        let (exported, dropped) = (
            stats.exported.load(Ordering::Relaxed),
            stats.dropped.load(Ordering::Relaxed),
        );
        assert_eq!(exported, 0);
        assert_eq!(dropped, 20_000, "every span is counted as dropped");
        assert!(
            took < Duration::from_secs(2),
            "recording spans waited {took:?}"
        );
    }
}
