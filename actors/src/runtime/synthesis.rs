//! The synthesis pool: a `SyncArbiter` of workers that load parameters and constraint
//! recordings and build partitions' inputs (witness and a, b, c evaluations through the PCE,
//! or full synthesis), off the scheduler's thread. A panic in synthesis becomes an error for
//! its job, never a lost worker or a lost job.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use actix::{Actor, Handler, SyncContext};
use cuzk_engine::circuits::PartitionCircuit;
use cuzk_engine::prover::check_shape;
use cuzk_engine::synthesis::synthesize_partition;
use cuzk_engine::{RegisteredProof, SrsStore};
use tracing::info_span;

use super::{
    Prepare, Prepared, PreparedParts, SchedulerInbox, SynthInput, Synthesize, Synthesized,
};
use crate::failure::{Failure, FailureCause};
use crate::trace::TraceSink;
use crate::work::Payload;

pub(crate) struct SynthesisActor {
    pub store: Arc<SrsStore>,
    pub scheduler: SchedulerInbox,
    pub trace: TraceSink,
    pub track: String,
    /// The engine's synthesis pool, for the parallel loops of a partition synthesised alone
    /// (a witness in pieces, the constraint evaluation). Beside other partitions both run
    /// on the worker's own thread. A sequential witness inside the pool let a thread waiting
    /// for its loop's other halves take up another worker's whole witness (two GPUs fell
    /// from 26 to 16-19 proofs per second); evaluations in the pool queued behind each
    /// other (measured on two H200s; CHANGELOG.md).
    pub pool: Arc<rayon::ThreadPool>,
}

/// The engine's synthesis pool: one thread per core (rayon's default), each at `niceness`
/// (Linux; 0 leaves the threads as they are).
pub(crate) fn synthesis_pool(niceness: i32) -> crate::error::Result<Arc<rayon::ThreadPool>> {
    rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("cuzk-synthesis-{i}"))
        .start_handler(move |_| lower_this_thread(niceness))
        .build()
        .map(Arc::new)
        .map_err(|e| crate::error::Error::SynthesisPool(e.to_string()))
}

/// Lowers the calling thread's OS priority to `niceness` (Linux: `setpriority` on the
/// thread id, which affects that thread only).
pub(crate) fn lower_this_thread(niceness: i32) {
    if niceness <= 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let tid = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(
            Some(tid),
            niceness.min(crate::config::MAX_SYNTHESIS_NICENESS),
        ) {
            tracing::warn!(niceness, error = %e, "cannot lower a synthesis thread's priority");
        }
    }
}

impl Actor for SynthesisActor {
    type Context = SyncContext<Self>;
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// A job's parameters from `store`, and with `pce` its circuit's recording (the cache file,
/// or `blank` recorded), with the parameters' load time.
///
/// The recording (one thread; minutes at 32 GiB when it is not cached) runs on a thread of
/// its own beside the parameters' load (every core; about a minute for 44 GiB): the job waits
/// for the longer of the two, not their sum. A failed load returns at once; a recording still
/// running then finishes on its own and stays in the PCE store for the next job of the
/// circuit.
fn prepare(
    store: &Arc<SrsStore>,
    proof: RegisteredProof,
    params_identifier: &str,
    identity: String,
    blank: Box<dyn PartitionCircuit>,
    pce: bool,
) -> std::result::Result<PreparedParts, Failure> {
    let recording = if pce {
        let store = store.clone();
        let span = tracing::Span::current();
        let handle = std::thread::Builder::new()
            .name("cuzk-pce-record".into())
            .spawn(move || {
                let _entered = span.entered();
                store
                    .pce()
                    .get_or_record(&identity, blank)
                    .map_err(|e| Failure::from_engine(&e))
            })
            .map_err(|e| {
                Failure::new(
                    FailureCause::Synthesis,
                    format!("cannot start a thread to record the circuit: {e}"),
                )
            })?;
        Some(handle)
    } else {
        None
    };
    catch_unwind(AssertUnwindSafe(|| {
        let t = Instant::now();
        let srs = store
            .get_by_identifier(proof, params_identifier)
            .map_err(|e| Failure::from_engine(&e))?;
        let load = t.elapsed();
        let r1cs = match recording {
            Some(handle) => Some(handle.join().unwrap_or_else(|p| {
                Err(Failure::new(
                    FailureCause::Synthesis,
                    format!("recording the circuit panicked: {}", panic_message(p)),
                ))
            })?),
            None => None,
        };
        Ok((srs, r1cs, load))
    }))
    .unwrap_or_else(|p| {
        Err(Failure::new(
            FailureCause::Synthesis,
            format!("preparing panicked: {}", panic_message(p)),
        ))
    })
}

impl Handler<Prepare> for SynthesisActor {
    type Result = ();

    fn handle(&mut self, msg: Prepare, _ctx: &mut Self::Context) {
        let t0 = Instant::now();
        let _span = info_span!(parent: &msg.span, "prepare", job = msg.job, circuit = %msg.params_identifier)
            .entered();
        let result = prepare(
            &self.store,
            msg.proof,
            &msg.params_identifier,
            msg.shape_identity,
            msg.blank,
            msg.pce,
        );
        self.trace.slice(
            &self.track,
            "prepare",
            t0,
            msg.job,
            None,
            msg.params_identifier,
        );
        self.scheduler.prepared.do_send(Prepared {
            job: msg.job,
            result,
        });
    }
}

impl Handler<Synthesize> for SynthesisActor {
    type Result = ();

    fn handle(&mut self, msg: Synthesize, _ctx: &mut Self::Context) {
        let t0 = Instant::now();
        let (job, partition) = (msg.job, msg.partition);
        let _span = info_span!(parent: &msg.span, "synthesis", job, partition).entered();
        let parallel = msg.parallel;
        let pool = &self.pool;
        let result = catch_unwind(AssertUnwindSafe(|| {
            synthesize(msg.input, partition, parallel, pool)
        }))
        .unwrap_or_else(|p| {
            Err(Failure::new(
                FailureCause::Synthesis,
                format!(
                    "partition {partition}: synthesis panicked: {}",
                    panic_message(p)
                ),
            ))
        });
        let took = t0.elapsed();
        self.trace.slice(
            &self.track,
            "synthesis",
            t0,
            job,
            Some(partition),
            if result.is_ok() { "ok" } else { "failed" },
        );
        self.scheduler.synthesized.do_send(Synthesized {
            job,
            partition,
            result,
            took,
        });
    }
}

/// Builds one partition's input. Each error carries the cause its origin implies: the
/// engine error's variant (a PCE failure is synthesis, a broken constraint or mismatched
/// public inputs is invalid input, parameters of another circuit are params).
fn synthesize(
    input: SynthInput,
    partition: usize,
    parallel: bool,
    pool: &rayon::ThreadPool,
) -> std::result::Result<Payload, Failure> {
    match input {
        SynthInput::Simulated {
            time,
            gpu_time,
            panic,
        } => {
            if panic {
                panic!("injected panic in synthesis of partition {partition}");
            }
            if !time.is_zero() {
                std::thread::sleep(time);
            }
            Ok(Payload::Simulated { gpu_time })
        }
        SynthInput::Proof {
            circuit,
            srs,
            r1cs,
            public_inputs,
            randomness,
        } => {
            // The engine's step for one partition: the PCE (or full synthesis), the
            // constraints checked, the public inputs matched; over the pool when `parallel`.
            let assignment = synthesize_partition(
                circuit,
                r1cs.as_deref(),
                &public_inputs,
                partition,
                parallel.then_some(pool),
            )
            .map_err(|e| Failure::from_engine(&e))?;
            // Parameters of another circuit under this one's name are the operator's to fix,
            // found here once, on the host: on a device every attempt would fail alike.
            check_shape(&srs.params, &assignment, &srs.path.display().to_string())
                .map_err(|e| Failure::from_engine(&e).context(format!("partition {partition}")))?;
            let (r, s) = randomness.draw();
            Ok(Payload::Proof {
                srs,
                assignment,
                public_inputs,
                r,
                s,
            })
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A circuit whose synthesis waits until its gate opens (the sender is dropped): a
    /// recording that takes as long as the test says.
    #[derive(Clone)]
    struct Gated(crossbeam_channel::Receiver<()>);

    impl bellperson::Circuit<blstrs::Scalar> for Gated {
        fn synthesize<CS: bellperson::ConstraintSystem<blstrs::Scalar>>(
            self,
            cs: &mut CS,
        ) -> std::result::Result<(), bellperson::SynthesisError> {
            let _ = self.0.recv();
            let x = cs.alloc(|| "x", || Ok(blstrs::Scalar::from(3u64)))?;
            cs.enforce(
                || "x * x = 3x",
                |lc| lc + x,
                |lc| lc + x,
                |lc| lc + x + x + x,
            );
            Ok(())
        }
    }

    /// Missing parameters fail the job while its recording is still running, and the
    /// recording, once done, is kept for the next job of the circuit.
    #[test]
    fn a_failed_load_does_not_wait_for_the_recording() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Arc::new(SrsStore::new(dir.path()));
        let (gate, closed) = crossbeam_channel::bounded::<()>(0);
        let proof = RegisteredProof::latest(
            cuzk_engine::ProofKind::PorepC2,
            cuzk_engine::SectorSize::S2KiB,
        );
        let blank = Box::new(cuzk_engine::circuits::CircuitBox(Gated(closed)));
        let (tx, rx) = std::sync::mpsc::channel();
        let for_prepare = store.clone();
        std::thread::spawn(move || {
            let result = prepare(&for_prepare, proof, "absent", "gated".into(), blank, true);
            let _ = tx.send(result.err());
        });
        let failed = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the failed load waited for the recording")
            .expect("no parameter file: an error");
        assert_eq!(failed.cause, FailureCause::Params, "{failed:?}");
        assert_eq!(
            store.pce().recorded_count(),
            0,
            "the recording is still waiting at its gate"
        );
        drop(gate);
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        // recorded, then saved to its cache file
        let file = dir.path().join("cuzk-pce").join("gated.pce");
        while store.pce().recorded_count() == 0 || !file.exists() {
            assert!(Instant::now() < deadline, "the recording never finished");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(store.pce().recorded_count(), 1);
    }

    fn own_niceness() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid()))
            .expect("getpriority on this thread")
    }

    #[test]
    fn the_synthesis_pool_runs_at_its_niceness_and_leaves_other_threads_alone() {
        let base = own_niceness();
        let want = (base + 3).min(19);
        let pool = synthesis_pool(want).expect("pool");
        let seen: Vec<i32> = pool.install(|| {
            use rayon::prelude::*;
            (0..64).into_par_iter().map(|_| own_niceness()).collect()
        });
        assert!(
            seen.iter().all(|&n| n == want),
            "pool threads at {seen:?}, want {want}"
        );
        assert_eq!(
            own_niceness(),
            base,
            "the caller's thread keeps its priority"
        );
        // a worker lowers only itself
        let worker = std::thread::spawn(move || {
            lower_this_thread(want);
            own_niceness()
        })
        .join()
        .expect("worker");
        assert_eq!(worker, want);
        assert_eq!(own_niceness(), base);
        // 0 leaves a thread as it is
        let untouched = std::thread::spawn(|| {
            lower_this_thread(0);
            own_niceness()
        })
        .join()
        .expect("thread");
        assert_eq!(untouched, base);
    }
}
