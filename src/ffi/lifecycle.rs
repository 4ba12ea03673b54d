//! The process-wide engine's lifecycle: start, shutdown, and the engine the other calls use.

use std::sync::Arc;

use super::{
    boundary::boundary,
    config::{config_from, cuzk_config},
    memory::cuzk_error,
};
use crate::{
    engine,
    error::{Error, Result, Status},
};

/// The running engine, for calls that start work.
pub(super) fn running() -> Result<Arc<engine::Engine>> {
    engine::global().filter(|e| e.is_running()).ok_or_else(|| {
        Error::new(
            Status::NotRunning,
            "the engine is not running (call cuzk_engine_start)",
        )
    })
}

/// The engine for calls about existing jobs: also while it shuts down (its jobs end
/// NOT_RUNNING).
pub(super) fn current() -> Result<Arc<engine::Engine>> {
    engine::global().ok_or_else(|| {
        Error::new(
            Status::NotRunning,
            "the engine is not running (call cuzk_engine_start)",
        )
    })
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
/// Thread-safe. As `cuzk_engine_shutdown_err` with no error out-struct.
#[no_mangle]
pub extern "C" fn cuzk_engine_shutdown() -> Status {
    cuzk_engine_shutdown_err(std::ptr::null_mut())
}

/// `cuzk_engine_shutdown` with an error out-struct, as every other call has (NULL: none):
/// the message of `CUZK_STATUS_IN_CALLBACK` or of an internal fault.
#[no_mangle]
pub extern "C" fn cuzk_engine_shutdown_err(err_out: *mut cuzk_error) -> Status {
    boundary(err_out, engine::shutdown_global)
}
