//! What travels to a device: one partition's synthesised input, or a simulated stand-in.

use std::sync::Arc;
use std::time::Duration;

use blstrs::Scalar;
use cuzk_engine::pce::Assignment;
use cuzk_engine::Srs;

use crate::job::JobId;
pub use crate::job::WorkKind;
use crate::lease::LeaseId;
pub use crate::policy::default_priority;

/// One partition leased to one device. Built by a synthesis actor, moved to the device actor
/// that holds the lease; the device consumes it (a failed attempt is synthesised again).
pub struct PartitionWork {
    /// The lease it runs under: unique within an engine, so it also names this attempt
    /// (a worker that uploaded it ahead recognises it by this).
    pub lease: LeaseId,
    /// The job.
    pub job: JobId,
    /// Partition index within the job.
    pub partition: usize,
    /// Device memory the partition needs, in bytes, its circuit's parameters included (the
    /// lease table reserves those once a device for all the circuit's leases there).
    pub reserved_vram: u64,
    /// What to prove.
    pub payload: Payload,
    /// The partition's span (a child of its job's): the device's work is recorded under it.
    pub span: tracing::Span,
}

/// The input of a partition's GPU phase.
// One value per partition, moved a few times through channels: boxing would only add an
// allocation.
#[allow(clippy::large_enum_variant)]
pub enum Payload {
    /// A real Groth16 partition.
    Proof {
        /// The circuit's parameters.
        srs: Arc<Srs>,
        /// Witness and a, b, c evaluations.
        assignment: Assignment,
        /// Public inputs (without ONE), for verification on the device thread.
        public_inputs: Vec<Scalar>,
        /// Randomiser r.
        r: Scalar,
        /// Randomiser s.
        s: Scalar,
    },
    /// A simulated partition: mock devices "prove" it by waiting `gpu_time`.
    Simulated {
        /// Device time it takes at speed 1.0.
        gpu_time: Duration,
    },
}

/// A job with no Filecoin circuit behind it, for simulations with thousands of partitions:
/// synthesis waits `synthesis_time`, a mock device waits `gpu_time / speed`. Only mock
/// devices accept its partitions; its "proofs" are 192-byte tokens, not Groth16 proofs.
#[derive(Clone, Debug)]
pub struct SimulatedJob {
    /// Partitions.
    pub partitions: usize,
    /// Device memory each partition's lease reserves.
    pub vram_per_partition: u64,
    /// Host memory each synthesised partition holds until proved.
    pub host_bytes_per_partition: u64,
    /// Time synthesis of one partition takes.
    pub synthesis_time: Duration,
    /// Device time of one partition at speed 1.0.
    pub gpu_time: Duration,
    /// Make synthesis of this partition panic (fault injection).
    pub panic_in_synthesis: Option<usize>,
}

impl SimulatedJob {
    /// A digest of the job's description: two submissions under one request id are the same
    /// request when their digests are equal.
    pub fn digest(&self) -> [u8; 32] {
        *blake3::hash(format!("{self:?}").as_bytes()).as_bytes()
    }
}

impl Default for SimulatedJob {
    fn default() -> Self {
        SimulatedJob {
            partitions: 1,
            vram_per_partition: 1 << 20,
            host_bytes_per_partition: 1 << 20,
            synthesis_time: Duration::ZERO,
            gpu_time: Duration::from_micros(200),
            panic_in_synthesis: None,
        }
    }
}

/// The token a simulated partition yields: 192 bytes derived from (job, partition), so tests
/// can check each partition landed in its place exactly once.
pub fn simulated_token(job: JobId, partition: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(192);
    let mut x = job.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (partition as u64);
    while out.len() < 192 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}
