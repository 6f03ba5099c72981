//! The recording constraint system: runs a circuit's structure (never its witness closures)
//! and keeps A, B and C.

use std::collections::HashMap;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::{Field, PrimeField};

use crate::error::{Error, Result};
use crate::r1cs::{densities, Csr, R1cs, COEFF_MINUS_ONE, COEFF_ONE};

/// Column tag for inputs while recording (inputs and aux are numbered separately until the
/// end, because circuits interleave their allocation).
const INPUT_FLAG: u32 = 1 << 31;

#[derive(Clone, Debug, Default)]
struct Matrix {
    row_ptr: Vec<u32>,
    cols: Vec<u32>,
    coeff_idx: Vec<u32>,
}

impl Matrix {
    fn new() -> Self {
        Matrix {
            row_ptr: vec![0],
            ..Default::default()
        }
    }
}

/// Records the constraint structure of a circuit.
///
/// Allocation closures are never called, so a blank circuit (no witness) records the same
/// structure as a real one. Extensibility matches [`crate::WitnessCs`] and
/// [`crate::SynthesisCs`]: all three are extensible and start with exactly one ONE input.
#[derive(Debug)]
pub struct RecordingCs {
    num_inputs: u32,
    num_aux: u32,
    m: [Matrix; 3],
    coeffs: Vec<Scalar>,
    coeff_ids: HashMap<[u8; 32], u32>,
    overflow: bool,
}

impl RecordingCs {
    fn coeff(&mut self, c: &Scalar) -> u32 {
        let key = c.to_repr();
        if let Some(&i) = self.coeff_ids.get(&key) {
            return i;
        }
        let i = self.coeffs.len() as u32;
        self.coeffs.push(*c);
        self.coeff_ids.insert(key, i);
        i
    }

    fn push_lc(&mut self, which: usize, lc: &LinearCombination<Scalar>) {
        let mut terms = Vec::with_capacity(lc.len());
        for (&i, c) in lc.iter_inputs() {
            if !bool::from(c.is_zero()) {
                terms.push((i as u32 | INPUT_FLAG, *c));
            }
        }
        for (&i, c) in lc.iter_aux() {
            if !bool::from(c.is_zero()) {
                terms.push((i as u32, *c));
            }
        }
        for (col, c) in terms {
            let ci = self.coeff(&c);
            let m = &mut self.m[which];
            m.cols.push(col);
            m.coeff_idx.push(ci);
        }
        let m = &mut self.m[which];
        if m.cols.len() > u32::MAX as usize {
            self.overflow = true;
        }
        m.row_ptr.push(m.cols.len() as u32);
    }

    /// Finishes recording: appends the `input_i * 0 = 0` rows, numbers the columns (inputs
    /// first) and derives the densities.
    pub fn finish(mut self) -> Result<R1cs> {
        for i in 0..self.num_inputs as usize {
            self.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
        }
        if self.overflow || self.num_inputs as u64 + self.num_aux as u64 >= INPUT_FLAG as u64 {
            return Err(Error::TooLarge);
        }
        let ni = self.num_inputs;
        let na = self.num_aux as usize;
        let [a, b, c] = self.m;
        // inputs keep their index, aux j becomes column ni + j
        let fix = |m: Matrix| Csr {
            cols: m
                .cols
                .into_iter()
                .map(|col| {
                    if col & INPUT_FLAG != 0 {
                        col & !INPUT_FLAG
                    } else {
                        ni + col
                    }
                })
                .collect(),
            row_ptr: m.row_ptr,
            coeff_idx: m.coeff_idx,
        };
        let (a, b, c) = (fix(a), fix(b), fix(c));
        let (a_aux, b_in, b_aux) = densities(&a, &b, ni as usize, na);
        Ok(R1cs {
            num_inputs: ni as usize,
            num_aux: na,
            a,
            b,
            c,
            coeffs: self.coeffs,
            a_aux_density: a_aux,
            b_input_density: b_in,
            b_aux_density: b_aux,
        })
    }
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn new() -> Self {
        let mut cs = RecordingCs {
            num_inputs: 0,
            num_aux: 0,
            m: [Matrix::new(), Matrix::new(), Matrix::new()],
            coeffs: Vec::new(),
            coeff_ids: HashMap::new(),
            overflow: false,
        };
        let one = cs.coeff(&Scalar::ONE);
        let minus_one = cs.coeff(&-Scalar::ONE);
        debug_assert_eq!((one, minus_one), (COEFF_ONE, COEFF_MINUS_ONE));
        cs
    }

    fn alloc<F, A, AR>(&mut self, _: A, _f: F) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_aux += 1;
        Ok(Variable(Index::Aux(self.num_aux as usize - 1)))
    }

    fn alloc_input<F, A, AR>(
        &mut self,
        _: A,
        _f: F,
    ) -> std::result::Result<Variable, SynthesisError>
    where
        F: FnOnce() -> std::result::Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_inputs += 1;
        Ok(Variable(Index::Input(self.num_inputs as usize - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.push_lc(0, &a(LinearCombination::zero()));
        self.push_lc(1, &b(LinearCombination::zero()));
        self.push_lc(2, &c(LinearCombination::zero()));
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`'s constraints with its columns renumbered: its ONE is ours, its other
    /// inputs and its aux variables follow ours, as bellperson's `extend` lays them out.
    fn extend(&mut self, other: &Self) {
        let in_base = self.num_inputs.saturating_sub(1);
        let aux_base = self.num_aux;
        let remap: Vec<u32> = other.coeffs.iter().map(|c| self.coeff(c)).collect();
        for w in 0..3 {
            let src = &other.m[w];
            for r in 0..src.row_ptr.len() - 1 {
                let (s, e) = (src.row_ptr[r] as usize, src.row_ptr[r + 1] as usize);
                for k in s..e {
                    let col = src.cols[k];
                    let col = if col & INPUT_FLAG != 0 {
                        let i = col & !INPUT_FLAG;
                        if i == 0 {
                            INPUT_FLAG
                        } else {
                            (in_base + i) | INPUT_FLAG
                        }
                    } else {
                        aux_base + col
                    };
                    let ci = remap[src.coeff_idx[k] as usize];
                    let m = &mut self.m[w];
                    m.cols.push(col);
                    m.coeff_idx.push(ci);
                }
                let m = &mut self.m[w];
                m.row_ptr.push(m.cols.len() as u32);
            }
        }
        self.num_inputs += other.num_inputs.saturating_sub(1);
        self.num_aux += other.num_aux;
        self.overflow |= other.overflow;
    }
}

/// Records `circuit`'s structure: ONE as input 0, the circuit, then the input rows.
#[tracing::instrument(level = "debug", skip_all)]
pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<R1cs> {
    let mut cs = RecordingCs::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    cs.finish()
}
