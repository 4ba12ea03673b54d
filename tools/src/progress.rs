//! Progress of long work on the command line (parameter generation, sealing fixtures,
//! benchmarks), on stderr: a bar where the total is known, a ticking line with the elapsed time
//! and an estimate where it is not. The redrawn line is for terminals only; anywhere else (CI
//! logs, files) the same information comes as plain lines: one at the start, one every
//! [`PLAIN_EVERY`], one at the end.

use std::{
    io::{IsTerminal, Write},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use parking_lot::{Condvar, Mutex};

/// How often a plain (not a terminal) progress line is written.
pub const PLAIN_EVERY: Duration = Duration::from_secs(30);
/// How often the terminal line is redrawn.
const REDRAW_EVERY: Duration = Duration::from_millis(250);

struct State {
    phase: String,
    estimate: Option<Duration>,
    done: bool,
}

struct Shared {
    what: String,
    /// Total steps and their unit, for a bar.
    total: Option<(u64, String)>,
    pos: AtomicU64,
    start: Instant,
    tty: bool,
    state: Mutex<State>,
    wake: Condvar,
}

/// One piece of long work being shown; ends with [`Progress::finish`] (or on drop).
pub struct Progress {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// "1h02m", "3m05s", "12.3s".
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

impl Shared {
    fn line(&self) -> String {
        let st = self.state.lock();
        let elapsed = self.start.elapsed();
        let mut out = self.what.clone();
        if let Some((total, unit)) = &self.total {
            let pos = self.pos.load(Ordering::Relaxed).min(*total);
            let width = 30usize;
            let filled = (pos as usize * width)
                .checked_div(*total as usize)
                .unwrap_or(width);
            let bar: String = (0..width)
                .map(|i| match i.cmp(&filled) {
                    std::cmp::Ordering::Less => '=',
                    std::cmp::Ordering::Equal => '>',
                    std::cmp::Ordering::Greater => ' ',
                })
                .collect();
            out += &format!(" [{bar}] {pos}/{total} {unit}, {} elapsed", human(elapsed));
            if pos > 0 && pos < *total {
                let left = elapsed.mul_f64((*total - pos) as f64 / pos as f64);
                out += &format!(", ~{} left", human(left));
            }
        } else {
            if !st.phase.is_empty() {
                out += &format!(": {}", st.phase);
            }
            out += &format!(", {} elapsed", human(elapsed));
            match st.estimate {
                Some(e) if elapsed < e => {
                    out += &format!(" (estimate {}, ~{} left)", human(e), human(e - elapsed))
                }
                Some(e) => out += &format!(" (estimate {} passed, still working)", human(e)),
                None => {}
            }
        }
        out
    }
}

fn draw_loop(s: Arc<Shared>) {
    let every = if s.tty { REDRAW_EVERY } else { PLAIN_EVERY };
    let mut st = s.state.lock();
    while !st.done {
        if s.wake.wait_for(&mut st, every).timed_out() && !st.done {
            drop(st);
            let line = s.line();
            let mut err = std::io::stderr().lock();
            if s.tty {
                let _ = write!(err, "\r\x1b[2K{line}");
            } else {
                let _ = writeln!(err, "{line}");
            }
            let _ = err.flush();
            st = s.state.lock();
        }
    }
}

impl Progress {
    fn start(what: &str, total: Option<(u64, String)>, estimate: Option<Duration>) -> Progress {
        let shared = Arc::new(Shared {
            what: what.to_string(),
            total,
            pos: AtomicU64::new(0),
            start: Instant::now(),
            tty: std::io::stderr().is_terminal(),
            state: Mutex::new(State {
                phase: String::new(),
                estimate,
                done: false,
            }),
            wake: Condvar::new(),
        });
        if !shared.tty {
            eprintln!("{}", shared.line());
        }
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("cuzk-progress".into())
            .spawn(move || draw_loop(s))
            .ok();
        Progress { shared, thread }
    }

    /// A bar for `total` steps of `unit` ("proofs", "partitions").
    pub fn bar(what: &str, total: u64, unit: &str) -> Progress {
        Self::start(what, Some((total, unit.to_string())), None)
    }

    /// A ticking line for work of unknown length, with an estimate when there is one.
    pub fn ticker(what: &str, estimate: Option<Duration>) -> Progress {
        Self::start(what, None, estimate)
    }

    /// Advances a bar by `n` steps.
    pub fn inc(&self, n: u64) {
        self.shared.pos.fetch_add(n, Ordering::Relaxed);
    }

    /// What the work is doing now ("step 2/4: pre-commit phase 1").
    pub fn phase(&self, phase: &str) {
        self.shared.state.lock().phase = phase.to_string();
        if !self.shared.tty {
            eprintln!("{}", self.shared.line());
        }
    }

    pub fn estimate(&self, e: Duration) {
        self.shared.state.lock().estimate = Some(e);
    }

    fn stop(&mut self) {
        self.shared.state.lock().done = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Stops the redrawing and writes the last line: what the work was, then `end`.
    fn end(&mut self, end: &str) {
        self.stop();
        let clear = if self.shared.tty { "\r\x1b[2K" } else { "" };
        eprintln!("{clear}{}: {end}", self.shared.what);
    }

    /// Ends the line with `outcome` and the time taken.
    pub fn finish(mut self, outcome: &str) {
        let took = human(self.shared.start.elapsed());
        self.end(&format!("{outcome} in {took}"));
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // Not finished (an error ended the work).
        if self.thread.is_some() {
            let took = human(self.shared.start.elapsed());
            self.end(&format!("stopped after {took}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_show_the_bar_the_phase_and_the_estimate() {
        let p = Progress::bar("bench", 4, "proofs");
        p.inc(1);
        let l = p.shared.line();
        assert!(l.starts_with("bench [=======>"), "{l}");
        assert!(l.contains("1/4 proofs") && l.contains("left"), "{l}");
        p.finish("done");
        let t = Progress::ticker("generating", Some(Duration::from_secs(3600)));
        t.phase("step 1/2");
        let l = t.shared.line();
        assert!(l.starts_with("generating: step 1/2, "), "{l}");
        assert!(l.contains("(estimate 1h00m, ~59m"), "{l}");
        t.estimate(Duration::ZERO);
        assert!(t.shared.line().contains("passed, still working"));
        assert_eq!(human(Duration::from_secs(185)), "3m05s");
    }
}
