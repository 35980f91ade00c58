//! `chat` — the chat-room benchmarks of seeds 000 and 002: VolanoMark (jgneff/volano) and IBM's
//! chat_s/chat_c, over loopback TCP (TCP_NODELAY) or UNIX stream sockets.
//!
//! `rooms` rooms of `users` users; every user has one connection to the server, which relays
//! each message to every *other* member of the room. The server is built one of two ways:
//!
//! - `relay` (IBM chat_s, the default): one task per connection reads a message and writes it
//!   to every other member itself.
//! - `volano` (VolanoChat, the server VolanoMark drives): per connection a reader task, which
//!   appends each message it reads to the outgoing queue of every other member, and a writer
//!   task, which takes its connection's queued messages and writes them to the client. The
//!   two-threads-per-connection structure is how VolanoMark's server is described in the
//!   literature on it (a thread reading and a thread writing each socket, hence its thread counts
//!   of twice the connections). VolanoMark's source is public (github jgneff/volano, 2.13.4,
//!   GPL-3.0); it adds what this model does not have yet — the receive threads also yield after
//!   every packet, the send thread takes every queued packet at once and then yields, and the
//!   server confirms each message to its sender. The
//!   queue is an in-process pipe ([`crate::plan::SyncPlan::queues`]): the Java server's queue
//!   append and take (under a monitor, `notify` waking a sleeping writer) cost a pipe write and
//!   read here — a little more kernel work than a futex, the same wakeups.
//!
//! Per-message work (`server-work`, `client-work`, default 0): user-space CPU time each side
//! burns per socket operation — the server per message it reads and per copy it writes, a
//! client per message it sends and per message it receives. IBM chat's C programs do
//! essentially none; VolanoMark's Java server and client parse, allocate and format each
//! message. No published per-message figure for VolanoMark 2.1.2 on IBM's JVM 1.3.1 was found,
//! so docs/experiments.md derives one from seed 000's own default row once and says so: 13,183
//! msg/s on one PIII-700 is 75.9 µs of CPU per message counted; the simulated kernel path of the
//! `volano` server costs 40.0 µs of it on the `piii-700` profile (25,030 msg/s with no work), so
//! the JVMs spent about 36 µs per message counted, two socket operations (one per side) per
//! message counted: 18 µs per operation, split equally between server and client for want of a
//! measurement. The other rows and both counter columns are then predictions, not fits.
//!
//! - `burst` (IBM chat_c/chat_s): per user a send task that sends all its `messages` without
//!   waiting and a receive task that expects `(users − 1) × messages`.
//! - `turns` (VolanoMark with `-pause 0`): one task per user; a user sends when
//!   `(sent + received) mod users` is its index: a user sends as soon as the message before its
//!   turn has reached it, so broadcasts of one room overlap only while one is being delivered.
//!
//! Throughput = (messages sent + messages received by clients) / elapsed seconds, as both
//! originals define it. Each message carries room, sender, sequence number and send time: every
//! receiver checks that each sender's messages arrive complete and in order (a lost, duplicated
//! or corrupted message fails the run) and records the delivery latency, which neither original
//! reports.
//!
//! Channels: user `u` (global index) has channel `2u` (client → server) and `2u + 1`
//! (server → client), the two directions of one connection ([`Plan::duplex`]); with the
//! `volano` server, queue `2 × users + u` holds the messages waiting for `u`'s writer.
//!
//! With the `relay` server the `users − 1` relay tasks of a room write to a member's connection
//! side by side, as chat_s's threads do, with nothing between them but the kernel's socket lock.
//! Over TCP that keeps each message whole as long as no write has to wait for send-buffer space
//! halfway; [`Workload::channel_volume`] tells the real backend the most one connection carries
//! (`(users − 1) × messages` messages), and only when that could fill a socket's send buffer do
//! the writers take turns under a lock there (see `tcp_write_locks` in the real backend's
//! runner), which the simulator does not model.

use super::def::{Example, SeedTable, Tables, WorkloadDef};
use super::params::{
    check_product, param_defs, parse_count, parse_param, parse_with, Param, ParamDef, Preset,
    MAX_MESSAGES, MAX_TASKS,
};
use super::seed000::{count_suffix, nice_column, policy_and_knobs, seed_header};
use super::{metric, Outcome, Workload};
use crate::context::{ChannelId, Context, WorkloadError};
use crate::duration::format_duration;
use crate::error::{ParamError, ValueError};
use crate::plan::{ChannelVolume, GroupPlan, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, MetricDef};
use crate::record::{ConfigResult, Counters};
use crate::table::Table;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Bytes of the header every chat message carries: room, sender, sequence, send time.
pub const CHAT_HEADER: usize = 16;

/// How the server is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatServer {
    /// One thread per connection reads each message and writes it to every other member itself
    /// (IBM chat_s).
    Relay,
    /// VolanoChat's server: per connection a reader thread, which appends each message it reads
    /// to the outgoing queue of every other member, and a writer thread, which writes what its
    /// connection's queue holds — several messages per wakeup when it was not preempted meanwhile.
    Volano,
}

impl fmt::Display for ChatServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChatServer::Relay => "relay",
            ChatServer::Volano => "volano",
        })
    }
}

impl FromStr for ChatServer {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s {
            "relay" => Ok(ChatServer::Relay),
            "volano" => Ok(ChatServer::Volano),
            _ => Err(ValueError(format!(
                "server '{s}' is not accepted; use relay (a thread per connection writes to every member) or volano (a reader and a writer thread per connection, with queues)"
            ))),
        }
    }
}

/// How users pace their messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatMode {
    /// IBM chat: send everything at once.
    Burst,
    /// VolanoMark: take turns, one broadcast per room in flight.
    Turns,
}

impl fmt::Display for ChatMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChatMode::Burst => "burst",
            ChatMode::Turns => "turns",
        })
    }
}

impl FromStr for ChatMode {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s {
            "burst" => Ok(ChatMode::Burst),
            "turns" => Ok(ChatMode::Turns),
            _ => Err(ValueError(format!(
                "mode '{s}' is not accepted; use burst (IBM chat) or turns (VolanoMark)"
            ))),
        }
    }
}

/// The chat-room benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct Chat {
    /// Number of rooms.
    pub rooms: usize,
    /// Users per room.
    pub users: usize,
    /// Messages each user sends.
    pub messages: usize,
    /// Bytes per message (16..4096).
    pub size: usize,
    /// tcp (default) or unix.
    pub transport: Transport,
    /// burst or turns.
    pub mode: ChatMode,
    /// How tasks are hosted: by default the server and the client are two processes, each with
    /// a thread per task, as in the originals.
    pub hosting: TaskMode,
    /// relay or volano.
    pub server: ChatServer,
    /// CPU time the server spends in user space per message it reads and per copy it writes.
    pub server_work: Duration,
    /// CPU time a client spends in user space per message it sends and per message it receives.
    pub client_work: Duration,
}

impl Default for Chat {
    fn default() -> Self {
        Chat {
            rooms: 10,
            users: 20,
            messages: 100,
            size: 100,
            transport: Transport::Tcp,
            mode: ChatMode::Burst,
            hosting: TaskMode::GroupProcesses,
            server: ChatServer::Relay,
            server_work: Duration::ZERO,
            client_work: Duration::ZERO,
        }
    }
}

impl Chat {
    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.rooms == 0 || self.messages == 0 {
            return Err(ParamError::params(
                NAME,
                &["rooms", "messages"],
                "must be at least 1",
            ));
        }
        if !(2..=1000).contains(&self.users) {
            return Err(ParamError::value(
                NAME,
                "users",
                self.users,
                "is not accepted; use 2..1000 users per room",
            ));
        }
        for (name, value, max) in [
            ("rooms", self.rooms, MAX_ROOMS),
            ("messages", self.messages, MAX_PER_USER),
        ] {
            if value > max {
                return Err(ParamError::value(
                    NAME,
                    name,
                    value,
                    format!("is not accepted; use 1..{max}"),
                ));
            }
        }
        let (per_user, formula) = match self.server {
            ChatServer::Relay => (3, "3 × rooms × users"),
            ChatServer::Volano => (4, "4 × rooms × users"),
        };
        check_product(
            NAME,
            &["rooms", "users"],
            "tasks",
            formula,
            &[per_user, self.rooms, self.users],
            MAX_TASKS as u128,
        )?;
        check_product(
            NAME,
            &["rooms", "users", "messages"],
            "messages",
            "rooms × users × (users − 1) × messages received",
            &[self.rooms, self.users, self.users - 1, self.messages],
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
                    crate::duration::format_duration(work),
                    "is not accepted; use 0..1s of CPU per message",
                ));
            }
        }
        if self.hosting == TaskMode::Processes {
            return Err(ParamError::value(
                NAME,
                "tasks",
                "processes",
                "is not accepted (server tasks share connections); use group-processes or threads",
            ));
        }
        Ok(())
    }

    fn total_users(&self) -> usize {
        self.rooms * self.users
    }

    /// Messages the clients send in one repetition.
    pub fn expected_sent(&self) -> usize {
        self.total_users() * self.messages
    }

    /// Messages the clients receive in one repetition.
    pub fn expected_received(&self) -> usize {
        self.total_users() * (self.users - 1) * self.messages
    }

    fn up(user: usize) -> ChannelId {
        ChannelId(2 * user)
    }

    fn down(user: usize) -> ChannelId {
        ChannelId(2 * user + 1)
    }

    /// The outgoing queue of user `user`'s connection in the VolanoChat server.
    fn queue(&self, user: usize) -> ChannelId {
        ChannelId(2 * self.total_users() + user)
    }

    fn encode(&self, buf: &mut [u8], room: usize, user: usize, seq: usize, now: Duration) {
        buf[0..2].copy_from_slice(&(room as u16).to_le_bytes());
        buf[2..4].copy_from_slice(&((user % self.users) as u16).to_le_bytes());
        buf[4..8].copy_from_slice(&(seq as u32).to_le_bytes());
        buf[8..16].copy_from_slice(&(now.as_nanos() as u64).to_le_bytes());
    }

    /// Check a message arriving at user `me` of room `my_room`; returns its send time, ns since
    /// the epoch.
    ///
    /// Inlined into the receiving loops, with what is wrong worked out apart ([`Chat::wrong`]):
    /// the check is a few comparisons per message, its error messages a page of code.
    #[inline(always)]
    fn check(
        &self,
        buf: &[u8],
        (my_room, me): (usize, usize),
        next: &mut [u32],
    ) -> Result<u64, WorkloadError> {
        let room = u16::from_le_bytes([buf[0], buf[1]]) as usize;
        let from = u16::from_le_bytes([buf[2], buf[3]]) as usize;
        let seq = u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes"));
        let sent = u64::from_le_bytes(buf[8..16].try_into().expect("8 bytes"));
        if room != my_room || from >= self.users || from == me || seq != next[from] {
            return Err(self.wrong((my_room, me), room, from, seq, next));
        }
        next[from] += 1;
        Ok(sent)
    }

    /// What is wrong with a message from user `from` of room `room`, number `seq`, arriving at
    /// user `me` of room `my_room`, which [`Chat::check`] refused.
    #[cold]
    fn wrong(
        &self,
        (my_room, me): (usize, usize),
        room: usize,
        from: usize,
        seq: u32,
        next: &[u32],
    ) -> WorkloadError {
        if room != my_room || from >= self.users || from == me {
            return WorkloadError::Integrity(format!(
                "user {me} of room {my_room} got a message from user {from} of room {room}"
            ));
        }
        WorkloadError::Integrity(format!(
            "user {me} of room {my_room} expected message {} from user {from}, got {seq}",
            next[from]
        ))
    }

    /// User `user`'s room and index in it, as [`Chat::check`] takes them.
    fn place(&self, user: usize) -> (usize, usize) {
        (user / self.users, user % self.users)
    }

    async fn server<C: Context>(&self, user: usize, ctx: &C) -> Result<(), WorkloadError> {
        let room = user / self.users;
        let members = room * self.users..(room + 1) * self.users;
        let mut buf = vec![0u8; self.size];
        for _ in 0..self.messages {
            ctx.recv(Self::up(user), &mut buf).await?;
            work(ctx, self.server_work).await;
            for other in members.clone().filter(|&o| o != user) {
                work(ctx, self.server_work).await;
                ctx.send(Self::down(other), &buf).await?;
            }
        }
        Ok(())
    }

    /// VolanoChat's reader thread for `user`'s connection: read, work, queue a copy for every
    /// other member.
    async fn volano_reader<C: Context>(&self, user: usize, ctx: &C) -> Result<(), WorkloadError> {
        let room = user / self.users;
        let members = room * self.users..(room + 1) * self.users;
        let mut buf = vec![0u8; self.size];
        for _ in 0..self.messages {
            ctx.recv(Self::up(user), &mut buf).await?;
            work(ctx, self.server_work).await;
            for other in members.clone().filter(|&o| o != user) {
                ctx.send(self.queue(other), &buf).await?;
            }
        }
        Ok(())
    }

    /// VolanoChat's writer thread for `user`'s connection: take each queued message, work,
    /// write it to the client.
    async fn volano_writer<C: Context>(&self, user: usize, ctx: &C) -> Result<(), WorkloadError> {
        let mut buf = vec![0u8; self.size];
        for _ in 0..(self.users - 1) * self.messages {
            ctx.recv(self.queue(user), &mut buf).await?;
            work(ctx, self.server_work).await;
            ctx.send(Self::down(user), &buf).await?;
        }
        Ok(())
    }

    async fn sender<C: Context>(&self, user: usize, ctx: &C) -> Result<(), WorkloadError> {
        let mut buf = vec![0u8; self.size];
        for seq in 0..self.messages {
            work(ctx, self.client_work).await;
            self.encode(&mut buf, user / self.users, user, seq, ctx.now());
            ctx.send(Self::up(user), &buf).await?;
        }
        ctx.record("sent", self.messages as f64);
        Ok(())
    }

    async fn receiver<C: Context>(&self, user: usize, ctx: &C) -> Result<(), WorkloadError> {
        let mut buf = vec![0u8; self.size];
        let mut next = vec![0u32; self.users];
        let place = self.place(user);
        let expected = (self.users - 1) * self.messages;
        for _ in 0..expected {
            ctx.recv(Self::down(user), &mut buf).await?;
            let sent = self.check(&buf, place, &mut next)?;
            work(ctx, self.client_work).await;
            ctx.record("latency_ns", latency_ns(ctx.now(), sent));
        }
        ctx.record("received", expected as f64);
        Ok(())
    }

    /// VolanoMark's user: alternate between waiting for others' messages and sending on its turn.
    async fn taker<C: Context>(&self, user: usize, ctx: &C) -> Result<(), WorkloadError> {
        let me = user % self.users;
        let mut buf = vec![0u8; self.size];
        let mut next = vec![0u32; self.users];
        let (mut sent, mut received) = (0, 0);
        let total = self.users * self.messages;
        while sent + received < total {
            if (sent + received) % self.users == me {
                work(ctx, self.client_work).await;
                self.encode(&mut buf, user / self.users, user, sent, ctx.now());
                ctx.send(Self::up(user), &buf).await?;
                sent += 1;
            } else {
                ctx.recv(Self::down(user), &mut buf).await?;
                let at = self.check(&buf, self.place(user), &mut next)?;
                work(ctx, self.client_work).await;
                ctx.record("latency_ns", latency_ns(ctx.now(), at));
                received += 1;
            }
        }
        ctx.record("sent", sent as f64);
        ctx.record("received", received as f64);
        Ok(())
    }
}

/// The delivery latency of a message sent at `sent` (ns since the epoch) and received at
/// `now`, in ns, as a sample. In `u64` where `now` fits (always, below 584 years): the
/// conversion of a `u128` to `f64` is a library call, of a `u64` one instruction, and both give
/// the same value.
fn latency_ns(now: Duration, sent: u64) -> f64 {
    match now
        .as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(u64::from(now.subsec_nanos())))
    {
        Some(now) => now.saturating_sub(sent) as f64,
        None => nanos_f64(now.saturating_sub(Duration::from_nanos(sent))),
    }
}

/// `d` in ns as `f64`, by way of `u128` (apart, so that it is not computed where a `u64` holds
/// the value).
#[cold]
#[inline(never)]
fn nanos_f64(d: Duration) -> f64 {
    d.as_nanos() as f64
}

/// Burn `cpu` of CPU time for one message's user-space work; nothing when it is zero, so that
/// chat without work makes exactly the system calls it always made.
async fn work<C: Context>(ctx: &C, cpu: Duration) {
    if !cpu.is_zero() {
        ctx.compute(cpu).await;
    }
}

const NAME: &str = "chat";

/// The most user-space work per message.
const MAX_WORK: Duration = Duration::from_secs(1);

/// The most rooms.
const MAX_ROOMS: usize = MAX_TASKS / 6;
/// The most messages each user sends.
const MAX_PER_USER: usize = 1_000_000_000;

/// The parameters of [`Chat`], each declared once.
const TABLE: &[Param<Chat>] = &[
    Param::new(
        ParamDef::value("rooms", "10", "10", "Number of rooms."),
        |w, v| parse_count(NAME, "rooms", v, 1..=MAX_ROOMS).map(|n| w.rooms = n),
        |w| w.rooms.to_string(),
    ),
    Param::new(
        ParamDef::value("users", "20", "20", "Users per room."),
        |w, v| parse_count(NAME, "users", v, 2..=1000).map(|n| w.users = n),
        |w| w.users.to_string(),
    ),
    Param::new(
        ParamDef::value("messages", "100", "100", "Messages each user sends."),
        |w, v| parse_count(NAME, "messages", v, 1..=MAX_PER_USER).map(|n| w.messages = n),
        |w| w.messages.to_string(),
    ),
    Param::new(
        ParamDef::value("size", "100", "100", "Bytes per message (16..4096)."),
        |w, v| parse_param(NAME, "size", v, "a whole number").map(|n| w.size = n),
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
            "mode",
            "burst",
            "burst|turns",
            "burst (IBM chat: send all at once) or turns (VolanoMark: one broadcast per room in flight).",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|m| w.mode = m),
        |w| w.mode.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "server",
            "relay",
            "relay|volano",
            "relay (a thread per connection writes each message to every member: IBM chat_s) or volano (a reader and a writer thread per connection with outgoing queues: VolanoChat).",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|s| w.server = s),
        |w| w.server.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "server-work",
            "0",
            "0",
            "CPU the server spends in user space per message it reads and per copy it writes (VolanoMark's Java server; IBM chat's C server does ~0).",
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
            "CPU a client spends in user space per message it sends and per message it receives.",
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
            "group-processes (a server and a client process, a thread per task) or threads.",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|h| w.hosting = h),
        |w| w.hosting.to_string(),
    ),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Chat, { TABLE.len() }>(TABLE);

impl Preset for Chat {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "VolanoMark / IBM chat rooms over loopback (groups: server, client).",
        "VolanoMark / IBM chat: rooms of users over loopback; the server relays each message to the other members",
        PARAMS,
    )
    .examples(&[
        Example::new(
            "VolanoMark's chat rooms on a simulated 4-CPU O(1) kernel with Hartner's threshold",
            "run chat --rooms 2 --users 10 --messages 20 --backend sim --policy o1:threshold=40 --cpus 4",
        ),
        Example::new(
            "Seed 000's comparison: the server niced, stock O(1) against threshold 40",
            "sweep chat --rooms 2 --users 10 --messages 20 --backend sim --cpus 4 --vary policy=o1,o1:threshold=40 --vary server.nice=0,19",
        ),
    ])
    .tables(Tables {
        seed: Some(SeedTable {
            title: "Seed 000 table (VolanoMark runs)",
            render: seed_table,
        }),
        own: None,
    });

    const TABLE: &'static [Param<Self>] = TABLE;

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }
}

/// Seed 000's table (Bill Hartner's VolanoMark runs), one row per chat configuration:
/// `Srvr Nice | Clnt Nice | policy/knobs | msg/sec | calls to wake_up | % priority preemptions`,
/// with the means over repetitions, and the preemptions split into those that switched at once
/// (the wakee's CPU was interrupted) and those at the waker's return to user mode (its own CPU),
/// where the counters tell them apart (`-` where they do not: a real kernel without
/// `sched_waking`). A sweep's other varied keys (`server-work`, `cpus`) come
/// after `policy/knobs`, so that every row names its whole configuration.
fn seed_table(rows: &[&ConfigResult], varied: &[String]) -> String {
    let (extra, header) = seed_header(
        varied,
        &[
            "msg/sec",
            "calls to wake_up",
            "% priority preemptions",
            "at once",
            "at return",
        ],
    );
    let mut t = Table::new(header);
    for c in rows {
        let mut total = Counters::default();
        for r in &c.repetitions {
            if let Some(tc) = r.counters.get("total") {
                total.add(tc);
            }
        }
        let reps = c.repetitions.len().max(1) as f64;
        let mut row = vec![
            nice_column(c, "server"),
            nice_column(c, "client"),
            policy_and_knobs(c),
        ];
        row.extend(extra.iter().map(|k| c.key_value(k)));
        row.extend([
            c.summary
                .get("msgs_per_s")
                .map_or("-".into(), |s| format!("{:.0}", s.mean)),
            total
                .wakeups
                .map_or("-".into(), |w| count_suffix(w as f64 / reps)),
            total
                .preemption_percent()
                .map_or("-".into(), |p| format!("{p:.1} %")),
        ]);
        let split = total.preemption_split_percent();
        row.push(split.map_or("-".into(), |(now, _)| format!("{now:.1} %")));
        row.push(split.map_or("-".into(), |(_, ret)| format!("{ret:.1} %")));
        t.row(row);
    }
    t.render()
}

impl Workload for Chat {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn plan(&self) -> Plan {
        let n = self.total_users();
        let clients = match self.mode {
            ChatMode::Burst => 2 * n,
            ChatMode::Turns => n,
        };
        let (servers, queues) = match self.server {
            ChatServer::Relay => (n, 0),
            ChatServer::Volano => (2 * n, n),
        };
        Plan {
            groups: vec![
                GroupPlan {
                    name: "server",
                    tasks: servers,
                    spawn: 0,
                },
                GroupPlan {
                    name: "client",
                    tasks: clients,
                    spawn: 0,
                },
            ],
            channels: 2 * n,
            duplex: true,
            locks: 0,
            sync: SyncPlan {
                queues,
                ..SyncPlan::default()
            },
            mode: self.hosting,
            transport: self.transport,
        }
    }

    /// A member's connection carries the most: every other member's messages, server → client.
    fn channel_volume(&self) -> Option<ChannelVolume> {
        let messages = ((self.users - 1) * self.messages) as u64;
        Some(ChannelVolume {
            messages,
            bytes: messages * self.size as u64,
        })
    }

    /// Server tasks first (the server listens before clients connect; VolanoChat's readers,
    /// then its writers), then the clients.
    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        let n = self.total_users();
        match (task.group, self.mode) {
            (0, _) => match self.server {
                ChatServer::Relay => self.server(task.index, ctx).await,
                ChatServer::Volano if task.index < n => self.volano_reader(task.index, ctx).await,
                ChatServer::Volano => self.volano_writer(task.index - n, ctx).await,
            },
            (_, ChatMode::Turns) => self.taker(task.index, ctx).await,
            (_, ChatMode::Burst) if task.index < n => self.sender(task.index, ctx).await,
            (_, ChatMode::Burst) => self.receiver(task.index - n, ctx).await,
        }
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        vec![
            metric("msgs_per_s", "msg/s", Better::Higher, "(messages sent + received by clients) / elapsed seconds, as VolanoMark and IBM chat"),
            metric("time", "s", Better::Lower, "elapsed time from the start signal until the last task is done"),
            metric("latency_p50", "us", Better::Lower, "delivery latency (client send to client receipt), median"),
            metric("latency_p99", "us", Better::Lower, "delivery latency, 99th percentile"),
            metric("latency_max", "us", Better::Lower, "delivery latency, maximum"),
            metric("messages", "msg", Better::Higher, "messages sent + received by clients, each checked"),
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
        let mut hist = Histogram::<u64>::new(3).expect("3 significant digits is valid");
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
            ("latency_max".into(), hist.max() as f64 / 1e3),
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
        let msgs = (self.expected_sent() + self.expected_received()) as f64;
        Some(Duration::from_secs_f64((msgs * 50e-6).max(60.0)))
    }
}
