//! `cuzk waterfall`: analyse a timeline file.

use std::{path::PathBuf, process::ExitCode};

use clap::Args;
use cuzk::Error;

use crate::{tools::analysis, write_file};

/// Analyse a timeline (TIMELINE log lines or a JSON event dump): event table, per-partition
/// durations, prover busy %, classified idle gaps, synthesis concurrency, SVG waterfall.
#[derive(Args)]
pub struct WaterfallArgs {
    pub file: PathBuf,
    /// SVG output.
    #[arg(long, default_value = "cuzk-waterfall.svg")]
    pub svg: PathBuf,
    /// Also print the full event table.
    #[arg(long)]
    pub events: bool,
    /// Write the analysis as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn waterfall(args: WaterfallArgs) -> Result<ExitCode, Error> {
    let WaterfallArgs {
        file,
        svg,
        events,
        json,
    } = args;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| Error::invalid_argument(format!("cannot read {}: {e}", file.display())))?;
    let evs = analysis::parse_any(&text).map_err(Error::invalid_input)?;
    if evs.is_empty() {
        return Err(Error::invalid_input(format!(
            "no timeline events in {}",
            file.display()
        )));
    }
    if events {
        print!("{}", analysis::event_table(&evs));
        println!();
    }
    let a = analysis::analyze(&evs);
    print!("{}", analysis::report(&a));
    let picture = analysis::waterfall_svg(&a, &format!("cuzk timeline: {}", file.display()));
    analysis::check_svg(&picture).map_err(Error::internal)?;
    write_file(&svg, picture.as_bytes())?;
    println!("waterfall: {}", svg.display());
    if let Some(j) = json {
        write_file(&j, &serde_json::to_vec_pretty(&a).expect("json"))?;
    }
    Ok(ExitCode::SUCCESS)
}
