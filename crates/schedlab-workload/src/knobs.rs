//! Per-group knobs: nice, scheduling policy, EEVDF slice and CPU list, as the user writes them
//! (`--group NAME:nice=N,policy=other|batch|idle|fifo:P|rr:P|deadline:R/D/P,slice=DUR,cpus=LIST`).
//!
//! Parsing and validation live here, apart from any backend, so that bad input is rejected
//! before anything starts and both backends receive the same validated values.

use crate::duration::{format_duration, parse_duration};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// What `--group` accepts, quoted in every knob error.
pub const KNOB_HELP: &str = "nice=-20..19, policy=other|batch|idle|fifo:1..99|rr:1..99|deadline:RUNTIME/DEADLINE/PERIOD, slice=0.1ms..100ms, cpus=LIST (e.g. 0-3,6)";

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
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("policy '{s}' is not accepted; use other, batch, idle, fifo:1..99, rr:1..99 or deadline:RUNTIME/DEADLINE/PERIOD (e.g. deadline:1ms/10ms/10ms)")
        };
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let rt_prio = |a: Option<&str>| -> Result<u8, String> {
            let a = a.ok_or_else(bad)?;
            match a.parse::<u8>() {
                Ok(p) if (1..=99).contains(&p) => Ok(p),
                _ => Err(format!(
                    "real-time priority '{a}' in policy '{s}' is out of range; accepted: 1..99"
                )),
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
                    return Err(format!(
                        "policy '{s}': SCHED_DEADLINE needs 1us <= runtime <= deadline <= period"
                    ));
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

/// The knobs of one task group. `None` leaves the kernel's (or policy's) default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    pub cpus: Option<Vec<usize>>,
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

    /// Check the knobs against each other and against a machine with `online_cpus` CPUs.
    /// The error names the value and what is accepted.
    pub fn validate(&self, group: &str, online_cpus: usize) -> Result<(), String> {
        if let Some(n) = self.nice {
            if !(-20..=19).contains(&n) {
                return Err(format!(
                    "group '{group}': nice={n} is out of range; accepted: -20..19"
                ));
            }
        }
        let policy = self.policy.unwrap_or(SchedPolicy::Other);
        if self.nice.is_some() && !policy.is_fair() {
            return Err(format!(
                "group '{group}': nice applies to policies other, batch and idle, not {policy}"
            ));
        }
        if let Some(slice) = self.slice() {
            if !policy.is_fair() {
                return Err(format!(
                    "group '{group}': slice applies to policies other, batch and idle, not {policy}"
                ));
            }
            if slice < Duration::from_micros(100) || slice > Duration::from_millis(100) {
                return Err(format!(
                    "group '{group}': slice={} is out of range; accepted: 0.1ms..100ms",
                    format_duration(slice)
                ));
            }
        }
        if let Some(cpus) = &self.cpus {
            if cpus.is_empty() {
                return Err(format!(
                    "group '{group}': cpus= is empty; give a list such as 0-1"
                ));
            }
            if let Some(bad) = cpus.iter().find(|&&c| c >= online_cpus) {
                return Err(format!(
                    "group '{group}': cpus= names CPU {bad}, but this machine has CPUs 0-{}",
                    online_cpus.saturating_sub(1)
                ));
            }
            if matches!(policy, SchedPolicy::Deadline { .. }) {
                return Err(format!(
                    "group '{group}': SCHED_DEADLINE tasks cannot be pinned with cpus= (the kernel refuses a restricted affinity for them)"
                ));
            }
        }
        Ok(())
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
            parts.push(format!("cpus={}", format_cpu_list(c)));
        }
        if parts.is_empty() {
            write!(f, "default")
        } else {
            write!(f, "{}", parts.join(","))
        }
    }
}

/// Parse a CPU list such as `0-3,6` into sorted, distinct CPU numbers.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("cpus='{s}' is not a CPU list; write e.g. 0-3,6");
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.parse().map_err(|_| bad())?;
            let b: usize = b.parse().map_err(|_| bad())?;
            if a > b {
                return Err(bad());
            }
            out.extend(a..=b);
        } else {
            out.push(part.parse().map_err(|_| bad())?);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Format CPU numbers as a compact list (`0-3,6`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Parse one `--group NAME:knob=value,...` argument into the group name and its knobs.
/// A CPU list may contain commas (`cpus=0,2,policy=batch`): tokens without `=` that follow
/// `cpus=` belong to the list.
pub fn parse_group_arg(arg: &str) -> Result<(String, Knobs), String> {
    let (name, rest) = arg.split_once(':').ok_or_else(|| {
        format!("--group '{arg}' needs the form NAME:knob=value,...; knobs: {KNOB_HELP}")
    })?;
    if name.is_empty() {
        return Err(format!("--group '{arg}': the group name is empty"));
    }
    let mut knobs = Knobs::default();
    let mut cpu_text: Option<String> = None;
    for token in rest.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let Some((key, value)) = token.split_once('=') else {
            match &mut cpu_text {
                Some(list) => {
                    list.push(',');
                    list.push_str(token);
                    continue;
                }
                None => {
                    return Err(format!(
                        "--group '{arg}': '{token}' is not knob=value; knobs: {KNOB_HELP}"
                    ))
                }
            }
        };
        if key != "cpus" {
            if let Some(list) = cpu_text.take() {
                knobs.cpus = Some(parse_cpu_list(&list)?);
            }
        }
        match key {
            "nice" => {
                let n: i32 = value.parse().map_err(|_| {
                    format!("--group '{arg}': nice='{value}' is not an integer; accepted: -20..19")
                })?;
                knobs.nice = Some(n);
            }
            "policy" => knobs.policy = Some(value.parse()?),
            "slice" => knobs.slice_ns = Some(parse_duration(value)?.as_nanos() as u64),
            "cpus" => cpu_text = Some(value.to_string()),
            other => {
                return Err(format!(
                    "--group '{arg}': unknown knob '{other}'; knobs: {KNOB_HELP}"
                ))
            }
        }
    }
    if let Some(list) = cpu_text {
        knobs.cpus = Some(parse_cpu_list(&list)?);
    }
    Ok((name.to_string(), knobs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_knob() {
        let (g, k) = parse_group_arg("sender:nice=19,policy=batch,slice=0.3ms,cpus=0,1").unwrap();
        assert_eq!(g, "sender");
        assert_eq!(k.nice, Some(19));
        assert_eq!(k.policy, Some(SchedPolicy::Batch));
        assert_eq!(k.slice(), Some(Duration::from_micros(300)));
        assert_eq!(k.cpus, Some(vec![0, 1]));
        let (_, k) = parse_group_arg("x:cpus=0-2,5,policy=fifo:50").unwrap();
        assert_eq!(k.cpus, Some(vec![0, 1, 2, 5]));
        assert_eq!(k.policy, Some(SchedPolicy::Fifo(50)));
        let (_, k) = parse_group_arg("x:policy=deadline:1ms/5ms/10ms").unwrap();
        assert!(matches!(k.policy, Some(SchedPolicy::Deadline { .. })));
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
        let e = k.validate("g", 2).unwrap_err();
        assert!(e.contains("nice=25") && e.contains("-20..19"), "{e}");
        let (_, k) = parse_group_arg("g:cpus=0-7").unwrap();
        let e = k.validate("g", 2).unwrap_err();
        assert!(e.contains("CPU 2") && e.contains("0-1"), "{e}");
        let e = parse_group_arg("g:colour=red").unwrap_err();
        assert!(
            e.contains("unknown knob 'colour'") && e.contains("nice="),
            "{e}"
        );
        let e = parse_group_arg("g:policy=fifo:100").unwrap_err();
        assert!(e.contains("1..99"), "{e}");
        let e = parse_group_arg("g:policy=deadline:10ms/5ms/10ms").unwrap_err();
        assert!(e.contains("runtime <= deadline"), "{e}");
        let (_, k) = parse_group_arg("g:policy=fifo:5,nice=3").unwrap();
        assert!(k.validate("g", 2).is_err());
        let (_, k) = parse_group_arg("g:slice=1s").unwrap();
        assert!(k.validate("g", 2).unwrap_err().contains("0.1ms..100ms"));
        assert!(parse_group_arg("nocolon").is_err());
        assert!(parse_cpu_list("3-1").is_err());
    }
}
