//! rt-app's per-task logs (`--rt-app-logs DIR`), written from the pass rows a run kept
//! ([`schedlab_workload::passes`]), so that scripts written for rt-app's logs read schedlab's.
//!
//! The format follows rt-app 1.0 (github.com/scheduler-tools/rt-app, tag v1.0; the Debian
//! package `rt-app 1.0`), checked against a log that rt-app wrote on the machine where this was
//! written: one file per thread, `DIR/BASENAME-TASK-INDEX.log` (`"%s/%s-%s-%d.log"` in `main`;
//! a thread a `fork` started — an event rt-app 1.0 lacks — `DIR/BASENAME-TASK-INDEX-NNNN.log`,
//! as upstream's `create_thread` names it: [`upstream_names`]),
//! a `# Policy : …` line (`thread_body`), the header (`thread_body`'s `fprintf` of
//! `"%s %8s %8s %8s %15s %15s %15s %10s %10s %10s %10s\n"`), and one row per phase pass in
//! `log_timing`'s format (`"%4d %8lu %8lu %8lu %15llu %15llu %15llu %10ld %10lu %10lu %10lu"`,
//! `src/rt-app_utils.c`). Times are microseconds, rounded to the nearest (`timespec_to_usec`):
//! `start` and `end` on the backend's clock (the real kernel's CLOCK_MONOTONIC, as rt-app's;
//! the simulated clock from 0), `rel_st` from the run's start.

use crate::output;
use schedlab_workload::knobs::{Knobs, SchedPolicy};
use schedlab_workload::passes::{micros, PassLog, Start};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// rt-app's header line (without its newline).
pub const HEADER: &str = "#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat";

/// One thread's log to write.
pub struct ThreadLog<'a> {
    /// The rt-app task's name (the group's).
    pub task: &'a str,
    /// The thread's index over all threads (rt-app's `ind`, [`upstream_names`]).
    pub index: usize,
    /// For a thread a `fork` started, its number among the forks of its task (rt-app's
    /// `nforks`, [`upstream_names`]); `None` for a thread the run started with.
    pub fork: Option<usize>,
    /// Its group's knobs, for the `# Policy` line.
    pub knobs: &'a Knobs,
    /// Its rows.
    pub log: &'a PassLog,
}

/// rt-app 1.0's first line: the thread's policy and priority (`# Policy : SCHED_OTHER priority
/// : NICE`, `SCHED_FIFO`/`SCHED_RR priority : RTPRIO`, `# Policy : SCHED_DEADLINE`). rt-app
/// 1.0 knows no SCHED_BATCH or SCHED_IDLE; they are written the same way.
pub fn policy_line(knobs: &Knobs) -> String {
    let nice = knobs.nice.unwrap_or(0);
    match knobs.policy {
        None | Some(SchedPolicy::Other) => format!("# Policy : SCHED_OTHER priority : {nice}"),
        Some(SchedPolicy::Batch) => format!("# Policy : SCHED_BATCH priority : {nice}"),
        Some(SchedPolicy::Idle) => format!("# Policy : SCHED_IDLE priority : {nice}"),
        Some(SchedPolicy::Fifo(p)) => format!("# Policy : SCHED_FIFO priority : {p}"),
        Some(SchedPolicy::Rr(p)) => format!("# Policy : SCHED_RR priority : {p}"),
        Some(SchedPolicy::Deadline { .. }) => "# Policy : SCHED_DEADLINE".to_string(),
    }
}

/// The text of one thread's log.
pub fn format(thread: &ThreadLog) -> String {
    let log = thread.log;
    let mut text = String::with_capacity(160 * (log.rows.len() + 2));
    text.push_str(&policy_line(thread.knobs));
    text.push('\n');
    text.push_str(HEADER);
    text.push('\n');
    let at = |ns: u64| micros(Duration::from_nanos(log.epoch_ns.saturating_add(ns)));
    for r in &log.rows {
        let _ = writeln!(
            text,
            "{:4} {:8} {:8} {:8} {:15} {:15} {:15} {:10} {:10} {:10} {:10}",
            thread.index,
            r.perf,
            r.run_us,
            micros(Duration::from_nanos(r.end_ns.saturating_sub(r.start_ns))),
            at(r.start_ns),
            at(r.end_ns),
            micros(Duration::from_nanos(r.start_ns)),
            r.slack_us,
            r.c_duration_us,
            r.c_period_us,
            r.wu_lat_us,
        );
    }
    text
}

/// The file of `thread` in `dir`: `BASENAME-TASK-INDEX.log`, or `BASENAME-TASK-INDEX-NNNN.log`
/// for a forked thread (rt-app's `thread_data_set_unique_name`, `"%s-%d-%04d"`).
pub fn file_name(dir: &Path, basename: &str, thread: &ThreadLog) -> PathBuf {
    match thread.fork {
        None => dir.join(format!("{basename}-{}-{}.log", thread.task, thread.index)),
        Some(n) => dir.join(format!(
            "{basename}-{}-{}-{n:04}.log",
            thread.task, thread.index
        )),
    }
}

/// rt-app's index and fork number of each task (in task id order: `(task name, how it
/// started)`), `None` for one rt-app would never have created. As rt-app (after 1.0; its
/// `main` and `rtapp_fork` in rt-app.c) numbers them: the threads the run starts with take
/// indices 0, 1, … in file order; each fork takes the next index over all threads
/// (`nthreads++` under the fork lock, in the order the forks happen — here, the order the
/// forked tasks started, ties by task id) and the next number among the forks of its task
/// (`nforks`, counted per forked task over every fork event naming it).
pub fn upstream_names(tasks: &[(&str, Start)]) -> Vec<Option<(usize, Option<usize>)>> {
    let mut out = vec![None; tasks.len()];
    let mut next = 0;
    for (i, (_, start)) in tasks.iter().enumerate() {
        if *start == Start::WithRun {
            out[i] = Some((next, None));
            next += 1;
        }
    }
    let mut forked: Vec<(u64, usize)> = (tasks.iter().enumerate())
        .filter_map(|(i, (_, s))| match s {
            Start::Forked { at_ns } => Some((*at_ns, i)),
            _ => None,
        })
        .collect();
    forked.sort_unstable();
    let mut per_task: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (_, i) in forked {
        let n = per_task.entry(tasks[i].0).or_insert(0);
        out[i] = Some((next, Some(*n)));
        next += 1;
        *n += 1;
    }
    out
}

/// Check a `log_basename` before anything runs: it becomes part of a file name.
pub fn check_basename(basename: &str) -> Result<(), String> {
    if basename.is_empty() || basename.contains(['/', '\0']) || basename == "." || basename == ".."
    {
        Err(format!("the file's log_basename {basename:?} cannot start a file name in the logs' directory; accepted: a name without '/' (rt-app's default is \"rt-app\")"))
    } else {
        Ok(())
    }
}

/// Check the logs' directory before anything runs: `-` is refused (a directory is needed), an
/// existing path must be a directory (after symbolic links) this process can create files
/// in, and a missing one must have a directory to be created in.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    if dir.as_os_str() == output::STDOUT {
        return Err(
            "names a directory (one log per thread); standard output cannot hold it".into(),
        );
    }
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => output::check_writable_dir(dir)
            .map_err(|e| format!("cannot write in it: {e}")),
        Ok(_) => Err("exists and is not a directory (after symbolic links); accepted: a directory, or a path to create one at".into()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // The nearest existing ancestor must be a directory it can be created in.
            let mut up = dir.parent();
            while let Some(p) = up.filter(|p| !p.as_os_str().is_empty()) {
                match std::fs::metadata(p) {
                    Ok(m) if m.is_dir() => {
                        return output::check_writable_dir(p).map_err(|e| {
                            format!("cannot be created: cannot write in {}: {e}", p.display())
                        })
                    }
                    Ok(_) => {
                        return Err(format!(
                            "cannot be created: {} is not a directory",
                            p.display()
                        ))
                    }
                    Err(_) => up = p.parent(),
                }
            }
            output::check_writable_dir(Path::new("."))
                .map_err(|e| format!("cannot be created here: {e}"))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Write every thread's log into `dir` (created if missing), each through
/// [`output::write`]; the files written.
pub fn write(dir: &Path, basename: &str, threads: &[ThreadLog]) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::with_capacity(threads.len());
    for t in threads {
        let path = file_name(dir, basename, t);
        output::write(&path, format(t).as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::passes::PassRecord;

    #[test]
    fn rows_have_rt_apps_widths_and_units() {
        let log = PassLog {
            epoch_ns: 33_461_927_299_000,
            rows: vec![PassRecord {
                start_ns: 156_400,
                end_ns: 100_667_600,
                perf: 95238,
                run_us: 2072,
                slack_us: -97914,
                c_duration_us: 2000,
                c_period_us: 100_000,
                wu_lat_us: 520,
            }],
            dropped: 0,
            start: Start::WithRun,
        };
        let knobs = Knobs::default();
        let t = ThreadLog {
            task: "thread0",
            index: 0,
            fork: None,
            knobs: &knobs,
            log: &log,
        };
        assert_eq!(
            format(&t),
            "# Policy : SCHED_OTHER priority : 0\n".to_string()
                + HEADER
                + "\n   0    95238     2072   100511     33461927455     33462027967             156     -97914       2000     100000        520\n"
        );
        assert_eq!(
            file_name(Path::new("d"), "rt-app", &t),
            Path::new("d/rt-app-thread0-0.log")
        );
    }

    #[test]
    fn forked_threads_are_named_as_rt_app_names_them() {
        let forked = |at_ns| Start::Forked { at_ns };
        // File order: a forker, the forked task (parked in schedlab), another task, a second
        // forked task; forks at 30, 10 and 20 µs, one parked task never forked.
        let tasks = [
            ("main", Start::WithRun),
            ("job", forked(30_000)),
            ("job", forked(10_000)),
            ("job", Start::NotForked),
            ("other", Start::WithRun),
            ("aux", forked(20_000)),
        ];
        let names = upstream_names(&tasks);
        assert_eq!(
            names,
            vec![
                Some((0, None)),
                Some((4, Some(1))),
                Some((2, Some(0))),
                None,
                Some((1, None)),
                Some((3, Some(0))),
            ]
        );
        let log = PassLog::default();
        let knobs = Knobs::default();
        let t = ThreadLog {
            task: "job",
            index: 4,
            fork: Some(1),
            knobs: &knobs,
            log: &log,
        };
        assert_eq!(
            file_name(Path::new("d"), "rt-app", &t),
            Path::new("d/rt-app-job-4-0001.log")
        );
    }

    #[test]
    fn bad_basenames_and_dirs_are_refused() {
        assert!(check_basename("a/b").is_err());
        assert!(check_basename("").is_err());
        assert!(check_basename("rt-app").is_ok());
        assert!(check_dir(Path::new("-")).is_err());
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, b"").unwrap();
        assert!(check_dir(&file).unwrap_err().contains("not a directory"));
        assert!(check_dir(&file.join("sub")).is_err());
        assert!(check_dir(&tmp.path().join("new/deeper")).is_ok());
        assert!(check_dir(Path::new("/dev/null")).is_err());
    }
}
