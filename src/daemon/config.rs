//! The daemon's configuration: a TOML file (ours, or Curio's `cuzk.toml`, whose keys
//! [`super::curio_config`] translates), then environment overrides, then checks.
//!
//! Every key has a default, so an empty file (or none) is a working configuration: a unix
//! socket at [`DEFAULT_SOCKET`], every GPU found (else the CPU), parameters from
//! `$FIL_PROOFS_PARAMETER_CACHE`. `cuzk config example` prints [`EXAMPLE`], the commented
//! default file; a test keeps it parseable and equal to the defaults.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::error::{DaemonError, Result};
use super::listen::ListenAddr;
use crate::{ProofKind, SectorSize};
use cuzk_actors::Priority;

/// Where the daemon listens unless told otherwise (Curio's default address).
pub const DEFAULT_SOCKET: &str = "/run/curio/cuzk.sock";

/// The commented default configuration, as `cuzk config example` prints it.
pub const EXAMPLE: &str = include_str!("example.toml");

/// Environment variables that override configuration keys: `(variable, "section.key")`.
/// Values are TOML literals (`64`, `true`, `["0000:41:00"]`) or bare strings.
pub const ENV_OVERRIDES: &[(&str, &str)] = &[
    ("CUZK_LISTEN", "daemon.listen"),
    ("CUZK_METRICS_LISTEN", "daemon.metrics_listen"),
    ("CUZK_SHUTDOWN_GRACE_SECS", "daemon.shutdown_grace_secs"),
    ("CUZK_LOG_FORMAT", "daemon.log_format"),
    ("CUZK_LOG", "daemon.log_filter"),
    ("CUZK_DEVICES", "devices.gpus"),
    ("CUZK_BACKEND", "devices.backend"),
    ("CUZK_KERNEL_CACHE", "devices.kernel_cache"),
    ("CUZK_HOST_MEMORY_BUDGET", "memory.host_budget"),
    ("CUZK_PARAMS_DIR", "params.dir"),
    ("CUZK_PCE_CACHE", "params.pce_dir"),
    ("CUZK_PRELOAD", "params.preload"),
    ("CUZK_MAX_MESSAGE_BYTES", "limits.max_message_bytes"),
    (
        "CUZK_MAX_OUTSTANDING_PARTITIONS",
        "limits.max_outstanding_partitions",
    ),
    ("CUZK_JOB_TIMEOUT_SECS", "limits.job_timeout_secs"),
    ("CUZK_OTLP_ENDPOINT", "telemetry.otlp_endpoint"),
];

/// The whole configuration file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// Listening, logging, shutdown.
    pub daemon: ServerSection,
    /// Which devices prove.
    pub devices: DevicesSection,
    /// Memory budgets.
    pub memory: MemorySection,
    /// Parameter and PCE caches.
    pub params: ParamsSection,
    /// Default priority of each proof kind.
    pub priorities: PrioritiesSection,
    /// Limits on requests and queues.
    pub limits: LimitsSection,
    /// Span export to an OpenTelemetry collector.
    pub telemetry: crate::telemetry::TelemetryConfig,
    /// What was done with keys of Curio's own `cuzk.toml` ([`super::curio_config`]): one
    /// line each, logged at start and printed by `cuzk config check`.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// `[daemon]`: how it is reached and how it logs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    /// gRPC address: `unix:///path` (default) or `tcp://host:port` / `host:port`.
    pub listen: ListenAddr,
    /// HTTP address for `/metrics`, `/healthz` and `/status` (`host:port`); `None` serves
    /// none.
    #[serde(deserialize_with = "empty_is_none")]
    pub metrics_listen: Option<String>,
    /// Who may see the status page at `/status` on that address.
    pub status_page: StatusPageAccess,
    /// Seconds running work may take to finish after SIGTERM before it is cancelled.
    pub shutdown_grace_secs: u64,
    /// `text` (human-readable, coloured on a terminal) or `json` (one object per line).
    pub log_format: LogFormat,
    /// `tracing` filter (`RUST_LOG` syntax); `RUST_LOG` wins when set.
    pub log_filter: String,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            listen: ListenAddr::Unix(PathBuf::from(DEFAULT_SOCKET)),
            metrics_listen: None,
            status_page: StatusPageAccess::Local,
            shutdown_grace_secs: 60,
            log_format: LogFormat::Text,
            log_filter: "info".into(),
        }
    }
}

/// Who may see the status page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatusPageAccess {
    /// Clients on the loopback interface only (the default).
    Local,
    /// Every client that reaches the HTTP address.
    All,
    /// Not served.
    Off,
}

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines (coloured on a terminal).
    Text,
    /// One JSON object per line.
    Json,
}

/// `[devices]`: which devices prove.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DevicesSection {
    /// `auto` (every GPU found, else the CPU), `gpu` (GPUs only: fail without one), `cpu`,
    /// or `dual` (the GPUs, each checked against the CPU on every operation: debugging).
    pub backend: Backend,
    /// GPUs by PCI id (`0000:41:00`) or UUID (`GPU-...`); empty = every GPU found. Ordinals
    /// are accepted and resolved to a PCI id once, at start.
    pub gpus: Vec<String>,
    /// Threads building circuits and witnesses; 0 = one per two cores, at least one.
    pub synthesis_workers: usize,
    /// Leases a GPU may hold at once, 1 to 4: 2 uploads the next partition while the current
    /// one's kernels run (where device memory holds both reservations); 1 turns that off.
    pub pipeline_depth: usize,
    /// Device memory each GPU's leases may use (`"16GiB"`); 0 = the whole card. Circuits
    /// that do not fit resident are streamed from host memory.
    pub memory_limit: ByteSize,
    /// Streams every circuit's parameters in chunks of this many G1 points; 0 = automatic
    /// (resident where they fit).
    pub stream_chunk_points: usize,
    /// OS niceness of the synthesis threads, 0 to 19: above the device threads' 0, so that
    /// a device never waits for a core behind synthesis; 0 = as the daemon.
    pub synthesis_niceness: i32,
    /// Where compiled GPU kernels are cached; default `$XDG_CACHE_HOME/cuzk/kernels`, else
    /// `~/.cache/cuzk/kernels`.
    #[serde(deserialize_with = "empty_path_is_none")]
    pub kernel_cache: Option<PathBuf>,
}

impl Default for DevicesSection {
    fn default() -> Self {
        DevicesSection {
            backend: Backend::Auto,
            gpus: Vec::new(),
            synthesis_workers: 0,
            pipeline_depth: 2,
            memory_limit: ByteSize(0),
            stream_chunk_points: 0,
            synthesis_niceness: cuzk_actors::DEFAULT_SYNTHESIS_NICENESS,
            kernel_cache: None,
        }
    }
}

/// Device backend choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// GPUs when present, else the CPU.
    Auto,
    /// GPUs only.
    Gpu,
    /// The CPU only.
    Cpu,
    /// The GPUs, each operation of every partition run on the CPU too and compared; a
    /// difference fails the partition, naming the operation. For debugging a device: slower
    /// than the CPU alone. Fails to start without a GPU.
    Dual,
}

/// `[memory]`: budgets.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemorySection {
    /// Host memory synthesised partitions may hold before synthesis waits (back-pressure),
    /// bytes (`"64GiB"` accepted); 0 = three quarters of the machine's memory.
    pub host_budget: ByteSize,
}

/// `[params]`: where parameters and recorded circuits live.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParamsSection {
    /// Parameter directory; default `$FIL_PROOFS_PARAMETER_CACHE`, else
    /// `/var/tmp/filecoin-proof-parameters`.
    #[serde(deserialize_with = "empty_path_is_none")]
    pub dir: Option<PathBuf>,
    /// Recorded-circuit (PCE) cache; default `<dir>/cuzk-pce`.
    #[serde(deserialize_with = "empty_path_is_none")]
    pub pce_dir: Option<PathBuf>,
    /// Circuits to load at start (`wpost-32g`, `winning-32g`, ...).
    pub preload: Vec<String>,
}

impl ParamsSection {
    /// The parameter directory after defaults.
    pub fn dir(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(crate::srs::default_dir)
    }

    /// The PCE directory after defaults.
    pub fn pce_dir(&self) -> PathBuf {
        self.pce_dir
            .clone()
            .unwrap_or_else(|| self.dir().join("cuzk-pce"))
    }
}

/// `[priorities]`: the priority a request with `PRIORITY_UNSPECIFIED` gets.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrioritiesSection {
    /// WinningPoSt (default `critical`: a block is at stake).
    pub winning_post: PriorityName,
    /// WindowPoSt (default `high`).
    pub window_post: PriorityName,
    /// PoRep C2 (default `normal`).
    pub porep_c2: PriorityName,
    /// SnapDeals (default `normal`).
    pub snap_deals: PriorityName,
}

impl Default for PrioritiesSection {
    fn default() -> Self {
        PrioritiesSection {
            winning_post: PriorityName(Priority::Critical),
            window_post: PriorityName(Priority::High),
            porep_c2: PriorityName(Priority::Normal),
            snap_deals: PriorityName(Priority::Normal),
        }
    }
}

impl PrioritiesSection {
    /// The default priority of `kind`.
    pub fn of(&self, kind: ProofKind) -> Priority {
        match kind {
            ProofKind::WinningPost => self.winning_post.0,
            ProofKind::WindowPost => self.window_post.0,
            ProofKind::PorepC2 => self.porep_c2.0,
            ProofKind::SnapDeals => self.snap_deals.0,
        }
    }
}

/// A priority written by name: `low`, `normal`, `high`, `critical`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PriorityName(pub Priority);

impl<'de> Deserialize<'de> for PriorityName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.to_ascii_lowercase().as_str() {
            "low" => Ok(PriorityName(Priority::Low)),
            "normal" => Ok(PriorityName(Priority::Normal)),
            "high" => Ok(PriorityName(Priority::High)),
            "critical" => Ok(PriorityName(Priority::Critical)),
            _ => Err(serde::de::Error::custom(format!(
                "unknown priority {s:?} (expected low, normal, high or critical)"
            ))),
        }
    }
}

/// `[limits]`: what one request and the queues may hold.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    /// Largest gRPC message accepted or sent, bytes. Default 256 MiB: a 32 GiB C1 JSON is
    /// ~50 MB, 64 GiB about twice that, and Curio sends up to 256 MiB.
    pub max_message_bytes: ByteSize,
    /// Largest vanilla proof list (PoSt sectors or SnapDeals partitions) in one request.
    pub max_vanilla_proofs: usize,
    /// Unfinished partitions (of all jobs) at most; beyond, SubmitProof answers
    /// RESOURCE_EXHAUSTED.
    pub max_outstanding_partitions: usize,
    /// A job running longer than this fails with cause `timeout`; 0 = no limit.
    pub job_timeout_secs: u64,
    /// Attempts per partition before its job fails.
    pub max_attempts: u32,
    /// Finished jobs whose results stay awaitable (the oldest are forgotten first).
    pub retained_results: usize,
    /// Verify every proof before returning it (turning this off is for benchmarks only).
    pub verify_proofs: bool,
}

impl Default for LimitsSection {
    fn default() -> Self {
        LimitsSection {
            max_message_bytes: ByteSize(256 << 20),
            max_vanilla_proofs: 20_000,
            max_outstanding_partitions: 10_000,
            job_timeout_secs: 0,
            max_attempts: 3,
            retained_results: 4_096,
            verify_proofs: true,
        }
    }
}

impl LimitsSection {
    /// The job timeout, if any.
    pub fn job_timeout(&self) -> Option<Duration> {
        (self.job_timeout_secs > 0).then(|| Duration::from_secs(self.job_timeout_secs))
    }
}

/// A byte count, written as an integer or with a unit (`"64GiB"`, `"512 MiB"`, `"2G"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let n: u64 = num
            .parse()
            .map_err(|_| format!("{s:?} is not a byte count (e.g. 1073741824 or \"64GiB\")"))?;
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kib" => 1 << 10,
            "m" | "mib" => 1 << 20,
            "g" | "gib" => 1 << 30,
            "t" | "tib" => 1 << 40,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            "tb" => 1_000_000_000_000,
            other => return Err(format!("unknown unit {other:?} in {s:?}")),
        };
        n.checked_mul(mult)
            .map(ByteSize)
            .ok_or_else(|| format!("{s:?} does not fit in 64 bits"))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

pub(crate) fn empty_is_none<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<String>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    Ok(s.filter(|s| !s.trim().is_empty()))
}

fn empty_path_is_none<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<PathBuf>, D::Error> {
    Ok(empty_is_none(d)?.map(PathBuf::from))
}

impl DaemonConfig {
    /// Reads `path` (or the defaults when `None`), applies the environment overrides of
    /// [`ENV_OVERRIDES`] read through `env`, and checks the result.
    pub fn load(
        path: Option<&std::path::Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let text = match path {
            Some(p) => std::fs::read_to_string(p).map_err(|e| DaemonError::Config {
                source_name: p.display().to_string(),
                reason: e.to_string(),
            })?,
            None => String::new(),
        };
        let name = path
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "<defaults>".into());
        Self::parse(&text, &name, env)
    }

    /// Parses TOML `text` (named `source_name` in errors), applies environment overrides and
    /// checks the result.
    pub fn parse(
        text: &str,
        source_name: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let bad = |reason: String| DaemonError::Config {
            source_name: source_name.into(),
            reason,
        };
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| bad(e.to_string()))?;
        let notes = super::curio_config::translate(&mut table);
        for (var, key) in ENV_OVERRIDES {
            if let Some(value) = env(var) {
                apply_override(&mut table, key, &value).map_err(|reason| DaemonError::Config {
                    source_name: format!("environment variable {var}"),
                    reason,
                })?;
            }
        }
        let mut config: DaemonConfig = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| bad(e.to_string()))?;
        config.check().map_err(bad)?;
        config.notes = notes;
        Ok(config)
    }

    /// Checks values that parse but cannot work.
    fn check(&self) -> std::result::Result<(), String> {
        let l = &self.limits;
        if l.max_message_bytes.0 < 1 << 20 {
            return Err(format!(
                "limits.max_message_bytes = {} is below 1 MiB: no proof request would fit",
                l.max_message_bytes.0
            ));
        }
        if l.max_message_bytes.0 > (u32::MAX as u64) {
            return Err("limits.max_message_bytes must be below 4 GiB".into());
        }
        if l.max_vanilla_proofs == 0
            || l.max_outstanding_partitions == 0
            || l.max_attempts == 0
            || l.retained_results == 0
        {
            return Err("limits.max_vanilla_proofs, max_outstanding_partitions, max_attempts and retained_results must be at least 1".into());
        }
        for c in &self.params.preload {
            parse_circuit_id(c).map_err(|e| format!("params.preload: {e}"))?;
        }
        for g in &self.devices.gpus {
            g.parse::<cuzk_actors::DeviceSelector>()
                .map_err(|e| format!("devices.gpus: {e}"))?;
        }
        if !(1..=4).contains(&self.devices.pipeline_depth) {
            return Err(format!(
                "devices.pipeline_depth = {} must be 1 to 4",
                self.devices.pipeline_depth
            ));
        }
        let max = cuzk_actors::MAX_SYNTHESIS_NICENESS;
        if !(0..=max).contains(&self.devices.synthesis_niceness) {
            return Err(format!(
                "devices.synthesis_niceness = {} must be 0 to {max}",
                self.devices.synthesis_niceness
            ));
        }
        if self.devices.backend == Backend::Cpu && !self.devices.gpus.is_empty() {
            return Err("devices.gpus names GPUs but devices.backend = \"cpu\"".into());
        }
        Ok(())
    }
}

/// Sets `section.key` in `table` to `value`, read as a TOML literal when it is one, else as a
/// string.
fn apply_override(
    table: &mut toml::Table,
    key: &str,
    value: &str,
) -> std::result::Result<(), String> {
    let (section, field) = key
        .split_once('.')
        .ok_or_else(|| format!("bad override key {key}"))?;
    let parsed: toml::Value = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    // A list-valued key given as `a,b` (no brackets) is a list of strings.
    let parsed = match (key, parsed) {
        ("devices.gpus" | "params.preload", toml::Value::String(s)) => toml::Value::Array(
            s.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| toml::Value::String(s.to_string()))
                .collect(),
        ),
        (_, v) => v,
    };
    let entry = table
        .entry(section.to_string())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let sub = entry
        .as_table_mut()
        .ok_or_else(|| format!("[{section}] is not a table"))?;
    sub.insert(field.to_string(), parsed);
    Ok(())
}

/// Parses a circuit id of the wire contract (`porep-32g`, `wpost-2k`, `winning-32g`,
/// `snap-512m`, ...) into a kind and sector size. Our own kind names (`window-post-2KiB`)
/// are accepted too.
pub fn parse_circuit_id(id: &str) -> std::result::Result<(ProofKind, SectorSize), String> {
    let t = id.trim().to_ascii_lowercase();
    let (kind, size) = t
        .rsplit_once('-')
        .ok_or_else(|| format!("circuit id {id:?} is not <kind>-<size> (e.g. wpost-32g)"))?;
    let kind = match kind {
        "porep" | "porep-c2" | "seal" => ProofKind::PorepC2,
        "wpost" | "window" | "window-post" => ProofKind::WindowPost,
        "winning" | "winning-post" | "wnpost" => ProofKind::WinningPost,
        "snap" | "snap-deals" | "update" => ProofKind::SnapDeals,
        other => {
            return Err(format!(
                "circuit id {id:?}: unknown kind {other:?} (porep, wpost, winning or snap)"
            ))
        }
    };
    let size: SectorSize = size.parse().map_err(|_| {
        format!("circuit id {id:?}: unknown sector size {size:?} (2k, 8m, 512m, 32g or 64g)")
    })?;
    Ok((kind, size))
}

/// The wire contract's circuit id of a kind and size (`wpost-32g`).
pub fn circuit_id(kind: ProofKind, size: SectorSize) -> String {
    let k = match kind {
        ProofKind::PorepC2 => "porep",
        ProofKind::WindowPost => "wpost",
        ProofKind::WinningPost => "winning",
        ProofKind::SnapDeals => "snap",
    };
    let s = match size {
        SectorSize::S2KiB => "2k",
        SectorSize::S8MiB => "8m",
        SectorSize::S512MiB => "512m",
        SectorSize::S32GiB => "32g",
        SectorSize::S64GiB => "64g",
    };
    format!("{k}-{s}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn example_parses_to_the_defaults() {
        let from_example = DaemonConfig::parse(EXAMPLE, "example", no_env).unwrap();
        let defaults = DaemonConfig::parse("", "empty", no_env).unwrap();
        assert_eq!(format!("{from_example:?}"), format!("{defaults:?}"));
        assert_eq!(
            defaults.daemon.listen,
            ListenAddr::Unix(PathBuf::from(DEFAULT_SOCKET))
        );
        assert_eq!(defaults.limits.max_message_bytes, ByteSize(256 << 20));
        assert_eq!(
            defaults.priorities.of(ProofKind::WinningPost),
            Priority::Critical
        );
    }

    #[test]
    fn environment_overrides_the_file() {
        let env = |k: &str| match k {
            "CUZK_LISTEN" => Some("tcp://127.0.0.1:9820".to_string()),
            "CUZK_DEVICES" => Some("0000:41:00, GPU-00112233-4455-6677-8899-aabbccddeeff".into()),
            "CUZK_HOST_MEMORY_BUDGET" => Some("64GiB".into()),
            "CUZK_JOB_TIMEOUT_SECS" => Some("90".into()),
            _ => None,
        };
        let c = DaemonConfig::parse(
            "[daemon]\nlisten = \"unix:///tmp/x.sock\"\n[limits]\njob_timeout_secs = 5\n",
            "t",
            env,
        )
        .unwrap();
        assert_eq!(c.daemon.listen.to_string(), "tcp://127.0.0.1:9820");
        assert_eq!(c.devices.gpus.len(), 2);
        assert_eq!(c.memory.host_budget, ByteSize(64 << 30));
        assert_eq!(c.limits.job_timeout_secs, 90);
    }

    #[test]
    fn cache_directories_come_from_the_file_or_the_environment_else_their_defaults() {
        let c = DaemonConfig::parse("[params]\ndir = \"/p\"\n", "t", no_env).unwrap();
        assert_eq!(c.params.pce_dir(), PathBuf::from("/p/cuzk-pce"));
        assert_eq!(c.devices.kernel_cache, None);
        let file = "[params]\npce_dir = \"/f/pce\"\n[devices]\nkernel_cache = \"/f/k\"\n";
        let c = DaemonConfig::parse(file, "t", no_env).unwrap();
        assert_eq!(c.params.pce_dir(), PathBuf::from("/f/pce"));
        assert_eq!(c.devices.kernel_cache, Some(PathBuf::from("/f/k")));
        let env = |k: &str| match k {
            "CUZK_PCE_CACHE" => Some("/e/pce".to_string()),
            "CUZK_KERNEL_CACHE" => Some("/e/k".to_string()),
            _ => None,
        };
        let c = DaemonConfig::parse(file, "t", env).unwrap();
        assert_eq!(c.params.pce_dir(), PathBuf::from("/e/pce"));
        assert_eq!(c.devices.kernel_cache, Some(PathBuf::from("/e/k")));
    }

    #[test]
    fn the_dual_backend_is_a_choice_of_the_file_and_the_environment() {
        let c = DaemonConfig::parse("[devices]\nbackend = \"dual\"\n", "t", no_env).unwrap();
        assert_eq!(c.devices.backend, Backend::Dual);
        let env = |k: &str| (k == "CUZK_BACKEND").then(|| "dual".to_string());
        let c = DaemonConfig::parse("", "t", env).unwrap();
        assert_eq!(c.devices.backend, Backend::Dual);
        let e = DaemonConfig::parse("[devices]\nbackend = \"tpu\"\n", "f.toml", no_env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tpu") && e.contains("dual"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key_and_source() {
        let cases = [
            ("[daemon]\nlisten = \"ftp://x\"\n", "listen"),
            ("[limits]\nmax_message_bytes = \"12 parsecs\"\n", "parsecs"),
            ("[priorities]\nwinning_post = \"urgent\"\n", "urgent"),
            ("[devices]\ngpus = [\"zz:zz\"]\n", "devices.gpus"),
            ("[devices]\npipeline_depth = 0\n", "devices.pipeline_depth"),
            (
                "[devices]\nsynthesis_niceness = 20\n",
                "devices.synthesis_niceness",
            ),
            ("[params]\npreload = [\"porep-3g\"]\n", "params.preload"),
            ("[limits]\nmax_message_bytes = 1000\n", "below 1 MiB"),
            ("[daemon]\nlisten_addr = \"x\"\n", "unknown field"),
        ];
        for (text, want) in cases {
            let e = DaemonConfig::parse(text, "f.toml", no_env)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.contains("f.toml"), "{text}: {e}");
        }
        let env = |k: &str| (k == "CUZK_MAX_OUTSTANDING_PARTITIONS").then(|| "many".to_string());
        let e = DaemonConfig::parse("", "f", env).unwrap_err().to_string();
        assert!(e.contains("max_outstanding_partitions"), "{e}");
    }

    #[test]
    fn circuit_ids_round_trip() {
        for kind in ProofKind::ALL {
            for size in SectorSize::ALL {
                assert_eq!(
                    parse_circuit_id(&circuit_id(kind, size)).unwrap(),
                    (kind, size)
                );
            }
        }
        assert!(parse_circuit_id("porep").is_err());
        assert!(parse_circuit_id("gpu-32g").is_err());
        assert_eq!(
            parse_circuit_id("window-post-2KiB").unwrap(),
            (ProofKind::WindowPost, SectorSize::S2KiB)
        );
    }

    #[test]
    fn byte_sizes() {
        assert_eq!("64GiB".parse::<ByteSize>().unwrap(), ByteSize(64 << 30));
        assert_eq!("512 MiB".parse::<ByteSize>().unwrap(), ByteSize(512 << 20));
        assert_eq!("1000".parse::<ByteSize>().unwrap(), ByteSize(1000));
        assert!("99999999999TiB".parse::<ByteSize>().is_err());
        assert!("-1".parse::<ByteSize>().is_err());
    }
}
