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

/// Prefetch the lines holding the first `bytes` of the memory at `p` (at most `max_lines`
/// lines' worth of bytes).
///
/// The lines are those the bytes fall in: a value that starts partway into a line ends in one
/// line more than its size in lines (a 128-byte future 16 bytes into a line ends in its third,
/// where the future's state was; fetching two lines from `p` missed it).
#[inline(always)]
pub fn lines<T: ?Sized>(p: *const T, bytes: usize, max_lines: usize) {
    let base = p.cast::<u8>();
    each_line(bytes, max_lines, |offset| line(base.wrapping_add(offset)));
}

/// Call `fetch` with the offsets from a value's start that [`lines`] fetches: one a line apart
/// from the start, and its last byte's, which is in the next line when the value starts
/// partway into one. No arithmetic on the address: for a value of a fixed size the offsets
/// are constants and this is a few prefetch instructions.
#[inline(always)]
fn each_line(bytes: usize, max_lines: usize, mut fetch: impl FnMut(usize)) {
    let bytes = bytes.clamp(1, max_lines * LINE);
    for i in 0..bytes.div_ceil(LINE) {
        fetch(i * LINE);
    }
    fetch(bytes - 1);
}

/// Prefetch the value `v` (the lines its first `max_lines` lines' worth of bytes fall in).
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
        for start in 0..2 * LINE {
            for bytes in 0..5 * LINE {
                let mut fetched = Vec::new();
                each_line(bytes, 4, |offset| fetched.push((start + offset) / LINE));
                let end = start + bytes.clamp(1, 4 * LINE); // one past the last byte fetched
                for l in start / LINE..=(end - 1) / LINE {
                    assert!(fetched.contains(&l), "line {l} of {bytes} bytes at {start}");
                }
                assert!(fetched.iter().all(|&l| l <= (end - 1) / LINE));
            }
        }
    }
}
