//! EEVDF's augmented tree: the kernel keeps a cfs_rq's entities in an rbtree ordered by virtual
//! deadline and augmented with each subtree's smallest vruntime (`min_vruntime`,
//! kernel/sched/fair.c `min_vruntime_cb`), so that `pick_eevdf` finds the eligible entity of
//! earliest deadline in O(log n). Here the balanced tree is a treap (random priorities,
//! rotations) over nodes kept in one dense array indexed by task id; each tree (one per
//! runqueue) is a root and a cached leftmost node (`rb_root_cached`).

/// No node.
pub(in crate::policy) const NIL: usize = usize::MAX;

/// `a − b` in wrapping virtual time.
#[inline]
pub(in crate::policy) fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// A node: its links, its treap priority and its keys (copies taken at insertion). Aligned to a
/// cache line, so that a descent touches one line per node (56 bytes would straddle two).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(in crate::policy) struct Node {
    pub(in crate::policy) left: usize,
    pub(in crate::policy) right: usize,
    pub(in crate::policy) parent: usize,
    /// Treap priority (a parent's is higher than its children's).
    pub(in crate::policy) prio: u64,
    /// The key: virtual deadline (ties broken by node index).
    pub(in crate::policy) deadline: u64,
    /// The augmented value.
    pub(in crate::policy) vruntime: u64,
    /// The smallest vruntime in the node's subtree.
    pub(in crate::policy) min_vruntime: u64,
}

/// One tree: its root and its leftmost (earliest-deadline) node, `NIL` when empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::policy) struct Treap {
    pub(in crate::policy) root: usize,
    pub(in crate::policy) leftmost: usize,
}

impl Default for Treap {
    fn default() -> Self {
        Treap::EMPTY
    }
}

/// `entity_before` plus a node-index tie break, so the tree order is total.
#[inline]
fn key_before(nodes: &[Node], a: usize, b: usize) -> bool {
    let d = vdiff(nodes[a].deadline, nodes[b].deadline);
    d < 0 || (d == 0 && a < b)
}

#[inline]
fn update_aug(nodes: &mut [Node], n: usize) {
    let mut m = nodes[n].vruntime;
    for c in [nodes[n].left, nodes[n].right] {
        if c != NIL && vdiff(nodes[c].min_vruntime, m) < 0 {
            m = nodes[c].min_vruntime;
        }
    }
    nodes[n].min_vruntime = m;
}

impl Treap {
    /// No node.
    pub(in crate::policy) const EMPTY: Treap = Treap {
        root: NIL,
        leftmost: NIL,
    };

    /// Rotate `x` above its parent, keeping the in-order sequence and the augmentation.
    #[inline]
    fn rotate_up(&mut self, nodes: &mut [Node], x: usize) {
        let p = nodes[x].parent;
        let g = nodes[p].parent;
        if nodes[p].left == x {
            let b = nodes[x].right;
            nodes[p].left = b;
            if b != NIL {
                nodes[b].parent = p;
            }
            nodes[x].right = p;
        } else {
            let b = nodes[x].left;
            nodes[p].right = b;
            if b != NIL {
                nodes[b].parent = p;
            }
            nodes[x].left = p;
        }
        nodes[p].parent = x;
        nodes[x].parent = g;
        if g == NIL {
            self.root = x;
        } else if nodes[g].left == p {
            nodes[g].left = x;
        } else {
            nodes[g].right = x;
        }
        update_aug(nodes, p);
        update_aug(nodes, x);
    }

    /// Insert `n` (keys and priority already set): descend to a leaf by key, lower the minima on
    /// the way, then rotate it up while its priority beats its parent's.
    #[inline]
    pub(in crate::policy) fn insert(&mut self, nodes: &mut [Node], n: usize) {
        let v = nodes[n].vruntime;
        let node = &mut nodes[n];
        node.left = NIL;
        node.right = NIL;
        node.min_vruntime = v;
        let root = self.root;
        if root == NIL {
            nodes[n].parent = NIL;
            self.root = n;
            self.leftmost = n;
            return;
        }
        if key_before(nodes, n, self.leftmost) {
            self.leftmost = n;
        }
        let mut p = root;
        loop {
            if vdiff(v, nodes[p].min_vruntime) < 0 {
                nodes[p].min_vruntime = v;
            }
            let next = if key_before(nodes, n, p) {
                &mut nodes[p].left
            } else {
                &mut nodes[p].right
            };
            if *next == NIL {
                *next = n;
                break;
            }
            p = *next;
        }
        nodes[n].parent = p;
        while nodes[n].parent != NIL && nodes[n].prio > nodes[nodes[n].parent].prio {
            self.rotate_up(nodes, n);
        }
    }

    /// Remove `n`: rotate it down until it has at most one child, splice it out, and recompute
    /// the minima above it until one does not change.
    #[inline]
    pub(in crate::policy) fn remove(&mut self, nodes: &mut [Node], n: usize) {
        if self.leftmost == n {
            // Its successor: the leftmost of its right subtree, else its parent.
            let mut s = nodes[n].right;
            if s == NIL {
                s = nodes[n].parent;
            } else {
                while nodes[s].left != NIL {
                    s = nodes[s].left;
                }
            }
            self.leftmost = s;
        }
        loop {
            let (l, r) = (nodes[n].left, nodes[n].right);
            if l == NIL || r == NIL {
                break;
            }
            let c = if nodes[l].prio > nodes[r].prio { l } else { r };
            self.rotate_up(nodes, c);
        }
        let (l, r, p) = (nodes[n].left, nodes[n].right, nodes[n].parent);
        let child = if l != NIL { l } else { r };
        if child != NIL {
            nodes[child].parent = p;
        }
        if p == NIL {
            assert_eq!(
                self.root, n,
                "eevdf: task {n} is not in its runqueue's tree"
            );
            self.root = child;
        } else if nodes[p].left == n {
            nodes[p].left = child;
        } else {
            nodes[p].right = child;
        }
        let mut a = p;
        while a != NIL {
            let old = nodes[a].min_vruntime;
            update_aug(nodes, a);
            if nodes[a].min_vruntime == old {
                break;
            }
            a = nodes[a].parent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(prio: u64, deadline: u64, vruntime: u64) -> Node {
        Node {
            left: NIL,
            right: NIL,
            parent: NIL,
            prio,
            deadline,
            vruntime,
            min_vruntime: vruntime,
        }
    }

    /// In-order node indices, checking links, heap order and the augmentation on the way.
    fn walk(nodes: &[Node], n: usize, out: &mut Vec<usize>) -> Option<u64> {
        if n == NIL {
            return None;
        }
        let mut m = nodes[n].vruntime;
        for c in [nodes[n].left, nodes[n].right] {
            if c != NIL {
                assert_eq!(nodes[c].parent, n, "parent link");
                assert!(nodes[c].prio <= nodes[n].prio, "heap order");
            }
        }
        if let Some(l) = walk(nodes, nodes[n].left, out) {
            m = m.min(l);
        }
        out.push(n);
        if let Some(r) = walk(nodes, nodes[n].right, out) {
            m = m.min(r);
        }
        assert_eq!(nodes[n].min_vruntime, m, "augmented minimum of {n}");
        Some(m)
    }

    #[test]
    fn keeps_deadline_order_heap_order_minima_and_leftmost() {
        // 64 nodes with scrambled deadlines, vruntimes and priorities.
        let mut nodes: Vec<Node> = (0..64u64)
            .map(|i| {
                node(
                    i.wrapping_mul(0x9e37_79b9) % 1000,
                    (i * 37) % 64,
                    (i * 11) % 50,
                )
            })
            .collect();
        let mut t = Treap::EMPTY;
        for n in 0..64 {
            t.insert(&mut nodes, n);
        }
        let check = |t: &Treap, nodes: &[Node], members: &[usize]| {
            let mut order = Vec::new();
            walk(nodes, t.root, &mut order);
            let mut want = members.to_vec();
            want.sort_by_key(|&n| (nodes[n].deadline, n));
            assert_eq!(order, want);
            assert_eq!(t.leftmost, want.first().copied().unwrap_or(NIL));
        };
        let mut members: Vec<usize> = (0..64).collect();
        check(&t, &nodes, &members);
        for n in [0, 63, 17, 5, 40, 41, 22] {
            t.remove(&mut nodes, n);
            members.retain(|&m| m != n);
            check(&t, &nodes, &members);
        }
        for n in members.clone() {
            t.remove(&mut nodes, n);
        }
        assert_eq!(t, Treap::EMPTY);
    }

    #[test]
    fn deadline_ties_go_by_index_and_wrap_around() {
        let mut nodes = vec![node(1, 5, 0), node(3, 5, 0), node(2, u64::MAX - 1, 0)];
        let mut t = Treap::EMPTY;
        for n in [1, 0, 2] {
            t.insert(&mut nodes, n);
        }
        // u64::MAX − 1 is 7 before 5 in wrapping time.
        assert_eq!(t.leftmost, 2);
        t.remove(&mut nodes, 2);
        assert_eq!(t.leftmost, 0, "equal deadlines: the lower index first");
    }
}
