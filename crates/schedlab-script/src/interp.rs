//! The task body of a workload file: one interpreter over a group's compiled instructions,
//! written once against [`Context`] like every shipped workload's body, so that it runs on the
//! real kernel and on the simulator alike.
//!
//! Messages of 8 bytes or more carry their sender and a sequence number per (sender, channel),
//! and every receiver checks them, as the messaging preset does: a lost, duplicated or reordered
//! message fails the repetition. Periodic timers are accounted as interbench accounts its
//! periods (`periodic_schedule` in interbench.c): an activation's latency is how late the task
//! woke after it; the work between two activations meets its deadline if it ends by the
//! activation plus the deadline; when the task falls a whole period or more behind, the
//! activations it overslept are counted as missed (and as deadlines missed) and it carries on
//! from the latest one.

use crate::compile::FROM_SLOT;
use crate::program::{CAmount, CGroup, CRef, Instr, PeriodNames, Program};
use rand::Rng;
use rand_core::SeedableRng;
use rand_distr::{Distribution, Exp, LogNormal, Normal};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;
use schedlab_workload::duration::{DURATION_RANGE, MAX_DURATION};
use schedlab_workload::passes::{micros, signed_micros, PassRecord};
use schedlab_workload::{
    BarrierId, ChannelId, CondId, Context, LockId, LoopCalibration, SemaphoreId, TaskRef,
    WorkloadError,
};
use std::time::Duration;

/// The most instructions (body length × tasks of a group) specialized per task.
const SPECIALIZE_LIMIT: usize = 1 << 18;

/// Passes of a timed loop in a row that find the clock where the previous pass left it before
/// the task is failed: its steps take no time, and on the simulator, whose clock moves only
/// while a body waits for a call that takes time, such a loop never ends. (On the real kernel
/// the clock always moves.) About 0.1 s of passes that do nothing; a loop whose passes only
/// sometimes take time is not mistaken for one, unless four million of them in a row do not.
pub const FROZEN_PASSES: u32 = 1 << 22;

/// Sample key of the messages each receiving task got.
pub const RECEIVED: &str = "received";

/// A duration from seconds, or an error naming the step: what depends on a task's index or a
/// loop variable is bounded here, to the range a constant is bounded to when the file is read.
fn duration(secs: f64, what: &str) -> Result<Duration, WorkloadError> {
    if secs.is_finite() && (0.0..=MAX_DURATION.as_secs_f64()).contains(&secs) {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(WorkloadError::Backend(format!(
            "{what} evaluated to {secs} s; accepted: {DURATION_RANGE}"
        )))
    }
}

#[inline]
fn element(r: &CRef, frame: &[f64]) -> Result<usize, WorkloadError> {
    let i = match (&r.affine, &r.index) {
        (_, None) => return Ok(r.base),
        (Some((slot, offset)), _) => {
            // A whole slot plus a whole offset: no check of wholeness needed.
            let i = frame[*slot] as i64 + offset;
            if (0..r.len as i64).contains(&i) {
                return Ok(r.base + i as usize);
            }
            i as f64
        }
        (None, Some(c)) => c.eval(frame),
    };
    match crate::expr::whole(i) {
        Some(w) if w >= 0 && (w as usize) < r.len => Ok(r.base + w as usize),
        _ => Err(WorkloadError::Backend(format!(
            "{}[{i}] is out of range: '{}' has {} elements",
            r.name, r.name, r.len
        ))),
    }
}

fn draw(
    a: &CAmount,
    frame: &[f64],
    rng: &mut Xoshiro256PlusPlus,
    what: &str,
) -> Result<Duration, WorkloadError> {
    let bad = |e: String| WorkloadError::Backend(format!("{what}: {e}"));
    let secs = match a {
        CAmount::Fixed(c) => c.eval(frame),
        CAmount::Uniform(lo, hi) => {
            let (lo, hi) = (lo.eval(frame), hi.eval(frame));
            if hi < lo {
                return Err(bad(format!("uniform bounds {lo} s > {hi} s")));
            }
            lo + (hi - lo) * rng.gen::<f64>()
        }
        CAmount::Exponential(mean) => {
            let m = mean.eval(frame);
            if m <= 0.0 {
                0.0
            } else {
                Exp::new(1.0 / m)
                    .map_err(|e| bad(e.to_string()))?
                    .sample(rng)
            }
        }
        CAmount::Normal(mean, sd) => Normal::new(mean.eval(frame), sd.eval(frame))
            .map_err(|e| bad(e.to_string()))?
            .sample(rng)
            .max(0.0),
        CAmount::LogNormal(mean, sd) => {
            let (m, s) = (mean.eval(frame), sd.eval(frame));
            if m <= 0.0 {
                0.0
            } else {
                let sigma2 = (1.0 + (s * s) / (m * m)).ln();
                LogNormal::new(m.ln() - sigma2 / 2.0, sigma2.sqrt())
                    .map_err(|e| bad(e.to_string()))?
                    .sample(rng)
            }
        }
    };
    duration(secs, what)
}

/// The next sequence number per (channel, peer) of one task, without hashing per message where
/// memory allows: a sender's table is dense over the channels (peer 0), a receiver's has a dense
/// row over the senders for each of the few channels it reads. Past the bounds, a hash map.
enum SeqTable {
    /// Dense rows, one per channel used: `(channel, next per peer)`.
    Dense {
        peers: usize,
        rows: Vec<(usize, Vec<u32>)>,
        last: usize,
    },
    /// One dense row over every channel (a sender: peer is always 0).
    ByChannel(Vec<u32>),
    /// Keyed by (channel, peer).
    Sparse(FxHashMap<(usize, usize), u32>),
}

impl SeqTable {
    /// Memory one task's table may take densely, in entries (4 bytes each).
    const DENSE_ENTRIES: usize = 1 << 14;
    /// Channels a receiver's dense table keeps rows for before it turns to a hash map.
    const DENSE_ROWS: usize = 8;

    /// A sender's table over `channels`.
    fn for_sender(channels: usize) -> SeqTable {
        if channels <= Self::DENSE_ENTRIES {
            SeqTable::ByChannel(Vec::new())
        } else {
            SeqTable::Sparse(FxHashMap::default())
        }
    }

    /// A receiver's table over `peers` senders.
    fn for_receiver(peers: usize) -> SeqTable {
        if peers <= Self::DENSE_ENTRIES / Self::DENSE_ROWS {
            SeqTable::Dense {
                peers,
                rows: Vec::new(),
                last: 0,
            }
        } else {
            SeqTable::Sparse(FxHashMap::default())
        }
    }

    #[inline(always)]
    fn slot(&mut self, channel: usize, peer: usize) -> &mut u32 {
        if let SeqTable::Dense { rows, last, .. } = self {
            if rows.len() >= Self::DENSE_ROWS && !rows.iter().any(|(c, _)| *c == channel) {
                let map = rows
                    .drain(..)
                    .flat_map(|(c, row)| row.into_iter().enumerate().map(move |(p, v)| ((c, p), v)))
                    .filter(|(_, v)| *v != 0)
                    .collect();
                *self = SeqTable::Sparse(map);
            } else if rows.get(*last).is_none_or(|(c, _)| *c != channel) {
                *last = rows
                    .iter()
                    .position(|(c, _)| *c == channel)
                    .unwrap_or(rows.len());
            }
        }
        match self {
            SeqTable::Dense { peers, rows, last } => {
                if *last == rows.len() {
                    rows.push((channel, vec![0; *peers]));
                }
                &mut rows[*last].1[peer]
            }
            SeqTable::ByChannel(row) => {
                if row.len() <= channel {
                    row.resize(channel + 1, 0);
                }
                &mut row[channel]
            }
            SeqTable::Sparse(map) => map.entry((channel, peer)).or_insert(0),
        }
    }
}

/// A periodic timer's state in one task.
#[derive(Clone, Copy, Default)]
struct PeriodState {
    /// The current activation and its deadline, once the timer has started.
    current: Option<(Duration, Duration)>,
    met: u64,
    late: u64,
    missed: u64,
}

impl PeriodState {
    /// The period's next activation (`every`, work due `deadline` after it): the work of the
    /// current one is accounted, then the task sleeps until the next one (the first starts
    /// now) and records how late it woke; whole periods overslept are missed. What rt-app's log
    /// says of it, from the same clock readings: the activation's slack (the activation minus
    /// the time the step was reached, µs) and how late the task woke (µs), or `None` when it
    /// was already late and did not sleep (rt-app then resets the pass's wake-up latency).
    /// `None` when the run's `end` comes before the next activation: the task sleeps until the
    /// end (rt-app's `clock_nanosleep` is cancelled there) and records nothing of it.
    async fn activate<C: Context>(
        &mut self,
        ctx: &C,
        names: &PeriodNames,
        every: Duration,
        deadline: Duration,
        end: Option<Duration>,
    ) -> Option<(i64, Option<u64>)> {
        let now = ctx.now();
        self.close(now);
        let mut logged = (0, None);
        let activation = match self.current {
            None => now,
            Some((previous, _)) => {
                let mut next = previous + every;
                logged.0 = signed_micros(next, now);
                if now >= next + every {
                    // Overslept whole periods: count them missed and go on from the latest
                    // activation that has passed.
                    let behind = ((now - next).as_nanos() / every.as_nanos()) as u32;
                    self.missed += u64::from(behind);
                    self.late += u64::from(behind);
                    next += every * behind;
                }
                if let Some(e) = end.filter(|&e| next > e) {
                    ctx.sleep_until(e).await;
                    return None;
                }
                let slept = next > now;
                if slept {
                    ctx.sleep_until(next).await;
                }
                let woke = ctx.now().saturating_sub(next);
                ctx.record(names.latency, woke.as_secs_f64());
                if slept {
                    logged.1 = Some(micros(woke));
                }
                next
            }
        };
        self.current = Some((activation, activation + deadline));
        Some(logged)
    }

    /// Account the work of the current activation, ended at `now`.
    fn close(&mut self, now: Duration) {
        if let Some((_, due)) = self.current {
            if now <= due {
                self.met += 1;
            } else {
                self.late += 1;
            }
        }
    }
}

/// Run task `task`'s body of `program` against `ctx`.
pub async fn run<C: Context>(
    program: &Program,
    task: TaskRef,
    ctx: &C,
) -> Result<(), WorkloadError> {
    let group = &program.groups[task.group];
    // rt-app fills every memrun buffer before its threads start: the task's are made before
    // its first step (a shared one once, by the first task to come).
    for i in &group.body {
        if let Instr::MemAccess(a) = i {
            ctx.prepare_memory(a).await?;
        }
    }
    // rt-app's global duration: when it has come the task stops where rt-app's thread stops
    // (see `ended`), releases the locks it holds and ends normally.
    let end = program.ends_at;
    // A spawned group's first `with_run` tasks start with the run, as rt-app starts the
    // `instance`s of a task that forks also start; the others wait for a spawn each.
    if let Some(s) = group
        .start_semaphore
        .filter(|_| task.index >= group.with_run)
    {
        let logs = program.rtapp_log.is_some() && ctx.logs_passes();
        let started = ctx.sem_wait(SemaphoreId(s)).await;
        if ended(&started, end, ctx) {
            if logs {
                ctx.log_fork(None);
            }
            return Ok(());
        }
        started?;
        if logs {
            ctx.log_fork(Some(ctx.now()));
        }
    }
    let loops = program.loops.is_some();
    // The sum of the computes so far, when they are cumulative (`Program::cumulative`).
    let mut compute_total = Duration::ZERO;
    let mut frame = vec![0f64; group.slots];
    frame[0] = task.index as f64;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(
        program.seed ^ (task.id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    // Buffers live in the body's own frame, as the messaging preset's do.
    let mut buf = [0u8; 4096];
    let mut next_send = SeqTable::for_sender(program.plan.channels);
    // Senders are the tasks the run starts with and every one spawn steps may fork.
    let tasks = (program.plan.total_tasks() + program.plan.total_spawn()) as u32;
    let mut next_recv = SeqTable::for_receiver(tasks as usize);
    let mut received = 0u64;
    let mut counts = vec![0f64; program.counts.len()];
    let mut periods = vec![PeriodState::default(); program.periods.len()];
    let specialized = specialize(group, task.index);
    let body: &[Instr] = specialized.as_deref().unwrap_or(&group.body);
    let mut frozen = Frozen::default();
    // rt-app's log of phase passes, only when the run keeps them: no clock readings otherwise.
    let mut log = (program.rtapp_log.as_ref())
        .filter(|_| ctx.logs_passes())
        .map(|l| PassLogger::new(perf_ns_per_loop(ctx, l), l.cumulative_slack));
    // The locks this task holds, oldest first, when the run has an end (released there).
    let mut held: Vec<usize> = Vec::new();
    let mut pc = 0;
    while pc < body.len() {
        // rt-app looks at its run flag before each event (`run` in rt-app.c).
        if end.is_some_and(|e| ctx.now() >= e) {
            break;
        }
        match &body[pc] {
            Instr::Compute(a) => {
                let cpu = draw(a, &frame, &mut rng, "compute")?;
                let t0 = log.as_ref().map(|_| ctx.now());
                if loops {
                    ctx.compute_loops(cpu).await;
                } else if program.cumulative {
                    compute_total = compute_total.saturating_add(cpu);
                    ctx.compute_to_total(cpu, compute_total).await;
                } else {
                    ctx.compute(cpu).await;
                }
                if let (Some(log), Some(t0)) = (log.as_mut(), t0) {
                    log.ran(cpu, ctx.now().saturating_sub(t0), false);
                }
            }
            Instr::Sleep(a) => {
                let d = draw(a, &frame, &mut rng, "sleep")?;
                match end {
                    None => ctx.sleep(d).await,
                    // rt-app's nanosleep is a cancellation point: the end cuts it.
                    Some(e) => {
                        let until = ctx.now() + d;
                        ctx.sleep_until(until.min(e)).await;
                        if until >= e {
                            break;
                        }
                    }
                }
            }
            Instr::Busy(c) => {
                let length = duration(c.eval(&frame), "busy")?;
                match log.as_mut() {
                    None => busy(ctx, length, loops).await,
                    Some(log) => {
                        let t0 = ctx.now();
                        busy(ctx, length, loops).await;
                        log.ran(length, ctx.now().saturating_sub(t0), true);
                    }
                }
            }
            Instr::Period {
                timer,
                every,
                deadline,
            } => {
                let every = duration(every.eval(&frame), "every")?;
                let deadline = duration(deadline.eval(&frame), "deadline")?;
                if every.is_zero() {
                    return Err(WorkloadError::Backend(
                        "a period's every evaluated to 0".into(),
                    ));
                }
                let names = &program.periods[*timer];
                let Some((slack, woke)) = periods[*timer]
                    .activate(ctx, names, every, deadline, end)
                    .await
                else {
                    break;
                };
                if let Some(log) = log.as_mut() {
                    log.timer(every, slack, woke);
                }
            }
            Instr::Send { chan, size, bytes } => {
                let ch = element(chan, &frame)?;
                let n = message_bytes(*bytes, size, &frame)?;
                if n >= crate::compile::HEADER {
                    stamp(&mut buf, task.id, next_send.slot(ch, 0));
                }
                ctx.send(ChannelId(ch), &buf[..n]).await?;
            }
            Instr::Recv { chan, size, bytes } => {
                let ch = element(chan, &frame)?;
                let n = message_bytes(*bytes, size, &frame)?;
                ctx.recv(ChannelId(ch), &mut buf[..n]).await?;
                if n >= crate::compile::HEADER {
                    let sender = check_stamp(&buf, task.id, (chan, ch), tasks, &mut next_recv)?;
                    if program.uses_from {
                        frame[FROM_SLOT] = program.locate(sender as usize).1 as f64;
                    }
                }
                received += 1;
            }
            Instr::Lock(r) => {
                let l = element(r, &frame)?;
                ctx.lock(LockId(l)).await;
                if end.is_some() {
                    held.push(l);
                }
            }
            Instr::Unlock(r) => {
                let l = element(r, &frame)?;
                ctx.unlock(LockId(l));
                if let Some(i) = held.iter().rposition(|&h| h == l) {
                    held.remove(i);
                }
            }
            Instr::Barrier(r) => {
                let got = ctx.barrier(BarrierId(element(r, &frame)?)).await;
                if ended(&got, end, ctx) {
                    break;
                }
                got?
            }
            Instr::SemPost(r) => ctx.sem_post(SemaphoreId(element(r, &frame)?)).await?,
            Instr::SemWait(r) => {
                let got = ctx.sem_wait(SemaphoreId(element(r, &frame)?)).await;
                if ended(&got, end, ctx) {
                    break;
                }
                got?
            }
            Instr::CondWait { cond, lock } => {
                let l = element(lock, &frame)?;
                let got = ctx
                    .cond_wait(CondId(element(cond, &frame)?), LockId(l))
                    .await;
                if ended(&got, end, ctx) {
                    // A wait the end cut leaves its lock released.
                    if let Some(i) = held.iter().rposition(|&h| h == l) {
                        held.remove(i);
                    }
                    break;
                }
                got?
            }
            Instr::CondSignal(r) => ctx.cond_signal(CondId(element(r, &frame)?)).await?,
            Instr::CondBroadcast(r) => ctx.cond_broadcast(CondId(element(r, &frame)?)).await?,
            Instr::Yield => ctx.yield_now().await,
            Instr::Set(change) => ctx.set_attrs(&change.knobs, change.all_cpus).await?,
            Instr::Io { kind, bytes } => ctx.io(*kind, byte_count(bytes.eval(&frame))?).await?,
            Instr::Touch(bytes) => ctx.touch_memory(byte_count(bytes.eval(&frame))?).await,
            Instr::MemAccess(a) => ctx.access_memory(a).await?,
            Instr::Spawn { semaphore } => ctx.sem_post(SemaphoreId(*semaphore)).await?,
            Instr::Fork { group } => {
                ctx.spawn(*group, 0).await?;
            }
            Instr::WaitChild => {
                ctx.wait(None).await?;
            }
            // The task's end: what follows the loop below (its metrics) is its exit.
            Instr::Exit => break,
            Instr::LoopBegin {
                repeat,
                timed,
                counter,
                var,
                end,
            } => {
                if !loop_begin(ctx, &mut frame, repeat, *timed, *counter, *var)? {
                    pc = *end + 1;
                    continue;
                }
            }
            Instr::LoopEnd {
                begin,
                counter,
                var,
                timed,
            } => {
                if ctx.stop_requested() {
                    return Err(WorkloadError::Stopped);
                }
                if let Some(v) = var {
                    frame[*v] += 1.0;
                }
                let again = if *timed {
                    let now = ctx.now();
                    if frozen.stands_at(now) {
                        return Err(frozen_loop(program, task, now, &body[*begin]));
                    }
                    now.as_secs_f64() < frame[*counter]
                } else {
                    frame[*counter] -= 1.0;
                    frame[*counter] > 0.0
                };
                if again {
                    pc = *begin + 1;
                    continue;
                }
            }
            Instr::TimedBegin { slot } => {
                let now = ctx.now();
                frame[*slot] = now.as_secs_f64();
                if let Some(log) = log.as_mut() {
                    log.begin(now);
                }
            }
            Instr::TimedEnd { timer, slot } => {
                let now = ctx.now();
                let took = now.as_secs_f64() - frame[*slot];
                ctx.record(program.timers[*timer], took.max(0.0));
                if let Some(log) = log.as_mut() {
                    ctx.log_pass(log.end(now));
                }
            }
            Instr::Count { count, by } => counts[*count] += by.eval(&frame),
        }
        pc += 1;
    }
    // Stopped at the end (or ended holding locks, which only a run with an end tracks): let
    // the tasks waiting for them go on to their own end, as rt-app's thread that stops with a
    // lock held runs its remaining unlock events.
    for l in held.into_iter().rev() {
        ctx.unlock(LockId(l));
    }
    record_at_end(ctx, program, &mut periods, &counts, received);
    Ok(())
}

/// Whether a wait's result `got` means that the run's `end` has come (the backend cut the
/// wait there, [`schedlab_workload::SyncPlan::wait_end`]): the task then stops, as rt-app's
/// thread cancelled in `pthread_cond_wait`, `sem_wait` or a barrier does. A `Stopped` before
/// the end is the run being interrupted, and stays an error.
fn ended<C: Context>(got: &Result<(), WorkloadError>, end: Option<Duration>, ctx: &C) -> bool {
    matches!(got, Err(WorkloadError::Stopped)) && end.is_some_and(|e| ctx.now() >= e)
}

/// One phase pass of rt-app's log being measured (`thread_body` and `run_event` in rt-app
/// 1.0's `src/rt-app.c`): a `Timed` step is a phase pass; its `compute` and `busy` steps are
/// rt-app's `run` and `runtime` events, its `period` steps its `timer` events.
struct PassLogger {
    row: PassRecord,
    /// ns per loop of rt-app's busy loop, for `perf` (`None`: not known, `perf` 0).
    ns_per_loop: Option<f64>,
    cumulative_slack: bool,
}

/// The ns per loop `perf` counts in: the backend's measured or given figure (the real kernel's,
/// [`Context::ns_per_loop`]), else the file's when it gives a number; `None` for a
/// `"CPU<n>"` calibration on a backend that runs no loop (the simulator).
fn perf_ns_per_loop<C: Context>(ctx: &C, log: &crate::model::RtAppLog) -> Option<f64> {
    ctx.ns_per_loop().or(match log.calibration {
        LoopCalibration::Given { ns_per_loop } => Some(ns_per_loop as f64),
        LoopCalibration::Measure { .. } => None,
    })
}

impl PassLogger {
    fn new(ns_per_loop: Option<f64>, cumulative_slack: bool) -> PassLogger {
        PassLogger {
            row: PassRecord::default(),
            ns_per_loop: ns_per_loop.filter(|ns| *ns > 0.0),
            cumulative_slack,
        }
    }

    /// A pass starts at `now`.
    fn begin(&mut self, now: Duration) {
        self.row = PassRecord {
            start_ns: now.as_nanos() as u64,
            ..PassRecord::default()
        };
    }

    /// A `run` (`busy`: `runtime`) event of `asked` took `took` of wall time.
    fn ran(&mut self, asked: Duration, took: Duration, busy: bool) {
        let us = micros(asked);
        self.row.c_duration_us += us;
        self.row.run_us += micros(took);
        if let Some(ns) = self.ns_per_loop {
            // rt-app 1.0's loadwait returns the loops of the last part under a second (the
            // loops `run` takes, for a run shorter than that); a runtime event calls it for
            // every 32 µs it stays.
            let loops = |us: u64| (us as f64 * 1000.0 / ns) as u64;
            self.row.perf += if busy {
                micros(took).div_ceil(32).max(1) * loops(32)
            } else {
                loops(us % 1_000_000)
            };
        }
    }

    /// A `timer` event of period `every`: its slack (µs) and how late the task woke (µs), or
    /// `None` if it was late and did not sleep.
    fn timer(&mut self, every: Duration, slack: i64, woke: Option<u64>) {
        self.row.c_period_us += micros(every);
        if self.cumulative_slack {
            self.row.slack_us += slack;
        } else {
            self.row.slack_us = slack;
        }
        self.row.wu_lat_us = woke.map_or(0, |w| self.row.wu_lat_us + w);
    }

    /// The pass ends at `now`: its row.
    fn end(&mut self, now: Duration) -> PassRecord {
        self.row.end_ns = now.as_nanos() as u64;
        self.row
    }
}

/// rt-app's `runtime` with `run-as=loops`: the loop runs in bursts of this much work, the
/// clock read after each (`loadwait(32)` in rt-app.c's `run_event`).
const RUNTIME_BURST: Duration = Duration::from_micros(32);

/// Stay busy for `length` of wall time: computing a millisecond at most at a time, or (`loops`)
/// running the calibrated loop in bursts of [`RUNTIME_BURST`] until the time has passed, as
/// rt-app's `runtime` does (it may end up to one burst late, as rt-app's does).
async fn busy<C: Context>(ctx: &C, length: Duration, loops: bool) {
    let end = ctx.now() + length;
    loop {
        let now = ctx.now();
        if now >= end {
            break;
        }
        if loops {
            ctx.compute_loops(RUNTIME_BURST).await;
        } else {
            ctx.compute((end - now).min(Duration::from_millis(1))).await;
        }
    }
}

/// Enter a loop: its counter slot set to its passes (a count) or its end (`timed`: a clock
/// reading), its variable to 0. Whether its body runs at all.
#[inline]
fn loop_begin<C: Context>(
    ctx: &C,
    frame: &mut [f64],
    repeat: &crate::expr::Compiled,
    timed: bool,
    counter: usize,
    var: Option<usize>,
) -> Result<bool, WorkloadError> {
    let r = repeat.eval(frame);
    frame[counter] = if timed {
        let d = duration(r, "loop")?;
        (ctx.now() + d).as_secs_f64()
    } else if r.fract() == 0.0 && r >= 0.0 {
        r
    } else {
        return Err(WorkloadError::Backend(format!(
            "a loop's count evaluated to {r}; accepted: a whole number, 0 or more"
        )));
    };
    if let Some(v) = var {
        frame[v] = 0.0;
    }
    Ok(if timed {
        ctx.now().as_secs_f64() < frame[counter]
    } else {
        frame[counter] > 0.0
    })
}

/// Task `index`'s body of `group` with the index folded into its expressions, when that fits
/// [`SPECIALIZE_LIMIT`]: the index is fixed for the whole body, so that `inbox[index]` costs
/// nothing per message.
fn specialize(group: &CGroup, index: usize) -> Option<Vec<Instr>> {
    (group.body.len() * (group.tasks + group.spawn) <= SPECIALIZE_LIMIT).then(|| {
        (group.body.iter())
            .map(|i| i.with_slot(0, index as f64))
            .collect()
    })
}

/// The clock at the end of the last pass of a timed loop, and how many passes in a row found
/// it there ([`FROZEN_PASSES`]).
struct Frozen {
    at: Duration,
    passes: u32,
}

impl Default for Frozen {
    fn default() -> Frozen {
        Frozen {
            at: Duration::MAX,
            passes: 0,
        }
    }
}

impl Frozen {
    /// A pass of a timed loop ended at `now`: whether [`FROZEN_PASSES`] passes in a row have
    /// now found the clock standing there.
    #[inline]
    fn stands_at(&mut self, now: Duration) -> bool {
        if now == self.at {
            self.passes += 1;
            self.passes >= FROZEN_PASSES
        } else {
            *self = Frozen { at: now, passes: 0 };
            false
        }
    }
}

/// A message's size: `fixed` when the compiler knew it (not 0), else `size` evaluated.
#[inline(always)]
fn message_bytes(
    fixed: usize,
    size: &crate::expr::Compiled,
    frame: &[f64],
) -> Result<usize, WorkloadError> {
    if fixed > 0 {
        Ok(fixed)
    } else {
        message_size(value(size, frame))
    }
}

/// Write the header of a message from task `id` into `buf`: the sender and its next sequence
/// number on the channel, `seq`, which it advances.
#[inline(always)]
fn stamp(buf: &mut [u8], id: usize, seq: &mut u32) {
    buf[..4].copy_from_slice(&(id as u32).to_le_bytes());
    buf[4..8].copy_from_slice(&seq.to_le_bytes());
    *seq = seq.wrapping_add(1);
}

/// Check the header of a message task `id` received on element `ch` of channel `chan`: a
/// sender among the run's `tasks`, and the sequence number expected from it there
/// (`next_recv`, which it advances). The sender.
#[inline(always)]
fn check_stamp(
    buf: &[u8],
    id: usize,
    (chan, ch): (&CRef, usize),
    tasks: u32,
    next_recv: &mut SeqTable,
) -> Result<u32, WorkloadError> {
    let sender = u32::from_le_bytes(buf[..4].try_into().expect("4 bytes"));
    let seq = u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes"));
    if sender >= tasks {
        return Err(WorkloadError::Integrity(format!(
            "task {id} got a message on {}[{}] from task {sender}, which does not exist",
            chan.name,
            ch - chan.base
        )));
    }
    let expected = next_recv.slot(ch, sender as usize);
    if seq != *expected {
        return Err(WorkloadError::Integrity(format!(
            "task {id} expected message {} from task {sender} on {}[{}], got {seq}",
            *expected,
            chan.name,
            ch - chan.base
        )));
    }
    *expected = expected.wrapping_add(1);
    Ok(sender)
}

/// Record a task's metrics at its end: each periodic timer's deadlines met, late and missed
/// (its last activation closed now), its counts, and the messages it received.
fn record_at_end<C: Context>(
    ctx: &C,
    program: &Program,
    periods: &mut [PeriodState],
    counts: &[f64],
    received: u64,
) {
    let now = ctx.now();
    for (state, names) in periods.iter_mut().zip(&program.periods) {
        if state.current.is_none() {
            continue;
        }
        state.close(now);
        ctx.record(names.met, state.met as f64);
        ctx.record(names.late, state.late as f64);
        ctx.record(names.missed, state.missed as f64);
    }
    for (c, name) in counts.iter().zip(&program.counts) {
        if *c != 0.0 {
            ctx.record(name, *c);
        }
    }
    if received > 0 {
        ctx.record(RECEIVED, received as f64);
    }
}

/// The error of a timed loop (`begin`, its `LoopBegin`) of task `task` whose passes took no
/// time, [`FROZEN_PASSES`] in a row, the clock standing at `now`.
#[cold]
fn frozen_loop(program: &Program, task: TaskRef, now: Duration, begin: &Instr) -> WorkloadError {
    let length = match begin {
        Instr::LoopBegin { repeat, .. } => repeat
            .constant()
            .map(|s| {
                format!(
                    " of {}",
                    schedlab_workload::duration::format_duration(Duration::from_secs_f64(
                        s.max(0.0)
                    ))
                )
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    WorkloadError::Backend(format!(
        "{}#{}'s timed loop{length} made {FROZEN_PASSES} passes in a row without the clock moving from {}: its steps take no time (counts, timers, computes or touches of nothing), so the loop would never end on the simulator; give the loop a step that takes time (compute, sleep, ...) or a number of passes",
        program.groups[task.group].name,
        task.index,
        schedlab_workload::duration::format_duration(now)
    ))
}

/// An expression's value, with constants and slots read in place.
#[inline(always)]
fn value(c: &crate::expr::Compiled, frame: &[f64]) -> f64 {
    match c {
        crate::expr::Compiled::Const(v) => *v,
        crate::expr::Compiled::Slot(s) => frame[*s],
        c => c.eval(frame),
    }
}

#[inline]
fn message_size(v: f64) -> Result<usize, WorkloadError> {
    if crate::expr::whole(v).is_some_and(|w| (1..=crate::program::MAX_MESSAGE as i64).contains(&w))
    {
        Ok(v as usize)
    } else {
        Err(WorkloadError::Backend(format!(
            "a message size evaluated to {v} bytes; accepted: 1..{}",
            crate::program::MAX_MESSAGE
        )))
    }
}

fn byte_count(v: f64) -> Result<usize, WorkloadError> {
    if v.fract() == 0.0 && v >= 0.0 && v <= (1u64 << 40) as f64 {
        Ok(v as usize)
    } else {
        Err(WorkloadError::Backend(format!(
            "a size evaluated to {v} bytes; accepted: a whole number of bytes up to 1 TiB"
        )))
    }
}
