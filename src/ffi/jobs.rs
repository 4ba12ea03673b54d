//! Jobs: the blocking drop-in (`cuzk_seal_commit_phase2`), the asynchronous calls (submit,
//! await, poll, cancel), devices in and out of service, and filecoin-proofs' verifier.

use std::time::Duration;

use super::{
    boundary::{boundary, bytes_in, quiet, ref_in, sized_in, Out},
    lifecycle::{current, running},
    memory::{cuzk_bytes, cuzk_error},
};
use crate::{
    engine::{self, JobRequest},
    error::{Error, Status},
    porep::FixtureShape,
};

/// One asynchronous job. Initialize with `cuzk_job_request_default`, then set the fields.
#[repr(C)]
#[derive(Clone, Copy)]
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

/// The size of the first version of `cuzk_job_request`, frozen (pinned in layout.rs).
pub(super) const JOB_REQUEST_V1_SIZE: usize = 72;

/// What `cuzk_job_request_default` writes.
fn default_request() -> cuzk_job_request {
    cuzk_job_request {
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

/// Fills `*out` with an empty request (priority 0, real shape). NULL is ignored.
#[no_mangle]
pub extern "C" fn cuzk_job_request_default(out: *mut cuzk_job_request) {
    quiet("cuzk_job_request_default", (), || {
        let Ok(out) = Out::new(out, "out") else {
            return;
        };
        out.write(default_request())
    })
}

/// Drop-in for filecoin-ffi's `seal_commit_phase2`: proves a C1 output for `sector_id` and the
/// 32-byte `prover_id`, blocking until done, and writes the proof to `*proof_out`:
/// `partitions × 192` bytes, or for non-interactive PoRep (registered proofs 15 to 19) the
/// partition proofs' SnarkPack v2 aggregate, as filecoin-proofs makes it (the SnarkPack SRS is
/// read from `FIL_PROOFS_PARAMETER_CACHE`; PARAMS where it is missing). The proof has passed
/// the self-check (each partition's proof, and filecoin-proofs' `verify_seal` of an aggregate)
/// unless the engine was started with `self_check = 0`. Starts the engine with defaults if it
/// is not running.
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
        c2_blocking(c1_ptr, c1_len, sector_id, prover_id, proof_out, true)
    })
}

/// Drop-in for filecoin-ffi's `seal_commit_phase2_circuit_proofs`: as
/// `cuzk_seal_commit_phase2`, but a non-interactive PoRep sector's partition proofs are
/// written as they are (`partitions × 192` bytes, 126 partitions at 32 GiB, each checked), not
/// aggregated, for a caller that aggregates several sectors together. `prover_id` may be NULL
/// (filecoin-ffi's call takes none): the C1 output's replica id is then taken as it is;
/// otherwise it must be the one `prover_id` and `sector_id` give. For interactive proof types
/// the same as `cuzk_seal_commit_phase2`. As that call: `*proof_out` is the caller's, freed
/// once with `cuzk_bytes_free`, and written only on success; callable from any thread at once;
/// it blocks, so from a timeline callback it answers IN_CALLBACK.
#[no_mangle]
pub extern "C" fn cuzk_seal_commit_phase2_circuit_proofs(
    c1_ptr: *const u8,
    c1_len: usize,
    sector_id: u64,
    prover_id: *const [u8; 32],
    proof_out: *mut cuzk_bytes,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        c2_blocking(c1_ptr, c1_len, sector_id, prover_id, proof_out, false)
    })
}

fn c2_blocking(
    c1_ptr: *const u8,
    c1_len: usize,
    sector_id: u64,
    prover_id: *const [u8; 32],
    proof_out: *mut cuzk_bytes,
    aggregate: bool,
) -> crate::error::Result<()> {
    let c1 = bytes_in(c1_ptr, c1_len, "c1")?;
    let check_replica = aggregate || !prover_id.is_null();
    let prover_id = if check_replica {
        *ref_in(prover_id, "prover_id")?
    } else {
        [0; 32]
    };
    let proof_out = Out::new(proof_out, "proof_out")?;
    if crate::timeline::in_callback() {
        return Err(Error::new(
            Status::InCallback,
            "cuzk_seal_commit_phase2 blocks: use cuzk_submit from a timeline callback",
        ));
    }
    let engine = engine::global_or_default()?;
    engine.check_size(c1)?;
    let req = JobRequest {
        c1: c1.to_vec(),
        sector_id,
        prover_id,
        priority: 0,
        fixture: FixtureShape::default(),
    };
    let out = if aggregate {
        engine.prove(req)?
    } else {
        let id = engine.submit_circuit_proofs(req, check_replica)?;
        engine.await_job(id, None)?
    };
    proof_out.write(cuzk_bytes::owned(out.proof));
    Ok(())
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
        let r = sized_in(
            req,
            "cuzk_job_request",
            JOB_REQUEST_V1_SIZE,
            default_request(),
        )?;
        let job_id_out = Out::new(job_id_out, "job_id_out")?;
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
        job_id_out.write(id);
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
        let proof_out = Out::new(proof_out, "proof_out")?;
        let timeout = (timeout_ms >= 0).then(|| Duration::from_millis(timeout_ms as u64));
        let out = current()?.await_job(job_id, timeout)?;
        proof_out.write(cuzk_bytes::owned(out.proof));
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
pub extern "C" fn cuzk_poll(
    job_id: u64,
    state_out: *mut cuzk_job_state,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let state_out = Out::new(state_out, "state_out")?;
        let st = match current()?.poll(job_id)? {
            None => cuzk_job_state::Running,
            Some(Ok(_)) => cuzk_job_state::Succeeded,
            Some(Err(_)) => cuzk_job_state::Failed,
        };
        state_out.write(st);
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
        let prover_id = *ref_in(prover_id, "prover_id")?;
        let valid_out = Out::new(valid_out, "valid_out")?;
        let valid = crate::porep::verify::verify_seal(c1, prover_id, sector_id, proof)?;
        valid_out.write(valid);
        Ok(())
    })
}
