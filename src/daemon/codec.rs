//! The gRPC codec: prost's, with a scan of each incoming message's wire format first.
//!
//! The transport bounds a message's size, but not what decoding it allocates: 256 MiB of
//! one-byte `repeated bytes` entries would decode into ~128 million vectors (gigabytes of
//! headers). Before decoding, every message is scanned (top level, and `ProveRequest.submit`
//! inside it) and refused with `INVALID_ARGUMENT`
//! when a field repeats more often than [`max_repeated`] allows, or when it is not
//! well-formed protobuf.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bytes::Buf;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::Status;
use tonic_prost::{ProstDecoder, ProstEncoder};

static MAX_REPEATED: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_REPEATED);
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// Messages refused by the scan since start (metrics: `requests_rejected_total{reason="wire_scan"}`).
pub fn refused() -> u64 {
    REFUSED.load(Ordering::Relaxed)
}

fn refuse(message: String) -> Status {
    REFUSED.fetch_add(1, Ordering::Relaxed);
    tracing::info!(%message, "message refused before decoding");
    Status::invalid_argument(message)
}

/// Entries of one field in one message at most, unless configured otherwise.
pub const DEFAULT_MAX_REPEATED: usize = 20_001;

/// The repeat limit incoming messages are held to.
pub fn max_repeated() -> usize {
    MAX_REPEATED.load(Ordering::Relaxed)
}

/// Sets the repeat limit (the daemon sets it from `limits.max_vanilla_proofs` at start;
/// one process serves one configuration).
pub fn set_max_repeated(n: usize) {
    MAX_REPEATED.store(n.max(1), Ordering::Relaxed);
}

/// prost's codec with the scan above on decoding.
#[derive(Debug, Clone)]
pub struct BoundedCodec<T, U> {
    _pd: std::marker::PhantomData<(T, U)>,
}

impl<T, U> Default for BoundedCodec<T, U> {
    fn default() -> Self {
        BoundedCodec {
            _pd: std::marker::PhantomData,
        }
    }
}

impl<T, U> Codec for BoundedCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = BoundedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::new(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        BoundedDecoder {
            inner: ProstDecoder::new(BufferSettings::default()),
        }
    }
}

/// Scans, then decodes with prost.
#[derive(Debug)]
pub struct BoundedDecoder<U> {
    inner: ProstDecoder<U>,
}

impl<U: prost::Message + Default> Decoder for BoundedDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        let limit = max_repeated();
        if buf.chunk().len() != buf.remaining() {
            // Not contiguous (not seen with tonic's buffers): scan a copy, decode the copy.
            let mut copy = vec![0u8; buf.remaining()];
            buf.copy_to_slice(&mut copy);
            scan(&copy, 0, limit).map_err(refuse)?;
            return U::decode(copy.as_slice())
                .map(Some)
                .map_err(|e| Status::internal(e.to_string()));
        }
        scan(buf.chunk(), 0, limit).map_err(refuse)?;
        self.inner.decode(buf)
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}

fn varint(b: &[u8], i: &mut usize) -> Result<u64, String> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i).ok_or("truncated varint")?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes".into())
}

/// Checks one message's fields: well-formed, and no field number more than `limit` times.
/// A top-level field 1 that is length-delimited is scanned as an embedded message too when
/// it parses as one (`ProveRequest.submit`; in the other messages field 1 is a short
/// string, left alone when it does not parse).
fn scan(b: &[u8], depth: u32, limit: usize) -> Result<(), String> {
    let mut counts: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let (field, wire) = (key >> 3, key & 7);
        if field == 0 {
            return Err("malformed message: field number 0".into());
        }
        let n = counts.entry(field).or_default();
        *n += 1;
        if *n > limit {
            return Err(format!(
                "field {field} repeats more than {limit} times in one message (limits.max_vanilla_proofs)"
            ));
        }
        match wire {
            0 => {
                varint(b, &mut i)?;
            }
            1 => i += 8,
            5 => i += 4,
            2 => {
                let len = usize::try_from(varint(b, &mut i)?).map_err(|_| "length overflows")?;
                let end = i.checked_add(len).ok_or("length overflows")?;
                let inner = b
                    .get(i..end)
                    .ok_or("malformed message: a field runs past its end")?;
                if depth == 0 && field == 1 && looks_like_message(inner) {
                    scan(inner, depth + 1, limit)?;
                }
                i = end;
            }
            _ => {
                return Err(format!(
                    "malformed message: wire type {wire} is not used by cuzk.v1"
                ))
            }
        }
        if i > b.len() {
            return Err("malformed message: truncated".into());
        }
    }
    Ok(())
}

/// Whether `b` parses as a sequence of protobuf fields (a cheap pre-check before
/// counting its fields).
fn looks_like_message(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        let Ok(key) = varint(b, &mut i) else {
            return false;
        };
        if key >> 3 == 0 {
            return false;
        }
        let ok = match key & 7 {
            0 => varint(b, &mut i).is_ok(),
            1 => {
                i += 8;
                true
            }
            5 => {
                i += 4;
                true
            }
            2 => match varint(b, &mut i) {
                Ok(len) => match usize::try_from(len).ok().and_then(|l| i.checked_add(l)) {
                    Some(end) => {
                        i = end;
                        true
                    }
                    None => false,
                },
                Err(_) => false,
            },
            _ => false,
        };
        if !ok || i > b.len() {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::super::proto as pb;
    use super::*;

    #[test]
    fn counts_repeated_fields_at_the_top_and_inside_prove() {
        let req = pb::SubmitProofRequest {
            vanilla_proofs: vec![vec![1]; 30],
            ..Default::default()
        };
        let top = req.encode_to_vec();
        assert!(scan(&top, 0, 30).is_ok());
        let e = scan(&top, 0, 29).unwrap_err();
        assert!(e.contains("field 11 repeats more than 29"), "{e}");
        let prove = pb::ProveRequest { submit: Some(req) }.encode_to_vec();
        assert!(scan(&prove, 0, 30).is_ok());
        assert!(scan(&prove, 0, 29).is_err());
    }

    #[test]
    fn malformed_bytes_are_refused_not_decoded() {
        for junk in [
            &[0xffu8, 0xff, 0xff][..],
            &[0x0a, 0x80],
            &[0x0b],
            &[0x00, 0x01],
        ] {
            assert!(scan(junk, 0, 10).is_err(), "{junk:?}");
        }
        // A string field whose bytes are not a message is fine.
        let s = pb::AwaitProofRequest {
            job_id: "\u{7f}\u{7f}".into(),
            timeout_ms: 1,
        };
        assert!(scan(&s.encode_to_vec(), 0, 1).is_ok());
    }
}
