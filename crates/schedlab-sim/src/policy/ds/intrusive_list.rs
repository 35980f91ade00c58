//! An intrusive doubly linked list, as the kernel's `struct list_head`: the links live in the
//! elements (here, entries of a slice indexed by `u32`), the list is a head, tail and length, so
//! adding and deleting an element is O(1) and needs no allocation. IBM's multi-queue scheduler
//! for 2.4 keeps each CPU's run list (and its realtime list) this way.

/// No element: the end of a list.
pub(in crate::policy) const NIL: u32 = u32::MAX;

/// An element that carries its own links.
pub(in crate::policy) trait Linked {
    /// The next and previous elements (`NIL`: none).
    fn links(&mut self) -> (&mut u32, &mut u32);
}

/// A list: its first and last element and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::policy) struct ListHead {
    pub(in crate::policy) head: u32,
    pub(in crate::policy) tail: u32,
    pub(in crate::policy) len: usize,
}

impl ListHead {
    /// No element.
    pub(in crate::policy) const EMPTY: ListHead = ListHead {
        head: NIL,
        tail: NIL,
        len: 0,
    };

    /// Add element `t` (not on any list) at the front (`list_add`).
    pub(in crate::policy) fn push_front<T: Linked>(&mut self, elems: &mut [T], t: usize) {
        let head = self.head;
        {
            let (next, prev) = elems[t].links();
            *prev = NIL;
            *next = head;
        }
        if head == NIL {
            self.tail = t as u32;
        } else {
            *elems[head as usize].links().1 = t as u32;
        }
        self.head = t as u32;
        self.len += 1;
    }

    /// Add element `t` (not on any list) at the back (`list_add_tail`).
    pub(in crate::policy) fn push_back<T: Linked>(&mut self, elems: &mut [T], t: usize) {
        let tail = self.tail;
        {
            let (next, prev) = elems[t].links();
            *next = NIL;
            *prev = tail;
        }
        if tail == NIL {
            self.head = t as u32;
        } else {
            *elems[tail as usize].links().0 = t as u32;
        }
        self.tail = t as u32;
        self.len += 1;
    }

    /// Take element `t`, which is on this list, off it (`list_del`).
    pub(in crate::policy) fn remove<T: Linked>(&mut self, elems: &mut [T], t: usize) {
        let (next, prev) = {
            let (n, p) = elems[t].links();
            (*n, *p)
        };
        if prev == NIL {
            self.head = next;
        } else {
            *elems[prev as usize].links().0 = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            *elems[next as usize].links().1 = prev;
        }
        self.len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    struct E(u32, u32);

    impl Linked for E {
        fn links(&mut self) -> (&mut u32, &mut u32) {
            (&mut self.0, &mut self.1)
        }
    }

    fn order(l: &ListHead, e: &mut [E]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut i = l.head;
        while i != NIL {
            out.push(i);
            i = *e[i as usize].links().0;
        }
        // And backwards, the same elements.
        let mut back = Vec::new();
        let mut i = l.tail;
        while i != NIL {
            back.push(i);
            i = *e[i as usize].links().1;
        }
        back.reverse();
        assert_eq!(out, back);
        assert_eq!(out.len(), l.len);
        out
    }

    #[test]
    fn add_at_both_ends_and_delete_anywhere() {
        let mut e = vec![E(NIL, NIL); 5];
        let mut l = ListHead::EMPTY;
        l.push_back(&mut e, 0);
        l.push_front(&mut e, 1);
        l.push_back(&mut e, 2);
        l.push_front(&mut e, 3);
        assert_eq!(order(&l, &mut e), [3, 1, 0, 2]);
        l.remove(&mut e, 1);
        assert_eq!(order(&l, &mut e), [3, 0, 2]);
        l.remove(&mut e, 3);
        l.remove(&mut e, 2);
        assert_eq!(order(&l, &mut e), [0]);
        assert_eq!((l.head, l.tail), (0, 0));
        l.remove(&mut e, 0);
        assert_eq!(l, ListHead::EMPTY);
        l.push_back(&mut e, 4);
        assert_eq!(order(&l, &mut e), [4]);
    }
}
