//! Kernel threads: tasks the machine creates and runs itself, beside the workload's, with bodies
//! of its own — FreeBSD's software-interrupt thread for the network stack, the netisr.
//!
//! A kernel thread is a task after the workload's (`tasks.rs`), created at the start of a
//! repetition with a [`TaskKind`] the policy learns through `task_new`; it is never counted
//! as a live task (the run ends when the workload's tasks are done), never listed as blocked in a
//! deadlock's message, and its counters are reported under the group `kernel`, outside `total`,
//! so the workload's groups keep their meaning and users see what the kernel's work cost. Its
//! body is a small state machine on the same [`Effect`]s the workload's calls become: the
//! machine's `step` asks [`Machine::kernel_thread_resume`] instead of polling a body.
//!
//! **The netisr thread** (FreeBSD 6/7). Loopback output does not deliver inline: `if_simloop`
//! (sys/net/if_loop.c) hands the packet to `netisr_queue` (sys/net/netisr.c), which queues it
//! and schedules the swi "net" thread (`swi_sched`); that thread runs `ip_input`/`tcp_input`,
//! appends the data to the receiving socket and wakes its reader (`sorwakeup`). Its priority is
//! PI_SOFT + SWI_NET × RQ_PPQ = 36 + 1 × 4 = 40 (FreeBSD 6/7 sys/sys/priority.h and
//! sys/kern/kern_intr.c `swi_add`), an interrupt-thread priority (≤ PRI_MAX_ITHD, 63), so
//! `maybe_preempt` (sys/kern/kern_switch.c) switches to it at once inside the sender's system
//! call under `options PREEMPTION`, and without it NEEDRESCHED makes the sender switch at its
//! return to user mode. Meanwhile the sender holds its connection's lock (`INP_LOCK`, taken by
//! `tcp_usr_send` around `tcp_output`, sys/netinet/tcp_usrreq.c); the ACK of every second
//! segment (delayed ACKs, `DELAY_ACK` in sys/netinet/tcp_input.c, `net.inet.tcp.delayed_ack`=1)
//! is processed by the netisr thread under that lock, so a sender preempted inside `tcp_output`
//! makes the netisr thread block, lend its priority to the sender (turnstile propagation), and
//! switch back — the "poor series of context switches in the network stack" with PREEMPTION and
//! loopback traffic on a uniprocessor that Robert Watson describes in seed 001.
//!
//! Cost: the loopback message's kernel work (`net_msg` on the send side) is split in two halves:
//! the sender pays `net_msg − net_msg/2` (socket layer, `tcp_output`, `ip_output`,
//! `if_simloop`), the netisr thread `net_msg/2` (`ip_input`, `tcp_input`, `sbappend`, the
//! wakeup), so the kernel work per message is the inline model's. The ACK's processing is inside
//! the netisr's half. Linux policies keep inline delivery: `netif_rx` and the NET_RX softirq run
//! at the sender's `local_bh_enable` (net/core/dev.c), with no thread switch — ksoftirqd only
//! takes over under softirq overload, which the simulator does not model.
//!
//! **ksoftirqd** (Linux 2.5.22–2.5.30, under a policy that answers
//! [`crate::policy::Policy::softirq_wakes_ksoftirqd`], o1's `softirq=2.5.25`): one per CPU,
//! nice 19, allowed only on its CPU. A loopback TCP segment sent on a plan channel whose reader
//! does not sleep in a receive on it is processed in the sender's NET_RX pass and ACKed from
//! there, which raises NET_RX again; `do_softirq` leaves that to `wakeup_softirqd`, which wakes
//! the sender CPU's ksoftirqd if it sleeps (the sender pays the wakeup). By the time ksoftirqd
//! runs, the next `local_bh_enable` has processed the ACK (its cost is in `net_msg`), so it
//! finds nothing pending and sleeps again: it costs its wakeups and switches, not work.
//!
//! **The disk interrupt thread** (FreeBSD 6/7). A device request (a read or write of the
//! task's file, a swap-in) completes with the disk controller's interrupt, whose handler
//! schedules the driver's interrupt thread (`swi_sched`/`intr_event_schedule_thread`,
//! sys/kern/kern_intr.c); that thread runs `biodone` (sys/kern/vfs_bio.c), which wakes the
//! thread sleeping on the buffer. Its priority is PI_DISK = PRI_MIN_ITHD + 20 = 20 (FreeBSD 6/7
//! sys/sys/priority.h), so under PREEMPTION `maybe_preempt` runs it at once over anything but a
//! better interrupt thread, and without it NEEDRESCHED waits for the running thread's return to
//! user mode — which a kernel-mode thread (`mode=kernel`, an nfsd) reaches only by blocking: Bruce
//! Evans's point in seed 001 that "PREEMPTION is needed even to give correct scheduling of
//! interrupt threads". The interrupt is taken on the CPU the thread last ran on (the simulator
//! does not route interrupts); the thread's own work is the wakeup's cost (`wakeup` and the
//! run-queue lock), the driver's completion code is not modelled. Linux policies keep the
//! wakeup in the interrupt handler (`end_request` → `wake_up`), which is the timer's wakeup.
//!
//! Simplifications: one netisr thread (FreeBSD 6/7 had one swi "net"); only the plan's own TCP
//! and UDP channels go through it (UDP has no ACK and no connection lock wait); the ACK's lock
//! is the data channel's own (one lock per direction of a connection); a thread waiting for the
//! connection lock blocks at once (FreeBSD's adaptive mutexes spin while the owner runs on
//! another CPU — the wait here is a switch either way).

use super::{Effect, Event, Machine, State};
use crate::policy::{CpuId, CpuMask, TaskId, TaskKind, TaskSetup};
use schedlab_workload::knobs::Knobs;
use std::collections::VecDeque;

/// The kernel threads the machine can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum KernelThread {
    /// FreeBSD's swi "net" thread: loopback's receive half.
    Netisr,
    /// Linux's kswapd: reclaims memory below the low watermark (`memory.rs`).
    Kswapd,
    /// FreeBSD's disk interrupt thread: wakes the tasks whose device requests completed.
    DiskIthread,
    /// Linux 2.5's ksoftirqd of one CPU: woken when a softirq is raised again in its own pass.
    Ksoftirqd,
}

/// ksoftirqd's nice level (2.5's `ksoftirqd`: `set_user_nice(current, 19)`).
pub const KSOFTIRQD_NICE: i32 = 19;

/// FreeBSD 6/7's netisr thread priority: PI_SOFT (36) + SWI_NET (1) × RQ_PPQ (4).
pub const NETISR_PRIORITY: u8 = 40;

/// FreeBSD 6/7's disk interrupt thread priority: PI_DISK, PRI_MIN_ITHD + 20.
pub const DISK_ITHREAD_PRIORITY: u8 = 20;

/// The disk interrupt thread's state: the tasks whose requests completed, oldest first.
struct DiskIthread {
    /// Its task.
    task: TaskId,
    /// Tasks to wake (`biodone`).
    done: VecDeque<TaskId>,
    /// Waiting for an interrupt.
    idle: bool,
}

/// The netisr thread's state: its packet queue and what it is doing.
struct Netisr {
    /// Its task.
    task: TaskId,
    /// Packets queued by senders (`netisr_queue`), oldest first: channel and bytes.
    queue: VecDeque<(usize, Vec<u8>)>,
    /// The packet whose receive half is being worked off.
    current: Option<(usize, Vec<u8>)>,
    /// Waiting for packets in `ithread_loop` (a send wakes it).
    idle: bool,
    /// Emptied packet buffers, reused: a send takes one for its slot's `outbuf`, whose buffer
    /// becomes the packet.
    spare: Vec<Vec<u8>>,
}

/// The machine's kernel threads that serve interrupts and the network (kswapd is memory's,
/// `memory.rs`): their work queues and whether they sleep, and where kernel threads may run.
pub(super) struct Kernel {
    /// FreeBSD's netisr thread, when the policy delivers loopback through it and the plan's
    /// channels are loopback TCP/UDP.
    netisr: Option<Netisr>,
    /// FreeBSD's disk interrupt thread, created at the first device request on a policy that
    /// completes I/O through one.
    disk_ithread: Option<DiskIthread>,
    /// The CPUs kernel threads may run on (`--kernel-cpus`).
    pub(super) allowed: CpuMask,
    /// Per CPU, its ksoftirqd's task and whether it sleeps; empty unless the policy wakes it.
    ksoftirqd: Vec<(TaskId, bool)>,
}

impl Kernel {
    /// No kernel thread yet; those to come may run on `allowed`.
    pub(super) fn new(allowed: CpuMask) -> Kernel {
        Kernel {
            netisr: None,
            disk_ithread: None,
            allowed,
            ksoftirqd: Vec::new(),
        }
    }

    /// Whether ksoftirqd threads run (the policy wakes them).
    pub(super) fn has_ksoftirqd(&self) -> bool {
        !self.ksoftirqd.is_empty()
    }

    /// `wakeup_softirqd(cpu)`: CPU `cpu`'s ksoftirqd if it sleeps (the caller wakes it), now
    /// counted awake; `None` if it is awake already or there is none.
    fn wakeup_softirqd(&mut self, cpu: CpuId) -> Option<TaskId> {
        let (task, idle) = self.ksoftirqd.get_mut(cpu)?;
        std::mem::take(idle).then_some(*task)
    }

    /// ksoftirqd `t` found nothing pending and goes to sleep.
    fn ksoftirqd_sleeps(&mut self, t: TaskId) {
        if let Some(k) = self.ksoftirqd.iter_mut().find(|k| k.0 == t) {
            k.1 = true;
        }
    }

    /// The netisr thread is task `task`, asleep with nothing queued.
    fn netisr_started(&mut self, task: TaskId) {
        self.netisr = Some(Netisr {
            task,
            queue: VecDeque::new(),
            current: None,
            idle: true,
            spare: Vec::new(),
        });
    }

    /// Queue a packet for channel `ch`: the bytes of `outbuf`, which gets an emptied buffer
    /// in their place (`netisr_queue`). Returns the netisr thread's task if it slept (the
    /// sender wakes it).
    fn queue_packet(&mut self, ch: usize, outbuf: &mut Vec<u8>) -> Option<TaskId> {
        let n = self.netisr.as_mut().expect("netisr");
        let next = n.spare.pop().unwrap_or_default();
        let packet = std::mem::replace(outbuf, next);
        n.queue.push_back((ch, packet));
        std::mem::take(&mut n.idle).then_some(n.task)
    }

    /// The netisr thread takes its next packet to work on. Returns false if none is queued
    /// (it goes to sleep).
    fn next_packet(&mut self) -> bool {
        let n = self
            .netisr
            .as_mut()
            .expect("the netisr thread has its state");
        match n.queue.pop_front() {
            None => {
                n.idle = true;
                false
            }
            Some(packet) => {
                n.current = Some(packet);
                true
            }
        }
    }

    /// The netisr thread's packet whose receive half is done: its channel and bytes. Give the
    /// buffer back with [`Kernel::recycle`].
    fn take_current(&mut self) -> (usize, Vec<u8>) {
        let n = self.netisr.as_mut().expect("netisr");
        n.current.take().expect("a packet being delivered")
    }

    /// An emptied packet buffer, for a later send.
    fn recycle(&mut self, mut packet: Vec<u8>) {
        packet.clear();
        self.netisr.as_mut().expect("netisr").spare.push(packet);
    }

    /// The device finished task `t`'s request: queue it for the disk interrupt thread (which
    /// exists). Returns the thread's task if it slept (the interrupt wakes it).
    fn disk_done(&mut self, t: TaskId) -> Option<TaskId> {
        let d = self.disk_ithread.as_mut().expect("the disk ithread");
        d.done.push_back(t);
        std::mem::take(&mut d.idle).then_some(d.task)
    }

    /// The disk interrupt thread's next task to wake, or `None` (it goes to sleep).
    fn next_disk_done(&mut self) -> Option<TaskId> {
        let d = self
            .disk_ithread
            .as_mut()
            .expect("the disk ithread has its state");
        let next = d.done.pop_front();
        d.idle = next.is_none();
        next
    }
}

impl Machine<'_> {
    /// Create the kernel threads this repetition needs: the netisr thread when the policy
    /// delivers loopback through it and the plan's channels are loopback TCP/UDP.
    pub(super) fn start_kernel_threads(&mut self) {
        if self.net.loopback && self.net.plan_channels > 0 && self.policy.loopback_via_netisr() {
            let task = self.spawn_kernel_thread(
                KernelThread::Netisr,
                TaskKind::Interrupt {
                    priority: NETISR_PRIORITY,
                },
            );
            self.kernel.netisr_started(task);
            self.net.netisr = true;
        }
        if self.net.tcp && self.net.plan_channels > 0 && self.policy.softirq_wakes_ksoftirqd() {
            for cpu in 0..self.cpus.len() {
                let mut only = CpuMask::default();
                only.insert(cpu);
                let knobs = Knobs {
                    nice: Some(KSOFTIRQD_NICE),
                    ..Knobs::default()
                };
                let task = self.spawn_kernel_thread_on(
                    KernelThread::Ksoftirqd,
                    TaskKind::Kernel,
                    knobs,
                    only,
                );
                self.kernel.ksoftirqd.push((task, true));
            }
        }
    }

    /// A segment sent on loopback TCP channel `ch` by the task running on `cpu` was processed
    /// in its NET_RX pass with no reader asleep for it, and ACKed from there: wake `cpu`'s
    /// ksoftirqd if it sleeps. Returns what the wakeup costs the sender (0 if none).
    pub(super) fn softirq_raised_again(&mut self, cpu: CpuId) -> u64 {
        match self.kernel.wakeup_softirqd(cpu) {
            Some(k) => self.wake(k, Some(cpu), false),
            None => 0,
        }
    }

    /// Create kernel thread `kthread`, asleep, allowed on the kernel threads' CPUs
    /// (`--kernel-cpus`, every CPU by default). May be called during the
    /// run (kswapd is created the first time memory runs low).
    pub(super) fn spawn_kernel_thread(&mut self, kthread: KernelThread, kind: TaskKind) -> TaskId {
        let allowed = self.kernel.allowed;
        self.spawn_kernel_thread_on(kthread, kind, Knobs::default(), allowed)
    }

    /// Create kernel thread `kthread`, asleep, with `knobs`, allowed on `allowed`.
    fn spawn_kernel_thread_on(
        &mut self,
        kthread: KernelThread,
        kind: TaskKind,
        knobs: Knobs,
        allowed: CpuMask,
    ) -> TaskId {
        let id = self.tasks.len();
        let setup = TaskSetup {
            id,
            group: usize::MAX,
            knobs,
            allowed,
            kind,
        };
        self.policy.task_new(&self.view, &setup);
        let rq_cpu = allowed.lowest().unwrap_or(0);
        self.tasks.add_kernel_thread(kthread, rq_cpu);
        self.timeline_task(usize::MAX, setup.allowed);
        id
    }

    /// Start a device request of task `t` (about to block) that takes `ns`: its completion
    /// wakes it through the disk interrupt thread where the policy has one, else directly.
    pub(super) fn device_request(&mut self, t: TaskId, ns: u64) {
        let event = if self.policy.device_interrupt_threads() {
            Event::DeviceDone { task: t }
        } else {
            Event::Timer { task: t }
        };
        self.clock.timer(self.view.now + ns, event);
    }

    /// The device finished `t`'s request: queue it for the disk interrupt thread (created the
    /// first time) and schedule the thread from the interrupt.
    pub(super) fn device_interrupt(&mut self, t: TaskId) {
        if self.kernel.disk_ithread.is_none() {
            let task = self.spawn_kernel_thread(
                KernelThread::DiskIthread,
                TaskKind::Interrupt {
                    priority: DISK_ITHREAD_PRIORITY,
                },
            );
            self.kernel.disk_ithread = Some(DiskIthread {
                task,
                done: VecDeque::new(),
                idle: true,
            });
        }
        if let Some(task) = self.kernel.disk_done(t) {
            self.wake(task, None, false);
        }
    }

    /// Kernel thread `t`, current on `cpu`, has finished its last step: give it its next one.
    /// Returns false if it left the CPU (it waits for work).
    pub(super) fn kernel_thread_resume(&mut self, cpu: CpuId, t: TaskId, k: KernelThread) -> bool {
        match k {
            KernelThread::Kswapd => self.kswapd_resume(cpu, t),
            KernelThread::Ksoftirqd => {
                self.kernel.ksoftirqd_sleeps(t);
                self.block(cpu, t);
                false
            }
            KernelThread::DiskIthread => match self.kernel.next_disk_done() {
                None => {
                    self.block(cpu, t);
                    false
                }
                Some(w) => {
                    let cost = self.wake(w, Some(cpu), false);
                    self.tasks[t].remaining += cost;
                    true
                }
            },
            KernelThread::Netisr => {
                if !self.kernel.next_packet() {
                    self.block(cpu, t);
                    return false;
                }
                let half = self.costs.c(self.net.netisr_half());
                let task = &mut self.tasks[t];
                task.remaining += half;
                task.then = Effect::NetInput;
                true
            }
        }
    }

    /// [`Effect::NetOutput`] for the running task `t` of `cpu`: queue its message for the
    /// netisr thread under the connection's lock, and wake the thread. Returns false if `t`
    /// blocked (the channel is full, or another sender holds the lock).
    ///
    /// The room in the channel is looked at once, before the lock, as `sosend` checks the
    /// socket buffer's space before `tcp_usr_send` takes `INP_LOCK`: a sender woken for the
    /// lock ([`Effect::NetLock`]) only takes it. (Were it to look at the room again and sleep
    /// on a full channel, the lock's other waiters would stay asleep with the lock free.)
    pub(super) fn net_output(&mut self, cpu: CpuId, t: TaskId, ch: usize) -> bool {
        let len = self.shared.slots[t].borrow().outbuf.len();
        let chan = &mut self.net.channels[ch];
        let queued = chan.bytes.len() + chan.in_flight;
        if queued > 0 && (queued + len) as u64 > self.costs.model.channel_bytes {
            chan.writers.push(t);
            self.block_to_retry(cpu, t, Effect::NetOutput(ch));
            return false;
        }
        self.net_lock_conn(cpu, t, ch, len)
    }

    /// [`Effect::NetLock`] for the running task `t` of `cpu`, whose message of `len` bytes
    /// fits in channel `ch`: take the connection's lock, queue the message for the netisr
    /// thread and wake it. Returns false if `t` blocked (another task holds the lock).
    pub(super) fn net_lock_conn(&mut self, cpu: CpuId, t: TaskId, ch: usize, len: usize) -> bool {
        let chan = &mut self.net.channels[ch];
        if let Some(h) = chan.conn.holder.filter(|&h| h != t) {
            chan.conn.waiters.push_back(t);
            self.policy.lend_priority(&self.view, h, t);
            self.block_to_retry(cpu, t, Effect::NetLock(ch));
            return false;
        }
        chan.conn.holder = Some(t);
        chan.in_flight += len;
        let woken = self
            .kernel
            .queue_packet(ch, &mut self.shared.slots[t].borrow_mut().outbuf);
        if let Some(w) = woken {
            let asked = self.cpus[cpu].need_resched;
            let cost = self.wake(w, Some(cpu), false);
            self.tasks[t].remaining += cost;
            // NEEDRESCHED without maybe_preempt: the switch waits for the end of the system
            // call, which goes on (back through ip_output and tcp_output).
            if !asked && self.cpus[cpu].need_resched && !self.policy.wakeup_preempt_at_once(cpu) {
                self.cpus[cpu].need_resched = false;
                self.cpus[cpu].ast_pending = true;
            }
        }
        self.tasks[t].then = Effect::NetSent(ch);
        true
    }

    /// [`Effect::NetSent`]: the sender releases the connection's lock (waking its first waiter)
    /// and returns to user mode, where a deferred reschedule is acted on.
    pub(super) fn net_sent(&mut self, cpu: CpuId, t: TaskId, ch: usize) {
        self.release_conn(cpu, t, ch);
        if std::mem::take(&mut self.cpus[cpu].ast_pending) {
            self.cpus[cpu].need_resched = true;
        }
    }

    fn release_conn(&mut self, cpu: CpuId, t: TaskId, ch: usize) {
        let conn = &mut self.net.channels[ch].conn;
        debug_assert_eq!(conn.holder, Some(t));
        conn.holder = None;
        if let Some(w) = conn.waiters.pop_front() {
            let cost = self.wake(w, Some(cpu), false);
            self.tasks[t].remaining += cost;
        }
    }

    /// [`Effect::NetInput`] for the netisr thread `t`: deposit its packet and wake the reader;
    /// a TCP segment's ACK follows every second segment.
    pub(super) fn net_input(&mut self, cpu: CpuId, t: TaskId) {
        let (ch, packet) = self.kernel.take_current();
        let wake = self.net.deposit(ch, &packet);
        let chan = &mut self.net.channels[ch];
        chan.in_flight -= packet.len();
        chan.segments += 1;
        let ack = self.net.tcp && chan.segments.is_multiple_of(2);
        self.kernel.recycle(packet);
        // A task whose readiness wait another channel ended is already awake.
        if let Some(r) = wake.filter(|&r| self.tasks[r].state == State::Blocked) {
            self.tasks[t].remaining += self.wake(r, Some(cpu), false);
        }
        if ack {
            self.tasks[t].then = Effect::NetAck(ch);
        }
    }

    /// [`Effect::NetAck`]: the netisr thread `t` takes the sending connection's lock for the
    /// ACK; while the sender holds it, `t` lends it its priority and blocks. Returns false if
    /// it blocked.
    ///
    /// The thread takes the lock and releases it within its work on the ACK: the release
    /// wakes the lock's first waiter, as `INP_UNLOCK` does (a sender that waited behind the
    /// thread would otherwise sleep on with the lock free).
    pub(super) fn net_ack(&mut self, cpu: CpuId, t: TaskId, ch: usize) -> bool {
        let conn = &mut self.net.channels[ch].conn;
        if let Some(h) = conn.holder {
            conn.waiters.push_back(t);
            debug_assert!(self.tasks[h].state != State::Done);
            self.policy.lend_priority(&self.view, h, t);
            self.block_to_retry(cpu, t, Effect::NetAck(ch));
            return false;
        }
        if let Some(w) = conn.waiters.pop_front() {
            let cost = self.wake(w, Some(cpu), false);
            self.tasks[t].remaining += cost;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet wakes the sleeping netisr thread once; the thread works its queue in order,
    /// sleeps when it is empty, and the buffers come back for later sends.
    #[test]
    fn the_netisr_queue_wakes_its_thread_once_and_drains_in_order() {
        let mut k = Kernel::new(CpuMask::of_list(None, 2));
        k.netisr_started(9);
        let mut out = vec![1, 2];
        assert_eq!(k.queue_packet(3, &mut out), Some(9));
        assert!(out.is_empty());
        out.extend([7]);
        assert_eq!(k.queue_packet(4, &mut out), None, "already awake");
        assert!(k.next_packet());
        assert_eq!(k.take_current(), (3, vec![1, 2]));
        k.recycle(vec![1, 2]);
        assert!(k.next_packet());
        assert_eq!(k.take_current(), (4, vec![7]));
        assert!(!k.next_packet(), "empty: it sleeps");
        out = vec![5];
        assert_eq!(k.queue_packet(3, &mut out), Some(9), "asleep again");
        assert_eq!(out.capacity(), 2, "a recycled buffer");
    }

    /// Completed requests wake the sleeping disk thread once; it wakes their tasks in order,
    /// then sleeps.
    #[test]
    fn the_disk_thread_wakes_completed_tasks_in_order() {
        let mut k = Kernel::new(CpuMask::of_list(None, 1));
        k.disk_ithread = Some(DiskIthread {
            task: 5,
            done: VecDeque::new(),
            idle: true,
        });
        assert_eq!(k.disk_done(1), Some(5));
        assert_eq!(k.disk_done(2), None);
        assert_eq!(k.next_disk_done(), Some(1));
        assert_eq!(k.next_disk_done(), Some(2));
        assert_eq!(k.next_disk_done(), None);
        assert_eq!(k.disk_done(3), Some(5));
    }
}
