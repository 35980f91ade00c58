//! Wakeup and wakeup-preemption counters from the kernel's scheduler tracepoints.
//!
//! [`SchedTrace`] records two tracepoints defined in the kernel's
//! `include/trace/events/sched.h` into a private tracefs instance
//! (`instances/schedlab-<pid>-<n>`; no global tracing setting is touched):
//!
//! - `sched:sched_wakeup` (`comm pid prio target_cpu`), emitted by `ttwu_do_wakeup()` in
//!   `kernel/sched/core.c` each time `try_to_wake_up()` makes a sleeping task runnable. `pid` is
//!   the wakee and `target_cpu` the CPU whose run queue it was put on.
//! - `sched:sched_switch` (`prev_comm prev_pid prev_prio prev_state ==> next_comm next_pid
//!   next_prio`), emitted by `__schedule()` on the CPU that switches.
//!
//! Both are filtered in the kernel on the task name (`comm`), which the caller gives a common
//! prefix: `sched_wakeup` keeps `comm ~ "PREFIX*"` and `sched_switch` keeps
//! `next_comm ~ "PREFIX*" || prev_comm ~ "PREFIX*"` (switches to *and* from our tasks, so that we
//! know which of our tasks are on a CPU). [`SchedTrace::collect`] then reads the instance's text
//! `trace` file (all CPUs merged in timestamp order by the kernel) and counts, for the tids asked
//! about:
//!
//! - **wakeups**: `sched_waking` events whose `pid` is the tid (every wakeup of a sleeping task;
//!   Linux 6.18 emits no `sched_wakeup` on some wakeup paths, measured ~1 % missing in a
//!   cross-CPU pipe ping-pong), or `sched_wakeup` events on kernels without `sched_waking`.
//! - **wakeup preemptions**: a wakeup of tid T with `target_cpu` C marks T *pending on C*,
//!   unless T was on a CPU at that moment (a wakeup that raced with T going to sleep; nothing
//!   can be preempted for T then). The first `sched_switch` that runs T (`next_pid == T`) clears
//!   the mark; it counts as one wakeup preemption of T if it happened on C, the previous task was
//!   not an idle task (`prev_pid != 0`) and the previous task was preempted, i.e. still runnable:
//!   `prev_state` is `R+` or `R`. A switch that runs a task with no pending wakeup on that CPU
//!   (a tick/slice preemption, a yield) never counts; a switch away from T (`prev_pid == T`)
//!   also clears a pending mark, since T evidently ran.
//!
//! Why `R` as well as `R+`: `__trace_sched_switch_state()` in `sched.h` reports the `+`
//! (`TASK_REPORT_MAX`, `prev_state & 0x100` in the binary record) only when `__schedule()` was
//! entered as an *in-kernel* preemption (`preempt_schedule*()`, `cond_resched()`). A user task
//! preempted because a wakeup set `TIF_NEED_RESCHED` usually switches out on its way back to user
//! space (`exit_to_user_mode_loop()` calls plain `schedule()`), which reports `TASK_RUNNING`,
//! printed `R`. On a `PREEMPT_NONE`/`PREEMPT_DYNAMIC=none` kernel practically all wakeup
//! preemptions look like that (measured on Linux 6.18, `PREEMPT_DYNAMIC` at `none`: 0 `R+` and
//! 160 000 `R` switches in 200 000 pipe round trips of two threads pinned to one CPU). The price is that a `sched_yield()` handing the CPU to a pending wakee counts too.
//!
//! Every count is a lower bound when events were lost: [`TraceCounts::lost`] sums the
//! `overrun`, `commit overrun` and `dropped events` lines of the instance's
//! `per_cpu/cpuN/stats` (the instance runs with `overwrite` off, so a full buffer drops the
//! newest events rather than the oldest).
//!
//! If no tracefs is mounted, one is mounted on a fresh directory
//! `$TMPDIR/schedlab-tracefs-<pid>-<n>` and detached and removed on drop. After a `SIGKILL`
//! the instance (and such a mount) stays behind; [`cleanup_stale_instances`], also called by
//! [`SchedTrace::open`], removes those whose process is gone.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::fs::{self, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Prefix of our instance directories: `instances/schedlab-<pid>-<n>`.
const INSTANCE_PREFIX: &str = "schedlab-";
/// Prefix of our private mount points: `$TMPDIR/schedlab-tracefs-<pid>-<n>`.
const MOUNT_PREFIX: &str = "schedlab-tracefs-";
/// The tracepoints we record, all in the `sched` system.
const EVENTS: [&str; 3] = ["sched_waking", "sched_wakeup", "sched_switch"];

static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(0);
static NEXT_MOUNT: AtomicU64 = AtomicU64::new(0);

/// Per-tid wakeup counts for one repetition.
#[derive(Clone, Debug, Default)]
pub struct TraceCounts {
    /// Counts per thread id; every tid passed to [`SchedTrace::collect`] has an entry.
    pub per_tid: HashMap<i32, TidCounts>,
    /// Events the kernel could not store (buffer full); when non-zero every count is a lower
    /// bound.
    pub lost: u64,
}

/// The counts of one thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TidCounts {
    /// `sched_wakeup` events that woke this thread.
    pub wakeups: u64,
    /// Of those wakeups, how many preempted the task running on the wakee's target CPU (see
    /// the module documentation for the exact rule).
    pub wakeup_preemptions: u64,
}

/// A private tracefs instance recording sched_wakeup and sched_switch.
#[derive(Debug)]
pub struct SchedTrace {
    /// The tracefs mount used.
    root: PathBuf,
    /// Our own mount point, if no tracefs was mounted: unmounted and removed on drop.
    private_mount: Option<PathBuf>,
    /// `root/instances/schedlab-<pid>-<n>`, once created.
    instance: Option<PathBuf>,
    /// Whether `tracing_on` is 1.
    recording: bool,
    /// The lost-event total when recording last started.
    lost_baseline: u64,
    /// Whether the kernel has `sched_waking` (Linux 4.3+); wakeups are counted on it.
    has_waking: bool,
}

impl SchedTrace {
    /// Open: find a mounted tracefs (or mount one privately), remove stale instances of dead
    /// schedlab processes, create `instances/schedlab-<pid>-<n>` with `buffer_kb_per_cpu` KiB of
    /// buffer per CPU, and enable `sched_wakeup` and `sched_switch` in it, filtered in the
    /// kernel to tasks whose name starts with `comm_prefix`. Recording is off until
    /// [`start`](Self::start).
    pub fn open(comm_prefix: &str, buffer_kb_per_cpu: usize) -> Result<SchedTrace, String> {
        validate_prefix(comm_prefix)?;
        if buffer_kb_per_cpu == 0 {
            return Err("tracefs: buffer size must be at least 1 KiB per CPU".into());
        }
        cleanup_stale_mounts();
        let (root, private_mount) = match find_mounted_tracefs() {
            Some(root) => (root, None),
            None => {
                let dir = mount_private().map_err(|e| match unreadable_tracefs() {
                    Some(p) => format!(
                        "tracefs: permission denied accessing {} (needs CAP_SYS_ADMIN / root)",
                        p.display()
                    ),
                    None => e,
                })?;
                (dir.clone(), Some(dir))
            }
        };
        // From here on, Drop undoes whatever was done.
        let mut t = SchedTrace {
            root,
            private_mount,
            instance: None,
            recording: false,
            lost_baseline: 0,
            has_waking: false,
        };
        cleanup_stale_in(&t.root);
        let instances = t.root.join("instances");
        if !instances.is_dir() {
            return Err(format!(
                "tracefs not available: {} has no instances directory",
                t.root.display()
            ));
        }
        let pid = std::process::id();
        let inst = loop {
            let n = NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed);
            let p = instances.join(format!("{INSTANCE_PREFIX}{pid}-{n}"));
            match fs::create_dir(&p) {
                Ok(()) => break p,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) if is_permission(&e) => {
                    return Err(format!(
                        "tracefs: permission denied creating instance in {} (needs CAP_SYS_ADMIN / root): {e}",
                        instances.display()
                    ))
                }
                Err(e) => return Err(format!("tracefs: cannot create instance {}: {e}", p.display())),
            }
        };
        t.instance = Some(inst);
        // A new instance starts with tracing_on=1 (but no event enabled).
        t.write("tracing_on", "0")?;
        t.write("buffer_size_kb", &buffer_kb_per_cpu.to_string())
            .map_err(|e| format!("{e} (asked for {buffer_kb_per_cpu} KiB per CPU)"))?;
        // Keep the oldest events when the buffer fills: the counting state is built from the start.
        t.write("options/overwrite", "0")?;
        // The irq/preempt flags column is of no use to us; fewer bytes to format and parse.
        let _ = t.write("options/irq-info", "0");
        t.has_waking = t.path("events/sched/sched_waking/enable")?.exists();
        let filters = [
            ("sched_waking", format!("comm ~ \"{comm_prefix}*\"")),
            ("sched_wakeup", format!("comm ~ \"{comm_prefix}*\"")),
            (
                "sched_switch",
                format!("next_comm ~ \"{comm_prefix}*\" || prev_comm ~ \"{comm_prefix}*\""),
            ),
        ];
        for (event, filter) in &filters {
            if *event == "sched_waking" && !t.has_waking {
                continue;
            }
            t.write(&format!("events/sched/{event}/filter"), filter)?;
        }
        for event in EVENTS {
            if event == "sched_waking" && !t.has_waking {
                continue;
            }
            t.write(&format!("events/sched/{event}/enable"), "1")?;
        }
        Ok(t)
    }

    /// Clear the instance's buffer (write to `trace` with O_TRUNC) and start recording (tracing_on=1).
    pub fn start(&mut self) -> Result<(), String> {
        self.write("tracing_on", "0")?;
        self.recording = false;
        let trace = self.path("trace")?;
        OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&trace)
            .map_err(|e| format!("tracefs: cannot clear {}: {e}", trace.display()))?;
        self.lost_baseline = self.read_lost()?;
        self.write("tracing_on", "1")?;
        self.recording = true;
        Ok(())
    }

    /// Stop recording (tracing_on=0).
    pub fn stop(&mut self) -> Result<(), String> {
        self.write("tracing_on", "0")?;
        self.recording = false;
        Ok(())
    }

    /// Read what was recorded since [`start`](Self::start) (stopping the recording first if it
    /// is still on), keep only events about `tids`, and count wakeups and wakeup preemptions as
    /// described in the module documentation.
    pub fn collect(&mut self, tids: &HashSet<i32>) -> Result<TraceCounts, String> {
        if self.recording {
            self.stop()?;
        }
        let lost = self.read_lost()?.saturating_sub(self.lost_baseline);
        let trace = self.path("trace")?;
        let file = fs::File::open(&trace)
            .map_err(|e| format!("tracefs: cannot open {}: {e}", trace.display()))?;
        let mut counter = Counter::new(tids, self.has_waking);
        counter
            .feed(BufReader::with_capacity(1 << 20, file))
            .map_err(|e| format!("tracefs: reading {}: {e}", trace.display()))?;
        Ok(counter.finish(lost))
    }

    /// A short description of the source, the same for every run so that records compare:
    /// "tracefs instance (sched_waking, sched_wakeup, sched_switch)".
    pub fn source(&self) -> String {
        if self.has_waking {
            "tracefs instance (sched_waking, sched_wakeup, sched_switch)".to_string()
        } else {
            "tracefs instance (sched_wakeup, sched_switch)".to_string()
        }
    }

    /// `instance/rel`.
    fn path(&self, rel: &str) -> Result<PathBuf, String> {
        match &self.instance {
            Some(p) => Ok(p.join(rel)),
            None => Err("tracefs: instance not created".into()),
        }
    }

    /// Write `value` to the instance's file `rel` in one write(2).
    fn write(&self, rel: &str, value: &str) -> Result<(), String> {
        let p = self.path(rel)?;
        write_file(&p, value).map_err(|e| {
            if is_permission(&e) {
                format!(
                    "tracefs: permission denied writing {} (needs CAP_SYS_ADMIN / root): {e}",
                    p.display()
                )
            } else {
                format!("tracefs: writing {value:?} to {}: {e}", p.display())
            }
        })
    }

    /// Sum of the lost-event counters over the instance's CPUs.
    fn read_lost(&self) -> Result<u64, String> {
        let dir = self.path("per_cpu")?;
        let entries = fs::read_dir(&dir)
            .map_err(|e| format!("tracefs: cannot list {}: {e}", dir.display()))?;
        let mut lost = 0u64;
        for entry in entries.flatten() {
            if !entry.file_name().as_bytes().starts_with(b"cpu") {
                continue;
            }
            if let Ok(stats) = fs::read_to_string(entry.path().join("stats")) {
                lost = lost.saturating_add(parse_lost(&stats));
            }
        }
        Ok(lost)
    }
}

impl Drop for SchedTrace {
    fn drop(&mut self) {
        if let Some(inst) = self.instance.take() {
            let _ = write_file(&inst.join("tracing_on"), "0");
            for event in EVENTS {
                let _ = write_file(&inst.join(format!("events/sched/{event}/enable")), "0");
            }
            remove_instance(&inst);
        }
        if let Some(dir) = self.private_mount.take() {
            unmount_private(&dir);
        }
    }
}

/// Remove `instances/schedlab-<pid>-<n>` directories (and private tracefs mounts
/// `$TMPDIR/schedlab-tracefs-<pid>-<n>`) left by schedlab processes that no longer exist, e.g.
/// after a `SIGKILL`. Returns how many were removed. Never fails; needs root to do anything.
///
/// A process is judged by its pid in our pid namespace, so an instance made by a schedlab
/// running in another pid namespace could be mistaken for a stale one.
pub fn cleanup_stale_instances() -> usize {
    let mut removed = cleanup_stale_mounts();
    match find_mounted_tracefs() {
        Some(root) => removed += cleanup_stale_in(&root),
        None => {
            // Instances outlive mounts: look through a mount of our own.
            if let Ok(dir) = mount_private() {
                removed += cleanup_stale_in(&dir);
                unmount_private(&dir);
            }
        }
    }
    removed
}

// ---------------------------------------------------------------------------------------------
// tracefs plumbing

/// The comm prefix goes into a filter string `comm ~ "PREFIX*"`: keep it to plain characters.
fn validate_prefix(prefix: &str) -> Result<(), String> {
    let ok_char =
        |c: char| c.is_ascii_graphic() && !matches!(c, '"' | '\\' | '*' | '?' | '[' | ']');
    if prefix.is_empty() || prefix.len() > 15 || !prefix.chars().all(ok_char) {
        return Err(format!(
            "tracefs: comm prefix {prefix:?} must be 1 to 15 printable ASCII characters without quotes or glob characters"
        ));
    }
    Ok(())
}

fn is_permission(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES))
}

/// Open an existing file for writing (no O_CREAT, no O_TRUNC) and write `value` in one call.
fn write_file(path: &Path, value: &str) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(path)?;
    let n = f.write(value.as_bytes())?;
    if n != value.len() {
        return Err(io::Error::other(format!(
            "short write ({n} of {} bytes)",
            value.len()
        )));
    }
    Ok(())
}

/// Whether a process with this pid exists (in our pid namespace).
fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return true; // not ours to judge
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    if rc != 0 {
        return io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
    }
    // A zombie (killed, not yet reaped) holds nothing any more; but a leader thread that
    // exited early also shows as a zombie while its other threads live on.
    let zombie = match fs::read(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .iter()
            .rposition(|&b| b == b')')
            .is_some_and(|i| matches!(stat.get(i + 2), Some(b'Z') | Some(b'X'))),
        Err(_) => false,
    };
    !zombie || fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|d| d.count() > 1)
}

/// The pid in a name `<prefix><pid>-<n>`, if the name has that shape.
fn owner_pid(name: &[u8], prefix: &str) -> Option<i32> {
    let rest = name.strip_prefix(prefix.as_bytes())?;
    let dash = rest.iter().position(|&b| b == b'-')?;
    let (pid, n) = (&rest[..dash], &rest[dash + 1..]);
    if n.is_empty() || !n.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let (pid, used) = parse_int(pid)?;
    (used == rest[..dash].len() && pid > 0).then_some(pid as i32)
}

/// Mount points of tracefs mounts listed in /proc/mounts.
fn tracefs_mounts() -> Vec<PathBuf> {
    let Ok(mounts) = fs::read("/proc/mounts") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in mounts.split(|&b| b == b'\n') {
        let mut fields = line.split(|&b| b == b' ');
        let (Some(_dev), Some(dir), Some(fstype)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if fstype == b"tracefs" {
            out.push(PathBuf::from(std::ffi::OsStr::from_bytes(
                &unescape_mount_path(dir),
            )));
        }
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

/// A usable mounted tracefs, preferring the standard places; never another schedlab's private
/// mount (it may vanish under us).
fn find_mounted_tracefs() -> Option<PathBuf> {
    let mut mounts: Vec<PathBuf> = tracefs_mounts()
        .into_iter()
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.as_bytes().starts_with(MOUNT_PREFIX.as_bytes()))
        })
        .collect();
    if mounts.is_empty() {
        // /proc/mounts unreadable or lying: trust a populated standard directory.
        mounts.push(PathBuf::from("/sys/kernel/tracing"));
    }
    let rank = |p: &PathBuf| match p.to_str() {
        Some("/sys/kernel/tracing") => 0,
        Some("/sys/kernel/debug/tracing") => 1,
        _ => 2,
    };
    mounts.sort_by_key(rank);
    mounts.into_iter().find(|p| p.join("instances").is_dir())
}

/// A mounted tracefs we may not look into, to explain a failure.
fn unreadable_tracefs() -> Option<PathBuf> {
    tracefs_mounts()
        .into_iter()
        .find(|p| fs::read_dir(p).is_err_and(|e| is_permission(&e)))
}

fn cstring(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("path {} contains a NUL byte", p.display()))
}

/// Mount tracefs on a fresh `$TMPDIR/schedlab-tracefs-<pid>-<n>`.
fn mount_private() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    let pid = std::process::id();
    let dir = loop {
        let n = NEXT_MOUNT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{MOUNT_PREFIX}{pid}-{n}"));
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => break dir,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "tracefs not available: cannot create mount point {}: {e}",
                    dir.display()
                ))
            }
        }
    };
    let target = match cstring(&dir) {
        Ok(c) => c,
        Err(e) => {
            let _ = fs::remove_dir(&dir);
            return Err(e);
        }
    };
    // SAFETY: all pointers are valid NUL-terminated strings or null (no mount data).
    let rc = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        let _ = fs::remove_dir(&dir);
        return Err(match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => {
                format!("tracefs not available: not mounted, and mounting it needs CAP_SYS_ADMIN / root ({e})")
            }
            Some(libc::ENODEV) => format!("tracefs not available: the kernel has no tracefs ({e})"),
            _ => format!(
                "tracefs not available: mounting tracefs on {} failed: {e}",
                dir.display()
            ),
        });
    }
    Ok(dir)
}

/// Detach our mount and remove its directory.
fn unmount_private(dir: &Path) {
    if let Ok(c) = cstring(dir) {
        // SAFETY: valid NUL-terminated path.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
    let _ = fs::remove_dir(dir);
}

/// rmdir an instance, retrying while the kernel says it is busy (a reader still has a file open).
fn remove_instance(inst: &Path) -> bool {
    for attempt in 0..20 {
        match fs::remove_dir(inst) {
            Ok(()) => return true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < 19 => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => return false,
        }
    }
    false
}

/// Remove stale instances under a tracefs root.
fn cleanup_stale_in(root: &Path) -> usize {
    let Ok(entries) = fs::read_dir(root.join("instances")) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        match owner_pid(name.as_bytes(), INSTANCE_PREFIX) {
            Some(pid) if !pid_alive(pid) => {
                let inst = entry.path();
                let _ = write_file(&inst.join("tracing_on"), "0");
                removed += usize::from(remove_instance(&inst));
            }
            _ => {}
        }
    }
    removed
}

/// Detach and remove private mounts (and bare mount directories) of dead schedlab processes.
fn cleanup_stale_mounts() -> usize {
    let dead = |p: &Path| {
        p.file_name()
            .and_then(|n| owner_pid(n.as_bytes(), MOUNT_PREFIX))
            .is_some_and(|pid| !pid_alive(pid))
    };
    let mut removed = 0;
    for dir in tracefs_mounts() {
        if dead(&dir) {
            unmount_private(&dir);
            removed += usize::from(!dir.exists());
        }
    }
    if let Ok(entries) = fs::read_dir(std::env::temp_dir()) {
        for entry in entries.flatten() {
            let p = entry.path();
            // rmdir only: a directory that is not empty (or still a mount) stays.
            if dead(&p) && fs::remove_dir(&p).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// Sum of the `overrun`, `commit overrun` and `dropped events` lines of a `per_cpu/cpuN/stats`.
fn parse_lost(stats: &str) -> u64 {
    let mut lost = 0u64;
    for line in stats.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if matches!(key.trim(), "overrun" | "commit overrun" | "dropped events") {
            lost = lost.saturating_add(value.trim().parse::<u64>().unwrap_or(0));
        }
    }
    lost
}

// ---------------------------------------------------------------------------------------------
// Parsing the text `trace` file

/// One event of interest, parsed from a line of the text `trace` output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// `sched_wakeup`: `pid` was made runnable on `target_cpu`.
    Wakeup { pid: i32, target_cpu: u32 },
    /// `sched_waking`: a wakeup of sleeping `pid` began (`target_cpu` is its CPU so far).
    Waking { pid: i32, target_cpu: u32 },
    /// `sched_switch` on `cpu` from `prev_pid` to `next_pid`.
    Switch {
        /// The CPU that switched (the `[NNN]` column).
        cpu: u32,
        prev_pid: i32,
        /// `prev_state` is `R` or `R+`: the previous task was still runnable (preempted).
        prev_runnable: bool,
        next_pid: i32,
    },
}

/// Parse a decimal integer with an optional `-` at the start of `s`; returns it and the number
/// of bytes used.
fn parse_int(s: &[u8]) -> Option<(i64, usize)> {
    let (neg, start) = if s.first() == Some(&b'-') {
        (true, 1)
    } else {
        (false, 0)
    };
    let mut v: i64 = 0;
    let mut i = start;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add(i64::from(s[i] - b'0'))?;
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if neg { -v } else { v }, i))
}

/// A cursor over a line for fixed-format parsing.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a [u8], i: usize) -> Self {
        Cursor { s, i }
    }

    /// Consume the literal `lit`.
    fn lit(&mut self, lit: &[u8]) -> Option<()> {
        if self.s.get(self.i..)?.starts_with(lit) {
            self.i += lit.len();
            Some(())
        } else {
            None
        }
    }

    /// Consume an integer.
    fn int(&mut self) -> Option<i64> {
        let (v, n) = parse_int(self.s.get(self.i..)?)?;
        self.i += n;
        Some(v)
    }

    /// Consume bytes up to (not including) the next space.
    fn word(&mut self) -> &'a [u8] {
        let rest = &self.s[self.i.min(self.s.len())..];
        let n = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        self.i += n;
        &rest[..n]
    }

    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }
}

/// Position of the first `needle` in `hay` at or after `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let mut i = from;
    while i + needle.len() <= hay.len() {
        let j = hay[i..=hay.len() - needle.len()]
            .iter()
            .position(|&b| b == first)?
            + i;
        if hay[j..].starts_with(needle) {
            return Some(j);
        }
        i = j + 1;
    }
    None
}

/// Position of the last `needle` in `hay`.
fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len())
        .rev()
        .find(|&i| hay[i..].starts_with(needle))
}

/// Longest task name the kernel prints (`TASK_COMM_LEN - 1`).
const COMM_MAX: usize = 15;

/// Parse one line of the text `trace` output; `None` for comments, other events and anything
/// malformed.
///
/// Task names are arbitrary bytes (spaces, dashes, brackets, `key=` look-alikes), so the line is
/// taken apart from its fixed parts: the event name marker (`": sched_switch: "` cannot fit in a
/// 15-byte name), the rightmost `[NNN]` before it for the CPU, and the numeric fields anchored at
/// the end of the line.
fn parse_line(line: &[u8]) -> Option<Event> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.first() == Some(&b'#') {
        return None;
    }
    let mut from = 0;
    let (marker, is_switch) = loop {
        let h = find(line, b": sched_", from)?;
        match line.get(h + 8..h + 16) {
            Some(b"switch: ") => break (h, true),
            Some(b"wakeup: ") => break (h, false),
            Some(b"waking: ") => break (h, false),
            _ => from = h + 1,
        }
    };
    let body = &line[marker + 16..];
    if is_switch {
        let cpu = parse_cpu(&line[..marker])?;
        parse_switch(body, cpu)
    } else {
        let ev = parse_wakeup(body)?;
        match (&line[marker + 8..marker + 16], ev) {
            (b"waking: ", Event::Wakeup { pid, target_cpu }) => {
                Some(Event::Waking { pid, target_cpu })
            }
            _ => Some(ev),
        }
    }
}

/// The CPU column: the rightmost `[digits]` of the line's header.
fn parse_cpu(header: &[u8]) -> Option<u32> {
    let close = header.iter().rposition(|&b| b == b']')?;
    let open = header[..close].iter().rposition(|&b| b == b'[')?;
    let digits = &header[open + 1..close];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let (v, _) = parse_int(digits)?;
    u32::try_from(v).ok()
}

/// `comm=<comm> pid=N prio=N target_cpu=NNN`
fn parse_wakeup(body: &[u8]) -> Option<Event> {
    if !body.starts_with(b"comm=") {
        return None;
    }
    // The last " pid=" is the real one: only numbers follow it.
    let p = rfind(body, b" pid=")?;
    if p < 5 || p - 5 > COMM_MAX {
        return None;
    }
    let mut c = Cursor::new(body, p);
    c.lit(b" pid=")?;
    let pid = c.int()?;
    c.lit(b" prio=")?;
    c.int()?;
    c.lit(b" target_cpu=")?;
    let target_cpu = c.int()?;
    if !c.at_end() {
        return None;
    }
    Some(Event::Wakeup {
        pid: i32::try_from(pid).ok()?,
        target_cpu: u32::try_from(target_cpu).ok()?,
    })
}

/// `prev_comm=<c> prev_pid=N prev_prio=N prev_state=S ==> next_comm=<c> next_pid=N next_prio=N`
fn parse_switch(body: &[u8], cpu: u32) -> Option<Event> {
    const PREV: &[u8] = b"prev_comm=";
    const ARROW: &[u8] = b" ==> next_comm=";
    if !body.starts_with(PREV) {
        return None;
    }
    // The next task's numbers are anchored at the end of the line.
    let q = rfind(body, b" next_pid=")?;
    let mut c = Cursor::new(body, q);
    c.lit(b" next_pid=")?;
    let next_pid = c.int()?;
    c.lit(b" next_prio=")?;
    c.int()?;
    if !c.at_end() {
        return None;
    }
    // The previous task's fields follow a name of at most 15 bytes; try each length until the
    // fixed text fits (a name that merely contains " prev_pid=" fails the full match).
    for len in 0..=COMM_MAX.min(q.saturating_sub(PREV.len())) {
        let mut c = Cursor::new(body, PREV.len() + len);
        let parsed = (|| {
            c.lit(b" prev_pid=")?;
            let prev_pid = c.int()?;
            c.lit(b" prev_prio=")?;
            c.int()?;
            c.lit(b" prev_state=")?;
            let state = c.word();
            c.lit(ARROW)?;
            Some((prev_pid, state))
        })();
        if let Some((prev_pid, state)) = parsed {
            if c.i <= q && q - c.i <= COMM_MAX {
                return Some(Event::Switch {
                    cpu,
                    prev_pid: i32::try_from(prev_pid).ok()?,
                    prev_runnable: state == b"R" || state == b"R+",
                    next_pid: i32::try_from(next_pid).ok()?,
                });
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Counting

/// What we know about one of the traced tids while replaying the events.
#[derive(Clone, Copy, Debug, Default)]
struct TidState {
    counts: TidCounts,
    /// Woken onto this CPU and not run since.
    pending_cpu: Option<u32>,
    /// Seen switched in on this CPU and not switched out since.
    running_cpu: Option<u32>,
}

/// Replays events in trace order and counts, per traced tid.
struct Counter {
    /// The traced tids, sorted (binary search is cheaper than hashing here).
    tids: Vec<i32>,
    states: Vec<TidState>,
    /// Count wakeups on `sched_waking` (when recorded) rather than on `sched_wakeup`.
    count_waking: bool,
}

impl Counter {
    fn new(tids: &HashSet<i32>, count_waking: bool) -> Self {
        let mut sorted: Vec<i32> = tids.iter().copied().collect();
        sorted.sort_unstable();
        Counter {
            count_waking,
            states: vec![TidState::default(); sorted.len()],
            tids: sorted,
        }
    }

    fn slot(&self, tid: i32) -> Option<usize> {
        self.tids.binary_search(&tid).ok()
    }

    fn event(&mut self, ev: Event) {
        match ev {
            Event::Waking { pid, target_cpu } => {
                if let Some(i) = self.slot(pid) {
                    let s = &mut self.states[i];
                    s.counts.wakeups += 1;
                    s.pending_cpu = if s.running_cpu.is_some() {
                        None
                    } else {
                        Some(target_cpu)
                    };
                }
            }
            Event::Wakeup { pid, target_cpu } => {
                let count = !self.count_waking;
                if let Some(i) = self.slot(pid) {
                    let s = &mut self.states[i];
                    if count {
                        s.counts.wakeups += 1;
                    }
                    // Woken while still on a CPU (on its way to sleep): no task to preempt.
                    s.pending_cpu = if s.running_cpu.is_some() {
                        None
                    } else {
                        Some(target_cpu)
                    };
                }
            }
            Event::Switch {
                cpu,
                prev_pid,
                prev_runnable,
                next_pid,
            } => {
                if let Some(i) = self.slot(prev_pid) {
                    let s = &mut self.states[i];
                    s.running_cpu = None;
                    s.pending_cpu = None;
                }
                if let Some(i) = self.slot(next_pid) {
                    let s = &mut self.states[i];
                    if s.pending_cpu == Some(cpu) && prev_pid != 0 && prev_runnable {
                        s.counts.wakeup_preemptions += 1;
                    }
                    s.pending_cpu = None;
                    s.running_cpu = Some(cpu);
                }
            }
        }
    }

    /// Parse and count every line of a text `trace` stream.
    fn feed<R: BufRead>(&mut self, mut reader: R) -> io::Result<()> {
        let mut line = Vec::with_capacity(512);
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            if let Some(ev) = parse_line(&line) {
                self.event(ev);
            }
        }
    }

    fn finish(self, lost: u64) -> TraceCounts {
        let per_tid = self
            .tids
            .iter()
            .zip(&self.states)
            .map(|(&t, s)| (t, s.counts))
            .collect();
        TraceCounts { per_tid, lost }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Arc, Barrier};
    use std::time::Instant;

    fn wake(comm: &str, pid: i32, target: u32, cpu: u32) -> String {
        format!("          <idle>-0       [{cpu:03}] d.h2. 12345.678901: sched_wakeup: comm={comm} pid={pid} prio=120 target_cpu={target:03}\n")
    }

    fn switch(
        cpu: u32,
        prev_comm: &str,
        prev: i32,
        state: &str,
        next_comm: &str,
        next: i32,
    ) -> String {
        format!(
            "           {prev_comm}-{prev}  [{cpu:03}] d..2. 12345.678950: sched_switch: prev_comm={prev_comm} prev_pid={prev} prev_prio=120 prev_state={state} ==> next_comm={next_comm} next_pid={next} next_prio=120\n"
        )
    }

    fn count(text: &str, tids: &[i32]) -> TraceCounts {
        let set: HashSet<i32> = tids.iter().copied().collect();
        let mut c = Counter::new(&set, false);
        c.feed(text.as_bytes()).unwrap();
        c.finish(0)
    }

    #[test]
    fn parses_the_documented_lines() {
        let w = b"          <idle>-0       [001] d.h2. 12345.678901: sched_wakeup: comm=sl-ping pid=1234 prio=120 target_cpu=001";
        assert_eq!(
            parse_line(w),
            Some(Event::Wakeup {
                pid: 1234,
                target_cpu: 1
            })
        );
        let s = b"           sl-ping-1234  [000] d..2. 12345.678950: sched_switch: prev_comm=sl-pong prev_pid=1235 prev_prio=120 prev_state=R+ ==> next_comm=sl-ping next_pid=1234 next_prio=120\n";
        assert_eq!(
            parse_line(s),
            Some(Event::Switch {
                cpu: 0,
                prev_pid: 1235,
                prev_runnable: true,
                next_pid: 1234
            })
        );
        // Without the irq-info column, with a sleeping prev and a deadline task's negative prio.
        let s = b"  sl-pong-4767    [013]    500.517179: sched_switch: prev_comm=sl-pong prev_pid=4767 prev_prio=-1 prev_state=S ==> next_comm=sl-ping next_pid=4766 next_prio=120";
        assert_eq!(
            parse_line(s),
            Some(Event::Switch {
                cpu: 13,
                prev_pid: 4767,
                prev_runnable: false,
                next_pid: 4766
            })
        );
        let s = b"  x-1 [000] 1.0: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=y next_pid=2 next_prio=120";
        assert!(matches!(
            parse_line(s),
            Some(Event::Switch {
                prev_runnable: true,
                ..
            })
        ));
        let s = b"  x-1 [000] 1.0: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S|D ==> next_comm=y next_pid=2 next_prio=120";
        assert!(matches!(
            parse_line(s),
            Some(Event::Switch {
                prev_runnable: false,
                ..
            })
        ));
    }

    #[test]
    fn ignores_comments_other_events_and_garbage() {
        for l in [
            &b"# tracer: nop"[..],
            b"#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION",
            b"",
            b"\n",
            b"CPU:1 [LOST 123 EVENTS]",
            b"  a-1 [000] 1.0: sched_wakeup_new: comm=a pid=2 prio=120 target_cpu=000",
            b"  a-1 [000] 1.0: sched_wakeup: comm=a pid=2 prio=120 target_cpu=000 extra",
            b"  a-1 [000] 1.0: sched_wakeup: comm=a pid=x prio=120 target_cpu=000",
            b"  a-1 [000] 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2",
            b"  a-1 [0x] 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=1",
            b"  a-1 [000] 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=bbbbbbbbbbbbbbbbbbbb next_pid=2 next_prio=1",
        ] {
            assert_eq!(parse_line(l), None, "{}", String::from_utf8_lossy(l));
        }
    }

    #[test]
    fn survives_hostile_task_names() {
        // Names with spaces, dashes, brackets and look-alike keys (each at most 15 bytes).
        let w = wake("a pid=9 [7]", 42, 1, 0);
        assert_eq!(
            parse_line(w.as_bytes()),
            Some(Event::Wakeup {
                pid: 42,
                target_cpu: 1
            })
        );
        let line = "  x [5] y-7 [002] d..2. 1.0: sched_switch: prev_comm=z prev_pid=8 prev_prio=120 prev_state=R+ ==> next_comm=n next_pid=9 next_prio=120";
        assert_eq!(
            parse_line(line.as_bytes()),
            Some(Event::Switch {
                cpu: 2,
                prev_pid: 8,
                prev_runnable: true,
                next_pid: 9
            })
        );
        let s = switch(3, "q prev_pid=1", 11, "S", "w next_pid=5", 12);
        assert_eq!(
            parse_line(s.as_bytes()),
            Some(Event::Switch {
                cpu: 3,
                prev_pid: 11,
                prev_runnable: false,
                next_pid: 12
            })
        );
        let s = switch(1, "a: sched_wakeup", 11, "R", " ==> next_comm=", 12);
        assert_eq!(
            parse_line(s.as_bytes()),
            Some(Event::Switch {
                cpu: 1,
                prev_pid: 11,
                prev_runnable: true,
                next_pid: 12
            })
        );
        // Non-UTF-8 bytes in a name.
        let mut raw =
            b"  a-1 [000] 1.0: sched_wakeup: comm=\xff\xfe pid=3 prio=120 target_cpu=001".to_vec();
        assert_eq!(
            parse_line(&raw),
            Some(Event::Wakeup {
                pid: 3,
                target_cpu: 1
            })
        );
        raw.push(b'\n');
        assert_eq!(
            parse_line(&raw),
            Some(Event::Wakeup {
                pid: 3,
                target_cpu: 1
            })
        );
    }

    #[test]
    fn counts_a_wakeup_preemption() {
        // 20 is woken onto CPU 1 where 30 (not traced) runs; 30 is preempted for 20.
        let t = wake("sl-b", 20, 1, 0) + &switch(1, "other", 30, "R+", "sl-b", 20);
        let c = count(&t, &[10, 20]);
        assert_eq!(
            c.per_tid[&20],
            TidCounts {
                wakeups: 1,
                wakeup_preemptions: 1
            }
        );
        assert_eq!(c.per_tid[&10], TidCounts::default());
        // Plain R (preempted on the way back to user space) counts too.
        let t = wake("sl-b", 20, 1, 0) + &switch(1, "other", 30, "R", "sl-b", 20);
        assert_eq!(
            count(&t, &[20]).per_tid[&20],
            TidCounts {
                wakeups: 1,
                wakeup_preemptions: 1
            }
        );
    }

    #[test]
    fn blocking_idle_and_other_cpus_do_not_count() {
        for second in [
            switch(1, "other", 30, "S", "sl-b", 20), // prev went to sleep
            switch(1, "swapper/1", 0, "R", "sl-b", 20), // from idle
            switch(0, "other", 30, "R+", "sl-b", 20), // ran elsewhere (migrated)
        ] {
            let t = wake("sl-b", 20, 1, 0) + &second + &switch(1, "x", 31, "R+", "sl-b", 20);
            assert_eq!(
                count(&t, &[20]).per_tid[&20],
                TidCounts {
                    wakeups: 1,
                    wakeup_preemptions: 0
                },
                "{second}"
            );
        }
    }

    #[test]
    fn tick_preemptions_do_not_count() {
        // 20 runs, is preempted by the tick and resumes by preempting someone: no wakeup pending.
        let t = switch(1, "a", 30, "S", "sl-b", 20)
            + &switch(1, "sl-b", 20, "R+", "c", 31)
            + &switch(1, "c", 31, "R+", "sl-b", 20);
        assert_eq!(count(&t, &[20]).per_tid[&20], TidCounts::default());
    }

    #[test]
    fn other_switches_may_come_between_wakeup_and_run() {
        let t = wake("sl-b", 20, 1, 0)
            + &wake("sl-c", 21, 1, 0)
            + &switch(1, "a", 30, "R", "sl-c", 21) // 21 preempts 30
            + &switch(1, "sl-c", 21, "S", "d", 32) // an unrelated task
            + &switch(1, "d", 32, "R+", "sl-b", 20); // 20, still pending, preempts 32
        let c = count(&t, &[20, 21]);
        assert_eq!(
            c.per_tid[&20],
            TidCounts {
                wakeups: 1,
                wakeup_preemptions: 1
            }
        );
        assert_eq!(
            c.per_tid[&21],
            TidCounts {
                wakeups: 1,
                wakeup_preemptions: 1
            }
        );
    }

    #[test]
    fn a_wakeup_of_a_running_task_marks_nothing() {
        // 20 is on CPU 1, gets woken while going to sleep, is later tick-preempted and resumes.
        let t = switch(1, "a", 30, "S", "sl-b", 20)
            + &wake("sl-b", 20, 1, 0)
            + &switch(1, "sl-b", 20, "R+", "c", 31)
            + &switch(1, "c", 31, "R+", "sl-b", 20);
        assert_eq!(
            count(&t, &[20]).per_tid[&20],
            TidCounts {
                wakeups: 1,
                wakeup_preemptions: 0
            }
        );
        // A switch away from a task clears a pending mark from before its switch-in was recorded.
        let t = wake("sl-b", 20, 1, 0)
            + &switch(1, "sl-b", 20, "S", "c", 31)
            + &switch(1, "c", 31, "R+", "sl-b", 20);
        assert_eq!(
            count(&t, &[20]).per_tid[&20],
            TidCounts {
                wakeups: 1,
                wakeup_preemptions: 0
            }
        );
    }

    #[test]
    fn wakeups_are_counted_on_sched_waking_when_recorded() {
        // Linux 6.18 emits sched_waking for every wakeup of a sleeping task but, on some paths,
        // no sched_wakeup: count the former; the latter only refines the target CPU.
        let waking = |pid: i32, target: u32| {
            format!("          <idle>-0       [000] d.h2. 12345.678901: sched_waking: comm=sl-b pid={pid} prio=120 target_cpu={target:03}\n")
        };
        let t = waking(20, 0)
            + &wake("sl-b", 20, 1, 0)
            + &switch(1, "c", 31, "R", "sl-b", 20)
            + &switch(1, "sl-b", 20, "S", "c", 31)
            + &waking(20, 1);
        let set: HashSet<i32> = [20].into_iter().collect();
        let mut c = Counter::new(&set, true);
        c.feed(t.as_bytes()).unwrap();
        assert_eq!(
            c.finish(0).per_tid[&20],
            TidCounts {
                wakeups: 2,
                wakeup_preemptions: 1
            }
        );
    }

    #[test]
    fn untraced_tids_are_ignored() {
        let t = wake("sl-x", 99, 0, 0) + &switch(0, "a", 30, "R", "sl-x", 99);
        let c = count(&t, &[20]);
        assert_eq!(c.per_tid.len(), 1);
        assert_eq!(c.per_tid[&20], TidCounts::default());
    }

    #[test]
    fn lost_counters_and_names() {
        let stats = "entries: 10\noverrun: 3\ncommit overrun: 1\nbytes: 99\noldest event ts:     0.000000\nnow ts:   413.414548\ndropped events: 5\nread events: 7\n";
        assert_eq!(parse_lost(stats), 9);
        assert_eq!(owner_pid(b"schedlab-123-4", INSTANCE_PREFIX), Some(123));
        assert_eq!(owner_pid(b"schedlab-tracefs-77-0", MOUNT_PREFIX), Some(77));
        assert_eq!(owner_pid(b"schedlab-tracefs-77-0", INSTANCE_PREFIX), None);
        assert_eq!(owner_pid(b"schedlab-12x-4", INSTANCE_PREFIX), None);
        assert_eq!(owner_pid(b"schedlab-12-", INSTANCE_PREFIX), None);
        assert_eq!(owner_pid(b"schedlab--3-1", INSTANCE_PREFIX), None);
        assert_eq!(unescape_mount_path(br"/tmp/a\040b\134c"), b"/tmp/a b\\c");
        assert!(validate_prefix("sl-").is_ok());
        assert!(validate_prefix("").is_err());
        assert!(validate_prefix("a\"b").is_err());
        assert!(validate_prefix("a*").is_err());
    }

    fn gettid() -> i32 {
        // SAFETY: gettid has no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_gettid) as i32 }
    }

    /// The first CPU we may run on.
    fn first_allowed_cpu() -> usize {
        // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
                for cpu in 0..libc::CPU_SETSIZE as usize {
                    if libc::CPU_ISSET(cpu, &set) {
                        return cpu;
                    }
                }
            }
        }
        0
    }

    fn name_and_pin(name: &std::ffi::CStr, cpu: usize) {
        // SAFETY: PR_SET_NAME reads a NUL-terminated string; the cpu set is a valid local.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, name.as_ptr());
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
        }
    }

    /// Two threads "sltest-a"/"sltest-b" pinned to one CPU exchange `n` bytes each way over two
    /// pipes. Tracing (if any) runs from just before the exchange to just after. Returns the
    /// tids and the round trips per second.
    fn pingpong(n: usize, mut trace: Option<&mut SchedTrace>) -> (HashSet<i32>, f64) {
        let cpu = first_allowed_cpu();
        let mut p1 = [0i32; 2];
        let mut p2 = [0i32; 2];
        // SAFETY: arrays of two fds.
        unsafe {
            assert_eq!(libc::pipe(p1.as_mut_ptr()), 0);
            assert_eq!(libc::pipe(p2.as_mut_ptr()), 0);
        }
        let barrier = Arc::new(Barrier::new(3));
        let (tx, rx) = mpsc::channel();
        let side = |name: &'static std::ffi::CStr, rfd: i32, wfd: i32, first: bool| {
            let barrier = barrier.clone();
            let tx = tx.clone();
            std::thread::spawn(move || {
                name_and_pin(name, cpu);
                tx.send(gettid()).unwrap();
                barrier.wait();
                let mut b = [0u8; 1];
                for _ in 0..n {
                    // SAFETY: one-byte buffers on valid pipe fds.
                    unsafe {
                        if first {
                            assert_eq!(libc::write(wfd, b.as_ptr().cast(), 1), 1);
                            assert_eq!(libc::read(rfd, b.as_mut_ptr().cast(), 1), 1);
                        } else {
                            assert_eq!(libc::read(rfd, b.as_mut_ptr().cast(), 1), 1);
                            assert_eq!(libc::write(wfd, b.as_ptr().cast(), 1), 1);
                        }
                    }
                }
            })
        };
        let a = side(c"sltest-a", p2[0], p1[1], true);
        let b = side(c"sltest-b", p1[0], p2[1], false);
        let tids: HashSet<i32> = [rx.recv().unwrap(), rx.recv().unwrap()]
            .into_iter()
            .collect();
        if let Some(t) = trace.as_mut() {
            t.start().unwrap();
        }
        barrier.wait();
        let t0 = Instant::now();
        a.join().unwrap();
        b.join().unwrap();
        let secs = t0.elapsed().as_secs_f64();
        if let Some(t) = trace.as_mut() {
            t.stop().unwrap();
        }
        for fd in p1.into_iter().chain(p2) {
            // SAFETY: closing fds we own.
            unsafe { libc::close(fd) };
        }
        (tids, n as f64 / secs)
    }

    fn open_or_skip(prefix: &str, kb: usize) -> Option<SchedTrace> {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: not running as root");
            return None;
        }
        match SchedTrace::open(prefix, kb) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("skipped: {e}");
                None
            }
        }
    }

    #[test]
    fn real_pingpong_is_traced_and_cleaned_up() {
        let Some(mut trace) = open_or_skip("sltest", 4096) else {
            return;
        };
        let inst = trace.instance.clone().unwrap();
        let private = trace.private_mount.clone();
        eprintln!(
            "{}: {} (private mount: {:?})",
            trace.source(),
            inst.display(),
            private
        );
        assert!(inst.is_dir());

        // A stale instance of a dead process is removed by cleanup_stale_instances().
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        let _ = dead.wait();
        let stale = inst
            .parent()
            .unwrap()
            .join(format!("{INSTANCE_PREFIX}{dead_pid}-0"));
        if !stale.exists() && fs::create_dir(&stale).is_ok() {
            assert!(cleanup_stale_instances() >= 1);
            assert!(
                !stale.exists(),
                "stale instance {} not removed",
                stale.display()
            );
        }
        assert!(inst.is_dir(), "our own instance must survive the cleanup");

        let n = 2000;
        let (tids, rate) = pingpong(n, Some(&mut trace));
        let c = trace.collect(&tids).unwrap();
        let (w, p): (u64, u64) = c.per_tid.values().fold((0, 0), |(w, p), t| {
            (w + t.wakeups, p + t.wakeup_preemptions)
        });
        eprintln!("{n} round trips at {rate:.0}/s traced: {:?}, lost {}; wakeups {w}, wakeup preemptions {p}", c.per_tid, c.lost);
        assert_eq!(c.per_tid.len(), 2);
        for t in c.per_tid.values() {
            assert!(t.wakeup_preemptions <= t.wakeups);
        }
        if c.lost == 0 {
            // Each of the 2n hand-offs on the shared CPU is a wakeup followed either by the
            // sender blocking (1 wakeup) or by the sender being preempted (1 wakeup + 1 wakeup
            // preemption, after which the next hand-off finds its receiver runnable: 0). So
            // wakeups + wakeup preemptions ≈ 2n, and each round trip needs at least one wakeup.
            // Slack for the start/end (barrier futex), ticks and other tasks on that CPU.
            let n = n as u64;
            assert!(w + 2 >= n, "only {w} wakeups for {n} round trips");
            let sum = w + p;
            assert!(
                sum.abs_diff(2 * n) <= 2 * n / 10 + 10,
                "wakeups {w} + preemptions {p} far from {}",
                2 * n
            );
        }

        // A second repetition starts from an empty buffer.
        let (tids2, _) = pingpong(100, Some(&mut trace));
        let c2 = trace.collect(&tids2).unwrap();
        let w2: u64 = c2.per_tid.values().map(|t| t.wakeups).sum();
        assert!(
            (98..=300).contains(&w2),
            "second repetition: {w2} wakeups for 100 round trips"
        );
        // Events of the first repetition's tids are gone.
        let old = trace.collect(&tids).unwrap();
        assert!(old.per_tid.values().all(|t| t.wakeups == 0));

        drop(trace);
        assert!(!inst.exists(), "instance {} left behind", inst.display());
        if let Some(dir) = private {
            let mounts = fs::read_to_string("/proc/mounts").unwrap();
            assert!(
                !mounts.contains(dir.to_str().unwrap()),
                "private mount {} left behind",
                dir.display()
            );
            assert!(!dir.exists(), "mount point {} left behind", dir.display());
        }
    }

    /// Overhead measurement: `cargo test -p schedlab-real trace_overhead -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn trace_overhead() {
        let n = 200_000;
        let (_, plain) = pingpong(n, None);
        let Some(mut trace) = open_or_skip("sltest", 65536) else {
            return;
        };
        let (tids, traced) = pingpong(n, Some(&mut trace));
        let t0 = Instant::now();
        let c = trace.collect(&tids).unwrap();
        let read = t0.elapsed();
        let (w, p): (u64, u64) = c.per_tid.values().fold((0, 0), |(w, p), t| {
            (w + t.wakeups, p + t.wakeup_preemptions)
        });
        eprintln!(
            "pinned pipe ping-pong, {n} round trips: {plain:.0}/s untraced, {traced:.0}/s traced ({:.1}% slower); \
             collect took {read:?}; wakeups {w}, wakeup preemptions {p}, lost {}",
            (1.0 - traced / plain) * 100.0,
            c.lost
        );
    }
}
