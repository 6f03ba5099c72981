//! Benchmark of cuzk's CPU prover against bellperson 0.27's `create_proof` on the same
//! circuit, in the same process, with the same r and s: times and byte equality.
//!
//! bellperson reports its own synthesis and proving times through the `log` crate
//! ("synthesis time: ..", "prover time: .."); [`BellpersonLogProbe`] captures them so the
//! proving step can be compared without synthesis on both sides.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_engine::circuits;
use cuzk_engine::prover::Backend;
use cuzk_engine::{Error, ProofRequest, Result, SrsStore};

/// Captures bellperson's timing log lines.
pub struct BellpersonLogProbe {
    lines: Mutex<Vec<String>>,
}

static PROBE: OnceLock<BellpersonLogProbe> = OnceLock::new();
static INSTALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl log::Log for BellpersonLogProbe {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.target().starts_with("bellperson")
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            if let Ok(mut l) = self.lines.lock() {
                l.push(r.args().to_string());
            }
        }
    }
    fn flush(&self) {}
}

impl BellpersonLogProbe {
    /// Installs the probe as the `log` logger (once per process). Returns `None` when another
    /// logger is already installed.
    pub fn install() -> Option<&'static BellpersonLogProbe> {
        let probe = PROBE.get_or_init(|| BellpersonLogProbe {
            lines: Mutex::new(Vec::new()),
        });
        match log::set_logger(probe) {
            Ok(()) => {
                log::set_max_level(log::LevelFilter::Info);
                INSTALLED.store(true, std::sync::atomic::Ordering::SeqCst);
                Some(probe)
            }
            Err(_) => None,
        }
    }

    /// The installed probe, if [`install`](Self::install) succeeded.
    pub fn get() -> Option<&'static BellpersonLogProbe> {
        PROBE
            .get()
            .filter(|_| INSTALLED.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Takes the last reported duration whose line starts with `prefix`, clearing the buffer.
    pub fn take(&self, prefix: &str) -> Option<Duration> {
        let mut lines = self.lines.lock().ok()?;
        let found = lines.iter().rev().find_map(|l| {
            l.strip_prefix(prefix)
                .and_then(|rest| parse_debug_duration(rest.trim()))
        });
        if prefix == "prover time:" {
            lines.clear();
        }
        found
    }
}

/// Parses a `Duration`'s `Debug` output ("1.5s", "12.3ms", "4µs", "7ns").
pub fn parse_debug_duration(s: &str) -> Option<Duration> {
    let (num, scale) = if let Some(v) = s.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = s.strip_suffix("µs") {
        (v, 1e-6)
    } else if let Some(v) = s.strip_suffix("ns") {
        (v, 1e-9)
    } else if let Some(v) = s.strip_suffix('s') {
        (v, 1.0)
    } else {
        return None;
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|x| Duration::from_secs_f64(x * scale))
}

/// One run's measurements.
#[derive(Clone, Debug, Default)]
pub struct BenchRun {
    /// cuzk full synthesis (witness + a/b/c through the constraint system), all partitions.
    pub ours_synthesis: Duration,
    /// cuzk PCE synthesis (witness-only synthesis + sparse products), all partitions.
    pub pce_synthesis: Duration,
    /// The same with the witness on several threads where the circuit allows it (PoRep: each
    /// challenge's head, labelings and tail apart), as for a partition synthesised alone.
    pub pce_synthesis_parallel: Duration,
    /// cuzk proving step (NTT + MSMs), all partitions.
    pub ours_prove: Duration,
    /// bellperson `create_proof`, whole call, all partitions.
    pub bellperson_total: Duration,
    /// bellperson's own "synthesis time" report, summed.
    pub bellperson_synthesis: Option<Duration>,
    /// bellperson's own "prover time" report (after synthesis), summed.
    pub bellperson_prove: Option<Duration>,
    /// Whether the two proofs were byte-identical (and the witness computed on several
    /// threads equal to the sequential one).
    pub identical: bool,
}

/// Summary over runs (medians).
#[derive(Clone, Debug)]
pub struct BenchSummary {
    /// What was proved.
    pub label: String,
    /// Constraints per partition (including input constraints).
    pub constraints: usize,
    /// Partitions per proof.
    pub partitions: usize,
    /// Every run.
    pub runs: Vec<BenchRun>,
    /// Non-zeros of the recorded A, B, C.
    pub pce_nnz: usize,
    /// Bytes of the recorded circuit's cache encoding.
    pub pce_bytes: usize,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

impl BenchSummary {
    /// Median of a field over runs.
    pub fn median_of(&self, f: impl Fn(&BenchRun) -> Option<Duration>) -> Option<Duration> {
        let v: Vec<Duration> = self.runs.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| median(v))
    }

    /// Whether every run gave identical proofs.
    pub fn all_identical(&self) -> bool {
        self.runs.iter().all(|r| r.identical)
    }
}

/// Runs `runs` rounds (plus one warm-up) of both provers on `request` with fixed r, s.
pub fn bench_against_bellperson(
    store: &SrsStore,
    backend: &mut dyn Backend,
    request: &ProofRequest,
    runs: usize,
    probe: Option<&BellpersonLogProbe>,
) -> Result<BenchSummary> {
    let srs = store.get(request.proof)?;
    let (r, s) = (Scalar::from(0x1234_5678u64), Scalar::from(0x9abc_def0u64));
    let mut summary = BenchSummary {
        label: request.proof.to_string(),
        constraints: 0,
        partitions: 0,
        runs: Vec::new(),
        pce_nnz: 0,
        pce_bytes: 0,
    };
    let probe_plan = circuits::plan(request)?;
    let identity = probe_plan.shape_identity();
    let r1cs = store.pce().get_or_record(&identity, probe_plan.blank)?;
    summary.pce_nnz = r1cs.nnz();
    summary.pce_bytes = cuzk_engine::pce::cache::encode(&r1cs, &identity).len();
    for round in 0..=runs {
        let mut run = BenchRun {
            identical: true,
            ..Default::default()
        };
        let ours_plan = circuits::plan(request)?;
        let pce_plan = circuits::plan(request)?;
        let theirs_plan = circuits::plan(request)?;
        for job in pce_plan.partitions {
            let copy = job.circuit.clone_box();
            let t = Instant::now();
            let (input, aux) = job.circuit.witness()?;
            let asg = cuzk_engine::pce::evaluate(&r1cs, input, aux)?;
            run.pce_synthesis += t.elapsed();
            let t = Instant::now();
            let (input, aux) = copy.witness_parallel()?;
            let par = cuzk_engine::pce::evaluate(&r1cs, input, aux)?;
            run.pce_synthesis_parallel += t.elapsed();
            run.identical &= par.aux == asg.aux && par.input == asg.input;
            drop((asg, par));
        }
        summary.partitions = ours_plan.partitions.len();
        let mut b_syn = Duration::ZERO;
        let mut b_prove = Duration::ZERO;
        let mut have_b = probe.is_some();
        for (ours, theirs) in ours_plan.partitions.into_iter().zip(theirs_plan.partitions) {
            let t = Instant::now();
            let asg = ours.circuit.synthesize()?;
            run.ours_synthesis += t.elapsed();
            summary.constraints = asg.num_constraints();
            let t = Instant::now();
            let p_ours = backend.prove(&srs, asg, r, s, ours.index)?;
            run.ours_prove += t.elapsed();

            let t = Instant::now();
            let p_theirs = theirs.circuit.prove_with_bellperson(&srs.params, r, s)?;
            run.bellperson_total += t.elapsed();
            if let Some(p) = probe {
                match (p.take("synthesis time:"), p.take("prover time:")) {
                    (Some(a), Some(b)) => {
                        b_syn += a;
                        b_prove += b;
                    }
                    _ => have_b = false,
                }
            }
            let (mut x, mut y) = (Vec::new(), Vec::new());
            p_ours.write(&mut x).map_err(|e| Error::io("proof", e))?;
            p_theirs.write(&mut y).map_err(|e| Error::io("proof", e))?;
            run.identical &= x == y;
        }
        if have_b {
            run.bellperson_synthesis = Some(b_syn);
            run.bellperson_prove = Some(b_prove);
        }
        if round > 0 {
            summary.runs.push(run);
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_debug_durations() {
        assert_eq!(
            parse_debug_duration("1.5s"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_debug_duration("250ms"),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_debug_duration("3µs"), Some(Duration::from_micros(3)));
        assert_eq!(parse_debug_duration("x"), None);
    }
}
