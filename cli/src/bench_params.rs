//! `cuzk bench params`: random parameter generation, cuzk's (from the recording) against
//! bellperson's `generate_random_parameters` (what filecoin-proofs runs for missing test
//! parameters), same circuit, same machine, same run.

use std::{path::PathBuf, process::ExitCode, time::Instant};

use bellperson::groth16;
use blstrs::Bls12;
use clap::Args;
use cuzk::{porep, Error};
use filecoin_proofs::{
    DefaultPieceHasher, MerkleTreeTrait, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB,
    SectorShape64GiB, SectorShape8MiB,
};
use rand::SeedableRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::StackedCompound;

use crate::{
    tools::{
        fixture,
        paramgen::{self, Secrets},
        progress::Progress,
    },
    ShapeArgs,
};

/// Time cuzk's parameter generation (recording included) and, with --baseline, bellperson's
/// generator on the same circuit; both sets are written to a temporary directory and removed.
#[derive(Args)]
pub struct ParamsBenchArgs {
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Also run bellperson's generator (minutes to hours: ~20 min for 2KiB on 2 cores).
    #[arg(long)]
    pub baseline: bool,
    /// Directory for the temporary sets (default: the system's temporary directory).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn bellperson_tree<Tree: 'static + MerkleTreeTrait>(
    proof: filecoin_proofs_api::RegisteredSealProof,
    shape: &porep::Shape,
    out: &std::path::Path,
) -> Result<(), Error> {
    let pp = porep::public_params::<Tree>(proof, shape)?;
    let circuit =
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&pp);
    let mut rng = rand_xorshift::XorShiftRng::seed_from_u64(0x5eed);
    let params = groth16::generate_random_parameters::<Bls12, _, _>(circuit, &mut rng)
        .map_err(|e| Error::params(format!("bellperson's generator: {e}")))?;
    paramgen::write_atomically(out, |w| {
        params
            .write(w)
            .map_err(|e| Error::params(format!("writing {}: {e}", out.display())))
    })
}

pub fn params(args: ParamsBenchArgs) -> Result<ExitCode, Error> {
    let size = fixture::parse_sector_size(&args.sector_size)?;
    let proof = fixture::v1_1_proof(size)?;
    let fixture_shape = args.shape.shape();
    let shape = porep::shape_for(proof, fixture_shape)?;
    let base = args.work_dir.unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&base)
        .map_err(|e| Error::internal(format!("temporary directory in {}: {e}", base.display())))?;
    let t = Instant::now();
    let rec = fixture::record_circuit(proof, fixture_shape)?;
    let record_s = t.elapsed().as_secs_f64();
    let ours_file = dir.path().join("cuzk.params");
    let counts = paramgen::expected_counts(&rec);
    let progress = Progress::bar(
        "cuzk's generator",
        paramgen::work_units(&counts, rec.inputs),
        "points",
    );
    let t = Instant::now();
    let mut report = None;
    paramgen::write_atomically(&ours_file, |w| {
        let (_, r) = paramgen::write_params(&rec, &Secrets::marked(0x5eed), w, Some(&progress))?;
        report = Some(r);
        Ok(())
    })?;
    let gen_s = t.elapsed().as_secs_f64();
    progress.finish("done");
    let ours_s = record_s + gen_s;
    let report = report.expect("written");
    drop(rec);
    let _ = std::fs::remove_file(&ours_file);
    let baseline_s = if args.baseline {
        let progress = Progress::ticker("bellperson's generate_random_parameters", None);
        let out = dir.path().join("bellperson.params");
        let t = Instant::now();
        porep::with_tree_shape(
            shape.sector_size,
            || bellperson_tree::<SectorShape2KiB>(proof, &shape, &out),
            || bellperson_tree::<SectorShape8MiB>(proof, &shape, &out),
            || bellperson_tree::<SectorShape512MiB>(proof, &shape, &out),
            || bellperson_tree::<SectorShape32GiB>(proof, &shape, &out),
            || bellperson_tree::<SectorShape64GiB>(proof, &shape, &out),
        )??;
        let s = t.elapsed().as_secs_f64();
        progress.finish("done");
        let _ = std::fs::remove_file(&out);
        Some(s)
    } else {
        None
    };
    let threads = rayon::current_num_threads();
    println!(
        "cuzk: {ours_s:.1} s ({record_s:.1} s recording, {:.1} s evaluation at tau, {:.1} s points on {} and writing; {} points, {} MiB) on {threads} threads",
        report.eval_seconds,
        report.points_seconds,
        report.points_on,
        report.counts.iter().sum::<u64>(),
        report.bytes >> 20
    );
    if let Some(b) = baseline_s {
        println!("bellperson: {b:.1} s; cuzk is {:.1}x faster", b / ours_s);
    }
    if let Some(path) = &args.json {
        let v = serde_json::json!({
            "sector_size": size,
            "shape": { "partitions": shape.partitions, "layers": shape.layers },
            "threads": threads,
            "cuzk_seconds": ours_s,
            "record_seconds": record_s,
            "report": report,
            "bellperson_seconds": baseline_s,
            "ratio": baseline_s.map(|b| b / ours_s),
            "peak_rss_bytes": crate::peak_rss(),
        });
        crate::write_file(
            path,
            serde_json::to_string_pretty(&v).expect("json").as_bytes(),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
