//! A loopback TCP receive costs by what it drains: the ACK it may send ([`CostModel::net_ack`]).
//!
//! In Linux a read on a TCP socket ends in `tcp_cleanup_rbuf` (net/ipv4/tcp.c, called by
//! `tcp_recvmsg_locked` with the bytes copied), which sends an ACK (`tcp_send_ack`) only when
//! one is scheduled (`inet_csk_ack_scheduled`: data arrived since the last ACK; the input path,
//! `__tcp_ack_snd_check` in net/ipv4/tcp_input.c, delays it rather than send it at once) and
//!
//! - more than `rcv_mss` bytes arrived since the last ACK (`tp->rcv_nxt − tp->rcv_wup >
//!   icsk_ack.rcv_mss`, "once-per-two-segments ACK was not sent by tcp_input.c"); a connection
//!   of small PSH segments keeps the initial `rcv_mss` of `TCP_MSS_DEFAULT` = 536 bytes
//!   (`tcp_initialize_rcv_mss`; `tcp_measure_rcv_mss` raises it only for segments of at least
//!   `TCP_MIN_RCVMSS` + header, or same-sized ones without PSH), or
//! - the read emptied the receive queue (`!sk_rmem_alloc`) after a small pushed segment
//!   (`ICSK_ACK_PUSHED`, which every small PSH segment sets in `tcp_measure_rcv_mss`).
//!
//! (The window-update ACK, for a read that frees half the advertised window, needs tens of
//! KiB queued; chat's and ping-pong's queues never reach it.) On loopback the ACK's whole path —
//! `tcp_transmit_skb`, `loopback_xmit`, the softirq's `tcp_v4_rcv` → `tcp_ack` on the
//! sender's socket — runs in the reader's context, so a read that sends one costs about what a
//! write does, and one that leaves data queued a fraction: on the development VM, 100-byte
//! messages one at a time cost 3.3–3.8 µs a read, 20 written then read 0.93 µs a read.
//!
//! The machine charges each receive on the plan's TCP channels `net_msg − net_ack` when the
//! call starts and `net_ack` more when it completes, if by the rule above it sends an ACK: the
//! read leaves the channel empty, or more than 536 bytes arrived on it since its last ACK. A
//! message's arrival is its deposit on the channel. Not modelled: an ACK that rides on data the
//! reader sends the other way (chat's clients write on the connection they read), the delayed
//! ACK's timer, and pingpong mode (`inet_csk_in_pingpong_mode`, which makes an emptying read
//! wait for a second small segment, `ICSK_ACK_PUSHED2`). FreeBSD's loopback (the netisr
//! policies, `kthreads.rs`) ACKs every second segment in `tcp_input`, in the netisr thread, so
//! there the rule does not apply and every receive pays `net_msg`. With `net_ack` 0 (both
//! built-in profiles) every receive pays `net_msg`, as before the key, and no state is kept.
//!
//! [`CostModel::net_ack`]: crate::cost::CostModel::net_ack

use super::net::Net;
use super::Machine;
use crate::cost::CostModel;

/// `TCP_MSS_DEFAULT` (include/net/tcp.h): the `rcv_mss` a loopback connection of small PSH
/// segments keeps, the bytes past which a read sends an ACK even if it leaves data queued.
pub(super) const TCP_RCV_MSS: usize = 536;

impl Net {
    /// Whether receives on channel `ch` follow the ACK rule: one of the plan's loopback TCP
    /// channels, on a Linux-style loopback, with a `net_ack` to charge.
    fn tcp_acks_counted(&self, ch: usize, cost: &CostModel) -> bool {
        self.tcp && cost.net_ack > 0 && self.is_plan(ch) && !self.netisr
    }

    /// The kernel work a receive on channel `ch` pays when it starts, before the jitter: the
    /// channel's message cost, less `net_ack` on a channel where the ACK is charged apart.
    pub(super) fn recv_msg_cost(&self, ch: usize, cost: &CostModel) -> u64 {
        let base = self.channel_msg_cost(ch);
        if self.tcp_acks_counted(ch, cost) {
            base - cost.net_ack
        } else {
            base
        }
    }

    /// `len` bytes arrived on channel `ch` (a send deposited them).
    pub(super) fn tcp_arrived(&mut self, ch: usize, len: usize, cost: &CostModel) {
        if self.tcp_acks_counted(ch, cost) {
            self.channels[ch].tcp_unacked += len;
        }
    }

    /// A receive on channel `ch` has just taken its bytes: whether it sends an ACK (the
    /// channel is now empty, or more than [`TCP_RCV_MSS`] bytes arrived since the last ACK,
    /// and some did), which starts the count again.
    pub(super) fn tcp_acks(&mut self, ch: usize, cost: &CostModel) -> bool {
        if !self.tcp_acks_counted(ch, cost) {
            return false;
        }
        let chan = &mut self.channels[ch];
        let unacked = chan.tcp_unacked;
        if unacked == 0 || (unacked <= TCP_RCV_MSS && !chan.bytes.is_empty()) {
            return false;
        }
        chan.tcp_unacked = 0;
        true
    }
}

impl Machine<'_> {
    /// A receive on channel `ch` has just taken its bytes: `net_ack` if it sends an ACK
    /// ([`Net::tcp_acks`]), else 0.
    pub(super) fn tcp_ack_cost(&mut self, ch: usize) -> u64 {
        if !self.net.tcp_acks(ch, &self.costs.model) {
            return 0;
        }
        self.costs.c(self.costs.model.net_ack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::plan::{GroupPlan, Plan, SyncPlan, TaskMode, Transport};

    /// The ACK rule on a Linux loopback TCP channel: a read that empties the channel ACKs,
    /// one that leaves bytes queued ACKs only past 536 bytes since the last ACK; nothing is
    /// counted with `net_ack` 0 or on a netisr loopback.
    #[test]
    fn a_read_acks_when_it_empties_the_channel_or_past_the_mss() {
        let plan = Plan {
            groups: vec![GroupPlan {
                name: "a",
                tasks: 1,
                spawn: 0,
            }],
            channels: 1,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: TaskMode::Threads,
            transport: Transport::Tcp,
        };
        let cost = CostModel::profile("modern")
            .unwrap()
            .with_overrides(&["net_ack=1us".into()])
            .unwrap();
        let mut n = Net::new(&plan, &cost);
        assert_eq!(n.recv_msg_cost(0, &cost), cost.net_msg - 1000);
        let mut out = Vec::new();
        let arrive = |n: &mut Net, k: usize| {
            for _ in 0..k {
                n.deposit(0, &[0; 200]);
                n.tcp_arrived(0, 200, &cost);
            }
        };
        arrive(&mut n, 2);
        n.take(0, 200, &mut out);
        assert!(!n.tcp_acks(0, &cost), "200 bytes left, 400 unacked");
        n.take(0, 200, &mut out);
        assert!(n.tcp_acks(0, &cost), "emptied");
        assert!(!n.tcp_acks(0, &cost), "nothing arrived since");
        arrive(&mut n, 3);
        n.take(0, 200, &mut out);
        assert!(
            n.tcp_acks(0, &cost),
            "400 bytes left, but 600 unacked: past the MSS"
        );
        let none = CostModel::profile("modern").unwrap();
        assert_eq!(n.recv_msg_cost(0, &none), none.net_msg);
        n.netisr = true;
        n.tcp_arrived(0, 1000, &cost);
        assert!(!n.tcp_acks(0, &cost));
    }
}
