//! The CPU backend's H polynomial at 2^k points (default 2^20), three runs unless given: for a, b, c with
//! c = a b element-wise (a satisfied assignment: the six-transform path) and with one c_i
//! changed (the product check fails at once, then bellperson's seven transforms).
//! `cargo run --release -p cuzk-engine --example h_polynomial_cpu -- 20 [runs]`
use blstrs::Scalar;
use ff::Field;
use rand_core::SeedableRng;
use std::time::Instant;
fn main() {
    let log: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let n = 1usize << log;
    let mut rng = rand_chacha::ChaCha8Rng::from_seed([3; 32]);
    let a: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let b: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    let mut bad = c.clone();
    bad[1] += Scalar::ONE;
    let runs: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    for r in 0..runs {
        let t = Instant::now();
        let h6 = cuzk_engine::cpu::ntt::compute_h(a.clone(), b.clone(), c.clone()).unwrap();
        let t6 = t.elapsed();
        let t = Instant::now();
        let h7 = cuzk_engine::cpu::ntt::compute_h(a.clone(), b.clone(), bad.clone()).unwrap();
        let t7 = t.elapsed();
        assert_eq!(h6.len(), h7.len());
        println!(
            "run {r} 2^{log}: c = a b (six transforms) {t6:.2?}, one c_i changed (seven) {t7:.2?}"
        );
    }
}
