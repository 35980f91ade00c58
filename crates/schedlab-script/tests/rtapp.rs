//! rt-app's JSON grammar (`schedlab_script::rtapp::read`): the example files under
//! `tests/rtapp/` read into the model, and faults reported at their `file:line:column`.

use schedlab_script::expr::{Expr, Node, Quantity, Unit};
use schedlab_script::model::{Amount, Grammar, GroupSpec, Step, StepKind};
use schedlab_script::rtapp::read;
use schedlab_script::ScriptDef;
use schedlab_workload::IoKind;
use std::path::Path;

fn example(name: &str) -> ScriptDef {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/rtapp")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    read(&path, &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The error for `text` read as `bad.json`, as printed.
fn error(text: &str) -> String {
    match read(Path::new("bad.json"), text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// Assert `message` starts with `prefix` and contains each of `words`.
fn check(message: &str, prefix: &str, words: &[&str]) {
    assert!(
        message.starts_with(prefix),
        "{message}\n  should start with {prefix}"
    );
    for w in words {
        assert!(message.contains(w), "{message}\n  should contain '{w}'");
    }
}

fn group<'a>(d: &'a ScriptDef, name: &str) -> &'a GroupSpec {
    d.groups.iter().find(|g| g.name.value == name).unwrap()
}

fn quantity(e: &Expr) -> Quantity {
    match e.node {
        Node::Num(q) => q,
        ref other => panic!("not a literal: {other:?}"),
    }
}

fn seconds(e: &Expr) -> f64 {
    let q = quantity(e);
    assert_eq!(q.unit, Unit::Seconds, "{e}");
    q.value
}

fn plain(e: &Expr) -> f64 {
    let q = quantity(e);
    assert_eq!(q.unit, Unit::None, "{e}");
    q.value
}

fn knobs(g: &GroupSpec) -> Vec<String> {
    g.knobs
        .iter()
        .map(|(k, v)| format!("{}={}", k.value, v.value))
        .collect()
}

/// A short name per step, loops and timed blocks with their bodies: `loop(timed(compute,period),count)`.
fn shape(steps: &[Step]) -> String {
    let one = |s: &Step| -> String {
        match &s.kind {
            StepKind::Compute(_) => "compute".into(),
            StepKind::Busy(_) => "busy".into(),
            StepKind::Sleep(_) => "sleep".into(),
            StepKind::Period { timer, .. } => format!("period:{}", timer.value),
            StepKind::Lock(o) => format!("lock:{}", o.name.value),
            StepKind::Unlock(o) => format!("unlock:{}", o.name.value),
            StepKind::Barrier(o) => format!("barrier:{}", o.name.value),
            StepKind::SemPost(o) => format!("post:{}", o.name.value),
            StepKind::SemWait(o) => format!("semwait:{}", o.name.value),
            StepKind::CondWait { cond, lock } => {
                format!("condwait:{}/{}", cond.name.value, lock.name.value)
            }
            StepKind::CondSignal(o) => format!("signal:{}", o.name.value),
            StepKind::CondBroadcast(o) => format!("broadcast:{}", o.name.value),
            StepKind::Yield => "yield".into(),
            StepKind::Io { kind, .. } => format!("io:{kind:?}"),
            StepKind::Touch(_) => "touch".into(),
            StepKind::Spawn(g) => format!("spawn:{}", g.value),
            StepKind::Loop { repeat, body, .. } => format!("loop[{repeat}]({})", shape(body)),
            StepKind::Timed { name, body } => format!("timed:{}({})", name.value, shape(body)),
            StepKind::Count { name, .. } => format!("count:{}", name.value),
            other => format!("{other:?}"),
        }
    };
    steps.iter().map(one).collect::<Vec<_>>().join(",")
}

#[test]
fn a_periodic_file_reads_into_groups_knobs_timers_and_loops() {
    let d = example("periodic.json");
    assert_eq!(d.grammar, Grammar::RtApp);
    assert_eq!(d.name, "periodic");
    assert_eq!(d.groups.len(), 2);
    let frames = &d.groups[0];
    assert_eq!(frames.name.value, "frames");
    assert_eq!(plain(&frames.count), 2.0, "instance");
    assert!(!frames.spawned);
    assert_eq!(knobs(frames), ["policy=other", "nice=-5", "cpus=0,1"]);
    // delay, the timer's anchor, then the endless loop bounded by the global duration.
    let body = &frames.body;
    assert_eq!(body.len(), 3);
    let StepKind::Sleep(Amount::Fixed(delay)) = &body[0].kind else {
        panic!("{:?}", body[0])
    };
    assert_eq!(seconds(delay), 0.0005);
    let StepKind::Period {
        timer,
        every,
        deadline,
    } = &body[1].kind
    else {
        panic!("{:?}", body[1])
    };
    assert_eq!(timer.value, "frames.unique", "a unique timer is per task");
    assert_eq!(seconds(every), 0.016);
    assert!(deadline.is_none());
    let StepKind::Loop {
        repeat,
        var,
        body: pass,
    } = &body[2].kind
    else {
        panic!("{:?}", body[2])
    };
    assert!(var.is_none());
    assert!(
        (seconds(repeat) - (3.0 - 0.0005)).abs() < 1e-12,
        "duration minus delay"
    );
    assert_eq!(
        shape(pass),
        "timed:frames.period(compute,period:frames.unique),count:frames.loops"
    );
    let StepKind::Timed { body: events, .. } = &pass[0].kind else {
        panic!()
    };
    let StepKind::Compute(Amount::Fixed(work)) = &events[0].kind else {
        panic!()
    };
    assert_eq!(seconds(work), 0.004, "4000 µs");
    // The literal sits at the value's place in the file.
    assert_eq!(&d.text[work.span.start..work.span.end], "4000");

    let vsync = &d.groups[1];
    assert_eq!(knobs(vsync), ["policy=fifo:50"]);
    assert_eq!(
        shape(&vsync.body),
        "period:vblank,loop[10](loop[5](timed:vsync.warm.period(busy,sleep)),\
         timed:vsync.steady.period(compute,period:vblank,compute),count:vsync.loops)"
    );
    assert!(d.locks.is_empty() && d.conds.is_empty() && d.barriers.is_empty());
}

#[test]
fn every_synchronisation_event_maps_to_its_steps_and_declares_its_objects() {
    let d = example("sync.json");
    assert_eq!(
        shape(&group(&d, "producer").body),
        "loop[100](timed:producer.period(lock:buf_lock,compute,signal:not_empty,unlock:buf_lock,\
         loop[3](touch),touch,io:Write,post:items,yield,barrier:step),count:producer.loops)"
    );
    assert_eq!(
        shape(&group(&d, "consumer").body),
        "loop[100](timed:consumer.period(lock:buf_lock,condwait:not_empty/buf_lock,\
         unlock:buf_lock,semwait:items,barrier:step,\
         lock:sleeper,broadcast:sleeper,unlock:sleeper,lock:waker,broadcast:waker,unlock:waker),\
         count:consumer.loops)"
    );
    // suspend: lock, wait and unlock on the task's own name; sync: signal then wait.
    assert_eq!(
        shape(&group(&d, "sleeper").body),
        "loop[100](timed:sleeper.period(lock:sleeper,condwait:sleeper/sleeper,unlock:sleeper,\
         lock:pair,signal:ping,condwait:ping/pair,unlock:pair,sleep),count:sleeper.loops)"
    );
    let names = |v: Vec<&String>| v.into_iter().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(d.locks.iter().map(|o| &o.name.value).collect()),
        ["buf_lock", "sleeper", "waker", "pair"]
    );
    assert_eq!(
        names(d.conds.iter().map(|o| &o.name.value).collect()),
        ["not_empty", "sleeper", "waker", "ping"]
    );
    assert_eq!(d.barriers.len(), 1);
    assert!(d.barriers[0].parties.is_none(), "every task using it");
    assert_eq!(d.semaphores.len(), 1);
    assert!(d.semaphores[0].initial.is_none(), "starts at 0");
    // mem 200000 over a 65536-byte buffer: three whole buffers, then the rest.
    let StepKind::Loop { body, .. } = &group(&d, "producer").body[0].kind else {
        panic!()
    };
    let StepKind::Timed { body: events, .. } = &body[0].kind else {
        panic!()
    };
    let touches: Vec<f64> = events
        .iter()
        .flat_map(|s| match &s.kind {
            StepKind::Touch(b) => vec![quantity(b)],
            StepKind::Loop { body, .. } => body
                .iter()
                .filter_map(|s| match &s.kind {
                    StepKind::Touch(b) => Some(quantity(b)),
                    _ => None,
                })
                .collect(),
            _ => vec![],
        })
        .map(|q| {
            assert_eq!(q.unit, Unit::Bytes);
            q.value
        })
        .collect();
    assert_eq!(touches, [65536.0, 200000.0 - 3.0 * 65536.0]);
    let io = events
        .iter()
        .find_map(|s| match &s.kind {
            StepKind::Io { kind, bytes } => Some((*kind, quantity(bytes))),
            _ => None,
        })
        .unwrap();
    assert_eq!(io.0, IoKind::Write);
    assert_eq!((io.1.value, io.1.unit), (4096.0, Unit::Bytes));
}

#[test]
fn forks_make_spawned_groups_counted_through_the_loops_around_them() {
    let d = example("fork.json");
    let launcher = group(&d, "launcher");
    assert!(!launcher.spawned);
    assert_eq!(plain(&launcher.count), 2.0);
    assert_eq!(
        shape(&launcher.body),
        "loop[3](loop[2](timed:launcher.spawn.period(spawn:worker,sleep)),\
         timed:launcher.rest.period(sleep),count:launcher.loops)"
    );
    // 2 launchers × 3 task loops × 2 phase loops; each worker forks one leaf.
    let worker = group(&d, "worker");
    assert!(worker.spawned);
    assert_eq!(plain(&worker.count), 12.0);
    assert_eq!(
        shape(&worker.body),
        "timed:worker.period(compute,spawn:leaf),count:worker.loops"
    );
    let leaf = group(&d, "leaf");
    assert!(leaf.spawned);
    assert_eq!(plain(&leaf.count), 12.0);
}

#[test]
fn policies_deadline_parameters_slices_and_resources() {
    let d = example("policies.json");
    assert_eq!(
        knobs(group(&d, "server")),
        ["policy=deadline:2000us/10000us/10000us"]
    );
    // The legacy task keys runtime/period/deadline; deadline is R/D/P.
    assert_eq!(
        knobs(group(&d, "legacy")),
        ["policy=deadline:1000us/5000us/20000us"]
    );
    // dl-runtime on SCHED_BATCH is the custom slice.
    assert_eq!(
        knobs(group(&d, "sliced")),
        ["policy=batch", "nice=3", "slice=3000us"]
    );
    // The same cpus in every phase is the task's.
    assert_eq!(knobs(group(&d, "background")), ["policy=idle", "cpus=1"]);
    // A single phase's policy is the task's; RT priority defaults to 10.
    assert_eq!(knobs(group(&d, "rr")), ["policy=rr:10"]);
    // Declared resources come first, then those created by use.
    assert_eq!(d.locks[0].name.value, "journal");
    assert_eq!(d.conds[0].name.value, "ready");
    assert_eq!(d.locks.len(), 1);
    // A timer declared in 'resources' is only a name: the server's timer.
    assert_eq!(
        shape(&group(&d, "server").body),
        "period:tick,loop[50](timed:server.period(compute,period:tick),count:server.loops)"
    );
}
