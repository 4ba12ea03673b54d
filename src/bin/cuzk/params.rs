//! `cuzk params`: check parameter files the way the engine does before it proves with them.

use std::{path::PathBuf, process::ExitCode};

use clap::{Args, Subcommand};
use cuzk::{
    budget::Budget,
    params::{check_file, SrsCache},
    Error,
};
use storage_proofs_core::parameter_cache::VERSION;

#[derive(Subcommand)]
pub enum ParamsCmd {
    /// Check every parameter set in the parameter directory (or one, by id): each `.params`
    /// file's sections lie inside it and end where it does, and its `.vk` holds the same key.
    /// Exit code 0 only when all are sound.
    Check(CheckArgs),
    /// Print the byte offsets where a `.params` file's sections end (after checking it).
    Sections { file: PathBuf },
}

#[derive(Args)]
pub struct CheckArgs {
    /// Only this parameter id (the file name without `v<N>-` and `.params`).
    #[arg(long)]
    id: Option<String>,
}

pub fn params(cmd: ParamsCmd, params_dir: PathBuf) -> Result<ExitCode, Error> {
    match cmd {
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
