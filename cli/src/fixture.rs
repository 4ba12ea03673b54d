//! `cuzk fixture`: a synthetic C1 output for a random sector of any size, without sealing it,
//! or the vanilla proofs of WindowPoSt or WinningPoSt over random sectors without sector data.

use std::{path::PathBuf, process::ExitCode, time::Instant};

use clap::Args;
use cuzk::{porep, Error};

use crate::{
    tools::{fixture, post_fixture, synthetic},
    write_file, Identity, ShapeArgs,
};

/// Write a standard SealCommitPhase1Output JSON for a random sector of any size (2KiB to
/// 64GiB) without sealing it, then check it with filecoin-proofs' vanilla verification.
/// With production-size parameters this is a C2 benchmark input: no sealed sector needed.
/// With --kind window-post or winning-post: a directory (post.json, vanilla.bin) of the
/// vanilla proofs a node would make for random sectors (sparse trees of the real shape,
/// challenges derived by filecoin-proofs), checked the same way.
#[derive(Args)]
pub struct FixtureArgs {
    /// porep, window-post, winning-post or snap.
    #[arg(long, default_value = "porep")]
    pub kind: String,
    /// PoSt: sectors to prove (default: one full WindowPoSt partition, or WinningPoSt's one);
    /// numbered from --sector-id up.
    #[arg(long)]
    pub sectors: Option<usize>,
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
    if args.kind == "snap" {
        return snap(args, size);
    }
    if args.kind != "porep" {
        return post(args, size);
    }
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

fn post(args: FixtureArgs, size: u64) -> Result<ExitCode, Error> {
    let proof = post_fixture::proof_for(&args.kind, size)?;
    let spec = post_fixture::PostFixtureSpec {
        proof,
        prover_id: args.id.prover_id()?,
        sectors: args
            .sectors
            .unwrap_or_else(|| post_fixture::sectors_per_partition(proof)),
        first_sector: args.id.sector_id,
        seed: args.seed,
    };
    let t = Instant::now();
    let f = post_fixture::post_fixture(&spec)?;
    let made_ms = t.elapsed().as_secs_f64() * 1e3;
    f.save(&args.output)?;
    let bytes: usize = f.vanilla.iter().map(Vec::len).sum();
    eprintln!(
        "cuzk fixture: {proof:?}, {} sectors in {} partition(s) x {} challenges: {} ({} KiB of vanilla proofs) in {made_ms:.0} ms",
        f.sectors.len(),
        f.partitions(),
        proof.as_v1_config().challenge_count,
        args.output.display(),
        bytes >> 10
    );
    if !args.no_check {
        let t = Instant::now();
        cuzk::post::prepare(&f.request(0))?;
        eprintln!(
            "cuzk fixture: filecoin-proofs' vanilla verification passed in {:.0} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn snap(args: FixtureArgs, size: u64) -> Result<ExitCode, Error> {
    use crate::tools::snap_fixture::{snap_fixture, SnapFixtureSpec};
    let proof = cuzk::snap::update_proof_for_size(size)?;
    let spec = SnapFixtureSpec {
        proof,
        seed: args.seed ^ args.id.sector_id.rotate_left(32),
    };
    let t = Instant::now();
    let f = snap_fixture(&spec)?;
    let made_ms = t.elapsed().as_secs_f64() * 1e3;
    f.save(&args.output)?;
    let bytes: usize = f.vanilla_proofs.iter().map(Vec::len).sum();
    eprintln!(
        "cuzk fixture: {proof:?}, {} partition proofs: {} ({} KiB) in {made_ms:.0} ms",
        f.vanilla_proofs.len(),
        args.output.display(),
        bytes >> 10
    );
    if !args.no_check {
        let t = Instant::now();
        cuzk::snap::prepare(&f.request(0)?)?;
        eprintln!(
            "cuzk fixture: filecoin-proofs' vanilla verification passed in {:.0} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(ExitCode::SUCCESS)
}
