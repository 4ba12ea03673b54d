//! Streams C2 jobs through filecoin-proofs' own `seal_commit_phase2` (the incumbent), `jobs`
//! at a time, verifies each proof with `verify_seal`, and prints a JSON summary on stdout.
//! With `--post DIR` (a fixture of `cuzk fixture --kind window-post|winning-post`): `count`
//! PoSt proofs one after another through `generate_{window,winning}_post_with_vanilla`, each
//! verified with `verify_{window,winning}_post`. With `--snap DIR` (a fixture of
//! `cuzk fixture --kind snap`): `count` SnapDeals proofs one after another through
//! `generate_empty_sector_update_proof_with_vanilla`, each verified with
//! `verify_empty_sector_update_proof`.
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
    #[arg(long, required_unless_present_any = ["post", "snap"])]
    c1: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 1)]
    sector_id: u64,
    #[arg(long, default_value_t = 1000)]
    miner_id: u64,
    /// A PoSt fixture directory (post.json, vanilla.bin) instead of a C1 output.
    #[arg(long, conflicts_with = "c1")]
    post: Option<std::path::PathBuf>,
    /// A SnapDeals fixture directory (snap.json, vanilla.bin) instead of a C1 output.
    #[arg(long, conflicts_with_all = ["c1", "post"])]
    snap: Option<std::path::PathBuf>,
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
    if let Some(dir) = &a.post {
        return post(&a, dir);
    }
    if let Some(dir) = &a.snap {
        return snap(&a, dir);
    }
    let c1_path = a.c1.clone().context("--c1")?;
    let bytes = std::fs::read(&c1_path).with_context(|| format!("reading {}", c1_path.display()))?;
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

fn unhex(s: &str) -> Result<Vec<u8>> {
    if s.len() % 2 != 0 {
        bail!("odd-length hex");
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).context("hex"))
        .collect()
}

fn hex32(v: &serde_json::Value, what: &str) -> Result<[u8; 32]> {
    let s = v.as_str().with_context(|| format!("{what} is not a string"))?;
    unhex(s)?.try_into().map_err(|_| anyhow!("{what} is not 32 bytes"))
}

/// The count-prefixed, length-prefixed byte strings of a fixture's `vanilla.bin`.
fn vanilla_bin(path: &std::path::Path) -> Result<Vec<Vec<u8>>> {
    let bin = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let u32_at = |at: usize| -> Result<usize> {
        let b = bin.get(at..at + 4).context("vanilla.bin is truncated")?;
        Ok(u32::from_le_bytes(b.try_into().unwrap()) as usize)
    };
    let n = u32_at(0)?;
    let mut at = 4;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = u32_at(at)?;
        out.push(bin.get(at + 4..at + 4 + len).context("vanilla.bin is truncated")?.to_vec());
        at += 4 + len;
    }
    Ok(out)
}

/// `--snap DIR`: the SnapDeals fixture's proofs through filecoin-proofs, `count` times in a row.
fn snap(a: &Args, dir: &std::path::Path) -> Result<()> {
    use filecoin_proofs_api::{update as fu, PartitionProofBytes, RegisteredUpdateProof as U};
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("snap.json")).context("snap.json")?)?;
    let all = [U::StackedDrg2KiBV1, U::StackedDrg8MiBV1, U::StackedDrg512MiBV1, U::StackedDrg32GiBV1, U::StackedDrg64GiBV1];
    let n = meta["registered_proof"].as_u64().context("registered_proof")?;
    let proof = *all.get(n as usize).with_context(|| format!("unknown update proof {n}"))?;
    let comm_r_old = hex32(&meta["comm_r_old"], "comm_r_old")?;
    let comm_r_new = hex32(&meta["comm_r_new"], "comm_r_new")?;
    let comm_d_new = hex32(&meta["comm_d_new"], "comm_d_new")?;
    let vanilla = vanilla_bin(&dir.join("vanilla.bin"))?;
    let mut walls = Vec::new();
    let mut failures = 0;
    let t0 = Instant::now();
    for _ in 0..a.count.max(1) {
        let t = Instant::now();
        let parts = vanilla.iter().map(|v| PartitionProofBytes(v.clone())).collect();
        let r = fu::generate_empty_sector_update_proof_with_vanilla(proof, parts, comm_r_old, comm_r_new, comm_d_new);
        let wall = t.elapsed().as_secs_f64();
        match r.and_then(|p| fu::verify_empty_sector_update_proof(proof, &p.0, comm_r_old, comm_r_new, comm_d_new)) {
            Ok(true) => walls.push(wall),
            Ok(false) => {
                eprintln!("update proof did not verify");
                failures += 1;
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                failures += 1;
            }
        }
    }
    let summary = serde_json::json!({
        "label": a.label,
        "proof_type": format!("{proof:?}"),
        "partitions": vanilla.len(),
        "proofs": walls.len(),
        "failures": failures,
        "wall_s": t0.elapsed().as_secs_f64(),
        "per_proof_s": walls,
        "peak_rss_bytes": peak_rss(),
    });
    println!("{summary}");
    if failures > 0 {
        bail!("{failures} update proofs failed");
    }
    Ok(())
}

/// `--post DIR`: the PoSt fixture's proofs through filecoin-proofs, `count` times in a row.
fn post(a: &Args, dir: &std::path::Path) -> Result<()> {
    use filecoin_proofs_api::{post as fp, PublicReplicaInfo, RegisteredPoStProof as P};
    use std::collections::BTreeMap;
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("post.json")).context("post.json")?)?;
    let name = meta["proof_type"].as_str().context("proof_type")?;
    let all = [
        P::StackedDrgWinning2KiBV1, P::StackedDrgWinning8MiBV1, P::StackedDrgWinning512MiBV1,
        P::StackedDrgWinning32GiBV1, P::StackedDrgWinning64GiBV1, P::StackedDrgWindow2KiBV1,
        P::StackedDrgWindow8MiBV1, P::StackedDrgWindow512MiBV1, P::StackedDrgWindow32GiBV1,
        P::StackedDrgWindow64GiBV1, P::StackedDrgWindow2KiBV1_2, P::StackedDrgWindow8MiBV1_2,
        P::StackedDrgWindow512MiBV1_2, P::StackedDrgWindow32GiBV1_2, P::StackedDrgWindow64GiBV1_2,
    ];
    let proof = *all
        .iter()
        .find(|p| format!("{p:?}") == name)
        .with_context(|| format!("unknown proof type {name}"))?;
    let prover_id = hex32(&meta["prover_id"], "prover_id")?;
    let randomness = hex32(&meta["randomness"], "randomness")?;
    let mut replicas = BTreeMap::new();
    for s in meta["sectors"].as_array().context("sectors")? {
        let id = s["id"].as_u64().context("sector id")?;
        replicas.insert(SectorId::from(id), PublicReplicaInfo::new(proof, hex32(&s["comm_r"], "comm_r")?));
    }
    let vanilla = vanilla_bin(&dir.join("vanilla.bin"))?;
    let n = vanilla.len();
    let winning = name.contains("Winning");
    let mut walls = Vec::new();
    let mut failures = 0;
    let t0 = Instant::now();
    for _ in 0..a.count.max(1) {
        let t = Instant::now();
        let r = if winning {
            fp::generate_winning_post_with_vanilla(proof, &randomness, prover_id, &vanilla)
        } else {
            fp::generate_window_post_with_vanilla(proof, &randomness, prover_id, &vanilla)
        };
        let wall = t.elapsed().as_secs_f64();
        let ok = r.and_then(|p| {
            if winning {
                fp::verify_winning_post(&randomness, &p[0].1, &replicas, prover_id)
            } else {
                let parts: Vec<(P, &[u8])> = p.iter().map(|(t, b)| (*t, b.as_slice())).collect();
                fp::verify_window_post(&randomness, &parts, &replicas, prover_id)
            }
        });
        match ok {
            Ok(true) => walls.push(wall),
            Ok(false) => {
                eprintln!("PoSt proof did not verify");
                failures += 1;
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                failures += 1;
            }
        }
    }
    let total = t0.elapsed().as_secs_f64();
    let summary = serde_json::json!({
        "label": a.label,
        "proof_type": name,
        "sectors": n,
        "proofs": walls.len(),
        "failures": failures,
        "wall_s": total,
        "per_proof_s": walls,
        "peak_rss_bytes": peak_rss(),
    });
    println!("{summary}");
    if failures > 0 {
        bail!("{failures} PoSt proofs failed");
    }
    Ok(())
}
