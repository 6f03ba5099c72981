//! The daemon: cuzk's engine behind Curio's `cuzk.v1.ProvingEngine` gRPC service, so an
//! operator swaps proving engines by changing an address.
//!
//! | module | holds |
//! |---|---|
//! | [`config`] | the TOML configuration, environment overrides, the example file |
//! | [`listen`] | listening addresses; the owner-only unix socket |
//! | [`proto`] | the generated `cuzk.v1` types, client and server |
//! | [`codec`] | prost's codec behind a scan that bounds decoding |
//! | [`validate`] | wire request -> engine request, every field checked |
//! | [`engine`] | the seam between the service and the runtime that proves |
//! | [`service`] | the eight gRPC calls |
//! | [`metrics`] | Prometheus counters, histograms and gauges |
//! | [`http`] | `/metrics` and `/healthz` over HTTP |
//! | [`shutdown`] | signals: graceful first, immediate second |
//! | [`logging`] | text or JSON log lines |
//! | [`client`] | connecting, and the `cuzk client` subcommands |
//! | [`error`] | the daemon's error type |

pub mod client;
pub mod codec;
pub mod config;
pub mod curio_config;
pub mod engine;
pub mod error;
pub mod http;
pub mod listen;
pub mod logging;
pub mod metrics;
pub mod proto;
pub mod service;
pub mod shutdown;
pub mod status_page;
pub mod validate;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};

pub use client::{connect, Client, ClientArgs};
pub use config::DaemonConfig;
pub use error::{DaemonError, Result};

use engine::DaemonEngine;
use listen::Listener;
use metrics::Metrics;

/// `cuzk daemon`: serve `cuzk.v1.ProvingEngine`.
#[derive(Args, Debug, Default)]
pub struct DaemonArgs {
    /// Configuration file (TOML; `cuzk config example` prints one). Default: built-in
    /// defaults, then environment overrides.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// gRPC address, overriding the configuration (unix:///path or tcp://host:port).
    #[arg(long)]
    pub listen: Option<String>,
    /// HTTP address for /metrics and /healthz, overriding the configuration.
    #[arg(long)]
    pub metrics_listen: Option<String>,
    /// Log filter (`info`, `debug`, or `RUST_LOG` syntax), overriding the configuration's
    /// `daemon.log_filter`; `RUST_LOG` still wins.
    #[arg(long)]
    pub log_level: Option<String>,
    /// OTLP/gRPC endpoint to export spans to (`http://host:4317`), overriding the
    /// configuration's `telemetry.otlp_endpoint`.
    #[arg(long)]
    pub otlp_endpoint: Option<String>,
}

/// `cuzk config`: configuration helpers.
#[derive(Subcommand, Debug)]
pub enum ConfigCmd {
    /// Print a commented default configuration file.
    Example,
    /// Check a configuration file (with environment overrides) and print what it resolves to.
    Check {
        /// The file.
        file: PathBuf,
    },
}

/// Runs `cuzk config ...`.
pub fn run_config(cmd: ConfigCmd) -> Result<()> {
    match cmd {
        ConfigCmd::Example => {
            print!("{}", config::EXAMPLE);
            Ok(())
        }
        ConfigCmd::Check { file } => {
            let c = DaemonConfig::load(Some(&file), |k| std::env::var(k).ok())?;
            for note in &c.notes {
                println!("note: {note}");
            }
            println!("{c:#?}");
            Ok(())
        }
    }
}

/// The CLI's global directory flags (`--params-dir`, `--pce-dir`, `--kernel-cache`): where
/// given, they override the configuration file and its environment variables.
#[derive(Clone, Debug, Default)]
pub struct DirFlags {
    /// Parameter directory.
    pub params: Option<PathBuf>,
    /// Recorded-circuit (PCE) cache.
    pub pce: Option<PathBuf>,
    /// Compiled GPU kernels' cache.
    pub kernel_cache: Option<PathBuf>,
}

/// Loads the configuration for `cuzk daemon`: file, environment, then flags (`dirs` are
/// the CLI's global directory flags).
pub fn load_config(args: &DaemonArgs, dirs: DirFlags) -> Result<DaemonConfig> {
    let mut c = DaemonConfig::load(args.config.as_deref(), |k| std::env::var(k).ok())?;
    if let Some(l) = &args.listen {
        c.daemon.listen = l.parse()?;
    }
    if let Some(m) = &args.metrics_listen {
        c.daemon.metrics_listen = Some(m.clone()).filter(|m| !m.is_empty());
    }
    if let Some(l) = &args.log_level {
        c.daemon.log_filter = l.clone();
    }
    if let Some(d) = dirs.params {
        c.params.dir = Some(d);
    }
    if let Some(d) = dirs.pce {
        c.params.pce_dir = Some(d);
    }
    if let Some(d) = dirs.kernel_cache {
        c.devices.kernel_cache = Some(d);
    }
    if let Some(e) = &args.otlp_endpoint {
        c.telemetry.otlp_endpoint = Some(e.clone());
    }
    Ok(c)
}

/// Runs `cuzk daemon` until a signal stops it. Installs logging.
pub fn run_daemon(args: DaemonArgs, dirs: DirFlags) -> Result<()> {
    let config = load_config(&args, dirs)?;
    let telemetry = logging::init(&config.daemon, &config.telemetry)?;
    for note in &config.notes {
        tracing::warn!(%note, "configuration");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("cuzk-rpc")
        .build()
        .map_err(|e| DaemonError::Engine(format!("cannot start the async runtime: {e}")))?;
    let stats = telemetry.as_ref().map(|t| t.stats());
    let served = rt.block_on(serve(config, stats));
    if let Some(t) = telemetry {
        t.shutdown(); // sends the spans still queued
    }
    served
}

/// Starts the engine from `config`.
fn start_engine(config: &DaemonConfig, metrics: &Arc<Metrics>) -> Result<DaemonEngine> {
    let m = metrics.clone();
    DaemonEngine::start(engine::engine_config(
        config,
        Arc::new(move |r| m.job_done(r)),
    )?)
}

/// Serves until the first signal, then shuts down gracefully.
pub async fn serve(
    config: DaemonConfig,
    telemetry: Option<Arc<crate::telemetry::ExportStats>>,
) -> Result<()> {
    let stop = shutdown::on_signals()?;
    let config = Arc::new(config);
    codec::set_max_repeated(config.limits.max_vanilla_proofs.saturating_add(1));
    // Bind first: a taken address fails before any parameter is loaded.
    let listener = listen::bind(&config.daemon.listen).await?;
    let metrics = Arc::new(Metrics::default());
    if let Some(stats) = telemetry {
        metrics.set_telemetry(stats);
    }
    let engine = start_engine(&config, &metrics)?;
    for c in &config.params.preload {
        let (kind, size) = config::parse_circuit_id(c).map_err(|e| DaemonError::Config {
            source_name: "params.preload".into(),
            reason: e,
        })?;
        let proof = crate::RegisteredProof::latest(kind, size);
        let e = engine.clone();
        let r = tokio::task::spawn_blocking(move || e.preload(proof))
            .await
            .map_err(|e| DaemonError::Engine(e.to_string()))?;
        match r {
            Ok((_, took, bytes)) => {
                tracing::info!(circuit = %c, bytes, ms = took.as_millis() as u64, "parameters preloaded")
            }
            Err(e) => return Err(DaemonError::Engine(format!("preloading {c}: {e}"))),
        }
    }
    // The HTTP side stays up while work drains (healthz answers 503), until gRPC is done.
    let (served_tx, served_rx) = tokio::sync::watch::channel(false);
    let http = match &config.daemon.metrics_listen {
        Some(addr) => {
            let (bound, fut) = http::serve(
                addr,
                engine.clone(),
                metrics.clone(),
                config.daemon.status_page,
                shutdown::stopped(served_rx),
            )
            .await?;
            tracing::info!(addr = %bound, status_page = ?config.daemon.status_page, "serving /metrics, /healthz and /status");
            println!("metrics on http://{bound}");
            Some(tokio::spawn(fut))
        }
        None => None,
    };
    let service = service::ProvingService::new(engine.clone(), metrics, config.clone());
    let max = config.limits.max_message_bytes.0 as usize;
    let svc = proto::proving_engine_server::ProvingEngineServer::new(service)
        .max_decoding_message_size(max)
        .max_encoding_message_size(max);
    let addr = listener.local_addr();
    tracing::info!(%addr, "serving cuzk.v1.ProvingEngine");
    // One stable line on stdout, for scripts and tests (a TCP port 0 shows the port chosen).
    println!("listening on {addr}");
    let grace = Duration::from_secs(config.daemon.shutdown_grace_secs);
    // On the first signal the engine stops accepting work, finishes or cancels what it has
    // within the grace time and answers every waiter; the server then stops taking calls
    // and ends once the answered calls are sent.
    let drained = {
        let engine = engine.clone();
        let stop = stop.clone();
        async move {
            shutdown::stopped(stop).await;
            if let Err(e) = tokio::task::spawn_blocking(move || engine.shutdown(grace)).await {
                tracing::error!(error = %e, "engine shutdown task failed");
            }
            tracing::info!("work drained; closing the listener");
        }
    };
    let router = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .add_service(svc);
    let served = match listener {
        Listener::Unix(l, socket_file) => {
            let r = router
                .serve_with_incoming_shutdown(UnixListenerStream::new(l), drained)
                .await;
            drop(socket_file);
            r
        }
        Listener::Tcp(l) => {
            router
                .serve_with_incoming_shutdown(TcpListenerStream::new(l), drained)
                .await
        }
    };
    let _ = served_tx.send(true);
    served.map_err(|e| DaemonError::Engine(format!("gRPC server: {e}")))?;
    if let Some(h) = http {
        let _ = h.await;
    }
    tracing::info!("stopped");
    Ok(())
}
