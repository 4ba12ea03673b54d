//! An independent construction of a [`ProvingAssignment`] from bellperson's public constraint
//! recorder (`MetricCS`) and witness generator (`WitnessCS`). Used by tests to check the
//! synthesis target element by element against bellperson's own view of the circuit.

use bellperson::{multiexp::DensityTracker, util_cs::Constraint, Index};
use blstrs::Scalar as Fr;
use ff::Field;

use super::ProvingAssignment;

fn mark(
    lc: &bellperson::LinearCombination<Fr>,
    inputs: Option<&mut DensityTracker>,
    aux: &mut DensityTracker,
) {
    let mut inputs = inputs;
    for (var, coeff) in lc.iter() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        match var.get_unchecked() {
            Index::Input(i) => {
                if let Some(d) = inputs.as_deref_mut() {
                    d.inc(i)
                }
            }
            Index::Aux(i) => aux.inc(i),
        }
    }
}

/// Builds the assignment bellperson's prover would hold for a circuit whose constraints
/// (without the trailing `input * 0 = 0` ones) and witness are given.
pub fn assignment_from(
    constraints: &[Constraint<Fr>],
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
) -> ProvingAssignment {
    let mut pa = ProvingAssignment::default();
    for _ in &inputs {
        pa.b_input_density.add_element();
    }
    for _ in &aux {
        pa.a_aux_density.add_element();
        pa.b_aux_density.add_element();
    }
    for (a, b, c, _) in constraints {
        pa.a.push(a.eval(&inputs, &aux));
        pa.b.push(b.eval(&inputs, &aux));
        pa.c.push(c.eval(&inputs, &aux));
        mark(a, None, &mut pa.a_aux_density);
        mark(b, Some(&mut pa.b_input_density), &mut pa.b_aux_density);
    }
    for i in 0..inputs.len() {
        pa.a.push(inputs[i]);
        pa.b.push(Fr::ZERO);
        pa.c.push(Fr::ZERO);
    }
    pa.input_assignment = inputs;
    pa.aux_assignment = aux;
    pa
}
