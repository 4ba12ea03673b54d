//! Pre-compiled circuits: a circuit's R1CS is recorded once ([`RecordingCS`]); each partition
//! then runs only its witness closures ([`WitnessTarget`]) and gets A·w, B·w and C·w from a
//! row-parallel sparse product ([`assignment`]), the same [`ProvingAssignment`] full synthesis
//! gives, for a fraction of its CPU time.
//!
//! The sparse form, per matrix: `u32` row starts, one `u32` column per term (inputs marked by
//! [`INPUT_BIT`]) and one `u16` coefficient code per term into a dictionary shared by the three
//! matrices (`ONE` is code 0 and `-ONE` code 1; in the project's circuits most terms are one of
//! the two). With ~5.6 terms per constraint that is ~46 bytes per constraint in memory and on
//! disk. A recording is kept next to the parameters ([`file`]) and checked on every load.
//!
//! Guards: a witness must have the recording's input and aux counts, and every row of the
//! product must satisfy a·b = c; otherwise the partition gets an error and the engine
//! synthesizes it in full.

pub mod cache;
pub mod file;
pub mod native;
mod product;
mod record;
mod witness;

use bellperson::multiexp::DensityTracker;
use blstrs::Scalar as Fr;
use ff::Field;

pub use cache::{Held, PceCache, PceState, PceStats, Room};
pub use product::assignment;
pub use record::RecordingCS;
pub use witness::{Witness, WitnessTarget};

pub use crate::prover::INPUT_BIT;
/// Distinct coefficients a recording can hold (codes are `u16`).
pub(crate) const MAX_DICT: usize = 1 << 16;

/// One sparse matrix: row `r` has terms `row_start[r]..row_start[r + 1]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrix {
    pub row_start: Vec<u32>,
    pub cols: Vec<u32>,
    pub coeffs: Vec<u16>,
}

impl Matrix {
    fn new() -> Self {
        Matrix {
            row_start: vec![0],
            cols: Vec::new(),
            coeffs: Vec::new(),
        }
    }

    fn push_term(&mut self, col: u32, coeff: u16) {
        self.cols.push(col);
        self.coeffs.push(coeff);
    }

    /// Closes the current row; false where the term count no longer fits a `u32`.
    fn end_row(&mut self) -> bool {
        match u32::try_from(self.cols.len()) {
            Ok(n) => {
                self.row_start.push(n);
                true
            }
            Err(_) => false,
        }
    }

    fn shrink(&mut self) {
        self.row_start.shrink_to_fit();
        self.cols.shrink_to_fit();
        self.coeffs.shrink_to_fit();
    }

    pub fn rows(&self) -> usize {
        self.row_start.len().saturating_sub(1)
    }

    pub fn terms(&self) -> usize {
        self.cols.len()
    }

    fn bytes(&self) -> u64 {
        (self.row_start.len() * 4 + self.cols.len() * 4 + self.coeffs.len() * 2) as u64
    }

    /// Row starts ascending from 0 to the term count, columns and codes in range.
    fn check(&self, rows: usize, inputs: usize, aux: usize, dict: usize) -> Result<(), String> {
        if rows.checked_add(1) != Some(self.row_start.len()) || self.row_start.first() != Some(&0) {
            return Err("row table does not match the constraint count".into());
        }
        if self.row_start.windows(2).any(|w| w[0] > w[1])
            || self.row_start.last().map(|&n| n as usize) != Some(self.cols.len())
            || self.cols.len() != self.coeffs.len()
        {
            return Err("row table is not ascending or does not end at the term count".into());
        }
        let bad_col = self.cols.iter().any(|&c| {
            if c & INPUT_BIT != 0 {
                (c & !INPUT_BIT) as usize >= inputs
            } else {
                c as usize >= aux
            }
        });
        if bad_col {
            return Err("a column is out of range".into());
        }
        if self.coeffs.iter().any(|&k| k as usize >= dict) {
            return Err("a coefficient code is out of range".into());
        }
        Ok(())
    }
}

/// What a circuit's parameters say its recording must be: its variable counts, and the A and
/// B query lengths its density tables must give. A recording whose densities disagree would
/// fail every GPU upload (a healthy GPU faulted) or give proofs that do not verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect {
    /// Public inputs including `ONE`.
    pub inputs: usize,
    pub aux: usize,
    pub queries: crate::params::Queries,
}

impl Expect {
    /// What the parameters `srs` say.
    pub fn of(srs: &crate::params::Srs) -> Self {
        Expect {
            inputs: srs.size.inputs,
            aux: srs.size.aux,
            queries: srs.queries,
        }
    }

    /// What `rec` gives (for tests and tools that have no parameters at hand).
    pub fn given_by(rec: &Recording) -> Self {
        Expect {
            inputs: rec.inputs,
            aux: rec.aux,
            queries: rec.queries(),
        }
    }

    /// Why `rec` is not a recording of the circuit these parameters are for, if it is not.
    pub fn mismatch(&self, rec: &Recording) -> Option<String> {
        if (rec.inputs, rec.aux) != (self.inputs, self.aux) {
            return Some(format!(
                "{} inputs and {} aux, its parameters say {} and {}",
                rec.inputs, rec.aux, self.inputs, self.aux
            ));
        }
        let got = rec.queries();
        (got != self.queries).then(|| {
            format!(
                "its densities give A and B queries of {} and {} points, its parameters have {} and {}",
                got.a, got.b, self.queries.a, self.queries.b
            )
        })
    }
}

/// A circuit's R1CS in sparse form, with the densities of the A and B queries (fixed by the
/// circuit, not by the witness).
#[derive(Clone, Debug)]
pub struct Recording {
    /// The circuit's parameter id.
    pub id: String,
    /// Public inputs including `ONE`.
    pub inputs: usize,
    pub aux: usize,
    pub dict: Vec<Fr>,
    pub a: Matrix,
    pub b: Matrix,
    pub c: Matrix,
    pub a_aux_density: DensityTracker,
    pub b_input_density: DensityTracker,
    pub b_aux_density: DensityTracker,
    /// Which recording this is in the process (each one recorded or loaded gets its own; a
    /// clone keeps it): a prover's device copy is reused only for the same instance.
    pub instance: u64,
}

/// A number no other recording of this process has.
pub(crate) fn new_instance() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl PartialEq for Recording {
    fn eq(&self, o: &Self) -> bool {
        self.id == o.id
            && self.inputs == o.inputs
            && self.aux == o.aux
            && self.dict == o.dict
            && self.a == o.a
            && self.b == o.b
            && self.c == o.c
            && self.a_aux_density == o.a_aux_density
            && self.b_input_density == o.b_input_density
            && self.b_aux_density == o.b_aux_density
    }
}

impl crate::sys::RecordingTables for Recording {
    fn tables(&self) -> [(&[u32], &[u32], &[u16]); 3] {
        [&self.a, &self.b, &self.c].map(|x| (&x.row_start[..], &x.cols[..], &x.coeffs[..]))
    }
}

impl Recording {
    /// Constraints, including the `input * 0 = 0` one per public input.
    pub fn constraints(&self) -> usize {
        self.a.rows()
    }

    /// Heap bytes held (what the memory budget is charged).
    pub fn bytes(&self) -> u64 {
        let density = ((self.inputs + 2 * self.aux) / 8) as u64 + 64;
        self.a.bytes() + self.b.bytes() + self.c.bytes() + self.dict.len() as u64 * 32 + density
    }

    /// The A and B query lengths its densities give (see [`Expect`]).
    pub fn queries(&self) -> crate::params::Queries {
        crate::params::Queries {
            a: self.inputs + self.a_aux_density.get_total_density(),
            b: self.b_input_density.get_total_density() + self.b_aux_density.get_total_density(),
        }
    }

    /// Why its density tables are not the ones its matrices give, if they are not: a term with
    /// a nonzero coefficient marks its column (aux columns in A and B, input columns in B), as
    /// recording marks them. A file whose bits were changed, or permuted with their counts
    /// kept, gives proofs that do not verify; it is refused on load instead.
    pub fn density_mismatch(&self) -> Option<String> {
        let tables = [
            ("A aux", &self.a_aux_density, &self.a, false, self.aux),
            ("B input", &self.b_input_density, &self.b, true, self.inputs),
            ("B aux", &self.b_aux_density, &self.b, false, self.aux),
        ];
        for (name, table, m, inputs, n) in tables {
            let mut marked = vec![0u64; n.div_ceil(64)];
            for (&col, &code) in m.cols.iter().zip(&m.coeffs) {
                let zero = self
                    .dict
                    .get(code as usize)
                    .is_none_or(|k| bool::from(k.is_zero()));
                if (col & INPUT_BIT != 0) != inputs || zero {
                    continue;
                }
                let j = (col & !INPUT_BIT) as usize;
                if j < n {
                    marked[j / 64] |= 1 << (j % 64);
                }
            }
            let same = table.bv.len() == n
                && table
                    .bv
                    .iter()
                    .enumerate()
                    .all(|(j, bit)| *bit == (marked[j / 64] >> (j % 64) & 1 == 1));
            if !same {
                return Some(format!(
                    "its {name} density table is not the one its matrices give"
                ));
            }
        }
        None
    }

    /// Terms over all three matrices.
    pub fn terms(&self) -> usize {
        self.a.terms() + self.b.terms() + self.c.terms()
    }

    /// The recording as a prover reads it, with its tables' owner (a GPU short of memory
    /// may read them in place).
    pub fn shared_r1cs(self: &std::sync::Arc<Self>) -> crate::prover::SparseR1cs<'_> {
        let mut r = self.r1cs();
        r.tables = Some(self.clone());
        r
    }

    /// The recording as a prover reads it.
    pub fn r1cs(&self) -> crate::prover::SparseR1cs<'_> {
        crate::prover::SparseR1cs {
            id: &self.id,
            instance: self.instance,
            constraints: self.constraints(),
            inputs: self.inputs,
            aux: self.aux,
            dict: &self.dict,
            matrices: [&self.a, &self.b, &self.c]
                .map(|x| (&x.row_start[..], &x.cols[..], &x.coeffs[..])),
            a_aux_density: &self.a_aux_density,
            b_input_density: &self.b_input_density,
            b_aux_density: &self.b_aux_density,
            tables: None,
        }
    }

    /// Checks the tables' internal consistency (after a load, before any product reads them).
    pub fn check(&self) -> Result<(), String> {
        let rows = self.constraints();
        if self.dict.len() < 2
            || self.dict.len() > MAX_DICT
            || self.dict[0] != Fr::ONE
            || self.dict[1] != -Fr::ONE
        {
            return Err("bad coefficient dictionary".into());
        }
        for (name, m) in [("A", &self.a), ("B", &self.b), ("C", &self.c)] {
            m.check(rows, self.inputs, self.aux, self.dict.len())
                .map_err(|e| format!("matrix {name}: {e}"))?;
        }
        if self.a_aux_density.bv.len() != self.aux
            || self.b_aux_density.bv.len() != self.aux
            || self.b_input_density.bv.len() != self.inputs
        {
            return Err("density tables do not match the variable counts".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};
    use ff::Field;

    /// x * y = z, (x + 2y - 3) * 1 = w, with public z.
    pub(crate) struct Toy(pub Option<(u64, u64)>);

    impl Circuit<Fr> for Toy {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let v = self.0;
            let x = cs.alloc(
                || "x",
                || Ok(Fr::from(v.ok_or(SynthesisError::AssignmentMissing)?.0)),
            )?;
            let y = cs.alloc(
                || "y",
                || Ok(Fr::from(v.ok_or(SynthesisError::AssignmentMissing)?.1)),
            )?;
            let z = cs.alloc_input(
                || "z",
                || {
                    let (a, b) = v.ok_or(SynthesisError::AssignmentMissing)?;
                    Ok(Fr::from(a * b))
                },
            )?;
            cs.enforce(|| "xy", |lc| lc + x, |lc| lc + y, |lc| lc + z);
            let w = cs.alloc(
                || "w",
                || {
                    let (a, b) = v.ok_or(SynthesisError::AssignmentMissing)?;
                    Ok(Fr::from(a) + Fr::from(b).double() - Fr::from(3))
                },
            )?;
            let three = Fr::from(3);
            cs.enforce(
                || "lin",
                |lc| lc + x + (Fr::from(2), y) - (three, CS::one()),
                |lc| lc + CS::one(),
                |lc| lc + w,
            );
            // A zero-coefficient term and a duplicated one.
            cs.enforce(
                || "dup",
                |lc| lc + (Fr::ZERO, x) + CS::one(),
                |lc| lc + (Fr::ONE, y) + (-Fr::ONE, y) + CS::one(),
                |lc| lc + CS::one(),
            );
            Ok(())
        }
    }

    #[test]
    fn toy_recording_gives_full_synthesis_assignment() {
        let rec = RecordingCS::record(Toy(None), "toy", None).unwrap();
        rec.check().unwrap();
        assert_eq!((rec.inputs, rec.aux, rec.constraints()), (2, 3, 5));
        for v in [(3, 5), (0, 1), (1, 0), (7, 11)] {
            let full = crate::prover::ProvingAssignment::synthesize(Toy(Some(v)), None).unwrap();
            let w = WitnessTarget::synthesize(Toy(Some(v)), None, None).unwrap();
            let pce = assignment(&rec, w, None).unwrap();
            assert_eq!(pce, full, "{v:?}");
        }
    }

    /// One row evaluated on the host from the compact witness (what a GPU's failed row check
    /// is compared with), including an "other" value and the inputs.
    #[test]
    fn one_row_is_checked_on_the_host_from_the_compact_witness() {
        let rec = RecordingCS::record(Toy(None), "toy", None).unwrap();
        let w = WitnessTarget::synthesize(Toy(Some((3, 5))), None, None).unwrap();
        let r1cs = rec.r1cs();
        for row in 0..rec.constraints() {
            assert_eq!(r1cs.row_holds(row, &w.classed()), Some(true), "row {row}");
        }
        assert_eq!(r1cs.row_holds(rec.constraints(), &w.classed()), None);
        let mut wrong = w.clone();
        wrong.inputs[1] = Fr::from(16);
        assert_eq!(r1cs.row_holds(0, &wrong.classed()), Some(false));
    }

    #[test]
    fn a_wrong_recording_or_witness_is_an_error() {
        let rec = RecordingCS::record(Toy(None), "toy", None).unwrap();
        // x*y = z with a wrong z: the row check catches it.
        let mut w = WitnessTarget::synthesize(Toy(Some((3, 5))), None, None).unwrap();
        w.inputs[1] = Fr::from(16);
        let e = assignment(&rec, w, None).unwrap_err();
        assert!(e.contains("constraint 0"), "{e}");
        // A recording whose B column points at the wrong variable.
        let mut bad = rec.clone();
        bad.b.cols[0] = 0;
        let w = WitnessTarget::synthesize(Toy(Some((3, 5))), None, None).unwrap();
        assert!(assignment(&bad, w, None).is_err());
        // A witness of another length.
        let mut w = WitnessTarget::synthesize(Toy(Some((3, 5))), None, None).unwrap();
        w.push(Fr::ONE);
        let e = assignment(&rec, w, None).unwrap_err();
        assert!(e.contains("aux"), "{e}");
    }

    #[test]
    fn every_recording_made_or_loaded_is_its_own_instance() {
        let a = RecordingCS::record(Toy(None), "toy", None).unwrap();
        let b = RecordingCS::record(Toy(None), "toy", None).unwrap();
        // The same content, yet not the same recording: a device copy of one is not the other's.
        assert!(a == b && a.instance != b.instance);
        assert_eq!(a.clone().instance, a.instance);
        assert_eq!(a.r1cs().instance, a.instance);
        let dir = tempfile::tempdir().unwrap();
        let path = file::path(dir.path(), &a.id);
        file::save(&a, &path).unwrap();
        let loaded = file::load(&path, &a.id, Some((a.inputs, a.aux))).unwrap();
        assert!(loaded == a && loaded.instance != a.instance && loaded.instance != b.instance);
    }

    /// `distrust` removes only the file the recording came from. The hazard: removing the
    /// file by name also removes a good one another process has written in its place since.
    #[test]
    fn distrust_removes_only_the_file_the_recording_came_from() {
        use crate::budget::Budget;
        let made = RecordingCS::record(Toy(None), "toy", None).unwrap();
        let expect = Expect::given_by(&made);
        let room = Room {
            recording: 1,
            partition: 1,
        };
        let record = |_| RecordingCS::record(Toy(None), "toy", None).map_err(|e| e.to_string());
        let dir = tempfile::tempdir().unwrap();
        let path = file::path(dir.path(), "toy");
        // Recorded and saved here, then written again by "another process".
        let cache = PceCache::new(dir.path().to_path_buf(), Budget::new(1 << 30));
        cache.load_or_record("toy", expect, room, record).unwrap();
        assert!(path.exists());
        file::save(&made, &path).unwrap();
        cache.distrust("toy", "test");
        assert!(path.exists(), "another process's file was removed");
        // Loaded from that file: distrusted, it is removed.
        let cache = PceCache::new(dir.path().to_path_buf(), Budget::new(1 << 30));
        cache.load_or_record("toy", expect, room, record).unwrap();
        assert_eq!(cache.stats().loaded, 1);
        cache.distrust("toy", "test");
        assert!(
            !path.exists(),
            "the distrusted recording's own file is still there"
        );
    }

    /// A recording that does not fit the budget once made is saved before its resident
    /// reservation is asked, so the next try loads it. The hazard: saved after the
    /// reservation, it is dropped unsaved and the next try records it again.
    #[test]
    fn a_recording_that_does_not_fit_now_is_saved_for_the_next_try() {
        use crate::budget::Budget;
        let made = RecordingCS::record(Toy(None), "toy", None).unwrap();
        let (bytes, expect) = (made.bytes(), Expect::given_by(&made));
        let dir = tempfile::tempdir().unwrap();
        let total = 1u64 << 20;
        let cache = PceCache::new(dir.path().to_path_buf(), Budget::new(total));
        // Room to record (1 byte of estimate beside one partition), none to keep the result.
        let room = Room {
            recording: 1,
            partition: total - bytes / 2,
        };
        let got = cache.load_or_record("toy", expect, room, |_| {
            RecordingCS::record(Toy(None), "toy", None).map_err(|e| e.to_string())
        });
        assert!(
            got.is_err(),
            "the recording does not fit beside a partition"
        );
        assert!(
            file::path(dir.path(), "toy").exists(),
            "the recording is saved for the next try"
        );
    }

    /// A panic while a recording is loaded or made, on its own thread, leaves the circuit
    /// `Absent`, to be tried again later, and a preload meanwhile answers at once. The hazard:
    /// uncaught, it leaves the circuit `Working` for ever: never recorded again, and a preload
    /// waiting on it spins.
    #[test]
    fn a_panic_while_recording_leaves_the_circuit_to_be_tried_again() {
        use crate::budget::Budget;
        let made = RecordingCS::record(Toy(None), "toy", None).unwrap();
        let expect = Expect::given_by(&made);
        let dir = tempfile::tempdir().unwrap();
        let cache = PceCache::new(dir.path().to_path_buf(), Budget::new(1 << 30));
        let room = Room {
            recording: 1,
            partition: 1,
        };
        cache.start("toy", expect, room, |_| panic!("injected in a recording"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while cache.state("toy") == PceState::Working {
            assert!(
                std::time::Instant::now() < deadline,
                "still Working 30 s after its thread panicked"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(cache.state("toy"), PceState::Absent);
        let got = cache.load_or_record("toy", expect, room, |_| panic!("not yet"));
        assert!(
            matches!(got, Err(PceState::Absent)),
            "a preload answers at once"
        );
    }

    /// A recording file is read only into room the budget has for it. The hazard: read into
    /// host memory before the budget is asked, a recording that does not fit is read (6 GB at
    /// 32 GiB) outside the budget, then dropped, and read again at every retry.
    #[test]
    fn a_recording_file_is_read_only_into_room_the_budget_has() {
        use crate::budget::Budget;
        let made = RecordingCS::record(Toy(None), "toy", None).unwrap();
        let expect = Expect::given_by(&made);
        let dir = tempfile::tempdir().unwrap();
        let path = file::path(dir.path(), "toy");
        file::save(&made, &path).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let total = 1u64 << 20;
        let room = Room {
            recording: 1,
            partition: total - len / 2,
        };
        let no_record = |_| -> Result<Recording, String> { panic!("the file is there") };
        let cache = PceCache::new(dir.path().to_path_buf(), Budget::new(total));
        assert!(cache
            .load_or_record("toy", expect, room, no_record)
            .is_err());
        assert_eq!(cache.state("toy"), PceState::Absent, "tried again later");
        assert_eq!(cache.stats().file_reads, 0, "read with no room for it");
        // With room, it is read once and kept.
        let cache = PceCache::new(dir.path().to_path_buf(), Budget::new(total));
        let room = Room {
            recording: 1,
            partition: 1,
        };
        assert!(cache.load_or_record("toy", expect, room, no_record).is_ok());
        assert_eq!((cache.stats().file_reads, cache.stats().loaded), (1, 1));
    }
    /// A recording file's densities are compared with the parameters' query lengths: a file
    /// with a wrong density bit and a valid checksum is rejected and the circuit recorded
    /// again. The hazard: checked for length only, such a file is loaded, and fails every GPU
    /// upload as a device fault or gives proofs that do not verify, across restarts.
    #[test]
    fn a_recording_file_whose_densities_disagree_with_the_parameters_is_recorded_again() {
        let made = RecordingCS::record(Toy(None), "toy", None).unwrap();
        let expect = Expect::given_by(&made);
        let dir = tempfile::tempdir().unwrap();
        let path = file::path(dir.path(), "toy");
        // One A density bit turned off, then saved (its checksum made over the wrong bit).
        let mut wrong = made.clone();
        let on = wrong
            .a_aux_density
            .bv
            .first_one()
            .expect("an aux value in A");
        let mut a = bellperson::multiexp::DensityTracker::new();
        for i in 0..wrong.aux {
            a.add_element();
            if i != on && wrong.a_aux_density.bv[i] {
                a.inc(i);
            }
        }
        wrong.a_aux_density = a;
        file::save(&wrong, &path).unwrap();
        assert!(file::load(&path, "toy", Some((made.inputs, made.aux))).is_ok());
        assert!(expect.mismatch(&wrong).unwrap().contains("A and B queries"));
        recorded_again_over(dir.path(), &made);
        // The file saved in its place is the right one.
        let again = file::load(&path, "toy", Some((made.inputs, made.aux))).unwrap();
        assert!(expect.mismatch(&again).is_none());
    }

    /// A recording file's density tables are checked against the recording's own matrices on
    /// load: a file with two density bits swapped (counts kept, checksum made over them) is
    /// rejected and the circuit recorded again. The hazard: compared by count only, such a file
    /// is loaded and gives proofs that do not verify.
    #[test]
    fn a_recording_file_with_permuted_density_bits_is_recorded_again() {
        let made = RecordingCS::record(Toy(None), "toy", None).unwrap();
        assert!(made.density_mismatch().is_none());
        let expect = Expect::given_by(&made);
        let dir = tempfile::tempdir().unwrap();
        let path = file::path(dir.path(), "toy");
        // A's aux bits: x and y on, w off. Swapped: x off, w on (the same count).
        let mut wrong = made.clone();
        let (on, off) = {
            let bv = &wrong.a_aux_density.bv;
            (bv.first_one().unwrap(), bv.first_zero().unwrap())
        };
        wrong.a_aux_density.bv.set(on, false);
        wrong.a_aux_density.bv.set(off, true);
        assert!(expect.mismatch(&wrong).is_none(), "the counts are kept");
        assert!(wrong.density_mismatch().unwrap().contains("A aux"));
        file::save(&wrong, &path).unwrap();
        recorded_again_over(dir.path(), &made);
    }

    /// A cache in `dir`, whose recording file of "toy" is a wrong one, asked for the circuit:
    /// the file is refused and the circuit recorded again (`made`, what recording gives).
    fn recorded_again_over(dir: &std::path::Path, made: &Recording) {
        let cache = PceCache::new(dir.to_path_buf(), crate::budget::Budget::new(1 << 30));
        let room = Room {
            recording: 1,
            partition: 1,
        };
        let got = cache
            .load_or_record("toy", Expect::given_by(made), room, |_| {
                RecordingCS::record(Toy(None), "toy", None).map_err(|e| e.to_string())
            })
            .unwrap();
        assert!(got.rec == *made, "the wrong file was used");
        let st = cache.stats();
        assert_eq!((st.rejected_files, st.recorded, st.loaded), (1, 1, 0));
    }

    /// A recording given up for one wrong assignment (a GPU glitch caught by the self-check, or
    /// a damaged file) is recorded again from the circuit; a second wrong assignment from a
    /// recording made in this process is a fault of the circuit, counted for the operator. The
    /// hazard: left on full synthesis until restart, the circuit sends every later partition
    /// to the CPU on a card whose plan takes compact witnesses only.
    #[test]
    fn a_distrusted_recording_is_recorded_again_and_a_second_fresh_one_is_a_fault() {
        use crate::budget::Budget;
        let made = RecordingCS::record(Toy(None), "toy", None).unwrap();
        let expect = Expect::given_by(&made);
        let dir = tempfile::tempdir().unwrap();
        let path = file::path(dir.path(), "toy");
        file::save(&made, &path).unwrap();
        let room = Room {
            recording: 1,
            partition: 1,
        };
        let record = |_| RecordingCS::record(Toy(None), "toy", None).map_err(|e| e.to_string());
        let cache = PceCache::new(dir.path().to_path_buf(), Budget::new(1 << 30));
        // Loaded from its file, then distrusted: the file goes, the circuit is recorded again.
        cache.load_or_record("toy", expect, room, record).unwrap();
        cache.distrust("toy", "test");
        assert!(!path.exists());
        assert_eq!(cache.state("toy"), PceState::Absent);
        cache.load_or_record("toy", expect, room, record).unwrap();
        // Made here, distrusted: recorded again once more (one glitch).
        cache.distrust("toy", "test");
        assert_eq!(cache.state("toy"), PceState::Absent);
        cache.load_or_record("toy", expect, room, record).unwrap();
        let st = cache.stats();
        assert_eq!((st.loaded, st.recorded, st.circuit_faults), (1, 2, 0));
        // A second recording made here given up: the circuit's fault.
        cache.distrust("toy", "test");
        assert!(matches!(cache.state("toy"), PceState::Failed(_)));
        let st = cache.stats();
        assert_eq!((st.distrusted, st.circuit_faults), (3, 1));
        assert!(cache.load_or_record("toy", expect, room, record).is_err());
    }
}
