//! The memory a UNIX-domain stream socket's queued message occupies: its skb's `truesize`.
//!
//! `unix_stream_sendmsg` (net/unix/af_unix.c, Linux 6.x) cuts a write into skbs of at most
//! `SKB_MAX_HEAD(0) + UNIX_SKB_FRAGS_SZ` bytes (3,776 in the head, the rest in page frags of up
//! to 32 KiB) and allocates each with `sock_alloc_send_pskb`, which charges its `truesize` to
//! the sender's `sk_wmem_alloc` and makes the writer wait while that reaches `sk_sndbuf`. A
//! linear skb's head comes from `kmalloc_reserve` (net/core/skbuff.c), rounded up to a kmalloc
//! size (512, 1,024, 2,048 or 4,096 bytes for `SKB_DATA_ALIGN(len)` plus the 320-byte
//! `skb_shared_info`), and `truesize` adds the 256 bytes of the `sk_buff` itself: 768 for a
//! write of 1 to 192 bytes, 2,304 for 1,000. On the development VM a socketpair takes 278
//! one-byte writes and 93 of 1,000 bytes before one would block: 212,992 bytes of `sk_sndbuf`
//! over 768 and 2,304.
//!
//! What a deep queue costs follows these bytes, not the count of messages (the skbs a send or
//! receive touches have left the cache; `machine/sock_queue.rs`): with 1,280 queued on 80
//! socketpairs (`bench/sock-bytes.sh`: CPU 0, thread CPU time, load 8), a write + read of 192
//! bytes (768 of skb) cost 2,022 ns, of 193 (1,280) 2,083, of 704 (1,280) 2,071 and of 705
//! (2,304) 2,381 — the same copy costing more with a larger skb, 3.6× the copy costing alike
//! with the same one — while with one queued all four cost 1,787–1,804 ns.

/// Bytes of one `sk_buff` (232) aligned to the cache line, in every skb's `truesize`.
const SK_BUFF_BYTES: u64 = 256;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`, at the end of every skb head.
const SHARED_INFO_BYTES: u64 = 320;
/// The smallest kmalloc size an skb head of a UNIX socket write comes from on the
/// development VM (278 one-byte writes fill 212,992 bytes of `sk_sndbuf`: 768 each).
const SMALLEST_HEAD: u64 = 512;
/// `SKB_MAX_HEAD(0)`: the most bytes of a write an skb holds in its head (a 4 KiB page less
/// the shared info); the rest goes to page frags.
const MAX_HEAD: u64 = 4_096 - SHARED_INFO_BYTES;
/// `UNIX_SKB_FRAGS_SZ`: the most bytes of one skb in page frags (32 KiB).
const MAX_FRAGS: u64 = 32_768;
/// A page, the unit of the frags.
const PAGE: u64 = 4_096;

/// The `truesize` of the skb that a small write (up to 192 bytes) makes: 768 bytes.
pub const SMALL_TRUESIZE: u64 = SMALLEST_HEAD + SK_BUFF_BYTES;

/// The bytes that a write of `len` bytes to a UNIX-domain stream socket occupies while it is
/// queued: the sum of the `truesize` of the skbs `unix_stream_sendmsg` cuts it into (0 for 0).
/// The cut ignores `sk_sndbuf / 2 - 64`, which only binds a buffer set below 72 KiB.
pub fn unix_write_truesize(len: usize) -> u64 {
    let mut left = len as u64;
    let mut total = 0;
    while left > 0 {
        let size = left.min(MAX_HEAD + MAX_FRAGS);
        // data_len = min(size, PAGE_ALIGN(size - SKB_MAX_HEAD(0))), in whole pages.
        let in_frags = size.min(size.saturating_sub(MAX_HEAD).div_ceil(PAGE) * PAGE);
        total += head_alloc(size - in_frags) + SK_BUFF_BYTES + in_frags.div_ceil(PAGE) * PAGE;
        left -= size;
    }
    total
}

/// The kmalloc size of an skb head holding `head` bytes: `SKB_DATA_ALIGN(head)` (64-byte
/// lines) plus the shared info, rounded up to a power of two of at least [`SMALLEST_HEAD`].
fn head_alloc(head: u64) -> u64 {
    (head.div_ceil(64) * 64 + SHARED_INFO_BYTES)
        .next_power_of_two()
        .max(SMALLEST_HEAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truesize_matches_the_writes_a_socketpair_holds() {
        // 212,992 bytes of sk_sndbuf: 278 writes of 1 or 100 bytes, 93 of 1,000 (measured).
        let sndbuf = 212_992u64;
        for (len, writes) in [(1, 278), (100, 278), (1_000, 93)] {
            assert_eq!(
                sndbuf.div_ceil(unix_write_truesize(len)),
                writes,
                "len {len}"
            );
        }
        assert_eq!(unix_write_truesize(1), SMALL_TRUESIZE);
        assert_eq!(unix_write_truesize(192), SMALL_TRUESIZE);
        assert_eq!(unix_write_truesize(193), 1_024 + 256);
        assert_eq!(unix_write_truesize(0), 0);
    }

    #[test]
    fn a_large_write_is_cut_into_skbs_with_page_frags() {
        // 3,776 bytes fill one head (4,096 with the shared info); one more byte takes a page.
        assert_eq!(unix_write_truesize(3_776), 4_096 + 256);
        assert_eq!(unix_write_truesize(3_777), 512 + 256 + 4_096);
        // 100,000 bytes: two skbs of 36,544 (a full head + 32 KiB) and one of 26,912.
        // The last: 24,576 in six pages, 2,336 in a head of 4,096.
        let full = 4_096 + 256 + 32_768;
        let last = 4_096 + 256 + 24_576;
        assert_eq!(unix_write_truesize(100_000), 2 * full + last);
    }
}
