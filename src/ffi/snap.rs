//! SnapDeals (the empty sector update): the blocking drop-in (`cuzk_generate_update`) and the
//! asynchronous submit (`cuzk_update_submit`, then `cuzk_await` / `cuzk_poll` / `cuzk_cancel`
//! as for any job).

use super::{
    boundary::{boundary, quiet, sized_in, Out},
    lifecycle::running,
    memory::{cuzk_bytes, cuzk_error},
    post::{cuzk_slice, vanilla_in},
};
use crate::{
    engine,
    error::{Error, Result, Status},
    snap::{self, SnapRequest},
};

/// One SnapDeals job: what filecoin-ffi's `GenerateUpdateProofWithVanilla` takes. Initialize
/// with `cuzk_update_request_default`, then set the fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cuzk_update_request {
    /// `sizeof(cuzk_update_request)`, set by `cuzk_update_request_default`.
    pub struct_size: u32,
    /// Higher runs first within PoRep's class (default 0).
    pub priority: i32,
    /// go-state-types' `abi.RegisteredUpdateProof`: 0-4 (2KiB..64GiB).
    pub registered_proof: i64,
    /// The sector key's comm_r (before the update), a field element.
    pub comm_r_old: [u8; 32],
    /// The updated replica's comm_r, a field element.
    pub comm_r_new: [u8; 32],
    /// The new data's comm_d, a field element.
    pub comm_d_new: [u8; 32],
    /// `vanilla_count` vanilla proofs, one per partition in order: the bincode bytes of
    /// storage-proofs-update's `PartitionProof`, as filecoin-ffi's
    /// `GenerateUpdateVanillaProofs` returns them. The array and the bytes are borrowed for the
    /// call only.
    pub vanilla_proofs: *const cuzk_slice,
    pub vanilla_count: usize,
}

/// The size of the first version of `cuzk_update_request`, frozen (pinned in layout.rs).
pub(super) const UPDATE_REQUEST_V1_SIZE: usize = 128;

/// What `cuzk_update_request_default` writes.
fn default_request() -> cuzk_update_request {
    cuzk_update_request {
        struct_size: std::mem::size_of::<cuzk_update_request>() as u32,
        priority: 0,
        registered_proof: -1,
        comm_r_old: [0; 32],
        comm_r_new: [0; 32],
        comm_d_new: [0; 32],
        vanilla_proofs: std::ptr::null(),
        vanilla_count: 0,
    }
}

/// Fills `*out` with an empty request (priority 0). NULL is ignored.
#[no_mangle]
pub extern "C" fn cuzk_update_request_default(out: *mut cuzk_update_request) {
    quiet("cuzk_update_request_default", (), || {
        let Ok(out) = Out::new(out, "out") else {
            return;
        };
        out.write(default_request())
    })
}

/// The request as the engine takes it (copied: nothing of the caller's is kept).
fn request_in(req: *const cuzk_update_request) -> Result<SnapRequest> {
    let r = sized_in(
        req,
        "cuzk_update_request",
        UPDATE_REQUEST_V1_SIZE,
        default_request(),
    )?;
    let proof = snap::update_proof_from_abi(r.registered_proof)?;
    let vanilla_proofs = vanilla_in(r.vanilla_proofs, r.vanilla_count)?;
    Ok(SnapRequest {
        proof,
        comm_r_old: r.comm_r_old,
        comm_r_new: r.comm_r_new,
        comm_d_new: r.comm_d_new,
        vanilla_proofs,
        priority: r.priority,
    })
}

/// Validates a SnapDeals job and queues it; writes its id to `*job_id_out` (then `cuzk_await`,
/// `cuzk_poll`, `cuzk_cancel` as for any job; its proof is `partitions × 192` bytes,
/// filecoin-proofs' `EmptySectorUpdateProof`). Validation errors are returned here: an unknown
/// proof type or a commitment that is no field element (`CUZK_STATUS_INVALID_ARGUMENT`);
/// vanilla proofs that do not parse, are not one per partition, or do not verify against the
/// commitments (`CUZK_STATUS_INVALID_INPUT`); `CUZK_STATUS_RESOURCE_EXHAUSTED` when `max_jobs`
/// jobs are queued or running; `CUZK_STATUS_NOT_RUNNING` without an engine. Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_update_submit(
    req: *const cuzk_update_request,
    job_id_out: *mut u64,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let job_id_out = Out::new(job_id_out, "job_id_out")?;
        let req = request_in(req)?;
        let id = running()?.submit_snap(&req)?;
        job_id_out.write(id);
        Ok(())
    })
}

/// Drop-in for filecoin-ffi's `generate_empty_sector_update_proof_with_vanilla`: proves
/// `*req`, blocking until done, and writes filecoin-proofs' proof bytes to `*proof_out`
/// (`partitions × 192`, 16 partitions at 32 and 64 GiB). The proof has passed the self-check
/// unless the engine was started with `self_check = 0`. Starts the engine with defaults if it
/// is not running. Errors as `cuzk_update_submit`, then as `cuzk_await`;
/// `CUZK_STATUS_IN_CALLBACK` from a timeline callback (use `cuzk_update_submit`). Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_generate_update(
    req: *const cuzk_update_request,
    proof_out: *mut cuzk_bytes,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let proof_out = Out::new(proof_out, "proof_out")?;
        if crate::timeline::in_callback() {
            return Err(Error::new(
                Status::InCallback,
                "cuzk_generate_update blocks: use cuzk_update_submit from a timeline callback",
            ));
        }
        let req = request_in(req)?;
        let engine = engine::global_or_default()?;
        let id = engine.submit_snap(&req)?;
        let out = engine.await_job(id, None)?;
        proof_out.write(cuzk_bytes::owned(out.proof));
        Ok(())
    })
}
