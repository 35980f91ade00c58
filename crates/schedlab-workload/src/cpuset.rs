//! A set of CPU numbers, as the `cpus=` knob names them (`0-3,6`). The one representation the
//! workload model, the record and both backends share; each backend converts it at its edge (the
//! real one to a `cpu_set_t`, the simulator to its CPU mask).

use crate::error::ValueError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

/// The highest CPU number a list may name, plus one: Linux's largest `CONFIG_NR_CPUS`. A list
/// is refused before it is expanded past this, so `0-99999999999` costs nothing.
pub const MAX_CPU_NUMBER: usize = 8192;

/// Distinct CPU numbers in increasing order. Serialized as a JSON array of numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "Vec<usize>", into = "Vec<usize>")]
pub struct CpuSet(Vec<usize>);

// The record's schema: the plain array serde writes, with what `new` guarantees of it.
impl schemars::JsonSchema for CpuSet {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CpuSet".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Distinct CPU numbers in increasing order.",
            "type": "array",
            "items": { "type": "integer", "minimum": 0, "maximum": MAX_CPU_NUMBER - 1 },
            "uniqueItems": true
        })
    }
}

impl CpuSet {
    /// The set of the given CPUs (sorted and deduplicated); each must be below
    /// [`MAX_CPU_NUMBER`].
    pub fn from_cpus(cpus: impl IntoIterator<Item = usize>) -> Result<CpuSet, ValueError> {
        let mut v: Vec<usize> = Vec::new();
        for c in cpus {
            if c >= MAX_CPU_NUMBER {
                return Err(ValueError(format!(
                    "CPU {c} is out of range; CPU numbers go up to {}",
                    MAX_CPU_NUMBER - 1
                )));
            }
            v.push(c);
        }
        v.sort_unstable();
        v.dedup();
        Ok(CpuSet(v))
    }

    /// CPUs `0..n`.
    pub fn first(n: usize) -> CpuSet {
        CpuSet((0..n.min(MAX_CPU_NUMBER)).collect())
    }

    /// The CPUs, lowest first.
    pub fn as_slice(&self) -> &[usize] {
        &self.0
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }
}

impl Deref for CpuSet {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = &'a usize;
    type IntoIter = std::slice::Iter<'a, usize>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl TryFrom<Vec<usize>> for CpuSet {
    type Error = ValueError;
    fn try_from(v: Vec<usize>) -> Result<CpuSet, ValueError> {
        CpuSet::from_cpus(v)
    }
}

impl From<CpuSet> for Vec<usize> {
    fn from(s: CpuSet) -> Vec<usize> {
        s.0
    }
}

impl FromStr for CpuSet {
    type Err = ValueError;
    /// Parse a list such as `0-3,6`; a range is checked against [`MAX_CPU_NUMBER`] before it is
    /// expanded.
    fn from_str(s: &str) -> Result<CpuSet, ValueError> {
        let bad = || ValueError(format!("cpus='{s}' is not a CPU list; write e.g. 0-3,6"));
        let too_big = |c: usize| {
            ValueError(format!(
                "cpus='{s}' names CPU {c}; CPU numbers go up to {}",
                MAX_CPU_NUMBER - 1
            ))
        };
        let mut out = Vec::new();
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if !s.is_empty() && parts.iter().any(|p| p.is_empty()) {
            return Err(ValueError(format!(
                "cpus='{s}' has an empty item between commas; write e.g. 0-3,6"
            )));
        }
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (
                    a.parse::<usize>().map_err(|_| bad())?,
                    b.parse::<usize>().map_err(|_| bad())?,
                ),
                None => {
                    let c = part.parse::<usize>().map_err(|_| bad())?;
                    (c, c)
                }
            };
            if a > b {
                return Err(bad());
            }
            if b >= MAX_CPU_NUMBER {
                return Err(too_big(b));
            }
            out.extend(a..=b);
        }
        let distinct = CpuSet::from_cpus(out.iter().copied())?;
        if distinct.len() != out.len() {
            let mut sorted = out;
            sorted.sort_unstable();
            let twice = sorted.windows(2).find(|w| w[0] == w[1]).map_or(0, |w| w[0]);
            return Err(ValueError(format!(
                "cpus='{s}' names CPU {twice} twice; name each CPU once"
            )));
        }
        Ok(distinct)
    }
}

impl fmt::Display for CpuSet {
    /// The compact list form (`0-3,6`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus = &self.0;
        let mut i = 0;
        while i < cpus.len() {
            let mut j = i;
            while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
                j += 1;
            }
            if i > 0 {
                f.write_str(",")?;
            }
            if i == j {
                write!(f, "{}", cpus[i])?;
            } else {
                write!(f, "{}-{}", cpus[i], cpus[j])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_lists() {
        let s: CpuSet = "6,0-3".parse().unwrap();
        assert_eq!(s.as_slice(), [0, 1, 2, 3, 6]);
        assert_eq!(s.to_string(), "0-3,6");
        assert!(s.contains(6) && !s.contains(4));
        assert!("3-1".parse::<CpuSet>().is_err());
        assert!("x".parse::<CpuSet>().is_err());
        assert_eq!(CpuSet::first(3).to_string(), "0-2");
    }

    #[test]
    fn refuses_huge_ranges_before_expanding() {
        let e = "0-99999999999".parse::<CpuSet>().unwrap_err();
        assert!(
            e.0.contains("CPU 99999999999") && e.0.contains("8191"),
            "{e}"
        );
        assert!(CpuSet::from_cpus([9000]).is_err());
        assert!(serde_json::from_str::<CpuSet>("[1, 100000]").is_err());
    }

    #[test]
    fn refuses_empty_items_and_a_cpu_named_twice() {
        let e = "0,,1".parse::<CpuSet>().unwrap_err();
        assert!(e.0.contains("empty item"), "{e}");
        let e = "0-3,2".parse::<CpuSet>().unwrap_err();
        assert!(e.0.contains("CPU 2 twice"), "{e}");
        assert!("0,".parse::<CpuSet>().is_err());
    }

    #[test]
    fn huge_lists_are_refused_at_once() {
        let t = std::time::Instant::now();
        for text in [
            "0-99999999999",
            "0-99999999",
            "99999999",
            "0-18446744073709551615",
        ] {
            assert!(text.parse::<CpuSet>().is_err(), "{text}");
        }
        assert!("0-99999999999999999999999".parse::<CpuSet>().is_err());
        assert!(t.elapsed() < std::time::Duration::from_millis(100));
    }

    #[test]
    fn serializes_as_a_plain_array() {
        let s: CpuSet = "0,2".parse().unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), "[0,2]");
        assert_eq!(serde_json::from_str::<CpuSet>("[2,0]").unwrap(), s);
    }
}
