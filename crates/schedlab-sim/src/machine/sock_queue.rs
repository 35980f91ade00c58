//! The cost of a UNIX-domain socket message when many are queued ([`CostModel::sock_queue`]):
//! each `write` on an AF_UNIX stream socket queues one skb on the peer (`unix_stream_sendmsg`
//! in net/unix/af_unix.c allocates one per write and links it on `sk_receive_queue`), and
//! each `read` unlinks and frees them. With thousands queued across the machine's sockets
//! (hackbench: 80 sockets, dozens each) the skbs a send or receive touches have left the cache,
//! and the message costs more — on the development VM 1.37× at 5,040 queued against one
//! (`bench/sock-depth.sh`), growing by roughly equal steps per doubling. The machine counts the
//! messages queued on the plan's socket channels and charges each side of a socket message
//! `sock_queue × log2(queued / 64)` on top of `sock_msg`; what counts is the total, not one
//! socket's depth (200 queued on one socket cost what one does).
//!
//! The same count bounds a socket's queue in messages ([`CostModel::sock_slots`]): the kernel
//! charges each skb's true size, ~770 bytes for a small write, to the sender's `sk_sndbuf`, so a
//! socketpair holds 278 small messages, not `channel_bytes` of them.
//!
//! [`CostModel::sock_queue`]: crate::cost::CostModel::sock_queue
//! [`CostModel::sock_slots`]: crate::cost::CostModel::sock_slots

use super::Machine;

impl Machine<'_> {
    /// Whether channel `ch` is one of the plan's UNIX-domain socket channels and the profile
    /// charges for their queue or bounds it (`sock_queue` or `sock_slots` > 0).
    fn sock_queue_counted(&self, ch: usize) -> bool {
        self.sock_queue_on && ch < self.plan_channels
    }

    /// The extra work of a message sent or received on channel `ch` now, before the jitter.
    pub(super) fn sock_queue_extra(&self, ch: usize) -> u64 {
        if !self.sock_queue_counted(ch) {
            return 0;
        }
        self.cost.sock_queue_cost(self.sock_queued)
    }

    /// Whether channel `ch` holds as many messages as a socket may (`sock_slots`), so that a
    /// writer must wait.
    pub(super) fn sock_slots_full(&self, ch: usize) -> bool {
        self.sock_queue_counted(ch)
            && self.cost.sock_slots > 0
            && self.channels[ch].msg_lens.len() as u64 >= self.cost.sock_slots
    }

    /// A message of `len` bytes was queued on channel `ch`.
    pub(super) fn sock_queue_push(&mut self, ch: usize, len: usize) {
        if self.sock_queue_counted(ch) && len > 0 {
            self.channels[ch].msg_lens.push_back(len);
            self.sock_queued += 1;
        }
    }

    /// `len` bytes were read from channel `ch`: the messages they finish leave the queue (a
    /// partly read one stays, shortened, as the kernel keeps a partly consumed skb).
    pub(super) fn sock_queue_take(&mut self, ch: usize, mut len: usize) {
        if !self.sock_queue_counted(ch) {
            return;
        }
        let lens = &mut self.channels[ch].msg_lens;
        while len > 0 {
            let Some(front) = lens.front_mut() else { break };
            if *front > len {
                *front -= len;
                break;
            }
            len -= *front;
            lens.pop_front();
            self.sock_queued -= 1;
        }
    }
}
