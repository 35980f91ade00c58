//! What a timer sleep's own call leaves in a recorded `compute`, measured on this machine.
//!
//! A recorded task's CPU time is what the kernel charged it between two of its switch-outs
//! (`se.sum_exec_runtime` read at each, by the BPF recorder) or, through tracefs, the time
//! between its switch-in and its switch-out (the kernel's `sched_switch`,
//! `include/trace/events/sched.h`); either way the `compute` before a recorded sleep holds the
//! part of the sleeping call the task ran on its CPU: returning from the sleep before and
//! entering this one (arming the timer up to `schedule()`). The replay's own sleep pays that
//! again. To know how much to take off, the recorder records a sleeper of its own through the
//! same source: a forked child that does nothing but sleep (as long at a time as the program's
//! median timer sleep, within [`PROBE_SLEEP_NS`], `clock_nanosleep` on CLOCK_MONOTONIC to an
//! absolute deadline read just before, as the replay's `sleep` does), so each of its passes,
//! from one switch-out to sleep to the next, is that cost alone, measured as the recording
//! measures the program's; [`in_window_ns`] takes the median of the passes. The length
//! matters: the longer a task slept, the colder its caches and the more its return costs
//! (measured on a loaded 2-CPU VM, a C loop of `clock_nanosleep`: 12-15 us a pass at 200 us,
//! 14-18 us at 488 us, 20 us at 1 ms).

use super::record::{record_from, RecordError, Source, Target};
use schedlab_workload::sched_events::{EventKind, LeftAs, SchedEvent};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The shortest and the longest of the probe's sleeps, ns (the program's median timer sleep is
/// brought into this range).
pub const PROBE_SLEEP_NS: std::ops::RangeInclusive<u64> = 50_000..=5_000_000;
/// How long the probe is recorded at least; longer for long sleeps (a hundred of them).
pub const PROBE_FOR: Duration = Duration::from_millis(300);

/// The probe's sleep for a program whose median timer sleep is `median_ns`, ns, and how long
/// it is recorded (enough for twice [`MIN_PASSES`] passes; at most 0.5 s).
pub fn probe_plan(median_ns: u64) -> (u64, Duration) {
    let sleep = median_ns.clamp(*PROBE_SLEEP_NS.start(), *PROBE_SLEEP_NS.end());
    let long = Duration::from_nanos(sleep * 2 * MIN_PASSES as u64);
    (sleep, PROBE_FOR.max(long))
}
/// Fewest whole passes the median is taken over.
pub const MIN_PASSES: usize = 50;

/// The median CPU time of `tid`'s passes in `events`, ns: the CPU time from one of its
/// switch-outs to sleep to the next — the kernel's (the difference of the two switches'
/// `prev_runtime_ns`) where both switches carry it, else the on-CPU time between switch-ins and
/// switch-outs (preemptions in between summed) — the partial pass before the first such
/// switch-out left out. `None` with fewer than [`MIN_PASSES`] passes.
pub fn in_window_ns(events: &[SchedEvent], tid: i32) -> Option<u64> {
    let mut passes = Vec::new();
    let mut on_since = None;
    let mut pass = 0u64;
    let mut whole = false;
    // The kernel's runtime of the task at its last switch-out to sleep.
    let mut charged_at_sleep: Option<u64> = None;
    for e in events {
        let EventKind::Switch {
            prev,
            left,
            next,
            prev_runtime_ns,
        } = e.kind
        else {
            continue;
        };
        if prev == tid {
            if let Some(since) = on_since.take() {
                pass += e.ts_ns.saturating_sub(since);
            }
            if left == LeftAs::Sleeping {
                if whole {
                    let charged = charged_at_sleep
                        .zip(prev_runtime_ns)
                        .map(|(before, now)| now.saturating_sub(before));
                    passes.push(charged.unwrap_or(pass));
                }
                whole = true;
                pass = 0;
                charged_at_sleep = prev_runtime_ns;
            }
        }
        if next == tid {
            on_since = Some(e.ts_ns);
        }
    }
    if passes.len() < MIN_PASSES {
        return None;
    }
    passes.sort_unstable();
    Some(passes[passes.len() / 2])
}

/// Why the probe gave no figure.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// fork failed.
    #[error("cannot start the sleeper: {0}")]
    Fork(std::io::Error),
    /// Recording it failed.
    #[error("recording the sleeper failed: {0}")]
    Record(#[from] RecordError),
    /// Too few of its passes were recorded.
    #[error("fewer than {MIN_PASSES} of the sleeper's passes were recorded in {0:?}")]
    TooFewPasses(Duration),
}

/// Record a sleeper of our own, sleeping as [`probe_plan`]`(median_sleep_ns)` says (the
/// program's median timer sleep), through `source` (with `buffer_mb` of ring buffer) and
/// return what one of its timer sleeps leaves in the compute, ns. The sleeper is killed and
/// reaped before this returns, whatever happened; it also dies with this process.
pub fn timer_sleep_ns(
    source: Source,
    buffer_mb: u32,
    stop: &AtomicBool,
    median_sleep_ns: u64,
) -> Result<u64, ProbeError> {
    let (sleep_ns, duration) = probe_plan(median_sleep_ns);
    let child = fork_sleeper(sleep_ns).map_err(ProbeError::Fork)?;
    let recorded = record_from(
        &Target::Pid {
            pid: child,
            duration,
        },
        source,
        buffer_mb,
        false,
        stop,
    );
    // SAFETY: kill and waitpid on our own child's pid, which is ours until reaped here.
    unsafe {
        libc::kill(child, libc::SIGKILL);
        libc::waitpid(child, std::ptr::null_mut(), 0);
    }
    in_window_ns(&recorded?.events, child).ok_or(ProbeError::TooFewPasses(duration))
}

/// Fork a child that sleeps `sleep_ns` at a time until it is killed (or its parent dies). The
/// child calls only async-signal-safe functions (prctl, clock_gettime, clock_nanosleep), as a
/// fork of a process that may have threads must.
fn fork_sleeper(sleep_ns: u64) -> std::io::Result<i32> {
    // SAFETY: fork has no preconditions; the child below runs only async-signal-safe calls on
    // its own stack variables and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid > 0 {
        return Ok(pid);
    }
    // SAFETY: the child: plain system calls on local values; it ends by a signal or _exit.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        loop {
            if libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) != 0 {
                libc::_exit(1);
            }
            let ns = ts.tv_nsec as u64 + sleep_ns;
            ts.tv_sec += (ns / 1_000_000_000) as libc::time_t;
            ts.tv_nsec = (ns % 1_000_000_000) as libc::c_long;
            while libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            ) == libc::EINTR
            {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(ts_ns: u64, prev: i32, left: LeftAs, next: i32) -> SchedEvent {
        SchedEvent {
            ts_ns,
            cpu: 0,
            kind: EventKind::Switch {
                prev,
                left,
                next,
                prev_runtime_ns: None,
            },
        }
    }

    #[test]
    fn the_probe_sleeps_as_the_program_did_within_bounds() {
        assert_eq!(probe_plan(488_000), (488_000, PROBE_FOR));
        assert_eq!(probe_plan(1_000), (50_000, PROBE_FOR));
        assert_eq!(
            probe_plan(u64::MAX),
            (5_000_000, Duration::from_millis(500))
        );
    }

    #[test]
    fn with_the_kernels_runtime_a_pass_is_what_the_kernel_charged() {
        // 60 passes of 1000 ns between switch-in and switch-out, for which the kernel charged
        // 1400 ns each (its charge runs from before the switch-in); the first pass is partial.
        let mut e = Vec::new();
        let mut t = 0;
        let mut runtime = 500;
        for _ in 0..61 {
            e.push(sw(t, 0, LeftAs::Runnable, 7));
            e.push(SchedEvent {
                ts_ns: t + 1_000,
                cpu: 0,
                kind: EventKind::Switch {
                    prev: 7,
                    left: LeftAs::Sleeping,
                    next: 0,
                    prev_runtime_ns: Some(runtime),
                },
            });
            runtime += 1_400;
            t += 20_000;
        }
        assert_eq!(in_window_ns(&e, 7), Some(1_400));
    }

    #[test]
    fn the_passes_median_is_the_on_cpu_time_between_two_sleeps() {
        // A partial first pass (300 ns), then 60 passes of 1000 ns on CPU (the odd ones
        // preempted once halfway), one of 9000 ns, and a pass never finished.
        let mut e = vec![
            sw(0, 0, LeftAs::Runnable, 7),
            sw(300, 7, LeftAs::Sleeping, 0),
        ];
        let mut t = 10_000;
        for i in 0..61 {
            let on = if i == 60 { 9_000 } else { 1_000 };
            e.push(sw(t, 0, LeftAs::Runnable, 7));
            if i % 2 == 1 {
                e.push(sw(t + 500, 7, LeftAs::Runnable, 9));
                e.push(sw(t + 2_500, 9, LeftAs::Sleeping, 7));
                e.push(sw(t + 2_000 + on, 7, LeftAs::Sleeping, 0));
            } else {
                e.push(sw(t + on, 7, LeftAs::Sleeping, 0));
            }
            t += 20_000;
        }
        e.push(sw(t, 0, LeftAs::Runnable, 7));
        assert_eq!(in_window_ns(&e, 7), Some(1_000));
        // Another task's switches count for nothing; too few passes give no figure.
        assert_eq!(in_window_ns(&e, 9), None);
        assert_eq!(in_window_ns(&e[..20], 7), None);
    }
}
