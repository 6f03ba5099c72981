//! A circuit's density masks on a device: which aux values the A and B queries take.
//!
//! The masks come from the circuit's structure, not from the witness, so every partition of
//! a circuit has the same ones. Counting, prefixing and copying them (two bitmaps of
//! `aux / 64` words, 24 MB each for PoRep 32 GiB) took 16-29 ms a query while the device
//! waited; [`QueryMasks`] does it once per circuit and device, and a partition only checks,
//! on a host thread beside its first kernels, that its masks are the same words.

use cuzk_kernels::{DeviceBitmap, GpuDevice};

/// The A and B aux masks of one circuit on one device, with the host words they were made
/// from. Invariant: `a` and `b` hold exactly `a_words` and `b_words` (with their prefix
/// counts), each covering the same number of elements (the circuit's aux count).
#[derive(Debug)]
pub struct QueryMasks {
    a_words: Vec<u64>,
    b_words: Vec<u64>,
    a: DeviceBitmap,
    b: DeviceBitmap,
}

impl QueryMasks {
    /// Checks, counts and copies both masks (words covering exactly `aux` elements, see
    /// [`cuzk_kernels::compact`]) to `dev`, queued on its stream.
    pub fn upload(
        dev: &GpuDevice,
        a_words: &[u64],
        b_words: &[u64],
        aux: usize,
    ) -> cuzk_kernels::Result<Self> {
        Ok(QueryMasks {
            a: dev.upload_bitmap(a_words, aux)?,
            b: dev.upload_bitmap(b_words, aux)?,
            a_words: a_words.to_vec(),
            b_words: b_words.to_vec(),
        })
    }

    /// Whether these are the masks `a_words` and `b_words` over `aux` elements: a
    /// comparison of every word (about 2 ms for PoRep 32 GiB), so a changed circuit is never
    /// proved with stale masks.
    pub fn matches(&self, a_words: &[u64], b_words: &[u64], aux: usize) -> bool {
        self.a.len() == aux && self.a_words == a_words && self.b_words == b_words
    }

    /// The A query's mask on the device.
    pub fn a(&self) -> &DeviceBitmap {
        &self.a
    }

    /// The B query's mask on the device.
    pub fn b(&self) -> &DeviceBitmap {
        &self.b
    }

    /// Device bytes held.
    pub fn num_bytes(&self) -> u64 {
        (self.a.num_bytes() + self.b.num_bytes()) as u64
    }

    /// Device bytes the masks of a circuit with `aux` aux variables hold.
    pub fn bytes_for(aux: usize) -> u64 {
        2 * DeviceBitmap::bytes_for(aux) as u64
    }
}
