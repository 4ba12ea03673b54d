//! `cuzk prove`, `cuzk verify`, `cuzk baseline`: one proof through the engine, filecoin-proofs'
//! verifier, filecoin-proofs' own C2.

use std::{path::PathBuf, process::ExitCode, time::Instant};

use clap::Args;
use cuzk::{
    engine::{Config, Engine, JobRequest},
    porep, Error,
};

use crate::{print_report, print_result_line, read, tools::fixture, JobArgs};

/// Prove a C1 output (raw JSON or Commit2In envelope) and write the proof bytes.
#[derive(Args)]
pub struct ProveArgs {
    #[command(flatten)]
    pub job: JobArgs,
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Synthesis workers (0: automatic).
    #[arg(long, default_value_t = 0)]
    pub synthesis_workers: usize,
    /// Skip the self-check (never do this in production).
    #[arg(long)]
    pub no_self_check: bool,
    /// Print TIMELINE lines to stderr.
    #[arg(long)]
    pub timeline: bool,
}

pub fn prove(args: ProveArgs, params_dir: PathBuf) -> Result<ExitCode, Error> {
    let ProveArgs {
        job: JobArgs { c1, id, shape },
        output,
        synthesis_workers,
        no_self_check,
        timeline,
    } = args;
    let bytes = read(&c1)?;
    let engine = Engine::start(Config {
        synthesis_workers,
        params_dir,
        self_check: !no_self_check,
        timeline_stderr: timeline,
        ..Config::default()
    })?;
    let out = engine.prove(JobRequest {
        c1: bytes,
        sector_id: id.sector_id,
        prover_id: id.prover_id()?,
        priority: 0,
        fixture: shape.shape(),
    })?;
    std::fs::write(&output, &out.proof)
        .map_err(|e| Error::invalid_argument(format!("cannot write {}: {e}", output.display())))?;
    print_report(&out);
    let provers: Vec<String> = engine
        .status()
        .devices
        .into_iter()
        .map(|d| d.name)
        .collect();
    print_result_line("cuzk", &provers.join("+"), out.wall_ms, out.proof.len());
    Ok(ExitCode::SUCCESS)
}

/// Verify a proof with filecoin-proofs' verify_seal; exit code 0 only when valid.
#[derive(Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub job: JobArgs,
    #[arg(long)]
    pub proof: PathBuf,
}

pub fn verify(args: VerifyArgs) -> Result<ExitCode, Error> {
    let VerifyArgs {
        job: JobArgs { c1, id, shape },
        proof,
    } = args;
    let bytes = read(&c1)?;
    let proof = read(&proof)?;
    let parsed = porep::parse_c1(&bytes)?;
    fixture::apply_fixture_tables(parsed.c1.registered_proof, shape.shape())?;
    let valid = cuzk::porep::verify::verify_seal(&bytes, id.prover_id()?, id.sector_id, &proof)
        .unwrap_or_else(|e| {
            eprintln!("cuzk: verify_seal: {e}");
            false
        });
    println!("{}", if valid { "valid" } else { "INVALID" });
    Ok(if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// filecoin-proofs' own seal_commit_phase2 on a C1 output (the baseline), timed.
#[derive(Args)]
pub struct BaselineArgs {
    #[command(flatten)]
    pub job: JobArgs,
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

pub fn baseline(args: BaselineArgs) -> Result<ExitCode, Error> {
    let BaselineArgs {
        job: JobArgs { c1, id, shape },
        output,
    } = args;
    let bytes = read(&c1)?;
    let parsed = porep::parse_c1(&bytes)?;
    fixture::apply_fixture_tables(parsed.c1.registered_proof, shape.shape())?;
    let t = Instant::now();
    let proof = fixture::baseline_c2(
        &serde_json::to_vec(&parsed.c1).expect("serializable"),
        id.prover_id()?,
        id.sector_id,
    )?;
    let wall_ms = t.elapsed().as_secs_f64() * 1e3;
    if let Some(o) = output {
        std::fs::write(&o, &proof)
            .map_err(|e| Error::invalid_argument(format!("cannot write {}: {e}", o.display())))?;
    }
    print_result_line("filecoin-proofs", "filecoin-proofs", wall_ms, proof.len());
    Ok(ExitCode::SUCCESS)
}
