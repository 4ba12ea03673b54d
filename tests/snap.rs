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
/// parameters (random, marked, for the test size). (filecoin-proofs' own prover is not run
/// over it: a 2KiB update circuit has 1.7M constraints, a minute of a CI core; every engine
/// proof is checked by filecoin-proofs' verifier instead.)
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

/// The C ABI as a C program calls it: `cuzk_generate_update` (the blocking drop-in) and
/// `cuzk_update_submit` then `cuzk_await`, their proofs accepted by filecoin-proofs; bad
/// arguments a status and a message, nothing written.
#[test]
fn snap_through_the_c_abi_is_accepted_by_filecoin_proofs() {
    use cuzk::ffi::{
        cuzk_await, cuzk_bytes, cuzk_bytes_free, cuzk_error, cuzk_error_free, cuzk_generate_update,
        cuzk_slice, cuzk_update_request, cuzk_update_request_default, cuzk_update_submit,
    };
    let s = sector();
    let slices: Vec<cuzk_slice> = s
        .vanilla_proofs
        .iter()
        .map(|b| cuzk_slice {
            ptr: b.as_ptr(),
            len: b.len(),
        })
        .collect();
    let fresh = || {
        let mut req = std::mem::MaybeUninit::<cuzk_update_request>::uninit();
        cuzk_update_request_default(req.as_mut_ptr());
        // SAFETY: filled by cuzk_update_request_default.
        let mut req = unsafe { req.assume_init() };
        req.registered_proof = 0; // abi.RegisteredUpdateProof_StackedDrg2KiBV1
        req.comm_r_old = s.comm_r_old;
        req.comm_r_new = s.comm_r_new;
        req.comm_d_new = s.comm_d_new;
        req.vanilla_proofs = slices.as_ptr();
        req.vanilla_count = slices.len();
        req
    };
    let mut err = cuzk_error {
        status: Status::Ok,
        message: std::ptr::null_mut(),
    };
    let mut out = cuzk_bytes {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    let take = |out: &mut cuzk_bytes| {
        // SAFETY: written by the library on success: `len` bytes at `ptr`.
        let v = unsafe { std::slice::from_raw_parts(out.ptr, out.len) }.to_vec();
        cuzk_bytes_free(out);
        v
    };
    let req = fresh();
    assert_eq!(cuzk_generate_update(&req, &mut out, &mut err), Status::Ok);
    assert!(
        s.verify(&take(&mut out)).unwrap(),
        "filecoin-proofs refused cuzk_generate_update's proof"
    );
    let mut id = 0u64;
    assert_eq!(cuzk_update_submit(&req, &mut id, &mut err), Status::Ok);
    assert_eq!(cuzk_await(id, -1, &mut out, &mut err), Status::Ok);
    assert!(
        s.verify(&take(&mut out)).unwrap(),
        "filecoin-proofs refused the awaited proof"
    );

    let mut bad: Vec<(&str, cuzk_update_request, Status)> = Vec::new();
    let mut q = fresh();
    q.registered_proof = 5;
    bad.push(("an unknown proof type", q, Status::InvalidArgument));
    let mut q = fresh();
    q.vanilla_proofs = std::ptr::null();
    bad.push(("NULL vanilla proofs", q, Status::InvalidArgument));
    let mut q = fresh();
    q.struct_size = 8;
    bad.push(("a wrong struct_size", q, Status::InvalidArgument));
    let mut q = fresh();
    q.comm_d_new = s.comm_r_new;
    bad.push(("another comm_d_new", q, Status::InvalidInput));
    for (what, q, want) in bad {
        let st = cuzk_generate_update(&q, &mut out, &mut err);
        assert_eq!((st, err.status), (want, want), "{what}");
        assert!(!err.message.is_null(), "{what}: no message");
        assert!(out.ptr.is_null(), "{what}: a proof was written");
        cuzk_error_free(&mut err);
    }
}

/// `cuzk fixture --kind snap`: partition proofs of a sector update without sector data, in
/// each size's real tree shapes, pass filecoin-proofs' vanilla verification (the engine's
/// validation) and fail it when a commitment or a path changes; saved and loaded, the same
/// job; at 2KiB the engine proves it and filecoin-proofs' verifier accepts the proof.
#[test]
fn synthetic_updates_pass_filecoin_proofs_vanilla_checks_and_prove() {
    use common::tools::snap_fixture::{snap_fixture, SnapFixture, SnapFixtureSpec};
    common::init();
    for proof in [UpdateProof::StackedDrg2KiBV1, UpdateProof::StackedDrg8MiBV1] {
        let f = snap_fixture(&SnapFixtureSpec { proof, seed: 5 }).unwrap();
        assert_eq!(f.vanilla_proofs.len(), cuzk::snap::partitions_of(proof));
        let req = f.request(0).unwrap();
        cuzk::snap::prepare(&req).unwrap_or_else(|e| panic!("{proof:?}: {}", e.message));
        let refused = |r: SnapRequest, what: &str| {
            let e = cuzk::snap::prepare(&r).err();
            assert_eq!(
                e.map(|e| e.status),
                Some(Status::InvalidInput),
                "{proof:?}: {what}"
            );
        };
        let mut r = req.clone();
        r.comm_r_new[3] ^= 1;
        refused(r, "another comm_r_new");
        let mut r = req.clone();
        r.comm_d_new[3] ^= 1;
        refused(r, "another comm_d_new");
        let mut r = req.clone();
        let last = r.vanilla_proofs.len() - 1;
        let bytes = &mut r.vanilla_proofs[last];
        let at = bytes.len() - 40;
        bytes[at] ^= 1;
        refused(r, "a changed path");
        let other = snap_fixture(&SnapFixtureSpec { proof, seed: 6 }).unwrap();
        assert_ne!(other.comm_r_new, f.comm_r_new);

        let dir = tempfile::tempdir().unwrap();
        f.save(dir.path()).unwrap();
        let back = SnapFixture::load(dir.path()).unwrap();
        assert_eq!(back.vanilla_proofs, f.vanilla_proofs);
        assert_eq!(back.comm_r_new, f.comm_r_new);
        std::fs::write(dir.path().join("vanilla.bin"), [9, 0, 0, 0, 1]).unwrap();
        let e = SnapFixture::load(dir.path()).unwrap_err();
        assert_eq!(e.status, Status::InvalidInput);
    }
    // Proved by the engine at 2KiB, accepted by filecoin-proofs.
    let s = sector(); // the update's parameters
    let f = snap_fixture(&SnapFixtureSpec {
        proof: s.proof,
        seed: 9,
    })
    .unwrap();
    let req = f.request(0).unwrap();
    let e = engine();
    let proof = prove(&e, &req).unwrap();
    let ok = filecoin_proofs_api::update::verify_empty_sector_update_proof(
        req.proof,
        &proof,
        req.comm_r_old,
        req.comm_r_new,
        req.comm_d_new,
    )
    .unwrap();
    assert!(
        ok,
        "filecoin-proofs refused the proof of a synthetic update"
    );
    e.shutdown().unwrap();
}
