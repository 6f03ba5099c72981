//! The HTTP side door: `GET /metrics` (the same Prometheus text as `GetMetrics`),
//! `GET /healthz` (200 `ok` while serving, 503 once shutting down) and `GET /status`, the
//! live status page (see [`super::status_page`]; loopback clients only by default).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{ConnectInfo, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

use super::config::StatusPageAccess;
use super::engine::DaemonEngine;
use super::error::{DaemonError, Result};
use super::metrics::Metrics;
use super::status_page::{self, BusyHistory};

#[derive(Clone)]
struct Http {
    engine: DaemonEngine,
    metrics: Arc<Metrics>,
    access: StatusPageAccess,
    busy: Arc<Mutex<BusyHistory>>,
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

/// Whether a client at `peer` may see the status page under `access`.
pub fn may_see_status(access: StatusPageAccess, peer: &SocketAddr) -> bool {
    match access {
        StatusPageAccess::All => true,
        StatusPageAccess::Local => peer.ip().is_loopback(),
        StatusPageAccess::Off => false,
    }
}

async fn status(State(h): State<Http>, ConnectInfo(peer): ConnectInfo<SocketAddr>) -> Response {
    if !may_see_status(h.access, &peer) {
        return (
            StatusCode::FORBIDDEN,
            "the status page is served to loopback clients only (daemon.status_page)\n",
        )
            .into_response();
    }
    let snap = h.engine.status().await;
    let share = h
        .busy
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .observe(&snap, Instant::now());
    let failures = h.metrics.recent_failures();
    let engine = h.engine.clone();
    Html(status_page::render(&snap, &share, &failures, &|n| {
        engine.job_name(n)
    }))
    .into_response()
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
    access: StatusPageAccess,
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
    let mut app = Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(healthz));
    if access != StatusPageAccess::Off {
        app = app
            .route("/status", get(status))
            .route("/", get(|| async { Redirect::temporary("/status") }));
    }
    let app = app
        .with_state(Http {
            engine,
            metrics,
            access,
            busy: Arc::default(),
        })
        .into_make_service_with_connect_info::<SocketAddr>();
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
