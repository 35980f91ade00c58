//! Counting wakeups and wakeup preemptions per task by replaying the parsed events in trace
//! order; the rule is in the [`trace`](super) module documentation.

use super::parse::{parse_line, Event};
use super::{TidCounts, TraceCounts};
use std::collections::HashSet;
use std::io::{self, BufRead};

/// What we know about one of the traced tids while replaying the events.
#[derive(Clone, Copy, Debug, Default)]
struct TidState {
    counts: TidCounts,
    /// Woken onto this CPU and not run since.
    pending_cpu: Option<u32>,
    /// Seen switched in on this CPU and not switched out since.
    running_cpu: Option<u32>,
    /// The CPU its last `sched_waking` fired on (the waker's), until it is switched in.
    waker_cpu: Option<u32>,
}

/// Replays events in trace order and counts, per traced tid.
pub(super) struct Counter {
    /// The traced tids, sorted (binary search is cheaper than hashing here).
    tids: Vec<i32>,
    states: Vec<TidState>,
    /// Count wakeups on `sched_waking` (when recorded) rather than on `sched_wakeup`.
    count_waking: bool,
}

impl Counter {
    pub(super) fn new(tids: &HashSet<i32>, count_waking: bool) -> Self {
        let mut sorted: Vec<i32> = tids.iter().copied().collect();
        sorted.sort_unstable();
        Counter {
            count_waking,
            states: vec![TidState::default(); sorted.len()],
            tids: sorted,
        }
    }

    fn slot(&self, tid: i32) -> Option<usize> {
        self.tids.binary_search(&tid).ok()
    }

    fn event(&mut self, ev: Event) {
        match ev {
            Event::Waking {
                pid,
                target_cpu,
                cpu,
            } => {
                if let Some(i) = self.slot(pid) {
                    let s = &mut self.states[i];
                    s.counts.wakeups += 1;
                    s.waker_cpu = Some(cpu);
                    s.pending_cpu = if s.running_cpu.is_some() {
                        None
                    } else {
                        Some(target_cpu)
                    };
                }
            }
            Event::Wakeup { pid, target_cpu } => {
                let count = !self.count_waking;
                if let Some(i) = self.slot(pid) {
                    let s = &mut self.states[i];
                    if count {
                        s.counts.wakeups += 1;
                    }
                    // Woken while still on a CPU (on its way to sleep): no task to preempt.
                    s.pending_cpu = if s.running_cpu.is_some() {
                        None
                    } else {
                        Some(target_cpu)
                    };
                }
            }
            Event::Switch {
                cpu,
                prev_pid,
                prev_runnable,
                next_pid,
            } => {
                if let Some(i) = self.slot(prev_pid) {
                    let s = &mut self.states[i];
                    s.running_cpu = None;
                    s.pending_cpu = None;
                }
                if let Some(i) = self.slot(next_pid) {
                    let s = &mut self.states[i];
                    if s.pending_cpu == Some(cpu) && prev_pid != 0 && prev_runnable {
                        s.counts.wakeup_preemptions += 1;
                        if s.waker_cpu == Some(cpu) {
                            s.counts.preemptions_on_waker_cpu += 1;
                        }
                    }
                    s.pending_cpu = None;
                    s.waker_cpu = None;
                    s.running_cpu = Some(cpu);
                }
            }
        }
    }

    /// Parse and count every line of a text `trace` stream.
    pub(super) fn feed<R: BufRead>(&mut self, mut reader: R) -> io::Result<()> {
        let mut line = Vec::with_capacity(512);
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            if let Some(ev) = parse_line(&line) {
                self.event(ev);
            }
        }
    }

    pub(super) fn finish(self, lost: u64) -> TraceCounts {
        let per_tid = self
            .tids
            .iter()
            .zip(&self.states)
            .map(|(&t, s)| (t, s.counts))
            .collect();
        TraceCounts {
            per_tid,
            lost,
            waker_cpus: self.count_waking,
            lazy_known: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::lines::{switch, wake};
    use super::*;

    fn count(text: &str, tids: &[i32]) -> TraceCounts {
        count_as(text, tids, false)
    }

    /// The counts of `tids` in `text`, counting wakeups on sched_waking if `waking`.
    fn count_as(text: &str, tids: &[i32], waking: bool) -> TraceCounts {
        let set: HashSet<i32> = tids.iter().copied().collect();
        let mut c = Counter::new(&set, waking);
        c.feed(text.as_bytes()).unwrap();
        c.finish(0)
    }

    /// A task's counts: wakeups, wakeup preemptions, and those of them on the waker's CPU.
    fn tid(wakeups: u64, preemptions: u64, on_waker_cpu: u64) -> TidCounts {
        TidCounts {
            wakeups,
            wakeup_preemptions: preemptions,
            preemptions_on_waker_cpu: on_waker_cpu,
            ..TidCounts::default()
        }
    }

    /// A sched_waking line of `sl-b` (`pid`), recorded on CPU `cpu`, for CPU `target`.
    fn waking(pid: i32, cpu: u32, target: u32) -> String {
        format!("          <idle>-0       [{cpu:03}] d.h2. 12345.678901: sched_waking: comm=sl-b pid={pid} prio=120 target_cpu={target:03}\n")
    }

    #[test]
    fn counts_a_wakeup_preemption() {
        // 20 is woken onto CPU 1 where 30 (not traced) runs; 30 is preempted for 20.
        let t = wake("sl-b", 20, 1, 0) + &switch(1, "other", 30, "R+", "sl-b", 20);
        let c = count(&t, &[10, 20]);
        assert_eq!(c.per_tid[&20], tid(1, 1, 0));
        assert_eq!(c.per_tid[&10], TidCounts::default());
        // Plain R (preempted on the way back to user space) counts too.
        let t = wake("sl-b", 20, 1, 0) + &switch(1, "other", 30, "R", "sl-b", 20);
        assert_eq!(count(&t, &[20]).per_tid[&20], tid(1, 1, 0));
    }

    #[test]
    fn blocking_idle_and_other_cpus_do_not_count() {
        for second in [
            switch(1, "other", 30, "S", "sl-b", 20), // prev went to sleep
            switch(1, "swapper/1", 0, "R", "sl-b", 20), // from idle
            switch(0, "other", 30, "R+", "sl-b", 20), // ran elsewhere (migrated)
        ] {
            let t = wake("sl-b", 20, 1, 0) + &second + &switch(1, "x", 31, "R+", "sl-b", 20);
            assert_eq!(count(&t, &[20]).per_tid[&20], tid(1, 0, 0), "{second}");
        }
    }

    #[test]
    fn tick_preemptions_do_not_count() {
        // 20 runs, is preempted by the tick and resumes by preempting someone: no wakeup pending.
        let t = switch(1, "a", 30, "S", "sl-b", 20)
            + &switch(1, "sl-b", 20, "R+", "c", 31)
            + &switch(1, "c", 31, "R+", "sl-b", 20);
        assert_eq!(count(&t, &[20]).per_tid[&20], TidCounts::default());
    }

    #[test]
    fn other_switches_may_come_between_wakeup_and_run() {
        let t = wake("sl-b", 20, 1, 0)
            + &wake("sl-c", 21, 1, 0)
            + &switch(1, "a", 30, "R", "sl-c", 21) // 21 preempts 30
            + &switch(1, "sl-c", 21, "S", "d", 32) // an unrelated task
            + &switch(1, "d", 32, "R+", "sl-b", 20); // 20, still pending, preempts 32
        let c = count(&t, &[20, 21]);
        assert_eq!(c.per_tid[&20], tid(1, 1, 0));
        assert_eq!(c.per_tid[&21], tid(1, 1, 0));
    }

    #[test]
    fn a_wakeup_of_a_running_task_marks_nothing() {
        // 20 is on CPU 1, gets woken while going to sleep, is later tick-preempted and resumes.
        let t = switch(1, "a", 30, "S", "sl-b", 20)
            + &wake("sl-b", 20, 1, 0)
            + &switch(1, "sl-b", 20, "R+", "c", 31)
            + &switch(1, "c", 31, "R+", "sl-b", 20);
        assert_eq!(count(&t, &[20]).per_tid[&20], tid(1, 0, 0));
        // A switch away from a task clears a pending mark from before its switch-in was recorded.
        let t = wake("sl-b", 20, 1, 0)
            + &switch(1, "sl-b", 20, "S", "c", 31)
            + &switch(1, "c", 31, "R+", "sl-b", 20);
        assert_eq!(count(&t, &[20]).per_tid[&20], tid(1, 0, 0));
    }

    #[test]
    fn preemptions_on_the_wakers_cpu_are_told_from_those_by_ipi() {
        // sched_waking fires on the waker's CPU: [001] here, where 20 then preempts 31 (the
        // waker's own CPU); then a wakeup from CPU 0 preempts on CPU 1 (by IPI).
        let t = waking(20, 1, 1)
            + &switch(1, "c", 31, "R+", "sl-b", 20)
            + &switch(1, "sl-b", 20, "S", "c", 31)
            + &waking(20, 0, 1)
            + &switch(1, "c", 31, "R+", "sl-b", 20);
        let counts = count_as(&t, &[20], true);
        assert!(counts.waker_cpus);
        assert_eq!(counts.per_tid[&20], tid(2, 2, 1));
    }

    #[test]
    fn wakeups_are_counted_on_sched_waking_when_recorded() {
        // Linux 6.18 emits sched_waking for every wakeup of a sleeping task but, on some paths,
        // no sched_wakeup: count the former; the latter only refines the target CPU.
        let t = waking(20, 0, 0)
            + &wake("sl-b", 20, 1, 0)
            + &switch(1, "c", 31, "R", "sl-b", 20)
            + &switch(1, "sl-b", 20, "S", "c", 31)
            + &waking(20, 0, 1);
        assert_eq!(count_as(&t, &[20], true).per_tid[&20], tid(2, 1, 0));
    }

    #[test]
    fn untraced_tids_are_ignored() {
        let t = wake("sl-x", 99, 0, 0) + &switch(0, "a", 30, "R", "sl-x", 99);
        let c = count(&t, &[20]);
        assert_eq!(c.per_tid.len(), 1);
        assert_eq!(c.per_tid[&20], TidCounts::default());
    }
}
