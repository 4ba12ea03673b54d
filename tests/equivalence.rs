//! The split prover computes what bellperson computes.
//!
//! * On the real 2KiB PoRep circuit: our `ProvingAssignment` equals, element for element, the
//!   assignment built from bellperson's own constraint recorder (`MetricCS`) and witness
//!   generator (`WitnessCS`): a/b/c evaluations, the three density trackers and the witness.
//! * On a small circuit with random parameters: proving from the assignment gives the very
//!   same proof bytes as bellperson's `create_proof` with the same r and s, and it verifies.

mod common;

use bellperson::{
    groth16::{self, prepare_verifying_key, verify_proof},
    Circuit, ConstraintSystem, SynthesisError,
};
use blstrs::{Bls12, Scalar as Fr};
use common::tools::fixture::{self, FixtureSpec};
use cuzk::{
    porep::{self, FixtureShape},
    prover::{cpu::CpuProver, ProvingAssignment, StageTimes},
};
use ff::Field;
use rand::SeedableRng;

#[test]
fn assignment_matches_bellperson_on_real_2kib_porep_circuit() {
    let spec = FixtureSpec::new(fixture::v1_1_proof(2048).unwrap(), FixtureShape::default());
    let dir = tempfile::tempdir().unwrap();
    let c1 = fixture::seal_c1(&spec, dir.path()).unwrap();
    let parsed = porep::parse_c1(&c1).unwrap();
    let job = porep::prepare(
        parsed.c1,
        spec.prover_id(),
        spec.sector_id,
        FixtureShape::default(),
    )
    .unwrap();
    let ours = job.circuits.synthesize(0, None, None).unwrap();
    let reference = job.circuits.reference_assignment(0).unwrap();

    let size = ours.size();
    // The circuit filecoin-proofs 19.1 has for 2KiB: 2,687,921 constraints, plus one
    // `input * 0 = 0` constraint per public input (40 with ONE), and 2,685,673 aux variables.
    assert_eq!(size.constraints, 2_687_921 + 40);
    assert_eq!(size.inputs, 40);
    assert_eq!(size.aux, 2_685_673);
    assert_eq!(reference.size(), size);
    for (name, x, y) in [
        ("a", &ours.a, &reference.a),
        ("b", &ours.b, &reference.b),
        ("c", &ours.c, &reference.c),
    ] {
        if let Some(i) = x.iter().zip(y.iter()).position(|(p, q)| p != q) {
            panic!("{name}[{i}] differs: {:?} vs {:?}", x[i], y[i]);
        }
    }
    assert_eq!(ours.input_assignment, reference.input_assignment);
    assert!(
        ours.aux_assignment == reference.aux_assignment,
        "aux witness differs"
    );
    assert_eq!(ours.a_aux_density, reference.a_aux_density);
    assert_eq!(ours.b_input_density, reference.b_input_density);
    assert_eq!(ours.b_aux_density, reference.b_aux_density);
    // The densities are not trivially full: both kinds of entries occur.
    let total = ours.b_aux_density.get_total_density();
    assert!(
        total > 0 && total < size.aux,
        "b aux density {total} of {}",
        size.aux
    );
    // And the whole thing is what the typed comparison says.
    assert!(ours == reference);
}

/// x^3 + x + 5 = out, with `out` public, plus a chain of squarings to make the domain larger.
#[derive(Clone)]
struct Toy {
    x: Option<Fr>,
    rounds: usize,
}

impl Circuit<Fr> for Toy {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let xv = self.x;
        let x = cs.alloc(|| "x", || xv.ok_or(SynthesisError::AssignmentMissing))?;
        let x2v = xv.map(|v| v.square());
        let x2 = cs.alloc(|| "x2", || x2v.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "x2", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        let x3v = x2v.zip(xv).map(|(a, b)| a * b);
        let x3 = cs.alloc(|| "x3", || x3v.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "x3", |lc| lc + x2, |lc| lc + x, |lc| lc + x3);
        let outv = x3v.zip(xv).map(|(a, b)| a + b + Fr::from(5u64));
        let out = cs.alloc_input(|| "out", || outv.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(
            || "out",
            |lc| lc + x3 + x + (Fr::from(5u64), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc + out,
        );
        let mut cur = x;
        let mut curv = xv;
        for i in 0..self.rounds {
            let nv = curv.map(|v| v.square());
            let n = cs.alloc(
                || format!("sq{i}"),
                || nv.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("sq{i}"),
                |lc| lc + cur,
                |lc| lc + cur,
                |lc| lc + n,
            );
            cur = n;
            curv = nv;
        }
        Ok(())
    }
}

#[test]
fn cpu_prover_equals_bellperson_create_proof() {
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(7);
    let rounds = 3000;
    let params =
        groth16::generate_random_parameters::<Bls12, _, _>(Toy { x: None, rounds }, &mut rng)
            .unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let x = Fr::from(3u64);
    let out = Fr::from(3 * 3 * 3 + 3 + 5u64);
    for _ in 0..2 {
        let r = Fr::random(&mut rng);
        let s = Fr::random(&mut rng);
        let theirs = groth16::create_proof(Toy { x: Some(x), rounds }, &params, r, s).unwrap();
        let asg = ProvingAssignment::synthesize(Toy { x: Some(x), rounds }, None).unwrap();
        let ours = CpuProver
            .prove_with_params(asg, &params, r, s, &mut StageTimes::default())
            .unwrap();
        let (mut a, mut b) = (vec![], vec![]);
        theirs.write(&mut a).unwrap();
        ours.write(&mut b).unwrap();
        assert_eq!(a, b, "proof bytes differ from bellperson's");
        assert!(verify_proof(&pvk, &ours, &[out]).unwrap());
        assert!(!verify_proof(&pvk, &ours, &[out + Fr::ONE]).unwrap());
    }
}

#[test]
fn wrong_parameters_are_an_error_not_a_panic() {
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(9);
    let params = groth16::generate_random_parameters::<Bls12, _, _>(
        Toy {
            x: None,
            rounds: 10,
        },
        &mut rng,
    )
    .unwrap();
    let asg = ProvingAssignment::synthesize(
        Toy {
            x: Some(Fr::ONE),
            rounds: 40,
        },
        None,
    )
    .unwrap();
    let e = CpuProver
        .prove_with_params(asg, &params, Fr::ONE, Fr::ONE, &mut StageTimes::default())
        .unwrap_err();
    // The input's shape, not a device's fault: a PROVING status here would blame the prover.
    assert_eq!(e.status, cuzk::Status::InvalidInput, "{e}");
}
