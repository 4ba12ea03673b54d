//! Native witness generation (`cuzk::pce::native`) against witness-only synthesis
//! (`WitnessTarget` running storage-proofs' own circuit), element for element: every aux value
//! (its class and, where neither 0 nor 1, its value) and every public input, on the real 2KiB
//! circuit, the 10-partition fixture, the 32 GiB-shaped scaled fixture (11 layers), synthetic
//! C1 outputs of random seeds, and (opt-in, `--ignored`) a 32 GiB and a 64 GiB partition.
//!
//! A C1 whose vanilla proofs do not lead to their commitments is refused by the generator
//! (INTERNAL), not turned into a witness that would fail the circuit.

mod common;

use std::sync::{atomic::AtomicBool, Arc};

use common::tools::{
    fixture,
    synthetic::{synthetic_c1_json, SyntheticSpec},
};
use cuzk::{
    pce::Witness,
    porep::{self, FixtureShape, SealCircuits},
    Status,
};
use proptest::prelude::*;

/// Where two witnesses first differ, for the failure message.
fn first_difference(got: &Witness, want: &Witness) -> String {
    if got.inputs != want.inputs {
        let i = (0..got.inputs.len().min(want.inputs.len()))
            .find(|&i| got.inputs[i] != want.inputs[i])
            .unwrap_or(got.inputs.len().min(want.inputs.len()));
        return format!(
            "public input {i} (of {} vs {})",
            got.inputs.len(),
            want.inputs.len()
        );
    }
    let n = got.n_aux().min(want.n_aux());
    match (0..n).find(|&j| got.value(j) != want.value(j)) {
        Some(j) => format!("aux value {j} of {} (want {})", got.n_aux(), want.n_aux()),
        None => format!("aux count {} vs {}", got.n_aux(), want.n_aux()),
    }
}

/// Partitions `ks` of `circuits`: the native witness is witness synthesis's, and its inputs
/// are the ones the verifier derives.
fn same(circuits: &dyn SealCircuits, ks: impl IntoIterator<Item = usize>) {
    for k in ks {
        let want = circuits.synthesize_witness(k, None, None).unwrap();
        let got = circuits.native_witness(k, None, None).unwrap();
        assert!(
            got == want,
            "partition {k}: the native witness differs at {}",
            first_difference(&got, &want)
        );
        assert!(got.classes_match());
        assert_eq!(
            got.inputs[1..],
            circuits.public_inputs(k).unwrap()[..],
            "partition {k}: inputs"
        );
    }
}

fn prepared_fixture(shape: FixtureShape) -> porep::PreparedJob {
    let (spec, _, c1) = common::fixture(shape);
    let parsed = porep::parse_c1(&c1).unwrap();
    porep::prepare(parsed.c1, spec.prover_id(), spec.sector_id, shape).unwrap()
}

fn spec(size: u64, shape: FixtureShape, seed: u64) -> SyntheticSpec {
    SyntheticSpec {
        proof: fixture::v1_1_proof(size).unwrap(),
        shape,
        sector_id: 77 + seed,
        prover_id: porep::prover_id_from_miner(1000 + seed),
        seed,
    }
}

fn prepared_synthetic(s: &SyntheticSpec) -> porep::PreparedJob {
    common::init();
    let c1 = synthetic_c1_json(s).unwrap();
    let parsed = porep::parse_c1(&c1).unwrap();
    porep::prepare(parsed.c1, s.prover_id, s.sector_id, s.shape).unwrap()
}

#[test]
fn the_real_2kib_circuit() {
    let job = prepared_fixture(FixtureShape::default());
    same(&*job.circuits, [0]);
}

#[test]
fn every_partition_of_the_10_partition_fixture() {
    let job = prepared_fixture(FixtureShape {
        partitions: 10,
        layers: 0,
    });
    same(&*job.circuits, 0..10);
}

/// 11 layers (column hashes of arity 11, labels over 14 parents), one challenge per partition.
#[test]
fn the_scaled_fixture() {
    let shape = FixtureShape {
        partitions: 10,
        layers: 11,
    };
    let job = prepared_synthetic(&spec(2048, shape, 11));
    same(&*job.circuits, [0, 9]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Synthetic 2KiB sectors of random seeds (data, labels, tree nodes, ticket and seed, so
    /// the challenges and every path index), real shape and 4-partition, 2-layer shape.
    #[test]
    fn random_seeds(seed in 0u64..1 << 40, four in any::<bool>()) {
        let shape = if four {
            FixtureShape { partitions: 4, layers: 0 }
        } else {
            FixtureShape::default()
        };
        let job = prepared_synthetic(&spec(2048, shape, seed));
        let n = job.circuits.shape().partitions;
        same(&*job.circuits, [seed as usize % n]);
    }
}

/// A stop asked for before it starts ends the generator (CANCELLED), not a witness.
#[test]
fn an_abort_stops_it() {
    let job = prepared_fixture(FixtureShape::default());
    let stop = Arc::new(AtomicBool::new(true));
    let e = job
        .circuits
        .native_witness(0, None, Some(stop))
        .unwrap_err();
    assert_eq!(e.status, Status::Cancelled, "{e}");
}

/// One partition of a synthetic 32 GiB sector (130,278,541 constraints, trees of arity 8-8).
/// Opt-in: `cargo test --release --test native -- --ignored full_size`.
#[test]
#[ignore = "a 2^27 partition: minutes of witness synthesis"]
fn full_size_32gib_partition() {
    let job = prepared_synthetic(&spec(32 << 30, FixtureShape::default(), 32));
    same(&*job.circuits, [3]);
}

/// One partition of a synthetic 64 GiB sector (trees of arity 8-8-2).
#[test]
#[ignore = "a 2^27 partition: minutes of witness synthesis"]
fn full_size_64gib_partition() {
    let job = prepared_synthetic(&spec(64 << 30, FixtureShape::default(), 64));
    same(&*job.circuits, [7]);
}

/// Vanilla proofs that do not lead to their commitments (a sibling, a column row, a data leaf
/// or the challenged node changed) are refused by the generator: INTERNAL, naming the part.
#[test]
fn values_that_do_not_satisfy_the_circuit_are_refused() {
    use cuzk::pce::native::stacked::{witness, Partition};
    use ff::Field;
    let job = prepared_fixture(FixtureShape::default());
    let p = job.circuits.native_partition(0).unwrap();
    assert!(witness(&p, None, None).is_ok());
    let one = blstrs::Scalar::ONE;
    let changes: Vec<(&str, Box<dyn Fn(&mut Partition)>)> = vec![
        ("data leaf", Box::new(|p| p.challenges[0].data_leaf += one)),
        (
            "the data leaf",
            Box::new(|p| p.challenges[1].comm_d_path[2].siblings[0] += one),
        ),
        (
            "DRG parent 3",
            Box::new(|p| p.challenges[0].drg_parents[3].rows[1] += one),
        ),
        (
            "expander parent 5",
            Box::new(|p| p.challenges[1].exp_parents[5].path[0].index ^= 1),
        ),
        ("the encoded node", Box::new(|p| p.challenges[0].node ^= 1)),
        (
            "the labels' column",
            Box::new(|p| p.challenges[1].comm_c_path[0].siblings[2] += one),
        ),
        ("comm_r", Box::new(|p| p.comm_r_last += one)),
    ];
    for (what, change) in changes {
        let mut q = p.clone();
        change(&mut q);
        let e = witness(&q, None, None).unwrap_err();
        assert_eq!(e.status, Status::Internal, "{what}: {e}");
        assert!(e.message.contains(what), "{what}: {e}");
    }
}

/// `cuzk bench synth --paths witness,native` (what the benchmark runs on a full-size
/// partition): no parameters read, no recording made, the native witness checked equal to
/// witness synthesis's before it is timed, a row per path with its CPU and its ratio.
#[test]
fn the_synthesis_benchmark_times_the_native_path_without_parameters() {
    let s = spec(2048, FixtureShape::default(), 5);
    common::init();
    let r = common::tools::synth::run(&common::tools::synth::SynthSpec {
        c1: synthetic_c1_json(&s).unwrap(),
        prover_id: s.prover_id,
        sector_id: s.sector_id,
        shape: s.shape,
        reps: 1,
        concurrency: 1,
        paths: vec!["witness".into(), "native".into()],
        params_dir: tempfile::tempdir().unwrap().path().to_path_buf(),
    })
    .unwrap();
    assert!(r.recording.is_none());
    let names: Vec<&str> = r.rows.iter().map(|p| p.path).collect();
    assert_eq!(names, ["witness", "native"]);
    assert_eq!(r.rows[0].vs_witness, 1.0);
    for p in &r.rows {
        assert!(
            p.cpu_s_per_partition > 0.0 && p.vs_witness.is_finite(),
            "{p:?}"
        );
        assert!(p.vs_full.is_nan(), "{p:?}");
    }
    assert!(r.aux > 2_000_000 && r.aux_zero + r.aux_one > 0.98, "{r:?}");
}
