//! Timeline analysis: where did the prover (GPU) wait, and why?
//!
//! Input: engine events (live, or parsed back from `TIMELINE,...` log lines or a JSON dump).
//! Output: the event table, per-partition synthesis / proving durations, prover busy % over the
//! run and over steady state, every prover idle gap classified, synthesis concurrency over
//! time, and an SVG waterfall.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use cuzk::timeline::{Event, EventKind, NO_PARTITION};

/// Parses `TIMELINE,<ms>,<EVENT>,<job>,<detail>` lines (other lines are skipped; a malformed
/// TIMELINE line is an error naming its line number).
pub fn parse_log(text: &str) -> Result<Vec<Event>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(pos) = line.find("TIMELINE,") else {
            continue;
        };
        let line = &line[pos..];
        let parts: Vec<&str> = line.splitn(5, ',').collect();
        let bad = |why: &str| format!("line {}: {why}: {line}", n + 1);
        if parts.len() < 4 {
            return Err(bad("too few fields"));
        }
        let ms: f64 = parts[1].parse().map_err(|_| bad("bad time"))?;
        let kind = EventKind::from_name(parts[2]).ok_or_else(|| bad("unknown event"))?;
        let job: u64 = parts[3].parse().map_err(|_| bad("bad job id"))?;
        let mut ev = Event {
            kind,
            t_us: (ms * 1000.0).round() as u64,
            job,
            partition: NO_PARTITION,
            worker: 0,
            value: 0,
            detail: String::new(),
        };
        let mut rest = Vec::new();
        for kv in parts
            .get(4)
            .copied()
            .unwrap_or("")
            .split(';')
            .filter(|s| !s.is_empty())
        {
            match kv.split_once('=') {
                Some(("partition", v)) => {
                    ev.partition = v.parse().map_err(|_| bad("bad partition"))?
                }
                Some(("worker" | "device", v)) => {
                    ev.worker = v.parse().map_err(|_| bad("bad worker"))?
                }
                Some(("reserved_bytes" | "synth_ms" | "gpu_ms" | "partitions" | "ms", v)) => {
                    ev.value = v.parse().map_err(|_| bad("bad value"))?
                }
                _ => rest.push(kv),
            }
        }
        ev.detail = rest.join(";");
        out.push(ev);
    }
    Ok(out)
}

/// Reads events from a file's text: a JSON array of events, or log lines.
pub fn parse_any(text: &str) -> Result<Vec<Event>, String> {
    let t = text.trim_start();
    if t.starts_with('[') {
        serde_json::from_str(t).map_err(|e| format!("JSON events: {e}"))
    } else {
        parse_log(text)
    }
}

/// One partition's life.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PartitionSpan {
    pub job: u64,
    pub partition: u32,
    pub synth_worker: u32,
    pub device: u32,
    pub synth_start_us: u64,
    pub synth_end_us: u64,
    pub sent_us: u64,
    pub pickup_us: u64,
    pub gpu_start_us: u64,
    pub gpu_end_us: u64,
}

impl PartitionSpan {
    pub fn synth_ms(&self) -> f64 {
        (self.synth_end_us.saturating_sub(self.synth_start_us)) as f64 / 1e3
    }
    pub fn gpu_ms(&self) -> f64 {
        (self.gpu_end_us.saturating_sub(self.gpu_start_us)) as f64 / 1e3
    }
    /// Ready but not yet picked up by a prover.
    pub fn wait_ms(&self) -> f64 {
        (self.pickup_us.saturating_sub(self.sent_us)) as f64 / 1e3
    }
}

/// Why a prover was idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GapClass {
    /// Before the device's first partition.
    StartUp,
    /// Waiting for another partition of a job it had already started proving.
    WithinProof,
    /// Waiting for the first partition of a new job.
    CrossProof,
    /// After the device's last partition, until the end of the run.
    Drain,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Gap {
    pub device: u32,
    pub start_us: u64,
    pub end_us: u64,
    pub class: GapClass,
    /// The job the device proved next (none for drain).
    pub next_job: Option<u64>,
}

impl Gap {
    pub fn ms(&self) -> f64 {
        (self.end_us - self.start_us) as f64 / 1e3
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DeviceStats {
    pub device: u32,
    pub partitions: usize,
    pub busy_ms: f64,
    /// Busy share of the whole run (first event to last event).
    pub busy_pct_run: f64,
    /// Busy share from the device's first GPU_START to its last GPU_END.
    pub busy_pct_steady: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Analysis {
    pub run_start_us: u64,
    pub run_end_us: u64,
    pub partitions: Vec<PartitionSpan>,
    pub devices: Vec<DeviceStats>,
    pub gaps: Vec<Gap>,
    /// (time, partitions being synthesized) at every change.
    pub synth_concurrency: Vec<(u64, u32)>,
    pub max_synth_concurrency: u32,
    /// Time-weighted mean number of partitions being synthesized, over the run.
    pub mean_synth_concurrency: f64,
    pub jobs: Vec<u64>,
    /// Partitions missing one of their events (incomplete or abandoned).
    pub incomplete: usize,
}

impl Analysis {
    pub fn gap_ms(&self, class: GapClass) -> f64 {
        self.gaps
            .iter()
            .filter(|g| g.class == class)
            .map(Gap::ms)
            .sum()
    }
}

/// Analyses an event stream (any order).
pub fn analyze(events: &[Event]) -> Analysis {
    let mut evs: Vec<&Event> = events.iter().collect();
    evs.sort_by_key(|e| e.t_us);
    let run_start_us = evs.first().map_or(0, |e| e.t_us);
    let run_end_us = evs.last().map_or(0, |e| e.t_us);

    let mut spans: BTreeMap<(u64, u32), (PartitionSpan, u8)> = BTreeMap::new();
    let mut jobs = BTreeSet::new();
    for e in &evs {
        jobs.insert(e.job);
        if e.partition == NO_PARTITION {
            continue;
        }
        let (s, seen) = spans.entry((e.job, e.partition)).or_insert_with(|| {
            (
                PartitionSpan {
                    job: e.job,
                    partition: e.partition,
                    ..Default::default()
                },
                0,
            )
        });
        let bit = match e.kind {
            EventKind::SynthStart => {
                s.synth_start_us = e.t_us;
                s.synth_worker = e.worker;
                1
            }
            EventKind::SynthEnd => {
                s.synth_end_us = e.t_us;
                if e.detail == "aborted" {
                    0
                } else {
                    2
                }
            }
            EventKind::ChanSend => {
                s.sent_us = e.t_us;
                4
            }
            EventKind::GpuPickup => {
                s.pickup_us = e.t_us;
                s.device = e.worker;
                8
            }
            EventKind::GpuStart => {
                s.gpu_start_us = e.t_us;
                16
            }
            EventKind::GpuEnd => {
                s.gpu_end_us = e.t_us;
                32
            }
            _ => 0,
        };
        *seen |= bit;
    }
    let incomplete = spans.values().filter(|(_, b)| *b != 63).count();
    let complete: Vec<PartitionSpan> = spans
        .into_values()
        .filter(|(_, b)| *b == 63)
        .map(|(s, _)| s)
        .collect();

    // Devices, busy time and gaps.
    let mut by_dev: BTreeMap<u32, Vec<&PartitionSpan>> = BTreeMap::new();
    for s in &complete {
        by_dev.entry(s.device).or_default().push(s);
    }
    let run_len = (run_end_us - run_start_us).max(1) as f64;
    let mut devices = Vec::new();
    let mut gaps = Vec::new();
    for (dev, mut list) in by_dev {
        list.sort_by_key(|s| s.gpu_start_us);
        // Union of the spans: partitions proved together in one batch overlap.
        let mut busy: u64 = 0;
        let mut until = 0u64;
        for s in &list {
            let start = s.gpu_start_us.max(until);
            if s.gpu_end_us > start {
                busy += s.gpu_end_us - start;
            }
            until = until.max(s.gpu_end_us);
        }
        let first = list[0].gpu_start_us;
        let last = list.iter().map(|s| s.gpu_end_us).max().unwrap_or(first);
        devices.push(DeviceStats {
            device: dev,
            partitions: list.len(),
            busy_ms: busy as f64 / 1e3,
            busy_pct_run: 100.0 * busy as f64 / run_len,
            busy_pct_steady: 100.0 * busy as f64 / (last - first).max(1) as f64,
        });
        if first > run_start_us {
            gaps.push(Gap {
                device: dev,
                start_us: run_start_us,
                end_us: first,
                class: GapClass::StartUp,
                next_job: Some(list[0].job),
            });
        }
        // Jobs this device's prover pool had begun (any device) before a gap.
        let mut started: BTreeSet<u64> = BTreeSet::new();
        let mut busy_until = list[0].gpu_end_us;
        started.insert(list[0].job);
        for s in list.iter().skip(1) {
            if s.gpu_start_us > busy_until {
                let job_started = complete
                    .iter()
                    .any(|o| o.job == s.job && o.gpu_end_us <= busy_until)
                    || started.contains(&s.job);
                gaps.push(Gap {
                    device: dev,
                    start_us: busy_until,
                    end_us: s.gpu_start_us,
                    class: if job_started {
                        GapClass::WithinProof
                    } else {
                        GapClass::CrossProof
                    },
                    next_job: Some(s.job),
                });
            }
            started.insert(s.job);
            busy_until = busy_until.max(s.gpu_end_us);
        }
        if run_end_us > busy_until {
            gaps.push(Gap {
                device: dev,
                start_us: busy_until,
                end_us: run_end_us,
                class: GapClass::Drain,
                next_job: None,
            });
        }
    }

    // Synthesis concurrency: +1 at each start, -1 at each end (aborted ones included).
    let mut deltas: Vec<(u64, i32)> = Vec::new();
    for e in &evs {
        match e.kind {
            EventKind::SynthStart => deltas.push((e.t_us, 1)),
            EventKind::SynthEnd => deltas.push((e.t_us, -1)),
            _ => {}
        }
    }
    deltas.sort_by_key(|d| (d.0, d.1));
    let mut level = 0i32;
    let mut conc = Vec::new();
    let mut area = 0f64;
    let mut prev_t = run_start_us;
    for (t, d) in deltas {
        area += level.max(0) as f64 * (t - prev_t) as f64;
        prev_t = t;
        level += d;
        conc.push((t, level.max(0) as u32));
    }
    let max_synth_concurrency = conc.iter().map(|c| c.1).max().unwrap_or(0);

    Analysis {
        run_start_us,
        run_end_us,
        partitions: complete,
        devices,
        gaps,
        synth_concurrency: conc,
        max_synth_concurrency,
        mean_synth_concurrency: area / run_len,
        jobs: jobs.into_iter().collect(),
        incomplete,
    }
}

/// The event table: Job, Event, Time(s), Detail.
pub fn event_table(events: &[Event]) -> String {
    let mut evs: Vec<&Event> = events.iter().collect();
    evs.sort_by_key(|e| e.t_us);
    let mut s = format!(
        "{:>6}  {:<13}  {:>10}  {}\n",
        "Job", "Event", "Time(s)", "Detail"
    );
    for e in evs {
        let line = cuzk::timeline::log_line(e);
        let detail = line.splitn(5, ',').nth(4).unwrap_or("");
        s.push_str(&format!(
            "{:>6}  {:<13}  {:>10.3}  {}\n",
            e.job,
            e.kind.name(),
            e.t_us as f64 / 1e6,
            detail
        ));
    }
    s
}

/// Gaps shorter than this are hand-over noise: not listed, not drawn.
const NOISE_US: u64 = 1000;
/// How many gaps the report lists.
const LIST_GAPS: usize = 20;

/// Human summary: per-partition durations, devices, gaps.
pub fn report(a: &Analysis) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "run {:.3} s, {} jobs, {} partitions complete ({} incomplete)\n\n",
        (a.run_end_us - a.run_start_us) as f64 / 1e6,
        a.jobs.len(),
        a.partitions.len(),
        a.incomplete
    ));
    s.push_str(&format!(
        "{:>6} {:>5} {:>6} {:>10} {:>9} {:>6} {:>9}\n",
        "job", "part", "synthW", "synth_ms", "wait_ms", "device", "gpu_ms"
    ));
    for p in &a.partitions {
        s.push_str(&format!(
            "{:>6} {:>5} {:>6} {:>10.0} {:>9.0} {:>6} {:>9.0}\n",
            p.job,
            p.partition,
            p.synth_worker,
            p.synth_ms(),
            p.wait_ms(),
            p.device,
            p.gpu_ms()
        ));
    }
    s.push('\n');
    for d in &a.devices {
        s.push_str(&format!(
            "device {}: {} partitions, busy {:.1} s = {:.1}% of the run, {:.1}% in steady state\n",
            d.device,
            d.partitions,
            d.busy_ms / 1e3,
            d.busy_pct_run,
            d.busy_pct_steady
        ));
    }
    s.push_str(&format!(
        "idle gaps: start-up {:.1} s, within-proof {:.1} s, cross-proof {:.1} s, drain {:.1} s ({} gaps)\n",
        a.gap_ms(GapClass::StartUp) / 1e3,
        a.gap_ms(GapClass::WithinProof) / 1e3,
        a.gap_ms(GapClass::CrossProof) / 1e3,
        a.gap_ms(GapClass::Drain) / 1e3,
        a.gaps.len()
    ));
    // The longest gaps of at least a millisecond (shorter ones are scheduling noise).
    let mut long: Vec<&Gap> = a
        .gaps
        .iter()
        .filter(|g| g.end_us - g.start_us >= NOISE_US)
        .collect();
    long.sort_by_key(|g| std::cmp::Reverse(g.end_us - g.start_us));
    if long.len() > LIST_GAPS {
        s.push_str(&format!(
            "  the {LIST_GAPS} longest of {} gaps >= 1 ms:\n",
            long.len()
        ));
    }
    for g in long.iter().take(LIST_GAPS) {
        s.push_str(&format!(
            "  device {} {:>9.3}..{:>9.3} s  {:>9.1} ms  {:?}{}\n",
            g.device,
            g.start_us as f64 / 1e6,
            g.end_us as f64 / 1e6,
            g.ms(),
            g.class,
            g.next_job
                .map(|j| format!(" (next: job {j})"))
                .unwrap_or_default()
        ));
    }
    s.push_str(&format!(
        "synthesis concurrency: max {}, mean {:.2}\n",
        a.max_synth_concurrency, a.mean_synth_concurrency
    ));
    s
}

const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#af7aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

fn gap_colour(c: GapClass) -> &'static str {
    match c {
        GapClass::StartUp => "#9e9e9e",
        GapClass::WithinProof => "#d62728",
        GapClass::CrossProof => "#ff7f0e",
        GapClass::Drain => "#cfcfcf",
    }
}

/// An SVG waterfall: one lane per synthesis worker and per prover device, one bar per
/// partition coloured by job, the prover's idle gaps marked by class under its lane, and the
/// synthesis concurrency as a step chart at the bottom.
pub fn waterfall_svg(a: &Analysis, title: &str) -> String {
    use svg::{
        node::element::{Line, Path, Rectangle, Text, Title},
        Document,
    };
    let left = 110.0;
    let width = 1100.0;
    let lane_h = 26.0;
    let top = 50.0;
    let span = (a.run_end_us - a.run_start_us).max(1) as f64;
    let x = |t: u64| left + width * (t.saturating_sub(a.run_start_us)) as f64 / span;
    let synth_lanes: BTreeSet<u32> = a.partitions.iter().map(|p| p.synth_worker).collect();
    let dev_lanes: BTreeSet<u32> = a.partitions.iter().map(|p| p.device).collect();
    let lane_of_synth = |w: u32| synth_lanes.iter().position(|v| *v == w).unwrap_or(0) as f64;
    let lane_of_dev =
        |d: u32| (synth_lanes.len() + dev_lanes.iter().position(|v| *v == d).unwrap_or(0)) as f64;
    let lanes = (synth_lanes.len() + dev_lanes.len()) as f64;
    let conc_top = top + lanes * lane_h + 30.0;
    let conc_h = 60.0;
    let height = conc_top + conc_h + 70.0;
    let job_index: BTreeMap<u64, usize> = a.jobs.iter().enumerate().map(|(i, j)| (*j, i)).collect();
    let colour = |job: u64| PALETTE[job_index.get(&job).copied().unwrap_or(0) % PALETTE.len()];

    let mut doc = Document::new()
        .set(
            "viewBox",
            (0, 0, (left + width + 20.0) as i64, height as i64),
        )
        .set("width", (left + width + 20.0) as i64)
        .set("height", height as i64)
        .set("font-family", "sans-serif")
        .set("font-size", 11);
    doc = doc.add(
        Rectangle::new()
            .set("width", "100%")
            .set("height", "100%")
            .set("fill", "white"),
    );
    doc = doc.add(
        Text::new(title.to_string())
            .set("x", left)
            .set("y", 20)
            .set("font-size", 14)
            .set("font-weight", "bold"),
    );
    let busy: Vec<String> = a
        .devices
        .iter()
        .map(|d| {
            format!(
                "device {} busy {:.0}% (steady {:.0}%)",
                d.device, d.busy_pct_run, d.busy_pct_steady
            )
        })
        .collect();
    doc = doc.add(Text::new(busy.join(", ")).set("x", left).set("y", 36));

    // Lane labels and separators.
    for (i, w) in synth_lanes.iter().enumerate() {
        let y = top + i as f64 * lane_h;
        doc = doc.add(
            Text::new(format!("synth {w}"))
                .set("x", 8)
                .set("y", y + lane_h * 0.65),
        );
    }
    for (i, d) in dev_lanes.iter().enumerate() {
        let y = top + (synth_lanes.len() + i) as f64 * lane_h;
        doc = doc.add(
            Text::new(format!("prover {d}"))
                .set("x", 8)
                .set("y", y + lane_h * 0.65)
                .set("font-weight", "bold"),
        );
    }
    for i in 0..=lanes as usize {
        let y = top + i as f64 * lane_h;
        doc = doc.add(
            Line::new()
                .set("x1", left)
                .set("x2", left + width)
                .set("y1", y)
                .set("y2", y)
                .set("stroke", "#e0e0e0"),
        );
    }
    // Time axis.
    let secs = span / 1e6;
    let step = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
    ]
    .into_iter()
    .find(|s| secs / s <= 12.0)
    .unwrap_or(1200.0);
    let mut t = 0.0;
    while t <= secs + 1e-9 {
        let xx = left + width * t / secs.max(1e-9);
        doc = doc.add(
            Line::new()
                .set("x1", xx)
                .set("x2", xx)
                .set("y1", top)
                .set("y2", conc_top + conc_h)
                .set("stroke", "#f0f0f0"),
        );
        doc = doc.add(
            Text::new(format!("{t:.1}s"))
                .set("x", xx)
                .set("y", conc_top + conc_h + 14.0)
                .set("text-anchor", "middle"),
        );
        t += step;
    }
    // Bars.
    for p in &a.partitions {
        for (lane, s, e, kind) in [
            (
                lane_of_synth(p.synth_worker),
                p.synth_start_us,
                p.synth_end_us,
                "synthesis",
            ),
            (lane_of_dev(p.device), p.gpu_start_us, p.gpu_end_us, "prove"),
        ] {
            let y = top + lane * lane_h + 3.0;
            let w = (x(e) - x(s)).max(1.0);
            let mut r = Rectangle::new()
                .set("x", x(s))
                .set("y", y)
                .set("width", w)
                .set("height", lane_h - 10.0)
                .set("fill", colour(p.job))
                .set("stroke", "#333")
                .set("stroke-width", 0.4);
            r = r.add(Title::new(format!(
                "job {} partition {} {kind}: {:.3}..{:.3} s ({:.0} ms)",
                p.job,
                p.partition,
                (s - a.run_start_us) as f64 / 1e6,
                (e - a.run_start_us) as f64 / 1e6,
                (e - s) as f64 / 1e3
            )));
            doc = doc.add(r);
            if w > 34.0 {
                doc = doc.add(
                    Text::new(format!("j{}p{}", p.job, p.partition))
                        .set("x", x(s) + 3.0)
                        .set("y", y + lane_h * 0.5)
                        .set("fill", "white")
                        .set("font-size", 10),
                );
            }
        }
    }
    // Gaps under the prover lanes.
    for g in a.gaps.iter().filter(|g| g.end_us - g.start_us >= NOISE_US) {
        let y = top + (lane_of_dev(g.device) + 1.0) * lane_h - 6.0;
        let r = Rectangle::new()
            .set("x", x(g.start_us))
            .set("y", y)
            .set("width", (x(g.end_us) - x(g.start_us)).max(1.0))
            .set("height", 5.0)
            .set("fill", gap_colour(g.class))
            .add(Title::new(format!("idle {:.1} ms ({:?})", g.ms(), g.class)));
        doc = doc.add(r);
    }
    // Synthesis concurrency step chart.
    let maxc = a.max_synth_concurrency.max(1) as f64;
    let base = conc_top + conc_h;
    let mut level_y = base;
    let mut d = format!("M {} {base}", x(a.run_start_us));
    for (t, c) in &a.synth_concurrency {
        let y = base - conc_h * *c as f64 / maxc;
        d.push_str(&format!(" L {} {level_y} L {} {y}", x(*t), x(*t)));
        level_y = y;
    }
    d.push_str(&format!(
        " L {} {level_y} L {} {base} Z",
        x(a.run_end_us),
        x(a.run_end_us)
    ));
    doc = doc.add(
        Path::new()
            .set("d", d)
            .set("fill", "#c7d7ea")
            .set("stroke", "#4e79a7"),
    );
    doc = doc.add(
        Text::new(format!(
            "synthesis concurrency (max {}, mean {:.2})",
            a.max_synth_concurrency, a.mean_synth_concurrency
        ))
        .set("x", left)
        .set("y", conc_top - 4.0),
    );
    // Legend.
    let ly = conc_top + conc_h + 34.0;
    let mut lx = left;
    for (name, c) in [
        ("start-up", GapClass::StartUp),
        ("within-proof gap", GapClass::WithinProof),
        ("cross-proof gap", GapClass::CrossProof),
        ("drain", GapClass::Drain),
    ] {
        doc = doc.add(
            Rectangle::new()
                .set("x", lx)
                .set("y", ly - 9.0)
                .set("width", 14)
                .set("height", 9)
                .set("fill", gap_colour(c)),
        );
        doc = doc.add(Text::new(name).set("x", lx + 18.0).set("y", ly));
        lx += 130.0;
    }
    for j in a.jobs.iter().take(10) {
        doc = doc.add(
            Rectangle::new()
                .set("x", lx)
                .set("y", ly - 9.0)
                .set("width", 14)
                .set("height", 9)
                .set("fill", colour(*j)),
        );
        doc = doc.add(
            Text::new(format!("job {j}"))
                .set("x", lx + 18.0)
                .set("y", ly),
        );
        lx += 60.0;
    }
    doc.to_string()
}

/// Checks that an SVG document parses and its tags balance (what `cuzk waterfall` writes is
/// checked with it before it is written).
pub fn check_svg(s: &str) -> Result<(), String> {
    use svg::{node::element::tag::Type, parser::Event as E};
    let mut depth = 0i64;
    let mut tags = 0usize;
    for e in svg::read(s).map_err(|e| e.to_string())? {
        match e {
            E::Error(e) => return Err(format!("malformed SVG: {e}")),
            E::Tag(_, Type::Start, _) => depth += 1,
            E::Tag(_, Type::End, _) => depth -= 1,
            E::Tag(_, Type::Empty, _) => {}
            _ => continue,
        }
        tags += 1;
        if depth < 0 {
            return Err("unbalanced SVG: a closing tag without its opening tag".into());
        }
    }
    if depth != 0 || tags == 0 {
        return Err(format!(
            "unbalanced or empty SVG (depth {depth}, {tags} tags)"
        ));
    }
    Ok(())
}
