//! Pippenger's bucket method with batch-affine bucket additions, for the CPU prover's
//! wide-scalar MSMs.
//!
//! Each window's buckets are affine points. Additions into them are gathered in batches of
//! up to [`BATCH`] distinct buckets and finished together: the slopes' denominators are
//! multiplied into one running product, inverted once (Montgomery's trick), and every
//! addition is finished on the way back. An addition then costs 5 products and a square
//! where blst's Pippenger (extended Jacobian, "XYZZ", buckets) spends 8 products and 2
//! squares; the inversion is shared by the batch. Each (window, range of points) is one task
//! on rayon's pool with its own buckets; the tasks' sums are combined at the end.
//!
//! Invariants:
//! - A batch names each bucket at most once. An entry for a bucket already in the batch waits
//!   in a queue for a later batch; when that queue outgrows four batches (crowded buckets:
//!   many equal digits), the surplus is added into a projective side bucket instead, so no
//!   input degrades to one inversion an addition.
//! - Every denominator is non-zero: x_q - x_b for distinct x, 2y_b for a doubling with y_b ≠
//!   0. P + (-P), and P + P for y = 0 (a 2-torsion point, which no prime-order base is),
//!   empty the bucket without a denominator.
//! - Digits are Booth-recoded, window by window, from the scalars' little-endian bytes:
//!   window w reads bits w·c - 1 .. w·c + c - 1 and yields a digit in [-2^(c-1), 2^(c-1)],
//!   so the buckets are 1 ..= 2^(c-1) and a negative digit adds the negated point.

use std::ops::AddAssign;

use blst::{blst_p1_affine, blst_p2_affine};
use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective};
use ff::Field;
use group::Group;
use rayon::prelude::*;

/// The most additions finished together (one inversion a batch).
pub const BATCH: usize = 512;

/// The batch for `buckets` buckets: at most a quarter of them, so that entries seldom meet
/// their bucket already in the batch.
pub fn batch_for(buckets: usize) -> usize {
    (buckets / 4).clamp(1, BATCH)
}

/// An inversion's cost in batch-affine additions, for [`plan`]: on the build machine blst's
/// Fp inversion takes 2.7-3.0 us and a G1 addition about 0.2-0.4 us (`cpu_msm fp`, and the
/// G1 runs). G2's ratio is lower (its additions cost about 3 times as much), so this errs
/// towards larger batches there.
const INVERSION_COST: f64 = 15.0;

/// A curve whose affine points the batch-affine method adds.
pub trait BaCurve: Sync {
    /// The coordinates' field.
    type F: Field;
    /// An affine point in blst's layout (all zeros for the identity).
    type Raw: Copy + Send + Sync;
    /// blstrs' affine point.
    type Affine;
    /// blstrs' projective point.
    type Proj: Group + for<'a> AddAssign<&'a Self::Affine> + Send;
    /// A point's coordinates.
    fn xy(p: &Self::Raw) -> (Self::F, Self::F);
    /// The affine point (x, y), which must be on the curve.
    fn affine(x: Self::F, y: Self::F) -> Self::Affine;
}

/// G1 over Fp.
pub struct G1;
/// G2 over Fp2.
pub struct G2;

impl BaCurve for G1 {
    type F = Fp;
    type Raw = blst_p1_affine;
    type Affine = G1Affine;
    type Proj = G1Projective;
    fn xy(p: &blst_p1_affine) -> (Fp, Fp) {
        (Fp::from(p.x), Fp::from(p.y))
    }
    fn affine(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
}

impl BaCurve for G2 {
    type F = Fp2;
    type Raw = blst_p2_affine;
    type Affine = G2Affine;
    type Proj = G2Projective;
    fn xy(p: &blst_p2_affine) -> (Fp2, Fp2) {
        (Fp2::from(p.x), Fp2::from(p.y))
    }
    fn affine(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
}

/// Booth digit of window `w` (width `c`) of the scalar in `bytes` (little-endian).
fn digit(bytes: &[u8], w: usize, c: usize) -> i64 {
    // Bits [lo, lo + c + 1) with lo = w c - 1; bit -1 is 0.
    let (lo, shift_in) = if w == 0 {
        (0usize, 1u32)
    } else {
        (w * c - 1, 0u32)
    };
    let byte = lo / 8;
    let mut word = [0u8; 8];
    let end = bytes.len().min(byte + 8);
    if byte < end {
        word[..end - byte].copy_from_slice(&bytes[byte..end]);
    }
    let raw = (u64::from_le_bytes(word) >> (lo % 8)) << shift_in;
    let v = (raw & ((1u64 << (c + 1)) - 1)) as i64;
    // d = bits[lo+1 ..= lo+c] + bit[lo] - 2^c bit[lo+c]
    (v >> 1) + (v & 1) - (((v >> c) & 1) << c)
}

/// [`Bucket::meta`]'s flag for a bucket that holds a point.
const FILLED: u32 = 1 << 31;

/// One pending addition: bucket `b` += (x, y).
struct Entry<F> {
    b: u32,
    x: F,
    y: F,
}

/// What a batch entry turned out to be when its denominator was formed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Add,
    Double,
    Empty,
}

/// A bucket: an affine point when `meta` has [`FILLED`], and below that flag the batch number
/// it was last put in.
#[derive(Clone, Copy)]
struct Bucket<F> {
    x: F,
    y: F,
    meta: u32,
}

/// One window's buckets over one range of points.
struct Buckets<C: BaCurve> {
    /// The buckets, bucket b for digits ±(b + 1).
    bk: Vec<Bucket<C::F>>,
    /// The current batch's number, in 1 .. FILLED.
    epoch: u32,
    /// The batch's size ([`batch_for`] the bucket count); entries queue up to 4 batches.
    cap: usize,
    /// The additions of the current batch, each to a different bucket.
    batch: Vec<Entry<C::F>>,
    /// Entries whose bucket was in the batch when they came, in arrival order.
    queue: Vec<Entry<C::F>>,
    /// Projective side buckets (none until the queue first overflows, then one a bucket),
    /// added to the affine ones in the bucket sum.
    side: Vec<C::Proj>,
    /// The batch's denominators, their running products and kinds (reused between batches).
    den: Vec<C::F>,
    prefix: Vec<C::F>,
    kind: Vec<Kind>,
}

impl<C: BaCurve> Buckets<C> {
    fn new(n: usize) -> Self {
        let cap = batch_for(n);
        Buckets {
            bk: vec![
                Bucket {
                    x: C::F::ZERO,
                    y: C::F::ZERO,
                    meta: 0
                };
                n
            ],
            epoch: 1,
            cap,
            batch: Vec::with_capacity(cap),
            queue: Vec::new(),
            side: Vec::new(),
            den: Vec::with_capacity(cap),
            prefix: Vec::with_capacity(cap),
            kind: Vec::with_capacity(cap),
        }
    }

    /// Takes one entry: into its empty bucket, into the batch, or into the queue.
    fn put(&mut self, e: Entry<C::F>) {
        let b = e.b as usize;
        let m = self.bk[b].meta;
        if m & !FILLED == self.epoch {
            if self.queue.len() < 4 * self.cap {
                self.queue.push(e);
            } else {
                if self.side.is_empty() {
                    self.side = vec![C::Proj::identity(); self.bk.len()];
                }
                self.side[b] += &C::affine(e.x, e.y);
            }
        } else if m & FILLED == 0 {
            self.bk[b].x = e.x;
            self.bk[b].y = e.y;
            self.bk[b].meta = FILLED;
        } else {
            self.bk[b].meta = FILLED | self.epoch;
            self.batch.push(e);
        }
    }

    /// Takes one entry, finishing batches as they fill.
    fn push(&mut self, e: Entry<C::F>) -> Result<(), String> {
        self.put(e);
        while self.batch.len() >= self.cap {
            self.flush()?;
            self.requeue();
        }
        Ok(())
    }

    /// Offers the queued entries, in order, to the next batch; those that find it full, or
    /// their bucket in it, queue again (never to a side bucket: the queue only shrinks here).
    fn requeue(&mut self) {
        for e in std::mem::take(&mut self.queue) {
            if self.batch.len() >= self.cap {
                self.queue.push(e);
            } else {
                self.put(e);
            }
        }
    }

    /// Finishes every addition of the batch with one inversion.
    fn flush(&mut self) -> Result<(), String> {
        let k = self.batch.len();
        self.den.clear();
        self.prefix.clear();
        self.kind.clear();
        // The denominators first: independent loads of the buckets, which the core overlaps;
        // then their running product, one dependent chain.
        for e in &self.batch {
            let (bx, by) = (self.bk[e.b as usize].x, self.bk[e.b as usize].y);
            let (kind, d) = if e.x != bx {
                (Kind::Add, e.x - bx)
            } else if e.y == by && !bool::from(by.is_zero()) {
                (Kind::Double, by.double())
            } else {
                (Kind::Empty, C::F::ONE)
            };
            self.den.push(d);
            self.kind.push(kind);
        }
        let mut acc = C::F::ONE;
        for d in &self.den {
            acc *= d;
            self.prefix.push(acc);
        }
        let mut inv = Option::<C::F>::from(acc.invert())
            .ok_or_else(|| "batch-affine MSM: a zero denominator (internal error)".to_string())?;
        for i in (0..k).rev() {
            self.finish_entry(i, &mut inv);
        }
        self.batch.clear();
        // Epochs run 1 .. FILLED; at the wrap every stamp is cleared, so none can match a new
        // epoch by age.
        self.epoch = (self.epoch + 1) & !FILLED;
        if self.epoch == 0 {
            self.epoch = 1;
            for bucket in &mut self.bk {
                bucket.meta &= FILLED;
            }
        }
        Ok(())
    }

    /// Finishes batch entry `i`, with `inv` the inverse of the running product up to `i`
    /// (left as the inverse up to `i - 1`).
    fn finish_entry(&mut self, i: usize, inv: &mut C::F) {
        let e = &self.batch[i];
        let b = e.b as usize;
        let inv_i = if i > 0 {
            *inv * self.prefix[i - 1]
        } else {
            *inv
        };
        *inv *= self.den[i];
        let (bx, by) = (self.bk[b].x, self.bk[b].y);
        let lambda = match self.kind[i] {
            Kind::Empty => {
                self.bk[b].meta = 0;
                return;
            }
            Kind::Add => (e.y - by) * inv_i,
            Kind::Double => {
                let xx = bx.square();
                (xx.double() + xx) * inv_i
            }
        };
        let x3 = lambda.square() - bx - e.x;
        let y3 = lambda * (bx - x3) - by;
        self.bk[b].x = x3;
        self.bk[b].y = y3;
    }

    /// Finishes every pending addition and returns sum_b (b + 1) bucket_b.
    fn finish(mut self) -> Result<C::Proj, String> {
        while !self.batch.is_empty() || !self.queue.is_empty() {
            self.flush()?;
            self.requeue();
        }
        let mut running = C::Proj::identity();
        let mut total = C::Proj::identity();
        for b in (0..self.bk.len()).rev() {
            if self.bk[b].meta & FILLED != 0 {
                let (x, y) = (self.bk[b].x, self.bk[b].y);
                running += &C::affine(x, y);
            }
            if let Some(s) = self.side.get(b) {
                running += *s;
            }
            total += running;
        }
        Ok(total)
    }
}

/// The widest window [`plan`] picks. Wider ones measured slower on the build machine, their
/// buckets no longer close to the core (G1 at 2^22 random scalars, one window width a run:
/// 16 bits 13.0 s, 17 13.4 s, 18 15.9 s, 19 16.6 s; G2 at 2^22: 14 bits 36.9 s, 15 33.1 s,
/// 16 31.8 s).
pub const MAX_WINDOW: usize = 16;

/// Window width and point ranges a window for `n` points of `bits`-bit scalars on `threads`
/// threads: the width minimising windows x (n additions, each with its share of its batch's
/// inversion, + 2 projective additions a bucket a range, each counted as 2 batch-affine
/// ones), with enough (window, range) tasks to keep every thread busy.
pub fn plan(n: usize, bits: usize, threads: usize) -> (usize, usize) {
    let mut best = (f64::MAX, 1usize, 1usize);
    for c in 2..=MAX_WINDOW {
        let windows = (bits + 1).div_ceil(c);
        let ranges = (2 * threads).div_ceil(windows).clamp(1, n.max(1));
        let buckets = 1usize << (c - 1);
        let per_add = 1.0 + INVERSION_COST / batch_for(buckets) as f64;
        let cost = windows as f64 * (n as f64 * per_add + (ranges * 4 * buckets) as f64);
        if cost < best.0 {
            best = (cost, c, ranges);
        }
    }
    (best.1, best.2)
}

/// `sum_i k_i P_i`, with scalar i in `bytes[i * stride ..][.. stride]` (little-endian, below
/// 2^bits); a point at infinity (blst's all-zero affine form) adds nothing.
pub fn msm<C: BaCurve>(
    points: &[C::Raw],
    bytes: &[u8],
    stride: usize,
    bits: usize,
) -> Result<C::Proj, String> {
    let n = points.len();
    if bytes.len() != n * stride {
        return Err(format!(
            "{n} points but {} scalar bytes at {stride} a scalar",
            bytes.len()
        ));
    }
    if n == 0 || bits == 0 {
        return Ok(C::Proj::identity());
    }
    let (c, ranges) = plan(n, bits, rayon::current_num_threads());
    let windows = (bits + 1).div_ceil(c);
    let per = n.div_ceil(ranges);
    let tasks: Vec<(usize, usize)> = (0..windows)
        .flat_map(|w| (0..ranges).map(move |r| (w, r)))
        .collect();
    let sums: Vec<(usize, C::Proj)> = tasks
        .into_par_iter()
        .map(|(w, r)| {
            let lo = (r * per).min(n);
            let hi = ((r + 1) * per).min(n);
            let mut bk = Buckets::<C>::new(1 << (c - 1));
            for i in lo..hi {
                let d = digit(&bytes[i * stride..(i + 1) * stride], w, c);
                if d == 0 {
                    continue;
                }
                let (x, y) = C::xy(&points[i]);
                if bool::from(x.is_zero() & y.is_zero()) {
                    continue; // blst's identity: adds nothing
                }
                let y = if d < 0 { -y } else { y };
                bk.push(Entry {
                    b: (d.unsigned_abs() - 1) as u32,
                    x,
                    y,
                })?;
            }
            Ok((w, bk.finish()?))
        })
        .collect::<Result<_, String>>()?;
    let mut per_window = vec![C::Proj::identity(); windows];
    for (w, s) in sums {
        per_window[w] += s;
    }
    let mut acc = C::Proj::identity();
    for s in per_window.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += *s;
    }
    Ok(acc)
}

/// As [`msm`], over consecutive chunks of at most `chunk` points, their sums added: a run of
/// any size is computed as runs of at most `chunk` points, the sizes it was measured at (each
/// chunk plans its own windows). Errors as [`msm`], and if `chunk` is 0 or a run longer than
/// `chunk` has scalars of 0 bytes.
pub fn msm_chunked<C: BaCurve>(
    points: &[C::Raw],
    bytes: &[u8],
    stride: usize,
    bits: usize,
    chunk: usize,
) -> Result<C::Proj, String> {
    if chunk == 0 {
        return Err("batch-affine chunks of 0 points".into());
    }
    if points.len() <= chunk {
        return msm::<C>(points, bytes, stride, bits);
    }
    if stride == 0 || bytes.len() != points.len() * stride {
        return Err(format!(
            "{} points but {} scalar bytes at {stride} a scalar",
            points.len(),
            bytes.len()
        ));
    }
    let mut acc = C::Proj::identity();
    for (p, b) in points.chunks(chunk).zip(bytes.chunks(chunk * stride)) {
        acc += msm::<C>(p, b, stride, bits)?;
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::Scalar;
    use ff::PrimeField;
    use group::{prime::PrimeCurveAffine, Curve};
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    /// The digits of every window recompose the scalar, and stay within their range.
    #[test]
    fn booth_digits_recompose_the_scalar() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut scalars = vec![
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(u64::MAX),
        ];
        scalars.extend((0..40).map(|_| Scalar::random(&mut rng)));
        for c in [2usize, 3, 7, 13, 16, 20] {
            for s in &scalars {
                let bytes = s.to_repr();
                let windows = 256usize.div_ceil(c);
                let mut acc = Scalar::ZERO;
                let mut pow = Scalar::ONE;
                let base = Scalar::from(1u64 << c);
                for w in 0..windows {
                    let d = digit(&bytes, w, c);
                    assert!(d.unsigned_abs() <= 1 << (c - 1), "c={c} d={d}");
                    let dv = Scalar::from(d.unsigned_abs());
                    acc += if d < 0 { -dv } else { dv } * pow;
                    pow *= base;
                }
                assert_eq!(acc, *s, "c={c}");
            }
        }
    }

    fn naive_g1(points: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
        points
            .iter()
            .zip(scalars)
            .map(|(p, s)| G1Projective::from(p) * s)
            .sum()
    }

    fn raw_g1(points: &[G1Affine]) -> Vec<blst_p1_affine> {
        points
            .iter()
            .map(|p| *AsRef::<blst_p1_affine>::as_ref(p))
            .collect()
    }

    fn bytes_of(scalars: &[Scalar]) -> Vec<u8> {
        scalars.iter().flat_map(|s| s.to_repr()).collect()
    }

    /// Random points and scalars, repeated and negated points (doublings and cancellations in
    /// the buckets), equal scalars (crowded buckets through the queue and the side buckets),
    /// and the point at infinity.
    #[test]
    fn g1_matches_naive_with_doublings_cancellations_and_crowds() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let g = G1Projective::random(&mut rng);
        for n in [1usize, 2, 3, 100, 3000] {
            let mut pts: Vec<G1Projective> = (0..n)
                .map(|i| match i % 4 {
                    0 => g,
                    1 => -g,
                    _ => G1Projective::random(&mut rng),
                })
                .collect();
            pts.push(g);
            pts.push(G1Projective::identity());
            let mut affine = vec![G1Affine::identity(); pts.len()];
            G1Projective::batch_normalize(&pts, &mut affine);
            let scalars: Vec<Scalar> = (0..affine.len())
                .map(|i| match i % 5 {
                    0 => Scalar::from(7u64),
                    1 => -Scalar::ONE,
                    2 => Scalar::from(rng.next_u64()),
                    _ => Scalar::random(&mut rng),
                })
                .collect();
            let got = msm::<G1>(&raw_g1(&affine), &bytes_of(&scalars), 32, 255).unwrap();
            assert_eq!(got, naive_g1(&affine, &scalars), "n={n}");
        }
    }

    /// One point, one scalar, thousands of times: every addition meets its bucket in the
    /// batch, the queue fills and the side buckets take the rest.
    #[test]
    fn g1_one_crowded_bucket() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 12 * BATCH;
        let pts: Vec<G1Affine> = (0..n)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let scalars = vec![Scalar::from(3u64); n];
        let got = msm::<G1>(&raw_g1(&pts), &bytes_of(&scalars), 32, 2).unwrap();
        assert_eq!(got, naive_g1(&pts, &scalars));
    }

    /// Chunks of any size, dividing the run or not, give the whole run's sum; a chunk of 0
    /// points, and bytes that do not match the points, are errors.
    #[test]
    fn chunked_runs_match_the_whole_run() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let n = 1000;
        let pts: Vec<G1Affine> = (0..n)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let (raw, bytes) = (raw_g1(&pts), bytes_of(&scalars));
        let want = naive_g1(&pts, &scalars);
        for chunk in [1usize, 7, 333, 500, 999, 1000, 5000] {
            let got = msm_chunked::<G1>(&raw, &bytes, 32, 255, chunk).unwrap();
            assert_eq!(got, want, "chunk={chunk}");
        }
        assert!(msm_chunked::<G1>(&raw, &bytes, 32, 255, 0).is_err());
        assert!(msm_chunked::<G1>(&raw, &bytes[..bytes.len() - 1], 32, 255, 7).is_err());
        assert!(msm_chunked::<G1>(&raw, &[], 0, 255, 7).is_err());
        let none = msm_chunked::<G1>(&[], &[], 32, 255, 7).unwrap();
        assert_eq!(none, G1Projective::identity());
    }

    #[test]
    fn g2_matches_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let g = G2Projective::random(&mut rng);
        let pts: Vec<G2Affine> = (0..300)
            .map(|i| {
                if i % 3 == 0 {
                    g
                } else {
                    G2Projective::random(&mut rng)
                }
                .to_affine()
            })
            .collect();
        let scalars: Vec<Scalar> = (0..pts.len()).map(|_| Scalar::random(&mut rng)).collect();
        let raw: Vec<blst_p2_affine> = pts
            .iter()
            .map(|p| *AsRef::<blst_p2_affine>::as_ref(p))
            .collect();
        let want: G2Projective = pts
            .iter()
            .zip(&scalars)
            .map(|(p, s)| G2Projective::from(p) * s)
            .sum();
        assert_eq!(msm::<G2>(&raw, &bytes_of(&scalars), 32, 255).unwrap(), want);
    }

    /// 2^16 + 3 distinct points g + i h: the sums of 255-, 64- and 8-bit scalars equal blst's
    /// Pippenger's (every window width the plan picks at this size, most buckets in use).
    #[test]
    fn g1_matches_blst_on_many_points() {
        use blst::MultiPoint;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let n = (1 << 16) + 3;
        let (g, h) = (
            G1Projective::random(&mut rng),
            G1Projective::random(&mut rng),
        );
        // g + i h by one addition each (a scalar multiplication a point took seconds in all)
        let proj: Vec<G1Projective> = std::iter::successors(Some(g), |p| Some(p + h))
            .take(n)
            .collect();
        let mut affine = vec![G1Affine::identity(); n];
        G1Projective::batch_normalize(&proj, &mut affine);
        let raw = raw_g1(&affine);
        for nbits in [255usize, 64, 8] {
            let bytes: Vec<u8> = (0..n)
                .flat_map(|_| {
                    let s = Scalar::random(&mut rng).to_repr();
                    s[..nbits.div_ceil(8)].to_vec()
                })
                .collect();
            let got = msm::<G1>(&raw, &bytes, nbits.div_ceil(8), nbits).unwrap();
            let want = raw.as_slice().mult(&bytes, nbits);
            let want =
                G1Projective::from_raw_unchecked(want.x.into(), want.y.into(), want.z.into());
            assert_eq!(got, want, "{nbits}-bit scalars");
        }
    }

    #[test]
    fn lengths_are_checked() {
        assert!(msm::<G1>(&[], &[0u8; 32], 32, 255).is_err());
        assert_eq!(
            msm::<G1>(&[], &[], 32, 255).unwrap(),
            G1Projective::identity()
        );
    }
}
