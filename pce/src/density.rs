//! Density bit sets: which variables appear (with a non-zero coefficient) in a query.
//!
//! Groth16 parameters store the A and B query points only for the variables whose QAP
//! polynomial is not identically zero. The prover must pair the i-th stored point with the
//! i-th variable whose bit is set here, exactly as bellperson's `DensityTracker` does.

/// A growable bit set with a running count of set bits.
///
/// Invariant: `count == number of set bits among the first len bits`, and bits past `len`
/// in the last word are zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    count: usize,
}

impl Density {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one variable, not (yet) used.
    pub fn push_unset(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Appends one variable with the given bit.
    pub fn push(&mut self, bit: bool) {
        self.push_unset();
        if bit {
            self.set(self.len - 1);
        }
    }

    /// Marks variable `i` as used. Panics if `i >= len`, which only a bug in a constraint
    /// system can cause (a variable index is always one it allocated).
    #[inline]
    pub fn set(&mut self, i: usize) {
        assert!(i < self.len, "density index {i} out of range {}", self.len);
        let (w, b) = (i / 64, i % 64);
        let mask = 1u64 << b;
        if self.words[w] & mask == 0 {
            self.words[w] |= mask;
            self.count += 1;
        }
    }

    /// Whether variable `i` is used; `false` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no variable is tracked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of used variables (set bits).
    pub fn count(&self) -> usize {
        self.count
    }

    /// The bits as little-endian 64-bit words: variable `i` is bit `i % 64` of word `i / 64`;
    /// `ceil(len / 64)` words, bits past `len` zero. (The layout the GPU prover uploads.)
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Iterates over the bits in order.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(move |i| self.get(i))
    }

    /// Concatenates `other` after `self`, as bellperson's `DensityTracker::extend` does.
    ///
    /// For an input density (`is_input == true`) both sets start with the constant ONE: the
    /// two ONE bits are merged (OR) and `other`'s first bit is dropped.
    pub fn extend(&mut self, other: &Density, is_input: bool) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        let skip = if is_input {
            if other.get(0) {
                self.set(0);
            }
            1
        } else {
            0
        };
        for i in skip..other.len {
            self.push(other.get(i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_set_count() {
        let mut d = Density::new();
        for i in 0..130 {
            d.push(i % 3 == 0);
        }
        assert_eq!(d.len(), 130);
        assert_eq!(d.count(), (0..130).filter(|i| i % 3 == 0).count());
        d.set(1);
        d.set(1);
        assert!(d.get(1));
        assert!(!d.get(2));
        assert!(!d.get(500));
        assert_eq!(d.count(), 45);
        assert_eq!(d.words().len(), 3);
        assert_eq!(d.words()[0] & 0b1111, 0b1011, "bits 0, 1, 3 set");
        assert_eq!(d.words()[2] >> 2, 0, "no bit past len");
        let ones: u32 = d.words().iter().map(|w| w.count_ones()).sum();
        assert_eq!(ones as usize, d.count());
    }

    #[test]
    fn extend_merges_the_one_of_inputs() {
        let mut a = Density::new();
        a.push(false);
        a.push(true);
        let mut b = Density::new();
        b.push(true);
        b.push(false);
        b.push(true);
        let mut x = a.clone();
        x.extend(&b, true);
        assert_eq!(x.iter().collect::<Vec<_>>(), vec![true, true, false, true]);
        assert_eq!(x.count(), 3);
        let mut y = a.clone();
        y.extend(&b, false);
        assert_eq!(y.len(), 5);
        assert_eq!(y.count(), 3);
    }
}
