//! Groth16 parameters, loaded once per circuit and kept resident (and accounted in the budget).

use std::{
    collections::HashMap,
    fs::File,
    io::BufReader,
    path::{Path, PathBuf},
    sync::Arc,
    time::Instant,
};

use bellperson::groth16::{prepare_verifying_key, Parameters, PreparedVerifyingKey};
use blstrs::Bls12;
use once_cell::sync::OnceCell;
use parking_lot::Mutex;

use super::budget::{Budget, Reservation};
use crate::{
    error::{Error, Result, Status},
    porep,
    prover::CircuitSize,
};

/// One circuit's parameters, resident in memory.
pub struct Srs {
    pub id: String,
    pub path: PathBuf,
    pub params: Parameters<Bls12>,
    pub pvk: PreparedVerifyingKey<Bls12>,
    /// Circuit size as the parameters describe it (constraints rounded up to the domain).
    pub size: CircuitSize,
    pub load_ms: f64,
    _reservation: Reservation,
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

    /// Ids of the parameter sets now resident.
    pub fn resident(&self) -> Vec<String> {
        self.slots
            .lock()
            .iter()
            .filter(|(_, s)| s.get().is_some())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The parameters for `id`, loading them on first use. Concurrent callers for the same id
    /// wait for one load; a failed load is retried by the next caller.
    pub fn get(&self, id: &str, budget: &Arc<Budget>) -> Result<Arc<Srs>> {
        let slot = self.slots.lock().entry(id.to_string()).or_default().clone();
        slot.get_or_try_init(|| self.load(id, budget).map(Arc::new)).cloned()
    }

    fn load(&self, id: &str, budget: &Arc<Budget>) -> Result<Srs> {
        let path = porep::params_path(&self.dir, id);
        let meta = std::fs::metadata(&path).map_err(|e| {
            Error::params(format!(
                "No cached parameters found for {id} [failure finding {}]: {e}; run `cuzk setup` or fetch the \
                 production parameters into this directory",
                path.display()
            ))
        })?;
        let reservation = budget
            .try_acquire(meta.len())
            .ok_or_else(|| {
                Error::new(
                    Status::ResourceExhausted,
                    format!(
                        "parameters {} ({} MiB) do not fit in the free memory budget ({} of {} MiB used)",
                        path.display(),
                        meta.len() >> 20,
                        budget.used() >> 20,
                        budget.total() >> 20
                    ),
                )
            })?;
        let t = Instant::now();
        let file = File::open(&path)
            .map_err(|e| Error::params(format!("cannot open {}: {e}", path.display())))?;
        let params = Parameters::<Bls12>::read(BufReader::with_capacity(1 << 22, file), false)
            .map_err(|e| Error::params(format!("cannot read parameters {}: {e}", path.display())))?;
        let pvk = prepare_verifying_key(&params.vk);
        let size = CircuitSize {
            constraints: params.h.len() + 1,
            inputs: params.vk.ic.len(),
            aux: params.l.len(),
        };
        let load_ms = t.elapsed().as_secs_f64() * 1e3;
        log::info!(
            "loaded parameters {} in {:.0} ms (domain {}, {} inputs, {} aux)",
            path.display(),
            load_ms,
            size.constraints,
            size.inputs,
            size.aux
        );
        Ok(Srs {
            id: id.to_string(),
            path,
            params,
            pvk,
            size,
            load_ms,
            _reservation: reservation,
        })
    }
}
