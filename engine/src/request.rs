//! Requests: what to prove, and the vanilla inputs in the formats node software holds.
//!
//! # File format (`cuzk prove --input FILE`)
//!
//! A request file is one JSON object; byte strings are lowercase hex:
//!
//! ```json
//! { "format": "cuzk-request/1", "kind": "porep-c2", "registered_proof": 5,
//!   "c1_output": { ... a C1 output in any form of [`crate::c1`] ... },
//!   "prover_id": "<32 bytes, optional>", "sector_number": 1 }
//! { "format": "cuzk-request/1", "kind": "window-post", "registered_proof": 10,
//!   "randomness": "<32 bytes>", "prover_id": "<32 bytes>", "partition_index": 0,
//!   "vanilla_proofs": ["<bincode FallbackPoStSectorProof>", ...] }
//! { "format": "cuzk-request/1", "kind": "snap-deals", "registered_proof": 0,
//!   "comm_r_old": "<32 bytes>", "comm_r_new": "<32 bytes>", "comm_d_new": "<32 bytes>",
//!   "vanilla_proofs": ["<bincode PartitionProof>", ...] }
//! ```
//!
//! The fields mirror the `cuzk.v1` wire contract's `SubmitProofRequest`, so a daemon request
//! and a file carry the same data. `sector_size` (bytes) may be given and is then checked
//! against the registered proof. A bare C1 output JSON is accepted too by
//! [`ProofRequest::porep_from_c1`].

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::kind::{ProofKind, RegisteredProof};

/// The format tag written into request files.
pub const REQUEST_FORMAT: &str = "cuzk-request/1";

/// A validated proof request.
#[derive(Clone, Debug)]
pub struct ProofRequest {
    /// What to prove (kind, sector size, version).
    pub proof: RegisteredProof,
    /// The vanilla inputs.
    pub inputs: ProofInputs,
}

/// Vanilla inputs, per kind.
#[derive(Clone, Debug)]
pub enum ProofInputs {
    /// PoRep C2: the commit-phase-1 output as filecoin-proofs serialises it to JSON.
    Porep {
        /// `SealCommitPhase1Output<Tree>` JSON bytes (filecoin-proofs' form; see [`crate::c1`]
        /// for the others and how they are brought to this one).
        c1_json: Vec<u8>,
        /// The sector the C1 output claims to be, when the caller says: the circuit builder
        /// then checks that the C1's replica id is this sector's.
        sector: Option<SectorRef>,
    },
    /// WinningPoSt or WindowPoSt.
    Post(PostInputs),
    /// SnapDeals.
    Snap(SnapInputs),
}

impl ProofInputs {
    /// A short name for error messages.
    pub fn describe(&self) -> &'static str {
        match self {
            ProofInputs::Porep { .. } => "PoRep C1",
            ProofInputs::Post(_) => "PoSt",
            ProofInputs::Snap(_) => "SnapDeals",
        }
    }
}

/// A sector as node software names it: the miner's prover id and the sector number. With the
/// C1's ticket and comm_d and the registered proof's PoRep id they determine the replica id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorRef {
    /// The 32-byte prover id (the miner's actor id as filecoin-ffi encodes it).
    pub prover_id: [u8; 32],
    /// The sector number.
    pub sector_number: u64,
}

/// PoSt inputs.
#[derive(Clone, Debug)]
pub struct PostInputs {
    /// The 32-byte challenge randomness (must be a valid field element, as on chain).
    pub randomness: [u8; 32],
    /// The 32-byte prover id (the miner's actor id, little-endian, zero padded).
    pub prover_id: [u8; 32],
    /// One bincode `FallbackPoStSectorProof` per sector.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// WindowPoSt only: prove this single partition of the deadline (the vanilla proofs are
    /// then that partition's sectors). `None` proves all partitions.
    pub partition_index: Option<u32>,
}

/// SnapDeals inputs.
#[derive(Clone, Debug)]
pub struct SnapInputs {
    /// CommR of the sector before the update.
    pub comm_r_old: [u8; 32],
    /// CommR after the update.
    pub comm_r_new: [u8; 32],
    /// CommD of the new data.
    pub comm_d_new: [u8; 32],
    /// One bincode `PartitionProof` per partition.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// The JSON shape of a request file (see the module documentation).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestFile {
    /// Always [`REQUEST_FORMAT`].
    #[serde(default)]
    pub format: Option<String>,
    /// Proof kind.
    pub kind: Option<ProofKind>,
    /// Registered proof number (filecoin-proofs-api numbering).
    pub registered_proof: Option<u64>,
    /// Optional sector size in bytes, checked against the registered proof.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sector_size: Option<u64>,
    /// PoRep: the C1 output object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c1_output: Option<Box<serde_json::value::RawValue>>,
    /// PoSt: randomness (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub randomness: Option<String>,
    /// PoSt, and PoRep with `sector_number`: prover id (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prover_id: Option<String>,
    /// PoRep: the sector number (with `prover_id`: checked against the C1's replica id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sector_number: Option<u64>,
    /// WindowPoSt: single partition index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_index: Option<u32>,
    /// PoSt and SnapDeals: vanilla proofs (hex of bincode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vanilla_proofs: Vec<String>,
    /// SnapDeals: old CommR (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm_r_old: Option<String>,
    /// SnapDeals: new CommR (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm_r_new: Option<String>,
    /// SnapDeals: new CommD (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comm_d_new: Option<String>,
}

fn hex32(field: &str, v: &Option<String>) -> Result<[u8; 32]> {
    let s = v
        .as_deref()
        .ok_or_else(|| Error::InvalidRequest(format!("missing field {field}")))?;
    let bytes = hex::decode(s.trim_start_matches("0x"))
        .map_err(|e| Error::InvalidRequest(format!("{field} is not hex: {e}")))?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        Error::InvalidRequest(format!("{field} must be 32 bytes, got {}", b.len()))
    })
}

fn hex_list(v: &[String]) -> Result<Vec<Vec<u8>>> {
    v.iter()
        .enumerate()
        .map(|(i, s)| {
            hex::decode(s)
                .map_err(|e| Error::InvalidRequest(format!("vanilla_proofs[{i}] is not hex: {e}")))
        })
        .collect()
}

impl ProofRequest {
    /// Builds a request after checking that the inputs fit the kind.
    pub fn new(proof: RegisteredProof, inputs: ProofInputs) -> Result<Self> {
        let ok = matches!(
            (&inputs, proof.kind),
            (ProofInputs::Porep { .. }, ProofKind::PorepC2)
                | (
                    ProofInputs::Post(_),
                    ProofKind::WinningPost | ProofKind::WindowPost
                )
                | (ProofInputs::Snap(_), ProofKind::SnapDeals)
        );
        if !ok {
            return Err(Error::InvalidRequest(format!(
                "a {} request cannot carry {} inputs",
                proof.kind,
                inputs.describe()
            )));
        }
        let empty = match &inputs {
            ProofInputs::Porep { c1_json, .. } => c1_json.is_empty(),
            ProofInputs::Post(p) => p.vanilla_proofs.is_empty(),
            ProofInputs::Snap(s) => s.vanilla_proofs.is_empty(),
        };
        if empty {
            return Err(Error::InvalidRequest(
                "the vanilla proof list is empty".into(),
            ));
        }
        if let ProofInputs::Post(p) = &inputs {
            if p.partition_index.is_some() && proof.kind == ProofKind::WinningPost {
                return Err(Error::InvalidRequest(
                    "partition_index is only meaningful for WindowPoSt".into(),
                ));
            }
        }
        Ok(ProofRequest { proof, inputs })
    }

    /// A digest of what the request asks for (kind, registered proof and every input byte):
    /// equal for equal requests, whatever priority or request id they came with.
    pub fn digest(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        let mut field = |bytes: &[u8]| {
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(b"cuzk-request-digest/1");
        field(self.proof.kind.as_str().as_bytes());
        field(&self.proof.id.to_le_bytes());
        match &self.inputs {
            ProofInputs::Porep { c1_json, sector } => {
                field(c1_json);
                if let Some(s) = sector {
                    field(&s.prover_id);
                    field(&s.sector_number.to_le_bytes());
                }
            }
            ProofInputs::Post(p) => {
                field(&p.randomness);
                field(&p.prover_id);
                field(&p.partition_index.map_or(u64::MAX, u64::from).to_le_bytes());
                p.vanilla_proofs.iter().for_each(|v| field(v));
            }
            ProofInputs::Snap(s) => {
                field(&s.comm_r_old);
                field(&s.comm_r_new);
                field(&s.comm_d_new);
                s.vanilla_proofs.iter().for_each(|v| field(v));
            }
        }
        *h.finalize().as_bytes()
    }

    /// A PoRep request from a C1 output in any form node software writes (see [`crate::c1`]):
    /// filecoin-proofs' JSON, filecoin-proofs-api's (as `ffi.SealCommitPhase1` and Lotus write
    /// it), Curio's Go re-encoding, or Curio's envelope around one of those.
    ///
    /// `registered_proof` may be left out when the C1 names its own; when both are there, or
    /// the envelope names a sector size or number, or `sector` is given, each must agree with
    /// the others: a mismatch is an error naming both values.
    pub fn porep_from_c1(
        registered_proof: Option<u64>,
        c1: &[u8],
        sector: Option<SectorRef>,
    ) -> Result<Self> {
        let c1 = crate::c1::normalize(c1)?;
        let proof = match (registered_proof, c1.registered_proof) {
            (Some(id), Some(named)) if id != named.id => {
                return Err(Error::InvalidRequest(format!(
                    "registered proof {id} ({}) does not match the C1 output's {}",
                    crate::c1::seal_proof_name(id).unwrap_or_else(|| "unknown".into()),
                    crate::c1::seal_proof_name(named.id).unwrap_or_default()
                )))
            }
            (Some(id), _) => RegisteredProof::new(ProofKind::PorepC2, id)?,
            (None, Some(named)) => named,
            (None, None) => {
                return Err(Error::InvalidRequest(
                    "this C1 output (filecoin-proofs' form) does not name its registered proof: give it (e.g. 8 = StackedDrg32GiBV1_1)".into(),
                ))
            }
        };
        if let Some(bytes) = c1.sector_size {
            proof.check_sector_size(bytes)?;
        }
        if let (Some(s), Some(n)) = (&sector, c1.sector_number) {
            if s.sector_number != n {
                return Err(Error::InvalidRequest(format!(
                    "sector_number {} does not match the envelope's SectorNum {n}",
                    s.sector_number
                )));
            }
        }
        Self::new(
            proof,
            ProofInputs::Porep {
                c1_json: c1.c1_json,
                sector,
            },
        )
    }

    /// Parses a request file (JSON, see the module documentation).
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let file: RequestFile = serde_json::from_slice(bytes).map_err(|e| Error::Decode {
            what: "request JSON".into(),
            reason: e.to_string(),
        })?;
        if let Some(f) = &file.format {
            if f != REQUEST_FORMAT {
                return Err(Error::InvalidRequest(format!(
                    "unsupported request format {f:?} (expected {REQUEST_FORMAT:?})"
                )));
            }
        }
        let kind = file
            .kind
            .ok_or_else(|| Error::InvalidRequest("missing field kind".into()))?;
        let id = file
            .registered_proof
            .ok_or_else(|| Error::InvalidRequest("missing field registered_proof".into()))?;
        let proof = RegisteredProof::new(kind, id)?;
        if let Some(bytes) = file.sector_size {
            proof.check_sector_size(bytes)?;
        }
        let inputs = match kind {
            ProofKind::PorepC2 => {
                let c1 = file
                    .c1_output
                    .ok_or_else(|| Error::InvalidRequest("missing field c1_output".into()))?;
                let sector = match (&file.prover_id, file.sector_number) {
                    (Some(_), Some(sector_number)) => Some(SectorRef {
                        prover_id: hex32("prover_id", &file.prover_id)?,
                        sector_number,
                    }),
                    (None, None) => None,
                    _ => return Err(Error::InvalidRequest(
                        "a PoRep request names its sector by prover_id and sector_number together"
                            .into(),
                    )),
                };
                return Self::porep_from_c1(Some(id), c1.get().as_bytes(), sector);
            }
            ProofKind::WinningPost | ProofKind::WindowPost => ProofInputs::Post(PostInputs {
                randomness: hex32("randomness", &file.randomness)?,
                prover_id: hex32("prover_id", &file.prover_id)?,
                vanilla_proofs: hex_list(&file.vanilla_proofs)?,
                partition_index: file.partition_index,
            }),
            ProofKind::SnapDeals => ProofInputs::Snap(SnapInputs {
                comm_r_old: hex32("comm_r_old", &file.comm_r_old)?,
                comm_r_new: hex32("comm_r_new", &file.comm_r_new)?,
                comm_d_new: hex32("comm_d_new", &file.comm_d_new)?,
                vanilla_proofs: hex_list(&file.vanilla_proofs)?,
            }),
        };
        Self::new(proof, inputs)
    }

    /// Serialises the request as a request file.
    pub fn to_json(&self) -> Result<Vec<u8>> {
        let mut file = RequestFile {
            format: Some(REQUEST_FORMAT.into()),
            kind: Some(self.proof.kind),
            registered_proof: Some(self.proof.id),
            sector_size: Some(self.proof.sector_size.bytes()),
            ..Default::default()
        };
        match &self.inputs {
            ProofInputs::Porep { c1_json, sector } => {
                if let Some(s) = sector {
                    file.prover_id = Some(hex::encode(s.prover_id));
                    file.sector_number = Some(s.sector_number);
                }
                let raw = serde_json::value::RawValue::from_string(
                    String::from_utf8(c1_json.clone())
                        .map_err(|e| Error::InvalidRequest(format!("C1 JSON is not UTF-8: {e}")))?,
                )
                .map_err(|e| Error::Decode {
                    what: "C1 output JSON".into(),
                    reason: e.to_string(),
                })?;
                file.c1_output = Some(raw);
            }
            ProofInputs::Post(p) => {
                file.randomness = Some(hex::encode(p.randomness));
                file.prover_id = Some(hex::encode(p.prover_id));
                file.partition_index = p.partition_index;
                file.vanilla_proofs = p.vanilla_proofs.iter().map(hex::encode).collect();
            }
            ProofInputs::Snap(s) => {
                file.comm_r_old = Some(hex::encode(s.comm_r_old));
                file.comm_r_new = Some(hex::encode(s.comm_r_new));
                file.comm_d_new = Some(hex::encode(s.comm_d_new));
                file.vanilla_proofs = s.vanilla_proofs.iter().map(hex::encode).collect();
            }
        }
        serde_json::to_vec_pretty(&file).map_err(|e| Error::Decode {
            what: "request".into(),
            reason: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_request_round_trips() {
        let proof = RegisteredProof::new(ProofKind::WindowPost, 10).unwrap();
        let req = ProofRequest::new(
            proof,
            ProofInputs::Post(PostInputs {
                randomness: [1; 32],
                prover_id: [2; 32],
                vanilla_proofs: vec![vec![1, 2, 3]],
                partition_index: Some(0),
            }),
        )
        .unwrap();
        let back = ProofRequest::from_json(&req.to_json().unwrap()).unwrap();
        assert_eq!(back.proof, proof);
        match back.inputs {
            ProofInputs::Post(p) => {
                assert_eq!(p.vanilla_proofs, vec![vec![1, 2, 3]]);
                assert_eq!(p.partition_index, Some(0));
            }
            other => panic!("wrong inputs {other:?}"),
        }
    }

    #[test]
    fn bad_files_are_clear_errors() {
        let cases: &[(&str, &str)] = &[
            (r#"{"kind":"window-post"}"#, "registered_proof"),
            (
                r#"{"kind":"window-post","registered_proof":10,"randomness":"00","prover_id":"00"}"#,
                "32 bytes",
            ),
            (
                r#"{"kind":"porep-c2","registered_proof":5,"sector_size":8388608,"c1_output":{}}"#,
                "does not match",
            ),
            (r#"{"kind":"porep-c2","registered_proof":5}"#, "c1_output"),
            (
                r#"{"kind":"snap-deals","registered_proof":0,"comm_r_old":"zz"}"#,
                "not hex",
            ),
            (
                r#"{"kind":"winning-post","registered_proof":0,"randomness":"0000000000000000000000000000000000000000000000000000000000000000","prover_id":"0000000000000000000000000000000000000000000000000000000000000000","vanilla_proofs":[]}"#,
                "empty",
            ),
            (
                r#"{"kind":"porep-c2","registered_proof":5,"c1_output":{}"#,
                "request JSON",
            ),
        ];
        for (json, want) in cases {
            let e = ProofRequest::from_json(json.as_bytes())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{json}: {e}");
        }
    }
}
