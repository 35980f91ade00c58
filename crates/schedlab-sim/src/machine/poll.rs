//! Readiness waits and partial reads: what an event loop that multiplexes many connections in
//! one task asks of the kernel — `poll(2)`/`epoll_wait(2)` over its connections with a timeout
//! (fs/select.c's `do_poll`: look at every descriptor; if none is ready, sleep on all their
//! wait queues until a wakeup or the timeout, then look again) and a `read(2)` that returns what
//! has arrived.
//!
//! A waiting task registers as the reader of each of its channels for one byte, as a blocked
//! `recv` does for its length, so that the send paths (`net.rs`, the netisr thread's
//! `net_input`) wake it through the ordinary wakeup path. The first wakeup ends the wait: the
//! task looks at its channels again and drops its other registrations. A timeout is an event
//! that carries the number of the wait it was armed for, and is stale (ignored) once that wait
//! has ended.

use super::{Effect, Event, Machine, SimError, State};
use crate::policy::{CpuId, TaskId};
use schedlab_workload::WorkloadError;

impl Machine<'_> {
    /// [`Effect::Poll`] for the running task `t` of `cpu`: note which of its `pollset` channels
    /// hold bytes; when some do or the deadline has come, the wait is over (true); otherwise
    /// block until a send to one of them or the deadline (false).
    pub(super) fn poll_channels(&mut self, cpu: CpuId, t: TaskId, deadline: Option<u64>) -> bool {
        let mut guard = self.shared.slots[t].borrow_mut();
        let slot = &mut *guard;
        slot.ready.clear();
        if let Some(&bad) = slot
            .pollset
            .iter()
            .find(|&&ch| ch >= self.net.channels.len())
        {
            drop(guard);
            self.failure = Some(SimError::Task {
                task: t,
                error: WorkloadError::Backend(format!(
                    "channel {bad} is not in the workload's plan, which has {}",
                    self.net.channels.len()
                )),
            });
            return true;
        }
        for (i, &ch) in slot.pollset.iter().enumerate() {
            if !self.net.channels[ch].bytes.is_empty() {
                slot.ready.push(i);
            }
        }
        let over = !slot.ready.is_empty() || deadline.is_some_and(|d| d <= self.view.now);
        if over {
            for &ch in &slot.pollset {
                let chan = &mut self.net.channels[ch];
                if chan.reader.is_some_and(|(r, _)| r == t) {
                    chan.reader = None;
                }
            }
            self.tasks[t].poll_gen += 1;
            return true;
        }
        for &ch in &slot.pollset {
            let chan = &mut self.net.channels[ch];
            match chan.reader {
                Some((r, _)) if r != t => {
                    let error = WorkloadError::Backend(format!(
                        "task {t} waits for channel {ch}, which task {r} already reads"
                    ));
                    self.failure = Some(SimError::Task { task: t, error });
                    return true;
                }
                _ => chan.reader = Some((t, 1)),
            }
        }
        drop(guard);
        if let Some(d) = deadline {
            let gen = self.tasks[t].poll_gen;
            self.clock.timer(d, Event::PollTimeout { task: t, gen });
        }
        self.block_to_retry(cpu, t, Effect::Poll(deadline));
        false
    }

    /// The deadline of task `t`'s readiness wait number `gen` has come: wake it if it still
    /// waits in that wait (it then finds its deadline passed).
    pub(super) fn poll_timeout(&mut self, t: TaskId, gen: u64) {
        let task = &self.tasks[t];
        if task.state == State::Blocked
            && matches!(task.then, Effect::Poll(_))
            && task.poll_gen == gen
        {
            self.wake(t, None, false);
        }
    }

    /// [`Effect::RecvSome`] for the running task `t` of `cpu`: take up to `max` of the bytes
    /// channel `ch` holds into the slot's `inbuf` (true), or block until it holds any (false).
    pub(super) fn recv_some(&mut self, cpu: CpuId, t: TaskId, ch: usize, max: usize) -> bool {
        let chan = &mut self.net.channels[ch];
        if chan.bytes.is_empty() && max > 0 {
            chan.reader = Some((t, 1));
            self.tcp_recv_sleeps(t, ch);
            self.block_to_retry(cpu, t, Effect::RecvSome(ch, max));
            return false;
        }
        let len = max.min(chan.bytes.len());
        self.took_bytes(cpu, t, ch, len);
        true
    }
}
