//! Log output: human-readable lines, or JSON lines when configured, on stderr.

use std::io::IsTerminal;

use super::config::{LogFormat, ServerSection};

/// Installs the global subscriber. `RUST_LOG` wins over the configured filter.
pub fn init(cfg: &ServerSection) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&cfg.log_filter))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match cfg.log_format {
        LogFormat::Json => builder.json().with_current_span(true).try_init(),
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
    };
}
