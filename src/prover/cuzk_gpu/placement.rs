//! The parameters' placement, once per circuit: resident in each GPU's memory (read from the
//! `.params` file piece by piece straight into the GPUs' copies) or streamed from one pinned
//! copy in host memory (read whole), as configured or (auto) as each GPU's free memory allows.

use std::{path::PathBuf, sync::Arc, time::Instant};

use super::{
    device::{kernel_error, Gpu, Held, Loaded},
    plan::Plan,
    CuzkGpuProver,
};
use crate::{
    budget::Reservation,
    error::{Error, Result, Status},
    params::{Bases, BasesPiece, Layout, Srs, PIECE_HOST_BYTES},
    sys::{
        cuda,
        gpu_prover::{self, DeviceSrs, PinnedBases},
    },
};

/// The layout of `srs`'s bases and their point counts (h, l, a, b_g1, b_g2), refusing a file
/// whose B points in G1 and G2 differ in number.
fn checked_layout(srs: &Srs) -> Result<(Layout, [usize; 5])> {
    let layout = srs.bases_layout()?;
    let counts = layout.counts.map(|c| c as usize);
    if counts[3] != counts[4] {
        return Err(Error::params(format!(
            "{}: {} B points in G1 and {} in G2: damaged parameters; fetch them again",
            srs.path.display(),
            counts[3],
            counts[4]
        )));
    }
    Ok((layout, counts))
}

impl CuzkGpuProver {
    /// What GPU `g` holds of `srs`'s parameters (this version of them), if anything.
    pub(super) fn held(&self, g: usize, srs: &Srs) -> Option<Result<Arc<Loaded>>> {
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
            // Room is made on the GPU asked only: the others keep proving what they hold.
            let plan = if i == g {
                self.plan_making_room(i, srs)
            } else {
                self.plan(i, srs)
            };
            match plan {
                Ok(p) if p.streamed => to_stream.push((i, p)),
                Ok(p) => resident.push((i, p)),
                Err(e) => held.push((i, failed(srs, e))),
            }
        }
        // Resident: the file read piece by piece into each GPU's copy (the host holds a piece
        // at a time). Streamed: read whole into the pinned copy the GPUs read from (a second
        // read of the file where some GPUs take it resident and others streamed).
        if !resident.is_empty() {
            held.extend(self.place_resident(&resident, srs));
        }
        if !to_stream.is_empty() {
            match read_bases(srs) {
                Err(e) => held.extend(to_stream.iter().map(|&(i, _)| (i, failed(srs, e.clone())))),
                Ok((b, reservation)) => {
                    held.extend(self.place_streamed(&to_stream, b, reservation, srs))
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

    /// Reads `srs`'s bases piece by piece into the memory of each of the GPUs `gpus`: the
    /// host holds one piece at a time ([`PIECE_HOST_BYTES`], reserved in the budget), never
    /// the parameters whole. A GPU that cannot take them fails alone; a bad file fails all.
    fn place_resident(&self, gpus: &[(usize, Plan)], srs: &Srs) -> Vec<(usize, Held)> {
        let all_fail = |e: Error| {
            gpus.iter()
                .map(|&(i, _)| (i, failed(srs, e.clone())))
                .collect()
        };
        let (layout, counts) = match checked_layout(srs) {
            Ok(l) => l,
            Err(e) => return all_fail(e),
        };
        let _pieces = match host_room(srs, PIECE_HOST_BYTES) {
            Ok(r) => r,
            Err(e) => return all_fail(e),
        };
        let t = Instant::now();
        // Each GPU's device copy, made empty, then filled piece by piece; a GPU whose copy
        // fails leaves the others going.
        let mut out: Vec<(usize, Held)> = Vec::new();
        let mut filling: Vec<(usize, Plan, DeviceSrs)> = Vec::new();
        for &(i, plan) in gpus {
            let gpu = &self.gpus[i];
            let _busy = gpu.busy.lock();
            match DeviceSrs::resident_unfilled(
                gpu.ordinal,
                [counts[0], counts[1], counts[2], counts[3]],
                plan.lean,
            ) {
                Ok(dev) => filling.push((i, plan, dev)),
                Err(e) => out.push((i, no_room(gpu, srs, e))),
            }
        }
        let mut copy_ms = 0.0;
        let read = srs.read_bases_in(&layout, 0, |piece| {
            let c = Instant::now();
            let mut k = 0;
            while k < filling.len() {
                let (i, _, dev) = &mut filling[k];
                let gpu = &self.gpus[*i];
                let _busy = gpu.busy.lock();
                let r = match piece {
                    BasesPiece::G1 {
                        kind,
                        first,
                        points,
                    } => dev.fill_g1(kind, first, points),
                    BasesPiece::BG2 { first, points } => dev.fill_b_g2(first, points),
                };
                match r {
                    Ok(()) => k += 1,
                    Err(e) => {
                        let (i, _, _) = filling.swap_remove(k);
                        let what = format!("copying the parameters {}", srs.path.display());
                        out.push((i, failed(srs, kernel_error(&self.gpus[i].name, &what, e))));
                    }
                }
            }
            copy_ms += c.elapsed().as_secs_f64() * 1e3;
            Ok(())
        });
        if let Err(e) = read {
            out.extend(
                filling
                    .into_iter()
                    .map(|(i, _, _)| (i, failed(srs, e.clone()))),
            );
            return out;
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        out.extend(
            filling
                .into_iter()
                .map(|(i, plan, dev)| (i, self.filled(i, plan, dev, srs, (ms, copy_ms)))),
        );
        out
    }

    /// What a GPU holds once every piece was read: its filled copy, or a failure where points
    /// are missing (a copy with points missing never proves). `took` is the read's time and
    /// the part of it spent copying, in ms.
    fn filled(&self, i: usize, plan: Plan, dev: DeviceSrs, srs: &Srs, took: (f64, f64)) -> Held {
        let gpu = &self.gpus[i];
        if dev.unfilled() != 0 {
            let e = Error::internal(format!(
                "{}: the parameters {} were read with {} of their points not copied",
                gpu.name,
                srs.path.display(),
                dev.unfilled()
            ));
            return failed(srs, e);
        }
        log::info!(
            "{}: parameters {} resident on the GPU ({} MiB; read and copied piece by piece \
             in {:.0} ms, {:.0} ms of it copying); {plan}",
            gpu.name,
            srs.path.display(),
            dev.bytes() >> 20,
            took.0,
            took.1
        );
        Held::Loaded(Arc::new(Loaded {
            dev,
            generation: srs.generation,
            plan,
            at: Instant::now(),
            _host_copy: None,
        }))
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
                            at: Instant::now(),
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
                let least = self.least_bytes(srs);
                // Never (the card, or its limit, is too small: passed over, the partitions go
                // elsewhere) or not now (another process holds the memory: waited for).
                let never = self.never_holds(i, srs);
                let e = Error::new(
                    if never {
                        Status::Unsupported
                    } else {
                        Status::ResourceExhausted
                    },
                    format!(
                        "{}: cannot hold a partition of {}{}: {} MiB of device memory{}, {} MiB \
                         needed at the least (parameters {:?})",
                        gpu.name,
                        srs.path.display(),
                        if never { " on this card" } else { " now" },
                        avail >> 20,
                        match self.mem_limit {
                            Some(l) => format!(" (CUZK_GPU_MEM_LIMIT {} MiB)", l >> 20),
                            None => String::new(),
                        },
                        least >> 20,
                        self.params
                    ),
                );
                if !never {
                    log::debug!("{}", e.message);
                } else if gpu.said_no_room.lock().insert(srs.path.clone()) {
                    log::error!("{}", e.message);
                }
                Err(e)
            }
        }
    }

    /// GPU `i`'s plan for `srs`'s circuit, letting go of this prover's other circuits there
    /// where they hold the room it needs ([`Self::make_room`]); planned again at once, for the
    /// memory of those no call holds comes back at once. Still no room: RESOURCE_EXHAUSTED
    /// saying what went (the partition waits for the rest).
    fn plan_making_room(&self, i: usize, srs: &Srs) -> Result<Plan> {
        match self.plan(i, srs) {
            Err(e) if e.status == Status::ResourceExhausted => match self.make_room(i, srs) {
                Some(went) => self.plan(i, srs).map_err(|mut e| {
                    e.message = format!("{}; making room: {went}", e.message);
                    e
                }),
                None => Err(e),
            },
            r => r,
        }
    }

    /// Where GPU `i` has no room now for the least plan of `srs`'s circuit, but this prover's
    /// own copies there of other circuits' parameters (loaded [`super::MIN_HOLD`] ago or more)
    /// and recordings would give it: lets them go, with the GPU's idle partition buffers, and
    /// says what went. Their device memory comes back as the calls holding them end, so the
    /// partition waiting for room gets it (a PoSt set placed beside a PoRep set that fills the
    /// card). None where letting them go would not make the room (another process holds it) or
    /// there is nothing to let go.
    fn make_room(&self, i: usize, srs: &Srs) -> Option<String> {
        let gpu = &self.gpus[i];
        let avail = self.avail(i)?;
        let mut sets = gpu.srs.lock();
        let others: Vec<(PathBuf, u64)> = sets
            .iter()
            .filter(|(path, _)| **path != srs.path)
            .filter_map(|(path, h)| match h {
                Held::Loaded(l) if l.at.elapsed() >= self.min_hold => {
                    Some((path.clone(), l.dev.bytes()))
                }
                _ => None,
            })
            .collect();
        let mut recordings = gpu.recordings.lock();
        let recorded: u64 = recordings.values().map(|r| r.bytes()).sum();
        let held: u64 = others.iter().map(|(_, b)| b).sum::<u64>() + recorded;
        if others.is_empty() || !lets_go(avail, held, self.least_bytes(srs)) {
            return None;
        }
        for (path, _) in &others {
            sets.remove(path);
        }
        recordings.clear();
        gpu.stages.lock().clear();
        let went = others
            .iter()
            .map(|(path, b)| format!("{} ({} MiB)", path.display(), b >> 20))
            .collect::<Vec<_>>()
            .join(", ");
        log::info!(
            "{}: no room for {}: letting go of the parameters of {went} and {} MiB of \
             recordings; they come back when next used",
            gpu.name,
            srs.path.display(),
            recorded >> 20
        );
        Some(format!("let go of {went}"))
    }

    /// Device memory the least plan allowed needs for `srs`'s circuit.
    fn least_bytes(&self, srs: &Srs) -> u64 {
        super::plan::PLANS
            .iter()
            .filter(|p| p.allowed(self.params))
            .map(|&p| plan_bytes(srs, p))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Whether GPU `i` can never hold a partition of `srs`: its domain is beyond the prover's,
    /// or the card (or `CUZK_GPU_MEM_LIMIT`) is smaller than the least plan needs.
    pub(super) fn never_holds(&self, i: usize, srs: &Srs) -> bool {
        srs.size.domain().trailing_zeros() > gpu_prover::MAX_LG_DOMAIN
            || (self.forced.is_none()
                && self.capacity(i).is_some_and(|c| self.least_bytes(srs) > c))
    }

    /// The GPUs in service a batch of `srs`'s partitions is split over
    /// (`pipeline::takers`): a card that can never hold it is passed over where another can.
    pub(super) fn takers(&self, srs: &Srs) -> Vec<usize> {
        super::pipeline::takers(self.usable(), |g| self.never_holds(g, srs))
    }

    /// The device memory GPU `i` could give a circuit with nothing else on it: the card's less
    /// the CUDA context, or `CUZK_GPU_MEM_LIMIT` where lower. None without a device.
    pub(super) fn capacity(&self, i: usize) -> Option<u64> {
        let total = cuda::device(self.gpus[i].ordinal).ok()?.total_mem;
        Some(capacity_of(total, self.mem_limit))
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
/// kernels/cuzk/buffers.cuh), with the recording and a margin, for the witnesses its jobs'
/// kind expects ([`Srs::witness_shape`]).
pub fn plan_bytes(srs: &Srs, p: Plan) -> u64 {
    let shape = srs.witness_shape();
    let work = gpu_prover::working_bytes(
        srs.size.domain().trailing_zeros(),
        srs.size.inputs,
        srs.size.aux,
        p.stages,
        p.flags(),
        shape.others_per_1024,
        shape.recording_bytes_per_row,
    );
    work.saturating_add(if p.streamed { 0 } else { srs.file_len })
}

/// What a card of `total` bytes can give a circuit with nothing else on it, under `limit`: as
/// [`CuzkGpuProver::avail`] counts an empty card (its free memory, the context taken; the
/// limit, whose context the plans' spare covers), so a circuit whose least plan fits the limit
/// is never refused as one the card can never hold.
fn capacity_of(total: u64, limit: Option<u64>) -> u64 {
    let card = total.saturating_sub(super::CONTEXT_BYTES);
    limit.map_or(card, |l| l.min(card))
}

/// Whether letting go of `held` bytes of this prover's device memory, with `avail` free now,
/// gives the `least` a circuit needs.
fn lets_go(avail: u64, held: u64, least: u64) -> bool {
    held > 0 && avail < least && avail.saturating_add(held) >= least
}

/// Reads `srs`'s bases into host memory, first reserving the file's size in the memory budget.
fn read_bases(srs: &Srs) -> Result<(Bases, Reservation)> {
    let reservation = host_room(srs, srs.file_len)?;
    srs.read_bases().map(|b| (b, reservation))
}

/// `bytes` of the memory budget for reading `srs`'s bases, or RESOURCE_EXHAUSTED (passing: not
/// remembered) where the budget has not that much free now.
fn host_room(srs: &Srs, bytes: u64) -> Result<Reservation> {
    srs.budget().try_acquire(bytes).ok_or_else(|| {
        Error::new(
            Status::ResourceExhausted,
            format!(
                "reading {} for the GPU needs {} MiB of host memory, more than the memory \
                 budget has free",
                srs.path.display(),
                bytes >> 20
            ),
        )
    })
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

#[cfg(test)]
mod tests {
    use super::{capacity_of, lets_go};

    /// Under a device memory limit a card can give a circuit the limit (the plans' spare
    /// covers the context), as the plan counts an empty card: a circuit whose least plan fits
    /// the limit is not refused as never fitting. The hazard: the context counted twice made
    /// a 629 MiB limit a 117 MiB card, and a circuit of 597 MiB UNSUPPORTED.
    #[test]
    fn a_limit_is_what_an_empty_card_gives() {
        let (mib, gib) = (1u64 << 20, 1u64 << 30);
        assert_eq!(capacity_of(80 * gib, Some(629 * mib)), 629 * mib);
        assert_eq!(capacity_of(80 * gib, None), 80 * gib - 512 * mib);
        assert_eq!(capacity_of(80 * gib, Some(100 * gib)), 80 * gib - 512 * mib);
        assert_eq!(capacity_of(100 * mib, Some(u64::MAX)), 0);
    }

    /// This prover's other circuits are let go only where that gives the room: not where the
    /// GPU has room already, not where another process holds what is missing, not for nothing.
    #[test]
    fn other_circuits_are_let_go_only_where_that_makes_the_room() {
        let gib = 1u64 << 30;
        assert!(lets_go(14 * gib, 64 * gib, 77 * gib));
        assert!(lets_go(0, 77 * gib, 77 * gib));
        assert!(!lets_go(14 * gib, 60 * gib, 77 * gib));
        assert!(!lets_go(78 * gib, 64 * gib, 77 * gib));
        assert!(!lets_go(14 * gib, 0, 14 * gib + 1));
        assert!(!lets_go(u64::MAX, u64::MAX, u64::MAX));
    }
}
