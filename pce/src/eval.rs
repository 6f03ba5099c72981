//! Evaluation: a = A·z, b = B·z, c = C·z for a witness z = (inputs, aux), in parallel over
//! rows, with the common cases (coefficient ±1, witness value 0 or 1) free of multiplications.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::r1cs::{Csr, R1cs, COEFF_MINUS_ONE, COEFF_ONE};
use crate::synthesis::Assignment;

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 1 << 14;

/// Value classes of the witness: multiplications are skipped for 0 and 1.
const ZERO: u8 = 0;
const ONE: u8 = 1;
const OTHER: u8 = 2;

fn classify(z: &[Scalar]) -> Vec<u8> {
    z.par_iter()
        .map(|v| {
            if bool::from(v.is_zero()) {
                ZERO
            } else if *v == Scalar::ONE {
                ONE
            } else {
                OTHER
            }
        })
        .collect()
}

fn spmv(m: &Csr, coeffs: &[Scalar], z: &[Scalar], kind: &[u8]) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; m.rows()];
    out.par_chunks_mut(ROWS_PER_TASK)
        .enumerate()
        .for_each(|(t, chunk)| {
            let r0 = t * ROWS_PER_TASK;
            for (i, slot) in chunk.iter_mut().enumerate() {
                let r = r0 + i;
                let (s, e) = (m.row_ptr[r] as usize, m.row_ptr[r + 1] as usize);
                let mut acc = Scalar::ZERO;
                for k in s..e {
                    let col = m.cols[k] as usize;
                    let ci = m.coeff_idx[k];
                    match (kind[col], ci) {
                        (ZERO, _) => {}
                        (ONE, COEFF_ONE) => acc += Scalar::ONE,
                        (ONE, COEFF_MINUS_ONE) => acc -= Scalar::ONE,
                        (ONE, _) => acc += coeffs[ci as usize],
                        (_, COEFF_ONE) => acc += z[col],
                        (_, COEFF_MINUS_ONE) => acc -= z[col],
                        _ => acc += z[col] * coeffs[ci as usize],
                    }
                }
                *slot = acc;
            }
        });
    out
}

/// Builds the full [`Assignment`] from a recorded circuit and a witness.
///
/// Errors if the witness does not have the recorded circuit's shape (a stale or foreign
/// recording).
#[tracing::instrument(name = "matvec", level = "debug", skip_all, fields(rows = r1cs.num_constraints()))]
pub fn evaluate(r1cs: &R1cs, input: Vec<Scalar>, aux: Vec<Scalar>) -> Result<Assignment> {
    if input.len() != r1cs.num_inputs || aux.len() != r1cs.num_aux {
        return Err(Error::ShapeMismatch(format!(
            "witness has {} inputs and {} aux variables, the recorded circuit {} and {}",
            input.len(),
            aux.len(),
            r1cs.num_inputs,
            r1cs.num_aux
        )));
    }
    let mut z = input;
    let n_in = z.len();
    z.extend_from_slice(&aux);
    let kind = classify(&z);
    let (a, (b, c)) = rayon::join(
        || spmv(&r1cs.a, &r1cs.coeffs, &z, &kind),
        || {
            rayon::join(
                || spmv(&r1cs.b, &r1cs.coeffs, &z, &kind),
                || spmv(&r1cs.c, &r1cs.coeffs, &z, &kind),
            )
        },
    );
    z.truncate(n_in);
    Ok(Assignment {
        input: z,
        aux,
        a,
        b,
        c,
        a_aux_density: r1cs.a_aux_density.clone(),
        b_input_density: r1cs.b_input_density.clone(),
        b_aux_density: r1cs.b_aux_density.clone(),
    })
}
