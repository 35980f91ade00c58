//! The effects of a body's context calls: each request becomes a burst of CPU work and then an
//! effect — deposit or take a channel's bytes (`net.rs`), sleep, yield, take a lock, wait at a
//! barrier, post or take a semaphore, wait on or signal a condition (`sync.rs`), wait for the
//! device, touch memory (`memory.rs`) — and the voluntary ways off a CPU, blocking and exit. In
//! kernel/sched/core.c and around it: what the system calls behind the calls do
//! (`pipe_write`/`pipe_read`, futexes, `hrtimer_nanosleep`, `do_sched_yield`),
//! `deactivate_task` before `__schedule` for a sleep, and `do_task_dead` for an exit.

use super::{Effect, Event, Machine, SimError, State};
use crate::context::{Op, WATCH_EVERY};
use crate::policy::{CpuId, DequeueKind, PutPrevKind, TaskId};
use schedlab_workload::timeline::TaskState;
use schedlab_workload::{CpuTimes, IoKind, WorkloadError};

impl Machine<'_> {
    /// Start (or restart) the burst of the running task of `cpu`.
    pub(super) fn run_burst(&mut self, cpu: CpuId) {
        let t = self.view.curr[cpu].expect("running task");
        self.start_burst(cpu, self.tasks[t].remaining);
    }

    /// [`Machine::run_burst`] when the caller has the running task's remaining work, `len`
    /// ns, at hand: every yield and switch starts one, and a call (its prologue, the lookup of
    /// the task again) was a third of the push's instructions.
    #[inline(always)]
    pub(super) fn start_burst(&mut self, cpu: CpuId, len: u64) {
        let at = self.view.now + len;
        let c = &mut self.cpus[cpu];
        c.gen += 1;
        let gen = c.gen;
        self.clock
            .events
            .push_slot(cpu, at, Event::BurstDone { cpu, gen });
    }

    /// Apply the effects of task `t`, current on `cpu`, whose burst is done; poll its body as
    /// needed; stop when it has CPU work to do, or has left the CPU.
    pub(super) fn step(&mut self, cpu: CpuId, t: TaskId) {
        // Turns of this loop in this event: the simulated clock does not move while it
        // turns, so a body whose calls take no simulated time would turn it forever; every
        // WATCH_EVERY turns the watch (stop flag, wall-clock budget) is looked at.
        let mut turns = 0u32;
        loop {
            let task = &self.tasks[t];
            // The commonest effect, the body's next call, without step_effect's frame (which
            // all the other arms make large); and a yield's, every other event of a yield
            // storm.
            let going_on = match task.then {
                Effect::Resume if task.kthread.is_none() => {
                    self.poll(cpu, t) && self.effect_done(cpu, t)
                }
                Effect::Yield => self.sched_yield(cpu, t),
                _ => self.step_effect(cpu, t),
            };
            if !going_on {
                return;
            }
            turns = turns.wrapping_add(1);
            if turns.is_multiple_of(WATCH_EVERY) && self.step_watch(t) {
                return;
            }
        }
    }

    /// [`Machine::step`] has turned [`WATCH_EVERY`] more times for task `t` without the clock
    /// moving: look at the watch. Returns whether it ended the run (the failure is set).
    #[cold]
    #[inline(never)]
    fn step_watch(&mut self, t: TaskId) -> bool {
        if self.shared.look(true).is_none() {
            return false;
        }
        self.failure = Some(SimError::Task {
            task: t,
            error: WorkloadError::Stopped,
        });
        true
    }

    /// Task `t`'s effect on `cpu` is applied: switch if a reschedule is due, or start its
    /// burst if it has CPU work to do. Returns whether it has neither (apply its next effect).
    #[inline(always)]
    fn effect_done(&mut self, cpu: CpuId, t: TaskId) -> bool {
        if self.resched_due(cpu) {
            self.preempt(cpu);
            return false;
        }
        let remaining = self.tasks[t].remaining;
        if remaining > 0 {
            self.start_burst(cpu, remaining);
            return false;
        }
        true
    }

    /// The effect of task `t`'s `sched_yield` on `cpu` (`do_sched_yield`): the policy's
    /// `yield_task`, and a switch if it asks for one. Returns whether the task is still on
    /// `cpu` with no CPU work to do, as [`Machine::step_effect`] does.
    #[inline(always)]
    fn sched_yield(&mut self, cpu: CpuId, t: TaskId) -> bool {
        self.tasks[t].then = Effect::Resume;
        if self.policy.yield_task(&self.view, cpu, t) {
            self.reschedule_inline(cpu, t, PutPrevKind::Yielded);
            return false;
        }
        self.effect_done(cpu, t)
    }

    /// One turn of [`Machine::step`]: apply task `t`'s pending effect. Returns whether the
    /// task is still on `cpu` with no CPU work to do (apply its next effect).
    ///
    /// A function of its own, called in a loop, rather than the loop's body: inside a loop
    /// the compiler computed the addresses every arm may use once before it, for every event,
    /// though an event takes one or two arms.
    #[inline(never)]
    fn step_effect(&mut self, cpu: CpuId, t: TaskId) -> bool {
        let task = &mut self.tasks[t];
        debug_assert_eq!(task.remaining, 0);
        let effect = std::mem::replace(&mut task.then, Effect::Resume);
        // Read with the effect (one bounds check): a resumed task's body is polled or its
        // kernel thread run.
        let kthread = task.kthread;
        match effect {
            Effect::Resume => {
                let going_on = match kthread {
                    Some(k) => self.kernel_thread_resume(cpu, t, k),
                    None => self.poll(cpu, t),
                };
                if !going_on {
                    return false; // finished or waiting; the CPU has moved on
                }
            }
            Effect::ClockRead => {
                if !self.clock_read(cpu) {
                    // Nothing asked: go on into the body at once, as if the read were not
                    // there (no extra reschedule check point for the other policies).
                    self.tasks[t].then = Effect::Resume;
                    return true;
                }
            }
            Effect::NetOutput(ch) => {
                if !self.net_output(cpu, t, ch) {
                    return false;
                }
            }
            Effect::NetLock(ch) => {
                let len = self.shared.slots[t].borrow().outbuf.len();
                if !self.net_lock_conn(cpu, t, ch, len) {
                    return false;
                }
            }
            Effect::NetSent(ch) => self.net_sent(cpu, t, ch),
            Effect::Touch(pos, pages) => {
                if !self.touch_step(cpu, t, pos, pages) {
                    return false;
                }
            }
            Effect::Spawn(group, arg) => self.spawn(cpu, t, group, arg),
            Effect::Wait(child) => {
                if !self.wait_child(cpu, t, child) {
                    return false;
                }
            }
            Effect::Exit => {
                self.exit(cpu, t);
                return false;
            }
            Effect::SwapIn(pos, pages, k) => {
                self.swap_in(cpu, t, pos, pages, k);
                return false;
            }
            Effect::NetInput => self.net_input(cpu, t),
            Effect::NetAck(ch) => {
                if !self.net_ack(cpu, t, ch) {
                    return false;
                }
            }
            Effect::Send(ch) => {
                if !self.send(cpu, t, ch) {
                    return false;
                }
            }
            Effect::RecvSome(ch, max) => {
                if !self.recv_some(cpu, t, ch, max) {
                    return false;
                }
            }
            Effect::Poll(deadline) => {
                if !self.poll_channels(cpu, t, deadline) {
                    return false;
                }
            }
            Effect::Recv(ch, len) => {
                if !self.recv(cpu, t, ch, len) {
                    return false;
                }
            }
            Effect::Sleep(until) => {
                if until > self.view.now {
                    let at = if self.policy.jiffy_timers() {
                        self.jiffy_timer_end(cpu, until)
                    } else {
                        until
                    };
                    self.clock.timer(at, Event::Timer { task: t });
                    self.block(cpu, t);
                    return false;
                }
            }
            Effect::Yield => return self.sched_yield(cpu, t),
            Effect::Lock(l) | Effect::OnCond(_, l) => {
                if !self.lock(cpu, t, l) {
                    return false;
                }
            }
            Effect::Spin(l) => {
                if !self.spin(cpu, t, l) {
                    return false;
                }
            }
            Effect::Barrier(_)
            | Effect::AtBarrier(_)
            | Effect::SemPost(_)
            | Effect::SemWait(_)
            | Effect::OnSemaphore(_)
            | Effect::WaitCut
            | Effect::CondWait(..)
            | Effect::CondSleep(..)
            | Effect::CondSignal(_)
            | Effect::CondBroadcast(_) => {
                if !self.sync_effect(cpu, t, effect) {
                    return false;
                }
            }
            Effect::IoWait(ns) => {
                self.device_request(t, ns);
                self.block_on_device(cpu, t);
                return false;
            }
            Effect::SetAttrs => {
                self.set_attrs(cpu, t);
                return false;
            }
        }
        self.effect_done(cpu, t)
    }

    /// The running task of `cpu` reads its own CPU clock: the system call accounts it on the
    /// spot (`task_sched_runtime` → `update_curr`; the machine has just charged it), and a
    /// reschedule that accounting asked for is pending at the call's return to user mode.
    /// Returns whether the policy asked.
    fn clock_read(&mut self, cpu: CpuId) -> bool {
        let asked = self.policy.update_curr_resched(cpu);
        if asked {
            self.cpus[cpu].need_resched = true;
        }
        asked
    }

    /// Poll task `t`'s body and turn its next request into a burst and an effect. Returns false
    /// if the body finished (or failed).
    ///
    /// Inlined into the step loop with the common case, a body that asks for something next
    /// and released no lock, and of the requests the yield's: a call was a prologue, an
    /// epilogue and a jump through the whole request table ([`Machine::start_request`]).
    #[inline(always)]
    pub(super) fn poll(&mut self, cpu: CpuId, t: TaskId) -> bool {
        // `shared` outlives the machine's borrow: one bounds check for the whole hand-over.
        let shared = self.shared;
        let call = &shared.calls[t];
        call.done.set(true);
        shared.cpu.set(cpu);
        let finished = self.exec.poll(t);
        if finished.is_some() || call.unlocked.get() {
            return self.poll_ended(cpu, t, finished);
        }
        // Only the request's kind is read here: the body has just written the request field
        // by field, and a copy of it whole, to pass it on, was one wide load waiting on those
        // narrower stores (a failed store forwarding: 13 % of `Machine::run`'s samples in the
        // lookup case). `start_request` takes it, and reads its fields one by one.
        match call.request.get() {
            Some(Op::Yield) => {
                call.request.set(None);
                let syscall = self.costs.jittered(self.costs.hot.syscall);
                let task = &mut self.tasks[t];
                task.then = Effect::Yield;
                task.remaining += syscall;
                true
            }
            Some(_) => self.start_request(cpu, t),
            None => self.not_a_request(cpu, t),
        }
    }

    /// [`Machine::poll`] of a body that released locks or finished (with `finished`, its
    /// output): the unlocks, then its end or its next request.
    #[inline(never)]
    fn poll_ended(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        finished: Option<Result<(), WorkloadError>>,
    ) -> bool {
        let shared = self.shared;
        if shared.calls[t].unlocked.replace(false) {
            let mut unlocks = std::mem::take(&mut shared.slots[t].borrow_mut().unlocks);
            for &l in &unlocks {
                self.unlock(cpu, t, l);
            }
            // The buffer goes back with its capacity: taken and dropped, it was an allocation
            // per unlock (6 % of the lookup case's instructions in `grow_one`).
            unlocks.clear();
            let mut slot = shared.slots[t].borrow_mut();
            debug_assert!(slot.unlocks.is_empty(), "only the body records unlocks");
            slot.unlocks = unlocks;
        }
        if let Some(result) = finished {
            match result {
                Err(error) => self.failure = Some(SimError::Task { task: t, error }),
                // A spawned task's body returned: it pays `exit` (do_exit, the parent's
                // notification) before it is dead.
                Ok(()) if self.tasks[t].parent.is_some() => {
                    let cost = self.costs.c(self.costs.model.exit);
                    let task = &mut self.tasks[t];
                    task.remaining += cost;
                    task.then = Effect::Exit;
                    return true;
                }
                Ok(()) => {}
            }
            self.exit(cpu, t);
            return false;
        }
        match shared.calls[t].request.get() {
            Some(_) => self.start_request(cpu, t),
            None => self.not_a_request(cpu, t),
        }
    }

    /// The body of task `t` suspended without a request: it awaited a future of another
    /// runtime. The run fails.
    #[cold]
    #[inline(never)]
    fn not_a_request(&mut self, cpu: CpuId, t: TaskId) -> bool {
        self.failure = Some(SimError::Task {
            task: t,
            error: WorkloadError::Backend(
                "the body awaited a future that is not a simulator context call".into(),
            ),
        });
        self.exit(cpu, t);
        false
    }

    /// Take task `t`'s request (there is one) and turn it into a burst and an effect (every
    /// request but a yield, which [`Machine::poll`] starts itself, the same way). Returns false
    /// if the request names an object the plan lacks (the run fails).
    #[inline(never)]
    fn start_request(&mut self, cpu: CpuId, t: TaskId) -> bool {
        let Some(op) = self.shared.calls[t].request.take() else {
            unreachable!("start_request without a request");
        };
        if let Some(error) = self.sync.missing(op) {
            self.failure = Some(SimError::Task { task: t, error });
            self.exit(cpu, t);
            return false;
        }
        let syscall = self.costs.jittered(self.costs.hot.syscall);
        // Each arm stores its effect into the task itself: a (cost, effect) pair returned
        // from the match went through the stack, and reading it back whole waited on the
        // arm's narrower stores (a failed store forwarding, a fifth of `step`'s samples).
        let cost = match op {
            Op::Compute(ns) => {
                // The compute begins with a read of the task's CPU clock (see clock_read).
                self.clock_read(cpu);
                let cost = self.numa_compute(t, cpu, ns);
                self.then(t, cost, Effect::ClockRead)
            }
            Op::Send(ch) => {
                let len = self.shared.slots[t].borrow().outbuf.len();
                let (base, then) = if self.net.via_netisr(ch) {
                    // The send half; the netisr thread does the rest (kthreads.rs).
                    (
                        self.net.msg_cost - self.net.netisr_half(),
                        Effect::NetOutput(ch),
                    )
                } else {
                    (
                        self.net.channel_msg_cost(ch)
                            + self.net.sock_queue_extra(ch, &self.costs.model),
                        Effect::Send(ch),
                    )
                };
                let m = self.costs.c(base);
                let lock = self.net_lock(ch);
                let bounce = self.bounce(cpu, ch);
                let cost = syscall + m + lock + bounce + self.costs.copy_cost(len);
                self.then(t, cost, then)
            }
            Op::Recv(ch, len) => {
                let m = self.costs.c(self.net.recv_msg_cost(ch, &self.costs.model)
                    + self.net.sock_queue_extra(ch, &self.costs.model));
                let cost = syscall + m + self.bounce(cpu, ch);
                self.then(t, cost, Effect::Recv(ch, len))
            }
            Op::RecvSome(ch, max) => {
                let m = self.costs.c(self.net.recv_msg_cost(ch, &self.costs.model)
                    + self.net.sock_queue_extra(ch, &self.costs.model));
                let cost = syscall + m + self.bounce(cpu, ch);
                self.then(t, cost, Effect::RecvSome(ch, max))
            }
            Op::Poll(deadline) => self.then(t, syscall, Effect::Poll(deadline)),
            Op::SleepUntil(until) => self.then(t, syscall, Effect::Sleep(until)),
            Op::Yield => self.then(t, syscall, Effect::Yield),
            // A spin lock is taken in user space (an atomic exchange), a futex mutex by a
            // system call.
            Op::Lock(l) if self.sync.locks[l].spin => self.then(t, 0, Effect::Lock(l)),
            Op::Lock(l) => self.then(t, syscall, Effect::Lock(l)),
            Op::Barrier(b) => self.then(t, syscall, Effect::Barrier(b)),
            Op::SemPost(s) => self.then(t, syscall, Effect::SemPost(s)),
            Op::SemWait(s) => self.then(t, syscall, Effect::SemWait(s)),
            Op::CondWait(c, l) => self.then(t, syscall, Effect::CondWait(c, l)),
            Op::CondSignal(c) => self.then(t, syscall, Effect::CondSignal(c)),
            Op::CondBroadcast(c) => self.then(t, syscall, Effect::CondBroadcast(c)),
            Op::Io(IoKind::Truncate, _) => self.then(t, syscall, Effect::Resume),
            Op::Io(kind, bytes) => {
                let device = self.costs.model.io_latency
                    + (bytes as u64 * self.costs.model.io_per_kib).div_ceil(1024)
                        / if kind == IoKind::Read { 1 } else { 2 };
                let device = self.costs.c(device);
                let cost = syscall + self.costs.copy_cost(bytes);
                self.then(t, cost, Effect::IoWait(device))
            }
            Op::Touch(offset, bytes) => {
                let (cost, then) = self.touch(t, offset, bytes);
                self.then(t, cost, then)
            }
            Op::MemAccess => {
                // CPU time at the profile's memory-access costs (cost.rs); the buffer is
                // made before the run on a real machine, so it costs nothing here.
                let access = self.shared.slots[t].borrow_mut().mem_access.take();
                let cost = match access.map(|a| self.costs.model.mem_access_ns(&a)) {
                    Some(Ok(ns)) => self.costs.c(ns),
                    Some(Err(why)) => {
                        self.shared.slots[t].borrow_mut().mem_refused = Some(why);
                        0
                    }
                    None => 0,
                };
                self.then(t, cost, Effect::Resume)
            }
            Op::FreeMemory => {
                self.free_memory(t);
                self.then(t, syscall, Effect::Resume)
            }
            Op::Spawn(group, arg) => {
                let cost = self.costs.c(self.costs.model.fork);
                self.then(t, cost, Effect::Spawn(group, arg))
            }
            Op::Wait(child) => self.then(t, syscall, Effect::Wait(child)),
            Op::SetAttrs => self.then(t, syscall, Effect::SetAttrs),
            // Read at the call's start, charged as the system call that reads /proc/stat.
            Op::CpuTimes => {
                let (busy, idle) = self.cpus.times(self.view.now);
                let ns = std::time::Duration::from_nanos;
                self.shared.slots[t].borrow_mut().cpu_times = Some(CpuTimes {
                    total: ns(busy + idle),
                    idle: ns(idle),
                });
                self.then(t, syscall, Effect::Resume)
            }
        };
        self.tasks[t].remaining += cost;
        true
    }

    /// Set what task `t` does when its coming burst ends; returns `cost`, the burst's length.
    #[inline(always)]
    fn then(&mut self, t: TaskId, cost: u64, then: Effect) -> u64 {
        self.tasks[t].then = then;
        cost
    }

    /// The running task `t` of `cpu` blocks until `effect` can complete (room in a channel,
    /// bytes in it, a free lock); it tries `effect` again when woken.
    pub(super) fn block_to_retry(&mut self, cpu: CpuId, t: TaskId, effect: Effect) {
        self.tasks[t].then = effect;
        self.block(cpu, t);
    }

    /// When a sleep until `until` begun now on `cpu` ends on a jiffy timer wheel
    /// ([`Policy::jiffy_timers`](crate::policy::Policy::jiffy_timers)): the current jiffy began
    /// at `cpu`'s last tick; the sleep lasts its length in jiffies rounded up, plus one, from
    /// there; the timer softirq runs when that tick's handler (`tick`, at least 1 ns) is done,
    /// so the tick's accounting comes first.
    fn jiffy_timer_end(&self, cpu: CpuId, until: u64) -> u64 {
        let tick = self.costs.model.tick_ns();
        let phase = self.cpus[cpu].tick_phase % tick;
        let now = self.view.now;
        let jiffies = (until - now).div_ceil(tick);
        // The tick that began the current jiffy, and the one the sleep ends at.
        let end = if now >= phase {
            now - (now - phase) % tick + (jiffies + 1) * tick
        } else {
            phase + jiffies * tick
        };
        end + self.costs.model.tick.max(1)
    }

    /// The running task `t` of `cpu` blocks.
    pub(super) fn block(&mut self, cpu: CpuId, t: TaskId) {
        self.block_as(cpu, t, DequeueKind::Sleep);
    }

    /// The running task `t` of `cpu` blocks on a device (a disk request, a swap-in read): a
    /// TASK_UNINTERRUPTIBLE sleep in Linux, which some policies treat differently.
    pub(super) fn block_on_device(&mut self, cpu: CpuId, t: TaskId) {
        self.block_as(cpu, t, DequeueKind::DeviceWait);
    }

    fn block_as(&mut self, cpu: CpuId, t: TaskId, kind: DequeueKind) {
        self.tasks[t].state = State::Blocked;
        self.tasks[t].slept_at = self.view.now;
        self.policy.dequeue_task(&self.view, cpu, t, kind);
        self.view.curr[cpu] = None;
        self.rq_change(cpu, false);
        self.timeline_event(t, cpu, TaskState::Off);
        self.tasks[t].nvcsw += 1;
        self.schedule(cpu, Some(t));
    }

    pub(super) fn exit(&mut self, cpu: CpuId, t: TaskId) {
        self.tasks.exited(t, self.view.now);
        self.policy
            .dequeue_task(&self.view, cpu, t, DequeueKind::Exit);
        self.view.curr[cpu] = None;
        self.rq_change(cpu, false);
        self.timeline_event(t, cpu, TaskState::Off);
        self.schedule(cpu, Some(t));
        self.notify_parent(t);
    }
}
