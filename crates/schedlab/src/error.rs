//! The binary's errors, typed where they are found and rendered once, by `main`: a refused
//! value names its flag and what is accepted, an unknown name the names known and the nearest
//! one, an option given where it does not apply the command or backend it belongs to; the
//! experiment layer's errors are said in the flags' words ([`crate::messages::render`]), an
//! output's error names its flag and its path.

use crate::messages::render;
use schedlab_experiment::ExperimentError;
use schedlab_workload::presets;
use schedlab_workload::suggest::did_you_mean;
use std::fmt;
use std::path::PathBuf;

/// Why a command failed.
#[derive(Debug)]
pub enum Error {
    /// A value an option does not accept: `FLAG VALUE: why, and what is accepted`.
    BadValue {
        /// The option (`--policy`, `--level`).
        flag: String,
        /// The value as given.
        value: String,
        /// Why not, and what is accepted.
        why: String,
    },
    /// A name that is none of those known: `SUBJECT has no KIND 'NAME'; it has: ...`, with the
    /// nearest known name suggested.
    UnknownName {
        /// What was asked (`--metric x: a.json`, `man run nosuch: 'run'`).
        subject: String,
        /// What kind of name (`metric`, `command`).
        kind: &'static str,
        /// The name given.
        name: String,
        /// The names known.
        known: Vec<String>,
        /// What to do instead, after the list (`""` for nothing).
        hint: &'static str,
    },
    /// A command's WORKLOAD that is neither a shipped workload nor a workload file's name.
    NotAWorkload(String),
    /// Options given to a command they do not belong to.
    OtherCommand {
        /// The options, as a phrase (`--vary, --out, --plot and --shard`).
        flags: String,
        /// The command they belong to (`sweep`).
        command: &'static str,
        /// Why, or what to run instead (`""` for nothing).
        hint: String,
    },
    /// An option that applies to one backend only, given for the other.
    OtherBackend {
        /// The option.
        flag: String,
        /// The backend it applies to, as a phrase (`the simulator`).
        backend: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
    /// Options that do not go together, or one that needs another; the message names them and
    /// what would be accepted.
    Conflict(String),
    /// Records that differ in what was measured and are compared only with `--force`.
    Incomparable(String),
    /// An input that cannot be read or is not valid (a record, a profile, a shard's directory),
    /// said by its reader, which names the file.
    Input(String),
    /// What the experiment layer refused before anything ran, or what failed while it ran.
    Experiment(ExperimentError),
    /// The experiment layer's refusal of one option's value (`--out: ...`).
    ExperimentOption {
        /// The option.
        flag: &'static str,
        /// What the experiment layer said.
        error: ExperimentError,
    },
    /// A run whose record could not be written: what finished was printed, not saved.
    Unsaved(ExperimentError),
    /// An output that cannot be, or was not, written.
    Output {
        /// The option that names it.
        flag: &'static str,
        /// The path given.
        path: PathBuf,
        /// What is wrong, and what is accepted or what was kept.
        message: String,
    },
    /// An output that names one of the command's own inputs (refused before anything runs).
    InputOverlap(schedlab_report::output::InputOverlap),
    /// Something the command needs of the system that failed (a signal handler, standard
    /// output).
    System(String),
}

impl Error {
    /// An output's error: `flag path: message`.
    pub fn output(flag: &'static str, path: &std::path::Path, message: impl Into<String>) -> Error {
        Error::Output {
            flag,
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadValue { flag, value, why } => write!(f, "{flag} {value}: {why}"),
            Error::UnknownName {
                subject,
                kind,
                name,
                known,
                hint,
            } => {
                let list = if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                };
                let nearest = did_you_mean(name, known.iter().map(String::as_str));
                write!(
                    f,
                    "{subject} has no {kind} '{name}'; it has: {list}{nearest}{hint}"
                )
            }
            Error::NotAWorkload(name) => write!(
                f,
                "'{name}' is neither a workload ({}) nor a workload file (FILE.toml, or rt-app's FILE.json){}",
                presets::names().collect::<Vec<_>>().join(", "),
                did_you_mean(name, presets::names())
            ),
            Error::OtherCommand {
                flags,
                command,
                hint,
            } => {
                let verb = if flags.contains(" and ") {
                    "belong"
                } else {
                    "belongs"
                };
                write!(f, "{flags} {verb} to `schedlab {command}`{hint}")
            }
            Error::OtherBackend {
                flag,
                backend,
                hint,
            } => write!(f, "{flag} applies to {backend}; {hint}"),
            Error::Conflict(m) | Error::Incomparable(m) | Error::Input(m) | Error::System(m) => {
                f.write_str(m)
            }
            Error::Experiment(e) => f.write_str(&render(e)),
            Error::ExperimentOption { flag, error } => write!(f, "{flag}: {}", render(error)),
            Error::Unsaved(e) => write!(f, "{}; the results above were not saved", render(e)),
            Error::Output {
                flag,
                path,
                message,
            } => write!(f, "{flag} {}: {message}", path.display()),
            Error::InputOverlap(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<schedlab_report::output::InputOverlap> for Error {
    fn from(e: schedlab_report::output::InputOverlap) -> Error {
        Error::InputOverlap(e)
    }
}

impl From<ExperimentError> for Error {
    fn from(e: ExperimentError) -> Error {
        Error::Experiment(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind is said as the command line's messages always were: the flag first, then the
    /// path, then what is wrong.
    #[test]
    fn each_kind_renders_with_its_flag_and_path() {
        let e = Error::output("--plot", std::path::Path::new("a/b.svg"), "cannot write");
        assert_eq!(e.to_string(), "--plot a/b.svg: cannot write");
        let other = Error::OtherCommand {
            flags: "--vary and --out".into(),
            command: "sweep",
            hint: String::new(),
        };
        assert_eq!(
            other.to_string(),
            "--vary and --out belong to `schedlab sweep`"
        );
        let unknown = Error::UnknownName {
            subject: "--metric tiem: a.json".into(),
            kind: "metric",
            name: "tiem".into(),
            known: vec!["time".into(), "messages".into()],
            hint: "",
        };
        assert_eq!(
            unknown.to_string(),
            "--metric tiem: a.json has no metric 'tiem'; it has: time, messages; did you mean 'time'?"
        );
        let bad = Error::BadValue {
            flag: "--level".into(),
            value: "97".into(),
            why: "accepted: 80, 90".into(),
        };
        assert_eq!(bad.to_string(), "--level 97: accepted: 80, 90");
        let runs = ExperimentError::NoRepetitions;
        let plain = Error::from(ExperimentError::NoRepetitions).to_string();
        assert!(plain.starts_with("--runs 0: "), "{plain}");
        let unsaved = Error::Unsaved(runs).to_string();
        assert_eq!(
            unsaved,
            format!("{plain}; the results above were not saved")
        );
        let at = Error::ExperimentOption {
            flag: "--out",
            error: ExperimentError::NoRepetitions,
        };
        assert_eq!(at.to_string(), format!("--out: {plain}"));
    }
}
