//! The fallback PoSt circuit (storage-proofs-post's `FallbackPoStCircuit`, WindowPoSt and
//! WinningPoSt alike) on plain values: per sector, comm_r = H(comm_c, comm_r_last) and each
//! challenged leaf's path in tree R to comm_r_last. Its aux values and public inputs are the
//! ones witness-only synthesis gives, in order.
//!
//! The sectors are independent: groups of them are made in parallel and appended in order
//! (as storage-proofs' own parallel synthesis does). Each path's computed root is compared
//! with comm_r_last and each sector's comm_r with its hash, so a witness that would not
//! satisfy the circuit is refused here (INTERNAL) rather than handed to a prover.

use std::sync::atomic::{AtomicBool, Ordering};

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

use super::{
    merkle::{included, unsupported_step, Step, TreeHash, Trees},
    num::alloc_num,
    poseidon,
};
use crate::{
    error::{Error, Result, Status},
    pce::Witness,
};

/// One challenged leaf of a sector's tree R and its path.
#[derive(Clone, Debug, PartialEq)]
pub struct Leaf {
    pub value: Fr,
    pub path: Vec<Step>,
}

/// One sector of the circuit, as `Sector::circuit` fills it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sector {
    pub comm_r: Fr,
    pub comm_c: Fr,
    pub comm_r_last: Fr,
    pub leaves: Vec<Leaf>,
}

/// Sectors per group made by one task: a multiple of 32 keeps a group's class words whole
/// where every sector has as many aux values as the others.
const GROUP: usize = 32;

/// Where the generator does not follow the circuit: the reason, else None.
pub fn unsupported(sectors: &[Sector]) -> Option<String> {
    if sectors.is_empty() {
        return Some("a partition without sectors".into());
    }
    let depth = sectors[0].leaves.first().map(|l| l.path.len());
    for s in sectors {
        if s.leaves.is_empty() {
            return Some("a sector without challenges".into());
        }
        for l in &s.leaves {
            if Some(l.path.len()) != depth {
                return Some("paths of different lengths".into());
            }
            if let Some(why) = unsupported_step(&l.path) {
                return Some(why);
            }
        }
    }
    None
}

/// `Sector::synthesize`: sector `i`'s part.
fn sector(w: &mut Witness, t: &Trees, s: &Sector, i: usize) -> Result<()> {
    alloc_num(w, s.comm_r_last);
    alloc_num(w, s.comm_c);
    alloc_num(w, s.comm_r);
    w.inputs.push(s.comm_r);
    if poseidon::hash(w, t.of(2), &[s.comm_c, s.comm_r_last]) != s.comm_r {
        return Err(Error::internal(format!(
            "native witness: sector {i}: comm_r is not H(comm_c, comm_r_last)"
        )));
    }
    for (j, leaf) in s.leaves.iter().enumerate() {
        let value = alloc_num(w, leaf.value);
        included(
            w,
            t,
            TreeHash::Poseidon,
            &leaf.path,
            value,
            s.comm_r_last,
            || format!("sector {i}, challenge {j}"),
        )?;
    }
    Ok(())
}

/// The partition's witness (public inputs, `ONE` first, and aux values) as witness-only
/// synthesis of `FallbackPoStCircuit` gives it, with room for `aux_hint` aux values; gives up
/// (CANCELLED) soon after `abort` turns true. UNSUPPORTED where [`unsupported`] says so,
/// INTERNAL where a computed root or comm_r is not the one it must be.
pub fn witness(
    sectors: &[Sector],
    aux_hint: Option<usize>,
    abort: Option<&AtomicBool>,
) -> Result<Witness> {
    if let Some(why) = unsupported(sectors) {
        return Err(Error::unsupported(format!("native witness: {why}")));
    }
    let start = std::time::Instant::now();
    let t = Trees::new();
    let groups = sectors
        .par_chunks(GROUP)
        .enumerate()
        .map(|(g, group)| {
            // Room for the group's aux values, as many others (most of them are others).
            let room = aux_hint.map_or(0, |n| n / sectors.len() * group.len());
            let mut w = Witness::with_room_for(Vec::new(), room, room);
            for (k, s) in group.iter().enumerate() {
                if abort.is_some_and(|a| a.load(Ordering::Relaxed)) {
                    return Err(Error::new(Status::Cancelled, "native witness: aborted"));
                }
                sector(&mut w, &t, s, g * GROUP + k)?;
            }
            Ok(w)
        })
        .collect::<Result<Vec<_>>>()?;
    let made = start.elapsed();
    let w = Witness::concat(vec![Fr::ONE], &groups);
    log::debug!(
        "native PoSt witness: {} sectors, {} aux values: groups made in {made:.2?}, appended in {:.2?}",
        sectors.len(),
        w.n_aux(),
        start.elapsed() - made
    );
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pce::native::merkle::inclusion;

    /// A sector whose paths (arity 8, then 2) lead to comm_r_last and whose comm_r is
    /// H(comm_c, comm_r_last), its values made with the generator's own hashes.
    fn sector(seed: u64, challenges: usize) -> Sector {
        let t = Trees::new();
        let f = |i: u64| Fr::from(seed * 1_000 + i);
        let path = |j: usize| {
            vec![
                Step {
                    siblings: (0..7).map(|i| f(10 * j as u64 + i)).collect(),
                    index: j % 8,
                },
                Step {
                    siblings: vec![f(500 + j as u64)],
                    index: j % 2,
                },
            ]
        };
        // One leaf and its path, challenged `challenges` times.
        let first = path(seed as usize);
        let mut scratch = Witness::default();
        let comm_r_last = inclusion(&mut scratch, &t, TreeHash::Poseidon, &first, f(999));
        let comm_c = f(777);
        let comm_r = poseidon::hash(&mut scratch, t.of(2), &[comm_c, comm_r_last]);
        Sector {
            comm_r,
            comm_c,
            comm_r_last,
            leaves: (0..challenges)
                .map(|_| Leaf {
                    value: f(999),
                    path: first.clone(),
                })
                .collect(),
        }
    }

    /// A valid partition is made, in groups as in one piece; a leaf, a sibling or comm_r
    /// changed is refused (INTERNAL), as are an arity the circuit does not hash and paths of
    /// different lengths (UNSUPPORTED); a raised stop gives CANCELLED.
    #[test]
    fn a_post_witness_is_made_only_where_every_path_leads_to_its_root() {
        let sectors: Vec<Sector> = (0..70).map(|i| sector(i + 1, 3)).collect();
        let w = witness(&sectors, None, None).unwrap();
        assert!(w.classes_match());
        let mut one_piece = Witness::with_inputs(vec![Fr::ONE], 0);
        let t = Trees::new();
        for (i, s) in sectors.iter().enumerate() {
            super::sector(&mut one_piece, &t, s, i).unwrap();
        }
        assert!(
            w == one_piece,
            "groups appended are the witness made in one piece"
        );
        // Inputs: ONE, then per sector comm_r and each path's packed index bits.
        assert_eq!(w.inputs.len(), 1 + 70 * (1 + 3));

        let status = |s: &[Sector]| witness(s, None, None).unwrap_err().status;
        let mut bad = sectors.clone();
        bad[40].leaves[2].value += Fr::ONE;
        assert_eq!(status(&bad), Status::Internal);
        let mut bad = sectors.clone();
        bad[69].leaves[0].path[1].siblings[0] += Fr::ONE;
        assert_eq!(status(&bad), Status::Internal);
        let mut bad = sectors.clone();
        bad[0].comm_r += Fr::ONE;
        assert_eq!(status(&bad), Status::Internal);
        let mut bad = sectors.clone();
        bad[3].leaves[1].path[1].siblings.push(Fr::ONE);
        assert_eq!(status(&bad), Status::Unsupported);
        let mut bad = sectors.clone();
        bad[5].leaves[0].path.pop();
        assert_eq!(status(&bad), Status::Unsupported);
        assert_eq!(status(&[]), Status::Unsupported);
        let stop = AtomicBool::new(true);
        assert_eq!(
            witness(&sectors, None, Some(&stop)).unwrap_err().status,
            Status::Cancelled
        );
    }
}
