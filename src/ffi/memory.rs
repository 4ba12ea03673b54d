//! Memory the library hands to its caller (`cuzk_bytes`, `cuzk_error`) and the functions that
//! free it.

use std::ffi::{c_char, CString};

use crate::error::{catch_or as quiet, Status};

/// Bytes owned by the caller after a successful call; free with `cuzk_bytes_free`.
#[repr(C)]
pub struct cuzk_bytes {
    pub ptr: *mut u8,
    pub len: usize,
}

/// An error: its status and a NUL-terminated UTF-8 message owned by the caller (free with
/// `cuzk_error_free`). Zeroed (`{0, NULL}`) means no error. Pass it zeroed, or holding an
/// earlier error from cuzk (whose message is then freed when it is overwritten).
#[repr(C)]
pub struct cuzk_error {
    pub status: Status,
    pub message: *mut c_char,
}

impl cuzk_bytes {
    /// `data` handed to the caller, who frees it with `cuzk_bytes_free`.
    pub(super) fn owned(data: Vec<u8>) -> Self {
        let boxed = data.into_boxed_slice();
        let len = boxed.len();
        let ptr = Box::into_raw(boxed) as *mut u8;
        cuzk_bytes { ptr, len }
    }
}

/// Frees bytes returned by cuzk and zeroes `*b`. NULL and zeroed values are fine; freeing
/// twice through the same `cuzk_bytes` is therefore harmless.
#[no_mangle]
pub extern "C" fn cuzk_bytes_free(b: *mut cuzk_bytes) {
    quiet("cuzk_bytes_free", (), || {
        if b.is_null() {
            return;
        }
        // SAFETY: non-NULL; ptr/len came from `cuzk_bytes::owned` (Box<[u8]>) or are zero.
        unsafe {
            let v = &mut *b;
            if !v.ptr.is_null() {
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    v.ptr, v.len,
                )));
            }
            v.ptr = std::ptr::null_mut();
            v.len = 0;
        }
    })
}

/// Frees an error's message and zeroes `*e`. NULL and zeroed values are fine.
#[no_mangle]
pub extern "C" fn cuzk_error_free(e: *mut cuzk_error) {
    quiet("cuzk_error_free", (), || {
        if e.is_null() {
            return;
        }
        // SAFETY: non-NULL; message came from CString::into_raw or is NULL.
        unsafe {
            let v = &mut *e;
            if !v.message.is_null() {
                drop(CString::from_raw(v.message));
            }
            v.message = std::ptr::null_mut();
            v.status = Status::Ok;
        }
    })
}
