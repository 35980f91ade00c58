//! The data structures the policies share or build on, each with its own tests: the 2.6
//! priority array (`o1`, `staircase`), EEVDF's augmented tree, the intrusive run list of
//! IBM's multi-queue scheduler, the sorted ring buffer of the priority-list scheduler's lists,
//! and the tournament tree that places new tasks on big machines.

pub(in crate::policy) mod deadline_tree;
pub(in crate::policy) mod intrusive_list;
pub(in crate::policy) mod key_deque;
pub(in crate::policy) mod min_tree;
pub(in crate::policy) mod prio_array;

use super::TaskId;
use std::collections::VecDeque;

/// Remove task `t` from run list `q`; false if it is not there. A pick takes the head, which
/// needs no search and no shifting, so that case comes first.
#[inline]
pub(in crate::policy) fn remove_from_list(q: &mut VecDeque<TaskId>, t: TaskId) -> bool {
    if q.front() == Some(&t) {
        q.pop_front();
        return true;
    }
    let Some(i) = q.iter().position(|&x| x == t) else {
        return false;
    };
    q.remove(i);
    true
}
