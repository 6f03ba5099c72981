//! On a CUDA device, the GPU backend's proofs are byte-identical to the CPU backend's and to
//! bellperson 0.27's `create_proof` with the same r and s, for every proof kind at 2 KiB and
//! for synthetic circuits of many shapes (no public input, a domain of one point, sizes
//! around powers of two), with B in G2 on the device or on the host, and they verify. Parameters stay resident between proofs; under a
//! small budget the least recently used circuit is evicted and the proofs do not change.
//! Through the `dual` backend (the library's, and `cuzk bench --backend dual`) every
//! operation of every kind agrees with the CPU's.
//!
//! Run on a GPU machine (parameters are generated into `$CUZK_TEST_PARAMS` on first use):
//! `CUZK_TEST_PARAMS=/tmp/p cuzk_suite gpu_proofs:: --include-ignored --test-threads=1
//! --nocapture`.

use crate::support;

use std::time::Instant;

use bellperson::groth16::{create_proof, generate_random_parameters, verify_proof, Proof};
use blstrs::{Bls12, Scalar};
use cuzk::{
    circuits, prove_circuit, CpuBackend, CudaBackend, Error, ProofKind, ProveOptions, Randomness,
    Srs,
};
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use support::shape::{Empty, Shape};

fn gpu() -> CudaBackend {
    let gpu = CudaBackend::open(0).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "device {} ({}), {} GiB",
        cuzk::Backend::name(&gpu),
        gpu.device_name(),
        gpu.total_memory() >> 30
    );
    gpu
}

fn bytes(p: &Proof<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).expect("serialise");
    v
}

fn fixed(r: Scalar, s: Scalar) -> ProveOptions {
    ProveOptions {
        randomness: Randomness::Fixed(r, s),
        verify: true,
        pce: true,
    }
}

/// One kind end to end: CPU, GPU (cold, then warm) and bellperson give the same bytes.
fn check_kind(kind: ProofKind) {
    let mut gpu = gpu();
    let store = support::store_with(kind);
    let request = support::inputs().get(kind);
    let (r, s) = (Scalar::from(0xdead_beefu64), Scalar::from(0x0bad_cafeu64));
    let on = |backend: &mut dyn cuzk::Backend, what: &str| {
        support::prove_on_backend(&store, backend, request, r, s)
            .unwrap_or_else(|e| panic!("{kind}: {what}: {e}"))
    };
    let cpu = on(&mut CpuBackend, "CPU proves");
    let cold = on(&mut gpu, "GPU proves");
    let warm = on(&mut gpu, "GPU proves again");
    // B in G2 on the host's cores, overlapped with the device: the same proof
    let mut host_g2 = self::gpu().with_b_g2_on_host(true);
    let _ = on(&mut host_g2, "GPU + host proves");
    let overlapped = on(&mut host_g2, "GPU + host proves");
    assert_eq!(
        overlapped.bytes, cpu.bytes,
        "{kind}: B G2 on the host differs"
    );
    drop(host_g2);
    assert_eq!(
        hex::encode(&cold.bytes),
        hex::encode(&cpu.bytes),
        "{kind}: GPU and CPU proofs differ"
    );
    assert_eq!(
        cold.bytes, warm.bytes,
        "{kind}: resident bases changed the proof"
    );

    support::assert_matches_bellperson(&store, request, r, s, &cold.bytes, "GPU");
    let srs = store.get(request.proof).expect("params");

    // the phases of partition 0, warm, and the memory accounting
    assert!(gpu.is_resident(&srs));
    assert_eq!(gpu.resident_bytes(), CudaBackend::resident_bytes_of(&srs));
    let job = circuits::plan(request)
        .expect("plan")
        .partitions
        .into_iter()
        .next()
        .expect("one partition");
    let asg = job.circuit.synthesize().expect("synthesis");
    let n = asg.num_constraints();
    let t = Instant::now();
    let (proof, phases) = gpu.prove_timed(&srs, asg, r, s, 0).expect("GPU proves");
    let wall = t.elapsed();
    assert_eq!(
        bytes(&proof),
        cold.bytes[..192],
        "{kind}: prove_timed differs"
    );
    let needed = CudaBackend::vram_needed(&srs, n);
    assert!(needed > gpu.resident_bytes());
    println!(
        "{kind}: {n} constraints, {} partition(s); prove: CPU {:.3?}, GPU cold {:.3?} (uploads \
         parameters, loads kernels), GPU warm {:.3?}, GPU warm with B G2 on the host {:.3?}; \
         partition 0 warm {wall:.3?} = {phases}; resident {} MiB, vram_needed {} MiB",
        cold.partitions,
        cpu.prove,
        cold.prove,
        warm.prove,
        overlapped.prove,
        gpu.resident_bytes() >> 20,
        needed >> 20,
    );
}

/// Pipelining on one device: while a partition's kernels run, the next one's assignment is
/// uploaded on a side stream and used when its turn comes (tokens match: no upload phase),
/// dropped when they do not (uploaded again in its turn). Circuits alternate between PoRep
/// and WindowPoSt, so an upload ahead may be for other parameters than the current ones.
/// Every proof equals the CPU backend's for the same assignment, r and s.
#[test]
#[ignore = "needs a CUDA device"]
fn uploads_ahead_on_a_side_stream_give_the_same_proofs() {
    let mut gpu = gpu();
    let (r, s) = (Scalar::from(3u64), Scalar::from(5u64));
    let mut items = Vec::new();
    for kind in [
        ProofKind::PorepC2,
        ProofKind::WindowPost,
        ProofKind::PorepC2,
    ] {
        let store = support::store_with(kind);
        let request = support::inputs().get(kind);
        let srs = store.get(request.proof).expect("params");
        for part in circuits::plan(request).expect("plan").partitions {
            items.push((srs.clone(), part.circuit.synthesize().expect("synthesis")));
        }
    }
    let want: Vec<Vec<u8>> = items
        .iter()
        .map(|(srs, asg)| {
            let p = cuzk::Backend::prove(&mut CpuBackend, srs, asg.clone(), r, s, 0);
            bytes(&p.expect("CPU proves"))
        })
        .collect();
    for (srs, asg) in &items {
        gpu.prove_timed(srs, asg.clone(), r, s, 0).expect("warm-up"); // bases resident
    }
    assert!(!gpu.holds_upload_ahead());
    let n = items.len() as u64;
    for round in 0..2u64 {
        let mut total = std::time::Duration::ZERO;
        for (i, (srs, asg)) in items.iter().enumerate() {
            let token = round * 100 + i as u64;
            // in round 1 partition 1 comes with a token nobody announced: what was uploaded
            // ahead is dropped and its assignment is uploaded again
            let given = if round == 1 && i == 1 { 9_999 } else { token };
            let next = items.get(i + 1).map(|(srs, asg)| cuzk::Upcoming {
                token: token + 1,
                srs,
                assignment: asg,
            });
            let t = Instant::now();
            let (proof, times) = gpu
                .prove_timed_pipelined(srs, asg.clone(), (r, s), i, Some(given), next)
                .expect("GPU proves");
            total += t.elapsed();
            assert_eq!(bytes(&proof), want[i], "round {round}, partition {i}");
            let ahead_used = i > 0 && given == token;
            assert_eq!(
                times.upload.is_zero(),
                ahead_used,
                "round {round}, partition {i}: {times}"
            );
            assert_eq!(gpu.holds_upload_ahead(), (i as u64) + 1 < n);
        }
        println!(
            "pipelined round {round}: {} partitions in {total:.3?} ({:.1} ms each)",
            items.len(),
            total.as_secs_f64() * 1e3 / items.len() as f64
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn winning_post_2k_gpu_matches_cpu_and_bellperson() {
    check_kind(ProofKind::WinningPost);
}

#[test]
#[ignore = "needs a CUDA device"]
fn window_post_2k_gpu_matches_cpu_and_bellperson() {
    check_kind(ProofKind::WindowPost);
}

#[test]
#[ignore = "needs a CUDA device"]
fn porep_2k_gpu_matches_cpu_and_bellperson() {
    check_kind(ProofKind::PorepC2);
}

#[test]
#[ignore = "needs a CUDA device"]
fn snap_deals_2k_gpu_matches_cpu_and_bellperson() {
    check_kind(ProofKind::SnapDeals);
}

/// A synthetic circuit, its parameters and a satisfying instance.
struct Case {
    name: String,
    srs: Srs,
    circuit: Shape,
}

fn case(rng: &mut ChaCha8Rng, squarings: usize, inputs: usize, linear: usize) -> Case {
    let blank = Shape {
        x: None,
        squarings,
        inputs,
        linear,
    };
    let params = generate_random_parameters::<Bls12, _, _>(blank, &mut *rng).expect("params");
    Case {
        name: format!("{squarings}/{inputs}/{linear}"),
        srs: Srs::from_parameters(params),
        circuit: Shape {
            x: Some(Scalar::random(&mut *rng)),
            squarings,
            inputs,
            linear,
        },
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn synthetic_circuits_gpu_matches_cpu_and_bellperson() {
    let mut gpu = gpu();
    let mut host_g2 = self::gpu().with_b_g2_on_host(true);
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let shapes = [
        (1, 0, 0), // no public input
        (0, 1, 0), // no aux variable in B
        (3, 5, 1),
        (61, 1, 0), // 64 constraints with the input rows
        (62, 1, 0), // just past a power of two
        (1000, 3, 20),
        (20_000, 40, 77), // domain 2^15, 40 inputs
    ];
    let mut cases = Vec::new();
    for (squarings, inputs, linear) in shapes {
        let c = case(&mut rng, squarings, inputs, linear);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let theirs = create_proof(c.circuit.clone(), &c.srs.params, r, s).expect("bellperson");
        let opts = fixed(r, s);
        let (cpu, _) =
            prove_circuit(&c.srs, &mut CpuBackend, c.circuit.clone(), &opts).expect("CPU");
        let (ours, inputs) =
            prove_circuit(&c.srs, &mut gpu, c.circuit.clone(), &opts).expect("GPU proves");
        assert_eq!(
            bytes(&ours),
            bytes(&theirs),
            "{}: GPU vs bellperson",
            c.name
        );
        assert_eq!(bytes(&ours), bytes(&cpu), "{}: GPU vs CPU", c.name);
        let (overlapped, _) =
            prove_circuit(&c.srs, &mut host_g2, c.circuit.clone(), &opts).expect("GPU + host");
        assert_eq!(
            bytes(&overlapped),
            bytes(&cpu),
            "{}: B G2 on the host",
            c.name
        );
        assert!(verify_proof(&c.srs.pvk, &ours, &inputs).expect("verifier runs"));
        cases.push(c);
    }

    // a domain of one point: no H query, no NTT
    let params = generate_random_parameters::<Bls12, _, _>(Empty, &mut rng).expect("params");
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let theirs = create_proof(Empty, &params, r, s).expect("bellperson");
    let srs = Srs::from_parameters(params);
    let (ours, _) = prove_circuit(&srs, &mut gpu, Empty, &fixed(r, s)).expect("GPU proves");
    assert_eq!(bytes(&ours), bytes(&theirs), "empty circuit");
    let (ours, _) = prove_circuit(&srs, &mut host_g2, Empty, &fixed(r, s)).expect("GPU + host");
    assert_eq!(
        bytes(&ours),
        bytes(&theirs),
        "empty circuit, B G2 on the host"
    );

    // parameters of another circuit are refused, not turned into a bad proof
    let asg = cuzk::pce::synthesize(cases[5].circuit.clone()).expect("synthesis");
    let err =
        cuzk::Backend::prove(&mut gpu, &cases[6].srs, asg, r, s, 3).expect_err("wrong params");
    assert!(err.to_string().contains("another circuit"), "{err}");
    // all of them stayed resident (the default budget is large)
    assert!(cases.iter().all(|c| gpu.is_resident(&c.srs)));
}

/// Preloading (what a device actor does when a circuit's parameters are loaded) uploads them
/// only where they fit beside the resident circuits, never evicting one; preloaded
/// parameters prove the same bytes as the CPU, and a refused preload changes nothing.
#[test]
#[ignore = "needs a CUDA device"]
fn preload_uploads_parameters_only_where_nothing_is_evicted() {
    let mut rng = ChaCha8Rng::seed_from_u64(78);
    let p = case(&mut rng, 3000, 2, 10);
    let q = case(&mut rng, 5000, 4, 0);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let opts = fixed(r, s);
    let want_p = prove_circuit(&p.srs, &mut CpuBackend, p.circuit.clone(), &opts)
        .map(|(p, _)| bytes(&p))
        .expect("CPU");
    let (bp, bq) = (
        CudaBackend::resident_bytes_of(&p.srs),
        CudaBackend::resident_bytes_of(&q.srs),
    );
    let mut gpu = self::gpu().with_resident_budget(bp.max(bq));
    assert!(cuzk::Backend::preload(&mut gpu, &p.srs).expect("preload"));
    assert!(gpu.is_resident(&p.srs));
    // the budget counts the masks too; they are made at the circuit's first partition
    let mp = CudaBackend::mask_bytes_of(&p.srs);
    assert!(mp > 0);
    assert_eq!(gpu.resident_device_bytes(), bp - mp);
    assert!(
        cuzk::Backend::preload(&mut gpu, &p.srs).expect("again"),
        "resident already"
    );
    assert!(
        !cuzk::Backend::preload(&mut gpu, &q.srs).expect("no room"),
        "q would evict p"
    );
    assert!(gpu.is_resident(&p.srs) && !gpu.is_resident(&q.srs));
    assert_eq!(gpu.resident_device_bytes(), bp - mp);
    let got = prove_circuit(&p.srs, &mut gpu, p.circuit.clone(), &opts)
        .map(|(p, _)| bytes(&p))
        .expect("GPU");
    assert_eq!(got, want_p);
    assert_eq!(gpu.resident_device_bytes(), bp, "bases and masks");
}

/// `d` with its first set bit and its first clear bit (below `len`) swapped: as many bits
/// set, other words.
fn moved_bit(d: &cuzk::pce::Density, len: usize) -> cuzk::pce::Density {
    let set = (0..len).find(|&i| d.get(i)).expect("a set bit");
    let clear = (0..len).find(|&i| !d.get(i)).expect("a clear bit");
    let mut out = cuzk::pce::Density::new();
    for i in 0..len {
        out.push(if i == set || i == clear {
            !d.get(i)
        } else {
            d.get(i)
        });
    }
    out
}

/// A circuit's density masks stay on the device between its partitions, and a partition
/// whose masks differ (as many bits set, other words: the shape check cannot tell) gets its
/// own, never the kept ones: every proof equals the CPU backend's.
#[test]
#[ignore = "needs a CUDA device"]
fn density_masks_are_kept_per_circuit_and_never_stale() {
    let mut rng = ChaCha8Rng::seed_from_u64(79);
    let c = case(&mut rng, 300, 3, 40);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let asg = cuzk::pce::synthesize(c.circuit.clone()).expect("synthesis");
    let n = asg.aux.len();
    let mut other = asg.clone();
    other.a_aux_density = moved_bit(&asg.a_aux_density, n);
    other.b_aux_density = moved_bit(&asg.b_aux_density, n);
    assert_ne!(other.a_aux_density.words(), asg.a_aux_density.words());
    let cpu = |a: &cuzk::pce::Assignment| {
        bytes(&cuzk::Backend::prove(&mut CpuBackend, &c.srs, a.clone(), r, s, 0).expect("CPU"))
    };
    let (want, want_other) = (cpu(&asg), cpu(&other));
    assert_ne!(want, want_other, "the moved bits change the proof");

    let mut gpu = gpu();
    let bases = CudaBackend::resident_bytes_of(&c.srs) - CudaBackend::mask_bytes_of(&c.srs);
    for (i, a) in [&asg, &asg, &other, &other, &asg].into_iter().enumerate() {
        let got = cuzk::Backend::prove(&mut gpu, &c.srs, a.clone(), r, s, i).expect("GPU");
        let expected = if std::ptr::eq(a, &other) {
            &want_other
        } else {
            &want
        };
        assert_eq!(&bytes(&got), expected, "partition {i}");
        assert_eq!(
            gpu.resident_device_bytes(),
            bases + CudaBackend::mask_bytes_of(&c.srs),
            "one circuit's masks, held once"
        );
    }
    assert!(gpu.evict(&c.srs));
    assert_eq!(gpu.resident_device_bytes(), 0, "masks freed with the bases");
}

#[test]
#[ignore = "needs a CUDA device"]
fn two_circuits_stay_resident_and_lru_eviction_keeps_proofs() {
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    let p = case(&mut rng, 3000, 2, 10);
    let q = case(&mut rng, 5000, 4, 0);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let opts = fixed(r, s);
    let prove = |backend: &mut dyn cuzk::Backend, c: &Case| -> cuzk::Result<Vec<u8>> {
        prove_circuit(&c.srs, backend, c.circuit.clone(), &opts).map(|(p, _)| bytes(&p))
    };
    let want_p = prove(&mut CpuBackend, &p).expect("CPU");
    let want_q = prove(&mut CpuBackend, &q).expect("CPU");
    let (bp, bq) = (
        CudaBackend::resident_bytes_of(&p.srs),
        CudaBackend::resident_bytes_of(&q.srs),
    );

    // a large budget: both stay
    let mut gpu = gpu();
    for _ in 0..2 {
        assert_eq!(prove(&mut gpu, &p).expect("GPU"), want_p);
        assert_eq!(prove(&mut gpu, &q).expect("GPU"), want_q);
    }
    assert!(gpu.is_resident(&p.srs) && gpu.is_resident(&q.srs));
    assert_eq!(gpu.resident_bytes(), bp + bq);
    // What the budget counts is what the device buffers hold. (Free device memory is no
    // measure of it here: the memory pool keeps freed partition memory for reuse, and the
    // other tests of this binary use the same device at the same time.)
    assert_eq!(gpu.resident_device_bytes(), bp + bq);
    assert!(gpu.evict(&p.srs));
    assert!(!gpu.is_resident(&p.srs));
    assert_eq!(gpu.resident_bytes(), bq);
    drop(gpu);

    // room for one circuit only: the least recently used one goes
    let mut gpu = self::gpu().with_resident_budget(bp.max(bq));
    assert_eq!(prove(&mut gpu, &p).expect("GPU"), want_p);
    assert!(gpu.is_resident(&p.srs));
    assert_eq!(prove(&mut gpu, &q).expect("GPU"), want_q);
    assert!(gpu.is_resident(&q.srs) && !gpu.is_resident(&p.srs));
    assert_eq!(gpu.resident_bytes(), bq);
    assert_eq!(prove(&mut gpu, &p).expect("GPU"), want_p);
    assert!(gpu.is_resident(&p.srs) && !gpu.is_resident(&q.srs));
    assert_eq!(gpu.resident_bytes(), bp);
    drop(gpu);

    // room for neither: a clear error, nothing resident
    let mut gpu = self::gpu().with_resident_budget(bp.min(bq) - 1);
    let err = prove(&mut gpu, &p).expect_err("over budget");
    assert!(matches!(err, Error::Prover { .. }), "{err:?}");
    assert!(err.to_string().contains("resident budget"), "{err}");
    assert_eq!(gpu.resident_bytes(), 0);
}

/// With the parameters streamed from page-locked host memory in chunks of a few points (as
/// a card too small to keep them would prove), every kind's proof is the CPU's, byte for
/// byte, and verifies; the bases crossed the link for every partition, and the driver's
/// peak of device memory is measured.
#[test]
#[ignore = "needs a CUDA device"]
fn every_kind_with_streamed_parameters_is_the_cpus_proof() {
    let (r, s) = (Scalar::from(0x5eed_u64), Scalar::from(0xc0ffee_u64));
    for kind in [
        ProofKind::WinningPost,
        ProofKind::WindowPost,
        ProofKind::PorepC2,
        ProofKind::SnapDeals,
    ] {
        let store = support::store_with(kind);
        let request = support::inputs().get(kind);
        let cpu = support::prove_on_backend(&store, &mut CpuBackend, request, r, s).expect("CPU");
        for chunk in [64usize, 1000] {
            let mut gpu = gpu().with_stream_chunk(Some(chunk));
            gpu.reset_peak_memory().expect("peak reset");
            // each partition's proof is verified by prove_on_backend
            let out =
                support::prove_on_backend(&store, &mut gpu, request, r, s).expect("GPU streams");
            assert_eq!(
                hex::encode(&out.bytes),
                hex::encode(&cpu.bytes),
                "{kind}: streamed in chunks of {chunk}, GPU and CPU proofs differ"
            );
            assert_eq!(
                gpu.last_residency(),
                Some(cuzk::cuda::Residency::Streamed { chunk }),
                "{kind}"
            );
            assert!(gpu.bytes_streamed() > 0, "{kind}: nothing streamed");
            assert_eq!(gpu.resident_bytes(), 0, "{kind}: nothing kept resident");
            let peak = gpu.peak_memory().expect("peak").expect("memory pools");
            assert!(peak > 0, "{kind}");
            println!(
                "{kind}: streamed in chunks of {chunk}: {} bytes moved, peak {} bytes",
                gpu.bytes_streamed(),
                peak
            );
        }
    }
}

/// A streamed partition's H MSM in chunks larger than its rings' (where the partition's
/// other phases leave it the room: a ring of its own for the call), in one chunk or
/// several, is blstrs' sum, the same as in the rings' own chunks, and its copies count as
/// streamed bytes.
#[test]
#[ignore = "needs a CUDA device"]
fn streamed_h_msm_in_chunks_of_its_own_equals_blstrs() {
    use cuzk::cuda::streamed::{h_chunk, Rings};
    use cuzk::cuda::QueryLens;
    use group::{Curve, Group};
    let dev = cuzk::kernels::GpuDevice::open(0).expect("a CUDA device");
    let mut rng = ChaCha8Rng::seed_from_u64(4848);
    let (m, n) = (1usize << 16, (1usize << 16) - 1);
    // consecutive multiples of a random point, normalised at once (fast to make)
    let step = blstrs::G1Projective::random(&mut rng);
    let mut proj = Vec::with_capacity(n);
    let mut acc = blstrs::G1Projective::random(&mut rng);
    for _ in 0..n {
        proj.push(acc);
        acc += step;
    }
    let mut points = vec![blstrs::G1Affine::default(); n];
    blstrs::G1Projective::batch_normalize(&proj, &mut points);
    let scalars: Vec<Scalar> = (0..m).map(|_| Scalar::random(&mut rng)).collect();
    let want = blstrs::G1Projective::multi_exp(&proj, &scalars[..n]);
    let d = dev.upload(&scalars).expect("upload");
    let chunk = 1 << 10;
    // large aux queries: their phases leave the H phase room for chunks past the rings'
    let roomy = QueryLens {
        h: n,
        l: 1 << 22,
        a: 1 << 22,
        b_g1: 1 << 20,
        b_g2: 1 << 20,
    };
    assert_eq!(h_chunk(&roomy, m as u64, chunk), 1 << 16);
    let mut rings = Rings::new(&dev, chunk).expect("rings");
    let got = rings.msm_h(&dev, &points, n, &d, 0, &roomy).expect("H MSM");
    assert_eq!(got, want, "in a chunk of 2^16");
    assert_eq!(rings.bytes_moved(), (n * 96) as u64);
    assert_eq!(rings.g1.bytes_moved(), 0, "the rings' own buffers unused");
    // little room beside it (the transform's tables set the floor): a chunk of its own
    // between the rings' and the query's, several of them
    let tight = QueryLens {
        l: 1,
        a: 1,
        b_g1: 1,
        b_g2: 1,
        ..roomy
    };
    let between = h_chunk(&tight, m as u64, chunk);
    assert!(chunk < between && between < 1 << 16, "{between}");
    let got = rings.msm_h(&dev, &points, n, &d, 0, &tight).expect("H MSM");
    assert_eq!(got, want, "in chunks of {between}");
    assert_eq!(rings.bytes_moved(), 2 * (n * 96) as u64);
    assert_eq!(rings.g1.bytes_moved(), 0, "the rings' own buffers unused");
    // rings as wide as the query: their own buffers, the same sum
    let mut wide = Rings::new(&dev, 1 << 16).expect("rings");
    assert_eq!(h_chunk(&roomy, m as u64, 1 << 16), 1 << 16);
    let got = wide.msm_h(&dev, &points, n, &d, 0, &roomy).expect("H MSM");
    assert_eq!(got, want, "in the rings' chunk");
    assert_eq!(wide.g1.bytes_moved(), (n * 96) as u64);
    // a range past the points is an error, not a panic
    assert!(rings.msm_h(&dev, &points, n + 1, &d, 0, &tight).is_err());
    assert!(wide.msm_h(&dev, &points, n + 1, &d, 0, &roomy).is_err());
}

/// Ten partitions proved as one streamed batch (each chunk of the L, A and B bases crossing
/// the link once for all ten) are the bytes of the ten proved alone on the CPU, for every
/// kind; each verifies. The partitions are the request's own, repeated with fresh r and s
/// up to ten; a budget that leaves room for few partitions' scalars splits the batch's
/// walks and changes nothing.
#[test]
#[ignore = "needs a CUDA device"]
fn ten_partitions_batched_with_streamed_parameters_are_the_single_proofs() {
    let mut rng = ChaCha8Rng::seed_from_u64(1010);
    for kind in [
        ProofKind::PorepC2,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
        ProofKind::SnapDeals,
    ] {
        let store = support::store_with(kind);
        let request = support::inputs().get(kind);
        let (srs, parts) = support::synthesized(&store, request).expect("synthesis");
        let items: Vec<_> = (0..10)
            .map(|i| {
                let (asg, inputs, index) = &parts[i % parts.len()];
                let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
                (asg.clone(), inputs.clone(), r, s, *index)
            })
            .collect();
        let singles: Vec<Vec<u8>> = items
            .iter()
            .map(|(asg, _, r, s, p)| {
                let proof = cuzk::Backend::prove(&mut CpuBackend, &srs, asg.clone(), *r, *s, *p)
                    .expect("CPU");
                bytes(&proof)
            })
            .collect();
        // About seven chunks (a size that divides nothing) and two: every set spans chunk
        // boundaries. Ten sets a chunk make tiny chunks slow (each set's MSM is a pipeline of
        // launches), so the chunks follow the circuit's size.
        let lens = cuzk::cuda::QueryLens::of(&srs.params);
        for chunk in [lens.l / 7 + 3, lens.l / 2 + 1] {
            let mut gpu = gpu().with_stream_chunk(Some(chunk));
            let batch = items
                .iter()
                .map(|(asg, _, r, s, p)| cuzk::BatchItem {
                    assignment: asg.clone(),
                    r: *r,
                    s: *s,
                    partition: *p,
                })
                .collect();
            let before = gpu.bytes_streamed();
            let timed = gpu.prove_batch_timed(&srs, batch).expect("GPU batch");
            assert_eq!(timed.len(), 10, "{kind}");
            for (j, ((proof, times), (_, inputs, ..))) in timed.iter().zip(&items).enumerate() {
                assert_eq!(
                    bytes(proof),
                    singles[j],
                    "{kind}: item {j}, chunks of {chunk}"
                );
                assert!(
                    verify_proof(&srs.pvk, proof, inputs).expect("verifier runs"),
                    "{kind}"
                );
                assert!(times.msm_h > std::time::Duration::ZERO, "{kind}: {times}");
            }
            // H streams per partition, the other four queries once a walk: once for the
            // batch where every partition's sets fit the room together (PoRep's, mostly
            // zeros and ones), in a few walks where they do not (the PoSts' full-width values
            // gather a point each, more than a 2 KiB circuit's room holds for ten), never
            // more than once a partition
            let moved = gpu.bytes_streamed() - before;
            let once = (lens.l + lens.a + lens.b_g1) as u64 * 96 + lens.b_g2 as u64 * 192;
            let walked = moved
                .checked_sub(10 * lens.h as u64 * 96)
                .expect("every partition's H crossed the link");
            assert_eq!(walked % once, 0, "{kind}: whole walks, chunks of {chunk}");
            let walks = walked / once;
            assert!((1..=10).contains(&walks), "{kind}: {walks} walks");
            if kind == ProofKind::PorepC2 {
                assert_eq!(walks, 1, "{kind}: one walk, chunks of {chunk}");
            }
            assert_eq!(
                gpu.last_residency(),
                Some(cuzk::cuda::Residency::Streamed { chunk }),
                "{kind}"
            );
        }
    }
}

/// Streamed parameters on circuits of unusual shapes (no public input, no aux variable in
/// B, sizes around powers of two, a chunk that divides nothing): the CPU's proofs.
#[test]
#[ignore = "needs a CUDA device"]
fn synthetic_circuits_with_streamed_parameters_match_the_cpu() {
    let mut rng = ChaCha8Rng::seed_from_u64(4242);
    let mut gpu = gpu().with_stream_chunk(Some(7));
    for (squarings, inputs, linear) in [(1, 0, 0), (0, 1, 0), (62, 1, 0), (1000, 3, 20)] {
        let c = case(&mut rng, squarings, inputs, linear);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let opts = fixed(r, s);
        let (cpu, _) =
            prove_circuit(&c.srs, &mut CpuBackend, c.circuit.clone(), &opts).expect("CPU");
        let (ours, _) = prove_circuit(&c.srs, &mut gpu, c.circuit.clone(), &opts).expect("GPU");
        assert_eq!(bytes(&ours), bytes(&cpu), "{}: streamed vs CPU", c.name);
    }
    // a budget below what even streaming needs is a clear error, not a device fault
    let c = case(&mut rng, 1000, 3, 20);
    let mut tiny = self::gpu()
        .with_memory_limit(Some(cuzk::cuda::CONTEXT_RESERVE + 1024))
        .with_stream_chunk(None);
    let err = prove_circuit(
        &c.srs,
        &mut tiny,
        c.circuit.clone(),
        &fixed(Scalar::ONE, Scalar::ONE),
    )
    .expect_err("nothing fits 1 KiB");
    assert!(err.to_string().contains("bytes of device memory"), "{err}");
}

/// Every kind at 2 KiB through the `dual` backend (each operation of every partition on the
/// CPU and on GPU 0, compared before the next): no operation differs, and the proofs are the
/// CPU backend's, byte for byte, and verify. Once with the parameters resident (one dual
/// backend for all four kinds), once streamed in chunks of 1000 points.
#[test]
#[ignore = "needs a CUDA device"]
fn every_kind_through_the_dual_backend_is_the_cpus_proof() {
    let (r, s) = (Scalar::from(0xd0a1_u64), Scalar::from(0xcafe_u64));
    let mut dual = cuzk::DualBackend::open(0).unwrap_or_else(|e| panic!("{e}"));
    let name = cuzk::Backend::name(&dual);
    assert!(name.starts_with("dual(cpu, "), "{name}");
    for kind in ProofKind::ALL {
        let store = support::store_with(kind);
        let request = support::inputs().get(kind);
        let cpu = support::prove_on_backend(&store, &mut CpuBackend, request, r, s).expect("CPU");
        let streamed = cuzk::cuda::ops::CudaOps::open(0)
            .unwrap_or_else(|e| panic!("{e}"))
            .with_stream_chunk(Some(1000));
        let mut dual_streamed = cuzk::DualBackend::with_gpu(streamed);
        for (how, backend) in [("resident", &mut dual), ("streamed", &mut dual_streamed)] {
            // each partition's proof is verified by prove_on_backend
            let out = support::prove_on_backend(&store, backend, request, r, s)
                .unwrap_or_else(|e| panic!("{kind}, {how}: {e}"));
            assert_eq!(
                hex::encode(&out.bytes),
                hex::encode(&cpu.bytes),
                "{kind}, {how}: dual and CPU proofs differ"
            );
            println!(
                "{kind}, {how}: {} partition(s) through {name} in {:.3?} (CPU alone {:.3?})",
                out.partitions, out.prove, cpu.prove
            );
        }
    }
}

/// The `cuzk` binary: where cargo built it, else beside this test binary (where
/// `.ci/device-suite` stages both).
fn cuzk_cli() -> std::process::Command {
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_cuzk"));
    let staged = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("cuzk")));
    let exe = match staged {
        Some(staged) if !built.exists() => staged,
        _ => built,
    };
    let mut c = std::process::Command::new(exe);
    c.arg("--params-dir").arg(support::params_dir());
    c
}

/// `cuzk bench --backend dual` proves the four kinds at 2 KiB on the CPU and GPU 0, every
/// operation compared, and each proof is bellperson's.
#[test]
#[ignore = "needs a CUDA device"]
fn bench_backend_dual_proves_every_kind() {
    let out = cuzk_cli()
        .args(["bench", "--backend", "dual", "--runs", "1"])
        .args(["--kind", "winning-post", "--kind", "window-post"])
        .args(["--kind", "snap-deals", "--kind", "porep-c2"])
        .output()
        .expect("cuzk runs");
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("cuzk proves on: dual: CPU"), "{text}");
    // the first table's rows end with whether the proofs were bellperson's
    let identical = text
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("KiB") && l.ends_with("| yes |"))
        .count();
    assert_eq!(identical, 4, "{text}");
}
