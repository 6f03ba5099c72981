//! CPU references with bellperson 0.27's `EvaluationDomain` conventions.

use blstrs::Scalar;
use ff::{Field, PrimeField};

use crate::ntt::{omega, NttKind};

/// In-place radix-2 NTT on the CPU (serial; for tests). `a.len()` must be a power of two >= 2.
pub fn ntt(a: &mut [Scalar], kind: NttKind) {
    let n = a.len();
    assert!(
        n.is_power_of_two() && n >= 2,
        "NTT length must be 2^k, k >= 1"
    );
    let log_n = n.trailing_zeros();
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    if kind == NttKind::CosetForward {
        distribute_powers(a, g);
    }
    let w = omega(log_n);
    let inverse = matches!(kind, NttKind::Inverse | NttKind::CosetInverse);
    let w = if inverse { w.invert().unwrap() } else { w };
    serial_fft(a, w, log_n);
    if inverse {
        let minv = Scalar::from(n as u64).invert().unwrap();
        a.iter_mut().for_each(|x| *x *= minv);
    }
    if kind == NttKind::CosetInverse {
        distribute_powers(a, g.invert().unwrap());
    }
}

/// `a_i *= g^i` (bellperson's `distribute_powers`).
pub fn distribute_powers(a: &mut [Scalar], g: Scalar) {
    let mut u = Scalar::ONE;
    for x in a.iter_mut() {
        *x *= u;
        u *= g;
    }
}

/// bellperson's (ec-gpu's) `serial_fft`: bit reversal, then Cooley-Tukey.
pub fn serial_fft(a: &mut [Scalar], omega: Scalar, log_n: u32) {
    fn bitreverse(mut n: u32, l: u32) -> u32 {
        let mut r = 0;
        for _ in 0..l {
            r = (r << 1) | (n & 1);
            n >>= 1;
        }
        r
    }
    let n = a.len() as u32;
    for k in 0..n {
        let rk = bitreverse(k, log_n);
        if k < rk {
            a.swap(rk as usize, k as usize);
        }
    }
    let mut m = 1;
    for _ in 0..log_n {
        let w_m = omega.pow_vartime([u64::from(n / (2 * m))]);
        let mut k = 0;
        while k < n {
            let mut w = Scalar::ONE;
            for j in 0..m {
                let mut t = a[(k + j + m) as usize];
                t *= w;
                let mut tmp = a[(k + j) as usize];
                tmp -= t;
                a[(k + j + m) as usize] = tmp;
                a[(k + j) as usize] += t;
                w *= w_m;
            }
            k += 2 * m;
        }
        m *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    /// The reference against the definition a'_i = sum_j a_j w^(ij).
    #[test]
    fn reference_ntt_matches_the_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for log_n in 1..=5u32 {
            let n = 1usize << log_n;
            let a: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let w = omega(log_n);
            let naive: Vec<Scalar> = (0..n)
                .map(|i| {
                    (0..n).fold(Scalar::ZERO, |acc, j| {
                        acc + a[j] * w.pow_vartime([(i * j) as u64])
                    })
                })
                .collect();
            let mut b = a.clone();
            ntt(&mut b, NttKind::Forward);
            assert_eq!(b, naive, "log_n {log_n}");
            ntt(&mut b, NttKind::Inverse);
            assert_eq!(b, a);
            ntt(&mut b, NttKind::CosetForward);
            ntt(&mut b, NttKind::CosetInverse);
            assert_eq!(b, a);
        }
    }
}
