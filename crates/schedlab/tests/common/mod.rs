//! Helpers the binary's test files share. Each test file compiles this module on its own and
//! uses some of it, so the rest would warn as unused there.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The built binary, to run as a user would.
pub fn schedlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

/// `out`, after asserting that `schedlab args` succeeded (else its stdout and stderr).
pub fn succeeded(args: &[&str], out: Output) -> Output {
    assert!(
        out.status.success(),
        "schedlab {args:?} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
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
    succeeded(args, out)
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
