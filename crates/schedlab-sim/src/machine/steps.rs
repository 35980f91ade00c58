//! The effects of a body's context calls: each request becomes a burst of CPU work and then an
//! effect — deposit or take a channel's bytes, sleep, yield, take a lock, wait for the device,
//! touch memory — and the voluntary ways off a CPU, blocking and exit. In kernel/sched/core.c and
//! around it: what the system calls behind the calls do (`pipe_write`/`pipe_read`, futexes,
//! `hrtimer_nanosleep`, `do_sched_yield`), `deactivate_task` before `__schedule` for a sleep,
//! and `do_task_dead` for an exit.

use super::{Effect, Event, Machine, SimError, State};
use crate::context::Op;
use crate::policy::{CpuId, DequeueKind, MachineView, PutPrevKind, TaskId};
use schedlab_workload::{IoKind, WorkloadError};

impl Machine<'_> {
    /// Start (or restart) the burst of the running task of `cpu`.
    pub(super) fn run_burst(&mut self, cpu: CpuId) {
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
    pub(super) fn step(&mut self, cpu: CpuId, t: TaskId) {
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
                        self.block_to_retry(cpu, t, Effect::Send(ch));
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
                        self.block_to_retry(cpu, t, Effect::Recv(ch, len));
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
                        self.block_to_retry(cpu, t, Effect::Lock(l));
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
    pub(super) fn poll(&mut self, cpu: CpuId, t: TaskId) -> bool {
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

    pub(super) fn unlock(&mut self, cpu: CpuId, t: TaskId, l: usize) {
        let lock = &mut self.locks[l];
        if lock.holder == Some(t) {
            lock.holder = None;
            if let Some(w) = lock.waiters.pop_front() {
                let cost = self.wake(w, Some(cpu), false);
                self.tasks[t].remaining += cost;
            }
        }
    }

    /// The running task `t` of `cpu` blocks until `effect` can complete (room in a channel,
    /// bytes in it, a free lock); it tries `effect` again when woken.
    fn block_to_retry(&mut self, cpu: CpuId, t: TaskId, effect: Effect) {
        self.tasks[t].then = effect;
        self.block(cpu, t);
    }

    /// The running task `t` of `cpu` blocks.
    pub(super) fn block(&mut self, cpu: CpuId, t: TaskId) {
        self.tasks[t].state = State::Blocked;
        self.tasks[t].slept_at = self.now;
        self.policy
            .dequeue_task(&view!(self), cpu, t, DequeueKind::Sleep);
        self.curr[cpu] = None;
        self.rq_change(cpu, false);
        self.tasks[t].nvcsw += 1;
        self.schedule(cpu, Some(t));
    }

    pub(super) fn exit(&mut self, cpu: CpuId, t: TaskId) {
        self.tasks[t].state = State::Done;
        self.tasks[t].finished_at = self.now;
        self.live -= 1;
        self.policy
            .dequeue_task(&view!(self), cpu, t, DequeueKind::Exit);
        self.curr[cpu] = None;
        self.rq_change(cpu, false);
        self.schedule(cpu, Some(t));
    }
}
