//! schedlab's simulator: a seeded discrete-event machine that runs the same task bodies as the
//! real backend, under a scheduling policy of the seed documents' era or of today.
//!
//! - [`engine`]: the event queue and the executor of task bodies (knows nothing of scheduling);
//! - [`context`]: the [`schedlab_workload::Context`] a body runs against on the simulator;
//! - [`machine`]: CPUs, clock, accounting, the wakeup and switch paths (the mechanism);
//! - [`cost`]: what things cost, in named profiles;
//! - [`topology`]: sockets, cores and SMT threads, and how far apart two CPUs are;
//! - [`policy`]: the policy trait (like the kernel's `struct sched_class`) and one file per
//!   policy.
//!
//! Same inputs and seed → byte-identical results.
//!
//! ```
//! use schedlab_sim::{cost::CostModel, machine::{run_repetition, SimSetup}, policy::PolicySpec};
//! use schedlab_workload::{presets::PingPong, knobs::Knobs, Workload};
//! let w = PingPong { loops: 100, ..PingPong::default() };
//! let spec: PolicySpec = "cfs".parse().unwrap();
//! let cost = CostModel::profile("modern").unwrap();
//! let knobs = vec![Knobs::default(); 2];
//! let setup = SimSetup::new(&spec, 2, &cost, &knobs);
//! let r = run_repetition(&w, setup).unwrap();
//! assert_eq!(w.metrics(&r.outcome).unwrap()["round_trips"], 100.0);
//! ```
#![deny(missing_docs)]
// No unsafe code but, each with its SAFETY comment: the prefetch hint (`prefetch.rs`), which
// dereferences nothing; two conditional moves on registers (`engine::lesser`, `vmin` in
// `policy/ds/deadline_tree.rs`); and the allocator's huge-page advice (`huge_pages.rs`).
#![deny(unsafe_code)]

pub mod context;
pub mod cost;
pub mod engine;
pub mod huge_pages;
pub mod machine;
pub mod policy;
#[allow(unsafe_code)]
pub mod prefetch;
pub mod profile_file;
pub mod skb;
pub mod topology;

pub use machine::{
    check_setup, run_repetition, SimError, SimResult, SimSetup, KERNEL_GROUP, NETISR_PRIORITY,
};
