//! WindowPoSt and WinningPoSt: the blocking drop-in (`cuzk_generate_post`) and the
//! asynchronous submit (`cuzk_post_submit`, then `cuzk_await` / `cuzk_poll` / `cuzk_cancel` as
//! for any job).

use super::{
    boundary::{array_in, boundary, bytes_in, quiet, sized_in, Out},
    lifecycle::running,
    memory::{cuzk_bytes, cuzk_error},
};
use crate::{
    engine,
    error::{Error, Result, Status},
    post::{self, PostRequest},
};

/// Bytes borrowed for the duration of a call (one vanilla proof).
#[repr(C)]
pub struct cuzk_slice {
    pub ptr: *const u8,
    pub len: usize,
}

/// One PoSt job: what filecoin-ffi's `GenerateWinningPoStWithVanilla`,
/// `GenerateWindowPoStWithVanilla` and `GenerateSingleWindowPoStWithVanilla` take. Initialize
/// with `cuzk_post_request_default`, then set the fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cuzk_post_request {
    /// `sizeof(cuzk_post_request)`, set by `cuzk_post_request_default`.
    pub struct_size: u32,
    /// Higher runs first within the job's class (default 0). PoSt goes before every PoRep
    /// partition whatever the priorities; WinningPoSt before WindowPoSt.
    pub priority: i32,
    /// go-state-types' `abi.RegisteredPoStProof`: 0-4 WinningPoSt (2KiB..64GiB), 5-9 WindowPoSt
    /// V1, 10-14 WindowPoSt V1_1.
    pub registered_proof: i64,
    /// The miner's prover id (its actor id, as filecoin-ffi's `toProverID` makes it).
    pub prover_id: [u8; 32],
    /// The chain's randomness, a field element (filecoin-ffi clears the top two bits of its
    /// last byte; a value that is no field element is `CUZK_STATUS_INVALID_ARGUMENT`).
    pub randomness: [u8; 32],
    /// `vanilla_count` vanilla proofs, one per sector: the bincode bytes of filecoin-proofs'
    /// `FallbackPoStSectorProof`, as filecoin-ffi's `GenerateSingleVanillaProof` returns them.
    /// The array and the bytes are borrowed for the call only.
    pub vanilla_proofs: *const cuzk_slice,
    pub vanilla_count: usize,
    /// WindowPoSt only: prove this partition of the sectors given (their vanilla proofs only,
    /// at most a partition's sectors); -1 (the default): every partition.
    pub partition_index: i64,
}

/// The size of the first version of `cuzk_post_request`, frozen (pinned in layout.rs).
pub(super) const POST_REQUEST_V1_SIZE: usize = 104;

/// What `cuzk_post_request_default` writes.
fn default_request() -> cuzk_post_request {
    cuzk_post_request {
        struct_size: std::mem::size_of::<cuzk_post_request>() as u32,
        priority: 0,
        registered_proof: -1,
        prover_id: [0; 32],
        randomness: [0; 32],
        vanilla_proofs: std::ptr::null(),
        vanilla_count: 0,
        partition_index: -1,
    }
}

/// Fills `*out` with an empty request (priority 0, every partition). NULL is ignored.
#[no_mangle]
pub extern "C" fn cuzk_post_request_default(out: *mut cuzk_post_request) {
    quiet("cuzk_post_request_default", (), || {
        let Ok(out) = Out::new(out, "out") else {
            return;
        };
        out.write(default_request())
    })
}

/// The request as the engine takes it (copied: nothing of the caller's is kept).
fn request_in(req: *const cuzk_post_request) -> Result<PostRequest> {
    let r = sized_in(
        req,
        "cuzk_post_request",
        POST_REQUEST_V1_SIZE,
        default_request(),
    )?;
    let proof = post::post_proof_from_abi(r.registered_proof)?;
    let vanilla_proofs = vanilla_in(r.vanilla_proofs, r.vanilla_count)?;
    let partition = match r.partition_index {
        -1 => None,
        k if k >= 0 => Some(k as usize),
        k => {
            return Err(Error::invalid_argument(format!(
                "partition_index {k}: a partition, or -1 for all"
            )))
        }
    };
    Ok(PostRequest {
        proof,
        prover_id: r.prover_id,
        randomness: r.randomness,
        vanilla_proofs,
        partition,
        priority: r.priority,
    })
}

/// The `count` vanilla proofs at `ptr`, copied (INVALID_ARGUMENT for a NULL array or slice).
pub(super) fn vanilla_in(ptr: *const cuzk_slice, count: usize) -> Result<Vec<Vec<u8>>> {
    let slices = array_in(ptr, count, "vanilla_proofs")?;
    slices
        .iter()
        .enumerate()
        .map(|(i, s)| bytes_in(s.ptr, s.len, &format!("vanilla_proofs[{i}]")).map(<[u8]>::to_vec))
        .collect()
}

/// Validates a PoSt job and queues it; writes its id to `*job_id_out` (then `cuzk_await`,
/// `cuzk_poll`, `cuzk_cancel` as for any job; its proof is `partitions × 192` bytes,
/// filecoin-proofs' own). Validation errors are returned here: an unknown proof type or a
/// `partition_index` for WinningPoSt (`CUZK_STATUS_INVALID_ARGUMENT`); vanilla proofs that do
/// not parse, repeat a sector, are more than the type or a partition proves, or do not verify
/// against the randomness, prover id and their sectors (`CUZK_STATUS_INVALID_INPUT`);
/// `CUZK_STATUS_RESOURCE_EXHAUSTED` when `max_jobs` jobs are queued or running;
/// `CUZK_STATUS_NOT_RUNNING` without an engine. Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_post_submit(
    req: *const cuzk_post_request,
    job_id_out: *mut u64,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let job_id_out = Out::new(job_id_out, "job_id_out")?;
        let req = request_in(req)?;
        let id = running()?.submit_post(&req)?;
        job_id_out.write(id);
        Ok(())
    })
}

/// Drop-in for filecoin-ffi's `generate_winning_post_with_vanilla`,
/// `generate_window_post_with_vanilla` and `generate_single_window_post_with_vanilla`:
/// proves `*req`, blocking until done, and writes filecoin-proofs' proof bytes to
/// `*proof_out` (`partitions × 192`; one partition's 192 bytes where `partition_index` is
/// set). The proof has passed the self-check unless the engine was started with
/// `self_check = 0`. Starts the engine with defaults if it is not running. Errors as
/// `cuzk_post_submit`, then as `cuzk_await`; `CUZK_STATUS_IN_CALLBACK` from a timeline
/// callback (use `cuzk_post_submit`). Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_generate_post(
    req: *const cuzk_post_request,
    proof_out: *mut cuzk_bytes,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let proof_out = Out::new(proof_out, "proof_out")?;
        if crate::timeline::in_callback() {
            return Err(Error::new(
                Status::InCallback,
                "cuzk_generate_post blocks: use cuzk_post_submit from a timeline callback",
            ));
        }
        let req = request_in(req)?;
        let engine = engine::global_or_default()?;
        let id = engine.submit_post(&req)?;
        let out = engine.await_job(id, None)?;
        proof_out.write(cuzk_bytes::owned(out.proof));
        Ok(())
    })
}
