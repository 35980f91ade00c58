//! Issue 39: `examples/scale-out/`'s Slurm scripts on a real Slurm — a one-node cluster on this
//! machine, brought up and torn down by `bench/slurm.sh`: the shard script as a job array, the
//! merge after it (`--dependency=afterok`), and the merged records equal to the unsharded
//! sweep's; a failing task fails the run; a SIGTERM while the tasks run stops it; and each
//! time nothing of the cluster is left behind.
//! Skipped (with the install line) without Slurm and munge, or when not root.

mod common;

use common::serial;
use common::{comparable, names};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::MutexGuard;

/// A test's turn at the cluster and a directory of its own, or `None` (having said why) when
/// the cluster cannot run here.
fn cluster_turn() -> Option<(MutexGuard<'static, ()>, tempfile::TempDir)> {
    let turn = serial();
    if !can_run() {
        return None;
    }
    let tmp = tempfile::Builder::new()
        .prefix("schedlab-slurm-test-")
        .tempdir()
        .unwrap();
    Some((turn, tmp))
}

/// Whether the cluster can run here; if not, says `skipped:` and why.
fn can_run() -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for program in [
        "sbatch",
        "squeue",
        "sinfo",
        "scontrol",
        "scancel",
        "slurmctld",
        "slurmd",
        "munged",
        "mungekey",
        "python3",
    ] {
        if !std::env::split_paths(&path).any(|d| d.join(program).is_file()) {
            println!("skipped: {program} is not installed or not on PATH (apt-get install slurm-wlm munge)");
            return false;
        }
    }
    if !rustix::process::getuid().is_root() {
        println!("skipped: the one-node Slurm cluster runs its daemons as root (apt-get install slurm-wlm munge)");
        return false;
    }
    true
}

/// `bench/slurm.sh`, to run with `schedlab` (the binary the jobs run) and `KEEP=keep`.
fn slurm_sh_command(schedlab: &Path, keep: &Path) -> Command {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/slurm.sh");
    let mut c = Command::new("bash");
    c.arg(script)
        .env("SCHEDLAB", schedlab)
        .env("KEEP", keep)
        .env("TIMEOUT", "300")
        .env_remove("ARRAY")
        .env_remove("SLURM_CONF");
    c
}

/// Run `bench/slurm.sh` with `schedlab` (the binary the jobs run) and `KEEP=keep`; its output,
/// printed for the test's log.
fn slurm_sh(schedlab: &Path, keep: &Path) -> Output {
    let out = slurm_sh_command(schedlab, keep)
        .output()
        .expect("run bash bench/slurm.sh");
    println!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The cluster's temporary directory, from the line `bench/slurm.sh: cluster up ... in DIR`.
fn cluster_dir(stdout: &str) -> PathBuf {
    let line = stdout
        .lines()
        .find(|l| l.contains("cluster up in"))
        .unwrap_or_else(|| panic!("no 'cluster up' line in:\n{stdout}"));
    PathBuf::from(line.rsplit(" in ").next().unwrap())
}

/// The cluster is gone: its directory removed, and no process (a daemon, a job step, a job)
/// whose environment names its slurm.conf.
fn nothing_left(dir: &Path) {
    assert!(!dir.exists(), "{} was not removed", dir.display());
    let conf = format!("SLURM_CONF={}/slurm.conf", dir.display());
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|v| v == conf.as_bytes()) {
            let cmd = std::fs::read_to_string(entry.path().join("cmdline")).unwrap_or_default();
            left.push(format!("{name} {}", cmd.replace('\0', " ")));
        }
    }
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_job_array_and_its_dependent_merge_give_the_unsharded_sweep_s_records() {
    let Some((_turn, tmp)) = cluster_turn() else {
        return;
    };
    let keep = tmp.path().join("kept");
    let out = slurm_sh(Path::new(env!("CARGO_BIN_EXE_schedlab")), &keep);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench/slurm.sh failed: {:?}",
        out.status
    );
    assert!(
        stdout.contains("8 array tasks and the merge completed (exit code 0)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("bench/slurm.sh: equal: 13 files"),
        "{stdout}"
    );
    nothing_left(&cluster_dir(&stdout));

    // The script's comparison again, here: the merge's records and the unsharded sweep's.
    let (merged, whole) = (keep.join("work/sw"), keep.join("whole/sw"));
    let files = names(&merged);
    assert_eq!(
        files.len(),
        13,
        "sweep.json and 12 configurations: {files:?}"
    );
    assert_eq!(names(&whole), files);
    for f in &files {
        assert_eq!(
            comparable(&merged.join(f)),
            comparable(&whole.join(f)),
            "{f}"
        );
    }
    // Eight shards, one per task of `--array=1-8`, each knowing its place.
    let shards: Vec<String> = names(&keep.join("work"))
        .into_iter()
        .filter(|n| n.starts_with("sw-shard-"))
        .collect();
    assert_eq!(
        shards,
        (1..=8).map(|k| format!("sw-shard-{k}")).collect::<Vec<_>>()
    );
    for (k, s) in shards.iter().enumerate() {
        let v = comparable(&keep.join("work").join(s).join("sweep.json"));
        assert_eq!(v["shard"]["index"], k + 1, "{s}");
        assert_eq!(v["shard"]["count"], 8, "{s}");
    }
    // The merge job ran and drew the plot.
    let svg = std::fs::read_to_string(keep.join("work/sw.svg")).unwrap();
    assert!(svg.contains("<svg"), "{svg}");
}

#[test]
fn a_failed_task_fails_the_run_the_merge_never_runs_and_nothing_is_left() {
    let Some((_turn, tmp)) = cluster_turn() else {
        return;
    };
    // A `schedlab` that fails the array's third task and does nothing, successfully, in the
    // others (the merge never runs, so they need not compute anything).
    let fake = tmp.path().join("schedlab");
    std::fs::write(
        &fake,
        "#!/bin/sh\nif [ \"${SLURM_ARRAY_TASK_ID:-}\" = 3 ]; then echo 'task 3 fails' >&2; exit 7; fi\nexit 0\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let keep = tmp.path().join("kept");
    let out = slurm_sh(&fake, &keep);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("a job did not complete with exit code 0"),
        "{stderr}"
    );
    assert!(
        stderr.contains("job 1_3 (schedlab-shard): FAILED, exit code 7:0"),
        "{stderr}"
    );
    // The merge's dependency can never be met: Slurm cancels it (--kill-on-invalid-dep).
    assert!(stderr.contains("(schedlab-merge): CANCELLED"), "{stderr}");
    assert!(!keep.join("work/sw").exists(), "the merge did not run");
    nothing_left(&cluster_dir(&stdout));
}

#[test]
fn a_sigterm_while_the_tasks_run_stops_the_cluster_and_its_jobs() {
    let Some((_turn, tmp)) = cluster_turn() else {
        return;
    };
    let mut child = slurm_sh_command(
        Path::new(env!("CARGO_BIN_EXE_schedlab")),
        &tmp.path().join("kept"),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("run bash bench/slurm.sh");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut said = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.contains("submitted shard.sbatch") {
            break;
        }
    }
    assert!(said.contains("submitted shard.sbatch"), "{said}");
    let dir = cluster_dir(&said);
    // Until a task's `schedlab sweep` is running (it carries the cluster's SLURM_CONF).
    let conf = format!("SLURM_CONF={}/slurm.conf", dir.display());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !running_sweep(&conf) {
        assert!(
            std::time::Instant::now() < deadline,
            "no task started: {said}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    for line in lines {
        said.push_str(&line.unwrap());
        said.push('\n');
    }
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    println!("{said}");
    eprintln!("{err}");
    assert_eq!(status.code(), Some(143), "{said}\n{err}");
    nothing_left(&dir);
}

/// Whether a `schedlab sweep` whose environment holds `conf` (a task of the cluster) runs.
fn running_sweep(conf: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        env.split(|&b| b == 0).any(|v| v == conf.as_bytes())
            && cmd.split(|&b| b == 0).nth(1) == Some(b"sweep".as_slice())
    })
}
