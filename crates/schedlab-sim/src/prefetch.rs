//! A software prefetch: ask the processor to bring a line of memory into its cache ahead of its
//! use, so that the use does not stall on the miss. With thousands of tasks the simulator's
//! per-task memory (the machine's `Task`, the body's future, its context call, the policy's
//! entity) does not stay in the cache, and the first touch of the task a CPU switches to is a
//! miss; the switch knows which task that is several events before its body is polled.
//!
//! On x86-64 this is `PREFETCHT0` (`_mm_prefetch` with `_MM_HINT_T0`, Intel's SDM vol. 2B), a
//! hint that never faults and reads nothing into the program; elsewhere it does nothing. Results
//! cannot depend on it: it changes when memory arrives in the cache, not what is read.

/// Bytes of one cache line (x86-64 and most 64-bit processors).
pub const LINE: usize = 64;

/// Prefetch the cache line holding `p` (any address: an invalid one is ignored by the
/// processor).
#[inline(always)]
pub fn line<T: ?Sized>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint that dereferences nothing in the program's sense and never
    // faults, whatever the address (Intel SDM: "does not cause a page fault or exception").
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetch the lines holding the first `bytes` of the memory at `p`, at most `max_lines` lines.
///
/// The lines are those the bytes fall in, counted from the line `p` is in: a value that starts
/// partway into a line spans one line more than its size in lines (a 128-byte future 16 bytes
/// into a line ends in its third; fetching two lines from `p` missed the end, where the
/// future's state was).
#[inline(always)]
pub fn lines<T: ?Sized>(p: *const T, bytes: usize, max_lines: usize) {
    let start = p.cast::<u8>();
    let offset = start as usize % LINE;
    let first = start.wrapping_sub(offset);
    let n = lines_spanned(offset, bytes).min(max_lines);
    for i in 0..n {
        line(first.wrapping_add(i * LINE));
    }
}

/// The number of lines `bytes` at address `addr` fall in (at least one).
#[inline(always)]
fn lines_spanned(addr: usize, bytes: usize) -> usize {
    (addr % LINE + bytes).div_ceil(LINE).max(1)
}

/// Prefetch the value `v` (its first `max_lines` lines).
#[inline(always)]
pub fn value<T: ?Sized>(v: &T, max_lines: usize) {
    lines(v as *const T, std::mem::size_of_val(v), max_lines);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefetch_of_any_address_is_harmless_and_changes_nothing() {
        // No address faults: null, the top of the address space, one past a value's end.
        line(std::ptr::null::<u8>());
        line(usize::MAX as *const u8);
        let v: Vec<u64> = (0..100).collect();
        value(v.as_slice(), 4);
        lines(v.as_ptr(), 10_000, 1_000);
        line(v.as_ptr().wrapping_add(100));
        assert_eq!(v, (0..100).collect::<Vec<u64>>());
    }

    #[test]
    fn the_lines_fetched_are_those_the_bytes_fall_in() {
        assert_eq!(lines_spanned(0, 128), 2);
        assert_eq!(
            lines_spanned(16, 128),
            3,
            "a 128-byte value 16 bytes into a line"
        );
        assert_eq!(lines_spanned(63, 2), 2);
        assert_eq!(lines_spanned(64, 64), 1);
        assert_eq!(lines_spanned(5, 0), 1);
    }
}
