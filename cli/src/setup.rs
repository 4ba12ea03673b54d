//! `cuzk setup` (test fixtures) and `cuzk demo`.

use std::{
    path::PathBuf,
    process::ExitCode,
    sync::{Arc, Mutex},
    time::Instant,
};

use clap::Args;
use cuzk::{
    engine::{Config, Engine, JobRequest},
    porep::FixtureShape,
    timeline::{self, Event},
    Error,
};

use crate::{
    print_report, read,
    tools::fixture::{self, FixtureSpec},
    ShapeArgs,
};

/// Make test fixtures: random Groth16 params (cached) and a sealed sector's C1 output.
#[derive(Args)]
pub struct SetupArgs {
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    #[command(flatten)]
    pub shape: ShapeArgs,
}

pub fn setup(args: SetupArgs, params_dir: PathBuf) -> Result<ExitCode, Error> {
    let SetupArgs { sector_size, shape } = args;
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

/// Set up the 2KiB fixture, prove it through the engine, verify it, show the timeline.
#[derive(Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
}

pub fn demo(args: DemoArgs, params_dir: PathBuf) -> Result<ExitCode, Error> {
    let DemoArgs { shape } = args;
    run_demo(params_dir, shape.shape())
}

fn run_demo(params_dir: PathBuf, shape: FixtureShape) -> Result<ExitCode, Error> {
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
    let req = JobRequest {
        c1: c1.clone(),
        sector_id: spec.sector_id,
        prover_id: spec.prover_id(),
        priority: 0,
        fixture: shape,
    };
    // The parameters and the circuit's recording made ready first (loaded, or recorded once
    // and saved), as a node's first job finds them: the proof then takes the engine's default
    // path (native witnesses under the recording), which its SYNTH_END events name.
    let t = Instant::now();
    engine.preload(&req)?;
    let st = engine.status();
    println!(
        "   parameters and recording ready in {:.1} s (recording {})",
        t.elapsed().as_secs_f64(),
        if st.pce_loaded > 0 {
            "loaded from disk"
        } else if st.pce_recorded > 0 {
            "recorded and saved"
        } else {
            "not used"
        }
    );
    let out = engine.prove(req)?;
    engine.shutdown()?;
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
