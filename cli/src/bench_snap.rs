//! `cuzk bench snap --snap DIR`: a stream of SnapDeals (sector update) proofs through one
//! engine: the first proof (which loads the update's parameters and recording) reported apart,
//! then COUNT proofs with CONCURRENCY in flight: s/proof, submit-to-proof p50/p99, each
//! partition's prover time and GPU stages. Every proof is checked by filecoin-proofs'
//! `verify_empty_sector_update_proof` (the parameter directory holds the update's .vk).

use std::{path::PathBuf, process::ExitCode, sync::Mutex, time::Instant};

use clap::Args;
use cuzk::{
    engine::{Config, Engine, JobOutput},
    Error,
};

use crate::{bench_post::quantile, tools::snap_fixture::SnapFixture};

#[derive(Args)]
pub struct SnapBenchArgs {
    /// A fixture directory (`cuzk fixture --kind snap`).
    #[arg(long)]
    pub snap: PathBuf,
    /// Proofs in the stream (after the first).
    #[arg(short = 'c', long, default_value_t = 4)]
    pub count: usize,
    /// Proofs in flight.
    #[arg(short = 'j', long, default_value_t = 2)]
    pub concurrency: usize,
    /// Provers as in CUZK_DEVICES: auto, cpu, or a number of GPUs.
    #[arg(long, default_value = "")]
    pub devices: String,
    /// The engine's memory budget in GiB (0: its own choice).
    #[arg(long, default_value_t = 0)]
    pub memory_budget_gib: u64,
    /// JSON summary output.
    #[arg(long, default_value = "cuzk-bench-snap.json")]
    pub json: PathBuf,
}

const STAGES: [&str; 8] = ["upload", "ntt", "h", "split", "l", "a", "b_g1", "b_g2"];

/// One proof: its wall time, its partitions' prover and synthesis times and GPU stages.
struct Sample {
    wall_ms: f64,
    out: JobOutput,
    verified: bool,
}

fn prove(engine: &Engine, f: &SnapFixture) -> Result<Sample, Error> {
    let req = f.request(0)?;
    let t = Instant::now();
    let id = engine.submit_snap(&req)?;
    let out = engine.await_job(id, None)?;
    let wall_ms = t.elapsed().as_secs_f64() * 1e3;
    let verified = out.verified
        && filecoin_proofs_api::update::verify_empty_sector_update_proof(
            req.proof,
            &out.proof,
            req.comm_r_old,
            req.comm_r_new,
            req.comm_d_new,
        )
        .unwrap_or(false);
    Ok(Sample {
        wall_ms,
        out,
        verified,
    })
}

pub fn snap(a: SnapBenchArgs, params_dir: PathBuf) -> Result<ExitCode, Error> {
    let f = SnapFixture::load(&a.snap)?;
    let engine = Engine::start(Config {
        params_dir,
        devices: a.devices.clone(),
        memory_budget: a.memory_budget_gib << 30,
        // A benchmark: random (`cuzk params gen`) sets of production sizes are accepted.
        allow_random_params: Some(true),
        ..Config::default()
    })?;
    let first = prove(&engine, &f)?;
    eprintln!(
        "cuzk bench snap: first proof (loads the parameters) {:.0} ms, {} partitions",
        first.wall_ms,
        first.out.partitions.len()
    );
    let next = std::sync::atomic::AtomicUsize::new(0);
    let samples: Mutex<Vec<Result<Sample, Error>>> = Mutex::new(Vec::new());
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..a.concurrency.max(1) {
            s.spawn(|| {
                while next.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < a.count {
                    let r = prove(&engine, &f);
                    samples.lock().expect("samples").push(r);
                }
            });
        }
    });
    let total_s = t0.elapsed().as_secs_f64();
    engine.shutdown()?;
    let samples = samples.into_inner().expect("samples");
    let failed = samples.iter().filter(|r| r.is_err()).count();
    let ok: Vec<&Sample> = samples.iter().filter_map(|r| r.as_ref().ok()).collect();
    let unverified = ok.iter().filter(|s| !s.verified).count() + usize::from(!first.verified);
    let parts: Vec<_> = ok.iter().flat_map(|s| &s.out.partitions).collect();
    let prove_ms: Vec<f64> = parts.iter().map(|p| p.prove_ms).collect();
    let synth_ms: Vec<f64> = parts.iter().map(|p| p.synth_ms).collect();
    let walls: Vec<f64> = ok.iter().map(|s| s.wall_ms).collect();
    let mut stages = [0.0f64; 8];
    for p in &parts {
        for (s, x) in stages.iter_mut().zip(p.stages.gpu_stages_ms) {
            *s += x / parts.len().max(1) as f64;
        }
    }
    let per_proof = total_s / ok.len().max(1) as f64;
    let med = |v: &[f64]| quantile(v, 0.5).unwrap_or(0.0);
    println!(
        "{} proofs ({} in flight) in {total_s:.1} s: {per_proof:.2} s/proof; submit-to-proof p50 {:.0} ms, p99 {:.0} ms",
        ok.len(),
        a.concurrency,
        med(&walls),
        quantile(&walls, 0.99).unwrap_or(0.0)
    );
    println!(
        "per partition: prover median {:.0} ms, synthesis median {:.0} ms; GPU stages (ms, mean): {}",
        med(&prove_ms),
        med(&synth_ms),
        STAGES
            .iter()
            .zip(stages)
            .map(|(n, ms)| format!("{n} {ms:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("{failed} failed, {unverified} not verified by filecoin-proofs");
    let json = serde_json::json!({
        "registered_proof": f.registered_proof,
        "first_proof_ms": first.wall_ms,
        "count": ok.len(),
        "concurrency": a.concurrency,
        "total_s": total_s,
        "s_per_proof": per_proof,
        "wall_p50_ms": med(&walls),
        "wall_p99_ms": quantile(&walls, 0.99),
        "partition_prove_p50_ms": med(&prove_ms),
        "partition_synth_p50_ms": med(&synth_ms),
        "gpu_stages_mean_ms": STAGES.iter().zip(stages).map(|(n, ms)| (n.to_string(), serde_json::Value::from(ms))).collect::<serde_json::Map<_, _>>(),
        "failed": failed,
        "unverified": unverified,
    });
    std::fs::write(
        &a.json,
        serde_json::to_vec_pretty(&json).expect("serializable"),
    )
    .map_err(|e| Error::internal(format!("writing {}: {e}", a.json.display())))?;
    Ok(if failed + unverified == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
