//! A recording on disk, next to the circuit's parameters: `<parameter file stem>.cuzk-pce`.
//!
//! Layout (little-endian): magic `CUZKPCE\0`, format version (u32), 0 (u32), id length (u32)
//! and id, inputs, aux, constraints, dictionary length and the term count of A, B and C
//! (u64 each); the dictionary (32 bytes per coefficient, canonical); for A, B and C the row
//! starts (u32), columns (u32) and coefficient codes (u16); the densities of A's aux, B's
//! inputs and B's aux (u64 words, bit `i` of word `i / 64`); a BLAKE2b-256 of everything before
//! it. The length the header implies is checked before anything else is read, the checksum and
//! every table's consistency before the recording is used. Written to a temporary file in the
//! same directory, synced, then renamed: a reader sees the old file or the new one, never half.

use std::{
    fs::File,
    io::{BufReader, BufWriter, Read, Write},
    path::{Path, PathBuf},
};

use bellperson::multiexp::DensityTracker;
use blstrs::Scalar as Fr;

use super::{Matrix, Recording, MAX_DICT};

const MAGIC: &[u8; 8] = b"CUZKPCE\0";
/// Bumped whenever the layout or the meaning of a field changes.
pub(crate) const FORMAT_VERSION: u32 = 1;
const BLOCK: usize = 1 << 20;

/// Where the recording of circuit `params_id` lives in `dir`. The name carries the format
/// version: builds of cuzk that read different formats and share a directory keep a file each,
/// instead of each rejecting and overwriting the other's at every start.
pub fn path(dir: &Path, params_id: &str) -> PathBuf {
    let stem = storage_proofs_core::parameter_cache::parameter_id(params_id);
    let stem = stem.strip_suffix(".params").unwrap_or(&stem).to_string();
    dir.join(format!("{stem}.f{FORMAT_VERSION}.cuzk-pce"))
}

/// The circuits whose recordings `dir` holds (files named as [`path`] names them, in this
/// format version), sorted.
pub fn ids_in(dir: &Path) -> Vec<String> {
    let prefix = format!("v{}-", storage_proofs_core::parameter_cache::VERSION);
    let suffix = format!(".f{FORMAT_VERSION}{SUFFIX}");
    let mut ids: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id = name
                .strip_prefix(&prefix)?
                .strip_suffix(&suffix)?
                .to_string();
            (path(dir, &id) == e.path()).then_some(id)
        })
        .collect();
    ids.sort();
    ids
}

/// Ends the names of recording files ([`path`]).
const SUFFIX: &str = ".cuzk-pce";
/// Ends the names of the temporary files [`save`] writes: `.<file name>.<pid>.<random>.tmp`.
const TMP_SUFFIX: &str = ".tmp";

/// The process that wrote temporary file `name`, where `name` is one [`save`] makes.
fn tmp_writer(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?.strip_suffix(TMP_SUFFIX)?;
    let (rest, _random) = rest.rsplit_once('.')?;
    let (file, pid) = rest.rsplit_once('.')?;
    file.ends_with(SUFFIX).then_some(())?;
    pid.parse().ok()
}

/// How long a temporary file goes unwritten before it may be taken for a crash's leftover
/// (a save writes continuously: ~6 GB at 32 GiB in well under a minute).
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Removes the temporary files in `dir` that a [`save`] left when its process ended before it
/// finished (a crash; up to ~6 GB each at 32 GiB). A file is taken for stale only where all
/// say so: its writer's PID is not running here, it was last written [`STALE_AFTER`] ago or
/// more, and no one holds its lock (a writer holds it for the whole save). A PID alone is not
/// enough: a writer in another PID namespace, or on another host sharing the directory, has a
/// PID this process cannot see. Returns how many it removed.
pub fn remove_stale_temporaries(dir: &Path) -> usize {
    let age = STALE_AFTER;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(tmp_writer) else {
            continue;
        };
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|a| a >= age);
        // Opened (never created) for the lock only; closing it lets the lock go.
        let unlocked =
            || std::fs::File::open(e.path()).is_ok_and(|f| crate::sys::os::try_lock_exclusive(&f));
        if pid != std::process::id()
            && !crate::sys::os::process_may_run(pid)
            && old
            && unlocked()
            && std::fs::remove_file(e.path()).is_ok()
        {
            log::info!(
                "removed {}: a recording left unfinished by process {pid}",
                e.path().display()
            );
            removed += 1;
        }
    }
    removed
}

struct Hashing<W> {
    inner: W,
    state: blake2b_simd::State,
}

impl<W> Hashing<W> {
    fn new(inner: W) -> Self {
        Hashing {
            inner,
            state: blake2b_simd::Params::new().hash_length(32).to_state(),
        }
    }
    fn digest(&self) -> [u8; 32] {
        let mut d = [0u8; 32];
        d.copy_from_slice(self.state.finalize().as_bytes());
        d
    }
}

impl<W: Write> Hashing<W> {
    fn put(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.state.update(b);
        self.inner.write_all(b)
    }
    fn u32s(&mut self, v: &[u32]) -> std::io::Result<()> {
        for chunk in v.chunks(BLOCK / 4) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
            self.put(&bytes)?;
        }
        Ok(())
    }
    fn u16s(&mut self, v: &[u16]) -> std::io::Result<()> {
        for chunk in v.chunks(BLOCK / 2) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
            self.put(&bytes)?;
        }
        Ok(())
    }
    fn u64s(&mut self, v: &[u64]) -> std::io::Result<()> {
        for chunk in v.chunks(BLOCK / 8) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
            self.put(&bytes)?;
        }
        Ok(())
    }
}

impl<R: Read> Hashing<R> {
    fn take(&mut self, b: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_exact(b)?;
        self.state.update(b);
        Ok(())
    }
    fn u64(&mut self) -> std::io::Result<u64> {
        let mut b = [0u8; 8];
        self.take(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn u32(&mut self) -> std::io::Result<u32> {
        let mut b = [0u8; 4];
        self.take(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn vec<T, const N: usize>(
        &mut self,
        n: usize,
        from: impl Fn([u8; N]) -> T,
    ) -> std::io::Result<Vec<T>> {
        let mut out = Vec::with_capacity(n);
        let mut buf = vec![0u8; BLOCK];
        let mut left = n;
        while left > 0 {
            let k = left.min(BLOCK / N);
            let b = &mut buf[..k * N];
            self.take(b)?;
            out.extend(
                b.chunks_exact(N)
                    .map(|c| from(c.try_into().expect("chunk of N bytes"))),
            );
            left -= k;
        }
        Ok(out)
    }
}

fn density_words(d: &DensityTracker) -> Vec<u64> {
    let mut words = vec![0u64; d.bv.len().div_ceil(64)];
    for i in d.bv.iter_ones() {
        words[i / 64] |= 1 << (i % 64);
    }
    words
}

fn density_from(words: &[u64], n: usize) -> DensityTracker {
    let mut d = DensityTracker::new();
    for i in 0..n {
        d.add_element();
        if words[i / 64] >> (i % 64) & 1 == 1 {
            d.inc(i);
        }
    }
    d
}

/// Bytes the file of a recording with these counts has.
fn file_len(id_len: u64, n: [u64; 7]) -> Option<u64> {
    let [inputs, aux, rows, dict, ta, tb, tc] = n;
    let words = |bits: u64| bits.div_ceil(64).checked_mul(8);
    let row_starts = rows.checked_add(1)?;
    let mut len = 8 + 4 + 4 + 4 + id_len + 7 * 8;
    len = len.checked_add(dict.checked_mul(32)?)?;
    for t in [ta, tb, tc] {
        len = len.checked_add(row_starts.checked_mul(4)?)?;
        len = len.checked_add(t.checked_mul(6)?)?;
    }
    len = len.checked_add(words(aux)?)?;
    len = len.checked_add(words(inputs)?)?;
    len = len.checked_add(words(aux)?)?;
    len.checked_add(32)
}

/// Writes `rec` to `dest` atomically.
pub fn save(rec: &Recording, dest: &Path) -> std::io::Result<()> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Named after its writer, so that one left by a crash is found and removed
    // ([`remove_stale_temporaries`]).
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}.{}.", std::process::id()))
        .suffix(TMP_SUFFIX)
        .tempfile_in(dir)?;
    // Locked while it is written: no other process's sweep takes it for a crash's leftover.
    if !crate::sys::os::try_lock_exclusive(tmp.as_file()) {
        return Err(std::io::Error::other("cannot lock the temporary file"));
    }
    // Readable by the other users of a shared parameter directory (a temporary file is
    // created 0600): their engines load it instead of recording it again.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    let mut w = Hashing::new(BufWriter::with_capacity(BLOCK, tmp.as_file().try_clone()?));
    w.put(MAGIC)?;
    w.put(&FORMAT_VERSION.to_le_bytes())?;
    w.put(&0u32.to_le_bytes())?;
    w.put(&(rec.id.len() as u32).to_le_bytes())?;
    w.put(rec.id.as_bytes())?;
    for v in [
        rec.inputs,
        rec.aux,
        rec.constraints(),
        rec.dict.len(),
        rec.a.terms(),
        rec.b.terms(),
        rec.c.terms(),
    ] {
        w.put(&(v as u64).to_le_bytes())?;
    }
    for k in &rec.dict {
        w.put(&k.to_bytes_le())?;
    }
    for m in [&rec.a, &rec.b, &rec.c] {
        w.u32s(&m.row_start)?;
        w.u32s(&m.cols)?;
        w.u16s(&m.coeffs)?;
    }
    for d in [&rec.a_aux_density, &rec.b_input_density, &rec.b_aux_density] {
        w.u64s(&density_words(d))?;
    }
    let digest = w.digest();
    w.inner.write_all(&digest)?;
    w.inner.flush()?;
    drop(w);
    tmp.as_file().sync_all()?;
    tmp.persist(dest).map_err(|e| e.error)?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Why a file could not be used.
#[derive(Debug, PartialEq, Eq)]
pub enum LoadError {
    Missing,
    /// There, and this process may not read it (another user's, say): it is not overwritten.
    Unreadable(String),
    /// Unreadable, truncated, corrupted or of another circuit, with the reason.
    Bad(String),
}

/// A recording file's sizes, from its header: inputs, aux values, rows, dictionary entries,
/// and each matrix's terms.
struct Header {
    inputs: usize,
    aux: usize,
    rows: usize,
    dict: usize,
    terms: [u64; 3],
}

/// Reads the recording of circuit `id` from `src`; `expect` (inputs, aux), where known from
/// the parameters, must match.
pub fn load(src: &Path, id: &str, expect: Option<(usize, usize)>) -> Result<Recording, LoadError> {
    let bad = |m: String| LoadError::Bad(format!("{}: {m}", src.display()));
    let file = match File::open(src) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadError::Missing),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(LoadError::Unreadable(format!("{}: {e}", src.display())))
        }
        Err(e) => return Err(bad(format!("cannot open: {e}"))),
    };
    let actual_len = file
        .metadata()
        .map_err(|e| bad(format!("cannot stat: {e}")))?
        .len();
    let mut r = Hashing::new(BufReader::with_capacity(BLOCK, file));
    let io = |e: std::io::Error| bad(format!("truncated or unreadable ({e})"));
    let h = read_header(&mut r, id, actual_len, expect)
        .map_err(io)?
        .map_err(bad)?;
    let rec = read_body(&mut r, id, &h).map_err(io)?.map_err(bad)?;
    rec.check().map_err(bad)?;
    Ok(rec)
}

/// The header of a recording of circuit `id` in a file of `actual_len` bytes: its magic,
/// format version, circuit id and sizes checked (the sizes against the file's length and
/// `expect`, the parameters' inputs and aux values). The inner error says why it is bad.
fn read_header<R: Read>(
    r: &mut Hashing<R>,
    id: &str,
    actual_len: u64,
    expect: Option<(usize, usize)>,
) -> std::io::Result<Result<Header, String>> {
    let mut magic = [0u8; 8];
    r.take(&mut magic)?;
    if &magic != MAGIC {
        return Ok(Err("not a cuzk recording (bad magic)".into()));
    }
    let version = r.u32()?;
    if version != FORMAT_VERSION {
        return Ok(Err(format!(
            "format version {version}, this build reads {FORMAT_VERSION}"
        )));
    }
    r.u32()?;
    let id_len = r.u32()? as usize;
    if id_len > 4096 {
        return Ok(Err("bad circuit id length".into()));
    }
    let mut id_bytes = vec![0u8; id_len];
    r.take(&mut id_bytes)?;
    if id_bytes != id.as_bytes() {
        return Ok(Err(format!(
            "recorded for circuit {}, not {id}",
            String::from_utf8_lossy(&id_bytes)
        )));
    }
    let mut n = [0u64; 7];
    for v in n.iter_mut() {
        *v = r.u64()?;
    }
    let [inputs, aux, rows, dict, ta, tb, tc] = n;
    if file_len(id_len as u64, n) != Some(actual_len) {
        return Ok(Err(format!(
            "{actual_len} bytes, its header implies {} (truncated or corrupted)",
            file_len(id_len as u64, n).map_or("an impossible size".into(), |l| l.to_string())
        )));
    }
    let fits = |v: u64| usize::try_from(v).ok();
    // (`file_len` above has checked that rows + 1 does not overflow.)
    let (Some(inputs), Some(aux), Some(rows), Some(dict)) =
        (fits(inputs), fits(aux), fits(rows), fits(dict))
    else {
        return Ok(Err("sizes do not fit this machine".into()));
    };
    if !(2..=MAX_DICT).contains(&dict) {
        return Ok(Err("bad dictionary length".into()));
    }
    if let Some((ei, ea)) = expect {
        if (ei, ea) != (inputs, aux) {
            return Ok(Err(format!(
                "{inputs} inputs and {aux} aux, the parameters say {ei} and {ea}"
            )));
        }
    }
    Ok(Ok(Header {
        inputs,
        aux,
        rows,
        dict,
        terms: [ta, tb, tc],
    }))
}

/// The recording after its header `h`: the dictionary, the three matrices and the densities,
/// then the checksum of everything read. The inner error says why it is bad.
fn read_body<R: Read>(
    r: &mut Hashing<R>,
    id: &str,
    h: &Header,
) -> std::io::Result<Result<Recording, String>> {
    let mut dict_v = Vec::with_capacity(h.dict);
    for _ in 0..h.dict {
        let mut b = [0u8; 32];
        r.take(&mut b)?;
        match Option::<Fr>::from(Fr::from_bytes_le(&b)) {
            Some(k) => dict_v.push(k),
            None => return Ok(Err("a coefficient is not a field element".into())),
        }
    }
    let mut mats = Vec::new();
    for t in h.terms {
        let t = t as usize;
        let row_start = r.vec(h.rows + 1, u32::from_le_bytes)?;
        let cols = r.vec(t, u32::from_le_bytes)?;
        let coeffs = r.vec(t, u16::from_le_bytes)?;
        mats.push(Matrix {
            row_start,
            cols,
            coeffs,
        });
    }
    let da = r.vec(h.aux.div_ceil(64), u64::from_le_bytes)?;
    let dbi = r.vec(h.inputs.div_ceil(64), u64::from_le_bytes)?;
    let dba = r.vec(h.aux.div_ceil(64), u64::from_le_bytes)?;
    let digest = r.digest();
    let mut stored = [0u8; 32];
    r.inner.read_exact(&mut stored)?;
    if digest != stored {
        return Ok(Err("checksum mismatch (corrupted)".into()));
    }
    let c = mats.pop().expect("three matrices");
    let b = mats.pop().expect("three matrices");
    let a = mats.pop().expect("three matrices");
    Ok(Ok(Recording {
        id: id.to_string(),
        inputs: h.inputs,
        aux: h.aux,
        dict: dict_v,
        a,
        b,
        c,
        a_aux_density: density_from(&da, h.aux),
        b_input_density: density_from(&dbi, h.inputs),
        b_aux_density: density_from(&dba, h.aux),
        instance: super::new_instance(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pce::{tests::Toy, RecordingCS};

    /// Recording files are readable by all (0644), named by format version, and a stale
    /// temporary of a crashed `save` is removed. The hazards: a crash during `save` leaves its
    /// temporary file (up to ~6 GB) in the parameter directory for good; a file created 0600
    /// cannot be read by another user's engine, which records again and overwrites it; builds
    /// reading different formats under one file name overwrite each other's at every start.
    #[test]
    fn recording_files_are_shared_versioned_and_never_left_half_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), "toy");
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.ends_with(&format!(".f{FORMAT_VERSION}.cuzk-pce")),
            "{name}"
        );
        let rec = RecordingCS::record(Toy(None), "toy", None).unwrap();
        save(&rec, &p).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644, "{mode:o}");
        }
        // Temporaries: one of a process that has ended, one of the same whose writer holds its
        // lock (a writer in another PID namespace or host, whose PID means nothing here), one
        // of this process, one of another program.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let dead = dir.path().join(format!(".{name}.{gone}.Ab3xYz.tmp"));
        let locked = dir.path().join(format!(".{name}.{gone}.Lk7mNo.tmp"));
        let mine = dir
            .path()
            .join(format!(".{name}.{}.Qw9rTy.tmp", std::process::id()));
        let other = dir.path().join(".something.123.tmp");
        for f in [&dead, &locked, &mine, &other] {
            std::fs::write(f, b"half").unwrap();
        }
        assert_eq!(
            tmp_writer(&format!(".{name}.{gone}.Ab3xYz.tmp")),
            Some(gone)
        );
        // Written just now, none is stale: a writer's PID alone says nothing.
        assert_eq!(remove_stale_temporaries(dir.path()), 0);
        assert!(dead.exists());
        // Unwritten for an hour: the one no one holds goes; the locked one stays.
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for f in [&dead, &locked, &mine, &other] {
            let f = std::fs::OpenOptions::new().write(true).open(f).unwrap();
            f.set_modified(hour_ago).unwrap();
        }
        let writer = File::open(&locked).unwrap();
        assert!(crate::sys::os::try_lock_exclusive(&writer));
        assert_eq!(remove_stale_temporaries(dir.path()), 1);
        assert!(!dead.exists() && locked.exists() && mine.exists() && other.exists() && p.exists());
        drop(writer);
        assert_eq!(remove_stale_temporaries(dir.path()), 1);
        assert!(!locked.exists());
    }

    /// A header whose row count is u64::MAX (rows + 1 wraps to 0, so a file with no row tables
    /// has the length it implies) and whose checksum is valid is refused as a bad file. The
    /// hazard: the loader indexes an empty row table and panics.
    #[test]
    fn a_crafted_row_count_is_refused_not_a_panic() {
        use blstrs::Scalar as Fr;
        use ff::Field;
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), "toy");
        let f = File::create(&p).unwrap();
        let mut w = Hashing::new(BufWriter::new(f));
        w.put(MAGIC).unwrap();
        w.put(&FORMAT_VERSION.to_le_bytes()).unwrap();
        w.put(&0u32.to_le_bytes()).unwrap();
        w.put(&3u32.to_le_bytes()).unwrap();
        w.put(b"toy").unwrap();
        // inputs, aux, rows, dictionary, terms of A, B, C.
        for v in [2u64, 3, u64::MAX, 2, 0, 0, 0] {
            w.put(&v.to_le_bytes()).unwrap();
        }
        for k in [Fr::ONE, -Fr::ONE] {
            w.put(&k.to_bytes_le()).unwrap();
        }
        // No row tables (rows + 1 wrapped to none), the three density tables.
        for _ in 0..3 {
            w.u64s(&[0]).unwrap();
        }
        let digest = w.digest();
        w.inner.write_all(&digest).unwrap();
        w.inner.flush().unwrap();
        drop(w);
        let got = std::panic::catch_unwind(|| load(&p, "toy", None));
        match got {
            Ok(Err(LoadError::Bad(e))) => assert!(e.contains("impossible size"), "{e}"),
            Ok(other) => panic!("loaded: {other:?}"),
            Err(_) => panic!("the loader panicked on a crafted row count"),
        }
    }

    #[test]
    fn round_trip_and_every_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let rec = RecordingCS::record(Toy(None), "toy", None).unwrap();
        let p = path(dir.path(), "toy");
        assert_eq!(load(&p, "toy", None).unwrap_err(), LoadError::Missing);
        save(&rec, &p).unwrap();
        assert_eq!(load(&p, "toy", Some((2, 3))).unwrap(), rec);
        // Of another circuit, or sizes other than the parameters'.
        assert!(
            matches!(load(&p, "other", None), Err(LoadError::Bad(e)) if e.contains("recorded for"))
        );
        assert!(
            matches!(load(&p, "toy", Some((2, 4))), Err(LoadError::Bad(e)) if e.contains("parameters say"))
        );
        let good = std::fs::read(&p).unwrap();
        // Truncated at every length, and one byte longer.
        for cut in 0..good.len() {
            std::fs::write(&p, &good[..cut]).unwrap();
            assert!(
                matches!(load(&p, "toy", None), Err(LoadError::Bad(_))),
                "cut {cut}"
            );
        }
        let mut longer = good.clone();
        longer.push(0);
        std::fs::write(&p, &longer).unwrap();
        assert!(matches!(load(&p, "toy", None), Err(LoadError::Bad(_))));
        // Every byte flipped in turn.
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0x41;
            std::fs::write(&p, &b).unwrap();
            assert!(
                matches!(load(&p, "toy", None), Err(LoadError::Bad(_))),
                "byte {i}"
            );
        }
        // A consistent-looking file whose tables are out of range (checksum recomputed).
        let mut bad = rec.clone();
        bad.a.cols[0] = 1000;
        save(&bad, &p).unwrap();
        assert!(
            matches!(load(&p, "toy", None), Err(LoadError::Bad(e)) if e.contains("out of range"))
        );
    }
}
