//! Signals: the first SIGTERM or SIGINT starts a graceful shutdown; a second one exits at
//! once (status 130).

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use super::error::{DaemonError, Result};

/// Exit status after a second signal.
pub const FORCED_EXIT: i32 = 130;

/// Installs the handlers and returns a receiver that turns `true` at the first signal.
/// Must run inside a tokio runtime.
pub fn on_signals() -> Result<watch::Receiver<bool>> {
    let io =
        |e: std::io::Error| DaemonError::Engine(format!("cannot install signal handlers: {e}"));
    let mut term = signal(SignalKind::terminate()).map_err(io)?;
    let mut int = signal(SignalKind::interrupt()).map_err(io)?;
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        let mut seen = 0;
        loop {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            seen += 1;
            if seen == 1 {
                tracing::warn!(
                    signal = name,
                    "shutting down: no new work is accepted; send it again to exit at once"
                );
                let _ = tx.send(true);
            } else {
                tracing::error!(signal = name, "second signal: exiting now");
                std::process::exit(FORCED_EXIT);
            }
        }
    });
    Ok(rx)
}

/// Resolves once `rx` turns `true` (or its sender is gone).
pub async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}
