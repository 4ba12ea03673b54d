//! The hand-offs between the engine's stages: the work items its queues carry (a partition to
//! synthesize, a synthesized partition for a prover, a partition a GPU failed on for the CPU),
//! and how a finished job's items leave those queues. Every stage imports its items from here,
//! so no stage imports another's.

use std::{
    sync::{atomic::Ordering, Arc},
    time::Instant,
};

use blstrs::Scalar as Fr;

use super::{jobs::Job, Inner};
use crate::{budget::Reservation, params::Srs, pce, prover::ProvingAssignment};

/// A partition waiting for a synthesis worker.
pub(super) struct SynthItem {
    pub(super) job: Arc<Job>,
    pub(super) partition: usize,
    /// Its first proof failed the self-check: synthesized in full and proved on the CPU.
    pub(super) check_again: bool,
}

impl SynthItem {
    pub(super) fn new(job: Arc<Job>, partition: usize) -> Self {
        SynthItem {
            job,
            partition,
            check_again: false,
        }
    }
}

/// What synthesis hands a prover for one partition.
pub(super) enum Work {
    /// a, b, c and the assignment, computed on the host.
    Assignment(ProvingAssignment),
    /// The witness under the circuit's recording, for provers that compute a, b and c
    /// themselves (`ProverBackend::proves_witness`), and what made it.
    Witness(Arc<pce::Held>, pce::Witness, Maker),
}

/// What made a partition's witness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Maker {
    /// Witness synthesis (the circuit's code, its alloc closures only).
    Synthesis,
    /// The native generator (`crate::pce::native`).
    Native,
}

impl Maker {
    /// The SYNTH_END note of a partition whose witness it made: its product in the prover
    /// (`to_prover`) or on the host.
    pub(super) fn note(self, to_prover: bool) -> &'static str {
        match (self, to_prover) {
            (Maker::Native, true) => "native;witness",
            (Maker::Native, false) => "native",
            (Maker::Synthesis, true) => "pce;witness",
            (Maker::Synthesis, false) => "pce",
        }
    }
}

/// A synthesized partition waiting for a prover; holds its reserved memory.
pub(super) struct ProveItem {
    pub(super) job: Arc<Job>,
    pub(super) partition: usize,
    pub(super) srs: Arc<Srs>,
    pub(super) work: Work,
    pub(super) reservation: Reservation,
    pub(super) synth_end: Instant,
    /// Since when it waits for room on a GPU that had none (None: it has not waited).
    pub(super) room_since: Option<Instant>,
}

/// A partition a GPU failed on, waiting for the CPU.
pub(super) struct RetryItem {
    pub(super) item: ProveItem,
    /// Where it failed, and when its first prover picked it up.
    pub(super) slot: usize,
    pub(super) pickup: Instant,
    pub(super) r: Fr,
    pub(super) s: Fr,
}

/// Queues a partition for the CPU retry worker (its memory counted in `retry_held` while
/// queued); Err where the engine was shut down.
pub(super) fn push_retry(inner: &Inner, item: RetryItem) -> Result<(), ()> {
    let job = item.item.job.clone();
    let held = item.item.reservation.bytes();
    let key = job.key(item.item.partition);
    inner.retry_held.fetch_add(held, Ordering::AcqRel);
    if let Err(it) = inner.retry_q.push(key, item) {
        inner.retry_held.fetch_sub(held, Ordering::AcqRel);
        drop(it);
        return Err(());
    }
    if job.stopped() {
        // Ended meanwhile: its queued items are gone or about to be.
        release_retries_of(inner, job.id);
    }
    Ok(())
}

/// Takes a finished job's partitions out of the retry queue (their memory goes back now).
fn release_retries_of(inner: &Inner, job: u64) {
    for it in inner.retry_q.remove_if(|it| it.item.job.id == job) {
        inner
            .retry_held
            .fetch_sub(it.item.reservation.bytes(), Ordering::AcqRel);
    }
}

/// Takes every queued partition of a finished job out of the queues: their memory goes back now,
/// not when a worker pops them.
pub(super) fn release_queued_of(inner: &Inner, job: u64) {
    drop(inner.synth_q.remove_if(|it| it.job.id == job));
    drop(inner.prove_q.remove_if(|it| it.job.id == job));
    release_retries_of(inner, job);
}
