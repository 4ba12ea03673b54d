//! Callbacks into the host: the timeline (every engine event, per registered callback) and the
//! library's log records.

use std::{ffi::c_char, ffi::c_void, sync::Arc};

use super::{
    boundary::{boundary, c_text, quiet, Out},
    lifecycle::running,
    memory::cuzk_error,
};
use crate::{
    engine,
    error::{Error, Status},
    timeline::{Event, EventKind},
};

/// `partition` value of job-level timeline events (`UINT32_MAX`).
pub const CUZK_NO_PARTITION: u32 = 0xFFFF_FFFF;

/// A timeline event, valid only during the callback.
#[repr(C)]
pub struct cuzk_timeline_event {
    /// `sizeof(cuzk_timeline_event)`: fields are only appended.
    pub struct_size: u32,
    /// Event kind, a `cuzk_event_kind` value: 0 JOB_QUEUED, 1 SYNTH_START, 2 SYNTH_END, 3 CHAN_SEND, 4 GPU_PICKUP,
    /// 5 GPU_START, 6 GPU_END, 7 JOB_DONE, 8 JOB_FAILED, 9 JOB_CANCELLED.
    pub kind: u32,
    /// Microseconds since engine start (monotonic).
    pub t_us: u64,
    pub job_id: u64,
    /// Partition index; `CUZK_NO_PARTITION` for job-level events.
    pub partition: u32,
    /// Synthesis worker (SYNTH_*) or device worker (GPU_*) index.
    pub worker: u32,
    /// Bytes reserved (SYNTH_START), milliseconds (SYNTH_END, GPU_END, JOB_*), partitions
    /// (JOB_QUEUED), else 0.
    pub value: u64,
    /// NUL-terminated detail text (device name, error), borrowed for the callback only.
    pub detail: *const c_char,
}

/// Timeline callback: `userdata` first. Called by the engine's one timeline thread, one event
/// at a time, in order; never by a worker, never with an engine lock held. It should return
/// quickly (events queue up behind it; past about a million waiting, new ones are dropped and
/// counted). From inside it a callback may call `cuzk_timeline_register`,
/// `cuzk_timeline_unregister` (its own handle or another's: returns at once, and the callback
/// is not called again), `cuzk_submit`, `cuzk_cancel`, `cuzk_poll`, `cuzk_await` with a zero
/// timeout, `cuzk_engine_status`, `cuzk_engine_metrics`, `cuzk_engine_admission`,
/// `cuzk_device_set_enabled`, `cuzk_log_set_callback` and
/// `cuzk_verify_seal`; `cuzk_engine_start`, `cuzk_engine_shutdown`, `cuzk_seal_commit_phase2`
/// and a waiting `cuzk_await` answer `CUZK_STATUS_IN_CALLBACK`. It must not throw (C++).
pub type cuzk_timeline_cb =
    Option<unsafe extern "C" fn(userdata: *mut c_void, ev: *const cuzk_timeline_event)>;

/// A log record, valid only during the callback.
#[repr(C)]
pub struct cuzk_log_record {
    /// `sizeof(cuzk_log_record)`: fields are only appended.
    pub struct_size: u32,
    /// 1 ERROR, 2 WARN, 3 INFO, 4 DEBUG, 5 TRACE.
    pub level: u32,
    /// Microseconds since the Unix epoch when it was logged.
    pub unix_us: u64,
    /// NUL-terminated module path or target ("cuzk::engine", "bellperson::groth16::prover").
    pub target: *const c_char,
    /// NUL-terminated UTF-8 message.
    pub message: *const c_char,
}

/// Log callback: `userdata` first. Called by one library thread (`cuzk-log`), one record at a
/// time and in order; never by the thread that logged, never with an engine lock held. It may
/// call any cuzk function, `cuzk_log_set_callback` included. Records beyond 100,000 waiting are
/// dropped (counted in the metrics' `cuzk_log_records_dropped_total`). It must not throw (C++).
pub type cuzk_log_cb =
    Option<unsafe extern "C" fn(userdata: *mut c_void, rec: *const cuzk_log_record)>;

/// Sends the library's log records (its own and those of the proving crates inside it) to `cb`
/// instead of stderr; `cb` NULL goes back to stderr. `RUST_LOG` filters them as always; where it
/// is not set, `max_level` (1 ERROR ... 5 TRACE; 0: WARN) is the most verbose level passed on.
/// From outside the callback: the records logged before the call are delivered first (to the
/// old callback, waiting at most five seconds for it), and once this returns the old callback is
/// not running and is never called again, so its userdata may be freed. From inside the
/// callback: returns at once, and the old callback is not called after its running call.
/// `CUZK_STATUS_UNSUPPORTED` where the process already had a Rust logger when cuzk was first
/// called (then records go to that logger). Thread-safe.
#[no_mangle]
pub extern "C" fn cuzk_log_set_callback(
    cb: cuzk_log_cb,
    userdata: *mut c_void,
    max_level: u32,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        if !crate::logging::installed() {
            return Err(Error::unsupported(
                "this process has a Rust logger of its own; cuzk's records go to it",
            ));
        }
        let level = match max_level {
            0 => None,
            1 => Some(log::LevelFilter::Error),
            2 => Some(log::LevelFilter::Warn),
            3 => Some(log::LevelFilter::Info),
            4 => Some(log::LevelFilter::Debug),
            5 => Some(log::LevelFilter::Trace),
            n => return Err(Error::invalid_argument(format!("unknown log level {n}"))),
        };
        let sink = cb.map(|cb| {
            let ptr = CallbackPtr { cb, userdata };
            Arc::new(move |r: &crate::logging::LogRecord| {
                let (target, message) = (c_text(&r.target), c_text(&r.message));
                let c = cuzk_log_record {
                    struct_size: std::mem::size_of::<cuzk_log_record>() as u32,
                    level: r.level as u32,
                    unix_us: r.unix_us,
                    target: target.as_ptr(),
                    message: message.as_ptr(),
                };
                let p = &ptr;
                // SAFETY: the callback contract is documented in the header.
                unsafe { (p.cb)(p.userdata, &c) };
            }) as crate::logging::LogSink
        });
        crate::logging::set_sink(sink, level);
        Ok(())
    })
}

/// A host's callback and its userdata, called with a `T` (a timeline event, a log record).
struct CallbackPtr<T> {
    cb: unsafe extern "C" fn(*mut c_void, *const T),
    userdata: *mut c_void,
}
// SAFETY: the header requires the callback and its userdata to be usable from another thread
// (the engine's timeline thread, the library's log thread) until the callback is unregistered
// or replaced.
unsafe impl<T> Send for CallbackPtr<T> {}
unsafe impl<T> Sync for CallbackPtr<T> {}

/// Registers a timeline callback on the running engine; writes a handle (unique for the life
/// of the process) for `cuzk_timeline_unregister`. The callback sees every event recorded after
/// this returns. `cb` and `userdata` must stay valid until `cuzk_timeline_unregister` returns
/// (or the engine's shutdown has returned). See `cuzk_timeline_cb` for what it may call.
#[no_mangle]
pub extern "C" fn cuzk_timeline_register(
    cb: cuzk_timeline_cb,
    userdata: *mut c_void,
    handle_out: *mut u64,
    err_out: *mut cuzk_error,
) -> Status {
    boundary(err_out, || {
        let cb = cb.ok_or_else(|| Error::invalid_argument("cb is NULL"))?;
        let handle_out = Out::new(handle_out, "handle_out")?;
        let ptr = CallbackPtr { cb, userdata };
        let sink = Arc::new(move |ev: &Event| {
            let detail = c_text(&ev.detail);
            let c = cuzk_timeline_event {
                struct_size: std::mem::size_of::<cuzk_timeline_event>() as u32,
                kind: ev.kind as u32,
                t_us: ev.t_us,
                job_id: ev.job,
                partition: ev.partition,
                worker: ev.worker,
                value: ev.value,
                detail: detail.as_ptr(),
            };
            let p = &ptr;
            // SAFETY: the callback contract is documented in the header.
            unsafe { (p.cb)(p.userdata, &c) };
        });
        let id = running()?.add_timeline_sink(sink);
        handle_out.write(id);
        Ok(())
    })
}

/// Unregisters a timeline callback. From outside a callback: the events recorded before the
/// call are delivered first, and when it returns the callback is not running and will never be
/// called again, so its userdata may be freed; this holds during a shutdown too. From inside a
/// callback: returns at once, and the callback is not called again after the running call
/// returns. Unknown handles (or no engine) are not an error. Thread-safe. As
/// `cuzk_timeline_unregister_err` with no error out-struct.
#[no_mangle]
pub extern "C" fn cuzk_timeline_unregister(handle: u64) -> Status {
    cuzk_timeline_unregister_err(handle, std::ptr::null_mut())
}

/// `cuzk_timeline_unregister` with an error out-struct, as every other call has (NULL:
/// none). It fails only on an internal fault: `CUZK_STATUS_PANIC`, its message in `*err_out`.
#[no_mangle]
pub extern "C" fn cuzk_timeline_unregister_err(handle: u64, err_out: *mut cuzk_error) -> Status {
    boundary(err_out, || {
        if let Some(e) = engine::global() {
            e.remove_timeline_sink(handle);
        }
        Ok(())
    })
}

/// Static name of a timeline event kind (`"SYNTH_START"`, ..., the `CUZK_EVENT_KIND_` suffix);
/// `"UNKNOWN"` for other values. Thread-safe; allowed in a callback.
#[no_mangle]
pub extern "C" fn cuzk_event_kind_name(kind: i32) -> *const c_char {
    quiet("cuzk_event_kind_name", c"UNKNOWN".as_ptr(), || {
        EventKind::from_code(kind.into())
            .map_or(c"UNKNOWN", EventKind::c_name)
            .as_ptr()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_partition_matches_the_timeline() {
        assert_eq!(super::CUZK_NO_PARTITION, crate::timeline::NO_PARTITION);
    }
}
