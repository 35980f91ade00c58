//! A global allocator that asks Linux for transparent huge pages for large blocks.
//!
//! A simulated machine of 100,000 tasks keeps a hundred MiB of per-task state (the machine's
//! `Task`s, the contexts' slots, the policy's entities, the executor's bodies), and a switch
//! reads the state of a task that ran about a hundred thousand switches ago: every one of those
//! reads misses the TLB as well as the cache when the memory is in 4 KiB pages (the processor's
//! second-level TLB covers 8 MiB of them). In 2 MiB pages the same 100 MiB is 50 TLB entries.
//!
//! Where the kernel's transparent huge pages are in `madvise` mode (Debian's and most
//! distributions' default: `/sys/kernel/mm/transparent_hugepage/enabled`), a process gets them
//! only for memory it marks with `madvise(MADV_HUGEPAGE)`. [`HugePageHint`] wraps the system
//! allocator and marks each block of at least [`MIN_BLOCK`] bytes as it is allocated (or grown)
//! and before it is first written, so its aligned 2 MiB stretches fault in as huge pages. It is
//! advice about this process's own memory, as glibc's `glibc.malloc.hugetlb=1` tunable gives:
//! no system-wide setting changes, an `always` or `never` setting is obeyed as it is, and a
//! refused or failed `madvise` leaves the block as it was. Nothing the program computes depends
//! on it: it changes where pages come from, not what is in them.
//!
//! glibc is told to map blocks this large on their own (`mmap`, see [`HugePageHint`]'s
//! `alloc`), so the advice covers the block alone and its pages go back to the system when it is
//! freed; a large block grows by a fresh block and a copy, not in place. The cost is at most one
//! partly used huge page at the end of each large block (peak RSS of `bench/sim.sh`'s 100k-task
//! case: docs/performance.md).

use std::alloc::{GlobalAlloc, Layout, System};

/// The smallest block marked for huge pages: one huge page, the least that can hold a whole
/// aligned one with room around it.
pub const MIN_BLOCK: usize = 2 << 20;

/// The system allocator, with large blocks marked for transparent huge pages (see the module
/// comment). Declared as the binary's allocator: `#[global_allocator] static A: HugePageHint =
/// HugePageHint;`.
pub struct HugePageHint;

/// Mark `len` bytes at `p` for transparent huge pages (the whole pages inside them).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn advise(p: *mut u8, len: usize) {
    const PAGE: usize = 4096;
    let start = (p as usize).next_multiple_of(PAGE);
    let end = (p as usize + len) & !(PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside a block the allocator has just handed out (whole pages
        // of it), and MADV_HUGEPAGE only sets how the kernel backs those pages: their contents
        // and mapping stay as they are. Its result is advice taken or not; either is fine.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_p: *mut u8, _len: usize) {}

/// Have glibc map every block of [`MIN_BLOCK`] bytes or more on its own, once, before the first
/// one: by default its threshold for that rises to the size of each such block freed (up to 32
/// MiB), after which large blocks come from its heap, in pages written before — which the advice
/// cannot turn into huge pages — and are not given back when freed.
fn map_large_blocks_alone() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        #[allow(unsafe_code)]
        // SAFETY: mallopt sets a parameter of this process's malloc; M_MMAP_THRESHOLD takes a
        // size, and blocks already handed out are not affected.
        ONCE.call_once(|| unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MIN_BLOCK as libc::c_int);
        });
    }
}

/// A block of `size` bytes from `allocate` (a call to `System`), marked for huge pages if it is
/// [`MIN_BLOCK`] or more (glibc having been told to map such blocks alone first).
#[inline(always)]
fn marked_if_large(size: usize, allocate: impl FnOnce() -> *mut u8) -> *mut u8 {
    if size < MIN_BLOCK {
        return allocate();
    }
    map_large_blocks_alone();
    let p = allocate();
    if !p.is_null() {
        advise(p, size);
    }
    p
}

// SAFETY: every call is passed to `System` unchanged; the only addition is advice on the
// memory `System` returned, which neither frees, moves nor writes it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for HugePageHint {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        marked_if_large(layout.size(), || unsafe { System.alloc(layout) })
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        marked_if_large(layout.size(), || unsafe { System.alloc_zeroed(layout) })
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: as `alloc`.
        unsafe { System.dealloc(p, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size < MIN_BLOCK {
            // SAFETY: as `alloc`.
            return unsafe { System.realloc(p, layout, new_size) };
        }
        // A large block is not grown in place or moved by `mremap` (glibc's way): its pages
        // would be those already written, in 4 KiB pages, and a move to an address of another
        // offset in 2 MiB splits its huge pages. A fresh block, marked before the copy writes
        // it, is in huge pages throughout; the copy is what a doubling vector pays anyway.
        // SAFETY: `realloc`'s contract makes `new_size` with `layout.align()` a valid layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a valid layout of a non-zero size.
        let q = unsafe { self.alloc(new_layout) };
        if !q.is_null() {
            // SAFETY: `p` holds `layout.size()` bytes, `q` `new_size`; they are distinct
            // blocks, and `p` is freed with the layout it was allocated with.
            unsafe {
                std::ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                self.dealloc(p, layout);
            }
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks below and above the threshold, grown and shrunk, keep their contents.
    #[test]
    fn blocks_keep_their_contents() {
        let a = HugePageHint;
        for size in [64, MIN_BLOCK - 1, MIN_BLOCK, 3 * MIN_BLOCK + 123] {
            let layout = Layout::from_size_align(size, 64).unwrap();
            #[allow(unsafe_code)]
            // SAFETY: a non-zero layout; the block is written and read within its size, grown
            // and freed with the layout it has.
            unsafe {
                let p = a.alloc_zeroed(layout);
                assert!(!p.is_null());
                assert_eq!(*p.add(size - 1), 0);
                for i in (0..size).step_by(4096) {
                    *p.add(i) = (i / 4096) as u8;
                }
                let q = a.realloc(p, layout, size * 2);
                assert!(!q.is_null());
                for i in (0..size).step_by(4096) {
                    assert_eq!(*q.add(i), (i / 4096) as u8, "byte {i} of {size}");
                }
                a.dealloc(q, Layout::from_size_align(size * 2, 64).unwrap());
            }
        }
    }

    /// A large block's memory is eligible for huge pages (the kernel's own word for it, in
    /// `/proc/self/smaps`), where the kernel has transparent huge pages at all.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_block_is_eligible_for_huge_pages() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        match &mode {
            Ok(m) if !m.contains("[never]") => {}
            _ => {
                eprintln!(
                    "skipped: this kernel has no transparent huge pages ({mode:?} in /sys/kernel/mm/transparent_hugepage/enabled)"
                );
                return;
            }
        }
        let a = HugePageHint;
        let size = 8 * MIN_BLOCK;
        let layout = Layout::from_size_align(size, 64).unwrap();
        #[allow(unsafe_code)]
        // SAFETY: a non-zero layout, freed with itself.
        let p = unsafe { a.alloc(layout) };
        assert!(!p.is_null());
        let middle = p as usize + size / 2;
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut eligible = None;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                    {
                        inside = (lo..hi).contains(&middle);
                        continue;
                    }
                }
            }
            if inside {
                if let Some(v) = line.strip_prefix("THPeligible:") {
                    eligible = Some(v.trim().to_string());
                }
            }
        }
        #[allow(unsafe_code)]
        // SAFETY: allocated above with this layout.
        unsafe {
            a.dealloc(p, layout)
        };
        assert_eq!(
            eligible.as_deref(),
            Some("1"),
            "the block's mapping in /proc/self/smaps"
        );
    }
}
