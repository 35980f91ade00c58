//! A tournament tree over per-CPU keys: the least key in a range of CPUs, lowest CPU first on
//! a tie, in O(log CPUs) — the answer of a scan of every CPU's runqueue (fair.c's
//! `find_idlest_cpu` / `sched_balance_find_dst_cpu` on a flat machine) without reading every
//! runqueue.
//!
//! The tree is kept lazily: a policy calls [`MinTree::touch`] when a CPU's key may have changed
//! (one flag and at most one push, nothing else on its hot path), and a query first reads the
//! touched CPUs' keys again and replays their paths to the root. A yield storm, whose
//! runqueues keep their counts, never touches it; the creation of 100,000 tasks touches one CPU
//! per placement. The first query builds the whole tree, so a policy may create it late.

/// The least key per range of `n` slots, with the slot that holds it.
#[derive(Clone, Debug)]
pub(in crate::policy) struct MinTree<K> {
    /// Slots (CPUs) covered.
    n: usize,
    /// Leaves: `n` rounded up to a power of two.
    size: usize,
    /// Node `i`'s children are `2i` and `2i + 1`; leaves start at `size`. Each node holds the
    /// least (key, slot) of its leaves; `None` for the padding past `n`.
    nodes: Vec<Option<(K, u32)>>,
    /// Per slot: touched since the last query.
    dirty: Vec<bool>,
    /// The touched slots, each once.
    pending: Vec<u32>,
    /// Whether `nodes` has been filled at least once.
    built: bool,
}

impl<K: Ord + Copy> MinTree<K> {
    /// A tree over slots `0..n`, built from the keys at its first query.
    pub(in crate::policy) fn new(n: usize) -> MinTree<K> {
        let size = n.max(1).next_power_of_two();
        MinTree {
            n,
            size,
            nodes: vec![None; 2 * size],
            dirty: vec![false; n],
            pending: Vec::new(),
            built: false,
        }
    }

    /// Slots covered.
    pub(in crate::policy) fn len(&self) -> usize {
        self.n
    }

    /// Slot `i`'s key may have changed: read it again before the next query.
    #[inline]
    pub(in crate::policy) fn touch(&mut self, i: usize) {
        if self.built && i < self.n && !self.dirty[i] {
            self.dirty[i] = true;
            self.pending.push(i as u32);
        }
    }

    /// Bring the tree up to date with `key`: everything at the first call, then the touched
    /// slots (everything again when more than a quarter of them were touched).
    fn refresh(&mut self, key: &impl Fn(usize) -> K) {
        if !self.built || self.pending.len() > self.n / 4 {
            for i in 0..self.n {
                self.nodes[self.size + i] = Some((key(i), i as u32));
            }
            for v in (1..self.size).rev() {
                self.nodes[v] = Self::least(self.nodes[2 * v], self.nodes[2 * v + 1]);
            }
            for &i in &self.pending {
                self.dirty[i as usize] = false;
            }
            self.pending.clear();
            self.built = true;
            return;
        }
        for p in std::mem::take(&mut self.pending).drain(..) {
            let i = p as usize;
            self.dirty[i] = false;
            let mut v = self.size + i;
            self.nodes[v] = Some((key(i), p));
            while v > 1 {
                v /= 2;
                self.nodes[v] = Self::least(self.nodes[2 * v], self.nodes[2 * v + 1]);
            }
        }
    }

    fn least(a: Option<(K, u32)>, b: Option<(K, u32)>) -> Option<(K, u32)> {
        match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        }
    }

    /// The least (key, slot) over slots `lo..hi`, lowest slot on a tie.
    fn range_min(&self, lo: usize, hi: usize) -> Option<(K, u32)> {
        let (mut l, mut r) = (lo + self.size, hi + self.size);
        let mut best = None;
        while l < r {
            if l % 2 == 1 {
                best = Self::least(best, self.nodes[l]);
                l += 1;
            }
            if r % 2 == 1 {
                r -= 1;
                best = Self::least(best, self.nodes[r]);
            }
            l /= 2;
            r /= 2;
        }
        best
    }

    /// The slot a scan `start, start + 1, …, n − 1, 0, …, start − 1` keeping the first least
    /// key would return (`min_by_key` over the rotated order), with `key` giving each slot's
    /// key now. `None` when there are no slots.
    pub(in crate::policy) fn first_min_from(
        &mut self,
        start: usize,
        key: impl Fn(usize) -> K,
    ) -> Option<usize> {
        self.refresh(&key);
        let start = if start < self.n { start } else { 0 };
        let after = self.range_min(start, self.n);
        let before = self.range_min(0, start);
        let best = match (after, before) {
            (Some(a), Some(b)) => {
                if a.0 <= b.0 {
                    a
                } else {
                    b
                }
            }
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => return None,
        };
        Some(best.1 as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{RngCore, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// What the policies did before: the rotated scan keeping the first least key.
    fn scan(keys: &[(usize, u64)], start: usize) -> Option<usize> {
        let n = keys.len();
        (0..n).map(|i| (start + i) % n).min_by_key(|&c| keys[c])
    }

    #[test]
    fn matches_the_rotated_scan_under_random_changes() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
        for n in [1, 2, 3, 7, 8, 64, 100, 1024] {
            let mut keys: Vec<(usize, u64)> = vec![(0, 0); n];
            let mut tree = MinTree::new(n);
            assert_eq!(tree.len(), n);
            for round in 0..2000 {
                // A few keys change, from a small range so that ties are common.
                for _ in 0..(rng.next_u64() % 3) {
                    let c = (rng.next_u64() % n as u64) as usize;
                    keys[c] = ((rng.next_u64() % 4) as usize, rng.next_u64() % 3);
                    tree.touch(c);
                }
                // Now and then many at once (the rebuild path).
                if round % 500 == 499 {
                    for (c, k) in keys.iter_mut().enumerate() {
                        *k = ((rng.next_u64() % 2) as usize, 0);
                        tree.touch(c);
                    }
                }
                let start = (rng.next_u64() % n as u64) as usize;
                let got = tree.first_min_from(start, |c| keys[c]);
                assert_eq!(
                    got,
                    scan(&keys, start),
                    "n {n}, round {round}, start {start}"
                );
            }
        }
    }

    #[test]
    fn ties_go_to_the_first_slot_after_start() {
        let keys = [(1usize, 0u64), (0, 0), (1, 0), (0, 0), (1, 0)];
        let mut tree = MinTree::new(keys.len());
        assert_eq!(tree.first_min_from(0, |c| keys[c]), Some(1));
        assert_eq!(tree.first_min_from(2, |c| keys[c]), Some(3));
        assert_eq!(tree.first_min_from(4, |c| keys[c]), Some(1));
        // A start past the slots is the scan's start 0.
        assert_eq!(tree.first_min_from(9, |c| keys[c]), Some(1));
    }

    #[test]
    fn an_untouched_change_is_not_seen_and_a_touched_one_is() {
        let mut keys = [(0usize, 0u64), (1, 0)];
        let mut tree = MinTree::new(2);
        assert_eq!(tree.first_min_from(0, |c| keys[c]), Some(0));
        keys[0] = (5, 0);
        // The tree is lazy by contract: the caller must touch what changed.
        assert_eq!(tree.first_min_from(0, |c| keys[c]), Some(0));
        tree.touch(0);
        assert_eq!(tree.first_min_from(0, |c| keys[c]), Some(1));
    }
}
