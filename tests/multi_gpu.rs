//! The multi-GPU dispatcher on the CPU, with three simulated devices (each proves with the CPU
//! prover): a job's partitions go one to every device in service; a device lost in the middle
//! of a call and taken out of service leaves its partition to the CPU and the batches to the
//! devices left; every proof verifies. What a second GPU would show, without one (tests/
//! dispatch.rs has two devices, one taken out between jobs). In a process of its own: it uses a
//! 3-partition fixture, and filecoin-proofs' partition table (which `verify_seal` reads) is
//! process-wide.

mod common;

use std::sync::{atomic::Ordering, Arc};

use common::sim::{Answer, SimGpus, SimState};
use cuzk::{
    engine::{Config, Engine, JobRequest},
    prover::ProverBackend,
    FixtureShape,
};

/// The multi-GPU dispatcher checks that need no second GPU: three simulated devices. A job's
/// partitions go one to every device in service; a device lost in the middle of that call and
/// taken out of service leaves its partition to the CPU, and the backend then takes batches
/// for the two devices left; the job verifies.
#[test]
fn partitions_of_one_job_use_every_device_and_a_device_lost_mid_call_leaves_its_work_to_the_cpu() {
    let shape2 = FixtureShape {
        partitions: 2,
        layers: 0,
    };
    let (spec2, _, c1_2) = common::fixture(shape2);
    let shape3 = FixtureShape {
        partitions: 3,
        layers: 0,
    };
    let (spec3, _, c1_3) = common::fixture(shape3);
    // Calls 1 and 2 wait at a gate each; call 1 (job A's, cancelled meanwhile) answers with
    // dummy proofs.
    let mut sim = SimState::cpu(3).gated(2);
    sim.script = vec![Answer::Dummy];
    let sim = Arc::new(sim);
    let (hold_first, hold_second) = (sim.gates[0].clone(), sim.gates[1].clone());
    let engine = Engine::start_with_backends(
        Config {
            params_dir: common::params_dir(),
            synthesis_workers: 3,
            ..Config::default()
        },
        vec![Box::new(SimGpus(sim.clone()))],
    )
    .unwrap();
    assert_eq!(engine.status().devices.len(), 3);
    let req = |c1: &[u8], spec: &common::tools::fixture::FixtureSpec, shape, priority| JobRequest {
        c1: c1.to_vec(),
        sector_id: spec.sector_id,
        prover_id: spec.prover_id(),
        priority,
        fixture: shape,
    };
    common::within(1200, "the three-device run", move || {
        // Job A only holds the prover (its first call waits at a gate) while job B is
        // synthesized, and is then cancelled: B's three partitions make the next call together.
        let a = engine.submit(req(&c1_2, &spec2, shape2, 0)).unwrap();
        common::wait_until(600, "job A's first call", || {
            sim.calls.lock().unwrap().len() == 1
        });
        let b = engine.submit(req(&c1_3, &spec3, shape3, 5)).unwrap();
        engine.cancel(a).unwrap();
        // Ready: B's three partitions queued, nothing of A's left to arrive.
        common::wait_until(600, "job B's partitions ready", || {
            let st = engine.status();
            st.prover_queue == 3 && st.synthesizing == 0 && st.synthesis_queue == 0
        });
        hold_first.open();
        common::wait_until(600, "job B's call", || sim.calls.lock().unwrap().len() == 2);
        let second: Vec<usize> = sim
            .log
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.0 == 2)
            .map(|e| e.1)
            .collect();
        assert_eq!(second, [0, 1, 2], "job B's partitions, one per device");

        // Device 2 is lost while that call runs, and the operator takes it out.
        sim.fail_next[2].store(u64::MAX, Ordering::SeqCst);
        engine.set_device_enabled(2, false).unwrap();
        hold_second.open();

        let out = engine.await_job(b, common::JOB_DEADLINE).unwrap();
        assert!(out.verified);
        assert_eq!(out.proof.len(), 3 * cuzk::PROOF_BYTES);
        assert!(cuzk::porep::verify::verify_seal(
            &c1_3,
            spec3.prover_id(),
            spec3.sector_id,
            &out.proof
        )
        .unwrap());
        // The partition on device 2 was proved again by the CPU; the others where placed.
        let retried: Vec<_> = out.partitions.iter().filter(|p| p.cpu_retry).collect();
        assert_eq!(retried.len(), 1, "{:?}", out.partitions);
        assert!(
            out.partitions
                .iter()
                .filter(|p| !p.cpu_retry)
                .all(|p| p.device < 2),
            "{:?}",
            out.partitions
        );
        assert_eq!(engine.status().cpu_retries, 1);
        let log = sim.log.lock().unwrap().clone();
        assert_eq!(
            log.iter()
                .filter(|e| !e.2)
                .map(|e| (e.0, e.1))
                .collect::<Vec<_>>(),
            [(2, 2)],
            "{log:?}"
        );
        // Taken out: the engine shows it, and batches are for the two devices left.
        assert!(!engine.status().devices[2].enabled);
        assert_eq!(SimGpus(sim.clone()).max_batch(), 2);
        assert_eq!(engine.status().cancelled, 1, "job A");
        engine.shutdown().unwrap();
    });
}
