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

fn class_of(v: &Scalar) -> u8 {
    if bool::from(v.is_zero()) {
        ZERO
    } else if *v == Scalar::ONE {
        ONE
    } else {
        OTHER
    }
}

/// The class of each column's value: the inputs', then the aux values'.
fn classify(input: &[Scalar], aux: &[Scalar], parallel: bool) -> Vec<u8> {
    if parallel {
        input.par_iter().chain(aux).map(class_of).collect()
    } else {
        input.iter().chain(aux).map(class_of).collect()
    }
}

/// The witness z = (inputs, aux) as the two vectors it arrives in, never copied into one: a
/// 32 GiB PoRep partition's aux is 4.2 GB.
#[derive(Clone, Copy)]
struct Witness<'a> {
    input: &'a [Scalar],
    aux: &'a [Scalar],
    /// The class of each column's value (inputs, then aux).
    kind: &'a [u8],
}

impl Witness<'_> {
    /// Column `col`'s value (inputs first, then aux).
    #[inline(always)]
    fn value(&self, col: usize) -> Scalar {
        match col.checked_sub(self.input.len()) {
            Some(i) => self.aux[i],
            None => self.input[col],
        }
    }
}

/// Rows `r0..r0 + out.len()` of `m · z`.
fn spmv_rows(m: &Csr, coeffs: &[Scalar], z: Witness<'_>, r0: usize, out: &mut [Scalar]) {
    for (i, slot) in out.iter_mut().enumerate() {
        let r = r0 + i;
        let (s, e) = (m.row_ptr[r] as usize, m.row_ptr[r + 1] as usize);
        let mut acc = Scalar::ZERO;
        for k in s..e {
            let col = m.cols[k] as usize;
            let ci = m.coeff_idx[k];
            match (z.kind[col], ci) {
                (ZERO, _) => {}
                (ONE, COEFF_ONE) => acc += Scalar::ONE,
                (ONE, COEFF_MINUS_ONE) => acc -= Scalar::ONE,
                (ONE, _) => acc += coeffs[ci as usize],
                (_, COEFF_ONE) => acc += z.value(col),
                (_, COEFF_MINUS_ONE) => acc -= z.value(col),
                _ => acc += z.value(col) * coeffs[ci as usize],
            }
        }
        *slot = acc;
    }
}

fn spmv(m: &Csr, coeffs: &[Scalar], z: Witness<'_>, parallel: bool) -> Vec<Scalar> {
    let mut out = crate::buffers::take_zeroed(m.rows(), parallel);
    if parallel {
        out.par_chunks_mut(ROWS_PER_TASK)
            .enumerate()
            .for_each(|(t, chunk)| spmv_rows(m, coeffs, z, t * ROWS_PER_TASK, chunk));
    } else {
        spmv_rows(m, coeffs, z, 0, &mut out);
    }
    out
}

/// Builds the full [`Assignment`] from a recorded circuit and a witness, in parallel over
/// rows on the current rayon pool.
///
/// Errors if the witness does not have the recorded circuit's shape (a stale or foreign
/// recording).
#[tracing::instrument(name = "pce_evaluate", level = "debug", skip_all, fields(rows = r1cs.num_constraints()))]
pub fn evaluate(r1cs: &R1cs, input: Vec<Scalar>, aux: Vec<Scalar>) -> Result<Assignment> {
    evaluate_with(r1cs, input, aux, true)
}

/// As [`evaluate`], on the calling thread only: for a thread that is one of many building
/// partitions side by side, where the host's cores are already shared out and handing the
/// rows to a pool would only queue them behind other partitions' work.
#[tracing::instrument(name = "pce_evaluate", level = "debug", skip_all, fields(rows = r1cs.num_constraints(), parallel = false))]
pub fn evaluate_sequential(
    r1cs: &R1cs,
    input: Vec<Scalar>,
    aux: Vec<Scalar>,
) -> Result<Assignment> {
    evaluate_with(r1cs, input, aux, false)
}

fn evaluate_with(
    r1cs: &R1cs,
    input: Vec<Scalar>,
    aux: Vec<Scalar>,
    parallel: bool,
) -> Result<Assignment> {
    if input.len() != r1cs.num_inputs || aux.len() != r1cs.num_aux {
        return Err(Error::ShapeMismatch(format!(
            "witness has {} inputs and {} aux variables, the recorded circuit {} and {}",
            input.len(),
            aux.len(),
            r1cs.num_inputs,
            r1cs.num_aux
        )));
    }
    let kind = classify(&input, &aux, parallel);
    let z = Witness {
        input: &input,
        aux: &aux,
        kind: &kind,
    };
    let (a, (b, c)) = if parallel {
        rayon::join(
            || spmv(&r1cs.a, &r1cs.coeffs, z, true),
            || {
                rayon::join(
                    || spmv(&r1cs.b, &r1cs.coeffs, z, true),
                    || spmv(&r1cs.c, &r1cs.coeffs, z, true),
                )
            },
        )
    } else {
        (
            spmv(&r1cs.a, &r1cs.coeffs, z, false),
            (
                spmv(&r1cs.b, &r1cs.coeffs, z, false),
                spmv(&r1cs.c, &r1cs.coeffs, z, false),
            ),
        )
    };
    Ok(Assignment {
        input,
        aux,
        a,
        b,
        c,
        a_aux_density: r1cs.a_aux_density.clone(),
        b_input_density: r1cs.b_input_density.clone(),
        b_aux_density: r1cs.b_aux_density.clone(),
    })
}
