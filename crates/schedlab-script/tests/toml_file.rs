//! schedlab's TOML workload files: a complete file read into the model, and every class of
//! fault reported at its `file:line:column` with the offending value and what is accepted.

use schedlab_script::expr::{BinOp, Expr, Node, Quantity, Unit};
use schedlab_script::model::{Amount, Grammar, ParamValue, ScriptDef, Step, StepKind};
use schedlab_script::span::Span;
use schedlab_script::toml_file;
use schedlab_workload::{ChasePattern, IoKind, MemAccess, MemAccessKind};
use std::path::Path;

const COMPLETE: &str = include_str!("files/complete.toml");

fn complete() -> ScriptDef {
    toml_file::read(Path::new("tests/files/complete.toml"), COMPLETE)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The text at `span` of the complete file.
fn at(span: Span) -> &'static str {
    &COMPLETE[span.start..span.end]
}

fn name(e: &Expr) -> &str {
    match &e.node {
        Node::Name(n) => n,
        other => panic!("not a name: {other:?}"),
    }
}

fn num(e: &Expr) -> Quantity {
    match &e.node {
        Node::Num(q) => *q,
        other => panic!("not a number: {other:?}"),
    }
}

fn seconds(s: f64) -> Quantity {
    Quantity {
        value: s,
        unit: Unit::Seconds,
    }
}

/// The error of reading `text` as `w.toml`, as the user sees it.
fn err(text: &str) -> String {
    match toml_file::read(Path::new("w.toml"), text) {
        Ok(def) => panic!("read without error: {def:?}"),
        Err(e) => e.to_string(),
    }
}

/// Assert that reading `text` fails at `prefix` (`w.toml:LINE:COL: `) with every word of
/// `words` in the message.
fn fails(text: &str, prefix: &str, words: &[&str]) {
    let e = err(text);
    assert!(e.starts_with(prefix), "expected {prefix}..., got: {e}");
    for w in words {
        assert!(e.contains(w), "expected '{w}' in: {e}");
    }
}

/// A file with one group whose steps are `steps`.
fn with_steps(steps: &str) -> String {
    format!("[groups.g]\nsteps = [{steps}]\n")
}

#[test]
fn a_complete_file_reads_into_the_model() {
    let def = complete();
    assert_eq!(def.name, "everything");
    assert_eq!(
        def.description,
        "a hackbench-like exchange with every step the language has"
    );
    assert_eq!(def.grammar, Grammar::Toml);
    assert_eq!(def.text, COMPLETE);
    assert_eq!(def.transport.as_ref().unwrap().value, "$transport");
    assert_eq!(at(def.transport.as_ref().unwrap().span), "\"$transport\"");
    assert_eq!(def.tasks.as_ref().unwrap().value, "threads");
    let start = def.start.as_ref().unwrap();
    let order: Vec<&str> = start.groups.iter().map(|g| g.value.as_str()).collect();
    assert_eq!(order, ["receiver", "sender", "ticker", "helper"]);
    assert_eq!(at(start.groups[1].span), "sender");
    assert_eq!(name(&start.chunk), "fds");

    let params: Vec<(&str, &ParamValue)> = def
        .params
        .iter()
        .map(|p| (p.name.value.as_str(), &p.default))
        .collect();
    assert_eq!(
        params,
        [
            ("fds", &ParamValue::Number(Quantity::plain(4.0))),
            ("loops", &ParamValue::Number(Quantity::plain(100.0))),
            ("ratio", &ParamValue::Number(Quantity::plain(0.5))),
            ("work", &ParamValue::Number(seconds(0.002))),
            (
                "datasize",
                &ParamValue::Number(Quantity {
                    value: 4096.0,
                    unit: Unit::Bytes
                })
            ),
            ("mode", &ParamValue::Text("fast".into())),
            ("transport", &ParamValue::Text("socketpair".into())),
            ("tick_period", &ParamValue::Number(seconds(0.01))),
        ]
    );
    let transport = &def.params[6];
    assert_eq!(transport.help, "how messages travel");
    assert_eq!(transport.choices, ["pipe", "socketpair"]);
    assert_eq!(at(transport.default_span), "\"socketpair\"");
    assert_eq!(at(transport.name.span), "transport");

    let groups: Vec<&str> = def.groups.iter().map(|g| g.name.value.as_str()).collect();
    assert_eq!(
        groups,
        ["receiver", "sender", "ticker", "helper"],
        "document order"
    );
    let receiver = &def.groups[0];
    assert_eq!(name(&receiver.count), "fds");
    let knobs: Vec<(&str, &str, &str)> = receiver
        .knobs
        .iter()
        .map(|(k, v)| (k.value.as_str(), v.value.as_str(), at(v.span)))
        .collect();
    assert_eq!(
        knobs,
        [
            ("nice", "-5", "-5"),
            ("policy", "batch", "\"batch\""),
            ("slice", "3ms", "\"3ms\""),
            ("cpus", "0-1", "\"0-1\""),
        ]
    );
    assert!(!receiver.spawned);
    assert!(at(receiver.span).starts_with("[groups.receiver]"));
    assert!(
        at(receiver.span).ends_with("] },\n]"),
        "{}",
        at(receiver.span)
    );
    let StepKind::Loop { repeat, var, body } = &receiver.body[0].kind else {
        panic!("{:?}", receiver.body[0]);
    };
    assert_eq!(name(repeat), "loops");
    assert_eq!(var.as_ref().unwrap().value, "i");
    assert_eq!(at(var.as_ref().unwrap().span), "i");
    let StepKind::Recv { channel, size } = &body[0].kind else {
        panic!("{:?}", body[0]);
    };
    assert_eq!(channel.name.value, "inbox");
    assert_eq!(at(channel.name.span), "inbox");
    let index = channel.index.as_ref().unwrap();
    assert_eq!(name(index), "index");
    assert_eq!(
        at(index.span),
        "index",
        "the index is spanned inside the string"
    );
    assert_eq!(name(size), "datasize");
    assert_eq!(at(size.span), "datasize");
    assert_eq!(
        at(body[0].span),
        "{ recv = \"inbox[index]\", size = \"datasize\" }"
    );
    let StepKind::Count { name: count, by } = &body[1].kind else {
        panic!("{:?}", body[1]);
    };
    assert_eq!(count.value, "messages");
    assert_eq!(num(by), Quantity::plain(1.0), "by defaults to 1");

    let sender = &def.groups[1];
    let Node::Bin(BinOp::Mul, a, b) = &sender.count.node else {
        panic!("{:?}", sender.count);
    };
    assert_eq!((name(a), num(b)), ("fds", Quantity::plain(2.0)));
    assert_eq!(at(sender.count.span), "fds * 2");
    let knobs: Vec<(&str, &str)> = sender
        .knobs
        .iter()
        .map(|(k, v)| (k.value.as_str(), v.value.as_str()))
        .collect();
    assert_eq!(knobs, [("nice", "5"), ("cpus", "0")]);
    let StepKind::Loop { body, .. } = &sender.body[0].kind else {
        panic!("{:?}", sender.body[0]);
    };
    let StepKind::Send { channel, .. } = &body[0].kind else {
        panic!("{:?}", body[0]);
    };
    let index = channel.index.as_ref().unwrap();
    assert!(matches!(index.node, Node::Bin(BinOp::Rem, _, _)));
    assert_eq!(at(index.span), "index % fds");
    let StepKind::Count { name: count, by } = &body[1].kind else {
        panic!("{:?}", body[1]);
    };
    assert_eq!(
        (count.value.as_str(), at(by.span)),
        ("bytes", "datasize / 1B")
    );
    assert_eq!(sender.body[1].kind, StepKind::Yield);

    let ticker = &def.groups[2];
    assert_eq!(
        num(&ticker.count),
        Quantity::plain(1.0),
        "count defaults to 1"
    );
    assert_eq!(
        at(ticker.count.span),
        "ticker",
        "the default is at the group's name"
    );
    let kinds: Vec<&StepKind> = ticker.body.iter().map(|s| &s.kind).collect();
    let StepKind::Period {
        timer,
        every,
        deadline,
    } = kinds[0]
    else {
        panic!("{:?}", kinds[0]);
    };
    assert_eq!((timer.value.as_str(), at(timer.span)), ("tick", "tick"));
    assert_eq!(name(every), "tick_period");
    assert_eq!(at(deadline.as_ref().unwrap().span), "tick_period / 2");
    let StepKind::Compute(Amount::Fixed(work)) = kinds[1] else {
        panic!("{:?}", kinds[1]);
    };
    assert_eq!(at(work.span), "work * ratio");
    let StepKind::Compute(Amount::Fixed(five)) = kinds[2] else {
        panic!("{:?}", kinds[2]);
    };
    assert_eq!(
        num(five),
        Quantity::plain(5.0),
        "a bare number stays a plain literal"
    );
    assert_eq!(at(five.span), "5");
    let StepKind::Compute(Amount::Uniform { low, high }) = kinds[3] else {
        panic!("{:?}", kinds[3]);
    };
    assert_eq!((num(low), num(high)), (seconds(0.001), seconds(0.003)));
    let StepKind::Sleep(Amount::Exponential { mean }) = kinds[4] else {
        panic!("{:?}", kinds[4]);
    };
    assert_eq!(num(mean), seconds(0.002));
    let StepKind::Sleep(Amount::Normal { mean, sd }) = kinds[5] else {
        panic!("{:?}", kinds[5]);
    };
    assert_eq!((num(mean), num(sd)), (seconds(0.002), seconds(500e-6)));
    let StepKind::Compute(Amount::LogNormal { mean, sd }) = kinds[6] else {
        panic!("{:?}", kinds[6]);
    };
    assert_eq!((num(mean), num(sd)), (seconds(0.002), seconds(0.001)));
    assert!(matches!(kinds[7], StepKind::Sleep(Amount::Fixed(_))));
    let StepKind::Busy(busy) = kinds[8] else {
        panic!("{:?}", kinds[8]);
    };
    assert_eq!(num(busy).unit, Unit::Seconds);
    assert!((num(busy).value - 100e-6).abs() < 1e-15, "{busy:?}");
    let StepKind::Spawn(helper) = kinds[9] else {
        panic!("{:?}", kinds[9]);
    };
    assert_eq!(helper.value, "helper");

    let helper = &def.groups[3];
    assert!(helper.spawned);
    let StepKind::Timed { name: timer, body } = &helper.body[0].kind else {
        panic!("{:?}", helper.body[0]);
    };
    assert_eq!(timer.value, "critical");
    assert!(
        matches!(&body[0].kind, StepKind::Lock(r) if r.name.value == "buffer" && r.index.is_none())
    );
    assert!(matches!(&body[1].kind, StepKind::Touch(e) if num(e).value == 65536.0));
    assert!(matches!(&body[2].kind, StepKind::Unlock(r) if r.name.value == "buffer"));
    let rest: Vec<&StepKind> = helper.body[1..].iter().map(|s| &s.kind).collect();
    assert!(matches!(rest[0], StepKind::Barrier(r) if r.name.value == "meet"));
    let StepKind::SemPost(post) = rest[1] else {
        panic!("{:?}", rest[1]);
    };
    assert_eq!(
        (post.name.value.as_str(), num(post.index.as_ref().unwrap())),
        ("slots", Quantity::plain(0.0))
    );
    assert!(matches!(rest[2], StepKind::SemWait(r) if r.name.value == "slots"));
    assert!(matches!(rest[3], StepKind::Lock(r) if r.name.value == "guard"));
    let StepKind::CondWait { cond, lock } = rest[4] else {
        panic!("{:?}", rest[4]);
    };
    assert_eq!(
        (cond.name.value.as_str(), lock.name.value.as_str()),
        ("ready", "guard")
    );
    assert!(matches!(rest[5], StepKind::CondSignal(r) if r.name.value == "ready"));
    assert!(matches!(rest[6], StepKind::CondBroadcast(r) if r.name.value == "ready"));
    assert!(matches!(rest[7], StepKind::Unlock(r) if r.name.value == "guard"));
    assert!(
        matches!(rest[8], StepKind::Io { kind: IoKind::Write, bytes } if name(bytes) == "datasize")
    );
    assert!(matches!(
        rest[9],
        StepKind::Io {
            kind: IoKind::Read,
            ..
        }
    ));
    assert!(
        matches!(rest[10], StepKind::Io { kind: IoKind::Truncate, bytes } if num(bytes).value == 0.0)
    );
    let StepKind::MemAccess(chase) = rest[11] else {
        panic!("{:?}", rest[11]);
    };
    assert_eq!(
        *chase,
        MemAccess {
            stride: 128,
            pattern: ChasePattern::Sequential,
            shared: Some("table".into()),
            ..MemAccess::new(MemAccessKind::Chase, 65536, 100)
        }
    );
    assert_eq!(rest.len(), 12);

    assert_eq!(def.channels.len(), 2);
    let inbox = &def.channels[0];
    assert_eq!(name(inbox.object.count.as_ref().unwrap()), "fds");
    assert_eq!(inbox.writers[0].value, "sender");
    assert_eq!(at(inbox.writers[0].span), "sender");
    assert_eq!(inbox.readers[0].value, "receiver");
    assert_eq!(def.channels[1].object.name.value, "spare");
    assert!(
        def.channels[1].object.count.is_none(),
        "no count: one channel"
    );
    let locks: Vec<(&str, bool)> = def
        .locks
        .iter()
        .map(|l| (l.object.name.value.as_str(), l.object.count.is_some()))
        .collect();
    assert_eq!(locks, [("buffer", false), ("guard", true)]);
    assert_eq!(
        num(def.barriers[0].parties.as_ref().unwrap()),
        Quantity::plain(2.0)
    );
    assert_eq!(def.barriers[0].object.name.value, "meet");
    let slots = &def.semaphores[0];
    assert_eq!(
        num(slots.object.count.as_ref().unwrap()),
        Quantity::plain(2.0)
    );
    assert_eq!(num(slots.initial.as_ref().unwrap()), Quantity::plain(1.0));
    assert_eq!(def.conds[0].name.value, "ready");
    assert_eq!(
        def.metrics.primary.as_ref().unwrap().value,
        "messages_per_s"
    );
    let show: Vec<&str> = def.metrics.show.iter().map(|m| m.value.as_str()).collect();
    assert_eq!(show, ["messages", "bytes", "critical", "tick.latency"]);
}

#[test]
fn the_name_defaults_to_the_file_stem_and_steps_keep_their_spans() {
    let text = with_steps("{ compute = \"1ms\" }");
    let def = toml_file::read(Path::new("dir/mine.toml"), &text).unwrap();
    assert_eq!(def.name, "mine");
    assert_eq!(def.path, Path::new("dir/mine.toml"));
    assert!(def.transport.is_none() && def.tasks.is_none() && def.start.is_none());
    assert!(def.computes.is_none());
    let step: &Step = &def.groups[0].body[0];
    assert_eq!(
        &text[step.span.start..step.span.end],
        "{ compute = \"1ms\" }"
    );
}

#[test]
fn an_unknown_top_level_key_names_the_nearest() {
    fails(
        "nmae = \"x\"\n",
        "w.toml:1:1: ",
        &[
            "unknown key `nmae`",
            "accepted: name, description",
            "(did you mean 'name'?)",
        ],
    );
    fails(
        "name = \"x\"\n[group.a]\n",
        "w.toml:2:2: ",
        &["unknown key `group`", "(did you mean 'groups'?)"],
    );
}

#[test]
fn an_unknown_group_key_names_the_nearest() {
    fails(
        "[groups.g]\nstep = [\"yield\"]\n",
        "w.toml:2:1: ",
        &["group 'g'", "unknown key `step`", "(did you mean 'steps'?)"],
    );
}

#[test]
fn an_unknown_step_modifier_names_the_nearest() {
    fails(
        &with_steps("{ send = \"inbox\", sze = 64 }"),
        "w.toml:2:28: ",
        &[
            "group 'g'",
            "`send` step",
            "unknown key `sze`",
            "it takes size",
            "(did you mean 'size'?)",
        ],
    );
    // A near verb where a modifier was expected: two steps, not one.
    fails(
        &with_steps("{ compute = \"1ms\", slep = \"1ms\" }"),
        "w.toml:2:29: ",
        &[
            "unknown key `slep`",
            "takes no other key",
            "did you mean 'sleep'",
            "step of its own",
        ],
    );
    // No verb at all, and a key nobody takes.
    fails(
        &with_steps("{ compte = \"1ms\" }"),
        "w.toml:2:12: ",
        &[
            "unknown key `compte` in a step",
            "(did you mean 'compute'?)",
        ],
    );
}

#[test]
fn a_step_has_exactly_one_verb() {
    fails(
        &with_steps("{ send = \"a\", recv = \"b\", size = 8 }"),
        "w.toml:2:24: ",
        &["exactly one verb", "`send` and `recv`", "two steps"],
    );
    fails(
        &with_steps("{ size = 8 }"),
        "w.toml:2:10: ",
        &["needs one verb", "compute", "only `size`"],
    );
    fails(
        &with_steps("{}"),
        "w.toml:2:10: ",
        &["needs one verb", "no key"],
    );
    // cond_wait's `lock` is its modifier, not a second verb.
    let ok = "[groups.g]\nsteps = [{ cond_wait = \"c\", lock = \"m\" }]\n";
    toml_file::read(Path::new("w.toml"), ok).unwrap();
}

#[test]
fn bare_steps_are_yield_and_truncate_only() {
    fails(
        &with_steps("\"yeild\""),
        "w.toml:2:10: ",
        &[
            "step \"yeild\" is not accepted",
            "\"yield\", \"truncate\", \"wait\" or \"exit\"",
            "(did you mean 'yield'?)",
        ],
    );
    fails(
        &with_steps("\"compute\""),
        "w.toml:2:10: ",
        &["needs a value", "{ compute = ... }"],
    );
    fails(
        &with_steps("{ yield = true }"),
        "w.toml:2:10: ",
        &["`yield` takes no value", "the string \"yield\""],
    );
    fails(
        &with_steps("5"),
        "w.toml:2:10: ",
        &["`steps` must be an array of steps", "not an integer (5)"],
    );
}

#[test]
fn a_wrong_type_names_the_value_and_what_is_accepted() {
    fails(
        "[groups.g]\ncount = true\nsteps = [\"yield\"]\n",
        "w.toml:2:9: ",
        &[
            "group 'g'",
            "`count` must be a whole number or an expression string, not a boolean (true)",
        ],
    );
    fails(
        "[groups.g]\ncount = 2.5\nsteps = [\"yield\"]\n",
        "w.toml:2:9: ",
        &["`count` must be a whole number or an expression string, not a float (2.5)"],
    );
    fails(
        "[groups.g]\nspawned = \"yes\"\nsteps = [\"yield\"]\n",
        "w.toml:2:11: ",
        &["`spawned` must be true or false, not a string (\"yes\")"],
    );
    fails(
        &with_steps("{ send = 3, size = 8 }"),
        "w.toml:2:19: ",
        &["`send` must be a string naming an object: NAME or NAME[INDEX], not an integer (3)"],
    );
    fails(
        "groups = 3\n",
        "w.toml:1:10: ",
        &["`groups` must be a table of groups ([groups.NAME]), not an integer (3)"],
    );
    fails(
        "transport = \"pipes\"\n[groups.g]\nsteps = [\"yield\"]\n",
        "w.toml:1:13: ",
        &[
            "`transport` 'pipes' is not accepted",
            "pipe, socketpair, unix, tcp, udp or $PARAM",
            "(did you mean 'pipe'?)",
        ],
    );
    fails(
        "computes = \"total\"\n[groups.g]\nsteps = [\"yield\"]\n",
        "w.toml:1:12: ",
        &[
            "`computes` 'total' is not accepted",
            "each, cumulative or $PARAM",
        ],
    );
    fails(
        "[locks]\nbuffer = 4\n[groups.g]\nsteps = [\"yield\"]\n",
        "w.toml:2:10: ",
        &["[locks]", "`buffer` must be a table ([locks.buffer], or buffer = { count = ..., kind = ... }), not an integer (4)"],
    );
}

#[test]
fn a_name_is_given_once_across_groups_and_objects() {
    // Twice in [groups]: TOML itself refuses the second table, said in words.
    fails(
        "[groups.a]\nsteps = [\"yield\"]\n\n[groups.a]\nsteps = [\"yield\"]\n",
        "w.toml:4:9: ",
        &["[groups.a] is defined twice (first at line 1)"],
    );
    fails(
        "[groups.buffer]\nsteps = [\"yield\"]\n[locks.buffer]\n",
        "w.toml:3:8: ",
        &["'buffer' already names a group (line 1)", "distinct names"],
    );
    fails(
        "[channels.x]\n[conds.x]\n[groups.g]\nsteps = [\"yield\"]\n",
        "w.toml:2:8: ",
        &["'x' already names a channel (line 1)"],
    );
    fails(
        "name = \"a\"\nname = \"b\"\n",
        "w.toml:2:1: ",
        &["'name' is given twice", "each key once"],
    );
}

#[test]
fn missing_keys_are_named_with_what_to_add() {
    fails(
        "[groups.g]\ncount = 2\n",
        "w.toml:1:1: ",
        &["group 'g'", "`steps` is missing", "add steps = [...]"],
    );
    fails(
        &with_steps("{ send = \"inbox\" }"),
        "w.toml:2:10: ",
        &["`send` step", "`size` is missing"],
    );
    fails(
        &with_steps("{ period = \"tick\" }"),
        "w.toml:2:10: ",
        &["`every` is missing"],
    );
    fails(
        &with_steps("{ loop = 3 }"),
        "w.toml:2:10: ",
        &["`steps` is missing"],
    );
    fails(
        &with_steps("{ cond_wait = \"c\" }"),
        "w.toml:2:10: ",
        &["`lock` is missing"],
    );
    fails(
        "[groups.g]\nsteps = []\n",
        "w.toml:2:9: ",
        &["`steps` is empty", "at least one step"],
    );
    fails(
        "name = \"x\"\n",
        "w.toml:1:1: ",
        &["no [groups]", "at least one group"],
    );
    fails(
        "[params.p]\nhelp = \"h\"\n[groups.g]\nsteps = [\"yield\"]\n",
        "w.toml:1:1: ",
        &["parameter 'p'", "`default` is missing"],
    );
}

#[test]
fn a_bad_expression_is_reported_at_its_column_inside_the_string() {
    // The unit 'msec' starts at column 30 of line 2: `steps = [{ compute = "2ms * 3msec" }]`.
    let text = with_steps("{ compute = \"2ms * 3msec\" }");
    let col = text.lines().nth(1).unwrap().find("msec").unwrap() + 1;
    assert_eq!(col, 30);
    fails(
        &text,
        "w.toml:2:30: ",
        &[
            "group 'g'",
            "`compute`",
            "unit 'msec' in '3msec' is not known",
            "use ns, us, ms",
        ],
    );
    // Literal strings too.
    fails(
        &with_steps("{ sleep = '1ms + ?' }"),
        "w.toml:2:27: ",
        &["'?' is not accepted in an expression"],
    );
    // The index of a reference, inside its brackets.
    fails(
        &with_steps("{ recv = \"inbox[index %% 2]\", size = 8 }"),
        "w.toml:2:33: ",
        &["`recv` step 'inbox[index %% 2]'", "'%'"],
    );
    // A multi-line string: columns count from its content's own line.
    fails(
        "[groups.g]\nsteps = [{ busy = \"\"\"\n  1ms +\n  2 bogons\"\"\" }]\n",
        "w.toml:4:5: ",
        &["'bogons' after the expression"],
    );
    // With an escape sequence a byte of the value is not a byte of the file: the whole string.
    fails(
        &with_steps("{ busy = \"\\u0031ms + x y\" }"),
        "w.toml:2:19: ",
        &["'y' after the expression"],
    );
    fails(
        &with_steps("{ busy = \"\" }"),
        "w.toml:2:19: ",
        &["empty expression"],
    );
}

#[test]
fn a_reference_is_a_name_or_a_name_with_an_index() {
    fails(
        &with_steps("{ lock = \"buf(1)\" }"),
        "w.toml:2:23: ",
        &[
            "`lock` step: 'buf(1)' is not a reference",
            "NAME or NAME[INDEX]",
        ],
    );
    fails(
        &with_steps("{ lock = \"9lives\" }"),
        "w.toml:2:20: ",
        &["is not a reference"],
    );
    fails(
        &with_steps("{ lock = \"buf[]\" }"),
        "w.toml:2:24: ",
        &["empty expression"],
    );
}

#[test]
fn a_bad_knob_value_is_reported_at_the_value() {
    fails(
        "[groups.g]\npolicy = \"fifo:100\"\nsteps = [\"yield\"]\n",
        "w.toml:2:10: ",
        &["group 'g'", "'100'", "out of range", "1..99"],
    );
    fails(
        "[groups.g]\nnice = \"low\"\nsteps = [\"yield\"]\n",
        "w.toml:2:8: ",
        &["nice='low' is not an integer", "-20..19"],
    );
    fails(
        "[groups.g]\nslice = 3\nsteps = [\"yield\"]\n",
        "w.toml:2:9: ",
        &["`slice` must be a string", "not an integer (3)"],
    );
    fails(
        "[groups.g]\ncpus = \"0-x\"\nsteps = [\"yield\"]\n",
        "w.toml:2:8: ",
        &["group 'g'", "0-x"],
    );
}

#[test]
fn a_syntax_error_has_its_line_and_column() {
    fails(
        "name = \"x\"\n[groups.g]\nsteps = [\"yield\"\ncount = 2\n",
        "w.toml:4:1: ",
        &["TOML syntax"],
    );
    fails(
        "name = \"unclosed\n",
        "w.toml:1:17: ",
        &["TOML syntax", "string"],
    );
}

#[test]
fn parameters_are_numbers_with_units_or_words() {
    fails(
        "[params]\nwork = \"10msec\"\n[groups.g]\nsteps = [\"yield\"]\n",
        "w.toml:2:11: ",
        &[
            "[params]: `work` '10msec' starts like",
            "starts like a number but is not one",
            "unit 'msec'",
        ],
    );
    fails(
        "[params]\nwork = \"2 * 3ms\"\n[groups.g]\nsteps = [\"yield\"]\n",
        "w.toml:2:8: ",
        &["'2 * 3ms' is an expression", "one number with its unit"],
    );
    fails(
        "[params]\nindex = 3\n[groups.g]\nsteps = [\"yield\"]\n",
        "w.toml:2:1: ",
        &["parameter name 'index' is reserved"],
    );
    fails(
        "[params]\nmax = 3\n",
        "w.toml:2:1: ",
        &["'max' is reserved"],
    );
    fails(
        "[params.mode]\ndefault = \"fsat\"\nchoices = [\"fast\", \"slow\"]\n",
        "w.toml:2:11: ",
        &[
            "default 'fsat' is not one of its choices (fast, slow)",
            "(did you mean 'fast'?)",
        ],
    );
    fails(
        "[params.n]\ndefault = 3\nchoices = [\"a\"]\n",
        "w.toml:3:11: ",
        &["`choices` is only for a parameter whose default is a word"],
    );
    fails(
        "[params]\nflag = true\n",
        "w.toml:2:8: ",
        &[
            "[params]: `flag` must be a number, a string holding a number with its unit",
            "not a boolean (true)",
        ],
    );
    let def = toml_file::read(
        Path::new("w.toml"),
        "[params]\nback = \"-2ms\"\n[groups.g]\nsteps = [\"yield\"]\n",
    )
    .unwrap();
    assert_eq!(def.params[0].default, ParamValue::Number(seconds(-0.002)));
}

#[test]
fn amounts_take_one_distribution() {
    fails(
        &with_steps("{ compute = { uniform = [\"1ms\"] } }"),
        "w.toml:2:34: ",
        &["`uniform` must be an array of two durations"],
    );
    fails(
        &with_steps("{ compute = { uniform = [\"1ms\", \"2ms\"], sd = \"1ms\" } }"),
        "w.toml:2:50: ",
        &["`sd` is only for normal and lognormal, not uniform"],
    );
    fails(
        &with_steps("{ sleep = { normal = \"2ms\" } }"),
        "w.toml:2:20: ",
        &["`sd` is missing"],
    );
    fails(
        &with_steps("{ sleep = { normal = \"2ms\", exponential = \"1ms\", sd = \"1ms\" } }"),
        "w.toml:2:38: ",
        &["has `normal` and `exponential`", "one distribution"],
    );
    fails(
        &with_steps("{ sleep = { gauss = \"2ms\" } }"),
        "w.toml:2:22: ",
        &[
            "unknown key `gauss`",
            "uniform, exponential, normal, lognormal or sd",
        ],
    );
}

#[test]
fn lists_of_names_are_names_given_once() {
    fails(
        "start = { order = [\"a\", \"a\"] }\n[groups.a]\nsteps = [\"yield\"]\n",
        "w.toml:1:26: ",
        &["`order` lists 'a' twice"],
    );
    fails(
        "[channels.c]\nwriters = [\"a b\"]\n[groups.g]\nsteps = [\"yield\"]\n",
        "w.toml:2:13: ",
        &["channel 'c'", "'a b' is not a name"],
    );
    fails(
        "[groups.\"my group\"]\nsteps = [\"yield\"]\n",
        "w.toml:1:9: ",
        &["group name 'my group' is not accepted"],
    );
}

#[test]
fn a_loop_variable_is_a_name_that_is_not_reserved() {
    fails(
        &with_steps("{ loop = 3, var = \"index\", steps = [\"yield\"] }"),
        "w.toml:2:29: ",
        &["`loop` step: `var`: 'index' is reserved"],
    );
    fails(
        &with_steps("{ loop = 3, var = \"2nd\", steps = [\"yield\"] }"),
        "w.toml:2:29: ",
        &["`var`: '2nd' is not a name"],
    );
}

#[test]
fn a_lock_has_a_kind_spin_or_sleep_and_the_plan_carries_kinds_and_names() {
    use schedlab_workload::plan::LockKind;
    use schedlab_workload::Workload;
    let text = r#"
[locks.spinning]
kind = "spin"
count = 2
[locks.plain]
[locks.sleeping]
kind = "sleep"

[groups.g]
steps = [ { lock = "spinning[1]" }, { unlock = "spinning[1]" } ]
"#;
    let def = toml_file::read(Path::new("w.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let kinds: Vec<LockKind> = def.locks.iter().map(|l| l.kind).collect();
    assert_eq!(kinds, [LockKind::Spin, LockKind::Sleep, LockKind::Sleep]);
    let script = schedlab_script::Script::new(def).unwrap_or_else(|e| panic!("{e}"));
    let plan = script.plan();
    assert_eq!(plan.locks, 4);
    assert_eq!(
        plan.sync.lock_kinds,
        [
            LockKind::Spin,
            LockKind::Spin,
            LockKind::Sleep,
            LockKind::Sleep
        ]
    );
    assert_eq!(
        plan.sync.lock_names,
        ["spinning[0]", "spinning[1]", "plain", "sleeping"]
    );
}

#[test]
fn a_lock_kind_other_than_spin_or_sleep_is_refused_naming_it() {
    fails(
        "[locks.l]\nkind = \"mutex\"\n",
        "w.toml:2:8: ",
        &["'mutex'", "sleep", "spin"],
    );
    fails(
        "[locks.l]\nkind = 1\n",
        "w.toml:2:8: ",
        &["kind", "sleep", "spin"],
    );
    fails(
        "[locks.l]\nkynd = \"spin\"\n",
        "w.toml:2:",
        &["kynd", "kind"],
    );
}

/// Issue 19: a spawnable group reads its `spawn` bound and starts empty unless it says
/// otherwise; `"wait"` and `"exit"` are bare steps; `{ wait = "S" }` stays a semaphore's.
#[test]
fn a_spawnable_group_has_a_bound_and_wait_and_exit_are_bare_steps() {
    let text = "[groups.make]\nsteps = [ { spawn = \"cc\" }, \"wait\", \"exit\" ]\n[groups.cc]\nspawn = \"2 * 3\"\nsteps = [ { compute = \"1ms\" } ]\n[semaphores.s]\n";
    let def = toml_file::read(Path::new("w.toml"), text).unwrap();
    let cc = &def.groups[1];
    assert_eq!(cc.spawn.as_ref().map(|e| e.text.as_str()), Some("2 * 3"));
    assert_eq!(num(&cc.count), Quantity::plain(0.0));
    assert!(def.groups[0].spawn.is_none());
    assert_eq!(num(&def.groups[0].count), Quantity::plain(1.0));
    let kinds: Vec<&StepKind> = def.groups[0].body.iter().map(|s| &s.kind).collect();
    assert!(matches!(kinds[0], StepKind::Spawn(g) if g.value == "cc"));
    assert!(matches!(kinds[1], StepKind::WaitChild));
    assert!(matches!(kinds[2], StepKind::Exit));
    let def = toml_file::read(
        Path::new("w.toml"),
        "[groups.g]\nsteps = [ { wait = \"s\" } ]\n[semaphores.s]\n",
    )
    .unwrap();
    assert!(matches!(def.groups[0].body[0].kind, StepKind::SemWait(_)));
    fails(
        &with_steps("{ exit = 1 }"),
        "w.toml:2:10: ",
        &["`exit` takes no value", "the string \"exit\""],
    );
}

#[test]
fn a_set_step_changes_the_tasks_own_knobs() {
    let text = with_steps(
        "{ set = { cpus = \"1\", policy = \"fifo:5\" } }, { set = { cpus = \"all\", nice = -3 } }",
    );
    let def = toml_file::read(Path::new("w.toml"), &text).unwrap_or_else(|e| panic!("{e}"));
    let sets: Vec<String> = def.groups[0]
        .body
        .iter()
        .map(|s| match &s.kind {
            StepKind::Set(k) => k
                .iter()
                .map(|(k, v)| format!("{}={}", k.value, v.value))
                .collect::<Vec<_>>()
                .join(" "),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(sets, ["cpus=1 policy=fifo:5", "cpus=all nice=-3"]);
    fails(
        &with_steps("{ set = { mode = \"kernel\" } }"),
        "w.toml:2:20: group 'g', `set` step: unknown knob `mode`",
        &["for the whole run"],
    );
    fails(&with_steps("{ set = {} }"), "w.toml:2:", &["no knob given"]);
}

/// `with_run`: of a spawned group's tasks, how many start with the run (rt-app's `instance` of
/// a task that a `fork` also starts); only in a spawned group.
#[test]
fn with_run_starts_some_of_a_spawned_groups_tasks_with_the_run() {
    let text = "[groups.w]\ncount = 3\nspawned = true\nwith_run = 1\nsteps = [\"yield\"]\n\
                [groups.s]\nsteps = [{ spawn = \"w\" }, { spawn = \"w\" }]\n";
    let def = toml_file::read(Path::new("w.toml"), text).unwrap_or_else(|e| panic!("{e}"));
    let w = &def.groups[0];
    assert!(w.spawned);
    assert_eq!(num(w.with_run.as_ref().unwrap()), Quantity::plain(1.0));
    assert!(def.groups[1].with_run.is_none());
    fails(
        "[groups.g]\ncount = 2\nwith_run = 1\nsteps = [\"yield\"]\n",
        "w.toml:3:12: ",
        &["`with_run`", "needs `spawned = true`"],
    );
    fails(
        "[groups.g]\nspawned = true\nwith_run = 1.5\nsteps = [\"yield\"]\n",
        "w.toml:3:12: ",
        &["`with_run` must be a whole number or an expression string, not a float (1.5)"],
    );
}

/// The memory accesses of group `g` of the file with steps `steps`, in order.
fn memory_steps(steps: &str) -> Vec<MemAccess> {
    let text = with_steps(steps);
    let def = toml_file::read(Path::new("w.toml"), &text).unwrap_or_else(|e| panic!("{e}"));
    (def.groups[0].body.iter())
        .map(|s| match &s.kind {
            StepKind::MemAccess(a) => a.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// `memory`: rt-app's `memrun` as a step, read into the memory access an rt-app file's
/// `memrun` becomes, with rt-app's defaults (stride 64, random, the task's own buffer).
#[test]
fn a_memory_step_is_rt_apps_memrun() {
    let got = memory_steps(
        "{ memory = \"read\", size = \"64KiB\", count = 65536 },
         { memory = \"write\", size = 100, count = \"1KiB\" },
         { memory = \"chase\", size = \"1MiB\", count = 1000 },
         { memory = \"chase\", size = \"2 * 32KiB\", count = 5, stride = 128, pattern = \"sequential\", shared = \"buf\" },
         { memory = \"chase\", size = 65536, count = 7, stride = \"128B\", pattern = \"sequential\", shared = \"buf\" },
         { memory = \"read\", size = 100, count = 0, shared = \"buf\" }",
    );
    assert_eq!(got[0], MemAccess::new(MemAccessKind::Read, 65536, 65536));
    assert_eq!(got[1], MemAccess::new(MemAccessKind::Write, 100, 1024));
    assert_eq!(got[2], MemAccess::new(MemAccessKind::Chase, 1 << 20, 1000));
    let shared = MemAccess {
        stride: 128,
        pattern: ChasePattern::Sequential,
        shared: Some("buf".into()),
        ..MemAccess::new(MemAccessKind::Chase, 65536, 5)
    };
    assert_eq!(got[3], shared);
    // One buffer for both chases of `buf` (counts may differ); a read of the same name is
    // another buffer, as in rt-app, which looks one up by kind and name.
    assert_eq!(got[4].buffer_key(), shared.buffer_key());
    assert_ne!(got[5].buffer_key(), shared.buffer_key());
    // `count` is a memory step's modifier, not the `count` verb.
    assert_eq!(got[5].count, 0);
}

#[test]
fn a_bad_memory_step_names_the_value_and_what_is_accepted() {
    let cases: [(&str, &[&str]); 12] = [
        ("{ memory = \"copy\", size = 64, count = 1 }", &["w.toml:2:22: group 'g', `memory` step: `memory` = \"copy\" is not accepted; it is \"read\", \"write\" or \"chase\""]),
        ("{ memory = \"chase\", size = 4096, count = 1, pattern = \"randon\" }", &["`pattern` = \"randon\" is not accepted", "(did you mean 'random'?)"]),
        ("{ memory = \"read\", count = 1 }", &["w.toml:2:10: group 'g', `memory` step: `size` is missing; add size = SIZE"]),
        ("{ memory = \"chase\", size = 64 }", &["`count` is missing; add count = N, the pointers the chase follows"]),
        ("{ memory = \"read\", size = \"1ms\", count = 1 }", &["`size` '1ms' is a duration; use a size such as 4KiB (or a plain number of bytes)"]),
        ("{ memory = \"read\", size = \"n * 1KiB\", count = 1 }", &["`size` 'n * 1KiB' names 'n'", "fixed when the file is read"]),
        ("{ memory = \"read\", size = 64, count = 1.5 }", &["`count` '1.5' is 1.5; it must be a whole number of bytes from 0"]),
        ("{ memory = \"chase\", size = 4096, count = -1 }", &["`count` '-1' is -1; it must be a whole number from 0"]),
        ("{ memory = \"chase\", size = 4096, count = \"1KiB\" }", &["`count` '1KiB' is a size; use a plain number"]),
        ("{ memory = \"write\", size = 64, count = 1, stride = 8 }", &["`stride` is a chase's; a write goes through its buffer byte by byte"]),
        ("{ memory = \"read\", size = 64, count = 1, shared = \"a b\" }", &["'a b' is not a name"]),
        ("{ memory = \"read\", size = 64, cuont = 1 }", &["unknown key `cuont`; it takes size, count, stride, pattern", "(did you mean 'count'?)"]),
    ];
    for (step, words) in cases {
        let e = err(&with_steps(step));
        for w in words {
            assert!(e.contains(w), "{step}:\n  {e}\n  should contain {w}");
        }
    }
    // Steps of one shared buffer agree on its size (and a chase's stride and pattern).
    fails(
        &with_steps(
            "{ memory = \"read\", size = 100, count = 1, shared = \"b\" },\n  { memory = \"read\", size = 200, count = 1, shared = \"b\" }",
        ),
        "w.toml:3:55: group 'g', `memory` step: buffer \"b\" (read 1 of 200 B shared as 'b')",
        &["shared with the read step at line 2 (read 1 of 100 B shared as 'b')", "the same size"],
    );
}
