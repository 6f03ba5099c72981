//! The on-disk format of a recorded circuit.
//!
//! ```text
//! magic "CUZKPCE\0" | version u32 | identity length u32 | identity bytes
//! | num_inputs u64 | num_aux u64 | rows u64 | nnz_a u64 | nnz_b u64 | nnz_c u64 | coeffs u64
//! | blake3(body) [32] | body
//! body = coeffs (32-byte little-endian canonical each)
//!        | for A, B, C: row_ptr (rows+1 u32) | cols (nnz u32) | coeff_idx (nnz u32)
//! ```
//!
//! All integers little-endian. The identity names the circuit (kind, sector size, parameter
//! identifier) so a file of another circuit is refused; the checksum catches corruption; the
//! structure is validated after parsing so that even a well-checksummed bad file cannot make
//! evaluation index out of bounds. Files are written to a temporary name and renamed.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use blstrs::Scalar;
use ff::PrimeField;

use crate::error::{Error, Result};
use crate::r1cs::{densities, Csr, R1cs};

/// File magic.
pub const MAGIC: &[u8; 8] = b"CUZKPCE\0";
/// Current format version; bump on any layout change.
pub const VERSION: u32 = 1;

fn put_u32s(out: &mut Vec<u8>, v: &[u32]) {
    out.reserve(v.len() * 4);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Serialises `r1cs` under `identity`.
pub fn encode(r1cs: &R1cs, identity: &str) -> Vec<u8> {
    let mut body =
        Vec::with_capacity(r1cs.coeffs.len() * 32 + r1cs.nnz() * 8 + r1cs.num_constraints() * 12);
    for c in &r1cs.coeffs {
        body.extend_from_slice(&c.to_repr());
    }
    for m in [&r1cs.a, &r1cs.b, &r1cs.c] {
        put_u32s(&mut body, &m.row_ptr);
        put_u32s(&mut body, &m.cols);
        put_u32s(&mut body, &m.coeff_idx);
    }
    let mut out = Vec::with_capacity(body.len() + 128 + identity.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(identity.len() as u32).to_le_bytes());
    out.extend_from_slice(identity.as_bytes());
    for v in [
        r1cs.num_inputs,
        r1cs.num_aux,
        r1cs.num_constraints(),
        r1cs.a.nnz(),
        r1cs.b.nnz(),
        r1cs.c.nnz(),
        r1cs.coeffs.len(),
    ] {
        out.extend_from_slice(&(v as u64).to_le_bytes());
    }
    out.extend_from_slice(blake3::hash(&body).as_bytes());
    out.extend_from_slice(&body);
    out
}

/// Writes `r1cs` to `path` atomically (temporary file, fsync, rename).
pub fn save(path: &Path, r1cs: &R1cs, identity: &str) -> Result<()> {
    let err = |e: std::io::Error| Error::Cache {
        path: path.into(),
        reason: format!("cannot write: {e}"),
    };
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(err)?;
    }
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let res = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(&encode(r1cs, identity))?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = res {
        let _ = fs::remove_file(&tmp);
        return Err(err(e));
    }
    Ok(())
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Option<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_le_bytes(a))
    }
    fn u32s(&mut self, n: usize) -> Option<Vec<u32>> {
        let b = self.take(n.checked_mul(4)?)?;
        Some(
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }
}

/// Parses a file's bytes, checking magic, version, identity, size, checksum and structure.
pub fn decode(bytes: &[u8], identity: &str, path: &Path) -> Result<R1cs> {
    let bad = |reason: String| Error::Cache {
        path: path.into(),
        reason,
    };
    let truncated = || bad(format!("truncated ({} bytes)", bytes.len()));
    let mut r = Reader { buf: bytes, pos: 0 };
    if r.take(8).ok_or_else(truncated)? != MAGIC {
        return Err(bad("not a cuzk PCE file (bad magic)".into()));
    }
    let version = r.u32().ok_or_else(truncated)?;
    if version != VERSION {
        return Err(bad(format!(
            "format version {version}, this build reads {VERSION}"
        )));
    }
    let id_len = r.u32().ok_or_else(truncated)? as usize;
    let id = r.take(id_len).ok_or_else(truncated)?;
    if id != identity.as_bytes() {
        return Err(bad(format!(
            "recorded for another circuit ({:?}, expected {identity:?})",
            String::from_utf8_lossy(id)
        )));
    }
    let mut dims = [0usize; 7];
    for d in &mut dims {
        *d = usize::try_from(r.u64().ok_or_else(truncated)?)
            .map_err(|_| bad("dimension overflow".into()))?;
    }
    let [num_inputs, num_aux, rows, nnz_a, nnz_b, nnz_c, n_coeffs] = dims;
    let checksum = r.take(32).ok_or_else(truncated)?;
    let body = &bytes[r.pos..];
    let expect = n_coeffs
        .checked_mul(32)
        .and_then(|x| x.checked_add(3usize.checked_mul(rows.checked_add(1)?)?.checked_mul(4)?))
        .and_then(|x| {
            x.checked_add((nnz_a.checked_add(nnz_b)?.checked_add(nnz_c)?).checked_mul(8)?)
        })
        .ok_or_else(|| bad("dimension overflow".into()))?;
    if body.len() != expect {
        return Err(bad(format!(
            "truncated or padded: body has {} bytes, header says {expect}",
            body.len()
        )));
    }
    if blake3::hash(body).as_bytes() != checksum {
        return Err(bad("checksum mismatch: the file is corrupt".into()));
    }
    let mut coeffs = Vec::with_capacity(n_coeffs);
    for _ in 0..n_coeffs {
        let b = r.take(32).ok_or_else(truncated)?;
        let mut repr = [0u8; 32];
        repr.copy_from_slice(b);
        coeffs.push(
            Option::from(Scalar::from_repr(repr))
                .ok_or_else(|| bad("a coefficient is not a field element".into()))?,
        );
    }
    let cols_total = (num_inputs + num_aux) as u64;
    let mut mats = Vec::with_capacity(3);
    for nnz in [nnz_a, nnz_b, nnz_c] {
        let m = Csr {
            row_ptr: r.u32s(rows + 1).ok_or_else(truncated)?,
            cols: r.u32s(nnz).ok_or_else(truncated)?,
            coeff_idx: r.u32s(nnz).ok_or_else(truncated)?,
        };
        let ok_ptr = m.row_ptr.first() == Some(&0)
            && m.row_ptr.last().map(|&x| x as usize) == Some(nnz)
            && m.row_ptr.windows(2).all(|w| w[0] <= w[1]);
        let ok_cols = m.cols.iter().all(|&c| (c as u64) < cols_total);
        let ok_coeffs = m.coeff_idx.iter().all(|&c| (c as usize) < n_coeffs);
        if !(ok_ptr && ok_cols && ok_coeffs) {
            return Err(bad(
                "structure is inconsistent (row pointers, columns or coefficients out of range)"
                    .into(),
            ));
        }
        mats.push(m);
    }
    let c = mats.pop().unwrap_or_default();
    let b = mats.pop().unwrap_or_default();
    let a = mats.pop().unwrap_or_default();
    let (a_aux_density, b_input_density, b_aux_density) = densities(&a, &b, num_inputs, num_aux);
    Ok(R1cs {
        num_inputs,
        num_aux,
        a,
        b,
        c,
        coeffs,
        a_aux_density,
        b_input_density,
        b_aux_density,
    })
}

/// Loads and checks `path`.
pub fn load(path: &Path, identity: &str) -> Result<R1cs> {
    let bytes = fs::read(path).map_err(|e| Error::Cache {
        path: path.into(),
        reason: format!("cannot read: {e}"),
    })?;
    decode(&bytes, identity, path)
}
