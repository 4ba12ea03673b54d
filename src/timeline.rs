//! Timeline events: what each job, partition and worker did, and when.
//!
//! Every event carries microseconds since engine start (monotonic). Sinks are registered at
//! run time; with no sink registered, recording an event costs one atomic load.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Instant,
};

use parking_lot::RwLock;

/// Event kinds. The numbers are part of the C ABI: never renumber, only append.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventKind {
    JobQueued = 0,
    SynthStart = 1,
    SynthEnd = 2,
    ChanSend = 3,
    GpuPickup = 4,
    GpuStart = 5,
    GpuEnd = 6,
    JobDone = 7,
    JobFailed = 8,
    JobCancelled = 9,
}

impl EventKind {
    const ALL: [EventKind; 10] = [
        EventKind::JobQueued,
        EventKind::SynthStart,
        EventKind::SynthEnd,
        EventKind::ChanSend,
        EventKind::GpuPickup,
        EventKind::GpuStart,
        EventKind::GpuEnd,
        EventKind::JobDone,
        EventKind::JobFailed,
        EventKind::JobCancelled,
    ];

    /// The kind with this log name (`SYNTH_START`, ...).
    pub fn from_name(name: &str) -> Option<EventKind> {
        Self::ALL.iter().copied().find(|k| k.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            EventKind::JobQueued => "JOB_QUEUED",
            EventKind::SynthStart => "SYNTH_START",
            EventKind::SynthEnd => "SYNTH_END",
            EventKind::ChanSend => "CHAN_SEND",
            EventKind::GpuPickup => "GPU_PICKUP",
            EventKind::GpuStart => "GPU_START",
            EventKind::GpuEnd => "GPU_END",
            EventKind::JobDone => "JOB_DONE",
            EventKind::JobFailed => "JOB_FAILED",
            EventKind::JobCancelled => "JOB_CANCELLED",
        }
    }
}

/// Partition value of job-level events.
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
    /// milliseconds (SYNTH_END, GPU_END), partitions (JOB_QUEUED), else 0.
    pub value: u64,
    /// Short free text (device name, error message).
    pub detail: String,
}

pub type Sink = Arc<dyn Fn(&Event) + Send + Sync>;

/// Fan-out of events to the registered sinks.
pub struct Timeline {
    start: Instant,
    any: AtomicBool,
    sinks: RwLock<Vec<(u64, Sink)>>,
    next: std::sync::atomic::AtomicU64,
}

impl Timeline {
    pub fn new(start: Instant) -> Self {
        Timeline {
            start,
            any: AtomicBool::new(false),
            sinks: RwLock::new(Vec::new()),
            next: 1.into(),
        }
    }

    pub fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Registers a sink; returns its handle for [`Timeline::remove`].
    pub fn add(&self, sink: Sink) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut s = self.sinks.write();
        s.push((id, sink));
        self.any.store(true, Ordering::Release);
        id
    }

    /// Unregisters a sink. When this returns, the sink is not running and will not be called
    /// again (emitters hold the read lock while calling sinks).
    pub fn remove(&self, id: u64) -> bool {
        let mut s = self.sinks.write();
        let before = s.len();
        s.retain(|(i, _)| *i != id);
        self.any.store(!s.is_empty(), Ordering::Release);
        s.len() != before
    }

    pub fn emit(
        &self,
        kind: EventKind,
        job: u64,
        partition: u32,
        worker: u32,
        value: u64,
        detail: &str,
    ) {
        if !self.any.load(Ordering::Acquire) {
            return;
        }
        let ev = Event {
            kind,
            t_us: self.now_us(),
            job,
            partition,
            worker,
            value,
            detail: detail.to_string(),
        };
        let sinks = self.sinks.read();
        for (_, s) in sinks.iter() {
            s(&ev);
        }
    }
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
