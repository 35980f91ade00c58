//! The machine's channels: the plan's own (pipes, UNIX-domain sockets, loopback TCP or UDP) and
//! its in-process queues, each a queue of bytes with at most one reader waiting for a length
//! and writers waiting for room; the loopback transmit lock; the socket queues' accounting
//! (`sock_queue.rs`) and TCP's ACK rule (`tcp_drain.rs`). [`Net`] owns that state and answers
//! what a message costs and whom a deposit or a read lets go on; the machine's effects
//! ([`Machine::send`], [`Machine::recv`]) wake them through the wakeup path.
//!
//! FreeBSD's loopback through the netisr thread keeps its queue in the kernel threads' part
//! (`kthreads.rs`); its connection locks are the channels' (`Channel::conn`).

use super::accounting::KernelSpinLock;
use super::byte_queue::{Block, ByteQueue};
use super::sync::SimLock;
use super::{Effect, Machine, State};
use crate::cost::CostModel;
use crate::policy::{CpuId, TaskId};
use schedlab_workload::{Plan, Transport};
use std::collections::VecDeque;

/// One channel.
#[derive(Default)]
pub(super) struct Channel {
    /// The unread bytes (`byte_queue.rs`).
    pub(super) bytes: ByteQueue,
    /// The task waiting for bytes and how many it waits for (1: any).
    pub(super) reader: Option<(TaskId, usize)>,
    /// Tasks waiting for room.
    pub(super) writers: Vec<TaskId>,
    /// Bytes sent and queued for the netisr thread, not yet deposited.
    pub(super) in_flight: usize,
    /// The sending connection's lock (FreeBSD's inpcb lock, held across `tcp_output`).
    pub(super) conn: SimLock,
    /// Segments the netisr thread delivered on this channel (TCP ACKs every second one).
    pub(super) segments: u64,
    /// The CPU that last sent or received on it (for `bounce`).
    pub(super) last_cpu: Option<CpuId>,
    /// The unread bytes and the skb truesize of the messages queued on it, oldest first, on a
    /// socket channel whose queue the profile charges for or bounds (`sock_queue.rs`).
    pub(super) msg_lens: VecDeque<(usize, u64)>,
    /// The truesize of those messages (`skb.rs`), which `sock_slots` bounds.
    pub(super) sock_bytes: u64,
    /// Bytes that arrived since the reader's last ACK, on a TCP channel whose ACKs the profile
    /// charges (`tcp_drain.rs`).
    pub(super) tcp_unacked: usize,
}

/// The channels and what sending on them involves.
pub(super) struct Net {
    /// Every channel: the plan's own, then its in-process queues.
    pub(super) channels: Vec<Channel>,
    /// The channels' emptied blocks, for the next writes.
    pub(super) spare_blocks: Vec<Block>,
    /// The loopback transmit lock ([`CostModel::net_lock`]).
    pub(super) net_lock: KernelSpinLock,
    /// Whether the plan's own channels go over loopback TCP/UDP (and take the transmit lock).
    pub(super) loopback: bool,
    /// Whether they go over TCP (segments are ACKed).
    pub(super) tcp: bool,
    /// Kernel work per message on the plan's own channels (its transport's).
    pub(super) msg_cost: u64,
    /// Kernel work per message on an in-process queue (a pipe's).
    queue_msg_cost: u64,
    /// Whether the plan's own channels are UNIX-domain sockets and the profile charges their
    /// messages for the queue or bounds it in messages (`sock_queue` or `sock_slots` > 0;
    /// `sock_queue.rs`).
    pub(super) sock_queue_on: bool,
    /// Bytes of skb (truesize) queued on all those channels.
    pub(super) sock_queued: u64,
    /// Channels below this index are the plan's own (charged `msg_cost`); the rest are its
    /// in-process queues, charged as pipe messages.
    pub(super) plan_channels: usize,
    /// Whether the plan's own channels' receive half runs in FreeBSD's netisr thread (set when
    /// the machine creates it, `kthreads.rs`).
    pub(super) netisr: bool,
}

impl Net {
    /// The channels of `plan` under the cost model `cost`, all empty.
    pub(super) fn new(plan: &Plan, cost: &CostModel) -> Net {
        Net {
            channels: (0..plan.all_channels())
                .map(|_| Channel::default())
                .collect(),
            spare_blocks: Vec::new(),
            net_lock: KernelSpinLock::default(),
            loopback: matches!(plan.transport, Transport::Tcp | Transport::Udp),
            tcp: plan.transport == Transport::Tcp,
            msg_cost: match plan.transport {
                Transport::Tcp | Transport::Udp => cost.net_msg,
                Transport::Socketpair | Transport::Unix => cost.sock_msg,
                Transport::Pipe => cost.msg,
            },
            queue_msg_cost: cost.msg,
            sock_queue_on: (cost.sock_queue > 0 || cost.sock_slots > 0)
                && matches!(plan.transport, Transport::Socketpair | Transport::Unix),
            sock_queued: 0,
            plan_channels: plan.channels,
            netisr: false,
        }
    }

    /// Whether channel `ch` is one of the plan's own (not an in-process queue).
    #[inline]
    pub(super) fn is_plan(&self, ch: usize) -> bool {
        ch < self.plan_channels
    }

    /// Whether channel `ch` goes through the netisr thread.
    #[inline]
    pub(super) fn via_netisr(&self, ch: usize) -> bool {
        self.netisr && self.is_plan(ch)
    }

    /// Kernel work per message on channel `ch`: the plan's transport for its own channels, a
    /// pipe's for its in-process queues.
    #[inline]
    pub(super) fn channel_msg_cost(&self, ch: usize) -> u64 {
        if self.is_plan(ch) {
            self.msg_cost
        } else {
            self.queue_msg_cost
        }
    }

    /// The netisr's half of a loopback message's kernel work; the sender pays the rest.
    pub(super) fn netisr_half(&self) -> u64 {
        self.msg_cost / 2
    }

    /// Whether a message sent on channel `ch` takes the loopback transmit lock: it goes over
    /// loopback TCP/UDP and the lock has a cost.
    #[inline]
    pub(super) fn takes_net_lock(&self, ch: usize, cost: &CostModel) -> bool {
        self.loopback && self.is_plan(ch) && cost.net_lock != 0
    }

    /// Whether a message of `len` bytes may be deposited on channel `ch` now: an empty channel
    /// always takes one; otherwise the socket's own bound where it applies
    /// ([`Net::sock_slots_room`]), else the profile's `channel_bytes`.
    #[inline]
    pub(super) fn has_room(&self, ch: usize, len: usize, cost: &CostModel) -> bool {
        let chan = &self.channels[ch];
        chan.bytes.is_empty()
            || self
                .sock_slots_room(ch, cost)
                .unwrap_or_else(|| (chan.bytes.len() + len) as u64 <= cost.channel_bytes)
    }

    /// Append `data` to channel `ch`. Returns the reader it lets go on (it waited for no more
    /// bytes than the channel now holds), no longer registered as waiting.
    #[inline]
    pub(super) fn deposit(&mut self, ch: usize, data: &[u8]) -> Option<TaskId> {
        let chan = &mut self.channels[ch];
        chan.bytes.push(data, &mut self.spare_blocks);
        match chan.reader {
            Some((r, need)) if chan.bytes.len() >= need => {
                chan.reader = None;
                Some(r)
            }
            _ => None,
        }
    }

    /// Take the first `len` bytes of channel `ch` into `out` (whose bytes they replace): a read
    /// of all of them. Returns the writers that waited for room, no longer registered.
    ///
    /// # Panics
    /// If fewer than `len` bytes are waiting.
    #[inline]
    pub(super) fn take(&mut self, ch: usize, len: usize, out: &mut Vec<u8>) -> Vec<TaskId> {
        let chan = &mut self.channels[ch];
        chan.bytes.take(len, out, &mut self.spare_blocks);
        let writers = std::mem::take(&mut chan.writers);
        self.sock_queue_take(ch, len);
        writers
    }
}

impl Machine<'_> {
    /// [`Effect::Send`] for the running task `t` of `cpu`: deposit its message on channel `ch`
    /// and wake the reader it lets go on, or block while the channel has no room. Returns
    /// whether `t` is still on `cpu`.
    #[inline(always)]
    pub(super) fn send(&mut self, cpu: CpuId, t: TaskId, ch: usize) -> bool {
        let mut slot = self.shared.slots[t].borrow_mut();
        let len = slot.outbuf.len();
        if !self.net.has_room(ch, len, &self.costs.model) {
            drop(slot);
            self.net.channels[ch].writers.push(t);
            self.block_to_retry(cpu, t, Effect::Send(ch));
            return false;
        }
        let reader_sleeps = self.net.channels[ch].reader.is_some();
        let wake = self.net.deposit(ch, &slot.outbuf);
        slot.outbuf.clear();
        drop(slot);
        self.net.sock_queue_push(ch, len);
        self.net.tcp_arrived(ch, len, &self.costs.model);
        // A task whose readiness wait another channel ended is already awake.
        if let Some(r) = wake.filter(|&r| self.tasks[r].state == State::Blocked) {
            self.tasks[t].remaining += self.wake(r, Some(cpu), false);
        }
        if !reader_sleeps && self.kernel.has_ksoftirqd() && self.net.tcp && self.net.is_plan(ch) {
            self.tasks[t].remaining += self.softirq_raised_again(cpu);
        }
        true
    }

    /// [`Effect::Recv`] for the running task `t` of `cpu`: take `len` bytes of channel `ch`,
    /// or block until they are there. Returns whether `t` is still on `cpu`.
    #[inline(always)]
    pub(super) fn recv(&mut self, cpu: CpuId, t: TaskId, ch: usize, len: usize) -> bool {
        let chan = &mut self.net.channels[ch];
        if chan.bytes.len() < len {
            chan.reader = Some((t, len));
            self.tcp_recv_sleeps(t, ch);
            self.block_to_retry(cpu, t, Effect::Recv(ch, len));
            return false;
        }
        self.took_bytes(cpu, t, ch, len);
        true
    }

    /// Task `t`, running on `cpu`, takes `len` bytes from channel `ch` (a receive; they are
    /// there) into its slot's `inbuf`: the socket queue gives them back, and `t` pays for the
    /// copy, a TCP wait and ACK where the profile charges them, and the wakeups of the writers
    /// that waited for room.
    pub(super) fn took_bytes(&mut self, cpu: CpuId, t: TaskId, ch: usize, len: usize) {
        let mut slot = self.shared.slots[t].borrow_mut();
        let writers = self.net.take(ch, len, &mut slot.inbuf);
        drop(slot);
        let mut cost = self.costs.copy_cost(len) + self.tcp_wait_cost(t) + self.tcp_ack_cost(ch);
        for w in writers {
            cost += self.wake(w, Some(cpu), false);
        }
        self.tasks[t].remaining += cost;
    }

    /// `bounce` if channel `ch` was last used on another CPU than `cpu`, which uses it now.
    pub(super) fn bounce(&mut self, cpu: CpuId, ch: usize) -> u64 {
        let last = self.net.channels[ch].last_cpu.replace(cpu);
        let bounce = self.costs.model.bounce;
        let Some(last) = last.filter(|&l| l != cpu && bounce != 0) else {
            return 0;
        };
        let bounce = self.costs.by_distance(bounce, last, cpu);
        self.costs.c(bounce)
    }

    /// The loopback transmit lock for a message sent on channel `ch`, if it goes over loopback
    /// TCP/UDP and the lock has a cost: wait (spinning) + hold, the runqueue lock's model.
    pub(super) fn net_lock(&mut self, ch: usize) -> u64 {
        if !self.net.takes_net_lock(ch, &self.costs.model) {
            return 0;
        }
        let hold = self.costs.c(self.costs.model.net_lock);
        self.net.net_lock.take(self.view.now, hold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::plan::{GroupPlan, SyncPlan, TaskMode};

    fn net(transport: Transport, channel_bytes: u64) -> (Net, CostModel) {
        let plan = Plan {
            groups: vec![GroupPlan {
                name: "a",
                tasks: 1,
                spawn: 0,
            }],
            channels: 2,
            duplex: false,
            locks: 0,
            sync: SyncPlan {
                queues: 1,
                ..SyncPlan::default()
            },
            mode: TaskMode::Threads,
            transport,
        };
        let cost = CostModel::profile("modern")
            .unwrap()
            .with_overrides(&[format!("channel_bytes={channel_bytes}")])
            .unwrap();
        (Net::new(&plan, &cost), cost)
    }

    /// A deposit lets the reader go on once the channel holds what it waits for, and only
    /// then; a read gives back the bytes in order and the writers that waited for room.
    #[test]
    fn a_deposit_wakes_the_reader_of_enough_bytes_and_a_read_the_writers() {
        let (mut n, cost) = net(Transport::Pipe, 4096);
        n.channels[0].reader = Some((7, 6));
        assert_eq!(n.deposit(0, &[1, 2, 3]), None);
        assert_eq!(n.channels[0].reader, Some((7, 6)));
        assert_eq!(n.deposit(0, &[4, 5, 6, 7]), Some(7));
        assert_eq!(n.channels[0].reader, None);
        // 7 of 4,096 bytes held: 4,089 more fit, 4,090 do not; an empty channel takes any
        // message.
        assert!(n.has_room(0, 4089, &cost));
        assert!(!n.has_room(0, 4090, &cost));
        assert!(n.has_room(1, 10_000, &cost));
        n.channels[0].writers = vec![3, 4];
        let mut out = Vec::new();
        assert_eq!(n.take(0, 5, &mut out), vec![3, 4]);
        assert_eq!(out, [1, 2, 3, 4, 5]);
        assert!(n.channels[0].writers.is_empty());
        assert_eq!(n.take(0, 2, &mut out), Vec::<TaskId>::new());
        assert_eq!(out, [6, 7]);
    }

    /// The plan's channels cost their transport's message and take the loopback lock when they
    /// go over loopback; its in-process queues cost a pipe's and never take it.
    #[test]
    fn plan_channels_cost_their_transport_and_queues_a_pipes() {
        let (n, cost) = net(Transport::Tcp, 65536);
        let cost = cost.with_overrides(&["net_lock=100".into()]).unwrap();
        assert_eq!(n.channel_msg_cost(0), cost.net_msg);
        assert_eq!(n.channel_msg_cost(2), cost.msg);
        assert!(n.takes_net_lock(1, &cost) && !n.takes_net_lock(2, &cost));
        let (n, cost) = net(Transport::Socketpair, 65536);
        assert_eq!(n.channel_msg_cost(0), cost.sock_msg);
        assert!(!n.takes_net_lock(0, &cost));
        assert!(!n.via_netisr(0));
    }
}
