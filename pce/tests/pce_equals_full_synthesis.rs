//! The PCE path (record once, then witness + sparse products) gives exactly what full
//! synthesis gives, including for circuits that interleave inputs and aux, use zero and
//! repeated coefficients, and synthesise parts in child systems joined with `extend`; and
//! its cache files are refused whenever they are damaged or foreign.

use bellpepper_core::{num::AllocatedNum, Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_pce::{cache, evaluate, evaluate_sequential, record, synthesize, witness, Error};
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// A chunk of work: squares and a public output, with a zero coefficient and a duplicated
/// term in its linear combinations.
fn chunk<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    x: Option<Scalar>,
    n: usize,
) -> Result<(), SynthesisError> {
    let mut cur = AllocatedNum::alloc(cs.namespace(|| "x"), || {
        x.ok_or(SynthesisError::AssignmentMissing)
    })?;
    for i in 0..n {
        let next = cur.square(cs.namespace(|| format!("sq{i}")))?;
        // (cur + cur - cur + 0*next) * 1 = cur : a zero coefficient and a merged duplicate
        cs.enforce(
            || format!("lin{i}"),
            |lc| {
                lc + cur.get_variable() + cur.get_variable() - cur.get_variable()
                    + (Scalar::ZERO, next.get_variable())
            },
            |lc| lc + CS::one(),
            |lc| lc + cur.get_variable(),
        );
        cur = next;
    }
    let out = AllocatedNum::alloc_input(cs.namespace(|| "out"), || {
        cur.get_value().ok_or(SynthesisError::AssignmentMissing)
    })?;
    cs.enforce(
        || "out",
        |lc| lc + out.get_variable(),
        |lc| lc + CS::one(),
        |lc| lc + cur.get_variable(),
    );
    // a boolean-valued aux used in B
    let bit = AllocatedNum::alloc(cs.namespace(|| "bit"), || {
        Ok(if x.is_some() {
            Scalar::ONE
        } else {
            Scalar::ZERO
        })
    })?;
    cs.enforce(
        || "bool",
        |lc| lc + bit.get_variable(),
        |lc| lc + CS::one() - bit.get_variable(),
        |lc| lc,
    );
    Ok(())
}

/// Synthesises `parts` chunks, in child systems joined with `extend` when the system allows
/// it (as Filecoin's WindowPoSt circuit does), sequentially otherwise.
struct Parts(Vec<Option<Scalar>>);

impl Circuit<Scalar> for Parts {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if CS::is_extensible() {
            let mut children = Vec::new();
            for (i, x) in self.0.iter().enumerate() {
                let mut child = CS::new();
                child.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
                chunk(&mut child.namespace(|| format!("part{i}")), *x, 3 + i)?;
                children.push(child);
            }
            for c in children {
                cs.extend(&c);
            }
        } else {
            for (i, x) in self.0.iter().enumerate() {
                chunk(&mut cs.namespace(|| format!("part{i}")), *x, 3 + i)?;
            }
        }
        Ok(())
    }
}

struct Plain(Option<Scalar>);

impl Circuit<Scalar> for Plain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        chunk(&mut cs.namespace(|| "a"), self.0, 40)?;
        chunk(
            &mut cs.namespace(|| "b"),
            self.0.map(|v| v + Scalar::ONE),
            5,
        )
    }
}

#[test]
fn pce_matches_full_synthesis_plain() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let r1cs = record(Plain(None)).expect("record blank circuit");
    for _ in 0..3 {
        let x = Some(Scalar::random(&mut rng));
        let full = synthesize(Plain(x)).unwrap();
        let (inp, aux) = witness(Plain(x)).unwrap();
        let seq = evaluate_sequential(&r1cs, inp.clone(), aux.clone()).unwrap();
        // the assignment holds the witness it was given, not a copy: no second aux-sized
        // allocation left behind in its inputs (4.2 GB a 32 GiB PoRep partition)
        let (inp_at, aux_at) = (inp.as_ptr(), aux.as_ptr());
        let inp_capacity = inp.capacity();
        let pce = evaluate(&r1cs, inp, aux).unwrap();
        assert_eq!((pce.input.as_ptr(), pce.aux.as_ptr()), (inp_at, aux_at));
        assert_eq!(pce.input.capacity(), inp_capacity);
        assert_eq!(pce, full);
        assert_eq!(
            seq, full,
            "the sequential evaluation gives the same assignment"
        );
    }
}

#[test]
fn pce_matches_full_synthesis_with_extend() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let blank = Parts(vec![None; 4]);
    let r1cs = record(blank).expect("record");
    let xs: Vec<_> = (0..4).map(|_| Some(Scalar::random(&mut rng))).collect();
    let full = synthesize(Parts(xs.clone())).unwrap();
    let (inp, aux) = witness(Parts(xs)).unwrap();
    assert_eq!(inp.len(), 5, "ONE plus one output per part");
    let pce = evaluate(&r1cs, inp, aux).unwrap();
    assert_eq!(pce.a, full.a);
    assert_eq!(pce.b, full.b);
    assert_eq!(pce.c, full.c);
    assert_eq!(pce.b_input_density, full.b_input_density);
    assert_eq!(pce.a_aux_density, full.a_aux_density);
    assert_eq!(pce, full);
}

#[test]
fn witness_of_another_shape_is_refused() {
    let r1cs = record(Plain(None)).unwrap();
    let (inp, aux) = witness(Parts(vec![Some(Scalar::ONE); 2])).unwrap();
    assert!(matches!(
        evaluate_sequential(&r1cs, inp.clone(), aux.clone()),
        Err(Error::ShapeMismatch(_))
    ));
    assert!(matches!(
        evaluate(&r1cs, inp, aux),
        Err(Error::ShapeMismatch(_))
    ));
}

#[test]
fn pce_cache_round_trips_and_refuses_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.pce");
    let r1cs = record(Plain(None)).unwrap();
    cache::save(&path, &r1cs, "test/plain").unwrap();
    assert_eq!(cache::load(&path, "test/plain").unwrap(), r1cs);

    let good = std::fs::read(&path).unwrap();
    let expect_err = |bytes: &[u8], identity: &str, want: &str| {
        std::fs::write(&path, bytes).unwrap();
        let e = cache::load(&path, identity).unwrap_err().to_string();
        assert!(e.contains(want), "want {want:?}, got {e}");
    };
    expect_err(&good[..good.len() - 7], "test/plain", "truncated");
    expect_err(&good[..20], "test/plain", "truncated");
    let mut corrupt = good.clone();
    let n = corrupt.len();
    corrupt[n - 100] ^= 0x55;
    expect_err(&corrupt, "test/plain", "checksum mismatch");
    let mut version = good.clone();
    version[8] = 99;
    expect_err(&version, "test/plain", "format version 99");
    expect_err(&good, "test/other", "another circuit");
    expect_err(b"hello world, not a cache", "test/plain", "bad magic");
    let missing = dir.path().join("none.pce");
    assert!(cache::load(&missing, "x")
        .unwrap_err()
        .to_string()
        .contains("cannot read"));
}
