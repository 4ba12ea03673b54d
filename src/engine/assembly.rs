//! A job's end when its last partition is proved: the proofs assembled in partition order and
//! (unless disabled) self-checked with the circuit's verifying key before the job finishes.
//!
//! A self-check that fails does not end the job at once: each partition is verified on its
//! own, and each bad one is synthesized again in full and proved on the CPU (`check_again`),
//! counted as a fault of the GPU that made it. Once those verify, the job finishes, and where a
//! bad proof had been made under the circuit's recording, the recording is distrusted. A
//! partition that fails again, proved on the CPU from full synthesis, fails the job
//! (VERIFY_FAILED).

use std::{sync::Arc, time::Instant};

use bellperson::groth16::{verify_proof, verify_proofs_batch, Proof};
use blstrs::{Bls12, Scalar as Fr};
use rand::rngs::OsRng;

use super::{
    finish::finish,
    handoff::SynthItem,
    health,
    jobs::{ms, CheckAgain, Job, JobOutput, PartitionReport},
    not_running, Inner,
};
use crate::{
    error::{Error, Result, Status},
    params::Srs,
};

/// Records partition `k`'s proof; the last one assembles and self-checks the job. The proofs
/// are taken out under the job's lock, so a cancel that comes in between finds a job that is
/// either still open or already done, never one half taken apart.
pub(super) fn complete(
    inner: &Inner,
    job: &Arc<Job>,
    k: usize,
    srs: &Srs,
    proof: Proof<Bls12>,
    rep: PartitionReport,
) {
    let all = {
        let mut st = job.state.lock();
        if st.result.is_some() {
            return;
        }
        st.proofs[k] = Some(proof);
        let r = &mut st.reports[k];
        r.wait_ms = rep.wait_ms;
        r.prove_ms = rep.prove_ms;
        r.stages = rep.stages;
        r.device = rep.device;
        r.cpu_retry = rep.cpu_retry;
        st.remaining -= 1;
        if st.remaining > 0 {
            return;
        }
        let proofs: Option<Vec<Proof<Bls12>>> = st.proofs.iter_mut().map(|p| p.take()).collect();
        (proofs, st.reports.clone(), st.again.clone())
    };
    let out = match all {
        (Some(proofs), reports, again) => match assemble(inner, job, &proofs, reports, srs) {
            Checked::Done(out) => {
                distrust_recording(inner, job, &again);
                if job.aggregate.is_some() {
                    let item = Aggregation {
                        job: job.clone(),
                        out,
                    };
                    if inner.aggregate_q.push(job.key(0), item).is_err() {
                        finish(inner, job, Err(not_running()));
                    }
                    return;
                }
                Ok(out)
            }
            Checked::Bad(bad, e) => match bad.iter().find(|&&k| again[k].is_some()) {
                // Proved on the CPU from full synthesis and still wrong: no prover is to blame
                // that another try would change.
                Some(&k) => Err(Error::new(
                    e.status,
                    format!(
                        "{}; partition {k} was proved again on the CPU from full synthesis and \
                         still does not verify",
                        e.message
                    ),
                )),
                None => return prove_again(inner, job, proofs, &bad),
            },
            Checked::Failed(e) => Err(e),
        },
        (None, ..) => Err(Error::internal(format!(
            "job {}: a partition's proof is missing at assembly",
            job.id
        ))),
    };
    finish(inner, job, out);
}

/// What the self-check made of a job's proofs.
enum Checked {
    Done(JobOutput),
    /// These partitions' proofs do not verify (the error says so).
    Bad(Vec<usize>, Error),
    Failed(Error),
}

/// Serializes and (unless disabled) verifies a job whose partitions are all proved, with the
/// verifying key of the `.vk` file; where the batch fails, partition by partition.
fn assemble(
    inner: &Inner,
    job: &Job,
    proofs: &[Proof<Bls12>],
    reports: Vec<PartitionReport>,
    srs: &Srs,
) -> Checked {
    let mut bytes = Vec::with_capacity(proofs.len() * crate::PROOF_BYTES);
    for p in proofs {
        if let Err(e) = p.write(&mut bytes) {
            return Checked::Failed(Error::internal(format!("serializing a proof: {e}")));
        }
    }
    let t = Instant::now();
    let mut verified = false;
    if inner.cfg.self_check {
        match bad_partitions(job, proofs, srs) {
            Ok(bad) if bad.is_empty() => verified = true,
            Ok(bad) => {
                let e = Error::new(
                    Status::VerifyFailed,
                    format!(
                        "self-check failed: the proofs of partitions {bad:?} do not verify with \
                         the circuit's .vk"
                    ),
                );
                return Checked::Bad(bad, e);
            }
            Err(e) => return Checked::Failed(e),
        }
    }
    Checked::Done(JobOutput {
        job: job.id,
        proof: bytes,
        partitions: reports,
        wall_ms: ms(job.submitted.elapsed()),
        verify_ms: ms(t.elapsed()),
        verified,
        aggregate_ms: 0.0,
    })
}

/// A non-interactive PoRep job whose partition proofs are all proved and checked, waiting to
/// be aggregated.
pub(super) struct Aggregation {
    job: Arc<Job>,
    out: JobOutput,
}

/// Aggregates non-interactive PoRep jobs' partition proofs (SnarkPack v2, on the CPU, one job
/// at a time, off the provers' threads) and finishes each job with the aggregate, checked by
/// filecoin-proofs' `verify_seal` unless the self-check is off. A job that ended meanwhile
/// (cancelled, shut down) is skipped.
pub(super) fn aggregate_worker(inner: &Arc<Inner>) {
    while let Some((_, Aggregation { job, mut out })) = inner.aggregate_q.pop() {
        let Some(ni) = job.aggregate.as_ref().filter(|_| !job.stopped()) else {
            continue;
        };
        let t = Instant::now();
        let allow_random = inner.cfg.allow_random_params.unwrap_or(false);
        let res = ni
            .aggregate(&out.proof, allow_random, inner.cfg.self_check)
            .map(|aggregate| {
                out.aggregate_ms = ms(t.elapsed());
                log::info!(
                    "job {}: {} partition proofs aggregated ({} bytes) in {:.0} ms",
                    job.id,
                    out.partitions.len(),
                    aggregate.len(),
                    out.aggregate_ms
                );
                out.proof = aggregate;
                out.wall_ms = ms(job.submitted.elapsed());
                out
            });
        finish(inner, &job, res);
    }
}

/// The partitions whose proofs do not verify: none where the batch verifies, else each
/// checked on its own.
fn bad_partitions(job: &Job, proofs: &[Proof<Bls12>], srs: &Srs) -> Result<Vec<usize>> {
    let circuits = job.circuits()?;
    let inputs = (0..proofs.len())
        .map(|k| circuits.public_inputs(k))
        .collect::<Result<Vec<Vec<Fr>>>>()?;
    let cannot = |e| {
        Error::new(
            Status::VerifyFailed,
            format!("self-check could not run: {e}"),
        )
    };
    let refs: Vec<&Proof<Bls12>> = proofs.iter().collect();
    if verify_proofs_batch(&srs.pvk, &mut OsRng, &refs, &inputs).map_err(cannot)? {
        return Ok(Vec::new());
    }
    let mut bad = Vec::new();
    for (k, (p, x)) in proofs.iter().zip(&inputs).enumerate() {
        if !verify_proof(&srs.pvk, p, x).map_err(cannot)? {
            bad.push(k);
        }
    }
    if bad.is_empty() {
        // Each verifies on its own while the batch does not: not a prover's fault to retry.
        return Err(Error::new(
            Status::VerifyFailed,
            "self-check failed: the batch does not verify while each proof does",
        ));
    }
    Ok(bad)
}

/// Puts the good proofs back and sends the `bad` partitions to be synthesized in full and
/// proved on the CPU; each bad proof a GPU made counts as a fault of that GPU.
fn prove_again(inner: &Inner, job: &Arc<Job>, proofs: Vec<Proof<Bls12>>, bad: &[usize]) {
    let reports = {
        let mut st = job.state.lock();
        if st.result.is_some() {
            return;
        }
        for (k, p) in proofs.into_iter().enumerate() {
            if !bad.contains(&k) {
                st.proofs[k] = Some(p);
            }
        }
        st.remaining = bad.len();
        for &k in bad {
            st.again[k] = Some(CheckAgain {
                under_recording: st.paths[k].starts_with("pce")
                    || st.paths[k].starts_with("native"),
            });
        }
        st.reports.clone()
    };
    let mut faulted = Vec::new();
    for &k in bad {
        let r = &reports[k];
        inner
            .counters
            .bad_proofs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let gpu = !r.cpu_retry && health::is_gpu_slot(inner, r.device);
        log::error!(
            "job {}: the proof of partition {k} ({}) does not verify: synthesizing it in full \
             and proving it on the CPU",
            job.id,
            if gpu {
                format!("made by {}", inner.devices.lock()[r.device].name)
            } else {
                "made on the CPU".to_string()
            }
        );
        if gpu && !faulted.contains(&r.device) {
            faulted.push(r.device);
            health::fault_at_slot(inner, r.device);
        }
        let again = SynthItem {
            job: job.clone(),
            partition: k,
            check_again: true,
        };
        if inner.synth_q.push(job.key(k), again).is_err() {
            finish(inner, job, Err(not_running()));
            return;
        }
    }
}

/// A job that verified after some partitions were proved again: where a bad proof had been
/// made under the circuit's recording, the recording is given up (its file removed, recorded
/// again when next needed).
fn distrust_recording(inner: &Inner, job: &Job, again: &[Option<CheckAgain>]) {
    let Some(k) = again
        .iter()
        .position(|a| a.is_some_and(|a| a.under_recording))
    else {
        return;
    };
    let Ok(circuits) = job.circuits() else {
        return;
    };
    inner.distrust_recording(
        circuits.params_id(),
        &format!(
            "partition {k} of job {}: its proof did not verify, and synthesized in full it does",
            job.id
        ),
    );
}
