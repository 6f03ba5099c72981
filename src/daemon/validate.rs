//! The boundary: a wire `SubmitProofRequest` becomes an engine [`ProofRequest`] only after
//! every field is checked. Each refusal is one clear sentence naming the field, and becomes
//! `INVALID_ARGUMENT`. Decoding the vanilla proofs themselves (and refusing garbage there) is
//! the engine's job when it builds circuits.

use cuzk_actors::Priority;

use super::config::DaemonConfig;
use super::proto as pb;
use crate::{
    PostInputs, ProofInputs, ProofKind, ProofRequest, RegisteredProof, SectorRef, SnapInputs,
};

/// The longest `request_id` accepted, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 256;

/// A checked submission.
#[derive(Debug)]
pub struct Checked {
    /// The engine request.
    pub request: ProofRequest,
    /// The priority after defaults.
    pub priority: Priority,
    /// The caller's request id (empty on the wire: none).
    pub request_id: Option<String>,
}

/// The proof kind of a wire enum value.
pub fn kind_from_wire(v: i32) -> Result<ProofKind, String> {
    match pb::ProofKind::try_from(v) {
        Ok(pb::ProofKind::PorepSealCommit) => Ok(ProofKind::PorepC2),
        Ok(pb::ProofKind::SnapDealsUpdate) => Ok(ProofKind::SnapDeals),
        Ok(pb::ProofKind::WindowPostPartition) => Ok(ProofKind::WindowPost),
        Ok(pb::ProofKind::WinningPost) => Ok(ProofKind::WinningPost),
        Ok(pb::ProofKind::Unspecified) => Err("proof_kind is required (PROOF_KIND_UNSPECIFIED given)".into()),
        Err(_) => Err(format!(
            "proof_kind {v} is not a known ProofKind (1 POREP_SEAL_COMMIT, 2 SNAP_DEALS_UPDATE, 3 WINDOW_POST_PARTITION, 4 WINNING_POST)"
        )),
    }
}

/// The wire enum value of a proof kind.
pub fn kind_to_wire(kind: ProofKind) -> pb::ProofKind {
    match kind {
        ProofKind::PorepC2 => pb::ProofKind::PorepSealCommit,
        ProofKind::SnapDeals => pb::ProofKind::SnapDealsUpdate,
        ProofKind::WindowPost => pb::ProofKind::WindowPostPartition,
        ProofKind::WinningPost => pb::ProofKind::WinningPost,
    }
}

/// The priority of a wire enum value (`None`: unspecified, use the kind's default).
pub fn priority_from_wire(v: i32) -> Result<Option<Priority>, String> {
    match pb::Priority::try_from(v) {
        Ok(pb::Priority::Unspecified) => Ok(None),
        Ok(pb::Priority::Low) => Ok(Some(Priority::Low)),
        Ok(pb::Priority::Normal) => Ok(Some(Priority::Normal)),
        Ok(pb::Priority::High) => Ok(Some(Priority::High)),
        Ok(pb::Priority::Critical) => Ok(Some(Priority::Critical)),
        Err(_) => Err(format!(
            "priority {v} is not a known Priority (0 unspecified, 1 LOW .. 4 CRITICAL)"
        )),
    }
}

pub use crate::gen::prover_id_from_miner;

/// The miner id whose prover id is `prover_id`, if it is one (a canonical varint followed
/// by zeros).
pub fn miner_from_prover_id(prover_id: &[u8; 32]) -> Option<u64> {
    let mut n: u64 = 0;
    for (i, b) in prover_id.iter().enumerate().take(10) {
        n |= u64::from(b & 0x7f).checked_shl(7 * i as u32)?;
        if b & 0x80 == 0 {
            return (prover_id_from_miner(n) == *prover_id).then_some(n);
        }
    }
    None
}

fn exactly_32(field: &str, v: &[u8]) -> Result<[u8; 32], String> {
    v.try_into()
        .map_err(|_| format!("{field} must be exactly 32 bytes, got {}", v.len()))
}

fn must_be_empty(kind: ProofKind, field: &str, empty: bool) -> Result<(), String> {
    if empty {
        Ok(())
    } else {
        Err(format!(
            "{field} is not used by {kind} requests and must be empty"
        ))
    }
}

/// Checks `req` and builds the engine request. `config` supplies limits and default
/// priorities.
pub fn check(req: &pb::SubmitProofRequest, config: &DaemonConfig) -> Result<Checked, String> {
    if req.request_id.len() > MAX_REQUEST_ID_BYTES {
        return Err(format!(
            "request_id is {} bytes; at most {MAX_REQUEST_ID_BYTES} are accepted",
            req.request_id.len()
        ));
    }
    if req.request_id.chars().any(char::is_control) {
        return Err("request_id contains control characters".into());
    }
    let kind = kind_from_wire(req.proof_kind)?;
    let proof = RegisteredProof::new(kind, req.registered_proof).map_err(strip_prefix)?;
    if req.sector_size != 0 {
        proof
            .check_sector_size(req.sector_size)
            .map_err(strip_prefix)?;
    }
    let priority = priority_from_wire(req.priority)?.unwrap_or_else(|| config.priorities.of(kind));
    let max = config.limits.max_vanilla_proofs;
    if req.vanilla_proofs.len() > max {
        return Err(format!(
            "vanilla_proofs has {} entries; at most {max} are accepted (limits.max_vanilla_proofs)",
            req.vanilla_proofs.len()
        ));
    }
    if let Some(i) = req.vanilla_proofs.iter().position(|v| v.is_empty()) {
        return Err(format!("vanilla_proofs[{i}] is empty"));
    }
    let request = match kind {
        ProofKind::PorepC2 => porep_request(kind, req)?,
        ProofKind::WinningPost | ProofKind::WindowPost => {
            ProofRequest::new(proof, post_inputs(kind, req)?).map_err(strip_prefix)?
        }
        ProofKind::SnapDeals => {
            ProofRequest::new(proof, snap_inputs(kind, req)?).map_err(strip_prefix)?
        }
    };
    let request_id = (!req.request_id.is_empty()).then(|| req.request_id.clone());
    Ok(Checked {
        request,
        priority,
        request_id,
    })
}

/// A PoRep request: `vanilla_proof` is a C1 output in any form node software writes (Curio
/// sends its envelope around filecoin-proofs-api's JSON), checked against `registered_proof`,
/// `sector_size`, and the sector `miner_id` (or `prover_id`) and `sector_number` name.
fn porep_request(kind: ProofKind, req: &pb::SubmitProofRequest) -> Result<ProofRequest, String> {
    must_be_empty(kind, "vanilla_proofs", req.vanilla_proofs.is_empty())?;
    must_be_empty(kind, "randomness", req.randomness.is_empty())?;
    snap_fields_empty(kind, req)?;
    if req.vanilla_proof.is_empty() {
        return Err("vanilla_proof (the C1 output JSON) is required for PoRep".into());
    }
    let prover_id = match (req.miner_id, req.prover_id.is_empty()) {
        (0, true) => None,
        (m, true) => Some(prover_id_from_miner(m)),
        (0, false) => Some(exactly_32("prover_id", &req.prover_id)?),
        _ => return Err("give either miner_id or prover_id, not both".into()),
    };
    let sector = prover_id.map(|prover_id| SectorRef {
        prover_id,
        sector_number: req.sector_number,
    });
    ProofRequest::porep_from_c1(Some(req.registered_proof), &req.vanilla_proof, sector)
        .map_err(|e| format!("vanilla_proof: {}", strip_prefix(e)))
}

fn post_inputs(kind: ProofKind, req: &pb::SubmitProofRequest) -> Result<ProofInputs, String> {
    must_be_empty(kind, "vanilla_proof", req.vanilla_proof.is_empty())?;
    snap_fields_empty(kind, req)?;
    if req.vanilla_proofs.is_empty() {
        return Err(format!(
            "vanilla_proofs is empty: a {kind} request carries one FallbackPoStSectorProof per sector"
        ));
    }
    let mut randomness = exactly_32("randomness", &req.randomness)?;
    // Chain randomness becomes a field element by clearing its top two bits, as
    // filecoin-ffi does before generating or proving.
    randomness[31] &= 0x3f;
    let prover_id = if req.prover_id.is_empty() {
        prover_id_from_miner(req.miner_id)
    } else {
        if req.miner_id != 0 {
            return Err("give either miner_id or prover_id, not both".into());
        }
        exactly_32("prover_id", &req.prover_id)?
    };
    let partition_index = match kind {
        ProofKind::WindowPost => Some(req.partition_index),
        _ if req.partition_index != 0 => {
            return Err("partition_index is only meaningful for WindowPoSt".into())
        }
        _ => None,
    };
    Ok(ProofInputs::Post(PostInputs {
        randomness,
        prover_id,
        vanilla_proofs: req.vanilla_proofs.clone(),
        partition_index,
    }))
}

fn snap_inputs(kind: ProofKind, req: &pb::SubmitProofRequest) -> Result<ProofInputs, String> {
    must_be_empty(kind, "vanilla_proof", req.vanilla_proof.is_empty())?;
    must_be_empty(kind, "randomness", req.randomness.is_empty())?;
    must_be_empty(kind, "prover_id", req.prover_id.is_empty())?;
    if req.vanilla_proofs.is_empty() {
        return Err(
            "vanilla_proofs is empty: a SnapDeals request carries one PartitionProof per partition"
                .into(),
        );
    }
    Ok(ProofInputs::Snap(SnapInputs {
        comm_r_old: exactly_32("comm_r_old", &req.comm_r_old)?,
        comm_r_new: exactly_32("comm_r_new", &req.comm_r_new)?,
        comm_d_new: exactly_32("comm_d_new", &req.comm_d_new)?,
        vanilla_proofs: req.vanilla_proofs.clone(),
    }))
}

fn snap_fields_empty(kind: ProofKind, req: &pb::SubmitProofRequest) -> Result<(), String> {
    must_be_empty(kind, "comm_r_old", req.comm_r_old.is_empty())?;
    must_be_empty(kind, "comm_r_new", req.comm_r_new.is_empty())?;
    must_be_empty(kind, "comm_d_new", req.comm_d_new.is_empty())
}

/// The engine's errors read "invalid request: ..."; the gRPC status says that already.
fn strip_prefix(e: crate::Error) -> String {
    let s = e.to_string();
    s.strip_prefix("invalid request: ")
        .map(str::to_string)
        .unwrap_or(s)
}

/// The wire request for an engine request (what `cuzk client prove` sends). A prover id
/// that is a miner id's varint goes as `miner_id`, as Curio sends it; any other as the
/// `prover_id` extension.
pub fn to_wire(request: &ProofRequest, request_id: &str, priority: i32) -> pb::SubmitProofRequest {
    let mut w = pb::SubmitProofRequest {
        request_id: request_id.to_string(),
        proof_kind: kind_to_wire(request.proof.kind) as i32,
        sector_size: request.proof.sector_size.bytes(),
        registered_proof: request.proof.id,
        priority,
        ..Default::default()
    };
    match &request.inputs {
        ProofInputs::Porep { c1_json, sector } => {
            w.vanilla_proof = c1_json.clone();
            if let Some(s) = sector {
                w.sector_number = s.sector_number;
                match miner_from_prover_id(&s.prover_id) {
                    Some(m) => w.miner_id = m,
                    None => w.prover_id = s.prover_id.to_vec(),
                }
            }
        }
        ProofInputs::Post(p) => {
            w.vanilla_proofs = p.vanilla_proofs.clone();
            w.randomness = p.randomness.to_vec();
            w.partition_index = p.partition_index.unwrap_or(0);
            match miner_from_prover_id(&p.prover_id) {
                Some(m) => w.miner_id = m,
                None => w.prover_id = p.prover_id.to_vec(),
            }
        }
        ProofInputs::Snap(s) => {
            w.vanilla_proofs = s.vanilla_proofs.clone();
            w.comm_r_old = s.comm_r_old.to_vec();
            w.comm_r_new = s.comm_r_new.to_vec();
            w.comm_d_new = s.comm_d_new.to_vec();
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> DaemonConfig {
        DaemonConfig::parse("", "t", |_| None).unwrap()
    }

    fn window() -> pb::SubmitProofRequest {
        pb::SubmitProofRequest {
            request_id: "r1".into(),
            proof_kind: pb::ProofKind::WindowPostPartition as i32,
            registered_proof: 10,
            sector_size: 2048,
            vanilla_proofs: vec![vec![1, 2, 3]],
            randomness: vec![0xff; 32],
            miner_id: 1000,
            ..Default::default()
        }
    }

    #[test]
    fn miner_ids_are_varints() {
        // f01000: 1000 = 0x3e8 -> e8 07 (as filecoin-ffi's prover id for f01000).
        assert_eq!(&prover_id_from_miner(1000)[..3], &[0xe8, 0x07, 0]);
        assert_eq!(prover_id_from_miner(0), [0; 32]);
        for m in [0, 1, 127, 128, 1000, 1 << 40, u64::MAX] {
            assert_eq!(miner_from_prover_id(&prover_id_from_miner(m)), Some(m));
        }
        let mut odd = [0u8; 32];
        odd[5] = 1;
        assert_eq!(miner_from_prover_id(&odd), None);
        assert_eq!(miner_from_prover_id(&[0xff; 32]), None);
    }

    #[test]
    fn a_good_request_is_checked_and_defaulted() {
        let c = check(&window(), &config()).unwrap();
        assert_eq!(c.priority, Priority::High);
        let ProofInputs::Post(p) = &c.request.inputs else {
            panic!("PoSt inputs expected")
        };
        assert_eq!(p.randomness[31], 0x3f, "top bits cleared");
        assert_eq!(p.partition_index, Some(0));
        assert_eq!(&p.prover_id[..2], &[0xe8, 0x07]);
        let mut other = window();
        other.priority = pb::Priority::Low as i32;
        assert_eq!(
            check(&other, &config()).unwrap().request.digest(),
            c.request.digest(),
            "priority is not part of the digest"
        );
        other.randomness[0] = 1;
        assert_ne!(
            check(&other, &config()).unwrap().request.digest(),
            c.request.digest()
        );
    }

    #[test]
    fn bad_fields_are_named() {
        type Edit = fn(&mut pb::SubmitProofRequest);
        let cases: &[(Edit, &str)] = &[
            (|r| r.proof_kind = 0, "proof_kind is required"),
            (|r| r.proof_kind = 77, "proof_kind 77"),
            (|r| r.priority = -3, "priority -3"),
            (|r| r.registered_proof = 3, "not a window-post proof"),
            (|r| r.sector_size = 4096, "does not match"),
            (
                |r| r.randomness = vec![1; 31],
                "randomness must be exactly 32 bytes, got 31",
            ),
            (|r| r.vanilla_proofs.clear(), "vanilla_proofs is empty"),
            (
                |r| r.vanilla_proofs.push(vec![]),
                "vanilla_proofs[1] is empty",
            ),
            (
                |r| r.vanilla_proof = vec![b'{'],
                "vanilla_proof is not used",
            ),
            (|r| r.comm_r_old = vec![0; 32], "comm_r_old is not used"),
            (
                |r| r.prover_id = vec![0; 32],
                "either miner_id or prover_id",
            ),
            (
                |r| r.request_id = "x".repeat(300),
                "request_id is 300 bytes",
            ),
            (|r| r.request_id = "a\u{7}b".into(), "control characters"),
            (
                |r| r.vanilla_proofs = vec![vec![1]; 20_001],
                "at most 20000",
            ),
            (
                |r| {
                    r.proof_kind = pb::ProofKind::SnapDealsUpdate as i32;
                    r.registered_proof = 0;
                    r.randomness.clear();
                    r.miner_id = 0;
                    r.comm_r_old = vec![0; 32];
                    r.comm_r_new = vec![0; 32];
                    r.comm_d_new = vec![0; 7];
                },
                "comm_d_new must be exactly 32 bytes, got 7",
            ),
            (
                |r| {
                    r.proof_kind = pb::ProofKind::PorepSealCommit as i32;
                    r.registered_proof = 5;
                    r.vanilla_proofs.clear();
                    r.randomness.clear();
                    r.vanilla_proof = b"\x00garbage".to_vec();
                },
                "vanilla_proof: the C1 output is not a JSON object",
            ),
            (
                |r| {
                    r.proof_kind = pb::ProofKind::WinningPost as i32;
                    r.registered_proof = 0;
                    r.partition_index = 3;
                },
                "only meaningful for WindowPoSt",
            ),
        ];
        for (i, (edit, want)) in cases.iter().enumerate() {
            let mut r = window();
            edit(&mut r);
            let e = check(&r, &config()).unwrap_err();
            assert!(e.contains(want), "case {i}: {e}");
        }
    }

    #[test]
    fn requests_round_trip_through_the_wire() {
        let c = check(&window(), &config()).unwrap();
        let back = to_wire(&c.request, "r1", 0);
        assert_eq!(back.miner_id, 1000);
        assert!(back.prover_id.is_empty());
        let again = check(&back, &config()).unwrap();
        assert_eq!(format!("{:?}", again.request), format!("{:?}", c.request));
    }
}
