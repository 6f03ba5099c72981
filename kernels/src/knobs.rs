//! Environment knobs: variables that override a default for measurements (`CUZK_NTT_COLS`,
//! `CUZK_NTT_TOP`, `CUZK_NTT_FUSE_REV`, `CUZK_H_NEGACYCLIC`, `CUZK_MSM_G2_PAIR`,
//! `CUZK_MSM_CHUNK_LOG`, `CUZK_MSM_SCATTER`, and the engine's `CUZK_MSM_SORT_ONCE`). None of
//! them changes a result, only how it is computed; their callers read each once per process.
//!
//! A value a knob does not accept is ignored with a warning that names the knob, the value and
//! what the knob accepts, so that a mistyped setting (`CUZK_NTT_TOP=off`, which used to mean
//! "on") cannot pass silently for a measurement of the setting it meant.

use std::env::VarError;

/// Knob `name` read by `parse` (given the value with surrounding white space trimmed):
/// `None` when the variable is unset, or when it is set to a value `parse` refuses (or to
/// one that is not Unicode), which is then reported with `tracing::warn!` naming `accepts`.
pub fn read<T>(name: &str, accepts: &str, parse: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    let raw = match std::env::var(name) {
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

/// A switch that is on unless its knob is `0`: `1` or unset mean on, anything else is
/// refused (on, with a warning).
pub fn on_unless_zero(name: &str) -> bool {
    read(name, "0 (off) or 1 (on, the default)", |v| match v {
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

    // Each test sets variables of its own name, so tests running at once do not meet.

    #[test]
    fn unset_valid_and_refused_values() {
        let parse = |v: &str| v.parse::<u32>().ok().filter(|&c| c <= 2);
        assert_eq!(read("CUZK_TEST_KNOB_UNSET", "0..=2", parse), None);
        std::env::set_var("CUZK_TEST_KNOB_VALID", " 2\n");
        assert_eq!(read("CUZK_TEST_KNOB_VALID", "0..=2", parse), Some(2));
        for bad in ["3", "two", ""] {
            std::env::set_var("CUZK_TEST_KNOB_REFUSED", bad);
            assert_eq!(
                read("CUZK_TEST_KNOB_REFUSED", "0..=2", parse),
                None,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn switches_are_on_unless_zero() {
        assert!(on_unless_zero("CUZK_TEST_SWITCH_UNSET"));
        std::env::set_var("CUZK_TEST_SWITCH_OFF", "0");
        assert!(!on_unless_zero("CUZK_TEST_SWITCH_OFF"));
        std::env::set_var("CUZK_TEST_SWITCH_ON", "1");
        assert!(on_unless_zero("CUZK_TEST_SWITCH_ON"));
        // "off" is not a value this switch knows: refused, so the default (on) applies
        std::env::set_var("CUZK_TEST_SWITCH_TYPO", "off");
        assert!(on_unless_zero("CUZK_TEST_SWITCH_TYPO"));
    }
}
