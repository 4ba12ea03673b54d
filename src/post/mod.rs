//! WindowPoSt and WinningPoSt (filecoin-proofs' fallback PoSt) as a proof kind of the engine:
//! the vanilla proofs a node makes from its sectors (`GenerateSingleVanillaProof`'s bincode
//! `FallbackPoStSectorProof`s) in, one Groth16 proof per partition out, byte for byte what
//! filecoin-proofs' `generate_{window,winning}_post_with_vanilla` and
//! `generate_single_window_post_with_vanilla` return and what its verifiers accept.
//!
//! A PoSt job is validated here as filecoin-proofs validates it (the vanilla proofs are checked
//! against the randomness, prover id and sectors before any synthesis: a changed input is
//! refused with INVALID_INPUT), then its partitions go through the engine like PoRep's:
//! synthesis (with the circuit's recording), the provers, the self-check.

use std::{
    collections::HashSet,
    sync::{atomic::AtomicBool, Arc},
};

use blstrs::Scalar as Fr;
use filecoin_hashers::Hasher;
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs,
    FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig, PoStType, SectorShape2KiB,
    SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
};
use storage_proofs_core::{
    compound_proof::{self, CompoundProof},
    merkle::MerkleProofTrait,
    parameter_cache::CacheableParameters,
    proof::ProofScheme,
};
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

pub use filecoin_proofs_api::RegisteredPoStProof as PostProof;

use crate::{
    error::{catch, Error, Result, Status},
    params::CircuitSize,
    pce::native::post as native,
    pce::{Recording, Witness},
    porep::{
        record_circuit, reference_of, synthesize_circuit, with_tree_shape, witness_of, Class,
        PreparedJob, SealCircuits, Shape,
    },
    prover::ProvingAssignment,
};

/// One PoSt job: what filecoin-ffi's `Generate{Winning,Window}PoStWithVanilla` and
/// `GenerateSingleWindowPoStWithVanilla` take.
#[derive(Clone, Debug)]
pub struct PostRequest {
    pub proof: PostProof,
    pub prover_id: [u8; 32],
    /// The chain's randomness, as a field element (filecoin-ffi clears its top two bits).
    pub randomness: [u8; 32],
    /// One per sector: the bincode bytes of filecoin-proofs' `FallbackPoStSectorProof`, as
    /// `GenerateSingleVanillaProof` returns them.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// WindowPoSt: prove only this partition, from its own sectors' vanilla proofs
    /// (`GenerateSingleWindowPoStWithVanilla`); None: every partition.
    pub partition: Option<usize>,
    /// Higher runs first.
    pub priority: i32,
}

/// `RegisteredPoStProof` from its number in go-state-types' `abi.RegisteredPoStProof` (as
/// filecoin-ffi maps it): 0-4 WinningPoSt V1, 5-9 WindowPoSt V1, 10-14 WindowPoSt V1_1
/// (filecoin-proofs' V1_2), 2KiB to 64GiB in each.
pub fn post_proof_from_abi(n: i64) -> Result<PostProof> {
    use PostProof::*;
    const ALL: [PostProof; 15] = [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ];
    usize::try_from(n)
        .ok()
        .and_then(|k| ALL.get(k).copied())
        .ok_or_else(|| Error::invalid_argument(format!("{n} is not a registered PoSt proof")))
}

/// Whether `proof` is a WinningPoSt type.
pub fn is_winning(proof: PostProof) -> bool {
    proof.typ() == PoStType::Winning
}

/// Validates a PoSt request (every vanilla proof parsed and checked against the randomness,
/// the prover id and its sector, as filecoin-proofs checks them) and makes its circuits.
/// INVALID_INPUT for vanilla proofs that do not parse, do not verify, repeat a sector or are
/// more than the proof type proves; INVALID_ARGUMENT for a partition index of a WinningPoSt
/// or a randomness or prover id that is not a field element.
pub fn prepare(req: &PostRequest) -> Result<PreparedJob> {
    if req.vanilla_proofs.is_empty() {
        return Err(Error::invalid_input("no vanilla proofs"));
    }
    if req.partition.is_some() && is_winning(req.proof) {
        return Err(Error::invalid_argument(
            "a partition index is for WindowPoSt only",
        ));
    }
    let size = u64::from(req.proof.sector_size());
    let circuits = with_tree_shape(
        size,
        || prepare_tree::<SectorShape2KiB>(req),
        || prepare_tree::<SectorShape8MiB>(req),
        || prepare_tree::<SectorShape512MiB>(req),
        || prepare_tree::<SectorShape32GiB>(req),
        || prepare_tree::<SectorShape64GiB>(req),
    )??;
    Ok(PreparedJob {
        circuits,
        kind: format!("{:?}", req.proof),
        class: if is_winning(req.proof) {
            Class::WinningPost
        } else {
            Class::WindowPost
        },
        aggregate: None,
    })
}

/// The parameter cache id of a PoSt proof type's circuit (one per sector size and kind).
pub fn params_id_for(proof: PostProof) -> Result<String> {
    let config = proof.as_v1_config();
    with_tree_shape(
        u64::from(proof.sector_size()),
        || params_id_tree::<SectorShape2KiB>(&config),
        || params_id_tree::<SectorShape8MiB>(&config),
        || params_id_tree::<SectorShape512MiB>(&config),
        || params_id_tree::<SectorShape32GiB>(&config),
        || params_id_tree::<SectorShape64GiB>(&config),
    )?
}

fn vanilla_params(config: &PoStConfig) -> Result<fallback::SetupParams> {
    Ok(match config.typ {
        PoStType::Window => filecoin_proofs::parameters::window_post_setup_params(config),
        PoStType::Winning => filecoin_proofs::parameters::winning_post_setup_params(config)
            .map_err(|e| Error::from_anyhow(Status::Internal, "WinningPoSt setup", e))?,
    })
}

/// The fallback PoSt's public parameters of a proof type's configuration.
fn public_params<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
) -> Result<fallback::PublicParams> {
    FallbackPoSt::<Tree>::setup(&vanilla_params(config)?)
        .map_err(|e| Error::from_anyhow(Status::Internal, "PoSt public parameters", e))
}

/// The parameter cache id of the circuit of public parameters `pp`.
fn cache_id<Tree: 'static + MerkleTreeTrait>(pp: &fallback::PublicParams) -> String {
    <FallbackPoStCompound<Tree> as CacheableParameters<
        FallbackPoStCircuit<Tree>,
        fallback::PublicParams,
    >>::cache_identifier(pp)
}

fn params_id_tree<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<String> {
    Ok(cache_id::<Tree>(&public_params::<Tree>(config)?))
}

/// The R1CS of a PoSt proof type's circuit, recorded from its blank instance (no vanilla
/// proofs or parameters needed). Gives up soon after `abort` turns true.
pub fn record_blank(proof: PostProof, abort: Option<Arc<AtomicBool>>) -> Result<Recording> {
    let config = proof.as_v1_config();
    with_tree_shape(
        u64::from(proof.sector_size()),
        || record_tree::<SectorShape2KiB>(&config, abort.clone()),
        || record_tree::<SectorShape8MiB>(&config, abort.clone()),
        || record_tree::<SectorShape512MiB>(&config, abort.clone()),
        || record_tree::<SectorShape32GiB>(&config, abort.clone()),
        || record_tree::<SectorShape64GiB>(&config, abort.clone()),
    )?
}

fn record_tree<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    abort: Option<Arc<AtomicBool>>,
) -> Result<Recording> {
    let pp = public_params::<Tree>(config)?;
    let id = cache_id::<Tree>(&pp);
    let blank = FallbackPoStCompound::<Tree>::blank_circuit(&pp);
    record_circuit(blank, &id, abort)
}

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// One PoSt job's circuits.
struct FallbackPost<Tree: 'static + MerkleTreeTrait> {
    shape: Shape,
    params_id: String,
    pub_params: fallback::PublicParams,
    pub_inputs: fallback::PublicInputs<Domain<Tree>>,
    /// Per partition of this job, its vanilla proof.
    proofs: Vec<fallback::Proof<Tree::Proof>>,
}

/// The job's circuits from its request: the vanilla proofs parsed and checked as
/// filecoin-proofs checks them, then split into partitions.
fn prepare_tree<Tree: 'static + MerkleTreeTrait>(
    req: &PostRequest,
) -> Result<Arc<dyn SealCircuits>> {
    let config = req.proof.as_v1_config();
    let sectors = parse_sectors::<Tree>(req)?;
    let randomness: Domain<Tree> = as_safe_commitment(&req.randomness, "randomness")
        .map_err(|e| Error::from_anyhow(Status::InvalidArgument, "randomness", e))?;
    let prover_id: Domain<Tree> = as_safe_commitment(&req.prover_id, "prover_id")
        .map_err(|e| Error::from_anyhow(Status::InvalidArgument, "prover id", e))?;
    let partitions = partition_count(req, &config, sectors.len())?;
    let setup = compound_proof::SetupParams {
        vanilla_params: vanilla_params(&config)?,
        partitions: (partitions > 1).then_some(partitions),
        priority: config.priority,
    };
    let pub_params = FallbackPoStCompound::<Tree>::setup(&setup)
        .map_err(|e| Error::from_anyhow(Status::Internal, "PoSt public parameters", e))?;
    let pub_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: sectors
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: req.partition,
    };
    let proofs = checked_partitions(
        req,
        &config,
        &pub_params.vanilla_params,
        &pub_inputs,
        partitions,
        &sectors,
    )?;
    // WinningPoSt's circuit takes its one sector's challenges as that many one-challenge
    // sectors: its public inputs are the sector repeated (as filecoin-proofs' verifier
    // builds them), not padded from one.
    let pub_inputs = if config.typ == PoStType::Winning {
        let n = pub_params.vanilla_params.sector_count;
        fallback::PublicInputs {
            sectors: vec![pub_inputs.sectors[0].clone(); n],
            ..pub_inputs
        }
    } else {
        pub_inputs
    };
    let params_id = cache_id::<Tree>(&pub_params.vanilla_params);
    Ok(Arc::new(FallbackPost::<Tree> {
        shape: Shape {
            sector_size: u64::from(req.proof.sector_size()),
            partitions: proofs.len(),
            challenges_per_partition: config.challenge_count * config.sector_count,
            layers: 0,
        },
        params_id,
        pub_params: pub_params.vanilla_params,
        pub_inputs,
        proofs,
    }))
}

/// The request's vanilla proofs, parsed (INVALID_INPUT where one does not parse or a sector
/// has two).
fn parse_sectors<Tree: 'static + MerkleTreeTrait>(
    req: &PostRequest,
) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
    let sectors: Vec<FallbackPoStSectorProof<Tree>> = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b).map_err(|e| {
                Error::invalid_input(format!(
                    "vanilla proof {i} is not a {:?} sector proof: {e}",
                    req.proof
                ))
            })
        })
        .collect::<Result<_>>()?;
    let mut seen = HashSet::new();
    for p in &sectors {
        if !seen.insert(u64::from(p.sector_id)) {
            return Err(Error::invalid_input(format!(
                "sector {} has two vanilla proofs",
                u64::from(p.sector_id)
            )));
        }
    }
    Ok(sectors)
}

/// Partitions the job proves for `n` sectors: WinningPoSt's one (of exactly its sectors), one
/// WindowPoSt partition asked for (at most a partition's sectors), or every one.
fn partition_count(req: &PostRequest, config: &PoStConfig, n: usize) -> Result<usize> {
    let per_partition = config.sector_count;
    Ok(match (&config.typ, req.partition) {
        (PoStType::Winning, _) => {
            if n != per_partition {
                return Err(Error::invalid_input(format!(
                    "{:?} proves {per_partition} sector(s), {n} vanilla proofs were given",
                    req.proof
                )));
            }
            1
        }
        (PoStType::Window, Some(_)) => {
            if n > per_partition {
                return Err(Error::invalid_input(format!(
                    "a {:?} partition holds {per_partition} sectors, {n} vanilla proofs were given",
                    req.proof
                )));
            }
            1
        }
        (PoStType::Window, None) => n.div_ceil(per_partition),
    })
}

/// Each partition's vanilla proof by filecoin-proofs' own split and check: both verify every
/// proof against the randomness and its sector (one partition asked for: as partition k of the
/// sectors given, as filecoin-proofs' verifier takes it). INVALID_INPUT where one fails.
fn checked_partitions<Tree: 'static + MerkleTreeTrait>(
    req: &PostRequest,
    config: &PoStConfig,
    vanilla: &fallback::PublicParams,
    pub_inputs: &fallback::PublicInputs<Domain<Tree>>,
    partitions: usize,
    sectors: &[FallbackPoStSectorProof<Tree>],
) -> Result<Vec<fallback::Proof<Tree::Proof>>> {
    let bad = |e| Error::from_anyhow(Status::InvalidInput, "the vanilla proofs", e);
    catch("checking the vanilla proofs", Status::InvalidInput, || {
        if req.partition.is_some() {
            single_partition_vanilla_proofs(config, vanilla, pub_inputs, sectors)
                .map(|p| vec![p])
                .map_err(bad)
        } else {
            partition_vanilla_proofs(config, vanilla, pub_inputs, partitions, sectors).map_err(bad)
        }
    })
}

impl<Tree: 'static + MerkleTreeTrait> FallbackPost<Tree> {
    /// Partition `k`'s vanilla proof.
    fn proof(&self, k: usize) -> Result<&fallback::Proof<Tree::Proof>> {
        self.proofs
            .get(k)
            .ok_or_else(|| Error::invalid_argument(format!("no partition {k}")))
    }

    fn circuit(&self, k: usize) -> Result<FallbackPoStCircuit<Tree>> {
        let proof = self.proof(k)?;
        catch("circuit construction", Status::InvalidInput, || {
            FallbackPoStCompound::<Tree>::circuit(
                &self.pub_inputs,
                Default::default(),
                proof,
                &self.pub_params,
                Some(k),
            )
            .map_err(|e| Error::from_anyhow(Status::InvalidInput, "building the circuit", e))
        })
    }

    /// Partition `k`'s sectors as the native generator takes them: the values
    /// `FallbackPoStCompound::circuit` puts in its circuit (the partition's last public sector
    /// repeated where it has fewer sectors than the circuit).
    fn native_sectors(&self, k: usize) -> Result<Vec<native::Sector>> {
        let proof = self.proof(k)?;
        let per = self.pub_params.sector_count;
        let public = self
            .pub_inputs
            .sectors
            .chunks(per)
            .nth(k)
            .ok_or_else(|| Error::internal(format!("no public sectors for partition {k}")))?;
        proof
            .sectors
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let comm_r = public
                    .get(i)
                    .or(public.last())
                    .expect("a chunk is not empty");
                Ok(native::Sector {
                    comm_r: comm_r.comm_r.into(),
                    comm_c: p.comm_c.into(),
                    comm_r_last: p.comm_r_last.into(),
                    leaves: p
                        .inclusion_proofs
                        .iter()
                        .map(|m| {
                            Ok(native::Leaf {
                                value: m.leaf().into(),
                                path: crate::porep::native::steps(m)?,
                            })
                        })
                        .collect::<Result<_>>()?,
                })
            })
            .collect()
    }
}

impl<Tree: 'static + MerkleTreeTrait> SealCircuits for FallbackPost<Tree> {
    fn shape(&self) -> Shape {
        self.shape
    }

    fn params_id(&self) -> &str {
        &self.params_id
    }

    fn synthesize(
        &self,
        k: usize,
        size: Option<CircuitSize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<ProvingAssignment> {
        synthesize_circuit(self.circuit(k)?, k, size, abort)
    }

    fn record(&self, abort: Option<Arc<AtomicBool>>) -> Result<Recording> {
        let blank = FallbackPoStCompound::<Tree>::blank_circuit(&self.pub_params);
        record_circuit(blank, &self.params_id, abort)
    }

    fn synthesize_witness(
        &self,
        k: usize,
        aux_hint: Option<usize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<Witness> {
        witness_of(self.circuit(k)?, k, aux_hint, abort)
    }

    /// The native generator (`pce::native::post`) over partition `k`'s sectors.
    fn native_witness(
        &self,
        k: usize,
        aux_hint: Option<usize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<Witness> {
        let sectors = self.native_sectors(k)?;
        catch("native witness", Status::Internal, || {
            native::witness(&sectors, aux_hint, abort.as_deref())
        })
    }

    /// Most of a PoSt witness is neither 0 nor 1 (Poseidon states of the Merkle paths). Twice
    /// the aux values: witness synthesis's lists grow by doubling, and the native generator
    /// holds its groups and the witness they are copied into at once. The engine never
    /// budgets a PoSt partition under it.
    fn witness_others_room(&self) -> f64 {
        2.0
    }

    /// 99.1% of a 32 GiB WindowPoSt partition's aux values are neither 0 nor 1, and its
    /// recording takes 67.2 bytes a constraint (both measured at 2349 sectors).
    fn witness_shape(&self) -> crate::params::WitnessShape {
        crate::params::WitnessShape {
            others_per_1024: 1016,
            recording_bytes_per_row: 68,
        }
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>> {
        catch("public input generation", Status::Internal, || {
            FallbackPoStCompound::<Tree>::generate_public_inputs(
                &self.pub_inputs,
                &self.pub_params,
                Some(k),
            )
            .map_err(|e| Error::from_anyhow(Status::InvalidInput, "public inputs", e))
        })
    }

    fn reference_assignment(&self, k: usize) -> Result<ProvingAssignment> {
        reference_of(|| self.circuit(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_proof_numbers_are_filecoins() {
        use PostProof::*;
        assert_eq!(post_proof_from_abi(0).unwrap(), StackedDrgWinning2KiBV1);
        assert_eq!(post_proof_from_abi(3).unwrap(), StackedDrgWinning32GiBV1);
        assert_eq!(post_proof_from_abi(8).unwrap(), StackedDrgWindow32GiBV1);
        assert_eq!(post_proof_from_abi(13).unwrap(), StackedDrgWindow32GiBV1_2);
        for bad in [-1, 15, i64::MAX] {
            assert_eq!(
                post_proof_from_abi(bad).unwrap_err().status,
                Status::InvalidArgument
            );
        }
        for n in 0..15 {
            let p = post_proof_from_abi(n).unwrap();
            let want = [2 << 10, 8 << 20, 512 << 20, 32u64 << 30, 64u64 << 30][n as usize % 5];
            assert_eq!(u64::from(p.sector_size()), want, "{p:?}");
            assert_eq!(is_winning(p), n < 5, "{p:?}");
        }
    }

    #[test]
    fn bad_requests_are_clear_errors() {
        let req = |proofs: Vec<Vec<u8>>, partition| PostRequest {
            proof: PostProof::StackedDrgWindow2KiBV1_2,
            prover_id: [0; 32],
            randomness: [0; 32],
            vanilla_proofs: proofs,
            partition,
            priority: 0,
        };
        let status = |r: PostRequest| prepare(&r).err().map(|e| e.status);
        assert_eq!(status(req(vec![], None)), Some(Status::InvalidInput));
        assert_eq!(
            status(req(vec![vec![1, 2, 3]], None)),
            Some(Status::InvalidInput)
        );
        let mut winning = req(vec![vec![0; 8]], Some(0));
        winning.proof = PostProof::StackedDrgWinning2KiBV1;
        assert_eq!(status(winning), Some(Status::InvalidArgument));
    }
}
