//! Waits for the crate's unit tests, each with a deadline: a hang fails the test that waited,
//! by its name, instead of the whole run at make test's deadline. Imports nothing from cuzk.

use std::time::{Duration, Instant};

/// How long a unit test waits for another thread.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Spins (yielding) until `cond` holds; panics naming `what` after [`DEADLINE`].
pub fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

/// Joins `t`, re-raising its panic; panics naming `what` if it has not ended after
/// [`DEADLINE`] (the thread is then left behind).
pub fn join<T>(what: &str, t: std::thread::JoinHandle<T>) -> T {
    until(what, || t.is_finished());
    match t.join() {
        Ok(v) => v,
        Err(p) => std::panic::resume_unwind(p),
    }
}
