//! The source of a run's wakeup and wakeup-preemption counts: the in-kernel BPF counters
//! ([`crate::bpf`], the default where they load) or the tracefs replay ([`crate::trace`]).
//! Both count the same tasks (those whose name starts with the runner's comm prefix) and give
//! the same per-thread [`TraceCounts`]; [`WakeupCounter::source`] names the one used, and the
//! record keeps that name.

use crate::bpf::{BpfError, BpfWakeups};
use crate::trace::{SchedTrace, TraceCounts, TraceError};
use std::collections::HashSet;
use thiserror::Error;

/// Why counting failed, from either source.
#[derive(Debug, Error)]
pub enum WakeupError {
    /// The in-kernel counters.
    #[error(transparent)]
    Bpf(#[from] BpfError),
    /// The tracefs replay.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// One of the two wakeup-count sources, opened once per run and started and collected per
/// repetition.
#[derive(Debug)]
pub enum WakeupCounter {
    /// A BPF program on `sched_wakeup`, aggregating in the kernel.
    Bpf(Box<BpfWakeups>),
    /// A private tracefs instance recording `sched_waking`, `sched_wakeup` and `sched_switch`.
    Tracefs(SchedTrace),
    /// Both at once over the same repetitions, to check one against the other: the counts
    /// given are the BPF ones, and each repetition's pair (BPF, tracefs) is kept for
    /// [`WakeupCounter::last_pair`]. (Running both costs what the tracefs replay costs.)
    Compare {
        /// The in-kernel counters.
        bpf: Box<BpfWakeups>,
        /// The tracefs replay.
        trace: SchedTrace,
        /// The last repetition's counts: (BPF, tracefs).
        last: Option<Box<(TraceCounts, TraceCounts)>>,
    },
}

impl WakeupCounter {
    /// Forget earlier counts and start counting.
    pub fn start(&mut self) -> Result<(), WakeupError> {
        match self {
            WakeupCounter::Bpf(b) => Ok(b.start()?),
            WakeupCounter::Tracefs(t) => Ok(t.start()?),
            WakeupCounter::Compare { bpf, trace, .. } => {
                // The replay's buffer is cleared first, so that both windows open together.
                trace.start()?;
                Ok(bpf.start()?)
            }
        }
    }

    /// Stop counting.
    pub fn stop(&mut self) -> Result<(), WakeupError> {
        match self {
            WakeupCounter::Bpf(b) => Ok(b.stop()?),
            WakeupCounter::Tracefs(t) => Ok(t.stop()?),
            WakeupCounter::Compare { bpf, trace, .. } => {
                bpf.stop()?;
                Ok(trace.stop()?)
            }
        }
    }

    /// The counts of `tids` since [`start`](Self::start).
    pub fn collect(&mut self, tids: &HashSet<i32>) -> Result<TraceCounts, WakeupError> {
        match self {
            WakeupCounter::Bpf(b) => Ok(b.collect(tids)?),
            WakeupCounter::Tracefs(t) => Ok(t.collect(tids)?),
            WakeupCounter::Compare { bpf, trace, last } => {
                let b = bpf.collect(tids)?;
                let t = trace.collect(tids)?;
                *last = Some(Box::new((b.clone(), t)));
                Ok(b)
            }
        }
    }

    /// The source's description, as the record names it.
    pub fn source(&self) -> String {
        match self {
            WakeupCounter::Bpf(b) => b.source(),
            WakeupCounter::Tracefs(t) => t.source(),
            WakeupCounter::Compare { bpf, trace, .. } => {
                format!("{}, checked against a {}", bpf.source(), trace.source())
            }
        }
    }

    /// With [`WakeupCounter::Compare`], the last repetition's counts from both sources
    /// (BPF, tracefs); `None` otherwise or before the first repetition.
    pub fn last_pair(&self) -> Option<&(TraceCounts, TraceCounts)> {
        match self {
            WakeupCounter::Compare { last, .. } => last.as_deref(),
            _ => None,
        }
    }
}
