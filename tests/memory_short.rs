//! The engine's parts when memory is short: nothing that only reads state waits behind a
//! request that waits for memory.

mod common;

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use cuzk::{budget::Budget, params::SrsCache, porep::FixtureShape, Error, Status};

/// Sets its flag when dropped: a failing test must not leave a load waiting.
struct Stop(Arc<AtomicBool>);

impl Drop for Stop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst)
    }
}

/// A CPU retry's host-parameter load waits for memory ahead of new partitions, without holding
/// the parameters' lock. The hazard: a load that holds the lock across that wait and the read
/// (tens of seconds for a 32 GiB set) makes the status's resident parameters and admission's
/// `host_resident` wait behind it, and synthesis behind them (the cache's slot lock).
#[test]
fn a_parameter_load_waiting_for_memory_holds_back_no_reader() {
    common::init();
    let (_, rep, _) = common::fixture(FixtureShape::default());
    let budget = Budget::new(4 << 30);
    let cache = Arc::new(SrsCache::new(common::params_dir()));
    let srs = cache.get(&rep.params_id, &budget).unwrap();
    // Every byte taken: the load waits for memory.
    let full = budget.try_acquire(budget.total()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let _stop = Stop(stop.clone());
    let loader = {
        let (srs, stop) = (srs.clone(), stop.clone());
        std::thread::spawn(move || {
            srs.params_waiting(
                || 0,
                || {
                    stop.load(Ordering::SeqCst)
                        .then(|| Error::new(Status::Cancelled, "test over"))
                },
            )
            .map(|_| ())
        })
    };
    common::wait_until(120, "the load to wait for memory", || {
        budget.waiting() == srs.file_len
    });
    let reader = {
        let (srs, cache) = (srs.clone(), cache.clone());
        std::thread::spawn(move || (srs.host_resident(), srs.load_ms(), cache.resident()))
    };
    common::wait_until(30, "the readers, beside a load waiting for memory", || {
        reader.is_finished()
    });
    assert_eq!(reader.join().unwrap(), (false, None, Vec::<String>::new()));
    stop.store(true, Ordering::SeqCst);
    let e = loader.join().unwrap().unwrap_err();
    assert_eq!(e.status, Status::Cancelled, "{e}");
    drop(full);
}

/// A host copy of the parameters (the CPU prover's, or a CPU retry's) stays until the engine
/// releases them, so the budget holds it as resident. The hazard: held as an ordinary
/// reservation, it hides from the checks that fail a request which could never fit (they count
/// resident bytes), and such a request waits for ever.
#[test]
fn a_host_copy_of_the_parameters_is_held_as_resident() {
    common::init();
    let (_, rep, _) = common::fixture(FixtureShape::default());
    let budget = Budget::new(4 << 30);
    let cache = SrsCache::new(common::params_dir());
    let srs = cache.get(&rep.params_id, &budget).unwrap();
    srs.params().unwrap();
    assert_eq!(
        (budget.used(), budget.resident()),
        (srs.file_len, srs.file_len),
        "the host copy must be held as resident"
    );
    srs.release_host();
    assert_eq!((budget.used(), budget.resident()), (0, 0));
}
