//! Errors of the workload model. They name the value and what is accepted, in the words of the
//! model (a parameter `loops`, a knob `nice=40`), never in a front end's: the command line adds
//! its flags (`--loops`, `--group`) and a workload file its keys.

use std::fmt;

/// A value that does not parse or is out of range; the message names it and what is accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueError(pub String);

impl ValueError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> ValueError {
        ValueError(message.into())
    }
}

/// A workload parameter (or several together) that a configuration cannot take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ParamError {
    /// The workload.
    pub workload: &'static str,
    /// The parameters at fault, as the workload names them (`datasize`); empty when the fault is
    /// the combination as a whole.
    pub params: Vec<&'static str>,
    /// The value given, when one parameter is at fault (`5`).
    pub value: Option<String>,
    /// What is wrong and what is accepted (`is not accepted; use 8..4096 bytes`).
    pub problem: String,
}

impl ParamError {
    /// `param value problem`.
    pub fn value(
        workload: &'static str,
        param: &'static str,
        value: impl fmt::Display,
        problem: impl Into<String>,
    ) -> ParamError {
        ParamError {
            workload,
            params: vec![param],
            value: Some(value.to_string()),
            problem: problem.into(),
        }
    }

    /// `p1, p2 and p3 problem`.
    pub fn params(
        workload: &'static str,
        params: &[&'static str],
        problem: impl Into<String>,
    ) -> ParamError {
        ParamError {
            workload,
            params: params.to_vec(),
            value: None,
            problem: problem.into(),
        }
    }

    /// A fault of the configuration as a whole.
    pub fn whole(workload: &'static str, problem: impl Into<String>) -> ParamError {
        ParamError {
            workload,
            params: Vec::new(),
            value: None,
            problem: problem.into(),
        }
    }

    /// A fault stated in a sentence that names parameters where `{name}` stands (`the custom
    /// benchmark needs {cpu} PCT`); the front end writes the names.
    pub fn sentence(
        workload: &'static str,
        params: &[&'static str],
        sentence: impl Into<String>,
    ) -> ParamError {
        ParamError {
            workload,
            params: params.to_vec(),
            value: None,
            problem: sentence.into(),
        }
    }

    /// The message with each parameter's name written by `name` (the command line writes
    /// `--datasize`, a workload file `datasize`).
    pub fn render(&self, name: impl Fn(&str) -> String) -> String {
        if self
            .params
            .iter()
            .any(|p| self.problem.contains(&format!("{{{p}}}")))
        {
            let mut text = self.problem.clone();
            for p in &self.params {
                text = text.replace(&format!("{{{p}}}"), &name(p));
            }
            return format!("{}: {text}", self.workload);
        }
        let names: Vec<String> = self.params.iter().map(|p| name(p)).collect();
        let subject = match names.len() {
            0 => String::new(),
            1 => names[0].clone(),
            n => format!("{} and {}", names[..n - 1].join(", "), names[n - 1]),
        };
        let mut out = format!("{}: ", self.workload);
        if !subject.is_empty() {
            out.push_str(&subject);
            out.push(' ');
        }
        if let Some(v) = &self.value {
            out.push_str(v);
            out.push(' ');
        }
        out.push_str(&self.problem);
        out
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(|p| p.to_string()))
    }
}

/// A `NAME:knob=value,...` group argument or a group's knobs that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    /// The argument is not `NAME:knob=value,...`.
    #[error(
        "'{arg}' needs the form NAME:knob=value,...; knobs: {}",
        crate::knobs::KNOB_HELP
    )]
    Form {
        /// The argument as given.
        arg: String,
    },
    /// The group name before `:` is empty.
    #[error("'{arg}': the group name is empty")]
    EmptyName {
        /// The argument as given.
        arg: String,
    },
    /// A token is not `knob=value`.
    #[error(
        "'{arg}': '{token}' is not knob=value; knobs: {}",
        crate::knobs::KNOB_HELP
    )]
    NotKeyValue {
        /// The argument as given.
        arg: String,
        /// The token.
        token: String,
    },
    /// A knob given twice (`nice=1,nice=2`).
    #[error("'{arg}': {knob}= is given twice; give each knob once")]
    GivenTwice {
        /// The argument as given.
        arg: String,
        /// The knob.
        knob: String,
    },
    /// An empty item between commas (`cpus=0,,1`).
    #[error(
        "'{arg}' has an empty item between commas; separate knobs and CPUs with single commas"
    )]
    EmptyItem {
        /// The argument as given.
        arg: String,
    },
    /// `nice=` is not an integer.
    #[error("'{arg}': nice='{value}' is not an integer; accepted: -20..19")]
    NiceNotInteger {
        /// The argument as given.
        arg: String,
        /// The value.
        value: String,
    },
    /// No such knob.
    #[error(
        "'{arg}': unknown knob '{knob}'; knobs: {}{}",
        crate::knobs::KNOB_HELP,
        crate::suggest::did_you_mean(knob, crate::knobs::KNOB_NAMES)
    )]
    UnknownKnob {
        /// The argument as given.
        arg: String,
        /// The knob.
        knob: String,
    },
    /// A knob's value does not parse.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// The group's knobs, parsed, cannot be used together or on this machine.
    #[error("group '{group}': {problem}")]
    Invalid {
        /// The group.
        group: String,
        /// What is wrong and what is accepted.
        problem: String,
    },
}

impl KnobError {
    /// Whether the message is about the argument as written (the command line puts its flag,
    /// `--group`, before it) rather than about a value or a group.
    pub fn is_about_argument(&self) -> bool {
        !matches!(self, KnobError::Value(_) | KnobError::Invalid { .. })
    }
}
