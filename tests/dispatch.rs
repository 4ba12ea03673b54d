//! The prover dispatcher with several devices, on the CPU: a simulated two-device backend
//! (each "device" proves with the CPU prover) whose devices can fail by injection. A failed
//! partition is proved again on the CPU and its job still verifies; a device taken out of
//! service mid-run gets no more partitions, which go to the other device.

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
    FixtureShape, Status,
};

#[derive(Default)]
struct Shared {
    enabled: [AtomicBool; 2],
    fail_next: [AtomicU64; 2],
    /// (device, ok) for every partition given to a device.
    log: Mutex<Vec<(usize, bool)>>,
}

/// Two simulated GPUs: a batch puts item i on the i-th enabled device.
struct SimTwo(Arc<Shared>);

impl ProverBackend for SimTwo {
    fn name(&self) -> &'static str {
        "sim"
    }
    fn is_gpu(&self) -> bool {
        true
    }
    fn devices(&self) -> Vec<String> {
        vec!["sim:0".into(), "sim:1".into()]
    }
    fn max_batch(&self) -> usize {
        self.0
            .enabled
            .iter()
            .filter(|e| e.load(Ordering::SeqCst))
            .count()
    }
    fn set_enabled(&self, device: usize, on: bool) -> bool {
        self.0.enabled[device].store(on, Ordering::SeqCst);
        true
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
        let devs: Vec<usize> = (0..2)
            .filter(|&d| self.0.enabled[d].load(Ordering::SeqCst))
            .collect();
        assert!(
            asgs.len() <= devs.len(),
            "batch of {} for {} devices",
            asgs.len(),
            devs.len()
        );
        (0..asgs.len())
            .map(|i| {
                let d = devs[i];
                let fail = self.0.fail_next[d]
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1))
                    .is_ok();
                let res = if fail {
                    // Like a GPU: the assignment stays for the engine's retry.
                    Err(cuzk::Error::proving(format!("sim:{d}: injected fault")))
                } else {
                    CpuProver.prove(&mut asgs[i], srs, rs[i], ss[i], &mut times[i])
                };
                self.0.log.lock().unwrap().push((d, res.is_ok()));
                (d, res)
            })
            .collect()
    }
}

#[test]
fn failed_device_partitions_finish_elsewhere_and_verify() {
    let shape = FixtureShape {
        partitions: 2,
        layers: 0,
    };
    let (spec, _, c1) = common::fixture(shape);
    let shared = Arc::new(Shared::default());
    shared
        .enabled
        .iter()
        .for_each(|e| e.store(true, Ordering::SeqCst));
    // The first partition given to device 0 fails.
    shared.fail_next[0].store(1, Ordering::SeqCst);
    let engine = Engine::start_with_backends(
        Config {
            params_dir: common::params_dir(),
            synthesis_workers: 2,
            ..Config::default()
        },
        vec![Box::new(SimTwo(shared.clone()))],
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
    let log = shared.log.lock().unwrap().clone();
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
    shared.log.lock().unwrap().clear();
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
    assert!(shared
        .log
        .lock()
        .unwrap()
        .iter()
        .all(|&(d, ok)| d == 1 && ok));

    // Bad device index: a clear error.
    assert_eq!(
        engine.set_device_enabled(7, false).unwrap_err().status,
        Status::InvalidArgument
    );
    engine.shutdown().unwrap();
}
