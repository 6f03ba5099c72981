//! Why a job failed: a [`FailureCause`] decided where the failure happens and carried with
//! its message to every reader (waiters, `on_job_done` reports, the daemon's metrics and wire
//! answers). Nothing downstream classifies a failure by reading its text. A device's own
//! account of a failed attempt is a [`DeviceFault`], classified here too.

/// The class of a job's failure. Operators alert on it, so each value names who must act:
/// the submitter (`InvalidInput`), the operator (`Params`, `Device`, `Timeout`), or cuzk's
/// developers (`Synthesis`, `Verification`, `Internal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureCause {
    /// The request's content cannot be proved (found after submit, while building its
    /// circuit or matching its public inputs).
    InvalidInput,
    /// The parameter (SRS) files are missing or unusable.
    Params,
    /// Building a partition's witness or constraint evaluations failed or panicked.
    Synthesis,
    /// Devices failed a partition too many times, or no device can run it.
    Device,
    /// Devices produced proofs that do not verify, too many times.
    Verification,
    /// The job did not finish within its timeout.
    Timeout,
    /// A fault inside the engine itself (a device answered other work than it was given).
    Internal,
}

impl FailureCause {
    /// Every cause, for exporters that list each one (e.g. metrics with zero counts).
    pub const ALL: [FailureCause; 7] = [
        FailureCause::InvalidInput,
        FailureCause::Params,
        FailureCause::Synthesis,
        FailureCause::Device,
        FailureCause::Verification,
        FailureCause::Timeout,
        FailureCause::Internal,
    ];

    /// The stable short name used in metrics labels and the wire's `failure_cause`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCause::InvalidInput => "invalid-input",
            FailureCause::Params => "params",
            FailureCause::Synthesis => "synthesis",
            FailureCause::Device => "device",
            FailureCause::Verification => "verification",
            FailureCause::Timeout => "timeout",
            FailureCause::Internal => "internal",
        }
    }

    /// The cause of an engine error. The match is exhaustive on purpose: a new error variant
    /// must be given a cause here.
    pub fn of_engine_error(e: &cuzk_engine::Error) -> FailureCause {
        use cuzk_engine::Error as E;
        match e {
            E::InvalidRequest(_) | E::Decode { .. } | E::Filecoin(_) => FailureCause::InvalidInput,
            E::ParamsMissing { .. } | E::ParamsInvalid { .. } | E::Io { .. } => {
                FailureCause::Params
            }
            E::Synthesis { .. } => FailureCause::Synthesis,
            // a device whose result differs from the CPU's (the dual backend) is faulty
            E::Prover { .. } | E::Device { .. } | E::Mismatch { .. } => FailureCause::Device,
            E::VerificationFailed { .. } => FailureCause::Verification,
        }
    }

    /// The cause of a device's failed attempt.
    pub fn of_device_fault(f: &DeviceFault) -> FailureCause {
        match f {
            DeviceFault::Failed(_) | DeviceFault::Lost(_) => FailureCause::Device,
            DeviceFault::Unverified(_) => FailureCause::Verification,
            DeviceFault::WrongAnswer(_) => FailureCause::Internal,
        }
    }
}

impl std::fmt::Display for FailureCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a device could not prove a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceFault {
    /// This attempt failed; the device may still work (the partition is retried elsewhere,
    /// and repeated failures quarantine the device).
    Failed(String),
    /// The device is gone: it gets no more work and its leases are revoked.
    Lost(String),
    /// The device returned a proof that does not verify (never passed on; the partition is
    /// retried elsewhere, and it counts as a failure of this device).
    Unverified(String),
    /// The device answered with another kind of output than the work it was given: a fault
    /// in the engine, not the device.
    WrongAnswer(String),
}

impl std::fmt::Display for DeviceFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceFault::Failed(r) => write!(f, "failed: {r}"),
            DeviceFault::Lost(r) => write!(f, "device lost: {r}"),
            DeviceFault::Unverified(r) => write!(f, "proof does not verify: {r}"),
            DeviceFault::WrongAnswer(r) => write!(f, "wrong answer: {r}"),
        }
    }
}

/// A failure: its cause and a message for people (naming the job, partition, device or
/// file concerned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// What class of failure this is.
    pub cause: FailureCause,
    /// What happened, for logs and error messages.
    pub message: String,
}

impl Failure {
    /// A failure of `cause` described by `message`.
    pub fn new(cause: FailureCause, message: impl Into<String>) -> Self {
        Failure {
            cause,
            message: message.into(),
        }
    }

    /// The failure an engine error stands for, with the error's message.
    pub fn from_engine(e: &cuzk_engine::Error) -> Self {
        Failure::new(FailureCause::of_engine_error(e), e.to_string())
    }

    /// The same cause with `prefix: ` before the message (context added on the way up).
    pub fn context(self, prefix: impl std::fmt::Display) -> Self {
        Failure {
            cause: self.cause,
            message: format!("{prefix}: {}", self.message),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_stable() {
        let names: std::collections::BTreeSet<_> =
            FailureCause::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), FailureCause::ALL.len());
        assert_eq!(FailureCause::InvalidInput.as_str(), "invalid-input");
        assert_eq!(FailureCause::Timeout.to_string(), "timeout");
    }

    #[test]
    fn engine_errors_map_by_variant_not_by_text() {
        let missing = cuzk_engine::Error::ParamsMissing {
            path: "/x".into(),
            kind: "porep".into(),
            sector_size: "2KiB".into(),
        };
        assert_eq!(
            FailureCause::of_engine_error(&missing),
            FailureCause::Params
        );
        // a message that mentions a timeout is still what its variant says
        let bad = cuzk_engine::Error::InvalidRequest("timed out parsing".into());
        assert_eq!(
            FailureCause::of_engine_error(&bad),
            FailureCause::InvalidInput
        );
        let synth = cuzk_engine::Error::Synthesis {
            partition: 2,
            reason: "device".into(),
        };
        let f = Failure::from_engine(&synth).context("job 7");
        assert_eq!(f.cause, FailureCause::Synthesis);
        assert!(f.message.starts_with("job 7: partition 2"), "{f}");
    }

    #[test]
    fn device_faults_map_to_their_cause() {
        assert_eq!(
            FailureCause::of_device_fault(&DeviceFault::Unverified("p".into())),
            FailureCause::Verification
        );
        assert_eq!(
            FailureCause::of_device_fault(&DeviceFault::Lost("gone".into())),
            FailureCause::Device
        );
        assert_eq!(
            FailureCause::of_device_fault(&DeviceFault::WrongAnswer("x".into())),
            FailureCause::Internal
        );
    }
}
