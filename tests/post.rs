//! WindowPoSt and WinningPoSt through the engine, on real 2KiB sectors sealed by
//! filecoin-proofs: their vanilla proofs made by filecoin-proofs (as a node makes them), the
//! engine's proofs accepted by filecoin-proofs' verifiers; vanilla proofs of another
//! randomness, and every kind of bad input, a clear error that leaves the engine proving.

mod common;

use std::{collections::BTreeMap, path::PathBuf, sync::OnceLock, time::Duration};

use common::tools::post_fixture::{self, PostFixture, PostFixtureSpec};
use cuzk::{
    engine::{Config, Engine},
    porep::{self, FixtureShape},
    post::{is_winning, PostProof, PostRequest},
    Status,
};
use filecoin_proofs_api::{post as fp, PrivateReplicaInfo, PublicReplicaInfo, SectorId};

const WINDOW: PostProof = PostProof::StackedDrgWindow2KiBV1_2;
const WINNING: PostProof = PostProof::StackedDrgWinning2KiBV1;
const MINER: u64 = 1000;

/// One sealed 2KiB sector: its id, comm_r, replica and cache directory.
struct Sector {
    id: u64,
    comm_r: [u8; 32],
    replica: PathBuf,
    cache: PathBuf,
}

/// Three sectors of miner 1000 (ids 1 to 3), sealed once per test process.
fn sectors() -> &'static [Sector] {
    static SECTORS: OnceLock<(tempfile::TempDir, Vec<Sector>)> = OnceLock::new();
    &SECTORS
        .get_or_init(|| {
            common::init();
            let dir = tempfile::tempdir().unwrap();
            let sectors: Vec<Sector> = (1..=3u64)
                .map(|id| {
                    let mut spec = common::tools::fixture::FixtureSpec::new(
                        common::tools::fixture::v1_1_proof(2048).unwrap(),
                        FixtureShape::default(),
                    );
                    spec.sector_id = id;
                    spec.miner_id = MINER;
                    spec.data_seed = 100 + id;
                    let work = dir.path().join(format!("s{id}"));
                    let c1 = common::tools::fixture::seal_c1(&spec, &work).unwrap();
                    let comm_r = porep::parse_c1(&c1).unwrap().c1.comm_r;
                    Sector {
                        id,
                        comm_r,
                        replica: work.join("sealed"),
                        cache: work.join("cache"),
                    }
                })
                .collect();
            // The PoSt parameters; then filecoin-proofs' own prover and verifier over the
            // sectors, as a cross-check.
            post_params();
            let refs: Vec<&Sector> = sectors.iter().collect();
            let r = randomness(1);
            let v = vanilla(WINDOW, &r, &refs);
            let p =
                fp::generate_window_post_with_vanilla(WINDOW, &r, prover_id(MINER), &v).unwrap();
            assert!(fp::verify_window_post(
                &r,
                &[(WINDOW, &p[0].1)],
                &replicas(WINDOW, &refs),
                prover_id(MINER)
            )
            .unwrap());
            let v = vanilla(WINNING, &r, &refs[..1]);
            let p =
                fp::generate_winning_post_with_vanilla(WINNING, &r, prover_id(MINER), &v).unwrap();
            assert!(fp::verify_winning_post(
                &r,
                &p[0].1,
                &replicas(WINNING, &refs[..1]),
                prover_id(MINER)
            )
            .unwrap());
            (dir, sectors)
        })
        .1
}

/// The PoSt parameters (random, marked, for the test size), made once per test process.
fn post_params() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        common::init();
        for p in [WINDOW, WINNING] {
            common::tools::fixture::ensure_post_params(p, &common::params_dir(), 0x5eed).unwrap();
        }
    });
}

fn prover_id(miner: u64) -> [u8; 32] {
    porep::prover_id_from_miner(miner)
}

/// A field element, as filecoin-ffi passes the chain's randomness.
fn randomness(seed: u8) -> [u8; 32] {
    let mut r = [seed; 32];
    r[31] &= 0x3f;
    r
}

/// The vanilla proofs of `sectors` for `proof` and `randomness`, as a node makes them
/// (filecoin-ffi's GenerateFallbackSectorChallenges and GenerateSingleVanillaProof).
fn vanilla(proof: PostProof, randomness: &[u8; 32], sectors: &[&Sector]) -> Vec<Vec<u8>> {
    let ids: Vec<SectorId> = sectors.iter().map(|s| SectorId::from(s.id)).collect();
    let challenges =
        fp::generate_fallback_sector_challenges(proof, randomness, &ids, prover_id(MINER)).unwrap();
    sectors
        .iter()
        .map(|s| {
            let replica =
                PrivateReplicaInfo::new(proof, s.comm_r, s.cache.clone(), s.replica.clone());
            fp::generate_single_vanilla_proof(
                proof,
                SectorId::from(s.id),
                &replica,
                &challenges[&SectorId::from(s.id)],
            )
            .unwrap()
        })
        .collect()
}

fn replicas(proof: PostProof, sectors: &[&Sector]) -> BTreeMap<SectorId, PublicReplicaInfo> {
    sectors
        .iter()
        .map(|s| {
            (
                SectorId::from(s.id),
                PublicReplicaInfo::new(proof, s.comm_r),
            )
        })
        .collect()
}

fn engine() -> Engine {
    Engine::start(Config {
        params_dir: common::params_dir(),
        ..Config::default()
    })
    .unwrap()
}

fn prove(e: &Engine, req: &PostRequest) -> cuzk::Result<Vec<u8>> {
    let id = e.submit_post(req)?;
    e.await_job(id, Some(Duration::from_secs(600)))
        .map(|out| out.proof)
}

fn request(proof: PostProof, randomness: [u8; 32], vanilla: Vec<Vec<u8>>) -> PostRequest {
    PostRequest {
        proof,
        prover_id: prover_id(MINER),
        randomness,
        vanilla_proofs: vanilla,
        partition: None,
        priority: 0,
    }
}

#[test]
fn window_post_through_the_engine_is_accepted_by_filecoin_proofs() {
    let all: Vec<&Sector> = sectors().iter().collect();
    let e = engine();
    let r = randomness(7);
    // Three sectors, two a partition: two partitions, the second padded.
    let proof = prove(&e, &request(WINDOW, r, vanilla(WINDOW, &r, &all))).unwrap();
    assert_eq!(proof.len(), 2 * cuzk::PROOF_BYTES);
    let ok = fp::verify_window_post(
        &r,
        &[(WINDOW, &proof)],
        &replicas(WINDOW, &all),
        prover_id(MINER),
    )
    .unwrap();
    assert!(ok, "filecoin-proofs refused the engine's WindowPoSt");
    // The same proof for another randomness, or for sectors of another comm_r, is refused by
    // the verifier. (The prover id is no public input of filecoin-proofs' PoSt circuit: it
    // chooses WinningPoSt's sector, and binds nothing in the proof.)
    let other = randomness(8);
    assert!(!fp::verify_window_post(
        &other,
        &[(WINDOW, &proof)],
        &replicas(WINDOW, &all),
        prover_id(MINER)
    )
    .unwrap_or(false));
    let mut swapped = replicas(WINDOW, &all);
    let first = swapped[&SectorId::from(1)].clone();
    swapped.insert(SectorId::from(1), swapped[&SectorId::from(2)].clone());
    swapped.insert(SectorId::from(2), first);
    assert!(
        !fp::verify_window_post(&r, &[(WINDOW, &proof)], &swapped, prover_id(MINER))
            .unwrap_or(false)
    );

    // One partition at a time (GenerateSingleWindowPoStWithVanilla): partition 1 holds sector
    // 3 only; its proof is the second 192 bytes of a full one's shape and verifies merged.
    let mut parts = Vec::new();
    for (k, chunk) in all.chunks(2).enumerate() {
        let mut req = request(WINDOW, r, vanilla(WINDOW, &r, chunk));
        req.partition = Some(k);
        let p = prove(&e, &req).unwrap();
        assert_eq!(p.len(), cuzk::PROOF_BYTES);
        parts.extend(p);
    }
    let ok = fp::verify_window_post(
        &r,
        &[(WINDOW, &parts)],
        &replicas(WINDOW, &all),
        prover_id(MINER),
    )
    .unwrap();
    assert!(
        ok,
        "filecoin-proofs refused the engine's partition proofs, merged"
    );
    e.shutdown().unwrap();
}

#[test]
fn winning_post_through_the_engine_is_accepted_by_filecoin_proofs() {
    let all: Vec<&Sector> = sectors().iter().collect();
    let e = engine();
    let r = randomness(9);
    // The sector the chain challenges among the three (WinningPoSt proves one).
    let picked =
        fp::generate_winning_post_sector_challenge(WINNING, &r, all.len() as u64, prover_id(MINER))
            .unwrap();
    let s = all[picked[0] as usize];
    let proof = prove(&e, &request(WINNING, r, vanilla(WINNING, &r, &[s]))).unwrap();
    assert_eq!(proof.len(), cuzk::PROOF_BYTES);
    let ok =
        fp::verify_winning_post(&r, &proof, &replicas(WINNING, &[s]), prover_id(MINER)).unwrap();
    assert!(ok, "filecoin-proofs refused the engine's WinningPoSt");
    // The status reports the class's latency (highest class first), nothing queued.
    let st = e.status();
    let c = &st.classes[0];
    assert_eq!(
        (c.class, c.jobs_done, c.queued),
        ("winning_post", 1, 0),
        "{st:?}"
    );
    assert!(
        c.last_ms.is_some() && c.p50_ms == c.last_ms && c.p99_ms == c.last_ms,
        "{c:?}"
    );
    assert!(st
        .prometheus()
        .contains("cuzk_class_jobs_done_total{class=\"winning_post\"} 1"));
    assert!(!fp::verify_winning_post(
        &randomness(10),
        &proof,
        &replicas(WINNING, &[s]),
        prover_id(MINER)
    )
    .unwrap_or(false));
    e.shutdown().unwrap();
}

/// Bad input is a clear error and the engine goes on proving: vanilla proofs for another
/// randomness or miner, malformed or truncated bytes, a sector twice, more sectors than the
/// proof type or a partition holds, a partition index for WinningPoSt, a proof type the bytes
/// are not of.
#[test]
fn bad_post_input_is_a_clear_error_and_the_engine_goes_on() {
    let all: Vec<&Sector> = sectors().iter().collect();
    let e = engine();
    let r = randomness(11);
    let good = vanilla(WINDOW, &r, &all[..2]);
    let status = |req: PostRequest| e.submit_post(&req).map(|_| ()).unwrap_err();
    let mut cases: Vec<(&str, PostRequest, Status)> = Vec::new();
    cases.push((
        "another randomness",
        request(WINDOW, randomness(12), good.clone()),
        Status::InvalidInput,
    ));
    let mut truncated = good.clone();
    let half = truncated[1].len() / 2;
    truncated[1].truncate(half);
    cases.push((
        "truncated bytes",
        request(WINDOW, r, truncated),
        Status::InvalidInput,
    ));
    cases.push((
        "garbage",
        request(WINDOW, r, vec![vec![0xff; 64]]),
        Status::InvalidInput,
    ));
    cases.push((
        "no proofs",
        request(WINDOW, r, vec![]),
        Status::InvalidInput,
    ));
    cases.push((
        "a sector twice",
        request(WINDOW, r, vec![good[0].clone(), good[0].clone()]),
        Status::InvalidInput,
    ));
    let mut too_many = request(WINDOW, r, vanilla(WINDOW, &r, &all));
    too_many.partition = Some(0);
    cases.push((
        "three sectors in a two-sector partition",
        too_many,
        Status::InvalidInput,
    ));
    let mut winning = vanilla(WINNING, &r, &all[..1]);
    winning.extend(vanilla(WINNING, &r, &all[1..2]));
    cases.push((
        "two sectors for WinningPoSt",
        request(WINNING, r, winning.clone()),
        Status::InvalidInput,
    ));
    let mut indexed = request(WINNING, r, winning[..1].to_vec());
    indexed.partition = Some(0);
    cases.push((
        "a partition index for WinningPoSt",
        indexed,
        Status::InvalidArgument,
    ));
    let mut not_field = request(WINDOW, [0xff; 32], good.clone());
    not_field.partition = None;
    cases.push((
        "a randomness that is no field element",
        not_field,
        Status::InvalidArgument,
    ));
    for (what, req, want) in cases {
        let err = status(req);
        assert_eq!(err.status, want, "{what}: {err}");
        assert!(!err.message.is_empty(), "{what}");
    }
    // Unharmed: the good request proves and verifies.
    let proof = prove(&e, &request(WINDOW, r, good)).unwrap();
    let ok = fp::verify_window_post(
        &r,
        &[(WINDOW, &proof)],
        &replicas(WINDOW, &all[..2]),
        prover_id(MINER),
    )
    .unwrap();
    assert!(ok);
    e.shutdown().unwrap();
}

/// The C ABI as a C program calls it: `cuzk_generate_post` (the blocking drop-in) and
/// `cuzk_post_submit` then `cuzk_await`, their proofs accepted by filecoin-proofs; bad
/// arguments a status and a message, nothing written.
#[test]
fn post_through_the_c_abi_is_accepted_by_filecoin_proofs() {
    use cuzk::ffi::{
        cuzk_await, cuzk_bytes, cuzk_bytes_free, cuzk_error, cuzk_error_free, cuzk_generate_post,
        cuzk_post_request, cuzk_post_request_default, cuzk_post_submit, cuzk_slice,
    };
    let all: Vec<&Sector> = sectors().iter().collect();
    let r = randomness(13);
    let v = vanilla(WINDOW, &r, &all);
    let slices: Vec<cuzk_slice> = v
        .iter()
        .map(|b| cuzk_slice {
            ptr: b.as_ptr(),
            len: b.len(),
        })
        .collect();
    let fresh = || {
        let mut req = std::mem::MaybeUninit::<cuzk_post_request>::uninit();
        cuzk_post_request_default(req.as_mut_ptr());
        // SAFETY: filled by cuzk_post_request_default.
        let mut req = unsafe { req.assume_init() };
        req.registered_proof = 10; // abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1
        req.prover_id = prover_id(MINER);
        req.randomness = r;
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
    let verify = |proof: &[u8]| {
        fp::verify_window_post(
            &r,
            &[(WINDOW, proof)],
            &replicas(WINDOW, &all),
            prover_id(MINER),
        )
        .unwrap()
    };
    let req = fresh();
    assert_eq!(cuzk_generate_post(&req, &mut out, &mut err), Status::Ok);
    let proof = take(&mut out);
    assert_eq!(proof.len(), 2 * cuzk::PROOF_BYTES);
    assert!(
        verify(&proof),
        "filecoin-proofs refused cuzk_generate_post's proof"
    );
    let mut id = 0u64;
    assert_eq!(cuzk_post_submit(&req, &mut id, &mut err), Status::Ok);
    assert_eq!(cuzk_await(id, -1, &mut out, &mut err), Status::Ok);
    assert!(
        verify(&take(&mut out)),
        "filecoin-proofs refused the awaited proof"
    );

    // Bad arguments: a status, a message, nothing written.
    let mut bad: Vec<(&str, cuzk_post_request, Status)> = Vec::new();
    let mut q = fresh();
    q.registered_proof = 99;
    bad.push(("an unknown proof type", q, Status::InvalidArgument));
    let mut q = fresh();
    q.partition_index = -2;
    bad.push(("a partition index below -1", q, Status::InvalidArgument));
    let mut q = fresh();
    q.vanilla_proofs = std::ptr::null();
    bad.push(("NULL vanilla proofs", q, Status::InvalidArgument));
    let mut q = fresh();
    q.struct_size = 8;
    bad.push(("a wrong struct_size", q, Status::InvalidArgument));
    let mut q = fresh();
    q.vanilla_count = 1;
    q.randomness = randomness(14);
    bad.push((
        "vanilla proofs of another randomness",
        q,
        Status::InvalidInput,
    ));
    for (what, q, want) in bad {
        let st = cuzk_generate_post(&q, &mut out, &mut err);
        assert_eq!((st, err.status), (want, want), "{what}");
        assert!(!err.message.is_null(), "{what}: no message");
        assert!(out.ptr.is_null(), "{what}: a proof was written");
        cuzk_error_free(&mut err);
    }
}

fn synthetic(proof: PostProof, sectors: usize, seed: u64) -> PostFixture {
    post_fixture::post_fixture(&PostFixtureSpec {
        proof,
        prover_id: prover_id(MINER),
        sectors,
        first_sector: 1,
        seed,
    })
    .unwrap()
}

/// `cuzk fixture --kind window-post|winning-post`: vanilla proofs of random sectors without
/// sector data, in each size's real tree shape (32 GiB and 64 GiB with their sub and top
/// trees), pass filecoin-proofs' vanilla verification (the engine's validation is its
/// `partition_vanilla_proofs`), and fail it when the randomness, a sector id or a path changes.
#[test]
fn a_synthetic_post_fixture_passes_vanilla_verification_and_fails_when_an_input_changes() {
    common::init();
    use PostProof::*;
    for (proof, sectors) in [
        (WINDOW, 3),
        (WINNING, 1),
        (StackedDrgWindow512MiBV1_2, 2),
        (StackedDrgWindow32GiBV1_2, 3),
        (StackedDrgWindow64GiBV1, 2),
        (StackedDrgWinning32GiBV1, 1),
        (StackedDrgWinning64GiBV1, 1),
    ] {
        let f = synthetic(proof, sectors, 5);
        assert_eq!(f.sectors.len(), sectors);
        let ok = cuzk::post::prepare(&f.request(0));
        assert!(ok.is_ok(), "{proof:?}: {:?}", ok.err());

        let refused = |req: PostRequest, what: &str| {
            let e = cuzk::post::prepare(&req).err();
            assert_eq!(
                e.as_ref().map(|e| e.status),
                Some(Status::InvalidInput),
                "{proof:?}, {what}: {e:?}"
            );
        };
        let mut req = f.request(0);
        req.randomness = randomness(99);
        refused(req, "another randomness");
        // bincode writes the sector id first, as a u64.
        let mut req = f.request(0);
        req.vanilla_proofs[0][..8].copy_from_slice(&77u64.to_le_bytes());
        refused(req, "another sector id");
        // A node of the first inclusion proof's path (past the id and comm_r).
        let mut req = f.request(0);
        req.vanilla_proofs[0][200] ^= 1;
        refused(req, "a changed path");
        if !is_winning(proof) {
            // WindowPoSt V1 derives a sector's challenges from its place in the list too;
            // V1_1 (filecoin-proofs' V1_2) from its id only.
            let mut req = f.request(0);
            req.vanilla_proofs.swap(0, 1);
            if format!("{proof:?}").ends_with("V1_2") {
                assert!(cuzk::post::prepare(&req).is_ok(), "{proof:?}");
            } else {
                refused(req, "sectors in another order (other challenges)");
            }
        }
        // The same spec gives the same bytes; another seed other sectors.
        assert_eq!(synthetic(proof, sectors, 5).vanilla, f.vanilla);
        assert_ne!(synthetic(proof, sectors, 6).sectors, f.sectors);
    }
    // A fixture saved and loaded is the same fixture; a truncated one a clear error.
    let f = synthetic(WINDOW, 3, 5);
    let dir = tempfile::tempdir().unwrap();
    f.save(dir.path()).unwrap();
    let g = PostFixture::load(dir.path()).unwrap();
    assert_eq!(
        (g.proof, g.randomness, &g.sectors, &g.vanilla),
        (f.proof, f.randomness, &f.sectors, &f.vanilla)
    );
    let bin = dir.path().join("vanilla.bin");
    let bytes = std::fs::read(&bin).unwrap();
    std::fs::write(&bin, &bytes[..bytes.len() - 1]).unwrap();
    assert_eq!(
        PostFixture::load(dir.path()).err().map(|e| e.status),
        Some(Status::InvalidInput)
    );
    // WinningPoSt proves one sector.
    assert!(post_fixture::post_fixture(&PostFixtureSpec {
        proof: WINNING,
        prover_id: prover_id(MINER),
        sectors: 2,
        first_sector: 1,
        seed: 1,
    })
    .is_err());
}

/// The synthetic fixture proves through the engine like sealed sectors' vanilla proofs, and
/// filecoin-proofs' verifiers accept the proofs (and refuse them for another randomness).
#[test]
fn a_synthetic_post_fixture_proves_through_the_engine_and_verifies() {
    post_params();
    let e = engine();
    for (proof, sectors, partitions) in [(WINDOW, 3, 2), (WINNING, 1, 1)] {
        let f = synthetic(proof, sectors, 11);
        let p = prove(&e, &f.request(0)).unwrap();
        assert_eq!(p.len(), partitions * cuzk::PROOF_BYTES, "{proof:?}");
        assert!(
            f.verify(&p).unwrap(),
            "{proof:?}: filecoin-proofs refused it"
        );
        let mut other = f.clone();
        other.randomness = randomness(12);
        assert!(!other.verify(&p).unwrap_or(false), "{proof:?}");
    }
    e.shutdown().unwrap();
}

/// PoSt's native witness generator gives witness synthesis's witness, inputs and aux values
/// alike, for every partition (the last one padded with a repeated sector), for WindowPoSt V1
/// and V1_1 at 2KiB and for 32 GiB WinningPoSt (66 one-challenge sectors); and the engine makes
/// its PoSt witnesses with it (the native counter moves, no fallback).
#[test]
fn a_native_post_witness_is_witness_synthesis_s() {
    common::init();
    for (proof, sectors) in [
        (WINDOW, 3),
        (PostProof::StackedDrgWindow2KiBV1, 5),
        (PostProof::StackedDrgWinning32GiBV1, 1),
    ] {
        let f = synthetic(proof, sectors, 23);
        let circuits = cuzk::post::prepare(&f.request(0)).unwrap().circuits;
        for k in 0..circuits.shape().partitions {
            let t = std::time::Instant::now();
            let native = circuits.native_witness(k, None, None).unwrap();
            let native_ms = t.elapsed().as_secs_f64() * 1e3;
            let t = std::time::Instant::now();
            let synthesized = circuits.synthesize_witness(k, None, None).unwrap();
            let synth_ms = t.elapsed().as_secs_f64() * 1e3;
            assert!(
                native == synthesized,
                "{proof:?} partition {k}: the native witness differs ({} and {} aux values)",
                native.n_aux(),
                synthesized.n_aux()
            );
            assert!(native.classes_match());
            eprintln!(
                "{proof:?} partition {k}: {} aux values, native {native_ms:.0} ms, witness synthesis {synth_ms:.0} ms",
                native.n_aux()
            );
        }
    }
    // The engine's first job may be synthesized in full while the recording loads: one of
    // the first five jobs has both its partitions made natively.
    post_params();
    let e = engine();
    let f = synthetic(WINDOW, 3, 24);
    let mut native_jobs = 0;
    for _ in 0..5 {
        let before = e.status().native_witnesses;
        let p = prove(&e, &f.request(0)).unwrap();
        assert!(f.verify(&p).unwrap());
        let made = e.status().native_witnesses - before;
        assert!(made == 0 || made == 2, "{made} of 2 partitions native");
        native_jobs += (made == 2) as usize;
        if made == 2 {
            break;
        }
    }
    assert_eq!(native_jobs, 1, "no job had its witnesses made natively");
    assert_eq!(e.status().native_fallbacks, 0);
    e.shutdown().unwrap();
}

/// A PoSt witness is synthesized per group of sectors in parallel (storage-proofs' circuit does
/// so for a constraint system that can be extended, as cuzk's witness target now can): the
/// values are the ones full synthesis makes one sector after another (the order the recording
/// numbers them in), for every partition, at 2KiB and for 32 GiB WinningPoSt (66 one-challenge
/// sectors). (bellperson's `WitnessCS` is no reference here: it starts with ONE and keeps each
/// group's temporary ONE too.)
#[test]
fn a_post_witness_made_in_parallel_is_the_one_made_in_order() {
    common::init();
    for (proof, sectors) in [(WINDOW, 3), (PostProof::StackedDrgWinning32GiBV1, 1)] {
        let f = synthetic(proof, sectors, 21);
        let circuits = cuzk::post::prepare(&f.request(0)).unwrap().circuits;
        for k in 0..circuits.shape().partitions {
            let t = std::time::Instant::now();
            let w = circuits.synthesize_witness(k, None, None).unwrap();
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let r = circuits.synthesize(k, None, None).unwrap();
            assert_eq!(
                w.inputs, r.input_assignment,
                "{proof:?} partition {k}: inputs"
            );
            assert!(
                w.aux() == r.aux_assignment,
                "{proof:?} partition {k}: aux values"
            );
            eprintln!(
                "{proof:?} partition {k}: {} aux values in {ms:.0} ms",
                w.n_aux()
            );
        }
    }
}
