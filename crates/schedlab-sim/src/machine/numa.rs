//! Memory placement on a machine with sockets (`--topology` with more than one socket, each a
//! NUMA node): a task's memory lives on the node of the CPU where it first computes — Linux's
//! default first-touch policy (`MPOL_DEFAULT`: a page is allocated on the node of the CPU that
//! faults it in, mm/mempolicy.c) — and a compute that starts on another node's CPU takes the
//! profile's `remote_pct` of its length, its loads and stores crossing the interconnect. The
//! machine counts each task's compute time and the part of it run off its node (the record's
//! `compute_s` and `remote_compute_s`).
//!
//! Left out: a compute is placed once, where it starts (a migration in its middle does not
//! change its cost); the memory never moves (no `task_numa_fault` scanning, NUMA hinting
//! faults, preferred node or page migration: automatic NUMA balancing is not modelled, so the
//! scheduler does not pull a task back towards its memory); shared memory has no node of its
//! own (each task's computes are judged by its own first touch); interleave and bind policies.

use super::Machine;
use crate::policy::{CpuId, TaskId};

/// A task's memory node and compute time.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TaskNuma {
    /// The node of its first compute (`None` before it, or on a machine of one node).
    pub(super) home: Option<usize>,
    /// CPU time of its computes, ns (with the remote cost).
    pub(super) compute_ns: u64,
    /// Of that, computes run off its node, ns.
    pub(super) remote_ns: u64,
}

impl Machine<'_> {
    /// The length of a compute of `ns` that task `t` starts on `cpu`: `ns` on its memory's
    /// node, `remote_pct` of it elsewhere; a first compute places the memory. A machine of one
    /// socket (flat included) keeps `ns` and counts nothing.
    pub(super) fn numa_compute(&mut self, t: TaskId, cpu: CpuId, ns: u64) -> u64 {
        if self.costs.topology.sockets <= 1 {
            return ns;
        }
        let node = self.costs.topology.socket_of(cpu);
        let numa = &mut self.tasks[t].numa;
        let home = *numa.home.get_or_insert(node);
        let cost = if home == node {
            ns
        } else {
            (ns.saturating_mul(self.costs.model.remote_pct) / 100)
                .min(crate::cost::MAX_COST_NS.max(ns))
        };
        numa.compute_ns += cost;
        if home != node {
            numa.remote_ns += cost;
        }
        cost
    }
}
