//! Faults a node meets over months of running, each under a watchdog: timeline callbacks that
//! call back into the engine, panics in callbacks and in provers, ids across engine restarts,
//! a cancelled job's memory, parameter files that are truncated or do not match their `.vk`.
//!
//! Most tests prove with a stub backend (well-formed proofs that prove nothing, self-check
//! off): what they check is the engine's behaviour, not the proofs.

mod common;

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex, OnceLock, Weak,
    },
    time::Duration,
};

use blstrs::{Bls12, G1Affine};
use common::{wait_until, within, Gate, Stub};
use cuzk::{
    engine::{Config, Engine, JobRequest, SynthesisMode},
    params::{BasesPiece, G1Kind},
    porep::FixtureShape,
    timeline::{Event, EventKind},
    Status,
};

fn stub_engine(stub: Stub) -> Arc<Engine> {
    Arc::new(
        Engine::start_with_backends(
            Config {
                params_dir: common::params_dir(),
                self_check: false,
                synthesis_workers: 2,
                // Engine behaviour, not the synthesis path (tests/pce.rs has that).
                synthesis: Some(SynthesisMode::Full),
                ..Config::default()
            },
            vec![Box::new(stub)],
        )
        .unwrap(),
    )
}

fn real_2kib() -> (JobRequest, cuzk::porep::FixtureShape) {
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    (
        JobRequest {
            c1,
            sector_id: spec.sector_id,
            prover_id: spec.prover_id(),
            priority: 0,
            fixture: FixtureShape::default(),
        },
        FixtureShape::default(),
    )
}

/// A sink that can reach its engine and its own handle (set after registration).
type Me = Arc<OnceLock<(Weak<Engine>, u64)>>;

#[test]
fn a_callback_that_unregisters_itself_returns_and_is_never_called_again() {
    let (req, _) = real_2kib();
    let e = stub_engine(Stub::default());
    let me: Me = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let (m, c) = (me.clone(), calls.clone());
    let id = e.add_timeline_sink(Arc::new(move |_ev: &Event| {
        c.fetch_add(1, Ordering::SeqCst);
        // The natural pattern: stop listening from inside the callback.
        if let Some((w, id)) = m.get() {
            if let Some(e) = w.upgrade() {
                e.remove_timeline_sink(*id);
            }
        }
    }));
    me.set((Arc::downgrade(&e), id)).unwrap();
    let e2 = e.clone();
    within(
        120,
        "submit + cancel with a self-unregistering callback",
        move || {
            let job = e2.submit(req).unwrap();
            e2.cancel(job).unwrap();
            assert_eq!(
                e2.await_job(job, common::JOB_DEADLINE).unwrap_err().status,
                Status::Cancelled
            );
            // Events of another job must not reach it.
            let job = e2.submit(real_2kib().0).unwrap();
            e2.cancel(job).unwrap();
            e2.shutdown().unwrap();
        },
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "called after it unregistered"
    );
}

#[test]
fn a_callback_may_register_sinks_and_cancel_jobs() {
    let (req, _) = real_2kib();
    let e = stub_engine(Stub::default());
    let me: Me = Arc::default();
    let late = Arc::new(Mutex::new(Vec::<EventKind>::new()));
    let registered = Arc::new(AtomicBool::new(false));
    let (m, l, r) = (me.clone(), late.clone(), registered.clone());
    e.add_timeline_sink(Arc::new(move |ev: &Event| {
        if ev.kind != EventKind::JobQueued {
            return;
        }
        let Some(e) = m.get().and_then(|(w, _)| w.upgrade()) else {
            return;
        };
        if !r.swap(true, Ordering::SeqCst) {
            let l = l.clone();
            e.add_timeline_sink(Arc::new(move |ev: &Event| l.lock().unwrap().push(ev.kind)));
        }
        e.cancel(ev.job).unwrap();
    }));
    me.set((Arc::downgrade(&e), 0)).unwrap();
    let e2 = e.clone();
    within(
        120,
        "a callback registering a sink and cancelling its job",
        move || {
            let job = e2.submit(req).unwrap();
            assert_eq!(
                e2.await_job(job, common::JOB_DEADLINE).unwrap_err().status,
                Status::Cancelled
            );
            e2.shutdown().unwrap();
        },
    );
    assert!(registered.load(Ordering::SeqCst));
    assert!(
        late.lock().unwrap().contains(&EventKind::JobCancelled),
        "the sink registered from a callback saw {:?}",
        late.lock().unwrap()
    );
}

#[test]
fn a_panicking_callback_does_not_stop_the_engine() {
    let (req, _) = real_2kib();
    let e = stub_engine(Stub::default());
    let panics = Arc::new(AtomicUsize::new(0));
    let p = panics.clone();
    e.add_timeline_sink(Arc::new(move |ev: &Event| {
        if ev.kind == EventKind::SynthStart {
            p.fetch_add(1, Ordering::SeqCst);
            panic!("injected callback panic");
        }
    }));
    let e2 = e.clone();
    within(300, "two jobs with a panicking callback", move || {
        for _ in 0..2 {
            let out = e2.prove(req.clone()).unwrap();
            assert_eq!(out.proof.len(), cuzk::PROOF_BYTES);
        }
        e2.shutdown().unwrap();
    });
    assert_eq!(panics.load(Ordering::SeqCst), 2);
}

#[test]
fn a_panicking_prover_fails_its_job_with_panic_and_the_engine_keeps_proving() {
    let (req, _) = real_2kib();
    let e = stub_engine(Stub {
        panics: AtomicUsize::new(1),
        ..Stub::default()
    });
    let e2 = e.clone();
    within(
        300,
        "a job on a panicking prover, then another",
        move || {
            let err = e2.prove(req.clone()).unwrap_err();
            assert_eq!(err.status, Status::Panic, "{err}");
            assert!(err.message.contains("injected prover panic"), "{err}");
            assert!(e2.prove(req).is_ok());
            let st = e2.status();
            assert_eq!((st.completed, st.failed), (1, 1));
            e2.shutdown().unwrap();
        },
    );
}

#[test]
fn job_ids_and_sink_handles_are_never_reused_after_a_restart() {
    let (req, _) = real_2kib();
    let a = stub_engine(Stub::default());
    let job_a = a.submit(req.clone()).unwrap();
    a.cancel(job_a).unwrap();
    let sink_a = a.add_timeline_sink(Arc::new(|_: &Event| {}));
    a.shutdown().unwrap();
    drop(a);

    let b = stub_engine(Stub::default());
    let seen = Arc::new(AtomicU64::new(0));
    let s = seen.clone();
    let sink_b = b.add_timeline_sink(Arc::new(move |_: &Event| {
        s.fetch_add(1, Ordering::SeqCst);
    }));
    assert_ne!(sink_a, sink_b, "a sink handle was given out twice");
    // A stale handle from the old engine removes nothing.
    assert!(!b.remove_timeline_sink(sink_a));
    let job_b = b.submit(req).unwrap();
    assert_ne!(job_a, job_b, "a job id was given out twice");
    // The old id is unknown to the new engine.
    assert_eq!(
        b.await_job(job_a, Some(Duration::ZERO)).unwrap_err().status,
        Status::NotFound
    );
    b.cancel(job_b).unwrap();
    b.shutdown().unwrap();
    assert!(
        seen.load(Ordering::SeqCst) >= 2,
        "the new engine's sink was removed"
    );
}

#[test]
fn a_cancelled_job_gives_its_memory_back_at_once() {
    let (req, _) = real_2kib();
    let gate = Arc::new(Gate::default());
    let e = stub_engine(Stub {
        gate: Some(gate.clone()),
        ..Stub::default()
    });
    let e2 = e.clone();
    let g2 = gate.clone();
    within(
        300,
        "cancel of a synthesized job while the prover is busy",
        move || {
            // Whatever happens, the prover is let go (the engine's drop waits for it).
            let _opens = common::Opens(g2.clone());
            // Job A holds the prover (at the gate); job B is synthesized and waits for it.
            let a = e2.submit(req.clone()).unwrap();
            wait_until(120, "job A on the prover", || e2.status().proving == 1);
            let b = e2.submit(req).unwrap();
            wait_until(120, "job B synthesized", || e2.status().prover_queue == 1);
            let before = e2.status().memory_reserved;
            let per_partition = e2.status().memory_reserved / 2;
            e2.cancel(b).unwrap();
            let after = e2.status().memory_reserved;
            assert!(
                after <= before - per_partition,
                "cancel kept B's memory: {before} -> {after} bytes"
            );
            assert_eq!(e2.status().prover_queue, 0);
            g2.open();
            assert!(e2.await_job(a, common::JOB_DEADLINE).is_ok());
            e2.shutdown().unwrap();
        },
    );
}

/// The 2KiB circuit's parameter id and its files.
fn params_2kib() -> (String, std::path::PathBuf, std::path::PathBuf) {
    let (_, rep, _) = common::fixture(FixtureShape::default());
    let dir = common::params_dir();
    (
        rep.params_id.clone(),
        cuzk::params::params_path(&dir, &rep.params_id),
        cuzk::params::vk_path(&dir, &rep.params_id),
    )
}

#[test]
fn a_vk_that_does_not_match_the_params_is_a_params_error() {
    use bellperson::groth16::VerifyingKey;
    let (req, _) = real_2kib();
    let (_, params, vk) = params_2kib();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&params, dir.path().join(params.file_name().unwrap())).unwrap();
    // gamma and delta swapped, as in a mixed-up download.
    let mut key = VerifyingKey::<Bls12>::read(std::fs::File::open(&vk).unwrap()).unwrap();
    std::mem::swap(&mut key.gamma_g2, &mut key.delta_g2);
    let mut bytes = Vec::new();
    key.write(&mut bytes).unwrap();
    std::fs::write(dir.path().join(vk.file_name().unwrap()), bytes).unwrap();
    let e = Engine::start_with_backends(
        Config {
            params_dir: dir.path().to_path_buf(),
            ..Config::default()
        },
        vec![Box::new(Stub::default())],
    )
    .unwrap();
    let err = e.preload(&req).unwrap_err();
    assert_eq!(err.status, Status::Params, "{err}");
    assert!(err.message.contains(".vk"), "{err}");
    // A job fails the same way, before any proving.
    let err = e.prove(req).unwrap_err();
    assert_eq!(err.status, Status::Params, "{err}");
    e.shutdown().unwrap();
}

/// Byte offsets of the section boundaries of a `.params` file: after the verifying key, after
/// each of the five point vectors' lengths and points.
fn section_ends(path: &std::path::Path) -> Vec<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).unwrap();
    let mut ends = Vec::new();
    // vk: alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, then ic (u32 + G1s).
    let mut pos = 96 * 3 + 192 * 3;
    f.seek(SeekFrom::Start(pos)).unwrap();
    let mut n = [0u8; 4];
    f.read_exact(&mut n).unwrap();
    pos += 4 + 96 * u32::from_be_bytes(n) as u64;
    ends.push(pos);
    for point in [96u64, 96, 96, 96, 192] {
        f.seek(SeekFrom::Start(pos)).unwrap();
        f.read_exact(&mut n).unwrap();
        ends.push(pos + 4);
        pos += 4 + point * u32::from_be_bytes(n) as u64;
        ends.push(pos);
    }
    assert_eq!(
        pos,
        f.metadata().unwrap().len(),
        "section walk must end at the file's end"
    );
    ends
}

/// A small circuit's parameter set in a directory of its own (a few MB: the format is the
/// same as a sector's, whose 2KiB set is 1.1 GB; the tests that copy and cut a set use this
/// one, so that they hold no gigabytes of a shared disk).
fn small_set() -> (
    tempfile::TempDir,
    String,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let src = tempfile::tempdir().unwrap();
    let id = "cuzk-small-set".to_string();
    small_params(src.path(), &id);
    let (params, vk) = (
        cuzk::params::params_path(src.path(), &id),
        cuzk::params::vk_path(src.path(), &id),
    );
    (src, id, params, vk)
}

#[test]
fn a_truncated_params_file_is_a_params_error_at_every_section_boundary() {
    let (_src, id, params, vk) = small_set();
    let len = std::fs::metadata(&params).unwrap().len();
    let ends = section_ends(&params);
    let budget = cuzk::budget::Budget::new(u64::MAX / 2);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&vk, dir.path().join(vk.file_name().unwrap())).unwrap();
    let target = dir.path().join(params.file_name().unwrap());
    // Every boundary, one byte either side, the middle of the largest section, and 99%.
    let mut cuts: Vec<u64> = ends[..ends.len() - 1]
        .iter()
        .flat_map(|&e| [e - 1, e, e + 1])
        .chain([len / 2, len / 100 * 99, len - 1, 100])
        .filter(|&c| c < len)
        .collect();
    cuts.sort();
    cuts.dedup();
    // One copy, cut down from the end: each cut is a truncation of the previous file.
    std::fs::copy(&params, &target).unwrap();
    for &cut in cuts.iter().rev() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let cache = cuzk::params::SrsCache::new(dir.path().to_path_buf());
        let err = match cache.get(&id, &budget) {
            Ok(_) => panic!("a .params file cut at {cut} of {len} bytes was accepted"),
            Err(e) => e,
        };
        assert_eq!(err.status, Status::Params, "cut at {cut}: {err}");
    }
    // A file longer than its sections say is refused too.
    std::fs::copy(&params, &target).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&target)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &[0u8; 7]))
        .unwrap();
    let err = cuzk::params::SrsCache::new(dir.path().to_path_buf())
        .get(&id, &budget)
        .err()
        .expect("a .params file with trailing bytes was accepted");
    assert_eq!(err.status, Status::Params, "{err}");
}

fn engine_with(stub: Stub, cfg: Config) -> Arc<Engine> {
    Arc::new(
        Engine::start_with_backends(
            Config {
                params_dir: common::params_dir(),
                self_check: false,
                synthesis_workers: 2,
                // Engine behaviour, not the synthesis path (tests/pce.rs has that).
                synthesis: Some(SynthesisMode::Full),
                ..cfg
            },
            vec![Box::new(stub)],
        )
        .unwrap(),
    )
}

#[test]
fn ten_thousand_cancelled_jobs_nobody_awaits_drain() {
    let (req, _) = real_2kib();
    let e = engine_with(
        Stub::default(),
        Config {
            job_retention: Duration::from_millis(50),
            ..Config::default()
        },
    );
    let e2 = e.clone();
    within(900, "10,000 submit + cancel", move || {
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..5_000 {
                        let id = e2.submit(req.clone()).unwrap();
                        e2.cancel(id).unwrap();
                    }
                });
            }
        });
        common::wait_until(60, "the job table to drain", || {
            let st = e2.status();
            st.jobs_in_flight == 0 && st.jobs_retained == 0 && st.memory_reserved == 0
        });
        let st = e2.status();
        assert_eq!(st.cancelled, 10_000);
        assert_eq!((st.synthesis_queue, st.prover_queue), (0, 0));
        e2.shutdown().unwrap();
    });
}

#[test]
fn queued_jobs_and_c1_size_are_bounded_with_clear_errors() {
    let (req, _) = real_2kib();
    let gate = Arc::new(Gate::default());
    let e = engine_with(
        Stub {
            gate: Some(gate.clone()),
            ..Stub::default()
        },
        Config {
            max_jobs: 2,
            max_c1_bytes: req.c1.len() - 1,
            ..Config::default()
        },
    );
    let err = e.submit(req.clone()).unwrap_err();
    assert_eq!(err.status, Status::InvalidInput, "{err}");
    assert!(err.message.contains("max_c1_bytes"), "{err}");
    drop(e);
    let e = engine_with(
        Stub {
            gate: Some(gate.clone()),
            ..Stub::default()
        },
        Config {
            max_jobs: 2,
            ..Config::default()
        },
    );
    let e2 = e.clone();
    within(300, "jobs beyond max_jobs", move || {
        let a = e2.submit(req.clone()).unwrap();
        let b = e2.submit(req.clone()).unwrap();
        let err = e2.submit(req.clone()).unwrap_err();
        assert_eq!(err.status, Status::ResourceExhausted, "{err}");
        assert!(err.message.contains("max_jobs"), "{err}");
        // A finished job makes room.
        e2.cancel(b).unwrap();
        let c = e2.submit(req).unwrap();
        gate.open();
        assert!(e2.await_job(a, common::JOB_DEADLINE).is_ok());
        assert!(e2.await_job(c, common::JOB_DEADLINE).is_ok());
        e2.shutdown().unwrap();
    });
}

#[test]
fn shutdown_with_work_in_every_stage_returns_every_waiter_and_all_memory() {
    let (req, _) = real_2kib();
    let gate = Arc::new(Gate::default());
    let e = engine_with(
        Stub {
            gate: Some(gate.clone()),
            ..Stub::default()
        },
        Config {
            synthesis_workers: 1,
            synthesis_lookahead: 1,
            ..Config::default()
        },
    );
    let e2 = e.clone();
    within(300, "shutdown with work everywhere", move || {
        let _opens = common::Opens(gate.clone());
        // A on the prover, B synthesized and waiting, three more queued.
        let a = e2.submit(req.clone()).unwrap();
        wait_until(120, "A on the prover", || e2.status().proving == 1);
        let b = e2.submit(req.clone()).unwrap();
        wait_until(120, "B synthesized", || e2.status().prover_queue == 1);
        let rest: Vec<u64> = (0..3).map(|_| e2.submit(req.clone()).unwrap()).collect();
        let ids: Vec<u64> = [a, b].into_iter().chain(rest).collect();
        let waiters: Vec<_> = ids
            .iter()
            .map(|&id| {
                let e = e2.clone();
                std::thread::spawn(move || e.await_job(id, common::JOB_DEADLINE))
            })
            .collect();
        let e3 = e2.clone();
        let shutdown = std::thread::spawn(move || e3.shutdown());
        wait_until(60, "shutdown to begin", || !e2.is_running());
        // Every waiter returns even while A's call is still running.
        for w in waiters {
            let err = w.join().unwrap().unwrap_err();
            assert_eq!(err.status, Status::NotRunning, "{err}");
        }
        gate.open();
        shutdown.join().unwrap().unwrap();
        let st = e2.status();
        assert!(!st.running);
        assert_eq!(st.memory_reserved, 0, "memory left reserved after shutdown");
        assert_eq!(e2.submit(req).unwrap_err().status, Status::NotRunning);
        // A second shutdown returns at once.
        e2.shutdown().unwrap();
    });
}

#[test]
fn a_failed_parameter_check_is_remembered_until_the_file_changes() {
    let (_src, id, params, vk) = small_set();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join(params.file_name().unwrap());
    std::fs::copy(&vk, dir.path().join(vk.file_name().unwrap())).unwrap();
    std::fs::copy(&params, &target).unwrap();
    let len = std::fs::metadata(&target).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&target)
        .unwrap()
        .set_len(len - 96)
        .unwrap();
    let budget = cuzk::budget::Budget::new(u64::MAX / 2);
    let cache = cuzk::params::SrsCache::new(dir.path().to_path_buf());
    for _ in 0..3 {
        assert_eq!(
            cache.get(&id, &budget).err().unwrap().status,
            Status::Params
        );
    }
    assert_eq!(
        cache.checks(),
        1,
        "a failed check must not be repeated for every job"
    );
    // Fetched again: checked again, and accepted.
    std::fs::copy(&params, &target).unwrap();
    let srs = cache.get(&id, &budget).unwrap();
    assert_eq!(cache.checks(), 2);
    assert_eq!(srs.size.inputs, srs.vk.ic.len());
}

#[test]
fn setup_never_overwrites_a_verifying_key_or_makes_production_parameters() {
    use common::tools::fixture;
    let dir = tempfile::tempdir().unwrap();
    let proof = fixture::v1_1_proof(2048).unwrap();
    let id = cuzk::porep::params_id_for(proof, FixtureShape::default()).unwrap();
    let vk = cuzk::params::vk_path(dir.path(), &id);
    std::fs::write(&vk, b"a verifying key someone put here").unwrap();
    let err = fixture::ensure_params(proof, FixtureShape::default(), dir.path(), 1).unwrap_err();
    assert_eq!(err.status, Status::Params, "{err}");
    assert!(err.message.contains("refusing"), "{err}");
    assert_eq!(
        std::fs::read(&vk).unwrap(),
        b"a verifying key someone put here"
    );
    let err = fixture::ensure_params(
        fixture::v1_1_proof(32 << 30).unwrap(),
        FixtureShape::default(),
        dir.path(),
        1,
    )
    .unwrap_err();
    assert_eq!(err.status, Status::Unsupported, "{err}");
}

/// A small circuit's parameters written into `dir` as `<id>.params` and `<id>.vk`.
fn small_params(dir: &std::path::Path, id: &str) -> bellperson::groth16::Parameters<Bls12> {
    use rand::SeedableRng;
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(5);
    let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
        common::tools::selftest::Synthetic {
            seed: None,
            rounds: 300,
        },
        &mut rng,
    )
    .unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    std::fs::write(cuzk::params::params_path(dir, id), bytes).unwrap();
    let mut vk = Vec::new();
    params.vk.write(&mut vk).unwrap();
    std::fs::write(cuzk::params::vk_path(dir, id), vk).unwrap();
    params
}

#[test]
fn the_gpu_prover_reads_the_same_bases_as_bellperson_and_refuses_damaged_points() {
    let dir = tempfile::tempdir().unwrap();
    let params = small_params(dir.path(), "bases");
    let budget = cuzk::budget::Budget::new(1 << 34);
    let srs = cuzk::params::SrsCache::new(dir.path().to_path_buf())
        .get("bases", &budget)
        .unwrap();
    let b = srs.read_bases().unwrap();
    assert_eq!(b.h, *params.h);
    assert_eq!(b.l, *params.l);
    assert_eq!(b.a, *params.a);
    assert_eq!(b.b_g1, *params.b_g1);
    assert_eq!(b.b_g2, *params.b_g2);
    // Piece by piece (as the GPU prover fills resident bases): the same points, in pieces of
    // at most the size asked for, each kind in order from its first point.
    let layout = srs.bases_layout().unwrap();
    for per in [1, 7, 1000] {
        let mut got: [Vec<G1Affine>; 4] = Default::default();
        let mut got_b2 = Vec::new();
        srs.read_bases_in(&layout, per, |piece| {
            let (first, n, have) = match piece {
                BasesPiece::G1 {
                    kind,
                    first,
                    points,
                } => {
                    let v = &mut got[kind as usize];
                    let have = v.len();
                    v.extend_from_slice(points);
                    (first, points.len(), have)
                }
                BasesPiece::BG2 { first, points } => {
                    let have = got_b2.len();
                    got_b2.extend_from_slice(points);
                    (first, points.len(), have)
                }
            };
            assert_eq!(first, have, "a piece out of order (pieces of {per})");
            assert!(
                n >= 1 && n <= per,
                "a piece of {n} points (pieces of {per})"
            );
            Ok(())
        })
        .unwrap();
        assert_eq!(got, [b.h.clone(), b.l.clone(), b.a.clone(), b.b_g1.clone()]);
        assert_eq!(got_b2, b.b_g2);
    }
    // An error of the receiver ends the read with it.
    let mut pieces = 0;
    let err = srs
        .read_bases_in(&layout, 7, |_| {
            pieces += 1;
            Err(cuzk::Error::internal("the receiver gives up"))
        })
        .unwrap_err();
    assert_eq!((pieces, err.status), (1, Status::Internal), "{err}");

    // One l point's x set past the field modulus: not a point. The file keeps its length, so
    // only the points' own check catches it.
    let path = cuzk::params::params_path(dir.path(), "bases");
    let mut bytes = std::fs::read(&path).unwrap();
    let ends = section_ends(&path);
    // ends: vk, then (after length, after points) for h, l, a, b_g1, b_g2.
    let l_start = ends[3] as usize;
    bytes[l_start + 96 * 7 + 1..l_start + 96 * 7 + 48].fill(0xff);
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(cuzk::params::params_path(bad.path(), "bases"), &bytes).unwrap();
    std::fs::copy(
        cuzk::params::vk_path(dir.path(), "bases"),
        cuzk::params::vk_path(bad.path(), "bases"),
    )
    .unwrap();
    let srs = cuzk::params::SrsCache::new(bad.path().to_path_buf())
        .get("bases", &budget)
        .unwrap();
    let err = srs
        .read_bases()
        .err()
        .expect("a damaged point must fail the read");
    assert_eq!(err.status, Status::Params, "{err}");
    assert!(err.message.contains("l query's point 7"), "{err}");
    // Piece by piece: the same error, and the piece holding the damaged point never reaches
    // the receiver (pieces of 5: l's points 5-9).
    let layout = srs.bases_layout().unwrap();
    let mut l_pieces = Vec::new();
    let err = srs
        .read_bases_in(&layout, 5, |piece| {
            if let BasesPiece::G1 {
                kind: G1Kind::L,
                first,
                ..
            } = piece
            {
                l_pieces.push(first);
            }
            Ok(())
        })
        .expect_err("a damaged point must fail the read");
    assert_eq!(err.status, Status::Params, "{err}");
    assert!(err.message.contains("l query's point 7"), "{err}");
    assert_eq!(l_pieces, vec![0], "pieces of l handed on: {l_pieces:?}");
}
