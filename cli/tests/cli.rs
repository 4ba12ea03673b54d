//! The `cuzk` binary itself (its own crate's integration tests, where Cargo names the binary).

/// `cuzk params gen` refuses to write a production-size random set where a node reads
/// parameters.
#[test]
fn params_gen_refuses_a_nodes_parameter_directory_for_production_sizes() {
    let bin = env!("CARGO_BIN_EXE_cuzk");
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], cache: &std::path::Path| {
        std::process::Command::new(bin)
            .args(args)
            .env("FIL_PROOFS_PARAMETER_CACHE", cache)
            .output()
            .unwrap()
    };
    for args in [
        vec!["params", "gen", "--sector-size", "32GiB"],
        vec![
            "--params-dir",
            dir.path().to_str().unwrap(),
            "params",
            "gen",
            "--sector-size",
            "64GiB",
        ],
    ] {
        let out = run(&args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("refusing to write random"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
