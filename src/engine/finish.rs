//! The end of a job, wherever it ends (its last partition proved, a failure in any stage, a
//! cancel, a shutdown): its result set once, its event recorded, its waiters woken, and its
//! queued partitions' memory given back.

use std::{sync::atomic::Ordering, time::Instant};

use super::{
    handoff::release_queued_of,
    jobs::{Job, JobOutput},
    Inner,
};
use crate::{
    error::{Result, Status},
    timeline::{EventKind, NO_PARTITION},
};

/// Sets a job's result once; later calls are ignored. Stops its remaining partitions and gives
/// back, at once, the memory of those that were waiting in a queue.
pub(super) fn finish(inner: &Inner, job: &Job, res: Result<JobOutput>) {
    let mut st = job.state.lock();
    if st.result.is_some() {
        return;
    }
    job.stop.store(true, Ordering::Release);
    let (kind, detail) = match &res {
        Ok(_) => {
            inner.counters.completed.fetch_add(1, Ordering::Relaxed);
            inner.counters.job_done(
                job.class as usize,
                job.submitted.elapsed().as_millis() as u64,
            );
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
    st.finished_at = Some(Instant::now());
    // Free the proofs of abandoned partitions.
    st.proofs.iter_mut().for_each(|p| *p = None);
    // Recorded before any waiter can see the result: a caller that awaits the job and then
    // unregisters its callback has seen this event.
    inner.timeline.emit(
        kind,
        job.id,
        NO_PARTITION,
        0,
        job.submitted.elapsed().as_millis() as u64,
        &detail,
    );
    drop(st);
    job.circuits.lock().take();
    job.done.notify_all();
    // Queued partitions hold reserved memory: drop them now, not when a worker pops them.
    release_queued_of(inner, job.id);
}
