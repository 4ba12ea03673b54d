//! The C ABI. Every `extern "C"` function and every raw-pointer cast of the crate lives under
//! `src/ffi/` (this module, the top layer, and `sys`, the bottom one).
//!
//! Conventions (also in `include/cuzk.h`):
//! * Inputs are borrowed for the duration of the call only; nothing the caller passes is kept.
//! * Outputs are written only on success, except `cuzk_error`, which is written on failure
//!   when the caller passes one. A `cuzk_error` must be zeroed or hold an error from cuzk: a
//!   message it holds is freed before it is overwritten.
//! * Memory returned in `cuzk_bytes` / `cuzk_error` is owned by the caller and must be freed
//!   with `cuzk_bytes_free` / `cuzk_error_free` (both accept NULL and already-freed values).
//! * No panic crosses the boundary: it becomes `CUZK_STATUS_PANIC`.
//! * Every function is thread-safe. From inside a timeline callback, the calls that would wait
//!   for the thread running the callback answer `CUZK_STATUS_IN_CALLBACK`.
//! * A length above `PTRDIFF_MAX` is `CUZK_STATUS_INVALID_ARGUMENT`; flag fields are read as
//!   integers (0 false, anything else true).

#![allow(non_camel_case_types)]

use std::{
    ffi::{c_char, c_void, CStr, CString, OsStr},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use crate::{
    engine::{self, Config, JobRequest},
    error::{Error, Result, Status},
    porep::FixtureShape,
    timeline::Event,
};

/// `partition` value of job-level timeline events (`UINT32_MAX`).
pub const CUZK_NO_PARTITION: u32 = 0xFFFF_FFFF;

/// Bytes owned by the caller after a successful call; free with `cuzk_bytes_free`.
#[repr(C)]
pub struct cuzk_bytes {
    pub ptr: *mut u8,
    pub len: usize,
}

/// An error: its status and a NUL-terminated UTF-8 message owned by the caller (free with
/// `cuzk_error_free`). Zeroed (`{0, NULL}`) means no error. Pass it zeroed, or holding an
/// earlier error from cuzk (whose message is then freed when it is overwritten).
#[repr(C)]
pub struct cuzk_error {
    pub status: Status,
    pub message: *mut c_char,
}

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

/// One asynchronous job. Initialize with `cuzk_job_request_default`, then set the fields.
#[repr(C)]
pub struct cuzk_job_request {
    /// `sizeof(cuzk_job_request)`, set by `cuzk_job_request_default`.
    pub struct_size: u32,
    /// Higher runs first (default 0).
    pub priority: i32,
    /// C1 output bytes (raw JSON or Commit2In envelope), borrowed for the call only.
    pub c1_ptr: *const u8,
    pub c1_len: usize,
    pub sector_id: u64,
    pub prover_id: [u8; 32],
    /// Test fixture shapes only: partition count (0: the proof type's).
    pub fixture_partitions: u32,
    /// Test fixture shapes only: layer count (0: the proof type's).
    pub fixture_layers: u32,
}

/// A timeline event, valid only during the callback.
#[repr(C)]
pub struct cuzk_timeline_event {
    /// `sizeof(cuzk_timeline_event)`: fields are only appended.
    pub struct_size: u32,
    /// Event kind, a `cuzk_event_kind` value: 0 JOB_QUEUED, 1 SYNTH_START, 2 SYNTH_END, 3 CHAN_SEND, 4 GPU_PICKUP,
    /// 5 GPU_START, 6 GPU_END, 7 JOB_DONE, 8 JOB_FAILED, 9 JOB_CANCELLED.
    pub kind: u32,
    /// Microseconds since engine start (monotonic).
    pub t_us: u64,
    pub job_id: u64,
    /// Partition index; `CUZK_NO_PARTITION` for job-level events.
    pub partition: u32,
    /// Synthesis worker (SYNTH_*) or device worker (GPU_*) index.
    pub worker: u32,
    /// Bytes reserved (SYNTH_START), milliseconds (SYNTH_END, GPU_END, JOB_*), partitions
    /// (JOB_QUEUED), else 0.
    pub value: u64,
    /// NUL-terminated detail text (device name, error), borrowed for the callback only.
    pub detail: *const c_char,
}

/// Timeline callback: `userdata` first. Called by the engine's one timeline thread, one event
/// at a time, in order; never by a worker, never with an engine lock held. It should return
/// quickly (events queue up behind it; past about a million waiting, new ones are dropped and
/// counted). From inside it a callback may call `cuzk_timeline_register`,
/// `cuzk_timeline_unregister` (its own handle or another's: returns at once, and the callback
/// is not called again), `cuzk_submit`, `cuzk_cancel`, `cuzk_poll`, `cuzk_await` with a zero
/// timeout, `cuzk_engine_status`, `cuzk_engine_metrics`, `cuzk_engine_admission`,
/// `cuzk_device_set_enabled`, `cuzk_log_set_callback` and
/// `cuzk_verify_seal`; `cuzk_engine_start`, `cuzk_engine_shutdown`, `cuzk_seal_commit_phase2`
/// and a waiting `cuzk_await` answer `CUZK_STATUS_IN_CALLBACK`. It must not throw (C++).
pub type cuzk_timeline_cb =
    Option<unsafe extern "C" fn(userdata: *mut c_void, ev: *const cuzk_timeline_event)>;

/// `s` as a C string: an interior NUL (which C would read as the end) becomes a space.
fn c_text(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

fn write_error(err_out: *mut cuzk_error, e: &Error) {
    if err_out.is_null() {
        return;
    }
    let msg = c_text(&e.message);
    // SAFETY: the caller passes a valid, writable cuzk_error that is zeroed or holds an error
    // from cuzk (documented); NULL checked above. Its old message came from CString::into_raw.
    unsafe {
        let old = (*err_out).message;
        if !old.is_null() {
            drop(CString::from_raw(old));
        }
        *err_out = cuzk_error {
            status: e.status,
            message: msg.into_raw(),
        };
    }
}

/// Runs `f` behind the panic boundary; writes `err_out` on failure.
fn boundary(err_out: *mut cuzk_error, f: impl FnOnce() -> Result<()>) -> Status {
    // A C or Go host has no Rust logger: the library's own takes the records (`RUST_LOG`).
    crate::logging::install();
    match crate::error::catch("cuzk", Status::Panic, f) {
        Ok(()) => Status::Ok,
        Err(e) => {
            write_error(err_out, &e);
            e.status
        }
    }
}

/// A caller's buffer as a slice, after the checks `slice::from_raw_parts` needs.
fn bytes_in<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    if ptr.is_null() {
        return Err(Error::invalid_argument(format!("{what} is NULL")));
    }
    if len > isize::MAX as usize {
        return Err(Error::invalid_argument(format!(
            "{what}: length {len} is above PTRDIFF_MAX"
        )));
    }
    // SAFETY: the caller guarantees `ptr` points to `len` readable bytes for the call; the
    // length fits an allocation.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

fn write_bytes(out: *mut cuzk_bytes, data: Vec<u8>) {
    let boxed = data.into_boxed_slice();
    let len = boxed.len();
    let ptr = Box::into_raw(boxed) as *mut u8;
    // SAFETY: `out` was checked non-NULL by the caller of this helper.
    unsafe { *out = cuzk_bytes { ptr, len } };
}

/// The bytes the library may write into a caller's out-struct whose first field is
/// `struct_size` (u32), set by the caller to `sizeof` the struct as its header declares it: at
/// most that, at most the library's own struct. A caller built against an older header (a
/// shorter struct) gets the fields it knows and nothing past them. Too small to hold a field (0:
/// never set): an argument error naming the struct.
fn sized_out<T>(out: *mut T, name: &str) -> Result<usize> {
    const _: () = assert!(std::mem::size_of::<u32>() == 4);
    // SAFETY: `out` was checked non-NULL by the caller of this helper, and is aligned for T,
    // whose first field is the u32 `struct_size` (checked per struct by `offset_of!` below).
    let size = unsafe { (out as *const u32).read() } as usize;
    if size < 8 {
        return Err(Error::invalid_argument(format!(
            "{name}.struct_size is {size}: set it to sizeof({name}) before the call"
        )));
    }
    Ok(size.min(std::mem::size_of::<T>()))
}

/// Writes the first `len` bytes of `value` (from `sized_out`) to `*out` and sets its
/// `struct_size` to `len`, so a caller built against a newer header sees which fields are filled.
fn write_sized<T>(out: *mut T, value: T, len: usize) {
    debug_assert!((8..=std::mem::size_of::<T>()).contains(&len));
    // SAFETY: `out` is non-NULL, aligned, and the caller's struct holds `len` bytes (its own
    // struct_size); `value` is a whole T, so its first `len` bytes are readable (padding is
    // copied as bytes, never read as a value).
    unsafe {
        std::ptr::copy_nonoverlapping(&value as *const T as *const u8, out as *mut u8, len);
        (out as *mut u32).write(len as u32);
    }
}

/// A NUL-terminated path of any encoding (Unix paths are bytes).
fn path_in(p: *const c_char) -> Option<PathBuf> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL, NUL-terminated (documented).
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    #[cfg(unix)]
    let os: &OsStr = std::os::unix::ffi::OsStrExt::from_bytes(bytes);
    #[cfg(not(unix))]
    let os: &OsStr = OsStr::new(std::str::from_utf8(bytes).unwrap_or_default());
    Some(PathBuf::from(os))
}

/// The size of the first version of `cuzk_config` (callers built against it still work),
/// frozen: a literal, with every v1 field's offset pinned below, so a field inserted before the
/// v1 end (an ABI break for those callers) fails the build instead of moving this.
const CONFIG_V1_SIZE: usize = 48;

/// Pins version 1 of a struct whose `struct_size` promises "fields are only appended": each v1
/// field's offset and the v1 size as literals (never edit them), and every later field past the
/// v1 end. Every field of the struct is named, in one list or the other (a destructuring with
/// no `..`), so a new field fails the build until it is listed: in `later`, where one inserted
/// before the v1 end, even into padding that moves no offset, fails the offset check.
/// (tests/c/test_abi.c holds frozen C copies of the same versions and checks the header.)
macro_rules! pinned_v1 {
    ($t:ident, $size:expr, { $($f:ident @ $off:literal),+ $(,)? } later { $($g:ident),* $(,)? }) => {
        const _: () = {
            $(assert!(std::mem::offset_of!($t, $f) == $off);)+
            $(assert!(std::mem::offset_of!($t, $g) >= $size);)*
            assert!(std::mem::size_of::<$t>() >= $size);
        };
        const _: fn($t) = |v: $t| {
            let $t { $($f: _,)+ $($g: _,)* } = v;
        };
    };
}
#[cfg(target_pointer_width = "64")]
mod v1_layouts {
    use super::*;
    pinned_v1!(cuzk_config, CONFIG_V1_SIZE, { struct_size @ 0, synthesis_workers @ 4,
        synthesis_lookahead @ 8, memory_budget_bytes @ 16, params_dir @ 24, self_check @ 32,
        timeline_stderr @ 33, timeline_file @ 40 }
        later { job_retention_ms, max_c1_bytes, device_cooldown_ms, max_jobs, _reserved });
    pinned_v1!(cuzk_engine_report, 136, { struct_size @ 0, devices @ 4, devices_busy @ 8,
        devices_out_of_service @ 12, jobs_in_flight @ 16, partitions_queued @ 24,
        partitions_synthesizing @ 32, partitions_ready @ 40, partitions_proving @ 48,
        memory_budget_bytes @ 56, memory_reserved_bytes @ 64, memory_peak_bytes @ 72,
        jobs_completed @ 80, jobs_failed @ 88, jobs_cancelled @ 96, params_resident @ 104,
        jobs_retained @ 112, partitions_cpu_retried @ 120, timeline_events_dropped @ 128 }
        later {});
    pinned_v1!(cuzk_admission, 72, { struct_size @ 0, admit @ 4, reason @ 8,
        partitions_per_job @ 12, partitions_fit @ 16, jobs_fit @ 24, partition_bytes @ 32,
        params_bytes @ 40, queued_bytes @ 48, free_bytes @ 56, job_slots @ 64 } later {});
    pinned_v1!(cuzk_timeline_event, 48, { struct_size @ 0, kind @ 4, t_us @ 8, job_id @ 16,
        partition @ 24, worker @ 28, value @ 32, detail @ 40 } later {});
    pinned_v1!(cuzk_log_record, 32, { struct_size @ 0, level @ 4, unix_us @ 8, target @ 16,
        message @ 24 } later {});
}

fn config_from(cfg: *const cuzk_config) -> Result<Config> {
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

fn running() -> Result<Arc<engine::Engine>> {
    engine::global().filter(|e| e.is_running()).ok_or_else(|| {
        Error::new(
            Status::NotRunning,
            "the engine is not running (call cuzk_engine_start)",
        )
    })
}

/// The engine for calls about existing jobs: also while it shuts down (its jobs end
/// NOT_RUNNING).
fn current() -> Result<Arc<engine::Engine>> {
    engine::global().ok_or_else(|| {
        Error::new(
            Status::NotRunning,
            "the engine is not running (call cuzk_engine_start)",
        )
    })
}

/// Fills `*out` with the default configuration. NULL is ignored.
#[no_mangle]
pub extern "C" fn cuzk_config_default(out: *mut cuzk_config) {
    if out.is_null() {
        return;
    }
    let d = Config::default();
    // SAFETY: non-NULL and writable (documented).
    unsafe {
        *out = cuzk_config {
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
}

/// Fills `*out` with an empty request (priority 0, real shape). NULL is ignored.
#[no_mangle]
pub extern "C" fn cuzk_job_request_default(out: *mut cuzk_job_request) {
    if out.is_null() {
        return;
    }
    // SAFETY: non-NULL and writable (documented).
    unsafe {
        *out = cuzk_job_request {
            struct_size: std::mem::size_of::<cuzk_job_request>() as u32,
            priority: 0,
            c1_ptr: std::ptr::null(),
            c1_len: 0,
            sector_id: 0,
            prover_id: [0; 32],
            fixture_partitions: 0,
            fixture_layers: 0,
        }
    }
}

/// Starts the process-wide engine. `cfg` NULL means defaults. Starting again with the same
/// configuration is OK; with another, `CUZK_STATUS_ALREADY_RUNNING`. While an engine shuts
/// down, waits for it to finish, then starts a new one.
#[no_mangle]
pub extern "C" fn cuzk_engine_start(cfg: *const cuzk_config, err_out: *mut cuzk_error) -> Status {
    boundary(err_out, || {
        engine::start_global(config_from(cfg)?)?;
        Ok(())
    })
}

/// Shuts the engine down and blocks until its threads have stopped: every unfinished job ends
/// with `CUZK_STATUS_NOT_RUNNING` (blocked awaits return), queued partitions are dropped,
/// synthesis in progress is abandoned, partitions on a GPU finish their call, the timeline
/// delivers what it holds, and parameters are released. Idempotent; a concurrent second call
/// blocks until the first is done. `CUZK_STATUS_IN_CALLBACK` from a timeline callback.
#[no_mangle]
pub extern "C" fn cuzk_engine_shutdown() -> Status {
    boundary(std::ptr::null_mut(), engine::shutdown_global)
}

/// Drop-in for filecoin-ffi's `seal_commit_phase2`: proves a C1 output for `sector_id` and the
/// 32-byte `prover_id`, blocking until done, and writes `partitions × 192` proof bytes to
/// `*proof_out`. The proof has passed the self-check unless the engine was started with
/// `self_check = 0`. Starts the engine with defaults if it is not running.
#[no_mangle]
pub extern "C" fn cuzk_seal_commit_phase2(
    c1_ptr: *const u8,
    c1_len: usize,
    sector_id: u64,
    prover_id: *const [u8; 32],
    proof_out: *mut cuzk_bytes,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let c1 = bytes_in(c1_ptr, c1_len, "c1")?;
        if prover_id.is_null() {
            return Err(Error::invalid_argument("prover_id is NULL"));
        }
        if proof_out.is_null() {
            return Err(Error::invalid_argument("proof_out is NULL"));
        }
        if crate::timeline::in_callback() {
            return Err(Error::new(
                Status::InCallback,
                "cuzk_seal_commit_phase2 blocks: use cuzk_submit from a timeline callback",
            ));
        }
        // SAFETY: non-NULL, 32 readable bytes (documented).
        let prover_id = unsafe { *prover_id };
        let engine = engine::global_or_default()?;
        engine.check_size(c1)?;
        let out = engine.prove(JobRequest {
            c1: c1.to_vec(),
            sector_id,
            prover_id,
            priority: 0,
            fixture: FixtureShape::default(),
        })?;
        write_bytes(proof_out, out.proof);
        Ok(())
    })
}

/// Validates a job and queues it; writes its id (unique for the life of the process) to
/// `*job_id_out`. Validation errors (bad JSON, wrong shape, prover id / sector id not matching
/// the C1 output, a C1 output above `max_c1_bytes`) are returned here;
/// `CUZK_STATUS_RESOURCE_EXHAUSTED` when `max_jobs` jobs are already queued or running.
#[no_mangle]
pub extern "C" fn cuzk_submit(
    req: *const cuzk_job_request,
    job_id_out: *mut u64,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        if req.is_null() || job_id_out.is_null() {
            return Err(Error::invalid_argument("req or job_id_out is NULL"));
        }
        // SAFETY: non-NULL, initialized by cuzk_job_request_default (documented).
        let r = unsafe { &*req };
        if r.struct_size as usize != std::mem::size_of::<cuzk_job_request>() {
            return Err(Error::invalid_argument(
                "cuzk_job_request.struct_size mismatch: initialize it with cuzk_job_request_default",
            ));
        }
        let c1 = bytes_in(r.c1_ptr, r.c1_len, "c1_ptr")?;
        let engine = running()?;
        engine.check_size(c1)?;
        let id = engine.submit(JobRequest {
            c1: c1.to_vec(),
            sector_id: r.sector_id,
            prover_id: r.prover_id,
            priority: r.priority,
            fixture: FixtureShape {
                partitions: r.fixture_partitions as usize,
                layers: r.fixture_layers as usize,
            },
        })?;
        // SAFETY: non-NULL (checked).
        unsafe { *job_id_out = id };
        Ok(())
    })
}

/// Waits for a job up to `timeout_ms` (negative: forever; 0: just look). On success writes the
/// proof bytes. `CUZK_STATUS_TIMEOUT` leaves the job running (await again); any other result
/// ends the job (a later await answers `CUZK_STATUS_NOT_FOUND`). A result nobody awaits is
/// dropped after the retention period (`job_retention_ms`). From a timeline callback only a
/// zero timeout is allowed.
#[no_mangle]
pub extern "C" fn cuzk_await(
    job_id: u64,
    timeout_ms: i64,
    proof_out: *mut cuzk_bytes,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        if proof_out.is_null() {
            return Err(Error::invalid_argument("proof_out is NULL"));
        }
        let timeout = (timeout_ms >= 0).then(|| Duration::from_millis(timeout_ms as u64));
        let out = current()?.await_job(job_id, timeout)?;
        write_bytes(proof_out, out.proof);
        Ok(())
    })
}

/// Cancels a job: its queued partitions are dropped and their memory given back at once,
/// running ones abandoned; a pending or later await answers `CUZK_STATUS_CANCELLED` (for up to
/// a minute). No effect on a finished job.
#[no_mangle]
pub extern "C" fn cuzk_cancel(job_id: u64, err_out: *mut cuzk_error) -> Status {
    boundary(err_out, || current()?.cancel(job_id))
}

/// Takes prover device `device` out of service (`enabled` false) or puts it back, by its index
/// in the engine's device list (`cuzk_engine_metrics`, JSON `devices`). Partitions being proved
/// finish; later ones go to the other devices, or to the CPU when no GPU is left. A device
/// taken out here stays out until put back here; one taken out after repeated faults is probed
/// and put back by the engine after a cool-down.
/// `CUZK_STATUS_INVALID_ARGUMENT` for an unknown index, `CUZK_STATUS_UNSUPPORTED` for a device
/// that cannot leave service (the CPU prover), `CUZK_STATUS_NOT_RUNNING` without an engine.
#[no_mangle]
pub extern "C" fn cuzk_device_set_enabled(
    device: u32,
    enabled: bool,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        running()?.set_device_enabled(device as usize, enabled)
    })
}

/// State of a job, from `cuzk_poll`.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cuzk_job_state {
    /// Queued or being synthesized / proved.
    Running = 0,
    /// Finished with a proof; `cuzk_await` returns it at once.
    Succeeded = 1,
    /// Finished with an error (including cancellation); `cuzk_await` returns it at once.
    Failed = 2,
}

/// Writes the state of a job without waiting, as a `cuzk_job_state` value.
/// `CUZK_STATUS_NOT_FOUND` for unknown or already awaited ids.
#[no_mangle]
pub extern "C" fn cuzk_poll(job_id: u64, state_out: *mut i32, err_out: *mut cuzk_error) -> Status {
    boundary(err_out, || {
        if state_out.is_null() {
            return Err(Error::invalid_argument("state_out is NULL"));
        }
        let st = match current()?.poll(job_id)? {
            None => cuzk_job_state::Running,
            Some(Ok(_)) => cuzk_job_state::Succeeded,
            Some(Err(_)) => cuzk_job_state::Failed,
        };
        // SAFETY: non-NULL (checked).
        unsafe { *state_out = st as i32 };
        Ok(())
    })
}

/// Verifies `proof` for a C1 output's sector with filecoin-proofs' own `verify_seal` (the
/// verifier Lotus and Curio use), reading the `.vk` from `FIL_PROOFS_PARAMETER_CACHE`. Writes
/// whether it is valid to `*valid_out` (1 or 0); a malformed proof is invalid, not an error.
/// Needs no running engine.
#[no_mangle]
pub extern "C" fn cuzk_verify_seal(
    c1_ptr: *const u8,
    c1_len: usize,
    sector_id: u64,
    prover_id: *const [u8; 32],
    proof_ptr: *const u8,
    proof_len: usize,
    valid_out: *mut bool,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let c1 = bytes_in(c1_ptr, c1_len, "c1")?;
        let proof = bytes_in(proof_ptr, proof_len, "proof")?;
        if prover_id.is_null() || valid_out.is_null() {
            return Err(Error::invalid_argument("prover_id or valid_out is NULL"));
        }
        // SAFETY: non-NULL, 32 readable bytes (documented).
        let prover_id = unsafe { *prover_id };
        let valid = crate::porep::verify::verify_seal(c1, prover_id, sector_id, proof)?;
        // SAFETY: non-NULL (checked).
        unsafe { *valid_out = valid };
        Ok(())
    })
}

/// A snapshot of the engine, from `cuzk_engine_status`. Fields are only appended.
#[repr(C)]
pub struct cuzk_engine_report {
    /// Set by the caller to `sizeof(cuzk_engine_report)` before the call; the library writes
    /// at most that many bytes (a caller built against an older header gets the fields it
    /// knows) and sets it to the bytes it wrote (a caller built against a newer header: the
    /// fields past it are not filled).
    pub struct_size: u32,
    /// Number of prover devices (the CPU prover counts as one).
    pub devices: u32,
    /// Devices proving a partition now.
    pub devices_busy: u32,
    /// Devices out of service (by the operator or after faults).
    pub devices_out_of_service: u32,
    /// Jobs queued or running.
    pub jobs_in_flight: u64,
    /// Partitions waiting for a synthesis worker.
    pub partitions_queued: u64,
    pub partitions_synthesizing: u64,
    /// Partitions synthesized and waiting for a prover.
    pub partitions_ready: u64,
    pub partitions_proving: u64,
    pub memory_budget_bytes: u64,
    pub memory_reserved_bytes: u64,
    pub memory_peak_bytes: u64,
    pub jobs_completed: u64,
    pub jobs_failed: u64,
    pub jobs_cancelled: u64,
    pub params_resident: u64,
    /// Finished jobs whose result has not been collected by an await yet.
    pub jobs_retained: u64,
    /// Partitions a GPU failed on that the CPU proved instead.
    pub partitions_cpu_retried: u64,
    /// Timeline events dropped because callbacks fell behind.
    pub timeline_events_dropped: u64,
}

/// Writes a snapshot of the running engine to `*out`, whose `struct_size` the caller sets
/// first (see `cuzk_engine_report`). `CUZK_STATUS_INVALID_ARGUMENT` for a NULL `out` or a
/// `struct_size` below 8 (nothing written), `CUZK_STATUS_NOT_RUNNING` without an engine.
/// Thread-safe; allowed in a timeline or log callback.
#[no_mangle]
pub extern "C" fn cuzk_engine_status(
    out: *mut cuzk_engine_report,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        if out.is_null() {
            return Err(Error::invalid_argument("out is NULL"));
        }
        let len = sized_out(out, "cuzk_engine_report")?;
        let s = running()?.status();
        let r = cuzk_engine_report {
            struct_size: std::mem::size_of::<cuzk_engine_report>() as u32,
            devices: s.devices.len() as u32,
            devices_busy: s.devices.iter().filter(|d| d.current.is_some()).count() as u32,
            devices_out_of_service: s.devices.iter().filter(|d| !d.enabled).count() as u32,
            jobs_in_flight: s.jobs_in_flight as u64,
            partitions_queued: s.synthesis_queue as u64,
            partitions_synthesizing: s.synthesizing,
            partitions_ready: s.prover_queue as u64,
            partitions_proving: s.proving,
            memory_budget_bytes: s.memory_budget,
            memory_reserved_bytes: s.memory_reserved,
            memory_peak_bytes: s.memory_peak,
            jobs_completed: s.completed,
            jobs_failed: s.failed,
            jobs_cancelled: s.cancelled,
            params_resident: s.resident_params.len() as u64,
            jobs_retained: s.jobs_retained as u64,
            partitions_cpu_retried: s.cpu_retries,
            timeline_events_dropped: s.timeline_events_dropped,
        };
        write_sized(out, r, len);
        Ok(())
    })
}

/// Writes the running engine's state as Prometheus text exposition (`format` 0) or as JSON
/// with every device and resident parameter set (`format` 1) to `*text_out` (UTF-8, not
/// NUL-terminated; free with `cuzk_bytes_free`).
#[no_mangle]
pub extern "C" fn cuzk_engine_metrics(
    format: u32,
    text_out: *mut cuzk_bytes,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        if text_out.is_null() {
            return Err(Error::invalid_argument("text_out is NULL"));
        }
        let s = running()?.status();
        let text = match format {
            0 => s.prometheus(),
            1 => serde_json::to_string(&s)
                .map_err(|e| Error::internal(format!("status JSON: {e}")))?,
            f => {
                return Err(Error::invalid_argument(format!(
                    "unknown metrics format {f}"
                )))
            }
        };
        write_bytes(text_out, text.into_bytes());
        Ok(())
    })
}

/// `cuzk_admission.reason`: why a job would not start now.
pub const CUZK_ADMIT_OK: u32 = 0;
/// Not enough of the memory budget is free for one of its partitions.
pub const CUZK_ADMIT_MEMORY: u32 = 1;
/// `max_jobs` jobs are queued or running.
pub const CUZK_ADMIT_MAX_JOBS: u32 = 2;

/// The answer of `cuzk_engine_admission`. Fields are only appended.
#[repr(C)]
pub struct cuzk_admission {
    /// Set by the caller to `sizeof(cuzk_admission)` before the call; the library writes at
    /// most that many bytes and sets it to the bytes it wrote (as `cuzk_engine_report`).
    pub struct_size: u32,
    /// 1: one more job of the type would start now; 0: it would wait (see `reason`).
    pub admit: u8,
    /// A `CUZK_ADMIT_*` value.
    pub reason: u32,
    /// Partitions of one job of the type.
    pub partitions_per_job: u32,
    /// Partitions of the type that could reserve their memory now, after the work ahead.
    pub partitions_fit: u64,
    /// Jobs of the type whose every partition could reserve its memory now (at most
    /// `job_slots`).
    pub jobs_fit: u64,
    /// Bytes one partition reserves.
    pub partition_bytes: u64,
    /// Parameter bytes still to be loaded into host memory for the type (0: resident).
    pub params_bytes: u64,
    /// Bytes queued partitions ahead of a new job will reserve, with parameters they load.
    pub queued_bytes: u64,
    /// Memory budget less reserved bytes.
    pub free_bytes: u64,
    /// Jobs that may still be submitted before `max_jobs`.
    pub job_slots: u64,
}

/// Admission for a scheduler: writes to `*out` whether one more job of `registered_proof` (its
/// number in filecoin-ffi and go-state-types' `abi.RegisteredSealProof`: 0-4 V1, 5-9 V1_1, ...)
/// at `priority` would start now within the memory budget, and how many could (`out`'s
/// `struct_size` set by the caller first, see `cuzk_admission`), from the
/// engine's own accounting at the moment of the call (reserved memory, partitions queued
/// ahead, parameters still to load). `fixture_partitions` / `fixture_layers` select a test
/// shape (0: the type's own). The answer can change as soon as it is given: a job submitted
/// after it may still wait for memory, never fail for it. `CUZK_STATUS_INVALID_ARGUMENT` for an
/// unknown number, a NULL `out` or a `struct_size` below 8 (nothing written), `CUZK_STATUS_UNSUPPORTED` for a type the engine does not prove,
/// `CUZK_STATUS_PARAMS` where its parameter files are missing or damaged,
/// `CUZK_STATUS_NOT_RUNNING` without an engine. Thread-safe; allowed in a timeline callback.
#[no_mangle]
pub extern "C" fn cuzk_engine_admission(
    registered_proof: i64,
    priority: i32,
    fixture_partitions: u32,
    fixture_layers: u32,
    out: *mut cuzk_admission,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        if out.is_null() {
            return Err(Error::invalid_argument("out is NULL"));
        }
        let len = sized_out(out, "cuzk_admission")?;
        let proof = engine::seal_proof_from_abi(registered_proof)?;
        let fixture = FixtureShape {
            partitions: fixture_partitions as usize,
            layers: fixture_layers as usize,
        };
        let a = running()?.admission(proof, fixture, priority)?;
        let r = cuzk_admission {
            struct_size: std::mem::size_of::<cuzk_admission>() as u32,
            admit: a.admit as u8,
            reason: a.reason as u32,
            partitions_per_job: a.partitions_per_job as u32,
            partitions_fit: a.partitions_fit,
            jobs_fit: a.jobs_fit,
            partition_bytes: a.partition_bytes,
            params_bytes: a.params_bytes,
            queued_bytes: a.queued_bytes,
            free_bytes: a.free_bytes,
            job_slots: a.job_slots,
        };
        write_sized(out, r, len);
        Ok(())
    })
}

/// A log record, valid only during the callback.
#[repr(C)]
pub struct cuzk_log_record {
    /// `sizeof(cuzk_log_record)`: fields are only appended.
    pub struct_size: u32,
    /// 1 ERROR, 2 WARN, 3 INFO, 4 DEBUG, 5 TRACE.
    pub level: u32,
    /// Microseconds since the Unix epoch when it was logged.
    pub unix_us: u64,
    /// NUL-terminated module path or target ("cuzk::engine", "bellperson::groth16::prover").
    pub target: *const c_char,
    /// NUL-terminated UTF-8 message.
    pub message: *const c_char,
}

/// Log callback: `userdata` first. Called by one library thread (`cuzk-log`), one record at a
/// time and in order; never by the thread that logged, never with an engine lock held. It may
/// call any cuzk function, `cuzk_log_set_callback` included. Records beyond 100,000 waiting are
/// dropped (counted in the metrics' `cuzk_log_records_dropped_total`). It must not throw (C++).
pub type cuzk_log_cb =
    Option<unsafe extern "C" fn(userdata: *mut c_void, rec: *const cuzk_log_record)>;

/// Sends the library's log records (its own and those of the proving crates inside it) to `cb`
/// instead of stderr; `cb` NULL goes back to stderr. `RUST_LOG` filters them as always; where it
/// is not set, `max_level` (1 ERROR ... 5 TRACE; 0: WARN) is the most verbose level passed on.
/// From outside the callback: the records logged before the call are delivered first (to the
/// old callback, waiting at most five seconds for it), and once this returns the old callback is
/// not running and is never called again, so its userdata may be freed. From inside the
/// callback: returns at once, and the old callback is not called after its running call.
/// `CUZK_STATUS_UNSUPPORTED` where the process already had a Rust logger when cuzk was first
/// called (then records go to that logger). Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_log_set_callback(
    cb: cuzk_log_cb,
    userdata: *mut c_void,
    max_level: u32,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        if !crate::logging::installed() {
            return Err(Error::unsupported(
                "this process has a Rust logger of its own; cuzk's records go to it",
            ));
        }
        let level = match max_level {
            0 => None,
            1 => Some(log::LevelFilter::Error),
            2 => Some(log::LevelFilter::Warn),
            3 => Some(log::LevelFilter::Info),
            4 => Some(log::LevelFilter::Debug),
            5 => Some(log::LevelFilter::Trace),
            n => return Err(Error::invalid_argument(format!("unknown log level {n}"))),
        };
        let sink = cb.map(|cb| {
            let ptr = CallbackPtr { cb, userdata };
            Arc::new(move |r: &crate::logging::LogRecord| {
                let (target, message) = (c_text(&r.target), c_text(&r.message));
                let c = cuzk_log_record {
                    struct_size: std::mem::size_of::<cuzk_log_record>() as u32,
                    level: r.level as u32,
                    unix_us: r.unix_us,
                    target: target.as_ptr(),
                    message: message.as_ptr(),
                };
                let p = &ptr;
                // SAFETY: the callback contract is documented in the header.
                unsafe { (p.cb)(p.userdata, &c) };
            }) as crate::logging::LogSink
        });
        crate::logging::set_sink(sink, level);
        Ok(())
    })
}

/// A host's callback and its userdata, called with a `T` (a timeline event, a log record).
struct CallbackPtr<T> {
    cb: unsafe extern "C" fn(*mut c_void, *const T),
    userdata: *mut c_void,
}
// SAFETY: the header requires the callback and its userdata to be usable from another thread
// (the engine's timeline thread, the library's log thread) until the callback is unregistered
// or replaced.
unsafe impl<T> Send for CallbackPtr<T> {}
unsafe impl<T> Sync for CallbackPtr<T> {}

/// Registers a timeline callback on the running engine; writes a handle (unique for the life
/// of the process) for `cuzk_timeline_unregister`. The callback sees every event recorded after
/// this returns. `cb` and `userdata` must stay valid until `cuzk_timeline_unregister` returns
/// (or the engine's shutdown has returned). See `cuzk_timeline_cb` for what it may call.
#[no_mangle]
pub extern "C" fn cuzk_timeline_register(
    cb: cuzk_timeline_cb,
    userdata: *mut c_void,
    handle_out: *mut u64,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let cb = cb.ok_or_else(|| Error::invalid_argument("cb is NULL"))?;
        if handle_out.is_null() {
            return Err(Error::invalid_argument("handle_out is NULL"));
        }
        let ptr = CallbackPtr { cb, userdata };
        let sink = Arc::new(move |ev: &Event| {
            let detail = c_text(&ev.detail);
            let c = cuzk_timeline_event {
                struct_size: std::mem::size_of::<cuzk_timeline_event>() as u32,
                kind: ev.kind as u32,
                t_us: ev.t_us,
                job_id: ev.job,
                partition: ev.partition,
                worker: ev.worker,
                value: ev.value,
                detail: detail.as_ptr(),
            };
            let p = &ptr;
            // SAFETY: the callback contract is documented in the header.
            unsafe { (p.cb)(p.userdata, &c) };
        });
        let id = running()?.add_timeline_sink(sink);
        // SAFETY: non-NULL (checked).
        unsafe { *handle_out = id };
        Ok(())
    })
}

/// Unregisters a timeline callback. From outside a callback: the events recorded before the
/// call are delivered first, and when it returns the callback is not running and will never be
/// called again, so its userdata may be freed; this holds during a shutdown too. From inside a
/// callback: returns at once, and the callback is not called again after the running call
/// returns. Unknown handles (or no engine) are not an error.
#[no_mangle]
pub extern "C" fn cuzk_timeline_unregister(handle: u64) -> Status {
    boundary(std::ptr::null_mut(), || {
        if let Some(e) = engine::global() {
            e.remove_timeline_sink(handle);
        }
        Ok(())
    })
}

/// Frees bytes returned by cuzk and zeroes `*b`. NULL and zeroed values are fine; freeing
/// twice through the same `cuzk_bytes` is therefore harmless.
#[no_mangle]
pub extern "C" fn cuzk_bytes_free(b: *mut cuzk_bytes) {
    if b.is_null() {
        return;
    }
    // SAFETY: non-NULL; ptr/len came from write_bytes (Box<[u8]>) or are zero.
    unsafe {
        let v = &mut *b;
        if !v.ptr.is_null() {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                v.ptr, v.len,
            )));
        }
        v.ptr = std::ptr::null_mut();
        v.len = 0;
    }
}

/// Frees an error's message and zeroes `*e`. NULL and zeroed values are fine.
#[no_mangle]
pub extern "C" fn cuzk_error_free(e: *mut cuzk_error) {
    if e.is_null() {
        return;
    }
    // SAFETY: non-NULL; message came from CString::into_raw or is NULL.
    unsafe {
        let v = &mut *e;
        if !v.message.is_null() {
            drop(CString::from_raw(v.message));
        }
        v.message = std::ptr::null_mut();
        v.status = Status::Ok;
    }
}

/// Static name of a status ("OK", "INVALID_INPUT", ...); "UNKNOWN" for other values.
#[no_mangle]
pub extern "C" fn cuzk_status_name(status: i32) -> *const c_char {
    Status::from_code(status)
        .map_or(c"UNKNOWN", Status::c_name)
        .as_ptr()
}

/// Static version string of the library ("0.1.0").
#[no_mangle]
pub extern "C" fn cuzk_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_partition_matches_the_timeline() {
        assert_eq!(CUZK_NO_PARTITION, crate::timeline::NO_PARTITION);
    }

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

    #[test]
    fn lengths_above_ptrdiff_max_are_argument_errors() {
        let b = [0u8; 1];
        let e = bytes_in(b.as_ptr(), usize::MAX, "c1").unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(bytes_in(b.as_ptr(), 1, "c1").is_ok());
    }
}
