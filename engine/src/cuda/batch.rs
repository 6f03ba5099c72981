//! Partitions proved as a batch with streamed bases: each partition's H (its own NTT and H
//! MSM, whose scalars are the partition's alone), then the L, A and B MSMs of all of them
//! at once, each chunk of those queries' bases crossing the link once for the whole batch.
//!
//! For a 32 GiB PoRep partition the L, A and B bases are 34.6 of the 47.4 GB a partition
//! streams; a batch of ten moves them once instead of ten times. What makes room for ten
//! partitions' scalars on a small device is their shape: the witness is 98.7% zeros and
//! ones, so each query's scalars travel as a bitmap of the ones and a list of the rest
//! ([`OnesAndRest`], about 0.26 GB a partition instead of 10 GB). In each chunk the ones of
//! every partition are added into one sum a partition, and the points their other values
//! pair with are set aside for one small MSM a partition at the end of the walk
//! ([`GpuDevice::msm_streamed_batch`]).
//!
//! Invariant: every partition's five group elements are those [`super::prove_msms`] computes
//! for it alone; the proofs are the same bytes.

use std::time::Duration;

use blstrs::{G1Projective, Scalar};
use cuzk_kernels::{DeviceOnesAndRest, GpuDevice, OnesAndRest, Staging};
use cuzk_pce::{Assignment, Density};
use ff::Field;
use group::Group;
use rayon::prelude::*;
use tracing::info_span;

use super::partition::{self, density_words, PhaseTimes};
use super::streamed::{HostQueries, Rings};
use super::vram::SetShape;
use crate::error::{Error, Result};
use crate::prover::MsmResults;

/// Aux values a classification block covers: 1024 density words.
const BLOCK: usize = 1 << 16;

/// One partition's L, A and B scalars as ones and rest (B's serve both curves).
#[derive(Debug)]
pub struct QueryScalars {
    /// The aux values (L query).
    pub l: OnesAndRest,
    /// The inputs, then the aux values A's density selects.
    pub a: OnesAndRest,
    /// The inputs B's input density selects, then the aux values its aux density selects.
    pub b: OnesAndRest,
}

impl QueryScalars {
    /// `asg`'s query scalars, classified on rayon's pool.
    pub fn of(asg: &Assignment) -> cuzk_kernels::Result<Self> {
        let b_inputs = partition::select(&asg.input, &asg.b_input_density);
        Ok(QueryScalars {
            l: OnesAndRest::classify(&asg.aux)?,
            a: head_then_selected(&asg.input, &asg.aux, &asg.a_aux_density)?,
            b: head_then_selected(&b_inputs, &asg.aux, &asg.b_aux_density)?,
        })
    }

    /// The sets' lengths and counts of values neither zero nor one.
    pub fn shape(&self) -> SetShape {
        let of = |v: &OnesAndRest| (v.len(), v.rest());
        SetShape {
            l: of(&self.l),
            a: of(&self.a),
            b: of(&self.b),
        }
    }
}

/// `head`, then the values of `aux` whose bit is set in `density`, in order.
fn head_then_selected(
    head: &[Scalar],
    aux: &[Scalar],
    density: &Density,
) -> cuzk_kernels::Result<OnesAndRest> {
    let words = density_words(density, aux.len());
    let parts = words
        .par_chunks(BLOCK / 64)
        .enumerate()
        .map(|(blk, ws)| {
            let mut part = OnesAndRest::new();
            for (k, &w) in ws.iter().enumerate() {
                let mut bits = w;
                while bits != 0 {
                    let i = (blk * BLOCK) + k * 64 + bits.trailing_zeros() as usize;
                    part.push(&aux[i])?;
                    bits &= bits - 1;
                }
            }
            Ok(part)
        })
        .collect::<cuzk_kernels::Result<Vec<_>>>()?;
    OnesAndRest::concat(std::iter::once(OnesAndRest::classify(head)?).chain(parts))
}

/// A partition of a batch, with what its own phases gave.
struct Started {
    partition: usize,
    h: G1Projective,
    scalars: QueryScalars,
    times: PhaseTimes,
}

/// Proves the MSM part of a batch of partitions of one circuit with streamed bases (see the
/// module doc): returns each partition's five group elements and phase times, in the
/// order given. The L, A and B phases are shared: each partition's times hold its share
/// (the phase's time over the batch's size).
///
/// The assignments are taken one at a time and dropped after their own phases (only their
/// classified scalars are kept), so a lazy iterator holds one in host memory at a time.
///
/// `room` is the device memory the batched MSMs may give the partitions' scalars and bucket
/// sums ([`super::vram::batch_room`]): a batch whose scalars do not fit in it walks the
/// bases once for each group of partitions that does. Every assignment must have the shape
/// of `host`'s circuit (checked by the caller, as for [`super::prove_msms`]).
pub fn prove_streamed_batch(
    dev: &GpuDevice,
    host: HostQueries<'_>,
    rings: &mut Rings,
    batch: impl IntoIterator<Item = (Assignment, usize)>,
    mut staging: Option<&mut Staging>,
    room: u64,
) -> Result<Vec<(MsmResults, PhaseTimes)>> {
    let lens = host.lens();
    let mut started = Vec::new();
    for (asg, partition) in batch {
        started.push(own_phases(
            dev,
            host,
            rings,
            asg,
            partition,
            staging.as_deref_mut(),
        )?);
    }
    let chunk = rings.chunk();
    let shapes: Vec<SetShape> = started.iter().map(|s| s.scalars.shape()).collect();
    let mut out = Vec::with_capacity(started.len());
    for group in groups(&shapes, room, chunk) {
        let group = &mut started[group];
        let k = group.len() as u32;
        let mut shared = PhaseTimes::default();
        let span = info_span!("batch", device = %dev.pci_id(), partitions = k, chunk);
        let _g = span.enter();
        let l = batched(
            dev,
            "msm_l",
            &mut shared.msm_l,
            group,
            staging.as_deref_mut(),
            |s| &mut s.scalars.l,
            |dev, sets| dev.msm_streamed_batch(host.l, 0..lens.l, sets, &mut rings.g1),
        )?;
        let a = batched(
            dev,
            "msm_a",
            &mut shared.msm_a,
            group,
            staging.as_deref_mut(),
            |s| &mut s.scalars.a,
            |dev, sets| dev.msm_streamed_batch(host.a, 0..lens.a, sets, &mut rings.g1),
        )?;
        let (b_g1, b_g2) = batched(
            dev,
            "msm_b_g1",
            &mut shared.msm_b_g1,
            group,
            staging.as_deref_mut(),
            |s| &mut s.scalars.b,
            |dev, sets| {
                let g1 = dev.msm_streamed_batch(host.b_g1, 0..lens.b_g1, sets, &mut rings.g1)?;
                let g2 = dev.msm_streamed_batch(host.b_g2, 0..lens.b_g2, sets, &mut rings.g2)?;
                Ok((g1, g2))
            },
        )?;
        for (j, s) in group.iter().enumerate() {
            let mut times = s.times;
            times.msm_l += shared.msm_l / k;
            times.msm_a += shared.msm_a / k;
            times.msm_b_g1 += shared.msm_b_g1 / k;
            let msm = MsmResults {
                h: s.h,
                l: pick(&l, j),
                a: pick(&a, j),
                b_g1: pick(&b_g1, j),
                b_g2: pick(&b_g2, j),
            };
            out.push((msm, times));
        }
    }
    Ok(out)
}

/// Upload of a, b and c, the NTT and the H MSM of one partition, with its query scalars
/// classified on the host meanwhile.
fn own_phases(
    dev: &GpuDevice,
    host: HostQueries<'_>,
    rings: &mut Rings,
    asg: Assignment,
    partition: usize,
    staging: Option<&mut Staging>,
) -> Result<Started> {
    let mut t = PhaseTimes::default();
    let up = partition::phase(dev, partition, "upload", &mut t.upload, || {
        partition::upload_parts(dev, &asg, staging, false)
    })?;
    let (h, scalars) = std::thread::scope(|scope| {
        let classify =
            scope.spawn(|| info_span!("classify", partition).in_scope(|| QueryScalars::of(&asg)));
        let h = (|| {
            let [mut d_a, d_b, d_c] = up.into_domain();
            let kappa = partition::phase(dev, partition, "ntt", &mut t.ntt, || {
                match (d_a.as_mut(), d_b, d_c) {
                    (Some(a), Some(b), Some(c)) => super::ntt::compute_h(dev, a, b, c),
                    _ => Ok(Scalar::ONE),
                }
            })?;
            let h = partition::phase(dev, partition, "msm_h", &mut t.msm_h, || match &d_a {
                Some(h) => rings.msm_h(dev, host.h, host.h.len(), h, 0, &host.lens()),
                None => Ok(G1Projective::identity()),
            })?;
            Ok::<_, Error>(h * kappa)
        })();
        let scalars = classify.join();
        (h, scalars)
    });
    let scalars = scalars
        .map_err(|_| Error::Prover {
            partition,
            backend: dev.pci_id().to_string(),
            reason: "the thread classifying the query scalars panicked".into(),
        })?
        .map_err(|source| Error::Device {
            device: dev.pci_id().to_string(),
            context: format!("partition {partition}: classifying the query scalars"),
            source: Box::new(source),
        })?;
    // the host's vectors: kept for the next partition's synthesis, the rest freed apart
    let Assignment { aux, a, b, c, .. } = asg;
    partition::keep_or_release([aux, a, b, c], 1 << 30);
    Ok(Started {
        partition,
        h: h?,
        scalars,
        times: t,
    })
}

/// Moves the group's sets of one query to the device (each partition's set of that query
/// is used once, so the host copy is taken, not cloned; through `staging` where given),
/// runs `msm` over them as one phase (timed into `slot`, spanned as `name` with the group's
/// first partition), and frees them.
fn batched<T>(
    dev: &GpuDevice,
    name: &'static str,
    slot: &mut Duration,
    group: &mut [Started],
    mut staging: Option<&mut Staging>,
    set: impl Fn(&mut Started) -> &mut OnesAndRest,
    msm: impl FnOnce(&GpuDevice, &[&DeviceOnesAndRest]) -> cuzk_kernels::Result<T>,
) -> Result<T> {
    let first = group.first().map_or(0, |s| s.partition);
    partition::phase(dev, first, name, slot, || {
        let sets = group
            .iter_mut()
            .map(|s| dev.upload_ones_and_rest_via(std::mem::take(set(s)), staging.as_deref_mut()))
            .collect::<cuzk_kernels::Result<Vec<_>>>()?;
        let refs: Vec<&DeviceOnesAndRest> = sets.iter().collect();
        msm(dev, &refs)
    })
}

/// Result `j` of a batched MSM (the identity if the kernels returned fewer, which they do
/// not: one result a set).
fn pick<P: Group>(v: &[P], j: usize) -> P {
    v.get(j).copied().unwrap_or_else(P::identity)
}

/// The batch split into runs of consecutive partitions whose sets fit `room` together in
/// every walk, with the largest of their MSMs of the other values ([`SetShape::walk_bytes`],
/// [`SetShape::tail_bytes`]); every partition alone forms a group, fitting or not (its own
/// phases fitted).
fn groups(shapes: &[SetShape], room: u64, chunk: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut sets, mut tail) = (0, 0u64, 0u64);
    for (i, shape) in shapes.iter().enumerate() {
        let (need, end) = (shape.walk_bytes(chunk), shape.tail_bytes(chunk));
        if i > start && sets + need + tail.max(end) > room {
            out.push(start..i);
            (start, sets, tail) = (i, 0, 0);
        }
        sets += need;
        tail = tail.max(end);
    }
    if start < shapes.len() {
        out.push(start..shapes.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_fill_the_room_in_order() {
        let shape = SetShape {
            l: (1000, 10),
            a: (2000, 20),
            b: (500, 5),
        };
        let s = vec![shape; 5];
        let chunk = 256;
        let (one, tail) = (shape.walk_bytes(chunk), shape.tail_bytes(chunk));
        assert!(one > 0 && tail > 0);
        assert_eq!(groups(&s, 5 * one + tail, chunk), vec![0..5]);
        assert_eq!(groups(&s, 2 * one + tail, chunk), vec![0..2, 2..4, 4..5]);
        assert_eq!(
            groups(&s, 2 * one + tail - 1, chunk),
            vec![0..1, 1..2, 2..3, 3..4, 4..5]
        );
        // too little room for even one: each alone
        assert_eq!(groups(&s[..2], 0, chunk), vec![0..1, 1..2]);
        assert!(groups(&[], 10, chunk).is_empty());
        // a set with more other values takes more room: its gathered points and its tail
        let heavy = SetShape {
            b: (500, 400),
            ..shape
        };
        assert!(
            heavy.walk_bytes(chunk) > one,
            "{} {one}",
            heavy.walk_bytes(chunk)
        );
        assert!(
            heavy.tail_bytes(chunk) > tail,
            "{} {tail}",
            heavy.tail_bytes(chunk)
        );
        let mixed = [shape, heavy, shape];
        let fits_two = shape.walk_bytes(chunk) + heavy.walk_bytes(chunk) + heavy.tail_bytes(chunk);
        assert_eq!(groups(&mixed, fits_two, chunk), vec![0..2, 2..3]);
    }

    #[test]
    fn query_scalars_are_the_queries_of_the_assignment() {
        let aux: Vec<Scalar> = (0..200u64)
            .map(|i| match i % 3 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                _ => Scalar::from(i),
            })
            .collect();
        let input = vec![Scalar::ONE, Scalar::from(7u64)];
        let dense = |bits: Vec<bool>| {
            let mut d = Density::default();
            for b in bits {
                d.push(b);
            }
            d
        };
        let a_density = dense((0..200).map(|i| i % 5 != 0).collect());
        let b_density = dense((0..200).map(|i| i % 7 == 0).collect());
        let b_inputs = dense(vec![false, true]);
        let asg = Assignment {
            input: input.clone(),
            aux: aux.clone(),
            a: vec![],
            b: vec![],
            c: vec![],
            a_aux_density: a_density,
            b_input_density: b_inputs,
            b_aux_density: b_density,
        };
        let q = QueryScalars::of(&asg).unwrap();
        assert_eq!(q.l.to_scalars(), aux);
        let want_a: Vec<Scalar> = input
            .iter()
            .copied()
            .chain(
                aux.iter()
                    .enumerate()
                    .filter(|(i, _)| i % 5 != 0)
                    .map(|(_, s)| *s),
            )
            .collect();
        assert_eq!(q.a.to_scalars(), want_a);
        let want_b: Vec<Scalar> = std::iter::once(Scalar::from(7u64))
            .chain(
                aux.iter()
                    .enumerate()
                    .filter(|(i, _)| i % 7 == 0)
                    .map(|(_, s)| *s),
            )
            .collect();
        assert_eq!(q.b.to_scalars(), want_b);
    }
}
