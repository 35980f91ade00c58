//! How the tasks of a repetition are hosted — threads of this process, or forked processes
//! (one per task, or one per group running its tasks as threads) — and how their reports come
//! back to the supervisor.

use crate::knobs::demote_thread;
use crate::repetition::RunError;
use crate::report::{take_reports, write_report, TaskReport};
use crate::sys;
use crate::task::{task_main, TaskEnv};
use schedlab_workload::{TaskRef, Workload};
use std::collections::HashSet;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// How the tasks of a repetition are hosted, and how their reports come back.
pub(crate) enum Hosts {
    Threads {
        rx: mpsc::Receiver<TaskReport>,
        tids: Arc<parking_lot::Mutex<Vec<i32>>>,
        handles: Vec<std::thread::JoinHandle<()>>,
    },
    Processes {
        children: Vec<Child>,
    },
}

/// A forked process hosting tasks, its result pipe and what has been read from it.
pub(crate) struct Child {
    /// How many tasks this process hosts (one, or a whole group as threads).
    tasks: usize,
    /// Name of what it hosts, for errors (`the server process`).
    what: String,
    pid: i32,
    result_fd: i32,
    buf: Vec<u8>,
    /// Reports parsed so far.
    got: usize,
    reaped: Option<i32>,
}

impl Child {
    fn complete(&self) -> bool {
        self.got == self.tasks
    }

    /// Move every complete length-prefixed report out of the buffer.
    fn parse(&mut self, out: &mut Vec<TaskReport>) -> Result<(), serde_json::Error> {
        self.got += take_reports(&mut self.buf, out)?;
        Ok(())
    }

    /// Read what the pipe holds now (non-blocking after poll said it is readable or the
    /// process is gone).
    fn drain(&mut self) {
        let mut chunk = [0u8; 65536];
        loop {
            if !sys::wait_readable(self.result_fd, 0) {
                return;
            }
            match sys::read_some(self.result_fd, &mut chunk) {
                Ok(n) if n > 0 => self.buf.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        }
    }
}

impl Hosts {
    pub(crate) fn threads<W: Workload>(
        env: &Arc<TaskEnv<W>>,
        tasks: &[TaskRef],
    ) -> Result<Hosts, RunError> {
        let (tx, rx) = mpsc::channel();
        let tids = Arc::new(parking_lot::Mutex::new(Vec::with_capacity(tasks.len())));
        let mut handles = Vec::with_capacity(tasks.len());
        for &task in tasks {
            let group = env.group_names[task.group];
            let env = env.clone();
            let tx = tx.clone();
            let tids = tids.clone();
            let h = std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    tids.lock().push(sys::gettid());
                    task_main(&env, task, |r| {
                        let _ = tx.send(r);
                    });
                })
                .map_err(|e| {
                    RunError::Setup(format!(
                        "cannot create the thread of {group} {} (task {} of {}): {}",
                        task.index,
                        handles.len() + 1,
                        tasks.len(),
                        crate::host::explain_task_failure(&e)
                    ))
                })?;
            handles.push(h);
        }
        Ok(Hosts::Threads { rx, tids, handles })
    }

    /// Fork one process per unit; a unit of several tasks runs them as threads of that process,
    /// which streams each report to the parent as soon as its task finishes.
    pub(crate) fn processes<W: Workload>(
        env: &Arc<TaskEnv<W>>,
        units: Vec<Vec<TaskRef>>,
    ) -> Result<Hosts, RunError> {
        let parent = std::process::id() as i32;
        let mut children: Vec<Child> = Vec::with_capacity(units.len());
        let mut created = 0;
        for unit in units {
            let group = env.group_names[unit[0].group];
            let what = if unit.len() == 1 {
                format!("{group} {}", unit[0].index)
            } else {
                format!("the {group} process ({} tasks)", unit.len())
            };
            let (r, w) = sys::pipe().map_err(|e| RunError::Setup(format!("result pipe: {e}")))?;
            // SAFETY: the child only runs its tasks and then _exit()s; it never returns into the
            // parent's stack frames, and glibc keeps malloc usable after fork.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                let e = std::io::Error::last_os_error();
                for c in &children {
                    let _ = sys::kill(c.pid, libc::SIGKILL);
                }
                let (process, which) = match unit.len() {
                    1 => (
                        format!("the process of {what}"),
                        format!("task {} of {}", created + 1, env.total),
                    ),
                    n => (
                        format!("the {group} process"),
                        format!("tasks {}-{} of {}", created + 1, created + n, env.total),
                    ),
                };
                return Err(RunError::Setup(format!(
                    "cannot fork {process} ({which}): {}",
                    crate::host::explain_task_failure(&e)
                )));
            }
            if pid == 0 {
                sys::die_with_parent(parent, libc::SIGKILL);
                sys::close(r);
                let ok = if let [task] = unit[..] {
                    let mut ok = true;
                    task_main(env, task, |rep| ok = write_report(w, &rep));
                    ok
                } else {
                    // Not "sl-…": the host thread is not one of the traced tasks.
                    sys::set_thread_name(&format!("schedlab-{group}"));
                    let (tx, rx) = mpsc::channel();
                    let mut ok = true;
                    for (k, &task) in unit.iter().enumerate() {
                        let task_env = env.clone();
                        let tx = tx.clone();
                        let spawned =
                            std::thread::Builder::new()
                                .stack_size(64 * 1024)
                                .spawn(move || {
                                    task_main(&task_env, task, |rep| {
                                        let _ = tx.send(rep);
                                    });
                                });
                        if let Err(e) = spawned {
                            // Said at once: the parent would otherwise wait for a task that
                            // will never report ready.
                            env.gate.task_not_created(
                                task.id,
                                &format!(
                                    "cannot create the thread of {group} {} (task {} of {}, thread {} of {} in the {group} process): {}",
                                    task.index,
                                    created + k + 1,
                                    env.total,
                                    k + 1,
                                    unit.len(),
                                    crate::host::explain_task_failure(&e)
                                ),
                            );
                            ok = false;
                            break;
                        }
                    }
                    drop(tx);
                    for rep in rx {
                        ok &= write_report(w, &rep);
                    }
                    ok
                };
                // Without running the parent's destructors.
                sys::exit_now(i32::from(!ok));
            }
            sys::close(w);
            created += unit.len();
            children.push(Child {
                tasks: unit.len(),
                what,
                pid,
                result_fd: r,
                buf: Vec::new(),
                got: 0,
                reaped: None,
            });
        }
        Ok(Hosts::Processes { children })
    }

    /// Collect reports that have arrived, waiting at most `wait`. Returns an error if a process
    /// died without reporting.
    pub(crate) fn poll_reports(
        &mut self,
        wait: Duration,
        out: &mut Vec<TaskReport>,
    ) -> Result<(), RunError> {
        match self {
            Hosts::Threads { rx, .. } => {
                if let Ok(r) = rx.recv_timeout(wait) {
                    out.push(r);
                    while let Ok(r) = rx.try_recv() {
                        out.push(r);
                    }
                }
                Ok(())
            }
            Hosts::Processes { children } => {
                let mut fds: Vec<libc::pollfd> = children
                    .iter()
                    .filter(|c| !c.complete())
                    .map(|c| libc::pollfd {
                        fd: c.result_fd,
                        events: libc::POLLIN,
                        revents: 0,
                    })
                    .collect();
                let _ = sys::poll(&mut fds, wait.as_millis() as i32);
                // Only the children whose pipe has news are looked at: a report arrived, or the
                // pipe hung up because the child (its only writer) is gone. Scanning every child
                // each time would cost the workload CPU time the peers do not spend.
                let ready: HashSet<i32> = fds
                    .iter()
                    .filter(|p| p.revents != 0)
                    .map(|p| p.fd)
                    .collect();
                for c in children
                    .iter_mut()
                    .filter(|c| !c.complete() && ready.contains(&c.result_fd))
                {
                    c.drain();
                    c.parse(out).map_err(|e| RunError::Task {
                        task: c.what.clone(),
                        message: format!("unreadable report from {}: {e}", c.what),
                    })?;
                    let hung_up = fds.iter().any(|p| {
                        p.fd == c.result_fd && p.revents & (libc::POLLHUP | libc::POLLERR) != 0
                    });
                    if c.complete() || c.reaped.is_some() || !hung_up {
                        continue;
                    }
                    // Our own child, whose pipe end is closed: it is exiting.
                    let status = match sys::waitpid(c.pid, 0) {
                        Ok(status) => {
                            c.reaped = Some(status);
                            status
                        }
                        Err(_) => 0,
                    };
                    return Err(RunError::Died {
                        what: c.what.clone(),
                        how: describe_status(c.pid, status),
                    });
                }
                Ok(())
            }
        }
    }

    /// Emergency stop: demote threads to SCHED_OTHER (they cannot be killed alone; the process
    /// exits soon after), kill processes.
    pub(crate) fn stop_all(&mut self) {
        match self {
            Hosts::Threads { tids, .. } => {
                for &tid in tids.lock().iter() {
                    let _ = demote_thread(tid);
                }
            }
            Hosts::Processes { children } => {
                for c in children.iter().filter(|c| c.reaped.is_none()) {
                    let _ = sys::kill(c.pid, libc::SIGKILL);
                }
            }
        }
    }

    /// Reap everything. After a failure, threads that are still blocked are left to die with the
    /// process (they hold no resources outside it); processes have been killed. After a success,
    /// a process that did not exit normally (killed at the end gate, or unable to send a report)
    /// is an error: its tasks' results cannot be trusted.
    pub(crate) fn finish(&mut self, ok: bool) -> Result<(), RunError> {
        if !ok {
            self.stop_all();
        }
        let mut lost = None;
        match self {
            Hosts::Threads { handles, .. } => {
                if ok {
                    for h in handles.drain(..) {
                        let _ = h.join();
                    }
                }
            }
            Hosts::Processes { children } => {
                for c in children.iter_mut() {
                    if c.reaped.is_none() {
                        let status = sys::waitpid(c.pid, 0).unwrap_or(0);
                        c.reaped = Some(status);
                        let normal = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
                        if ok && !normal && lost.is_none() {
                            let how = if libc::WIFEXITED(status) {
                                format!(
                                    "process {} exited with status {}",
                                    c.pid,
                                    libc::WEXITSTATUS(status)
                                )
                            } else {
                                describe_status(c.pid, status)
                            };
                            lost = Some(RunError::Lost {
                                what: c.what.clone(),
                                how,
                            });
                        }
                    }
                    sys::close(c.result_fd);
                }
            }
        }
        lost.map_or(Ok(()), Err)
    }
}

fn describe_status(pid: i32, status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!(
            "process {pid} was killed by signal {}",
            libc::WTERMSIG(status)
        )
    } else {
        format!(
            "process {pid} exited with status {} without reporting",
            libc::WEXITSTATUS(status)
        )
    }
}
