//! The context a task body runs against: the only way a body touches time, CPUs, channels, locks,
//! I/O and memory. Each backend implements it once.

use crate::plan::TaskRef;
use std::future::Future;
use std::time::Duration;

/// A directed message channel of the workload's plan (many writers, one reader).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelId(pub usize);

/// A lock shared by the tasks of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockId(pub usize);

/// A barrier of the workload's plan: a task that reaches it waits until all its parties have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BarrierId(pub usize);

/// A counting semaphore of the workload's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SemaphoreId(pub usize);

/// A condition variable of the workload's plan, always used with one of the plan's locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CondId(pub usize);

/// A shared 64-bit word of the workload's plan ([`crate::plan::SyncPlan::words`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WordId(pub usize);

/// The machine's CPU time so far, all CPUs together, as [`Context::cpu_times`] reports it: the
/// difference of two readings says how busy the machine was between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// All the CPUs' time (each CPU's elapsed time, added up).
    pub total: Duration,
    /// The part of it the CPUs were idle.
    pub idle: Duration,
}

impl CpuTimes {
    /// The share of the CPUs' time from `earlier` to `self` that was not idle, in percent
    /// (0 when no CPU time passed).
    pub fn busy_percent_since(&self, earlier: &CpuTimes) -> f64 {
        let total = self.total.saturating_sub(earlier.total).as_secs_f64();
        let idle = self.idle.saturating_sub(earlier.idle).as_secs_f64();
        if total <= 0.0 {
            return 0.0;
        }
        (100.0 - idle / total * 100.0).clamp(0.0, 100.0)
    }
}

/// How the busy loop of [`Context::compute_loops`] learns its nanoseconds per loop
/// ([`crate::Workload::loop_calibration`]), as rt-app's `calibration` says: measured on one CPU
/// when the run starts (`"CPU<n>"`, rt-app's default `CPU0`), or given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopCalibration {
    /// Measure it on this CPU before the tasks start, as rt-app measures its `pLoad`.
    Measure {
        /// The CPU to measure on.
        cpu: usize,
    },
    /// This many nanoseconds per loop, whatever the loop takes here.
    Given {
        /// Nanoseconds per loop (at least 1).
        ns_per_loop: u64,
    },
}

impl std::fmt::Display for LoopCalibration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoopCalibration::Measure { cpu } => write!(f, "CPU{cpu}"),
            LoopCalibration::Given { ns_per_loop } => write!(f, "{ns_per_loop} ns per loop"),
        }
    }
}

/// A spawned task that ended, as [`Context::wait`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildExit {
    /// Which task it was.
    pub task: TaskRef,
    /// The CPU time it used (with its own waited-for children's, on the real kernel).
    pub cpu: Duration,
}

/// A program to run to its end as this task's own child ([`Context::run_program`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// The program (looked up in `PATH`) and its arguments.
    pub argv: Vec<String>,
    /// Its working directory, relative to the run's temporary directory.
    pub dir: String,
    /// The file its standard output and error go to, relative to the run's temporary directory.
    pub output: String,
}

/// How a [`Program`] ended: it exited with status 0 (any other end is an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramExit {
    /// From its start to its end.
    pub wall: Duration,
    /// The CPU time (user + system) of the program and of every descendant it waited for
    /// (wait4's rusage, which is the child's own plus its `RUSAGE_CHILDREN`).
    pub cpu: Duration,
}

/// A server program a task starts and later stops ([`Context::start_daemon`]): nginx or
/// Apache serving the run's files on 127.0.0.1. In `argv` and in every configuration file's
/// text, `@DIR@` stands for the run's temporary directory (absolute), `@FILES@` for the directory
/// of the workload's files ([`crate::Workload::shared_files`]; `@DIR@` when they are written
/// every repetition) and `@PORT@` for the port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Daemon {
    /// The program (looked up in `PATH`) and its arguments.
    pub argv: Vec<String>,
    /// Files written before it starts: (path relative to the run's temporary directory, text).
    pub config: Vec<(String, String)>,
    /// The TCP port on 127.0.0.1 it listens on; 0: a free one the backend picks.
    pub port: u16,
    /// Its error log (relative to the run's temporary directory), whose tail an error quotes.
    pub log: String,
}

/// Direction of a modelled or real I/O operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// Read bytes from the task's scratch file.
    Read,
    /// Write bytes to the task's scratch file.
    Write,
    /// Write bytes at the start of the task's scratch file, over what is there: the file holds
    /// at most the largest such write, however many come (rt-app's `iorun`, whose writes go to
    /// a device that keeps nothing).
    Rewrite,
    /// Close the task's scratch file and open it again empty at its beginning, as a program
    /// rewriting a file does (`fopen(name, "w")` per cycle; `bytes` is ignored).
    Truncate,
}

/// What [`Context::read_file`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRead {
    /// The file's bytes are in the buffer (the real backend read the file).
    Read,
    /// The backend charged the cost of reading it and left the buffer alone: the body supplies
    /// the bytes itself (the simulator, which has no files).
    Modelled,
}

/// What a task asks of the kernel's own path walk ([`Context::path`]), on a path relative to the
/// run's private directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathOp {
    /// Create the file (empty), with any directories above it that do not exist yet.
    Create,
    /// `stat(2)` it: one walk of the path.
    Stat,
    /// `open(2)` it read-only and `close(2)` it at once (will-it-scale's open1 and open2).
    OpenClose,
}

/// Why a task body failed. A failed body fails the repetition: a lost or corrupted message is an
/// error, never a lower number.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadError {
    /// A channel operation failed (peer gone, transport error).
    Channel {
        /// The channel.
        channel: ChannelId,
        /// What the backend said.
        reason: String,
    },
    /// A message arrived that the workload did not expect (lost, duplicated or corrupted).
    Integrity(String),
    /// Another context operation failed.
    Backend(String),
    /// The run was asked to stop (interrupt, time budget).
    Stopped,
}

impl std::fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkloadError::Channel { channel, reason } => {
                write!(f, "channel {}: {reason}", channel.0)
            }
            WorkloadError::Integrity(s) => write!(f, "message integrity: {s}"),
            WorkloadError::Backend(s) => write!(f, "{s}"),
            WorkloadError::Stopped => write!(f, "stopped"),
        }
    }
}

impl std::error::Error for WorkloadError {}

/// Everything a task body may do. Every method that can take time is `async`: on the real backend
/// the work (the blocking system call, the spin) is done when the method is called or at the
/// future's first poll, which is the same moment since a body awaits each future at once; on a
/// simulator it suspends the body until the simulated machine has done the work.
///
/// Times are [`Duration`]s since the run's common epoch (the moment all tasks were released), so
/// that "real" and "simulated" time are the same type.
pub trait Context {
    /// Burn CPU for `cpu` of CPU time (not wall time: preemption stretches it).
    fn compute(&self, cpu: Duration) -> impl Future<Output = ()>;
    /// Do `work` as rt-app's `run` does it: the number of iterations of a fixed busy loop that
    /// the run's calibration ([`crate::Workload::loop_calibration`]) says take `work`. On the
    /// real kernel the loops run, however long they take: preemption stretches their wall
    /// time as it stretches `compute`'s, and a CPU slower than at calibration (frequency,
    /// caches, a sibling hyperthread) stretches their CPU time too. The default, which the
    /// simulator keeps, is `compute(work)`: a simulated CPU has one speed and no caches that
    /// would make a loop count other than its CPU time.
    fn compute_loops(&self, work: Duration) -> impl Future<Output = ()> {
        self.compute(work)
    }
    /// Nanoseconds per iteration of the busy loop this run measured or was given
    /// ([`crate::Workload::loop_calibration`], [`crate::Workload::rt_app_log_calibration`]),
    /// when it has one. The default, which the simulator keeps, is `None`: a simulated CPU
    /// runs no loop to measure.
    fn ns_per_loop(&self) -> Option<f64> {
        None
    }
    /// A cumulative compute (a recorded program's, whose computes hold what its own calls
    /// cost): burn CPU until the task's CPU time since its body began reaches `total`, the sum
    /// of its computes so far, this one's `cpu` last. What its other steps (posts, waits,
    /// sleeps, messages) cost since the last compute thus comes off this one, and a shortfall
    /// is made up; a task whose other steps cost more than the computes leave them runs no
    /// compute until its CPU time is back under `total`. The default, which the simulator
    /// keeps, is `compute(cpu)`: its other steps' costs are its model's, added as before.
    fn compute_to_total(&self, cpu: Duration, total: Duration) -> impl Future<Output = ()> {
        let _ = total;
        self.compute(cpu)
    }
    /// Write one whole message into `channel`.
    fn send(
        &self,
        channel: ChannelId,
        data: &[u8],
    ) -> impl Future<Output = Result<(), WorkloadError>>;
    /// Read exactly `buf.len()` bytes (one message) from `channel`, blocking until they arrive.
    fn recv(
        &self,
        channel: ChannelId,
        buf: &mut [u8],
    ) -> impl Future<Output = Result<(), WorkloadError>>;
    /// Sleep for `d`.
    fn sleep(&self, d: Duration) -> impl Future<Output = ()>;
    /// Sleep until the epoch-relative time `t` (returns at once if it has passed).
    fn sleep_until(&self, t: Duration) -> impl Future<Output = ()>;
    /// The epoch-relative time now.
    fn now(&self) -> Duration;
    /// Give up the CPU (sched_yield).
    fn yield_now(&self) -> impl Future<Output = ()>;
    /// Take lock `id`, blocking while another task holds it.
    fn lock(&self, id: LockId) -> impl Future<Output = ()>;
    /// Release lock `id`, which this task holds.
    fn unlock(&self, id: LockId);
    /// Wait at barrier `id` until all its parties ([`crate::plan::SyncPlan::barriers`]) have
    /// arrived; then all go on and the barrier is ready for its next round.
    fn barrier(&self, id: BarrierId) -> impl Future<Output = Result<(), WorkloadError>>;
    /// Add one to semaphore `id`, waking one waiter if there is one (`sem_post`).
    fn sem_post(&self, id: SemaphoreId) -> impl Future<Output = Result<(), WorkloadError>>;
    /// Take one from semaphore `id`, blocking while it is zero (`sem_wait`).
    fn sem_wait(&self, id: SemaphoreId) -> impl Future<Output = Result<(), WorkloadError>>;
    /// Release `lock` (which this task holds), wait on `cond` until signalled, and take `lock`
    /// again before returning (`pthread_cond_wait`). A signal sent while nobody waits is lost,
    /// as with pthreads.
    fn cond_wait(
        &self,
        cond: CondId,
        lock: LockId,
    ) -> impl Future<Output = Result<(), WorkloadError>>;
    /// Wake one task waiting on `cond`, if any (`pthread_cond_signal`).
    fn cond_signal(&self, cond: CondId) -> impl Future<Output = Result<(), WorkloadError>>;
    /// Wake every task waiting on `cond` (`pthread_cond_broadcast`).
    fn cond_broadcast(&self, cond: CondId) -> impl Future<Output = Result<(), WorkloadError>>;
    /// Read or write `bytes` of the task's scratch file.
    fn io(&self, kind: IoKind, bytes: usize) -> impl Future<Output = Result<(), WorkloadError>>;
    /// Read the whole of the file at `path` (relative to the run's temporary directory, where
    /// [`crate::Workload::write_files`] put it; `len` bytes long) into `buf`, replacing its
    /// contents: open, read, close, as a web server without a file cache does.
    fn read_file(
        &self,
        path: &str,
        len: usize,
        buf: &mut Vec<u8>,
    ) -> impl Future<Output = Result<FileRead, WorkloadError>>;
    /// Write to `bytes` of memory, page by page.
    fn touch_memory(&self, bytes: usize) -> impl Future<Output = ()>;
    /// Write every byte of `bytes` of the task's memory starting `offset` bytes into it (a
    /// `memset`, or the writing half of a `memcpy`; the simulator charges it page by page, as
    /// [`Context::touch_memory`]). The memory is one area from offset 0: touching past its end
    /// extends it.
    fn touch_memory_at(&self, offset: usize, bytes: usize) -> impl Future<Output = ()>;
    /// Make ready the buffer of `access` before the task's first step (rt-app allocates and
    /// fills every `memrun` buffer when it reads its configuration, before the threads start):
    /// allocate it, write every byte, and lay a chase's chain in it; a buffer made before (by
    /// this task, or shared and by any task) is kept. By default there is nothing to make.
    fn prepare_memory(
        &self,
        access: &crate::MemAccess,
    ) -> impl Future<Output = Result<(), WorkloadError>> {
        let _ = access;
        std::future::ready(Ok(()))
    }
    /// Run `access` on its buffer (made by [`Context::prepare_memory`] if it was not yet): its
    /// bytes read or written one at a time, or its chain followed. By default the backend
    /// cannot.
    fn access_memory(
        &self,
        access: &crate::MemAccess,
    ) -> impl Future<Output = Result<(), WorkloadError>> {
        std::future::ready(Err(WorkloadError::Backend(format!(
            "a memory access ({access}) needs a backend that runs or models it, which this one does not"
        ))))
    }
    /// Free all of the task's memory (`free` of every block, whose `munmap` returns the pages
    /// and their swap slots to the kernel): the next touch faults each page in afresh.
    fn free_memory(&self) -> impl Future<Output = ()>;
    /// Do `op` on `path` (relative to the run's private directory, `/`-separated) through the
    /// kernel's own path lookup. Only a real kernel has one: the simulator models no file
    /// system, and a workload that needs this says so in its host needs
    /// ([`crate::presets::HostNeeds::real_kernel`]) so that the simulator refuses it before
    /// anything runs. By default the backend has none.
    fn path(&self, op: PathOp, path: &str) -> impl Future<Output = Result<(), WorkloadError>> {
        let _ = path;
        std::future::ready(Err(WorkloadError::Backend(format!(
            "{op:?} of a path needs the real kernel's path lookup, which this backend does not have"
        ))))
    }
    /// Run `program` to its end as a child of this task, which it inherits its knobs from (CPU
    /// affinity, nice and scheduling policy pass through fork and exec to the program and its
    /// own children); when the run is asked to stop, the program and everything it started are
    /// ended before this returns. Only a real kernel can run programs: a workload that needs
    /// this says so in its host needs ([`crate::presets::HostNeeds::real_kernel`]). By default
    /// the backend cannot.
    fn run_program(
        &self,
        program: &Program,
    ) -> impl Future<Output = Result<ProgramExit, WorkloadError>> {
        std::future::ready(Err(WorkloadError::Backend(format!(
            "running {} needs the real kernel, which this backend does not have",
            program
                .argv
                .first()
                .map(String::as_str)
                .unwrap_or("a program")
        ))))
    }
    /// Start `daemon` as a child of this task, which it inherits its knobs from (as
    /// [`Context::run_program`]'s programs do), and return once it accepts connections on its
    /// port, which this returns. It is stopped by [`Context::stop_daemon`], and by the backend
    /// on every other way the task or the run ends. Only a real kernel runs programs (a
    /// workload that needs this says so in [`crate::presets::HostNeeds::real_kernel`]).
    fn start_daemon(&self, daemon: &Daemon) -> impl Future<Output = Result<u16, WorkloadError>> {
        std::future::ready(Err(WorkloadError::Backend(format!(
            "starting {} needs the real kernel, which this backend does not have",
            daemon
                .argv
                .first()
                .map(String::as_str)
                .unwrap_or("a server")
        ))))
    }
    /// Stop the daemon this task started (SIGTERM to everything it started, SIGKILL after a
    /// grace period) and wait for it; an error if it had died before.
    fn stop_daemon(&self) -> impl Future<Output = Result<(), WorkloadError>> {
        std::future::ready(Err(WorkloadError::Backend(
            "this backend runs no daemons".into(),
        )))
    }
    /// Connect the client end of duplex connection `channel` (an even channel: this task
    /// sends on `channel` and receives on `channel + 1`) to the TCP server listening on
    /// 127.0.0.1:`port` instead of the plan's own server task. Only a real kernel has one.
    fn connect_channel(
        &self,
        channel: ChannelId,
        port: u16,
    ) -> impl Future<Output = Result<(), WorkloadError>> {
        std::future::ready(Err(WorkloadError::Backend(format!(
            "connecting channel {} to port {port} needs the real kernel",
            channel.0
        ))))
    }
    /// Wait until at least one of `channels` has bytes to read, or until the epoch-relative
    /// time `deadline` (if one is given) has come, and fill `ready` with the positions in
    /// `channels` of those that have (empty: the deadline came first) — poll(2), the readiness
    /// wait of an event loop that multiplexes many connections in one task. By default the
    /// backend has none.
    fn wait_readable(
        &self,
        channels: &[ChannelId],
        deadline: Option<Duration>,
        ready: &mut Vec<usize>,
    ) -> impl Future<Output = Result<(), WorkloadError>> {
        let _ = (channels, deadline, ready);
        std::future::ready(Err(WorkloadError::Backend(
            "this backend has no readiness wait".into(),
        )))
    }
    /// Read what has arrived on `channel`, at least one byte and at most `buf.len()`, blocking
    /// until something has; returns how many bytes. For a peer whose messages' lengths are not
    /// known in advance (a real server's HTTP headers), and for an event loop, which reads
    /// what a readable channel holds without waiting for the rest.
    fn recv_some(
        &self,
        channel: ChannelId,
        buf: &mut [u8],
    ) -> impl Future<Output = Result<usize, WorkloadError>> {
        let _ = buf;
        std::future::ready(Err(WorkloadError::Backend(format!(
            "a partial read of channel {} needs the real kernel",
            channel.0
        ))))
    }
    /// Change this task's own scheduling attributes from now on (a workload file's `set` step,
    /// rt-app's per-phase `cpus`, `policy` and `priority`): each knob given in `knobs` replaces
    /// the task's, the others stay; `all_cpus` (with no `cpus` in `knobs`) allows every CPU of
    /// the machine again. Real: sched_setaffinity and sched_setattr (or setpriority) on the
    /// calling thread; simulator: the task leaves its runqueue and comes back with its new
    /// class, weight and CPU mask. The knobs were checked against the machine and the policy
    /// before the run. By default the backend cannot.
    fn set_attrs(
        &self,
        knobs: &crate::knobs::Knobs,
        all_cpus: bool,
    ) -> impl Future<Output = Result<(), WorkloadError>> {
        let _ = all_cpus;
        std::future::ready(Err(WorkloadError::Backend(format!(
            "changing a task's attributes ({knobs}) during the run is not supported by this backend"
        ))))
    }
    /// Record one sample of a workload metric (latency, count, …).
    fn record(&self, metric: &'static str, value: f64);
    /// Start a new task in group `group` of the plan (fork): it runs the workload's body as the
    /// group's next spawn place ([`crate::plan::Plan::spawn_slots`]) and reads `arg` with
    /// [`Context::spawn_arg`]. Fails when the group has used all its places
    /// ([`crate::plan::GroupPlan::spawn`]). The spawning task may [`Context::wait`] for it; a
    /// task that ends without waiting for its children leaves them to the backend, which waits
    /// for them before the run ends.
    fn spawn(&self, group: usize, arg: u64)
        -> impl Future<Output = Result<TaskRef, WorkloadError>>;
    /// Wait until `child`, which this task spawned, has ended — or, with `None`, any of its
    /// children (waitpid(-1), as make waits for whichever job ends first) — and reap it. Fails
    /// if the child failed, or if there is no such child left to wait for.
    fn wait(
        &self,
        child: Option<TaskRef>,
    ) -> impl Future<Output = Result<ChildExit, WorkloadError>>;
    /// The argument this task was spawned with (0 for the tasks the run starts with).
    fn spawn_arg(&self) -> u64;
    /// The machine's CPU time so far, all CPUs together, and the part of it they were idle —
    /// what schbench's auto-RPS steers by. Real: the `cpu` line of /proc/stat; simulator: its
    /// CPUs' own accounting. `None` when the backend cannot tell (the default).
    fn cpu_times(&self) -> impl Future<Output = Option<CpuTimes>> {
        std::future::ready(None)
    }
    /// Write `value` into shared word `id` ([`crate::plan::SyncPlan::words`]): memory the
    /// run's threads share, as a field of a structure that another thread reads once it is
    /// woken (schbench's wake time). A plain store — no system call, no simulated time — so
    /// that handing a value to a thread costs what it costs a C program; a
    /// [`Context::load_word`] after a wakeup (semaphore, lock, barrier) that followed the store
    /// sees it. By default the backend has none.
    fn store_word(&self, id: WordId, value: u64) -> Result<(), WorkloadError> {
        let _ = value;
        Err(WorkloadError::Backend(format!(
            "shared word {} cannot be written: this backend has no shared words",
            id.0
        )))
    }
    /// Read shared word `id` (0 until a task stores into it). By default the backend has none.
    fn load_word(&self, id: WordId) -> Result<u64, WorkloadError> {
        Err(WorkloadError::Backend(format!(
            "shared word {} cannot be read: this backend has no shared words",
            id.0
        )))
    }
    /// Whether the run has been asked to stop early; long loops check it.
    fn stop_requested(&self) -> bool {
        false
    }
    /// The CPU this task is running on now (sched_getcpu(3)), for per-CPU data such as
    /// schbench's per-CPU locks; `None` when the backend cannot tell. A task may be moved
    /// at any moment after the answer, as with sched_getcpu.
    fn current_cpu(&self) -> Option<usize> {
        None
    }
    /// Whether this run keeps per-pass rows ([`crate::passes`], `--rt-app-logs`): a body that
    /// can log passes asks once, and takes no extra clock readings when it is off (the default).
    fn logs_passes(&self) -> bool {
        false
    }
    /// Keep one pass row of this task (only called when [`Context::logs_passes`] is on; the
    /// backend keeps at most [`crate::passes::MAX_PASSES`]).
    fn log_pass(&self, row: crate::passes::PassRecord) {
        let _ = row;
    }
    /// Say that this task is one a fork starts, and when the fork started it (`None`: it never
    /// did), for the name of its pass log ([`crate::passes::Start`]; only called when
    /// [`Context::logs_passes`] is on).
    fn log_fork(&self, at: Option<Duration>) {
        let _ = at;
    }
}
