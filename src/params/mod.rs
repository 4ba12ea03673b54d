//! Groth16 parameters: the file names of a circuit's `.params`/`.vk` files, the circuit sizes
//! they describe, and the parameter cache (loaded once per circuit, kept resident, accounted in
//! the memory budget).

use std::{
    collections::HashMap,
    fs::File,
    io::{BufReader, Read, Seek, SeekFrom},
    path::{Path, PathBuf},
    sync::Arc,
    time::Instant,
};

use bellperson::groth16::{prepare_verifying_key, Parameters, PreparedVerifyingKey, VerifyingKey};
use blstrs::Bls12;
use once_cell::sync::OnceCell;
use parking_lot::Mutex;

use storage_proofs_core::parameter_cache::{parameter_id, verifying_key_id};

use crate::{
    budget::{Budget, Reservation},
    error::{Error, Result, Status},
};

/// The `.params` file of a circuit (by its parameter id) inside a parameter directory.
pub fn params_path(dir: &Path, params_id: &str) -> PathBuf {
    dir.join(parameter_id(params_id))
}

/// The `.vk` file of a circuit inside a parameter directory.
pub fn vk_path(dir: &Path, params_id: &str) -> PathBuf {
    dir.join(verifying_key_id(params_id))
}

/// Sizes of a circuit, known from its Groth16 parameters before synthesis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CircuitSize {
    /// Constraints including the `x * 0 = 0` constraint per public input.
    pub constraints: usize,
    /// Public inputs including `ONE`.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
}

impl CircuitSize {
    /// FFT domain size: the smallest power of two holding every constraint.
    pub fn domain(&self) -> usize {
        self.constraints.next_power_of_two()
    }

    /// Upper bound of the heap bytes one partition needs from the start of its synthesis to
    /// the end of its proof: a/b/c padded to the domain (three vectors), the witness, the h
    /// coefficients and the byte-form copies of the witness taken by the multi-exponentiations.
    pub fn working_bytes(&self) -> u64 {
        let fr = 32u64;
        let d = self.domain() as u64;
        let vars = (self.inputs + self.aux) as u64;
        // a, b, c (FFT in place, padded to d) + h exponents (d) + witness as Fr and as Repr (2x vars)
        // + densities (3 bits per var, rounded up generously) + 10% allocator slack.
        let raw = 4 * d * fr + 2 * vars * fr + vars;
        raw + raw / 10
    }
}

/// One circuit's parameters. The verifying key and sizes are read at once (a few KB); the full
/// parameter set is loaded into host memory only when a host-side prover needs it (the CPU
/// backend, or a CPU retry after a GPU error): GPU backends keep their own device-ready copy.
pub struct Srs {
    pub id: String,
    pub path: PathBuf,
    pub vk: VerifyingKey<Bls12>,
    pub pvk: PreparedVerifyingKey<Bls12>,
    /// Circuit size as the parameters describe it (constraints rounded up to the domain).
    pub size: CircuitSize,
    /// Size of the `.params` file in bytes.
    pub file_len: u64,
    budget: Arc<Budget>,
    full: OnceCell<(Parameters<Bls12>, Reservation, f64)>,
}

impl Srs {
    /// The full parameters in host memory, loaded (and charged to the budget) on first use.
    pub fn params(&self) -> Result<&Parameters<Bls12>> {
        self.full
            .get_or_try_init(|| load_full(&self.path, self.file_len, &self.budget))
            .map(|(p, _, _)| p)
    }

    /// Whether the full parameters are in host memory.
    pub fn host_resident(&self) -> bool {
        self.full.get().is_some()
    }

    /// Milliseconds the full load took, once done.
    pub fn load_ms(&self) -> Option<f64> {
        self.full.get().map(|(_, _, ms)| *ms)
    }

    /// The memory budget parameters are charged to (GPU backends reserve their copies here).
    pub fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }
}

fn load_full(
    path: &Path,
    len: u64,
    budget: &Arc<Budget>,
) -> Result<(Parameters<Bls12>, Reservation, f64)> {
    let reservation = budget.try_acquire(len).ok_or_else(|| {
        Error::new(
            Status::ResourceExhausted,
            format!(
                "parameters {} ({} MiB) do not fit in the free memory budget ({} of {} MiB used)",
                path.display(),
                len >> 20,
                budget.used() >> 20,
                budget.total() >> 20
            ),
        )
    })?;
    let t = Instant::now();
    let file = File::open(path)
        .map_err(|e| Error::params(format!("cannot open {}: {e}", path.display())))?;
    let params = Parameters::<Bls12>::read(BufReader::with_capacity(1 << 22, file), false)
        .map_err(|e| Error::params(format!("cannot read parameters {}: {e}", path.display())))?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    log::info!(
        "loaded parameters {} into host memory in {:.0} ms",
        path.display(),
        ms
    );
    Ok((params, reservation, ms))
}

/// Reads the verifying key and the circuit size from the head of a `.params` file.
fn read_header(path: &Path) -> Result<(VerifyingKey<Bls12>, CircuitSize)> {
    let bad = |e: std::io::Error| {
        Error::params(format!("cannot read parameters {}: {e}", path.display()))
    };
    let file = File::open(path)
        .map_err(|e| Error::params(format!("cannot open {}: {e}", path.display())))?;
    let mut r = BufReader::new(file);
    let vk = VerifyingKey::<Bls12>::read(&mut r).map_err(bad)?;
    let mut n = [0u8; 4];
    r.read_exact(&mut n).map_err(bad)?;
    let h_len = u32::from_be_bytes(n) as i64;
    // Uncompressed G1 points: 96 bytes each.
    r.seek(SeekFrom::Current(h_len * 96)).map_err(bad)?;
    r.read_exact(&mut n).map_err(bad)?;
    let l_len = u32::from_be_bytes(n) as usize;
    Ok((
        vk.clone(),
        CircuitSize {
            constraints: h_len as usize + 1,
            inputs: vk.ic.len(),
            aux: l_len,
        },
    ))
}

type Slot = Arc<OnceCell<Arc<Srs>>>;

/// Parameter cache keyed by the circuit's parameter id.
pub struct SrsCache {
    dir: PathBuf,
    slots: Mutex<HashMap<String, Slot>>,
}

impl SrsCache {
    pub fn new(dir: PathBuf) -> Self {
        SrsCache {
            dir,
            slots: Mutex::new(HashMap::new()),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Ids of the parameter sets now resident in host memory.
    pub fn resident(&self) -> Vec<String> {
        self.slots
            .lock()
            .iter()
            .filter(|(_, s)| s.get().is_some_and(|srs| srs.host_resident()))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The parameters for `id`, loading them on first use. Concurrent callers for the same id
    /// wait for one load; a failed load is retried by the next caller.
    pub fn get(&self, id: &str, budget: &Arc<Budget>) -> Result<Arc<Srs>> {
        let slot = self.slots.lock().entry(id.to_string()).or_default().clone();
        slot.get_or_try_init(|| self.load(id, budget).map(Arc::new))
            .cloned()
    }

    fn load(&self, id: &str, budget: &Arc<Budget>) -> Result<Srs> {
        let path = params_path(&self.dir, id);
        let meta = std::fs::metadata(&path).map_err(|e| {
            Error::params(format!(
                "No cached parameters found for {id} [failure finding {}]: {e}; run `cuzk setup` or fetch the \
                 production parameters into this directory",
                path.display()
            ))
        })?;
        let (vk, size) = read_header(&path)?;
        let pvk = prepare_verifying_key(&vk);
        log::info!(
            "parameters {}: domain {}, {} inputs, {} aux, {} MiB",
            path.display(),
            size.constraints,
            size.inputs,
            size.aux,
            meta.len() >> 20
        );
        Ok(Srs {
            id: id.to_string(),
            path,
            vk,
            pvk,
            size,
            file_len: meta.len(),
            budget: budget.clone(),
            full: OnceCell::new(),
        })
    }
}
