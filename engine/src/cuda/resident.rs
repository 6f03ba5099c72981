//! Circuit parameters resident on a device: the query bases of one circuit
//! ([`DeviceSrs`]), and the least-recently-used set that keeps several circuits' bases
//! within a VRAM budget ([`Lru`]).

use std::collections::HashMap;
use std::sync::Arc;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use cuzk_kernels::{G1Bases, G2Bases, GpuDevice};

use super::vram::QueryLens;

/// The five query bases of one circuit on one device (H, L, A, B in G1, B in G2), in the
/// parameters' order. Invariant: each holds exactly the points of the parameters it was
/// uploaded from (or, for benchmarks, the synthetic points it was built from).
pub struct DeviceSrs {
    /// H query.
    pub h: G1Bases,
    /// L query.
    pub l: G1Bases,
    /// A query (inputs first, then the aux variables used in A).
    pub a: G1Bases,
    /// B query in G1 (inputs used in B, then aux variables used in B).
    pub b_g1: G1Bases,
    /// B query in G2.
    pub b_g2: G2Bases,
}

impl std::fmt::Debug for DeviceSrs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSrs")
            .field("lens", &self.lens())
            .field("bytes", &self.bytes())
            .finish()
    }
}

impl DeviceSrs {
    /// Uploads `params`' query bases to `dev` (pageable copies, about 10 GB/s).
    pub fn upload(dev: &GpuDevice, params: &Parameters<Bls12>) -> cuzk_kernels::Result<Self> {
        Ok(DeviceSrs {
            h: dev.upload_g1_bases(&params.h)?,
            l: dev.upload_g1_bases(&params.l)?,
            a: dev.upload_g1_bases(&params.a)?,
            b_g1: dev.upload_g1_bases(&params.b_g1)?,
            b_g2: dev.upload_g2_bases(&params.b_g2)?,
        })
    }

    /// Point counts of the five queries.
    pub fn lens(&self) -> QueryLens {
        QueryLens {
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
            b_g2: self.b_g2.len(),
        }
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        [
            self.h.num_bytes(),
            self.l.num_bytes(),
            self.a.num_bytes(),
            self.b_g1.num_bytes(),
            self.b_g2.num_bytes(),
        ]
        .iter()
        .map(|&b| b as u64)
        .sum()
    }
}

struct Entry<T> {
    value: Arc<T>,
    bytes: u64,
    last_used: u64,
}

/// Values of known byte sizes kept under a byte budget; when a new value needs room, the
/// least recently used ones are dropped first.
///
/// Invariant: `used() <= budget()` after every operation, and `used()` is the sum of the
/// sizes of the values held. A dropped value lives on while a caller still holds its `Arc`
/// (its device memory is freed when the last reference goes).
pub struct Lru<T> {
    budget: u64,
    used: u64,
    tick: u64,
    entries: HashMap<u64, Entry<T>>,
}

impl<T> Lru<T> {
    /// An empty set with a budget of `budget` bytes.
    pub fn new(budget: u64) -> Self {
        Lru {
            budget,
            used: 0,
            tick: 0,
            entries: HashMap::new(),
        }
    }

    /// The budget in bytes.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Bytes of the values held.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Whether `key` is held.
    pub fn contains(&self, key: u64) -> bool {
        self.entries.contains_key(&key)
    }

    /// The values held, in no particular order (does not mark them used).
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.entries.values().map(|e| &*e.value)
    }

    /// Keys held, least recently used first.
    pub fn keys_by_age(&self) -> Vec<u64> {
        let mut v: Vec<(u64, u64)> = self
            .entries
            .iter()
            .map(|(k, e)| (e.last_used, *k))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, k)| k).collect()
    }

    /// The value of `key`, marked as used now.
    pub fn get(&mut self, key: u64) -> Option<Arc<T>> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(&key).map(|e| {
            e.last_used = tick;
            e.value.clone()
        })
    }

    /// Drops least recently used values until `bytes` more fit in the budget. Returns the
    /// keys dropped, or `None` (dropping nothing) when `bytes` exceeds the whole budget.
    pub fn make_room(&mut self, bytes: u64) -> Option<Vec<u64>> {
        if bytes > self.budget {
            return None;
        }
        let mut dropped = Vec::new();
        for key in self.keys_by_age() {
            if self.used + bytes <= self.budget {
                break;
            }
            self.remove(key);
            dropped.push(key);
        }
        Some(dropped)
    }

    /// Holds `value` of `bytes` under `key`, marked as used now; call [`Lru::make_room`]
    /// first. Returns `value` back (as `Err`) when it does not fit.
    pub fn insert(&mut self, key: u64, value: T, bytes: u64) -> Result<Arc<T>, T> {
        self.remove(key);
        if self.used + bytes > self.budget {
            return Err(value);
        }
        self.tick += 1;
        let value = Arc::new(value);
        self.entries.insert(
            key,
            Entry {
                value: value.clone(),
                bytes,
                last_used: self.tick,
            },
        );
        self.used += bytes;
        Ok(value)
    }

    /// Drops `key`'s value; returns whether it was held.
    pub fn remove(&mut self, key: u64) -> bool {
        match self.entries.remove(&key) {
            Some(e) => {
                self.used -= e.bytes;
                true
            }
            None => false,
        }
    }

    /// Drops every value.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.used = 0;
    }

    /// Changes the budget, dropping least recently used values until the rest fit.
    pub fn set_budget(&mut self, budget: u64) {
        self.budget = budget;
        for key in self.keys_by_age() {
            if self.used <= self.budget {
                break;
            }
            self.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_goes_first() {
        let mut lru = Lru::new(100);
        for (k, bytes) in [(1, 30), (2, 30), (3, 30)] {
            assert_eq!(lru.make_room(bytes), Some(vec![]));
            assert!(lru.insert(k, format!("v{k}"), bytes).is_ok());
        }
        assert_eq!(lru.used(), 90);
        // touch 1: now 2 is the oldest
        assert_eq!(lru.get(1).as_deref().map(String::as_str), Some("v1"));
        assert_eq!(lru.make_room(30), Some(vec![2]));
        assert!(lru.insert(4, "v4".into(), 30).is_ok());
        assert!(!lru.contains(2));
        assert_eq!(lru.keys_by_age(), vec![3, 1, 4]);
        // a big value drops several
        assert_eq!(lru.make_room(70), Some(vec![3, 1]));
        assert!(lru.insert(5, "v5".into(), 70).is_ok());
        assert_eq!(lru.used(), 100);
        assert_eq!(lru.keys_by_age(), vec![4, 5]);
    }

    #[test]
    fn too_big_is_refused_without_dropping_anything() {
        let mut lru = Lru::new(50);
        assert!(lru.insert(1, 1u8, 40).is_ok());
        assert_eq!(lru.make_room(51), None);
        assert!(lru.contains(1));
        assert_eq!(lru.insert(2, 2u8, 20), Err(2), "no room made: refused");
        assert_eq!(lru.used(), 40);
    }

    #[test]
    fn reinserting_replaces_and_budget_changes_evict() {
        let mut lru = Lru::new(100);
        assert!(lru.insert(1, 'a', 40).is_ok());
        assert!(lru.insert(1, 'b', 50).is_ok());
        assert_eq!(lru.used(), 50);
        assert_eq!(lru.get(1).as_deref(), Some(&'b'));
        assert!(lru.insert(2, 'c', 50).is_ok());
        lru.set_budget(60);
        assert_eq!(lru.keys_by_age(), vec![2]);
        assert_eq!(lru.used(), 50);
        // a value held by a caller outlives its eviction
        let held = lru.get(2).expect("held");
        assert!(lru.remove(2));
        assert!(!lru.remove(2));
        assert_eq!(*held, 'c');
        lru.clear();
        assert_eq!(lru.used(), 0);
    }
}
