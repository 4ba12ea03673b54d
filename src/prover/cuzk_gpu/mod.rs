//! cuzk's own GPU prover (`kernels/groth16.cu`): the whole Groth16 proof of a partition on one
//! GPU, from the circuit's parameters either resident in that GPU's memory or streamed to it
//! from pinned host memory (see below).
//!
//! Per partition the host uploads a, b, c and the assignment (or only the compact witness,
//! where the circuit's recording is on the GPU: a, b and c are then computed there); the GPU
//! computes h (3 iNTT, 3 coset NTT, the element-wise step, 1 coset iNTT), compacts the A and B
//! scalars by their densities and runs the H, L, A, B(G1) and B(G2) MSMs (sppark's Pippenger,
//! G2 included). The host adds the verifying key's terms with r and s (a few scalar
//! multiplications).
//!
//! Devices are independent: a batch of n partitions goes one per usable GPU, each GPU proving
//! its share in turn under its own lock, so no call waits on another GPU and there is no
//! process-wide lock.
//!
//! Parameters are read from the `.params` file once per circuit, then placed on each GPU that
//! proves it in one of two ways (`CUZK_GPU_PARAMS`: `resident`, `streamed`, or `auto`, the
//! default: resident where the GPU's free memory holds them beside its working buffers,
//! streamed elsewhere):
//! - resident: copied into the GPU's memory, which holds them until the engine shuts down;
//!   the host copy goes once they are copied;
//! - streamed: one pinned copy in host memory, charged to the memory budget, serves every such
//!   GPU: the H bases are copied in batch by batch during each partition and the others read
//!   over the bus.
//!
//! Files by concern:
//! - `mod.rs`: [`CuzkGpuProver`] (its GPUs, batch width and parameter placement setting) and
//!   its [`ProverBackend`] interface.
//! - `placement`: the parameters on each GPU (`Loaded`, `Held`): loading them once for every
//!   GPU lacking them, and the choice between resident and streamed with the device memory a
//!   GPU needs beside them.
//! - `device`: a GPU (`Gpu`) and what it keeps between calls (partition stages, circuit
//!   recordings), and copying a partition into a stage (assignment or compact witness).
//! - `pipeline`: a batch split over the GPUs in service, each GPU's upload/prove pipeline, and
//!   one partition's proof (kernels, then the proof assembled on the host).

mod device;
mod pipeline;
mod placement;
pub mod plan;

pub use placement::plan_bytes;

use std::{
    collections::{HashMap, HashSet},
    sync::{
        atomic::{AtomicBool, Ordering},
        Weak,
    },
    time::Duration,
};

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar as Fr};
use parking_lot::Mutex;

use self::device::{Gpu, Held};
use super::{
    prove_one_as_batch, Between, ClassedWitness, GpuParams, ProverBackend, ProvingAssignment,
    SparseR1cs, StageTimes,
};
use crate::{
    error::{Error, Result, Status},
    params::Srs,
    sys::{cuda, gpu_prover},
};

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
    /// `CUZK_GPU_MEM_LIMIT`: the device memory each GPU is planned and capped as having.
    mem_limit: Option<u64>,
    /// A plan every GPU takes whatever its memory (`with_plan`), else chosen per GPU.
    forced: Option<plan::Plan>,
    /// Recordings' host tables pinned for GPUs that read them in place, by (circuit, instance).
    pinned_recs: Mutex<HashMap<(String, u64), Weak<gpu_prover::PinnedRecording>>>,
    /// How long a circuit's parameters stay on a GPU after loading before another circuit may
    /// take their room ([`MIN_HOLD`]).
    min_hold: Duration,
}

/// Parameters loaded onto a GPU stay there at least this long before another circuit short of
/// room may take it: two circuits that take turns on a card (a PoRep stream, a WindowPoSt
/// job's partitions) switch at most once a minute, not once a partition.
pub const MIN_HOLD: Duration = Duration::from_secs(60);

/// Device memory left to the CUDA context and allocation slack under `CUZK_GPU_MEM_LIMIT`:
/// the prover's own buffers are capped at the limit less this.
pub const CONTEXT_BYTES: u64 = 512 << 20;

impl CuzkGpuProver {
    /// The prover on `devices`, `per_gpu` partitions per GPU and batch, the parameters placed
    /// by `params`, and each GPU planned and capped as having at most `mem_limit` bytes of
    /// device memory (its buffers are capped at the limit less [`CONTEXT_BYTES`]).
    pub fn new(
        devices: Vec<cuda::CudaDevice>,
        per_gpu: usize,
        params: GpuParams,
        mem_limit: Option<u64>,
    ) -> Self {
        let gpus: Vec<Gpu> = devices
            .iter()
            .map(|d| Gpu {
                ordinal: d.ordinal,
                name: format!("cuda:{}", d.ordinal),
                enabled: AtomicBool::new(true),
                busy: Mutex::new(()),
                in_call: AtomicBool::new(false),
                srs: Mutex::new(HashMap::new()),
                stages: Mutex::new(Vec::new()),
                recordings: Mutex::new(HashMap::new()),
                said_no_room: Mutex::new(HashSet::new()),
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
            mem_limit,
            forced: None,
            pinned_recs: Mutex::new(HashMap::new()),
            min_hold: MIN_HOLD,
        }
    }

    /// Another circuit short of room may take that of parameters loaded `d` ago or longer
    /// (default [`MIN_HOLD`]).
    pub fn with_min_hold(mut self, d: Duration) -> Self {
        self.min_hold = d;
        self
    }

    /// Every GPU proves with plan `p` whatever its memory (the self-test's lean runs); its
    /// allocations still fail past the memory limit.
    pub fn with_plan(mut self, p: plan::Plan) -> Self {
        self.forced = Some(p);
        self
    }
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

    /// Loads the parameters onto every usable GPU. One GPU's failure does not stop the
    /// others: Ok where at least one holds them (the rest try again at their next call), else
    /// the first error, a bad file's (PARAMS) before any other.
    fn prepare(&self, srs: &Srs) -> Result<()> {
        let mut first: Option<Error> = None;
        let mut any = false;
        for g in self.usable() {
            match self.loaded(g, srs) {
                Ok(_) => any = true,
                Err(e) => {
                    let params = e.status == Status::Params;
                    if first
                        .as_ref()
                        .is_none_or(|f| params && f.status != Status::Params)
                    {
                        first = Some(e);
                    }
                }
            }
        }
        match first {
            Some(e) if !any || e.status == Status::Params => Err(e),
            _ => Ok(()),
        }
    }

    fn probe(&self, device: usize) -> Result<()> {
        let gpu = &self.gpus[device];
        cuda::launch_check(gpu.ordinal)
            .map_err(|e| Error::proving(format!("{}: probe failed: {e}", gpu.name)))
    }

    fn plans(&self, srs: &Srs) -> Vec<(String, Result<String>)> {
        self.usable()
            .into_iter()
            .map(|g| {
                let gpu = &self.gpus[g];
                let plan = match gpu.srs.lock().get(&srs.path) {
                    Some(Held::Loaded(l)) if l.generation == srs.generation => Ok(l.plan),
                    _ => self.plan(g, srs),
                };
                let said = plan.map(|p| {
                    format!(
                        "{p} ({} MiB of device memory{})",
                        plan_bytes(srs, p) >> 20,
                        match self.mem_limit {
                            Some(l) => format!(", CUZK_GPU_MEM_LIMIT {} MiB", l >> 20),
                            None => String::new(),
                        }
                    )
                });
                (gpu.name.clone(), said)
            })
            .collect()
    }

    fn busy_devices(&self) -> Option<Vec<usize>> {
        Some(
            (0..self.gpus.len())
                .filter(|&g| self.gpus[g].in_call.load(Ordering::SeqCst))
                .collect(),
        )
    }

    fn release(&self) {
        for g in &self.gpus {
            let _busy = g.busy.lock();
            g.stages.lock().clear();
            g.recordings.lock().clear();
            g.srs.lock().clear();
        }
    }

    fn forget_recording(&self, id: &str) {
        for g in &self.gpus {
            // Its device memory goes back once the calls holding it end.
            g.recordings.lock().retain(|(rid, _), _| rid != id);
        }
    }

    fn proves_witness(&self) -> bool {
        true
    }

    /// Where a GPU holds the circuit's parameters with full stages (a GPU without them, or
    /// with lean stages only, takes compact witnesses).
    fn takes_assignments(&self, srs: &Srs) -> bool {
        self.usable()
            .into_iter()
            .any(|g| matches!(self.held(g, srs), Some(Ok(l)) if !l.plan.lean))
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
        self.prove_witness_batch_between(r1cs, ws, srs, rs, ss, times, &|| false)
    }

    fn prove_witness_batch_between(
        &self,
        r1cs: &SparseR1cs,
        ws: &[ClassedWitness],
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        times: &mut [StageTimes],
        stop: Between<'_>,
    ) -> Option<Vec<(usize, Result<Proof<Bls12>>)>> {
        let gpus = self.takers(srs);
        Some(self.split(&gpus, ws.len(), times, |g, items| {
            self.pipeline(
                g,
                items,
                |i| self.upload_compact(g, r1cs, &ws[i], srs),
                srs,
                rs,
                ss,
                stop,
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
        self.prove_batch_between(asgs, srs, rs, ss, times, &|| false)
    }

    fn prove_batch_between(
        &self,
        asgs: &mut [Option<ProvingAssignment>],
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        times: &mut [StageTimes],
        stop: Between<'_>,
    ) -> Vec<(usize, Result<Proof<Bls12>>)> {
        // Assignments are only read: after an error the engine proves them elsewhere.
        let asgs: &[Option<ProvingAssignment>] = asgs;
        let gpus = self.takers(srs);
        self.split(&gpus, asgs.len(), times, |g, items| {
            let upload = |i: usize| match &asgs[i] {
                None => Err(Error::internal("no assignment to prove")),
                Some(a) => self.upload(g, a, srs),
            };
            self.pipeline(g, items, upload, srs, rs, ss, stop)
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
        let p = CuzkGpuProver::new(vec![dev(0), dev(1)], 4, GpuParams::Auto, None);
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

    /// A card that can never hold the circuit (too small, or its limit) gives its share of a
    /// multi-GPU batch to the other GPUs; only where none could hold it does the batch go to
    /// all (and on to the CPU). The hazard: the share given to such a card goes to the CPU.
    #[test]
    fn a_card_that_can_never_hold_the_circuit_gives_its_share_to_the_others() {
        use super::pipeline::takers;
        assert_eq!(takers(vec![0, 1, 2], |g| g == 1), [0, 2]);
        assert_eq!(takers(vec![0, 2], |g| g == 0), [2]);
        assert_eq!(takers(vec![0, 1], |_| true), [0, 1]);
        assert_eq!(takers(vec![], |_| false), Vec::<usize>::new());
    }

    /// Only what the device did is a PROVING fault of its GPU. Arguments the kernels refuse (a
    /// bug or a shape the Rust side let through) and host-side failures are INTERNAL. The
    /// hazard: counted as faults, they take healthy GPUs out of service.
    #[test]
    fn only_what_the_device_did_is_a_fault() {
        use crate::{error::Status, sys::gpu_prover::KernelError};
        let status = |code| {
            let e = KernelError {
                code,
                message: "m".into(),
            };
            super::device::kernel_error("cuda:0", "upload failed", e).status
        };
        use crate::sys::gpu_prover::{CUDA_OUT_OF_MEMORY, EHOST, EINVAL, EWRONG};
        assert_eq!(status(EINVAL), Status::Internal);
        assert_eq!(status(EHOST), Status::Internal);
        assert_eq!(status(EWRONG), Status::Proving);
        assert_eq!(status(700), Status::Proving, "cudaErrorIllegalAddress");
        assert_eq!(status(CUDA_OUT_OF_MEMORY), Status::ResourceExhausted);
        // No GPU in service: none ran the batch, none is faulted.
        let p = CuzkGpuProver::new(vec![dev(0)], 1, GpuParams::Auto, None);
        assert!(p.set_enabled(0, false));
        let mut times = vec![Default::default(); 2];
        let out = p.split(&p.usable(), 2, &mut times, |_, _| {
            unreachable!("no GPU in service")
        });
        assert!(out
            .iter()
            .all(|(_, r)| matches!(r, Err(e) if e.status == Status::Unsupported)));
    }

    /// A row the GPU's product finds unsatisfied but that holds on the host (a damaged device
    /// copy of the recording) has the copy made again once, and a second failure is a PROVING
    /// fault; a row that fails on the host too stays INTERNAL (the recording's fault, not the
    /// GPU's). The hazard: a device that damages its copy is never counted a fault.
    #[test]
    fn a_row_that_holds_on_the_host_is_the_gpus_fault_after_a_second_copy() {
        use super::device::{row_failure, RowFailure};
        use crate::{error::Status, pce};
        let rec = pce::RecordingCS::record(Toy, "toy", None).unwrap();
        let w = pce::WitnessTarget::synthesize(Toy, None, None).unwrap();
        let r1cs = rec.r1cs();
        let first = row_failure("cuda:0", &r1cs, &w.classed(), 3, false);
        assert!(matches!(first, RowFailure::CopyAgain), "{first:?}");
        match row_failure("cuda:0", &r1cs, &w.classed(), 3, true) {
            RowFailure::Fails(e) => assert_eq!(e.status, Status::Proving, "{e}"),
            other => panic!("{other:?}"),
        }
        // A witness the recording does not fit: INTERNAL, first time and after a copy.
        let mut wrong = w.clone();
        wrong.inputs[1] = blstrs::Scalar::from(7u64);
        // The row "x * 1 = out" (after it, one `input * 0 = 0` row per input).
        let last = (rec.constraints() - 1 - rec.inputs) as u64;
        for again in [false, true] {
            match row_failure("cuda:0", &r1cs, &wrong.classed(), last, again) {
                RowFailure::Fails(e) => assert_eq!(e.status, Status::Internal, "{e}"),
                other => panic!("{other:?}"),
            }
        }
        // A row out of range is not the device's fault either.
        match row_failure("cuda:0", &r1cs, &w.classed(), u64::MAX, false) {
            RowFailure::Fails(e) => assert_eq!(e.status, Status::Internal, "{e}"),
            other => panic!("{other:?}"),
        }
    }

    /// x^(2^rounds) = y: a few constraints, for a parameter file on disk.
    struct Toy;

    impl bellperson::Circuit<blstrs::Scalar> for Toy {
        fn synthesize<CS: bellperson::ConstraintSystem<blstrs::Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), bellperson::SynthesisError> {
            let one = blstrs::Scalar::from(3u64);
            let mut x = cs.alloc(|| "x", || Ok(one))?;
            let mut v = one;
            for i in 0..8 {
                let sq = v * v;
                let y = cs.alloc(|| format!("y{i}"), || Ok(sq))?;
                cs.enforce(|| format!("c{i}"), |lc| lc + x, |lc| lc + x, |lc| lc + y);
                (x, v) = (y, sq);
            }
            let out = cs.alloc_input(|| "out", || Ok(v))?;
            cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
            Ok(())
        }
    }

    /// A GPU parameter load that fails for a passing reason (here the memory budget busy at
    /// that moment; in production also device memory held by another process) is not
    /// remembered for the file: once the budget has room the next call loads again. Only a bad
    /// file may be remembered. The hazard: a remembered passing failure fails every later job
    /// of the circuit until a restart.
    #[test]
    fn a_passing_parameter_load_failure_is_not_remembered() {
        use crate::{budget::Budget, error::Status, params};
        use rand::SeedableRng;
        let dir = tempfile::tempdir().unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let toy =
            bellperson::groth16::generate_random_parameters::<blstrs::Bls12, _, _>(Toy, &mut rng)
                .unwrap();
        let file = |p| std::fs::File::create(p).unwrap();
        toy.write(file(params::params_path(dir.path(), "toy")))
            .unwrap();
        toy.vk
            .write(file(params::vk_path(dir.path(), "toy")))
            .unwrap();
        let budget = Budget::new(1 << 30);
        let srs = params::SrsCache::new(dir.path().into())
            .get("toy", &budget)
            .unwrap();
        let busy = budget.try_acquire((1 << 30) - srs.file_len / 2).unwrap();
        let p = CuzkGpuProver::new(vec![dev(0)], 1, GpuParams::Resident, None);
        let e = p.prepare(&srs).unwrap_err();
        assert_eq!(e.status, Status::ResourceExhausted, "{e}");
        assert!(e.message.contains("memory budget"), "{e}");
        drop(busy);
        // The budget has room now: the load is tried again. Here it either succeeds (a GPU)
        // or fails on the device (none), but not with the remembered budget error.
        if let Err(e) = p.prepare(&srs) {
            assert!(!e.message.contains("memory budget"), "remembered: {e}");
        }
    }
}
