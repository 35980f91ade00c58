//! Per-group knobs: nice, scheduling policy, EEVDF slice, CPU list, timer slack, as the user
//! writes them (`--group NAME:nice=N,policy=other|batch|idle|fifo:P|rr:P|deadline:R/D/P,slice=DUR,cpus=LIST,timer-slack=DUR|default`).
//!
//! Parsing and validation live here, apart from any backend, so that bad input is rejected
//! before anything starts and both backends receive the same validated values.

use crate::cpuset::CpuSet;
use crate::duration::{format_duration, parse_duration};
use crate::error::{KnobError, ValueError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// What `--group` accepts, quoted in every knob error.
/// The knobs' names, as `--group NAME:KNOB=...` and `--vary GROUP.KNOB=...` take them.
pub const KNOB_NAMES: [&str; 9] = [
    "nice",
    "policy",
    "slice",
    "cpus",
    "mode",
    "util-min",
    "util-max",
    "taskgroup",
    "timer-slack",
];

/// The knobs and their accepted values, as messages list them.
pub const KNOB_HELP: &str = "nice=-20..19, policy=other|batch|idle|fifo:1..99|rr:1..99|deadline:RUNTIME/DEADLINE/PERIOD, slice=0.1ms..100ms, cpus=LIST (e.g. 0-3,6), mode=user|kernel (simulator only), util-min=0..1024, util-max=0..1024 (real kernel with utilization clamping), taskgroup=/NAME[/NAME...] (rt-app's CPU cgroup, created for the run on the real kernel; / is the cgroup schedlab runs in), timer-slack=1ns..1s|default (real kernel: how late a sleep may end, PR_SET_TIMERSLACK; default: the slack schedlab was started with)";

/// Where a task's work runs: in user mode, returning to it after every system call, or in
/// kernel mode, as a kernel thread or a process inside a system call that never returns (an NFS
/// server's nfsd). The difference is when a reschedule takes effect: a request to reschedule
/// (NEEDRESCHED, Linux's `need_resched`) is acted on at the next return to user mode, which a
/// kernel-mode task reaches only by blocking — unless the kernel preempts at once (FreeBSD's
/// `maybe_preempt` under `options PREEMPTION` for an interrupt thread, kern_switch.c; Linux
/// with CONFIG_PREEMPT, which the simulated Linux policies do not model). Simulator only: a real
/// task cannot be put in kernel mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuMode {
    /// An ordinary process or thread (the default).
    User,
    /// A task whose work is all inside the kernel.
    Kernel,
}

impl fmt::Display for CpuMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CpuMode::User => "user",
            CpuMode::Kernel => "kernel",
        })
    }
}

impl FromStr for CpuMode {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s {
            "user" => Ok(CpuMode::User),
            "kernel" => Ok(CpuMode::Kernel),
            _ => Err(ValueError::new(format!(
                "mode '{s}' is not accepted; use user or kernel (kernel: the simulator only)"
            ))),
        }
    }
}

impl Serialize for CpuMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CpuMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

// The record's schema (docs/record.schema.json) describes the text form, as it is written.
impl schemars::JsonSchema for CpuMode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CpuMode".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Where a task's work runs: `user` (an ordinary task) or `kernel` (all its work inside the kernel; simulator only).",
            "type": "string",
            "enum": ["user", "kernel"]
        })
    }
}

/// A Linux scheduling policy with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedPolicy {
    /// SCHED_OTHER (CFS/EEVDF normal).
    Other,
    /// SCHED_BATCH: normal, but never preempts on wakeup.
    Batch,
    /// SCHED_IDLE: runs only when nothing else wants the CPU.
    Idle,
    /// SCHED_FIFO with a real-time priority 1..99.
    Fifo(u8),
    /// SCHED_RR with a real-time priority 1..99.
    Rr(u8),
    /// SCHED_DEADLINE with runtime ≤ deadline ≤ period.
    Deadline {
        /// CPU time per period.
        runtime: Duration,
        /// Relative deadline.
        deadline: Duration,
        /// Period.
        period: Duration,
    },
}

impl SchedPolicy {
    /// Whether this is a real-time class (FIFO, RR, DEADLINE), which can starve the machine.
    pub fn is_realtime(&self) -> bool {
        matches!(
            self,
            SchedPolicy::Fifo(_) | SchedPolicy::Rr(_) | SchedPolicy::Deadline { .. }
        )
    }
    /// Whether this policy belongs to the fair class (nice and slice apply).
    pub fn is_fair(&self) -> bool {
        matches!(
            self,
            SchedPolicy::Other | SchedPolicy::Batch | SchedPolicy::Idle
        )
    }
}

impl fmt::Display for SchedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedPolicy::Other => write!(f, "other"),
            SchedPolicy::Batch => write!(f, "batch"),
            SchedPolicy::Idle => write!(f, "idle"),
            SchedPolicy::Fifo(p) => write!(f, "fifo:{p}"),
            SchedPolicy::Rr(p) => write!(f, "rr:{p}"),
            SchedPolicy::Deadline {
                runtime,
                deadline,
                period,
            } => write!(
                f,
                "deadline:{}/{}/{}",
                format_duration(*runtime),
                format_duration(*deadline),
                format_duration(*period)
            ),
        }
    }
}

impl FromStr for SchedPolicy {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        let bad = || {
            ValueError::new(format!("policy '{s}' is not accepted; use other, batch, idle, fifo:1..99, rr:1..99 or deadline:RUNTIME/DEADLINE/PERIOD (e.g. deadline:1ms/10ms/10ms)"))
        };
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let rt_prio = |a: Option<&str>| -> Result<u8, ValueError> {
            let a = a.ok_or_else(bad)?;
            let is_number = !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit());
            match a.parse::<u8>() {
                Ok(p) if (1..=99).contains(&p) => Ok(p),
                _ if is_number => Err(ValueError::new(format!(
                    "real-time priority '{a}' in policy '{s}' is out of range; accepted: 1..99"
                ))),
                _ => Err(ValueError::new(format!(
                    "real-time priority '{a}' in policy '{s}' is not a whole number; accepted: 1..99"
                ))),
            }
        };
        match (name, arg) {
            ("other" | "normal", None) => Ok(SchedPolicy::Other),
            ("batch", None) => Ok(SchedPolicy::Batch),
            ("idle", None) => Ok(SchedPolicy::Idle),
            ("fifo", a) => Ok(SchedPolicy::Fifo(rt_prio(a)?)),
            ("rr", a) => Ok(SchedPolicy::Rr(rt_prio(a)?)),
            ("deadline", Some(a)) => {
                let parts: Vec<&str> = a.split('/').collect();
                if parts.len() != 3 {
                    return Err(bad());
                }
                let runtime = parse_duration(parts[0])?;
                let deadline = parse_duration(parts[1])?;
                let period = parse_duration(parts[2])?;
                if runtime < Duration::from_micros(1) || runtime > deadline || deadline > period {
                    return Err(ValueError::new(format!(
                        "policy '{s}': SCHED_DEADLINE needs 1us <= runtime <= deadline <= period"
                    )));
                }
                Ok(SchedPolicy::Deadline {
                    runtime,
                    deadline,
                    period,
                })
            }
            _ => Err(bad()),
        }
    }
}

impl Serialize for SchedPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SchedPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

// The record's schema describes the text form `Display` writes and `FromStr` reads back.
impl schemars::JsonSchema for SchedPolicy {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SchedPolicy".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A Linux scheduling policy: `other`, `batch`, `idle`, `fifo:P` or `rr:P` with a real-time priority P of 1..99, or `deadline:RUNTIME/DEADLINE/PERIOD` with durations (`deadline:1ms/10ms/10ms`).",
            "type": "string",
            "pattern": "^(other|normal|batch|idle|(fifo|rr):[1-9][0-9]?|deadline:[^/]+/[^/]+/[^/]+)$"
        })
    }
}

/// The largest timer slack accepted: a bound, as for every duration a knob takes.
pub const MAX_TIMER_SLACK: Duration = Duration::from_secs(1);

/// How late a task's timed sleeps may end (the kernel's per-thread timer slack,
/// PR_SET_TIMERSLACK): a `nanosleep`, `clock_nanosleep`, `poll` or futex timeout of a
/// SCHED_OTHER, BATCH or IDLE thread is armed as a range [t, t + slack] and fires at its end
/// unless another timer interrupt comes within it. Since Linux 6.12 (ed4fb6d7ef68, "hrtimer: Use
/// and report correct timerslack values for realtime tasks") a FIFO, RR or DEADLINE thread has
/// a slack of 0 and the kernel ignores a value set for it; before, the sleep paths ignored it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerSlack {
    /// The slack schedlab itself was started with, which its tasks inherit (the kernel's 50 µs
    /// unless the shell set another): what rt-app's threads sleep with, as rt-app sets none.
    Inherited,
    /// This many nanoseconds, 1 ns to [`MAX_TIMER_SLACK`].
    Ns(u64),
}

impl fmt::Display for TimerSlack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TimerSlack::Inherited => f.write_str("default"),
            // Exact, in the largest unit that divides it: 1ns, 50us, 2ms.
            TimerSlack::Ns(ns) if ns % 1_000_000 == 0 => write!(f, "{}ms", ns / 1_000_000),
            TimerSlack::Ns(ns) if ns % 1_000 == 0 => write!(f, "{}us", ns / 1_000),
            TimerSlack::Ns(ns) => write!(f, "{ns}ns"),
        }
    }
}

impl FromStr for TimerSlack {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        let accepted = "accepted: a duration from 1ns to 1s (e.g. 1ns, 50us), or default (the slack schedlab was started with, normally the kernel's 50us)";
        if s.trim() == "default" {
            return Ok(TimerSlack::Inherited);
        }
        let d = parse_duration(s)
            .map_err(|e| ValueError(format!("timer-slack '{s}': {e}; {accepted}")))?;
        if d.is_zero() || d > MAX_TIMER_SLACK {
            return Err(ValueError(format!(
                "timer-slack '{s}' is out of range; {accepted}"
            )));
        }
        Ok(TimerSlack::Ns(d.as_nanos() as u64))
    }
}

impl Serialize for TimerSlack {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TimerSlack {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

// The record's schema describes the text form `Display` writes and `FromStr` reads back.
impl schemars::JsonSchema for TimerSlack {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TimerSlack".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A timer slack: a duration from 1ns to 1s (`1ns`, `50us`), or `default`, the slack schedlab was started with.",
            "type": "string"
        })
    }
}

/// The knobs of one task group. `None` leaves the kernel's (or policy's) default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Knobs {
    /// Nice value, -20..19.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub nice: Option<i32>,
    /// Scheduling policy.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub policy: Option<SchedPolicy>,
    /// EEVDF custom slice (sched_attr.sched_runtime for a fair task), in nanoseconds.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub slice_ns: Option<u64>,
    /// CPUs the group's tasks may run on.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpus: Option<CpuSet>,
    /// User or kernel mode (simulator only; unset is user).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mode: Option<CpuMode>,
    /// The lowest utilization the kernel assumes of the task (uclamp's `sched_util_min`,
    /// 0..1024: schedutil's frequency and capacity-aware placement read it). Real kernel only,
    /// where it has utilization clamping (CONFIG_UCLAMP_TASK); the simulator models no
    /// utilization signal and ignores it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub util_min: Option<u32>,
    /// The highest utilization the kernel assumes of the task (`sched_util_max`, 0..1024); as
    /// [`Knobs::util_min`].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub util_max: Option<u32>,
    /// rt-app's `taskgroup`: the CPU cgroup the tasks run in, a path from `/` (`/tg1/tg11`).
    /// The real backend creates each one, for the run, below the cgroup schedlab runs in
    /// (`/` is that cgroup itself); no simulated policy has group scheduling.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub taskgroup: Option<String>,
    /// How late the tasks' timed sleeps may end (the thread's timer slack), on the real kernel.
    /// Unset: 1 ns, so that a sleep ends when asked (a benchmark measures scheduling latency,
    /// not the timer's); rt-app files set `default`, the inherited slack rt-app's threads have.
    /// The simulator's timers fire exactly whatever it is.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub timer_slack: Option<TimerSlack>,
}

impl Knobs {
    /// Whether no knob is set.
    pub fn is_default(&self) -> bool {
        *self == Knobs::default()
    }

    /// The slice as a duration.
    pub fn slice(&self) -> Option<Duration> {
        self.slice_ns.map(Duration::from_nanos)
    }

    /// Whether the group's tasks run in kernel mode (`mode=kernel`).
    pub fn kernel_mode(&self) -> bool {
        self.mode == Some(CpuMode::Kernel)
    }

    /// Check the knobs against each other and against a machine with `online_cpus` CPUs.
    /// The error names the value and what is accepted.
    pub fn validate(&self, group: &str, online_cpus: usize) -> Result<(), KnobError> {
        let invalid = |problem: String| KnobError::Invalid {
            group: group.to_string(),
            problem,
        };
        if let Some(n) = self.nice {
            if !(-20..=19).contains(&n) {
                return Err(invalid(format!(
                    "nice={n} is out of range; accepted: -20..19"
                )));
            }
        }
        let policy = self.policy.unwrap_or(SchedPolicy::Other);
        if self.nice.is_some() && !policy.is_fair() {
            return Err(invalid(format!(
                "nice applies to policies other, batch and idle, not {policy}"
            )));
        }
        if self.taskgroup.is_some() && !policy.is_fair() {
            // rt-app's check_taskgroup_policy_dep: "No taskgroup support for policy".
            return Err(invalid(format!(
                "taskgroup applies to policies other, batch and idle, not {policy} (rt-app refuses it too: the cpu controller's groups share fair time)"
            )));
        }
        if let Some(slice) = self.slice() {
            if !policy.is_fair() {
                return Err(invalid(format!(
                    "slice applies to policies other, batch and idle, not {policy}"
                )));
            }
            if slice < Duration::from_micros(100) || slice > Duration::from_millis(100) {
                return Err(invalid(format!(
                    "slice={} is out of range; accepted: 0.1ms..100ms",
                    format_duration(slice)
                )));
            }
        }
        for (name, v) in [("util-min", self.util_min), ("util-max", self.util_max)] {
            match v {
                Some(v) if v > 1024 => {
                    return Err(invalid(format!(
                        "{name}={v} is out of range; accepted: 0..1024"
                    )))
                }
                Some(_) if matches!(policy, SchedPolicy::Deadline { .. }) => {
                    return Err(invalid(format!(
                        "{name} applies to policies other, batch, idle, fifo and rr, not {policy}"
                    )))
                }
                _ => {}
            }
        }
        if let (Some(lo), Some(hi)) = (self.util_min, self.util_max) {
            if lo > hi {
                return Err(invalid(format!(
                    "util-min={lo} is above util-max={hi}; the kernel refuses a minimum above the maximum"
                )));
            }
        }
        if let Some(cpus) = &self.cpus {
            if cpus.is_empty() {
                return Err(invalid("cpus= is empty; give a list such as 0-1".into()));
            }
            if let Some(bad) = cpus.iter().find(|&&c| c >= online_cpus) {
                return Err(invalid(format!(
                    "cpus= names CPU {bad}, but this machine has CPUs 0-{}",
                    online_cpus.saturating_sub(1)
                )));
            }
            if matches!(policy, SchedPolicy::Deadline { .. }) {
                return Err(invalid(
                    "SCHED_DEADLINE tasks cannot be pinned with cpus= (the kernel refuses a restricted affinity for them)".into(),
                ));
            }
        }
        Ok(())
    }
}

impl Knobs {
    /// These knobs with every knob `over` sets replacing this one's (a sweep's `server.nice=19`
    /// over the command line's `--group server:...`).
    pub fn merged(&self, over: &Knobs) -> Knobs {
        Knobs {
            nice: over.nice.or(self.nice),
            policy: over.policy.or(self.policy),
            slice_ns: over.slice_ns.or(self.slice_ns),
            cpus: over.cpus.clone().or_else(|| self.cpus.clone()),
            mode: over.mode.or(self.mode),
            util_min: over.util_min.or(self.util_min),
            util_max: over.util_max.or(self.util_max),
            taskgroup: over.taskgroup.clone().or_else(|| self.taskgroup.clone()),
            timer_slack: over.timer_slack.or(self.timer_slack),
        }
    }
}

impl fmt::Display for Knobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(n) = self.nice {
            parts.push(format!("nice={n}"));
        }
        if let Some(p) = &self.policy {
            parts.push(format!("policy={p}"));
        }
        if let Some(s) = self.slice() {
            parts.push(format!("slice={}", format_duration(s)));
        }
        if let Some(c) = &self.cpus {
            parts.push(format!("cpus={c}"));
        }
        if let Some(m) = self.mode {
            parts.push(format!("mode={m}"));
        }
        if let Some(u) = self.util_min {
            parts.push(format!("util-min={u}"));
        }
        if let Some(u) = self.util_max {
            parts.push(format!("util-max={u}"));
        }
        if let Some(t) = &self.taskgroup {
            parts.push(format!("taskgroup={t}"));
        }
        if let Some(t) = self.timer_slack {
            parts.push(format!("timer-slack={t}"));
        }
        if parts.is_empty() {
            write!(f, "default")
        } else {
            write!(f, "{}", parts.join(","))
        }
    }
}

/// Format CPU numbers as a compact list (`0-3,6`); see [`CpuSet`]'s `Display`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    CpuSet::from_cpus(cpus.iter().copied())
        .map(|s| s.to_string())
        .unwrap_or_default()
}

/// Parse a CPU list such as `0-3,6` into sorted, distinct CPU numbers (see [`CpuSet`]).
pub fn parse_cpu_list(s: &str) -> Result<CpuSet, ValueError> {
    s.parse()
}

/// Parse one group argument, `NAME:knob=value,...`, into the group name and its knobs.
/// A CPU list may contain commas (`cpus=0,2,policy=batch`): tokens without `=` that follow
/// `cpus=` belong to the list.
pub fn parse_group_arg(arg: &str) -> Result<(String, Knobs), KnobError> {
    let (name, rest) = arg
        .split_once(':')
        .ok_or_else(|| KnobError::Form { arg: arg.into() })?;
    if name.is_empty() {
        return Err(KnobError::EmptyName { arg: arg.into() });
    }
    let mut knobs = Knobs::default();
    let mut cpu_text: Option<String> = None;
    let tokens: Vec<&str> = rest.split(',').map(str::trim).collect();
    if !rest.is_empty() && tokens.iter().any(|t| t.is_empty()) {
        return Err(KnobError::EmptyItem { arg: arg.into() });
    }
    let mut seen: Vec<&str> = Vec::new();
    for token in tokens.into_iter().filter(|t| !t.is_empty()) {
        let Some((key, value)) = token.split_once('=') else {
            match &mut cpu_text {
                Some(list) => {
                    list.push(',');
                    list.push_str(token);
                    continue;
                }
                None => {
                    return Err(KnobError::NotKeyValue {
                        arg: arg.into(),
                        token: token.into(),
                    })
                }
            }
        };
        if seen.contains(&key) {
            return Err(KnobError::GivenTwice {
                arg: arg.into(),
                knob: key.into(),
            });
        }
        seen.push(key);
        if key != "cpus" {
            if let Some(list) = cpu_text.take() {
                knobs.cpus = Some(parse_cpu_list(&list)?);
            }
        }
        match key {
            "cpus" => cpu_text = Some(value.to_string()),
            _ => set_knob(&mut knobs, key, value).map_err(|fault| match fault {
                KnobFault::NiceNotInteger => KnobError::NiceNotInteger {
                    arg: arg.into(),
                    value: value.into(),
                },
                KnobFault::Unknown => KnobError::UnknownKnob {
                    arg: arg.into(),
                    knob: key.into(),
                },
                KnobFault::Value(e) => KnobError::Value(e),
            })?,
        }
    }
    if let Some(list) = cpu_text {
        knobs.cpus = Some(parse_cpu_list(&list)?);
    }
    Ok((name.to_string(), knobs))
}

/// Parse one knob, `key=value`, into knobs with only that knob set (a sweep's `server.nice=19`).
pub fn parse_knob(key: &str, value: &str) -> Result<Knobs, KnobError> {
    let mut knobs = Knobs::default();
    set_knob(&mut knobs, key, value).map_err(|fault| match fault {
        KnobFault::NiceNotInteger => KnobError::Value(ValueError(format!(
            "nice='{value}' is not an integer; accepted: -20..19"
        ))),
        KnobFault::Unknown => KnobError::Value(ValueError(format!(
            "unknown knob '{key}'; knobs: {KNOB_HELP}{}",
            crate::suggest::did_you_mean(key, KNOB_NAMES)
        ))),
        KnobFault::Value(e) => KnobError::Value(e),
    })?;
    Ok(knobs)
}

/// Why one `key=value` does not set a knob; the caller words it for where it came from.
enum KnobFault {
    /// `nice=` is not an integer.
    NiceNotInteger,
    /// No such knob.
    Unknown,
    /// The value does not parse.
    Value(ValueError),
}

/// Set the knob `key` of `knobs` from `value` (`cpus=` as one complete list).
fn set_knob(knobs: &mut Knobs, key: &str, value: &str) -> Result<(), KnobFault> {
    match key {
        "nice" => knobs.nice = Some(value.parse().map_err(|_| KnobFault::NiceNotInteger)?),
        "policy" => knobs.policy = Some(value.parse().map_err(KnobFault::Value)?),
        "slice" => {
            let slice = parse_duration(value).map_err(KnobFault::Value)?;
            knobs.slice_ns = Some(slice.as_nanos() as u64);
        }
        "cpus" => knobs.cpus = Some(parse_cpu_list(value).map_err(KnobFault::Value)?),
        "mode" => knobs.mode = Some(value.parse().map_err(KnobFault::Value)?),
        "util-min" | "util-max" => {
            let v: u32 = value.parse().map_err(|_| {
                KnobFault::Value(ValueError(format!(
                    "{key}='{value}' is not a whole number; accepted: 0..1024"
                )))
            })?;
            if key == "util-min" {
                knobs.util_min = Some(v);
            } else {
                knobs.util_max = Some(v);
            }
        }
        "taskgroup" => {
            knobs.taskgroup = Some(parse_taskgroup(value).map_err(KnobFault::Value)?);
        }
        "timer-slack" => knobs.timer_slack = Some(value.parse().map_err(KnobFault::Value)?),
        _ => return Err(KnobFault::Unknown),
    }
    Ok(())
}

/// Most levels a taskgroup path may have: a bound, so that creating and removing them is too.
pub const MAX_TASKGROUP_DEPTH: usize = 8;

/// Check a taskgroup path as rt-app takes it (`parse_taskgroup_data`: it must start with `/`)
/// and as a directory name can hold it: `/`, or `/`-separated names of letters, digits, `_`,
/// `-` and `.` (not `.` or `..`), at most [`MAX_TASKGROUP_DEPTH`] of them. Repeated and
/// trailing slashes are dropped, as rt-app's `cgroup_mkdir` skips them.
pub fn parse_taskgroup(value: &str) -> Result<String, ValueError> {
    let bad = |why: &str| {
        ValueError(format!(
            "taskgroup='{value}' {why}; accepted: / or /NAME[/NAME...] (names of letters, digits, _ - and ., at most {MAX_TASKGROUP_DEPTH} levels)"
        ))
    };
    if !value.starts_with('/') {
        return Err(bad("does not start with / (rt-app refuses it too)"));
    }
    let names: Vec<&str> = value.split('/').filter(|n| !n.is_empty()).collect();
    if names.len() > MAX_TASKGROUP_DEPTH {
        return Err(bad("is too deep"));
    }
    for n in &names {
        if *n == "." || *n == ".." {
            return Err(bad(&format!("names the directory '{n}'")));
        }
        if let Some(c) = n
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        {
            return Err(bad(&format!("contains {c:?}")));
        }
    }
    Ok(format!("/{}", names.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taskgroups_are_paths_from_the_root_as_rt_app_takes_them() {
        let (_, k) = parse_group_arg("g:taskgroup=/tg1//tg11/").unwrap();
        assert_eq!(k.taskgroup.as_deref(), Some("/tg1/tg11"));
        assert_eq!(k.to_string(), "taskgroup=/tg1/tg11");
        assert_eq!(parse_taskgroup("/").unwrap(), "/");
        for (bad, why) in [
            ("tg1", "does not start with /"),
            ("/a/../b", "names the directory '..'"),
            ("/a b", "contains ' '"),
            ("/a/b/c/d/e/f/g/h/i", "too deep"),
        ] {
            let e = parse_taskgroup(bad).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("accepted: /"), "{bad}: {e}");
        }
        let fifo = Knobs {
            policy: Some(SchedPolicy::Fifo(10)),
            ..k.clone()
        };
        let e = fifo.validate("g", 4).unwrap_err().to_string();
        assert!(
            e.contains("taskgroup applies to policies other, batch and idle"),
            "{e}"
        );
        assert!(k.validate("g", 4).is_ok());
    }

    #[test]
    fn timer_slacks_are_durations_or_default_and_bounded() {
        let (_, k) = parse_group_arg("g:timer-slack=50us,nice=1").unwrap();
        assert_eq!(k.timer_slack, Some(TimerSlack::Ns(50_000)));
        assert_eq!(k.to_string(), "nice=1,timer-slack=50us");
        let (_, k) = parse_group_arg("g:timer-slack=default").unwrap();
        assert_eq!(k.timer_slack, Some(TimerSlack::Inherited));
        assert_eq!(k.to_string(), "timer-slack=default");
        for (text, shown) in [
            ("1ns", "1ns"),
            ("1.5us", "1500ns"),
            ("2ms", "2ms"),
            ("1s", "1000ms"),
        ] {
            let slack: TimerSlack = text.parse().unwrap();
            assert_eq!(slack.to_string(), shown);
            assert_eq!(shown.parse::<TimerSlack>().unwrap(), slack);
        }
        let json = serde_json::to_string(&k).unwrap();
        assert_eq!(json, r#"{"timer_slack":"default"}"#);
        assert_eq!(serde_json::from_str::<Knobs>(&json).unwrap(), k);
        for bad in ["0", "0ns", "2s", "-1us", "soon", "50"] {
            let e = parse_knob("timer-slack", bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("timer-slack '{bad}'"))
                    && e.contains("1ns to 1s")
                    && e.contains("default"),
                "{bad}: {e}"
            );
        }
        // A knob like the others: `--group` over a file's.
        let file = Knobs {
            timer_slack: Some(TimerSlack::Inherited),
            ..Knobs::default()
        };
        let (_, user) = parse_group_arg("g:timer-slack=1ns").unwrap();
        assert_eq!(file.merged(&user).timer_slack, Some(TimerSlack::Ns(1)));
        assert_eq!(
            file.merged(&Knobs::default()).timer_slack,
            Some(TimerSlack::Inherited)
        );
    }

    #[test]
    fn parses_every_knob() {
        let (g, k) = parse_group_arg("sender:nice=19,policy=batch,slice=0.3ms,cpus=0,1").unwrap();
        assert_eq!(g, "sender");
        assert_eq!(k.nice, Some(19));
        assert_eq!(k.policy, Some(SchedPolicy::Batch));
        assert_eq!(k.slice(), Some(Duration::from_micros(300)));
        assert_eq!(k.cpus.as_deref(), Some(&[0, 1][..]));
        let (_, k) = parse_group_arg("x:cpus=0-2,5,policy=fifo:50").unwrap();
        assert_eq!(k.cpus.as_deref(), Some(&[0, 1, 2, 5][..]));
        assert_eq!(k.policy, Some(SchedPolicy::Fifo(50)));
        let (_, k) = parse_group_arg("x:policy=deadline:1ms/5ms/10ms").unwrap();
        assert!(matches!(k.policy, Some(SchedPolicy::Deadline { .. })));
        let (_, k) = parse_group_arg("nfsd:mode=kernel,nice=0").unwrap();
        assert!(k.kernel_mode());
        assert_eq!(k.to_string(), "nice=0,mode=kernel");
        let e = parse_group_arg("g:mode=supervisor")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'supervisor'") && e.contains("user or kernel"),
            "{e}"
        );
    }

    #[test]
    fn utilization_clamps_parse_and_are_checked() {
        let (_, k) = parse_group_arg("g:util-min=128,util-max=512").unwrap();
        assert_eq!((k.util_min, k.util_max), (Some(128), Some(512)));
        assert_eq!(k.to_string(), "util-min=128,util-max=512");
        assert!(k.validate("g", 2).is_ok());
        let bad = |arg: &str| {
            let (_, k) = parse_group_arg(arg).unwrap();
            k.validate("g", 2).unwrap_err().to_string()
        };
        assert!(bad("g:util-max=2000").contains("0..1024"));
        assert!(bad("g:util-min=600,util-max=500").contains("above util-max=500"));
        assert!(bad("g:policy=deadline:1ms/5ms/10ms,util-min=1").contains("not deadline"));
        assert!(parse_group_arg("g:util-min=x")
            .unwrap_err()
            .to_string()
            .contains("0..1024"));
    }

    #[test]
    fn round_trips_through_display() {
        let (_, k) = parse_group_arg("g:nice=-5,policy=rr:10,cpus=0-3,6").unwrap();
        let (_, again) = parse_group_arg(&format!("g:{k}")).unwrap();
        assert_eq!(k, again);
        let json = serde_json::to_string(&k).unwrap();
        assert_eq!(serde_json::from_str::<Knobs>(&json).unwrap(), k);
    }

    #[test]
    fn rejects_bad_values_with_what_is_accepted() {
        let (_, k) = parse_group_arg("g:nice=25").unwrap();
        let e = k.validate("g", 2).unwrap_err().to_string();
        assert!(e.contains("nice=25") && e.contains("-20..19"), "{e}");
        let (_, k) = parse_group_arg("g:cpus=0-7").unwrap();
        let e = k.validate("g", 2).unwrap_err().to_string();
        assert!(e.contains("CPU 2") && e.contains("0-1"), "{e}");
        let e = parse_group_arg("g:colour=red").unwrap_err().to_string();
        assert!(
            e.contains("unknown knob 'colour'") && e.contains("nice="),
            "{e}"
        );
        let e = parse_group_arg("g:policy=fifo:100")
            .unwrap_err()
            .to_string();
        assert!(e.contains("1..99") && e.contains("out of range"), "{e}");
        let e = parse_group_arg("g:policy=fifo:abc")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'abc'") && e.contains("not a whole number") && e.contains("1..99"),
            "{e}"
        );
        let e = parse_group_arg("g:policy=deadline:10ms/5ms/10ms")
            .unwrap_err()
            .to_string();
        assert!(e.contains("runtime <= deadline"), "{e}");
        let (_, k) = parse_group_arg("g:policy=fifo:5,nice=3").unwrap();
        assert!(k.validate("g", 2).is_err());
        let (_, k) = parse_group_arg("g:slice=1s").unwrap();
        assert!(k
            .validate("g", 2)
            .unwrap_err()
            .to_string()
            .contains("0.1ms..100ms"));
        assert!(parse_group_arg("nocolon").is_err());
        // Issue 13: duplicates and empty items were accepted silently.
        let e = parse_group_arg("g:nice=1,nice=2").unwrap_err();
        assert!(
            matches!(&e, KnobError::GivenTwice { knob, .. } if knob == "nice"),
            "{e:?}"
        );
        assert!(e.to_string().contains("nice= is given twice"), "{e}");
        assert!(parse_group_arg("g:cpus=0,cpus=1").is_err());
        let e = parse_group_arg("g:cpus=0,,1").unwrap_err();
        assert!(matches!(e, KnobError::EmptyItem { .. }), "{e:?}");
        assert!(parse_group_arg("g:cpus=0,1,0").is_err());
        let e = parse_group_arg("sender:cpus=0-99999999999")
            .unwrap_err()
            .to_string();
        assert!(e.contains("8191"), "{e}");
        assert!(parse_cpu_list("3-1").is_err());
    }
}
