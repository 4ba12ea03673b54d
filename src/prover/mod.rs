//! The split Groth16 prover: synthesis into a [`ProvingAssignment`], then proving from it on
//! a [`ProverBackend`].

pub mod assignment;
pub mod cpu;
pub mod reference;

pub use assignment::{CircuitSize, ProvingAssignment};

use bellperson::groth16::{Parameters, Proof};
use blstrs::{Bls12, Scalar as Fr};

use crate::error::Result;

/// Time spent in the stages of one partition's proof, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// FFTs computing h.
    pub ntt_ms: f64,
    /// Multi-exponentiations.
    pub msm_ms: f64,
}

/// Something that turns one synthesized partition into a Groth16 proof.
pub trait ProverBackend: Send + Sync {
    /// Short name used in logs and timeline events ("cpu", "cuda:0", ...).
    fn name(&self) -> &'static str;

    /// Proves one assignment with the randomness `r`, `s`.
    fn prove(
        &self,
        asg: ProvingAssignment,
        params: &Parameters<Bls12>,
        r: Fr,
        s: Fr,
        times: &mut StageTimes,
    ) -> Result<Proof<Bls12>>;
}
