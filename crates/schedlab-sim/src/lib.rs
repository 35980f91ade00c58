//! schedlab's simulator (work in progress in this commit).
#![deny(missing_docs)]

pub mod policy;
