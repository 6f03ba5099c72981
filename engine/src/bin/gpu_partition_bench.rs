//! One Groth16 partition shaped like a 32 GiB PoRep, WindowPoSt or SnapDeals partition on a CUDA device,
//! timed per phase.
//!
//! Shapes (`--shape`; sizes of Filecoin's 32 GiB circuits, value mixes from
//! `engine/examples/witness_shape.rs` on real partitions):
//! - `porep` (the default, the benchmark's long-standing shape): 130,278,541 constraints in a
//!   domain of 2^27, one aux variable per constraint, 99.7% of aux variables in A and 25.4%
//!   in B, aux values 40% zero, 35% one, 15% below 2^32, 10% full width.
//! - `porep-measured`: the same sizes and densities, aux values as in a real PoRep 8 MiB
//!   partition: 50.6% zero, 46.5% one, 2.9% full width, the full-width ones in B at 73%
//!   (so B's values are 8% full width, as measured) and the others at 24%.
//! - `window-post`: 125,279,217 constraints (a partition of 2349 sectors), aux values as in a
//!   real WindowPoSt 8 MiB partition: 0.5% zero, 0.4% one, the rest full width (Poseidon);
//!   75.8% of aux variables in A and 72.4% in B.
//! - `snap`: 81,049,499 constraints (one of a SnapDeals 32 GiB job's 16 partitions), values
//!   and densities as `porep-measured`'s (a SnapDeals witness has PoRep's mix).
//!
//! The SRS is synthetic: 2^20 random G1 and 2^18 random G2 points repeated on the device to
//! the query lengths (about 47 GB for PoRep).
//!
//! Correctness first: at a smaller domain of the same shape (`--check-log-m`, default 16)
//! with a host SRS of random points, the proof on the GPU must equal the CPU backend's byte
//! for byte; the run stops if it does not.
//!
//! Usage on a GPU machine:
//! `gpu_partition_bench [--shape porep|porep-measured|window-post|snap] [--log-m 27] [--check-log-m 16] [--runs 3] [--b-g2 device|host|both]
//! [--upload staged|pageable|ahead|all] [--masks resident|fresh|both] [--profile msm|ntt|all] [--budgets 0,24,20,16] [--batch 10]
//! [--kernel-cache DIR]`
//! (`--log-m 0` skips the large run; `--masks fresh` makes the density masks for each partition instead of keeping
//! them on the device between partitions, as the backend does; `--b-g2 host` computes
//! B in G2 on the host's cores while the device works; `--upload pageable` copies the assignment
//! straight from pageable memory instead of through page-locked staging buffers; `--upload
//! ahead` adds partitions back to back with each next assignment uploaded on a side stream
//! during the current kernels; every mode by default; `--profile` prints the time of each step
//! of the MSMs and the query scalars, of the transforms' passes, or both, which slows them,
//! `cuzk_kernels::profile`). Times are wall clock with the device synchronised after each
//! phase; the first large run is a warm-up and is printed but not counted. `--budgets` then
//! proves the partition under each device memory budget (GiB; 0: this card as the engine
//! plans it) with the bases streamed from page-locked host memory where they do not fit,
//! printing the chunk, the bytes moved, the link's bandwidth and the driver's peak of device
//! memory; with `--batch K`, each streamed budget then also proves batches of K copies of
//! the partition whose L, A and B bases cross the link once a batch. `--kernel-cache` names
//! the directory of compiled kernels (default: `$XDG_CACHE_HOME/cuzk/kernels`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G2Affine, Scalar};
use cuzk_engine::cuda::batch::prove_streamed_batch;
use cuzk_engine::cuda::streamed::{HostSrs, Rings};
use cuzk_engine::cuda::{
    prove_msms, DeviceSrs, PhaseTimes, Queries, QueryLens, Residency, Transfers,
};
use cuzk_engine::kernels::testdata::{g1_points, g2_points};
use cuzk_engine::kernels::{GpuDevice, Staging, G1, G2};
use cuzk_engine::pce::{Assignment, Density};
use cuzk_engine::prover::MsmResults;
use cuzk_engine::{Backend, CpuBackend, CudaBackend, Srs};
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

/// PoRep 32 GiB: constraints per partition, and the domain they fill.
const POREP_CONSTRAINTS: u64 = 130_278_541;
const POREP_LOG_M: u32 = 27;
/// WindowPoSt 32 GiB: constraints per partition (2349 sectors), in the same domain.
const WINDOW_POST_CONSTRAINTS: u64 = 125_279_217;
/// SnapDeals 32 GiB: constraints of one of a job's 16 partitions, in the same domain.
const SNAP_CONSTRAINTS: u64 = 81_049_499;
/// Public inputs including ONE (PoRep 2 KiB has 40; the count barely matters here).
const INPUTS: usize = 40;

/// The partition a synthetic one stands for: its size and the mix of its aux values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// PoRep 32 GiB, values 40% zero, 35% one, 15% below 2^32, 10% full width.
    Porep,
    /// PoRep 32 GiB, values as measured on a real PoRep 8 MiB partition.
    PorepMeasured,
    /// WindowPoSt 32 GiB, values as measured on a real WindowPoSt 8 MiB partition.
    WindowPost,
    /// SnapDeals 32 GiB (one of 16 partitions), values as `PorepMeasured`'s (a SnapDeals
    /// witness has PoRep's mix).
    Snap,
}

/// Each kind with its `--shape` name.
const KINDS: [(Kind, &str); 4] = [
    (Kind::Porep, "porep"),
    (Kind::PorepMeasured, "porep-measured"),
    (Kind::WindowPost, "window-post"),
    (Kind::Snap, "snap"),
];

impl Kind {
    /// The kind `--shape` names (`porep` when not given).
    fn parse(s: Option<&str>) -> Result<Kind, String> {
        let s = s.unwrap_or("porep");
        KINDS.iter().find(|k| k.1 == s).map(|k| k.0).ok_or_else(|| {
            let names: Vec<&str> = KINDS.iter().map(|k| k.1).collect();
            format!("--shape {s}: expected {}", names.join(", "))
        })
    }

    fn name(self) -> &'static str {
        KINDS.iter().find(|k| k.0 == self).map_or("?", |k| k.1)
    }
}

/// The sizes of one synthetic partition.
#[derive(Clone, Copy, Debug)]
struct Shape {
    kind: Kind,
    constraints: usize,
    aux: usize,
}

impl Shape {
    /// `kind`'s fill of its 2^27 domain, at domain 2^log_m.
    fn new(kind: Kind, log_m: u32) -> Shape {
        let full = match kind {
            Kind::Porep | Kind::PorepMeasured => POREP_CONSTRAINTS,
            Kind::WindowPost => WINDOW_POST_CONSTRAINTS,
            Kind::Snap => SNAP_CONSTRAINTS,
        };
        let constraints = (full << log_m >> POREP_LOG_M) as usize;
        // bellperson's rows for the inputs are part of the constraints
        Shape {
            kind,
            constraints,
            aux: constraints - INPUTS,
        }
    }
}

/// `n` values from per-chunk seeded generators, in parallel.
fn fill<T: Send + Copy + Default>(
    seed: u64,
    n: usize,
    f: impl Fn(&mut ChaCha8Rng) -> T + Sync,
) -> Vec<T> {
    let mut v = vec![T::default(); n];
    v.par_chunks_mut(1 << 16).enumerate().for_each(|(i, c)| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((i as u64) << 24));
        c.iter_mut().for_each(|x| *x = f(&mut rng));
    });
    v
}

fn density(seed: u64, n: usize, percent_set: f64) -> Density {
    density_of(fill(seed, n, |r| {
        (r.next_u32() as f64) < percent_set / 100.0 * 4294967296.0
    }))
}

fn density_of(bits: impl IntoIterator<Item = bool>) -> Density {
    let mut d = Density::new();
    for b in bits {
        d.push(b);
    }
    d
}

/// A synthetic assignment of `shape`. The prover does not check that it satisfies any
/// constraint system, but c = a b element-wise, as in every satisfied one (the device then
/// computes H by six transforms, as it does for real partitions).
fn assignment(shape: Shape, seed: u64) -> Assignment {
    let small = |r: &mut ChaCha8Rng| Scalar::from(r.next_u64());
    let (aux, a_aux_density, b_aux_density) = match shape.kind {
        Kind::Porep => (
            fill(seed + 1, shape.aux, |r| match r.next_u32() % 100 {
                0..=39 => Scalar::ZERO,
                40..=74 => Scalar::ONE,
                75..=89 => Scalar::from(r.next_u32() as u64),
                _ => Scalar::random(r),
            }),
            density(seed + 6, shape.aux, 99.7),
            density(seed + 7, shape.aux, 25.4),
        ),
        Kind::PorepMeasured | Kind::Snap => {
            // per variable: its value, then whether B takes it (73% of the full-width ones,
            // 24% of the others: 25.4% in all, as in a 32 GiB partition)
            let vars = fill(seed + 1, shape.aux, |r| {
                let x = r.next_u32() % 1000;
                let full = x >= 971;
                let value = if x < 506 {
                    Scalar::ZERO
                } else if !full {
                    Scalar::ONE
                } else {
                    Scalar::random(&mut *r)
                };
                let in_b = r.next_u32() % 1000 < if full { 730 } else { 240 };
                (value, in_b)
            });
            (
                vars.iter().map(|v| v.0).collect(),
                density(seed + 6, shape.aux, 99.7),
                density_of(vars.iter().map(|v| v.1)),
            )
        }
        Kind::WindowPost => (
            fill(seed + 1, shape.aux, |r| match r.next_u32() % 1000 {
                0..=4 => Scalar::ZERO,
                5..=8 => Scalar::ONE,
                _ => Scalar::random(r),
            }),
            density(seed + 6, shape.aux, 75.8),
            density(seed + 7, shape.aux, 72.4),
        ),
    };
    let mut input = fill(seed + 2, INPUTS, |r| Scalar::random(r));
    input[0] = Scalar::ONE;
    let mut b_input_density = Density::new();
    for i in 0..INPUTS {
        b_input_density.push(i % 4 == 0);
    }
    let a = fill(seed + 3, shape.constraints, small);
    let b = fill(seed + 4, shape.constraints, small);
    let c = a.par_iter().zip(&b).map(|(x, y)| x * y).collect();
    Assignment {
        input,
        aux,
        a,
        b,
        c,
        a_aux_density,
        b_input_density,
        b_aux_density,
    }
}

/// The query lengths an assignment needs.
fn lens(asg: &Assignment) -> QueryLens {
    let m = asg.num_constraints().next_power_of_two();
    let b = asg.b_input_density.count() + asg.b_aux_density.count();
    QueryLens {
        h: m - 1,
        l: asg.aux.len(),
        a: asg.input.len() + asg.a_aux_density.count(),
        b_g1: b,
        b_g2: b,
    }
}

/// Host parameters of random points for `asg`'s shape.
fn host_params(asg: &Assignment, seed: u64) -> Parameters<Bls12> {
    let q = lens(asg);
    let g1 = |s: u64, n: usize| Arc::new(g1_points(seed + s, n));
    let one_g1 = |s: u64| g1_points(seed + s, 1)[0];
    let one_g2 = |s: u64| g2_points(seed + s, 1)[0];
    Parameters {
        vk: VerifyingKey {
            alpha_g1: one_g1(10),
            beta_g1: one_g1(11),
            beta_g2: one_g2(12),
            gamma_g2: one_g2(13),
            delta_g1: one_g1(14),
            delta_g2: one_g2(15),
            ic: g1_points(seed + 16, asg.input.len()),
        },
        h: g1(1, q.h),
        l: g1(2, q.l),
        a: g1(3, q.a),
        b_g1: g1(4, q.b_g1),
        b_g2: Arc::new(g2_points(seed + 5, q.b_g2)),
    }
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn proof_bytes(p: &bellperson::groth16::Proof<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    // writing to a Vec cannot fail
    let _ = p.write(&mut v);
    v
}

/// CPU and GPU proofs (B in G2 on the device, and on the host) of a synthetic partition at
/// domain 2^log_m must be the same bytes.
fn check(
    gpu: CudaBackend,
    kind: Kind,
    log_m: u32,
) -> Result<CudaBackend, Box<dyn std::error::Error>> {
    let shape = Shape::new(kind, log_m);
    let asg = assignment(shape, 1000 + log_m as u64);
    let srs = Srs::from_parameters(host_params(&asg, 2000));
    let (r, s) = (Scalar::from(0xdead_beefu64), Scalar::from(0x0bad_cafeu64));
    let t = Instant::now();
    let cpu = CpuBackend.prove(&srs, asg.clone(), r, s, 0)?;
    let cpu_time = t.elapsed();
    let mut gpu = gpu;
    for on_host in [false, true] {
        gpu = gpu.with_b_g2_on_host(on_host);
        let _cold = gpu.prove_timed(&srs, asg.clone(), r, s, 0)?;
        let t = Instant::now();
        let (ours, phases) = gpu.prove_timed(&srs, asg.clone(), r, s, 0)?;
        let gpu_time = t.elapsed();
        if proof_bytes(&ours) != proof_bytes(&cpu) {
            return Err(format!(
                "domain 2^{log_m}, B G2 on the {}: GPU and CPU proofs differ",
                if on_host { "host" } else { "device" }
            )
            .into());
        }
        println!(
            "check at 2^{log_m} ({} {} constraints), B G2 on the {}: GPU proof == CPU proof; CPU \
             {cpu_time:.3?}, GPU (warm) {gpu_time:.3?} = {phases}",
            shape.constraints,
            kind.name(),
            if on_host { "host" } else { "device" },
        );
    }
    // streamed bases, in chunks of 2^12 points, from page-locked host memory
    gpu = gpu
        .with_b_g2_on_host(false)
        .with_stream_chunk(Some(1 << 12));
    gpu.evict(&srs);
    let (ours, phases) = gpu.prove_timed(&srs, asg.clone(), r, s, 0)?;
    if proof_bytes(&ours) != proof_bytes(&cpu) {
        return Err(format!("domain 2^{log_m}, streamed bases: GPU and CPU proofs differ").into());
    }
    println!(
        "check at 2^{log_m}, bases streamed in chunks of 2^12 ({}): GPU proof == CPU proof; {phases}",
        gpu.last_residency().map_or("?".into(), |r| r.to_string())
    );
    Ok(gpu.with_stream_chunk(None))
}

/// The eight phase columns of a results row: upload, ntt, the five MSMs, download (ms).
fn phase_cells(p: &PhaseTimes) -> String {
    [
        p.upload, p.ntt, p.msm_h, p.msm_l, p.msm_a, p.msm_b_g1, p.msm_b_g2, p.download,
    ]
    .iter()
    .map(|d| format!("{:.1}", ms(*d)))
    .collect::<Vec<_>>()
    .join(" | ")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What the command line asks for (see the module documentation).
struct Options {
    log_m: u32,
    check_log_m: u32,
    runs: usize,
    kind: Kind,
    /// (B in G2 on the host, upload through page-locked staging buffers, resident masks)
    modes: Vec<(bool, bool, bool)>,
    /// Some mode computes B in G2 on the host (its points are then kept there too).
    g2_on_host: bool,
    /// Time partitions with the next one uploaded ahead, after the modes.
    ahead: bool,
    timing: cuzk_engine::kernels::StepTiming,
    /// Device memory budgets in GiB for streamed runs (0: the whole card).
    budgets: Vec<u64>,
    /// After each streamed budget's single runs, batches of this many copies (1: none).
    batch: usize,
    /// Where compiled kernels are read and stored (`None`: the default cache).
    kernel_cache: Option<std::path::PathBuf>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self, Box<dyn std::error::Error>> {
        let flag = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .map(String::as_str)
        };
        let g2_modes: Vec<bool> = match flag("--b-g2") {
            Some("device") => vec![false],
            Some("host") => vec![true],
            _ => vec![false, true],
        };
        let (upload_modes, ahead): (Vec<bool>, bool) = match flag("--upload") {
            Some("staged") => (vec![true], false),
            Some("pageable") => (vec![false], false),
            Some("ahead") => (vec![true], true),
            _ => (vec![true, false], true),
        };
        let mask_modes: Vec<bool> = match flag("--masks") {
            Some("fresh") => vec![false],
            Some("both") => vec![true, false],
            _ => vec![true],
        };
        let modes = g2_modes
            .iter()
            .flat_map(|&g| upload_modes.iter().map(move |&u| (g, u)))
            .flat_map(|(g, u)| mask_modes.iter().map(move |&k| (g, u, k)))
            .collect();
        let timing = match flag("--profile") {
            None => cuzk_engine::kernels::StepTiming::default(),
            Some(what) => cuzk_engine::kernels::StepTiming::parse(what)
                .ok_or("--profile takes msm, ntt or all")?,
        };
        // --budgets 16,20,24,0
        let budgets = match flag("--budgets") {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(|b| {
                    b.trim()
                        .parse::<u64>()
                        .map_err(|e| format!("--budgets {list}: {e}"))
                })
                .collect::<Result<_, _>>()?,
        };
        Ok(Options {
            log_m: arg(args, "--log-m", POREP_LOG_M as usize) as u32,
            check_log_m: arg(args, "--check-log-m", 16) as u32,
            runs: arg(args, "--runs", 3).max(1),
            kind: Kind::parse(flag("--shape"))?,
            modes,
            g2_on_host: g2_modes.contains(&true),
            ahead,
            timing,
            budgets,
            batch: arg(args, "--batch", 1).max(1),
            kernel_cache: flag("--kernel-cache").map(Into::into),
        })
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let opts = Options::parse(&args)?;
    let (kind, log_m, runs) = (opts.kind, opts.log_m, opts.runs);
    let mut gpu = CudaBackend::open(0)?
        .with_step_timing(opts.timing)
        .with_kernel_cache(opts.kernel_cache.clone());
    println!(
        "# gpu_partition_bench on {} (PCI {}, {} GiB), {} CPU threads",
        gpu.device_name(),
        gpu.pci_id(),
        gpu.total_memory() >> 30,
        rayon::current_num_threads()
    );
    if opts.check_log_m > 0 {
        gpu = check(gpu, kind, opts.check_log_m)?;
    }
    if log_m == 0 {
        return Ok(());
    }

    let shape = Shape::new(kind, log_m);
    let t = Instant::now();
    let asg = assignment(shape, 7);
    let q = lens(&asg);
    let dev = gpu.device();
    let uniq_g1 = g1_points(1, (1 << 20).min(q.l.max(1)));
    let uniq_g2 = g2_points(2, (1 << 18).min(q.b_g2.max(1)));
    println!(
        "{} inputs made in {:.1?}: {} constraints (domain 2^{log_m}), {} aux, A {} / B {} scalars",
        kind.name(),
        t.elapsed(),
        shape.constraints,
        q.l,
        q.a,
        q.b_g1
    );
    let t = Instant::now();
    let srs = DeviceSrs {
        h: dev.tile_bases::<G1>(&uniq_g1, q.h)?,
        l: dev.tile_bases::<G1>(&uniq_g1, q.l)?,
        a: dev.tile_bases::<G1>(&uniq_g1, q.a)?,
        b_g1: dev.tile_bases::<G1>(&uniq_g1, q.b_g1)?,
        b_g2: dev.tile_bases::<G2>(&uniq_g2, q.b_g2)?,
    };
    dev.synchronize()?;
    let needed = cuzk_engine::cuda::vram::vram_needed(&q, shape.constraints);
    println!(
        "synthetic SRS on the device in {:.1?}: {:.1} GiB resident; vram_needed {:.1} GiB; free now {:.1} GiB",
        t.elapsed(),
        srs.bytes() as f64 / (1u64 << 30) as f64,
        needed as f64 / (1u64 << 30) as f64,
        gpu.free_memory()? as f64 / (1u64 << 30) as f64
    );
    // the host's copy of B in G2, the same points as on the device
    let host_b_g2: Vec<G2Affine> = if opts.g2_on_host {
        (0..q.b_g2).map(|i| uniq_g2[i % uniq_g2.len()]).collect()
    } else {
        Vec::new()
    };
    let mut staging = Staging::new(dev)?;
    for &mode in &opts.modes {
        let host = mode.0.then_some(host_b_g2.as_slice());
        resident_runs(dev, &srs, &asg, mode, host, runs, &mut staging)?;
    }
    if !opts.budgets.is_empty() {
        drop(srs);
        let host = Parameters::<Bls12> {
            h: Arc::new(tile(&uniq_g1, q.h)),
            l: Arc::new(tile(&uniq_g1, q.l)),
            a: Arc::new(tile(&uniq_g1, q.a)),
            b_g1: Arc::new(tile(&uniq_g1, q.b_g1)),
            b_g2: Arc::new(tile(&uniq_g2, q.b_g2)),
            vk: host_params(&assignment(Shape::new(kind, 10), 1), 1).vk,
        };
        streamed_runs(
            &gpu,
            &host,
            &asg,
            (&opts.budgets, opts.batch),
            runs,
            &mut staging,
        )?;
        return Ok(());
    }
    if opts.ahead {
        upload_ahead(dev, &srs, &asg, &mut staging, runs)?;
    }
    Ok(())
}

/// The partition with resident bases in one mode (B in G2 on the host, when `host_b_g2` is
/// given; uploads staged or from pageable memory; masks kept or made each time): a warm-up,
/// then `runs` timed runs, and their median.
fn resident_runs(
    dev: &GpuDevice,
    srs: &DeviceSrs,
    asg: &Assignment,
    (on_host, staged, keep_masks): (bool, bool, bool),
    host_b_g2: Option<&[G2Affine]>,
    runs: usize,
    staging: &mut Staging,
) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "\nB in G2 on the {}, upload {}, density masks {}:",
        if on_host {
            "host (overlapped)"
        } else {
            "device"
        },
        if staged {
            "through page-locked staging buffers"
        } else {
            "from pageable memory"
        },
        if keep_masks {
            "kept on the device between partitions"
        } else {
            "made for each partition"
        }
    );
    let mut masks = None;
    println!("| run | wall | upload | ntt | msm_h | msm_l | msm_a | msm_b_g1 | msm_b_g2 | download | total | total - upload |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut totals = Vec::new();
    for run in 0..=runs {
        let input = asg.clone();
        let io = Transfers {
            staging: staged.then_some(&mut *staging),
            masks: keep_masks.then_some(&mut masks),
            ..Transfers::default()
        };
        let t = Instant::now();
        let p: PhaseTimes = prove_msms(dev, Queries::Resident(srs), input, 0, host_b_g2, io)?.times;
        let wall = t.elapsed();
        let label = if run == 0 {
            "warm-up".to_string()
        } else {
            totals.push((p.total(), p.total() - p.upload, wall));
            run.to_string()
        };
        println!(
            "| {label} | {:.1} | {} | {:.1} | {:.1} |",
            ms(wall),
            phase_cells(&p),
            ms(p.total()),
            ms(p.total() - p.upload)
        );
    }
    totals.sort();
    let (total, compute, _) = totals[(totals.len() - 1) / 2];
    let mut walls: Vec<Duration> = totals.iter().map(|t| t.2).collect();
    walls.sort();
    println!(
        "median of {runs}: {:.1} ms per partition, {:.1} ms without the upload; wall {:.1} ms (target 600 ms)",
        ms(total),
        ms(compute),
        ms(walls[(walls.len() - 1) / 2])
    );
    Ok(())
}

/// `n` points repeating `uniq`, on the host.
fn tile<T: Copy + Send + Sync>(uniq: &[T], n: usize) -> Vec<T> {
    (0..n)
        .into_par_iter()
        .map(|i| uniq[i % uniq.len()])
        .collect()
}

/// The partition with its bases streamed from page-locked host memory under each device
/// memory budget (GiB; 0: this card as the engine plans it, resident where the bases fit),
/// B in G2 on the device, staged
/// uploads: time per phase, the chunk the budget allows, bytes moved host to device, the
/// link's bandwidth measured in the same run, and the driver's peak of device memory.
fn streamed_runs(
    gpu: &CudaBackend,
    host: &Parameters<Bls12>,
    asg: &Assignment,
    (budgets, batch): (&[u64], usize),
    runs: usize,
    staging: &mut Staging,
) -> Result<(), Box<dyn std::error::Error>> {
    let dev = gpu.device();
    let t = Instant::now();
    let pinned = HostSrs::register(dev, host)?;
    println!(
        "\nparameters registered as page-locked host memory: {:.1} GiB in {:.1?}",
        pinned.num_bytes() as f64 / (1u64 << 30) as f64,
        t.elapsed()
    );
    link_bandwidth(dev, &pinned)?;
    println!("| budget | residency | chunk | run | wall ms | upload | ntt | msm_h | msm_l | msm_a | msm_b_g1 | msm_b_g2 | download | GB moved | peak device GiB | planned GiB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &budget in budgets {
        budget_runs(dev, host, &pinned, asg, budget, (runs, batch), staging)?;
    }
    Ok(())
}

/// The link's bandwidth host to device: 2^25 G1 points (3 GiB) of the registered H query,
/// copied three times.
fn link_bandwidth(dev: &GpuDevice, pinned: &HostSrs) -> Result<(), Box<dyn std::error::Error>> {
    let h = pinned.queries().h;
    let probe = &h[..(1usize << 25).min(h.len())];
    let mut link = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let buf = dev.upload(probe)?;
        dev.synchronize()?;
        link.push(std::mem::size_of_val(probe) as f64 / t.elapsed().as_secs_f64() / 1e9);
        drop(buf);
    }
    link.sort_by(f64::total_cmp);
    println!(
        "link host to device (page-locked, {} MiB): {:.1} GB/s (median of 3: {link:.1?})",
        std::mem::size_of_val(probe) >> 20,
        link[1]
    );
    Ok(())
}

/// The partition under one device memory budget (GiB; 0: this card as the engine plans it):
/// a warm-up and `runs` timed runs, one table row each, and their median; then, with
/// streamed bases and `batch` above 1, batches of `batch` copies ([`batched_runs`]).
fn budget_runs(
    dev: &GpuDevice,
    host: &Parameters<Bls12>,
    pinned: &HostSrs,
    asg: &Assignment,
    budget: u64,
    (runs, batch): (usize, usize),
    staging: &mut Staging,
) -> Result<(), Box<dyn std::error::Error>> {
    let q = QueryLens::of(host);
    let n = asg.num_constraints();
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let name = if budget == 0 {
        "whole card".to_string()
    } else {
        format!("{budget} GiB")
    };
    let limit = (budget > 0).then_some(budget << 30);
    let usable = cuzk_engine::cuda::usable_memory(dev.total_memory() as u64, limit);
    // 0: the engine's own choice on this card (bases resident up to 5/8 of it); a
    // budget: streamed, as on a card of that size
    let cap = if budget == 0 { usable / 8 * 5 } else { 0 };
    let residency = match cuzk_engine::cuda::vram::plan(&q, n, usable, cap, None) {
        Ok(r) => r,
        Err(need) => {
            println!(
                "| {budget} GiB | does not fit: needs {:.1} GiB | | | | | | | | | | | | | | |",
                gib(need)
            );
            return Ok(());
        }
    };
    let (planned, chunk, resident, mut rings) = match residency {
        Residency::Resident => (
            cuzk_engine::cuda::vram::vram_needed(&q, n),
            "-".to_string(),
            Some(DeviceSrs::upload(dev, host)?),
            None,
        ),
        Residency::Streamed { chunk } => (
            cuzk_engine::cuda::vram::streamed_needed(&q, n, chunk),
            format!("2^{}", chunk.trailing_zeros()),
            None,
            Some(Rings::new(dev, chunk)?),
        ),
    };
    let mut walls = Vec::new();
    let mut single = None;
    for run in 0..=runs {
        dev.synchronize()?;
        dev.reset_peak_memory()?;
        let moved_before = rings.as_ref().map_or(0, |r| r.bytes_moved());
        let queries = match (&resident, rings.as_mut()) {
            (Some(r), _) => Queries::Resident(r),
            (None, Some(rings)) => Queries::Streamed {
                host: pinned.queries(),
                rings,
            },
            (None, None) => return Err("neither resident nor streamed".into()),
        };
        let io = Transfers {
            staging: Some(&mut *staging),
            ..Transfers::default()
        };
        let input = asg.clone();
        let t = Instant::now();
        let proved = prove_msms(dev, queries, input, 0, None, io)?;
        let wall = t.elapsed();
        let p = proved.times;
        single = Some(proved.msm);
        let moved = rings.as_ref().map_or(0, |r| r.bytes_moved()) - moved_before;
        let peak = dev.peak_memory()?.unwrap_or(0);
        let label = if run == 0 {
            "warm-up".to_string()
        } else {
            walls.push(wall);
            run.to_string()
        };
        println!(
            "| {} | {} | {chunk} | {label} | {:.1} | {} | {:.1} | {:.2} | {:.2} |",
            name,
            residency.as_str(),
            ms(wall),
            phase_cells(&p),
            moved as f64 / 1e9,
            gib(peak),
            gib(planned)
        );
    }
    walls.sort();
    println!(
        "budget {}: median of {runs} {:.1} ms per partition ({})",
        name,
        ms(walls[(walls.len() - 1) / 2]),
        residency
    );
    if let (Some(rings), Some(single), true) = (rings.as_mut(), single, batch > 1) {
        let batch = (batch, runs);
        batched_runs(dev, pinned, rings, asg, batch, (&name, &single), staging)?;
    }
    Ok(())
}

/// A batch of `batch` copies of the partition proved with the bases streamed once for the
/// batch's L, A and B MSMs ([`prove_streamed_batch`]), `runs` times after a warm-up: wall
/// time per partition (less the time spent copying the assignment), bytes moved, peak
/// device memory. Every copy's five group elements must be `single`'s, the partition's
/// proved alone (the run stops if one is not).
fn batched_runs(
    dev: &GpuDevice,
    pinned: &HostSrs,
    rings: &mut Rings,
    asg: &Assignment,
    (batch, runs): (usize, usize),
    (name, single): (&str, &MsmResults),
    staging: &mut Staging,
) -> Result<(), Box<dyn std::error::Error>> {
    let q = pinned.queries().lens();
    let n = asg.num_constraints();
    let room = cuzk_engine::cuda::vram::batch_room(&q, n, rings.chunk());
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let mut per = Vec::new();
    for run in 0..=runs {
        dev.synchronize()?;
        dev.reset_peak_memory()?;
        let before = rings.bytes_moved();
        let t = Instant::now();
        // One copy of the assignment at a time (the batch keeps only each one's scalars).
        // Copying 2^27-row assignments takes seconds that a real batch, whose assignments
        // come from synthesis, does not spend: timed apart and left out of the figure.
        let copying = std::cell::Cell::new(Duration::ZERO);
        let items = (0..batch).map(|i| {
            let started = Instant::now();
            let copy = asg.clone();
            copying.set(copying.get() + started.elapsed());
            (copy, i)
        });
        let out = prove_streamed_batch(
            dev,
            pinned.queries(),
            rings,
            items,
            Some(&mut *staging),
            room,
        )?;
        let copies = copying.get();
        let wall = t.elapsed().saturating_sub(copies);
        let moved = rings.bytes_moved() - before;
        let peak = dev.peak_memory()?.unwrap_or(0);
        let sum = |f: fn(&PhaseTimes) -> Duration| out.iter().map(|(_, t)| f(t)).sum::<Duration>();
        let label = if run == 0 {
            "warm-up".to_string()
        } else {
            run.to_string()
        };
        println!(
            "| {name} | batch of {batch} | 2^{} | {label} | {:.1} per partition | upload {:.1} | ntt {:.1} | msm_h {:.1} | msm_l {:.1} | msm_a {:.1} | msm_b {:.1} | {:.2} GB moved ({:.2} a partition) | peak {:.2} GiB | room {:.2} GiB | copies {:.1} ms apart |",
            rings.chunk().trailing_zeros(),
            ms(wall) / batch as f64,
            ms(sum(|t| t.upload)) / batch as f64,
            ms(sum(|t| t.ntt)) / batch as f64,
            ms(sum(|t| t.msm_h)) / batch as f64,
            ms(sum(|t| t.msm_l)) / batch as f64,
            ms(sum(|t| t.msm_a)) / batch as f64,
            ms(sum(|t| t.msm_b_g1)) / batch as f64,
            moved as f64 / 1e9,
            moved as f64 / 1e9 / batch as f64,
            gib(peak),
            gib(room),
            ms(copies)
        );
        if run > 0 {
            per.push(wall / batch as u32);
        }
        if out.len() != batch || out.iter().any(|(m, _)| m != single) {
            return Err("a copy in the batch differs from the partition proved alone".into());
        }
    }
    per.sort();
    println!(
        "budget {name}: batches of {batch}: median of {runs} {:.1} ms per partition",
        ms(per[(per.len() - 1) / 2])
    );
    Ok(())
}

/// Partitions back to back with each next one's assignment uploaded on a side stream while
/// the current one's kernels run (as the CUDA backend does when its device actor holds two
/// leases): wall time per partition in steady state, B in G2 on the device, staged uploads.
/// The same assignment stands for every partition. Creating the side stream puts the
/// context in multi-stream mode for the rest of the process (cudarc then records an event
/// per buffer use), so this runs after the other modes.
fn upload_ahead(
    dev: &cuzk_engine::kernels::GpuDevice,
    srs: &DeviceSrs,
    asg: &Assignment,
    staging: &mut Staging,
    runs: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let side = dev.side_stream()?;
    println!(
        "\nUpload ahead on a side stream (staged), B in G2 on the device: a first partition, then {runs} back to back"
    );
    println!(
        "| run | wall | upload | ntt | msm_h | msm_l | msm_a | msm_b_g1 | msm_b_g2 | download | next's upload (side stream) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut uploaded = None;
    let mut masks = None;
    let mut walls = Vec::new();
    for run in 0..=runs {
        let input = asg.clone();
        let io = Transfers {
            staging: Some(&mut *staging),
            uploaded: uploaded.take(),
            ahead: (run < runs).then_some(cuzk_engine::cuda::Ahead {
                dev: &side,
                assignment: asg,
            }),
            masks: Some(&mut masks),
        };
        let t = Instant::now();
        let proved = prove_msms(dev, Queries::Resident(srs), input, 0, None, io)?;
        let wall = t.elapsed();
        uploaded = proved.ahead.transpose()?;
        let ahead_ms = uploaded.as_ref().map_or(0.0, |u| ms(u.took()));
        let p = proved.times;
        let label = if run == 0 {
            "first".to_string()
        } else {
            walls.push(wall);
            run.to_string()
        };
        println!(
            "| {label} | {:.1} | {} | {ahead_ms:.1} |",
            ms(wall),
            phase_cells(&p)
        );
    }
    walls.sort();
    if let Some(w) = walls.get((walls.len().max(1) - 1) / 2) {
        println!(
            "median of {runs}: {:.1} ms per partition with the upload ahead (target 600 ms)",
            ms(*w)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The synthetic partition has the shape its parameters claim: the CPU backend proves
    /// it (its shape checks pass) and the counts follow PoRep's densities.
    #[test]
    fn synthetic_partition_is_consistent() {
        let shape = Shape::new(Kind::Porep, 10);
        assert_eq!(shape.constraints, (POREP_CONSTRAINTS >> 17) as usize);
        let asg = assignment(shape, 3);
        let q = lens(&asg);
        assert_eq!(q.h, 1023);
        assert!(q.a > q.l * 9 / 10 && q.b_g1 < q.l / 2);
        let ones = asg.aux.iter().filter(|x| **x == Scalar::ONE).count();
        assert!(ones > asg.aux.len() / 4, "mostly bits");
        let srs = Srs::from_parameters(host_params(&asg, 1));
        let proof = CpuBackend.prove(&srs, asg, Scalar::ONE, Scalar::ONE, 0);
        assert!(proof.is_ok(), "{proof:?}");
    }

    /// Percent of `values` that are neither 0 nor 1.
    fn wide_percent<'a>(values: impl Iterator<Item = &'a Scalar>) -> f64 {
        let (mut n, mut wide) = (0usize, 0usize);
        for v in values {
            n += 1;
            if *v != Scalar::ZERO && *v != Scalar::ONE {
                wide += 1;
            }
        }
        100.0 * wide as f64 / n as f64
    }

    /// The measured shapes have the mixes they claim: PoRep's values 2.9% full width overall
    /// and about 8% in B, 25.4% of them in B; WindowPoSt's values full width but 0.9%, with
    /// its densities; both proved by the CPU backend.
    #[test]
    fn measured_shapes_have_their_mixes() {
        let asg = assignment(Shape::new(Kind::PorepMeasured, 16), 5);
        let all = wide_percent(asg.aux.iter());
        assert!((2.6..3.2).contains(&all), "PoRep: {all}% full width");
        let in_b = asg.b_aux_density.iter().zip(&asg.aux).filter(|(d, _)| *d);
        let b = wide_percent(in_b.map(|(_, v)| v));
        assert!((7.0..9.5).contains(&b), "PoRep's B: {b}% full width");
        let b_share = asg.b_aux_density.count() as f64 / asg.aux.len() as f64;
        assert!((0.245..0.263).contains(&b_share), "PoRep: {b_share} in B");

        let shape = Shape::new(Kind::WindowPost, 16);
        assert_eq!(shape.constraints, (WINDOW_POST_CONSTRAINTS >> 11) as usize);
        let asg = assignment(shape, 5);
        let all = wide_percent(asg.aux.iter());
        assert!((98.8..99.4).contains(&all), "WindowPoSt: {all}% full width");
        let q = lens(&asg);
        let a = q.a as f64 / q.l as f64;
        let b = asg.b_aux_density.count() as f64 / q.l as f64;
        assert!(
            (0.75..0.77).contains(&a) && (0.71..0.74).contains(&b),
            "{a} {b}"
        );

        for kind in [Kind::PorepMeasured, Kind::WindowPost, Kind::Snap] {
            let asg = assignment(Shape::new(kind, 10), 3);
            let srs = Srs::from_parameters(host_params(&asg, 1));
            let proof = CpuBackend.prove(&srs, asg, Scalar::ONE, Scalar::ONE, 0);
            assert!(proof.is_ok(), "{kind:?}: {proof:?}");
        }
        assert_eq!(Kind::parse(Some("window-post")), Ok(Kind::WindowPost));
        assert_eq!(Kind::parse(Some("snap")), Ok(Kind::Snap));
        assert_eq!(Shape::new(Kind::Snap, 27).constraints, 81_049_499);
        assert!(Kind::parse(Some("post")).is_err());
    }
}
