//! The file: the sections computed by a multiplier (the GPU's fixed-base kernel or the
//! CPU's comb) and written as bellperson writes a parameter set, the report, and the atomic
//! write into a parameter directory.

use std::{
    io::Write,
    path::{Path, PathBuf},
    sync::mpsc,
    time::Instant,
};

use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, G1Affine, G1Projective, G2Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Curve};
use rayon::prelude::*;

use crate::progress::Progress;
use cuzk::{
    error::{Error, Result},
    params::{params_path, vk_path},
    pce::Recording,
};

use super::*;

/// Sizes and timings of one generated set.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GenReport {
    pub constraints: usize,
    pub domain: usize,
    pub inputs: usize,
    pub aux: usize,
    /// Points of h, l, a, b_g1, b_g2.
    pub counts: [u64; 5],
    pub bytes: u64,
    pub eval_seconds: f64,
    pub points_seconds: f64,
    /// Where the points were computed ("GPU 0", "16 CPU threads").
    pub points_on: String,
}

/// Points per block handed to the writer.
const BLOCK: usize = 1 << 20;

/// A GPU's multiplication by one generator: scalars in, `.params` bytes out.
type GpuMul<'a> = Box<dyn FnMut(&[Fr], &mut [u8]) -> std::result::Result<(), String> + Send + 'a>;

/// How a section's points are computed: the comb on every core, or on a GPU from the same
/// table (the same bytes).
pub struct Mul<'a, G: Jacobian>
where
    G::AffineRepr: Copy + Send + Sync,
{
    comb: &'a Comb<G>,
    gpu: Option<GpuMul<'a>>,
}

impl<G: Jacobian> Mul<'_, G>
where
    G::AffineRepr: Copy + Send + Sync,
{
    fn run(&mut self, ks: &[Fr], out: &mut [u8]) -> Result<()> {
        match &mut self.gpu {
            Some(f) => f(ks, out)
                .map_err(|e| Error::internal(format!("GPU fixed-base multiplication: {e}"))),
            None => {
                self.comb.mul_into(ks, out);
                Ok(())
            }
        }
    }
}

/// The GPU a parameter generation computes its points on: `CUZK_PARAMGEN_GPU` is `off` (every
/// core instead) or an ordinal; unset, GPU 0 where a CUDA device answers.
#[cfg(feature = "cuda")]
fn paramgen_gpu() -> Option<usize> {
    let ordinal = match std::env::var("CUZK_PARAMGEN_GPU")
        .ok()
        .as_deref()
        .map(str::trim)
    {
        Some("off" | "cpu" | "none") => return None,
        Some(v) if !v.is_empty() => match v.parse() {
            Ok(o) => o,
            Err(_) => {
                log::warn!("CUZK_PARAMGEN_GPU={v} is neither `off` nor a GPU ordinal: using GPU 0");
                0
            }
        },
        _ => 0,
    };
    match cuzk::sys::cuda::probe() {
        Ok((_, n)) if ordinal < n => Some(ordinal),
        _ => None,
    }
}

/// The two multipliers of a set (G1, G2) and where they run.
fn multipliers<'a>(
    c1: &'a Comb<G1Projective>,
    c2: &'a Comb<G2Projective>,
) -> (Mul<'a, G1Projective>, Mul<'a, G2Projective>, String) {
    #[cfg(feature = "cuda")]
    if let Some(ord) = paramgen_gpu() {
        use cuzk::sys::fixed_base::FixedBase;
        let (w1, n1) = c1.shape();
        let (w2, n2) = c2.shape();
        match FixedBase::new(ord, w1, n1, c1.table())
            .and_then(|g1| FixedBase::new(ord, w2, n2, c2.table()).map(|g2| (g1, g2)))
        {
            Ok((mut g1, mut g2)) => {
                return (
                    Mul {
                        comb: c1,
                        gpu: Some(Box::new(move |ks, out| g1.mul(ks, out))),
                    },
                    Mul {
                        comb: c2,
                        gpu: Some(Box::new(move |ks, out| g2.mul(ks, out))),
                    },
                    format!("GPU {ord}"),
                )
            }
            Err(e) => log::warn!("parameter generation on GPU {ord} failed ({e}): on the CPU"),
        }
    }
    (
        Mul {
            comb: c1,
            gpu: None,
        },
        Mul {
            comb: c2,
            gpu: None,
        },
        format!("{} CPU threads", rayon::current_num_threads()),
    )
}

/// A `.params` file's sections, computed block by block on every core while another thread
/// writes the previous block.
struct Sections<'a, W: Write + Send> {
    out: &'a mut W,
    progress: Option<&'a Progress>,
    bytes: u64,
}

impl<W: Write + Send> Sections<'_, W> {
    fn write(&mut self, b: &[u8]) -> Result<()> {
        self.bytes += b.len() as u64;
        self.out
            .write_all(b)
            .map_err(|e| Error::params(format!("writing parameters: {e}")))
    }

    /// A section of `n` points `scalar(i) · G`: the u32 count, then the points.
    fn section<G: Jacobian>(
        &mut self,
        mul: &mut Mul<'_, G>,
        n: usize,
        fill: &(dyn Fn(usize, &mut [Fr]) + Sync),
        weight: u64,
    ) -> Result<()>
    where
        G::AffineRepr: Copy + Send + Sync,
    {
        let len = u32::try_from(n).map_err(|_| Error::internal("section too long"))?;
        self.write(&len.to_be_bytes())?;
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(1);
        let (back_tx, back_rx) = mpsc::channel::<Vec<u8>>();
        let progress = self.progress;
        let out = &mut *self.out;
        let written = std::thread::scope(|s| -> Result<u64> {
            let writer = s.spawn(move || -> std::io::Result<u64> {
                let mut total = 0u64;
                for b in rx {
                    out.write_all(&b)?;
                    total += b.len() as u64;
                    let _ = back_tx.send(b);
                }
                Ok(total)
            });
            let mut ks = vec![Fr::ZERO; BLOCK.min(n)];
            let mut start = 0;
            while start < n {
                let len = BLOCK.min(n - start);
                fill(start, &mut ks[..len]);
                let mut buf = back_rx.try_recv().unwrap_or_default();
                buf.resize(len * G::BYTES, 0);
                mul.run(&ks[..len], &mut buf)?;
                if tx.send(buf).is_err() {
                    break; // the writer failed: its error is reported below
                }
                if let Some(p) = progress {
                    p.inc(len as u64 * weight);
                }
                start += len;
            }
            drop(tx);
            writer
                .join()
                .map_err(|_| Error::internal("the parameter writer panicked"))?
                .map_err(|e| Error::params(format!("writing parameters: {e}")))
        })?;
        self.bytes += written;
        Ok(())
    }
}

/// Work units of a set for a progress bar (G1 points, a G2 point counting as two: measured
/// 8.2 and 13.4 us a point on one core).
pub fn work_units(counts: &[u64; 5], inputs: usize) -> u64 {
    counts[..4].iter().sum::<u64>() + 2 * counts[4] + inputs as u64
}

/// A section's scalars copied from `v`.
fn copy(v: &[Fr]) -> impl Fn(usize, &mut [Fr]) + Sync + '_ {
    move |start: usize, ks: &mut [Fr]| {
        let n = ks.len();
        ks.copy_from_slice(&v[start..start + n])
    }
}

/// Window size of the combs (measured: 16 is fastest for sets of millions of points).
const WBITS: u32 = 16;

/// Computes the parameter set of `rec` for `s` and writes it to `out` as bellperson's
/// `Parameters::write` does. Returns the verifying key and the report.
pub fn write_params<W: Write + Send>(
    rec: &Recording,
    s: &Secrets,
    out: &mut W,
    progress: Option<&Progress>,
) -> Result<(VerifyingKey<Bls12>, GenReport)> {
    let t = Instant::now();
    let (inputs, aux, rows) = (rec.inputs, rec.aux, rec.constraints());
    let m = rows.next_power_of_two();
    if m > 1 << Fr::S {
        return Err(Error::internal(
            "the circuit is larger than the field's largest domain",
        ));
    }
    let inv = |x: Fr, what: &str| {
        Option::<Fr>::from(x.invert()).ok_or_else(|| Error::internal(format!("{what} is zero")))
    };
    let gamma_inv = inv(s.gamma, "gamma")?;
    let delta_inv = inv(s.delta, "delta")?;

    let lag = lagrange(s.tau, m, rows)?;
    let (at_in, at_aux) = eval_columns(&rec.a, &rec.dict, &lag, inputs, aux);
    let (bt_in, bt_aux) = eval_columns(&rec.b, &rec.dict, &lag, inputs, aux);
    let (mut ic, mut l) = eval_columns(&rec.c, &rec.dict, &lag, inputs, aux);
    drop(lag);
    let ext = |ct: &mut [Fr], at: &[Fr], bt: &[Fr], inv: Fr| {
        ct.par_iter_mut()
            .zip(at.par_iter().zip(bt.par_iter()))
            .for_each(|(c, (a, b))| *c = (s.beta * a + s.alpha * b + *c) * inv);
    };
    ext(&mut ic, &at_in, &bt_in, gamma_inv);
    ext(&mut l, &at_aux, &bt_aux, delta_inv);
    if let Some(i) = l.iter().position(|x| bool::from(x.is_zero())) {
        return Err(Error::internal(format!(
            "aux variable {i} is unconstrained (its l query point would be the identity)"
        )));
    }
    let nonzero = |a: Vec<Fr>, b: Vec<Fr>| -> Vec<Fr> {
        a.into_iter()
            .chain(b)
            .filter(|x| !bool::from(x.is_zero()))
            .collect()
    };
    let a = nonzero(at_in, at_aux);
    let b = nonzero(bt_in, bt_aux);
    let eval_seconds = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let wbits = std::env::var("CUZK_PARAMGEN_WBITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|w| (4..=20).contains(w))
        .unwrap_or(WBITS);
    let c1 = Comb::new(s.g1, wbits);
    let c2 = Comb::new(s.g2, wbits);
    let g1 = s.g1.to_affine();
    let g2 = s.g2.to_affine();
    let mut ic_pts = vec![G1Affine::identity(); ic.len()];
    let ic_proj: Vec<G1Projective> = ic.iter().map(|k| c1.mul(k)).collect();
    normalize(&ic_proj, &mut ic_pts);
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1 * s.alpha).to_affine(),
        beta_g1: (g1 * s.beta).to_affine(),
        beta_g2: (g2 * s.beta).to_affine(),
        gamma_g2: (g2 * s.gamma).to_affine(),
        delta_g1: (g1 * s.delta).to_affine(),
        delta_g2: (g2 * s.delta).to_affine(),
        ic: ic_pts,
    };
    let mut head = Vec::new();
    vk.write(&mut head)
        .map_err(|e| Error::internal(format!("verifying key: {e}")))?;
    let counts = [
        (m - 1) as u64,
        aux as u64,
        a.len() as u64,
        b.len() as u64,
        b.len() as u64,
    ];
    if let Some(p) = progress {
        p.inc(inputs as u64);
    }
    let mut w = Sections {
        out,
        progress,
        bytes: 0,
    };
    w.write(&head)?;
    // h_i = tau^i (tau^m - 1) / delta, i < m - 1.
    let coeff = (s.tau.pow_vartime([m as u64]) - Fr::ONE) * delta_inv;
    let tau = s.tau;
    let h_fill = move |start: usize, ks: &mut [Fr]| {
        const SUB: usize = 1 << 12;
        ks.par_chunks_mut(SUB).enumerate().for_each(|(c, ks)| {
            let mut x = tau.pow_vartime([(start + c * SUB) as u64]) * coeff;
            for k in ks {
                *k = x;
                x *= tau;
            }
        });
    };
    let (mut m1, mut m2, points_on) = multipliers(&c1, &c2);
    w.section(&mut m1, m - 1, &h_fill, 1)?;
    w.section(&mut m1, aux, &copy(&l), 1)?;
    drop(l);
    w.section(&mut m1, a.len(), &copy(&a), 1)?;
    drop(a);
    w.section(&mut m1, b.len(), &copy(&b), 1)?;
    w.section(&mut m2, b.len(), &copy(&b), 2)?;
    drop((m1, m2));
    let bytes = w.bytes;
    w.out
        .flush()
        .map_err(|e| Error::params(format!("writing parameters: {e}")))?;
    Ok((
        vk,
        GenReport {
            constraints: rows,
            domain: m,
            inputs,
            aux,
            counts,
            bytes,
            eval_seconds,
            points_seconds: t.elapsed().as_secs_f64(),
            points_on,
        },
    ))
}

/// Point counts of `rec`'s set without computing it (for progress and disk checks): the
/// A and B queries hold the variables with a term in A (inputs always) and B.
pub fn expected_counts(rec: &Recording) -> [u64; 5] {
    let m = rec.constraints().next_power_of_two() as u64;
    let ones = |d: &bellperson::multiexp::DensityTracker| d.bv.count_ones() as u64;
    let a = rec.inputs as u64 + ones(&rec.a_aux_density);
    let b = ones(&rec.b_input_density) + ones(&rec.b_aux_density);
    [m - 1, rec.aux as u64, a, b, b]
}

/// Bytes of a `.params` file with these counts.
pub fn file_bytes(counts: &[u64; 5], inputs: usize) -> u64 {
    let vk = 3 * 96 + 3 * 192 + 4 + 96 * inputs as u64;
    vk + 5 * 4 + 96 * counts[..4].iter().sum::<u64>() + 192 * counts[4]
}

/// Writes `path` through a temporary file beside it, renamed into place once complete.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> Result<()>,
) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::params(format!("cannot create {}: {e}", dir.display())))?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let res = (|| {
        let f = std::fs::File::create(&tmp)
            .map_err(|e| Error::params(format!("cannot create {}: {e}", tmp.display())))?;
        let mut w = std::io::BufWriter::with_capacity(8 << 20, f);
        write(&mut w)?;
        let io = |e: std::io::Error| Error::params(format!("cannot write {}: {e}", path.display()));
        w.flush().map_err(io)?;
        w.get_ref().sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Where a generated set went and what it took.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Written {
    pub params: PathBuf,
    pub vk: PathBuf,
    pub report: GenReport,
    pub seconds: f64,
}

/// Generates the marked set of `rec` (parameter id `rec.id`) into `dir`: `.meta`, `.vk`, then
/// `.params` (its presence means the set is complete). Never overwrites a file.
pub fn generate(rec: &Recording, dir: &Path, sector_size: u64, seed: u64) -> Result<Written> {
    let id = &rec.id;
    let params = params_path(dir, id);
    let vk_file = vk_path(dir, id);
    let meta = dir.join(storage_proofs_core::parameter_cache::metadata_id(id));
    if let Some(f) = [&params, &vk_file, &meta].into_iter().find(|f| f.exists()) {
        return Err(Error::params(format!(
            "refusing to overwrite {}: move the parameter set {id} away first",
            f.display()
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::params(format!("cannot create {}: {e}", dir.display())))?;
    let counts = expected_counts(rec);
    let t = Instant::now();
    let progress = Progress::bar(
        &format!(
            "generating random parameters ({} constraints, {} MiB)",
            rec.constraints(),
            file_bytes(&counts, rec.inputs) >> 20
        ),
        work_units(&counts, rec.inputs),
        "points",
    );
    progress.phase("evaluating the circuit at tau");
    let secrets = Secrets::marked(seed);
    // The .params file is computed into a temporary file first (the verifying key comes out
    // of it), then the .meta and .vk are written, and the .params renamed into place last.
    let tmp = params.with_extension(format!("gen{}", std::process::id()));
    let res = (|| {
        let f = std::fs::File::create(&tmp)
            .map_err(|e| Error::params(format!("cannot create {}: {e}", tmp.display())))?;
        let mut w = std::io::BufWriter::with_capacity(8 << 20, f);
        let (vk, report) = write_params(rec, &secrets, &mut w, Some(&progress))?;
        let f = w
            .into_inner()
            .map_err(|e| Error::params(format!("writing {}: {e}", tmp.display())))?;
        f.sync_all()
            .map_err(|e| Error::params(format!("writing {}: {e}", tmp.display())))?;
        write_atomically(&meta, |w| {
            serde_json::to_writer(w, &serde_json::json!({ "sector_size": sector_size }))
                .map_err(|e| Error::params(format!("writing {}: {e}", meta.display())))
        })?;
        write_atomically(&vk_file, |w| {
            vk.write(w)
                .map_err(|e| Error::params(format!("writing {}: {e}", vk_file.display())))
        })?;
        std::fs::rename(&tmp, &params)
            .map_err(|e| Error::params(format!("writing {}: {e}", params.display())))?;
        Ok(report)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let report = res?;
    progress.finish("generated");
    Ok(Written {
        params,
        vk: vk_file,
        report,
        seconds: t.elapsed().as_secs_f64(),
    })
}
