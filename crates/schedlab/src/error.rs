//! The binary's errors, typed where they are found and rendered once, by `main`: a usage error
//! names the flags and values, the experiment layer's errors are said in the flags' words
//! ([`crate::messages::render`]), an output's error names its flag and its path.

use crate::messages::render;
use schedlab_experiment::ExperimentError;
use std::fmt;
use std::path::PathBuf;

/// Why a command failed.
#[derive(Debug)]
pub enum Error {
    /// Flags or values that are not accepted, or that do not go together; the message names
    /// them and what is accepted.
    Usage(String),
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
            Error::Usage(m) | Error::System(m) => f.write_str(m),
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

/// A usage message (what most checks of the command line say).
impl From<String> for Error {
    fn from(m: String) -> Error {
        Error::Usage(m)
    }
}

/// A usage message.
impl From<&str> for Error {
    fn from(m: &str) -> Error {
        Error::Usage(m.to_string())
    }
}

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
        assert_eq!(Error::from("--vary x").to_string(), "--vary x");
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
