//! `cuzk`: prove, verify, make fixtures, demo.

use std::{
    path::PathBuf,
    process::ExitCode,
    sync::{Arc, Mutex},
    time::Instant,
};

use clap::{Args, Parser, Subcommand};
#[path = "../../tools/mod.rs"]
mod tools;

use cuzk::{
    engine::{self, Config, Engine, JobOutput, JobRequest},
    porep::{self, FixtureShape},
    timeline::{self, Event},
    Error, Status,
};
use tools::{
    analysis,
    fixture::{self, FixtureSpec},
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
    #[arg(
        long,
        conflicts_with = "prover_id",
        required_unless_present = "prover_id"
    )]
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

/// The job a command works on: a C1 output, whose sector it is, and its shape.
#[derive(Args, Clone)]
struct JobArgs {
    /// C1 output file (raw JSON or Commit2In envelope).
    #[arg(long)]
    c1: PathBuf,
    #[command(flatten)]
    id: Identity,
    #[command(flatten)]
    shape: ShapeArgs,
}

#[derive(Subcommand)]
enum Cmd {
    /// Prove a C1 output (raw JSON or Commit2In envelope) and write the proof bytes.
    Prove {
        #[command(flatten)]
        job: JobArgs,
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
        #[command(flatten)]
        job: JobArgs,
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
        #[command(flatten)]
        job: JobArgs,
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCmd),
    /// Analyse a timeline (TIMELINE log lines or a JSON event dump): event table, per-partition
    /// durations, prover busy %, classified idle gaps, synthesis concurrency, SVG waterfall.
    Waterfall {
        file: PathBuf,
        /// SVG output.
        #[arg(long, default_value = "cuzk-waterfall.svg")]
        svg: PathBuf,
        /// Also print the full event table.
        #[arg(long)]
        events: bool,
        /// Write the analysis as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Check this host's provers: prove a small synthetic circuit on each GPU the engine would
    /// use (CUZK_DEVICES) and on the CPU, verify every proof, print the times.
    Selftest {
        /// Constraints in the synthetic circuit.
        #[arg(long, default_value_t = 1 << 16)]
        constraints: usize,
        /// Devices as in CUZK_DEVICES (auto, cpu, N).
        #[arg(long, default_value = "auto")]
        devices: String,
    },
    /// Set up the 2KiB fixture, prove it through the engine, verify it, show the timeline.
    Demo {
        #[command(flatten)]
        shape: ShapeArgs,
    },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// A stream of COUNT proofs with at most CONCURRENCY in flight through one engine: per-proof
    /// times, proofs per minute, prover busy %, idle gaps, peak RSS, a waterfall SVG and a JSON
    /// summary; with --baseline also filecoin-proofs' seal_commit_phase2 on the same inputs.
    Batch {
        #[arg(long)]
        c1: PathBuf,
        /// Sector number (default 1, the fixtures' sector).
        #[arg(long, default_value_t = 1)]
        sector_id: u64,
        /// Miner actor id (default 1000, the fixtures' miner).
        #[arg(long, default_value_t = 1000)]
        miner_id: u64,
        #[command(flatten)]
        shape: ShapeArgs,
        /// Proofs to make.
        #[arg(short = 'c', long, default_value_t = 4)]
        count: usize,
        /// Proofs in flight at once.
        #[arg(short = 'j', long, default_value_t = 2)]
        concurrency: usize,
        /// Synthesis workers (0: automatic).
        #[arg(long, default_value_t = 0)]
        synthesis_workers: usize,
        /// Synthesized partitions that may wait for a prover (0: automatic).
        #[arg(long, default_value_t = 0)]
        lookahead: usize,
        /// Also run filecoin-proofs' seal_commit_phase2 COUNT times, CONCURRENCY at once.
        #[arg(long)]
        baseline: bool,
        /// Also run an external incumbent build (bench/fp-baseline) as LABEL=PATH, after cuzk,
        /// with the same inputs, count and concurrency; repeatable.
        #[arg(long = "baseline-bin", value_name = "LABEL=PATH")]
        baseline_bins: Vec<String>,
        /// Proofs in flight for the external incumbent runs (default: CONCURRENCY). The
        /// incumbent as deployed runs one at a time: 1.
        #[arg(long)]
        baseline_jobs: Option<usize>,
        /// Proofs for the external incumbent runs (default: COUNT).
        #[arg(long)]
        baseline_count: Option<usize>,
        /// Provers as in CUZK_DEVICES: auto, cpu, or a number of GPUs.
        #[arg(long, default_value = "")]
        devices: String,
        /// Partitions per GPU call (0: CUZK_GPU_BATCH or the default).
        #[arg(long, default_value_t = 0)]
        gpu_batch: usize,
        /// Take device D out of service once K proofs are done (D@K), to show its partitions
        /// finishing elsewhere.
        #[arg(long, value_name = "D@K")]
        disable_device: Option<String>,
        /// Waterfall SVG output.
        #[arg(long, default_value = "cuzk-waterfall.svg")]
        svg: PathBuf,
        /// JSON summary output.
        #[arg(long, default_value = "cuzk-bench.json")]
        json: PathBuf,
        /// TIMELINE log output (for `cuzk waterfall` later).
        #[arg(long)]
        timeline: Option<PathBuf>,
    },
    /// One prover call with nothing else running: synthesizes a few partitions of the C1 once,
    /// then proves them in calls of each width (REPS times each) on the selected devices,
    /// verifying every proof; prints call and per-partition times and the host CPU time used.
    Calls {
        #[command(flatten)]
        job: JobArgs,
        /// Provers as in CUZK_DEVICES: auto, cpu, or a number of GPUs.
        #[arg(long, default_value = "auto")]
        devices: String,
        /// Partitions per call, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        widths: Vec<usize>,
        /// Calls per width.
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Write the results as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// cuzk's C2 against filecoin-proofs' seal_commit_phase2 on the same C1, each in its own
    /// child process (so peak RSS is each one's own), alternating, in one run.
    C2 {
        #[command(flatten)]
        job: JobArgs,
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
    println!(
        "RESULT {what} wall_ms={wall_ms:.1} peak_rss={} proof_bytes={proof_len}",
        peak_rss()
    );
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    // filecoin-proofs reads FIL_PROOFS_PARAMETER_CACHE once; set it before any proofs call so
    // that its verify_seal and cuzk read the same directory.
    let params_dir = cli
        .params_dir
        .clone()
        .unwrap_or_else(engine::default_params_dir);
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
    std::fs::read(path)
        .map_err(|e| Error::invalid_argument(format!("cannot read {}: {e}", path.display())))
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
            job: JobArgs { c1, id, shape },
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
            std::fs::write(&output, &out.proof).map_err(|e| {
                Error::invalid_argument(format!("cannot write {}: {e}", output.display()))
            })?;
            print_report(&out);
            print_result_line("cuzk", out.wall_ms, out.proof.len());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Baseline {
            job: JobArgs { c1, id, shape },
            output,
        } => {
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
                std::fs::write(&o, &proof).map_err(|e| {
                    Error::invalid_argument(format!("cannot write {}: {e}", o.display()))
                })?;
            }
            print_result_line("filecoin-proofs", wall_ms, proof.len());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench(BenchCmd::C2 { job, runs, json }) => bench_c2(&job, runs, json),
        Cmd::Bench(BenchCmd::Calls {
            job: JobArgs { c1, id, shape },
            devices,
            widths,
            reps,
            json,
        }) => {
            let rep = tools::calls::run(&tools::calls::CallsSpec {
                c1: read(&c1)?,
                prover_id: id.prover_id()?,
                sector_id: id.sector_id,
                shape: shape.shape(),
                devices,
                widths,
                reps,
                params_dir,
            })?;
            println!(
                "{} ({}): {} constraints per partition, {} partitions synthesized in {:.0} ms",
                rep.backend,
                rep.devices.join(", "),
                rep.constraints,
                rep.synthesized,
                rep.synth_ms
            );
            println!("width  devices  calls  call_ms(min)  call_ms(mean)  ms/partition  host_cpu_ms/partition");
            for r in &rep.rows {
                println!(
                    "{:>5}  {:>7}  {:>5}  {:>12.0}  {:>13.0}  {:>12.1}  {:>21.0}",
                    r.width,
                    r.devices_used,
                    r.calls,
                    r.call_ms_min,
                    r.call_ms_mean,
                    r.ms_per_partition,
                    r.cpu_ms_per_partition
                );
            }
            println!(
                "all {} proofs verified",
                rep.rows.iter().map(|r| r.width * r.calls).sum::<usize>()
            );
            if let Some(path) = json {
                let text = serde_json::to_string_pretty(&rep)
                    .map_err(|e| Error::internal(format!("json: {e}")))?;
                std::fs::write(&path, text).map_err(|e| {
                    Error::invalid_argument(format!("cannot write {}: {e}", path.display()))
                })?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Verify {
            job: JobArgs { c1, id, shape },
            proof,
        } => {
            let bytes = read(&c1)?;
            let proof = read(&proof)?;
            let parsed = porep::parse_c1(&bytes)?;
            fixture::apply_fixture_tables(parsed.c1.registered_proof, shape.shape())?;
            let valid =
                cuzk::porep::verify::verify_seal(&bytes, id.prover_id()?, id.sector_id, &proof)
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
        Cmd::Setup { sector_size, shape } => {
            let size = fixture::parse_sector_size(&sector_size)?;
            let spec = FixtureSpec::new(fixture::v1_1_proof(size)?, shape.shape());
            eprintln!(
                "cuzk setup {}: parameters in {} (generated once, cached)",
                spec.name(),
                params_dir.display()
            );
            let report = fixture::setup(&spec, &params_dir)?;
            println!(
                "{}",
                serde_json::to_string_pretty(&report).expect("serializable")
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Demo { shape } => demo(params_dir, shape.shape()),
        Cmd::Waterfall {
            file,
            svg,
            events,
            json,
        } => {
            let text = std::fs::read_to_string(&file).map_err(|e| {
                Error::invalid_argument(format!("cannot read {}: {e}", file.display()))
            })?;
            let evs = analysis::parse_any(&text).map_err(Error::invalid_input)?;
            if evs.is_empty() {
                return Err(Error::invalid_input(format!(
                    "no timeline events in {}",
                    file.display()
                )));
            }
            if events {
                print!("{}", analysis::event_table(&evs));
                println!();
            }
            let a = analysis::analyze(&evs);
            print!("{}", analysis::report(&a));
            let picture =
                analysis::waterfall_svg(&a, &format!("cuzk timeline: {}", file.display()));
            analysis::check_svg(&picture).map_err(Error::internal)?;
            write_file(&svg, picture.as_bytes())?;
            println!("waterfall: {}", svg.display());
            if let Some(j) = json {
                write_file(&j, &serde_json::to_vec_pretty(&a).expect("json"))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Selftest {
            constraints,
            devices,
        } => {
            let dir = tempfile::tempdir().map_err(|e| Error::internal(format!("temp dir: {e}")))?;
            let rep = tools::selftest::run(constraints, &devices, dir.path())?;
            println!(
                "self-test circuit: {} constraints (parameters generated in {:.1} s)",
                rep.constraints,
                rep.params_ms / 1e3
            );
            for r in &rep.results {
                println!(
                    "  {:<8} prove {:>9.1} ms (GPU call {:.1} ms)  verified: {}",
                    r.backend,
                    r.prove_ms,
                    r.stages.gpu_ms,
                    if r.verified { "yes" } else { "NO" }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench(BenchCmd::Batch {
            c1,
            sector_id,
            miner_id,
            shape,
            count,
            concurrency,
            synthesis_workers,
            lookahead,
            baseline,
            baseline_bins,
            baseline_jobs,
            baseline_count,
            devices,
            gpu_batch,
            disable_device,
            svg,
            json,
            timeline,
        }) => bench_batch(BatchArgs {
            baseline_jobs,
            baseline_count,
            devices,
            gpu_batch,
            disable_device,
            lookahead,
            c1,
            sector_id,
            prover_id: porep::prover_id_from_miner(miner_id),
            miner_id,
            shape: shape.shape(),
            count,
            concurrency,
            synthesis_workers,
            baseline,
            baseline_bins,
            svg,
            json,
            timeline,
            params_dir,
        }),
    }
}

fn demo(params_dir: PathBuf, shape: FixtureShape) -> Result<ExitCode, Error> {
    let spec = FixtureSpec::new(fixture::v1_1_proof(2048)?, shape);
    println!(
        "== 1. fixture {} (params cached in {})",
        spec.name(),
        params_dir.display()
    );
    let t = Instant::now();
    let rep = fixture::setup(&spec, &params_dir)?;
    println!(
        "   C1 output {} ({}), params {} ({:.1} s)",
        rep.c1_path.display(),
        if rep.seal_seconds > 0.01 {
            "sealed now"
        } else {
            "cached"
        },
        if rep.params_generated {
            "generated"
        } else {
            "cached"
        },
        t.elapsed().as_secs_f64()
    );
    let c1 = read(&rep.c1_path)?;

    println!(
        "== 2. prove through the engine (sector {}, miner {})",
        spec.sector_id, spec.miner_id
    );
    let engine = Engine::start(Config {
        params_dir: params_dir.clone(),
        ..Config::default()
    })?;
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let ev2 = events.clone();
    engine.add_timeline_sink(Arc::new(move |e| {
        ev2.lock().expect("events").push(e.clone())
    }));
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
    let valid =
        cuzk::porep::verify::verify_seal(&c1, spec.prover_id(), spec.sector_id, &out.proof)?;
    println!("   verify_seal: {}", if valid { "true" } else { "FALSE" });
    Ok(if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
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
    let mut s = parse_result(&stdout)
        .ok_or_else(|| Error::internal(format!("no RESULT line in: {stdout}")))?;
    // Process wall time (includes parameter loading), which is what a caller waits for.
    s.wall_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok(s)
}

fn bench_c2(job: &JobArgs, runs: usize, json: Option<PathBuf>) -> Result<ExitCode, Error> {
    let JobArgs { c1, id, shape } = job;
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
        eprintln!(
            "round {}/{runs}: filecoin-proofs seal_commit_phase2 ...",
            round + 1
        );
        theirs.push(run_child(&common("baseline", "baseline.proof"))?);
        eprintln!("round {}/{runs}: cuzk ...", round + 1);
        ours.push(run_child(&common("prove", "cuzk.proof"))?);
    }
    let mean = |v: &[Sample]| v.iter().map(|s| s.wall_ms).sum::<f64>() / v.len() as f64;
    let peak = |v: &[Sample]| v.iter().map(|s| s.peak_rss).max().unwrap_or(0);
    let (a, b) = (mean(&ours), mean(&theirs));
    println!("| prover | wall s (mean of {runs}) | peak RSS MiB |");
    println!("|---|---|---|");
    println!(
        "| filecoin-proofs seal_commit_phase2 | {:.1} | {} |",
        b / 1e3,
        peak(&theirs) >> 20
    );
    println!(
        "| cuzk (CPU backend) | {:.1} | {} |",
        a / 1e3,
        peak(&ours) >> 20
    );
    println!("speed-up (filecoin-proofs wall / cuzk wall): {:.2}x", b / a);
    if let Some(j) = json {
        let v = serde_json::json!({"runs": runs, "cuzk": ours, "filecoin_proofs": theirs, "speedup": b / a});
        std::fs::write(&j, serde_json::to_vec_pretty(&v).expect("json"))
            .map_err(|e| Error::invalid_argument(format!("cannot write {}: {e}", j.display())))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn write_file(path: &PathBuf, data: &[u8]) -> Result<(), Error> {
    std::fs::write(path, data)
        .map_err(|e| Error::invalid_argument(format!("cannot write {}: {e}", path.display())))
}

struct BatchArgs {
    lookahead: usize,
    c1: PathBuf,
    sector_id: u64,
    prover_id: [u8; 32],
    miner_id: u64,
    shape: FixtureShape,
    count: usize,
    concurrency: usize,
    synthesis_workers: usize,
    baseline: bool,
    baseline_bins: Vec<String>,
    baseline_jobs: Option<usize>,
    baseline_count: Option<usize>,
    devices: String,
    gpu_batch: usize,
    disable_device: Option<String>,
    svg: PathBuf,
    json: PathBuf,
    timeline: Option<PathBuf>,
    params_dir: PathBuf,
}

#[derive(serde::Serialize, Clone, Default)]
struct ProofTimes {
    index: usize,
    job: u64,
    wall_ms: f64,
    queue_ms: f64,
    synth_ms: f64,
    prove_ms: f64,
    /// GPU call time summed over partitions (GPU backends).
    gpu_ms: f64,
    verified: bool,
}

fn progress(count: usize, what: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new(count as u64);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:>16} [{bar:40}] {pos}/{len} proofs, {elapsed_precise} (eta {eta})",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// Runs `count` tasks with at most `concurrency` at once; returns their results in order.
fn run_concurrently<T: Send>(
    count: usize,
    concurrency: usize,
    task: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..count).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..concurrency.max(1).min(count.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let r = task(i);
                results.lock().expect("results")[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .expect("results")
        .into_iter()
        .map(|r| r.expect("every task ran"))
        .collect()
}

fn bench_batch(a: BatchArgs) -> Result<ExitCode, Error> {
    let c1 = read(&a.c1)?;
    let parsed = porep::parse_c1(&c1)?;
    // For filecoin-proofs (baseline, verify_seal) in this process; the engine does not read it.
    fixture::apply_fixture_tables(parsed.c1.registered_proof, a.shape)?;
    let engine = Engine::start(Config {
        synthesis_workers: a.synthesis_workers,
        synthesis_lookahead: a.lookahead,
        params_dir: a.params_dir.clone(),
        timeline_file: a.timeline.clone(),
        devices: a.devices.clone(),
        gpu_batch: a.gpu_batch,
        ..Config::default()
    })?;
    let disable = match &a.disable_device {
        None => None,
        Some(spec) => {
            let (d, k) = spec
                .split_once('@')
                .and_then(|(d, k)| Some((d.parse::<usize>().ok()?, k.parse::<usize>().ok()?)))
                .ok_or_else(|| {
                    Error::invalid_argument(format!("--disable-device wants D@K, not {spec:?}"))
                })?;
            Some((d, k))
        }
    };
    let done = std::sync::atomic::AtomicUsize::new(0);
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let ev = events.clone();
    engine.add_timeline_sink(Arc::new(move |e| {
        ev.lock().expect("events").push(e.clone())
    }));
    let req = JobRequest {
        c1: c1.clone(),
        sector_id: a.sector_id,
        prover_id: a.prover_id,
        priority: 0,
        fixture: a.shape,
    };
    // Load the parameters before the clock starts (filecoin-proofs maps its file lazily).
    let warm = Instant::now();
    engine.preload(&req)?;
    let warm_s = warm.elapsed().as_secs_f64();

    eprintln!(
        "cuzk bench batch: {} proofs, {} in flight, {} synthesis workers, {} (parameters loaded in {:.1} s)",
        a.count,
        a.concurrency,
        engine.config().synthesis_workers,
        a.c1.display(),
        warm_s
    );
    let pb = progress(a.count, "cuzk");
    let t0 = Instant::now();
    let results = run_concurrently(a.count, a.concurrency, |i| {
        let t = Instant::now();
        let r = engine.prove(req.clone());
        pb.inc(1);
        let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if let Some((d, k)) = disable {
            if n == k {
                match engine.set_device_enabled(d, false) {
                    Ok(()) => eprintln!("device {d} taken out of service after {k} proofs"),
                    Err(e) => eprintln!("cannot take device {d} out of service: {e}"),
                }
            }
        }
        r.map(|o| (i, t.elapsed().as_secs_f64() * 1e3, o))
    });
    let total_s = t0.elapsed().as_secs_f64();
    pb.finish();
    let status = engine.status();
    let engine_gpu_batch = engine.config().gpu_batch;
    engine.shutdown();

    let mut times = Vec::new();
    let mut failed = 0;
    for r in results {
        match r {
            Ok((i, wall_ms, out)) => {
                let valid =
                    cuzk::porep::verify::verify_seal(&c1, a.prover_id, a.sector_id, &out.proof)
                        .unwrap_or(false);
                times.push(ProofTimes {
                    index: i,
                    job: 0,
                    wall_ms,
                    queue_ms: out
                        .partitions
                        .iter()
                        .map(|p| p.queue_ms)
                        .fold(f64::INFINITY, f64::min),
                    synth_ms: out.partitions.iter().map(|p| p.synth_ms).sum(),
                    prove_ms: out.partitions.iter().map(|p| p.prove_ms).sum(),
                    gpu_ms: out.partitions.iter().map(|p| p.stages.gpu_ms).sum(),
                    verified: valid && out.verified,
                });
            }
            Err(e) => {
                failed += 1;
                eprintln!("proof failed: {e}");
            }
        }
    }
    let evs = events.lock().expect("events").clone();
    let an = analysis::analyze(&evs);
    println!("\n proof   wall_s  queue_s  synth_s(sum)  prove_s(sum)  verified");
    for t in &times {
        println!(
            "{:>6}  {:>7.2}  {:>7.2}  {:>12.2}  {:>12.2}  {}",
            t.index,
            t.wall_ms / 1e3,
            t.queue_ms / 1e3,
            t.synth_ms / 1e3,
            t.prove_ms / 1e3,
            if t.verified { "yes" } else { "NO" }
        );
    }
    let ppm = times.len() as f64 / total_s * 60.0;
    let parts = an.partitions.len();
    let gpu_sum: f64 = times.iter().map(|t| t.gpu_ms).sum();
    if gpu_sum > 0.0 && parts > 0 {
        println!(
            "\nGPU call holding a partition: mean {:.0} ms (a call proves a batch; prove incl. pickup {:.0} ms); synthesis per partition {:.0} ms",
            gpu_sum / parts as f64,
            times.iter().map(|t| t.prove_ms).sum::<f64>() / parts as f64,
            times.iter().map(|t| t.synth_ms).sum::<f64>() / parts as f64,
        );
    }
    println!();
    print!(
        "{}",
        analysis::report(&an).split("\n\n").nth(2).unwrap_or("")
    );
    println!(
        "cuzk: {} proofs in {:.1} s = {:.2} proofs/min; peak RSS {} MiB; memory reserved peak {} MiB of {} MiB budget",
        times.len(),
        total_s,
        ppm,
        peak_rss() >> 20,
        status.memory_peak >> 20,
        status.memory_budget >> 20
    );
    for (i, d) in status.devices.iter().enumerate() {
        println!(
            "device {i} {}: {} partitions proved, {}",
            d.name,
            d.partitions_proved,
            if d.enabled {
                "in service"
            } else {
                "out of service"
            }
        );
    }
    let svg_text = analysis::waterfall_svg(
        &an,
        &format!(
            "cuzk bench batch -c {} -j {}: {:.2} proofs/min",
            a.count, a.concurrency, ppm
        ),
    );
    write_file(&a.svg, svg_text.as_bytes())?;
    println!("waterfall: {}", a.svg.display());

    let mut baseline = serde_json::Value::Null;
    if a.baseline {
        let pb = progress(a.count, "filecoin-proofs");
        let json_c1 = serde_json::to_vec(&parsed.c1).expect("serializable");
        let t0 = Instant::now();
        let res = run_concurrently(a.count, a.concurrency, |_| {
            let t = Instant::now();
            let r = fixture::baseline_c2(&json_c1, a.prover_id, a.sector_id);
            pb.inc(1);
            r.map(|_| t.elapsed().as_secs_f64() * 1e3)
        });
        let base_s = t0.elapsed().as_secs_f64();
        pb.finish();
        let ok: Vec<f64> = res.into_iter().collect::<Result<_, _>>()?;
        let base_ppm = ok.len() as f64 / base_s * 60.0;
        println!(
            "filecoin-proofs seal_commit_phase2: {} proofs in {:.1} s = {:.2} proofs/min (mean wall {:.1} s)",
            ok.len(),
            base_s,
            base_ppm,
            ok.iter().sum::<f64>() / ok.len().max(1) as f64 / 1e3
        );
        println!(
            "throughput ratio cuzk / filecoin-proofs: {:.2}x",
            ppm / base_ppm
        );
        baseline = serde_json::json!({"proofs": ok.len(), "seconds": base_s, "proofs_per_min": base_ppm, "wall_ms": ok, "ratio": ppm / base_ppm});
    }
    let mut externals = Vec::new();
    for spec in &a.baseline_bins {
        let (label, path) = spec.split_once('=').ok_or_else(|| {
            Error::invalid_argument(format!("--baseline-bin wants LABEL=PATH, not {spec:?}"))
        })?;
        eprintln!("running {label}: {path}");
        let out = std::process::Command::new(path)
            .args(["--c1", &a.c1.display().to_string()])
            .args([
                "--sector-id",
                &a.sector_id.to_string(),
                "--miner-id",
                &a.miner_id.to_string(),
            ])
            .args([
                "--partitions",
                &a.shape.partitions.to_string(),
                "--layers",
                &a.shape.layers.to_string(),
            ])
            .args(["-c", &a.baseline_count.unwrap_or(a.count).to_string()])
            .args(["-j", &a.baseline_jobs.unwrap_or(a.concurrency).to_string()])
            .args(["--label", label])
            .stderr(std::process::Stdio::inherit())
            .output()
            .map_err(|e| Error::internal(format!("cannot run {path}: {e}")))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value = stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .ok_or_else(|| {
                Error::internal(format!(
                    "{label} printed no summary ({}): {stdout}",
                    out.status
                ))
            })?;
        let base_ppm = v["proofs_per_min"].as_f64().unwrap_or(0.0);
        println!(
            "{label}: {} proofs ({} failed) in {:.1} s = {:.2} proofs/min, peak RSS {} MiB; cuzk / {label}: {:.2}x",
            v["proofs"],
            v["failures"],
            v["wall_s"].as_f64().unwrap_or(0.0),
            base_ppm,
            v["peak_rss_bytes"].as_u64().unwrap_or(0) >> 20,
            ppm / base_ppm
        );
        if !out.status.success() {
            failed += 1;
        }
        externals.push(serde_json::json!({"label": label, "result": v, "ratio": ppm / base_ppm}));
    }
    let summary = serde_json::json!({
        "devices_setting": a.devices, "gpu_batch": engine_gpu_batch, "disable_device": a.disable_device,
        "c1": a.c1, "count": a.count, "concurrency": a.concurrency,
        "synthesis_workers": a.synthesis_workers, "synthesis_lookahead": a.lookahead,
        "seconds": total_s, "proofs_per_min": ppm, "failed": failed,
        "peak_rss_bytes": peak_rss(),
        "memory_reserved_peak_bytes": status.memory_peak, "memory_budget_bytes": status.memory_budget,
        "devices": an.devices, "gaps_ms": {
            "start_up": an.gap_ms(analysis::GapClass::StartUp),
            "within_proof": an.gap_ms(analysis::GapClass::WithinProof),
            "cross_proof": an.gap_ms(analysis::GapClass::CrossProof),
            "drain": an.gap_ms(analysis::GapClass::Drain),
        },
        "max_synth_concurrency": an.max_synth_concurrency,
        "mean_synth_concurrency": an.mean_synth_concurrency,
        "proofs": times, "baseline": baseline, "external_baselines": externals,
        "prover_devices": status.devices.iter().map(|d| d.name.clone()).collect::<Vec<_>>(),
    });
    write_file(&a.json, &serde_json::to_vec_pretty(&summary).expect("json"))?;
    println!("summary: {}", a.json.display());
    let all_ok = failed == 0 && times.iter().all(|t| t.verified);
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
