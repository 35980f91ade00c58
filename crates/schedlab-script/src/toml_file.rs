//! schedlab's TOML workload files (`docs/workload-files.md`), read strictly into the
//! [model](crate::model).
//!
//! The text is parsed with the `toml` crate's span-preserving tables
//! ([`toml::de::DeTable`], in document order: groups are numbered in the order they are written),
//! then walked here key by key. Everything this reader can judge from the file alone is judged
//! here, at the place it is written: TOML syntax, unknown keys (with the nearest accepted one),
//! wrong types, names given twice, steps with no verb or two, missing keys, expressions that do
//! not parse, knob values that do not parse. Nothing is defaulted silently: the only defaults are
//! the documented ones (`count = 1`, `spawned = false`, `by = 1`, `chunk = 1`, the name from the
//! file's stem). What needs the whole file — a step naming a lock nobody declared, a `compute`
//! without a duration, a channel nobody reads — is the compiler's, which finds each element's
//! span in the model.
//!
//! Choices the format leaves to the reader:
//! - Every name — of a parameter, group, channel, lock, barrier, semaphore, condition, timer,
//!   count or loop variable — is an identifier (`[A-Za-z_][A-Za-z0-9_]*`), so that it can be
//!   written in a reference (`inbox[index]`) and an expression. Groups and the objects share one
//!   name space: a lock may not be called as a group is. A loop variable may not take a reserved
//!   name (`index`, `count`, `tasks`, `min`, `max`, `floor`, `ceil`), as a parameter may not.
//! - A parameter's string that starts like a number (`"10msec"`, `"-2ms"`) must be one number
//!   with its unit; any other string is a word.
//! - Counts (`count`, `parties`, `initial`, `chunk`) are whole numbers or expression strings; a
//!   TOML float there is refused. Elsewhere a number is a plain literal, kept as one so that the
//!   compiler's unit messages apply (`compute = 5` has no unit).
//! - A knob's value is checked with [`parse_knob`] at once; a knob takes no `$PARAM` (sweeps
//!   vary knobs by `GROUP.KNOB` already). `transport` and `tasks` do take `$PARAM`.
//! - A string with escape sequences (`"\u0031ms"`) still reads, but a byte of its value is not
//!   a byte of the file, so its expression's spans are the whole string's. Multi-line strings
//!   are spanned from their content's first character.
//!
//! ```
//! use schedlab_script::toml_file;
//! use std::path::Path;
//!
//! let text = r#"
//! [params]
//! loops = 1000
//!
//! [groups.ping]
//! steps = [
//!   { loop = "loops", steps = [{ send = "ball", size = "64B" }, { recv = "back", size = "64B" }] },
//! ]
//! [groups.pong]
//! steps = [
//!   { loop = "loops", steps = [{ recv = "ball", size = "64B" }, { send = "back", size = "64B" }] },
//! ]
//!
//! [channels.ball]
//! [channels.back]
//! "#;
//! let def = toml_file::read(Path::new("pingpong.toml"), text).unwrap();
//! assert_eq!(def.name, "pingpong");
//! assert_eq!(def.groups[1].name.value, "pong");
//!
//! let typo = text.replace("[channels.back]", "[channel.back]");
//! let message = toml_file::read(Path::new("pingpong.toml"), &typo).unwrap_err().to_string();
//! assert!(message.starts_with("pingpong.toml:15:2: unknown key `channel`"), "{message}");
//! assert!(message.ends_with("(did you mean 'channels'?)"), "{message}");
//! ```

use crate::error::{did_you_mean, Diagnostic, FileError};
use crate::expr::{self, Expr, Node, Quantity, Unit};
use crate::model::{
    Amount, BarrierSpec, ChannelSpec, Grammar, GroupSpec, LockSpec, MetricsSpec, ObjectRef,
    ObjectSpec, ParamSpec, ParamValue, ScriptDef, SemaphoreSpec, StartOrder, Step, StepKind,
};
use crate::span::{LineCol, Span, Spanned};
use schedlab_workload::knobs::parse_knob;
use schedlab_workload::plan::LockKind;
use schedlab_workload::{ChasePattern, IoKind, MemAccess, MemAccessKind, SharedBuffers};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use toml::de::{DeTable, DeValue};

/// A TOML value with its span, as the `toml` crate gives it.
type Value<'i> = toml::Spanned<DeValue<'i>>;

/// The keys of the file's top level.
const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "transport",
    "tasks",
    "start",
    "computes",
    "params",
    "groups",
    "channels",
    "locks",
    "barriers",
    "semaphores",
    "conds",
    "metrics",
];

/// The keys of a group.
const GROUP_KEYS: &[&str] = &[
    "count",
    "nice",
    "policy",
    "slice",
    "cpus",
    "mode",
    "timer_slack",
    "spawned",
    "with_run",
    "spawn",
    "steps",
];

/// The group keys that are knobs, as `--group` takes them (`timer_slack` is the knob
/// `timer-slack`, spelt as the file's other keys of two words).
const KNOB_KEYS: &[&str] = &["nice", "policy", "slice", "cpus", "mode", "timer_slack"];

/// The transports a file may name.
const TRANSPORTS: &[&str] = &["pipe", "socketpair", "unix", "tcp", "udp"];

/// The ways tasks may be hosted.
const HOSTINGS: &[&str] = &["threads", "processes"];

/// What a `compute` step's amount may be ([`crate::model::Computes`]).
const COMPUTES: &[&str] = &["each", "cumulative"];

/// Names a parameter may not take: the task's own names and the functions of expressions.
const RESERVED: &[&str] = &["index", "count", "tasks", "min", "max", "floor", "ceil"];

/// Every verb of a step, with the modifiers it takes besides its own key.
const VERBS: &[(&str, &[&str])] = &[
    ("compute", &[]),
    ("sleep", &[]),
    ("busy", &[]),
    ("period", &["every", "deadline"]),
    ("send", &["size"]),
    ("recv", &["size"]),
    ("lock", &[]),
    ("unlock", &[]),
    ("barrier", &[]),
    ("post", &[]),
    ("wait", &[]),
    ("signal", &[]),
    ("broadcast", &[]),
    ("cond_wait", &["lock"]),
    ("yield", &[]),
    ("set", &[]),
    ("read", &[]),
    ("write", &[]),
    ("rewrite", &[]),
    ("truncate", &[]),
    ("touch", &[]),
    ("memory", &["size", "count", "stride", "pattern", "shared"]),
    ("spawn", &[]),
    ("exit", &[]),
    ("loop", &["steps", "var"]),
    ("timer", &["steps"]),
    ("count", &["by"]),
];

/// The distributions of a `compute` or `sleep` amount.
const DISTRIBUTIONS: &[&str] = &["uniform", "exponential", "normal", "lognormal"];

/// Read the TOML workload file at `path`, whose text is `text`, into the model (grammar
/// [`Grammar::Toml`]). The first fault found is returned at its `file:line:column`, naming the
/// offending value and what is accepted.
pub fn read(path: &Path, text: &str) -> Result<ScriptDef, FileError> {
    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            let message = syntax_message(text, &e);
            return Err(match e.span() {
                Some(r) => FileError::at(
                    path,
                    text,
                    Diagnostic::new(Span::new(r.start, r.end), message),
                ),
                None => FileError::whole(path, message),
            });
        }
    };
    let reader = Reader {
        text,
        names: HashMap::new(),
        shared_buffers: RefCell::default(),
    };
    reader
        .file(path, doc.get_ref())
        .map_err(|d| FileError::at(path, text, d))
}

/// The message for a TOML syntax error; a key or table given twice is said in words, naming the
/// first one's line when it is a table header.
fn syntax_message(text: &str, e: &toml::de::Error) -> String {
    let Some(r) = e.span() else {
        return format!("TOML syntax: {}", e.message());
    };
    if e.message() != "duplicate key" {
        return format!("TOML syntax: {}", e.message());
    }
    let key = text.get(r.clone()).unwrap_or("").trim();
    let line_start = text[..r.start.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("").trim_start();
    if line.starts_with('[') {
        let header = match line.find(']') {
            Some(end) if line.starts_with("[[") => &line[..(end + 2).min(line.len())],
            Some(end) => &line[..=end],
            None => line,
        };
        let first = text[..line_start]
            .lines()
            .position(|l| l.trim_start().starts_with(header))
            .map_or(String::new(), |n| format!(" (first at line {})", n + 1));
        return format!(
            "{header} is defined twice{first}; TOML allows each table once: merge the two into one, or rename '{key}'"
        );
    }
    format!("'{key}' is given twice in the same table; TOML allows each key once: keep one")
}

/// `msg` said of `ctx` (`group 'sender': ...`); at the top level, `msg` alone.
fn within(ctx: &str, msg: impl std::fmt::Display) -> String {
    if ctx.is_empty() {
        msg.to_string()
    } else {
        format!("{ctx}: {msg}")
    }
}

/// What a message about `key`'s value starts with: the context and the key (``group 'g':
/// `count` ``), or the context alone when it is the step whose verb `key` is (``group 'g',
/// `compute` step``).
fn label(ctx: &str, key: &str) -> String {
    if ctx.ends_with(&format!("`{key}` step")) {
        ctx.to_string()
    } else {
        within(ctx, format!("`{key}`"))
    }
}

/// The span of a value or key as the `toml` crate gives it.
fn span_of<T>(v: &toml::Spanned<T>) -> Span {
    let r = v.span();
    Span::new(r.start, r.end)
}

/// A TOML type, in words, for messages.
fn kind(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// Whether `s` is an identifier: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A list of names for messages: `a, b or c`.
fn list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// An integer's value, if it fits.
fn integer(i: &toml::de::DeInteger<'_>) -> Option<i64> {
    i64::from_str_radix(i.as_str(), i.radix()).ok()
}

/// A string value with where its characters are.
struct Str<'a> {
    /// The value (escapes decoded).
    value: &'a str,
    /// The whole value in the file, quotes included.
    span: Span,
    /// Where the value's characters are, when the text between the quotes is the value itself
    /// (no escape sequences), so that a byte of the value is a byte of the file.
    content: Option<Span>,
    /// Whether it is a one-line string (`"..."` or `'...'`).
    single_line: bool,
}

impl Str<'_> {
    /// The span of `len` bytes at `offset` of the value (the whole string when its bytes are not
    /// the file's).
    fn sub(&self, offset: usize, len: usize) -> Span {
        match self.content {
            Some(c) => Span::new(c.start + offset, c.start + offset + len),
            None => self.span,
        }
    }

    /// Parse `len` bytes at `offset` of the value as an expression, with spans in the file.
    fn expr(&self, offset: usize, len: usize) -> Result<Expr, Diagnostic> {
        let part = &self.value[offset..offset + len];
        match self.content {
            Some(_) if self.single_line && offset == 0 && len == self.value.len() => {
                expr::parse(part, self.span, true)
            }
            Some(_) => expr::parse(part, self.sub(offset, len), false),
            None => {
                // Escape sequences: a byte of the value is not a byte of the file, so every
                // place is the whole string.
                let mut e = expr::parse(part, self.span, false).map_err(|mut d| {
                    d.span = self.span;
                    d
                })?;
                respan(&mut e, self.span);
                Ok(e)
            }
        }
    }

    /// The whole value as an expression.
    fn whole_expr(&self) -> Result<Expr, Diagnostic> {
        self.expr(0, self.value.len())
    }

    /// The span of the value's characters (the whole string when they are not the file's).
    fn inner(&self) -> Span {
        self.sub(0, self.value.len())
    }
}

/// Set every span of `e` to `span`.
fn respan(e: &mut Expr, span: Span) {
    e.span = span;
    match &mut e.node {
        Node::Num(_) | Node::Name(_) => {}
        Node::Neg(x) => respan(x, span),
        Node::Bin(_, a, b) => {
            respan(a, span);
            respan(b, span);
        }
        Node::Call(_, args) => args.iter_mut().for_each(|a| respan(a, span)),
    }
}

/// A table of the file being read, with what it is for messages.
struct Table<'a, 'i> {
    /// Its entries.
    map: &'a DeTable<'i>,
    /// Where it is.
    span: Span,
    /// What it is (`group 'sender'`), empty at the top level.
    ctx: String,
}

impl<'a, 'i> Table<'a, 'i> {
    /// The value of `key`, if given.
    fn get(&self, key: &str) -> Option<&'a Value<'i>> {
        self.map.get(key)
    }

    /// The value of `key`, which must be given (`hint` says what it is).
    fn need(&self, key: &str, hint: &str) -> Result<&'a Value<'i>, Diagnostic> {
        self.get(key).ok_or_else(|| {
            Diagnostic::new(
                self.span,
                within(&self.ctx, format!("`{key}` is missing; add {hint}")),
            )
        })
    }

    /// Refuse every key not in `accepted`.
    fn only(&self, accepted: &[&str]) -> Result<(), Diagnostic> {
        for (k, _) in self.map.iter() {
            let key: &str = k.get_ref();
            if !accepted.contains(&key) {
                return Err(Diagnostic::new(
                    span_of(k),
                    within(
                        &self.ctx,
                        format!(
                            "unknown key `{key}`; accepted: {}{}",
                            list(accepted),
                            did_you_mean(key, accepted.iter().copied())
                        ),
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The whole span of the table, from its header or opening brace to its last value.
    fn extent(&self) -> Span {
        self.map.iter().fold(self.span, |s, (k, v)| {
            Span::new(s.start.min(k.span().start), s.end.max(v.span().end))
        })
    }
}

/// The reader: the file's text and the names declared so far.
struct Reader<'t> {
    /// The file's text.
    text: &'t str,
    /// Every group, channel, lock, barrier, semaphore and condition so far, by name: what it
    /// is, where. They share one name space; a map, so that a file of many groups is read in
    /// linear time.
    names: HashMap<String, (&'static str, Span)>,
    /// The first `memory` step of each shared buffer, at its place: every later one must agree
    /// with it.
    shared_buffers: RefCell<SharedBuffers<Span>>,
}

impl<'t> Reader<'t> {
    /// The value as written, on one line and shortened, for messages.
    fn raw(&self, span: Span) -> String {
        let raw = self.text.get(span.start..span.end).unwrap_or("");
        let first = raw.lines().next().unwrap_or("");
        let short: String = first.chars().take(40).collect();
        if short.len() < raw.len() {
            format!("{short}…")
        } else {
            short
        }
    }

    /// `key` of `ctx` has the wrong type: `accepted` says what it must be.
    fn wrong(&self, ctx: &str, key: &str, v: &Value<'_>, accepted: &str) -> Diagnostic {
        Diagnostic::new(
            span_of(v),
            within(
                ctx,
                format!(
                    "`{key}` must be {accepted}, not {} ({})",
                    kind(v.get_ref()),
                    self.raw(span_of(v))
                ),
            ),
        )
    }

    /// A string value and where its characters are.
    fn str_parts<'a>(&self, value: &'a str, span: Span) -> Str<'a> {
        let raw = self.text.get(span.start..span.end).unwrap_or("");
        let quotes = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
            3
        } else {
            1
        };
        let mut start = (span.start + quotes).min(span.end);
        let end = span.end.saturating_sub(quotes).max(start);
        if quotes == 3 {
            if self.text[start..].starts_with("\r\n") {
                start += 2;
            } else if self.text[start..].starts_with('\n') {
                start += 1;
            }
        }
        let content = (start <= end && self.text.get(start..end) == Some(value))
            .then(|| Span::new(start, end));
        Str {
            value,
            span,
            content,
            single_line: quotes == 1,
        }
    }

    /// `key`'s value as a string (`accepted` says what it is for the error).
    fn string<'a>(
        &self,
        ctx: &str,
        key: &str,
        v: &'a Value<'_>,
        accepted: &str,
    ) -> Result<Str<'a>, Diagnostic> {
        match v.get_ref() {
            DeValue::String(s) => Ok(self.str_parts(s, span_of(v))),
            _ => Err(self.wrong(ctx, key, v, accepted)),
        }
    }

    /// `key`'s value as a name (an identifier), spanned at its characters.
    fn name(
        &self,
        ctx: &str,
        key: &str,
        v: &Value<'_>,
        what: &str,
    ) -> Result<Spanned<String>, Diagnostic> {
        let s = self.string(ctx, key, v, &format!("a string naming {what}"))?;
        if !is_ident(s.value) {
            return Err(Diagnostic::new(
                s.inner(),
                format!(
                    "{}: '{}' is not a name; a name is letters, digits and _, not starting with a digit",
                    label(ctx, key),
                    s.value
                ),
            ));
        }
        Ok(Spanned::new(s.value.to_string(), s.inner()))
    }

    /// A loop's `var`: a name that is not one of the reserved names.
    fn var(&self, ctx: &str, v: &Value<'_>) -> Result<Spanned<String>, Diagnostic> {
        let var = self.name(ctx, "var", v, "the pass number")?;
        if RESERVED.contains(&var.value.as_str()) {
            return Err(Diagnostic::new(
                var.span,
                format!(
                    "{}: '{}' is reserved ({} are the task's own names and functions of expressions); choose another",
                    label(ctx, "var"),
                    var.value,
                    list(RESERVED)
                ),
            ));
        }
        Ok(var)
    }

    /// `key`'s value as text (a string, any content), spanned at the value.
    fn text(&self, ctx: &str, key: &str, v: &Value<'_>) -> Result<Spanned<String>, Diagnostic> {
        let s = self.string(ctx, key, v, "a string")?;
        Ok(Spanned::new(s.value.to_string(), s.span))
    }

    /// `key`'s value as a boolean.
    fn boolean(&self, ctx: &str, key: &str, v: &Value<'_>) -> Result<bool, Diagnostic> {
        match v.get_ref() {
            DeValue::Boolean(b) => Ok(*b),
            _ => Err(self.wrong(ctx, key, v, "true or false")),
        }
    }

    /// `key`'s value as an expression: a number or an expression string. `whole`: a count,
    /// which a float cannot be.
    fn expr(&self, ctx: &str, key: &str, v: &Value<'_>, whole: bool) -> Result<Expr, Diagnostic> {
        let accepted = if whole {
            "a whole number or an expression string"
        } else {
            "a number or an expression string"
        };
        let span = span_of(v);
        match v.get_ref() {
            DeValue::Integer(i) => match integer(i) {
                Some(n) => Ok(Expr::literal(Quantity::plain(n as f64), span)),
                None => Err(Diagnostic::new(
                    span,
                    within(ctx, format!("`{key}` {} is too large", self.raw(span))),
                )),
            },
            DeValue::Float(f) if !whole => match f.as_str().parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(Expr::literal(Quantity::plain(x), span)),
                _ => Err(Diagnostic::new(
                    span,
                    within(
                        ctx,
                        format!("`{key}` {} is not a finite number", self.raw(span)),
                    ),
                )),
            },
            DeValue::String(s) => self.str_parts(s, span).whole_expr().map_err(|mut d| {
                d.message = format!("{}: {}", label(ctx, key), d.message);
                d
            }),
            _ => Err(self.wrong(ctx, key, v, accepted)),
        }
    }

    /// `key`'s value, if given, as an expression.
    fn opt_expr(
        &self,
        t: &Table<'_, '_>,
        key: &str,
        whole: bool,
    ) -> Result<Option<Expr>, Diagnostic> {
        t.get(key)
            .map(|v| self.expr(&t.ctx, key, v, whole))
            .transpose()
    }

    /// `key`'s value as a table.
    fn table<'a, 'i>(
        &self,
        ctx: &str,
        key: &str,
        v: &'a Value<'i>,
        accepted: &str,
        inner: String,
    ) -> Result<Table<'a, 'i>, Diagnostic> {
        match v.get_ref() {
            DeValue::Table(map) => Ok(Table {
                map,
                span: span_of(v),
                ctx: inner,
            }),
            _ => Err(self.wrong(ctx, key, v, accepted)),
        }
    }

    /// `key`'s value as an array of distinct strings (names when `names`).
    fn strings(
        &self,
        ctx: &str,
        key: &str,
        v: &Value<'_>,
        what: &str,
        names: bool,
    ) -> Result<Vec<Spanned<String>>, Diagnostic> {
        let DeValue::Array(items) = v.get_ref() else {
            return Err(self.wrong(ctx, key, v, &format!("an array of {what}")));
        };
        let mut out: Vec<Spanned<String>> = Vec::new();
        for item in items.iter() {
            let s = if names {
                self.name(ctx, key, item, what)?
            } else {
                let s = self.string(ctx, key, item, &format!("an array of {what}"))?;
                Spanned::new(s.value.to_string(), s.inner())
            };
            if out.iter().any(|o| o.value == s.value) {
                return Err(Diagnostic::new(
                    s.span,
                    within(
                        ctx,
                        format!("`{key}` lists '{}' twice; list it once", s.value),
                    ),
                ));
            }
            out.push(s);
        }
        Ok(out)
    }

    /// Declare `name` as a `what`; groups and objects share one name space.
    fn declare(&mut self, name: &Spanned<String>, what: &'static str) -> Result<(), Diagnostic> {
        if let Some((other, at)) = self.names.get(&name.value) {
            return Err(Diagnostic::new(
                name.span,
                format!(
                    "'{}' already names a {other} (line {}); groups, channels, locks, barriers, semaphores and conditions need distinct names",
                    name.value,
                    LineCol::of(self.text, at.start).line
                ),
            ));
        }
        self.names.insert(name.value.clone(), (what, name.span));
        Ok(())
    }

    /// A key naming a group or an object: an identifier.
    fn key_name(
        &self,
        k: &toml::Spanned<toml::de::DeString<'_>>,
        what: &str,
    ) -> Result<Spanned<String>, Diagnostic> {
        let name: &str = k.get_ref();
        if !is_ident(name) {
            return Err(Diagnostic::new(
                span_of(k),
                format!(
                    "{what} name '{name}' is not accepted; a name is letters, digits and _, not starting with a digit"
                ),
            ));
        }
        Ok(Spanned::new(name.to_string(), span_of(k)))
    }

    /// The whole file.
    fn file(mut self, path: &Path, doc: &DeTable<'_>) -> Result<ScriptDef, Diagnostic> {
        let top = Table {
            map: doc,
            span: Span::new(0, 0),
            ctx: String::new(),
        };
        top.only(TOP_KEYS)?;
        let mut def = ScriptDef {
            name: path
                .file_stem()
                .unwrap_or(path.as_os_str())
                .to_string_lossy()
                .into_owned(),
            description: String::new(),
            path: path.to_path_buf(),
            text: self.text.to_string(),
            grammar: Grammar::Toml,
            params: Vec::new(),
            groups: Vec::new(),
            channels: Vec::new(),
            locks: Vec::new(),
            barriers: Vec::new(),
            semaphores: Vec::new(),
            conds: Vec::new(),
            transport: None,
            tasks: None,
            start: None,
            metrics: MetricsSpec::default(),
            rtapp_log: None,
            ends_at: None,
            compute_as: None,
            loop_calibration: schedlab_workload::LoopCalibration::Measure { cpu: 0 },
            computes: None,
            warnings: Vec::new(),
            cpu_time_warnings: Vec::new(),
        };
        let mut groups_seen = false;
        for (k, v) in doc.iter() {
            let key: &str = k.get_ref();
            match key {
                "name" => {
                    let name = self.text("", key, v)?;
                    if name.value.trim().is_empty() || name.value.contains('\n') {
                        return Err(Diagnostic::new(
                            name.span,
                            format!(
                                "`name` '{}' is not accepted; give the workload a name on one line",
                                name.value
                            ),
                        ));
                    }
                    def.name = name.value;
                }
                "description" => def.description = self.text("", key, v)?.value,
                "transport" => def.transport = Some(self.word("", key, v, TRANSPORTS)?),
                "tasks" => def.tasks = Some(self.word("", key, v, HOSTINGS)?),
                "computes" => def.computes = Some(self.word("", key, v, COMPUTES)?),
                "start" => def.start = Some(self.start(v)?),
                "params" => {
                    let t = self.table(
                        "",
                        key,
                        v,
                        "a table of parameters ([params])",
                        "[params]".into(),
                    )?;
                    for (k, v) in t.map.iter() {
                        def.params.push(self.param(k, v)?);
                    }
                }
                "groups" => {
                    groups_seen = true;
                    let t = self.table(
                        "",
                        key,
                        v,
                        "a table of groups ([groups.NAME])",
                        "[groups]".into(),
                    )?;
                    for (k, v) in t.map.iter() {
                        let g = self.group(k, v)?;
                        def.groups.push(g);
                    }
                    if def.groups.is_empty() {
                        return Err(Diagnostic::new(
                            span_of(v),
                            "[groups] has no group; add one, e.g. [groups.worker] with steps = [{ compute = \"1ms\" }]",
                        ));
                    }
                }
                "channels" => {
                    for (object, t) in
                        self.objects(key, v, "channel", &["count", "writers", "readers"])?
                    {
                        let writers = t
                            .get("writers")
                            .map(|v| self.strings(&t.ctx, "writers", v, "group names", true))
                            .transpose()?
                            .unwrap_or_default();
                        let readers = t
                            .get("readers")
                            .map(|v| self.strings(&t.ctx, "readers", v, "group names", true))
                            .transpose()?
                            .unwrap_or_default();
                        def.channels.push(ChannelSpec {
                            object,
                            writers,
                            readers,
                        });
                    }
                }
                "locks" => {
                    for (object, t) in self.objects(key, v, "lock", &["count", "kind"])? {
                        let kind = match t.get("kind") {
                            Some(v) => self.lock_kind(&t.ctx, v)?,
                            None => LockKind::Sleep,
                        };
                        def.locks.push(LockSpec { object, kind });
                    }
                }
                "conds" => {
                    for (object, _) in self.objects(key, v, "condition", &["count"])? {
                        def.conds.push(object);
                    }
                }
                "barriers" => {
                    for (object, t) in self.objects(key, v, "barrier", &["count", "parties"])? {
                        let parties = self.opt_expr(&t, "parties", true)?;
                        def.barriers.push(BarrierSpec { object, parties });
                    }
                }
                "semaphores" => {
                    for (object, t) in self.objects(key, v, "semaphore", &["count", "initial"])? {
                        let initial = self.opt_expr(&t, "initial", true)?;
                        def.semaphores.push(SemaphoreSpec { object, initial });
                    }
                }
                "metrics" => def.metrics = self.metrics(v)?,
                _ => unreachable!("checked by only()"),
            }
        }
        if !groups_seen {
            return Err(Diagnostic::new(
                Span::new(0, 0),
                "the file has no [groups]; a workload needs at least one group, e.g. [groups.worker] with steps = [{ compute = \"1ms\" }]",
            ));
        }
        Ok(def)
    }

    /// `transport` or `tasks`: one of `words`, or `$PARAM`.
    fn word(
        &self,
        ctx: &str,
        key: &str,
        v: &Value<'_>,
        words: &[&str],
    ) -> Result<Spanned<String>, Diagnostic> {
        let accepted = format!("{} or $PARAM (a parameter's name)", words.join(", "));
        let s = self.string(ctx, key, v, &format!("a string: {accepted}"))?;
        let ok = words.contains(&s.value) || s.value.strip_prefix('$').is_some_and(is_ident);
        if !ok {
            return Err(Diagnostic::new(
                s.span,
                within(
                    ctx,
                    format!(
                        "`{key}` '{}' is not accepted; use {accepted}{}",
                        s.value,
                        did_you_mean(s.value, words.iter().copied())
                    ),
                ),
            ));
        }
        Ok(Spanned::new(s.value.to_string(), s.span))
    }

    /// A lock's `kind`: `sleep` (a futex mutex, the default) or `spin` (waiters spin).
    fn lock_kind(&self, ctx: &str, v: &Value<'_>) -> Result<LockKind, Diagnostic> {
        let accepted = "sleep (a waiter sleeps) or spin (a waiter spins on its CPU)";
        let s = self.string(ctx, "kind", v, &format!("a string: {accepted}"))?;
        s.value.parse::<LockKind>().map_err(|_| {
            Diagnostic::new(
                s.span,
                within(
                    ctx,
                    format!("`kind` '{}' is not accepted; use {accepted}", s.value),
                ),
            )
        })
    }

    /// `start = { order = [...], chunk = EXPR }`.
    fn start(&self, v: &Value<'_>) -> Result<StartOrder, Diagnostic> {
        let t = self.table(
            "",
            "start",
            v,
            "a table such as { order = [\"receiver\", \"sender\"], chunk = \"fds\" }",
            "`start`".into(),
        )?;
        t.only(&["order", "chunk"])?;
        let order = t.need(
            "order",
            "order = [\"GROUP\", ...], the groups in the order their tasks start",
        )?;
        let groups = self.strings(&t.ctx, "order", order, "group names", true)?;
        if groups.is_empty() {
            return Err(Diagnostic::new(
                span_of(order),
                "`start`: `order` is empty; list the groups in the order their tasks start",
            ));
        }
        let chunk = match t.get("chunk") {
            Some(c) => self.expr(&t.ctx, "chunk", c, true)?,
            None => Expr::literal(Quantity::plain(1.0), t.span),
        };
        Ok(StartOrder {
            groups,
            chunk,
            span: t.span,
        })
    }

    /// `[metrics]`: `primary`, `show`, `derived`.
    fn metrics(&self, v: &Value<'_>) -> Result<MetricsSpec, Diagnostic> {
        let t = self.table("", "metrics", v, "a table ([metrics])", "[metrics]".into())?;
        t.only(&["primary", "show", "derived"])?;
        let primary = match t.get("primary") {
            Some(p) => {
                let s = self.string(&t.ctx, "primary", p, "a string naming a metric")?;
                if s.value.is_empty() {
                    return Err(Diagnostic::new(
                        s.span,
                        "[metrics]: `primary` is empty; name a metric",
                    ));
                }
                Some(Spanned::new(s.value.to_string(), s.inner()))
            }
            None => None,
        };
        let show = t
            .get("show")
            .map(|s| self.strings(&t.ctx, "show", s, "metric names", false))
            .transpose()?
            .unwrap_or_default();
        let mut derived = Vec::new();
        if let Some(d) = t.get("derived") {
            let dt = self.table(
                &t.ctx,
                "derived",
                d,
                "a table of metrics ([metrics.derived.NAME])",
                "[metrics.derived]".into(),
            )?;
            for (k, v) in dt.map.iter() {
                let name: &str = k.get_ref();
                if !is_ident(name) {
                    return Err(Diagnostic::new(
                        span_of(k),
                        format!("derived metric name '{name}' is not accepted; a name is letters, digits and _, not starting with a digit"),
                    ));
                }
                let m = self.table(
                    &dt.ctx,
                    name,
                    v,
                    "a table with `value`, `unit`, `better` and `help`",
                    format!("[metrics.derived.{name}]"),
                )?;
                m.only(&["value", "unit", "better", "help"])?;
                let Some(value) = m.get("value") else {
                    return Err(Diagnostic::new(
                        m.span,
                        format!("[metrics.derived.{name}] needs `value`, an expression of metrics such as \"cpu / yields * 1e6\""),
                    ));
                };
                let value = self.expr(&m.ctx, "value", value, false)?;
                let unit = match m.get("unit") {
                    Some(u) => self.text(&m.ctx, "unit", u)?.value,
                    None => String::new(),
                };
                let Some(better) = m.get("better") else {
                    return Err(Diagnostic::new(
                        m.span,
                        format!("[metrics.derived.{name}] needs `better`: \"lower\" or \"higher\""),
                    ));
                };
                let b = self.text(&m.ctx, "better", better)?;
                let higher_is_better = match b.value.as_str() {
                    "higher" => true,
                    "lower" => false,
                    other => {
                        return Err(Diagnostic::new(
                            b.span,
                            format!("[metrics.derived.{name}]: `better` '{other}' is not accepted; use \"lower\" or \"higher\""),
                        ))
                    }
                };
                let help = match m.get("help") {
                    Some(h) => self.text(&m.ctx, "help", h)?.value,
                    None => String::new(),
                };
                derived.push(crate::model::DerivedMetric {
                    name: Spanned::new(name.to_string(), span_of(k)),
                    value,
                    unit,
                    higher_is_better,
                    help,
                });
            }
        }
        Ok(MetricsSpec {
            primary,
            show,
            derived,
        })
    }

    /// One parameter: `NAME = VALUE` or `[params.NAME]` with `default`, `help`, `choices`.
    fn param(
        &self,
        k: &toml::Spanned<toml::de::DeString<'_>>,
        v: &Value<'_>,
    ) -> Result<ParamSpec, Diagnostic> {
        let name: &str = k.get_ref();
        if !is_ident(name) {
            return Err(Diagnostic::new(
                span_of(k),
                format!(
                    "parameter name '{name}' is not accepted; a name is letters, digits and _, not starting with a digit"
                ),
            ));
        }
        if RESERVED.contains(&name) {
            return Err(Diagnostic::new(
                span_of(k),
                format!(
                    "parameter name '{name}' is reserved ({} are the task's own names and functions of expressions); choose another",
                    list(RESERVED)
                ),
            ));
        }
        let ctx = format!("parameter '{name}'");
        let name = Spanned::new(name.to_string(), span_of(k));
        let DeValue::Table(_) = v.get_ref() else {
            return Ok(ParamSpec {
                default: self.param_value("[params]", &name.value, v)?,
                default_span: span_of(v),
                name,
                help: String::new(),
                choices: Vec::new(),
            });
        };
        let t = self.table("", "", v, "", ctx.clone())?;
        t.only(&["default", "help", "choices"])?;
        let d = t.need(
            "default",
            "default = VALUE (a number, a number with a unit such as \"10ms\", or a word)",
        )?;
        let default = self.param_value(&ctx, "default", d)?;
        let help = t
            .get("help")
            .map(|h| self.text(&ctx, "help", h))
            .transpose()?
            .map_or(String::new(), |h| h.value);
        let mut choices = Vec::new();
        if let Some(c) = t.get("choices") {
            let list = self.strings(&ctx, "choices", c, "words", false)?;
            match &default {
                ParamValue::Number(q) => {
                    return Err(Diagnostic::new(
                        span_of(c),
                        format!(
                            "{ctx}: `choices` is only for a parameter whose default is a word; this one's default is the number {q}"
                        ),
                    ))
                }
                _ if list.is_empty() => {
                    return Err(Diagnostic::new(
                        span_of(c),
                        format!("{ctx}: `choices` is empty; list the words the parameter accepts"),
                    ))
                }
                ParamValue::Text(t) if !list.iter().any(|c| &c.value == t) => {
                    return Err(Diagnostic::new(
                        span_of(d),
                        format!(
                            "{ctx}: default '{t}' is not one of its choices ({}){}",
                            list.iter().map(|c| c.value.as_str()).collect::<Vec<_>>().join(", "),
                            did_you_mean(t, list.iter().map(|c| c.value.as_str()))
                        ),
                    ))
                }
                ParamValue::Text(_) => {}
            }
            choices = list.into_iter().map(|c| c.value).collect();
        }
        Ok(ParamSpec {
            name,
            default,
            default_span: span_of(d),
            help,
            choices,
        })
    }

    /// A parameter's value: a number, a string holding one number with its unit, or a word.
    fn param_value(&self, ctx: &str, key: &str, v: &Value<'_>) -> Result<ParamValue, Diagnostic> {
        let accepted =
            "a number, a string holding a number with its unit (\"10ms\", \"4KiB\") or a word";
        match v.get_ref() {
            DeValue::Integer(_) | DeValue::Float(_) => {
                let e = self.expr(ctx, key, v, false)?;
                match e.node {
                    Node::Num(q) => Ok(ParamValue::Number(q)),
                    _ => unreachable!("a TOML number is a literal"),
                }
            }
            DeValue::String(s) => {
                let s = self.str_parts(s, span_of(v));
                let t = s.value.trim_start();
                let numeric = t.starts_with(|c: char| c.is_ascii_digit() || c == '.')
                    || (t.starts_with('-')
                        && t[1..]
                            .trim_start()
                            .starts_with(|c: char| c.is_ascii_digit() || c == '.'));
                if !numeric {
                    return Ok(ParamValue::Text(s.value.to_string()));
                }
                let e = s.whole_expr().map_err(|mut d| {
                    d.message = within(
                        ctx,
                        format!(
                            "`{key}` '{}' starts like a number but is not one: {}",
                            s.value, d.message
                        ),
                    );
                    d
                })?;
                match e.node {
                    Node::Num(q) => Ok(ParamValue::Number(q)),
                    Node::Neg(ref x) => match x.node {
                        Node::Num(q) => Ok(ParamValue::Number(Quantity {
                            value: -q.value,
                            unit: q.unit,
                        })),
                        _ => Err(self.not_single(ctx, key, &s)),
                    },
                    _ => Err(self.not_single(ctx, key, &s)),
                }
            }
            _ => Err(self.wrong(ctx, key, v, accepted)),
        }
    }

    /// A parameter's value that is an expression, not one number.
    fn not_single(&self, ctx: &str, key: &str, s: &Str<'_>) -> Diagnostic {
        Diagnostic::new(
            s.span,
            within(
                ctx,
                format!(
                    "`{key}` '{}' is an expression; a parameter's value is one number with its unit (\"10ms\", \"4KiB\", 20) or a word",
                    s.value
                ),
            ),
        )
    }

    /// The entries of `[channels]`, `[locks]`, ...: each a table with `keys`, named with a fresh
    /// name, with its `count`.
    fn objects<'a, 'i>(
        &mut self,
        key: &str,
        v: &'a Value<'i>,
        what: &'static str,
        keys: &[&str],
    ) -> Result<Vec<(ObjectSpec, Table<'a, 'i>)>, Diagnostic> {
        let section = format!("[{key}]");
        let t = self.table(
            "",
            key,
            v,
            &format!("a table of {what}s ([{key}.NAME])"),
            section.clone(),
        )?;
        let mut out = Vec::new();
        for (k, v) in t.map.iter() {
            let name = self.key_name(k, what)?;
            self.declare(&name, what)?;
            let entry = self.table(
                &section,
                k.get_ref(),
                v,
                &format!(
                    "a table ([{key}.{0}], or {0} = {{ {1} }})",
                    name.value,
                    keys.iter()
                        .map(|k| format!("{k} = ..."))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                format!("{what} '{}'", name.value),
            )?;
            entry.only(keys)?;
            let count = self.opt_expr(&entry, "count", true)?;
            out.push((ObjectSpec { name, count }, entry));
        }
        Ok(out)
    }

    /// One group.
    fn group(
        &mut self,
        k: &toml::Spanned<toml::de::DeString<'_>>,
        v: &Value<'_>,
    ) -> Result<GroupSpec, Diagnostic> {
        let name = self.key_name(k, "group")?;
        self.declare(&name, "group")?;
        let t = self.table(
            "[groups]",
            &name.value,
            v,
            &format!("a table ([groups.{}])", name.value),
            format!("group '{}'", name.value),
        )?;
        t.only(GROUP_KEYS)?;
        let spawn = t
            .get("spawn")
            .map(|c| self.expr(&t.ctx, "spawn", c, true))
            .transpose()?;
        // A spawnable group's tasks are, by default, only those its spawn steps fork.
        let count = match t.get("count") {
            Some(c) => self.expr(&t.ctx, "count", c, true)?,
            None if spawn.is_some() => Expr::literal(Quantity::plain(0.0), name.span),
            None => Expr::literal(Quantity::plain(1.0), name.span),
        };
        let mut knobs = Vec::new();
        for (k, v) in t.map.iter() {
            let key: &str = k.get_ref();
            if !KNOB_KEYS.contains(&key) {
                continue;
            }
            knobs.push(self.knob(&t.ctx, key, span_of(k), v, false)?);
        }
        let spawned = t
            .get("spawned")
            .map(|s| self.boolean(&t.ctx, "spawned", s))
            .transpose()?
            .unwrap_or(false);
        if let (true, Some(bound)) = (spawned, &spawn) {
            return Err(Diagnostic::new(
                bound.span,
                within(
                    &t.ctx,
                    "`spawn` (a bound on the tasks spawn steps fork) and `spawned = true` (tasks parked until a spawn step starts them) are two ways of starting tasks; give one".to_string(),
                ),
            ));
        }
        // Of a spawned group's tasks, how many start with the run (rt-app's `instance` of a
        // task that is also forked); checked against `count` when the count is known.
        let with_run = t
            .get("with_run")
            .map(|w| self.expr(&t.ctx, "with_run", w, true))
            .transpose()?;
        if let (false, Some(w)) = (spawned, &with_run) {
            return Err(Diagnostic::new(
                w.span,
                within(
                    &t.ctx,
                    "`with_run` (how many of a spawned group's tasks start with the run rather than parked) needs `spawned = true`; a group without it starts all its `count` tasks with the run".to_string(),
                ),
            ));
        }
        let steps = t.need("steps", "steps = [...], the steps each task runs")?;
        let body = self.steps(&t.ctx, "steps", steps)?;
        Ok(GroupSpec {
            name,
            count,
            knobs,
            spawned,
            with_run,
            spawn,
            body,
            span: t.extent(),
        })
    }

    /// A non-empty array of steps.
    fn steps(&self, ctx: &str, key: &str, v: &Value<'_>) -> Result<Vec<Step>, Diagnostic> {
        let DeValue::Array(items) = v.get_ref() else {
            return Err(self.wrong(
                ctx,
                key,
                v,
                "an array of steps, e.g. [{ compute = \"1ms\" }, \"yield\"]",
            ));
        };
        if items.is_empty() {
            return Err(Diagnostic::new(
                span_of(v),
                within(
                    ctx,
                    format!(
                        "`{key}` is empty; give at least one step, e.g. {{ compute = \"1ms\" }}"
                    ),
                ),
            ));
        }
        items.iter().map(|s| self.step(ctx, s)).collect()
    }

    /// One knob `key` (at `key_span`) = `v` of a group or a `set` step, as `--group` takes it.
    fn knob(
        &self,
        ctx: &str,
        key: &str,
        key_span: Span,
        v: &Value<'_>,
        set_step: bool,
    ) -> Result<(Spanned<String>, Spanned<String>), Diagnostic> {
        let value = match (key, v.get_ref()) {
            (_, DeValue::String(s)) => s.to_string(),
            ("nice" | "cpus", DeValue::Integer(i)) => match integer(i) {
                Some(n) => n.to_string(),
                None => self.raw(span_of(v)),
            },
            ("nice", _) => return Err(self.wrong(ctx, key, v, "an integer (-20..19)")),
            ("cpus", _) => {
                return Err(self.wrong(
                    ctx,
                    key,
                    v,
                    "a string listing CPUs (\"0-3,6\") or a CPU number",
                ))
            }
            ("policy", _) => {
                return Err(self.wrong(
                    ctx,
                    key,
                    v,
                    "a string (other, batch, idle, fifo:P, rr:P or deadline:R/D/P)",
                ))
            }
            ("mode", _) => return Err(self.wrong(ctx, key, v, "a string (user or kernel)")),
            ("timer_slack", _) => {
                return Err(self.wrong(
                    ctx,
                    key,
                    v,
                    "a string (a duration such as \"50us\", or \"default\")",
                ))
            }
            _ => return Err(self.wrong(ctx, key, v, "a string (a duration such as \"0.3ms\")")),
        };
        // A `set` step's `cpus = "all"`: every CPU of the machine again.
        let knob = if key == "timer_slack" {
            "timer-slack"
        } else {
            key
        };
        let checked = if set_step && key == "cpus" && value == "all" {
            Ok(())
        } else {
            parse_knob(knob, &value).map(drop)
        };
        if let Err(e) = checked {
            // The knob's message names the knob, except a slice's.
            let e = e.to_string();
            let at = if e.contains(key) {
                within(ctx, e)
            } else {
                format!("{}: {e}", label(ctx, key))
            };
            return Err(Diagnostic::new(span_of(v), at));
        }
        Ok((
            Spanned::new(knob.to_string(), key_span),
            Spanned::new(value, span_of(v)),
        ))
    }

    /// The knobs of a `set` step: an inline table of `nice`, `policy`, `slice` and `cpus`.
    fn set_knobs(
        &self,
        ctx: &str,
        v: &Value<'_>,
    ) -> Result<Vec<crate::model::KnobPair>, Diagnostic> {
        const SET_KEYS: &[&str] = &["nice", "policy", "slice", "cpus"];
        let DeValue::Table(map) = v.get_ref() else {
            return Err(self.wrong(
                ctx,
                "set",
                v,
                "a table of knobs such as { cpus = \"1\", policy = \"fifo:5\", nice = -3 }",
            ));
        };
        let mut out = Vec::new();
        for (k, value) in map.iter() {
            let key: &str = k.get_ref();
            if !SET_KEYS.contains(&key) {
                let why = if key == "mode" {
                    " (`mode` is a group's for the whole run)".to_string()
                } else {
                    did_you_mean(key, SET_KEYS.iter().copied())
                };
                return Err(Diagnostic::new(
                    span_of(k),
                    format!(
                        "{ctx}: unknown knob `{key}`; it takes {}{why}",
                        list(SET_KEYS)
                    ),
                ));
            }
            out.push(self.knob(ctx, key, span_of(k), value, true)?);
        }
        if out.is_empty() {
            return Err(Diagnostic::new(
                span_of(v),
                format!(
                    "{ctx}: no knob given; give at least one of {}",
                    list(SET_KEYS)
                ),
            ));
        }
        Ok(out)
    }

    /// One step: an inline table with one verb and its modifiers, or a bare `"yield"` or
    /// `"truncate"`.
    fn step(&self, ctx: &str, v: &Value<'_>) -> Result<Step, Diagnostic> {
        let span = span_of(v);
        let map = match v.get_ref() {
            DeValue::String(s) => return string_step(ctx, s, span),
            DeValue::Table(map) => map,
            _ => {
                return Err(self.wrong(
                    ctx,
                    "steps",
                    v,
                    "an array of steps: tables such as { compute = \"1ms\" }, or \"yield\" or \"truncate\"",
                ))
            }
        };
        let keys: Vec<(&str, Span)> = map
            .iter()
            .map(|(k, _)| (k.get_ref().as_ref(), span_of(k)))
            .collect();
        let verb = step_verb(ctx, &keys, span)?;
        let step_ctx = if ctx.is_empty() {
            format!("`{verb}` step")
        } else {
            format!("{ctx}, `{verb}` step")
        };
        check_step_keys(&step_ctx, verb, &keys)?;
        let t = Table {
            map,
            span,
            ctx: step_ctx,
        };
        let kind = self.step_kind(&t, verb)?;
        Ok(Step { kind, span })
    }

    /// The kind of the step of table `t` whose verb is `verb`, with its modifiers.
    fn step_kind(&self, t: &Table<'_, '_>, verb: &str) -> Result<StepKind, Diagnostic> {
        let span = t.span;
        let ctx = t.ctx.as_str();
        let value = t.get(verb).expect("the verb is a key");
        let reference = |key: &str| -> Result<ObjectRef, Diagnostic> {
            self.reference(ctx, key, t.need(key, "a reference")?)
        };
        let kind = match verb {
            "compute" => StepKind::Compute(self.amount(ctx, verb, value)?),
            "sleep" => StepKind::Sleep(self.amount(ctx, verb, value)?),
            "busy" => StepKind::Busy(self.expr(ctx, verb, value, false)?),
            "period" => StepKind::Period {
                timer: self.name(ctx, verb, value, "the timer")?,
                every: self.expr(
                    ctx,
                    "every",
                    t.need("every", "every = DURATION, the period")?,
                    false,
                )?,
                deadline: self.opt_expr(t, "deadline", false)?,
            },
            "send" | "recv" => {
                let channel = reference(verb)?;
                let size = self.expr(
                    ctx,
                    "size",
                    t.need(
                        "size",
                        "size = SIZE, the bytes of each message (e.g. \"100B\")",
                    )?,
                    false,
                )?;
                if verb == "send" {
                    StepKind::Send { channel, size }
                } else {
                    StepKind::Recv { channel, size }
                }
            }
            "lock" => StepKind::Lock(reference(verb)?),
            "unlock" => StepKind::Unlock(reference(verb)?),
            "barrier" => StepKind::Barrier(reference(verb)?),
            "post" => StepKind::SemPost(reference(verb)?),
            "wait" => StepKind::SemWait(reference(verb)?),
            "signal" => StepKind::CondSignal(reference(verb)?),
            "broadcast" => StepKind::CondBroadcast(reference(verb)?),
            "cond_wait" => StepKind::CondWait {
                cond: reference(verb)?,
                lock: self.reference(
                    ctx,
                    "lock",
                    t.need("lock", "lock = \"LOCK\", the lock held while waiting")?,
                )?,
            },
            "yield" | "truncate" | "exit" => {
                return Err(Diagnostic::new(
                    span,
                    within(
                        ctx,
                        format!("`{verb}` takes no value; write the step as the string \"{verb}\""),
                    ),
                ))
            }
            "read" | "write" | "rewrite" => StepKind::Io {
                kind: match verb {
                    "read" => IoKind::Read,
                    "write" => IoKind::Write,
                    _ => IoKind::Rewrite,
                },
                bytes: self.expr(ctx, verb, value, false)?,
            },
            "touch" => StepKind::Touch(self.expr(ctx, verb, value, false)?),
            "memory" => StepKind::MemAccess(self.memory_access(t, value)?),
            "set" => StepKind::Set(self.set_knobs(ctx, value)?),
            "spawn" => StepKind::Spawn(self.name(ctx, verb, value, "a group")?),
            "loop" => StepKind::Loop {
                repeat: self.expr(ctx, verb, value, false)?,
                var: t.get("var").map(|v| self.var(ctx, v)).transpose()?,
                body: self.steps(
                    ctx,
                    "steps",
                    t.need("steps", "steps = [...], the steps repeated")?,
                )?,
            },
            "timer" => StepKind::Timed {
                name: self.name(ctx, verb, value, "the timer")?,
                body: self.steps(
                    ctx,
                    "steps",
                    t.need("steps", "steps = [...], the steps timed")?,
                )?,
            },
            "count" => StepKind::Count {
                name: self.name(ctx, verb, value, "the count")?,
                by: match t.get("by") {
                    Some(b) => self.expr(ctx, "by", b, false)?,
                    None => Expr::literal(Quantity::plain(1.0), span_of(value)),
                },
            },
            _ => unreachable!("every verb is read above"),
        };
        Ok(kind)
    }

    /// A `memory` step (`t`, whose verb's value is `value`): `memory = "read" | "write" |
    /// "chase"`, `size`, `count`, and for a chase `stride` and `pattern`; `shared` names a
    /// buffer every task's memory steps of that kind use. Checked with every other memory
    /// access when the file is compiled ([`MemAccess::check`]); the steps of one shared buffer
    /// must agree ([`SharedBuffers`]).
    fn memory_access(&self, t: &Table<'_, '_>, value: &Value<'_>) -> Result<MemAccess, Diagnostic> {
        const KINDS: [&str; 3] = ["read", "write", "chase"];
        const PATTERNS: [&str; 2] = ["random", "sequential"];
        let ctx = t.ctx.as_str();
        let k = self.string(
            ctx,
            "memory",
            value,
            "a string: \"read\", \"write\" or \"chase\"",
        )?;
        let kind = match k.value {
            "read" => MemAccessKind::Read,
            "write" => MemAccessKind::Write,
            "chase" => MemAccessKind::Chase,
            other => {
                return Err(Diagnostic::new(
                    k.inner(),
                    within(
                        ctx,
                        format!(
                            "`memory` = \"{other}\" is not accepted; it is \"read\", \"write\" or \"chase\"{}",
                            did_you_mean(other, KINDS)
                        ),
                    ),
                ))
            }
        };
        let chase = kind == MemAccessKind::Chase;
        let size = t.need("size", "size = SIZE, the buffer's bytes (e.g. \"1MiB\")")?;
        let size = self.memory_value(ctx, "size", size, true)?;
        let count = t.need(
            "count",
            if chase {
                "count = N, the pointers the chase follows"
            } else {
                "count = N, the bytes read or written one at a time (wrapping at the buffer's end)"
            },
        )?;
        let count = self.memory_value(ctx, "count", count, !chase)?;
        if !chase {
            for key in ["stride", "pattern"] {
                if let Some(v) = t.get(key) {
                    return Err(Diagnostic::new(
                        span_of(v),
                        within(ctx, format!("`{key}` is a chase's; a {} goes through its buffer byte by byte from the start: remove it", kind.name())),
                    ));
                }
            }
        }
        let stride = match t.get("stride") {
            Some(v) => self.memory_value(ctx, "stride", v, true)?,
            None => 64,
        };
        let pattern = match t.get("pattern") {
            None => ChasePattern::Random,
            Some(v) => {
                let p = self.string(ctx, "pattern", v, "a string: \"random\" or \"sequential\"")?;
                match p.value {
                    "random" => ChasePattern::Random,
                    "sequential" => ChasePattern::Sequential,
                    other => {
                        return Err(Diagnostic::new(
                            p.inner(),
                            within(
                                ctx,
                                format!(
                                    "`pattern` = \"{other}\" is not accepted; it is \"random\" (the default: bit-reversed positions, which prefetchers do not follow) or \"sequential\"{}",
                                    did_you_mean(other, PATTERNS)
                                ),
                            ),
                        ))
                    }
                }
            }
        };
        let shared = (t.get("shared"))
            .map(|v| self.name(ctx, "shared", v, "the shared buffer"))
            .transpose()?;
        let access = MemAccess {
            kind,
            size,
            count,
            stride,
            pattern,
            shared: shared.as_ref().map(|s| Arc::from(s.value.as_str())),
        };
        if let Some(name) = &shared {
            if let Err((first, at)) = self.shared_buffers.borrow_mut().admit(&access, t.span) {
                let line = LineCol::of(self.text, at.start).line;
                return Err(Diagnostic::new(
                    name.span,
                    within(ctx, format!("buffer \"{}\" ({access}) is shared with the {} step at line {line} ({first}); every memory step of one shared buffer gives the same size, and a chase the same stride and pattern", name.value, kind.name())),
                ));
            }
        }
        Ok(access)
    }

    /// `key` of a `memory` step: a whole number, a size (`bytes`: "64KiB", or a plain number
    /// of bytes) or a plain count, fixed when the file is read — a task's buffers are made
    /// before it runs, so the value names no parameter.
    fn memory_value(
        &self,
        ctx: &str,
        key: &str,
        v: &Value<'_>,
        bytes: bool,
    ) -> Result<u64, Diagnostic> {
        let e = self.expr(ctx, key, v, !bytes)?;
        if let Some(&(name, at)) = e.names().first() {
            return Err(Diagnostic::new(
                at,
                within(ctx, format!("`{key}` '{e}' names '{name}'; a memory step's values are fixed when the file is read (its buffers are made before the task runs): write a number{}", if bytes { " or a size such as \"64KiB\"" } else { "" })),
            ));
        }
        let (c, unit) = expr::compile(&e, &|_: &str| None, &Vec::<String>::new)?;
        let units: &[Unit] = if bytes {
            &[Unit::Bytes, Unit::None]
        } else {
            &[Unit::None]
        };
        crate::compile::check_unit(&e, &label(ctx, key), unit, units)?;
        let value = c
            .constant()
            .expect("an expression without names is a constant");
        if !(value >= 0.0 && value.fract() == 0.0 && value < u64::MAX as f64) {
            return Err(Diagnostic::new(
                e.span,
                within(
                    ctx,
                    format!(
                        "`{key}` '{e}' is {value}; it must be a whole number{} from 0",
                        if bytes { " of bytes" } else { "" }
                    ),
                ),
            ));
        }
        Ok(value as u64)
    }

    /// A `compute` or `sleep` amount: an expression, or a table with one distribution.
    fn amount(&self, ctx: &str, key: &str, v: &Value<'_>) -> Result<Amount, Diagnostic> {
        let DeValue::Table(map) = v.get_ref() else {
            if matches!(
                v.get_ref(),
                DeValue::String(_) | DeValue::Integer(_) | DeValue::Float(_)
            ) {
                return Ok(Amount::Fixed(self.expr(ctx, key, v, false)?));
            }
            return Err(self.wrong(
                ctx,
                key,
                v,
                "a duration (\"2ms\", an expression) or a distribution ({ uniform = [\"1ms\", \"3ms\"] }, { exponential = \"2ms\" }, { normal = \"2ms\", sd = \"500us\" }, { lognormal = \"2ms\", sd = \"1ms\" })",
            ));
        };
        let t = Table {
            map,
            span: span_of(v),
            ctx: within(ctx, format!("`{key}` distribution")),
        };
        let mut accepted = DISTRIBUTIONS.to_vec();
        accepted.push("sd");
        t.only(&accepted)?;
        let given: Vec<(&str, Span)> = map
            .iter()
            .filter(|(k, _)| DISTRIBUTIONS.contains(&k.get_ref().as_ref()))
            .map(|(k, _)| (k.get_ref().as_ref(), span_of(k)))
            .collect();
        let dist = match given.as_slice() {
            [one] => one.0,
            [] => {
                return Err(Diagnostic::new(
                    t.span,
                    within(
                        &t.ctx,
                        format!("name one distribution: {}", list(DISTRIBUTIONS)),
                    ),
                ))
            }
            [first, second, ..] => {
                return Err(Diagnostic::new(
                    second.1,
                    within(
                        &t.ctx,
                        format!(
                            "has `{}` and `{}`; give one distribution",
                            first.0, second.0
                        ),
                    ),
                ))
            }
        };
        let value = t.get(dist).expect("the distribution is a key");
        if let (Some((sd, _)), "uniform" | "exponential") = (map.get_key_value("sd"), dist) {
            return Err(Diagnostic::new(
                span_of(sd),
                within(
                    &t.ctx,
                    format!("`sd` is only for normal and lognormal, not {dist}"),
                ),
            ));
        }
        let sd = || -> Result<Expr, Diagnostic> {
            let sd = t.need("sd", "sd = DURATION, the standard deviation")?;
            self.expr(&t.ctx, "sd", sd, false)
        };
        Ok(match dist {
            "uniform" => {
                let bounds = match value.get_ref() {
                    DeValue::Array(items) if items.len() == 2 => items,
                    _ => {
                        return Err(self.wrong(
                            &t.ctx,
                            dist,
                            value,
                            "an array of two durations, low and high ([\"1ms\", \"3ms\"])",
                        ))
                    }
                };
                Amount::Uniform {
                    low: self.expr(&t.ctx, dist, &bounds[0], false)?,
                    high: self.expr(&t.ctx, dist, &bounds[1], false)?,
                }
            }
            "exponential" => Amount::Exponential {
                mean: self.expr(&t.ctx, dist, value, false)?,
            },
            "normal" => Amount::Normal {
                mean: self.expr(&t.ctx, dist, value, false)?,
                sd: sd()?,
            },
            _ => Amount::LogNormal {
                mean: self.expr(&t.ctx, dist, value, false)?,
                sd: sd()?,
            },
        })
    }

    /// A reference to a channel, lock, barrier, semaphore or condition: `name` or `name[EXPR]`.
    fn reference(&self, ctx: &str, key: &str, v: &Value<'_>) -> Result<ObjectRef, Diagnostic> {
        let s = self.string(
            ctx,
            key,
            v,
            "a string naming an object: NAME or NAME[INDEX]",
        )?;
        let name_len = s
            .value
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.value.len());
        let name = &s.value[..name_len];
        let rest = &s.value[name_len..];
        let bad = |span: Span| {
            Diagnostic::new(
                span,
                format!(
                    "{}: '{}' is not a reference; write NAME or NAME[INDEX], e.g. \"inbox\" or \"inbox[index % 4]\"",
                    label(ctx, key),
                    s.value
                ),
            )
        };
        if !is_ident(name) {
            return Err(bad(s.inner()));
        }
        let name = Spanned::new(name.to_string(), s.sub(0, name_len));
        if rest.is_empty() {
            return Ok(ObjectRef { name, index: None });
        }
        if !(rest.starts_with('[') && rest.ends_with(']') && rest.len() >= 2) {
            return Err(bad(s.sub(name_len, rest.len())));
        }
        let index = s.expr(name_len + 1, rest.len() - 2).map_err(|mut d| {
            d.message = format!("{} '{}': {}", label(ctx, key), s.value, d.message);
            d
        })?;
        Ok(ObjectRef {
            name,
            index: Some(index),
        })
    }
}

/// A step written as a string: `"yield"`, `"wait"`, `"exit"` or `"truncate"`.
fn string_step(ctx: &str, s: &str, span: Span) -> Result<Step, Diagnostic> {
    let verbs = || VERBS.iter().map(|v| v.0);
    let kind = match s {
        "yield" => StepKind::Yield,
        "wait" => StepKind::WaitChild,
        "exit" => StepKind::Exit,
        "truncate" => StepKind::Io {
            kind: IoKind::Truncate,
            bytes: Expr::literal(Quantity::plain(0.0), span),
        },
        other if verbs().any(|v| v == other) => {
            return Err(Diagnostic::new(
                span,
                within(
                    ctx,
                    format!("step \"{other}\" needs a value; write it as {{ {other} = ... }}"),
                ),
            ))
        }
        other => {
            return Err(Diagnostic::new(
                span,
                within(
                    ctx,
                    format!(
                        "step \"{other}\" is not accepted; a step written as a string is \"yield\", \"truncate\", \"wait\" or \"exit\", others are tables such as {{ compute = \"1ms\" }}{}",
                        did_you_mean(other, verbs())
                    ),
                ),
            ))
        }
    };
    Ok(Step { kind, span })
}

/// The verb of a step whose keys are `keys` (a `cond_wait` step's `lock` is its modifier):
/// exactly one.
fn step_verb<'k>(ctx: &str, keys: &[(&'k str, Span)], span: Span) -> Result<&'k str, Diagnostic> {
    let verbs = || VERBS.iter().map(|v| v.0);
    // A key that is a verb and also a modifier of another verb given (`cond_wait`'s `lock`,
    // `memory`'s `count`) is that modifier.
    let modifier_of_another = |k: &str| {
        VERBS
            .iter()
            .any(|(v, m)| *v != k && m.contains(&k) && keys.iter().any(|(g, _)| g == v))
    };
    let present: Vec<(&str, Span)> = keys
        .iter()
        .copied()
        .filter(|(k, _)| verbs().any(|v| v == *k) && !modifier_of_another(k))
        .collect();
    match present.as_slice() {
        [] => {
            let modifiers: Vec<&str> = VERBS.iter().flat_map(|v| v.1.iter().copied()).collect();
            if let Some((k, at)) = keys.iter().find(|(k, _)| !modifiers.contains(k)) {
                return Err(Diagnostic::new(
                    *at,
                    within(
                        ctx,
                        format!(
                            "unknown key `{k}` in a step; a step's verb is one of {}{}",
                            list(&verbs().collect::<Vec<_>>()),
                            did_you_mean(k, verbs())
                        ),
                    ),
                ));
            }
            let given: Vec<String> = keys.iter().map(|k| format!("`{}`", k.0)).collect();
            Err(Diagnostic::new(
                span,
                within(
                    ctx,
                    format!(
                        "a step needs one verb ({}); this one has {}",
                        list(&verbs().collect::<Vec<_>>()),
                        if given.is_empty() { "no key".to_string() } else { format!("only {}", given.join(", ")) }
                    ),
                ),
            ))
        }
        [one] => Ok(one.0),
        [first, second, ..] => Err(Diagnostic::new(
            second.1,
            within(
                ctx,
                format!(
                    "a step has exactly one verb, and this one has `{}` and `{}`; write them as two steps",
                    first.0, second.0
                ),
            ),
        )),
    }
}

/// Refuse a key of step `verb` (`step_ctx`, for messages) that is neither its verb nor one of
/// its modifiers.
fn check_step_keys(step_ctx: &str, verb: &str, keys: &[(&str, Span)]) -> Result<(), Diagnostic> {
    let verbs = || VERBS.iter().map(|v| v.0);
    let modifiers = VERBS.iter().find(|v| v.0 == verb).map_or(&[][..], |v| v.1);
    for (k, at) in keys {
        if *k == verb || modifiers.contains(k) {
            continue;
        }
        let takes = if modifiers.is_empty() {
            "it takes no other key".to_string()
        } else {
            format!("it takes {}", list(modifiers))
        };
        let hint = match did_you_mean(k, modifiers.iter().copied()) {
            h if !h.is_empty() => h,
            _ => match crate::error::nearest(k, verbs()) {
                Some(v) => format!(
                    " (did you mean '{v}'? a step has one verb: write it as a step of its own)"
                ),
                None => String::new(),
            },
        };
        return Err(Diagnostic::new(
            *at,
            format!("{step_ctx}: unknown key `{k}`; {takes}{hint}"),
        ));
    }
    Ok(())
}
