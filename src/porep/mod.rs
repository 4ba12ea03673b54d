//! PoRep C2 circuits: shape of a proof type, validation of a C1 output, per-partition circuits,
//! public inputs and the Groth16 parameter file each circuit needs.

pub mod aggregate;
pub mod input;
pub(crate) mod native;
pub mod verify;

use std::sync::{atomic::AtomicBool, Arc};

use bellperson::{
    util_cs::{metric_cs::MetricCS, witness_cs::WitnessCS, Comparable},
    Circuit, ConstraintSystem,
};
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, DefaultPieceDomain, DefaultPieceHasher, MerkleTreeTrait, SectorShape2KiB,
    SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB, VanillaSealProof,
};
use filecoin_proofs_api::{
    seal::{SealCommitPhase1Output, VanillaSealProof as ApiVanillaProofs},
    RegisteredSealProof,
};
use storage_proofs_core::{
    api_version::{ApiFeature, ApiVersion},
    compound_proof::CompoundProof,
    parameter_cache::CacheableParameters,
    proof::ProofScheme,
};
use storage_proofs_porep::stacked::{
    self, generate_replica_id, Challenges, StackedCircuit, StackedCompound, StackedDrg,
};

use crate::{
    error::{catch, Error, Result, Status},
    params::CircuitSize,
    pce::{Recording, RecordingCS, Witness, WitnessTarget},
    prover::ProvingAssignment,
};

pub use filecoin_proofs_api::RegisteredSealProof as SealProof;
pub use input::{parse_c1, parse_prover_id_hex, prover_id_from_miner, ParsedC1};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The geometry of one PoRep C2 circuit family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub sector_size: u64,
    pub partitions: usize,
    pub challenges_per_partition: usize,
    pub layers: usize,
}

/// A test-only geometry for a test sector size: more partitions (one challenge each) and/or
/// more layers than the real proof type, to exercise multi-partition paths with small sectors.
/// Never accepted for production sector sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FixtureShape {
    /// Partition count; 0 keeps the proof type's.
    pub partitions: usize,
    /// Layer count; 0 keeps the proof type's.
    pub layers: usize,
}

impl FixtureShape {
    pub fn is_real(&self) -> bool {
        self.partitions == 0 && self.layers == 0
    }
}

fn is_test_size(sector_size: u64) -> bool {
    matches!(sector_size, s if s == 2 * KIB || s == 8 * MIB || s == 512 * MIB)
}

/// filecoin-proofs 19.1's minimum challenge count: interactive, or non-interactive (FIP-0090:
/// ceil(12.8 × the interactive count)).
fn min_challenges(sector_size: u64, non_interactive: bool) -> usize {
    match (is_test_size(sector_size), non_interactive) {
        (true, false) => 2,
        (false, false) => 176,
        (true, true) => 26,
        (false, true) => 2253,
    }
}

fn real_layers(sector_size: u64) -> usize {
    if is_test_size(sector_size) {
        2
    } else {
        11
    }
}

/// filecoin-proofs 19.1's partition counts (`POREP_PARTITIONS` as shipped, and
/// `get_porep_non_interactive_partitions`: 13 and 126, chosen so that a non-interactive
/// partition has the interactive circuit, 2 and 18 challenges). Read from here, not from that
/// run-time table, so that fixture edits of the table never change a real proof type.
fn real_partitions(sector_size: u64, non_interactive: bool) -> usize {
    match (is_test_size(sector_size), non_interactive) {
        (true, false) => 1,
        (false, false) => 10,
        (true, true) => 13,
        (false, true) => 126,
    }
}

fn sector_size_of(proof: RegisteredSealProof) -> u64 {
    u64::from(proof.sector_size())
}

/// Whether a proof type is non-interactive PoRep (FIP-0090, registered proofs 15 to 19): its C2
/// is its partitions' proofs aggregated by SnarkPack v2 ([`aggregate`]).
pub fn is_non_interactive(proof: RegisteredSealProof) -> bool {
    use RegisteredSealProof::*;
    matches!(
        proof,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep
            | StackedDrg8MiBV1_2_Feat_NonInteractivePoRep
            | StackedDrg512MiBV1_2_Feat_NonInteractivePoRep
            | StackedDrg32GiBV1_2_Feat_NonInteractivePoRep
            | StackedDrg64GiBV1_2_Feat_NonInteractivePoRep
    )
}

/// The shape a proof type has, or the fixture shape asked for.
pub fn shape_for(proof: RegisteredSealProof, fixture: FixtureShape) -> Result<Shape> {
    let ni = is_non_interactive(proof);
    if proof.major_version() != 1 {
        return Err(Error::unsupported(format!(
            "{proof:?}: unsupported proof version"
        )));
    }
    let sector_size = sector_size_of(proof);
    let real_partitions = real_partitions(sector_size, ni);
    if !fixture.is_real() && (!is_test_size(sector_size) || ni) {
        return Err(Error::unsupported(format!(
            "fixture shapes exist only for interactive proof types of test sector sizes (2KiB, \
             8MiB, 512MiB), not {proof:?}"
        )));
    }
    let partitions = if fixture.partitions == 0 {
        real_partitions
    } else {
        fixture.partitions
    };
    let layers = if fixture.layers == 0 {
        real_layers(sector_size)
    } else {
        fixture.layers
    };
    if !fixture.is_real() && (!(1..=64).contains(&partitions) || !(1..=15).contains(&layers)) {
        return Err(Error::invalid_argument(format!(
            "fixture shape out of range: {partitions} partitions, {layers} layers"
        )));
    }
    let challenges_per_partition = min_challenges(sector_size, ni).div_ceil(partitions);
    Ok(Shape {
        sector_size,
        partitions,
        challenges_per_partition,
        layers,
    })
}

fn setup_params(proof: RegisteredSealProof, shape: &Shape) -> stacked::SetupParams {
    let cfg = proof.as_v1_config();
    let challenges = if cfg.api_features.contains(&ApiFeature::SyntheticPoRep) {
        Challenges::new_synthetic(shape.challenges_per_partition)
    } else if cfg.api_features.contains(&ApiFeature::NonInteractivePoRep) {
        Challenges::new_non_interactive(shape.challenges_per_partition)
    } else {
        Challenges::new_interactive(shape.challenges_per_partition)
    };
    stacked::SetupParams {
        nodes: (shape.sector_size / 32) as usize,
        degree: filecoin_proofs::DRG_DEGREE,
        expansion_degree: filecoin_proofs::EXP_DEGREE,
        porep_id: cfg.porep_id,
        challenges,
        num_layers: shape.layers,
        api_version: cfg.api_version,
        api_features: cfg.api_features,
    }
}

/// One C2 job's circuits, independent of the Merkle tree type behind them.
pub trait SealCircuits: Send + Sync {
    fn shape(&self) -> Shape;
    /// The parameter cache id (without version prefix and extension).
    fn params_id(&self) -> &str;
    /// Synthesizes partition `k`; gives up soon after `abort` turns true.
    fn synthesize(
        &self,
        k: usize,
        size: Option<CircuitSize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<ProvingAssignment>;
    /// The circuit's R1CS, recorded from its blank instance (no witness needed); gives up
    /// soon after `abort` turns true.
    fn record(&self, abort: Option<Arc<AtomicBool>>) -> Result<Recording>;
    /// Partition `k`'s witness only (no constraint evaluated), for the pre-compiled path.
    fn synthesize_witness(
        &self,
        k: usize,
        aux_hint: Option<usize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<Witness>;
    /// Partition `k`'s witness from the native generator (`crate::pce::native`): the one
    /// [`Self::synthesize_witness`] gives, at a fraction of its CPU. UNSUPPORTED where the
    /// generator does not follow this circuit (fall back to witness synthesis); INTERNAL where
    /// its result would not satisfy the circuit; CANCELLED soon after `abort` turns true.
    fn native_witness(
        &self,
        k: usize,
        aux_hint: Option<usize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<Witness> {
        let p = self.native_partition(k)?;
        catch("native witness", Status::Internal, || {
            crate::pce::native::stacked::witness(&p, aux_hint, abort.as_deref())
        })
    }
    /// Partition `k`'s values as the native generator takes them (PoRep's circuit only:
    /// UNSUPPORTED for the others, which take witness synthesis).
    fn native_partition(&self, k: usize) -> Result<crate::pce::native::stacked::Partition> {
        Err(Error::unsupported(format!(
            "no native witness generator for partition {k} of circuit {}",
            self.params_id()
        )))
    }
    /// The room its compact witnesses keep for values that are neither 0 nor 1, as a share
    /// of the aux values: the memory budget's estimate for the circuit's first partitions and
    /// its floor for the later ones (budgeted by what its witnesses kept where that is more).
    fn witness_others_room(&self) -> f64 {
        crate::params::WITNESS_OTHERS_ROOM
    }
    /// What a GPU's plan must know of its witnesses beyond the circuit's size (the default:
    /// PoRep's, few values neither 0 nor 1, a recording of ~45 bytes a row).
    fn witness_shape(&self) -> crate::params::WitnessShape {
        crate::params::WitnessShape::default()
    }
    /// Public inputs of partition `k`, derived from the job's prover id and sector id.
    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>>;
    /// Reference assignment of partition `k` from bellperson's own `MetricCS` (constraints) and
    /// `WitnessCS` (witness), for equivalence tests.
    fn reference_assignment(&self, k: usize) -> Result<ProvingAssignment>;
}

/// Partition `k`'s full assignment from its `circuit` (every kind's `SealCircuits::synthesize`).
pub(crate) fn synthesize_circuit<C: Circuit<Fr>>(
    circuit: C,
    k: usize,
    size: Option<CircuitSize>,
    abort: Option<Arc<AtomicBool>>,
) -> Result<ProvingAssignment> {
    catch("synthesis", Status::Proving, || {
        ProvingAssignment::synthesize_abortable(circuit, size, abort)
            .map_err(|e| Error::proving(format!("synthesis of partition {k} failed: {e}")))
    })
}

/// The R1CS of circuit `id` recorded from its `blank` instance (`SealCircuits::record`).
pub(crate) fn record_circuit<C: Circuit<Fr>>(
    blank: C,
    id: &str,
    abort: Option<Arc<AtomicBool>>,
) -> Result<Recording> {
    catch("recording", Status::Internal, || {
        RecordingCS::record(blank, id, abort)
            .map_err(|e| Error::internal(format!("recording circuit {id}: {e}")))
    })
}

/// Partition `k`'s witness only (`SealCircuits::synthesize_witness`).
pub(crate) fn witness_of<C: Circuit<Fr> + Send>(
    circuit: C,
    k: usize,
    aux_hint: Option<usize>,
    abort: Option<Arc<AtomicBool>>,
) -> Result<Witness> {
    catch("witness synthesis", Status::Proving, || {
        WitnessTarget::synthesize(circuit, aux_hint, abort)
            .map_err(|e| Error::proving(format!("witness synthesis of partition {k} failed: {e}")))
    })
}

/// The reference assignment of a circuit (`circuit()` makes it, twice) from bellperson's own
/// `MetricCS` and `WitnessCS` (`SealCircuits::reference_assignment`).
pub(crate) fn reference_of<C: Circuit<Fr>>(
    circuit: impl Fn() -> Result<C>,
) -> Result<ProvingAssignment> {
    let mut metric = MetricCS::<Fr>::new();
    circuit()?
        .synthesize(&mut metric)
        .map_err(|e| Error::proving(format!("MetricCS synthesis: {e}")))?;
    let mut witness = WitnessCS::<Fr>::new();
    circuit()?
        .synthesize(&mut witness)
        .map_err(|e| Error::proving(format!("WitnessCS synthesis: {e}")))?;
    Ok(crate::prover::reference::assignment_from(
        metric.constraints(),
        witness.scalar_inputs(),
        witness.scalar_aux(),
    ))
}

type PieceDomain = DefaultPieceDomain;

struct StackedSeal<Tree: 'static + MerkleTreeTrait> {
    shape: Shape,
    params_id: String,
    pub_params: stacked::PublicParams<Tree>,
    pub_inputs: stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, PieceDomain>,
    proofs: Vec<Vec<VanillaSealProof<Tree>>>,
}

impl<Tree: 'static + MerkleTreeTrait> StackedSeal<Tree> {
    /// Partition `k`'s vanilla proofs (one per challenge).
    fn proofs_of(&self, k: usize) -> Result<&Vec<VanillaSealProof<Tree>>> {
        self.proofs
            .get(k)
            .ok_or_else(|| Error::invalid_argument(format!("no partition {k}")))
    }

    fn circuit(&self, k: usize) -> Result<StackedCircuit<Tree, DefaultPieceHasher>> {
        let proof = self.proofs_of(k)?;
        catch("circuit construction", Status::InvalidInput, || {
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::circuit(
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

impl<Tree: 'static + MerkleTreeTrait> SealCircuits for StackedSeal<Tree> {
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
        let blank =
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(
                &self.pub_params,
            );
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

    fn native_partition(&self, k: usize) -> Result<crate::pce::native::stacked::Partition> {
        let proofs = self.proofs_of(k)?;
        let tau = self
            .pub_inputs
            .tau
            .as_ref()
            .ok_or_else(|| Error::internal("public inputs without comm_d and comm_r"))?;
        catch("reading the vanilla proofs", Status::Internal, || {
            native::partition(
                self.pub_inputs.replica_id.into(),
                tau.comm_d.into(),
                tau.comm_r.into(),
                proofs,
            )
        })
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>> {
        catch("public input generation", Status::Internal, || {
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::generate_public_inputs(
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

/// What a prepared job needs: validated circuits for every partition, and the name of its
/// proof type (a PoRep `RegisteredSealProof`, a PoSt `RegisteredPoStProof`: the timeline's
/// JOB_QUEUED detail).
pub struct PreparedJob {
    pub circuits: Arc<dyn SealCircuits>,
    pub kind: String,
    pub class: Class,
    /// Non-interactive PoRep: the partition proofs are aggregated (SnarkPack v2) into the
    /// job's proof once they are all proved and checked. None: the job's proof is its
    /// partitions' proofs.
    pub aggregate: Option<aggregate::NiSeal>,
}

/// A proof kind's class: at every queue (synthesis, the provers) a partition of a higher
/// class goes before any of a lower one, whatever their priorities; priority orders within a
/// class. WinningPoSt must be done in seconds (a block reward), WindowPoSt within its
/// deadline (faults and collateral), PoRep and SnapDeals are throughput.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    #[default]
    Throughput = 0,
    WindowPost = 1,
    WinningPost = 2,
}

fn check_vanilla_shape<T>(
    proofs: &[Vec<T>],
    shape: &Shape,
    layers_of: impl Fn(&T) -> usize,
) -> Result<()> {
    if proofs.len() != shape.partitions {
        return Err(Error::invalid_input(format!(
            "C1 output has {} partitions of vanilla proofs, the proof type needs {}",
            proofs.len(),
            shape.partitions
        )));
    }
    for (k, p) in proofs.iter().enumerate() {
        if p.len() != shape.challenges_per_partition {
            return Err(Error::invalid_input(format!(
                "partition {k} has {} challenge proofs, the proof type needs {}",
                p.len(),
                shape.challenges_per_partition
            )));
        }
        for (i, c) in p.iter().enumerate() {
            if layers_of(c) != shape.layers {
                return Err(Error::invalid_input(format!(
                    "partition {k} challenge {i} has {} labeling proofs, the proof type needs {} layers",
                    layers_of(c),
                    shape.layers
                )));
            }
        }
    }
    Ok(())
}

fn prepare_tree<Tree: 'static + MerkleTreeTrait>(
    c1: &SealCommitPhase1Output,
    proofs: Vec<Vec<VanillaSealProof<Tree>>>,
    shape: Shape,
    prover_id: Option<[u8; 32]>,
    sector_id: u64,
) -> Result<Arc<dyn SealCircuits>> {
    check_vanilla_shape(&proofs, &shape, |p| p.labeling_proofs.len())?;
    let sp = setup_params(c1.registered_proof, &shape);
    let porep_id = sp.porep_id;
    let pub_params = catch("public parameter setup", Status::Internal, || {
        StackedDrg::<Tree, DefaultPieceHasher>::setup(&sp)
            .map_err(|e| Error::from_anyhow(Status::Internal, "public parameter setup", e))
    })?;
    let comm_r = as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(&c1.comm_r, "comm_r")
        .map_err(|e| Error::from_anyhow(Status::InvalidInput, "comm_r", e))?;
    let comm_d = PieceDomain::try_from_bytes(&c1.comm_d)
        .map_err(|e| Error::from_anyhow(Status::InvalidInput, "comm_d", e))?;
    // The replica id the verifier will derive; it must be the one the vanilla proofs were made
    // for. Without a prover id (circuit proofs, as filecoin-proofs makes them) the C1 output's
    // own is taken.
    let replica_id = match prover_id {
        Some(prover_id) => {
            let derived = generate_replica_id::<Tree::Hasher, _>(
                &prover_id, sector_id, &c1.ticket, comm_d, &porep_id,
            );
            let (theirs, ours): (Fr, Fr) = (c1.replica_id.into(), derived.into());
            if theirs != ours {
                return Err(Error::invalid_input(format!(
                    "prover id / sector id (sector {sector_id}) do not match the C1 output: its \
                     replica id was made for another miner, sector, ticket or proof type"
                )));
            }
            derived
        }
        None => <Tree::Hasher as Hasher>::Domain::try_from_bytes(&c1.replica_id.into_bytes())
            .map_err(|e| Error::from_anyhow(Status::InvalidInput, "replica_id", e))?,
    };
    let pub_inputs = stacked::PublicInputs {
        replica_id,
        seed: Some(c1.seed),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
    };
    // Vanilla proofs are checked before any proving work: a corrupted C1 fails here, in ms.
    let ok = catch("vanilla proof verification", Status::InvalidInput, || {
        StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(
            &pub_params,
            &pub_inputs,
            &proofs,
        )
        .map_err(|e| Error::from_anyhow(Status::InvalidInput, "vanilla proof verification", e))
    })?;
    if !ok {
        return Err(Error::invalid_input(
            "the C1 output's vanilla proofs do not verify (corrupted or inconsistent C1 output)",
        ));
    }
    let params_id = <StackedCompound<Tree, DefaultPieceHasher> as CacheableParameters<
        StackedCircuit<Tree, DefaultPieceHasher>,
        stacked::PublicParams<Tree>,
    >>::cache_identifier(&pub_params);
    Ok(Arc::new(StackedSeal {
        shape,
        params_id,
        pub_params,
        pub_inputs,
        proofs,
    }))
}

/// Validates a parsed C1 output for `prover_id` / `sector_id` and builds its circuits.
pub fn prepare(
    c1: SealCommitPhase1Output,
    prover_id: [u8; 32],
    sector_id: u64,
    fixture: FixtureShape,
) -> Result<PreparedJob> {
    prepare_for(c1, Some(prover_id), sector_id, fixture)
}

/// [`prepare`], with the prover id optional: without it the C1 output's replica id is taken as
/// it is (filecoin-proofs' `seal_commit_phase2_circuit_proofs` takes no prover id), and a
/// non-interactive job is not aggregated (its aggregate's check needs the prover id).
pub fn prepare_for(
    c1: SealCommitPhase1Output,
    prover_id: Option<[u8; 32]>,
    sector_id: u64,
    fixture: FixtureShape,
) -> Result<PreparedJob> {
    let proof_type = c1.registered_proof;
    let shape = shape_for(proof_type, fixture)?;
    if c1.comm_d == [0; 32] {
        return Err(Error::invalid_input("Invalid all zero commitment (comm_d)"));
    }
    if c1.comm_r == [0; 32] {
        return Err(Error::invalid_input("Invalid all zero commitment (comm_r)"));
    }
    if c1.seed == [0; 32] {
        return Err(Error::invalid_input(
            "Invalid porep challenge seed (all zero)",
        ));
    }
    let size = shape.sector_size;
    let mismatch = |name: &str| {
        Error::invalid_input(format!(
            "vanilla proofs are for {name} but the proof type is {proof_type:?}"
        ))
    };
    let vp = c1.vanilla_proofs.clone();
    let aggregate = prover_id
        .filter(|_| is_non_interactive(proof_type))
        .map(|p| aggregate::NiSeal::of(&c1, p, sector_id));
    let circuits = match vp {
        ApiVanillaProofs::StackedDrg2KiBV1(p) if size == 2 * KIB => {
            prepare_tree::<SectorShape2KiB>(&c1, p, shape, prover_id, sector_id)
        }
        ApiVanillaProofs::StackedDrg8MiBV1(p) if size == 8 * MIB => {
            prepare_tree::<SectorShape8MiB>(&c1, p, shape, prover_id, sector_id)
        }
        ApiVanillaProofs::StackedDrg512MiBV1(p) if size == 512 * MIB => {
            prepare_tree::<SectorShape512MiB>(&c1, p, shape, prover_id, sector_id)
        }
        ApiVanillaProofs::StackedDrg32GiBV1(p) if size == 32 * GIB => {
            prepare_tree::<SectorShape32GiB>(&c1, p, shape, prover_id, sector_id)
        }
        ApiVanillaProofs::StackedDrg64GiBV1(p) if size == 64 * GIB => {
            prepare_tree::<SectorShape64GiB>(&c1, p, shape, prover_id, sector_id)
        }
        ApiVanillaProofs::StackedDrg2KiBV1(_) => Err(mismatch("2KiB")),
        ApiVanillaProofs::StackedDrg8MiBV1(_) => Err(mismatch("8MiB")),
        ApiVanillaProofs::StackedDrg512MiBV1(_) => Err(mismatch("512MiB")),
        ApiVanillaProofs::StackedDrg32GiBV1(_) => Err(mismatch("32GiB")),
        ApiVanillaProofs::StackedDrg64GiBV1(_) => Err(mismatch("64GiB")),
    }?;
    Ok(PreparedJob {
        circuits,
        kind: format!("{proof_type:?}"),
        class: Class::Throughput,
        aggregate,
    })
}

/// The api version of a proof type (for display).
pub fn api_version(proof: RegisteredSealProof) -> ApiVersion {
    proof.version()
}

/// Calls the closure for the tree shape of `sector_size`.
pub fn with_tree_shape<R>(
    sector_size: u64,
    f2k: impl FnOnce() -> R,
    f8m: impl FnOnce() -> R,
    f512m: impl FnOnce() -> R,
    f32g: impl FnOnce() -> R,
    f64g: impl FnOnce() -> R,
) -> Result<R> {
    Ok(match sector_size {
        s if s == 2 * KIB => f2k(),
        s if s == 8 * MIB => f8m(),
        s if s == 512 * MIB => f512m(),
        s if s == 32 * GIB => f32g(),
        s if s == 64 * GIB => f64g(),
        s => return Err(Error::unsupported(format!("unsupported sector size {s}"))),
    })
}

/// filecoin-proofs' public parameters of a proof type (or fixture shape) for tree shape `Tree`.
pub fn public_params<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    shape: &Shape,
) -> Result<stacked::PublicParams<Tree>> {
    StackedDrg::<Tree, DefaultPieceHasher>::setup(&setup_params(proof, shape))
        .map_err(|e| Error::from_anyhow(Status::Internal, "public parameter setup", e))
}

fn params_id_tree<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    shape: &Shape,
) -> Result<String> {
    let pp = public_params::<Tree>(proof, shape)?;
    Ok(
        <StackedCompound<Tree, DefaultPieceHasher> as CacheableParameters<
            StackedCircuit<Tree, DefaultPieceHasher>,
            stacked::PublicParams<Tree>,
        >>::cache_identifier(&pp),
    )
}

/// The parameter cache id of a proof type (or fixture shape of it).
pub fn params_id_for(proof: RegisteredSealProof, fixture: FixtureShape) -> Result<String> {
    let shape = shape_for(proof, fixture)?;
    with_tree_shape(
        shape.sector_size,
        || params_id_tree::<SectorShape2KiB>(proof, &shape),
        || params_id_tree::<SectorShape8MiB>(proof, &shape),
        || params_id_tree::<SectorShape512MiB>(proof, &shape),
        || params_id_tree::<SectorShape32GiB>(proof, &shape),
        || params_id_tree::<SectorShape64GiB>(proof, &shape),
    )?
}

fn record_tree<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    shape: &Shape,
    abort: Option<Arc<AtomicBool>>,
) -> Result<Recording> {
    let pp = public_params::<Tree>(proof, shape)?;
    let id = <StackedCompound<Tree, DefaultPieceHasher> as CacheableParameters<
        StackedCircuit<Tree, DefaultPieceHasher>,
        stacked::PublicParams<Tree>,
    >>::cache_identifier(&pp);
    let blank =
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&pp);
    record_circuit(blank, &id, abort)
}

/// The R1CS of a proof type's (or fixture shape's) circuit, recorded from its blank instance:
/// neither a C1 output nor parameters are needed. Gives up soon after `abort` turns true.
pub fn record_blank(
    proof: RegisteredSealProof,
    fixture: FixtureShape,
    abort: Option<Arc<AtomicBool>>,
) -> Result<Recording> {
    let shape = shape_for(proof, fixture)?;
    with_tree_shape(
        shape.sector_size,
        || record_tree::<SectorShape2KiB>(proof, &shape, abort.clone()),
        || record_tree::<SectorShape8MiB>(proof, &shape, abort.clone()),
        || record_tree::<SectorShape512MiB>(proof, &shape, abort.clone()),
        || record_tree::<SectorShape32GiB>(proof, &shape, abort.clone()),
        || record_tree::<SectorShape64GiB>(proof, &shape, abort.clone()),
    )?
}

/// Whether proofs of this sector size go on chain (32 GiB and 64 GiB), as opposed to the test
/// sizes (2 KiB, 8 MiB, 512 MiB).
pub fn is_production_size(sector_size: u64) -> bool {
    !is_test_size(sector_size)
}
