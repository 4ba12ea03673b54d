//! Points: Jacobian coordinates made affine in batches, and fixed-base multiplication by a
//! comb (signed windows, no doublings).

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use rayon::prelude::*;

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
