//! Prover dispatch: one prover worker per backend takes ready partitions in batches and proves
//! them; a partition a GPU failed on goes to the CPU retry worker, so that the GPU's worker goes
//! on with the next call at once; a job's last proof hands it to `assembly` (assembled and
//! self-checked).
//!
//! Each worker loop catches panics: a panic fails the jobs of the batch it was working on
//! (PANIC) and the worker keeps serving.

use std::{
    collections::BTreeMap,
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use rand::rngs::OsRng;

use super::{
    assembly::complete,
    finish::finish,
    handoff::{push_retry, ProveItem, RetryItem, SynthItem, Work},
    health,
    jobs::{ms, Job, PartitionReport},
    not_running, synth, watchdog, Inner,
};
use crate::{
    budget::Reservation,
    error::{catch, Error, Result, Status},
    params::{HostPath, Srs},
    pce,
    prover::{is_yielded, Between, ProverBackend, ProvingAssignment, StageTimes},
    timeline::EventKind,
};

/// A GPU backend that had no room for partitions: its worker waits until `until` before its
/// next call (the partitions wait in the prover queue, where another device may take them),
/// the wait doubling from [`ROOM_FIRST_WAIT`] up to [`ROOM_MAX_WAIT`] while there is none.
#[derive(Default)]
pub(super) struct RoomWait {
    pub(super) until: Option<Instant>,
    backoff: Duration,
    /// Since when the backend has found no room (None: it had room at its last call).
    pub(super) since: Option<Instant>,
    /// When the wait was last logged.
    said: Option<Instant>,
}

const ROOM_FIRST_WAIT: Duration = Duration::from_secs(1);
const ROOM_MAX_WAIT: Duration = Duration::from_secs(8);
/// How often a wait for room is logged while it lasts.
const ROOM_LOG_EVERY: Duration = Duration::from_secs(30);

/// Sleeps until backend `d`'s wait for room ends (or the engine stops).
fn pause_while_no_room(inner: &Inner, d: usize) {
    let Some(until) = inner.room_wait[d].lock().until else {
        return;
    };
    while inner.running.load(Ordering::Acquire) && Instant::now() < until {
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(100)));
    }
}

/// After a call of backend `d`: `waited` partitions had no room and went back to wait for it,
/// `proved` were proved. Sets the next wait (or ends it) and logs it.
fn note_room(inner: &Inner, d: usize, waited: usize, proved: usize, why: Option<&str>) {
    let mut w = inner.room_wait[d].lock();
    let name = inner.backends[d].name();
    if waited == 0 {
        if proved > 0 {
            if let Some(since) = w.since {
                log::info!(
                    "{name}: room on the GPU again after {:.1} s of waiting",
                    since.elapsed().as_secs_f64()
                );
            }
            *w = RoomWait::default();
        }
        return;
    }
    let now = Instant::now();
    w.backoff = if w.backoff.is_zero() {
        ROOM_FIRST_WAIT
    } else {
        (w.backoff * 2).min(ROOM_MAX_WAIT)
    };
    w.until = Some(now + w.backoff);
    let since = *w.since.get_or_insert(now);
    if w.said.is_none_or(|t| t.elapsed() >= ROOM_LOG_EVERY) {
        w.said = Some(now);
        log::warn!(
            "{name}: no room for {waited} partition(s) ({}): waiting for the GPU (for {:.0} s \
             so far; next try in {:.0} s; after {} s a partition goes to the CPU)",
            why.unwrap_or("no device memory"),
            since.elapsed().as_secs_f64(),
            w.backoff.as_secs_f64(),
            inner.cfg.gpu_room_wait.unwrap_or_default().as_secs()
        );
    }
}

pub(super) fn prove_worker(inner: &Arc<Inner>, d: usize) {
    let backend = &inner.backends[d];
    while let Some((_, first)) = inner.prove_q.pop() {
        pause_while_no_room(inner, d);
        // A multi-GPU backend takes one ready partition per usable device (same parameters).
        let mut items = vec![first];
        let mut jobs = Vec::new();
        let res = catch("prover worker", Status::Panic, || {
            health::readmit_due(inner, d);
            let width = backend.max_batch().max(1);
            while items.len() < width {
                let gen = items[0].srs.generation;
                match inner.prove_q.try_pop_if(|it| it.srs.generation == gen) {
                    Some((_, it)) => items.push(it),
                    None => break,
                }
            }
            items.retain(|it| !it.job.stopped());
            jobs = items.iter().map(|it| it.job.clone()).collect();
            if !items.is_empty() {
                prove_items(inner, d, std::mem::take(&mut items));
            }
            Ok(())
        });
        if let Err(e) = res {
            for job in jobs.iter().chain(items.iter().map(|it| &it.job)) {
                finish(inner, job, Err(e.clone()));
            }
            let base = inner.slot_base[d];
            let n = backend.devices().len();
            inner.devices.lock()[base..base + n]
                .iter_mut()
                .for_each(|dv| dv.current = None);
        }
    }
}

/// Proves one batch of ready partitions on backend `d`, then settles each: proved (recorded in
/// its job), failed on a GPU (handed to the CPU retry queue), or failed for good (its job fails).
fn prove_items(inner: &Arc<Inner>, d: usize, items: Vec<ProveItem>) {
    let backend = inner.backends[d].as_ref();
    let pickup = Instant::now();
    let n = items.len();
    let srs = items[0].srs.clone();
    let rs: Vec<Fr> = (0..n).map(|_| Fr::random(OsRng)).collect();
    let ss: Vec<Fr> = (0..n).map(|_| Fr::random(OsRng)).collect();
    let (works, mut parts) = in_flight(items);
    let use_gpu = backend.max_batch() > 0 || !backend.is_gpu();
    let guessed = announce(inner, backend, inner.slot_base[d], use_gpu, &parts);
    let proving = &inner.counters.proving;
    proving.fetch_add(n as u64, Ordering::Relaxed);
    let done = run_batch(
        inner,
        d,
        use_gpu,
        &guessed,
        &srs,
        (&rs, &ss),
        works,
        &mut parts,
    );
    proving.fetch_sub(n as u64, Ordering::Relaxed);
    let Some((works, times, results)) = done else {
        synthesize_again(inner, &guessed, parts);
        return;
    };
    if backend.is_gpu() && use_gpu {
        record_health(inner, d, &results);
    }
    let back = Returned {
        inner,
        srs: &srs,
        pickup,
        prove_ms: ms(pickup.elapsed()),
        use_gpu,
    };
    let waits = waits_for_room(inner, d, use_gpu, &results, &parts, &works);
    let settled = Settled {
        d,
        guessed,
        waits,
        works,
        times,
        rs,
        ss,
    };
    settled.settle(&back, results, parts);
}

/// Each item's work, and the rest of it while it is proved.
fn in_flight(items: Vec<ProveItem>) -> (Vec<Option<Work>>, Vec<InFlight>) {
    items
        .into_iter()
        .map(|it| {
            let ProveItem {
                job,
                partition,
                srs: _,
                work,
                reservation,
                synth_end,
                room_since,
            } = it;
            let part = InFlight {
                job,
                k: partition,
                reservation: Some(reservation),
                synth_end,
                room_since,
            };
            (Some(work), part)
        })
        .unzip()
}

/// One call of backend `d` on the batch, under the watchdog where it is a GPU's. The call owns
/// the partitions' work and memory while it runs (a call the watchdog gives up on keeps them
/// until it returns); None where the watchdog gave up on it. Preemption between partitions: the
/// call stops before its next partition where one that ranks above every partition of the
/// batch (a higher class, or priority) waits.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn run_batch(
    inner: &Arc<Inner>,
    d: usize,
    use_gpu: bool,
    guessed: &[usize],
    srs: &Arc<Srs>,
    (rs, ss): (&[Fr], &[Fr]),
    works: Vec<Option<Work>>,
    parts: &mut [InFlight],
) -> Option<(Vec<Option<Work>>, Vec<StageTimes>, Results)> {
    let n = works.len();
    let batch = Batch {
        works,
        reservations: parts
            .iter_mut()
            .filter_map(|p| p.reservation.take())
            .collect(),
        times: vec![StageTimes::default(); n],
    };
    let held: u64 = batch.reservations.iter().map(Reservation::bytes).sum();
    let rank = parts
        .iter()
        .map(|p| p.job.key(p.k).rank())
        .max()
        .unwrap_or((0, i32::MIN));
    let call = {
        let (srs, rs, ss) = (srs.clone(), rs.to_vec(), ss.to_vec());
        move |inner: &Inner| {
            let mut b = batch;
            let backend = inner.backends[d].as_ref();
            let stop = || inner.prove_q.top_rank().is_some_and(|r| r > rank);
            let results = prove_or_refuse(
                backend,
                use_gpu,
                &mut b.works,
                &srs,
                (&rs, &ss),
                &mut b.times,
                &stop,
            );
            (b, results)
        }
    };
    let (batch, results) = if inner.backends[d].is_gpu() && use_gpu {
        let base = inner.slot_base[d];
        let placed: Vec<usize> = guessed.iter().map(|s| s - base).collect();
        watchdog::watched(
            inner,
            d,
            srs.generation,
            &placed,
            held,
            Duration::ZERO,
            call,
        )?
    } else {
        call(inner)
    };
    for (p, r) in parts.iter_mut().zip(batch.reservations) {
        p.reservation = Some(r);
    }
    Some((batch.works, batch.times, results))
}

/// What a batch's backend returned, partition by partition: the device it ran on (within the
/// backend) and the proof or error.
type Results = Vec<(usize, Result<Proof<Bls12>>)>;

/// Whether a partition that found no room on the GPU (another process holds the device's
/// memory) waits for room in the queue, up to the configured time, rather than take minutes
/// on the CPU. The device's wait is set (or ended) here, before any partition is settled: a
/// job that completes sees its device's status as it is after this call.
fn waits_for_room(
    inner: &Inner,
    d: usize,
    use_gpu: bool,
    results: &Results,
    parts: &[InFlight],
    works: &[Option<Work>],
) -> Vec<bool> {
    let backend = inner.backends[d].as_ref();
    let room_wait = inner.cfg.gpu_room_wait.unwrap_or_default();
    let waits: Vec<bool> = results
        .iter()
        .zip(parts)
        .zip(works)
        .map(|(((_, r), p), w)| {
            gpu_err(backend, r, Status::ResourceExhausted)
                && use_gpu
                && w.is_some()
                && p.room_since.is_none_or(|t| t.elapsed() < room_wait)
                && !room_wait.is_zero()
        })
        .collect();
    if backend.is_gpu() && use_gpu {
        let why = results
            .iter()
            .zip(&waits)
            .find_map(|((_, r), &w)| if w { r.as_ref().err() } else { None })
            .map(|e| e.message.clone());
        let waited = waits.iter().filter(|&&w| w).count();
        let proved = results.iter().filter(|(_, r)| r.is_ok()).count();
        note_room(inner, d, waited, proved, why.as_deref());
    }
    waits
}

/// Whether `r` is an error of status `s` from a GPU backend.
fn gpu_err(backend: &dyn ProverBackend, r: &Result<Proof<Bls12>>, s: Status) -> bool {
    matches!(r, Err(e) if backend.is_gpu() && e.status == s)
}

/// A returned batch's partitions with what settling each needs.
struct Settled {
    d: usize,
    /// The slot each partition was announced on.
    guessed: Vec<usize>,
    waits: Vec<bool>,
    works: Vec<Option<Work>>,
    times: Vec<StageTimes>,
    rs: Vec<Fr>,
    ss: Vec<Fr>,
}

impl Settled {
    /// Counts each partition's outcome on its device, then settles it: proved, yielded to a
    /// higher class, waiting for room, retried on the CPU, or failed.
    fn settle(mut self, back: &Returned<'_>, results: Results, parts: Vec<InFlight>) {
        let inner = back.inner;
        let backend = inner.backends[self.d].as_ref();
        let base = inner.slot_base[self.d];
        for (i, ((sub, result), p)) in results.into_iter().zip(parts).enumerate() {
            let slot = base + sub;
            {
                let mut devs = inner.devices.lock();
                devs[self.guessed[i]].current = None;
                let dv = &mut devs[slot];
                dv.current = None;
                dv.partitions_proved += result.is_ok() as u64;
                dv.no_room += gpu_err(backend, &result, Status::ResourceExhausted) as u64;
                dv.room_waits += self.waits[i] as u64;
                dv.passed_over +=
                    (back.use_gpu && gpu_err(backend, &result, Status::Unsupported)) as u64;
            }
            let work = &mut self.works[i];
            match result {
                Ok(proof) => back.proved(p, slot, self.times[i], proof),
                Err(e) if is_yielded(&e) && work.is_some() => {
                    back.yielded(p, slot, work.take().expect("checked above"));
                }
                Err(_) if self.waits[i] => {
                    back.wait_for_room(p, slot, work.take().expect("checked above"));
                }
                // A GPU error must not fail the job: GPU backends leave the work in place, and
                // the CPU retry worker proves it again while this worker goes on.
                Err(e) if backend.is_gpu() && work.is_some() => {
                    let w = work.take().expect("checked above");
                    back.retry_on_cpu(p, slot, w, e, self.rs[i], self.ss[i]);
                }
                Err(e) => back.fail(p, slot, e),
            }
        }
    }
}

/// A partition of a batch while the backend proves it: what its outcome needs besides the
/// result. Its reserved memory goes with the call while it runs.
struct InFlight {
    job: Arc<Job>,
    k: usize,
    reservation: Option<Reservation>,
    synth_end: Instant,
    room_since: Option<Instant>,
}

/// What a prover call owns while it runs.
struct Batch {
    works: Vec<Option<Work>>,
    reservations: Vec<Reservation>,
    times: Vec<StageTimes>,
}

/// The watchdog gave up on the call proving `parts` (placed on `slots`): each partition is
/// synthesized again, for the devices left in service or the CPU (the call keeps the memory
/// of the first synthesis until it returns).
fn synthesize_again(inner: &Inner, slots: &[usize], parts: Vec<InFlight>) {
    for (p, &slot) in parts.into_iter().zip(slots) {
        inner.devices.lock()[slot].current = None;
        emit(
            inner,
            EventKind::GpuEnd,
            &p.job,
            p.k,
            slot,
            0.0,
            "hung;synthesize-again",
        );
        if p.job.stopped() {
            continue;
        }
        let key = p.job.key(p.k);
        let again = SynthItem::new(p.job.clone(), p.k);
        if inner.synth_q.push(key, again).is_err() {
            finish(inner, &p.job, Err(not_running()));
        }
    }
}

/// Marks the batch's partitions as picked up and started (timeline events, each device's
/// current partition) on the slots they are expected to run on, which it returns.
fn announce(
    inner: &Inner,
    backend: &dyn ProverBackend,
    base: usize,
    use_gpu: bool,
    parts: &[InFlight],
) -> Vec<usize> {
    let n = parts.len();
    // Events: the slot is a guess until the backend says where each partition ran.
    let mut guessed = Vec::with_capacity(n);
    for (i, p) in parts.iter().enumerate() {
        let slot = base + if use_gpu { backend.device_for(i, n) } else { 0 };
        let name = if use_gpu { backend.name() } else { "cpu" };
        emit(inner, EventKind::GpuPickup, &p.job, p.k, slot, 0.0, name);
        emit(inner, EventKind::GpuStart, &p.job, p.k, slot, 0.0, name);
        inner.devices.lock()[slot].current = Some((p.job.id, p.k));
        guessed.push(slot);
    }
    guessed
}

/// Proves the batch on `backend` (a panic fails every partition), or, where `use_gpu` is false
/// (every device of a GPU backend out of service), fails each partition as UNSUPPORTED.
fn prove_or_refuse(
    backend: &dyn ProverBackend,
    use_gpu: bool,
    works: &mut [Option<Work>],
    srs: &Srs,
    (rs, ss): (&[Fr], &[Fr]),
    times: &mut [StageTimes],
    stop: Between<'_>,
) -> Vec<(usize, Result<Proof<Bls12>>)> {
    let n = works.len();
    if use_gpu {
        catch("the prover", Status::Panic, || {
            Ok(prove_works(backend, works, srs, (rs, ss), times, stop))
        })
        .unwrap_or_else(|e| {
            (0..n)
                .map(|i| (backend.device_for(i, n), Err(e.clone())))
                .collect()
        })
    } else {
        // Every device of this backend is out of service: its partitions go to the CPU.
        (0..n)
            .map(|_| (0, Err(Error::new(Status::Unsupported, "no usable device"))))
            .collect()
    }
}

/// Device health: one outcome per device per call. Only device faults count (not, say, a
/// partition that does not fit the parameters, or no device being usable).
fn record_health(inner: &Inner, d: usize, results: &[(usize, Result<Proof<Bls12>>)]) {
    let mut outcome: BTreeMap<usize, bool> = BTreeMap::new();
    for (sub, r) in results {
        let fault = matches!(r, Err(e) if matches!(e.status, Status::Proving | Status::Panic));
        *outcome.entry(*sub).or_default() |= fault;
    }
    for (sub, fault) in outcome {
        health::record_call(inner, d, sub, fault);
    }
}

/// A batch back from the backend: what its partitions' outcomes share.
struct Returned<'a> {
    inner: &'a Inner,
    srs: &'a Arc<Srs>,
    pickup: Instant,
    prove_ms: f64,
    /// Whether the backend ran the batch (false: none of its devices was usable).
    use_gpu: bool,
}

impl Returned<'_> {
    /// Partition `p` proved on `slot`: recorded in its job (the last one completes it).
    fn proved(&self, p: InFlight, slot: usize, stages: StageTimes, proof: Proof<Bls12>) {
        let InFlight {
            job,
            k,
            reservation,
            synth_end,
            ..
        } = p;
        let report = PartitionReport {
            wait_ms: ms(self.pickup - synth_end),
            prove_ms: self.prove_ms,
            stages,
            device: slot,
            ..Default::default()
        };
        let name = self.inner.devices.lock()[slot].name.clone();
        emit(
            self.inner,
            EventKind::GpuEnd,
            &job,
            k,
            slot,
            self.prove_ms,
            &name,
        );
        drop(reservation);
        complete(self.inner, &job, k, self.srs, proof, report);
    }

    /// Partition `p` as a prover item again, with its work and memory.
    fn item(&self, p: InFlight, work: Work, room_since: Option<Instant>) -> ProveItem {
        let InFlight {
            job,
            k,
            reservation,
            synth_end,
            ..
        } = p;
        ProveItem {
            job,
            partition: k,
            srs: self.srs.clone(),
            work,
            reservation: reservation.expect("a returned call gives its partitions' memory back"),
            synth_end,
            room_since,
        }
    }

    /// The call stopped before partition `p` for one of a higher rank: it goes back to the
    /// prover queue with its work and memory, and its device takes it up after that one.
    fn yielded(&self, p: InFlight, slot: usize, work: Work) {
        let inner = self.inner;
        let (job, k) = (p.job.clone(), p.k);
        emit(inner, EventKind::GpuEnd, &job, k, slot, 0.0, "yielded");
        let room_since = p.room_since;
        let item = self.item(p, work, room_since);
        if inner.prove_q.push(job.key(k), item).is_err() {
            finish(inner, &job, Err(not_running()));
        }
    }

    /// The GPU at `slot` had no room for partition `p` now: it goes back to the prover queue
    /// with its work and memory, to wait for the room (the job fails only where the engine
    /// was shut down meanwhile).
    fn wait_for_room(&self, p: InFlight, slot: usize, work: Work) {
        let inner = self.inner;
        let (job, k) = (p.job.clone(), p.k);
        emit(
            inner,
            EventKind::GpuEnd,
            &job,
            k,
            slot,
            self.prove_ms,
            "no-room;wait",
        );
        let since = p.room_since.unwrap_or_else(Instant::now);
        let item = self.item(p, work, Some(since));
        if inner.prove_q.push(job.key(k), item).is_err() {
            finish(inner, &job, Err(not_running()));
        }
    }

    /// Partition `p` failed on the GPU at `slot`: its work goes to the CPU retry queue (the job
    /// fails only where the engine was shut down meanwhile).
    fn retry_on_cpu(&self, p: InFlight, slot: usize, work: Work, e: Error, r: Fr, s: Fr) {
        let inner = self.inner;
        let (job, k) = (p.job.clone(), p.k);
        log::warn!(
            "{}: partition {k} of job {} failed ({}): proving it on the CPU",
            inner.devices.lock()[slot].name,
            job.id,
            e.message
        );
        if self.use_gpu {
            emit(
                inner,
                EventKind::GpuEnd,
                &job,
                k,
                slot,
                self.prove_ms,
                "failed;retry=cpu",
            );
        }
        let item = RetryItem {
            item: self.item(p, work, None),
            slot,
            pickup: self.pickup,
            r,
            s,
        };
        if push_retry(inner, item).is_err() {
            finish(inner, &job, Err(not_running()));
        }
    }

    /// Partition `p` failed where no retry can help: its job fails.
    fn fail(&self, p: InFlight, slot: usize, e: Error) {
        emit(
            self.inner,
            EventKind::GpuEnd,
            &p.job,
            p.k,
            slot,
            self.prove_ms,
            "failed",
        );
        drop(p.reservation);
        finish(self.inner, &p.job, Err(e));
    }
}

/// The indices of `works` that are witnesses, grouped by the recording they are for (in the
/// order first met), and those that are assignments.
fn by_recording(works: &[Option<Work>]) -> (Vec<(Arc<pce::Held>, Vec<usize>)>, Vec<usize>) {
    let mut groups: Vec<(Arc<pce::Held>, Vec<usize>)> = Vec::new();
    let mut asg_idx = Vec::new();
    for (i, w) in works.iter().enumerate() {
        match w {
            Some(Work::Witness(h, ..)) => {
                match groups.iter_mut().find(|(g, _)| Arc::ptr_eq(g, h)) {
                    Some((_, idx)) => idx.push(i),
                    None => groups.push((h.clone(), vec![i])),
                }
            }
            _ => asg_idx.push(i),
        }
    }
    (groups, asg_idx)
}

/// Proves a batch on `backend`: the witnesses through the backend's own product, one call per
/// recording (a second one where a recording was replaced meanwhile), the assignments in one
/// `prove_batch`. Result `i` is for `works[i]`; the work stays in place where the backend only
/// read it.
fn prove_works(
    backend: &dyn ProverBackend,
    works: &mut [Option<Work>],
    srs: &Srs,
    (rs, ss): (&[Fr], &[Fr]),
    times: &mut [StageTimes],
    stop: Between<'_>,
) -> Vec<(usize, Result<Proof<Bls12>>)> {
    let n = works.len();
    let (groups, asg_idx) = by_recording(works);
    let mut results: Vec<Option<(usize, Result<Proof<Bls12>>)>> = (0..n).map(|_| None).collect();
    let pick = |idx: &[usize], v: &[Fr]| idx.iter().map(|&i| v[i]).collect::<Vec<Fr>>();
    let mut store = |idx: &[usize], out: Vec<(usize, Result<Proof<Bls12>>)>, t: Vec<StageTimes>| {
        for ((&i, r), t) in idx.iter().zip(out).zip(t) {
            results[i] = Some(r);
            times[i] = t;
        }
    };

    for (held, idx) in &groups {
        let ws: Vec<_> = idx
            .iter()
            .map(|&i| match &works[i] {
                Some(Work::Witness(_, w, _)) => w.classed(),
                _ => unreachable!("grouped by witness"),
            })
            .collect();
        let mut t = vec![StageTimes::default(); idx.len()];
        let out = backend
            .prove_witness_batch_between(
                &held.r1cs(),
                &ws,
                srs,
                &pick(idx, rs),
                &pick(idx, ss),
                &mut t,
                stop,
            )
            .unwrap_or_else(|| {
                // The retry worker computes the assignments on the CPU.
                let e = Error::new(Status::Unsupported, "the prover takes no witnesses");
                idx.iter().map(|_| (0, Err(e.clone()))).collect()
            });
        store(idx, out, t);
    }

    if !asg_idx.is_empty() {
        let mut asgs: Vec<Option<ProvingAssignment>> = asg_idx
            .iter()
            .map(|&i| match works[i].take() {
                Some(Work::Assignment(a)) => Some(a),
                _ => None,
            })
            .collect();
        let mut t = vec![StageTimes::default(); asg_idx.len()];
        let out = backend.prove_batch_between(
            &mut asgs,
            srs,
            &pick(&asg_idx, rs),
            &pick(&asg_idx, ss),
            &mut t,
            stop,
        );
        store(&asg_idx, out, t);
        for (&i, a) in asg_idx.iter().zip(asgs) {
            works[i] = a.map(Work::Assignment);
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| (0, Err(Error::internal("no result from the prover")))))
        .collect()
}

/// A partition event on a prover slot.
fn emit(inner: &Inner, kind: EventKind, job: &Job, k: usize, slot: usize, ms: f64, detail: &str) {
    inner
        .timeline
        .emit(kind, job.id, k as u32, slot as u32, ms as u64, detail);
}

/// The CPU retry worker: proves, one at a time, the partitions a GPU failed on.
pub(super) fn retry_worker(inner: &Arc<Inner>) {
    while let Some((_, it)) = inner.retry_q.pop() {
        let job = it.item.job.clone();
        let held = it.item.reservation.bytes();
        let res = if job.stopped() {
            Ok(())
        } else {
            catch("CPU retry", Status::Panic, || retry_one(inner, it))
        };
        inner.retry_held.fetch_sub(held, Ordering::AcqRel);
        if let Err(e) = res {
            finish(inner, &job, Err(e));
        }
        // Where only GPUs prove, the host copies a retry loaded (47 GB at 32 GiB) go back once
        // no retry is queued: a later retry loads them again.
        if inner.retry_q.len() == 0 && inner.backends.iter().all(|b| b.is_gpu()) {
            inner.srs.release_hosts();
        }
    }
}

/// A reservation (none where nothing more was needed) counted in `retry_held` while it lives.
struct RetryHeld<'a> {
    inner: &'a Inner,
    r: Option<Reservation>,
}

impl<'a> RetryHeld<'a> {
    fn new(inner: &'a Inner, r: Option<Reservation>) -> Self {
        let held = RetryHeld { inner, r };
        inner.retry_held.fetch_add(held.bytes(), Ordering::AcqRel);
        held
    }

    fn bytes(&self) -> u64 {
        self.r.as_ref().map_or(0, Reservation::bytes)
    }
}

impl Drop for RetryHeld<'_> {
    fn drop(&mut self) {
        self.inner
            .retry_held
            .fetch_sub(self.bytes(), Ordering::AcqRel);
    }
}

/// Room on the host for the CPU to prove partition `k` of `job`, which holds `held` bytes for
/// a GPU: the rest of the CPU prover's memory, reserved ahead of new synthesis (like the
/// partitions waiting here, it cannot be given back meanwhile), then the parameters in host
/// memory, the same way. The rest's reservation, or None where the job stopped meanwhile.
fn cpu_room<'a>(
    inner: &'a Arc<Inner>,
    job: &Arc<Job>,
    k: usize,
    srs: &Srs,
    held: u64,
) -> Result<Option<RetryHeld<'a>>> {
    let cannot = |e: Error| {
        Error::new(
            e.status,
            format!(
                "partition {k} failed on the GPU and cannot be proved on the CPU: {}",
                e.message
            ),
        )
    };
    let extra = srs.size.host_bytes(HostPath::Cpu).saturating_sub(held);
    let more = if extra > 0 {
        let r = inner
            .budget
            .acquire_priority(
                extra,
                &format!("the CPU retry of partition {k} of job {}", job.id),
                || inner.retry_held.load(Ordering::Acquire),
                || inner.give_up(job),
            )
            .map_err(cannot)?;
        RetryHeld::new(inner, Some(r))
    } else {
        RetryHeld::new(inner, None)
    };
    if job.stopped() {
        return Ok(None);
    }
    srs.params_waiting(
        || inner.retry_held.load(Ordering::Acquire),
        || inner.give_up(job),
    )
    .map_err(cannot)?;
    Ok((!job.stopped()).then_some(more))
}

fn retry_one(inner: &Arc<Inner>, it: RetryItem) -> Result<()> {
    let RetryItem {
        item:
            ProveItem {
                job,
                partition: k,
                srs,
                work,
                reservation,
                synth_end,
                ..
            },
        slot,
        pickup,
        r,
        s,
    } = it;
    let Some(_more) = cpu_room(inner, &job, k, &srs, reservation.bytes())? else {
        return Ok(());
    };
    let assignment = match work {
        Work::Assignment(a) => a,
        // The CPU prover takes the assignment: computed here from the witness.
        Work::Witness(held, w, maker) => {
            let circuits = job.circuits()?;
            synth::host_assignment(inner, &circuits, &srs, &job, k, held, w, maker)?.0
        }
    };
    if job.stopped() {
        return Ok(());
    }
    emit(inner, EventKind::GpuStart, &job, k, slot, 0.0, "cpu-retry");
    let mut stages = StageTimes::default();
    let mut asg = Some(assignment);
    let proof = inner.fallback.prove(&mut asg, &srs, r, s, &mut stages);
    drop(asg);
    let prove_ms = ms(pickup.elapsed());
    emit(
        inner,
        EventKind::GpuEnd,
        &job,
        k,
        slot,
        prove_ms,
        if proof.is_ok() { "cpu" } else { "failed" },
    );
    drop(reservation);
    let proof = proof?;
    inner.counters.cpu_retries.fetch_add(1, Ordering::Relaxed);
    let report = PartitionReport {
        wait_ms: ms(pickup - synth_end),
        prove_ms,
        stages,
        device: slot,
        cpu_retry: true,
        ..Default::default()
    };
    complete(inner, &job, k, &srs, proof, report);
    Ok(())
}
