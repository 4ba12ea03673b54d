//! The proving key's bases read straight from a `.params` file, for provers that keep their
//! own copy (cuzk's GPU prover uploads them and drops these).
//!
//! Points are parsed in parallel, 64 MiB of file at a time, without the subgroup check
//! (bellperson's own reader skips it too for these queries); a point at infinity or bytes that
//! are not a point fail the load, as they do in bellperson.

use std::{fs::File, os::unix::fs::FileExt};

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use super::{check_file, Srs};
use crate::error::{Error, Result};

/// h, l, a, b_g1 and b_g2, as in the file.
pub struct Bases {
    pub h: Vec<G1Affine>,
    pub l: Vec<G1Affine>,
    pub a: Vec<G1Affine>,
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
}

const CHUNK: usize = 64 << 20;

fn read_section<P, const N: usize>(
    file: &File,
    name: &str,
    start: u64,
    count: usize,
    parse: impl Fn(&[u8; N]) -> Option<P> + Sync,
) -> Result<Vec<P>>
where
    P: Send,
{
    let mut out = Vec::with_capacity(count);
    let per = (CHUNK / N).max(1);
    let mut buf = vec![0u8; per.min(count) * N];
    let mut done = 0usize;
    while done < count {
        let n = per.min(count - done);
        let bytes = &mut buf[..n * N];
        file.read_exact_at(bytes, start + (done * N) as u64)
            .map_err(|e| Error::params(format!("reading the {name} query: {e}")))?;
        let parsed: Vec<Option<P>> = bytes
            .par_chunks_exact(N)
            .map(|c| parse(c.try_into().expect("chunk of N bytes")))
            .collect();
        for (i, p) in parsed.into_iter().enumerate() {
            out.push(p.ok_or_else(|| {
                Error::params(format!(
                    "the {name} query's point {} is not a valid point (or is the point at \
                     infinity): damaged parameters; fetch them again",
                    done + i
                ))
            })?);
        }
        done += n;
    }
    Ok(out)
}

impl Srs {
    /// Reads every base of the proving key (h, l, a, b_g1, b_g2). The file is checked again
    /// first and must still be the one the parameters were checked as.
    pub fn read_bases(&self) -> Result<Bases> {
        self.check_unchanged()?;
        let layout = check_file(&self.path)?;
        let ends = layout.section_ends();
        let file = File::open(&self.path)
            .map_err(|e| Error::params(format!("cannot open {}: {e}", self.path.display())))?;
        // ends: vk, then per section (after its length, after its points).
        let start = |k: usize| ends[1 + 2 * k].1;
        let count = |k: usize| layout.counts[k] as usize;
        let g1 = |b: &[u8; 96]| {
            let p = Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(b))?;
            (!bool::from(p.is_identity())).then_some(p)
        };
        let g2 = |b: &[u8; 192]| {
            let p = Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(b))?;
            (!bool::from(p.is_identity())).then_some(p)
        };
        let bases = Bases {
            h: read_section(&file, "h", start(0), count(0), g1)?,
            l: read_section(&file, "l", start(1), count(1), g1)?,
            a: read_section(&file, "a", start(2), count(2), g1)?,
            b_g1: read_section(&file, "b_g1", start(3), count(3), g1)?,
            b_g2: read_section(&file, "b_g2", start(4), count(4), g2)?,
        };
        self.check_unchanged()?;
        Ok(bases)
    }
}
