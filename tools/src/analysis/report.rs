//! Text reports: the event table and the human summary.

use cuzk::timeline::Event;

use super::{Analysis, Gap, GapClass, NOISE_US};

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
    s.push_str(&devices_and_gaps(a));
    s
}

/// The devices' busy time, the idle gaps and synthesis concurrency (the summary's last part).
pub fn devices_and_gaps(a: &Analysis) -> String {
    let mut s = String::new();
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
