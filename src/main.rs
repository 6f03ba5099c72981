//! The `cuzk` command line: prove, verify, generate inputs and parameters, benchmark.

/// mimalloc instead of the system allocator: witness synthesis allocates and frees heavily on
/// many threads at once, and with glibc's allocator two GPUs proved 26-28 mixed proofs per
/// second against 30-31 with mimalloc, on the same machine (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use cuzk::actors::{DeviceSelector, Error as EngineError};
use cuzk::bench::{bench_against_bellperson, BellpersonLogProbe, BenchSummary};
use cuzk::paramgen::products::ProductsOn;
use cuzk::{
    CpuBackend, DeviceChoice, Engine, EngineConfig, Error, JobResult, ProofKind, ProofRequest,
    Randomness, RegisteredProof, Result, SectorSize, SrsStore, SubmitOptions,
};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Parser)]
#[command(
    name = "cuzk",
    version,
    about = "Filecoin Groth16 proving engine: vanilla proofs in, verified SNARKs out"
)]
struct Cli {
    /// Parameter directory (default: $FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters).
    #[arg(long, global = true)]
    params_dir: Option<PathBuf>,
    /// Recorded-circuit (PCE) cache (default: <parameter directory>/cuzk-pce).
    #[arg(long, global = true, env = "CUZK_PCE_CACHE")]
    pce_dir: Option<PathBuf>,
    /// Where compiled GPU kernels are cached (default: $XDG_CACHE_HOME/cuzk/kernels, else
    /// ~/.cache/cuzk/kernels).
    #[arg(long, global = true, env = "CUZK_KERNEL_CACHE")]
    kernel_cache: Option<PathBuf>,
    /// Log every phase span (plan, synthesis, ntt, msm_*, verify) with its duration when it
    /// closes, at the level `RUST_LOG` lets through (e.g. `RUST_LOG=info`). Not the daemon's:
    /// its logging is configured in its file.
    #[arg(long, global = true)]
    log_spans: bool,
    /// Without a command, `cuzk` is the daemon, started as Curio's documentation starts its
    /// own (`cuzk --config /data/zk/cuzk.toml`); these are `cuzk daemon`'s flags.
    #[command(flatten)]
    daemon: cuzk::daemon::DaemonArgs,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

/// Curio's documented place for its daemon's configuration, read when `cuzk` runs without
/// a command and without `--config`.
const CURIO_CONFIG: &str = "/data/zk/cuzk.toml";

#[derive(Subcommand)]
enum Cmd {
    /// Generate small real inputs, prove them on this machine, verify: the quickest tour.
    /// Test parameters go to <tmp>/cuzk-demo-params unless --params-dir is given.
    Demo {
        /// Kinds to prove (default: winning-post and window-post, about a minute on 2 cores).
        #[arg(long = "kind")]
        kinds: Vec<String>,
        /// Seed for the generated sector and test parameters.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Prove a request file (see docs/architecture.md for the format) and write the proof.
    Prove(ProveArgs),
    /// Prove a stream of requests of mixed kinds through the Engine (from `cuzk gen` output),
    /// verify every proof, check the trace for overlap on any device, report throughput.
    Batch(BatchArgs),
    /// Verify proof bytes against a request file.
    Verify {
        /// Request file the proof was made from.
        #[arg(long)]
        input: PathBuf,
        /// Proof bytes.
        #[arg(long)]
        proof: PathBuf,
    },
    /// Write test request files: a sealed test sector for all four kinds (2KiB, 8MiB,
    /// 512MiB), or sparse sectors for PoRep, WinningPoSt and WindowPoSt (32GiB, 64GiB, or any
    /// size with --sparse). Never for a chain.
    Gen {
        /// Output directory (created if missing).
        #[arg(long, short)]
        out: PathBuf,
        /// Sector size (2KiB, 8MiB, 512MiB, 32GiB or 64GiB).
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        /// Build sparse sectors instead of sealing one (the default at 32GiB and 64GiB):
        /// only the challenged nodes and opened paths hold values; seconds at any size.
        #[arg(long)]
        sparse: bool,
        /// Seed for the data, ticket and challenges.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Seal the sector as this registered seal proof (default: the newest interactive
        /// one of the size; 10-14 synthetic PoRep, 15-19 non-interactive PoRep). The size
        /// comes from the proof.
        #[arg(long)]
        registered_proof: Option<u64>,
    },
    /// Generate insecure test parameters (never for mainnet) into the parameter directory
    /// (with porep-c2, a test inner-product SRS for non-interactive PoRep too). 32 and 64 GiB
    /// ones go only into a directory of their own (empty, or marked by an earlier run).
    Params {
        /// Kinds (default: all four).
        #[arg(long = "kind")]
        kinds: Vec<String>,
        /// Sector size.
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        /// Seed of the (toxic, test-only) randomness.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where the fixed-base products (most of the time at 32 GiB) run: `auto` (GPU 0
        /// when CUDA finds one, else the CPU), `cpu` or `gpu` (an error when there is no
        /// GPU). The file is the same either way.
        #[arg(long, default_value = "auto")]
        backend: String,
    },
    /// Benchmark cuzk's prover (on the first GPU when there is one, else the CPU) against
    /// bellperson's CPU create_proof on the same circuit, in the same run.
    Bench {
        /// Kinds (default: porep-c2 and snap-deals).
        #[arg(long = "kind")]
        kinds: Vec<String>,
        /// Which backend proves for cuzk: `auto` (GPU 0 when CUDA finds one, else the CPU),
        /// `cpu`, `gpu` (an error when there is no GPU), or `dual` (the CPU and GPU 0 on
        /// every operation, compared, failing on the first difference: a debug backend,
        /// slower than the CPU alone; an error when there is no GPU).
        #[arg(long, default_value = "auto")]
        backend: String,
        /// Measured runs per kind (after one warm-up).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Sector size.
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
    },
    /// Serve Curio's cuzk.v1 gRPC API on a unix socket or TCP (`cuzk config example`).
    Daemon(cuzk::daemon::DaemonArgs),
    /// Daemon configuration: print the commented default file, check a file.
    #[command(subcommand)]
    Config(cuzk::daemon::ConfigCmd),
    /// Drive a running daemon: prove, await, cancel, status, metrics, preload, evict.
    Client(cuzk::daemon::ClientArgs),
}

// `cuzk prove`'s flags (the help text is the Prove command's).
#[derive(clap::Args)]
struct ProveArgs {
    /// Request file (JSON, format cuzk-request/1).
    #[arg(long, conflicts_with = "c1")]
    input: Option<PathBuf>,
    /// A PoRep C1 output instead of a request file, in any form node software writes:
    /// filecoin-proofs-api's JSON (what `ffi.SealCommitPhase1`, Lotus and Curio keep),
    /// Curio's envelope, or filecoin-proofs' JSON (which needs --registered-proof).
    #[arg(long)]
    c1: Option<PathBuf>,
    /// Registered seal proof number for --c1 (e.g. 5 = StackedDrg2KiBV1_1, 8 = 32GiB V1_1,
    /// 13 = 32GiB synthetic); checked against the one the C1 output names.
    #[arg(long)]
    registered_proof: Option<u64>,
    /// Where to write the proof bytes (concatenated 192-byte partition proofs).
    #[arg(long, short)]
    out: PathBuf,
    /// Use fixed r, s (reproducible proofs, for comparisons); never for production.
    #[arg(long)]
    fixed_rs: bool,
    /// Prove on these GPUs (PCI address like 0000:65:00 or UUID GPU-...; repeatable).
    /// Default: every GPU found, else the CPU.
    #[arg(long = "device", conflicts_with = "cpu")]
    devices: Vec<String>,
    /// Prove on the CPU even when GPUs are present.
    #[arg(long)]
    cpu: bool,
    /// Write a Chrome/Perfetto trace of the run (one track per device) to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
}

// `cuzk batch`'s flags (the help text is the Batch command's).
#[derive(clap::Args)]
struct BatchArgs {
    /// Directory written by `cuzk gen` (2 KiB requests).
    #[arg(long)]
    inputs: PathBuf,
    /// Jobs to prove (cycling through the kinds).
    #[arg(long, default_value_t = 200)]
    count: usize,
    /// Kinds (default: winning-post, window-post, snap-deals, porep-c2).
    #[arg(long = "kind")]
    kinds: Vec<String>,
    /// GPUs to use (PCI address or UUID; repeatable). Default: every GPU, else the CPU.
    #[arg(long = "device", conflicts_with = "cpu")]
    devices: Vec<String>,
    /// Use the CPU only.
    #[arg(long)]
    cpu: bool,
    /// Synthesis workers (default: one per core, at most 32).
    #[arg(long)]
    synthesis_workers: Option<usize>,
    /// Fixed r, s: proofs (and the printed digest) are reproducible across runs.
    #[arg(long)]
    fixed_rs: bool,
    /// Leases a GPU may hold at once: 2 uploads the next partition during the current
    /// one's kernels, 1 proves one after the other.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=4))]
    pipeline_depth: u16,
    /// Trace file (default: <tmp>/cuzk-batch-trace.json).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// OS niceness of the synthesis threads (0 = as the process), so that device threads
    /// get a core first when the host is full.
    #[arg(long, default_value_t = cuzk_actors::DEFAULT_SYNTHESIS_NICENESS, value_parser = clap::value_parser!(i32).range(0..=i64::from(cuzk_actors::MAX_SYNTHESIS_NICENESS)))]
    synthesis_niceness: i32,
}

/// Exit status of a daemon-side command (they install their own logging).
fn exit_with(r: cuzk::daemon::Result<()>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Progress on stderr: a spinner on a terminal, plain lines otherwise.
struct Reporter {
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Reporter {
    fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b.enable_steady_tick(Duration::from_millis(120));
            b
        });
        Reporter {
            bar,
            started: Instant::now(),
        }
    }

    fn step(&self, msg: impl AsRef<str>) {
        match &self.bar {
            Some(b) => b.set_message(msg.as_ref().to_string()),
            None => eprintln!(
                "[{:>7.1}s] {}",
                self.started.elapsed().as_secs_f64(),
                msg.as_ref()
            ),
        }
    }

    fn done(&self, msg: impl AsRef<str>) {
        match &self.bar {
            Some(b) => b.println(format!("  {}", msg.as_ref())),
            None => eprintln!(
                "[{:>7.1}s] {}",
                self.started.elapsed().as_secs_f64(),
                msg.as_ref()
            ),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let flags = dir_flags(&cli);
    let Some(cmd) = cli.cmd else {
        let mut args = cli.daemon;
        if args.config.is_none() && Path::new(CURIO_CONFIG).is_file() {
            args.config = Some(PathBuf::from(CURIO_CONFIG));
        }
        return exit_with(cuzk::daemon::run_daemon(args, flags));
    };
    let d = &cli.daemon;
    if d.config.is_some()
        || d.listen.is_some()
        || d.metrics_listen.is_some()
        || d.log_level.is_some()
    {
        eprintln!("error: --config, --listen, --metrics-listen and --log-level start the daemon: give them without a command, or after `cuzk daemon`");
        return ExitCode::FAILURE;
    }
    let cmd = match cmd {
        Cmd::Daemon(args) => return exit_with(cuzk::daemon::run_daemon(args, flags)),
        Cmd::Config(c) => return exit_with(cuzk::daemon::run_config(c)),
        Cmd::Client(args) => return exit_with(cuzk::daemon::client::run(args)),
        other => other,
    };
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_span_events(if cli.log_spans {
            tracing_subscriber::fmt::format::FmtSpan::CLOSE
        } else {
            tracing_subscriber::fmt::format::FmtSpan::NONE
        });
    if matches!(cmd, Cmd::Bench { .. }) {
        // bench reads bellperson's own `log` timing lines: it owns the `log` logger, so the
        // subscriber is installed without the log bridge.
        BellpersonLogProbe::install();
        let _ = tracing::subscriber::set_global_default(subscriber.finish());
    } else {
        subscriber.init();
    }
    // The demo generates insecure test parameters: unless told otherwise it keeps them in a
    // directory of its own, never in the shared parameter cache where a node would find them.
    let default_dir = match cmd {
        Cmd::Demo { .. } => std::env::temp_dir().join("cuzk-demo-params"),
        _ => cuzk::srs::default_dir(),
    };
    let mut store = SrsStore::new(cli.params_dir.clone().unwrap_or(default_dir));
    if let Some(dir) = cli.pce_dir.clone() {
        store = store.with_pce_dir(Some(dir));
    }
    let dirs = Dirs {
        store,
        kernels: cli.kernel_cache.clone(),
    };
    match run(cmd, &dirs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn kinds_or(kinds: &[String], default: &[ProofKind]) -> Result<Vec<ProofKind>> {
    if kinds.is_empty() {
        return Ok(default.to_vec());
    }
    kinds.iter().map(|k| k.parse()).collect()
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
}

type CliResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// The global directory flags, for the daemon's configuration.
fn dir_flags(cli: &Cli) -> cuzk::daemon::DirFlags {
    cuzk::daemon::DirFlags {
        params: cli.params_dir.clone(),
        pce: cli.pce_dir.clone(),
        kernel_cache: cli.kernel_cache.clone(),
    }
}

/// Where a subcommand reads and keeps what it needs: parameters and recorded circuits (the
/// store), and the GPUs' compiled kernels (`None`: the default cache).
struct Dirs {
    store: SrsStore,
    kernels: Option<PathBuf>,
}

impl Dirs {
    /// An engine configuration over these directories.
    fn engine_config(&self) -> EngineConfig {
        let mut config = EngineConfig::new(self.store.dir());
        config.pce_dir = self.store.pce().dir().map(Path::to_path_buf);
        config.kernel_cache = self.kernels.clone();
        config
    }
}

/// Runs a subcommand (not the daemon's) over `dirs`.
fn run(cmd: Cmd, dirs: &Dirs) -> CliResult {
    let store = &dirs.store;
    match cmd {
        Cmd::Demo { kinds, seed } => demo(
            dirs,
            &kinds_or(&kinds, &[ProofKind::WinningPost, ProofKind::WindowPost])?,
            seed,
        ),
        Cmd::Prove(args) => prove_cmd(args, dirs),
        Cmd::Batch(args) => batch_cmd(args, dirs),
        Cmd::Verify { input, proof } => verify_cmd(&input, &proof, store),
        Cmd::Gen {
            out,
            sector_size,
            sparse,
            seed,
            registered_proof,
        } => {
            let seal_proof = match registered_proof {
                Some(id) => RegisteredProof::new(ProofKind::PorepC2, id)?,
                None => RegisteredProof::latest(ProofKind::PorepC2, sector_size.parse()?),
            };
            gen_cmd(&out, seal_proof, sparse, seed)
        }
        Cmd::Params {
            kinds,
            sector_size,
            seed,
            backend,
        } => params_cmd(
            dirs,
            &kinds_or(&kinds, &ProofKind::ALL)?,
            sector_size.parse()?,
            seed,
            &backend,
        ),
        Cmd::Bench {
            kinds,
            backend,
            runs,
            sector_size,
        } => Ok(bench(
            dirs,
            &kinds_or(&kinds, &[ProofKind::PorepC2, ProofKind::SnapDeals])?,
            &backend,
            runs,
            sector_size.parse()?,
        )?),
        // Served from main, before this CLI's logging is installed.
        Cmd::Daemon(_) | Cmd::Config(_) | Cmd::Client(_) => Ok(()),
    }
}

/// The fixed r and s of `--fixed-rs`: reproducible proofs, for comparisons only.
fn fixed_randomness() -> Randomness {
    Randomness::Fixed(blstrs::Scalar::from(1u64), blstrs::Scalar::from(2u64))
}

/// `cuzk prove`: one request through an Engine, its proof written to `--out`.
fn prove_cmd(args: ProveArgs, dirs: &Dirs) -> CliResult {
    let request = match (args.input, args.c1, args.registered_proof) {
        (Some(path), _, _) => ProofRequest::from_json(&read(&path)?)?,
        (None, Some(path), id) => ProofRequest::porep_from_c1(id, &read(&path)?, None)?,
        _ => {
            return Err(Error::InvalidRequest(
                "give --input FILE, or --c1 FILE (with --registered-proof N when the C1 output does not name it)".into(),
            )
            .into())
        }
    };
    let mut config = dirs.engine_config();
    config.prove.randomness = if args.fixed_rs {
        fixed_randomness()
    } else {
        Randomness::Random
    };
    config.devices = device_choice(args.cpu, &args.devices)?;
    config.trace_file = args.trace.clone();
    prove_through_engine(config, &request, &args.out)?;
    if let Some(t) = args.trace {
        println!(
            "trace written to {} (open in https://ui.perfetto.dev)",
            t.display()
        );
    }
    Ok(())
}

/// `cuzk batch`: a stream of requests through an Engine, every proof verified, the trace
/// checked for overlap on any device, throughput and latency reported.
fn batch_cmd(args: BatchArgs, dirs: &Dirs) -> CliResult {
    let kinds = kinds_or(
        &args.kinds,
        &[
            ProofKind::WinningPost,
            ProofKind::WindowPost,
            ProofKind::SnapDeals,
            ProofKind::PorepC2,
        ],
    )?;
    let requests = cuzk::batch::load_requests(&args.inputs, &kinds)?;
    let mut config = dirs.engine_config();
    config.devices = device_choice(args.cpu, &args.devices)?;
    config.gpu_pipeline_depth = usize::from(args.pipeline_depth);
    config.synthesis_niceness = args.synthesis_niceness;
    config.synthesis_workers = args
        .synthesis_workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().min(32)));
    if args.fixed_rs {
        config.prove.randomness = fixed_randomness();
    }
    let trace = args.trace.unwrap_or_else(cuzk::batch::default_trace);
    let rep = Reporter::new();
    rep.step("warming up (parameters, recorded circuits)");
    let report = cuzk::batch::run(config, &requests, args.count, &trace, &|done, all| {
        if done % 10 == 0 || done == all {
            rep.step(format!("{done}/{all} proofs"));
        }
    })?;
    rep.finish();
    print_batch_report(&report, &trace);
    if report.overlaps > 0 {
        return Err("partitions overlapped on a device".into());
    }
    Ok(())
}

/// Prints what `cuzk batch` measured.
fn print_batch_report(report: &cuzk::batch::BatchReport, trace: &Path) {
    println!(
        "{} jobs ({} partitions) in {:.2}s: {:.2} proofs/s, {:.2} partitions/s; every proof verified",
        report.jobs,
        report.partitions,
        report.wall.as_secs_f64(),
        report.jobs as f64 / report.wall.as_secs_f64(),
        report.partitions as f64 / report.wall.as_secs_f64()
    );
    for (k, n) in &report.per_kind {
        println!("  {k}: {n}");
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    for (k, (t, j)) in &report.latency {
        println!(
            "  {k}: {:.1} ms from submit to verified proof (one job alone, median of 3): \
             {:.1} ms to reach a device (synthesis {:.1} ms), {:.1} ms on it, \
             {:.1} ms the rest (verification included)",
            ms(*t),
            ms(j.queue_wait),
            ms(j.synthesis),
            ms(j.gpu_compute),
            ms(t.saturating_sub(j.queue_wait + j.gpu_compute)),
        );
    }
    for (d, (n, busy)) in &report.per_device {
        println!(
            "  device {d}: {n} partitions, busy {:.2}s ({:.0}% of wall)",
            busy.as_secs_f64(),
            100.0 * busy.as_secs_f64() / report.wall.as_secs_f64()
        );
    }
    println!(
        "  trace {}: device tracks busy: {}; overlapping partitions on a device: {}",
        trace.display(),
        report.busy_tracks.join(", "),
        report.overlaps
    );
    println!("  digest of all proofs: {}", report.digest);
}

/// `cuzk verify`: proof bytes checked against their request.
fn verify_cmd(input: &Path, proof: &Path, store: &SrsStore) -> CliResult {
    let request = ProofRequest::from_json(&read(input)?)?;
    if cuzk::verify(store, &request, &read(proof)?)? {
        println!("valid: {} proof verifies", request.proof);
        Ok(())
    } else {
        Err(Error::VerificationFailed {
            what: format!("{} from {}", request.proof, proof.display()),
        }
        .into())
    }
}

/// `cuzk gen`: test request files, from a sealed sector or sparse ones.
fn gen_cmd(out: &Path, seal_proof: RegisteredProof, sparse: bool, seed: u64) -> CliResult {
    let rep = Reporter::new();
    if sparse || !seal_proof.sector_size.is_test_size() {
        for f in gen_sparse_files(out, seal_proof, seed, &rep)? {
            println!("wrote {}", f.display());
        }
        rep.finish();
        return Ok(());
    }
    rep.step(format!(
        "sealing a sector as {seal_proof}, running C1, PoSt and SnapDeals vanilla proofs"
    ));
    let files = gen_files(out, seal_proof, seed)?;
    rep.finish();
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(())
}

/// `cuzk params`: insecure test parameters of `kinds` at `size` (and, with PoRep, the
/// inner-product SRS its aggregation reads).
fn params_cmd(
    dirs: &Dirs,
    kinds: &[ProofKind],
    size: SectorSize,
    seed: u64,
    backend: &str,
) -> CliResult {
    let store = &dirs.store;
    eprintln!(
        "note: these are INSECURE test parameters (known randomness), written to {}",
        store.dir().display()
    );
    let rep = Reporter::new();
    for &kind in kinds {
        let proof = RegisteredProof::latest(kind, size);
        ensure_params(dirs, proof, seed, backend, &rep)?;
    }
    if kinds.contains(&ProofKind::PorepC2) {
        // non-interactive PoRep's aggregation reads the inner-product SRS beside them
        let (path, made) = store.generate_aggregation_srs(seed)?;
        if made {
            rep.done(format!("test inner-product SRS -> {}", path.display()));
        }
    }
    rep.finish();
    Ok(())
}

/// Where parameter generation computes its products, from a `--backend` choice (a GPU's
/// kernels cached in `kernels`).
fn products_on(choice: &str, kernels: Option<&Path>) -> Result<ProductsOn> {
    let on = match choice {
        "cpu" => ProductsOn::Cpu,
        "gpu" => ProductsOn::gpu(0)?,
        "auto" => ProductsOn::auto(),
        other => {
            return Err(Error::InvalidRequest(format!(
                "--backend {other}: expected auto, cpu or gpu"
            )))
        }
    };
    Ok(on.with_kernel_cache(kernels.map(Path::to_path_buf)))
}

/// Generates test parameters for `proof` from `seed` unless they are present, the fixed-base
/// products where `backend` says (`auto`, `cpu`, `gpu`; a GPU's kernels cached in `dirs`).
fn ensure_params(
    dirs: &Dirs,
    proof: RegisteredProof,
    seed: u64,
    backend: &str,
    rep: &Reporter,
) -> Result<()> {
    let store = &dirs.store;
    if store.has(proof)? {
        rep.done(format!("parameters for {proof}: present"));
        return Ok(());
    }
    let on = products_on(backend, dirs.kernels.as_deref())?;
    rep.step(format!(
        "generating test parameters for {proof} on {} (once; minutes for PoRep and SnapDeals)",
        on.describe()
    ));
    let t = Instant::now();
    let (path, made) = store.generate_with_progress(proof, seed, &on, &mut |phase| {
        use cuzk::paramgen::streaming::Phase;
        let what = match phase {
            Phase::Counting => "counting the circuit's constraints".to_string(),
            Phase::Evaluating { constraints, m } => format!(
                "{constraints} constraints (domain 2^{}): evaluating each variable at tau",
                m.trailing_zeros()
            ),
            Phase::Query { name, points } => format!("writing {name}: {points} points"),
        };
        rep.step(format!(
            "{proof}: {what} [{:.0}s]",
            t.elapsed().as_secs_f64()
        ));
    })?;
    rep.done(format!(
        "parameters for {proof}: {} in {:.1}s -> {}",
        if made { "generated" } else { "present" },
        t.elapsed().as_secs_f64(),
        path.display()
    ));
    Ok(())
}

fn gen_files(out: &Path, seal_proof: RegisteredProof, seed: u64) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let inputs = cuzk::gen::generate_with(seal_proof, out, seed)?;
    let size = seal_proof.sector_size;
    let mut files = Vec::new();
    for kind in ProofKind::ALL {
        let path = out.join(format!("{kind}-{size}.json"));
        write(&path, &inputs.get(kind).to_json()?)?;
        files.push(path);
    }
    Ok(files)
}

/// Writes sparse-sector requests (see `cuzk::gen::sparse`): the PoRep C2 request with its
/// C1 output as filecoin-proofs and filecoin-proofs-api write it, WinningPoSt, and one full
/// WindowPoSt partition, plus a note saying what they are.
fn gen_sparse_files(
    out: &Path,
    seal_proof: RegisteredProof,
    seed: u64,
    rep: &Reporter,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let size = seal_proof.sector_size;
    let mut files = Vec::new();
    let mut put = |name: String, bytes: &[u8]| -> Result<()> {
        let path = out.join(name);
        write(&path, bytes)?;
        files.push(path);
        Ok(())
    };
    put(
        "TEST-INPUTS.txt".into(),
        format!(
            "Sparse {size} test sectors made by `cuzk gen` (seed {seed}): only the challenged nodes,\n\
             their parents' columns and the opened Merkle paths hold values. Every file here passed\n\
             filecoin-proofs' vanilla verifier, but no such sector was sealed: never submit these\n\
             proofs to a chain.\n"
        )
        .as_bytes(),
    )?;
    rep.step(format!(
        "building a sparse {size} sector and its C1 output as {seal_proof}"
    ));
    let t = Instant::now();
    let porep = cuzk::gen::sparse::porep(seal_proof, seed)?;
    rep.done(format!(
        "C1 output ({} challenges' columns) built and checked in {:.1}s",
        porep.columns,
        t.elapsed().as_secs_f64()
    ));
    put(
        format!("{}-{size}.json", ProofKind::PorepC2),
        &porep.request.to_json()?,
    )?;
    put(format!("c1-{size}.json"), &porep.c1_json)?;
    put(
        format!("c1-api-{size}.json"),
        &cuzk::c1::to_api_form(&porep.c1_json, seal_proof)?,
    )?;
    for kind in [ProofKind::WinningPost, ProofKind::WindowPost] {
        let proof = RegisteredProof::latest(kind, size);
        rep.step(format!("building sparse sectors for {proof}"));
        let t = Instant::now();
        let request = cuzk::gen::sparse::post(proof, seed, None)?;
        rep.done(format!(
            "{proof} built and checked in {:.1}s",
            t.elapsed().as_secs_f64()
        ));
        put(format!("{kind}-{size}.json"), &request.to_json()?)?;
    }
    Ok(files)
}

/// The devices asked for on the command line.
fn device_choice(
    cpu: bool,
    devices: &[String],
) -> std::result::Result<DeviceChoice, cuzk::actors::Error> {
    Ok(if cpu {
        DeviceChoice::Cpu
    } else if devices.is_empty() {
        DeviceChoice::Auto
    } else {
        DeviceChoice::Gpus(
            devices
                .iter()
                .map(|d| d.parse::<DeviceSelector>())
                .collect::<std::result::Result<_, _>>()?,
        )
    })
}

/// Starts the Engine a command proves through (the runtime the daemon uses), naming its
/// devices on `rep`.
fn start_engine(config: EngineConfig, rep: &Reporter) -> std::result::Result<Engine, EngineError> {
    rep.step("starting the engine");
    let engine = Engine::start(config)?;
    for d in engine.devices() {
        rep.done(format!(
            "device {} ({}, ordinal {} at start)",
            d.id, d.name, d.ordinal
        ));
    }
    Ok(engine)
}

/// Proves one request through `engine`, with its progress on `rep` as the engine reports it:
/// partitions synthesised, and each one proved (and verified) as it is accepted.
fn prove_with_progress(
    engine: &Engine,
    request: &ProofRequest,
    rep: &Reporter,
) -> std::result::Result<JobResult, EngineError> {
    rep.step(format!(
        "{}: checking inputs and building circuits",
        request.proof
    ));
    let job = engine.submit(request, SubmitOptions::default())?.job;
    let mut last: Option<(usize, usize, usize)> = None;
    let result = loop {
        match engine.wait(job, Some(Duration::from_millis(200))) {
            Err(EngineError::Timeout { .. }) => {
                let now = engine
                    .progress(job)
                    .map(|p| (p.synthesized, p.partitions, p.proved));
                if let (Some((syn, n, proved)), true) = (now, now != last) {
                    if proved > last.map_or(0, |(_, _, p)| p) && proved < n {
                        rep.done(format!(
                            "{}: {proved} of {n} partition(s) proved and verified",
                            request.proof
                        ));
                    }
                    rep.step(format!(
                        "{}: {syn} of {n} partition(s) synthesised, {proved} proved",
                        request.proof
                    ));
                }
                last = now;
            }
            other => break other,
        }
    }?;
    let load = result.timings.srs_load;
    rep.done(format!(
        "{}: {} partition(s) proved{}{}",
        request.proof,
        result.partitions,
        if result.verified { " and verified" } else { "" },
        if load.is_zero() {
            String::new()
        } else {
            format!(" (parameters loaded in {:.2}s)", load.as_secs_f64())
        }
    ));
    Ok(result)
}

/// Proves one request through the Engine, with progress on stderr, and writes the proof.
fn prove_through_engine(config: EngineConfig, request: &ProofRequest, out: &Path) -> CliResult {
    let rep = Reporter::new();
    let engine = start_engine(config, &rep)?;
    let result = prove_with_progress(&engine, request, &rep);
    let shutdown = engine.shutdown(Duration::from_secs(5));
    rep.finish();
    let result = result?;
    shutdown?;
    write(out, &result.proof)?;
    print_summary(request, &result);
    println!(
        "proof written to {} ({} bytes)",
        out.display(),
        result.proof.len()
    );
    Ok(())
}

/// What a proof through the Engine gave: its size, verification, devices and timings.
fn print_summary(request: &ProofRequest, result: &JobResult) {
    let t = &result.timings;
    println!(
        "{}: {} partition(s), {} bytes, verified: {}, on {}",
        request.proof,
        result.partitions,
        result.proof.len(),
        if result.verified { "yes" } else { "skipped" },
        result
            .devices
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  timings: queue {:.3}s | params {:.3}s | synthesis {:.3}s | prove {:.3}s | total {:.3}s",
        t.queue_wait.as_secs_f64(),
        t.srs_load.as_secs_f64(),
        t.synthesis.as_secs_f64(),
        t.gpu_compute.as_secs_f64(),
        t.total.as_secs_f64()
    );
}

/// Generates test parameters and real 2 KiB inputs, and proves `kinds` through the Engine
/// on this machine (its GPUs when present, else the CPU).
fn demo(dirs: &Dirs, kinds: &[ProofKind], seed: u64) -> CliResult {
    let t0 = Instant::now();
    let size = SectorSize::S2KiB;
    let rep = Reporter::new();
    for kind in kinds {
        ensure_params(
            dirs,
            RegisteredProof::latest(*kind, size),
            seed,
            "cpu",
            &rep,
        )?;
    }
    rep.step("sealing a 2KiB sector and building vanilla proofs");
    let t = Instant::now();
    let work = std::env::temp_dir();
    let inputs = cuzk::gen::generate(size, &work, seed)?;
    rep.done(format!(
        "inputs generated in {:.2}s",
        t.elapsed().as_secs_f64()
    ));
    let engine = start_engine(dirs.engine_config(), &rep)?;
    let mut results = Vec::new();
    let mut failed = None;
    for kind in kinds {
        let request = inputs.get(*kind);
        match prove_with_progress(&engine, request, &rep) {
            Ok(result) => results.push((request, result)),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let shutdown = engine.shutdown(Duration::from_secs(5));
    rep.finish();
    if let Some(e) = failed {
        return Err(e.into());
    }
    shutdown?;
    for (request, result) in &results {
        print_summary(request, result);
        println!("  proof: {}…", &hex::encode(&result.proof)[..32]);
    }
    println!(
        "demo finished in {:.1}s: every proof verified with bellperson's verifier",
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The backend `cuzk bench` proves with, and a line naming it.
fn bench_backend(choice: &str, kernels: Option<&Path>) -> Result<(Box<dyn cuzk::Backend>, String)> {
    let kernels = kernels.map(Path::to_path_buf);
    let cpu = || -> (Box<dyn cuzk::Backend>, String) {
        (
            Box::new(CpuBackend),
            format!("CPU, {} threads", rayon_threads()),
        )
    };
    match choice {
        "cpu" => Ok(cpu()),
        "dual" => {
            let gpu = cuzk::cuda::ops::CudaOps::open(0)?.with_kernel_cache(kernels);
            let b = cuzk::DualBackend::with_gpu(gpu);
            let gpu = b.ops().second();
            let line = format!(
                "dual: CPU, {} threads, and GPU {} (PCI {}), compared on every operation",
                rayon_threads(),
                gpu.device_name(),
                gpu.device().pci_id()
            );
            Ok((Box::new(b), line))
        }
        "gpu" | "auto" => match cuzk::CudaBackend::open(0).map(|b| b.with_kernel_cache(kernels)) {
            Ok(b) => {
                let line = format!("GPU {} (PCI {})", b.device_name(), b.pci_id());
                Ok((Box::new(b), line))
            }
            Err(e) if choice == "auto" => {
                let (b, line) = cpu();
                Ok((b, format!("{line} (no GPU: {e})")))
            }
            Err(e) => Err(e),
        },
        other => Err(Error::InvalidRequest(format!(
            "--backend {other}: expected auto, cpu, gpu or dual"
        ))),
    }
}

fn bench(
    dirs: &Dirs,
    kinds: &[ProofKind],
    backend: &str,
    runs: usize,
    size: SectorSize,
) -> Result<()> {
    let probe = BellpersonLogProbe::get();
    let choice = backend;
    let (mut backend, backend_line) = bench_backend(choice, dirs.kernels.as_deref())?;
    let rep = Reporter::new();
    // dual has opened a GPU: missing parameters are made there too
    let products = if choice == "dual" { "gpu" } else { choice };
    for kind in kinds {
        ensure_params(
            dirs,
            RegisteredProof::latest(*kind, size),
            1,
            products,
            &rep,
        )?;
    }
    rep.step("generating inputs");
    let inputs = cuzk::gen::generate(size, &std::env::temp_dir(), 1)?;
    let mut summaries = Vec::new();
    for kind in kinds {
        rep.step(format!(
            "{kind}: {runs} run(s) + warm-up, cuzk then bellperson"
        ));
        summaries.push(bench_against_bellperson(
            &dirs.store,
            backend.as_mut(),
            inputs.get(*kind),
            runs,
            probe,
        )?);
    }
    rep.finish();
    println!(
        "cuzk proves on: {backend_line} | bellperson: CPU, {} threads | runs: {runs} (+1 warm-up), medians",
        rayon_threads()
    );
    println!("| circuit | constraints | cuzk prove | bellperson prove | prove speed-up | cuzk total (PCE) | bellperson total | identical |");
    println!("|---|---|---|---|---|---|---|---|");
    for s in &summaries {
        print_bench_row(s);
    }
    println!();
    println!("| circuit | bellperson synthesis | cuzk full synthesis | cuzk PCE synthesis | PCE, witness on all cores | PCE vs bellperson | PCE non-zeros | bytes per non-zero |");
    println!("|---|---|---|---|---|---|---|---|");
    for s in &summaries {
        print_synthesis_row(s);
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn secs(d: Option<Duration>) -> String {
    d.map(|d| format!("{:.3}s", d.as_secs_f64()))
        .unwrap_or_else(|| "n/a".into())
}

fn ratio(num: Option<Duration>, den: Option<Duration>) -> String {
    match (num, den) {
        (Some(n), Some(d)) if !d.is_zero() => format!("{:.2}x", n.as_secs_f64() / d.as_secs_f64()),
        _ => "n/a".into(),
    }
}

fn print_bench_row(s: &BenchSummary) {
    let ours = s.median_of(|r| Some(r.ours_prove));
    let theirs = s.median_of(|r| r.bellperson_prove);
    let total = s.median_of(|r| Some(r.pce_synthesis + r.ours_prove));
    println!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |",
        s.label,
        s.constraints,
        secs(ours),
        secs(theirs),
        ratio(theirs, ours),
        secs(total),
        secs(s.median_of(|r| Some(r.bellperson_total))),
        if s.all_identical() { "yes" } else { "NO" }
    );
}

fn print_synthesis_row(s: &BenchSummary) {
    let pce = s.median_of(|r| Some(r.pce_synthesis));
    let theirs = s.median_of(|r| r.bellperson_synthesis);
    println!(
        "| {} | {} | {} | {} | {} | {} | {} | {:.2} |",
        s.label,
        secs(theirs),
        secs(s.median_of(|r| Some(r.ours_synthesis))),
        secs(pce),
        secs(s.median_of(|r| Some(r.pce_synthesis_parallel))),
        ratio(theirs, pce),
        s.pce_nnz,
        s.pce_bytes as f64 / s.pce_nnz.max(1) as f64
    );
}
