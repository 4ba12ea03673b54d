//! The GPU backend: supraseal-c2's Groth16 prover (sppark NTT and MSM kernels, built for sm_90
//! by `build.rs` / `.cargo/config.toml`), one partition per call.
//!
//! What runs where, per partition: the h polynomial (3 iNTT + 3 coset NTT + 1 iNTT) and the H,
//! L, A, B(G1) MSMs and the B(G2) batch additions on the GPU; on the host, supraseal's
//! pre-processing pass over the assignment (splitting the 0/1 scalars out of the MSMs) and the
//! B(G2) tail MSM over the remaining scalars (a CPU Pippenger on all cores). `StageTimes`
//! records the whole call (`gpu_ms`) and our own host-side mapping (`host_ms`); the benchmark
//! measures the host-side part of the call separately (`cuzk bench gpu-split`).
//!
//! The parameters go to pinned host memory once per circuit (supraseal's SRS cache, keyed by
//! path), charged to the engine's memory budget, and stay there for the engine's life.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Instant,
};

use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Affine, G2Affine, Scalar as Fr};
use group::prime::PrimeCurveAffine;
use parking_lot::Mutex;

use super::{cpu::check_size, ProverBackend, ProvingAssignment, StageTimes};
use crate::{
    engine::{budget::Reservation, srs::Srs},
    error::{Error, Result, Status},
    ffi::cuda,
};

/// What the engine found when it looked for GPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Discovery {
    /// Usable devices (probe kernel ran on each).
    Devices(Vec<cuda::CudaDevice>),
    /// No usable GPU, with the reason (no driver, no device, wrong architecture...).
    None(String),
}

/// Looks for usable CUDA devices: driver present, device visible, and our kernels run on it.
pub fn discover() -> Discovery {
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
        match cuda::device(i).and_then(|d| cuda::launch_check(i).map(|_| d)) {
            Ok(d) => found.push(d),
            Err(e) => why.push(format!("device {i}: {e} (kernels built for sm_{})", cuda::built_archs())),
        }
    }
    if found.is_empty() {
        Discovery::None(why.join("; "))
    } else {
        for w in why {
            log::warn!("cuzk: skipping {w}");
        }
        Discovery::Devices(found)
    }
}

/// Test hook: makes the next `n` partitions fail as a GPU error would.
#[derive(Default)]
pub struct FaultInjector {
    pending: AtomicU64,
}

impl FaultInjector {
    pub fn fail_next(&self, n: u64) {
        self.pending.store(n, Ordering::SeqCst);
    }
    fn take(&self) -> bool {
        self.pending
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1))
            .is_ok()
    }
}

struct Loaded {
    srs: supraseal_c2::SRS,
    _reservation: Reservation,
}

/// supraseal-c2 on the first GPU of the process.
pub struct SuprasealProver {
    name: &'static str,
    device: cuda::CudaDevice,
    srs: Mutex<HashMap<PathBuf, Arc<Loaded>>>,
    faults: Arc<FaultInjector>,
}

impl SuprasealProver {
    pub fn new(device: cuda::CudaDevice) -> Self {
        let name: &'static str = Box::leak(format!("cuda:{}", device.ordinal).into_boxed_str());
        SuprasealProver {
            name,
            device,
            srs: Mutex::new(HashMap::new()),
            faults: Arc::new(FaultInjector::default()),
        }
    }

    pub fn device(&self) -> &cuda::CudaDevice {
        &self.device
    }

    /// Handle for fault-injection tests.
    pub fn faults(&self) -> Arc<FaultInjector> {
        self.faults.clone()
    }

    fn loaded(&self, srs: &Srs) -> Result<Arc<Loaded>> {
        // One loader at a time: concurrent first uses wait instead of loading twice.
        let mut map = self.srs.lock();
        if let Some(l) = map.get(&srs.path) {
            return Ok(l.clone());
        }
        let reservation = srs.budget().try_acquire(srs.file_len).ok_or_else(|| {
            Error::new(
                Status::ResourceExhausted,
                format!(
                    "GPU parameters {} ({} MiB pinned) do not fit in the free memory budget",
                    srs.path.display(),
                    srs.file_len >> 20
                ),
            )
        })?;
        let t = Instant::now();
        let loaded = supraseal_c2::SRS::try_new(srs.path.clone(), true)
            .map_err(|e| Error::params(format!("loading {} for the GPU: {}", srs.path.display(), String::from(e))))?;
        log::info!(
            "{}: parameters {} in pinned memory in {:.0} ms",
            self.name,
            srs.path.display(),
            t.elapsed().as_secs_f64() * 1e3
        );
        let l = Arc::new(Loaded {
            srs: loaded,
            _reservation: reservation,
        });
        map.insert(srs.path.clone(), l.clone());
        Ok(l)
    }
}

impl ProverBackend for SuprasealProver {
    fn name(&self) -> &'static str {
        self.name
    }

    fn is_gpu(&self) -> bool {
        true
    }

    fn prepare(&self, srs: &Srs) -> Result<()> {
        self.loaded(srs).map(|_| ())
    }

    fn prove(
        &self,
        asg: &mut Option<ProvingAssignment>,
        srs: &Srs,
        r: Fr,
        s: Fr,
        times: &mut StageTimes,
    ) -> Result<Proof<Bls12>> {
        let t = Instant::now();
        // Read only: on an error the engine retries the same assignment on the CPU.
        let asg = asg.as_ref().ok_or_else(|| Error::internal("no assignment to prove"))?;
        check_size(&asg, &srs.size)?;
        let loaded = self.loaded(srs)?;
        if self.faults.take() {
            return Err(Error::proving(format!("{}: injected GPU fault", self.name)));
        }
        let a = supraseal_c2::Assignment::<Fr> {
            a_aux_density: asg.a_aux_density.bv.as_raw_slice().as_ptr(),
            a_aux_bit_len: asg.a_aux_density.bv.len(),
            a_aux_popcount: asg.a_aux_density.get_total_density(),
            b_inp_density: asg.b_input_density.bv.as_raw_slice().as_ptr(),
            b_inp_bit_len: asg.b_input_density.bv.len(),
            b_inp_popcount: asg.b_input_density.get_total_density(),
            b_aux_density: asg.b_aux_density.bv.as_raw_slice().as_ptr(),
            b_aux_bit_len: asg.b_aux_density.bv.len(),
            b_aux_popcount: asg.b_aux_density.get_total_density(),
            a: asg.a.as_ptr(),
            b: asg.b.as_ptr(),
            c: asg.c.as_ptr(),
            abc_size: asg.a.len(),
            inp_assignment_data: asg.input_assignment.as_ptr(),
            inp_assignment_size: asg.input_assignment.len(),
            aux_assignment_data: asg.aux_assignment.as_ptr(),
            aux_assignment_size: asg.aux_assignment.len(),
        };
        let mut proofs = vec![Proof::<Bls12> {
            a: G1Affine::identity(),
            b: G2Affine::identity(),
            c: G1Affine::identity(),
        }];
        times.host_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        // Reports device errors by panicking; the engine's prover worker turns that into an
        // error for this partition (and retries it on the CPU).
        supraseal_c2::generate_groth16_proofs(&[a], &[r], &[s], &mut proofs, &loaded.srs);
        times.gpu_ms = t.elapsed().as_secs_f64() * 1e3;
        Ok(proofs.pop().expect("one proof"))
    }
}
