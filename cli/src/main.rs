//! `cuzk`: prove, verify, make fixtures, benchmark, analyse timelines, demo. One module per
//! command; the tools they share with the tests are the `cuzk-tools` crate (`tools/`).

mod bench_batch;
mod bench_c2;
mod bench_calls;
mod bench_params;
mod bench_post;
mod bench_snap;
mod bench_synth;
mod fixture;
mod params;
mod prove;
mod selftest;
mod setup;
mod waterfall;

use std::{path::PathBuf, process::ExitCode};

use cuzk_tools as tools;

use clap::{Args, Parser, Subcommand};
use cuzk::{
    engine::{self, JobOutput},
    porep::{self, FixtureShape},
    Error, Status,
};

#[derive(Parser)]
#[command(name = "cuzk", version, about = "Pipelined PoRep Commit2 (C2) prover")]
struct Cli {
    /// Parameter directory (default: FIL_PROOFS_PARAMETER_CACHE or /var/tmp/filecoin-proof-parameters).
    #[arg(long, global = true)]
    params_dir: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone)]
pub struct Identity {
    /// Sector number.
    #[arg(long)]
    pub sector_id: u64,
    /// Miner actor id (the prover id is its LEB128 varint, zero-padded).
    #[arg(
        long,
        conflicts_with = "prover_id",
        required_unless_present = "prover_id"
    )]
    pub miner_id: Option<u64>,
    /// Prover id as 64 hex digits.
    #[arg(long)]
    pub prover_id: Option<String>,
}

impl Identity {
    pub fn prover_id(&self) -> Result<[u8; 32], Error> {
        match (&self.prover_id, self.miner_id) {
            (Some(h), _) => porep::parse_prover_id_hex(h),
            (None, Some(m)) => Ok(porep::prover_id_from_miner(m)),
            (None, None) => Err(Error::invalid_argument("give --miner-id or --prover-id")),
        }
    }
}

#[derive(Args, Clone, Copy, Default)]
pub struct ShapeArgs {
    /// Fixture shape: partition count for a test sector size (test fixtures only).
    #[arg(long, default_value_t = 0)]
    pub partitions: usize,
    /// Fixture shape: layer count for a test sector size (test fixtures only).
    #[arg(long, default_value_t = 0)]
    pub layers: usize,
}

impl ShapeArgs {
    pub fn shape(&self) -> FixtureShape {
        FixtureShape {
            partitions: self.partitions,
            layers: self.layers,
        }
    }
}

/// The job a command works on: a C1 output, whose sector it is, and its shape.
#[derive(Args, Clone)]
pub struct JobArgs {
    /// C1 output file (raw JSON or Commit2In envelope).
    #[arg(long)]
    pub c1: PathBuf,
    #[command(flatten)]
    pub id: Identity,
    #[command(flatten)]
    pub shape: ShapeArgs,
}

#[derive(Subcommand)]
enum Cmd {
    Prove(prove::ProveArgs),
    Verify(prove::VerifyArgs),
    Setup(setup::SetupArgs),
    Fixture(fixture::FixtureArgs),
    Baseline(prove::BaselineArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCmd),
    /// Check parameter files.
    #[command(subcommand)]
    Params(params::ParamsCmd),
    Waterfall(waterfall::WaterfallArgs),
    Selftest(selftest::SelftestArgs),
    Demo(setup::DemoArgs),
}

#[derive(Subcommand)]
enum BenchCmd {
    Batch(bench_batch::BatchCmdArgs),
    Calls(bench_calls::CallsArgs),
    Synth(bench_synth::SynthArgs),
    PostWitness(bench_post::PostWitnessArgs),
    /// A stream of SnapDeals proofs from a `cuzk fixture --kind snap` directory.
    Snap(bench_snap::SnapBenchArgs),
    C2(bench_c2::C2Args),
    Params(bench_params::ParamsBenchArgs),
}

/// The parameter directory a node would use here (`FIL_PROOFS_PARAMETER_CACHE` as the caller
/// set it, else filecoin-proofs' default), read before `--params-dir` replaces the variable.
pub static DEFAULT_PARAMS_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Peak resident set size of this process (VmHWM), bytes.
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// The machine-readable line `prove` and `baseline` end with.
pub fn print_result_line(what: &str, prover: &str, wall_ms: f64, proof_len: usize) {
    println!(
        "RESULT {what} prover={prover} wall_ms={wall_ms:.1} peak_rss={} proof_bytes={proof_len}",
        peak_rss()
    );
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    // filecoin-proofs reads FIL_PROOFS_PARAMETER_CACHE once; set it before any proofs call so
    // that its verify_seal and cuzk read the same directory.
    let _ = DEFAULT_PARAMS_DIR.set(engine::default_params_dir());
    let params_dir = cli
        .params_dir
        .clone()
        .unwrap_or_else(engine::default_params_dir);
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params_dir);
    let explicit_dir = cli.params_dir.is_some();
    match run(cli.cmd, params_dir, explicit_dir) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("cuzk: error: {e}");
            ExitCode::from(match e.status {
                Status::InvalidArgument | Status::InvalidInput => 2,
                _ => 1,
            })
        }
    }
}

pub fn read(path: &PathBuf) -> Result<Vec<u8>, Error> {
    std::fs::read(path)
        .map_err(|e| Error::invalid_argument(format!("cannot read {}: {e}", path.display())))
}

pub fn print_report(out: &JobOutput) {
    println!("partition  queue_ms  synth_ms  wait_ms  prove_ms  (ntt_ms  msm_ms)  reserved_MiB");
    for p in &out.partitions {
        println!(
            "{:>9}  {:>8.0}  {:>8.0}  {:>7.0}  {:>8.0}  ({:>6.0}  {:>6.0})  {:>12}",
            p.partition,
            p.queue_ms,
            p.synth_ms,
            p.wait_ms,
            p.prove_ms,
            p.stages.ntt_ms,
            p.stages.msm_ms,
            p.reserved_bytes >> 20
        );
    }
    println!(
        "wall {:.2} s, self-check {} in {:.0} ms, {} bytes",
        out.wall_ms / 1e3,
        if out.verified { "passed" } else { "skipped" },
        out.verify_ms,
        out.proof.len()
    );
}

pub fn write_file(path: &PathBuf, data: &[u8]) -> Result<(), Error> {
    std::fs::write(path, data)
        .map_err(|e| Error::invalid_argument(format!("cannot write {}: {e}", path.display())))
}

fn run(cmd: Cmd, params_dir: PathBuf, explicit_dir: bool) -> Result<ExitCode, Error> {
    match cmd {
        Cmd::Prove(a) => prove::prove(a, params_dir),
        Cmd::Verify(a) => prove::verify(a),
        Cmd::Baseline(a) => prove::baseline(a),
        Cmd::Setup(a) => setup::setup(a, params_dir),
        Cmd::Fixture(a) => fixture::run(a),
        Cmd::Demo(a) => setup::demo(a, params_dir),
        Cmd::Waterfall(a) => waterfall::waterfall(a),
        Cmd::Selftest(a) => selftest::selftest(a),
        Cmd::Params(a) => params::params(a, params_dir, explicit_dir),
        Cmd::Bench(BenchCmd::Batch(a)) => bench_batch::batch(a, params_dir),
        Cmd::Bench(BenchCmd::Calls(a)) => bench_calls::calls(a, params_dir),
        Cmd::Bench(BenchCmd::Synth(a)) => bench_synth::synth(a, params_dir),
        Cmd::Bench(BenchCmd::PostWitness(a)) => bench_post::post_witness(a),
        Cmd::Bench(BenchCmd::Snap(a)) => bench_snap::snap(a, params_dir),
        Cmd::Bench(BenchCmd::C2(a)) => bench_c2::c2(a),
        Cmd::Bench(BenchCmd::Params(a)) => bench_params::params(a),
    }
}
