//! Seeded random inputs for tests and benchmarks: scalars and curve points made quickly.
//! Test support, not product API: compiled only with the crate's `testdata` feature, which
//! the crate's tests, `kernels_bench` and the engine's benchmarks turn on. Functions here may
//! panic (they serve tests).
//!
//! Points are generated in chunks: chunk c holds `B_c + i * A_c` for random `A_c`, `B_c`,
//! computed with one addition per point in parallel over chunks, then batch-normalised.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

const CHUNK: usize = 1024;

/// `n` random scalars from `seed` (parallel, deterministic).
pub fn scalars(seed: u64, n: usize) -> Vec<Scalar> {
    seeded_scalars(seed ^ 0x5ca1a7, n, |rng| Scalar::random(rng))
}

/// `n` scalars drawn by `draw` in parallel chunks of 2^14, chunk c from its own generator
/// seeded with `seed ^ (c << 32)` (deterministic whatever the thread count).
fn seeded_scalars(
    seed: u64,
    n: usize,
    draw: impl Fn(&mut ChaCha8Rng) -> Scalar + Sync,
) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(1 << 14)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((c as u64) << 32));
            chunk.iter_mut().for_each(|s| *s = draw(&mut rng));
        });
    out
}

/// `n` scalars shaped like a Filecoin witness (the aux values of a PoRep partition, as in
/// `gpu_partition_bench`): 40% zero, 35% one, 15% below 2^32, 10% full width, in random
/// order (parallel, deterministic).
pub fn filecoin_scalars(seed: u64, n: usize) -> Vec<Scalar> {
    seeded_scalars(seed ^ 0xf11e, n, |rng| match rng.next_u32() % 100 {
        0..40 => Scalar::ZERO,
        40..75 => Scalar::ONE,
        75..90 => Scalar::from(u64::from(rng.next_u32())),
        _ => Scalar::random(rng),
    })
}

/// `n` scalars mixed as the aux values of a real 32 GiB PoRep partition (measured): 51.4%
/// zero, 47.3% one, 1.3% full width, in random order (parallel, deterministic).
pub fn porep_scalars(seed: u64, n: usize) -> Vec<Scalar> {
    seeded_scalars(seed ^ 0x9e9, n, |rng| match rng.next_u32() % 1000 {
        0..514 => Scalar::ZERO,
        514..987 => Scalar::ONE,
        _ => Scalar::random(rng),
    })
}

fn points<P: Group + Curve + Send + Sync>(seed: u64, n: usize) -> Vec<P::AffineRepr>
where
    P::AffineRepr: Send + Sync + Copy + Default,
{
    let mut proj = vec![P::identity(); n];
    proj.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((c as u64) << 20) ^ 0xb45e);
            let a = P::random(&mut rng);
            let mut acc = P::random(&mut rng);
            for p in chunk.iter_mut() {
                *p = acc;
                acc += a;
            }
        });
    let mut out = vec![P::AffineRepr::default(); n];
    out.par_chunks_mut(CHUNK)
        .zip(proj.par_chunks(CHUNK))
        .for_each(|(o, p)| P::batch_normalize(p, o));
    out
}

/// `n` random G1 points from `seed`.
pub fn g1_points(seed: u64, n: usize) -> Vec<G1Affine> {
    points::<G1Projective>(seed, n)
}

/// `n` random G2 points from `seed`.
pub fn g2_points(seed: u64, n: usize) -> Vec<G2Affine> {
    points::<G2Projective>(seed, n)
}

/// `sum s_i P_i` on the CPU with blst's Pippenger, in parallel chunks.
pub fn msm_g1_cpu(points: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    let proj: Vec<G1Projective> = points.par_iter().map(|p| p.to_curve()).collect();
    proj.par_chunks(1 << 15)
        .zip(scalars.par_chunks(1 << 15))
        .map(|(p, s)| G1Projective::multi_exp(p, s))
        .reduce(G1Projective::identity, |a, b| a + b)
}

/// `sum s_i P_i` over G2 on the CPU with blst's Pippenger, in parallel chunks.
pub fn msm_g2_cpu(points: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
    let proj: Vec<G2Projective> = points.par_iter().map(|p| p.to_curve()).collect();
    proj.par_chunks(1 << 15)
        .zip(scalars.par_chunks(1 << 15))
        .map(|(p, s)| G2Projective::multi_exp(p, s))
        .reduce(G2Projective::identity, |a, b| a + b)
}

/// The seed for a test run: `$CUZK_TEST_SEED` if set, else derived from the clock.
pub fn seed() -> u64 {
    if let Some(s) = std::env::var("CUZK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return s;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// The affine identity (x = y = 0 in blst's layout).
pub fn g1_identity() -> G1Affine {
    G1Affine::identity()
}

/// Compiles `kernels/cuda/{name}.cpp` (a host check of kernel code: the `.cuh` it includes
/// is the code the kernels run) with the host's C++ compiler (`$CXX`, else `c++`), C++17,
/// `-O2` and `flags`, into a fresh temporary directory, and returns the executable's path.
/// Panics with the compiler's name when it cannot run or fails: for tests only.
pub fn compile_host_check(name: &str, flags: &[&str]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cuzk-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    let exe = dir.join(name);
    let cuda = concat!(env!("CARGO_MANIFEST_DIR"), "/cuda");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let status = std::process::Command::new(&cxx)
        .args(["-O2", "-std=c++17", "-I", cuda])
        .args(flags)
        .arg(format!("{cuda}/{name}.cpp"))
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cxx}: {e}"));
    assert!(status.success(), "{cxx} failed to compile cuda/{name}.cpp");
    exe
}
