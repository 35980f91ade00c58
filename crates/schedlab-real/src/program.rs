//! Programs a task runs as its own child ([`Context::run_program`]; `build --real-make`'s
//! `make -jN`), and the `PATH` lookup that checks they are installed before anything runs.
//!
//! The program is forked from the task's thread, so it inherits the task's knobs (CPU affinity,
//! nice, scheduling policy) and passes them to everything it starts. It leads a process group of
//! its own, so that everything it started can be ended at once; `TMPDIR` points into the run's
//! temporary directory, so that the compiler's temporary files go where the run removes them.
//! Nothing is left behind:
//! - when the run is asked to stop, the group gets SIGTERM (GNU make passes it to its jobs and
//!   waits for them, removing half-written targets), then SIGKILL after [`TERM_GRACE`];
//! - when the task's own process is killed (the supervisor's emergency stop), the program gets
//!   SIGTERM from the kernel (PR_SET_PDEATHSIG) and make ends its jobs the same way;
//! - whatever is left in the group when the program has ended (and is not yet reaped, so that
//!   its pid, the group's id, cannot have been reused) is killed.
//!
//! [`Context::run_program`]: schedlab_workload::Context::run_program

use crate::sys;
use schedlab_workload::{Program, ProgramExit, WorkloadError};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a stopped program has to end after SIGTERM before it and its group get SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(2);

/// How often the waiting task looks at the stop request (the wait itself sleeps in poll).
const STOP_CHECK: Duration = Duration::from_millis(50);

/// Lines of the program's output an error quotes.
const OUTPUT_LINES: usize = 12;

/// The file `name` is found as in `PATH` (a name with a `/` is taken as a path), if it is an
/// executable file.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| executable(p))
}

/// The last lines of the program's output, for an error.
fn output_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(OUTPUT_LINES)..].join("\n")
}

/// `run_program` on the real kernel (see the module comment): `program` runs in `scratch` (the
/// run's directory) until it ends, or until `stop` says the run is stopping.
pub(crate) fn run(
    program: &Program,
    scratch: &Path,
    stop: impl Fn() -> bool,
) -> Result<ProgramExit, WorkloadError> {
    let Some(name) = program.argv.first() else {
        return Err(WorkloadError::Backend(
            "run_program: no program given".into(),
        ));
    };
    let dir = scratch.join(&program.dir);
    let output_path = scratch.join(&program.output);
    let err =
        |what: &str, e: std::io::Error| WorkloadError::Backend(format!("{what} for {name}: {e}"));
    let output = File::create(&output_path)
        .map_err(|e| err(&format!("creating {}", output_path.display()), e))?;
    let output2 = output.try_clone().map_err(|e| err("its output", e))?;
    let mut command = Command::new(name);
    command
        .args(&program.argv[1..])
        .current_dir(&dir)
        .env("TMPDIR", scratch)
        .stdin(Stdio::null())
        .stdout(output)
        .stderr(output2);
    sys::own_group_ending_with_us(&mut command);
    let start = sys::monotonic_ns();
    let child = command
        .spawn()
        .map_err(|e| err(&format!("starting it in {}", dir.display()), e))?;
    let pid = child.id() as i32;
    // The child is reaped with wait4 below (for its rusage), not through std's handle.
    drop(child);
    // Our own child, not yet reaped.
    let pidfd = sys::pidfd_of_child(pid)
        .map_err(|e| err("pidfd_open (Linux 5.3 or later is needed)", e))?;
    let mut stopped = false;
    let mut term_at = None;
    while !sys::ended_within(pidfd, STOP_CHECK) {
        if !stopped && stop() {
            stopped = true;
            term_at = Some(sys::monotonic_ns());
            // Our own child\'s process group.
            let _ = sys::kill(-pid, libc::SIGTERM);
        }
        if let Some(t) = term_at {
            if sys::monotonic_ns() - t > TERM_GRACE.as_nanos() as u64 {
                let _ = sys::kill(-pid, libc::SIGKILL);
                term_at = None;
            }
        }
    }
    let end = sys::monotonic_ns();
    // The program has ended but is not reaped: its pid still names its group. End whatever
    // of the group is left (an orphaned compiler pass after a stop).
    let _ = sys::kill(-pid, libc::SIGKILL);
    sys::close(pidfd);
    let (status, cpu) = sys::wait4(pid).map_err(|e| err("waiting", e))?;
    if stopped {
        return Err(WorkloadError::Stopped);
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let how = if libc::WIFEXITED(status) {
            format!("exited with status {}", libc::WEXITSTATUS(status))
        } else {
            format!("was killed by signal {}", libc::WTERMSIG(status))
        };
        return Err(WorkloadError::Backend(format!(
            "{} {how}; the end of its output ({}):\n{}",
            program.argv.join(" "),
            output_path.display(),
            output_tail(&output_path)
        )));
    }
    Ok(ProgramExit {
        wall: Duration::from_nanos(end - start),
        cpu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_in_path_and_missing_ones_are_not() {
        assert!(find_in_path("sh").is_some());
        assert!(find_in_path("/bin/sh").is_some());
        assert!(find_in_path("schedlab-no-such-program").is_none());
        assert!(find_in_path("/nonexistent/sh").is_none());
    }
}
