//! Shared helpers for the integration tests: cached fixtures and parameters, gates, stub and
//! simulated provers.
#![allow(dead_code)]

pub mod sim;

use std::path::PathBuf;

pub use cuzk_tools as tools;

use cuzk::{
    engine,
    porep::FixtureShape,
    timeline::{Event, EventKind, NO_PARTITION},
};
use tools::fixture::{self, FixtureSpec, SetupReport};

/// The parameter cache the tests use (outside the repository; `make test` fills it once).
pub fn params_dir() -> PathBuf {
    engine::default_params_dir()
}

/// Sets filecoin-proofs' parameter directory for this test process (before any proofs call).
pub fn init() {
    let _ = env_logger::builder().is_test(true).try_init();
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params_dir());
}

/// The 2KiB V1_1 fixture of the given shape: parameters (generated once, cached) and C1 JSON.
pub fn fixture(shape: FixtureShape) -> (FixtureSpec, SetupReport, Vec<u8>) {
    init();
    let spec = FixtureSpec::new(fixture::v1_1_proof(2048).unwrap(), shape);
    let rep = fixture::setup(&spec, &params_dir()).expect("fixture setup");
    let c1 = std::fs::read(&rep.c1_path).unwrap();
    (spec, rep, c1)
}

/// Asserts that each of `job`'s partitions has exactly one of each partition event, in the
/// order SYNTH_START < SYNTH_END <= CHAN_SEND <= GPU_PICKUP <= GPU_START < GPU_END, all between
/// JOB_QUEUED and JOB_DONE. Returns each partition's times in that order.
pub fn assert_partition_order(evs: &[Event], job: u64, partitions: u32) -> Vec<[u64; 6]> {
    let one = |kind: EventKind, p: u32| {
        let v: Vec<u64> = evs
            .iter()
            .filter(|e| e.job == job && e.kind == kind && e.partition == p)
            .map(|e| e.t_us)
            .collect();
        assert_eq!(v.len(), 1, "{kind:?} of partition {p}: {v:?}");
        v[0]
    };
    let queued = one(EventKind::JobQueued, NO_PARTITION);
    let done = one(EventKind::JobDone, NO_PARTITION);
    (0..partitions)
        .map(|p| {
            let seq = [
                one(EventKind::SynthStart, p),
                one(EventKind::SynthEnd, p),
                one(EventKind::ChanSend, p),
                one(EventKind::GpuPickup, p),
                one(EventKind::GpuStart, p),
                one(EventKind::GpuEnd, p),
            ];
            assert!(
                queued <= seq[0] && seq[5] <= done,
                "partition {p} outside its job"
            );
            assert!(
                seq.windows(2).all(|w| w[0] <= w[1]),
                "partition {p}: {seq:?}"
            );
            assert!(seq[0] < seq[1] && seq[4] < seq[5], "partition {p}: {seq:?}");
            seq
        })
        .collect()
}

/// Runs `f` on its own thread and returns its result, or ends the whole test process with a
/// message if it has not returned after `secs` seconds: a hang fails loudly instead of
/// blocking the test run (the engine's threads would keep a hung process alive).
pub fn within<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(Ok(v)) => v,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => {
            // Past the test harness's output capture, which exit() would swallow.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr().lock(),
                "HUNG: {what} did not return within {secs} s"
            );
            std::process::exit(101);
        }
    }
}

/// A well-formed Groth16 proof that proves nothing (generators): for engine tests that run
/// with the self-check off and do not need real proofs.
pub fn dummy_proof() -> bellperson::groth16::Proof<blstrs::Bls12> {
    use group::prime::PrimeCurveAffine;
    bellperson::groth16::Proof {
        a: blstrs::G1Affine::generator(),
        b: blstrs::G2Affine::generator(),
        c: blstrs::G1Affine::generator(),
    }
}

/// A gate a test opens once; threads wait at it.
#[derive(Default)]
pub struct Gate {
    open: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
}

impl Gate {
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
    /// Waits until the gate is open; panics after ten minutes (a test that never opens it
    /// fails instead of hanging).
    pub fn wait(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
        let mut g = self.open.lock().unwrap();
        while !*g {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "a test's gate was never opened");
            g = self.cv.wait_timeout(g, left).unwrap().0;
        }
    }
}

/// How long a test waits for one job: a hang then fails the test that waited, by its name
/// (`await_job` answers TIMEOUT), within minutes instead of at make test's deadline.
pub const JOB_DEADLINE: Option<std::time::Duration> = Some(std::time::Duration::from_secs(600));

/// Polls `cond` every 10 ms until it holds; fails the test after `secs` seconds.
pub fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let t = std::time::Instant::now();
    while !cond() {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(secs),
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A field of /proc/self/status in bytes (VmRSS, VmHWM).
pub fn proc_status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .expect("/proc/self/status")
}

/// Resets the process's peak RSS (VmHWM) to its current RSS.
pub fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS");
}

/// Opens the gate when dropped: a failing test must not leave a prover waiting at it (the
/// engine's drop waits for its provers).
pub struct Opens(pub std::sync::Arc<Gate>);

impl Drop for Opens {
    fn drop(&mut self) {
        self.0.open()
    }
}

/// Proves instantly with [`dummy_proof`]; optionally waits at a gate or panics first.
#[derive(Default)]
pub struct Stub {
    pub gate: Option<std::sync::Arc<Gate>>,
    /// Calls that panic before the stub starts answering.
    pub panics: std::sync::atomic::AtomicUsize,
    pub calls: std::sync::atomic::AtomicUsize,
    /// How long each proof takes.
    pub delay: std::time::Duration,
}

impl cuzk::prover::ProverBackend for Stub {
    fn name(&self) -> &'static str {
        "stub"
    }
    fn prepare(&self, _: &cuzk::params::Srs) -> cuzk::Result<()> {
        Ok(())
    }
    fn host_params(&self) -> bool {
        false
    }
    fn prove(
        &self,
        asg: &mut Option<cuzk::prover::ProvingAssignment>,
        _: &cuzk::params::Srs,
        _: blstrs::Scalar,
        _: blstrs::Scalar,
        _: &mut cuzk::prover::StageTimes,
    ) -> cuzk::Result<bellperson::groth16::Proof<blstrs::Bls12>> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Some(g) = &self.gate {
            g.wait();
        }
        std::thread::sleep(self.delay);
        if self
            .panics
            .fetch_update(
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
                |n| n.checked_sub(1),
            )
            .is_ok()
        {
            panic!("injected prover panic");
        }
        asg.take();
        Ok(dummy_proof())
    }
}
