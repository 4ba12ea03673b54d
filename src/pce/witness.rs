//! Witness-only synthesis: the alloc closures run, the enforce closures do not.

use std::sync::{atomic::AtomicBool, Arc};

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use crate::prover::assignment::check_abort;

/// Class of an aux value, two bits per variable in [`Witness::classes`].
pub(crate) const ZERO: u64 = 0;
pub(crate) const ONE: u64 = 1;
pub(crate) const OTHER: u64 = 2;

/// A partition's witness: the values, and for every aux value whether it is 0, 1 or other
/// (two bits per variable, 32 per word), which lets the sparse product skip the 32-byte value
/// for the 98-99.6% of terms whose variable is 0 or 1.
#[derive(Clone, Debug, Default)]
pub struct Witness {
    /// Public inputs, `ONE` first.
    pub inputs: Vec<Fr>,
    pub aux: Vec<Fr>,
    pub classes: Vec<u64>,
}

impl Witness {
    #[inline]
    pub fn class(&self, j: usize) -> u64 {
        (self.classes[j / 32] >> (2 * (j % 32))) & 3
    }

    /// Whether the class table describes `aux` (a witness put together by hand may not).
    pub fn classes_match(&self) -> bool {
        self.classes.len() == self.aux.len().div_ceil(32)
            && self
                .aux
                .iter()
                .enumerate()
                .all(|(j, v)| self.class(j) == classify(v))
    }

    /// The witness as a prover that computes a, b, c itself reads it (the compact form).
    pub fn classed(&self) -> crate::prover::ClassedWitness<'_> {
        let (other_index, other_value) = self.others();
        crate::prover::ClassedWitness {
            inputs: &self.inputs,
            n_aux: self.aux.len(),
            classes: &self.classes,
            other_index,
            other_value,
        }
    }

    /// The indices and values of the aux values that are neither zero nor one, read from the
    /// class bits (`OTHER` sets the high bit of its pair only).
    fn others(&self) -> (Vec<u32>, Vec<Fr>) {
        let (mut idx, mut val) = (Vec::new(), Vec::new());
        for (k, &word) in self.classes.iter().enumerate() {
            let mut bits = word & 0xAAAA_AAAA_AAAA_AAAA & !(word << 1);
            while bits != 0 {
                let j = k * 32 + bits.trailing_zeros() as usize / 2;
                if j < self.aux.len() {
                    idx.push(j as u32);
                    val.push(self.aux[j]);
                }
                bits &= bits - 1;
            }
        }
        (idx, val)
    }

    /// The compact form a GPU can take as it is.
    pub fn compact(&self) -> CompactWitness {
        let mut ones = vec![0u64; self.aux.len().div_ceil(64)];
        let mut others = Vec::new();
        for (j, v) in self.aux.iter().enumerate() {
            match self.class(j) {
                ONE => ones[j / 64] |= 1 << (j % 64),
                OTHER => others.push((j as u32, *v)),
                _ => {}
            }
        }
        CompactWitness {
            len: self.aux.len(),
            ones,
            others,
        }
    }
}

fn classify(v: &Fr) -> u64 {
    if bool::from(v.is_zero()) {
        ZERO
    } else if *v == Fr::ONE {
        ONE
    } else {
        OTHER
    }
}

/// The aux values as ~1 byte per variable: a bit per variable for the ones, (index, value)
/// pairs for the values neither 0 nor 1, zero everywhere else.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactWitness {
    pub len: usize,
    pub ones: Vec<u64>,
    pub others: Vec<(u32, Fr)>,
}

impl CompactWitness {
    pub fn bytes(&self) -> u64 {
        (self.ones.len() * 8 + self.others.len() * 36) as u64
    }

    pub fn to_dense(&self) -> Vec<Fr> {
        let mut v = vec![Fr::ZERO; self.len];
        for (j, x) in v.iter_mut().enumerate() {
            if self.ones[j / 64] >> (j % 64) & 1 == 1 {
                *x = Fr::ONE;
            }
        }
        for (j, x) in &self.others {
            v[*j as usize] = *x;
        }
        v
    }
}

/// The witness-only constraint system.
pub struct WitnessTarget {
    w: Witness,
    abort: Option<Arc<AtomicBool>>,
}

impl WitnessTarget {
    /// The witness of `circuit`, numbered as [`super::RecordingCS`] numbers its variables.
    /// `aux_hint` sizes the vectors; `abort` stops it (with an error) soon after it turns true.
    pub fn synthesize<C: Circuit<Fr>>(
        circuit: C,
        aux_hint: Option<usize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<Witness, SynthesisError> {
        let mut t = WitnessTarget {
            w: Witness::default(),
            abort,
        };
        if let Some(n) = aux_hint {
            t.w.aux.reserve_exact(n);
            crate::sys::os::advise_huge_pages(&mut t.w.aux);
            t.w.classes.reserve_exact(n.div_ceil(32));
        }
        t.alloc_input(|| "", || Ok(Fr::ONE))?;
        circuit.synthesize(&mut t)?;
        Ok(t.w)
    }
}

impl ConstraintSystem<Fr> for WitnessTarget {
    type Root = Self;

    fn new() -> Self {
        WitnessTarget {
            w: Witness::default(),
            abort: None,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let j = self.w.aux.len();
        check_abort(j, &self.abort)?;
        let v = f()?;
        if j % 32 == 0 {
            self.w.classes.push(0);
        }
        *self.w.classes.last_mut().unwrap() |= classify(&v) << (2 * (j % 32));
        self.w.aux.push(v);
        Ok(Variable::new_unchecked(Index::Aux(j)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(
            self.w.inputs.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_round_trip() {
        let vals = [0u64, 1, 2, 0, 1, 1, 5, 0];
        let mut w = Witness::default();
        let mut t = WitnessTarget {
            w: Witness::default(),
            abort: None,
        };
        for _ in 0..9 {
            for v in vals {
                t.alloc(|| "", || Ok(Fr::from(v))).unwrap();
            }
        }
        std::mem::swap(&mut w, &mut t.w);
        assert!(w.classes_match());
        let c = w.compact();
        assert_eq!(c.others.len(), 18);
        assert_eq!(c.to_dense(), w.aux);
        assert_eq!(c.bytes(), 2 * 8 + 18 * 36);
        // The compact form a GPU is sent: the same others, read from the class bits.
        let v = w.classed();
        assert_eq!((v.n_aux, v.other_index.len()), (w.aux.len(), 18));
        assert!(v
            .other_index
            .iter()
            .zip(&v.other_value)
            .zip(&c.others)
            .all(|((i, x), (j, y))| i == j && x == y));
    }
}
