//! Random Groth16 parameters from a circuit's recording (`cuzk params gen`, `cuzk setup`).
//!
//! bellperson's `generate_random_parameters` synthesizes the circuit into per-variable lists
//! and multiplies every point by a windowed-NAF of a random generator: about 255 doublings per
//! point, on one core for the h query's batches. The set is the same here, computed from the
//! recording (`pce::Recording`, the circuit's sparse A, B, C):
//!
//! 1. the Lagrange basis at a random `tau` over the domain of `m` points, in closed form
//!    (`L_j(tau) = w^j (tau^m - 1) / (m (tau - w^j))`, one batch inversion);
//! 2. per variable, `A_i(tau)`, `B_i(tau)`, `C_i(tau)` as column sums of the recorded matrices
//!    (each matrix transposed once by a counting sort, then summed column by column in
//!    parallel);
//! 3. every point by fixed-base multiplication: a table of `d · 2^(w j) · G` for signed w-bit
//!    digits `d`, so a point costs ~255/w mixed additions and no doubling; results are made
//!    affine in batches (one inversion per batch) and written as bellperson writes them; where
//!    a GPU answers (a `cuda` build; `CUZK_PARAMGEN_GPU=off` to keep to the CPU) the same table
//!    is copied to it and `kernels/fixed_base.cu` writes the same bytes, block by block, while
//!    a thread writes the previous block to the file.
//!
//! Given the same secrets and generators the bytes are bellperson's own (tested). Every set
//! written here is marked (`cuzk::params::is_random_set`): G1 and G2 are the standard
//! generators and alpha is the fixed scalar of the mark; tau, beta, gamma and delta come from
//! the seed.

use std::{
    io::Write,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU32, AtomicU64, Ordering},
    sync::mpsc,
    time::Instant,
};

use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::SeedableRng;
use rayon::prelude::*;

use super::progress::Progress;
use cuzk::{
    error::{Error, Result},
    params::{params_path, random_set_alpha, vk_path},
    pce::{Matrix, Recording, INPUT_BIT},
};

/// The toxic waste and generators of one parameter set.
#[derive(Clone, Debug)]
pub struct Secrets {
    pub g1: G1Projective,
    pub g2: G2Projective,
    pub alpha: Fr,
    pub beta: Fr,
    pub gamma: Fr,
    pub delta: Fr,
    pub tau: Fr,
}

impl Secrets {
    /// The secrets of a marked set: standard generators, the mark's alpha, the rest from `seed`.
    pub fn marked(seed: u64) -> Secrets {
        let mut rng = rand_chacha_like(seed);
        Secrets {
            g1: G1Projective::generator(),
            g2: G2Projective::generator(),
            alpha: random_set_alpha(),
            beta: Fr::random(&mut rng),
            gamma: Fr::random(&mut rng),
            delta: Fr::random(&mut rng),
            tau: Fr::random(&mut rng),
        }
    }
}

fn rand_chacha_like(seed: u64) -> rand_xorshift::XorShiftRng {
    rand_xorshift::XorShiftRng::seed_from_u64(seed ^ 0x6375_7a6b_7061_7261)
}

// ---------------------------------------------------------------------------------------------
// Points: Jacobian coordinates made affine in batches, fixed-base multiplication by a comb.

/// A projective group whose points are Jacobian `(X, Y, Z)` (blst's form: `x = X/Z^2`,
/// `y = Y/Z^3`), so that a batch can be made affine with one inversion.
pub trait Jacobian: Curve + Send + Sync
where
    Self::AffineRepr: Copy + Send + Sync,
{
    type F: Field;
    /// Uncompressed size of a point in a `.params` file.
    const BYTES: usize;
    fn xyz(&self) -> (Self::F, Self::F, Self::F);
    fn affine(x: Self::F, y: Self::F) -> Self::AffineRepr;
    fn identity_affine() -> Self::AffineRepr;
    fn xy(p: &Self::AffineRepr) -> (Self::F, Self::F);
    fn to_proj(p: &Self::AffineRepr) -> Self;
    fn write(p: &Self::AffineRepr, out: &mut [u8]);
}

impl Jacobian for G1Projective {
    type F = Fp;
    const BYTES: usize = 96;
    fn xyz(&self) -> (Fp, Fp, Fp) {
        (self.x(), self.y(), self.z())
    }
    fn affine(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
    fn identity_affine() -> G1Affine {
        G1Affine::identity()
    }
    fn xy(p: &G1Affine) -> (Fp, Fp) {
        (p.x(), p.y())
    }
    fn to_proj(p: &G1Affine) -> G1Projective {
        p.into()
    }
    fn write(p: &G1Affine, out: &mut [u8]) {
        out.copy_from_slice(&p.to_uncompressed());
    }
}

impl Jacobian for G2Projective {
    type F = Fp2;
    const BYTES: usize = 192;
    fn xyz(&self) -> (Fp2, Fp2, Fp2) {
        (self.x(), self.y(), self.z())
    }
    fn affine(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
    fn identity_affine() -> G2Affine {
        G2Affine::identity()
    }
    fn xy(p: &G2Affine) -> (Fp2, Fp2) {
        (p.x(), p.y())
    }
    fn to_proj(p: &G2Affine) -> G2Projective {
        p.into()
    }
    fn write(p: &G2Affine, out: &mut [u8]) {
        out.copy_from_slice(&p.to_uncompressed());
    }
}

/// `out[i] = p[i]` in affine form, with one field inversion for the batch.
pub fn normalize<G: Jacobian>(p: &[G], out: &mut [G::AffineRepr])
where
    G::AffineRepr: Copy + Send + Sync,
{
    assert_eq!(p.len(), out.len());
    let mut prefix = Vec::with_capacity(p.len());
    let mut acc = G::F::ONE;
    for q in p {
        prefix.push(acc);
        let z = q.xyz().2;
        if !bool::from(z.is_zero()) {
            acc *= z;
        }
    }
    let mut inv = Option::<G::F>::from(acc.invert()).expect("a product of non-zero values");
    for i in (0..p.len()).rev() {
        let (x, y, z) = p[i].xyz();
        if bool::from(z.is_zero()) {
            out[i] = G::identity_affine();
            continue;
        }
        let zi = inv * prefix[i];
        inv *= z;
        let zi2 = zi.square();
        out[i] = G::affine(x * zi2, y * zi2 * zi);
    }
}

/// Windows of `w` bits a 255-bit scalar needs in signed-digit form (the top digit's carry
/// included).
fn window_count(w: u32) -> usize {
    let n = 255u32.div_ceil(w);
    let top_bits = 255 - (n - 1) * w;
    // The top window's largest value plus a carry must stay below 2^(w-1).
    if (1u64 << top_bits) >= 1u64 << (w - 1) {
        n as usize + 1
    } else {
        n as usize
    }
}

/// Bits `pos..pos + w` of a little-endian 256-bit number (`w <= 32`).
fn bits(limbs: &[u64; 4], pos: u32, w: u32) -> u64 {
    let (limb, off) = ((pos / 64) as usize, pos % 64);
    if limb >= 4 {
        return 0;
    }
    let mut v = limbs[limb] >> off;
    if off + w > 64 && limb + 1 < 4 {
        v |= limbs[limb + 1] << (64 - off);
    }
    v & ((1u64 << w) - 1)
}

fn limbs(k: &Fr) -> [u64; 4] {
    let b = k.to_bytes_le();
    std::array::from_fn(|i| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes")))
}

/// Fixed-base multiplication of one generator: `table[j * half + d - 1] = d · 2^(w j) · G` for
/// `d` in `1..=half` (`half = 2^(w-1)`); a scalar in signed w-bit digits is then the sum of one
/// entry (or its negation) per window.
pub struct Comb<G: Jacobian>
where
    G::AffineRepr: Copy + Send + Sync,
{
    w: u32,
    windows: usize,
    table: Vec<G::AffineRepr>,
}

/// Points per batch made affine together.
const BATCH: usize = 1024;

impl<G: Jacobian> Comb<G>
where
    G::AffineRepr: Copy + Send + Sync,
{
    pub fn new(base: G, w: u32) -> Self {
        assert!((2..=20).contains(&w));
        let windows = window_count(w);
        let half = 1usize << (w - 1);
        let mut rows = Vec::with_capacity(windows);
        let mut b = base;
        for _ in 0..windows {
            rows.push(b);
            for _ in 0..w {
                b = b.double();
            }
        }
        let table: Vec<G::AffineRepr> = rows
            .par_iter()
            .flat_map_iter(|bj| {
                let mut row = Vec::with_capacity(half);
                let mut acc = *bj;
                row.push(acc);
                for _ in 1..half {
                    acc += *bj;
                    row.push(acc);
                }
                let mut aff = vec![G::identity_affine(); half];
                normalize(&row, &mut aff);
                aff
            })
            .collect();
        Comb { w, windows, table }
    }

    /// The table: `table[j · 2^(w-1) + d - 1] = d · 2^(w j) · G`.
    pub fn table(&self) -> &[G::AffineRepr] {
        &self.table
    }

    /// Window size in bits and window count.
    pub fn shape(&self) -> (u32, usize) {
        (self.w, self.windows)
    }

    /// `k · G`.
    pub fn mul(&self, k: &Fr) -> G {
        let l = limbs(k);
        let half = 1u64 << (self.w - 1);
        let full = 1u64 << self.w;
        let mut acc = G::identity();
        let mut carry = 0u64;
        for j in 0..self.windows {
            let d = bits(&l, j as u32 * self.w, self.w) + carry;
            let row = &self.table[j * half as usize..];
            if d >= half {
                carry = 1;
                let neg = full - d;
                if neg > 0 {
                    acc -= &row[neg as usize - 1];
                }
            } else {
                carry = 0;
                if d > 0 {
                    acc += &row[d as usize - 1];
                }
            }
        }
        debug_assert_eq!(carry, 0);
        acc
    }

    /// Writes `ks[i] · G` uncompressed into `out[i * BYTES..]`, on every core.
    pub fn mul_into(&self, ks: &[Fr], out: &mut [u8]) {
        assert_eq!(out.len(), ks.len() * G::BYTES);
        out.par_chunks_mut(BATCH * G::BYTES)
            .zip(ks.par_chunks(BATCH))
            .for_each(|(out, ks)| self.mul_batch(ks, out));
    }

    /// One batch of [`Comb::mul_into`], in affine coordinates: window by window every point
    /// of the batch gets its table entry added with one shared inversion (Montgomery's trick),
    /// ~5M+1S an addition against ~7M+4S for a mixed Jacobian one, and no conversion at the
    /// end. A point whose addition would be a doubling or give the identity (x equal) goes on
    /// in Jacobian coordinates.
    fn mul_batch(&self, ks: &[Fr], out: &mut [u8]) {
        let n = ks.len();
        let (w, windows) = (self.w, self.windows);
        let half = 1i64 << (w - 1);
        let full = 1i64 << w;
        // Signed digits, point by point.
        let mut digits = vec![0i32; n * windows];
        for (k, d) in ks.iter().zip(digits.chunks_exact_mut(windows)) {
            let l = limbs(k);
            let mut carry = 0i64;
            for (j, d) in d.iter_mut().enumerate() {
                let mut v = bits(&l, j as u32 * w, w) as i64 + carry;
                carry = 0;
                if v >= half {
                    v -= full;
                    carry = 1;
                }
                *d = v as i32;
            }
            debug_assert_eq!(carry, 0);
        }
        let zero = G::F::ZERO;
        let (mut x, mut y) = (vec![zero; n], vec![zero; n]);
        let mut empty = vec![true; n];
        let mut slow: Vec<Option<G>> = vec![None; n];
        let (mut px, mut py, mut den, mut idx) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let mut prefix = Vec::with_capacity(n);
        let mut gx: Vec<Option<(G::F, G::F)>> = Vec::with_capacity(n);
        for j in 0..windows {
            px.clear();
            py.clear();
            den.clear();
            idx.clear();
            let row = &self.table[j * half as usize..];
            // Gather the window's table entries first: independent loads, so their cache
            // misses overlap (the table is tens of MB).
            gx.clear();
            for i in 0..n {
                let d = digits[i * windows + j];
                gx.push((d != 0).then(|| G::xy(&row[d.unsigned_abs() as usize - 1])));
            }
            for i in 0..n {
                let d = digits[i * windows + j];
                let Some((tx, ty)) = gx[i] else {
                    continue;
                };
                let ty = if d < 0 { -ty } else { ty };
                if let Some(g) = &mut slow[i] {
                    *g += G::to_proj(&G::affine(tx, ty));
                } else if empty[i] {
                    (x[i], y[i], empty[i]) = (tx, ty, false);
                } else if x[i] == tx {
                    slow[i] =
                        Some(G::to_proj(&G::affine(x[i], y[i])) + G::to_proj(&G::affine(tx, ty)));
                } else {
                    px.push(tx);
                    py.push(ty);
                    den.push(tx - x[i]);
                    idx.push(i);
                }
            }
            if den.is_empty() {
                continue;
            }
            // One inversion for the window's additions.
            prefix.clear();
            let mut acc = G::F::ONE;
            for d in &den {
                prefix.push(acc);
                acc *= d;
            }
            let mut inv = Option::<G::F>::from(acc.invert()).expect("non-zero differences");
            for t in (0..den.len()).rev() {
                let d_inv = inv * prefix[t];
                inv *= den[t];
                let i = idx[t];
                let lambda = (py[t] - y[i]) * d_inv;
                let x3 = lambda.square() - x[i] - px[t];
                y[i] = lambda * (x[i] - x3) - y[i];
                x[i] = x3;
            }
        }
        for (i, o) in out.chunks_exact_mut(G::BYTES).enumerate() {
            let p = match &slow[i] {
                Some(g) => g.to_affine(),
                None if empty[i] => G::identity_affine(),
                None => G::affine(x[i], y[i]),
            };
            G::write(&p, o);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The QAP at tau.

/// `L_j(tau)` for `j < rows` over the domain of `m` points (`m` a power of two).
fn lagrange(tau: Fr, m: usize, rows: usize) -> Result<Vec<Fr>> {
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
fn eval_columns(
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

// ---------------------------------------------------------------------------------------------
// The file.

/// Sizes and timings of one generated set.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GenReport {
    pub constraints: usize,
    pub domain: usize,
    pub inputs: usize,
    pub aux: usize,
    /// Points of h, l, a, b_g1, b_g2.
    pub counts: [u64; 5],
    pub bytes: u64,
    pub eval_seconds: f64,
    pub points_seconds: f64,
    /// Where the points were computed ("GPU 0", "16 CPU threads").
    pub points_on: String,
}

/// Points per block handed to the writer.
const BLOCK: usize = 1 << 20;

/// A GPU's multiplication by one generator: scalars in, `.params` bytes out.
type GpuMul<'a> = Box<dyn FnMut(&[Fr], &mut [u8]) -> std::result::Result<(), String> + Send + 'a>;

/// How a section's points are computed: the comb on every core, or on a GPU from the same
/// table (the same bytes).
pub struct Mul<'a, G: Jacobian>
where
    G::AffineRepr: Copy + Send + Sync,
{
    comb: &'a Comb<G>,
    gpu: Option<GpuMul<'a>>,
}

impl<G: Jacobian> Mul<'_, G>
where
    G::AffineRepr: Copy + Send + Sync,
{
    fn run(&mut self, ks: &[Fr], out: &mut [u8]) -> Result<()> {
        match &mut self.gpu {
            Some(f) => f(ks, out)
                .map_err(|e| Error::internal(format!("GPU fixed-base multiplication: {e}"))),
            None => {
                self.comb.mul_into(ks, out);
                Ok(())
            }
        }
    }
}

/// The GPU a parameter generation computes its points on: `CUZK_PARAMGEN_GPU` is `off` (every
/// core instead) or an ordinal; unset, GPU 0 where a CUDA device answers.
#[cfg(feature = "cuda")]
fn paramgen_gpu() -> Option<usize> {
    let ordinal = match std::env::var("CUZK_PARAMGEN_GPU")
        .ok()
        .as_deref()
        .map(str::trim)
    {
        Some("off" | "cpu" | "none") => return None,
        Some(v) if !v.is_empty() => match v.parse() {
            Ok(o) => o,
            Err(_) => {
                log::warn!("CUZK_PARAMGEN_GPU={v} is neither `off` nor a GPU ordinal: using GPU 0");
                0
            }
        },
        _ => 0,
    };
    match cuzk::sys::cuda::probe() {
        Ok((_, n)) if ordinal < n => Some(ordinal),
        _ => None,
    }
}

/// The two multipliers of a set (G1, G2) and where they run.
fn multipliers<'a>(
    c1: &'a Comb<G1Projective>,
    c2: &'a Comb<G2Projective>,
) -> (Mul<'a, G1Projective>, Mul<'a, G2Projective>, String) {
    #[cfg(feature = "cuda")]
    if let Some(ord) = paramgen_gpu() {
        use cuzk::sys::fixed_base::FixedBase;
        let (w1, n1) = c1.shape();
        let (w2, n2) = c2.shape();
        match FixedBase::new(ord, w1, n1, c1.table())
            .and_then(|g1| FixedBase::new(ord, w2, n2, c2.table()).map(|g2| (g1, g2)))
        {
            Ok((mut g1, mut g2)) => {
                return (
                    Mul {
                        comb: c1,
                        gpu: Some(Box::new(move |ks, out| g1.mul(ks, out))),
                    },
                    Mul {
                        comb: c2,
                        gpu: Some(Box::new(move |ks, out| g2.mul(ks, out))),
                    },
                    format!("GPU {ord}"),
                )
            }
            Err(e) => log::warn!("parameter generation on GPU {ord} failed ({e}): on the CPU"),
        }
    }
    (
        Mul {
            comb: c1,
            gpu: None,
        },
        Mul {
            comb: c2,
            gpu: None,
        },
        format!("{} CPU threads", rayon::current_num_threads()),
    )
}

/// A `.params` file's sections, computed block by block on every core while another thread
/// writes the previous block.
struct Sections<'a, W: Write + Send> {
    out: &'a mut W,
    progress: Option<&'a Progress>,
    bytes: u64,
}

impl<W: Write + Send> Sections<'_, W> {
    fn write(&mut self, b: &[u8]) -> Result<()> {
        self.bytes += b.len() as u64;
        self.out
            .write_all(b)
            .map_err(|e| Error::params(format!("writing parameters: {e}")))
    }

    /// A section of `n` points `scalar(i) · G`: the u32 count, then the points.
    fn section<G: Jacobian>(
        &mut self,
        mul: &mut Mul<'_, G>,
        n: usize,
        fill: &(dyn Fn(usize, &mut [Fr]) + Sync),
        weight: u64,
    ) -> Result<()>
    where
        G::AffineRepr: Copy + Send + Sync,
    {
        let len = u32::try_from(n).map_err(|_| Error::internal("section too long"))?;
        self.write(&len.to_be_bytes())?;
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(1);
        let (back_tx, back_rx) = mpsc::channel::<Vec<u8>>();
        let progress = self.progress;
        let out = &mut *self.out;
        let written = std::thread::scope(|s| -> Result<u64> {
            let writer = s.spawn(move || -> std::io::Result<u64> {
                let mut total = 0u64;
                for b in rx {
                    out.write_all(&b)?;
                    total += b.len() as u64;
                    let _ = back_tx.send(b);
                }
                Ok(total)
            });
            let mut ks = vec![Fr::ZERO; BLOCK.min(n)];
            let mut start = 0;
            while start < n {
                let len = BLOCK.min(n - start);
                fill(start, &mut ks[..len]);
                let mut buf = back_rx.try_recv().unwrap_or_default();
                buf.resize(len * G::BYTES, 0);
                mul.run(&ks[..len], &mut buf)?;
                if tx.send(buf).is_err() {
                    break; // the writer failed: its error is reported below
                }
                if let Some(p) = progress {
                    p.inc(len as u64 * weight);
                }
                start += len;
            }
            drop(tx);
            writer
                .join()
                .map_err(|_| Error::internal("the parameter writer panicked"))?
                .map_err(|e| Error::params(format!("writing parameters: {e}")))
        })?;
        self.bytes += written;
        Ok(())
    }
}

/// Work units of a set for a progress bar (G1 points, a G2 point counting as two: measured
/// 8.2 and 13.4 us a point on one core).
pub fn work_units(counts: &[u64; 5], inputs: usize) -> u64 {
    counts[..4].iter().sum::<u64>() + 2 * counts[4] + inputs as u64
}

/// A section's scalars copied from `v`.
fn copy(v: &[Fr]) -> impl Fn(usize, &mut [Fr]) + Sync + '_ {
    move |start: usize, ks: &mut [Fr]| {
        let n = ks.len();
        ks.copy_from_slice(&v[start..start + n])
    }
}

/// Window size of the combs (measured: 16 is fastest for sets of millions of points).
const WBITS: u32 = 16;

/// Computes the parameter set of `rec` for `s` and writes it to `out` as bellperson's
/// `Parameters::write` does. Returns the verifying key and the report.
pub fn write_params<W: Write + Send>(
    rec: &Recording,
    s: &Secrets,
    out: &mut W,
    progress: Option<&Progress>,
) -> Result<(VerifyingKey<Bls12>, GenReport)> {
    let t = Instant::now();
    let (inputs, aux, rows) = (rec.inputs, rec.aux, rec.constraints());
    let m = rows.next_power_of_two();
    if m > 1 << Fr::S {
        return Err(Error::internal(
            "the circuit is larger than the field's largest domain",
        ));
    }
    let inv = |x: Fr, what: &str| {
        Option::<Fr>::from(x.invert()).ok_or_else(|| Error::internal(format!("{what} is zero")))
    };
    let gamma_inv = inv(s.gamma, "gamma")?;
    let delta_inv = inv(s.delta, "delta")?;

    let lag = lagrange(s.tau, m, rows)?;
    let (at_in, at_aux) = eval_columns(&rec.a, &rec.dict, &lag, inputs, aux);
    let (bt_in, bt_aux) = eval_columns(&rec.b, &rec.dict, &lag, inputs, aux);
    let (mut ic, mut l) = eval_columns(&rec.c, &rec.dict, &lag, inputs, aux);
    drop(lag);
    let ext = |ct: &mut [Fr], at: &[Fr], bt: &[Fr], inv: Fr| {
        ct.par_iter_mut()
            .zip(at.par_iter().zip(bt.par_iter()))
            .for_each(|(c, (a, b))| *c = (s.beta * a + s.alpha * b + *c) * inv);
    };
    ext(&mut ic, &at_in, &bt_in, gamma_inv);
    ext(&mut l, &at_aux, &bt_aux, delta_inv);
    if let Some(i) = l.iter().position(|x| bool::from(x.is_zero())) {
        return Err(Error::internal(format!(
            "aux variable {i} is unconstrained (its l query point would be the identity)"
        )));
    }
    let nonzero = |a: Vec<Fr>, b: Vec<Fr>| -> Vec<Fr> {
        a.into_iter()
            .chain(b)
            .filter(|x| !bool::from(x.is_zero()))
            .collect()
    };
    let a = nonzero(at_in, at_aux);
    let b = nonzero(bt_in, bt_aux);
    let eval_seconds = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let wbits = std::env::var("CUZK_PARAMGEN_WBITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|w| (4..=20).contains(w))
        .unwrap_or(WBITS);
    let c1 = Comb::new(s.g1, wbits);
    let c2 = Comb::new(s.g2, wbits);
    let g1 = s.g1.to_affine();
    let g2 = s.g2.to_affine();
    let mut ic_pts = vec![G1Affine::identity(); ic.len()];
    let ic_proj: Vec<G1Projective> = ic.iter().map(|k| c1.mul(k)).collect();
    normalize(&ic_proj, &mut ic_pts);
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1 * s.alpha).to_affine(),
        beta_g1: (g1 * s.beta).to_affine(),
        beta_g2: (g2 * s.beta).to_affine(),
        gamma_g2: (g2 * s.gamma).to_affine(),
        delta_g1: (g1 * s.delta).to_affine(),
        delta_g2: (g2 * s.delta).to_affine(),
        ic: ic_pts,
    };
    let mut head = Vec::new();
    vk.write(&mut head)
        .map_err(|e| Error::internal(format!("verifying key: {e}")))?;
    let counts = [
        (m - 1) as u64,
        aux as u64,
        a.len() as u64,
        b.len() as u64,
        b.len() as u64,
    ];
    if let Some(p) = progress {
        p.inc(inputs as u64);
    }
    let mut w = Sections {
        out,
        progress,
        bytes: 0,
    };
    w.write(&head)?;
    // h_i = tau^i (tau^m - 1) / delta, i < m - 1.
    let coeff = (s.tau.pow_vartime([m as u64]) - Fr::ONE) * delta_inv;
    let tau = s.tau;
    let h_fill = move |start: usize, ks: &mut [Fr]| {
        const SUB: usize = 1 << 12;
        ks.par_chunks_mut(SUB).enumerate().for_each(|(c, ks)| {
            let mut x = tau.pow_vartime([(start + c * SUB) as u64]) * coeff;
            for k in ks {
                *k = x;
                x *= tau;
            }
        });
    };
    let (mut m1, mut m2, points_on) = multipliers(&c1, &c2);
    w.section(&mut m1, m - 1, &h_fill, 1)?;
    w.section(&mut m1, aux, &copy(&l), 1)?;
    drop(l);
    w.section(&mut m1, a.len(), &copy(&a), 1)?;
    drop(a);
    w.section(&mut m1, b.len(), &copy(&b), 1)?;
    w.section(&mut m2, b.len(), &copy(&b), 2)?;
    drop((m1, m2));
    let bytes = w.bytes;
    w.out
        .flush()
        .map_err(|e| Error::params(format!("writing parameters: {e}")))?;
    Ok((
        vk,
        GenReport {
            constraints: rows,
            domain: m,
            inputs,
            aux,
            counts,
            bytes,
            eval_seconds,
            points_seconds: t.elapsed().as_secs_f64(),
            points_on,
        },
    ))
}

/// Point counts of `rec`'s set without computing it (for progress and disk checks): the
/// A and B queries hold the variables with a term in A (inputs always) and B.
pub fn expected_counts(rec: &Recording) -> [u64; 5] {
    let m = rec.constraints().next_power_of_two() as u64;
    let ones = |d: &bellperson::multiexp::DensityTracker| d.bv.count_ones() as u64;
    let a = rec.inputs as u64 + ones(&rec.a_aux_density);
    let b = ones(&rec.b_input_density) + ones(&rec.b_aux_density);
    [m - 1, rec.aux as u64, a, b, b]
}

/// Bytes of a `.params` file with these counts.
pub fn file_bytes(counts: &[u64; 5], inputs: usize) -> u64 {
    let vk = 3 * 96 + 3 * 192 + 4 + 96 * inputs as u64;
    vk + 5 * 4 + 96 * counts[..4].iter().sum::<u64>() + 192 * counts[4]
}

/// Writes `path` through a temporary file beside it, renamed into place once complete.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> Result<()>,
) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::params(format!("cannot create {}: {e}", dir.display())))?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let res = (|| {
        let f = std::fs::File::create(&tmp)
            .map_err(|e| Error::params(format!("cannot create {}: {e}", tmp.display())))?;
        let mut w = std::io::BufWriter::with_capacity(8 << 20, f);
        write(&mut w)?;
        let io = |e: std::io::Error| Error::params(format!("cannot write {}: {e}", path.display()));
        w.flush().map_err(io)?;
        w.get_ref().sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Where a generated set went and what it took.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Written {
    pub params: PathBuf,
    pub vk: PathBuf,
    pub report: GenReport,
    pub seconds: f64,
}

/// Generates the marked set of `rec` (parameter id `rec.id`) into `dir`: `.meta`, `.vk`, then
/// `.params` (its presence means the set is complete). Never overwrites a file.
pub fn generate(rec: &Recording, dir: &Path, sector_size: u64, seed: u64) -> Result<Written> {
    let id = &rec.id;
    let params = params_path(dir, id);
    let vk_file = vk_path(dir, id);
    let meta = dir.join(storage_proofs_core::parameter_cache::metadata_id(id));
    if let Some(f) = [&params, &vk_file, &meta].into_iter().find(|f| f.exists()) {
        return Err(Error::params(format!(
            "refusing to overwrite {}: move the parameter set {id} away first",
            f.display()
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::params(format!("cannot create {}: {e}", dir.display())))?;
    let counts = expected_counts(rec);
    let t = Instant::now();
    let progress = Progress::bar(
        &format!(
            "generating random parameters ({} constraints, {} MiB)",
            rec.constraints(),
            file_bytes(&counts, rec.inputs) >> 20
        ),
        work_units(&counts, rec.inputs),
        "points",
    );
    progress.phase("evaluating the circuit at tau");
    let secrets = Secrets::marked(seed);
    // The .params file is computed into a temporary file first (the verifying key comes out
    // of it), then the .meta and .vk are written, and the .params renamed into place last.
    let tmp = params.with_extension(format!("gen{}", std::process::id()));
    let res = (|| {
        let f = std::fs::File::create(&tmp)
            .map_err(|e| Error::params(format!("cannot create {}: {e}", tmp.display())))?;
        let mut w = std::io::BufWriter::with_capacity(8 << 20, f);
        let (vk, report) = write_params(rec, &secrets, &mut w, Some(&progress))?;
        let f = w
            .into_inner()
            .map_err(|e| Error::params(format!("writing {}: {e}", tmp.display())))?;
        f.sync_all()
            .map_err(|e| Error::params(format!("writing {}: {e}", tmp.display())))?;
        write_atomically(&meta, |w| {
            serde_json::to_writer(w, &serde_json::json!({ "sector_size": sector_size }))
                .map_err(|e| Error::params(format!("writing {}: {e}", meta.display())))
        })?;
        write_atomically(&vk_file, |w| {
            vk.write(w)
                .map_err(|e| Error::params(format!("writing {}: {e}", vk_file.display())))
        })?;
        std::fs::rename(&tmp, &params)
            .map_err(|e| Error::params(format!("writing {}: {e}", params.display())))?;
        Ok(report)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let report = res?;
    progress.finish("generated");
    Ok(Written {
        params,
        vk: vk_file,
        report,
        seconds: t.elapsed().as_secs_f64(),
    })
}
