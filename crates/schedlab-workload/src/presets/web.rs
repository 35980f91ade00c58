//! `web` — web serving as SPECweb99 measured it (SPECweb99 whitepaper §4.2–§6 and run rules
//! §2.2; seed 000's Table 3 and seed 003's "simultaneous connections"; docs/web.md says what is
//! followed and what not).
//!
//! `--connections N` clients (group `client`) each hold one keep-alive HTTP/1.1 connection to a
//! built-in server (group `server`) and issue SPECweb99's static mix over it one request at a
//! time, each paced to SPECweb99's rated 400 000 bit/s: after a response of `b` bytes that
//! took less than `8 b / 400 000` s, the client sleeps the rest. A connection *conforms* when
//! its bit rate over the run is at least 320 000 bit/s: 8 × the bytes of the responses that
//! completed within the duration, over the duration — or over the time until the last one's
//! rated time ends, if that is later (a 900 kB response just before the end counts at no more
//! than 400 kbit/s). Every
//! response is checked byte for byte against the seeded file set; a wrong byte fails the run.
//!
//! Servers, written once as task bodies:
//! - `prefork[:N]` — N processes (default: one per connection, Apache's MaxClients ≥
//!   connections), each serving its connections one keep-alive batch (5–15 requests,
//!   SPECweb99's range) at a time, in turn: a connection waits while its process serves
//!   another's batch, as one in Apache prefork's accept queue does.
//! - `threads:N` — the same with a pool of N threads in one server process.
//! - A pool larger than the connections runs one task per connection (`server-tasks` in the
//!   record); the rest would only wait in accept(2).
//! - `event[:N]` — N event loops (default: one per CPU) in one process, each serving whichever
//!   of its connections has a request ready. The ready list is a queue per loop that a client
//!   posts its connection's number to after sending a request (epoll's ready list, one pipe
//!   write per request on the real backend).
//!
//! With `--rate R` the loop is open: the connections share R requests/s, each request sent at
//! its scheduled time whether or not the previous response has come (a connection whose
//! response is late sends the next at once), and latency counts from the scheduled time, as
//! wrk2 corrects for coordinated omission.
//!
//! On the real backend each connection is a TCP connection over 127.0.0.1 carrying real HTTP
//! bytes, and a server reads each file from the file set written in the run's temporary
//! directory (open, read, close per request). On the simulator the read costs the profile's I/O
//! and copy costs and the network is the loopback message cost.
//!
//! With `--dcache lock|fastwalk|rcu` (simulator only) the server resolves each request's
//! absolute path (`/usr/local/apache2/htdocs/file_set/dirNNNNN/classC_F`, seven components)
//! through seed 003's dcache model twice, as Apache 2.0 does for a static file — `stat(2)`
//! (its reference dropped at once), then `open(2)` (dropped at `close`, after the response is
//! sent; [`crate::dcache`], the file set as a cache: [`crate::web::dentries`]) — under the spin lock
//! `dcache_lock`, so that `--locks` prints its lockmeter table beside the conforming
//! connections of the same run.

use super::def::{Example, SearchDef, SeedTable, Tables, WorkloadDef};
use super::params::{param_defs, parse_count, parse_with, set_from_table, Param, ParamDef, Preset};
use super::seed000::{nice_column, policy_and_knobs, seed_header};
use super::{metric, HostNeeds, Outcome, Workload};
use crate::context::{ChannelId, Context, FileRead, LockId, WorkloadError};
use crate::dcache::{Dcache, Dentries, WalkTally, Walker, DCACHE_LOCK};
use crate::duration::{format_duration, parse_duration};
use crate::error::{ParamError, ValueError};
use crate::plan::{GroupPlan, LockKind, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::ConfigResult;
use crate::record::{Better, MetricDef};
use crate::table::Table;
use crate::web::dentries::{dentry_path, fileset_dentries, parse_web_dcache};
use crate::web::fileset::FileId;
use crate::web::fileset::{specweb_dirs, FileSet, MAX_DIRS};
use crate::web::http::{
    find_header_end, parse_request, parse_response_head, request, response_header, REQUEST_LEN,
};
use crate::web::mix::{MixRng, RequestMix};
use crate::web::servers::{RealServer, INSTALL};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

mod event_client;

const NAME: &str = "web";

/// SPECweb99's rated bit rate per connection: the client paces each request to it.
pub const RATED_BITS_PER_S: f64 = 400_000.0;
/// SPECweb99's conforming bit rate: a connection at or above it conforms.
pub const CONFORMING_BITS_PER_S: f64 = 320_000.0;
/// SPECweb99's validity rule: the share of connections (percent) that must conform, the
/// threshold of `run web --find-max`.
pub const CONFORMING_SHARE_PERCENT: f64 = 95.0;
/// The most connections of one run.
pub const MAX_CONNECTIONS: usize = 10_000;
/// The longest run: the longest duration schedlab accepts.
const MAX_DURATION: Duration = crate::duration::MAX_DURATION;
/// The longest response header accepted from a real server.
const MAX_HEADER: usize = 8192;
/// Salt that separates a connection's batch-length stream from its file stream.
const BATCH_STREAM: u64 = 0xba7c_4e5a_17c0_0001;

/// Which built-in server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// Processes each serving one connection's keep-alive batch at a time (`None`: one per
    /// connection).
    Prefork(Option<usize>),
    /// A pool of threads in one process, each serving one batch at a time.
    Threads(usize),
    /// Event loops serving whichever connection is ready (`None`: one per CPU).
    Event(Option<usize>),
    /// A real server (nginx, Apache prefork) that one task of the `server` group starts.
    Real(RealServer),
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerKind::Prefork(None) => f.write_str("prefork"),
            ServerKind::Prefork(Some(n)) => write!(f, "prefork:{n}"),
            ServerKind::Threads(n) => write!(f, "threads:{n}"),
            ServerKind::Event(None) => f.write_str("event"),
            ServerKind::Event(Some(n)) => write!(f, "event:{n}"),
            ServerKind::Real(r) => write!(f, "{r}"),
        }
    }
}

const SERVER_ACCEPTED: &str =
    "prefork, prefork:N, threads:N, event or event:N (N in 1..10000), nginx or apache2";

impl FromStr for ServerKind {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        let (kind, count) = match s.split_once(':') {
            Some((k, n)) => (k, Some(n)),
            None => (s, None),
        };
        let n = match count {
            None => None,
            Some(n) => match n.parse::<usize>() {
                Ok(n) if (1..=MAX_CONNECTIONS).contains(&n) => Some(n),
                _ => {
                    return Err(ValueError(format!(
                        "server '{s}': '{n}' is not a count; use {SERVER_ACCEPTED}"
                    )))
                }
            },
        };
        match (kind, n) {
            ("prefork", n) => Ok(ServerKind::Prefork(n)),
            ("threads", Some(n)) => Ok(ServerKind::Threads(n)),
            ("event", n) => Ok(ServerKind::Event(n)),
            ("nginx", None) => Ok(ServerKind::Real(RealServer::Nginx)),
            ("apache2", None) => Ok(ServerKind::Real(RealServer::Apache2)),
            _ => Err(ValueError(format!(
                "server '{s}' is not known; use {SERVER_ACCEPTED}"
            ))),
        }
    }
}

/// Which client drives the connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// A task per connection, blocking on each response (SPECweb99's client processes).
    Connections,
    /// Event loops (`None`: one per CPU), each multiplexing its share of the connections
    /// through the readiness wait, as wrk's do.
    Event(Option<usize>),
}

impl fmt::Display for ClientKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientKind::Connections => f.write_str("connections"),
            ClientKind::Event(None) => f.write_str("event"),
            ClientKind::Event(Some(n)) => write!(f, "event:{n}"),
        }
    }
}

const CLIENT_ACCEPTED: &str = "connections, event or event:N (N in 1..10000)";

impl FromStr for ClientKind {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s.split_once(':') {
            None if s == "connections" => Ok(ClientKind::Connections),
            None if s == "event" => Ok(ClientKind::Event(None)),
            Some(("event", n)) => match n.parse::<usize>() {
                Ok(n) if (1..=MAX_CONNECTIONS).contains(&n) => Ok(ClientKind::Event(Some(n))),
                _ => Err(ValueError(format!(
                    "client '{s}': '{n}' is not a count; use {CLIENT_ACCEPTED}"
                ))),
            },
            _ => Err(ValueError(format!(
                "client '{s}' is not known; use {CLIENT_ACCEPTED}"
            ))),
        }
    }
}

/// Web serving: SPECweb99's static mix over keep-alive connections paced to 400 kbit/s.
#[derive(Clone, Debug)]
pub struct Web {
    /// Simultaneous connections (clients).
    pub connections: usize,
    /// The server.
    pub server: ServerKind,
    /// The client.
    pub client: ClientKind,
    /// How long the clients issue requests.
    pub duration: Duration,
    /// Directories of the file set; 0: SPECweb99's scaling with the connections.
    pub dirs: usize,
    /// The most bytes the file set may take.
    pub disk_budget: usize,
    /// Seed of the file contents and of every connection's requests.
    pub mix_seed: u64,
    /// Open loop: requests per second over all connections, each sent at its scheduled time
    /// (0: closed loop, each connection paced to 400 kbit/s).
    pub rate: f64,
    /// Whether the closed loop paces each connection to SPECweb99's 400 kbit/s (`false`: each
    /// connection sends its next request as soon as its response is checked — a throughput
    /// client, as wrk is).
    pub pace: bool,
    /// The port a real server listens on (0: a free one, picked when it starts).
    pub port: u16,
    /// CPUs of the machine, for `event`'s default of one loop per CPU (and nginx's workers).
    pub host_cpus: usize,
    /// The dcache strategy the server's file opens are walked with (simulator only; `None`:
    /// not modelled).
    pub dcache: Option<Dcache>,
    /// The file set, made once and shared by every task of the run.
    fileset: Arc<OnceLock<FileSet>>,
    /// The file set as a dcache, made once when `dcache` is set.
    dentries: Arc<OnceLock<Dentries>>,
}

impl Default for Web {
    fn default() -> Self {
        Web {
            connections: 100,
            server: ServerKind::Prefork(None),
            client: ClientKind::Connections,
            duration: Duration::from_secs(30),
            dirs: 0,
            disk_budget: 2 << 30,
            mix_seed: 1,
            rate: 0.0,
            pace: true,
            port: 0,
            host_cpus: 1,
            dcache: None,
            fileset: Arc::default(),
            dentries: Arc::default(),
        }
    }
}

impl PartialEq for Web {
    fn eq(&self, o: &Self) -> bool {
        self.params() == o.params()
    }
}

/// The parameters of [`Web`], each declared once. `dirs` is recorded as the directories the
/// file set has (0 asks for SPECweb99's scaling with the connections); the disk budget and a
/// real server's port do not change what is measured and stay out of the record.
const TABLE: &[Param<Web>] = &[
    Param::new(
        ParamDef::value(
            "connections",
            "100",
            "100",
            "Simultaneous connections (clients), each paced to SPECweb99's 400 kbit/s.",
        ),
        |w, v| parse_count(NAME, "connections", v, 1..=MAX_CONNECTIONS).map(|n| w.connections = n),
        |w| w.connections.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "server",
            "prefork",
            "prefork[:N]|threads:N|event[:N]|nginx|apache2",
            "The server: built in, prefork (a process per connection, or N), threads:N (a pool), event (an event loop per CPU, or N); or real, nginx or apache2 (prefork MPM), from Debian's packages.",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|s| w.server = s),
        |w| w.server.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "client",
            "connections",
            "connections|event[:N]",
            "The client: connections (a task per connection, blocking on each response, as SPECweb99's client processes) or event (an event loop per CPU, or N, each multiplexing its share of the connections, as wrk does); the same requests, pacing and checks.",
        ),
        |w, v| parse_with(NAME, v, str::parse).map(|c| w.client = c),
        |w| w.client.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "duration",
            "30s",
            "30s",
            "How long the clients issue requests.",
        )
        .hyphen_values(),
        |w, v| parse_with(NAME, v, parse_duration).map(|d| w.duration = d),
        |w| format_duration(w.duration),
    ),
    Param::new(
        ParamDef::value(
            "dirs",
            "0",
            "0",
            "Directories of the file set (4.88 MiB each); 0 scales them with the connections as SPECweb99 does.",
        ),
        |w, v| parse_count(NAME, "dirs", v, 0..=MAX_DIRS).map(|n| w.dirs = n),
        |w| w.file_dirs().to_string(),
    ),
    Param::<Web>::new(
        ParamDef::value(
            "disk-budget",
            "2GiB",
            "2GiB",
            "The most the file set may take in the temporary directory; a larger one is refused before the run.",
        ),
        |w, v| parse_with(NAME, v, super::interbench::parse_size).map(|n| w.disk_budget = n),
        |w| super::interbench::format_size(w.disk_budget),
    )
    .not_recorded(),
    Param::new(
        ParamDef::value(
            "mix-seed",
            "1",
            "1",
            "Seed of the file contents and of each connection's requests.",
        ),
        |w, v| {
            parse_count(NAME, "mix-seed", v, 0..=u32::MAX as usize).map(|n| w.mix_seed = n as u64)
        },
        |w| w.mix_seed.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "rate",
            "0",
            "0",
            "Open loop: requests/s over all connections, sent at their scheduled times, latency from the scheduled time (wrk2's correction); 0 is the closed loop paced to 400 kbit/s.",
        ),
        |w, v| parse_rate(v).map(|r| w.rate = r),
        |w| w.rate.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "dcache",
            "none",
            "none|lock|fastwalk|rcu",
            "Simulator only: walk each request's path through seed 003's dcache under dcache_lock — per component (lock), held over the walk (fastwalk) or lock-free (rcu), each walk's final dput under it; none models no walk.",
        ),
        |w, v| parse_with(NAME, v, parse_web_dcache).map(|d| w.dcache = d),
        |w| w.dcache.map_or("none".into(), |d| d.to_string()),
    ),
    Param::new(
        ParamDef::value(
            "pace",
            "on",
            "on|off",
            "Closed loop: on paces each connection to SPECweb99's 400 kbit/s; off sends each request as soon as the last response is checked (maximum throughput, as wrk measures it).",
        ),
        |w, v| parse_pace(v).map(|p| w.pace = p),
        |w| if w.pace { "on" } else { "off" }.into(),
    ),
    Param::<Web>::new(
        ParamDef::value(
            "port",
            "0",
            "0",
            "The port on 127.0.0.1 a real server (nginx, apache2) listens on; 0 picks a free one.",
        ),
        |w, v| parse_count(NAME, "port", v, 0..=u16::MAX as usize).map(|n| w.port = n as u16),
        |w| w.port.to_string(),
    )
    .not_recorded(),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Web, { TABLE.len() }>(TABLE);

/// The `rate` parameter: 0 (the closed loop) or requests/s up to [`MAX_RATE`].
fn parse_rate(value: &str) -> Result<f64, ParamError> {
    match value.trim().parse::<f64>() {
        Ok(r) if (0.0..=MAX_RATE).contains(&r) => Ok(r),
        _ => Err(ParamError::value(
            NAME,
            "rate",
            format!("'{value}'"),
            format!("is not accepted; use 0 (closed loop) or requests/s up to {MAX_RATE:.0}"),
        )),
    }
}

/// The `pace` parameter: `on` or `off`.
fn parse_pace(value: &str) -> Result<bool, ParamError> {
    match value.trim() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(ParamError::value(
            NAME,
            "pace",
            format!("'{value}'"),
            "is not accepted; use on (400 kbit/s per connection) or off",
        )),
    }
}

/// CPU work per path component of the dcache walk: `lookup`'s default, the seed's 2.1 µs
/// mean hold of `dcache_lock`.
const DCACHE_COMPONENT: Duration = Duration::from_micros(2);

/// The plan's lock standing for `dcache_lock`.
const DCACHE_LOCK_ID: LockId = LockId(0);

/// The highest open-loop rate, requests/s.
const MAX_RATE: f64 = 1e7;

impl Web {
    /// Directories of the file set.
    pub fn file_dirs(&self) -> usize {
        if self.dirs == 0 {
            specweb_dirs(self.connections)
        } else {
            self.dirs
        }
    }

    /// Server tasks: at most one per connection — a pool larger than the connections (e.g.
    /// `threads:64` with 50, as `--find-max` tries) runs one task per connection, the rest of
    /// a real pool would sit idle in accept(2); the record's `server-tasks` says how many ran.
    pub fn server_tasks(&self) -> usize {
        let n = match self.server {
            ServerKind::Prefork(n) => n.unwrap_or(self.connections),
            ServerKind::Threads(n) => n,
            ServerKind::Event(n) => n.unwrap_or(self.host_cpus.max(1)),
            ServerKind::Real(_) => return 1,
        };
        n.min(self.connections)
    }

    /// Client tasks: one per connection, or the event client's loops (at most one per
    /// connection).
    pub fn client_tasks(&self) -> usize {
        match self.client {
            ClientKind::Connections => self.connections,
            ClientKind::Event(n) => n.unwrap_or(self.host_cpus.max(1)).min(self.connections),
        }
    }

    /// The real server, if the server is one.
    fn real(&self) -> Option<RealServer> {
        match self.server {
            ServerKind::Real(r) => Some(r),
            _ => None,
        }
    }

    /// With a real server: the queue its task posts the port to, once per connection.
    fn port_queue(&self) -> ChannelId {
        ChannelId(2 * self.connections)
    }

    /// With a real server: the queue each connection posts to when it has ended.
    fn done_queue(&self) -> ChannelId {
        ChannelId(2 * self.connections + 1)
    }

    /// The real server's task: start it (it inherits the task's knobs: the `server` group's),
    /// tell every connection its port, wait until every connection has ended, stop it.
    async fn real_server<C: Context>(
        &self,
        server: RealServer,
        ctx: &C,
    ) -> Result<(), WorkloadError> {
        let daemon = server.daemon(self.connections, self.host_cpus, self.port);
        let port = ctx.start_daemon(&daemon).await?;
        for _ in 0..self.connections {
            ctx.send(self.port_queue(), &port.to_le_bytes()).await?;
        }
        let mut note = [0u8; 4];
        for _ in 0..self.connections {
            ctx.recv(self.done_queue(), &mut note).await?;
        }
        ctx.stop_daemon().await
    }

    /// Read the response to the request for `id` on connection `conn` into `resp`; returns
    /// where its body starts and its length (`resp` may be longer). A built-in server's header is known byte for byte; a real
    /// server's is read until its end and must say `200` with the file's `Content-Length`.
    async fn read_response<C: Context>(
        &self,
        ctx: &C,
        conn: usize,
        id: FileId,
        resp: &mut Vec<u8>,
    ) -> Result<(usize, usize), WorkloadError> {
        let channel = ChannelId(2 * conn + 1);
        if self.real().is_none() {
            let header = response_header(id.size());
            resp.resize(header.len() + id.size(), 0);
            ctx.recv(channel, resp).await?;
            if !resp.starts_with(header.as_bytes()) {
                return Err(WorkloadError::Integrity(format!(
                    "connection {conn}: {} answered with header {:?}",
                    id.url(),
                    String::from_utf8_lossy(&resp[..header.len()])
                )));
            }
            return Ok((header.len(), resp.len()));
        }
        // Grown only: zeroing the buffer for every response would cost as much as reading it.
        if resp.len() < MAX_HEADER + id.size() {
            resp.resize(MAX_HEADER + id.size(), 0);
        }
        let mut have = 0;
        let head = loop {
            if have >= MAX_HEADER {
                return Err(WorkloadError::Integrity(format!(
                    "connection {conn}: the response to {} has no end of header within {MAX_HEADER} bytes",
                    id.url()
                )));
            }
            have += ctx.recv_some(channel, &mut resp[have..]).await?;
            if let Some(at) = find_header_end(&resp[..have]) {
                break at;
            }
        };
        let total = head + id.size();
        match parse_response_head(&resp[..head]) {
            Some(len) if len == id.size() && have <= total => {}
            _ => {
                return Err(WorkloadError::Integrity(format!(
                    "connection {conn}: {} ({} bytes) answered with {} bytes and header {:?}",
                    id.url(),
                    id.size(),
                    have,
                    String::from_utf8_lossy(&resp[..head])
                )))
            }
        }
        ctx.recv(channel, &mut resp[have..total]).await?;
        Ok((head, total))
    }

    fn fileset(&self) -> &FileSet {
        self.fileset.get_or_init(|| {
            FileSet::new(self.file_dirs(), self.mix_seed).expect("directories checked")
        })
    }

    /// The file set as a dcache (made on first use).
    fn dentries(&self) -> &Dentries {
        self.dentries
            .get_or_init(|| fileset_dentries(self.file_dirs()))
    }

    /// The walker of the server's file opens, when a strategy is modelled.
    fn walker(&self) -> Option<Walker> {
        self.dcache
            .and_then(|d| Walker::new(d, DCACHE_COMPONENT, DCACHE_LOCK_ID))
    }

    fn is_event(&self) -> bool {
        matches!(self.server, ServerKind::Event(_))
    }

    /// The connections server task `s` serves, in its order.
    fn served_by(&self, s: usize) -> Vec<usize> {
        (s..self.connections).step_by(self.server_tasks()).collect()
    }

    /// Serve one request on connection `conn`; returns whether the client closed it.
    async fn serve_one<C: Context>(
        &self,
        ctx: &C,
        conn: usize,
        req: &mut [u8],
        body: &mut Vec<u8>,
        out: &mut Vec<u8>,
        walk: &mut Option<(Walker, WalkTally)>,
    ) -> Result<bool, WorkloadError> {
        ctx.recv(ChannelId(2 * conn), req).await?;
        let r = parse_request(req).ok_or_else(|| {
            WorkloadError::Integrity(format!(
                "connection {conn}: the server read a request it does not know: {:?}",
                String::from_utf8_lossy(req)
            ))
        })?;
        let size = r.file.size();
        // Apache 2.0's static request: `stat(2)` of the file (ap_directory_walk's apr_stat,
        // its reference dropped at once), then `open(2)` (default_handler's apr_file_open),
        // whose reference the file keeps until `close` after the response is sent.
        let opened = match walk {
            Some((walker, tally)) => {
                let path = dentry_path(self.file_dirs(), r.file);
                walker.walk(ctx, self.dentries(), &path, tally).await;
                walker.resolve(ctx, self.dentries(), &path, tally).await
            }
            None => None,
        };
        if ctx.read_file(&r.file.rel_path(), size, body).await? == FileRead::Modelled {
            body.clear();
            self.fileset()
                .for_each_piece(r.file, |p| body.extend_from_slice(p));
        }
        out.clear();
        out.extend_from_slice(response_header(body.len()).as_bytes());
        out.extend_from_slice(body);
        ctx.send(ChannelId(2 * conn + 1), out).await?;
        if let (Some((walker, tally)), Some(file)) = (walk, opened) {
            walker.release(ctx, self.dentries(), file, tally).await;
        }
        Ok(r.close)
    }

    async fn server<C: Context>(&self, s: usize, ctx: &C) -> Result<(), WorkloadError> {
        if let Some(real) = self.real() {
            return self.real_server(real, ctx).await;
        }
        let mut walk = self.walker().map(|w| (w, WalkTally::default()));
        let served = self.serve(s, ctx, &mut walk).await?;
        if let Some((_, tally)) = walk {
            ctx.record("served", served as f64);
            ctx.record("acquisitions", tally.acquisitions as f64);
        }
        Ok(())
    }

    /// Serve server task `s`'s connections until every one is closed; returns the requests
    /// served.
    async fn serve<C: Context>(
        &self,
        s: usize,
        ctx: &C,
        walk: &mut Option<(Walker, WalkTally)>,
    ) -> Result<u64, WorkloadError> {
        let mut req = vec![0u8; REQUEST_LEN];
        let (mut body, mut out) = (Vec::new(), Vec::new());
        let mut served = 0;
        if self.is_event() {
            // The loop's ready list: connection numbers its clients post.
            let ready = ChannelId(2 * self.connections + s);
            let mut open = self.served_by(s).len();
            let mut note = [0u8; 4];
            while open > 0 {
                ctx.recv(ready, &mut note).await?;
                let conn = u32::from_le_bytes(note) as usize;
                if conn >= self.connections || conn % self.server_tasks() != s {
                    return Err(WorkloadError::Integrity(format!(
                        "event loop {s} was told of connection {conn}, not one of its own"
                    )));
                }
                served += 1;
                if self
                    .serve_one(ctx, conn, &mut req, &mut body, &mut out, walk)
                    .await?
                {
                    open -= 1;
                }
            }
            return Ok(served);
        }
        let mut conns: Vec<(usize, MixRng)> = self
            .served_by(s)
            .into_iter()
            .map(|c| (c, RequestMix::rng(self.mix_seed ^ BATCH_STREAM, c)))
            .collect();
        while !conns.is_empty() {
            let mut i = 0;
            while i < conns.len() {
                let (conn, rng) = &mut conns[i];
                let batch = RequestMix::batch(rng);
                let mut closed = false;
                for _ in 0..batch {
                    served += 1;
                    if self
                        .serve_one(ctx, *conn, &mut req, &mut body, &mut out, walk)
                        .await?
                    {
                        closed = true;
                        break;
                    }
                }
                if closed {
                    conns.swap_remove(i);
                } else {
                    i += 1;
                }
            }
        }
        Ok(served)
    }

    async fn client<C: Context>(&self, conn: usize, ctx: &C) -> Result<(), WorkloadError> {
        let set = self.fileset();
        let mix = RequestMix::new(set.dirs());
        let mut files = RequestMix::rng(self.mix_seed, conn);
        let mut batches = RequestMix::rng(self.mix_seed ^ BATCH_STREAM, conn);
        let loops = self.server_tasks();
        let mut resp = Vec::new();
        let (mut bytes, mut requests) = (0u64, 0u64);
        // A real server's connection starts when the server is up: its run is `duration` from
        // then (a built-in server's from the common start, 0).
        let start_at = if self.real().is_some() {
            let mut port = [0u8; 2];
            ctx.recv(self.port_queue(), &mut port).await?;
            ctx.connect_channel(ChannelId(2 * conn), u16::from_le_bytes(port))
                .await?;
            ctx.now()
        } else {
            Duration::ZERO
        };
        let until = start_at + self.duration;
        // When the rated time of the last counted response ends: a response that arrives just
        // before the end of the run still counts at no more than the rated bit rate.
        let mut rated_end = until;
        // Open loop: connection `conn` sends its i-th request at `offset + i × interval`, the
        // connections staggered evenly over one interval, as wrk2 schedules its requests.
        let interval =
            (self.rate > 0.0).then(|| Duration::from_secs_f64(self.connections as f64 / self.rate));
        let offset = start_at
            + Duration::from_secs_f64(if self.rate > 0.0 {
                conn as f64 / self.rate
            } else {
                0.0
            });
        let mut sent = 0u32;
        'run: loop {
            for _ in 0..RequestMix::batch(&mut batches) {
                let scheduled = interval.map(|i| offset + i * sent);
                if let Some(t) = scheduled.filter(|&t| t < until) {
                    ctx.sleep_until(t).await;
                }
                sent = sent.saturating_add(1);
                let now = ctx.now();
                // Latency counts from the scheduled time in the open loop: a request that had
                // to wait for an earlier one's response waited on the server's account
                // (coordinated omission corrected).
                let start = scheduled.map_or(now, |t| t.min(now));
                let close =
                    scheduled.unwrap_or(now) >= until || now >= until || ctx.stop_requested();
                let id = mix.draw(&mut files);
                ctx.send(ChannelId(2 * conn), &request(id, close)).await?;
                if self.is_event() {
                    let ready = ChannelId(2 * self.connections + conn % loops);
                    ctx.send(ready, &(conn as u32).to_le_bytes()).await?;
                }
                let (body_at, len) = self.read_response(ctx, conn, id, &mut resp).await?;
                let end = ctx.now();
                if let Err(at) = set.verify(id, &resp[body_at..len]) {
                    return Err(WorkloadError::Integrity(format!(
                        "connection {conn}: the response to {} differs from the file at byte {at}",
                        id.url()
                    )));
                }
                if close {
                    break 'run;
                }
                // SPECweb99's rated receive: no request faster than 400 kbit/s (the closed
                // loop; in the open loop the schedule alone sets the pace).
                let paced = if interval.is_some() || !self.pace {
                    end
                } else {
                    start + Duration::from_secs_f64(len as f64 * 8.0 / RATED_BITS_PER_S)
                };
                if end <= until {
                    bytes += len as u64;
                    requests += 1;
                    rated_end = rated_end.max(paced);
                    ctx.record("latency_ns", (end - start).as_nanos() as f64);
                }
                if interval.is_none() && self.pace {
                    ctx.sleep_until(paced.min(until)).await;
                }
            }
        }
        ctx.record("bytes", bytes as f64);
        ctx.record("requests", requests as f64);
        ctx.record("seconds", (rated_end - start_at).as_secs_f64());
        if self.real().is_some() {
            ctx.send(self.done_queue(), &(conn as u32).to_le_bytes())
                .await?;
        }
        Ok(())
    }

    /// Check the configuration; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.duration.is_zero() || self.duration > MAX_DURATION {
            return Err(ParamError::value(
                NAME,
                "duration",
                format_duration(self.duration),
                "is not accepted; use more than 0s and at most 24h",
            ));
        }
        if self.rate * self.duration.as_secs_f64() > 1e9 {
            return Err(ParamError::params(
                NAME,
                &["rate", "duration"],
                format!(
                    "ask for {:.0} requests; accepted: at most 1e9 per repetition",
                    self.rate * self.duration.as_secs_f64()
                ),
            ));
        }
        if self.port != 0 && self.real().is_none() {
            return Err(ParamError::value(
                NAME,
                "port",
                self.port,
                format!(
                    "is for a real server; use --server nginx or apache2 with it, or no --port with server={}",
                    self.server
                ),
            ));
        }
        let set = FileSet::new(self.file_dirs(), self.mix_seed)
            .map_err(|e| ParamError::value(NAME, "dirs", self.file_dirs(), e.to_string()))?;
        set.check_budget(self.disk_budget as u64).map_err(|e| {
            ParamError::value(
                NAME,
                "disk-budget",
                super::interbench::format_size(self.disk_budget),
                format!("is too small: {e}"),
            )
        })
    }
}

impl Preset for Web {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "SPECweb99-style web serving: conforming connections at 400 kbit/s each (groups: server, client).",
        "SPECweb99: keep-alive connections at 400 kbit/s against a built-in server; conforming connections",
        PARAMS,
    )
    .examples(&[
        Example::new(
            "SPECweb99 with 50 connections for 10 s on this kernel",
            "run web --connections 50 --duration 10s",
        ),
        Example::new(
            "The most conforming connections this machine serves",
            "run web --duration 10s --find-max",
        ),
    ])
    .tables(Tables {
        seed: Some(SeedTable {
            title: "Seed 000 table (SPECweb99 runs)",
            render: seed_table,
        }),
        own: None,
    })
    .search(SearchDef {
        what: "SPECweb99's conforming connections",
        param: "connections",
        metric: "conforming_share",
        threshold: CONFORMING_SHARE_PERCENT,
        check: find_max_params,
    });

    fn with_defaults(host_cpus: usize) -> Self {
        Web {
            host_cpus,
            ..Web::default()
        }
    }

    const TABLE: &'static [Param<Self>] = TABLE;

    fn set_param(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        set_from_table(self, name, value)?;
        // The file set and its dentries follow the parameters: a changed copy builds its own.
        self.fileset = Arc::default();
        self.dentries = Arc::default();
        Ok(())
    }

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }

    fn host_needs(&self) -> HostNeeds {
        HostNeeds {
            memory: None,
            files: Some((
                if self.dirs == 0 {
                    "connections"
                } else {
                    "dirs"
                },
                FileSet::new(self.file_dirs(), 0).map_or(0, |s| s.bytes() as usize),
            )),
            real_kernel: self.real().map(|r| match r {
                RealServer::Nginx => "server=nginx",
                RealServer::Apache2 => "server=apache2",
            }),
            simulated: self
                .dcache
                .map(|_| "dcache=lock|fastwalk|rcu (the server's walk under a modelled dcache_lock; the real server's open(2) walks the running kernel's dcache: use dcache=none)"),
            programs: self.real().map(|r| {
                let program: &'static [&'static str] = match r {
                    RealServer::Nginx => &["nginx"],
                    RealServer::Apache2 => &["apache2"],
                };
                (program, INSTALL)
            }),
            port: (self.real().is_some() && self.port != 0).then_some(("port", self.port)),
        }
    }
}

/// Seed 000's SPECweb99 table (Table 3, Troy Wilson's runs: `kernel | preemption threshold |
/// conforming connections | percent improvement`), one row per web configuration: the server's
/// and client's nice, `policy/knobs` (on the simulator the policy with its threshold), the
/// sweep's other varied keys, the connections driven, the mean conforming connections and
/// share, and the improvement over the first row (`baseline`).
fn seed_table(rows: &[&ConfigResult], varied: &[String]) -> String {
    let (extra, header) = seed_header(
        varied,
        &[
            "connections",
            "conforming connections",
            "% conforming",
            "percent improvement",
        ],
    );
    let mut t = Table::new(header);
    let mean = |c: &ConfigResult, m: &str| c.summary.get(m).map(|s| s.mean);
    let base = rows.first().and_then(|c| mean(c, "conforming"));
    for (i, c) in rows.iter().enumerate() {
        let mut row = vec![
            nice_column(c, "server"),
            nice_column(c, "client"),
            policy_and_knobs(c),
        ];
        row.extend(extra.iter().map(|k| c.key_value(k)));
        let conforming = mean(c, "conforming");
        row.extend([
            c.params.get("connections").cloned().unwrap_or("-".into()),
            conforming.map_or("-".into(), |v| format!("{v:.0}")),
            mean(c, "conforming_share").map_or("-".into(), |v| format!("{v:.1} %")),
            match (i, base, conforming) {
                (0, _, _) => "baseline".into(),
                (_, Some(b), Some(v)) if b > 0.0 => format!("{:+.1} %", 100.0 * (v - b) / b),
                _ => "-".into(),
            },
        ]);
        t.row(row);
    }
    t.render()
}

/// Parameters that do not go with `--find-max`: conformance is measured in the closed loop, so
/// an open-loop `--rate` is refused.
fn find_max_params(params: &[(String, String)]) -> Result<(), String> {
    let rate = params.iter().rev().find(|(k, _)| k == "rate");
    if let Some((_, v)) = rate.filter(|(_, v)| v.trim().parse::<f64>() != Ok(0.0)) {
        return Err(format!(
            "--rate {v} does not go with --find-max: conformance is the closed loop's (SPECweb99's connections paced to 400 kbit/s); drop --rate"
        ));
    }
    Ok(())
}

impl Workload for Web {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        // The parameters, and what the record says of the run besides: the tasks that serve
        // and that ask (a pool larger than the connections runs one task per connection), and
        // SPECweb99's file mix, the only one modelled.
        let mut p = self.param_values();
        p.extend([
            ("server-tasks".into(), self.server_tasks().to_string()),
            ("client-tasks".into(), self.client_tasks().to_string()),
            ("mix".into(), "static".into()),
        ]);
        p
    }

    fn label(&self) -> String {
        let mut l = format!("connections={} server={}", self.connections, self.server);
        if self.rate > 0.0 {
            l.push_str(&format!(" rate={}", self.rate));
        }
        if let Some(d) = self.dcache {
            l.push_str(&format!(" dcache={d}"));
        }
        if !self.pace {
            l.push_str(" pace=off");
        }
        if self.client != ClientKind::Connections {
            l.push_str(&format!(" client={}", self.client));
        }
        l
    }

    fn plan(&self) -> Plan {
        Plan {
            groups: vec![
                GroupPlan {
                    name: "server",
                    tasks: self.server_tasks(),
                    spawn: 0,
                },
                GroupPlan {
                    name: "client",
                    tasks: self.client_tasks(),
                    spawn: 0,
                },
            ],
            channels: 2 * self.connections,
            duplex: true,
            locks: usize::from(self.dcache.is_some()),
            sync: SyncPlan {
                queues: match self.server {
                    ServerKind::Event(_) => self.server_tasks(),
                    // The port announcements and the ends of the connections.
                    ServerKind::Real(_) => 2,
                    _ => 0,
                },
                lock_kinds: self.dcache.map(|_| LockKind::Spin).into_iter().collect(),
                lock_names: self
                    .dcache
                    .map(|_| DCACHE_LOCK.into())
                    .into_iter()
                    .collect(),
                ..SyncPlan::default()
            },
            mode: match self.server {
                ServerKind::Prefork(_) => TaskMode::Processes,
                _ => TaskMode::GroupProcesses,
            },
            transport: Transport::Tcp,
        }
    }

    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        if task.group == 0 {
            self.server(task.index, ctx).await
        } else {
            match self.client {
                ClientKind::Connections => self.client(task.index, ctx).await,
                ClientKind::Event(_) => self.event_client(task.index, ctx).await,
            }
        }
    }

    fn shared_files(&self) -> Option<super::SharedFiles> {
        Some(super::SharedFiles {
            key: format!("web file set, mix-seed {}", self.mix_seed),
            extent: self.file_dirs(),
        })
    }

    fn write_shared_files(&self, dir: &std::path::Path, from: usize) -> std::io::Result<()> {
        self.fileset().write_from(dir, from)
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        let mut defs = vec![
            metric(
                "conforming",
                "conns",
                Better::Higher,
                "connections whose bit rate was at least 320 kbit/s (SPECweb99's conforming connections)",
            ),
            metric(
                "conforming_share",
                "%",
                Better::Higher,
                "conforming connections / connections (SPECweb99 asks for at least 95 %)",
            ),
            metric(
                "req_per_s",
                "req/s",
                Better::Higher,
                "responses completed within the duration, per second",
            ),
            metric(
                "kbps_min",
                "kbit/s",
                Better::Higher,
                "the slowest connection's bit rate",
            ),
            metric(
                "kbps_p10",
                "kbit/s",
                Better::Higher,
                "10th percentile of the connections' bit rates",
            ),
            metric(
                "kbps_p50",
                "kbit/s",
                Better::Higher,
                "median of the connections' bit rates",
            ),
            metric(
                "kbps_mean",
                "kbit/s",
                Better::Higher,
                "mean of the connections' bit rates",
            ),
        ];
        for (name, _) in LATENCY_PERCENTILES {
            defs.push(metric(
                name,
                "ms",
                Better::Lower,
                "response latency percentile (request sent to response checked)",
            ));
        }
        defs.push(metric(
            "lat_max",
            "ms",
            Better::Lower,
            "longest response latency",
        ));
        if self.dcache.is_some() {
            defs.push(metric(
                "acq_per_request",
                "acq",
                Better::Lower,
                "dcache_lock acquisitions per request served (every request, those after the duration too)",
            ));
        }
        defs
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let plan = self.plan();
        let secs = self.duration.as_secs_f64();
        let mut rates = Vec::with_capacity(self.connections);
        let mut requests = 0.0;
        let mut hist = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        for t in plan.tasks().iter().filter(|t| t.group == 1) {
            let samples = &outcome.tasks.get(t.id).map(|o| &o.samples);
            // One sample per connection the task drove: one for a connection's own task, its
            // share for an event loop.
            let drove = match self.client {
                ClientKind::Connections => 1,
                ClientKind::Event(_) => self.driven_by(t.index).count(),
            };
            let each = |m: &str| samples.and_then(|s| s.get(m)).filter(|v| v.len() == drove);
            let (Some(bytes), Some(reqs), Some(conn_secs)) =
                (each("bytes"), each("requests"), each("seconds"))
            else {
                return Err(WorkloadError::Integrity(format!(
                    "client task {} did not report the bytes and requests of its {drove} connections",
                    t.index
                )));
            };
            for ((bytes, reqs), conn_secs) in bytes.iter().zip(reqs).zip(conn_secs) {
                rates.push(bytes * 8.0 / conn_secs.max(secs) / 1e3);
                requests += reqs;
            }
            for &ns in samples
                .and_then(|s| s.get("latency_ns"))
                .into_iter()
                .flatten()
            {
                hist.record(ns.max(1.0) as u64)
                    .expect("auto-resizing histogram");
            }
        }
        rates.sort_by(f64::total_cmp);
        let conforming = rates
            .iter()
            .filter(|&&r| r >= CONFORMING_BITS_PER_S / 1e3)
            .count() as f64;
        let at = |q: f64| rates[((rates.len() - 1) as f64 * q).round() as usize];
        let mut m = BTreeMap::from([
            ("conforming".to_string(), conforming),
            (
                "conforming_share".to_string(),
                100.0 * conforming / self.connections as f64,
            ),
            ("req_per_s".to_string(), requests / secs),
            ("kbps_min".to_string(), rates[0]),
            ("kbps_p10".to_string(), at(0.1)),
            ("kbps_p50".to_string(), at(0.5)),
            (
                "kbps_mean".to_string(),
                rates.iter().sum::<f64>() / rates.len() as f64,
            ),
            ("lat_max".to_string(), hist.max() as f64 / 1e6),
        ]);
        for (name, q) in LATENCY_PERCENTILES {
            m.insert(name.to_string(), hist.value_at_percentile(q) as f64 / 1e6);
        }
        if self.dcache.is_some() {
            let served = outcome.sum(&plan, None, "served");
            if served == 0.0 {
                return Err(WorkloadError::Integrity(
                    "the servers served no request".into(),
                ));
            }
            m.insert(
                "acq_per_request".to_string(),
                outcome.sum(&plan, None, "acquisitions") / served,
            );
        }
        Ok(m)
    }

    fn classic_line(&self, m: &BTreeMap<String, f64>) -> Option<String> {
        Some(format!(
            "conforming connections: {:.0} of {} ({:.1} %), {:.0} requests/s",
            m.get("conforming")?,
            self.connections,
            m.get("conforming_share")?,
            m.get("req_per_s")?
        ))
    }

    fn expected_time(&self) -> Option<Duration> {
        Some(self.duration * 2 + Duration::from_secs(120))
    }

    /// The real server's master and its workers (nginx: one per CPU) or children (Apache
    /// prefork: one per connection, a static pool).
    fn program_tasks(&self) -> Option<(&'static str, usize)> {
        self.real().map(|r| {
            let what = match r {
                RealServer::Nginx => "nginx's master and its worker per CPU",
                RealServer::Apache2 => {
                    "apache2's master and its prefork child per connection (--connections)"
                }
            };
            (what, 1 + r.processes(self.connections, self.host_cpus))
        })
    }
}

/// Response latency percentiles reported: (metric name, percentile).
const LATENCY_PERCENTILES: [(&str, f64); 4] = [
    ("lat_p50", 50.0),
    ("lat_p90", 90.0),
    ("lat_p99", 99.0),
    ("lat_p99.9", 99.9),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_parse_and_bad_ones_are_refused_by_name() {
        assert_eq!("prefork".parse(), Ok(ServerKind::Prefork(None)));
        assert_eq!("threads:64".parse(), Ok(ServerKind::Threads(64)));
        assert_eq!("event:2".parse(), Ok(ServerKind::Event(Some(2))));
        for bad in ["threads", "threads:0", "iis", "event:x"] {
            let e = bad.parse::<ServerKind>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("prefork"), "{e}");
        }
    }

    #[test]
    fn clients_parse_and_the_event_client_has_at_most_a_loop_per_connection() {
        assert_eq!("connections".parse(), Ok(ClientKind::Connections));
        assert_eq!("event".parse(), Ok(ClientKind::Event(None)));
        assert_eq!("event:3".parse(), Ok(ClientKind::Event(Some(3))));
        for bad in ["event:0", "epoll", "connections:2", "event:x"] {
            let e = bad.parse::<ClientKind>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("connections, event"), "{e}");
        }
        let mut w = Web::with_defaults(4);
        w.set_param("connections", "10").unwrap();
        assert_eq!(w.client_tasks(), 10);
        w.set_param("client", "event").unwrap();
        assert_eq!(w.client_tasks(), 4);
        assert_eq!(w.plan().groups[1].tasks, 4);
        // Loop 1 of 4 drives connections 1, 5, 9.
        assert_eq!(w.driven_by(1).collect::<Vec<_>>(), [1, 5, 9]);
        w.set_param("connections", "2").unwrap();
        assert_eq!(w.client_tasks(), 2);
        assert!(w.label().contains("client=event"));
    }

    #[test]
    fn a_real_servers_processes_are_in_its_host_needs() {
        let mut w = Web::with_defaults(4);
        w.set_param("connections", "300").unwrap();
        assert_eq!(w.program_tasks(), None);
        w.set_param("server", "apache2").unwrap();
        let (what, n) = w.program_tasks().unwrap();
        assert_eq!(n, 301);
        assert!(what.contains("--connections"), "{what}");
        w.set_param("server", "nginx").unwrap();
        assert_eq!(w.program_tasks().unwrap().1, 5);
    }

    #[test]
    fn configurations_are_checked_before_anything_runs() {
        let mut w = Web::with_defaults(2);
        w.set_param("connections", "200").unwrap();
        assert_eq!(w.file_dirs(), 156);
        assert_eq!(w.server_tasks(), 200);
        w.set_param("disk-budget", "100MiB").unwrap();
        let e = w.check().unwrap_err().to_string();
        assert!(e.contains("disk-budget") && e.contains("798.6 MB"), "{e}");
        w.set_param("dirs", "2").unwrap();
        w.check().unwrap();
        // A pool larger than the connections runs one task per connection (find-max lowers
        // the connections below a pool's size).
        w.set_param("server", "threads:300").unwrap();
        w.check().unwrap();
        assert_eq!(w.server_tasks(), 200);
        assert_eq!(w.params()["server-tasks"], "200");
        w.set_param("server", "event").unwrap();
        assert_eq!(w.server_tasks(), 2);
        assert_eq!(w.plan().sync.queues, 2);
    }
}
