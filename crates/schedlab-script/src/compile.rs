//! Compile a workload file for one configuration (its parameters' values): resolve every name,
//! check every unit and count, lay out the plan's channels, locks and synchronisation objects,
//! flatten each body into instructions, and — when the file fixes its message counts — run it
//! dry to prove that every receive can be satisfied. Every fault is a [`Diagnostic`] at its
//! place in the file.

use crate::error::{did_you_mean, whole, Diagnostic};
use crate::expr::{compile as compile_expr, Binding, Compiled, Expr, Quantity, Unit};
use crate::intern::intern;
use crate::model::{Amount, ComputeAs, Computes, ObjectRef, ParamValue, ScriptDef, Step, StepKind};
use crate::program::{CAmount, CGroup, CRef, Instr, PeriodNames, Program, MAX_MESSAGE};
use crate::span::{Span, Spanned};
use schedlab_workload::duration::{DURATION_RANGE, MAX_DURATION};
use schedlab_workload::plan::{GroupPlan, LockKind};
use schedlab_workload::presets::MAX_TASKS;
use schedlab_workload::{Plan, SyncPlan, TaskMode, Transport};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

/// The most elements of one channel, lock, barrier, semaphore or condition array.
pub const MAX_OBJECTS: usize = 1 << 20;
/// Bytes of the header (sender, sequence number) a message of at least this size carries.
pub const HEADER: usize = 8;
/// The frame slot of `from`: the index, within its group, of the sender of the last message the
/// task received (for replies).
pub const FROM_SLOT: usize = 1;

/// The kinds of named objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Channel,
    Lock,
    Barrier,
    Semaphore,
    Cond,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Channel => "channel",
            Kind::Lock => "lock",
            Kind::Barrier => "barrier",
            Kind::Semaphore => "semaphore",
            Kind::Cond => "condition",
        }
    }
}

struct Object {
    kind: Kind,
    base: usize,
    len: usize,
    /// Whether it was declared with a count (an array, referred to as `name[i]`).
    array: bool,
    span: Span,
}

/// How a group's body uses the channels, barriers and spawns (for the structural checks).
#[derive(Default)]
struct Uses {
    sends: BTreeMap<String, Span>,
    recvs: BTreeMap<String, Span>,
    barriers: BTreeSet<String>,
}

/// Every group's compiled body, with what the checks after it need.
struct Bodies {
    groups: Vec<CGroup>,
    /// Per group, how its body uses the objects.
    uses: Vec<Uses>,
    /// Per group, where each instruction came from.
    spans: Vec<Vec<Span>>,
    /// How many tasks start the run (spawned ones come after).
    first: usize,
}

struct Compiler<'a> {
    def: &'a ScriptDef,
    params: Vec<(&'a str, Quantity)>,
    texts: Vec<(&'a str, &'a str)>,
    /// Objects by (kind, name): each kind has its own names, as rt-app's resources do (a
    /// TOML file's reader keeps one name space for all).
    objects: BTreeMap<(usize, String), Object>,
    timers: Vec<&'static str>,
    counts: Vec<&'static str>,
    periods: Vec<PeriodNames>,
    /// Index of each name in `timers`, `counts` and `periods`: a file of many tasks, each with
    /// its own timer, is compiled in linear time.
    timer_index: HashMap<&'static str, usize>,
    count_index: HashMap<&'static str, usize>,
    period_index: HashMap<&'static str, usize>,
    metric_kinds: BTreeMap<String, (&'static str, Span)>,
    /// Spawned groups: name → start semaphore.
    spawn_semaphores: BTreeMap<String, usize>,
    /// Spawnable groups (a `spawn` bound): name → group index.
    spawnable: BTreeMap<String, usize>,
    /// How deep in loops and timers the step being compiled is (0: the task's own steps).
    nesting: usize,
    /// Whether the group being compiled is spawnable (its tasks may be forked).
    forked: bool,
    /// Per instruction of the group being compiled, where it came from.
    spans: Vec<Span>,
    receives: bool,
    /// Whether an expression uses `from` (message counts then depend on who sent what).
    uses_from: std::cell::Cell<bool>,
    /// Where the first memory access of a shared buffer is, if any (its buffer lives in the
    /// schedlab process, so it needs tasks run as threads).
    shared_memory: Option<Span>,
}

/// The metric names a compiled file reports, with their kinds: for `check`'s plan and the
/// `primary`/`show` keys.
pub fn metric_names(program: &Program) -> Vec<String> {
    let mut out = vec!["time".to_string()];
    if program.receives {
        out.push("messages".into());
        out.push("msgs_per_s".into());
    }
    for t in &program.timers {
        out.push(t.to_string());
        out.push(format!("{t}.max"));
    }
    for c in &program.counts {
        out.push(c.to_string());
        out.push(format!("{c}_per_s"));
    }
    for p in &program.periods {
        for suffix in ["latency", "max_latency", "deadlines_met", "missed"] {
            out.push(format!("{}.{suffix}", p.name));
        }
    }
    out.extend(program.derived.iter().map(|d| d.name.clone()));
    out
}

/// Compile the file's derived metrics against the metrics `program` reports.
fn derived(
    def: &ScriptDef,
    program: &Program,
) -> Result<Vec<crate::program::CDerived>, Diagnostic> {
    let mut inputs: Vec<String> = vec!["cpu".to_string()];
    inputs.extend(metric_names(program));
    let mut out: Vec<crate::program::CDerived> = Vec::new();
    for d in &def.metrics.derived {
        let n = &d.name.value;
        if inputs.iter().any(|i| i == n) || out.iter().any(|o| &o.name == n) {
            return Err(Diagnostic::new(
                d.name.span,
                format!("derived metric '{n}' is named like a metric the file already has; choose another name"),
            ));
        }
        let lookup = |name: &str| {
            inputs
                .iter()
                .position(|i| i == name)
                .map(|slot| (Binding::Slot(slot), Unit::None))
        };
        let accepted = || inputs.clone();
        let (value, _) = compile_expr(&d.value, &lookup, &accepted).map_err(|mut e| {
            e.message = format!(
                "derived metric '{n}': {} (metrics with a dot in their name cannot be used here)",
                e.message
            );
            e
        })?;
        out.push(crate::program::CDerived {
            name: n.clone(),
            value,
            inputs: inputs.clone(),
            unit: d.unit.clone(),
            higher_is_better: d.higher_is_better,
            help: if d.help.is_empty() {
                format!("computed from the other metrics: {}", d.value)
            } else {
                d.help.clone()
            },
        });
    }
    Ok(out)
}

/// Compile `def` with parameter values `values` (one per `def.params`, in order), group sizes
/// `counts` (one per group; `None`: the file's `count`) and distribution seed `seed`.
pub fn compile(
    def: &ScriptDef,
    values: &[ParamValue],
    counts: &[Option<u64>],
    seed: u64,
) -> Result<Program, Diagnostic> {
    let mut params = Vec::new();
    let mut texts = Vec::new();
    for (p, v) in def.params.iter().zip(values) {
        match v {
            ParamValue::Number(q) => params.push((p.name.value.as_str(), *q)),
            ParamValue::Text(t) => texts.push((p.name.value.as_str(), t.as_str())),
        }
    }
    let mut c = Compiler {
        def,
        params,
        texts,
        objects: BTreeMap::new(),
        timers: Vec::new(),
        counts: Vec::new(),
        periods: Vec::new(),
        timer_index: HashMap::new(),
        count_index: HashMap::new(),
        period_index: HashMap::new(),
        metric_kinds: BTreeMap::new(),
        spawn_semaphores: BTreeMap::new(),
        spawnable: BTreeMap::new(),
        nesting: 0,
        forked: false,
        spans: Vec::new(),
        receives: false,
        uses_from: std::cell::Cell::new(false),
        shared_memory: None,
    };
    c.run(counts, seed)
}

impl<'a> Compiler<'a> {
    /// Names an expression of the parameters alone may use.
    fn param_names(&self) -> Vec<String> {
        self.params.iter().map(|(n, _)| n.to_string()).collect()
    }

    fn lookup_param(&self, name: &str) -> Option<(Binding, Unit)> {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, q)| (Binding::Const(*q), q.unit))
    }

    fn text_param_error(&self, expr: &Expr) -> Option<Diagnostic> {
        expr.names().into_iter().find_map(|(n, span)| {
            self.texts.iter().find(|(t, _)| *t == n).map(|(_, v)| {
                Diagnostic::new(
                    span,
                    format!("parameter '{n}' is a word ('{v}'), not a number; an expression takes numbers, durations and sizes"),
                )
            })
        })
    }

    /// A constant of the parameters alone.
    fn constant(&self, expr: &Expr, what: &str, unit: Unit) -> Result<f64, Diagnostic> {
        if let Some(d) = self.text_param_error(expr) {
            return Err(d);
        }
        let (c, u) = compile_expr(expr, &|n| self.lookup_param(n), &|| self.param_names())?;
        let value = c.constant().expect("parameters are constants");
        check_unit(expr, what, u, &[unit])?;
        Ok(value)
    }

    /// A whole number of the parameters alone, in `lo..=hi`.
    fn count(&self, expr: &Expr, what: &str, lo: u64, hi: u64) -> Result<u64, Diagnostic> {
        let v = self.constant(expr, what, Unit::None)?;
        whole(expr.span, &format!("{what} '{expr}'"), v, lo, hi)
    }

    /// Compile the whole file, `counts` overriding group sizes: its objects, groups and bodies,
    /// the checks across groups, the plan, and the dry run over the program.
    fn run(&mut self, counts: &[Option<u64>], seed: u64) -> Result<Program, Diagnostic> {
        let def = self.def;
        let [channels, locks, barriers_n, user_semaphores, conds] = self.declare_objects()?;
        let (lock_kinds, lock_names) = self.lock_names(locks);
        let (sizes, bounds) = self.group_sizes(counts)?;
        let semaphores = self.spawn_semaphores(user_semaphores);
        let Bodies {
            groups,
            uses,
            spans,
            first,
        } = self.bodies(&sizes, &bounds)?;
        self.check_channels(&groups, &uses)?;
        let barrier_parties = self.barrier_parties(barriers_n, &groups, &uses)?;
        let initial = self.semaphore_initial(semaphores)?;

        let transport = self.word(&def.transport, "transport", Transport::Socketpair)?;
        let mode = self.word(&def.tasks, "tasks", TaskMode::Threads)?;
        let loops = (self.word(&def.compute_as, "run-as", ComputeAs::CpuTime)? == ComputeAs::Loops)
            .then_some(def.loop_calibration);
        let cumulative =
            self.word(&def.computes, "computes", Computes::Each)? == Computes::Cumulative;
        if let Some(span) = self.shared_memory.filter(|_| mode == TaskMode::Processes) {
            return Err(Diagnostic::new(span, "a memory access of a shared buffer needs tasks 'threads' (the buffer lives in the schedlab process); with tasks 'processes' give each task its own buffer"));
        }
        if mode == TaskMode::GroupProcesses {
            let span = def.tasks.as_ref().map_or(Span::default(), |t| t.span);
            return Err(Diagnostic::new(span, "tasks 'group-processes' is not accepted in a workload file; use threads or processes"));
        }
        let start_order = self.start_order(&groups, first)?;

        let plan = Plan {
            groups: groups
                .iter()
                .map(|g| GroupPlan {
                    name: g.name,
                    tasks: g.tasks,
                    spawn: g.spawn,
                })
                .collect(),
            channels,
            duplex: false,
            locks,
            sync: SyncPlan {
                barriers: barrier_parties,
                semaphores: initial,
                conds,
                queues: 0,
                words: 0,
                lock_kinds,
                lock_names,
                wait_end: self.def.ends_at,
            },
            mode,
            transport,
        };
        let mut program = Program {
            plan,
            groups,
            start_order,
            timers: std::mem::take(&mut self.timers),
            counts: std::mem::take(&mut self.counts),
            periods: std::mem::take(&mut self.periods),
            derived: Vec::new(),
            receives: self.receives,
            uses_from: self.uses_from.get(),
            expected_messages: None,
            seed,
            expected_time: Duration::ZERO,
            memory: 0,
            memory_steps: Vec::new(),
            files: 0,
            rtapp_log: self.def.rtapp_log.clone(),
            ends_at: self.def.ends_at,
            loops,
            cumulative,
        };
        crate::dry::run(&mut program, &spans, self.def, !self.uses_from.get())?;
        program.derived = derived(self.def, &program)?;
        self.check_metrics(&program)?;
        Ok(program)
    }

    /// Declare the file's channels, locks, barriers, semaphores and conditions: one id space
    /// per kind, arrays laid out in declaration order. How many ids each kind has, in
    /// [`Kind`] order.
    fn declare_objects(&mut self) -> Result<[usize; 5], Diagnostic> {
        let def = self.def;
        let mut next = [0usize; 5];
        let mut declare = |c: &mut Compiler,
                           kind: Kind,
                           name: &crate::span::Spanned<String>,
                           count: &Option<Expr>|
         -> Result<(), Diagnostic> {
            let len = match count {
                Some(e) => c.count(
                    e,
                    &format!("{} {} count", kind.word(), name.value),
                    1,
                    MAX_OBJECTS as u64,
                )? as usize,
                None => 1,
            };
            let k = kind as usize;
            if c.objects.contains_key(&(k, name.value.clone())) {
                return Err(Diagnostic::new(
                    name.span,
                    format!(
                        "'{}' is already a {} name; give each {} its own",
                        name.value,
                        kind.word(),
                        kind.word()
                    ),
                ));
            }
            c.objects.insert(
                (k, name.value.clone()),
                Object {
                    kind,
                    base: next[k],
                    len,
                    array: count.is_some(),
                    span: name.span,
                },
            );
            next[k] += len;
            Ok(())
        };
        for ch in &def.channels {
            declare(self, Kind::Channel, &ch.object.name, &ch.object.count)?;
        }
        for l in &def.locks {
            declare(self, Kind::Lock, &l.object.name, &l.object.count)?;
        }
        for b in &def.barriers {
            declare(self, Kind::Barrier, &b.object.name, &b.object.count)?;
        }
        for s in &def.semaphores {
            declare(self, Kind::Semaphore, &s.object.name, &s.object.count)?;
        }
        for cv in &def.conds {
            declare(self, Kind::Cond, &cv.name, &cv.count)?;
        }
        Ok(next)
    }

    /// Each of the `locks` lock ids' kind and name (`name`, or `name[i]` in an array), in id
    /// order.
    fn lock_names(&self, locks: usize) -> (Vec<LockKind>, Vec<String>) {
        let mut lock_kinds = Vec::with_capacity(locks);
        let mut lock_names = Vec::with_capacity(locks);
        for l in &self.def.locks {
            let name = &l.object.name.value;
            let o = &self.objects[&(Kind::Lock as usize, name.clone())];
            for i in 0..o.len {
                lock_kinds.push(l.kind);
                lock_names.push(if o.array {
                    format!("{name}[{i}]")
                } else {
                    name.clone()
                });
            }
        }
        (lock_kinds, lock_names)
    }

    /// Each group's starting tasks (`counts`, else the file's count) and spawn bound, within
    /// [`MAX_TASKS`] in all; notes the spawnable groups.
    fn group_sizes(
        &mut self,
        counts: &[Option<u64>],
    ) -> Result<(Vec<usize>, Vec<usize>), Diagnostic> {
        let def = self.def;
        let mut sizes = Vec::new();
        let mut bounds = Vec::new();
        let mut total: u64 = 0;
        for (i, g) in def.groups.iter().enumerate() {
            // A spawnable group may start empty: its spawn steps fork its tasks.
            let least = if g.spawn.is_some() { 0 } else { 1 };
            let n = match counts.get(i).copied().flatten() {
                Some(n) => n,
                None => self.count(
                    &g.count,
                    &format!("group {} count", g.name.value),
                    least,
                    MAX_TASKS as u64,
                )?,
            };
            let bound = match &g.spawn {
                Some(e) => {
                    self.spawnable.insert(g.name.value.clone(), i);
                    self.count(
                        e,
                        &format!("group {} spawn", g.name.value),
                        1,
                        MAX_TASKS as u64,
                    )?
                }
                None => 0,
            };
            bounds.push(bound as usize);
            total += n + bound;
            if total > MAX_TASKS as u64 {
                return Err(Diagnostic::new(
                    g.count.span,
                    format!(
                        "the groups ask for {total} tasks so far, counting those spawn steps may fork (group {} has {n}{}); accepted: at most {MAX_TASKS} per repetition",
                        g.name.value,
                        if bound > 0 { format!(" and may spawn {bound}") } else { String::new() }
                    ),
                ));
            }
            sizes.push(n as usize);
        }
        if def.groups.is_empty() {
            return Err(Diagnostic::new(
                Span::default(),
                "the file has no groups; add at least one [groups.NAME] with steps",
            ));
        }
        Ok((sizes, bounds))
    }

    /// Give each spawned group its start semaphore, after the file's own `user` semaphores;
    /// how many semaphores there are then.
    fn spawn_semaphores(&mut self, user: usize) -> usize {
        let mut semaphores = user;
        for g in &self.def.groups {
            if g.spawned {
                self.spawn_semaphores
                    .insert(g.name.value.clone(), semaphores);
                semaphores += 1;
            }
        }
        semaphores
    }

    /// Compile every group's body, for its `sizes` starting tasks and `bounds` spawn places.
    fn bodies(&mut self, sizes: &[usize], bounds: &[usize]) -> Result<Bodies, Diagnostic> {
        let def = self.def;
        let mut groups = Vec::new();
        let mut uses = Vec::new();
        let mut spans = Vec::new();
        let mut first = 0;
        for ((g, &n), &bound) in def.groups.iter().zip(sizes).zip(bounds) {
            let mut u = Uses::default();
            let mut body = Vec::new();
            let mut slots = FROM_SLOT + 1; // slot 0: index; 1: from
            self.spans.clear();
            let mut scope: Vec<(String, usize)> = Vec::new();
            self.forked = bound > 0;
            // `count` in a spawnable group's expressions is every place it has.
            self.body(
                &g.body,
                n + bound,
                &mut scope,
                &mut slots,
                &mut body,
                &mut u,
            )?;
            // rt-app's `instance` of a task that forks also start: those start with the run.
            let with_run = match (&g.with_run, g.spawned) {
                (Some(e), true) => {
                    self.count(e, &format!("group {} with_run", g.name.value), 0, n as u64)?
                        as usize
                }
                _ => 0,
            };
            groups.push(CGroup {
                name: intern(&g.name.value),
                tasks: n,
                spawn: bound,
                first,
                body,
                slots,
                start_semaphore: self.spawn_semaphores.get(&g.name.value).copied(),
                with_run,
            });
            spans.push(std::mem::take(&mut self.spans));
            uses.push(u);
            first += n;
        }
        Ok(Bodies {
            groups,
            uses,
            spans,
            first,
        })
    }

    /// Channels: someone sends where someone receives, and only the groups a channel declares
    /// as its writers and readers, which must be groups.
    fn check_channels(&self, groups: &[CGroup], uses: &[Uses]) -> Result<(), Diagnostic> {
        let def = self.def;
        for ch in &def.channels {
            let name = &ch.object.name.value;
            let senders: Vec<usize> = (0..groups.len())
                .filter(|&i| uses[i].sends.contains_key(name))
                .collect();
            let readers: Vec<usize> = (0..groups.len())
                .filter(|&i| uses[i].recvs.contains_key(name))
                .collect();
            if let (true, Some(&r)) = (senders.is_empty(), readers.first()) {
                return Err(Diagnostic::new(
                    uses[r].recvs[name],
                    format!("group {} receives from channel '{name}' but no group sends on it: a receive nobody can satisfy", groups[r].name),
                ));
            }
            if let (true, Some(&s)) = (readers.is_empty(), senders.first()) {
                return Err(Diagnostic::new(
                    uses[s].sends[name],
                    format!("group {} sends on channel '{name}' but no group receives from it; its messages would never be read", groups[s].name),
                ));
            }
            for (list, who, verb) in [
                (&ch.writers, &senders, "sends on"),
                (&ch.readers, &readers, "receives from"),
            ] {
                if list.is_empty() {
                    continue;
                }
                for &i in who.iter() {
                    if !list.iter().any(|w| w.value == groups[i].name) {
                        let at = if verb == "sends on" {
                            uses[i].sends[name]
                        } else {
                            uses[i].recvs[name]
                        };
                        let allowed: Vec<&str> = list.iter().map(|w| w.value.as_str()).collect();
                        return Err(Diagnostic::new(
                            at,
                            format!(
                                "group {} {verb} channel '{name}', which declares only {} as {}",
                                groups[i].name,
                                allowed.join(", "),
                                if verb == "sends on" {
                                    "writers"
                                } else {
                                    "readers"
                                }
                            ),
                        ));
                    }
                }
            }
            for w in ch.writers.iter().chain(&ch.readers) {
                if !def.groups.iter().any(|g| g.name.value == w.value) {
                    let names: Vec<&str> =
                        def.groups.iter().map(|g| g.name.value.as_str()).collect();
                    return Err(Diagnostic::new(
                        w.span,
                        format!(
                            "'{}' is not a group; the groups are {}{}",
                            w.value,
                            names.join(", "),
                            did_you_mean(&w.value, names.iter().copied())
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The parties of each of the `n` barrier ids: the file's `parties`, else every task of
    /// the groups that wait at it.
    fn barrier_parties(
        &self,
        n: usize,
        groups: &[CGroup],
        uses: &[Uses],
    ) -> Result<Vec<usize>, Diagnostic> {
        let mut barrier_parties = vec![0usize; n];
        for b in &self.def.barriers {
            let o = &self.objects[&(Kind::Barrier as usize, b.object.name.value.clone())];
            let users: usize = (0..groups.len())
                .filter(|&i| uses[i].barriers.contains(&b.object.name.value))
                .map(|i| groups[i].tasks)
                .sum();
            let parties = match &b.parties {
                Some(e) => self.count(
                    e,
                    &format!("barrier {} parties", b.object.name.value),
                    1,
                    MAX_TASKS as u64,
                )? as usize,
                None if users == 0 => {
                    return Err(Diagnostic::new(
                        b.object.name.span,
                        format!(
                            "no group waits at barrier '{}'; remove it or add a barrier step",
                            b.object.name.value
                        ),
                    ))
                }
                None => users,
            };
            for p in &mut barrier_parties[o.base..o.base + o.len] {
                *p = parties;
            }
        }
        Ok(barrier_parties)
    }

    /// The initial value of each of the `semaphores` ids (a spawned group's start semaphore
    /// starts at 0).
    fn semaphore_initial(&self, semaphores: usize) -> Result<Vec<u32>, Diagnostic> {
        let mut initial = vec![0u32; semaphores];
        for s in &self.def.semaphores {
            let o = &self.objects[&(Kind::Semaphore as usize, s.object.name.value.clone())];
            let v = match &s.initial {
                Some(e) => self.count(
                    e,
                    &format!("semaphore {} initial", s.object.name.value),
                    0,
                    u32::MAX as u64 / 2,
                )? as u32,
                None => 0,
            };
            for i in &mut initial[o.base..o.base + o.len] {
                *i = v;
            }
        }
        Ok(initial)
    }

    /// The order the `first` starting tasks start in: by id, or `start.order`'s groups taking
    /// turns, `start.chunk` tasks at a time.
    fn start_order(&self, groups: &[CGroup], first: usize) -> Result<Vec<usize>, Diagnostic> {
        let order = match &self.def.start {
            None => (0..first).collect(),
            Some(s) => {
                let chunk = self.count(&s.chunk, "start chunk", 1, MAX_TASKS as u64)? as usize;
                let mut order_groups = Vec::new();
                for name in &s.groups {
                    let Some(i) = groups.iter().position(|g| g.name == name.value) else {
                        let names: Vec<&str> = groups.iter().map(|g| g.name).collect();
                        return Err(Diagnostic::new(
                            name.span,
                            format!(
                                "'{}' is not a group; the groups are {}{}",
                                name.value,
                                names.join(", "),
                                did_you_mean(&name.value, names.iter().copied())
                            ),
                        ));
                    };
                    if order_groups.contains(&i) {
                        return Err(Diagnostic::new(
                            name.span,
                            format!("group '{}' is listed twice in start.order", name.value),
                        ));
                    }
                    order_groups.push(i);
                }
                if order_groups.len() != groups.len() {
                    let missing: Vec<&str> = (0..groups.len())
                        .filter(|i| !order_groups.contains(i))
                        .map(|i| groups[i].name)
                        .collect();
                    return Err(Diagnostic::new(
                        s.span,
                        format!(
                            "start.order must list every group once; it leaves out {}",
                            missing.join(", ")
                        ),
                    ));
                }
                let mut taken = vec![0usize; groups.len()];
                let mut out = Vec::with_capacity(first);
                while out.len() < first {
                    for &g in &order_groups {
                        let k = chunk.min(groups[g].tasks - taken[g]);
                        out.extend((taken[g]..taken[g] + k).map(|i| groups[g].first + i));
                        taken[g] += k;
                    }
                }
                out
            }
        };
        Ok(order)
    }

    fn check_metrics(&self, program: &Program) -> Result<(), Diagnostic> {
        let names = metric_names(program);
        let spec = &self.def.metrics;
        for m in spec.primary.iter().chain(&spec.show) {
            if !names.contains(&m.value) {
                return Err(Diagnostic::new(
                    m.span,
                    format!(
                        "'{}' is not a metric of this file; its metrics are {}{}",
                        m.value,
                        names.join(", "),
                        did_you_mean(&m.value, names.iter().map(String::as_str))
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A word setting (`transport`, `tasks`): literal, or `$param`.
    fn word<T: std::str::FromStr<Err = schedlab_workload::ValueError>>(
        &self,
        setting: &Option<crate::span::Spanned<String>>,
        what: &str,
        default: T,
    ) -> Result<T, Diagnostic> {
        let Some(s) = setting else { return Ok(default) };
        let text = match s.value.strip_prefix('$') {
            Some(p) => match self.texts.iter().find(|(n, _)| *n == p) {
                Some((_, v)) => *v,
                None => {
                    let names: Vec<&str> = self.texts.iter().map(|(n, _)| *n).collect();
                    return Err(Diagnostic::new(
                        s.span,
                        format!(
                            "{what} '{}' names no word parameter; {}{}",
                            s.value,
                            if names.is_empty() {
                                "the file has none".to_string()
                            } else {
                                format!("its word parameters are {}", names.join(", "))
                            },
                            did_you_mean(p, names.iter().copied())
                        ),
                    ));
                }
            },
            None => s.value.as_str(),
        };
        text.parse()
            .map_err(|e: schedlab_workload::ValueError| Diagnostic::new(s.span, e.0))
    }

    fn record_metric(
        &mut self,
        name: &crate::span::Spanned<String>,
        kind: &'static str,
    ) -> Result<(), Diagnostic> {
        let n = &name.value;
        if ["time", "messages", "msgs_per_s"].contains(&n.as_str()) {
            return Err(Diagnostic::new(
                name.span,
                format!("'{n}' is a metric every file has; name the {kind} otherwise"),
            ));
        }
        if !n
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
            || n.is_empty()
        {
            return Err(Diagnostic::new(
                name.span,
                format!("{kind} name '{n}' is not accepted; use letters, digits, '_', '-' and '.'"),
            ));
        }
        match self.metric_kinds.get(n) {
            Some((k, _)) if *k != kind => Err(Diagnostic::new(
                name.span,
                format!("'{n}' is already a {k}; a {kind} needs another name"),
            )),
            Some(_) => Ok(()),
            None => {
                self.metric_kinds.insert(n.clone(), (kind, name.span));
                Ok(())
            }
        }
    }

    fn push(&mut self, out: &mut Vec<Instr>, i: Instr, span: Span) {
        out.push(i);
        self.spans.push(span);
    }

    /// Compile an expression that may use the task's index, the group's count and loop
    /// variables.
    fn dynamic(
        &self,
        expr: &Expr,
        count: usize,
        scope: &[(String, usize)],
        what: &str,
        units: &[Unit],
    ) -> Result<(Compiled, Unit), Diagnostic> {
        if let Some(d) = self.text_param_error(expr) {
            return Err(d);
        }
        let lookup = |n: &str| -> Option<(Binding, Unit)> {
            if let Some((_, slot)) = scope.iter().rev().find(|(v, _)| v == n) {
                return Some((Binding::Slot(*slot), Unit::None));
            }
            match n {
                "index" => Some((Binding::Slot(0), Unit::None)),
                "from" => Some((Binding::Slot(FROM_SLOT), Unit::None)),
                "count" => Some((Binding::Const(Quantity::plain(count as f64)), Unit::None)),
                _ => self.lookup_param(n),
            }
        };
        let accepted = || {
            let mut names = vec!["index".to_string(), "count".to_string(), "from".to_string()];
            names.extend(scope.iter().map(|(v, _)| v.clone()));
            names.extend(self.param_names());
            names
        };
        let (c, u) = compile_expr(expr, &lookup, &accepted)?;
        check_unit(expr, what, u, units)?;
        if expr.names().iter().any(|(n, _)| *n == "from") && !scope.iter().any(|(v, _)| v == "from")
        {
            self.uses_from.set(true);
        }
        if let Some(v) = c.constant() {
            if v < 0.0 || !v.is_finite() {
                return Err(Diagnostic::new(
                    expr.span,
                    format!(
                        "{what} '{expr}' is {}; accepted: zero or more",
                        Quantity { value: v, unit: u }
                    ),
                ));
            }
            // Bounded here, when the file is read, as `--duration` is: not once it runs.
            if u == Unit::Seconds && v > MAX_DURATION.as_secs_f64() {
                return Err(Diagnostic::new(
                    expr.span,
                    format!(
                        "{what} '{expr}' is {}; accepted: {DURATION_RANGE}",
                        Quantity { value: v, unit: u }
                    ),
                ));
            }
        }
        Ok((c, u))
    }

    fn amount(
        &self,
        a: &Amount,
        count: usize,
        scope: &[(String, usize)],
        what: &str,
    ) -> Result<CAmount, Diagnostic> {
        let d = |s: &Self, e: &Expr, w: &str| {
            s.dynamic(e, count, scope, w, &[Unit::Seconds])
                .map(|(c, _)| c)
        };
        Ok(match a {
            Amount::Fixed(e) => CAmount::Fixed(d(self, e, what)?),
            Amount::Uniform { low, high } => {
                CAmount::Uniform(d(self, low, what)?, d(self, high, what)?)
            }
            Amount::Exponential { mean } => CAmount::Exponential(d(self, mean, what)?),
            Amount::Normal { mean, sd } => {
                CAmount::Normal(d(self, mean, what)?, d(self, sd, "sd")?)
            }
            Amount::LogNormal { mean, sd } => {
                CAmount::LogNormal(d(self, mean, what)?, d(self, sd, "sd")?)
            }
        })
    }

    fn object(
        &self,
        r: &ObjectRef,
        kind: Kind,
        count: usize,
        scope: &[(String, usize)],
    ) -> Result<CRef, Diagnostic> {
        let name = &r.name.value;
        let Some(o) = self.objects.get(&(kind as usize, name.clone())) else {
            if let Some(((_, _), other)) = self.objects.iter().find(|((_, n), _)| n == name) {
                return Err(Diagnostic::new(
                    r.name.span,
                    format!("'{name}' is a {}, not a {}", other.kind.word(), kind.word()),
                ));
            }
            let same: Vec<&str> = self
                .objects
                .iter()
                .filter(|(_, o)| o.kind == kind)
                .map(|((_, n), _)| n.as_str())
                .collect();
            return Err(Diagnostic::new(
                r.name.span,
                format!(
                    "'{name}' is not a {} of this file; {}{}",
                    kind.word(),
                    if same.is_empty() {
                        format!("it declares none (add [{}s.{name}])", table(kind))
                    } else {
                        format!("its {}s are {}", kind.word(), same.join(", "))
                    },
                    did_you_mean(name, same.iter().copied())
                ),
            ));
        };
        let index = match (&r.index, o.array) {
            (Some(e), true) => {
                let (c, _) = self.dynamic(e, count, scope, &format!("{name}[...]"), &[Unit::None])?;
                if let Some(v) = c.constant() {
                    whole(e.span, &format!("{name}[...] '{e}'"), v, 0, o.len as u64 - 1)?;
                }
                Some(c)
            }
            (None, false) => None,
            (Some(e), false) => {
                return Err(Diagnostic::new(e.span, format!("'{name}' is a single {} (declared without count); refer to it as '{name}'", kind.word())))
            }
            (None, true) => {
                return Err(Diagnostic::new(r.name.span, format!("'{name}' is an array of {} {}s (declared at {}..); refer to one as '{name}[INDEX]'", o.len, kind.word(), o.span.start)))
            }
        };
        Ok(CRef {
            base: o.base,
            len: o.len,
            affine: index.as_ref().and_then(crate::program::affine),
            index,
            name: intern(name),
        })
    }

    /// Compile `steps` into `out`: a group of `count` places (its tasks and spawn places),
    /// the loop variables in `scope`, frame slots allocated from `slots`, and what the steps
    /// use noted in `uses`.
    fn body(
        &mut self,
        steps: &[Step],
        count: usize,
        scope: &mut Vec<(String, usize)>,
        slots: &mut usize,
        out: &mut Vec<Instr>,
        uses: &mut Uses,
    ) -> Result<(), Diagnostic> {
        for step in steps {
            let span = step.span;
            let dynamic = |s: &Self, e: &Expr, what: &str, units: &[Unit]| {
                s.dynamic(e, count, scope, what, units)
            };
            self.refuse_metric_when_forked(step)?;
            match &step.kind {
                StepKind::Compute(a) => {
                    let a = self.amount(a, count, scope, "compute")?;
                    self.push(out, Instr::Compute(a), span);
                }
                StepKind::Sleep(a) => {
                    let a = self.amount(a, count, scope, "sleep")?;
                    self.push(out, Instr::Sleep(a), span);
                }
                StepKind::Busy(e) => {
                    let (c, _) = dynamic(self, e, "busy", &[Unit::Seconds])?;
                    self.push(out, Instr::Busy(c), span);
                }
                StepKind::Period {
                    timer,
                    every,
                    deadline,
                } => {
                    let i = self.period(timer, every, deadline.as_ref(), count, scope)?;
                    self.push(out, i, span);
                }
                StepKind::Send { channel, size } => {
                    let i = self.message(true, channel, size, count, scope)?;
                    uses.sends.entry(channel.name.value.clone()).or_insert(span);
                    self.push(out, i, span);
                }
                StepKind::Recv { channel, size } => {
                    let i = self.message(false, channel, size, count, scope)?;
                    self.receives = true;
                    uses.recvs.entry(channel.name.value.clone()).or_insert(span);
                    self.push(out, i, span);
                }
                StepKind::Lock(_)
                | StepKind::Unlock(_)
                | StepKind::Barrier(_)
                | StepKind::SemPost(_)
                | StepKind::SemWait(_)
                | StepKind::CondWait { .. }
                | StepKind::CondSignal(_)
                | StepKind::CondBroadcast(_) => {
                    if let StepKind::Barrier(r) = &step.kind {
                        uses.barriers.insert(r.name.value.clone());
                    }
                    let i = self.sync_step(&step.kind, count, scope)?;
                    self.push(out, i, span);
                }
                StepKind::Yield => self.push(out, Instr::Yield, span),
                StepKind::Set(knobs) => {
                    let change = attr_change(knobs)?;
                    self.push(out, Instr::Set(Box::new(change)), span);
                }
                StepKind::Io { kind, bytes } => {
                    let (c, _) = dynamic(self, bytes, "bytes", &[Unit::Bytes, Unit::None])?;
                    self.push(
                        out,
                        Instr::Io {
                            kind: *kind,
                            bytes: c,
                        },
                        span,
                    );
                }
                StepKind::Touch(bytes) => {
                    let (c, _) = dynamic(self, bytes, "touch", &[Unit::Bytes, Unit::None])?;
                    self.push(out, Instr::Touch(c), span);
                }
                StepKind::MemAccess(a) => {
                    a.check()
                        .map_err(|m| Diagnostic::new(span, format!("memory access: {m}")))?;
                    if a.shared.is_some() {
                        self.shared_memory.get_or_insert(span);
                    }
                    self.push(out, Instr::MemAccess(Box::new(a.clone())), span);
                }
                StepKind::Spawn(group) => {
                    let i = self.spawn(group)?;
                    self.push(out, i, span);
                }
                StepKind::WaitChild => self.push(out, Instr::WaitChild, span),
                StepKind::Exit => {
                    self.check_exit_is_last(step, steps)?;
                    self.push(out, Instr::Exit, span);
                }
                StepKind::Loop { repeat, var, body } => {
                    let (c, timed) = self.loop_repeat(repeat, count, scope)?;
                    let counter = *slots;
                    *slots += 1;
                    let var_slot = self.loop_var(var.as_ref(), scope, slots)?;
                    let begin = out.len();
                    self.push(
                        out,
                        Instr::LoopBegin {
                            repeat: c,
                            timed,
                            counter,
                            var: var_slot,
                            end: 0,
                        },
                        span,
                    );
                    self.nesting += 1;
                    self.body(body, count, scope, slots, out, uses)?;
                    self.nesting -= 1;
                    if var_slot.is_some() {
                        scope.pop();
                    }
                    let end = out.len();
                    self.push(
                        out,
                        Instr::LoopEnd {
                            begin,
                            counter,
                            var: var_slot,
                            timed,
                        },
                        span,
                    );
                    if let Instr::LoopBegin { end: e, .. } = &mut out[begin] {
                        *e = end;
                    }
                }
                StepKind::Timed { name, body } => {
                    self.record_metric(name, "timer")?;
                    let timer = self.timer_id(&name.value);
                    let slot = *slots;
                    *slots += 1;
                    self.push(out, Instr::TimedBegin { slot }, span);
                    self.nesting += 1;
                    self.body(body, count, scope, slots, out, uses)?;
                    self.nesting -= 1;
                    self.push(out, Instr::TimedEnd { timer, slot }, span);
                }
                StepKind::Count { name, by } => {
                    let i = self.count_step(name, by, count, scope)?;
                    self.push(out, i, span);
                }
            }
        }
        Ok(())
    }

    /// Refuse, in a spawnable group, a step that records a metric.
    fn refuse_metric_when_forked(&self, step: &Step) -> Result<(), Diagnostic> {
        if !self.forked {
            return Ok(());
        }
        let verb = match &step.kind {
            StepKind::Recv { .. } => "recv",
            StepKind::Count { .. } => "count",
            StepKind::Timed { .. } => "timer",
            StepKind::Period { .. } => "period",
            _ => return Ok(()),
        };
        // The real backend does not carry a forked process's samples back to the run, so a
        // metric recorded there would be counted on the simulator only.
        Err(Diagnostic::new(
            step.span,
            format!("a `{verb}` step records a metric, and the tasks of a spawnable group (`spawn = N`) report none on the real kernel (a forked process's samples stay in it); record it in the task that spawns and waits, e.g. a count after each \"wait\""),
        ))
    }

    /// A `period` step: its timer's id (declared at its first use), its period (not zero) and
    /// its deadline (the period when not given).
    fn period(
        &mut self,
        timer: &crate::span::Spanned<String>,
        every: &Expr,
        deadline: Option<&Expr>,
        count: usize,
        scope: &[(String, usize)],
    ) -> Result<Instr, Diagnostic> {
        self.record_metric(timer, "periodic timer")?;
        let (every_c, _) = self.dynamic(every, count, scope, "every", &[Unit::Seconds])?;
        if every_c.constant() == Some(0.0) {
            return Err(Diagnostic::new(
                every.span,
                format!("every '{every}' is zero; a period must be longer than 0"),
            ));
        }
        let deadline = match deadline {
            Some(d) => {
                self.dynamic(d, count, scope, "deadline", &[Unit::Seconds])?
                    .0
            }
            None => every_c.clone(),
        };
        let t = match self.period_index.get(timer.value.as_str()) {
            Some(&t) => t,
            None => {
                let n = &timer.value;
                let name = intern(n);
                self.periods.push(PeriodNames {
                    name,
                    latency: intern(&format!("{n}.latency")),
                    met: intern(&format!("{n}.met")),
                    late: intern(&format!("{n}.late")),
                    missed: intern(&format!("{n}.missed")),
                });
                self.period_index.insert(name, self.periods.len() - 1);
                self.periods.len() - 1
            }
        };
        Ok(Instr::Period {
            timer: t,
            every: every_c,
            deadline,
        })
    }

    /// A `send` (`send`) or `recv` step on `channel`, of `size` bytes (a constant size within
    /// 1..[`MAX_MESSAGE`]).
    fn message(
        &self,
        send: bool,
        channel: &ObjectRef,
        size: &Expr,
        count: usize,
        scope: &[(String, usize)],
    ) -> Result<Instr, Diagnostic> {
        let chan = self.object(channel, Kind::Channel, count, scope)?;
        let (size_c, _) = self.dynamic(size, count, scope, "size", &[Unit::Bytes, Unit::None])?;
        if let Some(v) = size_c.constant() {
            whole(size.span, &format!("size '{size}'"), v, 1, MAX_MESSAGE)?;
        }
        let bytes = crate::program::fixed_bytes(&size_c);
        Ok(if send {
            Instr::Send {
                chan,
                size: size_c,
                bytes,
            }
        } else {
            Instr::Recv {
                chan,
                size: size_c,
                bytes,
            }
        })
    }

    /// A step on a lock, barrier, semaphore or condition variable.
    fn sync_step(
        &self,
        kind: &StepKind,
        count: usize,
        scope: &[(String, usize)],
    ) -> Result<Instr, Diagnostic> {
        let object = |r: &ObjectRef, k: Kind| self.object(r, k, count, scope);
        Ok(match kind {
            StepKind::Lock(r) => Instr::Lock(object(r, Kind::Lock)?),
            StepKind::Unlock(r) => Instr::Unlock(object(r, Kind::Lock)?),
            StepKind::Barrier(r) => Instr::Barrier(object(r, Kind::Barrier)?),
            StepKind::SemPost(r) => Instr::SemPost(object(r, Kind::Semaphore)?),
            StepKind::SemWait(r) => Instr::SemWait(object(r, Kind::Semaphore)?),
            StepKind::CondWait { cond, lock } => Instr::CondWait {
                cond: object(cond, Kind::Cond)?,
                lock: object(lock, Kind::Lock)?,
            },
            StepKind::CondSignal(r) => Instr::CondSignal(object(r, Kind::Cond)?),
            StepKind::CondBroadcast(r) => Instr::CondBroadcast(object(r, Kind::Cond)?),
            _ => unreachable!("not a synchronisation step"),
        })
    }

    /// A `spawn` step into `group`: a fork into a spawnable group, or the start of a parked
    /// task of a `spawned` group.
    fn spawn(&self, group: &crate::span::Spanned<String>) -> Result<Instr, Diagnostic> {
        if let Some(&g) = self.spawnable.get(&group.value) {
            return Ok(Instr::Fork { group: g });
        }
        let Some(&semaphore) = self.spawn_semaphores.get(&group.value) else {
            let spawned: Vec<&str> = self
                .spawn_semaphores
                .keys()
                .chain(self.spawnable.keys())
                .map(String::as_str)
                .collect();
            let exists = self.def.groups.iter().any(|g| g.name.value == group.value);
            return Err(Diagnostic::new(
                group.span,
                if exists {
                    format!("group '{}' is not spawnable: it starts with the run; give it `spawn = N` (how many tasks spawn steps may fork into it) or mark it `spawned = true` (its tasks parked until a spawn step starts each)", group.value)
                } else {
                    format!(
                        "'{}' is not a group; spawnable groups: {}{}",
                        group.value,
                        if spawned.is_empty() {
                            "none".to_string()
                        } else {
                            spawned.join(", ")
                        },
                        did_you_mean(&group.value, spawned.iter().copied())
                    )
                },
            ));
        };
        Ok(Instr::Spawn { semaphore })
    }

    /// Refuse an `exit` step that is not the last of the group's own `steps`.
    fn check_exit_is_last(&self, step: &Step, steps: &[Step]) -> Result<(), Diagnostic> {
        if self.nesting > 0 || !std::ptr::eq(step, steps.last().expect("a step")) {
            return Err(Diagnostic::new(
                step.span,
                if self.nesting > 0 {
                    "\"exit\" inside a loop or a timer would end the task on its first pass; put it last among the group's own steps"
                } else {
                    "steps after \"exit\" would never run; put it last among the group's steps"
                },
            ));
        }
        Ok(())
    }

    /// A loop's repetitions (a count, or a duration: then the loop is timed); a constant
    /// count must be a whole number.
    fn loop_repeat(
        &self,
        repeat: &Expr,
        count: usize,
        scope: &[(String, usize)],
    ) -> Result<(Compiled, bool), Diagnostic> {
        let (c, unit) = self.dynamic(repeat, count, scope, "loop", &[Unit::None, Unit::Seconds])?;
        if unit == Unit::None {
            if let Some(v) = c.constant() {
                whole(
                    repeat.span,
                    &format!("loop '{repeat}'"),
                    v,
                    0,
                    u64::MAX >> 12,
                )?;
            }
        }
        Ok((c, unit == Unit::Seconds))
    }

    /// The frame slot of a loop's variable `var` (put in `scope`), if it has one; refuses a
    /// name that hides another.
    fn loop_var(
        &self,
        var: Option<&crate::span::Spanned<String>>,
        scope: &mut Vec<(String, usize)>,
        slots: &mut usize,
    ) -> Result<Option<usize>, Diagnostic> {
        let Some(v) = var else {
            return Ok(None);
        };
        if ["index", "count", "from"].contains(&v.value.as_str())
            || self.params.iter().any(|(p, _)| *p == v.value)
        {
            return Err(Diagnostic::new(v.span, format!("loop variable '{}' hides a name already defined (index, count or a parameter); choose another", v.value)));
        }
        let s = *slots;
        *slots += 1;
        scope.push((v.value.clone(), s));
        Ok(Some(s))
    }

    /// The id of timer `name`, declared at its first use.
    fn timer_id(&mut self, name: &str) -> usize {
        name_id(&mut self.timers, &mut self.timer_index, name)
    }

    /// A `count` step: metric `name` (declared at its first use) grows `by`.
    fn count_step(
        &mut self,
        name: &crate::span::Spanned<String>,
        by: &Expr,
        count: usize,
        scope: &[(String, usize)],
    ) -> Result<Instr, Diagnostic> {
        self.record_metric(name, "count")?;
        let (c, _) = self.dynamic(by, count, scope, "by", &[Unit::None])?;
        Ok(Instr::Count {
            count: self.count_id(&name.value),
            by: c,
        })
    }

    /// The id of count `name`, declared at its first use.
    fn count_id(&mut self, name: &str) -> usize {
        name_id(&mut self.counts, &mut self.count_index, name)
    }
}

/// The place of `name` in `names` (indexed by `index`), appended at its first use.
fn name_id(
    names: &mut Vec<&'static str>,
    index: &mut HashMap<&'static str, usize>,
    name: &str,
) -> usize {
    if let Some(&i) = index.get(name) {
        return i;
    }
    let n = intern(name);
    names.push(n);
    index.insert(n, names.len() - 1);
    names.len() - 1
}

fn table(kind: Kind) -> &'static str {
    match kind {
        Kind::Channel => "channel",
        Kind::Lock => "lock",
        Kind::Barrier => "barrier",
        Kind::Semaphore => "semaphore",
        Kind::Cond => "cond",
    }
}

/// Whether `u` is one of `units`; the error names the value and what is accepted.
pub(crate) fn check_unit(
    expr: &Expr,
    what: &str,
    u: Unit,
    units: &[Unit],
) -> Result<(), Diagnostic> {
    if units.contains(&u) {
        return Ok(());
    }
    let want = match units {
        [Unit::Seconds] => "a duration such as 5ms",
        [Unit::Bytes] => "a size such as 4KiB",
        [Unit::Bytes, Unit::None] => "a size such as 4KiB (or a plain number of bytes)",
        [Unit::None] => "a plain number",
        [Unit::None, Unit::Seconds] => "a plain number of passes, or a duration such as 10s",
        _ => "another unit",
    };
    Err(Diagnostic::new(
        expr.span,
        format!("{what} '{expr}' is {u}; use {want}"),
    ))
}

/// Whether a program draws from distributions (the file then gets a `seed` parameter).
pub fn uses_distributions(def: &ScriptDef) -> bool {
    fn any(steps: &[Step]) -> bool {
        steps.iter().any(|s| match &s.kind {
            StepKind::Compute(a) | StepKind::Sleep(a) => !matches!(a, Amount::Fixed(_)),
            StepKind::Loop { body, .. } | StepKind::Timed { body, .. } => any(body),
            _ => false,
        })
    }
    def.groups.iter().any(|g| any(&g.body))
}

/// The knobs of a `set` step, each parsed and checked alone and together (CPUs against the
/// machine later, before the run: the workload's `group_defaults`).
pub fn attr_change(
    knobs: &[(Spanned<String>, Spanned<String>)],
) -> Result<crate::program::AttrChange, Diagnostic> {
    let mut change = crate::program::AttrChange {
        knobs: schedlab_workload::knobs::Knobs::default(),
        all_cpus: false,
    };
    for (key, value) in knobs {
        if key.value == "cpus" && value.value == "all" {
            change.all_cpus = true;
            continue;
        }
        let one = schedlab_workload::knobs::parse_knob(&key.value, &value.value)
            .map_err(|e| Diagnostic::new(value.span, e.to_string()))?;
        if one.mode.is_some() {
            return Err(Diagnostic::new(
                key.span,
                "`mode` (user or kernel) is a group's for the whole run; a `set` step changes `nice`, `policy`, `slice` and `cpus`",
            ));
        }
        change.knobs = change.knobs.merged(&one);
        change
            .knobs
            .validate("set", usize::MAX)
            .map_err(|e| Diagnostic::new(value.span, e.to_string()))?;
    }
    Ok(change)
}
