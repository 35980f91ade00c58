//! Facts about the host that decide whether a run can start, in one place: the open-file limit
//! (and raising it), the limits on tasks (a cgroup's `pids.max`, `RLIMIT_NPROC`,
//! `kernel.threads-max`), the memory available now, the free space of a directory, the online
//! CPUs and whether real-time priorities are allowed. Typed results; the caller words the
//! advice.

use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a host fact could not be read or a limit could not be met.
#[derive(Debug, Error)]
pub enum HostError {
    /// `RLIMIT_NOFILE` is below what the run needs and cannot be raised enough.
    #[error("this run needs about {needed} open files but the limit is {} (hard {})", .limit.soft, .limit.hard)]
    FdLimit {
        /// Open files the run needs.
        needed: u64,
        /// The limit in force.
        limit: FdLimit,
    },
    /// A limit on tasks leaves less room than the run needs.
    #[error("this run needs about {needed} tasks (threads and processes) at once, but {limit}; lower the run's task count or raise the limit")]
    TaskLimit {
        /// Tasks the run needs at once.
        needed: u64,
        /// The tightest limit.
        limit: TaskLimit,
    },
    /// `/proc/meminfo` has no readable `MemAvailable` line.
    #[error("cannot read MemAvailable from /proc/meminfo")]
    MemAvailable,
    /// statvfs(2) of a directory failed.
    #[error("cannot read the free space of {}: {source}", .dir.display())]
    DiskSpace {
        /// The directory asked about.
        dir: PathBuf,
        /// The system call's error.
        source: std::io::Error,
    },
    /// Something listens on a port a server of the run is to listen on.
    #[error("port {port} on 127.0.0.1 is in use{}", .holder.as_ref().map_or(String::new(), |h| format!(" by {h}")))]
    PortInUse {
        /// The port.
        port: u16,
        /// The process listening on it (`process 123 (nginx)`), when /proc shows it.
        holder: Option<String>,
    },
    /// Listening on a port failed for another reason.
    #[error("port {port} on 127.0.0.1 cannot be listened on: {source}")]
    PortUnusable {
        /// The port.
        port: u16,
        /// The system call's error.
        source: std::io::Error,
    },
}

/// The open-file limit (`RLIMIT_NOFILE`); `u64::MAX` stands for unlimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdLimit {
    /// The soft limit, in force.
    pub soft: u64,
    /// The hard limit, up to which an unprivileged process may raise the soft one.
    pub hard: u64,
}

/// The open-file limit in force.
pub fn fd_limit() -> FdLimit {
    let l = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    FdLimit {
        soft: l.current.unwrap_or(u64::MAX),
        hard: l.maximum.unwrap_or(u64::MAX),
    }
}

/// Make sure at least `needed` files may be open: if the soft limit is lower, raise it to the
/// hard limit (no privilege needed). Fails with [`HostError::FdLimit`] when even the hard limit
/// is lower, or raising fails.
pub fn raise_fd_limit(needed: u64) -> Result<(), HostError> {
    let limit = fd_limit();
    if limit.soft >= needed {
        return Ok(());
    }
    if limit.hard >= needed {
        let hard = (limit.hard != u64::MAX).then_some(limit.hard);
        let raised = rustix::process::Rlimit {
            current: hard,
            maximum: hard,
        };
        if rustix::process::setrlimit(rustix::process::Resource::Nofile, raised).is_ok() {
            return Ok(());
        }
    }
    Err(HostError::FdLimit { needed, limit })
}

/// One limit on how many tasks (processes and threads) may exist, and its use now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskLimit {
    /// Which limit, in words (`the pids cgroup /sys/fs/cgroup/pids/x (pids.max)`).
    pub what: String,
    /// The most tasks it allows.
    pub max: u64,
    /// Tasks it counts now.
    pub in_use: u64,
}

impl TaskLimit {
    /// How many more tasks it lets this process create.
    pub fn room(&self) -> u64 {
        self.max.saturating_sub(self.in_use)
    }
}

impl std::fmt::Display for TaskLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} allows {} tasks and {} are in use",
            self.what, self.max, self.in_use
        )
    }
}

/// The limits on tasks that bind this process, tightest (least room) first: its pids cgroup
/// and every ancestor with a `pids.max`, `RLIMIT_NPROC` for its real user (which the kernel
/// does not enforce for root), `kernel.threads-max` and `kernel.pid_max`. Limits that cannot be read are left
/// out.
pub fn task_limits() -> Vec<TaskLimit> {
    let mut limits = Vec::new();
    if let Some(mut dir) = crate::procfs::pids_cgroup() {
        // A cgroup's limit binds its whole subtree: look up to the root of the hierarchy.
        loop {
            if let Some((Some(max), in_use)) = crate::procfs::cgroup_pids(&dir) {
                limits.push(TaskLimit {
                    what: format!("the pids cgroup {} (pids.max)", dir.display()),
                    max,
                    in_use,
                });
            }
            if !dir.pop() || !dir.join("pids.current").exists() {
                break;
            }
        }
    }
    let uid = rustix::process::getuid().as_raw();
    let nproc = rustix::process::getrlimit(rustix::process::Resource::Nproc);
    if let (Some(max), false) = (nproc.current, uid == 0) {
        limits.push(TaskLimit {
            what: format!("RLIMIT_NPROC (`ulimit -u`) of uid {uid}"),
            max,
            in_use: crate::procfs::tasks_of_uid(uid),
        });
    }
    if let Some(in_use) = crate::procfs::tasks_in_system() {
        for (what, max) in [
            (
                "kernel.threads-max",
                crate::procfs::kernel_limit("threads-max"),
            ),
            ("kernel.pid_max", crate::procfs::kernel_limit("pid_max")),
        ] {
            if let Some(max) = max {
                limits.push(TaskLimit {
                    what: what.into(),
                    max,
                    in_use,
                });
            }
        }
    }
    limits.sort_by_key(TaskLimit::room);
    limits
}

/// Refuse a run that needs `needed` tasks at once when a limit leaves less room than that
/// ([`HostError::TaskLimit`] names the tightest).
pub fn check_task_room(needed: u64) -> Result<(), HostError> {
    match task_limits().into_iter().next() {
        Some(limit) if limit.room() < needed => Err(HostError::TaskLimit { needed, limit }),
        _ => Ok(()),
    }
}

/// The cause of a failure to create a task (fork, clone, pthread_create) in words: for EAGAIN
/// (a limit on tasks was reached) it names the errno and the limits with their use now.
pub fn explain_task_failure(e: &std::io::Error) -> String {
    if e.raw_os_error() != Some(libc::EAGAIN) {
        return e.to_string();
    }
    let limits = task_limits();
    let which = if limits.is_empty() {
        "no limit on tasks could be read".to_string()
    } else {
        limits
            .iter()
            .map(TaskLimit::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    };
    format!(
        "EAGAIN: the kernel refused to create another task, a limit on tasks was reached ({which})"
    )
}

/// Memory available for new allocations without swapping, in bytes (`MemAvailable`).
pub fn available_memory() -> Result<u64, HostError> {
    crate::procfs::mem_available().ok_or(HostError::MemAvailable)
}

/// Bytes an unprivileged user may still write in the file system holding `dir`
/// (statvfs's `f_bavail * f_frsize`).
pub fn free_disk_space(dir: &Path) -> Result<u64, HostError> {
    let st = rustix::fs::statvfs(dir).map_err(|e| HostError::DiskSpace {
        dir: dir.to_path_buf(),
        source: e.into(),
    })?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Number of CPUs online: the CPUs listed in `/sys/devices/system/cpu/online`, which is what
/// glibc's `sysconf(_SC_NPROCESSORS_ONLN)` reads; at least 1.
pub fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| count_cpu_list(s.trim()))
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
        .max(1)
}

/// The number of CPUs in a kernel CPU list such as `0-3,8,10-11`.
fn count_cpu_list(list: &str) -> Option<usize> {
    let mut n = 0;
    for part in list.split(',') {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    Some(n)
}

/// Whether this process may give a thread a real-time policy (SCHED_FIFO 1 is tried on a
/// throw-away thread).
pub fn realtime_allowed() -> bool {
    use schedlab_workload::knobs::{Knobs, SchedPolicy};
    crate::knobs::try_knobs(Knobs {
        policy: Some(SchedPolicy::Fifo(1)),
        ..Knobs::default()
    })
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_cpu_lists() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
    }

    #[test]
    fn reads_this_host() {
        let cpus = online_cpus();
        // SAFETY: plain sysconf, to compare with what glibc says.
        let libc_cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        assert_eq!(cpus as i64, libc_cpus as i64);
        assert!(available_memory().unwrap() > 0);
        assert!(free_disk_space(&std::env::temp_dir()).unwrap() > 0);
        assert!(matches!(
            free_disk_space(Path::new("/no/such/dir")),
            Err(HostError::DiskSpace { .. })
        ));
        let l = fd_limit();
        assert!(l.soft <= l.hard && l.soft > 0);
    }

    #[test]
    fn task_limits_are_read_and_worded() {
        let limits = task_limits();
        assert!(
            limits.iter().any(|l| l.what == "kernel.threads-max"),
            "{limits:?}"
        );
        assert!(limits.windows(2).all(|w| w[0].room() <= w[1].room()));
        check_task_room(1).unwrap();
        let e = check_task_room(u64::MAX).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("this run needs about {} tasks", u64::MAX)),
            "{e}"
        );
        assert!(e.contains("allows"), "{e}");
        let eagain = explain_task_failure(&std::io::Error::from_raw_os_error(libc::EAGAIN));
        assert!(eagain.starts_with("EAGAIN: the kernel refused to create another task"));
        assert!(eagain.contains("kernel.threads-max allows"), "{eagain}");
        let other = std::io::Error::from_raw_os_error(libc::ENOMEM);
        assert_eq!(explain_task_failure(&other), other.to_string());
    }

    #[test]
    fn fd_limit_is_raised_to_the_hard_limit_or_refused() {
        let l = fd_limit();
        raise_fd_limit(l.soft).unwrap();
        if l.hard != u64::MAX {
            let e = raise_fd_limit(l.hard + 1).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "this run needs about {} open files but the limit is {} (hard {})",
                    l.hard + 1,
                    fd_limit().soft,
                    l.hard
                )
            );
        } else {
            eprintln!("skipped: the hard open-file limit is unlimited here, so no request exceeds it; run under `ulimit -Hn 4096` to check the refusal");
        }
        if l.soft < l.hard {
            raise_fd_limit(l.soft + 1).unwrap();
            assert_eq!(fd_limit().soft, l.hard);
        } else {
            eprintln!("skipped: the soft open-file limit already equals the hard one; run under `ulimit -Sn 256` to check the raise");
        }
    }
}

/// Check that a server can listen on 127.0.0.1:`port` now; the error names the port and,
/// when /proc shows it, the process that listens on it.
pub fn check_port_free(port: u16) -> Result<(), HostError> {
    match std::net::TcpListener::bind(("127.0.0.1", port)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(HostError::PortInUse {
            port,
            holder: port_holder(port),
        }),
        Err(source) => Err(HostError::PortUnusable { port, source }),
    }
}

/// The process listening on TCP `port` (`process 123 (nginx)`), from /proc/net/tcp{,6} and
/// the sockets in `/proc/PID/fd`.
pub fn port_holder(port: u16) -> Option<String> {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let local_port = f.get(1)?.rsplit_once(':')?.1;
                    // State 0A is LISTEN; field 9 the socket's inode.
                    (u16::from_str_radix(local_port, 16).ok()? == port && *f.get(3)? == "0A")
                        .then(|| f.get(9).map(|s| format!("socket:[{s}]")))?
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if inodes.is_empty() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(link) = std::fs::read_link(fd.path()) {
                if inodes.iter().any(|i| link.as_os_str() == i.as_str()) {
                    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .map(|c| c.trim().to_string())
                        .unwrap_or_default();
                    return Some(format!("process {pid} ({comm})"));
                }
            }
        }
    }
    Some("a socket of a process this user cannot see".into())
}

#[cfg(test)]
mod port_tests {
    use super::*;

    #[test]
    fn a_port_in_use_is_named_with_its_process() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let e = check_port_free(port).unwrap_err().to_string();
        let me = format!("process {}", std::process::id());
        assert!(e.contains(&port.to_string()) && e.contains(&me), "{e}");
        drop(l);
        check_port_free(port).unwrap();
    }
}
