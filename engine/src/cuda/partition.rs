//! One partition on the device: upload the assignment, H by NTTs, then the five MSMs
//! against resident bases, each phase in its own span and timed.
//!
//! Scalar lists are those of the CPU backend ([`crate::cpu`]): H pairs the first m - 1
//! coefficients of h with the H query; L pairs every aux value with the L query; A pairs the
//! inputs, then the aux values whose `a_aux_density` bit is set, with the A query; B pairs
//! the inputs whose `b_input_density` bit is set, then the aux values whose `b_aux_density`
//! bit is set, with the B queries (G1 and G2). Selected aux values are compacted on the
//! device; inputs (a few hundred at most) are selected on the host.
//!
//! Optionally B in G2, the slowest MSM on the device, runs on the host's cores with the CPU
//! backend's MSM (zeros skipped, ones summed by batch addition) while the device does
//! everything else, as SupraSeal does.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use blstrs::G1Projective;
use blstrs::{G2Affine, G2Projective, Scalar};
use cuzk_kernels::msm::MAX_CHUNK;
use cuzk_kernels::profile::Steps;
use cuzk_kernels::{
    Bases, DeviceBitmap, DeviceBuffer, GpuDevice, MsmCurve, PciId, SortedScalars, Staging,
};
use cuzk_pce::{Assignment, Density};
use ff::Field;
use group::Group;
use tracing::{info_span, Span};

use super::masks::QueryMasks;
use super::resident::DeviceSrs;
use super::streamed::{HostQueries, Rings, QUERY_SPAN};
use super::vram::QueryLens;
use crate::cpu::msm::{msm_g2, Selection};
use crate::cpu::ntt::Domain;
use crate::error::{Error, Result};
use crate::prover::MsmResults;

/// Wall-clock time of each phase of one partition on the device (each phase ends with the
/// device idle, so the times add up to the partition's time).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseTimes {
    /// Copying a, b, c (padded to the domain) and the aux values to the device.
    pub upload: Duration,
    /// The seven NTTs and element-wise products of H.
    pub ntt: Duration,
    /// H MSM.
    pub msm_h: Duration,
    /// L MSM.
    pub msm_l: Duration,
    /// Compaction of the A scalars and the A MSM.
    pub msm_a: Duration,
    /// Compaction of the B scalars and the B MSM in G1.
    pub msm_b_g1: Duration,
    /// B MSM in G2 on the device; when it runs on the host, the time the device waited for
    /// the host's result after its own last phase (zero when the host finished first).
    pub msm_b_g2: Duration,
    /// Freeing the partition's buffers and the final synchronisation (the MSM results
    /// themselves come back inside each MSM).
    pub download: Duration,
    /// Waiting, after the last phase, for the next partition's upload ahead to reach the
    /// device (zero when it finished first or none was asked for): the part of that upload
    /// the kernels did not hide.
    pub ahead_wait: Duration,
}

impl PhaseTimes {
    /// Sum of the phases.
    pub fn total(&self) -> Duration {
        self.upload
            + self.ntt
            + self.msm_h
            + self.msm_l
            + self.msm_a
            + self.msm_b_g1
            + self.msm_b_g2
            + self.download
            + self.ahead_wait
    }
}

impl std::fmt::Display for PhaseTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "upload {:.1} ms, ntt {:.1} ms, msm_h {:.1} ms, msm_l {:.1} ms, msm_a {:.1} ms, \
             msm_b_g1 {:.1} ms, msm_b_g2 {:.1} ms, download {:.1} ms, ahead_wait {:.1} ms, \
             total {:.1} ms",
            ms(self.upload),
            ms(self.ntt),
            ms(self.msm_h),
            ms(self.msm_l),
            ms(self.msm_a),
            ms(self.msm_b_g1),
            ms(self.msm_b_g2),
            ms(self.download),
            ms(self.ahead_wait),
            ms(self.total())
        )
    }
}

/// The span of a phase, named for it (span names are static), with the device's PCI id.
fn phase_span(name: &'static str, device: PciId, partition: usize) -> Span {
    macro_rules! spans {
        ($($phase:literal),*) => {
            match name {
                $($phase => info_span!($phase, device = %device, partition),)*
                _ => info_span!("phase", phase = name, device = %device, partition),
            }
        };
    }
    spans!("upload", "ntt", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "download")
}

/// Runs `f` in the span of phase `name` (device and partition as fields), then waits for the
/// device and adds the elapsed time to `slot`. Device errors get the phase as context.
pub(super) fn phase<T>(
    dev: &GpuDevice,
    partition: usize,
    name: &'static str,
    slot: &mut Duration,
    f: impl FnOnce() -> cuzk_kernels::Result<T>,
) -> Result<T> {
    let pci = dev.pci_id();
    let span = phase_span(name, pci, partition);
    let _g = span.enter();
    let t = Instant::now();
    let out = f().and_then(|v| dev.synchronize().map(|()| v));
    *slot += t.elapsed();
    out.map_err(|source| Error::Device {
        device: pci.to_string(),
        context: format!("partition {partition}: {name}"),
        source: Box::new(source),
    })
}

/// The density's words covering exactly `n` variables: bits past `n` cleared, missing
/// words zero (a variable past the density's end is unused, as `Density::get` says).
pub fn density_words(d: &Density, n: usize) -> Cow<'_, [u64]> {
    let want = n.div_ceil(64);
    let words = d.words();
    let tail_ok = n.is_multiple_of(64) || words.get(want - 1).is_none_or(|w| w >> (n % 64) == 0);
    if words.len() == want && tail_ok {
        return Cow::Borrowed(words);
    }
    let mut v: Vec<u64> = words.iter().copied().take(want).collect();
    v.resize(want, 0);
    if !n.is_multiple_of(64) {
        if let Some(last) = v.last_mut() {
            *last &= (1u64 << (n % 64)) - 1;
        }
    }
    Cow::Owned(v)
}

/// The selected elements of `v`, in order (`d.get(i)` for each index `i`).
pub(super) fn select(v: &[Scalar], d: &Density) -> Vec<Scalar> {
    v.iter()
        .enumerate()
        .filter(|(i, _)| d.get(*i))
        .map(|(_, s)| *s)
        .collect()
}

/// Points of the NTT domain of `asg` (the constraint count rounded up to a power of two):
/// the length of a, b and c on the device.
fn domain_points(asg: &Assignment) -> usize {
    asg.a.len().max(1).next_power_of_two()
}

/// A device buffer of `len` scalars, or `None` for an empty one (nothing to allocate).
fn alloc(dev: &GpuDevice, len: usize) -> cuzk_kernels::Result<Option<DeviceBuffer<Scalar>>> {
    if len == 0 {
        return Ok(None);
    }
    dev.alloc_zeroed(len).map(Some)
}

/// Where a partition's MSMs find the circuit's bases.
pub enum Queries<'a> {
    /// Resident on the device.
    Resident(&'a DeviceSrs),
    /// In host memory (page-locked where it could be registered), streamed chunk by chunk
    /// through the device's rings for every MSM.
    Streamed {
        /// The five queries.
        host: HostQueries<'a>,
        /// The device's rings.
        rings: &'a mut Rings,
    },
}

/// One of the G1 queries.
#[derive(Clone, Copy, Debug)]
enum G1Query {
    H,
    L,
    A,
    BG1,
}

impl Queries<'_> {
    /// Point counts of the five queries.
    pub fn lens(&self) -> QueryLens {
        match self {
            Queries::Resident(srs) => srs.lens(),
            Queries::Streamed { host, .. } => host.lens(),
        }
    }

    /// Whether the bases are streamed.
    pub fn streamed(&self) -> bool {
        matches!(self, Queries::Streamed { .. })
    }

    /// `sum_i scalars[from + i] * query[i]` for `i < n`.
    fn g1(
        &mut self,
        dev: &GpuDevice,
        query: G1Query,
        n: usize,
        scalars: &DeviceBuffer<Scalar>,
        from: usize,
    ) -> cuzk_kernels::Result<G1Projective> {
        match self {
            Queries::Resident(srs) => {
                let bases = match query {
                    G1Query::H => &srs.h,
                    G1Query::L => &srs.l,
                    G1Query::A => &srs.a,
                    G1Query::BG1 => &srs.b_g1,
                };
                dev.msm_at(bases, 0..n, scalars, from)
            }
            Queries::Streamed { host, rings } => {
                let bases = match query {
                    G1Query::H => return rings.msm_h(dev, host.h, n, scalars, from, &host.lens()),
                    G1Query::L => host.l,
                    G1Query::A => host.a,
                    G1Query::BG1 => host.b_g1,
                };
                dev.msm_streamed(bases, 0..n, scalars, from, &mut rings.g1, QUERY_SPAN)
            }
        }
    }

    /// `sum_i scalars[i] * b_g2[i]` for `i < n`.
    fn g2(
        &mut self,
        dev: &GpuDevice,
        n: usize,
        scalars: &DeviceBuffer<Scalar>,
    ) -> cuzk_kernels::Result<G2Projective> {
        match self {
            Queries::Resident(srs) => dev.msm(&srs.b_g2, 0..n, scalars),
            Queries::Streamed { host, rings } => {
                dev.msm_streamed(host.b_g2, 0..n, scalars, 0, &mut rings.g2, QUERY_SPAN)
            }
        }
    }
}

/// The B query's MSM in G1 or G2 over its first `n` points: from `sorted` (resident bases)
/// when B's scalars were sorted once for both curves, else from `scalars` (sorting them
/// itself); the identity without scalars.
fn b_msm<C: MsmCurve>(
    dev: &GpuDevice,
    resident: Option<&Bases<C>>,
    n: usize,
    sorted: Option<&SortedScalars>,
    scalars: Option<&DeviceBuffer<Scalar>>,
    unsorted: impl FnOnce(&DeviceBuffer<Scalar>) -> cuzk_kernels::Result<C::Projective>,
) -> cuzk_kernels::Result<C::Projective> {
    match (sorted, resident, scalars) {
        (Some(sorted), Some(bases), _) => dev.msm_sorted(bases, 0..n, sorted),
        (_, _, Some(s)) => unsorted(s),
        (_, _, None) => Ok(Group::identity()),
    }
}

/// `head` from the host followed by the elements of `aux` (on the device) selected by
/// `mask`, in a new buffer of `len` elements. Errors when the counts do not add up to `len`.
fn head_then_selected(
    dev: &GpuDevice,
    steps: &mut Steps,
    head: &[Scalar],
    aux: Option<&DeviceBuffer<Scalar>>,
    mask: &DeviceBitmap,
    len: usize,
) -> cuzk_kernels::Result<Option<DeviceBuffer<Scalar>>> {
    let Some(mut buf) = alloc(dev, len)? else {
        let selected = mask.count();
        if head.is_empty() && (aux.is_none() || selected == 0) {
            return Ok(None);
        }
        return Err(cuzk_kernels::Error::Length {
            op: "query scalars (inputs + selected aux)",
            expected: 0,
            got: head.len() + selected,
        });
    };
    steps.mark(dev, "alloc");
    dev.copy_to_device_at(head, &mut buf, 0)?;
    steps.mark(dev, "inputs copied");
    let written = match aux {
        Some(aux) => dev.fr_compact_by(aux, mask, &mut buf, head.len())?,
        None => 0,
    };
    steps.mark(dev, "compact");
    if head.len() + written != len {
        return Err(cuzk_kernels::Error::Length {
            op: "query scalars (inputs + selected aux)",
            expected: len,
            got: head.len() + written,
        });
    }
    Ok(Some(buf))
}

/// B in G2 on the host, exactly as the CPU backend computes it: inputs selected by
/// `b_input`, then aux values selected by `b_aux`, against `bases` in that order.
fn host_b_g2(
    bases: &[G2Affine],
    input: &[Scalar],
    aux: &[Scalar],
    b_input: &Density,
    b_aux: &Density,
) -> std::result::Result<G2Projective, String> {
    let nb_in = b_input.count().min(bases.len());
    let x = msm_g2(&bases[..nb_in], input, Selection::Dense(b_input))?;
    let y = msm_g2(&bases[nb_in..], aux, Selection::Dense(b_aux))?;
    Ok(x + y)
}

/// A partition's a, b and c (each padded to the domain of `m` points) and its aux values,
/// on the device: what the upload phase produces. Built by [`upload_assignment`], perhaps
/// on a side stream while another partition's kernels run.
pub struct Uploaded {
    m: usize,
    aux_len: usize,
    took: Duration,
    a: Option<DeviceBuffer<Scalar>>,
    b: Option<DeviceBuffer<Scalar>>,
    c: Option<DeviceBuffer<Scalar>>,
    aux: Option<DeviceBuffer<Scalar>>,
}

impl Uploaded {
    /// Whether these buffers are the shape of `asg` (domain and aux count).
    pub fn fits(&self, asg: &Assignment) -> bool {
        domain_points(asg) == self.m && asg.aux.len() == self.aux_len
    }

    /// Wall time of the upload: until the device held the data, for an upload ahead; until
    /// the copies were queued, otherwise.
    pub fn took(&self) -> Duration {
        self.took
    }

    /// The domain buffers a, b and c (each `None` for a domain of one point).
    pub(super) fn into_domain(self) -> [Option<DeviceBuffer<Scalar>>; 3] {
        [self.a, self.b, self.c]
    }

    /// Device bytes held.
    pub fn num_bytes(&self) -> usize {
        [&self.a, &self.b, &self.c, &self.aux]
            .iter()
            .map(|b| b.as_ref().map_or(0, |b| b.num_bytes()))
            .sum()
    }
}

impl std::fmt::Debug for Uploaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Uploaded[m = {}, aux = {}]", self.m, self.aux_len)
    }
}

/// Copies `asg`'s a, b, c (zero padded to the domain) and aux values to `dev`, through
/// `staging` when given. The copies are queued on `dev`'s stream; a kernel on another stream
/// of the same context that uses the buffers waits for them (see
/// [`GpuDevice::side_stream`]).
pub fn upload_assignment(
    dev: &GpuDevice,
    asg: &Assignment,
    staging: Option<&mut Staging>,
) -> cuzk_kernels::Result<Uploaded> {
    upload_parts(dev, asg, staging, true)
}

/// As [`upload_assignment`]; without `with_aux` the aux values stay on the host (a
/// partition with streamed bases uploads them after its H MSM, see [`prove_msms`]).
pub(super) fn upload_parts(
    dev: &GpuDevice,
    asg: &Assignment,
    staging: Option<&mut Staging>,
    with_aux: bool,
) -> cuzk_kernels::Result<Uploaded> {
    let started = Instant::now();
    let mut up = allocate_for(dev, asg, with_aux)?;
    fill(dev, asg, &mut up, staging)?;
    up.took = started.elapsed();
    Ok(up)
}

/// The aux values on the device (none when there are none).
fn upload_aux(
    dev: &GpuDevice,
    aux: &[Scalar],
    staging: Option<&mut Staging>,
) -> cuzk_kernels::Result<Option<DeviceBuffer<Scalar>>> {
    let Some(mut buf) = alloc(dev, aux.len())? else {
        return Ok(None);
    };
    match staging {
        Some(st) => dev.copy_to_device_staged(st, aux, &mut buf, 0)?,
        None => dev.copy_to_device_at(aux, &mut buf, 0)?,
    }
    Ok(Some(buf))
}

/// Device buffers for `asg`'s a, b, c (zeroed, the domain's length; none for a domain of
/// one point) and aux values, queued on `dev`'s stream, for [`fill`] to copy into (on the
/// same stream, or on another: see [`prove_msms`] for why the upload ahead allocates here).
fn allocate_for(
    dev: &GpuDevice,
    asg: &Assignment,
    with_aux: bool,
) -> cuzk_kernels::Result<Uploaded> {
    let m = domain_points(asg);
    let zeroed = |len: usize| alloc(dev, if m < 2 { 0 } else { len });
    Ok(Uploaded {
        m,
        aux_len: asg.aux.len(),
        took: Duration::ZERO,
        a: zeroed(m)?,
        b: zeroed(m)?,
        c: zeroed(m)?,
        aux: alloc(dev, if with_aux { asg.aux.len() } else { 0 })?,
    })
}

/// Copies `asg` into buffers from [`allocate_for`], on `dev`'s stream, through `staging`
/// when given.
fn fill(
    dev: &GpuDevice,
    asg: &Assignment,
    to: &mut Uploaded,
    mut staging: Option<&mut Staging>,
) -> cuzk_kernels::Result<()> {
    let pairs = [
        (&asg.a, &mut to.a),
        (&asg.b, &mut to.b),
        (&asg.c, &mut to.c),
        (&asg.aux, &mut to.aux),
    ];
    for (v, buf) in pairs {
        if let Some(buf) = buf.as_mut() {
            match staging.as_deref_mut() {
                Some(st) => dev.copy_to_device_staged(st, v, buf, 0)?,
                None => dev.copy_to_device_at(v, buf, 0)?,
            }
        }
    }
    Ok(())
}

/// The next partition's assignment, to upload on `dev` (a side stream of the device that
/// proves the current one) while the current one's kernels run.
pub struct Ahead<'a> {
    /// The side stream's handle.
    pub dev: &'a GpuDevice,
    /// What to upload.
    pub assignment: &'a Assignment,
}

/// How a partition's data reaches the device, for [`prove_msms`].
#[derive(Default)]
pub struct Transfers<'a> {
    /// Page-locked buffers for uploads (without: straight from pageable memory).
    pub staging: Option<&'a mut Staging>,
    /// This partition's assignment, uploaded already (by an earlier call's `ahead`); the
    /// upload phase is then skipped. Ignored, and uploaded again, if its shape differs.
    pub uploaded: Option<Uploaded>,
    /// The next partition, uploaded on a side stream while this one's kernels run, through
    /// `staging` once this partition's own upload is done.
    pub ahead: Option<Ahead<'a>>,
    /// The circuit's density masks on the device, kept between its partitions: used when
    /// they are this partition's (every word compared, on a host thread beside the
    /// kernels), made again and stored here when not. Without a slot the masks are made for
    /// this partition alone.
    pub masks: Option<&'a mut Option<QueryMasks>>,
}

/// What [`prove_msms`] returns: the five group elements, the time of each phase, and the
/// next partition's upload when one was asked for (its own error, if it failed: the current
/// partition's result does not depend on it).
pub struct Proved {
    /// The group elements [`crate::prover::assemble`] combines.
    pub msm: MsmResults,
    /// Time of each phase.
    pub times: PhaseTimes,
    /// The upload of [`Transfers::ahead`].
    pub ahead: Option<Result<Uploaded>>,
}

/// Proves the MSM part of one partition on `dev` against `srs`: returns the five group
/// elements that [`crate::prover::assemble`] combines, and the time of each phase.
///
/// With streamed bases ([`Queries::Streamed`]) every MSM streams its bases through the
/// rings, and the aux values reach the device after the H MSM, when the domain buffers are
/// freed: the partition then needs [`super::vram::streamed_needed`] bytes, not the resident
/// bases and [`super::vram::working_bytes`].
///
/// With `b_g2_host` (the host's copy of the B query in G2, the same points as `srs.b_g2`),
/// B in G2 is computed on the host's cores while the device works, and `srs.b_g2` is not
/// used. The assignment must have the shape `srs` was made for (see
/// [`crate::prover::check_shape`]); a mismatch is an error, never a wrong result.
///
/// `io` says how data moves (see [`Transfers`]): through page-locked staging buffers or
/// not, whether the assignment is on the device already, and whether to upload the next
/// partition's meanwhile. Same results whatever it says.
pub fn prove_msms(
    dev: &GpuDevice,
    mut srs: Queries<'_>,
    asg: Assignment,
    partition: usize,
    b_g2_host: Option<&[G2Affine]>,
    io: Transfers<'_>,
) -> Result<Proved> {
    let mut t = PhaseTimes::default();
    let Transfers {
        mut staging,
        uploaded,
        ahead,
        masks: mut mask_slot,
    } = io;
    let lens = srs.lens();
    let streamed = srs.streamed();
    check_fits(dev, partition, lens, &asg)?;
    let on_device = match uploaded.filter(|u| u.fits(&asg)) {
        Some(u) => u,
        None => phase(dev, partition, "upload", &mut t.upload, || {
            upload_parts(dev, &asg, staging.as_deref_mut(), !streamed)
        })?,
    };
    // the staging buffers: the upload ahead's once this partition's own uploads are done
    let (mut staging, staging_ahead) = match ahead {
        Some(_) if !streamed => (None, staging),
        _ => (staging, None),
    };
    let Assignment {
        input,
        aux,
        a,
        b,
        c,
        a_aux_density,
        b_input_density,
        b_aux_density,
    } = asg;
    // Inputs are few: select them on the host. The scalar counts must match the bases.
    let b_inputs = select(&input, &b_input_density);
    let a_words = density_words(&a_aux_density, aux.len());
    let b_words = density_words(&b_aux_density, aux.len());
    let cached = mask_slot.as_mut().and_then(|slot| slot.take());

    let proved = std::thread::scope(|scope| {
        let words = (&a_words[..], &b_words[..], aux.len());
        let mask_check = cached.map(|masks| compare_masks(scope, masks, words));
        let host = b_g2_host.map(|bases| {
            let (input, aux) = (&input, &aux);
            let (bi, ba) = (&b_input_density, &b_aux_density);
            scope.spawn(move || {
                let span = info_span!("msm_b_g2_host", partition, n = bases.len());
                span.in_scope(|| host_b_g2(bases, input, aux, bi, ba))
            })
        });
        // The next partition's upload, on the side stream, through the staging buffers this
        // partition no longer needs; joined at the end of the scope.
        let next = ahead
            .filter(|_| !streamed)
            .map(|ahead| upload_ahead(scope, dev, ahead, staging_ahead));
        let Uploaded {
            a: d_a,
            b: d_b,
            c: d_c,
            aux: mut d_aux,
            ..
        } = on_device;
        let bytes = (a.len() + b.len() + c.len()) * 32;
        keep_or_release([a, b, c], bytes); // host copies: the device has them now

        let h = h_phases(dev, partition, &mut t, &mut srs, [d_a, d_b, d_c])?;
        if d_aux.is_none() && !aux.is_empty() {
            // streamed bases: the aux values come now, in the room the domain buffers left
            d_aux = phase(dev, partition, "upload", &mut t.upload, || {
                upload_aux(dev, &aux, staging.take())
            })?;
        }

        let l = phase(dev, partition, "msm_l", &mut t.msm_l, || match &d_aux {
            Some(aux) => srs.g1(dev, G1Query::L, lens.l, aux, 0),
            None => Ok(Group::identity()),
        })?;

        let masks = this_partitions_masks(dev, partition, &mut t, mask_check, words)?;
        let heads = (&input[..], &b_inputs[..]);
        let (a_sum, b_scalars) = a_phases(dev, partition, &mut t, &mut srs, heads, d_aux, &masks)?;
        if let Some(slot) = mask_slot {
            *slot = Some(masks); // for the circuit's next partition
        }
        let (b_g1, b_g2) = b_phases(dev, partition, &mut t, &mut srs, b_scalars, host)?;
        let ahead = join_ahead(dev, partition, &mut t, next);
        Ok(Proved {
            msm: MsmResults {
                h,
                l,
                a: a_sum,
                b_g1,
                b_g2,
            },
            times: t,
            ahead,
        })
    });
    drop((a_words, b_words));
    let bytes = aux.len() * 32;
    let host_values = (
        input,
        cuzk_pce::buffers::give(aux),
        b_inputs,
        a_aux_density,
        b_input_density,
        b_aux_density,
    );
    release(host_values, bytes);
    proved
}

/// The assignment's shape against the bases': a domain of `lens.h + 1` points and one L
/// base an aux value (see [`crate::prover::check_shape`]); a mismatch is an error, never a
/// wrong result.
fn check_fits(dev: &GpuDevice, partition: usize, lens: QueryLens, asg: &Assignment) -> Result<()> {
    let m = Domain::for_size(asg.a.len())?.m;
    if lens.h + 1 != m || lens.l != asg.aux.len() {
        return Err(Error::Prover {
            partition,
            backend: dev.pci_id().to_string(),
            reason: format!(
                "resident bases {lens:?} do not fit a domain of {m} and {} aux values",
                asg.aux.len()
            ),
        });
    }
    Ok(())
}

/// The A MSM and B's scalars, both made on the device from the aux values (freed here)
/// and the density masks: A's are the inputs, then the aux values A's mask selects; B's
/// the inputs B's input density selects (`b_inputs`), then the aux values B's mask selects.
fn a_phases(
    dev: &GpuDevice,
    partition: usize,
    t: &mut PhaseTimes,
    srs: &mut Queries<'_>,
    (inputs, b_inputs): (&[Scalar], &[Scalar]),
    d_aux: Option<DeviceBuffer<Scalar>>,
    masks: &QueryMasks,
) -> Result<(G1Projective, Option<DeviceBuffer<Scalar>>)> {
    let lens = srs.lens();
    let a_sum = phase(dev, partition, "msm_a", &mut t.msm_a, || {
        let mut steps = query_steps(dev, "A");
        let scalars =
            head_then_selected(dev, &mut steps, inputs, d_aux.as_ref(), masks.a(), lens.a)?;
        let sum = match &scalars {
            Some(s) => srs.g1(dev, G1Query::A, lens.a, s, 0),
            None => Ok(Group::identity()),
        };
        steps.mark(dev, "msm");
        drop(scalars);
        steps.mark(dev, "freed");
        sum
    })?;
    let b_scalars = phase(dev, partition, "msm_b_g1", &mut t.msm_b_g1, || {
        let mut steps = query_steps(dev, "B");
        let aux = d_aux.as_ref();
        head_then_selected(dev, &mut steps, b_inputs, aux, masks.b(), lens.b_g1)
    })?;
    drop(d_aux); // aux values: every query's scalars are built
    Ok((a_sum, b_scalars))
}

/// Starts the next partition's upload ([`Transfers::ahead`]) on a thread of `scope`: its
/// buffers are allocated here, its copies go on the side stream, through `staging`.
fn upload_ahead<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    dev: &GpuDevice,
    ahead: Ahead<'env>,
    staging: Option<&'env mut Staging>,
) -> std::thread::ScopedJoinHandle<'scope, Result<Uploaded>> {
    // Allocated here, on this partition's stream and before its kernels are queued: an
    // allocation on the side stream could reuse memory freed on this stream and then wait
    // for this stream's kernels, which would serialise the copies behind them (measured:
    // the upload then ended with the kernels). Only copies go on the side.
    let target = allocate_for(dev, ahead.assignment, true);
    scope.spawn(move || {
        let span = info_span!("upload_ahead", device = %ahead.dev.pci_id());
        span.in_scope(|| {
            let started = Instant::now();
            target
                .and_then(|mut up| {
                    fill(ahead.dev, ahead.assignment, &mut up, staging)?;
                    ahead.dev.synchronize()?;
                    up.took = started.elapsed();
                    Ok(up)
                })
                .map_err(|source| Error::Device {
                    device: ahead.dev.pci_id().to_string(),
                    context: "uploading the next partition's assignment".into(),
                    source: Box::new(source),
                })
        })
    })
}

/// Waits for the upload ahead (its wait timed into [`PhaseTimes::ahead_wait`]).
fn join_ahead(
    dev: &GpuDevice,
    partition: usize,
    t: &mut PhaseTimes,
    next: Option<std::thread::ScopedJoinHandle<'_, Result<Uploaded>>>,
) -> Option<Result<Uploaded>> {
    let waited = Instant::now();
    let ahead = next.map(|handle| {
        let span = info_span!("ahead_wait", device = %dev.pci_id(), partition);
        let _g = span.enter();
        handle.join().unwrap_or_else(|_| {
            Err(Error::Prover {
                partition,
                backend: dev.pci_id().to_string(),
                reason: "the thread uploading the next partition panicked".into(),
            })
        })
    });
    t.ahead_wait += waited.elapsed();
    ahead
}

/// The NTT and H MSM phases: H from a, b and c on the device (freed here), times H's
/// constant factor kappa, which the device leaves to the MSM's result. With a domain of
/// one point the H query is empty and the buffers absent.
fn h_phases(
    dev: &GpuDevice,
    partition: usize,
    t: &mut PhaseTimes,
    srs: &mut Queries<'_>,
    [mut d_a, d_b, d_c]: [Option<DeviceBuffer<Scalar>>; 3],
) -> Result<G1Projective> {
    let n = srs.lens().h;
    let kappa = phase(dev, partition, "ntt", &mut t.ntt, || {
        match (d_a.as_mut(), d_b, d_c) {
            (Some(a), Some(b), Some(c)) => super::ntt::compute_h(dev, a, b, c),
            _ => Ok(Scalar::ONE),
        }
    })?;
    let h = phase(dev, partition, "msm_h", &mut t.msm_h, || match &d_a {
        Some(h) => srs.g1(dev, G1Query::H, n, h, 0),
        None => Ok(Group::identity()),
    })?;
    Ok(h * kappa) // m scalars of d_a freed here, before the other MSMs
}

/// Whether the masks kept from an earlier partition are this one's: compared on a thread
/// of `scope`, beside the NTT. The thread hands them back, so that the caller keeps or
/// frees them (only if the partition fails before the A phase are they dropped with the
/// thread's result, which frees them the same way).
fn compare_masks<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    masks: QueryMasks,
    (a_words, b_words, aux_len): (&'scope [u64], &'scope [u64], usize),
) -> std::thread::ScopedJoinHandle<'scope, (QueryMasks, bool)> {
    scope.spawn(move || {
        let same = masks.matches(a_words, b_words, aux_len);
        (masks, same)
    })
}

/// The density masks of A and B for this partition: the ones kept from the circuit's
/// previous partition when `check` (their comparison, run beside the NTT) found them
/// equal, else made from the density words (of `aux_len` aux values) in the A phase.
fn this_partitions_masks(
    dev: &GpuDevice,
    partition: usize,
    t: &mut PhaseTimes,
    check: Option<std::thread::ScopedJoinHandle<'_, (QueryMasks, bool)>>,
    (a_words, b_words, aux_len): (&[u64], &[u64], usize),
) -> Result<QueryMasks> {
    let kept = match check.map(|h| h.join()) {
        Some(Ok((masks, true))) => Some(masks),
        Some(Ok((stale, false))) => {
            tracing::debug!(device = %dev.pci_id(), partition,
                "density masks differ from the kept ones: made again");
            drop(stale);
            None
        }
        // the comparing thread panicked: its masks are gone, so make them again
        Some(Err(_)) | None => None,
    };
    match kept {
        Some(masks) => Ok(masks),
        None => phase(dev, partition, "msm_a", &mut t.msm_a, || {
            QueryMasks::upload(dev, a_words, b_words, aux_len)
        }),
    }
}

/// The B MSMs in G1 and in G2 (on the device, or joined from `host`, the host's thread),
/// then the download phase that frees their scalars.
fn b_phases(
    dev: &GpuDevice,
    partition: usize,
    t: &mut PhaseTimes,
    srs: &mut Queries<'_>,
    b_scalars: Option<DeviceBuffer<Scalar>>,
    host: Option<std::thread::ScopedJoinHandle<'_, std::result::Result<G2Projective, String>>>,
) -> Result<(G1Projective, G2Projective)> {
    let lens = srs.lens();
    // B in G1 and in G2 on the device have the same scalars: sorted into bucket lists once
    // (when they fit one MSM chunk, as every Filecoin circuit's do), in B G1's phase.
    let b_sorted = phase(
        dev,
        partition,
        "msm_b_g1",
        &mut t.msm_b_g1,
        || match &b_scalars {
            Some(s) if host.is_none() && !srs.streamed() && lens.b_g1 <= MAX_CHUNK => {
                dev.msm_sort(s, 0..lens.b_g1).map(Some)
            }
            _ => Ok(None),
        },
    )?;
    let resident = match &*srs {
        Queries::Resident(r) => Some(*r),
        Queries::Streamed { .. } => None,
    };
    let b_g1 = phase(dev, partition, "msm_b_g1", &mut t.msm_b_g1, || {
        b_msm(
            dev,
            resident.map(|r| &r.b_g1),
            lens.b_g1,
            b_sorted.as_ref(),
            b_scalars.as_ref(),
            |s| srs.g1(dev, G1Query::BG1, lens.b_g1, s, 0),
        )
    })?;
    let b_g2 = match host {
        Some(handle) => {
            let span = info_span!("msm_b_g2", device = %dev.pci_id(), partition, host = true);
            let _g = span.enter();
            let waited = Instant::now();
            let joined = handle
                .join()
                .map_err(|_| "the host thread panicked".to_string())
                .and_then(|r| r);
            t.msm_b_g2 += waited.elapsed();
            joined.map_err(|reason| Error::Prover {
                partition,
                backend: dev.pci_id().to_string(),
                reason: format!("B query in G2 on the host: {reason}"),
            })?
        }
        None => phase(dev, partition, "msm_b_g2", &mut t.msm_b_g2, || {
            if lens.b_g2 != lens.b_g1 {
                return Err(cuzk_kernels::Error::Length {
                    op: "B query in G2",
                    expected: lens.b_g1,
                    got: lens.b_g2,
                });
            }
            b_msm(
                dev,
                resident.map(|r| &r.b_g2),
                lens.b_g2,
                b_sorted.as_ref(),
                b_scalars.as_ref(),
                |s| srs.g2(dev, lens.b_g2, s),
            )
        })?,
    };
    phase(dev, partition, "download", &mut t.download, || {
        drop((b_sorted, b_scalars));
        Ok(())
    })?;
    Ok((b_g1, b_g2))
}

/// Frees a partition's host vectors on a short-lived thread of its own when they are large:
/// handing gigabytes of pages back to the OS takes hundreds of milliseconds at 2^27, time in
/// which the device would wait for its next partition. Small values (`bytes` below 64 MiB)
/// are dropped here.
pub(super) fn release<T: Send + 'static>(v: T, bytes: usize) {
    if bytes < 64 << 20 {
        return; // `v` dropped here
    }
    // best effort: if the thread cannot start, the closure (and `v`) is dropped right here
    let _ = std::thread::Builder::new()
        .name("cuzk-free".into())
        .spawn(move || drop(v));
}

/// Hands host vectors whose values the device holds to [`cuzk_pce::buffers`] for the next
/// partition's synthesis; those it does not keep are freed apart ([`release`]).
pub(super) fn keep_or_release<const N: usize>(vectors: [Vec<Scalar>; N], bytes: usize) {
    let unkept: Vec<_> = vectors
        .into_iter()
        .filter_map(cuzk_pce::buffers::give)
        .collect();
    release(unkept, bytes);
}

/// With the device's MSM step timing: the steps that build a query's scalars (allocation,
/// the inputs' copy, the compaction, the MSM, the free), timed apart as the MSMs' steps are
/// ([`cuzk_kernels::profile`]), labelled `query <name>`.
fn query_steps(dev: &GpuDevice, name: &'static str) -> Steps {
    Steps::new(dev.step_timing().msm, || format!("query {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn density(bits: &[bool]) -> Density {
        let mut d = Density::new();
        for &b in bits {
            d.push(b);
        }
        d
    }

    #[test]
    fn density_words_cover_exactly_n() {
        let d = density(&[true, false, true]);
        assert_eq!(&*density_words(&d, 3), &[0b101]);
        assert!(matches!(density_words(&d, 3), Cow::Borrowed(_)));
        // shorter density: padded with unused variables
        assert_eq!(&*density_words(&d, 130), &[0b101, 0, 0]);
        // longer density: bits past n dropped, as Density::get-based selection does
        assert_eq!(&*density_words(&d, 1), &[0b1]);
        assert!(density_words(&d, 0).is_empty());
        let full = density(&[true; 64]);
        assert_eq!(&*density_words(&full, 64), &[u64::MAX]);
    }

    #[test]
    fn select_keeps_order_and_skips_past_the_end() {
        let v: Vec<Scalar> = (0..5u64).map(Scalar::from).collect();
        let d = density(&[true, false, true]);
        assert_eq!(select(&v, &d), vec![Scalar::from(0u64), Scalar::from(2u64)]);
    }

    #[test]
    fn phase_times_add_up() {
        let t = PhaseTimes {
            upload: Duration::from_millis(1),
            ntt: Duration::from_millis(2),
            msm_b_g2: Duration::from_millis(4),
            ..Default::default()
        };
        assert_eq!(t.total(), Duration::from_millis(7));
        assert!(t.to_string().contains("total 7.0 ms"));
    }
}
