//! A batch of partitions split over the GPUs in service, each GPU proving its share in turn
//! (the next partition's upload overlapping the kernels of the one before), and one partition's
//! proof: the GPU's kernels, then the proof assembled on the host.

use std::{collections::HashMap, sync::Arc, time::Instant};

use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};

use super::{device::Loaded, CuzkGpuProver};
use crate::{
    error::{Error, Result, Status},
    params::Srs,
    prover::{groth16::assemble_proof, yielded, Between, StageTimes},
    sys::gpu_prover::{KernelError, MsmResults, Stage},
};

/// The GPUs a batch of `srs`'s partitions is split over: those in service (`usable`) that
/// could hold a partition (`never(g)` false: a card, or its limit, too small for the circuit
/// is passed over, its share going to the others); all of them where none could (their
/// answer, UNSUPPORTED, sends the partitions to the CPU).
pub(super) fn takers(usable: Vec<usize>, never: impl Fn(usize) -> bool) -> Vec<usize> {
    let able: Vec<usize> = usable.iter().copied().filter(|&g| !never(g)).collect();
    if able.is_empty() {
        usable
    } else {
        able
    }
}

impl CuzkGpuProver {
    /// Splits a batch of `n` partitions over `gpus` (see [`takers`]) and runs `on_gpu(g, items)`
    /// for each GPU on a thread of its own; result `i` is for item `i`.
    pub(super) fn split<F>(
        &self,
        gpus: &[usize],
        n: usize,
        times: &mut [StageTimes],
        on_gpu: F,
    ) -> Vec<(usize, Result<Proof<Bls12>>)>
    where
        F: Fn(usize, Vec<usize>) -> Vec<(usize, Result<Proof<Bls12>>, StageTimes)> + Sync,
    {
        let place: Vec<usize> = (0..n)
            .map(|i| {
                gpus.get(crate::prover::batch_device(i, n, gpus.len().max(1)))
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        let mut results: Vec<Option<(usize, Result<Proof<Bls12>>)>> =
            (0..n).map(|_| None).collect();
        if gpus.is_empty() {
            for (i, r) in results.iter_mut().enumerate() {
                *r = Some((
                    place[i],
                    // No device ran it: not a fault of any.
                    Err(Error::new(
                        Status::Unsupported,
                        format!("{}: every GPU is out of service", self.name),
                    )),
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

    /// Proves `items` on GPU `g` in turn, each partition's upload (`upload(i)`, on a thread of
    /// its own) overlapping the previous one's kernels, where the GPU's plan keeps two stages.
    /// A plan of one stage (the smallest cards) uploads after the previous partition's kernels:
    /// an overlapping upload would take a second stage the plan did not count.
    ///
    /// Before each partition after the first, `stop` is asked (before its upload, and again
    /// before its kernels): where it answers true, that partition and those after it come back
    /// [`yielded`] (an upload made is given back; the work stays with the caller).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pipeline<U>(
        &self,
        g: usize,
        items: Vec<usize>,
        upload: U,
        srs: &Srs,
        rs: &[Fr],
        ss: &[Fr],
        stop: Between<'_>,
    ) -> Vec<(usize, Result<Proof<Bls12>>, StageTimes)>
    where
        U: Fn(usize) -> Result<(Arc<Loaded>, Stage)> + Sync,
    {
        /// Marks the GPU as inside a call until dropped (also on a panic).
        struct InCall<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for InCall<'_> {
            fn drop(&mut self) {
                self.0.store(false, std::sync::atomic::Ordering::SeqCst);
            }
        }
        self.gpus[g]
            .in_call
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _in_call = InCall(&self.gpus[g].in_call);
        let prove = |i: usize, up: Result<(Arc<Loaded>, Stage)>| {
            let mut t = StageTimes::default();
            let r = up.and_then(|(loaded, mut stage)| {
                let r = self.compute(g, &loaded, &mut stage, srs, rs[i], ss[i], &mut t);
                self.put_back(g, &loaded, stage);
                r
            });
            (i, r, t)
        };
        let all = items.clone();
        let first = items.first().copied();
        let mut out: Vec<(usize, Result<Proof<Bls12>>, StageTimes)> = Vec::new();
        if self.loaded(g, srs).is_ok_and(|l| l.plan.stages < 2) {
            for i in items {
                if Some(i) != first && stop() {
                    break;
                }
                out.push(prove(i, upload(i)));
            }
        } else {
            let (tx, rx) =
                std::sync::mpsc::sync_channel::<(usize, Result<(Arc<Loaded>, Stage)>)>(0);
            let upload = &upload;
            std::thread::scope(|sc| {
                sc.spawn(move || {
                    for i in items {
                        if Some(i) != first && stop() {
                            break;
                        }
                        if tx.send((i, upload(i))).is_err() {
                            break;
                        }
                    }
                });
                for (i, up) in rx.iter() {
                    if Some(i) != first && stop() {
                        if let Ok((loaded, stage)) = up {
                            self.put_back(g, &loaded, stage);
                        }
                        break;
                    }
                    out.push(prove(i, up));
                }
                // Dropping the receiver ends the uploads (their next send fails).
                drop(rx);
            });
        }
        let done: Vec<usize> = out.iter().map(|(i, ..)| *i).collect();
        out.extend(
            all.into_iter()
                .filter(|i| !done.contains(i))
                .map(|i| (i, Err(yielded()), StageTimes::default())),
        );
        out
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
        let res: std::result::Result<MsmResults, KernelError> = {
            let _busy = gpu.busy.lock();
            crate::error::catch("cuzk GPU prover", Status::Proving, || {
                Ok(loaded.dev.prove(stage))
            })?
        };
        times.gpu_ms = t.elapsed().as_secs_f64() * 1e3;
        let m = res.map_err(|e| super::device::kernel_error(&gpu.name, "GPU prover failed", e))?;
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
}
