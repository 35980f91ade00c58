//! [`Script`]: a workload file as a workload — parameters set by name like a preset's, a plan
//! and a task body from its compiled program, and the metrics it names.

use crate::compile::{compile, metric_names, uses_distributions};
use crate::error::FileError;
use crate::expr::{self, Node, Quantity, Unit};
use crate::intern::intern;
use crate::interp::{self, RECEIVED};
use crate::model::{ParamValue, ScriptDef};
use crate::program::Program;
use crate::span::Span;
use schedlab_workload::knobs::{parse_knob, Knobs};
use schedlab_workload::presets::interbench::format_size;
use schedlab_workload::presets::{
    Configurable, DefaultKind, GroupDefault, HostNeeds, Outcome, ParamDef, ParamKind, SizedBy,
    Workload,
};
use schedlab_workload::record::{Better, MetricDef};
use schedlab_workload::{Context, ParamError, Plan, TaskRef, WorkloadError};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// What a file is, once read: shared by every configuration made from it.
#[derive(Debug)]
struct File {
    def: ScriptDef,
    name: &'static str,
    defs: &'static [ParamDef],
    /// Whether the file draws from distributions (and so has a `seed` parameter).
    seeded: bool,
    /// The knobs each group gives its tasks.
    knobs: Vec<GroupDefault>,
}

/// A workload file, configured: one value per parameter, compiled.
#[derive(Clone, Debug)]
pub struct Script {
    file: Arc<File>,
    values: Vec<ParamValue>,
    /// Group sizes set as parameters (`GROUP.count`), over the file's `count`.
    counts: Vec<Option<u64>>,
    seed: u64,
    /// The last configuration that compiled (the defaults at first).
    program: Arc<Program>,
    /// This configuration, compiled when first needed after a parameter changed (so that
    /// setting several parameters compiles once); an error is reported by `check`.
    compiled: Arc<OnceLock<Result<Arc<Program>, ParamError>>>,
}

impl Script {
    /// The workload for `def` at its parameters' defaults; faults of the file as a whole (a
    /// reference to nothing, a unit that does not fit, a receive nobody can satisfy) are errors
    /// at their place in the file.
    pub fn new(def: ScriptDef) -> Result<Script, FileError> {
        let at = |span: Span, message: String| {
            FileError::at(&def.path, &def.text, crate::Diagnostic::new(span, message))
        };
        let mut knobs = Vec::new();
        let lines = crate::span::Lines::new(&def.text);
        for g in &def.groups {
            let mut k = Knobs::default();
            for (key, value) in &g.knobs {
                let one = parse_knob(&key.value, &value.value)
                    .map_err(|e| at(value.span, e.to_string()))?;
                // Each knob's range is checked at its value (CPUs against the machine later).
                if one.cpus.is_none() {
                    one.validate(&g.name.value, usize::MAX)
                        .map_err(|e| at(value.span, e.to_string()))?;
                }
                k = k.merged(&one);
            }
            if !k.is_default() {
                k.validate(&g.name.value, usize::MAX)
                    .map_err(|e| at(g.name.span, e.to_string()))?;
                knobs.push(GroupDefault {
                    group: intern(&g.name.value),
                    knobs: k,
                    kind: DefaultKind::Under,
                    origin: g.knobs.first().map(|(key, _)| {
                        format!("{}:{}", def.path.display(), lines.of(key.span.start))
                    }),
                });
            }
        }
        // What `set` steps switch the group's tasks to: checked before the run as its knobs.
        for g in &def.groups {
            let mut sets = Vec::new();
            set_steps(&g.body, &mut sets);
            for (set, span) in sets {
                let change = crate::compile::attr_change(set)
                    .map_err(|d| FileError::at(&def.path, &def.text, d))?;
                if change.knobs.is_default() {
                    continue;
                }
                knobs.push(GroupDefault {
                    group: intern(&g.name.value),
                    knobs: change.knobs,
                    kind: DefaultKind::During,
                    origin: Some(format!("{}:{}", def.path.display(), lines.of(span.start))),
                });
            }
        }
        let values: Vec<ParamValue> = def.params.iter().map(|p| p.default.clone()).collect();
        let counts = vec![None; def.groups.len()];
        let program = compile(&def, &values, &counts, 1)
            .map(Arc::new)
            .map_err(|d| FileError::at(&def.path, &def.text, d))?;
        let seeded = uses_distributions(&def);
        let name = intern(&def.name);
        let defs = param_defs(&def, seeded);
        Ok(Script {
            file: Arc::new(File {
                def,
                name,
                defs,
                seeded,
                knobs,
            }),
            values,
            counts,
            seed: 1,
            // The defaults compiled: setting a parameter to its default compiles nothing again.
            compiled: Arc::new(OnceLock::from(Ok(program.clone()))),
            program,
        })
    }

    /// The file as read.
    pub fn def(&self) -> &ScriptDef {
        &self.file.def
    }

    /// This configuration, compiled (the last one that compiled, if it does not: `check`
    /// says why).
    pub fn program(&self) -> &Program {
        match self.compiled() {
            Ok(p) => p,
            Err(_) => &self.program,
        }
    }

    fn compiled(&self) -> &Result<Arc<Program>, ParamError> {
        self.compiled.get_or_init(|| {
            let file = &self.file;
            compile(&file.def, &self.values, &self.counts, self.seed)
                .map(Arc::new)
                .map_err(|d| {
                    let e = FileError::at(&file.def.path, &file.def.text, d);
                    ParamError::whole(file.name, format!("with {}: {e}", self.describe_values()))
                })
        })
    }

    /// The metric names this configuration reports.
    pub fn metric_names(&self) -> Vec<String> {
        metric_names(self.program())
    }
}

/// The declared parameters, as the command line and sweeps see them (names interned; the slice
/// lives as long as the process, once per file read).
fn param_defs(def: &ScriptDef, seeded: bool) -> &'static [ParamDef] {
    let mut out: Vec<ParamDef> = def
        .params
        .iter()
        .map(|p| {
            let (default, usage) = match &p.default {
                ParamValue::Number(q) => {
                    let d = q.to_string();
                    let usage = match q.unit {
                        Unit::None => "NUMBER".to_string(),
                        Unit::Seconds => "DURATION".to_string(),
                        Unit::Bytes => "SIZE".to_string(),
                    };
                    (d, usage)
                }
                ParamValue::Text(t) => (
                    t.clone(),
                    if p.choices.is_empty() {
                        "WORD".to_string()
                    } else {
                        p.choices.join("|")
                    },
                ),
            };
            let help = if p.help.is_empty() {
                format!("Parameter {} of the file.", p.name.value)
            } else {
                p.help.clone()
            };
            let mut d = ParamDef::value(
                intern(&p.name.value),
                intern(&default),
                intern(&usage),
                intern(&help),
            );
            if matches!(p.default, ParamValue::Number(_)) {
                d = d.hyphen_values();
            }
            d
        })
        .collect();
    for g in &def.groups {
        out.push(
            ParamDef::value(
                intern(&format!("{}.count", g.name.value)),
                "",
                "N",
                intern(&format!(
                    "Tasks of group {} [default: {}, as the file says].",
                    g.name.value, g.count
                )),
            )
            .no_default(),
        );
    }
    if seeded {
        out.push(ParamDef::value(
            "seed",
            "1",
            "NUMBER",
            "Seed of the file's distributions (every task draws its own stream from it).",
        ));
    }
    debug_assert!(out.iter().all(|d| d.kind == ParamKind::Value));
    Box::leak(out.into_boxed_slice())
}

/// What is wrong with a file parameter's value; the text follows the value (`'x' is …`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
enum ValueProblem {
    /// A word that is not one of the parameter's choices.
    #[error("is not accepted; use {}", .choices.join(", "))]
    NotAChoice {
        /// The words accepted.
        choices: Vec<String>,
    },
    /// An empty word.
    #[error("is empty; give a word")]
    Empty,
    /// Text that is no quantity.
    #[error("is not accepted; use {want}")]
    NotAQuantity {
        /// What is accepted (`a duration such as 10ms`).
        want: &'static str,
    },
    /// An expression where a plain quantity is wanted.
    #[error("is not accepted; use {want} (not an expression)")]
    Expression {
        /// What is accepted.
        want: &'static str,
    },
    /// A quantity of another unit.
    #[error("is {unit}; use {want}")]
    WrongUnit {
        /// The value's unit.
        unit: Unit,
        /// What is accepted.
        want: &'static str,
    },
}

/// Parse `text` as a value of the kind `default` has.
fn parse_value(
    default: &ParamValue,
    choices: &[String],
    text: &str,
) -> Result<ParamValue, ValueProblem> {
    match default {
        ParamValue::Text(_) => {
            if !choices.is_empty() && !choices.iter().any(|c| c == text) {
                return Err(ValueProblem::NotAChoice {
                    choices: choices.to_vec(),
                });
            }
            if text.is_empty() {
                return Err(ValueProblem::Empty);
            }
            Ok(ParamValue::Text(text.to_string()))
        }
        ParamValue::Number(d) => {
            let want = match d.unit {
                Unit::None => "a number",
                Unit::Seconds => "a duration such as 10ms",
                Unit::Bytes => "a size such as 4KiB",
            };
            let e = expr::parse(text, Span::new(0, text.len()), false)
                .map_err(|_| ValueProblem::NotAQuantity { want })?;
            let q = match e.node {
                Node::Num(q) => q,
                Node::Neg(inner) => match inner.node {
                    Node::Num(q) => Quantity {
                        value: -q.value,
                        unit: q.unit,
                    },
                    _ => return Err(ValueProblem::Expression { want }),
                },
                _ => return Err(ValueProblem::Expression { want }),
            };
            let q = match (d.unit, q.unit) {
                (a, b) if a == b => q,
                (Unit::Bytes, Unit::None) => Quantity {
                    value: q.value,
                    unit: Unit::Bytes,
                },
                (_, unit) => return Err(ValueProblem::WrongUnit { unit, want }),
            };
            Ok(ParamValue::Number(q))
        }
    }
}

impl Configurable for Script {
    fn param_defs(&self) -> &'static [ParamDef] {
        self.file.defs
    }

    fn set_param(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        let workload = self.file.name;
        let Some(def) = self.file.defs.iter().find(|d| d.name == name) else {
            return Err(schedlab_workload::presets::params::unknown_param(
                workload,
                self.file.defs,
                name,
            ));
        };
        let value = value.trim();
        if let Some(g) = name
            .strip_suffix(".count")
            .and_then(|g| self.file.def.groups.iter().position(|x| x.name.value == g))
        {
            let max = schedlab_workload::presets::MAX_TASKS;
            let n = schedlab_workload::presets::params::parse_count(
                workload,
                def.name,
                value,
                1..=max,
            )?;
            self.counts[g] = Some(n as u64);
        } else if name == "seed"
            && self.file.seeded
            && !self.file.def.params.iter().any(|p| p.name.value == "seed")
        {
            self.seed = value.parse().map_err(|_| {
                ParamError::value(
                    workload,
                    def.name,
                    format!("'{value}'"),
                    "is not accepted; use a whole number 0..2^64-1",
                )
            })?;
        } else {
            let i = self
                .file
                .def
                .params
                .iter()
                .position(|p| p.name.value == name)
                .expect("declared");
            let p = &self.file.def.params[i];
            let parsed = parse_value(&p.default, &p.choices, value).map_err(|problem| {
                ParamError::value(
                    workload,
                    def.name,
                    format!("'{value}'"),
                    problem.to_string(),
                )
            })?;
            if parsed == self.values[i] {
                // The same configuration: what is compiled stays (a file of many groups is not
                // compiled again for each parameter set to its default).
                return Ok(());
            }
            self.values[i] = parsed;
        }
        if let Some(Ok(p)) = self.compiled.get() {
            self.program = p.clone();
        }
        self.compiled = Arc::new(OnceLock::new());
        Ok(())
    }

    fn check(&self) -> Result<(), ParamError> {
        self.compiled().as_ref().map(|_| ()).map_err(Clone::clone)
    }

    fn group_defaults(&self, _realtime_allowed: bool) -> Vec<GroupDefault> {
        self.file.knobs.clone()
    }

    fn host_needs(&self) -> HostNeeds {
        let clamp = |b: u64| usize::try_from(b).unwrap_or(usize::MAX);
        HostNeeds {
            memory: (self.program().memory > 0).then(|| {
                (
                    SizedBy::Steps(self.memory_steps()),
                    clamp(self.program().memory),
                )
            }),
            files: (self.program().files > 0).then(|| ("write", clamp(self.program().files))),
            real_kernel: None,
            simulated: None,
            programs: None,
            port: None,
        }
    }
}

impl Script {
    /// What the file's memory steps ask, for the error that refuses more memory than the
    /// machine has: the [`MEMORY_STEPS_NAMED`] largest shares, each at its place in the file
    /// with what it asks and for how many tasks, then how many more there are.
    fn memory_steps(&self) -> String {
        let (def, program) = (self.def(), self.program());
        let size = |b: u64| format_size(usize::try_from(b).unwrap_or(usize::MAX));
        let who = match def.grammar {
            crate::model::Grammar::Toml => "group",
            crate::model::Grammar::RtApp => "task",
        };
        let mut parts: Vec<String> = (program.memory_steps.iter())
            .take(MEMORY_STEPS_NAMED)
            .map(|m| {
                let each = match m.holders {
                    1 => size(m.bytes),
                    n => format!(
                        "{} in each of {n} tasks, {} in all",
                        size(m.bytes),
                        size(m.total)
                    ),
                };
                let message = format!(
                    "{who} '{}', step `{}`: {each}",
                    program.groups[m.group].name, m.what
                );
                FileError::at(
                    &def.path,
                    &def.text,
                    crate::Diagnostic::new(m.span, message),
                )
                .to_string()
            })
            .collect();
        let more = program
            .memory_steps
            .len()
            .saturating_sub(MEMORY_STEPS_NAMED);
        if more > 0 {
            parts.push(format!("and {more} more step(s)"));
        }
        parts.join("; ")
    }

    /// The parameters' values, for an error (not through the compiled program, which may not
    /// exist).
    fn describe_values(&self) -> String {
        let mut out: Vec<String> = self
            .file
            .def
            .params
            .iter()
            .zip(&self.values)
            .map(|(p, v)| match v {
                ParamValue::Number(q) => format!("{}={q}", p.name.value),
                ParamValue::Text(t) => format!("{}={t}", p.name.value),
            })
            .collect();
        for (g, c) in self.file.def.groups.iter().zip(&self.counts) {
            if let Some(c) = c {
                out.push(format!("{}.count={c}", g.name.value));
            }
        }
        out.join(" ")
    }
}

/// The memory steps an error refusing the file's memory names, the largest first.
const MEMORY_STEPS_NAMED: usize = 3;

fn def(name: &str, unit: &str, better: Better, description: String) -> MetricDef {
    MetricDef {
        name: name.to_string(),
        unit: unit.to_string(),
        better,
        description,
    }
}

impl Workload for Script {
    fn name(&self) -> &'static str {
        self.file.name
    }

    fn params(&self) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = self
            .file
            .def
            .params
            .iter()
            .zip(&self.values)
            .map(|(p, v)| {
                let text = match v {
                    ParamValue::Number(q) => q.to_string(),
                    ParamValue::Text(t) => t.clone(),
                };
                (p.name.value.clone(), text)
            })
            .collect();
        for g in &self.program().groups {
            out.insert(format!("{}.count", g.name), g.tasks.to_string());
        }
        if self.file.seeded {
            out.entry("seed".into())
                .or_insert_with(|| self.seed.to_string());
        }
        out
    }

    fn plan(&self) -> Plan {
        self.program().plan.clone()
    }

    fn body<C: Context>(
        &self,
        task: TaskRef,
        ctx: &C,
    ) -> impl std::future::Future<Output = Result<(), WorkloadError>> {
        // The interpreter's future itself, not one wrapped around it: one state machine to
        // resume per step.
        interp::run(self.program(), task, ctx)
    }

    fn start_order(&self) -> Vec<usize> {
        self.program().start_order.clone()
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        let p = self.program();
        let mut all = vec![def(
            "time",
            "s",
            Better::Lower,
            "wall time from the start until every task is done".into(),
        )];
        if p.receives {
            all.push(def(
                "messages",
                "msg",
                Better::Higher,
                "messages received and checked".into(),
            ));
            all.push(def(
                "msgs_per_s",
                "msg/s",
                Better::Higher,
                "messages received per second of wall time".into(),
            ));
        }
        for t in &p.timers {
            all.push(def(
                t,
                "ms",
                Better::Lower,
                format!("mean wall time of timer {t}'s steps"),
            ));
            all.push(def(
                &format!("{t}.max"),
                "ms",
                Better::Lower,
                format!("longest wall time of timer {t}'s steps"),
            ));
        }
        for c in &p.counts {
            all.push(def(
                c,
                "",
                Better::Higher,
                format!("count {c}, summed over the tasks"),
            ));
            all.push(def(
                &format!("{c}_per_s"),
                "/s",
                Better::Higher,
                format!("count {c} per second of wall time"),
            ));
        }
        for t in &p.periods {
            let n = t.name;
            all.push(def(
                &format!("{n}.latency"),
                "ms",
                Better::Lower,
                format!("mean wake-up latency of periodic timer {n}'s activations"),
            ));
            all.push(def(
                &format!("{n}.max_latency"),
                "ms",
                Better::Lower,
                format!("largest wake-up latency of periodic timer {n}"),
            ));
            all.push(def(&format!("{n}.deadlines_met"), "%", Better::Higher, format!("activations of {n} whose work ended by its deadline, percent (missed periods count as missed deadlines)")));
            all.push(def(
                &format!("{n}.missed"),
                "periods",
                Better::Lower,
                format!("activations of {n} overslept entirely"),
            ));
        }
        for d in &p.derived {
            let better = if d.higher_is_better {
                Better::Higher
            } else {
                Better::Lower
            };
            all.push(def(&d.name, &d.unit, better, d.help.clone()));
        }
        let spec = &self.file.def.metrics;
        let mut order: Vec<String> = Vec::new();
        if let Some(p) = &spec.primary {
            order.push(p.value.clone());
        }
        if spec.show.is_empty() {
            order.extend(all.iter().map(|m| m.name.clone()));
        } else {
            order.extend(spec.show.iter().map(|s| s.value.clone()));
        }
        // By name, so that a file of many tasks (each with its own timers) costs linear time.
        let mut by_name: std::collections::HashMap<&str, &MetricDef> = Default::default();
        for m in &all {
            by_name.entry(m.name.as_str()).or_insert(m);
        }
        let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut out: Vec<MetricDef> = Vec::new();
        for name in order {
            if let Some(m) = by_name.get(name.as_str()) {
                if taken.insert(name) {
                    out.push((*m).clone());
                }
            }
        }
        out
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let p = self.program();
        let plan = &p.plan;
        let secs = outcome.wall.as_secs_f64();
        let mut m = BTreeMap::new();
        m.insert("time".to_string(), secs);
        if p.receives {
            let received = outcome.sum(plan, None, RECEIVED);
            if let Some(expected) = p.expected_messages {
                if received as u64 != expected {
                    return Err(WorkloadError::Integrity(format!(
                        "receivers got {received} messages, expected {expected}"
                    )));
                }
            }
            m.insert("messages".into(), received);
            m.insert(
                "msgs_per_s".into(),
                if secs > 0.0 { received / secs } else { 0.0 },
            );
        }
        let samples = |key: &str| -> Vec<f64> {
            outcome
                .tasks
                .iter()
                .filter_map(|t| t.samples.get(key))
                .flatten()
                .copied()
                .collect()
        };
        let mean = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        for t in &p.timers {
            let v = samples(t);
            m.insert(t.to_string(), mean(&v) * 1e3);
            m.insert(format!("{t}.max"), max(&v) * 1e3);
        }
        for c in &p.counts {
            let total = outcome.sum(plan, None, c);
            m.insert(c.to_string(), total);
            m.insert(
                format!("{c}_per_s"),
                if secs > 0.0 { total / secs } else { 0.0 },
            );
        }
        for t in &p.periods {
            let lat = samples(t.latency);
            let met = outcome.sum(plan, None, t.met);
            let late = outcome.sum(plan, None, t.late);
            m.insert(format!("{}.latency", t.name), mean(&lat) * 1e3);
            m.insert(format!("{}.max_latency", t.name), max(&lat) * 1e3);
            m.insert(
                format!("{}.deadlines_met", t.name),
                if met + late > 0.0 {
                    100.0 * met / (met + late)
                } else {
                    0.0
                },
            );
            m.insert(
                format!("{}.missed", t.name),
                outcome.sum(plan, None, t.missed),
            );
        }
        for d in &p.derived {
            let slots: Vec<f64> = d
                .inputs
                .iter()
                .map(|i| match i.as_str() {
                    "cpu" => outcome.cpu_time().as_secs_f64(),
                    name => m.get(name).copied().unwrap_or(f64::NAN),
                })
                .collect();
            let v = d.value.eval(&slots);
            if !v.is_finite() {
                return Err(WorkloadError::Integrity(format!(
                    "derived metric {} came out as {v} in this repetition (a division by a metric that was 0?)",
                    d.name
                )));
            }
            m.insert(d.name.clone(), v);
        }
        Ok(m)
    }

    fn expected_time(&self) -> Option<Duration> {
        Some(self.program().expected_time)
    }

    fn describe(&self) -> Option<String> {
        Some(crate::describe::steps(self.def(), self.program()))
    }

    fn loop_calibration(&self) -> Option<schedlab_workload::LoopCalibration> {
        self.program().loops
    }

    fn rt_app_log_basename(&self) -> Option<String> {
        (self.program().rtapp_log.as_ref()).map(|l| l.basename.clone())
    }

    fn rt_app_log_calibration(&self) -> Option<schedlab_workload::LoopCalibration> {
        (self.program().rtapp_log.as_ref()).map(|l| l.calibration)
    }
}

/// The `set` steps of `steps`, nested ones too: each one's knobs and place.
fn set_steps<'a>(
    steps: &'a [crate::model::Step],
    out: &mut Vec<(&'a [crate::model::KnobPair], Span)>,
) {
    for s in steps {
        match &s.kind {
            crate::model::StepKind::Set(knobs) => out.push((knobs, s.span)),
            crate::model::StepKind::Loop { body, .. }
            | crate::model::StepKind::Timed { body, .. } => set_steps(body, out),
            _ => {}
        }
    }
}
