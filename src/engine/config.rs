//! The engine's configuration, and every environment variable the engine reads:
//!
//! | variable | setting it gives a default to |
//! |---|---|
//! | `FIL_PROOFS_PARAMETER_CACHE` | [`Config::params_dir`] |
//! | `CUZK_TIMELINE` | [`Config::timeline_stderr`] (`1`, `stderr`) or [`Config::timeline_file`] (a path) |
//! | `CUZK_DEVICES` | [`Config::devices`] |
//! | `CUZK_GPU_BATCH` | [`Config::gpu_batch`] |
//! | `CUZK_GPU_WAIT` | [`Config::gpu_wait_blocking`] (`spin` or `block`) |
//! | `CUZK_SYNTHESIS_NICE` | [`Config::synthesis_nice`] |
//! | `CUZK_JOB_RETENTION_S` | [`Config::job_retention`] |
//! | `CUZK_DEVICE_COOLDOWN_S` | [`Config::device_cooldown`] |
//! | `CUZK_SYNTHESIS` | [`Config::synthesis`] (`native`, `pce`, `pce-host` or `full`) |
//! | `CUZK_PCE_DIR` | [`Config::pce_dir`] |
//! | `CUZK_GPU_PARAMS` | [`Config::gpu_params`] (`auto`, `resident` or `streamed`) |
//! | `CUZK_GPU_MEM_LIMIT` | [`Config::gpu_mem_limit`] (bytes, or with `KiB`, `MiB`, `GiB`) |
//! | `CUZK_GPU_CALL_TIMEOUT_S` | [`Config::gpu_call_timeout`] (seconds, `0`: no watchdog) |
//! | `CUZK_RECORDING_WAIT_S` | [`Config::recording_wait`] (seconds) |
//! | `CUZK_GPU_ROOM_WAIT_S` | [`Config::gpu_room_wait`] (seconds, `0`: no wait) |
//!
//! A field left at its automatic value (0, empty, `None`) takes the variable, else the
//! built-in default; a value set in the `Config` wins over the environment.

use std::{path::PathBuf, time::Duration};

use crate::budget;

/// Partitions per GPU call unless configured (docs/notebook/benchmarks.md, section 4).
pub const DEFAULT_GPU_BATCH: usize = 4;
/// How long a finished job's result is kept for its await (15 minutes).
pub const DEFAULT_JOB_RETENTION: Duration = Duration::from_secs(15 * 60);
/// Longest a cancelled job is kept: its caller already knows how it ended.
pub const CANCELLED_RETENTION: Duration = Duration::from_secs(60);
/// Jobs accepted and not finished at once, unless configured.
pub const DEFAULT_MAX_JOBS: usize = 256;
/// Largest C1 output accepted unless configured: a 32 GiB sector's is about 60-90 MB of JSON.
pub const DEFAULT_MAX_C1_BYTES: usize = 512 << 20;
/// First wait before a device taken out of service after faults is probed again; it doubles
/// after each failed probe, up to [`MAX_DEVICE_COOLDOWN`].
pub const DEFAULT_DEVICE_COOLDOWN: Duration = Duration::from_secs(60);
pub const MAX_DEVICE_COOLDOWN: Duration = Duration::from_secs(30 * 60);
/// Longest a duration setting may be (job retention, device cool-down, the watchdog's
/// allowance): a week. Beyond it `Engine::start` refuses the configuration (INVALID_ARGUMENT)
/// rather than overflow a deadline on a worker later.
pub const MAX_DURATION_SETTING: Duration = Duration::from_secs(7 * 24 * 3600);
/// The GPU-call watchdog's allowance beyond a call's expected time, unless configured.
pub const DEFAULT_GPU_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Longest a partition waits for its circuit's recording (loaded or recorded) where it does
/// not take full synthesis, unless configured.
pub const DEFAULT_RECORDING_WAIT: Duration = Duration::from_secs(15 * 60);
/// Longest a partition waits for room on a GPU that has none now (another process holds it)
/// before it is proved on the CPU, unless configured.
pub const DEFAULT_GPU_ROOM_WAIT: Duration = Duration::from_secs(10 * 60);

/// How partitions are synthesized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynthesisMode {
    /// Every constraint evaluated by the circuit's own code (bellperson's way).
    Full,
    /// Pre-compiled: the circuit's R1CS recorded once, then per partition the witness only
    /// and a sparse product (`crate::pce`); full synthesis while the recording is made. The
    /// product runs in the prover where every prover computes it (cuzk's GPU prover), else on
    /// the host.
    Pce,
    /// Pre-compiled, the sparse product always on the host (to compare the two).
    PceHost,
    /// Pre-compiled as [`SynthesisMode::Pce`], each partition's witness made by the native
    /// generator (`crate::pce::native`: the same witness at ~2% of witness synthesis's CPU)
    /// where it supports the circuit and has not been distrusted for it, else by witness
    /// synthesis. The default.
    Native,
}

impl SynthesisMode {
    /// Whether partitions go through the circuit's recording.
    pub fn pre_compiled(self) -> bool {
        self != SynthesisMode::Full
    }

    /// Whether the sparse product may run in the prover (where every prover computes it).
    pub fn product_in_prover(self) -> bool {
        matches!(self, SynthesisMode::Pce | SynthesisMode::Native)
    }
}

pub use crate::prover::GpuParams;

/// Engine configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Partitions synthesized at once (each on its own thread). 0: automatic (one per core,
    /// at least 2).
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
    /// Partitions proved per GPU in one call (0: `CUZK_GPU_BATCH`, else 4).
    pub gpu_batch: usize,
    /// Threads waiting for a GPU sleep (`true`) or spin. None: `CUZK_GPU_WAIT` (`spin` or
    /// `block`), else sleep.
    pub gpu_wait_blocking: Option<bool>,
    /// Nice value of the synthesis threads (`CUZK_SYNTHESIS_NICE`; default 10 when a GPU
    /// proves, 0 otherwise): the GPU call's host-side work goes first on a loaded host.
    pub synthesis_nice: Option<i32>,
    /// How long a finished job's result waits for its await before it is dropped (a later
    /// await answers NOT_FOUND). Zero: `CUZK_JOB_RETENTION_S`, else 15 minutes. Cancelled jobs
    /// are kept at most a minute.
    pub job_retention: Duration,
    /// Jobs accepted and not finished at once; a submit beyond it is refused with
    /// RESOURCE_EXHAUSTED. 0: 256.
    pub max_jobs: usize,
    /// Largest C1 output accepted, in bytes; a larger one is INVALID_INPUT. 0: 512 MiB.
    pub max_c1_bytes: usize,
    /// How long a device taken out of service after repeated faults waits before it is probed
    /// and, if the probe passes, put back (doubling after each failed probe, up to 30 min).
    /// Zero: `CUZK_DEVICE_COOLDOWN_S`, else 60 s.
    pub device_cooldown: Duration,
    /// Synthesis path. None: `CUZK_SYNTHESIS` (`native`, `pce`, `pce-host` or `full`), else
    /// native.
    pub synthesis: Option<SynthesisMode>,
    /// Directory of the circuits' recordings (`*.cuzk-pce`). Empty: `CUZK_PCE_DIR`, else the
    /// parameter directory.
    pub pce_dir: PathBuf,
    /// Where the GPU prover keeps the parameters. None: `CUZK_GPU_PARAMS` (`auto`,
    /// `resident` or `streamed`), else automatic.
    pub gpu_params: Option<GpuParams>,
    /// Device memory each GPU is treated as having, in bytes (for a card shared with other
    /// work, and for tests of small cards on large ones): the prover plans within it and its
    /// allocations fail past it. Some(0): the card's own memory. None: `CUZK_GPU_MEM_LIMIT`,
    /// else the card's own.
    pub gpu_mem_limit: Option<u64>,
    /// The GPU-call watchdog: a call on a GPU still running this long past its expected
    /// time (ten times the slowest call of the circuit seen on that backend, per partition)
    /// takes its devices out of service and its partitions are synthesized again for the other
    /// devices or the CPU; shutdown waits no longer than that for a call. Some(ZERO): no
    /// watchdog. None: `CUZK_GPU_CALL_TIMEOUT_S`, else 300 s.
    pub gpu_call_timeout: Option<Duration>,
    /// Prove production sector sizes (32 GiB, 64 GiB) with random parameter sets made by
    /// `cuzk params gen` (marked: `params::is_random_set`). Their proofs pass the self-check
    /// and are rejected by the chain, so this is for benchmarks only. None:
    /// `CUZK_ALLOW_RANDOM_PARAMS` (`1`), else refused with PARAMS.
    pub allow_random_params: Option<bool>,
    /// Longest a partition waits for its circuit's recording where it does not take full
    /// synthesis meanwhile (the recording is loaded from its file, or the circuit is of 2^27
    /// constraints, or no prover takes a full assignment); past it the job fails with PROVING,
    /// naming the recording. None: `CUZK_RECORDING_WAIT_S`, else 15 minutes.
    pub recording_wait: Option<Duration>,
    /// Longest a partition waits for room on a GPU that has none now (device memory held by
    /// another process, the memory budget busy for a parameter read): the call is tried again
    /// as room comes back, then the partition goes to the CPU. A GPU that can never hold the
    /// circuit is passed over at once. Some(ZERO): no wait. None: `CUZK_GPU_ROOM_WAIT_S`, else
    /// 10 minutes.
    pub gpu_room_wait: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        let timeline = std::env::var_os("CUZK_TIMELINE");
        Config {
            synthesis_workers: 0,
            synthesis_lookahead: 0,
            memory_budget: 0,
            params_dir: PathBuf::new(),
            self_check: true,
            // CUZK_TIMELINE=1 or =stderr: log lines to stderr; =<path>: append them to a file.
            timeline_stderr: matches!(
                timeline.as_ref().and_then(|v| v.to_str()),
                Some("1" | "stderr")
            ),
            timeline_file: timeline
                .filter(|v| !v.is_empty() && v != "1" && v != "stderr" && v != "0")
                .map(PathBuf::from),
            devices: String::new(),
            gpu_batch: 0,
            gpu_wait_blocking: None,
            synthesis_nice: None,
            job_retention: Duration::ZERO,
            max_jobs: 0,
            max_c1_bytes: 0,
            device_cooldown: Duration::ZERO,
            synthesis: None,
            pce_dir: PathBuf::new(),
            gpu_params: None,
            gpu_mem_limit: None,
            gpu_call_timeout: None,
            allow_random_params: None,
            recording_wait: None,
            gpu_room_wait: None,
        }
    }
}

/// Default parameter directory, as filecoin-proofs resolves it.
pub fn default_params_dir() -> PathBuf {
    std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/filecoin-proof-parameters"))
}

/// A size in bytes: a number, optionally followed by `K`/`KiB`, `M`/`MiB` or `G`/`GiB`
/// (powers of 1024).
pub fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        _ => return None,
    };
    num.parse::<u64>().ok()?.checked_mul(1 << shift)
}

fn env_parse<T: std::str::FromStr>(name: &str) -> Option<T> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse() {
        Ok(x) => Some(x),
        Err(_) => {
            log::warn!("ignoring {name}={v:?}: not a valid value");
            None
        }
    }
}

/// The choice a variable names, of `choices` (the first is the default when it is unset or
/// names none of them, with a warning in that case).
fn env_choice<T: Copy>(name: &str, choices: &[(&str, T)]) -> T {
    let v = std::env::var(name).ok();
    match v.as_deref() {
        None => choices[0].1,
        Some(v) => choices
            .iter()
            .find(|(n, _)| *n == v.trim())
            .map(|c| c.1)
            .unwrap_or_else(|| {
                let names: Vec<&str> = choices.iter().map(|c| c.0).collect();
                log::warn!("ignoring {name}={v:?}: use {}", names.join(" or "));
                choices[0].1
            }),
    }
}

/// Seconds from variable `name` (positive); a value past what a `Duration` holds reads as the
/// longest one, which `Config::check` then refuses.
fn env_secs(name: &str) -> Option<Duration> {
    env_parse::<f64>(name)
        .filter(|s| !s.is_nan() && *s > 0.0)
        .map(|s| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX))
}

impl Config {
    /// Refuses a resolved configuration whose settings are out of range (INVALID_ARGUMENT).
    pub(super) fn check(&self) -> crate::error::Result<()> {
        let durations = [
            ("job_retention (CUZK_JOB_RETENTION_S)", self.job_retention),
            (
                "device_cooldown (CUZK_DEVICE_COOLDOWN_S)",
                self.device_cooldown,
            ),
            (
                "gpu_call_timeout (CUZK_GPU_CALL_TIMEOUT_S)",
                self.gpu_call_timeout.unwrap_or_default(),
            ),
            (
                "recording_wait (CUZK_RECORDING_WAIT_S)",
                self.recording_wait.unwrap_or_default(),
            ),
            (
                "gpu_room_wait (CUZK_GPU_ROOM_WAIT_S)",
                self.gpu_room_wait.unwrap_or_default(),
            ),
        ];
        for (name, d) in durations {
            if d > MAX_DURATION_SETTING {
                return Err(crate::error::Error::invalid_argument(format!(
                    "{name} is {d:?}: at most {} days",
                    MAX_DURATION_SETTING.as_secs() / 86400
                )));
            }
        }
        Ok(())
    }

    /// The configuration with every automatic value replaced by what it resolves to (except
    /// the synthesis nice value, which depends on the provers: [`Config::with_nice_for`]).
    pub(super) fn resolved(self) -> Config {
        self.resolve_places()
            .resolve_limits()
            .resolve_modes()
            .resolve_gpu_limits()
            .resolve_recordings()
    }

    /// Where parameters are, the memory budget, the devices and how a GPU call is made.
    fn resolve_places(mut self) -> Config {
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
            self.gpu_batch = env_parse("CUZK_GPU_BATCH")
                .filter(|b| *b > 0)
                .unwrap_or(DEFAULT_GPU_BATCH);
        }
        if self.gpu_wait_blocking.is_none() {
            self.gpu_wait_blocking = Some(std::env::var("CUZK_GPU_WAIT").as_deref() != Ok("spin"));
        }
        self
    }

    /// Synthesis workers, how long and how many jobs are kept, and the devices' cool-down.
    fn resolve_limits(mut self) -> Config {
        if self.synthesis_workers == 0 {
            let cores = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1);
            // One per core: the memory budget, not this, bounds what is in flight.
            self.synthesis_workers = cores.max(2);
        }
        if self.job_retention.is_zero() {
            self.job_retention = env_secs("CUZK_JOB_RETENTION_S").unwrap_or(DEFAULT_JOB_RETENTION);
        }
        if self.max_jobs == 0 {
            self.max_jobs = DEFAULT_MAX_JOBS;
        }
        if self.max_c1_bytes == 0 {
            self.max_c1_bytes = DEFAULT_MAX_C1_BYTES;
        }
        if self.device_cooldown.is_zero() {
            self.device_cooldown =
                env_secs("CUZK_DEVICE_COOLDOWN_S").unwrap_or(DEFAULT_DEVICE_COOLDOWN);
        }
        self
    }

    /// The synthesis path and where the GPU keeps the parameters.
    fn resolve_modes(mut self) -> Config {
        if self.synthesis.is_none() {
            self.synthesis = Some(env_choice(
                "CUZK_SYNTHESIS",
                &[
                    ("native", SynthesisMode::Native),
                    ("pce", SynthesisMode::Pce),
                    ("pce-host", SynthesisMode::PceHost),
                    ("full", SynthesisMode::Full),
                ],
            ));
        }
        if self.gpu_params.is_none() {
            self.gpu_params = Some(env_choice(
                "CUZK_GPU_PARAMS",
                &[
                    ("auto", GpuParams::Auto),
                    ("resident", GpuParams::Resident),
                    ("streamed", GpuParams::Streamed),
                ],
            ));
        }
        self
    }

    /// The GPU's memory limit and call watchdog, the recording and room waits, and random
    /// parameters.
    fn resolve_gpu_limits(mut self) -> Config {
        if self.gpu_mem_limit.is_none() {
            self.gpu_mem_limit = Some(match std::env::var("CUZK_GPU_MEM_LIMIT") {
                Ok(v) if !v.trim().is_empty() => parse_bytes(&v).unwrap_or_else(|| {
                    log::warn!("ignoring CUZK_GPU_MEM_LIMIT={v:?}: not a size in bytes");
                    0
                }),
                _ => 0,
            });
        }
        if self.gpu_call_timeout.is_none() {
            self.gpu_call_timeout = Some(match std::env::var("CUZK_GPU_CALL_TIMEOUT_S") {
                Ok(v) if !v.trim().is_empty() => match v.trim().parse::<u64>() {
                    Ok(s) => Duration::from_secs(s),
                    Err(_) => {
                        log::warn!("ignoring CUZK_GPU_CALL_TIMEOUT_S={v:?}: not whole seconds");
                        DEFAULT_GPU_CALL_TIMEOUT
                    }
                },
                _ => DEFAULT_GPU_CALL_TIMEOUT,
            });
        }
        if self.recording_wait.is_none() {
            self.recording_wait =
                Some(env_secs("CUZK_RECORDING_WAIT_S").unwrap_or(DEFAULT_RECORDING_WAIT));
        }
        if self.gpu_room_wait.is_none() {
            self.gpu_room_wait = Some(match std::env::var("CUZK_GPU_ROOM_WAIT_S") {
                Ok(v) if v.trim() == "0" => Duration::ZERO,
                _ => env_secs("CUZK_GPU_ROOM_WAIT_S").unwrap_or(DEFAULT_GPU_ROOM_WAIT),
            });
        }
        if self.allow_random_params.is_none() {
            self.allow_random_params = Some(matches!(
                std::env::var("CUZK_ALLOW_RANDOM_PARAMS")
                    .as_deref()
                    .map(str::trim),
                Ok("1" | "true" | "yes")
            ));
        }
        self
    }

    /// Where the circuits' recordings are (the parameter directory once resolved).
    fn resolve_recordings(mut self) -> Config {
        if self.pce_dir.as_os_str().is_empty() {
            self.pce_dir = std::env::var_os("CUZK_PCE_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| self.params_dir.clone());
        }
        self
    }

    /// Fills in the synthesis nice value: `CUZK_SYNTHESIS_NICE`, else 10 when a GPU proves.
    pub(super) fn with_nice_for(mut self, gpu: bool) -> Config {
        if self.synthesis_nice.is_none() {
            self.synthesis_nice =
                Some(env_parse("CUZK_SYNTHESIS_NICE").unwrap_or(if gpu { 10 } else { 0 }));
        }
        self
    }

    /// Whether a request for `self` is answered by an engine running with `running` (its
    /// resolved configuration): every setting given must be equal; automatic ones match what
    /// they resolved to.
    pub(super) fn matches(&self, running: &Config) -> bool {
        let want = self.clone().resolved();
        let auto_or = |auto: bool, same: bool| auto || same;
        auto_or(
            self.synthesis_workers == 0,
            want.synthesis_workers == running.synthesis_workers,
        ) && want.synthesis_lookahead == running.synthesis_lookahead
            && auto_or(
                self.memory_budget == 0,
                want.memory_budget == running.memory_budget,
            )
            && want.params_dir == running.params_dir
            && want.self_check == running.self_check
            && want.timeline_stderr == running.timeline_stderr
            && want.timeline_file == running.timeline_file
            && want.devices == running.devices
            && want.gpu_batch == running.gpu_batch
            && want.gpu_wait_blocking == running.gpu_wait_blocking
            && auto_or(
                self.synthesis_nice.is_none(),
                self.synthesis_nice == running.synthesis_nice,
            )
            && want.job_retention == running.job_retention
            && want.max_jobs == running.max_jobs
            && want.max_c1_bytes == running.max_c1_bytes
            && want.device_cooldown == running.device_cooldown
            && want.synthesis == running.synthesis
            && want.pce_dir == running.pce_dir
            && want.gpu_params == running.gpu_params
            && want.gpu_mem_limit == running.gpu_mem_limit
            && want.gpu_call_timeout == running.gpu_call_timeout
            && want.allow_random_params == running.allow_random_params
            && want.recording_wait == running.recording_wait
            && want.gpu_room_wait == running.gpu_room_wait
    }

    /// The synthesis path (of a resolved configuration).
    pub fn synthesis_mode(&self) -> SynthesisMode {
        self.synthesis.unwrap_or(SynthesisMode::Native)
    }
}

#[cfg(test)]
mod tests {
    use super::{Config, GpuParams};

    type Change = fn(&mut Config);

    /// A configuration with every optional setting given.
    fn every_setting_given() -> Config {
        use super::SynthesisMode;
        use std::{path::PathBuf, time::Duration};
        Config {
            synthesis_workers: 3,
            synthesis_lookahead: 1,
            memory_budget: 1 << 30,
            params_dir: PathBuf::from("/params"),
            self_check: true,
            timeline_stderr: false,
            timeline_file: None,
            devices: "cpu".into(),
            gpu_batch: 2,
            gpu_wait_blocking: Some(true),
            synthesis_nice: Some(5),
            job_retention: Duration::from_secs(60),
            max_jobs: 10,
            max_c1_bytes: 1 << 20,
            device_cooldown: Duration::from_secs(7),
            synthesis: Some(SynthesisMode::Pce),
            pce_dir: PathBuf::from("/pce"),
            gpu_params: Some(GpuParams::Resident),
            gpu_mem_limit: Some(0),
            gpu_call_timeout: Some(Duration::from_secs(9)),
            allow_random_params: Some(false),
            recording_wait: Some(Duration::from_secs(11)),
            gpu_room_wait: Some(Duration::from_secs(12)),
        }
    }

    /// One change of each field of a configuration, by name. The destructuring names every
    /// field, so a new field does not compile until it is listed here.
    fn one_change_per_field(base: &Config) -> Vec<(&'static str, Change)> {
        use super::SynthesisMode;
        use std::{path::PathBuf, time::Duration};
        let Config {
            synthesis_workers: _,
            synthesis_lookahead: _,
            memory_budget: _,
            params_dir: _,
            self_check: _,
            timeline_stderr: _,
            timeline_file: _,
            devices: _,
            gpu_batch: _,
            gpu_wait_blocking: _,
            synthesis_nice: _,
            job_retention: _,
            max_jobs: _,
            max_c1_bytes: _,
            device_cooldown: _,
            synthesis: _,
            pce_dir: _,
            gpu_params: _,
            gpu_mem_limit: _,
            gpu_call_timeout: _,
            allow_random_params: _,
            recording_wait: _,
            gpu_room_wait: _,
        } = base;
        vec![
            ("synthesis_workers", |c| c.synthesis_workers += 1),
            ("synthesis_lookahead", |c| c.synthesis_lookahead += 1),
            ("memory_budget", |c| c.memory_budget *= 2),
            ("params_dir", |c| c.params_dir = PathBuf::from("/other")),
            ("self_check", |c| c.self_check = !c.self_check),
            ("timeline_stderr", |c| {
                c.timeline_stderr = !c.timeline_stderr
            }),
            ("timeline_file", |c| {
                c.timeline_file = Some(PathBuf::from("/t"))
            }),
            ("devices", |c| c.devices = "0".into()),
            ("gpu_batch", |c| c.gpu_batch += 1),
            ("gpu_wait_blocking", |c| c.gpu_wait_blocking = Some(false)),
            ("synthesis_nice", |c| c.synthesis_nice = Some(6)),
            ("job_retention", |c| c.job_retention *= 2),
            ("max_jobs", |c| c.max_jobs += 1),
            ("max_c1_bytes", |c| c.max_c1_bytes += 1),
            ("device_cooldown", |c| c.device_cooldown *= 2),
            ("synthesis", |c| c.synthesis = Some(SynthesisMode::Full)),
            ("pce_dir", |c| c.pce_dir = PathBuf::from("/other-pce")),
            ("gpu_params", |c| c.gpu_params = Some(GpuParams::Streamed)),
            ("gpu_mem_limit", |c| c.gpu_mem_limit = Some(16 << 30)),
            ("gpu_call_timeout", |c| {
                c.gpu_call_timeout = Some(Duration::ZERO)
            }),
            ("allow_random_params", |c| {
                c.allow_random_params = Some(true)
            }),
            ("recording_wait", |c| {
                c.recording_wait = Some(Duration::from_secs(1))
            }),
            ("gpu_room_wait", |c| c.gpu_room_wait = Some(Duration::ZERO)),
        ]
    }

    /// `matches` compares every setting: a configuration that differs from the running one in
    /// any single field (given explicitly) does not match, and the same one does.
    #[test]
    fn every_setting_is_part_of_what_must_match() {
        let base = every_setting_given();
        let running = base.clone().resolved();
        assert!(base.matches(&running), "the same configuration must match");
        let changes = one_change_per_field(&base);
        assert_eq!(changes.len(), 23, "one change per field of Config");
        for (name, change) in &changes {
            let mut other = base.clone();
            change(&mut other);
            assert!(
                !other.matches(&running),
                "a different {name} must not match"
            );
        }
    }

    /// A duration past what a `Duration` holds is read without a panic, and a duration too long
    /// for a deadline is refused at start, by name. The hazard: parsing one
    /// (`CUZK_DEVICE_COOLDOWN_S=1e30`) panics while the configuration is resolved, and a huge
    /// one set in the `Config` overflows a deadline on a prover worker later.
    #[test]
    fn a_duration_out_of_range_is_refused_not_a_panic() {
        use super::{env_secs, MAX_DURATION_SETTING};
        use std::time::Duration;
        // A variable only this test reads.
        std::env::set_var("CUZK_TEST_HUGE_SECONDS", "1e30");
        let read = std::panic::catch_unwind(|| env_secs("CUZK_TEST_HUGE_SECONDS"));
        assert_eq!(
            read.ok().flatten(),
            Some(Duration::MAX),
            "no panic, the longest"
        );
        std::env::set_var("CUZK_TEST_HUGE_SECONDS", "NaN");
        assert_eq!(env_secs("CUZK_TEST_HUGE_SECONDS"), None);
        for cfg in [
            Config {
                device_cooldown: Duration::MAX,
                ..Config::default()
            },
            Config {
                job_retention: Duration::from_secs(u64::MAX),
                ..Config::default()
            },
            Config {
                gpu_call_timeout: Some(MAX_DURATION_SETTING + Duration::from_secs(1)),
                ..Config::default()
            },
        ] {
            let e = cfg.resolved().check().unwrap_err();
            assert_eq!(e.status, crate::error::Status::InvalidArgument, "{e}");
            assert!(e.message.contains("at most 7 days"), "{e}");
        }
        let fine = Config {
            device_cooldown: MAX_DURATION_SETTING,
            ..Config::default()
        };
        fine.resolved().check().unwrap();
    }

    #[test]
    fn a_gpu_memory_limit_reads_bytes_and_binary_units() {
        use super::parse_bytes;
        assert_eq!(parse_bytes("17179869184"), Some(16 << 30));
        assert_eq!(parse_bytes("16GiB"), Some(16 << 30));
        assert_eq!(parse_bytes(" 12G "), Some(12 << 30));
        assert_eq!(parse_bytes("512MiB"), Some(512 << 20));
        assert_eq!(parse_bytes("64K"), Some(64 << 10));
        assert_eq!(parse_bytes("16GB"), None);
        assert_eq!(parse_bytes("lots"), None);
        assert_eq!(parse_bytes("-1"), None);
        assert_eq!(parse_bytes("99999999999G"), None);
    }

    #[test]
    fn the_gpu_parameter_mode_is_part_of_what_must_match() {
        let running = Config {
            gpu_params: Some(GpuParams::Streamed),
            ..Config::default()
        }
        .resolved();
        let same = Config {
            gpu_params: Some(GpuParams::Streamed),
            ..Config::default()
        };
        let other = Config {
            gpu_params: Some(GpuParams::Resident),
            ..Config::default()
        };
        assert!(same.matches(&running));
        assert!(!other.matches(&running));
        // A setting given explicitly survives resolution.
        assert_eq!(other.resolved().gpu_params, Some(GpuParams::Resident));
    }
}
