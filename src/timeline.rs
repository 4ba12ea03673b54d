//! Timeline events: what each job, partition and worker did, and when.
//!
//! Every event carries microseconds since engine start (monotonic). Sinks (C and Go
//! callbacks, log lines) are called by one delivery thread per engine, never by the engine's
//! workers: a slow or misbehaving callback cannot stall synthesis or proving, no engine lock is
//! held while it runs, and it may call back into the engine. With no sink registered,
//! recording an event costs one atomic load.
//!
//! Delivery rules (the C header and the Go docs repeat them):
//! * Events reach each sink one at a time, in the order they were recorded.
//! * A sink sees every event recorded after its registration returned.
//! * [`Timeline::remove`] called from outside a callback first delivers what was recorded
//!   before it was called, then removes the sink, and returns only when the sink is not
//!   running: after that it is never called again, and its state may be freed.
//! * Called from inside a callback (on the delivery thread), it removes the sink at once: the
//!   sink is not called again after the running callback returns. The delivery thread is the
//!   only one that calls sinks, so nothing else is running it.
//! * A sink that panics is reported in the log and keeps its registration; the panic goes no
//!   further.

use std::{
    cell::{Cell, RefCell},
    collections::{HashSet, VecDeque},
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    thread::{JoinHandle, ThreadId},
    time::Instant,
};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

/// Event kinds. The numbers are part of the C ABI: never renumber, only append. The `GPU_*`
/// events are the prover stage's, whatever proves: a GPU (detail `cuda:N`), the CPU prover
/// (`cpu`) or a partition's CPU retry (`cpu-retry`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventKind {
    /// A job was accepted (job-level; value: its partitions; detail: its proof type).
    JobQueued = 0,
    /// A synthesis worker took a partition (value: the bytes it reserved).
    SynthStart = 1,
    /// A partition's synthesis ended (value: milliseconds; detail: the path that ran, or
    /// `aborted` when its job ended first).
    SynthEnd = 2,
    /// The synthesized partition was handed to the prover stage.
    ChanSend = 3,
    /// A prover worker took the partition (detail: the device).
    GpuPickup = 4,
    /// Proving began (detail: the device, or `cpu-retry`).
    GpuStart = 5,
    /// Proving ended (value: milliseconds; detail: the device, or `failed` /
    /// `failed;retry=cpu` when it failed, or `hung;synthesize-again` when the watchdog gave
    /// the call up, or `yielded` when the call stopped before it for a partition of a
    /// higher class or priority: it is queued again).
    GpuEnd = 6,
    /// The job finished with a proof (job-level; value: milliseconds since it was queued).
    JobDone = 7,
    /// The job failed (job-level; value: milliseconds since it was queued; detail: the error).
    JobFailed = 8,
    /// The job was cancelled (job-level; value: milliseconds since it was queued).
    JobCancelled = 9,
}

impl EventKind {
    /// Every kind with its log name, in code order: the one list beside the enum (which
    /// cbindgen reads). Its order is checked at compile time below, and its completeness
    /// against the generated header's `CUZK_EVENT_KIND_*` by a test.
    const NAMES: [(EventKind, &'static std::ffi::CStr); 10] = [
        (EventKind::JobQueued, c"JOB_QUEUED"),
        (EventKind::SynthStart, c"SYNTH_START"),
        (EventKind::SynthEnd, c"SYNTH_END"),
        (EventKind::ChanSend, c"CHAN_SEND"),
        (EventKind::GpuPickup, c"GPU_PICKUP"),
        (EventKind::GpuStart, c"GPU_START"),
        (EventKind::GpuEnd, c"GPU_END"),
        (EventKind::JobDone, c"JOB_DONE"),
        (EventKind::JobFailed, c"JOB_FAILED"),
        (EventKind::JobCancelled, c"JOB_CANCELLED"),
    ];

    /// The kind with this log name (`SYNTH_START`, ...).
    pub fn from_name(name: &str) -> Option<EventKind> {
        Self::NAMES
            .iter()
            .find(|(_, n)| n.to_bytes() == name.as_bytes())
            .map(|(k, _)| *k)
    }

    /// The kind of this number (the C ABI's), None for a number no kind has.
    pub fn from_code(code: i64) -> Option<EventKind> {
        let i = usize::try_from(code).ok()?;
        Self::NAMES.get(i).map(|(k, _)| *k)
    }

    /// The kind's log name as a C string (the header's `CUZK_EVENT_KIND_` suffix).
    pub fn c_name(self) -> &'static std::ffi::CStr {
        Self::NAMES[self as usize].1
    }

    /// The kind's log name (the header's `CUZK_EVENT_KIND_` suffix).
    pub fn name(self) -> &'static str {
        self.c_name().to_str().expect("ASCII")
    }
}

// NAMES[i] is the kind of code i.
const _: () = {
    let mut i = 0;
    while i < EventKind::NAMES.len() {
        assert!(EventKind::NAMES[i].0 as usize == i);
        i += 1;
    }
};

/// Partition value of job-level events (in the C ABI: `CUZK_NO_PARTITION`).
/// cbindgen:ignore
pub const NO_PARTITION: u32 = u32::MAX;

/// One timeline event.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    pub kind: EventKind,
    /// Microseconds since the engine started.
    pub t_us: u64,
    pub job: u64,
    pub partition: u32,
    /// Synthesis worker index for SYNTH_*, device worker index for GPU_* (the CPU prover is
    /// device worker 0 named "cpu").
    pub worker: u32,
    /// A small number whose meaning depends on the event: bytes reserved (SYNTH_START),
    /// milliseconds (SYNTH_END, GPU_END, JOB_*), partitions (JOB_QUEUED), else 0.
    pub value: u64,
    /// Short free text (device name, error message).
    pub detail: String,
}

pub type Sink = Arc<dyn Fn(&Event) + Send + Sync>;

/// Sink handles, unique for the life of the process (a stale handle never names another
/// engine's sink).
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// Events waiting for delivery beyond which new ones are dropped (and counted): a callback
/// that stops returning must not grow memory without bound.
const MAX_QUEUED_EVENTS: usize = 1 << 20;

thread_local! {
    /// Set on a delivery thread while it runs a sink.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
    /// Sinks removed by a callback running on this delivery thread, until the removal is
    /// processed in order.
    static REMOVED_HERE: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
}

/// Whether the calling thread is running a timeline callback. Engine calls that would wait
/// for the engine's own threads (shutdown, a blocking await) refuse to run there.
pub fn in_callback() -> bool {
    IN_CALLBACK.with(|c| c.get())
}

/// A one-shot signal.
#[derive(Default)]
struct Done {
    done: Mutex<bool>,
    cv: Condvar,
}

impl Done {
    fn set(&self) {
        *self.done.lock() = true;
        self.cv.notify_all();
    }
    fn wait(&self) {
        let mut d = self.done.lock();
        while !*d {
            self.cv.wait(&mut d);
        }
    }
}

enum Msg {
    Event(Event),
    Add(u64, Sink),
    Remove(u64, Option<Arc<Done>>),
    Stop,
}

struct Queue {
    msgs: VecDeque<Msg>,
    events: usize,
    /// No more messages are taken (the delivery thread has stopped).
    closed: bool,
}

struct Shared {
    start: Instant,
    /// Sinks registered and not removed; 0 makes `emit` a no-op.
    registered: AtomicUsize,
    live: Mutex<HashSet<u64>>,
    queue: Mutex<Queue>,
    ready: Condvar,
    dropped: AtomicU64,
}

/// Fan-out of events to the registered sinks, through one delivery thread.
pub struct Timeline {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    thread_id: ThreadId,
}

impl Timeline {
    /// Starts the delivery thread (`name` names it).
    pub fn start(start: Instant, name: &str) -> Result<Timeline> {
        let shared = Arc::new(Shared {
            start,
            registered: AtomicUsize::new(0),
            live: Mutex::new(HashSet::new()),
            queue: Mutex::new(Queue {
                msgs: VecDeque::new(),
                events: 0,
                closed: false,
            }),
            ready: Condvar::new(),
            dropped: AtomicU64::new(0),
        });
        let s = shared.clone();
        let t = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || deliver(&s))
            .map_err(|e| Error::internal(format!("cannot start the timeline thread: {e}")))?;
        Ok(Timeline {
            shared,
            thread_id: t.thread().id(),
            thread: Mutex::new(Some(t)),
        })
    }

    pub fn now_us(&self) -> u64 {
        self.shared.start.elapsed().as_micros() as u64
    }

    /// Events dropped because the sinks fell too far behind.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    fn on_delivery_thread(&self) -> bool {
        std::thread::current().id() == self.thread_id
    }

    /// Queues a message; false once the delivery thread has stopped.
    fn send(&self, msg: Msg) -> bool {
        let mut q = self.shared.queue.lock();
        if q.closed {
            return false;
        }
        q.msgs.push_back(msg);
        drop(q);
        self.shared.ready.notify_one();
        true
    }

    /// Registers a sink; returns its handle for [`Timeline::remove`]. It sees every event
    /// recorded after this returns.
    pub fn add(&self, sink: Sink) -> u64 {
        let id = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        self.shared.live.lock().insert(id);
        self.shared.registered.fetch_add(1, Ordering::AcqRel);
        if !self.send(Msg::Add(id, sink)) {
            self.forget(id);
        }
        id
    }

    fn forget(&self, id: u64) -> bool {
        let was = self.shared.live.lock().remove(&id);
        if was {
            self.shared.registered.fetch_sub(1, Ordering::AcqRel);
        }
        was
    }

    /// Unregisters a sink (see the module docs for what is guaranteed on return). Returns
    /// whether the handle named a sink of this timeline.
    pub fn remove(&self, id: u64) -> bool {
        if !self.forget(id) {
            return false;
        }
        if self.on_delivery_thread() {
            REMOVED_HERE.with(|r| r.borrow_mut().insert(id));
            self.send(Msg::Remove(id, None));
            return true;
        }
        let done = Arc::new(Done::default());
        if self.send(Msg::Remove(id, Some(done.clone()))) {
            done.wait();
        }
        // Not queued: the delivery thread has stopped and calls no sink any more.
        true
    }

    /// Records an event for the registered sinks.
    pub fn emit(
        &self,
        kind: EventKind,
        job: u64,
        partition: u32,
        worker: u32,
        value: u64,
        detail: &str,
    ) {
        if self.shared.registered.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut q = self.shared.queue.lock();
        if q.closed {
            return;
        }
        if q.events >= MAX_QUEUED_EVENTS {
            if self.shared.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                log::warn!(
                    "timeline: callbacks are {MAX_QUEUED_EVENTS} events behind; dropping events \
                     (a callback must return quickly)"
                );
            }
            return;
        }
        // Stamped under the queue lock, so that delivery order is time order.
        let ev = Event {
            kind,
            t_us: self.now_us(),
            job,
            partition,
            worker,
            value,
            detail: detail.to_string(),
        };
        q.events += 1;
        q.msgs.push_back(Msg::Event(ev));
        drop(q);
        self.shared.ready.notify_one();
    }

    /// Delivers what is queued, stops the delivery thread and waits for it (unless called on
    /// it). Later events are dropped and later registrations see nothing.
    pub fn close(&self) {
        self.send(Msg::Stop);
        if self.on_delivery_thread() {
            return;
        }
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        self.close();
    }
}

/// The delivery thread.
fn deliver(shared: &Shared) {
    let mut sinks: Vec<(u64, Sink, bool)> = Vec::new();
    loop {
        let msg = {
            let mut q = shared.queue.lock();
            loop {
                if let Some(m) = q.msgs.pop_front() {
                    if matches!(m, Msg::Event(_)) {
                        q.events -= 1;
                    }
                    break m;
                }
                shared.ready.wait(&mut q);
            }
        };
        match msg {
            Msg::Event(ev) => {
                for (id, sink, warned) in sinks.iter_mut() {
                    if REMOVED_HERE.with(|r| r.borrow().contains(id)) {
                        continue;
                    }
                    IN_CALLBACK.with(|c| c.set(true));
                    let r = crate::error::catch("timeline callback", crate::Status::Panic, || {
                        sink(&ev);
                        Ok(())
                    });
                    IN_CALLBACK.with(|c| c.set(false));
                    if let Err(e) = r {
                        if !*warned {
                            *warned = true;
                            log::error!("callback {id}: {} (reported once)", e.message);
                        }
                    }
                }
            }
            Msg::Add(id, sink) => sinks.push((id, sink, false)),
            Msg::Remove(id, done) => {
                sinks.retain(|(i, _, _)| *i != id);
                REMOVED_HERE.with(|r| r.borrow_mut().remove(&id));
                if let Some(d) = done {
                    d.set();
                }
            }
            Msg::Stop => break,
        }
    }
    // Nothing is delivered any more: release the waiters of removals that came in after the
    // stop, and the sinks (their state is freed here, on this thread).
    let rest = {
        let mut q = shared.queue.lock();
        q.closed = true;
        std::mem::take(&mut q.msgs)
    };
    for m in rest {
        if let Msg::Remove(_, Some(d)) = m {
            d.set();
        }
    }
    drop(sinks);
    REMOVED_HERE.with(|r| r.borrow_mut().clear());
}

/// The operators' log line: `TIMELINE,<ms>,<EVENT>,<job>,<detail>`.
pub fn log_line(ev: &Event) -> String {
    let mut detail = String::new();
    if ev.partition != NO_PARTITION {
        detail.push_str(&format!("partition={}", ev.partition));
    }
    let mut add = |s: String| {
        if !detail.is_empty() {
            detail.push(';');
        }
        detail.push_str(&s);
    };
    match ev.kind {
        EventKind::SynthStart | EventKind::SynthEnd => add(format!("worker={}", ev.worker)),
        EventKind::GpuPickup | EventKind::GpuStart | EventKind::GpuEnd => {
            add(format!("device={}", ev.worker))
        }
        _ => {}
    }
    match ev.kind {
        EventKind::SynthStart => add(format!("reserved_bytes={}", ev.value)),
        EventKind::SynthEnd => add(format!("synth_ms={}", ev.value)),
        EventKind::GpuEnd => add(format!("gpu_ms={}", ev.value)),
        EventKind::JobQueued => add(format!("partitions={}", ev.value)),
        EventKind::JobDone | EventKind::JobFailed | EventKind::JobCancelled => {
            add(format!("ms={}", ev.value))
        }
        _ => {}
    }
    if !ev.detail.is_empty() {
        add(ev.detail.replace([',', '\n'], " "));
    }
    format!(
        "TIMELINE,{:.3},{},{},{}",
        ev.t_us as f64 / 1000.0,
        ev.kind.name(),
        ev.job,
        detail
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The enumerators `PREFIX<NAME> = <code>,` of the generated header, in its order.
    fn header_enum(prefix: &str) -> Vec<(String, i64)> {
        let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/cuzk.h"))
            .expect("include/cuzk.h");
        h.lines()
            .filter_map(|l| l.trim().strip_prefix(prefix))
            .filter_map(|l| {
                let (name, code) = l.trim_end_matches(',').split_once(" = ")?;
                Some((name.to_string(), code.trim().parse().ok()?))
            })
            .collect()
    }

    #[test]
    fn the_name_tables_cover_every_enumerator_of_the_header() {
        let st = header_enum("CUZK_STATUS_");
        assert_eq!(st.len(), crate::Status::NAMES.len(), "{st:?}");
        for (name, code) in &st {
            let s = crate::Status::from_code(*code as i32).expect(name);
            assert_eq!((s.name(), s as i64), (name.as_str(), *code));
        }
        assert_eq!(crate::Status::from_code(st.len() as i32), None);
        let ev = header_enum("CUZK_EVENT_KIND_");
        assert_eq!(ev.len(), EventKind::NAMES.len(), "{ev:?}");
        for (name, code) in &ev {
            let k = EventKind::from_name(name).expect(name);
            assert_eq!(k as i64, *code, "{name}");
            assert_eq!(EventKind::from_code(*code), Some(k), "{name}");
        }
        assert_eq!(EventKind::from_code(ev.len() as i64), None);
        assert_eq!(EventKind::from_code(-1), None);
    }

    fn recorder() -> (Sink, Arc<parking_lot::Mutex<Vec<u64>>>) {
        let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let s = seen.clone();
        (Arc::new(move |e: &Event| s.lock().push(e.job)), seen)
    }

    #[test]
    fn unregister_delivers_what_came_before_and_nothing_after() {
        let t = Timeline::start(Instant::now(), "t").unwrap();
        let (sink, seen) = recorder();
        let id = t.add(sink);
        for j in 0..1000 {
            t.emit(EventKind::JobQueued, j, NO_PARTITION, 0, 0, "");
        }
        assert!(t.remove(id));
        assert_eq!(
            seen.lock().len(),
            1000,
            "events before remove are delivered"
        );
        t.emit(EventKind::JobDone, 5000, NO_PARTITION, 0, 0, "");
        t.close();
        assert_eq!(seen.lock().len(), 1000);
        assert!(!t.remove(id), "a second remove finds nothing");
    }

    #[test]
    fn handles_are_unique_across_timelines_and_a_closed_one_never_calls() {
        let a = Timeline::start(Instant::now(), "a").unwrap();
        let b = Timeline::start(Instant::now(), "b").unwrap();
        let (sa, _) = recorder();
        let (sb, seen_b) = recorder();
        let ha = a.add(sa);
        let hb = b.add(sb);
        assert_ne!(ha, hb);
        assert!(!b.remove(ha));
        b.close();
        b.emit(EventKind::JobDone, 1, NO_PARTITION, 0, 0, "");
        assert!(seen_b.lock().is_empty());
        // Removing after the thread stopped returns at once.
        assert!(b.remove(hb));
        let late = b.add(Arc::new(|_: &Event| panic!("called after close")));
        b.emit(EventKind::JobDone, 1, NO_PARTITION, 0, 0, "");
        assert!(!b.remove(late));
    }
}
