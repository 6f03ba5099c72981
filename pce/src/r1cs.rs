//! A recorded constraint system: A, B and C as compressed sparse rows over one column space
//! (inputs first, then aux), plus the density bit sets the prover needs.

use blstrs::Scalar;

use crate::density::Density;

/// One sparse matrix in CSR form. Row `r` holds entries `row_ptr[r]..row_ptr[r+1]`; entry
/// `k` is column `cols[k]` with coefficient `coeffs[coeff_idx[k]]` of the owning [`R1cs`].
///
/// Invariants: `row_ptr.len() == rows + 1`, `row_ptr` is non-decreasing, starts at 0 and ends
/// at `cols.len() == coeff_idx.len()`; no stored coefficient is zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    /// Row start offsets (`rows + 1` entries).
    pub row_ptr: Vec<u32>,
    /// Column of each entry.
    pub cols: Vec<u32>,
    /// Index into the coefficient table of each entry.
    pub coeff_idx: Vec<u32>,
}

impl Csr {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }
}

/// Index of the coefficient ONE in every coefficient table.
pub const COEFF_ONE: u32 = 0;
/// Index of the coefficient -1 in every coefficient table.
pub const COEFF_MINUS_ONE: u32 = 1;

/// A circuit's constraint structure, independent of any witness.
///
/// Invariants: columns `0..num_inputs` are inputs (column 0 is ONE), columns
/// `num_inputs..num_inputs + num_aux` are aux variables; the three matrices have
/// `num_constraints` rows, the last `num_inputs` of which are bellperson's
/// `input_i * 0 = 0` rows; `coeffs[0] == ONE`, `coeffs[1] == -ONE`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct R1cs {
    /// Inputs including ONE.
    pub num_inputs: usize,
    /// Aux variables.
    pub num_aux: usize,
    /// A matrix.
    pub a: Csr,
    /// B matrix.
    pub b: Csr,
    /// C matrix.
    pub c: Csr,
    /// Distinct coefficients.
    pub coeffs: Vec<Scalar>,
    /// Aux columns used in A.
    pub a_aux_density: Density,
    /// Input columns used in B.
    pub b_input_density: Density,
    /// Aux columns used in B.
    pub b_aux_density: Density,
}

impl R1cs {
    /// Number of constraints (rows), including the input rows.
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// Stored entries over the three matrices.
    pub fn nnz(&self) -> usize {
        self.a.nnz() + self.b.nnz() + self.c.nnz()
    }
}

/// Recomputes the density bit sets from the matrices (columns used in A; in B).
pub fn densities(
    a: &Csr,
    b: &Csr,
    num_inputs: usize,
    num_aux: usize,
) -> (Density, Density, Density) {
    let mut a_aux = Density::new();
    let mut b_aux = Density::new();
    let mut b_in = Density::new();
    for _ in 0..num_aux {
        a_aux.push_unset();
        b_aux.push_unset();
    }
    for _ in 0..num_inputs {
        b_in.push_unset();
    }
    for &c in &a.cols {
        let c = c as usize;
        if c >= num_inputs {
            a_aux.set(c - num_inputs);
        }
    }
    for &c in &b.cols {
        let c = c as usize;
        if c >= num_inputs {
            b_aux.set(c - num_inputs);
        } else {
            b_in.set(c);
        }
    }
    (a_aux, b_in, b_aux)
}
