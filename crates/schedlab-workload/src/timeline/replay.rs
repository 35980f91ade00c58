//! Replaying a [`Timeline`]'s events into run-queue lengths and the figures of
//! [`TimelineSummary`].
//!
//! One pass in time order. A CPU's length changes only when a task arrives on or leaves its run
//! queue, so the time integrals a figure needs (each CPU's area under its length, per drawing bin
//! and per second) are brought up to date for that CPU alone, at its change: O(1) per event. Two
//! things look at every CPU, once per distinct timestamp (not per event): the divergence from the
//! mean (the mean moves with any CPU's change) and the idle-while-waiting check.
//!
//! Idle while waiting (wasted-cores invariant 1, Lozi et al. 2016 §4): for each stretch of time,
//! each CPU `c` running nothing counts if some other CPU `d` is running a task *and* has a task
//! waiting in its run queue whose allowed CPUs include `c`. A waiting task on a CPU that is
//! itself idle does not count (that CPU is about to run it: an IPI or the idle loop's exit is in
//! flight), nor does a task that may not run on `c` (affinity is respected). The checker of the
//! paper reports only violations that last; this is the raw total, every stretch counted, so a
//! wakeup placed on a busy CPU beside an idle one shows until the balancer fixes it.
//!
//! Migrations towards a busier CPU (invariant 3): a runnable task (waiting, or running and
//! preempted) whose run queue changes counts as a migration; it is "to a busier CPU" when the
//! source's length, the task included, was not above the destination's, before the move. A
//! sleeping task woken on another CPU is a placement, not a migration of load, and is not counted.

use super::{SeriesSummary, TaskState, Timeline, TimelineSummary};

/// Default number of drawing bins per series.
pub const DEFAULT_BINS: usize = 400;

/// Accumulates each CPU's area under its length over fixed-width windows (drawing bins, or
/// seconds), and each window's mean length per CPU when it closes.
struct Windows {
    width: u64,
    /// Where the current window ends.
    next: u64,
    /// Where it started.
    start: u64,
    /// Per CPU: area (length × ns) in the current window so far.
    area: Vec<u64>,
    /// Per CPU: time up to which `area` is accounted.
    last: Vec<u64>,
    /// Closed windows: per CPU mean length.
    out: Vec<Vec<f64>>,
}

impl Windows {
    fn new(width: u64, cpus: usize) -> Windows {
        Windows {
            width,
            next: width,
            start: 0,
            area: vec![0; cpus],
            last: vec![0; cpus],
            out: Vec::new(),
        }
    }

    /// Account `cpu`'s length `len` up to `t` (inside the current window).
    fn account(&mut self, cpu: usize, len: u32, t: u64) {
        let dt = t - self.last[cpu];
        self.area[cpu] += u64::from(len) * dt;
        self.last[cpu] = t;
    }

    /// Close every window that ends at or before `t` (given the current lengths).
    fn advance(&mut self, t: u64, lens: &[u32]) {
        while self.next <= t {
            let end = self.next;
            self.close(end, lens);
            self.next = end.saturating_add(self.width);
        }
    }

    /// Close the current window at `end`.
    fn close(&mut self, end: u64, lens: &[u32]) {
        let w = (end - self.start).max(1) as f64;
        let means = (0..lens.len())
            .map(|c| {
                self.account(c, lens[c], end);
                let m = self.area[c] as f64 / w;
                self.area[c] = 0;
                m
            })
            .collect();
        self.out.push(means);
        self.start = end;
    }
}

/// One series of lengths: the tasks it counts and everything accumulated for it.
struct Series {
    name: &'static str,
    workload_only: bool,
    len: Vec<u32>,
    bins: Windows,
    seconds: Windows,
    abs_area: f64,
    max_abs: f64,
    max_len: u32,
}

impl Series {
    fn new(name: &'static str, workload_only: bool, cpus: usize, bin: u64) -> Series {
        Series {
            name,
            workload_only,
            len: vec![0; cpus],
            bins: Windows::new(bin, cpus),
            seconds: Windows::new(1_000_000_000, cpus),
            abs_area: 0.0,
            max_abs: 0.0,
            max_len: 0,
        }
    }

    /// `cpu`'s length goes up or down by one at `t`.
    fn change(&mut self, cpu: usize, up: bool, t: u64) {
        self.bins.account(cpu, self.len[cpu], t);
        self.seconds.account(cpu, self.len[cpu], t);
        if up {
            self.len[cpu] += 1;
            self.max_len = self.max_len.max(self.len[cpu]);
        } else {
            self.len[cpu] = self.len[cpu].saturating_sub(1);
        }
    }

    /// Close windows ending by `t`.
    fn advance(&mut self, t: u64) {
        self.bins.advance(t, &self.len);
        self.seconds.advance(t, &self.len);
    }

    /// The lengths held from `from` to `to`: the divergence integrals.
    fn hold(&mut self, from: u64, to: u64) {
        let n = self.len.len() as f64;
        let mean = self.len.iter().map(|&l| f64::from(l)).sum::<f64>() / n;
        let mut sum = 0.0;
        for &l in &self.len {
            let d = (f64::from(l) - mean).abs();
            sum += d;
            self.max_abs = self.max_abs.max(d);
        }
        self.abs_area += sum / n * (to - from) as f64;
    }

    fn finish(mut self, end: u64) -> SeriesSummary {
        self.advance(end);
        for w in [&mut self.bins, &mut self.seconds] {
            if w.start < end {
                w.close(end, &self.len);
            }
        }
        let per_second: Vec<(f64, f64)> = self
            .seconds
            .out
            .iter()
            .map(|means| {
                let n = means.len() as f64;
                let m = means.iter().sum::<f64>() / n;
                let sd = (means.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt();
                let max = means.iter().copied().fold(f64::MIN, f64::max);
                let min = means.iter().copied().fold(f64::MAX, f64::min);
                (sd, max - min)
            })
            .collect();
        let k = per_second.len().max(1) as f64;
        let cpus = self.len.len();
        let lengths = (0..cpus)
            .map(|c| {
                (self.bins.out.iter())
                    .map(|b| ((b[c] * 1000.0).round() / 1000.0) as f32)
                    .collect()
            })
            .collect();
        SeriesSummary {
            tasks: self.name.to_string(),
            mean_abs_divergence: if end == 0 {
                0.0
            } else {
                self.abs_area / end as f64
            },
            max_abs_divergence: self.max_abs,
            per_second_sd_mean: per_second.iter().map(|p| p.0).sum::<f64>() / k,
            per_second_sd_max: per_second.iter().map(|p| p.0).fold(0.0, f64::max),
            per_second_range_mean: per_second.iter().map(|p| p.1).sum::<f64>() / k,
            per_second_range_max: per_second.iter().map(|p| p.1).fold(0.0, f64::max),
            seconds: per_second.len(),
            max_length: self.max_len,
            bin_s: self.bins.width as f64 / 1e9,
            lengths,
        }
    }
}

/// Which CPUs each task may run on, as a bit set (`None`: any).
fn allowed_sets(tl: &Timeline) -> Vec<Option<Vec<u64>>> {
    let words = tl.cpus.div_ceil(64).max(1);
    tl.tasks
        .iter()
        .map(|t| {
            t.allowed.as_ref().map(|list| {
                let mut set = vec![0u64; words];
                for &c in list {
                    if (c as usize) < tl.cpus {
                        set[c as usize / 64] |= 1 << (c % 64);
                    }
                }
                set
            })
        })
        .collect()
}

/// Replay `tl` and compute its figures, with `bins` drawing bins per CPU (at least 1).
pub fn analyse(tl: &Timeline, bins: usize) -> TimelineSummary {
    let cpus = tl.cpus.max(1);
    let end = tl.end_ns.max(tl.events.last().map_or(0, |e| e.t_ns)).max(1);
    let bin = end.div_ceil(bins.max(1) as u64).max(1);
    let mut series = vec![Series::new("workload", true, cpus, bin)];
    // `all` only when it counts more than `workload` does (other tasks are in the timeline).
    if tl.covers == "all" && tl.tasks.iter().any(|t| !t.workload) {
        series.push(Series::new("all", false, cpus, bin));
    }
    let allowed = allowed_sets(tl);
    let mut place: Vec<(TaskState, usize)> = vec![(TaskState::Off, 0); tl.tasks.len()];
    // Over all tasks: per CPU the running count and the waiting tasks.
    let mut running = vec![0u32; cpus];
    let mut waiting: Vec<Vec<u32>> = vec![Vec::new(); cpus];
    let mut len_all = vec![0u32; cpus];
    let mut idle_waiting_ns: u128 = 0;
    let (mut migrations, mut to_busier) = (0u64, 0u64);
    let mut now = 0u64;
    let may_run = |task: u32, cpu: usize| match &allowed[task as usize] {
        None => true,
        Some(set) => set[cpu / 64] >> (cpu % 64) & 1 == 1,
    };
    let hold = |from: u64,
                to: u64,
                series: &mut [Series],
                running: &[u32],
                waiting: &[Vec<u32>],
                idle_waiting_ns: &mut u128| {
        if to <= from {
            return;
        }
        for s in series.iter_mut() {
            s.hold(from, to);
        }
        // Invariant 1: idle CPUs that some busy CPU's waiting task could have used.
        let idle = running.iter().filter(|&&r| r == 0).count();
        if idle == 0 {
            return;
        }
        let queued_on_busy = (0..cpus).any(|d| running[d] > 0 && !waiting[d].is_empty());
        if !queued_on_busy {
            return;
        }
        let wasted = (0..cpus)
            .filter(|&c| running[c] == 0)
            .filter(|&c| {
                (0..cpus)
                    .any(|d| d != c && running[d] > 0 && waiting[d].iter().any(|&t| may_run(t, c)))
            })
            .count() as u128;
        *idle_waiting_ns += wasted * u128::from(to - from);
    };
    // Hold the current lengths from `from` to `to`, window boundary by window boundary.
    let hold_until = |from: u64,
                      to: u64,
                      series: &mut [Series],
                      running: &[u32],
                      waiting: &[Vec<u32>],
                      idle_waiting_ns: &mut u128| {
        let mut at = from;
        while at < to {
            let next = series
                .iter()
                .map(|s| s.bins.next.min(s.seconds.next))
                .min()
                .unwrap_or(to);
            let stop = next.min(to);
            hold(at, stop, series, running, waiting, idle_waiting_ns);
            for s in series.iter_mut() {
                s.advance(stop);
            }
            at = stop;
        }
    };
    for e in &tl.events {
        let t = e.t_ns.min(end);
        if t > now {
            hold_until(
                now,
                t,
                &mut series,
                &running,
                &waiting,
                &mut idle_waiting_ns,
            );
            now = t;
        }
        let (Some(task), cpu) = (tl.tasks.get(e.task as usize), e.cpu as usize) else {
            continue;
        };
        if cpu >= cpus && e.state != TaskState::Off {
            continue;
        }
        let (old, old_cpu) = place[e.task as usize];
        let was_on = old != TaskState::Off;
        let is_on = e.state != TaskState::Off;
        if was_on && is_on && old_cpu != cpu {
            migrations += 1;
            if len_all[old_cpu] <= len_all[cpu] {
                to_busier += 1;
            }
        }
        // Leave the old place.
        if was_on {
            match old {
                TaskState::Running => running[old_cpu] = running[old_cpu].saturating_sub(1),
                _ => {
                    if let Some(i) = waiting[old_cpu].iter().position(|&w| w == e.task) {
                        waiting[old_cpu].swap_remove(i);
                    }
                }
            }
            if !is_on || old_cpu != cpu {
                len_all[old_cpu] = len_all[old_cpu].saturating_sub(1);
                for s in series.iter_mut() {
                    if task.workload || !s.workload_only {
                        s.change(old_cpu, false, t);
                    }
                }
            }
        }
        // Take the new one.
        if is_on {
            match e.state {
                TaskState::Running => running[cpu] += 1,
                _ => waiting[cpu].push(e.task),
            }
            if !was_on || old_cpu != cpu {
                len_all[cpu] += 1;
                for s in series.iter_mut() {
                    if task.workload || !s.workload_only {
                        s.change(cpu, true, t);
                    }
                }
            }
        }
        place[e.task as usize] = (e.state, cpu);
    }
    hold_until(
        now,
        end,
        &mut series,
        &running,
        &waiting,
        &mut idle_waiting_ns,
    );
    let idle_while_waiting_s = idle_waiting_ns as f64 / 1e9;
    TimelineSummary {
        source: tl.source.clone(),
        cpus,
        duration_s: end as f64 / 1e9,
        events: tl.events.len() as u64,
        lost_events: tl.lost_events,
        series: series.into_iter().map(|s| s.finish(end)).collect(),
        idle_while_waiting_s,
        idle_while_waiting_percent: idle_waiting_ns as f64 / (end as f64 * cpus as f64) * 100.0,
        migrations,
        migrations_to_busier: to_busier,
    }
}

/// Each CPU's length after every change, `(t_ns, cpu, length)`, for the tasks of one series
/// (`workload_only`): the change events the timeline stands for.
pub fn length_changes(tl: &Timeline, workload_only: bool) -> Vec<(u64, u32, u32)> {
    let mut len = vec![0u32; tl.cpus.max(1)];
    let mut place: Vec<Option<usize>> = vec![None; tl.tasks.len()];
    let mut out = Vec::new();
    for e in &tl.events {
        let Some(task) = tl.tasks.get(e.task as usize) else {
            continue;
        };
        if workload_only && !task.workload {
            continue;
        }
        let new =
            (e.state != TaskState::Off && (e.cpu as usize) < len.len()).then_some(e.cpu as usize);
        let old = place[e.task as usize];
        if old == new {
            continue;
        }
        if let Some(o) = old {
            len[o] = len[o].saturating_sub(1);
            out.push((e.t_ns, o as u32, len[o]));
        }
        if let Some(n) = new {
            len[n] += 1;
            out.push((e.t_ns, n as u32, len[n]));
        }
        place[e.task as usize] = new;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::TimelineTask;
    use super::*;
    use TaskState::{Off, Running, Waiting};

    fn task(workload: bool, allowed: Option<Vec<u32>>) -> TimelineTask {
        TimelineTask {
            group: "g".into(),
            workload,
            allowed,
        }
    }

    /// Two hogs on CPU 0 (one running, one waiting), CPU 1 idle; then at 1 s the waiting one
    /// moves to CPU 1; end at 2 s.
    fn imbalance(allowed: Option<Vec<u32>>) -> Timeline {
        let mut tl = Timeline::new(2, "test", "all");
        let a = tl.add_task(task(true, allowed.clone()));
        let b = tl.add_task(task(true, allowed));
        tl.push(0, a, 0, Running);
        tl.push(0, b, 0, Waiting);
        tl.push(1_000_000_000, b, 1, Running);
        tl.end_ns = 2_000_000_000;
        tl
    }

    #[test]
    fn lengths_divergence_and_idle_while_waiting_of_a_known_case() {
        let s = analyse(&imbalance(None), 2);
        let w = s.series("workload").unwrap();
        // Second 0: lengths 2 and 0 (mean 1, divergence 1 each); second 1: 1 and 1.
        assert_eq!(w.lengths, vec![vec![2.0, 1.0], vec![0.0, 1.0]]);
        assert!((w.mean_abs_divergence - 0.5).abs() < 1e-9);
        assert_eq!(w.max_abs_divergence, 1.0);
        assert_eq!(w.seconds, 2);
        assert!((w.per_second_sd_max - 1.0).abs() < 1e-9);
        assert!((w.per_second_range_mean - 1.0).abs() < 1e-9);
        assert_eq!(w.max_length, 2);
        // CPU 1 idle for 1 s while CPU 0 ran one hog and had the other waiting.
        assert!((s.idle_while_waiting_s - 1.0).abs() < 1e-9);
        assert!((s.idle_while_waiting_percent - 25.0).abs() < 1e-9);
        // The move went from length 2 to length 0: not towards a busier CPU.
        assert_eq!((s.migrations, s.migrations_to_busier), (1, 0));
        assert_eq!(
            length_changes(&imbalance(None), true),
            vec![
                (0, 0, 1),
                (0, 0, 2),
                (1_000_000_000, 0, 1),
                (1_000_000_000, 1, 1)
            ]
        );
    }

    #[test]
    fn affinity_is_respected() {
        // Pinned to CPU 0: CPU 1 idling is no violation (the move is only a test artefact).
        let s = analyse(&imbalance(Some(vec![0])), 2);
        assert_eq!(s.idle_while_waiting_s, 0.0);
        let s = analyse(&imbalance(Some(vec![0, 1])), 2);
        assert!(s.idle_while_waiting_s > 0.99);
    }

    #[test]
    fn balanced_and_pending_cases_waste_nothing() {
        // One task per CPU: nothing waits.
        let mut tl = Timeline::new(2, "test", "workload");
        let a = tl.add_task(task(true, None));
        let b = tl.add_task(task(true, None));
        tl.push(0, a, 0, Running);
        tl.push(0, b, 1, Running);
        tl.push(500, a, 0, Off);
        tl.push(700, b, 1, Off);
        tl.end_ns = 1000;
        let s = analyse(&tl, 10);
        assert_eq!(s.idle_while_waiting_s, 0.0);
        assert_eq!(s.series.len(), 1);
        // A task waiting on an idle CPU (its wakeup IPI in flight) is no violation either.
        let mut tl = Timeline::new(2, "test", "workload");
        let a = tl.add_task(task(true, None));
        tl.push(0, a, 0, Waiting);
        tl.push(100, a, 0, Running);
        tl.end_ns = 200;
        assert_eq!(analyse(&tl, 4).idle_while_waiting_s, 0.0);
    }

    #[test]
    fn a_move_to_a_busier_cpu_is_counted() {
        let mut tl = Timeline::new(2, "test", "all");
        let t: Vec<u32> = (0..4).map(|_| tl.add_task(task(true, None))).collect();
        tl.push(0, t[0], 0, Running);
        tl.push(0, t[1], 0, Waiting);
        tl.push(0, t[2], 1, Running);
        tl.push(0, t[3], 1, Waiting);
        // 2 → 2: no busier, counted.
        tl.push(10, t[1], 1, Waiting);
        tl.end_ns = 20;
        let s = analyse(&tl, 4);
        assert_eq!((s.migrations, s.migrations_to_busier), (1, 1));
    }

    #[test]
    fn non_workload_tasks_count_only_in_all() {
        let mut tl = Timeline::new(1, "test", "all");
        let a = tl.add_task(task(true, None));
        let k = tl.add_task(task(false, None));
        tl.push(0, a, 0, Running);
        tl.push(0, k, 0, Waiting);
        tl.end_ns = 10;
        let s = analyse(&tl, 1);
        assert_eq!(s.series("workload").unwrap().max_length, 1);
        assert_eq!(s.series("all").unwrap().max_length, 2);
        let mut text = Vec::new();
        tl.write_events(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("# task 1 g false any\n"), "{text}");
        assert!(text.ends_with("0 0 0 R\n0 1 0 W\n"), "{text}");
    }
}
