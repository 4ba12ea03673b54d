//! `cuzk bench synth`: a partition's synthesis cost by each path, same run, same inputs.

use std::{path::PathBuf, process::ExitCode};

use clap::Args;
use cuzk::Error;

use crate::{read, tools, JobArgs};

/// Host CPU per partition for full synthesis, witness only, the native witness generator
/// (checked equal to witness synthesis first) and witness + sparse product (the pre-compiled
/// path, checked equal to full synthesis first); recording time and size. With `--paths
/// witness,native` neither parameters nor recording are needed.
#[derive(Args)]
pub struct SynthArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Rounds per path.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Partitions synthesized at once (as synthesis workers do under a stream).
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Paths to time, comma-separated (full, witness, native, native-input: the part of native
    /// that reads the vanilla proofs, witness+product, product); default all.
    #[arg(long, value_delimiter = ',')]
    pub paths: Vec<String>,
    /// Write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn synth(args: SynthArgs, params_dir: PathBuf) -> Result<ExitCode, Error> {
    let SynthArgs {
        job: JobArgs { c1, id, shape },
        reps,
        concurrency,
        paths,
        json,
    } = args;
    let r = tools::synth::run(&tools::synth::SynthSpec {
        c1: read(&c1)?,
        prover_id: id.prover_id()?,
        sector_id: id.sector_id,
        shape: shape.shape(),
        reps,
        concurrency,
        paths,
        params_dir,
    })?;
    println!(
        "{}: {} aux ({:.1}% zero, {:.1}% one), {} at once, {} rayon threads",
        r.circuit,
        r.aux,
        100.0 * r.aux_zero,
        100.0 * r.aux_one,
        r.concurrency,
        r.threads
    );
    match &r.recording {
        Some(rec) => {
            println!(
                "recording: {} constraints, {:.2} s ({:.2} CPU s), {} terms, {} coefficients, {:.1} B/constraint in memory, {:.1} on disk, save {:.2} s, load {:.2} s",
                rec.constraints,
                rec.record_s,
                rec.record_cpu_s,
                rec.terms,
                rec.coefficients,
                rec.memory_bytes_per_constraint,
                rec.file_bytes_per_constraint,
                rec.save_s,
                rec.load_s
            );
            println!(
                "in flight per partition: assignment {} MiB, compact witness {:.1} MiB ({:.2} B/variable)",
                rec.assignment_bytes >> 20,
                r.compact_witness_bytes as f64 / (1 << 20) as f64,
                r.compact_witness_bytes as f64 / r.aux as f64
            );
        }
        None => println!(
            "witness paths only: no parameters read, no recording made; compact witness {:.1} MiB",
            r.compact_witness_bytes as f64 / (1 << 20) as f64
        ),
    }
    println!(
        "path              partitions  cpu_s/partition  wall_s(min)  wall_s(mean)  vs_full  \
         vs_witness  peak MiB/partition"
    );
    for p in &r.rows {
        let peak = p.peak_bytes_per_partition.map_or("-".to_string(), |b| {
            format!("{:.1}", b as f64 / (1 << 20) as f64)
        });
        println!(
            "{:<16}  {:>10}  {:>15.3}  {:>11.3}  {:>12.3}  {:>7.3}  {:>10.3}  {:>18}",
            p.path,
            p.partitions,
            p.cpu_s_per_partition,
            p.wall_s_min,
            p.wall_s_mean,
            p.vs_full,
            p.vs_witness,
            peak
        );
        println!(
            "RESULT bench=synth path={} aux={} concurrency={} cpu_s_per_partition={:.4} vs_full={:.4} vs_witness={:.4} wall_s_mean={:.3}",
            p.path, r.aux, r.concurrency, p.cpu_s_per_partition, p.vs_full, p.vs_witness, p.wall_s_mean
        );
    }
    if let Some(path) = json {
        let text =
            serde_json::to_string_pretty(&r).map_err(|e| Error::internal(format!("json: {e}")))?;
        std::fs::write(&path, text).map_err(|e| {
            Error::invalid_argument(format!("cannot write {}: {e}", path.display()))
        })?;
    }
    Ok(ExitCode::SUCCESS)
}
