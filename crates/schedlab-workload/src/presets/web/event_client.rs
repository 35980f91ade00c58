//! The event-driven web client (`--client event[:N]`): N loops (by default one per CPU), each
//! multiplexing its share of the connections (connection `k` is loop `k mod N`'s) through the
//! context's readiness wait ([`Context::wait_readable`], poll(2) on the real kernel), as wrk's
//! epoll loops do (wrk/src/wrk.c: a thread per `-t`, each an `ae` event loop over its
//! connections) and as the built-in `event` server serves.
//!
//! Each connection keeps the per-connection client's behaviour to the byte: the same request
//! stream (its file generator, seeded by the run's seed and the connection's index), the same
//! close rule, the same pacing — SPECweb99's 400 kbit/s per request in the closed loop, the
//! schedule of `--rate` in the open loop (latency from the scheduled time) — and the same
//! accounting of bytes, requests, rated time and latency, reported per connection; every
//! response is checked byte for byte. What differs is the waiting: a connection that waits for
//! its response or for its next send time does not hold a task, so a loop sends every request
//! that is due, then waits until one of its connections has bytes or the next send time comes,
//! and reads what has arrived without waiting for the rest.

use super::{Web, MAX_HEADER, RATED_BITS_PER_S};
use crate::context::{ChannelId, Context, WorkloadError};
use crate::web::fileset::FileId;
use crate::web::http::{find_header_end, parse_response_head, request, response_header};
use crate::web::mix::{MixRng, RequestMix};
use std::time::Duration;

/// A buffer longer than this is let go once its response is checked, so that a loop of many
/// connections does not keep one of SPECweb99's largest responses (900 kB) per connection.
const KEEP_BUFFER: usize = 128 * 1024;

/// The request a connection has in flight.
struct InFlight {
    id: FileId,
    /// When its latency counts from: its send time, or its scheduled time in the open loop.
    start: Duration,
    /// Whether it is the connection's last.
    close: bool,
    /// Bytes of the response read so far.
    have: usize,
    /// The most bytes the response may have: a built-in server's exact length, a real
    /// server's file plus the longest header accepted.
    limit: usize,
    /// Where the body starts and the response's whole length, once its header is read.
    head: Option<(usize, usize)>,
}

/// One connection of a loop.
struct Conn {
    conn: usize,
    files: MixRng,
    /// Requests sent.
    sent: u32,
    /// The open loop's first scheduled time.
    offset: Duration,
    /// When the next request is due (while none is in flight).
    next_at: Duration,
    inflight: Option<InFlight>,
    resp: Vec<u8>,
    bytes: u64,
    requests: u64,
    rated_end: Duration,
    closed: bool,
}

/// The loop's view of the run: when it started, ends, and the open loop's interval.
struct Clock {
    start_at: Duration,
    until: Duration,
    interval: Option<Duration>,
}

impl Web {
    /// The connections client loop `l` drives.
    pub(super) fn driven_by(&self, l: usize) -> impl Iterator<Item = usize> {
        (l..self.connections).step_by(self.client_tasks())
    }

    /// Client loop `l`: drive its connections until each has sent its last request and
    /// checked the response.
    pub(super) async fn event_client<C: Context>(
        &self,
        l: usize,
        ctx: &C,
    ) -> Result<(), WorkloadError> {
        let mix = RequestMix::new(self.fileset().dirs());
        // A real server's connections start when it is up: the loop's run is `duration` from
        // when it has connected them all.
        if self.real().is_some() {
            for conn in self.driven_by(l) {
                let mut port = [0u8; 2];
                ctx.recv(self.port_queue(), &mut port).await?;
                ctx.connect_channel(ChannelId(2 * conn), u16::from_le_bytes(port))
                    .await?;
            }
        }
        let start_at = if self.real().is_some() {
            ctx.now()
        } else {
            Duration::ZERO
        };
        let clock = Clock {
            start_at,
            until: start_at + self.duration,
            interval: (self.rate > 0.0)
                .then(|| Duration::from_secs_f64(self.connections as f64 / self.rate)),
        };
        let mut conns: Vec<Conn> = self
            .driven_by(l)
            .map(|conn| {
                let offset = start_at
                    + Duration::from_secs_f64(if self.rate > 0.0 {
                        conn as f64 / self.rate
                    } else {
                        0.0
                    });
                Conn {
                    conn,
                    files: RequestMix::rng(self.mix_seed, conn),
                    sent: 0,
                    offset,
                    next_at: if self.rate > 0.0 && offset < clock.until {
                        offset
                    } else {
                        start_at
                    },
                    inflight: None,
                    resp: Vec::new(),
                    bytes: 0,
                    requests: 0,
                    rated_end: clock.until,
                    closed: false,
                }
            })
            .collect();
        let mut open = conns.len();
        let (mut polled, mut channels, mut ready) = (Vec::new(), Vec::new(), Vec::new());
        while open > 0 {
            let now = ctx.now();
            for c in conns.iter_mut() {
                if !c.closed && c.inflight.is_none() && c.next_at <= now {
                    self.send_request(ctx, &mix, &clock, c).await?;
                }
            }
            polled.clear();
            channels.clear();
            let mut deadline: Option<Duration> = None;
            for (i, c) in conns.iter().enumerate() {
                if c.closed {
                    continue;
                }
                if c.inflight.is_some() {
                    polled.push(i);
                    channels.push(ChannelId(2 * c.conn + 1));
                } else {
                    deadline = Some(deadline.map_or(c.next_at, |d| d.min(c.next_at)));
                }
            }
            if channels.is_empty() {
                if let Some(d) = deadline {
                    ctx.sleep_until(d).await;
                }
                continue;
            }
            ctx.wait_readable(&channels, deadline, &mut ready).await?;
            for &i in &ready {
                let c = &mut conns[polled[i]];
                if self.read_some(ctx, c).await? {
                    self.complete(ctx, &clock, c).await?;
                    if c.closed {
                        open -= 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Send connection `c`'s next request (it is due).
    async fn send_request<C: Context>(
        &self,
        ctx: &C,
        mix: &RequestMix,
        clock: &Clock,
        c: &mut Conn,
    ) -> Result<(), WorkloadError> {
        let scheduled = clock.interval.map(|i| c.offset + i * c.sent);
        c.sent = c.sent.saturating_add(1);
        let now = ctx.now();
        // As the per-connection client: latency from the scheduled time in the open loop
        // (coordinated omission corrected), the last request once the run's time is up.
        let start = scheduled.map_or(now, |t| t.min(now));
        let close =
            scheduled.unwrap_or(now) >= clock.until || now >= clock.until || ctx.stop_requested();
        let id = mix.draw(&mut c.files);
        ctx.send(ChannelId(2 * c.conn), &request(id, close)).await?;
        if self.is_event() {
            let ready = ChannelId(2 * self.connections + c.conn % self.server_tasks());
            ctx.send(ready, &(c.conn as u32).to_le_bytes()).await?;
        }
        // A built-in server's response is known to the byte: read exactly it. A real
        // server's header is read until its end.
        let limit = match self.real() {
            None => response_header(id.size()).len() + id.size(),
            Some(_) => MAX_HEADER + id.size(),
        };
        // Grown only while it is small: zeroing it per response would cost as much as reading.
        if c.resp.len() < limit {
            c.resp.resize(limit, 0);
        }
        c.inflight = Some(InFlight {
            id,
            start,
            close,
            have: 0,
            limit,
            head: None,
        });
        Ok(())
    }

    /// Read what connection `c`'s channel holds (it is readable); returns whether its response
    /// is complete.
    async fn read_some<C: Context>(&self, ctx: &C, c: &mut Conn) -> Result<bool, WorkloadError> {
        let conn = c.conn;
        let Some(f) = c.inflight.as_mut() else {
            return Err(WorkloadError::Integrity(format!(
                "connection {conn}: bytes arrived with no request in flight"
            )));
        };
        let id = f.id;
        let limit = f.head.map_or(f.limit, |(_, total)| total);
        f.have += ctx
            .recv_some(ChannelId(2 * conn + 1), &mut c.resp[f.have..limit])
            .await?;
        if f.head.is_none() {
            if self.real().is_none() {
                // The header's length is the response's less the file's.
                if f.have < f.limit - id.size() {
                    return Ok(false);
                }
                let header = response_header(id.size());
                if !c.resp.starts_with(header.as_bytes()) {
                    return Err(WorkloadError::Integrity(format!(
                        "connection {conn}: {} answered with header {:?}",
                        id.url(),
                        String::from_utf8_lossy(&c.resp[..header.len()])
                    )));
                }
                f.head = Some((header.len(), header.len() + id.size()));
            } else {
                let Some(at) = find_header_end(&c.resp[..f.have]) else {
                    if f.have >= MAX_HEADER {
                        return Err(WorkloadError::Integrity(format!(
                            "connection {conn}: the response to {} has no end of header within {MAX_HEADER} bytes",
                            id.url()
                        )));
                    }
                    return Ok(false);
                };
                let total = at + id.size();
                match parse_response_head(&c.resp[..at]) {
                    Some(len) if len == id.size() && f.have <= total => {}
                    _ => {
                        return Err(WorkloadError::Integrity(format!(
                        "connection {conn}: {} ({} bytes) answered with {} bytes and header {:?}",
                        id.url(),
                        id.size(),
                        f.have,
                        String::from_utf8_lossy(&c.resp[..at])
                    )))
                    }
                }
                f.head = Some((at, total));
            }
        }
        Ok(f.head.is_some_and(|(_, total)| f.have == total))
    }

    /// Connection `c`'s response is complete: check it byte for byte, count it, and set when
    /// its next request is due (or close it).
    async fn complete<C: Context>(
        &self,
        ctx: &C,
        clock: &Clock,
        c: &mut Conn,
    ) -> Result<(), WorkloadError> {
        let end = ctx.now();
        let f = c
            .inflight
            .take()
            .expect("a complete response was in flight");
        let (body_at, len) = f.head.expect("a complete response has a header");
        if let Err(at) = self.fileset().verify(f.id, &c.resp[body_at..len]) {
            return Err(WorkloadError::Integrity(format!(
                "connection {}: the response to {} differs from the file at byte {at}",
                c.conn,
                f.id.url()
            )));
        }
        if c.resp.len() > KEEP_BUFFER {
            c.resp = Vec::new();
        }
        if f.close {
            c.closed = true;
            ctx.record("bytes", c.bytes as f64);
            ctx.record("requests", c.requests as f64);
            ctx.record("seconds", (c.rated_end - clock.start_at).as_secs_f64());
            if self.real().is_some() {
                ctx.send(self.done_queue(), &(c.conn as u32).to_le_bytes())
                    .await?;
            }
            return Ok(());
        }
        // SPECweb99's rated receive in the closed loop; the schedule alone in the open loop.
        let paced = if clock.interval.is_some() || !self.pace {
            end
        } else {
            f.start + Duration::from_secs_f64(len as f64 * 8.0 / RATED_BITS_PER_S)
        };
        if end <= clock.until {
            c.bytes += len as u64;
            c.requests += 1;
            c.rated_end = c.rated_end.max(paced);
            ctx.record("latency_ns", (end - f.start).as_nanos() as f64);
        }
        c.next_at = match clock.interval {
            Some(i) => {
                let scheduled = c.offset + i * c.sent;
                if scheduled < clock.until {
                    scheduled
                } else {
                    end
                }
            }
            None if self.pace => paced.min(clock.until),
            None => end,
        };
        Ok(())
    }
}
