//! A partition's vanilla proofs as the native witness generator takes them
//! ([`crate::pce::native::stacked::Partition`]): the values `StackedCompound::circuit` puts in
//! the circuit, taken out of the proofs.
//!
//! storage-proofs keeps a column proof's column and inclusion path, and a labeling proof's
//! node, private to its crate; they are public in its serialized form (the C1 output is made of
//! it), so those parts are read back through serde into the mirrors below.

use filecoin_hashers::Hasher;
use filecoin_proofs::{MerkleTreeTrait, VanillaSealProof};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use storage_proofs_core::merkle::MerkleProofTrait;

use crate::{
    error::{Error, Result},
    pce::native::stacked::{Challenge, Column, Partition, Step},
};
use blstrs::Scalar as Fr;

/// `stacked::vanilla::Column`'s serialized fields the circuit reads.
#[derive(Deserialize)]
struct ColumnParts<D> {
    rows: Vec<D>,
}

/// `stacked::vanilla::ColumnProof`'s serialized fields.
#[derive(Deserialize)]
#[serde(bound(deserialize = "P: DeserializeOwned, D: DeserializeOwned"))]
struct ColumnProofParts<P, D> {
    column: ColumnParts<D>,
    inclusion_proof: P,
}

/// `stacked::vanilla::LabelingProof`'s serialized node.
#[derive(Deserialize)]
struct LabelingParts {
    node: u64,
}

/// `value` serialized and read back as `T`.
fn transcode<T: DeserializeOwned>(value: &impl Serialize, what: &str) -> Result<T> {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .map_err(|e| Error::internal(format!("reading the {what} of a vanilla proof: {e}")))
}

/// A Merkle proof's path as the circuit allocates it (base, then sub and top tree steps).
pub(crate) fn steps(p: &impl MerkleProofTrait) -> Result<Vec<Step>> {
    p.as_options()
        .into_iter()
        .map(|(hashes, index)| {
            Ok(Step {
                siblings: hashes
                    .into_iter()
                    .collect::<Option<Vec<Fr>>>()
                    .ok_or_else(|| Error::invalid_input("a Merkle path without its hashes"))?,
                index: index
                    .ok_or_else(|| Error::invalid_input("a Merkle path step without its index"))?,
            })
        })
        .collect()
}

fn column<Tree: MerkleTreeTrait>(proof: &impl Serialize) -> Result<Column> {
    let parts: ColumnProofParts<Tree::Proof, <Tree::Hasher as Hasher>::Domain> =
        transcode(proof, "column proof")?;
    Ok(Column {
        rows: parts.column.rows.into_iter().map(Into::into).collect(),
        path: steps(&parts.inclusion_proof)?,
    })
}

fn challenge<Tree: 'static + MerkleTreeTrait>(p: &VanillaSealProof<Tree>) -> Result<Challenge> {
    let first = p
        .labeling_proofs
        .first()
        .ok_or_else(|| Error::invalid_input("a vanilla proof without labeling proofs"))?;
    let node = transcode::<LabelingParts>(first, "labeling proof")?.node;
    let rc = &p.replica_column_proofs;
    let comm_c_path = {
        let parts: ColumnProofParts<Tree::Proof, <Tree::Hasher as Hasher>::Domain> =
            transcode(&rc.c_x, "column proof")?;
        steps(&parts.inclusion_proof)?
    };
    Ok(Challenge {
        node,
        data_leaf: p.comm_d_proofs.leaf().into(),
        comm_d_path: steps(&p.comm_d_proofs)?,
        drg_parents: rc
            .drg_parents
            .iter()
            .map(column::<Tree>)
            .collect::<Result<_>>()?,
        exp_parents: rc
            .exp_parents
            .iter()
            .map(column::<Tree>)
            .collect::<Result<_>>()?,
        comm_r_last_path: steps(&p.comm_r_last_proof)?,
        comm_c_path,
    })
}

/// Partition `proofs` (one vanilla proof per challenge) of the replica `replica_id` with data
/// commitment `comm_d` and replica commitment `comm_r`, as `StackedCompound::circuit` makes
/// its circuit (comm_r_last and comm_c from the first proof, the same in every one).
pub(super) fn partition<Tree: 'static + MerkleTreeTrait>(
    replica_id: Fr,
    comm_d: Fr,
    comm_r: Fr,
    proofs: &[VanillaSealProof<Tree>],
) -> Result<Partition> {
    let first = proofs
        .first()
        .ok_or_else(|| Error::invalid_input("a partition without vanilla proofs"))?;
    let comm_r_last = first.comm_r_last();
    let comm_c = first.comm_c();
    if !proofs
        .iter()
        .all(|p| p.comm_r_last() == comm_r_last && p.comm_c() == comm_c)
    {
        return Err(Error::invalid_input(
            "the vanilla proofs of a partition disagree on comm_r_last or comm_c",
        ));
    }
    Ok(Partition {
        replica_id,
        comm_d,
        comm_r,
        comm_r_last: comm_r_last.into(),
        comm_c: comm_c.into(),
        challenges: proofs.iter().map(challenge).collect::<Result<_>>()?,
    })
}
