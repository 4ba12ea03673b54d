//! Status snapshots of the engine and their Prometheus form.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{health, health::DeviceStatus, Engine};

/// Counters for status reports.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) completed: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) cancelled: AtomicU64,
    pub(super) cpu_retries: AtomicU64,
    pub(super) synthesizing: AtomicU64,
    pub(super) proving: AtomicU64,
    /// Partitions whose recording gave a wrong assignment (synthesized in full instead).
    pub(super) pce_fallbacks: AtomicU64,
    /// Partitions whose proof failed the self-check (proved again on the CPU).
    pub(super) bad_proofs: AtomicU64,
    /// Witnesses the native generator made; partitions whose witness it did not make where
    /// the configuration asked it to (witness synthesis instead); circuits it was distrusted
    /// for.
    pub(super) native_witnesses: AtomicU64,
    pub(super) native_fallbacks: AtomicU64,
    pub(super) native_distrusted: AtomicU64,
    /// Partitions that waited for their circuit's recording rather than synthesize in full.
    pub(super) recording_waits: AtomicU64,
    /// Per class (`porep::Class` as index): submit-to-done milliseconds of its latest
    /// completed jobs (at most [`LATENCIES_KEPT`]), and its completed jobs in all.
    pub(super) class_latency: parking_lot::Mutex<[std::collections::VecDeque<u64>; 3]>,
    pub(super) class_done: [AtomicU64; 3],
}

/// Completed jobs per class whose latency the status's percentiles are taken over.
pub(super) const LATENCIES_KEPT: usize = 256;

/// The classes' names, by `porep::Class` as index.
const CLASS_NAMES: [&str; 3] = ["throughput", "window_post", "winning_post"];

impl Counters {
    /// Counts a completed job of class `class` that took `ms` from submission.
    pub(super) fn job_done(&self, class: usize, ms: u64) {
        self.class_done[class].fetch_add(1, Ordering::Relaxed);
        let mut l = self.class_latency.lock();
        if l[class].len() == LATENCIES_KEPT {
            l[class].pop_front();
        }
        l[class].push_back(ms);
    }
}

/// One class's queues and latency (WinningPoSt, WindowPoSt, PoRep and the other throughput
/// kinds: `porep::Class`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClassStatus {
    pub class: &'static str,
    /// Partitions of the class waiting for a synthesis worker or a prover.
    pub queued: u64,
    /// Jobs of the class completed.
    pub jobs_done: u64,
    /// Submission to result of its latest completed job, and the median and 99th percentile
    /// over its latest completed jobs (up to 256), in milliseconds.
    pub last_ms: Option<u64>,
    pub p50_ms: Option<u64>,
    pub p99_ms: Option<u64>,
}

/// A snapshot of the engine's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EngineStatus {
    pub running: bool,
    /// Jobs queued or running.
    pub jobs_in_flight: usize,
    /// Finished jobs whose result waits to be collected by an await (dropped after the
    /// retention period).
    pub jobs_retained: usize,
    /// Partitions waiting for a synthesis worker.
    pub synthesis_queue: usize,
    /// Partitions being synthesized.
    pub synthesizing: u64,
    /// Partitions synthesized, waiting for a prover.
    pub prover_queue: usize,
    /// Partitions being proved.
    pub proving: u64,
    pub memory_budget: u64,
    pub memory_reserved: u64,
    pub memory_peak: u64,
    /// Part of `memory_reserved` held by GPU calls the watchdog gave up on (until they
    /// return): counted as never coming back by the checks that refuse work that could never
    /// fit.
    pub memory_stuck: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Partitions a GPU failed on and the CPU proved instead.
    pub cpu_retries: u64,
    /// Partitions whose proof failed the self-check: synthesized in full and proved again on
    /// the CPU (a fault of the GPU that made it).
    pub bad_proofs: u64,
    /// Partitions a GPU failed on, waiting for (or being proved by) the CPU.
    pub cpu_retry_queue: usize,
    /// Timeline events dropped because the callbacks fell too far behind.
    pub timeline_events_dropped: u64,
    /// Log records dropped because the host's log callback fell too far behind.
    pub log_records_dropped: u64,
    /// Times a parameter file was checked (a remembered failure is not checked again until
    /// the file changes).
    pub params_checks: u64,
    pub resident_params: Vec<String>,
    /// Recorded circuits in memory, and their bytes (part of `memory_reserved`).
    pub pce_resident: usize,
    pub pce_resident_bytes: u64,
    /// Recordings being loaded or made now.
    pub pce_working: usize,
    /// Recordings loaded from disk, recorded, files rejected (truncated, corrupted, of
    /// another circuit), recordings given up after a wrong assignment.
    pub pce_loaded: u64,
    pub pce_recorded: u64,
    pub pce_rejected_files: u64,
    pub pce_distrusted: u64,
    /// Circuits whose recording made in this process gave a wrong assignment a second time
    /// (recorded again after the first): a fault of the circuit, full synthesis for it until
    /// restart.
    pub pce_circuit_faults: u64,
    /// Partitions synthesized in full after their recording gave a wrong assignment.
    pub pce_fallbacks: u64,
    /// Witnesses made by the native generator; partitions whose witness it was asked for and
    /// did not make (an unsupported circuit, a refused or distrusted result: witness
    /// synthesis instead); circuits it was distrusted for (its witness failed the
    /// recording's row check where witness synthesis's passed).
    pub native_witnesses: u64,
    pub native_fallbacks: u64,
    pub native_distrusted: u64,
    /// Partitions that waited for their circuit's recording (being loaded or made) rather
    /// than synthesize in full.
    pub recording_waits: u64,
    /// Parameter sets in use whose partitions, sent to the CPU (a fallback from the GPUs),
    /// could not reserve their host memory beside what is never given back meanwhile (a
    /// streamed card's pinned copy, resident sets): such a partition would fail its job with
    /// RESOURCE_EXHAUSTED. Admission says the same per proof type (`cpu_fallback_fits`).
    pub cpu_fallback_unfit: Vec<String>,
    /// Per class, highest first: queued partitions, completed jobs, latency.
    pub classes: Vec<ClassStatus>,
    pub devices: Vec<DeviceStatus>,
}

/// One metric of the Prometheus exposition: its name, type, help, and samples (labels, value).
struct Metric {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: Vec<(String, f64)>,
}

impl Metric {
    fn new(
        name: &'static str,
        kind: &'static str,
        help: &'static str,
        samples: Vec<(String, f64)>,
    ) -> Metric {
        Metric {
            name,
            kind,
            help,
            samples,
        }
    }
}

/// One unlabelled sample.
fn one(v: f64) -> Vec<(String, f64)> {
    vec![(String::new(), v)]
}

impl EngineStatus {
    /// The status as Prometheus text exposition.
    pub fn prometheus(&self) -> String {
        let mut s = String::new();
        let metrics = [
            self.job_metrics(),
            self.synthesis_metrics(),
            self.queue_metrics(),
            self.class_metrics(),
            self.device_metrics(),
        ];
        for m in metrics.iter().flatten() {
            s.push_str(&format!(
                "# HELP {0} {1}\n# TYPE {0} {2}\n",
                m.name, m.help, m.kind
            ));
            for (labels, v) in &m.samples {
                s.push_str(&format!("{}{labels} {v}\n", m.name));
            }
        }
        s
    }

    /// Jobs, and the faults partitions met.
    fn job_metrics(&self) -> Vec<Metric> {
        vec![
            Metric::new(
                "cuzk_up",
                "gauge",
                "1 while the engine runs.",
                one(self.running as u8 as f64),
            ),
            Metric::new(
                "cuzk_jobs_completed_total",
                "counter",
                "Jobs that returned a verified proof.",
                one(self.completed as f64),
            ),
            Metric::new(
                "cuzk_jobs_failed_total",
                "counter",
                "Jobs that ended with an error.",
                one(self.failed as f64),
            ),
            Metric::new(
                "cuzk_jobs_cancelled_total",
                "counter",
                "Jobs cancelled.",
                one(self.cancelled as f64),
            ),
            Metric::new(
                "cuzk_partitions_cpu_retried_total",
                "counter",
                "Partitions a GPU failed on, proved again on the CPU.",
                one(self.cpu_retries as f64),
            ),
            Metric::new(
                "cuzk_partitions_bad_proof_total",
                "counter",
                "Partitions whose proof failed the self-check, synthesized in full and proved again on the CPU.",
                one(self.bad_proofs as f64),
            ),
            Metric::new(
                "cuzk_log_records_dropped_total",
                "counter",
                "Log records dropped because the host's log callback fell behind.",
                one(self.log_records_dropped as f64),
            ),
        ]
    }

    /// Recordings, native witnesses, results kept, the CPU retries and dropped events.
    fn synthesis_metrics(&self) -> Vec<Metric> {
        vec![
            Metric::new(
                "cuzk_pce_recordings",
                "gauge",
                "Recorded circuits in memory.",
                one(self.pce_resident as f64),
            ),
            Metric::new(
                "cuzk_pce_bytes",
                "gauge",
                "Bytes held by recorded circuits (part of the reserved memory).",
                one(self.pce_resident_bytes as f64),
            ),
            Metric::new(
                "cuzk_pce_events_total",
                "counter",
                "Recordings loaded, recorded, files rejected, recordings distrusted, partitions synthesized in full after a wrong assignment, partitions that waited for their recording.",
                vec![
                    ("{event=\"loaded\"}".into(), self.pce_loaded as f64),
                    ("{event=\"recorded\"}".into(), self.pce_recorded as f64),
                    ("{event=\"rejected_file\"}".into(), self.pce_rejected_files as f64),
                    ("{event=\"distrusted\"}".into(), self.pce_distrusted as f64),
                    ("{event=\"fallback\"}".into(), self.pce_fallbacks as f64),
                    ("{event=\"waited\"}".into(), self.recording_waits as f64),
                ],
            ),
            Metric::new(
                "cuzk_pce_circuit_faults_total",
                "counter",
                "Circuits whose recording made in this process gave a wrong assignment a second time (full synthesis for them until restart).",
                one(self.pce_circuit_faults as f64),
            ),
            Metric::new(
                "cuzk_native_witness_total",
                "counter",
                "Witnesses made by the native generator, partitions that fell back to witness synthesis, circuits it was distrusted for.",
                vec![
                    ("{event=\"made\"}".into(), self.native_witnesses as f64),
                    ("{event=\"fallback\"}".into(), self.native_fallbacks as f64),
                    ("{event=\"distrusted\"}".into(), self.native_distrusted as f64),
                ],
            ),
            Metric::new(
                "cuzk_jobs_retained",
                "gauge",
                "Finished jobs whose result has not been collected yet.",
                one(self.jobs_retained as f64),
            ),
            Metric::new(
                "cuzk_cpu_retry_queue",
                "gauge",
                "Partitions a GPU failed on, waiting for or being proved by the CPU.",
                one(self.cpu_retry_queue as f64),
            ),
            Metric::new(
                "cuzk_timeline_events_dropped_total",
                "counter",
                "Timeline events dropped because the callbacks fell behind.",
                one(self.timeline_events_dropped as f64),
            ),
        ]
    }

    /// Jobs and partitions in flight, and the memory budget.
    fn queue_metrics(&self) -> Vec<Metric> {
        vec![
            Metric::new(
                "cuzk_jobs_in_flight",
                "gauge",
                "Jobs submitted and not finished.",
                one(self.jobs_in_flight as f64),
            ),
            Metric::new(
                "cuzk_partitions",
                "gauge",
                "Partitions by state.",
                vec![
                    ("{state=\"queued\"}".into(), self.synthesis_queue as f64),
                    ("{state=\"synthesizing\"}".into(), self.synthesizing as f64),
                    ("{state=\"ready\"}".into(), self.prover_queue as f64),
                    ("{state=\"proving\"}".into(), self.proving as f64),
                ],
            ),
            Metric::new(
                "cuzk_memory_budget_bytes",
                "gauge",
                "Memory budget.",
                one(self.memory_budget as f64),
            ),
            Metric::new(
                "cuzk_memory_reserved_bytes",
                "gauge",
                "Memory reserved now.",
                one(self.memory_reserved as f64),
            ),
            Metric::new(
                "cuzk_memory_reserved_peak_bytes",
                "gauge",
                "Highest reservation.",
                one(self.memory_peak as f64),
            ),
            Metric::new(
                "cuzk_params_resident",
                "gauge",
                "Parameter sets in memory.",
                one(self.resident_params.len() as f64),
            ),
        ]
    }

    /// Per deadline class, and the parameter sets a CPU fallback could not hold.
    fn class_metrics(&self) -> Vec<Metric> {
        let class = |f: &dyn Fn(&ClassStatus) -> Option<f64>| -> Vec<(String, f64)> {
            self.classes
                .iter()
                .filter_map(|c| f(c).map(|v| (format!("{{class=\"{}\"}}", c.class), v)))
                .collect()
        };
        vec![
            Metric::new(
                "cuzk_class_queued_partitions",
                "gauge",
                "Partitions of the class waiting for a synthesis worker or a prover.",
                class(&|c| Some(c.queued as f64)),
            ),
            Metric::new(
                "cuzk_class_jobs_done_total",
                "counter",
                "Jobs of the class completed.",
                class(&|c| Some(c.jobs_done as f64)),
            ),
            Metric::new(
                "cuzk_class_latency_p99_seconds",
                "gauge",
                "99th percentile of submission to result over the class's latest completed jobs.",
                class(&|c| c.p99_ms.map(|ms| ms as f64 / 1e3)),
            ),
            Metric::new(
                "cuzk_params_cpu_fallback_unfit",
                "gauge",
                "Parameter sets whose partitions could not be proved on the CPU beside the memory \
                 held now (a fallback from the GPUs would fail).",
                one(self.cpu_fallback_unfit.len() as f64),
            ),
        ]
    }

    /// Per prover device.
    fn device_metrics(&self) -> Vec<Metric> {
        let dev = |f: &dyn Fn(&DeviceStatus) -> f64| -> Vec<(String, f64)> {
            self.devices
                .iter()
                .enumerate()
                .map(|(i, d)| (format!("{{device=\"{i}\",name=\"{}\"}}", d.name), f(d)))
                .collect()
        };
        vec![
            Metric::new(
                "cuzk_device_busy",
                "gauge",
                "1 while the device proves a partition.",
                dev(&|d| d.current.is_some() as u8 as f64),
            ),
            Metric::new(
                "cuzk_device_enabled",
                "gauge",
                "1 while the device is in service.",
                dev(&|d| d.enabled as u8 as f64),
            ),
            Metric::new(
                "cuzk_device_consecutive_failures",
                "gauge",
                "Prover calls failed in a row on the device (3 take it out of service).",
                dev(&|d| d.consecutive_failures as f64),
            ),
            Metric::new(
                "cuzk_device_failed_calls_total",
                "counter",
                "Prover calls that failed on the device.",
                dev(&|d| d.failed_calls as f64),
            ),
            Metric::new(
                "cuzk_device_no_room_total",
                "counter",
                "Partitions the device had no device memory for at that moment (they wait for its room, then go elsewhere).",
                dev(&|d| d.no_room as f64),
            ),
            Metric::new(
                "cuzk_device_passed_over_total",
                "counter",
                "Partitions the device can never take (a card too small for the circuit, a plan of compact witnesses only), proved elsewhere.",
                dev(&|d| d.passed_over as f64),
            ),
            Metric::new(
                "cuzk_device_room_waits_total",
                "counter",
                "Partitions put back in the queue to wait for the device's room (another process held its memory).",
                dev(&|d| d.room_waits as f64),
            ),
            Metric::new(
                "cuzk_device_waiting_for_room_seconds",
                "gauge",
                "How long the device has been waiting for room (0 while it is not).",
                dev(&|d| d.waiting_for_room_ms.unwrap_or(0) as f64 / 1e3),
            ),
            Metric::new(
                "cuzk_device_hung_calls_total",
                "counter",
                "Calls the watchdog gave up on (far past their expected time); their partitions \
                 were synthesized again for the other devices.",
                dev(&|d| d.hung_calls as f64),
            ),
            Metric::new(
                "cuzk_device_readmissions_total",
                "counter",
                "Times the device was put back in service after a passed probe.",
                dev(&|d| d.readmissions as f64),
            ),
            Metric::new(
                "cuzk_device_partitions_total",
                "counter",
                "Partitions proved by the device.",
                dev(&|d| d.partitions_proved as f64),
            ),
        ]
    }
}

/// The classes' queues and latencies, highest class first.
fn classes(i: &super::Inner) -> Vec<ClassStatus> {
    let mut queued = [0u64; 3];
    i.synth_q
        .for_each(|k, _| queued[(k.class as usize).min(2)] += 1);
    i.prove_q
        .for_each(|k, _| queued[(k.class as usize).min(2)] += 1);
    let lat = i.counters.class_latency.lock().clone();
    (0..3)
        .rev()
        .map(|c| {
            let mut v: Vec<u64> = lat[c].iter().copied().collect();
            v.sort_unstable();
            let pct = |p: usize| (!v.is_empty()).then(|| v[(v.len() * p / 100).min(v.len() - 1)]);
            ClassStatus {
                class: CLASS_NAMES[c],
                queued: queued[c],
                jobs_done: i.counters.class_done[c].load(Ordering::Relaxed),
                last_ms: lat[c].back().copied(),
                p50_ms: pct(50),
                p99_ms: pct(99),
            }
        })
        .collect()
}

impl Engine {
    /// A snapshot of the engine (also drops finished jobs past their retention).
    pub fn status(&self) -> EngineStatus {
        let i = &self.inner;
        i.jobs.reap();
        let (jobs_in_flight, jobs_retained) = i.jobs.counts();
        let pce = i.pce.stats();
        let mut devices = i.devices.lock().clone();
        for (d, at) in devices.iter_mut().zip(health::probe_in_ms(i)) {
            d.probe_in_ms = at;
        }
        for (b, wait) in i.room_wait.iter().enumerate() {
            let since = wait.lock().since;
            let n = i.backends[b].devices().len();
            for d in devices.iter_mut().skip(i.slot_base[b]).take(n) {
                d.waiting_for_room_ms = since.map(|t| t.elapsed().as_millis() as u64);
            }
        }
        EngineStatus {
            running: i.running.load(Ordering::Acquire),
            jobs_in_flight,
            jobs_retained,
            synthesis_queue: i.synth_q.len(),
            synthesizing: i.counters.synthesizing.load(Ordering::Relaxed),
            prover_queue: i.prove_q.len(),
            proving: i.counters.proving.load(Ordering::Relaxed),
            memory_budget: i.budget.total(),
            memory_reserved: i.budget.used(),
            memory_peak: i.budget.peak(),
            memory_stuck: i.budget.stuck(),
            completed: i.counters.completed.load(Ordering::Relaxed),
            failed: i.counters.failed.load(Ordering::Relaxed),
            cancelled: i.counters.cancelled.load(Ordering::Relaxed),
            cpu_retries: i.counters.cpu_retries.load(Ordering::Relaxed),
            bad_proofs: i.counters.bad_proofs.load(Ordering::Relaxed),
            cpu_retry_queue: i.retry_q.len(),
            timeline_events_dropped: i.timeline.dropped(),
            log_records_dropped: crate::logging::dropped(),
            params_checks: i.srs.checks(),
            pce_resident: pce.resident,
            pce_working: pce.working,
            pce_resident_bytes: pce.resident_bytes,
            pce_loaded: pce.loaded,
            pce_recorded: pce.recorded,
            pce_rejected_files: pce.rejected_files,
            pce_distrusted: pce.distrusted,
            pce_circuit_faults: pce.circuit_faults,
            pce_fallbacks: i.counters.pce_fallbacks.load(Ordering::Relaxed),
            native_witnesses: i.counters.native_witnesses.load(Ordering::Relaxed),
            native_fallbacks: i.counters.native_fallbacks.load(Ordering::Relaxed),
            native_distrusted: i.counters.native_distrusted.load(Ordering::Relaxed),
            recording_waits: i.counters.recording_waits.load(Ordering::Relaxed),
            resident_params: i.srs.resident(),
            classes: classes(i),
            cpu_fallback_unfit: i
                .srs
                .ready()
                .into_iter()
                .filter(|(_, srs)| {
                    super::admission::cpu_fallback(i, srs).is_some_and(|(_, fits)| !fits)
                })
                .map(|(id, _)| id)
                .collect(),
            devices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exposition a scraper reads: each metric once, its HELP and TYPE before its samples,
    /// every sample line `name{labels} value` of a declared metric. The hazard: a metric
    /// declared twice or a sample without its TYPE makes Prometheus reject the whole scrape.
    #[test]
    fn the_exposition_declares_each_metric_once_before_its_samples() {
        let st = EngineStatus {
            running: true,
            completed: 3,
            classes: vec![ClassStatus {
                class: "window_post",
                p99_ms: Some(1500),
                ..Default::default()
            }],
            devices: vec![DeviceStatus {
                name: "cuda:0".into(),
                enabled: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        let text = st.prometheus();
        let mut declared: Vec<&str> = Vec::new();
        let mut samples = 0;
        let mut lines = text.lines().peekable();
        while let Some(l) = lines.next() {
            if let Some(rest) = l.strip_prefix("# HELP ") {
                let name = rest.split(' ').next().unwrap();
                assert!(!declared.contains(&name), "{name} declared twice");
                let ty = lines.next().unwrap();
                assert!(
                    ty == format!("# TYPE {name} gauge") || ty == format!("# TYPE {name} counter"),
                    "{ty}"
                );
                declared.push(name);
                continue;
            }
            let (series, value) = l.rsplit_once(' ').unwrap();
            let name = series.split('{').next().unwrap();
            assert_eq!(
                Some(&name),
                declared.last(),
                "{l}: a sample of another metric"
            );
            value.parse::<f64>().unwrap();
            samples += 1;
        }
        assert_eq!(declared.len(), 36, "{declared:?}");
        assert!(text.contains("\ncuzk_up 1\n") && text.contains("cuzk_jobs_completed_total 3\n"));
        assert!(text.contains("cuzk_class_latency_p99_seconds{class=\"window_post\"} 1.5\n"));
        assert!(text.contains("cuzk_device_enabled{device=\"0\",name=\"cuda:0\"} 1\n"));
        assert!(samples > 40, "{samples}");
    }
}
