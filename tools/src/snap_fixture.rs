//! Shape-true synthetic SnapDeals inputs (`cuzk fixture --kind snap`): the partition proofs a
//! node would make for a sector update of any size, with no sector data.
//!
//! The update's challenges are derived from comm_r_new, which the challenged leaves of the new
//! replica's tree R determine, so sparse trees (a few touched leaves, the rest pseudo-random)
//! cannot be made consistent. Periodic trees can: the new data (tree D, SHA-256) and the sector
//! key (tree R old) repeat one block of `P` nodes; the new replica, `key + data × rho(high)`
//! (rho from phi = H(comm_d_new, comm_r_old) and the challenge's `h` high bits), repeats a block
//! within each of the `2^h` regions those bits name. Every node of such a tree is computed, from
//! one block per region, whatever is challenged; the roots come first, then comm_r_new, then
//! the challenges (filecoin-proofs' own `Challenges`), then their paths. The partition proofs
//! pass filecoin-proofs' vanilla verification and fail it when a commitment or a path changes.
//!
//! On disk a fixture is a directory: `snap.json` (proof type and the three commitments) and
//! `vanilla.bin` (a u32 LE count, then per partition a u32 LE length and the bincode bytes of
//! `PartitionProof`, as `GenerateUpdateVanillaProofs` returns them).

use std::{cell::RefCell, collections::HashMap, path::Path};

use blstrs::Scalar as Fr;
use filecoin_hashers::{
    poseidon::{PoseidonDomain, PoseidonFunction},
    sha256::Sha256Domain,
    HashFunction,
};
use filecoin_proofs::{
    MerkleTreeTrait, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB,
    SectorShape8MiB, TreeRHasher,
};
use merkletree::hash::Algorithm;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_update::{phi, rho, ChallengeProof, Challenges, PartitionProof, PublicParams};

use cuzk::{
    error::{Error, Result},
    porep,
    snap::{self, SnapRequest, UpdateProof},
};

use crate::{
    post_fixture::{hex32, read, vanilla_bin, vanilla_list, write},
    synthetic::{arities, path_of, prf, DataTree},
};

/// A Poseidon tree in tree R's shape whose leaf `c` is `leaf(c / region, c % period)`: every
/// node is computed, each distinct one once (a node is the same as every other of its level in
/// its region where it spans whole periods, and at an offset where it spans part of one). Where
/// the regions are shorter than the period (small sectors) every node is computed.
struct PeriodicTree<'a> {
    arities: Vec<usize>,
    /// Leaves under a node of each level (level 0: 1).
    spans: Vec<u64>,
    period: u64,
    region: u64,
    leaf: Box<dyn Fn(u64, u64) -> PoseidonDomain + Sync + 'a>,
    memo: RefCell<HashMap<(usize, u64), PoseidonDomain>>,
}

impl<'a> PeriodicTree<'a> {
    fn new(
        arities: Vec<usize>,
        period: u64,
        region: u64,
        leaf: impl Fn(u64, u64) -> PoseidonDomain + Sync + 'a,
    ) -> Result<PeriodicTree<'a>> {
        let mut spans = vec![1u64];
        for &a in &arities {
            spans.push(spans.last().expect("a span") * a as u64);
        }
        // Each span divides the period, or is a multiple of it within a region, or spans regions.
        // A small tree whose regions are shorter than the period is computed whole.
        let fits = |s: u64| period % s == 0 || (s % period == 0 && region % s == 0) || s >= region;
        if period <= region && (region % period != 0 || !spans.iter().all(|&s| fits(s))) {
            return Err(Error::internal(format!(
                "a periodic tree of arities {arities:?} cannot repeat {period} nodes within {region}"
            )));
        }
        Ok(PeriodicTree {
            arities,
            spans,
            period,
            region,
            leaf: Box::new(leaf),
            memo: RefCell::new(HashMap::new()),
        })
    }

    /// The first leaf of the node that node `i` of level `lvl` equals.
    fn canonical(&self, lvl: usize, i: u64) -> u64 {
        let (span, start) = (self.spans[lvl], i * self.spans[lvl]);
        let region_start = start / self.region * self.region;
        if span >= self.region || self.period > self.region {
            start
        } else if span <= self.period {
            region_start + start % self.period
        } else {
            region_start
        }
    }

    fn node(&self, lvl: usize, i: u64) -> PoseidonDomain {
        let first = self.canonical(lvl, i);
        if let Some(v) = self.memo.borrow().get(&(lvl, first)) {
            return *v;
        }
        let v = if lvl == 0 {
            (self.leaf)(first / self.region, first % self.period)
        } else {
            let a = self.arities[lvl - 1] as u64;
            let child = first / self.spans[lvl - 1];
            let children: Vec<PoseidonDomain> =
                (0..a).map(|j| self.node(lvl - 1, child + j)).collect();
            PoseidonFunction::default().multi_node(&children, lvl - 1)
        };
        self.memo.borrow_mut().insert((lvl, first), v);
        v
    }

    fn root(&self) -> PoseidonDomain {
        self.node(self.arities.len(), 0)
    }

    /// Leaf to root: the siblings of each level (own position left out) and the position.
    fn path(&self, leaf: u64) -> Vec<(Vec<PoseidonDomain>, usize)> {
        path_of(&self.arities, leaf, |lvl, i| self.node(lvl, i))
    }
}

/// What a synthetic SnapDeals fixture is made for.
#[derive(Clone, Debug)]
pub struct SnapFixtureSpec {
    pub proof: UpdateProof,
    /// Seeds comm_c, the key's and the data's blocks.
    pub seed: u64,
}

/// A synthetic SnapDeals job: the commitments and one partition proof per partition.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SnapFixture {
    /// go-state-types' `abi.RegisteredUpdateProof`.
    pub registered_proof: i64,
    pub comm_r_old: String,
    pub comm_r_new: String,
    pub comm_d_new: String,
    #[serde(skip)]
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// The synthetic partition proofs of a sector update (see the module's comment).
pub fn snap_fixture(spec: &SnapFixtureSpec) -> Result<SnapFixture> {
    let size = u64::from(spec.proof.sector_size());
    porep::with_tree_shape(
        size,
        || build::<SectorShape2KiB>(spec),
        || build::<SectorShape8MiB>(spec),
        || build::<SectorShape512MiB>(spec),
        || build::<SectorShape32GiB>(spec),
        || build::<SectorShape64GiB>(spec),
    )?
}

fn build<Tree>(spec: &SnapFixtureSpec) -> Result<SnapFixture>
where
    Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>,
{
    let size = u64::from(spec.proof.sector_size());
    let pp = PublicParams::from_sector_size(size);
    let nodes = pp.sector_nodes as u64;
    let h = storage_proofs_update::constants::h_default(pp.sector_nodes);
    let s = spec.seed;
    let data = DataTree::new(s, nodes as usize);
    let period = data.period() as u64;
    let comm_d_new = data.root();
    let fr = |d: Sha256Domain| -> Fr { d.into() };
    let key = |off: u64| PoseidonDomain::from(prf(s, "snap-key", off, 0));
    let tree_old = PeriodicTree::new(arities::<Tree>(nodes as usize), period, nodes, |_, off| {
        key(off)
    })?;
    let root_old = tree_old.root();
    let comm_c = PoseidonDomain::from(prf(s, "snap-comm-c", 0, 0));
    let hash2 = <PoseidonFunction as HashFunction<PoseidonDomain>>::hash2;
    let comm_r_old = hash2(&comm_c, &root_old);
    let phi = phi(&comm_d_new, &comm_r_old);
    let region = nodes >> h;
    let rhos: Vec<Fr> = (0..1u64 << h).map(|hi| rho(&phi, hi as u32)).collect();
    let tree_new = PeriodicTree::new(
        arities::<Tree>(nodes as usize),
        period,
        region,
        |hi, off| {
            let k: Fr = key(off).into();
            PoseidonDomain::from(k + fr(data.leaf(off as usize)) * rhos[hi as usize])
        },
    )?;
    let root_new = tree_new.root();
    let comm_r_new = hash2(&comm_c, &root_new);
    let apex_height = pp.challenge_bit_len - pp.partition_bit_len - pp.apex_leaf_bit_len;
    type TreeProof<Tree> = MerkleProof<
        TreeRHasher,
        <Tree as MerkleTreeTrait>::Arity,
        <Tree as MerkleTreeTrait>::SubTreeArity,
        <Tree as MerkleTreeTrait>::TopTreeArity,
    >;
    let proofs: Vec<PartitionProof<Tree>> = (0..pp.partition_count)
        .map(|k| PartitionProof::<Tree> {
            comm_c,
            apex_leafs: (0..pp.apex_leaf_count)
                .map(|j| data.node(apex_height, k * pp.apex_leaf_count + j))
                .collect(),
            challenge_proofs: Challenges::new(pp.sector_nodes, comm_r_new, k)
                .map(|c| {
                    let c = c as u64;
                    ChallengeProof::<Tree> {
                        proof_r_old: TreeProof::<Tree>::from_parts(
                            tree_old.node(0, c),
                            root_old,
                            tree_old.path(c),
                        ),
                        proof_d_new: MerkleProof::from_parts(
                            data.leaf(c as usize),
                            comm_d_new,
                            data.path(c as usize),
                        ),
                        proof_r_new: TreeProof::<Tree>::from_parts(
                            tree_new.node(0, c),
                            root_new,
                            tree_new.path(c),
                        ),
                    }
                })
                .collect(),
        })
        .collect();
    let vanilla_proofs = proofs
        .par_iter()
        .map(|p| {
            bincode::serialize(p)
                .map_err(|e| Error::internal(format!("serializing a partition proof: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(SnapFixture {
        registered_proof: abi_number(spec.proof),
        comm_r_old: hex::encode(comm_r_old),
        comm_r_new: hex::encode(comm_r_new),
        comm_d_new: hex::encode(comm_d_new),
        vanilla_proofs,
    })
}

/// go-state-types' number of an update proof type.
pub fn abi_number(proof: UpdateProof) -> i64 {
    (0..5)
        .find(|&n| snap::update_proof_from_abi(n).is_ok_and(|p| p == proof))
        .expect("every update proof type has a number")
}

impl SnapFixture {
    /// The engine's request for this fixture.
    pub fn request(&self, priority: i32) -> Result<SnapRequest> {
        Ok(SnapRequest {
            proof: snap::update_proof_from_abi(self.registered_proof)?,
            comm_r_old: hex32(&self.comm_r_old, "comm_r_old")?,
            comm_r_new: hex32(&self.comm_r_new, "comm_r_new")?,
            comm_d_new: hex32(&self.comm_d_new, "comm_d_new")?,
            vanilla_proofs: self.vanilla_proofs.clone(),
            priority,
        })
    }

    /// Writes `snap.json` and `vanilla.bin` into `dir` (made if missing).
    pub fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::internal(format!("cannot create {}: {e}", dir.display())))?;
        let json = serde_json::to_vec_pretty(self).expect("serializable");
        write(&dir.join("snap.json"), &json)?;
        write(&dir.join("vanilla.bin"), &vanilla_bin(&self.vanilla_proofs))
    }

    /// Reads a fixture `save` wrote (INVALID_INPUT where it is not one).
    pub fn load(dir: &Path) -> Result<SnapFixture> {
        let mut f: SnapFixture = serde_json::from_slice(&read(&dir.join("snap.json"))?)
            .map_err(|e| Error::invalid_input(format!("{}/snap.json: {e}", dir.display())))?;
        let bin = read(&dir.join("vanilla.bin"))?;
        let (vanilla, end) = vanilla_list(&bin, dir)?;
        if end != bin.len() {
            return Err(Error::invalid_input(format!(
                "{}/vanilla.bin has bytes past its last entry",
                dir.display()
            )));
        }
        f.vanilla_proofs = vanilla;
        Ok(f)
    }
}
