//! The engine's configuration as a C caller gives it (`cuzk_config`, any version since v1).

use std::{ffi::c_char, time::Duration};

use super::boundary::{path_in, quiet, Out};
use crate::{
    engine::Config,
    error::{Error, Result},
};

/// Engine configuration. Initialize with `cuzk_config_default`, then change fields. Fields are
/// only ever appended: a caller built against an older header (a smaller `struct_size`) gets
/// the defaults for the fields it does not know.
#[repr(C)]
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
    // SAFETY: non-NULL, initialized by cuzk_config_default (documented); struct_size is the
    // first field of every version.
    let size = unsafe { std::ptr::addr_of!((*cfg).struct_size).read() } as usize;
    if size != std::mem::size_of::<cuzk_config>() && size != CONFIG_V1_SIZE {
        return Err(Error::invalid_argument(format!(
            "cuzk_config.struct_size is {size}, expected {}: initialize it with cuzk_config_default",
            std::mem::size_of::<cuzk_config>()
        )));
    }
    // Fields past the caller's struct_size are not read.
    macro_rules! field {
        ($f:ident, $default:expr) => {
            if std::mem::offset_of!(cuzk_config, $f) + std::mem::size_of_val(&$default) <= size {
                // SAFETY: the field lies inside the caller's struct (checked just above).
                unsafe { std::ptr::addr_of!((*cfg).$f).read() }
            } else {
                $default
            }
        };
    }
    Ok(Config {
        synthesis_workers: field!(synthesis_workers, 0u32) as usize,
        synthesis_lookahead: field!(synthesis_lookahead, 0u32) as usize,
        memory_budget: field!(memory_budget_bytes, 0u64),
        params_dir: path_in(field!(params_dir, std::ptr::null::<c_char>())).unwrap_or_default(),
        self_check: field!(self_check, 1u8) != 0,
        timeline_stderr: field!(timeline_stderr, defaults.timeline_stderr as u8) != 0,
        timeline_file: path_in(field!(timeline_file, std::ptr::null::<c_char>()))
            .or(defaults.timeline_file),
        job_retention: Duration::from_millis(field!(job_retention_ms, 0u64)),
        max_c1_bytes: usize::try_from(field!(max_c1_bytes, 0u64)).unwrap_or(usize::MAX),
        device_cooldown: Duration::from_millis(field!(device_cooldown_ms, 0u64)),
        max_jobs: field!(max_jobs, 0u32) as usize,
        ..defaults
    })
}

/// Fills `*out` with the default configuration. NULL is ignored.
#[no_mangle]
pub extern "C" fn cuzk_config_default(out: *mut cuzk_config) {
    quiet("cuzk_config_default", (), || {
        let Ok(out) = Out::new(out, "out") else {
            return;
        };
        let d = Config::default();
        out.write(cuzk_config {
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
        })
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
        c.struct_size = 12;
        assert_eq!(config_from(&c).unwrap_err().status, Status::InvalidArgument);
    }
}
