//! The machine's future: the queue of events to come (burst ends, ticks, IPIs, timers), how
//! many of them are timers a task waits for, and the obsolete burst ends dropped unpopped. The
//! present time is [`MachineView::now`](crate::policy::MachineView::now), which the policies
//! read.

use super::Event;
use crate::engine::EventQueue;

/// The event queue and its counts.
pub(super) struct Clock {
    /// Events to come, one slot per CPU for its running burst's end.
    pub(super) events: EventQueue<Event>,
    /// Timer events waiting (sleeps, device waits, readiness waits' deadlines): while none is
    /// and no task is runnable, nothing can wake anybody.
    pub(super) timers: usize,
    /// Obsolete burst ends dropped from the queue rather than popped (`paths.rs`,
    /// `continue_burst`): counted in the run's events as the pops they stand for.
    pub(super) dropped: u64,
}

impl Clock {
    /// An empty queue with a burst slot for each of `cpus` CPUs.
    pub(super) fn new(cpus: usize) -> Clock {
        Clock {
            events: EventQueue::with_slots(cpus),
            timers: 0,
            dropped: 0,
        }
    }

    /// Arm a timer: `event` at `at`, which a task waits for.
    pub(super) fn timer(&mut self, at: u64, event: Event) {
        self.events.push(at, event);
        self.timers += 1;
    }

    /// A timer came out of the queue.
    #[inline]
    pub(super) fn timer_fired(&mut self) {
        self.timers -= 1;
    }

    /// The events of the run so far: those popped and the dropped ones they stand for.
    pub(super) fn handled(&self) -> u64 {
        self.events.popped() + self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Timers are counted from arming to firing, and events in time order, the dropped ones
    /// with them.
    #[test]
    fn timers_are_counted_until_they_fire() {
        let mut c = Clock::new(1);
        c.timer(20, Event::Timer { task: 1 });
        c.timer(10, Event::Timer { task: 2 });
        c.events.push(15, Event::Tick { cpu: 0 });
        assert_eq!(c.timers, 2);
        let order: Vec<u64> = std::iter::from_fn(|| c.events.pop().map(|(at, _)| at)).collect();
        assert_eq!(order, [10, 15, 20]);
        c.timer_fired();
        c.timer_fired();
        assert_eq!(c.timers, 0);
        c.dropped += 2;
        assert_eq!(c.handled(), 5);
    }
}
