//! Groth16 parameters: the file names of a circuit's `.params`/`.vk` files, the circuit sizes
//! they describe, and the parameter cache (checked once per circuit, kept resident, accounted
//! in the memory budget).
//!
//! Before any prover (bellperson's reader, the GPU prover's base reader) touches a `.params` file,
//! [`check_file`] walks its section headers and requires the file to end exactly where its
//! last section does, so that no reader can run past the end of a truncated file. The `.vk`
//! file next to it (what filecoin-proofs' `verify_seal`, and so the chain, uses) must hold the
//! same verifying key as the `.params` file; the self-check verifies with it. A failed check
//! is remembered until the file changes (size, modification time or inode), so that a broken
//! 47 GB file is not read again for every job.

use std::{
    collections::HashMap,
    fs::File,
    io::{BufReader, Read, Seek, SeekFrom},
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Instant, SystemTime},
};

use bellperson::groth16::{prepare_verifying_key, Parameters, PreparedVerifyingKey, VerifyingKey};
use blstrs::Bls12;
use parking_lot::Mutex;
use storage_proofs_core::parameter_cache::{parameter_id, verifying_key_id};

mod bases;
mod random;
pub use crate::sys::G1Kind;
pub use bases::{Bases, BasesPiece, PIECE_HOST_BYTES};
pub use random::{is_random_set, random_set_alpha, random_set_alpha_g1};

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

    /// Heap bytes one partition holds from the start of its synthesis to the end of its
    /// proof, by the path it takes (what the memory budget reserves for it), for a circuit
    /// whose compact witnesses hold PoRep's share of values that are neither 0 nor 1.
    pub fn host_bytes(&self, path: HostPath) -> u64 {
        self.host_bytes_with(path, WITNESS_OTHERS_ROOM)
    }

    /// [`Self::host_bytes`] for a circuit whose compact witnesses keep room for
    /// `others_room` x aux values that are neither 0 nor 1 (their lists' capacity).
    pub fn host_bytes_with(&self, path: HostPath, others_room: f64) -> u64 {
        let fr = 32u64;
        let d = self.domain() as u64;
        let aux = self.aux as u64;
        let vars = (self.inputs + self.aux) as u64;
        let raw = match path {
            // The compact witness (`pce::Witness`): the inputs, two class bits per aux value
            // and the list of the values that are neither 0 nor 1 (index and value, 36 bytes)
            // with its room. The dense values are never made on this path.
            HostPath::Witness => {
                self.inputs as u64 * fr + aux / 4 + (aux as f64 * 36.0 * others_room) as u64
            }
            // a, b, c (their rows only: the room reserved for the domain's padding is never
            // written) and the witness, with three density bits per variable.
            HostPath::Assignment { rows } => 3 * rows as u64 * fr + vars * fr + vars,
            // a, b, c padded to the domain (FFT in place) + h exponents (d) + the witness as
            // field elements and as exponents (2x vars) + densities.
            HostPath::Cpu => 4 * d * fr + 2 * vars * fr + vars,
        };
        raw + raw / 20
    }
}

/// The room a compact witness is budgeted for its values that are neither 0 nor 1, as a share
/// of its aux values, where nothing else is known of the circuit: PoRep's circuits have
/// 0.4-1.6%, in lists grown by doubling from 1.6%; budgeted as 4%.
pub const WITNESS_OTHERS_ROOM: f64 = 0.04;

/// What a GPU's plan must know of a circuit beyond its size, as its proof kind expects it:
/// the share of its witnesses' values that are neither 0 nor 1, per 1024 (0: a PoRep
/// witness's few, 1 in 32 at most), and its recording's bytes a row (0: ~45, PoRep's). A
/// dense witness (PoSt's Poseidon states) grows the GPU's stages and the tails' gathered
/// bases far past what PoRep's needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WitnessShape {
    pub others_per_1024: u32,
    pub recording_bytes_per_row: u32,
}

/// Where a partition is proved, which decides what it holds in host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostPath {
    /// Its witness only: a GPU computes a, b and c from the circuit's recording.
    Witness,
    /// a, b and c of `rows` constraints and the witness, for a GPU prover that takes them as
    /// they are (the product on the host: the circuit's constraints; full synthesis before
    /// the constraint count is known: the domain).
    Assignment { rows: usize },
    /// The CPU prover (also a CPU retry of a partition a GPU failed on).
    Cpu,
}

impl HostPath {
    pub fn name(&self) -> &'static str {
        match self {
            HostPath::Witness => "witness",
            HostPath::Assignment { .. } => "assignment",
            HostPath::Cpu => "cpu",
        }
    }
}

/// What the engine can tell of a file's content without reading it: a change of any of these
/// means the file must be checked again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStamp {
    pub len: u64,
    pub modified: Option<SystemTime>,
    pub inode: u64,
}

impl FileStamp {
    pub fn of(path: &Path) -> std::io::Result<FileStamp> {
        let m = std::fs::metadata(path)?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&m);
        #[cfg(not(unix))]
        let inode = 0;
        Ok(FileStamp {
            len: m.len(),
            modified: m.modified().ok(),
            inode,
        })
    }
}

/// Uncompressed point sizes in a `.params` file.
const G1: u64 = 96;
const G2: u64 = 192;
/// alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2.
const VK_FIXED: u64 = 3 * G1 + 3 * G2;

/// Points in a parameter set's A and B queries: every input and each aux value marked in the
/// circuit's A density (`a`); each input and aux value marked in the B densities (`b`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queries {
    pub a: usize,
    pub b: usize,
}

/// Where a `.params` file's sections are, checked against its length.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The verifying key at the head of the file.
    pub vk: VerifyingKey<Bls12>,
    /// Point counts of h, l, a, b_g1, b_g2.
    pub counts: [u64; 5],
    pub len: u64,
}

impl Layout {
    /// Byte offsets where the sections end: the verifying key, then each of h, l, a, b_g1 and
    /// b_g2 twice (after its length, after its points). The last is the file's length.
    pub fn section_ends(&self) -> Vec<(&'static str, u64)> {
        let mut pos = VK_FIXED + 4 + self.vk.ic.len() as u64 * G1;
        let mut out = vec![("vk", pos)];
        for (name, point, n) in [
            ("h", G1, self.counts[0]),
            ("l", G1, self.counts[1]),
            ("a", G1, self.counts[2]),
            ("b_g1", G1, self.counts[3]),
            ("b_g2", G2, self.counts[4]),
        ] {
            pos += 4;
            out.push((name, pos));
            pos += n * point;
            out.push((name, pos));
        }
        out
    }

    /// The A and B query lengths.
    pub fn queries(&self) -> Queries {
        Queries {
            a: self.counts[2] as usize,
            b: self.counts[3] as usize,
        }
    }

    /// The circuit size the parameters are for.
    pub fn size(&self) -> CircuitSize {
        CircuitSize {
            constraints: self.counts[0] as usize + 1,
            inputs: self.vk.ic.len(),
            aux: self.counts[1] as usize,
        }
    }
}

/// Reads the section headers of a `.params` file and checks that every section lies inside
/// the file and the last one ends where the file does; reads no points but the verifying key's.
pub fn check_file(path: &Path) -> Result<Layout> {
    let bad = |why: String| Error::params(format!("{}: {why}", path.display()));
    let file = File::open(path).map_err(|e| bad(format!("cannot open: {e}")))?;
    let len = file
        .metadata()
        .map_err(|e| bad(format!("cannot stat: {e}")))?
        .len();
    let mut r = BufReader::new(file);
    let truncated = |section: &str, at: u64| {
        bad(format!(
            "truncated: the file ends inside the {section} (needs {at} bytes, has {len}); \
             fetch the parameters again"
        ))
    };
    // The verifying key: fixed points, then ic (u32 count + G1 points).
    if len < VK_FIXED + 4 {
        return Err(truncated("verifying key", VK_FIXED + 4));
    }
    r.seek(SeekFrom::Start(VK_FIXED))
        .map_err(|e| bad(format!("cannot read: {e}")))?;
    let mut n = [0u8; 4];
    r.read_exact(&mut n)
        .map_err(|e| bad(format!("cannot read: {e}")))?;
    let ic = u32::from_be_bytes(n) as u64;
    let mut pos = VK_FIXED + 4 + ic * G1;
    if pos > len {
        return Err(truncated("verifying key", pos));
    }
    r.seek(SeekFrom::Start(0))
        .map_err(|e| bad(format!("cannot read: {e}")))?;
    let vk = VerifyingKey::<Bls12>::read(&mut r)
        .map_err(|e| bad(format!("the verifying key is malformed: {e}")))?;
    if vk.ic.is_empty() {
        return Err(bad("the verifying key has no input points".into()));
    }
    let mut counts = [0u64; 5];
    for (i, (name, point)) in [
        ("h query", G1),
        ("l query", G1),
        ("a query", G1),
        ("b_g1 query", G1),
        ("b_g2 query", G2),
    ]
    .into_iter()
    .enumerate()
    {
        if pos + 4 > len {
            return Err(truncated(&format!("{name} length"), pos + 4));
        }
        r.seek(SeekFrom::Start(pos))
            .map_err(|e| bad(format!("cannot read: {e}")))?;
        r.read_exact(&mut n)
            .map_err(|e| bad(format!("cannot read the {name} length: {e}")))?;
        counts[i] = u32::from_be_bytes(n) as u64;
        pos += 4 + counts[i] * point;
        if pos > len {
            return Err(truncated(name, pos));
        }
    }
    if pos != len {
        return Err(bad(format!(
            "{} bytes after the last section (expected {pos} bytes in all): not a Groth16 \
             parameter file of this format, or a damaged one",
            len - pos
        )));
    }
    let [h, _l, a, b1, b2] = counts;
    if !(h + 1).is_power_of_two() {
        return Err(bad(format!(
            "the h query has {h} points; a Groth16 parameter file has one less than a power of two"
        )));
    }
    if b1 != b2 || a < vk.ic.len() as u64 {
        return Err(bad(format!(
            "inconsistent sections: a {a} points for {} inputs, b_g1 {b1} vs b_g2 {b2} points",
            vk.ic.len()
        )));
    }
    Ok(Layout { vk, counts, len })
}

/// The verifying key in a `.vk` file, which must be the one at the head of the `.params` file.
fn check_vk(
    path: &Path,
    params: &Path,
    in_params: &VerifyingKey<Bls12>,
) -> Result<VerifyingKey<Bls12>> {
    let file = File::open(path).map_err(|e| {
        Error::params(format!(
            "cannot open {} (filecoin-proofs' verify_seal needs this verifying key beside {}): {e}",
            path.display(),
            params.display()
        ))
    })?;
    let vk = VerifyingKey::<Bls12>::read(BufReader::new(file))
        .map_err(|e| Error::params(format!("{}: malformed verifying key: {e}", path.display())))?;
    if vk != *in_params {
        return Err(Error::params(format!(
            "{} does not match the verifying key inside {}: proofs made with these parameters \
             would not verify on chain (mixed-up or corrupted files; fetch both again)",
            path.display(),
            params.display()
        )));
    }
    Ok(vk)
}

/// Distinguishes checked instances of parameter sets (a file that changed is a new one).
static GENERATION: AtomicU64 = AtomicU64::new(1);

enum Host {
    NotLoaded,
    Loaded {
        params: Arc<Parameters<Bls12>>,
        _reservation: Reservation,
        ms: f64,
    },
    Failed(Error, FileStamp),
}

/// One circuit's parameters. The verifying key (from the `.vk` file, checked against the
/// `.params` file) and sizes are read at once (a few KB); the full parameter set is loaded into
/// host memory only when a host-side prover needs it (the CPU backend, or a CPU retry after a
/// GPU error): GPU backends keep their own device-ready copy.
pub struct Srs {
    pub id: String,
    pub path: PathBuf,
    pub vk: VerifyingKey<Bls12>,
    pub pvk: PreparedVerifyingKey<Bls12>,
    /// Circuit size as the parameters describe it (constraints rounded up to the domain).
    pub size: CircuitSize,
    /// Size of the `.params` file in bytes.
    pub file_len: u64,
    /// Points in the A and B queries (the `a` and `b_g1` sections): inputs plus the aux values
    /// the circuit's A and B densities mark.
    pub queries: Queries,
    /// The `.params` file as it was checked.
    pub stamp: FileStamp,
    /// Unique to this checked instance: backends key their copies by it.
    pub generation: u64,
    /// A random set made by cuzk's generator ([`is_random_set`]): valid for its own `.vk`,
    /// never on chain.
    pub random: bool,
    budget: Arc<Budget>,
    /// The host copy's state: held only for a moment, never across a wait or a read.
    host: Mutex<Host>,
    /// One host load at a time, held across its wait for memory and its read (tens of seconds
    /// at 32 GiB): readers of `host` (status, admission) do not wait for it.
    loading: Mutex<()>,
    /// What its jobs' kind expects of its witnesses ([`Srs::expect_witness_shape`]).
    witness_shape: Mutex<WitnessShape>,
}

impl Srs {
    /// A job of this circuit expects `shape` of its witnesses: the largest expectation holds
    /// (the GPU plans by it when it first places these parameters).
    pub fn expect_witness_shape(&self, shape: WitnessShape) {
        let mut s = self.witness_shape.lock();
        s.others_per_1024 = s.others_per_1024.max(shape.others_per_1024);
        s.recording_bytes_per_row = s.recording_bytes_per_row.max(shape.recording_bytes_per_row);
    }

    /// What the circuit's jobs expect of its witnesses (the default until one says).
    pub fn witness_shape(&self) -> WitnessShape {
        *self.witness_shape.lock()
    }

    /// Fails if the `.params` file is no longer the one that was checked (call before a
    /// native reader maps or reads it).
    pub fn check_unchanged(&self) -> Result<()> {
        match FileStamp::of(&self.path) {
            Ok(s) if s == self.stamp => Ok(()),
            Ok(_) => Err(Error::params(format!(
                "{} changed after it was checked; it will be checked again for the next job",
                self.path.display()
            ))),
            Err(e) => Err(Error::params(format!(
                "{} is gone: {e}",
                self.path.display()
            ))),
        }
    }

    /// The full parameters in host memory, loaded (and charged to the budget) on first use.
    /// Waits for memory ahead of new partitions; `queued()` is the memory held by work that
    /// waits for this load (see [`Budget::acquire_priority`]); `give_up` ends the wait.
    pub fn params_waiting(
        &self,
        queued: impl Fn() -> u64,
        give_up: impl FnMut() -> Option<Error>,
    ) -> Result<Arc<Parameters<Bls12>>> {
        let _one = self.loading.lock();
        match &*self.host.lock() {
            Host::Loaded { params, .. } => return Ok(params.clone()),
            Host::Failed(e, stamp) if FileStamp::of(&self.path).ok().as_ref() == Some(stamp) => {
                return Err(e.clone())
            }
            _ => {}
        }
        let reservation = self.budget.acquire_priority(
            self.file_len,
            &format!("the parameters {} in host memory", self.path.display()),
            queued,
            give_up,
        )?;
        match self.load() {
            Ok((p, ms)) => {
                *self.host.lock() = Host::Loaded {
                    params: p.clone(),
                    // Kept until the engine releases the parameters: resident, so that a
                    // request waiting for memory does not count on it coming back.
                    _reservation: reservation.into_resident(),
                    ms,
                };
                Ok(p)
            }
            Err(e) => {
                if e.status == Status::Params {
                    if let Ok(stamp) = FileStamp::of(&self.path) {
                        *self.host.lock() = Host::Failed(e.clone(), stamp);
                    }
                }
                Err(e)
            }
        }
    }

    /// [`Srs::params_waiting`] for a caller that holds no memory others wait for.
    pub fn params(&self) -> Result<Arc<Parameters<Bls12>>> {
        self.params_waiting(|| 0, || None)
    }

    fn load(&self) -> Result<(Arc<Parameters<Bls12>>, f64)> {
        self.check_unchanged()?;
        let t = Instant::now();
        let file = File::open(&self.path)
            .map_err(|e| Error::params(format!("cannot open {}: {e}", self.path.display())))?;
        let params = Parameters::<Bls12>::read(BufReader::with_capacity(1 << 22, file), false)
            .map_err(|e| {
                Error::params(format!(
                    "cannot read parameters {}: {e}",
                    self.path.display()
                ))
            })?;
        if params.vk != self.vk {
            return Err(Error::params(format!(
                "{} changed while it was read",
                self.path.display()
            )));
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        log::info!(
            "loaded parameters {} into host memory in {:.0} ms",
            self.path.display(),
            ms
        );
        Ok((Arc::new(params), ms))
    }

    /// Whether the full parameters are in host memory.
    pub fn host_resident(&self) -> bool {
        matches!(*self.host.lock(), Host::Loaded { .. })
    }

    /// Milliseconds the full load took, once done.
    pub fn load_ms(&self) -> Option<f64> {
        match &*self.host.lock() {
            Host::Loaded { ms, .. } => Some(*ms),
            _ => None,
        }
    }

    /// Drops the host copy (its memory goes back to the budget once no prover holds it).
    pub fn release_host(&self) {
        // After a load under way (which would otherwise install its copy afterwards).
        let _one = self.loading.lock();
        *self.host.lock() = Host::NotLoaded;
    }

    /// The memory budget parameters are charged to (GPU backends reserve their copies here).
    pub fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }
}

enum Slot {
    Empty,
    Ready(Arc<Srs>),
    Failed {
        error: Error,
        params: Option<FileStamp>,
        vk: Option<FileStamp>,
    },
}

/// Parameter cache keyed by the circuit's parameter id.
pub struct SrsCache {
    dir: PathBuf,
    slots: Mutex<HashMap<String, Arc<Mutex<Slot>>>>,
    checks: AtomicU64,
}

impl SrsCache {
    pub fn new(dir: PathBuf) -> Self {
        SrsCache {
            dir,
            slots: Mutex::new(HashMap::new()),
            checks: AtomicU64::new(0),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many times a parameter file has been checked (a remembered failure is not checked
    /// again until its file changes).
    pub fn checks(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    /// The parameter sets checked and ready, by id.
    pub fn ready(&self) -> Vec<(String, Arc<Srs>)> {
        let slots: Vec<_> = self
            .slots
            .lock()
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect();
        slots
            .into_iter()
            .filter_map(|(k, s)| match &*s.lock() {
                Slot::Ready(srs) => Some((k, srs.clone())),
                _ => None,
            })
            .collect()
    }

    /// Ids of the parameter sets now resident in host memory.
    pub fn resident(&self) -> Vec<String> {
        self.ready()
            .into_iter()
            .filter(|(_, srs)| srs.host_resident())
            .map(|(k, _)| k)
            .collect()
    }

    /// Drops the host copies of every parameter set (their memory goes back to the budget once
    /// no prover holds them); the sets stay checked and ready.
    pub fn release_hosts(&self) {
        let slots: Vec<_> = self.slots.lock().values().cloned().collect();
        for s in slots {
            if let Slot::Ready(srs) = &*s.lock() {
                srs.release_host();
            }
        }
    }

    /// Drops every parameter set (their host copies go back to the budget once no prover
    /// holds them).
    pub fn clear(&self) {
        let slots: Vec<_> = self.slots.lock().drain().map(|(_, s)| s).collect();
        for s in slots {
            if let Slot::Ready(srs) = &*s.lock() {
                srs.release_host();
            }
        }
    }

    /// The parameters for `id`, checked on first use and again whenever the file changed.
    /// Concurrent callers for the same id wait for one check; a failure is remembered until
    /// either file changes.
    pub fn get(&self, id: &str, budget: &Arc<Budget>) -> Result<Arc<Srs>> {
        let slot = self
            .slots
            .lock()
            .entry(id.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(Slot::Empty)))
            .clone();
        let mut slot = slot.lock();
        let path = params_path(&self.dir, id);
        let vk = vk_path(&self.dir, id);
        let now = (FileStamp::of(&path).ok(), FileStamp::of(&vk).ok());
        match &*slot {
            Slot::Ready(srs) if now.0.as_ref() == Some(&srs.stamp) => return Ok(srs.clone()),
            Slot::Ready(_) => log::warn!("{} changed: checking it again", path.display()),
            Slot::Failed { error, params, vk } if (params, vk) == (&now.0, &now.1) => {
                return Err(error.clone())
            }
            _ => {}
        }
        self.checks.fetch_add(1, Ordering::Relaxed);
        match self.load(id, &path, &vk, budget) {
            Ok(srs) => {
                let srs = Arc::new(srs);
                *slot = Slot::Ready(srs.clone());
                Ok(srs)
            }
            Err(e) => {
                log::error!("{e}");
                *slot = Slot::Failed {
                    error: e.clone(),
                    params: now.0,
                    vk: now.1,
                };
                Err(e)
            }
        }
    }

    fn load(&self, id: &str, path: &Path, vk_file: &Path, budget: &Arc<Budget>) -> Result<Srs> {
        let stamp = FileStamp::of(path).map_err(|e| {
            Error::params(format!(
                "No cached parameters found for {id} [failure finding {}]: {e}; run `cuzk setup` or fetch the \
                 production parameters into this directory",
                path.display()
            ))
        })?;
        let layout = check_file(path)?;
        let vk = check_vk(vk_file, path, &layout.vk)?;
        let size = layout.size();
        let pvk = prepare_verifying_key(&vk);
        log::info!(
            "parameters {}: domain {}, {} inputs, {} aux, {} MiB",
            path.display(),
            size.constraints,
            size.inputs,
            size.aux,
            layout.len >> 20
        );
        Ok(Srs {
            id: id.to_string(),
            path: path.to_path_buf(),
            vk,
            pvk,
            size,
            file_len: layout.len,
            queries: layout.queries(),
            stamp,
            generation: GENERATION.fetch_add(1, Ordering::Relaxed),
            random: is_random_set(&layout.vk),
            budget: budget.clone(),
            host: Mutex::new(Host::NotLoaded),
            loading: Mutex::new(()),
            witness_shape: Mutex::new(WitnessShape::default()),
        })
    }
}
