//! Bindings to the device probe in `kernels/probe.cu` (static CUDA runtime: these calls work,
//! and report an error, on machines without the NVIDIA driver).

use std::ffi::{c_char, c_int, CStr};

#[repr(C)]
struct RawDevice {
    ordinal: c_int,
    major: c_int,
    minor: c_int,
    multiprocessors: c_int,
    total_mem: u64,
    free_mem: u64,
    name: [c_char; 256],
}

extern "C" {
    fn cuzk_cuda_archs() -> *const c_char;
    fn cuzk_cuda_probe(
        count: *mut c_int,
        driver_version: *mut c_int,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    fn cuzk_cuda_device_info(
        ordinal: c_int,
        out: *mut RawDevice,
        err: *mut c_char,
        errlen: usize,
    ) -> c_int;
    fn cuzk_cuda_launch_check(ordinal: c_int, err: *mut c_char, errlen: usize) -> c_int;
    fn cuzk_cuda_set_blocking_sync(ordinal: c_int, err: *mut c_char, errlen: usize) -> c_int;
}

/// One CUDA device as the runtime reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaDevice {
    pub ordinal: usize,
    pub name: String,
    /// Compute capability, e.g. (9, 0).
    pub capability: (u32, u32),
    pub multiprocessors: u32,
    pub total_mem: u64,
    pub free_mem: u64,
}

/// The message a kernels/ entry point wrote into a zeroed error buffer (probe.cu,
/// groth16.cu and fixed_base.cu all write at most `len - 1` bytes and a NUL, by snprintf).
pub(crate) fn message(buf: &[c_char]) -> String {
    // SAFETY: the callee NUL-terminates within the buffer (snprintf), and the buffer is
    // zeroed beforehand, so a NUL is there even where it wrote nothing.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Compute capabilities the kernels were built for ("90", "80,90", ...).
pub fn built_archs() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string.
    unsafe { CStr::from_ptr(cuzk_cuda_archs()) }
        .to_string_lossy()
        .into_owned()
}

/// The driver version (e.g. 13000) and the number of devices; `Err` with the runtime's reason
/// when there is no usable driver.
pub fn probe() -> Result<(u32, usize), String> {
    let mut count: c_int = 0;
    let mut version: c_int = 0;
    let mut err = [0 as c_char; 512];
    // SAFETY: valid out-pointers and a buffer of the length passed.
    let rc = unsafe { cuzk_cuda_probe(&mut count, &mut version, err.as_mut_ptr(), err.len()) };
    if rc != 0 {
        return Err(message(&err));
    }
    Ok((version.max(0) as u32, count.max(0) as usize))
}

/// Properties and free memory of one device.
pub fn device(ordinal: usize) -> Result<CudaDevice, String> {
    let mut raw = RawDevice {
        ordinal: 0,
        major: 0,
        minor: 0,
        multiprocessors: 0,
        total_mem: 0,
        free_mem: 0,
        name: [0; 256],
    };
    let mut err = [0 as c_char; 512];
    // SAFETY: `raw` matches `struct cuzk_cuda_device` field for field; the callee zeroes it and
    // NUL-terminates `name` (strncpy of at most 255 bytes into a zeroed 256-byte array).
    let rc =
        unsafe { cuzk_cuda_device_info(ordinal as c_int, &mut raw, err.as_mut_ptr(), err.len()) };
    if rc != 0 {
        return Err(message(&err));
    }
    Ok(CudaDevice {
        ordinal,
        name: message(&raw.name),
        capability: (raw.major.max(0) as u32, raw.minor.max(0) as u32),
        multiprocessors: raw.multiprocessors.max(0) as u32,
        total_mem: raw.total_mem,
        free_mem: raw.free_mem,
    })
}

/// Runs a small kernel on the device and checks its output.
pub fn launch_check(ordinal: usize) -> Result<(), String> {
    let mut err = [0 as c_char; 512];
    // SAFETY: a buffer of the length passed.
    let rc = unsafe { cuzk_cuda_launch_check(ordinal as c_int, err.as_mut_ptr(), err.len()) };
    if rc != 0 {
        return Err(message(&err));
    }
    Ok(())
}

/// Makes threads waiting for the device sleep instead of spin (before its context exists).
pub fn set_blocking_sync(ordinal: usize) -> Result<(), String> {
    let mut err = [0 as c_char; 512];
    // SAFETY: a buffer of the length passed.
    let rc = unsafe { cuzk_cuda_set_blocking_sync(ordinal as c_int, err.as_mut_ptr(), err.len()) };
    if rc != 0 {
        return Err(message(&err));
    }
    Ok(())
}
