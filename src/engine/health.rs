//! Device health: which prover devices are in service.
//!
//! Faults are counted per prover call, not per partition: a call of four partitions that fails
//! on a device is one fault of that device. After [`DEVICE_FAILURE_LIMIT`] failed calls in a
//! row a device is taken out of service; its partitions go to the other devices (the CPU when
//! none is left). A device taken out for faults is probed again after a cool-down
//! (`Config::device_cooldown`, doubling after each failed probe up to 30 minutes) and put back
//! when the probe passes. A device the operator took out stays out until the operator puts it
//! back. A device whose call the watchdog gave up on (`watchdog`) is out while that call runs:
//! nothing can be asked of it meanwhile; once the call returns it is out as for faults (probed
//! after the cool-down).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use super::{config::MAX_DEVICE_COOLDOWN, Engine, Inner};
use crate::error::{Error, Result, Status};

/// Failed calls in a row after which a device is taken out of service.
pub const DEVICE_FAILURE_LIMIT: u32 = 3;

/// Why a device is out of service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutOfService {
    /// `Engine::set_device_enabled(.., false)`: only the operator puts it back.
    Operator,
    /// Repeated faults: probed again after a cool-down.
    Faults,
    /// A call ran far past its expected time (the watchdog): out until that call returns,
    /// then as for faults.
    Hung,
}

/// What one prover device is doing.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceStatus {
    pub name: String,
    /// (job, partition) being proved, if any.
    pub current: Option<(u64, usize)>,
    pub partitions_proved: u64,
    /// False once taken out of service (by `Engine::set_device_enabled` or after repeated
    /// faults); its partitions go to the other devices, or to the CPU.
    pub enabled: bool,
    /// Why it is out of service, while it is.
    pub out_of_service: Option<OutOfService>,
    /// Prover calls failed in a row on this device.
    pub consecutive_failures: u32,
    /// Prover calls that failed on this device, in all.
    pub failed_calls: u64,
    /// Times it was put back in service after a passed probe.
    pub readmissions: u64,
    /// Calls in which it had no device memory for a partition now (RESOURCE_EXHAUSTED; not a
    /// fault): the partition waits for its room (`room_waits`), then goes elsewhere.
    pub no_room: u64,
    /// Partitions it could never take (a card or limit too small for the circuit, a plan
    /// that takes compact witnesses only), passed over to the other devices or the CPU.
    pub passed_over: u64,
    /// Partitions put back in the queue to wait for its room (another process held its
    /// memory); and, while it waits, for how long it has been waiting.
    pub room_waits: u64,
    pub waiting_for_room_ms: Option<u64>,
    /// Calls the watchdog gave up on (far past their expected time); their partitions went to
    /// the other devices or the CPU.
    pub hung_calls: u64,
    /// Milliseconds until the next probe, while out of service for faults.
    pub probe_in_ms: Option<u64>,
}

/// When a device out for faults is probed next, and the cool-down after that.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Probe {
    pub(super) at: Option<Instant>,
    pub(super) cooldown: Duration,
}

impl Probe {
    /// A first probe once `cooldown` has passed from now.
    fn after(cooldown: Duration) -> Probe {
        Probe {
            at: Some(Instant::now() + cooldown),
            cooldown,
        }
    }
}

/// Puts device `sub` of backend `d` in or out of service, in the backend and in the engine's
/// status; false where the backend cannot.
pub(super) fn set_device(inner: &Inner, d: usize, sub: usize, on: bool, why: OutOfService) -> bool {
    if !inner.backends[d].set_enabled(sub, on) {
        return false;
    }
    let slot = inner.slot_base[d] + sub;
    let mut devs = inner.devices.lock();
    let dv = &mut devs[slot];
    dv.enabled = on;
    let mut probes = inner.probes.lock();
    if on {
        dv.consecutive_failures = 0;
        dv.out_of_service = None;
        probes[slot] = Probe::default();
    } else {
        dv.out_of_service = Some(why);
        probes[slot] = match why {
            // A hung device is probed once its call returns (`returned_late`).
            OutOfService::Operator | OutOfService::Hung => Probe::default(),
            OutOfService::Faults => Probe::after(inner.cfg.device_cooldown),
        };
    }
    log::info!(
        "device {slot} ({}) {}",
        dv.name,
        if on { "in service" } else { "out of service" }
    );
    true
}

/// Records the outcome of one prover call on device `sub` of backend `d`: `fault` when the
/// device failed on any of the call's partitions. Takes the device out after
/// [`DEVICE_FAILURE_LIMIT`] failed calls in a row.
pub(super) fn record_call(inner: &Inner, d: usize, sub: usize, fault: bool) {
    let slot = inner.slot_base[d] + sub;
    let failures = {
        let mut devs = inner.devices.lock();
        let dv = &mut devs[slot];
        if fault {
            dv.consecutive_failures += 1;
            dv.failed_calls += 1;
        } else {
            dv.consecutive_failures = 0;
        }
        (dv.consecutive_failures, dv.enabled)
    };
    if fault
        && failures.1
        && failures.0 >= DEVICE_FAILURE_LIMIT
        && set_device(inner, d, sub, false, OutOfService::Faults)
    {
        log::error!(
            "{}: {} prover calls failed in a row: taken out of service, probed again in {:?}",
            inner.devices.lock()[slot].name,
            failures.0,
            inner.cfg.device_cooldown
        );
    }
}

/// The backend and device of status slot `slot`.
fn backend_of(inner: &Inner, slot: usize) -> Option<(usize, usize)> {
    let d = inner.slot_base.iter().rposition(|&b| b <= slot)?;
    (slot - inner.slot_base[d] < inner.backends[d].devices().len())
        .then(|| (d, slot - inner.slot_base[d]))
}

/// Whether status slot `slot` is a device of a GPU backend.
pub(super) fn is_gpu_slot(inner: &Inner, slot: usize) -> bool {
    backend_of(inner, slot).is_some_and(|(d, _)| inner.backends[d].is_gpu())
}

/// A fault found after the call returned (a proof that fails the self-check): counted as a
/// failed call of the GPU at `slot`.
pub(super) fn fault_at_slot(inner: &Inner, slot: usize) {
    if let Some((d, sub)) = backend_of(inner, slot).filter(|&(d, _)| inner.backends[d].is_gpu()) {
        record_call(inner, d, sub, true);
    }
}

/// The watchdog gave up on a call of backend `d`: devices `subs` are taken out of service
/// (unless the operator took them out) and counted.
pub(super) fn take_out_hung(inner: &Inner, d: usize, subs: &[usize]) {
    for &sub in subs {
        let slot = inner.slot_base[d] + sub;
        inner.inside_given_up.lock()[slot] += 1;
        let operator = {
            let mut devs = inner.devices.lock();
            devs[slot].hung_calls += 1;
            devs[slot].out_of_service == Some(OutOfService::Operator)
        };
        if !operator && set_device(inner, d, sub, false, OutOfService::Hung) {
            log::error!(
                "{}: a prover call ran far past its expected time: taken out of service until \
                 it returns; its partitions go to the other devices",
                inner.devices.lock()[slot].name
            );
        }
    }
}

/// A call the watchdog gave up on returned: its devices still out as hung, and inside no other
/// call given up on (a device stuck in an earlier call is listed by a later one too), are now
/// out as for faults (probed after the cool-down, put back if the probe passes).
pub(super) fn returned_late(inner: &Inner, d: usize, subs: &[usize]) {
    for &sub in subs {
        let slot = inner.slot_base[d] + sub;
        {
            let mut inside = inner.inside_given_up.lock();
            inside[slot] = inside[slot].saturating_sub(1);
            if inside[slot] > 0 {
                continue;
            }
        }
        let mut devs = inner.devices.lock();
        if devs[slot].out_of_service != Some(OutOfService::Hung) {
            continue;
        }
        devs[slot].out_of_service = Some(OutOfService::Faults);
        // Lock order: devices, then probes.
        inner.probes.lock()[slot] = Probe::after(inner.cfg.device_cooldown);
        log::warn!(
            "{}: the call given up on returned: probed in {:?}",
            devs[slot].name,
            inner.cfg.device_cooldown
        );
    }
}

/// The watchdog's key for probes (`watchdog::watched`'s parameter instance): their times are
/// kept apart from any circuit's calls.
const PROBE_KEY: u64 = u64::MAX;

/// Probes the devices of backend `d` whose cool-down has passed, and puts back those that
/// pass. Called by the backend's prover worker before each call. Each probe runs under the
/// GPU-call watchdog: a probe that does not return (a wedged device) is given up, its device
/// stays out (hung, probed again once the probe returns) and the worker goes on.
pub(super) fn readmit_due(inner: &Arc<Inner>, d: usize) {
    let n = inner.backends[d].devices().len();
    let now = Instant::now();
    for sub in 0..n {
        let slot = inner.slot_base[d] + sub;
        let due = inner.probes.lock()[slot].at.is_some_and(|at| at <= now);
        if !due {
            continue;
        }
        let probed =
            super::watchdog::watched(inner, d, PROBE_KEY, &[sub], 0, Duration::ZERO, move |i| {
                i.backends[d].probe(sub)
            });
        let Some(probed) = probed else {
            // Given up: out as hung (`watchdog::watched`), probed again once it returns.
            continue;
        };
        match probed {
            Ok(()) => {
                if set_device(inner, d, sub, true, OutOfService::Faults) {
                    inner.devices.lock()[slot].readmissions += 1;
                    log::warn!(
                        "{}: probe passed after the cool-down: back in service",
                        inner.devices.lock()[slot].name
                    );
                }
            }
            Err(e) => {
                let name = inner.devices.lock()[slot].name.clone();
                // Lock order: devices, then probes (as in set_device).
                let cooldown = {
                    let mut probes = inner.probes.lock();
                    let p = &mut probes[slot];
                    p.cooldown = (p.cooldown * 2).min(MAX_DEVICE_COOLDOWN);
                    p.at = Some(now + p.cooldown);
                    p.cooldown
                };
                log::error!(
                    "{name}: probe failed ({}): next probe in {cooldown:?}",
                    e.message
                );
            }
        }
    }
}

/// Milliseconds until each device's next probe (None where none is due).
pub(super) fn probe_in_ms(inner: &Inner) -> Vec<Option<u64>> {
    let now = Instant::now();
    inner
        .probes
        .lock()
        .iter()
        .map(|p| {
            p.at.map(|at| at.saturating_duration_since(now).as_millis() as u64)
        })
        .collect()
}

impl Engine {
    /// Takes a prover device out of service (`on = false`) or back in, by its index in
    /// `status().devices`. Partitions in flight finish; later ones go to the other devices
    /// (the CPU if none is left). A device the operator takes out is never put back
    /// automatically; putting one back also ends a cool-down after faults.
    pub fn set_device_enabled(&self, device: usize, on: bool) -> Result<()> {
        let i = &self.inner;
        let d = i
            .slot_base
            .iter()
            .rposition(|&b| b <= device)
            .filter(|_| device < i.devices.lock().len())
            .ok_or_else(|| Error::invalid_argument(format!("no device {device}")))?;
        if !set_device(i, d, device - i.slot_base[d], on, OutOfService::Operator) {
            return Err(Error::new(
                Status::Unsupported,
                format!("device {device} cannot be taken out of service"),
            ));
        }
        Ok(())
    }
}
