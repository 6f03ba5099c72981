//! Scalar vectors kept as what a Filecoin PoRep or SnapDeals witness mostly is: zeros and
//! ones (98.7% of a 32 GiB PoRep partition's aux values). [`OnesAndRest`] holds a bitmap
//! of the ones and a list of the other non-zero values with their positions; zeros take no
//! room. A 130M-scalar query then takes about 16 MB of bitmap and 60 MB of list instead of
//! 4.2 GB, so the scalars of many partitions fit on a small device at once, and an MSM
//! whose bases stream from host memory can apply each chunk of bases to all of them
//! ([`crate::GpuDevice::msm_streamed_batch`]).

use std::ops::Range;

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::device::{DeviceBuffer, GpuDevice};
use crate::error::{Error, Result};
use crate::staging::Staging;

/// Scalars in [`OnesAndRest::classify`]'s blocks: a multiple of 64, so that blocks join
/// word by word.
const CLASSIFY_BLOCK: usize = 1 << 16;

/// A vector of scalars as a bitmap of its ones and the list of its other non-zero values.
///
/// Invariant: `ones` has exactly `ceil(len / 64)` words and no bit set at or past `len`;
/// `rest_at` is strictly increasing, below `len`, and no position in it has its bit set in
/// `ones`; `rest[k]` is the value at `rest_at[k]` and is neither zero nor one; `len` fits in
/// `u32` (the device kernels index with 32 bits).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OnesAndRest {
    len: usize,
    ones: Vec<u64>,
    rest_at: Vec<u32>,
    rest: Vec<Scalar>,
}

impl OnesAndRest {
    /// An empty vector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one scalar. Errors when the vector would pass `u32::MAX` elements.
    pub fn push(&mut self, s: &Scalar) -> Result<()> {
        let at = u32::try_from(self.len).map_err(|_| too_long("OnesAndRest::push"))?;
        if self.len.is_multiple_of(64) {
            self.ones.push(0);
        }
        if *s == Scalar::ONE {
            if let Some(w) = self.ones.last_mut() {
                *w |= 1u64 << (self.len % 64);
            }
        } else if !bool::from(s.is_zero()) {
            self.rest_at.push(at);
            self.rest.push(*s);
        }
        self.len += 1;
        Ok(())
    }

    /// `scalars` classified, in blocks on rayon's pool. Errors when there are more than
    /// `u32::MAX` of them.
    pub fn classify(scalars: &[Scalar]) -> Result<Self> {
        u32::try_from(scalars.len()).map_err(|_| too_long("OnesAndRest::classify"))?;
        let blocks = scalars
            .par_chunks(CLASSIFY_BLOCK)
            .map(|block| {
                let mut part = OnesAndRest::new();
                for s in block {
                    part.push(s)?;
                }
                Ok(part)
            })
            .collect::<Result<Vec<_>>>()?;
        Self::concat(blocks)
    }

    /// The parts one after another.
    pub fn concat(parts: impl IntoIterator<Item = OnesAndRest>) -> Result<Self> {
        let mut all = OnesAndRest::new();
        for part in parts {
            all.append(part)?;
        }
        Ok(all)
    }

    /// Appends `other`'s scalars after this vector's. Errors when the result would pass
    /// `u32::MAX` elements.
    pub fn append(&mut self, other: OnesAndRest) -> Result<()> {
        let base = self.len;
        let len = base
            .checked_add(other.len)
            .filter(|&n| u32::try_from(n).is_ok())
            .ok_or_else(|| too_long("OnesAndRest::append"))?;
        let shift = base % 64;
        if shift == 0 {
            self.ones.extend_from_slice(&other.ones);
        } else {
            for w in other.ones {
                // the low bits complete this vector's last word, the high bits start a new one
                if let Some(last) = self.ones.last_mut() {
                    *last |= w << shift;
                }
                self.ones.push(w >> (64 - shift));
            }
        }
        self.ones.truncate(len.div_ceil(64));
        // base + at < len <= u32::MAX (checked above)
        self.rest_at
            .extend(other.rest_at.iter().map(|&at| at + base as u32));
        self.rest.extend(other.rest);
        self.len = len;
        Ok(())
    }

    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no scalars.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of ones.
    pub fn ones(&self) -> usize {
        self.ones.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Number of values that are neither zero nor one.
    pub fn rest(&self) -> usize {
        self.rest.len()
    }

    /// Device bytes this vector takes once uploaded ([`GpuDevice::upload_ones_and_rest`]).
    pub fn device_bytes(&self) -> usize {
        Self::device_bytes_for(self.len, self.rest.len())
    }

    /// Device bytes a vector of `len` scalars with `rest` values neither zero nor one takes.
    pub fn device_bytes_for(len: usize, rest: usize) -> usize {
        len.div_ceil(64) * 8 + rest * (4 + 32)
    }

    /// The scalars written out.
    pub fn to_scalars(&self) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = (0..self.len)
            .map(|i| {
                if self.ones[i / 64] >> (i % 64) & 1 == 1 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                }
            })
            .collect();
        for (&at, v) in self.rest_at.iter().zip(&self.rest) {
            out[at as usize] = *v;
        }
        out
    }
}

fn too_long(op: &'static str) -> Error {
    Error::Unsupported {
        op,
        detail: "more than 2^32 - 1 scalars".into(),
    }
}

/// An [`OnesAndRest`] on the device, with its list's positions also kept on the host (to
/// find the part of the list that falls in a range without reading the device).
///
/// Invariant: that of [`OnesAndRest`], for the device buffers and the host positions alike
/// (they are copies of one vector's); buffers are `None` exactly when they would be empty.
#[derive(Debug)]
pub struct DeviceOnesAndRest {
    len: usize,
    ones: Option<DeviceBuffer<u64>>,
    rest_at_host: Vec<u32>,
    rest: Option<(DeviceBuffer<u32>, DeviceBuffer<Scalar>)>,
}

impl DeviceOnesAndRest {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no scalars.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Device bytes held.
    pub fn num_bytes(&self) -> usize {
        OnesAndRest::device_bytes_for(self.len, self.rest_at_host.len())
    }

    /// Number of values neither zero nor one.
    pub fn rest_count(&self) -> usize {
        self.rest_at_host.len()
    }

    /// The bitmap of the ones (`ceil(len / 64)` words; `None` when there are no scalars).
    pub(crate) fn ones_bitmap(&self) -> Option<&DeviceBuffer<u64>> {
        self.ones.as_ref()
    }

    /// The positions and the values of the other values (`None` when there are none).
    pub(crate) fn rest_parts(&self) -> Option<&(DeviceBuffer<u32>, DeviceBuffer<Scalar>)> {
        self.rest.as_ref()
    }

    /// The part of the list of other values that falls in `range`.
    pub(crate) fn rest_in(&self, range: &Range<usize>) -> Range<usize> {
        let lo = self
            .rest_at_host
            .partition_point(|&at| (at as usize) < range.start);
        let hi = self
            .rest_at_host
            .partition_point(|&at| (at as usize) < range.end);
        lo..hi
    }
}

impl GpuDevice {
    /// Copies `v` to the device (queued on the device's stream).
    pub fn upload_ones_and_rest(&self, v: OnesAndRest) -> Result<DeviceOnesAndRest> {
        self.upload_ones_and_rest_via(v, None)
    }

    /// As [`GpuDevice::upload_ones_and_rest`], through `staging`'s page-locked buffers where
    /// given: at the link's speed instead of the driver's pageable copies (about 8 GB/s; a
    /// PoRep partition's set is about 150 MB).
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = v.len, rest = v.rest.len(), staged = staging.is_some()))]
    pub fn upload_ones_and_rest_via(
        &self,
        v: OnesAndRest,
        mut staging: Option<&mut Staging>,
    ) -> Result<DeviceOnesAndRest> {
        let ones = if v.ones.is_empty() {
            None
        } else {
            Some(self.upload_maybe_staged(&v.ones, staging.as_deref_mut())?)
        };
        let rest = if v.rest.is_empty() {
            None
        } else {
            let at = self.upload_maybe_staged(&v.rest_at, staging.as_deref_mut())?;
            let values = self.upload_maybe_staged(&v.rest, staging)?;
            Some((at, values))
        };
        Ok(DeviceOnesAndRest {
            len: v.len,
            ones,
            rest_at_host: v.rest_at,
            rest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(n: usize) -> Vec<Scalar> {
        (0..n)
            .map(|i| match (i * 7 + i / 5) % 11 {
                0..=4 => Scalar::ZERO,
                5..=9 => Scalar::ONE,
                _ => Scalar::from(i as u64 + 2),
            })
            .collect()
    }

    #[test]
    fn classified_scalars_come_back_the_same() {
        for n in [0, 1, 63, 64, 65, 200, CLASSIFY_BLOCK + 77] {
            let s = mix(n);
            let v = OnesAndRest::classify(&s).unwrap();
            assert_eq!(v.len(), n);
            assert_eq!(v.to_scalars(), s, "n = {n}");
            let ones = s.iter().filter(|x| **x == Scalar::ONE).count();
            let zeros = s.iter().filter(|x| bool::from(x.is_zero())).count();
            assert_eq!((v.ones(), v.rest()), (ones, n - ones - zeros));
            assert_eq!(v.ones.len(), n.div_ceil(64));
        }
    }

    #[test]
    fn appending_at_any_offset_equals_classifying_the_whole() {
        let s = mix(300);
        for cut in [0, 1, 63, 64, 65, 130, 299, 300] {
            let mut a = OnesAndRest::classify(&s[..cut]).unwrap();
            a.append(OnesAndRest::classify(&s[cut..]).unwrap()).unwrap();
            assert_eq!(a, OnesAndRest::classify(&s).unwrap(), "cut at {cut}");
        }
        // pushed one by one, too
        let mut p = OnesAndRest::new();
        for x in &s {
            p.push(x).unwrap();
        }
        assert_eq!(p, OnesAndRest::classify(&s).unwrap());
    }

    #[test]
    fn device_bytes_count_the_bitmap_and_the_list() {
        let v = OnesAndRest::classify(&mix(130)).unwrap();
        assert_eq!(v.device_bytes(), 3 * 8 + v.rest() * 36);
        assert_eq!(OnesAndRest::device_bytes_for(0, 0), 0);
    }
}
