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

use crate::{tools::fixture, ShapeArgs};
use storage_proofs_core::parameter_cache::VERSION;

#[derive(Subcommand)]
pub enum ParamsCmd {
    /// Check every parameter set in the parameter directory (or one, by id): each `.params`
    /// file's sections lie inside it and end where it does, and its `.vk` holds the same key.
    /// Exit code 0 only when all are sound.
    Check(CheckArgs),
    /// Print the byte offsets where a `.params` file's sections end (after checking it).
    Sections { file: PathBuf },
    /// Generate a random (marked) parameter set for any sector size from the circuit's
    /// recording, into --params-dir, with the circuit's recording beside it. For production
    /// sizes (32GiB, 64GiB) the directory must be given and must not be the one a node reads
    /// (FIL_PROOFS_PARAMETER_CACHE, /var/tmp/filecoin-proof-parameters): such a set carries
    /// production file names, and the engine proves with it only when told it is a benchmark
    /// (CUZK_ALLOW_RANDOM_PARAMS=1, or the bench commands).
    Gen(GenArgs),
}

#[derive(Args)]
pub struct GenArgs {
    #[arg(long)]
    sector_size: String,
    #[command(flatten)]
    shape: ShapeArgs,
    /// Seeds tau, beta, gamma and delta.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// Do not save the circuit's recording (`*.cuzk-pce`) beside the parameters.
    #[arg(long)]
    no_recording: bool,
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn gen(args: GenArgs, params_dir: PathBuf, explicit_dir: bool) -> Result<ExitCode, Error> {
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
    let (rec, written) = fixture::generate_params(proof, shape, &params_dir, args.seed)?;
    if !args.no_recording {
        let path = pce::file::path(&params_dir, &rec.id);
        pce::file::save(&rec, &path).map_err(|e| {
            Error::internal(format!("saving the recording {}: {e}", path.display()))
        })?;
        eprintln!("cuzk params gen: recording saved as {}", path.display());
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "params_id": rec.id,
            "constraints": rec.constraints(),
            "inputs": rec.inputs,
            "aux": rec.aux,
            "terms": [rec.a.terms(), rec.b.terms(), rec.c.terms()],
            "dictionary": rec.dict.len(),
            "recording_bytes": rec.bytes(),
            "generated": written,
        }))
        .expect("serializable")
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
            let cache = SrsCache::new(params_dir);
            let budget = Budget::new(u64::MAX / 2);
            let mut bad = 0;
            for id in &ids {
                match cache.get(id, &budget) {
                    Ok(srs) => println!(
                        "ok     {id}: {} MiB, domain {}, {} inputs, {} aux",
                        srs.file_len >> 20,
                        srs.size.constraints,
                        srs.size.inputs,
                        srs.size.aux
                    ),
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
