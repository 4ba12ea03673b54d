//! Device self-test: proves a small synthetic circuit on every prover backend the engine would
//! use (and on the CPU), verifies each proof, and reports the times. `cuzk selftest` runs it;
//! operators use it to check a host's GPUs before putting it into service.

use std::{path::Path, time::Instant};

use bellperson::{
    groth16::{self, verify_proof, Proof},
    Circuit, ConstraintSystem, SynthesisError,
};
use blstrs::{Bls12, Scalar as Fr};
use ff::{Field, PrimeField};
use rand::SeedableRng;

use cuzk::{
    budget::Budget,
    engine,
    error::{Error, Result},
    params::SrsCache,
    prover::{cpu::CpuProver, ProvingAssignment, StageTimes},
};

/// `rounds` steps, each a squaring `y = x·x` and a bit `b` with `b·(1−b) = 0` taken from the
/// low bit of `y` (so the witness has the 0/1 values real circuits are full of), and one public
/// input: the last `y`.
#[derive(Clone)]
pub struct Synthetic {
    pub seed: Option<Fr>,
    pub rounds: usize,
}

impl Circuit<Fr> for Synthetic {
    fn synthesize<CS: ConstraintSystem<Fr>>(
        self,
        cs: &mut CS,
    ) -> std::result::Result<(), SynthesisError> {
        let missing = || SynthesisError::AssignmentMissing;
        let mut v = self.seed;
        let mut x = cs.alloc(|| "x0", || v.ok_or_else(missing))?;
        for i in 0..self.rounds {
            let yv = v.map(|a| a.square());
            let y = cs.alloc(|| format!("y{i}"), || yv.ok_or_else(missing))?;
            cs.enforce(|| format!("sq{i}"), |lc| lc + x, |lc| lc + x, |lc| lc + y);
            let bv = yv.map(|a| {
                if a.to_repr().as_ref()[0] & 1 == 1 {
                    Fr::ONE
                } else {
                    Fr::ZERO
                }
            });
            let b = cs.alloc(|| format!("b{i}"), || bv.ok_or_else(missing))?;
            cs.enforce(
                || format!("bit{i}"),
                |lc| lc + b,
                |lc| lc + CS::one() - b,
                |lc| lc,
            );
            x = y;
            v = yv;
        }
        let out = cs.alloc_input(|| "out", || v.ok_or_else(missing))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

/// One backend's result.
#[derive(Clone, Debug)]
pub struct BackendResult {
    pub backend: String,
    pub prove_ms: f64,
    pub stages: StageTimes,
    pub verified: bool,
    /// Byte-identical to the CPU backend's proof for the same r and s.
    pub identical: bool,
}

/// What `run` found.
#[derive(Clone, Debug)]
pub struct Report {
    pub constraints: usize,
    pub params_ms: f64,
    pub results: Vec<BackendResult>,
}

type Backends = Vec<(String, Box<dyn cuzk::prover::ProverBackend>)>;

/// Proves the synthetic circuit with about `constraints` constraints on the backends that
/// `devices` selects and on the CPU; parameters are generated into `dir`. Fails if any proof
/// does not verify.
pub fn run(constraints: usize, devices: &str, dir: &Path) -> Result<Report> {
    let rounds = (constraints / 2).max(1);
    let id = format!("cuzk-selftest-{rounds}");
    let path = cuzk::params::params_path(dir, &id);
    let t = Instant::now();
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(rounds as u64);
    let params = groth16::generate_random_parameters::<Bls12, _, _>(
        Synthetic { seed: None, rounds },
        &mut rng,
    )
    .map_err(|e| Error::internal(format!("generating self-test parameters: {e}")))?;
    let vk = write_params(&params, &path, dir, &id)?;
    let params_ms = t.elapsed().as_secs_f64() * 1e3;

    let srs = SrsCache::new(dir.to_path_buf()).get(&id, &Budget::new(u64::MAX / 2))?;
    // The CPU first: every other backend's proof must be byte-identical to its proof for the
    // same r and s. A cuda build tests cuzk's GPU prover with the parameters resident on the
    // GPU and streamed from host memory.
    let mut backends: Backends = vec![("cpu".into(), Box::new(CpuProver))];
    gpu_backends(devices, dir, &mut backends)?;
    let seed = Fr::from(7u64);
    let mut out = Fr::from(7u64);
    for _ in 0..rounds {
        out = out.square();
    }
    let r = Fr::random(&mut rng);
    let s = Fr::random(&mut rng);
    let compact = if backends.iter().any(|(_, b)| b.is_gpu()) {
        Some(compact_witness(&id, rounds, seed)?)
    } else {
        None
    };
    // And each lean plan, forced: each must allocate within its limit and prove the CPU's bytes.
    #[cfg(feature = "cuda")]
    let expect_plan = match (backends.len() > 1, &compact) {
        (true, Some((_, w))) => lean_plans(&srs, w, &mut backends)?,
        _ => Default::default(),
    };
    // Every proof must verify (and not for another output), and have the bytes of the first
    // one, the CPU's.
    let mut reference: Option<Vec<u8>> = None;
    let mut check = |backend: String, prove_ms: f64, stages: StageTimes, proof: Proof<Bls12>| {
        let verified = verify_proof(&srs.pvk, &proof, &[out]).unwrap_or(false)
            && !verify_proof(&srs.pvk, &proof, &[out + Fr::ONE]).unwrap_or(true);
        let bytes = super::proof_bytes(&proof)?;
        let identical = *reference.get_or_insert_with(|| bytes.clone()) == bytes;
        Ok::<_, Error>(BackendResult {
            backend,
            prove_ms,
            stages,
            verified,
            identical,
        })
    };
    let mut results = Vec::new();
    for (label, b) in &backends {
        b.prepare(&srs)?;
        #[cfg(feature = "cuda")]
        if let Some(want) = expect_plan.get(label) {
            for (dev, plan) in b.plans(&srs) {
                let plan = plan?;
                if !plan.starts_with(want.as_str()) {
                    return Err(Error::internal(format!(
                        "{dev} planned {plan} where {want} was meant"
                    )));
                }
            }
        }
        // A lean plan proves compact witnesses only (below).
        #[cfg(feature = "cuda")]
        let lean = expect_plan.contains_key(label);
        #[cfg(not(feature = "cuda"))]
        let lean = false;
        if !lean {
            let mut asg = Some(
                ProvingAssignment::synthesize(
                    Synthetic {
                        seed: Some(seed),
                        rounds,
                    },
                    Some(srs.size),
                )
                .map_err(|e| Error::internal(format!("synthesizing the self-test circuit: {e}")))?,
            );
            let mut stages = StageTimes::default();
            let t = Instant::now();
            let proof = cuzk::error::catch("self-test", cuzk::Status::Proving, || {
                b.prove(&mut asg, &srs, r, s, &mut stages)
            })?;
            results.push(check(
                label.clone(),
                t.elapsed().as_secs_f64() * 1e3,
                stages,
                proof,
            )?);
        }
        if let Some((rec, w)) = &compact {
            let mut stages = StageTimes::default();
            let t = Instant::now();
            if let Some(proof) =
                b.prove_witness(&rec.shared_r1cs(), &w.classed(), &srs, r, s, &mut stages)
            {
                let ms = t.elapsed().as_secs_f64() * 1e3;
                results.push(check(
                    format!("{label} (product on the GPU)"),
                    ms,
                    stages,
                    proof?,
                )?);
            }
        }
        // Its device memory goes back before the next backend plans its own.
        b.release();
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&vk);
    let report = Report {
        constraints: 2 * rounds + 1,
        params_ms,
        results,
    };
    check_report(&report)?;
    Ok(report)
}

/// Writes `params` to `path` and their verifying key beside it (in `dir`, by `id`); returns
/// the key's path.
fn write_params(
    params: &groth16::Parameters<Bls12>,
    path: &Path,
    dir: &Path,
    id: &str,
) -> Result<std::path::PathBuf> {
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(&path)
            .map_err(|e| Error::params(format!("creating {}: {e}", path.display())))?,
    );
    params
        .write(&mut file)
        .and_then(|_| std::io::Write::flush(&mut file))
        .map_err(|e| Error::params(format!("writing {}: {e}", path.display())))?;
    drop(file);
    let vk = cuzk::params::vk_path(dir, id);
    let mut bytes = Vec::new();
    params
        .vk
        .write(&mut bytes)
        .and_then(|_| std::fs::write(&vk, bytes))
        .map_err(|e| Error::params(format!("writing {}: {e}", vk.display())))?;
    Ok(vk)
}

/// Adds cuzk's GPU prover on each GPU `devices` selects, with the parameters resident on the
/// GPU, then streamed from host memory.
fn gpu_backends(devices: &str, dir: &Path, backends: &mut Backends) -> Result<()> {
    for mode in [engine::GpuParams::Resident, engine::GpuParams::Streamed] {
        if mode == engine::GpuParams::Streamed && backends.len() == 1 {
            break; // no GPU (said once, by the first look)
        }
        for b in engine::select_backends(&engine::Config {
            devices: devices.to_string(),
            gpu_batch: 1,
            params_dir: dir.to_path_buf(),
            gpu_params: Some(mode),
            ..engine::Config::default()
        })? {
            if b.is_gpu() {
                let label = match mode {
                    engine::GpuParams::Streamed => format!("{} cuzk streamed", b.name()),
                    _ => format!("{} cuzk", b.name()),
                };
                backends.push((label, b));
            }
        }
    }
    Ok(())
}

/// The recorded circuit and its compact witness for `seed`, for backends that compute a, b and
/// c themselves (cuzk's GPU prover, by the sparse product on the GPU).
fn compact_witness(
    id: &str,
    rounds: usize,
    seed: Fr,
) -> Result<(std::sync::Arc<cuzk::pce::Recording>, cuzk::pce::Witness)> {
    let rec = cuzk::pce::RecordingCS::record(Synthetic { seed: None, rounds }, id, None)
        .map_err(|e| Error::internal(format!("recording the self-test circuit: {e}")))?;
    let w = cuzk::pce::WitnessTarget::synthesize(
        Synthetic {
            seed: Some(seed),
            rounds,
        },
        Some(rec.aux),
        None,
    )
    .map_err(|e| Error::internal(format!("the self-test witness: {e}")))?;
    // Shared: a GPU short of memory reads its tables in place (pinned).
    Ok((std::sync::Arc::new(rec), w))
}

/// Each lean plan (the plans of cards too small for the full one), forced on GPU 0 under a
/// device memory limit of what the plan needs with room for `w`'s others (~1 KiB each: the
/// plan guesses 1 in 32 values; every value of this circuit is one), added to `backends`;
/// returns the plan each must make, by label. And a limit below every plan must be refused.
#[cfg(feature = "cuda")]
fn lean_plans(
    srs: &cuzk::params::Srs,
    w: &cuzk::pce::Witness,
    backends: &mut Backends,
) -> Result<std::collections::HashMap<String, String>> {
    let mut expect_plan = std::collections::HashMap::new();
    use cuzk::prover::{
        cuzk_gpu::{plan::PLANS, plan_bytes, CuzkGpuProver},
        ProverBackend,
    };
    let dev = cuzk::sys::cuda::device(0)
        .map_err(|e| Error::internal(format!("the GPU for the lean plans: {e}")))?;
    let others = w.classed().other_index.len() as u64;
    for plan in [PLANS[2], PLANS[4], PLANS[6]] {
        let mode = if plan.streamed {
            engine::GpuParams::Streamed
        } else {
            engine::GpuParams::Resident
        };
        let limit = plan_bytes(srs, plan) + others * 1024;
        let b = CuzkGpuProver::new(vec![dev.clone()], 1, mode, Some(limit)).with_plan(plan);
        let label = format!("{} cuzk ({plan})", b.name());
        expect_plan.insert(label.clone(), plan.to_string());
        backends.push((label, Box::new(b)));
    }
    // A limit below every plan: the GPU says, before any job, that it can never hold a
    // partition of the circuit (UNSUPPORTED, so the engine passes it over; a GPU short of
    // room only for now says RESOURCE_EXHAUSTED and is waited for).
    let b = CuzkGpuProver::new(vec![dev], 1, engine::GpuParams::Auto, Some(1 << 20));
    match b.prepare(srs) {
        Err(e)
            if e.status == cuzk::Status::Unsupported
                && e.message.contains("cannot hold a partition")
                && e.message.contains("on this card") => {}
        other => {
            return Err(Error::internal(format!(
                "a GPU limited to 1 MiB did not refuse the circuit: {other:?}"
            )))
        }
    }
    Ok(expect_plan)
}

/// Every proof must verify, and have the CPU's bytes.
fn check_report(report: &Report) -> Result<()> {
    if let Some(bad) = report.results.iter().find(|r| !r.verified) {
        return Err(Error::new(
            cuzk::Status::VerifyFailed,
            format!("self-test proof from {} does not verify", bad.backend),
        ));
    }
    if let Some(bad) = report.results.iter().find(|r| !r.identical) {
        return Err(Error::new(
            cuzk::Status::VerifyFailed,
            format!(
                "self-test proof from {} differs from the CPU's for the same r and s",
                bad.backend
            ),
        ));
    }
    Ok(())
}
