//! The PoRep circuit itself (storage-proofs-porep's `StackedCircuit` and its per-challenge
//! `Proof::synthesize`, V1.1), composed from the gadgets beside it: its aux values and public
//! inputs in the order and with the values witness-only synthesis gives.
//!
//! Its input is plain data ([`Partition`]): the partition's commitments and, per challenge,
//! the data leaf, the parents' columns and every Merkle path, as the C1's vanilla proofs hold
//! them (`crate::porep` takes them out). Each Merkle path's computed root is compared with the
//! commitment the circuit constrains it to, and comm_r with H(comm_c, comm_r_last): these
//! cover the labels, the encoding and every column, so a witness that would not satisfy the
//! circuit's equalities is refused here ([`Status::Internal`]) rather than handed to a prover.

use std::sync::atomic::{AtomicBool, Ordering};

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::PoseidonBinaryArity;

pub use super::merkle::Step;
use super::{
    bits::{reverse_bit_numbering, Bit, U32},
    label::{alloc_u64, create_label, TOTAL_PARENTS},
    merkle::{included, unsupported_step, TreeHash, Trees},
    num::{alloc_num, encode, to_bits_le},
    poseidon::{self, Constants},
};
use crate::{
    error::{Error, Result, Status},
    pce::Witness,
};

/// DRG parents of a node (`filecoin_proofs::DRG_DEGREE`).
pub const DRG_PARENTS: usize = 6;
/// Expander parents of a node (`filecoin_proofs::EXP_DEGREE`).
pub const EXP_PARENTS: usize = 8;

/// A parent's column (its label in each layer) and the path of its hash in tree C.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub rows: Vec<Fr>,
    pub path: Vec<Step>,
}

/// One challenge's part of the circuit.
#[derive(Clone, Debug, PartialEq)]
pub struct Challenge {
    /// The challenged node.
    pub node: u64,
    /// Its value in the sector's data (a leaf of tree D).
    pub data_leaf: Fr,
    /// Its path in tree D (SHA-256, binary).
    pub comm_d_path: Vec<Step>,
    pub drg_parents: Vec<Column>,
    pub exp_parents: Vec<Column>,
    /// The encoded node's path in tree R.
    pub comm_r_last_path: Vec<Step>,
    /// The path of its own column's hash in tree C.
    pub comm_c_path: Vec<Step>,
}

/// One partition's circuit with its values.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    pub replica_id: Fr,
    pub comm_d: Fr,
    pub comm_r: Fr,
    pub comm_r_last: Fr,
    pub comm_c: Fr,
    pub challenges: Vec<Challenge>,
}

/// Where the native generator does not follow the circuit: the reason, else None. The circuit
/// itself panics on most of these (an unsupported column height, a label that does not hash
/// 37 parents).
pub fn unsupported(p: &Partition) -> Option<String> {
    let Some(first) = p.challenges.first() else {
        return Some("a partition without challenges".into());
    };
    let layers = first.drg_parents.first().map_or(0, |c| c.rows.len());
    if !matches!(layers, 2 | 11) {
        return Some(format!(
            "columns of {layers} layers (only 2 and 11 are hashed)"
        ));
    }
    for c in &p.challenges {
        if c.drg_parents.len() != DRG_PARENTS || c.exp_parents.len() != EXP_PARENTS {
            return Some(format!(
                "{} DRG and {} expander parents (the labels hash {DRG_PARENTS} and {EXP_PARENTS})",
                c.drg_parents.len(),
                c.exp_parents.len()
            ));
        }
        if c.drg_parents
            .iter()
            .chain(&c.exp_parents)
            .any(|col| col.rows.len() != layers)
        {
            return Some("columns of different heights".into());
        }
        if c.comm_d_path.iter().any(|s| s.siblings.len() != 1) {
            return Some("a data tree that is not binary".into());
        }
        let steps = c
            .drg_parents
            .iter()
            .chain(&c.exp_parents)
            .flat_map(|col| &col.path)
            .chain(&c.comm_r_last_path)
            .chain(&c.comm_c_path)
            .chain(&c.comm_d_path);
        if let Some(why) = unsupported_step(steps) {
            return Some(why);
        }
    }
    None
}

/// The Poseidon constants the circuit hashes with.
struct Hashers {
    tree: Trees,
    column: Constants,
}

impl Hashers {
    fn new(layers: usize) -> Hashers {
        Hashers {
            tree: Trees::new(),
            // `hash_single_column`: arity 2 for two layers, 11 for eleven.
            column: if layers == 2 {
                Constants::of::<PoseidonBinaryArity>()
            } else {
                Constants::column()
            },
        }
    }
}

/// A column allocated, hashed, and its hash's inclusion in tree C.
fn column(
    w: &mut Witness,
    h: &Hashers,
    col: &Column,
    comm_c: Fr,
    what: impl FnOnce() -> String,
) -> Result<()> {
    for &r in &col.rows {
        alloc_num(w, r);
    }
    let hash = poseidon::hash(w, &h.column, &col.rows);
    included(
        w,
        &h.tree,
        TreeHash::Poseidon,
        &col.path,
        hash,
        comm_c,
        what,
    )
}

/// A parent's label in bits as the labels hash them (`to_bits_le`, bytes reversed).
fn label_bits(w: &mut Witness, v: &Fr) -> Vec<Bit> {
    reverse_bit_numbering(&to_bits_le(w, v))
}

/// `Proof::synthesize`: challenge `i`'s part.
fn challenge(
    w: &mut Witness,
    h: &Hashers,
    p: &Partition,
    replica_id: &[Bit],
    i: usize,
) -> Result<()> {
    let c = &p.challenges[i];
    let leaf = alloc_num(w, c.data_leaf);
    included(
        w,
        &h.tree,
        TreeHash::Sha256,
        &c.comm_d_path,
        leaf,
        p.comm_d,
        || format!("challenge {i}: the data leaf"),
    )?;
    for (j, col) in c.drg_parents.iter().enumerate() {
        column(w, h, col, p.comm_c, || {
            format!("challenge {i}: DRG parent {j}")
        })?;
    }
    for (j, col) in c.exp_parents.iter().enumerate() {
        column(w, h, col, p.comm_c, || {
            format!("challenge {i}: expander parent {j}")
        })?;
    }
    let node = alloc_u64(w, c.node);
    w.inputs.push(Fr::from(c.node));
    let layers = c.drg_parents[0].rows.len();
    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents: Vec<Vec<Bit>> = c
            .drg_parents
            .iter()
            .map(|col| label_bits(w, &col.rows[layer - 1]))
            .collect();
        if layer > 1 {
            // The expander parents' columns start at layer 1: their label in the layer before.
            parents.extend(
                c.exp_parents
                    .iter()
                    .map(|col| label_bits(w, &col.rows[layer - 2])),
            );
        }
        let n = parents.len();
        let expanded: Vec<Vec<Bit>> = (0..TOTAL_PARENTS).map(|k| parents[k % n].clone()).collect();
        labels.push(create_label(
            w,
            replica_id,
            &expanded,
            &U32::constant(layer as u32),
            &node,
        ));
    }
    let key = *labels.last().expect("at least one layer");
    let encoded = encode(w, key, leaf);
    included(
        w,
        &h.tree,
        TreeHash::Poseidon,
        &c.comm_r_last_path,
        encoded,
        p.comm_r_last,
        || format!("challenge {i}: the encoded node"),
    )?;
    let hash = poseidon::hash(w, &h.column, &labels);
    included(
        w,
        &h.tree,
        TreeHash::Poseidon,
        &c.comm_c_path,
        hash,
        p.comm_c,
        || format!("challenge {i}: the labels' column"),
    )
}

/// The partition's witness (public inputs, `ONE` first, and aux values) as witness-only
/// synthesis of `StackedCircuit` gives it, with room for `aux_hint` aux values; gives up
/// (CANCELLED) soon after `abort` turns true. UNSUPPORTED where [`unsupported`] says so,
/// INTERNAL where a computed root is not the commitment it must be.
pub fn witness(
    p: &Partition,
    aux_hint: Option<usize>,
    abort: Option<&AtomicBool>,
) -> Result<Witness> {
    if let Some(why) = unsupported(p) {
        return Err(Error::unsupported(format!("native witness: {why}")));
    }
    let layers = p.challenges[0].drg_parents[0].rows.len();
    let h = Hashers::new(layers);
    let mut w = Witness::with_inputs(vec![Fr::ONE], aux_hint.unwrap_or(0));
    alloc_num(&mut w, p.replica_id);
    w.inputs.push(p.replica_id);
    let replica_id = label_bits(&mut w, &p.replica_id);
    alloc_num(&mut w, p.comm_d);
    w.inputs.push(p.comm_d);
    alloc_num(&mut w, p.comm_r);
    w.inputs.push(p.comm_r);
    alloc_num(&mut w, p.comm_r_last);
    alloc_num(&mut w, p.comm_c);
    if poseidon::hash(&mut w, h.tree.of(2), &[p.comm_c, p.comm_r_last]) != p.comm_r {
        return Err(Error::internal(
            "native witness: comm_r is not H(comm_c, comm_r_last)",
        ));
    }
    for i in 0..p.challenges.len() {
        if abort.is_some_and(|a| a.load(Ordering::Relaxed)) {
            return Err(Error::new(Status::Cancelled, "native witness: aborted"));
        }
        challenge(&mut w, &h, p, &replica_id, i)?;
    }
    Ok(w)
}
