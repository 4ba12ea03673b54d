//! The documentation cannot drift from the code it describes: `docs/configuration.md` lists
//! every environment variable the code reads and every configuration field of the Rust, C and
//! Go APIs, and names nothing that is no longer read. The hazard: an operator sets a variable
//! the engine stopped reading, or never learns of one it reads.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, exts, out);
        } else if p
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| exts.contains(&x))
        {
            out.push(p);
        }
    }
}

/// The sources whose environment the page documents: the library, the kernels, the tools, the
/// command line, the build script and the Go module (its tests included).
fn sources() -> Vec<(PathBuf, String)> {
    let r = root();
    let mut paths = vec![r.join("build.rs")];
    for (dir, exts) in [
        ("src", &["rs"][..]),
        ("kernels", &["cu", "cuh", "h"][..]),
        ("tools/src", &["rs"][..]),
        ("cli/src", &["rs"][..]),
        ("go-bindings", &["go"][..]),
    ] {
        files(&r.join(dir), exts, &mut paths);
    }
    paths
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, text)
        })
        .collect()
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'
}

/// Whole string literals `"NAME"` of an upper-case name.
fn literals(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices('"') {
        let rest = &text[i + 1..];
        let end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        if end > 0 && rest[end..].starts_with('"') {
            out.insert(rest[..end].to_string());
        }
    }
    out
}

/// The variables the sources read: every `"CUZK_…"` literal (a prefix ending in `_` builds
/// enum names, not a variable), and the literal handed straight to an environment read.
fn variables_read(sources: &[(PathBuf, String)]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, text) in sources {
        for l in literals(text) {
            if l.starts_with("CUZK_") && !l.ends_with('_') {
                out.insert(l);
            }
        }
        for call in ["var(\"", "var_os(\"", "getenv(\"", "Getenv(\""] {
            for (i, _) in text.match_indices(call) {
                let rest = &text[i + call.len()..];
                let end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
                let name = &rest[..end];
                // Cargo's own variables are the build's, not the user's.
                if !name.is_empty() && !name.starts_with("CARGO_") {
                    out.insert(name.to_string());
                }
            }
        }
    }
    out
}

/// Names in back-quotes in the first column of the page's tables.
fn first_column(page: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in page.lines().filter(|l| l.starts_with("| `")) {
        let cell = line[1..].split('|').next().unwrap();
        for part in cell.split('`').skip(1).step_by(2) {
            out.insert(part.to_string());
        }
    }
    out
}

/// The fields of a struct as its source spells them: lines `{prefix}name{sep}` between the
/// line holding `open` and the next line starting with `close`.
fn fields(text: &str, open: &str, close: &str, name_of: fn(&str) -> Option<String>) -> Vec<String> {
    let mut lines = text.lines().skip_while(|l| !l.contains(open)).skip(1);
    let mut out = Vec::new();
    for l in lines.by_ref() {
        if l.starts_with(close) {
            return out;
        }
        if let Some(n) = name_of(l) {
            out.push(n);
        }
    }
    panic!("no struct opened by {open:?}")
}

fn page() -> String {
    fs::read_to_string(root().join("docs/configuration.md")).unwrap()
}

#[test]
fn every_variable_read_is_documented_and_every_documented_one_is_read() {
    let sources = sources();
    let read = variables_read(&sources);
    assert!(
        read.contains("CUZK_GPU_MEM_LIMIT") && read.contains("CUZK_MSM_WBITS"),
        "the scan finds the engine's and the kernels' variables: {read:?}"
    );
    let page = page();
    let listed = first_column(&page);
    let missing: Vec<_> = read.iter().filter(|v| !listed.contains(*v)).collect();
    assert!(
        missing.is_empty(),
        "read but not in docs/configuration.md: {missing:?}"
    );

    let all_literals: BTreeSet<String> = sources.iter().flat_map(|(_, t)| literals(t)).collect();
    let config_fields = config_fields();
    let stale: Vec<_> = listed
        .iter()
        .filter(|v| v.chars().all(is_name_char) && v.chars().any(|c| c.is_ascii_uppercase()))
        .filter(|v| !all_literals.contains(*v) && !config_fields.contains(*v))
        .collect();
    assert!(
        stale.is_empty(),
        "in docs/configuration.md but read nowhere: {stale:?}"
    );
}

fn config_fields() -> BTreeSet<String> {
    let r = root();
    let mut out = BTreeSet::new();
    let rust = fs::read_to_string(r.join("src/engine/config.rs")).unwrap();
    out.extend(fields(&rust, "pub struct Config {", "}", |l| {
        let l = l.trim().strip_prefix("pub ")?;
        Some(l.split(':').next()?.trim().to_string())
    }));
    let c = fs::read_to_string(r.join("include/cuzk.h")).unwrap();
    out.extend(fields(&c, "typedef struct cuzk_config {", "}", |l| {
        let l = l.trim();
        if l.starts_with('*') || l.starts_with("/*") || !l.ends_with(';') {
            return None;
        }
        Some(
            l.trim_end_matches(';')
                .rsplit([' ', '*'])
                .next()?
                .to_string(),
        )
    }));
    let go = fs::read_to_string(r.join("go-bindings/engine.go")).unwrap();
    out.extend(fields(&go, "type Config struct {", "}", |l| {
        let l = l.trim();
        if l.is_empty() || l.starts_with("//") {
            return None;
        }
        Some(l.split_whitespace().next()?.to_string())
    }));
    out
}

#[test]
fn every_configuration_field_of_rust_c_and_go_is_documented() {
    let fields = config_fields();
    assert!(
        fields.contains("memory_budget_bytes") && fields.contains("MemoryBudget"),
        "the C and Go structs were read: {fields:?}"
    );
    let page = page();
    let missing: Vec<_> = fields
        .iter()
        .filter(|f| !page.contains(&format!("`{f}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "fields not in docs/configuration.md: {missing:?}"
    );
}
