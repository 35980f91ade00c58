//! A map from unique `i64` keys to values kept as one sorted ring buffer: the priority-list
//! scheduler's lists (`linux24_prio.rs`), each in 2.4 list order. That order's keys are handed
//! out at the two ends (`add_to_runqueue` takes a key below every other, `move_last_runqueue`
//! one above), so an insertion is a push at the front or the back after a binary search, and a
//! removal a binary search and a shift of the entries on the shorter side — for lists of tens
//! to hundreds of tasks, a few adjacent cache lines instead of a `BTreeMap`'s node allocations
//! and pointer chase. Any key order is accepted (the insertion is a sorted insert), so the
//! contents and their order are those a `BTreeMap` would have.

use std::collections::VecDeque;

/// Values by key, in key order.
#[derive(Clone, Debug)]
pub(in crate::policy) struct KeyDeque<V> {
    entries: VecDeque<(i64, V)>,
}

impl<V> Default for KeyDeque<V> {
    fn default() -> Self {
        KeyDeque {
            entries: VecDeque::new(),
        }
    }
}

impl<V> KeyDeque<V> {
    /// Put `value` under `key`, replacing the value already there (as `BTreeMap::insert`).
    pub(in crate::policy) fn insert(&mut self, key: i64, value: V) {
        // The common cases first: past either end.
        match (self.entries.front(), self.entries.back()) {
            (None, _) => return self.entries.push_back((key, value)),
            (_, Some(&(last, _))) if key > last => return self.entries.push_back((key, value)),
            (Some(&(first, _)), _) if key < first => return self.entries.push_front((key, value)),
            _ => {}
        }
        let pos = self.entries.partition_point(|&(k, _)| k < key);
        match self.entries.get_mut(pos) {
            Some(e) if e.0 == key => e.1 = value,
            _ => self.entries.insert(pos, (key, value)),
        }
    }

    /// Take the value under `key` out, if there is one.
    pub(in crate::policy) fn remove(&mut self, key: i64) -> Option<V> {
        // The common case first: the pick takes the best task, which a search from the front
        // of its list finds first.
        if self.entries.front().is_some_and(|&(k, _)| k == key) {
            return self.entries.pop_front().map(|(_, v)| v);
        }
        let pos = self.entries.binary_search_by_key(&key, |&(k, _)| k).ok()?;
        self.entries.remove(pos).map(|(_, v)| v)
    }

    /// The values in key order.
    pub(in crate::policy) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Whether it holds nothing.
    pub(in crate::policy) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Remove everything (keeping the memory).
    pub(in crate::policy) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn follows_a_btreemap_through_mixed_inserts_and_removals() {
        let mut d = KeyDeque::default();
        let mut m = BTreeMap::new();
        let (mut head, mut tail) = (0i64, 0i64);
        let mut x = 99u64;
        let mut live: Vec<i64> = Vec::new();
        for step in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            match x >> 61 {
                // Keys at the ends, as 2.4's list order hands them out.
                0 | 1 => {
                    head -= 1;
                    d.insert(head, step);
                    m.insert(head, step);
                    live.push(head);
                }
                2 | 3 => {
                    tail += 1;
                    d.insert(tail, step);
                    m.insert(tail, step);
                    live.push(tail);
                }
                // Any key, new or present (a replacement).
                4 => {
                    let k = (x >> 20) as i64 % 512 - 256;
                    d.insert(k, step);
                    if m.insert(k, step).is_none() {
                        live.push(k);
                    }
                }
                _ if !live.is_empty() => {
                    let k = live.swap_remove((x >> 8) as usize % live.len());
                    assert_eq!(d.remove(k), m.remove(&k), "remove {k}");
                }
                _ => assert_eq!(d.remove(7), m.remove(&7)),
            }
            assert_eq!(d.remove(i64::MAX), None);
        }
        assert!(d.values().eq(m.values()));
        assert_eq!(d.is_empty(), m.is_empty());
        d.clear();
        assert!(d.is_empty() && d.values().next().is_none());
    }
}
