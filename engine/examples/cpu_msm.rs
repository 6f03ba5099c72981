//! The CPU MSM's Pippenger runs, blst's against the batch-affine buckets of
//! `cuzk_engine::cpu::batch_affine`, alternated in one process on the same inputs (2^log
//! distinct points, random scalars of `bits` bits), the two sums compared every run; `fp`
//! times blst's Fp product and inversion instead (the inversion's cost in the window plan).
//!
//! `cargo run --release -p cuzk-engine --example cpu_msm -- [g1|g2|fp] [log n: 20] [runs: 3] [bits: 255] [log chunk]`
//! (with `log chunk`, the batch-affine side runs in chunks of 2^chunk points, as the prover's
//! G2 runs do: `batch_affine::msm_chunked`)
use std::time::{Duration, Instant};

use blst::{blst_p1_affine, blst_p2_affine, MultiPoint};
use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_engine::cpu::batch_affine::{self, BaCurve, G1, G2};
use ff::{Field, PrimeField};
use group::{Curve, Group};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args()
        .nth(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// `n` distinct points g, g + h, g + 2h, ... in blst's affine form (`raw`), made in blocks on
/// rayon's pool, each block from g + (its first index) h, so that only the output is held
/// whole (2^26 G2 points: 12 GiB).
fn chain<P, R>(n: usize, g: P, h: P, raw: fn(&P::AffineRepr) -> R) -> Vec<R>
where
    P: Curve + Group<Scalar = Scalar> + Send + Sync,
    P::AffineRepr: Default + Copy,
    R: Default + Copy + Send,
{
    const BLOCK: usize = 1 << 14;
    let mut out = vec![R::default(); n];
    out.par_chunks_mut(BLOCK).enumerate().for_each(|(b, dst)| {
        let mut p = g + h * Scalar::from((b * BLOCK) as u64);
        let mut proj = Vec::with_capacity(dst.len());
        for _ in 0..dst.len() {
            proj.push(p);
            p += h;
        }
        let mut affine = vec![P::AffineRepr::default(); dst.len()];
        P::batch_normalize(&proj, &mut affine);
        for (d, a) in dst.iter_mut().zip(&affine) {
            *d = raw(a);
        }
    });
    out
}

/// A random scalar below 2^bits.
fn scalar(rng: &mut ChaCha8Rng, bits: usize) -> Scalar {
    if bits >= 255 {
        return Scalar::random(&mut *rng);
    }
    let mut repr = Scalar::random(&mut *rng).to_repr();
    for (i, byte) in repr.iter_mut().enumerate() {
        let keep = bits.saturating_sub(8 * i).min(8);
        *byte &= ((1u16 << keep) - 1) as u8;
    }
    Option::from(Scalar::from_repr(repr)).unwrap_or(Scalar::ZERO)
}

/// Runs both sums `runs` times and prints their times; errors if they ever differ.
fn compare<C: BaCurve>(
    raw: &[C::Raw],
    bytes: &[u8],
    nbits: usize,
    runs: usize,
    chunk: Option<usize>,
    blst: impl Fn() -> C::Proj,
) -> Result<(), String>
where
    C::Proj: PartialEq,
{
    for r in 0..runs {
        let t = Instant::now();
        let a = blst();
        let tb = t.elapsed();
        let t = Instant::now();
        let b = match chunk {
            Some(k) => batch_affine::msm_chunked::<C>(raw, bytes, nbits.div_ceil(8), nbits, k)?,
            None => batch_affine::msm::<C>(raw, bytes, nbits.div_ceil(8), nbits)?,
        };
        let ta = t.elapsed();
        if a != b {
            return Err(format!("run {r}: the two sums differ"));
        }
        println!(
            "run {r}: blst {tb:.3?}, batch-affine {ta:.3?} ({:.2}x)",
            tb.as_secs_f64() / ta.as_secs_f64()
        );
    }
    Ok(())
}

fn per_op(d: Duration, k: u32) -> f64 {
    d.as_nanos() as f64 / k as f64
}

fn main() -> Result<(), String> {
    let curve: String = arg(1, "g1".to_string());
    let log: u32 = arg(2, 20);
    let runs: usize = arg(3, 3);
    let bits: usize = arg(4, 255usize).clamp(1, 255);
    // batch-affine runs in chunks of 2^chunk_log points (msm_chunked) when given, else whole
    let chunk_log: u32 = arg(5, 0);
    let chunk = (chunk_log > 0).then(|| 1usize << chunk_log);
    let n = 1usize << log;
    let mut rng = ChaCha8Rng::from_seed([5; 32]);
    // blst reads whole bytes: the scalars are stored in nbits / 8 bytes each.
    let nbits = if bits >= 255 {
        255
    } else {
        bits.div_ceil(8) * 8
    };
    let bytes: Vec<u8> = (0..n)
        .flat_map(|_| scalar(&mut rng, bits).to_repr()[..nbits.div_ceil(8)].to_vec())
        .collect();
    let threads = rayon::current_num_threads();
    // the plan of one batch-affine run: the whole, or one chunk
    let (c, ranges) = batch_affine::plan(chunk.map_or(n, |k| k.min(n)), nbits, threads);
    println!(
        "{curve} 2^{log}, {bits}-bit scalars, {threads} threads; batch-affine: {c}-bit windows, {ranges} range(s) a window{}",
        chunk.map_or(String::new(), |k| format!(" in chunks of {k} points"))
    );
    match curve.as_str() {
        "g1" => {
            let raw = chain(
                n,
                G1Projective::random(&mut rng),
                G1Projective::random(&mut rng),
                |p: &G1Affine| -> blst_p1_affine { *p.as_ref() },
            );
            compare::<G1>(&raw, &bytes, nbits, runs, chunk, || {
                let a = raw.as_slice().mult(&bytes, nbits);
                G1Projective::from_raw_unchecked(Fp::from(a.x), Fp::from(a.y), Fp::from(a.z))
            })
        }
        "g2" => {
            let raw = chain(
                n,
                G2Projective::random(&mut rng),
                G2Projective::random(&mut rng),
                |p: &G2Affine| -> blst_p2_affine { *p.as_ref() },
            );
            compare::<G2>(&raw, &bytes, nbits, runs, chunk, || {
                let a = raw.as_slice().mult(&bytes, nbits);
                G2Projective::from_raw_unchecked(Fp2::from(a.x), Fp2::from(a.y), Fp2::from(a.z))
            })
        }
        "fp" => {
            let mut a = Fp::random(&mut rng);
            let b = Fp::random(&mut rng);
            let k = 10_000_000;
            let t = Instant::now();
            for _ in 0..k {
                a *= b;
            }
            let tm = t.elapsed();
            let t = Instant::now();
            for _ in 0..1000 {
                a = Option::<Fp>::from(a.invert()).unwrap_or(b) + b;
            }
            let ti = t.elapsed();
            println!(
                "({}) Fp product {:.1} ns, inversion {:.0} ns (dependent chains, one thread)",
                rng.next_u32() ^ (a.to_bytes_le()[0] as u32),
                per_op(tm, k),
                per_op(ti, 1000)
            );
            Ok(())
        }
        other => Err(format!("unknown curve {other}: g1, g2 or fp")),
    }
}
