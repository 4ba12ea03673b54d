//! `cuzk bench batch`: a stream of proofs through one engine, against the incumbent.

use std::{
    path::PathBuf,
    process::ExitCode,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Instant,
};

use clap::Args;
use cuzk::{
    engine::{Config, Engine, JobRequest},
    porep::{self, FixtureShape},
    timeline::Event,
    Error,
};

use crate::{
    bench_post::{self, PostBenchArgs, PostSample, PostSide},
    peak_rss, read,
    tools::{analysis, fixture, progress::Progress},
    write_file, ShapeArgs,
};

/// A stream of COUNT proofs with at most CONCURRENCY in flight through one engine: per-proof
/// times, proofs per minute, prover busy %, idle gaps, peak RSS, a waterfall SVG and a JSON
/// summary; with --baseline also filecoin-proofs' seal_commit_phase2 on the same inputs.
#[derive(Args)]
pub struct BatchCmdArgs {
    #[arg(long)]
    c1: PathBuf,
    /// Sector number (default 1, the fixtures' sector).
    #[arg(long, default_value_t = 1)]
    pub sector_id: u64,
    /// Miner actor id (default 1000, the fixtures' miner).
    #[arg(long, default_value_t = 1000)]
    pub miner_id: u64,
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Proofs to make.
    #[arg(short = 'c', long, default_value_t = 4)]
    pub count: usize,
    /// Proofs in flight at once.
    #[arg(short = 'j', long, default_value_t = 2)]
    pub concurrency: usize,
    /// Synthesis workers (0: automatic).
    #[arg(long, default_value_t = 0)]
    pub synthesis_workers: usize,
    /// Synthesized partitions that may wait for a prover (0: automatic).
    #[arg(long, default_value_t = 0)]
    pub lookahead: usize,
    /// Also run filecoin-proofs' seal_commit_phase2 COUNT times, CONCURRENCY at once.
    #[arg(long)]
    pub baseline: bool,
    /// Also run an external incumbent build (bench/fp-baseline) as LABEL=PATH, after cuzk,
    /// with the same inputs, count and concurrency; repeatable.
    #[arg(long = "baseline-bin", value_name = "LABEL=PATH")]
    pub baseline_bins: Vec<String>,
    /// Proofs in flight for the external incumbent runs (default: CONCURRENCY). The
    /// incumbent as deployed runs one at a time: 1.
    #[arg(long)]
    pub baseline_jobs: Option<usize>,
    /// Proofs for the external incumbent runs (default: COUNT).
    #[arg(long)]
    pub baseline_count: Option<usize>,
    /// Provers as in CUZK_DEVICES: auto, cpu, or a number of GPUs.
    #[arg(long, default_value = "")]
    pub devices: String,
    /// Partitions per GPU call (0: CUZK_GPU_BATCH or the default).
    #[arg(long, default_value_t = 0)]
    pub gpu_batch: usize,
    /// Take device D out of service once K proofs are done (D@K), to show its partitions
    /// finishing elsewhere.
    #[arg(long, value_name = "D@K")]
    pub disable_device: Option<String>,
    /// Memory budget in GiB (0: automatic, 90% of MemAvailable at start; give it where memory
    /// is handed to the machine as it is used, as on some VMs).
    #[arg(long, default_value_t = 0)]
    pub memory_budget_gib: u64,
    /// Waterfall SVG output.
    #[arg(long, default_value = "cuzk-waterfall.svg")]
    pub svg: PathBuf,
    /// JSON summary output.
    #[arg(long, default_value = "cuzk-bench.json")]
    pub json: PathBuf,
    /// TIMELINE log output (for `cuzk waterfall` later).
    #[arg(long)]
    pub timeline: Option<PathBuf>,
    /// Before the stream, in the same engine (parameters loaded once): MSWEEP proofs
    /// (--msm-sweep-proofs) with each shape of the large MSMs (the H MSM) given as
    /// WBITSxBATCHES (0x0: the prover's own choice), every proof verified; the stream then
    /// runs with the shape of the fewest kernel milliseconds per partition (cuda build).
    #[arg(long, value_delimiter = ',', value_name = "WxB")]
    pub msm_shapes: Vec<String>,
    /// Proofs per shape of --msm-shapes (CONCURRENCY in flight).
    #[arg(long, default_value_t = 2)]
    pub msm_sweep_proofs: usize,
    #[command(flatten)]
    pub post: PostBenchArgs,
}

pub fn batch(args: BatchCmdArgs, params_dir: PathBuf) -> Result<ExitCode, Error> {
    let BatchCmdArgs {
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
        memory_budget_gib,
        svg,
        json,
        timeline,
        msm_shapes,
        msm_sweep_proofs,
        post,
    } = args;
    let msm_shapes = msm_shapes
        .iter()
        .map(|t| parse_shape(t).and_then(check_shape))
        .collect::<Result<Vec<_>, _>>()?;
    bench_batch(BatchArgs {
        memory_budget: memory_budget_gib << 30,
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
        msm_shapes,
        msm_sweep_proofs,
        post,
    })
}

/// `WBITSxBATCHES` of --msm-shapes.
fn parse_shape(t: &str) -> Result<(u32, u32), Error> {
    t.split_once('x')
        .and_then(|(w, b)| Some((w.trim().parse().ok()?, b.trim().parse().ok()?)))
        .ok_or_else(|| {
            Error::invalid_argument(format!("--msm-shapes wants WBITSxBATCHES, not {t:?}"))
        })
}

/// A shape of --msm-shapes the prover takes, before anything is loaded (cuda build only).
#[cfg(feature = "cuda")]
fn check_shape((wbits, batches): (u32, u32)) -> Result<(u32, u32), Error> {
    cuzk::sys::gpu_prover::check_msm_shape(wbits, batches)
        .map(|()| (wbits, batches))
        .map_err(|e| Error::invalid_argument(format!("--msm-shapes: {e}")))
}

/// Sets the shape of the prover's H MSM (cuzk's GPU prover only).
#[cfg(feature = "cuda")]
fn set_msm_shape((wbits, batches): (u32, u32)) -> Result<(), Error> {
    cuzk::sys::gpu_prover::set_msm_shape(wbits, batches).map_err(Error::invalid_argument)
}

/// The H MSM's shape before the sweep, to go back to.
#[cfg(feature = "cuda")]
fn msm_shape() -> (u32, u32) {
    cuzk::sys::gpu_prover::msm_shape()
}

#[cfg(not(feature = "cuda"))]
fn check_shape(_: (u32, u32)) -> Result<(u32, u32), Error> {
    Err(Error::invalid_argument(
        "--msm-shapes needs the cuda build (cuzk's GPU prover)",
    ))
}

#[cfg(not(feature = "cuda"))]
fn set_msm_shape(shape: (u32, u32)) -> Result<(), Error> {
    check_shape(shape).map(drop)
}

#[cfg(not(feature = "cuda"))]
fn msm_shape() -> (u32, u32) {
    (0, 0)
}

/// Mean GPU stage times per partition (cuzk's GPU prover) over the proofs that succeeded, and
/// how many partitions had them.
fn stage_means<T, E>(
    results: &[Result<(T, f64, cuzk::engine::JobOutput), E>],
) -> ([f64; 8], usize) {
    let stages = gpu_stages(results);
    let mut sum = [0f64; 8];
    for st in &stages {
        for (s, x) in sum.iter_mut().zip(st) {
            *s += x;
        }
    }
    (sum.map(|s| s / stages.len().max(1) as f64), stages.len())
}

/// The GPU stage times of every partition proved on a GPU.
fn gpu_stages<T, E>(results: &[Result<(T, f64, cuzk::engine::JobOutput), E>]) -> Vec<[f64; 8]> {
    results
        .iter()
        .flatten()
        .flat_map(|(_, _, out)| &out.partitions)
        .map(|p| p.stages.gpu_stages_ms)
        .filter(|st| st.iter().any(|x| *x > 0.0))
        .collect()
}

/// Whether filecoin-proofs' `verify_seal` accepts `proof` for the C1 `c1` of this run.
fn seal_verifies(a: &BatchArgs, c1: &[u8], proof: &[u8]) -> bool {
    cuzk::porep::verify::verify_seal(c1, a.prover_id, a.sector_id, proof).unwrap_or(false)
}

/// The median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

struct BatchArgs {
    memory_budget: u64,
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
    msm_shapes: Vec<(u32, u32)>,
    msm_sweep_proofs: usize,
    post: PostBenchArgs,
}

#[derive(serde::Serialize, Clone, Default)]
struct ProofTimes {
    index: usize,
    job: u64,
    wall_ms: f64,
    /// When the proof came back, from the stream's start.
    done_s: f64,
    queue_ms: f64,
    synth_ms: f64,
    prove_ms: f64,
    /// GPU call time summed over partitions (GPU backends).
    gpu_ms: f64,
    partitions: usize,
    verified: bool,
}

/// The stream's rate once its pipeline is full: the time from the first proof back to the
/// last, over the proofs between (the start-up, one proof's synthesis and proving before the
/// first comes back, left out). None below two proofs.
fn steady_s_per_proof(times: &[ProofTimes]) -> Option<f64> {
    let first = times.iter().map(|t| t.done_s).fold(f64::INFINITY, f64::min);
    let last = times
        .iter()
        .map(|t| t.done_s)
        .fold(f64::NEG_INFINITY, f64::max);
    (times.len() >= 2).then(|| (last - first) / (times.len() - 1) as f64)
}

fn progress(count: usize, what: &str) -> Progress {
    Progress::bar(&format!("{what:>16}"), count as u64, "proofs")
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

type StreamResult = Result<((usize, f64), f64, cuzk::engine::JobOutput), Error>;

/// The stream: `a.count` proofs (fewer with --post-ends-stream), `a.concurrency` in flight;
/// with `post`, PoSt proofs submitted beside it once its first partition is proved. Returns the
/// results, the stream's seconds and the PoSt samples.
fn stream(
    a: &BatchArgs,
    engine: &Engine,
    req: &JobRequest,
    disable: Option<(usize, usize)>,
    post: Option<&PostSide>,
) -> (Vec<StreamResult>, f64, Vec<PostSample>) {
    let done = std::sync::atomic::AtomicUsize::new(0);
    let running = AtomicBool::new(true);
    // Set when the PoSt side is done, where its end ends the stream (--post-ends-stream).
    let post_over = AtomicBool::new(false);
    let pb = progress(a.count, "cuzk");
    let t0 = Instant::now();
    let (results, during) = std::thread::scope(|s| {
        let side = post.map(|p| {
            s.spawn(|| {
                let d = p.during(engine, &running);
                post_over.store(p.args.post_ends_stream, Ordering::SeqCst);
                d
            })
        });
        let results = run_concurrently(a.count, a.concurrency, |i| {
            if post_over.load(Ordering::SeqCst) {
                return None;
            }
            let t = Instant::now();
            let r = engine.prove(req.clone());
            pb.inc(1);
            let n = done.fetch_add(1, Ordering::SeqCst) + 1;
            if let Some((d, k)) = disable {
                if n == k {
                    match engine.set_device_enabled(d, false) {
                        Ok(()) => eprintln!("device {d} taken out of service after {k} proofs"),
                        Err(e) => eprintln!("cannot take device {d} out of service: {e}"),
                    }
                }
            }
            let done_s = t0.elapsed().as_secs_f64();
            Some(r.map(|o| ((i, done_s), t.elapsed().as_secs_f64() * 1e3, o)))
        });
        let results: Vec<StreamResult> = results.into_iter().flatten().collect();
        running.store(false, Ordering::SeqCst);
        let during = side
            .map(|h| h.join().expect("the PoSt thread"))
            .unwrap_or_default();
        (results, during)
    });
    let total_s = t0.elapsed().as_secs_f64();
    pb.finish("done");
    (results, total_s, during)
}

fn bench_batch(a: BatchArgs) -> Result<ExitCode, Error> {
    let c1 = read(&a.c1)?;
    let parsed = porep::parse_c1(&c1)?;
    // For filecoin-proofs (baseline, verify_seal) in this process; the engine does not read it.
    fixture::apply_fixture_tables(parsed.c1.registered_proof, a.shape)?;
    let engine = start_engine(&a)?;
    let disable = a.disable_device.as_deref().map(parse_disable).transpose()?;
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
        "cuzk bench batch: {} proofs, {} in flight, {} synthesis workers, synthesis {:?}, {} (parameters{} ready in {:.1} s)",
        a.count,
        a.concurrency,
        engine.config().synthesis_workers,
        engine.config().synthesis_mode(),
        a.c1.display(),
        if engine.config().synthesis_mode().pre_compiled() {
            " and recording"
        } else {
            ""
        },
        warm_s
    );
    let sweep = msm_sweep(&a, &engine, &req, &c1)?;
    let side = PostSide::load(&a.post)?;
    let alone = side.as_ref().map(|p| p.alone(&engine)).transpose()?;
    let compare = match &side {
        Some(_) if a.post.post_compare => {
            let (res, secs, _) = stream(&a, &engine, &req, None, None);
            let n = res.iter().filter(|r| r.is_ok()).count();
            println!("stream without PoSt: {n} proofs in {secs:.1} s");
            Some((
                secs,
                n,
                res.iter()
                    .flatten()
                    .map(|(_, _, o)| o.job)
                    .collect::<Vec<_>>(),
            ))
        }
        _ => None,
    };
    // The analysis is of the stream (with its PoSt jobs), not of what ran before it.
    events.lock().expect("events").clear();
    let (results, total_s, during) = stream(&a, &engine, &req, disable, side.as_ref());
    let status = engine.status();
    let engine_gpu_batch = engine.config().gpu_batch;
    engine.shutdown()?;

    let mut failed = sweep.failed;
    let (stages_ms, stage_n) = stage_means(&results);
    let times = proof_times(&a, &c1, results, &mut failed);
    let evs = events.lock().expect("events").clone();
    let an = analysis::analyze(&evs);
    print_proofs(&times, an.partitions.len(), &stages_ms, stage_n);
    let ppm = times.len() as f64 / total_s * 60.0;
    let steady = steady_s_per_proof(&times);
    println!();
    print!("{}", analysis::devices_and_gaps(&an));
    println!(
        "cuzk: {} proofs in {:.1} s = {:.2} proofs/min; peak RSS {} MiB; memory reserved peak {} MiB of {} MiB budget",
        times.len(),
        total_s,
        ppm,
        peak_rss() >> 20,
        status.memory_peak >> 20,
        status.memory_budget >> 20
    );
    if let Some(s) = steady {
        println!(
            "steady state: {s:.2} s/proof (from the first proof back to the last, {} proofs)",
            times.len() - 1
        );
    }
    let post_json = match (&side, &alone) {
        (Some(side), Some(alone)) => {
            let without = compare.as_ref().map(|(secs, n, _)| (*secs, *n));
            post_report(side, alone, &during, &times, without, total_s, &mut failed)?
        }
        _ => serde_json::Value::Null,
    };
    print_devices(&status);
    let svg_text = analysis::waterfall_svg(
        &an,
        &format!(
            "cuzk bench batch -c {} -j {}: {:.2} proofs/min",
            a.count, a.concurrency, ppm
        ),
    );
    write_file(&a.svg, svg_text.as_bytes())?;
    println!("waterfall: {}", a.svg.display());

    let baseline = if a.baseline {
        fp_baseline(&a, &parsed.c1, ppm)?
    } else {
        serde_json::Value::Null
    };
    let externals = external_baselines(&a, ppm, &mut failed)?;
    let summary = serde_json::json!({
        "devices_setting": a.devices, "gpu_batch": engine_gpu_batch, "disable_device": a.disable_device,
        "c1": a.c1, "count": a.count, "concurrency": a.concurrency,
        "synthesis_workers": a.synthesis_workers, "synthesis_lookahead": a.lookahead,
        "seconds": total_s, "proofs_per_min": ppm, "steady_s_per_proof": steady, "failed": failed,
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
        "gpu_stages_ms": { "upload": stages_ms[0], "ntt": stages_ms[1], "h": stages_ms[2],
            "split": stages_ms[3], "l": stages_ms[4], "a": stages_ms[5], "b_g1": stages_ms[6],
            "b_g2": stages_ms[7] },
        "proofs": times, "baseline": baseline, "external_baselines": externals,
        "msm_sweep": sweep.rows, "msm_shape": sweep.chosen.map(|(w, b)| format!("{w}x{b}")),
        "prover_devices": status.devices.iter().map(|d| d.name.clone()).collect::<Vec<_>>(),
        "post": post_json,
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

/// The PoSt side of a stream: its report, the stream's time `without` PoSt jobs (seconds and
/// proofs) where measured, and the incumbents' times; each unverified PoSt counts in `failed`.
fn post_report(
    side: &PostSide,
    alone: &(PostSample, Vec<PostSample>),
    during: &[PostSample],
    times: &[ProofTimes],
    without: Option<(f64, usize)>,
    total_s: f64,
    failed: &mut usize,
) -> Result<serde_json::Value, Error> {
    // The stream's prover time per partition (what a PoSt may wait behind): the GPU
    // call's, or the CPU prover's.
    let per_partition = times
        .iter()
        .map(|t| if t.gpu_ms > 0.0 { t.gpu_ms } else { t.prove_ms })
        .sum::<f64>()
        / times.iter().map(|t| t.partitions).sum::<usize>().max(1) as f64;
    let mut post_json = bench_post::report(side, alone, during, per_partition);
    if let Some((without_s, n)) = without {
        let post_gpu: f64 = during
            .iter()
            .filter(|s| s.during_stream)
            .map(|s| s.gpu_ms.max(s.prove_ms))
            .sum();
        println!(
            "stream without PoSt {without_s:.1} s ({n} proofs), with {:.1} s: {:+.0} ms, against {post_gpu:.0} ms of PoSt GPU time inside it",
            total_s,
            (total_s - without_s) * 1e3
        );
        post_json["stream_without_post_s"] = without_s.into();
        post_json["stream_with_post_s"] = total_s.into();
    }
    let (incumbents, bad) = bench_post::incumbents(
        side,
        post_json["alone_median_wall_ms"].as_f64().unwrap_or(0.0),
    )?;
    post_json["incumbents"] = incumbents.into();
    *failed += bad;
    *failed += during.iter().filter(|s| !s.verified).count();
    *failed += alone
        .1
        .iter()
        .chain([&alone.0])
        .filter(|s| !s.verified)
        .count();
    Ok(post_json)
}

/// The engine a stream runs in: the benchmark's settings, random parameters accepted.
fn start_engine(a: &BatchArgs) -> Result<Engine, Error> {
    Ok(Engine::start(Config {
        synthesis_workers: a.synthesis_workers,
        synthesis_lookahead: a.lookahead,
        memory_budget: a.memory_budget,
        params_dir: a.params_dir.clone(),
        timeline_file: a.timeline.clone(),
        devices: a.devices.clone(),
        gpu_batch: a.gpu_batch,
        // A benchmark: random (`cuzk params gen`) sets of production sizes are accepted.
        allow_random_params: Some(true),
        ..Config::default()
    })?)
}

/// `--disable-device D@K`: device D goes out of service at its K-th partition.
fn parse_disable(spec: &str) -> Result<(usize, usize), Error> {
    spec.split_once('@')
        .and_then(|(d, k)| Some((d.parse::<usize>().ok()?, k.parse::<usize>().ok()?)))
        .ok_or_else(|| Error::invalid_argument(format!("--disable-device wants D@K, not {spec:?}")))
}

/// Each proof's times, checked with verify_seal; a failed proof counts in `failed`.
fn proof_times(
    a: &BatchArgs,
    c1: &[u8],
    results: Vec<StreamResult>,
    failed: &mut usize,
) -> Vec<ProofTimes> {
    let mut times = Vec::new();
    for r in results {
        match r {
            Ok(((i, done_s), wall_ms, out)) => {
                let valid = seal_verifies(a, c1, &out.proof);
                times.push(ProofTimes {
                    index: i,
                    job: out.job,
                    wall_ms,
                    done_s,
                    queue_ms: out
                        .partitions
                        .iter()
                        .map(|p| p.queue_ms)
                        .fold(f64::INFINITY, f64::min),
                    synth_ms: out.partitions.iter().map(|p| p.synth_ms).sum(),
                    prove_ms: out.partitions.iter().map(|p| p.prove_ms).sum(),
                    gpu_ms: out.partitions.iter().map(|p| p.stages.gpu_ms).sum(),
                    partitions: out.partitions.len(),
                    verified: valid && out.verified,
                });
            }
            Err(e) => {
                *failed += 1;
                eprintln!("proof failed: {e}");
            }
        }
    }
    times
}

/// The table of proofs, the GPU call's mean per partition (of `parts`) and the GPU stages'
/// means (of `stage_n` partitions).
fn print_proofs(times: &[ProofTimes], parts: usize, stages_ms: &[f64; 8], stage_n: usize) {
    println!("\n proof   wall_s  queue_s  synth_s(sum)  prove_s(sum)  verified");
    for t in times {
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
    let gpu_sum: f64 = times.iter().map(|t| t.gpu_ms).sum();
    if gpu_sum > 0.0 && parts > 0 {
        println!(
            "\nGPU call holding a partition: mean {:.0} ms (a call proves a batch; prove incl. pickup {:.0} ms); synthesis per partition {:.0} ms",
            gpu_sum / parts as f64,
            times.iter().map(|t| t.prove_ms).sum::<f64>() / parts as f64,
            times.iter().map(|t| t.synth_ms).sum::<f64>() / parts as f64,
        );
    }
    if stage_n > 0 {
        const NAMES: [&str; 8] = ["upload", "ntt", "h", "split", "l", "a", "b_g1", "b_g2"];
        let parts: Vec<String> = NAMES
            .iter()
            .zip(stages_ms)
            .map(|(n, ms)| format!("{n} {ms:.1}"))
            .collect();
        println!(
            "GPU stages per partition (ms, mean of {stage_n}): {} (kernels {:.1})",
            parts.join(", "),
            stages_ms[1..].iter().sum::<f64>()
        );
    }
}

/// Each device's partitions, service and room waits.
fn print_devices(status: &cuzk::engine::EngineStatus) {
    for (i, d) in status.devices.iter().enumerate() {
        println!(
            "device {i} {}: {} partitions proved, {}; no room {} times ({} waits for room, {} \
         passed over), {} CPU retries",
            d.name,
            d.partitions_proved,
            if d.enabled {
                "in service"
            } else {
                "out of service"
            },
            d.no_room,
            d.room_waits,
            d.passed_over,
            status.cpu_retries
        );
    }
}

/// filecoin-proofs' seal_commit_phase2 on the same C1, `a.count` proofs `a.concurrency` at a
/// time, against cuzk's `ppm` proofs a minute.
fn fp_baseline(
    a: &BatchArgs,
    c1: &filecoin_proofs_api::seal::SealCommitPhase1Output,
    ppm: f64,
) -> Result<serde_json::Value, Error> {
    let pb = progress(a.count, "filecoin-proofs");
    let json_c1 = serde_json::to_vec(c1).expect("serializable");
    let t0 = Instant::now();
    let res = run_concurrently(a.count, a.concurrency, |_| {
        let t = Instant::now();
        let r = fixture::baseline_c2(&json_c1, a.prover_id, a.sector_id);
        pb.inc(1);
        r.map(|_| t.elapsed().as_secs_f64() * 1e3)
    });
    let base_s = t0.elapsed().as_secs_f64();
    pb.finish("done");
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
    Ok(
        serde_json::json!({"proofs": ok.len(), "seconds": base_s, "proofs_per_min": base_ppm, "wall_ms": ok, "ratio": ppm / base_ppm}),
    )
}

/// The `--baseline-bin LABEL=PATH` programs, each run on the same C1; one that fails counts in
/// `failed`.
fn external_baselines(
    a: &BatchArgs,
    ppm: f64,
    failed: &mut usize,
) -> Result<Vec<serde_json::Value>, Error> {
    let mut externals = Vec::new();
    for spec in &a.baseline_bins {
        let (label, path) = spec.split_once('=').ok_or_else(|| {
            Error::invalid_argument(format!("--baseline-bin wants LABEL=PATH, not {spec:?}"))
        })?;
        eprintln!("running {label}: {path}");
        let mut cmd = std::process::Command::new(path);
        cmd.args(["--c1", &a.c1.display().to_string()])
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
            .args(["--label", label]);
        let (v, ok) = bench_post::run_summary(label, path, &mut cmd)?;
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
        *failed += usize::from(!ok);
        externals.push(serde_json::json!({"label": label, "result": v, "ratio": ppm / base_ppm}));
    }
    Ok(externals)
}

/// What --msm-shapes measured.
struct Sweep {
    rows: Vec<serde_json::Value>,
    /// The shape the stream ran with.
    chosen: Option<(u32, u32)>,
    /// Proofs that failed or did not verify.
    failed: usize,
}

/// --msm-shapes: `msm_sweep_proofs` proofs with each shape, in this engine; leaves the prover
/// with the shape of the fewest kernel milliseconds per partition (the median over the
/// partitions, so that the first partition of a shape, which grows the MSM's buffers, does not
/// weigh), or with the shape it had where none verified every proof.
fn msm_sweep(a: &BatchArgs, engine: &Engine, req: &JobRequest, c1: &[u8]) -> Result<Sweep, Error> {
    let mut sweep = Sweep {
        rows: Vec::new(),
        chosen: None,
        failed: 0,
    };
    if a.msm_shapes.is_empty() {
        return Ok(sweep);
    }
    println!("shape (wbits x batches, 0: default)  proofs  s/proof  h_ms  ntt_ms  kernels_ms/partition  verified  (ms: medians over the partitions)");
    let mut best: Option<(f64, (u32, u32))> = None;
    let before = msm_shape();
    for &shape in &a.msm_shapes {
        set_msm_shape(shape)?;
        let pb = progress(a.msm_sweep_proofs, &format!("{}x{}", shape.0, shape.1));
        let t0 = Instant::now();
        let results = run_concurrently(a.msm_sweep_proofs, a.concurrency, |_| {
            let r = engine.prove(req.clone());
            pb.inc(1);
            r.map(|o| ((), 0.0, o))
        });
        let secs = t0.elapsed().as_secs_f64();
        pb.finish("done");
        let stages = gpu_stages(&results);
        let n = stages.len();
        let kernels = median(stages.iter().map(|st| st[1..].iter().sum()).collect());
        let (ntt_ms, h_ms) = (
            median(stages.iter().map(|st| st[1]).collect()),
            median(stages.iter().map(|st| st[2]).collect()),
        );
        let verified = results
            .iter()
            .filter(|r| match r {
                Ok((_, _, out)) => out.verified && seal_verifies(a, c1, &out.proof),
                Err(e) => {
                    eprintln!("proof failed ({}x{}): {e}", shape.0, shape.1);
                    false
                }
            })
            .count();
        sweep.failed += a.msm_sweep_proofs - verified;
        let per = secs / a.msm_sweep_proofs.max(1) as f64;
        println!(
            "{:>34}  {:>6}  {:>7.2}  {:>4.0}  {:>6.0}  {:>20.1}  {verified}/{}",
            format!("{}x{}", shape.0, shape.1),
            a.msm_sweep_proofs,
            per,
            h_ms,
            ntt_ms,
            kernels,
            a.msm_sweep_proofs
        );
        sweep.rows.push(serde_json::json!({
            "wbits": shape.0, "batches": shape.1, "proofs": a.msm_sweep_proofs,
            "verified": verified, "seconds_per_proof": per, "partitions": n,
            "h_ms": h_ms, "ntt_ms": ntt_ms, "kernels_ms": kernels, "median": true,
        }));
        if n > 0 && verified == a.msm_sweep_proofs && best.is_none_or(|(k, _)| kernels < k) {
            best = Some((kernels, shape));
        }
    }
    let chosen = best.map_or(before, |(_, s)| s);
    set_msm_shape(chosen)?;
    println!("the stream runs with MSM shape {}x{}\n", chosen.0, chosen.1);
    sweep.chosen = Some(chosen);
    Ok(sweep)
}

#[cfg(test)]
mod tests {
    use super::{check_shape, median, parse_shape};

    #[test]
    fn msm_shapes_are_wbits_x_batches() {
        assert_eq!(parse_shape("20x1").unwrap(), (20, 1));
        assert_eq!(parse_shape("0x0").unwrap(), (0, 0));
        for bad in ["20", "x1", "20x", "ax1", "20*1"] {
            assert!(parse_shape(bad).is_err(), "{bad}");
        }
    }

    /// Shapes the prover would refuse are refused when the arguments are read, before any
    /// parameters load (and every shape without the cuda build).
    #[test]
    fn msm_shapes_out_of_range_are_refused_at_once() {
        for bad in [(9, 1), (23, 1), (16, 65)] {
            assert!(check_shape(bad).is_err(), "{bad:?}");
        }
        let good = check_shape((22, 4));
        assert_eq!(good.is_ok(), cfg!(feature = "cuda"), "{good:?}");
    }

    #[test]
    fn the_sweeps_median_ignores_one_slow_partition() {
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![1000.0, 2.0, 1.0, 3.0]), 2.5);
    }
}
