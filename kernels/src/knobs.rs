//! Environment knobs: variables that override a default for measurements (`CUZK_NTT_COLS`,
//! `CUZK_NTT_TOP`, `CUZK_NTT_FUSE_REV`, `CUZK_H_NEGACYCLIC`, `CUZK_MSM_G2_PAIR`,
//! `CUZK_MSM_CHUNK_LOG`, `CUZK_MSM_SCATTER`, `CUZK_MSM_RUN_FACTOR`, and the engine's
//! `CUZK_MSM_SORT_ONCE` and `CUZK_CPU_BATCH_AFFINE`; and the step timers `CUZK_MSM_PROFILE`
//! and `CUZK_NTT_PROFILE`, [`crate::profile`]). None of them changes a result, only how it is
//! computed or what is printed. Each is a `static` [`Knob`], read once per process, at its
//! first use.
//!
//! A value a knob does not accept is ignored with a warning that names the knob, the value and
//! what the knob accepts, so that a mistyped setting (`CUZK_NTT_TOP=off`, which used to mean
//! "on") cannot pass silently for a measurement of the setting it meant.

use std::env::VarError;
use std::sync::OnceLock;

/// A knob's value, read from the environment at the first [`Knob::get`] or
/// [`Knob::switch`] and kept for the process (so a transform or an MSM does not read the
/// environment each time). Declare one `static` per knob.
pub struct Knob<T>(OnceLock<T>);

impl<T: Copy> Knob<T> {
    /// A knob not read yet.
    pub const fn new() -> Self {
        Knob(OnceLock::new())
    }

    /// The value of knob `name` by `parse` ([`read`]), else `default`; the same for the
    /// process once read.
    pub fn get(
        &self,
        name: &str,
        accepts: &str,
        default: T,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> T {
        *self
            .0
            .get_or_init(|| read(name, accepts, parse).unwrap_or(default))
    }
}

impl Knob<bool> {
    /// [`on_unless_zero`] for knob `name`, read once.
    pub fn switch(&self, name: &str) -> bool {
        *self.0.get_or_init(|| on_unless_zero(name))
    }
}

impl<T: Copy> Default for Knob<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Knob `name` read by `parse` (given the value with surrounding white space trimmed):
/// `None` when the variable is unset, or when it is set to a value `parse` refuses (or to
/// one that is not Unicode), which is then reported with `tracing::warn!` naming `accepts`.
pub fn read<T>(name: &str, accepts: &str, parse: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    judge(name, std::env::var(name), accepts, parse)
}

/// A switch that is on unless its knob is `0`: `1` or unset mean on, anything else is
/// refused (on, with a warning).
pub fn on_unless_zero(name: &str) -> bool {
    switch(name, std::env::var(name))
}

/// [`read`] given the variable's value (the tests pass values: cuzk never sets variables).
fn judge<T>(
    name: &str,
    var: Result<String, VarError>,
    accepts: &str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Option<T> {
    let raw = match var {
        Ok(raw) => raw,
        Err(VarError::NotPresent) => return None,
        Err(VarError::NotUnicode(raw)) => {
            refused(name, &raw.to_string_lossy(), accepts);
            return None;
        }
    };
    let value = parse(raw.trim());
    if value.is_none() {
        refused(name, &raw, accepts);
    }
    value
}

/// [`on_unless_zero`] given the variable's value.
fn switch(name: &str, var: Result<String, VarError>) -> bool {
    judge(name, var, "0 (off) or 1 (on, the default)", |v| match v {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    })
    .unwrap_or(true)
}

fn refused(name: &str, value: &str, accepts: &str) {
    tracing::warn!(
        knob = name,
        value,
        accepts,
        "ignoring an environment knob's value it does not accept: the default applies"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &str) -> Result<String, VarError> {
        Ok(v.to_string())
    }

    #[test]
    fn unset_valid_and_refused_values() {
        let parse = |v: &str| v.parse::<u32>().ok().filter(|&c| c <= 2);
        assert_eq!(judge("K", Err(VarError::NotPresent), "0..=2", parse), None);
        assert_eq!(judge("K", set(" 2\n"), "0..=2", parse), Some(2));
        assert_eq!(judge("K", set("0"), "0..=2", parse), Some(0));
        for bad in ["3", "two", ""] {
            assert_eq!(judge("K", set(bad), "0..=2", parse), None, "{bad:?}");
        }
        let not_unicode = std::ffi::OsString::from("2");
        assert_eq!(
            judge("K", Err(VarError::NotUnicode(not_unicode)), "0..=2", parse),
            None
        );
        // an unset variable reads as unset through the environment too
        assert_eq!(read("CUZK_TEST_KNOB_NEVER_SET", "0..=2", parse), None);
    }

    #[test]
    fn switches_are_on_unless_zero() {
        assert!(switch("S", Err(VarError::NotPresent)));
        assert!(!switch("S", set("0")));
        assert!(!switch("S", set(" 0 ")));
        assert!(switch("S", set("1")));
        // "off" is not a value a switch knows: refused, so the default (on) applies (switches
        // once took any value but 0 as on, silently)
        assert!(switch("S", set("off")));
        assert!(on_unless_zero("CUZK_TEST_SWITCH_NEVER_SET"));
    }

    #[test]
    fn a_knob_is_read_once() {
        static K: Knob<u32> = Knob::new();
        assert_eq!(K.get("CUZK_TEST_KNOB_ONCE", "any", 7, |_| Some(1)), 7);
        // read already: neither the default nor the parser is consulted again
        assert_eq!(K.get("CUZK_TEST_KNOB_ONCE", "any", 9, |_| Some(2)), 7);
        static S: Knob<bool> = Knob::new();
        assert!(S.switch("CUZK_TEST_SWITCH_ONCE"));
    }
}
