//! The wakeup path, the switch path and the tick: where a woken task goes and whether it
//! preempts, how a CPU is told to reschedule (at once or by IPI), picking the next task and
//! switching to it, applying a policy's load-balancing moves, and the periodic tick. In
//! kernel/sched/core.c: `try_to_wake_up` (`select_task_rq`, `ttwu_queue`, `wakeup_preempt`),
//! `resched_curr` and `wake_up_idle_cpu`, `__schedule` (`pick_next_task`, `context_switch`),
//! `sched_balance_newidle`/`sched_balance_trigger`, and `sched_tick`.

use super::{Effect, Event, Machine, State};
use crate::policy::{BalanceKind, CpuId, EnqueueKind, Move, PutPrevKind, TaskId};
use schedlab_workload::timeline::TaskState;

impl Machine<'_> {
    /// The running task `t` stays runnable but leaves the CPU (preempted or yielding).
    pub(super) fn reschedule(&mut self, cpu: CpuId, t: TaskId, kind: PutPrevKind) {
        self.reschedule_inline(cpu, t, kind);
    }

    /// [`Machine::reschedule`], inlined where a yield switches.
    #[inline(always)]
    pub(super) fn reschedule_inline(&mut self, cpu: CpuId, t: TaskId, kind: PutPrevKind) {
        self.policy.put_prev_task(&self.view, cpu, t, kind);
        self.tasks[t].state = State::Queued;
        self.view.curr[cpu] = None;
        self.timeline_event(t, cpu, TaskState::Waiting);
        if kind == PutPrevKind::Preempted {
            // A pending active balance: the stopper runs before the next pick.
            if let Some(mv) = self.policy.active_balance(&self.view, cpu) {
                self.apply_moves(cpu, &[mv]);
            }
        }
        // The task switched to is the CPU's current one (none: it went idle).
        let next = self.switch_next(cpu, Some(t));
        if next != Some(t) {
            self.tasks[t].nivcsw += 1;
            if kind == PutPrevKind::Preempted {
                if let Some(mv) = self.policy.schedule_tail(&self.view, cpu, t) {
                    self.apply_moves(cpu, &[mv]);
                }
            }
        }
    }

    /// Interrupt the running task of `cpu` and let the policy choose again.
    pub(super) fn preempt(&mut self, cpu: CpuId) {
        self.account(cpu);
        let t = self.view.curr[cpu].expect("preempting a running task");
        self.reschedule(cpu, t, PutPrevKind::Preempted);
    }

    /// Pick the next task for `cpu` (whose current task, `prev`, has just left it) and switch.
    pub(super) fn schedule(&mut self, cpu: CpuId, prev: Option<TaskId>) {
        self.switch_next(cpu, prev);
    }

    /// [`Machine::schedule`], inlined into [`Machine::reschedule`] (every yield and
    /// preemption): a call there was a second prologue and the reload of everything the caller
    /// had at hand. Returns the task switched to, if any.
    #[inline(always)]
    pub(super) fn switch_next(&mut self, cpu: CpuId, prev: Option<TaskId>) -> Option<TaskId> {
        // One borrow of the CPU (and of the task below) per stretch between calls out: each
        // index is a bounds check, paid again after every call that may change the vectors.
        let c = &mut self.cpus[cpu];
        c.need_resched = false;
        c.ast_pending = false;
        c.resched_at_once = false;
        c.gen += 1;
        let mut next = self.policy.pick_next_task(&self.view, cpu);
        if next.is_none() {
            self.balance(cpu, BalanceKind::NewIdle);
            next = self.policy.pick_next_task(&self.view, cpu);
        }
        let Some(n) = next else {
            self.cpus[cpu].went_idle(self.view.now);
            return None;
        };
        let task = &self.tasks[n];
        let (from, last_ran) = (task.rq_cpu, task.last_ran);
        if from != cpu {
            // A shared run list (Linux 2.4, 4BSD) or a steal in schedule() (IBM MQ): the task
            // was queued for another CPU and this one took it.
            self.rq_change(from, false);
            self.rq_change(cpu, true);
            let task = &mut self.tasks[n];
            task.rq_cpu = cpu;
            task.migrations += 1;
        }
        let scanned = if self.picks_scan {
            self.policy.last_scan_len(cpu) as u64
        } else {
            debug_assert_eq!(
                self.policy.last_scan_len(cpu),
                0,
                "a scan without picks_scan"
            );
            0
        };
        let hold = self.costs.jittered(self.costs.hot.rq_lock) + scanned * self.costs.model.scan;
        let mut cost = self.rq_lock(cpu, hold);
        if prev != Some(n) {
            cost += self.costs.jittered(self.costs.hot.switch);
            // Only asked when charged: at the built-in profiles' 0 the switch path is as before.
            let mm_switch = self.costs.model.mm_switch;
            if mm_switch != 0 && self.spaces.switch_to(cpu, n) {
                cost += self.costs.c(mm_switch);
            }
            if let Some(last) = last_ran.filter(|&c| c != cpu) {
                let refill = self
                    .costs
                    .by_distance(self.costs.model.migration, last, cpu);
                cost += self.costs.c(refill);
            }
        }
        let task = &mut self.tasks[n];
        if let Effect::Spin(l) = task.then {
            // A preempted spinner back on a CPU looks at the lock at once.
            if self.sync.locks[l].holder.is_none() {
                task.remaining = 0;
            }
        }
        task.state = State::Running(cpu);
        task.last_ran = Some(cpu);
        task.remaining += cost;
        let burst = task.remaining;
        self.view.curr[cpu] = Some(n);
        self.timeline_event(n, cpu, TaskState::Running);
        let c = &mut self.cpus[cpu];
        c.last_account = self.view.now;
        c.went_busy(self.view.now);
        if !c.tick_armed {
            c.tick_armed = true;
            let tick = self.costs.model.tick_ns();
            let next_tick = (self.view.now / tick + 1) * tick + c.tick_phase;
            self.clock.events.push(next_tick, Event::Tick { cpu });
        }
        // The task's body is polled when this burst ends, after the events of the other CPUs
        // in between: fetch its future and its call into the cache now (`prefetch.rs`).
        self.exec.prefetch(n);
        if let Some(call) = self.shared.calls.get(n) {
            crate::prefetch::value(call, 2);
        }
        if let Some(ctx) = self.contexts.get(n) {
            crate::prefetch::value(ctx, 2);
        }
        // The task this CPU will switch to next, if the policy can tell: the first read of the
        // task a switch picks was the switch's costliest miss, and this one is a burst or more
        // away. Its first two lines hold what a switch reads (`Task`); the executor's place of
        // its body is read by the prefetch of its future above, at that switch.
        if let Some(after) = self.policy.next_task_hint(cpu) {
            if let Some(task) = self.tasks.get(after) {
                crate::prefetch::value(task, 2);
            }
            self.exec.prefetch_place(after);
        }
        self.start_burst(cpu, burst);
        Some(n)
    }

    /// Wake `t` (blocked). `waker` is the CPU of the task that woke it, if any. Returns the CPU
    /// time the waker spends on it.
    pub(super) fn wake(&mut self, t: TaskId, waker: Option<CpuId>, start: bool) -> u64 {
        let prev = self.tasks[t].rq_cpu;
        let cpu = self.policy.select_task_rq(&self.view, t, prev, waker);
        self.wake_on(t, cpu, waker, start)
    }

    /// The wakeup path once the runqueue is chosen: `t` joins `cpu`'s runqueue (see
    /// [`Machine::wake`]).
    pub(super) fn wake_on(
        &mut self,
        t: TaskId,
        cpu: CpuId,
        waker: Option<CpuId>,
        start: bool,
    ) -> u64 {
        debug_assert_eq!(self.tasks[t].state, State::Blocked);
        let slept = self.view.now - self.tasks[t].slept_at;
        let prev = self.tasks[t].rq_cpu;
        if cpu != prev && !start {
            self.tasks[t].migrations += 1;
        }
        self.tasks[t].rq_cpu = cpu;
        self.tasks[t].state = State::Queued;
        self.rq_change(cpu, true);
        self.timeline_event(t, cpu, TaskState::Waiting);
        let kind = if start {
            EnqueueKind::New
        } else {
            self.tasks[t].wakeups += 1;
            EnqueueKind::Wakeup { slept_ns: slept }
        };
        self.policy.enqueue_task(&self.view, cpu, t, kind);
        let mut cost = 0;
        if waker.is_some() {
            cost += self.costs.jittered(self.costs.hot.wakeup);
            let hold = self.costs.jittered(self.costs.hot.rq_lock);
            cost += self.rq_lock(cpu, hold);
        }
        match self.view.curr[cpu] {
            None if start || self.policy.wakeup_kicks_idle(cpu) => {
                cost += self.kick(cpu, waker, start);
            }
            None => {} // the idle CPU finds it at its next tick
            Some(c) => {
                if waker != Some(cpu) {
                    self.account(cpu);
                }
                if self.policy.wakeup_preempt(&self.view, cpu, c, t) {
                    let at_once = self.policy.wakeup_preempt_at_once(cpu);
                    if at_once {
                        self.cpus[cpu].resched_at_once = true;
                    }
                    if !start {
                        self.tasks[t].wakeup_preemptions += 1;
                        // A remote wakeup's IPI returns to user mode at once; a kernel-mode
                        // task switches only when the kernel preempts at once.
                        let remote = waker != Some(cpu) && !self.tasks[c].kernel_mode;
                        if remote || at_once {
                            self.tasks[t].preemptions_at_once += 1;
                        }
                    }
                    cost += self.resched(cpu, waker);
                }
            }
        }
        cost
    }

    /// The waker's CPU time to send a reschedule IPI (`ipi_send`), which also delays it.
    fn ipi_send(&mut self) -> u64 {
        if self.costs.model.ipi_send == 0 {
            0
        } else {
            self.costs.c(self.costs.model.ipi_send)
        }
    }

    /// Make idle `cpu` look at its runqueue. Returns the sender's CPU time for the IPI.
    pub(super) fn kick(&mut self, cpu: CpuId, from: Option<CpuId>, start: bool) -> u64 {
        if self.cpus[cpu].kick_pending {
            return 0;
        }
        self.cpus[cpu].kick_pending = true;
        let mut send = 0;
        let delay = if start {
            0
        } else {
            let ipi = if let Some(f) = from.filter(|&f| f != cpu) {
                send = self.ipi_send();
                let ipi = self.costs.by_distance(self.costs.model.ipi, f, cpu);
                send + self.costs.c(ipi)
            } else {
                0
            };
            ipi + self.costs.c(self.costs.model.idle_exit)
        };
        self.clock
            .events
            .push(self.view.now + delay, Event::Resched { cpu });
        send
    }

    /// Ask busy `cpu` to reschedule: at once if `from` is `cpu` itself (the waker's system call
    /// returns through schedule), else by IPI. Returns the sender's CPU time for the IPI.
    pub(super) fn resched(&mut self, cpu: CpuId, from: Option<CpuId>) -> u64 {
        self.cpus[cpu].need_resched = true;
        if from == Some(cpu) || self.cpus[cpu].kick_pending {
            return 0;
        }
        self.cpus[cpu].kick_pending = true;
        let (send, delay) = if let Some(f) = from {
            let send = self.ipi_send();
            let ipi = self.costs.by_distance(self.costs.model.ipi, f, cpu);
            (send, send + self.costs.c(ipi))
        } else {
            (0, 0)
        };
        self.clock
            .events
            .push(self.view.now + delay, Event::Resched { cpu });
        send
    }

    /// Whether `cpu`'s pending reschedule switches its running task now. A kernel-mode task
    /// (`mode=kernel`) never returns to user mode, where NEEDRESCHED is acted on: it is switched
    /// when it blocks, unless the kernel preempts at once (FreeBSD's `maybe_preempt` under
    /// PREEMPTION, sys/kern/kern_switch.c; an IPI_PREEMPT) — the simulated Linux kernels are
    /// not preemptible (no CONFIG_PREEMPT), so there it waits for the block. A task holding a
    /// spin lock of the plan is not preempted either, by any kernel: the reschedule waits for
    /// its last unlock (which the task's step loop follows with this check, as `spin_unlock`'s
    /// `preempt_enable` does). Nor is a task spinning for one whose holder is on a CPU: it
    /// spins in the kernel with preemption off (`spin_lock`'s `preempt_disable`; 2.4 has no
    /// kernel preemption at all) until it has the lock — only a holder that is off its CPU,
    /// which a kernel spin lock's never is, leaves its spinners preemptible, so that a workload
    /// file's lock held across a sleep cannot pin every CPU.
    pub(super) fn resched_due(&self, cpu: CpuId) -> bool {
        let c = &self.cpus[cpu];
        // Asked after every effect: the common "no" looks at the CPU's flag alone.
        if !c.need_resched {
            return false;
        }
        let Some(t) = self.view.curr[cpu] else {
            return true;
        };
        !self.in_spin_section(t) && (c.resched_at_once || !self.tasks[t].kernel_mode)
    }

    /// Whether task `t` holds a spin lock of the plan, or spins for one whose holder is
    /// running: the span [`Machine::resched_due`] does not preempt.
    fn in_spin_section(&self, t: TaskId) -> bool {
        let task = &self.tasks[t];
        task.spin_held > 0
            || matches!(task.then, Effect::Spin(l)
                if self.sync.locks[l].holder
                    .is_some_and(|h| matches!(self.tasks[h].state, State::Running(_))))
    }

    /// Whether task `t`'s expired slice switches it at the tick: not in kernel mode (it is
    /// switched when it blocks) and not in a spin section (it is switched after its unlock).
    fn slice_preempts(&self, t: TaskId) -> bool {
        !self.tasks[t].kernel_mode && !self.in_spin_section(t)
    }

    /// Let the policy balance load onto or from `cpu` (newly idle, or at its tick), and carry
    /// out the moves.
    pub(super) fn balance(&mut self, cpu: CpuId, kind: BalanceKind) {
        let moves = self.policy.balance(&self.view, cpu, kind);
        self.apply_moves(cpu, &moves);
        for busiest in self.policy.take_active_balance() {
            // stop_one_cpu_nowait: the stopper's wakeup preempts `busiest`'s task (by IPI from
            // here), where [`Machine::reschedule`] lets it push.
            if self.view.curr[busiest].is_some() {
                self.resched(busiest, Some(cpu));
            }
        }
    }

    /// Bookkeeping for tasks a policy moved between runqueues. `here` is the CPU that balanced.
    pub(super) fn apply_moves(&mut self, here: CpuId, moves: &[Move]) {
        for mv in moves {
            debug_assert_eq!(self.tasks[mv.task].state, State::Queued);
            self.rq_change(mv.from, false);
            self.rq_change(mv.to, true);
            self.tasks[mv.task].rq_cpu = mv.to;
            self.tasks[mv.task].migrations += 1;
            self.timeline_event(mv.task, mv.to, TaskState::Waiting);
            if mv.to == here {
                continue;
            }
            match self.view.curr[mv.to] {
                None => {
                    self.kick(mv.to, Some(here), false);
                }
                Some(c) => {
                    self.account(mv.to);
                    if self.policy.wakeup_preempt(&self.view, mv.to, c, mv.task) {
                        if self.policy.wakeup_preempt_at_once(mv.to) {
                            self.cpus[mv.to].resched_at_once = true;
                        }
                        self.resched(mv.to, Some(here));
                        // The balancer's IPI: its cost is inside the balancing pass.
                    }
                }
            }
        }
    }

    /// Returns whether the running task's burst came nearer its end (a tick that switched
    /// nobody and cost it less than the tick's period), which the run counts as progress.
    pub(super) fn tick(&mut self, cpu: CpuId) -> bool {
        let tick = self.costs.model.tick_ns();
        let mut progress = false;
        match self.view.curr[cpu] {
            Some(t) => {
                self.account(cpu);
                self.tasks[t].remaining += self.costs.c(self.costs.model.tick);
                let expired = self.policy.task_tick(&self.view, cpu, t);
                self.balance(cpu, BalanceKind::Periodic);
                if expired && !self.slice_preempts(t) {
                    // scheduler_tick's need_resched: a kernel-mode task is switched when it
                    // blocks, a spin lock's holder when it releases it.
                    self.cpus[cpu].need_resched = true;
                }
                if (expired && self.slice_preempts(t)) || self.resched_due(cpu) {
                    self.preempt(cpu);
                } else {
                    progress = self.continue_burst(cpu, t, tick);
                }
            }
            None if self.policy.idle_ticks() => {
                self.balance(cpu, BalanceKind::Periodic);
                // A policy that does not kick idle CPUs on wakeup (4BSD without ipiwakeup)
                // relies on this tick to look at its run list, which may be shared.
                if self.view.nr_running[cpu] > 0 || !self.policy.wakeup_kicks_idle(cpu) {
                    self.schedule(cpu, None);
                }
            }
            None => {}
        }
        if self.view.curr[cpu].is_some() || self.policy.idle_ticks() {
            self.clock
                .events
                .push(self.view.now + tick, Event::Tick { cpu });
        } else {
            self.cpus[cpu].tick_armed = false;
        }
        progress
    }

    /// Go on with the burst of task `t`, running on `cpu`, after a tick that did not switch it
    /// (the tick's cost is in its remaining work). Returns whether the burst's end moved by
    /// less than `tick`, the tick's period: the task got work done.
    ///
    /// The burst's old end, still in the queue, is obsolete. Left there, as a burst start
    /// leaves it (it is ignored when popped), a compute of hours kept one per tick — a million
    /// for 5000 s at HZ=250, the queue's memory budget. So when the end does not move earlier,
    /// for a workload task that is not spinning, the old end is dropped and counted as if
    /// popped: it would have come out before the event that completes the task's burst (no one
    /// shortens such a burst, a preemption only delays it, and an event pushed later at the
    /// same time comes out later), so before the task ends, so before the run does — the run's
    /// event count stays what it was.
    ///
    /// Out of line: once per tick, and inlined into the event loop it cost every event there
    /// (callgrind: about 10 instructions an event in a yield storm, register pressure).
    #[inline(never)]
    fn continue_burst(&mut self, cpu: CpuId, t: TaskId, tick: u64) -> bool {
        let task = &self.tasks[t];
        let at = self.view.now + task.remaining;
        match self.clock.events.slot_at(cpu) {
            Some(old)
                if old <= at && task.kthread.is_none() && !matches!(task.then, Effect::Spin(_)) =>
            {
                let c = &mut self.cpus[cpu];
                c.gen += 1;
                let gen = c.gen;
                self.clock
                    .events
                    .replace_slot(cpu, at, Event::BurstDone { cpu, gen });
                self.clock.dropped += 1;
                at - old < tick
            }
            _ => {
                self.run_burst(cpu);
                false
            }
        }
    }
}
