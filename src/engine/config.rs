//! The engine's configuration, and every environment variable the engine reads.

use std::path::PathBuf;

use super::{budget, dispatch::DEFAULT_GPU_BATCH};

/// Engine configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Partitions synthesized at once (each on its own thread). 0: automatic.
    pub synthesis_workers: usize,
    /// Synthesized partitions allowed to wait for a prover before synthesis pauses (keeps
    /// memory to what the provers can use soon). 0: automatic (two calls' worth per prover:
    /// 2 for the CPU, 2 × GPUs × partitions per GPU call for the GPU backend).
    pub synthesis_lookahead: usize,
    /// Memory budget in bytes for resident parameters plus in-flight partitions. 0: automatic
    /// (90% of the memory available at start).
    pub memory_budget: u64,
    /// Directory holding the `.params`/`.vk` files. Empty: `FIL_PROOFS_PARAMETER_CACHE`, else
    /// `/var/tmp/filecoin-proof-parameters`.
    pub params_dir: PathBuf,
    /// Verify every job's proofs before returning them.
    pub self_check: bool,
    /// Write `TIMELINE,...` log lines to stderr.
    pub timeline_stderr: bool,
    /// Append `TIMELINE,...` log lines to this file.
    pub timeline_file: Option<PathBuf>,
    /// Which provers to use: `auto` (every usable GPU, else the CPU), `cpu`, `N` (the first N
    /// GPUs). Empty: `CUZK_DEVICES`, else `auto`. A build without the `cuda` feature always
    /// proves on the CPU.
    pub devices: String,
    /// Partitions proved per GPU in one call (0: `CUZK_GPU_BATCH`, else automatic).
    pub gpu_batch: usize,
    /// Nice value of the synthesis threads (`CUZK_SYNTHESIS_NICE`; default 10 when a GPU
    /// proves, 0 otherwise): the GPU call's host-side work goes first on a loaded host.
    pub synthesis_nice: Option<i32>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            synthesis_workers: 0,
            synthesis_lookahead: 0,
            memory_budget: 0,
            params_dir: PathBuf::new(),
            self_check: true,
            // CUZK_TIMELINE=1 or =stderr: log lines to stderr; =<path>: append them to a file.
            timeline_stderr: matches!(
                std::env::var("CUZK_TIMELINE").as_deref(),
                Ok("1" | "stderr")
            ),
            timeline_file: std::env::var_os("CUZK_TIMELINE")
                .filter(|v| !v.is_empty() && v != "1" && v != "stderr" && v != "0")
                .map(PathBuf::from),
            devices: String::new(),
            gpu_batch: 0,
            synthesis_nice: None,
        }
    }
}

/// Default parameter directory, as filecoin-proofs resolves it.
pub fn default_params_dir() -> PathBuf {
    std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/filecoin-proof-parameters"))
}

impl Config {
    pub(super) fn resolved(mut self) -> Config {
        if self.params_dir.as_os_str().is_empty() {
            self.params_dir = default_params_dir();
        }
        if self.memory_budget == 0 {
            self.memory_budget = budget::default_budget();
        }
        if self.devices.is_empty() {
            self.devices = std::env::var("CUZK_DEVICES").unwrap_or_else(|_| "auto".into());
        }
        if self.gpu_batch == 0 {
            self.gpu_batch = std::env::var("CUZK_GPU_BATCH")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(DEFAULT_GPU_BATCH);
        }
        if self.synthesis_workers == 0 {
            let cores = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1);
            // One per core: the memory budget, not this, bounds what is in flight.
            self.synthesis_workers = cores.max(2);
        }
        self
    }
}
