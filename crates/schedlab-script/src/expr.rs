//! Expressions in a workload file: `groups * fds`, `index - index % fds + r`, `period / 4`,
//! `2ms`, `min(work, 5ms)`.
//!
//! Numbers carry a unit — none, seconds or bytes — written as a suffix (`500us`, `4KiB`) and
//! checked when the file is read: `compute = "5"` is refused (a duration needs a unit), and so is
//! `1ms + 4KiB`. An expression is parsed once, then *compiled* for each configuration: the
//! file's parameters become constants, the task's `index` and `count` and the loop variables
//! become slots, so running a step costs a few arithmetic operations and no name lookups.

use crate::error::{did_you_mean, Diagnostic};
use crate::span::Span;
use std::fmt;

/// The unit of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// A plain number (a count, an index, a ratio).
    None,
    /// A duration, in seconds.
    Seconds,
    /// A size, in bytes.
    Bytes,
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::None => "a plain number",
            Unit::Seconds => "a duration",
            Unit::Bytes => "a size",
        })
    }
}

/// A number with its unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantity {
    /// The value, in seconds for durations and bytes for sizes.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
}

impl Quantity {
    /// A plain number.
    pub fn plain(value: f64) -> Quantity {
        Quantity {
            value,
            unit: Unit::None,
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.unit {
            Unit::None => write!(f, "{}", self.value),
            Unit::Seconds => {
                let ns = self.value * 1e9;
                let (v, u) = if ns.abs() >= 1e9 {
                    (ns / 1e9, "s")
                } else if ns.abs() >= 1e6 {
                    (ns / 1e6, "ms")
                } else if ns.abs() >= 1e3 {
                    (ns / 1e3, "us")
                } else {
                    (ns, "ns")
                };
                write!(f, "{}{u}", trim(v))
            }
            Unit::Bytes => {
                let b = self.value;
                let (v, u) = if b.abs() >= 1024.0 * 1024.0 * 1024.0 && b % (1 << 30) as f64 == 0.0 {
                    (b / (1u64 << 30) as f64, "GiB")
                } else if b.abs() >= 1024.0 * 1024.0 && b % (1 << 20) as f64 == 0.0 {
                    (b / (1u64 << 20) as f64, "MiB")
                } else if b.abs() >= 1024.0 && b % 1024.0 == 0.0 {
                    (b / 1024.0, "KiB")
                } else {
                    (b, "B")
                };
                write!(f, "{}{u}", trim(v))
            }
        }
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// The unit suffixes a number may carry, with their scale.
const SUFFIXES: &[(&str, f64, Unit)] = &[
    ("ns", 1e-9, Unit::Seconds),
    ("us", 1e-6, Unit::Seconds),
    ("µs", 1e-6, Unit::Seconds),
    ("ms", 1e-3, Unit::Seconds),
    ("s", 1.0, Unit::Seconds),
    ("min", 60.0, Unit::Seconds),
    ("B", 1.0, Unit::Bytes),
    ("KiB", 1024.0, Unit::Bytes),
    ("MiB", 1048576.0, Unit::Bytes),
    ("GiB", 1073741824.0, Unit::Bytes),
];

/// What the suffix error lists.
const SUFFIX_HELP: &str = "ns, us, ms, s, min, B, KiB, MiB or GiB";

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%` (remainder, of plain numbers)
    Rem,
}

/// A built-in function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
    /// `floor(a)` (of a plain number)
    Floor,
    /// `ceil(a)` (of a plain number)
    Ceil,
}

impl Func {
    fn by_name(name: &str) -> Option<(Func, usize)> {
        Some(match name {
            "min" => (Func::Min, 2),
            "max" => (Func::Max, 2),
            "floor" => (Func::Floor, 1),
            "ceil" => (Func::Ceil, 1),
            _ => return None,
        })
    }
}

/// A parsed expression node.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// A literal.
    Num(Quantity),
    /// A name: a parameter, `index`, `count`, or a loop variable.
    Name(String),
    /// `-x`
    Neg(Box<Expr>),
    /// `a op b`
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// `f(args)`
    Call(Func, Vec<Expr>),
}

/// An expression as written, with where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it is.
    pub node: Node,
    /// Where it is in the file.
    pub span: Span,
    /// Its text as written (for messages and `check`'s plan).
    pub text: String,
}

impl Expr {
    /// A literal, for values a reader builds itself (rt-app's microseconds).
    pub fn literal(q: Quantity, span: Span) -> Expr {
        Expr {
            node: Node::Num(q),
            span,
            text: q.to_string(),
        }
    }

    /// Every name the expression uses, with its span.
    pub fn names(&self) -> Vec<(&str, Span)> {
        let mut out = Vec::new();
        self.collect_names(&mut out);
        out
    }

    fn collect_names<'a>(&'a self, out: &mut Vec<(&'a str, Span)>) {
        match &self.node {
            Node::Num(_) => {}
            Node::Name(n) => out.push((n, self.span)),
            Node::Neg(e) => e.collect_names(out),
            Node::Bin(_, a, b) => {
                a.collect_names(out);
                b.collect_names(out);
            }
            Node::Call(_, args) => args.iter().for_each(|a| a.collect_names(out)),
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Parse `text`, which sits at `span` of the file (a string value: the span includes its
/// quotes when `quoted`, so offsets start one byte in).
pub fn parse(text: &str, span: Span, quoted: bool) -> Result<Expr, Diagnostic> {
    let base = if quoted { span.start + 1 } else { span.start };
    let mut p = Parser {
        text,
        pos: 0,
        base,
        whole: span,
    };
    p.skip_ws();
    if p.pos == text.len() {
        return Err(Diagnostic::new(
            span,
            "an empty expression is not accepted; write a number (with a unit for durations and sizes) or a parameter's name",
        ));
    }
    let e = p.expr()?;
    p.skip_ws();
    if p.pos != text.len() {
        return Err(Diagnostic::new(
            p.span_at(p.pos, text.len() - p.pos),
            format!(
                "'{}' after the expression '{}' is not accepted; use + - * / % between values",
                &text[p.pos..],
                text[..p.pos].trim()
            ),
        ));
    }
    Ok(e)
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    base: usize,
    whole: Span,
}

impl Parser<'_> {
    fn span_at(&self, pos: usize, len: usize) -> Span {
        let start = (self.base + pos).min(self.whole.end);
        Span::new(
            start,
            (start + len.max(1)).min(self.whole.end.max(start + 1)),
        )
    }

    fn skip_ws(&mut self) {
        while self.pos < self.text.len() && self.text.as_bytes()[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn finish(&self, node: Node, start: usize) -> Expr {
        Expr {
            node,
            span: self.span_at(start, self.pos - start),
            text: self.text[start..self.pos].trim().to_string(),
        }
    }

    fn expr(&mut self) -> Result<Expr, Diagnostic> {
        let start = self.pos;
        let mut left = self.term()?;
        loop {
            self.skip_ws();
            let op = match self.peek() {
                Some('+') => BinOp::Add,
                Some('-') => BinOp::Sub,
                _ => return Ok(left),
            };
            self.pos += 1;
            let right = self.term()?;
            left = self.finish(Node::Bin(op, Box::new(left), Box::new(right)), start);
        }
    }

    fn term(&mut self) -> Result<Expr, Diagnostic> {
        self.skip_ws();
        let start = self.pos;
        let mut left = self.unary()?;
        loop {
            self.skip_ws();
            let op = match self.peek() {
                Some('*') => BinOp::Mul,
                Some('/') => BinOp::Div,
                Some('%') => BinOp::Rem,
                _ => return Ok(left),
            };
            self.pos += 1;
            let right = self.unary()?;
            left = self.finish(Node::Bin(op, Box::new(left), Box::new(right)), start);
        }
    }

    fn unary(&mut self) -> Result<Expr, Diagnostic> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() == Some('-') {
            self.pos += 1;
            let e = self.unary()?;
            return Ok(self.finish(Node::Neg(Box::new(e)), start));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Expr, Diagnostic> {
        self.skip_ws();
        let start = self.pos;
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                let inner = self.expr()?;
                self.skip_ws();
                if self.peek() != Some(')') {
                    return Err(Diagnostic::new(
                        self.span_at(start, 1),
                        format!("'(' in '{}' is never closed; add ')'", self.text.trim()),
                    ));
                }
                self.pos += 1;
                Ok(Expr {
                    span: self.span_at(start, self.pos - start),
                    text: self.text[start..self.pos].to_string(),
                    node: inner.node,
                })
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => {
                let name = self.word();
                self.skip_ws();
                if self.peek() == Some('(') {
                    let Some((func, arity)) = Func::by_name(&name) else {
                        return Err(Diagnostic::new(
                            self.span_at(start, name.len()),
                            format!(
                                "function '{name}' is not known; use min, max, floor or ceil{}",
                                did_you_mean(&name, ["min", "max", "floor", "ceil"])
                            ),
                        ));
                    };
                    self.pos += 1;
                    let mut args = Vec::new();
                    loop {
                        args.push(self.expr()?);
                        self.skip_ws();
                        match self.peek() {
                            Some(',') => self.pos += 1,
                            Some(')') => {
                                self.pos += 1;
                                break;
                            }
                            _ => {
                                return Err(Diagnostic::new(
                                    self.span_at(start, self.pos - start),
                                    format!("{name}(...) is not closed; add ')'"),
                                ))
                            }
                        }
                    }
                    if args.len() != arity {
                        return Err(Diagnostic::new(
                            self.span_at(start, self.pos - start),
                            format!(
                                "{name} takes {arity} argument{}, not {}",
                                if arity == 1 { "" } else { "s" },
                                args.len()
                            ),
                        ));
                    }
                    return Ok(self.finish(Node::Call(func, args), start));
                }
                Ok(self.finish(Node::Name(name), start))
            }
            Some(c) => Err(Diagnostic::new(
                self.span_at(start, c.len_utf8()),
                format!(
                    "'{c}' is not accepted in an expression; use numbers, names, + - * / %, min/max/floor/ceil and parentheses"
                ),
            )),
            None => Err(Diagnostic::new(
                self.span_at(self.pos.saturating_sub(1), 1),
                format!("'{}' ends where a value was expected", self.text.trim()),
            )),
        }
    }

    /// A name: letters, digits and `_`, with inner dots (`audio.latency`, a metric's name).
    fn word(&mut self) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            let dot_then_name = c == '.'
                && self.text[self.pos + 1..]
                    .chars()
                    .next()
                    .is_some_and(|d| d.is_alphabetic() || d == '_');
            if c.is_alphanumeric() || c == '_' || dot_then_name {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        self.text[start..self.pos].to_string()
    }

    fn number(&mut self) -> Result<Expr, Diagnostic> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() || c == '.' || c == '_' {
                self.pos += 1;
            } else if (c == 'e' || c == 'E')
                && self.text[self.pos + 1..]
                    .chars()
                    .next()
                    .is_some_and(|d| d.is_ascii_digit() || d == '-' || d == '+')
            {
                self.pos += 2;
            } else {
                break;
            }
        }
        let digits = self.text[start..self.pos].replace('_', "");
        let Ok(value) = digits.parse::<f64>() else {
            return Err(Diagnostic::new(
                self.span_at(start, self.pos - start),
                format!("'{}' is not a number", &self.text[start..self.pos]),
            ));
        };
        let suffix_start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_alphabetic() {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        let suffix = &self.text[suffix_start..self.pos];
        let q = if suffix.is_empty() {
            Quantity::plain(value)
        } else {
            let Some(&(_, scale, unit)) = SUFFIXES.iter().find(|(s, _, _)| *s == suffix) else {
                return Err(Diagnostic::new(
                    self.span_at(suffix_start, suffix.len()),
                    format!(
                        "unit '{suffix}' in '{}' is not known; use {SUFFIX_HELP}{}",
                        &self.text[start..self.pos],
                        did_you_mean(suffix, SUFFIXES.iter().map(|s| s.0))
                    ),
                ));
            };
            Quantity {
                value: value * scale,
                unit,
            }
        };
        if !q.value.is_finite() {
            return Err(Diagnostic::new(
                self.span_at(start, self.pos - start),
                format!("'{}' is too large", &self.text[start..self.pos]),
            ));
        }
        Ok(self.finish(Node::Num(q), start))
    }
}

/// What a name stands for when an expression is compiled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Binding {
    /// A constant (a parameter's value in this configuration).
    Const(Quantity),
    /// A plain number that changes while the body runs (the task's index, a loop variable):
    /// slot `n` of the frame.
    Slot(usize),
}

/// A compiled expression: names resolved, units checked, constants folded.
#[derive(Clone, Debug, PartialEq)]
pub enum Compiled {
    /// A constant.
    Const(f64),
    /// A frame slot.
    Slot(usize),
    /// `-x`
    Neg(Box<Compiled>),
    /// `a op b`
    Bin(BinOp, Box<Compiled>, Box<Compiled>),
    /// `f(args)`
    Call(Func, Vec<Compiled>),
}

impl Compiled {
    /// The value, with the frame's slots.
    #[inline]
    pub fn eval(&self, slots: &[f64]) -> f64 {
        match self {
            Compiled::Bin(op, a, b) => {
                // The operands are mostly constants and slots: read them without a call.
                let x = match &**a {
                    Compiled::Const(v) => *v,
                    Compiled::Slot(i) => slots[*i],
                    e => e.eval(slots),
                };
                let y = match &**b {
                    Compiled::Const(v) => *v,
                    Compiled::Slot(i) => slots[*i],
                    e => e.eval(slots),
                };
                apply(*op, x, y)
            }
            Compiled::Const(v) => *v,
            Compiled::Slot(i) => slots[*i],
            Compiled::Neg(e) => -e.eval(slots),
            Compiled::Call(f, args) => {
                call(*f, &args.iter().map(|a| a.eval(slots)).collect::<Vec<_>>())
            }
        }
    }

    /// This expression with slot `slot` fixed at `value`, folded (a task's `index` is fixed for
    /// its whole body).
    pub fn with_slot(&self, slot: usize, value: f64) -> Compiled {
        fold(self.substitute(slot, value))
    }

    fn substitute(&self, slot: usize, value: f64) -> Compiled {
        match self {
            Compiled::Slot(s) if *s == slot => Compiled::Const(value),
            Compiled::Const(_) | Compiled::Slot(_) => self.clone(),
            Compiled::Neg(e) => Compiled::Neg(Box::new(e.substitute(slot, value))),
            Compiled::Bin(op, a, b) => Compiled::Bin(
                *op,
                Box::new(a.substitute(slot, value)),
                Box::new(b.substitute(slot, value)),
            ),
            Compiled::Call(f, args) => {
                Compiled::Call(*f, args.iter().map(|a| a.substitute(slot, value)).collect())
            }
        }
    }

    /// The constant value, if it has no slot.
    pub fn constant(&self) -> Option<f64> {
        match self {
            Compiled::Const(v) => Some(*v),
            _ => None,
        }
    }
}

#[inline]
fn apply(op: BinOp, a: f64, b: f64) -> f64 {
    match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => a / b,
        BinOp::Rem => rem(a, b),
    }
}

/// `a mod b` (Euclidean), on integers when both are whole (the common case: `index % fds`),
/// which avoids the floating-point `fmod`.
#[inline]
fn rem(a: f64, b: f64) -> f64 {
    let (ai, bi) = (a as i64, b as i64);
    if ai as f64 == a && bi as f64 == b && bi != 0 {
        ai.rem_euclid(bi) as f64
    } else {
        a.rem_euclid(b)
    }
}

/// `v` as a whole number, if it is one (no `trunc` call: a round trip through `i64`).
#[inline]
pub fn whole(v: f64) -> Option<i64> {
    let i = v as i64;
    (i as f64 == v).then_some(i)
}

fn call(f: Func, args: &[f64]) -> f64 {
    match f {
        Func::Min => args[0].min(args[1]),
        Func::Max => args[0].max(args[1]),
        Func::Floor => args[0].floor(),
        Func::Ceil => args[0].ceil(),
    }
}

/// Compile `expr`, resolving each name with `lookup` (`None`: not defined; `accepted` lists what
/// is, for the error).
pub fn compile(
    expr: &Expr,
    lookup: &dyn Fn(&str) -> Option<(Binding, Unit)>,
    accepted: &dyn Fn() -> Vec<String>,
) -> Result<(Compiled, Unit), Diagnostic> {
    let (c, unit) = compile_node(expr, lookup, accepted)?;
    Ok((fold(c), unit))
}

fn compile_node(
    expr: &Expr,
    lookup: &dyn Fn(&str) -> Option<(Binding, Unit)>,
    accepted: &dyn Fn() -> Vec<String>,
) -> Result<(Compiled, Unit), Diagnostic> {
    let at = |message: String| Diagnostic::new(expr.span, message);
    Ok(match &expr.node {
        Node::Num(q) => (Compiled::Const(q.value), q.unit),
        Node::Name(n) => match lookup(n) {
            Some((Binding::Const(q), _)) => (Compiled::Const(q.value), q.unit),
            Some((Binding::Slot(s), unit)) => (Compiled::Slot(s), unit),
            None => {
                let names = accepted();
                return Err(at(format!(
                    "'{n}' is not defined here; use {}{}",
                    if names.is_empty() {
                        "a number".to_string()
                    } else {
                        names.join(", ")
                    },
                    did_you_mean(n, names.iter().map(String::as_str))
                )));
            }
        },
        Node::Neg(e) => {
            let (c, u) = compile_node(e, lookup, accepted)?;
            (Compiled::Neg(Box::new(c)), u)
        }
        Node::Bin(op, a, b) => {
            let (ca, ua) = compile_node(a, lookup, accepted)?;
            let (cb, ub) = compile_node(b, lookup, accepted)?;
            let unit = match op {
                BinOp::Add | BinOp::Sub if ua == ub => ua,
                BinOp::Add | BinOp::Sub => {
                    return Err(at(format!(
                        "'{}' adds {ua} ('{a}') and {ub} ('{b}'); both sides need the same unit",
                        expr.text
                    )))
                }
                BinOp::Mul => match (ua, ub) {
                    (Unit::None, u) | (u, Unit::None) => u,
                    _ => {
                        return Err(at(format!(
                            "'{}' multiplies {ua} by {ub}; one side must be a plain number",
                            expr.text
                        )))
                    }
                },
                BinOp::Div => match (ua, ub) {
                    (u, Unit::None) => u,
                    (x, y) if x == y => Unit::None,
                    _ => {
                        return Err(at(format!(
                        "'{}' divides {ua} by {ub}; divide by a plain number or by the same unit",
                        expr.text
                    )))
                    }
                },
                BinOp::Rem if ua == Unit::None && ub == Unit::None => Unit::None,
                BinOp::Rem => {
                    return Err(at(format!(
                        "'{}' takes a remainder of {ua} and {ub}; % takes plain numbers",
                        expr.text
                    )))
                }
            };
            (Compiled::Bin(*op, Box::new(ca), Box::new(cb)), unit)
        }
        Node::Call(f, args) => {
            let mut cs = Vec::new();
            let mut units = Vec::new();
            for a in args {
                let (c, u) = compile_node(a, lookup, accepted)?;
                cs.push(c);
                units.push(u);
            }
            let unit = match f {
                Func::Min | Func::Max if units[0] == units[1] => units[0],
                Func::Min | Func::Max => {
                    return Err(at(format!(
                        "'{}' compares {} and {}; both need the same unit",
                        expr.text, units[0], units[1]
                    )))
                }
                Func::Floor | Func::Ceil if units[0] == Unit::None => Unit::None,
                Func::Floor | Func::Ceil => {
                    return Err(at(format!(
                        "'{}' rounds {}; floor and ceil take plain numbers",
                        expr.text, units[0]
                    )))
                }
            };
            (Compiled::Call(*f, cs), unit)
        }
    })
}

/// Fold constant sub-expressions.
fn fold(c: Compiled) -> Compiled {
    match c {
        Compiled::Neg(e) => match fold(*e) {
            Compiled::Const(v) => Compiled::Const(-v),
            e => Compiled::Neg(Box::new(e)),
        },
        Compiled::Bin(op, a, b) => match (fold(*a), fold(*b)) {
            (Compiled::Const(x), Compiled::Const(y)) => Compiled::Const(apply(op, x, y)),
            (a, b) => Compiled::Bin(op, Box::new(a), Box::new(b)),
        },
        Compiled::Call(f, args) => {
            let args: Vec<Compiled> = args.into_iter().map(fold).collect();
            if args.iter().all(|a| a.constant().is_some()) {
                let vals: Vec<f64> = args.iter().filter_map(Compiled::constant).collect();
                Compiled::Const(call(f, &vals))
            } else {
                Compiled::Call(f, args)
            }
        }
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Expr, Diagnostic> {
        parse(text, Span::new(10, 10 + text.len() + 2), true)
    }

    fn eval(
        text: &str,
        vars: &[(&str, Binding, Unit)],
        slots: &[f64],
    ) -> Result<(f64, Unit), Diagnostic> {
        let e = p(text)?;
        let lookup = |n: &str| vars.iter().find(|v| v.0 == n).map(|v| (v.1, v.2));
        let (c, u) = compile(&e, &lookup, &|| {
            vars.iter().map(|v| v.0.to_string()).collect()
        })?;
        Ok((c.eval(slots), u))
    }

    #[test]
    fn arithmetic_with_units_and_precedence() {
        assert_eq!(eval("2ms * 3 + 1ms", &[], &[]).unwrap().1, Unit::Seconds);
        assert!((eval("2ms * 3 + 1ms", &[], &[]).unwrap().0 - 0.007).abs() < 1e-12);
        assert_eq!(eval("4KiB", &[], &[]).unwrap(), (4096.0, Unit::Bytes));
        assert_eq!(eval("10ms / 1ms", &[], &[]).unwrap(), (10.0, Unit::None));
        assert_eq!(eval("-(1 + 2) * 2", &[], &[]).unwrap().0, -6.0);
        assert_eq!(eval("min(3, max(1, 2))", &[], &[]).unwrap().0, 2.0);
        assert_eq!(eval("floor(7 / 2)", &[], &[]).unwrap().0, 3.0);
        assert_eq!(eval("1_000", &[], &[]).unwrap().0, 1000.0);
        let dotted = [(
            "audio.latency",
            Binding::Const(Quantity::plain(2.0)),
            Unit::None,
        )];
        assert_eq!(eval("audio.latency * 2", &dotted, &[]).unwrap().0, 4.0);
    }

    #[test]
    fn names_become_constants_or_slots() {
        let vars = [
            ("fds", Binding::Const(Quantity::plain(20.0)), Unit::None),
            ("index", Binding::Slot(0), Unit::None),
        ];
        assert_eq!(eval("index - index % fds", &vars, &[47.0]).unwrap().0, 40.0);
        let e = p("fds * 2").unwrap();
        let lookup = |n: &str| vars.iter().find(|v| v.0 == n).map(|v| (v.1, v.2));
        let (c, _) = compile(&e, &lookup, &|| vec![]).unwrap();
        assert_eq!(c, Compiled::Const(40.0), "constants fold");
    }

    #[test]
    fn faults_name_the_value_the_place_and_what_is_accepted() {
        let e = eval("1ms + 4KiB", &[], &[]).unwrap_err();
        assert!(e.message.contains("same unit"), "{}", e.message);
        let e = eval("10 parsecs", &[], &[]).unwrap_err();
        assert!(e.message.contains("after the expression"), "{}", e.message);
        let e = eval("10msec", &[], &[]).unwrap_err();
        assert!(e.message.contains("unit 'msec'"), "{}", e.message);
        assert_eq!(e.span.start, 11 + 2, "the span points at the suffix");
        let e = eval(
            "grups * 2",
            &[("groups", Binding::Const(Quantity::plain(1.0)), Unit::None)],
            &[],
        )
        .unwrap_err();
        assert!(e.message.contains("did you mean 'groups'"), "{}", e.message);
        assert!(eval("", &[], &[]).is_err());
        assert!(eval("(1 + 2", &[], &[]).is_err());
        assert!(eval("sqrt(4)", &[], &[]).is_err());
        assert!(eval("min(1)", &[], &[]).is_err());
        assert!(eval("1ms * 1ms", &[], &[]).is_err());
        assert!(eval("1ms % 2", &[], &[]).is_err());
    }
}
