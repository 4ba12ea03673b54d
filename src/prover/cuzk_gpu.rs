//! cuzk's own GPU prover (`kernels/groth16.cu`): the whole Groth16 proof of a partition on one
//! GPU, from parameters resident in that GPU's memory.
//!
//! Per partition the host uploads a, b, c and the assignment; the GPU computes h (3 iNTT,
//! 3 coset NTT, the element-wise step, 1 coset iNTT), compacts the A and B scalars by their
//! densities and runs the H, L, A, B(G1) and B(G2) MSMs (sppark's Pippenger, G2 included). The
//! host adds the verifying key's terms with r and s (a few scalar multiplications).
//!
//! Devices are independent: a batch of n partitions goes one per usable GPU, each GPU proving
//! its share in turn under its own lock, so no call waits on another GPU and there is no
//! process-wide lock. Parameters are read from the `.params` file once per circuit and copied
//! to every GPU that proves it; device memory holds them until the engine shuts down
//! (resident). Where a GPU cannot hold them beside its working buffers (or `CUZK_GPU_PARAMS=
//! streamed`), one pinned copy in host memory serves every such GPU instead: the H bases are
//! copied in batch by batch during each partition and the others read over the bus
//! (streamed).

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Instant,
};

use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use parking_lot::Mutex;

use super::{
    groth16::{assemble_proof, check_size},
    prove_one_as_batch, ClassedWitness, GpuParams, ProverBackend, ProvingAssignment, SparseR1cs,
    StageTimes,
};
use crate::{
    budget::Reservation,
    error::{Error, Result, Status},
    params::{FileStamp, Srs},
    sys::{
        cuda,
        gpu_prover::{
            CompactInput, DeviceRecording, DeviceSrs, MsmResults, PartitionInput, PinnedBases,
            SparseMatrix, Stage,
        },
    },
};

struct Loaded {
    dev: DeviceSrs,
    generation: u64,
    /// Streamed: the budget's hold on the pinned host copy (shared by the GPUs using it).
    _host_copy: Option<Arc<Reservation>>,
}

enum Held {
    Loaded(Arc<Loaded>),
    Failed(Error, FileStamp),
}

struct Gpu {
    ordinal: usize,
    name: String,
    enabled: AtomicBool,
    /// One partition at a time on a GPU (its streams are shared).
    busy: Mutex<()>,
    srs: Mutex<HashMap<PathBuf, Held>>,
    /// Idle partition buffers on this GPU, by the parameter instance they were made for.
    stages: Mutex<Vec<(u64, Stage)>>,
    /// Recorded circuits on this GPU, by (circuit, recording instance); one per circuit.
    recordings: Mutex<HashMap<(String, u64), Arc<DeviceRecording>>>,
}

/// Partition buffers kept per GPU: one being proved while the next is uploaded.
const STAGES_PER_GPU: usize = 2;

/// The prover on a set of GPUs.
pub struct CuzkGpuProver {
    name: &'static str,
    gpus: Vec<Gpu>,
    /// Partitions per GPU in one batch: their uploads overlap the kernels of the one before.
    per_gpu: usize,
    /// One loader at a time: parameters are read once and copied to every GPU lacking them.
    loading: Mutex<()>,
    /// Where the parameters go.
    params: GpuParams,
}

impl CuzkGpuProver {
    pub fn new(devices: Vec<cuda::CudaDevice>, per_gpu: usize, params: GpuParams) -> Self {
        let gpus: Vec<Gpu> = devices
            .iter()
            .map(|d| Gpu {
                ordinal: d.ordinal,
                name: format!("cuda:{}", d.ordinal),
                enabled: AtomicBool::new(true),
                busy: Mutex::new(()),
                srs: Mutex::new(HashMap::new()),
                stages: Mutex::new(Vec::new()),
                recordings: Mutex::new(HashMap::new()),
            })
            .collect();
        let name: &'static str = Box::leak(
            match gpus.len() {
                1 => gpus[0].name.clone(),
                _ => format!(
                    "cuda:{}",
                    gpus.iter()
                        .map(|g| g.ordinal.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            }
            .into_boxed_str(),
        );
        CuzkGpuProver {
            name,
            gpus,
            per_gpu: per_gpu.max(1),
            loading: Mutex::new(()),
            params,
        }
    }

    fn usable(&self) -> Vec<usize> {
        (0..self.gpus.len())
            .filter(|&i| self.gpus[i].enabled.load(Ordering::SeqCst))
            .collect()
    }

    fn held(&self, g: usize, srs: &Srs) -> Option<Result<Arc<Loaded>>> {
        match self.gpus[g].srs.lock().get(&srs.path) {
            Some(Held::Loaded(l)) if l.generation == srs.generation => Some(Ok(l.clone())),
            Some(Held::Failed(e, stamp)) if *stamp == srs.stamp => Some(Err(e.clone())),
            _ => None,
        }
    }

    /// The parameters on GPU `g`, loading them (onto every usable GPU lacking them) first.
    fn loaded(&self, g: usize, srs: &Srs) -> Result<Arc<Loaded>> {
        if let Some(r) = self.held(g, srs) {
            return r;
        }
        let _one = self.loading.lock();
        if let Some(r) = self.held(g, srs) {
            return r;
        }
        let mut want: Vec<usize> = self.usable();
        if !want.contains(&g) {
            want.push(g);
        }
        want.retain(|&i| self.held(i, srs).is_none());
        for &i in &want {
            // A copy of an older version of the file goes first (its device memory comes back).
            self.gpus[i].srs.lock().remove(&srs.path);
        }
        let (to_stream, resident): (Vec<usize>, Vec<usize>) =
            want.iter().partition(|&&i| self.streams(i, srs));
        let t = Instant::now();
        let bases = srs
            .budget()
            .try_acquire(srs.file_len)
            .ok_or_else(|| {
                Error::new(
                    Status::ResourceExhausted,
                    format!(
                        "reading {} for the GPU needs {} MiB of host memory, more than the \
                         memory budget has free",
                        srs.path.display(),
                        srs.file_len >> 20
                    ),
                )
            })
            .and_then(|reservation| srs.read_bases().map(|b| (b, reservation)));
        let read_ms = t.elapsed().as_secs_f64() * 1e3;
        let failed = |e: Error| Held::Failed(e, srs.stamp.clone());
        let no_room = |gpu: &Gpu, e: String| {
            failed(Error::new(
                Status::ResourceExhausted,
                format!(
                    "{}: cannot hold the parameters {} in device memory: {e}",
                    gpu.name,
                    srs.path.display()
                ),
            ))
        };
        let mut held: Vec<(usize, Held)> = Vec::new();
        let (b, reservation) = match bases {
            Err(e) => {
                for &i in &want {
                    held.push((i, failed(e.clone())));
                }
                (None, None)
            }
            Ok((b, r)) => (Some(b), Some(r)),
        };
        if let Some(b) = &b {
            for &i in &resident {
                let gpu = &self.gpus[i];
                let t = Instant::now();
                let _busy = gpu.busy.lock();
                held.push((
                    i,
                    match DeviceSrs::upload(gpu.ordinal, &b.h, &b.l, &b.a, &b.b_g1, &b.b_g2) {
                        Ok(dev) => {
                            log::info!(
                                "{}: parameters {} resident on the GPU ({} MiB; read {:.0} ms, \
                                 copied {:.0} ms)",
                                gpu.name,
                                srs.path.display(),
                                dev.bytes() >> 20,
                                read_ms,
                                t.elapsed().as_secs_f64() * 1e3
                            );
                            Held::Loaded(Arc::new(Loaded {
                                dev,
                                generation: srs.generation,
                                _host_copy: None,
                            }))
                        }
                        Err(e) => no_room(gpu, e),
                    },
                ));
            }
        }
        if let (Some(b), Some(reservation)) = (b, reservation) {
            if !to_stream.is_empty() {
                let t = Instant::now();
                match PinnedBases::new(b.h, b.l, b.a, b.b_g1, b.b_g2) {
                    Err(e) => {
                        let e = Error::new(
                            Status::ResourceExhausted,
                            format!("{}: {e}", srs.path.display()),
                        );
                        for &i in &to_stream {
                            held.push((i, failed(e.clone())));
                        }
                    }
                    Ok(pinned) => {
                        let (pinned, hold) = (Arc::new(pinned), Arc::new(reservation));
                        let pin_ms = t.elapsed().as_secs_f64() * 1e3;
                        for &i in &to_stream {
                            let gpu = &self.gpus[i];
                            let _busy = gpu.busy.lock();
                            held.push((
                                i,
                                match DeviceSrs::streamed(gpu.ordinal, pinned.clone()) {
                                    Ok(dev) => {
                                        log::info!(
                                            "{}: parameters {} streamed from pinned host memory \
                                             ({} MiB pinned in {:.0} ms, {} MiB on the GPU)",
                                            gpu.name,
                                            srs.path.display(),
                                            pinned.bytes() >> 20,
                                            pin_ms,
                                            dev.bytes() >> 20
                                        );
                                        Held::Loaded(Arc::new(Loaded {
                                            dev,
                                            generation: srs.generation,
                                            _host_copy: Some(hold.clone()),
                                        }))
                                    }
                                    Err(e) => no_room(gpu, e),
                                },
                            ));
                        }
                    }
                }
            }
        }
        for (i, h) in held {
            self.gpus[i].srs.lock().insert(srs.path.clone(), h);
        }
        self.held(g, srs)
            .unwrap_or_else(|| Err(Error::internal("parameters vanished while loading")))
    }

    /// Whether GPU `i` proves `srs`'s circuit from parameters streamed from host memory: as
    /// configured, or (auto) where its free memory cannot hold them beside the working
    /// buffers.
    fn streams(&self, i: usize, srs: &Srs) -> bool {
        match self.params {
            GpuParams::Resident => false,
            GpuParams::Streamed => true,
            GpuParams::Auto => {
                let need = srs.file_len + working_bytes(srs);
                match cuda::device(self.gpus[i].ordinal) {
                    Ok(d) if d.free_mem >= need => false,
                    Ok(d) => {
                        log::info!(
                            "{}: {} MiB free, {} MiB needed to hold {} with the working \
                             buffers: its parameters are streamed from host memory",
                            self.gpus[i].name,
                            d.free_mem >> 20,
                            need >> 20,
                            srs.path.display()
                        );
                        true
                    }
                    Err(_) => false,
                }
            }
        }
    }

    /// Copies one partition into a stage of GPU `g` (a free one, or a new one).
    fn upload(&self, g: usize, asg: &ProvingAssignment, srs: &Srs) -> Result<(Arc<Loaded>, Stage)> {
        let gpu = &self.gpus[g];
        let loaded = self.loaded(g, srs)?;
        check_size(asg, &srs.size)?;
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
        .map_err(|e| Error::proving(format!("{}: upload failed: {e}", gpu.name)))?;
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
        let free = {
            let mut stages = gpu.stages.lock();
            stages
                .iter()
                .position(|(gen, st)| *gen == srs.generation && st.fits(lg, n_inp, n_aux))
                .map(|i| stages.swap_remove(i).1)
        };
        match free {
            Some(st) => Ok(st),
            None => loaded.dev.stage(lg, n_inp, n_aux).map_err(|e| {
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
        if let Some(r) = gpu.recordings.lock().get(&key) {
            return Ok(r.clone());
        }
        let t = Instant::now();
        let m = r1cs.matrices.map(|(row_start, cols, coeffs)| SparseMatrix {
            row_start,
            cols,
            coeffs,
        });
        let rec = {
            let _busy = gpu.busy.lock();
            loaded
                .dev
                .recording(r1cs.constraints, r1cs.inputs, r1cs.aux, m, r1cs.dict)
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
            "{}: recording of {} resident on the GPU ({} MiB, {:.0} ms)",
            gpu.name,
            r1cs.id,
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

    /// Gives a stage back to its GPU's pool (or frees it, past the pool's size).
    fn put_back(&self, g: usize, generation: u64, stage: Stage) {
        let mut stages = self.gpus[g].stages.lock();
        stages.retain(|(gen, _)| *gen == generation);
        if stages.len() < STAGES_PER_GPU {
            stages.push((generation, stage));
        }
    }

    /// Proves the partition in `stage` on GPU `g` and assembles the proof.
    #[allow(clippy::too_many_arguments)]
    fn compute(
        &self,
        g: usize,
        loaded: &Loaded,
        stage: &mut Stage,
        srs: &Srs,
        r: Fr,
        s: Fr,
        times: &mut StageTimes,
    ) -> Result<Proof<Bls12>> {
        let gpu = &self.gpus[g];
        let t = Instant::now();
        let res: std::result::Result<MsmResults, String> = {
            let _busy = gpu.busy.lock();
            crate::error::catch("cuzk GPU prover", Status::Proving, || {
                Ok(loaded.dev.prove(stage))
            })?
        };
        times.gpu_ms = t.elapsed().as_secs_f64() * 1e3;
        let m = res.map_err(|e| Error::proving(format!("{}: GPU prover failed: {e}", gpu.name)))?;
        times.gpu_stages_ms = m.ms;
        times.ntt_ms = m.ms[1];
        times.msm_ms = m.ms[2] + m.ms[4..].iter().sum::<f64>();
        let t = Instant::now();
        let proof = assemble_proof(
            &srs.vk,
            r,
            s,
            G1Projective::from(m.h),
            G1Projective::from(m.l),
            G1Projective::from(m.a),
            G1Projective::from(m.b_g1),
            G2Projective::from(m.b_g2),
        );
        times.host_ms = t.elapsed().as_secs_f64() * 1e3;
        log::debug!(
            "{}: upload {:.1} ms, ntt {:.1}, h {:.1}, split {:.1}, l {:.1}, a {:.1}, b_g1 {:.1}, \
             b_g2 {:.1}",
            gpu.name,
            m.ms[0],
            m.ms[1],
            m.ms[2],
            m.ms[3],
            m.ms[4],
            m.ms[5],
            m.ms[6],
            m.ms[7]
        );
        proof
    }

    /// Copies one partition's compact witness into a stage of GPU `g`, where a, b and c are
    /// computed from the circuit's recording (resident beside the parameters) and checked row
    /// by row. A row that does not hold is an INTERNAL error (the recording does not fit the
    /// witness), not a device fault.
    fn upload_compact(
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
        let rec = self.recording(g, &loaded, r1cs)?;
        let mut stage = self.take_stage(g, &loaded, srs, w.inputs.len(), w.n_aux)?;
        let input = CompactInput {
            lg_domain: size.domain().trailing_zeros(),
            inputs: w.inputs,
            classes: w.classes,
            n_aux: w.n_aux,
            other_index: &w.other_index,
            other_value: &w.other_value,
            a_aux_density: r1cs.a_aux_density.bv.as_raw_slice(),
            b_input_density: r1cs.b_input_density.bv.as_raw_slice(),
            b_aux_density: r1cs.b_aux_density.bv.as_raw_slice(),
        };
        let up = crate::error::catch("cuzk GPU upload", Status::Proving, || {
            Ok(stage.upload_witness(&rec, &input))
        })
        .and_then(|r| {
            r.map_err(|e| Error::proving(format!("{}: witness upload failed: {e}", gpu.name)))
        });
        let err = match up {
            Ok(None) => return Ok((loaded, stage)),
            Ok(Some(row)) => Error::internal(format!(
                "{}: constraint {row} of {} is not satisfied by the GPU's product: the \
                 recording does not fit this witness",
                gpu.name, r1cs.constraints
            )),
            Err(e) => e,
        };
        self.put_back(g, loaded.generation, stage);
        Err(err)
    }

    /// Proves `items` on GPU `g` in turn, each partition's upload (`upload(i)`, on a thread of
    /// its own) overlapping the previous one's kernels.
    fn pipeline<U>(
        &self,
        g: usize,
        items: Vec<usize>,
        upload: U,
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
    ) -> Vec<(usize, Result<Proof<Bls12>>, StageTimes)>
    where
        U: Fn(usize) -> Result<(Arc<Loaded>, Stage)> + Sync,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Result<(Arc<Loaded>, Stage)>)>(0);
        let upload = &upload;
        std::thread::scope(|sc| {
            sc.spawn(move || {
                for i in items {
                    if tx.send((i, upload(i))).is_err() {
                        break;
                    }
                }
            });
            let mut out = Vec::new();
            for (i, up) in rx {
                let mut t = StageTimes::default();
                let r = up.and_then(|(loaded, mut stage)| {
                    let r = self.compute(g, &loaded, &mut stage, srs, rs[i], ss[i], &mut t);
                    self.put_back(g, loaded.generation, stage);
                    r
                });
                out.push((i, r, t));
            }
            out
        })
    }

    /// Splits a batch of `n` partitions over the GPUs in service and runs `on_gpu(g, items)`
    /// for each GPU on a thread of its own; result `i` is for item `i`.
    fn split<F>(
        &self,
        n: usize,
        times: &mut [StageTimes],
        on_gpu: F,
    ) -> Vec<(usize, Result<Proof<Bls12>>)>
    where
        F: Fn(usize, Vec<usize>) -> Vec<(usize, Result<Proof<Bls12>>, StageTimes)> + Sync,
    {
        let place: Vec<usize> = (0..n).map(|i| self.device_for(i, n)).collect();
        let mut results: Vec<Option<(usize, Result<Proof<Bls12>>)>> =
            (0..n).map(|_| None).collect();
        if self.usable().is_empty() {
            for (i, r) in results.iter_mut().enumerate() {
                *r = Some((
                    place[i],
                    Err(Error::proving(format!(
                        "{}: every GPU is out of service",
                        self.name
                    ))),
                ));
            }
        } else {
            let mut by_gpu: HashMap<usize, Vec<usize>> = HashMap::new();
            for (i, &g) in place.iter().enumerate() {
                by_gpu.entry(g).or_default().push(i);
            }
            let on_gpu = &on_gpu;
            let out: Vec<(usize, Result<Proof<Bls12>>, StageTimes)> = std::thread::scope(|sc| {
                let handles: Vec<_> = by_gpu
                    .into_iter()
                    .map(|(g, items)| sc.spawn(move || on_gpu(g, items)))
                    .collect();
                // A worker that panicked leaves its items without a result (PANIC below).
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_default())
                    .collect()
            });
            for (i, r, t) in out {
                times[i] = t;
                results[i] = Some((place[i], r));
            }
        }
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.unwrap_or_else(|| {
                    (
                        place[i],
                        Err(Error::new(Status::Panic, "the GPU worker thread panicked")),
                    )
                })
            })
            .collect()
    }
}

/// Device memory a GPU needs beside the parameters to prove `srs`'s circuit, estimated from
/// the buffers `kernels/groth16.cu` allocates: two partitions' buffers (a, b, c over the
/// domain; the aux values and the A and B scalars; their split lists), the H MSM's digits and
/// buckets, the circuit's recording (~45 bytes per constraint), and 512 MiB to spare.
fn working_bytes(srs: &Srs) -> u64 {
    let (domain, aux) = (
        srs.size.domain() as u64,
        (srs.size.aux + srs.size.inputs) as u64,
    );
    let stage = 3 * 32 * domain + (3 * 32 + 12) * aux;
    2 * stage + 80 * domain + 45 * domain + (512 << 20)
}

impl ProverBackend for CuzkGpuProver {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_gpu(&self) -> bool {
        true
    }

    /// Resident parameters are read into host memory only while they are copied to the
    /// GPUs; streamed ones stay there (pinned).
    fn keeps_host_copy(&self) -> bool {
        self.params == GpuParams::Streamed
            || self.gpus.iter().any(|g| {
                g.srs
                    .lock()
                    .values()
                    .any(|h| matches!(h, Held::Loaded(l) if l.dev.is_streamed()))
            })
    }

    fn devices(&self) -> Vec<String> {
        self.gpus.iter().map(|g| g.name.clone()).collect()
    }

    fn max_batch(&self) -> usize {
        self.usable().len() * self.per_gpu
    }

    fn device_for(&self, i: usize, n: usize) -> usize {
        // Contiguous runs, as a call spreads them: the first n % k GPUs take one more.
        let usable = self.usable();
        if usable.is_empty() {
            0
        } else {
            usable[super::batch_device(i, n, usable.len())]
        }
    }

    fn set_enabled(&self, device: usize, on: bool) -> bool {
        match self.gpus.get(device) {
            Some(g) => {
                g.enabled.store(on, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    fn prepare(&self, srs: &Srs) -> Result<()> {
        for g in self.usable() {
            self.loaded(g, srs)?;
        }
        Ok(())
    }

    fn probe(&self, device: usize) -> Result<()> {
        let gpu = &self.gpus[device];
        cuda::launch_check(gpu.ordinal)
            .map_err(|e| Error::proving(format!("{}: probe failed: {e}", gpu.name)))
    }

    fn release(&self) {
        for g in &self.gpus {
            let _busy = g.busy.lock();
            g.stages.lock().clear();
            g.recordings.lock().clear();
            g.srs.lock().clear();
        }
    }

    fn proves_witness(&self) -> bool {
        true
    }

    fn prove_witness_batch(
        &self,
        r1cs: &SparseR1cs,
        ws: &[ClassedWitness],
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        times: &mut [StageTimes],
    ) -> Option<Vec<(usize, Result<Proof<Bls12>>)>> {
        Some(self.split(ws.len(), times, |g, items| {
            self.pipeline(
                g,
                items,
                |i| self.upload_compact(g, r1cs, &ws[i], srs),
                srs,
                rs,
                ss,
            )
        }))
    }

    fn prove(
        &self,
        asg: &mut Option<ProvingAssignment>,
        srs: &Srs,
        r: Fr,
        s: Fr,
        times: &mut StageTimes,
    ) -> Result<Proof<Bls12>> {
        prove_one_as_batch(self, asg, srs, r, s, times)
    }

    fn prove_batch(
        &self,
        asgs: &mut [Option<ProvingAssignment>],
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        times: &mut [StageTimes],
    ) -> Vec<(usize, Result<Proof<Bls12>>)> {
        // Assignments are only read: after an error the engine proves them elsewhere.
        let asgs: &[Option<ProvingAssignment>] = asgs;
        self.split(asgs.len(), times, |g, items| {
            let upload = |i: usize| match &asgs[i] {
                None => Err(Error::internal("no assignment to prove")),
                Some(a) => self.upload(g, a, srs),
            };
            self.pipeline(g, items, upload, srs, rs, ss)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{cuda::CudaDevice, CuzkGpuProver, GpuParams, ProverBackend};

    fn dev(ordinal: usize) -> CudaDevice {
        CudaDevice {
            ordinal,
            name: "test".into(),
            capability: (9, 0),
            multiprocessors: 1,
            total_mem: 0,
            free_mem: 0,
        }
    }

    #[test]
    fn a_batch_is_split_over_the_gpus_in_service_only() {
        let p = CuzkGpuProver::new(vec![dev(0), dev(1)], 4, GpuParams::Auto);
        assert_eq!(p.devices(), ["cuda:0", "cuda:1"]);
        assert_eq!(p.max_batch(), 8);
        let placed: Vec<usize> = (0..8).map(|i| p.device_for(i, 8)).collect();
        assert_eq!(placed, [0, 0, 0, 0, 1, 1, 1, 1]);
        // An uneven batch: the first GPU takes one more.
        let placed: Vec<usize> = (0..3).map(|i| p.device_for(i, 3)).collect();
        assert_eq!(placed, [0, 0, 1]);
        // GPU 0 out of service: everything goes to GPU 1 (no positional rule).
        assert!(p.set_enabled(0, false));
        assert_eq!(p.max_batch(), 4);
        assert!((0..4).all(|i| p.device_for(i, 4) == 1));
        assert!(p.set_enabled(1, false));
        assert_eq!(p.max_batch(), 0);
        assert!(!p.set_enabled(2, false));
    }
}
