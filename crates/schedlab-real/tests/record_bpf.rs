//! `schedlab record`'s two sources on the same small real command: a ping-pong of two threads
//! pinned to one CPU (this test binary itself, run again as the command) recorded through BPF
//! and through tracefs must give each thread the same number of switches (one a round trip,
//! exactly, however the run split them between sleeps and preemptions) and one wakeup a sleep; a ring
//! too small for the run counts its overflow as lost events; an interrupted recording leaves no
//! BPF program, map, link or thread behind; the traced set is the command's tree (the recording
//! thread only until it has forked it), or with --pid every thread of the process, those it
//! starts while recorded too. Skipped without root, BTF or tracefs.

use schedlab_real::trace::record::{record_from, RecordError, Source, Target};
use schedlab_real::trace::record_bpf::BpfRecorder;
use schedlab_workload::sched_events::{EventKind, LeftAs, Recording};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// One recording at a time: each traces a whole tree, and the comparisons want a quiet CPU.
static SERIAL: Mutex<()> = Mutex::new(());

/// The environment variable that turns this binary into the ping-pong command.
const CHILD: &str = "SCHEDLAB_TEST_PINGPONG_ROUNDS";

/// The command: this test binary running only [`pingpong_child`] with `rounds` round trips.
fn pingpong_command(rounds: u32) -> Vec<String> {
    // `env` execs the binary in place, so the recorded root is the ping-pong's process.
    vec![
        "env".into(),
        format!("{CHILD}={rounds}"),
        std::env::current_exe().unwrap().display().to_string(),
        "--exact".into(),
        "pingpong_child".into(),
        "--test-threads=1".into(),
        "--quiet".into(),
    ]
}

/// As the command (the variable set): two threads, `pp-ping` and `pp-pong`, pinned to CPU 0,
/// pass a byte back and forth over two pipes; as a test, nothing.
#[test]
fn pingpong_child() {
    let Some(rounds) = std::env::var(CHILD)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return;
    };
    let pin = || {
        // SAFETY: a zeroed cpu_set_t with CPU 0 set, passed with its size, for this thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    };
    let (mut a_read, mut b_write) = std::io::pipe().unwrap();
    let (mut b_read, mut a_write) = std::io::pipe().unwrap();
    let pong = std::thread::Builder::new()
        .name("pp-pong".into())
        .spawn(move || {
            pin();
            let mut byte = [0u8];
            for _ in 0..rounds {
                b_read.read_exact(&mut byte).unwrap();
                b_write.write_all(&byte).unwrap();
            }
        })
        .unwrap();
    let ping = std::thread::Builder::new()
        .name("pp-ping".into())
        .spawn(move || {
            pin();
            let mut byte = [1u8];
            for _ in 0..rounds {
                a_write.write_all(&byte).unwrap();
                a_read.read_exact(&mut byte).unwrap();
            }
        })
        .unwrap();
    ping.join().unwrap();
    pong.join().unwrap();
}

/// The environment variable that turns this binary into the late-thread command.
const LATE: &str = "SCHEDLAB_TEST_LATE_THREAD_MS";

/// As the command (the variable set to N): sleeps N ms, then starts a thread `late-thread` that
/// sleeps 2 ms 50 times; as a test, nothing.
#[test]
fn late_thread_child() {
    let Some(ms) = std::env::var(LATE).ok().and_then(|v| v.parse::<u64>().ok()) else {
        return;
    };
    std::thread::sleep(Duration::from_millis(ms));
    std::thread::Builder::new()
        .name("late-thread".into())
        .spawn(|| {
            for _ in 0..50 {
                std::thread::sleep(Duration::from_millis(2));
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

/// The tasks of `rec`'s traced tree: its roots and every task a member forked.
fn tree(rec: &Recording) -> std::collections::HashSet<i32> {
    let mut tree: std::collections::HashSet<i32> = rec.roots.iter().copied().collect();
    for e in &rec.events {
        if let EventKind::Fork { parent, child } = e.kind {
            if tree.contains(&parent) {
                tree.insert(child);
            }
        }
    }
    tree
}

/// The first event, after `from` events, that involves no task of `tree`.
fn outsider(rec: &Recording, from: usize, tree: &std::collections::HashSet<i32>) -> Option<String> {
    rec.events[from..].iter().find_map(|e| {
        let ours = match e.kind {
            EventKind::Switch { prev, next, .. } => tree.contains(&prev) || tree.contains(&next),
            EventKind::Waking { waker, wakee } => tree.contains(&waker) || tree.contains(&wakee),
            EventKind::Fork { parent, .. } => tree.contains(&parent),
            EventKind::Exit { pid } | EventKind::Migrate { pid, .. } => tree.contains(&pid),
            _ => true,
        };
        (!ours).then(|| format!("{e:?}"))
    })
}

/// Per thread name: (switches away asleep, switches away runnable, wakeups received,
/// preemptions by a task outside the ping-pong).
fn counts(rec: &Recording) -> HashMap<String, (u64, u64, u64, u64)> {
    let ours = |tid: i32| rec.names.get(&tid).is_some_and(|n| n.starts_with("pp-"));
    let mut by_tid: HashMap<i32, (u64, u64, u64, u64)> = HashMap::new();
    for e in &rec.events {
        match e.kind {
            EventKind::Switch {
                prev, left, next, ..
            } => {
                let c = by_tid.entry(prev).or_default();
                match left {
                    LeftAs::Sleeping => c.0 += 1,
                    LeftAs::Runnable => {
                        c.1 += 1;
                        if next != 0 && !ours(next) {
                            c.3 += 1;
                        }
                    }
                    LeftAs::Dead => {}
                }
            }
            EventKind::Waking { wakee, .. } => by_tid.entry(wakee).or_default().2 += 1,
            _ => {}
        }
    }
    by_tid
        .into_iter()
        .filter_map(|(tid, c)| Some((rec.names.get(&tid)?.clone(), c)))
        .filter(|(name, _)| name.starts_with("pp-"))
        .collect()
}

/// Record the ping-pong from `source`; `None` (and why) when that source cannot run here.
fn record_pingpong(source: Source, rounds: u32) -> Result<Recording, String> {
    let stop = AtomicBool::new(false);
    record_from(
        &Target::Command(pingpong_command(rounds)),
        source,
        64,
        false,
        &stop,
    )
    .map_err(|e| e.to_string())
}

#[test]
fn bpf_and_tracefs_give_a_pinned_pingpong_the_same_counts() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const ROUNDS: u32 = 5000;
    let mut pairs = Vec::new();
    // Alternating, so that a burst of other load on the machine falls on both sources.
    for _ in 0..2 {
        let bpf = match record_pingpong(Source::Bpf, ROUNDS) {
            Ok(r) => r,
            Err(e) => {
                eprintln!(
                    "skipped: the BPF recorder ({e}; run as root on an x86-64 kernel with BTF)"
                );
                return;
            }
        };
        let trace = match record_pingpong(Source::Tracefs, ROUNDS) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped: the tracefs recorder ({e}; run as root)");
                return;
            }
        };
        assert!(bpf.via.contains("BPF") && trace.via.contains("tracefs"));
        assert_eq!((bpf.lost, trace.lost), (0, 0));
        pairs.push((counts(&bpf), counts(&trace)));
    }
    let rounds = u64::from(ROUNDS);
    for (bpf, trace) in &pairs {
        eprintln!("(asleep, runnable, woken, preempted by others) BPF {bpf:?}\ntracefs {trace:?}");
        for name in ["pp-ping", "pp-pong"] {
            let (b, t) = (bpf[name], trace[name]);
            // On one CPU each thread leaves it once a round trip: asleep in its read, or
            // preempted by the thread it has just woken (which then finds no sleeper to wake).
            // How the rounds split between the two is the run's timing, so it differs from run
            // to run; the total, and the wakeups matching the sleeps one for one, do not — but
            // for the extra switches a task outside the ping-pong causes when it preempts one
            // (the machine's other load on CPU 0), which are counted and allowed for.
            for (source, c) in [("BPF", b), ("tracefs", t)] {
                assert!(
                    (rounds..=rounds + 10 + c.3).contains(&(c.0 + c.1)),
                    "{name} through {source}: {c:?} for {ROUNDS} round trips"
                );
                assert!(c.0.abs_diff(c.2) <= 1, "{name} through {source}: {c:?}");
            }
            assert!(
                (b.0 + b.1).abs_diff(t.0 + t.1) <= 5 + b.3.max(t.3),
                "{name}: BPF {b:?}, tracefs {t:?}"
            );
        }
    }
}

#[test]
fn the_recording_thread_is_traced_until_it_has_forked_the_command() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stop = AtomicBool::new(false);
    let argv = vec!["sleep".to_string(), "0.5".to_string()];
    let rec = match record_from(&Target::Command(argv), Source::Bpf, 4, false, &stop) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skipped: the BPF recorder ({e}; run as root on an x86-64 kernel with BTF)");
            return;
        }
    };
    let me = schedlab_real::sys::gettid();
    let root = rec.roots[0];
    // The fork is recorded (its parent was traced), and from it on only the command's tree.
    let fork = rec
        .events
        .iter()
        .position(|e| {
            e.kind
                == EventKind::Fork {
                    parent: me,
                    child: root,
                }
        })
        .unwrap_or_else(|| panic!("no fork of {root} by {me} in {} events", rec.events.len()));
    let tree = tree(&rec);
    // The recording thread is untraced once the command has started (within 100 ms here),
    // though it wakes every 5 ms while it waits for the command's end: from then on, every
    // event is one of the command's.
    let forked = rec.events[fork].ts_ns;
    let after = rec.events[fork..]
        .iter()
        .position(|e| e.ts_ns > forked + 100_000_000)
        .map_or(rec.events.len(), |i| fork + i);
    assert_eq!(
        outsider(&rec, after, &tree),
        None,
        "an event of no traced task"
    );
    let switches = rec.events[fork..]
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Switch { prev, .. } if prev == root))
        .count();
    assert!(switches >= 1, "the command's switches were not recorded");
}

#[test]
fn a_pid_recording_traces_every_thread_and_those_started_later() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "late_thread_child",
            "--test-threads=1",
            "--quiet",
        ])
        .env(LATE, "2000")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // The child's test harness has started its test's thread; the late thread comes 2 s later
    // (loading the recorder on a busy machine takes a good part of a second).
    std::thread::sleep(Duration::from_millis(150));
    let stop = AtomicBool::new(false);
    let target = Target::Pid {
        pid,
        duration: Duration::from_secs(6),
    };
    let rec = record_from(&target, Source::Bpf, 4, false, &stop);
    child.wait().unwrap();
    let rec = match rec {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skipped: the BPF recorder ({e}; run as root on an x86-64 kernel with BTF)");
            return;
        }
    };
    assert!(
        rec.roots.contains(&pid) && rec.roots.len() >= 2,
        "roots {:?}",
        rec.roots
    );
    let tree = tree(&rec);
    assert_eq!(outsider(&rec, 0, &tree), None, "an event of no traced task");
    let late: Vec<i32> = rec
        .names
        .iter()
        .filter(|(_, n)| n.as_str() == "late-thread")
        .map(|(&t, _)| t)
        .collect();
    assert_eq!(late.len(), 1, "names {:?}", rec.names);
    assert!(
        rec.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Fork { child, .. } if child == late[0])),
        "the late thread's start was not recorded"
    );
    let sleeps = |tid: i32| {
        rec.events
            .iter()
            .filter(|e| {
                matches!(e.kind, EventKind::Switch { prev, left: LeftAs::Sleeping, .. } if prev == tid)
            })
            .count()
    };
    assert!(
        sleeps(late[0]) >= 50,
        "late thread: {} sleeps",
        sleeps(late[0])
    );
    // Every thread that was there when recording began ran (the main thread when the test's
    // ended, the test's thread after its sleep).
    for &t in &rec.roots {
        let ran = rec
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Switch { next, .. } if next == t));
        assert!(ran, "thread {t} of {:?}: no switch recorded", rec.roots);
    }
}

/// The file descriptors of this process that hold a BPF object (program, map or link).
fn bpf_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().starts_with("anon_inode:bpf"))
                })
                .count()
        })
        .unwrap_or(0)
}

/// The drain threads of this process (other tests' threads come and go meanwhile).
fn drain_threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| {
        d.flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.trim() == "schedlab-drain")
            })
            .count()
    })
}

#[test]
fn a_ring_too_small_counts_what_it_lost() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A 1 MiB ring read only at the end holds 32,768 records; 20,000 round trips write at least
    // 40,000 switches and 20,000 wakeups.
    let mut recorder = match BpfRecorder::open_with(1, false, false) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("skipped: the BPF recorder ({e}; run as root on an x86-64 kernel with BTF)");
            return;
        }
    };
    let argv = pingpong_command(20_000);
    let me = schedlab_real::sys::gettid();
    recorder.trace(me).unwrap();
    let mut child = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .spawn()
        .unwrap();
    recorder.untrace(me);
    child.wait().unwrap();
    let (drained, lost) = recorder.finish().unwrap();
    let switches = drained
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Switch { .. }))
        .count();
    eprintln!(
        "{} events kept ({switches} switches), {lost} lost",
        drained.events.len()
    );
    assert!(lost > 0, "nothing lost with a 1 MiB ring");
    assert!(switches <= 32_768, "{switches} switches in a 1 MiB ring");
    assert!(
        drained.events.len() as u64 + lost >= 60_000,
        "{} kept + {lost} lost",
        drained.events.len()
    );
}

#[test]
fn an_interrupted_recording_leaves_nothing_behind() {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fds = bpf_fds();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let stopper = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        })
    };
    let argv = vec!["sleep".to_string(), "30".to_string()];
    let t0 = std::time::Instant::now();
    let r = record_from(&Target::Command(argv), Source::Bpf, 4, false, &stop);
    stopper.join().unwrap();
    match r {
        Err(RecordError::Interrupted) => {}
        Err(e) => {
            eprintln!("skipped: the BPF recorder ({e}; run as root on an x86-64 kernel with BTF)");
            return;
        }
        Ok(_) => panic!("recording went on past the interruption"),
    }
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "the command was not ended"
    );
    assert_eq!(bpf_fds(), fds, "BPF objects still held");
    assert_eq!(drain_threads(), 0, "the drain thread is still there");
}
