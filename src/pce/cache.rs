//! The engine's recordings, one per circuit: loaded from disk or recorded once (on a thread of
//! their own, while partitions use full synthesis), charged to the memory budget as resident
//! memory, evicted least recently used when another needs the room, and given up for good
//! (file removed, full synthesis for that circuit) when one is caught being wrong.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use parking_lot::{Condvar, Mutex};

use super::{file, Expect, Recording};
use crate::{
    budget::{Budget, Reservation},
    params::FileStamp,
};

/// How long a recording that did not fit the budget waits before it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// What records a circuit (given the flag that asks it to give up).
type Recorder = fn(Arc<AtomicBool>) -> Result<Recording, String>;

/// A recording in memory with the budget it holds (given back when the last user drops it).
pub struct Held {
    pub rec: Recording,
    /// The file it was loaded from or saved to, as it was then: only that file is removed
    /// when the recording is distrusted (not one another process wrote since).
    file: Option<FileStamp>,
    /// Recorded in this process from the circuit (not loaded from a file).
    fresh: bool,
    _reservation: Reservation,
}

impl crate::sys::RecordingTables for Held {
    fn tables(&self) -> [(&[u32], &[u32], &[u16]); 3] {
        crate::sys::RecordingTables::tables(&self.rec)
    }
}

impl Held {
    /// The recording as a prover reads it, with this value as its tables' owner.
    pub fn r1cs(self: &Arc<Self>) -> crate::prover::SparseR1cs<'_> {
        let mut r = self.rec.r1cs();
        r.tables = Some(self.clone());
        r
    }
}

/// What reading a circuit's recording file gave.
enum FromFile {
    /// The recording, the budget's room for the read, and the file's stamp.
    Loaded(Recording, Reservation, Option<FileStamp>),
    /// No file that can be used, and why.
    Unusable(file::LoadError),
    /// No room in the budget to read it now (the slot says so).
    NoRoom,
}

/// Memory a recording needs: its own (an estimate while it is recorded) and one partition's
/// working memory that must still fit beside everything resident.
#[derive(Clone, Copy, Debug)]
pub struct Room {
    pub recording: u64,
    pub partition: u64,
}

/// Where a circuit's recording stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PceState {
    /// Not asked for yet, or to be tried again.
    Absent,
    /// Being loaded or recorded.
    Working,
    Ready,
    /// Not used for this circuit while the engine runs, with the reason.
    Failed(String),
}

enum Slot {
    Working,
    Ready {
        held: Arc<Held>,
        last_use: Instant,
    },
    /// Did not fit the budget, or its load or recording panicked; tried again after
    /// [`RETRY_AFTER`].
    NotNow(Instant),
    Failed(String),
}

#[derive(Default)]
struct Counters {
    loaded: AtomicU64,
    recorded: AtomicU64,
    rejected_files: AtomicU64,
    distrusted: AtomicU64,
    file_reads: AtomicU64,
    circuit_faults: AtomicU64,
}

pub struct PceCache {
    dir: PathBuf,
    budget: Arc<Budget>,
    slots: Mutex<HashMap<String, Slot>>,
    /// Per circuit: the file of the last recording given up for a wrong assignment (a load of
    /// it under way at that moment is refused), and whether a recording made in this process
    /// was given up (a second one is the circuit's fault).
    given_up: Mutex<HashMap<String, Option<FileStamp>>>,
    fresh_given_up: Mutex<std::collections::HashSet<String>>,
    /// Signalled whenever a slot changes (partitions waiting for a recording: [`Self::wait`]).
    changed: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    abort: Arc<AtomicBool>,
    counters: Counters,
}

/// What the engine's status shows of the cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PceStats {
    /// Recordings being loaded or made now (their working memory is reserved meanwhile).
    pub working: usize,
    pub resident: usize,
    pub resident_bytes: u64,
    pub loaded: u64,
    pub recorded: u64,
    pub rejected_files: u64,
    pub distrusted: u64,
    /// Recording files read (each read first reserves the file's size in the budget).
    pub file_reads: u64,
    /// Circuits whose recording made in this process gave a wrong assignment a second time:
    /// a fault of the circuit (or of every prover), shown to the operator; full synthesis for
    /// them until restart.
    pub circuit_faults: u64,
}

impl PceCache {
    /// A cache of the recordings kept in `dir`; temporary files that a crashed process left
    /// there are removed.
    pub fn new(dir: PathBuf, budget: Arc<Budget>) -> Arc<Self> {
        file::remove_stale_temporaries(&dir);
        Arc::new(PceCache {
            dir,
            budget,
            slots: Mutex::new(HashMap::new()),
            given_up: Mutex::new(HashMap::new()),
            fresh_given_up: Mutex::new(std::collections::HashSet::new()),
            changed: Condvar::new(),
            threads: Mutex::new(Vec::new()),
            abort: Arc::new(AtomicBool::new(false)),
            counters: Counters::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The recording of `id` where it is ready (and marks it used).
    pub fn get(&self, id: &str) -> Option<Arc<Held>> {
        match self.slots.lock().get_mut(id) {
            Some(Slot::Ready { held, last_use }) => {
                *last_use = Instant::now();
                Some(held.clone())
            }
            _ => None,
        }
    }

    pub fn state(&self, id: &str) -> PceState {
        match self.slots.lock().get(id) {
            None | Some(Slot::NotNow(_)) => PceState::Absent,
            Some(Slot::Working) => PceState::Working,
            Some(Slot::Ready { .. }) => PceState::Ready,
            Some(Slot::Failed(e)) => PceState::Failed(e.clone()),
        }
    }

    /// The file circuit `id`'s recording is saved in (it may not exist).
    pub fn file_of(&self, id: &str) -> PathBuf {
        file::path(&self.dir, id)
    }

    /// Waits while circuit `id`'s recording is being loaded or recorded, until `deadline` or
    /// until `give_up` says so (checked every 100 ms); returns the state it is left in
    /// (`Working` only past the deadline or on giving up).
    pub fn wait(&self, id: &str, deadline: Instant, give_up: impl Fn() -> bool) -> PceState {
        let mut slots = self.slots.lock();
        loop {
            let working = matches!(slots.get(id), Some(Slot::Working));
            let now = Instant::now();
            if !working || now >= deadline || give_up() {
                drop(slots);
                return self.state(id);
            }
            let step = (deadline - now).min(Duration::from_millis(100));
            self.changed.wait_for(&mut slots, step);
        }
    }

    pub fn stats(&self) -> PceStats {
        let slots = self.slots.lock();
        let ready: Vec<u64> = slots
            .values()
            .filter_map(|s| match s {
                Slot::Ready { held, .. } => Some(held.rec.bytes()),
                _ => None,
            })
            .collect();
        PceStats {
            working: slots
                .values()
                .filter(|s| matches!(s, Slot::Working))
                .count(),
            resident: ready.len(),
            resident_bytes: ready.iter().sum(),
            loaded: self.counters.loaded.load(Ordering::Relaxed),
            recorded: self.counters.recorded.load(Ordering::Relaxed),
            rejected_files: self.counters.rejected_files.load(Ordering::Relaxed),
            distrusted: self.counters.distrusted.load(Ordering::Relaxed),
            file_reads: self.counters.file_reads.load(Ordering::Relaxed),
            circuit_faults: self.counters.circuit_faults.load(Ordering::Relaxed),
        }
    }

    /// Claims `id` for loading or recording; false where it is ready, under way, failed, or
    /// waiting to be tried again.
    fn claim(&self, id: &str) -> bool {
        if self.abort.load(Ordering::SeqCst) {
            return false;
        }
        let mut slots = self.slots.lock();
        match slots.get(id) {
            None => {}
            Some(Slot::NotNow(t)) if t.elapsed() >= RETRY_AFTER => {}
            Some(_) => return false,
        }
        slots.insert(id.to_string(), Slot::Working);
        true
    }

    /// Starts loading (or else recording) `id` on a thread of its own unless that is done or
    /// under way. `expect` is what the parameters say the recording must be; `estimate` the bytes a
    /// recording is expected to take; `record` records it, giving up once its flag turns true.
    pub fn start(
        self: &Arc<Self>,
        id: &str,
        expect: Expect,
        room: Room,
        record: impl FnOnce(Arc<AtomicBool>) -> Result<Recording, String> + Send + 'static,
    ) {
        if self.claim(id) && !self.spawn_fill(id, "cuzk-pce", expect, room, Some(record)) {
            // Not left `Working`: tried again later.
            self.set(id, Slot::NotNow(Instant::now()));
        }
    }

    /// Runs [`Self::fill_caught`] for `id` (claimed by the caller) on a thread of its own,
    /// joined at shutdown; false where no thread could be started.
    fn spawn_fill(
        self: &Arc<Self>,
        id: &str,
        name: &str,
        expect: Expect,
        room: Room,
        record: Option<impl FnOnce(Arc<AtomicBool>) -> Result<Recording, String> + Send + 'static>,
    ) -> bool {
        let (me, owned) = (self.clone(), id.to_string());
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || me.fill_caught(&owned, expect, room, record));
        match spawned {
            Ok(h) => {
                let mut threads = self.threads.lock();
                threads.retain(|t| !t.is_finished());
                threads.push(h);
                true
            }
            Err(e) => {
                log::warn!("cannot start a thread to load or record circuit {id}: {e}");
                false
            }
        }
    }

    /// Loads or records `id` on this thread (preload) and returns it, or why it is not used.
    pub fn load_or_record(
        &self,
        id: &str,
        expect: Expect,
        room: Room,
        record: impl FnOnce(Arc<AtomicBool>) -> Result<Recording, String>,
    ) -> Result<Arc<Held>, PceState> {
        if let Some(h) = self.get(id) {
            return Ok(h);
        }
        if self.claim(id) {
            self.fill_caught(id, expect, room, Some(record));
        } else {
            // Another thread is at it: wait for it (as long as it takes).
            while self.wait(id, Instant::now() + Duration::from_secs(3600), || false)
                == PceState::Working
            {}
        }
        self.get(id).ok_or_else(|| self.state(id))
    }

    /// Starts loading `id`'s recording from its file on a thread of its own, where the file
    /// exists and nothing is loaded or under way (engine start: the recordings of the parameter
    /// sets present load while the first job reads its parameters). A file that cannot be used
    /// is left to the first job of the circuit, which records the circuit again.
    pub fn preload_file(self: &Arc<Self>, id: &str, expect: Expect, room: Room) -> bool {
        if !file::path(&self.dir, id).is_file() || !self.claim(id) {
            return false;
        }
        let started = self.spawn_fill(id, "cuzk-pce-load", expect, room, None::<Recorder>);
        if !started {
            self.clear(id);
        }
        started
    }

    /// [`Self::fill`], where a panic (the circuit's own code, a bug) leaves the circuit to be
    /// tried again after [`RETRY_AFTER`], not `Working` for ever (never recorded again, and a
    /// preload waiting on it spinning).
    fn fill_caught(
        &self,
        id: &str,
        expect: Expect,
        room: Room,
        record: Option<impl FnOnce(Arc<AtomicBool>) -> Result<Recording, String>>,
    ) {
        let filled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.fill(id, expect, room, record)
        }));
        if filled.is_err() {
            log::error!(
                "loading or recording circuit {id} panicked: full synthesis meanwhile, tried \
                 again in {RETRY_AFTER:?}"
            );
            self.set(id, Slot::NotNow(Instant::now()));
        }
    }

    fn set(&self, id: &str, slot: Slot) {
        self.slots.lock().insert(id.to_string(), slot);
        self.changed.notify_all();
    }

    /// Forgets `id`'s slot (Absent again: a later job loads or records it).
    fn clear(&self, id: &str) {
        self.slots.lock().remove(id);
        self.changed.notify_all();
    }

    /// Loads `id`'s recording from its file, else (where `record` is given) records it; with
    /// no `record`, a missing or unusable file leaves the circuit absent. Four steps: read the
    /// file, else record anew (and save), then reserve it for good and make it `Ready`.
    fn fill(
        &self,
        id: &str,
        expect: Expect,
        room: Room,
        record: Option<impl FnOnce(Arc<AtomicBool>) -> Result<Recording, String>>,
    ) {
        let path = file::path(&self.dir, id);
        let t = Instant::now();
        let (rec, transient, stamp, from_disk) =
            match self.read_file(id, &path, expect, room.partition) {
                FromFile::Loaded(rec, read_room, stamp) => (rec, read_room, stamp, true),
                FromFile::NoRoom => return,
                FromFile::Unusable(why) => {
                    let Some(record) = record else {
                        self.leave_to_first_job(id, &path, &why);
                        return;
                    };
                    let save = self.note_unusable(&why);
                    let Some((rec, room)) = self.record_anew(id, expect, room, record) else {
                        return;
                    };
                    // Saved before it asks for its room: one that does not fit now is loaded
                    // from the file next time instead of recorded again.
                    let stamp = if save { Self::save(&rec, &path) } else { None };
                    (rec, room, stamp, false)
                }
            };
        // The read's (or the recorder's) room is given back just before the resident
        // reservation is made.
        drop(transient);
        self.install(id, rec, stamp, from_disk, t, room.partition);
    }

    /// Reads `id`'s file into room the budget has for it (its size: the tables it holds). A
    /// file of another circuit, or whose densities disagree with the parameters (a bit changed
    /// before its checksum was made, or changed with its counts kept), is refused; so is the
    /// file a distrust gave up while this read it.
    fn read_file(&self, id: &str, path: &Path, expect: Expect, headroom: u64) -> FromFile {
        // Taken before the read: a file replaced meanwhile differs from it, and is kept.
        let stamp = FileStamp::of(path).ok();
        let len = match std::fs::metadata(path) {
            Ok(m) => m.len(),
            Err(_) => return FromFile::Unusable(file::LoadError::Missing),
        };
        let Some(read_room) = self.make_room(len, headroom) else {
            log::info!(
                "no room in the memory budget to load the recording of circuit {id} now \
                 ({} MiB): full synthesis meanwhile",
                len >> 20
            );
            self.set(id, Slot::NotNow(Instant::now()));
            return FromFile::NoRoom;
        };
        self.counters.file_reads.fetch_add(1, Ordering::Relaxed);
        let rec = match file::load(path, id, Some((expect.inputs, expect.aux))) {
            Ok(rec) => rec,
            Err(why) => return FromFile::Unusable(why),
        };
        let given_up = stamp.is_some() && self.given_up.lock().get(id) == Some(&stamp);
        match expect.mismatch(&rec).or_else(|| rec.density_mismatch()) {
            None if !given_up => FromFile::Loaded(rec, read_room, stamp),
            None => FromFile::Unusable(file::LoadError::Bad(format!(
                "{}: the file a wrong assignment gave up",
                path.display()
            ))),
            Some(m) => FromFile::Unusable(file::LoadError::Bad(format!(
                "{}: not the recording of these parameters' circuit: {m}",
                path.display()
            ))),
        }
    }

    /// With nothing to record it (a preload), a file that cannot be used is left to the first
    /// job of the circuit, which records it again.
    fn leave_to_first_job(&self, id: &str, path: &Path, why: &file::LoadError) {
        match why {
            file::LoadError::Missing => {}
            file::LoadError::Bad(e) | file::LoadError::Unreadable(e) => log::info!(
                "the recording {} is not used at start ({e}): the first job of circuit {id} \
                 records it again",
                path.display(),
            ),
        }
        self.clear(id);
    }

    /// Counts and logs why the file is not used; false where the new recording must not be
    /// saved over it (another user's file: recorded here, and theirs left as it is).
    fn note_unusable(&self, why: &file::LoadError) -> bool {
        match why {
            file::LoadError::Bad(e) => {
                self.counters.rejected_files.fetch_add(1, Ordering::Relaxed);
                log::warn!("recording not used, recording it again: {e}");
                true
            }
            file::LoadError::Unreadable(e) => {
                log::warn!("cannot read the recording ({e}): recording it for this process only");
                false
            }
            file::LoadError::Missing => true,
        }
    }

    /// Records the circuit in room for its tables while they are recorded (kept while it is
    /// saved). None where there is no room now, or the recording failed or disagrees with the
    /// parameters: the slot then says so.
    fn record_anew(
        &self,
        id: &str,
        expect: Expect,
        room: Room,
        record: impl FnOnce(Arc<AtomicBool>) -> Result<Recording, String>,
    ) -> Option<(Recording, Reservation)> {
        let Some(reservation) = self.make_room(room.recording, room.partition) else {
            log::info!(
                "no room in the memory budget to record circuit {id} now ({} MiB): full \
                 synthesis meanwhile",
                room.recording >> 20
            );
            self.set(id, Slot::NotNow(Instant::now()));
            return None;
        };
        let failed = match record(self.abort.clone()) {
            Ok(rec) => match expect.mismatch(&rec) {
                None => return Some((rec, reservation)),
                Some(m) => {
                    let e = format!("circuit {id} recorded {m}");
                    log::error!("{e}");
                    e
                }
            },
            // Stopped by a shutdown: not an error of the circuit.
            Err(e) if self.abort.load(Ordering::Relaxed) => e,
            Err(e) => {
                log::error!("cannot record circuit {id}: {e}");
                e
            }
        };
        self.set(id, Slot::Failed(failed));
        None
    }

    /// Saves a fresh recording beside the parameters; its stamp, or None where it could not
    /// be saved (recorded again after a restart).
    fn save(rec: &Recording, path: &Path) -> Option<FileStamp> {
        match file::save(rec, path) {
            Ok(()) => FileStamp::of(path).ok(),
            Err(e) => {
                log::warn!(
                    "cannot save the recording to {}: {e} (recorded again after a restart)",
                    path.display()
                );
                None
            }
        }
    }

    /// Reserves the recording for good and makes it `Ready`; where it does not fit the budget
    /// now, full synthesis meanwhile. Nothing stays reserved after a shutdown.
    fn install(
        &self,
        id: &str,
        rec: Recording,
        stamp: Option<FileStamp>,
        from_disk: bool,
        started: Instant,
        headroom: u64,
    ) {
        let bytes = rec.bytes();
        let Some(reservation) = self.make_room_resident(bytes, headroom) else {
            log::info!(
                "recording of circuit {id} ({} MiB) does not fit the memory budget now: full \
                 synthesis meanwhile",
                bytes >> 20
            );
            self.set(id, Slot::NotNow(Instant::now()));
            return;
        };
        let secs = started.elapsed().as_secs_f64();
        if from_disk {
            self.counters.loaded.fetch_add(1, Ordering::Relaxed);
            log::info!(
                "recording of circuit {id} loaded from {} in {secs:.1} s ({} constraints, {} MiB)",
                file::path(&self.dir, id).display(),
                rec.constraints(),
                bytes >> 20
            );
        } else {
            self.counters.recorded.fetch_add(1, Ordering::Relaxed);
            log::info!(
                "circuit {id} recorded in {secs:.1} s ({} constraints, {} terms, {:.1} bytes per \
                 constraint)",
                rec.constraints(),
                rec.terms(),
                bytes as f64 / rec.constraints().max(1) as f64
            );
        }
        let mut slots = self.slots.lock();
        self.changed.notify_all();
        if self.abort.load(Ordering::SeqCst) {
            slots.remove(id);
            return;
        }
        slots.insert(
            id.to_string(),
            Slot::Ready {
                held: Arc::new(Held {
                    rec,
                    file: stamp,
                    fresh: !from_disk,
                    _reservation: reservation,
                }),
                last_use: Instant::now(),
            },
        );
    }

    /// Evicts least recently used recordings until `bytes` fit, then reserves them. Memory
    /// resident for good (parameters, recordings) must leave room for `headroom` (one
    /// partition) beside it, or no partition could ever be synthesized.
    fn make_room_with(&self, bytes: u64, headroom: u64, resident: bool) -> Option<Reservation> {
        loop {
            let fits_beside = self.budget.resident() + bytes + headroom <= self.budget.total();
            let r = if !fits_beside {
                None
            } else if resident {
                self.budget.try_acquire_resident(bytes)
            } else {
                self.budget.try_acquire(bytes)
            };
            if r.is_some() {
                return r;
            }
            let mut slots = self.slots.lock();
            let victim = slots
                .iter()
                .filter_map(|(k, s)| match s {
                    Slot::Ready { last_use, .. } => Some((*last_use, k.clone())),
                    _ => None,
                })
                .min()
                .map(|(_, k)| k)?;
            log::info!("evicting the recording of circuit {victim} to make room");
            slots.remove(&victim);
        }
    }

    fn make_room(&self, bytes: u64, headroom: u64) -> Option<Reservation> {
        self.make_room_with(bytes, headroom, false)
    }

    fn make_room_resident(&self, bytes: u64, headroom: u64) -> Option<Reservation> {
        self.make_room_with(bytes, headroom, true)
    }

    /// A recording was caught giving a wrong assignment: it is dropped and its file removed
    /// (only the file it came from), and the circuit is recorded again from its code when next
    /// needed (one GPU glitch, or a damaged or crafted file, must not leave a lean card without
    /// recordings until restart). Where the recording given up was made in this process and
    /// one made here was given up before, the circuit itself is at fault: an error for the
    /// operator (`circuit_faults`), and full synthesis for the circuit until restart. A load of
    /// the same file under way is refused when it ends.
    pub fn distrust(&self, id: &str, why: &str) {
        self.counters.distrusted.fetch_add(1, Ordering::Relaxed);
        let path = file::path(&self.dir, id);
        let mut slots = self.slots.lock();
        let (stamp, fresh) = match slots.get(id) {
            Some(Slot::Ready { held, .. }) => (held.file.clone(), held.fresh),
            _ => (FileStamp::of(&path).ok(), false),
        };
        self.given_up.lock().insert(id.to_string(), stamp.clone());
        // Only the file this recording came from: one another process wrote since is its own.
        let ours = stamp.is_some() && FileStamp::of(&path).ok() == stamp;
        let removed = ours && std::fs::remove_file(&path).is_ok();
        let file = format!(
            "{} {}",
            if removed {
                "removed"
            } else {
                "left (not the file it came from)"
            },
            path.display()
        );
        let twice = fresh && !self.fresh_given_up.lock().insert(id.to_string());
        if twice {
            self.counters.circuit_faults.fetch_add(1, Ordering::Relaxed);
            log::error!(
                "FAULT: circuit {id}: a recording made from the circuit in this process gave a \
                 wrong assignment, for the second time ({why}); {file}. The circuit's code or \
                 every prover is at fault: full synthesis for this circuit until restart"
            );
            slots.insert(
                id.to_string(),
                Slot::Failed(format!("distrusted twice: {why}")),
            );
        } else {
            log::error!(
                "recording of circuit {id} gave a wrong assignment ({why}): {file}; it is \
                 recorded again from the circuit"
            );
            slots.remove(id);
        }
        drop(slots);
        self.changed.notify_all();
    }

    /// Stops recordings under way, waits for their threads and drops every recording (engine
    /// shutdown).
    pub fn shutdown(&self) {
        self.abort.store(true, Ordering::SeqCst);
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
        self.slots.lock().clear();
    }
}
