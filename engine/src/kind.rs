//! Proof kinds, sector sizes and the registered-proof numbers node software uses.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use storage_proofs_core::api_version::{ApiFeature, ApiVersion};

use crate::error::{Error, Result};

/// The four SNARKs a storage provider must produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProofKind {
    /// PoRep commit phase 2 (seal commit): proves a sealed replica from its C1 output.
    PorepC2,
    /// WinningPoSt: one sector, one partition, must land inside a block window (~25 s).
    WinningPost,
    /// WindowPoSt: one partition (or all) of a deadline's sectors.
    WindowPost,
    /// SnapDeals (EmptySectorUpdate): proves a data update of a committed sector.
    SnapDeals,
}

impl ProofKind {
    /// Every kind, in priority order (most urgent first).
    pub const ALL: [ProofKind; 4] = [
        ProofKind::WinningPost,
        ProofKind::WindowPost,
        ProofKind::PorepC2,
        ProofKind::SnapDeals,
    ];

    /// The name used on the command line and in files.
    pub fn as_str(self) -> &'static str {
        match self {
            ProofKind::PorepC2 => "porep-c2",
            ProofKind::WinningPost => "winning-post",
            ProofKind::WindowPost => "window-post",
            ProofKind::SnapDeals => "snap-deals",
        }
    }
}

impl fmt::Display for ProofKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProofKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "porep" | "porep-c2" | "seal" | "c2" => Ok(ProofKind::PorepC2),
            "winning" | "winning-post" => Ok(ProofKind::WinningPost),
            "window" | "window-post" => Ok(ProofKind::WindowPost),
            "snap" | "snap-deals" | "update" => Ok(ProofKind::SnapDeals),
            _ => Err(Error::InvalidRequest(format!(
                "unknown proof kind {s:?} (expected porep-c2, winning-post, window-post or snap-deals)"
            ))),
        }
    }
}

/// The sector sizes filecoin-proofs publishes parameters for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectorSize {
    /// 2 KiB: test size, cheap enough for CI.
    S2KiB,
    /// 8 MiB: test size.
    S8MiB,
    /// 512 MiB: test size.
    S512MiB,
    /// 32 GiB: production.
    S32GiB,
    /// 64 GiB: production.
    S64GiB,
}

impl SectorSize {
    /// Every size, smallest first.
    pub const ALL: [SectorSize; 5] = [
        SectorSize::S2KiB,
        SectorSize::S8MiB,
        SectorSize::S512MiB,
        SectorSize::S32GiB,
        SectorSize::S64GiB,
    ];

    /// Size in bytes.
    pub fn bytes(self) -> u64 {
        match self {
            SectorSize::S2KiB => 2 << 10,
            SectorSize::S8MiB => 8 << 20,
            SectorSize::S512MiB => 512 << 20,
            SectorSize::S32GiB => 32 << 30,
            SectorSize::S64GiB => 64 << 30,
        }
    }

    /// Whether this is a test size (2 KiB, 8 MiB, 512 MiB), whose sectors a test bench can
    /// seal; 32 and 64 GiB are production sizes.
    pub fn is_test_size(self) -> bool {
        !matches!(self, SectorSize::S32GiB | SectorSize::S64GiB)
    }

    /// Parses a byte count.
    pub fn from_bytes(bytes: u64) -> Result<Self> {
        SectorSize::ALL
            .into_iter()
            .find(|s| s.bytes() == bytes)
            .ok_or_else(|| {
                Error::InvalidRequest(format!(
                    "unsupported sector size {bytes} bytes (expected 2KiB, 8MiB, 512MiB, 32GiB or 64GiB)"
                ))
            })
    }

    /// Index 0..5 used by the registered-proof numbering.
    fn ordinal(self) -> u64 {
        SectorSize::ALL
            .iter()
            .position(|s| *s == self)
            .unwrap_or_default() as u64
    }

    pub(crate) fn from_ordinal(i: u64) -> Option<Self> {
        SectorSize::ALL.get(i as usize).copied()
    }
}

impl fmt::Display for SectorSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SectorSize::S2KiB => "2KiB",
            SectorSize::S8MiB => "8MiB",
            SectorSize::S512MiB => "512MiB",
            SectorSize::S32GiB => "32GiB",
            SectorSize::S64GiB => "64GiB",
        })
    }
}

impl FromStr for SectorSize {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        let named = match t.as_str() {
            "2kib" | "2k" => Some(SectorSize::S2KiB),
            "8mib" | "8m" => Some(SectorSize::S8MiB),
            "512mib" | "512m" => Some(SectorSize::S512MiB),
            "32gib" | "32g" => Some(SectorSize::S32GiB),
            "64gib" | "64g" => Some(SectorSize::S64GiB),
            _ => None,
        };
        match named {
            Some(size) => Ok(size),
            None => match t.parse::<u64>() {
                Ok(bytes) => SectorSize::from_bytes(bytes),
                Err(_) => Err(Error::InvalidRequest(format!("unknown sector size {s:?}"))),
            },
        }
    }
}

/// A registered proof: the number node software (filecoin-proofs-api, go-state-types) uses to
/// name a proof kind, a sector size and a protocol version together.
///
/// Numbering: seal proofs 0-4 are StackedDrg V1, 5-9 V1_1, 10-14 V1_1 with synthetic PoRep and
/// 15-19 V1_2 non-interactive PoRep (2KiB..64GiB each); PoSt proofs 0-4 are Winning V1, 5-9
/// Window V1, 10-14 Window V1_1; update proofs 0-4 are V1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegisteredProof {
    /// The proof kind.
    pub kind: ProofKind,
    /// The registered-proof number within its family (seal, PoSt or update).
    pub id: u64,
    /// The sector size it implies.
    pub sector_size: SectorSize,
}

impl RegisteredProof {
    /// Resolves `(kind, id)`; errors if the number is not one of `kind`'s.
    pub fn new(kind: ProofKind, id: u64) -> Result<Self> {
        let (lo, hi) = match kind {
            ProofKind::PorepC2 => (0, 20),
            ProofKind::WinningPost => (0, 5),
            ProofKind::WindowPost => (5, 15),
            ProofKind::SnapDeals => (0, 5),
        };
        if !(lo..hi).contains(&id) {
            let extra = match (kind, id) {
                (ProofKind::WindowPost, 0..=4) => " (0-4 are WinningPoSt proofs)",
                (ProofKind::WinningPost, 5..=14) => " (5-14 are WindowPoSt proofs)",
                _ => "",
            };
            return Err(Error::InvalidRequest(format!(
                "registered proof {id} is not a {kind} proof; expected {lo}..={}{extra}",
                hi - 1
            )));
        }
        let sector_size = SectorSize::from_ordinal((id - lo) % 5)
            .ok_or_else(|| Error::InvalidRequest(format!("registered proof {id} out of range")))?;
        Ok(RegisteredProof {
            kind,
            id,
            sector_size,
        })
    }

    /// The newest registered proof of `kind` for `size` (what a new sector uses today).
    pub fn latest(kind: ProofKind, size: SectorSize) -> Self {
        let base = match kind {
            ProofKind::PorepC2 => 5,
            ProofKind::WinningPost => 0,
            ProofKind::WindowPost => 10,
            ProofKind::SnapDeals => 0,
        };
        RegisteredProof {
            kind,
            id: base + size.ordinal(),
            sector_size: size,
        }
    }

    /// The filecoin-proofs API version this proof is generated and verified with.
    pub fn api_version(&self) -> ApiVersion {
        match (self.kind, self.id) {
            (ProofKind::PorepC2, 0..=4) => ApiVersion::V1_0_0,
            (ProofKind::PorepC2, 5..=9) => ApiVersion::V1_1_0,
            (ProofKind::PorepC2, _) => ApiVersion::V1_2_0,
            (ProofKind::WindowPost, 10..) => ApiVersion::V1_2_0,
            (ProofKind::SnapDeals, _) => ApiVersion::V1_2_0,
            _ => ApiVersion::V1_0_0,
        }
    }

    /// The PoRep feature of a seal proof: synthetic PoRep (10-14: challenges drawn from
    /// comm_r, only the proofs of the chosen challenges kept) or non-interactive PoRep (15-19:
    /// more partitions, challenges from comm_r, no seed round trip). Both use the interactive
    /// proof's circuit and parameter file.
    pub fn porep_feature(&self) -> Option<ApiFeature> {
        match (self.kind, self.id) {
            (ProofKind::PorepC2, 10..=14) => Some(ApiFeature::SyntheticPoRep),
            (ProofKind::PorepC2, 15..=19) => Some(ApiFeature::NonInteractivePoRep),
            _ => None,
        }
    }

    /// The PoRep id: the registered seal proof as a little-endian u64 in 32 bytes.
    pub fn porep_id(&self) -> [u8; 32] {
        let mut id = [0u8; 32];
        id[..8].copy_from_slice(&self.id.to_le_bytes());
        id
    }

    /// Errors unless this proof's sector size is `bytes`.
    pub fn check_sector_size(&self, bytes: u64) -> Result<()> {
        if bytes != self.sector_size.bytes() {
            return Err(Error::InvalidRequest(format!(
                "sector size {bytes} bytes does not match registered proof {} ({} sectors of {} bytes)",
                self.id,
                self.sector_size,
                self.sector_size.bytes()
            )));
        }
        Ok(())
    }
}

impl fmt::Display for RegisteredProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} (registered proof {})",
            self.kind, self.sector_size, self.id
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_proofs_map_to_sizes() {
        let p = RegisteredProof::new(ProofKind::PorepC2, 5).unwrap();
        assert_eq!(p.sector_size, SectorSize::S2KiB);
        assert_eq!(p.api_version(), ApiVersion::V1_1_0);
        assert_eq!(p.porep_id()[0], 5);
        assert_eq!(
            RegisteredProof::new(ProofKind::WindowPost, 13)
                .unwrap()
                .sector_size,
            SectorSize::S32GiB
        );
        assert_eq!(
            RegisteredProof::new(ProofKind::WinningPost, 4)
                .unwrap()
                .sector_size,
            SectorSize::S64GiB
        );
        assert_eq!(
            RegisteredProof::latest(ProofKind::WindowPost, SectorSize::S2KiB).id,
            10
        );
        let synthetic = RegisteredProof::new(ProofKind::PorepC2, 13).unwrap();
        assert_eq!(synthetic.sector_size, SectorSize::S32GiB);
        assert_eq!(synthetic.porep_feature(), Some(ApiFeature::SyntheticPoRep));
        assert_eq!(synthetic.api_version(), ApiVersion::V1_2_0);
        let ni = RegisteredProof::new(ProofKind::PorepC2, 15).unwrap();
        assert_eq!(ni.sector_size, SectorSize::S2KiB);
        assert_eq!(ni.porep_feature(), Some(ApiFeature::NonInteractivePoRep));
        assert_eq!(p.porep_feature(), None);
    }

    #[test]
    fn wrong_family_is_a_clear_error() {
        let e = RegisteredProof::new(ProofKind::WindowPost, 3)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a window-post proof"), "{e}");
        let e = RegisteredProof::new(ProofKind::PorepC2, 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected 0..=19"), "{e}");
        assert!(RegisteredProof::new(ProofKind::PorepC2, 5)
            .unwrap()
            .check_sector_size(8 << 20)
            .is_err());
    }

    #[test]
    fn parse_names() {
        assert_eq!("2KiB".parse::<SectorSize>().unwrap(), SectorSize::S2KiB);
        assert_eq!("2048".parse::<SectorSize>().unwrap(), SectorSize::S2KiB);
        assert!("3KiB".parse::<SectorSize>().is_err());
        assert_eq!(
            "winning".parse::<ProofKind>().unwrap(),
            ProofKind::WinningPost
        );
        assert!("foo".parse::<ProofKind>().is_err());
    }
}
