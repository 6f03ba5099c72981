//! Compaction of device scalar vectors by a bitmap: the k-th selected element of `src`
//! becomes element `at + k` of `dst`. Groth16's A and B queries pair the aux values whose
//! density bit is set with consecutive bases; this builds those scalar lists on the device.
//!
//! A bitmap is given as little-endian 64-bit words: element `i` is selected when bit
//! `i % 64` of word `i / 64` is set (the layout of `cuzk_pce::Density`).

use blstrs::Scalar;
use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::compile::NTT;
use crate::device::{DeviceBuffer, GpuDevice};
use crate::error::{Error, Result};

/// Exclusive prefix counts of set bits: `out[w]` = set bits in `words[..w]`.
///
/// Errors when the total does not fit in `u32` (the kernel indexes with 32 bits).
pub fn bitmap_prefix(words: &[u64]) -> Result<Vec<u32>> {
    let mut out = Vec::with_capacity(words.len());
    let mut total = 0u64;
    for w in words {
        out.push(u32::try_from(total).map_err(|_| too_long("bitmap_prefix"))?);
        total += u64::from(w.count_ones());
    }
    u32::try_from(total).map_err(|_| too_long("bitmap_prefix"))?;
    Ok(out)
}

fn too_long(op: &'static str) -> Error {
    Error::Unsupported {
        op,
        detail: "more than 2^32 - 1 elements".into(),
    }
}

/// Checks that `words` covers exactly `n` elements (`ceil(n / 64)` words, no bit set at or
/// past `n`) and returns the number of set bits.
pub fn bitmap_count(words: &[u64], n: usize) -> Result<usize> {
    if words.len() != n.div_ceil(64) {
        return Err(Error::Length {
            op: "fr_compact (bitmap words)",
            expected: n.div_ceil(64),
            got: words.len(),
        });
    }
    if let Some(last) = words.last() {
        let used = n - (words.len() - 1) * 64;
        if used < 64 && last >> used != 0 {
            return Err(Error::Unsupported {
                op: "fr_compact",
                detail: format!("bitmap has bits set past its {n} elements"),
            });
        }
    }
    Ok(words.iter().map(|w| w.count_ones() as usize).sum())
}

/// A bitmap (see the module doc) on the device, with the exclusive prefix counts of its
/// words: what [`GpuDevice::fr_compact_by`] reads. A circuit's density masks do not depend
/// on the witness, so a prover makes one per circuit and device and reuses it for every
/// partition, instead of counting, prefixing and copying megabytes for each.
///
/// Invariant: the words cover exactly `n` elements (none set at or past `n`), `count` of
/// them set, and the prefix counts are those of the words; both are on the device (exactly
/// [`DeviceBitmap::bytes_for`] `n` bytes) unless `n` is 0.
#[derive(Debug)]
pub struct DeviceBitmap {
    n: usize,
    count: usize,
    on_device: Option<(DeviceBuffer<u64>, DeviceBuffer<u32>)>,
}

impl DeviceBitmap {
    /// Elements covered.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it covers no element.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Elements selected (set bits).
    pub fn count(&self) -> usize {
        self.count
    }

    /// Device bytes held: the words and their prefix counts.
    pub fn num_bytes(&self) -> usize {
        self.on_device
            .as_ref()
            .map_or(0, |(w, p)| w.len() * 8 + p.len() * 4)
    }

    /// Device bytes a bitmap of `n` elements holds.
    pub fn bytes_for(n: usize) -> usize {
        n.div_ceil(64) * (8 + 4)
    }
}

impl GpuDevice {
    /// Checks that `words` covers exactly `n` elements (see [`bitmap_count`]), counts it,
    /// prefixes it and copies both to the device (queued on the device's stream).
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n))]
    pub fn upload_bitmap(&self, words: &[u64], n: usize) -> Result<DeviceBitmap> {
        let count = bitmap_count(words, n)?;
        u32::try_from(n).map_err(|_| too_long("upload_bitmap"))?;
        let on_device = if n == 0 {
            None
        } else {
            let prefix = bitmap_prefix(words)?;
            Some((self.upload(words)?, self.upload(&prefix)?))
        };
        Ok(DeviceBitmap {
            n,
            count,
            on_device,
        })
    }

    /// Writes the elements of `src` selected by `bitmap`, in order, to `dst[at ..]`, and
    /// returns how many were written. `bitmap` must cover exactly `src.len()` elements and
    /// `dst` must have room for all selected ones; the rest of `dst` is untouched. Queued on
    /// the device's stream; `bitmap` must have been made on this stream (or be complete).
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = src.len(), at))]
    pub fn fr_compact_by(
        &self,
        src: &DeviceBuffer<Scalar>,
        bitmap: &DeviceBitmap,
        dst: &mut DeviceBuffer<Scalar>,
        at: usize,
    ) -> Result<usize> {
        if bitmap.n != src.len() {
            return Err(Error::Length {
                op: "fr_compact (bitmap elements)",
                expected: src.len(),
                got: bitmap.n,
            });
        }
        let count = bitmap.count;
        let end = at
            .checked_add(count)
            .filter(|&end| end <= dst.len())
            .ok_or(Error::Length {
                op: "fr_compact (destination)",
                expected: at.saturating_add(count),
                got: dst.len(),
            })?;
        let Some((dwords, dprefix)) = bitmap.on_device.as_ref().filter(|_| count > 0) else {
            return Ok(0); // nothing selected
        };
        let n = u32::try_from(src.len()).map_err(|_| too_long("fr_compact"))?;
        let f = self.function(&NTT, "fr_compact")?;
        let mut out = dst.inner.slice_mut(at..end);
        let mut l = self.stream().launch_builder(&f);
        l.arg(&src.inner)
            .arg(&n)
            .arg(&dwords.inner)
            .arg(&dprefix.inner)
            .arg(&mut out);
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: fr_compact(const Fr* src[n], u32 n, const u64* words[ceil(n/64)],
        // const u32* prefix[ceil(n/64)], Fr* dst[count]): the bitmap's invariant says its
        // words cover exactly n = src.len() elements with count set and prefix their prefix
        // counts, so every index written is < count = out.len().
        unsafe { l.launch(cfg) }.map_err(self.drv("launching fr_compact"))?;
        Ok(count)
    }

    /// [`GpuDevice::fr_compact_by`] with a bitmap given as host words (see the module doc),
    /// uploaded for this one call: for one-off compactions. `words` must cover exactly
    /// `src.len()` elements.
    pub fn fr_compact(
        &self,
        src: &DeviceBuffer<Scalar>,
        words: &[u64],
        dst: &mut DeviceBuffer<Scalar>,
        at: usize,
    ) -> Result<usize> {
        let bitmap = self.upload_bitmap(words, src.len())?;
        self.fr_compact_by(src, &bitmap, dst, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_counts_bits_before_each_word() {
        let words = [0b1011u64, 0, u64::MAX, 1 << 63];
        assert_eq!(bitmap_prefix(&words).unwrap(), vec![0, 3, 3, 67]);
        assert!(bitmap_prefix(&[]).unwrap().is_empty());
    }

    #[test]
    fn count_checks_the_cover() {
        assert_eq!(bitmap_count(&[0b101], 3).unwrap(), 2);
        assert_eq!(bitmap_count(&[u64::MAX, 1], 65).unwrap(), 65);
        assert_eq!(bitmap_count(&[], 0).unwrap(), 0);
        assert!(bitmap_count(&[0b1000], 3).is_err(), "bit past the end");
        assert!(bitmap_count(&[1, 0], 64).is_err(), "one word too many");
        assert!(bitmap_count(&[1], 65).is_err(), "one word too few");
        assert_eq!(bitmap_count(&[u64::MAX], 64).unwrap(), 64);
    }

    #[test]
    fn bitmap_bytes_cover_words_and_prefix() {
        assert_eq!(DeviceBitmap::bytes_for(0), 0);
        assert_eq!(DeviceBitmap::bytes_for(1), 12);
        assert_eq!(DeviceBitmap::bytes_for(64), 12);
        assert_eq!(DeviceBitmap::bytes_for(65), 24);
    }
}
