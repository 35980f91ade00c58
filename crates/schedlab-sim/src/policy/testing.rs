//! The policies' unit-test harness: a hand-driven machine that calls a policy's hooks in the
//! order the real one ([`crate::machine`]) does, with a [`MachineView`] it keeps up to date, so a
//! test can put a policy through a precise sequence of picks, ticks, sleeps and wakeups.

use super::*;
use schedlab_workload::knobs::Knobs;

/// One millisecond in ns.
pub(super) const MS: u64 = 1_000_000;
/// Every CPU.
pub(super) const ALL: CpuMask = CpuMask::ALL;

/// A policy the harness can drive.
pub(super) trait Harnessed: FromParams + Sized {
    /// Whether the policy itself knows each CPU's current task and runqueue length
    /// ([`Harnessed::cpu_state`], read after every hook); otherwise the harness keeps them from
    /// the hooks it calls (a pick sets `curr`, an enqueue adds to `nr`, a sleep takes away).
    const REPORTS: bool = false;
    /// Whether the machine's tick also balances the CPU (ULE's `sched_clock` path).
    const BALANCE_ON_TICK: bool = false;
    /// The current task of `cpu` and the tasks on its runqueue, as the policy knows them (only
    /// called when [`Harnessed::REPORTS`]).
    fn cpu_state(&self, _cpu: CpuId) -> (Option<TaskId>, usize) {
        unreachable!("cpu_state of a policy that does not report it")
    }
}

/// A hand-driven machine of `curr.len()` CPUs at `hz`.
pub(super) struct H<P> {
    /// The policy under test.
    pub(super) p: P,
    /// Simulated time, ns.
    pub(super) now: u64,
    /// Timer interrupt frequency.
    pub(super) hz: u32,
    /// The task running on each CPU.
    pub(super) curr: Vec<Option<TaskId>>,
    /// Runnable tasks (queued + current) per CPU.
    pub(super) nr: Vec<usize>,
}

/// The knobs of a `--group` argument's `knob=value,...` part (empty: none).
pub(super) fn knobs(s: &str) -> Knobs {
    if s.is_empty() {
        Knobs::default()
    } else {
        schedlab_workload::knobs::parse_group_arg(&format!("g:{s}"))
            .unwrap()
            .1
    }
}

/// Knobs with only a nice value.
pub(super) fn nice(n: i32) -> Knobs {
    Knobs {
        nice: Some(n),
        ..Knobs::default()
    }
}

/// Knobs with only a scheduling policy.
pub(super) fn policy(p: SchedPolicy) -> Knobs {
    Knobs {
        policy: Some(p),
        ..Knobs::default()
    }
}

impl<P: Harnessed> H<P> {
    /// Policy `spec` (`o1:threshold=40`) on `ncpus` CPUs at `hz`, nothing running.
    pub(super) fn new(spec: &str, hz: u32, ncpus: usize) -> H<P> {
        let spec: PolicySpec = spec.parse().unwrap();
        H {
            p: P::from_params(spec.params()),
            now: 0,
            hz,
            curr: vec![None; ncpus],
            nr: vec![0; ncpus],
        }
    }

    /// Length of one tick.
    pub(super) fn tick_ns(&self) -> u64 {
        1_000_000_000 / u64::from(self.hz)
    }

    /// Call hooks with a view of the machine, then refresh `curr`/`nr` from a policy that
    /// reports them.
    pub(super) fn with<R>(&mut self, f: impl FnOnce(&mut P, &MachineView) -> R) -> R {
        let m = MachineView {
            now: self.now,
            ncpus: self.curr.len(),
            curr: self.curr.clone(),
            nr_running: self.nr.clone(),
            hz: self.hz,
        };
        let r = f(&mut self.p, &m);
        if P::REPORTS {
            for c in 0..self.curr.len() {
                (self.curr[c], self.nr[c]) = self.p.cpu_state(c);
            }
        }
        r
    }

    /// Keep `curr`/`nr` for a policy that does not report them.
    fn track(&mut self, f: impl FnOnce(&mut Self)) {
        if !P::REPORTS {
            f(self)
        }
    }

    /// Create task `id` (`task_new`), sleeping.
    pub(super) fn task_new(&mut self, id: TaskId, group: usize, knobs: Knobs, allowed: CpuMask) {
        self.with(|p, m| {
            p.task_new(
                m,
                &TaskSetup {
                    id,
                    group,
                    knobs,
                    allowed,
                    kind: TaskKind::Workload,
                },
            )
        });
    }

    /// Put runnable task `id` on `cpu`'s runqueue.
    pub(super) fn enqueue(&mut self, cpu: CpuId, id: TaskId, kind: EnqueueKind) {
        self.with(|p, m| p.enqueue_task(m, cpu, id, kind));
        self.track(|h| h.nr[cpu] += 1);
    }

    /// A new task of `group` queued where `select_task_rq` puts it (its first allowed CPU as
    /// `prev`, no waker), as the machine's start does; returns that CPU.
    pub(super) fn spawn(
        &mut self,
        id: TaskId,
        group: usize,
        knobs: Knobs,
        allowed: CpuMask,
    ) -> CpuId {
        self.task_new(id, group, knobs, allowed);
        let cpu = self.with(|p, m| p.select_task_rq(m, id, allowed.lowest().unwrap(), None));
        self.enqueue(cpu, id, EnqueueKind::New);
        cpu
    }

    /// A new task queued on `cpu` directly; it may run on the CPUs of its `cpus=` knob (else
    /// on all).
    pub(super) fn spawn_on(&mut self, id: TaskId, cpu: CpuId, knobs: Knobs) {
        let allowed = match &knobs.cpus {
            Some(c) => CpuMask::of_list(Some(c), 0),
            None => ALL,
        };
        self.task_new(id, 0, knobs, allowed);
        self.enqueue(cpu, id, EnqueueKind::New);
    }

    /// `cpu` picks its next task, which becomes current.
    pub(super) fn pick(&mut self, cpu: CpuId) -> Option<TaskId> {
        let t = self.with(|p, m| p.pick_next_task(m, cpu));
        self.track(|h| h.curr[cpu] = t);
        t
    }

    /// One tick of CPU time for the current task of `cpu` (the clock advances by a tick):
    /// `update_curr`, `task_tick` (and a periodic balance where the policy's tick does one).
    /// True: the task asks for a reschedule.
    pub(super) fn tick(&mut self, cpu: CpuId) -> bool {
        let t = self.curr[cpu].unwrap();
        let d = self.tick_ns();
        self.now += d;
        self.with(|p, m| {
            p.update_curr(m, cpu, t, d);
            let r = p.task_tick(m, cpu, t);
            if P::BALANCE_ON_TICK {
                p.balance(m, cpu, BalanceKind::Periodic);
            }
            r
        })
    }

    /// Ticks until `task_tick` asks for a reschedule (0: not within `cap`).
    pub(super) fn ticks_until_resched(&mut self, cpu: CpuId, cap: u64) -> u64 {
        (1..=cap).find(|_| self.tick(cpu)).unwrap_or(0)
    }

    /// The current task of `cpu` goes back to the runqueue (after `yield_task` for a yield);
    /// false when the yield returned without schedule() and the task stays current.
    pub(super) fn put_prev(&mut self, cpu: CpuId, kind: PutPrevKind) -> bool {
        let t = self.curr[cpu].unwrap();
        let put = self.with(|p, m| {
            if kind == PutPrevKind::Yielded && !p.yield_task(m, cpu, t) {
                return false;
            }
            p.put_prev_task(m, cpu, t, kind);
            true
        });
        if put {
            self.track(|h| h.curr[cpu] = None);
        }
        put
    }

    /// The current task of `cpu` blocks; returns it.
    pub(super) fn sleep(&mut self, cpu: CpuId) -> TaskId {
        self.sleep_as(cpu, DequeueKind::Sleep)
    }

    /// The current task of `cpu` blocks in a sleep of `kind` (interruptible or on a device);
    /// returns it.
    pub(super) fn sleep_as(&mut self, cpu: CpuId, kind: DequeueKind) -> TaskId {
        let t = self.curr[cpu].unwrap();
        self.with(|p, m| p.dequeue_task(m, cpu, t, kind));
        self.track(|h| {
            h.curr[cpu] = None;
            h.nr[cpu] -= 1;
        });
        t
    }

    /// Wake `id` after `slept_ns`: `select_task_rq` from `prev`, then `enqueue_task`; returns
    /// the CPU chosen.
    pub(super) fn wake_to(
        &mut self,
        id: TaskId,
        prev: CpuId,
        waker: Option<CpuId>,
        slept_ns: u64,
    ) -> CpuId {
        let cpu = self.with(|p, m| {
            let cpu = p.select_task_rq(m, id, prev, waker);
            p.enqueue_task(m, cpu, id, EnqueueKind::Wakeup { slept_ns });
            cpu
        });
        self.track(|h| h.nr[cpu] += 1);
        cpu
    }

    /// Wake `id` after `slept_ns` (`select_task_rq` from `prev`, then `enqueue_task`); returns
    /// the CPU chosen and, when that CPU runs a task, whether `wakeup_preempt` says the woken
    /// one preempts it (`None`: the CPU was idle).
    pub(super) fn wake_up(
        &mut self,
        id: TaskId,
        prev: CpuId,
        waker: Option<CpuId>,
        slept_ns: u64,
    ) -> (CpuId, Option<bool>) {
        let r = self.with(|p, m| {
            let cpu = p.select_task_rq(m, id, prev, waker);
            p.enqueue_task(m, cpu, id, EnqueueKind::Wakeup { slept_ns });
            (cpu, m.curr[cpu].map(|c| p.wakeup_preempt(m, cpu, c, id)))
        });
        self.track(|h| h.nr[r.0] += 1);
        r
    }

    /// [`H::wake_up`], and whether the chosen CPU is told at once: an idle one woken
    /// (`wakeup_kicks_idle`), a busy one preempted (`wakeup_preempt`).
    pub(super) fn wake_go(
        &mut self,
        id: TaskId,
        prev: CpuId,
        waker: Option<CpuId>,
        slept_ns: u64,
    ) -> (CpuId, bool) {
        let (cpu, preempts) = self.wake_up(id, prev, waker, slept_ns);
        (
            cpu,
            preempts.unwrap_or_else(|| self.p.wakeup_kicks_idle(cpu)),
        )
    }

    /// Whether `woken` (queued on `cpu`) preempts the current task of `cpu`.
    pub(super) fn preempts(&mut self, cpu: CpuId, woken: TaskId) -> bool {
        let curr = self.curr[cpu].unwrap();
        self.with(|p, m| p.wakeup_preempt(m, cpu, curr, woken))
    }

    /// Ask `cpu` to balance; the moves are applied to `nr` for a policy that does not report
    /// its runqueue lengths (one that does is read back after the call, as after every hook).
    ///
    /// An active balance the pass asks for runs at once, as the machine's stopper would: the
    /// busiest CPU's task is preempted, the policy pushes a task, and that CPU picks again.
    /// Its move is in the moves returned.
    pub(super) fn balance(&mut self, cpu: CpuId, kind: BalanceKind) -> Vec<Move> {
        let mut moves = self.with(|p, m| p.balance(m, cpu, kind));
        self.track(|h| {
            for mv in &moves {
                h.nr[mv.from] -= 1;
                h.nr[mv.to] += 1;
            }
        });
        for busiest in self.with(|p, _| p.take_active_balance()) {
            if self.curr[busiest].is_none() {
                continue;
            }
            self.put_prev(busiest, PutPrevKind::Preempted);
            if let Some(mv) = self.with(|p, m| p.active_balance(m, busiest)) {
                self.track(|h| {
                    h.nr[mv.from] -= 1;
                    h.nr[mv.to] += 1;
                });
                moves.push(mv);
            }
            self.pick(busiest);
        }
        moves
    }

    /// A hand-run machine on `topology` (set with [`Policy::set_topology`]) with `hogs` CPU
    /// hogs all started on CPU 0, run for `ticks` ticks by [`H::run_ticks`].
    pub(super) fn run_hogs_from_cpu0(
        spec: &str,
        hz: u32,
        topology: &crate::topology::Topology,
        hogs: usize,
        ticks: u64,
        idle_periodic: bool,
    ) -> H<P> {
        let mut h = H::<P>::new(spec, hz, topology.cpus());
        h.p.set_topology(topology);
        for id in 0..hogs {
            h.spawn_on(id, 0, knobs(""));
        }
        h.run_ticks(ticks, idle_periodic);
        h
    }

    /// `ticks` ticks of the hand-run machine: each tick every CPU in turn — an idle one
    /// balances newly idle (and periodically too, with `idle_periodic`) and picks; a busy one
    /// runs `update_curr` and `task_tick`, balances periodically and switches when asked (if
    /// the balance, e.g. an active balance's push, left it a task to switch from).
    pub(super) fn run_ticks(&mut self, ticks: u64, idle_periodic: bool) {
        let tick = self.tick_ns();
        for _ in 0..ticks {
            self.now += tick;
            for c in 0..self.curr.len() {
                let Some(task) = self.curr[c] else {
                    self.balance(c, BalanceKind::NewIdle);
                    if idle_periodic {
                        self.balance(c, BalanceKind::Periodic);
                    }
                    self.pick(c);
                    continue;
                };
                let resched = self.with(|p, m| {
                    p.update_curr(m, c, task, tick);
                    p.task_tick(m, c, task)
                });
                self.balance(c, BalanceKind::Periodic);
                if resched && self.curr[c].is_some() {
                    self.put_prev(c, PutPrevKind::Preempted);
                    self.pick(c);
                }
            }
        }
    }
}

/// The checked spec of `s` (panics if it is refused).
pub(super) fn spec(s: &str) -> PolicySpec {
    s.parse().unwrap()
}

/// Why spec `s` is refused, as the message says it.
pub(super) fn spec_err(s: &str) -> String {
    s.parse::<PolicySpec>().unwrap_err().to_string()
}

/// The policy of spec `s`, as its own type.
pub(super) fn built<P: FromParams>(s: &str) -> P {
    P::from_params(spec(s).params())
}

/// Random adds (at the head or the tail) and removals by task, 20,000 of them, on a structure
/// of numbered FIFO lists (a run queue by priority), mirrored on plain `Vec`s. `lists` are the
/// list numbers used, below `n` (few, so that lists hold several tasks and removals hit heads
/// and middles); `add(s, list, task, at_head)` and `remove(s, list, task)` (whether it was
/// queued) act on the structure, and `check(s, step, list, reference)` compares it with the
/// plain lists after step `step`, an operation on `list`.
pub(super) fn random_list_operations<S>(
    s: &mut S,
    n: usize,
    lists: &[usize],
    seed: u64,
    add: impl Fn(&mut S, usize, TaskId, bool),
    remove: impl Fn(&mut S, usize, TaskId) -> bool,
    check: impl Fn(&S, usize, usize, &[Vec<TaskId>]),
) {
    let mut reference: Vec<Vec<TaskId>> = vec![Vec::new(); n];
    let mut x = seed;
    for step in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let list = lists[(x % lists.len() as u64) as usize];
        let t = ((x >> 8) % 6) as TaskId;
        if (x >> 16).is_multiple_of(2) {
            let head = (x >> 20).is_multiple_of(3);
            add(s, list, t, head);
            if head {
                reference[list].insert(0, t);
            } else {
                reference[list].push(t);
            }
        } else {
            let i = reference[list].iter().position(|&u| u == t);
            assert_eq!(remove(s, list, t), i.is_some(), "step {step}");
            if let Some(i) = i {
                reference[list].remove(i);
            }
        }
        check(s, step, list, &reference);
    }
}
