//! A dry run of a compiled file, before anything starts: every task's body is walked with its
//! loop counts and channel indices evaluated, no time passing. When no timed loop surrounds a
//! send, receive or spawn (and the walk fits its budget), it proves that every channel gets
//! exactly as many messages as are read from it, of one size, by one reader; that each spawned
//! group is spawned once per task; that no spawnable group is forked more often than its bound
//! and no task waits for a child it does not have; that no task takes a lock twice, releases one
//! it does not hold, or ends holding one. It also bounds the run's time, memory and scratch
//! files. A task a spawn step forks is walked after the tasks the run starts with, at the place
//! (index) it takes in its group.

use crate::error::{whole, Diagnostic};
use crate::model::ScriptDef;
use crate::program::{CAmount, CRef, Instr, MemoryStep, Program, MAX_MESSAGE};
use crate::span::Span;
use schedlab_workload::mem_access::BufferKey;
use schedlab_workload::IoKind;
use std::collections::VecDeque;
use std::time::Duration;

/// Instructions a dry run may execute before it gives up proving message counts.
const DRY_RUN_BUDGET: u64 = 50_000_000;

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
/// begin and end, a compute, busy stretch or touch of a constant nothing, and a memory access
/// of no byte or hop.
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
        Instr::MemAccess(a) => a.count > 0,
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
    let mut walk = Walk::new(program, spans, def, provable);
    let mut longest = 0f64;
    // CPU and sleep time of the forked tasks, as if they ran one after another.
    let mut forked_time = 0f64;
    let mut memory = 0u64;
    let mut memory_steps = MemorySteps::default();
    let mut files = 0u64;
    // Shared memory-access buffers count once for the run.
    let mut shared_buffers = std::collections::BTreeMap::new();
    while let Some((g, index)) = walk.queue.pop_front() {
        let Some(task) = walk.task(g, index)? else {
            // Out of budget: what was walked proves nothing.
            walk.exact = false;
            break;
        };
        if let Some(&e) = task.held.first() {
            return Err(Diagnostic::new(
                group_span(def, g),
                format!(
                    "{} ends holding a lock (lock id {e}); release every lock it takes",
                    task.who
                ),
            ));
        }
        if index >= walk.program.groups[g].tasks {
            forked_time += task.time;
        } else {
            longest = longest.max(task.time);
        }
        let (touch, touch_at) = task.touch;
        memory = memory.saturating_add(touch);
        if touch > 0 {
            memory_steps.add(g, touch_at, || format!("touch {touch} B"), touch);
        }
        for (key, (bytes, span, what)) in &task.buffers {
            if matches!(key, BufferKey::Shared { .. }) {
                // Once for the run, under the first step that uses it.
                if shared_buffers.insert(key.clone(), *bytes).is_none() {
                    memory_steps.add(g, *span, || what.clone(), *bytes);
                }
            } else {
                memory = memory.saturating_add(*bytes);
                memory_steps.add(g, *span, || what.clone(), *bytes);
            }
        }
        files = files.saturating_add(task.file_max);
    }
    let expected_messages = if walk.exact {
        walk.check_balances()?;
        Some(walk.channels.iter().map(|c| c.received).sum())
    } else {
        None
    };
    let messages = walk.channels.iter().map(|c| c.received).sum::<u64>() as f64;
    let out_of_budget = walk.budget == 0;
    if expected_messages.is_some() {
        program.expected_messages = expected_messages;
    }
    let tasks = (program.plan.total_tasks() + program.plan.total_spawn()) as f64;
    let secs = if out_of_budget {
        6.0 * 3600.0
    } else {
        (3.0 * (longest + forked_time) + messages * 20e-6 + tasks * 1e-3).max(60.0)
    };
    program.expected_time = Duration::from_secs_f64(secs.min(6.0 * 3600.0));
    program.memory = memory.saturating_add(shared_buffers.values().sum::<u64>());
    program.memory_steps = memory_steps.largest_first();
    program.files = files;
    Ok(())
}

/// The steps that make up a program's memory ([`MemoryStep`]), one entry per step, summed
/// over the tasks that run it.
#[derive(Default)]
struct MemorySteps(std::collections::BTreeMap<(usize, usize, usize), MemoryStep>);

impl MemorySteps {
    /// One more holder of `bytes` for the step of group `group` at `span` (`what` it asks).
    fn add(&mut self, group: usize, span: Span, what: impl FnOnce() -> String, bytes: u64) {
        let step = (self.0.entry((group, span.start, span.end))).or_insert_with(|| MemoryStep {
            group,
            span,
            what: what(),
            bytes: 0,
            holders: 0,
            total: 0,
        });
        step.bytes = step.bytes.max(bytes);
        step.holders += 1;
        step.total = step.total.saturating_add(bytes);
    }

    /// The steps, the largest share first (ties in the file's order).
    fn largest_first(self) -> Vec<MemoryStep> {
        let mut steps: Vec<MemoryStep> = self.0.into_values().collect();
        steps.sort_by(|a, b| b.total.cmp(&a.total).then(a.span.start.cmp(&b.span.start)));
        steps
    }
}

/// The dry run's state across tasks: what is left of its budget, whether its counts are
/// exact, and the counts per channel, semaphore, barrier and spawned group.
struct Walk<'p> {
    program: &'p Program,
    spans: &'p [Vec<Span>],
    def: &'p ScriptDef,
    /// Whether message counts can be proved (no expression uses `from`).
    provable: bool,
    /// Instructions left to execute.
    budget: u64,
    /// Whether the counts are exact (provable, no timed loop around messages, in budget).
    exact: bool,
    channels: Vec<Channel>,
    /// Per group, how often a spawn step started one of its parked tasks.
    spawns: Vec<u64>,
    /// Per semaphore: posts, waits, the first wait and its label.
    sems: Vec<(u64, u64, Option<FirstUse>)>,
    /// Per barrier: arrivals, the first and its label.
    arrivals: Vec<(u64, Option<FirstUse>)>,
    /// Tasks forked so far per group.
    forked: Vec<usize>,
    /// Whether the counts of forks and waits are exact (no timed loop around them).
    forks_exact: bool,
    /// The tasks left to walk (group, index): the starting ones, then each forked one.
    queue: VecDeque<(usize, usize)>,
}

/// One task being walked.
struct TaskWalk {
    /// `task GROUP#INDEX`, for messages.
    who: String,
    group: usize,
    index: usize,
    frame: Vec<f64>,
    /// The locks it holds, by id.
    held: Vec<usize>,
    /// Children it forked and has not waited for.
    children: u64,
    /// Its CPU and sleep time, seconds.
    time: f64,
    /// The most memory it touches, bytes, and the touch step that asks it.
    touch: (u64, Span),
    /// The buffers of its memory accesses: their bytes, and the place and text of the first
    /// step that uses each.
    buffers: std::collections::BTreeMap<BufferKey, (u64, Span, String)>,
    /// Its scratch file's size now and at most, bytes.
    file: u64,
    file_max: u64,
}

impl TaskWalk {
    /// Take lock `r`; refuse one it holds.
    fn lock(&mut self, r: &CRef, span: Span) -> Result<(), Diagnostic> {
        let e = element(r, &self.frame, span, &self.who)?;
        if self.held.contains(&e) {
            return Err(Diagnostic::new(
                span,
                format!(
                    "{} takes lock {}[{}] while it holds it: it would wait for itself forever",
                    self.who,
                    r.name,
                    e - r.base
                ),
            ));
        }
        self.held.push(e);
        Ok(())
    }

    /// Release lock `r`; refuse one it does not hold.
    fn unlock(&mut self, r: &CRef, span: Span) -> Result<(), Diagnostic> {
        let e = element(r, &self.frame, span, &self.who)?;
        let Some(p) = self.held.iter().position(|&h| h == e) else {
            return Err(Diagnostic::new(
                span,
                format!(
                    "{} releases lock {}[{}], which it does not hold",
                    self.who,
                    r.name,
                    e - r.base
                ),
            ));
        };
        self.held.remove(p);
        Ok(())
    }

    /// Wait on `cond` with `lock`, which it must hold.
    fn cond_wait(&mut self, cond: &CRef, lock: &CRef, span: Span) -> Result<(), Diagnostic> {
        element(cond, &self.frame, span, &self.who)?;
        let e = element(lock, &self.frame, span, &self.who)?;
        if !self.held.contains(&e) {
            return Err(Diagnostic::new(span, format!("{} waits on condition {} with lock {}[{}], which it does not hold; take it first", self.who, cond.name, lock.name, e - lock.base)));
        }
        Ok(())
    }

    /// Write, truncate or read its scratch file.
    fn io(&mut self, kind: IoKind, bytes: &crate::expr::Compiled) {
        let b = bytes.eval(&self.frame).max(0.0) as u64;
        match kind {
            IoKind::Write => self.file = self.file.saturating_add(b),
            IoKind::Rewrite => self.file = self.file.max(b),
            IoKind::Truncate => self.file = 0,
            IoKind::Read => {}
        }
        self.file_max = self.file_max.max(self.file);
    }

    /// Wait for a child; refuse a wait with none left when the forks are counted exactly.
    fn wait_child(&mut self, forks_exact: bool, span: Span) -> Result<(), Diagnostic> {
        if self.children > 0 {
            self.children -= 1;
        } else if forks_exact {
            return Err(Diagnostic::new(
                span,
                format!("{} waits for a child, but every task it forked with spawn has been waited for already (or it forked none): the wait would fail; wait once per spawn of a spawnable group", self.who),
            ));
        }
        Ok(())
    }
}

impl<'p> Walk<'p> {
    fn new(
        program: &'p Program,
        spans: &'p [Vec<Span>],
        def: &'p ScriptDef,
        provable: bool,
    ) -> Walk<'p> {
        Walk {
            program,
            spans,
            def,
            provable,
            budget: DRY_RUN_BUDGET,
            exact: provable,
            channels: (0..program.plan.channels)
                .map(|_| Channel {
                    sent: 0,
                    received: 0,
                    size: None,
                    reader: None,
                    first_send: None,
                    first_recv: None,
                    label: None,
                })
                .collect(),
            spawns: vec![0u64; program.groups.len()],
            sems: vec![(0, 0, None); program.plan.sync.semaphores.len()],
            arrivals: vec![(0, None); program.plan.sync.barriers.len()],
            forked: vec![0usize; program.groups.len()],
            forks_exact: true,
            queue: program
                .groups
                .iter()
                .enumerate()
                .flat_map(|(g, group)| (0..group.tasks).map(move |i| (g, i)))
                .collect(),
        }
    }

    /// Walk task `index` of group `g` through its body; `None` when the budget ran out.
    fn task(&mut self, g: usize, index: usize) -> Result<Option<TaskWalk>, Diagnostic> {
        let program = self.program;
        let group = &program.groups[g];
        let mut t = TaskWalk {
            who: format!("task {}#{index}", group.name),
            group: g,
            index,
            frame: vec![0f64; group.slots],
            held: Vec::new(),
            children: 0,
            time: 0.0,
            touch: (0, Span::default()),
            buffers: Default::default(),
            file: 0,
            file_max: 0,
        };
        t.frame[0] = index as f64;
        let body = &group.body;
        let mut pc = 0;
        while pc < body.len() {
            if self.budget == 0 {
                return Ok(None);
            }
            self.budget -= 1;
            let span = self.spans[g][pc];
            let here = Use { group: g, pc };
            match &body[pc] {
                Instr::Compute(a) | Instr::Sleep(a) => t.time += mean(a, &t.frame).max(0.0),
                Instr::Busy(c) => t.time += c.eval(&t.frame).max(0.0),
                Instr::Period { every, .. } => t.time += every.eval(&t.frame).max(0.0),
                Instr::Send { chan, size, .. } => self.message(&t, true, chan, size, here)?,
                Instr::Recv { chan, size, .. } => self.message(&t, false, chan, size, here)?,
                Instr::Lock(r) => t.lock(r, span)?,
                Instr::Unlock(r) => t.unlock(r, span)?,
                Instr::CondWait { cond, lock } => t.cond_wait(cond, lock, span)?,
                Instr::SemPost(r) => {
                    let e = element(r, &t.frame, span, &t.who)?;
                    self.sems[e].0 += 1;
                }
                Instr::SemWait(r) => {
                    let e = element(r, &t.frame, span, &t.who)?;
                    self.sems[e].1 += 1;
                    self.sems[e].2.get_or_insert((here, r.name, e - r.base));
                }
                Instr::Barrier(r) => {
                    let e = element(r, &t.frame, span, &t.who)?;
                    self.arrivals[e].0 += 1;
                    self.arrivals[e].1.get_or_insert((here, r.name, e - r.base));
                }
                Instr::CondSignal(r) | Instr::CondBroadcast(r) => {
                    element(r, &t.frame, span, &t.who)?;
                }
                Instr::Yield | Instr::Set(_) | Instr::TimedEnd { .. } | Instr::Count { .. } => {}
                Instr::TimedBegin { .. } => {}
                Instr::Io { kind, bytes } => t.io(*kind, bytes),
                Instr::Touch(c) => {
                    let bytes = c.eval(&t.frame).max(0.0) as u64;
                    if bytes > t.touch.0 {
                        t.touch = (bytes, span);
                    }
                }
                Instr::MemAccess(a) => {
                    (t.buffers.entry(a.buffer_key()))
                        .or_insert_with(|| (a.buffer_bytes(), span, a.to_string()));
                    // A generous bound: 100 ns a byte or hop (a miss to memory per hop).
                    t.time += a.count as f64 * 100e-9;
                }
                Instr::Spawn { semaphore } => {
                    if let Some(s) =
                        (program.groups.iter()).position(|g| g.start_semaphore == Some(*semaphore))
                    {
                        self.spawns[s] += 1;
                    }
                }
                Instr::Fork { group: target } => self.fork(&mut t, *target, span)?,
                Instr::WaitChild => t.wait_child(self.forks_exact, span)?,
                Instr::Exit => {}
                Instr::LoopBegin {
                    repeat,
                    timed,
                    counter,
                    var,
                    end,
                } => {
                    let r = repeat.eval(&t.frame);
                    if *timed {
                        t.time += r.max(0.0);
                        if contains_messages(&body[pc + 1..*end]) {
                            self.exact = false;
                            self.forks_exact = false;
                        }
                        // Walk the body once for its references; the passes are unknown.
                        t.frame[*counter] = 1.0;
                    } else {
                        let what = format!("the loop count of {}", t.who);
                        let n = whole(span, &what, r, 0, u64::MAX >> 12)?;
                        t.frame[*counter] = n as f64;
                    }
                    if let Some(v) = var {
                        t.frame[*v] = 0.0;
                    }
                    if t.frame[*counter] <= 0.0 {
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
                    t.frame[*counter] -= 1.0;
                    if let Some(v) = var {
                        t.frame[*v] += 1.0;
                    }
                    if t.frame[*counter] > 0.0 {
                        pc = *begin + 1;
                        continue;
                    }
                }
            }
            pc += 1;
        }
        Ok(Some(t))
    }

    /// Task `t` sends (`send`) or receives a message of `size` on `chan` at `here`: counted
    /// per channel element, which carries one message size and has one reader.
    fn message(
        &mut self,
        t: &TaskWalk,
        send: bool,
        chan: &CRef,
        size: &crate::expr::Compiled,
        here: Use,
    ) -> Result<(), Diagnostic> {
        let span = at(self.spans, here);
        let who = &t.who;
        let e = match element(chan, &t.frame, span, who) {
            Ok(e) => e,
            // An index that uses `from` is known only while running.
            Err(_) if !self.provable => return Ok(()),
            Err(d) => return Err(d),
        };
        let bytes = size.eval(&t.frame);
        let what = format!("the message size of {who}");
        let bytes = whole(span, &what, bytes, 1, MAX_MESSAGE)?;
        let provable = self.provable;
        let ch = &mut self.channels[e];
        ch.label.get_or_insert((chan.name, e - chan.base));
        match ch.size {
            None => ch.size = Some((bytes, here)),
            Some((s, first)) if s != bytes && provable => {
                let (n, i) = ch.label.unwrap();
                let first_at =
                    crate::span::LineCol::of(&self.def.text, at(self.spans, first).start);
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
            return Ok(());
        }
        ch.received += 1;
        ch.first_recv.get_or_insert(here);
        let id = (t.group, t.index);
        match ch.reader {
            None => ch.reader = Some(id),
            Some(r) if r != id && provable => {
                let (n, i) = ch.label.unwrap();
                let (rg, ri) = r;
                return Err(Diagnostic::new(
                    span,
                    format!("{who} receives from {n}[{i}], which task {}#{ri} also receives from; a channel has one reader (give each reader its own channel)", self.program.groups[rg].name),
                ));
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// Task `t` forks a task of group `target` into its next spawn place, queued to be walked;
    /// refuse a fork beyond the group's bound when the forks are counted exactly.
    fn fork(&mut self, t: &mut TaskWalk, target: usize, span: Span) -> Result<(), Diagnostic> {
        let group = &self.program.groups[target];
        if self.forked[target] < group.spawn {
            self.queue
                .push_back((target, group.tasks + self.forked[target]));
            self.forked[target] += 1;
            t.children += 1;
        } else if self.forks_exact {
            return Err(Diagnostic::new(
                span,
                format!(
                    "{} spawns a task of group {} beyond its bound: the group may spawn {} task{} (its `spawn`), and the spawn steps before this one have forked them all; raise the bound or spawn fewer",
                    t.who,
                    group.name,
                    group.spawn,
                    if group.spawn == 1 { "" } else { "s" }
                ),
            ));
        }
        Ok(())
    }

    /// With exact counts: every channel element read as often as written, every parked task
    /// spawned once, no semaphore waited on more than it can give, every barrier's arrivals a
    /// multiple of its parties.
    fn check_balances(&self) -> Result<(), Diagnostic> {
        let (program, spans, def) = (self.program, self.spans, self.def);
        for ch in &self.channels {
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
            let parked = (group.tasks - group.with_run) as u64;
            if group.start_semaphore.is_some() && self.spawns[g] != parked {
                return Err(Diagnostic::new(group_span(def, g), format!("group {} has {parked} tasks waiting for a spawn but is spawned {} times; spawn each of its tasks once", group.name, self.spawns[g])));
            }
        }
        for (e, (posts, waits, first)) in self.sems.iter().enumerate() {
            let initial = u64::from(program.plan.sync.semaphores[e]);
            if let Some((u, n, i)) = first {
                if *waits > initial + posts {
                    return Err(Diagnostic::new(at(spans, *u), format!("semaphore {n}[{i}] is waited on {waits} times but starts at {initial} and is posted {posts} times: a wait nobody can satisfy")));
                }
            }
        }
        for (e, (count, first)) in self.arrivals.iter().enumerate() {
            let parties = program.plan.sync.barriers[e] as u64;
            if let Some((u, n, i)) = first {
                if count % parties != 0 {
                    return Err(Diagnostic::new(at(spans, *u), format!("barrier {n}[{i}] is reached {count} times in all, not a multiple of its {parties} parties: its last round would wait forever")));
                }
            }
        }
        Ok(())
    }
}

fn group_span(def: &ScriptDef, g: usize) -> Span {
    def.groups.get(g).map_or(Span::default(), |g| g.name.span)
}
