//! How a preset declares its parameters, once: name, default, help and how values are set. The
//! command line builds each workload's flags from these declarations, `sweep --vary KEY=...`
//! sets a value through the same setter, and the record's `params` come from the workload — so
//! adding a parameter touches the preset's own file alone.

use super::def::WorkloadDef;
use super::Workload;
use crate::error::ParamError;
use crate::knobs::Knobs;

/// How a parameter takes values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// One value; the default applies when none is given.
    Value,
    /// A comma-separated list: one configuration per value (per combination, with several
    /// lists). A sweep that varies it gives each combination one value.
    List,
    /// A switch that takes no value: given means `true`.
    Flag,
}

/// One parameter of a preset.
#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    /// Its name: the command line's `--NAME`, a sweep's `NAME=...`, the record's key.
    pub name: &'static str,
    /// What it means (the command line's help).
    pub help: &'static str,
    /// The default as text, applied through the setter when the parameter is not given
    /// (`None`: the preset's own default, e.g. one that depends on the machine).
    pub default: Option<&'static str>,
    /// How it takes values.
    pub kind: ParamKind,
    /// How `schedlab list` shows it after the flag (`socketpair|pipe`, `30s`).
    pub usage: &'static str,
    /// Whether a value may start with `-` (durations, so that `-1s` reaches the setter's
    /// error instead of being taken for a flag).
    pub hyphen_values: bool,
    /// A one-letter flag as well (`-g` for messaging's `groups`, as hackbench spells it), where
    /// it clashes with no common option's.
    pub short: Option<char>,
}

impl ParamDef {
    /// A one-value parameter with a default.
    pub const fn value(
        name: &'static str,
        default: &'static str,
        usage: &'static str,
        help: &'static str,
    ) -> ParamDef {
        ParamDef {
            name,
            help,
            default: Some(default),
            kind: ParamKind::Value,
            usage,
            hyphen_values: false,
            short: None,
        }
    }

    /// The `tasks` parameter: how the real backend hosts tasks (`usage` lists the accepted
    /// hostings, the default first).
    pub const fn tasks(default: &'static str, usage: &'static str, help: &'static str) -> ParamDef {
        ParamDef::value("tasks", default, usage, help)
    }

    /// This parameter with `kind`.
    pub const fn kind(mut self, kind: ParamKind) -> ParamDef {
        self.kind = kind;
        self
    }

    /// This parameter without a textual default.
    pub const fn no_default(mut self) -> ParamDef {
        self.default = None;
        self
    }

    /// This parameter, accepting values that start with `-`.
    pub const fn hyphen_values(mut self) -> ParamDef {
        self.hyphen_values = true;
        self
    }

    /// This parameter, with the one-letter flag `-LETTER` as well.
    pub const fn short(mut self, letter: char) -> ParamDef {
        self.short = Some(letter);
        self
    }
}

/// One parameter of preset `W`, declared once: what the command line and the record know of it
/// ([`ParamDef`]), how its value is set from text, how it reads back as text, and how the record
/// keeps it (under its name, or [`Param::record_as`] another key; always, or
/// [`Param::recorded_when`] it applies; or [`Param::not_recorded`]). A preset's table of these
/// gives its [`Preset::PARAMS`] ([`param_defs`]), its [`Preset::set_param`] and its
/// [`Preset::param_values`]; only the field that holds the value, and checks that involve
/// several parameters, are written elsewhere.
pub struct Param<W> {
    /// The declaration.
    pub def: ParamDef,
    /// Set the value from its text (one element, for a list parameter), or say why not.
    pub set: fn(&mut W, &str) -> Result<(), ParamError>,
    /// The value as text, as the record keeps it (a computed value, such as web's `dirs` when
    /// 0 asks for SPECweb99's scaling, is what this returns).
    pub get: fn(&W) -> String,
    /// The record's key for it, when that is not its name (records written before the
    /// parameter had its command-line name keep their key: interbench's `loads` is `load`).
    pub record_key: Option<&'static str>,
    /// Whether the record keeps it for this configuration (`None`: always), so that a
    /// parameter that does not apply (interbench's `io-size` without an I/O load) leaves the
    /// record as it was before the parameter existed.
    pub recorded: Option<fn(&W) -> bool>,
}

/// [`Param::not_recorded`]'s test.
fn never<W>(_: &W) -> bool {
    false
}

impl<W> Param<W> {
    /// Parameter `def`, set by `set` and read back by `get`, kept by the record under its
    /// name, always.
    pub const fn new(
        def: ParamDef,
        set: fn(&mut W, &str) -> Result<(), ParamError>,
        get: fn(&W) -> String,
    ) -> Param<W> {
        Param {
            def,
            set,
            get,
            record_key: None,
            recorded: None,
        }
    }

    /// This parameter, kept by the record under `key` instead of its name.
    pub const fn record_as(mut self, key: &'static str) -> Param<W> {
        self.record_key = Some(key);
        self
    }

    /// This parameter, kept by the record only for configurations where `when` holds.
    pub const fn recorded_when(mut self, when: fn(&W) -> bool) -> Param<W> {
        self.recorded = Some(when);
        self
    }

    /// This parameter, left out of the record (a setting of the run that does not change its
    /// results, such as the port a real server listens on).
    pub const fn not_recorded(self) -> Param<W> {
        self.recorded_when(never::<W>)
    }

    /// Its key in the record.
    pub fn key(&self) -> &'static str {
        self.record_key.unwrap_or(self.def.name)
    }

    /// Its record entry for `w`: the key and the value, or `None` when the record leaves it
    /// out.
    pub fn entry(&self, w: &W) -> Option<(&'static str, String)> {
        match self.recorded {
            Some(when) if !when(w) => None,
            _ => Some((self.key(), (self.get)(w))),
        }
    }
}

/// Set parameter `name` of `w` through its preset's [`Preset::TABLE`]: what
/// [`Preset::set_param`] does unless the preset has more to do after a change.
pub fn set_from_table<P: Preset>(w: &mut P, name: &str, value: &str) -> Result<(), ParamError> {
    match P::TABLE.iter().find(|p| p.def.name == name) {
        Some(p) => (p.set)(w, value),
        None => Err(unknown_param(P::NAME, P::PARAMS, name)),
    }
}

/// The declarations of a parameter table ([`Param`]), for [`Preset::PARAMS`]: `N` is the
/// table's length (`{ TABLE.len() }`).
pub const fn param_defs<W, const N: usize>(table: &[Param<W>]) -> [ParamDef; N] {
    assert!(table.len() == N, "N is the table's length");
    let mut out = [ParamDef::value("", "", "", ""); N];
    let mut i = 0;
    while i < N {
        out[i] = table[i].def;
        i += 1;
    }
    out
}

/// The values of a preset's list parameters for one command line, in declaration order, and
/// which parameters were given explicitly.
#[derive(Clone, Debug, Default)]
pub struct ListValues {
    /// `(name, values)` for every list parameter (its default split when not given).
    pub lists: Vec<(&'static str, Vec<String>)>,
    /// Names of the parameters given on the command line or by a sweep.
    pub given: Vec<&'static str>,
}

impl ListValues {
    /// The values of list `name`.
    pub fn get(&self, name: &str) -> &[String] {
        self.lists
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(&[], |(_, v)| v.as_slice())
    }

    /// Whether `name` was given.
    pub fn given(&self, name: &str) -> bool {
        self.given.contains(&name)
    }
}

/// A workload whose configuration is set parameter by parameter from text: a shipped preset, or
/// a workload file. The experiment pipeline builds every configuration through this trait.
pub trait Configurable: Workload + Clone {
    /// Its parameters, in the order the command line shows them.
    fn param_defs(&self) -> &'static [ParamDef];
    /// Set one parameter from its text (one element, for a list parameter).
    fn set_param(&mut self, name: &str, value: &str) -> Result<(), ParamError>;
    /// Check the whole configuration; the error names the parameter, the value and what is
    /// accepted.
    fn check(&self) -> Result<(), ParamError>;
    /// Knobs the workload gives its own groups, given whether the backend may use real-time
    /// policies.
    fn group_defaults(&self, realtime_allowed: bool) -> Vec<GroupDefault>;
    /// Memory and file space one repetition needs on the machine it runs on.
    fn host_needs(&self) -> HostNeeds;
    /// The configurations of one command line: the cross product of the list parameters (first
    /// one slowest), each set on this one and checked.
    fn configurations(&self, lists: &ListValues) -> Result<Vec<Self>, ParamError> {
        cross_configurations(self, lists)
    }
}

/// The cross product of `lists` (first one slowest), each combination set on `base` and
/// checked: what [`Configurable::configurations`] does unless a workload knows better.
pub fn cross_configurations<W: Configurable>(
    base: &W,
    lists: &ListValues,
) -> Result<Vec<W>, ParamError> {
    let mut out = vec![base.clone()];
    for (name, values) in &lists.lists {
        let mut next = Vec::with_capacity(out.len() * values.len());
        for c in &out {
            for v in values {
                let mut c = c.clone();
                c.set_param(name, v)?;
                next.push(c);
            }
        }
        out = next;
    }
    for c in &out {
        c.check()?;
    }
    Ok(out)
}

impl<P: Preset> Configurable for P {
    fn param_defs(&self) -> &'static [ParamDef] {
        P::PARAMS
    }
    fn set_param(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        Preset::set_param(self, name, value)
    }
    fn check(&self) -> Result<(), ParamError> {
        Preset::check(self)
    }
    fn group_defaults(&self, realtime_allowed: bool) -> Vec<GroupDefault> {
        Preset::group_defaults(self, realtime_allowed)
    }
    fn host_needs(&self) -> HostNeeds {
        Preset::host_needs(self)
    }
    fn configurations(&self, lists: &ListValues) -> Result<Vec<Self>, ParamError> {
        P::configurations(self, lists)
    }
}

/// A workload schedlab ships, declared once ([`Preset::DEF`]) and set parameter by parameter.
pub trait Preset: Workload + Clone + Default + Sized {
    /// Its definition: name, help, parameters, its own tables.
    const DEF: WorkloadDef;

    /// The workload's name on the command line ([`WorkloadDef::name`]).
    const NAME: &'static str = Self::DEF.name;

    /// Its parameters, in the order the command line shows them ([`WorkloadDef::params`]).
    const PARAMS: &'static [ParamDef] = Self::DEF.params;

    /// Its parameters with their setters and getters, for a preset that declares them in one
    /// table ([`Param`]); [`Preset::set_param`] and [`Preset::param_values`] come from it.
    const TABLE: &'static [Param<Self>] = &[];

    /// [`Preset::PARAMS`], for callers that hold the type only.
    fn param_defs() -> &'static [ParamDef] {
        Self::PARAMS
    }

    /// Each recorded parameter's value as text under its record key, from [`Preset::TABLE`]
    /// (what a preset with a table returns as its [`Workload::params`], with any facts it
    /// derives from them).
    fn param_values(&self) -> std::collections::BTreeMap<String, String> {
        (Self::TABLE.iter())
            .filter_map(|p| p.entry(self))
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// A configuration with every parameter at its default; `host_cpus` is the CPU count of the
    /// machine it runs on (the host, or the simulated machine), for defaults that depend on it.
    fn with_defaults(_host_cpus: usize) -> Self {
        Self::default()
    }

    /// Set one parameter from its text (one element, for a list parameter); by default
    /// through [`Preset::TABLE`].
    fn set_param(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        set_from_table(self, name, value)
    }

    /// Check the whole configuration; the error names the parameter, the value and what is
    /// accepted.
    fn check(&self) -> Result<(), ParamError>;

    /// Knobs the workload gives its own groups (interbench's timekeeper runs SCHED_FIFO 96),
    /// given whether the backend may use real-time policies.
    fn group_defaults(&self, _realtime_allowed: bool) -> Vec<GroupDefault> {
        Vec::new()
    }

    /// Memory and file space one repetition needs on the machine it runs on.
    fn host_needs(&self) -> HostNeeds {
        HostNeeds::default()
    }

    /// The configurations of one command line: the cross product of the list parameters (first
    /// one slowest), each set on `base` and checked.
    fn configurations(base: &Self, lists: &ListValues) -> Result<Vec<Self>, ParamError> {
        cross_configurations(base, lists)
    }
}

/// Parse a parameter's value with `FromStr`, naming the parameter and the value on failure.
pub fn parse_param<T: std::str::FromStr>(
    workload: &'static str,
    name: &'static str,
    value: &str,
    accepted: &str,
) -> Result<T, ParamError> {
    value.trim().parse().map_err(|_| {
        ParamError::value(
            workload,
            name,
            format!("'{value}'"),
            format!("is not accepted; use {accepted}"),
        )
    })
}

/// The most tasks one repetition of any preset may create (a simulated machine holds each; a
/// real one forks or spawns each).
pub const MAX_TASKS: usize = 131_072;

/// The most messages one repetition of a message-passing preset may deliver: at a million a
/// second, about three hours.
pub const MAX_MESSAGES: u128 = 10_000_000_000;

/// Parse a count: a whole number in `range`. A negative, fractional, overflowing or
/// out-of-range value gets the same answer, which names the range.
pub fn parse_count(
    workload: &'static str,
    name: &'static str,
    value: &str,
    range: std::ops::RangeInclusive<usize>,
) -> Result<usize, ParamError> {
    // A number is shown as read (`threads 0`), other text quoted (`loops '-1'`).
    let bad = |shown: String| {
        ParamError::value(
            workload,
            name,
            shown,
            format!("is not accepted; use {}..{}", range.start(), range.end()),
        )
    };
    let n: usize = value
        .trim()
        .parse()
        .map_err(|_| bad(format!("'{value}'")))?;
    if range.contains(&n) {
        Ok(n)
    } else {
        Err(bad(n.to_string()))
    }
}

/// Check a product of counts (tasks, messages) against its bound, in 128 bits so that no
/// product wraps; the error names the parameters, the product and the bound.
pub fn check_product(
    workload: &'static str,
    params: &[&'static str],
    what: &str,
    formula: &str,
    factors: &[usize],
    max: u128,
) -> Result<(), ParamError> {
    let product = factors
        .iter()
        .try_fold(1u128, |p, &f| p.checked_mul(f as u128));
    match product {
        Some(p) if p <= max => Ok(()),
        p => Err(ParamError::params(
            workload,
            params,
            format!(
                "ask for {} {what} ({formula}); accepted: at most {max} per repetition",
                p.map_or_else(|| "more than 2^128".to_string(), |p| p.to_string())
            ),
        )),
    }
}

/// Parse a value whose type has its own error message (durations, sizes, enumerations).
pub fn parse_with<T, E: std::fmt::Display>(
    workload: &'static str,
    value: &str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, ParamError> {
    parse(value).map_err(|e| ParamError::whole(workload, e.to_string()))
}

/// The error for a parameter name a preset does not have.
pub fn unknown_param(workload: &'static str, defs: &[ParamDef], name: &str) -> ParamError {
    let names: Vec<&str> = defs.iter().map(|d| d.name).collect();
    ParamError::whole(
        workload,
        format!(
            "no parameter '{name}'; its parameters are: {}{}",
            names.join(", "),
            crate::suggest::did_you_mean(name, names.iter().copied())
        ),
    )
}

/// Knobs a workload gives one of its groups.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupDefault {
    /// The group.
    pub group: &'static str,
    /// The knobs.
    pub knobs: Knobs,
    /// How they combine with the user's `--group` knobs.
    pub kind: DefaultKind,
    /// Where they were written (a workload file's `file:line:column`), for errors.
    pub origin: Option<String>,
}

/// How a workload's knobs for a group combine with the user's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultKind {
    /// Used only when the user gives the group no knobs.
    UnlessGiven,
    /// The user's knobs go over these, knob by knob (a workload file's `nice = 19` stays when
    /// the user adds `cpus=0`).
    Under,
    /// Set because of this parameter, over the user's knobs; a user's policy is an error.
    ForcedBy(&'static str),
    /// Not applied at the start: the group's tasks switch to these (over their knobs) during
    /// the run (a workload file's `set` step). Checked before anything runs as the group's
    /// own knobs are (CPUs against the machine, classes against the policy).
    During,
}

/// What a configuration needs of the machine besides CPUs: `(parameter, bytes)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostNeeds {
    /// Memory it writes (anonymous), and what asks for it.
    pub memory: Option<(SizedBy, usize)>,
    /// Bytes of files it writes in the temporary directory, and the parameter that sizes them.
    pub files: Option<(&'static str, usize)>,
    /// The parameter setting that needs the real kernel's own code ([`crate::Context::path`]:
    /// `dcache=kernel`), so that the simulator refuses the configuration before anything runs.
    pub real_kernel: Option<&'static str>,
    /// The parameter setting only the simulator models (web's `dcache=lock`: a dcache walked
    /// under a modelled `dcache_lock`), so that the real backend refuses the configuration
    /// before anything runs.
    pub simulated: Option<&'static str>,
    /// Programs it runs ([`crate::Context::run_program`]), each looked up in `PATH` before
    /// anything runs, and the Debian line that installs them.
    pub programs: Option<(&'static [&'static str], &'static str)>,
    /// A TCP port on 127.0.0.1 it listens on, and the parameter that names it, checked free
    /// before anything runs (a real web server's `--port`).
    pub port: Option<(&'static str, u16)>,
}

/// What asks for a [`HostNeeds`] amount, for the error that refuses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizedBy {
    /// The parameter that sizes it (interbench's `mem-size`, its memload's buffer).
    Param(&'static str),
    /// A workload file's steps: where each is, what it asks and for how many tasks
    /// (`file:line:column: group 'a' ...`), the largest first.
    Steps(String),
}

#[cfg(test)]
mod tests {
    use super::super::build::Build;
    use super::super::interbench::{BenchKind, Interbench, LoadKind};
    use super::super::web::Web;
    use super::*;
    use std::collections::BTreeMap;

    /// A parameter's value, with a key and a condition of its own.
    #[derive(Default)]
    struct Two {
        a: u32,
        b: u32,
    }

    const A: Param<Two> = Param::new(
        ParamDef::value("a-value", "1", "1", "A."),
        |w, v| parse_count("two", "a-value", v, 0..=9).map(|n| w.a = n as u32),
        |w| w.a.to_string(),
    );

    #[test]
    fn a_param_is_recorded_under_its_key_when_its_condition_holds() {
        let mut w = Two { a: 3, b: 0 };
        assert_eq!(A.entry(&w), Some(("a-value", "3".into())));
        let renamed = A.record_as("a_value");
        assert_eq!(renamed.entry(&w), Some(("a_value", "3".into())));
        let when = A.recorded_when(|w: &Two| w.b > 0).record_as("a_value");
        assert_eq!(when.entry(&w), None);
        w.b = 1;
        assert_eq!(when.entry(&w), Some(("a_value", "3".into())));
        assert_eq!(A.not_recorded().entry(&w), None);
        // The setter is the table's either way.
        (when.set)(&mut w, "7").unwrap();
        assert_eq!(w.a, 7);
        assert!((when.set)(&mut w, "10").is_err());
    }

    /// interbench's record keeps its older keys, and a size or the custom task's settings only
    /// where they apply; web's keeps the computed directory count and leaves out the budget
    /// and the port; build's keeps `real-make` only when given.
    #[test]
    fn the_tables_give_the_records_their_keys() {
        let mut ib = Interbench::with_defaults(4);
        let keys = |p: BTreeMap<String, String>| p.into_keys().collect::<Vec<_>>();
        assert_eq!(
            keys(ib.params()),
            ["bench", "duration", "load", "load_threads", "rt"]
        );
        Preset::set_param(&mut ib, "loads", "memload").unwrap();
        assert_eq!(ib.load, LoadKind::Memload);
        assert_eq!(ib.params()["mem_size"], "1GiB");
        assert!(!ib.params().contains_key("io_size"));
        Preset::set_param(&mut ib, "loads", "write").unwrap();
        Preset::set_param(&mut ib, "bench", "custom").unwrap();
        Preset::set_param(&mut ib, "cpu", "2.5").unwrap();
        assert_eq!(ib.bench, BenchKind::Custom);
        let p = ib.params();
        assert_eq!(
            (p["io_size"].as_str(), p["cpu"].as_str()),
            ("256MiB", "2.5")
        );
        assert_eq!(
            (p["interval"].as_str(), p["load_threads"].as_str()),
            ("10.000ms", "4")
        );
        assert!(!p.contains_key("mem_size"));

        let mut web = Web::with_defaults(2);
        Preset::set_param(&mut web, "connections", "200").unwrap();
        Preset::set_param(&mut web, "port", "8080").unwrap();
        let p = web.params();
        assert_eq!(p["dirs"], web.file_dirs().to_string());
        assert_ne!(p["dirs"], "0");
        assert!(!p.contains_key("port") && !p.contains_key("disk-budget"));
        assert_eq!((p["mix"].as_str(), p["pace"].as_str()), ("static", "on"));

        let mut build = Build::default();
        assert!(!build.params().contains_key("real-make"));
        Preset::set_param(&mut build, "real-make", "true").unwrap();
        assert_eq!(build.params()["real-make"], "true");
        assert_eq!(build.params()["tree"], "1");
    }
}
