//! Finding the GPUs a `cuda` build can prove on: the CUDA driver present, devices visible, and
//! cuzk's kernels running on each (a probe kernel whose output is checked). Threads waiting for
//! a GPU block rather than spin (`CUZK_GPU_WAIT=spin` keeps the CUDA runtime's default),
//! leaving the cores to synthesis.

use crate::sys::cuda;

/// What the engine found when it looked for GPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Discovery {
    /// Usable devices (the probe kernel ran on each).
    Devices(Vec<cuda::CudaDevice>),
    /// No usable GPU, with the reason (no driver, no device, wrong architecture...).
    None(String),
}

/// Looks for usable CUDA devices: driver present, device visible, and our kernels run on it.
/// `blocking`: threads waiting for a device sleep instead of spinning (set before any context
/// exists).
pub fn discover(blocking: bool) -> Discovery {
    let (driver, count) = match cuda::probe() {
        Ok(v) => v,
        Err(e) => return Discovery::None(e),
    };
    if count == 0 {
        return Discovery::None(format!("the CUDA driver ({driver}) reports no device"));
    }
    let mut found = Vec::new();
    let mut why = Vec::new();
    for i in 0..count {
        if blocking {
            if let Err(e) = cuda::set_blocking_sync(i) {
                log::warn!("cuzk: device {i}: waits will spin: {e}");
            }
        }
        match cuda::device(i).and_then(|d| cuda::launch_check(i).map(|_| d)) {
            Ok(d) => found.push(d),
            Err(e) => why.push(format!(
                "device {i}: {e} (kernels built for sm_{})",
                cuda::built_archs()
            )),
        }
    }
    if found.is_empty() {
        Discovery::None(why.join("; "))
    } else {
        for w in why {
            log::warn!("cuzk: skipping {w}");
        }
        Discovery::Devices(found)
    }
}
