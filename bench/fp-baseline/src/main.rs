//! Streams C2 jobs through filecoin-proofs' own `seal_commit_phase2` (the incumbent), `jobs`
//! at a time, verifies each proof with `verify_seal`, and prints a JSON summary on stdout.
//!
//! It does not depend on cuzk: cuzk does not build against filecoin-proofs' `cuda-supraseal`
//! API (its parameter types change), so the two small helpers it needs (`prover_id_from_miner`,
//! `peak_rss`) are kept here rather than shared.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Mutex,
    },
    time::Instant,
};

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use filecoin_proofs_api::{
    seal::{self, SealCommitPhase1Output},
    SectorId,
};

#[derive(Parser)]
struct Args {
    #[arg(long)]
    c1: std::path::PathBuf,
    #[arg(long)]
    sector_id: u64,
    #[arg(long)]
    miner_id: u64,
    /// Test shape of the fixture (0: the proof type's own).
    #[arg(long, default_value_t = 0)]
    partitions: usize,
    #[arg(long, default_value_t = 0)]
    layers: usize,
    /// Proofs in the stream.
    #[arg(short = 'c', long, default_value_t = 1)]
    count: usize,
    /// Proofs in flight at once.
    #[arg(short = 'j', long, default_value_t = 1)]
    jobs: usize,
    /// Label for the summary.
    #[arg(long, default_value = "filecoin-proofs")]
    label: String,
}

fn main() -> Result<()> {
    env_logger::init();
    let a = Args::parse();
    let bytes = std::fs::read(&a.c1).with_context(|| format!("reading {}", a.c1.display()))?;
    let c1: SealCommitPhase1Output = serde_json::from_slice(&bytes).context("C1 JSON")?;
    // Test shapes (fixtures only), as cuzk's fixture module sets them.
    let size = u64::from(c1.registered_proof.sector_size());
    if a.partitions != 0 {
        filecoin_proofs::POREP_PARTITIONS
            .write()
            .map_err(|_| anyhow!("poisoned"))?
            .insert(size, a.partitions as u8);
    }
    if a.layers != 0 {
        filecoin_proofs::LAYERS.write().map_err(|_| anyhow!("poisoned"))?.insert(size, a.layers);
    }
    let prover_id = prover_id_from_miner(a.miner_id);
    let next = AtomicUsize::new(0);
    let walls = Mutex::new(Vec::new());
    let failures = AtomicUsize::new(0);
    let t0 = Instant::now();
    std::thread::scope(|sc| {
        for _ in 0..a.jobs.max(1) {
            sc.spawn(|| {
                while next.fetch_add(1, Ordering::SeqCst) < a.count {
                    let t = Instant::now();
                    let id = SectorId::from(a.sector_id);
                    let ok = seal::seal_commit_phase2(c1.clone(), prover_id, id).and_then(|out| {
                        let wall = t.elapsed().as_secs_f64();
                        seal::verify_seal(
                            c1.registered_proof,
                            c1.comm_r,
                            c1.comm_d,
                            prover_id,
                            id,
                            c1.ticket,
                            c1.seed,
                            &out.proof,
                        )
                        .map(|v| (v, wall))
                    });
                    match ok {
                        Ok((true, wall)) => walls.lock().unwrap().push(wall),
                        Ok((false, _)) => {
                            eprintln!("proof did not verify");
                            failures.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => {
                            eprintln!("error: {e}");
                            failures.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            });
        }
    });
    let total = t0.elapsed().as_secs_f64();
    let walls = walls.into_inner().unwrap();
    let n = walls.len();
    let summary = serde_json::json!({
        "label": a.label,
        "proofs": n,
        "failures": failures.load(Ordering::SeqCst),
        "jobs": a.jobs,
        "wall_s": total,
        "proofs_per_min": n as f64 * 60.0 / total,
        "per_proof_s": walls,
        "peak_rss_bytes": peak_rss(),
    });
    println!("{summary}");
    if failures.load(Ordering::SeqCst) > 0 {
        bail!("{} proofs failed", failures.load(Ordering::SeqCst));
    }
    Ok(())
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

/// The prover id of a miner actor: its id as an unsigned LEB128 varint, zero-padded.
fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}
