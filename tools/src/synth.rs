//! Synthesis benchmark: the host cost of turning one partition into a proving assignment, by
//! each path, in the same run on the same inputs. Full synthesis (every constraint evaluated
//! by the circuit's code), witness only (alloc closures only), the native witness generator
//! (`cuzk::pce::native`; its witness is checked equal to witness synthesis's first), and
//! witness + sparse product (the pre-compiled path, whose output equals full synthesis's; it is
//! checked first too). `concurrency` copies run at once, as synthesis workers do under a
//! stream; CPU time is the process's (all threads) per partition. Also reports recording time,
//! the recording's bytes per constraint in memory and on disk, and a partition's host bytes in
//! flight. Where only the witness paths (witness, native) are asked for, neither the
//! parameters nor the recording are needed, and neither is made (a full-size partition can be
//! timed on a host without its parameters). `cuzk bench synth` prints it.

use std::{path::PathBuf, sync::Arc, time::Instant};

use cuzk::{
    budget::Budget,
    error::{Error, Result},
    params::SrsCache,
    pce::{self, file},
    porep::{self, FixtureShape, SealCircuits},
    sys::os::process_cpu_time,
};

pub struct SynthSpec {
    pub c1: Vec<u8>,
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    pub shape: FixtureShape,
    /// Rounds per path (each round synthesizes `concurrency` partitions at once).
    pub reps: usize,
    /// Partitions synthesized at once.
    pub concurrency: usize,
    /// Which paths to time (full, witness, native, native-input, witness+product, product);
    /// empty: all.
    pub paths: Vec<String>,
    pub params_dir: PathBuf,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct PathRow {
    pub path: &'static str,
    pub partitions: usize,
    /// Process CPU seconds per partition.
    pub cpu_s_per_partition: f64,
    /// Wall seconds per round (`concurrency` partitions at once), best and mean.
    pub wall_s_min: f64,
    pub wall_s_mean: f64,
    /// CPU per partition relative to full synthesis in this run (NaN where it did not run).
    pub vs_full: f64,
    /// CPU per partition relative to witness-only synthesis in this run (NaN where it did not
    /// run).
    pub vs_witness: f64,
    /// The process's resident set high-water mark during the path's rounds over its resident
    /// set before them, per partition at once (what a partition holds at its peak, what it
    /// builds and its synthesis's own allocations); None where the system does not say.
    pub peak_bytes_per_partition: Option<u64>,
}

/// The resident set now and its high-water mark (Linux `/proc/self/status`), bytes.
fn rss() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        line[key.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()
    };
    Some((kib("VmRSS:")? << 10, kib("VmHWM:")? << 10))
}

/// Resets the high-water mark to the resident set now (Linux: `clear_refs` 5).
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The circuit's recording: its cost and size, and a partition's assignment made with it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RecordingReport {
    pub constraints: usize,
    pub record_s: f64,
    pub record_cpu_s: f64,
    pub terms: usize,
    pub coefficients: usize,
    pub memory_bytes_per_constraint: f64,
    pub file_bytes_per_constraint: f64,
    pub save_s: f64,
    pub load_s: f64,
    /// Host bytes of one partition's proving assignment (a, b, c, witness, densities).
    pub assignment_bytes: u64,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct SynthReport {
    pub circuit: String,
    pub aux: usize,
    pub concurrency: usize,
    pub threads: usize,
    /// None where only witness paths ran (no parameters read, no recording made).
    pub recording: Option<RecordingReport>,
    /// Aux values that are 0, 1, or neither.
    pub aux_zero: f64,
    pub aux_one: f64,
    /// Host bytes of a partition's witness in compact form.
    pub compact_witness_bytes: u64,
    pub rows: Vec<PathRow>,
}

/// Paths that need neither the parameters nor the recording.
const WITNESS_PATHS: [&str; 3] = ["witness", "native", "native-input"];

/// Runs `f(k)` for `concurrency` partitions at once, `reps` rounds; returns (CPU per
/// partition, wall per round).
fn measure(
    reps: usize,
    concurrency: usize,
    partitions: usize,
    f: &(dyn Fn(usize) -> Result<()> + Sync),
) -> Result<(f64, Vec<f64>)> {
    let mut walls = Vec::new();
    let cpu0 = process_cpu_time();
    for rep in 0..reps {
        let t = Instant::now();
        let res: Vec<Result<()>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..concurrency)
                .map(|i| s.spawn(move || f((rep * concurrency + i) % partitions)))
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::internal("panicked")))
                })
                .collect()
        });
        walls.push(t.elapsed().as_secs_f64());
        res.into_iter().collect::<Result<Vec<()>>>()?;
    }
    let cpu = (process_cpu_time() - cpu0).as_secs_f64() / (reps * concurrency) as f64;
    Ok((cpu, walls))
}

/// The recording of `circuits` (made, saved and loaded again), with its report; partition 0's
/// pre-compiled assignment checked against full synthesis.
fn recording(
    spec: &SynthSpec,
    circuits: &Arc<dyn SealCircuits>,
    progress: &super::progress::Progress,
) -> Result<(pce::Recording, cuzk::params::CircuitSize, RecordingReport)> {
    let id = circuits.params_id().to_string();
    let size = SrsCache::new(spec.params_dir.clone())
        .get(&id, &Budget::new(u64::MAX))?
        .size;
    progress.phase("recording the circuit");
    let cpu0 = process_cpu_time();
    let t = Instant::now();
    let rec = circuits.record(None)?;
    let record_s = t.elapsed().as_secs_f64();
    let record_cpu_s = (process_cpu_time() - cpu0).as_secs_f64();
    let dir = tempfile::tempdir().map_err(|e| Error::internal(format!("temp dir: {e}")))?;
    let path = file::path(dir.path(), &id);
    let t = Instant::now();
    file::save(&rec, &path).map_err(|e| Error::internal(format!("saving: {e}")))?;
    let save_s = t.elapsed().as_secs_f64();
    let file_len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let t = Instant::now();
    let rec = file::load(&path, &id, Some((size.inputs, size.aux)))
        .map_err(|e| Error::internal(format!("loading: {e:?}")))?;
    let load_s = t.elapsed().as_secs_f64();
    let n = rec.constraints();

    progress.phase("checking the pre-compiled path against full synthesis");
    let w = circuits.synthesize_witness(0, Some(rec.aux), None)?;
    let ours = pce::assignment(&rec, w, Some(size)).map_err(Error::internal)?;
    let full = circuits.synthesize(0, Some(size), None)?;
    if ours != full {
        return Err(Error::internal(
            "the pre-compiled assignment differs from full synthesis",
        ));
    }
    let assignment_bytes = 32
        * (ours.a.capacity()
            + ours.b.capacity()
            + ours.c.capacity()
            + ours.aux_assignment.len()
            + ours.input_assignment.len()) as u64
        + (2 * ours.aux_assignment.len() / 8) as u64;
    let report = RecordingReport {
        constraints: n,
        record_s,
        record_cpu_s,
        terms: rec.terms(),
        coefficients: rec.dict.len(),
        memory_bytes_per_constraint: rec.bytes() as f64 / n as f64,
        file_bytes_per_constraint: file_len as f64 / n as f64,
        save_s,
        load_s,
        assignment_bytes,
    };
    Ok((rec, size, report))
}

pub fn run(spec: &SynthSpec) -> Result<SynthReport> {
    let parsed = porep::parse_c1(&spec.c1)?;
    let circuits = porep::prepare(parsed.c1, spec.prover_id, spec.sector_id, spec.shape)?.circuits;
    let partitions = circuits.shape().partitions;
    let (reps, conc) = (spec.reps.max(1), spec.concurrency.max(1));
    let wanted = |name: &str| spec.paths.is_empty() || spec.paths.iter().any(|p| p == name);
    let progress = super::progress::Progress::ticker("synthesis benchmark", None);
    let recorded = if spec.paths.is_empty()
        || spec
            .paths
            .iter()
            .any(|p| !WITNESS_PATHS.contains(&p.as_str()))
    {
        Some(recording(spec, &circuits, &progress)?)
    } else {
        None
    };
    let aux_hint = recorded.as_ref().map(|(rec, ..)| rec.aux);
    let circuits = &circuits;

    progress.phase("witness synthesis of partition 0");
    let w = circuits.synthesize_witness(0, aux_hint, None)?;
    if wanted("native") {
        progress.phase("checking the native witness against witness synthesis");
        if circuits.native_witness(0, aux_hint, None)? != w {
            return Err(Error::internal(
                "the native witness differs from witness synthesis's",
            ));
        }
    }
    let [_, aux_one, aux_other] = w.counts();
    let aux = w.n_aux();
    let compact_witness_bytes = w.bytes();
    drop(w);

    let witness_f = |k: usize| circuits.synthesize_witness(k, aux_hint, None).map(drop);
    let native_f = |k: usize| circuits.native_witness(k, aux_hint, None).map(drop);
    // The part of `native` that reads the vanilla proofs (`SealCircuits::native_partition`).
    let input_f = |k: usize| circuits.native_partition(k).map(drop);
    let mut paths: Vec<(&'static str, Box<dyn Fn(usize) -> Result<()> + Sync + '_>)> = Vec::new();
    if let Some((rec, size, _)) = &recorded {
        let (rec, size) = (rec, *size);
        paths.push((
            "full",
            Box::new(move |k| circuits.synthesize(k, Some(size), None).map(drop)),
        ));
        paths.push(("witness", Box::new(witness_f)));
        paths.push(("native", Box::new(native_f)));
        paths.push(("native-input", Box::new(input_f)));
        paths.push((
            "witness+product",
            Box::new(move |k| {
                let w = circuits.synthesize_witness(k, Some(rec.aux), None)?;
                pce::assignment(rec, w, Some(size))
                    .map(drop)
                    .map_err(Error::internal)
            }),
        ));
        if wanted("product") {
            // The product alone, on witnesses made beforehand.
            let ws: Vec<pce::Witness> = (0..conc)
                .map(|i| circuits.synthesize_witness(i % partitions, Some(rec.aux), None))
                .collect::<Result<_>>()?;
            paths.push((
                "product",
                Box::new(move |k| {
                    let w = ws[k % conc].clone();
                    pce::assignment(rec, w, Some(size))
                        .map(drop)
                        .map_err(Error::internal)
                }),
            ));
        }
    } else {
        paths.push(("witness", Box::new(witness_f)));
        paths.push(("native", Box::new(native_f)));
        paths.push(("native-input", Box::new(input_f)));
    }
    progress.phase("timing the paths");
    let mut rows: Vec<PathRow> = Vec::new();
    for (name, f) in &paths {
        if !wanted(name) {
            continue;
        }
        let before = reset_peak().then(rss).flatten();
        let (cpu, walls) = measure(reps, conc, partitions, &**f)?;
        let peak_bytes_per_partition = before
            .zip(rss())
            .map(|((base, _), (_, hwm))| hwm.saturating_sub(base) / conc as u64);
        rows.push(PathRow {
            path: name,
            partitions: reps * conc,
            cpu_s_per_partition: cpu,
            wall_s_min: walls.iter().cloned().fold(f64::INFINITY, f64::min),
            wall_s_mean: walls.iter().sum::<f64>() / walls.len() as f64,
            vs_full: f64::NAN,
            vs_witness: f64::NAN,
            peak_bytes_per_partition,
        });
    }
    let cpu_of = |name: &str| {
        rows.iter()
            .find(|r| r.path == name)
            .map(|r| r.cpu_s_per_partition)
    };
    let (full, witness) = (cpu_of("full"), cpu_of("witness"));
    for r in &mut rows {
        r.vs_full = full.map_or(f64::NAN, |f| r.cpu_s_per_partition / f);
        r.vs_witness = witness.map_or(f64::NAN, |f| r.cpu_s_per_partition / f);
    }
    progress.finish("done");
    Ok(SynthReport {
        circuit: circuits.params_id().to_string(),
        aux,
        concurrency: conc,
        threads: rayon::current_num_threads(),
        recording: recorded.as_ref().map(|(_, _, r)| r.clone()),
        aux_zero: 1.0 - (aux_one + aux_other) as f64 / aux as f64,
        aux_one: aux_one as f64 / aux as f64,
        compact_witness_bytes,
        rows,
    })
}
