//! Tasks that come and go on the real kernel: [`Context::spawn`](schedlab_workload::Context::spawn)
//! starts a new process (fork, then the group's knobs and the workload's body in the child, which
//! ends with `_exit`), or a new thread where the plan's shared objects live in one process
//! ([`Spawner::threads`]); [`Context::wait`](schedlab_workload::Context::wait) reaps it (wait4,
//! whose rusage gives the child's CPU time) or joins it.
//!
//! Nothing is left behind: a forked child dies with its parent (PR_SET_PDEATHSIG), and a task
//! whose body ends — returned, failed or stopped — waits for the children it did not wait for
//! (killing them first when the run is stopping) before its own end ([`Children`]'s drop).
//! Spawn places are counted in a shared anonymous mapping, so that tasks in different processes
//! never take the same place.
//!
//! A spawned task measures itself as a starting task is measured (the runner's `task_main`):
//! getrusage(RUSAGE_THREAD) switches and the thread's CPU clock around its body, and — since it
//! is gone by the time the supervisor reads /proc — its own `/proc/thread-self/sched` migrations
//! (counted from its fork or thread creation) once its body has ended. It leaves the report with
//! its samples in `SpawnReports` before it ends, so that its parent's wait returns only once
//! the report is there; the supervisor collects them after the run and counts them in their
//! groups, with the wakeups the trace saw for their thread ids.

use crate::compute::CumulativeUse;
use crate::report::{comm, TaskReport};
use crate::run_group::RunGroup;
use crate::sys;
use schedlab_workload::knobs::Knobs;
use schedlab_workload::{ChildExit, Plan, TaskRef, WorkloadError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a task needs to start others: each group's knobs, names and spawn places, and where
/// spawned tasks leave their reports.
pub struct Spawner {
    knobs: Vec<Knobs>,
    names: Vec<&'static str>,
    /// Per group, (first spawn id, group's starting tasks, places).
    places: Vec<(usize, usize, usize)>,
    /// Per group, places used so far (in a MAP_SHARED page, seen by every process).
    used: SharedCounters,
    /// Host spawned tasks as threads (the plan's locks, barriers, semaphores, conditions or
    /// TCP write locks live in this process and a forked child could not share them).
    pub threads: bool,
    /// Where spawned tasks leave their reports.
    reports: SpawnReports,
    /// The process group forked tasks join (none when they are threads).
    group: Option<Arc<RunGroup>>,
}

impl Spawner {
    /// A spawner for `plan`'s spawn places, or `None` if the plan spawns nothing. Forked tasks
    /// leave their reports in `report_dir` (made here).
    pub fn new(
        plan: &Plan,
        knobs: &[Knobs],
        report_dir: &Path,
    ) -> std::io::Result<Option<Spawner>> {
        if plan.total_spawn() == 0 {
            return Ok(None);
        }
        let mut places = Vec::with_capacity(plan.groups.len());
        let mut id = plan.total_tasks();
        for g in &plan.groups {
            places.push((id, g.tasks, g.spawn));
            id += g.spawn;
        }
        let threads = plan.spawns_threads();
        Ok(Some(Spawner {
            knobs: knobs.to_vec(),
            names: plan.groups.iter().map(|g| g.name).collect(),
            used: SharedCounters::new(plan.groups.len())?,
            places,
            threads,
            reports: SpawnReports::new(plan.total_tasks(), plan.total_spawn(), report_dir)?,
            group: if threads {
                None
            } else {
                Some(Arc::new(RunGroup::new()?))
            },
        }))
    }

    /// The process group of the forked tasks, which the run ends before it returns.
    pub(crate) fn group(&self) -> Option<Arc<RunGroup>> {
        self.group.clone()
    }

    /// The plan group of spawn place `id`, if it is one.
    pub(crate) fn group_of(&self, id: usize) -> Option<usize> {
        (self.places.iter()).position(|&(first, _, places)| (first..first + places).contains(&id))
    }

    /// Every report spawned tasks left so far (each once), by task id.
    pub(crate) fn take_reports(&self) -> Result<Vec<TaskReport>, SpawnReportError> {
        self.reports.take()
    }

    /// The knobs of group `group`'s tasks.
    pub(crate) fn knobs(&self, group: usize) -> &Knobs {
        &self.knobs[group]
    }

    /// The thread name (comm) of spawned task `task`.
    pub(crate) fn comm(&self, task: TaskRef) -> String {
        comm(self.names[task.group], task.index)
    }

    /// Leave a spawned task's report (see [`SpawnReports`]); `thread`: it ran as a thread of
    /// this process.
    pub(crate) fn leave_report(&self, report: TaskReport, thread: bool) -> std::io::Result<()> {
        self.reports.leave(report, thread)
    }

    /// Take group `group`'s next spawn place.
    pub(crate) fn take_place(&self, group: usize) -> Result<TaskRef, WorkloadError> {
        let Some(&(first, tasks, places)) = self.places.get(group) else {
            return Err(WorkloadError::Backend(format!(
                "spawn into group {group}: the plan has {} groups",
                self.places.len()
            )));
        };
        let k = self.used.take(group);
        if k >= places {
            return Err(WorkloadError::Backend(format!(
                "group '{}' cannot spawn another task: the plan gives it {places} spawn places and they are used",
                self.names[group]
            )));
        }
        Ok(TaskRef {
            id: first + k,
            group,
            index: tasks + k,
        })
    }
}

/// Counters in a shared anonymous mapping (inherited by forked processes).
struct SharedCounters {
    words: sys::SharedAtomics<AtomicUsize>,
}

impl SharedCounters {
    fn new(len: usize) -> std::io::Result<SharedCounters> {
        Ok(SharedCounters {
            words: sys::SharedAtomics::new(len)?,
        })
    }

    fn len(&self) -> usize {
        self.words.len()
    }

    fn get(&self, i: usize) -> usize {
        self.words[i].load(Ordering::SeqCst)
    }

    fn set(&self, i: usize, v: usize) {
        self.words[i].store(v, Ordering::SeqCst)
    }

    fn take(&self, i: usize) -> usize {
        self.words[i].fetch_add(1, Ordering::SeqCst)
    }
}

/// Why the spawned tasks' reports could not be taken; each names the file or the task.
#[derive(Debug, thiserror::Error)]
pub enum SpawnReportError {
    /// The run's directory of samples files cannot be listed.
    #[error("reading {}: {source}", dir.display())]
    List {
        /// The directory.
        dir: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A file whose name is no task id.
    #[error("{}: not a spawned task's samples", path.display())]
    NotNamed {
        /// The file.
        path: PathBuf,
    },
    /// A samples file that cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A samples file that does not parse.
    #[error("{}: not a spawned task's samples: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the JSON reader said.
        source: serde_json::Error,
    },
    /// Samples of a task that left no counters in its slot.
    #[error("samples of task {id}, which left no counters")]
    NoCounters {
        /// The task id.
        id: usize,
    },
}

/// The reports of spawned tasks, one per spawn place (bounded). The counters go into a slot of
/// a shared anonymous mapping (seen by every process; the slot's `done` word is written last).
/// Samples, which few spawned bodies record, go to memory from a thread child and to
/// `<task id>.json` in a directory of the run's own from a forked one (written under another name
/// and renamed, so that a file is whole or absent). Creating a file per job cost about 1 ms of
/// kernel time each on this VM's ext4 /tmp (the inode allocator's `recently_deleted` scan), so
/// a job that recorded nothing creates none.
struct SpawnReports {
    /// `SLOT` words per place: done, pid, tid, cpu_ns, finished_ns, voluntary, involuntary,
    /// migrations + 1 (0: unknown), and its cumulative computes' count (0: it ran none), sum
    /// (ns) and computes found past their sum.
    slots: SharedCounters,
    /// The first spawn place's task id.
    first: usize,
    threads: parking_lot::Mutex<Vec<(usize, Samples)>>,
    dir: PathBuf,
}

/// A task's recorded samples, by metric.
type Samples = BTreeMap<String, Vec<f64>>;

/// Words per report slot.
const SLOT: usize = 11;

impl SpawnReports {
    fn new(first: usize, places: usize, dir: &Path) -> std::io::Result<SpawnReports> {
        std::fs::create_dir_all(dir)?;
        Ok(SpawnReports {
            slots: SharedCounters::new(places * SLOT)?,
            first,
            threads: parking_lot::Mutex::new(Vec::new()),
            dir: dir.to_path_buf(),
        })
    }

    /// Leave a spawned task's report: its counters in its slot, its samples (if any) in
    /// memory (`thread`) or in a file.
    fn leave(&self, report: TaskReport, thread: bool) -> std::io::Result<()> {
        let Some(place) = report.id.checked_sub(self.first) else {
            return Err(std::io::Error::other(format!(
                "task {} is no spawn place",
                report.id
            )));
        };
        if (place + 1) * SLOT > self.slots.len() {
            return Err(std::io::Error::other(format!(
                "task {} is no spawn place",
                report.id
            )));
        }
        let words = [
            report.pid as u32 as usize,
            report.tid as u32 as usize,
            report.cpu_ns as usize,
            report.finished_ns as usize,
            report.voluntary as usize,
            report.involuntary as usize,
            report.migrations.map_or(0, |m| m as usize + 1),
            report.cumulative.map_or(0, |c| c.computes as usize),
            report.cumulative.map_or(0, |c| c.sum_ns as usize),
            report.cumulative.map_or(0, |c| c.past as usize),
        ];
        for (k, w) in words.into_iter().enumerate() {
            self.slots.set(place * SLOT + 1 + k, w);
        }
        self.slots.set(place * SLOT, 1);
        if report.samples.is_empty() {
            return Ok(());
        }
        if thread {
            self.threads.lock().push((report.id, report.samples));
            return Ok(());
        }
        let json = serde_json::to_vec(&report.samples).map_err(std::io::Error::other)?;
        let part = self.dir.join(format!("{}.part", report.id));
        std::fs::write(&part, json)?;
        std::fs::rename(&part, self.dir.join(format!("{}.json", report.id)))
    }

    /// Take every report left so far, by task id.
    fn take(&self) -> Result<Vec<TaskReport>, SpawnReportError> {
        let mut samples: BTreeMap<usize, Samples> = std::mem::take(&mut *self.threads.lock())
            .into_iter()
            .collect();
        let list = |source| SpawnReportError::List {
            dir: self.dir.clone(),
            source,
        };
        for entry in std::fs::read_dir(&self.dir).map_err(list)? {
            let path = entry.map_err(list)?.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let Some(id) =
                (path.file_stem().and_then(|s| s.to_str())).and_then(|s| s.parse::<usize>().ok())
            else {
                return Err(SpawnReportError::NotNamed { path });
            };
            let text = match std::fs::read(&path) {
                Ok(text) => text,
                Err(source) => return Err(SpawnReportError::Read { path, source }),
            };
            let recorded = match serde_json::from_slice(&text) {
                Ok(r) => r,
                Err(source) => return Err(SpawnReportError::Parse { path, source }),
            };
            let _ = std::fs::remove_file(&path);
            samples.insert(id, recorded);
        }
        let mut out = Vec::new();
        for place in 0..self.slots.len() / SLOT {
            let word = |k: usize| self.slots.get(place * SLOT + k);
            if word(0) == 0 {
                continue;
            }
            self.slots.set(place * SLOT, 0);
            let id = self.first + place;
            out.push(TaskReport {
                id,
                pid: word(1) as u32 as i32,
                tid: word(2) as u32 as i32,
                error: None,
                samples: samples.remove(&id).unwrap_or_default(),
                cpu_ns: word(3) as u64,
                finished_ns: word(4) as u64,
                voluntary: word(5) as u64,
                involuntary: word(6) as u64,
                migrations: word(7).checked_sub(1).map(|m| m as u64),
                passes: Default::default(),
                // Not kept in the shared slots: the observed settings are a starting task's.
                timer_slack_ns: None,
                cumulative: (word(8) > 0).then(|| CumulativeUse {
                    computes: word(8) as u64,
                    sum_ns: word(9) as u64,
                    past: word(10) as u64,
                }),
            });
        }
        if let Some(&id) = samples.keys().next() {
            return Err(SpawnReportError::NoCounters { id });
        }
        Ok(out)
    }
}

/// A task a task spawned and has not waited for yet.
enum Child {
    Process {
        task: TaskRef,
        pid: i32,
        /// A pidfd of it (readable once it has ended), for waiting for any child.
        pidfd: i32,
    },
    Thread {
        task: TaskRef,
        handle: std::thread::JoinHandle<Result<Duration, ChildError>>,
    },
}

impl Child {
    fn task(&self) -> TaskRef {
        match self {
            Child::Process { task, .. } | Child::Thread { task, .. } => *task,
        }
    }
}

/// What a thread child sends when it ends: its task id (its result is in its join handle).
type ThreadEnd = usize;

/// Why waiting for a spawned task failed, or how it ended if it did not end well.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// The channel thread children report their end on broke.
    #[error("waiting for a thread child: {0}")]
    ThreadChannel(std::sync::mpsc::RecvError),
    /// poll(2) on the children's pidfds failed.
    #[error("waiting for a child process: {0}")]
    Poll(std::io::Error),
    /// poll(2) returned without any child's pidfd being readable.
    #[error("poll returned without a ready child")]
    NoneReady,
    /// wait4(2) for process `pid` failed.
    #[error("waiting for process {pid}: {source}")]
    Wait {
        /// The child's process id.
        pid: i32,
        /// The system's error.
        source: std::io::Error,
    },
    /// The child process exited with a status other than 0.
    #[error("process {pid} exited with status {status}")]
    Exited {
        /// The child's process id.
        pid: i32,
        /// Its exit status.
        status: i32,
    },
    /// The child process was killed by a signal.
    #[error("process {pid} was killed by signal {signal}")]
    Killed {
        /// The child's process id.
        pid: i32,
        /// The signal's number.
        signal: i32,
    },
    /// The child thread panicked.
    #[error("its thread panicked")]
    Panicked,
    /// The child thread's life failed (its knobs, its body or its report), as it says.
    #[error("{0}")]
    Thread(Box<dyn std::error::Error + Send + Sync>),
}

/// The children of one task; dropping it reaps them all.
pub struct Children {
    list: Vec<Child>,
    /// Whether the run is stopping: children are killed before they are reaped.
    stopping: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Thread children report their end here (for waiting for any of them).
    ended_tx: std::sync::mpsc::Sender<ThreadEnd>,
    ended_rx: std::sync::mpsc::Receiver<ThreadEnd>,
}

impl Children {
    /// Children reaped on drop; killed first once `stop` is set.
    pub fn new(stop: Arc<std::sync::atomic::AtomicBool>) -> Children {
        let (ended_tx, ended_rx) = std::sync::mpsc::channel();
        Children {
            list: Vec::new(),
            stopping: Some(stop),
            ended_tx,
            ended_rx,
        }
    }

    /// Take the child of task `id` off the list.
    fn remove(&mut self, id: usize) -> Option<Child> {
        let pos = self.list.iter().position(|c| c.task().id == id)?;
        Some(self.list.remove(pos))
    }

    /// The task id of a child that has ended, blocking until one has: a thread's report, or
    /// a process whose pidfd became readable.
    fn next_ended(&mut self) -> Result<usize, ChildError> {
        let threads = self.list.iter().any(|c| matches!(c, Child::Thread { .. }));
        if threads {
            loop {
                let id = self.ended_rx.recv().map_err(ChildError::ThreadChannel)?;
                // A child waited for by name reported too: skip it.
                if self.list.iter().any(|c| c.task().id == id) {
                    return Ok(id);
                }
            }
        }
        let mut fds: Vec<libc::pollfd> = (self.list.iter())
            .map(|c| match c {
                Child::Process { pidfd, .. } => libc::pollfd {
                    fd: *pidfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                Child::Thread { .. } => unreachable!("no thread children here"),
            })
            .collect();
        loop {
            if let Err(e) = sys::poll(&mut fds, -1) {
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(ChildError::Poll(e));
            }
            let i = fds
                .iter()
                .position(|f| f.revents != 0)
                .ok_or(ChildError::NoneReady)?;
            return Ok(self.list[i].task().id);
        }
    }

    fn stopping(&self) -> bool {
        self.stopping
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        let kill = self.stopping() || std::thread::panicking();
        for child in self.list.drain(..) {
            match child {
                Child::Process { pid, pidfd, .. } => {
                    if kill {
                        // Through its pidfd: if the run's end already reaped it, its pid may
                        // name another process by now.
                        let _ = sys::pidfd_kill(pidfd, libc::SIGKILL);
                    }
                    let _ = reap(pid, pidfd);
                }
                Child::Thread { handle, .. } => {
                    let _ = handle.join();
                }
            }
        }
    }
}

/// Wait for process `pid` (and close its pidfd): its CPU time, or how it ended if not with
/// status 0.
fn reap(pid: i32, pidfd: i32) -> Result<Duration, ChildError> {
    sys::close(pidfd);
    let (status, cpu) = sys::wait4(pid).map_err(|source| ChildError::Wait { pid, source })?;
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(cpu)
    } else if libc::WIFEXITED(status) {
        Err(ChildError::Exited {
            pid,
            status: libc::WEXITSTATUS(status),
        })
    } else {
        Err(ChildError::Killed {
            pid,
            signal: libc::WTERMSIG(status),
        })
    }
}

impl Children {
    /// Start `life` on a new thread named `name` (its comm too) as child task `task`; what it
    /// returns is what waiting for it gives.
    pub(crate) fn start_thread<E: std::error::Error + Send + Sync + 'static>(
        &mut self,
        task: TaskRef,
        name: &str,
        life: impl FnOnce() -> Result<Duration, E> + Send + 'static,
    ) -> Result<(), WorkloadError> {
        let ended = self.ended_tx.clone();
        let thread_name = name.to_string();
        let handle = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                sys::set_thread_name(&thread_name);
                let result = life().map_err(|e| ChildError::Thread(Box::new(e)));
                let _ = ended.send(task.id);
                result
            })
            .map_err(|e| WorkloadError::Backend(format!("spawning {name}: {e}")))?;
        self.list.push(Child::Thread { task, handle });
        Ok(())
    }

    /// Fork a process named `name` as child task `task`: it dies with this process, joins
    /// `group` (and leaves at once if the run is ending), runs `life` and exits with the code it
    /// returns, running no destructor of this process.
    pub(crate) fn start_process(
        &mut self,
        task: TaskRef,
        name: &str,
        group: Option<&RunGroup>,
        life: impl FnOnce() -> i32,
    ) -> Result<(), WorkloadError> {
        let parent = std::process::id() as i32;
        // SAFETY: the child runs only the body and leaves with _exit. When this process has
        // other threads, no lock the body needs can be held by them (the spawner hosts children
        // as threads when the plan has locks or shared objects), and glibc keeps malloc usable
        // after fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(WorkloadError::Backend(format!(
                "cannot fork {name}: {}",
                std::io::Error::last_os_error()
            )));
        }
        if pid == 0 {
            sys::die_with_parent(parent, libc::SIGKILL);
            if group.is_some_and(|g| !g.join_self()) {
                // The run is ending: this task would outlive it.
                sys::exit_now(3);
            }
            sys::set_thread_name(name);
            // Without running this process's destructors or atexit handlers.
            sys::exit_now(life());
        }
        if let Some(g) = group {
            g.join_child(pid);
        }
        // Our own child, which cannot be reaped before we wait for it.
        let pidfd = match sys::pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) => {
                // Ending and reaping the child just forked.
                let _ = sys::kill(pid, libc::SIGKILL);
                let _ = reap(pid, -1);
                return Err(WorkloadError::Backend(format!(
                    "pidfd_open for {name}: {e} (Linux 5.3 or later is needed to spawn processes)"
                )));
            }
        };
        self.list.push(Child::Process { task, pid, pidfd });
        Ok(())
    }

    /// Take child `child` off the list (`None`: the first to end, blocking until one has).
    pub(crate) fn take(&mut self, child: Option<TaskRef>) -> Result<Ended, WorkloadError> {
        let id = match child {
            Some(c) => Some(c.id),
            None if self.list.is_empty() => None,
            None => Some(
                self.next_ended()
                    .map_err(|e| WorkloadError::Backend(e.to_string()))?,
            ),
        };
        match id.and_then(|id| self.remove(id)) {
            Some(found) => Ok(Ended(found)),
            None => Err(WorkloadError::Backend(match child {
                Some(c) => format!("task {} is not a child of this task left to wait for", c.id),
                None => "this task has no child left to wait for".into(),
            })),
        }
    }
}

/// A child taken off its parent's list, to be reaped or joined.
pub(crate) struct Ended(Child);

impl Ended {
    /// `wait` on the real kernel: reap or join the child; its task and CPU time.
    pub(crate) fn wait(self) -> Result<ChildExit, WorkloadError> {
        let task = self.0.task();
        let what = |e: ChildError| {
            WorkloadError::Backend(format!("spawned task {} ({}): {e}", task.index, task.group))
        };
        let cpu = match self.0 {
            Child::Process { pid, pidfd, .. } => reap(pid, pidfd).map_err(what)?,
            Child::Thread { handle, .. } => match handle.join() {
                Ok(r) => r.map_err(what)?,
                Err(_) => return Err(what(ChildError::Panicked)),
            },
        };
        Ok(ChildExit { task, cpu })
    }
}
