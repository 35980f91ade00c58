//! Applying a group's knobs to the calling thread: setpriority for nice, sched_setattr for
//! policies, real-time priorities, SCHED_DEADLINE and EEVDF custom slices (a fair task's
//! `sched_runtime`, Linux 6.12+), sched_setaffinity for CPU lists.
//!
//! Every failure names the knob and, for permission errors, the capability it needs.

use crate::sys::{self, SchedAttr, SCHED_DEADLINE};
use schedlab_workload::knobs::{format_cpu_list, Knobs, SchedPolicy};
use std::io;

/// Apply `knobs` to the calling thread. Knobs left unset are not touched.
pub fn apply_to_current_thread(knobs: &Knobs) -> Result<(), String> {
    if let Some(cpus) = &knobs.cpus {
        // SAFETY: cpu_set_t is plain data; CPU_SET stays within it for cpu < CPU_SETSIZE.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: valid set of the right size for the calling thread.
        let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if r != 0 {
            return Err(format!(
                "cpus={}: sched_setaffinity failed: {} (CPUs outside this cgroup's cpuset?)",
                format_cpu_list(cpus),
                io::Error::last_os_error()
            ));
        }
    }
    if knobs.policy.is_none() && knobs.slice_ns.is_none() {
        if let Some(nice) = knobs.nice {
            // PRIO_PROCESS with who = the thread id sets one thread's nice on Linux.
            // SAFETY: plain syscall.
            let r =
                unsafe { libc::setpriority(libc::PRIO_PROCESS, sys::gettid() as libc::id_t, nice) };
            if r != 0 {
                return Err(explain(
                    &format!("nice={nice}"),
                    io::Error::last_os_error(),
                    "CAP_SYS_NICE (or RLIMIT_NICE) to lower nice below the current value",
                ));
            }
        }
        return Ok(());
    }
    let policy = knobs.policy.unwrap_or(SchedPolicy::Other);
    let current = sys::sched_getattr(0).map_err(|e| format!("sched_getattr: {e}"))?;
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
            return format!("{what}: SCHED_DEADLINE admission control refused it (runtime/period exceeds the free bandwidth of these CPUs)");
        }
        if e.raw_os_error() == Some(libc::EINVAL) && knobs.slice_ns.is_some() {
            return format!("{what}: the kernel rejected the custom slice (EEVDF slices need Linux 6.12 or later): {e}");
        }
        explain(&what, e, need)
    })?;
    if let Some(slice) = knobs.slice_ns {
        // Older kernels ignore sched_runtime for fair tasks without an error: check it took.
        let back = sys::sched_getattr(0).map_err(|e| format!("sched_getattr: {e}"))?;
        if back.sched_runtime != slice {
            return Err(format!(
                "slice: the kernel did not keep the custom slice (asked {slice} ns, has {} ns); EEVDF custom slices need Linux 6.12 or later",
                back.sched_runtime
            ));
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
    k.to_string()
}

fn explain(what: &str, e: io::Error, need: &str) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            format!("{what}: permission denied; this knob needs {need}")
        }
        _ => format!("{what}: {e}"),
    }
}
