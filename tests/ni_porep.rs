//! Non-interactive PoRep (FIP-0090) on a real 2KiB sector sealed by filecoin-proofs (registered
//! proof 15: 13 partitions of the interactive circuit): its C2 through the engine is the
//! partition proofs' SnarkPack v2 aggregate, accepted by filecoin-proofs' `verify_seal` (with
//! real proofs: an ignored test, 15 minutes of a 2-core CPU); its partitions' public inputs are
//! filecoin-proofs'; its circuit proofs come back unaggregated; changed inputs and bad input
//! are refused.

mod common;

use std::sync::{Arc, OnceLock};

use common::{
    sim::{SimGpus, SimState},
    tools::fixture::{self, FixtureSpec},
};
use cuzk::{
    engine::{Config, Engine, JobRequest},
    porep::{self, aggregate, FixtureShape, SealProof},
    prover::ProverBackend,
    Status,
};
use filecoin_proofs_api::seal;

const NI: SealProof = SealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep;

/// The sealed NI sector (C1 JSON) and its parameters, and a random SnarkPack SRS where there
/// is none: made once per process (the tests run in parallel).
fn ni_fixture() -> (FixtureSpec, Vec<u8>) {
    static FIXTURE: OnceLock<(FixtureSpec, Vec<u8>)> = OnceLock::new();
    common::init();
    FIXTURE
        .get_or_init(|| {
            let path = aggregate::srs_path();
            std::fs::create_dir_all(common::params_dir()).unwrap();
            if !path.exists() {
                aggregate::write_random_srs(&path, 16).unwrap();
            }
            let spec = FixtureSpec::new(NI, FixtureShape::default());
            let rep = fixture::setup(&spec, &common::params_dir()).expect("NI fixture setup");
            let c1 = std::fs::read(&rep.c1_path).unwrap();
            (spec, c1)
        })
        .clone()
}

fn req(c1: &[u8], spec: &FixtureSpec) -> JobRequest {
    JobRequest {
        c1: c1.to_vec(),
        sector_id: spec.sector_id,
        prover_id: spec.prover_id(),
        priority: 0,
        fixture: FixtureShape::default(),
    }
}

fn engine(self_check: bool, backends: Vec<Box<dyn ProverBackend>>) -> Engine {
    let cfg = Config {
        params_dir: common::params_dir(),
        self_check,
        ..Config::default()
    };
    if backends.is_empty() {
        Engine::start(cfg)
    } else {
        Engine::start_with_backends(cfg, backends)
    }
    .unwrap()
}

/// The whole of it with real proofs: 13 partitions of 2.7M constraints each, about 15 minutes
/// of a 2-core CPU (seconds on a GPU), so out of `make test`; run it with
/// `cargo test --release --test ni_porep -- --ignored` (or `make test-ni`).
#[test]
#[ignore = "15 minutes of a 2-core CPU: make test-ni"]
fn a_2kib_ni_sector_proves_and_filecoin_proofs_verifies_its_aggregate() {
    let (spec, c1) = ni_fixture();
    let (pid, sid) = (spec.prover_id(), spec.sector_id);
    let e = engine(true, vec![]);
    let id = e.submit(req(&c1, &spec)).unwrap();
    let out = e
        .await_job(id, Some(std::time::Duration::from_secs(3600)))
        .unwrap();
    assert_eq!(out.partitions.len(), 13);
    assert!(out.verified && out.aggregate_ms > 0.0, "{out:?}");
    assert!(porep::verify::verify_seal(&c1, pid, sid, &out.proof).unwrap());
    // Another sector, another miner, or a changed byte: refused.
    for (p, s) in [(pid, sid + 1), (porep::prover_id_from_miner(1001), sid)] {
        assert!(!matches!(
            porep::verify::verify_seal(&c1, p, s, &out.proof),
            Ok(true)
        ));
    }
    let mut bad = out.proof.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 1;
    assert!(!matches!(
        porep::verify::verify_seal(&c1, pid, sid, &bad),
        Ok(true)
    ));
    e.shutdown().unwrap();
}

/// The engine's side of non-interactive PoRep without the CPU's 15 minutes: simulated provers
/// give dummy proofs (self-check off), and the job's proof is still their SnarkPack v2
/// aggregate, of the 13 partitions padded to 16, made by filecoin-proofs' aggregation off the
/// provers' threads (and, being of dummy proofs, refused by verify_seal). The circuit proofs
/// come back as 13 × 192 bytes, not aggregated, with or without the prover id. Each
/// partition's public inputs are filecoin-proofs' own (`get_seal_inputs`): the challenges are
/// derived the non-interactive way.
#[test]
fn an_ni_job_is_aggregated_and_its_circuit_proofs_are_not() {
    use bellperson::groth16::aggregate::AggregateProof;
    let (spec, c1) = ni_fixture();
    let (pid, sid) = (spec.prover_id(), spec.sector_id);
    let parsed: seal::SealCommitPhase1Output = serde_json::from_slice(&c1).unwrap();
    let theirs = seal::get_seal_inputs(
        NI,
        parsed.comm_r,
        parsed.comm_d,
        pid,
        sid.into(),
        parsed.ticket,
        parsed.seed,
    )
    .unwrap();
    let job = porep::prepare(parsed, pid, sid, FixtureShape::default()).unwrap();
    assert!(job.aggregate.is_some());
    assert_eq!(theirs.len(), 13);
    for (k, inputs) in theirs.iter().enumerate() {
        assert_eq!(
            &job.circuits.public_inputs(k).unwrap(),
            inputs,
            "partition {k}"
        );
    }

    let sim = Arc::new(SimState::dummy(1, vec![]));
    let e = engine(false, vec![Box::new(SimGpus(sim))]);
    let id = e.submit(req(&c1, &spec)).unwrap();
    let out = e.await_job(id, common::JOB_DEADLINE).unwrap();
    assert_eq!(out.partitions.len(), 13);
    assert!(out.aggregate_ms > 0.0, "{out:?}");
    let agg = AggregateProof::<blstrs::Bls12>::read(std::io::Cursor::new(&out.proof)).unwrap();
    assert_eq!(agg.tmipp.gipa.nproofs, 16);
    assert!(!porep::verify::verify_seal(&c1, pid, sid, &out.proof).unwrap());

    for check_replica in [true, false] {
        let mut r = req(&c1, &spec);
        if !check_replica {
            r.prover_id = [0; 32];
        }
        let id = e.submit_circuit_proofs(r, check_replica).unwrap();
        let raw = e.await_job(id, common::JOB_DEADLINE).unwrap();
        assert_eq!(raw.proof.len(), 13 * cuzk::PROOF_BYTES);
        assert_eq!(raw.aggregate_ms, 0.0);
    }
    // With the check, a prover id that is not the sector's is refused.
    let mut r = req(&c1, &spec);
    r.prover_id = porep::prover_id_from_miner(1001);
    let err = e.submit_circuit_proofs(r, true).unwrap_err();
    assert_eq!(err.status, Status::InvalidInput, "{err}");
    e.shutdown().unwrap();
}

#[test]
fn bad_ni_input_is_a_clear_error() {
    let (spec, c1) = ni_fixture();
    let e = engine(true, vec![]);
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_slice(&c1).unwrap();
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    };
    let check = |bytes: Vec<u8>, status: Status, needle: &str| {
        let mut r = req(&bytes, &spec);
        r.c1 = bytes;
        let err = e.submit(r).unwrap_err();
        assert_eq!(err.status, status, "{err}");
        assert!(err.message.contains(needle), "{needle:?} not in {err}");
    };
    // A partition missing, or one too many.
    check(
        edit(&|v| {
            v["vanilla_proofs"]["StackedDrg2KiBV1"]
                .as_array_mut()
                .unwrap()
                .pop();
        }),
        Status::InvalidInput,
        "needs 13",
    );
    // Relabelled as interactive: one partition expected.
    check(
        edit(&|v| v["registered_proof"] = "StackedDrg2KiBV1_1".into()),
        Status::InvalidInput,
        "needs 1",
    );
    // A changed comm_d: the replica id the verifier derives is another.
    check(
        edit(&|v| v["comm_d"][0] = 9.into()),
        Status::InvalidInput,
        "replica id",
    );
    // Fixture shapes are for interactive types only.
    let mut r = req(&c1, &spec);
    r.fixture = FixtureShape {
        partitions: 2,
        layers: 0,
    };
    assert_eq!(e.submit(r).unwrap_err().status, Status::Unsupported);
    // The engine is unharmed.
    assert!(e.status().running);
    e.shutdown().unwrap();
}
