//! The run-queue timeline of the real kernel, reconstructed from scheduler tracepoints
//! (`include/trace/events/sched.h`) recorded, unfiltered, into a private tracefs instance of
//! its own (`instances/schedlab-<pid>-<n>`, beside the counters' one):
//!
//! - `sched_switch` on CPU C from `prev` to `next`: `next` is running on C; `prev` is waiting on
//!   C if its `prev_state` is `R`/`R+` (preempted, still runnable), else off (asleep, or dead).
//!   `next_pid`/`prev_pid` 0 is C's idle task: C runs nothing.
//! - `sched_wakeup` and `sched_wakeup_new` (a fork's child made runnable): the task is waiting
//!   on `target_cpu`.
//! - `sched_migrate_task` of a runnable task: it now waits on `dest_cpu` (the migration of a
//!   sleeping task at its wakeup changes nothing until the wakeup says where it went).
//! - `sched_process_exit`: the thread id is retired, so that a reused id is a new task of the
//!   timeline (tasks come and go: a fork is a new row whose first event is its wakeup).
//!
//! Tasks that were already runnable when recording started show up first in a switch: one first
//! seen leaving CPU C (`prev`) was running there since the start (any earlier switch on C would
//! have named it), and one first seen entering C (`next`) with no wakeup before was waiting
//! there since the start (its wakeup came before the recording). Both are set from time 0.
//! A runnable task first seen in a migration counts from that migration on.
//!
//! The instance uses `trace_clock` `mono` (CLOCK_MONOTONIC), so that event times and the
//! recording's start and stop are on one clock; the text output prints microseconds, which is
//! the timeline's resolution. Lost events (`per_cpu/cpuN/stats`, `overwrite` off: a full buffer
//! drops the newest) are counted and reported, never fatal: the lengths after them may be wrong.
//!
//! Which CPUs a task may run on (for idle-while-waiting) is known for the workload's tasks from
//! their group's `cpus=` knob; for any other task it is read from `/proc/<tid>/status`
//! (`Cpus_allowed_list`) when the timeline is collected, and a task gone by then is not counted
//! as one that could have used an idle CPU.

use super::tracefs::{cleanup_stale_in, cleanup_stale_mounts, Instance, Tracefs};
use super::{parse, TraceError};
use schedlab_workload::timeline::{TaskState, Timeline, TimelineTask};
use std::collections::HashMap;
use std::fs;
use std::io::{self, BufRead, BufReader};

/// The events this instance enables.
const RQ_EVENTS: [&str; 5] = [
    "sched_switch",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_process_exit",
];

/// One parsed line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RqEvent {
    /// `sched_switch` on `cpu`.
    Switch {
        cpu: u32,
        prev_pid: i32,
        prev_runnable: bool,
        next_pid: i32,
    },
    /// `sched_wakeup` or `sched_wakeup_new`.
    Wakeup { pid: i32, target_cpu: u32 },
    /// `sched_migrate_task`.
    Migrate { pid: i32, dest_cpu: u32 },
    /// `sched_process_exit`.
    Exit { pid: i32 },
}

/// A workload task the timeline should name: its group and allowed CPUs.
#[derive(Clone, Debug)]
pub struct WorkloadTid {
    /// The group's name.
    pub group: String,
    /// CPUs it may run on (`None`: any).
    pub allowed: Option<Vec<u32>>,
}

/// A private tracefs instance recording every task's scheduling events.
#[derive(Debug)]
pub struct RqTrace {
    /// Removed on drop, before `fs` (a private mount) is detached.
    instance: Instance,
    #[allow(dead_code)]
    fs: Tracefs,
    recording: bool,
    lost_baseline: u64,
    /// CLOCK_MONOTONIC when recording started and stopped, ns.
    start_ns: u64,
    stop_ns: u64,
}

impl RqTrace {
    /// Create the instance with `buffer_kb_per_cpu` KiB per CPU, `trace_clock` mono, and the
    /// five events enabled for all tasks; recording is off until [`start`](Self::start).
    pub fn open(buffer_kb_per_cpu: usize) -> Result<RqTrace, TraceError> {
        if buffer_kb_per_cpu == 0 {
            return Err(TraceError::ZeroBuffer);
        }
        cleanup_stale_mounts();
        let fs = Tracefs::open()?;
        cleanup_stale_in(&fs.root);
        let instance = Instance::create(&fs.root)?;
        let t = RqTrace {
            instance,
            fs,
            recording: false,
            lost_baseline: 0,
            start_ns: 0,
            stop_ns: 0,
        };
        let inst = &t.instance;
        inst.prepare_buffer(buffer_kb_per_cpu)?;
        inst.write("trace_clock", "mono")?;
        for event in RQ_EVENTS {
            inst.write(&format!("events/sched/{event}/enable"), "1")?;
        }
        Ok(t)
    }

    /// Clear the buffer and start recording.
    pub fn start(&mut self) -> Result<(), TraceError> {
        self.instance.write("tracing_on", "0")?;
        self.instance.clear_buffer()?;
        self.lost_baseline = self.instance.read_lost()?;
        self.start_ns = crate::sys::monotonic_ns();
        self.instance.write("tracing_on", "1")?;
        self.recording = true;
        Ok(())
    }

    /// Stop recording.
    pub fn stop(&mut self) -> Result<(), TraceError> {
        if self.recording {
            self.instance.write("tracing_on", "0")?;
            self.stop_ns = crate::sys::monotonic_ns();
            self.recording = false;
        }
        Ok(())
    }

    /// Read what was recorded and rebuild every task's place over time, on `cpus` CPUs; the
    /// workload's tasks are `workload` (by thread id), every other task is "other".
    pub fn collect(
        &mut self,
        workload: &HashMap<i32, WorkloadTid>,
        cpus: usize,
    ) -> Result<Timeline, TraceError> {
        self.stop()?;
        let lost = (self.instance.read_lost()?).saturating_sub(self.lost_baseline);
        let trace = self.instance.path("trace");
        let file = fs::File::open(&trace).map_err(|source| TraceError::Io {
            doing: "cannot open",
            path: trace.clone(),
            source,
        })?;
        let mut b = Builder::new(workload, cpus, self.start_ns, self.stop_ns);
        b.feed(BufReader::with_capacity(1 << 20, file))
            .map_err(|source| TraceError::Io {
                doing: "reading",
                path: trace.clone(),
                source,
            })?;
        let mut tl = b.finish();
        tl.lost_events = lost;
        tl.source = self.source();
        Ok(tl)
    }

    /// The source, for the record.
    pub fn source(&self) -> String {
        format!("tracefs instance ({}, all tasks)", RQ_EVENTS.join(", "))
    }
}

impl Drop for RqTrace {
    fn drop(&mut self) {
        let _ = self.instance.write("tracing_on", "0");
        for event in RQ_EVENTS {
            let _ = self
                .instance
                .write(&format!("events/sched/{event}/enable"), "0");
        }
    }
}

/// Parse one line of the text `trace`: its time (ns) and event.
fn parse_rq_line(line: &[u8]) -> Option<(u64, RqEvent)> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    if line.first() == Some(&b'#') {
        return None;
    }
    let mut from = 0;
    let (marker, name_end) = loop {
        let h = parse::find(line, b": sched_", from)?;
        let rest = &line[h + 8..];
        let known = [
            &b"switch: "[..],
            b"wakeup: ",
            b"wakeup_new: ",
            b"migrate_task: ",
            b"process_exit: ",
        ];
        if let Some(k) = known.iter().find(|k| rest.starts_with(k)) {
            break (h, h + 8 + k.len());
        }
        from = h + 1;
    };
    let header = &line[..marker];
    let ts = header.rsplit(|&b| b == b' ').next()?;
    let dot = ts.iter().position(|&b| b == b'.')?;
    let (secs, _) = parse::parse_int(&ts[..dot])?;
    let frac = &ts[dot + 1..];
    let (f, n) = parse::parse_int(frac)?;
    if n != frac.len() || n > 9 {
        return None;
    }
    let ns = u64::try_from(secs).ok()? * 1_000_000_000
        + u64::try_from(f).ok()? * 10u64.pow(9 - n as u32);
    let body = &line[name_end..];
    let ev = match &line[marker + 8..name_end] {
        b"switch: " => match parse::parse_switch(body, parse::parse_cpu(header)?)? {
            parse::Event::Switch {
                cpu,
                prev_pid,
                prev_runnable,
                next_pid,
            } => RqEvent::Switch {
                cpu,
                prev_pid,
                prev_runnable,
                next_pid,
            },
            _ => return None,
        },
        b"wakeup: " | b"wakeup_new: " => match parse::parse_wakeup(body)? {
            parse::Event::Wakeup { pid, target_cpu } => RqEvent::Wakeup { pid, target_cpu },
            _ => return None,
        },
        b"migrate_task: " => {
            let p = parse::rfind(body, b" pid=")?;
            let mut c = parse::Cursor::new(body, p);
            c.lit(b" pid=")?;
            let pid = i32::try_from(c.int()?).ok()?;
            c.lit(b" prio=")?;
            c.int()?;
            c.lit(b" orig_cpu=")?;
            c.int()?;
            c.lit(b" dest_cpu=")?;
            let dest_cpu = u32::try_from(c.int()?).ok()?;
            RqEvent::Migrate { pid, dest_cpu }
        }
        _ => {
            let p = parse::rfind(body, b" pid=")?;
            let mut c = parse::Cursor::new(body, p);
            c.lit(b" pid=")?;
            RqEvent::Exit {
                pid: i32::try_from(c.int()?).ok()?,
            }
        }
    };
    Some((ns, ev))
}

/// Replays parsed events into a [`Timeline`].
struct Builder<'a> {
    workload: &'a HashMap<i32, WorkloadTid>,
    tl: Timeline,
    /// The current timeline task of each live thread id, and its state.
    tids: HashMap<i32, (u32, TaskState, u32)>,
    /// Thread id of each timeline task (for reading affinities).
    tid_of: Vec<i32>,
    /// Thread ids that passed `sched_process_exit` and have not yet left their CPU.
    exiting: std::collections::HashSet<i32>,
    /// Tasks' places at time 0 (those already runnable when recording started).
    initial: Vec<(u32, u32, TaskState)>,
    start_ns: u64,
    stop_ns: u64,
}

impl<'a> Builder<'a> {
    fn new(
        workload: &'a HashMap<i32, WorkloadTid>,
        cpus: usize,
        start_ns: u64,
        stop_ns: u64,
    ) -> Builder<'a> {
        Builder {
            workload,
            tl: Timeline::new(cpus, "", "all"),
            tids: HashMap::new(),
            tid_of: Vec::new(),
            initial: Vec::new(),
            exiting: Default::default(),
            start_ns,
            stop_ns,
        }
    }

    fn feed(&mut self, mut r: impl BufRead) -> io::Result<()> {
        let mut line = Vec::with_capacity(256);
        loop {
            line.clear();
            if r.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            if let Some((ns, ev)) = parse_rq_line(&line) {
                self.event(ns.saturating_sub(self.start_ns), ev);
            }
        }
    }

    /// The timeline task of `tid`, made on first sight; returns it and whether it is new.
    fn task(&mut self, tid: i32) -> (u32, bool) {
        if let Some(&(t, ..)) = self.tids.get(&tid) {
            return (t, false);
        }
        let row = match self.workload.get(&tid) {
            Some(w) => TimelineTask {
                group: w.group.clone(),
                workload: true,
                allowed: w.allowed.clone(),
            },
            None => TimelineTask {
                group: "other".into(),
                workload: false,
                allowed: None,
            },
        };
        let t = self.tl.add_task(row);
        self.tid_of.push(tid);
        self.tids.insert(tid, (t, TaskState::Off, 0));
        (t, true)
    }

    /// `tid` is `state` on `cpu` from `t_ns` on.
    fn set(&mut self, t_ns: u64, tid: i32, cpu: u32, state: TaskState) {
        let (t, _) = self.task(tid);
        self.tids.insert(tid, (t, state, cpu));
        self.tl.push(t_ns, t, cpu, state);
    }

    fn event(&mut self, t_ns: u64, ev: RqEvent) {
        let cpu = match ev {
            RqEvent::Switch { cpu, .. } => cpu,
            RqEvent::Wakeup { target_cpu, .. } => target_cpu,
            RqEvent::Migrate { dest_cpu, .. } => dest_cpu,
            RqEvent::Exit { .. } => 0,
        };
        if cpu as usize >= self.tl.cpus {
            // A CPU above the online count (a hole in the CPU list): widen the machine.
            self.tl.cpus = cpu as usize + 1;
        }
        match ev {
            RqEvent::Switch {
                cpu,
                prev_pid,
                prev_runnable,
                next_pid,
            } => {
                if prev_pid != 0 {
                    let (t, new) = self.task(prev_pid);
                    if new {
                        self.initial.push((t, cpu, TaskState::Running));
                    }
                    let state = if prev_runnable {
                        TaskState::Waiting
                    } else {
                        TaskState::Off
                    };
                    self.set(t_ns, prev_pid, cpu, state);
                    if state == TaskState::Off && self.exiting.remove(&prev_pid) {
                        self.tids.remove(&prev_pid);
                    }
                }
                if next_pid != 0 {
                    let (t, new) = self.task(next_pid);
                    if new {
                        self.initial.push((t, cpu, TaskState::Waiting));
                    }
                    self.set(t_ns, next_pid, cpu, TaskState::Running);
                }
            }
            RqEvent::Wakeup { pid, target_cpu } => {
                if pid != 0 {
                    self.set(t_ns, pid, target_cpu, TaskState::Waiting);
                }
            }
            RqEvent::Migrate { pid, dest_cpu } => {
                let (_, new) = self.task(pid);
                let &(_, state, _) = &self.tids[&pid];
                if !new && state != TaskState::Off {
                    self.set(t_ns, pid, dest_cpu, TaskState::Waiting);
                }
            }
            RqEvent::Exit { pid } => {
                // The task still runs until its last switch (prev_state dead); a later thread
                // with this id is another task.
                if self.tids.contains_key(&pid) {
                    self.exiting.insert(pid);
                }
            }
        }
    }

    fn finish(mut self) -> Timeline {
        let end = self.stop_ns.saturating_sub(self.start_ns);
        let mut events: Vec<_> = (self.initial.iter())
            .map(|&(t, cpu, state)| schedlab_workload::timeline::TaskEvent {
                t_ns: 0,
                task: t,
                cpu,
                state,
            })
            .collect();
        events.append(&mut self.tl.events);
        self.tl.events = events;
        self.tl.end_ns = end.max(self.tl.events.last().map_or(0, |e| e.t_ns));
        // Affinities of the other tasks, read now; a task gone is counted nowhere.
        for (t, &tid) in self.tl.tasks.iter_mut().zip(&self.tid_of) {
            if !t.workload {
                t.allowed = Some(allowed_cpus(tid).unwrap_or_default());
                if t.allowed.as_ref().is_some_and(|a| a.len() >= self.tl.cpus) {
                    t.allowed = None;
                }
            }
        }
        self.tl
    }
}

/// `Cpus_allowed_list` of thread `tid`, from `/proc/<tid>/status`.
fn allowed_cpus(tid: i32) -> Option<Vec<u32>> {
    let status = fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    let set: schedlab_workload::CpuSet = list.parse().ok()?;
    Some(set.iter().map(|&c| c as u32).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::timeline::replay::{analyse, length_changes};

    fn line(cpu: u32, us: u64, event: &str, body: &str) -> String {
        format!(
            "          task-1  [{cpu:03}] {}.{:06}: {event}: {body}\n",
            us / 1_000_000,
            us % 1_000_000
        )
    }

    fn switch(cpu: u32, us: u64, prev: i32, state: &str, next: i32) -> String {
        line(
            cpu,
            us,
            "sched_switch",
            &format!("prev_comm=a b-c prev_pid={prev} prev_prio=120 prev_state={state} ==> next_comm=x next_pid={next} next_prio=120"),
        )
    }

    fn wakeup(cpu: u32, us: u64, pid: i32, target: u32, new: bool) -> String {
        let ev = if new {
            "sched_wakeup_new"
        } else {
            "sched_wakeup"
        };
        line(
            cpu,
            us,
            ev,
            &format!("comm=s pid={pid} prio=120 target_cpu={target:03}"),
        )
    }

    #[test]
    fn parses_every_event_with_its_time() {
        assert_eq!(
            parse_rq_line(switch(1, 2_500_001, 10, "R+", 0).as_bytes()),
            Some((
                2_500_001_000,
                RqEvent::Switch {
                    cpu: 1,
                    prev_pid: 10,
                    prev_runnable: true,
                    next_pid: 0
                }
            ))
        );
        assert_eq!(
            parse_rq_line(wakeup(0, 7, 11, 1, true).as_bytes()),
            Some((
                7_000,
                RqEvent::Wakeup {
                    pid: 11,
                    target_cpu: 1
                }
            ))
        );
        let m = line(
            0,
            9,
            "sched_migrate_task",
            "comm=pid=3 pid=12 prio=120 orig_cpu=0 dest_cpu=1",
        );
        assert_eq!(
            parse_rq_line(m.as_bytes()),
            Some((
                9_000,
                RqEvent::Migrate {
                    pid: 12,
                    dest_cpu: 1
                }
            ))
        );
        let x = line(
            0,
            9,
            "sched_process_exit",
            "comm=w pid=13 prio=120 group_dead=false",
        );
        assert_eq!(
            parse_rq_line(x.as_bytes()),
            Some((9_000, RqEvent::Exit { pid: 13 }))
        );
        assert_eq!(parse_rq_line(b"# tracer: nop\n"), None);
    }

    /// Two hogs (10, 11) pinned to CPU 0 and a sleeper (12) that wakes on CPU 1 now and then; an
    /// other task (20) already running on CPU 1 at the start. CPU 0 holds 2 the whole time.
    #[test]
    fn rebuilds_two_pinned_hogs_and_a_sleeper() {
        let mut text = String::new();
        // 10 was running on CPU 0 and 11 waiting there when recording began.
        text += &switch(0, 1_000, 10, "R", 11);
        text += &switch(1, 1_500, 20, "S", 0);
        text += &wakeup(1, 2_000, 12, 1, false);
        text += &switch(1, 2_001, 0, "R", 12);
        text += &switch(0, 3_000, 11, "R+", 10);
        text += &switch(1, 3_001, 12, "S", 0);
        text += &wakeup(0, 4_000, 13, 1, true);
        text += &line(
            1,
            4_100,
            "sched_process_exit",
            "comm=t pid=13 prio=120 group_dead=true",
        );
        text += &switch(1, 4_200, 0, "R", 13);
        text += &switch(1, 4_300, 13, "X", 0);
        text += &switch(0, 5_000, 10, "R", 11);
        let workload: HashMap<i32, WorkloadTid> = [(10, vec![0]), (11, vec![0]), (12, vec![0, 1])]
            .into_iter()
            .map(|(tid, cpus)| {
                (
                    tid,
                    WorkloadTid {
                        group: "g".into(),
                        allowed: Some(cpus),
                    },
                )
            })
            .collect();
        let mut b = Builder::new(&workload, 2, 0, 6_000_000);
        b.feed(text.as_bytes()).unwrap();
        let tl = b.finish();
        // 10, 11, 20, 12, 13: the fork's child is a row of its own.
        assert_eq!(tl.tasks.len(), 5);
        let cpu0: Vec<u32> = length_changes(&tl, true)
            .iter()
            .filter(|c| c.1 == 0)
            .map(|c| c.2)
            .collect();
        assert_eq!(
            cpu0,
            vec![1, 2],
            "CPU 0 reaches 2 at time 0 and stays there"
        );
        let cpu1: Vec<(u64, u32)> = length_changes(&tl, true)
            .iter()
            .filter(|c| c.1 == 1)
            .map(|c| (c.0, c.2))
            .collect();
        assert_eq!(cpu1, vec![(2_000_000, 1), (3_001_000, 0)]);
        let all1: Vec<u32> = length_changes(&tl, false)
            .iter()
            .filter(|c| c.1 == 1)
            .map(|c| c.2)
            .collect();
        // 20 from the start, asleep at 1.5 ms; 12; 13 from its fork to its exit.
        assert_eq!(all1, vec![1, 0, 1, 0, 1, 0]);
        let s = analyse(&tl, 6);
        // CPU 1 idles while CPU 0 runs a hog with the other waiting, but they are pinned.
        assert_eq!(s.idle_while_waiting_s, 0.0);
        assert_eq!(s.series("workload").unwrap().lengths[0], vec![2.0; 6]);
    }

    /// The real kernel: two threads spinning, pinned to one CPU, and a thread sleeping in 5 ms
    /// steps. The hogs' CPU shows length 2 (both runnable: one running, one waiting) through the
    /// middle of the run. Needs root (tracefs).
    #[test]
    fn real_two_pinned_hogs_show_length_2_when_root() {
        use std::time::{Duration, Instant};
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: tracing needs root (CAP_SYS_ADMIN); run `sudo -E cargo test -p schedlab-real`");
            return;
        }
        let set = rustix::thread::sched_getaffinity(None).unwrap();
        let cpu = (0..rustix::thread::CpuSet::MAX_CPU)
            .find(|&c| set.is_set(c))
            .unwrap();
        let mut trace =
            RqTrace::open(16384).unwrap_or_else(|e| panic!("running as root, yet: {e}"));
        let (tx, rx) = std::sync::mpsc::channel();
        trace.start().unwrap();
        let t0 = Instant::now();
        let threads: Vec<_> = (0..3)
            .map(|i| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    if i < 2 {
                        let mut one = rustix::thread::CpuSet::new();
                        one.set(cpu);
                        rustix::thread::sched_setaffinity(None, &one).unwrap();
                    }
                    tx.send(crate::sys::gettid()).unwrap();
                    while t0.elapsed() < Duration::from_millis(400) {
                        if i == 2 {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let tids: Vec<i32> = rx.try_iter().collect();
        let workload: HashMap<i32, WorkloadTid> = tids
            .iter()
            .map(|&t| {
                (
                    t,
                    WorkloadTid {
                        group: "g".into(),
                        allowed: None,
                    },
                )
            })
            .collect();
        let tl = trace
            .collect(&workload, crate::host::online_cpus())
            .unwrap();
        drop(trace);
        let s = analyse(&tl, 40);
        let w = s.series("workload").unwrap();
        eprintln!(
            "{} events, lost {}; CPU {cpu}: {:?}",
            tl.events.len(),
            tl.lost_events,
            w.lengths[cpu]
        );
        assert_eq!(tl.lost_events, 0);
        // Bins 5..30 (50..300 ms of ~400): the two hogs, plus the sleeper while it waits for
        // this CPU after a wakeup here (longer when other tests keep the machine busy).
        let middle = &w.lengths[cpu][5..30];
        assert!(
            middle.iter().all(|&l| (1.99..=3.0).contains(&l)),
            "CPU {cpu}'s length in the middle: {middle:?}"
        );
        // Exactly: the hogs are always runnable, so the length never drops below 2 there.
        let lowest = length_changes(&tl, true)
            .iter()
            .filter(|c| c.1 as usize == cpu && (50_000_000..300_000_000).contains(&c.0))
            .map(|c| c.2)
            .min();
        assert!(
            lowest.is_none_or(|l| l >= 2),
            "CPU {cpu} fell to {lowest:?}"
        );
    }
}
