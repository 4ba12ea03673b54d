//! filecoin-proofs' own verifier for a C2 proof, the one Lotus and Curio run.

use filecoin_proofs_api::{seal, SectorId};

use crate::error::{Error, Result, Status};

/// filecoin-proofs' `verify_seal` for a C1 output's sector and a proof. Reads the `.vk` from
/// `FIL_PROOFS_PARAMETER_CACHE` (and for non-interactive PoRep, whose proof is a SnarkPack
/// aggregate, the SRS). A proof that is not a whole number of well-formed Groth16 proofs (not
/// a well-formed aggregate) is invalid (`Ok(false)`), not an error.
pub fn verify_seal(
    c1_json: &[u8],
    prover_id: [u8; 32],
    sector_id: u64,
    proof: &[u8],
) -> Result<bool> {
    let parsed = super::parse_c1(c1_json)?;
    let c1 = parsed.c1;
    // A proof that is not a whole number of well-formed Groth16 proofs (for non-interactive
    // PoRep: not a well-formed SnarkPack aggregate of at least two) is simply invalid; errors
    // past this point (missing verifying key or SRS, ...) are real errors.
    if super::is_non_interactive(c1.registered_proof) {
        use bellperson::groth16::aggregate::AggregateProof;
        match AggregateProof::<blstrs::Bls12>::read(std::io::Cursor::new(proof)) {
            Ok(a) if a.tmipp.gipa.nproofs >= 2 && a.tmipp.gipa.nproofs.is_power_of_two() => {}
            _ => return Ok(false),
        }
    } else {
        if proof.is_empty() || proof.len() % crate::PROOF_BYTES != 0 {
            return Ok(false);
        }
        for chunk in proof.chunks(crate::PROOF_BYTES) {
            if bellperson::groth16::Proof::<blstrs::Bls12>::read(chunk).is_err() {
                return Ok(false);
            }
        }
    }
    seal::verify_seal(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        prover_id,
        SectorId::from(sector_id),
        c1.ticket,
        c1.seed,
        proof,
    )
    .map_err(|e| Error::from_anyhow(Status::Params, "filecoin-proofs verify_seal", e))
}
