//! Non-interactive PoRep's last step (FIP-0090): a sector's partition proofs aggregated by
//! SnarkPack v2 into the one proof `SealCommitPhase2` returns, as filecoin-proofs'
//! `seal_commit_phase2` makes it (its own `aggregate_seal_commit_proofs`, on the CPU), then
//! checked by its `verify_seal` unless the self-check is off.
//!
//! The SnarkPack SRS (`v28-fil-inner-product-v1.srs`, from the Filecoin/Zcash powers of tau)
//! is read where filecoin-proofs reads it: `FIL_PROOFS_PARAMETER_CACHE`. For tests and
//! benchmarks [`write_random_srs`] makes one in its format, marked as cuzk's random Groth16
//! sets are (its `g^alpha` is `ALPHA · G1` for [`crate::params::random_set_alpha`]),
//! and refused for production sector sizes unless random parameters are allowed.

use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use filecoin_proofs_api::{
    seal::{self, SealCommitPhase1Output, SealCommitPhase2Output},
    RegisteredAggregationProof, RegisteredSealProof, SectorId,
};
use group::{prime::PrimeCurveAffine, Curve, Group};
use rayon::prelude::*;

use crate::{
    error::{catch, Error, Result, Status},
    params::{random_set_alpha, random_set_alpha_g1},
};

/// What a non-interactive PoRep job keeps for its aggregation: the sector's commitments and
/// randomness, as `verify_seal` takes them.
#[derive(Clone, Debug)]
pub struct NiSeal {
    proof: RegisteredSealProof,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    ticket: [u8; 32],
    seed: [u8; 32],
    prover_id: [u8; 32],
    sector_id: u64,
}

impl NiSeal {
    /// The aggregation of a validated C1 output's sector.
    pub(crate) fn of(c1: &SealCommitPhase1Output, prover_id: [u8; 32], sector_id: u64) -> Self {
        NiSeal {
            proof: c1.registered_proof,
            comm_r: c1.comm_r,
            comm_d: c1.comm_d,
            ticket: c1.ticket,
            seed: c1.seed,
            prover_id,
            sector_id,
        }
    }

    pub fn proof_type(&self) -> RegisteredSealProof {
        self.proof
    }

    /// SnarkPack v2 over the sector's partition proofs (`partitions × 192` bytes, in partition
    /// order), padded to a power of two as filecoin-proofs pads them; then, where `self_check`,
    /// filecoin-proofs' `verify_seal` over the result (VERIFY_FAILED where it says no). PARAMS
    /// where the SRS is missing, unreadable, or random for a production size without
    /// `allow_random`.
    pub fn aggregate(
        &self,
        circuit_proofs: &[u8],
        allow_random: bool,
        self_check: bool,
    ) -> Result<Vec<u8>> {
        check_srs(self.proof, allow_random)?;
        let outputs = [SealCommitPhase2Output {
            proof: circuit_proofs.to_vec(),
        }];
        let aggregate = catch("SnarkPack aggregation", Status::Proving, || {
            seal::aggregate_seal_commit_proofs(
                self.proof,
                RegisteredAggregationProof::SnarkPackV2,
                &[self.comm_r],
                &[self.seed],
                &outputs,
            )
            .map_err(|e| {
                Error::from_anyhow(
                    Status::Proving,
                    "filecoin-proofs aggregate_seal_commit_proofs",
                    e,
                )
            })
        })?;
        if self_check {
            let ok = catch("verify_seal of the aggregate", Status::Params, || {
                seal::verify_seal(
                    self.proof,
                    self.comm_r,
                    self.comm_d,
                    self.prover_id,
                    SectorId::from(self.sector_id),
                    self.ticket,
                    self.seed,
                    &aggregate,
                )
                .map_err(|e| Error::from_anyhow(Status::Params, "filecoin-proofs verify_seal", e))
            })?;
            if !ok {
                return Err(Error::new(
                    Status::VerifyFailed,
                    format!(
                        "self-check failed: the SnarkPack aggregate of sector {}'s {} partition \
                         proofs does not verify (verify_seal)",
                        self.sector_id,
                        circuit_proofs.len() / crate::PROOF_BYTES
                    ),
                ));
            }
        }
        Ok(aggregate)
    }
}

/// One sector's C2 output (interactive: its `partitions × 192` bytes; non-interactive: its
/// circuit proofs, unaggregated) with what checking an aggregate of it needs.
#[derive(Clone, Debug)]
pub struct SealedSector {
    pub sector_id: u64,
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub ticket: [u8; 32],
    /// The interactive seed (any value for non-interactive PoRep, which has none).
    pub seed: [u8; 32],
    pub proof: Vec<u8>,
}

/// filecoin-ffi's `aggregate_seal_proofs`: several sectors' C2 outputs of one proof type and
/// one miner aggregated by SnarkPack (`version`: v1 or v2), padded to a power of two, with
/// filecoin-proofs' own `aggregate_seal_commit_proofs` on the CPU (byte for byte its result);
/// then, where `self_check`, checked by its `verify_aggregate_seal_commit_proofs` against each
/// sector's public inputs (`get_seal_inputs`): VERIFY_FAILED where it says no. INVALID_INPUT
/// for no sectors, a proof of the wrong length, or a non-interactive batch outside FIP-0090's
/// 2 to 65 sectors; PARAMS where the SRS is missing or random for a production size without
/// `allow_random`.
pub fn aggregate_seal_proofs(
    proof: RegisteredSealProof,
    version: RegisteredAggregationProof,
    prover_id: [u8; 32],
    sectors: &[SealedSector],
    allow_random: bool,
    self_check: bool,
) -> Result<Vec<u8>> {
    let shape = super::shape_for(proof, super::FixtureShape::default())?;
    let ni = super::is_non_interactive(proof);
    if sectors.is_empty() || (ni && !(2..=65).contains(&sectors.len())) {
        return Err(Error::invalid_input(format!(
            "{} sectors of {proof:?} to aggregate: {}",
            sectors.len(),
            if ni {
                "FIP-0090 aggregates 2 to 65"
            } else {
                "at least one is needed"
            }
        )));
    }
    let want = shape.partitions * crate::PROOF_BYTES;
    if let Some((i, s)) = sectors
        .iter()
        .enumerate()
        .find(|(_, s)| s.proof.len() != want)
    {
        return Err(Error::invalid_input(format!(
            "sector {} (#{i}) has {} proof bytes; {proof:?} has {} partitions, {want} bytes",
            s.sector_id,
            s.proof.len(),
            shape.partitions
        )));
    }
    check_srs(proof, allow_random)?;
    let comm_rs: Vec<[u8; 32]> = sectors.iter().map(|s| s.comm_r).collect();
    let seeds: Vec<[u8; 32]> = sectors.iter().map(|s| s.seed).collect();
    let outputs: Vec<SealCommitPhase2Output> = sectors
        .iter()
        .map(|s| SealCommitPhase2Output {
            proof: s.proof.clone(),
        })
        .collect();
    let aggregate = catch("SnarkPack aggregation", Status::Proving, || {
        seal::aggregate_seal_commit_proofs(proof, version, &comm_rs, &seeds, &outputs).map_err(
            |e| {
                Error::from_anyhow(
                    Status::Proving,
                    "filecoin-proofs aggregate_seal_commit_proofs",
                    e,
                )
            },
        )
    })?;
    if self_check {
        check_aggregate(proof, version, prover_id, sectors, &aggregate)?;
    }
    Ok(aggregate)
}

/// filecoin-proofs' `verify_aggregate_seal_commit_proofs` of `aggregate` against each sector's
/// public inputs (`get_seal_inputs`): VERIFY_FAILED where it says no.
fn check_aggregate(
    proof: RegisteredSealProof,
    version: RegisteredAggregationProof,
    prover_id: [u8; 32],
    sectors: &[SealedSector],
    aggregate: &[u8],
) -> Result<()> {
    let comm_rs: Vec<[u8; 32]> = sectors.iter().map(|s| s.comm_r).collect();
    let seeds: Vec<[u8; 32]> = sectors.iter().map(|s| s.seed).collect();
    let anyhow = |what: &'static str, status| move |e| Error::from_anyhow(status, what, e);
    let ok = catch(
        "verify_aggregate_seal_commit_proofs",
        Status::Params,
        || {
            let mut inputs = Vec::new();
            for s in sectors {
                let sector = SectorId::from(s.sector_id);
                inputs.extend(
                    seal::get_seal_inputs(
                        proof, s.comm_r, s.comm_d, prover_id, sector, s.ticket, s.seed,
                    )
                    .map_err(anyhow("get_seal_inputs", Status::InvalidInput))?,
                );
            }
            let bytes = aggregate.to_vec();
            seal::verify_aggregate_seal_commit_proofs(
                proof, version, bytes, &comm_rs, &seeds, inputs,
            )
            .map_err(anyhow(
                "filecoin-proofs verify_aggregate_seal_commit_proofs",
                Status::Params,
            ))
        },
    )?;
    if !ok {
        return Err(Error::new(
            Status::VerifyFailed,
            format!(
                "self-check failed: the aggregate of {} sectors' proofs does not verify (a proof \
                 is not its sector's, or its inputs were given wrong)",
                sectors.len()
            ),
        ));
    }
    Ok(())
}

/// Where filecoin-proofs reads the SnarkPack SRS: `v28-fil-inner-product-v1.srs` in
/// `FIL_PROOFS_PARAMETER_CACHE` (read by filecoin-proofs once per process).
pub fn srs_path() -> PathBuf {
    storage_proofs_core::parameter_cache::parameter_cache_srs_key_path("", 0)
}

/// Bytes of a compressed G1 point in the SRS file.
const G1_BYTES: usize = 48;

/// Whether the SRS file at `path` is one of cuzk's random ones (its second `g^alpha` power is
/// the mark). Reads 100 bytes.
pub fn is_random_srs(path: &Path) -> Result<bool> {
    let mut head = [0u8; 4 + 2 * G1_BYTES];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .map_err(|e| Error::params(format!("reading the SnarkPack SRS {}: {e}", path.display())))?;
    let mark = random_set_alpha_g1().to_compressed();
    Ok(head[4 + G1_BYTES..] == mark[..])
}

/// The SRS filecoin-proofs will read is there, and random only where allowed.
fn check_srs(proof: RegisteredSealProof, allow_random: bool) -> Result<()> {
    let path = srs_path();
    if !path.exists() {
        return Err(Error::params(format!(
            "no SnarkPack SRS at {}: non-interactive PoRep aggregates its partition proofs with \
             it; fetch it with the parameters (srs-inner-product.json), or for tests make a \
             random one with `cuzk params gen --kind srs`",
            path.display()
        )));
    }
    let production = super::is_production_size(u64::from(proof.sector_size()));
    if production && !allow_random && is_random_srs(&path)? {
        return Err(Error::params(format!(
            "{} is a random SnarkPack SRS (cuzk params gen, for tests and benchmarks): its \
             aggregates of {proof:?} would never verify on chain; fetch the real one, or set \
             CUZK_ALLOW_RANDOM_PARAMS=1 for a benchmark",
            path.display()
        )));
    }
    Ok(())
}

/// `g · s^i` for `i < n`, affine.
fn powers<G: Group<Scalar = Fr> + Curve + Send + Sync>(g: G, s: Fr, n: usize) -> Vec<G::AffineRepr>
where
    G::AffineRepr: Send + Default + Copy,
{
    let mut scalars = Vec::with_capacity(n);
    let mut p = Fr::ONE;
    for _ in 0..n {
        scalars.push(p);
        p *= s;
    }
    let points: Vec<G> = scalars.par_iter().map(|x| g * x).collect();
    let mut out = vec![G::AffineRepr::default(); n];
    G::batch_normalize(&points, &mut out);
    out
}

fn write_g1<W: Write>(w: &mut W, v: &[G1Affine]) -> std::io::Result<()> {
    w.write_all(&(v.len() as u32).to_be_bytes())?;
    v.iter().try_for_each(|p| w.write_all(&p.to_compressed()))
}

fn write_g2<W: Write>(w: &mut W, v: &[G2Affine]) -> std::io::Result<()> {
    w.write_all(&(v.len() as u32).to_be_bytes())?;
    v.iter().try_for_each(|p| w.write_all(&p.to_compressed()))
}

/// Writes a random SnarkPack SRS for aggregating up to `max_proofs` proofs (rounded up to a
/// power of two) at `path`, in the format filecoin-proofs reads (bellperson's `GenericSRS`:
/// `g^alpha^i`, `g^beta^i`, `h^alpha^i`, `h^beta^i` for `i < 2n`, each a length then compressed
/// points). Its alpha is the random-set mark, its beta random. Never overwrites a file: an
/// existing one is an error. Returns the bytes written.
pub fn write_random_srs(path: &Path, max_proofs: usize) -> Result<u64> {
    if !(2..=1 << 16).contains(&max_proofs) {
        return Err(Error::invalid_argument(format!(
            "a SnarkPack SRS for {max_proofs} proofs: 2 to 65536 are supported"
        )));
    }
    if path.exists() {
        return Err(Error::params(format!(
            "refusing to overwrite {}: move it away first",
            path.display()
        )));
    }
    let n = 2 * max_proofs.next_power_of_two();
    let alpha = random_set_alpha();
    let beta = Fr::random(rand::rngs::OsRng);
    let (g, h) = (G1Projective::generator(), G2Projective::generator());
    let g_alpha = powers(g, alpha, n);
    let g_beta = powers(g, beta, n);
    let h_alpha = powers(h, alpha, n);
    let h_beta = powers(h, beta, n);
    debug_assert!(g_alpha[1] == random_set_alpha_g1() && bool::from(!g_alpha[0].is_identity()));
    let io = |e: std::io::Error| Error::params(format!("writing {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension("srs.tmp");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(io)?);
    // bellperson's GenericSRS::write order.
    write_g1(&mut w, &g_alpha)
        .and_then(|_| write_g1(&mut w, &g_beta))
        .and_then(|_| write_g2(&mut w, &h_alpha))
        .and_then(|_| write_g2(&mut w, &h_beta))
        .and_then(|_| w.flush())
        .map_err(io)?;
    drop(w);
    if path.exists() {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::params(format!(
            "refusing to overwrite {}: it appeared while this one was made",
            path.display()
        )));
    }
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(std::fs::metadata(path).map_err(io)?.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::groth16::aggregate::GenericSRS;

    #[test]
    fn a_random_srs_is_read_by_bellperson_and_marked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v28-fil-inner-product-v1.srs");
        let bytes = write_random_srs(&path, 13).unwrap();
        let srs =
            GenericSRS::<blstrs::Bls12>::read(&mut std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(srs.g_alpha_powers.len(), 32);
        assert_eq!(srs.h_beta_powers.len(), 32);
        assert_eq!(srs.h_alpha_powers[0], G2Affine::generator());
        let mut again = Vec::new();
        srs.write(&mut again).unwrap();
        assert_eq!(again.len() as u64, bytes);
        assert!(is_random_srs(&path).unwrap());
        // It specializes for 16 proofs (2KiB non-interactive PoRep's 13, padded).
        let (pk, vk) = srs.specialize(16);
        assert_eq!(vk.n, 16);
        assert_eq!(pk.n, 16);
        // Never overwritten.
        assert_eq!(
            write_random_srs(&path, 13).unwrap_err().status,
            Status::Params
        );
        // Another SRS (bellperson's own random one) is not marked.
        let other = dir.path().join("other.srs");
        let fake = bellperson::groth16::aggregate::setup_fake_srs::<blstrs::Bls12, _>(
            &mut rand::rngs::OsRng,
            16,
        );
        fake.write(&mut std::fs::File::create(&other).unwrap())
            .unwrap();
        assert!(!is_random_srs(&other).unwrap());
    }
}
