//! Random Groth16 parameters from a circuit's recording (`cuzk params gen`, `cuzk setup`).
//!
//! bellperson's `generate_random_parameters` synthesizes the circuit into per-variable lists
//! and multiplies every point by a windowed-NAF of a random generator: about 255 doublings per
//! point, on one core for the h query's batches. The set is the same here, computed from the
//! recording (`pce::Recording`, the circuit's sparse A, B, C):
//!
//! 1. the Lagrange basis at a random `tau` over the domain of `m` points, in closed form
//!    (`L_j(tau) = w^j (tau^m - 1) / (m (tau - w^j))`, one batch inversion);
//! 2. per variable, `A_i(tau)`, `B_i(tau)`, `C_i(tau)` as column sums of the recorded matrices
//!    (each matrix transposed once by a counting sort, then summed column by column in
//!    parallel);
//! 3. every point by fixed-base multiplication: a table of `d · 2^(w j) · G` for signed w-bit
//!    digits `d`, so a point costs ~255/w mixed additions and no doubling; results are made
//!    affine in batches (one inversion per batch) and written as bellperson writes them; where
//!    a GPU answers (a `cuda` build; `CUZK_PARAMGEN_GPU=off` to keep to the CPU) the same table
//!    is copied to it and `kernels/fixed_base.cu` writes the same bytes, block by block, while
//!    a thread writes the previous block to the file.
//!
//! Given the same secrets and generators the bytes are bellperson's own (tested). Every set
//! written here is marked (`cuzk::params::is_random_set`): G1 and G2 are the standard
//! generators and alpha is the fixed scalar of the mark; tau, beta, gamma and delta come from
//! the seed.
//!
//! Files: `comb` (points: batches made affine, the fixed-base comb), `qap` (step 1 and 2: the
//! Lagrange basis and the column sums at tau), `file` (step 3: the sections on the GPU or the
//! CPU, bellperson's byte layout, the report, the atomic write into a parameter directory).

use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use ff::Field;
use group::Group;
use rand::SeedableRng;

use cuzk::params::random_set_alpha;

mod comb;
mod file;
mod qap;

pub use comb::*;
pub use file::*;
use qap::*;

/// The toxic waste and generators of one parameter set.
#[derive(Clone, Debug)]
pub struct Secrets {
    pub g1: G1Projective,
    pub g2: G2Projective,
    pub alpha: Fr,
    pub beta: Fr,
    pub gamma: Fr,
    pub delta: Fr,
    pub tau: Fr,
}

impl Secrets {
    /// The secrets of a marked set: standard generators, the mark's alpha, the rest from `seed`.
    pub fn marked(seed: u64) -> Secrets {
        let mut rng = rand_chacha_like(seed);
        Secrets {
            g1: G1Projective::generator(),
            g2: G2Projective::generator(),
            alpha: random_set_alpha(),
            beta: Fr::random(&mut rng),
            gamma: Fr::random(&mut rng),
            delta: Fr::random(&mut rng),
            tau: Fr::random(&mut rng),
        }
    }
}

fn rand_chacha_like(seed: u64) -> rand_xorshift::XorShiftRng {
    rand_xorshift::XorShiftRng::seed_from_u64(seed ^ 0x6375_7a6b_7061_7261)
}
