//! The buffers of memory-access steps and the accesses themselves, as rt-app runs its `memrun`
//! events (scheduler-tools/rt-app 55cb0c0: the buffer filled and the chase's chain laid when
//! the configuration is read, src/rt-app_parse_config.c; `memread`, `memwrite` and
//! `memchase_run` in src/rt-app.c): byte-at-a-time volatile reads or writes from the buffer's
//! start, wrapping at its end; a chase follows pointers, each load's address the value of the
//! one before, and starts where the previous chase of the buffer ended.

use schedlab_workload::mem_access::bit_reverse;
use schedlab_workload::{ChasePattern, MemAccess, MemAccessKind, WorkloadError};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One access's buffer: allocated and written in full when it is made.
pub struct MemBuffer {
    /// The memory, 8-byte aligned so that a chase's positions hold aligned pointers.
    words: NonNull<u64>,
    /// Its length in words.
    len: usize,
    /// Its bytes in use: the access's [`MemAccess::buffer_bytes`].
    bytes: usize,
    /// A chase's next position (an address inside the buffer); the start for read and write.
    cursor: AtomicUsize,
}

// SAFETY: the buffer is plain memory owned by this value; tasks sharing it (rt-app's `ref`)
// read and write its bytes with single-byte volatile accesses, as rt-app's threads do — the
// bytes' values mean nothing, and a chase's pointers are written only while it is made, before
// any task reads them.
unsafe impl Send for MemBuffer {}
// SAFETY: as above.
unsafe impl Sync for MemBuffer {}

impl MemBuffer {
    /// The buffer of `access`: every byte written (read and write: 0xAA, as rt-app's memset;
    /// chase: its chain), so that no page fault falls inside an access.
    pub fn new(access: &MemAccess) -> Result<MemBuffer, WorkloadError> {
        let bytes = usize::try_from(access.buffer_bytes()).unwrap_or(usize::MAX);
        let len = bytes.div_ceil(8).max(1);
        let mut v: Vec<u64> = Vec::new();
        v.try_reserve_exact(len).map_err(|_| {
            WorkloadError::Backend(format!(
                "cannot allocate the {bytes}-byte buffer of a memory access ({access})"
            ))
        })?;
        v.resize(len, 0xAAAA_AAAA_AAAA_AAAA);
        let words = NonNull::from(Box::leak(v.into_boxed_slice())).cast::<u64>();
        let buffer = MemBuffer {
            words,
            len,
            bytes,
            cursor: AtomicUsize::new(words.as_ptr() as usize),
        };
        if access.kind == MemAccessKind::Chase {
            buffer.lay_chain(access);
        }
        Ok(buffer)
    }

    /// Write the chase's circular chain: position `i` (bit-reversed for the random pattern)
    /// holds the address of position `i + 1`'s, the last the first's.
    fn lay_chain(&self, access: &MemAccess) {
        let n = access.chase_positions();
        let bits = n.trailing_zeros();
        let stride = access.stride as usize;
        let order = |i: u64| match access.pattern {
            ChasePattern::Random => bit_reverse(i, bits),
            ChasePattern::Sequential => i,
        };
        let base = self.words.as_ptr() as *mut u8;
        for i in 0..n {
            let from = order(i) as usize * stride;
            let to = order((i + 1) % n) as usize * stride;
            // SAFETY: both offsets are below n × stride = self.bytes, multiples of 8 (the
            // stride is), so the word at `from` is inside the allocation and aligned.
            unsafe { (base.add(from) as *mut usize).write(base.add(to) as usize) };
        }
    }

    /// Run `access` (of this buffer's kind) on it.
    pub fn run(&self, access: &MemAccess) {
        let count = usize::try_from(access.count).unwrap_or(usize::MAX);
        match access.kind {
            MemAccessKind::Read => self.read(count),
            MemAccessKind::Write => self.write(count),
            MemAccessKind::Chase => self.chase(count),
        }
    }

    /// The buffer's byte `i`.
    fn byte(&self, i: usize) -> *mut u8 {
        debug_assert!(i < self.bytes && self.bytes <= self.len * 8);
        // SAFETY (of the callers' accesses): i < self.bytes <= the allocation's length.
        unsafe { (self.words.as_ptr() as *mut u8).add(i) }
    }

    /// `count` volatile byte reads from the start, wrapping.
    fn read(&self, count: usize) {
        let (passes, rest) = (count / self.bytes, count % self.bytes);
        for end in std::iter::repeat_n(self.bytes, passes).chain([rest]) {
            for i in 0..end {
                // SAFETY: i < self.bytes.
                unsafe { std::ptr::read_volatile(self.byte(i)) };
            }
        }
    }

    /// `count` volatile byte writes from the start, wrapping; byte `i` gets `i`'s low byte.
    fn write(&self, count: usize) {
        let (passes, rest) = (count / self.bytes, count % self.bytes);
        for end in std::iter::repeat_n(self.bytes, passes).chain([rest]) {
            for i in 0..end {
                // SAFETY: i < self.bytes.
                unsafe { std::ptr::write_volatile(self.byte(i), i as u8) };
            }
        }
    }

    /// `count` hops along the chain from where the last chase of this buffer ended.
    fn chase(&self, count: usize) {
        let mut p = self.cursor.load(Ordering::Relaxed) as *const usize;
        for _ in 0..count {
            // SAFETY: p is the buffer's start or an address the chain holds: an aligned
            // position inside the buffer, which lives as long as self.
            p = unsafe { std::ptr::read_volatile(p) } as *const usize;
        }
        self.cursor.store(p as usize, Ordering::Relaxed);
    }
}

impl Drop for MemBuffer {
    fn drop(&mut self) {
        // SAFETY: `words` and `len` are those of the boxed slice leaked in `new`.
        drop(unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.words.as_ptr(),
                self.len,
            ))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chase_visits_every_position_once_before_it_returns() {
        for pattern in [ChasePattern::Random, ChasePattern::Sequential] {
            let mut a = MemAccess::new(MemAccessKind::Chase, 64 * 16, 0);
            a.pattern = pattern;
            let b = MemBuffer::new(&a).unwrap();
            let start = b.cursor.load(Ordering::Relaxed);
            let mut seen = std::collections::BTreeSet::new();
            for _ in 0..16 {
                b.chase(1);
                let at = b.cursor.load(Ordering::Relaxed);
                assert_eq!((at - start) % 64, 0);
                assert!(seen.insert(at), "{pattern:?}: position visited twice");
            }
            assert_eq!(b.cursor.load(Ordering::Relaxed), start, "{pattern:?}");
            if pattern == ChasePattern::Random {
                // Bit-reversed order from position 0: 0 → 8 → 4 → 12 …
                b.chase(1);
                assert_eq!(b.cursor.load(Ordering::Relaxed) - start, 8 * 64);
            }
        }
    }

    #[test]
    fn a_write_wraps_at_the_buffer_end() {
        let b = MemBuffer::new(&MemAccess::new(MemAccessKind::Write, 10, 0)).unwrap();
        b.write(13);
        let got: Vec<u8> = (0..10).map(|i| unsafe { *b.byte(i) }).collect();
        assert_eq!(got, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        b.read(25);
    }
}
