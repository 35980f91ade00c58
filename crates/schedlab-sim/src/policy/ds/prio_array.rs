//! The 2.6 scheduler's `struct prio_array` (kernel/sched.c, 2.6.20; kept by staircase v13):
//! MAX_PRIO FIFO lists with a bitmap of the non-empty ones, shared by `o1` and `staircase`.

use crate::policy::cpumask::set_bits;
use crate::policy::TaskId;
use std::collections::VecDeque;

/// Priorities 0..MAX_PRIO (0..99 real-time, 100..139 SCHED_OTHER; lower is better).
pub(in crate::policy) const MAX_PRIO: usize = 140;

/// One priority array: 140 FIFO lists and a bitmap of the non-empty ones.
#[derive(Clone, Debug)]
pub(in crate::policy) struct PrioArray {
    /// A FIFO list per priority.
    pub(in crate::policy) queue: Vec<VecDeque<TaskId>>,
    bitmap: [u64; 3],
    /// Tasks in the lists.
    pub(in crate::policy) nr_active: usize,
}

impl PrioArray {
    pub(in crate::policy) fn new() -> PrioArray {
        PrioArray {
            queue: vec![VecDeque::new(); MAX_PRIO],
            bitmap: [0; 3],
            nr_active: 0,
        }
    }
    pub(in crate::policy) fn enqueue(&mut self, prio: usize, t: TaskId, head: bool) {
        if head {
            self.queue[prio].push_front(t);
        } else {
            self.queue[prio].push_back(t);
        }
        self.bitmap[prio / 64] |= 1 << (prio % 64);
        self.nr_active += 1;
    }
    pub(in crate::policy) fn remove(&mut self, prio: usize, t: TaskId) -> bool {
        if !super::remove_from_list(&mut self.queue[prio], t) {
            return false;
        }
        if self.queue[prio].is_empty() {
            self.bitmap[prio / 64] &= !(1 << (prio % 64));
        }
        self.nr_active -= 1;
        true
    }
    /// sched_find_first_bit: the best non-empty priority.
    pub(in crate::policy) fn first(&self) -> Option<usize> {
        let w = self.bitmap.iter().position(|&b| b != 0)?;
        Some(w * 64 + self.bitmap[w].trailing_zeros() as usize)
    }
    /// Non-empty priorities, best first.
    /// The iterator reads a copy of the bitmap taken now, so the array may change meanwhile.
    pub(in crate::policy) fn prios(&self) -> impl Iterator<Item = usize> + use<> {
        let bitmap = self.bitmap;
        (0..bitmap.len()).flat_map(move |w| set_bits(w * 64, bitmap[w]))
    }
    pub(in crate::policy) fn remove_at(&mut self, prio: usize, i: usize) -> TaskId {
        let t = self.queue[prio]
            .remove(i)
            .expect("bad priority queue index");
        if self.queue[prio].is_empty() {
            self.bitmap[prio / 64] &= !(1 << (prio % 64));
        }
        self.nr_active -= 1;
        t
    }
    /// The best non-empty priority at or after `from`.
    pub(in crate::policy) fn next_set(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut bits = self.bitmap.get(w)? & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.bitmap.get(w)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::random_list_operations;

    #[test]
    fn fifo_per_priority_and_the_bitmap_finds_the_best() {
        let mut a = PrioArray::new();
        assert_eq!(a.first(), None);
        a.enqueue(120, 1, false);
        a.enqueue(120, 2, false);
        a.enqueue(120, 3, true);
        a.enqueue(100, 4, false);
        a.enqueue(139, 5, false);
        assert_eq!(a.nr_active, 5);
        assert_eq!(a.first(), Some(100));
        assert_eq!(a.prios().collect::<Vec<_>>(), [100, 120, 139]);
        assert_eq!(a.queue[120], [3, 1, 2], "head insert first, then FIFO");
        assert_eq!(a.next_set(101), Some(120));
        assert_eq!(a.next_set(121), Some(139));
        assert_eq!(a.next_set(MAX_PRIO), None);
        assert!(a.remove(100, 4));
        assert!(!a.remove(100, 4), "not queued any more");
        assert_eq!(a.first(), Some(120));
        assert_eq!(a.remove_at(120, 1), 1);
        assert_eq!(a.remove_at(120, 0), 3);
        assert_eq!(a.remove_at(120, 0), 2);
        assert_eq!(a.first(), Some(139), "an emptied list leaves the bitmap");
        assert_eq!(a.nr_active, 1);
    }

    #[test]
    fn random_operations_match_a_plain_list_per_priority() {
        random_list_operations(
            &mut PrioArray::new(),
            MAX_PRIO,
            &[0, 63, 64, 99, 100, 120, 127, 128, 139],
            0x2545_f491_4f6c_dd1d,
            PrioArray::enqueue,
            PrioArray::remove,
            |a, step, prio, reference| {
                let nonempty: Vec<usize> = (0..MAX_PRIO)
                    .filter(|&p| !reference[p].is_empty())
                    .collect();
                assert_eq!(a.prios().collect::<Vec<_>>(), nonempty, "step {step}");
                assert_eq!(a.first(), nonempty.first().copied(), "step {step}");
                assert_eq!(a.queue[prio], reference[prio], "step {step}");
                let len = reference.iter().map(Vec::len).sum::<usize>();
                assert_eq!(a.nr_active, len, "step {step}");
            },
        );
    }
}
