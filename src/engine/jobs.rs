//! Jobs: what a caller submits, what it gets back, and the engine's record of each job.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use bellperson::groth16::Proof;
use blstrs::Bls12;
use parking_lot::{Condvar, Mutex};

use super::{queue::Key, Inner};
use crate::{
    error::{Error, Result, Status},
    porep::{FixtureShape, SealCircuits},
    prover::StageTimes,
    timeline::{EventKind, NO_PARTITION},
};

/// One job's request.
#[derive(Clone, Debug)]
pub struct JobRequest {
    pub c1: Vec<u8>,
    pub sector_id: u64,
    pub prover_id: [u8; 32],
    /// Higher runs first.
    pub priority: i32,
    /// Test-only geometry (see [`FixtureShape`]); default: the proof type's own.
    pub fixture: FixtureShape,
}

/// Timing of one partition, milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PartitionReport {
    pub partition: usize,
    /// From job submission to synthesis start.
    pub queue_ms: f64,
    pub synth_ms: f64,
    /// From synthesis end to prover pickup.
    pub wait_ms: f64,
    pub prove_ms: f64,
    pub stages: StageTimes,
    pub synth_worker: usize,
    pub reserved_bytes: u64,
    /// Index (in `status().devices`) of the device that proved it.
    pub device: usize,
}

/// A finished job.
#[derive(Clone, Debug)]
pub struct JobOutput {
    /// `partitions × 192` bytes.
    pub proof: Vec<u8>,
    pub partitions: Vec<PartitionReport>,
    pub wall_ms: f64,
    pub verify_ms: f64,
    pub verified: bool,
}

pub(super) struct JobState {
    pub(super) proofs: Vec<Option<Proof<Bls12>>>,
    pub(super) reports: Vec<PartitionReport>,
    pub(super) remaining: usize,
    pub(super) result: Option<Result<JobOutput>>,
}

pub(super) struct Job {
    pub(super) id: u64,
    pub(super) seq: u64,
    pub(super) priority: i32,
    /// The job's circuits (vanilla proofs: up to ~50 MB for 32GiB); dropped when the job ends,
    /// so that a result nobody awaits costs little.
    pub(super) circuits: Mutex<Option<Arc<dyn SealCircuits>>>,
    pub(super) submitted: Instant,
    /// Set once the job has a result (done, failed, cancelled): remaining work is dropped.
    pub(super) stop: Arc<AtomicBool>,
    pub(super) state: Mutex<JobState>,
    pub(super) done: Condvar,
}

impl Job {
    pub(super) fn key(&self, partition: usize) -> Key {
        Key {
            priority: self.priority,
            job_seq: self.seq,
            partition,
        }
    }
    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
    /// The circuits, unless the job has ended.
    pub(super) fn circuits(&self) -> Result<Arc<dyn SealCircuits>> {
        self.circuits
            .lock()
            .clone()
            .ok_or_else(|| Error::new(Status::Cancelled, format!("job {} has ended", self.id)))
    }
}

/// Sets a job's result once; later calls are ignored. Stops its remaining partitions.
pub(super) fn finish(inner: &Inner, job: &Job, res: Result<JobOutput>) {
    let mut st = job.state.lock();
    if st.result.is_some() {
        return;
    }
    job.stop.store(true, Ordering::Release);
    let (kind, detail) = match &res {
        Ok(_) => {
            inner.counters.completed.fetch_add(1, Ordering::Relaxed);
            (EventKind::JobDone, String::new())
        }
        Err(e) if e.status == Status::Cancelled => {
            inner.counters.cancelled.fetch_add(1, Ordering::Relaxed);
            (EventKind::JobCancelled, String::new())
        }
        Err(e) => {
            inner.counters.failed.fetch_add(1, Ordering::Relaxed);
            (EventKind::JobFailed, e.to_string())
        }
    };
    if let Err(e) = &res {
        if e.status != Status::Cancelled {
            log::warn!("job {} failed: {e}", job.id);
        }
    }
    st.result = Some(res);
    // Free the proofs of abandoned partitions, and the circuits' data.
    st.proofs.iter_mut().for_each(|p| *p = None);
    drop(st);
    job.circuits.lock().take();
    job.done.notify_all();
    inner.timeline.emit(
        kind,
        job.id,
        NO_PARTITION,
        0,
        job.submitted.elapsed().as_millis() as u64,
        &detail,
    );
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
