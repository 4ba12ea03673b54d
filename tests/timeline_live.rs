//! A live run on the 10-partition fixture: every partition's events arrive in a valid order,
//! the analysis and SVG come out of them, a sink unregistered mid-run is never called again,
//! and the TIMELINE log file parses back into the same analysis.
//!
//! The partitions are synthesized for real and "proved" by a stub that takes a few
//! milliseconds (the timeline is what is tested; real multi-partition proofs, verified by
//! filecoin-proofs, are `e2e_partitions`'s), which keeps ten CPU proofs out of the test run.

mod common;

use common::tools::analysis;

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc, Mutex,
};

use cuzk::{
    engine::{Config, Engine, JobRequest},
    porep::FixtureShape,
    timeline::{Event, EventKind},
};

#[test]
fn ten_partition_run_has_every_event_in_order() {
    let shape = FixtureShape {
        partitions: 10,
        layers: 0,
    };
    let (spec, _, c1) = common::fixture(shape);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("timeline.log");
    let engine = Engine::start_with_backends(
        Config {
            params_dir: common::params_dir(),
            timeline_file: Some(log.clone()),
            self_check: false,
            ..Config::default()
        },
        vec![Box::new(common::Stub {
            delay: std::time::Duration::from_millis(30),
            ..common::Stub::default()
        })],
    )
    .unwrap();
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let ev = events.clone();
    engine.add_timeline_sink(Arc::new(move |e| ev.lock().unwrap().push(e.clone())));

    // A sink that is unregistered (from another thread) in the middle of the run.
    let calls = Arc::new(AtomicU64::new(0));
    let c = calls.clone();
    let flaky = engine.add_timeline_sink(Arc::new(move |_| {
        c.fetch_add(1, Ordering::SeqCst);
    }));

    let id = engine
        .submit(JobRequest {
            c1: c1.clone(),
            sector_id: spec.sector_id,
            prover_id: spec.prover_id(),
            priority: 0,
            fixture: shape,
        })
        .unwrap();
    let seen_at_unregister = std::thread::scope(|s| {
        s.spawn(|| {
            common::wait_until(600, "three GPU_END events", || {
                events
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|e| e.kind == EventKind::GpuEnd)
                    .count()
                    >= 3
            });
            assert!(engine.remove_timeline_sink(flaky));
            calls.load(Ordering::SeqCst)
        })
        .join()
        .unwrap()
    });
    let out = engine.await_job(id, common::JOB_DEADLINE).unwrap();
    engine.shutdown().unwrap();
    assert_eq!(out.proof.len(), 10 * 192);
    assert!(seen_at_unregister > 0);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        seen_at_unregister,
        "sink called after unregister"
    );

    let evs = events.lock().unwrap().clone();
    common::assert_partition_order(&evs, id, 10);

    let a = analysis::analyze(&evs);
    assert_eq!(a.partitions.len(), 10);
    assert_eq!(a.incomplete, 0);
    assert_eq!(a.devices.len(), 1);
    assert!(a.devices[0].busy_pct_run > 0.0 && a.devices[0].busy_pct_steady <= 100.0 + 1e-9);
    let svg = analysis::waterfall_svg(&a, "live");
    assert_eq!(svg.matches("prove: ").count(), 10);
    analysis::check_svg(&svg).unwrap();

    // The log file tells the same story (millisecond precision, 3 decimals).
    let from_log = analysis::parse_log(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(from_log.len(), evs.len());
    let b = analysis::analyze(&from_log);
    assert_eq!(b.partitions.len(), 10);
    assert_eq!(b.gaps.len(), a.gaps.len());
}
