//! Requests: what to prove, and the vanilla inputs in the formats node software holds.
//!
//! # File format (`cuzk prove --input FILE`)
//!
//! A request file is one JSON object; byte strings are lowercase hex:
//!
//! ```json
//! { "format": "cuzk-request/1", "kind": "porep-c2", "registered_proof": 5,
//!   "c1_output": { ... filecoin-proofs SealCommitPhase1Output JSON ... } }
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
        /// `SealCommitPhase1Output<Tree>` JSON bytes.
        c1_json: Vec<u8>,
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
    /// PoSt: prover id (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prover_id: Option<String>,
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
            ProofInputs::Porep { c1_json } => c1_json.is_empty(),
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

    /// A PoRep request from a bare C1 output JSON and the sector's registered seal proof.
    pub fn porep_from_c1(registered_proof: u64, c1_json: Vec<u8>) -> Result<Self> {
        let proof = RegisteredProof::new(ProofKind::PorepC2, registered_proof)?;
        Self::new(proof, ProofInputs::Porep { c1_json })
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
            ProofKind::PorepC2 => ProofInputs::Porep {
                c1_json: file
                    .c1_output
                    .ok_or_else(|| Error::InvalidRequest("missing field c1_output".into()))?
                    .get()
                    .as_bytes()
                    .to_vec(),
            },
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
            ProofInputs::Porep { c1_json } => {
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
