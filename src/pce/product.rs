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
const CHUNK: usize = 1 << 14;
/// Net counts of ±1 terms up to this size are added from a table.
const SMALL: i64 = 256;

struct Eval<'a> {
    /// Coefficients by code; codes 0 and 1 are `ONE` and `-ONE` (checked by
    /// [`Recording::check`]) and are never looked up.
    dict: &'a [Fr],
    /// `i * ONE` for `i` in `-SMALL..=SMALL`, at `i + SMALL`.
    small: &'a [Fr],
    inputs: &'a [Fr],
    classes: &'a [u64],
    /// The aux values, dense (read for class other only).
    aux: &'a [Fr],
}

impl Eval<'_> {
    #[inline]
    fn row(&self, m: &Matrix, r: usize) -> Fr {
        let (lo, hi) = (m.row_start[r] as usize, m.row_start[r + 1] as usize);
        // Most rows have one or two contributions: the first is taken as it is (no addition).
        let mut acc: Option<Fr> = None;
        let mut add = |x: Fr| {
            acc = Some(match acc {
                None => x,
                Some(a) => a + x,
            })
        };
        // Terms whose variable is 1 and whose coefficient is +1 (or -1) only count.
        let mut ones: i64 = 0;
        for (&col, &code) in m.cols[lo..hi].iter().zip(&m.coeffs[lo..hi]) {
            let v = if col & INPUT_BIT != 0 {
                &self.inputs[(col & !INPUT_BIT) as usize]
            } else {
                let j = col as usize;
                match (self.classes[j >> 5] >> ((j & 31) << 1)) & 3 {
                    ONE => {
                        match code {
                            0 => ones += 1,
                            1 => ones -= 1,
                            k => add(self.dict[k as usize]),
                        }
                        continue;
                    }
                    OTHER => &self.aux[j],
                    _ => continue,
                }
            };
            match code {
                0 => add(*v),
                1 => add(-*v),
                k => add(*v * self.dict[k as usize]),
            }
        }
        if ones != 0 {
            if ones.abs() <= SMALL {
                add(self.small[(ones + SMALL) as usize]);
            } else if ones > 0 {
                add(Fr::from(ones as u64));
            } else {
                add(-Fr::from(ones.unsigned_abs()));
            }
        }
        acc.unwrap_or(Fr::ZERO)
    }
}

/// a·b = c, with a multiplication only where neither side is 0 or 1.
#[inline]
fn holds(a: &Fr, b: &Fr, c: &Fr) -> bool {
    let (zero, one) = (Fr::ZERO, Fr::ONE);
    if *a == zero || *b == zero {
        *c == zero
    } else if *b == one {
        c == a
    } else if *a == one {
        c == b
    } else {
        *a * *b == *c
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
    if w.inputs.len() != rec.inputs || w.n_aux() != rec.aux {
        return Err(format!(
            "the witness has {} inputs and {} aux values, the recording {} and {}",
            w.inputs.len(),
            w.n_aux(),
            rec.inputs,
            rec.aux
        ));
    }
    if w.classes().len() != w.n_aux().div_ceil(32) {
        return Err("the witness's class table does not match its aux values".into());
    }
    // The host prover needs the dense vector: made here, the compact lists let go at the end.
    let aux = w.aux();
    let n = rec.constraints();
    let small: Vec<Fr> = (-SMALL..=SMALL)
        .map(|i| {
            if i < 0 {
                -Fr::from(i.unsigned_abs())
            } else {
                Fr::from(i as u64)
            }
        })
        .collect();
    let cap = size.map_or(n, |s| s.domain().max(n));
    let ev = Eval {
        dict: &rec.dict,
        small: &small,
        inputs: &w.inputs,
        classes: w.classes(),
        aux: &aux,
    };
    // Written in place by the parallel iterators (no zeroing pass), on huge pages.
    let column = |m: &Matrix| {
        let mut v = Vec::with_capacity(cap);
        crate::sys::os::advise_huge_pages(&mut v);
        v.par_extend(
            (0..n)
                .into_par_iter()
                .with_min_len(CHUNK)
                .map(|r| ev.row(m, r)),
        );
        v
    };
    let a = column(&rec.a);
    let b = column(&rec.b);
    let first_bad = AtomicUsize::new(usize::MAX);
    let mut c = Vec::with_capacity(cap);
    crate::sys::os::advise_huge_pages(&mut c);
    c.par_extend((0..n).into_par_iter().with_min_len(CHUNK).map(|r| {
        let v = ev.row(&rec.c, r);
        if !holds(&a[r], &b[r], &v) {
            first_bad.fetch_min(r, Ordering::Relaxed);
        }
        v
    }));
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
        aux,
    ))
}
