//! A dry run of a compiled file, before anything starts: every task's body is walked with its
//! loop counts and channel indices evaluated, no time passing. When no timed loop surrounds a
//! send, receive or spawn (and the walk fits its budget), it proves that every channel gets
//! exactly as many messages as are read from it, of one size, by one reader; that each spawned
//! group is spawned once per task; that no spawnable group is forked more often than its bound
//! and no task waits for a child it does not have; that no task takes a lock twice, releases one
//! it does not hold, or ends holding one. It also bounds the run's time, memory and scratch
//! files. A task a spawn step forks is walked after the tasks the run starts with, at the place
//! (index) it takes in its group.

use crate::compile::{whole, DRY_RUN_BUDGET, MAX_MESSAGE};
use crate::error::Diagnostic;
use crate::model::ScriptDef;
use crate::program::{CAmount, CRef, Instr, Program};
use crate::span::Span;
use schedlab_workload::IoKind;
use std::collections::VecDeque;
use std::time::Duration;

/// Where one channel element was first used.
#[derive(Clone, Copy)]
struct Use {
    group: usize,
    pc: usize,
}

/// Where an object element was first used, with its array's name and index.
type FirstUse = (Use, &'static str, usize);

struct Channel {
    sent: u64,
    received: u64,
    size: Option<(u64, Use)>,
    /// The reading task: its group and index.
    reader: Option<(usize, usize)>,
    first_send: Option<Use>,
    first_recv: Option<Use>,
    label: Option<(&'static str, usize)>,
}

fn at(spans: &[Vec<Span>], u: Use) -> Span {
    spans[u.group][u.pc]
}

fn mean(a: &CAmount, frame: &[f64]) -> f64 {
    match a {
        CAmount::Fixed(c) | CAmount::Exponential(c) => c.eval(frame),
        CAmount::Uniform(lo, hi) => (lo.eval(frame) + hi.eval(frame)) / 2.0,
        CAmount::Normal(m, _) | CAmount::LogNormal(m, _) => m.eval(frame),
    }
}

fn element(r: &CRef, frame: &[f64], span: Span, who: &str) -> Result<usize, Diagnostic> {
    let i = r.index.as_ref().map_or(0.0, |c| c.eval(frame));
    if i.fract() != 0.0 || i < 0.0 || i >= r.len as f64 {
        return Err(Diagnostic::new(
            span,
            format!(
                "{who} refers to {}[{i}], but '{}' has {} element{} (0..{})",
                r.name,
                r.name,
                r.len,
                if r.len == 1 { "" } else { "s" },
                r.len - 1
            ),
        ));
    }
    Ok(r.base + i as usize)
}

/// Whether a timed loop's body does something whose count must balance.
fn contains_messages(body: &[Instr]) -> bool {
    body.iter().any(|i| {
        matches!(
            i,
            Instr::Send { .. }
                | Instr::Recv { .. }
                | Instr::Spawn { .. }
                | Instr::Fork { .. }
                | Instr::WaitChild
                | Instr::SemPost(_)
                | Instr::SemWait(_)
                | Instr::Barrier(_)
        )
    })
}

/// Whether instruction `i` can take time on some backend, or end its task: everything but a
/// count, a timer's start and end, an unlock (no system call for a spin lock), a loop's own
/// begin and end, and a compute, busy stretch or touch of a constant nothing.
fn can_take_time(i: &Instr) -> bool {
    let zero = |c: &crate::expr::Compiled| c.constant() == Some(0.0);
    match i {
        Instr::Count { .. }
        | Instr::TimedBegin { .. }
        | Instr::TimedEnd { .. }
        | Instr::Unlock(_)
        | Instr::LoopBegin { .. }
        | Instr::LoopEnd { .. } => false,
        Instr::Compute(CAmount::Fixed(c)) | Instr::Busy(c) | Instr::Touch(c) => !zero(c),
        _ => true,
    }
}

/// Refuse a timed loop whose body has no step that can take time ([`can_take_time`]): its
/// clock never moves on the simulator (it moves only while a task waits for a call that takes
/// time), so it would never end. One pass over each group's body (a prefix count), whatever the
/// nesting.
fn refuse_timeless_loops(program: &Program, spans: &[Vec<Span>]) -> Result<(), Diagnostic> {
    for (g, group) in program.groups.iter().enumerate() {
        let body = &group.body;
        let mut timed = vec![0usize; body.len() + 1];
        for (pc, i) in body.iter().enumerate() {
            timed[pc + 1] = timed[pc] + usize::from(can_take_time(i));
        }
        for (pc, i) in body.iter().enumerate() {
            if let Instr::LoopBegin {
                timed: true, end, ..
            } = i
            {
                if timed[*end] == timed[pc + 1] {
                    return Err(Diagnostic::new(
                        spans[g][pc],
                        format!("group {}: this timed loop repeats steps that take no time (counts, timers, computes or touches of nothing): its clock would never move on the simulator, and the loop never end; give it a step that takes time (compute, sleep, recv, ...) or a number of passes", group.name),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Walk every task of `program`; fill in its expected messages, time, memory and files.
///
/// `provable` is false when message counts depend on who sent what (an expression uses `from`):
/// the walk then still checks indices and locks but proves no counts.
pub fn run(
    program: &mut Program,
    spans: &[Vec<Span>],
    def: &ScriptDef,
    provable: bool,
) -> Result<(), Diagnostic> {
    refuse_timeless_loops(program, spans)?;
    let mut budget = DRY_RUN_BUDGET;
    let mut exact = provable;
    let mut channels: Vec<Channel> = (0..program.plan.channels)
        .map(|_| Channel {
            sent: 0,
            received: 0,
            size: None,
            reader: None,
            first_send: None,
            first_recv: None,
            label: None,
        })
        .collect();
    let mut spawns = vec![0u64; program.groups.len()];
    // Per semaphore: posts, waits, the first wait and its label; per barrier: arrivals.
    let mut sems: Vec<(u64, u64, Option<FirstUse>)> =
        vec![(0, 0, None); program.plan.sync.semaphores.len()];
    let mut arrivals: Vec<(u64, Option<FirstUse>)> =
        vec![(0, None); program.plan.sync.barriers.len()];
    let mut longest = 0f64;
    // CPU and sleep time of the forked tasks, as if they ran one after another.
    let mut forked_time = 0f64;
    let mut memory = 0u64;
    let mut files = 0u64;
    // Tasks forked so far per group; whether the counts of forks and waits are exact (no timed
    // loop around them).
    let mut forked = vec![0usize; program.groups.len()];
    let mut forks_exact = true;
    let mut queue: VecDeque<(usize, usize)> = program
        .groups
        .iter()
        .enumerate()
        .flat_map(|(g, group)| (0..group.tasks).map(move |i| (g, i)))
        .collect();
    'groups: while let Some((g, index)) = queue.pop_front() {
        let group = &program.groups[g];
        {
            let who = format!("task {}#{index}", group.name);
            let mut children = 0u64;
            let mut frame = vec![0f64; group.slots];
            frame[0] = index as f64;
            let mut held: Vec<usize> = Vec::new();
            let mut time = 0f64;
            let mut touch = 0u64;
            let (mut file, mut file_max) = (0u64, 0u64);
            let body = &group.body;
            let mut pc = 0;
            while pc < body.len() {
                if budget == 0 {
                    exact = false;
                    break 'groups;
                }
                budget -= 1;
                let span = spans[g][pc];
                let here = Use { group: g, pc };
                match &body[pc] {
                    Instr::Compute(a) | Instr::Sleep(a) => time += mean(a, &frame).max(0.0),
                    Instr::Busy(c) => time += c.eval(&frame).max(0.0),
                    Instr::Period { every, .. } => time += every.eval(&frame).max(0.0),
                    Instr::Send { chan, size, .. } | Instr::Recv { chan, size, .. } => {
                        let send = matches!(body[pc], Instr::Send { .. });
                        let e = match element(chan, &frame, span, &who) {
                            Ok(e) => e,
                            // An index that uses `from` is known only while running.
                            Err(_) if !provable => {
                                pc += 1;
                                continue;
                            }
                            Err(d) => return Err(d),
                        };
                        let bytes = size.eval(&frame);
                        let bytes = whole(
                            span,
                            &format!("the message size of {who}"),
                            bytes,
                            1,
                            MAX_MESSAGE,
                        )?;
                        let ch = &mut channels[e];
                        ch.label.get_or_insert((chan.name, e - chan.base));
                        match ch.size {
                            None => ch.size = Some((bytes, here)),
                            Some((s, first)) if s != bytes && provable => {
                                let (n, i) = ch.label.unwrap();
                                let first_at =
                                    crate::span::LineCol::of(&def.text, at(spans, first).start);
                                return Err(Diagnostic::new(
                                    span,
                                    format!("{who} uses {n}[{i}] with messages of {bytes} B, but messages of {s} B travel on it too (line {}); a channel carries one message size", first_at.line),
                                ));
                            }
                            Some(_) => {}
                        }
                        if send {
                            ch.sent += 1;
                            ch.first_send.get_or_insert(here);
                        } else {
                            ch.received += 1;
                            ch.first_recv.get_or_insert(here);
                            let id = (g, index);
                            match ch.reader {
                                None => ch.reader = Some(id),
                                Some(r) if r != id && provable => {
                                    let (n, i) = ch.label.unwrap();
                                    let (rg, ri) = r;
                                    return Err(Diagnostic::new(
                                        span,
                                        format!("{who} receives from {n}[{i}], which task {}#{ri} also receives from; a channel has one reader (give each reader its own channel)", program.groups[rg].name),
                                    ));
                                }
                                Some(_) => {}
                            }
                        }
                    }
                    Instr::Lock(r) => {
                        let e = element(r, &frame, span, &who)?;
                        if held.contains(&e) {
                            return Err(Diagnostic::new(span, format!("{who} takes lock {}[{}] while it holds it: it would wait for itself forever", r.name, e - r.base)));
                        }
                        held.push(e);
                    }
                    Instr::Unlock(r) => {
                        let e = element(r, &frame, span, &who)?;
                        let Some(p) = held.iter().position(|&h| h == e) else {
                            return Err(Diagnostic::new(
                                span,
                                format!(
                                    "{who} releases lock {}[{}], which it does not hold",
                                    r.name,
                                    e - r.base
                                ),
                            ));
                        };
                        held.remove(p);
                    }
                    Instr::CondWait { cond, lock } => {
                        element(cond, &frame, span, &who)?;
                        let e = element(lock, &frame, span, &who)?;
                        if !held.contains(&e) {
                            return Err(Diagnostic::new(span, format!("{who} waits on condition {} with lock {}[{}], which it does not hold; take it first", cond.name, lock.name, e - lock.base)));
                        }
                    }
                    Instr::SemPost(r) => {
                        let e = element(r, &frame, span, &who)?;
                        sems[e].0 += 1;
                    }
                    Instr::SemWait(r) => {
                        let e = element(r, &frame, span, &who)?;
                        sems[e].1 += 1;
                        sems[e].2.get_or_insert((here, r.name, e - r.base));
                    }
                    Instr::Barrier(r) => {
                        let e = element(r, &frame, span, &who)?;
                        arrivals[e].0 += 1;
                        arrivals[e].1.get_or_insert((here, r.name, e - r.base));
                    }
                    Instr::CondSignal(r) | Instr::CondBroadcast(r) => {
                        element(r, &frame, span, &who)?;
                    }
                    Instr::Yield | Instr::TimedEnd { .. } | Instr::Count { .. } => {}
                    Instr::TimedBegin { .. } => {}
                    Instr::Io { kind, bytes } => {
                        let b = bytes.eval(&frame).max(0.0) as u64;
                        match kind {
                            IoKind::Write => file = file.saturating_add(b),
                            IoKind::Truncate => file = 0,
                            IoKind::Read => {}
                        }
                        file_max = file_max.max(file);
                    }
                    Instr::Touch(c) => touch = touch.max(c.eval(&frame).max(0.0) as u64),
                    Instr::Spawn { semaphore } => {
                        if let Some(t) = program
                            .groups
                            .iter()
                            .position(|g| g.start_semaphore == Some(*semaphore))
                        {
                            spawns[t] += 1;
                        }
                    }
                    Instr::Fork { group: t } => {
                        let target = &program.groups[*t];
                        if forked[*t] < target.spawn {
                            queue.push_back((*t, target.tasks + forked[*t]));
                            forked[*t] += 1;
                            children += 1;
                        } else if forks_exact {
                            return Err(Diagnostic::new(
                                span,
                                format!(
                                    "{who} spawns a task of group {} beyond its bound: the group may spawn {} task{} (its `spawn`), and the spawn steps before this one have forked them all; raise the bound or spawn fewer",
                                    target.name,
                                    target.spawn,
                                    if target.spawn == 1 { "" } else { "s" }
                                ),
                            ));
                        }
                    }
                    Instr::WaitChild => {
                        if children > 0 {
                            children -= 1;
                        } else if forks_exact {
                            return Err(Diagnostic::new(
                                span,
                                format!("{who} waits for a child, but every task it forked with spawn has been waited for already (or it forked none): the wait would fail; wait once per spawn of a spawnable group"),
                            ));
                        }
                    }
                    Instr::Exit => {}
                    Instr::LoopBegin {
                        repeat,
                        timed,
                        counter,
                        var,
                        end,
                    } => {
                        let r = repeat.eval(&frame);
                        if *timed {
                            time += r.max(0.0);
                            if contains_messages(&body[pc + 1..*end]) {
                                exact = false;
                                forks_exact = false;
                            }
                            // Walk the body once for its references; the passes are unknown.
                            frame[*counter] = 1.0;
                        } else {
                            let n = whole(
                                span,
                                &format!("the loop count of {who}"),
                                r,
                                0,
                                u64::MAX >> 12,
                            )?;
                            frame[*counter] = n as f64;
                        }
                        if let Some(v) = var {
                            frame[*v] = 0.0;
                        }
                        if frame[*counter] <= 0.0 {
                            pc = *end + 1;
                            continue;
                        }
                    }
                    Instr::LoopEnd {
                        begin,
                        counter,
                        var,
                        ..
                    } => {
                        frame[*counter] -= 1.0;
                        if let Some(v) = var {
                            frame[*v] += 1.0;
                        }
                        if frame[*counter] > 0.0 {
                            pc = *begin + 1;
                            continue;
                        }
                    }
                }
                pc += 1;
            }
            if let Some(&e) = held.first() {
                return Err(Diagnostic::new(
                    group_span(def, g),
                    format!("{who} ends holding a lock (lock id {e}); release every lock it takes"),
                ));
            }
            if index >= group.tasks {
                forked_time += time;
            } else {
                longest = longest.max(time);
            }
            memory = memory.saturating_add(touch);
            files = files.saturating_add(file_max);
        }
    }
    if exact {
        for ch in &channels {
            let Some((n, i)) = ch.label else { continue };
            if ch.received > ch.sent {
                let u = ch.first_recv.expect("received");
                return Err(Diagnostic::new(at(spans, u), format!("{n}[{i}] is read {} times but written {} times: a receive nobody can satisfy", ch.received, ch.sent)));
            }
            if ch.sent > ch.received {
                let u = ch.first_send.expect("sent");
                return Err(Diagnostic::new(at(spans, u), format!("{n}[{i}] is written {} times but read {} times: its senders would leave messages nobody reads", ch.sent, ch.received)));
            }
        }
        for (g, group) in program.groups.iter().enumerate() {
            if group.start_semaphore.is_some() && spawns[g] != group.tasks as u64 {
                return Err(Diagnostic::new(group_span(def, g), format!("group {} has {} tasks but is spawned {} times; spawn each of its tasks once", group.name, group.tasks, spawns[g])));
            }
        }
        for (e, (posts, waits, first)) in sems.iter().enumerate() {
            let initial = u64::from(program.plan.sync.semaphores[e]);
            if let Some((u, n, i)) = first {
                if *waits > initial + posts {
                    return Err(Diagnostic::new(at(spans, *u), format!("semaphore {n}[{i}] is waited on {waits} times but starts at {initial} and is posted {posts} times: a wait nobody can satisfy")));
                }
            }
        }
        for (e, (count, first)) in arrivals.iter().enumerate() {
            let parties = program.plan.sync.barriers[e] as u64;
            if let Some((u, n, i)) = first {
                if count % parties != 0 {
                    return Err(Diagnostic::new(at(spans, *u), format!("barrier {n}[{i}] is reached {count} times in all, not a multiple of its {parties} parties: its last round would wait forever")));
                }
            }
        }
        program.expected_messages = Some(channels.iter().map(|c| c.received).sum());
    }
    let messages = channels.iter().map(|c| c.received).sum::<u64>() as f64;
    let tasks = (program.plan.total_tasks() + program.plan.total_spawn()) as f64;
    let secs = if budget == 0 {
        6.0 * 3600.0
    } else {
        (3.0 * (longest + forked_time) + messages * 20e-6 + tasks * 1e-3).max(60.0)
    };
    program.expected_time = Duration::from_secs_f64(secs.min(6.0 * 3600.0));
    program.memory = memory;
    program.files = files;
    Ok(())
}

fn group_span(def: &ScriptDef, g: usize) -> Span {
    def.groups.get(g).map_or(Span::default(), |g| g.name.span)
}
