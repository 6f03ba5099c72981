//! Benchmark of the GPU kernels on one device, printed beside sppark's times on an H200
//! and cuzk's targets (docs/benchmarks.md records the results).
//!
//! Usage: `kernels_bench [--quick] [--max-log N] [--only ntt|g1|g2|overlap|chunked|batch|streamed-h]
//! [--profile msm|ntt|all] [--kernel-cache DIR]` on a GPU machine (`--profile` prints the time
//! of each step of the MSMs, of the transforms' passes, or both, which slows them:
//! `cuzk_kernels::profile`; `--kernel-cache` names the CUBIN cache). Times are medians of
//! several runs after a warm-up, each run ending with a device synchronisation. MSM times are
//! with bases and scalars already on the device; the "+ H2D" column adds uploading scalars
//! from the host; the "Filecoin scalars" column is the same MSM over witness-shaped scalars (40% zero, 35%
//! one, 15% below 2^32, 10% full width: `testdata::filecoin_scalars`).
//! Points: 2^22 distinct random G1 points (2^20 for G2), repeated to fill larger sizes. G1
//! runs up to 2^28 points where the device and the host have the memory for it (an H200
//! does), else up to 2^26.

use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_kernels::testdata::{filecoin_scalars, g1_points, g2_points, porep_scalars, scalars};
use cuzk_kernels::{
    msm_scratch_bytes, BaseRing, Bases, DeviceBuffer, DeviceOnesAndRest, G1Bases, GpuDevice,
    MsmCurve, NttKind, OnesAndRest, PinnedPoints, StepTiming, WindowSpan, G1, G2,
};

/// What every bench step returns: a device error, or one of the arguments', ends the run with
/// its message (no step panics on a device error).
type BenchResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// The values `--only` takes: one table (or one of the extra measurements) instead of all.
const ONLY: &[&str] = &[
    "ntt",
    "g1",
    "g2",
    "overlap",
    "chunked",
    "batch",
    "streamed-h",
];

/// `n` G1 bases on the device: min(n, 2^22) distinct random points, repeated (tiled on the
/// device from one upload of the distinct points).
fn tiled_g1_bases(dev: &GpuDevice, n: usize) -> BenchResult<G1Bases> {
    Ok(dev.tile_bases::<G1>(&g1_points(2, n.min(1 << 22)), n)?)
}

/// Bytes of memory the host can still give this process (Linux `MemAvailable`), or 0 where
/// that cannot be read.
fn host_available_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib << 10)
        })
        .unwrap_or(0)
}

/// log2 of the largest G1 MSM the run covers: `max_log` when given (`--max-log N`), else 2^28
/// or 2^27 where the device has free memory for its bases, two scalar buffers and the MSM's
/// scratch, and the host for the scalars it builds (the bases are tiled on the device from
/// 2^22 points; an H200 host has the memory), else 2^26;
/// 2^22 with `--quick`.
fn max_g1_log(dev: &GpuDevice, quick: bool, max_log: Option<u32>) -> u32 {
    if quick {
        return 22;
    }
    if let Some(log) = max_log {
        return log;
    }
    let free = dev.free_memory().map_or(0, |f| f as u64);
    let host = host_available_bytes();
    for log in [28u32, 27] {
        let n = 1u64 << log;
        let device = n * (96 + 2 * 32) + msm_scratch_bytes::<G1>(n as usize) + (1 << 30);
        // the two scalar vectors (random and witness-shaped), and room for the rest
        let on_host = n * (2 * 32) + (4 << 30);
        if device <= free && on_host <= host {
            return log;
        }
    }
    26
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The median time of `runs` calls of `f` after one untimed call (the warm-up, which also
/// compiles or loads the kernels); the first error ends the measurement.
fn time<F: FnMut() -> cuzk_kernels::Result<()>>(
    runs: usize,
    mut f: F,
) -> cuzk_kernels::Result<Duration> {
    f()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed());
    }
    Ok(median(times))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // the error's message (Display), not its Debug form
            eprintln!("kernels_bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> BenchResult {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // --only WHAT: one of ONLY; a missing or unknown WHAT is an error, not every table
    let only = match args.iter().position(|a| a == "--only") {
        None => None,
        Some(i) => match args.get(i + 1) {
            Some(what) if ONLY.contains(&what.as_str()) => Some(what.clone()),
            _ => return Err(format!("--only takes one of {}", ONLY.join(", ")).into()),
        },
    };
    let want = |what: &str| only.as_deref().is_none_or(|o| o == what);
    // --max-log N: the largest G1 MSM, 2^N; a missing or out-of-range N is an error, not the default
    let max_log = match args.iter().position(|a| a == "--max-log") {
        None => None,
        Some(i) => match args.get(i + 1).and_then(|v| v.parse::<u32>().ok()) {
            Some(log) if (20..=28).contains(&log) => Some(log),
            _ => return Err("--max-log takes a number from 20 to 28".into()),
        },
    };
    // --profile WHAT: step timing of the MSMs, the transforms or both
    let timing = match args.iter().position(|a| a == "--profile") {
        None => StepTiming::default(),
        Some(i) => args
            .get(i + 1)
            .and_then(|what| StepTiming::parse(what))
            .ok_or("--profile takes msm, ntt or all")?,
    };
    let mut dev = GpuDevice::open(0)?;
    dev.set_step_timing(timing);
    // --kernel-cache DIR: where compiled modules are read and stored
    if let Some(i) = args.iter().position(|a| a == "--kernel-cache") {
        let dir = args.get(i + 1).ok_or("--kernel-cache takes a directory")?;
        dev.set_kernel_cache(dir.into());
    }
    println!(
        "# cuzk-kernels bench on {} ({}, PCI {}, {} GiB)",
        dev.name(),
        dev.arch(),
        dev.pci_id(),
        dev.total_memory() >> 30
    );
    let runs = if quick { 3 } else { 5 };

    if want("ntt") {
        bench_ntt(&dev, quick, runs)?;
    }
    if want("g1") {
        bench_g1(&dev, quick, runs, max_log)?;
    }
    if want("g2") {
        bench_g2(&dev, quick, runs)?;
    }
    if only.as_deref() == Some("overlap") {
        bench_overlap(&dev, runs)?;
    }
    if only.as_deref() == Some("chunked") {
        bench_chunked(&dev, runs)?;
    }
    if only.as_deref() == Some("batch") {
        bench_batch(&dev, runs)?;
    }
    if only.as_deref() == Some("streamed-h") {
        bench_streamed_h(&dev, runs)?;
    }
    Ok(())
}

/// A G1 MSM of 2^27 points (a partition's H MSM, in two chunks of `msm::MAX_CHUNK`) over
/// random and witness-shaped scalars, bases and scalars on the device. Only with `--only
/// chunked` (about 25 GiB of device memory, 15 GiB of host memory).
fn bench_chunked(dev: &GpuDevice, runs: usize) -> BenchResult {
    let n = 1usize << 27;
    let bases = tiled_g1_bases(dev, n)?;
    println!("\n## G1 MSM 2^27, two chunks of 2^26 (bases and scalars on the device)");
    println!("| scalars | cuzk ms |");
    println!("|---|---|");
    for (what, sc) in [
        ("random", scalars(3, n)),
        ("Filecoin-shaped", filecoin_scalars(7, n)),
    ] {
        let d = dev.upload(&sc)?;
        drop(sc);
        let t = time(runs.min(3), || {
            dev.msm_g1_device(&bases, 0..n, &d).map(drop)
        })?;
        println!("| {what} | {:.1} |", ms(t));
    }
    Ok(())
}

/// Streamed G1 MSMs of PoRep-mixed scalars (51.4% zero, 47.3% one), as a partition's L, A
/// and B_G1 queries are proved on a card too small for their bases: 2^24 bases in page-locked
/// host memory cross the link in chunks of 2^21 through a ring of two buffers. Rows: the
/// copies alone (a set of zeros: nothing to add), batches of 1 and 10 sets
/// (`msm_streamed_batch`, the bases crossing once a batch), one set through the full streamed
/// MSM, and one set with the bases resident. Only with `--only batch` (1.6 GB of host
/// memory, 2.5 GB of device memory).
fn bench_batch(dev: &GpuDevice, runs: usize) -> BenchResult {
    let (n, chunk, k) = (1usize << 24, 1usize << 21, 10);
    let uniq = g1_points(2, 1 << 20);
    let host: Vec<_> = (0..n).map(|i| uniq[i % uniq.len()]).collect();
    let pinned = PinnedPoints::register(dev, std::sync::Arc::new(host))?;
    let mut ring = BaseRing::<G1>::new(dev, chunk, 2)?;
    let mixed: Vec<Vec<Scalar>> = (0..k as u64).map(|j| porep_scalars(10 + j, n)).collect();
    let sets = mixed
        .iter()
        .map(|s| dev.upload_ones_and_rest(OnesAndRest::classify(s)?))
        .collect::<cuzk_kernels::Result<Vec<DeviceOnesAndRest>>>()?;
    let no_ones = vec![<Scalar as ff::Field>::ZERO; n];
    let zeros = dev.upload_ones_and_rest(OnesAndRest::classify(&no_ones)?)?;
    drop(no_ones);
    let full = dev.upload(&mixed[0])?;
    let chunks = n.div_ceil(chunk) as f64;
    let gb = (n * 96) as f64 / 1e9;
    println!("\n## Streamed G1 MSMs, 2^24 bases from page-locked memory, chunks of 2^21");
    println!("| what | ms | ms a chunk | ms a set | GB/s of bases |");
    println!("|---|---|---|---|---|");
    let row = |what: &str, sets: usize, t: Duration| {
        println!(
            "| {what} | {:.1} | {:.2} | {:.1} | {:.1} |",
            ms(t),
            ms(t) / chunks,
            ms(t) / sets as f64,
            gb / t.as_secs_f64()
        )
    };
    let pts = pinned.as_slice();
    let t = time(runs, || {
        dev.msm_streamed_batch(pts, 0..n, &[&zeros], &mut ring)
            .map(drop)
    })?;
    row("copies alone (a set of zeros)", 1, t);
    for count in [1, k] {
        let refs: Vec<&DeviceOnesAndRest> = sets.iter().take(count).collect();
        let t = time(runs, || {
            dev.msm_streamed_batch(pts, 0..n, &refs, &mut ring)
                .map(drop)
        })?;
        row(&format!("batch of {count}"), count, t);
    }
    let t = time(runs, || {
        dev.msm_streamed(pts, 0..n, &full, 0, &mut ring, WindowSpan::Chunk)
            .map(drop)
    })?;
    row("one set, full streamed MSM", 1, t);
    drop(ring);
    let bases = tiled_g1_bases(dev, n)?;
    let t = time(runs, || dev.msm_g1_device(&bases, 0..n, &full).map(drop))?;
    row("one set, bases resident", 1, t);
    Ok(())
}

/// A 32 GiB partition's H MSM (2^27 - 1 G1 points, random scalars) with its bases streamed
/// from page-locked host memory through a ring of two buffers: chunks of 2^21 (the ring a
/// 16 GiB budget gives) and of 2^23, each chunk's windows planned alone against every
/// chunk's planned for the whole query ([`WindowSpan`]), in turn twice; then the same MSM
/// with the bases resident. Only with `--only streamed-h` (13 GB of page-locked host memory,
/// 23 GB of device memory).
fn bench_streamed_h(dev: &GpuDevice, runs: usize) -> BenchResult {
    let n = (1usize << 27) - 1;
    let uniq = g1_points(2, 1 << 20);
    let host: Vec<_> = (0..n).map(|i| uniq[i % uniq.len()]).collect();
    let pinned = PinnedPoints::register(dev, std::sync::Arc::new(host))?;
    let sc = dev.upload(&scalars(3, n))?;
    let gb = (n * 96) as f64 / 1e9;
    println!("\n## H MSM 2^27 - 1, bases streamed through two buffers (random scalars)");
    println!("| chunk | windows planned | ms | GB/s of bases |");
    println!("|---|---|---|---|");
    let pts = pinned.as_slice();
    for log in [21u32, 23] {
        let mut ring = BaseRing::<G1>::new(dev, 1 << log, 2)?;
        for _ in 0..2 {
            for span in [WindowSpan::Chunk, WindowSpan::Whole] {
                let t = time(runs.min(3), || {
                    dev.msm_streamed(pts, 0..n, &sc, 0, &mut ring, span)
                        .map(drop)
                })?;
                let what = match span {
                    WindowSpan::Chunk => "each chunk alone",
                    WindowSpan::Whole => "for the whole query",
                };
                let secs = t.as_secs_f64();
                println!("| 2^{log} | {what} | {:.1} | {:.1} |", ms(t), gb / secs);
            }
        }
    }
    drop(pinned);
    let bases = tiled_g1_bases(dev, n)?;
    let t = time(runs.min(3), || {
        dev.msm_g1_device(&bases, 0..n, &sc).map(drop)
    })?;
    println!("| resident | chunks of 2^26 | {:.1} | |", ms(t));
    Ok(())
}

/// Two streams of one device at once, against the same work in turn: the H polynomial at
/// 2^27 (a partition's NTT phase), a G1 MSM of 2^26 random scalars (half of its H MSM) and
/// G1 MSMs of 2^26 witness-shaped scalars (its L, A and B MSMs are such). Only with
/// `--only overlap`.
fn bench_overlap(dev: &GpuDevice, runs: usize) -> BenchResult {
    println!("\n## Two streams at once (G1, H200 partition shapes)");
    let side = dev.side_stream()?;
    let n = 1usize << 26;
    let bases = tiled_g1_bases(dev, n)?;
    let rnd = dev.upload(&scalars(3, n))?;
    let fil = dev.upload(&filecoin_scalars(7, n))?;
    let m = 1usize << 27;
    let data = scalars(1, m);
    let mut abc = [
        side.upload(&data)?,
        side.upload(&data)?,
        side.upload(&data)?,
    ];
    drop(data);
    dev.synchronize()?;
    side.synchronize()?;
    let z = cuzk_kernels::coset_z_inverse(27);
    let h = |d: &GpuDevice, abc: &mut [DeviceBuffer<Scalar>; 3]| h_polynomial(d, abc, z);
    let msm = |d: &GpuDevice, s: &DeviceBuffer<Scalar>, k: usize| {
        for _ in 0..k {
            d.msm_g1_device(&bases, 0..n, s)?;
        }
        d.synchronize()
    };
    let t_h = time(runs, || h(&side, &mut abc))?;
    let t_r = time(runs, || msm(dev, &rnd, 1))?;
    let t_f3 = time(runs, || msm(dev, &fil, 3))?;
    println!(
        "alone: H 2^27 {:.1} ms, MSM 2^26 random {:.1} ms, 3 x MSM 2^26 witness-shaped {:.1} ms",
        ms(t_h),
        ms(t_r),
        ms(t_f3)
    );
    println!("| side stream | main stream | in turn ms | at once ms | saved |");
    println!("|---|---|---|---|---|");
    type Step<'a> = &'a (dyn Fn() -> cuzk_kernels::Result<()> + Sync);
    let pair = |name_a: &str,
                name_b: &str,
                alone: Duration,
                fa: &mut dyn FnMut() -> cuzk_kernels::Result<()>,
                fb: Step|
     -> cuzk_kernels::Result<()> {
        let both = time(runs, || {
            std::thread::scope(|sc| {
                let j = sc.spawn(fb);
                let a = fa();
                // a panic on the other thread is passed on as it is
                let b = j.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                a.and(b)
            })
        })?;
        println!(
            "| {name_a} | {name_b} | {:.1} | {:.1} | {:.1}% |",
            ms(alone),
            ms(both),
            100.0 * (1.0 - both.as_secs_f64() / alone.as_secs_f64())
        );
        Ok(())
    };
    pair(
        "H 2^27",
        "3 x MSM witness-shaped",
        t_h + t_f3,
        &mut || h(&side, &mut abc),
        &|| msm(dev, &fil, 3),
    )?;
    pair(
        "H 2^27",
        "MSM random",
        t_h + t_r,
        &mut || h(&side, &mut abc),
        &|| msm(dev, &rnd, 1),
    )?;
    pair(
        "MSM random (side)",
        "3 x MSM witness-shaped",
        t_r + t_f3,
        &mut || msm(&side, &rnd, 1),
        &|| msm(dev, &fil, 3),
    )?;
    Ok(())
}

/// Groth16's H on the device as the engine runs it (engine/src/cuda/ntt.rs): a, b, c each
/// from evaluations to the coset, `(a*b - c) / Z`, back to coefficients in `a`; `z` is
/// [`cuzk_kernels::coset_z_inverse`] of the size. Ends with a device synchronisation.
fn h_polynomial(
    dev: &GpuDevice,
    abc: &mut [DeviceBuffer<Scalar>; 3],
    z: Scalar,
) -> cuzk_kernels::Result<()> {
    let [a, b, c] = abc;
    for v in [&mut *a, &mut *b, &mut *c] {
        dev.evaluations_to_coset(v)?;
    }
    dev.fr_mul_sub_assign(a, b, c)?;
    dev.ntt_scaled(a, NttKind::CosetInverse, z)?;
    dev.synchronize()
}

fn bench_ntt(dev: &GpuDevice, quick: bool, runs: usize) -> BenchResult {
    println!("\n## Fr NTT (forward, data on the device)");
    println!("| size | cuzk ms | sppark ms | target ms |");
    println!("|---|---|---|---|");
    let max_ntt = if quick { 24 } else { 27 };
    let data = scalars(1, 1 << max_ntt);
    for log in 20..=max_ntt {
        let mut buf = dev.upload(&data[..1 << log])?;
        let t = time(runs, || {
            dev.ntt(&mut buf, NttKind::Forward)?;
            dev.synchronize()
        })?;
        let sppark = match log {
            20 => "0.26",
            24 => "4.42",
            27 => "42.3",
            _ => "",
        };
        let target = if log == 27 { "35" } else { "" };
        println!("| 2^{log} | {:.2} | {sppark} | {target} |", ms(t));
    }

    // Groth16's H on the device: a, b, c each from evaluations to the coset, (a*b - c) / Z,
    // back to coefficients; with the coset factors in the twiddles and the constants left to
    // kappa (as the engine runs it), fused with separate coset passes (the engine's earlier
    // form), and
    // the plain sequence of transforms and element-wise passes, in the same run.
    // The first column is the engine's path for a satisfied assignment (c = a b: the check
    // and six transforms), set up before each run and not timed; the others run on whatever
    // the previous run left, which is not a product (seven transforms, after the check).
    println!("\n## Groth16 H polynomial (a, b, c on the device)");
    println!("| size | c = a b: six transforms ms | coset twiddles ms | fused ms | plain transforms ms |");
    println!("|---|---|---|---|---|");
    for log in [20, 24, max_ntt] {
        let n = 1usize << log;
        let mut bufs = [
            dev.upload(&data[..n])?,
            dev.upload(&data[..n])?,
            dev.upload(&data[..n])?,
        ];
        let z = cuzk_kernels::coset_z_inverse(log);
        let mut six = Vec::with_capacity(runs + 1);
        for _ in 0..=runs {
            let [a, b, c] = &mut bufs;
            dev.stream().memcpy_dtod(a.raw(), c.raw_mut())?;
            dev.fr_mul_assign(c, b)?;
            dev.synchronize()?;
            let t = Instant::now();
            dev.h_polynomial_scaled(a, b, c)?;
            dev.synchronize()?;
            six.push(t.elapsed());
        }
        six.remove(0); // warm-up
        let six = median(six);
        let twiddles = time(runs, || {
            let [a, b, c] = &mut bufs;
            dev.h_polynomial_scaled(a, b, c)?;
            dev.synchronize()
        })?;
        let fused = time(runs, || h_polynomial(dev, &mut bufs, z))?;
        let plain = time(runs, || {
            let [a, b, c] = &mut bufs;
            for v in [&mut *a, &mut *b, &mut *c] {
                dev.ntt(v, NttKind::Inverse)?;
                dev.ntt(v, NttKind::CosetForward)?;
            }
            dev.fr_mul_assign(a, b)?;
            dev.fr_sub_assign(a, c)?;
            dev.fr_scale(a, z)?;
            dev.ntt(a, NttKind::CosetInverse)?;
            dev.synchronize()
        })?;
        println!(
            "| 2^{log} | {:.2} | {:.2} | {:.2} | {:.2} |",
            ms(six),
            ms(twiddles),
            ms(fused),
            ms(plain)
        );
    }
    Ok(())
}

fn bench_g1(dev: &GpuDevice, quick: bool, runs: usize, max_log: Option<u32>) -> BenchResult {
    println!("\n## G1 MSM (bases on the device)");
    let max_g1 = max_g1_log(dev, quick, max_log);
    let bases = tiled_g1_bases(dev, 1 << max_g1)?;
    let sppark = [
        (20, "22.3"),
        (22, "54.6"),
        (24, "162"),
        (26, "566"),
        (28, "2187"),
    ];
    msm_rows(dev, &bases, max_g1, runs, &sppark, (26, "300"))
}

fn bench_g2(dev: &GpuDevice, quick: bool, runs: usize) -> BenchResult {
    println!("\n## G2 MSM (bases on the device)");
    let max_g2 = if quick { 21 } else { 24 };
    let bases = dev.tile_bases::<G2>(&g2_points(4, 1 << 20), 1 << max_g2)?;
    let sppark = [(20, "49.2"), (22, "140"), (24, "457")];
    msm_rows(dev, &bases, max_g2, runs, &sppark, (24, "250"))
}

/// An MSM table, one row a size 2^20 ..= 2^`max_log` over the first points of `bases`: the
/// MSM over random scalars on the device, the same with the scalars' upload from the host,
/// the MSM over witness-shaped scalars on the device, then sppark's time on an H200
/// (`sppark`: (log, ms)) and the target (`target`: (log, ms)) where there is one.
fn msm_rows<C: MsmCurve>(
    dev: &GpuDevice,
    bases: &Bases<C>,
    max_log: u32,
    runs: usize,
    sppark: &[(u32, &str)],
    target: (u32, &str),
) -> BenchResult {
    println!(
        "| size | cuzk ms | + H2D of scalars ms | Filecoin scalars ms | sppark ms | target ms |"
    );
    println!("|---|---|---|---|---|---|");
    let sc = scalars(3, 1 << max_log);
    let fc = filecoin_scalars(7, 1 << max_log);
    for log in 20..=max_log {
        let n = 1usize << log;
        let dsc = dev.upload(&sc[..n])?;
        let t = time(runs.min(3), || dev.msm::<C>(bases, 0..n, &dsc).map(drop))?;
        let th = time(1, || dev.msm_host::<C>(bases, 0..n, &sc[..n]).map(drop))?;
        let dfc = dev.upload(&fc[..n])?;
        let tf = time(runs.min(3), || dev.msm::<C>(bases, 0..n, &dfc).map(drop))?;
        drop(dfc);
        let sppark = sppark
            .iter()
            .find(|(l, _)| *l == log)
            .map_or("", |(_, ms)| *ms);
        let target = if log == target.0 { target.1 } else { "" };
        println!(
            "| 2^{log} | {:.1} | {:.1} | {:.1} | {sppark} | {target} |",
            ms(t),
            ms(th),
            ms(tf)
        );
    }
    Ok(())
}
