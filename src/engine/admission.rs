//! Admission: could one more job of a proof type start now, within the memory budget, and how
//! many could? A scheduler (Curio's `CanAccept`) asks before it takes a C2 task on this host.
//!
//! The answer comes from the engine's own accounting, at the moment of the call:
//! - free bytes: the budget less what is reserved (resident parameters, recordings, partitions
//!   being synthesized, waiting for a prover or being proved);
//! - less the bytes that requests already waiting for memory have asked for, and those that
//!   partitions queued ahead of the new job (same or higher priority) will reserve;
//! - less the parameters the new job (or a queued one) would still load and keep in host
//!   memory (the CPU prover's copy, the GPU prover's pinned one when it streams them);
//! - divided by the bytes one partition of the proof type reserves.
//!
//! A GPU prover that reads the parameters only to copy them to the device (resident) needs
//! that room for a moment, before the job's partitions reserve theirs: no partition fits
//! while the room left is less than the file, and none is taken off beside the partitions.
//!
//! A job starts when its first partition has its memory, so one partition's room admits it;
//! `jobs_fit` counts the jobs whose every partition could hold its memory at once.

use std::collections::HashMap;

use super::{synth, Engine, Inner};
use crate::{
    error::{Error, Result, Status},
    params::{HostPath, Srs},
    porep::{self, FixtureShape},
};

/// Host bytes a job's parameters still need (see `Engine::params_to_load`).
#[derive(Clone, Copy, Default)]
struct ParamsLoad {
    kept: u64,
    passing: u64,
}

/// Why a job would not start now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AdmissionReason {
    /// It would start.
    #[default]
    Ok = 0,
    /// Not enough of the memory budget is free for one of its partitions.
    Memory = 1,
    /// `max_jobs` jobs are queued or running.
    MaxJobs = 2,
}

/// The answer to [`Engine::admission`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Admission {
    /// One more job of this type would start now.
    pub admit: bool,
    pub reason: AdmissionReason,
    /// Partitions of one job of this type.
    pub partitions_per_job: u64,
    /// Partitions of this type that could reserve their memory now, after the work ahead.
    pub partitions_fit: u64,
    /// Jobs of this type whose every partition could reserve its memory now (bounded by the
    /// job slots left).
    pub jobs_fit: u64,
    /// Bytes one partition reserves.
    pub partition_bytes: u64,
    /// Parameter bytes still to be loaded into host memory before the new job's partitions
    /// can be proved (0 when they are resident, or already on the GPUs).
    pub params_bytes: u64,
    /// Bytes queued partitions ahead of the new job will reserve (with parameters they load).
    pub queued_bytes: u64,
    /// Budget less reserved bytes.
    pub free_bytes: u64,
    /// Jobs that may still be submitted before `max_jobs`.
    pub job_slots: u64,
    /// Host bytes a partition of this type sent to the CPU would reserve beyond what is
    /// reserved now (where GPUs prove: a fallback after a fault, a self-check failure, a card
    /// too small or without room for long): its full assignment, and the full parameters
    /// where the CPU's copy is not loaded (a second copy beside a streamed card's pinned
    /// one). 0 where no GPU proves (the CPU is then the path itself, counted above).
    pub cpu_fallback_bytes: u64,
    /// Whether those bytes could ever be reserved beside what is never given back meanwhile
    /// (resident parameter sets, a GPU prover's kept copy, memory held by calls given up
    /// on). False: such a partition would fail its job with RESOURCE_EXHAUSTED.
    pub cpu_fallback_fits: bool,
}

impl Engine {
    /// Whether one more job of `proof` (with a test `fixture` shape, or the real one) at
    /// `priority` would start now within the memory budget, and how many could. Errors:
    /// NOT_RUNNING after shutdown, UNSUPPORTED for proof types the engine does not prove,
    /// PARAMS where the type's parameter files are missing or damaged (a job would fail).
    pub fn admission(
        &self,
        proof: porep::SealProof,
        fixture: FixtureShape,
        priority: i32,
    ) -> Result<Admission> {
        if !self.is_running() {
            return Err(Error::new(Status::NotRunning, "the engine is shut down"));
        }
        let i = &self.inner;
        let shape = porep::shape_for(proof, fixture)?;
        let id = self.params_id(proof, fixture)?;
        let srs = i.srs_for(&id, shape.sector_size)?;
        // What the next partition would reserve, by the path it would take now.
        let partition_bytes = i.partition_bytes(&id, &srs, synth::plan(i, &id, &srs).path);

        // Queued partitions ahead of the new job, by circuit.
        let mut ahead: HashMap<String, u64> = HashMap::new();
        i.synth_q.for_each(|key, item| {
            if (key.class, key.priority) >= (0, priority) {
                if let Ok(c) = item.job.circuits() {
                    *ahead.entry(c.params_id().to_string()).or_default() += 1;
                }
            }
        });
        // Partitions (and parameter loads) already waiting for memory go first.
        let mut queued_bytes = i.budget.waiting();
        let mut loads_ours = false;
        for (other, n) in &ahead {
            let Ok(s) = i.srs.get(other, &i.budget) else {
                // Those jobs fail at their first partition and reserve nothing.
                continue;
            };
            let part = i.partition_bytes(other, &s, synth::plan(i, other, &s).path);
            queued_bytes += n * part + self.params_to_load(&s).kept;
            loads_ours |= *other == id;
        }
        let load = if loads_ours {
            ParamsLoad::default()
        } else {
            self.params_to_load(&srs)
        };
        let params_bytes = load.kept + load.passing;
        let free_bytes = i.budget.total().saturating_sub(i.budget.used());
        let room = free_bytes.saturating_sub(queued_bytes);
        let partitions_fit = if room < params_bytes {
            0
        } else {
            (room - load.kept) / partition_bytes.max(1)
        };
        let (in_flight, _) = i.jobs.counts();
        let job_slots = (i.cfg.max_jobs as u64).saturating_sub(in_flight as u64);
        let partitions_per_job = shape.partitions as u64;
        let jobs_fit = (partitions_fit / partitions_per_job.max(1)).min(job_slots);
        let reason = if job_slots == 0 {
            AdmissionReason::MaxJobs
        } else if partitions_fit == 0 {
            AdmissionReason::Memory
        } else {
            AdmissionReason::Ok
        };
        let (cpu_fallback_bytes, cpu_fallback_fits) = cpu_fallback(i, &srs).unwrap_or((0, true));
        Ok(Admission {
            admit: reason == AdmissionReason::Ok,
            reason,
            partitions_per_job,
            partitions_fit,
            jobs_fit,
            partition_bytes,
            params_bytes,
            queued_bytes,
            free_bytes,
            job_slots,
            cpu_fallback_bytes,
            cpu_fallback_fits,
        })
    }

    /// Host bytes still to be reserved for `srs` before its partitions can be proved: the
    /// copy the CPU prover or a GPU prover keeps (`kept`), or the one a GPU prover reads its
    /// device copy from and then lets go (`passing`); each taken as the file's size, an upper
    /// bound.
    fn params_to_load(&self, srs: &Srs) -> ParamsLoad {
        let i = &self.inner;
        let cpu_needs_host = i.backends.iter().any(|b| b.host_params()) && !srs.host_resident();
        let unprepared = !i.prepared.lock().contains(&srs.generation);
        let gpu = |keeps: bool| {
            unprepared
                && i.backends
                    .iter()
                    .any(|b| b.is_gpu() && b.keeps_host_copy() == keeps)
        };
        if cpu_needs_host || gpu(true) {
            ParamsLoad {
                kept: srs.file_len,
                passing: 0,
            }
        } else if gpu(false) {
            ParamsLoad {
                kept: 0,
                passing: srs.file_len,
            }
        } else {
            ParamsLoad::default()
        }
    }

    /// The parameter id of a proof type, computed once (public parameter setup is not free).
    fn params_id(&self, proof: porep::SealProof, fixture: FixtureShape) -> Result<String> {
        let key = (proof as u32, fixture.partitions, fixture.layers);
        if let Some(id) = self.inner.params_ids.lock().get(&key) {
            return Ok(id.clone());
        }
        let id = porep::params_id_for(proof, fixture)?;
        self.inner.params_ids.lock().insert(key, id.clone());
        Ok(id)
    }
}

/// What a partition of `srs` proved on the CPU would still reserve in host memory (its full
/// assignment, the full parameters where the CPU's copy is not loaded), and whether that
/// could ever fit in the budget beside what is not given back meanwhile: the resident
/// parameter sets, the copy a GPU prover not yet prepared would keep, the memory of calls
/// given up on. None where no GPU proves.
pub(super) fn cpu_fallback(i: &Inner, srs: &Srs) -> Option<(u64, bool)> {
    if !i.backends.iter().any(|b| b.is_gpu()) {
        return None;
    }
    let params = if srs.host_resident() { 0 } else { srs.file_len };
    let need = params + srs.size.host_bytes(HostPath::Cpu);
    let unprepared = !i.prepared.lock().contains(&srs.generation);
    let gpu_copy = if unprepared && i.backends.iter().any(|b| b.is_gpu() && b.keeps_host_copy()) {
        srs.file_len
    } else {
        0
    };
    let held = i.budget.resident() + i.budget.stuck() + gpu_copy;
    Some((need, need + held <= i.budget.total()))
}

/// `RegisteredSealProof` from its number in Filecoin's actors and filecoin-ffi
/// (go-state-types `abi.RegisteredSealProof`): 0-4 V1, 5-9 V1_1, 10-14 V1_1 synthetic PoRep,
/// 15-19 V1_2 non-interactive PoRep, 2KiB to 64GiB in each.
pub fn seal_proof_from_abi(n: i64) -> Result<porep::SealProof> {
    use porep::SealProof::*;
    const ALL: [porep::SealProof; 20] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ];
    usize::try_from(n)
        .ok()
        .and_then(|k| ALL.get(k).copied())
        .ok_or_else(|| Error::invalid_argument(format!("{n} is not a registered seal proof")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_proof_numbers_are_filecoins() {
        use porep::SealProof::*;
        assert_eq!(seal_proof_from_abi(0).unwrap(), StackedDrg2KiBV1);
        assert_eq!(seal_proof_from_abi(8).unwrap(), StackedDrg32GiBV1_1);
        assert_eq!(
            seal_proof_from_abi(13).unwrap(),
            StackedDrg32GiBV1_1_Feat_SyntheticPoRep
        );
        assert_eq!(
            seal_proof_from_abi(19).unwrap(),
            StackedDrg64GiBV1_2_Feat_NonInteractivePoRep
        );
        for bad in [-1, 20, i64::MAX] {
            assert_eq!(
                seal_proof_from_abi(bad).unwrap_err().status,
                Status::InvalidArgument
            );
        }
        // Each number's sector size grows 2KiB, 8MiB, 512MiB, 32GiB, 64GiB.
        for n in 0..20 {
            let p = seal_proof_from_abi(n).unwrap();
            let size = u64::from(p.sector_size());
            let want = [2 << 10, 8 << 20, 512 << 20, 32u64 << 30, 64u64 << 30][n as usize % 5];
            assert_eq!(size, want, "{p:?}");
        }
    }
}
