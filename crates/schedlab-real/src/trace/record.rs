//! Recording a program's scheduler events for `schedlab record`. [`record_from`] takes them
//! from the BPF recorder ([`super::record_bpf`], the same events without tracing system calls)
//! where it loads, and otherwise, or when asked, through a private tracefs instance, as
//! [`record`] does: through a private tracefs
//! instance (the same lifecycle as [`SchedTrace`](super::SchedTrace): created under a name that
//! carries our pid, removed on drop, and removed by the next schedlab when a `SIGKILL` left it).
//!
//! Events, from the kernel's `include/trace/events/sched.h` and `syscalls.h`:
//! `sched_switch` (with `prev_state`), `sched_waking` (in the waker's context: the line's own
//! pid is the waker), `sched_process_fork`, `sched_process_exit`, `sched_migrate_task`, and
//! `raw_syscalls:sys_enter`/`sys_exit` filtered in the kernel to the calls a sleep is classified
//! by (timers, the poll family, sched_yield, wait4/waitid) — every other call is dropped before
//! it reaches the buffer, which keeps the cost of read/write-heavy programs down.
//! `sched_wakeup` is not recorded: `sched_waking` already names the waker, and the first switch
//! to the task ends its sleep.
//!
//! Only the traced tree is recorded: its task ids go to the instance's `set_event_pid` with
//! `options/event-fork` on, so the kernel adds every task they create. For a command, the pid
//! list holds the recording thread itself before it forks the command (so the command is traced
//! from its first instruction); the recorder's own few events are ignored by the conversion,
//! which starts from the command's pid. The ring buffer is read once, after recording, from the
//! text `trace` file (all CPUs merged in time order), so reading costs the program nothing
//! while it runs; a buffer too small for the run shows up as lost events
//! (`per_cpu/cpuN/stats`), never as a silently shorter trace.

use super::parse::{self, parse_cpu, parse_int, rfind, Cursor};
use super::tracefs::{cleanup_stale_in, cleanup_stale_mounts, Instance, Tracefs};
use super::TraceError;
use schedlab_workload::sched_events::{Call, EventKind, LeftAs, Recording, SchedEvent};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

/// What to record.
#[derive(Clone, Debug)]
pub enum Target {
    /// Run this command (program and arguments) and record it until it exits.
    Command(Vec<String>),
    /// Record the running process `pid` (all its threads and what they create) for `duration`,
    /// or until it exits.
    Pid {
        /// The process.
        pid: i32,
        /// How long.
        duration: Duration,
    },
}

/// Why recording failed.
#[derive(Debug, Error)]
pub enum RecordError {
    /// The program is not an executable file, or not on PATH.
    #[error("command not found: {name:?} ({why}); nothing was recorded")]
    CommandNotFound {
        /// The program as given.
        name: String,
        /// Where it was looked for.
        why: String,
    },
    /// The command could not be started.
    #[error("cannot start {name:?}: {source}")]
    Spawn {
        /// The program.
        name: String,
        /// The system's error.
        source: io::Error,
    },
    /// No such process.
    #[error("--pid {0}: no such process (accepted: the id of a running process, as in /proc)")]
    NoProcess(i32),
    /// An empty command line.
    #[error("no command given; use `schedlab record -o FILE.toml -- CMD ARGS...` or --pid PID")]
    NoCommand,
    /// Tracing could not be set up or read.
    #[error("{0}")]
    Trace(#[from] TraceError),
    /// Interrupted (SIGINT/SIGTERM): the command was ended and nothing written.
    #[error(
        "interrupted: the recording was abandoned and its tracefs instance or BPF programs removed"
    )]
    Interrupted,
    /// `--source bpf` was asked for and the recorder could not load.
    #[error("--source bpf: {0} (accepted: --source auto, which falls back to tracefs, or --source tracefs)")]
    Bpf(#[from] crate::bpf::BpfError),
}

/// Where the events come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// BPF where it loads (privilege, BTF, x86-64), tracefs otherwise.
    Auto,
    /// The BPF recorder ([`super::record_bpf`]), or fail.
    Bpf,
    /// A private tracefs instance.
    Tracefs,
}

impl std::str::FromStr for Source {
    type Err = String;
    fn from_str(s: &str) -> Result<Source, String> {
        match s {
            "auto" => Ok(Source::Auto),
            "bpf" => Ok(Source::Bpf),
            "tracefs" => Ok(Source::Tracefs),
            _ => Err(format!(
                "unknown recording source {s:?} (accepted: auto, bpf, tracefs)"
            )),
        }
    }
}

/// How the tracefs recorder's events were recorded, for the file's header.
pub const VIA_TRACEFS: &str =
    "a tracefs instance (sched events, raw_syscalls filtered to the watched calls)";
/// How the BPF recorder's events were recorded, for the file's header.
pub const VIA_BPF: &str =
    "BPF (sched tracepoints into a ring buffer; the blocking call read from the task's registers)";
/// The tracepoints recorded, with their systems.
const EVENTS: [(&str, &str); 7] = [
    ("sched", "sched_switch"),
    ("sched", "sched_waking"),
    ("sched", "sched_process_fork"),
    ("sched", "sched_process_exit"),
    ("sched", "sched_migrate_task"),
    ("raw_syscalls", "sys_enter"),
    ("raw_syscalls", "sys_exit"),
];

/// The system calls a sleep is classified by, with their class.
// The numbers are c_long: i64 on 64-bit targets (where the conversion is the identity), i32 on
// 32-bit ones.
#[allow(clippy::useless_conversion)]
pub(super) fn watched_calls() -> Vec<(i64, Call)> {
    let mut v = vec![
        (libc::SYS_nanosleep, Call::Timer),
        (libc::SYS_clock_nanosleep, Call::Timer),
        (libc::SYS_pselect6, Call::Poll),
        (libc::SYS_ppoll, Call::Poll),
        (libc::SYS_epoll_pwait, Call::Poll),
        (libc::SYS_sched_yield, Call::Yield),
        (libc::SYS_wait4, Call::WaitChild),
        (libc::SYS_waitid, Call::WaitChild),
    ];
    // The calls only the older architectures have.
    #[cfg(target_arch = "x86_64")]
    v.extend([
        (libc::SYS_select, Call::Poll),
        (libc::SYS_poll, Call::Poll),
        (libc::SYS_epoll_wait, Call::Poll),
    ]);
    v.into_iter().map(|(n, c)| (i64::from(n), c)).collect()
}

/// Find `program` as execvp would: a path with a slash as it is, else each PATH directory.
pub fn resolve_program(program: &str) -> Result<PathBuf, RecordError> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() {
        return Err(RecordError::NoCommand);
    }
    if program.contains('/') {
        let p = PathBuf::from(program);
        return if executable(&p) {
            Ok(p)
        } else {
            Err(RecordError::CommandNotFound {
                name: program.into(),
                why: "no executable file at that path".into(),
            })
        };
    }
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| executable(p))
        .ok_or_else(|| RecordError::CommandNotFound {
            name: program.into(),
            why: format!("not an executable in PATH={path}"),
        })
}

/// Record `target` from `source` with a buffer of `buffer_mb` MiB (tracefs: per CPU; BPF: the
/// one ring, see [`super::record_bpf::ring_bytes`]); `stop` (set by a SIGINT/SIGTERM handler)
/// abandons the recording, ends the command and removes what was set up. `Source::Auto` falls
/// back to tracefs when BPF does not load, and says why on standard error; the recording's `via`
/// says which was used.
pub fn record_from(
    target: &Target,
    source: Source,
    buffer_mb: u32,
    data_flow: bool,
    stop: &AtomicBool,
) -> Result<Recording, RecordError> {
    check_target(target)?;
    if buffer_mb == 0 {
        return Err(TraceError::ZeroBuffer.into());
    }
    if source != Source::Tracefs {
        match super::record_bpf::BpfRecorder::open(buffer_mb, data_flow) {
            Ok(recorder) => return record_bpf(target, recorder, stop),
            Err(e) if source == Source::Bpf => return Err(RecordError::Bpf(e)),
            Err(e) => eprintln!("record: {e}; recording through tracefs instead"),
        }
    }
    record(target, buffer_mb as usize * 1024, stop)
}

/// Everything a user can get wrong about the target, checked before tracing starts.
fn check_target(target: &Target) -> Result<(), RecordError> {
    match target {
        Target::Command(argv) => {
            resolve_program(argv.first().ok_or(RecordError::NoCommand)?)?;
        }
        Target::Pid { pid, .. } => {
            if *pid <= 0 || !Path::new(&format!("/proc/{pid}")).exists() {
                return Err(RecordError::NoProcess(*pid));
            }
        }
    }
    Ok(())
}

/// The recording's facts other than its events.
fn new_recording(via: &str) -> Recording {
    Recording {
        kernel: kernel_release(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        started_utc: utc_now(),
        via: via.into(),
        ..Recording::default()
    }
}

/// Record `target` through tracefs with `buffer_kb_per_cpu` KiB of ring buffer per CPU; `stop`
/// (set by a SIGINT/SIGTERM handler) abandons the recording, ends the command and removes the
/// instance.
pub fn record(
    target: &Target,
    buffer_kb_per_cpu: usize,
    stop: &AtomicBool,
) -> Result<Recording, RecordError> {
    check_target(target)?;
    if buffer_kb_per_cpu == 0 {
        return Err(TraceError::ZeroBuffer.into());
    }
    cleanup_stale_mounts();
    let fs = Tracefs::open()?;
    cleanup_stale_in(&fs.root);
    let inst = Instance::create(&fs.root)?;
    inst.prepare_buffer(buffer_kb_per_cpu)?;
    inst.write("trace_clock", "mono")?;
    let filter = watched_calls()
        .iter()
        .map(|(n, _)| format!("id == {n}"))
        .collect::<Vec<_>>()
        .join(" || ");
    for (system, event) in EVENTS {
        if system == "raw_syscalls" {
            inst.write(&format!("events/{system}/{event}/filter"), &filter)?;
        }
        inst.write(&format!("events/{system}/{event}/enable"), "1")?;
    }
    inst.write("options/event-fork", "1")?;
    let mut rec = new_recording(VIA_TRACEFS);
    let run = match target {
        Target::Command(argv) => {
            rec.source = argv.join(" ");
            inst.write("set_event_pid", &crate::sys::gettid().to_string())?;
            record_command(
                argv,
                stop,
                &mut rec,
                || Ok(inst.write("tracing_on", "1")?),
                |_| {},
            )
        }
        Target::Pid { pid, duration } => {
            rec.source = format!("--pid {pid} ({})", comm_of(*pid).unwrap_or_default());
            let tids = threads_of(*pid)?;
            let list = tids
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(" ");
            inst.write("set_event_pid", &list)?;
            rec.roots = tids;
            rec.start_ns = crate::sys::monotonic_ns();
            inst.write("tracing_on", "1")?;
            record_pid(*pid, *duration, stop, &mut rec)
        }
    };
    let _ = inst.write("tracing_on", "0");
    run?;
    rec.lost = inst.read_lost()?;
    let trace = inst.path("trace");
    let f = std::fs::File::open(&trace).map_err(|source| TraceError::Io {
        doing: "cannot open",
        path: trace.clone(),
        source,
    })?;
    read_events(BufReader::with_capacity(1 << 20, f), &mut rec).map_err(|source| {
        TraceError::Io {
            doing: "reading",
            path: trace,
            source,
        }
    })?;
    for (system, event) in EVENTS {
        let _ = inst.write(&format!("events/{system}/{event}/enable"), "0");
    }
    drop(inst);
    drop(fs);
    Ok(rec)
}

/// Record through the BPF recorder: the calling thread is traced while it forks the command
/// (so the command is traced from its first instruction, its fork adding it to the traced set),
/// then only the command's tree; or every thread of `--pid`'s process (its thread group: the
/// threads it has now and those it starts).
fn record_bpf(
    target: &Target,
    mut recorder: super::record_bpf::BpfRecorder,
    stop: &AtomicBool,
) -> Result<Recording, RecordError> {
    let mut rec = new_recording(&format!("{VIA_BPF}; {}", recorder.io));
    let run = match target {
        Target::Command(argv) => {
            rec.source = argv.join(" ");
            let me = crate::sys::gettid();
            let recorder = std::cell::RefCell::new(&mut recorder);
            record_command(
                argv,
                stop,
                &mut rec,
                || Ok(recorder.borrow_mut().trace(me)?),
                |_| recorder.borrow_mut().untrace(me),
            )
        }
        Target::Pid { pid, duration } => {
            rec.source = format!("--pid {pid} ({})", comm_of(*pid).unwrap_or_default());
            let tids = threads_of(*pid)?;
            recorder.trace_group(tgid_of(*pid)?)?;
            for &t in &tids {
                if let Some(name) = std::fs::read_to_string(format!("/proc/{pid}/task/{t}/comm"))
                    .ok()
                    .map(|s| s.trim().to_string())
                {
                    rec.names.insert(t, name);
                }
            }
            rec.roots = tids;
            rec.start_ns = crate::sys::monotonic_ns();
            record_pid(*pid, *duration, stop, &mut rec)
        }
    };
    // On every path (an error, an interruption) the programs are detached and the thread joined
    // here or by the recorder's drop.
    let (drained, lost) = recorder.finish()?;
    run?;
    rec.events = drained.events;
    rec.lost = lost;
    for (tid, name) in drained.names {
        rec.names.insert(tid, name);
    }
    // The threads of --pid still alive keep the name they have now (the others were named at
    // their exit).
    if let Target::Pid { pid, .. } = target {
        for t in threads_of(*pid).unwrap_or_default() {
            if let Ok(name) = std::fs::read_to_string(format!("/proc/{pid}/task/{t}/comm")) {
                rec.names.insert(t, name.trim().to_string());
            }
        }
    }
    Ok(rec)
}

/// Start the command (`start` is called just before it is forked, `spawned` with its pid just
/// after) and wait for it to exit.
fn record_command(
    argv: &[String],
    stop: &AtomicBool,
    rec: &mut Recording,
    start: impl FnOnce() -> Result<(), RecordError>,
    spawned: impl FnOnce(i32),
) -> Result<(), RecordError> {
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    rec.start_ns = crate::sys::monotonic_ns();
    start()?;
    let child = cmd.spawn();
    let mut child = child.map_err(|source| RecordError::Spawn {
        name: argv[0].clone(),
        source,
    })?;
    spawned(child.id() as i32);
    rec.roots = vec![child.id() as i32];
    // The end is seen through a pidfd the moment it comes (a try_wait every 5 ms made the
    // recorded run up to 5 ms longer than the program's); without one, by polling.
    let pidfd = crate::sys::pidfd_open(child.id() as i32).ok();
    let result = loop {
        if stop.load(Ordering::Relaxed) {
            let _ = child.kill();
            let _ = child.wait();
            break Err(RecordError::Interrupted);
        }
        if let Some(fd) = pidfd {
            if crate::sys::ended_within(fd, Duration::from_millis(5)) {
                rec.stop_ns = crate::sys::monotonic_ns();
            }
        }
        match child.try_wait() {
            Ok(Some(_)) => break Ok(()),
            Ok(None) if pidfd.is_none() => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {}
            Err(source) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(RecordError::Spawn {
                    name: argv[0].clone(),
                    source,
                });
            }
        }
    };
    if let Some(fd) = pidfd {
        crate::sys::close(fd);
    }
    if rec.stop_ns == 0 {
        rec.stop_ns = crate::sys::monotonic_ns();
    }
    result
}

/// The threads of process `pid`.
fn threads_of(pid: i32) -> Result<Vec<i32>, RecordError> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/task"))
        .map_err(|_| RecordError::NoProcess(pid))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect())
}

/// The thread group (process) `pid` belongs to.
fn tgid_of(pid: i32) -> Result<i32, RecordError> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Tgid:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .ok_or(RecordError::NoProcess(pid))
}

/// Wait while `pid`'s threads are traced, for `duration` or until it exits.
fn record_pid(
    pid: i32,
    duration: Duration,
    stop: &AtomicBool,
    rec: &mut Recording,
) -> Result<(), RecordError> {
    let until = Instant::now() + duration;
    let alive = Path::new("/proc").join(pid.to_string());
    while Instant::now() < until && alive.exists() {
        if stop.load(Ordering::Relaxed) {
            return Err(RecordError::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(5).min(until - Instant::now()));
    }
    rec.stop_ns = crate::sys::monotonic_ns();
    Ok(())
}

fn comm_of(pid: i32) -> Option<String> {
    Some(
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .ok()?
            .trim()
            .to_string(),
    )
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The time now as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    schedlab_workload::duration::utc_time(secs)
}

/// Parse the text trace into `rec.events` (and the tasks' names).
pub(super) fn read_events<R: BufRead>(mut r: R, rec: &mut Recording) -> io::Result<()> {
    let calls: HashMap<i64, Call> = watched_calls().into_iter().collect();
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if let Some((ev, comm)) = parse_record_line(&line, &calls) {
            let pid = match ev.kind {
                EventKind::Waking { waker, .. } => waker,
                EventKind::Fork { parent, .. } => parent,
                EventKind::Exit { pid }
                | EventKind::SysEnter { pid, .. }
                | EventKind::SysExit { pid } => pid,
                EventKind::IoEnter { io } | EventKind::IoExit { io } => io.pid,
                EventKind::Switch { prev, .. } => prev,
                EventKind::Migrate { .. } => 0,
            };
            if pid > 0 && !comm.is_empty() {
                // The last name wins: the name after exec.
                match rec.names.get_mut(&pid) {
                    Some(n) if n.as_bytes() == comm => {}
                    _ => {
                        rec.names
                            .insert(pid, String::from_utf8_lossy(comm).into_owned());
                    }
                }
            }
            rec.events.push(ev);
        }
    }
    Ok(())
}

/// The event names we parse, after the `": "` that ends the header.
const NAMES: [&[u8]; 7] = [
    b"sched_switch: ",
    b"sched_waking: ",
    b"sched_process_fork: ",
    b"sched_process_exit: ",
    b"sched_migrate_task: ",
    b"sys_enter: ",
    b"sys_exit: ",
];

/// One line: its event, and the name of the task in whose context it was recorded.
fn parse_record_line<'a>(
    line: &'a [u8],
    calls: &HashMap<i64, Call>,
) -> Option<(SchedEvent, &'a [u8])> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    if line.first() == Some(&b'#') {
        return None;
    }
    // The header ends at the first ": NAME: " after a timestamp; a task name (15 bytes) could
    // hold a short look-alike, so each occurrence is tried until the header before it parses.
    let mut from = 0;
    loop {
        let h = parse::find(line, b": s", from)?;
        from = h + 1;
        let rest = &line[h + 2..];
        let Some(k) = NAMES.iter().position(|n| rest.starts_with(n)) else {
            continue;
        };
        let header = &line[..h];
        let Some((comm, pid, cpu, ts_ns)) = parse_header(header) else {
            continue;
        };
        let body = &rest[NAMES[k].len()..];
        let kind = match k {
            0 => {
                let (prev, state, next) = parse::parse_switch_fields(body)?;
                let left = match state.first() {
                    Some(b'R') => LeftAs::Runnable,
                    Some(b'X') | Some(b'Z') => LeftAs::Dead,
                    _ => LeftAs::Sleeping,
                };
                EventKind::Switch {
                    prev,
                    left,
                    next,
                    prev_runtime_ns: None,
                }
            }
            1 => match parse::parse_wakeup(body)? {
                parse::Event::Wakeup { pid: wakee, .. } => EventKind::Waking { waker: pid, wakee },
                _ => return None,
            },
            2 => {
                let p = rfind(body, b" child_pid=")?;
                let mut c = Cursor::new(body, p);
                c.lit(b" child_pid=")?;
                let child = i32::try_from(c.int()?).ok()?;
                EventKind::Fork { parent: pid, child }
            }
            3 => EventKind::Exit { pid },
            4 => {
                let p = rfind(body, b" pid=")?;
                let mut c = Cursor::new(body, p);
                c.lit(b" pid=")?;
                let moved = i32::try_from(c.int()?).ok()?;
                let d = rfind(body, b" dest_cpu=")?;
                let mut c = Cursor::new(body, d);
                c.lit(b" dest_cpu=")?;
                let dest_cpu = u32::try_from(c.int()?).ok()?;
                EventKind::Migrate {
                    pid: moved,
                    dest_cpu,
                }
            }
            5 => {
                let mut c = Cursor::new(body, 0);
                c.lit(b"NR ")?;
                let nr = c.int()?;
                EventKind::SysEnter {
                    pid,
                    call: calls.get(&nr).copied().unwrap_or(Call::Other(nr)),
                }
            }
            _ => EventKind::SysExit { pid },
        };
        return Some((SchedEvent { ts_ns, cpu, kind }, comm));
    }
}

/// `<comm>-<pid> [<cpu>] <secs>.<frac>`: the name, pid, CPU and time (ns).
fn parse_header(header: &[u8]) -> Option<(&[u8], i32, u32, u64)> {
    let ts = header.rsplit(|&b| b == b' ').next()?;
    let dot = ts.iter().position(|&b| b == b'.')?;
    let (secs, n) = parse_int(&ts[..dot])?;
    if n != dot {
        return None;
    }
    let frac = &ts[dot + 1..];
    let (f, n) = parse_int(frac)?;
    if n != frac.len() || n > 9 || f < 0 {
        return None;
    }
    let ts_ns = u64::try_from(secs).ok()? * 1_000_000_000 + f as u64 * 10u64.pow(9 - n as u32);
    let cpu = parse_cpu(header)?;
    let open = header.iter().rposition(|&b| b == b'[')?;
    let who = header[..open].trim_ascii();
    let dash = who.iter().rposition(|&b| b == b'-')?;
    let (pid, n) = parse_int(&who[dash + 1..])?;
    if n != who.len() - dash - 1 {
        return None;
    }
    Some((&who[..dash], i32::try_from(pid).ok()?, cpu, ts_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Recording {
        let mut rec = Recording::default();
        read_events(text.as_bytes(), &mut rec).unwrap();
        rec
    }

    #[test]
    fn parses_every_recorded_event() {
        let nanosleep = libc::SYS_clock_nanosleep;
        let text = format!(
            "# tracer: nop\n\
             \x20         <idle>-0       [001]   100.000001: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=my prog-1 next_pid=42 next_prio=120\n\
             \x20       my prog-1-42      [001]   100.000101: sys_enter: NR {nanosleep} (1, 0, 7ffd, 0, 0, 0)\n\
             \x20       my prog-1-42      [001]   100.000102: sched_switch: prev_comm=my prog-1 prev_pid=42 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n\
             \x20         <idle>-0       [000]   100.001000: sched_waking: comm=my prog-1 pid=42 prio=120 target_cpu=001\n\
             \x20       my prog-1-42      [001]   100.001010: sys_exit: NR {nanosleep} = 0\n\
             \x20       my prog-1-42      [001]   100.001020: sched_process_fork: comm=my prog-1 pid=42 child_comm=my prog-1 child_pid=43\n\
             \x20            kid-43      [000]   100.001030: sys_enter: NR 0 (3, 7ffd, 1, 0, 0, 0)\n\
             \x20            kid-43      [000]   100.001040: sched_process_exit: comm=kid pid=43 prio=120 group_dead=1\n\
             \x20            kid-43      [000]   100.001050: sched_switch: prev_comm=kid prev_pid=43 prev_prio=120 prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120\n\
             \x20         <idle>-0       [000]   100.001060: sched_migrate_task: comm=my prog-1 pid=42 prio=120 orig_cpu=1 dest_cpu=0\n\
             \x20         <idle>-0       [000]   100.001070: sched_wakeup: comm=my prog-1 pid=42 prio=120 target_cpu=001\n"
        );
        let rec = parse(&text);
        let kinds: Vec<EventKind> = rec.events.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::Switch {
                    prev: 0,
                    left: LeftAs::Runnable,
                    next: 42,
                    prev_runtime_ns: None,
                },
                EventKind::SysEnter {
                    pid: 42,
                    call: Call::Timer
                },
                EventKind::Switch {
                    prev: 42,
                    left: LeftAs::Sleeping,
                    next: 0,
                    prev_runtime_ns: None,
                },
                EventKind::Waking {
                    waker: 0,
                    wakee: 42
                },
                EventKind::SysExit { pid: 42 },
                EventKind::Fork {
                    parent: 42,
                    child: 43
                },
                EventKind::SysEnter {
                    pid: 43,
                    call: Call::Other(0)
                },
                EventKind::Exit { pid: 43 },
                EventKind::Switch {
                    prev: 43,
                    left: LeftAs::Dead,
                    next: 0,
                    prev_runtime_ns: None,
                },
                EventKind::Migrate {
                    pid: 42,
                    dest_cpu: 0
                },
            ]
        );
        assert_eq!(rec.events[0].ts_ns, 100_000_001_000);
        assert_eq!(rec.events[3].cpu, 0);
        assert_eq!(rec.names[&42], "my prog-1");
        assert_eq!(rec.names[&43], "kid");
    }

    #[test]
    fn a_missing_command_is_refused_before_tracing() {
        let e = resolve_program("schedlab-no-such-program-xyz").unwrap_err();
        assert!(e.to_string().contains("command not found"), "{e}");
        let e = resolve_program("/nonexistent/prog").unwrap_err();
        assert!(e.to_string().contains("no executable file"), "{e}");
        assert!(resolve_program("sh").is_ok());
        let stop = AtomicBool::new(false);
        let e = record(
            &Target::Command(vec!["schedlab-no-such-program-xyz".into()]),
            1024,
            &stop,
        )
        .unwrap_err();
        assert!(matches!(e, RecordError::CommandNotFound { .. }), "{e}");
        let e = record(
            &Target::Pid {
                pid: i32::MAX,
                duration: Duration::from_secs(1),
            },
            1024,
            &stop,
        )
        .unwrap_err();
        assert!(matches!(e, RecordError::NoProcess(_)), "{e}");
    }

    #[test]
    fn utc_text_is_well_formed() {
        let s = utc_now();
        assert_eq!(s.len(), 23, "{s}");
        assert!(s.starts_with("20") && s.ends_with(" UTC"), "{s}");
    }
}
