//! `ProvingAssignment`: the synthesis target of the split prover.
//!
//! It records, for every constraint, the evaluations of its A, B and C linear combinations at
//! the witness, the density of the A and B queries, and the witness itself. This is the data
//! bellperson's private prover keeps between synthesis and the FFT/MSM phase; owning it lets
//! cuzk synthesize a partition on one thread and prove it on another (or on a GPU).

use bellperson::{
    multiexp::DensityTracker, Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError,
    Variable,
};
use blstrs::Scalar as Fr;
use ff::Field;
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use crate::params::CircuitSize;

/// Witness and constraint evaluations of one circuit instance.
#[derive(Debug, Default, Clone)]
pub struct ProvingAssignment {
    /// Which aux variables occur in some A linear combination.
    pub a_aux_density: DensityTracker,
    /// Which inputs occur in some B linear combination.
    pub b_input_density: DensityTracker,
    /// Which aux variables occur in some B linear combination.
    pub b_aux_density: DensityTracker,
    /// A(w) for every constraint.
    pub a: Vec<Fr>,
    /// B(w) for every constraint.
    pub b: Vec<Fr>,
    /// C(w) for every constraint.
    pub c: Vec<Fr>,
    /// Public inputs, `ONE` first.
    pub input_assignment: Vec<Fr>,
    /// Private (aux) variables.
    pub aux_assignment: Vec<Fr>,
    /// When set, synthesis stops (with an error) soon after the flag turns true.
    abort: Option<Arc<AtomicBool>>,
}

impl PartialEq for ProvingAssignment {
    fn eq(&self, o: &Self) -> bool {
        self.a_aux_density == o.a_aux_density
            && self.b_input_density == o.b_input_density
            && self.b_aux_density == o.b_aux_density
            && self.a == o.a
            && self.b == o.b
            && self.c == o.c
            && self.input_assignment == o.input_assignment
            && self.aux_assignment == o.aux_assignment
    }
}

/// How many allocations pass between two looks at the abort flag.
const ABORT_CHECK_EVERY: usize = 1 << 14;

/// For a synthesis target at its `allocated`-th variable: an `Interrupted` error once `abort`
/// is set (looked at every [`ABORT_CHECK_EVERY`] variables).
pub fn check_abort(
    allocated: usize,
    abort: &Option<Arc<AtomicBool>>,
) -> Result<(), SynthesisError> {
    if allocated % ABORT_CHECK_EVERY == 0 {
        if let Some(flag) = abort {
            if flag.load(Ordering::Relaxed) {
                return Err(SynthesisError::IoError(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "synthesis aborted",
                )));
            }
        }
    }
    Ok(())
}

impl ProvingAssignment {
    /// An empty assignment with room for a circuit of the given size (avoids reallocation).
    pub fn with_capacity(size: Option<CircuitSize>) -> Self {
        let mut pa = ProvingAssignment::default();
        if let Some(s) = size {
            for v in [&mut pa.a, &mut pa.b, &mut pa.c] {
                v.reserve_exact(s.domain());
                crate::sys::os::advise_huge_pages(v);
            }
            pa.input_assignment.reserve_exact(s.inputs);
            pa.aux_assignment.reserve_exact(s.aux);
            crate::sys::os::advise_huge_pages(&mut pa.aux_assignment);
        }
        pa
    }

    /// Synthesizes `circuit` exactly as bellperson's Groth16 prover does: the `ONE` input first,
    /// then the circuit, then one `input * 0 = 0` constraint per public input (which makes the
    /// A query fully dense over the inputs).
    pub fn synthesize<C: Circuit<Fr>>(
        circuit: C,
        size: Option<CircuitSize>,
    ) -> Result<Self, SynthesisError> {
        Self::synthesize_abortable(circuit, size, None)
    }

    /// Like [`ProvingAssignment::synthesize`], but gives up with an `Interrupted` I/O error
    /// soon after `abort` turns true (job cancelled or failed elsewhere).
    pub fn synthesize_abortable<C: Circuit<Fr>>(
        circuit: C,
        size: Option<CircuitSize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<Self, SynthesisError> {
        let mut pa = Self::with_capacity(size);
        pa.abort = abort;
        pa.alloc_input(|| "", || Ok(Fr::ONE))?;
        circuit.synthesize(&mut pa)?;
        pa.abort = None;
        for i in 0..pa.input_assignment.len() {
            pa.enforce(
                || "",
                |lc| lc + Variable::new_unchecked(Index::Input(i)),
                |lc| lc,
                |lc| lc,
            );
        }
        Ok(pa)
    }

    /// An assignment from its parts (the pre-compiled path builds them without synthesis).
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        a_aux_density: DensityTracker,
        b_input_density: DensityTracker,
        b_aux_density: DensityTracker,
        a: Vec<Fr>,
        b: Vec<Fr>,
        c: Vec<Fr>,
        input_assignment: Vec<Fr>,
        aux_assignment: Vec<Fr>,
    ) -> Self {
        ProvingAssignment {
            a_aux_density,
            b_input_density,
            b_aux_density,
            a,
            b,
            c,
            input_assignment,
            aux_assignment,
            abort: None,
        }
    }

    /// Sizes of this assignment.
    pub fn size(&self) -> CircuitSize {
        CircuitSize {
            constraints: self.a.len(),
            inputs: self.input_assignment.len(),
            aux: self.aux_assignment.len(),
        }
    }
}

/// Evaluates `lc` at the witness, marking the variables with non-zero coefficients in the
/// given density trackers.
fn eval_tracked(
    lc: &LinearCombination<Fr>,
    mut input_density: Option<&mut DensityTracker>,
    mut aux_density: Option<&mut DensityTracker>,
    inputs: &[Fr],
    aux: &[Fr],
) -> Fr {
    let mut acc = Fr::ZERO;
    for (index, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            let mut tmp = inputs[*index];
            if *coeff != Fr::ONE {
                tmp *= coeff;
            }
            acc += tmp;
            if let Some(d) = input_density.as_deref_mut() {
                d.inc(*index);
            }
        }
    }
    for (index, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            let mut tmp = aux[*index];
            if *coeff != Fr::ONE {
                tmp *= coeff;
            }
            acc += tmp;
            if let Some(d) = aux_density.as_deref_mut() {
                d.inc(*index);
            }
        }
    }
    acc
}

impl ConstraintSystem<Fr> for ProvingAssignment {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        check_abort(self.aux_assignment.len(), &self.abort)?;
        self.aux_assignment.push(f()?);
        self.a_aux_density.add_element();
        self.b_aux_density.add_element();
        Ok(Variable::new_unchecked(Index::Aux(
            self.aux_assignment.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.add_element();
        Ok(Variable::new_unchecked(Index::Input(
            self.input_assignment.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let inputs = &self.input_assignment;
        let aux = &self.aux_assignment;
        // Inputs are fully dense in A (the `input * 0 = 0` constraints), so only aux is tracked.
        let a_val = eval_tracked(&a, None, Some(&mut self.a_aux_density), inputs, aux);
        let b_val = eval_tracked(
            &b,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            inputs,
            aux,
        );
        // The C query is fully dense: no tracking.
        let c_val = c.eval(inputs, aux);
        self.a.push(a_val);
        self.b.push(b_val);
        self.c.push(c_val);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}
