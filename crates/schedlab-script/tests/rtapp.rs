//! rt-app's JSON grammar (`schedlab_script::rtapp::read`): the example files under
//! `tests/rtapp/` read into the model, and faults reported at their `file:line:column`.

use schedlab_script::expr::{Expr, Node, Quantity, Unit};
use schedlab_script::model::{Amount, Grammar, GroupSpec, Step, StepKind};
use schedlab_script::rtapp::read;
use schedlab_script::ScriptDef;
use schedlab_workload::{ChasePattern, IoKind, MemAccess, MemAccessKind};
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

/// The file `text` read as `ok.json`, and its warnings as printed (`ok.json:L:C: message`).
fn read_ok(text: &str) -> (ScriptDef, Vec<String>) {
    let path = Path::new("ok.json");
    let d = read(path, text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let w = d
        .warnings
        .iter()
        .map(|w| schedlab_script::FileError::at(path, text, w.clone()).to_string())
        .collect();
    (d, w)
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

/// The group's knobs as `--group` takes them, but the timer slack every rt-app task gets
/// (checked here: `default`, the inherited slack rt-app's threads keep, last).
fn knobs(g: &GroupSpec) -> Vec<String> {
    let mut all: Vec<String> = (g.knobs.iter())
        .map(|(k, v)| format!("{}={}", k.value, v.value))
        .collect();
    assert_eq!(
        all.pop().as_deref(),
        Some("timer-slack=default"),
        "{}",
        g.name.value
    );
    all
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
            StepKind::Set(k) => format!(
                "set[{}]",
                k.iter()
                    .map(|(k, v)| format!("{}={}", k.value, v.value))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
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
         loop[3](touch),touch,io:Rewrite,post:items,yield,barrier:step),count:producer.loops)"
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
        names(d.locks.iter().map(|o| &o.object.name.value).collect()),
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
    assert_eq!(io.0, IoKind::Rewrite);
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
    assert_eq!(plain(leaf.with_run.as_ref().unwrap()), 0.0);
}

/// Upstream rt-app starts a task's instances with the run even when a phase forks it (its
/// `main` creates every task's `num_instances` threads; each fork event one more): a forked task
/// of `instance` N has N threads that start with the run and one per fork.
#[test]
fn a_forked_task_with_instances_also_starts_them_with_the_run() {
    let (d, _) = read_ok("{ \"tasks\": { \"t\": { \"instance\": 2, \"loop\": 3, \"fork\": \"w\" }, \"w\": { \"loop\": 1, \"run\": 1 }, \"v\": { \"instance\": 3, \"loop\": 1, \"fork\": \"w\" } } }");
    let w = group(&d, "w");
    assert!(w.spawned);
    // 1 instance (the default) + 2 × 3 forks from t + 3 × 1 from v.
    assert_eq!(plain(&w.count), 10.0);
    assert_eq!(plain(w.with_run.as_ref().unwrap()), 1.0);
    assert!(group(&d, "t").with_run.is_none());
}

#[test]
fn policies_deadline_parameters_slices_and_resources() {
    let d = example("policies.json");
    assert_eq!(
        knobs(group(&d, "server")),
        ["policy=deadline:2000us/8000us/10000us"]
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
    assert_eq!(d.locks[0].object.name.value, "journal");
    assert_eq!(d.conds[0].name.value, "ready");
    assert_eq!(d.locks.len(), 1);
    // A timer declared in 'resources' is only a name: the server's timer.
    assert_eq!(
        shape(&group(&d, "server").body),
        "period:tick,loop[50](timed:server.period(compute,period:tick),count:server.loops)"
    );
}

/// One task `t` with `body` (a JSON object's inside), as a whole file.
fn task(body: &str) -> String {
    format!("{{ \"tasks\": {{ \"t\": {{ {body} }} }} }}")
}

#[test]
fn unknown_keys_are_errors_with_the_nearest_key() {
    // rt-app issue #45: a misspelt event is ignored silently by rt-app.
    let text = "{\n  \"tasks\": {\n    \"t\": { \"loop\": 2, \"exec\": 100 }\n  }\n}";
    check(
        &error(text),
        "bad.json:3:23: unknown key 'exec' in task 't'",
        &["rt-app would ignore it silently", "(did you mean 'run'?)"],
    );
    check(
        &error(&task("\"loop\": 1, \"sleeep\": 1")),
        "bad.json:1:32: unknown key 'sleeep' in task 't'",
        &["(did you mean 'sleep'?)"],
    );
    // Columns count characters, not bytes.
    check(
        &error("{ \"tasks\": { \"tâche\": { \"loop\": 1, \"exec\": 1 } } }"),
        "bad.json:1:36: unknown key 'exec' in task 'tâche'",
        &[],
    );
    check(
        &error("{ \"task\": {} }"),
        "bad.json:1:3: unknown key 'task' at the top level",
        &["(did you mean 'tasks'?)"],
    );
    check(
        &error("{ \"global\": { \"duraton\": 5 }, \"tasks\": {} }"),
        "bad.json:1:15: unknown key 'duraton' in 'global'",
        &["(did you mean 'duration'?)"],
    );
    check(
        &error(&task(
            "\"loop\": 1, \"timer\": { \"ref\": \"x\", \"periode\": 10 }",
        )),
        "bad.json:1:55: unknown key 'periode' in 'timer'",
        &["(did you mean 'period'?)"],
    );
}

#[test]
fn a_delay_in_a_phase_is_misplaced() {
    // rt-app issue #37: rt-app reads `delay` only in a task and ignores it in a phase.
    let text = "{ \"tasks\": { \"t\": { \"loop\": 1, \"phases\": {\n  \"p\": { \"delay\": 100, \"run\": 10 }\n} } } }";
    check(
        &error(text),
        "bad.json:2:10: 'delay' in phase 'p' of task 't' is misplaced",
        &["rt-app reads 'delay' only in a task", "ignored silently"],
    );
    // So are events in a task that has phases, which rt-app never reads.
    check(
        &error(&task("\"run\": 1, \"phases\": { \"a\": { \"run\": 1 } }")),
        "bad.json:1:21: event 'run' is in task 't', which has 'phases'",
        &["move it into a phase"],
    );
}

#[test]
fn keys_rt_app_knows_but_schedlab_cannot_honour_say_what_they_mean() {
    check(
        &error(&task(
            "\"loop\": 1, \"timer\": { \"ref\": \"x\", \"period\": 100, \"mode\": \"absolute\" }",
        )),
        "bad.json:1:78: timer mode \"absolute\" makes rt-app keep the original schedule",
        &["back to back", "Use \"relative\""],
    );
    check(
        &error(&task("\"loop\": 1, \"util_max\": 2000, \"run\": 1")),
        "bad.json:1:44: 'util_max' = 2000 is not accepted; a utilization clamp is 0..1024",
        &[],
    );
}

/// What each key rt-app knows does here: `Map` (no warning, the model follows it), `Warn` (one
/// warning containing the text), `WarnCpuTime` (one warning containing the text, printed only
/// where `run` is CPU time), `Refuse` (an error containing the text).
enum Does {
    Map,
    Warn(&'static str),
    WarnCpuTime(&'static str),
    Refuse(&'static str),
}

#[test]
fn every_key_rt_app_knows_is_mapped_warned_or_refused() {
    use Does::*;
    let global = |g: &str| {
        format!(
            "{{ \"global\": {{ {g} }}, \"tasks\": {{ \"t\": {{ \"loop\": 1, \"run\": 10 }} }} }}"
        )
    };
    let in_task = |k: &str| task(&format!("\"loop\": 1, {k}, \"run0\": 10"));
    let in_phase = |k: &str| {
        task(&format!(
            "\"loop\": 1, \"phases\": {{ \"p\": {{ {k}, \"run0\": 10 }} }}"
        ))
    };
    let in_events = |k: &str| task(&format!("\"loop\": 1, {k}"));
    let cases: Vec<(String, Does)> = vec![
        // global (rt-app's parse_global)
        (global("\"duration\": 2"), Map),
        (global("\"default_policy\": \"SCHED_BATCH\""), Map),
        (global("\"mem_buffer_size\": 4096"), Map),
        (global("\"calibration\": \"CPU1\""), WarnCpuTime("'calibration' is used only with --run-as loops")),
        (global("\"calibration\": 52"), WarnCpuTime("busy loop")),
        (global("\"pi_enabled\": false"), Map),
        (global("\"pi_enabled\": true"), Warn("no priority inheritance")),
        (global("\"lock_pages\": false"), Map),
        (global("\"lock_pages\": true"), Warn("mlockall")),
        (global("\"logdir\": \"/tmp\""), Warn("--rt-app-logs DIR")),
        (global("\"log_basename\": \"x\""), Map),
        (global("\"log_size\": \"disable\""), Warn("'log_size' sizes rt-app's in-memory log buffer")),
        (global("\"ftrace\": false"), Map),
        (global("\"ftrace\": \"none\""), Map),
        (global("\"ftrace\": \"main,loop\""), Warn("trace_marker")),
        (global("\"gnuplot\": false"), Map),
        (global("\"gnuplot\": true"), Warn("gnuplot scripts")),
        (global("\"io_device\": \"/dev/null\""), Warn("scratch file")),
        (global("\"cumulative_slack\": false"), Map),
        (global("\"cumulative_slack\": true"), Map),
        (global("\"frag\": 1"), Warn("'frag' is not read by rt-app")),
        (global("\"fragment\": 1"), Refuse("unknown key 'fragment' in 'global'")),
        // resources
        ("{ \"resources\": { \"m\": { \"type\": \"mutex\" } }, \"tasks\": { \"t\": { \"loop\": 1, \"lock\": \"m\", \"unlock\": \"m\" } } }".into(), Map),
        ("{ \"resources\": { \"s\": { \"type\": \"sleep\" } }, \"tasks\": { \"t\": { \"loop\": 1, \"run\": 1 } } }".into(), Warn("resource type 'sleep'")),
        ("{ \"resources\": { \"c\": { \"type\": \"wait\" }, \"k\": { \"type\": \"timer\" } }, \"tasks\": { \"t\": { \"loop\": 1, \"run\": 1 } } }".into(), Map),
        // task keys (parse_task_data, parse_sched_data)
        (in_task("\"instance\": 2"), Map),
        (in_task("\"delay\": 100"), Map),
        (in_task("\"policy\": \"SCHED_FIFO\""), Map),
        (in_task("\"priority\": 5"), Map),
        (in_task("\"cpus\": [0]"), Map),
        (in_task("\"dl-runtime\": 3000"), Map),
        (in_task("\"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": 1000, \"dl-period\": 10000, \"dl-deadline\": 5000"), Map),
        (in_task("\"util_min\": 128"), Warn("'util_min' clamps")),
        (in_task("\"util_max\": 512"), Warn("EOPNOTSUPP")),
        (in_task("\"nodes_membind\": [0]"), Warn("'nodes_membind' binds")),
        (in_task("\"taskgroup\": \"\""), Map),
        (in_task("\"taskgroup\": \"/a\""), Map),
        (in_task("\"taskgroup\": \"a\""), Refuse("does not start with /")),
        (in_task("\"nice\": 3"), Refuse("did you mean 'priority'?")),
        // phase keys (parse_task_phase_data)
        (in_phase("\"loop\": 3"), Map),
        (in_phase("\"cpus\": [1]"), Map),
        (in_phase("\"policy\": \"SCHED_RR\""), Map),
        (in_phase("\"priority\": -3"), Map),
        (in_phase("\"util_max\": 512"), Warn("'util_max' clamps")),
        (in_phase("\"util_min\": 64"), Warn("'util_min' clamps")),
        (in_phase("\"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": 1000, \"dl-period\": 10000, \"dl-deadline\": 10000"), Map),
        (in_phase("\"nodes_membind\": [0]"), Warn("'nodes_membind' binds")),
        (in_phase("\"taskgroup\": \"/a\""), Map),
        (in_phase("\"delay\": 5"), Refuse("misplaced")),
        // events (parse_task_event_data)
        (in_events("\"run\": 10"), Map),
        (in_events("\"runtime0\": 10"), Map),
        (in_events("\"sleep\": 10"), Map),
        (in_events("\"timer\": { \"ref\": \"unique\", \"period\": 100 }"), Map),
        (in_events("\"lock\": \"m\", \"unlock\": \"m\""), Map),
        (in_events("\"lock\": \"m\", \"wait\": { \"ref\": \"c\", \"mutex\": \"m\" }, \"unlock\": \"m\""), Map),
        (in_events("\"signal\": \"c\", \"broad\": \"c\""), Map),
        (in_events("\"lock\": \"m\", \"sync\": { \"ref\": \"c\", \"mutex\": \"m\" }, \"unlock\": \"m\""), Map),
        (in_events("\"barrier\": \"b\""), Map),
        (in_events("\"mem\": 4096, \"iorun\": 4096"), Map),
        (in_events("\"yield\": 1"), Map),
        (in_events("\"suspend\": \"t\""), Map),
        (in_events("\"run\": 10, \"resume\": \"t\""), Refuse("resume 't' would wake nobody")),
        (in_events("\"sem_post\": \"s\", \"sem_wait\": \"s\""), Map),
        (in_events("\"memrun\": { \"type\": \"chase\", \"size\": 4096, \"count\": 10 }"), Map),
        (in_events("\"memrun\": {}"), Refuse("has no 'type'")),
        (in_events("\"jog\": 10"), Refuse("unknown key 'jog'")),
    ];
    for (text, does) in cases {
        match (does, read(Path::new("ok.json"), &text)) {
            (Map, Ok(d)) => assert!(
                d.warnings.is_empty() && d.cpu_time_warnings.is_empty(),
                "{text}: {:?} {:?}",
                d.warnings,
                d.cpu_time_warnings
            ),
            (WarnCpuTime(w), Ok(d)) => {
                assert!(d.warnings.is_empty(), "{text}: {:?}", d.warnings);
                assert_eq!(
                    d.cpu_time_warnings.len(),
                    1,
                    "{text}: {:?}",
                    d.cpu_time_warnings
                );
                assert!(
                    d.cpu_time_warnings[0].message.contains(w),
                    "{text}: {:?}",
                    d.cpu_time_warnings
                );
            }
            (Warn(w), Ok(d)) => {
                assert!(
                    d.cpu_time_warnings.is_empty(),
                    "{text}: {:?}",
                    d.cpu_time_warnings
                );
                assert_eq!(d.warnings.len(), 1, "{text}: {:?}", d.warnings);
                assert!(
                    d.warnings[0].message.contains(w),
                    "{text}: {:?}",
                    d.warnings
                );
            }
            (Refuse(w), Err(e)) => assert!(e.to_string().contains(w), "{text}: {e}"),
            (_, Ok(d)) => panic!("{text}: accepted, warnings {:?}", d.warnings),
            (_, Err(e)) => panic!("{text}: {e}"),
        }
    }
}

#[test]
fn wrong_types_name_the_value_and_what_is_accepted() {
    let text = "{ \"tasks\": { \"t\": { \"loop\": 1,\n  \"run\": \"1000\" } } }";
    check(
        &error(text),
        "bad.json:2:10: 'run' must be a whole number of microseconds (>= 0), not the string \"1000\"",
        &[],
    );
    check(
        &error("{ \"tasks\": { \"t\": { \"loop\": 1,\n  \"sleep1\": 1.5 } } }"),
        "bad.json:2:13: 'sleep1' (a sleep event: rt-app matches events by prefix) must be a whole number of microseconds",
        &["not 1.5", "refuses a fraction"],
    );
    check(
        &error(&task("\"loop\": 1, \"cpus\": 1, \"run\": 1")),
        "bad.json:1:40: 'cpus' must be an array of CPU numbers such as [0, 2], not the number 1",
        &[],
    );
    check(
        &error(&task("\"loop\": 1, \"timer\": 1000")),
        "bad.json:1:41: 'timer' must be an object, not the number 1000",
        &["\"ref\""],
    );
    check(
        &error(&task("\"loop\": 1, \"lock\": 3")),
        "bad.json:1:40: 'lock' must be a string, not the number 3 naming a mutex",
        &[],
    );
    check(
        &error("{ \"global\": { \"gnuplot\": \"yes\" }, \"tasks\": {} }"),
        "bad.json:1:26: 'gnuplot' must be true or false, not the string \"yes\"",
        &[],
    );
}

#[test]
fn json_is_read_as_rt_apps_json_c_reads_it() {
    // Comments, trailing commas in objects and arrays, single-quoted strings: json-c takes them.
    let text = "{\n  // a comment\n  'tasks': { /* another */ \"t\": { \"loop\": 2, \"cpus\": [0, 1, ], \"run\": 10, }, },\n}";
    let (d, warnings) = read_ok(text);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(knobs(&d.groups[0]), ["cpus=0,1"]);
    // What json-c refuses too: a key without a value (upstream's video-short.json), unquoted
    // keys.
    check(
        &error(&task("\"loop\": 1, \"suspend\",")),
        "bad.json:1:41: not valid JSON",
        &[],
    );
    check(&error("{ tasks: {} }"), "bad.json:1:3: not valid JSON", &[]);
    check(
        &error("{ \"tasks\": { \"t\": { \"loop\": 1, \"run\": 10 }\n"),
        "bad.json:1:12: not valid JSON: Unterminated object",
        &[],
    );
    check(
        &error(""),
        "bad.json:1:1: the file holds no JSON value",
        &[],
    );
    check(
        &error("[1, 2]"),
        "bad.json:1:1: the file must be an object, not an array",
        &[],
    );
}

#[test]
fn repeated_keys_keep_the_first_place_and_the_last_value_as_json_c_does() {
    // Events: one run, of the last value, at the first run's place (rt-app 1.0 runs the same).
    let (d, w) = read_ok(&task("\"loop\": 1, \"run\": 1, \"sleep\": 2,\n \"run\": 3"));
    let body = &d.groups[0].body;
    assert_eq!(shape(body), "timed:t.period(compute,sleep),count:t.loops");
    let StepKind::Timed { body: events, .. } = &body[0].kind else {
        panic!()
    };
    let amounts: Vec<f64> = events
        .iter()
        .map(|s| match &s.kind {
            StepKind::Compute(Amount::Fixed(e)) | StepKind::Sleep(Amount::Fixed(e)) => seconds(e),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(amounts, [3e-6, 2e-6]);
    assert_eq!(w.len(), 1, "{w:?}");
    check(
        &w[0],
        "ok.json:1:32: 'run' is given again at line 2",
        &[
            "keeps one 'run' here, with the last value",
            "workgen",
            "'run1'",
        ],
    );
    // Phases a, b, a: a (the last a's events), then b.
    let (d, w) = read_ok(&task(
        "\"loop\": 1, \"phases\": { \"a\": { \"run\": 1 }, \"b\": { \"sleep\": 2 }, \"a\": { \"runtime0\": 3 } }",
    ));
    assert_eq!(
        shape(&d.groups[0].body),
        "timed:t.a.period(busy),timed:t.b.period(sleep),count:t.loops"
    );
    assert_eq!(w.len(), 1);
    // Tasks t, u, t: t first, with the last t's keys; a global key given twice: the last.
    let (d, w) = read_ok("{ \"global\": { \"duration\": 3, \"duration\": 1 }, \"tasks\": { \"t\": { \"loop\": 1, \"run\": 1 }, \"u\": { \"loop\": -1, \"run\": 1 }, \"t\": { \"instance\": 2, \"loop\": 1, \"run\": 1 } } }");
    let names: Vec<&str> = d.groups.iter().map(|g| g.name.value.as_str()).collect();
    assert_eq!(names, ["t", "u"]);
    assert_eq!(plain(&d.groups[0].count), 2.0);
    let StepKind::Loop { repeat, .. } = &d.groups[1].body[0].kind else {
        panic!()
    };
    assert_eq!(seconds(repeat), 1.0, "the last duration");
    assert_eq!(w.len(), 2, "{w:?}");
}

#[test]
fn loops_and_forks_that_cannot_be_counted_are_errors() {
    check(
        &error(&task("\"run\": 10")),
        "bad.json:1:14: task 't' (no 'loop': rt-app's default for a task is -1) repeats until rt-app's global duration ends it",
        &["gives none"],
    );
    check(
        &error(&task("\"loop\": 0, \"run\": 10")),
        "bad.json:1:29: 'loop' = 0 in task 't' makes rt-app repeat its events forever",
        &[],
    );
    check(
        &error("{ \"global\": { \"duration\": 1 }, \"tasks\": { \"t\": { \"fork\": \"w\" }, \"w\": { \"instance\": 0, \"loop\": 1, \"run\": 1 } } }"),
        "bad.json:1:58: fork of 'w' runs in a loop of -1 (task 't')",
        &["finite"],
    );
    check(
        &error("{ \"tasks\": { \"t\": { \"loop\": 1, \"fork\": \"w\" }, \"w\": { \"instance\": 0, \"loop\": 1, \"fork\": \"v\" }, \"v\": { \"instance\": 0, \"loop\": 1, \"fork\": \"w\" } } }"),
        "bad.json:1:88: fork of 'v' closes a cycle of forks",
        &[],
    );
    check(
        &error(&task("\"loop\": 1, \"fork\": \"x\"")),
        "bad.json:1:40: fork of 'x': there is no task of that name",
        &[],
    );
    check(
        &error("{ \"global\": { \"duration\": 1 }, \"tasks\": { \"t\": { \"phases\": { \"a\": { \"loop\": -1, \"run\": 1 }, \"b\": { \"run\": 1 } } } } }"),
        "bad.json:1:93: phase 'b' of task 't' would never run",
        &[],
    );
}

#[test]
fn shared_timers_misused_barriers_and_lost_wake_ups_are_errors() {
    check(
        &error(&task(
            "\"instance\": 2, \"loop\": 1, \"timer\": { \"ref\": \"x\", \"period\": 100 }",
        )),
        "bad.json:1:65: timer 'x' is shared by 2 threads ('t' (2 threads))",
        &["'unique'"],
    );
    check(
        &error(&task(
            "\"loop\": 1, \"barrier\": \"b\", \"barrier1\": \"b\"",
        )),
        "bad.json:1:60: barrier 'b' is used twice by task 't'",
        &[],
    );
    // A suspend naming another condition: rt-app 1.0's reading (upstream's browser files).
    let (_, w) = read_ok(&task("\"loop\": 1, \"suspend\": \"u\""));
    check(
        &w[0],
        "ok.json:1:43: 'suspend' = \"u\" in task 't': rt-app 1.0 suspends on the condition the value names",
        &["after 1.0 ignores the value"],
    );
    check(
        &error(&task("\"loop\": 1, \"resume\": \"tt\"")),
        "bad.json:1:42: resume 'tt' would wake nobody",
        &["there is no task 'tt'"],
    );
    check(
        &error(&task("\"loop\": 1, \"wait\": { \"ref\": \"c\" }")),
        "bad.json:1:40: 'wait' has no 'mutex'",
        &["\"unknown\""],
    );
    check(
        &error(&task("\"loop\": 1, \"runtime\": 100")),
        "bad.json:1:32: 'runtime' in task 't', which has no 'phases', is ambiguous",
        &["legacy name of dl-runtime", "'runtime0'"],
    );
}

#[test]
fn scheduling_keys_are_checked_as_the_kernel_would() {
    check(
        &error(&task("\"loop\": 1, \"policy\": \"sched_fifo\", \"run\": 1")),
        "bad.json:1:42: 'policy' = \"sched_fifo\" is not a policy rt-app knows",
        &["did you mean 'SCHED_FIFO'?"],
    );
    check(
        &error(&task("\"loop\": 1, \"policy\": \"SCHED_FIFO\", \"priority\": 0, \"run\": 1")),
        "bad.json:1:68: 'priority' = 0 of task 't' is its real-time priority under SCHED_FIFO, which must be 1..99",
        &[],
    );
    check(
        &error(&task(
            "\"loop\": 1, \"policy\": \"SCHED_DEADLINE\", \"run\": 1",
        )),
        "bad.json:1:42: task 't' runs SCHED_DEADLINE without 'dl-runtime'",
        &[],
    );
    check(
        &error(&task("\"loop\": 1, \"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": 100, \"dl-period\": 50, \"run\": 1")),
        "bad.json:1:92: task 't' runs SCHED_DEADLINE with runtime 100 µs, deadline 50 µs and period 50 µs",
        &["runtime <= deadline <= period"],
    );
    check(
        &error(&task("\"loop\": 1, \"dl-runtime\": 50, \"run\": 1")),
        "bad.json:1:46: dl-runtime = 50 µs of task 't' asks SCHED_OTHER for a custom slice",
        &["100 µs to 100 ms"],
    );
    check(
        &error(&task("\"loop\": 1, \"period\": 100, \"run\": 1")),
        "bad.json:1:32: task 't' runs SCHED_OTHER, for which rt-app passes no period or deadline",
        &[],
    );
    check(
        &error(&task(
            "\"loop\": 1, \"policy\": \"SCHED_IDLE\", \"priority\": 5, \"run\": 1",
        )),
        "bad.json:1:56: task 't' runs SCHED_IDLE, for which rt-app only switches the policy",
        &[],
    );
    check(
        &error(&task("\"loop\": 1, \"policy\": \"SCHED_DEADLINE\", \"dl-runtime\": 100, \"cpus\": [0], \"run\": 1")),
        "bad.json:1:87: task 't': SCHED_DEADLINE tasks cannot be pinned",
        &[],
    );
}

#[test]
fn phase_settings_are_honoured_when_they_hold_for_the_whole_run() {
    let knobs_of = |phases: &str, task_keys: &str| -> Vec<String> {
        let text = task(&format!(
            "{task_keys}\"loop\": 1, \"phases\": {{ {phases} }}"
        ));
        let d = read(Path::new("ok.json"), &text).unwrap_or_else(|e| panic!("{e}"));
        knobs(&d.groups[0])
    };
    // The first phase's policy stays in force through the phases that set none.
    assert_eq!(
        knobs_of(
            "\"a\": { \"policy\": \"SCHED_FIFO\", \"run\": 1 }, \"b\": { \"run\": 1 }",
            ""
        ),
        ["policy=fifo:10"]
    );
    // A later phase may set what the task already has.
    assert_eq!(
        knobs_of(
            "\"a\": { \"run\": 1 }, \"b\": { \"policy\": \"SCHED_RR\", \"run\": 1 }",
            "\"policy\": \"SCHED_RR\", "
        ),
        ["policy=rr:10"]
    );
    // A phase without cpus runs on the task's.
    assert_eq!(
        knobs_of(
            "\"a\": { \"cpus\": [1], \"run\": 1 }, \"b\": { \"run\": 1 }",
            "\"cpus\": [1], "
        ),
        ["cpus=1"]
    );
}

#[test]
fn global_keys_without_effect_are_still_checked() {
    let ok = "{ \"global\": { \"calibration\": 120, \"log_size\": 4, \"ftrace\": true, \"lock_pages\": false, \"io_device\": \"/tmp/io\", \"duration\": -1 }, \"tasks\": { \"t\": { \"loop\": 1, \"run\": 1 } } }";
    let d = read(Path::new("ok.json"), ok).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        shape(&d.groups[0].body),
        "timed:t.period(compute),count:t.loops"
    );
    check(
        &error("{ \"global\": { \"calibration\": \"cpu0\" }, \"tasks\": {} }"),
        "bad.json:1:30: 'calibration' = \"cpu0\" is not accepted",
        &["\"CPU<n>\""],
    );
    check(
        &error("{ \"global\": { \"ftrace\": \"main,lop\" }, \"tasks\": {} }"),
        "bad.json:1:25: 'ftrace' category 'lop' is not one rt-app knows",
        &["(did you mean 'loop'?)"],
    );
    check(
        &error("{ \"global\": { \"duration\": -5 }, \"tasks\": {} }"),
        "bad.json:1:27: 'duration' = -5 is not accepted",
        &[],
    );
    check(
        &error("{ \"global\": { \"default_policy\": \"SCHED_FIFO\" }, \"tasks\": {} }"),
        "bad.json:1:49: 'tasks' is empty",
        &[],
    );
}

#[test]
fn phase_settings_that_change_become_set_steps_at_the_phases_that_give_them() {
    let body_of = |phases: &str, task_keys: &str, task_loop: i64| -> (Vec<String>, String) {
        let text = task(&format!(
            "{task_keys}\"loop\": {task_loop}, \"phases\": {{ {phases} }}"
        ));
        let (d, _) = read_ok(&text);
        (knobs(&d.groups[0]), shape(&d.groups[0].body))
    };
    // rt-app's example8: phases on CPU 0, then 1, then the task's CPU 2; the first phase's
    // switch stays in the loop because the last phase precedes it from the second pass.
    let (k, body) = body_of(
        "\"a\": { \"cpus\": [0], \"run\": 1 }, \"b\": { \"cpus\": [1], \"run\": 1 }, \"c\": { \"run\": 1 }",
        "\"cpus\": [2], ",
        2,
    );
    assert_eq!(k, ["cpus=2"]);
    assert_eq!(
        body,
        "loop[2](set[cpus=0],timed:t.a.period(compute),set[cpus=1],timed:t.b.period(compute),\
         set[cpus=2],timed:t.c.period(compute),count:t.loops)"
    );
    // A phase without cpus in a task without them goes back to every CPU.
    let (k, body) = body_of(
        "\"a\": { \"cpus\": [1], \"run\": 1 }, \"b\": { \"run\": 1 }",
        "",
        1,
    );
    assert!(k.is_empty(), "{k:?}");
    assert_eq!(
        body,
        "set[cpus=1],timed:t.a.period(compute),set[cpus=all],timed:t.b.period(compute),count:t.loops"
    );
    // Scheduling keys switch where given and stay: FIFO 5 from b on, back to OTHER nice -3 at
    // c; a phase's loop runs after its switch, once per entry.
    let (k, body) = body_of(
        "\"a\": { \"run\": 1 }, \"b\": { \"loop\": 3, \"policy\": \"SCHED_FIFO\", \"priority\": 5, \"run\": 1 }, \"c\": { \"policy\": \"SCHED_OTHER\", \"priority\": -3, \"run\": 1 }",
        "\"priority\": 2, ",
        1,
    );
    assert_eq!(k, ["nice=2"]);
    assert_eq!(
        body,
        "timed:t.a.period(compute),set[policy=fifo:5],loop[3](timed:t.b.period(compute)),\
         set[policy=other nice=-3],timed:t.c.period(compute),count:t.loops"
    );
    // A priority alone takes the policy in force: the task's SCHED_RR.
    let (_, body) = body_of(
        "\"a\": { \"run\": 1 }, \"b\": { \"priority\": 7, \"run\": 1 }",
        "\"policy\": \"SCHED_RR\", ",
        1,
    );
    assert_eq!(
        body,
        "timed:t.a.period(compute),set[policy=rr:7],timed:t.b.period(compute),count:t.loops"
    );
    // Checked as a group's knobs are, at the phase's key.
    let phases = |p: &str| task(&format!("\"loop\": 1, \"phases\": {{ {p} }}"));
    check(
        &error(&phases(
            "\"a\": { \"run\": 1 }, \"b\": { \"policy\": \"SCHED_FIFO\", \"priority\": 200, \"run\": 1 }",
        )),
        "bad.json:1:106: 'priority' = 200 of task 't' is its real-time priority under SCHED_FIFO, which must be 1..99",
        &[],
    );
    check(
        &error(&task("\"loop\": 2, \"policy\": \"SCHED_FIFO\", \"phases\": { \"a\": { \"priority\": 3, \"run\": 1 }, \"b\": { \"policy\": \"SCHED_OTHER\", \"run\": 1 } }")),
        "bad.json:1:75: 'priority' without 'policy' in phase 'a' of task 't' means the policy in force",
        &["give this phase its 'policy'"],
    );
}

/// The upstream examples' shapes (`tests/rtapp/upstream/`, written for these tests): each
/// loads, with the warnings and the resolutions rt-app's own reading implies, except the two
/// that rt-app itself cannot run as they are.
#[test]
fn rt_apps_example_shapes_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rtapp/upstream");
    let load = |name: &str| {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        read(&path, &text)
    };
    for name in [
        "template.json",
        "example1.json",
        "example2.json",
        "example3.json",
        "example5.json",
        "example6.json",
        "example7.json",
        "example8.json",
        "example9.json",
        "example10.json",
        "example11.json",
        "mp3-short.json",
        "browser-short.json",
        "spreading-tasks.json",
    ] {
        let d = load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!d.groups.is_empty(), "{name}");
    }
    // mp3: 'frag' is warned about; the repeated run keeps the first place, the last value.
    let mp3 = load("mp3-short.json").unwrap();
    assert!(mp3.warnings.iter().any(|w| w.message.contains("'frag'")));
    assert_eq!(
        shape(&group(&mp3, "Out").body),
        "loop[3s](timed:Out.period(compute,lock:Decode,broadcast:Decode,unlock:Decode,\
         lock:Out,condwait:Out/Out,unlock:Out),count:Out.loops)"
    );
    // spreading-tasks: three phases, heavy1 in its first place.
    let spread = load("spreading-tasks.json").unwrap();
    let phases: Vec<String> = match &group(&spread, "two").body[1].kind {
        StepKind::Loop { body, .. } => body
            .iter()
            .filter_map(|s| match &s.kind {
                StepKind::Loop { body, .. } => match &body[0].kind {
                    StepKind::Timed { name, .. } => Some(name.value.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        phases,
        [
            "two.light1.period",
            "two.heavy1.period",
            "two.light2.period"
        ]
    );
    // example8: per-phase CPUs (CPU 2 is checked against the machine when it runs).
    let ex8 = load("example8.json").unwrap();
    assert_eq!(knobs(&ex8.groups[0]), ["policy=other", "cpus=2"]);
    // example9: "twice" runs with the run and at its fork, "once" only at its fork.
    let ex9 = load("example9.json").unwrap();
    let started = |g: &GroupSpec| (plain(&g.count), g.with_run.as_ref().map(plain));
    assert_eq!(started(group(&ex9, "twice")), (2.0, Some(1.0)));
    assert_eq!(started(group(&ex9, "once")), (1.0, Some(0.0)));
    assert_eq!(started(group(&ex9, "spawner")), (1.0, None));
    // example10: one taskgroup for the whole run, a knob of the group.
    let ex10 = load("example10.json").unwrap();
    assert_eq!(knobs(&ex10.groups[0]), ["policy=other", "taskgroup=/ga"]);
    // example11: each phase that gives a taskgroup moves the thread there; "same" stays.
    let ex11 = load("example11.json").unwrap();
    assert_eq!(knobs(&ex11.groups[0]), ["policy=other"]);
    let StepKind::Loop { body, .. } = &ex11.groups[0].body[0].kind else {
        panic!("{:?}", ex11.groups[0].body)
    };
    let sets: Vec<String> = body
        .iter()
        .map(|s| shape(std::slice::from_ref(s)))
        .filter(|s| s.starts_with("set"))
        .collect();
    assert_eq!(sets, ["set[taskgroup=/ga/gb]", "set[taskgroup=/]"]);
    // example4 runs until Ctrl-C in rt-app: schedlab needs the global duration.
    check(
        &load("example4.json").unwrap_err().to_string(),
        "",
        &["repeats until rt-app's global duration ends it"],
    );
    // video-short has a key without a value, which rt-app's json-c refuses too.
    check(
        &load("video-short.json").unwrap_err().to_string(),
        "",
        &["not valid JSON"],
    );
}

/// rt-app's own example files where the Debian package installed them: each loads, or fails
/// as rt-app itself does (a bare "suspend", in video-*: json-c refuses it; rt-app then needs
/// its workgen), or needs a global duration (tutorial example4 runs until Ctrl-C).
#[test]
fn rt_apps_installed_examples_load_when_present() {
    let dir = Path::new("/usr/share/doc/rt-app/examples");
    if !dir.is_dir() {
        println!("skipped: rt-app's examples are not installed (install: apt-get install rt-app)");
        return;
    }
    let mut files = Vec::new();
    for sub in ["", "tutorial"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(!files.is_empty());
    let mut loaded = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        match read(path, &text) {
            Ok(_) => loaded += 1,
            Err(e) => {
                let m = e.to_string();
                assert!(
                    m.contains("not valid JSON") && text.contains("\"suspend\",")
                        || m.contains("global duration"),
                    "{m}"
                );
            }
        }
    }
    println!("{loaded} of {} installed rt-app examples load", files.len());
    assert!(loaded * 2 > files.len(), "{loaded} of {}", files.len());
}

/// The memory accesses of task `t`'s body, in order (the body's own steps, as `task` writes them).
fn accesses(d: &ScriptDef, name: &str) -> Vec<MemAccess> {
    fn walk(steps: &[Step], out: &mut Vec<MemAccess>) {
        for s in steps {
            match &s.kind {
                StepKind::MemAccess(a) => out.push(a.clone()),
                StepKind::Loop { body, .. } | StepKind::Timed { body, .. } => walk(body, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&group(d, name).body, &mut out);
    out
}

#[test]
fn memrun_reads_each_type_with_rt_apps_defaults() {
    let (d, warnings) = read_ok(&task(
        "\"loop\": 1, \"memrun\": { \"type\": \"read\", \"size\": 4096, \"count\": 10000 }, \
         \"memrun1\": { \"type\": \"write\", \"size\": 100, \"count\": 7, \"stride\": 8 }, \
         \"memrun2\": { \"type\": \"chase\", \"size\": 1048576, \"count\": 1000 }, \
         \"memrun3\": { \"type\": \"chase\", \"size\": 65536, \"count\": 5, \"stride\": 128, \"pattern\": \"sequential\", \"ref\": \"shared\" }, \
         \"memrun4\": { \"type\": \"read\", \"size\": 64 }",
    ));
    let a = accesses(&d, "t");
    let mut read = MemAccess::new(MemAccessKind::Read, 4096, 10000);
    assert_eq!(a[0], read);
    // A stride on a write is read by rt-app only for a chase: warned, ignored.
    assert_eq!(a[1], MemAccess::new(MemAccessKind::Write, 100, 7));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("'stride' in 'memrun1'") && warnings[0].contains("only for a chase"),
        "{warnings:?}"
    );
    // Chase defaults: stride 64, random, the task's own buffer.
    let chase = MemAccess::new(MemAccessKind::Chase, 1 << 20, 1000);
    assert_eq!(
        (chase.stride, chase.pattern, chase.shared.clone()),
        (64, ChasePattern::Random, None)
    );
    assert_eq!(a[2], chase);
    assert_eq!(
        a[3],
        MemAccess {
            stride: 128,
            pattern: ChasePattern::Sequential,
            shared: Some("shared".into()),
            ..MemAccess::new(MemAccessKind::Chase, 65536, 5)
        }
    );
    // `count` defaults to 0, as rt-app's.
    read = MemAccess::new(MemAccessKind::Read, 64, 0);
    assert_eq!(a[4], read);
}

#[test]
fn a_shared_memrun_buffer_must_agree_on_size_stride_and_pattern() {
    let two = |a: &str, b: &str| {
        format!(
            "{{ \"tasks\": {{ \"a\": {{ \"loop\": 1, \"memrun\": {a} }}, \"b\": {{ \"loop\": 1, \"memrun\": {b} }} }} }}"
        )
    };
    let chase_n = |size: u32, stride: u32, pattern: &str, count: u32| {
        format!("{{ \"type\": \"chase\", \"size\": {size}, \"count\": {count}, \"stride\": {stride}, \"pattern\": \"{pattern}\", \"ref\": \"buf\" }}")
    };
    let chase = |size: u32, stride: u32, pattern: &str| chase_n(size, stride, pattern, 9);
    // Agreeing on all three (counts may differ): one buffer for both tasks.
    let (d, _) = read_ok(&two(
        &chase(4096, 64, "random"),
        &chase_n(4096, 64, "random", 3),
    ));
    assert_eq!(
        accesses(&d, "a")[0].buffer_key(),
        accesses(&d, "b")[0].buffer_key()
    );
    for other in [
        chase(8192, 64, "random"),
        chase(4096, 128, "random"),
        chase(4096, 64, "sequential"),
    ] {
        check(
            &error(&two(&chase(4096, 64, "random"), &other)),
            "bad.json:1:",
            &[
                "shares buffer \"buf\"",
                "with the chase memrun at line 1",
                "to agree on size, stride and pattern",
            ],
        );
    }
    // rt-app looks a shared buffer up by name and type: a read and a chase of one ref are two.
    let read = "{ \"type\": \"read\", \"size\": 100, \"count\": 1, \"ref\": \"buf\" }";
    let (d, _) = read_ok(&two(&chase(4096, 64, "random"), read));
    assert_ne!(
        accesses(&d, "a")[0].buffer_key(),
        accesses(&d, "b")[0].buffer_key()
    );
    // Reads of one ref agree on the size only.
    let read2 = "{ \"type\": \"read\", \"size\": 200, \"count\": 1, \"ref\": \"buf\" }";
    check(
        &error(&two(read, read2)),
        "bad.json:1:",
        &["shares buffer \"buf\" (read 1 of 200 B"],
    );
}

#[test]
fn bad_memrun_values_name_the_value_and_what_is_accepted() {
    let one = |obj: &str| task(&format!("\"loop\": 1, \"memrun\": {obj}"));
    let cases = [
        ("{ \"type\": \"copy\", \"size\": 64, \"count\": 1 }", "type \"copy\"; rt-app accepts \"read\", \"write\" or \"chase\""),
        ("{ \"type\": \"chase\", \"size\": 4096, \"count\": 1, \"pattern\": \"randon\" }", "pattern \"randon\"; accepted: \"random\""),
        ("{ \"type\": \"read\", \"count\": 1 }", "has no 'size'"),
        ("{ \"type\": \"read\", \"size\": 0, \"count\": 1 }", "'size' = 0 is not accepted; it must be a buffer size in bytes (> 0)"),
        ("{ \"type\": \"read\", \"size\": 64, \"count\": -1 }", "'count' = -1 is not accepted"),
        ("{ \"type\": \"read\", \"size\": 2147483647, \"count\": 1 }", "size 2147483647 is not accepted: a buffer of 1 byte to 1073741824 (1 GiB)"),
        ("{ \"type\": \"chase\", \"size\": 100, \"count\": 1 }", "a chase needs at least 2 positions (size at least 2 × stride = 128)"),
        ("{ \"type\": \"chase\", \"size\": 4096, \"count\": 1, \"stride\": 12 }", "stride 12 is not accepted: a multiple of 8 bytes"),
        ("{ \"type\": \"read\", \"size\": 64, \"cuont\": 1 }", "unknown key 'cuont' in 'memrun'; rt-app reads type, size, count, stride, pattern, ref (did you mean 'count'?)"),
        ("{ \"type\": \"read\", \"size\": 64, \"ref\": \"\" }", "names a shared buffer with an empty string"),
        ("4096", "'memrun' must be an object"),
    ];
    for (obj, want) in cases {
        let e = error(&one(obj));
        assert!(e.contains(want), "{obj}:\n  {e}\n  should contain {want}");
    }
}
