//! Recording a circuit's R1CS: a constraint system that keeps, for every constraint, the terms
//! of its A, B and C linear combinations in sparse form, and never runs a witness closure.

use std::{
    collections::HashMap,
    sync::{atomic::AtomicBool, Arc},
};

use bellperson::{
    multiexp::DensityTracker, Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError,
    Variable,
};
use blstrs::Scalar as Fr;
use ff::Field;

use super::{Matrix, Recording, INPUT_BIT, MAX_DICT};
use crate::prover::assignment::check_abort;

/// Coefficients seen so far: `ONE` is entry 0 and `-ONE` entry 1, the rest by first use.
struct Dictionary {
    values: Vec<Fr>,
    index: HashMap<[u8; 32], u16>,
    minus_one: Fr,
}

impl Dictionary {
    fn new() -> Self {
        let minus_one = -Fr::ONE;
        let mut d = Dictionary {
            values: Vec::new(),
            index: HashMap::new(),
            minus_one,
        };
        d.insert(Fr::ONE);
        d.insert(minus_one);
        d
    }

    fn insert(&mut self, v: Fr) -> Option<u16> {
        let key = v.to_bytes_le();
        if let Some(&i) = self.index.get(&key) {
            return Some(i);
        }
        if self.values.len() >= MAX_DICT {
            return None;
        }
        let i = self.values.len() as u16;
        self.values.push(v);
        self.index.insert(key, i);
        Some(i)
    }

    fn code(&mut self, v: &Fr) -> Option<u16> {
        if *v == Fr::ONE {
            Some(0)
        } else if *v == self.minus_one {
            Some(1)
        } else {
            self.insert(*v)
        }
    }
}

/// The recording target. Variables are numbered as bellperson numbers them (`ONE` is input 0),
/// so a witness made by [`super::WitnessTarget`] for any instance of the circuit lines up.
pub struct RecordingCS {
    inputs: usize,
    aux: usize,
    dict: Dictionary,
    a: Matrix,
    b: Matrix,
    c: Matrix,
    a_aux_density: DensityTracker,
    b_input_density: DensityTracker,
    b_aux_density: DensityTracker,
    /// The first reason the circuit cannot be recorded (too many terms or coefficients).
    error: Option<String>,
    abort: Option<Arc<AtomicBool>>,
}

impl RecordingCS {
    fn new() -> Self {
        RecordingCS {
            inputs: 0,
            aux: 0,
            dict: Dictionary::new(),
            a: Matrix::new(),
            b: Matrix::new(),
            c: Matrix::new(),
            a_aux_density: DensityTracker::new(),
            b_input_density: DensityTracker::new(),
            b_aux_density: DensityTracker::new(),
            error: None,
            abort: None,
        }
    }

    /// Records `circuit` as bellperson's prover synthesizes it: the `ONE` input, the circuit,
    /// then one `input * 0 = 0` constraint per public input.
    /// Gives up soon after `abort` turns true.
    pub fn record<C: Circuit<Fr>>(
        circuit: C,
        id: &str,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<Recording, String> {
        let mut cs = RecordingCS::new();
        cs.abort = abort;
        cs.alloc_input(|| "", || Ok(Fr::ONE))
            .map_err(|e| e.to_string())?;
        circuit
            .synthesize(&mut cs)
            .map_err(|e| format!("recording synthesis failed: {e}"))?;
        for i in 0..cs.inputs {
            cs.enforce(
                || "",
                |lc| lc + Variable::new_unchecked(Index::Input(i)),
                |lc| lc,
                |lc| lc,
            );
        }
        if let Some(e) = cs.error {
            return Err(e);
        }
        let mut rec = Recording {
            id: id.to_string(),
            inputs: cs.inputs,
            aux: cs.aux,
            dict: cs.dict.values,
            a: cs.a,
            b: cs.b,
            c: cs.c,
            a_aux_density: cs.a_aux_density,
            b_input_density: cs.b_input_density,
            b_aux_density: cs.b_aux_density,
            instance: super::new_instance(),
        };
        for m in [&mut rec.a, &mut rec.b, &mut rec.c] {
            m.shrink();
        }
        Ok(rec)
    }

    fn push_row(&mut self, which: usize, lc: &LinearCombination<Fr>) {
        let mut failed = None;
        {
            let RecordingCS {
                dict,
                a,
                b,
                c,
                a_aux_density,
                b_input_density,
                b_aux_density,
                ..
            } = self;
            let (m, input_d, aux_d) = match which {
                0 => (a, None, Some(a_aux_density)),
                1 => (b, Some(b_input_density), Some(b_aux_density)),
                _ => (c, None, None),
            };
            let (mut input_d, mut aux_d) = (input_d, aux_d);
            // Terms with a zero coefficient neither count nor mark density (as in bellperson's
            // evaluation); every other term is kept as it is, duplicates included.
            for (i, coeff) in lc.iter_inputs() {
                if bool::from(coeff.is_zero()) {
                    continue;
                }
                match dict.code(coeff) {
                    Some(k) => m.push_term(*i as u32 | INPUT_BIT, k),
                    None => failed = Some("more than 65536 distinct coefficients"),
                }
                if let Some(d) = input_d.as_deref_mut() {
                    d.inc(*i);
                }
            }
            for (i, coeff) in lc.iter_aux() {
                if bool::from(coeff.is_zero()) {
                    continue;
                }
                match dict.code(coeff) {
                    Some(k) => m.push_term(*i as u32, k),
                    None => failed = Some("more than 65536 distinct coefficients"),
                }
                if let Some(d) = aux_d.as_deref_mut() {
                    d.inc(*i);
                }
            }
            if !m.end_row() {
                failed = Some("more than 2^32 terms in one matrix");
            }
        }
        if let (Some(e), None) = (failed, &self.error) {
            self.error = Some(e.to_string());
        }
    }
}

impl ConstraintSystem<Fr> for RecordingCS {
    type Root = Self;

    fn new() -> Self {
        RecordingCS::new()
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        check_abort(self.aux, &self.abort)?;
        if self.aux >= INPUT_BIT as usize && self.error.is_none() {
            self.error = Some("more than 2^31 aux variables".into());
        }
        self.aux += 1;
        self.a_aux_density.add_element();
        self.b_aux_density.add_element();
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        self.b_input_density.add_element();
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
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
        self.push_row(0, &a);
        drop(a);
        let b = b(LinearCombination::zero());
        self.push_row(1, &b);
        drop(b);
        let c = c(LinearCombination::zero());
        self.push_row(2, &c);
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
