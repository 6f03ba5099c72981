//! What names a job and ranks it: its id, what it is, its priority class.

use cuzk_engine::ProofKind;

/// Priority classes, numbered as the `cuzk.v1` wire contract numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// Background work.
    Low = 1,
    /// PoRep C2 and SnapDeals by default.
    Normal = 2,
    /// WindowPoSt by default.
    High = 3,
    /// WinningPoSt by default: a block is at stake.
    Critical = 4,
}

/// Identifies a job.
pub type JobId = u64;

/// What a job is, for priorities and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkKind {
    /// A Filecoin proof of this kind.
    Proof(ProofKind),
    /// A simulated job.
    Simulated,
}

impl std::fmt::Display for WorkKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkKind::Proof(k) => write!(f, "{k}"),
            WorkKind::Simulated => f.write_str("simulated"),
        }
    }
}
