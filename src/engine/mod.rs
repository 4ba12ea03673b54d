//! The proving engine: a bounded synthesis pool feeding prover (device) workers, one job table,
//! a memory budget and a parameter cache. One engine per process (see [`global`]).
//!
//! ```text
//! submit ─► validate (parse, shape, replica id, vanilla proofs) ─► N partition items
//!   synthesis queue (priority, job seq, partition) ─► synthesis workers (reserve bytes first)
//!   prover queue (same order)                       ─► prover workers (one per backend)
//!   a GPU's failed partitions ─► CPU retry queue    ─► CPU retry worker
//!   all partitions in ─► self-check (Groth16 batch verify, .vk key) ─► await returns the bytes
//!   a partition whose proof fails it ─► synthesized in full ─► CPU retry queue (its GPU faulted)
//! ```
//!
//! Modules by concern: [`config`] (settings, every environment variable), `jobs` (the job
//! table), `handoff` (the work items the stages pass on, and their release), `finish` (a job's
//! end, from any stage), `synth` (synthesis workers), `dispatch` (prover workers, CPU retries),
//! `assembly` (a job whose partitions are all proved: its proof put together and
//! self-checked), `health` (devices in and out of service), `status` (snapshots, Prometheus),
//! `global` (the process singleton), `backends` (which provers), `queue` (the priority queues),
//! `admission` (could one more job start now, for a scheduler), `watchdog` (a GPU call past its
//! deadline given up: its devices out, its partitions synthesized again). The stages import their work
//! items from `handoff` and end jobs through `finish`, never each other's files.
//!
//! Threads: every worker loop catches panics and fails only the job it was working on. User
//! callbacks never run on these threads (see [`crate::timeline`]).

mod admission;
mod assembly;
mod backends;
mod config;
mod dispatch;
mod finish;
mod global;
mod handoff;
mod health;
mod jobs;
pub mod queue;
mod status;
mod synth;
mod watchdog;

use std::{
    collections::{HashMap, HashSet},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use parking_lot::Mutex;

use crate::pce::PceCache;

pub use self::{
    admission::{seal_proof_from_abi, Admission, AdmissionReason},
    backends::select_backends,
    config::{
        default_params_dir, Config, GpuParams, SynthesisMode, CANCELLED_RETENTION,
        DEFAULT_DEVICE_COOLDOWN, DEFAULT_GPU_BATCH, DEFAULT_JOB_RETENTION, DEFAULT_MAX_C1_BYTES,
        DEFAULT_MAX_JOBS,
    },
    global::{global, global_or_default, shutdown_global, start_global},
    health::{DeviceStatus, OutOfService, DEVICE_FAILURE_LIMIT},
    jobs::{JobOutput, JobRequest, PartitionReport},
    status::EngineStatus,
};
use self::{
    dispatch::{prove_worker, retry_worker},
    finish::finish,
    handoff::{ProveItem, RetryItem, SynthItem},
    health::Probe,
    jobs::{Job, JobTable},
    queue::PriorityQueue,
    status::Counters,
    synth::{prepare_backends, synth_worker},
};
use crate::{
    budget::Budget,
    error::{Error, Result, Status},
    params::{Srs, SrsCache},
    porep, post,
    prover::{cpu::CpuProver, ProverBackend},
    snap,
    timeline::{in_callback, EventKind, Sink, Timeline, NO_PARTITION},
};

struct Inner {
    cfg: Config,
    budget: Arc<Budget>,
    srs: SrsCache,
    /// Recorded circuits for the pre-compiled synthesis path.
    pce: Arc<PceCache>,
    jobs: JobTable,
    synth_q: PriorityQueue<SynthItem>,
    prove_q: PriorityQueue<ProveItem>,
    retry_q: PriorityQueue<RetryItem>,
    /// Non-interactive PoRep jobs whose partitions are all proved and checked, waiting for
    /// their aggregation (`assembly::aggregate_worker`).
    aggregate_q: PriorityQueue<assembly::Aggregation>,
    /// Bytes reserved by partitions in the retry queue or being retried.
    retry_held: AtomicU64,
    running: AtomicBool,
    timeline: Timeline,
    counters: Counters,
    backends: Vec<Box<dyn ProverBackend>>,
    /// Index of each backend's first device in `devices` (a multi-GPU backend has several).
    slot_base: Vec<usize>,
    /// Prover for partitions a GPU failed on (the CPU).
    fallback: Box<dyn ProverBackend>,
    /// Checked parameter instances (`Srs::generation`) every backend has prepared.
    prepared: Mutex<HashSet<u64>>,
    /// Parameter instances and statuses a backend's failed `prepare` was logged for (once).
    prepare_said: Mutex<HashSet<(u64, i32)>>,
    /// Per backend: when its prover worker next tries a GPU that had no room (it waits until
    /// then), and the wait after that.
    room_wait: Vec<Mutex<dispatch::RoomWait>>,
    /// Per circuit: the room its compact witnesses keep for values that are neither 0 nor 1
    /// (share of aux values), its kind's estimate and the most a witness of it has kept.
    others_room: Mutex<HashMap<String, (f64, Option<f64>)>>,
    /// Circuits whose witnesses the native generator does not make (it does not support
    /// them, or it was distrusted for them), and why.
    native_off: Mutex<HashMap<String, String>>,
    /// Parameter ids of the proof types admission was asked about (proof, fixture shape).
    params_ids: Mutex<HashMap<(u32, usize, usize), String>>,
    devices: Mutex<Vec<DeviceStatus>>,
    /// Next probe of each device out of service for faults.
    probes: Mutex<Vec<Probe>>,
    /// Per backend: its calls the watchdog gave up on that have not returned.
    abandoned: Vec<std::sync::atomic::AtomicUsize>,
    /// Per device: calls given up on that it is still inside (it comes back only once none is
    /// left).
    inside_given_up: Mutex<Vec<u32>>,
    /// Recent GPU call times, for the watchdog's deadlines.
    call_times: watchdog::CallTimes,
}

impl Inner {
    /// The checked parameters `id` of a circuit of `sector_size`. A random set (made by
    /// `cuzk params gen`) is refused for a production size unless the configuration says this
    /// is a benchmark: its proofs pass the self-check and fail on chain.
    fn srs_for(&self, id: &str, sector_size: u64) -> Result<Arc<Srs>> {
        let srs = self.srs.get(id, &self.budget)?;
        if srs.random
            && porep::is_production_size(sector_size)
            && !self.cfg.allow_random_params.unwrap_or(false)
        {
            return Err(Error::params(format!(
                "{} is a random parameter set made by cuzk for benchmarks (not the production \
                 parameters): proofs made with it would be rejected on chain. Fetch the real \
                 parameters, or set CUZK_ALLOW_RANDOM_PARAMS=1 (Config::allow_random_params) \
                 for a benchmark",
                srs.path.display()
            )));
        }
        Ok(srs)
    }

    /// Why a wait on behalf of `job` should end (the job ended, the engine is stopping).
    /// Gives up circuit `id`'s recording (`pce::PceCache::distrust`): every backend's copy of
    /// it dropped first (a GPU's is freed before a new one is made), its file removed, and the
    /// circuit recorded again when next needed (a second fault of a recording made here: full
    /// synthesis for the circuit until restart).
    fn distrust_recording(&self, id: &str, why: &str) {
        for b in self.backends.iter().chain(std::iter::once(&self.fallback)) {
            b.forget_recording(id);
        }
        self.pce.distrust(id, why);
    }

    /// The room, as a share of aux values, circuit `id`'s compact witnesses are budgeted for
    /// their values that are neither 0 nor 1: the most one of them has kept, never under its
    /// kind's estimate nor PoRep's.
    fn others_room(&self, id: &str) -> f64 {
        // The kind's estimate is a floor: it may cover more than the witness keeps (PoSt's
        // native generator holds its groups and the witness they are copied into at once).
        let room = match self.others_room.lock().get(id) {
            Some((estimate, Some(kept))) => kept.max(*estimate),
            Some((estimate, None)) => *estimate,
            None => crate::params::WITNESS_OTHERS_ROOM,
        };
        room.max(crate::params::WITNESS_OTHERS_ROOM)
    }

    /// A job of circuit `id` whose kind estimates its witnesses' room as `estimate`.
    fn expect_others_room(&self, id: &str, estimate: f64) {
        self.others_room
            .lock()
            .entry(id.to_string())
            .or_insert((estimate, None));
    }

    /// A witness of circuit `id` kept room for `kept` (share of aux values).
    fn note_others_room(&self, id: &str, kept: f64) {
        let mut m = self.others_room.lock();
        let e = m
            .entry(id.to_string())
            .or_insert((crate::params::WITNESS_OTHERS_ROOM, None));
        e.1 = Some(e.1.map_or(kept, |k| k.max(kept)));
    }

    /// Bytes a partition of circuit `id` reserves on `path`.
    fn partition_bytes(&self, id: &str, srs: &Srs, path: crate::params::HostPath) -> u64 {
        srs.size.host_bytes_with(path, self.others_room(id))
    }

    /// Whether the native generator makes circuit `id`'s witnesses.
    fn native_on(&self, id: &str) -> bool {
        self.cfg.synthesis_mode() == SynthesisMode::Native
            && !self.native_off.lock().contains_key(id)
    }

    /// Stops making circuit `id`'s witnesses natively until restart (witness synthesis
    /// instead), logged once: `unsupported`, a warning (the generator does not follow this
    /// circuit); else an error and a count (it made a witness it must not have).
    fn native_off(&self, id: &str, why: &str, unsupported: bool) {
        let mut off = self.native_off.lock();
        if off.contains_key(id) {
            return;
        }
        off.insert(id.to_string(), why.to_string());
        drop(off);
        if unsupported {
            log::warn!(
                "circuit {id}: its witnesses are made by witness synthesis, not natively: {why}"
            );
        } else {
            self.counters
                .native_distrusted
                .fetch_add(1, Ordering::Relaxed);
            log::error!(
                "circuit {id}: the native witness generator is distrusted for it until restart \
                 ({why}); witness synthesis instead"
            );
        }
    }

    fn give_up(&self, job: &Job) -> Option<Error> {
        if job.stopped() {
            Some(Error::new(Status::Cancelled, "stopped"))
        } else if !self.running.load(Ordering::Acquire) {
            Some(not_running())
        } else {
            None
        }
    }

    /// The engine's shared state, with one device status per device of each backend.
    fn new(
        cfg: Config,
        backends: Vec<Box<dyn ProverBackend>>,
        fallback: Box<dyn ProverBackend>,
    ) -> Result<Inner> {
        cfg.check()?;
        // Synthesis yields to the GPU call's host-side work by default (needs the backends).
        let cfg = cfg.with_nice_for(backends.iter().any(|b| b.is_gpu()));
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
        let timeline = Timeline::start(Instant::now(), "cuzk-timeline")?;
        let budget = Budget::new(cfg.memory_budget);
        Ok(Inner {
            pce: PceCache::new(cfg.pce_dir.clone(), budget.clone()),
            budget,
            srs: SrsCache::new(cfg.params_dir.clone()),
            jobs: JobTable::new(cfg.job_retention, cfg.max_jobs),
            synth_q: PriorityQueue::default(),
            prove_q: PriorityQueue::default(),
            retry_q: PriorityQueue::default(),
            aggregate_q: PriorityQueue::default(),
            retry_held: AtomicU64::new(0),
            running: AtomicBool::new(true),
            timeline,
            counters: Counters::default(),
            abandoned: backends.iter().map(|_| Default::default()).collect(),
            room_wait: backends.iter().map(|_| Default::default()).collect(),
            call_times: Default::default(),
            backends,
            slot_base,
            fallback,
            prepared: Mutex::new(HashSet::new()),
            prepare_said: Mutex::new(HashSet::new()),
            others_room: Mutex::new(HashMap::new()),
            native_off: Mutex::new(HashMap::new()),
            params_ids: Mutex::new(HashMap::new()),
            probes: Mutex::new(vec![Probe::default(); devices.len()]),
            inside_given_up: Mutex::new(vec![0; devices.len()]),
            devices: Mutex::new(devices),
            cfg,
        })
    }
}

/// Starts the synthesis workers, one prover worker per backend, the CPU retry worker and the
/// loading of the recordings on disk. On a failure, stops what was started and says why.
fn spawn_workers(inner: &Arc<Inner>) -> Result<Vec<JoinHandle<()>>> {
    type Work = Box<dyn FnOnce(&Arc<Inner>) + Send>;
    let workers = (0..inner.cfg.synthesis_workers)
        .map(|w| {
            (
                format!("cuzk-synth-{w}"),
                Box::new(move |i: &Arc<Inner>| synth_worker(i, w)) as Work,
            )
        })
        .chain((0..inner.backends.len()).map(|d| {
            (
                format!("cuzk-prove-{d}"),
                Box::new(move |i: &Arc<Inner>| prove_worker(i, d)) as Work,
            )
        }))
        .chain(std::iter::once((
            "cuzk-cpu-retry".to_string(),
            Box::new(|i: &Arc<Inner>| retry_worker(i)) as Work,
        )))
        .chain(std::iter::once((
            "cuzk-aggregate".to_string(),
            Box::new(|i: &Arc<Inner>| assembly::aggregate_worker(i)) as Work,
        )));
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    for (name, work) in workers {
        let i = inner.clone();
        match std::thread::Builder::new()
            .name(name)
            .spawn(move || work(&i))
        {
            Ok(t) => threads.push(t),
            Err(e) => {
                // Stop what was started before reporting.
                inner.running.store(false, Ordering::Release);
                inner.synth_q.close();
                inner.prove_q.close();
                inner.retry_q.close();
                inner.aggregate_q.close();
                threads.into_iter().for_each(|t| drop(t.join()));
                return Err(Error::internal(format!(
                    "cannot start a worker thread: {e}"
                )));
            }
        }
    }
    // The recordings on disk load while the first job reads its parameters.
    {
        let i = inner.clone();
        match std::thread::Builder::new()
            .name("cuzk-pce-scan".into())
            .spawn(move || synth::preload_recordings(&i))
        {
            Ok(t) => threads.push(t),
            Err(e) => log::warn!("cannot start loading the recordings on disk: {e}"),
        }
    }
    Ok(threads)
}

/// The engine. Dropping the last handle shuts it down.
pub struct Engine {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Held for the whole of a shutdown: a second one waits for the first. True once done.
    shut_down: Mutex<bool>,
}

fn not_running() -> Error {
    Error::new(Status::NotRunning, "the engine was shut down")
}

impl Engine {
    /// Starts an engine with its worker threads and the provers `cfg.devices` selects.
    pub fn start(cfg: Config) -> Result<Engine> {
        let cfg = cfg.resolved();
        cfg.check()?;
        let backends = select_backends(&cfg)?;
        Self::start_resolved(cfg, backends, Box::new(CpuProver))
    }

    /// Starts an engine with the given prover backends, one prover worker each (partitions go
    /// to whichever is free); a GPU backend's failed partitions are proved again on the CPU.
    pub fn start_with_backends(
        cfg: Config,
        backends: Vec<Box<dyn ProverBackend>>,
    ) -> Result<Engine> {
        Self::start_resolved(cfg.resolved(), backends, Box::new(CpuProver))
    }

    /// [`Engine::start_with_backends`] with another prover for the partitions a GPU backend
    /// failed on (tests use it to stand in for the CPU).
    pub fn start_with_fallback(
        cfg: Config,
        backends: Vec<Box<dyn ProverBackend>>,
        fallback: Box<dyn ProverBackend>,
    ) -> Result<Engine> {
        Self::start_resolved(cfg.resolved(), backends, fallback)
    }

    fn start_resolved(
        cfg: Config,
        backends: Vec<Box<dyn ProverBackend>>,
        fallback: Box<dyn ProverBackend>,
    ) -> Result<Engine> {
        if in_callback() {
            return Err(Error::new(
                Status::InCallback,
                "an engine cannot be started from a timeline callback",
            ));
        }
        if backends.is_empty() {
            return Err(Error::invalid_argument(
                "at least one prover backend is needed",
            ));
        }
        let inner = Arc::new(Inner::new(cfg, backends, fallback)?);
        let threads = spawn_workers(&inner)?;
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
            shut_down: Mutex::new(false),
        };
        engine.add_config_sinks()?;
        Ok(engine)
    }

    /// The timeline sinks the configuration asks for: stderr lines and a file.
    fn add_config_sinks(&self) -> Result<()> {
        if self.inner.cfg.timeline_stderr {
            self.add_timeline_sink(Arc::new(|ev| {
                eprintln!("{}", crate::timeline::log_line(ev))
            }));
        }
        if let Some(path) = &self.inner.cfg.timeline_file {
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
            self.add_timeline_sink(Arc::new(move |ev| {
                use std::io::Write;
                // A full disk must not stop proving: the line is dropped.
                let _ = writeln!(out.lock(), "{}", crate::timeline::log_line(ev));
            }));
        }
        Ok(())
    }

    /// The configuration in force (automatic values resolved).
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }

    /// Whether the engine takes jobs (false from the start of a shutdown).
    pub fn is_running(&self) -> bool {
        self.inner.running.load(Ordering::Acquire)
    }

    /// Whether a shutdown has finished (threads joined, parameters released); false while one
    /// is in progress.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.try_lock().is_some_and(|done| *done)
    }

    /// Registers a timeline sink; it sees every event recorded after this returns. May be
    /// called from a sink.
    pub fn add_timeline_sink(&self, sink: Sink) -> u64 {
        self.inner.timeline.add(sink)
    }

    /// Unregisters a timeline sink; false for a handle this engine does not know. From outside
    /// a sink it delivers what was recorded before, then returns once the sink is not running;
    /// from inside a sink (its own handle or another's) it returns at once. Either way the sink
    /// is never called after the running call, if any, returns.
    pub fn remove_timeline_sink(&self, id: u64) -> bool {
        self.inner.timeline.remove(id)
    }

    /// Loads the parameters a job needs (validating it), without queueing it.
    pub fn preload(&self, req: &JobRequest) -> Result<()> {
        self.check_size(&req.c1)?;
        let parsed = porep::parse_c1(&req.c1)?;
        let prepared = porep::prepare(parsed.c1, req.prover_id, req.sector_id, req.fixture)?;
        let srs = self.inner.srs_for(
            prepared.circuits.params_id(),
            prepared.circuits.shape().sector_size,
        )?;
        prepare_backends(&self.inner, &srs)?;
        if self.inner.cfg.synthesis_mode().pre_compiled() {
            synth::load_recording(&self.inner, &prepared.circuits, &srs);
        }
        Ok(())
    }

    /// INVALID_INPUT for a C1 output above the configured size (checked before it is copied).
    pub fn check_size(&self, c1: &[u8]) -> Result<()> {
        let max = self.inner.cfg.max_c1_bytes;
        if c1.len() > max {
            return Err(Error::invalid_input(format!(
                "C1 output is {} bytes, more than the {} MiB this engine accepts (max_c1_bytes)",
                c1.len(),
                max >> 20
            )));
        }
        Ok(())
    }

    /// Validates a job and queues its partitions; returns the job id. A non-interactive PoRep
    /// job's proof is its partition proofs' SnarkPack v2 aggregate (what filecoin-proofs'
    /// `seal_commit_phase2` returns), made once they are all proved and checked.
    pub fn submit(&self, req: JobRequest) -> Result<u64> {
        let prover_id = Some(req.prover_id);
        self.submit_c1(req, prover_id, true)
    }

    /// [`Engine::submit`], with a non-interactive PoRep job's partition proofs returned as they
    /// are (`partitions × 192` bytes, each checked), not aggregated: filecoin-proofs'
    /// `seal_commit_phase2_circuit_proofs`, for callers that aggregate several sectors
    /// together. Where `check_replica`, the C1 output's replica id must be `req.prover_id`'s
    /// and `req.sector_id`'s (as `submit` checks); else it is taken as it is and
    /// `req.prover_id` is not read (filecoin-proofs' call takes no prover id). The same as
    /// `submit` for interactive types, whose proof is their partitions' proofs.
    pub fn submit_circuit_proofs(&self, req: JobRequest, check_replica: bool) -> Result<u64> {
        let prover_id = check_replica.then_some(req.prover_id);
        self.submit_c1(req, prover_id, false)
    }

    fn submit_c1(
        &self,
        req: JobRequest,
        prover_id: Option<[u8; 32]>,
        aggregate: bool,
    ) -> Result<u64> {
        if !self.is_running() {
            return Err(Error::new(Status::NotRunning, "the engine is shut down"));
        }
        self.inner.jobs.reap();
        self.check_size(&req.c1)?;
        let parsed = porep::parse_c1(&req.c1)?;
        if let Some(s) = parsed.envelope_sector {
            if s != req.sector_id {
                return Err(Error::invalid_input(format!(
                    "Commit2In.SectorNum is {s} but sector id {} was given",
                    req.sector_id
                )));
            }
        }
        let mut prepared = porep::prepare_for(parsed.c1, prover_id, req.sector_id, req.fixture)?;
        if !aggregate {
            prepared.aggregate = None;
        }
        self.submit_prepared(prepared, req.priority)
    }

    /// Queues a WindowPoSt or WinningPoSt job ([`post::PostRequest`]: filecoin-ffi's
    /// `Generate{Window,Winning}PoStWithVanilla` and `GenerateSingleWindowPoStWithVanilla`
    /// inputs), validated first (its vanilla proofs checked as filecoin-proofs checks them:
    /// INVALID_INPUT where they do not verify); returns the job id. Its partitions go before
    /// every PoRep partition at each queue (`porep::Class`). Its output's `proof` is
    /// filecoin-proofs' bytes, `partitions × 192`.
    pub fn submit_post(&self, req: &post::PostRequest) -> Result<u64> {
        if !self.is_running() {
            return Err(Error::new(Status::NotRunning, "the engine is shut down"));
        }
        self.inner.jobs.reap();
        let prepared = post::prepare(req)?;
        self.submit_prepared(prepared, req.priority)
    }

    /// Queues a SnapDeals job ([`snap::SnapRequest`]: filecoin-ffi's
    /// `GenerateUpdateProofWithVanilla` inputs), validated first (every partition's vanilla
    /// proof checked against the commitments: INVALID_INPUT where one does not verify); returns
    /// the job id. Its partitions go in PoRep's class. Its output's `proof` is filecoin-proofs'
    /// `EmptySectorUpdateProof` bytes, `partitions × 192`.
    pub fn submit_snap(&self, req: &snap::SnapRequest) -> Result<u64> {
        if !self.is_running() {
            return Err(Error::new(Status::NotRunning, "the engine is shut down"));
        }
        self.inner.jobs.reap();
        let prepared = snap::prepare(req)?;
        self.submit_prepared(prepared, req.priority)
    }

    /// Queues a job validated beforehand ([`porep::prepare`], which [`Engine::submit`] calls on
    /// the C1 output it is given); returns the job id. For Rust callers that prepare jobs
    /// themselves (and tests that prove circuits of their own making).
    pub fn submit_prepared(&self, prepared: porep::PreparedJob, priority: i32) -> Result<u64> {
        if !self.is_running() {
            return Err(Error::new(Status::NotRunning, "the engine is shut down"));
        }
        let n = prepared.circuits.shape().partitions;
        self.inner.expect_others_room(
            prepared.circuits.params_id(),
            prepared.circuits.witness_others_room(),
        );
        let job = Arc::new(Job::new(
            priority,
            prepared.class,
            prepared.circuits,
            prepared.aggregate,
        ));
        let id = job.id;
        self.inner.jobs.insert(job.clone())?;
        self.inner.timeline.emit(
            EventKind::JobQueued,
            id,
            NO_PARTITION,
            0,
            n as u64,
            &prepared.kind,
        );
        for k in 0..n {
            let item = SynthItem::new(job.clone(), k);
            if self.inner.synth_q.push(job.key(k), item).is_err() {
                finish(&self.inner, &job, Err(not_running()));
                break;
            }
        }
        Ok(id)
    }

    /// Waits for a job. `timeout` None waits forever. On success or failure the job is removed
    /// from the table (a second await answers NOT_FOUND); on TIMEOUT it stays. From inside a
    /// timeline callback only a zero timeout is allowed (IN_CALLBACK otherwise).
    pub fn await_job(&self, id: u64, timeout: Option<Duration>) -> Result<JobOutput> {
        if in_callback() && timeout != Some(Duration::ZERO) {
            return Err(Error::new(
                Status::InCallback,
                "a timeline callback may only poll a job (await with a zero timeout)",
            ));
        }
        let job = self.inner.jobs.get(id)?;
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
        self.inner.jobs.remove(id);
        self.inner.jobs.reap();
        res
    }

    /// Non-blocking state of a job: None while running.
    pub fn poll(&self, id: u64) -> Result<Option<Result<JobOutput>>> {
        self.inner.jobs.reap();
        let job = self.inner.jobs.get(id)?;
        let st = job.state.lock();
        Ok(st.result.clone())
    }

    /// Cancels a job: queued partitions are dropped and their memory given back at once,
    /// running ones are abandoned (a partition on a GPU finishes its call), and await answers
    /// CANCELLED. Cancelling a finished job changes nothing. May be called from a callback.
    pub fn cancel(&self, id: u64) -> Result<()> {
        let job = self.inner.jobs.get(id)?;
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

    /// Synchronous prove: submit and wait (not from a timeline callback).
    pub fn prove(&self, req: JobRequest) -> Result<JobOutput> {
        if in_callback() {
            return Err(Error::new(
                Status::InCallback,
                "a timeline callback cannot prove synchronously",
            ));
        }
        let id = self.submit(req)?;
        self.await_job(id, None)
    }

    /// Stops the engine: every unfinished job ends with NOT_RUNNING (waiters return), queued
    /// partitions are dropped, synthesis in progress is abandoned, partitions on a GPU finish
    /// their call (waited for no longer than the watchdog's deadline,
    /// `Config::gpu_call_timeout`); then the threads are joined, the timeline delivers what it
    /// holds, and the parameters are released (reserved memory back to 0; a backend with a
    /// call given up on and still running keeps what it holds until that call returns). A second call, concurrent or later,
    /// waits for the first to finish. From a timeline callback: IN_CALLBACK.
    pub fn shutdown(&self) -> Result<()> {
        if in_callback() {
            return Err(Error::new(
                Status::InCallback,
                "the engine cannot be shut down from a timeline callback",
            ));
        }
        let mut done = self.shut_down.lock();
        if *done {
            return Ok(());
        }
        self.stop_work();
        for t in std::mem::take(&mut *self.threads.lock()) {
            let _ = t.join();
        }
        // Anything a worker finished on its way out.
        for job in self.inner.jobs.all() {
            finish(&self.inner, &job, Err(not_running()));
        }
        self.inner.timeline.close();
        for (d, b) in self.inner.backends.iter().enumerate() {
            if self.inner.abandoned[d].load(Ordering::Acquire) > 0 {
                log::warn!(
                    "{}: a call given up on is still running: its parameters and buffers stay \
                     until it returns",
                    b.name()
                );
            } else {
                b.release();
            }
        }
        self.inner.fallback.release();
        self.inner.srs.clear();
        self.inner.pce.shutdown();
        self.inner.prepared.lock().clear();
        *done = true;
        Ok(())
    }

    /// Refuses new work, ends every unfinished job and closes the queues (workers exit when
    /// they are done with what they hold).
    fn stop_work(&self) {
        let i = &self.inner;
        i.running.store(false, Ordering::Release);
        for job in i.jobs.all() {
            finish(i, &job, Err(not_running()));
        }
        drop(i.synth_q.close());
        drop(i.prove_q.close());
        for it in i.retry_q.close() {
            i.retry_held
                .fetch_sub(it.item.reservation.bytes(), Ordering::AcqRel);
        }
        drop(i.aggregate_q.close());
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if in_callback() {
            // The last handle went away inside a callback: stop everything without waiting
            // for the thread this runs on; the workers exit by themselves.
            self.stop_work();
            self.inner.timeline.close();
        } else {
            let _ = self.shutdown();
        }
    }
}
