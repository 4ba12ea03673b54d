//! Test fixtures through filecoin-proofs' public API: seal a small sector and write its C1
//! output; run filecoin-proofs' own C2 and `verify_seal` (the baseline and the judge).
//!
//! Fixture shapes (more partitions or layers than a test proof type has) are made by editing
//! filecoin-proofs' run-time tables `POREP_PARTITIONS` / `LAYERS` in *this process*. Only the
//! CLI's `setup`/`verify`/baseline paths and tests call [`apply_fixture_tables`]; the engine never
//! reads those tables for its own circuits.

use std::{
    io::{Cursor, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
    time::Instant,
};

use filecoin_proofs_api::{
    seal::{self, SealCommitPhase1Output},
    PieceInfo, RegisteredSealProof, SectorId, UnpaddedBytesAmount,
};
use rand::{RngCore, SeedableRng};

use super::{paramgen, progress::Progress};
use cuzk::{
    error::{Error, Result, Status},
    params::{params_path, vk_path},
    pce::Recording,
    porep::{self, FixtureShape},
};

/// Everything needed to (re)make one fixture.
#[derive(Clone, Debug)]
pub struct FixtureSpec {
    pub proof: RegisteredSealProof,
    pub shape: FixtureShape,
    pub sector_id: u64,
    pub miner_id: u64,
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
    /// Seeds the sector's random data.
    pub data_seed: u64,
}

impl FixtureSpec {
    pub fn new(proof: RegisteredSealProof, shape: FixtureShape) -> Self {
        FixtureSpec {
            proof,
            shape,
            sector_id: 1,
            miner_id: 1000,
            ticket: [6; 32],
            seed: [5; 32],
            data_seed: 42,
        }
    }

    pub fn prover_id(&self) -> [u8; 32] {
        porep::prover_id_from_miner(self.miner_id)
    }

    /// A short name for file names: `2KiB`, `2KiB-p10`, `2KiB-p10-l11`, `2KiB-ni`
    /// (non-interactive PoRep).
    pub fn name(&self) -> String {
        let size = u64::from(self.proof.sector_size());
        let mut n = human_size(size);
        if porep::is_non_interactive(self.proof) {
            n.push_str("-ni");
        }
        if self.shape.partitions != 0 {
            n.push_str(&format!("-p{}", self.shape.partitions));
        }
        if self.shape.layers != 0 {
            n.push_str(&format!("-l{}", self.shape.layers));
        }
        n
    }
}

/// `2KiB`, `8MiB`, `32GiB`.
pub fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}MiB", b >> 20),
        b if b % 1024 == 0 => format!("{}KiB", b >> 10),
        b => format!("{b}B"),
    }
}

/// Parses `2KiB` / `8MiB` / `512MiB` / `32GiB` / `64GiB` (or a byte count).
pub fn parse_sector_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let (num, mul) = if let Some(n) = t.strip_suffix("KiB") {
        (n, 1u64 << 10)
    } else if let Some(n) = t.strip_suffix("MiB") {
        (n, 1 << 20)
    } else if let Some(n) = t.strip_suffix("GiB") {
        (n, 1 << 30)
    } else {
        (t, 1)
    };
    num.trim().parse::<u64>().map(|n| n * mul).map_err(|_| {
        Error::invalid_argument(format!(
            "bad sector size {s:?} (use 2KiB, 8MiB, 512MiB, 32GiB, 64GiB)"
        ))
    })
}

/// The V1_1 proof type of a sector size.
pub fn v1_1_proof(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    Ok(match sector_size {
        2048 => StackedDrg2KiBV1_1,
        s if s == 8 << 20 => StackedDrg8MiBV1_1,
        s if s == 512 << 20 => StackedDrg512MiBV1_1,
        s if s == 32 << 30 => StackedDrg32GiBV1_1,
        s if s == 64 << 30 => StackedDrg64GiBV1_1,
        s => return Err(Error::unsupported(format!("unsupported sector size {s}"))),
    })
}

/// Makes filecoin-proofs in this process treat `proof`'s sector size with the fixture's
/// partition and layer counts (no-op for the real shape). Call before any other proofs call.
pub fn apply_fixture_tables(proof: RegisteredSealProof, shape: FixtureShape) -> Result<()> {
    let size = u64::from(proof.sector_size());
    let s = porep::shape_for(proof, shape)?;
    if shape.partitions != 0 {
        let p = u8::try_from(s.partitions)
            .map_err(|_| Error::invalid_argument("too many partitions"))?;
        filecoin_proofs::POREP_PARTITIONS
            .write()
            .map_err(|_| Error::internal("POREP_PARTITIONS poisoned"))?
            .insert(size, p);
    }
    if shape.layers != 0 {
        filecoin_proofs::LAYERS
            .write()
            .map_err(|_| Error::internal("LAYERS poisoned"))?
            .insert(size, s.layers);
    }
    Ok(())
}

fn anyhow_err(what: &str) -> impl Fn(anyhow::Error) -> Error + '_ {
    move |e| Error::from_anyhow(Status::Internal, what, e)
}

/// Seals a sector of random data (PC1, PC2, C1) in `work_dir` and returns the C1 output JSON.
/// Needs [`apply_fixture_tables`] first for fixture shapes.
pub fn seal_c1(spec: &FixtureSpec, work_dir: &Path) -> Result<Vec<u8>> {
    let progress = Progress::ticker(&format!("sealing the {} fixture", spec.name()), None);
    progress.phase("step 1/4: add piece");
    let io = |e: std::io::Error| Error::internal(format!("fixture I/O: {e}"));
    let sector_size = u64::from(spec.proof.sector_size());
    std::fs::create_dir_all(work_dir).map_err(io)?;
    let cache = work_dir.join("cache");
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache).map_err(io)?;
    let staged = work_dir.join("staged");
    let sealed = work_dir.join("sealed");

    let unpadded = UnpaddedBytesAmount(sector_size / 128 * 127);
    let mut data = vec![0u8; unpadded.0 as usize];
    rand_xorshift::XorShiftRng::seed_from_u64(spec.data_seed).fill_bytes(&mut data);
    let mut staged_file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)
        .map_err(io)?;
    let (piece, _) = seal::add_piece(
        spec.proof,
        Cursor::new(&data),
        &mut staged_file,
        unpadded,
        &[],
    )
    .map_err(anyhow_err("add_piece"))?;
    staged_file.flush().map_err(io)?;
    staged_file.seek(SeekFrom::Start(0)).map_err(io)?;
    drop(staged_file);
    std::fs::File::create(&sealed).map_err(io)?;
    let pieces: Vec<PieceInfo> = vec![piece];
    let prover_id = spec.prover_id();
    let sector = SectorId::from(spec.sector_id);
    progress.phase("step 2/4: pre-commit phase 1 (labelling)");
    let pc1 = seal::seal_pre_commit_phase1(
        spec.proof,
        &cache,
        &staged,
        &sealed,
        prover_id,
        sector,
        spec.ticket,
        &pieces,
    )
    .map_err(anyhow_err("seal_pre_commit_phase1"))?;
    progress.phase("step 3/4: pre-commit phase 2 (trees)");
    let pc2 = seal::seal_pre_commit_phase2(pc1, &cache, &sealed)
        .map_err(anyhow_err("seal_pre_commit_phase2"))?;
    progress.phase("step 4/4: commit phase 1 (vanilla proofs)");
    let c1 = seal::seal_commit_phase1(
        &cache,
        &sealed,
        prover_id,
        sector,
        spec.ticket,
        spec.seed,
        pc2,
        &pieces,
    )
    .map_err(anyhow_err("seal_commit_phase1"))?;
    progress.finish("sealed");
    serde_json::to_vec(&c1).map_err(|e| Error::internal(format!("serializing C1: {e}")))
}

/// filecoin-proofs' own C2 (the baseline), including its internal verify_seal.
pub fn baseline_c2(c1_json: &[u8], prover_id: [u8; 32], sector_id: u64) -> Result<Vec<u8>> {
    let c1: SealCommitPhase1Output = serde_json::from_slice(c1_json)
        .map_err(|e| Error::invalid_input(format!("C1 JSON: {e}")))?;
    seal::seal_commit_phase2(c1, prover_id, SectorId::from(sector_id))
        .map(|o| o.proof)
        .map_err(|e| Error::from_anyhow(Status::Proving, "filecoin-proofs seal_commit_phase2", e))
}

/// Where fixtures live: `$CUZK_FIXTURE_DIR`, else `<params dir>/cuzk-fixtures`.
pub fn fixture_dir(params_dir: &Path) -> PathBuf {
    std::env::var_os("CUZK_FIXTURE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| params_dir.join("cuzk-fixtures"))
}

/// Result of [`setup`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct SetupReport {
    pub name: String,
    pub c1_path: PathBuf,
    pub params_id: String,
    pub params_path: PathBuf,
    pub params_generated: bool,
    pub params_seconds: f64,
    pub seal_seconds: f64,
    pub sector_id: u64,
    pub miner_id: u64,
    pub prover_id: String,
}

/// Makes (or finds cached) parameters and a sealed fixture's C1 output.
pub fn setup(spec: &FixtureSpec, params_dir: &Path) -> Result<SetupReport> {
    apply_fixture_tables(spec.proof, spec.shape)?;
    let t = Instant::now();
    let (params_id, generated) = ensure_params(spec.proof, spec.shape, params_dir, 0x5eed)?;
    let params_seconds = t.elapsed().as_secs_f64();
    let dir = fixture_dir(params_dir);
    let c1_path = dir.join(format!("{}.c1.json", spec.name()));
    let t = Instant::now();
    if !c1_path.exists() {
        let work = dir.join(format!("{}.work", spec.name()));
        let c1 = seal_c1(spec, &work)?;
        let tmp = c1_path.with_extension("tmp");
        std::fs::write(&tmp, &c1)
            .and_then(|_| std::fs::rename(&tmp, &c1_path))
            .map_err(|e| Error::internal(format!("writing {}: {e}", c1_path.display())))?;
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(SetupReport {
        name: spec.name(),
        params_path: params_path(params_dir, &params_id),
        c1_path,
        params_id,
        params_generated: generated,
        params_seconds,
        seal_seconds: t.elapsed().as_secs_f64(),
        sector_id: spec.sector_id,
        miner_id: spec.miner_id,
        prover_id: hex::encode(spec.prover_id()),
    })
}

/// Records the circuit of a proof type (or fixture shape) from its blank instance, with a
/// ticking line (a 32 GiB circuit takes minutes on one core).
pub fn record_circuit(proof: RegisteredSealProof, fixture: FixtureShape) -> Result<Recording> {
    let shape = porep::shape_for(proof, fixture)?;
    let progress = Progress::ticker(
        &format!(
            "recording the circuit ({} sector, {} partition(s), {} layers)",
            human_size(shape.sector_size),
            shape.partitions,
            shape.layers
        ),
        None,
    );
    let rec = porep::record_blank(proof, fixture, None)?;
    progress.finish(&format!(
        "{} constraints, {} inputs, {} aux, {} MiB",
        rec.constraints(),
        rec.inputs,
        rec.aux,
        rec.bytes() >> 20
    ));
    Ok(rec)
}

/// Generates the marked random parameter set of a proof type (or fixture shape) into `dir`
/// from its recording (any sector size; the callers decide where that is allowed). Never
/// overwrites a file. Returns the recording too (callers may save it for the engine).
pub fn generate_params(
    proof: RegisteredSealProof,
    fixture: FixtureShape,
    dir: &Path,
    seed: u64,
) -> Result<(Recording, paramgen::Written)> {
    let shape = porep::shape_for(proof, fixture)?;
    let rec = record_circuit(proof, fixture)?;
    let written = paramgen::generate(&rec, dir, shape.sector_size, seed)?;
    Ok((rec, written))
}

/// Makes random (test) Groth16 parameters for a proof type or fixture shape in `dir`, in the
/// standard `.params`/`.vk`/`.meta` form filecoin-proofs reads, unless they already exist.
/// Returns the parameter id and whether it generated them.
pub fn ensure_params(
    proof: RegisteredSealProof,
    fixture: FixtureShape,
    dir: &Path,
    seed: u64,
) -> Result<(String, bool)> {
    let id = porep::params_id_for(proof, fixture)?;
    let shape = porep::shape_for(proof, fixture)?;
    if porep::is_production_size(shape.sector_size) {
        return Err(Error::unsupported(format!(
            "setup makes random parameters for test sector sizes only; production parameters for \
             {proof:?} are fetched (paramfetch); for a benchmark set in another directory, see \
             `cuzk params gen`"
        )));
    }
    let files = [
        params_path(dir, &id),
        vk_path(dir, &id),
        dir.join(storage_proofs_core::parameter_cache::metadata_id(&id)),
    ];
    if files[0].exists() && files[1].exists() {
        return Ok((id, false));
    }
    // A half set may be someone's (a production .vk beside a missing .params): never replace it.
    if let Some(f) = files.iter().find(|f| f.exists()) {
        return Err(Error::params(format!(
            "refusing to overwrite {}: the parameter set {id} is incomplete; move the files away \
             (or fetch the missing ones) and run setup again",
            f.display()
        )));
    }
    let (rec, _) = generate_params(proof, fixture, dir, seed)?;
    debug_assert_eq!(rec.id, id);
    Ok((id, true))
}

/// Makes random (test) Groth16 parameters for a PoSt proof type in `dir` (test sector sizes
/// only), in the `.params`/`.vk`/`.meta` form filecoin-proofs reads, unless they exist.
/// Returns the parameter id and whether it generated them.
pub fn ensure_post_params(
    proof: cuzk::post::PostProof,
    dir: &Path,
    seed: u64,
) -> Result<(String, bool)> {
    let id = cuzk::post::params_id_for(proof)?;
    ensure_kind_params(
        &id,
        &format!("{proof:?}"),
        proof.sector_size().into(),
        dir,
        || generate_post_params(proof, dir, seed),
    )
}

/// Random (marked) Groth16 parameters for a PoSt proof type of any sector size, from its
/// circuit's recording, in `dir`: the `.params`/`.vk`/`.meta` set filecoin-proofs reads
/// (production sizes: for benchmarks, in a directory of their own). Overwrites.
pub fn generate_post_params(
    proof: cuzk::post::PostProof,
    dir: &Path,
    seed: u64,
) -> Result<(Recording, paramgen::Written)> {
    let rec = cuzk::post::record_blank(proof, None)?;
    let written = paramgen::generate(&rec, dir, u64::from(proof.sector_size()), seed)?;
    Ok((rec, written))
}

/// Makes random (test) Groth16 parameters for a SnapDeals (update) proof type in `dir` (test
/// sector sizes only), in the `.params`/`.vk`/`.meta` form filecoin-proofs reads, unless they
/// exist. Returns the parameter id and whether it generated them.
pub fn ensure_snap_params(
    proof: cuzk::snap::UpdateProof,
    dir: &Path,
    seed: u64,
) -> Result<(String, bool)> {
    let id = cuzk::snap::params_id_for(proof)?;
    ensure_kind_params(
        &id,
        &format!("{proof:?}"),
        proof.sector_size().into(),
        dir,
        || generate_snap_params(proof, dir, seed),
    )
}

/// Random (marked) Groth16 parameters for an update proof type of any sector size, from its
/// circuit's recording, in `dir` (production sizes: for benchmarks, in a directory of their
/// own). Overwrites.
pub fn generate_snap_params(
    proof: cuzk::snap::UpdateProof,
    dir: &Path,
    seed: u64,
) -> Result<(Recording, paramgen::Written)> {
    let rec = cuzk::snap::record_blank(proof, None)?;
    let written = paramgen::generate(&rec, dir, u64::from(proof.sector_size()), seed)?;
    Ok((rec, written))
}

/// The set `id` of proof type `what` in `dir`, made by `generate` unless it is there (test
/// sector sizes only). Returns the id and whether it generated the set.
fn ensure_kind_params(
    id: &str,
    what: &str,
    sector_size: u64,
    dir: &Path,
    generate: impl FnOnce() -> Result<(Recording, paramgen::Written)>,
) -> Result<(String, bool)> {
    if porep::is_production_size(sector_size) {
        return Err(Error::unsupported(format!(
            "random parameters are made here for test sector sizes only, not {what}"
        )));
    }
    if params_path(dir, id).exists() && vk_path(dir, id).exists() {
        return Ok((id.to_string(), false));
    }
    let (rec, _) = generate()?;
    debug_assert_eq!(rec.id, id);
    Ok((id.to_string(), true))
}

/// A sector updated by filecoin-proofs (SnapDeals): its three commitments and the partition
/// proofs filecoin-proofs makes from it (`generate_partition_proofs`, as a node's
/// `GenerateUpdateVanillaProofs`).
#[derive(Clone, Debug)]
pub struct SnapSector {
    pub proof: cuzk::snap::UpdateProof,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    pub vanilla_proofs: Vec<Vec<u8>>,
}

impl SnapSector {
    /// The engine's request for this sector.
    pub fn request(&self, priority: i32) -> cuzk::snap::SnapRequest {
        cuzk::snap::SnapRequest {
            proof: self.proof,
            comm_r_old: self.comm_r_old,
            comm_r_new: self.comm_r_new,
            comm_d_new: self.comm_d_new,
            vanilla_proofs: self.vanilla_proofs.clone(),
            priority,
        }
    }

    /// filecoin-proofs' `verify_empty_sector_update_proof` over `proof` (the parameter cache
    /// holds the update's verifying key).
    pub fn verify(&self, proof: &[u8]) -> Result<bool> {
        filecoin_proofs_api::update::verify_empty_sector_update_proof(
            self.proof,
            proof,
            self.comm_r_old,
            self.comm_r_new,
            self.comm_d_new,
        )
        .map_err(anyhow_err("verify_empty_sector_update_proof"))
    }
}

/// Seals a sector as [`seal_c1`] does, then updates it with `data_seed`'s random data
/// (filecoin-proofs' `empty_sector_update_encode_into`) and makes its partition proofs, all in
/// `work_dir`. Test proof types (V1_1) only.
pub fn snap_sector(spec: &FixtureSpec, data_seed: u64, work_dir: &Path) -> Result<SnapSector> {
    use filecoin_proofs_api::update as fu;
    let io = |e: std::io::Error| Error::internal(format!("fixture I/O: {e}"));
    let c1 = seal_c1(spec, work_dir)?;
    let comm_r_old = porep::parse_c1(&c1)?.c1.comm_r;
    let sector_size = u64::from(spec.proof.sector_size());
    let proof = cuzk::snap::update_proof_for_size(sector_size)?;
    let unpadded = UnpaddedBytesAmount(sector_size / 128 * 127);
    let mut data = vec![0u8; unpadded.0 as usize];
    rand_xorshift::XorShiftRng::seed_from_u64(data_seed).fill_bytes(&mut data);
    let staged = work_dir.join("update-staged");
    let mut staged_file = std::fs::File::create(&staged).map_err(io)?;
    let (piece, _) = seal::add_piece(
        spec.proof,
        Cursor::new(&data),
        &mut staged_file,
        unpadded,
        &[],
    )
    .map_err(anyhow_err("add_piece"))?;
    staged_file.flush().map_err(io)?;
    drop(staged_file);
    let (replica, cache) = (work_dir.join("update"), work_dir.join("update-cache"));
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache).map_err(io)?;
    // filecoin-proofs writes the new replica into a file of the sector's size.
    std::fs::File::create(&replica)
        .and_then(|f| f.set_len(sector_size))
        .map_err(io)?;
    let (key, key_cache) = (work_dir.join("sealed"), work_dir.join("cache"));
    let encoded = fu::empty_sector_update_encode_into(
        proof,
        &replica,
        &cache,
        &key,
        &key_cache,
        &staged,
        &[piece],
    )
    .map_err(anyhow_err("empty_sector_update_encode_into"))?;
    let vanilla = fu::generate_partition_proofs(
        proof,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &key,
        &key_cache,
        &replica,
        &cache,
    )
    .map_err(anyhow_err("generate_partition_proofs"))?;
    Ok(SnapSector {
        proof,
        comm_r_old,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        vanilla_proofs: vanilla.into_iter().map(|p| p.0).collect(),
    })
}
