//! Per-pass timing of a task body, for rt-app's per-task logs (`--rt-app-logs`).
//!
//! rt-app (github.com/scheduler-tools/rt-app, `thread_body` and `run_event` in `src/rt-app.c`,
//! `log_timing` in `src/rt-app_utils.c`) writes one row per *phase pass* of every thread: when
//! the pass started and ended, the wall time of its `run` events, the slack and wake-up latency
//! of its timer events, and what the file asked for (`c_duration`, `c_period`). A body that
//! can give such rows (a workload file's interpreter) asks [`crate::Context::logs_passes`] once
//! and, when it is on, hands each pass to [`crate::Context::log_pass`], measured where the
//! backend runs the task: on the real kernel with the task's own thread's CLOCK_MONOTONIC, as
//! rt-app does; on the simulator with the simulated clock. When it is off (the default), the
//! body takes no extra clock readings.
//!
//! A task keeps at most [`MAX_PASSES`] rows; later passes are counted in
//! [`PassLog::dropped`] and not kept (the first rows are rt-app's start of the run; a log
//! writer says how many are missing).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The most pass rows one task keeps (48 bytes each: 4.8 MB a task at most). rt-app writes
/// every row as it goes; a task of 1 ms passes fills this in 100 s.
pub const MAX_PASSES: usize = 100_000;

/// One phase pass, in rt-app's units: microseconds, each event's time rounded to the nearest
/// microsecond before it is summed, as rt-app sums them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassRecord {
    /// When the pass started, since the run's epoch (ns).
    pub start_ns: u64,
    /// When it ended, since the run's epoch (ns).
    pub end_ns: u64,
    /// rt-app's `perf`: loop iterations its calibrated busy loop would have run for the pass's
    /// `run` events (0 without an integer calibration).
    pub perf: u64,
    /// Wall time of the pass's `run`/`runtime` events (µs).
    pub run_us: u64,
    /// The last timer's slack (or the sum, with `cumulative_slack`): its activation minus the
    /// time it was reached (µs; negative when late).
    pub slack_us: i64,
    /// The `run`/`runtime` the file asked for in this pass (µs).
    pub c_duration_us: u64,
    /// The timer periods the file asked for in this pass (µs).
    pub c_period_us: u64,
    /// How late the task woke after its timers' activations, summed; 0 when a timer of the
    /// pass found the task already late, as rt-app resets it (µs).
    pub wu_lat_us: u64,
}

/// How a task came to run, which names its log: rt-app names a thread the run starts with
/// `TASK-INDEX` and one a `fork` event creates `TASK-INDEX-NNNN` (`create_thread` in rt-app.c).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Start {
    /// Started with the run.
    #[default]
    WithRun,
    /// Started by a fork, this long after the run's epoch (ns).
    Forked {
        /// When its fork started it.
        at_ns: u64,
    },
    /// Waiting for a fork that never came before the run ended: rt-app would never have
    /// created the thread, so it has no log.
    NotForked,
}

/// The [`Start`] of a task a fork starts: at `at` since the epoch, or never (`None`).
pub fn forked_at(at: Option<Duration>) -> Start {
    match at {
        Some(t) => Start::Forked {
            at_ns: u64::try_from(t.as_nanos()).unwrap_or(u64::MAX),
        },
        None => Start::NotForked,
    }
}

/// The pass rows of one task.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassLog {
    /// How the task came to run ([`crate::Context::log_fork`]).
    #[serde(default)]
    pub start: Start,
    /// The clock the backend measured the rows with, at the run's epoch (ns): CLOCK_MONOTONIC
    /// on the real kernel, 0 on the simulator. rt-app's `start` and `end` are on it.
    pub epoch_ns: u64,
    /// The rows, in order; at most [`MAX_PASSES`].
    pub rows: Vec<PassRecord>,
    /// Passes not kept because `rows` was full.
    pub dropped: u64,
}

impl PassLog {
    /// An empty log on a clock that reads `epoch_ns` at the run's epoch.
    pub fn new(epoch_ns: u64) -> PassLog {
        PassLog {
            epoch_ns,
            ..PassLog::default()
        }
    }

    /// Keep `row`, or count it dropped when [`MAX_PASSES`] are kept.
    pub fn push(&mut self, row: PassRecord) {
        if self.rows.len() < MAX_PASSES {
            self.rows.push(row);
        } else {
            self.dropped += 1;
        }
    }
}

/// A duration in whole microseconds, rounded to the nearest (rt-app's `timespec_to_usec`,
/// `lround` of ns / 1000).
pub fn micros(d: Duration) -> u64 {
    ((d.as_nanos() + 500) / 1000) as u64
}

/// A signed difference `a - b` in whole microseconds, rounded half away from zero (rt-app's
/// `timespec_to_usec_long`, `round`).
pub fn signed_micros(a: Duration, b: Duration) -> i64 {
    if a >= b {
        micros(a - b) as i64
    } else {
        -(micros(b - a) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_rt_apps() {
        assert_eq!(micros(Duration::from_nanos(1499)), 1);
        assert_eq!(micros(Duration::from_nanos(1500)), 2);
        let (a, b) = (Duration::from_nanos(1000), Duration::from_nanos(3500));
        assert_eq!(signed_micros(a, b), -3);
        assert_eq!(signed_micros(b, a), 3);
    }

    #[test]
    fn a_full_log_counts_what_it_drops() {
        let mut log = PassLog::new(7);
        for _ in 0..MAX_PASSES + 3 {
            log.push(PassRecord::default());
        }
        assert_eq!(
            (log.rows.len(), log.dropped, log.epoch_ns),
            (MAX_PASSES, 3, 7)
        );
    }
}
