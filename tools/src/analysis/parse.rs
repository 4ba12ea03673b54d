//! Reading events back from `TIMELINE,...` log lines or a JSON dump.

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
