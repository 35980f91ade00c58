//! schedlab's output: text tables for the terminal, SVG charts, the HTML report (`html`), the
//! result record's JSON export, and the summary's CSV and Markdown exports.
//! Everything here reads only result records ([`schedlab_workload::record`]).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod export;
pub mod export_csv;
pub mod export_wis;
pub mod html;
pub mod markdown;
pub mod ministat;
pub mod output;
pub mod palette;
pub mod plot;
pub mod rtapp_log;
pub mod search;
pub mod seed;
pub mod sweep;
pub mod table;
pub mod text;
pub mod timeline;
pub mod units;
