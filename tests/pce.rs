//! Pre-compiled circuits on the project's real circuits.
//!
//! * On the real 2KiB circuit and the 10-partition fixture, the pre-compiled path (recording +
//!   witness + sparse product) gives the assignment full synthesis gives, element for element,
//!   and the CPU prover's proof bytes are the same for fixed r, s.
//! * A real recording survives a save and a load; the engine records a circuit once, saves it,
//!   loads it after a restart, and records again over a truncated, corrupted or foreign file.
//! * A wrong recording (consistent file, wrong coefficient) is caught: the partition is
//!   synthesized in full, the job's proof verifies, the recording is given up.
//! * Where every prover computes a, b and c itself (cuzk's GPU prover), partitions go to it as
//!   witnesses; one it fails on is proved on the CPU from the assignment computed then, and a
//!   row it finds unsatisfied gives the recording up there.
//! * By default the witnesses are made by the native generator, on the host path and
//!   to witness provers alike; a wrong recording under native witnesses is blamed on the
//!   recording (the generator's witness is witness synthesis's), not on the generator.
//!
//! Real CPU proofs (about a minute each on two cores) are made where the test's claim is the
//! proof; where it is which witness the engine ended up using after a fault, the CPU prover is
//! a stand-in that compares each assignment with full synthesis's, value for value.

mod common;

use std::sync::{Arc, Mutex};

use blstrs::Scalar as Fr;
use common::{wait_until, within, Stub};
use cuzk::{
    engine::{Config, Engine, JobRequest, SynthesisMode},
    error::Status,
    params::Srs,
    pce::{self, file},
    porep::{self, FixtureShape},
    prover::{
        cpu::CpuProver, ClassedWitness, ProverBackend, ProvingAssignment, SparseR1cs, StageTimes,
    },
    timeline::{Event, EventKind},
};

fn first_difference(x: &ProvingAssignment, y: &ProvingAssignment) -> Option<String> {
    for (name, p, q) in [
        ("a", &x.a, &y.a),
        ("b", &x.b, &y.b),
        ("c", &x.c, &y.c),
        ("inputs", &x.input_assignment, &y.input_assignment),
        ("aux", &x.aux_assignment, &y.aux_assignment),
    ] {
        if p.len() != q.len() {
            return Some(format!("{name}: length {} vs {}", p.len(), q.len()));
        }
        if let Some(i) = p.iter().zip(q.iter()).position(|(u, v)| u != v) {
            return Some(format!("{name}[{i}] differs"));
        }
    }
    for (name, p, q) in [
        ("A aux density", &x.a_aux_density, &y.a_aux_density),
        ("B input density", &x.b_input_density, &y.b_input_density),
        ("B aux density", &x.b_aux_density, &y.b_aux_density),
    ] {
        if p != q {
            return Some(format!("{name} differs"));
        }
    }
    (x != y).then(|| "assignments differ".to_string())
}

/// The fixture's job of `shape`, and where its parameters are.
fn job_of(shape: FixtureShape) -> (porep::PreparedJob, common::tools::fixture::SetupReport) {
    let (spec, rep, c1) = common::fixture(shape);
    let parsed = porep::parse_c1(&c1).unwrap();
    let job = porep::prepare(parsed.c1, spec.prover_id(), spec.sector_id, shape).unwrap();
    (job, rep)
}

fn prepared(shape: FixtureShape) -> (porep::PreparedJob, Arc<Srs>) {
    let (job, _) = job_of(shape);
    let cache = cuzk::params::SrsCache::new(common::params_dir());
    let srs = cache
        .get(
            job.circuits.params_id(),
            &cuzk::budget::Budget::new(u64::MAX),
        )
        .unwrap();
    (job, srs)
}

/// The pre-compiled assignment of partitions `ks` equals full synthesis's; returns the
/// recording and the assignments of the first partition (pre-compiled, full).
fn check_equal(
    shape: FixtureShape,
    ks: &[usize],
) -> (
    pce::Recording,
    ProvingAssignment,
    ProvingAssignment,
    Arc<Srs>,
    Vec<Fr>,
) {
    let (job, srs) = prepared(shape);
    let c = &job.circuits;
    let rec = c.record(None).unwrap();
    rec.check().unwrap();
    assert_eq!((rec.inputs, rec.aux), (srs.size.inputs, srs.size.aux));
    // The densities give the parameters' A and B query lengths (what a load checks).
    assert_eq!(pce::Expect::of(&srs).mismatch(&rec), None);
    eprintln!(
        "{:?}: {} constraints, {} terms, {} coefficients, {:.1} bytes per constraint",
        shape,
        rec.constraints(),
        rec.terms(),
        rec.dict.len(),
        rec.bytes() as f64 / rec.constraints() as f64
    );
    let mut first = None;
    for &k in ks {
        let w = c.synthesize_witness(k, Some(rec.aux), None).unwrap();
        assert!(w.classes_match(), "partition {k}: class table");
        // A partition on the GPU path holds its compact witness only: at most 8 bytes per
        // constraint (dense values would take ~33), and no more than it reserves. A larger
        // witness would overrun the host memory the budget reserved for it.
        let reserved = srs.size.host_bytes(cuzk::params::HostPath::Witness);
        assert!(
            w.bytes() <= reserved && reserved <= 8 * srs.size.constraints as u64,
            "partition {k}: the witness holds {} bytes and reserves {reserved} for {} constraints",
            w.bytes(),
            srs.size.constraints
        );
        let ours = pce::assignment(&rec, w, Some(srs.size)).unwrap();
        let full = c.synthesize(k, Some(srs.size), None).unwrap();
        if let Some(d) = first_difference(&ours, &full) {
            panic!("{shape:?} partition {k}: {d}");
        }
        if first.is_none() {
            first = Some((ours, full, c.public_inputs(k).unwrap()));
        }
    }
    let (ours, full, inputs) = first.unwrap();
    (rec, ours, full, srs, inputs)
}

#[test]
fn real_2kib_circuit_pre_compiled_equals_full_synthesis_and_round_trips() {
    let (rec, _, _, _, _) = check_equal(FixtureShape::default(), &[0]);
    assert_eq!(rec.constraints(), 2_687_921 + 40);
    let dir = tempfile::tempdir().unwrap();
    let p = file::path(dir.path(), &rec.id);
    file::save(&rec, &p).unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    eprintln!(
        "file: {len} bytes, {:.1} bytes per constraint",
        len as f64 / rec.constraints() as f64
    );
    let back = file::load(&p, &rec.id, Some((rec.inputs, rec.aux))).unwrap();
    assert!(back == rec, "recording changed in a save and load");
}

#[test]
fn ten_partition_fixture_pre_compiled_equals_full_synthesis_with_the_same_proof() {
    let shape = FixtureShape {
        partitions: 10,
        layers: 0,
    };
    let (_, ours, full, srs, inputs) = check_equal(shape, &[0, 9]);
    // The same proof bytes for the same r and s, and a proof the verifying key accepts (for
    // partition 0's public inputs, and not for others).
    let params = srs.params().unwrap();
    let (r, s) = (Fr::from(12345u64), Fr::from(67890u64));
    let mut bytes = Vec::new();
    for asg in [ours, full] {
        let p = CpuProver
            .prove_with_params(asg, &params, r, s, &mut StageTimes::default())
            .unwrap();
        assert!(
            bellperson::groth16::verify_proof(&srs.pvk, &p, &inputs).unwrap(),
            "the proof does not verify"
        );
        let mut wrong = inputs.clone();
        wrong[0] += Fr::from(1u64);
        assert!(!bellperson::groth16::verify_proof(&srs.pvk, &p, &wrong).unwrap_or(false));
        let mut b = Vec::new();
        p.write(&mut b).unwrap();
        bytes.push(b);
    }
    assert_eq!(bytes[0], bytes[1], "proof bytes differ");
}

fn real_2kib() -> JobRequest {
    let (spec, _, c1) = common::fixture(FixtureShape::default());
    JobRequest {
        c1,
        sector_id: spec.sector_id,
        prover_id: spec.prover_id(),
        priority: 0,
        fixture: FixtureShape::default(),
    }
}

type Notes = Arc<Mutex<Vec<String>>>;

/// An engine proving with `prover` whose recordings live in `dir`, and the SYNTH_END notes.
fn engine_in(
    dir: &std::path::Path,
    prover: Box<dyn ProverBackend>,
    self_check: bool,
) -> (Arc<Engine>, Notes) {
    engine_with(dir, prover, Box::new(CpuProver), self_check)
}

/// [`engine_in`] with `fallback` for the partitions a GPU backend failed on.
fn engine_with(
    dir: &std::path::Path,
    prover: Box<dyn ProverBackend>,
    fallback: Box<dyn ProverBackend>,
    self_check: bool,
) -> (Arc<Engine>, Notes) {
    engine_mode(dir, prover, fallback, self_check, Some(SynthesisMode::Pce))
}

/// [`engine_with`] in synthesis mode `mode` (None: the default).
fn engine_mode(
    dir: &std::path::Path,
    prover: Box<dyn ProverBackend>,
    fallback: Box<dyn ProverBackend>,
    self_check: bool,
    mode: Option<SynthesisMode>,
) -> (Arc<Engine>, Notes) {
    let e = Arc::new(
        Engine::start_with_fallback(
            Config {
                params_dir: common::params_dir(),
                pce_dir: dir.to_path_buf(),
                synthesis: mode,
                self_check,
                synthesis_workers: 2,
                ..Config::default()
            },
            vec![prover],
            fallback,
        )
        .unwrap(),
    );
    let notes: Notes = Arc::default();
    let n = notes.clone();
    e.add_timeline_sink(Arc::new(move |ev: &Event| {
        if ev.kind == EventKind::SynthEnd {
            n.lock().unwrap().push(ev.detail.clone());
        }
    }));
    (e, notes)
}

/// An engine on `prover` (pre-compiled synthesis, witness synthesis; CPU stand-in for the
/// retries; no self-check) with recordings in `dir` and `cfg`'s other settings.
fn engine_cfg(dir: &std::path::Path, prover: Box<dyn ProverBackend>, cfg: Config) -> Arc<Engine> {
    Arc::new(
        Engine::start_with_fallback(
            Config {
                params_dir: common::params_dir(),
                pce_dir: dir.to_path_buf(),
                synthesis: Some(SynthesisMode::Pce),
                self_check: false,
                synthesis_workers: 2,
                ..cfg
            },
            vec![prover],
            Box::new(Stub::default()),
        )
        .unwrap(),
    )
}

/// Proves one job and returns its output and its partition's SYNTH_END note (the path).
fn prove_and_wait(e: &Arc<Engine>, notes: &Notes, req: &JobRequest) -> (cuzk::JobOutput, String) {
    let before = notes.lock().unwrap().len();
    let id = e.submit(req.clone()).unwrap();
    let out = e.await_job(id, common::JOB_DEADLINE).unwrap();
    // Events reach sinks on the timeline's own thread.
    wait_until(60, "the SYNTH_END event", || {
        notes.lock().unwrap().len() > before
    });
    let note = notes.lock().unwrap()[before].clone();
    (out, note)
}

fn settled(e: &Engine) {
    wait_until(300, "recordings settled", || e.status().pce_working == 0);
}

#[test]
fn the_engine_records_once_saves_loads_and_records_again_over_bad_files() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(1200, "record, load, bad files", move || {
        let (e, notes) = engine_in(&d, Box::new(Stub::default()), false);
        // First job: full synthesis while the recording is made.
        assert_eq!(prove_and_wait(&e, &notes, &req).1, "full");
        settled(&e);
        let st = e.status();
        assert_eq!(
            (st.pce_recorded, st.pce_loaded, st.pce_resident),
            (1, 0, 1),
            "{st:?}"
        );
        // The recording is in the memory budget.
        assert!(st.pce_resident_bytes > 0 && st.memory_reserved >= st.pce_resident_bytes);
        // Second job: pre-compiled.
        assert_eq!(prove_and_wait(&e, &notes, &req).1, "pce");
        e.shutdown().unwrap();
        assert_eq!(
            e.status().memory_reserved,
            0,
            "recording kept after shutdown"
        );
        let files: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|f| f.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        let path = files[0].clone();
        assert!(path.to_string_lossy().ends_with(".cuzk-pce"));

        // After a restart it is loaded at engine start, before any job asks for it, not
        // recorded again.
        let (e, notes) = engine_in(&d, Box::new(Stub::default()), false);
        wait_until(120, "the recording loaded at engine start", || {
            e.status().pce_loaded == 1
        });
        assert_eq!(prove_and_wait(&e, &notes, &req).1, "pce");
        let st = e.status();
        assert_eq!(
            (st.pce_recorded, st.pce_loaded, st.recording_waits),
            (0, 1, 0),
            "{st:?}"
        );
        e.shutdown().unwrap();
        // A job submitted at once waits for the load rather than synthesize in full.
        let (e, notes) = engine_in(&d, Box::new(Stub::default()), false);
        assert_eq!(prove_and_wait(&e, &notes, &req).1, "pce");
        let st = e.status();
        assert_eq!((st.pce_recorded, st.pce_loaded), (0, 1), "{st:?}");
        e.shutdown().unwrap();

        // Truncated, a byte flipped, another circuit's: rejected, recorded again, saved.
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 1;
        let mut foreign = good.clone();
        foreign[24] ^= 0x20; // a character of the circuit id
        for (what, bytes) in [
            ("truncated", good[..good.len() - 1].to_vec()),
            ("flipped", flipped),
            ("foreign", foreign),
            ("empty", Vec::new()),
        ] {
            std::fs::write(&path, &bytes).unwrap();
            // A file is there: the first job waits for it (rejected, recorded again).
            let (e, notes) = engine_in(&d, Box::new(Stub::default()), false);
            assert_eq!(prove_and_wait(&e, &notes, &req).1, "pce", "{what}");
            settled(&e);
            assert_eq!(prove_and_wait(&e, &notes, &req).1, "pce", "{what}");
            let st = e.status();
            assert_eq!(
                (
                    st.pce_rejected_files,
                    st.pce_recorded,
                    st.pce_loaded,
                    st.recording_waits
                ),
                (1, 1, 0, 1),
                "{what}: {st:?}"
            );
            e.shutdown().unwrap();
            assert_eq!(
                std::fs::read(&path).unwrap(),
                good,
                "{what}: not saved again"
            );
        }
    });
}

/// A real 2KiB proof checked with the circuit's .vk and partition 0's public inputs (not with
/// filecoin-proofs' verify_seal: other tests of this process change its partition table); a
/// proof for other inputs is rejected too, so this cannot say yes to everything.
fn verifies_2kib(proof: &[u8]) -> bool {
    let (job, srs) = prepared(FixtureShape::default());
    let inputs = job.circuits.public_inputs(0).unwrap();
    let Ok(p) = bellperson::groth16::Proof::<blstrs::Bls12>::read(proof) else {
        return false;
    };
    let mut wrong = inputs.clone();
    wrong[0] += Fr::from(1u64);
    assert!(!bellperson::groth16::verify_proof(&srs.pvk, &p, &wrong).unwrap_or(false));
    bellperson::groth16::verify_proof(&srs.pvk, &p, &inputs).unwrap_or(false)
}

/// The default path: the recorded circuit loaded (`preload`), partitions synthesized through
/// it (the SYNTH_END note says `pce`), proved on the CPU, self-checked and accepted by the .vk.
#[test]
fn the_default_path_proves_through_the_loaded_recording_and_verifies() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(1200, "the default path", move || {
        let (e, notes) = engine_in(&d, Box::new(CpuProver), true);
        let (out, note, st) = one_job_after_preload(&e, &notes, &req);
        let out = out.unwrap();
        assert_eq!(note, "pce");
        assert!(out.verified, "{out:?}");
        assert!(verifies_2kib(&out.proof), "the .vk rejects the proof");
        assert_eq!(
            (st.cpu_retries, st.pce_fallbacks, st.pce_distrusted),
            (0, 0, 0),
            "{st:?}"
        );
        e.shutdown().unwrap();
    });
}

#[test]
fn a_wrong_recording_is_caught_and_the_job_proved_by_full_synthesis() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let path = wrong_recording(&d);
    let (job, srs) = prepared(FixtureShape::default());
    let vk = (
        bellperson::groth16::prepare_verifying_key(&srs.vk),
        job.circuits.public_inputs(0).unwrap(),
    );
    drop((job, srs));
    within(1200, "wrong recording", move || {
        let (e, notes) = engine_in(&d, Box::new(CpuProver), true);
        e.preload(&req).unwrap();
        assert_eq!(e.status().pce_loaded, 1);
        let (out, note) = prove_and_wait(&e, &notes, &req);
        assert_eq!(note, "full;pce-rejected");
        assert!(out.verified);
        // Verified again here with the circuit's .vk and public inputs (not through
        // filecoin-proofs' verify_seal: other tests of this process change its partition table).
        let proof = bellperson::groth16::Proof::<blstrs::Bls12>::read(&out.proof[..]).unwrap();
        let ok = bellperson::groth16::verify_proof(&vk.0, &proof, &vk.1).unwrap();
        assert!(ok, "the proof does not verify");
        let st = e.status();
        assert_eq!((st.pce_distrusted, st.pce_fallbacks), (1, 1), "{st:?}");
        assert!(!path.exists(), "the wrong recording's file is still there");
        e.shutdown().unwrap();
    });
}

#[test]
fn shutdown_while_a_recording_is_made_returns_and_keeps_nothing() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(600, "shutdown during a recording", move || {
        for _ in 0..3 {
            let (e, _) = engine_in(&d, Box::new(Stub::default()), false);
            let id = e.submit(req.clone()).unwrap();
            // The recording starts with the first partition's synthesis (a 2KiB recording
            // takes seconds; the poll sees it under way).
            wait_until(120, "a recording under way", || e.status().pce_working == 1);
            e.shutdown().unwrap();
            // Shutdown may still lose the race to the recording's end: then the job finished
            // before it, and nothing else is acceptable.
            match e.await_job(id, common::JOB_DEADLINE) {
                Err(err) => assert_eq!(err.status, Status::NotRunning, "{err}"),
                Ok(_) => assert_eq!(e.status().completed, 1),
            }
            let st = e.status();
            assert_eq!(
                (st.memory_reserved, st.pce_resident, st.pce_working),
                (0, 0, 0),
                "{st:?}"
            );
            // No half-written file is left behind.
            for f in std::fs::read_dir(&d).unwrap() {
                let p = f.unwrap().path();
                assert!(
                    p.to_string_lossy().ends_with(".cuzk-pce"),
                    "{p:?} left behind"
                );
            }
            std::fs::remove_dir_all(&d).ok();
            std::fs::create_dir_all(&d).unwrap();
        }
    });
}

/// A GPU stand-in that takes witnesses (as cuzk's GPU prover does): it keeps what it was
/// given and answers every call with `answer` (a dummy proof, or an error of that status).
struct WitnessTaker {
    /// Takes compact witnesses only (a GPU's lean plan): `takes_assignments` false.
    lean: bool,
    answer: Option<Status>,
    /// Per witness: aux values, the others' count, whether the class table covers the aux.
    seen: Arc<Mutex<Vec<(usize, usize, bool)>>>,
    assignments: Arc<std::sync::atomic::AtomicUsize>,
    /// Circuits whose recording it was told to forget (distrusted).
    forgotten: Arc<Mutex<Vec<String>>>,
}

impl WitnessTaker {
    fn new(answer: Option<Status>) -> Self {
        WitnessTaker {
            lean: false,
            answer,
            seen: Arc::default(),
            assignments: Arc::default(),
            forgotten: Arc::default(),
        }
    }
}

impl ProverBackend for WitnessTaker {
    fn name(&self) -> &'static str {
        "witness-taker"
    }
    fn is_gpu(&self) -> bool {
        true
    }
    fn keeps_host_copy(&self) -> bool {
        false
    }
    fn prepare(&self, _: &Srs) -> cuzk::Result<()> {
        Ok(())
    }
    fn proves_witness(&self) -> bool {
        true
    }
    fn takes_assignments(&self, _: &Srs) -> bool {
        !self.lean
    }
    fn forget_recording(&self, id: &str) {
        self.forgotten.lock().unwrap().push(id.to_string());
    }
    fn prove_witness_batch(
        &self,
        r1cs: &SparseR1cs,
        ws: &[ClassedWitness],
        _: &Srs,
        _: &[Fr],
        _: &[Fr],
        _: &mut [StageTimes],
    ) -> Option<
        Vec<(
            usize,
            cuzk::Result<bellperson::groth16::Proof<blstrs::Bls12>>,
        )>,
    > {
        let mut seen = self.seen.lock().unwrap();
        Some(
            ws.iter()
                .map(|w| {
                    seen.push((
                        w.n_aux,
                        w.other_index.len(),
                        w.n_aux == r1cs.aux && w.classes.len() == w.n_aux.div_ceil(32),
                    ));
                    let r = match self.answer {
                        None => Ok(common::dummy_proof()),
                        Some(st) => Err(cuzk::Error::new(st, "injected")),
                    };
                    (0, r)
                })
                .collect(),
        )
    }
    fn prove(
        &self,
        asg: &mut Option<ProvingAssignment>,
        _: &Srs,
        _: Fr,
        _: Fr,
        _: &mut StageTimes,
    ) -> cuzk::Result<bellperson::groth16::Proof<blstrs::Bls12>> {
        self.assignments
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        asg.take();
        Ok(common::dummy_proof())
    }
}

/// Where no prover takes a full assignment (a GPU whose plan takes compact witnesses only, as
/// an H100's lean plan at 32 GiB does), the first job of a fresh process waits for the
/// recording being made instead of synthesizing its partitions in full. The hazard: a fully
/// synthesized partition has no GPU to take it, so each would go to the CPU. The partition
/// goes to the GPU as a witness, none as an assignment, and the status counts the wait.
#[test]
fn with_no_prover_taking_assignments_the_first_job_waits_for_the_recording() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(1200, "a lean GPU's first job", move || {
        let mut gpu = WitnessTaker::new(None);
        gpu.lean = true;
        let (seen, asgs) = (gpu.seen.clone(), gpu.assignments.clone());
        let e = engine_cfg(&d, Box::new(gpu), Config::default());
        let id = e.submit(req.clone()).unwrap();
        e.await_job(id, common::JOB_DEADLINE).unwrap();
        let st = e.status();
        assert_eq!(asgs.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(seen.lock().unwrap().len(), 1);
        assert_eq!(
            (st.recording_waits, st.pce_recorded, st.cpu_retries),
            (1, 1, 0),
            "{st:?}"
        );
        e.shutdown().unwrap();
    });
}

/// The wait for a recording is bounded (`recording_wait`): past it the job fails with PROVING
/// and a message naming the recording. The hazard: a recording that never becomes ready would
/// hang the job.
#[test]
fn a_recording_not_ready_by_the_deadline_fails_the_job_naming_it() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(600, "a recording past its deadline", move || {
        let mut gpu = WitnessTaker::new(None);
        gpu.lean = true;
        let cfg = Config {
            recording_wait: Some(std::time::Duration::from_nanos(1)),
            ..Config::default()
        };
        let e = engine_cfg(&d, Box::new(gpu), cfg);
        let id = e.submit(req.clone()).unwrap();
        let err = e.await_job(id, common::JOB_DEADLINE).unwrap_err();
        assert_eq!(err.status, Status::Proving, "{err}");
        assert!(
            err.message.contains("recording of circuit") && err.message.contains(".cuzk-pce"),
            "{err}"
        );
        e.shutdown().unwrap();
    });
}

/// Full synthesis's assignment of the real 2KiB circuit's partition 0 (computed once).
fn full_2kib() -> Arc<ProvingAssignment> {
    static FULL: std::sync::OnceLock<Arc<ProvingAssignment>> = std::sync::OnceLock::new();
    FULL.get_or_init(|| {
        let (job, rep) = job_of(FixtureShape::default());
        let size = cuzk::params::check_file(&rep.params_path).unwrap().size();
        Arc::new(job.circuits.synthesize(0, Some(size), None).unwrap())
    })
    .clone()
}

/// A CPU prover for the tests whose claim is which witness the engine ends up using (native,
/// witness synthesis's, full synthesis's) after a fault, not the Groth16 arithmetic (real proofs
/// of every path are the other tests' and e2e's): it compares each assignment with full
/// synthesis's, value by value (a, b, c, inputs, aux, densities), and answers a dummy proof
/// (its engines run without the self-check) where they are the same, INTERNAL naming the first
/// difference where not. A real CPU proof of the 2KiB circuit takes about a minute on two
/// cores; this takes well under a second.
#[derive(Clone)]
struct SameAsFull {
    want: Arc<ProvingAssignment>,
    checked: Arc<std::sync::atomic::AtomicUsize>,
}

impl SameAsFull {
    fn new() -> Self {
        SameAsFull {
            want: full_2kib(),
            checked: Arc::default(),
        }
    }

    /// How many assignments passed [`SameAsFull::check`].
    fn checked(&self) -> usize {
        self.checked.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn check(&self, asg: &ProvingAssignment) -> cuzk::Result<()> {
        if let Some(d) = first_difference(asg, &self.want) {
            return Err(cuzk::Error::new(
                Status::Internal,
                format!("not full synthesis's assignment: {d}"),
            ));
        }
        self.checked
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

impl ProverBackend for SameAsFull {
    fn name(&self) -> &'static str {
        "same-as-full"
    }
    fn prepare(&self, _: &Srs) -> cuzk::Result<()> {
        Ok(())
    }
    fn host_params(&self) -> bool {
        false
    }
    fn prove(
        &self,
        asg: &mut Option<ProvingAssignment>,
        _: &Srs,
        _: Fr,
        _: Fr,
        _: &mut StageTimes,
    ) -> cuzk::Result<bellperson::groth16::Proof<blstrs::Bls12>> {
        let asg = asg
            .take()
            .ok_or_else(|| cuzk::Error::new(Status::Internal, "no assignment"))?;
        self.check(&asg)?;
        Ok(common::dummy_proof())
    }
}

/// The stand-in above can say no: one aux value, one c value or one input changed is refused,
/// by name.
#[test]
fn the_assignment_check_refuses_any_other_assignment() {
    let cpu = SameAsFull::new();
    let prove = |asg: ProvingAssignment| cpu.check(&asg);
    assert!(prove((*cpu.want).clone()).is_ok());
    for what in ["aux", "c", "inputs"] {
        let mut asg = (*cpu.want).clone();
        let v = match what {
            "aux" => &mut asg.aux_assignment,
            "c" => &mut asg.c,
            _ => &mut asg.input_assignment,
        };
        let i = v.len() / 2;
        v[i] += Fr::from(1u64);
        let err = prove(asg).unwrap_err();
        assert!(
            err.to_string().contains(&format!("{what}[{i}] differs")),
            "{err}"
        );
    }
    assert_eq!(cpu.checked(), 1);
}

/// The recording loaded (preload), then one job: returns its output, its SYNTH_END note and
/// the engine's status after it.
fn one_job_after_preload(
    e: &Arc<Engine>,
    notes: &Notes,
    req: &JobRequest,
) -> (
    cuzk::Result<cuzk::JobOutput>,
    String,
    cuzk::engine::EngineStatus,
) {
    e.preload(req).unwrap();
    settled(e);
    assert_eq!(e.status().pce_resident, 1);
    let id = e.submit(req.clone()).unwrap();
    let out = e.await_job(id, common::JOB_DEADLINE);
    wait_until(60, "the SYNTH_END event", || {
        !notes.lock().unwrap().is_empty()
    });
    let note = notes.lock().unwrap()[0].clone();
    (out, note, e.status())
}

#[test]
fn partitions_go_to_a_prover_that_computes_the_product_as_witnesses() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(1200, "witnesses to the prover", move || {
        let gpu = WitnessTaker::new(None);
        let (seen, asgs) = (gpu.seen.clone(), gpu.assignments.clone());
        let (e, notes) = engine_with(&d, Box::new(gpu), Box::new(Stub::default()), false);
        let (out, note, st) = one_job_after_preload(&e, &notes, &req);
        out.unwrap();
        assert_eq!(note, "pce;witness");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "{seen:?}");
        let (n_aux, others, covered) = seen[0];
        // 98-99.6% of the real circuit's aux values are 0 or 1.
        assert!(covered && others > 0 && others < n_aux / 50, "{seen:?}");
        assert_eq!(asgs.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!((st.cpu_retries, st.pce_fallbacks), (0, 0), "{st:?}");
        e.shutdown().unwrap();
    });
}

#[test]
fn a_witness_the_gpu_failed_on_is_proved_on_the_cpu_and_verifies() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(1200, "a failed witness on the CPU", move || {
        let gpu = WitnessTaker::new(Some(Status::Proving));
        let seen = gpu.seen.clone();
        let (e, notes) = engine_with(&d, Box::new(gpu), Box::new(CpuProver), true);
        let (out, note, st) = one_job_after_preload(&e, &notes, &req);
        let out = out.unwrap();
        assert_eq!(note, "pce;witness");
        assert_eq!(seen.lock().unwrap().len(), 1);
        assert!(out.verified && out.partitions[0].cpu_retry, "{out:?}");
        assert!(
            verifies_2kib(&out.proof),
            "the .vk rejects the CPU retry's proof"
        );
        assert_eq!((st.cpu_retries, st.pce_fallbacks), (1, 0), "{st:?}");
        e.shutdown().unwrap();
    });
}

/// A GPU proof that fails the self-check does not end the job: the bad partition is
/// synthesized in full and proved on the CPU, the GPU that made it is counted a fault, and the
/// recording it was proved under is distrusted once the CPU's proof verifies. The hazard: one
/// bad GPU proof would fail a job the CPU can still prove.
#[test]
fn a_gpu_proof_that_fails_the_self_check_is_proved_again_on_the_cpu() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(1200, "a bad GPU proof proved again", move || {
        // Dummy proofs: well formed, and wrong.
        let gpu = WitnessTaker::new(None);
        let (e, notes) = engine_with(&d, Box::new(gpu), Box::new(CpuProver), true);
        let (out, note, st) = one_job_after_preload(&e, &notes, &req);
        let out = out.unwrap();
        assert_eq!(note, "pce;witness");
        assert!(out.verified && out.partitions[0].cpu_retry, "{out:?}");
        assert!(verifies_2kib(&out.proof), "the .vk rejects the job's proof");
        assert_eq!(st.bad_proofs, 1, "{st:?}");
        assert_eq!(st.devices[0].failed_calls, 1, "{st:?}");
        assert_eq!(st.pce_distrusted, 1, "{st:?}");
        assert!(st
            .prometheus()
            .contains("cuzk_partitions_bad_proof_total 1"));
        wait_until(60, "the second SYNTH_END event", || {
            notes.lock().unwrap().len() >= 2
        });
        assert_eq!(notes.lock().unwrap()[1], "full;check-again");
        e.shutdown().unwrap();
    });
}

/// The same where the CPU's proof from full synthesis fails too: the job fails
/// (VERIFY_FAILED) once, saying so, and the recording is kept.
#[test]
fn a_partition_that_fails_the_self_check_again_on_the_cpu_fails_its_job() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(1200, "a bad proof twice", move || {
        let gpu = WitnessTaker::new(None);
        let cpu = Stub::default();
        let (e, notes) = engine_with(&d, Box::new(gpu), Box::new(cpu), true);
        let (out, _, st) = one_job_after_preload(&e, &notes, &req);
        let err = out.unwrap_err();
        assert_eq!(err.status, Status::VerifyFailed, "{err}");
        assert!(err.message.contains("still does not verify"), "{err}");
        assert_eq!((st.bad_proofs, st.pce_distrusted), (1, 0), "{st:?}");
        e.shutdown().unwrap();
    });
}

#[test]
fn a_row_the_gpu_found_unsatisfied_gives_the_recording_up_on_the_cpu() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let path = wrong_recording(&d);
    within(1200, "a bad row from the GPU", move || {
        // What cuzk's GPU prover answers where the product finds a row that does not hold.
        let gpu = WitnessTaker::new(Some(Status::Internal));
        let forgotten = gpu.forgotten.clone();
        let (e, notes) = engine_with(&d, Box::new(gpu), Box::new(CpuProver), true);
        let (out, note, st) = one_job_after_preload(&e, &notes, &req);
        let out = out.unwrap();
        assert_eq!(note, "pce;witness");
        assert!(out.verified && out.partitions[0].cpu_retry, "{out:?}");
        assert!(verifies_2kib(&out.proof), "the .vk rejects the CPU's proof");
        assert_eq!((st.pce_distrusted, st.pce_fallbacks), (1, 1), "{st:?}");
        assert!(!path.exists(), "the wrong recording's file is still there");
        // The GPU drops its copy of the distrusted recording at once: kept until shutdown, it
        // holds device memory for a recording no job uses.
        assert_eq!(forgotten.lock().unwrap().len(), 1, "the GPU kept its copy");
        // Not a device fault: the GPU stays in service.
        assert!(st.devices.iter().all(|d| d.enabled), "{st:?}");
        e.shutdown().unwrap();
    });
}

/// A recording of the real 2KiB circuit with one coefficient of C changed, on a term whose
/// value in partition 0's witness is not zero (so its row no longer holds), saved in `dir` as a
/// consistent file; returns the file's path.
fn wrong_recording(dir: &std::path::Path) -> std::path::PathBuf {
    let (job, _) = prepared(FixtureShape::default());
    let mut rec = job.circuits.record(None).unwrap();
    let w = job.circuits.synthesize_witness(0, None, None).unwrap();
    let t = rec
        .c
        .cols
        .iter()
        .position(|&col| col & pce::INPUT_BIT == 0 && w.value(col as usize) != Fr::from(0u64))
        .unwrap();
    rec.c.coeffs[t] = if rec.c.coeffs[t] == 0 { 1 } else { 0 };
    let path = file::path(dir, &rec.id);
    file::save(&rec, &path).unwrap();
    path
}

/// The default configuration makes witnesses natively: proved on the CPU (SYNTH_END `native`)
/// the proof verifies; a prover that takes witnesses gets the native one (`native;witness`).
#[test]
fn native_witnesses_are_the_default_and_their_proofs_verify() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    within(1200, "native witnesses", move || {
        let (e, notes) = engine_mode(&d, Box::new(CpuProver), Box::new(CpuProver), true, None);
        assert_eq!(e.config().synthesis_mode(), SynthesisMode::Native);
        let (out, note, st) = one_job_after_preload(&e, &notes, &req);
        let out = out.unwrap();
        assert_eq!(note, "native");
        assert!(out.verified, "{out:?}");
        assert!(verifies_2kib(&out.proof), "the .vk rejects the proof");
        assert_eq!(
            (
                st.native_witnesses,
                st.native_fallbacks,
                st.native_distrusted
            ),
            (1, 0, 0),
            "{st:?}"
        );
        assert!(
            st.prometheus()
                .contains("cuzk_native_witness_total{event=\"made\"} 1"),
            "{}",
            st.prometheus()
        );
        e.shutdown().unwrap();

        let gpu = WitnessTaker::new(None);
        let (seen, asgs) = (gpu.seen.clone(), gpu.assignments.clone());
        let (e, notes) = engine_mode(
            &d,
            Box::new(gpu),
            Box::new(Stub::default()),
            false,
            Some(SynthesisMode::Native),
        );
        let (out, note, st) = one_job_after_preload(&e, &notes, &req);
        out.unwrap();
        assert_eq!(note, "native;witness");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "{seen:?}");
        let (n_aux, others, covered) = seen[0];
        assert!(covered && others > 0 && others < n_aux / 50, "{seen:?}");
        assert_eq!(asgs.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(
            (st.native_witnesses, st.native_distrusted),
            (1, 0),
            "{st:?}"
        );
        e.shutdown().unwrap();
    });
}

/// A wrong recording under native witnesses: the native witness fails the row check, is made
/// again by witness synthesis, the two agree, so the recording is at fault (given up, the
/// partition synthesized in full) and the generator stays in use. On the host path, and where
/// a witness prover found the row (its partition then goes to the CPU).
#[test]
fn a_wrong_recording_under_native_witnesses_is_the_recordings_fault() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let cpu = SameAsFull::new();
    within(
        1200,
        "a wrong recording under native witnesses",
        move || {
            for gpu in [false, true] {
                let path = wrong_recording(&d);
                let prover: Box<dyn ProverBackend> = if gpu {
                    Box::new(WitnessTaker::new(Some(Status::Internal)))
                } else {
                    Box::new(cpu.clone())
                };
                let (e, notes) = engine_mode(
                    &d,
                    prover,
                    Box::new(cpu.clone()),
                    false,
                    Some(SynthesisMode::Native),
                );
                let (out, note, st) = one_job_after_preload(&e, &notes, &req);
                let out = out.unwrap();
                assert_eq!(
                    note,
                    if gpu {
                        "native;witness"
                    } else {
                        "full;pce-rejected"
                    }
                );
                // Proved (on the CPU) from full synthesis's assignment.
                let want = if gpu { 2 } else { 1 };
                assert_eq!(cpu.checked(), want, "gpu {gpu}: {out:?}");
                assert_eq!(
                    (st.pce_distrusted, st.pce_fallbacks, st.native_distrusted),
                    (1, 1, 0),
                    "gpu {gpu}: {st:?}"
                );
                assert!(
                    !path.exists(),
                    "gpu {gpu}: the wrong recording's file is still there"
                );
                e.shutdown().unwrap();
            }
        },
    );
}

/// The real circuits, except for their native witnesses.
struct WrongNative(Arc<dyn porep::SealCircuits>, Fault);

#[derive(Clone, Copy, PartialEq)]
enum Fault {
    /// One aux value wrong (a replica id bit cleared: what a defect of the generator would give).
    Value,
    /// The generator does not support the circuit (UNSUPPORTED).
    Unsupported,
    /// The job's input refused (INVALID_INPUT: vanilla proofs that do not make a circuit).
    Input,
}

impl porep::SealCircuits for WrongNative {
    fn shape(&self) -> porep::Shape {
        self.0.shape()
    }
    fn params_id(&self) -> &str {
        self.0.params_id()
    }
    fn synthesize(
        &self,
        k: usize,
        size: Option<cuzk::params::CircuitSize>,
        abort: Option<Arc<std::sync::atomic::AtomicBool>>,
    ) -> cuzk::Result<ProvingAssignment> {
        self.0.synthesize(k, size, abort)
    }
    fn record(
        &self,
        abort: Option<Arc<std::sync::atomic::AtomicBool>>,
    ) -> cuzk::Result<pce::Recording> {
        self.0.record(abort)
    }
    fn synthesize_witness(
        &self,
        k: usize,
        aux_hint: Option<usize>,
        abort: Option<Arc<std::sync::atomic::AtomicBool>>,
    ) -> cuzk::Result<pce::Witness> {
        self.0.synthesize_witness(k, aux_hint, abort)
    }
    fn native_witness(
        &self,
        k: usize,
        aux_hint: Option<usize>,
        abort: Option<Arc<std::sync::atomic::AtomicBool>>,
    ) -> cuzk::Result<pce::Witness> {
        match self.1 {
            Fault::Unsupported => {
                return Err(cuzk::Error::unsupported(
                    "native witness: a circuit it does not follow",
                ))
            }
            Fault::Input => return Err(cuzk::Error::invalid_input("inconsistent vanilla proofs")),
            Fault::Value => {}
        }
        let w = self.0.native_witness(k, aux_hint, abort)?;
        // Aux value 0 is the replica id; its 255 bits follow.
        let j = (1..256).find(|&j| w.value(j) == Fr::from(1u64)).unwrap();
        let mut wrong = pce::Witness::with_inputs(w.inputs.clone(), w.n_aux());
        for i in 0..w.n_aux() {
            wrong.push(if i == j { Fr::from(0u64) } else { w.value(i) });
        }
        Ok(wrong)
    }
    fn native_partition(&self, k: usize) -> cuzk::Result<pce::native::stacked::Partition> {
        self.0.native_partition(k)
    }
    fn public_inputs(&self, k: usize) -> cuzk::Result<Vec<Fr>> {
        self.0.public_inputs(k)
    }
    fn reference_assignment(&self, k: usize) -> cuzk::Result<ProvingAssignment> {
        self.0.reference_assignment(k)
    }
}

/// `req`'s job, its circuits' native witnesses given `fault`.
fn wrong_native(req: &JobRequest, fault: Fault) -> porep::PreparedJob {
    let parsed = porep::parse_c1(&req.c1).unwrap();
    let job = porep::prepare(parsed.c1, req.prover_id, req.sector_id, req.fixture).unwrap();
    porep::PreparedJob {
        circuits: Arc::new(WrongNative(job.circuits, fault)),
        kind: job.kind,
        class: job.class,
        aggregate: job.aggregate,
    }
}

/// A native witness that fails the row check where witness synthesis's passes: the generator is
/// at fault. It is turned off for the circuit (counted, the recording kept), the partition uses
/// witness synthesis's witness and its proof verifies; the next job's witness is made by witness
/// synthesis. On the host path and where a witness prover found the row.
#[test]
fn a_native_witness_that_fails_the_row_check_turns_the_generator_off_for_its_circuit() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let cpu = SameAsFull::new();
    within(1200, "a wrong native witness", move || {
        for gpu in [false, true] {
            let prover: Box<dyn ProverBackend> = if gpu {
                Box::new(WitnessTaker::new(Some(Status::Internal)))
            } else {
                Box::new(cpu.clone())
            };
            let (e, notes) = engine_mode(
                &d,
                prover,
                Box::new(cpu.clone()),
                false,
                Some(SynthesisMode::Native),
            );
            e.preload(&req).unwrap();
            settled(&e);
            let prove = |want: &str| {
                let before = notes.lock().unwrap().len();
                let checked = cpu.checked();
                let id = e
                    .submit_prepared(wrong_native(&req, Fault::Value), 0)
                    .unwrap();
                let out = e.await_job(id, common::JOB_DEADLINE).unwrap();
                wait_until(60, "the SYNTH_END event", || {
                    notes.lock().unwrap().len() > before
                });
                assert_eq!(notes.lock().unwrap()[before], want, "gpu {gpu}");
                // Proved (on the CPU: where the witness prover failed, a retry) from full
                // synthesis's assignment.
                assert_eq!(cpu.checked(), checked + 1, "gpu {gpu}: {out:?}");
            };
            prove(if gpu {
                "native;witness"
            } else {
                "pce;native-rejected"
            });
            let st = e.status();
            assert_eq!(
                (
                    st.native_witnesses,
                    st.native_fallbacks,
                    st.native_distrusted
                ),
                (1, 1, 1),
                "gpu {gpu}: {st:?}"
            );
            assert_eq!(
                (st.pce_distrusted, st.pce_fallbacks),
                (0, 0),
                "gpu {gpu}: {st:?}"
            );
            // Turned off: the next partition's witness is witness synthesis's.
            prove(if gpu { "pce;witness" } else { "pce" });
            assert_eq!(e.status().native_witnesses, 1, "gpu {gpu}");
            e.shutdown().unwrap();
        }
    });
}

/// A circuit the generator does not support: its partitions use witness synthesis (SYNTH_END
/// `pce`), the generator is not tried again for it (one fallback, logged once) and not counted
/// as distrusted. Before that, a job whose input the generator refuses (INVALID_INPUT) fails as
/// it would under witness synthesis, and does not turn the generator off for other jobs.
#[test]
fn a_circuit_the_native_generator_does_not_support_uses_witness_synthesis() {
    let req = real_2kib();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let cpu = SameAsFull::new();
    within(1200, "an unsupported circuit", move || {
        let (e, notes) = engine_mode(
            &d,
            Box::new(cpu.clone()),
            Box::new(Stub::default()),
            false,
            Some(SynthesisMode::Native),
        );
        e.preload(&req).unwrap();
        settled(&e);
        let submit = |fault: Fault| {
            let id = e.submit_prepared(wrong_native(&req, fault), 0).unwrap();
            e.await_job(id, common::JOB_DEADLINE)
        };
        let err = submit(Fault::Input).unwrap_err();
        assert_eq!(err.status, Status::InvalidInput, "{err}");
        let st = e.status();
        assert_eq!(
            (
                st.native_witnesses,
                st.native_fallbacks,
                st.native_distrusted
            ),
            (0, 0, 0),
            "the generator was turned off by a job's input: {st:?}"
        );
        for round in 0..2 {
            let out = submit(Fault::Unsupported).unwrap();
            // Proved from full synthesis's assignment.
            assert_eq!(cpu.checked(), round + 1, "round {round}: {out:?}");
            wait_until(60, "the SYNTH_END event", || {
                notes.lock().unwrap().len() > round
            });
            assert_eq!(notes.lock().unwrap()[round], "pce", "round {round}");
            let st = e.status();
            assert_eq!(
                (
                    st.native_witnesses,
                    st.native_fallbacks,
                    st.native_distrusted
                ),
                (0, 1, 0),
                "round {round}: {st:?}"
            );
        }
        e.shutdown().unwrap();
    });
}

/// A PoSt witness is mostly full field elements (Poseidon states), where 0.4-1.6% of PoRep's
/// aux values are neither 0 nor 1. On the witness path (a GPU that computes a, b and c), a PoSt
/// partition reserves at least what its compact witness holds: the first (no witness of the
/// circuit measured yet) by its kind's estimate, the next by what the first held, and never
/// less than the kind's estimate (PoSt's covers the native generator's assembly: its groups
/// and the witness they are copied into, held at once).
#[test]
fn a_post_partition_reserves_what_its_witness_holds() {
    use common::tools::{fixture::ensure_post_params, post_fixture};
    common::init();
    let proof = cuzk::post::PostProof::StackedDrgWindow2KiBV1_2;
    ensure_post_params(proof, &common::params_dir(), 0x5eed).unwrap();
    let f = post_fixture::post_fixture(&post_fixture::PostFixtureSpec {
        proof,
        prover_id: [7; 32],
        sectors: 2,
        first_sector: 1,
        seed: 3,
    })
    .unwrap();
    let req = f.request(0);
    let circuits = cuzk::post::prepare(&req).unwrap().circuits;
    let n_aux = circuits.synthesize_witness(0, None, None).unwrap().n_aux();
    // As the engine makes it: sized for the recording's aux count.
    let w = circuits.synthesize_witness(0, Some(n_aux), None).unwrap();
    let [_, _, others] = w.counts();
    assert!(
        others * 2 > w.n_aux(),
        "most of a PoSt witness is dense: {others} of {}",
        w.n_aux()
    );
    let holds = w.bytes();
    // Made natively (the default), a PoSt witness is assembled from groups of sectors: the
    // groups and the witness they are copied into are held at once.
    let native = circuits.native_witness(0, Some(n_aux), None).unwrap();
    let native_peak = 2 * native.bytes();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let reserved = within(600, "two PoSt jobs on the witness path", move || {
        let mut gpu = WitnessTaker::new(None);
        gpu.lean = true;
        let seen = gpu.seen.clone();
        let e = engine_cfg(&d, Box::new(gpu), Config::default());
        let starts: Arc<Mutex<Vec<u64>>> = Arc::default();
        let s = starts.clone();
        e.add_timeline_sink(Arc::new(move |ev: &Event| {
            if ev.kind == EventKind::SynthStart {
                s.lock().unwrap().push(ev.value);
            }
        }));
        for _ in 0..2 {
            let id = e.submit_post(&req).unwrap();
            e.await_job(id, common::JOB_DEADLINE).unwrap();
        }
        wait_until(60, "two SYNTH_START events", || {
            starts.lock().unwrap().len() >= 2
        });
        assert_eq!(
            seen.lock().unwrap().len(),
            2,
            "both went to the GPU as witnesses"
        );
        e.shutdown().unwrap();
        let v = starts.lock().unwrap().clone();
        v
    });
    for (i, r) in reserved.iter().enumerate() {
        assert!(
            *r >= holds,
            "PoSt partition {i} reserved {r} bytes, its witness holds {holds}"
        );
        assert!(
            *r >= native_peak,
            "PoSt partition {i} reserved {r} bytes, making its witness natively holds {native_peak}"
        );
    }
}
