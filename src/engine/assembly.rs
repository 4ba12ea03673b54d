//! A job's end when its last partition is proved: the proofs assembled in partition order and
//! (unless disabled) self-checked with the circuit's verifying key before the job finishes.

use std::time::Instant;

use bellperson::groth16::{verify_proofs_batch, Proof};
use blstrs::Bls12;
use rand::rngs::OsRng;

use super::{
    finish::finish,
    jobs::{ms, Job, JobOutput, PartitionReport},
    Inner,
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
    job: &Job,
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
        (proofs, st.reports.clone())
    };
    let out = match all {
        (Some(proofs), reports) => assemble(inner, job, proofs, reports, srs),
        (None, _) => Err(Error::internal(format!(
            "job {}: a partition's proof is missing at assembly",
            job.id
        ))),
    };
    finish(inner, job, out);
}

/// Serializes and (unless disabled) verifies a job whose partitions are all proved, with the
/// verifying key of the `.vk` file.
fn assemble(
    inner: &Inner,
    job: &Job,
    proofs: Vec<Proof<Bls12>>,
    reports: Vec<PartitionReport>,
    srs: &Srs,
) -> Result<JobOutput> {
    let mut bytes = Vec::with_capacity(proofs.len() * crate::PROOF_BYTES);
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
                "self-check failed: the proof does not verify with the circuit's .vk",
            ));
        }
        verified = true;
    }
    Ok(JobOutput {
        job: job.id,
        proof: bytes,
        partitions: reports,
        wall_ms: ms(job.submitted.elapsed()),
        verify_ms: ms(t.elapsed()),
        verified,
    })
}
