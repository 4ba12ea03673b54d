//! Witness-only synthesis: the alloc closures run, the enforce closures do not.

use std::cell::RefCell;
use std::sync::{atomic::AtomicBool, Arc};

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use crate::prover::assignment::check_abort;

/// Class of an aux value, two bits per variable in [`Witness::classes`].
pub(crate) const ZERO: u64 = 0;
pub(crate) const ONE: u64 = 1;
pub(crate) const OTHER: u64 = 2;

/// A partition's witness as synthesis makes it, compact from the start: the inputs, two class
/// bits per aux value (0 zero, 1 one, 2 other; 32 per word, least significant first) and the
/// index and value of each aux value of class other, in order. In the PoRep circuits 0.4-1.6%
/// of the aux values are neither 0 nor 1, so this is ~1 byte per aux value where the values
/// would take 32: the dense vector is made only where a host prover needs it ([`Witness::aux`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Witness {
    /// Public inputs, `ONE` first.
    pub inputs: Vec<Fr>,
    n_aux: usize,
    classes: Vec<u64>,
    other_index: Vec<u32>,
    other_value: Vec<Fr>,
}

impl Witness {
    /// Room for `n_aux` aux values, the others' lists sized for 1.6% of them (they grow past
    /// that where needed).
    fn with_room(n_aux: usize) -> Self {
        Witness {
            inputs: Vec::new(),
            n_aux: 0,
            classes: Vec::with_capacity(n_aux.div_ceil(32)),
            other_index: Vec::with_capacity(n_aux / 64),
            other_value: Vec::with_capacity(n_aux / 64),
        }
    }

    /// An empty witness with these inputs (`ONE` first) and room for `n_aux` aux values.
    pub fn with_inputs(inputs: Vec<Fr>, n_aux: usize) -> Self {
        Witness {
            inputs,
            ..Self::with_room(n_aux)
        }
    }

    /// Appends an aux value that is 0 or 1 (a bit): its class only.
    #[inline]
    pub fn push_bit(&mut self, b: bool) {
        let j = self.n_aux;
        if j % 32 == 0 {
            self.classes.push(0);
        }
        *self.classes.last_mut().expect("pushed above") |= (b as u64) << (2 * (j % 32));
        self.n_aux += 1;
    }

    /// Appends aux value `v` (its index is the number before it).
    pub fn push(&mut self, v: Fr) {
        let j = self.n_aux;
        if j % 32 == 0 {
            self.classes.push(0);
        }
        let class = classify(&v);
        *self.classes.last_mut().expect("pushed above") |= class << (2 * (j % 32));
        if class == OTHER {
            self.other_index.push(j as u32);
            self.other_value.push(v);
        }
        self.n_aux += 1;
    }

    /// Appends `other`'s aux values after this one's, in order (its inputs are the caller's):
    /// its class words shifted into place, its others' indices moved by this one's count.
    fn append_aux(&mut self, other: &Witness) {
        let off = self.n_aux;
        let shift = 2 * (off % 32);
        if shift == 0 {
            self.classes.extend_from_slice(&other.classes);
        } else {
            self.classes.reserve(other.classes.len());
            for &word in &other.classes {
                *self
                    .classes
                    .last_mut()
                    .expect("a word holds aux value off - 1") |= word << shift;
                self.classes.push(word >> (64 - shift));
            }
        }
        self.n_aux = off + other.n_aux;
        // The last shifted word holds only classes past the end (zero).
        self.classes.truncate(self.n_aux.div_ceil(32));
        self.other_index
            .extend(other.other_index.iter().map(|&j| j + off as u32));
        self.other_value.extend_from_slice(&other.other_value);
    }

    /// Appends `other` after this one, as if its values had been pushed here in order: its
    /// inputs after this one's, its aux values after this one's.
    fn append(&mut self, other: &Witness) {
        self.inputs.extend_from_slice(&other.inputs);
        self.append_aux(other);
    }

    /// An empty witness with these inputs and room for `n_aux` aux values of which `others`
    /// are neither 0 nor 1, the others' lists advised into huge pages before their first
    /// touch.
    pub fn with_room_for(inputs: Vec<Fr>, n_aux: usize, others: usize) -> Self {
        let mut w = Witness {
            inputs,
            n_aux: 0,
            classes: Vec::with_capacity(n_aux.div_ceil(32) + 1),
            other_index: Vec::with_capacity(others),
            other_value: Vec::with_capacity(others),
        };
        crate::sys::os::advise_huge_pages(&mut w.other_index);
        crate::sys::os::advise_huge_pages(&mut w.other_value);
        w
    }

    /// `inputs`, then `parts` appended in order. Where every part but the last holds whole
    /// class words (a multiple of 32 aux values), the others' lists (most of a PoSt witness)
    /// are copied part by part in parallel; else one after another.
    pub fn concat(inputs: Vec<Fr>, parts: &[Witness]) -> Witness {
        use rayon::prelude::*;
        let sum = |f: fn(&Witness) -> usize| parts.iter().map(f).sum::<usize>();
        let (n_aux, others) = (sum(|p| p.n_aux), sum(|p| p.other_value.len()));
        let mut w = Witness::with_room_for(inputs, n_aux, others);
        w.inputs.reserve(sum(|p| p.inputs.len()));
        let whole = parts
            .split_last()
            .is_some_and(|(_, first)| first.iter().all(|p| p.n_aux % 32 == 0));
        if !whole || u32::try_from(n_aux).is_err() {
            for p in parts {
                w.append(p);
            }
            return w;
        }
        // Filled in parallel (pages touched by many threads), then each part's slice copied.
        w.other_index
            .par_extend(rayon::iter::repeat_n(0u32, others));
        w.other_value
            .par_extend(rayon::iter::repeat_n(Fr::ZERO, others));
        let mut index_rest = &mut w.other_index[..];
        let mut value_rest = &mut w.other_value[..];
        let mut jobs = Vec::with_capacity(parts.len());
        let mut off = 0u32;
        for p in parts {
            let n = p.other_value.len();
            let (index, rest) = std::mem::take(&mut index_rest).split_at_mut(n);
            index_rest = rest;
            let (value, rest) = std::mem::take(&mut value_rest).split_at_mut(n);
            value_rest = rest;
            jobs.push((p, off, index, value));
            off += p.n_aux as u32;
        }
        jobs.into_par_iter().for_each(|(p, off, index, value)| {
            for (d, &j) in index.iter_mut().zip(&p.other_index) {
                *d = j + off;
            }
            value.copy_from_slice(&p.other_value);
        });
        for p in parts {
            w.inputs.extend_from_slice(&p.inputs);
            w.classes.extend_from_slice(&p.classes);
        }
        w.n_aux = n_aux;
        w
    }

    /// The number of aux values.
    pub fn n_aux(&self) -> usize {
        self.n_aux
    }

    /// The class bits (32 aux values per word).
    pub fn classes(&self) -> &[u64] {
        &self.classes
    }

    #[inline]
    pub fn class(&self, j: usize) -> u64 {
        (self.classes[j / 32] >> (2 * (j % 32))) & 3
    }

    /// The aux values of class other: their indices (increasing) and values.
    pub fn others(&self) -> (&[u32], &[Fr]) {
        (&self.other_index, &self.other_value)
    }

    /// Aux value `j`.
    pub fn value(&self, j: usize) -> Fr {
        match self.class(j) {
            ZERO => Fr::ZERO,
            ONE => Fr::ONE,
            _ => match self.other_index.binary_search(&(j as u32)) {
                Ok(k) => self.other_value[k],
                Err(_) => Fr::ZERO,
            },
        }
    }

    /// The aux values as a dense vector (32 bytes each), for a host prover.
    pub fn aux(&self) -> Vec<Fr> {
        let mut v = Vec::with_capacity(self.n_aux);
        crate::sys::os::advise_huge_pages(&mut v);
        v.extend((0..self.n_aux).map(|j| {
            if self.class(j) == ONE {
                Fr::ONE
            } else {
                Fr::ZERO
            }
        }));
        for (&j, x) in self.other_index.iter().zip(&self.other_value) {
            v[j as usize] = *x;
        }
        v
    }

    /// The aux values that are zero, one and other.
    pub fn counts(&self) -> [usize; 3] {
        let ones = (0..self.n_aux).filter(|&j| self.class(j) == ONE).count();
        let others = self.other_index.len();
        [self.n_aux - ones - others, ones, others]
    }

    /// Bytes it holds (what the memory budget reserves for it: `params::HostPath::Witness`).
    pub fn bytes(&self) -> u64 {
        (self.inputs.capacity() * 32
            + self.classes.capacity() * 8
            + self.other_index.capacity() * 4
            + self.other_value.capacity() * 32) as u64
    }

    /// The room its lists keep for values that are neither 0 nor 1, as a share of its aux
    /// values (what a circuit's later witnesses are budgeted by).
    pub fn others_room(&self) -> f64 {
        let cap = self.other_index.capacity().max(self.other_value.capacity());
        cap as f64 / self.n_aux.max(1) as f64
    }

    /// Whether its parts agree: one class pair per aux value (none past the last), and the
    /// others' list holds exactly the values of class other, in order, none of them 0 or 1.
    pub fn classes_match(&self) -> bool {
        let others = self
            .classes
            .iter()
            .map(|&w| (w & 0xAAAA_AAAA_AAAA_AAAA & !(w << 1)).count_ones() as usize)
            .sum::<usize>();
        let tail = self.n_aux % 32;
        self.classes.len() == self.n_aux.div_ceil(32)
            && (tail == 0 || self.classes.last().is_some_and(|w| w >> (2 * tail) == 0))
            && self
                .classes
                .iter()
                .all(|&w| w & (w >> 1) & 0x5555_5555_5555_5555 == 0)
            && others == self.other_index.len()
            && self.other_index.len() == self.other_value.len()
            && self.other_index.windows(2).all(|p| p[0] < p[1])
            && self
                .other_index
                .iter()
                .zip(&self.other_value)
                .all(|(&j, v)| {
                    (j as usize) < self.n_aux
                        && self.class(j as usize) == OTHER
                        && classify(v) == OTHER
                })
    }

    /// The witness as a prover that computes a, b, c itself reads it (the compact form).
    pub fn classed(&self) -> crate::prover::ClassedWitness<'_> {
        crate::prover::ClassedWitness {
            inputs: &self.inputs,
            n_aux: self.n_aux,
            classes: &self.classes,
            other_index: &self.other_index,
            other_value: &self.other_value,
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

/// The witness-only constraint system.
pub struct WitnessTarget {
    w: Witness,
    abort: Option<Arc<AtomicBool>>,
}

impl WitnessTarget {
    /// The witness of `circuit`, numbered as [`super::RecordingCS`] numbers its variables.
    /// `aux_hint` sizes the vectors; `abort` stops it (with an error) soon after it turns true.
    pub fn synthesize<C: Circuit<Fr> + Send>(
        circuit: C,
        aux_hint: Option<usize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<Witness, SynthesisError> {
        let Some(flag) = abort else {
            return Self::synthesize_here(circuit, aux_hint, None);
        };
        // Extensible circuits synthesize parts in parallel into targets made by `new`, which
        // has no argument to pass the flag by. So the parts run on a pool of this job's own,
        // as many threads as the one it was called on, each of which holds the flag.
        let threads = rayon::current_num_threads();
        let on_start = flag.clone();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cuzk-witness-{i}"))
            .start_handler(move |_| JOB_ABORT.with(|a| *a.borrow_mut() = Some(on_start.clone())))
            .build()
            .map_err(|e| SynthesisError::IoError(std::io::Error::other(e.to_string())))?;
        pool.install(|| Self::synthesize_here(circuit, aux_hint, Some(flag)))
    }

    fn synthesize_here<C: Circuit<Fr>>(
        circuit: C,
        aux_hint: Option<usize>,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<Witness, SynthesisError> {
        let mut t = WitnessTarget {
            w: Witness::with_room(aux_hint.unwrap_or(0)),
            abort,
        };
        t.alloc_input(|| "", || Ok(Fr::ONE))?;
        circuit.synthesize(&mut t)?;
        Ok(t.w)
    }
}

thread_local! {
    /// The stop flag of the job whose witness this thread's pool makes, for the targets `new`
    /// makes there (see [`WitnessTarget::synthesize`]).
    static JOB_ABORT: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

impl ConstraintSystem<Fr> for WitnessTarget {
    type Root = Self;

    /// A part's target; it stops with the job whose pool it is made on.
    fn new() -> Self {
        WitnessTarget {
            w: Witness::default(),
            abort: JOB_ABORT.with(|a| a.borrow().clone()),
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let j = self.w.n_aux;
        check_abort(j, &self.abort)?;
        self.w.push(f()?);
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

    /// Sub-circuits that are independent may be synthesized in parallel (storage-proofs' PoSt
    /// circuit does, per group of sectors), each into its own target made by `new`.
    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`'s values after this one's, as synthesized in order: its inputs but the
    /// first (the temporary ONE it was made with) and its aux values.
    fn extend(&mut self, other: &Self) {
        self.w
            .inputs
            .extend_from_slice(other.w.inputs.get(1..).unwrap_or(&[]));
        self.w.append_aux(&other.w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts synthesized in parallel into targets made by `new`, as storage-proofs' PoSt
    /// circuit makes them; `allocated` counts the values computed.
    struct Parts {
        parts: usize,
        each: usize,
        allocated: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Circuit<Fr> for Parts {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            use rayon::prelude::*;
            assert!(CS::is_extensible());
            let parts = (0..self.parts)
                .into_par_iter()
                .map(|_| {
                    let mut part = CS::new();
                    part.alloc_input(|| "", || Ok(Fr::ONE))?;
                    for i in 0..self.each {
                        part.alloc(
                            || "",
                            || {
                                self.allocated
                                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                Ok(Fr::from(i as u64 % 3))
                            },
                        )?;
                    }
                    Ok(part)
                })
                .collect::<Result<Vec<_>, SynthesisError>>()?;
            for part in &parts {
                cs.extend(part);
            }
            Ok(())
        }
    }

    /// A job stopped while its parts are synthesized in parallel stops in every part, not
    /// after each has run to its end; unstopped, the parts join in order.
    #[test]
    fn a_stopped_job_stops_its_parallel_parts() {
        let each = 1 << 20;
        let allocated = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let circuit = |parts| Parts {
            parts,
            each,
            allocated: allocated.clone(),
        };
        let w = WitnessTarget::synthesize(circuit(3), None, Some(Arc::default())).unwrap();
        assert_eq!(w.n_aux(), 3 * each);
        assert_eq!(w.value(each + 4), Fr::from(1));
        allocated.store(0, std::sync::atomic::Ordering::Relaxed);

        let stop = Arc::new(AtomicBool::new(true));
        let got = WitnessTarget::synthesize(circuit(8), None, Some(stop));
        assert!(got.is_err(), "a stopped job made its witness");
        let n = allocated.load(std::sync::atomic::Ordering::Relaxed);
        assert!(n < 8 * each / 4, "{n} values made after the stop");
    }

    /// Witnesses appended at every offset within a class word are the witness pushed in one
    /// piece: classes, others and inputs.
    #[test]
    fn appended_witnesses_are_the_one_pushed_in_order() {
        let value = |i: u64| Fr::from([0, 1, 7, 1, 0, 9][(i * 7 % 6) as usize] + i % 3 * (i % 5));
        for head in [0u64, 1, 5, 31, 32, 33, 64, 70] {
            for tail in [0u64, 1, 13, 32, 40, 97] {
                let mut whole = Witness::with_inputs(vec![Fr::ONE, Fr::from(head)], 0);
                let mut a = Witness::with_inputs(vec![Fr::ONE], 0);
                let mut b = Witness::with_inputs(vec![Fr::from(head)], 0);
                for i in 0..head {
                    a.push(value(i));
                    whole.push(value(i));
                }
                for i in head..head + tail {
                    b.push(value(i));
                    whole.push(value(i));
                }
                let parts = [a.clone(), b.clone()];
                a.append(&b);
                assert_eq!(a, whole, "{head} then {tail}");
                assert!(a.classes_match(), "{head} then {tail}");
                // Whole words first (copied in parallel) or not (appended).
                let joined = Witness::concat(Vec::new(), &parts);
                assert_eq!(joined, whole, "{head} then {tail}, concatenated");
                assert!(joined.classes_match());
            }
        }
    }

    /// The compact witness holds what the values say: the classes, the others in order, the
    /// dense vector back, single values; a tampered one does not match.
    #[test]
    fn a_witness_is_born_compact_and_gives_its_values_back() {
        let vals = [0u64, 1, 2, 0, 1, 1, 5, 0];
        let mut w = Witness::default();
        let mut dense = Vec::new();
        for _ in 0..9 {
            for v in vals {
                w.push(Fr::from(v));
                dense.push(Fr::from(v));
            }
        }
        assert!(w.classes_match());
        assert_eq!(w.n_aux(), 72);
        assert_eq!(w.counts(), [27, 27, 18]);
        assert_eq!(w.aux(), dense);
        assert!((0..72).all(|j| w.value(j) == dense[j]));
        let (idx, val) = w.others();
        assert_eq!(idx.len(), 18);
        assert!(idx.iter().zip(val).all(|(&j, v)| dense[j as usize] == *v));
        // The compact form a GPU is sent is the same lists, not a copy.
        let c = w.classed();
        assert_eq!((c.n_aux, c.other_index.as_ptr()), (72, idx.as_ptr()));
        // A quarter of the values are others here (36 bytes each, in lists grown by doubling),
        // and still less than the dense vector's 32 bytes per value.
        assert!(w.bytes() < 72 * 32, "{}", w.bytes());

        let mut bad = w.clone();
        bad.other_value[0] = Fr::ONE;
        assert!(!bad.classes_match());
        let mut bad = w.clone();
        bad.other_index.swap(0, 1);
        assert!(!bad.classes_match());
        let mut bad = w.clone();
        bad.classes[0] |= 3;
        assert!(!bad.classes_match());
        let mut bad = w.clone();
        bad.n_aux += 32;
        assert!(!bad.classes_match());
        let mut bad = w.clone();
        bad.n_aux -= 2;
        assert!(!bad.classes_match(), "a value of class one past the end");
    }

    /// A target extended by others holds, in order, what one target given every value would.
    #[test]
    fn an_extended_witness_is_the_one_made_in_order() {
        let vals: Vec<u64> = (0..100)
            .map(|i| [0, 1, 7, 0, 1, 9, 1][i % 7] + i as u64 / 50)
            .collect();
        let mut whole = WitnessTarget::new();
        whole.alloc_input(|| "", || Ok(Fr::ONE)).unwrap();
        let mut parts = WitnessTarget::new();
        parts.alloc_input(|| "", || Ok(Fr::ONE)).unwrap();
        for (k, chunk) in vals.chunks(33).enumerate() {
            let mut part = WitnessTarget::new();
            part.alloc_input(|| "temp ONE", || Ok(Fr::ONE)).unwrap();
            part.alloc_input(|| "", || Ok(Fr::from(k as u64 + 2)))
                .unwrap();
            whole
                .alloc_input(|| "", || Ok(Fr::from(k as u64 + 2)))
                .unwrap();
            for &v in chunk {
                part.alloc(|| "", || Ok(Fr::from(v))).unwrap();
                whole.alloc(|| "", || Ok(Fr::from(v))).unwrap();
            }
            parts.extend(&part);
        }
        assert!(parts.w.classes_match());
        assert_eq!(parts.w.inputs, whole.w.inputs);
        assert_eq!(parts.w.aux(), whole.w.aux());
        assert_eq!(parts.w.others(), whole.w.others());
    }
}
