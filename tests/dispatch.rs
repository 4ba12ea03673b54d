//! The prover dispatcher with several devices, on the CPU: two simulated devices
//! (`common::sim`, each proving with the CPU prover) whose devices can fail by injection. A failed
//! partition is proved again on the CPU and its job still verifies; a device taken out of
//! service mid-run gets no more partitions, which go to the other device. (Three devices:
//! tests/multi_gpu.rs.)

mod common;

use std::sync::{atomic::Ordering, Arc, Mutex};

use common::sim::{Answer, HostParams, SimGpus, SimState};
use cuzk::{
    engine::{Config, Engine, JobRequest},
    timeline::EventKind,
    FixtureShape, Status,
};

#[test]
fn failed_device_partitions_finish_elsewhere_and_verify() {
    let shape = FixtureShape {
        partitions: 2,
        layers: 0,
    };
    let (spec, _, c1) = common::fixture(shape);
    let sim = Arc::new(SimState::cpu(2));
    // The first partition given to device 0 fails.
    sim.fail_next[0].store(1, Ordering::SeqCst);
    let engine = Engine::start_with_backends(
        Config {
            params_dir: common::params_dir(),
            synthesis_workers: 2,
            ..Config::default()
        },
        vec![Box::new(SimGpus(sim.clone()))],
    )
    .unwrap();
    assert_eq!(engine.status().devices.len(), 2);
    let req = JobRequest {
        c1: c1.clone(),
        sector_id: spec.sector_id,
        prover_id: spec.prover_id(),
        priority: 0,
        fixture: shape,
    };

    // Job 1: one partition fails on device 0 and is proved again on the CPU.
    let out = engine.prove(req.clone()).unwrap();
    assert!(out.verified);
    assert_eq!(out.proof.len(), 2 * cuzk::PROOF_BYTES);
    assert!(
        cuzk::porep::verify::verify_seal(&c1, spec.prover_id(), spec.sector_id, &out.proof)
            .unwrap()
    );
    let log = sim.placed();
    assert_eq!(log.iter().filter(|(_, ok)| !ok).count(), 1, "{log:?}");
    assert_eq!(log[0], (0, false), "{log:?}");
    let st = engine.status();
    assert_eq!(st.cpu_retries, 1);
    assert!(st
        .prometheus()
        .contains("cuzk_partitions_cpu_retried_total 1"));
    assert!(
        st.devices
            .iter()
            .map(|d| d.consecutive_failures)
            .sum::<u32>()
            <= 1,
        "{:?}",
        st.devices
    );

    // Device 0 out of service mid-run: job 2 goes to device 1 only.
    engine.set_device_enabled(0, false).unwrap();
    assert!(!engine.status().devices[0].enabled);
    sim.log.lock().unwrap().clear();
    let out = engine.prove(req.clone()).unwrap();
    assert!(out.verified);
    assert!(
        out.partitions.iter().all(|p| p.device == 1),
        "{:?}",
        out.partitions
    );
    assert!(
        cuzk::porep::verify::verify_seal(&c1, spec.prover_id(), spec.sector_id, &out.proof)
            .unwrap()
    );
    assert!(sim.placed().iter().all(|&(d, ok)| d == 1 && ok));

    // Bad device index: a clear error.
    assert_eq!(
        engine.set_device_enabled(7, false).unwrap_err().status,
        Status::InvalidArgument
    );
    engine.shutdown().unwrap();
}

/// The fixture's parameter file size and one partition's reservation (what the engine computes
/// from the parameters for full synthesis on a GPU).
fn sizes(rep: &common::tools::fixture::SetupReport) -> (u64, u64) {
    let (file, part, _) = sizes_and_cpu(rep);
    (file, part)
}

/// [`sizes`] and what a partition proved on the CPU holds.
fn sizes_and_cpu(rep: &common::tools::fixture::SetupReport) -> (u64, u64, u64) {
    use cuzk::params::HostPath;
    let file = std::fs::metadata(&rep.params_path).unwrap().len();
    let size = cuzk::params::check_file(&rep.params_path).unwrap().size();
    let part = size.host_bytes(HostPath::Assignment {
        rows: size.domain(),
    });
    (file, part, size.host_bytes(HostPath::Cpu))
}

/// An engine proving on `sim` (a stub standing in for the CPU's retries) with `cfg`'s settings,
/// no self-check and exact budget arithmetic: full synthesis, no recording held beside the
/// partitions.
fn sim_engine(sim: &Arc<SimState>, cfg: Config) -> Arc<Engine> {
    Arc::new(
        Engine::start_with_fallback(
            Config {
                params_dir: common::params_dir(),
                self_check: false,
                synthesis: Some(cuzk::engine::SynthesisMode::Full),
                ..cfg
            },
            vec![Box::new(SimGpus(sim.clone()))],
            Box::new(common::Stub::default()),
        )
        .unwrap(),
    )
}

fn request(
    spec: &common::tools::fixture::FixtureSpec,
    c1: &[u8],
    shape: FixtureShape,
) -> JobRequest {
    JobRequest {
        c1: c1.to_vec(),
        sector_id: spec.sector_id,
        prover_id: spec.prover_id(),
        priority: 0,
        fixture: shape,
    }
}

/// An engine on one simulated GPU that answers `script` (then dummy proofs, the self-check
/// off), reading the parameters for a moment only (as for resident parameters).
fn one_sim_gpu(script: Vec<Answer>) -> Arc<Engine> {
    one_sim_gpu_with(SimState::dummy(1, script), Config::default()).0
}

/// The same on `state` (its parameters read for a moment only), with `cfg`'s settings; the
/// state's handle with it. The CPU's retries are real proofs.
fn one_sim_gpu_with(state: SimState, cfg: Config) -> (Arc<Engine>, Arc<SimState>) {
    sim_gpu_then(state, cfg, Box::new(cuzk::prover::cpu::CpuProver))
}

/// [`one_sim_gpu_with`] with a stub for the CPU's retries (dummy proofs at once), for the tests
/// whose claim is where a partition goes, not the CPU's proof (a real one takes about a minute
/// on two cores; the CPU's retries are proved for real in the other tests and tests/pce.rs).
fn one_sim_gpu_stub_cpu(state: SimState, cfg: Config) -> (Arc<Engine>, Arc<SimState>) {
    sim_gpu_then(state, cfg, Box::new(common::Stub::default()))
}

fn sim_gpu_then(
    mut state: SimState,
    cfg: Config,
    cpu: Box<dyn cuzk::prover::ProverBackend>,
) -> (Arc<Engine>, Arc<SimState>) {
    state.params = HostParams::Passing;
    let sim = Arc::new(state);
    let e = Engine::start_with_fallback(
        Config {
            params_dir: common::params_dir(),
            self_check: false,
            synthesis_workers: 2,
            ..cfg
        },
        vec![Box::new(SimGpus(sim.clone()))],
        cpu,
    )
    .unwrap();
    (Arc::new(e), sim)
}

/// A GPU call that never returns (a hung kernel, a wedged driver) would stall its prover
/// worker, every job behind it, and shutdown. The watchdog gives it up past its deadline: the
/// GPU goes out of service (hung) and the partition is synthesized again and proved on the
/// CPU; once the call returns the GPU is probed and put back; a shutdown with a call hung
/// returns.
#[test]
fn a_hung_gpu_call_is_given_up_its_partitions_go_elsewhere_and_shutdown_returns() {
    use cuzk::engine::OutOfService;
    use std::time::{Duration, Instant};
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    // Calls 1 and 3 pass; call 2 hangs until the test opens its gate; call 4 hangs.
    let state = SimState::dummy(1, Vec::new()).gated(4);
    let gates = state.gates.clone();
    gates[0].open();
    gates[2].open();
    let (e, sim) = one_sim_gpu_stub_cpu(
        state,
        Config {
            gpu_call_timeout: Some(Duration::from_secs(2)),
            device_cooldown: Duration::from_millis(200),
            ..Config::default()
        },
    );
    let req = move || request(&spec, &c1, FixtureShape::default());
    common::within(600, "a hung GPU call", move || {
        let out = e.prove(req()).unwrap();
        assert!(!out.partitions[0].cpu_retry, "{:?}", out.partitions);

        // Call 2 hangs: given up after ~2 s, the partition proved on the CPU.
        let t = Instant::now();
        let out = e.prove(req()).unwrap();
        assert!(out.partitions[0].cpu_retry, "{:?}", out.partitions);
        assert!(t.elapsed() >= Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(sim.calls.lock().unwrap().len(), 2);
        let dv = e.status().devices[0].clone();
        assert_eq!(
            (
                dv.enabled,
                dv.out_of_service,
                dv.hung_calls,
                dv.failed_calls
            ),
            (false, Some(OutOfService::Hung), 1, 0),
            "{dv:?}"
        );
        // Out while its call runs: no probe is due.
        assert_eq!(dv.probe_in_ms, None, "{dv:?}");
        assert!(e
            .status()
            .prometheus()
            .contains("cuzk_device_hung_calls_total{device=\"0\",name=\"sim:0\"} 1"));

        // The call returns: the GPU is probed after the cool-down and proves again.
        gates[1].open();
        common::wait_until(60, "the hung call returned", || {
            e.status().devices[0].out_of_service == Some(OutOfService::Faults)
        });
        common::wait_until(60, "the probe due", || {
            e.status().devices[0].probe_in_ms == Some(0)
        });
        let out = e.prove(req()).unwrap();
        assert!(!out.partitions[0].cpu_retry, "{:?}", out.partitions);
        let dv = e.status().devices[0].clone();
        assert_eq!((dv.enabled, dv.readmissions), (true, 1), "{dv:?}");

        // Call 4 hangs and the engine shuts down meanwhile: shutdown returns by the deadline.
        let job = e.submit(req()).unwrap();
        common::wait_until(60, "call 4 started", || {
            sim.calls.lock().unwrap().len() == 4
        });
        let t = Instant::now();
        e.shutdown().unwrap();
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
        assert_eq!(
            e.await_job(job, None).unwrap_err().status,
            Status::NotRunning
        );
        gates[3].open();
    });
}

/// A device stuck inside a call the watchdog gave up on is listed again by a later call given
/// up on (the backend reports it busy). It stays out until every call given up on that it is
/// inside has returned. The hazard: when the later call returns, the device is put up for a
/// probe and back in service while still stuck in the first.
#[test]
fn a_device_still_inside_a_call_given_up_on_stays_out_when_a_later_one_returns() {
    use cuzk::engine::OutOfService;
    use std::time::Duration;
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    // Two devices; call 1 (device 0) and call 2 (device 1, the only one left) hang.
    let state = SimState::dummy_on(2, Vec::new()).gated(2);
    let gates = state.gates.clone();
    let (e, _) = one_sim_gpu_stub_cpu(
        state,
        Config {
            gpu_call_timeout: Some(Duration::from_secs(2)),
            device_cooldown: Duration::from_secs(3600),
            ..Config::default()
        },
    );
    let req = request(&spec, &c1, FixtureShape::default());
    common::within(600, "a device inside two calls given up on", move || {
        let _opens: Vec<_> = gates.iter().map(|g| common::Opens(g.clone())).collect();
        let out = e.prove(req).unwrap();
        assert!(out.partitions[0].cpu_retry, "{:?}", out.partitions);
        let out_as = |d: usize| e.status().devices[d].out_of_service;
        assert_eq!(
            (out_as(0), out_as(1)),
            (Some(OutOfService::Hung), Some(OutOfService::Hung))
        );
        assert!(e.status().memory_stuck > 0, "{:?}", e.status());
        // Call 2 returns: device 1 is up for a probe; device 0, still inside call 1, stays out.
        gates[1].open();
        common::wait_until(60, "call 2 returned", || {
            out_as(1) == Some(OutOfService::Faults)
        });
        assert_eq!(
            out_as(0),
            Some(OutOfService::Hung),
            "re-listed while still stuck"
        );
        gates[0].open();
        common::wait_until(60, "call 1 returned", || {
            out_as(0) == Some(OutOfService::Faults)
        });
        common::wait_until(60, "the calls' memory back", || {
            e.status().memory_stuck == 0
        });
    });
}

/// The probe that decides whether a device out for faults comes back runs on the backend's
/// prover worker, under the watchdog. The hazard: unwatched, a probe that does not return (a
/// wedged device) stalls every later job of the backend. Given up, the device stays out
/// (hung), the worker proves on the other device, and once the probe returns the device is
/// probed again.
#[test]
fn a_probe_that_does_not_return_is_given_up_and_the_worker_goes_on() {
    use cuzk::engine::OutOfService;
    use std::time::Duration;
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let state = SimState::dummy_on(2, Vec::new());
    // Device 0 (where a one-partition job goes) fails until it is out for faults.
    state.fail_next[0].store(cuzk::engine::DEVICE_FAILURE_LIMIT as u64, Ordering::SeqCst);
    let gate: Arc<common::Gate> = Arc::default();
    state.probe_gates.lock().unwrap().push(gate.clone());
    let (e, _) = one_sim_gpu_stub_cpu(
        state,
        Config {
            gpu_call_timeout: Some(Duration::from_secs(2)),
            device_cooldown: Duration::from_millis(100),
            ..Config::default()
        },
    );
    let req = request(&spec, &c1, FixtureShape::default());
    common::within(600, "a probe that does not return", move || {
        let _opens = common::Opens(gate.clone());
        for _ in 0..cuzk::engine::DEVICE_FAILURE_LIMIT {
            assert!(e.prove(req.clone()).unwrap().partitions[0].cpu_retry);
        }
        let out_as = |d: usize| e.status().devices[d].out_of_service;
        assert_eq!(out_as(0), Some(OutOfService::Faults));
        std::thread::sleep(Duration::from_millis(200));
        // The next call probes device 0 first: the probe hangs, is given up, the job proves
        // on device 1.
        let id = e.submit(req.clone()).unwrap();
        let out = e.await_job(id, Some(Duration::from_secs(60))).unwrap();
        assert_eq!(
            (out.partitions[0].cpu_retry, out.partitions[0].device),
            (false, 1),
            "{:?}",
            out.partitions
        );
        assert_eq!(out_as(0), Some(OutOfService::Hung));
        assert_eq!(e.status().devices[0].hung_calls, 1);
        // The probe returns: device 0 is probed again after the cool-down, and comes back.
        gate.open();
        common::wait_until(60, "the probe returned", || {
            out_as(0) == Some(OutOfService::Faults)
        });
        std::thread::sleep(Duration::from_millis(200));
        e.prove(req.clone()).unwrap();
        common::wait_until(60, "device 0 back", || e.status().devices[0].enabled);
    });
}

/// A GPU's parameter placement (`prepare`) runs on a synthesis worker, under the watchdog.
/// The hazard: unwatched, a placement that does not return (a wedged device) stalls the job
/// for good. Given up, the device goes out (hung) and the job is proved on the CPU; once the
/// placement returns, the device is probed and comes back.
#[test]
fn a_placement_that_does_not_return_is_given_up_and_the_job_goes_on() {
    use cuzk::engine::OutOfService;
    use std::time::Duration;
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let state = SimState::dummy(1, Vec::new());
    let gate: Arc<common::Gate> = Arc::default();
    state.prepare_gates.lock().unwrap().push(gate.clone());
    let (e, _) = one_sim_gpu_stub_cpu(
        state,
        Config {
            gpu_call_timeout: Some(Duration::from_secs(2)),
            device_cooldown: Duration::from_millis(100),
            ..Config::default()
        },
    );
    let req = request(&spec, &c1, FixtureShape::default());
    common::within(300, "a placement that does not return", move || {
        let _opens = common::Opens(gate.clone());
        let out = e.prove(req.clone()).unwrap();
        assert!(out.partitions[0].cpu_retry, "{:?}", out.partitions);
        let out_as = |d: usize| e.status().devices[d].out_of_service;
        assert_eq!(out_as(0), Some(OutOfService::Hung));
        assert_eq!(e.status().devices[0].hung_calls, 1);
        // The placement returns: the device is probed after the cool-down, and comes back.
        gate.open();
        common::wait_until(60, "the placement returned", || {
            out_as(0) == Some(OutOfService::Faults)
        });
        std::thread::sleep(Duration::from_millis(200));
        e.prove(req.clone()).unwrap();
        common::wait_until(60, "device 0 back", || e.status().devices[0].enabled);
        let out = e.prove(req.clone()).unwrap();
        assert!(!out.partitions[0].cpu_retry, "{:?}", out.partitions);
    });
}

/// A GPU without room for a partition at that moment (another process holds its memory) keeps
/// the partition: it waits in the queue, the call is tried again with a growing pause, and it
/// is proved on the GPU once there is room; the GPU is not faulted, and the status and metrics
/// show the waits. The hazard: sent to the CPU at once, the partition takes minutes at 2^27,
/// where the room comes back in seconds.
#[test]
fn a_gpu_without_room_now_is_waited_for_and_proves_when_room_comes_back() {
    use std::time::{Duration, Instant};
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let (e, sim) = one_sim_gpu_stub_cpu(
        SimState::dummy(1, vec![Answer::NoRoom, Answer::NoRoom]),
        Config::default(),
    );
    common::within(600, "a GPU without room now", move || {
        let t = Instant::now();
        let job = e
            .submit(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        // While it waits, the status says so.
        common::wait_until(60, "the wait shown", || {
            e.status().devices[0].waiting_for_room_ms.is_some()
        });
        let out = e.await_job(job, common::JOB_DEADLINE).unwrap();
        assert!(!out.partitions[0].cpu_retry, "{:?}", out.partitions);
        // Two pauses: 1 s, then 2 s.
        assert!(t.elapsed() >= Duration::from_secs(3), "{:?}", t.elapsed());
        assert_eq!(sim.calls.lock().unwrap().len(), 3);
        let st = e.status();
        let dv = st.devices[0].clone();
        assert_eq!(
            (
                dv.no_room,
                dv.room_waits,
                dv.waiting_for_room_ms,
                dv.consecutive_failures,
                dv.enabled
            ),
            (2, 2, None, 0, true),
            "{dv:?}"
        );
        assert_eq!(st.cpu_retries, 0);
        assert!(st
            .prometheus()
            .contains("cuzk_device_room_waits_total{device=\"0\",name=\"sim:0\"} 2"));
    });
}

/// The wait for room is bounded (`gpu_room_wait`): past it the partition is proved on the
/// CPU, so a GPU that stays full does not hold the job forever; with a zero wait configured it
/// goes there at once.
#[test]
fn a_gpu_without_room_for_longer_than_the_wait_sends_its_partition_to_the_cpu() {
    use std::time::{Duration, Instant};
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    for (wait, at_least) in [(Duration::from_secs(2), 2), (Duration::ZERO, 0)] {
        let (e, _) = one_sim_gpu_stub_cpu(
            SimState::dummy(1, vec![Answer::NoRoom; 50]),
            Config {
                gpu_room_wait: Some(wait),
                ..Config::default()
            },
        );
        let req = request(&spec, &c1, FixtureShape::default());
        common::within(600, "a GPU without room for long", move || {
            let t = Instant::now();
            let out = e.prove(req).unwrap();
            assert!(out.partitions[0].cpu_retry, "{:?}", out.partitions);
            assert!(
                t.elapsed() >= Duration::from_secs(at_least),
                "{:?}",
                t.elapsed()
            );
            let dv = e.status().devices[0].clone();
            assert_eq!((dv.consecutive_failures, dv.enabled), (0, true), "{dv:?}");
            assert_eq!(dv.room_waits > 0, !wait.is_zero(), "{dv:?}");
        });
    }
}

/// A GPU that can never hold the circuit (a card too small for it) is passed over at once:
/// its partitions go to the CPU without a wait, counted (`passed_over`), and the GPU is not
/// faulted. The hazard: waiting for room that never comes, or faulting a healthy card.
#[test]
fn a_gpu_that_can_never_hold_the_circuit_is_passed_over_at_once() {
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let (e, _) = one_sim_gpu_stub_cpu(
        SimState::dummy(1, vec![Answer::Never; 2]),
        Config::default(),
    );
    common::within(600, "a GPU too small", move || {
        for n in 1..=2 {
            let out = e
                .prove(request(&spec, &c1, FixtureShape::default()))
                .unwrap();
            assert!(out.partitions[0].cpu_retry);
            let dv = e.status().devices[0].clone();
            assert_eq!(
                (
                    dv.passed_over,
                    dv.room_waits,
                    dv.consecutive_failures,
                    dv.enabled
                ),
                (n, 0, 0, true),
                "{dv:?}"
            );
        }
        assert!(e
            .status()
            .prometheus()
            .contains("cuzk_device_passed_over_total{device=\"0\",name=\"sim:0\"} 2"));
    });
}

/// A backend's `prepare` that fails for want of room (the GPU's memory held by another
/// process, the budget busy for a parameter read, a card too small) does not fail the job: the
/// job goes on and is proved once the GPU takes the parameters. Only a bad parameter file
/// fails it (PARAMS). The hazard: a passing shortage of room would fail a job that can
/// prove.
#[test]
fn a_prepare_without_room_does_not_fail_the_job_and_a_bad_file_does() {
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let state = SimState::dummy(1, Vec::new());
    *state.prepare_errors.lock().unwrap() = vec![Status::ResourceExhausted, Status::Unsupported];
    let (e, _) = one_sim_gpu_stub_cpu(state, Config::default());
    let req = request(&spec, &c1, FixtureShape::default());
    common::within(600, "a prepare without room", move || {
        // Job 1's prepare finds no room now, job 2's a card too small: both prove.
        for _ in 0..2 {
            let out = e.prove(req.clone()).unwrap();
            assert!(!out.partitions[0].cpu_retry, "{:?}", out.partitions);
        }
        e.shutdown().unwrap();
    });
    let state = SimState::dummy(1, Vec::new());
    *state.prepare_errors.lock().unwrap() = vec![Status::Params];
    let (e, _) = one_sim_gpu_stub_cpu(state, Config::default());
    let req = request(&spec, &c1, FixtureShape::default());
    common::within(600, "a prepare with a bad file", move || {
        let err = e.prove(req).unwrap_err();
        assert_eq!(err.status, Status::Params, "{err}");
    });
}

/// A CPU retry loads the parameters into host memory (47 GB at 32 GiB); they go back once no
/// retry is queued. The hazard: kept until shutdown, they hold that memory while only GPUs
/// prove.
#[test]
fn a_cpu_retrys_host_copy_goes_back_when_no_retry_is_left() {
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let e = one_sim_gpu(vec![Answer::Fault]);
    common::within(600, "a CPU retry's host copy", move || {
        let out = e
            .prove(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        assert!(out.partitions[0].cpu_retry, "{:?}", out.partitions);
        common::wait_until(60, "the host copy given back", || {
            e.status().resident_params.is_empty()
        });
        // The next job proves on the GPU and loads nothing into host memory.
        let out = e
            .prove(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        assert!(!out.partitions[0].cpu_retry);
        assert!(e.status().resident_params.is_empty());
    });
}

#[test]
fn a_failed_batch_is_one_fault_and_the_gpu_goes_on_while_the_cpu_retries() {
    let p2 = FixtureShape {
        partitions: 2,
        layers: 0,
    };
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let (spec2, _, c1_p2) = common::fixture(p2);
    let sim = Arc::new(SimState::dummy(2, vec![Answer::Dummy, Answer::Fault]).gated(1));
    let gate = sim.gates[0].clone();
    let engine = Arc::new(
        Engine::start_with_backends(
            Config {
                params_dir: common::params_dir(),
                synthesis_workers: 2,
                synthesis_lookahead: 4,
                // W's and B's dummy proofs are not checked (a wrong proof is proved again on
                // the CPU and faults the GPU: tests/pce.rs); A's CPU proofs are, below.
                self_check: false,
                ..Config::default()
            },
            vec![Box::new(SimGpus(sim.clone()))],
        )
        .unwrap(),
    );
    let events: Arc<Mutex<Vec<cuzk::timeline::Event>>> = Arc::default();
    let ev = events.clone();
    engine.add_timeline_sink(Arc::new(move |e| ev.lock().unwrap().push(e.clone())));
    let e = engine.clone();
    let (a, b) = common::within(900, "a batched GPU fault", move || {
        let _opens = common::Opens(gate.clone());
        // W holds the GPU (at the gate) while A's two partitions queue up behind it.
        let w = e
            .submit(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        common::wait_until(120, "W on the GPU", || e.status().proving == 1);
        let a = e.submit(request(&spec2, &c1_p2, p2)).unwrap();
        common::wait_until(120, "A synthesized", || e.status().prover_queue == 2);
        gate.open();
        // Call 2 is [A0, A1] and fails: both go to the CPU. B is proved on the GPU meanwhile.
        common::wait_until(60, "the failed call", || e.status().cpu_retry_queue > 0);
        let b = e
            .submit(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        let out = e.await_job(a, common::JOB_DEADLINE).unwrap();
        assert!(
            out.partitions.iter().all(|p| p.cpu_retry),
            "{:?}",
            out.partitions
        );
        assert!(cuzk::porep::verify::verify_seal(
            &c1_p2,
            spec2.prover_id(),
            spec2.sector_id,
            &out.proof
        )
        .unwrap());
        // W and B got the GPU's (dummy) proofs, unchecked.
        for j in [w, b] {
            let out = e.await_job(j, common::JOB_DEADLINE).unwrap();
            assert!(!out.verified && !out.partitions[0].cpu_retry, "{out:?}");
        }
        (a, b)
    });
    let calls = sim.calls.lock().unwrap().clone();
    assert_eq!(calls[1], (Answer::Fault, 2), "{calls:?}");
    let st = engine.status();
    assert!(
        st.devices[0].enabled,
        "one failed call must not take the device out"
    );
    assert_eq!(st.devices[0].failed_calls, 1);
    assert_eq!(
        st.devices[0].consecutive_failures, 0,
        "B's call succeeded after it"
    );
    assert_eq!(st.cpu_retries, 2);
    engine.shutdown().unwrap();
    // The GPU did not wait for the CPU: B's call started before A's retries ended.
    let evs = events.lock().unwrap();
    let b_start = evs
        .iter()
        .find(|e| e.job == b && e.kind == EventKind::GpuStart)
        .expect("B on the GPU")
        .t_us;
    let a_end = evs
        .iter()
        .filter(|e| e.job == a && e.kind == EventKind::GpuEnd && e.detail == "cpu")
        .map(|e| e.t_us)
        .max()
        .expect("A's retries");
    assert!(
        b_start < a_end,
        "the GPU waited for the CPU retries ({b_start} >= {a_end})"
    );
}

#[test]
fn a_device_out_for_faults_comes_back_after_a_passed_probe_and_an_operators_stays_out() {
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let sim = Arc::new(SimState::dummy(1, vec![Answer::Fault; 3]));
    // The first probe fails, the second passes.
    *sim.probes.lock().unwrap() = vec![false, true];
    let s = sim.clone();
    let engine = Arc::new(
        Engine::start_with_fallback(
            Config {
                params_dir: common::params_dir(),
                self_check: false,
                synthesis_workers: 2,
                device_cooldown: std::time::Duration::from_millis(300),
                ..Config::default()
            },
            vec![Box::new(SimGpus(sim.clone()))],
            Box::new(common::Stub::default()),
        )
        .unwrap(),
    );
    let e = engine.clone();
    common::within(600, "faults, probes, re-admission", move || {
        let prove = || {
            e.prove(request(&spec, &c1, FixtureShape::default()))
                .unwrap()
        };
        for n in 1..=3 {
            let out = prove();
            assert!(out.partitions[0].cpu_retry);
            let dv = &e.status().devices[0];
            assert_eq!(dv.consecutive_failures, n);
            assert_eq!(dv.enabled, n < 3, "{dv:?}");
        }
        let dv = e.status().devices[0].clone();
        assert_eq!(dv.out_of_service, Some(cuzk::engine::OutOfService::Faults));
        assert!(dv.probe_in_ms.is_some());
        // Out of service: the CPU proves until a probe passes. The first probe (after the
        // cool-down) fails, the second (after the doubled one) passes.
        let mut on_cpu = 0;
        loop {
            std::thread::sleep(std::time::Duration::from_millis(350));
            let out = prove();
            if !out.partitions[0].cpu_retry {
                break;
            }
            on_cpu += 1;
            assert!(on_cpu < 20, "the device never came back");
        }
        assert!(
            on_cpu >= 1,
            "a job between the failed and the passed probe goes to the CPU"
        );
        assert!(s.probes.lock().unwrap().is_empty(), "both probes ran");
        let dv = e.status().devices[0].clone();
        assert!(dv.enabled && dv.readmissions == 1, "{dv:?}");
        // Taken out by the operator: never probed, stays out.
        e.set_device_enabled(0, false).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert!(prove().partitions[0].cpu_retry);
        let dv = e.status().devices[0].clone();
        assert_eq!(
            dv.out_of_service,
            Some(cuzk::engine::OutOfService::Operator)
        );
        assert_eq!(dv.probe_in_ms, None);
        e.set_device_enabled(0, true).unwrap();
        assert!(!prove().partitions[0].cpu_retry);
    });
    // The GPU saw 3 faulted calls, the call after the re-admission and the last one.
    let calls = sim.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 5, "{calls:?}");
    engine.shutdown().unwrap();
    assert_eq!(engine.status().memory_reserved, 0);
}

/// A CPU retry needs the parameters in host memory. When they do not fit now, it waits for
/// other partitions to give memory back; when they could never fit, the job fails with
/// RESOURCE_EXHAUSTED at once, saying why.
#[test]
fn a_cpu_retry_waits_for_memory_and_fails_only_when_it_could_never_fit() {
    let (spec, rep, c1) = common::fixture(FixtureShape::default());
    let (file, part, cpu) = sizes_and_cpu(&rep);
    // The retry reserves what the CPU prover holds beyond the partition's reservation, then
    // the host copy of the parameters. Fits: room for the GPU copy and three partitions (W,
    // X, Y), but not for the retry's memory beside X and Y; once Y is proved it fits. Never:
    // the GPU copy, X and the retry's memory alone are over the budget (and Y does not fit
    // beside W and X).
    let retry = file + (cpu - part);
    let fits_budget = (file + 3 * part).max(file + part + retry) + (16 << 20);
    let never_budget = (file + 3 * part).min(file + part + retry) - (16 << 20);
    assert!(
        file + 2 * part + retry > fits_budget && never_budget > file + 2 * part,
        "fixture sizes changed"
    );
    for (budget, fits) in [(fits_budget, true), (never_budget, false)] {
        let sim = Arc::new(SimState::dummy(1, vec![Answer::Dummy, Answer::Fault]).gated(1));
        let gate = sim.gates[0].clone();
        let engine = sim_engine(
            &sim,
            Config {
                synthesis_workers: 2,
                memory_budget: budget,
                ..Config::default()
            },
        );
        let e = engine.clone();
        let (spec, c1) = (spec.clone(), c1.clone());
        common::within(600, "a CPU retry short of memory", move || {
            let _opens = common::Opens(gate.clone());
            // W at the gate; X and Y synthesized behind it: the GPU copy, X and Y fill the
            // budget, so X's retry cannot load the host copy until Y is proved.
            let w = e
                .submit(request(&spec, &c1, FixtureShape::default()))
                .unwrap();
            common::wait_until(120, "W on the GPU", || e.status().proving == 1);
            let x = e
                .submit(request(&spec, &c1, FixtureShape::default()))
                .unwrap();
            let y = e
                .submit(request(&spec, &c1, FixtureShape::default()))
                .unwrap();
            let ready = if fits { 2 } else { 1 };
            common::wait_until(120, "X (and Y) synthesized", || {
                e.status().prover_queue == ready
            });
            gate.open();
            assert!(e.await_job(w, common::JOB_DEADLINE).is_ok());
            let rx = e.await_job(x, common::JOB_DEADLINE);
            assert!(e.await_job(y, common::JOB_DEADLINE).is_ok());
            if fits {
                let out = rx.unwrap();
                assert!(out.partitions[0].cpu_retry);
            } else {
                let err = rx.unwrap_err();
                assert_eq!(err.status, Status::ResourceExhausted, "{err}");
                assert!(err.message.contains("cannot fit"), "{err}");
            }
        });
        assert!(engine.status().memory_peak <= budget);
        engine.shutdown().unwrap();
    }
}

/// An engine on `sim` with `budget` bytes, two synthesis workers and two job slots, and the
/// gate of its scripted call.
fn admission_engine(sim: SimState, budget: u64) -> (Arc<Engine>, Arc<common::Gate>) {
    let sim = Arc::new(sim.gated(1));
    let gate = sim.gates[0].clone();
    let engine = sim_engine(
        &sim,
        Config {
            synthesis_workers: 2,
            memory_budget: budget,
            max_jobs: 2,
            ..Config::default()
        },
    );
    (engine, gate)
}

/// Admission answers from the engine's accounting: yes with room for a partition (counting
/// the parameters still to load), no while the budget is full (MEMORY) or every job slot is
/// taken (MAX_JOBS), and yes again once the jobs end; bad proof types are clear errors.
#[test]
fn admission_says_no_while_the_budget_is_full_and_yes_once_a_job_ends() {
    use cuzk::engine::AdmissionReason;
    let (spec, rep, c1) = common::fixture(FixtureShape::default());
    let (file, part) = sizes(&rep);
    // The parameters' device copy (held in the budget by the simulated GPU) and one and a
    // half partitions.
    let budget = file + part + part / 2;
    let (engine, gate) = admission_engine(SimState::dummy(1, vec![]), budget);
    let proof = spec.proof;
    let e = engine.clone();
    common::within(600, "admission under load", move || {
        let _opens = common::Opens(gate.clone());
        let ask = || e.admission(proof, FixtureShape::default(), 0).unwrap();
        let a = ask();
        assert!(a.admit, "{a:?}");
        assert_eq!(a.reason, AdmissionReason::Ok);
        assert_eq!(
            (a.partition_bytes, a.params_bytes, a.free_bytes),
            (part, file, budget)
        );
        assert_eq!(
            (a.partitions_per_job, a.partitions_fit, a.jobs_fit),
            (1, 1, 1)
        );
        assert_eq!(a.job_slots, 2);

        // W holds its partition's memory on the (gated) GPU beside the parameters.
        let w = e
            .submit(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        common::wait_until(120, "W on the GPU", || e.status().proving == 1);
        let a = ask();
        assert!(!a.admit, "{a:?}");
        assert_eq!(a.reason, AdmissionReason::Memory);
        assert_eq!((a.params_bytes, a.free_bytes), (0, budget - file - part));
        assert_eq!((a.partitions_fit, a.jobs_fit, a.job_slots), (0, 0, 1));

        // X is submitted anyway: it waits for memory, and takes every job slot.
        let x = e
            .submit(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        common::wait_until(120, "X waiting for memory", || ask().queued_bytes == part);
        let a = ask();
        assert_eq!(
            (a.admit, a.reason, a.job_slots),
            (false, AdmissionReason::MaxJobs, 0)
        );
        assert_eq!(
            e.submit(request(&spec, &c1, FixtureShape::default()))
                .unwrap_err()
                .status,
            Status::ResourceExhausted
        );

        gate.open();
        e.await_job(w, common::JOB_DEADLINE).unwrap();
        e.await_job(x, common::JOB_DEADLINE).unwrap();
        let a = ask();
        assert!(a.admit, "{a:?}");
        assert_eq!((a.partitions_fit, a.queued_bytes, a.job_slots), (1, 0, 2));
        assert_eq!(a.free_bytes, budget - file);

        // Shapes it does not prove, unknown types and ones without parameters.
        let err = |p| {
            e.admission(p, FixtureShape::default(), 0)
                .unwrap_err()
                .status
        };
        use cuzk::porep::SealProof::*;
        assert_eq!(
            e.admission(
                StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
                FixtureShape {
                    partitions: 2,
                    layers: 0
                },
                0
            )
            .unwrap_err()
            .status,
            Status::Unsupported
        );
        assert_eq!(err(StackedDrg8MiBV1_1), Status::Params);
        assert_eq!(
            cuzk::engine::seal_proof_from_abi(99).unwrap_err().status,
            Status::InvalidArgument
        );
    });
    assert!(engine.status().memory_peak <= budget);
    engine.shutdown().unwrap();
    assert_eq!(
        engine
            .admission(proof, FixtureShape::default(), 0)
            .unwrap_err()
            .status,
        Status::NotRunning
    );
}

/// A GPU prover that keeps a copy of the parameters in host memory (a streamed card's pinned
/// bases) leaves a partition sent to the CPU (a fallback) needing a second full copy; where the
/// budget cannot hold it beside the first, that partition fails its job. Admission
/// (`cpu_fallback_bytes`, `cpu_fallback_fits`) and status (`cpu_fallback_unfit`, a metric)
/// show it before any job needs it. The hazard: an operator learns of it only from a failed
/// job.
#[test]
fn admission_and_status_show_a_cpu_fallback_that_cannot_fit_beside_a_kept_copy() {
    let (spec, rep, c1) = common::fixture(FixtureShape::default());
    let (file, part, cpu) = sizes_and_cpu(&rep);
    let small = file + 2 * part;
    assert!(
        2 * file + cpu > small,
        "the fixture's sizes make this test vacuous"
    );
    for (budget, fits) in [(small, false), (2 * file + cpu, true)] {
        let sim = Arc::new(SimState::dummy(1, vec![]));
        let e = sim_engine(
            &sim,
            Config {
                memory_budget: budget,
                ..Config::default()
            },
        );
        let proof = spec.proof;
        let req = request(&spec, &c1, FixtureShape::default());
        common::within(600, "a CPU fallback beside a kept copy", move || {
            let ask = || e.admission(proof, FixtureShape::default(), 0).unwrap();
            // Before any job: the GPU's copy is still to be made.
            let a = ask();
            assert!(a.admit, "{a:?}");
            assert_eq!(
                (a.cpu_fallback_bytes, a.cpu_fallback_fits),
                (file + cpu, fits)
            );
            e.prove(req).unwrap();
            // The GPU's copy is held now: the same answer, and the status names the set.
            let a = ask();
            assert_eq!(
                (a.cpu_fallback_bytes, a.cpu_fallback_fits),
                (file + cpu, fits)
            );
            let st = e.status();
            assert_eq!(st.cpu_fallback_unfit.len(), !fits as usize, "{st:?}");
            assert!(st
                .prometheus()
                .contains(&format!("cuzk_params_cpu_fallback_unfit {}", !fits as u8)));
            e.shutdown().unwrap();
        });
    }
}

/// A GPU prover that reads the parameters only to copy them to the device (cuzk's own) needs
/// their room for a moment, not beside the partitions: admission says yes where the budget
/// holds the file or a partition, and after the load counts only the partitions.
#[test]
fn admission_counts_a_passing_parameter_read_as_room_for_a_moment_only() {
    use cuzk::engine::AdmissionReason;
    let (spec, rep, c1) = common::fixture(FixtureShape::default());
    let (file, part) = sizes(&rep);
    // Room for the read, or for one partition and a half; counting the file beside the
    // partitions (as for a kept copy) would leave no partition room.
    let budget = file.max(part) + part / 2;
    assert!(
        budget - file < part,
        "the fixture's sizes make this test vacuous"
    );
    let mut sim = SimState::dummy(1, vec![]);
    sim.params = HostParams::Passing;
    let (engine, gate) = admission_engine(sim, budget);
    let proof = spec.proof;
    let e = engine.clone();
    common::within(600, "admission with a passing parameter read", move || {
        let _opens = common::Opens(gate.clone());
        let ask = || e.admission(proof, FixtureShape::default(), 0).unwrap();
        let a = ask();
        assert!(a.admit, "{a:?}");
        assert_eq!((a.params_bytes, a.free_bytes), (file, budget));
        assert_eq!(a.partitions_fit, budget / part);

        let w = e
            .submit(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        common::wait_until(120, "W on the GPU", || e.status().proving == 1);
        let a = ask();
        assert_eq!((a.params_bytes, a.free_bytes), (0, budget - part), "{a:?}");
        assert_eq!(a.partitions_fit, (budget - part) / part);
        assert_eq!(a.admit, a.partitions_fit > 0);
        if !a.admit {
            assert_eq!(a.reason, AdmissionReason::Memory);
        }
        gate.open();
        e.await_job(w, common::JOB_DEADLINE).unwrap();
        // Nothing of the parameters stays in host memory.
        let a = ask();
        assert!(a.admit, "{a:?}");
        assert_eq!((a.params_bytes, a.free_bytes), (0, budget));
        assert_eq!(a.partitions_fit, budget / part);
    });
    assert!(engine.status().memory_peak <= budget);
    engine.shutdown().unwrap();
}

/// Work queued ahead counts against admission only at the same or a higher priority; a request
/// already waiting for memory counts whatever its priority (it takes the memory first).
#[test]
fn admission_counts_only_the_work_ahead_of_the_new_jobs_priority() {
    let (spec, rep, c1) = common::fixture(FixtureShape::default());
    let (file, part) = sizes(&rep);
    let sim = Arc::new(SimState::dummy(1, vec![]).gated(1));
    let gate = sim.gates[0].clone();
    let engine = sim_engine(
        &sim,
        Config {
            // One worker: once it waits for memory (X), Y stays in the synthesis queue.
            synthesis_workers: 1,
            memory_budget: file + part + part / 2,
            ..Config::default()
        },
    );
    let proof = spec.proof;
    let e = engine.clone();
    common::within(600, "admission by priority", move || {
        let _opens = common::Opens(gate.clone());
        let ask = |p| e.admission(proof, FixtureShape::default(), p).unwrap();
        let w = e
            .submit(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        common::wait_until(120, "W on the GPU", || e.status().proving == 1);
        let x = e
            .submit(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        // Out of the synthesis queue and waiting in the budget (queued, it counts the same).
        common::wait_until(120, "X waiting for memory", || {
            e.status().synthesis_queue == 0 && ask(0).queued_bytes == part
        });
        let y = e
            .submit(request(&spec, &c1, FixtureShape::default()))
            .unwrap();
        assert_eq!(
            e.status().synthesis_queue,
            1,
            "Y queued behind the waiting worker"
        );
        assert_eq!(
            ask(0).queued_bytes,
            2 * part,
            "X waiting and Y queued, both ahead"
        );
        assert_eq!(ask(-1).queued_bytes, 2 * part);
        assert_eq!(
            ask(5).queued_bytes,
            part,
            "a higher priority passes Y, not X"
        );
        gate.open();
        for id in [w, x, y] {
            e.await_job(id, common::JOB_DEADLINE).unwrap();
        }
        assert_eq!(ask(0).queued_bytes, 0);
    });
    engine.shutdown().unwrap();
}

/// A device cool-down past what an `Instant` can add is refused at engine start
/// (INVALID_ARGUMENT naming `device_cooldown`). The hazard: accepted, it panics the prover
/// worker when a device is taken out after faults (the batch fails with PANIC, the device
/// stays out with no probe).
#[test]
fn a_cooldown_too_long_for_a_deadline_is_refused_at_start() {
    let sim = Arc::new(SimState::dummy(1, vec![Answer::Fault; 3]));
    let start = |cooldown| {
        Engine::start_with_backends(
            Config {
                params_dir: common::params_dir(),
                device_cooldown: cooldown,
                ..Config::default()
            },
            vec![Box::new(SimGpus(sim.clone()))],
        )
    };
    let e = start(std::time::Duration::MAX).err().expect("refused");
    assert_eq!(e.status, Status::InvalidArgument, "{e}");
    assert!(e.message.contains("device_cooldown"), "{e}");
    start(std::time::Duration::from_secs(3600))
        .unwrap()
        .shutdown()
        .unwrap();
}

/// Without a recording: the partition whose GPU proof fails the self-check is synthesized in
/// full and proved on the CPU, the job verifies, the GPU counts one fault and no recording is
/// distrusted. The hazard: one bad GPU proof would fail a job the CPU can still prove.
#[test]
fn a_gpu_proof_that_fails_the_self_check_is_proved_again_and_its_gpu_faulted() {
    let shape = FixtureShape {
        partitions: 2,
        layers: 0,
    };
    let (spec, _, c1) = common::fixture(shape);
    common::within(1200, "a bad GPU proof proved again", move || {
        // The first call answers dummy proofs (well formed, wrong), later ones real proofs.
        let mut state = SimState::cpu(1);
        state.script = vec![Answer::Dummy];
        let sim = Arc::new(state);
        let engine = Engine::start_with_backends(
            Config {
                params_dir: common::params_dir(),
                synthesis: Some(cuzk::engine::SynthesisMode::Full),
                synthesis_workers: 2,
                ..Config::default()
            },
            vec![Box::new(SimGpus(sim.clone()))],
        )
        .unwrap();
        let out = engine.prove(request(&spec, &c1, shape)).unwrap();
        assert!(out.verified);
        assert!(cuzk::porep::verify::verify_seal(
            &c1,
            spec.prover_id(),
            spec.sector_id,
            &out.proof
        )
        .unwrap());
        assert_eq!(
            out.partitions.iter().filter(|p| p.cpu_retry).count(),
            1,
            "{:?}",
            out.partitions
        );
        let st = engine.status();
        assert_eq!(st.bad_proofs, 1, "{st:?}");
        assert_eq!(st.devices[0].failed_calls, 1, "{st:?}");
        assert_eq!((st.pce_distrusted, st.failed), (0, 0), "{st:?}");
        engine.shutdown().unwrap();
    });
}

/// A one-partition request (the real 2KiB fixture) and a two-partition one (the shape the
/// other tests here use: filecoin-proofs' partition table is one per process).
fn one_and_two_partitions() -> (JobRequest, JobRequest) {
    let p2 = FixtureShape {
        partitions: 2,
        layers: 0,
    };
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let (spec2, _, c1_p2) = common::fixture(p2);
    (
        request(&spec, &c1, FixtureShape::default()),
        request(&spec2, &c1_p2, p2),
    )
}

/// Every timeline event of `engine`, as it comes.
fn recorded(engine: &Engine) -> Arc<Mutex<Vec<cuzk::timeline::Event>>> {
    let events: Arc<Mutex<Vec<cuzk::timeline::Event>>> = Arc::default();
    let ev = events.clone();
    engine.add_timeline_sink(Arc::new(move |e| ev.lock().unwrap().push(e.clone())));
    events
}

/// The jobs in the order their `JobDone` events came, once `n` have come (the sink is fed
/// after an await may return).
fn done_order(events: &Mutex<Vec<cuzk::timeline::Event>>, n: usize) -> Vec<u64> {
    let done = || -> Vec<u64> {
        events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.kind == cuzk::timeline::EventKind::JobDone)
            .map(|e| e.job)
            .collect()
    };
    common::wait_until(60, "the jobs' JobDone events", || done().len() >= n);
    done()
}

/// A GPU call proving a batch stops between partitions for a partition of a higher class or
/// priority waiting behind it, and loses no work. The hazard: a call that takes every
/// partition of its batch first holds a priority job inside a stream behind the stream. A's
/// batch of two is on the GPU when P (priority 10) is synthesized; the call proves the
/// partition it is on and gives the other back, P is proved next, then A's second.
#[test]
fn a_gpu_call_stops_between_partitions_for_a_higher_one_and_loses_no_work() {
    let (one, two) = one_and_two_partitions();
    let sim = Arc::new(SimState::dummy(4, vec![]).gated(2));
    let gates = sim.gates.clone();
    let engine = sim_engine(&sim, Config::default());
    let events = recorded(&engine);
    let e = engine.clone();
    let s = sim.clone();
    common::within(600, "preemption between partitions", move || {
        let _opens: Vec<_> = gates.iter().map(|g| common::Opens(g.clone())).collect();
        // W holds the GPU at gate 1 while A's two partitions are synthesized.
        let w = e.submit(one.clone()).unwrap();
        common::wait_until(120, "W on the GPU", || e.status().proving == 1);
        let a = e.submit(two).unwrap();
        common::wait_until(120, "A synthesized", || e.status().prover_queue == 2);
        gates[0].open();
        // A's batch of two waits at gate 2 while P is synthesized.
        common::wait_until(120, "A on the GPU", || {
            s.calls.lock().unwrap().len() == 2 && e.status().proving == 2
        });
        let mut hi = one;
        hi.priority = 10;
        let p = e.submit(hi).unwrap();
        common::wait_until(120, "P synthesized", || e.status().prover_queue == 1);
        gates[1].open();
        for id in [w, p, a] {
            let out = e.await_job(id, common::JOB_DEADLINE).unwrap();
            assert!(out.partitions.iter().all(|p| !p.cpu_retry), "{out:?}");
        }
        let sizes: Vec<usize> = s.calls.lock().unwrap().iter().map(|c| c.1).collect();
        assert_eq!(
            sizes,
            vec![1, 2, 1, 1],
            "A's call stopped after one partition"
        );
        assert_eq!(s.yields.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(done_order(&events, 3), vec![w, p, a], "P before A");
        let yielded = events
            .lock()
            .unwrap()
            .iter()
            .filter(|x| x.kind == cuzk::timeline::EventKind::GpuEnd && x.detail == "yielded")
            .count();
        assert_eq!(yielded, 1);
        assert_eq!(e.status().failed, 0);
    });
    engine.shutdown().unwrap();
}

/// A partition that would be proved before every partition waiting is synthesized at once,
/// even while the prover queue holds its look-ahead. The hazard: synthesis workers that wait
/// on a full look-ahead whatever comes next keep a higher partition in the synthesis queue
/// behind the stream.
#[test]
fn a_higher_partition_is_synthesized_while_the_prover_queue_is_full() {
    let (one, two) = one_and_two_partitions();
    let sim = Arc::new(SimState::dummy(1, vec![]).gated(1));
    let gate = sim.gates[0].clone();
    let engine = sim_engine(
        &sim,
        Config {
            synthesis_workers: 1,
            synthesis_lookahead: 1,
            ..Config::default()
        },
    );
    let events = recorded(&engine);
    let e = engine.clone();
    common::within(600, "synthesis of a higher partition", move || {
        let _opens = common::Opens(gate.clone());
        let w = e.submit(one.clone()).unwrap();
        common::wait_until(120, "W on the GPU", || e.status().proving == 1);
        // A0 fills the prover queue's look-ahead; A1 waits to be synthesized.
        let a = e.submit(two).unwrap();
        common::wait_until(120, "A0 synthesized", || {
            let st = e.status();
            st.prover_queue == 1 && st.synthesis_queue == 1 && st.synthesizing == 0
        });
        let mut hi = one;
        hi.priority = 10;
        let p = e.submit(hi).unwrap();
        common::wait_until(120, "P synthesized past the look-ahead", || {
            let st = e.status();
            st.prover_queue == 2 && st.synthesis_queue == 1
        });
        gate.open();
        for id in [w, p, a] {
            e.await_job(id, common::JOB_DEADLINE).unwrap();
        }
        assert_eq!(done_order(&events, 3), vec![w, p, a]);
    });
    engine.shutdown().unwrap();
}
