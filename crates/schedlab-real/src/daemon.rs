//! Daemons a task starts and stops ([`Context::start_daemon`]): `web --server nginx|apache2`.
//!
//! The daemon is forked from the task's thread, so it inherits the task's knobs (affinity,
//! nice, scheduling policy) before it forks its own workers, which inherit them in turn; once
//! it accepts connections, every process of its process group is read back from /proc and
//! compared with the task's thread, and a difference is an error. It leads a process group of
//! its own (the terminal's Ctrl-C reaches schedlab, which ends it, not the server directly),
//! writes its output and logs only in the run's temporary directory, and is ended on every
//! path:
//! - [`Context::stop_daemon`]: SIGTERM to the group (nginx's and Apache's fast shutdown, which
//!   end their workers), SIGKILL to the group after [`STOP_GRACE`];
//! - the task's body returning without stopping it (an error): the same, when the context is
//!   dropped ([`RunningDaemon`]'s `Drop`);
//! - the task's process killed by the supervisor (interrupt, error elsewhere, time budget):
//!   the kernel sends the daemon SIGTERM (PR_SET_PDEATHSIG) and it ends its workers.
//!
//! [`Context::start_daemon`]: schedlab_workload::Context::start_daemon
//! [`Context::stop_daemon`]: schedlab_workload::Context::stop_daemon

use crate::procfs::{
    group_usage, observed_settings_of, observed_settings_of_process, process_group_members,
    GroupUsage,
};
use crate::sys;
use schedlab_workload::{Daemon, WorkloadError};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a daemon has to accept connections after it starts.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stopped daemon has to end after SIGTERM before its group gets SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);
/// Lines of a daemon's logs an error quotes.
const LOG_LINES: usize = 12;
/// The file the daemon's standard output and error go to, in the run's directory.
const OUTPUT: &str = "server-output.log";

/// A daemon that ended on its own before it was told to stop.
#[derive(Debug, thiserror::Error)]
#[error("{name} {} during the run{logs}", describe(*.status))]
pub struct DaemonEnded {
    /// The daemon (`nginx`).
    pub name: String,
    /// Its wait status.
    pub status: i32,
    /// The last lines of its logs (see `logs_tail`).
    pub logs: String,
}

/// A daemon this task started and has not stopped yet.
#[derive(Debug)]
pub struct RunningDaemon {
    name: String,
    pid: i32,
    pidfd: i32,
    /// Its error log and its output file.
    logs: [PathBuf; 2],
    /// What its processes used, read just before it was told to stop.
    used: GroupUsage,
}

/// The last lines of the daemon's error log and output, for an error.
fn logs_tail(logs: &[PathBuf; 2]) -> String {
    let mut out = String::new();
    for path in logs {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        if !lines.is_empty() {
            out.push_str(&format!("\n--- the end of {}:\n", path.display()));
            out.push_str(&lines[lines.len().saturating_sub(LOG_LINES)..].join("\n"));
        }
    }
    if out.is_empty() {
        out.push_str(" (its logs are empty)");
    }
    out
}

/// Reap our child `pid`: its wait status.
fn reap(pid: i32) -> i32 {
    sys::waitpid(pid, 0).unwrap_or(0)
}

fn describe(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("ended with wait status {status}")
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on now.
fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl RunningDaemon {
    /// End the daemon and everything in its group; `Err` with its logs if it had ended on its
    /// own before. Does nothing the second time.
    fn stop(&mut self) -> Result<(), DaemonEnded> {
        if self.pid == 0 {
            return Ok(());
        }
        let early = sys::ended_within(self.pidfd, Duration::ZERO);
        if !early {
            // Its workers' and its own threads' use, while they are all still there.
            self.used = group_usage(self.pid);
            // Our own child's process group (its pid is not reaped yet, so it cannot have been
            // reused).
            let _ = sys::kill(-self.pid, libc::SIGTERM);
            if !sys::ended_within(self.pidfd, STOP_GRACE) {
                let _ = sys::kill(-self.pid, libc::SIGKILL);
                sys::ended_within(self.pidfd, STOP_GRACE);
            }
        }
        // The leader has ended but is not reaped: end whatever of its group is left.
        let _ = sys::kill(-self.pid, libc::SIGKILL);
        let status = reap(self.pid);
        sys::close(self.pidfd);
        self.pid = 0;
        if early {
            return Err(DaemonEnded {
                name: self.name.clone(),
                status,
                logs: logs_tail(&self.logs),
            });
        }
        Ok(())
    }
}

impl Drop for RunningDaemon {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

impl RunningDaemon {
    /// `start_daemon` on the real kernel (see the module comment): start `daemon` with its
    /// files in `scratch` (the run's directory) and the workload's in `files`, put it in
    /// `slot` (a task runs one at most) once it accepts connections, and return its port.
    /// `stop` says whether the run is stopping.
    pub(crate) fn start(
        daemon: &Daemon,
        slot: &mut Option<RunningDaemon>,
        scratch: &Path,
        files: &Path,
        stop: impl Fn() -> bool,
    ) -> Result<u16, WorkloadError> {
        let err = |m: String| WorkloadError::Backend(m);
        let Some(name) = daemon.argv.first().cloned() else {
            return Err(err("start_daemon: no program given".into()));
        };
        if slot.is_some() {
            return Err(err(format!(
                "{name}: this task already runs a daemon; one per task"
            )));
        }
        // A server's workers may run as another user (Apache's www-data): they need to enter
        // the run's directory to read the files in it, which are readable by all.
        std::fs::set_permissions(scratch, std::fs::Permissions::from_mode(0o711))
            .map_err(|e| err(format!("opening {} for {name}: {e}", scratch.display())))?;
        let port = match daemon.port {
            0 => free_port().map_err(|e| err(format!("finding a free port for {name}: {e}")))?,
            p => p,
        };
        let dir = scratch.to_string_lossy().into_owned();
        let files = files.to_string_lossy().into_owned();
        let fill = |t: &str| {
            t.replace("@DIR@", &dir)
                .replace("@FILES@", &files)
                .replace("@PORT@", &port.to_string())
        };
        for (rel, text) in &daemon.config {
            let path = scratch.join(rel);
            std::fs::write(&path, fill(text))
                .map_err(|e| err(format!("writing {}: {e}", path.display())))?;
        }
        let logs = [scratch.join(&daemon.log), scratch.join(OUTPUT)];
        let output = std::fs::File::create(&logs[1])
            .map_err(|e| err(format!("creating {}: {e}", logs[1].display())))?;
        let output2 = output
            .try_clone()
            .map_err(|e| err(format!("its output: {e}")))?;
        let mut command = Command::new(&name);
        command
            .args(daemon.argv[1..].iter().map(|a| fill(a)))
            .current_dir(scratch)
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(output2);
        sys::own_group_ending_with_us(&mut command);
        let child = command
            .spawn()
            .map_err(|e| err(format!("starting {name}: {e}")))?;
        let pid = child.id() as i32;
        // Reaped with waitpid by RunningDaemon::stop, not through std's handle.
        drop(child);
        // Our own child, not yet reaped.
        let pidfd = sys::pidfd_of_child(pid).map_err(|e| {
            err(format!(
                "pidfd_open for {name} (Linux 5.3 or later is needed): {e}"
            ))
        })?;
        let running = RunningDaemon {
            name: name.clone(),
            pid,
            pidfd,
            logs,
            used: GroupUsage::default(),
        };
        wait_ready(&running, port, stop)?;
        running.check_inherited()?;
        *slot = Some(running);
        Ok(port)
    }

    /// Every process of the daemon's group runs with this thread's settings (the group's
    /// knobs): nice, policy and CPUs.
    fn check_inherited(&self) -> Result<(), WorkloadError> {
        let d = self;
        let mine = observed_settings_of(std::process::id() as i32, sys::gettid());
        let members = process_group_members(d.pid);
        if members.is_empty() {
            return Err(WorkloadError::Backend(format!(
                "{}: no process of its group {} found in /proc",
                d.name, d.pid
            )));
        }
        for pid in members {
            let theirs = observed_settings_of_process(pid);
            for key in ["nice", "policy", "cpus"] {
                if theirs.contains_key(key) && theirs.get(key) != mine.get(key) {
                    return Err(WorkloadError::Backend(format!(
                        "{} process {pid} runs with {key} {}, not the server group's {}",
                        d.name,
                        theirs.get(key).map_or("?", String::as_str),
                        mine.get(key).map_or("?", String::as_str)
                    )));
                }
            }
        }
        Ok(())
    }

    /// `stop_daemon` on the real kernel: stop the daemon in `slot` and add what its
    /// processes used to `used` (their use, not the task's thread's).
    pub(crate) fn stop_in(
        slot: &mut Option<RunningDaemon>,
        used: &mut GroupUsage,
    ) -> Result<(), WorkloadError> {
        let mut d = slot.take().ok_or_else(|| {
            WorkloadError::Backend("stop_daemon: this task runs no daemon".into())
        })?;
        let stopped = d.stop().map_err(|e| WorkloadError::Backend(e.to_string()));
        used.cpu_ns += d.used.cpu_ns;
        used.voluntary += d.used.voluntary;
        used.involuntary += d.used.involuntary;
        stopped
    }
}

/// Wait until the daemon accepts connections on `port`; an error with its logs if it ends
/// first, does not within [`START_TIMEOUT`], or the run is asked to stop.
fn wait_ready(d: &RunningDaemon, port: u16, stop: impl Fn() -> bool) -> Result<(), WorkloadError> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let start = Instant::now();
    loop {
        if sys::ended_within(d.pidfd, Duration::from_millis(20)) {
            return Err(WorkloadError::Backend(format!(
                "{} did not start (port {port}){}",
                d.name,
                logs_tail(&d.logs)
            )));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if stop() {
            return Err(WorkloadError::Stopped);
        }
        if start.elapsed() > START_TIMEOUT {
            return Err(WorkloadError::Backend(format!(
                "{} does not accept connections on port {port} after {}s{}",
                d.name,
                START_TIMEOUT.as_secs(),
                logs_tail(&d.logs)
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::runner::{run_repetition, RepetitionSetup, RunError};
    use schedlab_workload::knobs::Knobs;
    use schedlab_workload::plan::GroupPlan;
    use schedlab_workload::presets::Outcome;
    use schedlab_workload::record::MetricDef;
    use schedlab_workload::{
        Context, Daemon, Plan, SyncPlan, TaskMode, TaskRef, Transport, Workload, WorkloadError,
    };
    use std::collections::BTreeMap;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    /// One task that starts `daemon` and stops it.
    struct Starts(Daemon);

    impl Workload for Starts {
        fn name(&self) -> &'static str {
            "starts"
        }
        fn params(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
        fn plan(&self) -> Plan {
            Plan {
                groups: vec![GroupPlan {
                    name: "server",
                    tasks: 1,
                    spawn: 0,
                }],
                channels: 0,
                duplex: false,
                locks: 0,
                sync: SyncPlan::default(),
                mode: TaskMode::Threads,
                transport: Transport::Pipe,
            }
        }
        async fn body<C: Context>(&self, _: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
            ctx.start_daemon(&self.0).await?;
            ctx.stop_daemon().await
        }
        fn metric_defs(&self) -> Vec<MetricDef> {
            Vec::new()
        }
        fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
            Ok(BTreeMap::new())
        }
    }

    /// A server that exits instead of listening is an error that quotes its log, with the
    /// placeholders of its configuration filled in.
    #[test]
    fn a_server_that_does_not_start_is_an_error_with_its_log() {
        let daemon = Daemon {
            argv: [
                "sh",
                "-c",
                "cat @DIR@/x.conf >> @DIR@/x.log; echo 'bind() failed' >> @DIR@/x.log; exit 3",
            ]
            .map(String::from)
            .to_vec(),
            config: vec![("x.conf".into(), "listen 127.0.0.1:@PORT@".into())],
            port: 9,
            log: "x.log".into(),
        };
        let r = run_repetition(
            &Arc::new(Starts(daemon)),
            RepetitionSetup {
                knobs: &[Knobs::default()],
                stop: Arc::new(AtomicBool::new(false)),
                budget: Duration::from_secs(30),
                trace: None,
                rq_trace: None,
                files: None,
                passes: false,
            },
        );
        let Err(RunError::Task { message, .. }) = r else {
            panic!("{r:?}");
        };
        assert!(
            message.contains("sh did not start (port 9)")
                && message.contains("listen 127.0.0.1:9")
                && message.contains("bind() failed"),
            "{message}"
        );
    }
}
