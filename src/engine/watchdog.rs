//! The GPU-call watchdog. A GPU backend's call runs on a thread of its own that owns what the
//! call needs (the partitions' work and reserved memory); the prover worker waits for it until
//! the call's deadline: `Config::gpu_call_timeout` beyond its expected time (ten times the
//! slowest of the circuit's recent calls on that backend, per partition on one device). Past
//! the deadline the worker gives the call up: the devices still inside it go out of service
//! (`health::take_out_hung`), the caller sends the call's partitions back to synthesis (for the
//! other devices, or the CPU where none is left), and the worker goes on. The call keeps its
//! partitions' memory reserved until it returns; its results are then dropped and its devices
//! probed after the cool-down (`health::returned_late`). So one hung GPU stalls neither the
//! other GPUs nor the jobs, and shutdown waits for a call no longer than its deadline (a
//! backend with a call still running is not released: its memory goes when the call ends).

use std::{
    collections::{HashMap, VecDeque},
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use parking_lot::{Condvar, Mutex};

use super::{health, Inner};

/// The expected time of a call is this many times the slowest recent one.
const SLACK: u32 = 10;
/// Calls remembered per (backend, circuit): a slow first call (parameters loaded, buffers
/// made) ages out.
const REMEMBERED: usize = 8;

/// Recent call times per partition on one device, by (backend, parameter instance).
#[derive(Default)]
pub(super) struct CallTimes(Mutex<HashMap<(usize, u64), VecDeque<Duration>>>);

impl CallTimes {
    fn expected(&self, key: (usize, u64)) -> Duration {
        self.0
            .lock()
            .get(&key)
            .and_then(|v| v.iter().max().copied())
            .unwrap_or_default()
    }

    fn record(&self, key: (usize, u64), per_partition: Duration) {
        let mut m = self.0.lock();
        let v = m.entry(key).or_default();
        if v.len() == REMEMBERED {
            v.pop_front();
        }
        v.push_back(per_partition);
    }
}

enum State<T> {
    Running,
    Done(T),
    /// Given up; the devices taken out for it, and its memory marked as held by it.
    GaveUp(Vec<usize>, crate::budget::StuckHold),
}

struct Shared<T> {
    state: Mutex<State<T>>,
    cv: Condvar,
}

/// Runs `call` for backend `d` on a thread of its own and waits for it until its deadline.
/// `placed` are the devices (indices into the backend's `devices()`) the call's partitions
/// were placed on, `generation` the parameter instance it proves, `held` the bytes of the memory
/// budget the call holds (its partitions'; counted as never coming back while a call given up
/// on runs, `Budget::hold_stuck`), `extra` time the call is allowed beyond the usual deadline
/// (a parameter placement's read). Returns the call's output,
/// or None where the watchdog gave it up (its devices are then out of service; `call`'s
/// output is dropped when it returns). With the watchdog off, or where no thread can be
/// started, the call runs on this thread.
pub(super) fn watched<T: Send + 'static>(
    inner: &Arc<Inner>,
    d: usize,
    generation: u64,
    placed: &[usize],
    held: u64,
    extra: Duration,
    call: impl FnOnce(&Inner) -> T + Send + 'static,
) -> Option<T> {
    let allowance = inner.cfg.gpu_call_timeout.unwrap_or_default();
    if allowance.is_zero() {
        return Some(call(inner));
    }
    let mut devices: Vec<usize> = placed.to_vec();
    devices.sort_unstable();
    devices.dedup();
    let per_device = placed.len().div_ceil(devices.len().max(1)).max(1) as u32;
    let key = (d, generation);
    let deadline =
        Instant::now() + allowance + extra + inner.call_times.expected(key) * SLACK * per_device;

    let shared = Arc::new(Shared {
        state: Mutex::new(State::Running),
        cv: Condvar::new(),
    });
    // The call stays reachable here in case no thread can be started.
    let call = Arc::new(Mutex::new(Some(call)));
    let (theirs, their_inner, their_call) = (shared.clone(), inner.clone(), call.clone());
    let spawned = std::thread::Builder::new()
        .name(format!("cuzk-call-{d}"))
        .spawn(move || {
            let Some(call) = their_call.lock().take() else {
                return;
            };
            let start = Instant::now();
            let out = call(&their_inner);
            let took = start.elapsed();
            let mut st = theirs.state.lock();
            match std::mem::replace(&mut *st, State::Running) {
                State::GaveUp(subs, hold) => {
                    drop(st);
                    // Its partitions' memory goes back now, then its devices may come back.
                    drop(hold);
                    drop(out);
                    let name = their_inner.backends[d].name();
                    log::warn!("{name}: the call given up on returned after {took:.1?}");
                    their_inner.abandoned[d].fetch_sub(1, Ordering::AcqRel);
                    health::returned_late(&their_inner, d, &subs);
                }
                _ => {
                    their_inner.call_times.record(key, took / per_device);
                    *st = State::Done(out);
                    theirs.cv.notify_all();
                }
            }
        });
    if let Err(e) = spawned {
        log::warn!("cannot start a thread for a GPU call ({e}): running it unwatched");
        let call = call.lock().take().expect("no thread took it");
        return Some(call(inner));
    }
    wait_or_give_up(inner, d, &shared, deadline, devices, held, placed.len())
}

/// Waits for the call `shared` of backend `d` until `deadline`: its output, or None where it
/// is given up then: the `devices` still inside it (where the backend knows) go out of
/// service, and the `held` bytes of its `n` partitions stay held until it returns.
fn wait_or_give_up<T>(
    inner: &Arc<Inner>,
    d: usize,
    shared: &Shared<T>,
    deadline: Instant,
    devices: Vec<usize>,
    held: u64,
    n: usize,
) -> Option<T> {
    let mut st = shared.state.lock();
    loop {
        if matches!(&*st, State::Done(_)) {
            return match std::mem::replace(&mut *st, State::Running) {
                State::Done(out) => Some(out),
                _ => unreachable!("checked above"),
            };
        }
        if Instant::now() >= deadline {
            break;
        }
        shared.cv.wait_until(&mut st, deadline);
    }
    let subs = inner.backends[d]
        .busy_devices()
        .filter(|b| !b.is_empty())
        .unwrap_or(devices);
    *st = State::GaveUp(subs.clone(), inner.budget.hold_stuck(held));
    inner.abandoned[d].fetch_add(1, Ordering::AcqRel);
    drop(st);
    log::error!(
        "{}: a call of {n} partition(s) is past its deadline; given up",
        inner.backends[d].name(),
    );
    health::take_out_hung(inner, d, &subs);
    None
}
