//! The CUDA backend's kernels behind the device-operation seam ([`DeviceOps`]), one
//! operation at a time: each uploads its scalars, runs its kernels, waits for the device and
//! brings its result back. No pipelining and no uploads ahead: a debug and test path (the
//! `dual` backend compares it with the CPU after every operation), not the production one
//! ([`super::partition::prove_msms`]).
//!
//! It runs the kernels the production path runs: H by `h_polynomial_scaled` (six transforms
//! for a satisfied assignment, seven otherwise), scaled by its constant on the device and
//! read back as exact coefficients; H, L and A by the chunked MSM; the A and B scalars
//! compacted by density masks on the device; B in G1 and G2 from scalars sorted into
//! bucket lists when the bases are resident. Parameters are resident where the device's
//! budget holds them (least recently used circuits evicted first), else streamed from host
//! memory through rings, as [`super::lease_plan`] decides for the CUDA backend.

use std::sync::Arc;

use blstrs::{G1Projective, G2Projective, Scalar};
use cuzk_kernels::msm::MAX_CHUNK;
use cuzk_kernels::{DeviceBuffer, GpuDevice};
use cuzk_pce::Density;
use group::Group;
use tracing::info_span;

use super::partition::{density_words, select};
use super::resident::{DeviceSrs, Lru};
use super::streamed::{host_srs, HostQueries, HostSrs, Rings, QUERY_SPAN};
use super::vram::{QueryLens, Residency};
use super::{lease_plan, usable_memory, DEFAULT_RESIDENT_EIGHTHS};
use crate::device_ops::{DeviceOps, Op, QueryScalars};
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::param_file::Srs;

/// One GPU as a [`DeviceOps`]. Owned by one thread at a time, as [`super::CudaBackend`] is.
///
/// Invariant: `resident.used() <= resident.budget()`, and the rings exist only while the
/// last circuit's bases were streamed.
pub struct CudaOps {
    dev: GpuDevice,
    label: String,
    /// Device bytes this device's work may use ([`usable_memory`]).
    usable: u64,
    /// Streams every circuit's bases in chunks of this many G1 points (tests).
    stream_chunk: Option<usize>,
    /// Resident bases by circuit id.
    resident: Lru<DeviceSrs>,
    /// The rings of streamed bases, kept between operations (boxed: they are large, and
    /// move in and out of [`Bases`]).
    rings: Option<Box<Rings>>,
}

impl std::fmt::Debug for CudaOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaOps")
            .field("device", &self.label)
            .field("resident_bytes", &self.resident.used())
            .finish()
    }
}

/// Where an operation finds a circuit's bases.
enum Bases {
    /// On the device.
    Resident(Arc<DeviceSrs>),
    /// In host memory (registered as page-locked where that worked), through the rings.
    Streamed {
        host: Option<Arc<HostSrs>>,
        rings: Box<Rings>,
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

impl G1Query {
    fn resident(self, srs: &DeviceSrs) -> &cuzk_kernels::G1Bases {
        match self {
            G1Query::H => &srs.h,
            G1Query::L => &srs.l,
            G1Query::A => &srs.a,
            G1Query::BG1 => &srs.b_g1,
        }
    }

    fn host<'a>(self, q: &HostQueries<'a>) -> &'a [blstrs::G1Affine] {
        match self {
            G1Query::H => q.h,
            G1Query::L => q.l,
            G1Query::A => q.a,
            G1Query::BG1 => q.b_g1,
        }
    }
}

impl Bases {
    /// `sum_i scalars[i] * query[i]` over all the scalars (as many as the query's points).
    fn g1(
        &mut self,
        dev: &GpuDevice,
        srs: &Srs,
        query: G1Query,
        scalars: &DeviceBuffer<Scalar>,
    ) -> cuzk_kernels::Result<G1Projective> {
        let n = scalars.len();
        match self {
            Bases::Resident(d) => dev.msm(query.resident(d), 0..n, scalars),
            Bases::Streamed { host, rings } => {
                let q = host
                    .as_deref()
                    .map_or_else(|| HostQueries::of(&srs.params), HostSrs::queries);
                match query {
                    G1Query::H => rings.msm_h(dev, q.h, n, scalars, 0, &q.lens()),
                    _ => {
                        let g1 = &mut rings.g1;
                        dev.msm_streamed(query.host(&q), 0..n, scalars, 0, g1, QUERY_SPAN)
                    }
                }
            }
        }
    }

    /// The B query in G1, from sorted scalars where the bases are resident (as the
    /// production path computes it).
    fn b_g1(
        &mut self,
        dev: &GpuDevice,
        srs: &Srs,
        scalars: &DeviceBuffer<Scalar>,
    ) -> cuzk_kernels::Result<G1Projective> {
        let n = scalars.len();
        match self {
            Bases::Resident(d) if n <= MAX_CHUNK => {
                let sorted = dev.msm_sort(scalars, 0..n)?;
                dev.msm_sorted(&d.b_g1, 0..n, &sorted)
            }
            _ => self.g1(dev, srs, G1Query::BG1, scalars),
        }
    }

    /// The B query in G2, as [`Bases::b_g1`].
    fn b_g2(
        &mut self,
        dev: &GpuDevice,
        srs: &Srs,
        scalars: &DeviceBuffer<Scalar>,
    ) -> cuzk_kernels::Result<G2Projective> {
        let n = scalars.len();
        match self {
            Bases::Resident(d) if n <= MAX_CHUNK => {
                let sorted = dev.msm_sort(scalars, 0..n)?;
                dev.msm_sorted(&d.b_g2, 0..n, &sorted)
            }
            Bases::Resident(d) => dev.msm(&d.b_g2, 0..n, scalars),
            Bases::Streamed { host, rings } => {
                let q = host
                    .as_deref()
                    .map_or_else(|| HostQueries::of(&srs.params), HostSrs::queries);
                dev.msm_streamed(q.b_g2, 0..n, scalars, 0, &mut rings.g2, QUERY_SPAN)
            }
        }
    }
}

/// `scalars` on the device, or `None` when there are none (nothing to allocate).
fn upload(
    dev: &GpuDevice,
    scalars: &[Scalar],
) -> cuzk_kernels::Result<Option<DeviceBuffer<Scalar>>> {
    if scalars.is_empty() {
        return Ok(None);
    }
    dev.upload(scalars).map(Some)
}

/// `head` followed by the elements of `aux` whose `density` bit is set, compacted on the
/// device into a buffer of `len` scalars (`None` when `len` is 0). Errors when the counts do
/// not add up to `len`.
fn head_then_selected(
    dev: &GpuDevice,
    head: &[Scalar],
    aux: &[Scalar],
    density: &Density,
    len: usize,
) -> cuzk_kernels::Result<Option<DeviceBuffer<Scalar>>> {
    let mask = dev.upload_bitmap(&density_words(density, aux.len()), aux.len())?;
    let wrong = |got: usize| cuzk_kernels::Error::Length {
        op: "query scalars (inputs + selected aux)",
        expected: len,
        got,
    };
    if head.len() + mask.count() != len {
        return Err(wrong(head.len() + mask.count()));
    }
    if len == 0 {
        return Ok(None);
    }
    let mut buf = dev.alloc_zeroed(len)?;
    dev.copy_to_device_at(head, &mut buf, 0)?;
    if let Some(aux) = upload(dev, aux)? {
        let written = dev.fr_compact_by(&aux, &mask, &mut buf, head.len())?;
        if head.len() + written != len {
            return Err(wrong(head.len() + written));
        }
    }
    Ok(Some(buf))
}

impl CudaOps {
    /// Opens device `ordinal` (numbered under the current `CUDA_VISIBLE_DEVICES`), its
    /// whole memory usable. Errors (no driver, no such device) are [`Error::Device`];
    /// nothing is allocated until the first operation.
    pub fn open(ordinal: usize) -> Result<CudaOps> {
        let dev = GpuDevice::open(ordinal).map_err(|source| Error::Device {
            device: format!("cuda:{ordinal}"),
            context: "opening the device".into(),
            source: Box::new(source),
        })?;
        let usable = usable_memory(dev.total_memory() as u64, None);
        Ok(CudaOps {
            label: dev.pci_id().to_string(),
            dev,
            usable,
            stream_chunk: None,
            resident: Lru::new(usable / 8 * DEFAULT_RESIDENT_EIGHTHS),
            rings: None,
        })
    }

    /// Holds this device's work to `limit` bytes (`None`: the whole device), as
    /// [`super::CudaBackend::with_memory_limit`] does: circuits that do not fit are streamed.
    pub fn with_memory_limit(mut self, limit: Option<u64>) -> Self {
        self.usable = usable_memory(self.dev.total_memory() as u64, limit);
        self.resident
            .set_budget(self.usable / 8 * DEFAULT_RESIDENT_EIGHTHS);
        self
    }

    /// Reads and stores compiled kernel modules in `dir` (`None`: the default), as
    /// [`super::CudaBackend::with_kernel_cache`] does.
    pub fn with_kernel_cache(mut self, dir: Option<std::path::PathBuf>) -> Self {
        if let Some(dir) = dir {
            self.dev.set_kernel_cache(dir);
        }
        self
    }

    /// Streams every circuit's bases in chunks of `chunk` G1 points (`None`: resident
    /// where they fit), as [`super::CudaBackend::with_stream_chunk`] does.
    pub fn with_stream_chunk(mut self, chunk: Option<usize>) -> Self {
        self.stream_chunk = chunk;
        self
    }

    /// The underlying device.
    pub fn device(&self) -> &GpuDevice {
        &self.dev
    }

    /// The device's marketing name, e.g. "NVIDIA H200".
    pub fn device_name(&self) -> &str {
        self.dev.name()
    }

    /// Runs `f` on the device, waits for it, and gives a device error `op` and `partition`
    /// as context.
    fn on_device<T>(
        &self,
        op: Op,
        partition: usize,
        f: impl FnOnce(&GpuDevice) -> cuzk_kernels::Result<T>,
    ) -> Result<T> {
        let dev = &self.dev;
        f(dev)
            .and_then(|v| dev.synchronize().map(|()| v))
            .map_err(|source| self.device_error(format!("partition {partition}: {op}"), source))
    }

    /// As [`CudaOps::on_device`], with `srs`' bases on the device or streamed.
    fn with_bases<T>(
        &mut self,
        srs: &Srs,
        op: Op,
        partition: usize,
        f: impl FnOnce(&GpuDevice, &mut Bases) -> cuzk_kernels::Result<T>,
    ) -> Result<T> {
        let mut bases = self.bases(srs, partition)?;
        let out = self.on_device(op, partition, |dev| f(dev, &mut bases));
        if let Bases::Streamed { rings, .. } = bases {
            self.rings = Some(rings); // kept for the next operation
        }
        out
    }

    /// `srs`' bases for an operation: resident (uploaded at first use, evicting least
    /// recently used circuits), or streamed through the rings when the plan says so.
    fn bases(&mut self, srs: &Srs, partition: usize) -> Result<Bases> {
        let plan = lease_plan(srs, self.usable, self.stream_chunk).map_err(|need| {
            self.prover_error(
                partition,
                format!(
                    "{} needs at least {need} bytes of device memory with its parameters \
                     streamed; this device's budget is {} bytes",
                    srs.path.display(),
                    self.usable
                ),
            )
        })?;
        match plan.residency {
            Residency::Resident => {
                self.rings = None;
                self.resident_bases(srs, partition).map(Bases::Resident)
            }
            Residency::Streamed { chunk } => {
                for key in self.resident.keys_by_age() {
                    if self.resident.used().saturating_add(plan.bytes) <= self.usable {
                        break;
                    }
                    self.resident.remove(key);
                }
                let rings = match self.rings.take() {
                    Some(r) if r.chunk() == chunk => r,
                    _ => Rings::new(&self.dev, chunk)
                        .map(Box::new)
                        .map_err(|source| {
                            self.device_error(
                                format!(
                                    "partition {partition}: allocating the rings of streamed bases"
                                ),
                                source,
                            )
                        })?,
                };
                Ok(Bases::Streamed {
                    host: host_srs(&self.dev, srs),
                    rings,
                })
            }
        }
    }

    fn resident_bases(&mut self, srs: &Srs, partition: usize) -> Result<Arc<DeviceSrs>> {
        let lens = QueryLens::of(&srs.params);
        if let Some(bases) = self.resident.get(srs.id()) {
            if bases.lens() == lens {
                return Ok(bases);
            }
            self.resident.remove(srs.id()); // parameters replaced under the same Srs
        }
        let bytes = lens.resident_bytes();
        let over = |budget: u64| {
            format!(
                "the circuit's parameters take {bytes} bytes on the device, more than the \
                 resident budget of {budget} bytes"
            )
        };
        if self.resident.make_room(bytes).is_none() {
            return Err(self.prover_error(partition, over(self.resident.budget())));
        }
        let span = info_span!("upload_srs", device = %self.label, bytes);
        let uploaded = span
            .in_scope(|| DeviceSrs::upload(&self.dev, &srs.params))
            .map_err(|source| {
                self.device_error(
                    format!("partition {partition}: uploading parameters"),
                    source,
                )
            })?;
        let budget = self.resident.budget();
        self.resident
            .insert(srs.id(), uploaded, bytes)
            .map_err(|_| self.prover_error(partition, over(budget)))
    }

    fn device_error(&self, context: String, source: cuzk_kernels::Error) -> Error {
        Error::Device {
            device: self.label.clone(),
            context,
            source: Box::new(source),
        }
    }

    fn prover_error(&self, partition: usize, reason: String) -> Error {
        Error::Prover {
            partition,
            backend: self.label.clone(),
            reason,
        }
    }
}

impl DeviceOps for CudaOps {
    fn name(&self) -> String {
        self.label.clone()
    }

    fn h_coefficients(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        partition: usize,
    ) -> Result<Vec<Scalar>> {
        let m = Domain::for_size(a.len())?.m;
        if m < 2 {
            return Ok(Vec::new()); // a domain of one point: h has no coefficients
        }
        self.on_device(Op::H, partition, |dev| {
            let padded = |v: &[Scalar]| -> cuzk_kernels::Result<DeviceBuffer<Scalar>> {
                let mut buf = dev.alloc_zeroed(m)?;
                dev.copy_to_device_at(v, &mut buf, 0)?;
                Ok(buf)
            };
            let (mut da, mut db, mut dc) = (padded(&a)?, padded(&b)?, padded(&c)?);
            let kappa = dev.h_polynomial_scaled(&mut da, &mut db, &mut dc)?;
            drop((db, dc));
            dev.fr_scale(&mut da, kappa)?;
            let mut h = dev.download(&da)?;
            h.truncate(m - 1);
            Ok(h)
        })
    }

    fn msm_h(
        &mut self,
        srs: &Srs,
        coefficients: &[Scalar],
        partition: usize,
    ) -> Result<G1Projective> {
        self.with_bases(srs, Op::MsmH, partition, |dev, bases| {
            match upload(dev, coefficients)? {
                Some(s) => bases.g1(dev, srs, G1Query::H, &s),
                None => Ok(G1Projective::identity()),
            }
        })
    }

    fn msm_l(&mut self, srs: &Srs, aux: &[Scalar], partition: usize) -> Result<G1Projective> {
        self.with_bases(srs, Op::MsmL, partition, |dev, bases| {
            match upload(dev, aux)? {
                Some(s) => bases.g1(dev, srs, G1Query::L, &s),
                None => Ok(G1Projective::identity()),
            }
        })
    }

    fn msm_a(&mut self, srs: &Srs, w: &QueryScalars<'_>, partition: usize) -> Result<G1Projective> {
        let len = srs.params.a.len();
        self.with_bases(
            srs,
            Op::MsmA,
            partition,
            |dev, bases| match head_then_selected(dev, w.input, w.aux, w.a_aux_density, len)? {
                Some(s) => bases.g1(dev, srs, G1Query::A, &s),
                None => Ok(G1Projective::identity()),
            },
        )
    }

    fn msm_b_g1(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        partition: usize,
    ) -> Result<G1Projective> {
        let len = srs.params.b_g1.len();
        let inputs = select(w.input, w.b_input_density);
        self.with_bases(
            srs,
            Op::MsmBG1,
            partition,
            |dev, bases| match head_then_selected(dev, &inputs, w.aux, w.b_aux_density, len)? {
                Some(s) => bases.b_g1(dev, srs, &s),
                None => Ok(G1Projective::identity()),
            },
        )
    }

    fn msm_b_g2(
        &mut self,
        srs: &Srs,
        w: &QueryScalars<'_>,
        partition: usize,
    ) -> Result<G2Projective> {
        let len = srs.params.b_g2.len();
        let inputs = select(w.input, w.b_input_density);
        self.with_bases(
            srs,
            Op::MsmBG2,
            partition,
            |dev, bases| match head_then_selected(dev, &inputs, w.aux, w.b_aux_density, len)? {
                Some(s) => bases.b_g2(dev, srs, &s),
                None => Ok(G2Projective::identity()),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_send() {
        fn check<T: Send>() {}
        check::<CudaOps>();
    }

    #[test]
    fn open_without_a_driver_is_a_clear_error() {
        if cuzk_kernels::driver_present() {
            return; // a GPU machine: the device tests cover opening
        }
        let err = CudaOps::open(0).expect_err("no driver, no device");
        assert!(matches!(err, Error::Device { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("cuda:0") && msg.contains("driver"), "{msg}");
    }
}
