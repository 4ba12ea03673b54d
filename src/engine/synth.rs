//! Synthesis workers: each takes the highest-priority partition, reserves its memory and
//! synthesizes it, then hands it to the prover queue. A panic in one partition fails that
//! partition's job (PANIC) and the worker goes on with the next one.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use blstrs::Scalar as Fr;
use ff::Field;
use rand::rngs::OsRng;

use super::{
    finish::finish,
    handoff::{push_retry, Maker, ProveItem, RetryItem, SynthItem, Work},
    jobs::{ms, Job},
    not_running,
    queue::Key,
    Inner,
};
use crate::{
    budget::Reservation,
    error::{catch, Error, Result, Status},
    params::{HostPath, Srs},
    pce,
    porep::SealCircuits,
    prover::ProvingAssignment,
    timeline::EventKind,
};

/// Bytes per constraint a recording is budgeted while it is made: it ends at ~46, and its
/// vectors grow by doubling (up to twice that while one is copied).
const RECORDING_BYTES_PER_CONSTRAINT: u64 = 96;

fn recording_room(inner: &Inner, srs: &Srs) -> pce::Room {
    pce::Room {
        recording: srs.size.constraints as u64 * RECORDING_BYTES_PER_CONSTRAINT,
        // A partition under the recording (its constraint count is not known yet).
        partition: inner.partition_bytes(&srs.id, srs, pce_path(inner, srs.size.domain())),
    }
}

/// How a partition will be synthesized and proved, decided before its memory is reserved:
/// the recording it is synthesized under (none: in full) and what it holds in host memory.
pub(super) struct Plan {
    pub(super) held: Option<Arc<pce::Held>>,
    pub(super) path: HostPath,
}

/// Whether a CPU prover may get a partition's assignment (not only GPU provers).
fn cpu_proves(inner: &Inner) -> bool {
    inner.backends.iter().any(|b| !b.is_gpu())
}

/// The host path of a partition synthesized under a recording of `rows` constraints.
fn pce_path(inner: &Inner, rows: usize) -> HostPath {
    if inner.cfg.synthesis_mode().product_in_prover()
        && inner.backends.iter().all(|b| b.proves_witness())
    {
        HostPath::Witness
    } else if cpu_proves(inner) {
        HostPath::Cpu
    } else {
        HostPath::Assignment { rows }
    }
}

/// The plan for the next partition of circuit `id` (see [`Plan`]).
pub(super) fn plan(inner: &Inner, id: &str, srs: &Srs) -> Plan {
    let held = if inner.cfg.synthesis_mode().pre_compiled() {
        inner.pce.get(id)
    } else {
        None
    };
    let path = match &held {
        Some(h) => pce_path(inner, h.rec.constraints()),
        None if cpu_proves(inner) => HostPath::Cpu,
        // Full synthesis writes the circuit's rows; their count is the domain at most.
        None => HostPath::Assignment {
            rows: srs.size.domain(),
        },
    };
    Plan { held, path }
}

/// What records `circuits`' circuit for the recordings' cache (giving up once its flag turns
/// true).
fn recorder(
    circuits: &Arc<dyn SealCircuits>,
) -> impl FnOnce(Arc<AtomicBool>) -> std::result::Result<pce::Recording, String> + Send + 'static {
    let c = circuits.clone();
    move |abort| c.record(Some(abort)).map_err(|e| e.message)
}

/// Starts loading (or else recording) the circuit's recording on a thread of its own, unless
/// that is done or under way.
fn start_recording(inner: &Inner, circuits: &Arc<dyn SealCircuits>, srs: &Srs) {
    inner.pce.start(
        circuits.params_id(),
        pce::Expect::of(srs),
        recording_room(inner, srs),
        recorder(circuits),
    );
}

/// Constraints from which a partition never takes full synthesis while its recording is
/// under way: at 2^27 (32 and 64 GiB sectors) full synthesis holds ~13 GB per partition for
/// minutes, and a card's lean plan does not take its assignment.
const WAIT_FROM_CONSTRAINTS: usize = 1 << 27;

/// Why a partition of circuit `id` waits for its recording rather than take full synthesis
/// while the recording is loaded or made; None where it does not wait (the recording is ready
/// or failed, the configuration does not pre-compile, or full synthesis costs no more than the
/// wait: a small circuit recorded from scratch, with a prover that takes assignments).
fn waits_for_recording(inner: &Inner, id: &str, srs: &Srs) -> Option<&'static str> {
    if !inner.cfg.synthesis_mode().pre_compiled() {
        return None;
    }
    if matches!(
        inner.pce.state(id),
        pce::PceState::Ready | pce::PceState::Failed(_)
    ) {
        return None;
    }
    if inner.pce.file_of(id).is_file() {
        Some("loading it from its file takes less than synthesizing in full")
    } else if srs.size.domain() >= WAIT_FROM_CONSTRAINTS {
        Some("full synthesis of a partition of 2^27 constraints costs more than the wait")
    } else if !inner.backends.iter().any(|b| b.takes_assignments(srs)) {
        Some("no prover takes a fully synthesized partition")
    } else {
        None
    }
}

/// Waits for circuit `id`'s recording where partition `k` must (see [`waits_for_recording`]),
/// starting it where it is not under way. Past the configured deadline the job fails
/// (PROVING, naming the recording); a stopped job or engine ends the wait (the caller sees the
/// stop).
fn wait_for_recording(
    inner: &Inner,
    circuits: &Arc<dyn SealCircuits>,
    srs: &Srs,
    job: &Job,
    k: usize,
) -> Result<()> {
    let id = circuits.params_id();
    let Some(why) = waits_for_recording(inner, id, srs) else {
        return Ok(());
    };
    let file = inner.pce.file_of(id);
    let t = Instant::now();
    let deadline = t + inner.cfg.recording_wait.unwrap_or_default();
    // Twice at most: a load at engine start that found the file unusable leaves the circuit
    // absent, and this partition then starts its recording.
    for round in 0..2 {
        start_recording(inner, circuits, srs);
        if inner.pce.state(id) != pce::PceState::Working {
            break;
        }
        if round == 0 {
            log::info!(
                "partition {k} of job {} waits for the recording of circuit {id} ({}): {why}",
                job.id,
                file.display()
            );
            inner
                .counters
                .recording_waits
                .fetch_add(1, Ordering::Relaxed);
        }
        match inner
            .pce
            .wait(id, deadline, || inner.give_up(job).is_some())
        {
            pce::PceState::Working if inner.give_up(job).is_some() => break,
            pce::PceState::Working => {
                return Err(Error::new(
                    Status::Proving,
                    format!(
                        "the recording of circuit {id} ({}) was not ready after {} s of \
                         waiting (recording_wait, CUZK_RECORDING_WAIT_S)",
                        file.display(),
                        t.elapsed().as_secs()
                    ),
                ))
            }
            pce::PceState::Absent => continue,
            _ => break,
        }
    }
    Ok(())
}

/// Loads the recordings on disk of the parameter sets present (engine start), each on a
/// thread of its own: they load while the first job reads its parameters.
pub(super) fn preload_recordings(inner: &Inner) {
    if !inner.cfg.synthesis_mode().pre_compiled() {
        return;
    }
    for id in pce::file::ids_in(inner.pce.dir()) {
        if !inner.running.load(Ordering::Acquire) {
            return;
        }
        if !crate::params::params_path(&inner.cfg.params_dir, &id).is_file() {
            continue;
        }
        match inner.srs.get(&id, &inner.budget) {
            Ok(srs) => {
                if inner
                    .pce
                    .preload_file(&id, pce::Expect::of(&srs), recording_room(inner, &srs))
                {
                    log::info!("loading the recording of circuit {id} at engine start");
                }
            }
            Err(e) => log::debug!("recording of circuit {id} not loaded at start: {e}"),
        }
    }
}

/// Loads (or records) the circuit's recording on this thread (preload).
pub(super) fn load_recording(inner: &Inner, circuits: &Arc<dyn SealCircuits>, srs: &Srs) {
    let _ = inner.pce.load_or_record(
        circuits.params_id(),
        pce::Expect::of(srs),
        recording_room(inner, srs),
        recorder(circuits),
    );
}

/// Partition `k`'s witness under the recording `held`: made by the native generator where
/// the configuration asks for it and the generator has not been turned off for the circuit,
/// else (and where it refuses: an unsupported circuit, a result that would not satisfy the
/// circuit, which turn it off for the circuit) by witness synthesis. Other errors (a stop, a
/// C1 whose proofs do not make a circuit) are the job's, as they would be from witness
/// synthesis.
fn witness(
    inner: &Inner,
    circuits: &Arc<dyn SealCircuits>,
    job: &Job,
    k: usize,
    held: &pce::Held,
) -> Result<(pce::Witness, Maker)> {
    let id = circuits.params_id();
    let aux = Some(held.rec.aux);
    if inner.native_on(id) {
        let made = circuits
            .native_witness(k, aux, Some(job.stop.clone()))
            .and_then(|w| {
                if (w.inputs.len(), w.n_aux()) == (held.rec.inputs, held.rec.aux) {
                    Ok(w)
                } else {
                    Err(Error::internal(format!(
                        "{} inputs and {} aux values, the recording has {} and {}",
                        w.inputs.len(),
                        w.n_aux(),
                        held.rec.inputs,
                        held.rec.aux
                    )))
                }
            });
        match made {
            Ok(w) => {
                inner.note_others_room(id, w.others_room());
                inner
                    .counters
                    .native_witnesses
                    .fetch_add(1, Ordering::Relaxed);
                return Ok((w, Maker::Native));
            }
            // A stop, or the job's own input at fault (which witness synthesis refuses too).
            Err(e) if !matches!(e.status, Status::Internal | Status::Unsupported) => return Err(e),
            Err(e) => {
                inner
                    .counters
                    .native_fallbacks
                    .fetch_add(1, Ordering::Relaxed);
                inner.native_off(
                    id,
                    &format!("partition {k} of job {}: {}", job.id, e.message),
                    e.status == Status::Unsupported,
                );
            }
        }
    }
    circuits
        .synthesize_witness(k, aux, Some(job.stop.clone()))
        .map(|w| {
            inner.note_others_room(id, w.others_room());
            (w, Maker::Synthesis)
        })
}

/// Synthesizes partition `k`: through the circuit's recording where it is ready (starting one
/// where it is not), else in full. Where every prover computes a, b and c itself, the witness
/// goes to them as it is; else the assignment is computed here. A recording that gives a wrong
/// assignment is given up and the partition synthesized in full. Returns the work for the
/// prover and the path's name (the SYNTH_END note): `native;witness`, `native` (the native
/// witness, its product in the prover or on the host), `pce;witness`, `pce` (witness
/// synthesis's), `full`, or a fallback's name.
fn synthesize_partition(
    inner: &Inner,
    circuits: &Arc<dyn SealCircuits>,
    srs: &Srs,
    job: &Job,
    k: usize,
    plan: Plan,
) -> Result<(Work, &'static str)> {
    let full = || {
        circuits
            .synthesize(k, Some(srs.size), Some(job.stop.clone()))
            .map(|a| (Work::Assignment(a), "full"))
    };
    let Some(held) = plan.held else {
        if inner.cfg.synthesis_mode().pre_compiled() {
            start_recording(inner, circuits, srs);
        }
        return full();
    };
    let (w, maker) = witness(inner, circuits, job, k, &held)?;
    if plan.path == HostPath::Witness {
        return Ok((Work::Witness(held, w, maker), maker.note(true)));
    }
    host_assignment(inner, circuits, srs, job, k, held, w, maker)
        .map(|(a, path)| (Work::Assignment(a), path))
}

/// The assignment of partition `k` from its witness (made by `maker`) under the recording
/// `held`, computed on this thread. A witness that fails the recording's row check:
/// - made natively, is made again by witness synthesis; where the two differ the native
///   generator is at fault (turned off for the circuit) and witness synthesis's is used;
/// - else (or where the two agree) the recording is at fault: it is given up (its file
///   removed) and the partition synthesized in full.
#[allow(clippy::too_many_arguments)]
pub(super) fn host_assignment(
    inner: &Inner,
    circuits: &Arc<dyn SealCircuits>,
    srs: &Srs,
    job: &Job,
    k: usize,
    held: Arc<pce::Held>,
    w: pce::Witness,
    maker: Maker,
) -> Result<(ProvingAssignment, &'static str)> {
    let mut e = match pce::assignment(&held.rec, w, Some(srs.size)) {
        Ok(a) => return Ok((a, maker.note(false))),
        Err(e) => e,
    };
    if maker == Maker::Native {
        let stop = || Some(job.stop.clone());
        let theirs = circuits.synthesize_witness(k, Some(held.rec.aux), stop())?;
        let ours = match circuits.native_witness(k, Some(held.rec.aux), stop()) {
            Err(e) if e.status == Status::Cancelled => return Err(e),
            ours => ours.ok(),
        };
        if ours.as_ref() != Some(&theirs) {
            inner.native_off(
                circuits.params_id(),
                &format!(
                    "partition {k} of job {}: its native witness fails the recording's row \
                     check ({e}) and is not witness synthesis's",
                    job.id
                ),
                false,
            );
            inner
                .counters
                .native_fallbacks
                .fetch_add(1, Ordering::Relaxed);
            match pce::assignment(&held.rec, theirs, Some(srs.size)) {
                Ok(a) => return Ok((a, "pce;native-rejected")),
                Err(again) => e = again,
            }
        }
    }
    drop(held);
    inner.distrust_recording(
        circuits.params_id(),
        &format!("partition {k} of job {}: {e}", job.id),
    );
    inner.counters.pce_fallbacks.fetch_add(1, Ordering::Relaxed);
    circuits
        .synthesize(k, Some(srs.size), Some(job.stop.clone()))
        .map(|a| (a, "full;pce-rejected"))
}

/// The watchdog's key for parameter placements (`watchdog::watched`'s parameter instance):
/// their times are kept apart from any circuit's calls.
const PREPARE_KEY: u64 = u64::MAX - 1;
/// The slowest read of a parameter file a GPU's placement is allowed beyond the GPU-call
/// timeout, in bytes per second (a cold 47 GB file: about 7.5 minutes more).
const SLOWEST_READ: u64 = 100 << 20;

/// Lets every backend load a circuit's parameters the first time they are used (each checked
/// instance of a parameter file once).
///
/// Only a bad parameter file (PARAMS) fails the job: no prover can use it. A GPU without room
/// now (another process holds its memory, the budget is busy) or ever (a card too small) is
/// passed by: its partitions wait for its room at the prover, or go to the other devices or
/// the CPU; `prepare` is tried again for the next partition. A GPU backend's placement runs
/// under the GPU-call watchdog, its deadline grown by the file's read at [`SLOWEST_READ`]: a
/// placement that does not return (a wedged device) is given up, its devices go out of
/// service (hung) and the job goes on without them.
pub(super) fn prepare_backends(inner: &Arc<Inner>, srs: &Arc<Srs>) -> Result<()> {
    if inner.prepared.lock().contains(&srs.generation) {
        return Ok(());
    }
    let mut all = true;
    for (d, b) in inner.backends.iter().enumerate() {
        let n = b.devices().len();
        let placed: Vec<usize> = {
            let devs = inner.devices.lock();
            (0..n)
                .filter(|&sub| devs[inner.slot_base[d] + sub].enabled)
                .collect()
        };
        let res = if !b.is_gpu() || n == 0 {
            b.prepare(srs)
        } else if placed.is_empty() {
            // Every device out of service: prepared once one comes back.
            all = false;
            continue;
        } else {
            let extra = Duration::from_secs(srs.file_len / SLOWEST_READ);
            let s = srs.clone();
            super::watchdog::watched(inner, d, PREPARE_KEY, &placed, 0, extra, move |i| {
                i.backends[d].prepare(&s)
            })
            .unwrap_or_else(|| {
                Err(Error::proving(
                    "placing them on the GPU was past its deadline: given up",
                ))
            })
        };
        match res {
            Ok(()) => {}
            Err(e) if e.status == Status::Params => return Err(e),
            Err(e) => {
                all = false;
                let mut said = inner.prepare_said.lock();
                if said.insert((srs.generation, e.status as i32)) {
                    log::warn!(
                        "{}: cannot take the parameters {} now ({}); its partitions {}",
                        b.name(),
                        srs.path.display(),
                        e.message,
                        if e.status == Status::ResourceExhausted {
                            "wait for its room, then go to the CPU"
                        } else {
                            "go to the other devices or the CPU"
                        }
                    );
                }
            }
        }
    }
    if all {
        inner.prepared.lock().insert(srs.generation);
        if let Some((need, false)) = super::admission::cpu_fallback(inner, srs) {
            log::warn!(
                "{}: a partition sent to the CPU (a fallback from the GPUs) would need {} MiB \
                 of host memory, which cannot fit in the {} MiB memory budget beside what the \
                 provers hold: it would fail its job (status cpu_fallback_unfit)",
                srs.path.display(),
                need >> 20,
                inner.budget.total() >> 20
            );
        }
    }
    Ok(())
}

pub(super) fn synth_worker(inner: &Arc<Inner>, w: usize) {
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
        // Do not run ahead of the provers: synthesized partitions hold their memory until
        // proved. A partition that would be proved before every one waiting (a higher class,
        // or priority) is not held back: it jumps the queue at the GPU too.
        inner.prove_q.wait_below(lookahead, |top| {
            !inner.running.load(Ordering::Acquire)
                || inner
                    .synth_q
                    .top_rank()
                    .is_some_and(|r| top.is_none_or(|t| r > t))
        });
        let Some((key, item)) = inner.synth_q.pop() else {
            break;
        };
        let SynthItem {
            job,
            partition,
            check_again,
        } = item;
        if job.stopped() {
            continue;
        }
        let res = catch("synthesis worker", Status::Panic, || {
            synthesize_one(inner, w, key, &job, partition, check_again)
        });
        if let Err(e) = res {
            finish(inner, &job, Err(e));
        }
    }
}

/// Reserves `bytes` of the memory budget for partition `k` of `job`; None where the job or the
/// engine ended while it waited for room.
fn reserve(inner: &Inner, job: &Job, k: usize, bytes: u64) -> Result<Option<Reservation>> {
    let stop = || inner.give_up(job);
    match inner
        .budget
        .acquire(bytes, &format!("partition {k} of job {}", job.id), stop)
    {
        Ok(r) => Ok(Some(r)),
        Err(e) if matches!(e.status, Status::Cancelled | Status::NotRunning) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Hands a synthesized partition on: to the prover queue, or, where `check_again`, to the CPU
/// retry worker.
fn hand_on(inner: &Inner, w: usize, key: Key, item: ProveItem, check_again: bool) -> Result<()> {
    let (job, k) = (item.job.clone(), item.partition);
    if check_again {
        // On the CPU, on the slot of the device that made the first proof (for its events).
        let slot = job.state.lock().reports[k].device;
        let again = RetryItem {
            item,
            slot,
            pickup: Instant::now(),
            r: Fr::random(OsRng),
            s: Fr::random(OsRng),
        };
        return push_retry(inner, again).map_err(|()| not_running());
    }
    inner
        .timeline
        .emit(EventKind::ChanSend, job.id, k as u32, w as u32, 0, "");
    if inner.prove_q.push(key, item).is_err() {
        return Err(not_running());
    }
    // A job that ended between the caller's check and the push (its queued items were taken
    // out before this one arrived) must not leave this partition's memory in the queue.
    if job.stopped() {
        let id = job.id;
        drop(inner.prove_q.remove_if(|it| it.job.id == id));
    }
    Ok(())
}

/// The parameters of `job`'s circuits, the GPUs prepared for them, and how partition `k` is
/// synthesized: the full assignment for the CPU where `check_again`, else once the circuit's
/// recording is ready, as [`plan`] says. None where the job stopped meanwhile.
fn parameters_and_plan(
    inner: &Arc<Inner>,
    circuits: &Arc<dyn SealCircuits>,
    job: &Arc<Job>,
    k: usize,
    check_again: bool,
) -> Result<Option<(Arc<Srs>, Plan)>> {
    let srs = inner.srs_for(circuits.params_id(), circuits.shape().sector_size)?;
    // Before the GPUs place the parameters: their plan counts what the kind's witnesses hold.
    srs.expect_witness_shape(circuits.witness_shape());
    prepare_backends(inner, &srs)?;
    if check_again {
        let cpu = Plan {
            held: None,
            path: HostPath::Cpu,
        };
        return Ok(Some((srs, cpu)));
    }
    wait_for_recording(inner, circuits, &srs, job, k)?;
    if job.stopped() {
        return Ok(None);
    }
    let plan = plan(inner, circuits.params_id(), &srs);
    Ok(Some((srs, plan)))
}

/// Synthesizes partition `k` of `job` and hands it on: to the prover queue, or, where
/// `check_again` (its first proof failed the self-check), synthesized in full to the CPU
/// retry worker.
fn synthesize_one(
    inner: &Arc<Inner>,
    w: usize,
    key: Key,
    job: &Arc<Job>,
    k: usize,
    check_again: bool,
) -> Result<()> {
    let Ok(circuits) = job.circuits() else {
        return Ok(());
    };
    let Some((srs, plan)) = parameters_and_plan(inner, &circuits, job, k, check_again)? else {
        return Ok(());
    };
    let bytes = inner.partition_bytes(circuits.params_id(), &srs, plan.path);
    let Some(reservation) = reserve(inner, job, k, bytes)? else {
        return Ok(());
    };
    let start = Instant::now();
    inner
        .timeline
        .emit(EventKind::SynthStart, job.id, k as u32, w as u32, bytes, "");
    inner.counters.synthesizing.fetch_add(1, Ordering::Relaxed);
    let synthesized = if check_again {
        circuits
            .synthesize(k, Some(srs.size), Some(job.stop.clone()))
            .map(|a| (Work::Assignment(a), "full;check-again"))
    } else {
        synthesize_partition(inner, &circuits, &srs, job, k, plan)
    };
    drop(circuits);
    inner.counters.synthesizing.fetch_sub(1, Ordering::Relaxed);
    let (work, path) = match synthesized {
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
        path,
    );
    {
        let mut st = job.state.lock();
        let r = &mut st.reports[k];
        r.partition = k;
        r.queue_ms = ms(start - job.submitted);
        r.synth_ms = synth_ms;
        r.synth_worker = w;
        r.reserved_bytes = bytes;
        st.paths[k] = path;
    }
    if job.stopped() {
        return Ok(());
    }
    let item = ProveItem {
        job: job.clone(),
        partition: k,
        srs,
        work,
        reservation,
        synth_end,
        room_since: None,
    };
    hand_on(inner, w, key, item, check_again)
}
