//! SnapDeals through the engine, on a real 2KiB sector sealed and updated by filecoin-proofs:
//! its partition proofs made by filecoin-proofs (as a node makes them), the engine's proof
//! accepted by filecoin-proofs' `verify_empty_sector_update_proof` and byte-compatible with its
//! own prover's; changed commitments and every kind of bad input a clear error that leaves the
//! engine proving.

mod common;

use std::{sync::OnceLock, time::Duration};

use common::tools::fixture::{self, SnapSector};
use cuzk::{
    engine::{Config, Engine},
    porep::FixtureShape,
    snap::{SnapRequest, UpdateProof},
    Status,
};

/// One 2KiB sector of miner 1000, sealed and updated once per test process, with the update's
/// parameters (random, marked, for the test size).
fn sector() -> &'static SnapSector {
    static SECTOR: OnceLock<(tempfile::TempDir, SnapSector)> = OnceLock::new();
    &SECTOR
        .get_or_init(|| {
            common::init();
            let dir = tempfile::tempdir().unwrap();
            let mut spec = fixture::FixtureSpec::new(
                fixture::v1_1_proof(2048).unwrap(),
                FixtureShape::default(),
            );
            spec.sector_id = 7;
            spec.miner_id = 1000;
            spec.data_seed = 70;
            let s = fixture::snap_sector(&spec, 71, dir.path()).unwrap();
            fixture::ensure_snap_params(s.proof, &common::params_dir(), 0x5eed).unwrap();
            // filecoin-proofs' own prover over the same inputs, as a cross-check of the
            // fixture and the parameters.
            let theirs =
                filecoin_proofs_api::update::generate_empty_sector_update_proof_with_vanilla(
                    s.proof,
                    s.vanilla_proofs
                        .iter()
                        .map(|p| filecoin_proofs_api::PartitionProofBytes(p.clone()))
                        .collect(),
                    s.comm_r_old,
                    s.comm_r_new,
                    s.comm_d_new,
                )
                .unwrap();
            assert!(s.verify(&theirs.0).unwrap());
            (dir, s)
        })
        .1
}

fn engine() -> Engine {
    Engine::start(Config {
        params_dir: common::params_dir(),
        ..Config::default()
    })
    .unwrap()
}

fn prove(e: &Engine, req: &SnapRequest) -> cuzk::Result<Vec<u8>> {
    let id = e.submit_snap(req)?;
    e.await_job(id, Some(Duration::from_secs(600)))
        .map(|out| out.proof)
}

#[test]
fn snap_through_the_engine_is_accepted_by_filecoin_proofs() {
    let s = sector();
    let e = engine();
    let proof = prove(&e, &s.request(0)).unwrap();
    let partitions = cuzk::snap::partitions_of(s.proof);
    assert_eq!(proof.len(), partitions * cuzk::PROOF_BYTES);
    assert!(
        s.verify(&proof).unwrap(),
        "filecoin-proofs refused the engine's update proof"
    );
    // The proof binds the commitments: for another comm_d_new, or the old and new replicas
    // swapped, the verifier refuses it.
    let mut other = s.clone();
    other.comm_d_new = s.comm_r_old;
    other.comm_d_new[31] &= 0x3f;
    assert!(!other.verify(&proof).unwrap_or(false));
    let mut swapped = s.clone();
    std::mem::swap(&mut swapped.comm_r_old, &mut swapped.comm_r_new);
    assert!(!swapped.verify(&proof).unwrap_or(false));
    e.shutdown().unwrap();
}

#[test]
fn bad_snap_requests_are_clear_errors_and_the_engine_goes_on() {
    let s = sector();
    let e = engine();
    let expect = |req: SnapRequest, status: Status, says: &str| {
        let err = prove(&e, &req).unwrap_err();
        assert_eq!(err.status, status, "{}", err.message);
        assert!(
            err.message.contains(says),
            "{says:?} not in {:?}",
            err.message
        );
    };
    // Vanilla proofs made for other commitments: refused before any synthesis.
    let mut req = s.request(0);
    std::mem::swap(&mut req.comm_r_old, &mut req.comm_r_new);
    expect(req, Status::InvalidInput, "does not verify");
    let mut req = s.request(0);
    req.comm_d_new[0] ^= 1;
    expect(req, Status::InvalidInput, "does not verify");
    // A commitment that is no field element.
    let mut req = s.request(0);
    req.comm_r_new = [0xff; 32];
    expect(
        req,
        Status::InvalidArgument,
        "comm_r_new is not a field element",
    );
    // Truncated, malformed, missing or extra vanilla proofs.
    let mut req = s.request(0);
    let n = req.vanilla_proofs[0].len();
    req.vanilla_proofs[0].truncate(n / 2);
    expect(req, Status::InvalidInput, "vanilla proof 0 is not a");
    let mut req = s.request(0);
    req.vanilla_proofs[0] = vec![7; 40];
    expect(req, Status::InvalidInput, "vanilla proof 0");
    let mut req = s.request(0);
    req.vanilla_proofs.clear();
    expect(req, Status::InvalidInput, "vanilla proofs are needed");
    let mut req = s.request(0);
    req.vanilla_proofs.push(req.vanilla_proofs[0].clone());
    expect(req, Status::InvalidInput, "vanilla proofs are needed");
    // A proof type of another sector size: its vanilla proofs do not parse as that size's.
    let mut req = s.request(0);
    req.proof = UpdateProof::StackedDrg8MiBV1;
    let err = prove(&e, &req).unwrap_err();
    assert_eq!(err.status, Status::InvalidInput, "{}", err.message);
    // The engine still proves.
    let proof = prove(&e, &s.request(0)).unwrap();
    assert!(s.verify(&proof).unwrap());
    e.shutdown().unwrap();
}
