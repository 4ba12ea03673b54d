//! CPU Groth16 prover working from a [`ProvingAssignment`], built on bellperson's public
//! `domain` (FFT) and `multiexp` modules. It computes exactly what bellperson's own prover does
//! for the same assignment and the same `r`, `s` (see the tests), one partition at a time.

use std::sync::Arc;

use bellperson::{
    domain::EvaluationDomain,
    gpu::{LockedFftKernel, LockedMultiexpKernel},
    groth16::{Parameters, Proof},
    multiexp::{multiexp, DensityTracker},
};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu_gen::{multiexp_cpu::FullDensity, threadpool::Worker};
use ff::PrimeField;
use rayon::prelude::*;

use super::{
    assignment::ProvingAssignment,
    groth16::{assemble_proof, check_shape},
    ProverBackend, StageTimes,
};
use crate::{
    error::{Error, Result},
    params::Srs,
};

/// The CPU backend. Multi-exponentiations and FFTs run on ec-gpu-gen's worker pool
/// (`EC_GPU_NUM_THREADS`, default: all cores) and rayon.
#[derive(Debug, Default)]
pub struct CpuProver;

fn ec(e: impl std::fmt::Display) -> Error {
    Error::proving(format!("multiexp failed: {e}"))
}

/// h(X) = (A(X)·B(X) − C(X)) / Z(X) as exponents, from the constraint evaluations.
pub fn compute_h(
    worker: &Worker,
    a: Vec<Fr>,
    b: Vec<Fr>,
    c: Vec<Fr>,
) -> Result<Vec<<Fr as PrimeField>::Repr>> {
    fn synth(e: impl std::fmt::Display) -> Error {
        Error::proving(format!("FFT failed: {e}"))
    }
    let mut a = EvaluationDomain::from_coeffs(a).map_err(synth)?;
    let mut b = EvaluationDomain::from_coeffs(b).map_err(synth)?;
    let mut c = EvaluationDomain::from_coeffs(c).map_err(synth)?;
    let mut kern: Option<LockedFftKernel<Fr>> = None;
    EvaluationDomain::ifft_many(&mut [&mut a, &mut b, &mut c], worker, &mut kern).map_err(synth)?;
    EvaluationDomain::coset_fft_many(&mut [&mut a, &mut b, &mut c], worker, &mut kern)
        .map_err(synth)?;
    a.mul_assign(worker, &b);
    drop(b);
    a.sub_assign(worker, &c);
    drop(c);
    a.divide_by_z_on_coset(worker);
    a.icoset_fft(worker, &mut kern).map_err(synth)?;
    let coeffs = a.into_coeffs();
    let n = coeffs.len() - 1;
    Ok(coeffs
        .into_par_iter()
        .take(n)
        .map(|s| s.to_repr())
        .collect())
}

impl ProverBackend for CpuProver {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn prepare(&self, srs: &Srs) -> Result<()> {
        srs.params().map(|_| ())
    }

    fn prove(
        &self,
        asg: &mut Option<ProvingAssignment>,
        srs: &Srs,
        r: Fr,
        s: Fr,
        times: &mut StageTimes,
    ) -> Result<Proof<Bls12>> {
        let params = srs.params()?;
        let asg = asg
            .take()
            .ok_or_else(|| Error::internal("no assignment to prove"))?;
        self.prove_with_params(asg, &params, r, s, times)
    }
}

impl CpuProver {
    /// Proves one assignment against parameters already in memory.
    pub fn prove_with_params(
        &self,
        asg: ProvingAssignment,
        params: &Parameters<Bls12>,
        r: Fr,
        s: Fr,
        times: &mut StageTimes,
    ) -> Result<Proof<Bls12>> {
        check_shape(&asg, params)?;
        let worker = Worker::new();
        let ProvingAssignment {
            a_aux_density,
            b_input_density,
            b_aux_density,
            a,
            b,
            c,
            input_assignment,
            aux_assignment,
            ..
        } = asg;

        let t = std::time::Instant::now();
        let h_exps = Arc::new(compute_h(&worker, a, b, c)?);
        times.ntt_ms = t.elapsed().as_secs_f64() * 1e3;

        let t = std::time::Instant::now();
        let inputs: Arc<Vec<_>> =
            Arc::new(input_assignment.par_iter().map(|s| s.to_repr()).collect());
        drop(input_assignment);
        let aux: Arc<Vec<_>> = Arc::new(aux_assignment.par_iter().map(|s| s.to_repr()).collect());
        drop(aux_assignment);

        let (h, l, a_sum, b1_sum, b2_sum) = multiexps(
            &worker,
            params,
            h_exps,
            inputs,
            aux,
            [a_aux_density, b_input_density, b_aux_density],
        )?;
        times.msm_ms = t.elapsed().as_secs_f64() * 1e3;
        assemble_proof(&params.vk, r, s, h, l, a_sum, b1_sum, b2_sum)
    }
}

type Repr = <Fr as PrimeField>::Repr;

/// The proof's five multi-exponentiations over `params`' bases: h over the h polynomial's
/// coefficients, l over the aux values, and a, b_g1 and b_g2 over the inputs and the aux values
/// their densities mark (`densities`: A's aux, B's inputs, B's aux).
fn multiexps(
    worker: &Worker,
    params: &Parameters<Bls12>,
    h_exps: Arc<Vec<Repr>>,
    inputs: Arc<Vec<Repr>>,
    aux: Arc<Vec<Repr>>,
    densities: [DensityTracker; 3],
) -> Result<(
    G1Projective,
    G1Projective,
    G1Projective,
    G1Projective,
    G2Projective,
)> {
    let mut g1k = LockedMultiexpKernel::<G1Affine>::new(false);
    let mut g2k = LockedMultiexpKernel::<G2Affine>::new(false);
    let [a_aux_density, b_input_density, b_aux_density] = densities.map(Arc::new);
    let n_inputs = inputs.len();
    let a_aux_total = a_aux_density.get_total_density();
    let b_in_total = b_input_density.get_total_density();
    let b_aux_total = b_aux_density.get_total_density();

    // a and b bases hold exactly inputs + dense aux points.
    if params.a.len() != n_inputs + a_aux_total || params.b_g2.len() != b_in_total + b_aux_total {
        return Err(Error::invalid_input(
            "query densities do not match the parameters (different circuit?)",
        ));
    }
    // Bases: h, l; a = [inputs | aux restricted to the A density]; likewise b_g1 / b_g2.
    let h = multiexp(worker, (params.h.clone(), 0), FullDensity, h_exps, &mut g1k)
        .wait()
        .map_err(ec)?;
    let l = multiexp(
        worker,
        (params.l.clone(), 0),
        FullDensity,
        aux.clone(),
        &mut g1k,
    )
    .wait()
    .map_err(ec)?;
    let a_in = multiexp(
        worker,
        (params.a.clone(), 0),
        FullDensity,
        inputs.clone(),
        &mut g1k,
    );
    let a_aux = multiexp(
        worker,
        (params.a.clone(), n_inputs),
        a_aux_density,
        aux.clone(),
        &mut g1k,
    );
    let a_sum = a_in.wait().map_err(ec)? + a_aux.wait().map_err(ec)?;
    let b1_in = multiexp(
        worker,
        (params.b_g1.clone(), 0),
        b_input_density.clone(),
        inputs.clone(),
        &mut g1k,
    );
    let b1_aux = multiexp(
        worker,
        (params.b_g1.clone(), b_in_total),
        b_aux_density.clone(),
        aux.clone(),
        &mut g1k,
    );
    let b1_sum = b1_in.wait().map_err(ec)? + b1_aux.wait().map_err(ec)?;
    let b2_in = multiexp(
        worker,
        (params.b_g2.clone(), 0),
        b_input_density,
        inputs,
        &mut g2k,
    );
    let b2_aux = multiexp(
        worker,
        (params.b_g2.clone(), b_in_total),
        b_aux_density,
        aux,
        &mut g2k,
    );
    let b2_sum = b2_in.wait().map_err(ec)? + b2_aux.wait().map_err(ec)?;
    Ok((h, l, a_sum, b1_sum, b2_sum))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;

    /// The GPU prover's h chain in 6 NTTs (kernels/groth16.cu), h = (icoset_ntt(A_c · B_c) -
    /// intt(c)) / (g^n - 1), computed here with bellperson's own domain operations, is the
    /// textbook chain's h (compute_h, 7 NTTs) for any a, b and c, rows satisfied or not.
    #[test]
    fn the_six_ntt_h_chain_is_the_textbooks() {
        let worker = Worker::new();
        let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(5);
        let six = |a: &[Fr], b: &[Fr], c: &[Fr]| -> Vec<Fr> {
            let mut kern: Option<LockedFftKernel<Fr>> = None;
            let mut a = EvaluationDomain::from_coeffs(a.to_vec()).unwrap();
            let mut b = EvaluationDomain::from_coeffs(b.to_vec()).unwrap();
            let mut c = EvaluationDomain::from_coeffs(c.to_vec()).unwrap();
            EvaluationDomain::ifft_many(&mut [&mut a, &mut b], &worker, &mut kern).unwrap();
            EvaluationDomain::coset_fft_many(&mut [&mut a, &mut b], &worker, &mut kern).unwrap();
            a.mul_assign(&worker, &b);
            a.icoset_fft(&worker, &mut kern).unwrap();
            c.ifft(&worker, &mut kern).unwrap();
            a.sub_assign(&worker, &c);
            // Divides by Z on the coset, g^n - 1: the same constant.
            a.divide_by_z_on_coset(&worker);
            a.into_coeffs()
        };
        let reprs = |h: &[Fr]| h.iter().map(|s| s.to_repr()).collect::<Vec<_>>();
        for len in [1usize, 2, 5, 64, 100, 1000, 4097] {
            let a: Vec<Fr> = (0..len).map(|_| Fr::random(&mut rng)).collect();
            let b: Vec<Fr> = (0..len).map(|_| Fr::random(&mut rng)).collect();
            for satisfied in [true, false] {
                let c: Vec<Fr> = if satisfied {
                    a.iter().zip(&b).map(|(x, y)| x * y).collect()
                } else {
                    (0..len).map(|_| Fr::random(&mut rng)).collect()
                };
                let h = six(&a, &b, &c);
                let n = h.len() - 1;
                let want = compute_h(&worker, a.clone(), b.clone(), c.clone()).unwrap();
                assert_eq!(reprs(&h[..n]), want, "{len} rows, satisfied: {satisfied}");
                // Satisfied rows: A·B - C vanishes on the domain, h has degree n - 2 at most.
                if satisfied {
                    assert_eq!(h[n], Fr::ZERO, "{len} rows (domain {})", h.len());
                }
            }
        }
    }
}
