//! The cost of a UNIX-domain socket message when many are queued ([`CostModel::sock_queue`]):
//! each `write` on an AF_UNIX stream socket queues one skb (or, past 36 KiB, several) on the
//! peer (`unix_stream_sendmsg` in net/unix/af_unix.c allocates them with
//! `sock_alloc_send_pskb`, which charges their `truesize` to the sender's `sk_wmem_alloc`, and
//! links them on `sk_receive_queue`), and each `read` unlinks and frees them. With megabytes of
//! skbs queued across the machine's sockets (hackbench: 80 sockets, dozens each) the ones a
//! send or receive touches have left the cache, and the message costs more — on the development
//! VM 1.37× at 5,040 small writes queued against one (`bench/sock-depth.sh`), growing by roughly
//! equal steps per doubling. What counts is the bytes of skb queued in total (`skb.rs`), not the
//! count of messages nor one socket's depth (200 queued on one socket cost what one does): with
//! 1,280 queued, writes of 705 bytes (2,304 bytes of skb each) cost 310 ns more a message than
//! of 704 (1,280 each), which cost what 193 bytes (1,280) do (`bench/sock-bytes.sh`).
//! The machine sums the truesize queued on the plan's socket channels and charges each side of
//! a socket message `sock_queue × log2(queued bytes / 49,152)` on top of `sock_msg`.
//!
//! The same bytes bound a socket's queue ([`CostModel::sock_slots`]): the kernel makes a writer
//! wait while the truesize it has queued reaches `sk_sndbuf`, so a socketpair holds 278 writes
//! of 1 or 100 bytes and 93 of 1,000, whatever `channel_bytes` says.
//!
//! [`CostModel::sock_queue`]: crate::cost::CostModel::sock_queue
//! [`CostModel::sock_slots`]: crate::cost::CostModel::sock_slots

use super::net::Net;
use crate::cost::CostModel;
use crate::skb::{unix_write_truesize, SMALL_TRUESIZE};

impl Net {
    /// Whether channel `ch` is one of the plan's UNIX-domain socket channels and the profile
    /// charges for their queue or bounds it (`sock_queue` or `sock_slots` > 0).
    fn sock_queue_counted(&self, ch: usize) -> bool {
        self.sock_queue_on && self.is_plan(ch)
    }

    /// The extra work of a message sent or received on channel `ch` now, before the jitter.
    pub(super) fn sock_queue_extra(&self, ch: usize, cost: &CostModel) -> u64 {
        if !self.sock_queue_counted(ch) {
            return 0;
        }
        cost.sock_queue_cost(self.sock_queued)
    }

    /// Whether a writer may queue more on channel `ch` now, if the socket's own bound applies
    /// (`sock_slots` > 0 on a counted socket channel): while the truesize queued on it is below
    /// `sock_slots` small writes' worth. `None` where the channel is bounded by `channel_bytes`
    /// instead.
    pub(super) fn sock_slots_room(&self, ch: usize, cost: &CostModel) -> Option<bool> {
        (self.sock_queue_counted(ch) && cost.sock_slots > 0)
            .then(|| self.channels[ch].sock_bytes < cost.sock_slots.saturating_mul(SMALL_TRUESIZE))
    }

    /// A message of `len` bytes was queued on channel `ch`.
    pub(super) fn sock_queue_push(&mut self, ch: usize, len: usize) {
        if self.sock_queue_counted(ch) && len > 0 {
            let truesize = unix_write_truesize(len);
            let chan = &mut self.channels[ch];
            chan.msg_lens.push_back((len, truesize));
            chan.sock_bytes += truesize;
            self.sock_queued += truesize;
        }
    }

    /// `len` bytes were read from channel `ch`: the messages they finish leave the queue (a
    /// partly read one stays, shortened, as the kernel keeps a partly consumed skb).
    pub(super) fn sock_queue_take(&mut self, ch: usize, mut len: usize) {
        if !self.sock_queue_counted(ch) {
            return;
        }
        let chan = &mut self.channels[ch];
        while len > 0 {
            let Some((front, truesize)) = chan.msg_lens.front_mut() else {
                break;
            };
            if *front > len {
                *front -= len;
                break;
            }
            len -= *front;
            let truesize = *truesize;
            chan.msg_lens.pop_front();
            chan.sock_bytes -= truesize;
            self.sock_queued -= truesize;
        }
    }
}
