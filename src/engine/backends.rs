//! Choosing the prover backends: the GPUs this host can use (discovered at start), else the
//! CPU.

use super::Config;
use crate::{
    error::{Error, Result, Status},
    prover::{cpu::CpuProver, ProverBackend},
};

/// Chooses the prover backends for a configuration's `devices` setting (see
/// [`Config::devices`]), with its partitions per GPU call and GPU wait mode.
pub fn select_backends(cfg: &Config) -> Result<Vec<Box<dyn ProverBackend>>> {
    let cfg = cfg.clone().resolved();
    let devices = cfg.devices.as_str();
    let gpu_batch = cfg.gpu_batch;
    let want = devices.trim().to_ascii_lowercase();
    let cpu = || -> Vec<Box<dyn ProverBackend>> { vec![Box::new(CpuProver)] };
    let limit = match want.as_str() {
        "" | "auto" | "gpu" => None,
        "cpu" | "none" | "0" => return Ok(cpu()),
        n => Some(n.parse::<usize>().map_err(|_| {
            Error::invalid_argument(format!(
                "devices must be `auto`, `cpu` or a number of GPUs, not {devices:?} \
                 (to pick particular GPUs, set CUDA_VISIBLE_DEVICES)"
            ))
        })?),
    };
    #[cfg(feature = "cuda")]
    {
        match crate::prover::gpu::discover(cfg.gpu_wait_blocking.unwrap_or(true)) {
            crate::prover::gpu::Discovery::Devices(found) => {
                if let Some(n) = limit {
                    if n > found.len() {
                        return Err(Error::invalid_argument(format!(
                            "{n} GPUs asked for, {} usable found",
                            found.len()
                        )));
                    }
                }
                let mut chosen = found;
                chosen.truncate(limit.unwrap_or(usize::MAX));
                for d in &chosen {
                    log::info!(
                        "cuzk: proving on GPU {} ({}, sm_{}{}, {} SMs, {} MiB free)",
                        d.ordinal,
                        d.name,
                        d.capability.0,
                        d.capability.1,
                        d.multiprocessors,
                        d.free_mem >> 20
                    );
                }
                Ok(vec![Box::new(crate::prover::cuzk_gpu::CuzkGpuProver::new(
                    chosen,
                    gpu_batch,
                    cfg.gpu_params.unwrap_or(super::config::GpuParams::Auto),
                    cfg.gpu_mem_limit.filter(|&l| l > 0),
                ))])
            }
            crate::prover::gpu::Discovery::None(why) => {
                if limit.is_some() || want == "gpu" {
                    return Err(Error::new(
                        Status::Unsupported,
                        format!("no usable GPU: {why}"),
                    ));
                }
                log::warn!("cuzk: no usable GPU ({why}): proving on the CPU");
                Ok(cpu())
            }
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = gpu_batch;
        if limit.is_some() || want == "gpu" {
            return Err(Error::new(
                Status::Unsupported,
                "this cuzk was built without the `cuda` feature: only `cpu` devices",
            ));
        }
        Ok(cpu())
    }
}
