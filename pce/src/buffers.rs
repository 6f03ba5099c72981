//! Partition-sized scalar vectors kept for the next partition instead of handed back to the
//! operating system.
//!
//! A 32 GiB PoRep partition's witness and its a, b and c evaluations are four vectors of
//! about 130M scalars (4.2 GB each). Allocated fresh for every partition, each page is
//! faulted in and zeroed by the kernel, and on a host whose memory the parameters and other
//! partitions fill the kernel may first have to compact memory. On the build machine a
//! partition's witness on one thread took 6.7-7.2 s (12.1 s the first time) in a fresh
//! vector and 2.2-2.3 s in a kept one. The prover hands its vectors back here once the
//! device has them ([`give`]); synthesis takes them ([`take_empty`], [`take_zeroed`]); the
//! engine frees them ([`trim`]) when it holds no job.
//!
//! Invariants: only vectors of at least [`MIN_KEPT`] scalars are kept, at most [`MAX_KEPT`] of
//! them (what one partition uses: a witness and three evaluations), so the memory held
//! between jobs is bounded by one partition's vectors; a vector is handed out only for a
//! request it can hold without growing and no more than twice its size. A poisoned pool
//! behaves as an empty one.

use std::sync::Mutex;

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

/// Vectors shorter than this (2^20 scalars, 32 MiB) are not kept: test-size circuits.
pub const MIN_KEPT: usize = 1 << 20;
/// At most this many vectors are kept.
pub const MAX_KEPT: usize = 4;

static POOL: Mutex<Vec<Vec<Scalar>>> = Mutex::new(Vec::new());

/// An empty vector with room for at least `capacity` scalars: a kept one when one fits (its
/// pages already mapped), else a new allocation.
pub fn take_empty(capacity: usize) -> Vec<Scalar> {
    if capacity >= MIN_KEPT {
        if let Ok(mut pool) = POOL.lock() {
            let best = pool
                .iter()
                .enumerate()
                .filter(|(_, v)| v.capacity() >= capacity && v.capacity() / 2 <= capacity)
                .min_by_key(|(_, v)| v.capacity())
                .map(|(i, _)| i);
            if let Some(i) = best {
                let mut v = pool.swap_remove(i);
                v.clear();
                return v;
            }
        }
    }
    Vec::with_capacity(capacity)
}

/// `len` zeros, in a kept vector when one fits; written on the current rayon pool when
/// `parallel`, else on this thread.
pub fn take_zeroed(len: usize, parallel: bool) -> Vec<Scalar> {
    let mut v = take_empty(len);
    if parallel {
        v.par_extend(rayon::iter::repeat_n(Scalar::ZERO, len));
    } else {
        v.resize(len, Scalar::ZERO);
    }
    v
}

/// Keeps `v` for a later [`take_empty`] or [`take_zeroed`] when it is large enough and the
/// pool has room; otherwise gives it back, for the caller to free where freeing gigabytes
/// costs nothing it waits for.
pub fn give(v: Vec<Scalar>) -> Option<Vec<Scalar>> {
    if v.capacity() < MIN_KEPT {
        return Some(v);
    }
    match POOL.lock() {
        Ok(mut pool) if pool.len() < MAX_KEPT => {
            pool.push(v);
            None
        }
        _ => Some(v),
    }
}

/// Frees every kept vector (for a host that needs its memory back between jobs).
pub fn trim() {
    let kept = match POOL.lock() {
        Ok(mut pool) => std::mem::take(&mut *pool),
        Err(_) => Vec::new(),
    };
    drop(kept);
}

/// How many vectors are kept now, and their scalars in all.
pub fn kept() -> (usize, usize) {
    POOL.lock()
        .map(|pool| (pool.len(), pool.iter().map(Vec::capacity).sum()))
        .unwrap_or((0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool is process-wide: the tests that use it run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn a_given_vector_comes_back_zeroed_in_the_same_memory() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        trim();
        let mut v = take_zeroed(2 * MIN_KEPT, true);
        assert_eq!(v.len(), 2 * MIN_KEPT);
        assert!(v.iter().all(|x| bool::from(x.is_zero())));
        v.iter_mut().for_each(|x| *x = Scalar::ONE);
        let at = v.as_ptr();
        assert!(give(v).is_none(), "kept");
        assert_eq!(kept(), (1, 2 * MIN_KEPT));
        let again = take_zeroed(2 * MIN_KEPT - 5, false);
        assert_eq!(again.as_ptr(), at, "the kept memory, not a new allocation");
        assert_eq!(again.len(), 2 * MIN_KEPT - 5);
        assert!(again.iter().all(|x| bool::from(x.is_zero())), "zeroed");
        assert_eq!(kept(), (0, 0));
    }

    #[test]
    fn small_too_large_and_surplus_vectors_are_not_kept() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        trim();
        assert!(
            give(Vec::with_capacity(MIN_KEPT - 1)).is_some(),
            "too small"
        );
        for _ in 0..MAX_KEPT {
            assert!(give(Vec::with_capacity(4 * MIN_KEPT)).is_none());
        }
        assert!(
            give(Vec::with_capacity(4 * MIN_KEPT)).is_some(),
            "no room past MAX_KEPT"
        );
        // a request of less than half a kept vector's size gets a new allocation
        let small = take_empty(MIN_KEPT);
        assert!(small.capacity() < 4 * MIN_KEPT);
        assert_eq!(kept().0, MAX_KEPT);
        // one that fits takes a kept vector
        let fits = take_empty(3 * MIN_KEPT);
        assert_eq!(fits.capacity(), 4 * MIN_KEPT);
        assert_eq!(kept().0, MAX_KEPT - 1);
        trim();
        assert_eq!(kept(), (0, 0));
    }
}
