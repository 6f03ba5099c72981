//! The `cuzk.v1.ProvingEngine` gRPC service: each call checks its input, asks the engine,
//! and maps the answer onto the wire. Blocking engine calls run off the async runtime.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Code, Request, Response, Status};

use super::config::{circuit_id, parse_circuit_id, DaemonConfig};
use super::engine::{
    CancelOutcome, DaemonEngine, JobEnd, Snapshot, SubmitError, Submitted, WaitOutcome,
};
use super::metrics::Metrics;
use super::proto as pb;
use super::validate;
use crate::RegisteredProof;
use cuzk_actors::FailureCause;

/// The longest job id accepted, in bytes.
const MAX_JOB_ID_BYTES: usize = 128;

/// The service state shared by every call.
#[derive(Clone)]
pub struct ProvingService {
    engine: DaemonEngine,
    metrics: Arc<Metrics>,
    config: Arc<DaemonConfig>,
}

impl ProvingService {
    /// A service over `engine`.
    pub fn new(engine: DaemonEngine, metrics: Arc<Metrics>, config: Arc<DaemonConfig>) -> Self {
        ProvingService {
            engine,
            metrics,
            config,
        }
    }

    /// Counts the call's outcome and passes it on.
    fn answer<T>(&self, method: &'static str, r: Result<T, Status>) -> Result<Response<T>, Status> {
        let code = r.as_ref().map(|_| Code::Ok).unwrap_or_else(|s| s.code());
        self.metrics.rpc_done(method, code);
        if let Err(s) = &r {
            match s.code() {
                Code::InvalidArgument => self.metrics.request_rejected("invalid_argument"),
                Code::ResourceExhausted => self.metrics.request_rejected("resource_exhausted"),
                Code::Unavailable => self.metrics.request_rejected("unavailable"),
                _ => {}
            }
            tracing::info!(method, code = ?s.code(), message = s.message(), "call refused");
        }
        r.map(Response::new)
    }

    async fn submit(&self, req: &pb::SubmitProofRequest) -> Result<Submitted, Status> {
        let checked = validate::check(req, &self.config).map_err(Status::invalid_argument)?;
        let kind = checked.request.proof.kind;
        let engine = self.engine.clone();
        let submitted = tokio::task::spawn_blocking(move || {
            engine.submit(checked.request, checked.priority, checked.request_id)
        })
        .await
        .map_err(|e| Status::internal(format!("submission task failed: {e}")))?
        .map_err(|e| match e {
            SubmitError::Invalid(m) => Status::invalid_argument(m),
            SubmitError::Backpressure(m) => Status::resource_exhausted(m),
            SubmitError::ShuttingDown => Status::unavailable(e.to_string()),
            SubmitError::Internal(m) => Status::internal(m),
        })?;
        if !submitted.existing {
            self.metrics.job_submitted(kind);
        }
        tracing::info!(job = %submitted.job, %kind, existing = submitted.existing, request_id = %req.request_id, "submitted");
        Ok(submitted)
    }

    async fn wait(
        &self,
        job: &str,
        timeout: Option<Duration>,
    ) -> Result<pb::AwaitProofResponse, Status> {
        match self.engine.wait(job, timeout).await {
            WaitOutcome::Unknown => Err(Status::not_found(format!(
                "no job {job:?} (never submitted to this daemon since it started, or its result is no longer kept: limits.retained_results)"
            ))),
            WaitOutcome::Stopped => Err(Status::unavailable("the daemon has stopped")),
            WaitOutcome::Timeout => Ok(pb::AwaitProofResponse {
                job_id: job.to_string(),
                status: pb::await_proof_response::Status::Timeout as i32,
                error_message: format!(
                    "the job did not finish within {} ms; it keeps running",
                    timeout.unwrap_or_default().as_millis()
                ),
                ..Default::default()
            }),
            WaitOutcome::Ended(end) => Ok(end_to_wire(job, &end)),
        }
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

/// The wire answer for a job that ended.
fn end_to_wire(job: &str, end: &JobEnd) -> pb::AwaitProofResponse {
    use pb::await_proof_response::Status as S;
    let mut r = pb::AwaitProofResponse {
        job_id: job.to_string(),
        ..Default::default()
    };
    let timings = match end {
        JobEnd::Completed(done) => {
            r.status = S::Completed as i32;
            r.proof = done.proof.clone();
            r.partitions = done.partitions as u32;
            r.verified = done.verified;
            r.devices = done.devices.clone();
            Some(&done.timings)
        }
        JobEnd::Failed { message, cause } => {
            r.status = S::Failed as i32;
            r.error_message = message.clone();
            r.failure_cause = cause.as_str().to_string();
            None
        }
        JobEnd::Cancelled { message } => {
            r.status = S::Cancelled as i32;
            r.error_message = message.clone();
            None
        }
    };
    if let Some(t) = timings {
        r.queue_wait_ms = ms(t.queue_wait);
        r.srs_load_ms = ms(t.srs_load);
        r.synthesis_ms = ms(t.synthesis);
        r.gpu_compute_ms = ms(t.gpu_compute);
        r.total_ms = ms(t.total);
        r.phases = t
            .phases()
            .iter()
            .map(|(phase, d)| pb::PhaseTiming {
                phase: phase.to_string(),
                ms: ms(*d),
            })
            .collect();
    }
    r
}

fn check_job_id(job: &str) -> Result<(), Status> {
    if job.is_empty() {
        return Err(Status::invalid_argument("job_id is required"));
    }
    if job.len() > MAX_JOB_ID_BYTES {
        return Err(Status::invalid_argument(format!(
            "job_id is {} bytes; job ids are at most {MAX_JOB_ID_BYTES}",
            job.len()
        )));
    }
    Ok(())
}

fn circuit(id: &str) -> Result<RegisteredProof, Status> {
    if id.len() > 64 {
        return Err(Status::invalid_argument("circuit_id is too long"));
    }
    let (kind, size) = parse_circuit_id(id).map_err(Status::invalid_argument)?;
    Ok(RegisteredProof::latest(kind, size))
}

/// The wire status of a snapshot.
pub fn status_to_wire(s: &Snapshot) -> pb::GetStatusResponse {
    pb::GetStatusResponse {
        gpus: s
            .devices
            .iter()
            .map(|d| pb::GpuStatus {
                ordinal: d.ordinal,
                name: d.name.clone(),
                vram_total_bytes: d.vram_total,
                vram_free_bytes: d.vram_free,
                current_job_id: d.current.as_ref().map(|c| c.0.clone()).unwrap_or_default(),
                current_proof_kind: d
                    .current
                    .as_ref()
                    .map(|c| c.1.to_string())
                    .unwrap_or_default(),
                pci_id: d.pci.clone(),
                uuid: d.uuid.clone(),
                vram_leased_bytes: d.vram_leased,
                quarantined: d.quarantined,
                busy_ms: ms(d.busy),
                parameters: d
                    .memory
                    .map(|m| m.residency.to_string())
                    .unwrap_or_default(),
                streamed_bytes: d.memory.map_or(0, |m| m.bytes_streamed),
                peak_memory_bytes: d.memory.and_then(|m| m.peak_bytes).unwrap_or(0),
                memory_budget_bytes: d.memory.map_or(0, |m| m.usable_bytes),
            })
            .collect(),
        loaded_srs: s
            .srs
            .iter()
            .map(|r| pb::SrsStatus {
                circuit_id: r.proof.map_or_else(
                    || r.identifier.clone(),
                    |p| circuit_id(p.kind, p.sector_size),
                ),
                tier: pb::srs_status::Tier::Hot as i32,
                size_bytes: r.size_bytes,
                ref_count: r.users,
                identifier: r.identifier.clone(),
            })
            .collect(),
        queues: s
            .queues
            .iter()
            .map(|q| pb::QueueStatus {
                proof_kind: q.kind.to_string(),
                pending: q.pending,
                in_progress: q.in_progress,
                pending_partitions: q.pending_partitions,
                in_progress_partitions: q.in_progress_partitions,
            })
            .collect(),
        total_proofs_completed: s.completed,
        total_proofs_failed: s.failed,
        uptime_seconds: s.uptime.as_secs(),
        pinned_memory_bytes: s.srs.iter().map(|r| r.size_bytes).sum::<u64>() + s.host_memory_used,
        pinned_memory_limit_bytes: s.host_memory_budget,
        total_proofs_cancelled: s.cancelled,
        shutting_down: s.shutting_down,
        version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

#[tonic::async_trait]
impl pb::proving_engine_server::ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let req = request.into_inner();
        let r = self.submit(&req).await.map(|s| pb::SubmitProofResponse {
            job_id: s.job,
            queue_position: s.queue_position.min(u32::MAX as usize) as u32,
            assigned_gpu: String::new(),
            existing: s.existing,
        });
        self.answer("SubmitProof", r)
    }

    async fn await_proof(
        &self,
        request: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let req = request.into_inner();
        let r = match check_job_id(&req.job_id) {
            Ok(()) => {
                let timeout = (req.timeout_ms > 0).then(|| Duration::from_millis(req.timeout_ms));
                self.wait(&req.job_id, timeout).await
            }
            Err(e) => Err(e),
        };
        self.answer("AwaitProof", r)
    }

    async fn prove(
        &self,
        request: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let req = request.into_inner();
        let r = async {
            let submit = req
                .submit
                .as_ref()
                .ok_or_else(|| Status::invalid_argument("submit is required"))?;
            let job = self.submit(submit).await?;
            let result = self.wait(&job.job, None).await?;
            // Prove is one call: a request whose content turned out unprovable (a witness
            // breaking a constraint, found during synthesis) is refused as the bad argument it
            // is, as a malformed one is at submit. AwaitProof reports it as FAILED with its
            // failure_cause, since that call's argument is only a job id.
            if result.failure_cause == FailureCause::InvalidInput.as_str() {
                return Err(Status::invalid_argument(result.error_message));
            }
            Ok(pb::ProveResponse {
                result: Some(result),
            })
        }
        .await;
        self.answer("Prove", r)
    }

    async fn cancel_proof(
        &self,
        request: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let req = request.into_inner();
        let r = match check_job_id(&req.job_id) {
            Err(e) => Err(e),
            Ok(()) => match self.engine.cancel(&req.job_id).await {
                CancelOutcome::Unknown => {
                    Err(Status::not_found(format!("no job {:?}", req.job_id)))
                }
                CancelOutcome::AlreadyEnded => Ok(pb::CancelProofResponse {
                    was_running: false,
                    cancelled: false,
                }),
                CancelOutcome::Cancelled { was_running } => {
                    tracing::info!(job = %req.job_id, was_running, "cancelled");
                    Ok(pb::CancelProofResponse {
                        was_running,
                        cancelled: true,
                    })
                }
            },
        };
        self.answer("CancelProof", r)
    }

    async fn get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let r = Ok(status_to_wire(&self.engine.status().await));
        self.answer("GetStatus", r)
    }

    async fn get_metrics(
        &self,
        _request: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        let r = Ok(pb::GetMetricsResponse {
            prometheus_text: self.metrics.render(&self.engine.status().await),
        });
        self.answer("GetMetrics", r)
    }

    async fn preload_srs(
        &self,
        request: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let req = request.into_inner();
        let r = async {
            let proof = circuit(&req.circuit_id)?;
            let engine = self.engine.clone();
            let (already, took, bytes) = tokio::task::spawn_blocking(move || engine.preload(proof))
                .await
                .map_err(|e| Status::internal(format!("preload task failed: {e}")))?
                .map_err(|e| match e {
                    // the files are not there: the operator must install or generate them
                    cuzk_actors::Error::Engine(
                        crate::Error::ParamsMissing { .. } | crate::Error::ParamsInvalid { .. },
                    ) => Status::failed_precondition(e.to_string()),
                    other => Status::internal(other.to_string()),
                })?;
            tracing::info!(circuit = %req.circuit_id, already, ms = ms(took), bytes, "parameters preloaded");
            Ok(pb::PreloadSrsResponse {
                already_loaded: already,
                load_time_ms: ms(took),
                size_bytes: bytes,
            })
        }
        .await;
        self.answer("PreloadSRS", r)
    }

    async fn evict_srs(
        &self,
        request: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let req = request.into_inner();
        let r = async {
            let proof = circuit(&req.circuit_id)?;
            let engine = self.engine.clone();
            let evicted = tokio::task::spawn_blocking(move || engine.evict(proof))
                .await
                .map_err(|e| Status::internal(format!("evict task failed: {e}")))?;
            match evicted {
                Err((true, m)) => Err(Status::failed_precondition(format!(
                    "{}: refused: {m}",
                    req.circuit_id
                ))),
                Err((false, m)) => Err(Status::internal(m)),
                Ok(freed) => {
                    tracing::info!(circuit = %req.circuit_id, freed = ?freed, "parameters evicted");
                    Ok(pb::EvictSrsResponse {
                        was_loaded: freed.is_some(),
                        freed_bytes: freed.unwrap_or(0),
                    })
                }
            }
        }
        .await;
        self.answer("EvictSRS", r)
    }
}
