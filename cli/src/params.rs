//! `cuzk params`: check parameter files the way the engine does before it proves with them.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use clap::{Args, Subcommand};
use cuzk::{
    budget::Budget,
    params::{check_file, SrsCache},
    pce, porep, Error,
};

use crate::{
    tools::{fixture, paramgen, post_fixture},
    ShapeArgs,
};
use storage_proofs_core::parameter_cache::VERSION;

#[derive(Subcommand)]
pub enum ParamsCmd {
    /// Check every parameter set in the parameter directory (or one, by id): each `.params`
    /// file's sections lie inside it and end where it does, and its `.vk` holds the same key;
    /// and each GPU of a cuda build can hold a partition of it (the plan its device memory
    /// allows is printed: see CUZK_GPU_MEM_LIMIT). Exit code 0 only when all are sound.
    Check(CheckArgs),
    /// Print the byte offsets where a `.params` file's sections end (after checking it).
    Sections { file: PathBuf },
    /// Generate a random (marked) parameter set for any sector size and circuit (PoRep,
    /// WindowPoSt, WinningPoSt: --kind) from the circuit's recording, into --params-dir, with the circuit's recording beside it. For production
    /// sizes (32GiB, 64GiB) the directory must be given and must not be the one a node reads
    /// (FIL_PROOFS_PARAMETER_CACHE, /var/tmp/filecoin-proof-parameters): such a set carries
    /// production file names, and the engine proves with it only when told it is a benchmark
    /// (CUZK_ALLOW_RANDOM_PARAMS=1, or the bench commands).
    Gen(GenArgs),
    /// Record a circuit from its blank instance (no C1 output, no parameters) and print its
    /// size: constraints, inputs, aux, terms per matrix, distinct coefficients, bytes, and the
    /// point counts and file size of its parameter set. `--save` keeps the recording in
    /// --params-dir, where the engine loads it instead of recording the circuit again.
    Record(RecordArgs),
    /// Write a random (marked) SnarkPack SRS (`v28-fil-inner-product-v1.srs`, the file
    /// filecoin-proofs aggregates with: non-interactive PoRep's C2, AggregateSealProofs) into
    /// --params-dir, for tests and benchmarks. The engine refuses it for production sector
    /// sizes unless told it is a benchmark (CUZK_ALLOW_RANDOM_PARAMS=1). Never overwrites.
    Srs(SrsArgs),
}

#[derive(Args)]
pub struct SrsArgs {
    /// The most proofs it aggregates (rounded up to a power of two): 16 for a 2KiB
    /// non-interactive sector, 128 for a 32 GiB one, 8192 for 65 of them.
    #[arg(long, default_value_t = 8192)]
    proofs: usize,
}

fn srs(args: SrsArgs) -> Result<ExitCode, Error> {
    let path = porep::aggregate::srs_path();
    let t = std::time::Instant::now();
    let bytes = porep::aggregate::write_random_srs(&path, args.proofs)?;
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "path": path,
            "max_proofs": args.proofs.next_power_of_two(),
            "bytes": bytes,
            "seconds": t.elapsed().as_secs_f64(),
            "random": true,
        }))
        .expect("serializable")
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct RecordArgs {
    #[arg(long)]
    sector_size: String,
    #[command(flatten)]
    shape: ShapeArgs,
    #[arg(long)]
    save: bool,
}

/// What `params record` and `params gen` print of a recording.
fn recording_json(rec: &pce::Recording) -> serde_json::Value {
    let counts = paramgen::expected_counts(rec);
    serde_json::json!({
        "params_id": rec.id,
        "constraints": rec.constraints(),
        "circuit_constraints": rec.constraints() - rec.inputs,
        "domain": rec.constraints().next_power_of_two(),
        "inputs": rec.inputs,
        "aux": rec.aux,
        "terms": { "a": rec.a.terms(), "b": rec.b.terms(), "c": rec.c.terms() },
        "distinct_coefficients": rec.dict.len(),
        "recording_bytes": rec.bytes(),
        "params_points": { "h": counts[0], "l": counts[1], "a": counts[2], "b_g1": counts[3], "b_g2": counts[4] },
        "params_bytes": paramgen::file_bytes(&counts, rec.inputs),
    })
}

fn record(args: RecordArgs, params_dir: PathBuf) -> Result<ExitCode, Error> {
    let size = fixture::parse_sector_size(&args.sector_size)?;
    let proof = fixture::v1_1_proof(size)?;
    let t = std::time::Instant::now();
    let rec = fixture::record_circuit(proof, args.shape.shape())?;
    let seconds = t.elapsed().as_secs_f64();
    if args.save {
        save_recording(&rec, &params_dir)?;
    }
    let mut out = recording_json(&rec);
    out["record_seconds"] = seconds.into();
    out["peak_rss_bytes"] = crate::peak_rss().into();
    println!(
        "{}",
        serde_json::to_string_pretty(&out).expect("serializable")
    );
    Ok(ExitCode::SUCCESS)
}

fn save_recording(rec: &pce::Recording, dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::internal(format!("cannot create {}: {e}", dir.display())))?;
    let path = pce::file::path(dir, &rec.id);
    pce::file::save(rec, &path)
        .map_err(|e| Error::internal(format!("saving the recording {}: {e}", path.display())))?;
    eprintln!("recording saved as {}", path.display());
    Ok(())
}

#[derive(Args)]
pub struct GenArgs {
    #[arg(long)]
    sector_size: String,
    /// The circuit: porep, window-post, winning-post or snap (SnapDeals' update).
    #[arg(long, default_value = "porep")]
    kind: String,
    #[command(flatten)]
    shape: ShapeArgs,
    /// Seeds tau, beta, gamma and delta.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// Do not save the circuit's recording (`*.cuzk-pce`) beside the parameters.
    #[arg(long, conflicts_with = "recording_dir")]
    no_recording: bool,
    /// Save the recording in this directory instead of beside the parameters (where a disk
    /// cannot hold both); the engine reads it from there when `CUZK_PCE_DIR` names it.
    #[arg(long)]
    recording_dir: Option<PathBuf>,
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn gen(args: GenArgs, params_dir: PathBuf, explicit_dir: bool) -> Result<ExitCode, Error> {
    if !["porep", "window-post", "winning-post", "snap"].contains(&args.kind.as_str()) {
        return Err(Error::invalid_argument(format!(
            "--kind is porep, window-post, winning-post or snap, not {:?}",
            args.kind
        )));
    }
    let size = fixture::parse_sector_size(&args.sector_size)?;
    let proof = fixture::v1_1_proof(size)?;
    let shape = args.shape.shape();
    if porep::is_production_size(size) {
        let node_dirs = [
            crate::DEFAULT_PARAMS_DIR.get().cloned(),
            Some(PathBuf::from("/var/tmp/filecoin-proof-parameters")),
        ];
        if !explicit_dir || node_dirs.iter().flatten().any(|d| same_dir(d, &params_dir)) {
            return Err(Error::invalid_argument(format!(
                "refusing to write random {} parameters into {}: a node reading that directory \
                 would prove with them; give --params-dir a directory of its own (and point \
                 benchmarks at it)",
                args.sector_size,
                params_dir.display()
            )));
        }
    }
    // A recording directory that cannot be made fails before the parameters are generated.
    if let Some(dir) = &args.recording_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::invalid_argument(format!("--recording-dir {}: {e}", dir.display()))
        })?;
    }
    let (rec, written) = if args.kind == "porep" {
        fixture::generate_params(proof, shape, &params_dir, args.seed)?
    } else if args.kind == "snap" {
        let update = cuzk::snap::update_proof_for_size(size)?;
        fixture::generate_snap_params(update, &params_dir, args.seed)?
    } else {
        let post = post_fixture::proof_for(&args.kind, size)?;
        fixture::generate_post_params(post, &params_dir, args.seed)?
    };
    if !args.no_recording {
        save_recording(&rec, args.recording_dir.as_deref().unwrap_or(&params_dir))?;
    }
    let mut out = recording_json(&rec);
    out["generated"] = serde_json::to_value(&written).expect("serializable");
    out["peak_rss_bytes"] = crate::peak_rss().into();
    println!(
        "{}",
        serde_json::to_string_pretty(&out).expect("serializable")
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct CheckArgs {
    /// Only this parameter id (the file name without `v<N>-` and `.params`).
    #[arg(long)]
    id: Option<String>,
}

pub fn params(cmd: ParamsCmd, params_dir: PathBuf, explicit_dir: bool) -> Result<ExitCode, Error> {
    match cmd {
        ParamsCmd::Gen(a) => gen(a, params_dir, explicit_dir),
        ParamsCmd::Record(a) => record(a, params_dir),
        ParamsCmd::Srs(a) => srs(a),
        ParamsCmd::Sections { file } => {
            let layout = check_file(&file)?;
            for (name, end) in layout.section_ends() {
                println!("{name} {end}");
            }
            Ok(ExitCode::SUCCESS)
        }
        ParamsCmd::Check(CheckArgs { id }) => {
            let ids = match id {
                Some(id) => vec![id],
                None => {
                    let prefix = format!("v{VERSION}-");
                    let mut ids: Vec<String> = std::fs::read_dir(&params_dir)
                        .map_err(|e| {
                            Error::invalid_argument(format!(
                                "cannot list {}: {e}",
                                params_dir.display()
                            ))
                        })?
                        .filter_map(|e| e.ok())
                        .filter_map(|e| {
                            let name = e.file_name().into_string().ok()?;
                            Some(
                                name.strip_prefix(&prefix)?
                                    .strip_suffix(".params")?
                                    .to_string(),
                            )
                        })
                        .collect();
                    ids.sort();
                    ids
                }
            };
            if ids.is_empty() {
                return Err(Error::params(format!(
                    "no .params files in {}",
                    params_dir.display()
                )));
            }
            // The GPUs an engine would prove on: how each would prove each set (the plan its
            // device memory allows), or that it cannot hold a partition of it.
            let gpus: Vec<_> = cuzk::engine::select_backends(&cuzk::engine::Config {
                params_dir: params_dir.clone(),
                ..cuzk::engine::Config::default()
            })
            .map(|b| b.into_iter().filter(|b| b.is_gpu()).collect())
            .unwrap_or_default();
            let cache = SrsCache::new(params_dir);
            let budget = Budget::new(u64::MAX / 2);
            let mut bad = 0;
            for id in &ids {
                match cache.get(id, &budget) {
                    Ok(srs) => {
                        println!(
                            "ok     {id}: {} MiB, domain {}, {} inputs, {} aux",
                            srs.file_len >> 20,
                            srs.size.constraints,
                            srs.size.inputs,
                            srs.size.aux
                        );
                        for (dev, plan) in gpus.iter().flat_map(|b| b.plans(&srs)) {
                            match plan {
                                Ok(p) => println!("         {dev}: {p}"),
                                Err(e) => {
                                    bad += 1;
                                    println!("FAILED   {dev}: {}", e.message);
                                }
                            }
                        }
                    }
                    Err(e) => {
                        bad += 1;
                        println!("FAILED {id}: {e}");
                    }
                }
            }
            Ok(if bad == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}
