//! The proving engine: a bounded synthesis pool feeding prover (device) workers, one job table,
//! a memory budget and a parameter cache. One engine per process (see [`global`]).
//!
//! ```text
//! submit ─► validate (parse, shape, replica id, vanilla proofs) ─► N partition items
//!   synthesis queue (priority, job seq, partition) ─► synthesis workers (reserve bytes first)
//!   prover queue (same order)                       ─► prover workers (one per device)
//!   all partitions in ─► self-check (Groth16 batch verify) ─► await returns the bytes
//! ```

pub mod queue;

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use bellperson::groth16::{verify_proofs_batch, Proof};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use once_cell::sync::Lazy;
use parking_lot::{Condvar, Mutex};
use rand::rngs::OsRng;

use self::queue::{Key, PriorityQueue};
use crate::{
    budget::{self, Budget, Reservation},
    error::{Error, Result, Status},
    params::{Srs, SrsCache},
    porep::{self, FixtureShape, SealCircuits},
    prover::{cpu::CpuProver, ProverBackend, ProvingAssignment, StageTimes},
    timeline::{EventKind, Sink, Timeline, NO_PARTITION},
};

/// Engine configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Partitions synthesized at once (each on its own thread). 0: automatic.
    pub synthesis_workers: usize,
    /// Synthesized partitions allowed to wait for a prover before synthesis pauses (keeps
    /// memory to what the provers can use soon). 0: automatic (two calls' worth per prover:
    /// 2 for the CPU, 2 × GPUs × partitions per GPU call for the GPU backend).
    pub synthesis_lookahead: usize,
    /// Memory budget in bytes for resident parameters plus in-flight partitions. 0: automatic
    /// (90% of the memory available at start).
    pub memory_budget: u64,
    /// Directory holding the `.params`/`.vk` files. Empty: `FIL_PROOFS_PARAMETER_CACHE`, else
    /// `/var/tmp/filecoin-proof-parameters`.
    pub params_dir: PathBuf,
    /// Verify every job's proofs before returning them.
    pub self_check: bool,
    /// Write `TIMELINE,...` log lines to stderr.
    pub timeline_stderr: bool,
    /// Append `TIMELINE,...` log lines to this file.
    pub timeline_file: Option<PathBuf>,
    /// Which provers to use: `auto` (every usable GPU, else the CPU), `cpu`, `N` (the first N
    /// GPUs). Empty: `CUZK_DEVICES`, else `auto`. A build without the `cuda` feature always
    /// proves on the CPU.
    pub devices: String,
    /// Partitions proved per GPU in one call (0: `CUZK_GPU_BATCH`, else automatic).
    pub gpu_batch: usize,
    /// Nice value of the synthesis threads (`CUZK_SYNTHESIS_NICE`; default 10 when a GPU
    /// proves, 0 otherwise): the GPU call's host-side work goes first on a loaded host.
    pub synthesis_nice: Option<i32>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            synthesis_workers: 0,
            synthesis_lookahead: 0,
            memory_budget: 0,
            params_dir: PathBuf::new(),
            self_check: true,
            // CUZK_TIMELINE=1 or =stderr: log lines to stderr; =<path>: append them to a file.
            timeline_stderr: matches!(
                std::env::var("CUZK_TIMELINE").as_deref(),
                Ok("1" | "stderr")
            ),
            timeline_file: std::env::var_os("CUZK_TIMELINE")
                .filter(|v| !v.is_empty() && v != "1" && v != "stderr" && v != "0")
                .map(PathBuf::from),
            devices: String::new(),
            gpu_batch: 0,
            synthesis_nice: None,
        }
    }
}

/// Default parameter directory, as filecoin-proofs resolves it.
pub fn default_params_dir() -> PathBuf {
    std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/filecoin-proof-parameters"))
}

impl Config {
    fn resolved(mut self) -> Config {
        if self.params_dir.as_os_str().is_empty() {
            self.params_dir = default_params_dir();
        }
        if self.memory_budget == 0 {
            self.memory_budget = budget::default_budget();
        }
        if self.devices.is_empty() {
            self.devices = std::env::var("CUZK_DEVICES").unwrap_or_else(|_| "auto".into());
        }
        if self.gpu_batch == 0 {
            self.gpu_batch = std::env::var("CUZK_GPU_BATCH")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(DEFAULT_GPU_BATCH);
        }
        if self.synthesis_workers == 0 {
            let cores = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1);
            // One per core: the memory budget, not this, bounds what is in flight.
            self.synthesis_workers = cores.max(2);
        }
        self
    }
}

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

struct JobState {
    proofs: Vec<Option<Proof<Bls12>>>,
    reports: Vec<PartitionReport>,
    remaining: usize,
    result: Option<Result<JobOutput>>,
}

struct Job {
    id: u64,
    seq: u64,
    priority: i32,
    /// The job's circuits (vanilla proofs: up to ~50 MB for 32GiB); dropped when the job ends,
    /// so that a result nobody awaits costs little.
    circuits: Mutex<Option<Arc<dyn SealCircuits>>>,
    submitted: Instant,
    /// Set once the job has a result (done, failed, cancelled): remaining work is dropped.
    stop: Arc<AtomicBool>,
    state: Mutex<JobState>,
    done: Condvar,
}

impl Job {
    fn key(&self, partition: usize) -> Key {
        Key {
            priority: self.priority,
            job_seq: self.seq,
            partition,
        }
    }
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
    /// The circuits, unless the job has ended.
    fn circuits(&self) -> Result<Arc<dyn SealCircuits>> {
        self.circuits
            .lock()
            .clone()
            .ok_or_else(|| Error::new(Status::Cancelled, format!("job {} has ended", self.id)))
    }
}

struct SynthItem {
    job: Arc<Job>,
    partition: usize,
}

struct ProveItem {
    job: Arc<Job>,
    partition: usize,
    srs: Arc<Srs>,
    assignment: ProvingAssignment,
    _reservation: Reservation,
    synth_end: Instant,
}

/// Counters for status reports.
#[derive(Default)]
struct Counters {
    completed: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
    cpu_retries: AtomicU64,
    synthesizing: AtomicU64,
    proving: AtomicU64,
}

/// What one prover device is doing.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceStatus {
    pub name: String,
    /// (job, partition) being proved, if any.
    pub current: Option<(u64, usize)>,
    pub partitions_proved: u64,
    /// False once taken out of service (by `Engine::set_device_enabled` or after repeated
    /// errors); its partitions go to the other devices, or to the CPU.
    pub enabled: bool,
    /// Partitions failed in a row on this device.
    pub consecutive_failures: u32,
}

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

/// A snapshot of the engine's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EngineStatus {
    pub running: bool,
    pub jobs_in_flight: usize,
    /// Partitions waiting for a synthesis worker.
    pub synthesis_queue: usize,
    /// Partitions being synthesized.
    pub synthesizing: u64,
    /// Partitions synthesized, waiting for a prover.
    pub prover_queue: usize,
    /// Partitions being proved.
    pub proving: u64,
    pub memory_budget: u64,
    pub memory_reserved: u64,
    pub memory_peak: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Partitions a GPU failed on and the CPU proved instead.
    pub cpu_retries: u64,
    pub resident_params: Vec<String>,
    pub devices: Vec<DeviceStatus>,
}

impl EngineStatus {
    /// The status as Prometheus text exposition.
    pub fn prometheus(&self) -> String {
        let mut s = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
            s.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
            for (labels, v) in samples {
                s.push_str(&format!("{name}{labels} {v}\n"));
            }
        };
        let one = |v: f64| vec![(String::new(), v)];
        metric(
            "cuzk_up",
            "gauge",
            "1 while the engine runs.",
            &one(self.running as u8 as f64),
        );
        metric(
            "cuzk_jobs_completed_total",
            "counter",
            "Jobs that returned a verified proof.",
            &one(self.completed as f64),
        );
        metric(
            "cuzk_jobs_failed_total",
            "counter",
            "Jobs that ended with an error.",
            &one(self.failed as f64),
        );
        metric(
            "cuzk_jobs_cancelled_total",
            "counter",
            "Jobs cancelled.",
            &one(self.cancelled as f64),
        );
        metric(
            "cuzk_partitions_cpu_retried_total",
            "counter",
            "Partitions a GPU failed on, proved again on the CPU.",
            &one(self.cpu_retries as f64),
        );
        metric(
            "cuzk_jobs_in_flight",
            "gauge",
            "Jobs submitted and not finished.",
            &one(self.jobs_in_flight as f64),
        );
        metric(
            "cuzk_partitions",
            "gauge",
            "Partitions by state.",
            &[
                ("{state=\"queued\"}".into(), self.synthesis_queue as f64),
                ("{state=\"synthesizing\"}".into(), self.synthesizing as f64),
                ("{state=\"ready\"}".into(), self.prover_queue as f64),
                ("{state=\"proving\"}".into(), self.proving as f64),
            ],
        );
        metric(
            "cuzk_memory_budget_bytes",
            "gauge",
            "Memory budget.",
            &one(self.memory_budget as f64),
        );
        metric(
            "cuzk_memory_reserved_bytes",
            "gauge",
            "Memory reserved now.",
            &one(self.memory_reserved as f64),
        );
        metric(
            "cuzk_memory_reserved_peak_bytes",
            "gauge",
            "Highest reservation.",
            &one(self.memory_peak as f64),
        );
        metric(
            "cuzk_params_resident",
            "gauge",
            "Parameter sets in memory.",
            &one(self.resident_params.len() as f64),
        );
        let dev = |f: &dyn Fn(&DeviceStatus) -> f64| -> Vec<(String, f64)> {
            self.devices
                .iter()
                .enumerate()
                .map(|(i, d)| (format!("{{device=\"{i}\",name=\"{}\"}}", d.name), f(d)))
                .collect()
        };
        metric(
            "cuzk_device_busy",
            "gauge",
            "1 while the device proves a partition.",
            &dev(&|d| d.current.is_some() as u8 as f64),
        );
        metric(
            "cuzk_device_enabled",
            "gauge",
            "1 while the device is in service.",
            &dev(&|d| d.enabled as u8 as f64),
        );
        metric(
            "cuzk_device_consecutive_failures",
            "gauge",
            "Partitions failed in a row on the device (3 take it out of service).",
            &dev(&|d| d.consecutive_failures as f64),
        );
        metric(
            "cuzk_device_partitions_total",
            "counter",
            "Partitions proved by the device.",
            &dev(&|d| d.partitions_proved as f64),
        );
        s
    }
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

    /// Takes a prover device out of service (`on = false`) or back in, by its index in
    /// `status().devices`. Partitions in flight finish; later ones go to the other devices
    /// (the CPU if none is left).
    pub fn set_device_enabled(&self, device: usize, on: bool) -> Result<()> {
        let i = &self.inner;
        let d = i
            .slot_base
            .iter()
            .rposition(|&b| b <= device)
            .filter(|_| device < i.devices.lock().len())
            .ok_or_else(|| Error::invalid_argument(format!("no device {device}")))?;
        if !set_device(i, d, device - i.slot_base[d], on) {
            return Err(Error::new(
                Status::Unsupported,
                format!("device {device} cannot be taken out of service"),
            ));
        }
        Ok(())
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

    pub fn status(&self) -> EngineStatus {
        let i = &self.inner;
        EngineStatus {
            running: i.running.load(Ordering::Acquire),
            jobs_in_flight: i
                .jobs
                .lock()
                .values()
                .filter(|j| j.state.lock().result.is_none())
                .count(),
            synthesis_queue: i.synth_q.len(),
            synthesizing: i.counters.synthesizing.load(Ordering::Relaxed),
            prover_queue: i.prove_q.len(),
            proving: i.counters.proving.load(Ordering::Relaxed),
            memory_budget: i.budget.total(),
            memory_reserved: i.budget.used(),
            memory_peak: i.budget.peak(),
            completed: i.counters.completed.load(Ordering::Relaxed),
            failed: i.counters.failed.load(Ordering::Relaxed),
            cancelled: i.counters.cancelled.load(Ordering::Relaxed),
            cpu_retries: i.counters.cpu_retries.load(Ordering::Relaxed),
            resident_params: i.srs.resident(),
            devices: i.devices.lock().clone(),
        }
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

/// Sets a job's result once; later calls are ignored. Stops its remaining partitions.
fn finish(inner: &Inner, job: &Job, res: Result<JobOutput>) {
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

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Partitions per GPU call unless configured (BENCHMARKS.md, section 4).
pub const DEFAULT_GPU_BATCH: usize = 4;

/// Chooses the prover backends for a `devices` setting (see [`Config::devices`]), with
/// `gpu_batch` partitions per GPU call.
pub fn select_backends(devices: &str, gpu_batch: usize) -> Result<Vec<Box<dyn ProverBackend>>> {
    let want = devices.trim().to_ascii_lowercase();
    let cpu = || -> Vec<Box<dyn ProverBackend>> { vec![Box::new(CpuProver)] };
    let limit = match want.as_str() {
        "" | "auto" | "gpu" => None,
        "cpu" | "none" | "0" => return Ok(cpu()),
        n => Some(n.parse::<usize>().map_err(|_| {
            Error::invalid_argument(format!(
                "devices must be `auto`, `cpu` or a number of GPUs, not {devices:?} \
                 (to pick particular GPUs, set CUDA_VISIBLE_DEVICES)"
            ))
        })?),
    };
    #[cfg(feature = "cuda")]
    {
        match crate::prover::gpu::discover() {
            crate::prover::gpu::Discovery::Devices(found, visible) => {
                if let Some(n) = limit {
                    if n > found.len() {
                        return Err(Error::invalid_argument(format!(
                            "{n} GPUs asked for, {} usable found",
                            found.len()
                        )));
                    }
                }
                // supraseal addresses GPUs by position from 0: use the leading run of usable
                // ones, up to the number asked for.
                let mut chosen: Vec<_> = found
                    .into_iter()
                    .enumerate()
                    .take_while(|(i, d)| *i == d.ordinal)
                    .map(|(_, d)| d)
                    .collect();
                chosen.truncate(limit.unwrap_or(usize::MAX));
                if chosen.is_empty() {
                    log::warn!(
                        "cuzk: GPU 0 is not usable (supraseal needs it): proving on the CPU"
                    );
                    return Ok(cpu());
                }
                for d in &chosen {
                    log::info!(
                        "cuzk: proving on GPU {} ({}, sm_{}{}, {} SMs, {} MiB free)",
                        d.ordinal,
                        d.name,
                        d.capability.0,
                        d.capability.1,
                        d.multiprocessors,
                        d.free_mem >> 20
                    );
                }
                if chosen.len() < visible {
                    log::warn!(
                        "cuzk: using {} of the {visible} GPUs this process sees: one partition per GPU \
                         per call (supraseal spreads a call over every visible GPU); to pick GPUs \
                         and keep batched calls, set CUDA_VISIBLE_DEVICES instead",
                        chosen.len()
                    );
                }
                Ok(vec![Box::new(crate::prover::gpu::SuprasealProver::new(
                    chosen, visible, gpu_batch,
                ))])
            }
            crate::prover::gpu::Discovery::None(why) => {
                if limit.is_some() || want == "gpu" {
                    return Err(Error::new(
                        Status::Unsupported,
                        format!("no usable GPU: {why}"),
                    ));
                }
                log::warn!("cuzk: no usable GPU ({why}): proving on the CPU");
                Ok(cpu())
            }
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = gpu_batch;
        if limit.is_some() || want == "gpu" {
            return Err(Error::new(
                Status::Unsupported,
                "this cuzk was built without the `cuda` feature: only `cpu` devices",
            ));
        }
        Ok(cpu())
    }
}

/// Lets every backend load a circuit's parameters the first time they are used.
fn prepare_backends(inner: &Inner, srs: &Srs) -> Result<()> {
    if inner.prepared.lock().contains(&srs.id) {
        return Ok(());
    }
    for b in &inner.backends {
        b.prepare(srs)?;
    }
    inner.prepared.lock().insert(srs.id.clone());
    Ok(())
}

fn synth_worker(inner: &Arc<Inner>, w: usize) {
    let nice = inner.cfg.synthesis_nice.unwrap_or(0);
    if nice != 0 {
        if let Err(e) = crate::sys::os::set_thread_nice(nice) {
            if w == 0 {
                log::warn!("cannot lower the synthesis threads' priority: {e}");
            }
        }
    }
    loop {
        // Two calls' worth per prover: a multi-GPU or batching backend takes several
        // partitions per call (re-read: devices can leave service).
        let lookahead = match inner.cfg.synthesis_lookahead {
            0 => {
                2 * inner
                    .backends
                    .iter()
                    .map(|b| b.max_batch().max(1))
                    .sum::<usize>()
            }
            n => n,
        };
        // Do not run ahead of the provers: synthesized partitions hold their memory until proved.
        inner
            .prove_q
            .wait_below(lookahead, || !inner.running.load(Ordering::Acquire));
        let Some((key, item)) = inner.synth_q.pop() else {
            break;
        };
        let SynthItem { job, partition } = item;
        if job.stopped() {
            continue;
        }
        if let Err(e) = synthesize_one(inner, w, key, &job, partition) {
            finish(inner, &job, Err(e));
        }
    }
}

fn synthesize_one(inner: &Arc<Inner>, w: usize, key: Key, job: &Arc<Job>, k: usize) -> Result<()> {
    let Ok(circuits) = job.circuits() else {
        return Ok(());
    };
    let srs = inner.srs.get(circuits.params_id(), &inner.budget)?;
    prepare_backends(inner, &srs)?;
    let bytes = srs.size.working_bytes();
    let stop = || {
        if job.stopped() {
            Some(Error::new(Status::Cancelled, "stopped"))
        } else if !inner.running.load(Ordering::Acquire) {
            Some(Error::new(Status::NotRunning, "the engine was shut down"))
        } else {
            None
        }
    };
    let reservation =
        match inner
            .budget
            .acquire(bytes, &format!("partition {k} of job {}", job.id), stop)
        {
            Ok(r) => r,
            Err(e) if e.status == Status::Cancelled => return Ok(()),
            Err(e) => return Err(e),
        };
    let start = Instant::now();
    inner
        .timeline
        .emit(EventKind::SynthStart, job.id, k as u32, w as u32, bytes, "");
    inner.counters.synthesizing.fetch_add(1, Ordering::Relaxed);
    let synthesized = circuits.synthesize(k, Some(srs.size), Some(job.stop.clone()));
    drop(circuits);
    inner.counters.synthesizing.fetch_sub(1, Ordering::Relaxed);
    let assignment = match synthesized {
        Ok(a) => a,
        // Abandoned: the job ended while this partition was being synthesized.
        Err(_) if job.stopped() => {
            let ms = start.elapsed().as_millis() as u64;
            inner.timeline.emit(
                EventKind::SynthEnd,
                job.id,
                k as u32,
                w as u32,
                ms,
                "aborted",
            );
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let synth_end = Instant::now();
    let synth_ms = ms(synth_end - start);
    inner.timeline.emit(
        EventKind::SynthEnd,
        job.id,
        k as u32,
        w as u32,
        synth_ms as u64,
        "",
    );
    {
        let mut st = job.state.lock();
        let r = &mut st.reports[k];
        r.partition = k;
        r.queue_ms = ms(start - job.submitted);
        r.synth_ms = synth_ms;
        r.synth_worker = w;
        r.reserved_bytes = bytes;
    }
    if job.stopped() {
        return Ok(());
    }
    let item = ProveItem {
        job: job.clone(),
        partition: k,
        srs,
        assignment,
        _reservation: reservation,
        synth_end,
    };
    inner
        .timeline
        .emit(EventKind::ChanSend, job.id, k as u32, w as u32, 0, "");
    if inner.prove_q.push(key, item).is_err() {
        return Err(Error::new(Status::NotRunning, "the engine was shut down"));
    }
    Ok(())
}

/// Consecutive failures after which a device is taken out of service.
const DEVICE_FAILURE_LIMIT: u32 = 3;

/// Puts device `sub` of backend `d` in or out of service, in the backend and in the engine's
/// status; false where the backend cannot.
fn set_device(inner: &Inner, d: usize, sub: usize, on: bool) -> bool {
    if !inner.backends[d].set_enabled(sub, on) {
        return false;
    }
    let slot = inner.slot_base[d] + sub;
    let mut devs = inner.devices.lock();
    devs[slot].enabled = on;
    if on {
        devs[slot].consecutive_failures = 0;
    }
    log::info!(
        "device {slot} ({}) {}",
        devs[slot].name,
        if on { "enabled" } else { "disabled" }
    );
    true
}

fn prove_worker(inner: &Arc<Inner>, d: usize) {
    let backend = &inner.backends[d];
    while let Some((_, first)) = inner.prove_q.pop() {
        // A multi-GPU backend takes one ready partition per usable device (same parameters).
        let width = backend.max_batch().max(1);
        let mut items = vec![first];
        while items.len() < width {
            let id = items[0].srs.id.clone();
            match inner.prove_q.try_pop_if(|it| it.srs.id == id) {
                Some((_, it)) => items.push(it),
                None => break,
            }
        }
        items.retain(|it| !it.job.stopped());
        if !items.is_empty() {
            prove_items(inner, d, backend.as_ref(), items);
        }
    }
}

/// Where a partition was proved, for its report and events.
struct Proved {
    slot: usize,
    result: Result<Proof<Bls12>>,
    stages: StageTimes,
    /// Proved by the CPU fallback (after a GPU error, or with every GPU out of service).
    on_cpu: bool,
}

fn prove_items(inner: &Arc<Inner>, d: usize, backend: &dyn ProverBackend, items: Vec<ProveItem>) {
    let base = inner.slot_base[d];
    let pickup = Instant::now();
    let n = items.len();
    let srs = items[0].srs.clone();
    let rs: Vec<Fr> = (0..n).map(|_| Fr::random(OsRng)).collect();
    let ss: Vec<Fr> = (0..n).map(|_| Fr::random(OsRng)).collect();
    let mut asgs: Vec<Option<ProvingAssignment>> = Vec::with_capacity(n);
    let mut metas = Vec::with_capacity(n);
    for it in items {
        let ProveItem {
            job,
            partition,
            srs: _,
            assignment,
            _reservation,
            synth_end,
        } = it;
        asgs.push(Some(assignment));
        metas.push((job, partition, _reservation, synth_end));
    }
    let use_gpu = backend.max_batch() > 0 || !backend.is_gpu();
    // Events: the slot is a guess until the backend says where each partition ran.
    for (i, (job, k, _, _)) in metas.iter().enumerate() {
        let slot = base + if use_gpu { backend.device_for(i, n) } else { 0 };
        let name = if use_gpu { backend.name() } else { "cpu" };
        inner.timeline.emit(
            EventKind::GpuPickup,
            job.id,
            *k as u32,
            slot as u32,
            0,
            name,
        );
        inner
            .timeline
            .emit(EventKind::GpuStart, job.id, *k as u32, slot as u32, 0, name);
        inner.devices.lock()[slot].current = Some((job.id, *k));
    }
    inner
        .counters
        .proving
        .fetch_add(n as u64, Ordering::Relaxed);
    let mut times = vec![StageTimes::default(); n];
    let results: Vec<(usize, Result<Proof<Bls12>>)> = if use_gpu {
        crate::error::catch("proving", Status::Proving, || {
            Ok(backend.prove_batch(&mut asgs, &srs, &rs, &ss, &mut times))
        })
        .unwrap_or_else(|e| (0..n).map(|i| (i, Err(e.clone()))).collect())
    } else {
        // Every device of this backend is out of service: its partitions go to the CPU.
        (0..n)
            .map(|_| (0, Err(Error::new(Status::Unsupported, "no usable device"))))
            .collect()
    };
    let mut proved = Vec::with_capacity(n);
    for (i, (sub, result)) in results.into_iter().enumerate() {
        let slot = base + sub;
        let (job, k, _, _) = &metas[i];
        let mut p = Proved {
            slot,
            result,
            stages: times[i],
            on_cpu: false,
        };
        // Only device faults count (not, say, a partition that does not fit the parameters,
        // or no device being usable).
        let fault =
            matches!(&p.result, Err(e) if matches!(e.status, Status::Proving | Status::Panic));
        if backend.is_gpu() && use_gpu {
            let failures = {
                let mut devs = inner.devices.lock();
                let dv = &mut devs[slot];
                if p.result.is_ok() {
                    dv.consecutive_failures = 0;
                } else if fault {
                    dv.consecutive_failures += 1;
                }
                dv.consecutive_failures
            };
            if fault && failures >= DEVICE_FAILURE_LIMIT && set_device(inner, d, sub, false) {
                log::error!(
                    "{}: {failures} partitions failed in a row: device taken out of service",
                    inner.devices.lock()[slot].name
                );
            }
        }
        // A GPU error must not fail the job: GPU backends leave the assignment in place, and
        // a partition they fail on is proved again on the CPU.
        if let (Err(e), true, Some(_)) = (&p.result, backend.is_gpu(), &asgs[i]) {
            log::warn!(
                "{}: partition {k} of job {} failed ({}): proving it on the CPU",
                inner.devices.lock()[slot].name,
                job.id,
                e.message
            );
            if use_gpu {
                inner.timeline.emit(
                    EventKind::GpuEnd,
                    job.id,
                    *k as u32,
                    slot as u32,
                    ms(pickup.elapsed()) as u64,
                    "failed;retry=cpu",
                );
                inner.timeline.emit(
                    EventKind::GpuStart,
                    job.id,
                    *k as u32,
                    slot as u32,
                    0,
                    "cpu-retry",
                );
            }
            let mut st = StageTimes::default();
            p.result = crate::error::catch("proving", Status::Proving, || {
                inner
                    .fallback
                    .prove(&mut asgs[i], &srs, rs[i], ss[i], &mut st)
            });
            p.stages = st;
            p.on_cpu = true;
            inner.counters.cpu_retries.fetch_add(1, Ordering::Relaxed);
        }
        asgs[i] = None;
        proved.push(p);
    }
    inner
        .counters
        .proving
        .fetch_sub(n as u64, Ordering::Relaxed);
    let prove_ms = ms(pickup.elapsed());
    for ((job, k, reservation, synth_end), p) in metas.into_iter().zip(proved) {
        {
            let mut devs = inner.devices.lock();
            devs[p.slot].current = None;
            devs[p.slot].partitions_proved += (p.result.is_ok() && !p.on_cpu) as u64;
        }
        // Where the event's slot guess was wrong (a partial batch), close it where it opened.
        let detail = match (&p.result, p.on_cpu) {
            (Err(_), _) => "failed".to_string(),
            (Ok(_), true) => "cpu".to_string(),
            (Ok(_), false) => inner.devices.lock()[p.slot].name.clone(),
        };
        inner.timeline.emit(
            EventKind::GpuEnd,
            job.id,
            k as u32,
            p.slot as u32,
            prove_ms as u64,
            &detail,
        );
        drop(reservation);
        let proof = match p.result {
            Ok(proof) => proof,
            Err(e) => {
                finish(inner, &job, Err(e));
                continue;
            }
        };
        let complete = {
            let mut st = job.state.lock();
            if st.result.is_some() {
                continue;
            }
            st.proofs[k] = Some(proof);
            let rep = &mut st.reports[k];
            rep.wait_ms = ms(pickup - synth_end);
            rep.prove_ms = prove_ms;
            rep.stages = p.stages;
            rep.device = p.slot;
            st.remaining -= 1;
            st.remaining == 0
        };
        if complete {
            let out = assemble(inner, &job, &srs);
            finish(inner, &job, out);
        }
    }
}

/// Serializes and (unless disabled) verifies a job whose partitions are all proved.
fn assemble(inner: &Inner, job: &Job, srs: &Srs) -> Result<JobOutput> {
    let (proofs, reports) = {
        let st = job.state.lock();
        let proofs: Vec<Proof<Bls12>> = st
            .proofs
            .iter()
            .map(|p| p.clone().expect("all partitions proved"))
            .collect();
        (proofs, st.reports.clone())
    };
    let mut bytes = Vec::with_capacity(proofs.len() * 192);
    for p in &proofs {
        p.write(&mut bytes)
            .map_err(|e| Error::internal(format!("serializing a proof: {e}")))?;
    }
    let t = Instant::now();
    let mut verified = false;
    if inner.cfg.self_check {
        let circuits = job.circuits()?;
        let inputs = (0..proofs.len())
            .map(|k| circuits.public_inputs(k))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Proof<Bls12>> = proofs.iter().collect();
        let ok = verify_proofs_batch(&srs.pvk, &mut OsRng, &refs, &inputs).map_err(|e| {
            Error::new(
                Status::VerifyFailed,
                format!("self-check could not run: {e}"),
            )
        })?;
        if !ok {
            return Err(Error::new(
                Status::VerifyFailed,
                "self-check failed: the proof does not verify (parameters do not match the verifying key?)",
            ));
        }
        verified = true;
    }
    Ok(JobOutput {
        proof: bytes,
        partitions: reports,
        wall_ms: ms(job.submitted.elapsed()),
        verify_ms: ms(t.elapsed()),
        verified,
    })
}

static GLOBAL: Lazy<Mutex<Option<Arc<Engine>>>> = Lazy::new(|| Mutex::new(None));

/// The process-wide engine, started with `cfg` unless one is running. A running engine with a
/// different configuration is an ALREADY_RUNNING error.
pub fn start_global(cfg: Config) -> Result<Arc<Engine>> {
    let mut g = GLOBAL.lock();
    if let Some(e) = g.as_ref() {
        let want = cfg.clone().resolved();
        let have = e.config();
        // Automatic values (0) match whatever was resolved.
        let same = (cfg.synthesis_workers == 0 || want.synthesis_workers == have.synthesis_workers)
            && want.synthesis_lookahead == have.synthesis_lookahead
            && (cfg.memory_budget == 0 || want.memory_budget == have.memory_budget)
            && want.params_dir == have.params_dir
            && want.self_check == have.self_check
            && want.timeline_file == have.timeline_file
            && want.devices == have.devices
            && want.gpu_batch == have.gpu_batch
            && (cfg.synthesis_nice.is_none() || cfg.synthesis_nice == have.synthesis_nice);
        return if same {
            Ok(e.clone())
        } else {
            Err(Error::new(
                Status::AlreadyRunning,
                "the engine is already running with another configuration; shut it down first",
            ))
        };
    }
    let e = Arc::new(Engine::start(cfg)?);
    *g = Some(e.clone());
    Ok(e)
}

/// The process-wide engine, if started.
pub fn global() -> Option<Arc<Engine>> {
    GLOBAL.lock().clone()
}

/// The process-wide engine, started with the default configuration if needed.
pub fn global_or_default() -> Result<Arc<Engine>> {
    if let Some(e) = global() {
        return Ok(e);
    }
    start_global(Config::default())
}

/// Shuts the process-wide engine down (no-op when none runs).
pub fn shutdown_global() {
    let e = GLOBAL.lock().take();
    if let Some(e) = e {
        e.shutdown();
    }
}
