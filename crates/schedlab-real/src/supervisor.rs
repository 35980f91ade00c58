//! The supervisor: the waiting parent of a repetition. It waits for every task to report ready,
//! releases them together at one epoch, ends the repetition when the time budget is exceeded or
//! an interrupt arrives, and reads every task's counters while the tasks wait at the end gate.
//!
//! When a group runs under a real-time policy it waits at SCHED_FIFO [`SUPERVISOR_PRIORITY`] so
//! that runaway real-time tasks cannot starve it; it then demotes (threads) or kills
//! (processes) the tasks. A FIFO or RR group at the supervisor's priority or above could not be
//! preempted by it, so such a priority is refused before anything starts ([`check_outranked`]).

use crate::gate::{StartGuard, NOT_CREATED};
use crate::hosts::Hosts;
use crate::procfs::{observed_settings_of, task_snapshot};
use crate::repetition::{RepetitionResult, RepetitionSetup, RunError};
use crate::report::TaskReport;
use crate::spawn::Spawner;
use crate::sys;
use crate::trace::timeline::WorkloadTid;
use crate::trace::TraceCounts;
use crate::wakeups::WakeupError;
use schedlab_workload::knobs::{Knobs, SchedPolicy};
use schedlab_workload::presets::{Outcome, TaskOutcome};
use schedlab_workload::record::{CounterSources, Counters, CumulativeComputes};
use schedlab_workload::{Plan, TaskRef};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

/// An error if the keeper of the spawned tasks' process group has died (see
/// [`RunGroup::keeper_death`](crate::run_group::RunGroup::keeper_death)).
pub(crate) fn keeper_alive(spawner: Option<&Spawner>) -> Result<(), RunError> {
    match spawner
        .and_then(|s| s.group())
        .and_then(|g| g.keeper_death())
    {
        Some(how) => Err(RunError::KeeperDied { how }),
        None => Ok(()),
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

/// The wakeup counts of a repetition and their source's name, or why it has none.
type Traced = Result<(TraceCounts, String), NoWakeups>;

/// Why a repetition has no wakeup counts; the record says `unavailable: ` and this.
#[derive(Debug, thiserror::Error)]
enum NoWakeups {
    /// The run asked for none.
    #[error("not requested")]
    NotRequested,
    /// The counter failed to start or to be read.
    #[error("{0}")]
    Failed(WakeupError),
}

/// Whether task `tid` of process `pid` still exists and is not a zombie: a task waits at the end
/// gate until released.
fn task_waits(pid: i32, tid: i32) -> bool {
    crate::procfs::task_state(pid, tid).is_some_and(|s| !matches!(s, b'Z' | b'X'))
        && crate::procfs::pid_alive(pid)
}

/// One task's counters: its report's switches and CPU time, `migrations`, and the wakeups the
/// trace counted for its thread id.
fn task_counters(r: &TaskReport, migrations: Option<u64>, traced: &Traced) -> Counters {
    let mut c = Counters {
        voluntary_switches: Some(r.voluntary),
        involuntary_switches: Some(r.involuntary),
        migrations,
        cpu_time_s: r.cpu_ns as f64 / 1e9,
        cumulative: r.cumulative.map(|u| CumulativeComputes {
            sum_s: u.sum_ns as f64 / 1e9,
            beyond_s: r.cpu_ns.saturating_sub(u.sum_ns) as f64 / 1e9,
            computes: u.computes,
            past: u.past,
        }),
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

/// A task's name for messages (`receiver 3`).
fn task_name(plan: &Plan, tasks: &[TaskRef], id: usize) -> String {
    tasks.get(id).map_or_else(
        || format!("#{id}"),
        |t| format!("{} {}", plan.groups[t.group].name, t.index),
    )
}

/// Supervise one repetition whose tasks `hosts` created and `start` holds at the start gate:
/// wait until every task is ready, release them together, wait for their reports within the
/// time budget, then read their counters while they wait at the end gate. Whatever way it
/// returns before the release, the tasks created so far leave the gate aborted (`start`'s drop).
pub(crate) fn supervise(
    plan: &Plan,
    tasks: &[TaskRef],
    start: StartGuard<'_>,
    hosts: &mut Hosts,
    spawner: Option<&Spawner>,
    setup: RepetitionSetup<'_>,
    realtime: bool,
) -> Result<RepetitionResult, RunError> {
    let prio = SupervisorPriority::raise(realtime);
    // Declared after `prio`, so dropped before it: aborted tasks are released while the
    // supervisor still outranks them.
    let start = start;
    let pending = await_ready(plan, tasks, &start, hosts, spawner, &setup.stop)?;
    if realtime && prio.priority != Some(SUPERVISOR_PRIORITY) {
        // The tasks could take their priorities but the supervisor not its own (a limited
        // RLIMIT_RTPRIO): hold them below the one it has.
        for (g, k) in plan.groups.iter().zip(setup.knobs) {
            check_outranked(k, prio.priority).map_err(|e| RunError::Knob {
                group: g.name.into(),
                message: e.to_string(),
            })?;
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
        t.start()
            .map_err(|e| RunError::Setup(format!("--timeline: {e}")))?;
    }
    start.open(sys::monotonic_ns());
    let watch = Watch {
        plan,
        tasks,
        spawner,
    };
    let mut reports = watch.await_reports(hosts, &setup.stop, setup.budget, pending)?;
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
    let traced: Traced = match (trace, trace_error) {
        (Some(t), None) => match t.collect(&tids) {
            Ok(c) => Ok((c, t.source())),
            Err(e) => Err(NoWakeups::Failed(e)),
        },
        (Some(_), Some(e)) => Err(NoWakeups::Failed(e)),
        (None, _) => Err(NoWakeups::NotRequested),
    };
    let counted = watch.count(&reports, &spawned, &traced)?;
    let timeline = match rq_trace {
        None => None,
        Some(t) => {
            let workload: HashMap<i32, WorkloadTid> = (reports.iter().chain(&spawned))
                .map(|r| {
                    let g = (tasks.get(r.id).map(|t| t.group))
                        .or_else(|| counted.spawned_group.get(&r.tid).copied())
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
        outcome: counted.outcome,
        counters: counted.counters,
        sources: CounterSources {
            switches: "getrusage(RUSAGE_THREAD) around the body".into(),
            migrations: if counted.all_proc && !spawned.is_empty() {
                "/proc/<pid>/task/<tid>/sched after the run (since the task started); a spawned task's own /proc/thread-self/sched at its end".into()
            } else if counted.all_proc {
                "/proc/<pid>/task/<tid>/sched after the run (since the task started)".into()
            } else {
                "unavailable".into()
            },
            wakeups: wakeups_source,
        },
        lost_events: lost,
        observed: counted.observed,
        locks: Vec::new(),
        timeline,
    })
}

/// Phase 1: every task applies its knobs and reports ready. Returns the reports that arrived
/// meanwhile (a process whose tasks failed at once); an error if a task could not be created
/// or apply its knobs, the start-up budget ran out, a host died or the run was interrupted.
fn await_ready(
    plan: &Plan,
    tasks: &[TaskRef],
    start: &StartGuard<'_>,
    hosts: &mut Hosts,
    spawner: Option<&Spawner>,
    stop: &AtomicBool,
) -> Result<Vec<TaskReport>, RunError> {
    let gate = start.gate();
    let n = tasks.len();
    let ready_deadline =
        Instant::now() + Duration::from_secs(30) + Duration::from_millis(10 * n as u64);
    let mut ready = 0;
    let mut knob_error: Option<RunError> = None;
    let mut pending = Vec::new();
    while ready < n {
        if stop.load(Ordering::Relaxed) {
            return Err(RunError::Interrupted);
        }
        if Instant::now() > ready_deadline {
            return Err(RunError::Setup(format!(
                "only {ready} of {n} tasks became ready within the start-up budget"
            )));
        }
        if !sys::wait_readable(gate.ready.0, 50) {
            hosts
                .poll_reports(Duration::ZERO, &mut pending)
                .and_then(|()| keeper_alive(spawner))?;
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
    knob_error.map_or(Ok(pending), Err)
}

/// What the supervisor watches once the tasks run: the plan, its starting tasks and the
/// spawner of the others.
struct Watch<'a> {
    plan: &'a Plan,
    tasks: &'a [TaskRef],
    spawner: Option<&'a Spawner>,
}

/// The counters and outcome read from every task's report and /proc entries.
struct Counted {
    counters: BTreeMap<String, Counters>,
    observed: Vec<BTreeMap<String, String>>,
    outcome: Outcome,
    /// Whether every task's migrations could be read.
    all_proc: bool,
    /// The group of each spawned task, by thread id.
    spawned_group: HashMap<i32, usize>,
}

impl Watch<'_> {
    /// Phase 2: wait for every starting task's report (`pending`: those already in), ending
    /// the repetition at the time budget, at an interrupt, or when a task failed or a host
    /// died.
    fn await_reports(
        &self,
        hosts: &mut Hosts,
        stop: &AtomicBool,
        budget: Duration,
        pending: Vec<TaskReport>,
    ) -> Result<Vec<TaskReport>, RunError> {
        let n = self.tasks.len();
        let started = Instant::now();
        let mut reports = pending;
        while reports.len() < n {
            if stop.load(Ordering::Relaxed) {
                return Err(RunError::Interrupted);
            }
            if started.elapsed() > budget {
                stop.store(true, Ordering::Relaxed);
                hosts.stop_all();
                return Err(RunError::Timeout(budget));
            }
            // Processes report through pipes that poll() watches, and Ctrl-C interrupts
            // poll(), so the supervisor can sleep long: a supervisor waking every few
            // milliseconds (at FIFO 99 when the run has real-time groups) preempts whatever
            // task runs on its CPU — for interbench, the very task being measured. Threads
            // report through a channel that a signal does not interrupt, so there the
            // supervisor looks every 20 ms.
            let wait = match hosts {
                Hosts::Processes { .. } => budget
                    .saturating_sub(started.elapsed())
                    .clamp(Duration::from_millis(1), Duration::from_secs(1)),
                Hosts::Threads { .. } => Duration::from_millis(20),
            };
            hosts.poll_reports(wait, &mut reports)?;
            keeper_alive(self.spawner)?;
            if let Some(bad) = reports.iter().find(|r| r.error.is_some()).cloned() {
                // A task that saw the stop request and ended early ends an interrupted run,
                // not a failed one.
                if stop.load(Ordering::Relaxed) {
                    return Err(RunError::Interrupted);
                }
                // A task that lost its peer usually means the peer's process died: give the
                // death a moment to be noticed, and name it rather than its consequence.
                let mut more = Vec::new();
                let grace = Instant::now() + Duration::from_millis(200);
                while Instant::now() < grace {
                    hosts.poll_reports(Duration::from_millis(20), &mut more)?;
                }
                return Err(RunError::Task {
                    task: task_name(self.plan, self.tasks, bad.id),
                    message: bad.error.clone().unwrap_or_default(),
                });
            }
        }
        Ok(reports)
    }

    /// Phase 3: the counters per group (and `total`), the settings read back and the outcome,
    /// from the starting tasks' `reports` (read at the end gate, where they are parked, so
    /// that their /proc entries can be read without disturbing the run) and the `spawned`
    /// tasks' own, with the wakeups `traced` counted.
    fn count(
        &self,
        reports: &[TaskReport],
        spawned: &[TaskReport],
        traced: &Traced,
    ) -> Result<Counted, RunError> {
        let (plan, tasks) = (self.plan, self.tasks);
        let mut counters: BTreeMap<String, Counters> = BTreeMap::new();
        let mut total = Counters::default();
        let mut observed = vec![BTreeMap::new(); plan.groups.len()];
        let mut outcome = Outcome {
            wall: Duration::ZERO,
            tasks: Vec::with_capacity(tasks.len()),
        };
        let mut all_proc = true;
        for r in reports {
            let task = tasks[r.id];
            let migrations = task_snapshot(r.pid, r.tid).and_then(|s| s.migrations);
            if !task_waits(r.pid, r.tid) {
                // Killed at the end gate: its counters are gone, and so is the certainty that
                // its process did nothing else; the repetition fails rather than miss them
                // silently.
                return Err(RunError::Lost {
                    what: task_name(plan, tasks, r.id),
                    how: format!(
                        "task {} of process {} was gone when its counters were to be read",
                        r.tid, r.pid
                    ),
                });
            }
            all_proc &= migrations.is_some();
            let c = task_counters(r, migrations, traced);
            counters
                .entry(plan.groups[task.group].name.to_string())
                .or_default()
                .add(&c);
            total.add(&c);
            if task.index == 0 {
                observed[task.group] = observed_settings_of(r.pid, r.tid);
                if let Some(ns) = r.timer_slack_ns {
                    observed[task.group].insert("timer_slack_ns".into(), ns.to_string());
                }
            }
            outcome.tasks.push(task_outcome(r));
            outcome.wall = outcome.wall.max(Duration::from_nanos(r.finished_ns));
        }
        // The spawned tasks: their own counters, in their groups; their samples at their
        // places (TaskRef::id), as the simulator gives them.
        let mut spawned_group = HashMap::new();
        if !spawned.is_empty() {
            let places = plan.total_tasks() + plan.total_spawn();
            outcome.tasks.resize_with(places, TaskOutcome::default);
        }
        for r in spawned {
            let Some(g) = self.spawner.and_then(|s| s.group_of(r.id)) else {
                return Err(RunError::Setup(format!(
                    "a spawned task reported as task {}, which is no spawn place of the plan",
                    r.id
                )));
            };
            all_proc &= r.migrations.is_some();
            let c = task_counters(r, r.migrations, traced);
            let group = plan.groups[g].name;
            counters.entry(group.to_string()).or_default().add(&c);
            total.add(&c);
            spawned_group.insert(r.tid, g);
            outcome.tasks[r.id] = task_outcome(r);
            outcome.wall = outcome.wall.max(Duration::from_nanos(r.finished_ns));
        }
        counters.insert("total".into(), total);
        Ok(Counted {
            counters,
            observed,
            outcome,
            all_proc,
            spawned_group,
        })
    }
}

/// A task's samples, CPU time and finishing time, for the workload's metrics.
fn task_outcome(r: &TaskReport) -> TaskOutcome {
    TaskOutcome {
        samples: r.samples.clone().into(),
        cpu_time: Duration::from_nanos(r.cpu_ns),
        finished_at: Duration::from_nanos(r.finished_ns),
        passes: r.passes.clone(),
    }
}
