//! PoRep commit-phase-1 outputs in every form node software writes, brought to one.
//!
//! The prover reads filecoin-proofs' `SealCommitPhase1Output<Tree>` JSON (`vanilla_proofs` an
//! array of partitions). Node software holds the same data in other wrappings:
//!
//! | form | who writes it | how it differs |
//! |---|---|---|
//! | filecoin-proofs | `filecoin_proofs::seal_commit_phase1`, `cuzk gen` | the reference form |
//! | filecoin-proofs-api | `ffi.SealCommitPhase1` (Lotus, Curio), `lotus-bench` | `"registered_proof":"StackedDrg32GiBV1_1"` as a string; `vanilla_proofs` wrapped by sector size, `{"StackedDrg32GiBV1":[[...]]}` (always `...V1`, whatever the version) |
//! | Go re-encoding | Curio's ProofShare and SupraSeal paths (`lib/proof`) | the api form with Go's key order |
//! | Curio's envelope | Curio's cuzk client | `{"SectorNum":N,"Phase1Out":"<std base64 of an api-form C1>","SectorSize":S}` |
//!
//! [`normalize`] accepts each and returns the filecoin-proofs form, with what the wrapping
//! said about the sector, so the caller can check it against the request. Keys are matched by
//! name, never by position, and the per-challenge proofs are passed through byte for byte.

use std::collections::HashMap;

use base64::Engine as _;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::kind::{ProofKind, RegisteredProof, SectorSize};

/// A C1 output in filecoin-proofs' form, and what its wrapping named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormalizedC1 {
    /// `SealCommitPhase1Output<Tree>` JSON, as filecoin-proofs reads it.
    pub c1_json: Vec<u8>,
    /// The registered seal proof the api form names (`None`: the filecoin-proofs form, which
    /// does not say).
    pub registered_proof: Option<RegisteredProof>,
    /// Curio's envelope: its `SectorNum`.
    pub sector_number: Option<u64>,
    /// Curio's envelope: its `SectorSize`, bytes.
    pub sector_size: Option<u64>,
}

/// The filecoin-proofs-api name of registered seal proof `id` (its serde string).
pub fn seal_proof_name(id: u64) -> Option<String> {
    let size = SectorSize::from_ordinal(id % 5)?;
    let version = match id {
        0..=4 => "V1",
        5..=9 => "V1_1",
        10..=14 => "V1_1_Feat_SyntheticPoRep",
        15..=19 => "V1_2_Feat_NonInteractivePoRep",
        _ => return None,
    };
    Some(format!("StackedDrg{size}{version}"))
}

/// The registered seal proof a filecoin-proofs-api name stands for.
pub fn seal_proof_from_name(name: &str) -> Result<RegisteredProof> {
    let id = (0..20)
        .find(|&id| seal_proof_name(id).as_deref() == Some(name))
        .ok_or_else(|| {
            Error::InvalidRequest(format!(
                "the C1 output's registered_proof {name:?} is not a registered seal proof (expected e.g. \"StackedDrg32GiBV1_1\" or \"StackedDrg32GiBV1_1_Feat_SyntheticPoRep\")"
            ))
        })?;
    RegisteredProof::new(ProofKind::PorepC2, id)
}

fn decode_err(what: &str, reason: impl std::fmt::Display) -> Error {
    Error::Decode {
        what: what.into(),
        reason: reason.to_string(),
    }
}

type Fields<'a> = HashMap<String, &'a RawValue>;

fn fields<'a>(what: &str, bytes: &'a [u8]) -> Result<Fields<'a>> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err(Error::InvalidRequest(format!(
            "{what} is not a JSON object (it must start with '{{')"
        )));
    }
    serde_json::from_slice(bytes).map_err(|e| decode_err(what, e))
}

fn number(what: &str, fields: &Fields<'_>, key: &str) -> Result<u64> {
    let raw = fields
        .get(key)
        .ok_or_else(|| Error::InvalidRequest(format!("{what} has no {key}")))?;
    serde_json::from_str(raw.get()).map_err(|e| {
        decode_err(
            &format!("{what}: {key}"),
            format!("not a whole number: {e}"),
        )
    })
}

/// Brings a C1 output in any of the forms above to filecoin-proofs' form.
///
/// Errors name what is wrong: not JSON, an envelope whose `Phase1Out` is not base64 or not a
/// C1 output, an unknown registered-proof name, or `vanilla_proofs` wrapped under another
/// sector size than the registered proof's. The per-challenge proofs are decoded later, by
/// the circuit builder.
pub fn normalize(bytes: &[u8]) -> Result<NormalizedC1> {
    let outer = fields("the C1 output", bytes)?;
    if !outer.contains_key("Phase1Out") {
        return normalize_inner(bytes, outer);
    }
    let what = "Curio's C1 envelope";
    let sector_number = number(what, &outer, "SectorNum")?;
    let sector_size = number(what, &outer, "SectorSize")?;
    let phase1: String = serde_json::from_str(outer["Phase1Out"].get())
        .map_err(|e| decode_err(&format!("{what}: Phase1Out"), format!("not a string: {e}")))?;
    let inner = base64::engine::general_purpose::STANDARD
        .decode(phase1.trim())
        .map_err(|e| decode_err(&format!("{what}: Phase1Out"), format!("not base64: {e}")))?;
    let inner_fields = fields("the envelope's Phase1Out", &inner)?;
    if inner_fields.contains_key("Phase1Out") {
        return Err(Error::InvalidRequest(
            "the envelope's Phase1Out is itself an envelope".into(),
        ));
    }
    let mut c1 = normalize_inner(&inner, inner_fields)?;
    c1.sector_number = Some(sector_number);
    c1.sector_size = Some(sector_size);
    if let Some(p) = c1.registered_proof {
        if p.sector_size.bytes() != sector_size {
            return Err(Error::InvalidRequest(format!(
                "the envelope's SectorSize {sector_size} does not match its C1 output's {} ({} bytes)",
                seal_proof_name(p.id).unwrap_or_default(),
                p.sector_size.bytes()
            )));
        }
    }
    Ok(c1)
}

/// The filecoin-proofs or api form (no envelope).
fn normalize_inner(bytes: &[u8], fields: Fields<'_>) -> Result<NormalizedC1> {
    if !fields.contains_key("vanilla_proofs") {
        return Err(Error::InvalidRequest(
            "the C1 output has no vanilla_proofs".into(),
        ));
    }
    let Some(name) = fields.get("registered_proof") else {
        // filecoin-proofs' own form: nothing to unwrap
        return Ok(NormalizedC1 {
            c1_json: bytes.to_vec(),
            registered_proof: None,
            sector_number: None,
            sector_size: None,
        });
    };
    let name: String = serde_json::from_str(name.get()).map_err(|e| {
        decode_err(
            "the C1 output's registered_proof",
            format!("not a string: {e}"),
        )
    })?;
    let proof = seal_proof_from_name(&name)?;
    let wrapped = fields
        .get("vanilla_proofs")
        .ok_or_else(|| Error::InvalidRequest("the C1 output has no vanilla_proofs".into()))?;
    let by_size: HashMap<String, &RawValue> = serde_json::from_str(wrapped.get()).map_err(|e| {
        decode_err(
            "the C1 output's vanilla_proofs",
            format!("expected {{\"StackedDrg<size>V1\": [[...]]}}: {e}"),
        )
    })?;
    let want = format!("StackedDrg{}V1", proof.sector_size);
    let (key, proofs) = match by_size.iter().next() {
        Some((k, v)) if by_size.len() == 1 => (k, v),
        _ => {
            return Err(Error::InvalidRequest(format!(
                "the C1 output's vanilla_proofs must hold one key, {want:?}; it holds {}",
                by_size.len()
            )))
        }
    };
    if *key != want {
        return Err(Error::InvalidRequest(format!(
            "the C1 output names {name} but wraps its vanilla proofs as {key:?} (expected {want:?})"
        )));
    }
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(b"{\"vanilla_proofs\":");
    out.extend_from_slice(proofs.get().as_bytes());
    push_commitments(&mut out, &fields)?;
    out.push(b'}');
    Ok(NormalizedC1 {
        c1_json: out,
        registered_proof: Some(proof),
        sector_number: None,
        sector_size: None,
    })
}

/// Appends `,"comm_r":...` and the other fields after `vanilla_proofs`, in filecoin-proofs'
/// order, their values byte for byte.
fn push_commitments(out: &mut Vec<u8>, fields: &Fields<'_>) -> Result<()> {
    for key in ["comm_r", "comm_d", "replica_id", "seed", "ticket"] {
        let v = fields
            .get(key)
            .ok_or_else(|| Error::InvalidRequest(format!("the C1 output has no {key}")))?;
        out.extend_from_slice(format!(",\"{key}\":").as_bytes());
        out.extend_from_slice(v.get().as_bytes());
    }
    Ok(())
}

/// Wraps a filecoin-proofs C1 output as filecoin-proofs-api writes it (`registered_proof` as
/// a string, `vanilla_proofs` under its size key), for tests and tools that must produce what
/// Lotus and Curio hold.
pub fn to_api_form(c1_json: &[u8], proof: RegisteredProof) -> Result<Vec<u8>> {
    let fields = fields("the C1 output", c1_json)?;
    let name = seal_proof_name(proof.id)
        .ok_or_else(|| Error::InvalidRequest(format!("{proof} is not a seal proof")))?;
    let mut out = Vec::with_capacity(c1_json.len() + 64);
    out.extend_from_slice(format!("{{\"registered_proof\":\"{name}\"").as_bytes());
    out.extend_from_slice(
        format!(
            ",\"vanilla_proofs\":{{\"StackedDrg{}V1\":",
            proof.sector_size
        )
        .as_bytes(),
    );
    let proofs = fields
        .get("vanilla_proofs")
        .ok_or_else(|| Error::InvalidRequest("the C1 output has no vanilla_proofs".into()))?;
    out.extend_from_slice(proofs.get().as_bytes());
    out.push(b'}');
    push_commitments(&mut out, &fields)?;
    out.push(b'}');
    Ok(out)
}

/// Curio's envelope around an api-form C1 output, byte for byte as its Go client writes it
/// (`json.Marshal` of `{SectorNum, Phase1Out []byte, SectorSize}`).
pub fn curio_envelope(api_c1: &[u8], sector_number: u64, sector_size: u64) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(api_c1);
    format!(
        "{{\"SectorNum\":{sector_number},\"Phase1Out\":\"{b64}\",\"SectorSize\":{sector_size}}}"
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "[1,2,3]";

    fn reference() -> String {
        format!(
            "{{\"vanilla_proofs\":[[{{\"x\":1}}]],\"comm_r\":{H},\"comm_d\":{H},\"replica_id\":{H},\"seed\":{H},\"ticket\":{H}}}"
        )
    }

    #[test]
    fn names_round_trip_and_cover_all_twenty() {
        for id in 0..20 {
            let name = seal_proof_name(id).unwrap();
            assert_eq!(seal_proof_from_name(&name).unwrap().id, id, "{name}");
        }
        assert_eq!(seal_proof_name(8).unwrap(), "StackedDrg32GiBV1_1");
        assert_eq!(
            seal_proof_name(13).unwrap(),
            "StackedDrg32GiBV1_1_Feat_SyntheticPoRep"
        );
        assert_eq!(
            seal_proof_name(19).unwrap(),
            "StackedDrg64GiBV1_2_Feat_NonInteractivePoRep"
        );
        assert!(seal_proof_from_name("StackedDrg32GiBV9").is_err());
    }

    #[test]
    fn every_form_comes_back_to_the_reference() {
        let r = reference();
        let proof = RegisteredProof::new(ProofKind::PorepC2, 5).unwrap();
        let plain = normalize(r.as_bytes()).unwrap();
        assert_eq!(plain.c1_json, r.as_bytes());
        assert_eq!(plain.registered_proof, None);
        let api = to_api_form(r.as_bytes(), proof).unwrap();
        let from_api = normalize(&api).unwrap();
        assert_eq!(from_api.c1_json, r.as_bytes());
        assert_eq!(from_api.registered_proof, Some(proof));
        // Go's order: keys sorted, registered_proof in the middle
        let go = format!(
            "{{\"comm_d\":{H},\"comm_r\":{H},\"registered_proof\":\"StackedDrg2KiBV1_1\",\"replica_id\":{H},\"seed\":{H},\"ticket\":{H},\"vanilla_proofs\":{{\"StackedDrg2KiBV1\":[[{{\"x\":1}}]]}}}}"
        );
        assert_eq!(normalize(go.as_bytes()).unwrap().c1_json, r.as_bytes());
        let env = curio_envelope(&api, 234, 2048);
        let from_env = normalize(&env).unwrap();
        assert_eq!(from_env.c1_json, r.as_bytes());
        assert_eq!(
            (from_env.sector_number, from_env.sector_size),
            (Some(234), Some(2048))
        );
    }

    #[test]
    fn bad_wrappings_are_named() {
        let r = reference();
        let proof = RegisteredProof::new(ProofKind::PorepC2, 5).unwrap();
        let api = String::from_utf8(to_api_form(r.as_bytes(), proof).unwrap()).unwrap();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"[1]".to_vec(), "not a JSON object"),
            (r.as_bytes()[..r.len() - 5].to_vec(), "the C1 output"),
            (
                br#"{"SectorNum":1,"Phase1Out":"***","SectorSize":2048}"#.to_vec(),
                "not base64",
            ),
            (
                br#"{"SectorNum":1,"Phase1Out":"e30=","SectorSize":2048}"#.to_vec(),
                "no vanilla_proofs",
            ),
            (
                br#"{"SectorNum":"x","Phase1Out":"e30=","SectorSize":2048}"#.to_vec(),
                "SectorNum",
            ),
            (
                curio_envelope(api.as_bytes(), 1, 8 << 20),
                "SectorSize 8388608",
            ),
            (
                api.replace("StackedDrg2KiBV1_1", "StackedDrg2KiBV7")
                    .into_bytes(),
                "not a registered seal proof",
            ),
            (
                api.replace("\"StackedDrg2KiBV1\"", "\"StackedDrg8MiBV1\"")
                    .into_bytes(),
                "wraps its vanilla proofs",
            ),
        ];
        for (bytes, want) in cases {
            let e = normalize(&bytes).unwrap_err().to_string();
            assert!(e.contains(want), "{}: {e}", String::from_utf8_lossy(&bytes));
        }
    }
}
