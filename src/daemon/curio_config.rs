//! Curio's `cuzk.toml`, read as ours.
//!
//! Curio documents a configuration for its own proving daemon (sections `[daemon] [srs]
//! [memory] [gpus] [scheduler] [synthesis] [pipeline] [logging]`). An operator who points
//! Curio at this daemon keeps that file: [`translate`] rewrites each of its keys into ours
//! before the file is checked, and says what it did with every key that has no exact
//! counterpart. A key of Curio's is never a refusal; a key neither daemon knows still is,
//! inside our own sections (a typo there must not pass silently).
//!
//! | Curio's key | ours |
//! |---|---|
//! | `daemon.listen` | `daemon.listen` (same forms: `unix:///path`, `host:port`) |
//! | `daemon.status_listen` | `daemon.metrics_listen` (`/metrics`, `/healthz`) |
//! | `srs.param_cache` | `params.dir` |
//! | `srs.preload` | `params.preload` (the same circuit ids, e.g. `porep-32g`) |
//! | `memory.total_budget` | `memory.host_budget` (`"auto"`: our default) |
//! | `gpus.devices` (ordinals) | `devices.gpus` (resolved to PCI ids at start) |
//! | `gpus.gpu_workers_per_device` | `devices.pipeline_depth` (1 to 4) |
//! | `synthesis.partition_workers` | `devices.synthesis_workers` |
//! | `logging.level` | `daemon.log_filter` |
//! | `logging.format` | `daemon.log_format` |
//!
//! Every other key of Curio's (`memory.safety_margin`, `memory.eviction_min_idle`,
//! `gpus.gpu_threads`, `scheduler.*`, `synthesis.threads`, `pipeline.*`, ...) tunes a
//! mechanism this daemon does not have: it is ignored with a warning naming it.

use toml::{Table, Value};

/// Sections only Curio's daemon has: every key in them is Curio's.
const CURIO_SECTIONS: &[&str] = &[
    "srs",
    "gpus",
    "scheduler",
    "synthesis",
    "pipeline",
    "logging",
];

/// Keys of Curio's inside sections both daemons have.
const CURIO_KEYS_IN_SHARED: &[(&str, &str)] = &[
    ("daemon", "status_listen"),
    ("memory", "total_budget"),
    ("memory", "safety_margin"),
    ("memory", "eviction_min_idle"),
    ("memory", "pinned_budget"),
    ("memory", "working_memory_budget"),
];

/// Why a key of Curio's has no effect here, for the warning.
fn ignored_reason(section: &str, key: &str) -> &'static str {
    match (section, key) {
        ("memory", "safety_margin" | "pinned_budget" | "working_memory_budget") => {
            "memory.host_budget is the one host-memory budget here"
        }
        ("memory", "eviction_min_idle") => "parameters stay loaded until EvictSRS",
        ("gpus", "gpu_threads") => "device threads are one per GPU",
        ("synthesis", "threads") => "the synthesis pool takes the host's cores",
        ("scheduler", _) => "partitions are leased one at a time by priority, never batched",
        ("pipeline", _) => {
            "synthesis always runs ahead of the devices, bounded by memory.host_budget"
        }
        _ => "this daemon has no such setting",
    }
}

/// Moves `value` to `section.key` of ours unless the file sets that already (ours wins).
fn put(
    table: &mut Table,
    section: &str,
    key: &str,
    value: Value,
    from: &str,
    notes: &mut Vec<String>,
) {
    let ours = table
        .entry(section)
        .or_insert_with(|| Value::Table(Table::new()));
    let Some(ours) = ours.as_table_mut() else {
        notes.push(format!("{from}: not applied, [{section}] is not a table"));
        return;
    };
    if ours.contains_key(key) {
        notes.push(format!(
            "{from}: not applied, {section}.{key} is set in the same file and wins"
        ));
    } else {
        ours.insert(key.to_string(), value);
    }
}

/// Translates Curio's keys in `table` into ours, in place. Returns one line for every key
/// that was not carried over exactly (ignored, adjusted or overridden), for the log.
pub fn translate(table: &mut Table) -> Vec<String> {
    let mut notes = Vec::new();
    let mut moved: Vec<(String, String, Value)> = Vec::new();
    for section in CURIO_SECTIONS {
        match table.remove(*section) {
            Some(Value::Table(keys)) => {
                for (k, v) in keys {
                    moved.push((section.to_string(), k, v));
                }
            }
            Some(_) => notes.push(format!("[{section}] is not a table: ignored")),
            None => {}
        }
    }
    for (section, key) in CURIO_KEYS_IN_SHARED {
        let taken = table
            .get_mut(*section)
            .and_then(Value::as_table_mut)
            .and_then(|t| t.remove(*key));
        if let Some(v) = taken {
            moved.push((section.to_string(), key.to_string(), v));
        }
    }
    for (section, key, value) in moved {
        let from = format!("Curio's {section}.{key}");
        match (section.as_str(), key.as_str()) {
            ("daemon", "status_listen") => {
                notes.push(format!("{from}: serves /metrics and /healthz (no /status JSON) as daemon.metrics_listen"));
                put(table, "daemon", "metrics_listen", value, &from, &mut notes);
            }
            ("srs", "param_cache") => put(table, "params", "dir", value, &from, &mut notes),
            ("srs", "preload") => put(table, "params", "preload", value, &from, &mut notes),
            ("memory", "total_budget") => match value.as_str() {
                Some("auto") => {}
                _ => put(table, "memory", "host_budget", value, &from, &mut notes),
            },
            ("gpus", "devices") => {
                let ordinals = value.as_array().map(|a| {
                    a.iter()
                        .map(|v| match v {
                            Value::Integer(n) => Value::String(n.to_string()),
                            other => other.clone(),
                        })
                        .collect::<Vec<_>>()
                });
                match ordinals {
                    Some(list) => put(
                        table,
                        "devices",
                        "gpus",
                        Value::Array(list),
                        &from,
                        &mut notes,
                    ),
                    None => notes.push(format!("{from}: not a list of GPU ordinals, ignored")),
                }
            }
            ("gpus", "gpu_workers_per_device") => {
                match value.as_integer() {
                    Some(n) => {
                        let depth = n.clamp(1, 4);
                        if depth != n {
                            notes.push(format!("{from} = {n}: devices.pipeline_depth = {depth} (1 to 4 leases a GPU)"));
                        }
                        put(
                            table,
                            "devices",
                            "pipeline_depth",
                            Value::Integer(depth),
                            &from,
                            &mut notes,
                        );
                    }
                    None => notes.push(format!("{from}: not a number, ignored")),
                }
            }
            ("synthesis", "partition_workers") => put(
                table,
                "devices",
                "synthesis_workers",
                value,
                &from,
                &mut notes,
            ),
            ("logging", "level") => put(table, "daemon", "log_filter", value, &from, &mut notes),
            ("logging", "format") => {
                let format = match value.as_str() {
                    Some("json") => "json",
                    other => {
                        notes.push(format!(
                            "{from} = {other:?}: text logs (json and text exist here)"
                        ));
                        "text"
                    }
                };
                put(
                    table,
                    "daemon",
                    "log_format",
                    Value::String(format.into()),
                    &from,
                    &mut notes,
                );
            }
            (s, k) => notes.push(format!("{from}: ignored ({})", ignored_reason(s, k))),
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curio_keys_move_to_ours_and_the_rest_are_named() {
        let mut t: Table = r#"
[daemon]
listen = "0.0.0.0:9820"
status_listen = "0.0.0.0:9821"
[srs]
param_cache = "/data/zk/params"
[memory]
total_budget = "auto"
safety_margin = "5GiB"
[gpus]
devices = [0, 1]
gpu_workers_per_device = 8
[logging]
level = "debug"
[scheduler]
max_batch_size = 1
"#
        .parse()
        .unwrap();
        let notes = translate(&mut t);
        assert_eq!(t["daemon"]["listen"].as_str(), Some("0.0.0.0:9820"));
        assert_eq!(t["daemon"]["metrics_listen"].as_str(), Some("0.0.0.0:9821"));
        assert_eq!(t["daemon"]["log_filter"].as_str(), Some("debug"));
        assert_eq!(t["params"]["dir"].as_str(), Some("/data/zk/params"));
        assert_eq!(t["devices"]["gpus"].as_array().unwrap().len(), 2);
        assert_eq!(t["devices"]["pipeline_depth"].as_integer(), Some(4));
        assert!(t["memory"].as_table().unwrap().is_empty(), "{t:?}");
        for name in [
            "safety_margin",
            "scheduler.max_batch_size",
            "gpu_workers_per_device = 8",
        ] {
            assert!(notes.iter().any(|n| n.contains(name)), "{name}: {notes:?}");
        }
        // ours wins over Curio's where both are set
        let mut t: Table = "[params]\ndir = \"/ours\"\n[srs]\nparam_cache = \"/theirs\"\n"
            .parse()
            .unwrap();
        let notes = translate(&mut t);
        assert_eq!(t["params"]["dir"].as_str(), Some("/ours"));
        assert!(notes[0].contains("wins"), "{notes:?}");
    }
}
