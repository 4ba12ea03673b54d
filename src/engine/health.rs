//! Device health: which prover devices are in service, and taking one out after repeated
//! faults.

use super::{Engine, Inner};
use crate::error::{Error, Result, Status};

/// What one prover device is doing.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceStatus {
    pub name: String,
    /// (job, partition) being proved, if any.
    pub current: Option<(u64, usize)>,
    pub partitions_proved: u64,
    /// False once taken out of service (by `Engine::set_device_enabled` or after repeated
    /// errors); its partitions go to the other devices, or to the CPU.
    pub enabled: bool,
    /// Partitions failed in a row on this device.
    pub consecutive_failures: u32,
}

/// Consecutive failures after which a device is taken out of service.
pub(super) const DEVICE_FAILURE_LIMIT: u32 = 3;

/// Puts device `sub` of backend `d` in or out of service, in the backend and in the engine's
/// status; false where the backend cannot.
pub(super) fn set_device(inner: &Inner, d: usize, sub: usize, on: bool) -> bool {
    if !inner.backends[d].set_enabled(sub, on) {
        return false;
    }
    let slot = inner.slot_base[d] + sub;
    let mut devs = inner.devices.lock();
    devs[slot].enabled = on;
    if on {
        devs[slot].consecutive_failures = 0;
    }
    log::info!(
        "device {slot} ({}) {}",
        devs[slot].name,
        if on { "enabled" } else { "disabled" }
    );
    true
}

impl Engine {
    /// Takes a prover device out of service (`on = false`) or back in, by its index in
    /// `status().devices`. Partitions in flight finish; later ones go to the other devices
    /// (the CPU if none is left).
    pub fn set_device_enabled(&self, device: usize, on: bool) -> Result<()> {
        let i = &self.inner;
        let d = i
            .slot_base
            .iter()
            .rposition(|&b| b <= device)
            .filter(|_| device < i.devices.lock().len())
            .ok_or_else(|| Error::invalid_argument(format!("no device {device}")))?;
        if !set_device(i, d, device - i.slot_base[d], on) {
            return Err(Error::new(
                Status::Unsupported,
                format!("device {device} cannot be taken out of service"),
            ));
        }
        Ok(())
    }
}
