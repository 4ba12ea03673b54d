//! The QAP at tau: the Lagrange basis in closed form and each variable's A, B, C column
//! sums over the recorded matrices.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use cuzk::{
    error::{Error, Result},
    pce::{Matrix, INPUT_BIT},
};

/// `L_j(tau)` for `j < rows` over the domain of `m` points (`m` a power of two).
pub(super) fn lagrange(tau: Fr, m: usize, rows: usize) -> Result<Vec<Fr>> {
    let log = m.trailing_zeros();
    let mut omega = Fr::ROOT_OF_UNITY;
    for _ in log..Fr::S {
        omega = omega.square();
    }
    // (tau^m - 1) / m
    let z = tau.pow_vartime([m as u64]) - Fr::ONE;
    let m_inv = Option::<Fr>::from(Fr::from(m as u64).invert()).expect("m < r");
    let zm = z * m_inv;
    if bool::from(z.is_zero()) {
        return Err(Error::internal(
            "tau is a root of unity of the domain: pick another seed",
        ));
    }
    let mut out = vec![Fr::ZERO; rows];
    const CHUNK: usize = 1 << 14;
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
        let mut w = omega.pow_vartime([(c * CHUNK) as u64]);
        let mut ws = Vec::with_capacity(out.len());
        for o in out.iter_mut() {
            ws.push(w);
            *o = tau - w;
            w *= omega;
        }
        batch_invert(out);
        for (o, w) in out.iter_mut().zip(ws) {
            *o = *o * w * zm;
        }
    });
    Ok(out)
}

/// Inverts every (non-zero) element in place with one inversion.
fn batch_invert(v: &mut [Fr]) {
    let mut prefix = Vec::with_capacity(v.len());
    let mut acc = Fr::ONE;
    for x in v.iter() {
        prefix.push(acc);
        acc *= x;
    }
    let mut inv = Option::<Fr>::from(acc.invert()).expect("non-zero elements");
    for i in (0..v.len()).rev() {
        let x = v[i];
        v[i] = inv * prefix[i];
        inv *= x;
    }
}

/// Column sums of one matrix at tau: `(inputs, aux)` with `u[c] = sum of coeff · L_row(tau)`
/// over the terms in column `c`.
pub(super) fn eval_columns(
    m: &Matrix,
    dict: &[Fr],
    lag: &[Fr],
    inputs: usize,
    aux: usize,
) -> (Vec<Fr>, Vec<Fr>) {
    let rows = m.rows();
    const ROWS: usize = 1 << 14;
    let chunks = rows.div_ceil(ROWS);
    let term = |k: u16, v: Fr| match k {
        0 => v,
        1 => -v,
        k => v * dict[k as usize],
    };
    let rows_of = |c: usize| {
        let lo = c * ROWS;
        lo..rows.min(lo + ROWS)
    };
    // Pass 1: terms per aux column; input columns summed at once (they are few).
    let counts: Vec<AtomicU32> = (0..aux).map(|_| AtomicU32::new(0)).collect();
    let ins = (0..chunks)
        .into_par_iter()
        .fold(
            || vec![Fr::ZERO; inputs],
            |mut acc, c| {
                for r in rows_of(c) {
                    let (s, e) = (m.row_start[r] as usize, m.row_start[r + 1] as usize);
                    for t in s..e {
                        let col = m.cols[t];
                        if col & INPUT_BIT != 0 {
                            acc[(col & !INPUT_BIT) as usize] += term(m.coeffs[t], lag[r]);
                        } else {
                            counts[col as usize].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                acc
            },
        )
        .reduce(
            || vec![Fr::ZERO; inputs],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        );
    // Column starts; `counts` becomes each column's cursor.
    let mut total = 0u32;
    for c in &counts {
        let n = c.load(Ordering::Relaxed);
        c.store(total, Ordering::Relaxed);
        total += n;
    }
    // Pass 2: (row, coefficient code) of every aux term, grouped by column.
    let entries: Vec<AtomicU64> = (0..total).map(|_| AtomicU64::new(0)).collect();
    (0..chunks).into_par_iter().for_each(|c| {
        for r in rows_of(c) {
            let (s, e) = (m.row_start[r] as usize, m.row_start[r + 1] as usize);
            for t in s..e {
                let col = m.cols[t];
                if col & INPUT_BIT == 0 {
                    let at = counts[col as usize].fetch_add(1, Ordering::Relaxed);
                    entries[at as usize]
                        .store((r as u64) << 16 | m.coeffs[t] as u64, Ordering::Relaxed);
                }
            }
        }
    });
    // Pass 3: the sums, column by column (each column's end is now its cursor).
    let mut out = vec![Fr::ZERO; aux];
    const COLS: usize = 1 << 12;
    out.par_chunks_mut(COLS).enumerate().for_each(|(b, out)| {
        for (i, o) in out.iter_mut().enumerate() {
            let c = b * COLS + i;
            let start = if c == 0 {
                0
            } else {
                counts[c - 1].load(Ordering::Relaxed)
            };
            let end = counts[c].load(Ordering::Relaxed);
            let mut acc = Fr::ZERO;
            for e in &entries[start as usize..end as usize] {
                let v = e.load(Ordering::Relaxed);
                acc += term((v & 0xffff) as u16, lag[(v >> 16) as usize]);
            }
            *o = acc;
        }
    });
    (ins, out)
}
