//! How configuration selects devices, and devices as discovered: selectors are resolved to
//! physical identities ([`DeviceId`], defined in [`crate::identity`]) once.
//!
//! CUDA ordinals depend on `CUDA_VISIBLE_DEVICES` and enumeration order, so they are resolved
//! to a physical identity once, at start-up, and never used again. cuzk never sets
//! `CUDA_VISIBLE_DEVICES`: CUDA reads it once, at initialisation (see the seed incident).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
pub use crate::identity::{DeviceId, PciAddress};

impl FromStr for PciAddress {
    type Err = Error;
    /// Parses `dddd:bb:dd` or `bb:dd` (domain 0), hexadecimal, optionally followed by `.f`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::BadSelector(s.into(), why.into());
        let core = s.split('.').next().unwrap_or(s);
        let parts: Vec<&str> = core.split(':').collect();
        let nums = parts
            .iter()
            .map(|p| u32::from_str_radix(p, 16).map_err(|_| bad("not hexadecimal")))
            .collect::<Result<Vec<u32>>>()?;
        match nums.as_slice() {
            [bus, device] => Ok(PciAddress {
                domain: 0,
                bus: *bus,
                device: *device,
            }),
            [domain, bus, device] => Ok(PciAddress {
                domain: *domain,
                bus: *bus,
                device: *device,
            }),
            _ => Err(bad("expected domain:bus:device")),
        }
    }
}

/// A device as discovered at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Physical identity.
    pub id: DeviceId,
    /// The ordinal it had in this process at discovery (only for messages: never used to
    /// address the device afterwards).
    pub ordinal: u32,
    /// Marketing name.
    pub name: String,
    /// Total memory in bytes.
    pub total_memory: u64,
}

/// How configuration names a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSelector {
    /// By PCI address (stable across reboots and `CUDA_VISIBLE_DEVICES`).
    Pci(PciAddress),
    /// By UUID (`GPU-...` or 32 hex digits).
    Uuid([u8; 16]),
    /// By ordinal in this process, resolved once at start-up.
    Ordinal(u32),
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSelector::Pci(p) => write!(f, "pci {p}"),
            DeviceSelector::Uuid(u) => write!(
                f,
                "uuid {}",
                DeviceId {
                    pci: PciAddress {
                        domain: 0,
                        bus: 0,
                        device: 0
                    },
                    uuid: *u
                }
                .uuid_string()
            ),
            DeviceSelector::Ordinal(o) => write!(f, "ordinal {o}"),
        }
    }
}

impl FromStr for DeviceSelector {
    type Err = Error;
    /// `GPU-<uuid>` or 32 hex digits: a UUID; `a:b` or `a:b:c`: a PCI address; a decimal
    /// number: an ordinal.
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim();
        if let Some(u) = t
            .strip_prefix("GPU-")
            .or_else(|| (t.len() == 32).then_some(t))
        {
            let hex: String = u.chars().filter(|c| *c != '-').collect();
            if hex.len() != 32 {
                return Err(Error::BadSelector(
                    s.into(),
                    "a UUID has 32 hex digits".into(),
                ));
            }
            let mut uuid = [0u8; 16];
            for (i, b) in uuid.iter_mut().enumerate() {
                *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                    .map_err(|_| Error::BadSelector(s.into(), "not hexadecimal".into()))?;
            }
            return Ok(DeviceSelector::Uuid(uuid));
        }
        if t.contains(':') {
            return Ok(DeviceSelector::Pci(t.parse()?));
        }
        t.parse::<u32>().map(DeviceSelector::Ordinal).map_err(|_| {
            Error::BadSelector(
                s.into(),
                "expected a PCI address, a UUID or an ordinal".into(),
            )
        })
    }
}

impl DeviceSelector {
    fn matches(&self, d: &DeviceInfo) -> bool {
        match self {
            DeviceSelector::Pci(p) => d.id.pci == *p,
            DeviceSelector::Uuid(u) => d.id.uuid == *u,
            DeviceSelector::Ordinal(o) => d.ordinal == *o,
        }
    }
}

/// Resolves configuration selectors against the devices discovered at start-up.
///
/// An empty selector list means every discovered device. Each selector must match a present
/// device, and no physical device may be selected twice (e.g. once by ordinal and once by
/// PCI address): both are errors, never silently merged. The result is ordered by PCI
/// address, so it does not depend on enumeration order.
pub fn resolve(selectors: &[DeviceSelector], discovered: &[DeviceInfo]) -> Result<Vec<DeviceInfo>> {
    let mut picked: Vec<(DeviceInfo, String)> = Vec::new();
    let present = || {
        if discovered.is_empty() {
            return "none found".to_string();
        }
        discovered
            .iter()
            .map(|d| format!("{} (ordinal {})", d.id, d.ordinal))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if selectors.is_empty() {
        for d in discovered {
            if let Some((_, first)) = picked.iter().find(|(p, _)| p.id == d.id) {
                return Err(Error::DuplicateDevice(
                    d.id,
                    first.clone(),
                    format!("ordinal {}", d.ordinal),
                ));
            }
            picked.push((d.clone(), format!("ordinal {}", d.ordinal)));
        }
    } else {
        for sel in selectors {
            let d = discovered
                .iter()
                .find(|d| sel.matches(d))
                .ok_or_else(|| Error::NoSuchDevice(sel.to_string(), present()))?;
            if let Some((_, first)) = picked.iter().find(|(p, _)| p.id == d.id) {
                return Err(Error::DuplicateDevice(d.id, first.clone(), sel.to_string()));
            }
            picked.push((d.clone(), sel.to_string()));
        }
    }
    let mut out: Vec<DeviceInfo> = picked.into_iter().map(|(d, _)| d).collect();
    out.sort_by_key(|d| d.id);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn dev(bus: u32, ordinal: u32) -> DeviceInfo {
        let mut uuid = [0u8; 16];
        uuid[0] = bus as u8;
        DeviceInfo {
            id: DeviceId {
                pci: PciAddress {
                    domain: 0,
                    bus: 0,
                    device: bus,
                },
                uuid,
            },
            ordinal,
            name: "mock".into(),
            total_memory: 1 << 30,
        }
    }

    #[test]
    fn selectors_parse() {
        assert_eq!(
            "0000:00:06".parse::<DeviceSelector>().unwrap(),
            DeviceSelector::Pci(PciAddress {
                domain: 0,
                bus: 0,
                device: 6
            })
        );
        assert_eq!(
            "1".parse::<DeviceSelector>().unwrap(),
            DeviceSelector::Ordinal(1)
        );
        let u = "GPU-06000000-0000-0000-0000-000000000000"
            .parse::<DeviceSelector>()
            .unwrap();
        assert!(matches!(u, DeviceSelector::Uuid(b) if b[0] == 6));
        assert!("GPU-12".parse::<DeviceSelector>().is_err());
        assert!("zz:1".parse::<DeviceSelector>().is_err());
        assert!("gpu0".parse::<DeviceSelector>().is_err());
    }

    #[test]
    fn resolution_is_by_identity_and_independent_of_ordinal_order() {
        // CUDA_VISIBLE_DEVICES=1,0 swaps the ordinals of the same two devices.
        let normal = [dev(6, 0), dev(7, 1)];
        let swapped = [dev(7, 0), dev(6, 1)];
        let a = resolve(&[], &normal).unwrap();
        let b = resolve(&[], &swapped).unwrap();
        let ids = |v: &[DeviceInfo]| v.iter().map(|d| d.id).collect::<Vec<_>>();
        assert_eq!(ids(&a), ids(&b));
        let by_pci = resolve(&["0:7".parse().unwrap()], &swapped).unwrap();
        assert_eq!(by_pci[0].id.pci.device, 7);
        assert_eq!(
            by_pci[0].ordinal, 0,
            "ordinal is only what this process saw"
        );
    }

    #[test]
    fn duplicates_and_missing_devices_are_rejected() {
        let devs = [dev(6, 0), dev(7, 1)];
        let e = resolve(&["0".parse().unwrap(), "0:06".parse().unwrap()], &devs).unwrap_err();
        assert!(e.to_string().contains("selected twice"), "{e}");
        let e = resolve(&["0:09".parse().unwrap()], &devs).unwrap_err();
        assert!(e.to_string().contains("no device matches"), "{e}");
        // the same physical device enumerated twice is refused too
        let e = resolve(&[], &[dev(6, 0), dev(6, 1)]).unwrap_err();
        assert!(e.to_string().contains("selected twice"), "{e}");
    }
}
