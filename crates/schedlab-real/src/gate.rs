//! The start gate of a repetition, and the guard that aborts it on every early return.

use crate::sys;
use std::sync::atomic::{AtomicU64, Ordering};

/// The start gate, as hackbench builds it: tasks write "ready" messages into one pipe and then
/// `poll()` another, which the parent makes readable with a single byte. Poll waiters are woken
/// all at once (a blocking `read()` would wake them one after another: pipe readers wait
/// exclusively), so every task starts together. The epoch (0 = abort) is published beforehand in
/// a shared anonymous mapping, which forked processes inherit.
pub(crate) struct Gate {
    /// Tasks write their ready messages here (read end, write end).
    pub(crate) ready: (i32, i32),
    /// The parent writes one byte here to release them.
    start: (i32, i32),
    /// Tasks wait here after their body until the parent has read their counters.
    end: (i32, i32),
    epoch: sys::SharedAtomics<AtomicU64>,
}

impl Gate {
    pub(crate) fn new() -> std::io::Result<Gate> {
        Ok(Gate {
            ready: sys::pipe()?,
            start: sys::pipe()?,
            end: sys::pipe()?,
            epoch: sys::SharedAtomics::new(1)?,
        })
    }

    fn epoch(&self) -> &AtomicU64 {
        &self.epoch[0]
    }

    /// Task side: report ready (with an error message or empty), then wait for the epoch.
    pub(crate) fn task_ready_and_wait(&self, id: usize, error: &str) -> Option<u64> {
        self.send_ready(id, error, 0).ok()?;
        if !error.is_empty() {
            return None;
        }
        if !sys::wait_readable(self.start.0, -1) {
            return None;
        }
        match self.epoch().load(Ordering::Acquire) {
            0 => None,
            e => Some(e),
        }
    }

    /// Host side: task `id` could not even be created; the parent aborts the run at once.
    pub(crate) fn task_not_created(&self, id: usize, error: &str) {
        let _ = self.send_ready(id, error, NOT_CREATED);
    }

    /// One message on the ready pipe: the task id, the message's length with `flags`, and the
    /// message (empty: ready).
    fn send_ready(&self, id: usize, message: &str, flags: u32) -> std::io::Result<()> {
        let msg = message.as_bytes();
        let msg = &msg[..msg.len().min(3000)];
        let mut buf = Vec::with_capacity(8 + msg.len());
        buf.extend_from_slice(&(id as u32).to_le_bytes());
        buf.extend_from_slice(&(msg.len() as u32 | flags).to_le_bytes());
        buf.extend_from_slice(msg);
        // One write of at most PIPE_BUF bytes is atomic, so messages never interleave.
        sys::write_all(self.ready.1, &buf)
    }

    /// Task side: wait until the parent releases the end gate.
    pub(crate) fn wait_end(&self) {
        sys::wait_readable(self.end.0, -1);
    }

    /// Parent side: let every task that finished its body exit.
    pub(crate) fn release_end(&self) {
        let _ = sys::write_all(self.end.1, b"!");
    }

    /// Parent side: release everybody at `epoch`, or abort them with 0 (through
    /// [`StartGuard`], which does it once).
    fn release(&self, epoch: u64) {
        self.epoch().store(epoch, Ordering::Release);
        let _ = sys::write_all(self.start.1, b"!");
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        for fd in [
            self.ready.0,
            self.ready.1,
            self.start.0,
            self.start.1,
            self.end.0,
            self.end.1,
        ] {
            sys::close(fd);
        }
    }
}

/// The flag of a ready message saying that the task could not be created (in the length field;
/// messages are far shorter).
pub(crate) const NOT_CREATED: u32 = 1 << 31;

/// The parent's hold on the start gate: unless [`StartGuard::open`] released the tasks at an
/// epoch, dropping it releases them with 0 (abort), so that every task created so far leaves
/// the start gate whatever way the parent returns.
pub(crate) struct StartGuard<'a> {
    gate: &'a Gate,
}

impl<'a> StartGuard<'a> {
    /// Hold `gate` closed until [`StartGuard::open`] or drop.
    pub(crate) fn new(gate: &'a Gate) -> StartGuard<'a> {
        StartGuard { gate }
    }

    /// The gate this guard holds.
    pub(crate) fn gate(&self) -> &'a Gate {
        self.gate
    }

    /// Release every task at `epoch`.
    pub(crate) fn open(self, epoch: u64) {
        self.gate.release(epoch);
        std::mem::forget(self);
    }
}

impl Drop for StartGuard<'_> {
    fn drop(&mut self) {
        self.gate.release(0);
    }
}
