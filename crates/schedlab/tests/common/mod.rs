//! Helpers the binary's test files share. Each test file compiles this module on its own and
//! uses some of it, so the rest would warn as unused there.
#![allow(dead_code)]

use schedlab_workload::record::RunRecord;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The built binary, to run as a user would.
pub fn schedlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

/// Tasks runnable besides the calling thread (`procs_running` of /proc/stat), 0 when unknown:
/// a test whose comparison needs an otherwise idle machine says `skipped:` when it is not 0.
pub fn others_runnable() -> u64 {
    schedlab_real::procfs::runnable_tasks().map_or(0, |n| n.saturating_sub(1))
}

/// Run `schedlab args` in the test's own directory; it must succeed (see [`succeeded`]).
pub fn succeeds(args: &[&str]) -> Output {
    succeeded(args, schedlab().args(args).output().expect("run schedlab"))
}

/// The test binary's turn at what its tests must not do at once (the real kernel's CPUs for a
/// timing, the counters' tracefs, the cluster): a guard that holds it until dropped. A test
/// that panicked while holding it does not take the others' turn away.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the tests run as root (real-time policies, counters and cgroups need it).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A path for a record in the temporary directory, unique to this test binary's process.
pub fn temp_json(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("schedlab-test-{}-{name}.json", std::process::id()))
}

/// Read a record through the typed [`RunRecord`], and check that the typed record holds every
/// field of the file: written back, it gives the same JSON.
pub fn read_record(path: &Path) -> RunRecord {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read record {}: {e}", path.display()));
    let rec = RunRecord::from_json(&text)
        .unwrap_or_else(|e| panic!("record {}: {e}\n{text}", path.display()));
    let as_written: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        serde_json::to_value(&rec).unwrap(),
        as_written,
        "{}: the typed record does not hold every field of the file",
        path.display()
    );
    rec
}

/// The record of `schedlab ARGS --json FILE --quiet` (which must succeed), read by
/// [`read_record`]; the file is removed.
pub fn run_json(args: &[&str], name: &str) -> RunRecord {
    let path = temp_json(name);
    let mut all: Vec<&str> = args.to_vec();
    let p = path.to_str().unwrap().to_string();
    all.extend(["--json", &p, "--quiet"]);
    succeeds(&all);
    let rec = read_record(&path);
    std::fs::remove_file(&path).ok();
    rec
}

/// Metric `name` of repetition `rep` of configuration `config`.
pub fn metric(rec: &RunRecord, config: usize, rep: usize, name: &str) -> f64 {
    *rec.configs[config].repetitions[rep]
        .metrics
        .get(name)
        .unwrap_or_else(|| panic!("no metric {name}"))
}

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

/// Run `schedlab args` in `dir` with `env` set, outside any Slurm array or Kubernetes Indexed
/// Job (their index variables removed, so that `--shard auto` sees only `env`); it must
/// succeed.
pub fn run_ok_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let out = schedlab()
        .args(args)
        .current_dir(dir)
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .envs(env.iter().copied())
        .output()
        .expect("run schedlab");
    succeeded_in(dir, args, out)
}

/// Run `schedlab args` in `dir`; it must succeed.
pub fn run_ok(dir: &Path, args: &[&str]) -> Output {
    run_ok_env(dir, args, &[])
}

/// A fresh directory `schedlab-KIND-NAME-XXXXXX` for one test, removed when dropped.
pub fn temp_dir(kind: &str, name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("schedlab-{kind}-{name}-"))
        .tempdir()
        .unwrap()
}

/// Whether process `pid` catches SIGINT yet (its handler is installed).
pub fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (libc::SIGINT - 1)) != 0)
}

/// A process's standard error, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A record file as JSON without `started_unix` (when each process started): the one field in
/// which a merged sweep's record may differ from the unsharded sweep's.
pub fn comparable(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut v: Value = serde_json::from_str(&text).unwrap();
    assert!(
        v.as_object_mut().unwrap().remove("started_unix").is_some(),
        "started_unix in {}",
        path.display()
    );
    v
}

/// The names of the entries of `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// One test's set-up around the binary: a fresh directory (removed when dropped) where the test
/// writes its input files, runs `schedlab` (relative paths in its arguments are taken from
/// there) and reads back what it wrote.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// A fresh directory `schedlab-KIND-NAME-XXXXXX` (see [`temp_dir`]).
    pub fn new(kind: &str, name: &str) -> Self {
        Scratch {
            dir: temp_dir(kind, name),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` in the directory.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Write `text` to `name` in the directory (its parent directories made first); its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }

    /// The text of `rel` in the directory.
    pub fn read(&self, rel: &str) -> String {
        let path = self.join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Run `schedlab args` in the directory; it must succeed (see [`run_ok`]).
    pub fn run(&self, args: &[&str]) -> Output {
        run_ok(self.path(), args)
    }

    /// Run `schedlab args` in the directory, whatever its outcome.
    pub fn try_run(&self, args: &[&str]) -> Output {
        schedlab()
            .args(args)
            .current_dir(self.path())
            .output()
            .expect("run schedlab")
    }

    /// `schedlab run FILE --runs 1 --rt-app-logs LOGS ARGS…` in the directory (it must
    /// succeed): one repetition of the rt-app file `file` with its per-task logs in `logs`.
    pub fn rtapp_logs(&self, file: &str, logs: &str, args: &[&str]) -> Output {
        let mut all = vec!["run", file, "--runs", "1", "--rt-app-logs", logs];
        all.extend_from_slice(args);
        self.run(&all)
    }
}

/// rt-app's binary where its Debian package or a local build puts it, if either is there.
pub fn rtapp_binary() -> Option<&'static str> {
    ["/usr/bin/rt-app", "/usr/local/bin/rt-app"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

/// The data rows of an rt-app log (its `#` lines left out), split into whole-number columns.
pub fn log_rows(text: &str) -> Vec<Vec<i64>> {
    (text.lines())
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().map(|c| c.parse().unwrap()).collect())
        .collect()
}
