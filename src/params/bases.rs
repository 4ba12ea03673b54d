//! The proving key's bases read straight from a `.params` file, for provers that keep their
//! own copy (cuzk's GPU prover uploads them and drops these).
//!
//! Whole ([`Srs::read_bases`]), or piece by piece for a prover that copies each piece
//! elsewhere before the next is read ([`Srs::read_bases_in`]). Points are parsed in parallel,
//! 64 MiB of file at a time, without the subgroup check
//! (bellperson's own reader skips it too for these queries); a point at infinity or bytes that
//! are not a point fail the load, as they do in bellperson.

use std::{fs::File, os::unix::fs::FileExt};

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use super::{check_file, Layout, Srs};
use crate::{
    error::{Error, Result},
    sys::G1Kind,
};

/// h, l, a, b_g1 and b_g2, as in the file.
pub struct Bases {
    pub h: Vec<G1Affine>,
    pub l: Vec<G1Affine>,
    pub a: Vec<G1Affine>,
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
}

/// Consecutive points of one kind of bases, as [`Srs::read_bases_in`] reads them: `first` is
/// the index of the first within its kind.
pub enum BasesPiece<'a> {
    G1 {
        kind: G1Kind,
        first: usize,
        points: &'a [G1Affine],
    },
    BG2 {
        first: usize,
        points: &'a [G2Affine],
    },
}

/// File bytes read (and points parsed) at a time.
const CHUNK: usize = 64 << 20;

/// Host memory [`Srs::read_bases_in`] holds at most with its default pieces: a piece's bytes
/// and its points (the same size, each in one buffer kept from piece to piece), with room to
/// spare.
pub const PIECE_HOST_BYTES: u64 = 3 * CHUNK as u64;

/// Reads `count` points of `N` bytes from `start`, `per` at a time, each piece parsed in
/// parallel and handed to `sink` with the index of its first point.
fn read_section<P, const N: usize>(
    file: &File,
    name: &str,
    start: u64,
    count: usize,
    per: usize,
    parse: impl Fn(&[u8; N]) -> Option<P> + Sync,
    mut sink: impl FnMut(usize, &[P]) -> Result<()>,
) -> Result<()>
where
    P: Send + Default + Clone,
{
    let per = per.max(1);
    let mut buf = vec![0u8; per.min(count) * N];
    // Parsed in place, one buffer for every piece: nothing grows or is collected.
    let mut points = vec![P::default(); per.min(count)];
    let mut done = 0usize;
    let parse_chunk = |c: &[u8]| parse(c.try_into().expect("chunk of N bytes"));
    while done < count {
        let n = per.min(count - done);
        let bytes = &mut buf[..n * N];
        file.read_exact_at(bytes, start + (done * N) as u64)
            .map_err(|e| Error::params(format!("reading the {name} query: {e}")))?;
        let points = &mut points[..n];
        let parsed = points
            .par_iter_mut()
            .zip(bytes.par_chunks_exact(N))
            .try_for_each(|(p, c)| parse_chunk(c).map(|v| *p = v));
        if parsed.is_none() {
            let bad = bytes
                .chunks_exact(N)
                .position(|c| parse_chunk(c).is_none())
                .unwrap_or(0);
            return Err(Error::params(format!(
                "the {name} query's point {} is not a valid point (or is the point at \
                 infinity): damaged parameters; fetch them again",
                done + bad
            )));
        }
        sink(done, points)?;
        done += n;
    }
    Ok(())
}

impl Srs {
    /// Reads every base of the proving key (h, l, a, b_g1, b_g2). The file is checked again
    /// first and must still be the one the parameters were checked as.
    pub fn read_bases(&self) -> Result<Bases> {
        let layout = self.bases_layout()?;
        // Each vector at its full length at once: growing would copy (47 GB at 32 GiB).
        let n = layout.counts.map(|c| c as usize);
        let mut b = Bases {
            h: Vec::with_capacity(n[0]),
            l: Vec::with_capacity(n[1]),
            a: Vec::with_capacity(n[2]),
            b_g1: Vec::with_capacity(n[3]),
            b_g2: Vec::with_capacity(n[4]),
        };
        self.read_bases_in(&layout, 0, |piece| {
            match piece {
                BasesPiece::G1 { kind, points, .. } => match kind {
                    G1Kind::H => &mut b.h,
                    G1Kind::L => &mut b.l,
                    G1Kind::A => &mut b.a,
                    G1Kind::BG1 => &mut b.b_g1,
                }
                .extend_from_slice(points),
                BasesPiece::BG2 { points, .. } => b.b_g2.extend_from_slice(points),
            }
            Ok(())
        })?;
        Ok(b)
    }

    /// The `.params` file's layout (its points' counts and offsets) for reading its bases,
    /// checked again: the file must still be the one the parameters were checked as.
    pub fn bases_layout(&self) -> Result<Layout> {
        self.check_unchanged()?;
        check_file(&self.path)
    }

    /// Reads the bases piece by piece, in the file's order (h, l, a, b_g1, b_g2), each piece
    /// at most `per_piece` points (0: 64 MiB of file at a time, [`PIECE_HOST_BYTES`] of host
    /// memory at the most) and handed to `sink` before the next is read: what a prover that
    /// copies them elsewhere holds of them at once. `layout` is [`Srs::bases_layout`]'s; the
    /// file must still be the one the parameters were checked as after the read. A damaged
    /// point fails the read before its piece reaches `sink`, and an error of `sink` ends it.
    pub fn read_bases_in(
        &self,
        layout: &Layout,
        per_piece: usize,
        mut sink: impl FnMut(BasesPiece<'_>) -> Result<()>,
    ) -> Result<()> {
        let ends = layout.section_ends();
        let file = File::open(&self.path)
            .map_err(|e| Error::params(format!("cannot open {}: {e}", self.path.display())))?;
        // ends: vk, then per section (after its length, after its points).
        let start = |k: usize| ends[1 + 2 * k].1;
        let count = |k: usize| layout.counts[k] as usize;
        let per = |n: usize| if per_piece == 0 { CHUNK / n } else { per_piece };
        let g1 = |b: &[u8; 96]| {
            let p = Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(b))?;
            (!bool::from(p.is_identity())).then_some(p)
        };
        let g2 = |b: &[u8; 192]| {
            let p = Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(b))?;
            (!bool::from(p.is_identity())).then_some(p)
        };
        for (k, (kind, name)) in [
            (G1Kind::H, "h"),
            (G1Kind::L, "l"),
            (G1Kind::A, "a"),
            (G1Kind::BG1, "b_g1"),
        ]
        .into_iter()
        .enumerate()
        {
            read_section(
                &file,
                name,
                start(k),
                count(k),
                per(96),
                g1,
                |first, points| {
                    sink(BasesPiece::G1 {
                        kind,
                        first,
                        points,
                    })
                },
            )?;
        }
        read_section(
            &file,
            "b_g2",
            start(4),
            count(4),
            per(192),
            g2,
            |first, points| sink(BasesPiece::BG2 { first, points }),
        )?;
        self.check_unchanged()
    }
}
