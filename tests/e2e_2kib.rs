//! End to end on a real 2KiB V1_1 sector: seal → C1 → cuzk C2 → filecoin-proofs verify_seal,
//! plus every kind of bad input the engine must refuse without crashing.

mod common;

use std::time::Duration;

use cuzk::{
    engine::{Config, Engine, JobRequest},
    porep::{self, FixtureShape},
    timeline::EventKind,
    Status,
};

fn engine(cfg: Config) -> Engine {
    Engine::start(Config {
        params_dir: common::params_dir(),
        ..cfg
    })
    .unwrap()
}

fn req(c1: &[u8], sector_id: u64, prover_id: [u8; 32]) -> JobRequest {
    JobRequest {
        c1: c1.to_vec(),
        sector_id,
        prover_id,
        priority: 0,
        fixture: FixtureShape::default(),
    }
}

#[test]
fn real_2kib_sector_proves_and_filecoin_proofs_verifies() {
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let e = engine(Config::default());
    // A job cancelled during its synthesis ends CANCELLED at once, its synthesis is aborted,
    // and it does not disturb the next job.
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    e.add_timeline_sink(std::sync::Arc::new(move |ev: &cuzk::timeline::Event| {
        let _ = tx.lock().unwrap().send(ev.clone());
    }));
    let doomed = e
        .submit(req(&c1, spec.sector_id, spec.prover_id()))
        .unwrap();
    let next = |kind| loop {
        let ev = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("timeline event");
        if ev.job == doomed && ev.kind == kind {
            break ev;
        }
    };
    next(EventKind::SynthStart);
    let t0 = std::time::Instant::now();
    e.cancel(doomed).unwrap();
    let end = next(EventKind::SynthEnd);
    assert_eq!(end.detail, "aborted");
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "abort took {:?}",
        t0.elapsed()
    );
    let err = e.await_job(doomed, common::JOB_DEADLINE).unwrap_err();
    assert_eq!(err.status, Status::Cancelled, "{err}");
    assert_eq!(
        e.await_job(doomed, common::JOB_DEADLINE)
            .unwrap_err()
            .status,
        Status::NotFound
    );

    let id = e
        .submit(req(&c1, spec.sector_id, spec.prover_id()))
        .unwrap();
    // A short wait times out and leaves the job running.
    assert_eq!(
        e.await_job(id, Some(Duration::from_millis(1)))
            .unwrap_err()
            .status,
        Status::Timeout
    );
    let out = e.await_job(id, common::JOB_DEADLINE).unwrap();
    assert_eq!(out.proof.len(), 192);
    assert!(out.verified, "self-check must have run");
    assert_eq!(out.partitions.len(), 1);
    assert!(out.partitions[0].synth_ms > 0.0 && out.partitions[0].prove_ms > 0.0);

    assert!(
        cuzk::porep::verify::verify_seal(&c1, spec.prover_id(), spec.sector_id, &out.proof)
            .unwrap()
    );
    // The same proof for another sector, or another miner, is rejected.
    assert!(!cuzk::porep::verify::verify_seal(
        &c1,
        spec.prover_id(),
        spec.sector_id + 1,
        &out.proof
    )
    .unwrap());
    assert!(!cuzk::porep::verify::verify_seal(
        &c1,
        porep::prover_id_from_miner(1001),
        spec.sector_id,
        &out.proof
    )
    .unwrap());
    // A corrupted proof is rejected.
    for i in [0usize, 50, 100, 150, 191] {
        let mut bad = out.proof.clone();
        bad[i] ^= 0x01;
        let v = cuzk::porep::verify::verify_seal(&c1, spec.prover_id(), spec.sector_id, &bad);
        assert!(matches!(v, Ok(false)), "corrupted byte {i}: {v:?}");
    }
    aggregates_of(&c1, spec.prover_id(), spec.sector_id, &out.proof);
    // What stays reserved is the resident parameters and the circuit's recording.
    common::wait_until(300, "recording settled", || e.status().pce_working == 0);
    let st = e.status();
    assert_eq!((st.completed, st.cancelled, st.failed), (1, 1, 0));
    assert_eq!(
        st.memory_reserved - st.pce_resident_bytes,
        st.resident_params.len() as u64
            * std::fs::metadata(cuzk::params::params_path(
                &common::params_dir(),
                &st.resident_params[0]
            ))
            .unwrap()
            .len()
    );
    e.shutdown().unwrap();
    e.shutdown().unwrap();
    assert_eq!(
        e.submit(req(&c1, spec.sector_id, spec.prover_id()))
            .unwrap_err()
            .status,
        Status::NotRunning
    );
}

/// filecoin-ffi's `aggregate_seal_proofs` through cuzk (`porep::aggregate`): the sector's proof
/// twice (a batch of two), SnarkPack v1 and v2, each checked by filecoin-proofs' aggregate
/// verifier inside; a batch whose inputs are not its proofs' is VERIFY_FAILED, a proof of the
/// wrong length INVALID_INPUT.
fn aggregates_of(c1: &[u8], prover_id: [u8; 32], sector_id: u64, proof: &[u8]) {
    use cuzk::porep::aggregate::{self, SealedSector};
    use filecoin_proofs_api::RegisteredAggregationProof::{SnarkPackV1, SnarkPackV2};
    let path = aggregate::srs_path();
    if !path.exists() {
        aggregate::write_random_srs(&path, 16).unwrap();
    }
    let c1 = porep::parse_c1(c1).unwrap().c1;
    let sector = SealedSector {
        sector_id,
        comm_r: c1.comm_r,
        comm_d: c1.comm_d,
        ticket: c1.ticket,
        seed: c1.seed,
        proof: proof.to_vec(),
    };
    let two = [sector.clone(), sector.clone()];
    for v in [SnarkPackV1, SnarkPackV2] {
        let agg =
            aggregate::aggregate_seal_proofs(c1.registered_proof, v, prover_id, &two, false, true)
                .unwrap();
        assert!(agg.len() > 2 * proof.len(), "{v:?}: {} bytes", agg.len());
    }
    let mut wrong = two.clone();
    wrong[1].comm_d[0] ^= 1;
    let err = aggregate::aggregate_seal_proofs(
        c1.registered_proof,
        SnarkPackV2,
        prover_id,
        &wrong,
        false,
        true,
    )
    .unwrap_err();
    assert_eq!(err.status, Status::VerifyFailed, "{err}");
    let mut short = two;
    short[0].proof.pop();
    let err = aggregate::aggregate_seal_proofs(
        c1.registered_proof,
        SnarkPackV2,
        prover_id,
        &short,
        false,
        true,
    )
    .unwrap_err();
    assert_eq!(err.status, Status::InvalidInput, "{err}");
    let err = aggregate::aggregate_seal_proofs(
        c1.registered_proof,
        SnarkPackV2,
        prover_id,
        &[],
        false,
        true,
    )
    .unwrap_err();
    assert_eq!(err.status, Status::InvalidInput, "{err}");
}

fn edit_json(c1: &[u8], f: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(c1).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn bad_inputs_fail_with_clear_errors() {
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let e = engine(Config::default());
    let pid = spec.prover_id();
    let sid = spec.sector_id;
    let check = |bytes: &[u8], sector: u64, prover: [u8; 32], status: Status, needle: &str| {
        let err = e.submit(req(bytes, sector, prover)).unwrap_err();
        assert_eq!(err.status, status, "{err}");
        assert!(err.message.contains(needle), "{needle:?} not in {err}");
    };
    check(b"", sid, pid, Status::InvalidInput, "empty");
    check(b"not json", sid, pid, Status::InvalidInput, "JSON");
    check(&c1[..c1.len() / 2], sid, pid, Status::InvalidInput, "JSON");
    check(
        &c1,
        sid,
        porep::prover_id_from_miner(1001),
        Status::InvalidInput,
        "replica id",
    );
    check(&c1, sid + 1, pid, Status::InvalidInput, "replica id");
    let bad = edit_json(&c1, |v| {
        v["registered_proof"] = "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep".into()
    });
    // Non-interactive PoRep has 13 partitions at 2KiB: an interactive C1 relabelled is refused.
    check(&bad, sid, pid, Status::InvalidInput, "needs 13");
    let bad = edit_json(&c1, |v| v["registered_proof"] = "StackedDrg8MiBV1_1".into());
    check(&bad, sid, pid, Status::InvalidInput, "2KiB");
    let bad = edit_json(&c1, |v| v["registered_proof"] = "StackedDrg2KiBV9".into());
    check(&bad, sid, pid, Status::InvalidInput, "JSON");
    let bad = edit_json(&c1, |v| {
        let p = v["vanilla_proofs"]["StackedDrg2KiBV1"][0].clone();
        v["vanilla_proofs"]["StackedDrg2KiBV1"]
            .as_array_mut()
            .unwrap()
            .push(p);
    });
    check(&bad, sid, pid, Status::InvalidInput, "2 partitions");
    let bad = edit_json(&c1, |v| {
        v["vanilla_proofs"]["StackedDrg2KiBV1"][0]
            .as_array_mut()
            .unwrap()
            .pop();
    });
    check(&bad, sid, pid, Status::InvalidInput, "challenge proofs");
    let bad = edit_json(&c1, |v| v["seed"] = serde_json::json!(vec![0u8; 32]));
    check(&bad, sid, pid, Status::InvalidInput, "seed");
    let bad = edit_json(&c1, |v| v["comm_r"] = serde_json::json!(vec![0u8; 32]));
    check(&bad, sid, pid, Status::InvalidInput, "comm_r");
    let bad = edit_json(&c1, |v| v["comm_r"][3] = 99.into());
    check(
        &bad,
        sid,
        pid,
        Status::InvalidInput,
        "vanilla proofs do not verify",
    );
    let bad = edit_json(&c1, |v| v["seed"][0] = 1.into());
    check(
        &bad,
        sid,
        pid,
        Status::InvalidInput,
        "vanilla proofs do not verify",
    );
    let bad = edit_json(&c1, |v| {
        let lp = &mut v["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]["labeling_proofs"];
        lp.as_array_mut().unwrap().pop();
    });
    check(&bad, sid, pid, Status::InvalidInput, "layers");
    let bad = edit_json(&c1, |v| {
        v["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]["comm_d_proofs"] =
            serde_json::json!({"data": 5});
    });
    check(&bad, sid, pid, Status::InvalidInput, "JSON");
    // Fixture shapes are refused for production sector sizes and out of range.
    let mut r = req(&c1, sid, pid);
    r.fixture = FixtureShape {
        partitions: 200,
        layers: 0,
    };
    assert_eq!(e.submit(r).unwrap_err().status, Status::InvalidArgument);
    // A job whose working set cannot fit the budget fails alone, with a clear error.
    let small = engine(Config {
        memory_budget: 64 << 20,
        ..Config::default()
    });
    let id = small.submit(req(&c1, sid, pid)).unwrap();
    let err = small.await_job(id, common::JOB_DEADLINE).unwrap_err();
    assert_eq!(err.status, Status::ResourceExhausted, "{err}");
    // Unknown jobs.
    assert_eq!(
        e.await_job(9999, common::JOB_DEADLINE).unwrap_err().status,
        Status::NotFound
    );
    assert_eq!(e.cancel(9999).unwrap_err().status, Status::NotFound);
}

#[test]
fn commit2in_envelope_is_the_same_job() {
    use base64::Engine as _;
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let env = serde_json::json!({
        "SectorNum": spec.sector_id,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&c1),
        "SectorSize": 2048,
    });
    let bytes = serde_json::to_vec(&env).unwrap();
    let a = porep::parse_c1(&bytes).unwrap();
    let b = porep::parse_c1(&c1).unwrap();
    assert_eq!(a.envelope_sector, Some(spec.sector_id));
    assert_eq!(
        serde_json::to_vec(&a.c1).unwrap(),
        serde_json::to_vec(&b.c1).unwrap()
    );
    let e = engine(Config::default());
    let err = e
        .submit(req(&bytes, spec.sector_id + 5, spec.prover_id()))
        .unwrap_err();
    assert!(err.message.contains("SectorNum"), "{err}");
    let mut wrong = env.clone();
    wrong["SectorSize"] = 8388608.into();
    let err = e
        .submit(req(
            &serde_json::to_vec(&wrong).unwrap(),
            spec.sector_id,
            spec.prover_id(),
        ))
        .unwrap_err();
    assert!(err.message.contains("SectorSize"), "{err}");
    // Valid envelope: accepted, then cancelled (the proof itself is covered above).
    let id = e
        .submit(req(&bytes, spec.sector_id, spec.prover_id()))
        .unwrap();
    e.cancel(id).unwrap();
    assert_eq!(
        e.await_job(id, common::JOB_DEADLINE).unwrap_err().status,
        Status::Cancelled
    );
}

/// A prover that returns a wrong proof (fault injection): the self-check must catch it.
struct Corrupting;

impl cuzk::prover::ProverBackend for Corrupting {
    fn name(&self) -> &'static str {
        "corrupting"
    }
    fn prepare(&self, srs: &cuzk::params::Srs) -> cuzk::Result<()> {
        srs.params().map(|_| ())
    }
    fn prove(
        &self,
        asg: &mut Option<cuzk::prover::ProvingAssignment>,
        srs: &cuzk::params::Srs,
        r: blstrs::Scalar,
        s: blstrs::Scalar,
        times: &mut cuzk::prover::StageTimes,
    ) -> cuzk::Result<bellperson::groth16::Proof<blstrs::Bls12>> {
        use group::{prime::PrimeCurveAffine, Curve};
        let mut p = cuzk::prover::cpu::CpuProver.prove(asg, srs, r, s, times)?;
        p.c = (p.c.to_curve() + blstrs::G1Affine::generator()).to_affine();
        Ok(p)
    }
}

/// The self-check catches the wrong proof; the partition is then synthesized in full and proved
/// again by the CPU, and the job returns a proof that verifies. The hazard: a wrong GPU proof
/// would fail the job, or reach the caller.
#[test]
fn self_check_catches_a_wrong_proof_and_the_cpu_proves_it_again() {
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    let e = Engine::start_with_backends(
        Config {
            params_dir: common::params_dir(),
            ..Config::default()
        },
        vec![Box::new(Corrupting)],
    )
    .unwrap();
    let out = e.prove(req(&c1, spec.sector_id, spec.prover_id())).unwrap();
    assert!(out.verified && out.partitions[0].cpu_retry, "{out:?}");
    assert!(
        cuzk::porep::verify::verify_seal(&c1, spec.prover_id(), spec.sector_id, &out.proof)
            .unwrap()
    );
    let st = e.status();
    assert_eq!(st.devices[0].name, "corrupting");
    assert_eq!(
        (st.bad_proofs, st.failed, st.completed),
        (1, 0, 1),
        "{st:?}"
    );
}
