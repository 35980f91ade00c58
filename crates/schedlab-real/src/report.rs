//! What a task is known by and what it reports: its thread name ([`COMM_PREFIX`], which the
//! tracefs filter selects on) and the `TaskReport` it sends back to the supervisor, framed
//! for a pipe. Both the starting tasks (`crate::task`) and the spawned ones ([`crate::spawn`])
//! write them; the supervisor reads them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The prefix of every task's thread name (comm); the tracefs filter selects on it.
pub const COMM_PREFIX: &str = "sl-";

/// The thread name (comm) of task `index` of group `group`.
pub(crate) fn comm(group: &str, index: usize) -> String {
    format!("{COMM_PREFIX}{group}{index}")
}

/// What each task sends back to the parent (a starting task through its pipe or channel, a
/// spawned one through [`crate::spawn`]'s reports).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct TaskReport {
    pub id: usize,
    pub pid: i32,
    pub tid: i32,
    pub error: Option<String>,
    pub samples: BTreeMap<String, Vec<f64>>,
    pub cpu_ns: u64,
    pub finished_ns: u64,
    /// Voluntary and involuntary switches from just before the start gate (a spawned task:
    /// its start) to the body's end.
    pub voluntary: u64,
    pub involuntary: u64,
    /// Migrations, read by a spawned task itself at its end (a starting task's are read by
    /// the parent at the end gate).
    #[serde(default)]
    pub migrations: Option<u64>,
    /// The body's pass rows, when the run keeps them.
    #[serde(default)]
    pub passes: schedlab_workload::passes::PassLog,
    /// The thread's timer slack (ns) when its body ended, as the kernel had it (0 for a
    /// real-time thread).
    #[serde(default)]
    pub timer_slack_ns: Option<u64>,
    /// What its cumulative computes asked and found, if it ran any.
    #[serde(default)]
    pub cumulative: Option<crate::compute::CumulativeUse>,
}

/// Send one report up a result pipe, length-prefixed; whether it was written whole.
pub(crate) fn write_report(fd: i32, rep: &TaskReport) -> bool {
    let json = serde_json::to_vec(rep).unwrap_or_default();
    let mut msg = (json.len() as u64).to_le_bytes().to_vec();
    msg.extend_from_slice(&json);
    crate::sys::write_all(fd, &msg).is_ok()
}

/// Move every complete length-prefixed report out of `buf` into `out`; how many were moved.
pub(crate) fn take_reports(
    buf: &mut Vec<u8>,
    out: &mut Vec<TaskReport>,
) -> Result<usize, serde_json::Error> {
    let mut at = 0;
    let mut got = 0;
    while buf.len() >= at + 8 {
        let len = u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes")) as usize;
        if buf.len() < at + 8 + len {
            break;
        }
        let r: TaskReport = match serde_json::from_slice(&buf[at + 8..at + 8 + len]) {
            Ok(r) => r,
            Err(e) => {
                buf.drain(..at);
                return Err(e);
            }
        };
        out.push(r);
        got += 1;
        at += 8 + len;
    }
    buf.drain(..at);
    Ok(got)
}
