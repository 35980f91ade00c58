//! One repetition of a workload on the real kernel.
//!
//! The sequence follows hackbench's: create every channel, start every task (thread or forked
//! process, `crate::hosts`), let each apply its group's knobs and report ready, then release
//! them all at once through a start pipe (`crate::gate`) and time until the last body
//! finishes. Each task (`crate::task`) counts its context switches with getrusage around its
//! body and then waits at an end gate while the parent reads its /proc entries (migrations,
//! settings) — no task opens a file during the run; wakeup and preemption counts come from a
//! private tracefs instance when one is available.
//!
//! The waiting parent is the [`crate::supervisor`]: it ends the repetition when the time budget
//! is exceeded or an interrupt arrives, and outranks real-time groups
//! ([`check_outranked`], [`SUPERVISOR_PRIORITY`]).
//!
//! Nothing is lost silently: a task that cannot be created (EAGAIN under a limit on tasks) is
//! reported at once with the limits, and a task that dies after its report (at the end gate)
//! fails the repetition.

use crate::context::{Shared, Spawning};
use crate::executor::block_on;
use crate::gate::{Gate, StartGuard};
use crate::hosts::Hosts;
use crate::locks::RealLock;
use crate::run_group::EndOnDrop;
use crate::spawn::Spawner;
use crate::supervisor::{keeper_alive, supervise};
use crate::sync::SyncObjects;
use crate::sys;
use crate::task::TaskEnv;
use crate::tempdir::TempDir;
use crate::transport::Channels;
use schedlab_workload::{LoopCalibration, Plan, TaskMode, TaskRef, Workload};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::repetition::{RepetitionResult, RepetitionSetup, RunError};
pub use crate::supervisor::{check_outranked, OutrankError, SUPERVISOR_PRIORITY};

/// Whether the tasks of `plan` can be hosted as its mode says. The plan's locks, barriers,
/// semaphores and condition variables live in the schedlab process, where forked tasks cannot
/// reach them: a plan with locks is refused as processes, and one with barriers, semaphores or
/// condition variables as processes or group processes (two groups' processes could not share
/// them). The message names what the plan has, the mode refused and the one accepted.
pub fn check_hosting(plan: &Plan) -> Result<(), HostingError> {
    let forked = plan.mode != TaskMode::Threads;
    let uses: Vec<&str> = [
        (plan.mode == TaskMode::Processes && plan.locks > 0, "locks"),
        (forked && !plan.sync.barriers.is_empty(), "barriers"),
        (forked && !plan.sync.semaphores.is_empty(), "semaphores"),
        (forked && plan.sync.conds > 0, "condition variables"),
        (forked && plan.sync.words > 0, "shared words"),
    ]
    .into_iter()
    .filter_map(|(used, what)| used.then_some(what))
    .collect();
    if uses.is_empty() {
        return Ok(());
    }
    Err(HostingError {
        uses,
        mode: plan.mode,
    })
}

/// Shared objects of a plan that its tasks' hosting cannot reach (see [`check_hosting`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} need tasks run as threads: tasks={mode} is not accepted with them; use tasks=threads", listed(.uses))]
pub struct HostingError {
    /// What the plan has that needs threads (`locks`, `barriers`, `semaphores`, `condition
    /// variables`).
    pub uses: Vec<&'static str>,
    /// The hosting asked for.
    pub mode: TaskMode,
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
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

/// The directory of the run's scratch directory where forked spawned tasks leave their reports.
const SPAWN_REPORTS: &str = ".spawned";

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
    check_hosting(&plan).map_err(|e| RunError::Setup(e.to_string()))?;
    for (g, k) in plan.groups.iter().zip(setup.knobs) {
        check_outranked(k, Some(SUPERVISOR_PRIORITY)).map_err(|e| RunError::Knob {
            group: g.name.into(),
            message: e.to_string(),
        })?;
    }
    let lock_stats = crate::locks::stats_enabled().map_err(|e| RunError::Setup(e.to_string()))?;
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
    // rt-app calibrates its busy loop before it creates the threads; so does this, every
    // repetition (a few milliseconds), so that each run's loops match its own start: for the
    // loops `run` is, or, when `run` is CPU time, for the loop counts rt-app's logs give.
    let calibration = (workload.loop_calibration())
        .or_else(|| workload.rt_app_log_calibration().filter(|_| setup.passes));
    let ns_per_loop = match calibration {
        None => None,
        Some(LoopCalibration::Given { ns_per_loop }) => Some(ns_per_loop as f64),
        Some(LoopCalibration::Measure { cpu }) => {
            Some(crate::busy_loop::calibrate(cpu).map_err(RunError::Setup)?)
        }
    };
    // The compute loop's calibration, once per process (a few milliseconds), before any task
    // starts: no task pays for it, and forked ones inherit it.
    crate::compute::calibration();
    // The slack `timer-slack=default` gives, read here before any task changes its own.
    crate::knobs::inherited_timer_slack_ns();
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
        log_passes: setup.passes,
        ns_per_loop,
    });
    let gate = Arc::new(Gate::new().map_err(|e| RunError::Setup(format!("start pipes: {e}")))?);
    let body_workload = workload.clone();
    let spawner = Spawner::new(&plan, setup.knobs, &scratch.path().join(SPAWN_REPORTS))
        .map_err(|e| RunError::Setup(format!("spawn places, reports or process group: {e}")))?
        .map(|spawner| {
            Arc::new(Spawning {
                spawner,
                body: Box::new(move |task, ctx| block_on(body_workload.body(task, ctx))),
            })
        });
    // Declared before the hosts: whatever way this function returns, the forked tasks' group
    // is ended and reaped after the hosts are.
    let _group = EndOnDrop(spawner.as_ref().and_then(|s| s.spawner.group()));
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
    // Whatever way this function returns before the supervisor opens the gate, the tasks
    // created so far leave it (aborted).
    let start = StartGuard::new(&gate);
    // rustix finds the vDSO's clock_gettime at the first clock read of a process (it asks the
    // kernel for the auxiliary vector and walks the vDSO's symbols, touching pages): done
    // here, the forked tasks inherit it instead of each doing it at its first read, after the
    // start gate, inside the timed region (a system call and page faults: a task of pipe
    // messaging took 27–33 page faults in its life before, 16–19 since).
    sys::monotonic_ns();
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
    let mut hosts = hosts?;
    let result = supervise(
        &plan,
        &tasks,
        start,
        &mut hosts,
        env.spawner.as_deref().map(|s| &s.spawner),
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
    let ended = ended.and_then(|()| keeper_alive(env.spawner.as_deref().map(|s| &s.spawner)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::knobs::{Knobs, SchedPolicy};
    use schedlab_workload::plan::GroupPlan;
    use schedlab_workload::presets::Outcome;
    use schedlab_workload::record::MetricDef;
    use schedlab_workload::{Context, Transport, WorkloadError};
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

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
                passes: false,
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
    use schedlab_workload::knobs::Knobs;
    use schedlab_workload::presets::Outcome;
    use std::os::unix::process::CommandExt;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

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
                passes: false,
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
            check_hosting(&plan(TaskMode::Processes, 2, all.clone()))
                .unwrap_err()
                .to_string(),
            "locks, barriers, semaphores and condition variables need tasks run as threads: tasks=processes is not accepted with them; use tasks=threads"
        );
        let sems = SyncPlan {
            semaphores: vec![1],
            ..SyncPlan::default()
        };
        assert_eq!(
            check_hosting(&plan(TaskMode::GroupProcesses, 0, sems))
                .unwrap_err()
                .to_string(),
            "semaphores need tasks run as threads: tasks=group-processes is not accepted with them; use tasks=threads"
        );
    }
}
