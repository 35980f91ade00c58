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
//! - **where a preemption came from**: `sched_waking` fires in the waker's context, so its CPU
//!   column is the waker's CPU. A wakeup preemption on that same CPU is one the waker's own
//!   return to user mode (or next preemption point) carried out; one on another CPU came by
//!   reschedule IPI. Counted only when `sched_waking` is recorded ([`TraceCounts::waker_cpus`]).
//!
//! Why `R` as well as `R+`: `__trace_sched_switch_state()` in `sched.h` reports the `+`
//! (`TASK_REPORT_MAX`, `prev_state & 0x100` in the binary record) only when `__schedule()` was
//! entered as an *in-kernel* preemption (`preempt_schedule*()`, `cond_resched()`). A user task
//! preempted because a wakeup set `TIF_NEED_RESCHED` usually switches out on its way back to user
//! space (`exit_to_user_mode_loop()` calls plain `schedule()`), which reports `TASK_RUNNING`,
//! printed `R`. On a `PREEMPT_NONE`/`PREEMPT_DYNAMIC=none` kernel practically all wakeup
//! preemptions look like that (measured on Linux 6.18, `PREEMPT_DYNAMIC` at `none`: 0 `R+` and
//! 160 000 `R` switches in 200 000 pipe round trips of two threads pinned to one CPU). The
//! price is that a `sched_yield()` handing the CPU to a pending wakee counts too.
//!
//! Every count is a lower bound when events were lost: [`TraceCounts::lost`] sums the
//! `overrun`, `commit overrun` and `dropped events` lines of the instance's
//! `per_cpu/cpuN/stats` (the instance runs with `overwrite` off, so a full buffer drops the
//! newest events rather than the oldest).
//!
//! If no tracefs is mounted, one is mounted on a fresh directory
//! `$TMPDIR/schedlab-tracefs-<pid>-<n>` and detached and removed on drop. After a `SIGKILL`
//! the instance (and such a mount) stays behind; [`cleanup_stale_instances`], also called by
//! [`SchedTrace::open`], removes those whose process is gone, and [`cleanup_stale_tracefs`]
//! (every command, through [`crate::leftovers`]) those it can reach without mounting.
//!
//! The parts: `tracefs` (mount, instance lifecycle, stale cleanup), `parse` (the text lines),
//! `count` (replaying events into per-task counts); this file ties them into [`SchedTrace`].

mod count;
mod parse;
pub mod record;
pub mod record_bpf;
pub mod timeline;
mod tracefs;

pub use tracefs::{cleanup_stale_instances, cleanup_stale_tracefs, Removed};

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, BufReader};
use std::path::PathBuf;
use thiserror::Error;
use tracefs::{Instance, Tracefs, EVENTS};

/// Why tracing could not be set up or read; the Display text names the file and the
/// capability involved.
#[derive(Debug, Error)]
pub enum TraceError {
    /// The comm prefix cannot go into a filter string.
    #[error("tracefs: comm prefix {0:?} must be 1 to 15 printable ASCII characters without quotes or glob characters")]
    BadPrefix(String),
    /// A zero-sized buffer was asked for.
    #[error("tracefs: buffer size must be at least 1 KiB per CPU")]
    ZeroBuffer,
    /// A tracefs is mounted but we may not look into it.
    #[error("tracefs: permission denied accessing {} (needs CAP_SYS_ADMIN / root)", .path.display())]
    Unreadable {
        /// The mount point.
        path: PathBuf,
    },
    /// The tracefs found has no `instances` directory (too old a kernel).
    #[error("tracefs not available: {} has no instances directory", .root.display())]
    NoInstances {
        /// The tracefs mount point.
        root: PathBuf,
    },
    /// Permission denied on a tracefs file.
    #[error("tracefs: permission denied {doing} {} (needs CAP_SYS_ADMIN / root): {source}", .path.display())]
    Permission {
        /// What was being done (`creating instance in`, `writing`).
        doing: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The instance directory could not be created.
    #[error("tracefs: cannot create instance {}: {source}", .path.display())]
    CreateInstance {
        /// The instance directory.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A control file refused a value.
    #[error("tracefs: writing {value:?} to {}: {source}", .path.display())]
    Write {
        /// The value written.
        value: String,
        /// The control file.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// The buffer size was refused.
    #[error("{source} (asked for {kb} KiB per CPU)")]
    BufferSize {
        /// KiB per CPU asked for.
        kb: usize,
        /// Why it was refused.
        source: Box<TraceError>,
    },
    /// Reading, listing or clearing an instance file failed.
    #[error("tracefs: {doing} {}: {source}", .path.display())]
    Io {
        /// What was being done (`cannot open`, `cannot list`, `cannot clear`, `reading`).
        doing: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// No tracefs mounted and no directory to mount one on.
    #[error("tracefs not available: cannot create mount point {}: {source}", .dir.display())]
    MountPoint {
        /// The directory we tried to create.
        dir: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// No tracefs mounted and mounting one is not permitted.
    #[error(
        "tracefs not available: not mounted, and mounting it needs CAP_SYS_ADMIN / root ({0})"
    )]
    MountDenied(io::Error),
    /// The kernel has no tracefs.
    #[error("tracefs not available: the kernel has no tracefs ({0})")]
    NoTracefs(io::Error),
    /// Mounting tracefs failed otherwise.
    #[error("tracefs not available: mounting tracefs on {} failed: {source}", .dir.display())]
    MountFailed {
        /// The mount point.
        dir: PathBuf,
        /// The system's error.
        source: io::Error,
    },
}

/// Per-tid wakeup counts for one repetition.
#[derive(Clone, Debug, Default)]
pub struct TraceCounts {
    /// Counts per thread id; every tid passed to [`SchedTrace::collect`] has an entry.
    pub per_tid: HashMap<i32, TidCounts>,
    /// Events the kernel could not store (buffer full); when non-zero every count is a lower
    /// bound.
    pub lost: u64,
    /// Whether `sched_waking` was recorded, so that each wakeup's CPU is known and
    /// [`TidCounts::preemptions_on_waker_cpu`] means something.
    pub waker_cpus: bool,
    /// Whether the source tells lazy preemptions apart ([`TidCounts::preemptions_lazy`]): the
    /// in-kernel counters on kernels with `TIF_NEED_RESCHED_LAZY`; never the tracefs replay.
    pub lazy_known: bool,
}

/// The counts of one thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TidCounts {
    /// `sched_wakeup` events that woke this thread.
    pub wakeups: u64,
    /// Of those wakeups, how many preempted the task running on the wakee's target CPU (see
    /// the module documentation for the exact rule).
    pub wakeup_preemptions: u64,
    /// Of those preemptions, how many were on the CPU the wakeup ran on (its `sched_waking`
    /// fired there): the waker's own CPU, which switches at its next preemption point; the
    /// others came by IPI. Counted only when `sched_waking` is recorded
    /// ([`TraceCounts::waker_cpus`]).
    pub preemptions_on_waker_cpu: u64,
    /// Of the wakeup preemptions, those that set only the lazy need-resched flag: the running
    /// task gives way at the next tick rather than at its next preemption point (kernels in
    /// `preempt=lazy` mode). Counted only by the in-kernel counters
    /// ([`TraceCounts::lazy_known`]).
    pub preemptions_lazy: u64,
}

/// A private tracefs instance recording sched_wakeup and sched_switch.
#[derive(Debug)]
pub struct SchedTrace {
    /// `root/instances/schedlab-<pid>-<n>`; declared before `fs` so that it is removed before
    /// a private mount is detached.
    instance: Instance,
    /// The tracefs the instance lives in, held for its Drop (a private mount is detached).
    #[cfg_attr(not(test), allow(dead_code))]
    fs: Tracefs,
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
    pub fn open(comm_prefix: &str, buffer_kb_per_cpu: usize) -> Result<SchedTrace, TraceError> {
        tracefs::validate_prefix(comm_prefix)?;
        if buffer_kb_per_cpu == 0 {
            return Err(TraceError::ZeroBuffer);
        }
        tracefs::cleanup_stale_mounts();
        // From here on, Drop undoes whatever was done.
        let fs = Tracefs::open()?;
        tracefs::cleanup_stale_in(&fs.root);
        let instance = Instance::create(&fs.root)?;
        let mut t = SchedTrace {
            instance,
            fs,
            recording: false,
            lost_baseline: 0,
            has_waking: false,
        };
        let inst = &t.instance;
        inst.prepare_buffer(buffer_kb_per_cpu)?;
        t.has_waking = inst.path("events/sched/sched_waking/enable").exists();
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
            inst.write(&format!("events/sched/{event}/filter"), filter)?;
        }
        for event in EVENTS {
            if event == "sched_waking" && !t.has_waking {
                continue;
            }
            inst.write(&format!("events/sched/{event}/enable"), "1")?;
        }
        Ok(t)
    }

    /// Clear the instance's buffer (write to `trace` with O_TRUNC) and start recording (tracing_on=1).
    pub fn start(&mut self) -> Result<(), TraceError> {
        self.instance.write("tracing_on", "0")?;
        self.recording = false;
        self.instance.clear_buffer()?;
        self.lost_baseline = self.instance.read_lost()?;
        self.instance.write("tracing_on", "1")?;
        self.recording = true;
        Ok(())
    }

    /// Stop recording (tracing_on=0).
    pub fn stop(&mut self) -> Result<(), TraceError> {
        self.instance.write("tracing_on", "0")?;
        self.recording = false;
        Ok(())
    }

    /// Read what was recorded since [`start`](Self::start) (stopping the recording first if it
    /// is still on), keep only events about `tids`, and count wakeups and wakeup preemptions as
    /// described in the module documentation.
    pub fn collect(&mut self, tids: &HashSet<i32>) -> Result<TraceCounts, TraceError> {
        if self.recording {
            self.stop()?;
        }
        let lost = self
            .instance
            .read_lost()?
            .saturating_sub(self.lost_baseline);
        let trace = self.instance.path("trace");
        let file = fs::File::open(&trace).map_err(|source| TraceError::Io {
            doing: "cannot open",
            path: trace.clone(),
            source,
        })?;
        let mut counter = count::Counter::new(tids, self.has_waking);
        counter
            .feed(BufReader::with_capacity(1 << 20, file))
            .map_err(|source| TraceError::Io {
                doing: "reading",
                path: trace.clone(),
                source,
            })?;
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
}

#[cfg(test)]
mod tests {
    use super::tracefs::INSTANCE_PREFIX;
    use super::*;
    use std::sync::{mpsc, Arc, Barrier};
    use std::time::Instant;

    /// The first CPU we may run on.
    fn first_allowed_cpu() -> usize {
        let set = rustix::thread::sched_getaffinity(None).unwrap();
        (0..rustix::thread::CpuSet::MAX_CPU)
            .find(|&c| set.is_set(c))
            .unwrap()
    }

    fn name_and_pin(name: &str, cpu: usize) {
        crate::sys::set_thread_name(name);
        let mut set = rustix::thread::CpuSet::new();
        set.set(cpu);
        rustix::thread::sched_setaffinity(None, &set).unwrap();
    }

    /// A pipe as (read end, write end), each an owned `File`.
    fn pipe() -> (fs::File, fs::File) {
        let (r, w) = rustix::pipe::pipe().unwrap();
        (r.into(), w.into())
    }

    /// Two threads "sltest-a"/"sltest-b" pinned to one CPU exchange `n` bytes each way over two
    /// pipes. Tracing (if any) runs from just before the exchange to just after. Returns the
    /// tids and the round trips per second.
    fn pingpong(n: usize, mut trace: Option<&mut SchedTrace>) -> (HashSet<i32>, f64) {
        use std::io::{Read, Write};
        let cpu = first_allowed_cpu();
        let (r1, w1) = pipe();
        let (r2, w2) = pipe();
        let barrier = Arc::new(Barrier::new(3));
        let (tx, rx) = mpsc::channel();
        let side = |name: &'static str, mut r: fs::File, mut w: fs::File, first: bool| {
            let barrier = barrier.clone();
            let tx = tx.clone();
            std::thread::spawn(move || {
                name_and_pin(name, cpu);
                tx.send(crate::sys::gettid()).unwrap();
                barrier.wait();
                let mut b = [0u8; 1];
                for _ in 0..n {
                    if first {
                        w.write_all(&b).unwrap();
                        r.read_exact(&mut b).unwrap();
                    } else {
                        r.read_exact(&mut b).unwrap();
                        w.write_all(&b).unwrap();
                    }
                }
            })
        };
        let a = side("sltest-a", r2, w1, true);
        let b = side("sltest-b", r1, w2, false);
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
        (tids, n as f64 / secs)
    }

    fn is_root() -> bool {
        rustix::process::geteuid().is_root()
    }

    /// Tracing needs root (CAP_SYS_ADMIN) to create an instance, and to mount tracefs if it is
    /// not mounted; as root, failing to open is a failure, not a skip.
    fn open_as_root(prefix: &str, kb: usize) -> SchedTrace {
        SchedTrace::open(prefix, kb).unwrap_or_else(|e| panic!("running as root, yet: {e}"))
    }

    #[test]
    fn real_pingpong_is_traced_and_cleaned_up_when_root() {
        if !is_root() {
            eprintln!(
                "skipped: tracing needs root (CAP_SYS_ADMIN); run `sudo -E cargo test -p schedlab-real`"
            );
            return;
        }
        let mut trace = open_as_root("sltest", 4096);
        let inst = trace.instance.dir().to_path_buf();
        let private = trace.fs.private_mount.clone();
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
        if !stale.exists() {
            fs::create_dir(&stale).unwrap();
        }
        assert!(cleanup_stale_instances() >= 1);
        assert!(
            !stale.exists(),
            "stale instance {} not removed",
            stale.display()
        );
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
        // 4 MiB per CPU holds far more than 2000 round trips' events.
        assert_eq!(
            c.lost, 0,
            "events lost: the counts below would be lower bounds"
        );
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
            assert!(
                !crate::procfs::mounts().iter().any(|m| m.dir == dir),
                "private mount {} left behind",
                dir.display()
            );
            assert!(!dir.exists(), "mount point {} left behind", dir.display());
        }
    }

    #[test]
    fn open_refuses_bad_arguments() {
        assert!(matches!(
            SchedTrace::open("a*", 64),
            Err(TraceError::BadPrefix(_))
        ));
        assert_eq!(
            SchedTrace::open("sl-", 0).unwrap_err().to_string(),
            "tracefs: buffer size must be at least 1 KiB per CPU"
        );
    }

    /// The cost of tracing a pinned pipe ping-pong, the worst case (a wakeup and a switch per
    /// message). Prints the numbers; asserts that both variants were measured, that every round
    /// trip's wakeup was counted, and that tracing costs less than 5x.
    #[test]
    #[ignore = "benchmark (~10 s, needs root): cargo test -p schedlab-real trace_overhead -- --ignored --nocapture"]
    fn trace_overhead() {
        assert!(is_root(), "tracing needs root (CAP_SYS_ADMIN)");
        let n = 200_000;
        let (_, plain) = pingpong(n, None);
        let mut trace = open_as_root("sltest", 65536);
        let (tids, traced) = pingpong(n, Some(&mut trace));
        let t0 = Instant::now();
        let c = trace.collect(&tids).unwrap();
        let read = t0.elapsed();
        let (w, p): (u64, u64) = c.per_tid.values().fold((0, 0), |(w, p), t| {
            (w + t.wakeups, p + t.wakeup_preemptions)
        });
        let slower = (1.0 - traced / plain) * 100.0;
        eprintln!(
            "pinned pipe ping-pong, {n} round trips: {plain:.0}/s untraced, {traced:.0}/s traced ({slower:.1}% slower); \
             collect took {read:?}; wakeups {w}, wakeup preemptions {p}, lost {}",
            c.lost
        );
        assert!(plain.is_finite() && plain > 0.0, "untraced rate {plain}");
        assert!(traced.is_finite() && traced > 0.0, "traced rate {traced}");
        assert!(
            traced * 5.0 > plain,
            "tracing made the ping-pong {slower:.1}% slower"
        );
        assert!(
            w + c.lost + 2 >= n as u64,
            "{w} wakeups (+{} lost events) for {n} round trips",
            c.lost
        );
    }
}
