//! a = A·w, b = B·w, c = C·w by a row-parallel sparse product, each row checked (a·b = c).

use std::sync::atomic::{AtomicUsize, Ordering};

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use super::{
    witness::{ONE, OTHER},
    Matrix, Recording, Witness, INPUT_BIT,
};
use crate::{params::CircuitSize, prover::ProvingAssignment};

/// Rows per parallel task.
const CHUNK: usize = 1 << 12;

/// What the product needs of a coefficient code: its value and whether it is ±1.
#[derive(Clone, Copy)]
enum Coeff {
    One,
    MinusOne,
    Other(Fr),
}

struct Eval<'a> {
    dict: &'a [Coeff],
    w: &'a Witness,
}

impl Eval<'_> {
    #[inline]
    fn row(&self, m: &Matrix, r: usize) -> Fr {
        let (lo, hi) = (m.row_start[r] as usize, m.row_start[r + 1] as usize);
        let mut acc = Fr::ZERO;
        for (&col, &code) in m.cols[lo..hi].iter().zip(&m.coeffs[lo..hi]) {
            let coeff = self.dict[code as usize];
            let v = if col & INPUT_BIT != 0 {
                &self.w.inputs[(col & !INPUT_BIT) as usize]
            } else {
                let j = col as usize;
                match (self.w.classes[j / 32] >> (2 * (j % 32))) & 3 {
                    ONE => {
                        match coeff {
                            Coeff::One => acc += Fr::ONE,
                            Coeff::MinusOne => acc -= Fr::ONE,
                            Coeff::Other(k) => acc += k,
                        }
                        continue;
                    }
                    OTHER => &self.w.aux[j],
                    _ => continue,
                }
            };
            match coeff {
                Coeff::One => acc += v,
                Coeff::MinusOne => acc -= v,
                Coeff::Other(k) => acc += *v * k,
            }
        }
        acc
    }
}

/// The proving assignment of witness `w` under `rec`: the same vectors, densities and witness
/// full synthesis gives. `size` (from the parameters) reserves the vectors' room for the
/// prover's padding. Errors (as text) where the witness does not fit the recording or a row is
/// not satisfied: the recording is wrong for this circuit, or the witness is.
pub fn assignment(
    rec: &Recording,
    w: Witness,
    size: Option<CircuitSize>,
) -> Result<ProvingAssignment, String> {
    if w.inputs.len() != rec.inputs || w.aux.len() != rec.aux {
        return Err(format!(
            "the witness has {} inputs and {} aux values, the recording {} and {}",
            w.inputs.len(),
            w.aux.len(),
            rec.inputs,
            rec.aux
        ));
    }
    if w.classes.len() != w.aux.len().div_ceil(32) {
        return Err("the witness's class table does not match its aux values".into());
    }
    let n = rec.constraints();
    let dict: Vec<Coeff> = rec
        .dict
        .iter()
        .map(|k| {
            if *k == Fr::ONE {
                Coeff::One
            } else if *k == -Fr::ONE {
                Coeff::MinusOne
            } else {
                Coeff::Other(*k)
            }
        })
        .collect();
    let cap = size.map_or(n, |s| s.domain().max(n));
    let mut a = Vec::with_capacity(cap);
    let mut b = Vec::with_capacity(cap);
    let mut c = Vec::with_capacity(cap);
    a.resize(n, Fr::ZERO);
    b.resize(n, Fr::ZERO);
    c.resize(n, Fr::ZERO);
    let ev = Eval { dict: &dict, w: &w };
    let first_bad = AtomicUsize::new(usize::MAX);
    a.par_chunks_mut(CHUNK)
        .zip(b.par_chunks_mut(CHUNK))
        .zip(c.par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(i, ((a, b), c))| {
            let base = i * CHUNK;
            for (o, ((a, b), c)) in a.iter_mut().zip(b.iter_mut()).zip(c.iter_mut()).enumerate() {
                let r = base + o;
                *a = ev.row(&rec.a, r);
                *b = ev.row(&rec.b, r);
                *c = ev.row(&rec.c, r);
                if *a * *b != *c {
                    first_bad.fetch_min(r, Ordering::Relaxed);
                }
            }
        });
    let bad = first_bad.into_inner();
    if bad != usize::MAX {
        return Err(format!(
            "constraint {bad} of {n} is not satisfied: the recording does not fit this circuit's witness"
        ));
    }
    Ok(ProvingAssignment::from_parts(
        rec.a_aux_density.clone(),
        rec.b_input_density.clone(),
        rec.b_aux_density.clone(),
        a,
        b,
        c,
        w.inputs,
        w.aux,
    ))
}
