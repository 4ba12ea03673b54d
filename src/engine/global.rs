//! The process-wide engine (the singleton the C ABI and the drop-in call use).
//!
//! The engine stays reachable here until its shutdown has finished, so that a callback
//! unregistered during the shutdown is found and removed properly, and a second shutdown waits
//! for the first. A start while an engine shuts down waits for it to be gone, so that two
//! engines never run at once.

use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::{Config, Engine};
use crate::{
    error::{Error, Result, Status},
    timeline::in_callback,
};

static GLOBAL: Lazy<Mutex<Option<Arc<Engine>>>> = Lazy::new(|| Mutex::new(None));

fn refuse_in_callback(what: &str) -> Result<()> {
    if in_callback() {
        return Err(Error::new(
            Status::InCallback,
            format!("{what} cannot be called from a timeline callback (it would wait for the thread running the callback)"),
        ));
    }
    Ok(())
}

/// The process-wide engine, started with `cfg` unless one is running. A running engine with a
/// different configuration is an ALREADY_RUNNING error. While an engine shuts down, waits for
/// it to finish and then starts a new one.
pub fn start_global(cfg: Config) -> Result<Arc<Engine>> {
    refuse_in_callback("starting the engine")?;
    // A configuration out of range is refused as such, whether an engine runs or not.
    cfg.clone().resolved().check()?;
    loop {
        let mut g = GLOBAL.lock();
        let old = match g.as_ref() {
            Some(e) if e.is_running() => {
                return if cfg.matches(e.config()) {
                    Ok(e.clone())
                } else {
                    Err(Error::new(
                        Status::AlreadyRunning,
                        "the engine is already running with another configuration; shut it down first",
                    ))
                };
            }
            Some(e) => e.clone(),
            None => {
                let e = Arc::new(Engine::start(cfg)?);
                *g = Some(e.clone());
                return Ok(e);
            }
        };
        drop(g);
        // Shutting down: wait for it (a shutdown in progress elsewhere finishes first).
        old.shutdown()?;
        let mut g = GLOBAL.lock();
        if g.as_ref().is_some_and(|e| Arc::ptr_eq(e, &old)) {
            *g = None;
        }
    }
}

/// The process-wide engine, if started (also while it shuts down).
pub fn global() -> Option<Arc<Engine>> {
    GLOBAL.lock().clone()
}

/// The running process-wide engine, started with the default configuration if needed.
pub fn global_or_default() -> Result<Arc<Engine>> {
    match global() {
        Some(e) if e.is_running() => Ok(e),
        _ => start_global(Config::default()),
    }
}

/// Shuts the process-wide engine down and waits until its threads are gone (no-op when none
/// runs; a concurrent second call waits too). Refused from a timeline callback.
pub fn shutdown_global() -> Result<()> {
    refuse_in_callback("shutting the engine down")?;
    let Some(e) = global() else {
        return Ok(());
    };
    e.shutdown()?;
    let mut g = GLOBAL.lock();
    if g.as_ref().is_some_and(|x| Arc::ptr_eq(x, &e)) {
        *g = None;
    }
    Ok(())
}
