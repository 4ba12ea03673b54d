//! `cuzk bench calls`: one prover call's cost with nothing else running.

use std::{path::PathBuf, process::ExitCode};

use clap::Args;
use cuzk::Error;

use crate::{read, tools, JobArgs};

/// One prover call with nothing else running: synthesizes a few partitions of the C1 once,
/// then proves them in calls of each width (REPS times each) on the selected devices,
/// verifying every proof; prints call and per-partition times and the host CPU time used.
#[derive(Args)]
pub struct CallsArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Provers as in CUZK_DEVICES: auto, cpu, or a number of GPUs.
    #[arg(long, default_value = "auto")]
    pub devices: String,
    /// Partitions per call, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    pub widths: Vec<usize>,
    /// Calls per width.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also prove the first partition on the CPU with the same r and s and require the same
    /// proof bytes.
    #[arg(long)]
    pub compare_cpu: bool,
    /// Also prove the first partition from its compact witness, with a, b and c computed by
    /// the prover from the circuit's recording (cuzk's GPU prover: on the GPU).
    #[arg(long)]
    pub compact: bool,
}

pub fn calls(args: CallsArgs, params_dir: PathBuf) -> Result<ExitCode, Error> {
    let CallsArgs {
        job: JobArgs { c1, id, shape },
        devices,
        widths,
        reps,
        json,
        compare_cpu,
        compact,
    } = args;
    let rep = tools::calls::run(&tools::calls::CallsSpec {
        c1: read(&c1)?,
        prover_id: id.prover_id()?,
        sector_id: id.sector_id,
        shape: shape.shape(),
        devices,
        widths,
        reps,
        params_dir,
        compare_cpu,
        compact,
    })?;
    println!(
        "{} ({}): {} constraints per partition, {} partitions synthesized in {:.0} ms",
        rep.backend,
        rep.devices.join(", "),
        rep.constraints,
        rep.synthesized,
        rep.synth_ms
    );
    println!(
        "width  devices  calls  call_ms(min)  call_ms(mean)  ms/partition  host_cpu_ms/partition"
    );
    for r in &rep.rows {
        println!(
            "{:>5}  {:>7}  {:>5}  {:>12.0}  {:>13.0}  {:>12.1}  {:>21.0}{}",
            r.width,
            r.devices_used,
            r.calls,
            r.call_ms_min,
            r.call_ms_mean,
            r.ms_per_partition,
            r.cpu_ms_per_partition,
            if r.compact { "  (compact witness)" } else { "" }
        );
    }
    if rep
        .rows
        .iter()
        .any(|r| r.stages_ms.iter().any(|&x| x > 0.0))
    {
        println!("stages per partition (ms): upload, ntt, h, split, l, a, b_g1, b_g2");
        for r in &rep.rows {
            let st: Vec<String> = r.stages_ms.iter().map(|x| format!("{x:.1}")).collect();
            let c = if r.compact { "  (compact witness)" } else { "" };
            println!("{:>5}  {}{c}", r.width, st.join("  "));
        }
    }
    println!(
        "all {} proofs verified",
        rep.rows.iter().map(|r| r.width * r.calls).sum::<usize>()
    );
    if rep.identical_to_cpu == Some(true) {
        println!("the first partition's proof is byte-identical to the CPU's for the same r and s");
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&rep)
            .map_err(|e| Error::internal(format!("json: {e}")))?;
        std::fs::write(&path, text).map_err(|e| {
            Error::invalid_argument(format!("cannot write {}: {e}", path.display()))
        })?;
    }
    Ok(ExitCode::SUCCESS)
}
