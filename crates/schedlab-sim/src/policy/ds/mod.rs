//! The data structures the policies share or build on, each with its own tests: the 2.6
//! priority array (`o1`, `staircase`), EEVDF's augmented tree, the intrusive run list of
//! IBM's multi-queue scheduler, the sorted ring buffer of the priority-list scheduler's lists,
//! and the tournament tree that places new tasks on big machines.

pub(in crate::policy) mod deadline_tree;
pub(in crate::policy) mod intrusive_list;
pub(in crate::policy) mod key_deque;
pub(in crate::policy) mod min_tree;
pub(in crate::policy) mod prio_array;
