//! The GPU backend: supraseal-c2's Groth16 prover (sppark NTT and MSM kernels, built for sm_90
//! through `.cargo/config.toml`), several partitions per call, spread over the GPUs.
//!
//! What runs where, per partition: the h polynomial (3 iNTT + 3 coset NTT + 1 iNTT) and the H,
//! L, A, B(G1) MSMs and the B(G2) batch additions on the GPU; on the host, supraseal's
//! pre-processing pass over the assignment (splitting the 0/1 scalars out of the MSMs) and the
//! B(G2) tail MSM over the remaining scalars (a CPU Pippenger on all cores). `StageTimes`
//! records the whole call (`gpu_ms`) and our own host-side mapping (`host_ms`); the CPU time
//! supraseal's call takes on the host (1.1-1.7 s per partition) is measured by `cuzk bench
//! calls` (BENCHMARKS.md, section 4). Threads waiting for a GPU block rather than spin
//! (`CUZK_GPU_WAIT=spin` to keep the CUDA runtime's default), leaving the cores to synthesis.
//!
//! The parameters go to pinned host memory once per circuit (supraseal's SRS cache, keyed by
//! path), charged to the engine's memory budget, and stay there for the engine's life.

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
use blstrs::{Bls12, G1Affine, G2Affine, Scalar as Fr};
use group::prime::PrimeCurveAffine;
use parking_lot::Mutex;

use super::{
    batch_device as gpu_of, cpu::check_size, prove_one_as_batch, ProverBackend, ProvingAssignment,
    StageTimes,
};
use crate::{
    budget::Reservation,
    error::{Error, Result, Status},
    params::Srs,
    sys::cuda,
};

/// What the engine found when it looked for GPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Discovery {
    /// Usable devices (probe kernel ran on each), and how many the CUDA runtime shows this
    /// process (supraseal spreads a call over all of those).
    Devices(Vec<cuda::CudaDevice>, usize),
    /// No usable GPU, with the reason (no driver, no device, wrong architecture...).
    None(String),
}

/// Looks for usable CUDA devices: driver present, device visible, and our kernels run on it.
/// `blocking`: threads waiting for a device sleep instead of spinning (set before any context
/// exists).
pub fn discover(blocking: bool) -> Discovery {
    let (driver, count) = match cuda::probe() {
        Ok(v) => v,
        Err(e) => return Discovery::None(e),
    };
    if count == 0 {
        return Discovery::None(format!("the CUDA driver ({driver}) reports no device"));
    }
    let mut found = Vec::new();
    let mut why = Vec::new();
    for i in 0..count {
        if blocking {
            if let Err(e) = cuda::set_blocking_sync(i) {
                log::warn!("cuzk: device {i}: waits will spin: {e}");
            }
        }
        match cuda::device(i).and_then(|d| cuda::launch_check(i).map(|_| d)) {
            Ok(d) => found.push(d),
            Err(e) => why.push(format!(
                "device {i}: {e} (kernels built for sm_{})",
                cuda::built_archs()
            )),
        }
    }
    if found.is_empty() {
        Discovery::None(why.join("; "))
    } else {
        for w in why {
            log::warn!("cuzk: skipping {w}");
        }
        Discovery::Devices(found, count)
    }
}

/// Partitions one supraseal call may take: `per_gpu` per GPU while all `visible` GPUs are
/// usable; otherwise one per usable GPU (a call of n <= usable circuits stays on GPUs 0..n).
pub fn call_width(usable: usize, visible: usize, per_gpu: usize) -> usize {
    if usable >= visible {
        usable * per_gpu.max(1)
    } else {
        usable
    }
}

struct Loaded {
    srs: supraseal_c2::SRS,
    /// The checked instance of the parameter file it was read from.
    generation: u64,
    _reservation: Reservation,
}

/// What the backend holds for one parameter file: its pinned copy, or why it could not be
/// loaded (remembered until the file changes, so that every job does not read it again).
enum Held {
    Loaded(Arc<Loaded>),
    Failed(Error, crate::params::FileStamp),
}

/// supraseal-c2 on the process's GPUs. supraseal serializes its calls process-wide and spreads
/// a call of n circuits over the first min(n, visible GPUs) GPUs in contiguous runs, so one
/// backend drives every GPU: each call proves up to `per_gpu` partitions per GPU, all at once.
/// While only some of the visible GPUs may be used (a device out of service, or fewer asked
/// for), a call holds at most one partition per usable GPU, which keeps it on those.
pub struct SuprasealProver {
    name: &'static str,
    /// Partitions per GPU in one call: supraseal's host-side work (splitting the scalars, the
    /// G2 tail) runs in parallel over a call's partitions and overlaps its GPU work, so a few
    /// per call use the GPU better than one (BENCHMARKS.md, section 4).
    per_gpu: usize,
    /// GPUs the CUDA runtime shows this process (supraseal's count).
    visible: usize,
    names: Vec<String>,
    enabled: Vec<AtomicBool>,
    srs: Mutex<HashMap<PathBuf, Held>>,
}

impl SuprasealProver {
    /// `devices` must be the process's GPUs from ordinal 0 on, in order (supraseal addresses
    /// them by position), out of `visible`.
    pub fn new(devices: Vec<cuda::CudaDevice>, visible: usize, per_gpu: usize) -> Self {
        let names: Vec<String> = devices
            .iter()
            .map(|d| format!("cuda:{}", d.ordinal))
            .collect();
        let name: &'static str = Box::leak(
            if names.len() == 1 {
                names[0].clone()
            } else {
                format!("cuda:0-{}", names.len() - 1)
            }
            .into_boxed_str(),
        );
        SuprasealProver {
            name,
            per_gpu: per_gpu.max(1),
            visible: visible.max(devices.len()),
            enabled: devices.iter().map(|_| AtomicBool::new(true)).collect(),
            names,
            srs: Mutex::new(HashMap::new()),
        }
    }

    /// supraseal uses GPUs 0..g for a call: only the leading run of enabled GPUs is usable.
    fn usable_gpus(&self) -> usize {
        self.enabled
            .iter()
            .take_while(|e| e.load(Ordering::SeqCst))
            .count()
    }

    fn loaded(&self, srs: &Srs) -> Result<Arc<Loaded>> {
        // One loader at a time: concurrent first uses wait instead of loading twice.
        let mut map = self.srs.lock();
        match map.get(&srs.path) {
            Some(Held::Loaded(l)) if l.generation == srs.generation => return Ok(l.clone()),
            Some(Held::Failed(e, stamp)) if *stamp == srs.stamp => return Err(e.clone()),
            _ => {}
        }
        // A copy of an older version of the file goes first (its memory comes back).
        map.remove(&srs.path);
        let res = self.load(srs);
        match &res {
            Ok(l) => map.insert(srs.path.clone(), Held::Loaded(l.clone())),
            Err(e) => map.insert(srs.path.clone(), Held::Failed(e.clone(), srs.stamp.clone())),
        };
        res
    }

    fn load(&self, srs: &Srs) -> Result<Arc<Loaded>> {
        let reservation = srs
            .budget()
            .try_acquire_resident(srs.file_len)
            .ok_or_else(|| {
                Error::new(
                    Status::ResourceExhausted,
                    format!(
                        "GPU parameters {} ({} MiB pinned) do not fit in the free memory budget",
                        srs.path.display(),
                        srs.file_len >> 20
                    ),
                )
            })?;
        // supraseal maps and reads the file without bounds checks: it is only handed one that
        // `params::check_file` accepted and that has not changed since.
        srs.check_unchanged()?;
        let t = Instant::now();
        let loaded = crate::error::catch("supraseal-c2 parameter load", Status::Params, || {
            supraseal_c2::SRS::try_new(srs.path.clone(), true).map_err(|e| {
                Error::params(format!(
                    "loading {} for the GPU: {}",
                    srs.path.display(),
                    String::from(e)
                ))
            })
        })?;
        log::info!(
            "{}: parameters {} in pinned memory in {:.0} ms",
            self.name,
            srs.path.display(),
            t.elapsed().as_secs_f64() * 1e3
        );
        Ok(Arc::new(Loaded {
            srs: loaded,
            generation: srs.generation,
            _reservation: reservation,
        }))
    }
}

impl ProverBackend for SuprasealProver {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_gpu(&self) -> bool {
        true
    }

    fn devices(&self) -> Vec<String> {
        self.names.clone()
    }

    fn max_batch(&self) -> usize {
        call_width(self.usable_gpus(), self.visible, self.per_gpu)
    }

    fn device_for(&self, i: usize, n: usize) -> usize {
        // A batch wider than a call now takes (a device went out of service after it was
        // formed) is proved in calls of the current width, as in `prove_batch`.
        let width = self.max_batch().max(1);
        let (start, len) = if n > width {
            (i / width * width, width.min(n - i / width * width))
        } else {
            (0, n)
        };
        gpu_of(i - start, len, self.visible)
    }

    fn set_enabled(&self, device: usize, on: bool) -> bool {
        match self.enabled.get(device) {
            Some(e) => {
                e.store(on, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    fn prepare(&self, srs: &Srs) -> Result<()> {
        self.loaded(srs).map(|_| ())
    }

    fn probe(&self, device: usize) -> Result<()> {
        let ordinal = device;
        cuda::launch_check(ordinal)
            .map_err(|e| Error::proving(format!("{}: probe failed: {e}", self.names[device])))
    }

    fn release(&self) {
        self.srs.lock().clear();
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
        let width = self.max_batch();
        let n = asgs.len();
        if width > 0 && n > width {
            // A device went out of service after this batch was formed: prove it in turns.
            let mut out = Vec::with_capacity(n);
            for start in (0..n).step_by(width) {
                let end = (start + width).min(n);
                out.extend(self.prove_batch(
                    &mut asgs[start..end],
                    srs,
                    &rs[start..end],
                    &ss[start..end],
                    &mut times[start..end],
                ));
            }
            return out;
        }
        let t = Instant::now();
        let mut results: Vec<Option<(usize, Result<Proof<Bls12>>)>> =
            (0..n).map(|_| None).collect();
        let gpus = self.visible;
        let loaded = self.loaded(srs);
        // Which items go to the GPUs; the others get their error now. Assignments are only
        // read: after an error the engine proves them again elsewhere.
        let mut run = Vec::new();
        for (i, a) in asgs.iter().enumerate() {
            let err = match (a, &loaded) {
                (None, _) => Some(Error::internal("no assignment to prove")),
                (_, Err(e)) => Some(e.clone()),
                (Some(_), _) if i >= width => Some(Error::new(
                    Status::Unsupported,
                    format!("{}: batch of {n} for {width} usable GPUs", self.name),
                )),
                (Some(a), _) => check_size(a, &srs.size).err(),
            };
            let dev = gpu_of(i, n, gpus).min(self.names.len().saturating_sub(1));
            match err {
                Some(e) => results[i] = Some((dev, Err(e))),
                None => run.push(i),
            }
        }
        if let (false, Ok(loaded)) = (run.is_empty(), &loaded) {
            let provers: Vec<supraseal_c2::Assignment<Fr>> = run
                .iter()
                .map(|&i| {
                    let a = asgs[i].as_ref().expect("checked above");
                    supraseal_c2::Assignment::<Fr> {
                        a_aux_density: a.a_aux_density.bv.as_raw_slice().as_ptr(),
                        a_aux_bit_len: a.a_aux_density.bv.len(),
                        a_aux_popcount: a.a_aux_density.get_total_density(),
                        b_inp_density: a.b_input_density.bv.as_raw_slice().as_ptr(),
                        b_inp_bit_len: a.b_input_density.bv.len(),
                        b_inp_popcount: a.b_input_density.get_total_density(),
                        b_aux_density: a.b_aux_density.bv.as_raw_slice().as_ptr(),
                        b_aux_bit_len: a.b_aux_density.bv.len(),
                        b_aux_popcount: a.b_aux_density.get_total_density(),
                        a: a.a.as_ptr(),
                        b: a.b.as_ptr(),
                        c: a.c.as_ptr(),
                        abc_size: a.a.len(),
                        inp_assignment_data: a.input_assignment.as_ptr(),
                        inp_assignment_size: a.input_assignment.len(),
                        aux_assignment_data: a.aux_assignment.as_ptr(),
                        aux_assignment_size: a.aux_assignment.len(),
                    }
                })
                .collect();
            let r: Vec<Fr> = run.iter().map(|&i| rs[i]).collect();
            let s: Vec<Fr> = run.iter().map(|&i| ss[i]).collect();
            let mut proofs = vec![
                Proof::<Bls12> {
                    a: G1Affine::identity(),
                    b: G2Affine::identity(),
                    c: G1Affine::identity(),
                };
                run.len()
            ];
            let host_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            // supraseal reports device errors by panicking: that fails this call's partitions,
            // which the engine then proves again.
            let called = crate::error::catch("supraseal-c2", Status::Proving, || {
                supraseal_c2::generate_groth16_proofs(&provers, &r, &s, &mut proofs, &loaded.srs);
                Ok(())
            });
            let gpu_ms = t.elapsed().as_secs_f64() * 1e3;
            for (j, &i) in run.iter().enumerate() {
                let dev = gpu_of(j, run.len(), gpus);
                times[i].host_ms = host_ms;
                times[i].gpu_ms = gpu_ms;
                results[i] = Some((
                    dev,
                    match &called {
                        Ok(()) => Ok(proofs[j].clone()),
                        Err(e) => Err(Error::proving(format!(
                            "{}: GPU prover failed: {}",
                            self.names[dev], e.message
                        ))),
                    },
                ));
            }
        }
        results
            .into_iter()
            .map(|r| r.expect("every item has a result"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{call_width, cuda::CudaDevice, gpu_of, ProverBackend, SuprasealProver};

    #[test]
    fn calls_stay_on_usable_gpus() {
        assert_eq!(call_width(1, 1, 4), 4);
        assert_eq!(call_width(2, 2, 4), 8);
        // One of two GPUs usable (the other out of service, or not asked for): one partition
        // per call, which supraseal puts on GPU 0.
        assert_eq!(call_width(1, 2, 4), 1);
        assert_eq!(call_width(0, 2, 4), 0);
        assert_eq!(call_width(3, 4, 4), 3);
        for usable in 0..=4 {
            for per_gpu in 1..=4 {
                let n = call_width(usable, 4, per_gpu);
                for i in 0..n {
                    assert!(
                        gpu_of(i, n, 4) < usable.max(1),
                        "usable {usable} per_gpu {per_gpu}: item {i} of {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_batch_formed_before_a_device_went_out_is_placed_on_the_usable_ones() {
        let dev = |ordinal| CudaDevice {
            ordinal,
            name: "test".into(),
            capability: (9, 0),
            multiprocessors: 1,
            total_mem: 0,
            free_mem: 0,
        };
        let p = SuprasealProver::new(vec![dev(0), dev(1)], 2, 4);
        assert_eq!(p.max_batch(), 8);
        let placed: Vec<usize> = (0..8).map(|i| p.device_for(i, 8)).collect();
        assert_eq!(placed, [0, 0, 0, 0, 1, 1, 1, 1]);
        assert!(p.set_enabled(1, false));
        // The same batch is now proved one partition per call, on GPU 0.
        assert_eq!(p.max_batch(), 1);
        assert!((0..8).all(|i| p.device_for(i, 8) == 0));
    }
}
