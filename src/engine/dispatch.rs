//! Prover dispatch: prover workers (one per backend) take ready partitions in batches, prove
//! them, retry a GPU's failures on the CPU, and assemble and self-check finished jobs.

use std::{
    sync::{atomic::Ordering, Arc},
    time::Instant,
};

use bellperson::groth16::{verify_proofs_batch, Proof};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use rand::rngs::OsRng;

use super::{
    health::{set_device, DEVICE_FAILURE_LIMIT},
    jobs::{finish, ms, Job, JobOutput},
    Inner,
};
use crate::{
    budget::Reservation,
    error::{Error, Result, Status},
    params::Srs,
    prover::{cpu::CpuProver, ProverBackend, ProvingAssignment, StageTimes},
    timeline::EventKind,
};

pub(super) struct ProveItem {
    pub(super) job: Arc<Job>,
    pub(super) partition: usize,
    pub(super) srs: Arc<Srs>,
    pub(super) assignment: ProvingAssignment,
    pub(super) _reservation: Reservation,
    pub(super) synth_end: Instant,
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

pub(super) fn prove_worker(inner: &Arc<Inner>, d: usize) {
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
pub(super) struct Proved {
    pub(super) slot: usize,
    pub(super) result: Result<Proof<Bls12>>,
    pub(super) stages: StageTimes,
    /// Proved by the CPU fallback (after a GPU error, or with every GPU out of service).
    pub(super) on_cpu: bool,
}

pub(super) fn prove_items(
    inner: &Arc<Inner>,
    d: usize,
    backend: &dyn ProverBackend,
    items: Vec<ProveItem>,
) {
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
pub(super) fn assemble(inner: &Inner, job: &Job, srs: &Srs) -> Result<JobOutput> {
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
