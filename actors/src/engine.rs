//! The `Engine` handle users embed: start from a config, submit requests, await results
//! (blocking or async, from a plain `main` or inside any async runtime), cancel, read
//! status, shut down cleanly.
//!
//! The actors run on the engine's own threads (one for the scheduler, a pool for synthesis,
//! one per device); the handle only sends messages, so it is cheap to clone and safe to use
//! from any thread.
//!
//! Its configuration is in [`crate::config`] and what it reports in [`crate::report`]; both
//! are re-exported here.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Addr, System};
use crossbeam_channel::Receiver;
use cuzk_engine::{circuits, ProofKind, ProofRequest, RegisteredProof, SrsStore};
use futures::channel::oneshot;
use tracing::{info, warn};

pub use crate::config::{
    DeviceChoice, EngineConfig, SubmitOptions, DEFAULT_SYNTHESIS_NICENESS, MAX_SYNTHESIS_NICENESS,
};
use crate::device::{resolve, DeviceInfo, DeviceSelector};
use crate::driver::{CpuDriver, CudaDriver, DeviceDriver};
use crate::error::{Error, Result};
use crate::job::{JobId, Priority, WorkKind};
use crate::policy::default_priority;
use crate::report::JobProgress;
pub use crate::report::{
    DeviceStatus, EngineStatus, JobHook, JobReport, JobResult, JobTimings, QueueStatus,
    ReportOutcome, SrsStatus, Submitted,
};
use crate::runtime::scheduler::{SchedulerActor, SchedulerSetup};
use crate::runtime::{
    Await, Cancel, GetStatus, JobInput, PreloadDevices, Shared, Shutdown, Submit,
};
use crate::trace::{write_chrome_trace, TraceEvent, TraceSink};
use crate::work::SimulatedJob;

struct Inner {
    addr: Addr<SchedulerActor>,
    shared: Arc<Shared>,
    store: Arc<SrsStore>,
    devices: Vec<DeviceInfo>,
    driver_name: &'static str,
    priorities: Vec<(ProofKind, Priority)>,
    stopped: Receiver<()>,
    trace: Option<(PathBuf, Receiver<TraceEvent>)>,
}

/// The engine: cheap to clone, usable from any thread. Dropping the last clone shuts the
/// engine down at once (running jobs are cancelled, waiters answered).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// The CUDA driver of this build: the engine's CUDA backend, opened on each device actor's
/// thread; a lease reserves the backend's own plan for the circuit on that device (resident
/// bases + working memory, or streamed bases + their rings and working memory).
pub fn cuda_driver(config: &EngineConfig) -> CudaDriver {
    use cuzk_engine::cuda::CudaBackend;
    let (limit, chunk) = (config.gpu_memory_limit, config.gpu_stream_chunk);
    let kernels = config.kernel_cache.clone();
    let opener: crate::driver::GpuOpener = Arc::new(move |ordinal| {
        let backend = CudaBackend::open(ordinal)?
            .with_memory_limit(limit)
            .with_stream_chunk(chunk)
            .with_kernel_cache(kernels.clone());
        Ok(Box::new(backend) as Box<dyn cuzk_engine::Backend>)
    });
    gpu_driver(config, opener).with_pipeline_depth(config.gpu_pipeline_depth)
}

/// The `dual` driver: the CUDA driver's GPUs, each proving through
/// [`cuzk_engine::DualBackend`] (the CPU and the GPU on every operation, compared). Its
/// leases reserve what the CUDA backend's do; one lease a device at a time, since the dual
/// backend uploads nothing ahead.
pub fn dual_driver(config: &EngineConfig) -> CudaDriver {
    use cuzk_engine::cuda::ops::CudaOps;
    let (limit, chunk) = (config.gpu_memory_limit, config.gpu_stream_chunk);
    let kernels = config.kernel_cache.clone();
    let opener: crate::driver::GpuOpener = Arc::new(move |ordinal| {
        let gpu = CudaOps::open(ordinal)?
            .with_memory_limit(limit)
            .with_stream_chunk(chunk)
            .with_kernel_cache(kernels.clone());
        Ok(Box::new(cuzk_engine::DualBackend::with_gpu(gpu)) as Box<dyn cuzk_engine::Backend>)
    });
    gpu_driver(config, opener)
        .with_pipeline_depth(1)
        .with_name("dual")
}

/// A driver of the CUDA devices proving with the backends `opener` opens, their leases
/// reserving the CUDA backend's plan for a circuit.
fn gpu_driver(config: &EngineConfig, opener: crate::driver::GpuOpener) -> CudaDriver {
    use cuzk_engine::cuda::lease_plan;
    let (limit, chunk) = (config.gpu_memory_limit, config.gpu_stream_chunk);
    // what does not fit even streamed reserves more than any device has: refused at
    // preparation, naming the bytes
    let vram = Arc::new(move |srs: &cuzk_engine::Srs, usable: u64| {
        lease_plan(srs, usable, chunk)
            .map_or_else(|need| need.max(usable.saturating_add(1)), |p| p.bytes)
    });
    // the resident bases and masks: one copy a device, whatever the leases of the circuit
    let shared = Arc::new(move |srs: &cuzk_engine::Srs, usable: u64| {
        lease_plan(srs, usable, chunk).map_or(0, |p| p.shared)
    });
    // a streamed circuit's partitions are proved as a batch: a device may hold that many
    let batch = Arc::new(move |srs: &cuzk_engine::Srs, usable: u64| {
        lease_plan(srs, usable, chunk).map_or(1, |p| p.batch_limit())
    });
    CudaDriver::new(Some(opener), Some(vram))
        .with_shared_vram(shared)
        .with_lease_batch(batch)
        .with_memory_limit(limit)
}

impl Engine {
    /// Starts the engine: discovers and resolves devices, starts the scheduler, the synthesis
    /// pool and one thread per device. Fails with a clear error when a configured device is
    /// missing or named twice.
    pub fn start(config: EngineConfig) -> Result<Engine> {
        let cpu = || -> Arc<dyn DeviceDriver> {
            Arc::new(CpuDriver {
                threads: config.cpu_threads,
            })
        };
        let (driver, selectors): (Arc<dyn DeviceDriver>, Vec<DeviceSelector>) =
            match &config.devices {
                DeviceChoice::Cpu => (cpu(), Vec::new()),
                DeviceChoice::Auto => {
                    let cuda = cuda_driver(&config);
                    let found = if cuda.can_prove() {
                        cuda.discover().unwrap_or_else(|e| {
                            warn!(error = %e, "GPU discovery failed; proving on the CPU");
                            Vec::new()
                        })
                    } else {
                        Vec::new()
                    };
                    if found.is_empty() {
                        (cpu(), Vec::new())
                    } else {
                        (Arc::new(cuda), Vec::new())
                    }
                }
                DeviceChoice::Gpus(sel) => (Arc::new(cuda_driver(&config)), sel.clone()),
                DeviceChoice::Dual(sel) => (Arc::new(dual_driver(&config)), sel.clone()),
                DeviceChoice::Driver(d, sel) => (d.clone(), sel.clone()),
            };
        let discovered = driver.discover()?;
        let devices = resolve(&selectors, &discovered)?;
        if devices.is_empty() && matches!(config.devices, DeviceChoice::Dual(_)) {
            return Err(Error::NoDevice(
                "the dual backend checks a CUDA device against the CPU, and no CUDA device \
                 was found"
                    .into(),
            ));
        }
        if devices.is_empty() {
            return Err(Error::NoDevice(format!(
                "the {} driver found no device",
                driver.name()
            )));
        }
        for d in &devices {
            info!(device = %d.id, uuid = %d.id.uuid_string(), ordinal = d.ordinal, name = %d.name, memory = d.total_memory, "device");
        }
        let mut store = SrsStore::new(&config.params_dir);
        if let Some(dir) = &config.pce_dir {
            store = store.with_pce_dir(Some(dir.clone()));
        }
        let store = Arc::new(store);
        let shared = Arc::new(Shared::default());
        let (trace, trace_rx) = TraceSink::new(config.trace_file.is_some());
        let setup = SchedulerSetup {
            store: store.clone(),
            driver: driver.clone(),
            devices: devices.clone(),
            limits: config.limits.clone(),
            synthesis_workers: config.synthesis_workers.max(1),
            synthesis_pool: crate::runtime::synthesis::synthesis_pool(config.synthesis_niceness)?,
            synthesis_niceness: config.synthesis_niceness,
            host_memory_budget: config.host_memory_budget,
            max_outstanding_partitions: config.max_outstanding_partitions,
            job_timeout: config.job_timeout,
            prove: config.prove.clone(),
            tick: config.tick.max(Duration::from_millis(1)),
            retain_results: config.retain_results,
            on_job_done: config.on_job_done.clone(),
            shared: shared.clone(),
            trace,
        };
        let (addr_tx, addr_rx) = crossbeam_channel::bounded(1);
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(0);
        std::thread::Builder::new()
            .name("cuzk-engine".into())
            .spawn(move || {
                let _stopped = stop_tx; // dropped when this thread ends: waiters see it
                let sys = System::new();
                let started = sys.block_on(async move { SchedulerActor::start(setup) });
                let ok = started.is_ok();
                let _ = addr_tx.send(started);
                if ok {
                    if let Err(e) = sys.run() {
                        warn!(error = %e, "engine actor system ended with an error");
                    }
                }
            })
            .map_err(|e| Error::Device {
                device: "engine".into(),
                reason: format!("cannot start the engine thread: {e}"),
            })?;
        let addr = addr_rx.recv().map_err(|_| Error::Stopped)??;
        Ok(Engine {
            inner: Arc::new(Inner {
                addr,
                shared,
                store,
                devices,
                driver_name: driver.name(),
                priorities: config.priorities.clone(),
                stopped: stop_rx,
                trace: config.trace_file.clone().zip(trace_rx),
            }),
        })
    }

    /// The devices this engine proves on, ordered by physical identity.
    pub fn devices(&self) -> &[DeviceInfo] {
        &self.inner.devices
    }

    /// The driver in use ("cpu", "cuda", "dual", "mock").
    pub fn driver_name(&self) -> &'static str {
        self.inner.driver_name
    }

    /// The parameter store (shared with the engine's workers).
    pub fn store(&self) -> &Arc<SrsStore> {
        &self.inner.store
    }

    fn priority_for(&self, kind: ProofKind, opts: &SubmitOptions) -> Priority {
        opts.priority
            .or_else(|| {
                self.inner
                    .priorities
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map(|(_, p)| *p)
            })
            .unwrap_or_else(|| default_priority(WorkKind::Proof(kind)))
    }

    /// Validates a request (decodes its inputs and builds its circuits, on the calling
    /// thread) and queues it. Errors at once for a bad request, back-pressure, or shutdown.
    pub fn submit(&self, request: &ProofRequest, opts: SubmitOptions) -> Result<Submitted> {
        let plan = circuits::plan(request)?;
        let kind = request.proof.kind;
        let shape_identity = plan.shape_identity();
        let mut circuits = Vec::with_capacity(plan.partitions.len());
        let mut public_inputs = Vec::with_capacity(plan.partitions.len());
        for p in plan.partitions {
            circuits.push(p.circuit);
            public_inputs.push(p.public_inputs);
        }
        let msg = Submit {
            input: JobInput::Proof {
                proof: plan.proof,
                params_identifier: plan.params_identifier,
                shape_identity,
                circuits,
                public_inputs,
                blank: plan.blank,
                aggregation: plan.aggregation,
            },
            kind: WorkKind::Proof(kind),
            priority: self.priority_for(kind, &opts),
            request_key: opts.request_id.map(|r| (r, request.digest())),
            timeout: opts.timeout,
        };
        futures::executor::block_on(self.inner.addr.send(msg)).map_err(|_| Error::Stopped)?
    }

    /// As [`submit`](Self::submit), without blocking the caller's executor: validation runs
    /// on a short-lived thread. Works under any async runtime.
    pub async fn submit_async(
        &self,
        request: ProofRequest,
        opts: SubmitOptions,
    ) -> Result<Submitted> {
        let (tx, rx) = oneshot::channel();
        let me = self.clone();
        std::thread::Builder::new()
            .name("cuzk-submit".into())
            .spawn(move || {
                let _ = tx.send(me.submit(&request, opts));
            })
            .map_err(|e| Error::Rejected(format!("cannot start a validation thread: {e}")))?;
        rx.await.map_err(|_| Error::Stopped)?
    }

    /// Queues a simulated job (mock devices only).
    pub fn submit_simulated(&self, job: SimulatedJob, opts: SubmitOptions) -> Result<Submitted> {
        let request_key = opts.request_id.map(|r| (r, job.digest()));
        let msg = Submit {
            input: JobInput::Simulated(job),
            kind: WorkKind::Simulated,
            priority: opts.priority.unwrap_or(Priority::Normal),
            request_key,
            timeout: opts.timeout,
        };
        futures::executor::block_on(self.inner.addr.send(msg)).map_err(|_| Error::Stopped)?
    }

    /// Waits for a job (blocking): its result, or `Error::Timeout` after `timeout` (the job
    /// keeps running), `Error::JobFailed`, `Error::Cancelled`. Do not call it from inside an
    /// async task; use [`wait_async`](Self::wait_async) there.
    pub fn wait(&self, job: JobId, timeout: Option<Duration>) -> Result<JobResult> {
        futures::executor::block_on(self.wait_async(job, timeout))
    }

    /// As [`wait`](Self::wait), as a future that works under any async runtime (the timeout is
    /// kept by the engine, not by the caller's runtime).
    pub async fn wait_async(&self, job: JobId, timeout: Option<Duration>) -> Result<JobResult> {
        let (tx, rx) = oneshot::channel();
        self.inner
            .addr
            .try_send(Await {
                job,
                timeout,
                reply: tx,
            })
            .map_err(|_| Error::Stopped)?;
        rx.await.map_err(|_| Error::Stopped)?
    }

    /// Submits and waits.
    pub fn prove(&self, request: &ProofRequest, opts: SubmitOptions) -> Result<JobResult> {
        let s = self.submit(request, opts)?;
        self.wait(s.job, None)
    }

    /// Cancels a job; returns whether it was still running. Partitions on a device finish
    /// there and their results are discarded.
    pub fn cancel(&self, job: JobId) -> Result<bool> {
        futures::executor::block_on(self.cancel_async(job))
    }

    /// As [`cancel`](Self::cancel), as a future.
    pub async fn cancel_async(&self, job: JobId) -> Result<bool> {
        self.inner
            .addr
            .send(Cancel(job))
            .await
            .map_err(|_| Error::Stopped)?
    }

    /// A status snapshot.
    pub fn status(&self) -> Result<EngineStatus> {
        futures::executor::block_on(self.status_async())
    }

    /// As [`status`](Self::status), as a future.
    pub async fn status_async(&self) -> Result<EngineStatus> {
        self.inner
            .addr
            .send(GetStatus)
            .await
            .map_err(|_| Error::Stopped)
    }

    /// A running job's progress, read without a round trip (None once it has ended).
    pub fn progress(&self, job: JobId) -> Option<JobProgress> {
        self.inner.shared.jobs.get(&job).map(|p| p.clone())
    }

    /// The jobs not finished and their progress, oldest first (read without a round trip).
    pub fn running(&self) -> Vec<(JobId, JobProgress)> {
        let mut v: Vec<(JobId, JobProgress)> = self
            .inner
            .shared
            .jobs
            .iter()
            .map(|e| (*e.key(), e.value().clone()))
            .collect();
        v.sort_by_key(|(id, _)| *id);
        v
    }

    /// Loads `proof`'s parameters into host memory now, and asks every device to make them
    /// resident in the background (where that evicts no other circuit's; a GPU uploads them
    /// between partitions), so the first proof of the circuit pays neither. Returns whether
    /// they were already loaded and the time the host load took (device uploads are not
    /// waited for).
    pub fn preload_srs(&self, proof: RegisteredProof) -> Result<(bool, Duration)> {
        let id = circuits::params_identifier(proof)?;
        let already = self.inner.store.loaded().iter().any(|(i, _)| *i == id);
        let t = Instant::now();
        let srs = self.inner.store.get(proof)?;
        let took = t.elapsed();
        // a stopped engine has no devices to ask: the host load still stands
        let _ = self.inner.addr.try_send(PreloadDevices(srs));
        Ok((already, took))
    }

    /// Drops `proof`'s loaded parameters. Refuses while a job uses them. Returns the bytes
    /// freed, or None when they were not loaded.
    pub fn evict_srs(&self, proof: RegisteredProof) -> Result<Option<u64>> {
        let id = circuits::params_identifier(proof)?;
        let loaded = self.inner.store.loaded();
        let Some((_, srs)) = loaded.iter().find(|(i, _)| *i == id) else {
            return Ok(None);
        };
        // the store's slot and `loaded`'s copy hold two references; more means users
        let users = Arc::strong_count(srs).saturating_sub(2);
        if users > 0 {
            return Err(Error::InUse(
                format!("parameters {id}"),
                format!("{users} job(s) are proving with them; evict after they finish"),
            ));
        }
        let bytes = srs.memory_bytes();
        drop(loaded);
        Ok(self.inner.store.evict(proof)?.then_some(bytes))
    }

    /// Stops accepting work, lets running jobs finish for up to `grace`, cancels the rest,
    /// answers every waiter, stops every actor and writes the trace file if one was asked
    /// for. Returns when the engine has stopped (a device stuck in a hung kernel is left
    /// behind on its own thread). Calling it again returns at once.
    pub fn shutdown(&self, grace: Duration) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        if self
            .inner
            .addr
            .try_send(Shutdown { grace, reply: tx })
            .is_ok()
        {
            let _ = futures::executor::block_on(rx);
        }
        // the engine thread ends right after; its end drops the sender
        let _ = self.inner.stopped.recv();
        if let Some((path, rx)) = &self.inner.trace {
            let events: Vec<TraceEvent> = rx.try_iter().collect();
            if !events.is_empty() {
                write_chrome_trace(path, &events)?;
                info!(path = %path.display(), events = events.len(), "trace written");
            }
        }
        Ok(())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let (tx, rx) = oneshot::channel();
        if self
            .addr
            .try_send(Shutdown {
                grace: Duration::ZERO,
                reply: tx,
            })
            .is_ok()
        {
            let _ = futures::executor::block_on(rx);
            let _ = self.stopped.recv();
        }
    }
}
