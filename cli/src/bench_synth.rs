//! `cuzk bench synth`: a partition's synthesis cost by each path, same run, same inputs.

use std::{path::PathBuf, process::ExitCode};

use clap::Args;
use cuzk::Error;

use crate::{read, tools, JobArgs};

/// Host CPU per partition for full synthesis, witness only, and witness + sparse product (the
/// pre-compiled path, checked equal to full synthesis first); recording time and size.
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
    /// Paths to time, comma-separated (full, witness, witness+product, product); default all.
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
        "{} constraints, {} aux ({:.1}% zero, {:.1}% one), {} at once, {} rayon threads",
        r.constraints,
        r.aux,
        100.0 * r.aux_zero,
        100.0 * r.aux_one,
        r.concurrency,
        r.threads
    );
    println!(
        "recording: {:.2} s ({:.2} CPU s), {} terms, {} coefficients, {:.1} B/constraint in memory, {:.1} on disk, save {:.2} s, load {:.2} s",
        r.record_s,
        r.record_cpu_s,
        r.terms,
        r.coefficients,
        r.memory_bytes_per_constraint,
        r.file_bytes_per_constraint,
        r.save_s,
        r.load_s
    );
    println!(
        "in flight per partition: assignment {} MiB, compact witness {:.1} MiB ({:.2} B/variable)",
        r.assignment_bytes >> 20,
        r.compact_witness_bytes as f64 / (1 << 20) as f64,
        r.compact_witness_bytes as f64 / r.aux as f64
    );
    println!(
        "path              partitions  cpu_s/partition  wall_s(min)  wall_s(mean)  vs_full  \
         peak B/constraint"
    );
    for p in &r.rows {
        let peak = p.peak_bytes_per_partition.map_or("-".to_string(), |b| {
            format!("{:.2}", b as f64 / r.constraints as f64)
        });
        println!(
            "{:<16}  {:>10}  {:>15.3}  {:>11.3}  {:>12.3}  {:>7.2}  {:>17}",
            p.path,
            p.partitions,
            p.cpu_s_per_partition,
            p.wall_s_min,
            p.wall_s_mean,
            p.vs_full,
            peak
        );
        println!(
            "RESULT bench=synth path={} constraints={} concurrency={} cpu_s_per_partition={:.4} vs_full={:.3} wall_s_mean={:.3}",
            p.path, r.constraints, r.concurrency, p.cpu_s_per_partition, p.vs_full, p.wall_s_mean
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
