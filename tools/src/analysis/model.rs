//! The analysis itself: partition spans, device busy time, classified idle gaps, synthesis
//! concurrency.

use std::collections::{BTreeMap, BTreeSet};

use cuzk::timeline::{Event, EventKind, NO_PARTITION};
use serde::Serialize;

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
    let (complete, incomplete, jobs) = partition_spans(&evs);

    // Devices, busy time and gaps.
    let mut by_dev: BTreeMap<u32, Vec<&PartitionSpan>> = BTreeMap::new();
    for s in &complete {
        by_dev.entry(s.device).or_default().push(s);
    }
    let run = (run_start_us, run_end_us);
    let mut devices = Vec::new();
    let mut gaps = Vec::new();
    for (dev, list) in by_dev {
        devices.push(device_stats(dev, list, &complete, run, &mut gaps));
    }
    let (conc, area) = synth_concurrency(&evs, run_start_us);
    let max_synth_concurrency = conc.iter().map(|c| c.1).max().unwrap_or(0);
    let run_len = (run_end_us - run_start_us).max(1) as f64;
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

/// Each partition's span from its events: the complete ones (all six events seen), how many
/// are incomplete, and every job seen.
fn partition_spans(evs: &[&Event]) -> (Vec<PartitionSpan>, usize, BTreeSet<u64>) {
    let mut spans: BTreeMap<(u64, u32), (PartitionSpan, u8)> = BTreeMap::new();
    let mut jobs = BTreeSet::new();
    for e in evs {
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

    (complete, incomplete, jobs)
}

/// Device `dev`'s busy time over the run (`run`: its first and last event, in µs) from the
/// partitions it proved (`list`), and its idle gaps, classed, pushed onto `gaps`.
fn device_stats(
    dev: u32,
    mut list: Vec<&PartitionSpan>,
    complete: &[PartitionSpan],
    (run_start_us, run_end_us): (u64, u64),
    gaps: &mut Vec<Gap>,
) -> DeviceStats {
    let run_len = (run_end_us - run_start_us).max(1) as f64;
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
    let stats = DeviceStats {
        device: dev,
        partitions: list.len(),
        busy_ms: busy as f64 / 1e3,
        busy_pct_run: 100.0 * busy as f64 / run_len,
        busy_pct_steady: 100.0 * busy as f64 / (last - first).max(1) as f64,
    };
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
    stats
}

/// Synthesis concurrency: +1 at each start, -1 at each end (aborted ones included), as steps
/// (time, level), and its area (level × µs) from `run_start_us`.
fn synth_concurrency(evs: &[&Event], run_start_us: u64) -> (Vec<(u64, u32)>, f64) {
    let mut deltas: Vec<(u64, i32)> = Vec::new();
    for e in evs {
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
    (conc, area)
}
