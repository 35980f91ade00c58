//! What a workload asks a backend to build: task groups, channels, locks, and how tasks are
//! hosted (threads or processes) and connected (pipe, socketpair, unix, tcp, udp).

use crate::error::ValueError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How the real backend hosts tasks. The simulator charges a switch between tasks of different
/// processes its cost model's `mm_switch` ([`Plan::address_space`]); otherwise a task is a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskMode {
    /// Each task is an OS thread of the schedlab process.
    Threads,
    /// Each task is a forked process.
    Processes,
    /// Each task group is a forked process with a thread per task (a chat server and client,
    /// like the originals' two JVMs or programs).
    GroupProcesses,
}

impl fmt::Display for TaskMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TaskMode::Threads => "threads",
            TaskMode::Processes => "processes",
            TaskMode::GroupProcesses => "group-processes",
        })
    }
}

impl FromStr for TaskMode {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s {
            "threads" => Ok(TaskMode::Threads),
            "processes" => Ok(TaskMode::Processes),
            "group-processes" => Ok(TaskMode::GroupProcesses),
            _ => Err(ValueError(format!(
                "tasks '{s}' is not accepted; use threads, processes or group-processes"
            ))),
        }
    }
}

/// How a channel is carried on the real backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// An anonymous pipe per channel.
    Pipe,
    /// A UNIX-domain socketpair per channel (hackbench's default).
    Socketpair,
    /// A UNIX-domain stream socket connected through a listening socket in a temp directory.
    Unix,
    /// A TCP connection over loopback with TCP_NODELAY.
    Tcp,
    /// A connected UDP socket pair over loopback (one datagram per message).
    Udp,
}

impl Transport {
    /// Every transport, for help texts.
    pub const ALL: [Transport; 5] = [
        Transport::Pipe,
        Transport::Socketpair,
        Transport::Unix,
        Transport::Tcp,
        Transport::Udp,
    ];
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transport::Pipe => "pipe",
            Transport::Socketpair => "socketpair",
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
        })
    }
}

impl FromStr for Transport {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        Transport::ALL
            .into_iter()
            .find(|t| t.to_string() == s)
            .ok_or_else(|| {
                ValueError(format!(
                    "transport '{s}' is not accepted; use pipe, socketpair, unix, tcp or udp"
                ))
            })
    }
}

/// One task group of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPlan {
    /// The group's name, used in `--group NAME:...`.
    pub name: &'static str,
    /// How many tasks the group has when the run starts.
    pub tasks: usize,
    /// How many more tasks may be started into the group during the run
    /// ([`crate::Context::spawn`]); a bound, so that every count is. 0 for a group of fixed
    /// size.
    pub spawn: usize,
}

impl GroupPlan {
    /// A group of `tasks` tasks that spawns none.
    pub fn fixed(name: &'static str, tasks: usize) -> GroupPlan {
        GroupPlan {
            name,
            tasks,
            spawn: 0,
        }
    }
}

/// Everything a backend must build before releasing the tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Task groups in order; task ids are assigned group by group.
    pub groups: Vec<GroupPlan>,
    /// Number of channels ([`crate::ChannelId`] 0..channels).
    pub channels: usize,
    /// Whether channels `2k` and `2k + 1` are the two directions of one connection (a chat
    /// user's socket); otherwise every channel is carried on its own.
    pub duplex: bool,
    /// Number of locks ([`crate::LockId`] 0..locks).
    pub locks: usize,
    /// Barriers, semaphores and condition variables.
    pub sync: SyncPlan,
    /// Threads or processes.
    pub mode: TaskMode,
    /// How channels are carried.
    pub transport: Transport,
}

/// The most any one channel of a plan carries in a whole run: how many messages, and their bytes
/// ([`crate::Workload::channel_volume`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelVolume {
    /// Messages written to the channel, at most.
    pub messages: u64,
    /// Their bytes, at most.
    pub bytes: u64,
}

/// The synchronisation objects of a plan besides its locks: barriers, semaphores, condition
/// variables (workload files and rt-app's events use them) and in-process message queues (chat's
/// VolanoChat server uses them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncPlan {
    /// Per barrier ([`crate::BarrierId`] 0..), how many tasks it waits for.
    pub barriers: Vec<usize>,
    /// Per semaphore ([`crate::SemaphoreId`] 0..), its initial count.
    pub semaphores: Vec<u32>,
    /// Number of condition variables ([`crate::CondId`] 0..conds).
    pub conds: usize,
    /// Number of in-process message queues: channels `Plan::channels ..` after the plan's own,
    /// written and read like them but carried by a pipe whatever the plan's transport (a queue
    /// between the threads of one program: a pipe's write and read stand for the append under
    /// the queue's lock and the take, and a reader that finds it empty sleeps until a writer
    /// appends, as on a condition variable). Pipes work between processes too, so queues need
    /// no particular hosting.
    pub queues: usize,
    /// Number of shared 64-bit words ([`crate::WordId`] 0..words): memory every task of the
    /// run reads and writes in place ([`crate::Context::store_word`]), 0 at the start. They
    /// live in the schedlab process, as the semaphores do, so they need tasks run as threads.
    pub words: usize,
    /// Per lock ([`crate::LockId`] 0..), its kind; a lock past the end of this list sleeps
    /// (every plan before spin locks existed).
    pub lock_kinds: Vec<LockKind>,
    /// Per lock, its name for the lock table (`schedlab run --locks`); a lock past the end is
    /// called `lock[N]`.
    pub lock_names: Vec<String>,
    /// When every task of the run stops (epoch-relative; rt-app's global `duration`): a wait on
    /// a barrier, semaphore or condition variable still blocked then ends with
    /// [`crate::WorkloadError::Stopped`] (a `cond_wait` leaving its lock released), and so does
    /// one that would block later — so that no task waits for a peer that has stopped. `None`:
    /// waits end only when they are satisfied.
    pub wait_end: Option<std::time::Duration>,
}

/// How a task waits for a lock another task holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LockKind {
    /// The waiter sleeps until the holder releases the lock (a futex mutex).
    #[default]
    Sleep,
    /// The waiter stays on its CPU and spins, burning CPU time, until it gets the lock.
    Spin,
}

impl LockKind {
    /// The name used in workload files and records: `sleep` or `spin`.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Sleep => "sleep",
            LockKind::Spin => "spin",
        }
    }
}

impl FromStr for LockKind {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sleep" => Ok(LockKind::Sleep),
            "spin" => Ok(LockKind::Spin),
            _ => Err(ValueError::new(format!(
                "lock kind '{s}' is not known; use sleep or spin"
            ))),
        }
    }
}

impl SyncPlan {
    /// Whether the plan has no barrier, semaphore, condition variable or shared word (queues
    /// aside).
    pub fn is_empty(&self) -> bool {
        self.barriers.is_empty() && self.semaphores.is_empty() && self.conds == 0 && self.words == 0
    }
}

impl Plan {
    /// The kind of lock `id` ([`LockKind::Sleep`] unless the plan says otherwise).
    pub fn lock_kind(&self, id: usize) -> LockKind {
        self.sync.lock_kinds.get(id).copied().unwrap_or_default()
    }

    /// The name of lock `id` for the lock table: the plan's, or `lock[id]`.
    pub fn lock_name(&self, id: usize) -> String {
        match self.sync.lock_names.get(id) {
            Some(n) => n.clone(),
            None => format!("lock[{id}]"),
        }
    }

    /// Channels and in-process queues together: the [`crate::ChannelId`]s a body may use.
    pub fn all_channels(&self) -> usize {
        self.channels + self.sync.queues
    }

    /// Total number of tasks.
    pub fn total_tasks(&self) -> usize {
        self.groups.iter().map(|g| g.tasks).sum()
    }

    /// How many tasks all groups may spawn during the run.
    pub fn total_spawn(&self) -> usize {
        self.groups.iter().map(|g| g.spawn).sum()
    }

    /// The places of the tasks the groups may spawn, group by group: ids after every starting
    /// task's ([`Plan::total_tasks`]..), and in its group, indices after its starting tasks'.
    /// A backend gives the `k`-th task a group spawns its `k`-th place.
    pub fn spawn_slots(&self) -> Vec<TaskRef> {
        let mut id = self.total_tasks();
        let mut out = Vec::with_capacity(self.total_spawn());
        for (g, group) in self.groups.iter().enumerate() {
            for k in 0..group.spawn {
                out.push(TaskRef {
                    id,
                    group: g,
                    index: group.tasks + k,
                });
                id += 1;
            }
        }
        out
    }

    /// Every task of the plan that starts with the run, group by group.
    pub fn tasks(&self) -> Vec<TaskRef> {
        let mut out = Vec::with_capacity(self.total_tasks());
        for (g, group) in self.groups.iter().enumerate() {
            for index in 0..group.tasks {
                out.push(TaskRef {
                    id: out.len(),
                    group: g,
                    index,
                });
            }
        }
        out
    }

    /// The index of the group named `name`.
    pub fn group_index(&self, name: &str) -> Option<usize> {
        self.groups.iter().position(|g| g.name == name)
    }

    /// Whether the real backend starts a spawned task as a thread of its parent's process
    /// rather than as a forked process: with `threads`, when the plan's locks, barriers,
    /// semaphores, conditions or TCP write locks live in one process and a forked child could
    /// not share them.
    pub fn spawns_threads(&self) -> bool {
        self.mode == TaskMode::Threads
            && (self.locks > 0 || !self.sync.is_empty() || self.transport == Transport::Tcp)
    }

    /// The address space (process) `task` runs in on the real backend, as a number that two
    /// tasks share exactly when they are threads of one process: 0 is the process that starts
    /// the run (every task with `threads`, and a spawned thread); with `group-processes` a
    /// group's tasks share one; with `processes` each task has its own, as each forked task
    /// has.
    pub fn address_space(&self, task: TaskRef) -> usize {
        let own = 1 + self.groups.len() + task.id;
        if task.id >= self.total_tasks() {
            return if self.spawns_threads() { 0 } else { own };
        }
        match self.mode {
            TaskMode::Threads => 0,
            TaskMode::GroupProcesses => 1 + task.group,
            TaskMode::Processes => own,
        }
    }
}

/// Which task a body is running as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskRef {
    /// Global task id, 0..plan.total_tasks().
    pub id: usize,
    /// Index of the task's group in the plan.
    pub group: usize,
    /// Index of the task within its group.
    pub index: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(mode: TaskMode, locks: usize) -> Plan {
        Plan {
            groups: vec![
                GroupPlan {
                    name: "a",
                    tasks: 2,
                    spawn: 1,
                },
                GroupPlan::fixed("b", 2),
            ],
            channels: 1,
            duplex: false,
            locks,
            sync: SyncPlan::default(),
            mode,
            transport: Transport::Pipe,
        }
    }

    /// Threads share the starting process; group processes one per group; processes one each,
    /// and a spawned task its own unless the plan's shared objects keep it a thread.
    #[test]
    fn tasks_share_an_address_space_exactly_when_they_are_threads_of_one_process() {
        let spaces = |p: &Plan| -> Vec<usize> {
            (p.tasks().into_iter().chain(p.spawn_slots()))
                .map(|t| p.address_space(t))
                .collect()
        };
        // Ids: a0 a1 b0 b1, then a's spawn place (4).
        assert_eq!(spaces(&plan(TaskMode::Threads, 0)), [0, 0, 0, 0, 7]);
        assert_eq!(spaces(&plan(TaskMode::Threads, 1)), [0, 0, 0, 0, 0]);
        assert_eq!(spaces(&plan(TaskMode::GroupProcesses, 1)), [1, 1, 2, 2, 7]);
        assert_eq!(spaces(&plan(TaskMode::Processes, 0)), [3, 4, 5, 6, 7]);
        assert!(plan(TaskMode::Threads, 1).spawns_threads());
        assert!(!plan(TaskMode::Processes, 1).spawns_threads());
    }
}
