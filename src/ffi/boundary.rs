//! The boundary every export goes through: panics caught, errors written to the caller's
//! `cuzk_error`, the caller's pointers checked before any work and written once, on success.

use std::ffi::{c_char, CStr, CString, OsStr};
use std::path::PathBuf;

use super::memory::cuzk_error;
use crate::error::{Error, Result, Status};

/// `s` as a C string: an interior NUL (which C would read as the end) becomes a space.
pub(super) fn c_text(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

fn write_error(err_out: *mut cuzk_error, e: &Error) {
    if err_out.is_null() {
        return;
    }
    let msg = c_text(&e.message);
    // SAFETY: the caller passes a valid, writable cuzk_error that is zeroed or holds an error
    // from cuzk (documented); NULL checked above. Its old message came from CString::into_raw.
    unsafe {
        let old = (*err_out).message;
        if !old.is_null() {
            drop(CString::from_raw(old));
        }
        *err_out = cuzk_error {
            status: e.status,
            message: msg.into_raw(),
        };
    }
}

/// Runs `f` behind the panic boundary; writes `err_out` on failure. Every export that returns a
/// status goes through this; the others through [`quiet`].
pub(super) fn boundary(err_out: *mut cuzk_error, f: impl FnOnce() -> Result<()>) -> Status {
    // A C or Go host has no Rust logger: the library's own takes the records (`RUST_LOG`).
    crate::logging::install();
    match crate::error::catch("cuzk", Status::Panic, f) {
        Ok(()) => Status::Ok,
        Err(e) => {
            write_error(err_out, &e);
            e.status
        }
    }
}

/// The boundary of an export with no status to return (the `_default` fillers, the frees, the
/// names): a panic is logged and the fallback returned instead of unwinding into the caller.
pub(super) use crate::error::catch_or as quiet;

/// NULL is an argument error naming `what`: the one NULL check of every caller pointer that
/// must not be NULL.
fn non_null<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::invalid_argument(format!("{what} is NULL")));
    }
    Ok(())
}

/// A caller's out-pointer, checked non-NULL before any work is done and written once, on
/// success (outputs are written only on success).
pub(super) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// `p` as an out-pointer; NULL is an argument error naming `what`.
    pub(super) fn new(p: *mut T, what: &str) -> Result<Self> {
        non_null(p, what)?;
        Ok(Out(p))
    }

    /// Writes `v` (without dropping what the caller's memory held: it is the caller's).
    pub(super) fn write(self, v: T) {
        // SAFETY: non-NULL (checked in `new`); the caller passes a valid, writable, aligned `T`
        // for the duration of the call (documented per function).
        unsafe { self.0.write(v) }
    }
}

/// A caller's out-struct whose first field is `struct_size` (u32), set by the caller to
/// `sizeof` the struct as its header declares it. The library writes at most that many bytes,
/// at most its own struct: a caller built against an older header (a shorter struct) gets the
/// fields it knows and nothing past them. A `struct_size` of 0 is a caller built against the
/// first header, which did not ask for it (a zero-initialised struct): it gets the first
/// published layout.
pub(super) struct SizedOut<T> {
    out: Out<T>,
    len: usize,
}

impl<T> SizedOut<T> {
    /// NULL, or a `struct_size` from 1 to 7 (too small to hold a field): an argument error
    /// naming the struct, nothing written. A `struct_size` of 0 reads as `v1`, the size of the
    /// struct in the first header.
    pub(super) fn new(p: *mut T, name: &str, v1: usize) -> Result<Self> {
        const { assert!(std::mem::align_of::<T>() >= std::mem::align_of::<u32>()) };
        let out = Out::new(p, "out")?;
        // SAFETY: non-NULL and aligned for T, whose first field is the u32 `struct_size`
        // (pinned per struct in layout.rs).
        let size = match unsafe { (p as *const u32).read() } as usize {
            0 => v1,
            n => n,
        };
        if size < 8 {
            return Err(Error::invalid_argument(format!(
                "{name}.struct_size is {size}: set it to sizeof({name}) before the call"
            )));
        }
        Ok(SizedOut {
            out,
            len: size.min(std::mem::size_of::<T>()),
        })
    }

    /// Writes the first bytes of `value` that the caller's struct holds and sets its
    /// `struct_size` to their count, so a caller built against a newer header sees which
    /// fields are filled.
    pub(super) fn write(self, value: T) {
        let p = self.out.0;
        // SAFETY: `p` is non-NULL, aligned, and the caller's struct holds `len` bytes (its own
        // struct_size); `value` is a whole T, so its first `len` bytes are readable (padding is
        // copied as bytes, never read as a value).
        unsafe {
            std::ptr::copy_nonoverlapping(&value as *const T as *const u8, p as *mut u8, self.len);
            (p as *mut u32).write(self.len as u32);
        }
    }
}

/// A caller-filled struct whose first field is `struct_size` (`cuzk_config`,
/// `cuzk_job_request`, `cuzk_post_request`), read by the one versioning rule of the header:
/// any `struct_size` from the struct's first published size (`v1`) to this library's own is
/// accepted, and each field past the caller's size takes its value in `defaults` (what the
/// struct's `_default` filler writes). NULL, a smaller size (the struct was not initialized by
/// its `_default`) or a larger one (a newer header's, whose fields this library would ignore)
/// is an argument error naming the struct.
///
/// Every field of `T` must take any bit pattern (integers, raw pointers, byte arrays; flags
/// are `u8`, never `bool`): the caller's bytes are copied over `defaults` as they are.
pub(super) fn sized_in<T: Copy>(p: *const T, name: &str, v1: usize, defaults: T) -> Result<T> {
    const { assert!(std::mem::align_of::<T>() >= std::mem::align_of::<u32>()) };
    non_null(p, name)?;
    // SAFETY: non-NULL and aligned for T, whose first field is the u32 `struct_size` (pinned
    // per struct in layout.rs).
    let size = unsafe { (p as *const u32).read() } as usize;
    let own = std::mem::size_of::<T>();
    if size < v1 || size > own {
        let why = if size > own {
            "a newer header's struct, with fields this library does not know"
        } else {
            "initialize it with the struct's _default call"
        };
        return Err(Error::invalid_argument(format!(
            "{name}.struct_size is {size}, not {v1}..={own}: {why}"
        )));
    }
    let mut v = defaults;
    // SAFETY: the caller's struct holds `size` bytes (its struct_size, at most a whole T), and
    // `v` is a whole T; every field of T takes any bytes (above), so `v` stays a valid T.
    unsafe { std::ptr::copy_nonoverlapping(p as *const u8, &mut v as *mut T as *mut u8, size) };
    Ok(v)
}

/// A caller's buffer as a slice, after the checks `slice::from_raw_parts` needs.
pub(super) fn bytes_in<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8]> {
    non_null(ptr, what)?;
    if len > isize::MAX as usize {
        return Err(Error::invalid_argument(format!(
            "{what}: length {len} is above PTRDIFF_MAX"
        )));
    }
    // SAFETY: the caller guarantees `ptr` points to `len` readable bytes for the call; the
    // length fits an allocation.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A caller's array of `n` values of `T`, borrowed for the call (NULL is fine where `n` is 0).
pub(super) fn array_in<'a, T>(ptr: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    non_null(ptr, what)?;
    if n.checked_mul(std::mem::size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(Error::invalid_argument(format!(
            "{what}: {n} entries are above PTRDIFF_MAX bytes"
        )));
    }
    if ptr.align_offset(std::mem::align_of::<T>()) != 0 {
        return Err(Error::invalid_argument(format!("{what} is not aligned")));
    }
    // SAFETY: non-NULL, aligned, and the caller guarantees `n` initialized values of `T` for
    // the call; the byte length fits an allocation.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// A caller's input struct or array (a request, a 32-byte prover id), borrowed for the call;
/// NULL is an argument error naming `what`.
pub(super) fn ref_in<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    non_null(p, what)?;
    // SAFETY: non-NULL; the caller passes a valid, initialized, aligned `T` that stays valid
    // for the call (documented per function).
    Ok(unsafe { &*p })
}

/// A NUL-terminated path of any encoding (Unix paths are bytes).
pub(super) fn path_in(p: *const c_char) -> Option<PathBuf> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL, NUL-terminated (documented).
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    #[cfg(unix)]
    let os: &OsStr = std::os::unix::ffi::OsStrExt::from_bytes(bytes);
    #[cfg(not(unix))]
    let os: &OsStr = OsStr::new(std::str::from_utf8(bytes).unwrap_or_default());
    Some(PathBuf::from(os))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_above_ptrdiff_max_are_argument_errors() {
        let b = [0u8; 1];
        let e = bytes_in(b.as_ptr(), usize::MAX, "c1").unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(bytes_in(b.as_ptr(), 1, "c1").is_ok());
    }

    #[test]
    fn a_panic_behind_either_boundary_becomes_a_status_or_the_fallback() {
        let mut err = cuzk_error {
            status: Status::Ok,
            message: std::ptr::null_mut(),
        };
        assert_eq!(boundary(&mut err, || panic!("boom")), Status::Panic);
        assert_eq!(err.status, Status::Panic);
        super::super::cuzk_error_free(&mut err);
        assert_eq!(quiet("t", 7, || -> i32 { panic!("boom") }), 7);
    }
}
