//! A recorded program's scheduler events: what `schedlab record` reads from the kernel's
//! tracepoints (`schedlab-real`) and what the conversion to a workload file (`schedlab-script`)
//! takes. It lives here, in the vocabulary both crates share, so that neither depends on the
//! other; it is plain data with no knowledge of tracefs or of the file format.
//!
//! The events follow the kernel's `include/trace/events/sched.h` and
//! `include/trace/events/syscalls.h` (`raw_syscalls`); times are CLOCK_MONOTONIC nanoseconds.
//! The pipe and socket calls ([`IoCall`]) are the BPF recorder's, from fentry/fexit on the
//! kernel's `anon_pipe_read`/`anon_pipe_write` and `unix_stream_recvmsg`/`unix_stream_sendmsg`.
//! A switch's `prev_runtime_ns` is the BPF recorder's too (the task's `se.sum_exec_runtime`).

/// How a task left its CPU at a `sched_switch` (the `prev_state` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftAs {
    /// `R` or `R+`: still runnable — preempted, or it yielded.
    Runnable,
    /// `S` (interruptible) or `D` (uninterruptible) and the like: it went to sleep.
    Sleeping,
    /// `X`, `Z` or `I` after its exit: it is gone.
    Dead,
}

/// The system call a task was in, as far as a sleep's classification needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// nanosleep, clock_nanosleep: a timer ends the sleep.
    Timer,
    /// select, pselect6, poll, ppoll, epoll_wait, epoll_pwait(2): a timeout, or a descriptor.
    Poll,
    /// sched_yield.
    Yield,
    /// wait4, waitid: a child's exit.
    WaitChild,
    /// Any other system call, by number.
    Other(i64),
}

/// Which way a pipe or socket call moved bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoOp {
    /// read, recv: bytes taken out.
    Read,
    /// write, send: bytes put in.
    Write,
}

/// What carried the bytes of a recorded call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// An anonymous pipe.
    Pipe,
    /// A UNIX stream socket (a socketpair's end, or a connected one).
    UnixStream,
}

/// One read or write of a pipe or a UNIX stream socket by a recorded task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoCall {
    /// The calling task.
    pub pid: i32,
    /// Read or write.
    pub op: IoOp,
    /// Pipe or socket.
    pub transport: Transport,
    /// The object the bytes go through, as an identity: a pipe's kernel object (both ends share
    /// it), or the receiving socket (a write's peer, a read's own) — so a write and the read
    /// that takes its bytes name the same object. Only compared, never dereferenced.
    pub object: u64,
    /// The bytes the call returned (negative: an error number, as the kernel returns it).
    pub bytes: i64,
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `sched_switch` on the event's CPU: `prev` left (as `left`), `next` runs.
    Switch {
        /// The task that left the CPU (0: the idle task).
        prev: i32,
        /// How it left.
        left: LeftAs,
        /// The task that runs now (0: the idle task).
        next: i32,
        /// `prev`'s CPU time as the kernel charges it (`se.sum_exec_runtime`: what getrusage
        /// and `/proc/PID/schedstat` report), ns, read at this switch; `None` where the
        /// recorder cannot read it (tracefs) or `prev` is not recorded. A task's reading less
        /// its reading at its previous switch-out is the CPU time the kernel charged it in
        /// between.
        prev_runtime_ns: Option<u64>,
    },
    /// `sched_waking`: `waker` (the task running where the wakeup was made; 0 for the idle task
    /// or an interrupt taken while idle) began to wake `wakee`.
    Waking {
        /// The task in whose context the wakeup ran.
        waker: i32,
        /// The task being woken.
        wakee: i32,
    },
    /// `sched_process_fork`: `parent` created `child` (a process or a thread).
    Fork {
        /// The creating task.
        parent: i32,
        /// The new task.
        child: i32,
    },
    /// `sched_process_exit`: `pid` is exiting (it still leaves its CPU once, as dead).
    Exit {
        /// The exiting task.
        pid: i32,
    },
    /// `sched_migrate_task`: `pid` was moved to `dest_cpu`.
    Migrate {
        /// The moved task.
        pid: i32,
        /// Its new CPU.
        dest_cpu: u32,
    },
    /// `raw_syscalls:sys_enter` of a call the recorder watches.
    SysEnter {
        /// The calling task.
        pid: i32,
        /// Which call.
        call: Call,
    },
    /// `raw_syscalls:sys_exit` of a call the recorder watches.
    SysExit {
        /// The calling task.
        pid: i32,
    },
    /// A pipe or socket call began (its fields are those it returned with: the recorder writes
    /// one record at the return, with the entry time).
    IoEnter {
        /// The call.
        io: IoCall,
    },
    /// The same call returned.
    IoExit {
        /// The call.
        io: IoCall,
    },
}

/// One event with its time and CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedEvent {
    /// CLOCK_MONOTONIC, ns.
    pub ts_ns: u64,
    /// The CPU it was recorded on.
    pub cpu: u32,
    /// What happened.
    pub kind: EventKind,
}

/// A whole recording: the events in time order, what was recorded, and how faithfully.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    /// The events, in time order.
    pub events: Vec<SchedEvent>,
    /// The tasks recorded from the start (the command's first process, or every thread of
    /// `--pid`); the tasks they create are recorded through their `Fork` events.
    pub roots: Vec<i32>,
    /// Task names by id (`comm`), for readable group names.
    pub names: std::collections::HashMap<i32, String>,
    /// When recording started and stopped, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// When recording stopped.
    pub stop_ns: u64,
    /// Events the kernel dropped (its per-CPU `overrun` and `dropped events` counters).
    pub lost: u64,
    /// What was recorded: the command line, or `--pid N`.
    pub source: String,
    /// The kernel release (`uname -r`).
    pub kernel: String,
    /// Online CPUs.
    pub cpus: usize,
    /// When recording started, as UTC text (RFC 3339).
    pub started_utc: String,
    /// How the events were recorded (tracefs, or BPF), in words for the file's header.
    pub via: String,
}
