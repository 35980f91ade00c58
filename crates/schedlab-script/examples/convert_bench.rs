//! How long `schedlab record`'s converter takes, and how much memory, on traces of a million
//! scheduler events (or more) of three shapes a recording produces:
//!
//! - `pingpong`: a task forks a second and the two wake each other on one CPU (`perf bench
//!   sched pipe`);
//! - `hackbench`: a parent forks 20 sender/receiver pairs, each pair waking each other on its
//!   own CPU, switch records carrying the kernel's CPU-time readings (BPF's), then they exit
//!   and the parent reaps them (hackbench's threads);
//! - `make`: a parent forks children two at a time, each computing, sleeping on the disk
//!   (woken from outside) and exiting (`make -j2`).
//!
//! Durations are jittered, so the summariser has to find loops with an error rather than exact
//! repeats. The peak resident set is the process's (`VmHWM`: the trace in memory included), so
//! `bench/convert.sh` runs each shape in a process of its own and prints the figures against
//! the goal (under 10 s and under 500 MiB for a million events):
//!
//!     cargo run --release -p schedlab-script --example convert_bench -- [EVENTS [SHAPE]]

use schedlab_script::from_trace::convert;
use schedlab_workload::sched_events::{EventKind, LeftAs, Recording, SchedEvent};
use std::collections::HashMap;
use std::time::Instant;

/// A trace being built: events (sorted by time at the end) and each task's CPU-time reading.
#[derive(Default)]
struct Trace {
    events: Vec<SchedEvent>,
    runtime: HashMap<i32, u64>,
    running_since: HashMap<i32, u64>,
}

impl Trace {
    fn push(&mut self, ts_ns: u64, cpu: u32, kind: EventKind) {
        self.events.push(SchedEvent { ts_ns, cpu, kind });
    }
    /// `sched_switch` on `cpu`: `prev` leaves as `left`, `next` runs; `prev`'s reading charged.
    fn switch(&mut self, ts: u64, cpu: u32, prev: i32, left: LeftAs, next: i32) {
        let prev_runtime_ns = (prev != 0).then(|| {
            let since = self.running_since.remove(&prev).unwrap_or(ts);
            let total = self.runtime.entry(prev).or_default();
            *total += ts - since;
            *total
        });
        if next != 0 {
            self.running_since.insert(next, ts);
        }
        self.push(
            ts,
            cpu,
            EventKind::Switch {
                prev,
                left,
                next,
                prev_runtime_ns,
            },
        );
    }
    fn waking(&mut self, ts: u64, cpu: u32, waker: i32, wakee: i32) {
        self.push(ts, cpu, EventKind::Waking { waker, wakee });
    }
    fn fork(&mut self, ts: u64, cpu: u32, parent: i32, child: i32) {
        self.push(ts, cpu, EventKind::Fork { parent, child });
    }
    fn exit(&mut self, ts: u64, cpu: u32, pid: i32) {
        self.push(ts, cpu, EventKind::Exit { pid });
    }
    fn into_recording(mut self, source: &str, cpus: usize) -> Recording {
        self.events.sort_by_key(|e| e.ts_ns);
        let stop_ns = self.events.last().map_or(0, |e| e.ts_ns + 1);
        Recording {
            events: self.events,
            roots: vec![1],
            names: HashMap::from([(1, "bench".to_string())]),
            start_ns: 0,
            stop_ns,
            lost: 0,
            source: source.into(),
            kernel: "synthetic".into(),
            cpus,
            started_utc: "2026-01-01T00:00:00Z".into(),
            via: "synthetic trace (examples/convert_bench.rs)".into(),
        }
    }
}

/// A jitter of 0..range ns, deterministic (a multiplicative hash of `k`).
fn jitter(k: u64, range: u64) -> u64 {
    (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % range
}

/// Two tasks waking each other on CPU 0, `events` events.
fn pingpong(events: usize) -> Recording {
    let mut t = Trace::default();
    t.switch(0, 0, 0, LeftAs::Runnable, 1);
    t.fork(10, 0, 1, 2);
    let mut ts = 20;
    for k in 0..(events / 4) as u64 {
        let j = jitter(k, 100);
        t.waking(ts + 100 + j, 0, 1, 2);
        t.switch(ts + 110 + j, 0, 1, LeftAs::Sleeping, 2);
        t.waking(ts + 210 + j, 0, 2, 1);
        t.switch(ts + 220 + j, 0, 2, LeftAs::Sleeping, 1);
        ts += 220 + j;
    }
    t.into_recording("pingpong (synthetic)", 1)
}

/// A parent forking 20 sender/receiver pairs, each pair on its own CPU, then reaping them.
fn hackbench(events: usize) -> Recording {
    const PAIRS: i32 = 20;
    let mut t = Trace::default();
    t.switch(0, 0, 0, LeftAs::Runnable, 1);
    for p in 0..PAIRS {
        let (s, r) = (10 + 2 * p, 11 + 2 * p);
        t.fork(10 + p as u64 * 20, 0, 1, s);
        t.fork(20 + p as u64 * 20, 0, 1, r);
        let cpu = 1 + p as u32;
        t.switch(1_000, cpu, 0, LeftAs::Runnable, s);
    }
    t.switch(1_000, 0, 1, LeftAs::Sleeping, 0);
    let rounds = events.saturating_sub(PAIRS as usize * 6 + 4) / (4 * PAIRS as usize);
    let mut ends = 0;
    for p in 0..PAIRS {
        let (s, r, cpu) = (10 + 2 * p, 11 + 2 * p, 1 + p as u32);
        let mut ts = 1_000 + p as u64;
        for k in 0..rounds as u64 {
            let j = jitter(k * 64 + p as u64, 400);
            t.waking(ts + 2_000 + j, cpu, s, r);
            t.switch(ts + 2_100 + j, cpu, s, LeftAs::Sleeping, r);
            t.waking(ts + 3_000 + j / 2, cpu, r, s);
            t.switch(ts + 3_050 + j / 2, cpu, r, LeftAs::Sleeping, s);
            ts += 3_050 + j / 2;
        }
        // The sender exits, then the receiver (woken by it), which wakes the parent.
        t.exit(ts + 100, cpu, s);
        t.waking(ts + 150, cpu, s, r);
        t.switch(ts + 200, cpu, s, LeftAs::Dead, r);
        t.exit(ts + 300, cpu, r);
        t.waking(ts + 350, cpu, r, 1);
        t.switch(ts + 400, cpu, r, LeftAs::Dead, 0);
        ends = ends.max(ts + 400);
    }
    t.switch(ends + 100, 0, 0, LeftAs::Runnable, 1);
    t.exit(ends + 200, 0, 1);
    t.switch(ends + 300, 0, 1, LeftAs::Dead, 0);
    t.into_recording("hackbench-like pairs (synthetic)", 1 + PAIRS as usize)
}

/// A parent forking children two at a time (one per CPU), each computing and sleeping on the
/// disk 60 times and exiting, the parent reaping each pair. (Children of a few bursts each
/// would not fold: a million events of them is more steps than a workload file holds, which the
/// converter refuses with its reason.)
fn make(events: usize) -> Recording {
    const BURSTS: u64 = 60;
    // A child: fork, switch in, BURSTS × (waking from outside, switch out, switch in), exit,
    // waking of the parent, switch out dead.
    let per_child = 2 + 3 * BURSTS as usize + 3;
    let children = (events / (per_child + 2)).min(100_000) as i32;
    let mut t = Trace::default();
    t.switch(0, 0, 0, LeftAs::Runnable, 1);
    let mut ts = 100;
    let mut pid = 2;
    while pid < 2 + children {
        let pair = [pid, pid + 1];
        for (i, &c) in pair.iter().enumerate() {
            t.fork(ts + i as u64 * 10, 0, 1, c);
        }
        t.switch(ts + 30, 0, 1, LeftAs::Sleeping, 0);
        let mut done = 0;
        for (i, &c) in pair.iter().enumerate() {
            let cpu = i as u32;
            let mut at = ts + 40 + i as u64 * 5;
            t.switch(at, cpu, 0, LeftAs::Runnable, c);
            for b in 0..BURSTS {
                let j = jitter((c as u64) * 16 + b, 3_000);
                at += 5_000 + j;
                t.switch(at, cpu, c, LeftAs::Sleeping, 0);
                at += 200 + j / 10;
                t.waking(at, cpu, 0, c);
                t.switch(at + 5, cpu, 0, LeftAs::Runnable, c);
            }
            at += 2_000;
            t.exit(at, cpu, c);
            t.waking(at + 10, cpu, c, 1);
            t.switch(at + 20, cpu, c, LeftAs::Dead, 0);
            done = done.max(at + 20);
        }
        ts = done + 10;
        t.switch(ts, 0, 0, LeftAs::Runnable, 1);
        pid += 2;
    }
    t.exit(ts + 10, 0, 1);
    t.switch(ts + 20, 0, 1, LeftAs::Dead, 0);
    t.into_recording("make-like children (synthetic)", 2)
}

/// The process's peak resident set so far (`VmHWM`), KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// A trace shape: its name and how to build it at a given number of events.
type Shape = (&'static str, fn(usize) -> Recording);

fn main() {
    let shapes: [Shape; 3] = [
        ("pingpong", pingpong),
        ("hackbench", hackbench),
        ("make", make),
    ];
    let only = std::env::args().nth(2);
    if let Some(s) = &only {
        if !shapes.iter().any(|(name, _)| name == s) {
            eprintln!(
                "convert_bench: SHAPE '{s}' is not accepted; give pingpong, hackbench or make"
            );
            std::process::exit(2);
        }
    }
    let events: usize = match std::env::args().nth(1) {
        None => 1_000_000,
        Some(a) => match a.parse() {
            Ok(n) if (1_000..=50_000_000).contains(&n) => n,
            _ => {
                eprintln!("convert_bench: EVENTS '{a}' is not accepted; give a whole number from 1000 to 50000000");
                std::process::exit(2);
            }
        },
    };
    println!(
        "{:<10} {:>9} {:>6} {:>9} {:>10} {:>12} {:>7} {:>9} {:>8}  result",
        "shape",
        "events",
        "tasks",
        "trace MiB",
        "convert s",
        "peak RSS MiB",
        "s/goal",
        "MiB/goal",
        "steps"
    );
    // The goal scales with the trace: 10 s and 500 MiB a million events.
    let millions = events as f64 / 1e6;
    for (name, build) in shapes {
        if only.as_deref().is_some_and(|s| s != name) {
            continue;
        }
        let rec = build(events);
        let trace_mib = (rec.events.len() * std::mem::size_of::<SchedEvent>()) as f64 / 1048576.0;
        let started = Instant::now();
        let converted = convert(&rec, false);
        let took = started.elapsed().as_secs_f64();
        let (tasks, steps, result) = match &converted {
            Ok(c) => (
                c.summary.tasks,
                c.summary.written_steps,
                format!(
                    "ok: {} groups, {} loops, loop error {:.1} %",
                    c.summary.groups, c.summary.loops, c.summary.loop_error
                ),
            ),
            Err(e) => (0, 0, format!("refused: {e}")),
        };
        let peak_mib = peak_rss_kib() as f64 / 1024.0;
        println!(
            "{:<10} {:>9} {:>6} {:>9.1} {:>10.3} {:>12.1} {:>7.3} {:>9.3} {:>8}  {}",
            name,
            rec.events.len(),
            tasks,
            trace_mib,
            took,
            peak_mib,
            took / (10.0 * millions),
            peak_mib / (500.0 * millions),
            steps,
            result
        );
    }
}
