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

/// Every `cuzk …` command line the README and docs/ show (in code blocks and in back-quotes)
/// names subcommands and flags the binary has: its `--help` at that level lists each flag. The
/// hazard: a reader copies a documented command and the CLI refuses it.
#[test]
fn documented_command_lines_name_subcommands_and_flags_the_cli_has() {
    let bin = env!("CARGO_BIN_EXE_cuzk");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut pages = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            pages.push(p);
        }
    }
    let help = |path: &[&str]| -> String {
        let out = std::process::Command::new(bin)
            .args(path)
            .arg("--help")
            .output()
            .unwrap();
        assert!(out.status.success(), "cuzk {path:?} --help failed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let subcommands = |h: &str| -> Vec<String> {
        h.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    };
    let top = help(&[]);
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let mut lines: Vec<String> = Vec::new();
        let mut in_block = false;
        for l in text.lines() {
            if l.trim_start().starts_with("```") {
                in_block = !in_block;
            } else if in_block {
                lines.push(l.split(" # ").next().unwrap().to_string());
            } else {
                lines.extend(l.split('`').skip(1).step_by(2).map(str::to_string));
            }
        }
        for line in lines {
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(start) = words
                .iter()
                .position(|w| *w == "cuzk" || w.ends_with("/cuzk") || *w == "$CUZK")
            else {
                continue;
            };
            let words = &words[start + 1..];
            if words.is_empty()
                || words[0].starts_with(|c: char| !c.is_ascii_alphanumeric() && c != '-')
            {
                continue;
            }
            // The subcommand path, then every flag checked against the help of its level (or
            // the top level's, for the global `--params-dir`).
            let mut path: Vec<&str> = Vec::new();
            let mut h = top.clone();
            let mut rest = words;
            while let Some((w, tail)) = rest.split_first() {
                if w.starts_with('-') {
                    // A global flag before the subcommand takes a value.
                    rest = tail.get(1..).unwrap_or(&[]);
                    continue;
                }
                if !subcommands(&h).iter().any(|s| s == w) {
                    break;
                }
                path.push(w);
                h = help(&path);
                rest = tail;
            }
            if path.is_empty() && !words.iter().all(|w| w.starts_with('-')) {
                panic!("{}: `{line}` names no subcommand of cuzk", page.display());
            }
            for w in words {
                let flag = w.trim_start_matches('[').trim_end_matches([']', ',', '.']);
                let flag = flag.split('=').next().unwrap();
                if !flag.starts_with('-') || flag == "-" || flag.starts_with("---") {
                    continue;
                }
                let listed = |h: &str| {
                    h.contains(&format!("{flag} "))
                        || h.contains(&format!("{flag},"))
                        || h.contains(&format!("{flag}\n"))
                };
                assert!(
                    listed(&h) || listed(&top),
                    "{}: `{line}`: cuzk {} has no flag {flag}",
                    page.display(),
                    path.join(" ")
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 20,
        "only {checked} command lines found: is the scan broken?"
    );
}

/// `cuzk params gen --recording-dir` puts the circuit's recording there and not beside the
/// parameters (a disk that holds a 32 GiB WindowPoSt set has no room for its recording), and a
/// directory it cannot make is refused before any parameters are generated.
#[test]
fn params_gen_saves_the_recording_where_recording_dir_says() {
    let bin = env!("CARGO_BIN_EXE_cuzk");
    let params = tempfile::tempdir().unwrap();
    let recs = tempfile::tempdir().unwrap();
    let rec_dir = recs.path().join("pce");
    let gen = |rec_dir: &std::path::Path| {
        std::process::Command::new(bin)
            .args(["--params-dir", params.path().to_str().unwrap()])
            .args([
                "params",
                "gen",
                "--kind",
                "winning-post",
                "--sector-size",
                "2KiB",
            ])
            .args(["--recording-dir", rec_dir.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .map(|r| {
                r.map(|e| e.unwrap().file_name().into_string().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let blocked = params.path().join("a-file");
    std::fs::write(&blocked, b"x").unwrap();
    let out = gen(&blocked.join("pce"));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--recording-dir"),
        "{out:?}"
    );
    assert_eq!(names(params.path()), vec!["a-file".to_string()]);

    let out = gen(&rec_dir);
    assert!(out.status.success(), "{out:?}");
    let recorded = names(&rec_dir);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(recorded[0].ends_with(".cuzk-pce"), "{recorded:?}");
    let beside = names(params.path());
    assert!(beside.iter().any(|n| n.ends_with(".params")), "{beside:?}");
    assert!(
        !beside.iter().any(|n| n.ends_with(".cuzk-pce")),
        "{beside:?}"
    );
}

/// `params srs` writes a marked SnarkPack SRS where filecoin-proofs reads it (in --params-dir),
/// bellperson reads it, and a second call never overwrites it.
#[test]
fn params_srs_writes_a_marked_srs_once() {
    let bin = env!("CARGO_BIN_EXE_cuzk");
    let params = tempfile::tempdir().unwrap();
    let srs = || {
        std::process::Command::new(bin)
            .args(["--params-dir", params.path().to_str().unwrap()])
            .args(["params", "srs", "--proofs", "13"])
            .output()
            .unwrap()
    };
    let out = srs();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = params.path().join("v28-fil-inner-product-v1.srs");
    let read = bellperson::groth16::aggregate::GenericSRS::<blstrs::Bls12>::read(
        &mut std::fs::File::open(&path).unwrap(),
    )
    .unwrap();
    assert_eq!(read.g_alpha_powers.len(), 32, "13 proofs: 16, twice");
    assert!(cuzk::porep::aggregate::is_random_srs(&path).unwrap());
    let before = std::fs::read(&path).unwrap();
    let again = srs();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("refusing to overwrite"));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// `params gen --kind snap` makes the update circuit's set under filecoin-proofs' name for it
/// (the id the engine looks for); an unknown kind is refused, naming the kinds.
#[test]
fn params_gen_makes_the_update_circuits_set() {
    let bin = env!("CARGO_BIN_EXE_cuzk");
    let params = tempfile::tempdir().unwrap();
    let gen = |kind: &str| {
        std::process::Command::new(bin)
            .args(["--params-dir", params.path().to_str().unwrap()])
            .args(["params", "gen", "--kind", kind, "--sector-size", "2KiB"])
            .arg("--no-recording")
            .output()
            .unwrap()
    };
    let out = gen("snap");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = cuzk::snap::params_id_for(cuzk::snap::UpdateProof::StackedDrg2KiBV1).unwrap();
    for f in [
        cuzk::params::params_path(params.path(), &id),
        cuzk::params::vk_path(params.path(), &id),
    ] {
        assert!(f.exists(), "{} missing", f.display());
    }
    let out = gen("snap-deals");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("porep, window-post, winning-post or snap"),
        "{err}"
    );
}
