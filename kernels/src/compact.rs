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

impl GpuDevice {
    /// Writes the elements of `src` selected by `words` (see the module doc), in order, to
    /// `dst[at ..]`, and returns how many were written. `words` must cover exactly
    /// `src.len()` elements and `dst` must have room for all selected ones; the rest of
    /// `dst` is untouched. Queued on the device's stream.
    #[tracing::instrument(skip_all, fields(pci = %self.pci_id(), n = src.len(), at))]
    pub fn fr_compact(
        &self,
        src: &DeviceBuffer<Scalar>,
        words: &[u64],
        dst: &mut DeviceBuffer<Scalar>,
        at: usize,
    ) -> Result<usize> {
        let count = bitmap_count(words, src.len())?;
        let n = u32::try_from(src.len()).map_err(|_| too_long("fr_compact"))?;
        let end = at
            .checked_add(count)
            .filter(|&end| end <= dst.len())
            .ok_or(Error::Length {
                op: "fr_compact (destination)",
                expected: at.saturating_add(count),
                got: dst.len(),
            })?;
        if count == 0 {
            return Ok(0);
        }
        let prefix = bitmap_prefix(words)?;
        let dwords = self.upload(words)?;
        let dprefix = self.upload(&prefix)?;
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
        // const u32* prefix[ceil(n/64)], Fr* dst[count]): bitmap_count checked the word count
        // and that no bit is set past n, so every index written is < count = out.len().
        unsafe { l.launch(cfg) }.map_err(self.drv("launching fr_compact"))?;
        Ok(count)
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
}
