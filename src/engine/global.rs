//! The process-wide engine (the singleton the C ABI and the drop-in call use).

use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::{Config, Engine};
use crate::error::{Error, Result, Status};

static GLOBAL: Lazy<Mutex<Option<Arc<Engine>>>> = Lazy::new(|| Mutex::new(None));

/// The process-wide engine, started with `cfg` unless one is running. A running engine with a
/// different configuration is an ALREADY_RUNNING error.
pub fn start_global(cfg: Config) -> Result<Arc<Engine>> {
    let mut g = GLOBAL.lock();
    if let Some(e) = g.as_ref() {
        let want = cfg.clone().resolved();
        let have = e.config();
        // Automatic values (0) match whatever was resolved.
        let same = (cfg.synthesis_workers == 0 || want.synthesis_workers == have.synthesis_workers)
            && want.synthesis_lookahead == have.synthesis_lookahead
            && (cfg.memory_budget == 0 || want.memory_budget == have.memory_budget)
            && want.params_dir == have.params_dir
            && want.self_check == have.self_check
            && want.timeline_file == have.timeline_file
            && want.devices == have.devices
            && want.gpu_batch == have.gpu_batch
            && (cfg.synthesis_nice.is_none() || cfg.synthesis_nice == have.synthesis_nice);
        return if same {
            Ok(e.clone())
        } else {
            Err(Error::new(
                Status::AlreadyRunning,
                "the engine is already running with another configuration; shut it down first",
            ))
        };
    }
    let e = Arc::new(Engine::start(cfg)?);
    *g = Some(e.clone());
    Ok(e)
}

/// The process-wide engine, if started.
pub fn global() -> Option<Arc<Engine>> {
    GLOBAL.lock().clone()
}

/// The process-wide engine, started with the default configuration if needed.
pub fn global_or_default() -> Result<Arc<Engine>> {
    if let Some(e) = global() {
        return Ok(e);
    }
    start_global(Config::default())
}

/// Shuts the process-wide engine down (no-op when none runs).
pub fn shutdown_global() {
    let e = GLOBAL.lock().take();
    if let Some(e) = e {
        e.shutdown();
    }
}
