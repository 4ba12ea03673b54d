//! The process-wide engine through the C ABI (called from Rust): unregistering a callback
//! while the engine shuts down, starting while it shuts down, and configuration matching.
//! The tests share the singleton, so they take turns.

mod common;

use std::{
    ffi::c_void,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Mutex,
    },
    time::Instant,
};

use common::within;
use cuzk::{
    engine::{self, Config},
    ffi::{self, cuzk_error, cuzk_job_request, cuzk_timeline_event},
    porep::FixtureShape,
    Status,
};

static TURN: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a C caller would keep behind `userdata`.
struct Watch {
    calls: AtomicU64,
    /// Set once the caller has freed (here: given up) the userdata.
    freed: AtomicBool,
    late: AtomicU64,
}

unsafe extern "C" fn on_event(userdata: *mut c_void, _ev: *const cuzk_timeline_event) {
    // SAFETY: the test passes a pointer to a Watch that outlives the engine.
    let w = unsafe { &*(userdata as *const Watch) };
    w.calls.fetch_add(1, Ordering::SeqCst);
    if w.freed.load(Ordering::SeqCst) {
        w.late.fetch_add(1, Ordering::SeqCst);
    }
}

fn request(c1: &[u8], sector: u64, prover: [u8; 32]) -> cuzk_job_request {
    let mut r = std::mem::MaybeUninit::<cuzk_job_request>::uninit();
    ffi::cuzk_job_request_default(r.as_mut_ptr());
    // SAFETY: initialized by cuzk_job_request_default.
    let mut r = unsafe { r.assume_init() };
    r.c1_ptr = c1.as_ptr();
    r.c1_len = c1.len();
    r.sector_id = sector;
    r.prover_id = prover;
    r
}

fn no_error() -> cuzk_error {
    cuzk_error {
        status: Status::Ok,
        message: std::ptr::null_mut(),
    }
}

#[test]
fn unregister_while_the_engine_shuts_down_is_final() {
    let _t = turn();
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", common::params_dir());
    engine::start_global(Config {
        params_dir: common::params_dir(),
        synthesis_workers: 1,
        ..Config::default()
    })
    .unwrap();
    let watch: &'static Watch = Box::leak(Box::new(Watch {
        calls: AtomicU64::new(0),
        freed: AtomicBool::new(false),
        late: AtomicU64::new(0),
    }));
    let mut handle = 0u64;
    let mut err = no_error();
    assert_eq!(
        ffi::cuzk_timeline_register(
            Some(on_event),
            watch as *const Watch as *mut c_void,
            &mut handle,
            &mut err
        ),
        Status::Ok
    );
    // One job synthesizing, two queued: the drain has work to report.
    let req = request(&c1, spec.sector_id, spec.prover_id());
    for _ in 0..3 {
        let mut id = 0;
        assert_eq!(ffi::cuzk_submit(&req, &mut id, &mut err), Status::Ok);
    }
    common::wait_until(120, "synthesis to start", || {
        engine::global().is_some_and(|e| e.status().synthesizing > 0)
    });
    let (sector, prover) = (spec.sector_id, spec.prover_id());
    within(300, "unregister during shutdown", move || {
        let req = request(&c1, sector, prover);
        let shutdown = std::thread::spawn(|| {
            let st = ffi::cuzk_engine_shutdown();
            (st, Instant::now())
        });
        // Shutdown has begun once submissions are refused as NOT_RUNNING (a full queue,
        // RESOURCE_EXHAUSTED, is not that: keep trying; `within` bounds the wait).
        let mut err = no_error();
        let mut id = 0;
        let st = loop {
            match ffi::cuzk_submit(&req, &mut id, &mut err) {
                Status::Ok | Status::ResourceExhausted => ffi::cuzk_error_free(&mut err),
                st => break st,
            }
        };
        ffi::cuzk_error_free(&mut err);
        assert_eq!(st, Status::NotRunning, "a submission during shutdown");
        assert_eq!(ffi::cuzk_timeline_unregister(handle), Status::Ok);
        // A C caller frees its userdata now; no callback may touch it from here on.
        watch.freed.store(true, Ordering::SeqCst);
        let (st, _) = shutdown.join().unwrap();
        assert_eq!(st, Status::Ok);
    });
    assert!(watch.calls.load(Ordering::SeqCst) > 0);
    assert_eq!(
        watch.late.load(Ordering::SeqCst),
        0,
        "the callback ran after cuzk_timeline_unregister returned"
    );
    assert!(engine::global().is_none());
}

#[test]
fn a_start_during_shutdown_waits_for_the_old_engine() {
    let _t = turn();
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let cfg = Config {
        params_dir: common::params_dir(),
        synthesis_workers: 1,
        ..Config::default()
    };
    let old = engine::start_global(cfg.clone()).unwrap();
    let req = request(&c1, spec.sector_id, spec.prover_id());
    let mut err = no_error();
    let mut id = 0;
    assert_eq!(ffi::cuzk_submit(&req, &mut id, &mut err), Status::Ok);
    common::wait_until(120, "synthesis to start", || old.status().synthesizing > 0);
    let c2 = cfg.clone();
    within(300, "start during shutdown", move || {
        let shutdown = std::thread::spawn(engine::shutdown_global);
        common::wait_until(60, "shutdown to begin", || !old.status().running);
        assert!(!old.is_shut_down());
        let new = engine::start_global(c2).unwrap();
        assert!(
            old.is_shut_down(),
            "a second engine started while the first was still shutting down"
        );
        shutdown.join().unwrap().unwrap();
        assert!(!std::sync::Arc::ptr_eq(&old, &new));
        assert!(new.status().running);
        engine::shutdown_global().unwrap();
    });
}

/// A start with the running settings is the running engine; one with another setting is
/// ALREADY_RUNNING. That every field takes part is the unit test
/// `engine::config::tests::every_setting_is_part_of_what_must_match`.
#[test]
fn a_start_with_another_setting_is_already_running() {
    let _t = turn();
    let cfg = Config {
        params_dir: common::params_dir(),
        timeline_stderr: false,
        ..Config::default()
    };
    engine::start_global(cfg.clone()).unwrap();
    assert!(engine::start_global(cfg.clone()).is_ok());
    let err = engine::start_global(Config {
        timeline_stderr: true,
        ..cfg
    })
    .err()
    .expect("a different timeline_stderr must not match");
    assert_eq!(err.status, Status::AlreadyRunning);
    engine::shutdown_global().unwrap();
}

#[test]
fn oversized_deep_and_out_of_range_inputs_are_clear_errors() {
    let _t = turn();
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    engine::start_global(Config {
        params_dir: common::params_dir(),
        ..Config::default()
    })
    .unwrap();
    let mut err = no_error();
    let mut id = 0u64;
    let submit = |bytes: &[u8], len: usize, err: &mut cuzk_error, id: &mut u64| {
        let mut r = request(bytes, spec.sector_id, spec.prover_id());
        r.c1_len = len;
        ffi::cuzk_submit(&r, id, err)
    };
    let message = |err: &cuzk_error| {
        // SAFETY: set by cuzk on failure.
        unsafe { std::ffi::CStr::from_ptr(err.message) }
            .to_string_lossy()
            .into_owned()
    };
    // c1_len = SIZE_MAX: refused before anything reads the buffer.
    assert_eq!(
        submit(&c1, usize::MAX, &mut err, &mut id),
        Status::InvalidArgument
    );
    assert!(message(&err).contains("PTRDIFF_MAX"), "{}", message(&err));
    // 1 GiB: refused by size, before it is copied or parsed.
    let big = vec![b' '; 1 << 30];
    let t = Instant::now();
    assert_eq!(
        submit(&big, big.len(), &mut err, &mut id),
        Status::InvalidInput
    );
    assert!(message(&err).contains("max_c1_bytes"), "{}", message(&err));
    assert!(
        t.elapsed().as_secs() < 5,
        "a 1 GiB input took {:?}",
        t.elapsed()
    );
    drop(big);
    // 10,000-deep nesting: a parse error, not a stack overflow.
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        submit(deep.as_bytes(), deep.len(), &mut err, &mut id),
        Status::InvalidInput
    );
    let deep = format!(
        "{{\"SectorNum\":1,\"Phase1Out\":\"{}\",\"SectorSize\":2048}}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "{\"a\":".repeat(10_000)
        )
    );
    assert_eq!(
        submit(deep.as_bytes(), deep.len(), &mut err, &mut id),
        Status::InvalidInput
    );
    // SectorNum beyond 2^63 (lotus-bench's field is an int64, a sector number a uint64): read,
    // and refused because it is not the sector given; beyond 2^64 it is no sector number.
    let env = format!(
        "{{\"SectorNum\":{},\"Phase1Out\":\"{}\",\"SectorSize\":2048}}",
        1u64 << 63,
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &c1)
    );
    assert_eq!(
        submit(env.as_bytes(), env.len(), &mut err, &mut id),
        Status::InvalidInput
    );
    assert!(
        message(&err).contains("SectorNum is 9223372036854775808"),
        "{}",
        message(&err)
    );
    let env = env.replace("9223372036854775808", "18446744073709551616");
    assert_eq!(
        submit(env.as_bytes(), env.len(), &mut err, &mut id),
        Status::InvalidInput
    );
    assert!(
        message(&err).contains("not a sector number"),
        "{}",
        message(&err)
    );
    // The same error struct was reused without freeing: cuzk freed each message it replaced
    // (LeakSanitizer checks this in the C tests).
    ffi::cuzk_error_free(&mut err);
    engine::shutdown_global().unwrap();
}
