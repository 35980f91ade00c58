//! Parsing the instance's text `trace` file into the few events the counter needs.
//!
//! Why the text format: it is the only output of an instance that is both cheap to read and
//! needs no knowledge of the ring buffer's page layout. The `raw`, `hex` and `bin` trace options
//! print nothing for `TRACE_EVENT` events (the kernel's `register_trace_event()` gives them
//! `trace_nop_print` for those formats), and reading `per_cpu/cpuN/trace_pipe_raw` would mean
//! decoding ring-buffer pages, time extends and the per-event `format` files, then merging the
//! CPUs by timestamp ourselves — more code, and more to get wrong, for the same events. Text
//! lines are taken apart from their fixed parts, which is exact because a task name
//! (`TASK_COMM_LEN - 1` = 15 bytes) is too short to hold any of the fixed texts we anchor on.

/// One event of interest, parsed from a line of the text `trace` output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// `sched_wakeup`: `pid` was made runnable on `target_cpu`.
    Wakeup { pid: i32, target_cpu: u32 },
    /// `sched_waking`: a wakeup of sleeping `pid` began (`target_cpu` is its CPU so far), on
    /// `cpu` — the waker's CPU, since sched_waking fires in the waker's context.
    Waking { pid: i32, target_cpu: u32, cpu: u32 },
    /// `sched_switch` on `cpu` from `prev_pid` to `next_pid`.
    Switch {
        /// The CPU that switched (the `[NNN]` column).
        cpu: u32,
        prev_pid: i32,
        /// `prev_state` is `R` or `R+`: the previous task was still runnable (preempted).
        prev_runnable: bool,
        next_pid: i32,
    },
}

/// Parse a decimal integer with an optional `-` at the start of `s`; returns it and the number
/// of bytes used.
pub(super) fn parse_int(s: &[u8]) -> Option<(i64, usize)> {
    let (neg, start) = if s.first() == Some(&b'-') {
        (true, 1)
    } else {
        (false, 0)
    };
    let mut v: i64 = 0;
    let mut i = start;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add(i64::from(s[i] - b'0'))?;
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if neg { -v } else { v }, i))
}

/// A cursor over a line for fixed-format parsing.
pub(super) struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(s: &'a [u8], i: usize) -> Self {
        Cursor { s, i }
    }

    /// Consume the literal `lit`.
    pub(super) fn lit(&mut self, lit: &[u8]) -> Option<()> {
        if self.s.get(self.i..)?.starts_with(lit) {
            self.i += lit.len();
            Some(())
        } else {
            None
        }
    }

    /// Consume an integer.
    pub(super) fn int(&mut self) -> Option<i64> {
        let (v, n) = parse_int(self.s.get(self.i..)?)?;
        self.i += n;
        Some(v)
    }

    /// Consume bytes up to (not including) the next space.
    fn word(&mut self) -> &'a [u8] {
        let rest = &self.s[self.i.min(self.s.len())..];
        let n = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        self.i += n;
        &rest[..n]
    }

    pub(super) fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }
}

/// Position of the first `needle` in `hay` at or after `from`.
pub(super) fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let mut i = from;
    while i + needle.len() <= hay.len() {
        let j = hay[i..=hay.len() - needle.len()]
            .iter()
            .position(|&b| b == first)?
            + i;
        if hay[j..].starts_with(needle) {
            return Some(j);
        }
        i = j + 1;
    }
    None
}

/// Position of the last `needle` in `hay`.
pub(super) fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len())
        .rev()
        .find(|&i| hay[i..].starts_with(needle))
}

/// Longest task name the kernel prints (`TASK_COMM_LEN - 1`).
pub(super) const COMM_MAX: usize = 15;

/// Parse one line of the text `trace` output; `None` for comments, other events and anything
/// malformed.
///
/// Task names are arbitrary bytes (spaces, dashes, brackets, `key=` look-alikes), so the line is
/// taken apart from its fixed parts: the event name marker (`": sched_switch: "` cannot fit in a
/// 15-byte name), the rightmost `[NNN]` before it for the CPU, and the numeric fields anchored at
/// the end of the line.
pub(super) fn parse_line(line: &[u8]) -> Option<Event> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.first() == Some(&b'#') {
        return None;
    }
    let mut from = 0;
    let (marker, is_switch) = loop {
        let h = find(line, b": sched_", from)?;
        match line.get(h + 8..h + 16) {
            Some(b"switch: ") => break (h, true),
            Some(b"wakeup: ") => break (h, false),
            Some(b"waking: ") => break (h, false),
            _ => from = h + 1,
        }
    };
    let body = &line[marker + 16..];
    if is_switch {
        let cpu = parse_cpu(&line[..marker])?;
        parse_switch(body, cpu)
    } else {
        let ev = parse_wakeup(body)?;
        match (&line[marker + 8..marker + 16], ev) {
            (b"waking: ", Event::Wakeup { pid, target_cpu }) => Some(Event::Waking {
                pid,
                target_cpu,
                cpu: parse_cpu(&line[..marker])?,
            }),
            _ => Some(ev),
        }
    }
}

/// The CPU column: the rightmost `[digits]` of the line's header.
pub(super) fn parse_cpu(header: &[u8]) -> Option<u32> {
    let close = header.iter().rposition(|&b| b == b']')?;
    let open = header[..close].iter().rposition(|&b| b == b'[')?;
    let digits = &header[open + 1..close];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let (v, _) = parse_int(digits)?;
    u32::try_from(v).ok()
}

/// `comm=<comm> pid=N prio=N target_cpu=NNN`
pub(super) fn parse_wakeup(body: &[u8]) -> Option<Event> {
    if !body.starts_with(b"comm=") {
        return None;
    }
    // The last " pid=" is the real one: only numbers follow it.
    let p = rfind(body, b" pid=")?;
    if p < 5 || p - 5 > COMM_MAX {
        return None;
    }
    let mut c = Cursor::new(body, p);
    c.lit(b" pid=")?;
    let pid = c.int()?;
    c.lit(b" prio=")?;
    c.int()?;
    c.lit(b" target_cpu=")?;
    let target_cpu = c.int()?;
    if !c.at_end() {
        return None;
    }
    Some(Event::Wakeup {
        pid: i32::try_from(pid).ok()?,
        target_cpu: u32::try_from(target_cpu).ok()?,
    })
}

/// `prev_comm=<c> prev_pid=N prev_prio=N prev_state=S ==> next_comm=<c> next_pid=N next_prio=N`
pub(super) fn parse_switch(body: &[u8], cpu: u32) -> Option<Event> {
    let (prev_pid, state, next_pid) = parse_switch_fields(body)?;
    Some(Event::Switch {
        cpu,
        prev_pid,
        prev_runnable: state == b"R" || state == b"R+",
        next_pid,
    })
}

/// The body of a `sched_switch` line: the previous task's id, its `prev_state` text, and the
/// next task's id.
pub(super) fn parse_switch_fields(body: &[u8]) -> Option<(i32, &[u8], i32)> {
    const PREV: &[u8] = b"prev_comm=";
    const ARROW: &[u8] = b" ==> next_comm=";
    if !body.starts_with(PREV) {
        return None;
    }
    // The next task's numbers are anchored at the end of the line.
    let q = rfind(body, b" next_pid=")?;
    let mut c = Cursor::new(body, q);
    c.lit(b" next_pid=")?;
    let next_pid = c.int()?;
    c.lit(b" next_prio=")?;
    c.int()?;
    if !c.at_end() {
        return None;
    }
    // The previous task's fields follow a name of at most 15 bytes; try each length until the
    // fixed text fits. At most one length can fit, so this is exact, not a guess: a wrong length
    // k would need " prev_pid=<digits> prev_prio=" to start inside the name, but that text is
    // at least 22 bytes (more than a name holds), and it cannot straddle the name's end either,
    // since the real text after the name starts with " prev_pid=", which differs from every
    // non-empty tail of " prev_prio=" (only the whole one starts with a space, and it differs
    // at "pi"/"pr"). See `only_the_true_name_length_fits`.
    for len in 0..=COMM_MAX.min(q.saturating_sub(PREV.len())) {
        let mut c = Cursor::new(body, PREV.len() + len);
        let parsed = (|| {
            c.lit(b" prev_pid=")?;
            let prev_pid = c.int()?;
            c.lit(b" prev_prio=")?;
            c.int()?;
            c.lit(b" prev_state=")?;
            let state = c.word();
            c.lit(ARROW)?;
            Some((prev_pid, state))
        })();
        if let Some((prev_pid, state)) = parsed {
            if c.i <= q && q - c.i <= COMM_MAX {
                return Some((
                    i32::try_from(prev_pid).ok()?,
                    state,
                    i32::try_from(next_pid).ok()?,
                ));
            }
        }
    }
    None
}

#[cfg(test)]
pub(crate) mod lines {
    //! Lines as the kernel prints them, for the parser's and the counter's tests.

    pub(crate) fn wake(comm: &str, pid: i32, target: u32, cpu: u32) -> String {
        format!("          <idle>-0       [{cpu:03}] d.h2. 12345.678901: sched_wakeup: comm={comm} pid={pid} prio=120 target_cpu={target:03}\n")
    }

    pub(crate) fn switch(
        cpu: u32,
        prev_comm: &str,
        prev: i32,
        state: &str,
        next_comm: &str,
        next: i32,
    ) -> String {
        format!(
            "           {prev_comm}-{prev}  [{cpu:03}] d..2. 12345.678950: sched_switch: prev_comm={prev_comm} prev_pid={prev} prev_prio=120 prev_state={state} ==> next_comm={next_comm} next_pid={next} next_prio=120\n"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::lines::{switch, wake};
    use super::*;

    #[test]
    fn parses_the_documented_lines() {
        let w = b"          <idle>-0       [001] d.h2. 12345.678901: sched_wakeup: comm=sl-ping pid=1234 prio=120 target_cpu=001";
        assert_eq!(
            parse_line(w),
            Some(Event::Wakeup {
                pid: 1234,
                target_cpu: 1
            })
        );
        let s = b"           sl-ping-1234  [000] d..2. 12345.678950: sched_switch: prev_comm=sl-pong prev_pid=1235 prev_prio=120 prev_state=R+ ==> next_comm=sl-ping next_pid=1234 next_prio=120\n";
        assert_eq!(
            parse_line(s),
            Some(Event::Switch {
                cpu: 0,
                prev_pid: 1235,
                prev_runnable: true,
                next_pid: 1234
            })
        );
        // Without the irq-info column, with a sleeping prev and a deadline task's negative prio.
        let s = b"  sl-pong-4767    [013]    500.517179: sched_switch: prev_comm=sl-pong prev_pid=4767 prev_prio=-1 prev_state=S ==> next_comm=sl-ping next_pid=4766 next_prio=120";
        assert_eq!(
            parse_line(s),
            Some(Event::Switch {
                cpu: 13,
                prev_pid: 4767,
                prev_runnable: false,
                next_pid: 4766
            })
        );
        let s = b"  x-1 [000] 1.0: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=y next_pid=2 next_prio=120";
        assert!(matches!(
            parse_line(s),
            Some(Event::Switch {
                prev_runnable: true,
                ..
            })
        ));
        let s = b"  x-1 [000] 1.0: sched_switch: prev_comm=x prev_pid=1 prev_prio=120 prev_state=S|D ==> next_comm=y next_pid=2 next_prio=120";
        assert!(matches!(
            parse_line(s),
            Some(Event::Switch {
                prev_runnable: false,
                ..
            })
        ));
    }

    #[test]
    fn ignores_comments_other_events_and_garbage() {
        for l in [
            &b"# tracer: nop"[..],
            b"#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION",
            b"",
            b"\n",
            b"CPU:1 [LOST 123 EVENTS]",
            b"  a-1 [000] 1.0: sched_wakeup_new: comm=a pid=2 prio=120 target_cpu=000",
            b"  a-1 [000] 1.0: sched_wakeup: comm=a pid=2 prio=120 target_cpu=000 extra",
            b"  a-1 [000] 1.0: sched_wakeup: comm=a pid=x prio=120 target_cpu=000",
            b"  a-1 [000] 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2",
            b"  a-1 [0x] 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=1",
            b"  a-1 [000] 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=bbbbbbbbbbbbbbbbbbbb next_pid=2 next_prio=1",
        ] {
            assert_eq!(parse_line(l), None, "{}", String::from_utf8_lossy(l));
        }
    }

    #[test]
    fn survives_hostile_task_names() {
        // Names with spaces, dashes, brackets and look-alike keys (each at most 15 bytes).
        let w = wake("a pid=9 [7]", 42, 1, 0);
        assert_eq!(
            parse_line(w.as_bytes()),
            Some(Event::Wakeup {
                pid: 42,
                target_cpu: 1
            })
        );
        let line = "  x [5] y-7 [002] d..2. 1.0: sched_switch: prev_comm=z prev_pid=8 prev_prio=120 prev_state=R+ ==> next_comm=n next_pid=9 next_prio=120";
        assert_eq!(
            parse_line(line.as_bytes()),
            Some(Event::Switch {
                cpu: 2,
                prev_pid: 8,
                prev_runnable: true,
                next_pid: 9
            })
        );
        let s = switch(3, "q prev_pid=1", 11, "S", "w next_pid=5", 12);
        assert_eq!(
            parse_line(s.as_bytes()),
            Some(Event::Switch {
                cpu: 3,
                prev_pid: 11,
                prev_runnable: false,
                next_pid: 12
            })
        );
        let s = switch(1, "a: sched_wakeup", 11, "R", " ==> next_comm=", 12);
        assert_eq!(
            parse_line(s.as_bytes()),
            Some(Event::Switch {
                cpu: 1,
                prev_pid: 11,
                prev_runnable: true,
                next_pid: 12
            })
        );
        // Non-UTF-8 bytes in a name.
        let mut raw =
            b"  a-1 [000] 1.0: sched_wakeup: comm=\xff\xfe pid=3 prio=120 target_cpu=001".to_vec();
        assert_eq!(
            parse_line(&raw),
            Some(Event::Wakeup {
                pid: 3,
                target_cpu: 1
            })
        );
        raw.push(b'\n');
        assert_eq!(
            parse_line(&raw),
            Some(Event::Wakeup {
                pid: 3,
                target_cpu: 1
            })
        );
    }

    #[test]
    fn only_the_true_name_length_fits() {
        // Names built from the fixed texts themselves, cut to 15 bytes, at every length.
        let fixed = " prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=";
        for len in 0..=COMM_MAX {
            for start in 0..fixed.len() - len {
                let name = &fixed[start..start + len];
                let s = switch(4, name, 77, "S", "n", 88);
                assert_eq!(
                    parse_line(s.as_bytes()),
                    Some(Event::Switch {
                        cpu: 4,
                        prev_pid: 77,
                        prev_runnable: false,
                        next_pid: 88
                    }),
                    "prev_comm {name:?}"
                );
                let s = switch(4, "p", 77, "R", name, 88);
                assert_eq!(
                    parse_line(s.as_bytes()),
                    Some(Event::Switch {
                        cpu: 4,
                        prev_pid: 77,
                        prev_runnable: true,
                        next_pid: 88
                    }),
                    "next_comm {name:?}"
                );
            }
        }
    }

    #[test]
    fn parses_captured_lines() {
        // Captured on this project's machine (Linux 6.18, a private instance filtered on
        // `sleep*`, while `(sleep 0.01; sleep 0.01)` ran), first with irq-info off as SchedTrace
        // sets it, then the same events with irq-info on.
        let switch = |cpu, prev_pid, prev_runnable, next_pid| {
            Some(Event::Switch {
                cpu,
                prev_pid,
                prev_runnable,
                next_pid,
            })
        };
        let captured = [
            ("           sleep-28322   [001]    610.712931: sched_switch: prev_comm=sleep prev_pid=28322 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
             switch(1, 28322, false, 0)),
            ("          <idle>-0       [001]    610.723030: sched_waking: comm=sleep pid=28322 prio=120 target_cpu=001",
             Some(Event::Waking { pid: 28322, target_cpu: 1, cpu: 1 })),
            ("          <idle>-0       [001]    610.723586: sched_wakeup: comm=sleep pid=28322 prio=120 target_cpu=001",
             Some(Event::Wakeup { pid: 28322, target_cpu: 1 })),
            ("           sleep-28322   [001]    610.723818: sched_switch: prev_comm=sleep prev_pid=28322 prev_prio=120 prev_state=Z ==> next_comm=swapper/1 next_pid=0 next_prio=120",
             switch(1, 28322, false, 0)),
            ("          <idle>-0       [000]    610.735807: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sleep next_pid=28321 next_prio=120",
             switch(0, 0, true, 28321)),
            ("           sleep-28322   [001] d..2.   610.712931: sched_switch: prev_comm=sleep prev_pid=28322 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
             switch(1, 28322, false, 0)),
            ("          <idle>-0       [001] d.h3.   610.723030: sched_waking: comm=sleep pid=28322 prio=120 target_cpu=001",
             Some(Event::Waking { pid: 28322, target_cpu: 1, cpu: 1 })),
            ("          <idle>-0       [001] dNh4.   610.723586: sched_wakeup: comm=sleep pid=28322 prio=120 target_cpu=001",
             Some(Event::Wakeup { pid: 28322, target_cpu: 1 })),
        ];
        for (line, want) in captured {
            assert_eq!(parse_line(line.as_bytes()), want, "{line}");
        }
    }
}
