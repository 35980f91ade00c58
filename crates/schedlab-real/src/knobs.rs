//! Applying a group's knobs to the calling thread: setpriority for nice, sched_setattr for
//! policies, real-time priorities, SCHED_DEADLINE and EEVDF custom slices (a fair task's
//! `sched_runtime`, Linux 6.12+), sched_setaffinity for CPU lists, and sched_setattr's
//! utilization clamps (`util-min`, `util-max`; rt-app's `_set_thread_uclamp`) where the kernel
//! has them ([`uclamp_supported`]), and the thread's taskgroup ([`crate::taskgroup`]); the
//! thread's timer slack (PR_SET_TIMERSLACK, [`apply_timer_slack`]).
//!
//! Every failure names the knob and, for permission errors, the capability it needs.

use crate::sys::{self, SchedAttr, SCHED_DEADLINE};
use schedlab_workload::knobs::{format_cpu_list, Knobs, SchedPolicy, TimerSlack};
use std::cell::Cell;
use std::io;
use std::sync::OnceLock;
use thiserror::Error;

/// Why a knob could not be applied; the text names the knob (`nice=-5`, `cpus=0-1`,
/// `policy=fifo:10`) and, for permission errors, the capability it needs.
#[derive(Debug, Error)]
pub enum KnobError {
    /// sched_setaffinity refused the CPU list.
    #[error(
        "cpus={cpus}: sched_setaffinity failed: {source} (CPUs outside this cgroup's cpuset?)"
    )]
    Affinity {
        /// The CPU list, as the user writes it.
        cpus: String,
        /// The system's error.
        source: io::Error,
    },
    /// The caller lacks the privilege the knob needs.
    #[error("{knob}: permission denied; this knob needs {needs}")]
    PermissionDenied {
        /// The knobs asked for.
        knob: String,
        /// The capability or limit that would allow it.
        needs: &'static str,
    },
    /// SCHED_DEADLINE's admission control refused the reservation.
    #[error("{knob}: SCHED_DEADLINE admission control refused it (runtime/period exceeds the free bandwidth of these CPUs)")]
    DeadlineAdmission {
        /// The knobs asked for.
        knob: String,
    },
    /// The kernel rejected a custom slice.
    #[error("{knob}: the kernel rejected the custom slice (EEVDF slices need Linux 6.12 or later): {source}")]
    SliceRejected {
        /// The knobs asked for.
        knob: String,
        /// The system's error.
        source: io::Error,
    },
    /// The kernel accepted a custom slice but did not keep it (before Linux 6.12).
    #[error("slice: the kernel did not keep the custom slice (asked {asked} ns, has {has} ns); EEVDF custom slices need Linux 6.12 or later")]
    SliceNotKept {
        /// The slice asked for, ns.
        asked: u64,
        /// The slice read back, ns.
        has: u64,
    },
    /// Another failure of the system call applying the knob.
    #[error("{knob}: {source}")]
    Failed {
        /// The knobs asked for.
        knob: String,
        /// The system's error.
        source: io::Error,
    },
    /// The kernel has no utilization clamping.
    #[error("{knob}: this kernel has no utilization clamping: sched_setattr with SCHED_FLAG_UTIL_CLAMP_MIN/MAX fails with EOPNOTSUPP (it was built without CONFIG_UCLAMP_TASK)")]
    NoUclamp {
        /// The knobs asked for.
        knob: String,
    },
    /// sched_getattr failed.
    #[error("sched_getattr: {0}")]
    GetAttr(io::Error),
    /// The thread trying the knobs panicked.
    #[error("probe thread panicked")]
    ProbePanicked,
    /// The thread could not join its taskgroup (rt-app's `taskgroup`).
    #[error("taskgroup={name}: {source}")]
    Taskgroup {
        /// The taskgroup.
        name: String,
        /// Why.
        source: crate::taskgroup::TaskgroupError,
    },
}

/// Apply `knobs` to the calling thread. Knobs left unset are not touched.
pub fn apply_to_current_thread(knobs: &Knobs) -> Result<(), KnobError> {
    apply_sched(knobs)?;
    apply_uclamp(knobs)?;
    // After the policy, as rt-app's thread_body calls set_thread_taskgroup after
    // set_thread_param.
    if let Some(name) = &knobs.taskgroup {
        crate::taskgroup::attach_current_thread(name).map_err(|source| KnobError::Taskgroup {
            name: name.clone(),
            source,
        })?;
    }
    Ok(())
}

thread_local! {
    /// The timer slack (ns) the calling task asked for, given back after a policy change.
    static TIMER_SLACK_NS: Cell<u64> = const { Cell::new(1) };
}

/// The timer slack schedlab was started with (ns), which `timer-slack=default` gives a task:
/// read once, by the thread that creates the tasks ([`crate::runner`] asks before it creates
/// any), which never changes its own.
pub fn inherited_timer_slack_ns() -> u64 {
    static INHERITED: OnceLock<u64> = OnceLock::new();
    *INHERITED.get_or_init(sys::timer_slack_ns)
}

/// The slack, in ns, that `slack` asks for: unset is 1 ns, so that a sleep ends when asked
/// (benchmarks measure scheduling latency, not the timer's coalescing).
fn timer_slack_ns(slack: Option<TimerSlack>) -> u64 {
    match slack {
        None => 1,
        Some(TimerSlack::Ns(ns)) => ns,
        Some(TimerSlack::Inherited) => inherited_timer_slack_ns(),
    }
}

/// Give the calling thread the timer slack `slack` asks for (after its policy: the kernel
/// ignores the call for a FIFO, RR or DEADLINE thread, whose slack is 0 since Linux 6.12) and
/// remember it for [`restore_timer_slack`].
pub fn apply_timer_slack(slack: Option<TimerSlack>) {
    let ns = timer_slack_ns(slack);
    TIMER_SLACK_NS.with(|c| c.set(ns));
    sys::set_timer_slack_ns(ns);
}

/// Give the calling thread back the slack it asked for, after a `set` step changed its policy:
/// the kernel gives a thread that leaves a real-time policy the slack it was created with
/// (`default_timer_slack_ns`), not the one it had set.
pub fn restore_timer_slack() {
    sys::set_timer_slack_ns(TIMER_SLACK_NS.with(Cell::get));
}

/// The utilization clamps of `knobs` on the calling thread, keeping its policy and parameters
/// (as rt-app sets them, after the policy).
fn apply_uclamp(knobs: &Knobs) -> Result<(), KnobError> {
    if knobs.util_min.is_none() && knobs.util_max.is_none() {
        return Ok(());
    }
    let mut attr = SchedAttr {
        sched_flags: sys::SCHED_FLAG_KEEP_POLICY | sys::SCHED_FLAG_KEEP_PARAMS,
        ..SchedAttr::default()
    };
    if let Some(v) = knobs.util_min {
        attr.sched_flags |= sys::SCHED_FLAG_UTIL_CLAMP_MIN;
        attr.sched_util_min = v;
    }
    if let Some(v) = knobs.util_max {
        attr.sched_flags |= sys::SCHED_FLAG_UTIL_CLAMP_MAX;
        attr.sched_util_max = v;
    }
    let knob = clamps_text(knobs.util_min, knobs.util_max);
    sys::sched_setattr(0, &attr).map_err(|e| uclamp_error(knob, e))
}

fn clamps_text(min: Option<u32>, max: Option<u32>) -> String {
    let k = Knobs {
        util_min: min,
        util_max: max,
        ..Knobs::default()
    };
    k.to_string()
}

fn uclamp_error(knob: String, e: io::Error) -> KnobError {
    if e.raw_os_error() == Some(libc::EOPNOTSUPP) {
        return KnobError::NoUclamp { knob };
    }
    explain(
        knob,
        e,
        "CAP_SYS_NICE to raise a clamp above the limits of the task's cgroup",
    )
}

/// Whether this kernel applies utilization clamps: a throw-away thread sets its own clamps to
/// the values it has (sched_getattr's, so nothing changes) with both clamp flags; a kernel
/// without CONFIG_UCLAMP_TASK refuses with EOPNOTSUPP ([`KnobError::NoUclamp`]).
pub fn uclamp_supported() -> Result<(), KnobError> {
    std::thread::spawn(|| {
        let now = sys::sched_getattr(0).map_err(KnobError::GetAttr)?;
        let attr = SchedAttr {
            sched_flags: sys::SCHED_FLAG_KEEP_POLICY
                | sys::SCHED_FLAG_KEEP_PARAMS
                | sys::SCHED_FLAG_UTIL_CLAMP_MIN
                | sys::SCHED_FLAG_UTIL_CLAMP_MAX,
            sched_util_min: now.sched_util_min,
            sched_util_max: now.sched_util_max.max(now.sched_util_min),
            ..SchedAttr::default()
        };
        let knob = clamps_text(Some(attr.sched_util_min), Some(attr.sched_util_max));
        sys::sched_setattr(0, &attr).map_err(|e| uclamp_error(knob, e))
    })
    .join()
    .unwrap_or(Err(KnobError::ProbePanicked))
}

/// The policy, priority, nice, slice and CPUs of `knobs` on the calling thread.
fn apply_sched(knobs: &Knobs) -> Result<(), KnobError> {
    if let Some(cpus) = &knobs.cpus {
        let mut set = rustix::thread::CpuSet::new();
        for &c in cpus {
            set.set(c);
        }
        rustix::thread::sched_setaffinity(None, &set).map_err(|e| KnobError::Affinity {
            cpus: format_cpu_list(cpus),
            source: e.into(),
        })?;
    }
    if knobs.policy.is_none() && knobs.slice_ns.is_none() {
        if let Some(nice) = knobs.nice {
            // PRIO_PROCESS with who = the thread id sets one thread's nice on Linux.
            let me = rustix::thread::gettid();
            rustix::process::setpriority_process(Some(me), nice).map_err(|e| {
                explain(
                    format!("nice={nice}"),
                    e.into(),
                    "CAP_SYS_NICE (or RLIMIT_NICE) to lower nice below the current value",
                )
            })?;
        }
        return Ok(());
    }
    let policy = knobs.policy.unwrap_or(SchedPolicy::Other);
    let current = sys::sched_getattr(0).map_err(KnobError::GetAttr)?;
    let mut attr = SchedAttr {
        sched_nice: knobs.nice.unwrap_or(current.sched_nice),
        ..SchedAttr::default()
    };
    match policy {
        SchedPolicy::Other => attr.sched_policy = libc::SCHED_OTHER as u32,
        SchedPolicy::Batch => attr.sched_policy = libc::SCHED_BATCH as u32,
        SchedPolicy::Idle => attr.sched_policy = libc::SCHED_IDLE as u32,
        SchedPolicy::Fifo(p) => {
            attr.sched_policy = libc::SCHED_FIFO as u32;
            attr.sched_priority = p as u32;
        }
        SchedPolicy::Rr(p) => {
            attr.sched_policy = libc::SCHED_RR as u32;
            attr.sched_priority = p as u32;
        }
        SchedPolicy::Deadline {
            runtime,
            deadline,
            period,
        } => {
            attr.sched_policy = SCHED_DEADLINE;
            attr.sched_runtime = runtime.as_nanos() as u64;
            attr.sched_deadline = deadline.as_nanos() as u64;
            attr.sched_period = period.as_nanos() as u64;
        }
    }
    if let Some(slice) = knobs.slice_ns {
        attr.sched_runtime = slice;
    }
    let what = knobs_text(knobs);
    sys::sched_setattr(0, &attr).map_err(|e| {
        let need = if policy.is_realtime() {
            "CAP_SYS_NICE (or an RLIMIT_RTPRIO at least the priority) for real-time policies"
        } else {
            "CAP_SYS_NICE to raise priority or set a custom slice"
        };
        if e.raw_os_error() == Some(libc::EBUSY) && matches!(policy, SchedPolicy::Deadline { .. }) {
            return KnobError::DeadlineAdmission { knob: what.clone() };
        }
        if e.raw_os_error() == Some(libc::EINVAL) && knobs.slice_ns.is_some() {
            return KnobError::SliceRejected {
                knob: what.clone(),
                source: e,
            };
        }
        explain(what.clone(), e, need)
    })?;
    if let Some(slice) = knobs.slice_ns {
        // Older kernels ignore sched_runtime for fair tasks without an error: check it took.
        let back = sys::sched_getattr(0).map_err(KnobError::GetAttr)?;
        if back.sched_runtime != slice {
            return Err(KnobError::SliceNotKept {
                asked: slice,
                has: back.sched_runtime,
            });
        }
    }
    Ok(())
}

/// Restore the calling thread to SCHED_OTHER nice 0 (the supervisor's emergency brake).
pub fn demote_thread(tid: i32) -> io::Result<()> {
    sys::sched_setattr(
        tid,
        &SchedAttr {
            sched_policy: libc::SCHED_OTHER as u32,
            ..SchedAttr::default()
        },
    )
}

fn knobs_text(knobs: &Knobs) -> String {
    let mut k = knobs.clone();
    k.cpus = None;
    k.util_min = None;
    k.util_max = None;
    k.to_string()
}

fn explain(knob: String, source: io::Error, needs: &'static str) -> KnobError {
    match source.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => KnobError::PermissionDenied { knob, needs },
        _ => KnobError::Failed { knob, source },
    }
}

/// Whether this process may apply `knobs`, tried on a throw-away thread.
pub fn try_knobs(knobs: Knobs) -> Result<(), KnobError> {
    std::thread::spawn(move || apply_to_current_thread(&knobs))
        .join()
        .unwrap_or(Err(KnobError::ProbePanicked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_knob_and_the_capability() {
        let e = explain(
            "nice=-5".into(),
            io::Error::from_raw_os_error(libc::EPERM),
            "CAP_SYS_NICE",
        );
        assert_eq!(
            e.to_string(),
            "nice=-5: permission denied; this knob needs CAP_SYS_NICE"
        );
        let e = explain(
            "nice=-5".into(),
            io::Error::from_raw_os_error(libc::EINVAL),
            "x",
        );
        assert_eq!(
            e.to_string(),
            format!("nice=-5: {}", io::Error::from_raw_os_error(libc::EINVAL))
        );
        assert_eq!(
            KnobError::SliceNotKept { asked: 3, has: 0 }.to_string(),
            "slice: the kernel did not keep the custom slice (asked 3 ns, has 0 ns); EEVDF custom slices need Linux 6.12 or later"
        );
    }

    /// The detection agrees with the kernel: where it says there is no clamping, a clamp is
    /// refused with the error naming CONFIG_UCLAMP_TASK; where there is, it is applied.
    #[test]
    fn utilization_clamps_follow_the_detection() {
        let clamp = Knobs {
            util_max: Some(512),
            ..Knobs::default()
        };
        match uclamp_supported() {
            Err(KnobError::NoUclamp { .. }) => {
                let e = try_knobs(clamp).unwrap_err();
                assert!(matches!(e, KnobError::NoUclamp { .. }), "{e}");
                assert!(e.to_string().contains("CONFIG_UCLAMP_TASK"), "{e}");
                assert!(e.to_string().starts_with("util-max=512: "), "{e}");
            }
            Ok(()) => std::thread::spawn(move || {
                apply_to_current_thread(&clamp).unwrap();
                assert_eq!(sys::sched_getattr(0).unwrap().sched_util_max, 512);
            })
            .join()
            .unwrap(),
            Err(e) => panic!("the detection failed otherwise: {e}"),
        }
    }

    #[test]
    fn applies_nice_and_cpus_to_a_thread() {
        let cpu = (0..rustix::thread::CpuSet::MAX_CPU)
            .find(|&c| rustix::thread::sched_getaffinity(None).unwrap().is_set(c))
            .unwrap();
        std::thread::spawn(move || {
            apply_to_current_thread(&Knobs {
                nice: Some(3),
                cpus: Some(schedlab_workload::CpuSet::from_cpus([cpu]).unwrap()),
                ..Knobs::default()
            })
            .unwrap();
            let me = rustix::thread::gettid();
            assert_eq!(rustix::process::getpriority_process(Some(me)).unwrap(), 3);
            let set = rustix::thread::sched_getaffinity(None).unwrap();
            assert_eq!(set.count(), 1);
            assert!(set.is_set(cpu));
        })
        .join()
        .unwrap();
    }
}
