//! `cuzk bench batch --post DIR`: PoSt latency beside the proof stream, in one engine.
//!
//! Before the stream the PoSt fixture is proved alone on the warm engine (its first proof,
//! which loads the PoSt parameters, reported apart): submit-to-proof time against its GPU time.
//! During the stream a PoSt job is submitted every --post-interval-ms (one at a time, each
//! awaited), starting once the stream's first partition is proved (the GPU then busy with it):
//! submit-to-verified-proof times, p50 and p99. Every PoSt proof is checked by filecoin-proofs'
//! `verify_winning_post` / `verify_window_post`.

use std::{
    path::PathBuf,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use clap::Args;
use cuzk::{
    engine::{Engine, JobOutput},
    Error,
};

use crate::tools::post_fixture::PostFixture;

#[derive(Args, Clone)]
pub struct PostBenchArgs {
    /// A PoSt fixture directory (`cuzk fixture --kind window-post|winning-post`): proved alone
    /// before the stream, then submitted during it.
    #[arg(long)]
    pub post: Option<PathBuf>,
    /// PoSt submissions during the stream.
    #[arg(long, default_value_t = 20)]
    pub post_count: usize,
    /// PoSt proofs alone on the warm engine before the stream (after one that loads its
    /// parameters).
    #[arg(long, default_value_t = 3)]
    pub post_alone: usize,
    /// Pause between one PoSt proof's return and the next submission.
    #[arg(long, default_value_t = 500)]
    pub post_interval_ms: u64,
    /// Run the stream once without PoSt first, for the stream's loss to PoSt.
    #[arg(long)]
    pub post_compare: bool,
    /// End the stream with the PoSt submissions: its jobs not started by the time the last
    /// PoSt proof returns are not submitted (for a stream much longer than it needs to be).
    /// Not with --post-compare, whose two streams must be the same.
    #[arg(long, conflicts_with = "post_compare")]
    pub post_ends_stream: bool,
    /// The incumbent (bench/fp-baseline) as LABEL=PATH: after the stream it proves the PoSt
    /// fixture 1 + --post-alone times (the first loads its parameters), each verified; its
    /// warm median against cuzk's. Repeatable.
    #[arg(long = "post-baseline-bin", value_name = "LABEL=PATH")]
    pub post_baseline_bins: Vec<String>,
}

/// One PoSt proof.
#[derive(serde::Serialize, Clone)]
pub struct PostSample {
    /// Submit to verified proof.
    pub wall_ms: f64,
    /// GPU call time summed over its partitions (0 on the CPU prover).
    pub gpu_ms: f64,
    /// Prover time summed over its partitions (GPU call, or CPU proving).
    pub prove_ms: f64,
    /// Synthesis (the witness) summed over its partitions.
    pub synth_ms: f64,
    /// GPU stage times summed over its partitions (upload, ntt, h, split, l, a, b_g1, b_g2).
    pub stages_ms: [f64; 8],
    pub partitions: usize,
    /// Whether the engine self-checked it and filecoin-proofs' verifier accepted it.
    pub verified: bool,
    /// Submitted and returned while the stream was running.
    pub during_stream: bool,
}

/// The PoSt side of a run.
pub struct PostSide {
    pub fixture: PostFixture,
    pub args: PostBenchArgs,
}

impl PostSide {
    pub fn load(args: &PostBenchArgs) -> Result<Option<PostSide>, Error> {
        let Some(dir) = &args.post else {
            return Ok(None);
        };
        let fixture = PostFixture::load(dir)?;
        eprintln!(
            "PoSt fixture {}: {:?}, {} sectors, {} partition(s)",
            dir.display(),
            fixture.proof,
            fixture.sectors.len(),
            fixture.partitions()
        );
        Ok(Some(PostSide {
            fixture,
            args: args.clone(),
        }))
    }

    /// One PoSt proof through `engine`, timed and verified.
    pub fn prove_one(&self, engine: &Engine) -> Result<(PostSample, JobOutput), Error> {
        let t = Instant::now();
        let id = engine.submit_post(&self.fixture.request(0))?;
        let out = engine.await_job(id, Some(Duration::from_secs(1800)))?;
        let wall_ms = t.elapsed().as_secs_f64() * 1e3;
        let verified = out.verified && self.fixture.verify(&out.proof).unwrap_or(false);
        let mut stages_ms = [0.0; 8];
        for p in &out.partitions {
            for (s, x) in stages_ms.iter_mut().zip(p.stages.gpu_stages_ms) {
                *s += x;
            }
        }
        Ok((
            PostSample {
                wall_ms,
                gpu_ms: out.partitions.iter().map(|p| p.stages.gpu_ms).sum(),
                prove_ms: out.partitions.iter().map(|p| p.prove_ms).sum(),
                synth_ms: out.partitions.iter().map(|p| p.synth_ms).sum(),
                stages_ms,
                partitions: out.partitions.len(),
                verified,
                during_stream: false,
            },
            out,
        ))
    }

    /// The cold proof (parameters loaded) and `post_alone` warm ones, before the stream.
    pub fn alone(&self, engine: &Engine) -> Result<(PostSample, Vec<PostSample>), Error> {
        let cold = self.prove_one(engine)?.0;
        let warm = (0..self.args.post_alone)
            .map(|_| self.prove_one(engine).map(|r| r.0))
            .collect::<Result<_, _>>()?;
        Ok((cold, warm))
    }

    /// Submissions during the stream (started as it starts): waits for the stream's first
    /// partition to be proved (the provers busy with it), then proves one at a time until
    /// `post_count` or until the stream ends (`running` false); a failed proof is reported and
    /// counted as unverified.
    pub fn during(&self, engine: &Engine, running: &AtomicBool) -> Vec<PostSample> {
        let proved = || -> u64 {
            engine
                .status()
                .devices
                .iter()
                .map(|d| d.partitions_proved)
                .sum()
        };
        let before = proved();
        while proved() == before && running.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut out = Vec::new();
        while out.len() < self.args.post_count && running.load(Ordering::SeqCst) {
            match self.prove_one(engine) {
                Ok((mut s, _)) => {
                    s.during_stream = running.load(Ordering::SeqCst);
                    out.push(s);
                }
                Err(e) => {
                    eprintln!("PoSt proof failed: {e}");
                    out.push(PostSample {
                        wall_ms: f64::NAN,
                        gpu_ms: 0.0,
                        prove_ms: 0.0,
                        synth_ms: 0.0,
                        stages_ms: [0.0; 8],
                        partitions: 0,
                        verified: false,
                        during_stream: false,
                    });
                }
            }
            std::thread::sleep(Duration::from_millis(self.args.post_interval_ms));
        }
        out
    }
}

/// Runs each --post-baseline-bin on the fixture; prints its warm median beside cuzk's
/// (`cuzk_warm_ms`). Returns the summaries and how many runs failed.
pub fn incumbents(
    side: &PostSide,
    cuzk_warm_ms: f64,
) -> Result<(Vec<serde_json::Value>, usize), Error> {
    let mut out = Vec::new();
    let mut failed = 0;
    let dir = side.args.post.as_ref().expect("a PoSt side has a fixture");
    for spec in &side.args.post_baseline_bins {
        let (label, path) = spec.split_once('=').ok_or_else(|| {
            Error::invalid_argument(format!(
                "--post-baseline-bin wants LABEL=PATH, not {spec:?}"
            ))
        })?;
        eprintln!("running {label} on the PoSt fixture: {path}");
        let mut cmd = std::process::Command::new(path);
        cmd.arg("--post").arg(dir).args([
            "-c",
            &(side.args.post_alone + 1).to_string(),
            "--label",
            label,
        ]);
        let (v, ok) = run_summary(label, path, &mut cmd)?;
        failed += usize::from(!ok);
        let walls: Vec<f64> = v["per_proof_s"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_f64())
                    .map(|s| s * 1e3)
                    .collect()
            })
            .unwrap_or_default();
        let warm = quantile(walls.get(1..).unwrap_or(&[]), 0.5);
        println!(
            "{label} PoSt ({} verified, {} failed): first {} ms, warm median {} ms; {label} / cuzk (warm, submit to proof): {}",
            v["proofs"],
            v["failures"],
            fmt(walls.first().copied()),
            fmt(warm),
            warm.map_or("-".into(), |w| format!("{:.2}x", w / cuzk_warm_ms.max(1e-9)))
        );
        out.push(
            serde_json::json!({"label": label, "result": v, "warm_median_ms": warm,
            "ratio_over_cuzk": warm.map(|w| w / cuzk_warm_ms.max(1e-9))}),
        );
    }
    Ok((out, failed))
}

/// Runs an incumbent build (bench/fp-baseline) and reads the JSON summary it prints last on
/// stdout; also whether it exited successfully.
pub fn run_summary(
    label: &str,
    path: &str,
    cmd: &mut std::process::Command,
) -> Result<(serde_json::Value, bool), Error> {
    let run = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| Error::internal(format!("cannot run {path}: {e}")))?;
    let stdout = String::from_utf8_lossy(&run.stdout);
    let v = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            Error::internal(format!(
                "{label} printed no summary ({}): {stdout}",
                run.status
            ))
        })?;
    Ok((v, run.status.success()))
}

/// The `q` quantile (nearest rank) of `v`; None for none.
pub fn quantile(v: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

const STAGES: [&str; 8] = ["upload", "ntt", "h", "split", "l", "a", "b_g1", "b_g2"];

/// Prints the PoSt results and returns them as JSON.
pub fn report(
    side: &PostSide,
    alone: &(PostSample, Vec<PostSample>),
    during: &[PostSample],
    stream_partition_ms: f64,
) -> serde_json::Value {
    let kind = format!("{:?}", side.fixture.proof);
    let (cold, warm) = alone;
    let med = |f: fn(&PostSample) -> f64, s: &[PostSample]| {
        quantile(&s.iter().map(f).collect::<Vec<_>>(), 0.5).unwrap_or(0.0)
    };
    let warm_wall = med(|s| s.wall_ms, warm);
    // The GPU's time; on the CPU prover, the prover's.
    let warm_gpu = med(|s| if s.gpu_ms > 0.0 { s.gpu_ms } else { s.prove_ms }, warm);
    println!(
        "\n{kind} ({} sectors, {} partition(s)) alone on the warm engine: first (loads its parameters) {:.0} ms; then median submit-to-proof {warm_wall:.0} ms, prover (GPU call) {warm_gpu:.0} ms: {:.2}x its prover time ({} proofs)",
        side.fixture.sectors.len(),
        side.fixture.partitions(),
        cold.wall_ms,
        warm_wall / warm_gpu.max(1e-9),
        warm.len()
    );
    println!(
        "{kind} alone: synthesis (the witness) median {:.0} ms of it",
        med(|s| s.synth_ms, warm)
    );
    if let Some(s) = warm.first() {
        let parts: Vec<String> = STAGES
            .iter()
            .zip(&s.stages_ms)
            .map(|(n, ms)| format!("{n} {ms:.1}"))
            .collect();
        println!(
            "{kind} GPU stages (ms, summed over its partitions): {} (kernels {:.1})",
            parts.join(", "),
            s.stages_ms[1..].iter().sum::<f64>()
        );
    }
    let in_stream: Vec<&PostSample> = during.iter().filter(|s| s.during_stream).collect();
    let walls: Vec<f64> = in_stream.iter().map(|s| s.wall_ms).collect();
    let (p50, p99, max) = (
        quantile(&walls, 0.5),
        quantile(&walls, 0.99),
        quantile(&walls, 1.0),
    );
    let bad = during
        .iter()
        .chain(warm)
        .chain([cold])
        .filter(|s| !s.verified)
        .count();
    let post_gpu_total: f64 = in_stream.iter().map(|s| s.gpu_ms.max(s.prove_ms)).sum();
    println!(
        "{kind} during the stream: {} of {} submissions inside it; submit-to-verified-proof p50 {} ms, p99 {} ms, max {} ms; alone {warm_wall:.0} ms + one stream partition's prover time {stream_partition_ms:.0} ms = {:.0} ms; {} PoSt proofs not verified",
        in_stream.len(),
        during.len(),
        fmt(p50),
        fmt(p99),
        fmt(max),
        warm_wall + stream_partition_ms,
        bad
    );
    serde_json::json!({
        "proof_type": kind,
        "sectors": side.fixture.sectors.len(),
        "partitions": side.fixture.partitions(),
        "cold_ms": cold.wall_ms,
        "alone": warm,
        "alone_median_wall_ms": warm_wall,
        "alone_median_gpu_ms": warm_gpu,
        "alone_wall_over_gpu": warm_wall / warm_gpu.max(1e-9),
        "during": during,
        "during_p50_ms": p50, "during_p99_ms": p99, "during_max_ms": max,
        "during_gpu_ms_total": post_gpu_total,
        "stream_partition_ms": stream_partition_ms,
        "unverified": bad,
    })
}

fn fmt(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.0}"))
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn quantiles_are_nearest_rank() {
        assert_eq!(quantile(&[], 0.5), None);
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(10.0));
        assert_eq!(quantile(&v, 0.99), Some(20.0));
        assert_eq!(quantile(&v, 1.0), Some(20.0));
        assert_eq!(quantile(&[3.0, f64::NAN, 1.0], 0.5), Some(1.0));
    }
}

/// `cuzk bench post-witness`: a PoSt partition's witness made by witness synthesis
/// (storage-proofs' circuit, groups of sectors in parallel) and by the native generator
/// (`cuzk::pce::native::post`), in the same run on the same fixture, the two checked equal
/// first. No parameters or recording are needed.
#[derive(Args)]
pub struct PostWitnessArgs {
    /// A PoSt fixture directory (`cuzk fixture --kind window-post|winning-post`).
    #[arg(long)]
    pub post: PathBuf,
    /// Rounds per path.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
}

pub fn post_witness(a: PostWitnessArgs) -> Result<std::process::ExitCode, Error> {
    let f = PostFixture::load(&a.post)?;
    let circuits = cuzk::post::prepare(&f.request(0))?.circuits;
    let synthesized = circuits.synthesize_witness(0, None, None)?;
    let hint = Some(synthesized.n_aux());
    if circuits.native_witness(0, hint, None)? != synthesized {
        return Err(Error::internal(
            "the native witness differs from witness synthesis's",
        ));
    }
    let [_, _, others] = synthesized.counts();
    println!(
        "{:?}, {} sectors: partition 0 has {} aux values ({:.1}% neither 0 nor 1); {} threads",
        f.proof,
        f.sectors.len(),
        synthesized.n_aux(),
        100.0 * others as f64 / synthesized.n_aux().max(1) as f64,
        rayon::current_num_threads()
    );
    drop(synthesized);
    type Path<'a> = Box<dyn Fn() -> cuzk::Result<cuzk::pce::Witness> + 'a>;
    let paths: [(&str, Path); 2] = [
        (
            "witness",
            Box::new(|| circuits.synthesize_witness(0, hint, None)),
        ),
        (
            "native",
            Box::new(|| circuits.native_witness(0, hint, None)),
        ),
    ];
    let mut means = Vec::new();
    for (name, make) in &paths {
        let cpu0 = cuzk::sys::os::process_cpu_time();
        let mut walls = Vec::new();
        for _ in 0..a.reps.max(1) {
            let t = Instant::now();
            drop(make()?);
            walls.push(t.elapsed().as_secs_f64());
        }
        let cpu = (cuzk::sys::os::process_cpu_time() - cpu0).as_secs_f64() / walls.len() as f64;
        let mean = walls.iter().sum::<f64>() / walls.len() as f64;
        let min = walls.iter().cloned().fold(f64::INFINITY, f64::min);
        println!("{name:<8} wall mean {mean:.3} s, min {min:.3} s, CPU {cpu:.2} s per witness ({} rounds)", walls.len());
        means.push(mean);
    }
    println!(
        "native: {:.2}x faster than witness synthesis (mean wall)",
        means[0] / means[1]
    );
    Ok(std::process::ExitCode::SUCCESS)
}
