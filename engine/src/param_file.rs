//! Reading a Groth16 parameter file (bellperson's format: the verifying key, then the h, l,
//! a, b_g1 and b_g2 queries, each a big-endian u32 count and that many uncompressed points)
//! with the points decoded on every core.
//!
//! bellperson's `Parameters::read` decodes one point after another: 178 s for the 44 GiB
//! 32 GiB PoRep file on a 16-core host, nearly all of it converting coordinates into
//! Montgomery form. Here the file is read in chunks while the previous chunk's points are
//! decoded in parallel. The result equals bellperson's `read(_, false)` (no subgroup check),
//! and the same files are refused: a coordinate out of range or a point at infinity is
//! `InvalidData`, a short file `UnexpectedEof`.

use std::io::{self, Read};
use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

/// Points read and decoded per step: 2^20 G1 points are 96 MiB of file.
const CHUNK_POINTS: usize = 1 << 20;

/// Reads parameters as bellperson's `Parameters::read(reader, false)` does.
pub fn read_parameters<R: Read + Send>(reader: &mut R) -> io::Result<Parameters<Bls12>> {
    let vk = VerifyingKey::<Bls12>::read(&mut *reader)?;
    let h = read_query::<G1Affine, R>(reader)?;
    let l = read_query::<G1Affine, R>(reader)?;
    let a = read_query::<G1Affine, R>(reader)?;
    let b_g1 = read_query::<G1Affine, R>(reader)?;
    let b_g2 = read_query::<G2Affine, R>(reader)?;
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(a),
        b_g1: Arc::new(b_g1),
        b_g2: Arc::new(b_g2),
    })
}

/// One query: its count, then its points, each chunk decoded while the next is read.
fn read_query<A, R: Read + Send>(reader: &mut R) -> io::Result<Vec<A>>
where
    A: UncompressedEncoding + PrimeCurveAffine + Send + Sync,
{
    let mut count = [0u8; 4];
    reader.read_exact(&mut count)?;
    let len = u32::from_be_bytes(count) as usize;
    let width = std::mem::size_of::<A::Uncompressed>();
    let mut out = Vec::with_capacity(len);
    let mut next = vec![0u8; len.min(CHUNK_POINTS) * width];
    let mut current = vec![0u8; next.len()];
    let mut left = len;
    let mut pending = 0; // points in `current` not decoded yet
    loop {
        let take = left.min(CHUNK_POINTS);
        let (read, decoded) = rayon::join(
            || reader.read_exact(&mut next[..take * width]),
            || decode::<A>(&current[..pending * width], width),
        );
        out.extend(decoded?);
        read?;
        if take == 0 {
            break;
        }
        left -= take;
        pending = take;
        std::mem::swap(&mut current, &mut next);
    }
    Ok(out)
}

/// Decodes uncompressed points in parallel, refusing those bellperson refuses.
fn decode<A>(bytes: &[u8], width: usize) -> io::Result<Vec<A>>
where
    A: UncompressedEncoding + PrimeCurveAffine + Send + Sync,
{
    bytes
        .par_chunks(width)
        .map(|b| {
            let mut repr = A::Uncompressed::default();
            repr.as_mut().copy_from_slice(b);
            let p: A = Option::from(A::from_uncompressed_unchecked(&repr))
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not on curve"))?;
            if bool::from(p.is_identity()) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "point at infinity",
                ));
            }
            Ok(p)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::synthetic::Shape;
    use crate::paramgen::generate_random_parameters;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn file() -> Vec<u8> {
        let shape = Shape {
            x: None,
            squarings: 300,
            inputs: 3,
            linear: 40,
        };
        let params = generate_random_parameters(shape, &mut ChaCha8Rng::seed_from_u64(3))
            .expect("parameters");
        let mut bytes = Vec::new();
        params.write(&mut bytes).expect("writes");
        bytes
    }

    fn refused(bytes: &[u8]) -> io::ErrorKind {
        match read_parameters(&mut &bytes[..]) {
            Ok(_) => panic!("read a bad file"),
            Err(e) => e.kind(),
        }
    }

    /// The parallel reader gives bellperson's parameters, and refuses what bellperson
    /// refuses with the same kind of error.
    #[test]
    fn reads_what_bellperson_reads_and_refuses_what_it_refuses() {
        let bytes = file();
        let ours = read_parameters(&mut bytes.as_slice()).expect("reads");
        let theirs = Parameters::<Bls12>::read(bytes.as_slice(), false).expect("reads");
        assert!(ours == theirs);
        assert!(!ours.h.is_empty() && !ours.b_g2.is_empty());

        let truncated = &bytes[..bytes.len() - 7];
        assert_eq!(refused(truncated), io::ErrorKind::UnexpectedEof);

        // the last point of b_g2 made the point at infinity (uncompressed: the flag bit)
        let mut inf = bytes.clone();
        let last = inf.len() - 192;
        inf[last..].fill(0);
        inf[last] = 0x40;
        assert_eq!(refused(&inf), io::ErrorKind::InvalidData);
        assert!(Parameters::<Bls12>::read(inf.as_slice(), false).is_err());

        // a coordinate above the field's modulus in the first point of h
        let vk_len = {
            let mut v = Vec::new();
            theirs.vk.write(&mut v).expect("vk");
            v.len()
        };
        let mut bad = bytes.clone();
        bad[vk_len + 4] = 0x1f; // top bits below the flags: x >= p
        bad[vk_len + 5..vk_len + 4 + 48].fill(0xff);
        assert_eq!(refused(&bad), io::ErrorKind::InvalidData);
        assert!(Parameters::<Bls12>::read(bad.as_slice(), false).is_err());
    }
}
