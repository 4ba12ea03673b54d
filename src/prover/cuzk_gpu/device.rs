//! A GPU and what it keeps between calls (its copies of the parameters, idle partition stages,
//! circuit recordings), and copying one partition into a stage: its assignment, or its compact
//! witness beside the circuit's recording.

use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Instant,
};

use parking_lot::Mutex;

use super::{plan::Plan, CuzkGpuProver};
use crate::{
    budget::Reservation,
    error::{Error, Result, Status},
    params::{FileStamp, Srs},
    prover::{groth16::check_size, ClassedWitness, ProvingAssignment, SparseR1cs},
    sys::gpu_prover::{
        CompactInput, DeviceRecording, DeviceSrs, KernelError, PartitionInput, PinnedRecording,
        SparseMatrix, Stage, CUDA_OUT_OF_MEMORY, EHOST, EINVAL,
    },
};

/// A circuit's parameters on one GPU, and how that GPU proves the circuit.
pub(super) struct Loaded {
    pub(super) dev: DeviceSrs,
    pub(super) generation: u64,
    pub(super) plan: Plan,
    /// When they were loaded (they stay [`super::MIN_HOLD`] at least).
    pub(super) at: Instant,
    /// Streamed: the budget's hold on the pinned host copy (shared by the GPUs using it).
    pub(super) _host_copy: Option<Arc<Reservation>>,
}

/// What a GPU holds of a circuit's parameters: them, or the error loading them gave where the
/// file is bad (for this version of the file).
pub(super) enum Held {
    Loaded(Arc<Loaded>),
    Failed(Error, FileStamp),
}

/// One GPU of the prover.
pub(super) struct Gpu {
    pub(super) ordinal: usize,
    pub(super) name: String,
    pub(super) enabled: AtomicBool,
    /// One partition at a time on a GPU (its streams are shared).
    pub(super) busy: Mutex<()>,
    /// Whether a call's share is on this GPU now (uploads and kernels), for the watchdog.
    pub(super) in_call: AtomicBool,
    /// The circuits' parameters on this GPU (or why they are not), by file.
    pub(super) srs: Mutex<HashMap<PathBuf, Held>>,
    /// Idle partition buffers on this GPU, by the parameter instance they were made for.
    pub(super) stages: Mutex<Vec<(u64, Stage)>>,
    /// Recorded circuits on this GPU, by (circuit, recording instance); one per circuit.
    pub(super) recordings: Mutex<HashMap<(String, u64), Arc<DeviceRecording>>>,
    /// The circuits this GPU was found unable to hold a partition of (said once in the log).
    pub(super) said_no_room: Mutex<HashSet<PathBuf>>,
}

/// A kernels/ error of GPU `gpu` as the engine sees it. Only what the device did is a PROVING
/// fault (a failed CUDA call, a kernel's output that failed its check); out of device memory
/// is RESOURCE_EXHAUSTED (the partition goes elsewhere); arguments the kernels refuse and
/// host-side failures are INTERNAL (the partition goes to the CPU; the device is not faulted).
pub(super) fn kernel_error(gpu: &str, what: &str, e: KernelError) -> Error {
    let status = match e.code {
        CUDA_OUT_OF_MEMORY => {
            return Error::new(
                Status::ResourceExhausted,
                format!("{gpu}: {what}: out of device memory: {e}"),
            )
        }
        EINVAL | EHOST => Status::Internal,
        _ => Status::Proving,
    };
    Error::new(status, format!("{gpu}: {what}: {e}"))
}

/// What a row that the GPU's product found unsatisfied means, once checked on the host.
#[derive(Debug)]
pub(super) enum RowFailure {
    /// The row holds on the host: the device copy of the recording is made again and the
    /// witness uploaded once more.
    CopyAgain,
    /// The partition fails with this error: INTERNAL where the row does not hold on the host
    /// either (the recording does not fit the witness: not the device's fault), PROVING where
    /// it holds there and failed on the GPU again after the copy was made anew.
    Fails(Error),
}

/// Constraint `row` of `r1cs` failed the GPU's product check for witness `w` (`copied_again`:
/// for the second time, the device copy of the recording made anew in between).
pub(super) fn row_failure(
    gpu: &str,
    r1cs: &SparseR1cs,
    w: &ClassedWitness,
    row: u64,
    copied_again: bool,
) -> RowFailure {
    let n = r1cs.constraints;
    let holds = usize::try_from(row)
        .ok()
        .and_then(|r| r1cs.row_holds(r, w))
        .unwrap_or(false);
    if !holds {
        RowFailure::Fails(Error::internal(format!(
            "{gpu}: constraint {row} of {n} is not satisfied by the GPU's product, nor on the \
             host: the recording does not fit this witness"
        )))
    } else if !copied_again {
        RowFailure::CopyAgain
    } else {
        RowFailure::Fails(Error::proving(format!(
            "{gpu}: constraint {row} of {n} holds on the host but not in the GPU's product, \
             twice (the recording copied to the GPU again in between): a device fault"
        )))
    }
}

impl CuzkGpuProver {
    /// The GPUs in service, by index.
    pub(super) fn usable(&self) -> Vec<usize> {
        (0..self.gpus.len())
            .filter(|&i| self.gpus[i].enabled.load(Ordering::SeqCst))
            .collect()
    }

    /// Copies one partition into a stage of GPU `g` (a free one, or a new one).
    pub(super) fn upload(
        &self,
        g: usize,
        asg: &ProvingAssignment,
        srs: &Srs,
    ) -> Result<(Arc<Loaded>, Stage)> {
        let gpu = &self.gpus[g];
        let loaded = self.loaded(g, srs)?;
        check_size(asg, &srs.size)?;
        if loaded.plan.lean {
            // Not passing: this plan never takes an assignment (the partition goes to the CPU).
            return Err(Error::new(
                Status::Unsupported,
                format!(
                    "{}: proves {} from compact witnesses only ({}): a fully synthesized \
                     partition's a, b and c do not fit beside it",
                    gpu.name,
                    srs.path.display(),
                    loaded.plan
                ),
            ));
        }
        let lg = srs.size.domain().trailing_zeros();
        let (n_inp, n_aux) = (asg.input_assignment.len(), asg.aux_assignment.len());
        let mut stage = self.take_stage(g, &loaded, srs, n_inp, n_aux)?;
        let input = PartitionInput {
            a: &asg.a,
            b: &asg.b,
            c: &asg.c,
            lg_domain: lg,
            inputs: &asg.input_assignment,
            aux: &asg.aux_assignment,
            a_aux_density: asg.a_aux_density.bv.as_raw_slice(),
            b_input_density: asg.b_input_density.bv.as_raw_slice(),
            b_aux_density: asg.b_aux_density.bv.as_raw_slice(),
        };
        crate::error::catch("cuzk GPU upload", Status::Proving, || {
            Ok(stage.upload(&input))
        })?
        .map_err(|e| kernel_error(&gpu.name, "upload failed", e))?;
        Ok((loaded, stage))
    }

    /// A stage of GPU `g` for partitions of `srs` with these sizes (a free one, or a new one).
    fn take_stage(
        &self,
        g: usize,
        loaded: &Loaded,
        srs: &Srs,
        n_inp: usize,
        n_aux: usize,
    ) -> Result<Stage> {
        let gpu = &self.gpus[g];
        let lg = srs.size.domain().trailing_zeros();
        let lean = loaded.plan.lean;
        let free = {
            let mut stages = gpu.stages.lock();
            stages
                .iter()
                .position(|(gen, st)| *gen == srs.generation && st.fits(lg, n_inp, n_aux, lean))
                .map(|i| stages.swap_remove(i).1)
        };
        match free {
            Some(st) => Ok(st),
            None => loaded.dev.stage(lg, n_inp, n_aux, lean).map_err(|e| {
                Error::new(
                    Status::ResourceExhausted,
                    format!("{}: no device memory for a partition: {e}", gpu.name),
                )
            }),
        }
    }

    /// The recording `r1cs` on GPU `g`, copied there on first use.
    fn recording(
        &self,
        g: usize,
        loaded: &Loaded,
        r1cs: &SparseR1cs,
    ) -> Result<Arc<DeviceRecording>> {
        let gpu = &self.gpus[g];
        let key = (r1cs.id.to_string(), r1cs.instance);
        {
            let mut recs = gpu.recordings.lock();
            if let Some(r) = recs.get(&key) {
                return Ok(r.clone());
            }
            // An older recording of the circuit goes first: its device memory comes back (once
            // the calls holding it end) before the new copy asks for its own.
            recs.retain(|(id, _), _| id != r1cs.id);
        }
        let t = Instant::now();
        let m = r1cs.matrices.map(|(row_start, cols, coeffs)| SparseMatrix {
            row_start,
            cols,
            coeffs,
        });
        let pinned = match (loaded.plan.rec_mapped, &r1cs.tables) {
            (false, _) => None,
            (true, Some(tables)) => Some(self.pinned_recording(&key, tables)?),
            (true, None) => {
                return Err(Error::new(
                    Status::Unsupported,
                    format!(
                        "{}: reads the recording of {} from host memory ({}), and this one \
                         cannot be pinned where it is",
                        gpu.name, r1cs.id, loaded.plan
                    ),
                ))
            }
        };
        let rec = {
            let _busy = gpu.busy.lock();
            loaded
                .dev
                .recording(
                    r1cs.constraints,
                    r1cs.inputs,
                    r1cs.aux,
                    m,
                    r1cs.dict,
                    pinned,
                )
                .map_err(|e| {
                    Error::new(
                        Status::ResourceExhausted,
                        format!(
                            "{}: cannot hold the recording of {}: {e}",
                            gpu.name, r1cs.id
                        ),
                    )
                })?
        };
        log::info!(
            "{}: recording of {} {} ({} MiB on the GPU, {:.0} ms)",
            gpu.name,
            r1cs.id,
            if loaded.plan.rec_mapped {
                "read from pinned host memory"
            } else {
                "resident on the GPU"
            },
            rec.bytes() >> 20,
            t.elapsed().as_secs_f64() * 1e3
        );
        let rec = Arc::new(rec);
        // One recording per circuit is in use: an older one's device memory goes back once
        // the calls holding it end.
        let mut recs = gpu.recordings.lock();
        recs.retain(|(id, _), _| id != r1cs.id);
        recs.insert(key, rec.clone());
        Ok(rec)
    }

    /// The recording `key`'s host tables pinned for the GPUs (one pinning serves them all).
    fn pinned_recording(
        &self,
        key: &(String, u64),
        tables: &Arc<dyn crate::sys::RecordingTables>,
    ) -> Result<Arc<PinnedRecording>> {
        let mut pins = self.pinned_recs.lock();
        pins.retain(|_, w| w.strong_count() > 0);
        if let Some(p) = pins.get(key).and_then(|w| w.upgrade()) {
            return Ok(p);
        }
        let p = Arc::new(PinnedRecording::new(tables.clone()).map_err(|e| {
            Error::new(
                Status::ResourceExhausted,
                format!("pinning the recording of {} in host memory: {e}", key.0),
            )
        })?);
        pins.insert(key.clone(), Arc::downgrade(&p));
        Ok(p)
    }

    /// Gives a stage back to its GPU's pool (or frees it, past the plan's stages).
    pub(super) fn put_back(&self, g: usize, loaded: &Loaded, stage: Stage) {
        let mut stages = self.gpus[g].stages.lock();
        stages.retain(|(gen, _)| *gen == loaded.generation);
        if stages.len() < loaded.plan.stages {
            stages.push((loaded.generation, stage));
        }
    }

    /// Copies one partition's compact witness into a stage of GPU `g`, where a, b and c are
    /// computed from the circuit's recording (resident beside the parameters) and checked row
    /// by row. A row that does not hold is checked on the host ([`row_failure`]): where it does
    /// not hold there either, an INTERNAL error (the recording does not fit the witness; not a
    /// device fault); where it does, the device copy of the recording is made again and the
    /// witness uploaded once more, and a second failure is a PROVING fault of the GPU.
    pub(super) fn upload_compact(
        &self,
        g: usize,
        r1cs: &SparseR1cs,
        w: &ClassedWitness,
        srs: &Srs,
    ) -> Result<(Arc<Loaded>, Stage)> {
        let gpu = &self.gpus[g];
        let size = &srs.size;
        if (w.inputs.len(), w.n_aux) != (size.inputs, size.aux)
            || (r1cs.inputs, r1cs.aux) != (size.inputs, size.aux)
            || r1cs.constraints > size.domain()
        {
            return Err(Error::invalid_input(format!(
                "the witness ({} inputs, {} aux) or the recording ({} constraints) does not \
                 fit the parameters ({} inputs, {} aux, domain {})",
                w.inputs.len(),
                w.n_aux,
                r1cs.constraints,
                size.inputs,
                size.aux,
                size.domain()
            )));
        }
        let loaded = self.loaded(g, srs)?;
        let mut rec = self.recording(g, &loaded, r1cs)?;
        let mut stage = self.take_stage(g, &loaded, srs, w.inputs.len(), w.n_aux)?;
        let input = CompactInput {
            lg_domain: size.domain().trailing_zeros(),
            inputs: w.inputs,
            classes: w.classes,
            n_aux: w.n_aux,
            other_index: w.other_index,
            other_value: w.other_value,
            a_aux_density: r1cs.a_aux_density.bv.as_raw_slice(),
            b_input_density: r1cs.b_input_density.bv.as_raw_slice(),
            b_aux_density: r1cs.b_aux_density.bv.as_raw_slice(),
        };
        let mut copied_again = false;
        let err = loop {
            let up = crate::error::catch("cuzk GPU upload", Status::Proving, || {
                Ok(stage.upload_witness(&rec, &input))
            })
            .and_then(|r| r.map_err(|e| kernel_error(&gpu.name, "witness upload failed", e)));
            match up {
                Ok(None) => return Ok((loaded, stage)),
                Ok(Some(row)) => match row_failure(&gpu.name, r1cs, w, row, copied_again) {
                    RowFailure::CopyAgain => {
                        log::warn!(
                            "{}: constraint {row} holds on the host but not in the GPU's \
                             product: copying the recording of {} to the GPU again",
                            gpu.name,
                            r1cs.id
                        );
                        drop(rec);
                        gpu.recordings
                            .lock()
                            .remove(&(r1cs.id.to_string(), r1cs.instance));
                        copied_again = true;
                        match self.recording(g, &loaded, r1cs) {
                            Ok(r) => rec = r,
                            Err(e) => break e,
                        }
                    }
                    RowFailure::Fails(e) => break e,
                },
                Err(e) => break e,
            }
        };
        self.put_back(g, &loaded, stage);
        Err(err)
    }
}
