//! Timeline analysis: where did the prover (GPU) wait, and why?
//!
//! Input: engine events (live, or parsed back from `TIMELINE,...` log lines or a JSON dump).
//! Output: the event table, per-partition synthesis / proving durations, prover busy % over the
//! run and over steady state, every prover idle gap classified, synthesis concurrency over
//! time, and an SVG waterfall.

mod model;
mod parse;
mod report;
mod svg;

pub use model::{analyze, Analysis, DeviceStats, Gap, GapClass, PartitionSpan};
pub use parse::{parse_any, parse_log};
pub use report::{devices_and_gaps, event_table, report};
pub use svg::{check_svg, waterfall_svg};

/// Gaps shorter than this are hand-over noise: not listed, not drawn.
const NOISE_US: u64 = 1000;
