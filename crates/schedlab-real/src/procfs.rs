//! Everything schedlab reads from /proc, parsed in this one module: per-thread scheduler
//! statistics from `/proc/thread-self/sched` (CONFIG_SCHED_DEBUG's `proc_sched_show_task`,
//! falling back to `getrusage(RUSAGE_THREAD)` where that file is absent), a thread's settings
//! (`stat`, `sched`, `status`), a process's state (for stale tracefs instances), the mount table
//! (`/proc/mounts`, to find tracefs), `MemAvailable` (`/proc/meminfo`) and the CPU model
//! (`/proc/cpuinfo`).
//!
//! Why not the `procfs` crate: it has no parser for the `sched` file (the one we read most,
//! CONFIG_SCHED_DEBUG's free-form `key : value` lines), so we would parse by hand anyway; the
//! other five files need a few lines each, and the tracefs cleanup must read the mount table's
//! octal escapes byte-exactly. A dependency tree for that is no gain.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A snapshot of one thread's scheduler counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedSnapshot {
    /// Voluntary context switches.
    pub voluntary: u64,
    /// Involuntary context switches.
    pub involuntary: u64,
    /// Migrations (only from /proc).
    pub migrations: Option<u64>,
}

/// Where a snapshot came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotSource {
    /// `/proc/thread-self/sched`.
    ProcSched,
    /// `getrusage(RUSAGE_THREAD)`.
    Rusage,
}

impl SnapshotSource {
    /// How the record names this source.
    pub fn name(self) -> &'static str {
        match self {
            SnapshotSource::ProcSched => "/proc/thread-self/sched",
            SnapshotSource::Rusage => "getrusage(RUSAGE_THREAD)",
        }
    }
}

/// Parse the `key : value` lines of a `/proc/<pid>/task/<tid>/sched` file.
pub fn parse_sched(text: &str) -> BTreeMap<&str, &str> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// Extract the counters from a parsed sched file.
pub fn snapshot_from_sched(fields: &BTreeMap<&str, &str>) -> Option<SchedSnapshot> {
    let num = |k: &str| {
        fields
            .get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .map(|v| v as u64)
    };
    Some(SchedSnapshot {
        voluntary: num("nr_voluntary_switches")?,
        involuntary: num("nr_involuntary_switches")?,
        migrations: num("se.nr_migrations"),
    })
}

/// Take a snapshot of the calling thread's counters.
pub fn snapshot_self() -> (SchedSnapshot, SnapshotSource) {
    if let Ok(text) = std::fs::read_to_string("/proc/thread-self/sched") {
        if let Some(s) = snapshot_from_sched(&parse_sched(&text)) {
            return (s, SnapshotSource::ProcSched);
        }
    }
    let ru = crate::sys::thread_rusage();
    (
        SchedSnapshot {
            voluntary: ru.ru_nvcsw as u64,
            involuntary: ru.ru_nivcsw as u64,
            migrations: None,
        },
        SnapshotSource::Rusage,
    )
}

/// Voluntary and involuntary context switches of the calling thread so far
/// (`getrusage(RUSAGE_THREAD)`: no file is opened, which matters — see the runner).
pub fn rusage_switches() -> (u64, u64) {
    let ru = crate::sys::thread_rusage();
    (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

/// The counters of thread `tid` of process `pid` from `/proc/<pid>/task/<tid>/sched`.
pub fn task_snapshot(pid: i32, tid: i32) -> Option<SchedSnapshot> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/sched")).ok()?;
    snapshot_from_sched(&parse_sched(&text))
}

/// The scheduling settings of thread `tid` of process `pid`, read back from /proc.
pub fn observed_settings_of(pid: i32, tid: i32) -> BTreeMap<String, String> {
    observed_settings_in(&format!("/proc/{pid}/task/{tid}"))
}

/// The scheduling settings of process `pid` (its main thread), read back from /proc.
pub fn observed_settings_of_process(pid: i32) -> BTreeMap<String, String> {
    observed_settings_in(&format!("/proc/{pid}"))
}

/// The processes whose process group is `pgrp`, from each `/proc/<pid>/stat`.
pub fn process_group_members(pgrp: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    // After the comm: state, ppid, pgrp.
                    let rest = s.rsplit_once(')')?.1.to_string();
                    rest.split_whitespace().nth(2)?.parse::<i32>().ok()
                })
                == Some(pgrp)
        })
        .collect()
}

/// What the processes of a group (a server and its workers) used, summed over their threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupUsage {
    /// CPU time, ns: each thread's `schedstat` run time (its `stat` utime+stime in clock ticks
    /// where `schedstat` is absent), plus each process's `cutime`+`cstime` (its reaped children).
    pub cpu_ns: u64,
    /// Voluntary switches of the live threads (`status`' `voluntary_ctxt_switches`).
    pub voluntary: u64,
    /// Involuntary switches of the live threads (`nonvoluntary_ctxt_switches`).
    pub involuntary: u64,
}

/// The usage of every process of group `pgrp` and of the children they reaped, read now.
pub fn group_usage(pgrp: i32) -> GroupUsage {
    let tick_ns = 1_000_000_000 / crate::sys::clock_ticks_per_second();
    let mut u = GroupUsage::default();
    for pid in process_group_members(pgrp) {
        if let Some(f) = stat_fields(&format!("/proc/{pid}/stat")) {
            // Fields after the comm, from state (0): cutime 13, cstime 14.
            u.cpu_ns +=
                (f.get(13).copied().unwrap_or(0) + f.get(14).copied().unwrap_or(0)) * tick_ns;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let dir = t.path();
            let ran = std::fs::read_to_string(dir.join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
            u.cpu_ns += match ran {
                Some(ns) => ns,
                // utime 11, stime 12.
                None => stat_fields(&dir.join("stat").to_string_lossy()).map_or(0, |f| {
                    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) * tick_ns
                }),
            };
            let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
            for line in status.lines() {
                let value = |l: &str| l.split_whitespace().nth(1)?.parse::<u64>().ok();
                if line.starts_with("voluntary_ctxt_switches:") {
                    u.voluntary += value(line).unwrap_or(0);
                } else if line.starts_with("nonvoluntary_ctxt_switches:") {
                    u.involuntary += value(line).unwrap_or(0);
                }
            }
        }
    }
    u
}

/// The numeric fields of a `stat` file after its comm, from the state (0, not numeric: 0).
fn stat_fields(path: &str) -> Option<Vec<u64>> {
    let s = std::fs::read_to_string(path).ok()?;
    let rest = s.rsplit_once(')')?.1;
    Some(
        rest.split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect(),
    )
}

fn observed_settings_in(dir: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(stat) = std::fs::read_to_string(format!("{dir}/stat")) {
        // Fields after the parenthesised comm; nice is field 19 (index 16 after the comm).
        if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
            if let Some(nice) = rest.split_whitespace().nth(16) {
                out.insert("nice".into(), nice.to_string());
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(format!("{dir}/sched")) {
        let f = parse_sched(&text);
        let policy = match f.get("policy").copied() {
            Some("0") => "other",
            Some("1") => "fifo",
            Some("2") => "rr",
            Some("3") => "batch",
            Some("5") => "idle",
            Some("6") => "deadline",
            Some(_) | None => "",
        };
        if !policy.is_empty() {
            out.insert("policy".into(), policy.into());
        }
        if let Some(p) = f.get("prio") {
            out.insert("prio".into(), p.to_string());
        }
        if let Some(s) = f.get("se.slice") {
            out.insert("slice_ns".into(), s.to_string());
        }
    }
    if let Ok(status) = std::fs::read_to_string(format!("{dir}/status")) {
        if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            out.insert(
                "cpus".into(),
                l["Cpus_allowed_list:".len()..].trim().to_string(),
            );
        }
    }
    out
}

/// The fair class's slice of the calling thread, ns: `se.slice` of `/proc/thread-self/sched`
/// (Linux 6.6+; `None` before, or when the file is unreadable). For a thread without a custom
/// slice this is the kernel's `sysctl_sched_base_slice`, already scaled for the CPU count.
pub fn own_fair_slice_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
    parse_sched(&text).get("se.slice")?.parse().ok()
}

/// The state letter of process `pid` (`R`, `S`, `Z`, …: the field after the parenthesised comm
/// of `/proc/<pid>/stat`), if the process exists.
pub fn process_state(pid: i32) -> Option<u8> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    state_from_stat(&stat)
}

/// The state letter of task `tid` of process `pid` (`/proc/<pid>/task/<tid>/stat`), if it
/// exists.
pub fn task_state(pid: i32, tid: i32) -> Option<u8> {
    let stat = std::fs::read(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    state_from_stat(&stat)
}

/// The state letter in the text of a `stat` file: the comm may hold any bytes, so the rightmost
/// `)` ends it.
fn state_from_stat(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    stat.get(close + 2).copied()
}

/// Whether a process with this pid exists (in our pid namespace): one that is gone, or a
/// zombie (killed, not yet reaped: it holds nothing any more), does not. A pid of 0 or below is
/// not ours to judge and counts as alive.
pub fn pid_alive(pid: i32) -> bool {
    let Some(p) = rustix::process::Pid::from_raw(pid).filter(|_| pid > 0) else {
        return true;
    };
    // kill(pid, 0) only checks for existence and permission.
    if let Err(e) = rustix::process::test_kill_process(p) {
        return e != rustix::io::Errno::SRCH;
    }
    // A leader thread that exited early also shows as a zombie while its other threads live on.
    let zombie = matches!(process_state(pid), Some(b'Z') | Some(b'X'));
    !zombie || thread_count(pid).is_some_and(|n| n > 1)
}

/// How many threads process `pid` has (entries of `/proc/<pid>/task`), if it exists.
pub fn thread_count(pid: i32) -> Option<usize> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()
        .map(|d| d.count())
}

/// One line of the mount table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// The mount point, unescaped.
    pub dir: std::path::PathBuf,
    /// The file system type (`tracefs`, `debugfs`, …).
    pub fstype: String,
    /// The mount options (`rw,relatime,pids`: a cgroup v1 mount lists its controllers).
    pub options: String,
}

/// The mount table of our mount namespace (`/proc/mounts`); empty if unreadable.
pub fn mounts() -> Vec<Mount> {
    std::fs::read("/proc/mounts")
        .map(|m| parse_mounts(&m))
        .unwrap_or_default()
}

/// Parse `/proc/mounts` (`device dir fstype options 0 0` per line).
fn parse_mounts(text: &[u8]) -> Vec<Mount> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let mut fields = line.split(|&b| b == b' ');
        let (Some(_dev), Some(dir), Some(fstype)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        out.push(Mount {
            dir: std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&unescape_mount_path(dir))),
            fstype: String::from_utf8_lossy(fstype).into_owned(),
            options: String::from_utf8_lossy(fields.next().unwrap_or_default()).into_owned(),
        });
    }
    out
}

/// /proc/mounts escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mount_path(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\'
            && i + 3 < s.len()
            && s[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b))
        {
            out.push((s[i + 1] - b'0') * 64 + (s[i + 2] - b'0') * 8 + (s[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// The directory of this process's cgroup in the hierarchy that holds the pids controller
/// (cgroup v1's `pids` mount, else the cgroup v2 mount), from `/proc/self/cgroup` and the mount
/// table; `None` if neither is there.
pub fn pids_cgroup() -> Option<std::path::PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = mounts();
    let v1 = mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == "pids"));
    let (mount, path) = match v1 {
        Some(m) => (m, cgroup_path(&own, Some("pids"))?),
        None => (
            mounts.iter().find(|m| m.fstype == "cgroup2")?,
            cgroup_path(&own, None)?,
        ),
    };
    Some(mount.dir.join(path.trim_start_matches('/')))
}

/// The path of the line of a `/proc/<pid>/cgroup` text for cgroup v1 `controller`, or the
/// cgroup v2 line (`0::/path`) when `None`.
fn cgroup_path(text: &str, controller: Option<&str>) -> Option<String> {
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let ours = match controller {
            Some(c) => controllers.split(',').any(|x| x == c),
            None => id == "0" && controllers.is_empty(),
        };
        ours.then(|| path.to_string())
    })
}

/// A cgroup's `pids.max` (`None` for `max`, unlimited) and `pids.current`, if it has them.
pub fn cgroup_pids(dir: &std::path::Path) -> Option<(Option<u64>, u64)> {
    let max = std::fs::read_to_string(dir.join("pids.max")).ok()?;
    let current = std::fs::read_to_string(dir.join("pids.current")).ok()?;
    let max = match max.trim() {
        "max" => None,
        m => Some(m.parse().ok()?),
    };
    Some((max, current.trim().parse().ok()?))
}

/// How many tasks (threads) exist now: the fourth field of `/proc/loadavg` (`running/total`).
pub fn tasks_in_system() -> Option<u64> {
    parse_loadavg_tasks(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

fn parse_loadavg_tasks(loadavg: &str) -> Option<u64> {
    loadavg
        .split_whitespace()
        .nth(3)?
        .split_once('/')?
        .1
        .parse()
        .ok()
}

/// How many tasks are runnable now: `procs_running` of `/proc/stat` (this thread included).
pub fn runnable_tasks() -> Option<u64> {
    parse_procs_running(&std::fs::read_to_string("/proc/stat").ok()?)
}

fn parse_procs_running(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("procs_running "))?
        .trim()
        .parse()
        .ok()
}

/// The machine's CPU time so far, from the `cpu` line of `/proc/stat`, in clock ticks
/// ([`crate::sys::clock_ticks_per_second`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MachineCpuTime {
    /// Time spent running tasks: `user` + `nice` + `system` (a guest's time is inside `user`).
    /// Interrupt and softirq time are left out: with IRQ time accounting they are charged to no
    /// task, so no process's own CPU time could be set against them.
    pub busy: u64,
    /// Time the CPUs were idle (the `idle` column; iowait is apart).
    pub idle: u64,
    /// Time the hypervisor ran something else while this machine's vCPUs wanted to run.
    pub steal: u64,
    /// Every column: busy, idle, iowait, irq, softirq and steal (guest time is inside `user`).
    pub total: u64,
}

/// The `cpu` line of `/proc/stat` now.
pub fn machine_cpu_time() -> Option<MachineCpuTime> {
    parse_machine_cpu_time(&std::fs::read_to_string("/proc/stat").ok()?)
}

fn parse_machine_cpu_time(stat: &str) -> Option<MachineCpuTime> {
    let line = stat.lines().find_map(|l| l.strip_prefix("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    let col = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    Some(MachineCpuTime {
        busy: col(0) + col(1) + col(2),
        idle: col(3),
        steal: col(7),
        total: (0..8).map(col).sum(),
    })
}

/// Other tasks competing for the CPUs: the median over 21 looks, 5 ms apart, of the runnable
/// tasks less the caller. A probe timed beside them is inflated by whatever they take.
pub fn competing_runnable() -> Option<u64> {
    let mut seen = Vec::with_capacity(21);
    for i in 0..21 {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        seen.push(runnable_tasks()?.saturating_sub(1));
    }
    seen.sort_unstable();
    Some(seen[seen.len() / 2])
}

/// A number in `/proc/sys/kernel/<name>` (`threads-max`: the most tasks the kernel lets exist
/// at once; `pid_max`: one more than the highest pid).
pub fn kernel_limit(name: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// How many tasks (threads) the processes of real user `uid` have now (the count that
/// `RLIMIT_NPROC` limits): the `Threads:` of every `/proc/<pid>/status` whose real uid it is.
pub fn tasks_of_uid(uid: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.as_encoded_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        if let Ok(status) = std::fs::read_to_string(e.path().join("status")) {
            n += threads_of_uid_in_status(&status, uid);
        }
    }
    n
}

/// `Threads:` of a `status` text whose real uid (the first of `Uid:`) is `uid`, else 0.
fn threads_of_uid_in_status(status: &str, uid: u32) -> u64 {
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    if field("Uid:") == Some(u64::from(uid)) {
        field("Threads:").unwrap_or(1)
    } else {
        0
    }
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
pub fn mem_available() -> Option<u64> {
    parse_mem_available(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
pub fn mem_total_bytes() -> Option<u64> {
    meminfo_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemTotal:")
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    meminfo_field(meminfo, "MemAvailable:")
}

/// A `/proc/meminfo` field in kB, as bytes.
fn meminfo_field(meminfo: &str, field: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// The first `model name` of `/proc/cpuinfo`.
pub fn cpu_model() -> Option<String> {
    parse_cpu_model(&std::fs::read_to_string("/proc/cpuinfo").ok()?)
}

fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "cat (2181, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :        109163.330082
se.nr_migrations                             :                    7
nr_switches                                  :                   12
nr_voluntary_switches                        :                    9
nr_involuntary_switches                      :                    3
se.load.weight                               :              1048576
policy                                       :                    0
prio                                         :                  120
se.slice                                     :              1400000
";

    #[test]
    fn parses_proc_sched() {
        let f = parse_sched(SAMPLE);
        assert_eq!(f["prio"], "120");
        let s = snapshot_from_sched(&f).unwrap();
        assert_eq!(
            s,
            SchedSnapshot {
                voluntary: 9,
                involuntary: 3,
                migrations: Some(7)
            }
        );
        assert!(snapshot_from_sched(&parse_sched("garbage")).is_none());
    }

    #[test]
    fn parses_the_small_files() {
        assert_eq!(
            state_from_stat(b"42 (a) b) Z 1 42 42 0 -1"),
            Some(b'Z'),
            "the rightmost ) ends the comm"
        );
        assert_eq!(state_from_stat(b"garbage"), None);
        let m = parse_mounts(
            b"sysfs /sys sysfs rw 0 0\ntracefs /tmp/a\\040b\\134c tracefs rw 0 0\nshort line\n",
        );
        assert_eq!(
            m,
            vec![
                Mount {
                    dir: "/sys".into(),
                    fstype: "sysfs".into(),
                    options: "rw".into()
                },
                Mount {
                    dir: "/tmp/a b\\c".into(),
                    fstype: "tracefs".into(),
                    options: "rw".into()
                }
            ]
        );
        assert_eq!(unescape_mount_path(br"/tmp/a\040b\134c"), b"/tmp/a b\\c");
        let cgroup = "9:name=systemd:/\n8:pids:/user/x\n4:memory,blkio:/m\n0::/unified/y\n";
        assert_eq!(
            cgroup_path(cgroup, Some("pids")).as_deref(),
            Some("/user/x")
        );
        assert_eq!(cgroup_path(cgroup, Some("blkio")).as_deref(), Some("/m"));
        assert_eq!(cgroup_path(cgroup, None).as_deref(), Some("/unified/y"));
        assert_eq!(cgroup_path("1:cpu:/\n", None), None);
        assert_eq!(
            parse_loadavg_tasks("7.17 6.20 9.44 4/106 9789\n"),
            Some(106)
        );
        assert_eq!(parse_loadavg_tasks("garbage"), None);
        let stat = "cpu  1 2 3\nctxt 99\nprocs_running 3\nprocs_blocked 0\n";
        assert_eq!(parse_procs_running(stat), Some(3));
        assert_eq!(parse_procs_running("cpu 1\n"), None);
        assert!(runnable_tasks().is_some_and(|n| n >= 1), "this thread runs");
        let status = "Name:\tx\nUid:\t65534\t0\t0\t0\nThreads:\t7\n";
        assert_eq!(threads_of_uid_in_status(status, 65534), 7);
        assert_eq!(threads_of_uid_in_status(status, 0), 0);
        let meminfo = "MemTotal:       16314444 kB\nMemFree:         1000000 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(parse_mem_available(meminfo), Some(8_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            parse_cpu_model(cpuinfo).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
    }

    #[test]
    fn reads_this_machine() {
        assert!(mem_available().is_some_and(|b| b > 0));
        let me = std::process::id() as i32;
        assert!(matches!(process_state(me), Some(b'R' | b'S')));
        assert!(thread_count(me).is_some_and(|n| n >= 1));
        assert!(mounts().iter().any(|m| m.dir == std::path::Path::new("/")));
    }

    #[test]
    fn reads_own_thread() {
        let (a, _) = snapshot_self();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (b, _) = snapshot_self();
        assert!(
            b.voluntary > a.voluntary,
            "a sleep is a voluntary switch: {a:?} -> {b:?}"
        );
        let obs = observed_settings_of(std::process::id() as i32, crate::sys::gettid());
        assert!(
            obs.contains_key("nice") && obs.contains_key("cpus"),
            "{obs:?}"
        );
    }

    #[test]
    fn parses_the_machines_cpu_line() {
        let stat =
            "cpu  100 5 50 1000 7 3 2 11 40 0\ncpu0 50 2 25 500 3 1 1 5 20 0\nprocs_running 3\n";
        assert_eq!(
            parse_machine_cpu_time(stat),
            Some(MachineCpuTime {
                busy: 155,
                idle: 1000,
                steal: 11,
                total: 1178
            })
        );
        assert_eq!(parse_machine_cpu_time("cpu  1 2\n"), None);
        assert_eq!(parse_machine_cpu_time("intr 5\n"), None);
        assert!(machine_cpu_time().is_some_and(|t| t.total > 0));
    }
}
