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
    let text = "{ \"tasks\": { \"t\": { \"loop\": 1,\n  \"util_min\": 512, \"run\": 10 } } }";
    check(
        &error(text),
        "bad.json:2:3: 'util_min' clamps the thread's utilization",
        &["uclamp", "schedlab cannot honour it"],
    );
    check(
        &error("{ \"global\": { \"pi_enabled\": true }, \"tasks\": {} }"),
        "bad.json:1:29: 'pi_enabled': true makes rt-app's mutexes priority-inheriting",
        &["no priority inheritance"],
    );
    check(
        &error(&task(
            "\"loop\": 1, \"memrun\": { \"type\": \"read\", \"size\": 4096, \"count\": 1 }",
        )),
        "bad.json:1:32: 'memrun' reads, writes or pointer-chases a buffer",
        &["cannot honour"],
    );
    check(
        &error(&task(
            "\"loop\": 1, \"timer\": { \"ref\": \"x\", \"period\": 100, \"mode\": \"absolute\" }",
        )),
        "bad.json:1:78: timer mode \"absolute\" makes rt-app keep the original schedule",
        &["back to back", "Use \"relative\""],
    );
    check(
        &error(&task("\"loop\": 1, \"nodes_membind\": [0], \"run\": 1")),
        "bad.json:1:32: 'nodes_membind' binds the thread's memory to NUMA nodes",
        &["cannot honour"],
    );
    check(
        &error(&task("\"loop\": 1, \"taskgroup\": \"/tg\", \"run\": 1")),
        "bad.json:1:45: 'taskgroup' = \"/tg\" puts the thread in a CPU cgroup",
        &["cannot honour"],
    );
    check(
        &error("{ \"resources\": { \"s\": { \"type\": \"signal\" } }, \"tasks\": {} }"),
        "bad.json:1:33: resource type 'signal' makes rt-app create a resource no event ever looks up",
        &["declare it as 'wait'"],
    );
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
fn invalid_json_is_reported_at_its_place() {
    check(
        &error(&task("\"loop\": 1, \"run\": 10,")),
        "bad.json:1:41: not valid JSON: Trailing commas are not allowed",
        &[],
    );
    check(
        &error("{ \"tasks\": { \"t\": { \"loop\": 1, \"run\": 10 }\n"),
        "bad.json:1:12: not valid JSON: Unterminated object",
        &[],
    );
    check(
        &error("{ 'tasks': {} }"),
        "bad.json:1:3: not valid JSON: Single-quoted strings are not allowed",
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
fn repeated_keys_are_errors_except_events_which_run_in_order() {
    check(
        &error("{ \"tasks\": { \"t\": { \"loop\": 1, \"run\": 1 }, \"t\": { \"loop\": 1, \"run\": 1 } } }"),
        "bad.json:1:44: 't' is given twice in this object (first at line 1)",
        &["keeps only the last"],
    );
    check(
        &error(&task("\"loop\": 1, \"loop\": 2, \"run\": 1")),
        "bad.json:1:32: 'loop' is given twice",
        &[],
    );
    // rt-app's workgen makes repeated event keys unique before rt-app reads them.
    let d = read(
        Path::new("ok.json"),
        &task("\"loop\": 1, \"run\": 1, \"sleep\": 2, \"run\": 3"),
    )
    .unwrap();
    let body = &d.groups[0].body;
    assert_eq!(
        shape(body),
        "timed:t.period(compute,sleep,compute),count:t.loops"
    );
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
    assert_eq!(amounts, [1e-6, 2e-6, 3e-6]);
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
        &error("{ \"tasks\": { \"t\": { \"loop\": 1, \"fork\": \"w\" }, \"w\": { \"loop\": 1, \"run\": 1 } } }"),
        "bad.json:1:40: task 'w' is forked here but rt-app would also start it with the run ('instance' 1, rt-app's default)",
        &["\"instance\": 0"],
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
    check(
        &error(&task("\"loop\": 1, \"suspend\": \"u\"")),
        "bad.json:1:43: 'suspend' = \"u\" in task 't': rt-app ignores the value",
        &["write \"t\" or \"\""],
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
    let phases = |p: &str| task(&format!("\"loop\": 1, \"phases\": {{ {p} }}"));
    check(
        &error(&phases("\"a\": { \"policy\": \"SCHED_FIFO\", \"run\": 1 }, \"b\": { \"policy\": \"SCHED_OTHER\", \"run\": 1 }")),
        "bad.json:1:94: 'policy' of task 't': phase 'b' gives another value than phase 'a'",
        &["one policy and one CPU list for the whole run"],
    );
    check(
        &error(&phases("\"a\": { \"run\": 1 }, \"b\": { \"policy\": \"SCHED_FIFO\", \"run\": 1 }")),
        "bad.json:1:70: 'policy' of task 't': phase 'b' sets it, which takes effect only when that phase first starts",
        &["phase 'a' before it runs with the task's setting"],
    );
    check(
        &error(&phases(
            "\"a\": { \"cpus\": [0], \"run\": 1 }, \"b\": { \"run\": 1 }",
        )),
        "bad.json:1:51: 'cpus' of task 't': phase 'a' runs on CPUs [0], phase 'b' on every CPU",
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
