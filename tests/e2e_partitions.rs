//! Multi-partition fixture (2KiB sector with 2 partitions of one challenge each, the shape
//! family of the 10-partition fixture) end to end, per-partition pipelining, the timeline's
//! event order, and a failing job that fails alone.
//!
//! Fewer than 10 partitions keeps CI within its time. `make test` synthesizes the 10-partition
//! fixture's partitions 0 and 9 both ways and proves partition 0 on the CPU, verified with the
//! .vk (tests/pce.rs), but no whole 10-partition proof: that is proved only by the benchmarks (`cuzk bench c2`,
//! `cuzk bench batch`, docs/notebook/benchmarks.md).

mod common;

use std::sync::{Arc, Mutex};

use cuzk::{
    engine::{Config, Engine, JobRequest},
    porep::FixtureShape,
    timeline::{Event, EventKind, NO_PARTITION},
    Status,
};

#[test]
fn two_partition_fixture_proves_pipelined_and_a_bad_job_fails_alone() {
    // The real 2KiB fixture first (filecoin-proofs' tables untouched), then the 2-partition one
    // (which edits them in this process).
    let (real_spec, _, real_c1) = common::fixture(FixtureShape::default());
    let shape = FixtureShape {
        partitions: 2,
        layers: 0,
    };
    let (spec, rep, c1) = common::fixture(shape);

    // A parameter directory holding only the fixture shape's files: the real 2KiB job, whose
    // parameters are missing there, must fail alone.
    let dir = tempfile::tempdir().unwrap();
    for p in [
        cuzk::params::params_path(&common::params_dir(), &rep.params_id),
        cuzk::params::vk_path(&common::params_dir(), &rep.params_id),
    ] {
        std::os::unix::fs::symlink(&p, dir.path().join(p.file_name().unwrap())).unwrap();
    }
    let budget = 6u64 << 30;
    common::reset_peak_rss();
    let rss_before = common::proc_status_bytes("VmRSS:");
    let engine = Engine::start(Config {
        params_dir: dir.path().to_path_buf(),
        synthesis_workers: 1,
        memory_budget: budget,
        ..Config::default()
    })
    .unwrap();
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let ev = events.clone();
    engine.add_timeline_sink(Arc::new(move |e| ev.lock().unwrap().push(e.clone())));

    let bad = engine
        .submit(JobRequest {
            c1: real_c1,
            sector_id: real_spec.sector_id,
            prover_id: real_spec.prover_id(),
            priority: 1,
            fixture: FixtureShape::default(),
        })
        .unwrap();
    let good = engine
        .submit(JobRequest {
            c1: c1.clone(),
            sector_id: spec.sector_id,
            prover_id: spec.prover_id(),
            priority: 0,
            fixture: shape,
        })
        .unwrap();
    let err = engine.await_job(bad, common::JOB_DEADLINE).unwrap_err();
    assert_eq!(err.status, Status::Params, "{err}");
    assert!(err.message.contains("No cached parameters"), "{err}");
    let out = engine.await_job(good, common::JOB_DEADLINE).unwrap();
    assert_eq!(out.proof.len(), 2 * 192);
    assert!(out.verified);
    common::wait_until(300, "recording settled", || {
        engine.status().pce_working == 0
    });
    let st = engine.status();
    assert_eq!((st.completed, st.failed), (1, 1));
    // Every partition gave its memory back; what stays reserved is the resident parameters
    // and the circuit's recording.
    let resident: u64 = st
        .resident_params
        .iter()
        .map(|id| {
            std::fs::metadata(cuzk::params::params_path(&common::params_dir(), id))
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(
        st.memory_reserved,
        resident + st.pce_resident_bytes,
        "{st:?}"
    );
    // The process grew by no more than what the engine reserved, plus a margin for code,
    // threads and the allocator: the reservation covers what the work really uses.
    let grew = common::proc_status_bytes("VmHWM:").saturating_sub(rss_before);
    eprintln!(
        "peak RSS grew {} MiB; reserved peak {} MiB",
        grew >> 20,
        st.memory_peak >> 20
    );
    assert!(
        grew <= st.memory_peak + (256 << 20),
        "peak RSS grew {} MiB, above the {} MiB reserved",
        grew >> 20,
        st.memory_peak >> 20
    );
    engine.shutdown().unwrap();
    assert_eq!(
        engine.status().memory_reserved,
        0,
        "memory left reserved after shutdown"
    );

    // filecoin-proofs (with the fixture's table in this process) accepts it; tampering fails.
    assert!(
        cuzk::porep::verify::verify_seal(&c1, spec.prover_id(), spec.sector_id, &out.proof)
            .unwrap()
    );
    let mut swapped = out.proof[192..].to_vec();
    swapped.extend_from_slice(&out.proof[..192]);
    assert_eq!(
        cuzk::porep::verify::verify_seal(&c1, spec.prover_id(), spec.sector_id, &swapped),
        Ok(false)
    );

    // Timeline of the good job: every partition's events, in order.
    let evs = events.lock().unwrap().clone();
    let times = common::assert_partition_order(&evs, good, 2);
    // Per-partition dispatch: partition 0 is being proved before partition 1's synthesis ends
    // (one synthesis worker, so they cannot have been synthesized together).
    assert!(times[0][4] < times[1][1]);
    let done: Vec<_> = evs
        .iter()
        .filter(|e| e.job == good && e.kind == EventKind::JobDone)
        .collect();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].partition, NO_PARTITION);
    assert!(evs
        .iter()
        .any(|e| e.job == bad && e.kind == EventKind::JobFailed));
}
