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

/// Prefetch the first `bytes` of the memory at `p`, at most `max_lines` lines.
#[inline(always)]
pub fn lines<T: ?Sized>(p: *const T, bytes: usize, max_lines: usize) {
    let base = p.cast::<u8>();
    let n = bytes.div_ceil(LINE).clamp(1, max_lines);
    for i in 0..n {
        line(base.wrapping_add(i * LINE));
    }
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
}
