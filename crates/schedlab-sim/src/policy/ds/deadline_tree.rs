//! EEVDF's augmented tree: the kernel keeps a cfs_rq's entities in an rbtree ordered by virtual
//! deadline and augmented with each subtree's smallest vruntime (`min_vruntime`,
//! kernel/sched/fair.c `min_vruntime_cb`), so that `pick_eevdf` finds the eligible entity of
//! earliest deadline in O(log n). The order and the augmentation are the kernel's; the shape is
//! not: here the tree is a B+tree.
//!
//! Why not a binary tree: the pick descends from the root, and each level of a binary tree is a
//! dependent load of another cache line. With a few hundred entities per runqueue that is eight
//! to ten memory round trips per pick, per insertion and per removal, which made EEVDF the
//! simulator's slowest policy. A B+tree node holds up to [`FANOUT`] children (a leaf
//! [`LEAF_CAP`] entities) in adjacent lines that the processor fetches together, so a tree of
//! 256 entities is one or two levels deep. The pick's answer does not depend on the shape —
//! it is the first eligible entity in (deadline, id) order — so results are the same as the
//! kernel's rbtree would give.
//!
//! Layout: every runqueue's tree lives in one [`Forest`] (arenas of leaves and inner nodes with
//! free lists, and each entity's leaf). Leaves hold the keys (deadline, id) and the vruntimes,
//! sorted, in a window of slots `start..end` of their arrays, and are linked in order (the
//! cached leftmost of `rb_root_cached` is the first leaf's first entry). The window is for the
//! yield storm, a queue: most picks take the first entry of some leaf and the pick goes back
//! at the end of the last one, so a removal moves the shorter side of its leaf (at the front,
//! nothing) and an append uses the free slots at the end (the window slides back to slot 0
//! when it reaches the end). The pick hands its [`Slot`] to the removal that follows it. Inner nodes hold, per child, the child's smallest vruntime (the augmentation)
//! and a separator key (no key in child `i` is below separator `i`, nor at or above separator
//! `i + 1`). A node is split when full; a node is freed when it becomes empty (no merging of
//! half-empty nodes: depth only grows by splits, and memory stays bounded by the largest
//! number of entities the tree held).

/// An entity's id (a task id; 32 bits keep the nodes small).
pub(in crate::policy) type Id = u32;

/// No node.
const NONE: u32 = u32::MAX;

/// Entities in a leaf. Leaves are only freed when empty, so in a long queue they run about
/// half full: with 16, 255 entities (the yield storm's 2048 tasks on 8 CPUs) took some 27
/// leaves and two levels of inner nodes, and the pick's scan of each level's minima, whose end
/// is data, mispredicted. Larger leaves are shallower trees but longer shifts on an insert into
/// a leaf's middle, and the two cases pull apart (alternating timings, events/s): the storm
/// on 8 CPUs 16: 10.4 M, 32: 10.65 M, 64: 10.9 M; 100,000 tasks on 1,024 CPUs (98 a queue),
/// steady, 16: 5.68 M, 32: 5.43 M, 64: 5.36 M. 32 keeps both above their goals with the most
/// room.
pub(in crate::policy) const LEAF_CAP: usize = 32;

/// Children of an inner node.
pub(in crate::policy) const FANOUT: usize = 16;

/// `a − b` in wrapping virtual time.
#[inline]
pub(in crate::policy) fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// `entity_before` plus an id tie break, so the order is total.
#[inline]
fn key_before(deadline_a: u64, id_a: Id, deadline_b: u64, id_b: Id) -> bool {
    let d = vdiff(deadline_a, deadline_b);
    // Bitwise, not short-circuit: the searches below stay free of unpredictable branches.
    (d < 0) | ((d == 0) & (id_a < id_b))
}

/// The smaller of two vruntimes in wrapping virtual time, chosen without a branch.
///
/// Which is smaller is data (the minimum of a leaf, taken again when its smallest entry
/// leaves), and LLVM's x86 cmov conversion turns the select into a jump in a loop-carried fold
/// (see `engine::lesser`), so on x86-64 it is a compare and a conditional move written out.
#[inline(always)]
#[allow(unsafe_code)]
fn vmin(a: u64, b: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut min = a;
        // SAFETY: arithmetic on registers only (`options(pure, nomem, nostack)`): b − a sets
        // the sign flag as `vdiff(b, a) < 0`, and b is moved over a if so.
        unsafe {
            core::arch::asm!(
                "cmp {b}, {a}",
                "cmovs {min}, {b}",
                a = in(reg) a,
                b = in(reg) b,
                min = inout(reg) min,
                options(pure, nomem, nostack),
            );
        }
        min
    }
    #[cfg(not(target_arch = "x86_64"))]
    if vdiff(b, a) < 0 {
        b
    } else {
        a
    }
}

/// The smallest of `values` (not empty) in wrapping virtual time.
#[inline]
fn vmin_of(values: &[u64]) -> u64 {
    values[1..].iter().fold(values[0], |m, &v| vmin(m, v))
}

/// A leaf: up to [`LEAF_CAP`] entities in (deadline, id) order, in slots `start..end` of its
/// arrays (a removal at the front, most of a yield storm's, moves no entry).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Leaf {
    /// The first occupied slot.
    start: u32,
    /// After the last occupied slot.
    end: u32,
    parent: u32,
    prev: u32,
    next: u32,
    /// The smallest vruntime of the entries (meaningless when empty).
    min: u64,
    ids: [Id; LEAF_CAP],
    deadlines: [u64; LEAF_CAP],
    vruntimes: [u64; LEAF_CAP],
}

impl Leaf {
    const EMPTY: Leaf = Leaf {
        start: 0,
        end: 0,
        parent: NONE,
        prev: NONE,
        next: NONE,
        min: 0,
        ids: [NONE; LEAF_CAP],
        deadlines: [0; LEAF_CAP],
        vruntimes: [0; LEAF_CAP],
    };

    /// The occupied slots.
    #[inline]
    fn slots(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }

    /// The number of entries.
    #[inline]
    fn len(&self) -> usize {
        (self.end - self.start) as usize
    }

    /// Put an entity in slot `at`.
    #[inline]
    fn set(&mut self, at: usize, id: Id, deadline: u64, vruntime: u64) {
        self.ids[at] = id;
        self.deadlines[at] = deadline;
        self.vruntimes[at] = vruntime;
    }

    /// Copy slot `from` to slot `to`.
    #[inline]
    fn copy_slot(&mut self, from: usize, to: usize) {
        self.ids[to] = self.ids[from];
        self.deadlines[to] = self.deadlines[from];
        self.vruntimes[to] = self.vruntimes[from];
    }

    /// Make room (the leaf is not full) for an entry before the one in slot `at` (`at` = the
    /// end: after the last) by moving the shorter side of the leaf that can move; returns the
    /// slot opened. One loop over the three arrays: a few entries, not worth three memmoves.
    #[inline]
    fn open_slot(&mut self, at: usize) -> usize {
        let slots = self.slots();
        debug_assert!(slots.len() < LEAF_CAP && slots.start <= at && at <= slots.end);
        if slots.start > 0 && (slots.end == LEAF_CAP || at - slots.start < slots.end - at) {
            for j in slots.start..at {
                self.copy_slot(j, j - 1);
            }
            self.start -= 1;
            at - 1
        } else {
            for j in (at..slots.end).rev() {
                self.copy_slot(j, j + 1);
            }
            self.end += 1;
            at
        }
    }

    /// Take out the entry in slot `at` by moving the shorter side of the leaf over it: the
    /// first entry (most of a yield storm's removals) moves nothing.
    #[inline]
    fn close_slot(&mut self, at: usize) {
        let slots = self.slots();
        debug_assert!(slots.contains(&at));
        if at - slots.start < slots.end - 1 - at {
            for j in (slots.start..at).rev() {
                self.copy_slot(j, j + 1);
            }
            self.start += 1;
        } else {
            for j in at + 1..slots.end {
                self.copy_slot(j, j - 1);
            }
            self.end -= 1;
        }
    }

    /// Move the entries to the first slots.
    fn compact(&mut self) {
        let slots = self.slots();
        self.ids.copy_within(slots.clone(), 0);
        self.deadlines.copy_within(slots.clone(), 0);
        self.vruntimes.copy_within(slots, 0);
        self.end -= self.start;
        self.start = 0;
    }
}

/// An inner node: up to [`FANOUT`] children, with their smallest vruntimes and separators.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Inner {
    len: u32,
    parent: u32,
    /// The smallest of `mins` (the subtree's smallest vruntime).
    min: u64,
    children: [u32; FANOUT],
    /// Each child's smallest vruntime.
    mins: [u64; FANOUT],
    /// Each child's separator key (its first key when it was made; entry 0 is not used for
    /// routing).
    sep_deadlines: [u64; FANOUT],
    sep_ids: [Id; FANOUT],
}

impl Inner {
    const EMPTY: Inner = Inner {
        len: 0,
        parent: NONE,
        min: 0,
        children: [NONE; FANOUT],
        mins: [0; FANOUT],
        sep_deadlines: [0; FANOUT],
        sep_ids: [NONE; FANOUT],
    };

    /// The position of `child` among the children.
    #[inline]
    fn index_of(&self, child: u32) -> usize {
        self.children[..self.len as usize]
            .iter()
            .position(|&c| c == child)
            .expect("deadline tree: a child is listed by its parent")
    }

    /// [`Inner::index_of`], searching from the last child: the same answer (a child is listed
    /// once), found at once for a split of the last child, which appends make the common case.
    #[inline]
    fn index_of_from_end(&self, child: u32) -> usize {
        self.children[..self.len as usize]
            .iter()
            .rposition(|&c| c == child)
            .expect("deadline tree: a child is listed by its parent")
    }

    /// Recompute `min` from the children's minima.
    #[inline]
    fn update_min(&mut self) {
        self.min = vmin_of(&self.mins[..self.len as usize]);
    }

    /// The child whose key range holds (`deadline`, `id`): the last whose separator is not
    /// after it (child 0 takes every key below separator 1), by binary search.
    #[inline]
    fn route(&self, deadline: u64, id: Id) -> usize {
        // Invariant: the answer is in base..base + size; separators 1..len are in order. The
        // loop's trip count depends only on len, and the step is a conditional move.
        let len = self.len as usize;
        // Appends (a yield pushes the deadline past every other) go to the last child.
        if len > 1
            && !key_before(
                deadline,
                id,
                self.sep_deadlines[len - 1],
                self.sep_ids[len - 1],
            )
        {
            return len - 1;
        }
        let (mut base, mut size) = (0, len);
        while size > 1 {
            let half = size / 2;
            let mid = base + half;
            let after = !key_before(deadline, id, self.sep_deadlines[mid], self.sep_ids[mid]);
            base = if after { mid } else { base };
            size -= half;
        }
        base
    }
}

/// Where an entity is: its leaf and its slot there. Valid until the tree next changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::policy) struct Slot {
    leaf: u32,
    index: u32,
}

/// One runqueue's tree: its root, its height (0: the root is a leaf) and its first and last
/// leaves. Empty when `root` is `NONE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::policy) struct DeadlineTree {
    root: u32,
    height: u32,
    first: u32,
    last: u32,
}

impl Default for DeadlineTree {
    fn default() -> Self {
        DeadlineTree::EMPTY
    }
}

impl DeadlineTree {
    /// No entity.
    pub(in crate::policy) const EMPTY: DeadlineTree = DeadlineTree {
        root: NONE,
        height: 0,
        first: NONE,
        last: NONE,
    };
}

/// The nodes of every runqueue's tree, and where each entity is.
#[derive(Clone, Debug, Default)]
pub(in crate::policy) struct Forest {
    leaves: Vec<Leaf>,
    inners: Vec<Inner>,
    free_leaves: Vec<u32>,
    free_inners: Vec<u32>,
    /// Each entity's leaf (`NONE`: in no tree).
    leaf_of: Vec<u32>,
}

impl Forest {
    /// Make room for entities `0..n`.
    pub(in crate::policy) fn reserve_ids(&mut self, n: usize) {
        assert!(
            n <= NONE as usize,
            "deadline tree: {n} entities do not fit 32-bit ids"
        );
        if self.leaf_of.len() < n {
            self.leaf_of.resize(n, NONE);
        }
    }

    fn alloc_leaf(&mut self) -> u32 {
        match self.free_leaves.pop() {
            Some(l) => {
                // The header only: no slot outside `start..end` is read.
                let leaf = &mut self.leaves[l as usize];
                (leaf.start, leaf.end) = (0, 0);
                (leaf.parent, leaf.prev, leaf.next) = (NONE, NONE, NONE);
                l
            }
            None => {
                self.leaves.push(Leaf::EMPTY);
                (self.leaves.len() - 1) as u32
            }
        }
    }

    fn alloc_inner(&mut self) -> u32 {
        match self.free_inners.pop() {
            Some(n) => {
                self.inners[n as usize] = Inner::EMPTY;
                n
            }
            None => {
                self.inners.push(Inner::EMPTY);
                (self.inners.len() - 1) as u32
            }
        }
    }

    /// Set the parent of node `child`, a leaf when `leaf`.
    #[inline]
    fn set_parent(&mut self, child: u32, leaf: bool, parent: u32) {
        if leaf {
            self.leaves[child as usize].parent = parent;
        } else {
            self.inners[child as usize].parent = parent;
        }
    }

    /// Insert entity `id` with its key `deadline` and its `vruntime`.
    pub(in crate::policy) fn insert(
        &mut self,
        tree: &mut DeadlineTree,
        id: Id,
        deadline: u64,
        vruntime: u64,
    ) {
        debug_assert_eq!(self.leaf_of[id as usize], NONE, "entity {id} is in a tree");
        if tree.root == NONE {
            let l = self.alloc_leaf();
            let leaf = &mut self.leaves[l as usize];
            leaf.end = 1;
            leaf.min = vruntime;
            leaf.set(0, id, deadline, vruntime);
            self.leaf_of[id as usize] = l;
            *tree = DeadlineTree {
                root: l,
                height: 0,
                first: l,
                last: l,
            };
            return;
        }
        // An append to a last leaf with room (a yield pushes the deadline past every other):
        // the descent would end there, at its end (no separator is above the tree's largest
        // key), so take it directly; the minima above change only if the leaf's does.
        let last = &mut self.leaves[tree.last as usize];
        let end = last.end as usize;
        if !key_before(deadline, id, last.deadlines[end - 1], last.ids[end - 1]) {
            if last.len() < LEAF_CAP {
                if end == LEAF_CAP {
                    last.compact();
                }
                let at = last.end as usize;
                last.set(at, id, deadline, vruntime);
                last.end += 1;
                self.leaf_of[id as usize] = tree.last;
                if vdiff(vruntime, last.min) < 0 {
                    last.min = vruntime;
                    let parent = last.parent;
                    self.lower_last_min(parent, tree.last, vruntime);
                }
            } else {
                // Full: the descent's lowering of the minima, then a new last leaf.
                let parent = last.parent;
                self.lower_last_min(parent, tree.last, vruntime);
                self.append_leaf(tree, id, deadline, vruntime);
            }
            return;
        }
        // Descend by key, lowering the children's minima on the way.
        let mut node = tree.root;
        for _ in 0..tree.height {
            let inner = &mut self.inners[node as usize];
            let i = inner.route(deadline, id);
            inner.mins[i] = vmin(inner.mins[i], vruntime);
            inner.min = vmin(inner.min, vruntime);
            node = inner.children[i];
        }
        let leaf = &mut self.leaves[node as usize];
        // A leaf in a tree is never empty.
        let slots = leaf.slots();
        // The first slot after the key, by a binary search whose steps are conditional moves.
        let (mut base, mut size) = (slots.start, slots.len());
        let end = slots.end;
        if !key_before(deadline, id, leaf.deadlines[end - 1], leaf.ids[end - 1]) {
            (base, size) = (end - 1, 1); // after the last entry: an append
        }
        while size > 1 {
            let half = size / 2;
            let mid = base + half;
            let after = !key_before(deadline, id, leaf.deadlines[mid], leaf.ids[mid]);
            base = if after { mid } else { base };
            size -= half;
        }
        let at = base
            + usize::from(!key_before(
                deadline,
                id,
                leaf.deadlines[base],
                leaf.ids[base],
            ));
        if slots.len() < LEAF_CAP {
            let at = leaf.open_slot(at);
            leaf.set(at, id, deadline, vruntime);
            leaf.min = vmin(leaf.min, vruntime);
            self.leaf_of[id as usize] = node;
            return;
        }
        // A full leaf starts at slot 0: `at` is the position among its entries.
        self.split_leaf(tree, node, at, id, deadline, vruntime);
    }

    /// Append entity `id` after the full last leaf in a new last leaf (the split of
    /// [`Forest::split_leaf`] at the end, without its copies): the leaf stays full, as B-trees
    /// do for ascending inserts, and the next `LEAF_CAP − 1` appends need no split.
    fn append_leaf(&mut self, tree: &mut DeadlineTree, id: Id, deadline: u64, vruntime: u64) {
        let l = tree.last;
        let r = self.alloc_leaf();
        let (l_min, parent) = {
            let leaf = &mut self.leaves[l as usize];
            debug_assert!(leaf.len() == LEAF_CAP && leaf.next == NONE);
            leaf.next = r;
            (leaf.min, leaf.parent)
        };
        let right = &mut self.leaves[r as usize];
        right.end = 1;
        right.set(0, id, deadline, vruntime);
        right.min = vruntime;
        right.prev = l;
        right.parent = parent;
        tree.last = r;
        self.leaf_of[id as usize] = r;
        self.insert_child(tree, parent, l, l_min, r, vruntime, (deadline, id), 1);
    }

    /// Insert into the full leaf `l` at `pos` by splitting it in two halves.
    fn split_leaf(
        &mut self,
        tree: &mut DeadlineTree,
        l: u32,
        pos: usize,
        id: Id,
        deadline: u64,
        vruntime: u64,
    ) {
        // All LEAF_CAP + 1 entries in order.
        let mut ids = [0; LEAF_CAP + 1];
        let mut deadlines = [0; LEAF_CAP + 1];
        let mut vruntimes = [0; LEAF_CAP + 1];
        {
            let leaf = &self.leaves[l as usize];
            debug_assert!(leaf.start == 0 && leaf.len() == LEAF_CAP);
            ids[..pos].copy_from_slice(&leaf.ids[..pos]);
            deadlines[..pos].copy_from_slice(&leaf.deadlines[..pos]);
            vruntimes[..pos].copy_from_slice(&leaf.vruntimes[..pos]);
            ids[pos + 1..].copy_from_slice(&leaf.ids[pos..]);
            deadlines[pos + 1..].copy_from_slice(&leaf.deadlines[pos..]);
            vruntimes[pos + 1..].copy_from_slice(&leaf.vruntimes[pos..]);
        }
        ids[pos] = id;
        deadlines[pos] = deadline;
        vruntimes[pos] = vruntime;
        // An insert after the tree's largest key never comes here: `insert` appends it
        // (`Forest::append_leaf` when the last leaf is full).
        debug_assert!(
            !(pos == LEAF_CAP && self.leaves[l as usize].next == NONE),
            "deadline tree: an append reached split_leaf"
        );
        let keep = LEAF_CAP.div_ceil(2);
        let r = self.alloc_leaf();
        let (next, parent) = {
            let leaf = &mut self.leaves[l as usize];
            leaf.end = keep as u32;
            leaf.ids[..keep].copy_from_slice(&ids[..keep]);
            leaf.deadlines[..keep].copy_from_slice(&deadlines[..keep]);
            leaf.vruntimes[..keep].copy_from_slice(&vruntimes[..keep]);
            leaf.min = vmin_of(&vruntimes[..keep]);
            let next = leaf.next;
            leaf.next = r;
            (next, leaf.parent)
        };
        let moved = LEAF_CAP + 1 - keep;
        {
            let right = &mut self.leaves[r as usize];
            right.end = moved as u32;
            right.ids[..moved].copy_from_slice(&ids[keep..]);
            right.deadlines[..moved].copy_from_slice(&deadlines[keep..]);
            right.vruntimes[..moved].copy_from_slice(&vruntimes[keep..]);
            right.min = vmin_of(&vruntimes[keep..]);
            right.prev = l;
            right.next = next;
            right.parent = parent;
        }
        if next == NONE {
            tree.last = r;
        } else {
            self.leaves[next as usize].prev = r;
        }
        if pos < keep {
            self.leaf_of[id as usize] = l;
        }
        for &e in &ids[keep..] {
            self.leaf_of[e as usize] = r;
        }
        let (l_min, r_min) = (self.leaves[l as usize].min, self.leaves[r as usize].min);
        self.insert_child(
            tree,
            parent,
            l,
            l_min,
            r,
            r_min,
            (deadlines[keep], ids[keep]),
            1,
        );
    }

    /// Node `right` (minimum `right_min`, first key `sep`) was split off `left` (minimum now
    /// `left_min`), both `level` levels above the leaves minus one (1: leaves): hang it after
    /// `left` in `parent`, splitting the parent when full, or grow a new root.
    #[allow(clippy::too_many_arguments)]
    fn insert_child(
        &mut self,
        tree: &mut DeadlineTree,
        parent: u32,
        left: u32,
        left_min: u64,
        right: u32,
        right_min: u64,
        sep: (u64, Id),
        level: u32,
    ) {
        let leaf = level == 1;
        if parent == NONE {
            let root = self.alloc_inner();
            let inner = &mut self.inners[root as usize];
            inner.len = 2;
            inner.children[..2].copy_from_slice(&[left, right]);
            inner.mins[..2].copy_from_slice(&[left_min, right_min]);
            inner.sep_deadlines[1] = sep.0;
            inner.sep_ids[1] = sep.1;
            inner.update_min();
            self.set_parent(left, leaf, root);
            self.set_parent(right, leaf, root);
            tree.root = root;
            tree.height += 1;
            return;
        }
        let inner = &mut self.inners[parent as usize];
        let i = inner.index_of_from_end(left);
        inner.mins[i] = left_min;
        let len = inner.len as usize;
        if len < FANOUT {
            let at = i + 1;
            // Nothing to shift after the last child (the common case): no four empty copies.
            if at < len {
                inner.children.copy_within(at..len, at + 1);
                inner.mins.copy_within(at..len, at + 1);
                inner.sep_deadlines.copy_within(at..len, at + 1);
                inner.sep_ids.copy_within(at..len, at + 1);
            }
            inner.children[at] = right;
            inner.mins[at] = right_min;
            inner.sep_deadlines[at] = sep.0;
            inner.sep_ids[at] = sep.1;
            inner.len += 1;
            inner.update_min();
            self.set_parent(right, leaf, parent);
            return;
        }
        // Split the full parent: FANOUT + 1 children in order, the upper half moves.
        let at = i + 1;
        let mut children = [0; FANOUT + 1];
        let mut mins = [0; FANOUT + 1];
        let mut sep_deadlines = [0; FANOUT + 1];
        let mut sep_ids = [0; FANOUT + 1];
        children[..at].copy_from_slice(&inner.children[..at]);
        mins[..at].copy_from_slice(&inner.mins[..at]);
        sep_deadlines[..at].copy_from_slice(&inner.sep_deadlines[..at]);
        sep_ids[..at].copy_from_slice(&inner.sep_ids[..at]);
        children[at + 1..].copy_from_slice(&inner.children[at..]);
        mins[at + 1..].copy_from_slice(&inner.mins[at..]);
        sep_deadlines[at + 1..].copy_from_slice(&inner.sep_deadlines[at..]);
        sep_ids[at + 1..].copy_from_slice(&inner.sep_ids[at..]);
        children[at] = right;
        mins[at] = right_min;
        sep_deadlines[at] = sep.0;
        sep_ids[at] = sep.1;
        let keep = FANOUT.div_ceil(2);
        let moved = FANOUT + 1 - keep;
        let grand = inner.parent;
        inner.len = keep as u32;
        inner.children[..keep].copy_from_slice(&children[..keep]);
        inner.mins[..keep].copy_from_slice(&mins[..keep]);
        inner.sep_deadlines[..keep].copy_from_slice(&sep_deadlines[..keep]);
        inner.sep_ids[..keep].copy_from_slice(&sep_ids[..keep]);
        inner.update_min();
        let p_min = inner.min;
        let q = self.alloc_inner();
        let split = &mut self.inners[q as usize];
        split.len = moved as u32;
        split.parent = grand;
        split.children[..moved].copy_from_slice(&children[keep..]);
        split.mins[..moved].copy_from_slice(&mins[keep..]);
        split.sep_deadlines[..moved].copy_from_slice(&sep_deadlines[keep..]);
        split.sep_ids[..moved].copy_from_slice(&sep_ids[keep..]);
        split.update_min();
        let q_min = split.min;
        for (k, &c) in children.iter().enumerate() {
            self.set_parent(c, leaf, if k < keep { parent } else { q });
        }
        let q_sep = (sep_deadlines[keep], sep_ids[keep]);
        self.insert_child(tree, grand, parent, p_min, q, q_min, q_sep, level + 1);
    }

    /// Remove entity `id` (it must be in `tree`). Returns the entity that followed it in
    /// deadline order, which the removal has at hand (eevdf's guess at the pick after this one).
    pub(in crate::policy) fn remove(&mut self, tree: &mut DeadlineTree, id: Id) -> Option<Id> {
        let l = self.leaf_of[id as usize];
        assert!(l != NONE, "eevdf: task {id} is not in its runqueue's tree");
        let leaf = &self.leaves[l as usize];
        let slots = leaf.slots();
        let at = slots.start
            + leaf.ids[slots]
                .iter()
                .position(|&e| e == id)
                .expect("deadline tree: an entity is in its leaf");
        self.remove_at(
            tree,
            id,
            Slot {
                leaf: l,
                index: at as u32,
            },
        )
    }

    /// [`Forest::remove`] of entity `id` found at `slot` (by [`Forest::first`] or
    /// [`Forest::first_eligible`], the tree unchanged since): no search for it.
    pub(in crate::policy) fn remove_at(
        &mut self,
        tree: &mut DeadlineTree,
        id: Id,
        slot: Slot,
    ) -> Option<Id> {
        self.remove_slot::<true>(tree, id, slot)
    }

    /// [`Forest::remove_at`] without the follower: nothing read for it (when it is the first
    /// entity of the next leaf, that leaf's line, which the pick's removal does not otherwise
    /// touch).
    pub(in crate::policy) fn take_at(&mut self, tree: &mut DeadlineTree, id: Id, slot: Slot) {
        self.remove_slot::<false>(tree, id, slot);
    }

    /// [`Forest::remove_at`]; the follower only if `FOLLOWER` (else `None`).
    #[inline(always)]
    fn remove_slot<const FOLLOWER: bool>(
        &mut self,
        tree: &mut DeadlineTree,
        id: Id,
        slot: Slot,
    ) -> Option<Id> {
        let (l, at) = (slot.leaf, slot.index as usize);
        debug_assert_eq!(self.leaf_of[id as usize], l, "deadline tree: a stale slot");
        self.leaf_of[id as usize] = NONE;
        let leaf = &mut self.leaves[l as usize];
        debug_assert!(leaf.slots().contains(&at) && leaf.ids[at] == id);
        let v = leaf.vruntimes[at];
        // Its follower, in this leaf or (below) the first of the next.
        let after = (FOLLOWER && at + 1 < leaf.end as usize).then(|| leaf.ids[at + 1]);
        leaf.close_slot(at);
        let next = leaf.next;
        if leaf.len() > 0 {
            if v == leaf.min {
                leaf.min = vmin_of(&leaf.vruntimes[leaf.slots()]);
                let (min, parent) = (leaf.min, leaf.parent);
                self.raise_min(parent, l, min);
            }
            return after.or_else(|| self.first_of::<FOLLOWER>(next));
        }
        let after = self.first_of::<FOLLOWER>(next);
        // The leaf is empty: unlink it and take it out of its parent.
        let leaf = &self.leaves[l as usize];
        let (prev, parent) = (leaf.prev, leaf.parent);
        if prev == NONE {
            tree.first = next;
        } else {
            self.leaves[prev as usize].next = next;
        }
        if next == NONE {
            tree.last = prev;
        } else {
            self.leaves[next as usize].prev = prev;
        }
        self.free_leaves.push(l);
        self.remove_child(tree, parent, l);
        after
    }

    /// The first entity of leaf `l` (`None`: no leaf, or not `WANTED`).
    #[inline]
    fn first_of<const WANTED: bool>(&self, l: u32) -> Option<Id> {
        if !WANTED {
            return None;
        }
        self.leaves
            .get(l as usize)
            .map(|leaf| leaf.ids[leaf.start as usize])
    }

    /// The last child of `parent` (on the tree's rightmost path) now holds `vruntime`: lower
    /// the minima upwards until one does not change.
    fn lower_last_min(&mut self, mut parent: u32, mut child: u32, vruntime: u64) {
        while parent != NONE {
            let inner = &mut self.inners[parent as usize];
            let i = inner.len as usize - 1;
            debug_assert_eq!(
                inner.children[i], child,
                "deadline tree: not the last child"
            );
            inner.mins[i] = vmin(inner.mins[i], vruntime);
            if vdiff(vruntime, inner.min) >= 0 {
                return;
            }
            inner.min = vruntime;
            (child, parent) = (parent, inner.parent);
        }
    }

    /// Child `child` of `parent` now has the smallest vruntime `min` (no smaller than before):
    /// update the minima upwards until one does not change.
    fn raise_min(&mut self, mut parent: u32, mut child: u32, mut min: u64) {
        while parent != NONE {
            let inner = &mut self.inners[parent as usize];
            let i = inner.index_of(child);
            if inner.mins[i] == min {
                return;
            }
            let old = inner.min;
            let was = std::mem::replace(&mut inner.mins[i], min);
            if was != old {
                // Another child holds the smallest vruntime, and this one's only rose.
                return;
            }
            inner.update_min();
            if inner.min == old {
                return;
            }
            (child, min, parent) = (parent, inner.min, inner.parent);
        }
    }

    /// Take the emptied node `child` out of `parent`, freeing nodes that become empty and
    /// lowering the root while it has one child.
    fn remove_child(&mut self, tree: &mut DeadlineTree, parent: u32, child: u32) {
        if parent == NONE {
            *tree = DeadlineTree::EMPTY;
            return;
        }
        let inner = &mut self.inners[parent as usize];
        let i = inner.index_of(child);
        let len = inner.len as usize;
        let old = inner.min;
        inner.children.copy_within(i + 1..len, i);
        inner.mins.copy_within(i + 1..len, i);
        inner.sep_deadlines.copy_within(i + 1..len, i);
        inner.sep_ids.copy_within(i + 1..len, i);
        inner.len -= 1;
        if inner.len == 0 {
            let grand = inner.parent;
            self.free_inners.push(parent);
            self.remove_child(tree, grand, parent);
            return;
        }
        inner.update_min();
        let (new, grand) = (inner.min, inner.parent);
        if new != old {
            self.raise_min(grand, parent, new);
        }
        // A root with one child gives way to it.
        while tree.height > 0 && self.inners[tree.root as usize].len == 1 {
            let old_root = tree.root;
            let only = self.inners[old_root as usize].children[0];
            tree.height -= 1;
            self.set_parent(only, tree.height == 0, NONE);
            self.free_inners.push(old_root);
            tree.root = only;
        }
    }

    /// The smallest vruntime in `tree`.
    #[inline]
    pub(in crate::policy) fn min_vruntime(&self, tree: &DeadlineTree) -> Option<u64> {
        if tree.root == NONE {
            None
        } else if tree.height == 0 {
            Some(self.leaves[tree.root as usize].min)
        } else {
            Some(self.inners[tree.root as usize].min)
        }
    }

    /// The entity of earliest deadline, its vruntime and its slot (`rb_first_cached`).
    #[inline]
    pub(in crate::policy) fn first(&self, tree: &DeadlineTree) -> Option<(Id, u64, Slot)> {
        (tree.first != NONE).then(|| {
            let leaf = &self.leaves[tree.first as usize];
            let at = leaf.start as usize;
            let slot = Slot {
                leaf: tree.first,
                index: leaf.start,
            };
            (leaf.ids[at], leaf.vruntimes[at], slot)
        })
    }

    /// The first entity in deadline order whose vruntime satisfies `eligible`, which must hold
    /// for every vruntime at or below one that it holds for (it is "v ≤ V"): the pick's
    /// descent, guided by the minima. Returns it with its slot.
    #[inline]
    pub(in crate::policy) fn first_eligible(
        &self,
        tree: &DeadlineTree,
        eligible: impl Fn(u64) -> bool,
    ) -> Option<(Id, Slot)> {
        if tree.root == NONE {
            return None;
        }
        let mut node = tree.root;
        for _ in 0..tree.height {
            let inner = &self.inners[node as usize];
            let i = inner.mins[..inner.len as usize]
                .iter()
                .position(|&m| eligible(m))?;
            node = inner.children[i];
        }
        let leaf = &self.leaves[node as usize];
        let slots = leaf.slots();
        leaf.vruntimes[slots.clone()]
            .iter()
            .position(|&v| eligible(v))
            .map(|i| {
                let at = slots.start + i;
                let slot = Slot {
                    leaf: node,
                    index: at as u32,
                };
                (leaf.ids[at], slot)
            })
    }

    /// Bring the line saying where entity `id`'s leaf is (what its removal reads first) into
    /// the cache (`prefetch.rs`; an id out of range is ignored).
    #[inline]
    pub(in crate::policy) fn prefetch_entry(&self, id: Id) {
        if let Some(l) = self.leaf_of.get(id as usize) {
            crate::prefetch::line(l);
        }
    }

    /// The entities of `tree` from the latest deadline to the earliest.
    pub(in crate::policy) fn iter_rev<'a>(
        &'a self,
        tree: &DeadlineTree,
    ) -> impl Iterator<Item = Id> + 'a {
        let end = |leaf: u32| {
            self.leaves
                .get(leaf as usize)
                .map_or(0, |l: &Leaf| l.slots().end)
        };
        let mut leaf = tree.last;
        let mut pos = end(leaf);
        std::iter::from_fn(move || {
            while leaf != NONE {
                let l = &self.leaves[leaf as usize];
                if pos > l.start as usize {
                    pos -= 1;
                    return Some(l.ids[pos]);
                }
                leaf = l.prev;
                pos = end(leaf);
            }
            None
        })
    }

    /// The key and vruntime the tree holds for entity `id`, if it is in a tree.
    pub(in crate::policy) fn entry(&self, id: Id) -> Option<(u64, u64)> {
        let l = *self.leaf_of.get(id as usize)?;
        if l == NONE {
            return None;
        }
        let leaf = &self.leaves[l as usize];
        let slots = leaf.slots();
        let i = slots.start + leaf.ids[slots].iter().position(|&e| e == id)?;
        Some((leaf.deadlines[i], leaf.vruntimes[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A reference model: (deadline made comparable, id) → vruntime. Deadlines in a test stay
    /// within a window around `base` so wrapping order is plain order after subtracting it.
    struct Model {
        base: u64,
        map: BTreeMap<(i64, Id), u64>,
    }

    impl Model {
        fn key(&self, deadline: u64, id: Id) -> (i64, Id) {
            (vdiff(deadline, self.base), id)
        }
    }

    /// Check the tree's invariants and its contents against the model.
    fn check(f: &Forest, t: &DeadlineTree, model: &Model) {
        let want: Vec<Id> = model.map.keys().map(|k| k.1).collect();
        let mut got: Vec<Id> = f.iter_rev(t).collect();
        got.reverse();
        assert_eq!(got, want, "in-order contents");
        assert_eq!(t.root == NONE, want.is_empty());
        let min = model
            .map
            .values()
            .copied()
            .reduce(|a, b| if vdiff(b, a) < 0 { b } else { a });
        assert_eq!(f.min_vruntime(t), min);
        assert_eq!(
            f.first(t).map(|(e, v, _)| (e, v)),
            model.map.iter().next().map(|(k, &v)| (k.1, v)),
            "leftmost"
        );
        if t.root != NONE {
            walk(f, t.root, t.height, NONE);
        }
        for (k, &v) in &model.map {
            assert_eq!(f.entry(k.1).map(|e| e.1), Some(v));
        }
    }

    /// Check parents and stored minima below `node`; returns the subtree's minimum.
    fn walk(f: &Forest, node: u32, height: u32, parent: u32) -> u64 {
        if height == 0 {
            let leaf = &f.leaves[node as usize];
            assert_eq!(leaf.parent, parent);
            assert!(leaf.len() > 0, "no empty leaf in a tree");
            assert_eq!(leaf.min, vmin_of(&leaf.vruntimes[leaf.slots()]));
            for &e in &leaf.ids[leaf.slots()] {
                assert_eq!(f.leaf_of[e as usize], node);
            }
            return leaf.min;
        }
        let inner = &f.inners[node as usize];
        assert_eq!(inner.parent, parent);
        assert!(inner.len > 0);
        assert_eq!(inner.min, vmin_of(&inner.mins[..inner.len as usize]));
        for i in 0..inner.len as usize {
            let m = walk(f, inner.children[i], height - 1, node);
            assert_eq!(inner.mins[i], m, "stored minimum of child {i} of {node}");
        }
        inner.min
    }

    fn splitmix(mut x: u64) -> u64 {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    /// Random inserts, removals and picks of entities `0..ids` (deadlines around `base`, with
    /// ties), checking the order, the minima, the leftmost and the eligible pick against the
    /// model after every step; returns the greatest height the tree reached.
    fn random_ops(base: u64, ids: u32, steps: u64, seed: u64) -> u32 {
        let mut f = Forest::default();
        f.reserve_ids(ids as usize);
        let mut t = DeadlineTree::EMPTY;
        let mut model = Model {
            base,
            map: BTreeMap::new(),
        };
        let mut inside: Vec<Option<(u64, u64)>> = vec![None; ids as usize];
        let mut height = 0;
        for step in 0..steps {
            height = height.max(t.height);
            let r = splitmix(seed ^ step);
            let id = (r % ids as u64) as Id;
            match inside[id as usize] {
                None => {
                    // Deadlines in a window of 1000 (many ties), vruntimes around base too.
                    let d = base.wrapping_add((r >> 20) % 1000).wrapping_sub(500);
                    let v = base.wrapping_add((r >> 40) % 700).wrapping_sub(350);
                    f.insert(&mut t, id, d, v);
                    model.map.insert(model.key(d, id), v);
                    inside[id as usize] = Some((d, v));
                }
                Some((d, _)) => {
                    let after = model.map.range(model.key(d, id)..).nth(1).map(|e| e.0 .1);
                    assert_eq!(f.remove(&mut t, id), after, "the follower of {id}");
                    model.map.remove(&model.key(d, id));
                    inside[id as usize] = None;
                }
            }
            if step % 7 == 0 || ids <= 64 {
                check(&f, &t, &model);
            }
            // The pick for a random limit: the first in order with v − base ≤ limit.
            let limit = ((r >> 8) % 800) as i64 - 400;
            let want = model
                .map
                .iter()
                .find(|(_, &v)| vdiff(v, base) <= limit)
                .map(|(k, _)| k.1);
            let got = f.first_eligible(&t, |v| vdiff(v, base) <= limit);
            assert_eq!(got.map(|(e, _)| e), want);
            // Sometimes take out the pick, or the leftmost, at the slot where it was found.
            let take = match (r >> 60) & 7 {
                0 => got,
                1 => f.first(&t).map(|(e, _, slot)| (e, slot)),
                _ => None,
            };
            if let Some((e, slot)) = take {
                let (d, _) = inside[e as usize].unwrap();
                let after = model.map.range(model.key(d, e)..).nth(1).map(|x| x.0 .1);
                // Half of them without the follower (eevdf's pick when it gives no hint).
                if (r >> 59) & 1 == 0 {
                    assert_eq!(f.remove_at(&mut t, e, slot), after, "the follower of {e}");
                } else {
                    f.take_at(&mut t, e, slot);
                }
                model.map.remove(&model.key(d, e));
                inside[e as usize] = None;
            }
        }
        // Empty it and check that every node went back to the free lists.
        for id in 0..ids {
            if inside[id as usize].is_some() {
                f.remove(&mut t, id);
            }
        }
        assert_eq!(t, DeadlineTree::EMPTY);
        assert_eq!(f.free_leaves.len(), f.leaves.len());
        assert_eq!(f.free_inners.len(), f.inners.len());
        height
    }

    #[test]
    fn small_trees_match_the_model() {
        random_ops(1_000_000, 40, 4_000, 1);
    }

    #[test]
    fn deep_trees_match_the_model() {
        // 3000 entities: two levels of inner nodes at the fullest.
        assert!(random_ops(5_000_000, 3_000, 60_000, 2) >= 2);
    }

    #[test]
    fn keys_wrap_around() {
        random_ops(u64::MAX - 200, 500, 20_000, 3);
    }

    #[test]
    fn a_queue_pattern_frees_what_it_drains() {
        // Remove from the front, insert at the back (a yield storm's shape): the tree holds
        // 300 entities throughout and its node count stays bounded.
        let mut f = Forest::default();
        f.reserve_ids(300);
        let mut t = DeadlineTree::EMPTY;
        for id in 0..300u32 {
            f.insert(&mut t, id, id as u64 * 10, id as u64);
        }
        let mut d = 3000u64;
        for round in 0..100_000u64 {
            let (id, _, slot) = f.first(&t).unwrap();
            f.remove_at(&mut t, id, slot);
            f.insert(&mut t, id, d, round);
            d += 10;
        }
        let live_leaves = f.leaves.len() - f.free_leaves.len();
        assert!(
            live_leaves <= 300 / (LEAF_CAP / 2) + 3,
            "{live_leaves} leaves"
        );
        assert!(f.leaves.len() < 64, "{} leaves allocated", f.leaves.len());
        walk(&f, t.root, t.height, NONE);
        let order: Vec<u64> = f.iter_rev(&t).map(|e| f.entry(e).unwrap().0).collect();
        assert_eq!(order.len(), 300);
        assert!(order.windows(2).all(|w| w[0] > w[1]), "deadline order");
    }

    /// A yield storm against the model: take out the first eligible entity (or the leftmost)
    /// where the search found it and put it back with its deadline a slice later, mostly past
    /// every other (leaves emptied at the front and filled at the back, the last leaf
    /// compacted), sometimes into the middle.
    fn storm(n: u32, steps: u64, seed: u64) {
        let base = 1u64 << 40;
        let mut f = Forest::default();
        f.reserve_ids(n as usize);
        let mut t = DeadlineTree::EMPTY;
        let mut model = Model {
            base,
            map: BTreeMap::new(),
        };
        let mut at: Vec<(u64, u64)> = Vec::new();
        for id in 0..n {
            let r = splitmix(seed ^ u64::from(id));
            let (d, v) = (base + r % 5_000, base + (r >> 32) % 100);
            f.insert(&mut t, id, d, v);
            model.map.insert(model.key(d, id), v);
            at.push((d, v));
        }
        for step in 0..steps {
            let r = splitmix(seed ^ (step << 20));
            let limit = base + 50 + step / 10 + (r >> 50) % 40;
            let found = if r.is_multiple_of(5) {
                f.first(&t).map(|(e, _, slot)| (e, slot))
            } else {
                f.first_eligible(&t, |v| vdiff(v, limit) <= 0)
            };
            let Some((e, slot)) = found else {
                continue;
            };
            let (d, v) = at[e as usize];
            let after = model.map.range(model.key(d, e)..).nth(1).map(|x| x.0 .1);
            if r.is_multiple_of(2) {
                assert_eq!(f.remove_at(&mut t, e, slot), after, "the follower of {e}");
            } else {
                f.take_at(&mut t, e, slot);
            }
            model.map.remove(&model.key(d, e));
            let slice = if r.is_multiple_of(3) {
                (r >> 8) % 3_000
            } else {
                5_000
            };
            let (d, v) = (d + slice, v + 1 + (r >> 16) % 4);
            f.insert(&mut t, e, d, v);
            model.map.insert(model.key(d, e), v);
            at[e as usize] = (d, v);
            if step % 5 == 0 || n <= 40 {
                check(&f, &t, &model);
            }
        }
        check(&f, &t, &model);
    }

    #[test]
    fn small_storms_match_the_model() {
        storm(20, 20_000, 4);
    }

    #[test]
    fn large_storms_match_the_model() {
        storm(600, 100_000, 5);
    }
}
