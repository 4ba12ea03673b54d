//! `cuzk selftest`: prove and verify a small circuit on each of this host's provers.

use std::process::ExitCode;

use clap::Args;
use cuzk::Error;

use crate::tools;

/// Check this host's provers: prove a small synthetic circuit on the CPU and with each GPU
/// prover on the GPUs the engine would use (CUZK_DEVICES), with the same r and s; every proof
/// must verify and be byte-identical to the CPU's. Prints the times.
#[derive(Args)]
pub struct SelftestArgs {
    /// Constraints in the synthetic circuit.
    #[arg(long, default_value_t = 1 << 16)]
    pub constraints: usize,
    /// Devices as in CUZK_DEVICES (auto, cpu, N).
    #[arg(long, default_value = "auto")]
    pub devices: String,
}

pub fn selftest(args: SelftestArgs) -> Result<ExitCode, Error> {
    let SelftestArgs {
        constraints,
        devices,
    } = args;
    let dir = tempfile::tempdir().map_err(|e| Error::internal(format!("temp dir: {e}")))?;
    let rep = tools::selftest::run(constraints, &devices, dir.path())?;
    println!(
        "self-test circuit: {} constraints (parameters generated in {:.1} s)",
        rep.constraints,
        rep.params_ms / 1e3
    );
    for r in &rep.results {
        println!(
            "  {:<16} prove {:>9.1} ms (GPU call {:.1} ms)  verified: {}  same bytes as the CPU: {}",
            r.backend,
            r.prove_ms,
            r.stages.gpu_ms,
            if r.verified { "yes" } else { "NO" },
            if r.identical { "yes" } else { "NO" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
