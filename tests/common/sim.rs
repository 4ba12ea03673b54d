//! Simulated GPUs for the dispatcher's tests on the CPU: one configurable multi-device
//! [`ProverBackend`], [`SimGpus`], over a [`SimState`] the test keeps a handle to (to script
//! calls, inject faults, open gates, take devices out and read what happened).

use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex,
};

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar as Fr};
use cuzk::{
    params::Srs,
    prover::{cpu::CpuProver, ProverBackend, ProvingAssignment, StageTimes},
    Status,
};

use super::{dummy_proof, Gate};

/// What the partitions of one call (one `prove_batch`) get.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Answer {
    /// Real proofs from the CPU prover (the parameters loaded by [`HostParams::Load`]).
    Cpu,
    /// Dummy proofs (they fail the self-check, which the engines using them turn off or
    /// ignore).
    Dummy,
    /// A device fault for every partition of the call.
    Fault,
    /// No device memory for any partition of the call (RESOURCE_EXHAUSTED, as cuzk's GPU
    /// prover answers on a GPU that cannot hold a partition): not a fault.
    NoRoom,
    /// A GPU that can never hold the circuit (UNSUPPORTED, as cuzk's GPU prover answers on a
    /// card too small for it): passed over, not a fault.
    Never,
}

/// What `prepare` does with the parameters, and so what the budget holds for them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HostParams {
    /// Loads them into host memory (`Srs::params`), for the CPU prover behind [`Answer::Cpu`].
    Load,
    /// Holds their room in the budget as a resident reservation until `release`, the way
    /// cuzk's GPU prover keeps a pinned copy of parameters it streams (`keeps_host_copy`).
    Kept,
    /// Needs their room for a moment only, the way cuzk's GPU prover reads parameters it makes
    /// resident on the device (`keeps_host_copy` false).
    Passing,
}

/// The simulated devices and what they do, shared between the test and [`SimGpus`].
///
/// Call `k` (from 1) places its partitions the way cuzk's GPU prover does (contiguous runs
/// over the devices in service, `cuzk::prover::batch_device`), logs them, waits at
/// `gates[k-1]` if there is one, then answers [`SimState::answer`]`(k)`, except that a device
/// with `fail_next` left fails its partitions as a device fault (the assignment is left for
/// the engine's CPU retry, as a GPU leaves it).
pub struct SimState {
    /// Whether each device is in service (`set_enabled`); their number is the devices'.
    pub enabled: Vec<AtomicBool>,
    /// Partitions each device in service takes per call.
    pub width: usize,
    /// What `prepare` does.
    pub params: HostParams,
    /// What call `k` answers: `script[k-1]`, then `then` past its end.
    pub script: Vec<Answer>,
    pub then: Answer,
    /// Call `k` waits at `gates[k-1]`, where there is one, once its partitions are logged.
    pub gates: Vec<Arc<Gate>>,
    /// Per device: how many of the next partitions it is given fail (`u64::MAX`: all).
    pub fail_next: Vec<AtomicU64>,
    /// Answers of `probe` (pass or fail), in turn; Ok once used up.
    pub probes: Mutex<Vec<bool>>,
    /// Gates the next probes wait at, in turn (a probe that does not return until opened).
    pub probe_gates: Mutex<Vec<Arc<Gate>>>,
    /// Errors `prepare` answers with, in turn (before doing what `params` says); none once
    /// used up.
    pub prepare_errors: Mutex<Vec<Status>>,
    /// Gates the next `prepare`s wait at, in turn (a placement that does not return until
    /// opened).
    pub prepare_gates: Mutex<Vec<Arc<Gate>>>,
    /// Per call, in order: its answer and its number of partitions.
    pub calls: Mutex<Vec<(Answer, usize)>>,
    /// Per partition given to a device, in order: (call, device, ok).
    pub log: Mutex<Vec<(usize, usize, bool)>>,
    /// Per device: calls it is inside now (`busy_devices`, as cuzk's GPU prover reports them).
    pub inside: Vec<AtomicU64>,
    /// Partitions that calls did not begin because the engine asked them to stop between
    /// partitions (`prove_batch_between`), in all.
    pub yields: AtomicU64,
    resident: Mutex<Option<cuzk::budget::Reservation>>,
}

impl SimState {
    /// `n` devices in service, one partition each per call, proving with the CPU prover.
    pub fn cpu(n: usize) -> Self {
        SimState {
            enabled: (0..n).map(|_| AtomicBool::new(true)).collect(),
            width: 1,
            params: HostParams::Load,
            script: Vec::new(),
            then: Answer::Cpu,
            gates: Vec::new(),
            fail_next: (0..n).map(|_| AtomicU64::new(0)).collect(),
            probes: Mutex::default(),
            probe_gates: Mutex::default(),
            prepare_errors: Mutex::default(),
            prepare_gates: Mutex::default(),
            calls: Mutex::default(),
            log: Mutex::default(),
            inside: (0..n).map(|_| AtomicU64::new(0)).collect(),
            yields: AtomicU64::new(0),
            resident: Mutex::default(),
        }
    }

    /// One device taking batches of up to `width`, answering `script` then dummy proofs,
    /// holding a parameter copy in the budget ([`HostParams::Kept`]).
    pub fn dummy(width: usize, script: Vec<Answer>) -> Self {
        SimState {
            width,
            params: HostParams::Kept,
            script,
            then: Answer::Dummy,
            ..Self::cpu(1)
        }
    }

    /// `n` devices taking one partition each per call, answering `script` then dummy proofs.
    pub fn dummy_on(n: usize, script: Vec<Answer>) -> Self {
        SimState {
            params: HostParams::Kept,
            script,
            then: Answer::Dummy,
            ..Self::cpu(n)
        }
    }

    /// The same with a gate for each of the first `calls` calls.
    pub fn gated(mut self, calls: usize) -> Self {
        self.gates = (0..calls).map(|_| Arc::default()).collect();
        self
    }

    /// What call `k` (from 1) answers.
    pub fn answer(&self, k: usize) -> Answer {
        self.script.get(k - 1).copied().unwrap_or(self.then)
    }

    /// (device, ok) for every partition logged.
    pub fn placed(&self) -> Vec<(usize, bool)> {
        let log = self.log.lock().unwrap();
        log.iter().map(|&(_, d, ok)| (d, ok)).collect()
    }

    /// The devices in service.
    fn usable(&self) -> Vec<usize> {
        (0..self.enabled.len())
            .filter(|&d| self.enabled[d].load(Ordering::SeqCst))
            .collect()
    }
}

/// The backend driving a [`SimState`]'s devices ("sim:0", "sim:1", ...).
pub struct SimGpus(pub Arc<SimState>);

impl ProverBackend for SimGpus {
    fn name(&self) -> &'static str {
        "sim"
    }
    fn is_gpu(&self) -> bool {
        true
    }
    fn keeps_host_copy(&self) -> bool {
        self.0.params != HostParams::Passing
    }
    fn devices(&self) -> Vec<String> {
        (0..self.0.enabled.len())
            .map(|d| format!("sim:{d}"))
            .collect()
    }
    fn max_batch(&self) -> usize {
        self.0.width * self.0.usable().len()
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
    fn probe(&self, _: usize) -> cuzk::Result<()> {
        let gate = {
            let mut gates = self.0.probe_gates.lock().unwrap();
            (!gates.is_empty()).then(|| gates.remove(0))
        };
        if let Some(g) = gate {
            g.wait();
        }
        let mut p = self.0.probes.lock().unwrap();
        if !p.is_empty() && !p.remove(0) {
            return Err(cuzk::Error::proving("sim: probe failed"));
        }
        Ok(())
    }
    fn prepare(&self, srs: &Srs) -> cuzk::Result<()> {
        let no_room = |what| cuzk::Error::new(Status::ResourceExhausted, what);
        let gate = {
            let mut gates = self.0.prepare_gates.lock().unwrap();
            (!gates.is_empty()).then(|| gates.remove(0))
        };
        if let Some(g) = gate {
            g.wait();
        }
        {
            let mut errors = self.0.prepare_errors.lock().unwrap();
            if !errors.is_empty() {
                let status = errors.remove(0);
                return Err(cuzk::Error::new(status, "sim: prepare refused"));
            }
        }
        match self.0.params {
            HostParams::Load => srs.params().map(drop),
            // Read into host memory, copied to the device, let go.
            HostParams::Passing => srs
                .budget()
                .try_acquire(srs.file_len)
                .map(drop)
                .ok_or_else(|| no_room("sim: no room to read")),
            HostParams::Kept => {
                let mut r = self.0.resident.lock().unwrap();
                if r.is_none() {
                    *r = Some(
                        srs.budget()
                            .try_acquire_resident(srs.file_len)
                            .ok_or_else(|| no_room("sim: parameters do not fit"))?,
                    );
                }
                Ok(())
            }
        }
    }
    fn release(&self) {
        self.0.resident.lock().unwrap().take();
    }
    fn busy_devices(&self) -> Option<Vec<usize>> {
        let inside = &self.0.inside;
        Some(
            (0..inside.len())
                .filter(|&d| inside[d].load(Ordering::SeqCst) > 0)
                .collect(),
        )
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
        self.prove_batch_between(asgs, srs, rs, ss, times, &|| false)
    }

    /// Once through the call's gate, the partitions in turn; before each after a device's
    /// first, `stop` is asked, as cuzk's GPU prover asks it: where it answers true the rest of
    /// that device's partitions come back not begun (`cuzk::prover::yielded`).
    fn prove_batch_between(
        &self,
        asgs: &mut [Option<ProvingAssignment>],
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        times: &mut [StageTimes],
        stop: cuzk::prover::Between<'_>,
    ) -> Vec<(usize, cuzk::Result<Proof<Bls12>>)> {
        let sim = &self.0;
        let n = asgs.len();
        assert!(
            n <= self.max_batch(),
            "a batch of {n} for {} partitions",
            self.max_batch()
        );
        let placed: Vec<usize> = (0..n).map(|i| self.device_for(i, n)).collect();
        // The call is counted once its partitions are logged.
        let (call, answer) = {
            let mut calls = sim.calls.lock().unwrap();
            let call = calls.len() + 1;
            let answer = sim.answer(call);
            let mut log = sim.log.lock().unwrap();
            log.extend(placed.iter().map(|&d| (call, d, true)));
            calls.push((answer, n));
            (call, answer)
        };
        let mut devs = placed.clone();
        devs.dedup();
        for &d in &devs {
            sim.inside[d].fetch_add(1, Ordering::SeqCst);
        }
        if let Some(g) = sim.gates.get(call - 1) {
            g.wait();
        }
        for &d in &devs {
            sim.inside[d].fetch_sub(1, Ordering::SeqCst);
        }
        let mut stopped: Vec<usize> = Vec::new();
        let later: Vec<bool> = (0..n)
            .map(|i| i > 0 && placed[i - 1] == placed[i])
            .collect();
        let out: Vec<(usize, cuzk::Result<Proof<Bls12>>)> = placed
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                if stopped.contains(&d) || (later[i] && stop()) {
                    stopped.push(d);
                    sim.yields.fetch_add(1, Ordering::SeqCst);
                    return (d, Err(cuzk::prover::yielded()));
                }
                let fault = answer == Answer::Fault
                    || sim.fail_next[d]
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1))
                        .is_ok();
                let res = if answer == Answer::NoRoom {
                    Err(cuzk::Error::new(
                        cuzk::Status::ResourceExhausted,
                        format!("sim:{d}: cannot hold a partition now"),
                    ))
                } else if answer == Answer::Never {
                    Err(cuzk::Error::new(
                        cuzk::Status::Unsupported,
                        format!("sim:{d}: cannot hold a partition on this card"),
                    ))
                } else if fault {
                    // Like a GPU: the assignment stays for the engine's retry.
                    Err(cuzk::Error::proving(format!("sim:{d}: injected fault")))
                } else if answer == Answer::Cpu {
                    CpuProver.prove(&mut asgs[i], srs, rs[i], ss[i], &mut times[i])
                } else {
                    asgs[i].take();
                    Ok(dummy_proof())
                };
                (d, res)
            })
            .collect();
        let mut log = sim.log.lock().unwrap();
        for (e, (_, r)) in log.iter_mut().filter(|e| e.0 == call).zip(&out) {
            e.2 = r.is_ok();
        }
        out
    }
}
