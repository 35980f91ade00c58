//! One repetition of a workload on the real kernel.
//!
//! The sequence follows hackbench's: create every channel, start every task (thread or forked
//! process), let each apply its group's knobs and report ready, then release them all at once
//! through a start pipe and time until the last body finishes. Each task counts its context
//! switches with getrusage around its body and then waits at an end gate while the parent reads
//! its /proc entries (migrations, settings) — no task opens a file during the run; wakeup and
//! preemption counts come from a private tracefs instance when one is available.
//!
//! The waiting parent is the supervisor: it ends the repetition when the time budget is exceeded
//! or an interrupt arrives, and when a group runs under a real-time policy it waits at SCHED_FIFO
//! [`SUPERVISOR_PRIORITY`] so that runaway real-time tasks cannot starve it; it then demotes
//! (threads) or kills (processes) the tasks. A FIFO or RR group at the supervisor's priority or
//! above could not be preempted by it, so such a priority is refused before anything starts
//! ([`check_outranked`]).
//!
//! Nothing is lost silently: a task that cannot be created (EAGAIN under a limit on tasks) is
//! reported at once with the limits, and a task that dies after its report (at the end gate)
//! fails the repetition.

use crate::context::{RealContext, Shared};
use crate::executor::block_on;
use crate::knobs::{apply_to_current_thread, demote_thread};
use crate::locks::RealLock;
use crate::procfs::{observed_settings_of, rusage_switches, task_snapshot};
use crate::run_group::EndOnDrop;
use crate::spawn::Spawner;
use crate::sync::SyncObjects;
use crate::sys;
use crate::tempdir::TempDir;
use crate::trace::timeline::{RqTrace, WorkloadTid};
use crate::trace::TraceCounts;
use crate::transport::Channels;
use crate::wakeups::WakeupCounter;
use schedlab_workload::knobs::{Knobs, SchedPolicy};
use schedlab_workload::presets::{Outcome, TaskOutcome};
use schedlab_workload::record::{CounterSources, Counters};
use schedlab_workload::timeline::Timeline;
use schedlab_workload::{Plan, TaskMode, TaskRef, Workload};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// The prefix of every task's thread name (comm); the tracefs filter selects on it.
pub const COMM_PREFIX: &str = "sl-";

/// The SCHED_FIFO priority the supervisor waits at while a repetition has real-time groups. A
/// FIFO or RR task at this priority or above could not be preempted by it, so groups are held
/// below it ([`check_outranked`]).
pub const SUPERVISOR_PRIORITY: u8 = 99;

/// A real-time priority that the supervisor could not outrank, so that it could not end a
/// runaway task of that group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy={policy}: real-time priority {priority} is not accepted: the supervisor, which ends a repetition that runs past its time budget, {}", match .supervisor {
    Some(s) if *s > 1 => format!("waits at SCHED_FIFO {s} and can only preempt tasks below it; use a real-time priority of 1..{}", s - 1),
    Some(s) => format!("could only raise itself to SCHED_FIFO {s} here and can only preempt tasks below it; use a policy that is not real-time"),
    None => "could not raise itself to a real-time priority here and could not preempt such tasks; use a policy that is not real-time".to_string(),
})]
pub struct OutrankError {
    /// The policy as the user writes it (`fifo:99`).
    pub policy: String,
    /// Its real-time priority.
    pub priority: u8,
    /// The supervisor's SCHED_FIFO priority, if it has one.
    pub supervisor: Option<u8>,
}

/// Refuse a FIFO or RR priority that a supervisor at SCHED_FIFO `supervisor` (`None`: not
/// real-time) could not preempt. SCHED_DEADLINE groups pass: their reservation leaves the rest
/// of each period to the supervisor.
pub fn check_outranked(knobs: &Knobs, supervisor: Option<u8>) -> Result<(), OutrankError> {
    let priority = match knobs.policy {
        Some(SchedPolicy::Fifo(p)) | Some(SchedPolicy::Rr(p)) => p,
        _ => return Ok(()),
    };
    if supervisor.is_some_and(|s| priority < s) {
        return Ok(());
    }
    Err(OutrankError {
        policy: knobs.policy.map(|p| p.to_string()).unwrap_or_default(),
        priority,
        supervisor,
    })
}

/// Whether the tasks of `plan` can be hosted as its mode says. The plan's locks, barriers,
/// semaphores and condition variables live in the schedlab process, where forked tasks cannot
/// reach them: a plan with locks is refused as processes, and one with barriers, semaphores or
/// condition variables as processes or group processes (two groups' processes could not share
/// them). The message names what the plan has, the mode refused and the one accepted.
pub fn check_hosting(plan: &Plan) -> Result<(), String> {
    let forked = plan.mode != TaskMode::Threads;
    let uses: Vec<&str> = [
        (plan.mode == TaskMode::Processes && plan.locks > 0, "locks"),
        (forked && !plan.sync.barriers.is_empty(), "barriers"),
        (forked && !plan.sync.semaphores.is_empty(), "semaphores"),
        (forked && plan.sync.conds > 0, "condition variables"),
    ]
    .into_iter()
    .filter_map(|(used, what)| used.then_some(what))
    .collect();
    let what = match uses.as_slice() {
        [] => return Ok(()),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    Err(format!(
        "{what} need tasks run as threads: tasks={} is not accepted with them; use tasks=threads",
        plan.mode
    ))
}

/// How many tasks (threads and processes) a repetition of `plan` creates and keeps at once:
/// one per task, and one host process per group when groups are hosted as processes.
pub fn tasks_needed(plan: &Plan) -> u64 {
    let hosts = match plan.mode {
        TaskMode::GroupProcesses => plan.groups.iter().filter(|g| g.tasks > 0).count(),
        TaskMode::Threads | TaskMode::Processes => 0,
    };
    (plan.total_tasks() + hosts) as u64
}

/// Why a repetition did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// Setting up channels, tasks or files failed.
    #[error("setting up the run failed: {0}")]
    Setup(String),
    /// A task could not apply its group's knobs.
    #[error("group '{group}': {message}")]
    Knob {
        /// Group name.
        group: String,
        /// What went wrong, naming the knob and capability.
        message: String,
    },
    /// A task failed or died during its body.
    #[error("task {task} failed: {message}")]
    Task {
        /// Which task (`receiver 3`).
        task: String,
        /// What went wrong.
        message: String,
    },
    /// A process hosting tasks died before they finished.
    #[error("{what} died before its tasks finished: {how}")]
    Died {
        /// What it hosted (`the server process`, `receiver 3`).
        what: String,
        /// How it ended (`process 123 was killed by signal 9`).
        how: String,
    },
    /// A task or process died after its report, before the repetition ended (at the end gate):
    /// its counters would be missing or incomplete, so the repetition fails.
    #[error("{what} died after its report, before the repetition ended: {how}")]
    Lost {
        /// What (`receiver 3`, `the server process (20 tasks)`).
        what: String,
        /// How it ended.
        how: String,
    },
    /// The keeper of the spawned processes' group died before the repetition ended: something
    /// outside the run is killing its processes, and the group could no longer be relied on.
    #[error("the process-group keeper of the spawned tasks (schedlab-keeper) died before the repetition ended: {how}")]
    KeeperDied {
        /// How it ended (`process 123 was killed by signal 9`).
        how: String,
    },
    /// The run was interrupted (SIGINT/SIGTERM).
    #[error("interrupted")]
    Interrupted,
    /// The supervisor ended the repetition after its time budget (the caller says how to
    /// raise it).
    #[error("the supervisor ended the repetition after its time budget of {:.1}s", .0.as_secs_f64())]
    Timeout(Duration),
}

/// What a repetition needs besides the workload.
pub struct RepetitionSetup<'a> {
    /// Knobs per plan group (same order as `plan.groups`).
    pub knobs: &'a [Knobs],
    /// Set by the interrupt handler; the repetition stops when it is set.
    pub stop: Arc<AtomicBool>,
    /// Time budget for the body phase.
    pub budget: Duration,
    /// Wakeup/preemption counting (in-kernel BPF or tracefs), if available.
    pub trace: Option<&'a mut WakeupCounter>,
    /// Run-queue timeline tracing (`--timeline`), if asked for.
    pub rq_trace: Option<&'a mut RqTrace>,
    /// Where the caller wrote the workload's shared files
    /// ([`schedlab_workload::Workload::shared_files`]), if it did; `None`: the repetition
    /// writes [`Workload::write_files`] into its own temporary directory.
    pub files: Option<&'a std::path::Path>,
}

/// The measured result of one repetition.
#[derive(Debug, Clone)]
pub struct RepetitionResult {
    /// Raw outcome for the workload's metric computation.
    pub outcome: Outcome,
    /// Counters per group name, plus `total`.
    pub counters: BTreeMap<String, Counters>,
    /// Where the counters came from.
    pub sources: CounterSources,
    /// Trace events lost (counters are lower bounds when > 0).
    pub lost_events: u64,
    /// Settings of the first task of each group, read back from /proc after the run.
    pub observed: Vec<BTreeMap<String, String>>,
    /// Per lock of the workload, its statistics in this repetition.
    pub locks: Vec<schedlab_workload::record::LockStats>,
    /// The run-queue timeline, when [`RepetitionSetup::rq_trace`] recorded one.
    pub timeline: Option<Timeline>,
}

/// What each task sends back to the parent (a starting task through its pipe or channel, a
/// spawned one through [`crate::spawn`]'s reports).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TaskReport {
    pub id: usize,
    pub pid: i32,
    pub tid: i32,
    pub error: Option<String>,
    pub samples: BTreeMap<String, Vec<f64>>,
    pub cpu_ns: u64,
    pub finished_ns: u64,
    /// Voluntary and involuntary switches from just before the start gate (a spawned task:
    /// its start) to the body's end.
    pub voluntary: u64,
    pub involuntary: u64,
    /// Migrations, read by a spawned task itself at its end (a starting task's are read by
    /// the parent at the end gate).
    #[serde(default)]
    pub migrations: Option<u64>,
}

/// What a small TCP write can cost in send buffer beyond its bytes: the `sk_buff` it is queued
/// in (`truesize`: head, shared info and headroom, under 1 KiB for a message that fits one).
const TCP_SKB_OVERHEAD: u64 = 1024;

/// The locks under which the writers of a TCP channel take turns, if they need them.
///
/// A blocking TCP write is copied whole under the kernel's socket lock unless it has to wait
/// for send-buffer space halfway (`tcp_sendmsg_locked` → `sk_stream_wait_memory`, which
/// releases the socket lock): only then can another writer's bytes land inside a message. So
/// when the workload says how much one channel carries at most ([`Workload::channel_volume`])
/// and that fits every channel's send buffer (`SO_SNDBUF`; autotuning grows it, only global TCP
/// memory pressure shrinks it, and a message split then fails the run's check of every message
/// instead of passing unseen) with a `sk_buff` per message, the writers go without a lock, as
/// the originals' threads do
/// (IBM chat_s's relay threads write to a member's socket side by side) and as the simulator
/// models them. Otherwise they take turns under a user-space lock, which the simulator does
/// not model: a writer preempted at its write's return still holds it (on one CPU, the chat row
/// of `validate` ran at 98,000 msg/s with it and 237,000 without, the simulator 226,000).
fn tcp_write_locks(
    plan: &Plan,
    channels: &Channels,
    volume: Option<schedlab_workload::ChannelVolume>,
) -> Option<Vec<parking_lot::Mutex<()>>> {
    if plan.transport != schedlab_workload::Transport::Tcp {
        return None;
    }
    let fits = volume.is_some_and(|v| {
        let need = v
            .bytes
            .saturating_add(v.messages.saturating_mul(TCP_SKB_OVERHEAD));
        (0..plan.channels)
            .all(|ch| sys::send_buffer(channels.write_fd(ch)).is_ok_and(|buf| need <= buf as u64))
    });
    (!fits).then(|| {
        (0..plan.all_channels())
            .map(|_| parking_lot::Mutex::new(()))
            .collect()
    })
}

/// The start gate, as hackbench builds it: tasks write "ready" messages into one pipe and then
/// `poll()` another, which the parent makes readable with a single byte. Poll waiters are woken
/// all at once (a blocking `read()` would wake them one after another: pipe readers wait
/// exclusively), so every task starts together. The epoch (0 = abort) is published beforehand in
/// a shared anonymous mapping, which forked processes inherit.
struct Gate {
    ready: (i32, i32),
    start: (i32, i32),
    /// Tasks wait here after their body until the parent has read their counters.
    end: (i32, i32),
    epoch: *mut AtomicU64,
}

// SAFETY: `epoch` points to a private shared mapping that lives as long as the gate and is only
// accessed atomically.
unsafe impl Send for Gate {}
// SAFETY: as above.
unsafe impl Sync for Gate {}

impl Gate {
    fn new() -> std::io::Result<Gate> {
        let page = sys::shared_zeroed(4096)?;
        Ok(Gate {
            ready: sys::pipe()?,
            start: sys::pipe()?,
            end: sys::pipe()?,
            epoch: page.cast(),
        })
    }

    fn epoch(&self) -> &AtomicU64 {
        // SAFETY: the mapping is valid, zero-initialised and aligned for the gate's lifetime.
        unsafe { &*self.epoch }
    }

    /// Task side: report ready (with an error message or empty), then wait for the epoch.
    fn task_ready_and_wait(&self, id: usize, error: &str) -> Option<u64> {
        self.send_ready(id, error, 0).ok()?;
        if !error.is_empty() {
            return None;
        }
        if !sys::wait_readable(self.start.0, -1) {
            return None;
        }
        match self.epoch().load(Ordering::Acquire) {
            0 => None,
            e => Some(e),
        }
    }

    /// Host side: task `id` could not even be created; the parent aborts the run at once.
    fn task_not_created(&self, id: usize, error: &str) {
        let _ = self.send_ready(id, error, NOT_CREATED);
    }

    /// One message on the ready pipe: the task id, the message's length with `flags`, and the
    /// message (empty: ready).
    fn send_ready(&self, id: usize, message: &str, flags: u32) -> std::io::Result<()> {
        let msg = message.as_bytes();
        let msg = &msg[..msg.len().min(3000)];
        let mut buf = Vec::with_capacity(8 + msg.len());
        buf.extend_from_slice(&(id as u32).to_le_bytes());
        buf.extend_from_slice(&(msg.len() as u32 | flags).to_le_bytes());
        buf.extend_from_slice(msg);
        // One write of at most PIPE_BUF bytes is atomic, so messages never interleave.
        sys::write_all(self.ready.1, &buf)
    }

    /// Task side: wait until the parent releases the end gate.
    fn wait_end(&self) {
        sys::wait_readable(self.end.0, -1);
    }

    /// Parent side: let every task that finished its body exit.
    fn release_end(&self) {
        let _ = sys::write_all(self.end.1, b"!");
    }

    /// Parent side: release everybody at `epoch`, or abort them with 0.
    fn release(&self, epoch: u64) {
        self.epoch().store(epoch, Ordering::Release);
        let _ = sys::write_all(self.start.1, b"!");
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        for fd in [
            self.ready.0,
            self.ready.1,
            self.start.0,
            self.start.1,
            self.end.0,
            self.end.1,
        ] {
            sys::close(fd);
        }
        // SAFETY: unmapping the page mapped in `new`.
        unsafe { libc::munmap(self.epoch.cast(), 4096) };
    }
}

/// The directory of the run's scratch directory where forked spawned tasks leave their reports.
const SPAWN_REPORTS: &str = ".spawned";

/// The flag of a ready message saying that the task could not be created (in the length field;
/// messages are far shorter).
const NOT_CREATED: u32 = 1 << 31;

/// Everything a task needs, shared by reference (threads) or by inheritance (processes).
struct TaskEnv<W> {
    workload: Arc<W>,
    shared: Arc<Shared>,
    gate: Arc<Gate>,
    knobs: Vec<Knobs>,
    group_names: Vec<&'static str>,
    /// Tasks in the repetition, for messages.
    total: usize,
    /// How tasks start others, when the plan spawns any.
    spawner: Option<Arc<Spawner>>,
}

/// The body of one task from knob application to report. The report is handed to `deliver`;
/// the task then waits at the end gate until the parent has read its /proc counters.
///
/// No task opens a file between its start and the end of the run: instantiating a thread's
/// /proc entries before the run (whoever reads them) measurably slows it — a hackbench replica
/// ran 10–18 % slower over 30–40 alternating runs when each thread's /proc/…/sched was read
/// before the start. Switches are therefore counted with getrusage(RUSAGE_THREAD) around the
/// body, and the parent reads /proc (migrations, settings) while the tasks wait at the end.
fn task_main<W: Workload>(env: &TaskEnv<W>, task: TaskRef, deliver: impl FnOnce(TaskReport)) {
    let name = format!("{COMM_PREFIX}{}{}", env.group_names[task.group], task.index);
    sys::set_thread_name(&name);
    let mut report = TaskReport {
        id: task.id,
        pid: std::process::id() as i32,
        tid: sys::gettid(),
        ..TaskReport::default()
    };
    if let Err(e) = apply_to_current_thread(&env.knobs[task.group]) {
        env.gate.task_ready_and_wait(task.id, &e.to_string());
        return;
    }
    // Sleeps end when asked rather than up to 50 µs later (the default timer slack of a normal
    // thread): a per-thread setting, so that interbench's latencies are scheduling latencies.
    // SAFETY: plain prctl on the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    // Counted from before the start gate, so that the one wait there is included on both
    // sides: one voluntary switch and, since tracing starts before the release, one wakeup.
    let (vol0, invol0) = rusage_switches();
    let ctx_shared = env.shared.clone();
    let Some(epoch) = env.gate.task_ready_and_wait(task.id, "") else {
        return;
    };
    let cpu0 = sys::thread_cpu_ns();
    let mut ctx = RealContext::new(ctx_shared, task.id, epoch);
    if let Some(spawner) = &env.spawner {
        ctx = ctx.with_spawner(spawner.clone(), 0);
    }
    let result = block_on(env.workload.body(task, &ctx));
    report.finished_ns = sys::monotonic_ns().saturating_sub(epoch);
    report.cpu_ns = sys::thread_cpu_ns() - cpu0;
    let (vol1, invol1) = rusage_switches();
    report.voluntary = vol1.saturating_sub(vol0);
    report.involuntary = invol1.saturating_sub(invol0);
    report.samples = ctx.take_samples();
    // A server it started and stopped (nginx, Apache) is its work too: its processes' use.
    let daemon = ctx.daemon_usage();
    report.cpu_ns += daemon.cpu_ns;
    report.voluntary += daemon.voluntary;
    report.involuntary += daemon.involuntary;
    // Reap the children the body did not wait for before reporting.
    drop(ctx);
    report.error = result.err().map(|e| e.to_string());
    deliver(report);
    env.gate.wait_end();
}

/// Run one repetition of `workload` and measure it.
pub fn run_repetition<W: Workload>(
    workload: &Arc<W>,
    setup: RepetitionSetup<'_>,
) -> Result<RepetitionResult, RunError> {
    let plan = workload.plan();
    if setup.knobs.len() != plan.groups.len() {
        return Err(RunError::Setup(
            "knobs do not match the plan's groups".into(),
        ));
    }
    check_hosting(&plan).map_err(RunError::Setup)?;
    for (g, k) in plan.groups.iter().zip(setup.knobs) {
        check_outranked(k, Some(SUPERVISOR_PRIORITY)).map_err(|e| RunError::Knob {
            group: g.name.into(),
            message: e.to_string(),
        })?;
    }
    let lock_stats = crate::locks::stats_enabled().map_err(RunError::Setup)?;
    let scratch =
        TempDir::new().map_err(|e| RunError::Setup(format!("temporary directory: {e}")))?;
    let files = match setup.files {
        Some(dir) => dir.to_path_buf(),
        None => {
            workload.write_files(scratch.path()).map_err(|e| {
                RunError::Setup(format!(
                    "writing the workload's files in {}: {e}",
                    scratch.path().display()
                ))
            })?;
            scratch.path().to_path_buf()
        }
    };
    let channels = Channels::create(plan.transport, plan.channels, plan.duplex, &scratch)
        .and_then(|mut c| c.add_pipes(plan.sync.queues).map(|()| c))
        .map_err(|e| {
            RunError::Setup(format!(
                "creating {} {} channels: {e}{}",
                plan.channels,
                plan.transport,
                if e.raw_os_error() == Some(libc::EMFILE) {
                    " (open-file limit: raise it with `ulimit -n`)"
                } else {
                    ""
                }
            ))
        })?;
    let write_locks = tcp_write_locks(&plan, &channels, workload.channel_volume());
    let shared = Arc::new(Shared {
        channels,
        write_locks,
        locks: (0..plan.locks)
            .map(|l| RealLock::new(plan.lock_kind(l), plan.lock_name(l), lock_stats))
            .collect(),
        sync: SyncObjects::new(&plan.sync, setup.stop.clone()),
        stop: setup.stop.clone(),
        scratch: scratch.path().to_path_buf(),
        files,
    });
    let gate = Arc::new(Gate::new().map_err(|e| RunError::Setup(format!("start pipes: {e}")))?);
    let body_workload = workload.clone();
    let spawner = Spawner::new(
        &plan,
        setup.knobs,
        Box::new(move |task, ctx| block_on(body_workload.body(task, ctx))),
        &scratch.path().join(SPAWN_REPORTS),
    )
    .map_err(|e| RunError::Setup(format!("spawn places, reports or process group: {e}")))?
    .map(Arc::new);
    // Declared before the hosts: whatever way this function returns, the forked tasks' group
    // is ended and reaped after the hosts are.
    let _group = EndOnDrop(spawner.as_ref().and_then(|s| s.group()));
    let env = Arc::new(TaskEnv {
        spawner,
        workload: workload.clone(),
        shared,
        gate: gate.clone(),
        knobs: setup.knobs.to_vec(),
        group_names: plan.groups.iter().map(|g| g.name).collect(),
        total: plan.total_tasks(),
    });
    let tasks = plan.tasks();
    let realtime = setup
        .knobs
        .iter()
        .any(|k| k.policy.is_some_and(|p| p.is_realtime()));
    let ordered: Vec<TaskRef> = workload
        .start_order()
        .into_iter()
        .map(|i| tasks[i])
        .collect();
    if ordered.len() != tasks.len() {
        return Err(RunError::Setup(
            "the workload's start order does not name every task".into(),
        ));
    }
    let hosts = match plan.mode {
        TaskMode::Threads => Hosts::threads(&env, &ordered),
        TaskMode::Processes => Hosts::processes(&env, ordered.iter().map(|&t| vec![t]).collect()),
        TaskMode::GroupProcesses => {
            let mut units: Vec<Vec<TaskRef>> = Vec::new();
            let mut unit_of_group: BTreeMap<usize, usize> = BTreeMap::new();
            for &t in &ordered {
                let u = *unit_of_group.entry(t.group).or_insert_with(|| {
                    units.push(Vec::new());
                    units.len() - 1
                });
                units[u].push(t);
            }
            Hosts::processes(&env, units)
        }
    };
    let mut hosts = match hosts {
        Ok(h) => h,
        Err(e) => {
            // Let the tasks created so far leave the start gate.
            gate.release(0);
            return Err(e);
        }
    };
    let result = supervise(
        &plan,
        &tasks,
        &gate,
        &mut hosts,
        env.spawner.as_deref(),
        setup,
        realtime,
    );
    if result.is_err() {
        // Tasks waiting at a barrier, on a semaphore or on a condition return Stopped (as
        // threads; processes are killed), report and leave through the end gate.
        env.shared.sync.stop();
    }
    gate.release_end();
    let ended = hosts.finish(result.is_ok());
    // The keeper may have died after the supervisor last looked: checked before the group ends
    // (and kills it).
    let ended = ended.and_then(|()| keeper_alive(env.spawner.as_deref()));
    match (result, ended) {
        (Ok(_), Err(e)) => Err(e),
        // Every task is done: the locks' counters are final. Tasks hosted as group processes
        // used their process's copy of the locks, which this process cannot read: their
        // statistics are left out rather than reported as zero.
        (Ok(mut r), Ok(())) if plan.mode == TaskMode::Threads => {
            let elapsed = r.outcome.wall.as_nanos() as u64;
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            r.locks = (env.shared.locks.iter())
                .filter_map(|l| l.stats(elapsed, cpus))
                .collect();
            Ok(r)
        }
        (result, _) => result,
    }
}

/// How the tasks of a repetition are hosted, and how their reports come back.
enum Hosts {
    Threads {
        rx: mpsc::Receiver<TaskReport>,
        tids: Arc<parking_lot::Mutex<Vec<i32>>>,
        handles: Vec<std::thread::JoinHandle<()>>,
    },
    Processes {
        children: Vec<Child>,
    },
}

struct Child {
    /// How many tasks this process hosts (one, or a whole group as threads).
    tasks: usize,
    /// Name of what it hosts, for errors (`the server process`).
    what: String,
    pid: i32,
    result_fd: i32,
    buf: Vec<u8>,
    /// Reports parsed so far.
    got: usize,
    reaped: Option<i32>,
}

impl Child {
    fn complete(&self) -> bool {
        self.got == self.tasks
    }

    /// Move every complete length-prefixed report out of the buffer.
    fn parse(&mut self, out: &mut Vec<TaskReport>) -> Result<(), String> {
        let mut at = 0;
        while self.buf.len() >= at + 8 {
            let len =
                u64::from_le_bytes(self.buf[at..at + 8].try_into().expect("8 bytes")) as usize;
            if self.buf.len() < at + 8 + len {
                break;
            }
            let r: TaskReport = serde_json::from_slice(&self.buf[at + 8..at + 8 + len])
                .map_err(|e| format!("unreadable report from {}: {e}", self.what))?;
            out.push(r);
            self.got += 1;
            at += 8 + len;
        }
        self.buf.drain(..at);
        Ok(())
    }

    /// Read what the pipe holds now (non-blocking after poll said it is readable or the
    /// process is gone).
    fn drain(&mut self) {
        let mut chunk = [0u8; 65536];
        loop {
            if !sys::wait_readable(self.result_fd, 0) {
                return;
            }
            // SAFETY: chunk is writable.
            let n = unsafe { libc::read(self.result_fd, chunk.as_mut_ptr().cast(), chunk.len()) };
            if n <= 0 {
                return;
            }
            self.buf.extend_from_slice(&chunk[..n as usize]);
        }
    }
}

/// Send one report up the result pipe, length-prefixed.
fn write_report(fd: i32, rep: &TaskReport) -> bool {
    let json = serde_json::to_vec(rep).unwrap_or_default();
    let mut msg = (json.len() as u64).to_le_bytes().to_vec();
    msg.extend_from_slice(&json);
    sys::write_all(fd, &msg).is_ok()
}

impl Hosts {
    fn threads<W: Workload>(env: &Arc<TaskEnv<W>>, tasks: &[TaskRef]) -> Result<Hosts, RunError> {
        let (tx, rx) = mpsc::channel();
        let tids = Arc::new(parking_lot::Mutex::new(Vec::with_capacity(tasks.len())));
        let mut handles = Vec::with_capacity(tasks.len());
        for &task in tasks {
            let group = env.group_names[task.group];
            let env = env.clone();
            let tx = tx.clone();
            let tids = tids.clone();
            let h = std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    tids.lock().push(sys::gettid());
                    task_main(&env, task, |r| {
                        let _ = tx.send(r);
                    });
                })
                .map_err(|e| {
                    RunError::Setup(format!(
                        "cannot create the thread of {group} {} (task {} of {}): {}",
                        task.index,
                        handles.len() + 1,
                        tasks.len(),
                        crate::host::explain_task_failure(&e)
                    ))
                })?;
            handles.push(h);
        }
        Ok(Hosts::Threads { rx, tids, handles })
    }

    /// Fork one process per unit; a unit of several tasks runs them as threads of that process,
    /// which streams each report to the parent as soon as its task finishes.
    fn processes<W: Workload>(
        env: &Arc<TaskEnv<W>>,
        units: Vec<Vec<TaskRef>>,
    ) -> Result<Hosts, RunError> {
        let parent = std::process::id() as i32;
        let mut children: Vec<Child> = Vec::with_capacity(units.len());
        let mut created = 0;
        for unit in units {
            let group = env.group_names[unit[0].group];
            let what = if unit.len() == 1 {
                format!("{group} {}", unit[0].index)
            } else {
                format!("the {group} process ({} tasks)", unit.len())
            };
            let (r, w) = sys::pipe().map_err(|e| RunError::Setup(format!("result pipe: {e}")))?;
            // SAFETY: the child only runs its tasks and then _exit()s; it never returns into the
            // parent's stack frames, and glibc keeps malloc usable after fork.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                let e = std::io::Error::last_os_error();
                for c in &children {
                    // SAFETY: killing our own children.
                    unsafe { libc::kill(c.pid, libc::SIGKILL) };
                }
                let (process, which) = match unit.len() {
                    1 => (
                        format!("the process of {what}"),
                        format!("task {} of {}", created + 1, env.total),
                    ),
                    n => (
                        format!("the {group} process"),
                        format!("tasks {}-{} of {}", created + 1, created + n, env.total),
                    ),
                };
                return Err(RunError::Setup(format!(
                    "cannot fork {process} ({which}): {}",
                    crate::host::explain_task_failure(&e)
                )));
            }
            if pid == 0 {
                // SAFETY: plain calls on our own process.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                }
                sys::close(r);
                let ok = if let [task] = unit[..] {
                    let mut ok = true;
                    task_main(env, task, |rep| ok = write_report(w, &rep));
                    ok
                } else {
                    // Not "sl-…": the host thread is not one of the traced tasks.
                    sys::set_thread_name(&format!("schedlab-{group}"));
                    let (tx, rx) = mpsc::channel();
                    let mut ok = true;
                    for (k, &task) in unit.iter().enumerate() {
                        let task_env = env.clone();
                        let tx = tx.clone();
                        let spawned =
                            std::thread::Builder::new()
                                .stack_size(64 * 1024)
                                .spawn(move || {
                                    task_main(&task_env, task, |rep| {
                                        let _ = tx.send(rep);
                                    });
                                });
                        if let Err(e) = spawned {
                            // Said at once: the parent would otherwise wait for a task that
                            // will never report ready.
                            env.gate.task_not_created(
                                task.id,
                                &format!(
                                    "cannot create the thread of {group} {} (task {} of {}, thread {} of {} in the {group} process): {}",
                                    task.index,
                                    created + k + 1,
                                    env.total,
                                    k + 1,
                                    unit.len(),
                                    crate::host::explain_task_failure(&e)
                                ),
                            );
                            ok = false;
                            break;
                        }
                    }
                    drop(tx);
                    for rep in rx {
                        ok &= write_report(w, &rep);
                    }
                    ok
                };
                // SAFETY: leave without running the parent's destructors.
                unsafe { libc::_exit(i32::from(!ok)) };
            }
            sys::close(w);
            created += unit.len();
            children.push(Child {
                tasks: unit.len(),
                what,
                pid,
                result_fd: r,
                buf: Vec::new(),
                got: 0,
                reaped: None,
            });
        }
        Ok(Hosts::Processes { children })
    }

    /// Collect reports that have arrived, waiting at most `wait`. Returns an error if a process
    /// died without reporting.
    fn poll_reports(&mut self, wait: Duration, out: &mut Vec<TaskReport>) -> Result<(), RunError> {
        match self {
            Hosts::Threads { rx, .. } => {
                if let Ok(r) = rx.recv_timeout(wait) {
                    out.push(r);
                    while let Ok(r) = rx.try_recv() {
                        out.push(r);
                    }
                }
                Ok(())
            }
            Hosts::Processes { children } => {
                let mut fds: Vec<libc::pollfd> = children
                    .iter()
                    .filter(|c| !c.complete())
                    .map(|c| libc::pollfd {
                        fd: c.result_fd,
                        events: libc::POLLIN,
                        revents: 0,
                    })
                    .collect();
                // SAFETY: fds is a valid array of pollfd.
                unsafe {
                    libc::poll(
                        fds.as_mut_ptr(),
                        fds.len() as libc::nfds_t,
                        wait.as_millis() as i32,
                    )
                };
                // Only the children whose pipe has news are looked at: a report arrived, or the
                // pipe hung up because the child (its only writer) is gone. Scanning every child
                // each time would cost the workload CPU time the peers do not spend.
                let ready: HashSet<i32> = fds
                    .iter()
                    .filter(|p| p.revents != 0)
                    .map(|p| p.fd)
                    .collect();
                for c in children
                    .iter_mut()
                    .filter(|c| !c.complete() && ready.contains(&c.result_fd))
                {
                    c.drain();
                    c.parse(out).map_err(|message| RunError::Task {
                        task: c.what.clone(),
                        message,
                    })?;
                    let hung_up = fds.iter().any(|p| {
                        p.fd == c.result_fd && p.revents & (libc::POLLHUP | libc::POLLERR) != 0
                    });
                    if c.complete() || c.reaped.is_some() || !hung_up {
                        continue;
                    }
                    let mut status = 0;
                    // SAFETY: reaping our own child, whose pipe end is closed: it is exiting.
                    if unsafe { libc::waitpid(c.pid, &mut status, 0) } == c.pid {
                        c.reaped = Some(status);
                    }
                    return Err(RunError::Died {
                        what: c.what.clone(),
                        how: describe_status(c.pid, status),
                    });
                }
                Ok(())
            }
        }
    }

    /// Emergency stop: demote threads to SCHED_OTHER (they cannot be killed alone; the process
    /// exits soon after), kill processes.
    fn stop_all(&mut self) {
        match self {
            Hosts::Threads { tids, .. } => {
                for &tid in tids.lock().iter() {
                    let _ = demote_thread(tid);
                }
            }
            Hosts::Processes { children } => {
                for c in children.iter().filter(|c| c.reaped.is_none()) {
                    // SAFETY: killing our own child.
                    unsafe { libc::kill(c.pid, libc::SIGKILL) };
                }
            }
        }
    }

    /// Reap everything. After a failure, threads that are still blocked are left to die with the
    /// process (they hold no resources outside it); processes have been killed. After a success,
    /// a process that did not exit normally (killed at the end gate, or unable to send a report)
    /// is an error: its tasks' results cannot be trusted.
    fn finish(&mut self, ok: bool) -> Result<(), RunError> {
        if !ok {
            self.stop_all();
        }
        let mut lost = None;
        match self {
            Hosts::Threads { handles, .. } => {
                if ok {
                    for h in handles.drain(..) {
                        let _ = h.join();
                    }
                }
            }
            Hosts::Processes { children } => {
                for c in children.iter_mut() {
                    if c.reaped.is_none() {
                        let mut status = 0;
                        // SAFETY: reaping our own child.
                        unsafe { libc::waitpid(c.pid, &mut status, 0) };
                        c.reaped = Some(status);
                        let normal = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
                        if ok && !normal && lost.is_none() {
                            let how = if libc::WIFEXITED(status) {
                                format!(
                                    "process {} exited with status {}",
                                    c.pid,
                                    libc::WEXITSTATUS(status)
                                )
                            } else {
                                describe_status(c.pid, status)
                            };
                            lost = Some(RunError::Lost {
                                what: c.what.clone(),
                                how,
                            });
                        }
                    }
                    sys::close(c.result_fd);
                }
            }
        }
        lost.map_or(Ok(()), Err)
    }
}

/// An error if the keeper of the spawned tasks' process group has died (see
/// [`RunGroup::keeper_death`](crate::run_group::RunGroup::keeper_death)).
fn keeper_alive(spawner: Option<&Spawner>) -> Result<(), RunError> {
    match spawner
        .and_then(|s| s.group())
        .and_then(|g| g.keeper_death())
    {
        Some(how) => Err(RunError::KeeperDied { how }),
        None => Ok(()),
    }
}

fn describe_status(pid: i32, status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!(
            "process {pid} was killed by signal {}",
            libc::WTERMSIG(status)
        )
    } else {
        format!(
            "process {pid} exited with status {} without reporting",
            libc::WEXITSTATUS(status)
        )
    }
}

/// Raise the calling thread to SCHED_FIFO [`SUPERVISOR_PRIORITY`] (or, where `RLIMIT_RTPRIO`
/// allows less, to that limit) while it supervises real-time tasks; restores on drop.
struct SupervisorPriority {
    /// The attributes to restore, once raised.
    old: Option<sys::SchedAttr>,
    /// The SCHED_FIFO priority it runs at, if raised.
    priority: Option<u8>,
}

impl SupervisorPriority {
    fn raise(needed: bool) -> SupervisorPriority {
        let mut raised = SupervisorPriority {
            old: None,
            priority: None,
        };
        if !needed {
            return raised;
        }
        let Ok(old) = sys::sched_getattr(0) else {
            return raised;
        };
        let limit = rustix::process::getrlimit(rustix::process::Resource::Rtprio)
            .current
            .unwrap_or(u64::MAX);
        let mut tries = vec![SUPERVISOR_PRIORITY];
        if limit > 0 && limit < u64::from(SUPERVISOR_PRIORITY) {
            tries.push(limit as u8);
        }
        for priority in tries {
            let attr = sys::SchedAttr {
                sched_policy: libc::SCHED_FIFO as u32,
                sched_priority: u32::from(priority),
                ..Default::default()
            };
            if sys::sched_setattr(0, &attr).is_ok() {
                raised.old = Some(old);
                raised.priority = Some(priority);
                break;
            }
        }
        raised
    }
}

impl Drop for SupervisorPriority {
    fn drop(&mut self) {
        if let Some(old) = self.old {
            let _ = sys::sched_setattr(0, &old);
        }
    }
}

/// Whether task `tid` of process `pid` still exists and is not a zombie: a task waits at the end
/// gate until released.
fn task_waits(pid: i32, tid: i32) -> bool {
    crate::procfs::task_state(pid, tid).is_some_and(|s| !matches!(s, b'Z' | b'X'))
        && crate::procfs::pid_alive(pid)
}

/// One task's counters: its report's switches and CPU time, `migrations`, and the wakeups the
/// trace counted for its thread id.
fn task_counters(
    r: &TaskReport,
    migrations: Option<u64>,
    traced: &Result<(TraceCounts, String), String>,
) -> Counters {
    let mut c = Counters {
        voluntary_switches: Some(r.voluntary),
        involuntary_switches: Some(r.involuntary),
        migrations,
        cpu_time_s: r.cpu_ns as f64 / 1e9,
        ..Counters::default()
    };
    if let Ok((tc, _)) = traced {
        let t = tc.per_tid.get(&r.tid).copied().unwrap_or_default();
        c.wakeups = Some(t.wakeups);
        c.wakeup_preemptions = Some(t.wakeup_preemptions);
        if tc.waker_cpus {
            c.preemptions_at_return = Some(t.preemptions_on_waker_cpu);
            c.preemptions_at_once = Some(t.wakeup_preemptions - t.preemptions_on_waker_cpu);
        }
        if tc.lazy_known {
            c.preemptions_lazy = Some(t.preemptions_lazy);
        }
    }
    c
}

fn task_name(plan: &Plan, tasks: &[TaskRef], id: usize) -> String {
    tasks.get(id).map_or_else(
        || format!("#{id}"),
        |t| format!("{} {}", plan.groups[t.group].name, t.index),
    )
}

fn supervise(
    plan: &Plan,
    tasks: &[TaskRef],
    gate: &Gate,
    hosts: &mut Hosts,
    spawner: Option<&Spawner>,
    setup: RepetitionSetup<'_>,
    realtime: bool,
) -> Result<RepetitionResult, RunError> {
    let prio = SupervisorPriority::raise(realtime);
    let n = tasks.len();
    // Phase 1: every task applies its knobs and reports ready.
    let ready_deadline =
        Instant::now() + Duration::from_secs(30) + Duration::from_millis(10 * n as u64);
    let mut ready = 0;
    let mut knob_error: Option<RunError> = None;
    let mut pending = Vec::new();
    while ready < n {
        if setup.stop.load(Ordering::Relaxed) {
            gate.release(0);
            return Err(RunError::Interrupted);
        }
        if Instant::now() > ready_deadline {
            gate.release(0);
            return Err(RunError::Setup(format!(
                "only {ready} of {n} tasks became ready within the start-up budget"
            )));
        }
        if !sys::wait_readable(gate.ready.0, 50) {
            if let Err(e) = hosts
                .poll_reports(Duration::ZERO, &mut pending)
                .and_then(|()| keeper_alive(spawner))
            {
                gate.release(0);
                return Err(e);
            }
            continue;
        }
        let mut head = [0u8; 8];
        sys::read_exact(gate.ready.0, &mut head)
            .map_err(|e| RunError::Setup(format!("ready pipe: {e}")))?;
        let id = u32::from_le_bytes(head[..4].try_into().unwrap()) as usize;
        let len_flags = u32::from_le_bytes(head[4..].try_into().unwrap());
        let len = (len_flags & !NOT_CREATED) as usize;
        if len > 0 {
            let mut msg = vec![0u8; len];
            sys::read_exact(gate.ready.0, &mut msg)
                .map_err(|e| RunError::Setup(format!("ready pipe: {e}")))?;
            if len_flags & NOT_CREATED != 0 {
                gate.release(0);
                return Err(RunError::Setup(String::from_utf8_lossy(&msg).into()));
            }
            if knob_error.is_none() {
                let group = tasks.get(id).map_or("?", |t| plan.groups[t.group].name);
                knob_error = Some(RunError::Knob {
                    group: group.into(),
                    message: String::from_utf8_lossy(&msg).into(),
                });
            }
        }
        ready += 1;
    }
    if let Some(e) = knob_error {
        gate.release(0);
        return Err(e);
    }
    if realtime && prio.priority != Some(SUPERVISOR_PRIORITY) {
        // The tasks could take their priorities but the supervisor not its own (a limited
        // RLIMIT_RTPRIO): hold them below the one it has.
        for (g, k) in plan.groups.iter().zip(setup.knobs) {
            if let Err(e) = check_outranked(k, prio.priority) {
                gate.release(0);
                return Err(RunError::Knob {
                    group: g.name.into(),
                    message: e.to_string(),
                });
            }
        }
    }
    // Phase 2: release everybody at one epoch and supervise the bodies.
    let mut trace = setup.trace;
    let trace_error = match trace.as_mut().map(|t| t.start()) {
        Some(Err(e)) => Some(e),
        _ => None,
    };
    let mut rq_trace = setup.rq_trace;
    if let Some(t) = rq_trace.as_mut() {
        if let Err(e) = t.start() {
            gate.release(0);
            return Err(RunError::Setup(format!("--timeline: {e}")));
        }
    }
    let epoch = sys::monotonic_ns();
    gate.release(epoch);
    let started = Instant::now();
    let mut reports = pending;
    while reports.len() < n {
        if setup.stop.load(Ordering::Relaxed) {
            return Err(RunError::Interrupted);
        }
        if started.elapsed() > setup.budget {
            setup.stop.store(true, Ordering::Relaxed);
            hosts.stop_all();
            return Err(RunError::Timeout(setup.budget));
        }
        // Processes report through pipes that poll() watches, and Ctrl-C interrupts poll(), so
        // the supervisor can sleep long: a supervisor waking every few milliseconds (at FIFO 99
        // when the run has real-time groups) preempts whatever task runs on its CPU — for
        // interbench, the very task being measured. Threads report through a channel that a
        // signal does not interrupt, so there the supervisor looks every 20 ms.
        let wait = match hosts {
            Hosts::Processes { .. } => setup
                .budget
                .saturating_sub(started.elapsed())
                .clamp(Duration::from_millis(1), Duration::from_secs(1)),
            Hosts::Threads { .. } => Duration::from_millis(20),
        };
        hosts.poll_reports(wait, &mut reports)?;
        keeper_alive(spawner)?;
        if let Some(bad) = reports.iter().find(|r| r.error.is_some()).cloned() {
            // A task that saw the stop request and ended early ends an interrupted run, not a
            // failed one.
            if setup.stop.load(Ordering::Relaxed) {
                return Err(RunError::Interrupted);
            }
            // A task that lost its peer usually means the peer's process died: give the death a
            // moment to be noticed, and name it rather than its consequence.
            let mut more = Vec::new();
            let grace = Instant::now() + Duration::from_millis(200);
            while Instant::now() < grace {
                hosts.poll_reports(Duration::from_millis(20), &mut more)?;
            }
            return Err(RunError::Task {
                task: task_name(plan, tasks, bad.id),
                message: bad.error.clone().unwrap_or_default(),
            });
        }
    }
    if let Some(t) = trace.as_mut() {
        let _ = t.stop();
    }
    if let Some(t) = rq_trace.as_mut() {
        let _ = t.stop();
    }
    reports.sort_by_key(|r| r.id);
    // Every task the starting ones spawned has ended (a task reaps its children before it
    // reports) and left its report.
    let spawned = match spawner {
        Some(s) => s
            .take_reports()
            .map_err(|e| RunError::Setup(format!("the spawned tasks' reports: {e}")))?,
        None => Vec::new(),
    };
    // Counters per group.
    let tids: HashSet<i32> = (reports.iter().chain(&spawned)).map(|r| r.tid).collect();
    let traced = match (trace, trace_error) {
        (Some(t), None) => match t.collect(&tids) {
            Ok(c) => Ok((c, t.source())),
            Err(e) => Err(e.to_string()),
        },
        (Some(_), Some(e)) => Err(e.to_string()),
        (None, _) => Err("not requested".to_string()),
    };
    let mut counters: BTreeMap<String, Counters> = BTreeMap::new();
    let mut total = Counters::default();
    let mut observed = vec![BTreeMap::new(); plan.groups.len()];
    let mut outcome = Outcome {
        wall: Duration::ZERO,
        tasks: Vec::with_capacity(n),
    };
    // The tasks are parked at the end gate: their /proc entries can be read without disturbing
    // the run.
    let mut all_proc = true;
    for r in &reports {
        let task = tasks[r.id];
        let migrations = task_snapshot(r.pid, r.tid).and_then(|s| s.migrations);
        if !task_waits(r.pid, r.tid) {
            // Killed at the end gate: its counters are gone, and so is the certainty that its
            // process did nothing else; the repetition fails rather than miss them silently.
            return Err(RunError::Lost {
                what: task_name(plan, tasks, r.id),
                how: format!(
                    "task {} of process {} was gone when its counters were to be read",
                    r.tid, r.pid
                ),
            });
        }
        all_proc &= migrations.is_some();
        let c = task_counters(r, migrations, &traced);
        counters
            .entry(plan.groups[task.group].name.to_string())
            .or_default()
            .add(&c);
        total.add(&c);
        if task.index == 0 {
            observed[task.group] = observed_settings_of(r.pid, r.tid);
        }
        outcome.tasks.push(TaskOutcome {
            samples: r.samples.clone().into(),
            cpu_time: Duration::from_nanos(r.cpu_ns),
            finished_at: Duration::from_nanos(r.finished_ns),
        });
        outcome.wall = outcome.wall.max(Duration::from_nanos(r.finished_ns));
    }
    // The spawned tasks: their own counters, in their groups; their samples at their places
    // (TaskRef::id), as the simulator gives them.
    let mut spawned_group = HashMap::new();
    if !spawned.is_empty() {
        let places = plan.total_tasks() + plan.total_spawn();
        outcome.tasks.resize_with(places, TaskOutcome::default);
    }
    for r in &spawned {
        let Some(g) = spawner.and_then(|s| s.group_of(r.id)) else {
            return Err(RunError::Setup(format!(
                "a spawned task reported as task {}, which is no spawn place of the plan",
                r.id
            )));
        };
        all_proc &= r.migrations.is_some();
        let c = task_counters(r, r.migrations, &traced);
        let group = plan.groups[g].name;
        counters.entry(group.to_string()).or_default().add(&c);
        total.add(&c);
        spawned_group.insert(r.tid, g);
        outcome.tasks[r.id] = TaskOutcome {
            samples: r.samples.clone().into(),
            cpu_time: Duration::from_nanos(r.cpu_ns),
            finished_at: Duration::from_nanos(r.finished_ns),
        };
        outcome.wall = outcome.wall.max(Duration::from_nanos(r.finished_ns));
    }
    counters.insert("total".into(), total);
    let timeline = match rq_trace {
        None => None,
        Some(t) => {
            let workload: HashMap<i32, WorkloadTid> = (reports.iter().chain(&spawned))
                .map(|r| {
                    let g = (tasks.get(r.id).map(|t| t.group))
                        .or_else(|| spawned_group.get(&r.tid).copied())
                        .unwrap_or_default();
                    let allowed = (setup.knobs.get(g).and_then(|k| k.cpus.as_ref()))
                        .map(|set| set.iter().map(|&c| c as u32).collect());
                    let group = plan.groups[g].name.to_string();
                    (r.tid, WorkloadTid { group, allowed })
                })
                .collect();
            let tl = t
                .collect(&workload, crate::host::online_cpus())
                .map_err(|e| RunError::Setup(format!("--timeline: {e}")))?;
            Some(tl)
        }
    };
    let (wakeups_source, lost) = match &traced {
        Ok((tc, src)) => (src.clone(), tc.lost),
        Err(e) => (format!("unavailable: {e}"), 0),
    };
    Ok(RepetitionResult {
        outcome,
        counters,
        sources: CounterSources {
            switches: "getrusage(RUSAGE_THREAD) around the body".into(),
            migrations: if all_proc && !spawned.is_empty() {
                "/proc/<pid>/task/<tid>/sched after the run (since the task started); a spawned task's own /proc/thread-self/sched at its end".into()
            } else if all_proc {
                "/proc/<pid>/task/<tid>/sched after the run (since the task started)".into()
            } else {
                "unavailable".into()
            },
            wakeups: wakeups_source,
        },
        lost_events: lost,
        observed,
        locks: Vec::new(),
        timeline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::plan::GroupPlan;
    use schedlab_workload::record::MetricDef;
    use schedlab_workload::{Context, Transport, WorkloadError};

    /// The writers of a TCP channel go without a lock only when the workload's volume fits
    /// the send buffers; pipes and UNIX sockets never take one.
    #[test]
    fn tcp_writers_take_turns_only_when_a_write_could_wait() {
        use schedlab_workload::ChannelVolume;
        let plan = |transport| Plan {
            groups: vec![GroupPlan {
                name: "g",
                tasks: 1,
                spawn: 0,
            }],
            channels: 2,
            duplex: true,
            locks: 0,
            sync: schedlab_workload::SyncPlan::default(),
            mode: TaskMode::Threads,
            transport,
        };
        let scratch = TempDir::new().unwrap();
        let tcp = plan(Transport::Tcp);
        let channels = Channels::create(tcp.transport, tcp.channels, tcp.duplex, &scratch).unwrap();
        let buffer = sys::send_buffer(channels.write_fd(0)).unwrap() as u64;
        assert!(buffer > 0);
        let small = ChannelVolume {
            messages: 10,
            bytes: 1000,
        };
        assert!(tcp_write_locks(&tcp, &channels, Some(small)).is_none());
        // A volume whose sk_buffs alone would fill the buffer, and an unknown one, keep the locks.
        let big = ChannelVolume {
            messages: buffer / TCP_SKB_OVERHEAD + 1,
            bytes: 0,
        };
        assert_eq!(
            tcp_write_locks(&tcp, &channels, Some(big)).map(|l| l.len()),
            Some(2)
        );
        assert!(tcp_write_locks(&tcp, &channels, None).is_some());
        let unix = plan(Transport::Unix);
        let channels =
            Channels::create(unix.transport, unix.channels, unix.duplex, &scratch).unwrap();
        assert!(tcp_write_locks(&unix, &channels, None).is_none());
    }

    /// A workload of named groups whose tasks burn CPU (ignoring stop requests, as a runaway
    /// task would), then sleep.
    struct Probe {
        mode: TaskMode,
        /// (name, tasks, CPU time to burn, time to sleep) per group.
        groups: Vec<(&'static str, usize, Duration, Duration)>,
    }

    impl Workload for Probe {
        fn name(&self) -> &'static str {
            "probe"
        }
        fn params(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
        fn plan(&self) -> Plan {
            Plan {
                groups: self
                    .groups
                    .iter()
                    .map(|&(name, tasks, ..)| GroupPlan {
                        name,
                        tasks,
                        spawn: 0,
                    })
                    .collect(),
                channels: 0,
                duplex: false,
                locks: 0,
                sync: schedlab_workload::SyncPlan::default(),
                mode: self.mode,
                transport: Transport::Pipe,
            }
        }
        async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
            let (_, _, burn, sleep) = self.groups[task.group];
            ctx.compute(burn).await;
            ctx.sleep(sleep).await;
            Ok(())
        }
        fn metric_defs(&self) -> Vec<MetricDef> {
            Vec::new()
        }
        fn metrics(&self, _: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
            Ok(BTreeMap::new())
        }
    }

    fn run(
        probe: Probe,
        knobs: &[Knobs],
        budget: Duration,
    ) -> (Result<RepetitionResult, RunError>, Duration) {
        let started = Instant::now();
        let r = run_repetition(
            &Arc::new(probe),
            RepetitionSetup {
                knobs,
                stop: Arc::new(AtomicBool::new(false)),
                budget,
                trace: None,
                rq_trace: None,
                files: None,
            },
        );
        (r, started.elapsed())
    }

    fn fifo(priority: u8) -> Knobs {
        Knobs {
            policy: Some(SchedPolicy::Fifo(priority)),
            ..Knobs::default()
        }
    }

    fn root() -> bool {
        rustix::process::geteuid().is_root()
    }

    #[test]
    fn priorities_the_supervisor_cannot_outrank_are_refused() {
        assert_eq!(check_outranked(&fifo(98), Some(99)), Ok(()));
        assert_eq!(check_outranked(&Knobs::default(), None), Ok(()));
        let e = check_outranked(&fifo(99), Some(99)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "policy=fifo:99: real-time priority 99 is not accepted: the supervisor, which ends a repetition that runs past its time budget, waits at SCHED_FIFO 99 and can only preempt tasks below it; use a real-time priority of 1..98"
        );
        let rr = Knobs {
            policy: Some(SchedPolicy::Rr(50)),
            ..Knobs::default()
        };
        let e = check_outranked(&rr, Some(50)).unwrap_err().to_string();
        assert!(e.contains("use a real-time priority of 1..49"), "{e}");
        let e = check_outranked(&rr, None).unwrap_err().to_string();
        assert!(e.contains("could not raise itself"), "{e}");
    }

    /// A FIFO 99 group could not be preempted by the supervisor: refused before anything is
    /// created (it used to run until the group ended by itself, past any budget).
    #[test]
    fn a_fifo_99_group_is_refused_before_it_starts() {
        let probe = Probe {
            mode: TaskMode::Processes,
            groups: vec![("burn", 1, Duration::from_millis(600), Duration::ZERO)],
        };
        let (r, took) = run(probe, &[fifo(99)], Duration::from_millis(200));
        match r {
            Err(RunError::Knob { group, message }) => {
                assert_eq!(group, "burn");
                assert!(
                    message.contains("use a real-time priority of 1..98"),
                    "{message}"
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(took < Duration::from_millis(100), "took {took:?}");
    }

    /// Real-time burners on every CPU at the highest priority accepted: the supervisor still
    /// ends the repetition at its budget (plus a small margin), not when they end.
    #[test]
    fn the_supervisor_ends_fifo_98_burners_at_the_budget() {
        if !root() {
            eprintln!("skipped: real-time priorities need root (CAP_SYS_NICE)");
            return;
        }
        let cpus = crate::host::online_cpus();
        let probe = Probe {
            mode: TaskMode::Processes,
            groups: vec![("burn", cpus, Duration::from_millis(1500), Duration::ZERO)],
        };
        let budget = Duration::from_millis(300);
        let (r, took) = run(probe, &[fifo(98)], budget);
        assert_eq!(r.unwrap_err(), RunError::Timeout(budget));
        assert!(
            took < budget + Duration::from_millis(400),
            "ended after {took:?} for a budget of {budget:?}"
        );
    }

    /// Any budget fires, also one far beyond a repetition's length (it is compared, never
    /// added to an instant).
    #[test]
    fn budgets_fire_and_huge_ones_do_not_overflow() {
        for mode in [TaskMode::Threads, TaskMode::Processes] {
            let probe = Probe {
                mode,
                groups: vec![("slow", 1, Duration::ZERO, Duration::from_secs(5))],
            };
            let budget = Duration::from_millis(200);
            let (r, took) = run(probe, &[Knobs::default()], budget);
            assert_eq!(r.unwrap_err(), RunError::Timeout(budget), "{mode:?}");
            assert!(
                took < budget + Duration::from_millis(300),
                "{mode:?}: {took:?}"
            );
            let probe = Probe {
                mode,
                groups: vec![("quick", 2, Duration::ZERO, Duration::from_millis(1))],
            };
            let (r, _) = run(probe, &[Knobs::default()], Duration::MAX);
            assert_eq!(r.unwrap().outcome.tasks.len(), 2, "{mode:?}");
        }
    }

    /// The pids of our children whose name (comm) is `comm`.
    fn children_named(comm: &str) -> Vec<i32> {
        let me = std::process::id().to_string();
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let ppid = stat[close + 2..].split(' ').nth(1);
            if &stat[open + 1..close] == comm && ppid == Some(me.as_str()) {
                out.push(stat[..open].trim().parse().unwrap());
            }
        }
        out
    }

    /// A worker killed while it waits at the end gate (its report sent, its counters not yet
    /// read) fails the repetition; it used to pass with its counters missing.
    #[test]
    fn a_worker_lost_at_the_end_gate_fails_the_repetition() {
        // The victim's process name: its task's (one task per process), or its host's (a
        // group of two tasks as threads).
        for (mode, group, tasks, comm) in [
            (TaskMode::Processes, "lostA", 1, "sl-lostA0"),
            (TaskMode::GroupProcesses, "lostB", 2, "schedlab-lostB"),
        ] {
            let probe = Probe {
                mode,
                groups: vec![
                    (group, tasks, Duration::ZERO, Duration::ZERO),
                    ("slow", 1, Duration::ZERO, Duration::from_millis(800)),
                ],
            };
            let comm = comm.to_string();
            let killer = std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(5);
                while Instant::now() < deadline {
                    if let [pid] = children_named(&comm)[..] {
                        // Its one task finishes at once: give it time to reach the end gate.
                        std::thread::sleep(Duration::from_millis(300));
                        // SAFETY: killing a child of this test.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                        return true;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                false
            });
            let (r, _) = run(
                probe,
                &[Knobs::default(), Knobs::default()],
                Duration::from_secs(10),
            );
            assert!(killer.join().unwrap(), "{mode:?}: no worker found to kill");
            match r {
                Err(e @ RunError::Lost { .. }) => {
                    let e = e.to_string();
                    assert!(
                        e.starts_with(&format!("{group} ")) && e.contains("died after its report"),
                        "{mode:?}: {e}"
                    );
                }
                other => panic!("{mode:?}: a lost worker went unnoticed: {other:?}"),
            }
        }
    }
}

/// Task creation under a limit on tasks: the library's side, run in a child process of the test
/// binary as another user under a lowered `RLIMIT_NPROC` (the kernel does not enforce it for
/// root), as `setpriv --reuid … --regid … --clear-groups` with `prlimit --nproc` would.
#[cfg(test)]
mod eagain_tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// What the child is asked to do.
    const CHILD: &str = "SCHEDLAB_TEST_EAGAIN_MODE";
    /// An unprivileged uid and gid that no other process is likely to use (RLIMIT_NPROC counts
    /// every task of the user).
    const UID: u32 = 54_321;
    /// The limit: far fewer tasks than the repetition asks for.
    const NPROC: u64 = 24;

    struct Many(TaskMode);

    impl Workload for Many {
        fn name(&self) -> &'static str {
            "many"
        }
        fn params(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
        fn plan(&self) -> Plan {
            Plan {
                groups: vec![schedlab_workload::plan::GroupPlan {
                    name: "crowd",
                    tasks: 200,
                    spawn: 0,
                }],
                channels: 0,
                duplex: false,
                locks: 0,
                sync: schedlab_workload::SyncPlan::default(),
                mode: self.0,
                transport: schedlab_workload::Transport::Pipe,
            }
        }
        async fn body<C: schedlab_workload::Context>(
            &self,
            _: TaskRef,
            _: &C,
        ) -> Result<(), schedlab_workload::WorkloadError> {
            Ok(())
        }
        fn metric_defs(&self) -> Vec<schedlab_workload::record::MetricDef> {
            Vec::new()
        }
        fn metrics(
            &self,
            _: &Outcome,
        ) -> Result<BTreeMap<String, f64>, schedlab_workload::WorkloadError> {
            Ok(BTreeMap::new())
        }
    }

    /// The child's side (does nothing unless started by the test below): a repetition of 200
    /// tasks under a limit of 24 must fail at once, naming EAGAIN and the limit.
    #[test]
    fn eagain_child_side() {
        let mode = match std::env::var(CHILD).as_deref() {
            Ok("threads") => TaskMode::Threads,
            Ok("processes") => TaskMode::Processes,
            Ok("group-processes") => TaskMode::GroupProcesses,
            _ => return,
        };
        let started = Instant::now();
        let r = run_repetition(
            &Arc::new(Many(mode)),
            RepetitionSetup {
                knobs: &[Knobs::default()],
                stop: Arc::new(AtomicBool::new(false)),
                budget: Duration::from_secs(60),
                trace: None,
                rq_trace: None,
                files: None,
            },
        );
        let took = started.elapsed();
        let Err(RunError::Setup(message)) = r else {
            panic!("{mode:?}: expected a setup error, got {r:?}");
        };
        assert!(message.contains("cannot "), "{mode:?}: {message}");
        assert!(message.contains("EAGAIN"), "{mode:?}: {message}");
        assert!(
            message.contains(&format!(
                "RLIMIT_NPROC (`ulimit -u`) of uid {UID} allows {NPROC} tasks"
            )),
            "{mode:?}: {message}"
        );
        assert!(took < Duration::from_secs(3), "{mode:?}: took {took:?}");
        println!("EAGAIN-OK {mode:?} after {took:?}: {message}");
    }

    #[test]
    fn tasks_that_cannot_be_created_are_reported_at_once() {
        if !rustix::process::geteuid().is_root() {
            eprintln!(
                "skipped: needs root to run the child as another user under a lowered RLIMIT_NPROC"
            );
            return;
        }
        let exe = std::env::current_exe().unwrap();
        for mode in ["threads", "processes", "group-processes"] {
            // The previous child's tasks count until they are gone.
            let quiet = Instant::now() + Duration::from_secs(5);
            while crate::procfs::tasks_of_uid(UID) > 0 && Instant::now() < quiet {
                std::thread::sleep(Duration::from_millis(10));
            }
            let started = Instant::now();
            let mut cmd = std::process::Command::new(&exe);
            cmd.args([
                "--exact",
                "runner::eagain_tests::eagain_child_side",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, mode)
            .env("TMPDIR", "/tmp");
            // SAFETY: only async-signal-safe system calls between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    let lim = libc::rlimit {
                        rlim_cur: NPROC,
                        rlim_max: NPROC,
                    };
                    if libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setresgid(UID, UID, UID) != 0
                        || libc::setrlimit(libc::RLIMIT_NPROC, &lim) != 0
                        || libc::setresuid(UID, UID, UID) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            let out = cmd.output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            eprintln!(
                "{mode}: {}",
                stdout.lines().find(|l| l.contains("EAGAIN")).unwrap_or("")
            );
            assert!(
                out.status.success() && stdout.contains("EAGAIN-OK"),
                "{mode}: the child failed ({:?}):\n{stdout}\n{stderr}",
                out.status
            );
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{mode}: took {:?}",
                started.elapsed()
            );
        }
    }
}

#[cfg(test)]
mod hosting_tests {
    use super::check_hosting;
    use schedlab_workload::plan::GroupPlan;
    use schedlab_workload::{Plan, SyncPlan, TaskMode, Transport};

    fn plan(mode: TaskMode, locks: usize, sync: SyncPlan) -> Plan {
        Plan {
            groups: vec![GroupPlan {
                name: "a",
                tasks: 2,
                spawn: 0,
            }],
            channels: 0,
            duplex: false,
            locks,
            sync,
            mode,
            transport: Transport::Pipe,
        }
    }

    #[test]
    fn shared_objects_need_threads_and_the_message_says_which_and_what_is_accepted() {
        let all = SyncPlan {
            barriers: vec![2],
            semaphores: vec![0],
            conds: 1,
            queues: 0,
            ..SyncPlan::default()
        };
        for mode in [
            TaskMode::Threads,
            TaskMode::Processes,
            TaskMode::GroupProcesses,
        ] {
            assert_eq!(check_hosting(&plan(mode, 0, SyncPlan::default())), Ok(()));
        }
        assert_eq!(
            check_hosting(&plan(TaskMode::Threads, 2, all.clone())),
            Ok(())
        );
        // Locks as group processes were accepted before and still are.
        assert_eq!(
            check_hosting(&plan(TaskMode::GroupProcesses, 2, SyncPlan::default())),
            Ok(())
        );
        assert_eq!(
            check_hosting(&plan(TaskMode::Processes, 2, all.clone())).unwrap_err(),
            "locks, barriers, semaphores and condition variables need tasks run as threads: tasks=processes is not accepted with them; use tasks=threads"
        );
        let sems = SyncPlan {
            semaphores: vec![1],
            ..SyncPlan::default()
        };
        assert_eq!(
            check_hosting(&plan(TaskMode::GroupProcesses, 0, sems)).unwrap_err(),
            "semaphores need tasks run as threads: tasks=group-processes is not accepted with them; use tasks=threads"
        );
    }
}
