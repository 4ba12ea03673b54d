//! The parameters' placement: read from the `.params` file once per circuit, then resident in
//! each GPU's memory or streamed from one pinned copy in host memory, as configured or (auto)
//! as each GPU's free memory allows.

use std::{sync::Arc, time::Instant};

use super::{device::Gpu, plan::Plan, CuzkGpuProver};
use crate::{
    budget::Reservation,
    error::{Error, Result, Status},
    params::{Bases, FileStamp, Srs},
    sys::{
        cuda,
        gpu_prover::{self, DeviceSrs, PinnedBases},
    },
};

/// A circuit's parameters on one GPU, and how that GPU proves the circuit.
pub(super) struct Loaded {
    pub(super) dev: DeviceSrs,
    pub(super) generation: u64,
    pub(super) plan: Plan,
    /// Streamed: the budget's hold on the pinned host copy (shared by the GPUs using it).
    _host_copy: Option<Arc<Reservation>>,
}

/// What a GPU holds of a circuit's parameters: them, or the error loading them gave where the
/// file is bad (for this version of the file).
pub(super) enum Held {
    Loaded(Arc<Loaded>),
    Failed(Error, FileStamp),
}

impl CuzkGpuProver {
    /// What GPU `g` holds of `srs`'s parameters (this version of them), if anything.
    fn held(&self, g: usize, srs: &Srs) -> Option<Result<Arc<Loaded>>> {
        match self.gpus[g].srs.lock().get(&srs.path) {
            Some(Held::Loaded(l)) if l.generation == srs.generation => Some(Ok(l.clone())),
            Some(Held::Failed(e, stamp)) if *stamp == srs.stamp => Some(Err(e.clone())),
            _ => None,
        }
    }

    /// The parameters on GPU `g`, loading them (onto every usable GPU lacking them) first.
    pub(super) fn loaded(&self, g: usize, srs: &Srs) -> Result<Arc<Loaded>> {
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
        // The cap on the prover's buffers follows this prover's limit from here on.
        for &i in &want {
            let cap = self
                .mem_limit
                .map_or(u64::MAX, |l| l.saturating_sub(super::CONTEXT_BYTES));
            gpu_prover::set_mem_cap(self.gpus[i].ordinal, cap);
        }
        let mut held: Vec<(usize, Held)> = Vec::new();
        let (mut to_stream, mut resident) = (Vec::new(), Vec::new());
        for &i in &want {
            match self.plan(i, srs) {
                Ok(p) if p.streamed => to_stream.push((i, p)),
                Ok(p) => resident.push((i, p)),
                Err(e) => held.push((i, failed(srs, e))),
            }
        }
        if !to_stream.is_empty() || !resident.is_empty() {
            let t = Instant::now();
            let bases = read_bases(srs);
            let read_ms = t.elapsed().as_secs_f64() * 1e3;
            match bases {
                Err(e) => held.extend(
                    to_stream
                        .iter()
                        .chain(&resident)
                        .map(|&(i, _)| (i, failed(srs, e.clone()))),
                ),
                Ok((b, reservation)) => {
                    held.extend(self.place_resident(&resident, &b, srs, read_ms));
                    if !to_stream.is_empty() {
                        held.extend(self.place_streamed(&to_stream, b, reservation, srs));
                    }
                }
            }
        }
        let mut passing = None;
        for (i, h) in held {
            match h {
                // Only a bad file is remembered (until it changes). A passing failure (the
                // budget busy at that moment, device memory held by another process) is
                // answered to this call and tried again by the next.
                Held::Failed(e, _) if e.status != Status::Params => {
                    if i == g {
                        passing = Some(e);
                    }
                }
                h => {
                    self.gpus[i].srs.lock().insert(srs.path.clone(), h);
                }
            }
        }
        if let Some(e) = passing {
            return Err(e);
        }
        self.held(g, srs)
            .unwrap_or_else(|| Err(Error::internal("parameters vanished while loading")))
    }

    /// Copies the bases `b` (read in `read_ms`) into the memory of each of the GPUs `gpus`.
    fn place_resident(
        &self,
        gpus: &[(usize, Plan)],
        b: &Bases,
        srs: &Srs,
        read_ms: f64,
    ) -> Vec<(usize, Held)> {
        gpus.iter()
            .map(|&(i, plan)| {
                let gpu = &self.gpus[i];
                let t = Instant::now();
                let _busy = gpu.busy.lock();
                let held = match DeviceSrs::upload(
                    gpu.ordinal,
                    &b.h,
                    &b.l,
                    &b.a,
                    &b.b_g1,
                    &b.b_g2,
                    plan.lean,
                ) {
                    Ok(dev) => {
                        log::info!(
                            "{}: parameters {} resident on the GPU ({} MiB; read {:.0} ms, \
                             copied {:.0} ms); {plan}",
                            gpu.name,
                            srs.path.display(),
                            dev.bytes() >> 20,
                            read_ms,
                            t.elapsed().as_secs_f64() * 1e3
                        );
                        Held::Loaded(Arc::new(Loaded {
                            dev,
                            generation: srs.generation,
                            plan,
                            _host_copy: None,
                        }))
                    }
                    Err(e) => no_room(gpu, srs, e),
                };
                (i, held)
            })
            .collect()
    }

    /// Pins the bases `b` in host memory, where `reservation` holds them in the budget, and
    /// makes each of the GPUs `gpus` read them from there.
    fn place_streamed(
        &self,
        gpus: &[(usize, Plan)],
        b: Bases,
        reservation: Reservation,
        srs: &Srs,
    ) -> Vec<(usize, Held)> {
        let t = Instant::now();
        let pinned = match PinnedBases::new(b.h, b.l, b.a, b.b_g1, b.b_g2) {
            Err(e) => {
                let e = Error::new(
                    Status::ResourceExhausted,
                    format!("{}: {e}", srs.path.display()),
                );
                return gpus
                    .iter()
                    .map(|&(i, _)| (i, failed(srs, e.clone())))
                    .collect();
            }
            Ok(pinned) => pinned,
        };
        // Held as resident: the copy stays until the engine releases the parameters, so a
        // request waiting for memory (a CPU retry) cannot count on it coming back.
        let (pinned, hold) = (Arc::new(pinned), Arc::new(reservation.into_resident()));
        let pin_ms = t.elapsed().as_secs_f64() * 1e3;
        gpus.iter()
            .map(|&(i, plan)| {
                let gpu = &self.gpus[i];
                let _busy = gpu.busy.lock();
                let held = match DeviceSrs::streamed(gpu.ordinal, pinned.clone(), plan.lean) {
                    Ok(dev) => {
                        log::info!(
                            "{}: parameters {} streamed from pinned host memory \
                             ({} MiB pinned in {:.0} ms, {} MiB on the GPU); {plan}",
                            gpu.name,
                            srs.path.display(),
                            pinned.bytes() >> 20,
                            pin_ms,
                            dev.bytes() >> 20
                        );
                        Held::Loaded(Arc::new(Loaded {
                            dev,
                            generation: srs.generation,
                            plan,
                            _host_copy: Some(hold.clone()),
                        }))
                    }
                    Err(e) => no_room(gpu, srs, e),
                };
                (i, held)
            })
            .collect()
    }

    /// How GPU `i` proves `srs`'s circuit: the first plan the parameter setting allows that
    /// fits the device memory it has free (within `CUZK_GPU_MEM_LIMIT`), or RESOURCE_EXHAUSTED
    /// where none does (said once per GPU and circuit in the log).
    pub(super) fn plan(&self, i: usize, srs: &Srs) -> Result<Plan> {
        let gpu = &self.gpus[i];
        let lg = srs.size.domain().trailing_zeros();
        if lg > gpu_prover::MAX_LG_DOMAIN {
            // Not a fault: no GPU of this prover takes it (its partitions go to the CPU).
            return Err(Error::new(
                Status::Unsupported,
                format!(
                    "{}: {} needs a domain of 2^{lg}; the GPU prover takes 2^{} at most",
                    gpu.name,
                    srs.path.display(),
                    gpu_prover::MAX_LG_DOMAIN
                ),
            ));
        }
        if let Some(p) = self.forced {
            return Ok(p);
        }
        let avail = match self.avail(i) {
            Some(a) => a,
            // No device to ask (a test without a GPU): the first plan allowed.
            None => {
                return Ok(*super::plan::PLANS
                    .iter()
                    .find(|p| p.allowed(self.params))
                    .expect("every setting allows a plan"))
            }
        };
        let need = |p: Plan| plan_bytes(srs, p);
        match super::plan::choose(self.params, avail, need) {
            Some(p) => {
                if p != super::plan::PLANS[0] {
                    log::info!(
                        "{}: {} MiB of device memory for {}: {p} ({} MiB)",
                        gpu.name,
                        avail >> 20,
                        srs.path.display(),
                        need(p) >> 20
                    );
                }
                Ok(p)
            }
            None => {
                let least = super::plan::PLANS
                    .iter()
                    .filter(|p| p.allowed(self.params))
                    .map(|&p| need(p))
                    .min()
                    .unwrap_or(u64::MAX);
                let e = Error::new(
                    Status::ResourceExhausted,
                    format!(
                        "{}: cannot hold a partition of {}: {} MiB of device memory{}, {} MiB \
                         needed at the least (parameters {:?})",
                        gpu.name,
                        srs.path.display(),
                        avail >> 20,
                        match self.mem_limit {
                            Some(l) => format!(" (CUZK_GPU_MEM_LIMIT {} MiB)", l >> 20),
                            None => String::new(),
                        },
                        least >> 20,
                        self.params
                    ),
                );
                if gpu.said_no_room.lock().insert(srs.path.clone()) {
                    log::error!("{}", e.message);
                }
                Err(e)
            }
        }
    }

    /// The device memory GPU `i` can give a circuit now: its free memory, within
    /// `CUZK_GPU_MEM_LIMIT` less what the prover already holds there. None without a device.
    pub(super) fn avail(&self, i: usize) -> Option<u64> {
        let ordinal = self.gpus[i].ordinal;
        let free = cuda::device(ordinal).ok()?.free_mem;
        Some(match self.mem_limit {
            Some(limit) => free.min(limit.saturating_sub(gpu_prover::mem_stats(ordinal).0)),
            None => free,
        })
    }
}

/// Device memory a GPU needs to prove `srs`'s circuit with plan `p` (the parameters too where
/// resident): computed by kernels/ from the sizes it allocates (`cuzk_gpu_working_bytes`,
/// kernels/cuzk/buffers.cuh), with the recording and a margin.
pub fn plan_bytes(srs: &Srs, p: Plan) -> u64 {
    let work = gpu_prover::working_bytes(
        srs.size.domain().trailing_zeros(),
        srs.size.inputs,
        srs.size.aux,
        p.stages,
        p.flags(),
    );
    work.saturating_add(if p.streamed { 0 } else { srs.file_len })
}

/// Reads `srs`'s bases into host memory, first reserving the file's size in the memory budget.
fn read_bases(srs: &Srs) -> Result<(Bases, Reservation)> {
    srs.budget()
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
        .and_then(|reservation| srs.read_bases().map(|b| (b, reservation)))
}

/// A GPU's failure to load `srs`'s parameters, kept for this version of the file.
fn failed(srs: &Srs, e: Error) -> Held {
    Held::Failed(e, srs.stamp.clone())
}

/// `gpu` has no room for `srs`'s parameters (`e`: the device's error).
fn no_room(gpu: &Gpu, srs: &Srs, e: String) -> Held {
    failed(
        srs,
        Error::new(
            Status::ResourceExhausted,
            format!(
                "{}: cannot hold the parameters {} in device memory: {e}",
                gpu.name,
                srs.path.display()
            ),
        ),
    )
}
