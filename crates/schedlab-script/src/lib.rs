//! Workload files: a user's own task mix, described once and run like a shipped workload —
//! repeated, counted, compared — on the real kernel and on every simulated policy.
//!
//! Two grammars are read into one [`model`]: schedlab's TOML step language
//! (`docs/workload-files.md`) and rt-app's JSON (rt-app's `doc/tutorial.txt`), both strictly —
//! an unknown key, a wrong type or a reference to nothing is an error at its `file:line:column`,
//! never a silent default. Expressions ([`expr`]) carry units and are compiled per
//! configuration.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod error;
pub mod expr;
pub mod model;
pub mod rtapp;
pub mod span;

pub use error::{Diagnostic, FileError};
pub use model::ScriptDef;
