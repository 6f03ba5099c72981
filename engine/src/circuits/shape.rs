//! The Merkle tree shape of each sector size, for code generic over it ([`with_shape`]).

/// Runs `$body` with `$tree` bound to the Merkle tree shape of `$size`.
macro_rules! with_shape {
    ($size:expr, $tree:ident => $body:expr) => {{
        use filecoin_proofs::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB};
        match $size {
            // 2 KiB, 8 MiB and 512 MiB share one shape (base tree, no sub or top trees).
            $crate::kind::SectorSize::S2KiB
            | $crate::kind::SectorSize::S8MiB
            | $crate::kind::SectorSize::S512MiB => {
                type $tree = SectorShape2KiB;
                $body
            }
            $crate::kind::SectorSize::S32GiB => {
                type $tree = SectorShape32GiB;
                $body
            }
            $crate::kind::SectorSize::S64GiB => {
                type $tree = SectorShape64GiB;
                $body
            }
        }
    }};
}
pub(crate) use with_shape;
