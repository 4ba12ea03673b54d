//! The GPU kernels against the CPU, on a real GPU (`make test-gpu`):
//! - cuzk's prover (`kernels/groth16.cu`): a partition's h polynomial (the NTTs) and its five
//!   MSMs (H, L, A, B in G1 and G2) against bellperson's CPU FFT and blst's MSM, with random
//!   bases and scalars of every class (zero, one, others, edge values), resident and streamed,
//!   from 2^4 to 2^20 points; and at 2^17 points with window sizes of 10-18, 20, 21 and 22 bits
//!   (odd and even window counts, every top-window width; from 14-bit windows on, the bucket
//!   integration spread over the GPU, with fewer sub-chunks in a narrow top window, or one where
//!   the top window is narrower than a chunk: 18, 21) and several batches
//!   (`CUZK_MSM_WBITS`, `CUZK_MSM_BATCHES`, read once per process: each shape runs in a child
//!   process of this test binary);
//! - the fixed-base multiplication of parameter generation (`kernels/fixed_base.cu`) against
//!   the CPU's comb, byte for byte.
//!
//! Without a GPU each test says so and checks nothing, unless `CUZK_TEST_GPU=1` demands one
//! (make test-gpu and the device plans set it).
#![cfg(feature = "cuda")]

mod common;

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use common::tools::paramgen::Comb;
use cuzk::sys::{
    gpu_prover::{DeviceSrs, KernelError, MsmResults, PartitionInput, PinnedBases},
    G1Kind,
};
use ff::{Field, PrimeField};
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_xorshift::XorShiftRng;
use rayon::prelude::*;

/// The GPU, held by one test at a time (the prover's calls on one GPU must not overlap);
/// without one, says which check did not run (and fails where `CUZK_TEST_GPU=1` demands a
/// GPU).
fn gpu(what: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if matches!(cuzk::sys::cuda::probe(), Ok((_, n)) if n > 0) {
        return Some(ONE.lock().unwrap_or_else(|e| e.into_inner()));
    }
    assert!(
        std::env::var("CUZK_TEST_GPU").as_deref() != Ok("1"),
        "CUZK_TEST_GPU=1 but no GPU answers ({what})"
    );
    eprintln!("no GPU: {what} is not checked here");
    None
}

/// `n` distinct random points, cheaply: runs of 1024 of P, P + Q, P + 2Q, ... from random P, Q,
/// with the point at infinity at the positions `inf` lists.
fn points<G: Group + Curve + Send + Sync>(n: usize, seed: u64, inf: &[usize]) -> Vec<G::AffineRepr>
where
    G::AffineRepr: Send + Sync + Default + Copy,
{
    let runs: Vec<Vec<G>> = (0..n.div_ceil(1024))
        .into_par_iter()
        .map(|r| {
            let mut rng = XorShiftRng::seed_from_u64(seed.wrapping_mul(1_000_003) + r as u64);
            let (mut p, q) = (G::random(&mut rng), G::random(&mut rng));
            (0..(n - r * 1024).min(1024))
                .map(|_| {
                    let x = p;
                    p += q;
                    x
                })
                .collect()
        })
        .collect();
    let mut proj: Vec<G> = runs.into_iter().flatten().collect();
    for &i in inf {
        if i < n {
            proj[i] = G::identity();
        }
    }
    let mut out = vec![G::AffineRepr::default(); n];
    G::batch_normalize(&proj, &mut out);
    out
}

/// sum(s_i * P_i) on the CPU (blst's MSM over every core's share).
fn msm_g1(p: &[G1Affine], s: &[Fr]) -> G1Affine {
    assert_eq!(p.len(), s.len());
    let proj: Vec<G1Projective> = p.par_iter().map(|x| x.into()).collect();
    proj.par_chunks(4096)
        .zip(s.par_chunks(4096))
        .map(|(p, s)| G1Projective::multi_exp(p, s))
        .reduce(G1Projective::identity, |a, b| a + b)
        .to_affine()
}

fn msm_g2(p: &[G2Affine], s: &[Fr]) -> G2Affine {
    assert_eq!(p.len(), s.len());
    let proj: Vec<G2Projective> = p.par_iter().map(|x| x.into()).collect();
    proj.par_chunks(4096)
        .zip(s.par_chunks(4096))
        .map(|(p, s)| G2Projective::multi_exp(p, s))
        .reduce(G2Projective::identity, |a, b| a + b)
        .to_affine()
}

/// How a case's aux scalars are drawn: the shares (of 1000) that are zero and one; the rest
/// are others (random, with the edge values -1, 2 and 2^k - 1 among them).
#[derive(Clone, Copy, Debug)]
struct Mix {
    zero: u32,
    one: u32,
}

fn scalar(rng: &mut XorShiftRng, mix: Mix) -> Fr {
    let x = rng.gen_range(0..1000u32);
    if x < mix.zero {
        return Fr::ZERO;
    }
    if x < mix.zero + mix.one {
        return Fr::ONE;
    }
    match rng.gen_range(0..16u32) {
        0 => -Fr::ONE,
        1 => Fr::from(2),
        2 => Fr::from((1u64 << rng.gen_range(1..64u32)) - 1),
        3 => Fr::from_u128(u128::MAX),
        _ => Fr::random(&mut *rng),
    }
}

fn bits(rng: &mut XorShiftRng, n: usize, share: f64) -> (Vec<usize>, Vec<bool>) {
    let set: Vec<bool> = (0..n).map(|_| rng.gen_bool(share)).collect();
    let mut words = vec![0usize; n.div_ceil(64).max(1)];
    for (i, &b) in set.iter().enumerate() {
        if b {
            words[i / 64] |= 1 << (i % 64);
        }
    }
    (words, set)
}

/// One partition of random numbers, its parameters' bases and what the CPU says the prover's
/// h and MSMs are.
struct Case {
    name: String,
    lg: u32,
    abc: [Vec<Fr>; 3],
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
    dens: [Vec<usize>; 3],
    bases: (
        Vec<G1Affine>,
        Vec<G1Affine>,
        Vec<G1Affine>,
        Vec<G1Affine>,
        Vec<G2Affine>,
    ),
    want: [G1Affine; 4],
    want_b2: G2Affine,
}

impl Case {
    fn new(lg: u32, n_inp: usize, n_aux: usize, mix: Mix, seed: u64) -> Case {
        let domain = 1usize << lg;
        let mut rng = XorShiftRng::seed_from_u64(seed);
        // a, b, c of a length that keeps bellperson's domain at 2^lg (as a circuit's would).
        let len = if lg == 0 {
            1
        } else {
            domain / 2 + 1 + rng.gen_range(0..domain / 2)
        };
        let abc = [0, 1, 2].map(|_| (0..len).map(|_| Fr::random(&mut rng)).collect::<Vec<_>>());
        let mut inputs: Vec<Fr> = (0..n_inp).map(|_| scalar(&mut rng, mix)).collect();
        if let Some(one) = inputs.first_mut() {
            *one = Fr::ONE;
        }
        let aux: Vec<Fr> = (0..n_aux).map(|_| scalar(&mut rng, mix)).collect();
        let (a_aux, a_set) = bits(&mut rng, n_aux, 0.6);
        let (b_inp, bi_set) = bits(&mut rng, n_inp, 0.5);
        let (b_aux, ba_set) = bits(&mut rng, n_aux, 0.4);
        let pick = |v: &[Fr], set: &[bool]| -> Vec<Fr> {
            v.iter()
                .zip(set)
                .filter(|(_, &b)| b)
                .map(|(x, _)| *x)
                .collect()
        };
        let a_s: Vec<Fr> = inputs.iter().copied().chain(pick(&aux, &a_set)).collect();
        let b_s: Vec<Fr> = pick(&inputs, &bi_set)
            .into_iter()
            .chain(pick(&aux, &ba_set))
            .collect();
        // A few bases at infinity, where the MSMs' additions must pass them by.
        let inf = [3, 700, 40_000];
        let h = points::<G1Projective>(domain - 1, seed + 1, &inf);
        let l = points::<G1Projective>(n_aux, seed + 2, &inf);
        let a = points::<G1Projective>(a_s.len(), seed + 3, &[]);
        let b1 = points::<G1Projective>(b_s.len(), seed + 4, &[]);
        let b2 = points::<G2Projective>(b_s.len(), seed + 5, &[5]);
        let worker = ec_gpu_gen::threadpool::Worker::new();
        let hs: Vec<Fr> =
            cuzk::prover::cpu::compute_h(&worker, abc[0].clone(), abc[1].clone(), abc[2].clone())
                .unwrap()
                .into_iter()
                .map(|r| Fr::from_repr(r).unwrap())
                .collect();
        assert_eq!(hs.len(), domain - 1);
        let want = [
            msm_g1(&h, &hs),
            msm_g1(&l, &aux),
            msm_g1(&a, &a_s),
            msm_g1(&b1, &b_s),
        ];
        let want_b2 = msm_g2(&b2, &b_s);
        Case {
            name: format!("2^{lg}, {n_inp} inputs, {n_aux} aux, {mix:?}"),
            lg,
            abc,
            inputs,
            aux,
            dens: [a_aux, b_inp, b_aux],
            bases: (h, l, a, b1, b2),
            want,
            want_b2,
        }
    }

    fn input(&self) -> PartitionInput<'_> {
        PartitionInput {
            a: &self.abc[0],
            b: &self.abc[1],
            c: &self.abc[2],
            lg_domain: self.lg,
            inputs: &self.inputs,
            aux: &self.aux,
            a_aux_density: &self.dens[0],
            b_input_density: &self.dens[1],
            b_aux_density: &self.dens[2],
        }
    }

    /// Resident bases filled in pieces of 997 points (the last of each kind shorter), each
    /// kind from its end back to its start; until the last piece is in, the handle refuses to
    /// prove, and a piece past a kind's end is refused.
    fn filled_piece_by_piece(&self) -> DeviceSrs {
        const PIECE: usize = 997;
        let (h, l, a, b1, b2) = &self.bases;
        let mut srs =
            DeviceSrs::resident_unfilled(0, [h.len(), l.len(), a.len(), b1.len()], false).unwrap();
        let starts = |n: usize| (0..n).step_by(PIECE).rev().collect::<Vec<_>>();
        let end = |first: usize, n: usize| (first + PIECE).min(n);
        for (kind, v) in [
            (G1Kind::H, h),
            (G1Kind::L, l),
            (G1Kind::A, a),
            (G1Kind::BG1, b1),
        ] {
            for first in starts(v.len()) {
                srs.fill_g1(kind, first, &v[first..end(first, v.len())])
                    .unwrap();
            }
        }
        assert!(
            srs.fill_g1(G1Kind::L, l.len() - 1, &l[..2]).is_err(),
            "a piece past the end of L was taken"
        );
        // Points filled before are refused, whole or in part, and change nothing: the count of
        // points still to fill cannot reach 0 with some never copied.
        assert_eq!(srs.unfilled(), b2.len(), "G1 filled, B in G2 left");
        let again = |r: Result<(), KernelError>| {
            let e = r.expect_err("points filled twice");
            assert!(e.message.contains("filled before"), "{e}");
        };
        again(srs.fill_g1(G1Kind::H, 0, &h[..1]));
        if !a.is_empty() {
            again(srs.fill_g1(G1Kind::A, a.len() / 2, &a[a.len() / 2..]));
        }
        if b2.len() > 1 {
            // A piece that overlaps the filled one at its start by one point.
            srs.fill_b_g2(0, &b2[..1]).unwrap();
            again(srs.fill_b_g2(0, &b2[..2.min(b2.len())]));
            assert_eq!(srs.unfilled(), b2.len() - 1);
        }
        let mut pieces = starts(b2.len());
        let last = pieces.pop().expect("B has points");
        for first in pieces {
            srs.fill_b_g2(first, &b2[first..end(first, b2.len())])
                .unwrap();
        }
        let filled_first = usize::from(b2.len() > 1);
        let rest = end(last, b2.len()) - last - filled_first;
        assert_eq!(srs.unfilled(), rest, "only the first piece of B in G2 left");
        let mut stage = srs
            .stage(self.lg, self.inputs.len(), self.aux.len(), false)
            .unwrap();
        stage.upload(&self.input()).unwrap();
        let e = srs
            .prove(&mut stage)
            .expect_err("a proof with bases not all filled in");
        assert!(e.message.contains("not all filled"), "{e}");
        let from = last + filled_first;
        srs.fill_b_g2(from, &b2[from..end(last, b2.len())]).unwrap();
        assert_eq!(srs.unfilled(), 0);
        srs
    }

    /// Proves the case twice on one stage (a stage is reused) and checks every result.
    fn check(&self, srs: &DeviceSrs, mode: &str) {
        let mut stage = srs
            .stage(self.lg, self.inputs.len(), self.aux.len(), false)
            .unwrap();
        for round in 0..2 {
            stage.upload(&self.input()).unwrap();
            let got: MsmResults = srs.prove(&mut stage).unwrap();
            let what = format!("{} ({mode}, round {round})", self.name);
            assert!(
                got.h == self.want[0],
                "H (the NTTs' h and its MSM) differs: {what}"
            );
            assert!(got.l == self.want[1], "L differs: {what}");
            assert!(got.a == self.want[2], "A differs: {what}");
            assert!(got.b_g1 == self.want[3], "B in G1 differs: {what}");
            assert!(got.b_g2 == self.want_b2, "B in G2 differs: {what}");
        }
        // A proof without an upload is an error, not a result of stale buffers.
        assert!(
            srs.prove(&mut stage).is_err(),
            "a second prove of one upload: {}",
            self.name
        );
    }

    /// Both parameter modes: bases resident in device memory (copied whole, and filled in
    /// piece by piece as the engine reads a `.params` file), and streamed from pinned host
    /// memory.
    fn check_both(self) {
        let (h, l, a, b1, b2) = &self.bases;
        let srs = DeviceSrs::upload(0, h, l, a, b1, b2, false).unwrap();
        self.check(&srs, "resident");
        drop(srs);
        let srs = self.filled_piece_by_piece();
        self.check(&srs, "resident, filled piece by piece");
        drop(srs);
        let pinned = PinnedBases::new(h.clone(), l.clone(), a.clone(), b1.clone(), b2.clone());
        let srs = DeviceSrs::streamed(0, Arc::new(pinned.unwrap()), false).unwrap();
        self.check(&srs, "streamed");
        eprintln!("GPU prover = CPU: {}", self.name);
    }
}

const MOSTLY_BITS: Mix = Mix {
    zero: 600,
    one: 380,
};

/// The h polynomial and the five MSMs at domains of 2^4 to 2^20: L/A/B with no other scalar
/// (only the sum of ones), exactly one, all others, and the usual mostly 0/1 mix.
#[test]
fn the_gpus_prover_computes_the_cpus_h_and_msms() {
    let Some(_gpu) = gpu("the GPU prover against the CPU") else {
        return;
    };
    let cases = [
        (
            4,
            3,
            20,
            Mix {
                zero: 300,
                one: 300,
            },
        ),
        (
            10,
            2,
            700,
            Mix {
                zero: 500,
                one: 500,
            },
        ),
        (12, 5, 3000, Mix { zero: 999, one: 0 }),
        (15, 40, 40_000, Mix { zero: 0, one: 0 }),
        (17, 7, 100_000, MOSTLY_BITS),
        (20, 3, 1000, MOSTLY_BITS),
    ];
    for (k, &(lg, n_inp, n_aux, mix)) in cases.iter().enumerate() {
        Case::new(lg, n_inp, n_aux, mix, 100 + k as u64).check_both();
    }
    // Exactly one other aux scalar (the tails' smallest MSM), and none at all.
    let mut c = Case::new(11, 2, 2000, Mix { zero: 1000, one: 0 }, 7);
    c.aux[1234] = Fr::from(77);
    c.inputs = vec![Fr::ONE, Fr::ONE];
    let (_, l, a, b1, b2) = &c.bases;
    let pick = |d: &[usize], v: &[Fr]| -> Vec<Fr> {
        v.iter()
            .enumerate()
            .filter(|(i, _)| d[i / 64] >> (i % 64) & 1 == 1)
            .map(|x| *x.1)
            .collect()
    };
    let a_s: Vec<Fr> = c
        .inputs
        .iter()
        .copied()
        .chain(pick(&c.dens[0], &c.aux))
        .collect();
    let b_s: Vec<Fr> = pick(&c.dens[1], &c.inputs)
        .into_iter()
        .chain(pick(&c.dens[2], &c.aux))
        .collect();
    c.want[1] = msm_g1(l, &c.aux);
    c.want[2] = msm_g1(a, &a_s);
    c.want[3] = msm_g1(b1, &b_s);
    c.want_b2 = msm_g2(b2, &b_s);
    c.name += ", one other aux scalar";
    c.check_both();
}

/// The MSM shapes of large MSMs (2^16 points or more) that the defaults do not reach at test
/// sizes: every window size of CUZK_MSM_WBITS and several batches of CUZK_MSM_BATCHES, each in
/// a child process (the knobs are read once per process) that runs
/// `one_msm_shape_against_the_cpu`.
#[test]
fn the_gpus_msm_at_every_window_size_and_batch_count() {
    let Some(_gpu) = gpu("the MSM driver's window sizes and batches") else {
        return;
    };
    let exe = std::env::current_exe().unwrap();
    let shapes = [
        (10, 2),
        (11, 5),
        (12, 1),
        (13, 3),
        (14, 1),
        (15, 4),
        (16, 1),
        (17, 2),
        (18, 1),
        (20, 1),
        (21, 1),
        (22, 2),
    ];
    let mut failed = Vec::new();
    for (wbits, batches) in shapes {
        let log = std::env::temp_dir().join(format!("cuzk-msm-{}-{wbits}.log", std::process::id()));
        let file = std::fs::File::create(&log).unwrap();
        let mut child = std::process::Command::new(&exe)
            .args([
                "one_msm_shape_against_the_cpu",
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env("CUZK_MSM_WBITS", wbits.to_string())
            .env("CUZK_MSM_BATCHES", batches.to_string())
            .env("CUZK_TEST_GPU", "1")
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        // A deadline: a hung kernel fails this test by name instead of hanging make test.
        let t = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if t.elapsed() > std::time::Duration::from_secs(300) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        let ok = status.is_some_and(|s| s.success()) && text.contains("GPU prover = CPU");
        let verdict = match (ok, status) {
            (true, _) => "same as the CPU",
            (false, None) => "FAILED: past its 300 s deadline",
            (false, Some(_)) => "FAILED",
        };
        eprintln!("{wbits}-bit windows, {batches} batches: {verdict}");
        if !ok {
            eprintln!("{text}");
            failed.push((wbits, batches));
        }
    }
    assert!(
        failed.is_empty(),
        "MSM shapes (window bits, batches) that failed: {failed:?}"
    );
}

/// One MSM shape (the knobs this process was started with) at 2^17, resident and streamed: run
/// by `the_gpus_msm_at_every_window_size_and_batch_count`.
#[test]
#[ignore = "run by the_gpus_msm_at_every_window_size_and_batch_count, with the knobs set"]
fn one_msm_shape_against_the_cpu() {
    let _gpu = gpu("one MSM shape").expect("a GPU");
    // L's others are past 2^16, so the knobs reach L's MSM as well as H's.
    Case::new(
        17,
        6,
        90_000,
        Mix {
            zero: 100,
            one: 100,
        },
        17,
    )
    .check_both();
}

/// The GPU's fixed-base multiplication (`kernels/fixed_base.cu`) writes the bytes the CPU's
/// comb writes, for random scalars and the edge cases of the signed digits, in G1 and G2.
#[test]
fn the_gpus_fixed_base_multiplication_writes_the_cpus_bytes() {
    use cuzk::sys::fixed_base::FixedBase;
    let Some(_gpu) = gpu("the GPU's fixed-base multiplication") else {
        return;
    };
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(5);
    let g1 = G1Projective::random(&mut rng);
    let g2 = G2Projective::random(&mut rng);
    let mut ks: Vec<Fr> = (0..3000).map(|_| Fr::random(&mut rng)).collect();
    ks.extend([Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(2), -Fr::from(2)]);
    ks.extend((0..20).map(|i| Fr::from(1u64 << (i * 3)) - Fr::ONE));
    ks.push(Fr::from_u128(u128::MAX));
    for w in [8, 13, 16] {
        let c1 = Comb::new(g1, w);
        let c2 = Comb::new(g2, w);
        let (wb, n) = c1.shape();
        let mut f1 = FixedBase::<G1Affine>::new(0, wb, n, c1.table()).unwrap();
        let mut f2 = FixedBase::<G2Affine>::new(0, wb, n, c2.table()).unwrap();
        let (mut want, mut got) = (vec![0u8; ks.len() * 96], vec![0u8; ks.len() * 96]);
        c1.mul_into(&ks, &mut want);
        f1.mul(&ks, &mut got).unwrap();
        assert!(want == got, "G1, w {w}");
        let (mut want, mut got) = (vec![0u8; ks.len() * 192], vec![0u8; ks.len() * 192]);
        c2.mul_into(&ks, &mut want);
        f2.mul(&ks, &mut got).unwrap();
        assert!(want == got, "G2, w {w}");
        // A table of the wrong shape is an error, not a crash.
        assert!(FixedBase::<G1Affine>::new(0, wb, n + 1, c1.table()).is_err());
    }
}

/// Streamed parameters' pinned host copy stays until the engine releases them, so the budget
/// must count it as resident. The hazard: held as an ordinary reservation, it hides from the
/// "could never fit" test (which counts only resident bytes), so a CPU retry that can never
/// fit beside it waits forever, and its priority wait holds back every new synthesis.
#[test]
fn the_streamed_parameters_host_copy_is_reserved_as_resident() {
    use cuzk::prover::{cuzk_gpu::CuzkGpuProver, GpuParams, ProverBackend};
    let Some(_gpu) = gpu("the streamed parameters' reservation") else {
        return;
    };
    let (_, rep, _) = common::fixture(cuzk::porep::FixtureShape::default());
    let budget = cuzk::budget::Budget::new(64 << 30);
    let srs = cuzk::params::SrsCache::new(common::params_dir())
        .get(&rep.params_id, &budget)
        .unwrap();
    let dev = cuzk::sys::cuda::device(0).unwrap();
    let p = CuzkGpuProver::new(vec![dev], 1, GpuParams::Streamed, None);
    p.prepare(&srs).unwrap();
    assert!(p.keeps_host_copy());
    assert_eq!(
        (budget.used(), budget.resident()),
        (srs.file_len, srs.file_len),
        "the pinned copy must be held as resident"
    );
    p.release();
    assert_eq!((budget.used(), budget.resident()), (0, 0));
}

/// One circuit's parameters written into `dir` as `id` (random, from `seed`), loaded.
fn synthetic_params(
    dir: &std::path::Path,
    id: &str,
    rounds: usize,
    seed: u64,
) -> Arc<cuzk::params::Srs> {
    use common::tools::selftest::Synthetic;
    let mut rng = XorShiftRng::seed_from_u64(seed);
    let circuit = Synthetic { seed: None, rounds };
    let params =
        bellperson::groth16::generate_random_parameters::<blstrs::Bls12, _, _>(circuit, &mut rng)
            .unwrap();
    let mut file = std::fs::File::create(cuzk::params::params_path(dir, id)).unwrap();
    params.write(&mut file).unwrap();
    let mut vk = Vec::new();
    params.vk.write(&mut vk).unwrap();
    std::fs::write(cuzk::params::vk_path(dir, id), vk).unwrap();
    cuzk::params::SrsCache::new(dir.to_path_buf())
        .get(id, &cuzk::budget::Budget::new(64 << 30))
        .unwrap()
}

/// A GPU whose memory holds one circuit's parameters at a time proves a second circuit after a
/// first: the prover lets go of the first's parameters for it. The hazard: a PoSt set placed
/// beside a PoRep set that fills the card found no room "now", and its partitions waited for
/// room that only the prover itself could give, then went to the CPU, past their deadline.
/// The device memory limit is the least one (searched down from the first's least plan with
/// room for its witness) under which the first proves and the second has no room beside it.
#[test]
fn a_second_circuit_takes_the_room_the_first_holds() {
    use common::tools::selftest::Synthetic;
    use cuzk::{
        prover::{
            cuzk_gpu::{plan::PLANS, plan_bytes, CuzkGpuProver},
            GpuParams, ProverBackend, StageTimes,
        },
        sys::gpu_prover::mem_stats,
    };
    let Some(_gpu) = gpu("a second circuit in the room of the first") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rounds = 1 << 15;
    let (first, second) = ("cuzk-room-first", "cuzk-room-second");
    let srs = [
        synthetic_params(dir.path(), first, rounds, 1),
        synthetic_params(dir.path(), second, rounds, 2),
    ];
    let seed = Fr::from(7u64);
    let out = (0..rounds).fold(seed, |x, _| x.square());
    let compact = |id: &str| {
        let rec =
            cuzk::pce::RecordingCS::record(Synthetic { seed: None, rounds }, id, None).unwrap();
        let circuit = Synthetic {
            seed: Some(seed),
            rounds,
        };
        let w = cuzk::pce::WitnessTarget::synthesize(circuit, Some(rec.aux), None).unwrap();
        (Arc::new(rec), w)
    };
    let (rec1, w1) = compact(first);
    let (rec2, w2) = compact(second);
    let least = PLANS
        .iter()
        .filter(|p| !p.streamed)
        .map(|&p| plan_bytes(&srs[0], p))
        .min()
        .unwrap();
    let room_for_others = w1.classed().other_index.len() as u64 * 1024;
    let dev = cuzk::sys::cuda::device(0).unwrap();
    let base = mem_stats(0).0;
    let mut r = XorShiftRng::seed_from_u64(3);
    let (rr, ss) = (Fr::random(&mut r), Fr::random(&mut r));
    let mut found = None;
    for quarter in (0..=4).rev() {
        let limit = base + least + room_for_others * quarter / 4;
        let p = CuzkGpuProver::new(vec![dev.clone()], 1, GpuParams::Resident, Some(limit))
            .with_min_hold(std::time::Duration::ZERO);
        let mut st = StageTimes::default();
        let proof = p.prove_witness(&rec1.shared_r1cs(), &w1.classed(), &srs[0], rr, ss, &mut st);
        if !matches!(proof, Some(Ok(_))) {
            break; // a lower limit cannot prove it either
        }
        let beside = p.plans(&srs[1]);
        eprintln!(
            "limit {} MiB: the second beside the first: {beside:?}",
            limit >> 20
        );
        if matches!(&beside[..], [(_, Err(e))] if e.status == cuzk::Status::ResourceExhausted) {
            found = Some(p);
            break;
        }
        p.release();
    }
    let p = found.expect("no device memory limit proves the first circuit without room for both");
    let mut st = StageTimes::default();
    let proof = p
        .prove_witness(&rec2.shared_r1cs(), &w2.classed(), &srs[1], rr, ss, &mut st)
        .expect("a compact proof")
        .expect("the second circuit proves on the GPU in the first's room");
    assert!(bellperson::groth16::verify_proof(&srs[1].pvk, &proof, &[out]).unwrap());
    assert!(!bellperson::groth16::verify_proof(&srs[1].pvk, &proof, &[out + Fr::ONE]).unwrap());
    // And the first again, in the second's room.
    let again = p.prove_witness(&rec1.shared_r1cs(), &w1.classed(), &srs[0], rr, ss, &mut st);
    assert!(matches!(again, Some(Ok(_))), "{again:?}");
    p.release();
}
