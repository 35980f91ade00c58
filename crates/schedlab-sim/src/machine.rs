//! The simulated machine: CPUs, the clock, accounting, the cost model, and the mechanism around a
//! policy — the wakeup path, the context switch, the tick — as kernel/sched/core.c is around the
//! scheduling classes.
//!
//! How a task runs. A task's body is polled (in zero simulated time) until it makes a context
//! call; the call becomes an operation with a CPU cost (system call, message copy, …) followed by
//! an effect (deposit the message, block until bytes arrive, sleep, yield). The task's CPU works
//! off the cost in a *burst*; a tick or a reschedule IPI can interrupt the burst, and the rest is
//! worked off when the task runs again. Effects that block take the task off the CPU (a voluntary
//! switch); whoever makes its condition true wakes it up through [`Machine::wake`], which asks the
//! policy where the task goes (`select_task_rq`) and whether it preempts (`wakeup_preempt`).
//!
//! Timing rules:
//! - a remote CPU learns of a wakeup or a reschedule after `ipi`; an idle CPU also pays
//!   `idle_exit`; a reschedule on the waker's own CPU happens as its system call returns;
//! - the context switch (`switch`), the runqueue lock (`rq_lock`, plus `scan` per task examined,
//!   waiting while another CPU holds the same lock) and a migrated task's cache refill
//!   (`migration`) are charged to the task being switched in, as the kernel's accounting does;
//! - ticks run at `hz` on busy CPUs (NO_HZ idle), or on every CPU for policies that want idle
//!   ticks; each costs `tick` to the interrupted task.
//!
//! Counters are exact: voluntary switches (the task blocked), involuntary ones (preempted or
//! yielded, and another task ran — Linux counts a yield as involuntary too), migrations (a task's
//! runqueue changed), wakeups (the start of the run is not one) and wakeups that preempted the
//! running task, per-CPU busy/idle time and runqueue length over time.

use crate::context::{Op, Shared, SimContext};
use crate::cost::CostModel;
use crate::engine::{Body, EventQueue, Executor};
use crate::policy::{
    self, BalanceKind, CpuId, CpuMask, DequeueKind, EnqueueKind, MachineView, Move, Policy,
    PolicySpec, PutPrevKind, TaskId, TaskSetup,
};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use schedlab_workload::knobs::Knobs;
use schedlab_workload::presets::{Outcome, TaskOutcome};
use schedlab_workload::record::{Counters, CpuCounters};
use schedlab_workload::{IoKind, Transport, Workload, WorkloadError};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one simulated repetition needs besides the workload.
pub struct SimSetup<'a> {
    /// The policy and its parameters.
    pub policy: &'a PolicySpec,
    /// Number of simulated CPUs.
    pub cpus: usize,
    /// The cost model.
    pub cost: &'a CostModel,
    /// The seed of this repetition.
    pub seed: u64,
    /// Knobs per plan group (validated, and checked by the policy).
    pub knobs: &'a [Knobs],
    /// Set from outside (Ctrl-C) to stop early.
    pub stop: Option<&'a AtomicBool>,
    /// Wall-clock budget for the repetition.
    pub wall_budget: Option<Duration>,
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
}

/// Why a simulated repetition failed.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// Bad setup (CPU count, a knob the policy has no notion of).
    Setup(String),
    /// A task body failed.
    Task {
        /// The task.
        task: TaskId,
        /// Its error.
        error: WorkloadError,
    },
    /// Every remaining task waits for something that can no longer happen.
    Deadlock(String),
    /// Stopped from outside.
    Interrupted,
    /// The wall-clock budget ran out.
    Timeout(Duration),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Setup(s) => f.write_str(s),
            SimError::Task { task, error } => write!(f, "task {task}: {error}"),
            SimError::Deadlock(s) => write!(f, "simulation deadlocked: {s}"),
            SimError::Interrupted => f.write_str("interrupted"),
            SimError::Timeout(d) => write!(
                f,
                "the simulation exceeded its wall-clock budget of {} (use --timeout)",
                schedlab_workload::duration::format_duration(*d)
            ),
        }
    }
}

impl std::error::Error for SimError {}

/// Check a configuration before anything runs: CPU count, policy, knobs.
pub fn check_setup(
    spec: &PolicySpec,
    cpus: usize,
    groups: &[(&str, &Knobs)],
) -> Result<(), String> {
    checked_policy(spec, cpus, groups).map(|_| ())
}

/// The policy of a configuration, built once its CPU count and knobs have been checked.
fn checked_policy(
    spec: &PolicySpec,
    cpus: usize,
    groups: &[(&str, &Knobs)],
) -> Result<Box<dyn Policy>, String> {
    if !(1..=policy::MAX_CPUS).contains(&cpus) {
        return Err(format!(
            "--cpus {cpus} is not accepted for the simulator; use 1..{}",
            policy::MAX_CPUS
        ));
    }
    let p = spec.build();
    for (name, knobs) in groups {
        knobs.validate(name, cpus)?;
        p.check_knobs(name, knobs).map_err(|e| e.to_string())?;
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
    let policy = checked_policy(setup.policy, setup.cpus, &groups).map_err(SimError::Setup)?;
    let refs = plan.tasks();
    let shared = Shared::new(refs.len());
    let contexts: Vec<SimContext> = (0..refs.len())
        .map(|i| SimContext::new(&shared, i))
        .collect();
    let bodies: Vec<Body<'_, Result<(), WorkloadError>>> = refs
        .iter()
        .map(|t| Box::pin(workload.body(*t, &contexts[t.id])) as Body<'_, _>)
        .collect();
    let mut m = Machine::new(&setup, policy, &shared, Executor::new(bodies), &plan);
    m.start(&workload.start_order(), &refs, setup.knobs);
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
    /// Deposit the pending message into a channel (or block while it is full).
    Send(usize),
    /// Take `len` bytes from a channel (or block until they are there).
    Recv(usize, usize),
    /// Sleep until a time.
    Sleep(u64),
    /// sched_yield.
    Yield,
    /// Take a lock (or block while it is held).
    Lock(usize),
    /// Wait for the device for this long.
    IoWait(u64),
}

struct Task {
    group: usize,
    state: State,
    /// The CPU whose runqueue the task is on (or was, while blocked).
    rq_cpu: CpuId,
    last_ran: Option<CpuId>,
    remaining: u64,
    then: Effect,
    slept_at: u64,
    finished_at: u64,
    cpu_ns: u64,
    nvcsw: u64,
    nivcsw: u64,
    migrations: u64,
    wakeups: u64,
    wakeup_preemptions: u64,
}

#[derive(Default)]
struct Cpu {
    /// Invalidates burst-end events when the running burst changes.
    gen: u64,
    need_resched: bool,
    kick_pending: bool,
    tick_armed: bool,
    tick_phase: u64,
    last_account: u64,
    busy_since: Option<u64>,
    idle_since: Option<u64>,
    busy_ns: u64,
    idle_ns: u64,
    rq_area: u128,
    rq_last: u64,
    rq_max: usize,
}

#[derive(Default)]
struct Channel {
    bytes: VecDeque<u8>,
    reader: Option<(TaskId, usize)>,
    writers: Vec<TaskId>,
}

#[derive(Default)]
struct SimLock {
    holder: Option<TaskId>,
    waiters: VecDeque<TaskId>,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    BurstDone { cpu: CpuId, gen: u64 },
    Tick { cpu: CpuId },
    Resched { cpu: CpuId },
    Timer { task: TaskId },
}

/// Builds a [`MachineView`] from the machine's fields without borrowing the policy.
macro_rules! view {
    ($m:ident) => {
        MachineView {
            now: $m.now,
            ncpus: $m.cpus.len(),
            curr: &$m.curr,
            nr_running: &$m.nr_running,
            hz: $m.cost.hz,
        }
    };
}

/// The simulated machine of one repetition.
struct Machine<'a> {
    now: u64,
    cost: CostModel,
    rng: Xoshiro256PlusPlus,
    policy: Box<dyn Policy>,
    events: EventQueue<Event>,
    cpus: Vec<Cpu>,
    curr: Vec<Option<TaskId>>,
    nr_running: Vec<usize>,
    tasks: Vec<Task>,
    channels: Vec<Channel>,
    locks: Vec<SimLock>,
    /// When each runqueue lock is next free.
    rq_lock_free: Vec<u64>,
    msg_cost: u64,
    /// The cost model's jitter in parts per million.
    jitter_ppm: u64,
    shared: &'a Shared,
    exec: Executor<'a, Result<(), WorkloadError>>,
    live: usize,
    failure: Option<SimError>,
}

impl<'a> Machine<'a> {
    fn new(
        setup: &SimSetup,
        policy: Box<dyn Policy>,
        shared: &'a Shared,
        exec: Executor<'a, Result<(), WorkloadError>>,
        plan: &schedlab_workload::Plan,
    ) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(setup.seed);
        let tick = setup.cost.tick_ns();
        let cpus = (0..setup.cpus)
            .map(|_| Cpu {
                tick_phase: rng.next_u64() % tick,
                idle_since: Some(0),
                ..Cpu::default()
            })
            .collect();
        let net = matches!(plan.transport, Transport::Tcp | Transport::Udp);
        Machine {
            now: 0,
            cost: setup.cost.clone(),
            rng,
            policy,
            events: EventQueue::default(),
            cpus,
            curr: vec![None; setup.cpus],
            nr_running: vec![0; setup.cpus],
            tasks: Vec::new(),
            channels: (0..plan.channels).map(|_| Channel::default()).collect(),
            locks: (0..plan.locks).map(|_| SimLock::default()).collect(),
            rq_lock_free: vec![0; setup.cpus],
            msg_cost: if net {
                setup.cost.net_msg
            } else {
                setup.cost.msg
            },
            jitter_ppm: (setup.cost.jitter * 1e6).round() as u64,
            shared,
            exec,
            live: 0,
            failure: None,
        }
    }

    /// A cost with this repetition's jitter.
    fn c(&mut self, base: u64) -> u64 {
        // Uniform in base·(1 ± jitter), in integer arithmetic (this runs several times per event).
        let span = base * self.jitter_ppm / 1_000_000;
        if span == 0 {
            return base;
        }
        // Lemire's multiply-shift maps the 64 random bits onto 0..=2·span without a division.
        let r = ((self.rng.next_u64() as u128 * (2 * span + 1) as u128) >> 64) as u64;
        base - span + r
    }

    fn copy_cost(&mut self, bytes: usize) -> u64 {
        let base = (bytes as u64 * self.cost.copy_per_kib).div_ceil(1024);
        self.c(base)
    }

    /// Create the tasks and release them all at time 0 in `order`.
    fn start(&mut self, order: &[usize], refs: &[schedlab_workload::TaskRef], knobs: &[Knobs]) {
        let ncpus = self.cpus.len();
        for r in refs {
            let k = knobs.get(r.group).cloned().unwrap_or_default();
            let allowed = match &k.cpus {
                Some(list) => CpuMask(list.iter().fold(0, |m, &c| m | (1u64 << c))),
                None => CpuMask::first(ncpus),
            };
            let setup = TaskSetup {
                id: r.id,
                group: r.group,
                knobs: k,
                allowed,
            };
            self.policy.task_new(&view!(self), &setup);
            self.tasks.push(Task {
                group: r.group,
                state: State::Blocked,
                rq_cpu: allowed.lowest().unwrap_or(0),
                last_ran: None,
                remaining: 0,
                then: Effect::Resume,
                slept_at: 0,
                finished_at: 0,
                cpu_ns: 0,
                nvcsw: 0,
                nivcsw: 0,
                migrations: 0,
                wakeups: 0,
                wakeup_preemptions: 0,
            });
        }
        self.live = refs.len();
        if self.policy.idle_ticks() {
            let tick = self.cost.tick_ns();
            for cpu in 0..ncpus {
                self.cpus[cpu].tick_armed = true;
                let at = self.cpus[cpu].tick_phase.max(1).min(tick);
                self.events.push(at, Event::Tick { cpu });
            }
        }
        for &t in order {
            self.wake(t, None, true);
        }
    }

    fn run(&mut self, stop: Option<&AtomicBool>, budget: Option<Duration>) -> Result<(), SimError> {
        let started = Instant::now();
        while self.live > 0 {
            let n = self.events.popped();
            if n.is_multiple_of(1024) {
                if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                    self.shared.stop.set(true);
                    return Err(SimError::Interrupted);
                }
                if let Some(b) = budget {
                    if n.is_multiple_of(65536) && started.elapsed() > b {
                        return Err(SimError::Timeout(b));
                    }
                }
            }
            let Some((at, event)) = self.events.pop() else {
                return Err(SimError::Deadlock(self.describe_blocked()));
            };
            debug_assert!(at >= self.now, "time goes forward");
            self.now = at;
            self.shared.now.set(at);
            match event {
                Event::BurstDone { cpu, gen } => {
                    if gen == self.cpus[cpu].gen {
                        self.account(cpu);
                        let t = self.curr[cpu].expect("a burst runs a task");
                        self.step(cpu, t);
                    }
                }
                Event::Tick { cpu } => self.tick(cpu),
                Event::Resched { cpu } => {
                    self.cpus[cpu].kick_pending = false;
                    match self.curr[cpu] {
                        None => self.schedule(cpu, None),
                        Some(_) if self.cpus[cpu].need_resched => self.preempt(cpu),
                        Some(_) => {}
                    }
                }
                Event::Timer { task } => {
                    self.wake(task, None, false);
                }
            }
            if let Some(e) = self.failure.take() {
                return Err(e);
            }
        }
        Ok(())
    }

    fn describe_blocked(&self) -> String {
        let waiting: Vec<String> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state == State::Blocked)
            .take(5)
            .map(|(i, t)| match t.then {
                Effect::Send(ch) => format!("task {i} waits to send on full channel {ch}"),
                Effect::Recv(ch, _) => format!("task {i} waits for bytes on channel {ch}"),
                Effect::Lock(l) => format!("task {i} waits for lock {l}"),
                other => format!("task {i} is blocked ({other:?})"),
            })
            .collect();
        format!("{} tasks remain; {}", self.live, waiting.join("; "))
    }

    /// Charge the running task of `cpu` for the time since it was last charged.
    fn account(&mut self, cpu: CpuId) {
        let delta = self.now - self.cpus[cpu].last_account;
        self.cpus[cpu].last_account = self.now;
        if let Some(t) = self.curr[cpu] {
            if delta > 0 {
                let task = &mut self.tasks[t];
                task.cpu_ns += delta;
                task.remaining = task.remaining.saturating_sub(delta);
                self.policy.update_curr(&view!(self), cpu, t, delta);
            }
        }
    }

    fn rq_change(&mut self, cpu: CpuId, up: bool) {
        let c = &mut self.cpus[cpu];
        c.rq_area += self.nr_running[cpu] as u128 * (self.now - c.rq_last) as u128;
        c.rq_last = self.now;
        if up {
            self.nr_running[cpu] += 1;
            c.rq_max = c.rq_max.max(self.nr_running[cpu]);
        } else {
            self.nr_running[cpu] -= 1;
        }
    }

    /// Take runqueue lock `domain` for `hold` ns from now; returns wait + hold.
    fn rq_lock(&mut self, domain: usize, hold: u64) -> u64 {
        let start = self.rq_lock_free[domain].max(self.now);
        self.rq_lock_free[domain] = start + hold;
        start + hold - self.now
    }

    /// Start (or restart) the burst of the running task of `cpu`.
    fn run_burst(&mut self, cpu: CpuId) {
        let t = self.curr[cpu].expect("running task");
        self.cpus[cpu].gen += 1;
        let at = self.now + self.tasks[t].remaining;
        self.events.push(
            at,
            Event::BurstDone {
                cpu,
                gen: self.cpus[cpu].gen,
            },
        );
    }

    /// Apply the effects of task `t`, current on `cpu`, whose burst is done; poll its body as
    /// needed; stop when it has CPU work to do, or has left the CPU.
    fn step(&mut self, cpu: CpuId, t: TaskId) {
        loop {
            debug_assert_eq!(self.tasks[t].remaining, 0);
            let effect = self.tasks[t].then;
            self.tasks[t].then = Effect::Resume;
            match effect {
                Effect::Resume => {
                    if !self.poll(cpu, t) {
                        return; // finished; the CPU has moved on
                    }
                }
                Effect::Send(ch) => {
                    let mut slot = self.shared.slots[t].borrow_mut();
                    let chan = &mut self.channels[ch];
                    let len = slot.outbuf.len();
                    let room = chan.bytes.is_empty()
                        || (chan.bytes.len() + len) as u64 <= self.cost.channel_bytes;
                    if !room {
                        drop(slot);
                        chan.writers.push(t);
                        self.tasks[t].then = Effect::Send(ch);
                        self.block(cpu, t);
                        return;
                    }
                    chan.bytes.extend(slot.outbuf.iter());
                    slot.outbuf.clear();
                    let wake = match chan.reader {
                        Some((r, need)) if chan.bytes.len() >= need => {
                            chan.reader = None;
                            Some(r)
                        }
                        _ => None,
                    };
                    drop(slot);
                    if let Some(r) = wake {
                        self.tasks[t].remaining += self.wake(r, Some(cpu), false);
                    }
                }
                Effect::Recv(ch, len) => {
                    let chan = &mut self.channels[ch];
                    if chan.bytes.len() < len {
                        chan.reader = Some((t, len));
                        self.tasks[t].then = Effect::Recv(ch, len);
                        self.block(cpu, t);
                        return;
                    }
                    {
                        let mut slot = self.shared.slots[t].borrow_mut();
                        slot.inbuf.clear();
                        let (a, b) = chan.bytes.as_slices();
                        let from_a = len.min(a.len());
                        slot.inbuf.extend_from_slice(&a[..from_a]);
                        slot.inbuf.extend_from_slice(&b[..len - from_a]);
                        chan.bytes.drain(..len);
                    }
                    let writers = std::mem::take(&mut chan.writers);
                    let mut cost = self.copy_cost(len);
                    for w in writers {
                        cost += self.wake(w, Some(cpu), false);
                    }
                    self.tasks[t].remaining += cost;
                }
                Effect::Sleep(until) => {
                    if until > self.now {
                        self.events.push(until, Event::Timer { task: t });
                        self.block(cpu, t);
                        return;
                    }
                }
                Effect::Yield => {
                    if self.policy.yield_task(&view!(self), cpu, t) {
                        self.reschedule(cpu, t, PutPrevKind::Yielded);
                        return;
                    }
                }
                Effect::Lock(l) => {
                    let lock = &mut self.locks[l];
                    if lock.holder.is_some() {
                        lock.waiters.push_back(t);
                        self.tasks[t].then = Effect::Lock(l);
                        self.block(cpu, t);
                        return;
                    }
                    lock.holder = Some(t);
                }
                Effect::IoWait(ns) => {
                    self.events.push(self.now + ns, Event::Timer { task: t });
                    self.block(cpu, t);
                    return;
                }
            }
            if self.cpus[cpu].need_resched {
                self.preempt(cpu);
                return;
            }
            if self.tasks[t].remaining > 0 {
                self.run_burst(cpu);
                return;
            }
        }
    }

    /// Poll task `t`'s body and turn its next request into a burst and an effect. Returns false
    /// if the body finished (or failed).
    fn poll(&mut self, cpu: CpuId, t: TaskId) -> bool {
        self.shared.slots[t].borrow_mut().done = true;
        let finished = self.exec.poll(t);
        let unlocks = std::mem::take(&mut self.shared.slots[t].borrow_mut().unlocks);
        for l in unlocks {
            self.unlock(cpu, t, l);
        }
        if let Some(result) = finished {
            if let Err(error) = result {
                self.failure = Some(SimError::Task { task: t, error });
            }
            self.exit(cpu, t);
            return false;
        }
        let Some(op) = self.shared.slots[t].borrow_mut().request.take() else {
            self.failure = Some(SimError::Task {
                task: t,
                error: WorkloadError::Backend(
                    "the body awaited a future that is not a simulator context call".into(),
                ),
            });
            self.exit(cpu, t);
            return false;
        };
        let syscall = self.c(self.cost.syscall);
        let (cost, then) = match op {
            Op::Compute(ns) => (ns, Effect::Resume),
            Op::Send(ch) => {
                let len = self.shared.slots[t].borrow().outbuf.len();
                let m = self.c(self.msg_cost);
                (syscall + m + self.copy_cost(len), Effect::Send(ch))
            }
            Op::Recv(ch, len) => (syscall + self.c(self.msg_cost), Effect::Recv(ch, len)),
            Op::SleepUntil(until) => (syscall, Effect::Sleep(until)),
            Op::Yield => (syscall, Effect::Yield),
            Op::Lock(l) => (syscall, Effect::Lock(l)),
            Op::Io(IoKind::Truncate, _) => (syscall, Effect::Resume),
            Op::Io(kind, bytes) => {
                let device = self.cost.io_latency
                    + (bytes as u64 * self.cost.io_per_kib).div_ceil(1024)
                        / if kind == IoKind::Read { 1 } else { 2 };
                let device = self.c(device);
                (syscall + self.copy_cost(bytes), Effect::IoWait(device))
            }
            Op::Touch(bytes) => {
                let pages = (bytes as u64).div_ceil(4096);
                let c = self.c(self.cost.page_touch);
                (pages * c, Effect::Resume)
            }
        };
        let task = &mut self.tasks[t];
        task.remaining += cost;
        task.then = then;
        true
    }

    fn unlock(&mut self, cpu: CpuId, t: TaskId, l: usize) {
        let lock = &mut self.locks[l];
        if lock.holder == Some(t) {
            lock.holder = None;
            if let Some(w) = lock.waiters.pop_front() {
                let cost = self.wake(w, Some(cpu), false);
                self.tasks[t].remaining += cost;
            }
        }
    }

    /// The running task `t` of `cpu` blocks.
    fn block(&mut self, cpu: CpuId, t: TaskId) {
        self.tasks[t].state = State::Blocked;
        self.tasks[t].slept_at = self.now;
        self.policy
            .dequeue_task(&view!(self), cpu, t, DequeueKind::Sleep);
        self.curr[cpu] = None;
        self.rq_change(cpu, false);
        self.tasks[t].nvcsw += 1;
        self.schedule(cpu, Some(t));
    }

    fn exit(&mut self, cpu: CpuId, t: TaskId) {
        self.tasks[t].state = State::Done;
        self.tasks[t].finished_at = self.now;
        self.live -= 1;
        self.policy
            .dequeue_task(&view!(self), cpu, t, DequeueKind::Exit);
        self.curr[cpu] = None;
        self.rq_change(cpu, false);
        self.schedule(cpu, Some(t));
    }

    /// The running task `t` stays runnable but leaves the CPU (preempted or yielding).
    fn reschedule(&mut self, cpu: CpuId, t: TaskId, kind: PutPrevKind) {
        self.policy.put_prev_task(&view!(self), cpu, t, kind);
        self.tasks[t].state = State::Queued;
        self.curr[cpu] = None;
        self.schedule(cpu, Some(t));
        if self.curr[cpu] != Some(t) {
            self.tasks[t].nivcsw += 1;
            if kind == PutPrevKind::Preempted {
                if let Some(mv) = self.policy.schedule_tail(&view!(self), cpu, t) {
                    self.apply_moves(cpu, &[mv]);
                }
            }
        }
    }

    /// Interrupt the running task of `cpu` and let the policy choose again.
    fn preempt(&mut self, cpu: CpuId) {
        self.account(cpu);
        let t = self.curr[cpu].expect("preempting a running task");
        self.reschedule(cpu, t, PutPrevKind::Preempted);
    }

    /// Pick the next task for `cpu` (whose current task, `prev`, has just left it) and switch.
    fn schedule(&mut self, cpu: CpuId, prev: Option<TaskId>) {
        self.cpus[cpu].need_resched = false;
        self.cpus[cpu].gen += 1;
        let mut next = self.policy.pick_next_task(&view!(self), cpu);
        if next.is_none() {
            let moves = self.policy.balance(&view!(self), cpu, BalanceKind::NewIdle);
            self.apply_moves(cpu, &moves);
            next = self.policy.pick_next_task(&view!(self), cpu);
        }
        let Some(n) = next else {
            let c = &mut self.cpus[cpu];
            if let Some(since) = c.busy_since.take() {
                c.busy_ns += self.now - since;
                c.idle_since = Some(self.now);
            }
            return;
        };
        let from = self.tasks[n].rq_cpu;
        if from != cpu {
            // A shared run list (Linux 2.4, 4BSD) or a steal in schedule() (IBM MQ): the task
            // was queued for another CPU and this one took it.
            self.rq_change(from, false);
            self.rq_change(cpu, true);
            self.tasks[n].rq_cpu = cpu;
            self.tasks[n].migrations += 1;
        }
        let scanned = self.policy.last_scan_len(cpu) as u64;
        let hold = self.c(self.cost.rq_lock) + scanned * self.cost.scan;
        let domain = self.policy.lock_domain(cpu);
        let mut cost = self.rq_lock(domain, hold);
        if prev != Some(n) {
            cost += self.c(self.cost.switch);
            if self.tasks[n].last_ran.is_some_and(|c| c != cpu) {
                cost += self.c(self.cost.migration);
            }
        }
        let task = &mut self.tasks[n];
        task.state = State::Running(cpu);
        task.last_ran = Some(cpu);
        task.remaining += cost;
        self.curr[cpu] = Some(n);
        let c = &mut self.cpus[cpu];
        c.last_account = self.now;
        if let Some(since) = c.idle_since.take() {
            c.idle_ns += self.now - since;
            c.busy_since = Some(self.now);
        }
        if !c.tick_armed {
            c.tick_armed = true;
            let tick = self.cost.tick_ns();
            let next_tick = (self.now / tick + 1) * tick + c.tick_phase;
            self.events.push(next_tick, Event::Tick { cpu });
        }
        self.run_burst(cpu);
    }

    /// Wake `t` (blocked). `waker` is the CPU of the task that woke it, if any. Returns the CPU
    /// time the waker spends on it.
    fn wake(&mut self, t: TaskId, waker: Option<CpuId>, start: bool) -> u64 {
        debug_assert_eq!(self.tasks[t].state, State::Blocked);
        let slept = self.now - self.tasks[t].slept_at;
        let prev = self.tasks[t].rq_cpu;
        let cpu = self.policy.select_task_rq(&view!(self), t, prev, waker);
        if cpu != prev && !start {
            self.tasks[t].migrations += 1;
        }
        self.tasks[t].rq_cpu = cpu;
        self.tasks[t].state = State::Queued;
        self.rq_change(cpu, true);
        let kind = if start {
            EnqueueKind::New
        } else {
            self.tasks[t].wakeups += 1;
            EnqueueKind::Wakeup { slept_ns: slept }
        };
        self.policy.enqueue_task(&view!(self), cpu, t, kind);
        let mut cost = 0;
        if waker.is_some() {
            cost += self.c(self.cost.wakeup);
            let hold = self.c(self.cost.rq_lock);
            let domain = self.policy.lock_domain(cpu);
            cost += self.rq_lock(domain, hold);
        }
        match self.curr[cpu] {
            None if start || self.policy.wakeup_kicks_idle(cpu) => self.kick(cpu, waker, start),
            None => {} // the idle CPU finds it at its next tick
            Some(c) => {
                if waker != Some(cpu) {
                    self.account(cpu);
                }
                if self.policy.wakeup_preempt(&view!(self), cpu, c, t) {
                    if !start {
                        self.tasks[t].wakeup_preemptions += 1;
                    }
                    self.resched(cpu, waker);
                }
            }
        }
        cost
    }

    /// Make idle `cpu` look at its runqueue.
    fn kick(&mut self, cpu: CpuId, from: Option<CpuId>, start: bool) {
        if self.cpus[cpu].kick_pending {
            return;
        }
        self.cpus[cpu].kick_pending = true;
        let delay = if start {
            0
        } else {
            let ipi = if from.is_some_and(|f| f != cpu) {
                self.c(self.cost.ipi)
            } else {
                0
            };
            ipi + self.c(self.cost.idle_exit)
        };
        self.events.push(self.now + delay, Event::Resched { cpu });
    }

    /// Ask busy `cpu` to reschedule: at once if `from` is `cpu` itself (the waker's system call
    /// returns through schedule), else by IPI.
    fn resched(&mut self, cpu: CpuId, from: Option<CpuId>) {
        self.cpus[cpu].need_resched = true;
        if from == Some(cpu) || self.cpus[cpu].kick_pending {
            return;
        }
        self.cpus[cpu].kick_pending = true;
        let delay = if from.is_some() {
            self.c(self.cost.ipi)
        } else {
            0
        };
        self.events.push(self.now + delay, Event::Resched { cpu });
    }

    /// Bookkeeping for tasks a policy moved between runqueues. `here` is the CPU that balanced.
    fn apply_moves(&mut self, here: CpuId, moves: &[Move]) {
        for mv in moves {
            debug_assert_eq!(self.tasks[mv.task].state, State::Queued);
            self.rq_change(mv.from, false);
            self.rq_change(mv.to, true);
            self.tasks[mv.task].rq_cpu = mv.to;
            self.tasks[mv.task].migrations += 1;
            if mv.to == here {
                continue;
            }
            match self.curr[mv.to] {
                None => self.kick(mv.to, Some(here), false),
                Some(c) => {
                    self.account(mv.to);
                    if self.policy.wakeup_preempt(&view!(self), mv.to, c, mv.task) {
                        self.resched(mv.to, Some(here));
                    }
                }
            }
        }
    }

    fn tick(&mut self, cpu: CpuId) {
        let tick = self.cost.tick_ns();
        match self.curr[cpu] {
            Some(t) => {
                self.account(cpu);
                self.tasks[t].remaining += self.c(self.cost.tick);
                let expired = self.policy.task_tick(&view!(self), cpu, t);
                let moves = self
                    .policy
                    .balance(&view!(self), cpu, BalanceKind::Periodic);
                self.apply_moves(cpu, &moves);
                if expired || self.cpus[cpu].need_resched {
                    self.preempt(cpu);
                } else {
                    self.run_burst(cpu);
                }
            }
            None if self.policy.idle_ticks() => {
                let moves = self
                    .policy
                    .balance(&view!(self), cpu, BalanceKind::Periodic);
                self.apply_moves(cpu, &moves);
                // A policy that does not kick idle CPUs on wakeup (4BSD without ipiwakeup)
                // relies on this tick to look at its run list, which may be shared.
                if self.nr_running[cpu] > 0 || !self.policy.wakeup_kicks_idle(cpu) {
                    self.schedule(cpu, None);
                }
            }
            None => {}
        }
        if self.curr[cpu].is_some() || self.policy.idle_ticks() {
            self.events.push(self.now + tick, Event::Tick { cpu });
        } else {
            self.cpus[cpu].tick_armed = false;
        }
    }

    fn finish(mut self, plan: &schedlab_workload::Plan) -> SimResult {
        let end = self.now;
        for cpu in 0..self.cpus.len() {
            let nr = self.nr_running[cpu] as u128;
            let c = &mut self.cpus[cpu];
            if let Some(s) = c.busy_since.take() {
                c.busy_ns += end - s;
            }
            if let Some(s) = c.idle_since.take() {
                c.idle_ns += end - s;
            }
            c.rq_area += nr * (end - c.rq_last) as u128;
        }
        let secs = |ns: u64| ns as f64 / 1e9;
        let cpus = self
            .cpus
            .iter()
            .map(|c| CpuCounters {
                busy_s: secs(c.busy_ns),
                idle_s: secs(c.idle_ns),
                mean_runnable: if end == 0 {
                    0.0
                } else {
                    c.rq_area as f64 / end as f64
                },
                max_runnable: c.rq_max,
            })
            .collect();
        let mut counters: BTreeMap<String, Counters> = BTreeMap::new();
        let mut total = Counters::default();
        for t in &self.tasks {
            let c = Counters {
                voluntary_switches: Some(t.nvcsw),
                involuntary_switches: Some(t.nivcsw),
                migrations: Some(t.migrations),
                wakeups: Some(t.wakeups),
                wakeup_preemptions: Some(t.wakeup_preemptions),
                cpu_time_s: secs(t.cpu_ns),
            };
            counters
                .entry(plan.groups[t.group].name.to_string())
                .or_default()
                .add(&c);
            total.add(&c);
        }
        counters.insert("total".into(), total);
        let tasks = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| TaskOutcome {
                samples: std::mem::take(&mut self.shared.slots[i].borrow_mut().samples)
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
                cpu_time: Duration::from_nanos(t.cpu_ns),
                finished_at: Duration::from_nanos(t.finished_at),
            })
            .collect();
        SimResult {
            outcome: Outcome {
                wall: Duration::from_nanos(end),
                tasks,
            },
            counters,
            cpus,
            events: self.events.popped(),
            elapsed_ns: end,
        }
    }
}
