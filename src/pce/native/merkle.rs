//! storage-proofs' Merkle inclusion circuit (`PoRCircuit::synthesize`, private root), shared by
//! the PoRep and PoSt circuits: per step of the path, the index bits and siblings allocated,
//! the node inserted among them and the result hashed; the index bits packed into inputs.

use blstrs::Scalar as Fr;
use filecoin_hashers::{PoseidonBinaryArity, PoseidonOctArity, PoseidonQuadArity};

use super::{
    bits::{alloc, Bit},
    hashers::{packed, sha256_multi_leaf, CAPACITY},
    insertion::insert,
    num::alloc_num,
    poseidon::{self, Constants},
};
use crate::{
    error::{Error, Result},
    pce::Witness,
};

/// One step of a Merkle path: the node's siblings, and its position among them (the arity is
/// one more than the siblings).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub siblings: Vec<Fr>,
    pub index: usize,
}

/// Which hash a Merkle path's nodes are made with.
#[derive(Clone, Copy, PartialEq)]
pub enum TreeHash {
    Sha256,
    Poseidon,
}

/// The Poseidon constants of the trees' arities (2, 4 and 8).
pub struct Trees([Constants; 3]);

impl Trees {
    pub fn new() -> Trees {
        Trees([
            Constants::of::<PoseidonBinaryArity>(),
            Constants::of::<PoseidonQuadArity>(),
            Constants::of::<PoseidonOctArity>(),
        ])
    }

    /// The constants of `arity` (2, 4 or 8: [`arity_supported`]).
    pub fn of(&self, arity: usize) -> &Constants {
        &self.0[arity.trailing_zeros() as usize - 1]
    }
}

/// Whether a step of `arity` is one the circuit hashes (2, 4 or 8).
pub fn arity_supported(arity: usize) -> bool {
    matches!(arity, 2 | 4 | 8)
}

/// Where a path's steps are not ones the generator follows: the reason, else None.
pub fn unsupported_step<'a>(steps: impl IntoIterator<Item = &'a Step>) -> Option<String> {
    for s in steps {
        let arity = s.siblings.len() + 1;
        if !arity_supported(arity) {
            return Some(format!("a tree of arity {arity}"));
        }
        if s.index >= arity {
            return Some(format!("index {} in a step of arity {arity}", s.index));
        }
    }
    None
}

/// `multipack::pack_into_inputs`: the bits, 254 to a public input.
fn pack_into_inputs(w: &mut Witness, bits: &[Bit]) {
    w.inputs.extend(bits.chunks(CAPACITY).map(packed));
}

/// `PoRCircuit::synthesize` of an already allocated `leaf` (private root). Returns the root it
/// computes.
pub fn inclusion(w: &mut Witness, t: &Trees, hash: TreeHash, path: &[Step], leaf: Fr) -> Fr {
    let mut cur = leaf;
    let mut path_bits = Vec::with_capacity(path.len() * 3);
    for step in path {
        let arity = step.siblings.len() + 1;
        let bits: Vec<Bit> = (0..arity.trailing_zeros())
            .map(|i| alloc(w, step.index >> i & 1 == 1))
            .collect();
        for &s in &step.siblings {
            alloc_num(w, s);
        }
        let inserted = insert(w, cur, &bits, &step.siblings);
        cur = match hash {
            TreeHash::Sha256 => sha256_multi_leaf(w, &inserted),
            TreeHash::Poseidon => poseidon::hash(w, t.of(arity), &inserted),
        };
        path_bits.extend(bits);
    }
    pack_into_inputs(w, &path_bits);
    cur
}

/// [`inclusion`], its root compared with the commitment the circuit constrains it to
/// (INTERNAL where it is not: a witness that would not satisfy the circuit).
pub fn included(
    w: &mut Witness,
    t: &Trees,
    hash: TreeHash,
    path: &[Step],
    leaf: Fr,
    root: Fr,
    what: impl FnOnce() -> String,
) -> Result<()> {
    if inclusion(w, t, hash, path, leaf) == root {
        Ok(())
    } else {
        Err(Error::internal(format!(
            "native witness: {}: the path does not lead to its commitment",
            what()
        )))
    }
}
