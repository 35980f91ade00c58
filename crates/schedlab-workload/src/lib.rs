//! The workload model of schedlab: what an experiment *is*, independent of where it runs.
//!
//! A workload is a set of named task groups ([`plan::Plan`]); every task runs a task body, an
//! `async` function written once against the [`Context`] trait. The real backend
//! (`schedlab-real`) drives each body on its own OS thread or process, where every context call is
//! the real blocking system call; a simulator drives the same future as a coroutine and resumes it
//! when the simulated CPU has given it the time or the message it waits for.
//!
//! This crate also holds the vocabulary both backends share: per-group [`knobs`] (with one
//! [`CpuSet`] type), typed [`error`]s in the model's words, the [`record`] that every run
//! writes (with its published JSON Schema, [`schema`]), and the presets in [`presets`]
//! (messaging, chat, pingpong, yield, interbench), each declaring its parameters once
//! ([`presets::Preset`]).
//!
//! ```
//! use schedlab_workload::{presets::Messaging, Workload};
//! let w = Messaging { groups: 1, fds: 2, loops: 3, ..Messaging::default() };
//! let plan = w.plan();
//! assert_eq!(plan.total_tasks(), 4);
//! assert_eq!(w.expected_messages(), 1 * 2 * 2 * 3);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod context;
pub mod cpuset;
pub mod dcache;
pub mod duration;
pub mod error;
pub mod knobs;
pub mod mem_access;
pub mod passes;
pub mod plan;
pub mod presets;
pub mod record;
pub mod sched_events;
pub mod schema;
pub mod suggest;
pub mod table;
pub mod timeline;
pub mod web;

pub use context::{
    BarrierId, ChannelId, ChildExit, CondId, Context, CpuTimes, Daemon, FileRead, IoKind, LockId,
    LoopCalibration, PathOp, Program, ProgramExit, SemaphoreId, WordId, WorkloadError,
};
pub use cpuset::CpuSet;
pub use error::{KnobError, ParamError, ValueError};
pub use mem_access::{ChasePattern, MemAccess, MemAccessKind, SharedBuffers};
pub use plan::{ChannelVolume, Plan, SyncPlan, TaskMode, TaskRef, Transport};
pub use presets::Workload;
