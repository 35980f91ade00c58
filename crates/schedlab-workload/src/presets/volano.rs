//! `volano` — VolanoMark as its source runs it (seed 000): rooms of users chatting over loopback
//! TCP, with the thread structure, queues and yields of VolanoMark's classes.
//!
//! Follows VolanoMark 2.13.4's source (github jgneff/volano, GPL-3.0; described here, not copied;
//! seed 000 ran 2.1.2, whose connection and queue classes carry the same 1998 version header):
//!
//! - **Four threads per user** (`net/Connection.java`'s `startReceiving` / `startSending`): on
//!   each side of a user's TCP connection a receive thread and a send thread — the client's
//!   C_R and C_S (`chat/test/MarkUser.java`), the server's S_R and S_S. 800 threads for seed
//!   000's 10 rooms of 20.
//! - **The notify queue** (`util/NotifyQueue.java`, `net/SendQueue.java`): `Connection.send`
//!   only appends to the connection's queue and notifies; the send thread waits only while the
//!   queue is empty, then takes **every** queued packet at once, writes each (one write per
//!   packet), then calls `Thread.yield()`. Modelled as an in-process queue
//!   ([`crate::plan::SyncPlan::queues`]) read with a read of all it holds: a write wakes the
//!   send thread only if it sleeps in that read, as a monitor `notify` does.
//! - **The receive thread** (`Connection.run`): reads through a `BufferedInputStream` (one read
//!   takes every byte that has arrived, up to `read-buffer`), handles each packet, and after each
//!   packet calls `Thread.yield()` (`Connection.pause`, since VolanoMark sets no read pauses).
//! - **The turns rule** (`MarkUser`): user j of a room (from 0) sends, from its receive callback,
//!   when `(sent + received) mod users == j` after a counted indication; user 0 starts. The send
//!   is a hand-off to its C_S through the client's queue.
//! - **The room broadcast** (`chat/server/PublicChat.java`'s chat request, on the server's
//!   receive thread): one hand-off to every other member's server send queue, then a
//!   **confirm** ("confirmation for pacing") to the sender's own queue, which the client does
//!   not count.
//!
//! `Thread.yield()` is a real [`Context::yield_now`] (`sched_yield`), which each simulated policy
//! handles as its kernel did (o1's `yield=2.5.25` is the kernel seed 000 ran).
//!
//! Per-operation JVM work (`server-work`, `client-work`, default 0): user-space CPU per packet a
//! thread reads or writes — S_R per packet read, S_S per packet written, C_S per packet
//! written, C_R per packet read: 42 operations per room message of 20 users (1 + 20 + 1 + 20).
//! Fitted once, to seed 000's default row (docs/experiments.md says how and to what value); the
//! other rows and the counters are predictions.
//!
//! The JVM's monitors (`monitors`, off by default): every `NotifyQueue` method is
//! `synchronized`, and LinuxThreads' `pthread_cond_wait` takes the mutex again after the
//! restart signal has woken it (`condvar.c`), sleeping on it (`spinlock.c`'s `__pthread_lock`:
//! `suspend`) while the notifier still holds it; the release (`__pthread_unlock`: `restart`)
//! wakes it again. With `monitors` each queue's append runs under a lock of its process and a
//! woken send thread takes that lock before emptying the queue ([`Volano::put`]); the send
//! thread's read of the queue stands for `wait()`, so the packets appended while it waits for
//! the monitor go to its next batch rather than this one. On one CPU a monitor is contended only
//! when the putter loses the CPU inside it — to the thread its own notify woke — which
//! threshold 40 never allows among SCHED_OTHER tasks; docs/experiments.md measures what it does
//! to seed 000's rows and why it stays off. Assumed, not found: that IBM's JVM 1.3 built
//! `wait`/`notify` on a LinuxThreads mutex and condition variable of the monitor (Hartner: its
//! event semaphores are pthread mutexes), and that a contending thread blocks at once (on one
//! CPU its spin cannot succeed while the holder is off the CPU).
//!
//! Not modelled: the other monitors (the room's `notifyEvent` and member table, the connection's
//! `Observable`: none wakes a thread inside, so on one CPU only a tick could find them held),
//! GC and JIT threads, the setup (connect, enter room) and the exit cascade, both of which
//! VolanoMark times outside or nearly outside its window.
//!
//! Throughput = (messages sent + indications received by clients) / elapsed seconds, as
//! VolanoMark counts (`Mark.java`): confirms are not counted. Each packet carries room, sender,
//! sequence and send time; every receive thread checks each sender's packets arrive complete and
//! in order, and its own confirms likewise.
//!
//! Channels: user `u` has channel `2u` (client → server) and `2u + 1` (server → client), one
//! connection; queue `2n + u` is S_S[u]'s, queue `3n + u` is C_S[u]'s (n = rooms × users). Groups
//! `server` (tasks 0..n the S_R threads, n..2n the S_S threads) and `client` (0..n C_R, n..2n
//! C_S).

use super::def::{Example, SeedTable, Tables, WorkloadDef};
use super::params::{
    check_product, param_defs, parse_count, parse_with, Param, ParamDef, Preset, MAX_MESSAGES,
    MAX_TASKS,
};
use super::seed000::{count_suffix, nice_column, policy_and_knobs, seed_header};
use super::{metric, Outcome, Workload, CHAT_HEADER};
use crate::context::{ChannelId, Context, LockId, WorkloadError};
use crate::duration::format_duration;
use crate::error::ParamError;
use crate::plan::{ChannelVolume, GroupPlan, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, ConfigResult, MetricDef};
use crate::table::Table;
use std::collections::BTreeMap;
use std::time::Duration;

/// VolanoMark with four threads per user, notify queues and yields.
#[derive(Clone, Debug, PartialEq)]
pub struct Volano {
    /// Number of rooms (`-rooms`).
    pub rooms: usize,
    /// Users per room (`-users`).
    pub users: usize,
    /// Messages each user sends (`-count`; the seed's "messages").
    pub messages: usize,
    /// Bytes per packet (16..4096).
    pub size: usize,
    /// tcp (default) or unix.
    pub transport: Transport,
    /// Bytes one read of a receive thread takes at most (`BufferedInputStream`'s buffer).
    pub read_buffer: usize,
    /// Whether the server confirms each message to its sender.
    pub confirm: bool,
    /// Whether the threads call `Thread.yield()` where VolanoMark does.
    pub yields: bool,
    /// Whether each notify queue is a Java monitor: a lock that `putElement` holds around its
    /// append and notify, and that a notified send thread takes again before it empties the
    /// queue (`Volano::put`, `Volano::send_thread`).
    pub monitors: bool,
    /// User-space CPU per packet a server thread reads or writes.
    pub server_work: Duration,
    /// User-space CPU per packet a client thread reads or writes.
    pub client_work: Duration,
    /// How the real backend hosts the tasks.
    pub hosting: TaskMode,
}

impl Default for Volano {
    fn default() -> Self {
        Volano {
            rooms: 10,
            users: 20,
            messages: 100,
            size: 100,
            transport: Transport::Tcp,
            read_buffer: 8192,
            confirm: true,
            yields: true,
            monitors: false,
            server_work: Duration::ZERO,
            client_work: Duration::ZERO,
            hosting: TaskMode::GroupProcesses,
        }
    }
}

/// The sequence field's bit that marks a confirm (the server's copy back to the sender).
const CONFIRM: u32 = 1 << 31;

/// Bytes one read of a send thread's queue takes at most: everything a pipe holds (64 KiB, the
/// Linux default) — "take all queued" within what the real queue can hold.
const QUEUE_READ: usize = 64 * 1024;

/// What one thread counts of its reads, for the batching metrics.
#[derive(Default)]
struct Reads {
    reads: u64,
    packets: u64,
}

/// Packets read from a byte stream in reads of at most `cap` bytes: the part of a packet a read
/// cut off is kept for the next (TCP may split; Java's buffer refills the same way).
struct Framed {
    buf: Vec<u8>,
    have: usize,
    size: usize,
    cap: usize,
    counts: Reads,
}

impl Framed {
    fn new(size: usize, cap: usize) -> Framed {
        Framed {
            buf: vec![0; cap],
            have: 0,
            size,
            cap,
            counts: Reads::default(),
        }
    }

    /// One read (blocking while nothing has arrived); returns the whole packets now buffered,
    /// which the caller handles with [`Framed::packet`] before the next fill.
    async fn fill<C: Context>(&mut self, ctx: &C, ch: ChannelId) -> Result<usize, WorkloadError> {
        let n = ctx
            .recv_some(ch, &mut self.buf[self.have..self.cap])
            .await?;
        self.have += n;
        self.counts.reads += 1;
        let whole = self.have / self.size;
        self.counts.packets += whole as u64;
        Ok(whole)
    }

    /// Packet `i` of the ones [`Framed::fill`] reported.
    fn packet(&self, i: usize) -> &[u8] {
        &self.buf[i * self.size..(i + 1) * self.size]
    }

    /// Drop the `whole` packets handled, keeping a partial one at the front.
    fn consume(&mut self, whole: usize) {
        let used = whole * self.size;
        self.buf.copy_within(used..self.have, 0);
        self.have -= used;
    }
}

/// A packet's fields.
struct Header {
    room: usize,
    from: usize,
    seq: u32,
    sent_ns: u64,
}

fn decode(buf: &[u8]) -> Header {
    Header {
        room: u16::from_le_bytes([buf[0], buf[1]]) as usize,
        from: u16::from_le_bytes([buf[2], buf[3]]) as usize,
        seq: u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes")),
        sent_ns: u64::from_le_bytes(buf[8..16].try_into().expect("8 bytes")),
    }
}

impl Volano {
    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        check_product(
            NAME,
            &["rooms", "users"],
            "tasks",
            "4 × rooms × users",
            &[4, self.rooms, self.users],
            MAX_TASKS as u128,
        )?;
        check_product(
            NAME,
            &["rooms", "users", "messages"],
            "messages",
            "rooms × users × users × messages written by the server",
            &[self.rooms, self.users, self.users, self.messages],
            MAX_MESSAGES,
        )?;
        if !(CHAT_HEADER..=4096).contains(&self.size) {
            return Err(ParamError::value(
                NAME,
                "size",
                self.size,
                format!("is not accepted; use {CHAT_HEADER}..4096 bytes"),
            ));
        }
        if !(self.size..=MAX_READ_BUFFER).contains(&self.read_buffer) {
            return Err(ParamError::value(
                NAME,
                "read-buffer",
                self.read_buffer,
                format!(
                    "is not accepted; use size ({})..{MAX_READ_BUFFER} bytes",
                    self.size
                ),
            ));
        }
        if !matches!(self.transport, Transport::Tcp | Transport::Unix) {
            return Err(ParamError::value(
                NAME,
                "transport",
                self.transport,
                "is not accepted; use tcp or unix",
            ));
        }
        for (name, work) in [
            ("server-work", self.server_work),
            ("client-work", self.client_work),
        ] {
            if work > MAX_WORK {
                return Err(ParamError::value(
                    NAME,
                    name,
                    format_duration(work),
                    "is not accepted; use 0..1s of CPU per packet",
                ));
            }
        }
        if self.hosting == TaskMode::Processes {
            return Err(ParamError::value(
                NAME,
                "tasks",
                "processes",
                "is not accepted (a connection's threads share it); use group-processes or threads",
            ));
        }
        Ok(())
    }

    fn total_users(&self) -> usize {
        self.rooms * self.users
    }

    /// Messages the clients send in one repetition (VolanoMark's `sent`).
    pub fn expected_sent(&self) -> usize {
        self.total_users() * self.messages
    }

    /// Indications the clients receive in one repetition (VolanoMark's `received`).
    pub fn expected_received(&self) -> usize {
        self.total_users() * (self.users - 1) * self.messages
    }

    /// Packets each server send thread writes: the others' messages, and its own confirms.
    fn per_sender_thread(&self) -> usize {
        (self.users - 1) * self.messages + if self.confirm { self.messages } else { 0 }
    }

    fn up(user: usize) -> ChannelId {
        ChannelId(2 * user)
    }

    fn down(user: usize) -> ChannelId {
        ChannelId(2 * user + 1)
    }

    /// S_S[user]'s queue on the server.
    fn server_queue(&self, user: usize) -> ChannelId {
        ChannelId(2 * self.total_users() + user)
    }

    /// C_S[user]'s queue on the client.
    fn client_queue(&self, user: usize) -> ChannelId {
        ChannelId(3 * self.total_users() + user)
    }

    /// The monitor of S_S[user]'s queue (a lock of the server process).
    fn server_monitor(&self, user: usize) -> LockId {
        LockId(user)
    }

    /// The monitor of C_S[user]'s queue (a lock of the client process).
    fn client_monitor(&self, user: usize) -> LockId {
        LockId(self.total_users() + user)
    }

    /// `Connection.send`: `NotifyQueue.putElement` on a send thread's queue — the append (a
    /// write to the queue, which wakes the send thread only if it sleeps in its read, as
    /// `notify()` wakes only a thread in `wait()`), under the queue's monitor when monitors are
    /// modelled.
    async fn put<C: Context>(
        &self,
        ctx: &C,
        queue: ChannelId,
        monitor: LockId,
        packet: &[u8],
    ) -> Result<(), WorkloadError> {
        if !self.monitors {
            return ctx.send(queue, packet).await;
        }
        ctx.lock(monitor).await;
        let sent = ctx.send(queue, packet).await;
        ctx.unlock(monitor);
        sent
    }

    fn encode(&self, buf: &mut [u8], user: usize, seq: u32, now: Duration) {
        buf[0..2].copy_from_slice(&((user / self.users) as u16).to_le_bytes());
        buf[2..4].copy_from_slice(&((user % self.users) as u16).to_le_bytes());
        buf[4..8].copy_from_slice(&seq.to_le_bytes());
        buf[8..16].copy_from_slice(&(now.as_nanos() as u64).to_le_bytes());
    }

    /// A packet from user `from` of `room`, number `seq`, arriving where user `me` of `my_room`
    /// expected number `want`.
    #[cold]
    fn wrong(
        &self,
        at: &str,
        (my_room, me): (usize, usize),
        h: &Header,
        want: u32,
    ) -> WorkloadError {
        WorkloadError::Integrity(format!(
            "{at} of user {me} of room {my_room} got packet {} (confirm: {}) from user {} of room {}, expected packet {want}",
            h.seq & !CONFIRM,
            h.seq & CONFIRM != 0,
            h.from,
            h.room
        ))
    }

    /// C_R: the client's receive thread, which also sends on its turn (by a hand-off to C_S).
    async fn client_receiver<C: Context>(&self, user: usize, ctx: &C) -> Result<(), WorkloadError> {
        let place = (user / self.users, user % self.users);
        let me = place.1;
        let mut next = vec![0u32; self.users];
        let mut out = vec![0u8; self.size];
        let (mut sent, mut received, mut confirms) = (0usize, 0usize, 0u32);
        let want_received = (self.users - 1) * self.messages;
        let want_confirms = if self.confirm { self.messages } else { 0 };
        let mut rd = Framed::new(self.size, self.read_buffer);
        if me == 0 {
            self.encode(&mut out, user, 0, ctx.now());
            self.put(
                ctx,
                self.client_queue(user),
                self.client_monitor(user),
                &out,
            )
            .await?;
            sent = 1;
        }
        while received < want_received || (confirms as usize) < want_confirms {
            let whole = rd.fill(ctx, Self::down(user)).await?;
            for i in 0..whole {
                let h = decode(rd.packet(i));
                work(ctx, self.client_work).await;
                if h.seq & CONFIRM != 0 {
                    if h.room != place.0 || h.from != me || h.seq & !CONFIRM != confirms {
                        return Err(self.wrong("client receive thread", place, &h, confirms));
                    }
                    confirms += 1;
                } else {
                    if h.room != place.0
                        || h.from >= self.users
                        || h.from == me
                        || h.seq != next[h.from]
                    {
                        let want = next.get(h.from).copied().unwrap_or(0);
                        return Err(self.wrong("client receive thread", place, &h, want));
                    }
                    next[h.from] += 1;
                    received += 1;
                    ctx.record("latency_ns", latency_ns(ctx.now(), h.sent_ns));
                    // MarkUser's turns rule, from inside the receive callback.
                    if (sent + received) % self.users == me && sent < self.messages {
                        self.encode(&mut out, user, sent as u32, ctx.now());
                        self.put(
                            ctx,
                            self.client_queue(user),
                            self.client_monitor(user),
                            &out,
                        )
                        .await?;
                        sent += 1;
                    }
                }
                if self.yields {
                    ctx.yield_now().await;
                }
            }
            rd.consume(whole);
        }
        ctx.record("sent", sent as f64);
        ctx.record("received", received as f64);
        ctx.record("cr_reads", rd.counts.reads as f64);
        ctx.record("cr_packets", rd.counts.packets as f64);
        Ok(())
    }

    /// C_S and S_S: a send thread, which takes every packet its queue holds, writes each to its
    /// connection, then yields; `count` packets in all.
    async fn send_thread<C: Context>(
        &self,
        (queue, monitor): (ChannelId, LockId),
        conn: ChannelId,
        count: usize,
        cpu: Duration,
        ctx: &C,
    ) -> Result<Reads, WorkloadError> {
        let cap = (QUEUE_READ / self.size) * self.size;
        let mut q = Framed::new(self.size, cap);
        let mut written = 0;
        while written < count {
            let whole = q.fill(ctx, queue).await?;
            if self.monitors {
                // `getElements` returns from `wait()` only once it holds the monitor again: a
                // putter still inside `putElement` (preempted by this thread's wakeup) makes it
                // block until the putter's release wakes it a second time.
                ctx.lock(monitor).await;
                ctx.unlock(monitor);
            }
            for i in 0..whole {
                work(ctx, cpu).await;
                ctx.send(conn, q.packet(i)).await?;
            }
            written += whole;
            q.consume(whole);
            if self.yields && whole > 0 {
                ctx.yield_now().await;
            }
        }
        if written != count {
            return Err(WorkloadError::Integrity(format!(
                "a send thread's queue held {written} packets, expected {count}"
            )));
        }
        Ok(q.counts)
    }

    /// S_R: the server's receive thread, which relays each message to the room (a hand-off to
    /// every other member's send thread) and confirms it to its sender.
    async fn server_receiver<C: Context>(&self, user: usize, ctx: &C) -> Result<(), WorkloadError> {
        let place = (user / self.users, user % self.users);
        let room = place.0 * self.users..(place.0 + 1) * self.users;
        let mut rd = Framed::new(self.size, self.read_buffer);
        let mut copy = vec![0u8; self.size];
        let mut seq = 0u32;
        while (seq as usize) < self.messages {
            let whole = rd.fill(ctx, Self::up(user)).await?;
            for i in 0..whole {
                let p = rd.packet(i);
                let h = decode(p);
                if h.room != place.0 || h.from != place.1 || h.seq != seq {
                    return Err(self.wrong("server receive thread", place, &h, seq));
                }
                seq += 1;
                work(ctx, self.server_work).await;
                for other in room.clone().filter(|&o| o != user) {
                    self.put(ctx, self.server_queue(other), self.server_monitor(other), p)
                        .await?;
                }
                if self.confirm {
                    copy.copy_from_slice(p);
                    copy[4..8].copy_from_slice(&(h.seq | CONFIRM).to_le_bytes());
                    self.put(
                        ctx,
                        self.server_queue(user),
                        self.server_monitor(user),
                        &copy,
                    )
                    .await?;
                }
                if self.yields {
                    ctx.yield_now().await;
                }
            }
            rd.consume(whole);
        }
        Ok(())
    }
}

/// The delivery latency of a packet sent at `sent` (ns since the epoch) and received at `now`.
fn latency_ns(now: Duration, sent: u64) -> f64 {
    (now.as_nanos() as u64).saturating_sub(sent) as f64
}

/// Burn `cpu` for one packet's user-space work; nothing when it is zero.
async fn work<C: Context>(ctx: &C, cpu: Duration) {
    if !cpu.is_zero() {
        ctx.compute(cpu).await;
    }
}

const NAME: &str = "volano";

/// The most user-space work per packet.
const MAX_WORK: Duration = Duration::from_secs(1);
/// The largest read buffer.
const MAX_READ_BUFFER: usize = 1 << 20;
/// The most rooms: four tasks per user, two users per room at least.
const MAX_ROOMS: usize = MAX_TASKS / 8;
/// The most messages each user sends.
const MAX_PER_USER: usize = 1_000_000_000;

/// Parse `on` or `off`.
fn on_off(name: &'static str, v: &str) -> Result<bool, ParamError> {
    match v.trim() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(ParamError::value(
            NAME,
            name,
            format!("'{v}'"),
            "is not accepted; use on or off",
        )),
    }
}

fn show_on_off(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

/// The parameters of [`Volano`], each declared once.
const TABLE: &[Param<Volano>] = &[
    Param::new(
        ParamDef::value("rooms", "10", "10", "Number of rooms (VolanoMark's -rooms)."),
        |w, v| parse_count(NAME, "rooms", v, 1..=MAX_ROOMS).map(|n| w.rooms = n),
        |w| w.rooms.to_string(),
    ),
    Param::new(
        ParamDef::value("users", "20", "20", "Users per room (-users)."),
        |w, v| parse_count(NAME, "users", v, 2..=1000).map(|n| w.users = n),
        |w| w.users.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "messages",
            "100",
            "100",
            "Messages each user sends (-count; seed 000's messages=1000).",
        ),
        |w, v| parse_count(NAME, "messages", v, 1..=MAX_PER_USER).map(|n| w.messages = n),
        |w| w.messages.to_string(),
    ),
    Param::new(
        ParamDef::value("size", "100", "100", "Bytes per packet (16..4096)."),
        |w, v| parse_count(NAME, "size", v, CHAT_HEADER..=4096).map(|n| w.size = n),
        |w| w.size.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "transport",
            "tcp",
            "tcp|unix",
            "tcp (loopback, TCP_NODELAY) or unix.",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|t| w.transport = t),
        |w| w.transport.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "read-buffer",
            "8192",
            "8192",
            "Bytes one read of a receive thread takes at most (Java's BufferedInputStream: 8192).",
        ),
        |w, v| {
            parse_count(NAME, "read-buffer", v, 1..=MAX_READ_BUFFER).map(|n| w.read_buffer = n)
        },
        |w| w.read_buffer.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "confirm",
            "on",
            "on|off",
            "Whether the server confirms each message to its sender (VolanoChat's pacing confirm).",
        ),
        |w, v| on_off("confirm", v).map(|b| w.confirm = b),
        |w| show_on_off(w.confirm),
    ),
    Param::new(
        ParamDef::value(
            "yields",
            "on",
            "on|off",
            "Whether threads call Thread.yield() where VolanoMark does (per packet received, per batch sent).",
        ),
        |w, v| on_off("yields", v).map(|b| w.yields = b),
        |w| show_on_off(w.yields),
    ),
    Param::new(
        ParamDef::value(
            "monitors",
            "off",
            "on|off",
            "Whether each send queue is a Java monitor: putElement holds it around the append and notify, and a notified send thread blocks until it can take it again.",
        ),
        |w, v| on_off("monitors", v).map(|b| w.monitors = b),
        |w| show_on_off(w.monitors),
    ),
    Param::new(
        ParamDef::value(
            "server-work",
            "0",
            "0",
            "CPU the server's JVM spends in user space per packet a thread reads or writes.",
        )
        .hyphen_values(),
        |w, v| {
            parse_with(NAME, v, crate::duration::parse_duration).map(|d| w.server_work = d)
        },
        |w| format_duration(w.server_work),
    ),
    Param::new(
        ParamDef::value(
            "client-work",
            "0",
            "0",
            "CPU the client's JVM spends in user space per packet a thread reads or writes.",
        )
        .hyphen_values(),
        |w, v| {
            parse_with(NAME, v, crate::duration::parse_duration).map(|d| w.client_work = d)
        },
        |w| format_duration(w.client_work),
    ),
    Param::new(
        ParamDef::tasks(
            "group-processes",
            "group-processes|threads",
            "group-processes (a server and a client process, a thread per task, as two JVMs) or threads.",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|h| w.hosting = h),
        |w| w.hosting.to_string(),
    ),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Volano, { TABLE.len() }>(TABLE);

impl Preset for Volano {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "VolanoMark as its source runs it: 4 threads per user, notify queues, yields (groups: server, client).",
        "VolanoMark 2.x: per user a TCP connection with a receive and a send thread on each side, notify queues and Thread.yield()",
        PARAMS,
    )
    .tables(Tables {
        seed: Some(SeedTable {
            title: "Seed 000 table (VolanoMark, four threads per user)",
            render: seed_table,
        }),
        own: None,
    })
    .examples(&[
        Example::new(
            "VolanoMark's structure on this kernel: 2 rooms of 20 users, 100 messages each",
            "run volano --rooms 2 --messages 100",
        ),
        Example::new(
            "Seed 000's rows: server and client nice levels under O(1) as 2.5.25 yielded, at its HZ 1000",
            "sweep volano --backend sim --cpus 1 --profile piii-700 --cost hz=1000 --messages 100 --server-work 16.6us --client-work 16.6us --vary policy=o1:threshold=0,yield=2.5.25 --vary server.nice=0,19,-19 --vary client.nice=0,-19,19",
        ),
    ]);

    const TABLE: &'static [Param<Self>] = TABLE;

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }
}

/// Seed 000's table with what explains its counters: `Srvr Nice | Clnt Nice | policy/knobs |
/// msg/sec | calls to wake_up | % priority preemptions`, then the packets each server send
/// thread (S_S) and client receive thread (C_R) took per read — the batching that moves the
/// wakeup count; then, for the rows seed 000 measured, the seed beside them with a verdict
/// ([`super::volano_seed`]).
fn seed_table(rows: &[&ConfigResult], varied: &[String]) -> String {
    let (extra, header) = seed_header(
        varied,
        &[
            "msg/sec",
            "calls to wake_up",
            "% priority preemptions",
            "S_S pkt/read",
            "C_R pkt/read",
        ],
    );
    let mut t = Table::new(header);
    for c in rows {
        let total = super::volano_seed::counted(c);
        let reps = c.repetitions.len().max(1) as f64;
        let mean = |k: &str, digits: usize| {
            c.summary
                .get(k)
                .map_or("-".into(), |s| format!("{:.*}", digits, s.mean))
        };
        let mut row = vec![
            nice_column(c, "server"),
            nice_column(c, "client"),
            policy_and_knobs(c),
        ];
        row.extend(extra.iter().map(|k| c.key_value(k)));
        row.extend([
            mean("msgs_per_s", 0),
            total
                .wakeups
                .map_or("-".into(), |w| count_suffix(w as f64 / reps)),
            total
                .preemption_percent()
                .map_or("-".into(), |p| format!("{p:.1} %")),
            mean("ss_packets_per_read", 2),
            mean("cr_packets_per_read", 2),
        ]);
        t.row(row);
    }
    let against = super::volano_seed::comparison(rows, &extra);
    if against.is_empty() {
        t.render()
    } else {
        format!("{}\n{against}", t.render())
    }
}

impl Workload for Volano {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn plan(&self) -> Plan {
        let n = self.total_users();
        Plan {
            groups: vec![
                GroupPlan {
                    name: "server",
                    tasks: 2 * n,
                    spawn: 0,
                },
                GroupPlan {
                    name: "client",
                    tasks: 2 * n,
                    spawn: 0,
                },
            ],
            channels: 2 * n,
            duplex: true,
            // One monitor per notify queue, in the process whose threads use it.
            locks: if self.monitors { 2 * n } else { 0 },
            sync: SyncPlan {
                queues: 2 * n,
                lock_names: if self.monitors {
                    (0..n)
                        .map(|u| format!("S_S[{u}] queue"))
                        .chain((0..n).map(|u| format!("C_S[{u}] queue")))
                        .collect()
                } else {
                    Vec::new()
                },
                ..SyncPlan::default()
            },
            mode: self.hosting,
            transport: self.transport,
        }
    }

    /// A member's connection, server → client, carries the most: the others' messages and its
    /// own confirms (one writer, its S_S).
    fn channel_volume(&self) -> Option<ChannelVolume> {
        let messages = self.per_sender_thread() as u64;
        Some(ChannelVolume {
            messages,
            bytes: messages * self.size as u64,
        })
    }

    /// Server tasks first (the server listens before clients connect), then the clients.
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let n = self.total_users();
        match (task.group, task.index) {
            (0, u) if u < n => self.server_receiver(u, ctx).await,
            (0, i) => {
                let u = i - n;
                let r = self
                    .send_thread(
                        (self.server_queue(u), self.server_monitor(u)),
                        Self::down(u),
                        self.per_sender_thread(),
                        self.server_work,
                        ctx,
                    )
                    .await?;
                ctx.record("ss_reads", r.reads as f64);
                ctx.record("ss_packets", r.packets as f64);
                Ok(())
            }
            (_, u) if u < n => self.client_receiver(u, ctx).await,
            (_, i) => {
                let u = i - n;
                self.send_thread(
                    (self.client_queue(u), self.client_monitor(u)),
                    Self::up(u),
                    self.messages,
                    self.client_work,
                    ctx,
                )
                .await?;
                Ok(())
            }
        }
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        vec![
            metric("msgs_per_s", "msg/s", Better::Higher, "(messages sent + indications received by clients) / elapsed seconds, as VolanoMark counts"),
            metric("time", "s", Better::Lower, "elapsed time from the start signal until the last task is done"),
            metric("latency_p50", "us", Better::Lower, "delivery latency (client receive thread's turn to another client's receipt), median"),
            metric("latency_p99", "us", Better::Lower, "delivery latency, 99th percentile"),
            metric("ss_packets_per_read", "pkt", Better::Higher, "packets a server send thread took per read of its queue"),
            metric("cr_packets_per_read", "pkt", Better::Higher, "packets a client receive thread took per read of its connection"),
            metric("messages", "msg", Better::Higher, "messages sent + indications received by clients, each checked"),
        ]
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let plan = self.plan();
        let sent = outcome.sum(&plan, Some(1), "sent") as usize;
        let received = outcome.sum(&plan, Some(1), "received") as usize;
        if sent != self.expected_sent() || received != self.expected_received() {
            return Err(WorkloadError::Integrity(format!(
                "clients sent {sent} and received {received} messages, expected {} and {}",
                self.expected_sent(),
                self.expected_received()
            )));
        }
        let ss_packets = outcome.sum(&plan, Some(0), "ss_packets");
        let want_ss = (self.total_users() * self.per_sender_thread()) as f64;
        if ss_packets != want_ss {
            return Err(WorkloadError::Integrity(format!(
                "server send threads wrote {ss_packets} packets, expected {want_ss}"
            )));
        }
        let per_read = |packets: f64, reads: f64| if reads > 0.0 { packets / reads } else { 0.0 };
        let mut hist =
            hdrhistogram::Histogram::<u64>::new(3).expect("3 significant digits is valid");
        for t in &outcome.tasks {
            for &ns in t.samples.get("latency_ns").into_iter().flatten() {
                hist.record(ns.max(1.0) as u64)
                    .expect("auto-resizing histogram");
            }
        }
        let secs = outcome.wall.as_secs_f64();
        let total = (sent + received) as f64;
        Ok(BTreeMap::from([
            ("msgs_per_s".into(), total / secs),
            ("time".into(), secs),
            (
                "latency_p50".into(),
                hist.value_at_percentile(50.0) as f64 / 1e3,
            ),
            (
                "latency_p99".into(),
                hist.value_at_percentile(99.0) as f64 / 1e3,
            ),
            (
                "ss_packets_per_read".into(),
                per_read(ss_packets, outcome.sum(&plan, Some(0), "ss_reads")),
            ),
            (
                "cr_packets_per_read".into(),
                per_read(
                    outcome.sum(&plan, Some(1), "cr_packets"),
                    outcome.sum(&plan, Some(1), "cr_reads"),
                ),
            ),
            ("messages".into(), total),
        ]))
    }

    fn classic_line(&self, m: &BTreeMap<String, f64>) -> Option<String> {
        Some(format!(
            "Average throughput : {:.0} messages per second",
            m.get("msgs_per_s")?
        ))
    }

    fn expected_time(&self) -> Option<Duration> {
        let packets = self.total_users() * (self.per_sender_thread() + 2 * self.messages);
        Some(Duration::from_secs_f64((packets as f64 * 100e-6).max(60.0)))
    }
}
