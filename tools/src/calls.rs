//! Prover call benchmark: the cost of one prover call with nothing else running. A few
//! partitions of a real C1 output are synthesized once; then the chosen backend proves them in
//! calls of each requested width, several times, and every proof is verified. For each width it
//! reports the call's wall time, the time per partition, and the host CPU time the call used
//! (all threads of the process), which for a GPU backend is the part of the proof left on the
//! CPU. `cuzk bench calls` prints it.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use bellperson::groth16::verify_proof;
use blstrs::Scalar as Fr;
use ff::Field;
use rand::SeedableRng;
use rayon::prelude::*;

use cuzk::{
    budget::Budget,
    engine,
    error::{Error, Result, Status},
    params::SrsCache,
    porep::{self, FixtureShape},
    prover::{ProvingAssignment, StageTimes},
    sys::os::process_cpu_time,
};

/// What to measure.
pub struct CallsSpec {
    /// C1 output bytes (raw JSON or Commit2In envelope).
    pub c1: Vec<u8>,
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    pub shape: FixtureShape,
    /// As in `CUZK_DEVICES`: auto, cpu, or a number of GPUs.
    pub devices: String,
    /// Partitions per call, one row each.
    pub widths: Vec<usize>,
    /// Calls per width.
    pub reps: usize,
    pub params_dir: PathBuf,
    /// Also prove the first partition on the CPU with the r and s of its first GPU proof and
    /// require the same bytes.
    pub compare_cpu: bool,
    /// Also prove the first partition from its compact witness, a, b and c computed by the
    /// backend from the circuit's recording (cuzk's GPU prover: on the GPU), `reps` times.
    pub compact: bool,
}

/// One width's measurements.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CallRow {
    /// Partitions per call.
    pub width: usize,
    /// Devices the backend spread the call over.
    pub devices_used: usize,
    pub calls: usize,
    pub call_ms_min: f64,
    pub call_ms_mean: f64,
    /// Mean call time divided by the width.
    pub ms_per_partition: f64,
    /// Process CPU time (user + system, all threads) per partition during the calls.
    pub cpu_ms_per_partition: f64,
    /// Mean per-partition stage times the backend reported (cuzk's GPU prover: upload, NTTs,
    /// H, split, L, A, B(G1), B(G2)), in ms.
    pub stages_ms: [f64; 8],
    /// Proved from the compact witness (the product on the device).
    pub compact: bool,
}

impl CallRow {
    /// The row of `walls.len()` calls of `width` partitions on `devices_used` devices that used
    /// `cpu` of process time in all; `stages` are already per-partition means.
    fn new(
        width: usize,
        devices_used: usize,
        walls: &[f64],
        cpu: Duration,
        stages: [f64; 8],
        compact: bool,
    ) -> CallRow {
        let mean = walls.iter().sum::<f64>() / walls.len() as f64;
        CallRow {
            width,
            devices_used,
            calls: walls.len(),
            call_ms_min: walls.iter().cloned().fold(f64::INFINITY, f64::min),
            call_ms_mean: mean,
            ms_per_partition: mean / width as f64,
            cpu_ms_per_partition: cpu.as_secs_f64() * 1e3 / (width * walls.len()) as f64,
            stages_ms: stages,
            compact,
        }
    }
}

/// What `run` measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CallsReport {
    pub backend: String,
    pub devices: Vec<String>,
    pub constraints: usize,
    pub synthesized: usize,
    pub synth_ms: f64,
    pub rows: Vec<CallRow>,
    /// Whether the first partition's proof had the same bytes on the CPU (when asked).
    pub identical_to_cpu: Option<bool>,
}

/// Synthesizes the largest width's partitions once (in parallel), then times `reps` calls of
/// each width on the first backend `devices` selects. Fails if any proof does not verify.
pub fn run(spec: &CallsSpec) -> Result<CallsReport> {
    if spec.widths.is_empty() || spec.widths.contains(&0) {
        return Err(Error::invalid_argument(
            "widths must be one or more numbers above 0",
        ));
    }
    if spec.reps == 0 {
        return Err(Error::invalid_argument("reps must be above 0"));
    }
    let parsed = porep::parse_c1(&spec.c1)?;
    let prepared = porep::prepare(parsed.c1, spec.prover_id, spec.sector_id, spec.shape)?;
    let circuits = prepared.circuits;
    let budget = Budget::new(cuzk::budget::default_budget());
    let srs = SrsCache::new(spec.params_dir.clone()).get(circuits.params_id(), &budget)?;
    let widest = *spec.widths.iter().max().expect("not empty");
    let backend = engine::select_backends(&engine::Config {
        devices: spec.devices.clone(),
        gpu_batch: widest,
        params_dir: spec.params_dir.clone(),
        ..engine::Config::default()
    })?
    .into_iter()
    .next()
    .ok_or_else(|| Error::internal("no prover backend"))?;
    backend.prepare(&srs)?;
    let partitions = circuits.shape().partitions;

    let t = Instant::now();
    let synthesized: Vec<(usize, ProvingAssignment)> = (0..widest)
        .into_par_iter()
        .map(|i| {
            let k = i % partitions;
            circuits.synthesize(k, Some(srs.size), None).map(|a| (k, a))
        })
        .collect::<Result<_>>()?;
    let synth_ms = t.elapsed().as_secs_f64() * 1e3;
    let inputs: Vec<Vec<Fr>> = (0..partitions)
        .map(|k| circuits.public_inputs(k))
        .collect::<Result<_>>()?;
    let constraints = synthesized[0].1.a.len();
    let (ks, asgs): (Vec<usize>, Vec<ProvingAssignment>) = synthesized.into_iter().unzip();
    let mut asgs: Vec<Option<ProvingAssignment>> = asgs.into_iter().map(Some).collect();

    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(0xca11);
    let mut rows = Vec::new();
    let mut first: Option<FirstProof> = None;
    let progress = super::progress::Progress::bar(
        "prover calls",
        ((spec.widths.len() + spec.compact as usize) * spec.reps) as u64,
        "calls",
    );
    for &width in &spec.widths {
        let mut walls = Vec::with_capacity(spec.reps);
        let mut cpu = Duration::ZERO;
        let mut used = std::collections::BTreeSet::new();
        let mut stages = [0f64; 8];
        for _ in 0..spec.reps {
            let rs: Vec<Fr> = (0..width).map(|_| Fr::random(&mut rng)).collect();
            let ss: Vec<Fr> = (0..width).map(|_| Fr::random(&mut rng)).collect();
            let mut times = vec![StageTimes::default(); width];
            // A backend that consumes assignments (the CPU prover) gets them synthesized again,
            // outside the timed part; the GPU backend only reads them.
            for (slot, &k) in asgs.iter_mut().zip(&ks).take(width) {
                if slot.is_none() {
                    *slot = Some(circuits.synthesize(k, Some(srs.size), None)?);
                }
            }
            let cpu0 = process_cpu_time();
            let t = Instant::now();
            let results = cuzk::error::catch("prover call", Status::Proving, || {
                Ok(backend.prove_batch(&mut asgs[..width], &srs, &rs, &ss, &mut times))
            })?;
            walls.push(t.elapsed().as_secs_f64() * 1e3);
            cpu += process_cpu_time().saturating_sub(cpu0);
            progress.inc(1);
            for t in &times {
                for (sum, x) in stages.iter_mut().zip(t.gpu_stages_ms) {
                    *sum += x / (width * spec.reps) as f64;
                }
            }
            if results.len() != width {
                return Err(Error::internal(format!(
                    "{} results for a call of {width}",
                    results.len()
                )));
            }
            for (i, (dev, proof)) in results.into_iter().enumerate() {
                let proof = proof?;
                used.insert(dev);
                if i == 0 && first.is_none() {
                    first = Some((rs[0], ss[0], super::proof_bytes(&proof)?));
                }
                if !verify_proof(&srs.pvk, &proof, &inputs[ks[i]]).unwrap_or(false) {
                    return Err(Error::new(
                        Status::VerifyFailed,
                        format!("partition {} proved on device {dev} in a call of {width} does not verify", ks[i]),
                    ));
                }
            }
        }
        rows.push(CallRow::new(width, used.len(), &walls, cpu, stages, false));
    }
    let compact_first = if spec.compact {
        let (row, proof) = compact_calls(
            spec, &*circuits, &srs, &*backend, &inputs, ks[0], &mut rng, &progress,
        )?;
        rows.push(row);
        Some(proof)
    } else {
        None
    };
    // The CPU's proof with the r and s of the first GPU proof (and of the first proof from the
    // compact witness): the same bytes are required.
    let identical_to_cpu = if spec.compare_cpu {
        same_as_cpu(
            &*circuits,
            &srs,
            backend.name(),
            ks[0],
            [first, compact_first],
        )?
    } else {
        None
    };
    progress.finish("done");
    Ok(CallsReport {
        backend: backend.name().to_string(),
        devices: backend.devices(),
        constraints,
        synthesized: widest,
        synth_ms,
        rows,
        identical_to_cpu,
    })
}

/// The first proof of a call: its r, s and bytes.
type FirstProof = (Fr, Fr, Vec<u8>);

/// `spec.reps` calls proving partition `k` from its compact witness (the GPU computing a, b and
/// c from the circuit's recording): their row, and the first proof.
#[allow(clippy::too_many_arguments)]
fn compact_calls(
    spec: &CallsSpec,
    circuits: &dyn porep::SealCircuits,
    srs: &cuzk::params::Srs,
    backend: &dyn cuzk::prover::ProverBackend,
    inputs: &[Vec<Fr>],
    k: usize,
    rng: &mut rand_xorshift::XorShiftRng,
    progress: &super::progress::Progress,
) -> Result<(CallRow, FirstProof)> {
    let mut first = None;
    let rec = circuits.record(None)?;
    let w = circuits.synthesize_witness(k, Some(rec.aux), None)?;
    let (mut walls, mut cpu, mut stages) = (Vec::new(), Duration::ZERO, [0f64; 8]);
    for _ in 0..spec.reps {
        let (r, s) = (Fr::random(&mut *rng), Fr::random(&mut *rng));
        let mut times = StageTimes::default();
        let cpu0 = process_cpu_time();
        let t = Instant::now();
        let proof = backend
            .prove_witness(&rec.r1cs(), &w.classed(), srs, r, s, &mut times)
            .ok_or_else(|| {
                Error::unsupported(format!(
                    "{} does not prove from a compact witness",
                    backend.name()
                ))
            })??;
        walls.push(t.elapsed().as_secs_f64() * 1e3);
        cpu += process_cpu_time().saturating_sub(cpu0);
        progress.inc(1);
        for (sum, x) in stages.iter_mut().zip(times.gpu_stages_ms) {
            *sum += x / spec.reps as f64;
        }
        if !verify_proof(&srs.pvk, &proof, &inputs[k]).unwrap_or(false) {
            return Err(Error::new(
                Status::VerifyFailed,
                format!(
                    "partition {} proved from its compact witness does not verify",
                    k
                ),
            ));
        }
        if first.is_none() {
            first = Some((r, s, super::proof_bytes(&proof)?));
        }
    }
    let first = first.ok_or_else(|| Error::internal("no call made"))?;
    Ok((CallRow::new(1, 1, &walls, cpu, stages, true), first))
}

/// The CPU's proof of partition `k` with the r and s of each first proof given must have its
/// bytes: Some(true) where one was compared, None where none was given.
fn same_as_cpu(
    circuits: &dyn porep::SealCircuits,
    srs: &cuzk::params::Srs,
    backend: &str,
    k: usize,
    [first, compact_first]: [Option<FirstProof>; 2],
) -> Result<Option<bool>> {
    let mut identical_to_cpu = None;
    for (what, got) in [("", first), (" from its compact witness", compact_first)] {
        let Some((r, s, gpu)) = got else { continue };
        let asg = circuits.synthesize(k, Some(srs.size), None)?;
        let params = srs.params()?;
        let proof = cuzk::prover::cpu::CpuProver.prove_with_params(
            asg,
            &params,
            r,
            s,
            &mut StageTimes::default(),
        )?;
        if super::proof_bytes(&proof)? != gpu {
            return Err(Error::new(
                Status::VerifyFailed,
                format!(
                    "partition {}{what} on {}: the proof differs from the CPU's for the same r and s",
                    k,
                    backend
                ),
            ));
        }
        identical_to_cpu = Some(true);
    }
    Ok(identical_to_cpu)
}
