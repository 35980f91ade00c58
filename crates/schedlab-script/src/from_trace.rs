//! Turning a recorded program's scheduler events into a workload file (`schedlab record`).
//!
//! The model follows `perf sched replay` (tools/perf/builtin-sched.c: per task, a list of run,
//! sleep and wakeup atoms replayed by threads that post each other's semaphores), with what it
//! lacks added: timed sleeps, spawns, yields, and the file format both backends run.
//!
//! Each recorded task becomes a group of one task (or, where several tasks' steps are identical,
//! one group with a count). Its history is replayed event by event:
//!
//! - the CPU time between two actions (switch-in to switch-out, preemptions summed) is a
//!   `compute` of that length. Where the recording carries the kernel's own runtime of each
//!   task at its switch-outs (`se.sum_exec_runtime`, the BPF recorder's
//!   [`EventKind::Switch::prev_runtime_ns`]; what getrusage and `/proc/PID/schedstat` report),
//!   each run's CPU time is the difference of two readings instead: the kernel charges a task
//!   from the moment it is picked, before its switch-in is traced, and the switch times miss
//!   that. The run is still split between the actions inside it by their times, and what the
//!   kernel charged beyond the switch times goes to the run's last piece (a shortfall comes off
//!   the task's next computes), so each task's total is the kernel's. The tracefs recorder's
//!   switches carry no runtime (the tracepoint's text has none): its CPU times stay the switch
//!   times. The file's computes are **cumulative** (`computes = "cumulative"`,
//!   [`crate::model::Computes`]): a recorded compute holds the program's own calls (a write up
//!   to the wakeup it makes, a sleeping call's entry and return), which the replay's posts,
//!   waits, sleeps, sends and receives pay again in their own way — and not at the same
//!   places: the replay parks in a third to a half of the waits where the program slept. So
//!   nothing is taken off at conversion; the replay runs each compute until the task's CPU
//!   time reaches the sum of its computes so far, and what its other steps cost, parked or
//!   not, comes off the next one. A message's call keeps its CPU time in the compute after it;
//! - a `sched_waking` of a sleeping task by another recorded task is a **dependency**: the waker
//!   posts the sleeper's semaphore `wake_<tid>` at that point of its own steps, and the sleeper's
//!   sleep becomes a `wait` on it (a child's exit waking its parent in wait4 is one too);
//! - a sleep ended by no recorded task — a timer (nanosleep, clock_nanosleep, or a poll-family
//!   call's timeout), a device or the network, or an unknown cause — is a `sleep` of the
//!   measured length; the file's comment on the step says which (the *timed wait* of a device or
//!   network wakeup replays as a sleep of its measured length);
//! - a switch-out while runnable inside sched_yield is a `yield`; any other is a preemption,
//!   which the replay's scheduler decides for itself;
//! - a fork is a `spawn` of the child's group (marked `spawned = true`: its task is parked until
//!   the parent's spawn step starts it, as rt-app's fork is read).
//!
//! Long histories are summarised: a run of steps whose shapes (verb and object, not durations)
//! repeat at least [`MIN_PASSES`] times with a period of up to [`MAX_PERIOD`] steps becomes a
//! `loop`, each step of its body the mean of its passes. The order of every post, wait and spawn
//! is kept exactly (so the replay cannot deadlock where the program did not, and wakeup counts are
//! unchanged); each task's total CPU time and sleep time are kept to rounding; only how they are
//! spread over the passes changes, and the file states by how much (the mean absolute deviation of
//! the summarised durations, as a share of their total).
//!
//! Work is linear in the number of events (one pass, hash maps by task id) plus
//! `O(steps × MAX_PERIOD)` for the loop search; the output is bounded by [`MAX_FILE_STEPS`].

use schedlab_workload::sched_events::{
    Call, EventKind, IoCall, IoOp, LeftAs, Recording, Transport,
};
use std::collections::HashMap;
use std::fmt::Write as _;
use thiserror::Error;

/// Smallest number of passes that makes a loop.
pub const MIN_PASSES: usize = 3;
/// Longest loop body searched for, in steps.
pub const MAX_PERIOD: usize = 64;
/// A task with more steps than this is summarised into loops; fewer are written step by step.
pub const SUMMARISE_ABOVE: usize = 64;
/// Most steps (loops counted with their bodies) the whole file may hold after summarising.
pub const MAX_FILE_STEPS: usize = 100_000;
/// Most tasks a recording may hold (the workload files' own bound).
pub const MAX_RECORDED_TASKS: usize = schedlab_workload::presets::MAX_TASKS;

/// How to convert.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Write the file even if the kernel dropped events (marked approximate).
    pub allow_lossy: bool,
    /// Make the replay sleep where the program slept. A wakeup of a sleeping task is a post
    /// that found its task already waiting; a replay whose poster runs a little ahead banks the
    /// post instead, and the waiter later goes through without sleeping (the replay of a pipe
    /// ping-pong or hackbench then sleeps in a fraction of the places the program did). With
    /// this, the sleeper also posts `ready_<T>_from_<W>` as it starts that wait and the poster
    /// `W` waits on it before its post: one semaphore per pair, so each is posted by one task
    /// and waited on by one, in the recorded order — which the recorded run itself satisfies,
    /// so the replay cannot deadlock. The price: a poster that arrives first sleeps where the
    /// program's did not.
    pub keep_sleeps: bool,
}

/// Why a recording cannot become a workload file.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ConvertError {
    /// No event of a recorded task.
    #[error("the trace is empty: no scheduler event of the recorded tasks ({roots}) between start and stop; was the program running, and is it the process you meant?")]
    Empty {
        /// The roots, as text.
        roots: String,
    },
    /// Events were lost and the caller did not accept it.
    #[error("the kernel dropped {lost} events while recording, so some sleeps and wakeups are missing; record again with a larger --buffer-mb, or pass --allow-lossy to write an approximate file")]
    Lossy {
        /// How many.
        lost: u64,
    },
    /// More tasks than a workload file holds.
    #[error("the recording has {tasks} tasks; a workload file holds at most {max}")]
    TooManyTasks {
        /// How many were recorded.
        tasks: usize,
        /// The bound.
        max: usize,
    },
    /// A pipe or socket call of a task the recording has no other trace of: the recorder only
    /// records the calls of tasks it traces, so the trace is inconsistent (a fork was lost).
    #[error("the trace has a pipe or socket call of task {pid} at {ts_ns} ns, a task it never saw start (neither a recorded root nor a recorded fork's child); the recording is inconsistent: record again, or pass --allow-lossy to ignore such calls")]
    UnknownTask {
        /// The calling task.
        pid: i32,
        /// When, CLOCK_MONOTONIC ns.
        ts_ns: u64,
    },
    /// Even summarised, the file would be too long.
    #[error("the recording does not summarise into {max} steps (and a 4 MiB file) ({steps} after folding its repeats into loops); record a shorter stretch (--duration) or a smaller run")]
    TooLong {
        /// Steps after summarising.
        steps: usize,
        /// The bound.
        max: usize,
    },
}

/// What the conversion found, for the command to print.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Events read.
    pub events: usize,
    /// Tasks recorded.
    pub tasks: usize,
    /// Groups written (tasks with identical steps share one).
    pub groups: usize,
    /// Wakeups by another recorded task (post/wait pairs).
    pub dependencies: usize,
    /// Sleeps ended by a timer.
    pub timer_sleeps: usize,
    /// Sleeps ended by a device, the network, or an unknown cause.
    pub other_sleeps: usize,
    /// Yields.
    pub yields: usize,
    /// Spawns.
    pub spawns: usize,
    /// Migrations seen (not replayed: placement is the replaying scheduler's).
    pub migrations: usize,
    /// Switches of a recorded task off its CPU to sleep (voluntary context switches).
    pub voluntary_switches: usize,
    /// Switches of a recorded task off its CPU while runnable (preemptions and yields).
    pub involuntary_switches: usize,
    /// Wakeups (`sched_waking`) of a recorded task, by anyone: of a sleeping task, and of one
    /// still on its CPU on its way to sleep (which the kernel counts as a wakeup too).
    pub wakeups: usize,
    /// Of [`Summary::dependencies`], wakeups by a recorded task of a task that had not left its
    /// CPU yet: a `wait` that may find its post already made.
    pub wakeups_before_sleep: usize,
    /// Of [`Summary::dependencies`], those whose poster waits for the sleeper to be waiting
    /// ([`Options::keep_sleeps`]).
    pub rendezvous: usize,
    /// Loops made by summarising.
    pub loops: usize,
    /// Steps before summarising.
    pub raw_steps: usize,
    /// Steps written (loops with their bodies).
    pub written_steps: usize,
    /// Mean absolute deviation of summarised durations from the recorded ones, as a share of
    /// their total (0 when nothing was summarised).
    pub loop_error: f64,
    /// Total CPU time of the recorded tasks, ns (their computes and the time inside their
    /// channels' calls).
    pub cpu_ns: u64,
    /// Events the kernel dropped (the file is approximate when this is not 0).
    pub lost: u64,
    /// Pipes and sockets replayed as channels.
    pub channels: usize,
    /// Messages written on them and read (`send`/`recv` pairs).
    pub messages: usize,
    /// Messages written and never read while recorded: left out (a channel is read as often as
    /// it is written).
    pub unread_messages: usize,
    /// Wakeups of a task inside a read or write of a channel: carried by the channel itself,
    /// not by a semaphore.
    pub channel_wakeups: usize,
    /// CPU time spent inside the channels' calls, ns: in the `compute` after each (the
    /// replay's own calls come off it, the computes being cumulative).
    pub io_system_ns: u64,
    /// Switch-outs of recorded tasks that carried the kernel's runtime of the task: their runs'
    /// CPU time is the kernel's (none through tracefs).
    pub kernel_charged_runs: usize,
    /// Pipes and sockets read or written but not replayed as channels (read by several tasks,
    /// never read or never written by a recorded task, or messages of several sizes): their
    /// calls are CPU time and their wakeups dependencies, as for any other call.
    pub other_objects: usize,
}

impl Summary {
    /// What the file holds, in one line: the file's header and `record`'s message both print
    /// it, so the two say the same thing in the same words.
    pub fn holds(&self) -> String {
        format!(
            "{} tasks in {} groups; {}{} wakeups by a recorded task (post -> wait; {} of them before the task had left its CPU{}), {} timer sleeps, {} sleeps woken from outside, {} yields, {} spawns; {} migrations not replayed (placement is the scheduler's); {:.6} s CPU time",
            self.tasks,
            self.groups,
            self.channel_text(),
            self.dependencies,
            self.wakeups_before_sleep,
            if self.rendezvous > 0 {
                format!(
                    "; {} with the poster waiting until the task waits (--keep-sleeps)",
                    self.rendezvous
                )
            } else {
                String::new()
            },
            self.timer_sleeps,
            self.other_sleeps,
            self.yields,
            self.spawns,
            self.migrations,
            self.cpu_ns as f64 / 1e9
        )
    }

    /// The channels' part of [`Summary::holds`] (empty when the recording has no I/O calls).
    fn channel_text(&self) -> String {
        if self.channels == 0 && self.other_objects == 0 {
            return String::new();
        }
        format!(
            "{} pipes/sockets as channels ({} messages sent and received, {} unread left out; {} wakeups carried by them; {:.6} s CPU inside their calls, in the computes after them), {} other pipes/sockets as plain CPU time; ",
            self.channels,
            self.messages,
            self.unread_messages,
            self.channel_wakeups,
            self.io_system_ns as f64 / 1e9,
            self.other_objects
        )
    }

    /// What summarising did and the error it brings, in one line (`None` when nothing was
    /// summarised).
    pub fn summarised(&self) -> Option<String> {
        (self.loops > 0).then(|| {
            format!(
                "{} steps became {} ({} loops, each step of a loop body the mean of its passes); the order of posts, waits and spawns is exact and each task's CPU and sleep totals are kept; the summarised durations deviate from the recorded ones by {:.1} % of their total (mean absolute deviation)",
                self.raw_steps,
                self.written_steps,
                self.loops,
                self.loop_error * 100.0
            )
        })
    }
}

/// A workload file made from a recording, and what it holds.
#[derive(Clone, Debug)]
pub struct Converted {
    /// The TOML text.
    pub toml: String,
    /// Counts for the command's message.
    pub summary: Summary,
    /// Each recorded task's own figures, in the order the tasks were first seen.
    pub tasks: Vec<TaskFacts>,
    /// Every wakeup latency of a sleeping recorded task (its `sched_waking` to its next
    /// switch-in), ns, in trace order: as many as there were such wakeups, so bounded by the
    /// number of events.
    pub wakeup_latencies_ns: Vec<u64>,
}

/// What one recorded task did, as the kernel's counters would have counted it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskFacts {
    /// Its thread id.
    pub tid: i32,
    /// The group it is written in (several tasks may share one).
    pub group: String,
    /// CPU time, ns (the sum of its `compute` steps before summarising, and the time inside its
    /// channels' calls).
    pub cpu_ns: u64,
    /// Switches off its CPU to sleep.
    pub voluntary_switches: u64,
    /// Switches off its CPU while runnable.
    pub involuntary_switches: u64,
    /// Wakeups of it, by anyone.
    pub wakeups: u64,
    /// Migrations of it.
    pub migrations: u64,
}

/// Why a sleep ended, when no recorded task ended it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum SleepKind {
    /// A timer: nanosleep, clock_nanosleep, or a poll-family call nobody recorded woke.
    Timer,
    /// A device, the network, or another process: a timed wait of the measured length.
    Outside,
}

/// One step of a task's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Compute(u64),
    /// Post the semaphore of this task.
    Post(i32),
    /// Wait on the task's own semaphore.
    Wait,
    Sleep(u64, SleepKind),
    Yield,
    Spawn(i32),
    /// Post `ready_<self>_from_<waker>`: this task has reached a wait `waker` will end.
    Ready(i32),
    /// Wait on `ready_<wakee>_from_<self>`: the wakee has reached the wait this post ends.
    AwaitReady(i32),
    /// Send one message on channel k; the CPU time the recorded call took, ns.
    Send(u32, u64),
    /// A read of this many bytes from channel k, and the CPU time it took, ns, before it is
    /// mapped to messages.
    Read(u32, u64, u64),
    /// Receive one message from channel k; the CPU time of the recorded call it came from, ns
    /// (on the first receive of a read that took several messages).
    Recv(u32, u64),
}

impl Step {
    /// The step without its duration: what must repeat for a loop.
    fn shape(&self) -> (u8, i64) {
        match *self {
            Step::Compute(_) => (0, 0),
            Step::Post(t) => (1, i64::from(t)),
            Step::Wait => (2, 0),
            Step::Sleep(_, SleepKind::Timer) => (3, 0),
            Step::Sleep(_, SleepKind::Outside) => (4, 0),
            Step::Yield => (5, 0),
            Step::Spawn(t) => (6, i64::from(t)),
            Step::Ready(t) => (7, i64::from(t)),
            Step::AwaitReady(t) => (8, i64::from(t)),
            Step::Send(c, _) => (9, i64::from(c)),
            Step::Read(c, ..) => (10, i64::from(c)),
            Step::Recv(c, _) => (11, i64::from(c)),
        }
    }

    fn duration(&self) -> Option<u64> {
        match *self {
            Step::Compute(d) | Step::Sleep(d, _) => Some(d),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum State {
    /// Not seen yet (a root at the start): running or sleeping since the recording began.
    Unknown,
    Running {
        since: u64,
    },
    Runnable,
    Sleeping {
        since: u64,
        call: Option<Call>,
    },
    Woken {
        since: u64,
        at: u64,
        /// The recorded task that woke it, if one did.
        by: Option<i32>,
        /// Where its waker's `AwaitReady` for this wakeup is (the waker's slot, the step's
        /// index), with [`Options::keep_sleeps`].
        ready: Option<(usize, usize)>,
        call: Option<Call>,
    },
    Dead,
}

struct Task {
    tid: i32,
    spawned: bool,
    state: State,
    /// CPU time not yet written as a compute step.
    cpu: u64,
    call: Option<Call>,
    steps: Vec<Step>,
    waited: bool,
    facts: TaskFacts,
    /// The channel call in progress: its channel, whether it is a read, when it began.
    io: Option<(u32, IoOp, u64)>,
    /// When its current run began (its switch-in; the recording's start for a root not seen
    /// yet).
    run_start: u64,
    /// The kernel's runtime of it at its last switch-out, ns (0 for a task whose fork was
    /// recorded: the kernel starts a new task's at 0); `None` before its first reading.
    runtime_at: Option<u64>,
    /// What the kernel charged it beyond the switch times and is not in a step yet, ns:
    /// negative when it charged less (taken off its next computes).
    charge_carry: i64,
}

impl Task {
    fn new(tid: i32, spawned: bool) -> Task {
        Task {
            tid,
            spawned,
            state: if spawned {
                State::Runnable
            } else {
                State::Unknown
            },
            cpu: 0,
            call: None,
            steps: Vec::new(),
            waited: false,
            io: None,
            run_start: 0,
            runtime_at: spawned.then_some(0),
            charge_carry: 0,
            facts: TaskFacts {
                tid,
                ..TaskFacts::default()
            },
        }
    }

    /// Account the CPU time up to `ts` (the task is on a CPU) and write it before an action.
    fn flush(&mut self, ts: u64, start: u64) {
        match self.state {
            State::Running { since } => {
                self.cpu += ts.saturating_sub(since);
                self.state = State::Running { since: ts };
            }
            State::Unknown => {
                self.cpu += ts.saturating_sub(start);
                self.state = State::Running { since: ts };
            }
            _ => {}
        }
        if self.cpu > 0 {
            self.push(Step::Compute(self.cpu));
            self.cpu = 0;
        }
    }

    /// At a switch-out at `ts` that read the kernel's runtime `now` (if the recorder reads it):
    /// what the kernel charged for the run since the last reading, less the switch times of
    /// the run, goes into the CPU time not yet written (or, when negative, comes off it and
    /// then off the task's next computes).
    fn charge(&mut self, ts: u64, now: Option<u64>) {
        if let (Some(now), Some(before)) = (now, self.runtime_at) {
            let charged = now.saturating_sub(before);
            let timed = ts.saturating_sub(self.run_start);
            self.charge_carry = self
                .charge_carry
                .saturating_add(charged as i64 - timed as i64);
            if self.charge_carry >= 0 {
                self.cpu += self.charge_carry as u64;
                self.charge_carry = 0;
            } else {
                let cut = self.cpu.min(self.charge_carry.unsigned_abs());
                self.cpu -= cut;
                self.charge_carry += cut as i64;
            }
        }
        self.runtime_at = now;
    }

    /// At the end: a shortfall still carried comes off the task's last computes, so that its
    /// total is what the kernel charged.
    fn settle_charges(&mut self) {
        let mut owed = self.charge_carry.min(0).unsigned_abs();
        for s in self.steps.iter_mut().rev() {
            if owed == 0 {
                break;
            }
            if let Step::Compute(d) = s {
                let cut = (*d).min(owed);
                *d -= cut;
                owed -= cut;
            }
        }
        self.steps.retain(|s| *s != Step::Compute(0));
        self.charge_carry = 0;
    }

    /// Append a step, merging computes (a preemption splits none).
    fn push(&mut self, s: Step) {
        if let (Some(Step::Compute(a)), Step::Compute(b)) = (self.steps.last_mut(), s) {
            *a += b;
            return;
        }
        self.steps.push(s);
    }
}

/// Convert `rec` into a workload file. `allow_lossy` accepts a recording with lost events and
/// marks the file approximate.
pub fn convert(rec: &Recording, allow_lossy: bool) -> Result<Converted, ConvertError> {
    convert_with(
        rec,
        &Options {
            allow_lossy,
            ..Options::default()
        },
    )
}

/// Convert `rec` into a workload file as `opts` say.
pub fn convert_with(rec: &Recording, opts: &Options) -> Result<Converted, ConvertError> {
    if rec.lost > 0 && !opts.allow_lossy {
        return Err(ConvertError::Lossy { lost: rec.lost });
    }
    let mut tasks: Vec<Task> = Vec::new();
    let mut slot: HashMap<i32, usize> = HashMap::new();
    for &r in &rec.roots {
        if r > 0 && !slot.contains_key(&r) {
            slot.insert(r, tasks.len());
            tasks.push(Task::new(r, false));
        }
    }
    let start = rec.start_ns;
    let mut end = rec.stop_ns;
    let mut summary = Summary {
        lost: rec.lost,
        ..Summary::default()
    };
    let chans = find_channels(rec);
    summary.channels = chans.list.len();
    summary.other_objects = chans.other;
    // Each channel's messages in the order they were written: the writer's slot.
    let mut written: Vec<Vec<usize>> = vec![Vec::new(); chans.list.len()];
    let mut seen = 0usize;
    let mut latencies: Vec<u64> = Vec::new();
    // The lengths of the sleeps a recorded task ended.
    // The rendezvous whose sleeper never ran again (`Options::keep_sleeps`).
    let mut unmatched: std::collections::HashSet<(usize, usize)> = Default::default();
    for ev in &rec.events {
        let ts = ev.ts_ns;
        end = end.max(ts);
        match ev.kind {
            EventKind::Switch {
                prev,
                left,
                next,
                prev_runtime_ns,
            } => {
                if let Some(&i) = slot.get(&prev) {
                    seen += 1;
                    let t = &mut tasks[i];
                    match t.state {
                        State::Running { since } => t.cpu += ts.saturating_sub(since),
                        State::Unknown => {
                            t.cpu += ts.saturating_sub(start);
                            t.run_start = start;
                        }
                        _ => {}
                    }
                    if prev_runtime_ns.is_some() {
                        summary.kernel_charged_runs += 1;
                    }
                    t.charge(ts, prev_runtime_ns);
                    // Leaving a wakeup it never ran after (its switch-in is missing): the
                    // poster's rendezvous has no wait of the task to end it.
                    if let State::Woken { ready: Some(r), .. } = t.state {
                        unmatched.insert(r);
                    }
                    // Set before any flush, which would count the time since `since` again.
                    t.state = State::Runnable;
                    match left {
                        LeftAs::Runnable => {
                            summary.involuntary_switches += 1;
                            t.facts.involuntary_switches += 1;
                        }
                        LeftAs::Sleeping => {
                            summary.voluntary_switches += 1;
                            t.facts.voluntary_switches += 1;
                        }
                        LeftAs::Dead => {}
                    }
                    t.state = match left {
                        LeftAs::Runnable => {
                            if t.call == Some(Call::Yield) {
                                t.flush(ts, start);
                                t.push(Step::Yield);
                                summary.yields += 1;
                            }
                            State::Runnable
                        }
                        LeftAs::Sleeping => State::Sleeping {
                            since: ts,
                            call: t.call,
                        },
                        LeftAs::Dead => State::Dead,
                    };
                    if matches!(t.state, State::Dead) {
                        t.flush(ts, start);
                    }
                }
                if let Some(&i) = slot.get(&next) {
                    seen += 1;
                    let t = &mut tasks[i];
                    t.run_start = ts;
                    if t.io.is_some() {
                        // Back on a CPU inside a channel's call: whatever it slept for, the
                        // replay's own call sleeps for it.
                        if let State::Woken { at, .. } = t.state {
                            latencies.push(ts.saturating_sub(at));
                        }
                        if !matches!(t.state, State::Dead) {
                            t.state = State::Running { since: ts };
                        }
                        continue;
                    }
                    match t.state {
                        State::Woken {
                            since,
                            at,
                            by,
                            call,
                            ready: _,
                        } => {
                            latencies.push(ts.saturating_sub(at));
                            t.flush(ts, start);
                            if let Some(waker) = by {
                                if opts.keep_sleeps {
                                    t.push(Step::Ready(waker));
                                }
                                t.push(Step::Wait);
                                t.waited = true;
                            } else {
                                let kind = sleep_kind(call);
                                match kind {
                                    SleepKind::Timer => summary.timer_sleeps += 1,
                                    SleepKind::Outside => summary.other_sleeps += 1,
                                }
                                t.push(Step::Sleep(at.saturating_sub(since), kind));
                            }
                        }
                        State::Sleeping { since, call } => {
                            // Woken without a recorded sched_waking: its cause is unknown.
                            t.flush(ts, start);
                            let kind = sleep_kind(call);
                            match kind {
                                SleepKind::Timer => summary.timer_sleeps += 1,
                                SleepKind::Outside => summary.other_sleeps += 1,
                            }
                            t.push(Step::Sleep(ts.saturating_sub(since), kind));
                        }
                        _ => {}
                    }
                    if !matches!(t.state, State::Dead) {
                        t.state = State::Running { since: ts };
                    }
                }
            }
            EventKind::Waking { waker, wakee } => {
                let Some(&s) = slot.get(&wakee) else { continue };
                seen += 1;
                // The call the task sleeps in, where it is one the recorder names.
                let call = match tasks[s].state {
                    State::Sleeping { call, .. } => call,
                    _ => tasks[s].call,
                };
                // A wakeup inside a read or write of a channel (its data or its room arrived),
                // or between two tasks a channel joins, of a task in no call that is not a
                // channel's (poll, a timer, wait4, sched_yield): the replay's channel carries
                // it, no semaphore. (A semaphore beside the channel could deadlock the replay:
                // a waiter that no longer reads while its writer blocks on the full channel
                // before its post.)
                if tasks[s].io.is_some()
                    || (chans.carriers.contains(&(waker, wakee))
                        && matches!(call, None | Some(Call::Other(_))))
                {
                    let t = &mut tasks[s];
                    match t.state {
                        State::Sleeping { since, call } => {
                            t.state = State::Woken {
                                since,
                                at: ts,
                                by: None,
                                ready: None,
                                call,
                            }
                        }
                        State::Unknown => {
                            t.state = State::Woken {
                                since: start,
                                at: ts,
                                by: None,
                                ready: None,
                                call: None,
                            }
                        }
                        State::Running { .. } | State::Runnable => {}
                        _ => continue,
                    }
                    summary.wakeups += 1;
                    summary.channel_wakeups += 1;
                    t.facts.wakeups += 1;
                    continue;
                }
                let by = slot.get(&waker).copied().filter(|&w| w != s);
                let (since, call) = match tasks[s].state {
                    State::Sleeping { since, call } => (since, call),
                    // A root not seen yet has slept since the recording began.
                    State::Unknown => (start, None),
                    // A wakeup of a task still on its way to sleep: it had set its state to
                    // sleep (its read found nothing) but had not left its CPU, or was preempted
                    // there. The kernel then only marks it running again (`ttwu_runnable`, a
                    // `sched_wakeup` all the same), so the trace shows no sleep; but the task
                    // needed the waker's action to go on. Dropping it lets the waker run ahead
                    // of the task it fed in the replay, banking posts that later find the task
                    // never sleeping. So it is a dependency without a measured sleep: the
                    // waker posts now, the task waits at this point of its own history, and
                    // the replay sleeps there only if the post has not come yet — as the
                    // program would have, had it been a little faster.
                    State::Running { .. } | State::Runnable => {
                        summary.wakeups += 1;
                        tasks[s].facts.wakeups += 1;
                        if let Some(w) = by {
                            let wt = &mut tasks[w];
                            wt.flush(ts, start);
                            wt.push(Step::Post(wakee));
                            summary.dependencies += 1;
                            summary.wakeups_before_sleep += 1;
                            let t = &mut tasks[s];
                            t.flush(ts, start);
                            t.push(Step::Wait);
                            t.waited = true;
                        }
                        continue;
                    }
                    // Already woken: the kernel emits no second wakeup; nothing to add.
                    _ => continue,
                };
                summary.wakeups += 1;
                tasks[s].facts.wakeups += 1;
                let mut ready = None;
                if let Some(w) = by {
                    let wt = &mut tasks[w];
                    wt.flush(ts, start);
                    if opts.keep_sleeps {
                        // The task slept when this post came: the replay's poster waits
                        // until it is waiting (see `Options::keep_sleeps`).
                        ready = Some((w, wt.steps.len()));
                        wt.push(Step::AwaitReady(wakee));
                        summary.rendezvous += 1;
                    }
                    wt.push(Step::Post(wakee));
                    summary.dependencies += 1;
                }
                tasks[s].state = State::Woken {
                    since,
                    at: ts,
                    by: by.map(|w| tasks[w].tid),
                    call,
                    ready,
                };
            }
            EventKind::Fork { parent, child } => {
                if let Some(&c) = slot.get(&child) {
                    // A root whose fork was recorded (the command, forked by the recorder):
                    // the kernel's runtime of it began at 0 then.
                    if matches!(tasks[c].state, State::Unknown) {
                        tasks[c].runtime_at = Some(0);
                    }
                }
                let Some(&p) = slot.get(&parent) else {
                    continue;
                };
                seen += 1;
                if slot.contains_key(&child) || child <= 0 {
                    continue;
                }
                if tasks.len() >= MAX_RECORDED_TASKS {
                    return Err(ConvertError::TooManyTasks {
                        tasks: tasks.len() + 1,
                        max: MAX_RECORDED_TASKS,
                    });
                }
                tasks[p].flush(ts, start);
                tasks[p].push(Step::Spawn(child));
                summary.spawns += 1;
                slot.insert(child, tasks.len());
                tasks.push(Task::new(child, true));
            }
            EventKind::Exit { pid } => {
                if slot.contains_key(&pid) {
                    seen += 1;
                }
            }
            EventKind::Migrate { pid, .. } => {
                if let Some(&i) = slot.get(&pid) {
                    summary.migrations += 1;
                    tasks[i].facts.migrations += 1;
                }
            }
            EventKind::SysEnter { pid, call } => {
                if let Some(&i) = slot.get(&pid) {
                    tasks[i].call = Some(call);
                }
            }
            EventKind::SysExit { pid } => {
                if let Some(&i) = slot.get(&pid) {
                    tasks[i].call = None;
                }
            }
            EventKind::IoEnter { io } => {
                let Some(&i) = slot.get(&io.pid) else {
                    if opts.allow_lossy {
                        continue;
                    }
                    return Err(ConvertError::UnknownTask {
                        pid: io.pid,
                        ts_ns: ts,
                    });
                };
                let Some(c) = chans.of(&io) else { continue };
                seen += 1;
                let t = &mut tasks[i];
                t.flush(ts, start);
                t.io = Some((c, io.op, ts));
                if io.op == IoOp::Write {
                    written[c as usize].push(i);
                }
            }
            EventKind::IoExit { io } => {
                let Some(&i) = slot.get(&io.pid) else {
                    continue;
                };
                let t = &mut tasks[i];
                let Some((c, op, _)) = t.io.take() else {
                    continue;
                };
                seen += 1;
                if let State::Running { since } = t.state {
                    t.cpu += ts.saturating_sub(since);
                    t.state = State::Running { since: ts };
                }
                // The call's own CPU time goes with it (into the compute after it, once it is
                // a message: `map_messages`).
                let sys = std::mem::take(&mut t.cpu);
                t.push(match op {
                    IoOp::Write => Step::Send(c, sys),
                    IoOp::Read => Step::Read(c, io.bytes.max(0) as u64, sys),
                });
            }
        }
    }
    if seen == 0 {
        return Err(ConvertError::Empty {
            roots: rec
                .roots
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    // Tasks still on a CPU at the end ran until then; the others' last CPU time is written too.
    for t in &mut tasks {
        if matches!(t.state, State::Running { .. }) {
            t.flush(end, start);
        } else if t.cpu > 0 {
            let cpu = std::mem::take(&mut t.cpu);
            t.push(Step::Compute(cpu));
        }
        t.settle_charges();
    }
    // A wakeup whose task had not run again when recording stopped, or whose switch-in is
    // missing, leaves the poster's wait on `ready_T_from_W` without the sleeper's post, which
    // no replay could satisfy: that wait goes (the post itself stays: an extra post blocks
    // nobody). Exactly those, so that every other wait still pairs with the post it paired
    // with in the recording.
    for t in &tasks {
        if let State::Woken { ready: Some(r), .. } = t.state {
            unmatched.insert(r);
        }
    }
    if !unmatched.is_empty() {
        for (w, t) in tasks.iter_mut().enumerate() {
            let mut k = 0;
            t.steps.retain(|_| {
                k += 1;
                !unmatched.contains(&(w, k - 1))
            });
        }
        summary.rendezvous -= unmatched.len();
    }
    map_messages(&mut tasks, &chans, &written, &slot, &mut summary);
    summary.tasks = tasks.len();
    // The recorded CPU time: the steps' (the channels' calls are in the computes after them).
    summary.cpu_ns = tasks.iter().map(|t| cpu_of(&t.steps)).sum();
    summary.raw_steps = tasks.iter().map(|t| t.steps.len()).sum();
    summary.events = rec.events.len();
    for t in &mut tasks {
        t.facts.cpu_ns = cpu_of(&t.steps);
    }
    let (toml, group_of) = render(rec, &tasks, &chans, &mut summary)?;
    let tasks = tasks
        .into_iter()
        .map(|t| TaskFacts {
            group: group_of[&t.tid].clone(),
            ..t.facts
        })
        .collect();
    Ok(Converted {
        toml,
        summary,
        tasks,
        wakeup_latencies_ns: latencies,
    })
}

/// A recorded pipe or socket replayed as a channel.
#[derive(Clone, Copy, Debug)]
struct Chan {
    transport: Transport,
    /// Its one reader.
    reader: i32,
    /// The bytes of every write on it: the channel's message size.
    size: u64,
}

/// The recording's channels: the objects that qualify (see [`find_channels`]), numbered in the
/// order they were first used.
#[derive(Debug, Default)]
struct Channels {
    by_object: HashMap<u64, u32>,
    list: Vec<Chan>,
    /// Objects seen that do not qualify.
    other: usize,
    /// (waker, wakee) pairs a channel can carry a wakeup between: a writer waking its
    /// channel's reader (data came) and the reader waking a writer (room came).
    carriers: std::collections::HashSet<(i32, i32)>,
}

impl Channels {
    /// The channel a call moved bytes on, if it is one of ours (a call that moved none — an
    /// error, an end of file — is not a message).
    fn of(&self, io: &IoCall) -> Option<u32> {
        (io.bytes > 0)
            .then(|| self.by_object.get(&io.object).copied())
            .flatten()
    }
}

/// The pipes and sockets that become channels: read by exactly one recorded task, written by at
/// least one, every write of the same size (a channel carries one message size, and the
/// replay's reader takes whole messages in whatever order its writers' messages come).
fn find_channels(rec: &Recording) -> Channels {
    struct Seen {
        transport: Transport,
        first: usize,
        reader: Option<i32>,
        readers: usize,
        writes: usize,
        size: Option<u64>,
        sizes: usize,
        writers: Vec<i32>,
    }
    let mut seen: HashMap<u64, Seen> = HashMap::new();
    for ev in &rec.events {
        let EventKind::IoEnter { io } = ev.kind else {
            continue;
        };
        if io.bytes <= 0 {
            continue;
        }
        let n = seen.len();
        let o = seen.entry(io.object).or_insert(Seen {
            transport: io.transport,
            first: n,
            reader: None,
            readers: 0,
            writes: 0,
            size: None,
            sizes: 0,
            writers: Vec::new(),
        });
        match io.op {
            IoOp::Read => {
                if o.reader != Some(io.pid) {
                    o.readers += 1;
                    o.reader = Some(io.pid);
                }
            }
            IoOp::Write => {
                o.writes += 1;
                if !o.writers.contains(&io.pid) {
                    o.writers.push(io.pid);
                }
                if o.size != Some(io.bytes as u64) {
                    o.sizes += 1;
                    o.size = Some(io.bytes as u64);
                }
            }
        }
    }
    let mut objects: Vec<(u64, Seen)> = seen.into_iter().collect();
    objects.sort_by_key(|(_, o)| o.first);
    let mut out = Channels::default();
    for (object, o) in objects {
        match (o.reader, o.size) {
            (Some(reader), Some(size)) if o.readers == 1 && o.sizes == 1 && o.writes > 0 => {
                for &w in o.writers.iter().filter(|&&w| w != reader) {
                    out.carriers.insert((w, reader));
                    out.carriers.insert((reader, w));
                }
                out.by_object.insert(object, out.list.len() as u32);
                out.list.push(Chan {
                    transport: o.transport,
                    reader,
                    size,
                });
            }
            _ => out.other += 1,
        }
    }
    out
}

/// Turn each channel's reads into receives of whole messages, and leave out the messages never
/// read. The rule: a channel's messages are its writes, one message each, in the order the
/// writes began; the bytes a read returned are the next bytes of that stream, and the read
/// receives every message whose first byte it took — so a read that took two writes' bytes
/// receives two messages, and a read that took only the end of a message receives none (its
/// start was received by the read before). Messages whose first byte nobody read are left out
/// of their writers' steps (the last ones each writer wrote on the channel).
fn map_messages(
    tasks: &mut [Task],
    chans: &Channels,
    written: &[Vec<usize>],
    slot: &HashMap<i32, usize>,
    summary: &mut Summary,
) {
    if chans.list.is_empty() {
        return;
    }
    // For each channel, the messages each of its reads receives, in order.
    let mut receives: Vec<std::collections::VecDeque<usize>> =
        vec![Default::default(); chans.list.len()];
    let mut read_messages = vec![0usize; chans.list.len()];
    for (c, ch) in chans.list.iter().enumerate() {
        let Some(&r) = slot.get(&ch.reader) else {
            continue;
        };
        let total = written[c].len() as u64;
        let mut cursor = 0u64;
        for step in &tasks[r].steps {
            let Step::Read(k, bytes, _) = *step else {
                continue;
            };
            if k as usize != c {
                continue;
            }
            // Messages whose first byte (m * size) is in [cursor, cursor + bytes).
            let first = cursor.div_ceil(ch.size).min(total);
            let end = (cursor + bytes).div_ceil(ch.size).min(total);
            receives[c].push_back((end - first) as usize);
            cursor += bytes;
        }
        read_messages[c] = cursor.div_ceil(ch.size).min(total) as usize;
    }
    // How many of its messages on each channel each writer keeps.
    let mut keep: HashMap<(usize, u32), usize> = HashMap::new();
    for (c, writers) in written.iter().enumerate() {
        for &w in &writers[..read_messages[c]] {
            *keep.entry((w, c as u32)).or_default() += 1;
        }
        summary.messages += read_messages[c];
        summary.unread_messages += writers.len() - read_messages[c];
    }
    for (i, t) in tasks.iter_mut().enumerate() {
        if !t
            .steps
            .iter()
            .any(|s| matches!(s, Step::Send(..) | Step::Read(..)))
        {
            continue;
        }
        let steps = std::mem::take(&mut t.steps);
        let mut sent: HashMap<u32, usize> = HashMap::new();
        for s in steps {
            match s {
                // A call that is no message in the replay is CPU time, as any other call.
                // A message's call keeps its CPU time in the compute after it (the file's
                // computes are cumulative: the replay's own call comes off them).
                Step::Send(c, sys) => {
                    let n = sent.entry(c).or_default();
                    *n += 1;
                    if *n <= keep.get(&(i, c)).copied().unwrap_or(0) {
                        summary.io_system_ns += sys;
                        t.push(Step::Send(c, 0));
                        if sys > 0 {
                            t.push(Step::Compute(sys));
                        }
                    } else {
                        t.push(Step::Compute(sys));
                    }
                }
                Step::Read(c, _, sys) => {
                    let n = receives[c as usize].pop_front().unwrap_or(0);
                    if n == 0 {
                        t.push(Step::Compute(sys));
                    } else {
                        summary.io_system_ns += sys;
                    }
                    for _ in 0..n {
                        t.push(Step::Recv(c, 0));
                    }
                    if n > 0 && sys > 0 {
                        t.push(Step::Compute(sys));
                    }
                }
                other => t.push(other),
            }
        }
    }
}

/// A task's CPU time: its computes and the time inside its channels' calls.
fn cpu_of(steps: &[Step]) -> u64 {
    steps
        .iter()
        .map(|s| match *s {
            Step::Compute(d) | Step::Send(_, d) | Step::Recv(_, d) => d,
            _ => 0,
        })
        .sum()
}

fn sleep_kind(call: Option<Call>) -> SleepKind {
    match call {
        Some(Call::Timer) | Some(Call::Poll) | None => SleepKind::Timer,
        Some(_) => SleepKind::Outside,
    }
}

/// One item of a written body: a step, or a loop of steps with mean durations.
enum Item {
    Step(Step),
    Loop { passes: usize, body: Vec<Step> },
}

/// Fold repeats into loops (see the module comment); adds each loop's deviation and the
/// durations it summarised to `dev` and `total`.
fn summarise(steps: &[Step], dev: &mut f64, total: &mut f64, loops: &mut usize) -> Vec<Item> {
    if steps.len() <= SUMMARISE_ABOVE {
        return steps.iter().map(|&s| Item::Step(s)).collect();
    }
    let shapes: Vec<(u8, i64)> = steps.iter().map(Step::shape).collect();
    let n = steps.len();
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        // The period covering the most steps from i (ties: the shortest).
        let mut best: Option<(usize, usize)> = None;
        for p in 1..=MAX_PERIOD.min((n - i) / MIN_PASSES) {
            let mut r = 1;
            while i + (r + 1) * p <= n && shapes[i + r * p..i + (r + 1) * p] == shapes[i..i + p] {
                r += 1;
            }
            if r >= MIN_PASSES && best.is_none_or(|(bp, br)| r * p > bp * br) {
                best = Some((p, r));
            }
        }
        match best {
            Some((p, r)) => {
                let mut body = Vec::with_capacity(p);
                for j in 0..p {
                    let s = steps[i + j];
                    let Some(_) = s.duration() else {
                        body.push(s);
                        continue;
                    };
                    let ds: Vec<f64> = (0..r)
                        .map(|k| steps[i + k * p + j].duration().unwrap_or(0) as f64)
                        .collect();
                    let sum: f64 = ds.iter().sum();
                    let mean = sum / r as f64;
                    *dev += ds.iter().map(|d| (d - mean).abs()).sum::<f64>();
                    *total += sum;
                    let m = mean.round() as u64;
                    body.push(match s {
                        Step::Compute(_) => Step::Compute(m),
                        Step::Sleep(_, k) => Step::Sleep(m, k),
                        other => other,
                    });
                }
                out.push(Item::Loop { passes: r, body });
                *loops += 1;
                i += p * r;
            }
            None => {
                out.push(Item::Step(steps[i]));
                i += 1;
            }
        }
    }
    out
}

/// A TOML-safe identifier from a task name and id.
fn group_name(name: Option<&String>, tid: i32) -> String {
    let mut s: String = name
        .map(|n| {
            n.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    s = s.trim_matches('_').to_string();
    if s.is_empty() || !s.starts_with(|c: char| c.is_ascii_alphabetic()) {
        s.insert(0, 't');
    }
    format!("{s}_{tid}")
}

/// A duration in µs, exact to the ns, without trailing zeros.
fn us(ns: u64) -> String {
    let whole = ns / 1000;
    let frac = ns % 1000;
    if frac == 0 {
        format!("{whole}us")
    } else {
        let f = format!("{frac:03}");
        format!("{whole}.{}us", f.trim_end_matches('0'))
    }
}

fn render_step(
    s: &Step,
    groups: &HashMap<i32, String>,
    sizes: &[u64],
    out: &mut String,
    indent: &str,
) {
    let _ = match *s {
        Step::Compute(d) => writeln!(out, "{indent}{{ compute = \"{}\" }},", us(d)),
        Step::Post(t) => writeln!(out, "{indent}{{ post = \"wake_{t}\" }},"),
        Step::Wait => writeln!(out, "{indent}{{ wait = \"wake_self\" }},"),
        Step::Sleep(d, SleepKind::Timer) => {
            writeln!(out, "{indent}{{ sleep = \"{}\" }},   # timer", us(d))
        }
        Step::Sleep(d, SleepKind::Outside) => writeln!(
            out,
            "{indent}{{ sleep = \"{}\" }},   # woken from outside (device, network, another process)",
            us(d)
        ),
        Step::Yield => writeln!(out, "{indent}\"yield\","),
        Step::Spawn(t) => writeln!(out, "{indent}{{ spawn = \"{}\" }},", groups[&t]),
        Step::Ready(w) => writeln!(out, "{indent}{{ post = \"ready_self_from_{w}\" }},"),
        Step::AwaitReady(t) => writeln!(out, "{indent}{{ wait = \"ready_{t}_from_self\" }},"),
        Step::Send(c, _) => writeln!(
            out,
            "{indent}{{ send = \"chan[{c}]\", size = \"{}B\" }},",
            sizes[c as usize]
        ),
        Step::Recv(c, _) => writeln!(
            out,
            "{indent}{{ recv = \"chan[{c}]\", size = \"{}B\" }},",
            sizes[c as usize]
        ),
        // Mapped to receives before anything is written.
        Step::Read(..) => Ok(()),
    };
}

/// The file's text, and the group each task is written in.
fn render(
    rec: &Recording,
    tasks: &[Task],
    chans: &Channels,
    summary: &mut Summary,
) -> Result<(String, HashMap<i32, String>), ConvertError> {
    let sizes: Vec<u64> = chans.list.iter().map(|c| c.size).collect();
    // Bodies first: the group names of folded tasks depend on them.
    let mut dev = 0.0;
    let mut total = 0.0;
    let mut bodies: Vec<String> = Vec::with_capacity(tasks.len());
    let mut written = 0usize;
    let mut items_of = Vec::with_capacity(tasks.len());
    for t in tasks {
        let items = summarise(&t.steps, &mut dev, &mut total, &mut summary.loops);
        written += items
            .iter()
            .map(|i| match i {
                Item::Step(_) => 1,
                Item::Loop { body, .. } => 1 + body.len(),
            })
            .sum::<usize>();
        if written > MAX_FILE_STEPS {
            return Err(ConvertError::TooLong {
                steps: written,
                max: MAX_FILE_STEPS,
            });
        }
        items_of.push(items);
    }
    summary.written_steps = written;
    summary.loop_error = if total > 0.0 { dev / total } else { 0.0 };
    // Names: spawns refer to the child's group, so every task's name is known before any body
    // is written; a folded task takes its group's name.
    let own: HashMap<i32, String> = tasks
        .iter()
        .map(|t| (t.tid, group_name(rec.names.get(&t.tid), t.tid)))
        .collect();
    // Fold: tasks whose bodies read the same (with their own names as references) share a group.
    // Two bodies that wait on their own semaphores never read the same, so a fold never merges
    // two tasks others post to.
    for (t, items) in tasks.iter().zip(&items_of) {
        let mut b = String::new();
        body_text(items, &own, &sizes, &mut b, t.tid);
        bodies.push(b);
    }
    let mut group_of: HashMap<i32, String> = HashMap::new();
    let mut first_with: HashMap<(&str, bool), usize> = HashMap::new();
    let mut counts: Vec<usize> = vec![0; tasks.len()];
    for (k, t) in tasks.iter().enumerate() {
        let key = (bodies[k].as_str(), t.spawned);
        let g = *first_with.entry(key).or_insert(k);
        counts[g] += 1;
        group_of.insert(t.tid, own[&tasks[g].tid].clone());
    }
    summary.groups = counts.iter().filter(|&&c| c > 0).count();
    // The fold changed names spawns refer to: write the bodies again with the groups' names.
    let mut out = String::new();
    header(rec, summary, &mut out);
    let _ = writeln!(out, "name = \"{}\"", workload_name(&rec.source));
    let _ = writeln!(
        out,
        "description = \"Recorded from {}\"",
        escape(&rec.source)
    );
    // Threads: the semaphores are shared memory, and a spawned task is then a parked thread.
    let _ = writeln!(out, "tasks = \"threads\"");
    // A task's computes sum to what the kernel charged it, its own calls included: the
    // replay's posts, waits, sleeps and messages come off them (`Computes::Cumulative`).
    let _ = writeln!(
        out,
        "computes = \"cumulative\"   # each compute runs until the task's CPU time reaches the sum so far"
    );
    if !chans.list.is_empty() {
        // One transport a file: the one most of the recorded channels were.
        let pipes = chans
            .list
            .iter()
            .filter(|c| c.transport == Transport::Pipe)
            .count();
        let sockets = chans.list.len() - pipes;
        let (transport, note) = match (pipes, sockets) {
            (_, 0) => ("pipe", String::new()),
            (0, _) => ("socketpair", String::new()),
            (p, s) if p >= s => (
                "pipe",
                format!("   # recorded: {p} pipes and {s} UNIX stream sockets"),
            ),
            (p, s) => (
                "socketpair",
                format!("   # recorded: {s} UNIX stream sockets and {p} pipes"),
            ),
        };
        let _ = writeln!(out, "transport = \"{transport}\"{note}");
        let _ = writeln!(
            out,
            "\n[channels.chan]   # the recorded pipes and sockets, in the order they were first used\ncount = {}",
            chans.list.len()
        );
    }
    let waiters: Vec<i32> = tasks.iter().filter(|t| t.waited).map(|t| t.tid).collect();
    let mut posted: Vec<i32> = tasks
        .iter()
        .flat_map(|t| &t.steps)
        .filter_map(|s| match s {
            Step::Post(t) => Some(*t),
            _ => None,
        })
        .collect();
    posted.extend(&waiters);
    posted.sort_unstable();
    posted.dedup();
    for p in posted {
        let _ = writeln!(out, "\n[semaphores.wake_{p}]");
    }
    let mut ready: Vec<(i32, i32)> = tasks
        .iter()
        .flat_map(|t| t.steps.iter().map(move |s| (t.tid, s)))
        .filter_map(|(tid, s)| match *s {
            Step::Ready(w) => Some((tid, w)),
            _ => None,
        })
        .collect();
    ready.sort_unstable();
    ready.dedup();
    for (t, w) in ready {
        let _ = writeln!(out, "\n[semaphores.ready_{t}_from_{w}]");
    }
    for (k, t) in tasks.iter().enumerate() {
        if counts[k] == 0 {
            continue;
        }
        let _ = writeln!(out, "\n[groups.{}]", own[&t.tid]);
        if counts[k] > 1 {
            let _ = writeln!(
                out,
                "count = {}   # {} tasks with identical steps",
                counts[k], counts[k]
            );
        }
        if t.spawned {
            let _ = writeln!(out, "spawned = true");
        }
        let mut b = String::new();
        body_text(&items_of[k], &group_of, &sizes, &mut b, t.tid);
        out.push_str(&b);
    }
    if out.len() as u64 > crate::MAX_FILE_BYTES {
        return Err(ConvertError::TooLong {
            steps: written,
            max: MAX_FILE_STEPS,
        });
    }
    Ok((out, group_of))
}

/// `steps = [ ... ]` for one task; `names` gives spawned groups' names.
fn body_text(
    items: &[Item],
    names: &HashMap<i32, String>,
    sizes: &[u64],
    out: &mut String,
    tid: i32,
) {
    let mut inner = String::new();
    for it in items {
        match it {
            Item::Step(s) => render_step(s, names, sizes, &mut inner, "  "),
            Item::Loop { passes, body } => {
                let _ = writeln!(inner, "  {{ loop = {passes}, steps = [");
                for s in body {
                    render_step(s, names, sizes, &mut inner, "      ");
                }
                let _ = writeln!(inner, "  ] }},");
            }
        }
    }
    if inner.is_empty() {
        // A task that never ran while recorded: nothing to replay but its existence.
        inner.push_str("  { compute = \"0us\" },\n");
    }
    let _ = write!(
        out,
        "steps = [\n{}]\n",
        inner
            .replace("wake_self", &format!("wake_{tid}"))
            .replace("ready_self_", &format!("ready_{tid}_"))
            .replace("_from_self\"", &format!("_from_{tid}\""))
    );
}

fn header(rec: &Recording, s: &Summary, out: &mut String) {
    let _ = writeln!(
        out,
        "# Recorded by `schedlab record` from: {}",
        one_line(&rec.source)
    );
    if !rec.via.is_empty() {
        let _ = writeln!(out, "# Recorded through {}.", one_line(&rec.via));
    }
    let _ = writeln!(
        out,
        "# Kernel {}, {} CPUs, started {}, {:.3} s recorded, {} events, {} lost.",
        one_line(&rec.kernel),
        rec.cpus,
        one_line(&rec.started_utc),
        rec.stop_ns.saturating_sub(rec.start_ns) as f64 / 1e9,
        s.events,
        s.lost
    );
    if s.lost > 0 {
        let _ = writeln!(
            out,
            "# APPROXIMATE: the kernel dropped {} events; sleeps and wakeups around them are missing or misclassified.",
            s.lost
        );
    }
    let _ = writeln!(out, "# {}.", s.holds());
    let _ = writeln!(
        out,
        "# Recorded: {} voluntary and {} involuntary context switches, {} wakeups.",
        s.voluntary_switches, s.involuntary_switches, s.wakeups
    );
    let _ = writeln!(
        out,
        "# compute: CPU time between two actions ({}); wait/post: a wakeup by another recorded task; sleep: the measured time to a wakeup no recorded task made{}.",
        if s.kernel_charged_runs > 0 {
            "each run's total as the kernel charged it, its sum_exec_runtime read at the switches, split between the actions inside it by their times"
        } else {
            "switch-in to switch-out times"
        },
        if s.channels > 0 {
            "; send/recv: a write to and the reads of a recorded pipe or socket (a recv for each message whose first byte a read took)"
        } else {
            ""
        }
    );
    if let Some(line) = s.summarised() {
        let _ = writeln!(out, "# Summarised: {line}.");
    }
}

/// The workload's name for a recording of `source`: `recorded-` and the program's base name.
pub fn workload_name(source: &str) -> String {
    let first = source.split_whitespace().next().unwrap_or("recorded");
    let base = first.rsplit('/').next().unwrap_or(first);
    let s: String = base
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    if s.is_empty() {
        "recorded".to_string()
    } else {
        format!("recorded-{s}")
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

fn escape(s: &str) -> String {
    one_line(s).replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::sched_events::SchedEvent;

    fn ev(ts: u64, kind: EventKind) -> SchedEvent {
        SchedEvent {
            ts_ns: ts,
            cpu: 0,
            kind,
        }
    }
    fn sw(ts: u64, prev: i32, left: LeftAs, next: i32) -> SchedEvent {
        ev(
            ts,
            EventKind::Switch {
                prev,
                left,
                next,
                prev_runtime_ns: None,
            },
        )
    }
    fn wk(ts: u64, waker: i32, wakee: i32) -> SchedEvent {
        ev(ts, EventKind::Waking { waker, wakee })
    }
    fn rec(roots: &[i32], events: Vec<SchedEvent>) -> Recording {
        let stop = events.last().map_or(0, |e| e.ts_ns);
        Recording {
            events,
            roots: roots.to_vec(),
            names: roots.iter().map(|&r| (r, format!("task{r}"))).collect(),
            start_ns: 0,
            stop_ns: stop,
            lost: 0,
            source: "./prog --flag".into(),
            kernel: "6.18.0-test".into(),
            cpus: 2,
            started_utc: "2026-01-01T00:00:00Z".into(),
            ..Recording::default()
        }
    }
    /// The file compiles and its dry run passes (every wait has its post, every spawn once).
    fn compiles(text: &str) -> crate::Script {
        let path = std::path::Path::new("recorded.toml");
        let def = crate::toml_file::read(path, text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        crate::Script::new(def).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }
    /// The step lines of group `g`, trimmed.
    fn steps_of(text: &str, g: &str) -> Vec<String> {
        let start = text.find(&format!("[groups.{g}]")).expect("group");
        let rest = &text[start..];
        let open = rest.find("steps = [\n").unwrap() + 10;
        let close = rest[open..].find("\n]").unwrap() + open;
        rest[open..close]
            .lines()
            .map(|l| l.trim().to_string())
            .collect()
    }

    /// The sum of the `compute` lines among `steps`, ns (steps outside loops).
    fn computes_ns(steps: &[String]) -> u64 {
        steps
            .iter()
            .filter_map(|l| l.strip_prefix("{ compute = \""))
            .filter_map(|l| l.split("us\"").next())
            .map(|us| (us.parse::<f64>().unwrap() * 1000.0).round() as u64)
            .sum()
    }

    /// Two tasks bouncing a token: `n` round trips of 100 ns compute on each side.
    fn pingpong(n: u64) -> Recording {
        let mut e = vec![sw(0, 0, LeftAs::Runnable, 10)];
        let mut t = 0;
        for _ in 0..n {
            e.push(wk(t + 100, 10, 11));
            e.push(sw(t + 110, 10, LeftAs::Sleeping, 11));
            e.push(wk(t + 210, 11, 10));
            e.push(sw(t + 220, 11, LeftAs::Sleeping, 10));
            t += 220;
        }
        rec(&[10, 11], e)
    }

    #[test]
    fn pingpong_is_two_tasks_and_a_dependency_each_way() {
        let c = convert(&pingpong(3), false).unwrap();
        // The computes are cumulative: the replay's own posts and waits come off them.
        assert!(compiles(&c.toml).program().cumulative, "{}", c.toml);
        assert_eq!(c.summary.tasks, 2);
        assert_eq!(c.summary.groups, 2);
        assert_eq!(c.summary.dependencies, 6);
        assert_eq!((c.summary.wakeups, c.summary.voluntary_switches), (6, 6));
        assert_eq!(c.summary.timer_sleeps + c.summary.other_sleeps, 0);
        assert!(c.toml.contains("[semaphores.wake_10]") && c.toml.contains("[semaphores.wake_11]"));
        let a = steps_of(&c.toml, "task10_10");
        assert_eq!(
            a,
            [
                "{ compute = \"0.1us\" },",
                "{ post = \"wake_11\" },",
                "{ compute = \"0.01us\" },",
                "{ wait = \"wake_10\" },",
                "{ compute = \"0.1us\" },",
                "{ post = \"wake_11\" },",
                "{ compute = \"0.01us\" },",
                "{ wait = \"wake_10\" },",
                "{ compute = \"0.1us\" },",
                "{ post = \"wake_11\" },",
                "{ compute = \"0.01us\" },",
                "{ wait = \"wake_10\" },",
            ]
        );
        // The first task 11 was woken before it was seen running: asleep since the start.
        let b = steps_of(&c.toml, "task11_11");
        assert_eq!(b[0], "{ wait = \"wake_11\" },");
        assert_eq!(b[1], "{ compute = \"0.1us\" },");
        assert_eq!(b[2], "{ post = \"wake_10\" },");
        assert_eq!(c.summary.cpu_ns, 6 * 110);
    }

    /// Two CPUs, a pipe ping-pong where 11 is woken while still on its CPU (it had found the
    /// pipe empty and set its state, not yet switched), then once after it had slept.
    fn wakeup_before_the_sleep() -> Recording {
        let e = vec![
            sw(0, 0, LeftAs::Runnable, 10),
            sw(0, 0, LeftAs::Runnable, 11),
            // 10 writes: 11 is running (on its way to sleep).
            wk(100, 10, 11),
            // 11 replies at once; 10 had gone to sleep on its read.
            sw(150, 10, LeftAs::Sleeping, 0),
            wk(300, 11, 10),
            sw(310, 0, LeftAs::Runnable, 10),
            // 10 writes again; this time 11 had slept.
            sw(400, 11, LeftAs::Sleeping, 0),
            wk(500, 10, 11),
            sw(520, 0, LeftAs::Runnable, 11),
            sw(600, 10, LeftAs::Dead, 0),
            sw(700, 11, LeftAs::Dead, 0),
        ];
        rec(&[10, 11], e)
    }

    #[test]
    fn a_wakeup_before_the_sleep_is_still_a_dependency() {
        // The kernel's wakeup finds 11 running and no sleep is traced. Its read needed 10's
        // write all the same: 10 posts and 11 waits at that point, or the replay's 10 would
        // run ahead posting.
        let c = convert(&wakeup_before_the_sleep(), false).unwrap();
        compiles(&c.toml);
        assert_eq!(c.summary.dependencies, 3);
        assert_eq!(c.summary.wakeups_before_sleep, 1);
        assert_eq!(c.summary.wakeups, 3);
        assert_eq!(c.summary.voluntary_switches, 2);
        assert_eq!(
            steps_of(&c.toml, "task11_11"),
            [
                "{ compute = \"0.1us\" },",
                "{ wait = \"wake_11\" },",
                "{ compute = \"0.2us\" },",
                "{ post = \"wake_10\" },",
                "{ compute = \"0.1us\" },",
                "{ wait = \"wake_11\" },",
                "{ compute = \"0.18us\" },",
            ]
        );
        assert_eq!(
            steps_of(&c.toml, "task10_10"),
            [
                "{ compute = \"0.1us\" },",
                "{ post = \"wake_11\" },",
                "{ compute = \"0.05us\" },",
                "{ wait = \"wake_10\" },",
                "{ compute = \"0.19us\" },",
                "{ post = \"wake_11\" },",
                "{ compute = \"0.1us\" },",
            ]
        );
        assert!(c.toml.contains("3 wakeups by a recorded task (post -> wait; 1 of them before the task had left its CPU)"), "{}", c.toml);
    }

    #[test]
    fn keep_sleeps_makes_the_poster_wait_for_the_sleeper() {
        let opts = Options {
            keep_sleeps: true,
            ..Options::default()
        };
        let c = convert_with(&pingpong(2), &opts).unwrap();
        compiles(&c.toml);
        // Each of the 4 wakeups found its task asleep: 4 rendezvous, a semaphore per pair.
        assert_eq!((c.summary.dependencies, c.summary.rendezvous), (4, 4));
        assert!(c.toml.contains("[semaphores.ready_10_from_11]"));
        assert!(c.toml.contains("[semaphores.ready_11_from_10]"));
        assert_eq!(
            steps_of(&c.toml, "task10_10"),
            [
                "{ compute = \"0.1us\" },",
                "{ wait = \"ready_11_from_10\" },",
                "{ post = \"wake_11\" },",
                "{ compute = \"0.01us\" },",
                "{ post = \"ready_10_from_11\" },",
                "{ wait = \"wake_10\" },",
                "{ compute = \"0.1us\" },",
                "{ wait = \"ready_11_from_10\" },",
                "{ post = \"wake_11\" },",
                "{ compute = \"0.01us\" },",
                "{ post = \"ready_10_from_11\" },",
                "{ wait = \"wake_10\" },",
            ]
        );
        // 11 slept from the start: it is ready before anything else.
        let b = steps_of(&c.toml, "task11_11");
        assert_eq!(b[0], "{ post = \"ready_11_from_10\" },");
        assert_eq!(b[1], "{ wait = \"wake_11\" },");
        // A wakeup at the very end, its task never running again: no rendezvous is left
        // that nobody could end.
        let mut r = pingpong(2);
        let end = r.stop_ns;
        r.events.push(wk(end + 100, 10, 11));
        r.stop_ns = end + 100;
        let c = convert_with(&r, &opts).unwrap();
        compiles(&c.toml);
        assert_eq!((c.summary.dependencies, c.summary.rendezvous), (5, 4));
        // Without the option, the same file as before: no ready semaphores.
        let plain = convert(&pingpong(2), false).unwrap();
        assert!(!plain.toml.contains("ready_"));
        assert_eq!(plain.summary.rendezvous, 0);
    }

    /// A task that computes 1 µs and sleeps 9 µs on a timer, `passes` times, then runs 10 ns.
    fn timer_sleeper(passes: u64) -> Recording {
        let mut e = vec![sw(0, 0, LeftAs::Runnable, 5)];
        let mut t = 0;
        for _ in 0..passes {
            e.push(ev(
                t + 1_000,
                EventKind::SysEnter {
                    pid: 5,
                    call: Call::Timer,
                },
            ));
            e.push(sw(t + 1_000, 5, LeftAs::Sleeping, 0));
            // The timer interrupt wakes it in the idle task's context.
            e.push(wk(t + 10_000, 0, 5));
            e.push(sw(t + 10_000, 0, LeftAs::Runnable, 5));
            e.push(ev(t + 10_010, EventKind::SysExit { pid: 5 }));
            t += 10_000;
        }
        rec(&[5], e)
    }

    /// A switch that read the kernel's runtime of `prev`.
    fn swr(ts: u64, prev: i32, left: LeftAs, next: i32, runtime: u64) -> SchedEvent {
        ev(
            ts,
            EventKind::Switch {
                prev,
                left,
                next,
                prev_runtime_ns: Some(runtime),
            },
        )
    }

    #[test]
    fn the_kernels_runtime_at_switch_outs_makes_each_tasks_cpu_the_kernels() {
        let call = |ts, pid| {
            ev(
                ts,
                EventKind::SysEnter {
                    pid,
                    call: Call::Timer,
                },
            )
        };
        let exit = |ts, pid| ev(ts, EventKind::SysExit { pid });
        let e = vec![
            // The recorder forks the command, 5: its runtime starts at 0.
            ev(
                0,
                EventKind::Fork {
                    parent: 99,
                    child: 5,
                },
            ),
            sw(100, 0, LeftAs::Runnable, 5),
            // 1000 ns between the switches, 1300 charged (from its fork, and from before
            // each switch-in).
            call(1_100, 5),
            swr(1_100, 5, LeftAs::Sleeping, 0, 1_300),
            wk(10_000, 0, 5),
            sw(10_000, 0, LeftAs::Runnable, 5),
            exit(10_010, 5),
            // A run split by a spawn: 400 ns before it, 600 after; 1200 charged in all, the
            // 200 beyond the switch times go to the piece before the sleep.
            ev(
                10_400,
                EventKind::Fork {
                    parent: 5,
                    child: 6,
                },
            ),
            call(11_000, 5),
            swr(11_000, 5, LeftAs::Sleeping, 6, 2_500),
            // 6 runs 450 ns and is charged 300: the 150 come off its last piece (50) and
            // then off its compute before the spawn (400 -> 300).
            ev(
                11_400,
                EventKind::Fork {
                    parent: 6,
                    child: 7,
                },
            ),
            ev(11_450, EventKind::Exit { pid: 6 }),
            swr(11_450, 6, LeftAs::Dead, 7, 300),
            ev(11_600, EventKind::Exit { pid: 7 }),
            swr(11_600, 7, LeftAs::Dead, 0, 150),
            wk(20_000, 0, 5),
            sw(20_000, 0, LeftAs::Runnable, 5),
            exit(20_010, 5),
            // Preempted after 300 ns, charged 250; then 600 and 600.
            swr(20_300, 5, LeftAs::Runnable, 8, 2_750),
            sw(20_400, 8, LeftAs::Runnable, 5),
            ev(21_000, EventKind::Exit { pid: 5 }),
            swr(21_000, 5, LeftAs::Dead, 0, 3_350),
        ];
        let c = convert(&rec(&[5], e), false).unwrap();
        compiles(&c.toml);
        let cpu: Vec<(i32, u64)> = c.tasks.iter().map(|t| (t.tid, t.cpu_ns)).collect();
        assert_eq!(cpu, [(5, 3_350), (6, 300), (7, 150)], "{}", c.toml);
        assert_eq!(c.summary.cpu_ns, 3_800);
        assert_eq!(c.summary.kernel_charged_runs, 6);
        assert_eq!(
            steps_of(&c.toml, "task5_5"),
            [
                "{ compute = \"1.3us\" },",
                "{ sleep = \"8.9us\" },   # timer",
                "{ compute = \"0.4us\" },",
                "{ spawn = \"t_6\" },",
                "{ compute = \"0.8us\" },",
                "{ sleep = \"9us\" },   # timer",
                "{ compute = \"0.85us\" },",
            ],
            "{}",
            c.toml
        );
        assert!(
            c.toml.contains("each run's total as the kernel charged it"),
            "{}",
            c.toml
        );

        // A root whose fork was not recorded (--pid): its first reading is only where the
        // kernel's count stands; that run keeps its switch times.
        let e = vec![
            sw(0, 0, LeftAs::Runnable, 9),
            call(500, 9),
            swr(500, 9, LeftAs::Sleeping, 0, 1_000_000),
            wk(1_000, 0, 9),
            sw(1_000, 0, LeftAs::Runnable, 9),
            exit(1_010, 9),
            call(2_000, 9),
            swr(2_000, 9, LeftAs::Sleeping, 0, 1_001_200),
        ];
        let c = convert(&rec(&[9], e), false).unwrap();
        assert_eq!(c.tasks[0].cpu_ns, 500 + 1_200);
        // Through tracefs (no readings) the switch times are the CPU time, as they were.
        let c = convert(&timer_sleeper(3), false).unwrap();
        assert_eq!(c.summary.kernel_charged_runs, 0);
        assert!(c.toml.contains("(switch-in to switch-out times)"));
    }

    #[test]
    fn a_timer_sleeper_is_a_periodic_sleep() {
        let c = convert(&timer_sleeper(100), false).unwrap();
        compiles(&c.toml);
        assert_eq!(c.summary.timer_sleeps, 100);
        assert_eq!(c.summary.dependencies, 0);
        // 100 periods of (1 µs compute, 9 µs sleep) summarise into one loop.
        assert_eq!(c.summary.loops, 1, "{}", c.toml);
        let s = steps_of(&c.toml, "task5_5");
        assert_eq!(
            s,
            [
                "{ loop = 100, steps = [",
                "{ compute = \"1us\" },",
                "{ sleep = \"9us\" },   # timer",
                "] },",
                "{ compute = \"0.01us\" },",
            ]
        );
        assert!(c.toml.contains("deviate from the recorded ones by 0.0 %"));
        // A sleep in a call nobody recorded woke, other than a timer's, is woken from outside.
        let e = vec![
            sw(0, 0, LeftAs::Runnable, 5),
            ev(
                10,
                EventKind::SysEnter {
                    pid: 5,
                    call: Call::Other(0),
                },
            ),
            sw(20, 5, LeftAs::Sleeping, 0),
            wk(5_020, 0, 5),
            sw(5_030, 0, LeftAs::Runnable, 5),
        ];
        let c = convert(&rec(&[5], e), false).unwrap();
        assert_eq!(c.summary.other_sleeps, 1);
        assert!(c
            .toml
            .contains("{ sleep = \"5us\" },   # woken from outside"));
    }

    #[test]
    fn fork_and_exit_are_spawn_and_wait() {
        let e = vec![
            sw(0, 0, LeftAs::Runnable, 1),
            ev(
                1_000,
                EventKind::Fork {
                    parent: 1,
                    child: 2,
                },
            ),
            ev(
                2_000,
                EventKind::SysEnter {
                    pid: 1,
                    call: Call::WaitChild,
                },
            ),
            sw(2_000, 1, LeftAs::Sleeping, 2),
            ev(7_000, EventKind::Exit { pid: 2 }),
            wk(7_500, 2, 1),
            sw(8_000, 2, LeftAs::Dead, 1),
            ev(8_100, EventKind::SysExit { pid: 1 }),
            sw(9_000, 1, LeftAs::Dead, 0),
        ];
        let c = convert(&rec(&[1], e), false).unwrap();
        compiles(&c.toml);
        assert_eq!(c.summary.spawns, 1);
        assert_eq!(c.summary.dependencies, 1);
        assert_eq!(
            steps_of(&c.toml, "task1_1"),
            [
                "{ compute = \"1us\" },",
                "{ spawn = \"t_2\" },",
                "{ compute = \"1us\" },",
                "{ wait = \"wake_1\" },",
                "{ compute = \"1us\" },",
            ]
        );
        assert!(c.toml.contains("[groups.t_2]\nspawned = true\n"));
        assert_eq!(
            steps_of(&c.toml, "t_2"),
            [
                "{ compute = \"5.5us\" },",
                "{ post = \"wake_1\" },",
                "{ compute = \"0.5us\" },"
            ]
        );
    }

    #[test]
    fn identical_tasks_fold_into_one_group_and_yields_are_kept() {
        // A parent forks three children that each burn 3 µs with a yield in the middle.
        let mut e = vec![sw(0, 0, LeftAs::Runnable, 1)];
        for c in 2..5 {
            e.push(ev(
                c as u64 * 10,
                EventKind::Fork {
                    parent: 1,
                    child: c,
                },
            ));
        }
        e.push(sw(100, 1, LeftAs::Sleeping, 0));
        let mut t = 100;
        for c in 2..5 {
            e.push(sw(t, 0, LeftAs::Runnable, c));
            e.push(ev(
                t + 1_000,
                EventKind::SysEnter {
                    pid: c,
                    call: Call::Yield,
                },
            ));
            e.push(sw(t + 1_000, c, LeftAs::Runnable, 0));
            e.push(sw(t + 1_100, 0, LeftAs::Runnable, c));
            e.push(ev(t + 1_100, EventKind::SysExit { pid: c }));
            e.push(sw(t + 3_100, c, LeftAs::Dead, 0));
            t += 4_000;
        }
        let c = convert(&rec(&[1], e), false).unwrap();
        compiles(&c.toml);
        assert_eq!(
            (c.summary.tasks, c.summary.groups, c.summary.yields),
            (4, 2, 3)
        );
        assert!(c.toml.contains("[groups.t_2]\ncount = 3"), "{}", c.toml);
        assert_eq!(
            steps_of(&c.toml, "t_2"),
            [
                "{ compute = \"1us\" },",
                "\"yield\",",
                "{ compute = \"2us\" },"
            ]
        );
        let p = steps_of(&c.toml, "task1_1");
        assert_eq!(p.iter().filter(|l| *l == "{ spawn = \"t_2\" },").count(), 3);
    }

    #[test]
    fn lossy_and_empty_traces_are_refused() {
        let mut r = pingpong(2);
        r.lost = 7;
        assert_eq!(
            convert(&r, false).unwrap_err(),
            ConvertError::Lossy { lost: 7 }
        );
        let c = convert(&r, true).unwrap();
        assert!(c
            .toml
            .contains("# APPROXIMATE: the kernel dropped 7 events"));
        compiles(&c.toml);
        // Only other tasks' events: nothing of ours happened.
        let r = rec(&[42], vec![sw(0, 0, LeftAs::Runnable, 9), wk(5, 9, 8)]);
        let e = convert(&r, false).unwrap_err();
        assert_eq!(e, ConvertError::Empty { roots: "42".into() });
        assert!(e.to_string().contains("the trace is empty"));
        assert!(convert(&rec(&[42], vec![]), false).is_err());
    }

    #[test]
    fn long_pingpong_summarises_into_a_loop_keeping_cpu_time() {
        let c = convert(&pingpong(10_000), false).unwrap();
        compiles(&c.toml);
        assert_eq!(c.summary.dependencies, 20_000);
        assert!(c.summary.written_steps < 40, "{}", c.summary.written_steps);
        assert!(c.toml.lines().count() < 60);
        assert_eq!(c.summary.loop_error, 0.0);
    }

    #[test]
    fn a_million_events_convert_in_bounded_time() {
        // Irregular durations, regular shape: one loop per task, and a stated error.
        let mut e = vec![sw(0, 0, LeftAs::Runnable, 10)];
        let mut t = 0;
        for k in 0..250_000u64 {
            let j = (k * 7919) % 100;
            e.push(wk(t + 100 + j, 10, 11));
            e.push(sw(t + 110 + j, 10, LeftAs::Sleeping, 11));
            e.push(wk(t + 210 + j, 11, 10));
            e.push(sw(t + 220 + j, 11, LeftAs::Sleeping, 10));
            t += 220 + j;
        }
        let started = std::time::Instant::now();
        let c = convert(&rec(&[10, 11], e), false).unwrap();
        let took = started.elapsed();
        assert!(c.summary.loop_error > 0.0 && c.summary.loop_error < 1.0);
        assert!(c.toml.len() < 10_000);
        compiles(&c.toml);
        eprintln!("1M events converted in {took:?}");
    }
    /// A pipe or socket call of `pid` from `enter` to `exit`: its two events.
    fn io(
        enter: u64,
        exit: u64,
        pid: i32,
        op: IoOp,
        transport: Transport,
        object: u64,
        bytes: i64,
    ) -> [SchedEvent; 2] {
        let io = IoCall {
            pid,
            op,
            transport,
            object,
            bytes,
        };
        [
            ev(enter, EventKind::IoEnter { io }),
            ev(exit, EventKind::IoExit { io }),
        ]
    }
    fn pipe(enter: u64, exit: u64, pid: i32, op: IoOp, object: u64, bytes: i64) -> [SchedEvent; 2] {
        io(enter, exit, pid, op, Transport::Pipe, object, bytes)
    }
    /// The recording of `events` in time order (a call's two events are made together).
    fn sorted(roots: &[i32], mut events: Vec<SchedEvent>) -> Recording {
        events.sort_by_key(|e| e.ts_ns);
        rec(roots, events)
    }

    /// `perf bench sched pipe` on one CPU, `n` round trips: 10 writes 4 bytes into pipe 0xA
    /// and reads pipe 0xB; 11 reads 0xA and answers on 0xB; each wakes the other inside its
    /// write and sleeps inside its read.
    fn pipe_pingpong(n: u64) -> Recording {
        const R: IoOp = IoOp::Read;
        const W: IoOp = IoOp::Write;
        let mut e = vec![
            sw(0, 0, LeftAs::Runnable, 11),
            sw(20, 11, LeftAs::Sleeping, 10),
        ];
        // 11's first read: from 10 ns to its first round's 150.
        let mut read11 = 10;
        let mut b = 0;
        for k in 0..n {
            e.extend(pipe(b + 100, b + 120, 10, W, 0xA, 4));
            e.push(wk(b + 110, 10, 11));
            e.extend(pipe(b + 130, b + 210, 10, R, 0xB, 4));
            e.push(sw(b + 140, 10, LeftAs::Sleeping, 11));
            e.extend(pipe(read11, b + 150, 11, R, 0xA, 4));
            e.extend(pipe(b + 160, b + 180, 11, W, 0xB, 4));
            e.push(wk(b + 170, 11, 10));
            // The last read of 11 is still waiting when recording stops: no record of it.
            if k + 1 < n {
                read11 = b + 190;
            }
            e.push(sw(b + 200, 11, LeftAs::Sleeping, 10));
            b += 200;
        }
        sorted(&[10, 11], e)
    }

    #[test]
    fn a_pipe_pingpong_is_two_channels_and_no_semaphore() {
        let c = convert(&pipe_pingpong(3), false).unwrap();
        compiles(&c.toml);
        assert!(!c.toml.contains("semaphores"), "{}", c.toml);
        assert!(c.toml.contains("transport = \"pipe\""));
        assert!(c.toml.contains("[channels.chan]"));
        assert_eq!((c.summary.channels, c.summary.messages), (2, 6));
        assert_eq!((c.summary.dependencies, c.summary.channel_wakeups), (0, 6));
        assert_eq!((c.summary.wakeups, c.summary.unread_messages), (6, 0));
        // Channel 0 is the pipe first used (11's read of 0xA).
        assert_eq!(
            steps_of(&c.toml, "task10_10"),
            [
                "{ compute = \"0.08us\" },",
                "{ send = \"chan[0]\", size = \"4B\" },",
                // The write's own 20 ns, then 10 ns before the read.
                "{ compute = \"0.03us\" },",
                "{ recv = \"chan[1]\", size = \"4B\" },",
                // The read's own 10 + 10 ns, then 90 ns.
                "{ compute = \"0.11us\" },",
                "{ send = \"chan[0]\", size = \"4B\" },",
                "{ compute = \"0.03us\" },",
                "{ recv = \"chan[1]\", size = \"4B\" },",
                "{ compute = \"0.11us\" },",
                "{ send = \"chan[0]\", size = \"4B\" },",
                "{ compute = \"0.03us\" },",
                "{ recv = \"chan[1]\", size = \"4B\" },",
                "{ compute = \"0.02us\" },",
            ]
        );
        assert_eq!(
            steps_of(&c.toml, "task11_11"),
            [
                "{ compute = \"0.01us\" },",
                "{ recv = \"chan[0]\", size = \"4B\" },",
                "{ compute = \"0.03us\" },",
                "{ send = \"chan[1]\", size = \"4B\" },",
                "{ compute = \"0.03us\" },",
                "{ recv = \"chan[0]\", size = \"4B\" },",
                "{ compute = \"0.03us\" },",
                "{ send = \"chan[1]\", size = \"4B\" },",
                "{ compute = \"0.03us\" },",
                "{ recv = \"chan[0]\", size = \"4B\" },",
                "{ compute = \"0.03us\" },",
                "{ send = \"chan[1]\", size = \"4B\" },",
                "{ compute = \"0.04us\" },",
            ]
        );
        // The calls' own CPU time is in the computes after them (the replay's calls come off
        // those, the computes being cumulative): a write 20 ns, a read 10 ns before it sleeps
        // and 10 after; 10 made 3 of each, 11 3 writes and 3 reads (its last read is
        // unrecorded).
        assert_eq!(c.summary.io_system_ns, 6 * 20 + 6 * 20);
        // Each task's computes sum to its whole CPU time, its calls' included.
        for t in &c.tasks {
            let g = format!("task{0}_{0}", t.tid);
            assert_eq!(
                computes_ns(&steps_of(&c.toml, &g)),
                t.cpu_ns,
                "{g}: {:?}",
                c.tasks
            );
        }
        // The tasks' CPU time is all of it, the calls' included: the one CPU was busy from 0
        // to the end, 610 (10's last read returns then).
        let cpu: u64 = c.tasks.iter().map(|t| t.cpu_ns).sum();
        assert_eq!((cpu, c.summary.cpu_ns), (610, 610), "{:?}", c.tasks);
        // Latencies are still those of every wakeup of a sleeping task.
        assert_eq!(c.wakeup_latencies_ns.len(), 6);
    }

    #[test]
    fn reads_map_to_whole_messages() {
        const R: IoOp = IoOp::Read;
        const W: IoOp = IoOp::Write;
        // 10 writes 8-byte messages into 0xA; 11 reads them: one read takes two messages,
        // then a message is read in two halves, then a last message is never read.
        let mut e = vec![
            sw(0, 0, LeftAs::Runnable, 10),
            sw(0, 0, LeftAs::Runnable, 11),
        ];
        e.extend(pipe(100, 110, 10, W, 0xA, 8));
        e.extend(pipe(200, 210, 10, W, 0xA, 8));
        e.extend(pipe(300, 310, 11, R, 0xA, 16));
        e.extend(pipe(400, 410, 10, W, 0xA, 8));
        e.extend(pipe(500, 510, 11, R, 0xA, 4));
        e.extend(pipe(600, 610, 11, R, 0xA, 4));
        e.extend(pipe(700, 710, 10, W, 0xA, 8));
        // An end of file: no message.
        e.extend(pipe(800, 810, 11, R, 0xA, 0));
        e.push(sw(900, 10, LeftAs::Dead, 0));
        e.push(sw(900, 11, LeftAs::Dead, 0));
        let c = convert(&sorted(&[10, 11], e), false).unwrap();
        compiles(&c.toml);
        assert_eq!((c.summary.messages, c.summary.unread_messages), (3, 1));
        assert_eq!(
            steps_of(&c.toml, "task11_11"),
            [
                "{ compute = \"0.3us\" },",
                "{ recv = \"chan[0]\", size = \"8B\" },",
                "{ recv = \"chan[0]\", size = \"8B\" },",
                // The read's own 10 ns, then 190 ns.
                "{ compute = \"0.2us\" },",
                "{ recv = \"chan[0]\", size = \"8B\" },",
                // The second half's read received nothing and the end of file's is no
                // message: both are CPU time, merged with the computes around them (the
                // first read's own 10 ns too).
                "{ compute = \"0.4us\" },",
            ]
        );
        // The unread last message is left out of its writer's steps.
        assert_eq!(
            steps_of(&c.toml, "task10_10"),
            [
                "{ compute = \"0.1us\" },",
                "{ send = \"chan[0]\", size = \"8B\" },",
                // Each kept send's own 10 ns in the compute after it.
                "{ compute = \"0.1us\" },",
                "{ send = \"chan[0]\", size = \"8B\" },",
                "{ compute = \"0.2us\" },",
                "{ send = \"chan[0]\", size = \"8B\" },",
                // With the left-out send's own 10 ns.
                "{ compute = \"0.5us\" },",
            ]
        );
        // The calls' CPU time: 10's three kept writes, 11's two reads that received.
        assert_eq!(c.summary.io_system_ns, 5 * 10);
    }

    #[test]
    fn a_socketpairs_two_directions_are_two_channels() {
        const R: IoOp = IoOp::Read;
        const W: IoOp = IoOp::Write;
        let unix = |a, b, pid, op, obj| io(a, b, pid, op, Transport::UnixStream, obj, 100);
        // One socketpair, ends 0xA (10's) and 0xB (11's): a write names the peer, a read its
        // own end, so 10's write and 11's read both name 0xB.
        let mut e = vec![
            sw(0, 0, LeftAs::Runnable, 10),
            sw(0, 0, LeftAs::Runnable, 11),
        ];
        e.extend(unix(100, 110, 10, W, 0xB));
        e.extend(unix(105, 200, 11, R, 0xB));
        e.extend(unix(300, 310, 11, W, 0xA));
        e.extend(unix(150, 400, 10, R, 0xA));
        let c = convert(&sorted(&[10, 11], e), false).unwrap();
        compiles(&c.toml);
        assert!(c.toml.contains("transport = \"socketpair\""), "{}", c.toml);
        assert_eq!((c.summary.channels, c.summary.messages), (2, 2));
        assert_eq!(
            steps_of(&c.toml, "task10_10"),
            [
                "{ compute = \"0.1us\" },",
                "{ send = \"chan[0]\", size = \"100B\" },",
                // The send's own 10 ns, then 40 ns.
                "{ compute = \"0.05us\" },",
                "{ recv = \"chan[1]\", size = \"100B\" },",
                // The receive's own 250 ns (it slept from 150 to 400).
                "{ compute = \"0.25us\" },",
            ]
        );
        assert_eq!(
            steps_of(&c.toml, "task11_11"),
            [
                "{ compute = \"0.105us\" },",
                "{ recv = \"chan[0]\", size = \"100B\" },",
                // The receive's own 95 ns (105 to 200), then 100 ns.
                "{ compute = \"0.195us\" },",
                "{ send = \"chan[1]\", size = \"100B\" },",
                // The send's own 10 ns, then running until the recording stopped.
                "{ compute = \"0.1us\" },",
            ]
        );
    }

    #[test]
    fn a_pipe_read_by_two_tasks_stays_cpu_time_and_dependencies() {
        const R: IoOp = IoOp::Read;
        const W: IoOp = IoOp::Write;
        let mut e = vec![
            sw(0, 0, LeftAs::Runnable, 10),
            sw(0, 0, LeftAs::Runnable, 11),
            sw(0, 0, LeftAs::Runnable, 12),
        ];
        e.extend(pipe(50, 300, 11, R, 0xA, 4));
        e.push(sw(60, 11, LeftAs::Sleeping, 0));
        e.extend(pipe(100, 120, 10, W, 0xA, 4));
        e.push(wk(110, 10, 11));
        e.push(sw(290, 0, LeftAs::Runnable, 11));
        e.extend(pipe(400, 420, 10, W, 0xA, 4));
        e.extend(pipe(500, 510, 12, R, 0xA, 4));
        let c = convert(&sorted(&[10, 11, 12], e), false).unwrap();
        compiles(&c.toml);
        assert_eq!((c.summary.channels, c.summary.other_objects), (0, 1));
        assert_eq!(c.summary.dependencies, 1);
        assert!(c.toml.contains("[semaphores.wake_11]"));
        assert!(!c.toml.contains("[channels.") && !c.toml.contains("send ="));
    }

    #[test]
    fn a_call_of_a_task_never_seen_is_refused() {
        let mut e = vec![sw(0, 0, LeftAs::Runnable, 10)];
        e.extend(pipe(100, 110, 10, IoOp::Write, 0xA, 4));
        e.extend(pipe(200, 210, 77, IoOp::Read, 0xA, 4));
        let r = sorted(&[10], e);
        let err = convert(&r, false).unwrap_err();
        assert_eq!(
            err,
            ConvertError::UnknownTask {
                pid: 77,
                ts_ns: 200
            }
        );
        assert!(err.to_string().contains("task 77"), "{err}");
        // Accepted as lossy: the call is ignored.
        assert!(convert(&r, true).is_ok());
    }
    #[test]
    fn wakeups_between_channel_peers_are_the_channels_but_a_polls_is_not() {
        const R: IoOp = IoOp::Read;
        const W: IoOp = IoOp::Write;
        // As the socket tracepoints see it: calls that did not sleep take no time. 11 is
        // woken by its writer on its way to sleep in a read (no sleep traced), and later
        // sleeps in poll and is woken by the same writer.
        let mut e = vec![
            sw(0, 0, LeftAs::Runnable, 10),
            sw(0, 0, LeftAs::Runnable, 11),
        ];
        e.extend(pipe(100, 100, 10, W, 0xA, 8));
        e.push(wk(100, 10, 11));
        e.extend(pipe(150, 150, 11, R, 0xA, 8));
        e.push(ev(
            200,
            EventKind::SysEnter {
                pid: 11,
                call: Call::Poll,
            },
        ));
        e.push(sw(200, 11, LeftAs::Sleeping, 0));
        e.push(wk(300, 10, 11));
        e.push(sw(310, 0, LeftAs::Runnable, 11));
        e.push(ev(310, EventKind::SysExit { pid: 11 }));
        let c = convert(&sorted(&[10, 11], e), false).unwrap();
        compiles(&c.toml);
        assert_eq!((c.summary.channel_wakeups, c.summary.dependencies), (1, 1));
        assert_eq!(
            steps_of(&c.toml, "task11_11"),
            [
                "{ compute = \"0.15us\" },",
                "{ recv = \"chan[0]\", size = \"8B\" },",
                "{ compute = \"0.05us\" },",
                "{ wait = \"wake_11\" },",
            ]
        );
    }
}
