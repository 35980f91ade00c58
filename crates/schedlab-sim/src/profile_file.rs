//! Cost profiles in files: what `schedlab calibrate` writes and `--profile FILE` reads. A file
//! names the built-in profile it starts from, the keys it sets (in `--cost`'s syntax, so every
//! value goes through the same checks) and, for each measured key, its 95 % confidence interval,
//! the samples and how it was measured:
//!
//! ```toml
//! name = "here"
//! base = "modern"
//! note = "schedlab calibrate on host x, Linux 6.12, 2 CPUs, 2026-11-24"
//!
//! [costs]
//! syscall = "152ns"
//! hz = "250"
//!
//! [measured.syscall]
//! ci95 = "3ns"
//! samples = 12
//! method = "getppid(2) in batches of 100000"
//! ```
//!
//! Unknown fields and unknown cost keys are refused, with the file named. A key the file does
//! not set keeps its base profile's value — so a file written before a key existed still loads
//! (e.g. `sock_queue`, `net_wait` or `net_ack`, added after the first calibrated files: 0,
//! charged as before them — `net_ack` 0 charges every TCP receive the whole `net_msg`).

use crate::cost::{CostError, CostModel, PROFILES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A cost profile file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileFile {
    /// The profile's name in records and tables (the file's stem when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The built-in profile whose values the keys not set here keep.
    pub base: String,
    /// Free text: where and when it was measured.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// The keys this file sets, as `--cost` takes them (`1.5us`, `1GiB`, `250`).
    #[serde(default)]
    pub costs: BTreeMap<String, String>,
    /// How each measured key was measured.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub measured: BTreeMap<String, Measurement>,
    /// Keys that could not be measured here, and why (they keep the base profile's value).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_measured: BTreeMap<String, String>,
}

/// How one key was measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    /// Half-width of the 95 % confidence interval of the value, in the value's unit.
    pub ci95: String,
    /// Samples (each a batch of operations) the value is the mean of.
    pub samples: usize,
    /// What was timed.
    pub method: String,
}

/// Why a profile file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ProfileFileError {
    /// Neither a built-in profile nor a readable file.
    #[error("--profile {spec}: not a profile ({}) and not a readable file: {error}", PROFILES.join(", "))]
    Unreadable {
        /// What was given.
        spec: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// Not TOML of the expected shape.
    #[error("{}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A key or value the cost model refuses.
    #[error("{}: {error}", path.display())]
    Cost {
        /// The file.
        path: PathBuf,
        /// The cost model's message.
        error: CostError,
    },
}

impl ProfileFile {
    /// Parse a profile file's text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<ProfileFile, ProfileFileError> {
        toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            ProfileFileError::Syntax {
                path: path.into(),
                message: match line {
                    Some(l) => format!("line {l}: {}", e.message()),
                    None => e.message().to_string(),
                },
            }
        })
    }

    /// The cost model this file describes: its base profile with its keys applied.
    pub fn cost_model(&self, path: &Path) -> Result<CostModel, ProfileFileError> {
        let cost_err = |error| ProfileFileError::Cost {
            path: path.into(),
            error,
        };
        let overrides: Vec<String> = self.costs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut model = CostModel::profile(&self.base)
            .and_then(|m| m.with_overrides(&overrides))
            .map_err(cost_err)?;
        model.profile = self.name.clone().unwrap_or_else(|| {
            path.file_stem()
                .map_or("file".into(), |s| s.to_string_lossy().into_owned())
        });
        Ok(model)
    }

    /// The file's text (`schedlab calibrate` writes it through the one output writer,
    /// `schedlab_report::output`).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a profile file serializes")
    }
}

/// The cost model `--profile SPEC` names: a built-in profile, or a profile file.
pub fn load_profile(spec: &str) -> Result<CostModel, ProfileFileError> {
    if PROFILES.contains(&spec) {
        return Ok(CostModel::profile(spec).expect("a built-in profile"));
    }
    let path = Path::new(spec);
    let text = std::fs::read_to_string(path).map_err(|error| ProfileFileError::Unreadable {
        spec: spec.into(),
        error,
    })?;
    ProfileFile::parse(&text, path)?.cost_model(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skb::SMALL_TRUESIZE;

    fn sample() -> ProfileFile {
        ProfileFile {
            name: Some("here".into()),
            base: "modern".into(),
            note: "test".into(),
            costs: BTreeMap::from([
                ("syscall".to_string(), "152ns".to_string()),
                ("hz".to_string(), "1000".to_string()),
            ]),
            measured: BTreeMap::from([(
                "syscall".to_string(),
                Measurement {
                    ci95: "3ns".into(),
                    samples: 12,
                    method: "getppid".into(),
                },
            )]),
            not_measured: BTreeMap::from([("migration".to_string(), "no way".to_string())]),
        }
    }

    #[test]
    fn a_profile_file_round_trips_and_sets_its_keys_over_its_base() {
        let f = sample();
        let text = f.to_toml();
        let back = ProfileFile::parse(&text, Path::new("here.toml")).unwrap();
        assert_eq!(back, f);
        let m = back.cost_model(Path::new("here.toml")).unwrap();
        assert_eq!((m.syscall, m.hz), (152, 1000));
        assert_eq!(m.switch, CostModel::profile("modern").unwrap().switch);
        assert_eq!(m.profile, "here");
    }

    /// A file written before `sock_queue` existed loads with its base's 0 (the simulator then
    /// charges socket messages as before); a newer one sets it, and a bad value is refused.
    #[test]
    fn sock_queue_defaults_to_0_in_older_files_and_is_set_by_newer_ones() {
        let p = Path::new("old.toml");
        let old = ProfileFile::parse("base = \"modern\"\n[costs]\nsock_msg = \"723ns\"\n", p)
            .unwrap()
            .cost_model(p)
            .unwrap();
        assert_eq!((old.sock_msg, old.sock_queue), (723, 0));
        assert_eq!(old.sock_queue_cost(5_040 * SMALL_TRUESIZE), 0);
        let new = ProfileFile::parse("base = \"modern\"\n[costs]\nsock_queue = \"80ns\"\n", p)
            .unwrap()
            .cost_model(p)
            .unwrap();
        assert_eq!(new.sock_queue, 80);
        assert_eq!(new.sock_queue_cost(64 * SMALL_TRUESIZE), 0);
        assert_eq!(new.sock_queue_cost(256 * SMALL_TRUESIZE), 160);
        assert!(new.to_string().contains(" sock_queue=80"), "{new}");
        let bad = ProfileFile::parse("base = \"modern\"\n[costs]\nsock_queue = \"fast\"\n", p)
            .unwrap()
            .cost_model(p)
            .unwrap_err()
            .to_string();
        assert!(bad.contains("sock_queue") && bad.contains("fast"), "{bad}");
    }

    #[test]
    fn bad_files_are_refused_with_the_file_and_the_reason() {
        let p = Path::new("x.toml");
        let e = ProfileFile::parse("base = \"modern\"\nwarp = 1\n", p).unwrap_err();
        assert!(
            e.to_string().contains("x.toml") && e.to_string().contains("warp"),
            "{e}"
        );
        let f = ProfileFile::parse("base = \"modern\"\n[costs]\nwarp = \"1ns\"\n", p).unwrap();
        let e = f.cost_model(p).unwrap_err().to_string();
        assert!(e.contains("unknown key 'warp'"), "{e}");
        let f = ProfileFile::parse("base = \"modern\"\n[costs]\nswitch = \"fast\"\n", p).unwrap();
        let e = f.cost_model(p).unwrap_err().to_string();
        assert!(e.contains("switch=fast"), "{e}");
        let f = ProfileFile::parse("base = \"pdp-11\"\n", p).unwrap();
        let e = f.cost_model(p).unwrap_err().to_string();
        assert!(e.contains("pdp-11") && e.contains("modern"), "{e}");
        let e = load_profile("/nonexistent/here.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a profile (modern, piii-700)"), "{e}");
    }

    /// A file written before `net_wait` existed loads with the base profile's 0; one that sets
    /// it sets it.
    #[test]
    fn a_file_without_net_wait_keeps_zero_and_one_with_it_sets_it() {
        let p = Path::new("old.toml");
        let old =
            ProfileFile::parse("base = \"modern\"\n[costs]\nnet_msg = \"3222ns\"\n", p).unwrap();
        assert_eq!(old.cost_model(p).unwrap().net_wait, 0);
        let new =
            ProfileFile::parse("base = \"modern\"\n[costs]\nnet_wait = \"4100ns\"\n", p).unwrap();
        assert_eq!(new.cost_model(p).unwrap().net_wait, 4_100);
    }

    /// A file written before `net_ack` existed loads with the base profile's 0 (every TCP
    /// receive pays `net_msg`); one that sets it sets it, and one whose `net_ack` exceeds its
    /// `net_msg` is refused with the file named.
    #[test]
    fn a_file_without_net_ack_keeps_zero_and_one_above_net_msg_is_refused() {
        let p = Path::new("old.toml");
        let old =
            ProfileFile::parse("base = \"modern\"\n[costs]\nnet_msg = \"3222ns\"\n", p).unwrap();
        assert_eq!(old.cost_model(p).unwrap().net_ack, 0);
        let new = ProfileFile::parse(
            "base = \"modern\"\n[costs]\nnet_msg = \"3222ns\"\nnet_ack = \"2400ns\"\n",
            p,
        )
        .unwrap();
        assert_eq!(new.cost_model(p).unwrap().net_ack, 2_400);
        let bad = ProfileFile::parse(
            "base = \"modern\"\n[costs]\nnet_msg = \"2us\"\nnet_ack = \"2400ns\"\n",
            p,
        )
        .unwrap();
        let e = bad.cost_model(p).unwrap_err().to_string();
        assert!(e.contains("old.toml") && e.contains("net_ack=2400"), "{e}");
    }
}
