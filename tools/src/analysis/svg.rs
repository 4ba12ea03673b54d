//! The SVG waterfall, and a well-formedness check of what is written.

use std::collections::{BTreeMap, BTreeSet};

use svg::{
    node::element::{Line, Path, Rectangle, Text, Title},
    Document,
};

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

/// Where things go on the waterfall: the lanes (synthesis workers, then prover devices), the
/// time scale and the jobs' colours.
struct Frame {
    left: f64,
    width: f64,
    lane_h: f64,
    top: f64,
    conc_top: f64,
    conc_h: f64,
    run_start_us: u64,
    span_us: f64,
    synth_lanes: BTreeSet<u32>,
    dev_lanes: BTreeSet<u32>,
    job_index: BTreeMap<u64, usize>,
}

impl Frame {
    fn new(a: &Analysis) -> Frame {
        let synth_lanes: BTreeSet<u32> = a.partitions.iter().map(|p| p.synth_worker).collect();
        let dev_lanes: BTreeSet<u32> = a.partitions.iter().map(|p| p.device).collect();
        let (top, lane_h) = (50.0, 26.0);
        let lanes = (synth_lanes.len() + dev_lanes.len()) as f64;
        Frame {
            left: 110.0,
            width: 1100.0,
            lane_h,
            top,
            conc_top: top + lanes * lane_h + 30.0,
            conc_h: 60.0,
            run_start_us: a.run_start_us,
            span_us: (a.run_end_us - a.run_start_us).max(1) as f64,
            synth_lanes,
            dev_lanes,
            job_index: a.jobs.iter().enumerate().map(|(i, j)| (*j, i)).collect(),
        }
    }

    fn lanes(&self) -> usize {
        self.synth_lanes.len() + self.dev_lanes.len()
    }

    fn x(&self, t: u64) -> f64 {
        self.left + self.width * (t.saturating_sub(self.run_start_us)) as f64 / self.span_us
    }

    fn lane_of_synth(&self, w: u32) -> f64 {
        self.synth_lanes.iter().position(|v| *v == w).unwrap_or(0) as f64
    }

    fn lane_of_dev(&self, d: u32) -> f64 {
        (self.synth_lanes.len() + self.dev_lanes.iter().position(|v| *v == d).unwrap_or(0)) as f64
    }

    fn colour(&self, job: u64) -> &'static str {
        PALETTE[self.job_index.get(&job).copied().unwrap_or(0) % PALETTE.len()]
    }
}

/// An SVG waterfall: one lane per synthesis worker and per prover device, one bar per
/// partition coloured by job, the prover's idle gaps marked by class under its lane, and the
/// synthesis concurrency as a step chart at the bottom.
pub fn waterfall_svg(a: &Analysis, title: &str) -> String {
    let f = Frame::new(a);
    let height = f.conc_top + f.conc_h + 70.0;
    let doc = Document::new()
        .set(
            "viewBox",
            (0, 0, (f.left + f.width + 20.0) as i64, height as i64),
        )
        .set("width", (f.left + f.width + 20.0) as i64)
        .set("height", height as i64)
        .set("font-family", "sans-serif")
        .set("font-size", 11);
    let doc = heading(doc, a, &f, title);
    let doc = lanes(doc, &f);
    let doc = time_axis(doc, &f);
    let doc = bars(doc, a, &f);
    let doc = gaps(doc, a, &f);
    let doc = concurrency(doc, a, &f);
    legend(doc, a, &f).to_string()
}

/// The white ground, the title and each device's busy share.
fn heading(mut doc: Document, a: &Analysis, f: &Frame, title: &str) -> Document {
    doc = doc.add(
        Rectangle::new()
            .set("width", "100%")
            .set("height", "100%")
            .set("fill", "white"),
    );
    doc = doc.add(
        Text::new(title.to_string())
            .set("x", f.left)
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
    doc = doc.add(Text::new(busy.join(", ")).set("x", f.left).set("y", 36));

    doc
}

/// Lane labels and separators.
fn lanes(mut doc: Document, f: &Frame) -> Document {
    for (i, w) in f.synth_lanes.iter().enumerate() {
        let y = f.top + i as f64 * f.lane_h;
        doc = doc.add(
            Text::new(format!("synth {w}"))
                .set("x", 8)
                .set("y", y + f.lane_h * 0.65),
        );
    }
    for (i, d) in f.dev_lanes.iter().enumerate() {
        let y = f.top + (f.synth_lanes.len() + i) as f64 * f.lane_h;
        doc = doc.add(
            Text::new(format!("prover {d}"))
                .set("x", 8)
                .set("y", y + f.lane_h * 0.65)
                .set("font-weight", "bold"),
        );
    }
    for i in 0..=f.lanes() {
        let y = f.top + i as f64 * f.lane_h;
        doc = doc.add(
            Line::new()
                .set("x1", f.left)
                .set("x2", f.left + f.width)
                .set("y1", y)
                .set("y2", y)
                .set("stroke", "#e0e0e0"),
        );
    }
    doc
}

/// The time axis: a line and a label every round step, about a dozen in all.
fn time_axis(mut doc: Document, f: &Frame) -> Document {
    let secs = f.span_us / 1e6;
    let step = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
    ]
    .into_iter()
    .find(|s| secs / s <= 12.0)
    .unwrap_or(1200.0);
    let mut t = 0.0;
    while t <= secs + 1e-9 {
        let xx = f.left + f.width * t / secs.max(1e-9);
        doc = doc.add(
            Line::new()
                .set("x1", xx)
                .set("x2", xx)
                .set("y1", f.top)
                .set("y2", f.conc_top + f.conc_h)
                .set("stroke", "#f0f0f0"),
        );
        doc = doc.add(
            Text::new(format!("{t:.1}s"))
                .set("x", xx)
                .set("y", f.conc_top + f.conc_h + 14.0)
                .set("text-anchor", "middle"),
        );
        t += step;
    }
    doc
}

/// A bar per partition in its synthesis worker's lane and in its prover's.
fn bars(mut doc: Document, a: &Analysis, f: &Frame) -> Document {
    for p in &a.partitions {
        for (lane, s, e, kind) in [
            (
                f.lane_of_synth(p.synth_worker),
                p.synth_start_us,
                p.synth_end_us,
                "synthesis",
            ),
            (
                f.lane_of_dev(p.device),
                p.gpu_start_us,
                p.gpu_end_us,
                "prove",
            ),
        ] {
            let y = f.top + lane * f.lane_h + 3.0;
            let w = (f.x(e) - f.x(s)).max(1.0);
            let mut r = Rectangle::new()
                .set("x", f.x(s))
                .set("y", y)
                .set("width", w)
                .set("height", f.lane_h - 10.0)
                .set("fill", f.colour(p.job))
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
                        .set("x", f.x(s) + 3.0)
                        .set("y", y + f.lane_h * 0.5)
                        .set("fill", "white")
                        .set("font-size", 10),
                );
            }
        }
    }
    doc
}

/// The prover's idle gaps (over the noise floor) under its lane, coloured by class.
fn gaps(mut doc: Document, a: &Analysis, f: &Frame) -> Document {
    for g in a.gaps.iter().filter(|g| g.end_us - g.start_us >= NOISE_US) {
        let y = f.top + (f.lane_of_dev(g.device) + 1.0) * f.lane_h - 6.0;
        let r = Rectangle::new()
            .set("x", f.x(g.start_us))
            .set("y", y)
            .set("width", (f.x(g.end_us) - f.x(g.start_us)).max(1.0))
            .set("height", 5.0)
            .set("fill", gap_colour(g.class))
            .add(Title::new(format!("idle {:.1} ms ({:?})", g.ms(), g.class)));
        doc = doc.add(r);
    }
    doc
}

/// Synthesis concurrency as a step chart.
fn concurrency(mut doc: Document, a: &Analysis, f: &Frame) -> Document {
    let maxc = a.max_synth_concurrency.max(1) as f64;
    let base = f.conc_top + f.conc_h;
    let mut level_y = base;
    let mut d = format!("M {} {base}", f.x(a.run_start_us));
    for (t, c) in &a.synth_concurrency {
        let y = base - f.conc_h * *c as f64 / maxc;
        d.push_str(&format!(" L {} {level_y} L {} {y}", f.x(*t), f.x(*t)));
        level_y = y;
    }
    d.push_str(&format!(
        " L {} {level_y} L {} {base} Z",
        f.x(a.run_end_us),
        f.x(a.run_end_us)
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
        .set("x", f.left)
        .set("y", f.conc_top - 4.0),
    );
    doc
}

/// The gap classes' colours, then the first ten jobs'.
fn legend(mut doc: Document, a: &Analysis, f: &Frame) -> Document {
    let ly = f.conc_top + f.conc_h + 34.0;
    let mut lx = f.left;
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
                .set("fill", f.colour(*j)),
        );
        doc = doc.add(
            Text::new(format!("job {j}"))
                .set("x", lx + 18.0)
                .set("y", ly),
        );
        lx += 60.0;
    }
    doc
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
