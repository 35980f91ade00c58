//! One starting task's life, from knob application to its report and the end gate.

use crate::context::{RealContext, Shared, Spawning};
use crate::executor::block_on;
use crate::gate::Gate;
use crate::knobs::apply_to_current_thread;
use crate::procfs::rusage_switches;
use crate::report::{comm, TaskReport};
use crate::sys;
use schedlab_workload::knobs::Knobs;
use schedlab_workload::{TaskRef, Workload};
use std::sync::Arc;

/// Everything a task needs, shared by reference (threads) or by inheritance (processes).
pub(crate) struct TaskEnv<W> {
    pub(crate) workload: Arc<W>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) gate: Arc<Gate>,
    pub(crate) knobs: Vec<Knobs>,
    pub(crate) group_names: Vec<&'static str>,
    /// Tasks in the repetition, for messages.
    pub(crate) total: usize,
    /// How tasks start others, when the plan spawns any.
    pub(crate) spawner: Option<Arc<Spawning>>,
}

/// The body of one task from knob application to report. The report is handed to `deliver`;
/// the task then waits at the end gate until the parent has read its /proc counters.
///
/// No task opens a file between its start and the end of the run: instantiating a thread's
/// /proc entries before the run (whoever reads them) measurably slows it — a hackbench replica
/// ran 10–18 % slower over 30–40 alternating runs when each thread's /proc/…/sched was read
/// before the start. Switches are therefore counted with getrusage(RUSAGE_THREAD) around the
/// body, and the parent reads /proc (migrations, settings) while the tasks wait at the end.
pub(crate) fn task_main<W: Workload>(
    env: &TaskEnv<W>,
    task: TaskRef,
    deliver: impl FnOnce(TaskReport),
) {
    let name = comm(env.group_names[task.group], task.index);
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
    // Sleeps end when asked (1 ns) rather than up to 50 µs later (the default timer slack of a
    // normal thread), so that interbench's latencies are scheduling latencies — unless the
    // group asks another slack (rt-app files: the inherited one, as rt-app's threads have).
    crate::knobs::apply_timer_slack(env.knobs[task.group].timer_slack);
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
        ctx = ctx.with_spawning(spawner.clone(), 0);
    }
    let result = block_on(env.workload.body(task, &ctx));
    report.finished_ns = sys::monotonic_ns().saturating_sub(epoch);
    report.timer_slack_ns = Some(sys::timer_slack_ns());
    report.cpu_ns = sys::thread_cpu_ns() - cpu0;
    let (vol1, invol1) = rusage_switches();
    report.voluntary = vol1.saturating_sub(vol0);
    report.involuntary = invol1.saturating_sub(invol0);
    report.samples = ctx.take_samples();
    report.passes = ctx.take_passes();
    report.cumulative = ctx.cumulative_use();
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
