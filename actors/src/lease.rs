//! The lease table: the only way a partition reaches a GPU.
//!
//! Owned by the scheduler (`&mut self` everywhere, no interior locking): a lease names a
//! physical device and reserves VRAM on it. Invariants, checked on every grant:
//! - I1 exclusivity: at most `max_concurrent` leases are active on a device (1 unless a
//!   deliberate, VRAM-budgeted pipelining says otherwise), or up to a circuit's
//!   [`SharedVram::batch`] when every active lease there is of that circuit (a GPU proving
//!   the partitions of a streamed circuit as one batch);
//! - I2 VRAM: the reservations active on a device never exceed its usable memory.
//!
//! A lease's reservation may name a [`SharedVram`] part: the parameters of its circuit, which a
//! device holds once however many of that circuit's partitions hold leases on it. A device's
//! reservation is therefore each active lease's own part plus, once for each circuit among
//! them, the shared part ([`LeaseTable::reserved`]), computed from the active leases, so
//! that ending any one of them never leaves another without its share.

use std::collections::{BTreeMap, HashMap};

use crate::error::{Error, Result};
use crate::identity::DeviceId;

/// Identifies a lease; never reused within a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeaseId(pub u64);

/// The part of a reservation that leases of one circuit on one device share: its resident
/// parameters. `key` names the circuit; `bytes` is at most the lease's whole reservation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedVram {
    /// The circuit (the engine's parameter-set id).
    pub key: u64,
    /// Bytes of the reservation that are the circuit's, not the partition's.
    pub bytes: u64,
    /// Leases of this circuit a device may hold at once while it holds no other circuit's,
    /// beyond its `max_concurrent` (the device proves them as one batch; each still
    /// reserves its own part). At most `max_concurrent` where this is no larger.
    pub batch: usize,
}

/// A grant of one device's GPU phase to one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// This lease.
    pub id: LeaseId,
    /// The physical device.
    pub device: DeviceId,
    /// VRAM the partition needs, in bytes, including `shared`.
    pub bytes: u64,
    /// The part of `bytes` shared with other leases of the same circuit on the device.
    pub shared: Option<SharedVram>,
    /// The job the partition belongs to.
    pub job: u64,
    /// The partition index within the job.
    pub partition: usize,
}

#[derive(Clone, Debug)]
struct Slot {
    usable: u64,
    max_concurrent: usize,
    active: Vec<LeaseId>,
}

/// Leases per physical device.
#[derive(Debug, Default)]
pub struct LeaseTable {
    devices: BTreeMap<DeviceId, Slot>,
    leases: HashMap<LeaseId, Lease>,
    next: u64,
}

/// `shared` held to at most the lease's `bytes`.
fn clamped(bytes: u64, shared: Option<SharedVram>) -> Option<SharedVram> {
    shared.map(|s| SharedVram {
        bytes: s.bytes.min(bytes),
        ..s
    })
}

/// Own parts plus each circuit's shared part once (the largest one named for it).
fn reservation(leases: impl Iterator<Item = (u64, Option<SharedVram>)>) -> u64 {
    let mut own = 0u64;
    let mut shared: BTreeMap<u64, u64> = BTreeMap::new();
    for (bytes, part) in leases {
        let part = clamped(bytes, part);
        own = own.saturating_add(bytes - part.map_or(0, |s| s.bytes));
        if let Some(s) = part {
            let e = shared.entry(s.key).or_default();
            *e = (*e).max(s.bytes);
        }
    }
    shared.values().fold(own, |a, b| a.saturating_add(*b))
}

impl LeaseTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a device with `usable_bytes` of VRAM for leases and at most `max_concurrent`
    /// simultaneous leases (at least 1). Adding a device twice replaces nothing: it errors.
    pub fn add_device(
        &mut self,
        device: DeviceId,
        usable_bytes: u64,
        max_concurrent: usize,
    ) -> Result<()> {
        if self.devices.contains_key(&device) {
            return Err(Error::DuplicateDevice(
                device,
                "lease table".into(),
                "add_device".into(),
            ));
        }
        self.devices.insert(
            device,
            Slot {
                usable: usable_bytes,
                max_concurrent: max_concurrent.max(1),
                active: Vec::new(),
            },
        );
        Ok(())
    }

    /// The device's reservation with one more lease of `bytes` (of which `shared`) added.
    fn reserved_with(&self, slot: &Slot, extra: Option<(u64, Option<SharedVram>)>) -> u64 {
        let active = slot
            .active
            .iter()
            .filter_map(|id| self.leases.get(id))
            .map(|l| (l.bytes, l.shared));
        reservation(active.chain(extra))
    }

    /// Whether `bytes` could be granted on `device` right now.
    pub fn can_grant(&self, device: DeviceId, bytes: u64) -> bool {
        self.can_grant_shared(device, bytes, None)
    }

    /// Whether `bytes`, of which `shared` is its circuit's, could be granted on `device`
    /// right now (the shared part counts only if no active lease there shares it).
    pub fn can_grant_shared(
        &self,
        device: DeviceId,
        bytes: u64,
        shared: Option<SharedVram>,
    ) -> bool {
        self.devices.get(&device).is_some_and(|s| {
            self.has_slot(s, shared) && self.reserved_with(s, Some((bytes, shared))) <= s.usable
        })
    }

    /// Whether `slot` may hold one more lease of the circuit `shared` names (I1): below its
    /// `max_concurrent`, or below the circuit's batch with every active lease of it.
    fn has_slot(&self, slot: &Slot, shared: Option<SharedVram>) -> bool {
        let active = slot.active.len();
        if active < slot.max_concurrent {
            return true;
        }
        shared.is_some_and(|s| {
            active < s.batch
                && slot.active.iter().all(|id| {
                    self.leases
                        .get(id)
                        .and_then(|l| l.shared)
                        .is_some_and(|o| o.key == s.key)
                })
        })
    }

    /// Grants a lease, or says why not (busy, not enough VRAM, unknown device).
    pub fn grant(
        &mut self,
        device: DeviceId,
        job: u64,
        partition: usize,
        bytes: u64,
    ) -> Result<Lease> {
        self.grant_shared(device, job, partition, bytes, None)
    }

    /// As [`grant`](Self::grant), with `shared` the part of `bytes` that leases of the
    /// same circuit on the device share (its resident parameters).
    pub fn grant_shared(
        &mut self,
        device: DeviceId,
        job: u64,
        partition: usize,
        bytes: u64,
        shared: Option<SharedVram>,
    ) -> Result<Lease> {
        let slot = self
            .devices
            .get(&device)
            .ok_or(Error::UnknownDevice(device))?;
        if !self.has_slot(slot, shared) {
            return Err(Error::Busy(device, slot.active.first().map_or(0, |l| l.0)));
        }
        let reserved = self.reserved_with(slot, None);
        let after = self.reserved_with(slot, Some((bytes, shared)));
        if after > slot.usable {
            return Err(Error::NoVram {
                device,
                want: after - reserved,
                free: slot.usable.saturating_sub(reserved),
                total: slot.usable,
            });
        }
        self.next += 1;
        let lease = Lease {
            id: LeaseId(self.next),
            device,
            bytes,
            shared: clamped(bytes, shared),
            job,
            partition,
        };
        if let Some(slot) = self.devices.get_mut(&device) {
            slot.active.push(lease.id);
        }
        self.leases.insert(lease.id, lease.clone());
        Ok(lease)
    }

    /// Ends a lease and frees its reservation. A lease ends exactly once: releasing it again
    /// (e.g. a late result after revocation) is an error the caller uses to discard the result.
    pub fn release(&mut self, id: LeaseId) -> Result<Lease> {
        let lease = self.leases.remove(&id).ok_or(Error::NoSuchLease(id.0))?;
        if let Some(slot) = self.devices.get_mut(&lease.device) {
            slot.active.retain(|l| *l != id);
        }
        Ok(lease)
    }

    /// Whether `id` is active (granted and not yet released).
    pub fn is_active(&self, id: LeaseId) -> bool {
        self.leases.contains_key(&id)
    }

    /// Removes a device (lost or quarantined) and returns its active leases, now ended, so
    /// their partitions can be queued again.
    pub fn remove_device(&mut self, device: DeviceId) -> Vec<Lease> {
        let Some(slot) = self.devices.remove(&device) else {
            return Vec::new();
        };
        slot.active
            .iter()
            .filter_map(|id| self.leases.remove(id))
            .collect()
    }

    /// Leases active on `device`.
    pub fn active_on(&self, device: DeviceId) -> Vec<&Lease> {
        self.devices
            .get(&device)
            .map(|s| {
                s.active
                    .iter()
                    .filter_map(|id| self.leases.get(id))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Bytes reserved on `device`: each active lease's own part, and each of their
    /// circuits' shared part once.
    pub fn reserved(&self, device: DeviceId) -> u64 {
        self.devices
            .get(&device)
            .map_or(0, |s| self.reserved_with(s, None))
    }

    /// The devices in the table, in identity order.
    pub fn devices(&self) -> impl Iterator<Item = DeviceId> + '_ {
        self.devices.keys().copied()
    }

    /// Number of active leases in all.
    pub fn active_count(&self) -> usize {
        self.leases.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{resolve, DeviceInfo, PciAddress};

    fn id(dev: u32) -> DeviceId {
        let mut uuid = [0u8; 16];
        uuid[0] = dev as u8;
        DeviceId {
            pci: PciAddress {
                domain: 0,
                bus: 0,
                device: dev,
            },
            uuid,
        }
    }

    #[test]
    fn one_phase_per_device_and_vram_is_accounted() {
        let mut t = LeaseTable::new();
        t.add_device(id(6), 100, 1).unwrap();
        let a = t.grant(id(6), 1, 0, 60).unwrap();
        assert!(matches!(t.grant(id(6), 1, 1, 10), Err(Error::Busy(..))));
        t.release(a.id).unwrap();
        assert!(matches!(
            t.grant(id(6), 1, 1, 101),
            Err(Error::NoVram { .. })
        ));
        let b = t.grant(id(6), 1, 1, 100).unwrap();
        assert_eq!(t.reserved(id(6)), 100);
        assert!(
            matches!(t.release(a.id), Err(Error::NoSuchLease(_))),
            "a lease ends once"
        );
        t.release(b.id).unwrap();
        assert_eq!((t.reserved(id(6)), t.active_count()), (0, 0));
        assert!(matches!(
            t.grant(id(9), 1, 0, 1),
            Err(Error::UnknownDevice(_))
        ));
        assert!(t.add_device(id(6), 1, 1).is_err());
    }

    #[test]
    fn pipelining_is_bounded_by_vram() {
        let mut t = LeaseTable::new();
        t.add_device(id(6), 100, 2).unwrap();
        let a = t.grant(id(6), 1, 0, 50).unwrap();
        assert!(!t.can_grant(id(6), 51));
        let _b = t.grant(id(6), 1, 1, 50).unwrap();
        assert!(matches!(t.grant(id(6), 1, 2, 0), Err(Error::Busy(..))));
        let lost = t.remove_device(id(6));
        assert_eq!(lost.len(), 2);
        assert!(t.release(a.id).is_err());
    }

    /// Two leases of one circuit reserve its parameters once; a lease of another circuit
    /// pays its own; ending the first lease of a circuit leaves its share with the second.
    #[test]
    fn a_circuits_parameters_are_reserved_once_a_device() {
        let mut t = LeaseTable::new();
        // a WindowPoSt 32 GiB partition on an H200: 56 of parameters, 22 of working memory
        t.add_device(id(6), 137, 3).unwrap();
        let post = Some(SharedVram {
            key: 1,
            bytes: 56,
            batch: 1,
        });
        let a = t.grant_shared(id(6), 1, 0, 78, post).unwrap();
        assert_eq!(t.reserved(id(6)), 78);
        // without the share a second one does not fit (156 > 137); with it, it does
        assert!(!t.can_grant(id(6), 78));
        assert!(t.can_grant_shared(id(6), 78, post));
        let b = t.grant_shared(id(6), 1, 1, 78, post).unwrap();
        assert_eq!(t.reserved(id(6)), 56 + 22 + 22);
        // another circuit pays its own parameters: 100 + 40 > 137
        let other = Some(SharedVram {
            key: 2,
            bytes: 30,
            batch: 1,
        });
        assert!(matches!(
            t.grant_shared(id(6), 2, 0, 40, other),
            Err(Error::NoVram {
                want: 40,
                free: 37,
                ..
            })
        ));
        // the first lease ends: the second keeps the circuit's share
        t.release(a.id).unwrap();
        assert_eq!(t.reserved(id(6)), 78);
        let c = t.grant_shared(id(6), 2, 0, 40, other).unwrap();
        assert_eq!(t.reserved(id(6)), 78 + 40);
        t.release(b.id).unwrap();
        t.release(c.id).unwrap();
        assert_eq!(t.reserved(id(6)), 0);
        // a share larger than its lease counts as the whole lease
        let d = t
            .grant_shared(
                id(6),
                3,
                0,
                10,
                Some(SharedVram {
                    key: 3,
                    bytes: 50,
                    batch: 1,
                }),
            )
            .unwrap();
        assert_eq!(d.shared.map(|s| s.bytes), Some(10));
        assert_eq!(t.reserved(id(6)), 10);
    }

    /// A streamed circuit's leases go past the pipeline depth up to its batch while the
    /// device holds nothing else, each paying its own part; another circuit's lease still
    /// waits for the depth.
    #[test]
    fn a_batched_circuit_goes_past_the_depth_alone() {
        let mut t = LeaseTable::new();
        t.add_device(id(6), 100, 2).unwrap();
        let circuit = SharedVram {
            key: 7,
            bytes: 40,
            batch: 4,
        };
        let streamed = Some(circuit);
        let leases: Vec<_> = (0..4)
            .map(|p| t.grant_shared(id(6), 1, p, 50, streamed).unwrap())
            .collect();
        assert_eq!(t.reserved(id(6)), 40 + 4 * 10);
        // the batch is full, though memory is left
        assert!(!t.can_grant_shared(id(6), 50, streamed));
        assert!(matches!(
            t.grant_shared(id(6), 1, 4, 50, streamed),
            Err(Error::Busy(..))
        ));
        // another circuit, or none named, waits for the depth
        t.release(leases[0].id).unwrap();
        t.release(leases[1].id).unwrap();
        assert!(!t.can_grant(id(6), 1));
        let other = Some(SharedVram {
            key: 8,
            bytes: 1,
            batch: 4,
        });
        assert!(!t.can_grant_shared(id(6), 1, other));
        // a third lease of the batched circuit, with another circuit's lease active: the
        // depth holds
        t.release(leases[2].id).unwrap();
        let o = t.grant_shared(id(6), 2, 0, 1, other).unwrap();
        assert!(!t.can_grant_shared(id(6), 50, streamed));
        t.release(o.id).unwrap();
        // memory still bounds a batch: 40 + 6 x 10 > 100
        let six = Some(SharedVram {
            batch: 8,
            ..circuit
        });
        let granted = (0..8)
            .filter(|&p| t.grant_shared(id(6), 3, p, 50, six).is_ok())
            .count();
        assert_eq!(granted, 5, "one lease held, five more fit 100 bytes");
    }

    #[test]
    fn random_sequences_keep_invariants() {
        // xorshift: deterministic, no dependency
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut t = LeaseTable::new();
        for d in 0..3 {
            t.add_device(id(d), 1000, 1 + d as usize).unwrap();
        }
        let mut held: Vec<LeaseId> = Vec::new();
        for step in 0..20_000 {
            if next() % 2 == 0 && !held.is_empty() {
                let i = (next() as usize) % held.len();
                t.release(held.swap_remove(i)).unwrap();
            } else {
                let d = id((next() % 3) as u32);
                let bytes = next() % 700;
                // a third of the leases plain, the others of circuit 1 or 2, whose share is
                // up to all of the lease; circuit 2 is proved in batches of up to 4
                let shared = match next() % 3 {
                    0 => None,
                    k => Some(SharedVram {
                        key: k,
                        bytes: next() % (bytes + 1),
                        batch: if k == 2 { 4 } else { 1 },
                    }),
                };
                let could = t.can_grant_shared(d, bytes, shared);
                let granted = t.grant_shared(d, step, 0, bytes, shared);
                assert_eq!(could, granted.is_ok(), "can_grant agrees with grant");
                if let Ok(l) = granted {
                    held.push(l.id);
                }
            }
            for d in 0..3u32 {
                let dev = id(d);
                let active = t.active_on(dev);
                // I1: the pipeline depth, or a batch of circuit 2 alone
                let batch_of_2 = active.iter().all(|l| l.shared.is_some_and(|s| s.key == 2));
                assert!(
                    active.len() <= 1 + d as usize || (batch_of_2 && active.len() <= 4),
                    "I1 broken at step {step}"
                );
                // each lease's own part, and each circuit's share once (the largest)
                let own: u64 = active
                    .iter()
                    .map(|l| l.bytes - l.shared.map_or(0, |s| s.bytes))
                    .sum();
                let share = |k: u64| {
                    active
                        .iter()
                        .filter_map(|l| l.shared.filter(|s| s.key == k).map(|s| s.bytes))
                        .max()
                        .unwrap_or(0)
                };
                let sum = own + share(1) + share(2);
                assert_eq!(sum, t.reserved(dev));
                assert!(sum <= 1000, "I2 broken at step {step}");
            }
        }
    }

    /// The seed incident at the lease level: workers that hold devices under different
    /// ordinals (CUDA_VISIBLE_DEVICES permuted between their views) still contend for the
    /// same physical lease, so two GPU phases never overlap on one device.
    #[test]
    fn seed_incident_leases_follow_physical_identity_not_ordinals() {
        let mk = |dev: u32, ordinal: u32| DeviceInfo {
            id: id(dev),
            ordinal,
            name: "mock".into(),
            total_memory: 1 << 30,
        };
        let view_a = resolve(&["0".parse().unwrap()], &[mk(6, 0), mk(7, 1)]).unwrap();
        let view_b = resolve(&["1".parse().unwrap()], &[mk(7, 0), mk(6, 1)]).unwrap();
        // "ordinal 0" in one view and "ordinal 1" in the other are the same GPU
        assert_eq!(view_a[0].id, view_b[0].id);
        let mut t = LeaseTable::new();
        t.add_device(id(6), 1 << 30, 1).unwrap();
        t.add_device(id(7), 1 << 30, 1).unwrap();
        let first = t.grant(view_a[0].id, 1, 0, 1).unwrap();
        assert!(matches!(
            t.grant(view_b[0].id, 2, 0, 1),
            Err(Error::Busy(..))
        ));
        // the other physical device is free for the second worker
        assert!(t.grant(id(7), 2, 0, 1).is_ok());
        t.release(first.id).unwrap();
    }
}
