//! The engine's configuration as a C caller gives it (`cuzk_config`, any version since v1).

use std::{ffi::c_char, time::Duration};

use super::boundary::{path_in, quiet, sized_in, Out};
use crate::{engine::Config, error::Result};

/// Engine configuration. Initialize with `cuzk_config_default`, then change fields. Fields are
/// only ever appended: a caller built against an older header (a smaller `struct_size`) gets
/// the defaults for the fields it does not know.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cuzk_config {
    /// `sizeof(cuzk_config)`, set by `cuzk_config_default`.
    pub struct_size: u32,
    /// Partitions synthesized at once; 0: automatic (one per core, at least 2).
    pub synthesis_workers: u32,
    /// Synthesized partitions allowed to wait for a prover before synthesis pauses; 0:
    /// automatic (two prover calls' worth: 2 for the CPU prover, 2 × GPUs × partitions per GPU
    /// call for the GPU prover).
    pub synthesis_lookahead: u32,
    /// Memory budget in bytes for resident parameters plus in-flight partitions; 0: 90% of
    /// the memory available at start.
    pub memory_budget_bytes: u64,
    /// Parameter directory (NUL-terminated bytes, any encoding, copied); NULL:
    /// `FIL_PROOFS_PARAMETER_CACHE`, else `/var/tmp/filecoin-proof-parameters`.
    pub params_dir: *const c_char,
    /// Verify every job's proofs before returning them (default 1; 0 turns it off, never do
    /// that in production).
    pub self_check: u8,
    /// Write `TIMELINE,...` lines to stderr (default: 1 when `CUZK_TIMELINE=1` is set).
    pub timeline_stderr: u8,
    /// Append `TIMELINE,...` lines to this file (NUL-terminated bytes, copied); NULL: the path
    /// in `CUZK_TIMELINE` if it holds one, else none.
    pub timeline_file: *const c_char,
    /// Milliseconds a finished job's result waits for its `cuzk_await` before it is dropped;
    /// 0: `CUZK_JOB_RETENTION_S`, else 15 minutes (a cancelled job: at most a minute).
    pub job_retention_ms: u64,
    /// Largest C1 output accepted, bytes (larger: `CUZK_STATUS_INVALID_INPUT`); 0: 512 MiB.
    pub max_c1_bytes: u64,
    /// Milliseconds a device taken out of service after repeated faults waits before it is
    /// probed and put back; 0: `CUZK_DEVICE_COOLDOWN_S`, else 60 s.
    pub device_cooldown_ms: u64,
    /// Jobs queued or running at once (more: `CUZK_STATUS_RESOURCE_EXHAUSTED`); 0: 256.
    pub max_jobs: u32,
    pub _reserved: u32,
}

/// The size of the first version of `cuzk_config` (callers built against it still work),
/// frozen: a literal, with every v1 field's offset pinned below, so a field inserted before the
/// v1 end (an ABI break for those callers) fails the build instead of moving this.
pub(super) const CONFIG_V1_SIZE: usize = 48;

pub(super) fn config_from(cfg: *const cuzk_config) -> Result<Config> {
    let defaults = Config::default();
    if cfg.is_null() {
        return Ok(defaults);
    }
    let c = sized_in(
        cfg,
        "cuzk_config",
        CONFIG_V1_SIZE,
        default_config(&defaults),
    )?;
    Ok(Config {
        synthesis_workers: c.synthesis_workers as usize,
        synthesis_lookahead: c.synthesis_lookahead as usize,
        memory_budget: c.memory_budget_bytes,
        params_dir: path_in(c.params_dir).unwrap_or_default(),
        self_check: c.self_check != 0,
        timeline_stderr: c.timeline_stderr != 0,
        timeline_file: path_in(c.timeline_file).or(defaults.timeline_file.clone()),
        job_retention: Duration::from_millis(c.job_retention_ms),
        max_c1_bytes: usize::try_from(c.max_c1_bytes).unwrap_or(usize::MAX),
        device_cooldown: Duration::from_millis(c.device_cooldown_ms),
        max_jobs: c.max_jobs as usize,
        ..defaults
    })
}

/// What `cuzk_config_default` writes: every field automatic but the two flags, which take
/// the defaults' (the timeline's from `CUZK_TIMELINE`).
fn default_config(d: &Config) -> cuzk_config {
    cuzk_config {
        struct_size: std::mem::size_of::<cuzk_config>() as u32,
        synthesis_workers: 0,
        synthesis_lookahead: 0,
        memory_budget_bytes: 0,
        params_dir: std::ptr::null(),
        self_check: d.self_check as u8,
        timeline_stderr: d.timeline_stderr as u8,
        timeline_file: std::ptr::null(),
        job_retention_ms: 0,
        max_c1_bytes: 0,
        device_cooldown_ms: 0,
        max_jobs: 0,
        _reserved: 0,
    }
}

/// Fills `*out` with the default configuration. NULL is ignored.
#[no_mangle]
pub extern "C" fn cuzk_config_default(out: *mut cuzk_config) {
    quiet("cuzk_config_default", (), || {
        let Ok(out) = Out::new(out, "out") else {
            return;
        };
        out.write(default_config(&Config::default()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;

    #[test]
    fn old_config_sizes_read_only_their_fields_and_flags_are_integers() {
        let mut c = std::mem::MaybeUninit::<cuzk_config>::uninit();
        cuzk_config_default(c.as_mut_ptr());
        // SAFETY: initialized above.
        let mut c = unsafe { c.assume_init() };
        c.self_check = 2;
        c.max_jobs = 7;
        assert_eq!(config_from(&c).unwrap().max_jobs, 7);
        assert!(config_from(&c).unwrap().self_check);
        c.struct_size = CONFIG_V1_SIZE as u32;
        let v1 = config_from(&c).unwrap();
        assert_eq!(v1.max_jobs, 0, "a v1 caller's struct has no max_jobs");
        c.job_retention_ms = 5000;
        c.struct_size = CONFIG_V1_SIZE as u32 + 8;
        let v = config_from(&c).unwrap();
        assert_eq!(
            (v.job_retention.as_millis(), v.max_jobs),
            (5000, 0),
            "a size between versions reads the fields it holds whole"
        );
        for size in [
            0,
            12,
            CONFIG_V1_SIZE - 1,
            std::mem::size_of::<cuzk_config>() + 8,
        ] {
            c.struct_size = size as u32;
            let e = config_from(&c).unwrap_err();
            assert_eq!(e.status, Status::InvalidArgument, "{size}");
            assert!(e.message.contains("cuzk_config.struct_size"), "{e}");
        }
    }
}
