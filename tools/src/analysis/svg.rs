//! The SVG waterfall, and a well-formedness check of what is written.

use std::collections::{BTreeMap, BTreeSet};

use super::{Analysis, GapClass, NOISE_US};

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
