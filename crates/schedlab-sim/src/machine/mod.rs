//! The simulated machine: CPUs, the clock, accounting, the cost model, and the mechanism around a
//! policy — the wakeup path, the context switch, the tick — as kernel/sched/core.c is around the
//! scheduling classes.
//!
//! How a task runs. A task's body is polled (in zero simulated time) until it makes a context
//! call; the call becomes an operation with a CPU cost (system call, message copy, …) followed by
//! an effect (deposit the message, block until bytes arrive, sleep, yield, wait at a barrier or
//! on a semaphore or condition). The task's CPU works off the cost in a *burst*; a tick or a
//! reschedule IPI can interrupt the burst, and the rest is worked off when the task runs again.
//! Effects that block take the task off the CPU (a voluntary switch); whoever makes its condition true wakes it up through `Machine::wake` (in `paths.rs`),
//! which asks the policy where the task goes (`select_task_rq`) and whether it preempts
//! (`wakeup_preempt`).
//!
//! Timing rules:
//! - a remote CPU learns of a wakeup or a reschedule after `ipi`; an idle CPU also pays
//!   `idle_exit`; the waker pays `ipi_send` for each IPI it sends; a reschedule on the waker's
//!   own CPU happens as its system call returns;
//! - the context switch (`switch`, plus `mm_switch` when the task is of another process than
//!   the one whose address space the CPU has loaded), the runqueue lock (`rq_lock`, plus `scan`
//!   per task examined, waiting while another CPU holds the same lock) and a migrated task's
//!   cache refill (`migration`) are charged to the task being switched in, as the kernel's
//!   accounting does;
//! - a message on a loopback TCP/UDP channel takes the machine-wide transmit lock (`net_lock`,
//!   spinning while another CPU holds it); an in-process queue costs what a pipe message does;
//!   a message on a channel last used on another CPU pays `bounce` (its lines change caches);
//! - ticks run at `hz` on busy CPUs (NO_HZ idle), or on every CPU for policies that want idle
//!   ticks; each costs `tick` to the interrupted task.
//! - a compute begins and ends with a read of the task's CPU clock, as the real backend's
//!   does (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`: `task_sched_runtime` runs the class's
//!   `update_curr`, kernel/sched/core.c); a reschedule that accounting asks for
//!   ([`Policy::update_curr_resched`], EEVDF's used-up request) switches the task as the read
//!   returns, not at the next tick. The reads cost nothing apart from the compute: the real
//!   compute counts them in its CPU budget. (The real loop reads the clock once more after each
//!   preemption; the simulation does not.)
//! - a workload's sleeping lock is a futex mutex (a system call; a waiter blocks and the release
//!   wakes the first waiter, which tries again); its spin lock is taken in user space at no cost,
//!   and a waiter spins on its CPU in [`SPIN_CHUNK`] bursts (preemptible, its CPU time) until a
//!   release hands the lock to the first waiter that is on a CPU, or, if none is, a spinner
//!   finds it free when it next runs.
//!
//! Lock statistics are exact, as lockmeter kept them (seeds/003): per lock the acquisitions,
//! those that waited, hold and wait times (total and max) and the CPU time spent spinning — for
//! the workload's locks, each runqueue lock (named by [`Policy::lock_name`]) and the loopback
//! transmit lock.
//!
//! Counters are exact: voluntary switches (the task blocked), involuntary ones (preempted or
//! yielded, and another task ran — Linux counts a yield as involuntary too), migrations (a task's
//! runqueue changed), wakeups (the start of the run is not one) and wakeups that preempted the
//! running task — at once on another CPU, or at the waker's return on its own — per-CPU
//! busy/idle time and runqueue length over time.
//!
//! The machine is composed of parts that own their state, each with its own methods and tests:
//! - `Costs` (`costs.rs`): the cost model, the topology and the repetition's jitter;
//! - `Clock` (`clock.rs`): the events to come and the timers among them (the present time is
//!   the policies' view, [`MachineView::now`]);
//! - `Cpus` (`cpus.rs`): each CPU's reschedule flags, tick and accounting, and the runqueue
//!   locks;
//! - `Net` (`net.rs`, with `byte_queue.rs`, `sock_queue.rs`, `tcp_drain.rs`): the channels,
//!   socket queues, TCP's ACKs and the loopback transmit lock;
//! - `SyncObjects` (`sync.rs`): the workload's locks, barriers, semaphores and conditions;
//! - `Kernel` (`kthreads.rs`): the kernel threads that serve the network and interrupts
//!   (FreeBSD's netisr and disk interrupt threads) and where kernel threads may run;
//! - `Memory` (`memory.rs`): RAM, page faults, reclaim and swap-in when a workload touches more
//!   memory than the cost model's `memory`, and kswapd.
//!
//! A part answers what its state says (whom a deposit lets go on, whether a lock is free, what a
//! message costs); the machine — which alone holds the policy and the tasks — does the waking
//! and blocking. Its code is split by concern, as core.c's is by section:
//! - this file: the types, the setup of a repetition (`sched_init`, `sched_fork`,
//!   `wake_up_new_task`) and the event loop that drives it;
//! - `steps.rs`: the effects of a body's context calls (what the system calls behind them do) and
//!   the voluntary ways off a CPU, blocking and exit; the channels' effects are in `net.rs`,
//!   the synchronization objects' in `sync.rs`, readiness waits in `poll.rs`;
//! - `paths.rs`: the wakeup path, the switch path and the tick (`try_to_wake_up`, `__schedule`,
//!   `sched_tick`);
//! - `accounting.rs`: runtime and runqueue accounting, the runqueue lock, and the counters a
//!   repetition reports;
//! - `spawn.rs`: tasks that come and go — fork (`spawn`), waiting for a child, and exit;
//! - `tcp_wait.rs`: what a loopback TCP receive that sleeps costs beyond a pipe read's sleep;
//! - `kthreads.rs`: kernel threads the machine runs itself beside the workload — FreeBSD's netisr
//!   thread, through which loopback TCP/UDP goes on `bsd4` and `ule`, and Linux's kswapd
//!   (counted as the group `kernel`, outside `total`);
//! - `numa.rs`, `timeline.rs`: memory placement on machines with sockets, and the run-queue
//!   timeline;
//! - `address_space.rs`: which process each task is of, and which address space each CPU has
//!   loaded (`mm_switch`).

use crate::context::{Halt, Shared, SimContext, Watch};
use crate::cost::CostModel;
use crate::engine::{Body, Executor};
use crate::policy::{
    self, CpuId, CpuMask, MachineView, Policy, PolicySpec, TaskId, TaskKind, TaskSetup,
};
use crate::topology::Topology;
use numa::TaskNuma;
use schedlab_workload::knobs::Knobs;
use schedlab_workload::presets::Outcome;
use schedlab_workload::record::{Counters, CpuCounters, LockStats};
use schedlab_workload::timeline::Timeline;
use schedlab_workload::{Workload, WorkloadError};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one simulated repetition needs besides the workload.
pub struct SimSetup<'a> {
    /// The policy and its parameters.
    pub policy: &'a PolicySpec,
    /// Number of simulated CPUs.
    pub cpus: usize,
    /// How the CPUs are arranged in sockets, cores and SMT threads; `None` is a flat machine
    /// (one socket of single-thread cores). Its logical CPUs must number `cpus`.
    pub topology: Option<&'a Topology>,
    /// The cost model.
    pub cost: &'a CostModel,
    /// The seed of this repetition.
    pub seed: u64,
    /// Knobs per plan group (validated, and checked by the policy).
    pub knobs: &'a [Knobs],
    /// CPUs the machine's kernel threads may run on (all when `None`).
    pub kernel_cpus: Option<&'a schedlab_workload::CpuSet>,
    /// Set from outside (Ctrl-C) to stop early.
    pub stop: Option<&'a AtomicBool>,
    /// Wall-clock budget for the repetition.
    pub wall_budget: Option<Duration>,
    /// Record the run-queue timeline ([`SimResult::timeline`]); off, the machine does nothing
    /// more than before.
    pub timeline: bool,
    /// Keep the bodies' pass rows ([`schedlab_workload::passes`], in each task's
    /// [`schedlab_workload::presets::TaskOutcome::passes`]), on the simulated clock.
    pub passes: bool,
}

impl<'a> SimSetup<'a> {
    /// `policy` on a flat machine of `cpus` CPUs with `cost`, `knobs` per plan group, seed 1,
    /// kernel threads on every CPU, no stop flag, no wall-clock budget and no timeline; set the
    /// other fields with struct update syntax (`SimSetup { seed, ..SimSetup::new(...) }`).
    pub fn new(
        policy: &'a PolicySpec,
        cpus: usize,
        cost: &'a CostModel,
        knobs: &'a [Knobs],
    ) -> SimSetup<'a> {
        SimSetup {
            policy,
            cpus,
            topology: None,
            cost,
            seed: 1,
            knobs,
            kernel_cpus: None,
            stop: None,
            wall_budget: None,
            timeline: false,
            passes: false,
        }
    }
}

/// What one simulated repetition measured.
#[derive(Clone, Debug)]
pub struct SimResult {
    /// The raw outcome, for the workload's metrics.
    pub outcome: Outcome,
    /// Counters per group name, plus `total`.
    pub counters: BTreeMap<String, Counters>,
    /// Per-CPU accounting.
    pub cpus: Vec<CpuCounters>,
    /// Events processed.
    pub events: u64,
    /// Simulated time from the start to the last body's end, ns.
    pub elapsed_ns: u64,
    /// Per lock, its statistics: the workload's locks, then the kernel locks that were taken
    /// (runqueue locks, the loopback transmit lock).
    pub locks: Vec<LockStats>,
    /// Every task's place over time (when [`SimSetup::timeline`] asked for it): exact, all
    /// tasks of the machine (the workload's and its kernel threads).
    pub timeline: Option<Timeline>,
}

/// Why a simulated repetition failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The CPU count is outside what the simulator models.
    #[error("{cpus} CPUs are not accepted for the simulator; use 1..{max}")]
    Cpus {
        /// The CPU count asked for.
        cpus: usize,
        /// The most CPUs the simulator models ([`policy::MAX_CPUS`]).
        max: usize,
    },
    /// The topology's logical CPUs are not the CPU count.
    #[error("the topology {topology} has {logical} logical CPUs, not {cpus}")]
    TopologyCpus {
        /// The topology.
        topology: Topology,
        /// Its logical CPUs.
        logical: usize,
        /// The CPU count asked for.
        cpus: usize,
    },
    /// Bad setup: an unknown policy, bad knobs, or a knob the policy has no notion of (the
    /// message of the policy or of the knobs).
    #[error("{0}")]
    Setup(String),
    /// A task body failed.
    #[error("task {task}: {error}")]
    Task {
        /// The task.
        task: TaskId,
        /// Its error.
        error: WorkloadError,
    },
    /// Every remaining task waits for something that can no longer happen.
    #[error("simulation deadlocked: {0}")]
    Deadlock(String),
    /// Stopped from outside.
    #[error("interrupted")]
    Interrupted,
    /// The wall-clock budget ran out.
    #[error(
        "the simulation exceeded its wall-clock budget of {} after simulating {} in {:.1} M events{doing}",
        schedlab_workload::duration::format_duration(*budget),
        schedlab_workload::duration::format_duration(Duration::from_nanos(*simulated_ns)),
        *events as f64 / 1e6
    )]
    Timeout {
        /// The budget.
        budget: Duration,
        /// How far the simulated clock had come.
        simulated_ns: u64,
        /// Events handled by then.
        events: u64,
        /// What the task that held the machine was doing, when one ran without the simulated
        /// clock moving ("; task 3 ..."), else empty.
        doing: String,
    },
    /// The event queue outgrew the simulator's memory budget ([`MAX_PENDING_EVENTS`]): the run
    /// is not going anywhere a result could come from.
    #[error("the simulation stopped: {pending} events were pending (about {mib} MiB), more than the simulator's budget of {limit}; {state}")]
    TooManyEvents {
        /// Events waiting in the queue.
        pending: usize,
        /// Their memory, MiB.
        mib: usize,
        /// The budget.
        limit: usize,
        /// What the tasks were doing.
        state: String,
    },
    /// No task finished a burst of CPU work or woke from a timer in [`MAX_EVENTS_WITHOUT_PROGRESS`]
    /// events: the machine only ticks and preempts.
    #[error("the simulation made no progress: {events} events without any task finishing its CPU work or waking from a timer; {state}")]
    NoProgress {
        /// Events since the last progress.
        events: u64,
        /// What the tasks were doing.
        state: String,
    },
}

/// The most events the simulator lets wait in its queue (about 40 MiB) before it ends the
/// repetition with [`SimError::TooManyEvents`]. A healthy run holds a few per CPU and per task;
/// a run whose bursts are always preempted leaves one stale burst end per preemption.
pub const MAX_PENDING_EVENTS: usize = 1 << 20;

/// The most events the simulator handles without a task finishing a burst or waking from a
/// timer before it ends the repetition with [`SimError::NoProgress`] (a run that only ticks).
pub const MAX_EVENTS_WITHOUT_PROGRESS: u64 = 1 << 26;

/// Check a configuration before anything runs: CPU count, policy, knobs.
pub fn check_setup(
    spec: &PolicySpec,
    cpus: usize,
    groups: &[(&str, &Knobs)],
) -> Result<(), SimError> {
    checked_policy(spec, cpus, groups).map(|_| ())
}

/// The policy of a configuration, built once its CPU count and knobs have been checked.
fn checked_policy(
    spec: &PolicySpec,
    cpus: usize,
    groups: &[(&str, &Knobs)],
) -> Result<Box<dyn Policy>, SimError> {
    if !(1..=policy::MAX_CPUS).contains(&cpus) {
        return Err(SimError::Cpus {
            cpus,
            max: policy::MAX_CPUS,
        });
    }
    let p = spec.build();
    p.check_cpus(cpus)
        .map_err(|e| SimError::Setup(format!("{}: {e}", spec.describe())))?;
    for (name, knobs) in groups {
        knobs
            .validate(name, cpus)
            .map_err(|e| SimError::Setup(e.to_string()))?;
        p.check_knobs(name, knobs)
            .map_err(|e| SimError::Setup(e.to_string()))?;
    }
    Ok(p)
}

/// Run one repetition of `workload` on a simulated machine.
pub fn run_repetition<W: Workload>(workload: &W, setup: SimSetup) -> Result<SimResult, SimError> {
    let plan = workload.plan();
    let groups: Vec<(&str, &Knobs)> = plan
        .groups
        .iter()
        .zip(setup.knobs)
        .map(|(g, k)| (g.name, k))
        .collect();
    let mut policy = checked_policy(setup.policy, setup.cpus, &groups)?;
    if let Some(t) = setup.topology.filter(|t| t.cpus() != setup.cpus) {
        return Err(SimError::TopologyCpus {
            topology: *t,
            logical: t.cpus(),
            cpus: setup.cpus,
        });
    }
    if let Some(t) = setup.topology {
        policy.set_topology(t);
    }
    let refs = plan.tasks();
    // The places of the tasks the groups may spawn follow the starting tasks (ids
    // `refs.len()..`): their bodies are made now and first polled when spawned.
    let slots = plan.spawn_slots();
    let watch = Watch {
        stop: setup.stop,
        budget: setup.wall_budget.map(|b| (Instant::now(), b)),
    };
    let mut shared = Shared::watched(refs.len() + slots.len(), watch);
    shared.log_passes = setup.passes;
    shared.words = (0..plan.sync.words)
        .map(|_| std::cell::Cell::new(0))
        .collect();
    let contexts: Vec<SimContext> = (0..refs.len() + slots.len())
        .map(|i| SimContext::new(&shared, i))
        .collect();
    let bodies: Vec<Body<'_, Result<(), WorkloadError>>> = (refs.iter().chain(&slots))
        .map(|t| Box::pin(workload.body(*t, &contexts[t.id])) as Body<'_, _>)
        .collect();
    let mut m = Machine::new(
        &setup,
        policy,
        &shared,
        Executor::new(bodies),
        &contexts,
        &plan,
    );
    m.start(
        &workload.start_order(),
        &workload.start_asleep(),
        &refs,
        &slots,
    );
    m.run(setup.stop, setup.wall_budget)?;
    Ok(m.finish(&plan))
}

/// A task's place in the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Blocked,
    Queued,
    Running(CpuId),
    Done,
}

/// What happens when a task's current burst of CPU work is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    /// The operation is complete: poll the body.
    Resume,
    /// The compute's closing read of the task's CPU clock (its opening read is made when the
    /// body asks for the compute, the real backend's `Context::compute`): a system call that
    /// accounts the task on the spot, after which a reschedule the policy's `update_curr` asked
    /// for switches it ([`Policy::update_curr_resched`](crate::policy::Policy::update_curr_resched));
    /// then poll the body.
    ClockRead,
    /// Deposit the pending message into a channel (or block while it is full).
    Send(usize),
    /// Take `len` bytes from a channel (or block until they are there).
    Recv(usize, usize),
    /// Take what a channel holds, at most `.1` bytes (or block until it holds any).
    RecvSome(usize, usize),
    /// Find which of the slot's `pollset` channels hold bytes, or block until one does or the
    /// deadline (ns) comes (`poll.rs`).
    Poll(Option<u64>),
    /// Sleep until a time.
    Sleep(u64),
    /// sched_yield.
    Yield,
    /// Take a lock (or block while it is held; spin, for a spin lock).
    Lock(usize),
    /// Spinning for a spin lock: the burst is a stretch of spinning ([`SPIN_CHUNK`]); at its
    /// end, take the lock if it is free or spin on.
    Spin(usize),
    /// Arrive at a barrier: the last of its parties wakes the others, anyone else blocks.
    Barrier(usize),
    /// Blocked at a barrier until its last party arrives; then the call is complete.
    AtBarrier(usize),
    /// Post a semaphore: hand the post to its first waiter, or add one to its count.
    SemPost(usize),
    /// Take one from a semaphore, or block until a post is handed over.
    SemWait(usize),
    /// Blocked on a semaphore until a post is handed over; then the call is complete.
    OnSemaphore(usize),
    /// `cond_wait(cond, lock)`: join the condition's waiters and release the lock (waking the
    /// lock's next waiter), then sleep ([`Effect::CondSleep`]).
    CondWait(usize, usize),
    /// Sleep on the condition unless signalled since [`Effect::CondWait`].
    CondSleep(usize, usize),
    /// Blocked on a condition until signalled; then take the lock again (as [`Effect::Lock`]).
    OnCond(usize, usize),
    /// A wait on a barrier, semaphore or condition that the plan's wait end ended: the call is
    /// complete (and fails, [`crate::context::Slot::cut`]); a condition's lock stays released.
    WaitCut,
    /// Wake the first waiter of a condition, if any.
    CondSignal(usize),
    /// Wake every waiter of a condition.
    CondBroadcast(usize),
    /// Wait for the device for this long.
    IoWait(u64),
    /// Loopback output through the netisr thread (the send half is done): take the connection's
    /// lock, queue the packet and wake the netisr thread (or block while the channel is full or
    /// the lock held).
    NetOutput(usize),
    /// Loopback output whose message fits in the channel, waiting for the connection's lock:
    /// take it, queue the packet and wake the netisr thread (or block while the lock is held).
    NetLock(usize),
    /// Back from `if_simloop` in the sender's system call: release the connection's lock.
    NetSent(usize),
    /// The netisr thread's receive half is done: deposit its packet.
    NetInput,
    /// The netisr thread processes the ACK of a segment on this channel under the sending
    /// connection's lock (or blocks while the sender holds it).
    NetAck(usize),
    /// At page `.0` of a walk of `.1` pages that memory pressure makes go page by page
    /// (`memory.rs`).
    Touch(u64, u64),
    /// A major fault at page `.0` of a walk of `.1`: sleep on the swap-in read of `.2` pages.
    SwapIn(u64, u64, u64),
    /// `fork` is done: start a task in group `.0` with argument `.1` (`spawn.rs`).
    Spawn(usize, u64),
    /// Wait for child `.0` (any child: `None`) to end, or block until it does (`spawn.rs`).
    Wait(Option<usize>),
    /// The body of a spawned task returned and `exit` is paid: the task is dead.
    Exit,
    /// The task's `sched_setattr`/`sched_setaffinity` of itself is paid: apply the knobs in
    /// its slot (`attrs.rs`).
    SetAttrs,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    BurstDone {
        cpu: CpuId,
        gen: u64,
    },
    Tick {
        cpu: CpuId,
    },
    Resched {
        cpu: CpuId,
    },
    Timer {
        task: TaskId,
    },
    /// The deadline of task `task`'s readiness wait number `gen` (`poll.rs`).
    PollTimeout {
        task: TaskId,
        gen: u64,
    },
    /// A device finished task `task`'s request: its interrupt wakes the disk ithread
    /// (`kthreads.rs`), which wakes the task.
    DeviceDone {
        task: TaskId,
    },
    /// The plan's wait end: every wait on a barrier, semaphore or condition ends (`sync.rs`).
    WaitEnd,
}

mod accounting;
mod address_space;
mod byte_queue;
mod clock;
mod costs;
mod cpus;
mod kthreads;
mod memory;
mod net;
mod numa;
mod paths;
mod poll;
mod sock_queue;
mod spawn;
mod steps;
mod sync;
mod tasks;
mod tcp_drain;
mod tcp_wait;
mod timeline;

mod attrs;
use address_space::AddressSpaces;
use clock::Clock;
use costs::Costs;
use cpus::Cpus;
pub use kthreads::NETISR_PRIORITY;
use kthreads::{Kernel, KernelThread};
use memory::{Memory, TaskMemory};
use net::Net;
pub use schedlab_workload::record::KERNEL_GROUP;
use sync::SyncObjects;
pub use sync::SPIN_CHUNK;
use tasks::{Task, Tasks};

/// The simulated machine of one repetition: the parts that own their state, and what binds
/// them — the policy, the tasks, and the bodies they run.
struct Machine<'a> {
    /// The clock, each CPU's current task and runnable count, as every policy hook reads them
    /// (`&self.view`, borrowed apart from `policy`): the machine's only copy of them.
    view: MachineView,
    /// What things cost: the cost model, the topology and the jitter (`costs.rs`).
    costs: Costs,
    policy: Box<dyn Policy>,
    /// The policy's picks scan ([`Policy::picks_scan`]): only then is its `last_scan_len`
    /// asked after a pick.
    picks_scan: bool,
    /// The policy's `update_curr` does something ([`Policy::charges_runtime`]): only then is it
    /// called when the machine charges a running task.
    charges_runtime: bool,
    /// The events to come and the timers among them (`clock.rs`).
    clock: Clock,
    /// Each CPU's flags and accounting, and the runqueue locks (`cpus.rs`).
    cpus: Cpus,
    /// Every task, which are the workload's and how many still run, the spawn places, and
    /// each plan group's knobs and name (`tasks.rs`).
    tasks: Tasks,
    /// Channels, socket queues, TCP and the loopback lock (`net.rs`).
    net: Net,
    /// The workload's locks, barriers, semaphores and conditions (`sync.rs`).
    sync: SyncObjects,
    /// The kernel threads that serve the network and interrupts (`kthreads.rs`).
    kernel: Kernel,
    /// RAM and paging (`memory.rs`).
    mem: Memory,
    shared: &'a Shared<'a>,
    exec: Executor<'a, Result<(), WorkloadError>>,
    /// Each workload task's context, which its body reads at every call: fetched into the cache
    /// with the body's future when the task is switched in (`prefetch.rs`).
    contexts: &'a [SimContext<'a>],
    /// The knobs of tasks that changed their own (`attrs.rs`), over their group's.
    task_knobs: std::collections::HashMap<TaskId, Knobs>,
    failure: Option<SimError>,
    /// The run-queue timeline being recorded, if asked for (`timeline.rs`).
    timeline: Option<Timeline>,
    /// The plan's wait end, ns ([`schedlab_workload::SyncPlan::wait_end`], `sync.rs`).
    wait_end: Option<u64>,
    /// Each task's process and each CPU's loaded address space, for `mm_switch`
    /// (`address_space.rs`).
    spaces: AddressSpaces,
}

impl<'a> Machine<'a> {
    fn new(
        setup: &SimSetup,
        policy: Box<dyn Policy>,
        shared: &'a Shared<'a>,
        exec: Executor<'a, Result<(), WorkloadError>>,
        contexts: &'a [SimContext<'a>],
        plan: &schedlab_workload::Plan,
    ) -> Self {
        let topology = (setup.topology.copied()).unwrap_or_else(|| Topology::flat(setup.cpus));
        let mut costs = Costs::new(setup.cost, topology, setup.seed);
        let tick = setup.cost.tick_ns();
        let tick_phases: Vec<u64> = (0..setup.cpus).map(|_| costs.next_u64() % tick).collect();
        let rq_lock_per_cpu = (0..setup.cpus).all(|c| policy.lock_domain(c) == c);
        Machine {
            view: MachineView {
                now: 0,
                ncpus: setup.cpus,
                curr: vec![None; setup.cpus],
                nr_running: vec![0; setup.cpus],
                hz: setup.cost.hz,
            },
            costs,
            picks_scan: policy.picks_scan(),
            charges_runtime: policy.charges_runtime(),
            policy,
            clock: Clock::new(setup.cpus),
            cpus: Cpus::new(tick_phases.into_iter(), rq_lock_per_cpu),
            tasks: Tasks::new(
                setup.knobs.to_vec(),
                plan.groups.iter().map(|g| g.name).collect(),
            ),
            net: Net::new(plan, setup.cost),
            sync: SyncObjects::new(plan),
            kernel: Kernel::new(CpuMask::of_list(setup.kernel_cpus, setup.cpus)),
            mem: Memory::new(setup.cost.memory),
            shared,
            exec,
            contexts,
            task_knobs: std::collections::HashMap::new(),
            failure: None,
            wait_end: (plan.sync.wait_end).map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            spaces: AddressSpaces::new(plan, setup.cpus),
            timeline: setup
                .timeline
                .then(|| Timeline::new(setup.cpus, "simulator (exact)", "all")),
        }
    }

    /// Create the tasks and release them all at time 0 in `order`; make room for the tasks
    /// the groups may spawn into `slots` (not yet born).
    fn start(
        &mut self,
        order: &[usize],
        asleep: &[(usize, std::time::Duration)],
        refs: &[schedlab_workload::TaskRef],
        slots: &[schedlab_workload::TaskRef],
    ) {
        let ncpus = self.cpus.len();
        for r in refs {
            let setup = self.workload_task_setup(r.id, r.group);
            self.policy.task_new(&self.view, &setup);
            let mut task = Task::new(r.group, None, setup.allowed.lowest().unwrap_or(0));
            task.kernel_mode = setup.knobs.kernel_mode();
            let id = self.tasks.add(task);
            debug_assert_eq!(id, r.id, "the plan numbers its tasks in order");
            self.timeline_task(r.group, setup.allowed);
        }
        for s in slots {
            let id = self.tasks.add_spawn_place(s.group);
            debug_assert_eq!(id, s.id, "the spawn places follow the starting tasks");
            // The timeline's rows are indexed by TaskId: a spawn place has its row from the
            // start, empty until a task is spawned into it.
            let allowed = self.workload_task_setup(s.id, s.group).allowed;
            self.timeline_task(s.group, allowed);
        }
        self.tasks.workload_placed();
        self.start_kernel_threads();
        if self.policy.idle_ticks() {
            let tick = self.costs.model.tick_ns();
            for cpu in 0..ncpus {
                self.cpus[cpu].tick_armed = true;
                let at = self.cpus[cpu].tick_phase.max(1).min(tick);
                self.clock.events.push(at, Event::Tick { cpu });
            }
        }
        if let Some(at) = self.wait_end {
            self.clock.timer(at, Event::WaitEnd);
        }
        // A task that starts asleep has slept since 0 (`slept_at`); a timer wakes it.
        for &(t, until) in asleep {
            let at = u64::try_from(until.as_nanos()).unwrap_or(u64::MAX);
            self.clock.timer(at, Event::Timer { task: t });
        }
        for &t in order {
            if !asleep.iter().any(|&(a, _)| a == t) {
                self.wake(t, None, true);
            }
        }
    }

    /// What the policy learns of workload task `id` of group `group` when it is created.
    fn workload_task_setup(&self, id: TaskId, group: usize) -> TaskSetup {
        let k = self.tasks.knobs(group);
        let allowed = CpuMask::of_list(k.cpus.as_ref(), self.cpus.len());
        TaskSetup {
            id,
            group,
            knobs: k,
            allowed,
            kind: TaskKind::Workload,
        }
    }

    fn run(&mut self, stop: Option<&AtomicBool>, budget: Option<Duration>) -> Result<(), SimError> {
        let started = Instant::now();
        let mut progress_at = 0u64;
        while self.tasks.live() > 0 {
            let n = self.clock.events.popped();
            if n.is_multiple_of(1024) {
                if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                    self.shared.stop.set(true);
                    return Err(SimError::Interrupted);
                }
                self.check_budget(n - progress_at)?;
                // With no task runnable and no timer pending, nothing can wake anybody: a
                // deadlock, even for a policy whose idle CPUs keep ticking (the queue never
                // empties then).
                if self.clock.timers == 0 && self.view.nr_running.iter().all(|&r| r == 0) {
                    return Err(SimError::Deadlock(self.describe_blocked()));
                }
                if let Some(b) = budget {
                    if n.is_multiple_of(65536) && started.elapsed() > b {
                        return Err(SimError::Timeout {
                            budget: b,
                            simulated_ns: self.view.now,
                            events: n + self.clock.dropped,
                            doing: String::new(),
                        });
                    }
                }
            }
            let Some((at, event)) = self.clock.events.pop() else {
                return Err(SimError::Deadlock(self.describe_blocked()));
            };
            debug_assert!(at >= self.view.now, "time goes forward");
            self.view.now = at;
            self.shared.now.set(at);
            match event {
                Event::BurstDone { cpu, gen } => {
                    if gen == self.cpus[cpu].gen {
                        progress_at = n;
                        let t = self.view.curr[cpu].expect("a burst runs a task");
                        self.account_curr(cpu, t);
                        self.step(cpu, t);
                    }
                }
                Event::Tick { cpu } => {
                    if self.tick(cpu) {
                        progress_at = n;
                    }
                }
                Event::Resched { cpu } => {
                    self.cpus[cpu].kick_pending = false;
                    match self.view.curr[cpu] {
                        None => self.schedule(cpu, None),
                        Some(_) if self.resched_due(cpu) => self.preempt(cpu),
                        Some(_) => {}
                    }
                }
                Event::Timer { task } => {
                    self.clock.timer_fired();
                    progress_at = n;
                    self.wake(task, None, false);
                }
                Event::PollTimeout { task, gen } => {
                    self.clock.timer_fired();
                    progress_at = n;
                    self.poll_timeout(task, gen);
                }
                Event::DeviceDone { task } => {
                    self.clock.timer_fired();
                    progress_at = n;
                    self.device_interrupt(task);
                }
                Event::WaitEnd => {
                    self.clock.timer_fired();
                    progress_at = n;
                    self.end_waits();
                }
            }
            // Asked before it is taken: a `take` wrote the field back at every event.
            if self.failure.is_some() {
                return Err(self.take_failure());
            }
        }
        // A body that saw the watch's stop in its stop check may have ended quietly (a preset's
        // loop ends on a stop): the run is still interrupted or out of time.
        if self.shared.halt().is_some() {
            self.failure = Some(SimError::Interrupted);
            return Err(self.take_failure());
        }
        Ok(())
    }

    /// The run's failure: what a task's body or the machine found, or — when the watch ended
    /// the run from inside a body or the step loop (`Shared::look`) — the interruption or the
    /// timeout, naming the task that held the machine if the clock stood still.
    #[cold]
    #[inline(never)]
    fn take_failure(&mut self) -> SimError {
        let failure = self.failure.take().expect("a failure");
        let task = match &failure {
            SimError::Task { task, .. } => Some(*task),
            SimError::Timeout { .. } => return failure,
            _ => None,
        };
        match self.shared.halt() {
            None => failure,
            Some(Halt::Interrupted) => SimError::Interrupted,
            Some(Halt::Timeout { frozen }) => SimError::Timeout {
                budget: self.shared.budget().unwrap_or_default(),
                simulated_ns: self.view.now,
                events: self.clock.handled(),
                doing: match task {
                    Some(t) if frozen => format!(
                        "; task {t} (group {}) ran on at {} simulated without the clock moving: {}",
                        self.group_name(t),
                        schedlab_workload::duration::format_duration(Duration::from_nanos(
                            self.view.now
                        )),
                        self.stuck_doing(t)
                    ),
                    _ => String::new(),
                },
            },
        }
    }

    /// The name of task `t`'s group (`kernel` for the machine's own threads).
    fn group_name(&self, t: TaskId) -> &'static str {
        self.tasks.group_name(t)
    }

    /// What task `t`, found running without the simulated clock moving, was doing.
    fn stuck_doing(&self, t: TaskId) -> String {
        match self.tasks[t].then {
            Effect::Resume | Effect::ClockRead => "its steps take no simulated time (counts, timers, computes or touches of nothing), so only the wall clock bounds the loop around them".into(),
            other => format!("its requests take no simulated time (the last: {other:?}) with this cost profile"),
        }
    }

    /// End the run if its queue outgrew the memory budget or it made no progress for too long.
    fn check_budget(&self, since_progress: u64) -> Result<(), SimError> {
        let pending = self.clock.events.len();
        if pending > MAX_PENDING_EVENTS {
            return Err(SimError::TooManyEvents {
                pending,
                mib: (pending * self.clock.events.entry_size()) >> 20,
                limit: MAX_PENDING_EVENTS,
                state: self.describe_progress(),
            });
        }
        if since_progress > MAX_EVENTS_WITHOUT_PROGRESS {
            return Err(SimError::NoProgress {
                events: since_progress,
                state: self.describe_progress(),
            });
        }
        Ok(())
    }

    /// Where the run stands, for a budget's message: simulated time, live tasks, and the
    /// likely cause.
    fn describe_progress(&self) -> String {
        format!(
            "{} of {} tasks still running at {} simulated; a run that only preempts usually has costs too long against the tick ({}, HZ={})",
            self.tasks.live(),
            self.tasks.workload().len(),
            schedlab_workload::duration::format_duration(Duration::from_nanos(self.view.now)),
            self.costs.model.profile,
            self.costs.model.hz
        )
    }

    fn describe_blocked(&self) -> String {
        let waiting: Vec<String> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state == State::Blocked && t.kthread.is_none())
            .take(5)
            .map(|(i, t)| match t.then {
                Effect::Send(ch) => format!("task {i} waits to send on full channel {ch}"),
                Effect::Recv(ch, _) | Effect::RecvSome(ch, _) => {
                    format!("task {i} waits for bytes on channel {ch}")
                }
                Effect::Poll(_) => format!("task {i} waits for bytes on any of its channels"),
                Effect::Lock(l) => format!("task {i} waits for lock {l}"),
                Effect::AtBarrier(b) => {
                    let bar = &self.sync.barriers[b];
                    format!(
                        "task {i} waits at barrier {b} ({} of {} arrived)",
                        bar.waiters.len(),
                        bar.parties
                    )
                }
                Effect::OnSemaphore(s) => format!("task {i} waits on semaphore {s}"),
                Effect::OnCond(c, _) => format!("task {i} waits on condition {c}"),
                other => format!("task {i} is blocked ({other:?})"),
            })
            .collect();
        format!("{} tasks remain; {}", self.tasks.live(), waiting.join("; "))
    }
}
