//! What a device physically is: its PCI address and UUID. Ordinals and environment
//! variables never name a device past start-up ([`crate::device`] resolves them once).

use std::fmt;

/// A PCI address: `domain:bus:device`, as CUDA reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciAddress {
    /// PCI domain.
    pub domain: u32,
    /// PCI bus.
    pub bus: u32,
    /// PCI device.
    pub device: u32,
}

impl fmt::Display for PciAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}",
            self.domain, self.bus, self.device
        )
    }
}

/// What a GPU physically is. Two handles with equal ids are the same silicon, whatever
/// ordinals they were opened by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    /// PCI address.
    pub pci: PciAddress,
    /// The device's UUID (16 bytes, as `cuDeviceGetUuid` reports it).
    pub uuid: [u8; 16],
}

impl DeviceId {
    /// The host's cores, standing in as the one device of an engine without GPUs. Its PCI
    /// address (`ffffffff:ff:ff`) cannot occur on a real bus.
    pub const CPU: DeviceId = DeviceId {
        pci: PciAddress {
            domain: 0xffff_ffff,
            bus: 0xff,
            device: 0xff,
        },
        uuid: [0; 16],
    };

    /// Whether this is [`DeviceId::CPU`].
    pub fn is_cpu(&self) -> bool {
        *self == DeviceId::CPU
    }

    /// The UUID in the `GPU-xxxxxxxx-xxxx-...` form nvidia-smi prints.
    pub fn uuid_string(&self) -> String {
        let h = |r: std::ops::Range<usize>| {
            self.uuid[r]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        format!(
            "GPU-{}-{}-{}-{}-{}",
            h(0..4),
            h(4..6),
            h(6..8),
            h(8..10),
            h(10..16)
        )
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_cpu() {
            f.write_str("cpu")
        } else {
            write!(f, "{}", self.pci)
        }
    }
}
