//! Workload files: a user's own task mix, described once and run like a shipped workload —
//! repeated, counted, compared — on the real kernel and on every simulated policy.
//!
//! Two grammars are read into one [`model`]: schedlab's TOML step language
//! (`docs/workload-files.md`) and rt-app's JSON (rt-app's `doc/tutorial.txt`), both strictly —
//! an unknown key, a wrong type or a reference to nothing is an error at its `file:line:column`,
//! never a silent default. [`toml_file::read`] reads the first. Expressions ([`expr`]) carry units and are compiled per
//! configuration.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod error;
pub mod expr;
pub mod from_trace;
pub mod model;
pub mod original;
pub mod rtapp;
pub mod span;
pub mod toml_file;

pub use error::{Diagnostic, FileError};
pub use model::ScriptDef;
pub mod compile;
mod dry;
pub mod intern;
pub mod interp;
pub mod program;
pub mod script;
pub use script::Script;
pub mod describe;
mod load;
pub use load::{load, MAX_FILE_BYTES};
