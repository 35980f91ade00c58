//! Recording through BPF: the same events as the tracefs recorder ([`super::record`]), copied by
//! programs on the scheduler's BTF tracepoints into a ring buffer that a thread of ours drains
//! while the program runs. The program (`bpf/record.bpf.c`, committed compiled as
//! `bpf/record.bpf.o`; its comment explains the kernel side) keeps the traced set in the kernel
//! (a mark in each traced task's task-local storage, a traced task's children marked at fork,
//! the roots named by us: the recording thread while it forks the command, or the thread group
//! of `--pid`) and reads the system
//! call a task blocks in from its saved registers at the switch, so nothing traces system calls:
//! the tracefs recorder's `raw_syscalls` tracepoints put every task of the machine on the
//! system-call slow path while they are enabled, however tightly they are filtered.
//!
//! What the records become, so that the conversion sees what tracefs would have given it:
//! a switch whose prev was in a system call the conversion classifies sleeps by (the tracefs
//! recorder's filter, `watched_calls`) becomes `SysEnter`, the switch and
//! `SysExit` at the same time; a call outside that list gives no event, as the filter drops it
//! there. The blocking call is read from `orig_ax`, which is x86-64's; on other architectures the
//! recorder does not load and `record` falls back to tracefs. A 32-bit (compat) program's call
//! numbers are not x86-64's and are misread.
//!
//! The data flow: reads and writes of anonymous pipes and UNIX stream sockets by traced tasks
//! come from fentry/fexit programs on the kernel functions that do them (one record a call, at
//! its return, with its entry time, bytes and object; [`IO_PROGRAMS`]) and become an `IoEnter`
//! and an `IoExit` event. fentry/fexit rather than a system-call tracepoint: the trampoline is
//! patched into those four functions only, so no other call of the machine pays anything, and
//! a call of an untraced task pays one look at its task-local storage. Where they do not load (a kernel without
//! those functions in its BTF, or one that refuses fentry, as some lock ftrace's function hooks
//! down), UNIX stream sockets are recorded through the socket layer's BTF tracepoints
//! `sock_send_length`/`sock_recv_length` instead, with the entry time of a call that slept taken
//! where it went to sleep, and pipes are not recorded; the recorder says which
//! ([`BpfRecorder::io`]).
//!
//! The switch and waking records reach the ring in batches of `STAGE_RECS` (64) a CPU (the C
//! source says why); what is left in each CPU's batch is read when the recording ends.
//!
//! Bounds: the ring is `--buffer-mb` MiB (a power of two), drained every 10 ms and whenever it is
//! a quarter full; records it had no room for, tasks whose mark the kernel could not allocate
//! and events beyond [`MAX_EVENTS`] kept in memory are all counted as lost events, which make `record`
//! fail unless `--allow-lossy`. Everything is held by file descriptors of this process and a
//! thread joined on drop: an interrupted or killed record leaves nothing attached.

use super::record::watched_calls;
use crate::bpf::BpfError;
use aya::maps::{Array, Map, MapData, PerCpuArray, RingBuf};
use aya::programs::{FEntry, FExit};
use aya::{Btf, Ebpf, EbpfLoader};
use schedlab_workload::sched_events::{
    Call, EventKind, IoCall, IoOp, LeftAs, SchedEvent, Transport,
};
use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The compiled program, aligned for the ELF parser.
static OBJECT: &[u8] = aya::include_bytes_aligned!("../../bpf/record.bpf.o");

/// The programs and the tracepoints they attach to.
const PROGRAMS: [(&str, &str); 5] = [
    ("on_switch", "sched_switch"),
    ("on_waking", "sched_waking"),
    ("on_fork", "sched_process_fork"),
    ("on_exit", "sched_process_exit"),
    ("on_migrate", "sched_migrate_task"),
];

/// The I/O programs: (entry program, exit program, the kernel functions to try, newest first).
/// Pipes' read and write were `pipe_read`/`pipe_write` until 6.16 split them into the anonymous
/// pipes' and the FIFOs' (`anon_pipe_*`, `fifo_pipe_*`; FIFOs are not recorded).
pub const IO_PROGRAMS: [(&str, &str, &[&str]); 4] = [
    (
        "pipe_read_enter",
        "pipe_read_exit",
        &["anon_pipe_read", "pipe_read"],
    ),
    (
        "pipe_write_enter",
        "pipe_write_exit",
        &["anon_pipe_write", "pipe_write"],
    ),
    (
        "unix_recv_enter",
        "unix_recv_exit",
        &["unix_stream_recvmsg"],
    ),
    (
        "unix_send_enter",
        "unix_send_exit",
        &["unix_stream_sendmsg"],
    ),
];

/// The most events kept in memory (40 bytes each: 640 MiB); later ones are counted as lost.
pub const MAX_EVENTS: usize = 1 << 24;

/// The largest ring, MiB: the kernel takes its size as a 32-bit byte count.
pub const MAX_RING_MB: u32 = 1024;

/// How often the drain thread empties the ring when nothing wakes it, ms.
const DRAIN_EVERY_MS: i32 = 10;

/// `struct rec` of the C source: one event, 32 bytes (48 with a name, 40 an I/O call's).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Record {
    ts: u64,
    cpu: u16,
    kind: u8,
    left: u8,
    a: i32,
    b: i32,
    /// A switch's system call of prev, an I/O call's returned bytes.
    nr: i32,
    /// A switch's `sum_exec_runtime` of prev (0: not traced), an I/O call's entry time.
    x: u64,
}

const KIND_SWITCH: u8 = 1;
const KIND_WAKING: u8 = 2;
const KIND_FORK: u8 = 3;
const KIND_EXIT: u8 = 4;
const KIND_MIGRATE: u8 = 5;
const KIND_IO: u8 = 6;
const IO_WRITE: u8 = 1;
const IO_SOCKET: u8 = 2;
const RECORD_BYTES: usize = std::mem::size_of::<Record>();
const NAMED_BYTES: usize = RECORD_BYTES + 16;
/// `struct rec_io`: the record (its `x` the entry time) and the object.
const IO_BYTES: usize = RECORD_BYTES + 8;

/// `STAGE_RECS` of the C source: how many switch and waking records a CPU gathers before they
/// go to the ring together.
const STAGE_RECS: usize = 64;

/// `struct stage` of the C source: one CPU's records not yet in the ring (`n` of them).
#[repr(C)]
#[derive(Clone, Copy)]
struct Stage {
    n: u32,
    pad: u32,
    recs: [u8; STAGE_RECS * RECORD_BYTES],
}

// SAFETY: plain integers and bytes, no padding; any bit pattern is a value.
unsafe impl aya::Pod for Stage {}

/// `struct seed` of the C source: the roots of the traced set (0: none) and whether a sleep
/// notes where a socket call began (the socket tracepoints' path).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Seed {
    tid: i32,
    tgid: i32,
    sleep_starts: u32,
    pad: u32,
}

// SAFETY: plain integers, no padding between them; any bit pattern is a value.
unsafe impl aya::Pod for Seed {}

/// What the drain thread hands back.
#[derive(Debug, Default)]
pub struct Drained {
    /// The events, in time order.
    pub events: Vec<SchedEvent>,
    /// Names (comm) by task: a child's at fork, replaced by its last at exit.
    pub names: HashMap<i32, String>,
    /// Events past [`MAX_EVENTS`], or records too short to read.
    pub dropped: u64,
}

/// The ring size for `buffer_mb`: rounded up to a power of two, at most [`MAX_RING_MB`] MiB.
pub fn ring_bytes(buffer_mb: u32) -> u32 {
    buffer_mb.clamp(1, MAX_RING_MB).next_power_of_two() << 20
}

/// The loaded, attached recorder.
pub struct BpfRecorder {
    /// Owns the programs and their links: dropping it detaches them.
    bpf: Option<Ebpf>,
    seed_map: Array<MapData, Seed>,
    seed: Seed,
    lost: PerCpuArray<MapData, u64>,
    stage: PerCpuArray<MapData, Stage>,
    stop: Arc<AtomicBool>,
    drain: Option<JoinHandle<Drained>>,
    /// The ring's size, bytes.
    pub ring_bytes: u32,
    /// How the pipe and socket calls are recorded, or why they are not, in words for the file's
    /// header.
    pub io: String,
}

impl std::fmt::Debug for BpfRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfRecorder")
            .field("ring_bytes", &self.ring_bytes)
            .finish_non_exhaustive()
    }
}

impl BpfRecorder {
    /// Load the programs with a ring of [`ring_bytes`]`(buffer_mb)`, attach them and start the
    /// drain thread. Nothing is recorded until a task is [`trace`](Self::trace)d. With
    /// `data_flow`, the pipe and UNIX stream socket calls are recorded too ([`IO_PROGRAMS`]):
    /// an event per call, which the traced program pays for.
    pub fn open(buffer_mb: u32, data_flow: bool) -> Result<BpfRecorder, BpfError> {
        BpfRecorder::open_with(buffer_mb, true, data_flow)
    }

    /// [`open`](Self::open), with the ring read while recording (`live`) or only at the end: a
    /// test of the ring's bound, where what it has no room for is counted lost.
    pub fn open_with(buffer_mb: u32, live: bool, data_flow: bool) -> Result<BpfRecorder, BpfError> {
        let arch = rustix::system::uname()
            .machine()
            .to_string_lossy()
            .into_owned();
        if arch != "x86_64" {
            return Err(BpfError::Unsupported(format!(
                "the recorder reads the blocking system call from x86-64 registers; this kernel is {arch}"
            )));
        }
        let btf = Btf::from_sys_fs().map_err(|e| BpfError::NoBtf(e.to_string()))?;
        let bytes = ring_bytes(buffer_mb);
        let wake = u64::from(bytes / 4);
        let mut bpf = EbpfLoader::new()
            .btf(Some(&btf))
            .map_max_entries("EVENTS", bytes)
            // TASKS, the programs' task-local storage, is never read from here.
            .allow_unsupported_maps()
            .override_global("wake_bytes", &wake, true)
            .load(OBJECT)
            .map_err(|e| crate::bpf::load_error("loading the recorder", e))?;
        for (program, tracepoint) in PROGRAMS {
            crate::bpf::attach(&mut bpf, &btf, program, tracepoint)?;
        }
        let (io, sleep_starts) = if data_flow {
            attach_io(&mut bpf, &btf)
        } else {
            (NO_DATA_FLOW.to_string(), false)
        };
        let map = |bpf: &mut Ebpf, name: &'static str| {
            bpf.take_map(name)
                .ok_or_else(|| crate::bpf::map_error(name, "missing"))
        };
        let seed_map = Array::try_from(map(&mut bpf, "SEED")?)
            .map_err(|e| crate::bpf::map_error("SEED", e))?;
        let lost = PerCpuArray::try_from(map(&mut bpf, "LOST")?)
            .map_err(|e| crate::bpf::map_error("LOST", e))?;
        let stage = PerCpuArray::try_from(map(&mut bpf, "STAGE")?)
            .map_err(|e| crate::bpf::map_error("STAGE", e))?;
        let events = map(&mut bpf, "EVENTS")?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        // The thread exists before any task is traced, so it is never a traced task's child.
        let drain = std::thread::Builder::new()
            .name("schedlab-drain".into())
            .spawn(move || drain(events, &thread_stop, live))
            .map_err(|e| {
                crate::bpf::map_error("EVENTS", format!("cannot start the drain thread: {e}"))
            })?;
        Ok(BpfRecorder {
            bpf: Some(bpf),
            seed_map,
            seed: Seed {
                sleep_starts: sleep_starts.into(),
                ..Seed::default()
            },
            lost,
            stage,
            stop,
            drain: Some(drain),
            ring_bytes: bytes,
            io,
        })
    }

    /// Trace the task `tid` (one at a time: it replaces an earlier one), and the children it
    /// forks from now on, with theirs.
    pub fn trace(&mut self, tid: i32) -> Result<(), BpfError> {
        self.seed.tid = tid;
        self.write_seed()
    }

    /// Stop tracing the task given to [`trace`](Self::trace); the children it forked stay
    /// traced.
    pub fn untrace(&mut self, tid: i32) {
        if self.seed.tid == tid {
            self.seed.tid = 0;
            let _ = self.write_seed();
        }
    }

    /// Trace every thread of the thread group `tgid` (a process), and every task they fork.
    pub fn trace_group(&mut self, tgid: i32) -> Result<(), BpfError> {
        self.seed.tgid = tgid;
        self.write_seed()
    }

    fn write_seed(&mut self) -> Result<(), BpfError> {
        self.seed_map
            .set(0, self.seed, 0)
            .map_err(|e| crate::bpf::map_error("SEED", e))
    }

    /// Detach the programs, drain what is left and return it, with the events the kernel
    /// could not record (ring full, traced set full) added to those the drain dropped.
    pub fn finish(mut self) -> Result<(Drained, u64), BpfError> {
        // Detach first: the last drain then sees every record the programs wrote, and the
        // stages hold the last records no batch took to the ring.
        self.bpf = None;
        let mut lost = 0;
        for index in 0..2 {
            let per_cpu = self
                .lost
                .get(&index, 0)
                .map_err(|e| crate::bpf::map_error("LOST", e))?;
            lost += per_cpu.iter().sum::<u64>();
        }
        let stages = self
            .stage
            .get(&0, 0)
            .map_err(|e| crate::bpf::map_error("STAGE", e))?;
        let mut drained = self.join();
        let calls: HashMap<i64, Call> = watched_calls().into_iter().collect();
        for stage in stages.iter() {
            let n = (stage.n as usize).min(STAGE_RECS);
            if n > 0 {
                decode(&stage.recs[..n * RECORD_BYTES], &calls, &mut drained);
            }
        }
        // In time order again, with the stages' records among the ring's.
        drained.events.sort_by_key(|e| e.ts_ns);
        let lost = lost + drained.dropped;
        Ok((drained, lost))
    }

    fn join(&mut self) -> Drained {
        self.stop.store(true, Ordering::Relaxed);
        self.drain
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for BpfRecorder {
    fn drop(&mut self) {
        self.bpf = None;
        if self.drain.is_some() {
            self.join();
        }
    }
}

/// The socket layer's tracepoints, used where the sockets' fentry/fexit programs do not attach.
const SOCKET_TRACEPOINTS: [(&str, &str); 2] = [
    ("on_sock_send", "sock_send_length"),
    ("on_sock_recv", "sock_recv_length"),
];

/// What the file's header says when the data flow was not asked for.
pub const NO_DATA_FLOW: &str =
    "no pipe or socket calls (record --data-flow records them, to replay them as channels)";

/// Attach the I/O programs ([`IO_PROGRAMS`]), each pair to the first of its functions the kernel
/// has, the socket tracepoints where the sockets' pairs do not attach; say what is recorded, and
/// whether the socket tracepoints are attached (a call's start is then where it went to sleep).
fn attach_io(bpf: &mut Ebpf, btf: &Btf) -> (String, bool) {
    let mut missing = Vec::new();
    let mut attached = Vec::new();
    for (enter, exit, functions) in IO_PROGRAMS {
        // The first function the kernel has is the one tried; an older name is tried only
        // when the newer one is not in its BTF.
        let mut why = format!("{} not in the kernel's BTF", functions.join(", "));
        let mut tried = false;
        let ok = functions.iter().any(|f| {
            if tried {
                return false;
            }
            match attach_pair(bpf, btf, enter, exit, f) {
                Ok(()) => true,
                Err(Refused::NoFunction) => false,
                Err(Refused::Kernel(e)) => {
                    tried = true;
                    why = format!("{f}: {e}");
                    false
                }
            }
        });
        if ok {
            attached.push(functions[0]);
        } else {
            missing.push((functions[0], why));
        }
    }
    let pipes_ok = !missing.iter().any(|(f, _)| f.contains("pipe"));
    let sockets_ok = !missing.iter().any(|(f, _)| f.starts_with("unix"));
    let mut parts = Vec::new();
    let mut sleep_starts = false;
    if pipes_ok && sockets_ok {
        parts.push("pipe and UNIX stream socket reads and writes through fentry/fexit".to_string());
    } else {
        if !attached.is_empty() {
            parts.push(format!("fentry/fexit on {}", attached.join(", ")));
        }
        let why: Vec<String> = missing.iter().map(|(_, w)| w.clone()).collect();
        if !sockets_ok {
            let tracepoints = SOCKET_TRACEPOINTS
                .iter()
                .try_for_each(|(p, t)| crate::bpf::attach(bpf, btf, p, t));
            // A sleep notes where a call began whenever a socket tracepoint may be attached.
            sleep_starts = true;
            parts.push(match tracepoints {
                Ok(()) => "UNIX stream socket reads and writes through the sock_send_length/sock_recv_length tracepoints (a call that slept begins where it slept)".to_string(),
                Err(e) => format!("UNIX stream socket calls not recorded ({e})"),
            });
        }
        if !pipes_ok {
            parts.push("pipe calls not recorded".to_string());
        }
        parts.push(format!("fentry/fexit refused: {}", why.join("; ")));
    }
    (parts.join("; "), sleep_starts)
}

/// Why an fentry/fexit pair did not attach.
enum Refused {
    /// The function is not in the kernel's BTF (a name of another kernel version).
    NoFunction,
    /// The kernel or the loader refused, in its words.
    Kernel(String),
}

/// Load `enter` as an fentry and `exit` as an fexit program of `function` and attach both.
fn attach_pair(
    bpf: &mut Ebpf,
    btf: &Btf,
    enter: &str,
    exit: &str,
    function: &str,
) -> Result<(), Refused> {
    let kernel = |e: &dyn std::fmt::Display| Refused::Kernel(short(e));
    let loaded = |e: aya::programs::ProgramError| match e {
        aya::programs::ProgramError::Btf(_) => Refused::NoFunction,
        e => kernel(&e),
    };
    let p: &mut FEntry = bpf
        .program_mut(enter)
        .ok_or_else(|| kernel(&format!("{enter} is not in the object")))?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| kernel(&e))?;
    p.load(function, btf).map_err(loaded)?;
    p.attach().map_err(|e| kernel(&e))?;
    let p: &mut FExit = bpf
        .program_mut(exit)
        .ok_or_else(|| kernel(&format!("{exit} is not in the object")))?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| kernel(&e))?;
    p.load(function, btf).map_err(loaded)?;
    p.attach().map_err(|e| kernel(&e))?;
    Ok(())
}

/// An aya error's text without an empty verifier log.
fn short(e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    text.trim_end()
        .trim_end_matches("Verifier output:")
        .trim_end()
        .trim_end_matches('.')
        .to_string()
}

/// The drain thread: empty the ring every [`DRAIN_EVERY_MS`] or when the programs wake us,
/// until `stop`, then once more.
fn drain(events: Map, stop: &AtomicBool, live: bool) -> Drained {
    let mut out = Drained::default();
    let mut ring = match RingBuf::try_from(events) {
        Ok(r) => r,
        Err(_) => {
            // Nothing can be read: every event counts as lost (at least one, so that it shows).
            out.dropped = 1;
            return out;
        }
    };
    let calls: HashMap<i64, Call> = watched_calls().into_iter().collect();
    loop {
        let last = stop.load(Ordering::Relaxed);
        if live || last {
            while let Some(item) = ring.next() {
                decode(&item, &calls, &mut out);
            }
        }
        if last {
            break;
        }
        if live {
            crate::sys::wait_readable(ring.as_raw_fd(), DRAIN_EVERY_MS);
        } else {
            std::thread::sleep(std::time::Duration::from_millis(DRAIN_EVERY_MS as u64));
        }
    }
    // The ring holds each CPU's records in the order they were reserved, and a record's time is
    // taken just after: put them in time order, keeping the order of equal times (a switch's
    // SysEnter, Switch, SysExit).
    out.events.sort_by_key(|e| e.ts_ns);
    out
}

/// Append the events of one item of the ring: a fork's, an exit's or an I/O call's record alone,
/// or a CPU's batch of switch, waking and migration records (a whole number of them).
fn decode(bytes: &[u8], calls: &HashMap<i64, Call>, out: &mut Drained) {
    match bytes.get(10) {
        Some(&(KIND_FORK | KIND_EXIT | KIND_IO)) => decode_one(bytes, calls, out),
        Some(_) if bytes.len().is_multiple_of(RECORD_BYTES) => {
            for record in bytes.chunks_exact(RECORD_BYTES) {
                decode_one(record, calls, out);
            }
        }
        _ => out.dropped += 1,
    }
}

/// Append the events of one record.
fn decode_one(bytes: &[u8], calls: &HashMap<i64, Call>, out: &mut Drained) {
    if bytes.len() < RECORD_BYTES {
        out.dropped += 1;
        return;
    }
    let r = read_record(bytes);
    let named = || {
        bytes.get(RECORD_BYTES..NAMED_BYTES).map(|c| {
            let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
    };
    let mut push = |kind| {
        if out.events.len() < MAX_EVENTS {
            out.events.push(SchedEvent {
                ts_ns: r.ts,
                cpu: r.cpu.into(),
                kind,
            });
        } else {
            out.dropped += 1;
        }
    };
    match r.kind {
        KIND_SWITCH => {
            let left = match r.left {
                0 => LeftAs::Runnable,
                2 => LeftAs::Dead,
                _ => LeftAs::Sleeping,
            };
            let nr = i64::from(r.nr);
            let call = calls.get(&nr).copied().filter(|_| nr >= 0);
            if let Some(call) = call {
                push(EventKind::SysEnter { pid: r.a, call });
            }
            push(EventKind::Switch {
                prev: r.a,
                left,
                next: r.b,
                // Every task that has run has a runtime above 0; 0 is an untraced prev's.
                prev_runtime_ns: (r.x > 0).then_some(r.x),
            });
            if call.is_some() {
                push(EventKind::SysExit { pid: r.a });
            }
        }
        KIND_WAKING => push(EventKind::Waking {
            waker: r.a,
            wakee: r.b,
        }),
        KIND_FORK => {
            push(EventKind::Fork {
                parent: r.a,
                child: r.b,
            });
            if let Some(name) = named() {
                out.names.entry(r.b).or_insert(name);
            }
        }
        KIND_EXIT => {
            push(EventKind::Exit { pid: r.a });
            if let Some(name) = named() {
                // The last name wins: the name after exec.
                out.names.insert(r.a, name);
            }
        }
        KIND_MIGRATE => push(EventKind::Migrate {
            pid: r.a,
            dest_cpu: r.b as u32,
        }),
        KIND_IO => {
            let Some(tail) = bytes.get(RECORD_BYTES..IO_BYTES) else {
                out.dropped += 1;
                return;
            };
            let enter = r.x;
            let object = u64::from_ne_bytes(tail[0..8].try_into().unwrap_or([0; 8]));
            let io = IoCall {
                pid: r.a,
                op: if r.left & IO_WRITE != 0 {
                    IoOp::Write
                } else {
                    IoOp::Read
                },
                transport: if r.left & IO_SOCKET != 0 {
                    Transport::UnixStream
                } else {
                    Transport::Pipe
                },
                object,
                bytes: r.nr.into(),
            };
            // The entry is pushed with its own time: the sort below puts it among the events
            // the call spans (the switches and wakeups inside a blocking read).
            if out.events.len() + 2 <= MAX_EVENTS {
                out.events.push(SchedEvent {
                    ts_ns: enter.min(r.ts),
                    cpu: r.cpu.into(),
                    kind: EventKind::IoEnter { io },
                });
                out.events.push(SchedEvent {
                    ts_ns: r.ts,
                    cpu: r.cpu.into(),
                    kind: EventKind::IoExit { io },
                });
            } else {
                out.dropped += 2;
            }
        }
        _ => out.dropped += 1,
    }
}

/// The fixed fields of a record (native byte order, as the kernel wrote them).
fn read_record(b: &[u8]) -> Record {
    let u64_at = |i: usize| u64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
    Record {
        ts: u64_at(0),
        cpu: u16::from_ne_bytes([b[8], b[9]]),
        kind: b[10],
        left: b[11],
        a: u32_at(12) as i32,
        b: u32_at(16) as i32,
        nr: u32_at(20) as i32,
        x: u64_at(24),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(r: Record, name: Option<&str>) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend(r.ts.to_ne_bytes());
        v.extend(r.cpu.to_ne_bytes());
        v.extend([r.kind, r.left]);
        v.extend(r.a.to_ne_bytes());
        v.extend(r.b.to_ne_bytes());
        v.extend(r.nr.to_ne_bytes());
        v.extend(r.x.to_ne_bytes());
        if let Some(n) = name {
            let mut c = [0u8; 16];
            c[..n.len()].copy_from_slice(n.as_bytes());
            v.extend(c);
        }
        v
    }

    #[test]
    fn records_become_the_tracefs_recorders_events() {
        let calls: HashMap<i64, Call> = watched_calls().into_iter().collect();
        let mut out = Drained::default();
        let rec = |kind, left, a, b, nr: i64, x| Record {
            ts: 1000,
            cpu: 1,
            kind,
            left,
            a,
            b,
            nr: nr as i32,
            x,
        };
        let sleep = libc::SYS_clock_nanosleep;
        let read = libc::SYS_read;
        for (r, name) in [
            (rec(KIND_SWITCH, 1, 42, 0, sleep, 7_000), None),
            (rec(KIND_SWITCH, 1, 42, 0, read, 8_000), None),
            // An untraced prev: no runtime read.
            (rec(KIND_SWITCH, 0, 42, 43, -1, 0), None),
            (rec(KIND_WAKING, 0, 0, 42, -1, 0), None),
            (rec(KIND_FORK, 0, 42, 43, -1, 0), Some("parent")),
            (rec(KIND_EXIT, 0, 43, 0, -1, 0), Some("kid")),
            (rec(KIND_SWITCH, 2, 43, 0, -1, 9_000), None),
            (rec(KIND_MIGRATE, 0, 42, 0, -1, 0), None),
        ] {
            decode(&bytes(r, name), &calls, &mut out);
        }
        decode(&[0u8; 8], &calls, &mut out);
        let kinds: Vec<EventKind> = out.events.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::SysEnter {
                    pid: 42,
                    call: Call::Timer
                },
                EventKind::Switch {
                    prev: 42,
                    left: LeftAs::Sleeping,
                    next: 0,
                    prev_runtime_ns: Some(7_000)
                },
                EventKind::SysExit { pid: 42 },
                // read(2) is not a call the tracefs filter keeps: no SysEnter.
                EventKind::Switch {
                    prev: 42,
                    left: LeftAs::Sleeping,
                    next: 0,
                    prev_runtime_ns: Some(8_000)
                },
                EventKind::Switch {
                    prev: 42,
                    left: LeftAs::Runnable,
                    next: 43,
                    prev_runtime_ns: None
                },
                EventKind::Waking {
                    waker: 0,
                    wakee: 42
                },
                EventKind::Fork {
                    parent: 42,
                    child: 43
                },
                EventKind::Exit { pid: 43 },
                EventKind::Switch {
                    prev: 43,
                    left: LeftAs::Dead,
                    next: 0,
                    prev_runtime_ns: Some(9_000)
                },
                EventKind::Migrate {
                    pid: 42,
                    dest_cpu: 0
                },
            ]
        );
        assert_eq!(out.names[&43], "kid");
        assert_eq!(out.dropped, 1, "the short record");
        assert!(out.events.iter().all(|e| e.ts_ns == 1000 && e.cpu == 1));
    }

    #[test]
    fn a_batch_is_its_records_one_after_another() {
        let calls: HashMap<i64, Call> = watched_calls().into_iter().collect();
        let rec = |ts, kind, a, b, nr: i64| Record {
            ts,
            cpu: 1,
            kind,
            left: 1,
            a,
            b,
            nr: nr as i32,
            x: ts + 1,
        };
        let records = [
            rec(10, KIND_WAKING, 42, 43, -1),
            rec(20, KIND_SWITCH, 42, 43, libc::SYS_clock_nanosleep),
            rec(30, KIND_MIGRATE, 43, 0, -1),
            rec(40, KIND_SWITCH, 43, 42, -1),
        ];
        let mut alone = Drained::default();
        let mut batch = Vec::new();
        for r in records {
            decode(&bytes(r, None), &calls, &mut alone);
            batch.extend(bytes(r, None));
        }
        let mut together = Drained::default();
        decode(&batch, &calls, &mut together);
        let events = |d: &Drained| -> Vec<(u64, EventKind)> {
            d.events.iter().map(|e| (e.ts_ns, e.kind)).collect()
        };
        assert_eq!(events(&together), events(&alone));
        assert_eq!(
            together.events.len(),
            6,
            "the sleeping switch's SysEnter and SysExit too"
        );
        assert_eq!(together.dropped, 0);
        // A batch cut inside a record is not misread.
        let mut cut = Drained::default();
        decode(&batch[..RECORD_BYTES + 8], &calls, &mut cut);
        assert!(cut.events.is_empty());
        assert_eq!(cut.dropped, 1);
    }

    #[test]
    fn an_io_record_is_a_call_entered_and_returned() {
        let calls: HashMap<i64, Call> = watched_calls().into_iter().collect();
        let mut out = Drained::default();
        let io = |left: u8, returned: i32, enter: u64, object: u64| {
            let mut v = bytes(
                Record {
                    ts: 5_000,
                    cpu: 1,
                    kind: KIND_IO,
                    left,
                    a: 42,
                    nr: returned,
                    x: enter,
                    ..Record::default()
                },
                None,
            );
            v.extend(object.to_ne_bytes());
            v
        };
        // A socket write of 100 bytes that began at 4000; a pipe read of 4 the tracepoints
        // saw no entry of (its entry is its return).
        decode(&io(IO_SOCKET | IO_WRITE, 100, 4_000, 0xB), &calls, &mut out);
        decode(&io(0, 4, 5_000, 0xA), &calls, &mut out);
        // Too short for its entry time and object: dropped, not misread.
        decode(&io(0, 4, 5_000, 0xA)[..RECORD_BYTES + 4], &calls, &mut out);
        let call = |op, transport, object, bytes| IoCall {
            pid: 42,
            op,
            transport,
            object,
            bytes,
        };
        let w = call(IoOp::Write, Transport::UnixStream, 0xB, 100);
        let r = call(IoOp::Read, Transport::Pipe, 0xA, 4);
        let got: Vec<(u64, EventKind)> = out.events.iter().map(|e| (e.ts_ns, e.kind)).collect();
        assert_eq!(
            got,
            [
                (4_000, EventKind::IoEnter { io: w }),
                (5_000, EventKind::IoExit { io: w }),
                (5_000, EventKind::IoEnter { io: r }),
                (5_000, EventKind::IoExit { io: r }),
            ]
        );
        assert_eq!(out.dropped, 1);
    }

    #[test]
    fn the_ring_is_a_bounded_power_of_two() {
        assert_eq!(ring_bytes(1), 1 << 20);
        assert_eq!(ring_bytes(3), 4 << 20);
        assert_eq!(ring_bytes(64), 64 << 20);
        assert_eq!(ring_bytes(4096), 1024 << 20);
        assert_eq!(ring_bytes(0), 1 << 20);
    }
}
