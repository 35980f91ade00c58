//! Wakeup and wakeup-preemption counters aggregated in the kernel by a BPF program.
//!
//! The program (`bpf/wakeups.bpf.c`, committed compiled as `bpf/wakeups.bpf.o`; its comment
//! explains the kernel side) hooks only the wakeup path — the BTF tracepoint `sched_wakeup` of
//! `include/trace/events/sched.h` — and keeps each task's counts in the task's own local
//! storage, the one lookup a wakeup makes (a hash lookup by TID cost half of the wakeup
//! program's time; a per-CPU array slot beside the storage, a second lookup and cache line).
//! Nothing is copied out per event: a task's counts move to its slot in an array when it exits
//! (`sched_process_exit`), and [`BpfWakeups::collect`] runs a task iterator that moves those of
//! the tasks still alive, then reads the array once. Context switches and migrations, which would need a probe on the hottest
//! scheduler event, come from the kernel's own per-task counters instead (getrusage and
//! `/proc/<pid>/task/<tid>/sched`, as with `--counters proc`).
//!
//! What counts as a wakeup preemption differs from the tracefs path ([`crate::trace`]) in how
//! it is seen, not in what it means: tracefs replays the switches and counts a wakeup whose
//! wakee was the next to run on its CPU while the previous task stayed runnable; here the
//! kernel's own verdict is read where it is made — at `sched_wakeup`, `wakeup_preempt()` has
//! just run on the target run queue, whose lock is held, and its current task's
//! `TIF_NEED_RESCHED` (or, on `preempt=lazy` kernels, `TIF_NEED_RESCHED_LAZY`) says whether it
//! was told to give way; a task an earlier wakeup already told, with no switch on that run
//! queue since (`rq->nr_switches`), is not credited again. This is the decision
//! the seeds counted (a counter beside `resched_task()` in `try_to_wake_up()`). Wakeups are
//! the same count in both sources; the preemptions agree to a few tenths of a percent on a
//! ping-pong, where every preemption hands the CPU straight to the wakee, and are larger here
//! where a decision is not followed by a preempting switch to the wakee (the told task blocks
//! first, or another task runs first): from 1 % fewer to 46 % more on a small hackbench-like
//! messaging run, depending on how it went
//! (`tests/bpf.rs` compares both on the same repetitions).
//!
//! Loading needs BTF (`/sys/kernel/btf/vmlinux`), `CONFIG_FAIR_GROUP_SCHED` (the run queue is
//! reached through `p->se.cfs_rq->rq`), CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN), and an
//! architecture and kernel whose thread-flag bits are known ([`need_resched_bits`]). Without
//! them [`BpfWakeups::open`] says why and the caller falls back to tracefs. The programs are
//! attached through file descriptors this process holds, so a killed run leaves nothing
//! attached.

use crate::trace::{TidCounts, TraceCounts};
use aya::maps::{Array, MapData};
use aya::programs::{BtfTracePoint, Iter};
use aya::{Btf, Ebpf, EbpfLoader, Pod};
use std::collections::{HashMap, HashSet};
use thiserror::Error;

/// The compiled program, aligned for the ELF parser.
static OBJECT: &[u8] = aya::include_bytes_aligned!("../bpf/wakeups.bpf.o");

/// The most tasks counted in one run (the slots' `max_entries` in the C source: 2 MiB of
/// counts and 256 KiB of TIDs). Tasks beyond the slots are counted as left out
/// ([`TraceCounts::lost`]).
pub const MAX_TASKS: usize = 65_536;

/// Why the in-kernel counters could not be set up or read; the Display text names what is
/// missing and the capability involved.
#[derive(Debug, Error)]
pub enum BpfError {
    /// The kernel's thread-flag bits are not known for this architecture or version.
    #[error("BPF: {0}")]
    Unsupported(String),
    /// The kernel exposes no BTF.
    #[error(
        "BPF: the kernel has no BTF (/sys/kernel/btf/vmlinux: {0}); it needs CONFIG_DEBUG_INFO_BTF"
    )]
    NoBtf(String),
    /// Loading or attaching was refused.
    #[error("BPF: {doing}: {message}{hint}")]
    Load {
        /// What was being done.
        doing: &'static str,
        /// The loader's or the kernel's message.
        message: String,
        /// A hint about the privilege, when the kernel said EPERM.
        hint: &'static str,
    },
    /// Reading or writing a map failed.
    #[error("BPF: map {map}: {message}")]
    Map {
        /// The map's name.
        map: &'static str,
        /// The error.
        message: String,
    },
    /// The comm prefix cannot be matched.
    #[error("BPF: comm prefix {0:?} must be 1 to 15 bytes")]
    BadPrefix(String),
}

/// One task's counts as the program keeps them (`struct counts` in the C source).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct TaskCounts {
    wakeups: u64,
    preempt: u64,
    preempt_lazy: u64,
    preempt_waker: u64,
}

// SAFETY: plain old data of integers, no padding (4 × 8 bytes), any bit pattern valid.
unsafe impl Pod for TaskCounts {}

/// The program's writable globals (its `.bss`, in the C source's order): read by every wakeup
/// without a map lookup.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Globals {
    /// The generation counting now; 0: off.
    counting: u64,
    /// The last generation started, whose counts the exit and iterator programs copy out.
    generation: u64,
}

// SAFETY: plain old data of integers, no padding (2 × 8 bytes), any bit pattern valid.
unsafe impl Pod for Globals {}

/// The thread-flag masks `(TIF_NEED_RESCHED, TIF_NEED_RESCHED_LAZY)` of an x86-64 kernel of
/// release `release` (`uname -r`): bits 4 and 5 of the generic TIF layout
/// (`include/asm-generic/thread_info_tif.h`, which x86 uses since 6.18); bits 3 and 4 from 6.13,
/// when the lazy bit came; bit 3 and no lazy bit before. Other architectures: `None`.
pub fn need_resched_bits(arch: &str, release: &str) -> Option<(u64, u64)> {
    if arch != "x86_64" {
        return None;
    }
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    Some(if (major, minor) >= (6, 18) {
        (1 << 4, 1 << 5)
    } else if (major, minor) >= (6, 13) {
        (1 << 3, 1 << 4)
    } else {
        (1 << 3, 0)
    })
}

/// A [`BpfError::Map`] of map `map`.
pub(crate) fn map_error(map: &'static str, e: impl std::fmt::Display) -> BpfError {
    BpfError::Map {
        map,
        message: e.to_string(),
    }
}

/// Load `program` of `bpf` for the BTF tracepoint `tracepoint` and attach it (the link lives
/// as long as `bpf`).
pub(crate) fn attach(
    bpf: &mut Ebpf,
    btf: &Btf,
    program: &str,
    tracepoint: &str,
) -> Result<(), BpfError> {
    let p: &mut BtfTracePoint = bpf
        .program_mut(program)
        .ok_or_else(|| BpfError::Load {
            doing: "finding a program",
            message: format!("{program} is not in the object"),
            hint: "",
        })?
        .try_into()
        .map_err(|e| load_error("a program of the wrong type", e))?;
    p.load(tracepoint, btf)
        .map_err(|e| load_error("loading a program (the kernel's verifier)", e))?;
    p.attach()
        .map_err(|e| load_error("attaching to a tracepoint", e))?;
    Ok(())
}

/// The task iterator `on_task` of `bpf`.
fn program_iter(bpf: &mut Ebpf) -> Result<&mut Iter, BpfError> {
    bpf.program_mut("on_task")
        .ok_or_else(|| BpfError::Load {
            doing: "finding a program",
            message: "on_task is not in the object".into(),
            hint: "",
        })?
        .try_into()
        .map_err(|e| load_error("a program of the wrong type", e))
}

/// Map an aya error to [`BpfError::Load`], with the capability hint when it was EPERM.
pub(crate) fn load_error(doing: &'static str, e: impl std::error::Error) -> BpfError {
    // aya's messages repeat their source's first words ("failed to create map `COUNTS`", then
    // "failed to create map `COUNTS`: Operation not permitted"): each source that carries the
    // last part of the message on replaces that part.
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        let tail_at = message.rfind(": ").map_or(0, |i| i + 2);
        if text.contains(&message[tail_at..]) {
            message.replace_range(tail_at.., &text);
        } else if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    let denied = message.contains("Operation not permitted") || message.contains("EPERM");
    BpfError::Load {
        doing,
        message,
        hint: if denied {
            " (loading BPF programs needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN / root)"
        } else {
            ""
        },
    }
}

/// The loaded, attached programs and their maps.
pub struct BpfWakeups {
    /// Owns the programs and their links: dropping it detaches them. Its task iterator runs
    /// at each [`collect`](Self::collect).
    bpf: Ebpf,
    /// Per slot, its task's counts once copied out of the task's storage.
    counts: Array<MapData, TaskCounts>,
    /// The task (TID) of each slot handed out in this generation.
    slot_tid: Array<MapData, u32>,
    /// The slots there are (the two maps' size).
    slots: u32,
    /// [0]: tasks left out; [1]: slots handed out.
    control: Array<MapData, u64>,
    /// The program's globals: the generation counting and the last one started.
    globals: Array<MapData, Globals>,
    /// The last generation started.
    generation: u64,
    lazy_known: bool,
    counting: bool,
}

impl std::fmt::Debug for BpfWakeups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfWakeups")
            .field("counting", &self.counting)
            .finish_non_exhaustive()
    }
}

impl BpfWakeups {
    /// Load the program with the running kernel's BTF and flag bits, attach it to
    /// `sched_wakeup`, counting the tasks whose name starts with
    /// `comm_prefix`. Counting is off until [`start`](Self::start).
    pub fn open(comm_prefix: &str) -> Result<BpfWakeups, BpfError> {
        BpfWakeups::load(comm_prefix, MAX_TASKS as u32)
    }

    /// [`open`](Self::open) with room for `slots` tasks a run (at least 1): the tasks woken
    /// after the slots ran out are counted as left out ([`TraceCounts::lost`]).
    pub fn open_with_slots(comm_prefix: &str, slots: u32) -> Result<BpfWakeups, BpfError> {
        BpfWakeups::load(comm_prefix, slots.clamp(1, MAX_TASKS as u32))
    }

    /// Load and attach with `slots` slots.
    fn load(comm_prefix: &str, slots: u32) -> Result<BpfWakeups, BpfError> {
        if comm_prefix.is_empty() || comm_prefix.len() > 15 {
            return Err(BpfError::BadPrefix(comm_prefix.to_string()));
        }
        let uname = rustix::system::uname();
        let arch = uname.machine().to_string_lossy().into_owned();
        let release = uname.release().to_string_lossy().into_owned();
        let (need, lazy) = need_resched_bits(&arch, &release).ok_or_else(|| {
            BpfError::Unsupported(format!(
                "the thread-flag bits of {arch} kernels are not known to schedlab (x86_64 only)"
            ))
        })?;
        let btf = Btf::from_sys_fs().map_err(|e| BpfError::NoBtf(e.to_string()))?;
        let mut prefix = [0u8; 16];
        prefix[..comm_prefix.len()].copy_from_slice(comm_prefix.as_bytes());
        let prefix_len = comm_prefix.len() as u32;
        let mut bpf = EbpfLoader::new()
            .btf(Some(&btf))
            .map_max_entries("COUNTS", slots)
            .map_max_entries("SLOT_TID", slots)
            // SLOTS, the task-local storage, is created but never read from user space.
            .allow_unsupported_maps()
            .override_global("need_resched_mask", &need, true)
            .override_global("lazy_mask", &lazy, true)
            .override_global("prefix", &prefix, true)
            .override_global("prefix_len", &prefix_len, true)
            .load(OBJECT)
            .map_err(|e| load_error("loading the object", e))?;
        attach(&mut bpf, &btf, "on_wakeup", "sched_wakeup")?;
        attach(&mut bpf, &btf, "on_exit", "sched_process_exit")?;
        program_iter(&mut bpf)?
            .load("task", &btf)
            .map_err(|e| load_error("loading the task iterator (the kernel's verifier)", e))?;
        let counts = bpf
            .take_map("COUNTS")
            .ok_or_else(|| map_error("COUNTS", "missing"))?;
        let counts = Array::try_from(counts).map_err(|e| map_error("COUNTS", e))?;
        let slot_tid = bpf
            .take_map("SLOT_TID")
            .ok_or_else(|| map_error("SLOT_TID", "missing"))?;
        let slot_tid = Array::try_from(slot_tid).map_err(|e| map_error("SLOT_TID", e))?;
        let control = bpf
            .take_map("CONTROL")
            .ok_or_else(|| map_error("CONTROL", "missing"))?;
        let control = Array::try_from(control).map_err(|e| map_error("CONTROL", e))?;
        let globals = bpf
            .take_map(".bss")
            .ok_or_else(|| map_error(".bss", "missing"))?;
        let globals = Array::try_from(globals).map_err(|e| map_error(".bss", e))?;
        Ok(BpfWakeups {
            bpf,
            counts,
            slot_tid,
            slots,
            control,
            globals,
            generation: 0,
            lazy_known: lazy != 0,
            counting: false,
        })
    }

    fn set_control(&mut self, index: u32, value: u64) -> Result<(), BpfError> {
        self.control
            .set(index, value, 0)
            .map_err(|e| map_error("CONTROL", e))
    }

    /// Set the program's globals: `counting` the generation counting now (0: off).
    fn set_globals(&mut self, counting: u64) -> Result<(), BpfError> {
        let g = Globals {
            counting,
            generation: self.generation,
        };
        self.globals.set(0, g, 0).map_err(|e| map_error(".bss", e))
    }

    /// Forget the previous counts and start counting: a new generation, in which every task
    /// takes a new slot at its first wakeup (counts in its storage of an earlier generation
    /// are stale and not copied out).
    pub fn start(&mut self) -> Result<(), BpfError> {
        self.stop()?;
        for slot in 0..self.handed_out()? {
            self.counts
                .set(slot, TaskCounts::default(), 0)
                .map_err(|e| map_error("COUNTS", e))?;
        }
        self.set_control(0, 0)?;
        self.set_control(1, 0)?;
        self.generation += 1;
        self.set_globals(self.generation)?;
        self.counting = true;
        Ok(())
    }

    /// The slots handed out in this generation (at most the slots there are).
    fn handed_out(&self) -> Result<u32, BpfError> {
        let n = self
            .control
            .get(&1, 0)
            .map_err(|e| map_error("CONTROL", e))?;
        Ok(n.min(u64::from(self.slots)) as u32)
    }

    /// Stop counting.
    pub fn stop(&mut self) -> Result<(), BpfError> {
        self.set_globals(0)?;
        self.counting = false;
        Ok(())
    }

    /// Run the task iterator once: every live task's counts of this generation move from its
    /// storage to its slot (an exited task's moved at its exit).
    fn copy_out_live_tasks(&mut self) -> Result<(), BpfError> {
        let it = program_iter(&mut self.bpf)?;
        let id = it
            .attach()
            .map_err(|e| load_error("attaching the task iterator", e))?;
        let link = it
            .take_link(id)
            .map_err(|e| load_error("taking the task iterator's link", e))?;
        let mut file = link
            .into_file()
            .map_err(|e| load_error("creating the task iterator", e))?;
        // The program prints nothing: reading to the end runs it over every task.
        let mut sink = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut sink)
            .map_err(|e| load_error("running the task iterator", e))?;
        Ok(())
    }

    /// The counts of `tids` since [`start`](Self::start) (stopping first if still counting).
    /// `lost` is the number of tasks that got no entry because the map was full, so that
    /// their wakeups are missing.
    pub fn collect(&mut self, tids: &HashSet<i32>) -> Result<TraceCounts, BpfError> {
        if self.counting {
            self.stop()?;
        }
        self.copy_out_live_tasks()?;
        let mut out = TraceCounts {
            waker_cpus: true,
            lazy_known: self.lazy_known,
            ..TraceCounts::default()
        };
        let mut sums: HashMap<i32, TaskCounts> = HashMap::new();
        for slot in 0..self.handed_out()? {
            let tid = self
                .slot_tid
                .get(&slot, 0)
                .map_err(|e| map_error("SLOT_TID", e))? as i32;
            if !tids.contains(&tid) {
                continue;
            }
            let c = self
                .counts
                .get(&slot, 0)
                .map_err(|e| map_error("COUNTS", e))?;
            // A TID the kernel gave again to a later task of the run adds to the first's.
            let sum = sums.entry(tid).or_default();
            sum.wakeups += c.wakeups;
            sum.preempt += c.preempt;
            sum.preempt_lazy += c.preempt_lazy;
            sum.preempt_waker += c.preempt_waker;
        }
        for &tid in tids {
            let c = sums.get(&tid).copied().unwrap_or_default();
            out.per_tid.insert(
                tid,
                TidCounts {
                    wakeups: c.wakeups,
                    wakeup_preemptions: c.preempt + c.preempt_lazy,
                    preemptions_on_waker_cpu: c.preempt_waker,
                    preemptions_lazy: c.preempt_lazy,
                },
            );
        }
        out.lost = self
            .control
            .get(&0, 0)
            .map_err(|e| map_error("CONTROL", e))?;
        Ok(out)
    }

    /// A short description of the source, the same for every run so that records compare.
    pub fn source(&self) -> String {
        "BPF in the kernel (sched_wakeup: need_resched after wakeup_preempt)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_bits_follow_the_kernel_release() {
        assert_eq!(need_resched_bits("x86_64", "6.18.44-fc"), Some((16, 32)));
        assert_eq!(need_resched_bits("x86_64", "7.1.0"), Some((16, 32)));
        assert_eq!(need_resched_bits("x86_64", "6.13.2"), Some((8, 16)));
        assert_eq!(need_resched_bits("x86_64", "6.1.0-28-amd64"), Some((8, 0)));
        assert_eq!(need_resched_bits("aarch64", "6.18.0"), None);
        assert_eq!(need_resched_bits("x86_64", "garbage"), None);
    }

    #[test]
    fn a_bad_prefix_is_refused_before_loading() {
        assert!(matches!(BpfWakeups::open(""), Err(BpfError::BadPrefix(_))));
        assert!(matches!(
            BpfWakeups::open("a-prefix-far-too-long"),
            Err(BpfError::BadPrefix(_))
        ));
    }
}
