//! Coded uploads: a vector of Fr scalars crosses to the device as 2-bit codes (zero, one,
//! minus one, other) and the "other" values only, and the `fr_expand` kernel rebuilds it
//! there.
//!
//! Filecoin's assignments are mostly bits. In a PoRep or SnapDeals 2 KiB partition (measured
//! on the build machine with `cuzk gen` inputs), 67-73% of the A evaluations, 99% of B, 83-86%
//! of C and 98% of the aux values are 0, 1 or -1: about 11% of a partition's scalars need
//! their 32 bytes on the link, so the host writes about a ninth of the bytes into page-locked
//! memory and the link carries about a ninth of them. The host still reads every value once
//! (to classify it), on the staging buffers' threads.
//!
//! Layout: element `i`'s code is bits `2(i % 32)` and `2(i % 32) + 1` of `codes[i / 32]`
//! ([`ZERO`], [`ONE`], [`MINUS_ONE`], [`OTHER`]); `prefix[w]` counts the [`OTHER`] codes of
//! `codes[..w]`; `values` holds the [`OTHER`] elements in order.

use blstrs::Scalar;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use ff::Field;
use rayon::prelude::*;

use crate::compile::NTT;
use crate::device::{DeviceBuffer, GpuDevice};
use crate::error::{Error, Result};
use crate::layout::{DeviceElem, FrRaw};
use crate::staging::Staging;

/// Code of a zero.
pub const ZERO: u64 = 0;
/// Code of a one.
pub const ONE: u64 = 1;
/// Code of a minus one.
pub const MINUS_ONE: u64 = 2;
/// Code of any other value (its 32 bytes are in [`Coded::values`]).
pub const OTHER: u64 = 3;
/// Codes in one `u64` word.
pub const PER_WORD: usize = 32;
/// Elements one encoding task takes (a multiple of [`PER_WORD`]).
const BLOCK: usize = 1 << 15;

/// A vector coded for upload (see the module doc for the layout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coded {
    /// Elements of the vector.
    pub len: usize,
    /// 2-bit codes, 32 per word; unused codes of the last word are [`ZERO`].
    pub codes: Vec<u64>,
    /// [`OTHER`] codes before each word.
    pub prefix: Vec<u32>,
    /// The [`OTHER`] elements, in order.
    pub values: Vec<Scalar>,
}

fn raw(s: &Scalar) -> [u64; 4] {
    Scalar::as_raw(std::slice::from_ref(s))[0].0
}

fn code_of(x: &FrRaw, one: &FrRaw, minus_one: &FrRaw) -> u64 {
    if x.0 == [0; 4] {
        ZERO
    } else if x == one {
        ONE
    } else if x == minus_one {
        MINUS_ONE
    } else {
        OTHER
    }
}

/// Codes `v` on the calling rayon pool's threads. Errors when `v` has 2^32 elements or more
/// (the kernel indexes with 32 bits).
pub fn encode(v: &[Scalar]) -> Result<Coded> {
    if u32::try_from(v.len()).is_err() {
        return Err(Error::Unsupported {
            op: "coded upload",
            detail: format!("{} elements: more than 2^32 - 1", v.len()),
        });
    }
    let one = FrRaw(raw(&Scalar::ONE));
    let minus_one = FrRaw(raw(&-Scalar::ONE));
    let rawv = Scalar::as_raw(v);
    // each block: its code words and its other values
    let blocks: Vec<(Vec<u64>, Vec<Scalar>)> = rawv
        .par_chunks(BLOCK)
        .zip(v.par_chunks(BLOCK))
        .map(|(rb, vb)| {
            let mut codes = Vec::with_capacity(rb.len().div_ceil(PER_WORD));
            let mut others = Vec::new();
            for (rw, vw) in rb.chunks(PER_WORD).zip(vb.chunks(PER_WORD)) {
                let mut word = 0u64;
                for (j, (x, s)) in rw.iter().zip(vw).enumerate() {
                    let c = code_of(x, &one, &minus_one);
                    if c == OTHER {
                        others.push(*s);
                    }
                    word |= c << (2 * j);
                }
                codes.push(word);
            }
            (codes, others)
        })
        .collect();
    let words: usize = blocks.iter().map(|(c, _)| c.len()).sum();
    let total: usize = blocks.iter().map(|(_, o)| o.len()).sum();
    let mut codes = Vec::with_capacity(words);
    let mut prefix = Vec::with_capacity(words);
    let mut values = Vec::with_capacity(total);
    let mut count = 0u32;
    for (c, o) in &blocks {
        for w in c {
            prefix.push(count);
            count += (w & (w >> 1) & 0x5555_5555_5555_5555).count_ones();
        }
        codes.extend_from_slice(c);
        values.extend_from_slice(o);
    }
    Ok(Coded {
        len: v.len(),
        codes,
        prefix,
        values,
    })
}

/// The vector `c` codes, rebuilt on the host (the reference for `fr_expand`). Errors when
/// the codes, prefix counts and values do not agree.
pub fn decode(c: &Coded) -> Result<Vec<Scalar>> {
    let bad = |detail: String| Error::Unsupported {
        op: "decoding a coded vector",
        detail,
    };
    if c.codes.len() != c.len.div_ceil(PER_WORD) || c.prefix.len() != c.codes.len() {
        return Err(bad(format!(
            "{} codes words and {} prefix counts for {} elements",
            c.codes.len(),
            c.prefix.len(),
            c.len
        )));
    }
    let mut out = Vec::with_capacity(c.len);
    let mut next = 0usize;
    for i in 0..c.len {
        let (w, s) = (i / PER_WORD, 2 * (i % PER_WORD));
        if s == 0 && c.prefix[w] as usize != next {
            return Err(bad(format!(
                "prefix[{w}] = {}, counted {next}",
                c.prefix[w]
            )));
        }
        out.push(match (c.codes[w] >> s) & 3 {
            ZERO => Scalar::ZERO,
            ONE => Scalar::ONE,
            MINUS_ONE => -Scalar::ONE,
            _ => {
                let x = c.values.get(next).copied();
                next += 1;
                x.ok_or_else(|| bad(format!("too few values: {}", c.values.len())))?
            }
        });
    }
    if next != c.values.len() {
        return Err(bad(format!("{} values, {next} used", c.values.len())));
    }
    Ok(out)
}

/// Device buffers a coded upload goes through: vectors of up to `len` elements with at
/// most `values` [`OTHER`] elements. Allocated on the stream of the device handle that
/// makes it (see [`GpuDevice::coded_scratch`]); reused by every coded upload queued on one
/// stream, each after the previous one's expansion (stream order).
pub struct CodedScratch {
    len: usize,
    codes: DeviceBuffer<u64>,
    prefix: DeviceBuffer<u32>,
    values: DeviceBuffer<Scalar>,
}

impl CodedScratch {
    /// Device bytes held.
    pub fn num_bytes(&self) -> usize {
        self.codes.num_bytes() + self.prefix.num_bytes() + self.values.num_bytes()
    }

    /// Device bytes of a scratch for vectors of `len` elements with up to `values` others.
    pub fn bytes_for(len: usize, values: usize) -> u64 {
        let words = len.div_ceil(PER_WORD).max(1) as u64;
        words * 12 + values.max(1) as u64 * 32
    }
}

impl std::fmt::Debug for CodedScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CodedScratch[len {}, values {}]",
            self.len,
            self.values.len()
        )
    }
}

impl GpuDevice {
    /// Scratch for coded uploads of vectors of up to `len` elements with up to `values`
    /// [`OTHER`] elements, allocated on this handle's stream.
    pub fn coded_scratch(&self, len: usize, values: usize) -> Result<CodedScratch> {
        let words = len.div_ceil(PER_WORD).max(1);
        Ok(CodedScratch {
            len,
            codes: self.alloc_uninit(words)?,
            prefix: self.alloc_uninit(words)?,
            values: self.alloc_uninit(values.max(1))?,
        })
    }

    /// Copies `host` into `dst[..host.len()]` (the rest of `dst` untouched), coded when that
    /// fits `scratch` and saves bytes, else through `staging` as it is. Queued on this
    /// handle's stream; `host` may be reused as soon as this returns. Returns the bytes that
    /// crossed to the device (32 per element when not coded). The encoding runs on the
    /// staging buffers' threads.
    pub fn copy_to_device_coded(
        &self,
        staging: &mut Staging,
        scratch: &mut CodedScratch,
        host: &[Scalar],
        dst: &mut DeviceBuffer<Scalar>,
    ) -> Result<usize> {
        let n = host.len();
        if n > dst.len() {
            return Err(Error::Length {
                op: "copy_to_device_coded",
                expected: dst.len(),
                got: n,
            });
        }
        if n == 0 || n > scratch.len {
            self.copy_to_device_staged(staging, host, dst, 0)?;
            return Ok(n * 32);
        }
        let coded = staging.install(|| encode(host))?;
        // coded bytes: values, codes and prefix counts, against 32 per element
        let coded_bytes = coded.values.len() * 32 + coded.codes.len() * 12;
        if coded.values.len() > scratch.values.len() || coded_bytes >= n * 32 {
            self.copy_to_device_staged(staging, host, dst, 0)?;
            return Ok(n * 32);
        }
        self.copy_to_device_staged(staging, &coded.codes, &mut scratch.codes, 0)?;
        self.copy_to_device_staged(staging, &coded.prefix, &mut scratch.prefix, 0)?;
        if !coded.values.is_empty() {
            self.copy_to_device_staged(staging, &coded.values, &mut scratch.values, 0)?;
        }
        let f = self.function(&NTT, "fr_expand")?;
        let n32 = n as u32; // encode checked n < 2^32
        let mut out = dst.inner.slice_mut(0..n);
        let mut l = self.stream().launch_builder(&f);
        l.arg(&scratch.codes.inner)
            .arg(&scratch.prefix.inner)
            .arg(&scratch.values.inner)
            .arg(&n32)
            .arg(&mut out);
        let cfg = LaunchConfig {
            grid_dim: (n32.div_ceil(256), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: fr_expand(const u64* codes[ceil(n/32)], const u32* prefix[ceil(n/32)],
        // const Fr* values[k], u32 n, Fr* out[n]): the scratch holds at least ceil(n/32) words
        // (n <= scratch.len) and k = coded.values.len() <= its values; encode made the prefix
        // counts of exactly those codes, so every value index read is < k; out has n elements.
        unsafe { l.launch(cfg) }.map_err(self.drv("launching fr_expand"))?;
        Ok(coded_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn mixed(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|i| match (i * 7 + seed as usize) % 5 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                2 => -Scalar::ONE,
                3 => Scalar::from(2u64),
                _ => Scalar::random(&mut rng),
            })
            .collect()
    }

    #[test]
    fn codes_round_trip_at_every_boundary() {
        for n in [
            0usize,
            1,
            31,
            32,
            33,
            64,
            1000,
            BLOCK - 1,
            BLOCK,
            BLOCK + 33,
            3 * BLOCK + 5,
        ] {
            let v = mixed(n, n as u64);
            let c = encode(&v).unwrap();
            assert_eq!(c.len, n);
            assert_eq!(c.codes.len(), n.div_ceil(32));
            assert_eq!(decode(&c).unwrap(), v, "n={n}");
            let others = v
                .iter()
                .filter(|x| **x != Scalar::ZERO && **x != Scalar::ONE && **x != -Scalar::ONE)
                .count();
            assert_eq!(c.values.len(), others, "n={n}");
        }
    }

    #[test]
    fn codes_name_each_class() {
        let v = [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(5u64),
            Scalar::ONE,
        ];
        let c = encode(&v).unwrap();
        assert_eq!(
            c.codes,
            vec![ZERO | ONE << 2 | MINUS_ONE << 4 | OTHER << 6 | ONE << 8]
        );
        assert_eq!(c.prefix, vec![0]);
        assert_eq!(c.values, vec![Scalar::from(5u64)]);
        // all others and none
        let all = encode(&[Scalar::from(9u64); 40]).unwrap();
        assert_eq!(all.prefix, vec![0, 32]);
        assert_eq!(all.values.len(), 40);
        assert!(encode(&[Scalar::ZERO; 70]).unwrap().values.is_empty());
    }

    #[test]
    fn decode_refuses_codes_that_do_not_add_up() {
        let v = mixed(100, 3);
        let good = encode(&v).unwrap();
        let mut short = good.clone();
        short.values.pop();
        assert!(decode(&short).is_err());
        let mut extra = good.clone();
        extra.values.push(Scalar::ONE);
        assert!(decode(&extra).is_err());
        let mut prefix = good.clone();
        prefix.prefix[1] += 1;
        assert!(decode(&prefix).is_err());
        let mut words = good;
        words.codes.pop();
        assert!(decode(&words).is_err());
    }
}
