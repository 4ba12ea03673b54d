//! Shape-true synthetic C1 outputs (`cuzk fixture`): a standard `SealCommitPhase1Output` for a
//! random sector of any size, without sealing it.
//!
//! Only what the challenged nodes' openings need is computed:
//!
//! - **Data (tree D).** The sector's data is a pseudo-random block of up to 4096 nodes, repeated
//!   over the sector (a piece written again and again). Its tree is computed once for the block;
//!   above the block every node of a level is the same. So comm_d is known before the
//!   challenges, which depend on it through the replica id.
//! - **Challenges** are derived exactly as filecoin-proofs derives them (`PublicInputs::
//!   challenges`, from the replica id `generate_replica_id` makes, the seed and the partition).
//! - **Labels.** A node that is a parent of a challenge but not challenged itself gets
//!   pseudo-random labels. A challenged node's label on each layer is computed from its
//!   parents' labels as sealing computes it (base parents on the same layer, expander parents
//!   on the one below, repeated to 37, SHA-256, cut to 254 bits), layer by layer and in node
//!   order, so a parent that is itself challenged is used with its computed label.
//! - **Trees C and R-last** are sparse trees in the sector size's real shape (arity 8 base
//!   trees, the sub and top levels of 32 GiB and 64 GiB sectors): a node with a touched leaf
//!   under it is the hash of its children, every other node is deterministic pseudo-random.
//!   C's leaves are the column hashes, R's the replica nodes (last label + data node).
//!
//! The result passes filecoin-proofs' vanilla verification (the check `seal_commit_phase1`
//! runs), and its circuit is satisfied, so it proves with filecoin-proofs and with cuzk.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use filecoin_hashers::{
    poseidon::{PoseidonDomain, PoseidonFunction, PoseidonHasher},
    sha256::{Sha256Domain, Sha256Function, Sha256Hasher},
    HashFunction,
};
use filecoin_proofs::{
    MerkleTreeTrait, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB,
    SectorShape8MiB,
};
use filecoin_proofs_api::{
    seal::{SealCommitPhase1Output, VanillaSealProof as ApiVanilla},
    RegisteredSealProof,
};
use merkletree::hash::Algorithm;
use sha2::{Digest, Sha256};
use storage_proofs_core::{drgraph::Graph, merkle::MerkleProof};
use storage_proofs_porep::stacked::{
    self, generate_replica_id, Column, ColumnProof, EncodingProof, LabelingProof,
    ReplicaColumnProof,
};
use typenum::Unsigned;

use cuzk::{
    error::{Error, Result},
    porep::{self, FixtureShape},
};

/// What a synthetic C1 output is made for.
#[derive(Clone, Debug)]
pub struct SyntheticSpec {
    pub proof: RegisteredSealProof,
    pub shape: FixtureShape,
    pub sector_id: u64,
    pub prover_id: [u8; 32],
    /// Seeds everything random: data, labels, untouched tree nodes, ticket and seed.
    pub seed: u64,
}

/// Deterministic pseudo-random 32 bytes, cut to 254 bits (a canonical field element).
pub(crate) fn prf(seed: u64, tag: &str, a: u64, b: u64) -> [u8; 32] {
    let h = blake2b_simd::Params::new()
        .hash_length(32)
        .to_state()
        .update(&seed.to_le_bytes())
        .update(tag.as_bytes())
        .update(&a.to_le_bytes())
        .update(&b.to_le_bytes())
        .finalize();
    let mut out = [0u8; 32];
    out.copy_from_slice(h.as_bytes());
    out[31] &= 0x3f;
    out
}

fn sha_node(l: Sha256Domain, r: Sha256Domain) -> Sha256Domain {
    Sha256Function::default().node(l, r, 0)
}

/// Tree D of a sector whose data is one block of `2^block_log` nodes repeated.
pub(crate) struct DataTree {
    block_log: usize,
    depth: usize,
    /// `levels[t]` for `t <= block_log`: the block's tree (level 0 = its data nodes).
    levels: Vec<Vec<Sha256Domain>>,
    /// `above[t - block_log]` for `t >= block_log`: every node of level t.
    above: Vec<Sha256Domain>,
}

impl DataTree {
    pub(crate) fn new(seed: u64, nodes: usize) -> DataTree {
        let depth = nodes.trailing_zeros() as usize;
        let block_log = depth.min(12);
        let leaves: Vec<Sha256Domain> = (0..1u64 << block_log)
            .map(|i| Sha256Domain::from(prf(seed, "data", i, 0)))
            .collect();
        let mut levels = vec![leaves];
        for _ in 0..block_log {
            let prev = levels.last().expect("a level");
            levels.push(prev.chunks(2).map(|p| sha_node(p[0], p[1])).collect());
        }
        let mut above = vec![levels[block_log][0]];
        for _ in block_log..depth {
            let n = *above.last().expect("a level");
            above.push(sha_node(n, n));
        }
        DataTree {
            block_log,
            depth,
            levels,
            above,
        }
    }

    pub(crate) fn root(&self) -> Sha256Domain {
        *self.above.last().expect("a root")
    }

    pub(crate) fn leaf(&self, c: usize) -> Sha256Domain {
        self.levels[0][c & ((1 << self.block_log) - 1)]
    }

    /// The node of level `t` (0: the data) at index `i`.
    pub(crate) fn node(&self, t: usize, i: usize) -> Sha256Domain {
        if t < self.block_log {
            self.levels[t][i & ((1 << (self.block_log - t)) - 1)]
        } else {
            self.above[t - self.block_log]
        }
    }

    /// The period of its data, in nodes.
    pub(crate) fn period(&self) -> usize {
        1 << self.block_log
    }

    pub(crate) fn path(&self, c: usize) -> Vec<(Vec<Sha256Domain>, usize)> {
        (0..self.depth)
            .map(|t| {
                let bit = (c >> t) & 1;
                let sib = if t < self.block_log {
                    let i = (c & ((1 << self.block_log) - 1)) >> t;
                    self.levels[t][i ^ 1]
                } else {
                    self.above[t - self.block_log]
                };
                (vec![sib], bit)
            })
            .collect()
    }
}

/// A sparse Poseidon tree over `leaves` touched leaves, in the shape `arities` (leaf level
/// first): touched nodes are hashes of their children, the rest pseudo-random.
pub(crate) struct SparseTree {
    seed: u64,
    tag: &'static str,
    arities: Vec<usize>,
    /// Touched nodes per level (level 0 = the leaves).
    levels: Vec<BTreeMap<u64, PoseidonDomain>>,
}

impl SparseTree {
    pub(crate) fn new(
        seed: u64,
        tag: &'static str,
        arities: Vec<usize>,
        leaves: BTreeMap<u64, PoseidonDomain>,
    ) -> SparseTree {
        let mut t = SparseTree {
            seed,
            tag,
            arities,
            levels: vec![leaves],
        };
        for lvl in 0..t.arities.len() {
            let arity = t.arities[lvl] as u64;
            let parents: BTreeSet<u64> = t.levels[lvl].keys().map(|i| i / arity).collect();
            let next = parents
                .into_iter()
                .map(|p| {
                    let children: Vec<PoseidonDomain> =
                        (0..arity).map(|j| t.node(lvl, p * arity + j)).collect();
                    (p, PoseidonFunction::default().multi_node(&children, lvl))
                })
                .collect();
            t.levels.push(next);
        }
        t
    }

    pub(crate) fn node(&self, lvl: usize, i: u64) -> PoseidonDomain {
        self.levels[lvl]
            .get(&i)
            .copied()
            .unwrap_or_else(|| PoseidonDomain::from(prf(self.seed, self.tag, lvl as u64, i)))
    }

    pub(crate) fn root(&self) -> PoseidonDomain {
        self.node(self.arities.len(), 0)
    }

    /// Leaf to root: the siblings of each level (ascending, own position left out) and the
    /// position.
    pub(crate) fn path(&self, leaf: u64) -> Vec<(Vec<PoseidonDomain>, usize)> {
        path_of(&self.arities, leaf, |lvl, i| self.node(lvl, i))
    }
}

/// The path of `leaf` in a tree of `arities` (leaf level first) whose nodes `node(level,
/// index)` gives: leaf to root, the siblings of each level (ascending, own position left out)
/// and the position.
pub(crate) fn path_of(
    arities: &[usize],
    leaf: u64,
    node: impl Fn(usize, u64) -> PoseidonDomain,
) -> Vec<(Vec<PoseidonDomain>, usize)> {
    let mut i = leaf;
    arities
        .iter()
        .enumerate()
        .map(|(lvl, &a)| {
            let a = a as u64;
            let (p, pos) = (i / a, i % a);
            let sibs = (0..a)
                .filter(|&j| j != pos)
                .map(|j| node(lvl, p * a + j))
                .collect();
            i = p;
            (sibs, pos as usize)
        })
        .collect()
}

/// The arities of a tree of `Tree`'s shape over `nodes` leaves, leaf level first.
pub(crate) fn arities<Tree: MerkleTreeTrait>(nodes: usize) -> Vec<usize> {
    let (a, v, w) = (
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    );
    let base_trees = v.max(1) * w.max(1);
    let mut per_base = nodes / base_trees;
    let mut out = Vec::new();
    while per_base > 1 {
        out.push(a);
        per_base /= a;
    }
    if v > 0 {
        out.push(v);
    }
    if w > 0 {
        out.push(w);
    }
    out
}

/// The label of `node` on `layer` from its 37 parent labels, as sealing computes it.
fn label(
    replica_id: &PoseidonDomain,
    layer: u32,
    node: u64,
    parents: &[PoseidonDomain],
) -> PoseidonDomain {
    let mut buf = [0u8; 64];
    buf[..32].copy_from_slice(AsRef::<[u8]>::as_ref(replica_id));
    buf[32..36].copy_from_slice(&layer.to_be_bytes());
    buf[36..44].copy_from_slice(&node.to_be_bytes());
    let mut h = Sha256::new();
    h.update(buf);
    for p in parents {
        h.update(AsRef::<[u8]>::as_ref(p));
    }
    let mut out: [u8; 32] = h.finalize().into();
    out[31] &= 0x3f;
    PoseidonDomain::from(out)
}

type Proofs<Tree> = Vec<Vec<stacked::Proof<Tree, Sha256Hasher>>>;

/// What the proofs of one synthetic sector are made of.
struct Sector<Tree: 'static + MerkleTreeTrait> {
    proofs: Proofs<Tree>,
    comm_d: [u8; 32],
    comm_r: [u8; 32],
    replica_id: PoseidonDomain,
}

/// Each challenged node's parents (base, then expansion), and how many are base parents.
struct Parents {
    of: HashMap<usize, Vec<u32>>,
    base: usize,
}

impl Parents {
    /// The 37 parent labels that label node `c` on `layer` (its base parents on the layer
    /// below, its expansion parents two below, repeated to 37).
    fn thirty_seven(
        &self,
        labels: &HashMap<usize, Vec<PoseidonDomain>>,
        c: usize,
        layer: usize,
    ) -> Vec<PoseidonDomain> {
        let p = &self.of[&c];
        let mut v: Vec<PoseidonDomain> = p[..self.base]
            .iter()
            .map(|&q| labels[&(q as usize)][layer - 1])
            .collect();
        if layer > 1 {
            v.extend(
                p[self.base..]
                    .iter()
                    .map(|&q| labels[&(q as usize)][layer - 2]),
            );
        }
        let n = v.len();
        (0..37).map(|i| v[i % n]).collect::<Vec<_>>()
    }
}

/// Labels on every layer: pseudo-random for parents that are not challenged, computed for
/// challenges (from seed `s` and `replica_id`).
fn challenge_labels(
    parents: &Parents,
    challenged: &BTreeSet<usize>,
    layers: usize,
    s: u64,
    replica_id: &PoseidonDomain,
) -> HashMap<usize, Vec<PoseidonDomain>> {
    let mut labels: HashMap<usize, Vec<PoseidonDomain>> = HashMap::new();
    for p in parents.of.values().flatten() {
        let p = *p as usize;
        if !challenged.contains(&p) {
            labels.entry(p).or_insert_with(|| {
                (1..=layers as u64)
                    .map(|l| PoseidonDomain::from(prf(s, "label", l, p as u64)))
                    .collect()
            });
        }
    }
    for &c in challenged {
        labels.insert(c, Vec::with_capacity(layers));
    }
    for layer in 1..=layers {
        for &c in challenged {
            let l = label(
                replica_id,
                layer as u32,
                c as u64,
                &parents.thirty_seven(&labels, c, layer),
            );
            labels.get_mut(&c).expect("a challenge").push(l);
        }
    }
    labels
}

fn build<Tree>(spec: &SyntheticSpec, ticket: [u8; 32], seed: [u8; 32]) -> Result<Sector<Tree>>
where
    Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>,
{
    let shape = porep::shape_for(spec.proof, spec.shape)?;
    let pp = porep::public_params::<Tree>(spec.proof, &shape)?;
    let graph = &pp.graph;
    let nodes = graph.size();
    let layers = pp.num_layers;
    let s = spec.seed;

    let data = DataTree::new(s, nodes);
    let comm_d = data.root();
    let porep_id = spec.proof.as_v1_config().porep_id;
    let replica_id = generate_replica_id::<PoseidonHasher, _>(
        &spec.prover_id,
        spec.sector_id,
        &ticket,
        comm_d,
        &porep_id,
    );
    let inputs = stacked::PublicInputs::<PoseidonDomain, Sha256Domain> {
        replica_id,
        seed: Some(seed),
        tau: None,
        k: None,
    };
    let challenges: Vec<Vec<usize>> = (0..shape.partitions)
        .map(|k| inputs.challenges(&pp.challenges, nodes, Some(k)))
        .collect();
    let base = graph.base_graph().degree();
    let exp = graph.expansion_degree();
    let mut parents_of: HashMap<usize, Vec<u32>> = HashMap::new();
    for &c in challenges.iter().flatten() {
        let mut p = vec![0u32; base + exp];
        graph
            .parents(c, &mut p)
            .map_err(|e| Error::internal(format!("parents of node {c}: {e}")))?;
        parents_of.insert(c, p);
    }
    let challenged: BTreeSet<usize> = parents_of.keys().copied().collect();

    let parents = Parents {
        of: parents_of,
        base,
    };
    let labels = challenge_labels(&parents, &challenged, layers, s, &replica_id);

    // Trees C (column hashes of every opened node) and R-last (replica nodes of challenges).
    let shape_c = arities::<Tree>(nodes);
    let column_hash = |node: usize| -> Result<PoseidonDomain> {
        let col = Column::<PoseidonHasher>::new(node as u32, labels[&node].clone())
            .map_err(|e| Error::internal(format!("column {node}: {e}")))?;
        Ok(PoseidonDomain::from(col.hash()))
    };
    let mut c_leaves = BTreeMap::new();
    for &n in labels.keys() {
        c_leaves.insert(n as u64, column_hash(n)?);
    }
    let tree_c = SparseTree::new(s, "tree-c", shape_c.clone(), c_leaves);
    let replica = |c: usize| -> PoseidonDomain {
        let key: blstrs::Scalar = labels[&c][layers - 1].into();
        let d: blstrs::Scalar = Sha256Domain::into(data.leaf(c));
        PoseidonDomain::from(key + d)
    };
    let r_leaves = challenged.iter().map(|&c| (c as u64, replica(c))).collect();
    let tree_r = SparseTree::new(s, "tree-r", shape_c, r_leaves);
    let (comm_c, comm_r_last) = (tree_c.root(), tree_r.root());
    let comm_r = <PoseidonFunction as HashFunction<PoseidonDomain>>::hash2(&comm_c, &comm_r_last);

    type TreeProof<Tree> = MerkleProof<
        <Tree as MerkleTreeTrait>::Hasher,
        <Tree as MerkleTreeTrait>::Arity,
        <Tree as MerkleTreeTrait>::SubTreeArity,
        <Tree as MerkleTreeTrait>::TopTreeArity,
    >;
    let column_proof = |n: usize| {
        let proof =
            TreeProof::<Tree>::from_parts(tree_c.node(0, n as u64), comm_c, tree_c.path(n as u64));
        ColumnProof::new(n as u32, labels[&n].clone(), proof)
    };
    let proofs = challenges
        .iter()
        .map(|cs| {
            cs.iter()
                .map(|&c| {
                    let p = &parents.of[&c];
                    stacked::Proof::<Tree, Sha256Hasher> {
                        comm_d_proofs: MerkleProof::from_parts(data.leaf(c), comm_d, data.path(c)),
                        comm_r_last_proof: TreeProof::<Tree>::from_parts(
                            tree_r.node(0, c as u64),
                            comm_r_last,
                            tree_r.path(c as u64),
                        ),
                        replica_column_proofs: ReplicaColumnProof {
                            c_x: column_proof(c),
                            drg_parents: p[..base]
                                .iter()
                                .map(|&q| column_proof(q as usize))
                                .collect(),
                            exp_parents: p[base..]
                                .iter()
                                .map(|&q| column_proof(q as usize))
                                .collect(),
                        },
                        labeling_proofs: (1..=layers)
                            .map(|l| {
                                LabelingProof::new(
                                    l as u32,
                                    c as u64,
                                    parents.thirty_seven(&labels, c, l),
                                )
                            })
                            .collect(),
                        encoding_proof: EncodingProof::new(
                            layers as u32,
                            c as u64,
                            parents.thirty_seven(&labels, c, layers),
                        ),
                    }
                })
                .collect()
        })
        .collect();
    let bytes = |d: &dyn AsRef<[u8]>| -> [u8; 32] { d.as_ref().try_into().expect("32 bytes") };
    Ok(Sector {
        proofs,
        comm_d: bytes(&comm_d),
        comm_r: bytes(&comm_r),
        replica_id,
    })
}

/// The ticket and the interactive seed of a synthetic sector (never all zero).
pub fn ticket_and_seed(seed: u64) -> ([u8; 32], [u8; 32]) {
    (prf(seed, "ticket", 0, 0), prf(seed, "seed", 0, 0))
}

/// A synthetic C1 output for `spec` (see the module documentation).
pub fn synthetic_c1(spec: &SyntheticSpec) -> Result<SealCommitPhase1Output> {
    let (ticket, seed) = ticket_and_seed(spec.seed);
    let shape = porep::shape_for(spec.proof, spec.shape)?;
    macro_rules! with {
        ($tree:ty, $variant:ident) => {{
            let s = build::<$tree>(spec, ticket, seed)?;
            (
                ApiVanilla::$variant(s.proofs),
                s.comm_d,
                s.comm_r,
                s.replica_id,
            )
        }};
    }
    let (vanilla_proofs, comm_d, comm_r, replica_id) = porep::with_tree_shape(
        shape.sector_size,
        || Ok(with!(SectorShape2KiB, StackedDrg2KiBV1)),
        || Ok(with!(SectorShape8MiB, StackedDrg8MiBV1)),
        || Ok(with!(SectorShape512MiB, StackedDrg512MiBV1)),
        || Ok(with!(SectorShape32GiB, StackedDrg32GiBV1)),
        || Ok(with!(SectorShape64GiB, StackedDrg64GiBV1)),
    )?
    .map_err(|e: Error| e)?;
    Ok(SealCommitPhase1Output {
        registered_proof: spec.proof,
        vanilla_proofs,
        comm_r,
        comm_d,
        replica_id,
        seed,
        ticket,
    })
}

/// The C1 output as JSON bytes (what `seal_commit_phase1` hands to C2 through the FFI).
pub fn synthetic_c1_json(spec: &SyntheticSpec) -> Result<Vec<u8>> {
    serde_json::to_vec(&synthetic_c1(spec)?)
        .map_err(|e| Error::internal(format!("serializing the C1 output: {e}")))
}
