//! The C ABI, the crate's top layer. Every `extern "C"` function the host calls and every raw
//! pointer it passes is handled under `src/ffi/`; `crate::sys` (the bottom layer) holds the
//! calls out to the OS and CUDA. Nothing else in the crate uses `unsafe`.
//!
//! Conventions (also in `include/cuzk.h`):
//! * Inputs are borrowed for the duration of the call only; nothing the caller passes is kept.
//! * Outputs are written only on success, except `cuzk_error`, which is written on failure
//!   when the caller passes one. A `cuzk_error` must be zeroed or hold an error from cuzk: a
//!   message it holds is freed before it is overwritten.
//! * Memory returned in `cuzk_bytes` / `cuzk_error` is owned by the caller and must be freed
//!   with `cuzk_bytes_free` / `cuzk_error_free` (both accept NULL and already-freed values).
//! * No panic crosses the boundary: it becomes `CUZK_STATUS_PANIC` (or, for the functions with
//!   no status, a logged error and a harmless result).
//! * Every function is thread-safe. From inside a timeline callback, the calls that would wait
//!   for the thread running the callback answer `CUZK_STATUS_IN_CALLBACK`.
//! * A length above `PTRDIFF_MAX` is `CUZK_STATUS_INVALID_ARGUMENT`; flag fields are read as
//!   integers (0 false, anything else true).
//!
//! One file per concern:
//! * `boundary.rs`: the panic boundary every export goes through, the error writer, checked
//!   inputs (`bytes_in`, `ref_in`, `path_in`) and outputs (`Out`, `SizedOut` for structs sized by
//!   the caller).
//! * `memory.rs`: `cuzk_bytes`, `cuzk_error` and their frees.
//! * `config.rs`: `cuzk_config`, its defaults, and how any version of it is read.
//! * `lifecycle.rs`: engine start and shutdown; the engine the other calls use.
//! * `jobs.rs`: the blocking drop-in, submit / await / poll / cancel, devices in and out of
//!   service, `cuzk_verify_seal`.
//! * `post.rs`: WindowPoSt and WinningPoSt, blocking (`cuzk_generate_post`) and submitted.
//! * `observe.rs`: status, metrics, admission, names and version.
//! * `callbacks.rs`: timeline and log callbacks.
//! * `layout.rs`: the structs' version-1 layouts, pinned.

#![allow(non_camel_case_types)]

mod boundary;
mod callbacks;
mod config;
mod jobs;
mod layout;
mod lifecycle;
mod memory;
mod observe;
mod post;
mod snap;

pub use callbacks::{
    cuzk_event_kind_name, cuzk_log_cb, cuzk_log_record, cuzk_log_set_callback, cuzk_timeline_cb,
    cuzk_timeline_event, cuzk_timeline_register, cuzk_timeline_unregister,
    cuzk_timeline_unregister_err, CUZK_NO_PARTITION,
};
pub use config::{cuzk_config, cuzk_config_default};
pub use jobs::{
    cuzk_await, cuzk_cancel, cuzk_device_set_enabled, cuzk_job_request, cuzk_job_request_default,
    cuzk_job_state, cuzk_poll, cuzk_seal_commit_phase2, cuzk_submit, cuzk_verify_seal,
};
pub use lifecycle::{cuzk_engine_shutdown, cuzk_engine_shutdown_err, cuzk_engine_start};
pub use memory::{cuzk_bytes, cuzk_bytes_free, cuzk_error, cuzk_error_free};
pub use observe::{
    cuzk_admission, cuzk_engine_admission, cuzk_engine_metrics, cuzk_engine_report,
    cuzk_engine_status, cuzk_status_name, cuzk_version, CUZK_ADMIT_MAX_JOBS, CUZK_ADMIT_MEMORY,
    CUZK_ADMIT_OK,
};
pub use post::{
    cuzk_generate_post, cuzk_post_request, cuzk_post_request_default, cuzk_post_submit, cuzk_slice,
};
pub use snap::{
    cuzk_generate_update, cuzk_update_request, cuzk_update_request_default, cuzk_update_submit,
};
