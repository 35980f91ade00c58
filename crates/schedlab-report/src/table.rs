//! The aligned text table every text output uses. It lives in `schedlab_workload::table`, so
//! that a workload's own seed tables (declared in its preset file) render the same way; it is
//! re-exported here for the report's modules.

pub use schedlab_workload::table::{num, Table};
