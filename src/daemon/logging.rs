//! Log output: human-readable lines, or JSON lines when configured, on stderr; and the
//! spans' export to an OpenTelemetry collector when one is configured.

use std::io::IsTerminal;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use super::config::{LogFormat, ServerSection};
use super::error::{DaemonError, Result};
use crate::telemetry::{Telemetry, TelemetryConfig};

/// Installs the global subscriber: logs, and span export when `telemetry` names an
/// endpoint (the returned exporter must be shut down before exit). `RUST_LOG` wins over the
/// configured filter, for both.
pub fn init(cfg: &ServerSection, telemetry: &TelemetryConfig) -> Result<Option<Telemetry>> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&cfg.log_filter))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = match cfg.log_format {
        LogFormat::Json => fmt.json().with_current_span(true).boxed(),
        LogFormat::Text => fmt.with_ansi(std::io::stderr().is_terminal()).boxed(),
    };
    let exporter = Telemetry::start(telemetry).map_err(|reason| DaemonError::Config {
        source_name: "telemetry.otlp_endpoint".into(),
        reason,
    })?;
    let (telemetry, otel) = match exporter {
        Some((t, layer)) => (Some(t), Some(layer)),
        None => (None, None),
    };
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(otel)
        .try_init();
    Ok(telemetry)
}
