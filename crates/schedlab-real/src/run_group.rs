//! The process group of a repetition's spawned processes ([`RunGroup`]), so that the run ends and
//! reaps every process its tasks forked before it returns — also when it is interrupted or fails.
//!
//! A task that forks a job is the job's parent, and the supervisor cannot wait for another
//! process's children; when a job's parent was a host process the supervisor killed (its
//! emergency stop after SIGINT), the job used to die of PR_SET_PDEATHSIG re-parented to init and
//! stay a zombie until init reaped it (0.5–2 s observed in a container). Now:
//! - the schedlab process is a child subreaper (PR_SET_CHILD_SUBREAPER, `prctl(2)`) while the
//!   group lives, so that orphaned descendants are re-parented to it rather than to init;
//! - every spawned process joins one process group, led by a keeper process that only sleeps
//!   (a group needs a live member to be joined, and the keeper's pid — the group's id — cannot
//!   be reused while the supervisor has not reaped it);
//! - at the end the supervisor marks the group ending, kills it (`kill(-group, SIGKILL)`) and
//!   waits for its members (`waitpid(-group)`) until none is left. A process forked after the
//!   kill reads the mark once it has joined and leaves at once, so none outlives the end.
//!
//! The keeper is named `schedlab-keeper` (`ps`, `top`) and dies of any fatal signal (the
//! handlers it inherits from schedlab are reset). Its death during a run is an error
//! ([`RunGroup::keeper_death`]): the supervisor checks it and fails the repetition, naming it,
//! as it does when a worker dies — something outside the run is killing its processes. The dead
//! keeper is left unreaped until the end, so that its pid, the group's id, is not reused.

use crate::sys;
use std::sync::atomic::{AtomicBool, Ordering};

/// The spawned processes' group of one repetition (see the module comment). Dropping it ends
/// and reaps them.
pub struct RunGroup {
    /// The keeper's pid: the group's id.
    keeper: i32,
    /// A shared page whose first byte says the group is ending (seen by every process).
    ending: sys::SharedAtomics<AtomicBool>,
    /// Set once the group has been ended (ending twice must not signal a reused id).
    ended: AtomicBool,
}

impl RunGroup {
    /// Make this process a subreaper and start the group's keeper.
    pub fn new() -> std::io::Result<RunGroup> {
        // Unmapped on drop, on every way out.
        let ending = sys::SharedAtomics::new(1)?;
        subreaper_hold()?;
        let parent = std::process::id() as i32;
        // SAFETY: the child only makes its group and sleeps (async-signal-safe calls), until
        // it is killed.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            subreaper_release();
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: plain calls on our own process.
            unsafe {
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                if libc::getppid() != parent {
                    libc::_exit(0);
                }
                // Inherited handlers (schedlab's SIGINT/SIGTERM flag) would let the keeper live
                // on through a signal meant to end it, unnoticed; with the default actions a
                // fatal signal ends it and the supervisor sees its death.
                for sig in 1..32 {
                    if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                        libc::signal(sig, libc::SIG_DFL);
                    }
                }
                let mut unblock: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut unblock);
                libc::sigprocmask(libc::SIG_SETMASK, &unblock, std::ptr::null_mut());
                libc::prctl(libc::PR_SET_NAME, KEEPER_NAME.as_ptr());
                loop {
                    libc::pause();
                }
            }
        }
        // Also from this side, so that the group exists when `new` returns.
        let _ = sys::setpgid(pid, pid);
        Ok(RunGroup {
            keeper: pid,
            ending,
            ended: AtomicBool::new(false),
        })
    }

    /// The group's id.
    pub fn id(&self) -> i32 {
        self.keeper
    }

    /// How the keeper ended, if it has (`process 123 was killed by signal 9`); `None` while it
    /// lives. Only the group's own end kills it, so a death before that is an error. The dead
    /// keeper is not reaped (`WNOWAIT`): its pid keeps naming the group until [`end`](Self::end).
    pub fn keeper_death(&self) -> Option<String> {
        if self.ended.load(Ordering::SeqCst) {
            return None;
        }
        let pid = self.keeper;
        let (code, status) = sys::ended_unreaped(pid)?;
        Some(match code {
            libc::CLD_EXITED => format!("process {pid} exited with status {status}"),
            _ => format!("process {pid} was killed by signal {status}"),
        })
    }

    fn ending(&self) -> &AtomicBool {
        &self.ending[0]
    }

    /// In a child just forked: join the group. False when the group is ending (or gone): the
    /// child must leave at once. Only async-signal-safe calls.
    pub fn join_self(&self) -> bool {
        let joined = sys::setpgid(0, self.keeper).is_ok();
        joined && !self.ending().load(Ordering::SeqCst)
    }

    /// In the parent, right after forking `pid`: put it in the group too (whichever of parent
    /// and child comes first does it; the other's call is harmless).
    pub fn join_child(&self, pid: i32) {
        // Failure (it already left) is harmless.
        let _ = sys::setpgid(pid, self.keeper);
    }

    /// Kill every process of the group and reap them all (they are this process's children,
    /// directly or re-parented to it). Once; later calls do nothing.
    pub fn end(&self) {
        if self.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        self.ending().store(true, Ordering::SeqCst);
        // The keeper is not reaped yet, so its pid still names our group.
        let _ = sys::kill(-self.keeper, libc::SIGKILL);
        // Until ECHILD: none is left.
        while sys::waitpid(-self.keeper, libc::__WALL).is_ok() {}
        subreaper_release();
    }
}

/// The keeper's name (`comm`), NUL-terminated for prctl; 15 bytes, the kernel's limit.
const KEEPER_NAME: &[u8] = b"schedlab-keeper\0";

/// The groups alive in this process, and whether the process was a subreaper before the first:
/// the flag is the process's, so groups that overlap (tests in threads, a sweep's shards) share
/// it, and only the last to end restores it.
static SUBREAPER: std::sync::Mutex<(usize, bool)> = std::sync::Mutex::new((0, false));

/// Make this process a child subreaper for one more group.
fn subreaper_hold() -> std::io::Result<()> {
    let mut held = SUBREAPER.lock().unwrap_or_else(|e| e.into_inner());
    if held.0 == 0 {
        let was = sys::child_subreaper().unwrap_or(false);
        sys::set_child_subreaper(true)?;
        held.1 = was;
    }
    held.0 += 1;
    Ok(())
}

/// One group fewer; the last restores the flag as it was.
fn subreaper_release() {
    let mut held = SUBREAPER.lock().unwrap_or_else(|e| e.into_inner());
    held.0 = held.0.saturating_sub(1);
    if held.0 == 0 && !held.1 {
        let _ = sys::set_child_subreaper(false);
    }
}

/// Ends a group when dropped (the repetition's way out, on every path).
pub struct EndOnDrop(pub Option<std::sync::Arc<RunGroup>>);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.end();
        }
    }
}

impl Drop for RunGroup {
    fn drop(&mut self) {
        // Before the page is unmapped (a field, dropped after this): no process of the group is
        // left to use it.
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `pid` exists at all (a zombie counts: it has not been reaped).
    fn exists(pid: i32) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn an_orphaned_member_is_killed_and_reaped_when_the_group_ends() {
        let group = RunGroup::new().unwrap();
        // A child that forks a grandchild into the group and dies at once, orphaning it.
        let (r, w) = crate::sys::pipe().unwrap();
        // SAFETY: the child only forks, writes and exits.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            // SAFETY: async-signal-safe calls only.
            unsafe {
                let grandchild = libc::fork();
                if grandchild == 0 {
                    if !group.join_self() {
                        libc::_exit(1);
                    }
                    loop {
                        libc::pause();
                    }
                }
                group.join_child(grandchild);
                libc::write(w, (&grandchild as *const i32).cast(), 4);
                libc::_exit(0);
            }
        }
        crate::sys::close(w);
        let mut buf = [0u8; 4];
        crate::sys::read_exact(r, &mut buf).unwrap();
        crate::sys::close(r);
        let grandchild = i32::from_ne_bytes(buf);
        let mut status = 0;
        // SAFETY: reaping our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        // The grandchild is orphaned: re-parented to this process (the subreaper), not init.
        let ppid = std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
            .unwrap()
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        assert_eq!(ppid, Some(std::process::id()));
        assert!(exists(grandchild));
        let keeper = group.id();
        drop(group);
        assert!(!exists(grandchild), "the orphan was killed and reaped");
        assert!(!exists(keeper), "the keeper was killed and reaped");
    }

    #[test]
    fn the_keepers_death_is_seen_and_it_stays_unreaped_until_the_end() {
        let group = RunGroup::new().unwrap();
        let keeper = group.id();
        assert_eq!(group.keeper_death(), None, "a live keeper");
        // Named (by the keeper itself, soon after the fork) once its handlers are reset.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let comm = || std::fs::read_to_string(format!("/proc/{keeper}/comm")).unwrap();
        while comm().trim() != "schedlab-keeper" {
            assert!(std::time::Instant::now() < deadline, "named {}", comm());
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // SIGTERM, whose handler a keeper inherits from schedlab, ends it too.
        // SAFETY: signalling our own child.
        unsafe { libc::kill(keeper, libc::SIGTERM) };
        let death = loop {
            if let Some(d) = group.keeper_death() {
                break d;
            }
            assert!(std::time::Instant::now() < deadline, "the keeper lives on");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_eq!(death, format!("process {keeper} was killed by signal 15"));
        assert!(exists(keeper), "not reaped: its pid still names the group");
        group.end();
        assert!(!exists(keeper), "reaped at the end");
        assert_eq!(
            group.keeper_death(),
            None,
            "after the end, nothing to report"
        );
    }

    #[test]
    fn a_process_forked_after_the_end_leaves_at_once() {
        let group = RunGroup::new().unwrap();
        group.ending().store(true, Ordering::SeqCst);
        // SAFETY: the child only tries to join and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            // SAFETY: async-signal-safe calls only.
            unsafe { libc::_exit(i32::from(group.join_self())) };
        }
        let mut status = 0;
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(child, &mut status, 0) };
        assert_eq!(libc::WEXITSTATUS(status), 0, "join_self said false");
        group.end();
        // Ending again (drop) does nothing.
    }
}
