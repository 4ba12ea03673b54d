//! The memory budget: every in-flight partition and every resident parameter set reserves its
//! bytes before the memory is touched, and the sum never exceeds the budget.

use std::{sync::Arc, time::Duration};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result, Status};

#[derive(Debug)]
struct State {
    used: u64,
    peak: u64,
    /// Part of `used` held by resident parameter sets (freed only when they are released).
    resident: u64,
    /// Part of `used` held by calls the GPU watchdog gave up on (freed when they return, if
    /// ever): like `resident`, nothing a waiting request can count on.
    stuck: u64,
    /// Priority requests waiting: ordinary requests wait behind them.
    priority_waiting: usize,
    /// Bytes asked for by requests waiting for memory (they take it before a later request).
    waiting: u64,
}

/// A byte budget shared by the engine's workers.
#[derive(Debug)]
pub struct Budget {
    total: u64,
    state: Mutex<State>,
    freed: Condvar,
}

/// Bytes held from a [`Budget`]; given back on drop.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<Budget>,
    bytes: u64,
    resident: bool,
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The same bytes held from now on as a resident parameter set (counted in
    /// [`Budget::resident`] until dropped): what a waiting request cannot count on getting
    /// back.
    pub fn into_resident(mut self) -> Reservation {
        if !self.resident {
            self.budget.state.lock().resident += self.bytes;
            self.resident = true;
        }
        self
    }
}

/// Bytes marked as held by a call the watchdog gave up on ([`Budget::hold_stuck`]).
#[derive(Debug)]
pub struct StuckHold {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Drop for StuckHold {
    fn drop(&mut self) {
        self.budget.state.lock().stuck -= self.bytes;
        self.budget.freed.notify_all();
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.bytes > 0 {
            let mut st = self.budget.state.lock();
            st.used -= self.bytes;
            if self.resident {
                st.resident -= self.bytes;
            }
            drop(st);
            self.budget.freed.notify_all();
        }
    }
}

impl Budget {
    pub fn new(total: u64) -> Arc<Self> {
        Arc::new(Budget {
            total,
            state: Mutex::new(State {
                used: 0,
                peak: 0,
                resident: 0,
                stuck: 0,
                priority_waiting: 0,
                waiting: 0,
            }),
            freed: Condvar::new(),
        })
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn used(&self) -> u64 {
        self.state.lock().used
    }

    /// Highest reservation total seen.
    pub fn peak(&self) -> u64 {
        self.state.lock().peak
    }

    /// Bytes that cannot be given back while a request waits: those of resident parameter
    /// sets and recordings, and those held by calls the GPU watchdog gave up on (until they
    /// return). Every "could never fit" check counts them.
    pub fn resident(&self) -> u64 {
        let st = self.state.lock();
        st.resident + st.stuck
    }

    /// Bytes held by calls the GPU watchdog gave up on (part of [`Budget::resident`]).
    pub fn stuck(&self) -> u64 {
        self.state.lock().stuck
    }

    /// Marks `bytes` of what is reserved as held by a call the watchdog gave up on, until the
    /// returned guard is dropped (the call returned): counted with the resident bytes.
    pub fn hold_stuck(self: &Arc<Self>, bytes: u64) -> StuckHold {
        self.state.lock().stuck += bytes;
        StuckHold {
            budget: self.clone(),
            bytes,
        }
    }

    /// Bytes that requests waiting for memory now have asked for.
    pub fn waiting(&self) -> u64 {
        self.state.lock().waiting
    }

    fn grant(self: &Arc<Self>, st: &mut State, bytes: u64, resident: bool) -> Reservation {
        st.used += bytes;
        st.peak = st.peak.max(st.used);
        if resident {
            st.resident += bytes;
        }
        Reservation {
            budget: self.clone(),
            bytes,
            resident,
        }
    }

    /// Reserves `bytes` now if they fit.
    pub fn try_acquire(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let mut st = self.state.lock();
        (st.used + bytes <= self.total).then(|| self.grant(&mut st, bytes, false))
    }

    /// Reserves `bytes` for a resident parameter set now if they fit (counted in
    /// [`Budget::resident`] until the reservation is dropped).
    pub fn try_acquire_resident(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let mut st = self.state.lock();
        (st.used + bytes <= self.total).then(|| self.grant(&mut st, bytes, true))
    }

    /// Reserves `bytes` ahead of ordinary requests (which wait while this one does), waiting
    /// for memory others give back. Resident parameter sets, and the `queued()` bytes held by
    /// work waiting behind this request, cannot be given back while it waits: if `bytes` cannot
    /// fit beside them, waiting could never end and the request fails at once with
    /// RESOURCE_EXHAUSTED. `queued` is called with the budget locked (it must not touch the
    /// budget). `give_up` is polled as in [`Budget::acquire`].
    pub fn acquire_priority(
        self: &Arc<Self>,
        bytes: u64,
        what: &str,
        queued: impl Fn() -> u64,
        mut give_up: impl FnMut() -> Option<Error>,
    ) -> Result<Reservation> {
        let mut st = self.state.lock();
        st.priority_waiting += 1;
        st.waiting += bytes;
        let res = loop {
            if st.used + bytes <= self.total {
                break Ok(self.grant(&mut st, bytes, false));
            }
            let stuck = st.resident + st.stuck + queued();
            if bytes + stuck > self.total {
                break Err(Error::new(
                    Status::ResourceExhausted,
                    format!(
                        "{what} needs {} MiB, which cannot fit beside the {} MiB that cannot be \
                         given back meanwhile (memory budget {} MiB)",
                        bytes >> 20,
                        stuck >> 20,
                        self.total >> 20
                    ),
                ));
            }
            if let Some(e) = give_up() {
                break Err(e);
            }
            self.freed.wait_for(&mut st, Duration::from_millis(50));
        };
        st.priority_waiting -= 1;
        st.waiting -= bytes;
        drop(st);
        self.freed.notify_all();
        res
    }

    /// Reserves `bytes`, waiting while other reservations are held (and while a priority
    /// request waits). `give_up` is polled while waiting (cancellation, shutdown); when it
    /// returns an error the wait ends with it. A request that cannot fit beside the resident
    /// parameter sets fails with RESOURCE_EXHAUSTED instead of waiting.
    pub fn acquire(
        self: &Arc<Self>,
        bytes: u64,
        what: &str,
        mut give_up: impl FnMut() -> Option<Error>,
    ) -> Result<Reservation> {
        if bytes > self.total {
            return Err(Error::new(
                Status::ResourceExhausted,
                format!(
                    "{what} needs {} MiB but the whole memory budget is {} MiB",
                    bytes >> 20,
                    self.total >> 20
                ),
            ));
        }
        let mut st = self.state.lock();
        if st.priority_waiting == 0 && st.used + bytes <= self.total {
            return Ok(self.grant(&mut st, bytes, false));
        }
        st.waiting += bytes;
        let res = loop {
            if st.priority_waiting == 0 && st.used + bytes <= self.total {
                break Ok(self.grant(&mut st, bytes, false));
            }
            // Resident parameter sets are given back only when the engine stops: a request
            // that cannot fit beside them would wait for ever.
            if bytes + st.resident + st.stuck > self.total {
                break Err(Error::new(
                    Status::ResourceExhausted,
                    format!(
                        "{what} needs {} MiB, which cannot fit beside the {} MiB of parameters \
                         held resident{} (memory budget {} MiB)",
                        bytes >> 20,
                        st.resident >> 20,
                        if st.stuck > 0 {
                            format!(" and {} MiB held by GPU calls given up on", st.stuck >> 20)
                        } else {
                            String::new()
                        },
                        self.total >> 20
                    ),
                ));
            }
            if let Some(e) = give_up() {
                break Err(e);
            }
            self.freed.wait_for(&mut st, Duration::from_millis(50));
        };
        st.waiting -= bytes;
        res
    }
}

/// Default budget: 90% of the memory available now (MemAvailable), or 8 GiB if unknown.
pub fn default_budget() -> u64 {
    let avail = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    avail.map(|b| b / 10 * 9).unwrap_or(8 << 30)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;

    #[test]
    fn a_reservation_made_resident_counts_as_resident_until_dropped() {
        let b = Budget::new(100);
        let r = b.try_acquire(30).unwrap().into_resident();
        assert_eq!((b.used(), b.resident()), (30, 30));
        // 30 resident + 80 > 100: a priority request could never fit, and says so at once.
        let e = b.acquire_priority(80, "p", || 0, || None).unwrap_err();
        assert_eq!(e.status, Status::ResourceExhausted);
        drop(r);
        assert_eq!((b.used(), b.resident()), (0, 0));
    }

    /// The memory of a GPU call the watchdog gave up on (held until the call returns, if ever)
    /// counts as resident, so the "could never fit" checks see it. The hazard: uncounted, a
    /// request that can only fit once that memory comes back waits for ever.
    #[test]
    fn memory_held_by_a_call_given_up_on_counts_as_never_coming_back() {
        let b = Budget::new(100);
        let call = b.try_acquire(60).unwrap();
        let hold = b.hold_stuck(60);
        assert_eq!((b.resident(), b.stuck()), (60, 60));
        let e = b.acquire(50, "partition", || None).unwrap_err();
        assert_eq!(e.status, Status::ResourceExhausted);
        assert!(e.message.contains("given up on"), "{e}");
        let e = b.acquire_priority(50, "retry", || 0, || None).unwrap_err();
        assert_eq!(e.status, Status::ResourceExhausted);
        // The call returned: the request waits for the memory (given up here after a moment).
        drop(hold);
        let mut polls = 0;
        let e = b
            .acquire(50, "partition", || {
                polls += 1;
                (polls > 3).then(|| Error::new(Status::Cancelled, "stop"))
            })
            .unwrap_err();
        assert_eq!(e.status, Status::Cancelled);
        drop(call);
        assert_eq!((b.used(), b.resident(), b.stuck()), (0, 0, 0));
    }

    /// A request that could never fit beside the resident parameter sets fails at once
    /// (RESOURCE_EXHAUSTED). The hazard: it waits until its job is cancelled (here: `give_up`
    /// on its first poll) instead of failing.
    #[test]
    fn a_request_that_cannot_fit_beside_resident_parameters_fails_at_once() {
        let b = Budget::new(100);
        let _resident = b.try_acquire_resident(40).unwrap();
        let cancel = || Some(Error::new(Status::Cancelled, "gave up waiting"));
        let e = b.acquire(70, "partition", cancel).unwrap_err();
        assert_eq!(e.status, Status::ResourceExhausted, "{e}");
        assert!(e.message.contains("held resident"), "{e}");
        assert_eq!((b.used(), b.waiting()), (40, 0));
        // One that fits beside them once other memory comes back still waits for it.
        let held = b.try_acquire(50).unwrap();
        let e = b.acquire(60, "partition", cancel).unwrap_err();
        assert_eq!(e.status, Status::Cancelled, "{e}");
        drop(held);
        assert_eq!(b.acquire(60, "partition", cancel).unwrap().bytes(), 60);
    }

    #[test]
    fn never_exceeds_and_releases() {
        let b = Budget::new(100);
        let r1 = b.try_acquire(60).unwrap();
        assert!(b.try_acquire(50).is_none());
        let r2 = b.try_acquire(40).unwrap();
        assert_eq!(b.used(), 100);
        drop(r1);
        assert_eq!(b.used(), 40);
        drop(r2);
        assert_eq!(b.used(), 0);
        assert_eq!(b.peak(), 100);
    }

    #[test]
    fn too_big_fails_fast_and_waiters_wake() {
        let b = Budget::new(100);
        let e = b.acquire(101, "x", || None).unwrap_err();
        assert_eq!(e.status, Status::ResourceExhausted);
        let r = b.try_acquire(80).unwrap();
        let b2 = b.clone();
        let t = std::thread::spawn(move || b2.acquire(50, "y", || None).map(|r| r.bytes()));
        testing::until("the request to wait", || b.waiting() == 50);
        assert_eq!(b.used(), 80);
        drop(r);
        assert_eq!(testing::join("the woken request", t).unwrap(), 50);
        assert_eq!(b.waiting(), 0);
    }

    #[test]
    fn a_priority_request_goes_first_or_fails_when_it_can_never_fit() {
        let b = Budget::new(100);
        let resident = b.try_acquire_resident(40).unwrap();
        assert_eq!(b.resident(), 40);
        let held = b.try_acquire(50).unwrap();
        // 40 resident + 50 queued behind it + 20 > 100: waiting could never end.
        let e = b.acquire_priority(20, "p", || 50, || None).unwrap_err();
        assert_eq!(e.status, Status::ResourceExhausted);
        // Only the resident part is stuck: it waits, and an ordinary request behind it waits too.
        let b2 = b.clone();
        let p = std::thread::spawn(move || {
            b2.acquire_priority(50, "p", || 0, || None)
                .map(|r| r.bytes())
        });
        testing::until("the priority request to wait", || {
            b.state.lock().priority_waiting > 0
        });
        let b3 = b.clone();
        let o = std::thread::spawn(move || b3.acquire(10, "o", || None).map(|r| r.bytes()));
        // The ordinary request either waits (its 10 join the priority request's 50 in
        // `waiting`) or is wrongly granted (counted in `used`): no sleep decides it.
        testing::until("the ordinary request to wait or pass", || {
            b.waiting() == 60 || b.used() > 90
        });
        assert_eq!(
            b.used(),
            90,
            "the ordinary request must not pass the priority one"
        );
        drop(held);
        assert_eq!(testing::join("the priority request", p).unwrap(), 50);
        assert_eq!(testing::join("the ordinary request", o).unwrap(), 10);
        drop(resident);
        assert_eq!(b.resident(), 0);
    }

    #[test]
    fn give_up_ends_the_wait() {
        let b = Budget::new(10);
        let _r = b.try_acquire(10).unwrap();
        let mut n = 0;
        let e = b
            .acquire(5, "z", || {
                n += 1;
                (n > 2).then(|| Error::new(Status::Cancelled, "cancelled"))
            })
            .unwrap_err();
        assert_eq!(e.status, Status::Cancelled);
    }
}
