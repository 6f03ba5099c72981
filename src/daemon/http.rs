//! The HTTP side door: `GET /metrics` (the same Prometheus text as `GetMetrics`) and
//! `GET /healthz` (200 `ok` while serving, 503 once shutting down).

use std::future::Future;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use super::engine::DaemonEngine;
use super::error::{DaemonError, Result};
use super::metrics::Metrics;

#[derive(Clone)]
struct Http {
    engine: DaemonEngine,
    metrics: Arc<Metrics>,
}

async fn metrics_text(State(h): State<Http>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        h.metrics.render(&h.engine.status().await),
    )
}

async fn healthz(State(h): State<Http>) -> impl IntoResponse {
    if h.engine.status().await.shutting_down {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
    } else {
        (StatusCode::OK, "ok\n")
    }
}

/// Binds `addr` and returns its bound address and the server future, which ends when
/// `stop` does.
pub async fn serve(
    addr: &str,
    engine: DaemonEngine,
    metrics: Arc<Metrics>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(std::net::SocketAddr, impl Future<Output = ()>)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| DaemonError::Listen {
            addr: format!("http://{addr}"),
            reason: e.to_string(),
        })?;
    let bound = listener.local_addr().map_err(|e| DaemonError::Listen {
        addr: addr.into(),
        reason: e.to_string(),
    })?;
    let app = Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(healthz))
        .with_state(Http { engine, metrics });
    let fut = async move {
        if let Err(e) = axum::serve(listener, app)
            .with_graceful_shutdown(stop)
            .await
        {
            tracing::error!(error = %e, "HTTP metrics server failed");
        }
    };
    Ok((bound, fut))
}
