//! The library's logger, for hosts that load cuzk through its C ABI (Go, C).
//!
//! The library installs it on its first C call (unless the process already has a `log`
//! logger, as a Rust host or the `cuzk` command line does). `RUST_LOG` filters it as it
//! filters `env_logger` (default `warn`). Records go to stderr, or, once the host hands over
//! its own logger ([`set_sink`]), to that sink instead.
//!
//! A sink is never called on the thread that logged: the code that logs may hold an engine
//! lock, and a host's logger may block or call back into cuzk. Records are queued and
//! delivered by one thread (`cuzk-log`), one at a time and in order. Past [`QUEUE_LIMIT`]
//! waiting records new ones are dropped and counted ([`dropped`]); logging never blocks.

use std::{
    cell::Cell,
    collections::VecDeque,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, OnceLock,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use log::{Level, LevelFilter, Log, Metadata, Record};
use parking_lot::{Condvar, Mutex, RwLock};

/// Records waiting for the sink beyond which new ones are dropped.
pub const QUEUE_LIMIT: usize = 100_000;

/// How long [`set_sink`] waits for the records logged before it to reach the sink they were
/// logged for (a sink that never returns cannot hold the caller forever).
const DRAIN_WAIT: Duration = Duration::from_secs(5);

/// One log record, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub level: Level,
    /// The module (or explicit target) that logged it, e.g. `cuzk::engine`.
    pub target: String,
    pub message: String,
    /// Microseconds since the Unix epoch when it was logged.
    pub unix_us: u64,
}

/// A host's logger.
pub type LogSink = Arc<dyn Fn(&LogRecord) + Send + Sync>;

struct Queue {
    records: VecDeque<(u64, LogRecord)>,
    /// Sequence number of the next record queued.
    next: u64,
    /// Records before this sequence number have been delivered (or dropped at a sink change).
    delivered: u64,
    thread_started: bool,
}

struct Logger {
    /// `RUST_LOG` (default `warn`, or the level the host asked for when it set its sink).
    filter: RwLock<env_logger::Logger>,
    sink: RwLock<Option<LogSink>>,
    /// Held while a sink runs: a sink change waits on it, so that the old sink is not running
    /// when [`set_sink`] returns.
    calling: Mutex<()>,
    queue: Mutex<Queue>,
    ready: Condvar,
    progressed: Condvar,
    dropped: AtomicU64,
}

thread_local! {
    static ON_LOG_THREAD: Cell<bool> = const { Cell::new(false) };
}

static LOGGER: OnceLock<Logger> = OnceLock::new();
/// Whether the library's logger is the process's `log` logger.
static INSTALLED: AtomicBool = AtomicBool::new(false);

fn build_filter(default_level: LevelFilter) -> env_logger::Logger {
    env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or(default_level.as_str().to_ascii_lowercase()),
    )
    .build()
}

fn logger() -> &'static Logger {
    LOGGER.get_or_init(|| Logger {
        filter: RwLock::new(build_filter(LevelFilter::Warn)),
        sink: RwLock::new(None),
        calling: Mutex::new(()),
        queue: Mutex::new(Queue {
            records: VecDeque::new(),
            next: 0,
            delivered: 0,
            thread_started: false,
        }),
        ready: Condvar::new(),
        progressed: Condvar::new(),
        dropped: AtomicU64::new(0),
    })
}

/// Installs the library's logger as the process's `log` logger, once. Returns whether it is
/// installed (false where the process had a logger of its own).
pub fn install() -> bool {
    static ONCE: OnceLock<bool> = OnceLock::new();
    *ONCE.get_or_init(|| {
        let l = logger();
        let max = l.filter.read().filter();
        let ok = log::set_logger(l).is_ok();
        if ok {
            log::set_max_level(max);
        }
        INSTALLED.store(ok, Ordering::Release);
        ok
    })
}

/// Whether the library's logger receives the process's log records.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Acquire)
}

/// Records dropped because the sink fell behind.
pub fn dropped() -> u64 {
    LOGGER
        .get()
        .map_or(0, |l| l.dropped.load(Ordering::Relaxed))
}

/// Hands the library's records to `sink` (None: back to stderr). `default_level` applies where
/// `RUST_LOG` is not set (None keeps `warn`). From outside the sink, records logged before the
/// call are delivered first (to the sink they were logged for, waiting up to five seconds), and
/// when it returns the old sink is not running and is never called again. From inside a sink it
/// returns at once, and the old sink is not called after its running call.
pub fn set_sink(sink: Option<LogSink>, default_level: Option<LevelFilter>) {
    let l = logger();
    let on_log_thread = ON_LOG_THREAD.with(Cell::get);
    if !on_log_thread {
        let mut q = l.queue.lock();
        let target = q.next;
        let deadline = Instant::now() + DRAIN_WAIT;
        while q.delivered < target {
            if l.progressed.wait_until(&mut q, deadline).timed_out() {
                break;
            }
        }
    }
    let filter = build_filter(default_level.unwrap_or(LevelFilter::Warn));
    let max = filter.filter();
    *l.filter.write() = filter;
    if installed() {
        log::set_max_level(max);
    }
    if sink.is_some() {
        start_thread(l);
    }
    *l.sink.write() = sink;
    if !on_log_thread {
        // Wait for a call of the old sink in progress.
        drop(l.calling.lock());
    }
}

fn start_thread(l: &'static Logger) {
    let mut q = l.queue.lock();
    if q.thread_started {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("cuzk-log".into())
        .spawn(move || deliver_loop(l));
    q.thread_started = spawned.is_ok();
    if let Err(e) = spawned {
        eprintln!("cuzk: cannot start the log thread ({e}); logging to stderr");
    }
}

fn deliver_loop(l: &'static Logger) {
    ON_LOG_THREAD.with(|c| c.set(true));
    loop {
        let (seq, rec) = {
            let mut q = l.queue.lock();
            loop {
                if let Some(r) = q.records.pop_front() {
                    break r;
                }
                l.ready.wait(&mut q);
            }
        };
        {
            let _calling = l.calling.lock();
            let sink = l.sink.read().clone();
            match sink {
                Some(s) => {
                    // A panicking sink loses this record, never the thread.
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s(&rec))).is_err() {
                        l.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                }
                None => eprintln!("[{} {}] {}", rec.level, rec.target, rec.message),
            }
        }
        let mut q = l.queue.lock();
        q.delivered = seq + 1;
        drop(q);
        l.progressed.notify_all();
    }
}

impl Log for Logger {
    fn enabled(&self, m: &Metadata) -> bool {
        self.filter.read().enabled(m)
    }

    fn log(&self, r: &Record) {
        let filter = self.filter.read();
        if !filter.matches(r) {
            return;
        }
        if self.sink.read().is_none() {
            filter.log(r);
            return;
        }
        drop(filter);
        let rec = LogRecord {
            level: r.level(),
            target: r.target().to_string(),
            message: r.args().to_string(),
            unix_us: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as u64),
        };
        let mut q = self.queue.lock();
        if q.records.len() >= QUEUE_LIMIT {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let seq = q.next;
        q.next += 1;
        q.records.push_back((seq, rec));
        drop(q);
        self.ready.notify_one();
    }

    fn flush(&self) {
        self.filter.read().flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The logger is process-wide: the cases run in one test, in order.
    #[test]
    fn records_reach_the_sink_in_order_off_the_logging_thread_and_stop_when_it_is_removed() {
        // Unit tests run without another logger, so this one installs. The logger is the
        // process's: other tests of this binary log meanwhile (a caught panic's record), so
        // the sinks keep only this test's target.
        const T: &str = "cuzk::test";
        assert!(install());
        let got: Arc<Mutex<Vec<(LogRecord, bool)>>> = Arc::default();
        let g = got.clone();
        set_sink(
            Some(Arc::new(move |r: &LogRecord| {
                if r.target == T {
                    g.lock().push((r.clone(), ON_LOG_THREAD.with(Cell::get)))
                }
            })),
            Some(LevelFilter::Info),
        );
        for i in 0..100 {
            log::info!(target: T, "record {i}");
        }
        log::debug!(target: T, "below the level");
        // Removing the sink delivers what was logged before.
        set_sink(None, None);
        let got = std::mem::take(&mut *got.lock());
        if std::env::var_os("RUST_LOG").is_none() {
            assert_eq!(got.len(), 100, "{got:?}");
        }
        for (i, (r, on_thread)) in got.iter().enumerate() {
            assert_eq!(r.message, format!("record {i}"));
            assert_eq!(r.target, T);
            assert_eq!(r.level, Level::Info);
            assert!(*on_thread, "delivered on the log thread");
        }
        // A sink that panics loses its record, not the thread; one set from inside a sink
        // takes over at once.
        let second: Arc<Mutex<Vec<String>>> = Arc::default();
        let s2 = second.clone();
        set_sink(
            Some(Arc::new(move |r: &LogRecord| {
                if r.target != T {
                    return;
                }
                if r.message == "boom" {
                    panic!("sink panics");
                }
                if r.message == "switch" {
                    let s3 = s2.clone();
                    set_sink(
                        Some(Arc::new(move |r: &LogRecord| {
                            if r.target == T {
                                s3.lock().push(r.message.clone())
                            }
                        })),
                        Some(LevelFilter::Warn),
                    );
                }
            })),
            Some(LevelFilter::Warn),
        );
        let before = dropped();
        log::warn!(target: T, "boom");
        log::warn!(target: T, "switch");
        log::warn!(target: T, "after");
        set_sink(None, None);
        assert_eq!(dropped(), before + 1);
        if std::env::var_os("RUST_LOG").is_none() {
            assert_eq!(*second.lock(), vec!["after".to_string()]);
        }
    }
}
