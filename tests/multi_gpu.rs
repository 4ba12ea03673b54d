//! The multi-GPU dispatcher on the CPU, with three simulated devices (each proves with the CPU
//! prover): a job's partitions go one to every device in service; a device lost in the middle
//! of a call and taken out of service leaves its partition to the CPU and the batches to the
//! devices left; every proof verifies. What a second GPU would show, without one (tests/
//! dispatch.rs has two devices, one taken out between jobs). In a process of its own: it uses a
//! 3-partition fixture, and filecoin-proofs' partition table (which `verify_seal` reads) is
//! process-wide.

mod common;

use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex,
};

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar as Fr};
use cuzk::{
    engine::{Config, Engine, JobRequest},
    params::Srs,
    prover::{cpu::CpuProver, ProverBackend, ProvingAssignment, StageTimes},
    FixtureShape,
};

/// N simulated GPUs proving with the CPU prover, a batch placed the way cuzk's GPU prover
/// places one (contiguous runs over the devices in service, `batch_device`). Call `k` (from 1)
/// first logs where its items go, then waits at `gates[k-1]` if there is one; `fault_on` makes
/// every item given to that device fail (a device fault: the engine retries it on the CPU);
/// call `dummy_call` answers with dummy proofs (for a job cancelled meanwhile).
struct NState {
    enabled: Vec<AtomicBool>,
    gates: Vec<Arc<common::Gate>>,
    fault_on: AtomicU64,
    dummy_call: AtomicU64,
    calls: AtomicU64,
    /// (call, device, ok) for every partition given to a device, in order.
    log: Mutex<Vec<(u64, usize, bool)>>,
}

const NO_FAULT: u64 = u64::MAX;

/// The simulated devices' backend (the state is shared with the test).
struct SimN(Arc<NState>);

impl NState {
    fn new(n: usize, gates: Vec<Arc<common::Gate>>) -> NState {
        NState {
            enabled: (0..n).map(|_| AtomicBool::new(true)).collect(),
            gates,
            fault_on: AtomicU64::new(NO_FAULT),
            dummy_call: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            log: Mutex::new(Vec::new()),
        }
    }
    fn usable(&self) -> Vec<usize> {
        (0..self.enabled.len())
            .filter(|&d| self.enabled[d].load(Ordering::SeqCst))
            .collect()
    }
}

impl ProverBackend for SimN {
    fn name(&self) -> &'static str {
        "simn"
    }
    fn is_gpu(&self) -> bool {
        true
    }
    fn devices(&self) -> Vec<String> {
        (0..self.0.enabled.len())
            .map(|d| format!("sim:{d}"))
            .collect()
    }
    fn max_batch(&self) -> usize {
        self.0.usable().len()
    }
    fn device_for(&self, i: usize, n: usize) -> usize {
        let usable = self.0.usable();
        usable
            .get(cuzk::prover::batch_device(i, n, usable.len().max(1)))
            .copied()
            .unwrap_or(0)
    }
    fn set_enabled(&self, device: usize, on: bool) -> bool {
        match self.0.enabled.get(device) {
            Some(e) => {
                e.store(on, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }
    fn prepare(&self, srs: &Srs) -> cuzk::Result<()> {
        srs.params().map(|_| ())
    }
    fn prove(
        &self,
        asg: &mut Option<ProvingAssignment>,
        srs: &Srs,
        r: Fr,
        s: Fr,
        times: &mut StageTimes,
    ) -> cuzk::Result<Proof<Bls12>> {
        cuzk::prover::prove_one_as_batch(self, asg, srs, r, s, times)
    }
    fn prove_batch(
        &self,
        asgs: &mut [Option<ProvingAssignment>],
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        times: &mut [StageTimes],
    ) -> Vec<(usize, cuzk::Result<Proof<Bls12>>)> {
        let call = self.0.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let n = asgs.len();
        let placed: Vec<usize> = (0..n).map(|i| self.device_for(i, n)).collect();
        {
            let mut log = self.0.log.lock().unwrap();
            for &d in &placed {
                log.push((call, d, true));
            }
        }
        if let Some(g) = self.0.gates.get(call as usize - 1) {
            g.wait();
        }
        let fault_on = self.0.fault_on.load(Ordering::SeqCst);
        let dummy = self.0.dummy_call.load(Ordering::SeqCst) == call;
        (0..n)
            .map(|i| {
                let d = placed[i];
                let res = if dummy {
                    Ok(common::dummy_proof())
                } else if d as u64 == fault_on {
                    // Like a GPU: the assignment stays for the engine's retry.
                    Err(cuzk::Error::proving(format!("sim:{d}: device lost")))
                } else {
                    CpuProver.prove(&mut asgs[i], srs, rs[i], ss[i], &mut times[i])
                };
                if res.is_err() {
                    let mut log = self.0.log.lock().unwrap();
                    if let Some(e) = log.iter_mut().rev().find(|e| e.0 == call && e.1 == d) {
                        e.2 = false;
                    }
                }
                (d, res)
            })
            .collect()
    }
}

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
    let hold_first = Arc::new(common::Gate::default());
    let hold_second = Arc::new(common::Gate::default());
    let sim = Arc::new(NState::new(
        3,
        vec![hold_first.clone(), hold_second.clone()],
    ));
    let engine = Engine::start_with_backends(
        Config {
            params_dir: common::params_dir(),
            synthesis_workers: 3,
            ..Config::default()
        },
        vec![Box::new(SimN(sim.clone()))],
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
            sim.calls.load(Ordering::SeqCst) == 1
        });
        let b = engine.submit(req(&c1_3, &spec3, shape3, 5)).unwrap();
        engine.cancel(a).unwrap();
        // Ready: B's three partitions queued, nothing of A's left to arrive.
        common::wait_until(600, "job B's partitions ready", || {
            let st = engine.status();
            st.prover_queue == 3 && st.synthesizing == 0 && st.synthesis_queue == 0
        });
        sim.dummy_call.store(1, Ordering::SeqCst);
        hold_first.open();
        common::wait_until(600, "job B's call", || {
            sim.calls.load(Ordering::SeqCst) == 2
        });
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
        sim.fault_on.store(2, Ordering::SeqCst);
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
        assert_eq!(SimN(sim.clone()).max_batch(), 2);
        assert_eq!(engine.status().cancelled, 1, "job A");
        engine.shutdown().unwrap();
    });
}
