//! Decoding a request's vanilla proofs and commitments, with errors that name what failed.

use crate::error::{Error, Result};

/// Decodes each bincode-encoded vanilla proof of a list, naming the failing one.
pub(crate) fn decode_each<T: serde::de::DeserializeOwned>(
    raw: &[Vec<u8>],
    type_name: &str,
) -> Result<Vec<T>> {
    if raw.is_empty() {
        return Err(Error::InvalidRequest(
            "the vanilla proof list is empty".into(),
        ));
    }
    raw.iter()
        .enumerate()
        .map(|(i, bytes)| {
            bincode::deserialize(bytes).map_err(|e| Error::Decode {
                what: format!("vanilla proof {i} (bincode {type_name})"),
                reason: e.to_string(),
            })
        })
        .collect()
}

/// Decodes a 32-byte commitment-like value, with a clear error naming the field.
pub(crate) fn safe_domain<D: filecoin_hashers::Domain>(bytes: &[u8; 32], what: &str) -> Result<D> {
    D::try_from_bytes(bytes).map_err(|e| {
        Error::InvalidRequest(format!(
            "{what} is not a valid field element ({e}); is it a raw 32-byte commitment?"
        ))
    })
}
