//! `web --server nginx|apache2` (issue 17): each real server is started with the `server`
//! group's knobs (read back from /proc while it serves), used by schedlab's client with
//! byte-exact checks, and stopped with nothing left behind — after a normal end and after an
//! interrupt; its processes' CPU time and switches are in the `server` row; a port in use and
//! the simulator are refused before anything runs. Skipped, with the install line, where the
//! package is absent.

mod common;

use common::{schedlab, serial};
use schedlab_workload::record::RunRecord;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `program` is installed (Debian puts the servers in /usr/sbin, which a user's PATH
/// may lack: schedlab looks in PATH, so the test does too).
fn installed(program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()));
    if !found {
        println!("skipped: {program} is not installed; apt-get install -y {program}");
    }
    found
}

/// The processes descended from `pid` (children, grandchildren, …), with their names.
fn descendants(pid: u32) -> Vec<(u32, String)> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.trim().to_string())
        };
        if let (Some(ppid), Some(name)) = (field("PPid:"), field("Name:")) {
            if let Ok(ppid) = ppid.parse::<u32>() {
                parent_of.push((p, ppid, name));
            }
        }
    }
    let mut out: Vec<(u32, String)> = Vec::new();
    let mut frontier = vec![pid];
    while let Some(q) = frontier.pop() {
        for (p, ppid, name) in &parent_of {
            if *ppid == q {
                out.push((*p, name.clone()));
                frontier.push(*p);
            }
        }
    }
    out
}

/// When process `pid` started (field 22 of /proc/PID/stat), to tell it from a reused pid.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}

/// Nice (field 19 of /proc/PID/stat) and allowed CPUs of process `pid`.
fn nice_and_cpus(pid: u32) -> Option<(i64, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let nice = stat[stat.rfind(')')? + 2..]
        .split(' ')
        .nth(16)?
        .parse()
        .ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let cpus = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim()
        .to_string();
    Some((nice, cpus))
}

/// The temporary directories of process `pid` (`$TMPDIR/schedlab-<pid>-…`).
fn temp_dirs_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("schedlab-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// Wait up to 10 s until none of `procs` (pid, start time) exists; the ones left.
fn left_after(procs: &[(u32, u64)]) -> Vec<u32> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<u32> = procs
            .iter()
            .filter(|(p, t)| start_time(*p) == Some(*t))
            .map(|(p, _)| *p)
            .collect();
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Wait up to 10 s for processes named `program` below `pid`, with their start times.
fn servers_below(pid: u32, program: &str) -> Vec<(u32, u64)> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let found: Vec<(u32, u64)> = descendants(pid)
            .into_iter()
            .filter(|(_, name)| name == program)
            .filter_map(|(p, _)| Some((p, start_time(p)?)))
            .collect();
        if found.len() >= 2 || Instant::now() > until {
            return found;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// This test process's record file for `name` (removed by [`finish`]).
fn record_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("schedlab-test-{}-{name}.json", std::process::id()))
}

/// `schedlab ARGS` started with its output captured, and the real server processes of
/// `program` it started (once they are up).
fn start(args: &[&str], program: &str) -> (std::process::Child, Vec<(u32, u64)>) {
    let child = schedlab()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let servers = servers_below(child.id(), program);
    (child, servers)
}

/// Wait for a run [`start`]ed with `args`, require that it succeeded, and read (then remove)
/// its record at `json`.
fn finish(args: &[&str], child: std::process::Child, json: &std::path::Path) -> RunRecord {
    common::succeeded(args, child.wait_with_output().unwrap());
    let rec = RunRecord::from_json(&std::fs::read_to_string(json).unwrap()).unwrap();
    std::fs::remove_file(json).ok();
    rec
}

/// Each real server serves four connections of SPECweb99's mix (every response checked byte
/// for byte by its client), runs with the server group's nice and CPUs in every process (its
/// master and its workers, read from /proc while it serves), and leaves no process and no
/// temporary file when the run ends.
#[test]
fn each_real_server_is_started_used_and_stopped_with_nothing_left() {
    let _s = serial();
    for program in ["nginx", "apache2"] {
        if !installed(program) {
            continue;
        }
        let json = record_path(&format!("web-real-{program}"));
        let args = [
            "run",
            "web",
            "--server",
            program,
            "--connections",
            "4",
            "--dirs",
            "2",
            "--duration",
            "3s",
            "--runs",
            "1",
            "--quiet",
            "--group",
            "server:nice=3,cpus=0",
            "--json",
            json.to_str().unwrap(),
        ];
        let (child, servers) = start(&args, program);
        let pid = child.id();
        // The master and at least one worker (nginx: one per CPU; Apache: one per connection).
        assert!(servers.len() >= 2, "{program}: {servers:?} while running");
        for &(p, _) in &servers {
            if let Some((nice, cpus)) = nice_and_cpus(p) {
                assert_eq!((nice, cpus.as_str()), (3, "0"), "{program} process {p}");
            }
        }
        // The repetition's directory and the run's file set.
        assert_eq!(
            temp_dirs_of(pid).len(),
            2,
            "{program}: the run's directories"
        );
        let rec = finish(&args, child, &json);
        let m = &rec.configs[0].repetitions[0].metrics;
        assert_eq!(m["conforming"], 4.0, "{program}: {m:?}");
        assert!(m["req_per_s"] > 4.0, "{program}: {m:?}");
        // The server row counts the server's processes: CPU time, and a voluntary switch for
        // at least every other request (a worker waits for each paced request) — the task that
        // only started and stopped it has a dozen or so.
        let server = &rec.configs[0].repetitions[0].counters["server"];
        let requests = m["req_per_s"] * 3.0;
        assert!(server.cpu_time_s > 0.0, "{program}: {server:?}");
        assert!(
            server.voluntary_switches.unwrap() as f64 >= requests / 2.0,
            "{program}: {requests} requests, {server:?}"
        );
        assert_eq!(left_after(&servers), Vec::<u32>::new(), "{program} left");
        assert_eq!(temp_dirs_of(pid), Vec::<PathBuf>::new());
    }
}

/// The event client against each real server: two loops for six connections, every
/// response's header parsed and its body checked byte for byte, all six conforming at the
/// rated 400 kbit/s, nothing left behind.
#[test]
fn the_event_client_reads_each_real_servers_responses() {
    let _s = serial();
    for program in ["nginx", "apache2"] {
        if !installed(program) {
            continue;
        }
        let json = record_path(&format!("web-real-evc-{program}"));
        let args = [
            "run",
            "web",
            "--server",
            program,
            "--client",
            "event:2",
            "--connections",
            "6",
            "--dirs",
            "2",
            "--duration",
            "3s",
            "--runs",
            "1",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ];
        let (child, servers) = start(&args, program);
        let pid = child.id();
        let rec = finish(&args, child, &json);
        let m = &rec.configs[0].repetitions[0].metrics;
        assert_eq!(m["conforming"], 6.0, "{program}: {m:?}");
        assert!(m["req_per_s"] > 6.0, "{program}: {m:?}");
        assert_eq!(rec.configs[0].params["client-tasks"], "2");
        assert_eq!(left_after(&servers), Vec::<u32>::new(), "{program} left");
        assert_eq!(temp_dirs_of(pid), Vec::<PathBuf>::new());
    }
}

/// Apache prefork's children are counted in the check of the room for tasks: as an
/// unprivileged user under `RLIMIT_NPROC` 40 (`prlimit`; the kernel does not enforce it for
/// root), 100 connections with the event client need 5 tasks of schedlab's but 101 of
/// Apache's, and the run is refused before anything starts, naming both.
#[test]
fn apaches_children_count_in_the_room_for_tasks() {
    if !installed("apache2") {
        return;
    }
    if !rustix::process::getuid().is_root() {
        println!(
            "skipped: needs root to run schedlab as another user under a lowered RLIMIT_NPROC"
        );
        return;
    }
    for tool in ["prlimit", "setpriv"] {
        if !std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        {
            println!("skipped: {tool} is not installed; apt-get install -y util-linux");
            return;
        }
    }
    let out = Command::new("prlimit")
        .args([
            "--nproc=40:40",
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
        .arg(env!("CARGO_BIN_EXE_schedlab"))
        .args([
            "run",
            "web",
            "--server",
            "apache2",
            "--client",
            "event:2",
            "--connections",
            "100",
            "--dirs",
            "2",
            "--duration",
            "2s",
            "--runs",
            "1",
        ])
        .env("TMPDIR", "/tmp")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("RLIMIT_NPROC")
            && err.contains("allows 40 tasks")
            && err.contains("106 tasks")
            && err.contains(
                "101 are apache2's master and its prefork child per connection (--connections)"
            )
            && err.contains("5 schedlab's"),
        "{err}"
    );
    // Refused before anything started: no server, and nothing written.
    assert!(!err.contains("server-error.log"), "{err}");
}

/// A run interrupted while nginx serves leaves neither nginx's master nor its workers, nor the
/// run's directory.
#[test]
fn an_interrupted_real_server_run_leaves_no_server_process() {
    let _s = serial();
    for program in ["nginx", "apache2"] {
        if !installed(program) {
            continue;
        }
        let mut child = schedlab()
            .args([
                "run",
                "web",
                "--server",
                program,
                "--connections",
                "4",
                "--dirs",
                "2",
                "--duration",
                "5s",
                "--runs",
                "3",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let servers = servers_below(pid, program);
        assert!(servers.len() >= 2, "{program}: {servers:?} while running");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
        child.wait().unwrap();
        assert_eq!(
            left_after(&servers),
            Vec::<u32>::new(),
            "{program} left after the interrupt"
        );
        assert_eq!(temp_dirs_of(pid), Vec::<PathBuf>::new());
    }
}

/// A port in use is refused before anything runs, naming the port and the process holding it;
/// the simulator refuses a real server.
#[test]
fn a_port_in_use_and_the_simulator_are_refused() {
    let fails = |args: &[&str]| {
        let out = schedlab().args(args).output().unwrap();
        assert!(!out.status.success(), "schedlab {args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = fails(&[
        "run",
        "web",
        "--server",
        "nginx",
        "--backend",
        "sim",
        "--dirs",
        "1",
    ]);
    assert!(
        e.contains("server=nginx") && e.contains("real kernel"),
        "{e}"
    );
    let e = fails(&["run", "web", "--port", "8080"]);
    assert!(e.contains("8080") && e.contains("real server"), "{e}");
    if !installed("nginx") {
        return;
    }
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port().to_string();
    let e = fails(&[
        "run", "web", "--server", "nginx", "--port", &port, "--dirs", "1",
    ]);
    let me = format!("process {}", std::process::id());
    assert!(e.contains(&port) && e.contains(&me), "{e}");
}
