//! `cuzk`: prove, verify, make fixtures, demo.

use std::{
    path::PathBuf,
    process::ExitCode,
    sync::{Arc, Mutex},
    time::Instant,
};

use clap::{Args, Parser, Subcommand};
use cuzk::{
    engine::{self, Config, Engine, JobOutput, JobRequest},
    fixture::{self, FixtureSpec},
    porep::{self, FixtureShape},
    timeline::{self, Event},
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
struct Identity {
    /// Sector number.
    #[arg(long)]
    sector_id: u64,
    /// Miner actor id (the prover id is its LEB128 varint, zero-padded).
    #[arg(long, conflicts_with = "prover_id", required_unless_present = "prover_id")]
    miner_id: Option<u64>,
    /// Prover id as 64 hex digits.
    #[arg(long)]
    prover_id: Option<String>,
}

impl Identity {
    fn prover_id(&self) -> Result<[u8; 32], Error> {
        match (&self.prover_id, self.miner_id) {
            (Some(h), _) => porep::parse_prover_id_hex(h),
            (None, Some(m)) => Ok(porep::prover_id_from_miner(m)),
            (None, None) => Err(Error::invalid_argument("give --miner-id or --prover-id")),
        }
    }
}

#[derive(Args, Clone, Copy, Default)]
struct ShapeArgs {
    /// Fixture shape: partition count for a test sector size (test fixtures only).
    #[arg(long, default_value_t = 0)]
    partitions: usize,
    /// Fixture shape: layer count for a test sector size (test fixtures only).
    #[arg(long, default_value_t = 0)]
    layers: usize,
}

impl ShapeArgs {
    fn shape(&self) -> FixtureShape {
        FixtureShape {
            partitions: self.partitions,
            layers: self.layers,
        }
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Prove a C1 output (raw JSON or Commit2In envelope) and write the proof bytes.
    Prove {
        #[arg(long)]
        c1: PathBuf,
        #[command(flatten)]
        id: Identity,
        #[command(flatten)]
        shape: ShapeArgs,
        #[arg(short = 'o', long)]
        output: PathBuf,
        /// Synthesis workers (0: automatic).
        #[arg(long, default_value_t = 0)]
        synthesis_workers: usize,
        /// Skip the self-check (never do this in production).
        #[arg(long)]
        no_self_check: bool,
        /// Print TIMELINE lines to stderr.
        #[arg(long)]
        timeline: bool,
    },
    /// Verify a proof with filecoin-proofs' verify_seal; exit code 0 only when valid.
    Verify {
        #[arg(long)]
        c1: PathBuf,
        #[command(flatten)]
        id: Identity,
        #[command(flatten)]
        shape: ShapeArgs,
        #[arg(long)]
        proof: PathBuf,
    },
    /// Make test fixtures: random Groth16 params (cached) and a sealed sector's C1 output.
    Setup {
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        #[command(flatten)]
        shape: ShapeArgs,
    },
    /// Set up the 2KiB fixture, prove it through the engine, verify it, show the timeline.
    Demo {
        #[command(flatten)]
        shape: ShapeArgs,
    },
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    // filecoin-proofs reads FIL_PROOFS_PARAMETER_CACHE once; set it before any proofs call so
    // that its verify_seal and cuzk read the same directory.
    let params_dir = cli.params_dir.clone().unwrap_or_else(engine::default_params_dir);
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params_dir);
    match run(cli.cmd, params_dir) {
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

fn read(path: &PathBuf) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::invalid_argument(format!("cannot read {}: {e}", path.display())))
}

fn print_report(out: &JobOutput) {
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

fn run(cmd: Cmd, params_dir: PathBuf) -> Result<ExitCode, Error> {
    match cmd {
        Cmd::Prove {
            c1,
            id,
            shape,
            output,
            synthesis_workers,
            no_self_check,
            timeline,
        } => {
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
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Verify { c1, id, shape, proof } => {
            let bytes = read(&c1)?;
            let proof = read(&proof)?;
            let parsed = porep::parse_c1(&bytes)?;
            fixture::apply_fixture_tables(parsed.c1.registered_proof, shape.shape())?;
            let valid = fixture::verify_with_filecoin_proofs(&bytes, id.prover_id()?, id.sector_id, &proof)
                .unwrap_or_else(|e| {
                    eprintln!("cuzk: verify_seal: {e}");
                    false
                });
            println!("{}", if valid { "valid" } else { "INVALID" });
            Ok(if valid { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
        Cmd::Setup { sector_size, shape } => {
            let size = fixture::parse_sector_size(&sector_size)?;
            let spec = FixtureSpec::new(fixture::v1_1_proof(size)?, shape.shape());
            eprintln!("cuzk setup {}: parameters in {} (generated once, cached)", spec.name(), params_dir.display());
            let report = fixture::setup(&spec, &params_dir)?;
            println!("{}", serde_json::to_string_pretty(&report).expect("serializable"));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Demo { shape } => demo(params_dir, shape.shape()),
    }
}

fn demo(params_dir: PathBuf, shape: FixtureShape) -> Result<ExitCode, Error> {
    let spec = FixtureSpec::new(fixture::v1_1_proof(2048)?, shape);
    println!("== 1. fixture {} (params cached in {})", spec.name(), params_dir.display());
    let t = Instant::now();
    let rep = fixture::setup(&spec, &params_dir)?;
    println!(
        "   C1 output {} ({}), params {} ({:.1} s)",
        rep.c1_path.display(),
        if rep.seal_seconds > 0.01 { "sealed now" } else { "cached" },
        if rep.params_generated { "generated" } else { "cached" },
        t.elapsed().as_secs_f64()
    );
    let c1 = read(&rep.c1_path)?;

    println!("== 2. prove through the engine (sector {}, miner {})", spec.sector_id, spec.miner_id);
    let engine = Engine::start(Config {
        params_dir: params_dir.clone(),
        ..Config::default()
    })?;
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let ev2 = events.clone();
    engine.add_timeline_sink(Arc::new(move |e| ev2.lock().expect("events").push(e.clone())));
    let out = engine.prove(JobRequest {
        c1: c1.clone(),
        sector_id: spec.sector_id,
        prover_id: spec.prover_id(),
        priority: 0,
        fixture: shape,
    })?;
    engine.shutdown();
    print_report(&out);
    println!("== 3. timeline");
    for e in events.lock().expect("events").iter() {
        println!("   {}", timeline::log_line(e));
    }
    println!("== 4. verify with filecoin-proofs verify_seal");
    let valid = fixture::verify_with_filecoin_proofs(&c1, spec.prover_id(), spec.sector_id, &out.proof)?;
    println!("   verify_seal: {}", if valid { "true" } else { "FALSE" });
    Ok(if valid { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
