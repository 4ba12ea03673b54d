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
    /// filecoin-proofs' own seal_commit_phase2 on a C1 output (the baseline), timed.
    Baseline {
        #[arg(long)]
        c1: PathBuf,
        #[command(flatten)]
        id: Identity,
        #[command(flatten)]
        shape: ShapeArgs,
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCmd),
    /// Set up the 2KiB fixture, prove it through the engine, verify it, show the timeline.
    Demo {
        #[command(flatten)]
        shape: ShapeArgs,
    },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// cuzk's C2 against filecoin-proofs' seal_commit_phase2 on the same C1, each in its own
    /// child process (so peak RSS is each one's own), alternating, in one run.
    C2 {
        #[arg(long)]
        c1: PathBuf,
        #[command(flatten)]
        id: Identity,
        #[command(flatten)]
        shape: ShapeArgs,
        /// Rounds (each round runs both).
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// Write the results as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

/// Peak resident set size of this process (VmHWM), bytes.
fn peak_rss() -> u64 {
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
fn print_result_line(what: &str, wall_ms: f64, proof_len: usize) {
    println!("RESULT {what} wall_ms={wall_ms:.1} peak_rss={} proof_bytes={proof_len}", peak_rss());
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
            print_result_line("cuzk", out.wall_ms, out.proof.len());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Baseline { c1, id, shape, output } => {
            let bytes = read(&c1)?;
            let parsed = porep::parse_c1(&bytes)?;
            fixture::apply_fixture_tables(parsed.c1.registered_proof, shape.shape())?;
            let t = Instant::now();
            let proof = fixture::baseline_c2(&serde_json::to_vec(&parsed.c1).expect("serializable"), id.prover_id()?, id.sector_id)?;
            let wall_ms = t.elapsed().as_secs_f64() * 1e3;
            if let Some(o) = output {
                std::fs::write(&o, &proof).map_err(|e| Error::invalid_argument(format!("cannot write {}: {e}", o.display())))?;
            }
            print_result_line("filecoin-proofs", wall_ms, proof.len());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench(BenchCmd::C2 { c1, id, shape, runs, json }) => bench_c2(&c1, &id, shape, runs, json),
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

#[derive(serde::Serialize, Default, Clone)]
struct Sample {
    wall_ms: f64,
    peak_rss: u64,
}

fn parse_result(stdout: &str) -> Option<Sample> {
    let line = stdout.lines().rev().find(|l| l.starts_with("RESULT "))?;
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
            .map(str::to_owned)
    };
    Some(Sample {
        wall_ms: field("wall_ms")?.parse().ok()?,
        peak_rss: field("peak_rss")?.parse().ok()?,
    })
}

fn run_child(args: &[String]) -> Result<Sample, Error> {
    let exe = std::env::current_exe().map_err(|e| Error::internal(format!("current_exe: {e}")))?;
    let t = Instant::now();
    let out = std::process::Command::new(exe)
        .args(args)
        .output()
        .map_err(|e| Error::internal(format!("cannot run child: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(Error::internal(format!(
            "child {:?} failed ({}): {}{}",
            args.first(),
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let mut s = parse_result(&stdout).ok_or_else(|| Error::internal(format!("no RESULT line in: {stdout}")))?;
    // Process wall time (includes parameter loading), which is what a caller waits for.
    s.wall_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok(s)
}

fn bench_c2(c1: &PathBuf, id: &Identity, shape: ShapeArgs, runs: usize, json: Option<PathBuf>) -> Result<ExitCode, Error> {
    let pid = hex::encode(id.prover_id()?);
    let dir = tempfile::tempdir().map_err(|e| Error::internal(format!("tempdir: {e}")))?;
    let common = |cmd: &str, out: &str| -> Vec<String> {
        let mut v: Vec<String> = vec![
            cmd.into(),
            "--c1".into(),
            c1.display().to_string(),
            "--sector-id".into(),
            id.sector_id.to_string(),
            "--prover-id".into(),
            pid.clone(),
            "-o".into(),
            dir.path().join(out).display().to_string(),
        ];
        if shape.partitions != 0 {
            v.extend(["--partitions".into(), shape.partitions.to_string()]);
        }
        if shape.layers != 0 {
            v.extend(["--layers".into(), shape.layers.to_string()]);
        }
        v
    };
    let (mut ours, mut theirs) = (vec![], vec![]);
    for round in 0..runs {
        eprintln!("round {}/{runs}: filecoin-proofs seal_commit_phase2 ...", round + 1);
        theirs.push(run_child(&common("baseline", "baseline.proof"))?);
        eprintln!("round {}/{runs}: cuzk ...", round + 1);
        ours.push(run_child(&common("prove", "cuzk.proof"))?);
    }
    let mean = |v: &[Sample]| v.iter().map(|s| s.wall_ms).sum::<f64>() / v.len() as f64;
    let peak = |v: &[Sample]| v.iter().map(|s| s.peak_rss).max().unwrap_or(0);
    let (a, b) = (mean(&ours), mean(&theirs));
    println!("| prover | wall s (mean of {runs}) | peak RSS MiB |");
    println!("|---|---|---|");
    println!("| filecoin-proofs seal_commit_phase2 | {:.1} | {} |", b / 1e3, peak(&theirs) >> 20);
    println!("| cuzk (CPU backend) | {:.1} | {} |", a / 1e3, peak(&ours) >> 20);
    println!("speed-up (filecoin-proofs wall / cuzk wall): {:.2}x", b / a);
    if let Some(j) = json {
        let v = serde_json::json!({"runs": runs, "cuzk": ours, "filecoin_proofs": theirs, "speedup": b / a});
        std::fs::write(&j, serde_json::to_vec_pretty(&v).expect("json"))
            .map_err(|e| Error::invalid_argument(format!("cannot write {}: {e}", j.display())))?;
    }
    Ok(ExitCode::SUCCESS)
}
