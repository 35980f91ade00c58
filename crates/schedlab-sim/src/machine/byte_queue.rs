//! A channel's unread bytes, in fixed-size blocks taken from a pool the machine's channels share.
//!
//! Why blocks: a channel kept as one `VecDeque<u8>` grew by reallocation (copying its bytes
//! each time) as it filled, kept its largest size for good, and moved bytes through the
//! deque's generic extend and drain, which cost more than the copies themselves. Kept as the
//! senders' buffers instead, a send's buffer would move into the channel without a copy, but a
//! buffer per queued message is an allocation per message when thousands are queued at once
//! (a chat server's connections hold ~100,000 messages at the peak). Blocks are few (a block
//! holds many messages), come back to the pool as soon as they are read, and never move: a
//! write copies into the last block and a read out of the first, a message crossing a block's
//! end in two pieces.

use std::collections::VecDeque;

/// Bytes in a block.
const BLOCK: usize = 2048;

/// A block of a channel's bytes: a buffer of [`BLOCK`] bytes' capacity, filled from its start
/// (so that a new block needs no zeroing) and never beyond it (so that it never reallocates).
pub(super) type Block = Vec<u8>;

/// A FIFO of bytes stored in [`BLOCK`]-byte blocks. Holds no block while empty.
#[derive(Debug, Default)]
pub(super) struct ByteQueue {
    /// The blocks, oldest first, all full but the last: the bytes run from `head` in the first
    /// to the end of the last.
    blocks: VecDeque<Block>,
    /// The bytes of the first block already taken.
    head: usize,
    /// The bytes not yet taken.
    len: usize,
}

impl ByteQueue {
    /// The bytes not yet taken.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether no byte is waiting.
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `data`, in blocks from `spare` (or new ones) once the last is full.
    #[inline]
    pub(super) fn push(&mut self, data: &[u8], spare: &mut Vec<Block>) {
        // The common case first: the bytes fit in the last block.
        if let Some(last) = self.blocks.back_mut() {
            if data.len() <= BLOCK - last.len() {
                last.extend_from_slice(data);
                self.len += data.len();
                return;
            }
        }
        self.push_across(data, spare);
    }

    /// [`ByteQueue::push`] into new blocks.
    #[inline(never)]
    fn push_across(&mut self, mut data: &[u8], spare: &mut Vec<Block>) {
        self.len += data.len();
        while !data.is_empty() {
            let last = match self.blocks.back_mut() {
                Some(last) if last.len() < BLOCK => last,
                _ => {
                    let block = spare.pop().unwrap_or_else(|| Vec::with_capacity(BLOCK));
                    self.blocks.push_back(block);
                    self.blocks.back_mut().expect("the block just added")
                }
            };
            let k = (BLOCK - last.len()).min(data.len());
            last.extend_from_slice(&data[..k]);
            data = &data[k..];
        }
    }

    /// Take the first `n` bytes into `out`, which they replace; emptied blocks go to `spare`.
    ///
    /// # Panics
    /// If fewer than `n` bytes are waiting.
    #[inline(always)]
    pub(super) fn take(&mut self, n: usize, out: &mut Vec<u8>, spare: &mut Vec<Block>) {
        // The common case first: the bytes are in the first block, which keeps some.
        if n < self.len {
            if let Some(first) = self.blocks.front() {
                if n < first.len() - self.head {
                    out.clear();
                    out.extend_from_slice(&first[self.head..self.head + n]);
                    self.head += n;
                    self.len -= n;
                    return;
                }
            }
        }
        self.take_across(n, out, spare);
    }

    /// [`ByteQueue::take`] of bytes that empty the first block.
    #[inline(never)]
    fn take_across(&mut self, mut n: usize, out: &mut Vec<u8>, spare: &mut Vec<Block>) {
        assert!(n <= self.len, "take {n} bytes of {}", self.len);
        out.clear();
        self.len -= n;
        while n > 0 {
            let first = self.blocks.front().expect("a block holds the bytes");
            let k = (first.len() - self.head).min(n);
            out.extend_from_slice(&first[self.head..self.head + k]);
            self.head += k;
            n -= k;
            if self.head == BLOCK {
                let mut block = self.blocks.pop_front().expect("the first block");
                block.clear();
                spare.push(block);
                self.head = 0;
            }
        }
        if self.len == 0 {
            // Start the next bytes at a block's start, and hold no block meanwhile.
            if let Some(mut block) = self.blocks.pop_front() {
                block.clear();
                spare.push(block);
            }
            debug_assert!(self.blocks.is_empty());
            self.head = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{RngCore, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Random pushes and takes (nothing, a few bytes, across blocks, everything) give the bytes
    /// a plain byte FIFO gives; the queue holds exactly the blocks its bytes need, and every
    /// other block is back in the pool.
    #[test]
    fn matches_a_byte_fifo() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut q = ByteQueue::default();
        let mut reference = VecDeque::<u8>::new();
        let mut spare = Vec::new();
        let mut out = Vec::new();
        let mut next = 0u8;
        let mut blocks = 0;
        for _ in 0..20_000 {
            if rng.next_u32() % 2 == 0 {
                let len = match rng.next_u32() % 4 {
                    0 => (rng.next_u32() as usize) % (3 * BLOCK),
                    _ => (rng.next_u32() as usize) % 200,
                };
                let data: Vec<u8> = (0..len)
                    .map(|_| {
                        next = next.wrapping_add(1);
                        next
                    })
                    .collect();
                reference.extend(&data);
                let had = spare.len() + q.blocks.len();
                q.push(&data, &mut spare);
                blocks += spare.len() + q.blocks.len() - had;
            } else {
                let n = match rng.next_u32() % 4 {
                    0 => reference.len(),
                    _ => (rng.next_u32() as usize) % (reference.len() / 2 + 2),
                }
                .min(reference.len());
                q.take(n, &mut out, &mut spare);
                let want: Vec<u8> = reference.drain(..n).collect();
                assert_eq!(out, want);
            }
            assert_eq!(q.len(), reference.len());
            assert_eq!(q.is_empty(), reference.is_empty());
            assert_eq!(q.blocks.len(), (q.head + q.len).div_ceil(BLOCK));
            assert!(q.head < BLOCK);
            assert!(q.blocks.iter().all(|b| b.capacity() == BLOCK));
            assert!(q.blocks.iter().rev().skip(1).all(|b| b.len() == BLOCK));
            assert!(spare.iter().all(|b| b.is_empty() && b.capacity() == BLOCK));
            assert_eq!(q.blocks.len() + spare.len(), blocks);
        }
    }

    #[test]
    #[should_panic(expected = "take 3 bytes of 2")]
    fn taking_more_than_waits_panics() {
        let mut q = ByteQueue::default();
        let mut spare = Vec::new();
        q.push(&[1, 2], &mut spare);
        q.take(3, &mut Vec::new(), &mut spare);
    }
}
