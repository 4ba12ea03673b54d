//! Shape-true synthetic PoSt inputs (`cuzk fixture --kind window-post|winning-post`): the
//! vanilla proofs a node would make for WindowPoSt or WinningPoSt over random sectors of any
//! size, with no sector data.
//!
//! Each sector's R-last tree is sparse, in the sector size's real shape (arity 8 base trees and
//! the sub and top levels of 32 GiB and 64 GiB sectors): a node with a challenged leaf under it
//! is the Poseidon hash of its children, every other node deterministic pseudo-random. comm_c
//! is random and comm_r = H(comm_c, comm_r_last), as sealing makes it. The challenged leaves
//! are derived by filecoin-proofs' own `generate_fallback_sector_challenges` (from the
//! randomness, the sector ids and their positions in the list), so the vanilla proofs pass
//! filecoin-proofs' vanilla verification, and fail it when the randomness, a sector id, a
//! comm_r or a path changes.
//!
//! On disk a fixture is a directory: `post.json` (proof type, prover id, randomness, each
//! sector's id and comm_r) and `vanilla.bin` (a u32 LE count, then per sector a u32 LE length
//! and the bincode bytes of `FallbackPoStSectorProof`, as `GenerateSingleVanillaProof` returns
//! them).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use filecoin_hashers::{
    poseidon::{PoseidonDomain, PoseidonFunction, PoseidonHasher},
    HashFunction,
};
use filecoin_proofs::{
    FallbackPoStSectorProof, MerkleTreeTrait, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB,
    SectorShape64GiB, SectorShape8MiB,
};
use filecoin_proofs_api::{post as fp, PublicReplicaInfo, SectorId};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
use storage_proofs_post::fallback;

use cuzk::{
    error::{Error, Result},
    porep,
    post::{self, PostProof, PostRequest},
};

use crate::synthetic::{arities, prf, SparseTree};

/// What a synthetic PoSt fixture is made for.
#[derive(Clone, Debug)]
pub struct PostFixtureSpec {
    pub proof: PostProof,
    pub prover_id: [u8; 32],
    /// Sectors to prove (WinningPoSt: exactly one; WindowPoSt: any number, a partition holds
    /// `sector_count` of the proof type).
    pub sectors: usize,
    /// The first sector's number; the others follow it.
    pub first_sector: u64,
    /// Seeds the randomness, comm_c, the leaves and every untouched tree node.
    pub seed: u64,
}

/// One sector of a fixture.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FixtureSector {
    pub id: u64,
    /// comm_r, hex.
    pub comm_r: String,
}

/// `post.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PostFixtureMeta {
    /// The proof type's name (filecoin-proofs-api's `RegisteredPoStProof`).
    pub proof_type: String,
    /// Its number in go-state-types' `abi.RegisteredPoStProof`.
    pub abi_proof_type: i64,
    pub prover_id: String,
    pub randomness: String,
    pub sectors: Vec<FixtureSector>,
    /// Partitions the sectors fill.
    pub partitions: usize,
    pub challenges_per_sector: usize,
}

/// A synthetic PoSt fixture in memory.
#[derive(Clone, Debug)]
pub struct PostFixture {
    pub proof: PostProof,
    pub prover_id: [u8; 32],
    pub randomness: [u8; 32],
    /// Per sector: id and comm_r.
    pub sectors: Vec<(u64, [u8; 32])>,
    /// Per sector, in the same order: the bincode `FallbackPoStSectorProof`.
    pub vanilla: Vec<Vec<u8>>,
}

/// go-state-types' number of a PoSt proof type.
pub fn abi_number(proof: PostProof) -> i64 {
    (0..15)
        .find(|&n| post::post_proof_from_abi(n).ok() == Some(proof))
        .expect("every PoSt proof type has a number")
}

/// The PoSt proof type of a kind (`window-post` or `winning-post`) and sector size: WindowPoSt
/// in its current version (V1_1, filecoin-proofs' V1_2), WinningPoSt V1.
pub fn proof_for(kind: &str, sector_size: u64) -> Result<PostProof> {
    let base = match kind {
        "winning-post" => 0,
        "window-post" => 10,
        other => {
            return Err(Error::invalid_argument(format!(
                "a PoSt kind is window-post or winning-post, not {other:?}"
            )))
        }
    };
    let i = [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30]
        .iter()
        .position(|&s| s == sector_size)
        .ok_or_else(|| {
            Error::invalid_argument(format!("no PoSt proof type for {sector_size}-byte sectors"))
        })?;
    post::post_proof_from_abi(base + i as i64)
}

/// Sectors a partition of `proof` holds (WinningPoSt: its one sector).
pub fn sectors_per_partition(proof: PostProof) -> usize {
    proof.as_v1_config().sector_count
}

/// The randomness of a fixture's seed: a field element, as filecoin-ffi passes it.
pub fn randomness_of(seed: u64) -> [u8; 32] {
    prf(seed, "post-randomness", 0, 0)
}

/// Makes the vanilla proofs of `spec` (see the module documentation).
pub fn post_fixture(spec: &PostFixtureSpec) -> Result<PostFixture> {
    let config = spec.proof.as_v1_config();
    if spec.sectors == 0 {
        return Err(Error::invalid_argument("a PoSt fixture needs a sector"));
    }
    if post::is_winning(spec.proof) && spec.sectors != config.sector_count {
        return Err(Error::invalid_argument(format!(
            "{:?} proves {} sector(s), not {}",
            spec.proof, config.sector_count, spec.sectors
        )));
    }
    let randomness = randomness_of(spec.seed);
    let ids: Vec<SectorId> = (0..spec.sectors as u64)
        .map(|i| SectorId::from(spec.first_sector + i))
        .collect();
    let challenges =
        fp::generate_fallback_sector_challenges(spec.proof, &randomness, &ids, spec.prover_id)
            .map_err(|e| Error::internal(format!("PoSt challenges: {e:#}")))?;
    let size = u64::from(spec.proof.sector_size());
    let made: Vec<([u8; 32], Vec<u8>)> = ids
        .par_iter()
        .map(|id| {
            let c = challenges
                .get(id)
                .ok_or_else(|| Error::internal(format!("no challenges for sector {id:?}")))?;
            let id = u64::from(*id);
            porep::with_tree_shape(
                size,
                || sector::<SectorShape2KiB>(spec.seed, id, size, c),
                || sector::<SectorShape8MiB>(spec.seed, id, size, c),
                || sector::<SectorShape512MiB>(spec.seed, id, size, c),
                || sector::<SectorShape32GiB>(spec.seed, id, size, c),
                || sector::<SectorShape64GiB>(spec.seed, id, size, c),
            )?
        })
        .collect::<Result<_>>()?;
    let (comm_rs, vanilla): (Vec<[u8; 32]>, Vec<Vec<u8>>) = made.into_iter().unzip();
    Ok(PostFixture {
        proof: spec.proof,
        prover_id: spec.prover_id,
        randomness,
        sectors: ids.iter().map(|&i| u64::from(i)).zip(comm_rs).collect(),
        vanilla,
    })
}

/// One sector's comm_r and the bincode bytes of its vanilla proof for `challenges`.
fn sector<Tree>(seed: u64, id: u64, size: u64, challenges: &[u64]) -> Result<([u8; 32], Vec<u8>)>
where
    Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>,
    Tree::Proof: MerkleProofTrait<Hasher = PoseidonHasher>,
{
    let nodes = (size / 32) as usize;
    // Every sector's untouched nodes differ: a seed of its own.
    let own = u64::from_le_bytes(prf(seed, "post-sector", id, 0)[..8].try_into().expect("8"));
    let leaves: BTreeMap<u64, PoseidonDomain> = challenges
        .iter()
        .map(|&c| (c, PoseidonDomain::from(prf(own, "post-leaf", c, 0))))
        .collect();
    let tree = SparseTree::new(own, "post-tree-r", arities::<Tree>(nodes), leaves);
    let comm_r_last = tree.root();
    let comm_c = PoseidonDomain::from(prf(own, "post-comm-c", 0, 0));
    let comm_r = <PoseidonFunction as HashFunction<PoseidonDomain>>::hash2(&comm_c, &comm_r_last);
    type P<Tree> = <Tree as MerkleTreeTrait>::Proof;
    let inclusion_proofs = challenges
        .iter()
        .map(|&c| {
            MerkleProof::<
                <P<Tree> as MerkleProofTrait>::Hasher,
                <P<Tree> as MerkleProofTrait>::Arity,
                <P<Tree> as MerkleProofTrait>::SubTreeArity,
                <P<Tree> as MerkleProofTrait>::TopTreeArity,
            >::from_parts(tree.node(0, c), comm_r_last, tree.path(c))
        })
        .collect();
    let proof = FallbackPoStSectorProof::<Tree> {
        sector_id: SectorId::from(id),
        comm_r,
        vanilla_proof: fallback::Proof {
            sectors: vec![fallback::SectorProof {
                inclusion_proofs,
                comm_c,
                comm_r_last,
            }],
        },
    };
    let bytes = bincode::serialize(&proof)
        .map_err(|e| Error::internal(format!("serializing a vanilla proof: {e}")))?;
    let mut r = [0u8; 32];
    r.copy_from_slice(comm_r.as_ref());
    Ok((r, bytes))
}

pub(crate) fn hex32(s: &str, what: &str) -> Result<[u8; 32]> {
    let v = hex::decode(s).map_err(|e| Error::invalid_input(format!("{what}: {e}")))?;
    v.try_into()
        .map_err(|_| Error::invalid_input(format!("{what} is not 32 bytes")))
}

impl PostFixture {
    /// The request that proves every sector of the fixture (WindowPoSt: every partition).
    pub fn request(&self, priority: i32) -> PostRequest {
        PostRequest {
            proof: self.proof,
            prover_id: self.prover_id,
            randomness: self.randomness,
            vanilla_proofs: self.vanilla.clone(),
            partition: None,
            priority,
        }
    }

    /// Partitions the sectors fill.
    pub fn partitions(&self) -> usize {
        self.sectors
            .len()
            .div_ceil(sectors_per_partition(self.proof))
    }

    /// Whether filecoin-proofs' `verify_winning_post` / `verify_window_post` accepts `proof`
    /// (every partition's proof, concatenated) for this fixture. Reads the verifying key from
    /// `FIL_PROOFS_PARAMETER_CACHE`.
    pub fn verify(&self, proof: &[u8]) -> Result<bool> {
        if proof.is_empty() || proof.len() % cuzk::PROOF_BYTES != 0 {
            return Ok(false);
        }
        let replicas: BTreeMap<SectorId, PublicReplicaInfo> = self
            .sectors
            .iter()
            .map(|&(id, comm_r)| {
                (
                    SectorId::from(id),
                    PublicReplicaInfo::new(self.proof, comm_r),
                )
            })
            .collect();
        let r = if post::is_winning(self.proof) {
            fp::verify_winning_post(&self.randomness, proof, &replicas, self.prover_id)
        } else {
            fp::verify_window_post(
                &self.randomness,
                &[(self.proof, proof)],
                &replicas,
                self.prover_id,
            )
        };
        r.map_err(|e| Error::params(format!("filecoin-proofs' PoSt verifier: {e:#}")))
    }

    /// Writes `post.json` and `vanilla.bin` into `dir` (made if missing).
    pub fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::internal(format!("cannot create {}: {e}", dir.display())))?;
        let config = self.proof.as_v1_config();
        let meta = PostFixtureMeta {
            proof_type: format!("{:?}", self.proof),
            abi_proof_type: abi_number(self.proof),
            prover_id: hex::encode(self.prover_id),
            randomness: hex::encode(self.randomness),
            sectors: self
                .sectors
                .iter()
                .map(|&(id, r)| FixtureSector {
                    id,
                    comm_r: hex::encode(r),
                })
                .collect(),
            partitions: self.partitions(),
            challenges_per_sector: config.challenge_count,
        };
        let json = serde_json::to_vec_pretty(&meta).expect("serializable");
        write(&dir.join("post.json"), &json)?;
        let bin = vanilla_bin(&self.vanilla);
        write(&dir.join("vanilla.bin"), &bin)
    }

    /// Reads a fixture that [`PostFixture::save`] wrote.
    pub fn load(dir: &Path) -> Result<PostFixture> {
        let meta: PostFixtureMeta = serde_json::from_slice(&read(&dir.join("post.json"))?)
            .map_err(|e| Error::invalid_input(format!("{}/post.json: {e}", dir.display())))?;
        let proof = post::post_proof_from_abi(meta.abi_proof_type)?;
        let (vanilla, _) = vanilla_list(&read(&dir.join("vanilla.bin"))?, dir)?;
        if vanilla.len() != meta.sectors.len() {
            return Err(Error::invalid_input(format!(
                "{}: {} sectors in post.json, {} vanilla proofs",
                dir.display(),
                meta.sectors.len(),
                vanilla.len()
            )));
        }
        Ok(PostFixture {
            proof,
            prover_id: hex32(&meta.prover_id, "prover_id")?,
            randomness: hex32(&meta.randomness, "randomness")?,
            sectors: meta
                .sectors
                .iter()
                .map(|s| Ok((s.id, hex32(&s.comm_r, "comm_r")?)))
                .collect::<Result<_>>()?,
            vanilla,
        })
    }
}

pub(crate) fn write(path: &PathBuf, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes)
        .map_err(|e| Error::internal(format!("cannot write {}: {e}", path.display())))
}

pub(crate) fn read(path: &PathBuf) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| Error::invalid_input(format!("cannot read {}: {e}", path.display())))
}

/// A fixture's `vanilla.bin`: a u32 LE count, then each entry's u32 LE length and bytes.
pub(crate) fn vanilla_bin(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut bin = Vec::new();
    bin.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for v in entries {
        bin.extend_from_slice(&(v.len() as u32).to_le_bytes());
        bin.extend_from_slice(v);
    }
    bin
}

/// The entries of a `vanilla.bin` read from `dir`, and the offset where they end
/// (INVALID_INPUT where it is truncated).
pub(crate) fn vanilla_list(bin: &[u8], dir: &Path) -> Result<(Vec<Vec<u8>>, usize)> {
    let truncated = || Error::invalid_input(format!("{}/vanilla.bin is truncated", dir.display()));
    let mut at = 0usize;
    let u32_at = |at: &mut usize| -> Result<usize> {
        let b = bin.get(*at..*at + 4).ok_or_else(truncated)?;
        *at += 4;
        Ok(u32::from_le_bytes(b.try_into().expect("4")) as usize)
    };
    let n = u32_at(&mut at)?;
    let mut vanilla = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let len = u32_at(&mut at)?;
        vanilla.push(bin.get(at..at + len).ok_or_else(truncated)?.to_vec());
        at += len;
    }
    Ok((vanilla, at))
}
