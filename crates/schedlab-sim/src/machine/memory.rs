//! Memory and paging: the machine's RAM (`memory` in the cost model), the pages each task has
//! touched, and what a touch costs when memory is short — page faults, reclaim by kswapd and by
//! the faulting task, and swap-in reads the task sleeps on. After Linux 2.6 (the seed 004 era):
//! mm/page_alloc.c (zone watermarks `pages_min`/`pages_low`/`pages_high` from
//! `min_free_kbytes` = √(16 × lowmem KiB), waking kswapd below `pages_low`, direct reclaim at
//! `pages_min`), mm/vmscan.c (`kswapd` and `balance_pgdat` reclaiming to `pages_high`,
//! `try_to_free_pages` in batches of SWAP_CLUSTER_MAX = 32, `shrink_page_list`), mm/memory.c
//! (`do_anonymous_page`, `do_swap_page`) and mm/swap_state.c (`swapin_readahead`: 2^page_cluster
//! = 8 pages per swap-in read).
//!
//! The model. A task's memory is a region of pages it walks in order (`touch_memory(bytes)`
//! touches pages 0..bytes/4096, as schedlab's touch does; `touch_memory_at` a stretch of it, as
//! interbench's memload writes and copies its 1 MiB blocks; `free_memory` releases it all, as
//! `munmap` does, pages and swap slots, so that the next touch is a first touch). A page touched
//! for the first time takes a free page (a minor fault, its cost inside `page_touch`). Under the
//! LRU, a walk over more pages than the task can keep resident evicts each page before it comes
//! round again, so once any of its pages is in swap every page it touches that swap-in readahead
//! did not bring in is a major fault: the task pays a trap (`syscall`) and `page_touch`, takes 8
//! free pages, and sleeps for the read (`io_latency` + 32 KiB × `io_per_kib`). Taking free pages
//! below `pages_low` wakes kswapd, a kernel thread (the machine's `kthreads.rs`) that reclaims
//! to `pages_high` at `reclaim` CPU per page; below `pages_min` the allocating task reclaims a
//! batch itself. Reclaim evicts the pages of the task with the most resident pages (the LRU's
//! oldest are the big walker's).
//!
//! With memory not short — every workload but one that touches more than `memory` — a touch
//! costs `page_touch` per page and nothing else, exactly as without this module.
//!
//! Simplifications: the swap device has no queue (swap-out writes of evicted dirty pages are
//! not waited for and do not delay reads); file pages, the page cache and the active/inactive
//! split are not modelled (all memory is the workload's anonymous memory); a walk's pages are
//! resident all or none, as LRU gives for a cyclic walk; kswapd runs at nice 0 as in 2.6.

use super::kthreads::KernelThread;
use super::{Effect, Machine};
use crate::policy::{CpuId, TaskId, TaskKind};

/// Bytes per page.
pub(super) const PAGE: u64 = 4096;
/// Pages one swap-in read brings in (`1 << page_cluster`, page_cluster = 3).
pub(super) const SWAP_CLUSTER: u64 = 8;
/// Pages one reclaim batch frees (SWAP_CLUSTER_MAX).
pub(super) const RECLAIM_BATCH: u64 = 32;

/// The machine's RAM: free pages, watermarks and the kswapd thread.
pub(super) struct Memory {
    /// Free pages.
    pub(super) free: u64,
    /// Watermarks, pages: direct reclaim below `min`, kswapd woken below `low`, kswapd stops at
    /// `high`.
    min: u64,
    low: u64,
    high: u64,
    /// The kswapd thread, created the first time memory runs low.
    kswapd: Option<TaskId>,
    /// kswapd is asleep, waiting to be woken.
    kswapd_idle: bool,
    /// Tasks that have resident pages, for reclaim.
    users: Vec<TaskId>,
}

impl Memory {
    /// RAM of `bytes`, all free, with 2.6's watermarks for it.
    pub(super) fn new(bytes: u64) -> Memory {
        let pages = bytes / PAGE;
        // min_free_kbytes = sqrt(lowmem_kbytes * 16), clamped to 128..65536 KiB.
        let min_kib = (((bytes / 1024) as f64 * 16.0).sqrt() as u64).clamp(128, 65_536);
        let min = min_kib * 1024 / PAGE;
        Memory {
            free: pages,
            min,
            low: min * 5 / 4,
            high: min * 3 / 2,
            kswapd: None,
            kswapd_idle: true,
            users: Vec::new(),
        }
    }
}

/// A task's memory: pages touched and resident, and pages readahead brought in ahead of it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TaskMemory {
    /// Pages ever touched (resident or in swap).
    touched: u64,
    /// Pages in RAM.
    resident: u64,
    /// Pages of the current walk a swap-in read brought in ahead of the one that faulted.
    readahead: u64,
}

impl Machine<'_> {
    /// The cost and effect of touching `bytes` from `offset` of its memory for the running task
    /// `t`: the fast path when nothing has to be paged (one burst of `page_touch` per page),
    /// else a walk page by page. A touch that starts past the pages touched so far starts at
    /// their end (the memory is one area from offset 0).
    pub(super) fn touch(&mut self, t: TaskId, offset: usize, bytes: usize) -> (u64, Effect) {
        let m = self.tasks[t].mem;
        let first = (offset as u64 / PAGE).min(m.touched);
        let end = (offset as u64 + bytes as u64).div_ceil(PAGE).max(first);
        let new = end.saturating_sub(m.touched);
        let swapped = m.touched - m.resident;
        if swapped == 0 && self.mem.free >= new && self.mem.free - new >= self.mem.low {
            self.take_pages(t, new);
            let c = self.costs.c(self.costs.model.page_touch);
            return ((end - first) * c, Effect::Resume);
        }
        (0, Effect::Touch(first, end))
    }

    /// Task `t` frees all its memory (interbench's memload `free`s every block, which unmaps
    /// it: `munmap` returns the pages to the free lists and releases their swap slots, so the
    /// next touch of the area is a first touch again).
    pub(super) fn free_memory(&mut self, t: TaskId) {
        let m = std::mem::take(&mut self.tasks[t].mem);
        self.mem.free += m.resident;
        self.mem.users.retain(|&u| u != t);
    }

    /// [`Effect::Touch`]: task `t` on `cpu` is at page `pos` of a walk that ends at page `pages`. Adds the next
    /// stretch of work to its burst (resident pages, first touches, or a major fault's trap)
    /// and sets what follows. Returns false if it left the CPU (a swap-in read).
    pub(super) fn touch_step(&mut self, cpu: CpuId, t: TaskId, pos: u64, pages: u64) -> bool {
        if pos >= pages {
            return true;
        }
        let m = self.tasks[t].mem;
        let swapped = m.touched - m.resident;
        // Resident stretch: the whole walk while nothing is in swap, else what readahead read.
        let hits = if swapped == 0 {
            m.touched.min(pages).saturating_sub(pos)
        } else {
            m.readahead.min(pages - pos)
        };
        if hits > 0 {
            self.tasks[t].mem.readahead -= hits.min(m.readahead);
            let c = self.costs.c(self.costs.model.page_touch);
            self.tasks[t].remaining += hits * c;
            self.tasks[t].then = Effect::Touch(pos + hits, pages);
            return true;
        }
        if pos >= m.touched {
            // First touches (minor faults): as many as free memory above `pages_min` holds (at
            // least a reclaim batch's worth, reclaimed first), in one stretch.
            let room = self.mem.free.saturating_sub(self.mem.min);
            let want = (pages - pos).min(room.max(RECLAIM_BATCH));
            let mut cost = self.make_room(want);
            let k = want.min(self.mem.free).max(1);
            self.take_pages(t, k);
            cost += self.wake_kswapd_if_low(cpu);
            let c = self.costs.c(self.costs.model.page_touch);
            self.tasks[t].remaining += cost + k * c;
            self.tasks[t].then = Effect::Touch(pos + k, pages);
            return true;
        }
        // A major fault: the trap and a free page for each page the read brings in.
        let k = SWAP_CLUSTER.min(pages - pos).min(swapped);
        let mut cost = self.make_room(k);
        self.mem.free -= k.min(self.mem.free);
        if self.tasks[t].mem.resident == 0 {
            self.mem.users.push(t);
        }
        self.tasks[t].mem.resident += k;
        self.tasks[t].mem.readahead = k - 1;
        cost += self.wake_kswapd_if_low(cpu);
        let trap =
            self.costs.c(self.costs.model.syscall) + self.costs.c(self.costs.model.page_touch);
        self.tasks[t].remaining += cost + trap;
        self.tasks[t].then = Effect::SwapIn(pos, pages, k);
        true
    }

    /// [`Effect::SwapIn`]: the faulting task sleeps on the read of `k` pages, then goes on with
    /// the page after the one that faulted.
    pub(super) fn swap_in(&mut self, cpu: CpuId, t: TaskId, pos: u64, pages: u64, k: u64) {
        let device = self
            .costs
            .c(self.costs.model.io_latency + (k * PAGE / 1024) * self.costs.model.io_per_kib);
        self.device_request(t, device);
        self.tasks[t].then = Effect::Touch(pos + 1, pages);
        self.block_on_device(cpu, t);
    }

    /// Make `k` pages free for the running task, reclaiming in batches itself while free memory would
    /// fall below `pages_min` (direct reclaim). Returns the CPU it spent.
    fn make_room(&mut self, k: u64) -> u64 {
        let mut cost = 0;
        while self.mem.free < k + self.mem.min {
            let freed = self.reclaim_pages(RECLAIM_BATCH);
            if freed == 0 {
                break;
            }
            cost += freed * self.costs.c(self.costs.model.reclaim);
        }
        cost
    }

    /// Task `t` takes `k` free pages for first touches.
    fn take_pages(&mut self, t: TaskId, k: u64) {
        if k == 0 {
            return;
        }
        self.mem.free -= k.min(self.mem.free);
        let m = &mut self.tasks[t].mem;
        if m.resident == 0 {
            self.mem.users.push(t);
        }
        m.touched += k;
        m.resident += k;
    }

    /// Evict up to `want` pages from the task with the most resident pages (ties: the lowest
    /// id). Returns the pages freed.
    fn reclaim_pages(&mut self, want: u64) -> u64 {
        self.mem.users.retain(|&u| self.tasks[u].mem.resident > 0);
        let Some(&victim) = self
            .mem
            .users
            .iter()
            .max_by_key(|&&u| (self.tasks[u].mem.resident, std::cmp::Reverse(u)))
        else {
            return 0;
        };
        let m = &mut self.tasks[victim].mem;
        let k = want.min(m.resident);
        m.resident -= k;
        m.readahead = m.readahead.min(m.resident);
        self.mem.free += k;
        k
    }

    /// Wake kswapd if free memory is below `pages_low` and it sleeps (creating it the first
    /// time). Returns the waker's cost.
    fn wake_kswapd_if_low(&mut self, cpu: CpuId) -> u64 {
        if self.mem.free >= self.mem.low || !self.mem.kswapd_idle {
            return 0;
        }
        let k = match self.mem.kswapd {
            Some(k) => k,
            None => {
                let k = self.spawn_kernel_thread(KernelThread::Kswapd, TaskKind::Kernel);
                self.mem.kswapd = Some(k);
                k
            }
        };
        self.mem.kswapd_idle = false;
        self.wake(k, Some(cpu), false)
    }

    /// kswapd's loop (`balance_pgdat`): reclaim a batch while free memory is below
    /// `pages_high`, then sleep until woken. Returns false if it went to sleep.
    pub(super) fn kswapd_resume(&mut self, cpu: CpuId, t: TaskId) -> bool {
        if self.mem.free >= self.mem.high {
            self.mem.kswapd_idle = true;
            self.block(cpu, t);
            return false;
        }
        let freed = self.reclaim_pages(RECLAIM_BATCH);
        if freed == 0 {
            self.mem.kswapd_idle = true;
            self.block(cpu, t);
            return false;
        }
        let c = self.costs.c(self.costs.model.reclaim);
        self.tasks[t].remaining += freed * c;
        true
    }
}
