//! schedlab's experiment layer: everything between a parsed command line and a result record.
//!
//! The binary parses its arguments into an [`ExperimentRequest`] (plain typed values, no clap),
//! and [`build`](fn@build) turns that, once, into an [`Experiment`]: every configuration of a run or a
//! sweep — the workload with its parameters, each group's knobs, the machine it runs on — checked
//! before anything starts (ripgrep's low-level → high-level arguments). [`measure`](fn@measure) then runs
//! the configurations' repetitions, interleaved, through a [`Backend`]: the real kernel
//! ([`RealBackend`]), a simulated machine ([`SimBackend`]), or in tests a mock (hyperfine's
//! `Executor`/`MockExecutor`), and keeps the record up to date after every repetition.
//!
//! Where a change goes: a workload parameter — the preset's own file
//! (`schedlab_workload::presets`); a knob — `schedlab_workload::knobs`; a simulated policy — its
//! file in `schedlab_sim::policy` and one registry line; a metric — the workload's
//! `metric_defs`/`metrics`; a backend — one more [`Backend`] implementation.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod backend;
pub mod build;
pub mod calibrate;
pub mod error;
pub mod measure;
pub mod merge;
pub mod mock;
pub mod outdir;
pub mod real;
pub mod search;
pub mod settings;
pub mod shard;
pub mod sim;
pub mod validate;
pub mod vary;

pub use backend::{Backend, RepDetail, RepError, RepInput, RepOutput};
pub use build::{
    build, build_from, BackendRequest, Config, Experiment, ExperimentRequest, SimRequest,
};
pub use error::ExperimentError;
pub use measure::{measure, Progress, RepetitionCount, RunEnd};
pub use outdir::OutDir;
pub use real::RealBackend;
pub use settings::{Budget, CounterMode, Settings};
pub use shard::{Shard, ShardArg};
pub use sim::{SimBackend, SimMachine};
pub use vary::{KnobKey, MachineKey, Variation, VaryKey};
