//! The client side: connecting to a daemon over a unix socket or TCP, and the
//! `cuzk client` subcommands an operator drives a running daemon with.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

use super::config::DEFAULT_SOCKET;
use super::error::{DaemonError, Result};
use super::listen::ListenAddr;
use super::proto as pb;
use super::validate;
use crate::ProofRequest;

/// A connected client.
pub type Client = pb::proving_engine_client::ProvingEngineClient<Channel>;

/// Largest message the client sends or accepts (Curio's own limit).
pub const CLIENT_MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Connects to the daemon at `addr` (`unix:///path`, `/path`, `tcp://host:port` or
/// `host:port`).
pub async fn connect(addr: &str) -> Result<Client> {
    let fail = |reason: String| DaemonError::Connect {
        addr: addr.to_string(),
        reason,
    };
    let parsed: ListenAddr = addr.parse().map_err(|e: DaemonError| fail(e.to_string()))?;
    let channel = match parsed {
        ListenAddr::Tcp(hostport) => Endpoint::from_shared(format!("http://{hostport}"))
            .map_err(|e| fail(e.to_string()))?
            .connect()
            .await
            .map_err(|e| fail(error_chain(&e)))?,
        ListenAddr::Unix(path) => {
            // The URI is a placeholder: the connector below ignores it.
            Endpoint::from_static("http://localhost")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(TokioIo::new(stream))
                    }
                }))
                .await
                .map_err(|e| fail(error_chain(&e)))?
        }
    };
    Ok(Client::new(channel)
        .max_decoding_message_size(CLIENT_MAX_MESSAGE_BYTES)
        .max_encoding_message_size(CLIENT_MAX_MESSAGE_BYTES))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// `cuzk client`: drive a running daemon.
#[derive(Args, Debug)]
pub struct ClientArgs {
    /// Daemon address (default: unix:///run/curio/cuzk.sock).
    #[arg(long, global = true, env = "CUZK_ADDRESS")]
    pub addr: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub cmd: ClientCmd,
}

/// The client's subcommands.
#[derive(Subcommand, Debug)]
pub enum ClientCmd {
    /// Send a request file (as `cuzk gen` writes it) and wait for the proof.
    Prove {
        /// Request file (JSON, format cuzk-request/1).
        #[arg(long)]
        input: PathBuf,
        /// Where to write the proof bytes (default: print them as hex).
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// Request id: the same id and request attach to the same job (see docs/curio.md).
        #[arg(long, default_value = "")]
        request_id: String,
        /// low, normal, high or critical (default: the kind's default).
        #[arg(long)]
        priority: Option<String>,
        /// Only submit: print the job id and return.
        #[arg(long)]
        no_wait: bool,
    },
    /// Wait for a submitted job.
    Await {
        /// The job id SubmitProof returned, or the request id it was submitted under.
        job: String,
        /// Give up after this many milliseconds (0: wait until it ends).
        #[arg(long, default_value_t = 0)]
        timeout_ms: u64,
        /// Where to write the proof bytes.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Cancel a pending or running job.
    Cancel {
        /// The job id.
        job: String,
    },
    /// Devices, loaded parameters, queues and totals.
    Status,
    /// The Prometheus metrics text.
    Metrics,
    /// Load a circuit's parameters (e.g. wpost-32g).
    Preload {
        /// Circuit id: porep|wpost|winning|snap - 2k|8m|512m|32g|64g.
        circuit: String,
    },
    /// Drop a circuit's parameters (refused while a job uses them).
    Evict {
        /// Circuit id.
        circuit: String,
    },
}

fn priority_value(name: Option<&str>) -> Result<i32> {
    let Some(n) = name else { return Ok(0) };
    let p = match n.to_ascii_lowercase().as_str() {
        "low" => pb::Priority::Low,
        "normal" => pb::Priority::Normal,
        "high" => pb::Priority::High,
        "critical" => pb::Priority::Critical,
        _ => {
            return Err(DaemonError::Request(crate::Error::InvalidRequest(format!(
                "unknown priority {n:?} (low, normal, high or critical)"
            ))))
        }
    };
    Ok(p as i32)
}

/// Runs a `cuzk client` subcommand; prints its result on stdout.
pub fn run(args: ClientArgs) -> Result<()> {
    let addr = args
        .addr
        .unwrap_or_else(|| format!("unix://{DEFAULT_SOCKET}"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| DaemonError::Engine(format!("cannot start a runtime: {e}")))?;
    rt.block_on(async move {
        let mut c = connect(&addr).await?;
        run_cmd(&mut c, args.cmd).await
    })
}

fn write_proof(r: &pb::AwaitProofResponse, out: Option<&PathBuf>) -> Result<()> {
    use pb::await_proof_response::Status as S;
    let status = S::try_from(r.status).unwrap_or(S::Unknown);
    match status {
        S::Completed => {
            println!(
                "{}: completed: {} partition(s), {} bytes, verified: {} | queue {} ms, params {} ms, synthesis {} ms, prove {} ms, total {} ms",
                r.job_id,
                r.partitions,
                r.proof.len(),
                if r.verified { "yes" } else { "no" },
                r.queue_wait_ms,
                r.srs_load_ms,
                r.synthesis_ms,
                r.gpu_compute_ms,
                r.total_ms
            );
            match out {
                Some(path) => {
                    std::fs::write(path, &r.proof).map_err(|e| DaemonError::io(path, e))?;
                    println!("proof written to {}", path.display());
                }
                None => println!("{}", hex::encode(&r.proof)),
            }
            Ok(())
        }
        S::Timeout => {
            println!("{}: still running ({})", r.job_id, r.error_message);
            Err(DaemonError::Rpc {
                call: "AwaitProof",
                code: "Timeout".into(),
                message: r.error_message.clone(),
            })
        }
        other => Err(DaemonError::Rpc {
            call: "AwaitProof",
            code: format!("{other:?}"),
            message: format!("{}: {} {}", r.job_id, r.error_message, r.failure_cause),
        }),
    }
}

/// `cuzk client prove`: submits the request in `input`, and unless `no_wait` waits for its
/// proof and writes it to `out` (else prints the job id).
async fn prove(
    c: &mut Client,
    input: &Path,
    out: Option<&PathBuf>,
    request_id: &str,
    priority: Option<&str>,
    no_wait: bool,
) -> Result<()> {
    let rpc = DaemonError::rpc;
    let bytes = std::fs::read(input).map_err(|e| DaemonError::io(input, e))?;
    let request = ProofRequest::from_json(&bytes)?;
    let submit = validate::to_wire(&request, request_id, priority_value(priority)?);
    if no_wait {
        let r = c
            .submit_proof(submit)
            .await
            .map_err(|s| rpc("SubmitProof", s))?
            .into_inner();
        println!("{}", r.job_id);
        return Ok(());
    }
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(submit),
        })
        .await
        .map_err(|s| rpc("Prove", s))?
        .into_inner();
    let result = r.result.unwrap_or_default();
    write_proof(&result, out)
}

async fn run_cmd(c: &mut Client, cmd: ClientCmd) -> Result<()> {
    let rpc = DaemonError::rpc;
    match cmd {
        ClientCmd::Prove {
            input,
            out,
            request_id,
            priority,
            no_wait,
        } => {
            prove(
                c,
                &input,
                out.as_ref(),
                &request_id,
                priority.as_deref(),
                no_wait,
            )
            .await
        }
        ClientCmd::Await {
            job,
            timeout_ms,
            out,
        } => {
            let r = c
                .await_proof(pb::AwaitProofRequest {
                    job_id: job,
                    timeout_ms,
                })
                .await
                .map_err(|s| rpc("AwaitProof", s))?
                .into_inner();
            write_proof(&r, out.as_ref())
        }
        ClientCmd::Cancel { job } => {
            let r = c
                .cancel_proof(pb::CancelProofRequest {
                    job_id: job.clone(),
                })
                .await
                .map_err(|s| rpc("CancelProof", s))?
                .into_inner();
            match (r.cancelled, r.was_running) {
                (false, _) => println!("{job}: had already ended; nothing cancelled"),
                (true, true) => {
                    println!("{job}: cancelled while running (its result is discarded)")
                }
                (true, false) => println!("{job}: cancelled before it started"),
            }
            Ok(())
        }
        ClientCmd::Status => {
            let s = c
                .get_status(pb::GetStatusRequest {})
                .await
                .map_err(|s| rpc("GetStatus", s))?
                .into_inner();
            print_status(&s);
            Ok(())
        }
        ClientCmd::Metrics => {
            let m = c
                .get_metrics(pb::GetMetricsRequest {})
                .await
                .map_err(|s| rpc("GetMetrics", s))?
                .into_inner();
            print!("{}", m.prometheus_text);
            Ok(())
        }
        ClientCmd::Preload { circuit } => {
            let r = c
                .preload_srs(pb::PreloadSrsRequest {
                    circuit_id: circuit.clone(),
                })
                .await
                .map_err(|s| rpc("PreloadSRS", s))?
                .into_inner();
            println!(
                "{circuit}: {} ({} bytes, {} ms)",
                if r.already_loaded {
                    "already loaded"
                } else {
                    "loaded"
                },
                r.size_bytes,
                r.load_time_ms
            );
            Ok(())
        }
        ClientCmd::Evict { circuit } => {
            let r = c
                .evict_srs(pb::EvictSrsRequest {
                    circuit_id: circuit.clone(),
                })
                .await
                .map_err(|s| rpc("EvictSRS", s))?
                .into_inner();
            if r.was_loaded {
                println!("{circuit}: evicted, {} bytes freed", r.freed_bytes);
            } else {
                println!("{circuit}: was not loaded");
            }
            Ok(())
        }
    }
}

fn print_status(s: &pb::GetStatusResponse) {
    println!(
        "cuzk {} | up {} s | completed {} | failed {} | cancelled {}{}",
        s.version,
        s.uptime_seconds,
        s.total_proofs_completed,
        s.total_proofs_failed,
        s.total_proofs_cancelled,
        if s.shutting_down {
            " | SHUTTING DOWN"
        } else {
            ""
        }
    );
    println!("devices:");
    for g in &s.gpus {
        let id = if g.pci_id.is_empty() {
            "cpu".to_string()
        } else {
            format!("{} {}", g.pci_id, g.uuid)
        };
        let job = if g.current_job_id.is_empty() {
            "idle".to_string()
        } else {
            format!("running {} ({})", g.current_job_id, g.current_proof_kind)
        };
        println!(
            "  [{}] {} ({id}): vram {}/{} free, {} leased | busy {:.1} s | {job}{}{}",
            g.ordinal,
            g.name,
            g.vram_free_bytes,
            g.vram_total_bytes,
            g.vram_leased_bytes,
            g.busy_ms as f64 / 1000.0,
            if g.parameters.is_empty() {
                String::new()
            } else {
                format!(
                    " | parameters {}, {} bytes streamed, peak {} of {} bytes",
                    g.parameters, g.streamed_bytes, g.peak_memory_bytes, g.memory_budget_bytes
                )
            },
            if g.quarantined { " | QUARANTINED" } else { "" }
        );
    }
    println!("parameters loaded:");
    for r in &s.loaded_srs {
        println!(
            "  {} ({}): {} bytes, {} user(s)",
            r.circuit_id, r.identifier, r.size_bytes, r.ref_count
        );
    }
    println!("queues:");
    for q in &s.queues {
        println!(
            "  {}: {} pending, {} in progress",
            q.proof_kind, q.pending, q.in_progress
        );
    }
}
