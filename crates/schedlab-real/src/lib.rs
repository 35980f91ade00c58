//! The real backend of schedlab: a workload's task bodies run on OS threads or forked processes
//! of the running Linux kernel, every context call being the real blocking system call.
//!
//! - [`runner::run_repetition`] builds a plan's channels, starts its tasks, applies each group's
//!   knobs ([`knobs`]), releases them together and measures them, under a supervisor.
//! - Counters come from `/proc/thread-self/sched` ([`procfs`]) and getrusage; wakeups and
//!   wakeup preemptions from BPF programs on the wakeup tracepoints that count in the kernel
//!   ([`bpf`]) or, where BPF cannot load, from the sched_wakeup/sched_switch tracepoints in a
//!   private tracefs instance ([`trace`]); [`wakeups`] is the choice between the two.
//! - [`machine`] describes the machine and probes what it lets us measure; [`host`] holds the
//!   facts that decide whether a run can start (open-file limit, memory, disk, CPUs). Every
//!   file of /proc is read through [`procfs`].
//! - [`sync`] holds a plan's barriers, semaphores and condition variables (threads only).
//! - [`leftovers::cleanup`], called before every command, removes what killed runs left
//!   (temporary directories, tracefs instances and mounts).
//! - Errors are typed ([`RunError`], [`trace::TraceError`], [`knobs::KnobError`],
//!   [`host::HostError`], [`runner::HostingError`], [`spawn::ChildError`],
//!   [`spawn::SpawnReportError`], [`daemon::DaemonEnded`], [`locks::StatsSwitchError`]), each
//!   naming the value, path or setting at fault, and name no command-line flag: the binary adds
//!   those.
#![deny(missing_docs)]

pub mod bpf;
pub mod busy_loop;
pub mod calibrate;
pub mod compute;
pub mod context;
pub mod daemon;
pub mod executor;
mod gate;
pub mod host;
mod hosts;
pub mod interference;
pub mod knobs;
pub mod leftovers;
pub mod locks;
pub mod machine;
pub mod mem_access;
pub mod procfs;
pub mod program;
mod repetition;
pub mod report;
pub mod run_group;
pub mod runner;
pub mod spawn;
pub mod supervisor;
pub mod sync;
pub mod sys;
mod task;
pub mod taskgroup;
pub mod tempdir;
pub mod trace;
pub mod transport;
pub mod wakeups;

pub use runner::{run_repetition, RepetitionResult, RepetitionSetup, RunError};
