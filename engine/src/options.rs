//! How proofs are made: the randomisers r and s, verification before a proof is returned,
//! and synthesis through the PCE or in full. The Engine takes them in its configuration
//! (`EngineConfig::prove`); [`crate::prove_circuit`] takes them per call.

use blstrs::Scalar;
use ff::Field;

/// How the randomisers r and s are chosen.
#[derive(Clone, Copy, Debug, Default)]
pub enum Randomness {
    /// Fresh random r, s per partition (what production uses).
    #[default]
    Random,
    /// Fixed r, s for every partition: reproducible proofs, for tests against bellperson.
    Fixed(Scalar, Scalar),
}

impl Randomness {
    /// The r and s of one proof: the fixed pair, or a fresh pair from the operating
    /// system's random source. Never reuse a random pair for a second proof.
    pub fn draw(&self) -> (Scalar, Scalar) {
        match *self {
            Randomness::Fixed(r, s) => (r, s),
            Randomness::Random => {
                let mut rng = rand::rngs::OsRng;
                (Scalar::random(&mut rng), Scalar::random(&mut rng))
            }
        }
    }
}

/// Options of proving.
#[derive(Clone, Debug)]
pub struct ProveOptions {
    /// Choice of r and s.
    pub randomness: Randomness,
    /// Verify every partition proof before returning it (default true). A proof that fails
    /// is an error, never an output.
    pub verify: bool,
    /// Synthesise through the PCE (recorded constraints + witness-only synthesis + sparse
    /// products) instead of full synthesis (default true: 1.64x as fast for a 2 KiB PoRep,
    /// the same assignment). Off, each partition is synthesised in full, as bellperson
    /// does; the tests compare the two.
    pub pce: bool,
}

impl Default for ProveOptions {
    fn default() -> Self {
        ProveOptions {
            randomness: Randomness::Random,
            verify: true,
            pce: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_randomness_is_the_pair_and_random_draws_differ() {
        let (r, s) = (Scalar::from(3u64), Scalar::from(5u64));
        assert_eq!(Randomness::Fixed(r, s).draw(), (r, s));
        let (a, b) = Randomness::Random.draw();
        let (c, d) = Randomness::Random.draw();
        assert!(
            a != c && b != d && a != b,
            "fresh pairs are drawn each time"
        );
    }
}
