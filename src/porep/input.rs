//! C1 output parsing: filecoin-proofs-api's `SealCommitPhase1Output` as JSON, raw or wrapped in
//! lotus-bench's / Curio's `Commit2In` envelope, and the miner id → prover id rule.

use base64::Engine as _;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use serde::Deserialize;

use crate::error::{Error, Result};

/// lotus-bench's `Commit2In` (also what Curio sends to its proving daemon).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Commit2In {
    /// lotus-bench writes an int64; a sector number is an unsigned 64-bit value: read either.
    #[serde(rename = "SectorNum")]
    sector_num: i128,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// A parsed C1 output, plus what the envelope (if any) said about it.
pub struct ParsedC1 {
    pub c1: SealCommitPhase1Output,
    /// `SectorNum` from a `Commit2In` envelope.
    pub envelope_sector: Option<u64>,
}

fn looks_like_envelope(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(256)];
    head.windows(b"\"Phase1Out\"".len())
        .any(|w| w == b"\"Phase1Out\"")
        || head
            .windows(b"\"SectorNum\"".len())
            .any(|w| w == b"\"SectorNum\"")
}

fn parse_raw(bytes: &[u8]) -> Result<SealCommitPhase1Output> {
    serde_json::from_slice::<SealCommitPhase1Output>(bytes).map_err(|e| {
        Error::invalid_input(format!(
            "C1 output is not valid SealCommitPhase1Output JSON: {e}"
        ))
    })
}

/// Parses C1 output bytes: raw `SealCommitPhase1Output` JSON (as written by serde or by Go's
/// encoding/json) or a `Commit2In` envelope `{"SectorNum","Phase1Out"(base64),"SectorSize"}`.
pub fn parse_c1(bytes: &[u8]) -> Result<ParsedC1> {
    if bytes.is_empty() {
        return Err(Error::invalid_input("C1 output is empty"));
    }
    if looks_like_envelope(bytes) {
        let env: Commit2In = serde_json::from_slice(bytes)
            .map_err(|e| Error::invalid_input(format!("Commit2In envelope is malformed: {e}")))?;
        let inner = base64::engine::general_purpose::STANDARD
            .decode(env.phase1_out.as_bytes())
            .map_err(|e| Error::invalid_input(format!("Commit2In.Phase1Out is not base64: {e}")))?;
        let c1 = parse_raw(&inner)?;
        let size = u64::from(c1.registered_proof.sector_size());
        if env.sector_size != size {
            return Err(Error::invalid_input(format!(
                "Commit2In.SectorSize is {} but the C1 output is for {} ({size} bytes)",
                env.sector_size,
                proof_name(&c1)
            )));
        }
        let sector = u64::try_from(env.sector_num).map_err(|_| {
            Error::invalid_input(format!(
                "Commit2In.SectorNum {} is not a sector number (0 to 2^64-1)",
                env.sector_num
            ))
        })?;
        return Ok(ParsedC1 {
            c1,
            envelope_sector: Some(sector),
        });
    }
    Ok(ParsedC1 {
        c1: parse_raw(bytes)?,
        envelope_sector: None,
    })
}

/// The registered proof's name as it appears in the JSON.
pub fn proof_name(c1: &SealCommitPhase1Output) -> String {
    serde_json::to_value(c1.registered_proof)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{:?}", c1.registered_proof))
}

/// The prover id Lotus and Curio derive from a miner actor id: the unsigned LEB128 varint of
/// the id (the payload of its ID address), zero-padded to 32 bytes.
pub fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// Parses a prover id given as 64 hex digits.
pub fn parse_prover_id_hex(s: &str) -> Result<[u8; 32]> {
    let bytes = hex::decode(s.trim().trim_start_matches("0x"))
        .map_err(|e| Error::invalid_argument(format!("prover id is not hex: {e}")))?;
    bytes.try_into().map_err(|v: Vec<u8>| {
        Error::invalid_argument(format!("prover id must be 32 bytes, got {}", v.len()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_matches_filecoin_ffi() {
        assert_eq!(prover_id_from_miner(42)[..2], [0x2a, 0]);
        assert_eq!(prover_id_from_miner(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id_from_miner(0)[..2], [0, 0]);
        let max = prover_id_from_miner(u64::MAX);
        assert_eq!(
            max[..10],
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        assert!(max[10..].iter().all(|b| *b == 0));
    }

    #[test]
    fn garbage_is_an_error() {
        for bad in [
            &b""[..],
            b"{",
            b"null",
            b"[]",
            b"{\"registered_proof\":\"Nope\"}",
            b"\xff\xfe",
        ] {
            let e = parse_c1(bad).err().expect("must fail");
            assert_eq!(e.status, crate::error::Status::InvalidInput, "{bad:?}: {e}");
        }
        let e = parse_c1(br#"{"SectorNum":1,"Phase1Out":"!!!","SectorSize":2048}"#)
            .err()
            .unwrap();
        assert!(e.message.contains("base64"), "{e}");
        let e = parse_c1(br#"{"SectorNum":1,"Phase1Out":"e30=","SectorSize":2048}"#)
            .err()
            .unwrap();
        assert!(e.message.contains("SealCommitPhase1Output"), "{e}");
    }

    #[test]
    fn hex_prover_id() {
        let id = parse_prover_id_hex(&"01".repeat(32)).unwrap();
        assert_eq!(id, [1u8; 32]);
        assert!(parse_prover_id_hex("0102").is_err());
        assert!(parse_prover_id_hex("zz").is_err());
    }
}
