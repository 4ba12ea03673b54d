//! SnapDeals (filecoin-proofs' empty sector update, `ProveReplicaUpdate2`) as a proof kind of
//! the engine: the partition proofs a node makes from its updated sector
//! (`GenerateUpdateVanillaProofs`: one bincode `PartitionProof` per partition) and the sector's
//! three commitments in, one Groth16 proof per partition out, byte for byte what
//! filecoin-proofs' `generate_empty_sector_update_proof_with_vanilla` returns and what its
//! `verify_empty_sector_update_proof` accepts.
//!
//! A job is validated as filecoin-proofs' own vanilla verifier validates it (every partition's
//! proof checked against the commitments before any synthesis: a changed input is refused with
//! INVALID_INPUT), then its partitions go through the engine like PoRep's, in PoRep's class.

use std::sync::{atomic::AtomicBool, Arc};

use blstrs::Scalar as Fr;
use filecoin_proofs::{
    MerkleTreeTrait, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB,
    SectorShape8MiB, SectorUpdateConfig, TreeRHasher,
};
use storage_proofs_core::{
    compound_proof::{self, CompoundProof},
    parameter_cache::CacheableParameters,
    proof::ProofScheme,
};
use storage_proofs_update::{
    constants::{TreeDDomain, TreeRDomain},
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams, SetupParams,
};

pub use filecoin_proofs_api::RegisteredUpdateProof as UpdateProof;

use crate::{
    error::{catch, Error, Result, Status},
    params::CircuitSize,
    pce::{Recording, Witness},
    porep::{
        record_circuit, reference_of, synthesize_circuit, with_tree_shape, witness_of, Class,
        PreparedJob, SealCircuits, Shape,
    },
    prover::ProvingAssignment,
};

/// One SnapDeals job: what filecoin-ffi's `GenerateUpdateProofWithVanilla` takes.
#[derive(Clone, Debug)]
pub struct SnapRequest {
    pub proof: UpdateProof,
    /// The sector key's comm_r (before the update).
    pub comm_r_old: [u8; 32],
    /// The updated replica's comm_r.
    pub comm_r_new: [u8; 32],
    /// The new data's comm_d.
    pub comm_d_new: [u8; 32],
    /// One per partition, in order: the bincode bytes of storage-proofs-update's
    /// `PartitionProof`, as `GenerateUpdateVanillaProofs` returns them.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// Higher runs first (within PoRep's class).
    pub priority: i32,
}

/// `RegisteredUpdateProof` from its number in go-state-types' `abi.RegisteredUpdateProof` (as
/// filecoin-ffi maps it): 0-4, 2KiB to 64GiB.
pub fn update_proof_from_abi(n: i64) -> Result<UpdateProof> {
    use UpdateProof::*;
    const ALL: [UpdateProof; 5] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ];
    usize::try_from(n)
        .ok()
        .and_then(|k| ALL.get(k).copied())
        .ok_or_else(|| Error::invalid_argument(format!("{n} is not a registered update proof")))
}

/// The update proof type of sectors of `sector_size` bytes.
pub fn update_proof_for_size(sector_size: u64) -> Result<UpdateProof> {
    (0..5)
        .map(update_proof_from_abi)
        .find(|p| {
            p.as_ref()
                .is_ok_and(|p| u64::from(p.sector_size()) == sector_size)
        })
        .unwrap_or_else(|| {
            Err(Error::unsupported(format!(
                "no update proof for sectors of {sector_size} bytes"
            )))
        })
}

/// The update configuration of a proof type (partitions, h, sector size).
fn config_of(proof: UpdateProof) -> SectorUpdateConfig {
    SectorUpdateConfig::from_porep_config(&proof.as_v1_config())
}

/// Partitions a job of `proof` proves (16 at 32 and 64 GiB).
pub fn partitions_of(proof: UpdateProof) -> usize {
    usize::from(config_of(proof).update_partitions)
}

/// Validates a SnapDeals request (every partition's vanilla proof parsed and checked against
/// the commitments, as filecoin-proofs' vanilla verifier checks them) and makes its circuits.
/// INVALID_INPUT for vanilla proofs that do not parse, do not verify or are not one per
/// partition; INVALID_ARGUMENT for a commitment that is not a field element.
pub fn prepare(req: &SnapRequest) -> Result<PreparedJob> {
    let circuits = with_tree_shape(
        u64::from(req.proof.sector_size()),
        || prepare_tree::<SectorShape2KiB>(req),
        || prepare_tree::<SectorShape8MiB>(req),
        || prepare_tree::<SectorShape512MiB>(req),
        || prepare_tree::<SectorShape32GiB>(req),
        || prepare_tree::<SectorShape64GiB>(req),
    )??;
    Ok(PreparedJob {
        circuits,
        kind: format!("{:?}", req.proof),
        class: Class::Throughput,
        aggregate: None,
    })
}

/// The parameter cache id of an update proof type's circuit (one per sector size).
pub fn params_id_for(proof: UpdateProof) -> Result<String> {
    let bytes = u64::from(proof.sector_size());
    with_tree_shape(
        bytes,
        || cache_id::<SectorShape2KiB>(&PublicParams::from_sector_size(bytes)),
        || cache_id::<SectorShape8MiB>(&PublicParams::from_sector_size(bytes)),
        || cache_id::<SectorShape512MiB>(&PublicParams::from_sector_size(bytes)),
        || cache_id::<SectorShape32GiB>(&PublicParams::from_sector_size(bytes)),
        || cache_id::<SectorShape64GiB>(&PublicParams::from_sector_size(bytes)),
    )
}

fn cache_id<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(pp: &PublicParams) -> String {
    <EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        PublicParams,
    >>::cache_identifier(pp)
}

/// The R1CS of an update proof type's circuit, recorded from its blank instance. Gives up soon
/// after `abort` turns true.
pub fn record_blank(proof: UpdateProof, abort: Option<Arc<AtomicBool>>) -> Result<Recording> {
    let bytes = u64::from(proof.sector_size());
    with_tree_shape(
        bytes,
        || record_tree::<SectorShape2KiB>(bytes, abort.clone()),
        || record_tree::<SectorShape8MiB>(bytes, abort.clone()),
        || record_tree::<SectorShape512MiB>(bytes, abort.clone()),
        || record_tree::<SectorShape32GiB>(bytes, abort.clone()),
        || record_tree::<SectorShape64GiB>(bytes, abort.clone()),
    )?
}

fn record_tree<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    bytes: u64,
    abort: Option<Arc<AtomicBool>>,
) -> Result<Recording> {
    let pp = PublicParams::from_sector_size(bytes);
    let blank = EmptySectorUpdateCompound::<Tree>::blank_circuit(&pp);
    record_circuit(blank, &cache_id::<Tree>(&pp), abort)
}

/// One SnapDeals job's circuits.
struct SectorUpdate<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    shape: Shape,
    params_id: String,
    pub_params: PublicParams,
    pub_inputs: PublicInputs,
    /// Per partition, its vanilla proof.
    proofs: Vec<PartitionProof<Tree>>,
}

/// A commitment as the field element it must be (INVALID_ARGUMENT where it is not).
fn commitment<D: filecoin_hashers::Domain>(bytes: &[u8; 32], what: &str) -> Result<D> {
    use ff::PrimeField;
    if Option::<Fr>::from(Fr::from_repr(*bytes)).is_none() {
        return Err(Error::invalid_argument(format!(
            "{what} is not a field element (its top bits are set)"
        )));
    }
    D::try_from_bytes(bytes)
        .map_err(|e| Error::invalid_argument(format!("{what} is not a field element: {e}")))
}

/// The job's circuits from its request: the vanilla proofs parsed and checked as
/// filecoin-proofs' vanilla verifier checks them.
fn prepare_tree<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    req: &SnapRequest,
) -> Result<Arc<dyn SealCircuits>> {
    let config = config_of(req.proof);
    let partitions = usize::from(config.update_partitions);
    if req.vanilla_proofs.len() != partitions {
        return Err(Error::invalid_input(format!(
            "{:?} proves {partitions} partition(s): {partitions} vanilla proofs are needed, {} \
             were given",
            req.proof,
            req.vanilla_proofs.len()
        )));
    }
    let proofs: Vec<PartitionProof<Tree>> = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(k, b)| {
            bincode::deserialize(b).map_err(|e| {
                Error::invalid_input(format!(
                    "vanilla proof {k} is not a {:?} partition proof: {e}",
                    req.proof
                ))
            })
        })
        .collect::<Result<_>>()?;
    let pub_inputs = PublicInputs {
        k: partitions,
        comm_r_old: commitment::<TreeRDomain>(&req.comm_r_old, "comm_r_old")?,
        comm_d_new: commitment::<TreeDDomain>(&req.comm_d_new, "comm_d_new")?,
        comm_r_new: commitment::<TreeRDomain>(&req.comm_r_new, "comm_r_new")?,
        h: config.h,
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params = EmptySectorUpdateCompound::<Tree>::setup(&setup)
        .map_err(|e| Error::from_anyhow(Status::Internal, "update public parameters", e))?
        .vanilla_params;
    check_vanilla::<Tree>(req, &pub_params, &pub_inputs, &proofs)?;
    Ok(Arc::new(SectorUpdate::<Tree> {
        shape: Shape {
            sector_size: u64::from(config.sector_size),
            partitions,
            challenges_per_partition: pub_params.challenge_count,
            layers: 0,
        },
        params_id: cache_id::<Tree>(&pub_params),
        pub_params,
        pub_inputs,
        proofs,
    }))
}

/// Every partition's vanilla proof against the commitments, by filecoin-proofs' own verifier
/// (a malformed proof that makes it panic is INVALID_INPUT too).
fn check_vanilla<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    req: &SnapRequest,
    pub_params: &PublicParams,
    pub_inputs: &PublicInputs,
    proofs: &[PartitionProof<Tree>],
) -> Result<()> {
    catch("checking the vanilla proofs", Status::InvalidInput, || {
        for (k, proof) in proofs.iter().enumerate() {
            let inputs = EmptySectorUpdate::<Tree>::with_partition(pub_inputs.clone(), Some(k));
            let ok = EmptySectorUpdate::<Tree>::verify(pub_params, &inputs, proof)
                .map_err(|e| Error::from_anyhow(Status::InvalidInput, "the vanilla proofs", e))?;
            if !ok {
                return Err(Error::invalid_input(format!(
                    "the vanilla proof of partition {k} does not verify against the given \
                     commitments ({:?})",
                    req.proof
                )));
            }
        }
        Ok(())
    })
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SectorUpdate<Tree> {
    fn circuit(&self, k: usize) -> Result<EmptySectorUpdateCircuit<Tree>> {
        let proof = self
            .proofs
            .get(k)
            .ok_or_else(|| Error::invalid_argument(format!("no partition {k}")))?;
        catch("circuit construction", Status::InvalidInput, || {
            EmptySectorUpdateCompound::<Tree>::circuit(
                &self.pub_inputs,
                Default::default(),
                proof,
                &self.pub_params,
                Some(k),
            )
            .map_err(|e| Error::from_anyhow(Status::InvalidInput, "building the circuit", e))
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SealCircuits for SectorUpdate<Tree> {
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
        let blank = EmptySectorUpdateCompound::<Tree>::blank_circuit(&self.pub_params);
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

    /// No native generator follows the update circuit yet: its witnesses come from witness
    /// synthesis (the trait's default answers UNSUPPORTED, and the engine falls back).
    fn witness_others_room(&self) -> f64 {
        SNAP_OTHERS_ROOM
    }

    fn witness_shape(&self) -> crate::params::WitnessShape {
        crate::params::WitnessShape {
            others_per_1024: SNAP_OTHERS_PER_1024,
            recording_bytes_per_row: 68,
        }
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>> {
        catch("public input generation", Status::Internal, || {
            EmptySectorUpdateCompound::<Tree>::generate_public_inputs(
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

/// The room an update witness's list of values neither 0 nor 1 keeps, as a share of its aux
/// values (the memory budget's floor for the circuit; see `SNAP_OTHERS_PER_1024`).
const SNAP_OTHERS_ROOM: f64 = 2.0;

/// Of every 1024 aux values of an update witness, how many are neither 0 nor 1 (the GPU's plan
/// counts them): most, as in PoSt's (Poseidon states of the paths, the encoded field
/// elements), until measured at full size.
const SNAP_OTHERS_PER_1024: u32 = 1016;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_proof_numbers_are_filecoins() {
        use UpdateProof::*;
        assert_eq!(update_proof_from_abi(0).unwrap(), StackedDrg2KiBV1);
        assert_eq!(update_proof_from_abi(3).unwrap(), StackedDrg32GiBV1);
        assert_eq!(update_proof_from_abi(4).unwrap(), StackedDrg64GiBV1);
        for bad in [-1, 5, i64::MAX] {
            let e = update_proof_from_abi(bad).unwrap_err();
            assert_eq!(e.status, Status::InvalidArgument);
        }
        for n in 0..5 {
            let p = update_proof_from_abi(n).unwrap();
            let want = [2 << 10, 8 << 20, 512 << 20, 32u64 << 30, 64u64 << 30][n as usize];
            assert_eq!(u64::from(p.sector_size()), want, "{p:?}");
        }
        // filecoin-proofs' partition counts: 16 at 32 and 64 GiB.
        assert_eq!(partitions_of(StackedDrg32GiBV1), 16);
        assert_eq!(partitions_of(StackedDrg64GiBV1), 16);
        assert!(params_id_for(StackedDrg32GiBV1)
            .unwrap()
            .starts_with("empty-sector-update-"));
    }

    #[test]
    fn bad_requests_are_clear_errors() {
        let req = |proofs: Vec<Vec<u8>>| SnapRequest {
            proof: UpdateProof::StackedDrg2KiBV1,
            comm_r_old: [0; 32],
            comm_r_new: [0; 32],
            comm_d_new: [0; 32],
            vanilla_proofs: proofs,
            priority: 0,
        };
        let n = partitions_of(UpdateProof::StackedDrg2KiBV1);
        let status = |r: SnapRequest| prepare(&r).err().map(|e| (e.status, e.message));
        let (s, m) = status(req(vec![])).unwrap();
        assert_eq!(s, Status::InvalidInput, "{m}");
        assert!(m.contains("vanilla proofs are needed"), "{m}");
        let (s, m) = status(req(vec![vec![1, 2, 3]; n])).unwrap();
        assert_eq!(s, Status::InvalidInput, "{m}");
        assert!(m.contains("is not a"), "{m}");
    }
}
