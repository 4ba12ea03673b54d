//! Tools of the `cuzk` command line and of the tests, outside the library that hosts link:
//! test fixtures (small sealed sectors, random parameters, filecoin-proofs' own C2), timeline
//! analysis and the SVG waterfall, the prover call benchmark and the device self-test.
//!
//! A crate of the workspace beside the library: the CLI (`cli/`) and the library's integration
//! tests (`tests/`) depend on it. It uses cuzk only through the library's public API.

pub mod analysis;
pub mod calls;
pub mod fixture;
pub mod paramgen;
pub mod post_fixture;
pub mod progress;
pub mod selftest;
pub mod snap_fixture;
pub mod synth;
pub mod synthetic;

/// A proof's bytes as filecoin-proofs writes them (192 per partition).
pub fn proof_bytes(p: &bellperson::groth16::Proof<blstrs::Bls12>) -> cuzk::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(cuzk::PROOF_BYTES);
    p.write(&mut bytes)
        .map_err(|e| cuzk::Error::internal(format!("serializing a proof: {e}")))?;
    Ok(bytes)
}
