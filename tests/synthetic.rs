//! Synthetic C1 outputs (`cuzk fixture`) and generated parameters (`cuzk params gen`), judged
//! by filecoin-proofs: its vanilla verification (what `seal_commit_phase1` checks) at every
//! sector size, its `seal_commit_phase2` and `verify_seal` at 2KiB with cuzk's generated set;
//! the mark on generated sets and the engine's refusal of them for production sizes.

mod common;

use bellperson::{groth16::generate_parameters, Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use common::tools::paramgen::{expected_counts, file_bytes, write_params, Comb};
use common::tools::{
    fixture,
    paramgen::{self, Secrets},
    synthetic::{synthetic_c1_json, SyntheticSpec},
};
use cuzk::{
    engine::{Config, Engine, JobRequest},
    params::SrsCache,
    pce::RecordingCS,
    porep::{self, FixtureShape},
    Status,
};
use ff::{Field, PrimeField};
use group::{Curve, Group};
use rand::SeedableRng;

fn spec(size: u64, shape: FixtureShape) -> SyntheticSpec {
    SyntheticSpec {
        proof: fixture::v1_1_proof(size).unwrap(),
        shape,
        sector_id: 4242,
        prover_id: porep::prover_id_from_miner(31337),
        seed: 9,
    }
}

/// filecoin-proofs' vanilla verification of a C1 output (and the replica id check).
fn vanilla(c1: &[u8], s: &SyntheticSpec) -> cuzk::Result<()> {
    let parsed = porep::parse_c1(c1)?;
    porep::prepare(parsed.c1, s.prover_id, s.sector_id, s.shape).map(|_| ())
}

fn edit(c1: &[u8], f: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(c1).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

/// The first challenge proof of partition `k`.
fn proof(v: &mut serde_json::Value, k: usize) -> &mut serde_json::Value {
    let vp = v["vanilla_proofs"].as_object_mut().unwrap();
    let variant = vp.values_mut().next().unwrap();
    &mut variant[k][0]
}

/// Flips the lowest bit of a 32-byte value (stays a canonical field element).
fn flip(x: &mut serde_json::Value) {
    let b = x[0].as_u64().unwrap();
    x[0] = (b ^ 1).into();
}

/// The first sibling hash anywhere inside a Merkle proof.
fn first_sibling(v: &mut serde_json::Value) -> &mut serde_json::Value {
    fn find(v: &mut serde_json::Value) -> Option<&mut serde_json::Value> {
        match v {
            serde_json::Value::Object(m) => {
                if m.contains_key("hashes") {
                    return m.get_mut("hashes").map(|h| &mut h[0]);
                }
                m.values_mut().find_map(find)
            }
            serde_json::Value::Array(a) => a.iter_mut().find_map(find),
            _ => None,
        }
    }
    find(v).expect("a Merkle path")
}

/// Each change of the C1 output that vanilla verification (or the replica id check) can see.
fn changes(k: usize) -> Vec<(&'static str, Box<dyn Fn(&mut serde_json::Value)>)> {
    vec![
        ("seed", Box::new(|v| flip(&mut v["seed"]))),
        ("ticket", Box::new(|v| flip(&mut v["ticket"]))),
        ("comm_r", Box::new(|v| flip(&mut v["comm_r"]))),
        ("comm_d", Box::new(|v| flip(&mut v["comm_d"]))),
        ("replica_id", Box::new(|v| flip(&mut v["replica_id"]))),
        (
            "a challenge's label",
            Box::new(move |v| {
                flip(&mut proof(v, k)["replica_column_proofs"]["c_x"]["column"]["rows"][0])
            }),
        ),
        (
            "a parent's label",
            Box::new(move |v| {
                let p = &mut proof(v, k)["replica_column_proofs"]["drg_parents"][1];
                flip(&mut p["column"]["rows"][0])
            }),
        ),
        (
            "a tree C sibling",
            Box::new(move |v| {
                let c = &mut proof(v, k)["replica_column_proofs"]["exp_parents"][0];
                flip(first_sibling(&mut c["inclusion_proof"]))
            }),
        ),
        (
            "a labeling parent",
            Box::new(move |v| flip(&mut proof(v, k)["labeling_proofs"][0]["parents"][3])),
        ),
        (
            "an encoding parent",
            Box::new(move |v| flip(&mut proof(v, k)["encoding_proof"]["parents"][0])),
        ),
        (
            "a replica node",
            Box::new(move |v| {
                let r = proof(v, k)["comm_r_last_proof"]["data"]
                    .as_object_mut()
                    .unwrap()
                    .values_mut()
                    .next()
                    .unwrap();
                flip(&mut r["leaf"])
            }),
        ),
    ]
}

fn passes_and_every_change_fails(size: u64, shape: FixtureShape, k: usize, all: bool) {
    let s = spec(size, shape);
    let c1 = synthetic_c1_json(&s).unwrap();
    assert_eq!(c1, synthetic_c1_json(&s).unwrap(), "not deterministic");
    vanilla(&c1, &s).unwrap_or_else(|e| panic!("{size} B: {e}"));
    // The identity it was made for, and no other.
    let mut other = s.clone();
    other.sector_id += 1;
    assert_eq!(
        vanilla(&c1, &other).unwrap_err().status,
        Status::InvalidInput
    );
    other = s.clone();
    other.prover_id = porep::prover_id_from_miner(31338);
    assert_eq!(
        vanilla(&c1, &other).unwrap_err().status,
        Status::InvalidInput
    );
    // Another seed is another sector.
    let mut reseeded = s.clone();
    reseeded.seed += 1;
    assert_ne!(synthetic_c1_json(&reseeded).unwrap(), c1);
    for (i, (what, change)) in changes(k).into_iter().enumerate() {
        if !all && i % 3 != 0 {
            continue;
        }
        let bad = edit(&c1, change);
        let e = vanilla(&bad, &s).expect_err(what);
        assert_eq!(e.status, Status::InvalidInput, "{what}: {e}");
    }
}

#[test]
fn synthetic_2kib_c1_passes_vanilla_verification_and_no_changed_one_does() {
    passes_and_every_change_fails(2048, FixtureShape::default(), 0, true);
    // A fixture shape too: the 10-partition one, a change in the last partition.
    passes_and_every_change_fails(
        2048,
        FixtureShape {
            partitions: 10,
            layers: 0,
        },
        9,
        true,
    );
}

#[test]
fn synthetic_32gib_and_64gib_c1_pass_vanilla_verification() {
    // 10 partitions of 18 challenges, 11 layers, the real tree shapes (8-8-0 and 8-8-2).
    passes_and_every_change_fails(32 << 30, FixtureShape::default(), 3, false);
    passes_and_every_change_fails(64 << 30, FixtureShape::default(), 9, false);
}

/// The 2KiB parameter set `cuzk setup` generates (cached), and a synthetic C1 output proved
/// with it by filecoin-proofs and by cuzk, each accepted by filecoin-proofs' verify_seal.
#[test]
fn generated_2kib_parameters_prove_synthetic_sectors_with_filecoin_proofs_and_cuzk() {
    let (_, rep, _) = common::fixture(FixtureShape::default());
    // The .vk / .params cross-check passes, and the set is marked.
    let srs = SrsCache::new(common::params_dir())
        .get(&rep.params_id, &cuzk::budget::Budget::new(u64::MAX / 2))
        .unwrap();
    assert!(srs.random, "a generated set carries the mark");
    let s = spec(2048, FixtureShape::default());
    let c1 = synthetic_c1_json(&s).unwrap();
    let theirs = common::within(1200, "filecoin-proofs C2", {
        let c1 = c1.clone();
        let (p, id) = (s.prover_id, s.sector_id);
        move || fixture::baseline_c2(&c1, p, id)
    })
    .expect("filecoin-proofs seal_commit_phase2 with the generated parameters");
    assert!(porep::verify::verify_seal(&c1, s.prover_id, s.sector_id, &theirs).unwrap());
    // A changed public input does not verify.
    assert!(!porep::verify::verify_seal(&c1, s.prover_id, s.sector_id + 1, &theirs).unwrap());
    let mut pid = s.prover_id;
    pid[0] ^= 1;
    assert!(!porep::verify::verify_seal(&c1, pid, s.sector_id, &theirs).unwrap());
    let engine = Engine::start(Config {
        params_dir: common::params_dir(),
        ..Config::default()
    })
    .unwrap();
    let ours = common::within(1200, "cuzk C2", {
        let c1 = c1.clone();
        let (p, id) = (s.prover_id, s.sector_id);
        move || {
            engine
                .prove(JobRequest {
                    c1,
                    sector_id: id,
                    prover_id: p,
                    priority: 0,
                    fixture: FixtureShape::default(),
                })
                .map(|o| o.proof)
        }
    })
    .unwrap();
    assert!(porep::verify::verify_seal(&c1, s.prover_id, s.sector_id, &ours).unwrap());
}

/// A few constraints with public inputs: a small marked set to put under a production name.
struct Small;

impl bellperson::Circuit<blstrs::Scalar> for Small {
    fn synthesize<CS: bellperson::ConstraintSystem<blstrs::Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellperson::SynthesisError> {
        let x = cs.alloc_input(|| "x", || Ok(blstrs::Scalar::from(3)))?;
        let y = cs.alloc(|| "y", || Ok(blstrs::Scalar::from(9)))?;
        cs.enforce(|| "sq", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

/// A random set under a production file name is refused for production work (PARAMS, with a
/// message that says why) unless the engine is told it runs a benchmark.
#[test]
fn the_engine_refuses_random_parameters_for_production_sizes_unless_benchmarking() {
    let dir = tempfile::tempdir().unwrap();
    let proof = fixture::v1_1_proof(32 << 30).unwrap();
    let id = porep::params_id_for(proof, FixtureShape::default()).unwrap();
    let mut rec = RecordingCS::record(Small, &id, None).unwrap();
    rec.id = id.clone();
    paramgen::generate(&rec, dir.path(), 32 << 30, 1).unwrap();
    // Never over an existing file.
    let again = paramgen::generate(&rec, dir.path(), 32 << 30, 1).unwrap_err();
    assert!(again.message.contains("refusing to overwrite"), "{again}");
    let start = |allow: Option<bool>| {
        Engine::start(Config {
            params_dir: dir.path().to_path_buf(),
            allow_random_params: allow,
            devices: "cpu".into(),
            ..Config::default()
        })
        .unwrap()
    };
    let e = start(Some(false));
    let err = e
        .admission(proof, FixtureShape::default(), 0)
        .expect_err("a random set for 32GiB");
    assert_eq!(err.status, Status::Params, "{err}");
    assert!(err.message.contains("random parameter set"), "{err}");
    assert!(err.message.contains("CUZK_ALLOW_RANDOM_PARAMS"), "{err}");
    e.shutdown().unwrap();
    let e = start(Some(true));
    e.admission(proof, FixtureShape::default(), 0)
        .expect("accepted for a benchmark");
    e.shutdown().unwrap();
    // A set with another alpha is not marked.
    let mut s = Secrets::marked(1);
    s.alpha = blstrs::Scalar::from(5);
    let (vk, _) = paramgen::write_params(&rec, &s, &mut Vec::new(), None).unwrap();
    assert!(!cuzk::params::is_random_set(&vk));
}

// The generator against bellperson's, and its fixed-base multiplication against the group's.

#[test]
fn combs_multiply_like_the_group() {
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(7);
    let g1 = G1Projective::random(&mut rng);
    let g2 = G2Projective::random(&mut rng);
    for w in [3, 8, 13, 16] {
        let c1 = Comb::new(g1, w);
        let c2 = Comb::new(g2, w);
        let mut ks: Vec<Fr> = (0..40).map(|_| Fr::random(&mut rng)).collect();
        ks.extend([Fr::ONE, -Fr::ONE, Fr::from(2), Fr::ZERO - Fr::from(2)]);
        ks.push(Fr::from_u128(u128::MAX));
        for k in &ks {
            assert_eq!(c1.mul(k), g1 * k, "w {w}");
            assert_eq!(c2.mul(k), g2 * k, "w {w}");
        }
        ks.push(Fr::ZERO);
        let mut out = vec![0u8; ks.len() * 96];
        c1.mul_into(&ks, &mut out);
        for (k, o) in ks.iter().zip(out.chunks(96)) {
            assert_eq!(o, &(g1 * k).to_affine().to_uncompressed()[..], "w {w}");
        }
        let mut out = vec![0u8; ks.len() * 192];
        c2.mul_into(&ks, &mut out);
        for (k, o) in ks.iter().zip(out.chunks(192)) {
            assert_eq!(o, &(g2 * k).to_affine().to_uncompressed()[..], "w {w}");
        }
    }
}

/// Inputs used in several places, coefficients of all kinds, a variable only in A, one
/// only in B, one only in C, duplicated terms.
struct Mixed(usize);

impl Circuit<Fr> for Mixed {
    fn synthesize<CS: ConstraintSystem<Fr>>(
        self,
        cs: &mut CS,
    ) -> std::result::Result<(), SynthesisError> {
        let x = cs.alloc_input(|| "x", || Ok(Fr::from(3)))?;
        let y = cs.alloc_input(|| "y", || Ok(Fr::from(5)))?;
        let mut prev = cs.alloc(|| "a0", || Ok(Fr::from(7)))?;
        for i in 0..self.0 {
            let v = cs.alloc(|| format!("v{i}"), || Ok(Fr::from(i as u64)))?;
            let k = Fr::from(i as u64 + 2);
            cs.enforce(
                || format!("c{i}"),
                |lc| lc + prev + (k, x) - (Fr::from(9), CS::one()),
                |lc| lc + v + v + y,
                |lc| lc + (-k, v) + prev,
            );
            if i % 3 == 0 {
                let only_a = cs.alloc(|| "oa", || Ok(Fr::ONE))?;
                let only_b = cs.alloc(|| "ob", || Ok(Fr::ONE))?;
                let only_c = cs.alloc(|| "oc", || Ok(Fr::ONE))?;
                cs.enforce(|| "a", |lc| lc + only_a, |lc| lc + CS::one(), |lc| lc + v);
                cs.enforce(
                    || "b",
                    |lc| lc + CS::one(),
                    |lc| lc + only_b,
                    |lc| lc + only_c,
                );
            }
            prev = v;
        }
        Ok(())
    }
}

#[test]
fn the_set_is_bellpersons_byte_for_byte() {
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(11);
    for n in [1, 7, 40, 300] {
        let s = Secrets {
            g1: G1Projective::random(&mut rng),
            g2: G2Projective::random(&mut rng),
            alpha: Fr::random(&mut rng),
            beta: Fr::random(&mut rng),
            gamma: Fr::random(&mut rng),
            delta: Fr::random(&mut rng),
            tau: Fr::random(&mut rng),
        };
        let theirs = generate_parameters::<Bls12, _>(
            Mixed(n),
            s.g1,
            s.g2,
            s.alpha,
            s.beta,
            s.gamma,
            s.delta,
            s.tau,
        )
        .unwrap();
        let mut want = Vec::new();
        theirs.write(&mut want).unwrap();
        let rec = RecordingCS::record(Mixed(n), "mixed", None).unwrap();
        let mut got = Vec::new();
        let (vk, report) = write_params(&rec, &s, &mut got, None).unwrap();
        assert_eq!(vk, theirs.vk, "n {n}");
        assert_eq!(report.counts, expected_counts(&rec), "n {n}");
        assert_eq!(
            got.len() as u64,
            file_bytes(&report.counts, rec.inputs),
            "n {n}"
        );
        assert!(got == want, "n {n}: the files differ");
    }
}

#[test]
fn marked_sets_are_recognised() {
    let rec = RecordingCS::record(Mixed(5), "mixed", None).unwrap();
    let (vk, _) = write_params(&rec, &Secrets::marked(1), &mut Vec::new(), None).unwrap();
    assert!(cuzk::params::is_random_set(&vk));
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(2);
    let mut s = Secrets::marked(1);
    s.alpha = Fr::random(&mut rng);
    let (vk, _) = write_params(&rec, &s, &mut Vec::new(), None).unwrap();
    assert!(!cuzk::params::is_random_set(&vk));
}
