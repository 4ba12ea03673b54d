//! The proving engine: a bounded synthesis pool feeding prover (device) workers, one job table,
//! a memory budget and a parameter cache. One engine per process (see [`global`]).
//!
//! ```text
//! submit ─► validate (parse, shape, replica id, vanilla proofs) ─► N partition items
//!   synthesis queue (priority, job seq, partition) ─► synthesis workers (reserve bytes first)
//!   prover queue (same order)                       ─► prover workers (one per device)
//!   all partitions in ─► self-check (Groth16 batch verify) ─► await returns the bytes
//! ```

mod config;
mod dispatch;
mod global;
mod health;
mod jobs;
pub mod queue;
mod status;
mod synth;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use parking_lot::{Condvar, Mutex};

pub use self::{
    config::{default_params_dir, Config},
    dispatch::{select_backends, DEFAULT_GPU_BATCH},
    global::{global, global_or_default, shutdown_global, start_global},
    health::DeviceStatus,
    jobs::{JobOutput, JobRequest, PartitionReport},
    status::EngineStatus,
};
use self::{
    dispatch::{prove_worker, ProveItem},
    jobs::{finish, Job, JobState},
    queue::PriorityQueue,
    status::Counters,
    synth::{prepare_backends, synth_worker, SynthItem},
};
use crate::{
    budget::{self, Budget},
    error::{Error, Result, Status},
    params::SrsCache,
    porep,
    prover::{cpu::CpuProver, ProverBackend},
    timeline::{EventKind, Sink, Timeline, NO_PARTITION},
};

struct Inner {
    cfg: Config,
    budget: Arc<Budget>,
    srs: SrsCache,
    jobs: Mutex<HashMap<u64, Arc<Job>>>,
    synth_q: PriorityQueue<SynthItem>,
    prove_q: PriorityQueue<ProveItem>,
    next_id: AtomicU64,
    running: AtomicBool,
    timeline: Timeline,
    counters: Counters,
    backends: Vec<Box<dyn ProverBackend>>,
    /// Index of each backend's first device in `devices` (a multi-GPU backend has several).
    slot_base: Vec<usize>,
    /// CPU prover for partitions a GPU failed on.
    fallback: CpuProver,
    /// Parameter ids every backend has prepared.
    prepared: Mutex<std::collections::HashSet<String>>,
    devices: Mutex<Vec<DeviceStatus>>,
}

/// The engine. Dropping the last handle shuts it down.
pub struct Engine {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    timeline_logs: Mutex<Vec<u64>>,
}

impl Engine {
    /// Starts an engine with its worker threads and the provers `cfg.devices` selects.
    pub fn start(cfg: Config) -> Result<Engine> {
        let cfg = cfg.resolved();
        let backends = select_backends(&cfg.devices, cfg.gpu_batch)?;
        Self::start_resolved(cfg, backends)
    }

    /// Starts an engine with the given prover backends, one prover worker each (partitions go
    /// to whichever is free).
    pub fn start_with_backends(
        cfg: Config,
        backends: Vec<Box<dyn ProverBackend>>,
    ) -> Result<Engine> {
        Self::start_resolved(cfg.resolved(), backends)
    }

    fn start_resolved(mut cfg: Config, backends: Vec<Box<dyn ProverBackend>>) -> Result<Engine> {
        if backends.is_empty() {
            return Err(Error::invalid_argument(
                "at least one prover backend is needed",
            ));
        }
        // Synthesis yields to the GPU call's host-side work by default (needs the backends).
        if cfg.synthesis_nice.is_none() {
            let gpu = backends.iter().any(|b| b.is_gpu());
            cfg.synthesis_nice = Some(
                std::env::var("CUZK_SYNTHESIS_NICE")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(if gpu { 10 } else { 0 }),
            );
        }
        let mut slot_base = Vec::new();
        let mut devices = Vec::new();
        for b in &backends {
            slot_base.push(devices.len());
            devices.extend(b.devices().into_iter().map(|name| DeviceStatus {
                name,
                enabled: true,
                ..Default::default()
            }));
        }
        let inner = Arc::new(Inner {
            budget: Budget::new(cfg.memory_budget),
            srs: SrsCache::new(cfg.params_dir.clone()),
            jobs: Mutex::new(HashMap::new()),
            synth_q: PriorityQueue::default(),
            prove_q: PriorityQueue::default(),
            next_id: AtomicU64::new(1),
            running: AtomicBool::new(true),
            timeline: Timeline::new(Instant::now()),
            counters: Counters::default(),
            backends,
            slot_base,
            fallback: CpuProver,
            prepared: Mutex::new(Default::default()),
            devices: Mutex::new(devices),
            cfg,
        });
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        let workers = (0..inner.cfg.synthesis_workers)
            .map(|w| {
                (
                    format!("cuzk-synth-{w}"),
                    Box::new(move |i: &Arc<Inner>| synth_worker(i, w))
                        as Box<dyn FnOnce(&Arc<Inner>) + Send>,
                )
            })
            .chain((0..inner.backends.len()).map(|d| {
                (
                    format!("cuzk-prove-{d}"),
                    Box::new(move |i: &Arc<Inner>| prove_worker(i, d))
                        as Box<dyn FnOnce(&Arc<Inner>) + Send>,
                )
            }));
        for (name, work) in workers {
            let i = inner.clone();
            match std::thread::Builder::new()
                .name(name)
                .spawn(move || work(&i))
            {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // Stop what was started before reporting.
                    inner.synth_q.close();
                    inner.prove_q.close();
                    threads.into_iter().for_each(|t| drop(t.join()));
                    return Err(Error::internal(format!(
                        "cannot start a worker thread: {e}"
                    )));
                }
            }
        }
        log::info!(
            "cuzk engine started: {} synthesis workers, devices [{}], budget {} MiB, params {}",
            inner.cfg.synthesis_workers,
            inner
                .backends
                .iter()
                .map(|b| b.name())
                .collect::<Vec<_>>()
                .join(","),
            inner.cfg.memory_budget >> 20,
            inner.cfg.params_dir.display()
        );
        let engine = Engine {
            inner,
            threads: Mutex::new(threads),
            timeline_logs: Mutex::new(Vec::new()),
        };
        if engine.inner.cfg.timeline_stderr {
            let id = engine.add_timeline_sink(Arc::new(|ev| {
                eprintln!("{}", crate::timeline::log_line(ev))
            }));
            engine.timeline_logs.lock().push(id);
        }
        if let Some(path) = &engine.inner.cfg.timeline_file {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    Error::invalid_argument(format!(
                        "cannot open timeline file {}: {e}",
                        path.display()
                    ))
                })?;
            let out = Mutex::new(std::io::LineWriter::new(file));
            let id = engine.add_timeline_sink(Arc::new(move |ev| {
                use std::io::Write;
                // A full disk must not stop proving: the line is dropped.
                let _ = writeln!(out.lock(), "{}", crate::timeline::log_line(ev));
            }));
            engine.timeline_logs.lock().push(id);
        }
        Ok(engine)
    }

    /// The configuration in force (automatic values resolved).
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }

    pub fn add_timeline_sink(&self, sink: Sink) -> u64 {
        self.inner.timeline.add(sink)
    }

    pub fn remove_timeline_sink(&self, id: u64) -> bool {
        self.inner.timeline.remove(id)
    }

    /// Loads the parameters a job needs (validating it), without queueing it.
    pub fn preload(&self, req: &JobRequest) -> Result<()> {
        let parsed = porep::parse_c1(&req.c1)?;
        let prepared = porep::prepare(parsed.c1, req.prover_id, req.sector_id, req.fixture)?;
        let srs = self
            .inner
            .srs
            .get(prepared.circuits.params_id(), &self.inner.budget)?;
        prepare_backends(&self.inner, &srs)
    }

    /// Validates a job and queues its partitions; returns the job id.
    pub fn submit(&self, req: JobRequest) -> Result<u64> {
        if !self.inner.running.load(Ordering::Acquire) {
            return Err(Error::new(Status::NotRunning, "the engine is shut down"));
        }
        let parsed = porep::parse_c1(&req.c1)?;
        if let Some(s) = parsed.envelope_sector {
            if s != req.sector_id {
                return Err(Error::invalid_input(format!(
                    "Commit2In.SectorNum is {s} but sector id {} was given",
                    req.sector_id
                )));
            }
        }
        let prepared = porep::prepare(parsed.c1, req.prover_id, req.sector_id, req.fixture)?;
        let circuits = prepared.circuits;
        let n = circuits.shape().partitions;
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let job = Arc::new(Job {
            id,
            seq: id,
            priority: req.priority,
            circuits: Mutex::new(Some(circuits)),
            submitted: Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
            state: Mutex::new(JobState {
                proofs: vec![None; n],
                reports: vec![PartitionReport::default(); n],
                remaining: n,
                result: None,
            }),
            done: Condvar::new(),
        });
        self.inner.jobs.lock().insert(id, job.clone());
        self.inner.timeline.emit(
            EventKind::JobQueued,
            id,
            NO_PARTITION,
            0,
            n as u64,
            &format!("{:?}", prepared.proof_type),
        );
        for k in 0..n {
            let item = SynthItem {
                job: job.clone(),
                partition: k,
            };
            if self.inner.synth_q.push(job.key(k), item).is_err() {
                finish(
                    &self.inner,
                    &job,
                    Err(Error::new(
                        Status::NotRunning,
                        "the engine is shutting down",
                    )),
                );
                break;
            }
        }
        Ok(id)
    }

    fn job(&self, id: u64) -> Result<Arc<Job>> {
        self.inner.jobs.lock().get(&id).cloned().ok_or_else(|| {
            Error::new(
                Status::NotFound,
                format!("no job {id} (never submitted, or already awaited)"),
            )
        })
    }

    /// Waits for a job. `timeout` None waits forever. On success or failure the job is removed
    /// from the table (a second await answers NOT_FOUND); on TIMEOUT it stays.
    pub fn await_job(&self, id: u64, timeout: Option<Duration>) -> Result<JobOutput> {
        let job = self.job(id)?;
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = job.state.lock();
        while st.result.is_none() {
            match deadline {
                None => job.done.wait(&mut st),
                Some(d) => {
                    if job.done.wait_until(&mut st, d).timed_out() && st.result.is_none() {
                        return Err(Error::new(
                            Status::Timeout,
                            format!("job {id} is still running"),
                        ));
                    }
                }
            }
        }
        let res = st.result.clone().expect("checked above");
        drop(st);
        self.inner.jobs.lock().remove(&id);
        res
    }

    /// Non-blocking state of a job: None while running.
    pub fn poll(&self, id: u64) -> Result<Option<Result<JobOutput>>> {
        let job = self.job(id)?;
        let st = job.state.lock();
        Ok(st.result.clone())
    }

    /// Cancels a job: queued partitions are dropped, running ones are abandoned when they
    /// finish, their memory is freed, and await answers CANCELLED. Cancelling a finished job
    /// changes nothing.
    pub fn cancel(&self, id: u64) -> Result<()> {
        let job = self.job(id)?;
        finish(
            &self.inner,
            &job,
            Err(Error::new(
                Status::Cancelled,
                format!("job {id} was cancelled"),
            )),
        );
        Ok(())
    }

    /// Synchronous prove: submit and wait.
    pub fn prove(&self, req: JobRequest) -> Result<JobOutput> {
        let id = self.submit(req)?;
        self.await_job(id, None)
    }

    /// Stops the engine: queued work is cancelled (awaits answer NOT_RUNNING), running
    /// partitions finish, threads are joined. Safe to call more than once.
    pub fn shutdown(&self) {
        let i = &self.inner;
        i.running.store(false, Ordering::Release);
        for item in i.synth_q.close() {
            finish(
                i,
                &item.job,
                Err(Error::new(Status::NotRunning, "the engine was shut down")),
            );
        }
        let threads = std::mem::take(&mut *self.threads.lock());
        // Synthesis workers exit when their queue is closed and empty; then the prover queue
        // drains and closes.
        let (synth, provers): (Vec<_>, Vec<_>) = threads.into_iter().partition(|t| {
            t.thread()
                .name()
                .is_some_and(|n| n.starts_with("cuzk-synth"))
        });
        for t in synth {
            let _ = t.join();
        }
        for item in i.prove_q.close() {
            finish(
                i,
                &item.job,
                Err(Error::new(Status::NotRunning, "the engine was shut down")),
            );
        }
        for t in provers {
            let _ = t.join();
        }
        for job in i.jobs.lock().values() {
            finish(
                i,
                job,
                Err(Error::new(Status::NotRunning, "the engine was shut down")),
            );
        }
        for id in std::mem::take(&mut *self.timeline_logs.lock()) {
            i.timeline.remove(id);
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}
