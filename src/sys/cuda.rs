//! The device probe in `kernels/probe.cu` (static CUDA runtime: these calls work, and report
//! an error, on machines without the NVIDIA driver), behind safe functions.

use std::ffi::{c_int, CStr};

use super::kernels::{
    call, cuzk_cuda_archs, cuzk_cuda_device_info, cuzk_cuda_launch_check, cuzk_cuda_probe,
    cuzk_cuda_set_blocking_sync, text, CudaDeviceC,
};

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
    // SAFETY: valid out-pointers and a buffer of the length passed.
    call(|err, len| unsafe { cuzk_cuda_probe(&mut count, &mut version, err, len) })?;
    Ok((version.max(0) as u32, count.max(0) as usize))
}

/// Properties and free memory of one device.
pub fn device(ordinal: usize) -> Result<CudaDevice, String> {
    let mut raw = CudaDeviceC {
        ordinal: 0,
        major: 0,
        minor: 0,
        multiprocessors: 0,
        total_mem: 0,
        free_mem: 0,
        name: [0; 256],
    };
    // SAFETY: `raw` is `struct cuzk_cuda_device` (layout pinned in kernels.rs); the callee
    // zeroes it and NUL-terminates `name` (snprintf into the 256-byte array).
    call(|err, len| unsafe { cuzk_cuda_device_info(ordinal as c_int, &mut raw, err, len) })?;
    Ok(CudaDevice {
        ordinal,
        name: text(&raw.name),
        capability: (raw.major.max(0) as u32, raw.minor.max(0) as u32),
        multiprocessors: raw.multiprocessors.max(0) as u32,
        total_mem: raw.total_mem,
        free_mem: raw.free_mem,
    })
}

/// Runs a small kernel on the device and checks its output.
pub fn launch_check(ordinal: usize) -> Result<(), String> {
    // SAFETY: a buffer of the length passed.
    Ok(call(|err, len| unsafe {
        cuzk_cuda_launch_check(ordinal as c_int, err, len)
    })?)
}

/// Makes threads waiting for the device sleep instead of spin (before its context exists).
pub fn set_blocking_sync(ordinal: usize) -> Result<(), String> {
    // SAFETY: a buffer of the length passed.
    Ok(call(|err, len| unsafe {
        cuzk_cuda_set_blocking_sync(ordinal as c_int, err, len)
    })?)
}
