//! Step timing for measurements. A device whose [`StepTiming`] (a setting of the device,
//! defined with it) turns on the MSMs (and the engine's steps that build a partition's query
//! scalars) or the transforms' passes times each step apart on stderr as
//! `<label> <step>: <time>`, the device synchronised after it: the operation runs slower, so
//! this is for measurements only (`kernels_bench --profile`, `gpu_partition_bench --profile`),
//! never part of a daemon's or an engine's configuration.

use std::fmt::Display;
use std::time::Instant;

use crate::device::GpuDevice;
pub use crate::device::StepTiming;

/// The steps of one operation, each printed with the time since the previous mark (or since
/// [`Steps::new`]). Off, it prints nothing, never synchronises, and its label is not built.
pub struct Steps {
    /// The label, when on.
    label: Option<String>,
    last: Instant,
}

impl Steps {
    /// Timing starts now; `label` names the operation (built only when `on`).
    pub fn new(on: bool, label: impl FnOnce() -> String) -> Self {
        Steps {
            label: on.then(label),
            last: Instant::now(),
        }
    }

    /// Waits for `dev`'s stream, then prints the time since the last mark as `step`'s
    /// (`format_args!` builds a step's name without allocating when off).
    pub fn mark(&mut self, dev: &GpuDevice, step: impl Display) {
        if let Some(label) = &self.label {
            let _ = dev.stream().synchronize();
            eprintln!("{label} {step}: {:.2?}", self.last.elapsed());
            self.last = Instant::now();
        }
    }

    /// Prints a line about the operation (no time).
    pub fn note(&self, line: impl Display) {
        if let Some(label) = &self.label {
            eprintln!("{label} {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_takes_the_three_names() {
        assert_eq!(
            StepTiming::parse("msm").map(|t| (t.msm, t.ntt)),
            Some((true, false))
        );
        assert_eq!(
            StepTiming::parse("ntt").map(|t| (t.msm, t.ntt)),
            Some((false, true))
        );
        assert_eq!(
            StepTiming::parse("all").map(|t| (t.msm, t.ntt)),
            Some((true, true))
        );
        assert_eq!(StepTiming::parse("1"), None);
        assert_eq!(
            StepTiming::default(),
            StepTiming::parse("none").unwrap_or_default()
        );
    }

    #[test]
    fn off_builds_no_label() {
        let s = Steps::new(false, || {
            unreachable!("the label of steps that print nothing")
        });
        assert!(s.label.is_none());
        s.note("not printed");
        let on = Steps::new(true, || "msm G1 n=3".to_string());
        assert_eq!(on.label.as_deref(), Some("msm G1 n=3"));
    }
}
