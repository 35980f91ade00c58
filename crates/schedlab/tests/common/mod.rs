//! Helpers the binary's test files share.
// Each test file uses some of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// `out`, after asserting that `schedlab args` succeeded (else its stdout and stderr), and that
/// every record it wrote validates against the published schema (see [`records_valid`]); a
/// relative path in `args` is taken from the test's directory.
pub fn succeeded(args: &[&str], out: Output) -> Output {
    succeeded_in(Path::new("."), args, out)
}

/// [`succeeded`] for a command run in `dir`: relative paths in `args` are taken from there.
pub fn succeeded_in(dir: &Path, args: &[&str], out: Output) -> Output {
    assert!(
        out.status.success(),
        "schedlab {args:?} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    records_valid(dir, args, &out);
    out
}

/// Commands whose `--json`, `--out` or `-o` is not a result record (a validation record, a
/// cost profile, an HTML report).
const NOT_RECORDS: [&str; 8] = [
    "validate",
    "calibrate",
    "report",
    "check",
    "list",
    "env",
    "completions",
    "man",
];

/// Assert that each result record the successful `schedlab args` (run in `dir`) wrote
/// validates against docs/record.schema.json: `--json FILE` (`-`: its standard output), and
/// every `*.json` in an `--out` or `-o` directory (a sweep's, `merge`'s). A named file that is
/// missing fails; a FIFO or device named is not read (the test reads it).
pub fn records_valid(dir: &Path, args: &[&str], out: &Output) {
    if args.first().is_some_and(|c| NOT_RECORDS.contains(c)) {
        return;
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (*a, args.get(i + 1).copied()),
        };
        let Some(value) = value else { continue };
        match flag {
            "--json" if value == "-" => {
                let text = String::from_utf8_lossy(&out.stdout);
                check("standard output", &text);
            }
            "--json" | "--out" | "-o" => {
                let path = dir.join(value);
                let meta = std::fs::metadata(&path).unwrap_or_else(|e| {
                    panic!("schedlab {args:?} succeeded but {}: {e}", path.display())
                });
                if meta.is_dir() {
                    for entry in std::fs::read_dir(&path).unwrap() {
                        let p = entry.unwrap().path();
                        if p.extension().is_some_and(|x| x == "json") && p.is_file() {
                            files.push(p);
                        }
                    }
                } else if meta.is_file() && (flag == "--json" || value.ends_with(".json")) {
                    files.push(path);
                }
            }
            _ => {}
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        check(&f.display().to_string(), &text);
    }
}

/// The published schema, compiled once per test binary.
fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/record.schema.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
        jsonschema::validator_for(&schema).expect("the published schema compiles")
    })
}

/// Assert that `text` (from `what`) is a record the schema accepts, listing every complaint.
pub fn check(what: &str, text: &str) {
    let record: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not JSON ({e}):\n{text}"));
    let errors: Vec<String> = validator()
        .iter_errors(&record)
        .map(|e| format!("  {}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: the record does not validate against docs/record.schema.json:\n{}",
        errors.join("\n")
    );
}
