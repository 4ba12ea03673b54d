//! Jobs: what a caller submits, what it gets back, and the engine's table of jobs.
//!
//! A job enters the table at submit and leaves it when an await returns its result, or, if
//! nobody collects it, a retention period after it finished (`Config::job_retention`; at most
//! a minute for a cancelled job, whose caller already knows how it ended). Ids are unique for
//! the life of the process, so a stale id never reaches another job, even across engine
//! restarts.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use bellperson::groth16::Proof;
use blstrs::Bls12;
use parking_lot::{Condvar, Mutex};

use super::{config::CANCELLED_RETENTION, queue::Key};
use crate::{
    error::{Error, Result, Status},
    porep::{aggregate::NiSeal, Class, FixtureShape, SealCircuits},
    prover::StageTimes,
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
    /// Proved by the CPU after a GPU failed on it.
    pub cpu_retry: bool,
}

/// A finished job.
#[derive(Clone, Debug)]
pub struct JobOutput {
    /// The job's id.
    pub job: u64,
    /// `partitions × 192` bytes.
    pub proof: Vec<u8>,
    pub partitions: Vec<PartitionReport>,
    pub wall_ms: f64,
    pub verify_ms: f64,
    pub verified: bool,
    /// Non-interactive PoRep: milliseconds spent aggregating the partition proofs (SnarkPack
    /// v2) and checking the aggregate; `proof` is then the aggregate. 0 for other jobs.
    pub aggregate_ms: f64,
}

/// Job ids, unique for the life of the process.
static NEXT_JOB: AtomicU64 = AtomicU64::new(1);

/// A partition whose first proof failed the self-check, proved again on the CPU.
#[derive(Clone, Copy, Debug)]
pub(super) struct CheckAgain {
    /// Its first proof was made from a witness under the circuit's recording.
    pub(super) under_recording: bool,
}

pub(super) struct JobState {
    pub(super) proofs: Vec<Option<Proof<Bls12>>>,
    pub(super) reports: Vec<PartitionReport>,
    /// How each partition was last synthesized (the SYNTH_END detail: "pce;witness", "full", ...).
    pub(super) paths: Vec<&'static str>,
    /// Partitions proved again after their first proof failed the self-check.
    pub(super) again: Vec<Option<CheckAgain>>,
    pub(super) remaining: usize,
    pub(super) result: Option<Result<JobOutput>>,
    pub(super) finished_at: Option<Instant>,
}

pub(super) struct Job {
    pub(super) id: u64,
    pub(super) priority: i32,
    pub(super) class: Class,
    /// The job's circuits (vanilla proofs: up to ~50 MB for 32GiB); dropped when the job ends,
    /// so that a result nobody awaits costs little.
    pub(super) circuits: Mutex<Option<Arc<dyn SealCircuits>>>,
    pub(super) submitted: Instant,
    /// Set once the job has a result (done, failed, cancelled): remaining work is dropped.
    pub(super) stop: Arc<AtomicBool>,
    pub(super) state: Mutex<JobState>,
    pub(super) done: Condvar,
    /// Non-interactive PoRep: what aggregates the partition proofs into the job's proof.
    pub(super) aggregate: Option<NiSeal>,
}

impl Job {
    pub(super) fn new(
        priority: i32,
        class: Class,
        circuits: Arc<dyn SealCircuits>,
        aggregate: Option<NiSeal>,
    ) -> Job {
        let n = circuits.shape().partitions;
        Job {
            id: NEXT_JOB.fetch_add(1, Ordering::Relaxed),
            priority,
            class,
            aggregate,
            circuits: Mutex::new(Some(circuits)),
            submitted: Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
            state: Mutex::new(JobState {
                proofs: vec![None; n],
                reports: vec![PartitionReport::default(); n],
                paths: vec![""; n],
                again: vec![None; n],
                remaining: n,
                result: None,
                finished_at: None,
            }),
            done: Condvar::new(),
        }
    }

    pub(super) fn key(&self, partition: usize) -> Key {
        Key {
            class: self.class as u8,
            priority: self.priority,
            job_seq: self.id,
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

/// The jobs submitted and not yet collected.
pub(super) struct JobTable {
    jobs: Mutex<HashMap<u64, Arc<Job>>>,
    retention: Duration,
    max_unfinished: usize,
}

impl JobTable {
    pub(super) fn new(retention: Duration, max_unfinished: usize) -> Self {
        JobTable {
            jobs: Mutex::new(HashMap::new()),
            retention,
            max_unfinished,
        }
    }

    /// Adds a job unless `max_unfinished` jobs are already queued or running.
    pub(super) fn insert(&self, job: Arc<Job>) -> Result<()> {
        let mut jobs = self.jobs.lock();
        let unfinished = jobs
            .values()
            .filter(|j| j.state.lock().result.is_none())
            .count();
        if unfinished >= self.max_unfinished {
            return Err(Error::new(
                Status::ResourceExhausted,
                format!(
                    "{unfinished} jobs are queued or running, the most this engine takes \
                     (max_jobs); submit again when one has finished"
                ),
            ));
        }
        jobs.insert(job.id, job);
        Ok(())
    }

    pub(super) fn get(&self, id: u64) -> Result<Arc<Job>> {
        self.jobs.lock().get(&id).cloned().ok_or_else(|| {
            Error::new(
                Status::NotFound,
                format!(
                    "no job {id}: never submitted to this engine, already awaited, or finished \
                     more than {} s ago without being awaited",
                    self.retention.as_secs()
                ),
            )
        })
    }

    pub(super) fn remove(&self, id: u64) {
        self.jobs.lock().remove(&id);
    }

    pub(super) fn all(&self) -> Vec<Arc<Job>> {
        self.jobs.lock().values().cloned().collect()
    }

    /// Drops finished jobs kept longer than their retention.
    pub(super) fn reap(&self) {
        let now = Instant::now();
        self.jobs.lock().retain(|_, j| {
            let st = j.state.lock();
            let keep = match (&st.result, st.finished_at) {
                (Some(Err(e)), Some(at)) if e.status == Status::Cancelled => {
                    now - at < self.retention.min(CANCELLED_RETENTION)
                }
                (Some(_), Some(at)) => now - at < self.retention,
                _ => true,
            };
            keep
        });
    }

    /// (unfinished, finished and waiting to be collected).
    pub(super) fn counts(&self) -> (usize, usize) {
        let jobs = self.jobs.lock();
        let unfinished = jobs
            .values()
            .filter(|j| j.state.lock().result.is_none())
            .count();
        (unfinished, jobs.len() - unfinished)
    }
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
