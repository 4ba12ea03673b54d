//! `cuzk fixture`: a synthetic C1 output for a random sector of any size, without sealing it.

use std::{path::PathBuf, process::ExitCode, time::Instant};

use clap::Args;
use cuzk::{porep, Error};

use crate::{
    tools::{fixture, synthetic},
    write_file, Identity, ShapeArgs,
};

/// Write a standard SealCommitPhase1Output JSON for a random sector of any size (2KiB to
/// 64GiB) without sealing it, then check it with filecoin-proofs' vanilla verification.
/// With production-size parameters this is a C2 benchmark input: no sealed sector needed.
#[derive(Args)]
pub struct FixtureArgs {
    #[arg(long, default_value = "32GiB")]
    pub sector_size: String,
    #[command(flatten)]
    pub id: Identity,
    /// Seeds the sector's data, labels, trees, ticket and seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Do not run the vanilla verification after writing.
    #[arg(long)]
    pub no_check: bool,
}

pub fn run(args: FixtureArgs) -> Result<ExitCode, Error> {
    let size = fixture::parse_sector_size(&args.sector_size)?;
    let proof = fixture::v1_1_proof(size)?;
    let spec = synthetic::SyntheticSpec {
        proof,
        shape: args.shape.shape(),
        sector_id: args.id.sector_id,
        prover_id: args.id.prover_id()?,
        seed: args.seed,
    };
    let t = Instant::now();
    let json = synthetic::synthetic_c1_json(&spec)?;
    let made_ms = t.elapsed().as_secs_f64() * 1e3;
    write_file(&args.output, &json)?;
    let shape = porep::shape_for(proof, spec.shape)?;
    eprintln!(
        "cuzk fixture: {proof:?}, {} partitions x {} challenges, {} layers: {} ({} KiB) in {made_ms:.0} ms",
        shape.partitions,
        shape.challenges_per_partition,
        shape.layers,
        args.output.display(),
        json.len() >> 10
    );
    if !args.no_check {
        let t = Instant::now();
        let parsed = porep::parse_c1(&json)?;
        porep::prepare(parsed.c1, spec.prover_id, spec.sector_id, spec.shape)?;
        eprintln!(
            "cuzk fixture: filecoin-proofs' vanilla verification passed in {:.0} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(ExitCode::SUCCESS)
}
