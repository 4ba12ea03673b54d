//! Observation for operators and schedulers: the engine's status snapshot, its metrics
//! (Prometheus text or JSON), admission, and the library's names and version.

use std::ffi::c_char;

use super::{
    boundary::{boundary, quiet, Out, SizedOut},
    lifecycle::running,
    memory::{cuzk_bytes, cuzk_error},
};
use crate::{
    engine,
    error::{Error, Status},
    porep::FixtureShape,
};

/// Bytes of `cuzk_engine_report` and `cuzk_admission` in the first header (64-bit targets):
/// what a caller whose `struct_size` is 0 gets.
pub(super) const REPORT_V1_SIZE: usize = 136;
pub(super) const ADMISSION_V1_SIZE: usize = 72;

/// A snapshot of the engine, from `cuzk_engine_status`. Fields are only appended.
#[repr(C)]
pub struct cuzk_engine_report {
    /// Set by the caller to `sizeof(cuzk_engine_report)` before the call; the library writes
    /// at most that many bytes (a caller built against an older header gets the fields it
    /// knows) and sets it to the bytes it wrote (a caller built against a newer header: the
    /// fields past it are not filled). 0 (a zeroed struct of a caller built against the first
    /// header, which did not ask for it) reads as the first header's 136 bytes.
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
/// `struct_size` from 1 to 7 (nothing written; 0 is a caller of the first header, which gets
/// that header's fields), `CUZK_STATUS_NOT_RUNNING` without an engine.
/// Thread-safe; allowed in a timeline or log callback.
#[no_mangle]
pub extern "C" fn cuzk_engine_status(
    out: *mut cuzk_engine_report,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let out = SizedOut::new(out, "cuzk_engine_report", REPORT_V1_SIZE)?;
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
        out.write(r);
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
        let text_out = Out::new(text_out, "text_out")?;
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
        text_out.write(cuzk_bytes::owned(text.into_bytes()));
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
    /// most that many bytes and sets it to the bytes it wrote (as `cuzk_engine_report`); 0
    /// reads as the first header's 72 bytes.
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
    /// Host bytes a partition of the type sent to the CPU (a fallback from the GPUs) would
    /// reserve beyond what is reserved now: its full assignment, and the full parameters
    /// where the CPU's copy is not loaded (a second copy beside a streamed card's pinned one).
    /// 0 where no GPU proves. (Appended: absent from the first header's 72 bytes.)
    pub cpu_fallback_bytes: u64,
    /// 1 where those bytes could ever be reserved beside what is not given back meanwhile
    /// (resident parameter sets, a GPU prover's kept copy); 0: such a partition would fail
    /// its job with `CUZK_STATUS_RESOURCE_EXHAUSTED`.
    pub cpu_fallback_fits: u8,
}

/// Admission for a scheduler: writes to `*out` whether one more job of `registered_proof` (its
/// number in filecoin-ffi and go-state-types' `abi.RegisteredSealProof`: 0-4 V1, 5-9 V1_1, ...)
/// at `priority` would start now within the memory budget, and how many could (`out`'s
/// `struct_size` set by the caller first, see `cuzk_admission`), from the
/// engine's own accounting at the moment of the call (reserved memory, partitions queued
/// ahead, parameters still to load). `fixture_partitions` / `fixture_layers` select a test
/// shape (0: the type's own). The answer can change as soon as it is given: a job submitted
/// after it may still wait for memory, never fail for it. `CUZK_STATUS_INVALID_ARGUMENT` for an
/// unknown number, a NULL `out` or a `struct_size` from 1 to 7 (nothing written; 0 gets the first header's
/// fields), `CUZK_STATUS_UNSUPPORTED` for a type the engine does not prove,
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
        let out = SizedOut::new(out, "cuzk_admission", ADMISSION_V1_SIZE)?;
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
            cpu_fallback_bytes: a.cpu_fallback_bytes,
            cpu_fallback_fits: a.cpu_fallback_fits as u8,
        };
        out.write(r);
        Ok(())
    })
}

/// Static name of a status ("OK", "INVALID_INPUT", ...); "UNKNOWN" for other values.
#[no_mangle]
pub extern "C" fn cuzk_status_name(status: i32) -> *const c_char {
    quiet("cuzk_status_name", c"UNKNOWN".as_ptr(), || {
        Status::from_code(status)
            .map_or(c"UNKNOWN", Status::c_name)
            .as_ptr()
    })
}

/// Static version string of the library ("0.1.0").
#[no_mangle]
pub extern "C" fn cuzk_version() -> *const c_char {
    const VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
    ) {
        Ok(v) => v,
        Err(_) => panic!("the package version holds a NUL"),
    };
    quiet("cuzk_version", VERSION.as_ptr(), || VERSION.as_ptr())
}
