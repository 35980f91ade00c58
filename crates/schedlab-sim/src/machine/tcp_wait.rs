//! A loopback TCP receive that sleeps for its data: what it costs beyond a pipe read's sleep
//! and wakeup (the cost model's `net_wait`).
//!
//! In Linux (net/ipv4/tcp.c, `tcp_recvmsg_locked`; net/core/sock.c, `sk_wait_data`) a reader
//! that finds the receive queue empty marks the socket (SOCKWQ_ASYNC_WAITDATA), releases the
//! socket lock (`release_sock`, which first processes the backlog of segments that arrived
//! while it held the lock), sleeps on the socket's wait queue, and on waking takes the lock
//! again and loops; the data it waits for arrives through the sender's `tcp_sendmsg` →
//! `ip_output` → `loopback_xmit` → `netif_rx` and the NET_RX softirq, where `tcp_v4_rcv`
//! queues it and `sk_data_ready` (`sock_def_readable`) wakes the reader; the woken reader's
//! `tcp_cleanup_rbuf` may send an ACK. A pipe's blocking read has none of this beyond the wait
//! queue and the wakeup, which the machine charges as `wakeup` and `switch` for every
//! transport. The extra is one figure, measured by `calibrate` as a same-CPU ping-pong over two
//! TCP connections less one over two pipes and less the one-thread write + reads of each
//! (`net_msg`, `msg`), so that the simulated TCP ping-pong takes what the real one does.
//!
//! The machine charges it to the reader, as part of the receive that completes after its
//! sleep (where `sk_wait_data` returns and `tcp_recvmsg` goes on), for a blocking receive of
//! the whole message (`recv`) or of what is there (`recv_some`) on the plan's own TCP channels.
//! A readiness wait (`ppoll`, `poll.rs`) sleeps on the same wait queue but not in
//! `sk_wait_data`, and is not charged. With `net_wait` 0 (both built-in profiles) nothing
//! changes: the charge is 0 and draws no jitter.

use super::Machine;
use crate::policy::TaskId;

impl Machine<'_> {
    /// Task `t` is about to sleep in a receive on channel `ch`: if `ch` is one of the plan's
    /// loopback TCP channels, the receive that completes after the wakeup pays `net_wait`.
    pub(super) fn tcp_recv_sleeps(&mut self, t: TaskId, ch: usize) {
        if self.net.tcp && self.net.is_plan(ch) {
            self.tasks[t].tcp_slept = true;
        }
    }

    /// The extra cost of task `t`'s receive that completes now: `net_wait` if it slept in a
    /// TCP receive since the last one completed, else 0.
    pub(super) fn tcp_wait_cost(&mut self, t: TaskId) -> u64 {
        if std::mem::take(&mut self.tasks[t].tcp_slept) {
            self.costs.c(self.costs.model.net_wait)
        } else {
            0
        }
    }
}
