//! `cuzk bench c2`: cuzk's C2 against filecoin-proofs' on the same C1, each in a child process.

use std::{path::PathBuf, process::ExitCode, time::Instant};

use clap::Args;
use cuzk::Error;

use crate::JobArgs;

/// cuzk's C2 against filecoin-proofs' seal_commit_phase2 on the same C1, each in its own
/// child process (so peak RSS is each one's own), alternating, in one run.
#[derive(Args)]
pub struct C2Args {
    #[command(flatten)]
    pub job: JobArgs,
    /// Rounds (each round runs both).
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn c2(args: C2Args) -> Result<ExitCode, Error> {
    let C2Args { job, runs, json } = args;
    bench_c2(&job, runs, json)
}

#[derive(serde::Serialize, Default, Clone)]
struct Sample {
    /// The provers the child ran on (`cpu`, `cuda:0`, ...; `filecoin-proofs` for the baseline).
    prover: String,
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
        prover: field("prover")?,
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
    let mut provers: Vec<&str> = ours.iter().map(|s| s.prover.as_str()).collect();
    provers.dedup();
    println!(
        "| cuzk ({}) | {:.1} | {} |",
        provers.join(", "),
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

#[cfg(test)]
mod tests {
    use super::parse_result;

    #[test]
    fn the_result_line_names_the_prover_it_ran_on() {
        let out = "noise\nRESULT cuzk prover=cuda:0 wall_ms=12.5 peak_rss=1024 proof_bytes=192\n";
        let s = parse_result(out).unwrap();
        assert_eq!(
            (s.prover.as_str(), s.wall_ms, s.peak_rss),
            ("cuda:0", 12.5, 1024)
        );
        assert!(parse_result("RESULT cuzk wall_ms=1 peak_rss=1").is_none());
    }
}
