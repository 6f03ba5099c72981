//! Device memory accounting: the bytes a circuit's resident bases take, and the working
//! memory one partition needs on top, so that a scheduler can reserve real VRAM per lease.
//!
//! Working memory follows the order in which [`super::partition`] allocates and frees
//! buffers; the estimate is the largest of its phases, with each MSM counted at
//! [`cuzk_kernels::msm_scratch_bytes`] (a sum of all its scratch buffers, so an upper bound).
//! Not counted: the CUDA context and the loaded kernel modules, a per-device constant of a
//! few hundred MiB that exists before any lease.

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use cuzk_kernels::{
    gathered_bytes, msm_scratch_bytes, ones_scratch_bytes, streamed_msm_scratch_bytes, BaseRing,
    OnesAndRest, WindowSpan, G1, G2,
};

use super::masks::QueryMasks;
use crate::pinned::HostQueries;

/// Bytes of one Fr scalar on the device.
pub const SCALAR_BYTES: u64 = 32;
/// Bytes of one affine G1 point on the device (blst layout, uncompressed).
pub const G1_BYTES: u64 = 96;
/// Bytes of one affine G2 point on the device.
pub const G2_BYTES: u64 = 192;
/// The NTT's twiddle, stage and coset tables, allocated once per device (about 20 MiB).
pub const NTT_TABLES_BYTES: u64 = cuzk_kernels::ntt::TABLES_BYTES;
/// The coset stage tables one H computation builds and frees (16 MiB).
pub const H_TABLES_BYTES: u64 = cuzk_kernels::ntt::COSET_TABLES_BYTES;
/// The NTT's top twiddle table (2 GiB), built once per device at the first H of a domain
/// of 2^19..=2^27 and kept with the device.
pub const NTT_TOP_TABLE_BYTES: u64 = cuzk_kernels::ntt::TOP_TABLE_BYTES;

/// Point counts of a circuit's five queries: all the device memory needs to know about its
/// parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QueryLens {
    /// H query (m - 1 points for a domain of m).
    pub h: usize,
    /// L query (one point per aux variable).
    pub l: usize,
    /// A query (inputs, then aux variables used in A).
    pub a: usize,
    /// B query in G1 (inputs and aux variables used in B).
    pub b_g1: usize,
    /// B query in G2 (same count as `b_g1`).
    pub b_g2: usize,
}

impl QueryLens {
    /// The counts of `params`' queries.
    pub fn of(params: &Parameters<Bls12>) -> Self {
        QueryLens {
            h: params.h.len(),
            l: params.l.len(),
            a: params.a.len(),
            b_g1: params.b_g1.len(),
            b_g2: params.b_g2.len(),
        }
    }

    /// Bytes a circuit takes once resident on a device: its bases and its density masks.
    pub fn resident_bytes(&self) -> u64 {
        self.bases_bytes() + self.mask_bytes()
    }

    /// Bytes of the five queries' bases on a device.
    pub fn bases_bytes(&self) -> u64 {
        (self.h + self.l + self.a + self.b_g1) as u64 * G1_BYTES + self.b_g2 as u64 * G2_BYTES
    }

    /// Bytes of the circuit's A and B density masks on a device (one per aux variable, the
    /// L query's count), kept with the bases from its first partition on.
    pub fn mask_bytes(&self) -> u64 {
        QueryMasks::bytes_for(self.l)
    }
}

// Here, with the rest of the accounting, so that `crate::pinned` needs nothing of `cuda`.
impl HostQueries<'_> {
    /// Point counts of the five queries.
    pub fn lens(&self) -> QueryLens {
        QueryLens {
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
            b_g2: self.b_g2.len(),
        }
    }
}

/// Working memory, in bytes, of one partition of a circuit with these queries and
/// `num_constraints` constraints (domain m = the next power of two), besides the resident
/// bases: the largest of the prover's phases.
pub fn working_bytes(q: &QueryLens, num_constraints: usize) -> u64 {
    let m = num_constraints.max(1).next_power_of_two() as u64;
    let domain = m * SCALAR_BYTES; // one of a, b, c padded to m
    let aux = q.l as u64 * SCALAR_BYTES;
    let a_scalars = q.a as u64 * SCALAR_BYTES;
    let b_scalars = q.b_g1 as u64 * SCALAR_BYTES;
    let phases = [
        // upload and H: a, b, c and aux on the device, and H's coset tables
        3 * domain + aux + H_TABLES_BYTES,
        // H MSM over the first m - 1 of the m coefficients
        domain + aux + msm_scratch_bytes::<G1>(q.h),
        // L MSM
        aux + msm_scratch_bytes::<G1>(q.l),
        // A: compaction (by the resident masks), then the MSM
        aux + a_scalars,
        aux + a_scalars + msm_scratch_bytes::<G1>(q.a),
        // B: compaction (A's scalars freed), then aux freed, then the two MSMs
        aux + b_scalars,
        b_scalars + msm_scratch_bytes::<G1>(q.b_g1).max(msm_scratch_bytes::<G2>(q.b_g2)),
    ];
    let top = if cuzk_kernels::ntt::uses_top_table(m.trailing_zeros()) {
        NTT_TOP_TABLE_BYTES
    } else {
        0
    };
    NTT_TABLES_BYTES + top + phases.into_iter().max().unwrap_or(0)
}

/// Resident bases plus one partition's working memory.
pub fn vram_needed(q: &QueryLens, num_constraints: usize) -> u64 {
    q.resident_bytes() + working_bytes(q, num_constraints)
}

/// How one device's MSMs reach a circuit's bases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residency {
    /// The bases stay on the device between partitions ([`vram_needed`] bytes a partition).
    Resident,
    /// The bases cross the link from page-locked host memory for every partition, a chunk of
    /// `chunk` G1 points (half as many in G2) at a time through two rings of device buffers
    /// ([`streamed_needed`] bytes a partition).
    Streamed {
        /// G1 points a ring buffer holds.
        chunk: usize,
    },
}

impl Residency {
    /// "resident" or "streamed", for status reports, metrics and traces.
    pub fn as_str(&self) -> &'static str {
        match self {
            Residency::Resident => "resident",
            Residency::Streamed { .. } => "streamed",
        }
    }
}

impl std::fmt::Display for Residency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Residency::Resident => f.write_str("resident"),
            Residency::Streamed { chunk } => write!(f, "streamed in chunks of {chunk} points"),
        }
    }
}

/// Smallest chunk of a streamed H MSM whose windows are planned for the whole query
/// ([`WindowSpan::Whole`]; smaller chunks are planned alone). Measured on an H100
/// (`kernels_bench --only streamed-h`, the 2^27-point H query, random scalars, alternated):
/// in chunks of 2^23, 863 ms planned whole against 930 alone (792 resident); in chunks of
/// 2^21, 1104 against 1056. A 2^21-point chunk spreads four points a bucket over the whole
/// query's 13 x 2^19 buckets, so the accumulation's runs split most buckets, and summing the
/// pieces (3.4 ms a chunk against 0.3) costs more than the windows save.
pub const WHOLE_SPAN_MIN_CHUNK: usize = 1 << 23;

/// How a streamed H MSM in chunks of `h_chunk` points plans its windows (see
/// [`WHOLE_SPAN_MIN_CHUNK`]).
pub fn h_span(h_chunk: usize) -> WindowSpan {
    if h_chunk >= WHOLE_SPAN_MIN_CHUNK {
        WindowSpan::Whole
    } else {
        WindowSpan::Chunk
    }
}

/// How the other streamed MSMs (L, A, B) plan their windows: chunk by chunk
/// ([`WindowSpan::Chunk`]). Their scalars are mostly 0 and 1, which narrow windows serve as
/// well, and their phases hold the aux values beside the MSM.
pub const QUERY_SPAN: WindowSpan = WindowSpan::Chunk;

/// Buffers of each ring of a streamed partition ([`super::streamed::Rings`]): one read by
/// the kernels while the next is filled.
pub const RING_SLOTS: usize = 2;

/// G2 points a ring buffer of `chunk` G1 points' bytes holds (at least 1).
pub fn g2_chunk(chunk: usize) -> usize {
    (chunk / 2).max(1)
}

/// Device bytes of a streamed partition's two rings, for G1 chunks of `chunk` points.
pub fn rings_bytes(chunk: usize) -> u64 {
    BaseRing::<G1>::bytes_for(chunk, RING_SLOTS)
        + BaseRing::<G2>::bytes_for(g2_chunk(chunk), RING_SLOTS)
}

/// Smallest ring chunk [`plan`] picks by itself: below it the per-chunk sort costs more
/// than the copies it overlaps.
pub const MIN_STREAM_CHUNK: usize = 1 << 16;

/// Device bytes of one partition with streamed bases, G1 chunks of `chunk` points: the
/// rings, the density masks (made for each partition, not kept) and the largest phase. The
/// aux values reach the device after the H MSM (not with a, b and c), so the H phase holds
/// only the three domain buffers and the transforms' tables.
pub fn streamed_needed(q: &QueryLens, num_constraints: usize, chunk: usize) -> u64 {
    let m = num_constraints.max(1).next_power_of_two() as u64;
    let top = if cuzk_kernels::ntt::uses_top_table(m.trailing_zeros()) {
        NTT_TOP_TABLE_BYTES
    } else {
        0
    };
    NTT_TABLES_BYTES
        + top
        + rings_bytes(chunk)
        + q.mask_bytes()
        + largest_streamed_phase(q, m, chunk)
}

/// Device bytes the batched walks of a batch of streamed partitions ([`super::batch`]) may
/// use: the largest phase [`streamed_needed`] reserves (the domain buffers are freed by
/// then), for the partitions' sets ([`SetShape::walk_bytes`]) and the MSMs of the other
/// values that end each walk ([`SetShape::tail_bytes`], one at a time).
pub fn batch_room(q: &QueryLens, num_constraints: usize, chunk: usize) -> u64 {
    let m = num_constraints.max(1).next_power_of_two() as u64;
    largest_streamed_phase(q, m, chunk)
}

/// Device bytes the lease table counts for each partition of a streamed circuit beyond the
/// working memory they share ([`super::LeasePlan::shared`]): what the partition's sets take
/// in a batch's walks ([`SetShape::walk_bytes`]), for the shape [`SetShape::estimated`]
/// assumes. For admission only: the batch itself groups its walks by what the scalars take.
pub fn batch_share(q: &QueryLens, chunk: usize) -> u64 {
    SetShape::estimated(q).walk_bytes(chunk)
}

/// One partition's L, A and B scalars in a batch of streamed partitions: each query's
/// length and its count of values neither zero nor one (B's serve the G1 and G2 walks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetShape {
    /// (length, values neither 0 nor 1) of the L scalars.
    pub l: (usize, usize),
    /// The same for A.
    pub a: (usize, usize),
    /// The same for B.
    pub b: (usize, usize),
}

impl SetShape {
    /// The shape admission assumes for a circuit with queries `q`: one value in 32 neither 0
    /// nor 1 (a 32 GiB PoRep witness has one in 77). A batch whose scalars hold more walks
    /// the bases once more for the partitions that do not fit ([`super::batch`] groups its
    /// walks by the shapes it has): an estimate too low costs a walk, never device memory.
    pub fn estimated(q: &QueryLens) -> Self {
        SetShape {
            l: (q.l, q.l / 32),
            a: (q.a, q.a / 32),
            b: (q.b_g1, q.b_g1 / 32),
        }
    }

    /// Device bytes the partition's sets take during the batched walks with chunks of
    /// `chunk` G1 points: one query's at a time, the largest of them, each its scalars as
    /// ones and rest, the points its other values pair with (gathered during the walk) and
    /// its share of a chunk's lists ([`cuzk_kernels::ones_scratch_bytes`]).
    pub fn walk_bytes(&self, chunk: usize) -> u64 {
        let scalars = |(n, rest): (usize, usize)| OnesAndRest::device_bytes_for(n, rest) as u64;
        let g1 = |(n, rest): (usize, usize)| {
            ones_scratch_bytes::<G1>(chunk.min(n)) + gathered_bytes::<G1>(rest)
        };
        let g2 = |(n, rest): (usize, usize)| {
            ones_scratch_bytes::<G2>(g2_chunk(chunk).min(n)) + gathered_bytes::<G2>(rest)
        };
        let l = scalars(self.l) + g1(self.l);
        let a = scalars(self.a) + g1(self.a);
        let b = scalars(self.b) + g1(self.b).max(g2(self.b));
        l.max(a).max(b)
    }

    /// Device bytes the MSM of the other values at the end of a walk takes (one set's at a
    /// time, in the walk's chunks): the largest such MSM's scratch.
    pub fn tail_bytes(&self, chunk: usize) -> u64 {
        [self.l.1, self.a.1, self.b.1]
            .into_iter()
            .map(|rest| msm_scratch_bytes::<G1>(rest.min(chunk)))
            .chain([msm_scratch_bytes::<G2>(self.b.1.min(g2_chunk(chunk)))])
            .max()
            .unwrap_or(0)
    }
}

/// The largest of a streamed partition's phases (domain of `m` points), without the tables,
/// rings and masks that last through all of them. The H phase's MSM takes the chunk
/// [`h_chunk`] gives, which never makes it the largest unless it already was with the
/// rings' chunk.
fn largest_streamed_phase(q: &QueryLens, m: u64, chunk: usize) -> u64 {
    let others = phases_but_h(q, m, chunk);
    others.max(h_phase_bytes(q, m, chunk, h_chunk(q, m, chunk)))
}

/// The largest of a streamed partition's phases other than its H MSM.
fn phases_but_h(q: &QueryLens, m: u64, chunk: usize) -> u64 {
    let domain = m * SCALAR_BYTES;
    let aux = q.l as u64 * SCALAR_BYTES;
    let a_scalars = q.a as u64 * SCALAR_BYTES;
    let b_scalars = q.b_g1 as u64 * SCALAR_BYTES;
    let g1 = |n: usize| streamed_msm_scratch_bytes::<G1>(n, chunk, QUERY_SPAN);
    let g2 = |n: usize| streamed_msm_scratch_bytes::<G2>(n, g2_chunk(chunk), QUERY_SPAN);
    let phases = [
        3 * domain + H_TABLES_BYTES,
        aux + g1(q.l),
        aux + a_scalars + g1(q.a),
        aux + b_scalars,
        b_scalars + g1(q.b_g1).max(g2(q.b_g2)),
    ];
    phases.into_iter().max().unwrap_or(0)
}

/// Device bytes of a streamed partition's H MSM phase in chunks of `h_chunk` points: the
/// one domain buffer left (its scalars), the MSM's scratch ([`h_span`]) and, where
/// `h_chunk` exceeds the rings' `chunk`, a ring of its own for the phase.
fn h_phase_bytes(q: &QueryLens, m: u64, chunk: usize, h_chunk: usize) -> u64 {
    let ring = if h_chunk > chunk {
        BaseRing::<G1>::bytes_for(h_chunk, RING_SLOTS)
    } else {
        0
    };
    m * SCALAR_BYTES + ring + streamed_msm_scratch_bytes::<G1>(q.h, h_chunk, h_span(h_chunk))
}

/// The chunk of a streamed partition's H MSM (domain of `m` points, rings of `chunk` G1
/// points): the largest power of two from `chunk` up to the H query's length (at most
/// [`cuzk_kernels::msm::MAX_CHUNK`]) whose phase, with a ring of its own, fits within the
/// partition's other phases, so that it never raises what a partition needs; else `chunk`.
///
/// After the transform, two of its three domain buffers are free: a 32 GiB PoRep partition
/// on a 16 GiB budget (rings of 2^21) streams H in chunks of 2^23 planned whole, 863 ms
/// against 1056 in the rings' chunks on an H100 ([`WHOLE_SPAN_MIN_CHUNK`]).
pub fn h_chunk(q: &QueryLens, m: u64, chunk: usize) -> usize {
    let others = phases_but_h(q, m, chunk);
    let top = q.h.next_power_of_two().min(cuzk_kernels::msm::MAX_CHUNK);
    let mut c = top;
    while c > chunk {
        if h_phase_bytes(q, m, chunk, c) <= others {
            return c;
        }
        c /= 2;
    }
    chunk
}

/// How a device with `limit` bytes for leases proves a circuit with these queries and
/// `num_constraints` constraints: resident when the bases and a partition's working memory
/// fit and the bases take at most `resident_cap` bytes, else streamed with the largest power-of-two chunk (from [`MIN_STREAM_CHUNK`] up to
/// the largest query, at most [`cuzk_kernels::msm::MAX_CHUNK`]) that fits. `chunk` forces
/// streaming with that chunk (tests and benchmarks). `Err` carries the fewest bytes a
/// partition needs (streamed, smallest chunk) when nothing fits.
pub fn plan(
    q: &QueryLens,
    num_constraints: usize,
    limit: u64,
    resident_cap: u64,
    chunk: Option<usize>,
) -> Result<Residency, u64> {
    if let Some(chunk) = chunk {
        let chunk = chunk.max(1);
        let need = streamed_needed(q, num_constraints, chunk);
        return if need <= limit {
            Ok(Residency::Streamed { chunk })
        } else {
            Err(need)
        };
    }
    if vram_needed(q, num_constraints) <= limit && q.resident_bytes() <= resident_cap {
        return Ok(Residency::Resident);
    }
    let largest = [q.h, q.l, q.a, q.b_g1, 2 * q.b_g2]
        .into_iter()
        .max()
        .unwrap_or(1)
        .next_power_of_two()
        .clamp(MIN_STREAM_CHUNK, cuzk_kernels::msm::MAX_CHUNK);
    let mut c = largest;
    while c >= MIN_STREAM_CHUNK {
        if streamed_needed(q, num_constraints, c) <= limit {
            return Ok(Residency::Streamed { chunk: c });
        }
        c /= 2;
    }
    Err(streamed_needed(q, num_constraints, MIN_STREAM_CHUNK))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PoRep 32 GiB-like counts: 130M constraints, domain 2^27.
    fn porep_32g() -> QueryLens {
        let aux = 130_000_000;
        QueryLens {
            h: (1 << 27) - 1,
            l: aux,
            a: aux,
            b_g1: aux / 4,
            b_g2: aux / 4,
        }
    }

    #[test]
    fn streaming_fits_a_32gib_porep_partition_in_16_gib() {
        let q = porep_32g();
        let n = 130_278_541;
        let gib = 1u64 << 30;
        // resident: about 66 GiB, so an 80 GB card keeps the bases
        assert_eq!(
            plan(&q, n, 78 * gib, 78 * gib, None),
            Ok(Residency::Resident)
        );
        // 24 and 16 GiB stream; the chunk shrinks with the budget
        let Ok(Residency::Streamed { chunk: c24 }) = plan(&q, n, 23 * gib, 23 * gib, None) else {
            panic!("24 GiB streams")
        };
        let Ok(Residency::Streamed { chunk: c16 }) = plan(&q, n, 15 * gib, 15 * gib, None) else {
            panic!(
                "16 GiB streams: {} GiB",
                streamed_needed(&q, n, MIN_STREAM_CHUNK) >> 30
            )
        };
        assert!(c24 >= c16 && c16 >= MIN_STREAM_CHUNK, "{c24} {c16}");
        // the H MSM takes larger chunks than the rings', through a ring of its own, planned
        // for the whole query: with the one domain buffer left they fit within the three
        // the transform holds, so the partition needs no more than before
        let m = 1u64 << 27;
        assert_eq!(c16, 1 << 21);
        let hc = h_chunk(&q, m, c16);
        assert_eq!(hc, WHOLE_SPAN_MIN_CHUNK, "2^{}", hc.trailing_zeros());
        assert_eq!(h_span(hc), WindowSpan::Whole);
        assert!(h_phase_bytes(&q, m, c16, hc) <= phases_but_h(&q, m, c16));
        assert!(h_phase_bytes(&q, m, c16, 2 * hc) > phases_but_h(&q, m, c16));
        assert_eq!(
            largest_streamed_phase(&q, m, c16),
            3 * m * 32 + H_TABLES_BYTES
        );
        // at 24 GiB the rings' chunk is already past the threshold: H takes it, planned whole
        assert!(h_chunk(&q, m, c24) >= c24);
        assert_eq!(h_span(h_chunk(&q, m, c24)), WindowSpan::Whole);
        // small chunks are planned alone; an H query shorter than the rings' chunk takes it
        assert_eq!(h_span(1 << 21), WindowSpan::Chunk);
        let tiny = QueryLens {
            h: 1023,
            l: 900,
            a: 900,
            b_g1: 100,
            b_g2: 100,
        };
        assert_eq!(h_chunk(&tiny, 1024, 4096), 4096);
        assert!(streamed_needed(&q, n, c16) <= 15 * gib);
        assert!(streamed_needed(&q, n, 2 * c16) > 15 * gib || 2 * c16 > (1 << 26));
        // below the three domain buffers nothing fits, and the error says how much is needed
        let least = plan(&q, n, 10 * gib, 10 * gib, None).expect_err("10 GiB is too little");
        assert_eq!(least, streamed_needed(&q, n, MIN_STREAM_CHUNK));
        assert!(least > 12 * gib);
        // a forced chunk streams even where resident would fit, or says what it needs
        assert_eq!(
            plan(&q, n, 78 * gib, 78 * gib, Some(1 << 12)),
            Ok(Residency::Streamed { chunk: 1 << 12 })
        );
        assert!(plan(&q, n, gib, gib, Some(1 << 12)).is_err());
        // bases over the resident share stream even where they would fit
        assert!(matches!(
            plan(&q, n, 78 * gib, 40 * gib, None),
            Ok(Residency::Streamed { .. })
        ));
        // streaming needs less than resident, and more with a larger chunk
        assert!(streamed_needed(&q, n, 1 << 20) < vram_needed(&q, n));
        assert!(streamed_needed(&q, n, 1 << 22) > streamed_needed(&q, n, 1 << 20));
        // at 16 GiB a batch of a whole C2's ten partitions walks the L, A and B bases once:
        // their estimated scalars and bucket sums fit the room the largest phase leaves
        let room = batch_room(&q, n, c16);
        let share = batch_share(&q, c16);
        let tail = SetShape::estimated(&q).tail_bytes(c16);
        assert!(share > 0 && share < 2 * gib, "{share}");
        assert!(
            room >= 10 * share + tail,
            "room {room}, share {share}, tail {tail}"
        );
        assert!(room < streamed_needed(&q, n, c16));
        let snap = QueryLens {
            h: (1 << 27) - 1,
            l: 80_978_488,
            a: 80_743_586,
            b_g1: 20_983_608,
            b_g2: 20_983_608,
        };
        let ns = 81_049_499;
        let Ok(Residency::Streamed { chunk: c20 }) = plan(&snap, ns, 19 * gib, 19 * gib, None)
        else {
            panic!("SnapDeals streams at 20 GiB")
        };
        // its chunk is larger, and so are a set's bucket sums: eight a walk, so that the
        // job's 16 partitions walk those bases twice instead of 16 times
        assert!(
            batch_room(&snap, ns, c20)
                >= 8 * batch_share(&snap, c20) + SetShape::estimated(&snap).tail_bytes(c20),
            "room {}, share {}, chunk {c20}",
            batch_room(&snap, ns, c20),
            batch_share(&snap, c20)
        );
    }

    #[test]
    fn resident_bytes_count_every_point() {
        let q = QueryLens {
            h: 3,
            l: 5,
            a: 7,
            b_g1: 2,
            b_g2: 2,
        };
        assert_eq!(q.bases_bytes(), (3 + 5 + 7 + 2) * 96 + 2 * 192);
        // two masks of one word and one prefix count each (5 aux variables)
        assert_eq!(q.mask_bytes(), 2 * (8 + 4));
        assert_eq!(q.resident_bytes(), q.bases_bytes() + q.mask_bytes());
        assert_eq!(QueryLens::default().resident_bytes(), 0);
        // PoRep 32 GiB: 2 x 2.03M words and counts, about 47 MiB beside 45 GiB of bases
        let big = porep_32g().mask_bytes();
        assert_eq!(big, 2 * 130_000_000u64.div_ceil(64) * 12);
    }

    #[test]
    fn working_memory_covers_the_domain_buffers_and_an_msm() {
        let q = porep_32g();
        let w = working_bytes(&q, 130_278_541);
        let m = 1u64 << 27;
        assert!(w >= 3 * m * 32 + q.l as u64 * 32, "a, b, c and aux");
        assert!(w >= msm_scratch_bytes::<G1>(q.h));
        assert!(
            w >= 3 * m * 32 + NTT_TABLES_BYTES + NTT_TOP_TABLE_BYTES,
            "and the top table"
        );
        // fits an H200 next to its resident bases, with room to spare
        let total = vram_needed(&q, 130_278_541);
        assert!(total < 141 << 30, "{} GiB", total >> 30);
        assert!(total > q.resident_bytes());
        // one constraint past 2^k doubles the domain buffers
        let small = QueryLens {
            h: 1023,
            l: 900,
            a: 900,
            b_g1: 100,
            b_g2: 100,
        };
        assert!(working_bytes(&small, 1025) >= working_bytes(&small, 1024));
        let no_msm = QueryLens::default();
        assert_eq!(
            working_bytes(&no_msm, (1 << 20) + 1) - working_bytes(&no_msm, 1 << 20),
            3 * (1 << 20) * 32,
            "a, b and c at 2^21 instead of 2^20"
        );
        assert!(working_bytes(&QueryLens::default(), 0) >= NTT_TABLES_BYTES);
        // the top table from a domain of 2^19 (the first with a pass beyond the stage table)
        assert_eq!(
            working_bytes(&no_msm, 1 << 19) - working_bytes(&no_msm, 1 << 18),
            3 * (1 << 18) * 32 + NTT_TOP_TABLE_BYTES
        );
    }
}
