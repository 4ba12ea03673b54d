//! The mark of random parameter sets. cuzk's parameter generator (`cuzk params gen`, `cuzk
//! setup`) makes sets whose proofs verify against their own `.vk` but never on chain. For
//! production sector sizes they carry production file names, so a node that found one where
//! it looks for the real set would return proofs its own self-check accepts and the chain
//! rejects. Every generated set is therefore marked in band: its `alpha_g1` (in the `.params`
//! header and in the `.vk`) is `ALPHA · G1` for the fixed scalar [`random_set_alpha`], a point
//! no ceremony-made key has by chance. The engine refuses a marked set for a production size
//! unless it is told that it runs a benchmark.

use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, G1Affine, G1Projective, Scalar as Fr};
use group::{prime::PrimeCurveAffine, Curve, Group};

/// What the mark is derived from.
const TAG: &[u8] = b"cuzk: random Groth16 parameters for tests and benchmarks, never for the chain";

/// The alpha every generated set uses (BLAKE2b-256 of [`TAG`], cut to 253 bits).
pub fn random_set_alpha() -> Fr {
    let h = blake2b_simd::Params::new().hash_length(32).hash(TAG);
    let mut b = [0u8; 32];
    b.copy_from_slice(h.as_bytes());
    b[31] &= 0x1f;
    Option::from(Fr::from_bytes_le(&b)).expect("253 bits are below the modulus")
}

/// `alpha_g1` of a generated set.
pub fn random_set_alpha_g1() -> G1Affine {
    (G1Projective::generator() * random_set_alpha()).to_affine()
}

/// Whether a verifying key is one of cuzk's generated (random) sets.
pub fn is_random_set(vk: &VerifyingKey<Bls12>) -> bool {
    vk.alpha_g1 == random_set_alpha_g1() && !bool::from(vk.alpha_g1.is_identity())
}
