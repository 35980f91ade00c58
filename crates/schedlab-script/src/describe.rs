//! A workload file's steps in words, for `schedlab check`: what each group's tasks do, with the
//! expressions as written and the values they take in this configuration.

use crate::model::{Amount, ObjectRef, ScriptDef, Step, StepKind};
use crate::program::Program;
use schedlab_workload::IoKind;
use std::fmt::Write;

fn obj(r: &ObjectRef) -> String {
    match &r.index {
        Some(i) => format!("{}[{}]", r.name.value, i),
        None => r.name.value.clone(),
    }
}

fn amount(a: &Amount) -> String {
    match a {
        Amount::Fixed(e) => e.to_string(),
        Amount::Uniform { low, high } => format!("uniform {low}..{high}"),
        Amount::Exponential { mean } => format!("exponential, mean {mean}"),
        Amount::Normal { mean, sd } => format!("normal, mean {mean}, sd {sd}"),
        Amount::LogNormal { mean, sd } => format!("lognormal, mean {mean}, sd {sd}"),
    }
}

fn steps_into(out: &mut String, steps: &[Step], depth: usize) {
    let pad = "  ".repeat(depth);
    for s in steps {
        let line = match &s.kind {
            StepKind::Compute(a) => format!("compute {}", amount(a)),
            StepKind::Busy(e) => format!("busy {e} (wall time)"),
            StepKind::Sleep(a) => format!("sleep {}", amount(a)),
            StepKind::Period {
                timer,
                every,
                deadline,
            } => format!(
                "period {}: every {every}, deadline {}",
                timer.value,
                deadline
                    .as_ref()
                    .map_or(every.to_string(), |d| d.to_string())
            ),
            StepKind::Send { channel, size } => format!("send {size} to {}", obj(channel)),
            StepKind::Recv { channel, size } => format!("recv {size} from {}", obj(channel)),
            StepKind::Lock(r) => format!("lock {}", obj(r)),
            StepKind::Unlock(r) => format!("unlock {}", obj(r)),
            StepKind::Barrier(r) => format!("barrier {}", obj(r)),
            StepKind::SemPost(r) => format!("post {}", obj(r)),
            StepKind::SemWait(r) => format!("wait {}", obj(r)),
            StepKind::CondWait { cond, lock } => {
                format!("cond_wait {} with {}", obj(cond), obj(lock))
            }
            StepKind::CondSignal(r) => format!("signal {}", obj(r)),
            StepKind::CondBroadcast(r) => format!("broadcast {}", obj(r)),
            StepKind::Yield => "yield".into(),
            StepKind::Set(knobs) => {
                let k: Vec<String> = knobs
                    .iter()
                    .map(|(k, v)| format!("{}={}", k.value, v.value))
                    .collect();
                format!("set {}", k.join(","))
            }
            StepKind::Io {
                kind: IoKind::Truncate,
                ..
            } => "truncate".into(),
            StepKind::Io {
                kind: IoKind::Read,
                bytes,
            } => format!("read {bytes}"),
            StepKind::Io {
                kind: IoKind::Write,
                bytes,
            } => format!("write {bytes}"),
            StepKind::Io {
                kind: IoKind::Rewrite,
                bytes,
            } => format!("rewrite {bytes}"),
            StepKind::Touch(e) => format!("touch {e}"),
            StepKind::MemAccess(a) => format!("memory {a}"),
            StepKind::Spawn(g) => format!("spawn a task of {}", g.value),
            StepKind::WaitChild => "wait for a child and reap it".into(),
            StepKind::Exit => "exit".into(),
            StepKind::Loop { repeat, var, .. } => format!(
                "loop {repeat}{}:",
                var.as_ref()
                    .map_or(String::new(), |v| format!(" as {}", v.value))
            ),
            StepKind::Timed { name, .. } => format!("timer {}:", name.value),
            StepKind::Count { name, by } => format!("count {} += {by}", name.value),
        };
        let _ = writeln!(out, "{pad}{line}");
        if let StepKind::Loop { body, .. } | StepKind::Timed { body, .. } = &s.kind {
            steps_into(out, body, depth + 1);
        }
    }
}

/// Each group's steps in file `def`, and what the dry run proved of its program `p`.
pub fn steps(def: &ScriptDef, p: &Program) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "file          {} ({})",
        def.path.display(),
        match def.grammar {
            crate::model::Grammar::Toml => "schedlab TOML",
            crate::model::Grammar::RtApp => "rt-app JSON",
        }
    );
    match p.expected_messages {
        Some(n) if p.receives => {
            let _ = writeln!(out, "messages      {n} per repetition; every receive is matched by a send (proved by a dry run)");
        }
        None if p.receives => {
            let _ = writeln!(out, "messages      depend on time (a timed loop sends or receives); checked while running");
        }
        _ => {}
    }
    for (g, cg) in def.groups.iter().zip(&p.groups) {
        let started = if g.spawned && cg.with_run > 0 {
            format!(
                " ({} started with the run, the others by spawn)",
                cg.with_run
            )
        } else if g.spawned {
            " (started by spawn)".to_string()
        } else if cg.spawn > 0 {
            format!(" (forked by spawn, at most {})", cg.spawn)
        } else {
            String::new()
        };
        let _ = writeln!(out, "steps of {}{started}:", g.name.value);
        steps_into(&mut out, &g.body, 1);
    }
    out
}
