//! The evaluation domain of a circuit's H polynomial: its size follows from the number of
//! constraints alone. A leaf module: the shape checks ([`crate::prover`]), the CPU and
//! CUDA transforms and parameter generation all size their work by it.
//!
//! Conventions are bellperson 0.27's `EvaluationDomain`: the domain has `m = 2^k` points,
//! the smallest power of two not below the number of constraints, with generator
//! `omega = ROOT_OF_UNITY^(2^(S-k))`.

use blstrs::Scalar;
use ff::PrimeField;

use cuzk_kernels::ntt::omega;

use crate::error::{Error, Result};

/// An evaluation domain of size `2^log_m`. Invariant: `m == 1 << log_m`, `log_m < S` (Fr's
/// 2-adicity), and `omega` is a primitive m-th root of unity.
#[derive(Clone, Debug)]
pub struct Domain {
    /// log2 of the size.
    pub log_m: u32,
    /// The size.
    pub m: usize,
    /// Primitive m-th root of unity.
    pub omega: Scalar,
}

impl Domain {
    /// The smallest domain holding `n` points. Errors past Fr's 2-adicity (2^32).
    pub fn for_size(n: usize) -> Result<Self> {
        let m = n.max(1).next_power_of_two();
        let log_m = m.trailing_zeros();
        if log_m >= Scalar::S {
            return Err(Error::InvalidRequest(format!(
                "circuit of {n} constraints exceeds the largest NTT domain (2^{})",
                Scalar::S - 1
            )));
        }
        Ok(Domain {
            log_m,
            m,
            omega: omega(log_m),
        })
    }
}
