//! [`RealContext`]: the context calls of a task body as real, blocking system calls.

use crate::daemon::RunningDaemon;
use crate::knobs::apply_to_current_thread;
use crate::locks::RealLock;
use crate::mem_access::MemBuffer;
use crate::procfs::{rusage_switches, snapshot_self, GroupUsage, SnapshotSource};
use crate::report::TaskReport;
use crate::spawn::{Children, Spawner};
use crate::sync::SyncObjects;
use crate::sys;
use crate::sys::write_stderr;
use crate::transport::Channels;
use schedlab_workload::mem_access::BufferKey;
use schedlab_workload::passes::{PassLog, PassRecord};
use schedlab_workload::MemAccess;
use schedlab_workload::{
    BarrierId, ChannelId, ChildExit, CondId, Context, CpuTimes, Daemon, FileRead, IoKind, LockId,
    PathOp, Program, ProgramExit, SemaphoreId, TaskRef, WordId, WorkloadError,
};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::future::Future;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Runs the workload's body for a spawned task on the given context.
pub type BodyRunner = dyn Fn(TaskRef, &RealContext) -> Result<(), WorkloadError> + Send + Sync;

/// What a task needs to start others: the spawn places, knobs and reports, and the body a new
/// task runs.
pub struct Spawning {
    /// The plan's spawn places, the groups' knobs and the spawned tasks' reports.
    pub spawner: Spawner,
    /// The workload's body.
    pub body: Box<BodyRunner>,
}

/// What every task of a repetition shares.
pub struct Shared {
    /// The plan's channels.
    pub channels: Channels,
    /// Per-channel write locks, for transports whose writes may be split (TCP).
    pub write_locks: Option<Vec<parking_lot::Mutex<()>>>,
    /// The plan's locks (threads only), timed.
    pub locks: Vec<RealLock>,
    /// The plan's barriers, semaphores and condition variables (threads only).
    pub sync: SyncObjects,
    /// Set when the run must stop early.
    pub stop: Arc<AtomicBool>,
    /// Directory for scratch files.
    pub scratch: PathBuf,
    /// Directory of the workload's files ([`schedlab_workload::Workload::shared_files`]'s, or
    /// `scratch` where [`schedlab_workload::Workload::write_files`] wrote them).
    pub files: PathBuf,
    /// Whether bodies keep per-pass rows ([`Context::logs_passes`], `--rt-app-logs`).
    pub log_passes: bool,
    /// Nanoseconds per iteration of the busy loop of [`Context::compute_loops`], measured or
    /// given before the tasks started ([`schedlab_workload::Workload::loop_calibration`], or
    /// [`schedlab_workload::Workload::rt_app_log_calibration`] when the run keeps rt-app's
    /// logs).
    pub ns_per_loop: Option<f64>,
}

/// The real backend's context for one task.
pub struct RealContext {
    shared: Arc<Shared>,
    task_id: usize,
    epoch_ns: u64,
    /// The samples by metric, the metric recorded last at the end. A body records a metric or
    /// two, one of them once per message or round trip: comparing the last one's address
    /// costs a few instructions, where a map's lookup compared the names' bytes every time
    /// (a sample cost about 120 user-space instructions; cachegrind, the pinned ping-pong).
    samples: RefCell<Vec<(&'static str, Vec<f64>)>>,
    file: RefCell<Option<File>>,
    memory: RefCell<Vec<u8>>,
    /// The buffers of its memory accesses, its own and the shared ones it uses.
    mem_buffers: RefCell<std::collections::BTreeMap<BufferKey, Arc<MemBuffer>>>,
    /// How to start tasks, when the plan spawns any.
    spawning: Option<Arc<Spawning>>,
    /// The argument this task was spawned with.
    arg: u64,
    /// The tasks it spawned and has not waited for (reaped when the context is dropped).
    children: RefCell<Children>,
    /// The daemon it started and has not stopped (stopped when the context is dropped).
    daemon: RefCell<Option<RunningDaemon>>,
    /// What the daemons it stopped used (their processes', not this thread's).
    daemon_used: std::cell::Cell<GroupUsage>,
    /// The descriptors of the last readiness wait, kept to reuse their memory.
    pollfds: RefCell<Vec<libc::pollfd>>,
    /// The body's pass rows, when the run keeps them ([`Shared::log_passes`]).
    passes: RefCell<PassLog>,
    /// What this task's clock-timed computes overspent, owed by the next one.
    carry: crate::compute::Carry,
    /// Its cumulative computes ([`Context::compute_to_total`]): the CPU clock's last reading
    /// and what they found.
    cumulative: crate::compute::Cumulative,
    /// The thread's CPU clock when the context was made, just before the body began: where
    /// cumulative computes count from ([`Context::compute_to_total`]).
    cpu_start_ns: u64,
}

impl RealContext {
    /// A context for task `task_id` whose clock starts at `epoch_ns` (CLOCK_MONOTONIC).
    pub fn new(shared: Arc<Shared>, task_id: usize, epoch_ns: u64) -> RealContext {
        let stop = shared.stop.clone();
        RealContext {
            shared,
            task_id,
            epoch_ns,
            samples: RefCell::default(),
            file: RefCell::default(),
            memory: RefCell::default(),
            mem_buffers: RefCell::default(),
            spawning: None,
            arg: 0,
            children: RefCell::new(Children::new(stop)),
            daemon: RefCell::default(),
            daemon_used: Default::default(),
            pollfds: RefCell::default(),
            passes: RefCell::new(PassLog::new(epoch_ns)),
            carry: Default::default(),
            cumulative: Default::default(),
            cpu_start_ns: sys::thread_cpu_ns(),
        }
    }

    /// The buffer of `access`: the task's own, or the run's shared one; made if it was not.
    fn mem_buffer(&self, access: &MemAccess) -> Result<Arc<MemBuffer>, WorkloadError> {
        let key = access.buffer_key();
        if let Some(b) = self.mem_buffers.borrow().get(&key) {
            return Ok(b.clone());
        }
        let b = match access.shared {
            Some(_) => self.shared.sync.shared_buffer(access)?,
            None => Arc::new(MemBuffer::new(access)?),
        };
        self.mem_buffers.borrow_mut().insert(key, b.clone());
        Ok(b)
    }

    /// This context, able to spawn with `spawning`, for a task spawned with `arg`.
    pub fn with_spawning(mut self, spawning: Arc<Spawning>, arg: u64) -> RealContext {
        self.spawning = Some(spawning);
        self.arg = arg;
        self
    }

    /// What the daemons this task stopped used.
    pub(crate) fn daemon_usage(&self) -> GroupUsage {
        self.daemon_used.get()
    }

    /// What the task's cumulative computes asked and found; `None` if it ran none.
    pub(crate) fn cumulative_use(&self) -> Option<crate::compute::CumulativeUse> {
        self.cumulative.used(self.cpu_start_ns)
    }

    /// The pass rows logged so far.
    pub(crate) fn take_passes(&self) -> PassLog {
        std::mem::take(&mut *self.passes.borrow_mut())
    }

    /// The samples recorded so far, by metric.
    pub fn take_samples(&self) -> BTreeMap<String, Vec<f64>> {
        std::mem::take(&mut *self.samples.borrow_mut())
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    fn scratch_file(&self) -> Result<std::cell::RefMut<'_, File>, WorkloadError> {
        let mut slot = self.file.borrow_mut();
        if slot.is_none() {
            let path = self
                .shared
                .scratch
                .join(format!("task{}.dat", self.task_id));
            let f = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .map_err(|e| {
                    WorkloadError::Backend(format!("scratch file {}: {e}", path.display()))
                })?;
            *slot = Some(f);
        }
        Ok(std::cell::RefMut::map(slot, |s| {
            s.as_mut().expect("just created")
        }))
    }
}

/// A write under the channel's lock, for writers that take turns (TCP, see
/// `crate::runner`): out of line, so that the unlocked writes of the other transports stay
/// small enough to be inlined into the body.
#[cold]
#[inline(never)]
fn write_in_turn(lock: &parking_lot::Mutex<()>, fd: i32, data: &[u8]) -> std::io::Result<()> {
    let _turn = lock.lock();
    sys::write_all(fd, data)
}

#[cold]
fn channel_error(channel: ChannelId, e: std::io::Error) -> WorkloadError {
    WorkloadError::Channel {
        channel,
        reason: e.to_string(),
    }
}

impl Context for RealContext {
    async fn compute(&self, cpu: Duration) {
        // A calibrated loop below 20 µs, the CPU clock above, the excess carried (the module
        // says why).
        crate::compute::compute(cpu, &self.carry);
    }

    async fn compute_to_total(&self, _cpu: Duration, total: Duration) {
        let total_ns = u64::try_from(total.as_nanos()).unwrap_or(u64::MAX);
        self.cumulative
            .until(self.cpu_start_ns.saturating_add(total_ns));
    }

    // The message calls, and `yield_now`, make their system call when the body calls them and
    // hand it a future that is ready: the same moment as an `async fn`'s first poll, since a
    // body on this backend awaits every call at once (see `crate::executor`), but without a
    // state machine of the call's own, which the compiler did not fold into the body's loop
    // (about 60 instructions a message more, measured with cachegrind on the pinned ping-pong).
    #[inline(always)]
    fn send(
        &self,
        channel: ChannelId,
        data: &[u8],
    ) -> impl Future<Output = Result<(), WorkloadError>> {
        let fd = self.shared.channels.write_fd(channel.0);
        let written = match &self.shared.write_locks {
            None => sys::write_all(fd, data),
            Some(locks) => write_in_turn(&locks[channel.0], fd, data),
        };
        std::future::ready(written.map_err(|e| channel_error(channel, e)))
    }

    #[inline(always)]
    fn recv(
        &self,
        channel: ChannelId,
        buf: &mut [u8],
    ) -> impl Future<Output = Result<(), WorkloadError>> {
        std::future::ready(
            sys::read_exact(self.shared.channels.read_fd(channel.0), buf)
                .map_err(|e| channel_error(channel, e)),
        )
    }

    /// The `cpu` line of /proc/stat, in clock ticks (USER_HZ): schbench's `read_busy`, except
    /// that guest time, which is inside `user` already, is not counted twice.
    async fn cpu_times(&self) -> Option<CpuTimes> {
        let t = crate::procfs::machine_cpu_time()?;
        let hz = sys::clock_ticks_per_second().max(1);
        let ticks = |n: u64| Duration::from_nanos(n.saturating_mul(1_000_000_000 / hz));
        Some(CpuTimes {
            total: ticks(t.total),
            idle: ticks(t.idle),
        })
    }

    #[inline]
    fn recv_some(
        &self,
        channel: ChannelId,
        buf: &mut [u8],
    ) -> impl Future<Output = Result<usize, WorkloadError>> {
        std::future::ready(
            sys::read_some(self.shared.channels.read_fd(channel.0), buf)
                .map_err(|e| channel_error(channel, e)),
        )
    }

    async fn wait_readable(
        &self,
        channels: &[ChannelId],
        deadline: Option<Duration>,
        ready: &mut Vec<usize>,
    ) -> Result<(), WorkloadError> {
        let mut fds = self.pollfds.borrow_mut();
        fds.clear();
        fds.extend(channels.iter().map(|c| libc::pollfd {
            fd: self.shared.channels.read_fd(c.0),
            events: libc::POLLIN,
            revents: 0,
        }));
        let until = deadline.map(|d| self.epoch_ns + d.as_nanos() as u64);
        sys::poll_readable(&mut fds, until).map_err(|e| {
            WorkloadError::Backend(format!("waiting for {} channels: {e}", channels.len()))
        })?;
        ready.clear();
        ready.extend(
            fds.iter()
                .enumerate()
                .filter(|(_, f)| f.revents != 0)
                .map(|(i, _)| i),
        );
        Ok(())
    }

    async fn connect_channel(&self, channel: ChannelId, port: u16) -> Result<(), WorkloadError> {
        let fd = self.shared.channels.write_fd(channel.0);
        let paired = channel.0.is_multiple_of(2)
            && channel.0 + 1 < self.shared.channels.len()
            && self.shared.channels.read_fd(channel.0 + 1) == fd;
        if !paired {
            return Err(WorkloadError::Backend(format!(
                "channel {} is not the client end of a duplex connection",
                channel.0
            )));
        }
        let stream = std::net::TcpStream::connect(("127.0.0.1", port))
            .and_then(|s| s.set_nodelay(true).map(|()| s))
            .map_err(|e| channel_error(channel, e))?;
        sys::replace_fd(std::os::fd::IntoRawFd::into_raw_fd(stream), fd)
            .map_err(|e| channel_error(channel, e))
    }

    async fn start_daemon(&self, daemon: &Daemon) -> Result<u16, WorkloadError> {
        RunningDaemon::start(
            daemon,
            &mut self.daemon.borrow_mut(),
            &self.shared.scratch,
            &self.shared.files,
            || self.stop_requested(),
        )
    }

    async fn stop_daemon(&self) -> Result<(), WorkloadError> {
        let mut used = self.daemon_used.get();
        let stopped = RunningDaemon::stop_in(&mut self.daemon.borrow_mut(), &mut used);
        self.daemon_used.set(used);
        stopped
    }

    async fn read_file(
        &self,
        path: &str,
        len: usize,
        buf: &mut Vec<u8>,
    ) -> Result<FileRead, WorkloadError> {
        let full = self.shared.files.join(path);
        buf.clear();
        buf.reserve(len);
        File::open(&full)
            .and_then(|mut f| f.read_to_end(buf))
            .map_err(|e| WorkloadError::Backend(format!("reading {}: {e}", full.display())))?;
        Ok(FileRead::Read)
    }

    async fn sleep(&self, d: Duration) {
        sys::sleep_until_ns(sys::monotonic_ns() + d.as_nanos() as u64);
    }

    async fn sleep_until(&self, t: Duration) {
        sys::sleep_until_ns(self.epoch_ns + t.as_nanos() as u64);
    }

    #[inline]
    fn now(&self) -> Duration {
        Duration::from_nanos(sys::monotonic_ns().saturating_sub(self.epoch_ns))
    }

    async fn barrier(&self, id: BarrierId) -> Result<(), WorkloadError> {
        self.shared.sync.barrier(id.0, self.wait_deadline())
    }

    async fn sem_post(&self, id: SemaphoreId) -> Result<(), WorkloadError> {
        self.shared.sync.sem_post(id.0)
    }

    fn store_word(&self, id: WordId, value: u64) -> Result<(), WorkloadError> {
        self.shared.sync.store_word(id.0, value)
    }

    fn load_word(&self, id: WordId) -> Result<u64, WorkloadError> {
        self.shared.sync.load_word(id.0)
    }

    async fn sem_wait(&self, id: SemaphoreId) -> Result<(), WorkloadError> {
        self.shared.sync.sem_wait(id.0, self.wait_deadline())
    }

    async fn cond_wait(&self, cond: CondId, lock: LockId) -> Result<(), WorkloadError> {
        let have = self.shared.locks.len();
        let l = self.shared.locks.get(lock.0).ok_or_else(|| {
            WorkloadError::Backend(format!(
                "lock {} is not in the workload's plan, which has {have}",
                lock.0
            ))
        })?;
        self.shared.sync.cond_wait(cond.0, l, self.wait_deadline())
    }

    async fn cond_signal(&self, cond: CondId) -> Result<(), WorkloadError> {
        self.shared.sync.cond_signal(cond.0)
    }

    async fn cond_broadcast(&self, cond: CondId) -> Result<(), WorkloadError> {
        self.shared.sync.cond_broadcast(cond.0)
    }

    #[inline]
    fn yield_now(&self) -> impl Future<Output = ()> {
        sys::sched_yield();
        std::future::ready(())
    }

    fn current_cpu(&self) -> Option<usize> {
        sys::current_cpu()
    }

    async fn set_attrs(
        &self,
        knobs: &schedlab_workload::knobs::Knobs,
        all_cpus: bool,
    ) -> Result<(), WorkloadError> {
        let mut k = knobs.clone();
        if all_cpus && k.cpus.is_none() {
            // Every CPU: the kernel keeps those of the task's cpuset that are active
            // (sched_setaffinity → cpuset_cpus_allowed), the mask a thread of a group without
            // `cpus` started with.
            k.cpus = Some(schedlab_workload::CpuSet::first(
                rustix::thread::CpuSet::MAX_CPU,
            ));
        }
        apply_to_current_thread(&k)
            .map_err(|e| WorkloadError::Backend(format!("set {knobs}: {e}")))?;
        if k.policy.is_some() {
            // Leaving a real-time policy, the kernel gives the thread its creation slack.
            crate::knobs::restore_timer_slack();
        }
        Ok(())
    }

    async fn lock(&self, id: LockId) {
        self.shared.locks[id.0].lock();
    }

    fn unlock(&self, id: LockId) {
        // SAFETY: the workload's contract is that a task unlocks only locks it holds.
        unsafe { self.shared.locks[id.0].unlock() };
    }

    async fn io(&self, kind: IoKind, bytes: usize) -> Result<(), WorkloadError> {
        if kind == IoKind::Truncate {
            // Close the file; scratch_file() reopens it with O_TRUNC, as a program rewriting a
            // file does. The close matters: ext4 (auto_da_alloc) starts writeback of a
            // truncated file's dirty pages when it is closed, which an ftruncate on a file
            // kept open never does.
            *self.file.borrow_mut() = None;
            self.scratch_file()?;
            return Ok(());
        }
        let mut f = self.scratch_file()?;
        let chunk = vec![0u8; bytes.min(1 << 20)];
        let mut left = bytes;
        let err = |e: std::io::Error| WorkloadError::Backend(format!("scratch I/O: {e}"));
        match kind {
            IoKind::Truncate => unreachable!("handled above"),
            IoKind::Rewrite => {
                use std::os::unix::fs::FileExt;
                let mut at = 0u64;
                while left > 0 {
                    let n = left.min(chunk.len());
                    f.write_all_at(&chunk[..n], at).map_err(err)?;
                    at += n as u64;
                    left -= n;
                }
            }
            IoKind::Write => {
                while left > 0 {
                    let n = left.min(chunk.len());
                    f.write_all(&chunk[..n]).map_err(err)?;
                    left -= n;
                }
                f.flush().map_err(err)?;
            }
            IoKind::Read => {
                let mut buf = chunk;
                while left > 0 {
                    let n = left.min(buf.len());
                    let got = f.read(&mut buf[..n]).map_err(err)?;
                    if got == 0 {
                        f.seek(SeekFrom::Start(0)).map_err(err)?;
                        if f.metadata().map_err(err)?.len() == 0 {
                            return Err(WorkloadError::Backend(
                                "read from an empty scratch file".into(),
                            ));
                        }
                        continue;
                    }
                    left -= got;
                }
            }
        }
        Ok(())
    }

    async fn path(&self, op: PathOp, path: &str) -> Result<(), WorkloadError> {
        // The run's private directory is removed with everything in it when the run ends.
        let full = self.shared.scratch.join(path);
        let err = |e: std::io::Error| {
            WorkloadError::Backend(format!("{op:?} of {}: {e}", full.display()))
        };
        match op {
            PathOp::Create => {
                if let Some(dir) = full.parent() {
                    std::fs::create_dir_all(dir).map_err(err)?;
                }
                File::create(&full).map_err(err)?;
            }
            // std's metadata() is statx(2) on Linux: the same path walk as stat(2).
            PathOp::Stat => {
                std::fs::metadata(&full).map_err(err)?;
            }
            PathOp::OpenClose => drop(File::open(&full).map_err(err)?),
        }
        Ok(())
    }

    async fn touch_memory(&self, bytes: usize) {
        let mut mem = self.memory.borrow_mut();
        if mem.len() < bytes {
            mem.resize(bytes, 0);
        }
        for i in (0..bytes).step_by(4096) {
            // A volatile write so that the page is really dirtied.
            // SAFETY: i < bytes <= mem.len().
            unsafe { std::ptr::write_volatile(mem.as_mut_ptr().add(i), (i as u8).wrapping_add(1)) };
        }
    }

    async fn touch_memory_at(&self, offset: usize, bytes: usize) {
        let mut mem = self.memory.borrow_mut();
        let end = offset.saturating_add(bytes);
        if mem.len() < end {
            mem.resize(end, 0);
        }
        // Every byte, as a memset does; black_box keeps the writes.
        mem[offset..end].fill(1);
        std::hint::black_box(&mut mem[offset..end]);
    }

    async fn prepare_memory(&self, access: &MemAccess) -> Result<(), WorkloadError> {
        self.mem_buffer(access).map(drop)
    }

    async fn access_memory(&self, access: &MemAccess) -> Result<(), WorkloadError> {
        self.mem_buffer(access)?.run(access);
        Ok(())
    }

    async fn free_memory(&self) {
        // Dropping the buffer unmaps it (an allocation this large is its own mapping).
        *self.memory.borrow_mut() = Vec::new();
    }

    async fn run_program(&self, program: &Program) -> Result<ProgramExit, WorkloadError> {
        crate::program::run(program, &self.shared.scratch, || self.stop_requested())
    }

    #[inline]
    fn record(&self, metric: &'static str, value: f64) {
        let mut samples = self.samples.borrow_mut();
        // The same literal is the same address: the metric recorded last is found at once.
        // Anything else (another metric, two literals of one name) goes the longer way.
        match samples.last_mut() {
            Some((m, values)) if std::ptr::eq(*m, metric) => values.push(value),
            _ => record_other(&mut samples, metric, value),
        }
    }

    fn stop_requested(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn logs_passes(&self) -> bool {
        self.shared.log_passes
    }

    fn log_pass(&self, row: PassRecord) {
        self.passes.borrow_mut().push(row);
    }

    fn log_fork(&self, at: Option<Duration>) {
        self.passes.borrow_mut().start = schedlab_workload::passes::forked_at(at);
    }

    fn ns_per_loop(&self) -> Option<f64> {
        self.shared.ns_per_loop
    }

    async fn compute_loops(&self, work: Duration) {
        match self.shared.ns_per_loop {
            Some(ns) => crate::busy_loop::spin(crate::busy_loop::loops_for(work, ns)),
            // A workload that declared no calibration asks for none of this (the interpreter
            // runs loops only when it does); CPU time is the nearest meaning.
            None => self.compute(work).await,
        }
    }

    async fn spawn(&self, group: usize, arg: u64) -> Result<TaskRef, WorkloadError> {
        self.spawn_task(group, arg)
    }

    async fn wait(&self, child: Option<TaskRef>) -> Result<ChildExit, WorkloadError> {
        // Off the list first, so that the list is not borrowed while the child is reaped.
        let ended = self.children.borrow_mut().take(child)?;
        ended.wait()
    }

    fn spawn_arg(&self) -> u64 {
        self.arg
    }
}

/// [`Context::record`] of a metric other than the one recorded last: found by its name, or
/// added. The metric found moves to the end, where the next sample looks first.
#[cold]
#[inline(never)]
fn record_other(samples: &mut Vec<(&'static str, Vec<f64>)>, metric: &'static str, value: f64) {
    match samples.iter().position(|(m, _)| *m == metric) {
        Some(i) => {
            let mut entry = samples.remove(i);
            entry.1.push(value);
            samples.push(entry);
        }
        None => samples.push((metric, vec![value])),
    }
}

impl RealContext {
    /// The plan's wait end ([`schedlab_workload::SyncPlan::wait_end`]) as a deadline for the
    /// waits: the monotonic clock that `Instant` reads is the one the epoch is on.
    fn wait_deadline(&self) -> Option<std::time::Instant> {
        let end = self.shared.sync.wait_end()?;
        let end_ns = self.epoch_ns.saturating_add(end.as_nanos() as u64);
        let left = end_ns.saturating_sub(sys::monotonic_ns());
        Some(std::time::Instant::now() + Duration::from_nanos(left))
    }

    /// `spawn` on the real kernel (see [`crate::spawn`]): a thread where the plan's shared
    /// objects live in this process, a forked process otherwise.
    fn spawn_task(&self, group: usize, arg: u64) -> Result<TaskRef, WorkloadError> {
        let Some(spawning) = self.spawning.clone() else {
            return Err(WorkloadError::Backend(
                "the workload's plan gives no group spawn places".into(),
            ));
        };
        if self.stop_requested() {
            return Err(WorkloadError::Stopped);
        }
        let task = spawning.spawner.take_place(group)?;
        let name = spawning.spawner.comm(task);
        let born = Born {
            spawning: spawning.clone(),
            shared: self.shared.clone(),
            epoch_ns: self.epoch_ns,
            task,
            arg,
        };
        let mut children = self.children.borrow_mut();
        if spawning.spawner.threads {
            children.start_thread(task, &name, move || born.live(true))?;
        } else {
            let group = spawning.spawner.group();
            children.start_process(task, &name, group.as_deref(), || {
                born.live(false).map_or_else(|e| e.exit_code(&name), |_| 0)
            })?;
        }
        Ok(task)
    }
}

/// A spawned task about to live: what its context is made of.
struct Born {
    spawning: Arc<Spawning>,
    shared: Arc<Shared>,
    epoch_ns: u64,
    task: TaskRef,
    arg: u64,
}

/// Why a spawned task's life ended badly; the text is what waiting for a thread child says.
#[derive(Debug, thiserror::Error)]
enum SpawnedFailure {
    /// Its group's knobs could not be applied.
    #[error("{0}")]
    Knobs(crate::knobs::KnobError),
    /// Its report could not be left.
    #[error("leaving its report: {0}")]
    Report(std::io::Error),
    /// Its body failed.
    #[error("{0}")]
    Body(WorkloadError),
}

impl SpawnedFailure {
    /// A forked child's exit code (its error on stderr first): 2 knobs, 3 stopped, 1 else.
    fn exit_code(self, name: &str) -> i32 {
        match self {
            SpawnedFailure::Knobs(e) => {
                write_stderr(&format!("schedlab: {name}: {e}\n"));
                2
            }
            SpawnedFailure::Report(e) => {
                write_stderr(&format!("schedlab: {name}: leaving its report: {e}\n"));
                1
            }
            SpawnedFailure::Body(WorkloadError::Stopped) => 3,
            SpawnedFailure::Body(e) => {
                write_stderr(&format!("schedlab: {name}: {e}\n"));
                1
            }
        }
    }
}

impl Born {
    /// The life of a spawned task (a thread of this process if `thread`, else a forked
    /// child): its group's knobs, the body measured, its report left; its CPU time.
    fn live(self, thread: bool) -> Result<Duration, SpawnedFailure> {
        let spawner = &self.spawning.spawner;
        let knobs = spawner.knobs(self.task.group);
        apply_to_current_thread(knobs).map_err(SpawnedFailure::Knobs)?;
        crate::knobs::apply_timer_slack(knobs.timer_slack);
        let ctx = RealContext::new(self.shared.clone(), self.task.id, self.epoch_ns)
            .with_spawning(self.spawning.clone(), self.arg);
        let (result, report) = run_measured(&self.spawning, self.task, &ctx);
        let cpu = Duration::from_nanos(report.cpu_ns);
        // Reap the children the body did not wait for before leaving the report.
        drop(ctx);
        spawner
            .leave_report(report, thread)
            .map_err(SpawnedFailure::Report)?;
        result.map(|()| cpu).map_err(SpawnedFailure::Body)
    }
}

/// Run a spawned task's body on `ctx`, measured as the runner measures a starting task; the
/// result and the report (without the error, which the parent learns from its wait).
fn run_measured(
    spawning: &Spawning,
    task: TaskRef,
    ctx: &RealContext,
) -> (Result<(), WorkloadError>, TaskReport) {
    let (vol0, invol0) = rusage_switches();
    let cpu0 = sys::thread_cpu_ns();
    let result = (spawning.body)(task, ctx);
    let cpu_ns = sys::thread_cpu_ns() - cpu0;
    let (vol1, invol1) = rusage_switches();
    let finished_ns = sys::monotonic_ns().saturating_sub(ctx.epoch_ns);
    let migrations = match snapshot_self() {
        (s, SnapshotSource::ProcSched) => s.migrations,
        (_, SnapshotSource::Rusage) => None,
    };
    let report = TaskReport {
        id: task.id,
        pid: std::process::id() as i32,
        tid: sys::gettid(),
        error: None,
        samples: ctx.take_samples(),
        cpu_ns,
        finished_ns,
        voluntary: vol1.saturating_sub(vol0),
        involuntary: invol1.saturating_sub(invol0),
        migrations,
        passes: PassLog::default(),
        timer_slack_ns: Some(sys::timer_slack_ns()),
        cumulative: ctx.cumulative_use(),
    };
    (result, report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tempdir::TempDir;
    use schedlab_workload::{SyncPlan, Transport};

    /// A context with no channels, and the directory it points at.
    fn context() -> (RealContext, TempDir) {
        let scratch = TempDir::new().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Shared {
            channels: Channels::create(Transport::Pipe, 0, false, &scratch).unwrap(),
            write_locks: None,
            locks: Vec::new(),
            sync: SyncObjects::new(&SyncPlan::default(), stop.clone()),
            stop,
            scratch: scratch.path().to_path_buf(),
            files: scratch.path().to_path_buf(),
            log_passes: false,
            ns_per_loop: None,
        };
        (RealContext::new(Arc::new(shared), 0, 0), scratch)
    }

    /// Samples are kept by metric name, in the order recorded, however the metrics alternate
    /// and whichever literal (address) names them: the fast path compares addresses only.
    #[test]
    fn samples_are_kept_by_name_in_order_however_metrics_alternate() {
        let (ctx, _dir) = context();
        // The same name at another address than the literal's.
        let other: &'static str = String::from("rtt_ns").leak();
        assert!(!std::ptr::eq(other, "rtt_ns"));
        ctx.record("rtt_ns", 1.0);
        ctx.record("rtt_ns", 2.0);
        ctx.record("round_trips", 9.0);
        ctx.record("rtt_ns", 3.0);
        ctx.record(other, 4.0);
        ctx.record("round_trips", 10.0);
        ctx.record(other, 5.0);
        let samples = ctx.take_samples();
        assert_eq!(samples.len(), 2, "{samples:?}");
        assert_eq!(samples["rtt_ns"], [1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(samples["round_trips"], [9.0, 10.0]);
        assert!(ctx.take_samples().is_empty(), "taken once");
    }

    /// `rewrite` writes over the start of the scratch file, so however many come the file holds
    /// the largest one (rt-app's `iorun` in a run of any length); `write` appends.
    #[test]
    fn rewrites_keep_the_scratch_file_at_the_largest_one_and_writes_append() {
        let (ctx, dir) = context();
        let size = || {
            std::fs::metadata(dir.path().join("task0.dat"))
                .unwrap()
                .len()
        };
        let io = |kind, bytes| crate::executor::block_on(ctx.io(kind, bytes)).unwrap();
        for _ in 0..100 {
            io(IoKind::Rewrite, 100_000);
        }
        io(IoKind::Rewrite, 3 << 20);
        io(IoKind::Rewrite, 1000);
        assert_eq!(size(), 3 << 20, "the largest rewrite");
        io(IoKind::Truncate, 0);
        for _ in 0..3 {
            io(IoKind::Write, 100_000);
        }
        assert_eq!(size(), 300_000, "writes append");
    }
}
