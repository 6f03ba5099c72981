//! Differential tests of every device operation against blstrs (needs a CUDA device):
//! field arithmetic, NTT at every size 2^1..2^22 and at 2^26..2^28, and G1/G2 MSM with edge
//! cases.
//!
//! Run on a GPU machine: `kernels_suite gpu_kernels:: --include-ignored --test-threads=1`.
//! Each test prints its seed; rerun with `CUZK_TEST_SEED=<seed>` to reproduce.

use blst::{blst_fp, blst_fp2};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_kernels::layout::host;
use cuzk_kernels::msm::WindowPlan;
use cuzk_kernels::reference;
use cuzk_kernels::testdata::{
    filecoin_scalars, g1_points, g2_points, msm_g1_cpu, msm_g2_cpu, scalars, seed,
};
use cuzk_kernels::{field, GpuDevice, NttKind, NttOptions, WindowSpan};
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

fn device() -> GpuDevice {
    let dev = GpuDevice::open(0).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "device {} {} ({}), {} bytes",
        dev.pci_id(),
        dev.name(),
        dev.arch(),
        dev.total_memory()
    );
    dev
}

fn minus_one() -> Scalar {
    -Scalar::ONE
}

#[test]
#[ignore = "needs a CUDA device"]
fn field_ops_match_blstrs() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let n = 4096;
    // Fr: random plus 0, 1, r - 1
    let mut a = scalars(seed, n);
    let mut b = scalars(seed + 1, n);
    for (i, e) in [Scalar::ZERO, Scalar::ONE, minus_one()]
        .into_iter()
        .enumerate()
    {
        a[i] = e;
        b[i + 3] = e;
        a[i + 6] = e;
        b[i + 6] = e;
    }
    let got = field::fr_ops(&dev, &a, &b).unwrap();
    for i in 0..n {
        let want = [
            a[i] + b[i],
            a[i] - b[i],
            a[i] * b[i],
            a[i].square(),
            -a[i],
            a[i].double(),
        ];
        for k in 0..6 {
            assert_eq!(
                got[i][k],
                want[k],
                "Fr {} at {i} (seed {seed})",
                field::OPS[k]
            );
        }
    }
    // Fp and Fp2: coordinates of random points (valid reduced elements), plus 0, 1, p - 1
    let pa = g2_points(seed, n);
    let pb = g2_points(seed + 7, n);
    let fp2 = |p: &G2Affine, x: bool| blst_fp2::from(if x { p.x() } else { p.y() });
    let mut a2: Vec<blst_fp2> = pa.iter().map(|p| fp2(p, true)).collect();
    let b2: Vec<blst_fp2> = pb.iter().map(|p| fp2(p, false)).collect();
    let fp_one = fp_one();
    let edges = [blst_fp::default(), fp_one, host::fp_neg(&fp_one)];
    for (i, e) in edges.iter().enumerate() {
        a2[i].fp[0] = *e;
        a2[i + 3] = blst_fp2 { fp: [*e, *e] };
    }
    let a1: Vec<blst_fp> = a2.iter().map(|x| x.fp[0]).collect();
    let b1: Vec<blst_fp> = b2.iter().map(|x| x.fp[1]).collect();
    let got = field::fp_ops(&dev, &a1, &b1).unwrap();
    for i in 0..n {
        let (x, y) = (&a1[i], &b1[i]);
        let want = [
            host::fp_add(x, y),
            host::fp_sub(x, y),
            host::fp_mul(x, y),
            host::fp_sqr(x),
            host::fp_neg(x),
            host::fp_add(x, x),
        ];
        for k in 0..6 {
            assert_eq!(
                got[i][k].l,
                want[k].l,
                "Fp {} at {i} (seed {seed})",
                field::OPS[k]
            );
        }
    }
    // the sum of two products with one reduction (mul_sum), edge cases included
    let got = field::fp_mul_sum(&dev, &a1, &b1).unwrap();
    for i in 0..n {
        let (x, y) = (&a1[i], &b1[i]);
        let xy = host::fp_mul(x, y);
        let want = [
            host::fp_add(&xy, &xy),
            host::fp_sub(&host::fp_sqr(x), &host::fp_sqr(y)),
        ];
        for k in 0..2 {
            assert_eq!(
                got[i][k].l, want[k].l,
                "Fp mul_sum {k} at {i} (seed {seed})"
            );
        }
    }
    let got = field::fp2_ops(&dev, &a2, &b2).unwrap();
    for i in 0..n {
        let (x, y) = (&a2[i], &b2[i]);
        let want = [
            host::fp2_add(x, y),
            host::fp2_sub(x, y),
            host::fp2_mul(x, y),
            host::fp2_sqr(x),
            host::fp2_neg(x),
            host::fp2_add(x, x),
        ];
        for k in 0..6 {
            assert_eq!(
                got[i][k].fp[0].l,
                want[k].fp[0].l,
                "Fp2 {} c0 at {i} (seed {seed})",
                field::OPS[k]
            );
            assert_eq!(
                got[i][k].fp[1].l,
                want[k].fp[1].l,
                "Fp2 {} c1 at {i} (seed {seed})",
                field::OPS[k]
            );
        }
    }
}

/// 1 in Fp, Montgomery form (R mod p), taken from blst.
fn fp_one() -> blst_fp {
    let mut one = blst_fp::default();
    // SAFETY: blst writes one valid element from a valid u64.
    unsafe { blst::blst_fp_from_uint64(&mut one, [1u64, 0, 0, 0, 0, 0].as_ptr()) };
    one
}

fn run_ntt(dev: &GpuDevice, data: &[Scalar], kind: NttKind) -> Vec<Scalar> {
    let mut buf = dev.upload(data).unwrap();
    dev.ntt(&mut buf, kind).unwrap();
    dev.download(&buf).unwrap()
}

#[test]
#[ignore = "needs a CUDA device"]
fn ntt_matches_bellperson_at_every_size_up_to_2_22() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    for log_n in 1..=22u32 {
        let n = 1usize << log_n;
        let input = scalars(seed + log_n as u64, n);
        let kinds: &[NttKind] = if log_n <= 18 {
            &[
                NttKind::Forward,
                NttKind::Inverse,
                NttKind::CosetForward,
                NttKind::CosetInverse,
            ]
        } else {
            &[NttKind::Forward, NttKind::CosetInverse]
        };
        for &kind in kinds {
            let got = run_ntt(&dev, &input, kind);
            let mut want = input.clone();
            reference::ntt(&mut want, kind);
            if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                panic!("{kind:?} 2^{log_n} differs first at {i} (seed {seed})");
            }
        }
        // inverse(forward) and icoset(coset) are the identity, entirely on the device
        let mut buf = dev.upload(&input).unwrap();
        dev.ntt(&mut buf, NttKind::Forward).unwrap();
        dev.ntt(&mut buf, NttKind::Inverse).unwrap();
        dev.ntt(&mut buf, NttKind::CosetForward).unwrap();
        dev.ntt(&mut buf, NttKind::CosetInverse).unwrap();
        assert!(
            dev.download(&buf).unwrap() == input,
            "round trip 2^{log_n} (seed {seed})"
        );
    }
}

/// Every combination of the NTT's options (the top twiddle table, the bit reversal fused
/// into a pass: what a transform does without the memory for them) gives bellperson's
/// transforms: each kind at sizes with one, two and three passes (from 2^19 the last pass
/// reads the top table when it is on); and the H polynomial gives the same kappa * h' either
/// way.
#[test]
#[ignore = "needs a CUDA device"]
fn ntt_options_give_the_same_transforms() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let all = [
        NttKind::Forward,
        NttKind::Inverse,
        NttKind::CosetForward,
        NttKind::CosetInverse,
    ];
    for log_n in [9u32, 10, 18, 19, 20, 21] {
        let n = 1usize << log_n;
        let mut input = scalars(seed + 500 + log_n as u64, n);
        input[0] = Scalar::ZERO;
        input[n - 1] = minus_one();
        for kind in all {
            let mut want = input.clone();
            reference::ntt(&mut want, kind);
            for top_table in [false, true] {
                for fused_reversal in [false, true] {
                    let opts = NttOptions {
                        top_table,
                        fused_reversal,
                    };
                    let mut buf = dev.upload(&input).unwrap();
                    dev.ntt_with_options(&mut buf, kind, opts).unwrap();
                    let got = dev.download(&buf).unwrap();
                    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                        panic!(
                            "{kind:?} 2^{log_n} with {opts:?} differs first at {i} (seed {seed})"
                        );
                    }
                }
            }
        }
    }
    // H with c = a b (a satisfied assignment: six transforms)
    for log_n in [10u32, 19, 20] {
        let n = 1usize << log_n;
        let mut abc: Vec<Vec<Scalar>> = (0..2)
            .map(|k| scalars(seed + 600 + 3 * log_n as u64 + k, n))
            .collect();
        abc.push(abc[0].iter().zip(&abc[1]).map(|(x, y)| x * y).collect());
        let mut results = Vec::new();
        for (top_table, fused_reversal) in
            [(false, false), (true, false), (false, true), (true, true)]
        {
            let opts = NttOptions {
                top_table,
                fused_reversal,
            };
            let [mut a, mut b, mut c] = [0, 1, 2].map(|k| dev.upload(&abc[k]).unwrap());
            let kappa = dev
                .h_polynomial_scaled_with_options(&mut a, &mut b, &mut c, opts)
                .unwrap();
            let h: Vec<Scalar> = dev
                .download(&a)
                .unwrap()
                .iter()
                .map(|x| *x * kappa)
                .collect();
            results.push((opts, h));
        }
        for (opts, h) in &results[1..] {
            assert!(
                *h == results[0].1,
                "H 2^{log_n} with {opts:?} (seed {seed})"
            );
        }
    }
    // a side stream's handle shares the device's top table (built above on the main stream)
    let side = dev.side_stream().unwrap();
    let n = 1usize << 20;
    let input = scalars(seed + 700, n);
    for kind in [NttKind::Forward, NttKind::Inverse] {
        let mut want = input.clone();
        reference::ntt(&mut want, kind);
        let mut buf = side.upload(&input).unwrap();
        side.ntt(&mut buf, kind).unwrap();
        assert!(
            side.download(&buf).unwrap() == want,
            "{kind:?} 2^20 on a side stream (seed {seed})"
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn fused_h_transforms_match_the_plain_ones() {
    // evaluations_to_coset runs the inverse as the transposed (DIF) network and reads its
    // bit-reversed output directly: every size 2^1 .. 2^22 (one, two and three passes), against
    // the plain transforms on the device and, up to 2^16, bellperson's conventions on the host
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    for log_n in 1..=22u32 {
        let n = 1usize << log_n;
        let mut input = scalars(seed + 200 + log_n as u64, n);
        // edge values at fixed places: zero, one, r - 1
        input[0] = Scalar::ZERO;
        input[n - 1] = minus_one();
        if n > 2 {
            input[n / 2] = Scalar::ONE;
        }
        let mut fused = dev.upload(&input).unwrap();
        dev.evaluations_to_coset(&mut fused).unwrap();
        let fused = dev.download(&fused).unwrap();
        let mut plain = dev.upload(&input).unwrap();
        dev.ntt(&mut plain, NttKind::Inverse).unwrap();
        dev.ntt(&mut plain, NttKind::CosetForward).unwrap();
        let plain = dev.download(&plain).unwrap();
        if let Some(i) = (0..n).find(|&i| fused[i] != plain[i]) {
            panic!("evaluations_to_coset 2^{log_n} differs first at {i} (seed {seed})");
        }
        if log_n <= 16 {
            let mut want = input.clone();
            reference::ntt(&mut want, NttKind::Inverse);
            reference::ntt(&mut want, NttKind::CosetForward);
            assert!(fused == want, "2^{log_n} against the host (seed {seed})");
        }
        // each kind with a scale folded in equals the kind then fr_scale
        if log_n <= 12 || log_n == 20 {
            let scale = scalars(seed + 300 + log_n as u64, 1)[0];
            for kind in [
                NttKind::Forward,
                NttKind::Inverse,
                NttKind::CosetForward,
                NttKind::CosetInverse,
            ] {
                let mut got = dev.upload(&input).unwrap();
                dev.ntt_scaled(&mut got, kind, scale).unwrap();
                let mut want = input.clone();
                reference::ntt(&mut want, kind);
                for w in &mut want {
                    *w *= scale;
                }
                assert!(
                    dev.download(&got).unwrap() == want,
                    "ntt_scaled {kind:?} 2^{log_n} (seed {seed})"
                );
            }
        }
    }
    // all zeros stay zeros; lengths that are not powers of two, or 1, are errors
    let mut zeros = dev.upload(&vec![Scalar::ZERO; 1 << 10]).unwrap();
    dev.evaluations_to_coset(&mut zeros).unwrap();
    assert!(dev
        .download(&zeros)
        .unwrap()
        .iter()
        .all(|z| bool::from(z.is_zero())));
    for bad in [1usize, 3, 1000] {
        let mut b = dev.upload(&scalars(seed, bad)).unwrap();
        assert!(dev.evaluations_to_coset(&mut b).is_err(), "length {bad}");
        assert!(
            dev.ntt_scaled(&mut b, NttKind::Forward, Scalar::ONE)
                .is_err(),
            "length {bad}"
        );
    }
    // (a*b - c) in one pass, and its length checks
    let n = 4099;
    let (a, b, c) = (scalars(seed, n), scalars(seed + 1, n), scalars(seed + 2, n));
    let mut da = dev.upload(&a).unwrap();
    let (db, dc) = (dev.upload(&b).unwrap(), dev.upload(&c).unwrap());
    dev.fr_mul_sub_assign(&mut da, &db, &dc).unwrap();
    let got = dev.download(&da).unwrap();
    for i in 0..n {
        assert_eq!(got[i], a[i] * b[i] - c[i], "mul_sub at {i} (seed {seed})");
    }
    let short = dev.upload(&c[..n - 1]).unwrap();
    assert!(dev.fr_mul_sub_assign(&mut da, &db, &short).is_err());
    assert!(dev.fr_mul_sub_assign(&mut da, &short, &dc).is_err());
}

/// Groth16's H with the coset factors in the twiddles and the constants left to kappa
/// (`h_polynomial_scaled`): kappa times its output equals the plain device sequence
/// (evaluations_to_coset, a*b - c, the inverse coset transform scaled by 1/Z) at every size
/// 2^1 .. 2^22 (one, two and three passes; from 2^19 the last pass's twiddles are computed,
/// not tabled) and 2^24, and bellperson's steps on the host up to 2^14; both for random a, b,
/// c (seven transforms) and for c = a b (a satisfied assignment: six transforms), which
/// `satisfies_products` tells apart.
#[test]
#[ignore = "needs a CUDA device"]
fn h_polynomial_scaled_matches_the_plain_steps() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let sizes: Vec<u32> = (1..=22).chain([24]).collect();
    for log_n in sizes {
        let n = 1usize << log_n;
        let mut abc: Vec<Vec<Scalar>> = (0..3)
            .map(|k| scalars(seed + 400 + 3 * log_n as u64 + k, n))
            .collect();
        abc[0][0] = Scalar::ZERO;
        abc[1][n - 1] = minus_one();
        abc[2][n / 2] = Scalar::ONE;
        let product: Vec<Scalar> = abc[0].iter().zip(&abc[1]).map(|(x, y)| x * y).collect();
        let z = cuzk_kernels::coset_z_inverse(log_n);
        for (satisfied, c_in) in [(false, &abc[2]), (true, &product)] {
            // the plain steps on the device
            let [mut pa, mut pb] = [0, 1].map(|k| dev.upload(&abc[k]).unwrap());
            let mut pc = dev.upload(c_in).unwrap();
            assert_eq!(
                dev.satisfies_products(&pa, &pb, &pc).unwrap(),
                satisfied,
                "2^{log_n} (seed {seed})"
            );
            for v in [&mut pa, &mut pb, &mut pc] {
                dev.evaluations_to_coset(v).unwrap();
            }
            dev.fr_mul_sub_assign(&mut pa, &pb, &pc).unwrap();
            dev.ntt_scaled(&mut pa, NttKind::CosetInverse, z).unwrap();
            let want = dev.download(&pa).unwrap();
            let [mut a, mut b] = [0, 1].map(|k| dev.upload(&abc[k]).unwrap());
            let mut cc = dev.upload(c_in).unwrap();
            let kappa = dev.h_polynomial_scaled(&mut a, &mut b, &mut cc).unwrap();
            let got = dev.download(&a).unwrap();
            if let Some(i) = (0..n).find(|&i| got[i] * kappa != want[i]) {
                panic!("h_polynomial_scaled 2^{log_n}, c = a b {satisfied}, differs first at {i} (seed {seed})");
            }
            if log_n <= 14 {
                let mut t = [abc[0].clone(), abc[1].clone(), c_in.clone()];
                for v in &mut t {
                    reference::ntt(v, NttKind::Inverse);
                    reference::ntt(v, NttKind::CosetForward);
                }
                let mut h: Vec<Scalar> =
                    (0..n).map(|i| (t[0][i] * t[1][i] - t[2][i]) * z).collect();
                reference::ntt(&mut h, NttKind::CosetInverse);
                assert!(
                    h == want,
                    "plain steps 2^{log_n}, c = a b {satisfied}, against the host (seed {seed})"
                );
            }
        }
    }
    // lengths: not a power of two, or unequal, are errors
    let mut a = dev.upload(&scalars(seed, 1000)).unwrap();
    let mut b = dev.upload(&scalars(seed, 1000)).unwrap();
    let mut c = dev.upload(&scalars(seed, 1000)).unwrap();
    assert!(dev.h_polynomial_scaled(&mut a, &mut b, &mut c).is_err());
    let mut a = dev.upload(&scalars(seed, 1024)).unwrap();
    let mut b = dev.upload(&scalars(seed, 1024)).unwrap();
    let mut c = dev.upload(&scalars(seed, 512)).unwrap();
    assert!(dev.h_polynomial_scaled(&mut a, &mut b, &mut c).is_err());
    // f scales c in a*b - c f
    let n = 4099;
    let (x, y, w) = (scalars(seed, n), scalars(seed + 1, n), scalars(seed + 2, n));
    let f = scalars(seed + 3, 1)[0];
    let mut dx = dev.upload(&x).unwrap();
    let (dy, dw) = (dev.upload(&y).unwrap(), dev.upload(&w).unwrap());
    dev.fr_mul_sub_scaled(&mut dx, &dy, &dw, f).unwrap();
    let got = dev.download(&dx).unwrap();
    for i in 0..n {
        assert_eq!(
            got[i],
            x[i] * y[i] - w[i] * f,
            "mul_sub_scaled at {i} (seed {seed})"
        );
    }
    // a - c f, and the product check on one element changed at each end
    let mut dx = dev.upload(&x).unwrap();
    dev.fr_sub_scaled(&mut dx, &dw, f).unwrap();
    let got = dev.download(&dx).unwrap();
    for i in 0..n {
        assert_eq!(got[i], x[i] - w[i] * f, "sub_scaled at {i} (seed {seed})");
    }
    assert!(dev
        .fr_sub_scaled(&mut dx, &dev.upload(&w[1..]).unwrap(), f)
        .is_err());
    let xy: Vec<Scalar> = x.iter().zip(&y).map(|(p, q)| p * q).collect();
    let dx = dev.upload(&x).unwrap();
    assert!(dev
        .satisfies_products(&dx, &dy, &dev.upload(&xy).unwrap())
        .unwrap());
    for i in [0, n - 1] {
        let mut bad = xy.clone();
        bad[i] += Scalar::ONE;
        assert!(
            !dev.satisfies_products(&dx, &dy, &dev.upload(&bad).unwrap())
                .unwrap(),
            "a changed product at {i} goes unseen (seed {seed})"
        );
    }
    assert!(dev
        .satisfies_products(&dx, &dy, &dev.upload(&xy[1..]).unwrap())
        .is_err());
}

/// Evaluates the polynomial with coefficients `a` at `x` (parallel Horner over chunks).
fn evaluate(a: &[Scalar], x: Scalar) -> Scalar {
    let chunk = 1 << 16;
    let xc = x.pow_vartime([chunk as u64]);
    let parts: Vec<Scalar> = a
        .par_chunks(chunk)
        .map(|c| c.iter().rev().fold(Scalar::ZERO, |acc, &v| acc * x + v))
        .collect();
    parts
        .iter()
        .rev()
        .fold(Scalar::ZERO, |acc, &p| acc * xc + p)
}

/// A transform of 2^log_n random points against direct evaluations of the polynomial at a
/// few random points (coset forward, then forward after a coset inverse), and the round trip
/// back to the input.
fn check_large_ntt(dev: &GpuDevice, log_n: u32) {
    let seed = seed();
    println!("2^{log_n}: seed {seed}");
    let n = 1usize << log_n;
    let input = scalars(seed, n);
    let mut buf = dev.upload(&input).unwrap();
    dev.ntt(&mut buf, NttKind::CosetForward).unwrap();
    let out = dev.download(&buf).unwrap();
    let w = cuzk_kernels::ntt::omega(log_n);
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..3 {
        let i = (rng.next_u64() as usize) % n;
        let x = g * w.pow_vartime([i as u64]);
        assert_eq!(
            out[i],
            evaluate(&input, x),
            "2^{log_n}: coset evaluation at {i} (seed {seed})"
        );
    }
    drop(out);
    dev.ntt(&mut buf, NttKind::CosetInverse).unwrap();
    dev.ntt(&mut buf, NttKind::Forward).unwrap();
    let fwd = dev.download(&buf).unwrap();
    for i in [0, n - 1, (rng.next_u64() as usize) % n] {
        assert_eq!(
            fwd[i],
            evaluate(&input, w.pow_vartime([i as u64])),
            "2^{log_n}: evaluation at {i} (seed {seed})"
        );
    }
    drop(fwd);
    dev.ntt(&mut buf, NttKind::Inverse).unwrap();
    assert!(
        dev.download(&buf).unwrap() == input,
        "2^{log_n}: round trip (seed {seed})"
    );
}

#[test]
#[ignore = "needs a CUDA device"]
fn ntt_at_2_26_evaluates_the_polynomial() {
    check_large_ntt(&device(), 26);
}

/// The production size (a 32 GiB PoRep's domain, the largest the top table serves) and the
/// largest size the transforms take (no top table: every pass beyond the stage table computes
/// its twiddles). 2^28 needs 8 GiB a buffer on the device and about 32 GiB on the host.
#[test]
#[ignore = "needs a CUDA device"]
fn ntt_at_2_27_and_2_28_evaluates_the_polynomial() {
    let dev = device();
    check_large_ntt(&dev, 27);
    check_large_ntt(&dev, 28);
}

#[test]
#[ignore = "needs a CUDA device"]
fn h_polynomial_element_ops_match_blstrs() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let n = 1 << 12;
    let (a, b) = (scalars(seed, n), scalars(seed + 1, n));
    let c = Scalar::from(12345u64);
    let mut da = dev.upload(&a).unwrap();
    let db = dev.upload(&b).unwrap();
    dev.fr_mul_assign(&mut da, &db).unwrap();
    dev.fr_sub_assign(&mut da, &db).unwrap();
    dev.fr_scale(&mut da, c).unwrap();
    dev.fr_add_assign(&mut da, &db).unwrap();
    let got = dev.download(&da).unwrap();
    for i in 0..n {
        assert_eq!(
            got[i],
            (a[i] * b[i] - b[i]) * c + b[i],
            "at {i} (seed {seed})"
        );
    }
    let short = dev.upload(&b[..10]).unwrap();
    assert!(
        dev.fr_mul_assign(&mut da, &short).is_err(),
        "length mismatch must be an error"
    );
    let z = cuzk_kernels::coset_z_inverse(12);
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    assert_eq!(z * (g.pow_vartime([4096u64]) - Scalar::ONE), Scalar::ONE);
}

/// Scalars and points for one MSM case, with edge cases mixed in at fixed positions.
fn msm_case<P: Copy>(seed: u64, n: usize, points: &mut [P], identity: P) -> Vec<Scalar> {
    let mut s = scalars(seed, n);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xe);
    if n >= 4 {
        for _ in 0..(n / 50).max(1) {
            let i = (rng.next_u64() as usize) % n;
            match rng.next_u64() % 6 {
                0 => s[i] = Scalar::ZERO,
                1 => s[i] = minus_one(),
                2 => s[i] = Scalar::ONE,
                3 => points[i] = identity,
                4 => {
                    let j = (rng.next_u64() as usize) % n;
                    points[i] = points[j];
                    s[i] = s[j];
                }
                _ => {
                    let j = (rng.next_u64() as usize) % n;
                    points[i] = points[j];
                    s[i] = -s[j];
                }
            }
        }
    }
    s
}

/// Buckets crowded enough to be split into many parts and summed pairwise (all the scalars
/// equal to 1 land in one bucket): witness-shaped scalars at sizes whose part counts are
/// not powers of two, every scalar 1 (one huge bucket), and every scalar 1 over points
/// followed by their negations (the pairwise sums cancel to the identity on the way); and
/// short scalars of many bit lengths (fewer windows).
fn crowded_bucket_cases<P: Copy>(
    points: &[P],
    one_case: impl Fn(&[P], &[Scalar], &str),
    identity: P,
    negate: impl Fn(P) -> P,
) {
    let seed = seed();
    for n in [(1 << 16) + 1, 300_007, points.len().min((1 << 20) - 3)] {
        let sc = filecoin_scalars(seed + n as u64, n);
        one_case(
            &points[..n],
            &sc,
            &format!("n={n}, Filecoin-shaped scalars"),
        );
    }
    let n = 200_003;
    one_case(
        &points[..n],
        &vec![Scalar::ONE; n],
        "n=200003, every scalar 1",
    );
    // window 0 groups a warp's lanes by bucket (one atomic per group): lanes of one warp
    // with the same bucket and opposite signs (1 and 2^k - 1, whose first digit is -1 when
    // k is the window width), a few other small values, r - 1, zero, and a partial last warp
    let n = 100_003;
    let two = Scalar::from(2u64);
    let sc: Vec<Scalar> = (0..n)
        .map(|i| match i % 7 {
            0 | 3 => Scalar::ONE,
            1 => two.pow_vartime([8 + (i / 7 % 13) as u64]) - Scalar::ONE,
            2 => Scalar::from(3u64),
            4 => minus_one(),
            5 => Scalar::ZERO,
            _ => two,
        })
        .collect();
    one_case(
        &points[..n],
        &sc,
        "n=100003, small values grouped in a warp",
    );
    // short scalars get fewer windows (WindowPlan): the top window must absorb the signed
    // digits' last carry, so try all-ones bit patterns and powers of two at many lengths
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5407);
    for bits in [2u32, 7, 8, 9, 16, 17, 31, 40, 63, 64, 100, 128, 200, 254] {
        let n = 5003;
        let two = Scalar::from(2u64);
        let sc: Vec<Scalar> = (0..n)
            .map(|i| match i % 4 {
                0 => two.pow_vartime([u64::from(bits)]) - Scalar::ONE, // every bit set
                1 => two.pow_vartime([u64::from(bits - 1)]),
                2 => Scalar::ZERO,
                _ => (0..bits).fold(Scalar::ZERO, |v, _| {
                    // random below 2^bits
                    v.double() + Scalar::from(u64::from(rng.next_u32() & 1))
                }),
            })
            .collect();
        one_case(&points[..n], &sc, &format!("n={n}, scalars below 2^{bits}"));
    }
    let half = 100_000;
    let mut pts = points[..half].to_vec();
    pts.extend(points[..half].iter().map(|&p| negate(p)));
    pts.push(identity);
    pts.push(points[7]);
    one_case(
        &pts,
        &vec![Scalar::ONE; pts.len()],
        "P_i and -P_i with scalar 1, cancelling",
    );
}

#[test]
#[ignore = "needs a CUDA device"]
fn msm_g1_matches_blstrs() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let max = (1 << 20) + 1;
    let mut points = g1_points(seed, max);
    let bases_all = dev.upload_g1_bases(&points).unwrap();
    // exact edge cases first
    let p = points[0];
    let one_case = |pts: &[G1Affine], sc: &[Scalar], what: &str| {
        let bases = dev.upload_g1_bases(pts).unwrap();
        let got = dev.msm_g1(&bases, 0..pts.len(), sc).unwrap();
        assert_eq!(got, msm_g1_cpu(pts, sc), "G1 {what} (seed {seed})");
    };
    one_case(&[p], &[minus_one()], "n=1, scalar r-1");
    one_case(&[p], &[Scalar::ZERO], "n=1, zero scalar");
    one_case(
        &[G1Affine::identity()],
        &[Scalar::from(5u64)],
        "n=1, identity point",
    );
    one_case(
        &[p, p],
        &[Scalar::from(3u64), Scalar::from(3u64)],
        "n=2, repeated point (doubling in a bucket)",
    );
    one_case(
        &[p, p],
        &[Scalar::from(3u64), -Scalar::from(3u64)],
        "n=2, P and -P cancel",
    );
    one_case(
        &[p, points[1], G1Affine::identity()],
        &[minus_one(), Scalar::ONE, minus_one()],
        "n=3",
    );
    one_case(&points[..1000], &[Scalar::ZERO; 1000], "n=1000, all zero");
    let small: Vec<Scalar> = (0..(1 << 16) + 1)
        .map(|i| Scalar::from((i % 2) as u64))
        .collect();
    one_case(&points[..small.len()], &small, "n=2^16+1, 0/1 scalars");
    crowded_bucket_cases(&points, one_case, G1Affine::identity(), |p| -p);
    for n in [1usize, 2, 3, 1000, (1 << 16) + 1, 1 << 20] {
        let mut pts = points[..n].to_vec();
        let sc = msm_case(seed + n as u64, n, &mut pts, G1Affine::identity());
        let bases = dev.upload_g1_bases(&pts).unwrap();
        let t = std::time::Instant::now();
        let got = dev.msm_g1(&bases, 0..n, &sc).unwrap();
        let gpu = t.elapsed();
        assert_eq!(got, msm_g1_cpu(&pts, &sc), "G1 n={n} (seed {seed})");
        println!("G1 n={n} ok ({gpu:.1?} on the GPU incl. upload of scalars)");
    }
    // a range in the middle of resident bases
    let sc = scalars(seed + 99, 5000);
    let got = dev.msm_g1(&bases_all, 7000..12000, &sc).unwrap();
    assert_eq!(
        got,
        msm_g1_cpu(&points[7000..12000], &sc),
        "G1 range (seed {seed})"
    );
    assert!(
        dev.msm_g1(&bases_all, 0..10, &sc).is_err(),
        "length mismatch must be an error"
    );
    assert!(
        dev.msm_g1(&bases_all, max - 1..max + 1, &sc[..2]).is_err(),
        "range past the end must be an error"
    );
    points.truncate(0);
}

#[test]
#[ignore = "needs a CUDA device"]
fn msm_g2_matches_blstrs() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let max = 1 << 20;
    let points = g2_points(seed, max);
    let p = points[0];
    let one_case = |pts: &[G2Affine], sc: &[Scalar], what: &str| {
        let bases = dev.upload_g2_bases(pts).unwrap();
        let got = dev.msm_g2(&bases, 0..pts.len(), sc).unwrap();
        assert_eq!(got, msm_g2_cpu(pts, sc), "G2 {what} (seed {seed})");
    };
    one_case(&[p], &[minus_one()], "n=1, scalar r-1");
    one_case(&[p], &[Scalar::ZERO], "n=1, zero scalar");
    one_case(
        &[G2Affine::identity()],
        &[Scalar::from(5u64)],
        "n=1, identity point",
    );
    one_case(
        &[p, p],
        &[Scalar::from(3u64), Scalar::from(3u64)],
        "n=2, repeated point",
    );
    one_case(
        &[p, p],
        &[Scalar::from(3u64), -Scalar::from(3u64)],
        "n=2, P and -P cancel",
    );
    one_case(
        &[p, points[1], G2Affine::identity()],
        &[minus_one(), Scalar::ONE, minus_one()],
        "n=3",
    );
    crowded_bucket_cases(&points, one_case, G2Affine::identity(), |p| -p);
    for n in [1usize, 2, 3, 1000, (1 << 16) + 1, 1 << 20] {
        let mut pts = points[..n].to_vec();
        let sc = msm_case(seed + n as u64, n, &mut pts, G2Affine::identity());
        let bases = dev.upload_g2_bases(&pts).unwrap();
        let t = std::time::Instant::now();
        let got = dev.msm_g2(&bases, 0..n, &sc).unwrap();
        let gpu = t.elapsed();
        assert_eq!(got, msm_g2_cpu(&pts, &sc), "G2 n={n} (seed {seed})");
        println!("G2 n={n} ok ({gpu:.1?})");
    }
}

/// The chunked path (inputs over `MAX_CHUNK` points, such as a 32 GiB partition's H, L, A
/// and B MSMs) against blstrs, at chunk sizes that leave a short last chunk or none, with a
/// chunk whose scalars are all zero, and an offset into a longer scalar buffer; G1 and G2.
#[test]
#[ignore = "needs a CUDA device"]
fn msm_chunked_matches_blstrs() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let n = 300_007;
    let mut pts = g1_points(seed, n);
    let mut sc = msm_case(seed + 1, n, &mut pts, G1Affine::identity());
    // chunk 2 of 2^16 points all zero
    for s in &mut sc[2 << 16..3 << 16] {
        *s = Scalar::ZERO;
    }
    let fil = filecoin_scalars(seed + 2, n);
    let bases = dev.upload_g1_bases(&pts).unwrap();
    for (what, scalars) in [("random", &sc), ("Filecoin-shaped", &fil)] {
        let want = msm_g1_cpu(&pts, scalars);
        // 7 extra scalars in front: the MSM reads from offset 7
        let mut padded = scalars_with_prefix(seed + 3, 7, scalars);
        let d = dev.upload(&padded).unwrap();
        for chunk in [1usize << 16, 100_000, 150_004, n] {
            let got = dev.msm_chunked(&bases, 0..n, &d, 7, chunk).unwrap();
            assert_eq!(got, want, "G1 {what}, chunks of {chunk} (seed {seed})");
        }
        padded.clear();
    }
    assert!(dev
        .msm_chunked(&bases, 0..n, &dev.upload(&sc).unwrap(), 0, 0)
        .is_err());
    // chunks add to the earlier chunks' buckets when their plan has the same width and no more
    // windows: a full-width chunk, then one of shorter scalars whose plan has the first one's
    // width and fewer windows (found with the planner itself, so the case cannot drift away
    // from the path it tests), then full width again
    let chunk = 1usize << 16;
    let hist_of = |bits: usize| {
        let mut h = vec![0u32; 257];
        h[bits] = chunk as u32;
        h
    };
    let full = WindowPlan::choose(&hist_of(255), chunk).unwrap();
    let bits = (100..255)
        .rev()
        .find(|&b| {
            let p = WindowPlan::choose(&hist_of(b), chunk).unwrap();
            p.c == full.c && p.windows < full.windows
        })
        .expect("a shorter length planned at the full width with fewer windows");
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc4a1);
    let two = Scalar::from(2u64);
    let mut mixed = scalars(seed + 6, 3 * chunk);
    for s in &mut mixed[chunk..2 * chunk] {
        // 2^(bits - 1) plus random lower bits: exactly `bits` bits
        *s = (0..bits - 1).fold(Scalar::ZERO, |v, _| {
            v.double() + Scalar::from(u64::from(rng.next_u32() & 1))
        }) + two.pow_vartime([bits as u64 - 1]);
    }
    let want = msm_g1_cpu(&pts[..3 * chunk], &mixed);
    let got = dev
        .msm_chunked(&bases, 0..3 * chunk, &dev.upload(&mixed).unwrap(), 0, chunk)
        .unwrap();
    assert_eq!(
        got, want,
        "G1 chunks of {chunk}: full width, {bits} bits ({full:?}), full width (seed {seed})"
    );
    let m = 70_001;
    let p2 = g2_points(seed + 4, m);
    let s2 = scalars(seed + 5, m);
    let want = msm_g2_cpu(&p2, &s2);
    let b2 = dev.upload_g2_bases(&p2).unwrap();
    let d2 = dev.upload(&s2).unwrap();
    for chunk in [1usize << 14, 35_001] {
        let got = dev.msm_chunked(&b2, 0..m, &d2, 0, chunk).unwrap();
        assert_eq!(got, want, "G2 chunks of {chunk} (seed {seed})");
    }
    println!("chunked MSMs ok");
}

/// MSMs with bases streamed from host memory through a ring of device buffers equal blstrs
/// and the resident MSM: registered (page-locked) and pageable host memory, rings of two and
/// three buffers, chunks that leave a short last chunk, a sub-range of the bases, a chunk of
/// zero scalars, an offset into the scalars, G1 and G2. One ring serves several MSMs in a
/// row, and counts the bytes it moved.
/// Scalars shaped as a PoRep witness: about half zeros, half ones, a few full-width values.
fn witness_mix(seed: u64, n: usize) -> Vec<Scalar> {
    let full = scalars(seed, n);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5);
    full.into_iter()
        .map(|x| match rng.next_u64() % 100 {
            0..=49 => Scalar::ZERO,
            50..=96 => Scalar::ONE,
            _ => x,
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA device"]
fn msm_streamed_batch_equals_one_msm_a_set() {
    use cuzk_kernels::{BaseRing, OnesAndRest, PinnedPoints};
    use std::sync::Arc;
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let n = 150_001;
    let pts = Arc::new(g1_points(seed, n));
    let pinned = PinnedPoints::register(&dev, pts.clone()).unwrap();
    // four sets: witness-shaped, all zeros, all full width, all ones
    let mut sets = vec![
        witness_mix(seed + 1, n),
        vec![Scalar::ZERO; n],
        scalars(seed + 2, n),
        vec![Scalar::ONE; n],
    ];
    // a set whose first chunks are all zero, then witness-shaped
    let mut late = witness_mix(seed + 3, n);
    late[..70_000].fill(Scalar::ZERO);
    sets.push(late);
    let want: Vec<G1Projective> = sets.iter().map(|s| msm_g1_cpu(&pts, s)).collect();
    // every other set through page-locked staging buffers, as a batch of partitions uploads
    // them, the others straight from pageable memory
    let mut staging = cuzk_kernels::Staging::new(&dev).unwrap();
    let device_sets: Vec<_> = sets
        .iter()
        .enumerate()
        .map(|(j, s)| {
            let v = OnesAndRest::classify(s).unwrap();
            let via = (j % 2 == 0).then_some(&mut staging);
            dev.upload_ones_and_rest_via(v, via).unwrap()
        })
        .collect();
    let refs: Vec<_> = device_sets.iter().collect();
    for (chunk, slots) in [(1usize << 15, 2usize), (40_000, 3), (40_007, 2), (n, 2)] {
        let mut ring = BaseRing::<cuzk_kernels::G1>::new(&dev, chunk, slots).unwrap();
        let got = dev
            .msm_streamed_batch(pinned.as_slice(), 0..n, &refs, &mut ring)
            .unwrap();
        assert_eq!(got, want, "{slots} x {chunk} (seed {seed})");
        // the bases crossed the link once for all five sets
        assert_eq!(ring.bytes_moved(), (n * 96) as u64, "{slots} x {chunk}");
    }
    // a sub-range of the bases with sets of its length
    let sub: Vec<Scalar> = witness_mix(seed + 4, 100_000);
    let want_sub = msm_g1_cpu(&pts[1000..101_000], &sub);
    let d_sub = dev
        .upload_ones_and_rest(OnesAndRest::classify(&sub).unwrap())
        .unwrap();
    let mut ring = BaseRing::<cuzk_kernels::G1>::new(&dev, 1 << 14, 2).unwrap();
    let got = dev
        .msm_streamed_batch(pinned.as_slice(), 1000..101_000, &[&d_sub], &mut ring)
        .unwrap();
    assert_eq!(got, vec![want_sub], "sub-range (seed {seed})");
    // a set of the wrong length is refused; no sets give no results
    assert!(dev
        .msm_streamed_batch(pinned.as_slice(), 0..n - 1, &refs, &mut ring)
        .is_err());
    assert!(dev
        .msm_streamed_batch(pinned.as_slice(), 0..n, &[], &mut ring)
        .unwrap()
        .is_empty());

    // G2
    let m = 40_003;
    let p2 = Arc::new(g2_points(seed + 5, m));
    let pinned2 = PinnedPoints::register(&dev, p2.clone()).unwrap();
    let s2 = [witness_mix(seed + 6, m), witness_mix(seed + 7, m)];
    let want2: Vec<G2Projective> = s2.iter().map(|s| msm_g2_cpu(&p2, s)).collect();
    let d2: Vec<_> = s2
        .iter()
        .map(|s| {
            dev.upload_ones_and_rest(OnesAndRest::classify(s).unwrap())
                .unwrap()
        })
        .collect();
    let mut ring2 = BaseRing::<cuzk_kernels::G2>::new(&dev, 1 << 13, 2).unwrap();
    let got2 = dev
        .msm_streamed_batch(pinned2.as_slice(), 0..m, &[&d2[0], &d2[1]], &mut ring2)
        .unwrap();
    assert_eq!(got2, want2, "G2 (seed {seed})");
    assert_eq!(ring2.bytes_moved(), (m * 192) as u64);
    println!("batched streamed MSMs ok");
}

#[test]
#[ignore = "needs a CUDA device"]
fn msm_streamed_from_host_equals_resident_and_blstrs() {
    use cuzk_kernels::{BaseRing, PinnedPoints};
    use std::sync::Arc;
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let n = 200_003;
    let mut pts = g1_points(seed, n);
    let mut sc = msm_case(seed + 1, n, &mut pts, G1Affine::identity());
    for s in &mut sc[1 << 16..2 << 16] {
        *s = Scalar::ZERO;
    }
    let pts = Arc::new(pts);
    // the driver's peak of allocated device memory sees a ring's buffers
    dev.synchronize().unwrap();
    dev.reset_peak_memory().unwrap();
    let before = dev
        .peak_memory()
        .unwrap()
        .expect("H100/H200 have memory pools");
    let ring = BaseRing::<cuzk_kernels::G1>::new(&dev, 1 << 20, 2).unwrap();
    let peak = dev.peak_memory().unwrap().unwrap();
    assert!(
        peak >= before + ring.num_bytes(),
        "{before} + {} > {peak}",
        ring.num_bytes()
    );
    drop(ring);
    let pinned = PinnedPoints::register(&dev, pts.clone()).unwrap();
    assert_eq!(pinned.num_bytes(), n * 96);
    let resident = dev.upload_g1_bases(&pts).unwrap();
    let padded = scalars_with_prefix(seed + 3, 5, &sc);
    let d = dev.upload(&padded).unwrap();
    let want = msm_g1_cpu(&pts, &sc);
    assert_eq!(dev.msm_at(&resident, 0..n, &d, 5).unwrap(), want);
    for (chunk, slots) in [(1usize << 15, 2usize), (77_777, 3), (n, 2)] {
        let mut ring = BaseRing::<cuzk_kernels::G1>::new(&dev, chunk, slots).unwrap();
        assert_eq!(ring.num_bytes(), (chunk * slots * 96) as u64);
        // each chunk planned alone, and every chunk planned for the whole range (wider
        // windows than a chunk's, one set of bucket sums for all of them)
        for span in [WindowSpan::Chunk, WindowSpan::Whole] {
            for (what, host) in [("pinned", pinned.as_slice()), ("pageable", &pts[..])] {
                let got = dev
                    .msm_streamed(host, 0..n, &d, 5, &mut ring, span)
                    .unwrap();
                assert_eq!(
                    got, want,
                    "G1 {what}, {slots} x {chunk}, {span:?} (seed {seed})"
                );
            }
            // a sub-range: bases 1000..101000 with the scalars from offset 5 + 1000
            let sub = msm_g1_cpu(&pts[1000..101_000], &sc[1000..101_000]);
            let got = dev
                .msm_streamed(pinned.as_slice(), 1000..101_000, &d, 1005, &mut ring, span)
                .unwrap();
            assert_eq!(
                got, sub,
                "G1 sub-range, {slots} x {chunk}, {span:?} (seed {seed})"
            );
        }
        // every chunk but the all-zero one crossed the link, four times, then the sub-ranges
        assert!(ring.bytes_moved() >= 4 * ((n - (1 << 16)) * 96) as u64);
    }
    // ranges and lengths are checked
    let mut ring = BaseRing::<cuzk_kernels::G1>::new(&dev, 1 << 12, 2).unwrap();
    assert!(dev
        .msm_streamed(
            pinned.as_slice(),
            0..n + 1,
            &d,
            0,
            &mut ring,
            WindowSpan::Whole
        )
        .is_err());
    assert!(dev
        .msm_streamed(pinned.as_slice(), 0..n, &d, 6, &mut ring, WindowSpan::Chunk)
        .is_err());
    assert!(BaseRing::<cuzk_kernels::G1>::new(&dev, 0, 2).is_err());
    assert!(BaseRing::<cuzk_kernels::G1>::new(&dev, 8, 1).is_err());
    drop(pinned);

    let m = 50_001;
    let p2 = Arc::new(g2_points(seed + 4, m));
    let s2 = scalars(seed + 5, m);
    let want = msm_g2_cpu(&p2, &s2);
    let pinned2 = PinnedPoints::register(&dev, p2.clone()).unwrap();
    let d2 = dev.upload(&s2).unwrap();
    for chunk in [1usize << 13, 20_000] {
        let mut ring = BaseRing::<cuzk_kernels::G2>::new(&dev, chunk, 2).unwrap();
        for span in [WindowSpan::Chunk, WindowSpan::Whole] {
            let got = dev
                .msm_streamed(pinned2.as_slice(), 0..m, &d2, 0, &mut ring, span)
                .unwrap();
            assert_eq!(
                got, want,
                "G2 streamed, chunks of {chunk}, {span:?} (seed {seed})"
            );
        }
        assert_eq!(ring.bytes_moved(), 2 * (m * 192) as u64);
    }
    // registering nothing is allowed
    let empty = PinnedPoints::register(&dev, Arc::new(Vec::<G1Affine>::new())).unwrap();
    assert_eq!(empty.num_bytes(), 0);
    println!("streamed MSMs ok");
}

/// One chunk of 2^27 points (`msm_chunked` with a chunk above `MAX_CHUNK`: a 32 GiB
/// partition's H and L MSMs in one chunk), gives the sum that chunks of 2^26 and of 3 * 2^24 give (the chunked path is tied to
/// blstrs by `msm_chunked_matches_blstrs`; blstrs itself takes minutes at this size): random
/// and Filecoin-shaped scalars over 2^27 G1 points (2^16 distinct random points, tiled).
/// Needs about 20 GiB of device memory.
#[test]
#[ignore = "needs a CUDA device"]
fn msm_one_chunk_of_2_27_equals_smaller_chunks() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let n = 1usize << 27;
    let uniq = g1_points(seed, 1 << 16);
    let pts: Vec<G1Affine> = uniq.iter().cycle().take(n).copied().collect();
    let bases = dev.upload_g1_bases(&pts).unwrap();
    drop(pts);
    for (what, seed) in [("random", seed + 1), ("Filecoin-shaped", seed + 2)] {
        let sc = if what == "random" {
            scalars(seed, n)
        } else {
            filecoin_scalars(seed, n)
        };
        let d = dev.upload(&sc).unwrap();
        drop(sc);
        let one = dev.msm_chunked(&bases, 0..n, &d, 0, n).unwrap();
        assert!(
            !bool::from(one.is_identity()),
            "{what}: a sum of random points"
        );
        for chunk in [1usize << 26, 3 << 24] {
            let got = dev.msm_chunked(&bases, 0..n, &d, 0, chunk).unwrap();
            assert_eq!(
                got, one,
                "{what}, chunks of {chunk} against one (seed {seed})"
            );
        }
    }
    println!("2^27 in one chunk ok");
}

/// Scalars sorted once ([`GpuDevice::msm_sort`]) and summed with G1 and G2 bases
/// ([`GpuDevice::msm_sorted`]), as the B query is: each result equals blstrs' on the same
/// scalars. Random scalars with the edge cases of `msm_case`, Filecoin-shaped ones, every
/// scalar zero, a sub-range of longer scalar and base buffers, no scalars; and the errors.
#[test]
#[ignore = "needs a CUDA device"]
fn msm_sorted_once_matches_blstrs_in_g1_and_g2() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let n = (1 << 16) + 1;
    let mut p1 = g1_points(seed, n + 9);
    let p2 = g2_points(seed + 1, n + 9);
    // the edge cases (identity and repeated points) among the G1 bases the MSMs use
    let random = msm_case(seed + 2, n, &mut p1[9..], G1Affine::identity());
    let b1 = dev.upload_g1_bases(&p1).unwrap();
    let b2 = dev.upload_g2_bases(&p2).unwrap();
    let cases = [
        ("random", random),
        ("Filecoin-shaped", filecoin_scalars(seed + 3, n)),
        ("all zero", vec![Scalar::ZERO; n]),
        (
            "r - 1 and 1",
            (0..n)
                .map(|i| if i % 3 == 0 { minus_one() } else { Scalar::ONE })
                .collect(),
        ),
    ];
    for (what, sc) in &cases {
        // 5 scalars in front; bases from offset 9
        let padded = scalars_with_prefix(seed + 4, 5, sc);
        let d = dev.upload(&padded).unwrap();
        let sorted = dev.msm_sort(&d, 5..5 + n).unwrap();
        assert_eq!(sorted.len(), n);
        let want1 = msm_g1_cpu(&p1[9..9 + n], sc);
        let want2 = msm_g2_cpu(&p2[9..9 + n], sc);
        // G2 first, then G1: the lists are not consumed
        assert_eq!(
            dev.msm_sorted(&b2, 9..9 + n, &sorted).unwrap(),
            want2,
            "G2, {what} (seed {seed})"
        );
        assert_eq!(
            dev.msm_sorted(&b1, 9..9 + n, &sorted).unwrap(),
            want1,
            "G1, {what} (seed {seed})"
        );
        assert_eq!(
            dev.msm_sorted(&b2, 9..9 + n, &sorted).unwrap(),
            want2,
            "G2 again, {what} (seed {seed})"
        );
        // and the same as the MSM that sorts for itself
        assert_eq!(
            dev.msm_at(&b1, 9..9 + n, &d, 5).unwrap(),
            want1,
            "G1 msm_at, {what}"
        );
        // a range of another length, or outside the bases, is refused
        assert!(dev.msm_sorted(&b1, 9..9 + n - 1, &sorted).is_err());
        assert!(dev.msm_sorted(&b1, 10..10 + n, &sorted).is_err());
    }
    let d = dev.upload(&cases[0].1).unwrap();
    let empty = dev.msm_sort(&d, 3..3).unwrap();
    assert!(empty.is_empty());
    assert_eq!(
        dev.msm_sorted(&b1, 4..4, &empty).unwrap(),
        G1Projective::identity()
    );
    assert!(
        dev.msm_sort(&d, 0..n + 1).is_err(),
        "a range past the scalars"
    );
    println!("sorted-once MSMs ok");
}

/// `prefix` random scalars, then `rest`.
fn scalars_with_prefix(seed: u64, prefix: usize, rest: &[Scalar]) -> Vec<Scalar> {
    let mut v = scalars(seed, prefix);
    v.extend_from_slice(rest);
    v
}

#[test]
#[ignore = "needs a CUDA device"]
fn msm_over_one_repeated_point_takes_every_doubling_path() {
    // Every base the same point P: every bucket, piece and window sum is a small multiple of
    // P, so equal points meet in the additions of one warp while other lanes add distinct
    // ones (the doubling branches run beside the general ones). Out-of-line point functions
    // were miscompiled exactly there (compile::INLINE_POINTS). The sum is (sum of scalars) P.
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let p1 = g1_points(seed, 1)[0];
    let p2 = g2_points(seed + 1, 1)[0];
    for (i, n) in [30usize, 1000, 65_537, 300_007].into_iter().enumerate() {
        for (kind, sc) in [
            ("random", scalars(seed + 10 + i as u64, n)),
            ("Filecoin-shaped", filecoin_scalars(seed + 20 + i as u64, n)),
            (
                "small",
                (0..n).map(|j| Scalar::from((j % 5) as u64)).collect(),
            ),
        ] {
            let total: Scalar = sc.iter().sum();
            let b1 = dev.upload_g1_bases(&vec![p1; n]).unwrap();
            let got = dev.msm_g1(&b1, 0..n, &sc).unwrap();
            assert_eq!(
                got,
                G1Projective::from(p1) * total,
                "G1 n={n} {kind} (seed {seed})"
            );
            if n <= 65_537 {
                let b2 = dev.upload_g2_bases(&vec![p2; n]).unwrap();
                let got = dev.msm_g2(&b2, 0..n, &sc).unwrap();
                assert_eq!(
                    got,
                    G2Projective::from(p2) * total,
                    "G2 n={n} {kind} (seed {seed})"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn device_identity_is_reported() {
    let dev = device();
    assert!(dev.total_memory() > 0);
    assert!(dev.arch().starts_with("sm_"));
    assert_ne!(dev.uuid(), [0u8; 16]);
    // every GPU since Volta lets a block opt in to more than the 48 KiB default (the MSM's
    // bin sort sizes its bins from it)
    assert!(dev.shared_memory_per_block() > 48 * 1024);
    let _ = (
        G1Projective::identity(),
        G2Projective::identity(),
        G1Projective::generator().to_affine(),
    );
}

/// The helpers a Groth16 prover needs around the MSM: compaction by a bitmap into an offset
/// of a buffer whose prefix is written from the host, an MSM over a sub-range of a longer
/// scalar buffer, and bases tiled on the device.
#[test]
#[ignore = "needs a CUDA device"]
fn compaction_offsets_and_tiling_match_the_host() {
    let dev = device();
    let seed = seed();
    println!("seed {seed}");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for n in [1usize, 2, 63, 64, 65, 1000, (1 << 16) + 1] {
        let src = scalars(seed + n as u64, n);
        let mut words = vec![0u64; n.div_ceil(64)];
        for i in 0..n {
            // dense, sparse and empty words
            let keep = match (i / 64) % 3 {
                0 => rng.next_u32() % 4 != 0,
                1 => rng.next_u32() % 16 == 0,
                _ => false,
            };
            if keep || i == n - 1 {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        let want: Vec<Scalar> = (0..n)
            .filter(|i| words[i / 64] >> (i % 64) & 1 == 1)
            .map(|i| src[i])
            .collect();
        let head = [Scalar::from(7u64), minus_one()];
        let dsrc = dev.upload(&src).unwrap();
        let mut dst = dev
            .alloc_zeroed::<Scalar>(head.len() + want.len() + 1)
            .unwrap();
        dev.copy_to_device_at(&head, &mut dst, 0).unwrap();
        let written = dev.fr_compact(&dsrc, &words, &mut dst, head.len()).unwrap();
        assert_eq!(written, want.len(), "n={n}");
        let got = dev.download(&dst).unwrap();
        assert_eq!(&got[..2], &head, "n={n}: prefix written from the host");
        assert_eq!(&got[2..2 + want.len()], &want[..], "n={n} (seed {seed})");
        assert_eq!(
            got[2 + want.len()],
            Scalar::ZERO,
            "n={n}: past the end untouched"
        );
        // errors: no room, bits past the end
        let mut small = dev.alloc_zeroed::<Scalar>(want.len()).unwrap();
        assert!(dev.fr_compact(&dsrc, &words, &mut small, 1).is_err());
        if n % 64 != 0 {
            let mut bad = words.clone();
            *bad.last_mut().unwrap() |= 1 << 63;
            assert!(dev.fr_compact(&dsrc, &bad, &mut dst, 0).is_err());
        }
        // one resident bitmap, reused for a second source (as for a circuit's partitions)
        let bitmap = dev.upload_bitmap(&words, n).unwrap();
        assert_eq!((bitmap.len(), bitmap.count()), (n, want.len()));
        let src2 = scalars(seed + 1000 + n as u64, n);
        let want2: Vec<Scalar> = (0..n)
            .filter(|i| words[i / 64] >> (i % 64) & 1 == 1)
            .map(|i| src2[i])
            .collect();
        for (s, w) in [(&src2, &want2), (&src, &want)] {
            let mut out = dev.alloc_zeroed::<Scalar>(w.len()).unwrap();
            let d = dev.upload(s).unwrap();
            assert_eq!(
                dev.fr_compact_by(&d, &bitmap, &mut out, 0).unwrap(),
                w.len()
            );
            assert_eq!(&dev.download(&out).unwrap(), w, "n={n}: reused bitmap");
        }
        let longer = dev.upload(&scalars(seed, n + 1)).unwrap();
        assert!(
            dev.fr_compact_by(&longer, &bitmap, &mut dst, 0).is_err(),
            "n={n}: bitmap of another length"
        );
        // nothing selected: nothing written
        let none = dev.upload_bitmap(&vec![0; n.div_ceil(64)], n).unwrap();
        assert_eq!(none.num_bytes(), cuzk_kernels::DeviceBitmap::bytes_for(n));
        assert_eq!(bitmap.num_bytes(), cuzk_kernels::DeviceBitmap::bytes_for(n));
        assert_eq!(dev.fr_compact_by(&dsrc, &none, &mut small, 0).unwrap(), 0);
    }
    assert!(dev
        .copy_to_device_at(&[Scalar::ONE; 3], &mut dev.alloc_zeroed(4).unwrap(), 2)
        .is_err());

    // MSM over scalars[from ..] of a longer buffer, against the CPU
    let pts = g1_points(seed + 3, 3000);
    let sc = scalars(seed + 4, 3500);
    let bases = dev.upload_g1_bases(&pts).unwrap();
    let dsc = dev.upload(&sc).unwrap();
    let got = dev.msm_at(&bases, 100..2100, &dsc, 1234).unwrap();
    assert_eq!(
        got,
        msm_g1_cpu(&pts[100..2100], &sc[1234..3234]),
        "msm_at (seed {seed})"
    );
    assert!(dev.msm_at(&bases, 0..2000, &dsc, 1501).is_err());
    let g2 = g2_points(seed + 5, 500);
    let b2 = dev.upload_g2_bases(&g2).unwrap();
    let got = dev.msm_at(&b2, 0..499, &dsc, 7).unwrap();
    assert_eq!(got, msm_g2_cpu(&g2[..499], &sc[7..506]), "G2 msm_at");

    // tiled bases: download equals the host repetition, and an MSM over them agrees
    let tiled = dev.tile_bases::<cuzk_kernels::G1>(&pts[..7], 30).unwrap();
    assert_eq!(tiled.len(), 30);
    let rep: Vec<G1Affine> = (0..30).map(|i| pts[i % 7]).collect();
    let got = dev.msm_g1(&tiled, 0..30, &sc[..30]).unwrap();
    assert_eq!(got, msm_g1_cpu(&rep, &sc[..30]), "tiled G1 bases");
    let tiled2 = dev.tile_bases::<cuzk_kernels::G2>(&g2[..3], 10).unwrap();
    let rep2: Vec<G2Affine> = (0..10).map(|i| g2[i % 3]).collect();
    let got = dev.msm_g2(&tiled2, 0..10, &sc[..10]).unwrap();
    assert_eq!(got, msm_g2_cpu(&rep2, &sc[..10]), "tiled G2 bases");
    assert!(dev.tile_bases::<cuzk_kernels::G1>(&[], 3).is_err());

    // no points: nothing allocated, an empty MSM is the identity, a non-empty one an error
    let empty = dev.upload_g2_bases(&[]).unwrap();
    assert!(empty.is_empty() && empty.raw().is_none());
    assert_eq!(
        dev.msm_g2(&empty, 0..0, &[]).unwrap(),
        G2Projective::identity()
    );
    let none = dev.tile_bases::<cuzk_kernels::G1>(&[], 0).unwrap();
    assert_eq!(none.num_bytes(), 0);
    assert!(dev.msm_g1(&none, 0..1, &sc[..1]).is_err());
}

/// Uploads through the page-locked staging buffers equal the host data: sizes around a
/// buffer's capacity, more chunks than buffers (each reused after its copy completed), an
/// offset into the destination, zero padding, and a host slice reused at once.
#[test]
#[ignore = "needs a CUDA device"]
fn staged_uploads_match_the_host() {
    use cuzk_kernels::staging::{STAGES, STAGE_BYTES};
    let dev = device();
    let seed = seed();
    let per = STAGE_BYTES / 32;
    let mut staging = cuzk_kernels::Staging::new(&dev).unwrap();
    for n in [
        0usize,
        1,
        1000,
        per - 1,
        per,
        per + 1,
        (STAGES + 2) * per + 17,
    ] {
        let host = scalars(seed + n as u64, n);
        let buf = dev.upload_staged(&mut staging, &host, n + 5).unwrap();
        let back = dev.download(&buf).unwrap();
        assert_eq!(&back[..n], &host[..], "n={n} (seed {seed})");
        assert!(
            back[n..].iter().all(|x| *x == Scalar::ZERO),
            "padding n={n}"
        );
    }
    // into the middle of an existing buffer, twice in a row from the same host vector
    let mut host = scalars(seed + 1, 2 * per + 3);
    let mut dst = dev.upload(&scalars(seed + 2, 3 * per)).unwrap();
    let before = dev.download(&dst).unwrap();
    dev.copy_to_device_staged(&mut staging, &host, &mut dst, 11)
        .unwrap();
    let first = host.clone();
    host.iter_mut().for_each(|x| *x = x.double());
    dev.copy_to_device_staged(&mut staging, &host[..per], &mut dst, per + 20)
        .unwrap();
    let after = dev.download(&dst).unwrap();
    assert_eq!(&after[..11], &before[..11]);
    assert_eq!(&after[11..per + 20], &first[..per + 9]);
    assert_eq!(&after[per + 20..2 * per + 20], &host[..per]);
    assert_eq!(&after[2 * per + 20..], &before[2 * per + 20..]);
    assert!(dev
        .copy_to_device_staged(&mut staging, &host, &mut dst, per + 1)
        .is_err());
    assert!(dev.upload_staged(&mut staging, &host, 3).is_err());
}

/// Small copies go through page-locked bounce buffers (larger ones straight from the host):
/// round trips at sizes around the smallest buffer and the bounce limit equal the host data;
/// more uploads than kept buffers, queued behind an NTT so that none has run when the next
/// is written, each land intact (a buffer is rewritten only after its copy has read it); a
/// side stream shares the buffers; and a host vector may be changed as soon as its upload
/// returns.
#[test]
#[ignore = "needs a CUDA device"]
fn bounced_copies_match_the_host() {
    use cuzk_kernels::bounce::BOUNCE_MAX_BYTES;
    let dev = device();
    let seed = seed();
    let limit = BOUNCE_MAX_BYTES / 32;
    for n in [1usize, 2, 8191, 8192, 8193, limit - 1, limit, limit + 1] {
        let host = scalars(seed + n as u64, n);
        let buf = dev.upload(&host).unwrap();
        assert_eq!(dev.download(&buf).unwrap(), host, "n={n} (seed {seed})");
        let words: Vec<u64> = host.iter().map(|s| s.to_bytes_le()[0] as u64).collect();
        let wbuf = dev.upload(&words).unwrap();
        assert_eq!(dev.download(&wbuf).unwrap(), words, "u64 n={n}");
    }
    // 40 uploads (more than the pool keeps) queued behind an NTT of 2^22, from one host
    // vector rewritten after every upload
    let mut long = dev.upload(&scalars(seed + 3, 1 << 22)).unwrap();
    dev.ntt(&mut long, NttKind::Forward).unwrap();
    let mut host = scalars(seed + 4, 5000);
    let mut want = Vec::new();
    let mut bufs = Vec::new();
    for i in 0..40u64 {
        let mut buf = dev.alloc_zeroed::<Scalar>(host.len() + 3).unwrap();
        dev.copy_to_device_at(&host, &mut buf, 3).unwrap();
        want.push(host.clone());
        bufs.push(buf);
        host.iter_mut().for_each(|x| *x += Scalar::from(i + 1));
    }
    for (i, (buf, w)) in bufs.iter().zip(&want).enumerate() {
        let back = dev.download(buf).unwrap();
        assert!(back[..3].iter().all(|x| *x == Scalar::ZERO), "upload {i}");
        assert_eq!(&back[3..], &w[..], "upload {i} (seed {seed})");
    }
    // a side stream's copies use the same pool; its results are its own
    let side = dev.side_stream().unwrap();
    let a = scalars(seed + 5, 777);
    let on_side = side.upload(&a).unwrap();
    side.synchronize().unwrap();
    assert_eq!(dev.download(&on_side).unwrap(), a);
    assert_eq!(side.download(&on_side).unwrap(), a);
}

/// Window tables of `base` for `c`-bit windows, as `FixedBaseTable` states its invariant,
/// built naively: `d 2^(c k) base` for every window k and digit d in 1..=2^(c-1).
fn fixed_base_tables<G>(base: G, c: u32) -> (Vec<G::AffineRepr>, usize)
where
    G: Group + Curve,
    G::AffineRepr: Clone,
{
    let windows = 256usize.div_ceil(c as usize);
    let half = 1usize << (c - 1);
    let mut proj = Vec::with_capacity(windows * half);
    let mut start = base;
    for _ in 0..windows {
        let mut acc = start;
        for _ in 0..half {
            proj.push(acc);
            acc += start;
        }
        for _ in 0..c {
            start = start.double();
        }
    }
    let mut affine = vec![base.to_affine(); proj.len()];
    G::batch_normalize(&proj, &mut affine);
    (affine, windows)
}

/// Fixed-base products (parameter generation) equal blstrs' scalar multiplication, for
/// scalars at every digit edge (zero, one, r - 1, each power of two, its predecessor and its
/// negation: every window at its extremes and carries across windows) and random ones, at
/// several window widths; tables of the wrong shape are refused.
#[test]
#[ignore = "needs a CUDA device"]
fn fixed_base_products_equal_blstrs_scalar_multiplication() {
    use cuzk_kernels::fixed_base::FixedBaseTable;
    use cuzk_kernels::{G1, G2};
    let dev = device();
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut s = vec![Scalar::ZERO, Scalar::ONE, minus_one()];
    let mut p = Scalar::ONE;
    for _ in 0..255 {
        s.extend([p, p - Scalar::ONE, -p]);
        p = p.double();
    }
    s.extend((0..5000).map(|_| Scalar::random(&mut rng)));
    for c in [3u32, 7, 13, 16] {
        let g1 = G1Projective::random(&mut rng);
        let (t, w) = fixed_base_tables(g1, c);
        let table = FixedBaseTable::<G1>::upload(&dev, &t, c, w).expect("uploads");
        let got = table.mul(&dev, &s).expect("G1 products");
        assert_eq!(got.len(), s.len());
        for (x, p) in s.iter().zip(&got) {
            assert_eq!(*p, g1 * x, "G1, c = {c}, scalar {x:?}");
        }
    }
    for c in [5u32, 12] {
        let g2 = G2Projective::random(&mut rng);
        let (t, w) = fixed_base_tables(g2, c);
        let table = FixedBaseTable::<G2>::upload(&dev, &t, c, w).expect("uploads");
        let got = table.mul(&dev, &s).expect("G2 products");
        for (x, p) in s.iter().zip(&got) {
            assert_eq!(*p, g2 * x, "G2, c = {c}");
        }
    }
    let wrong_length = FixedBaseTable::<G1>::upload(&dev, &[G1Affine::generator()], 16, 16);
    assert!(matches!(
        wrong_length.err(),
        Some(cuzk_kernels::Error::Length { .. })
    ));
    let too_wide = FixedBaseTable::<G1>::upload(&dev, &[G1Affine::generator()], 17, 16);
    assert!(matches!(
        too_wide.err(),
        Some(cuzk_kernels::Error::Unsupported { .. })
    ));
}
