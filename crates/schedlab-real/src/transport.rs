//! Channels of a plan carried by real file descriptors: a pipe, a socketpair, a UNIX or TCP
//! stream over loopback (TCP_NODELAY), or a connected pair of UDP sockets. Each channel has its
//! own connection, except in a duplex plan, where channels `2k` and `2k + 1` are the two
//! directions of one connection (a chat user's socket).

use crate::tempdir::TempDir;
use schedlab_workload::Transport;
use std::io;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::IntoRawFd;
use std::os::unix::net::{UnixListener, UnixStream};

/// The file descriptors of every channel of one repetition, closed on drop.
#[derive(Debug)]
pub struct Channels {
    /// (read end, write end) per channel.
    ends: Vec<(i32, i32)>,
    /// Every descriptor, once (duplex channels share theirs).
    owned: Vec<i32>,
}

impl Channels {
    /// Create `count` channels carried by `transport`; with `duplex`, pairs of channels share a
    /// connection (pipes, being one-way, still get one each). `scratch` holds UNIX socket paths.
    pub fn create(
        transport: Transport,
        count: usize,
        duplex: bool,
        scratch: &TempDir,
    ) -> io::Result<Channels> {
        let mut ch = Channels {
            ends: Vec::with_capacity(count),
            owned: Vec::with_capacity(2 * count),
        };
        if duplex && transport != Transport::Pipe {
            for i in 0..count.div_ceil(2) {
                let (b, a) = connect(transport, i, scratch)?;
                ch.owned.extend([a, b]);
                ch.ends.push((b, a));
                if ch.ends.len() < count {
                    ch.ends.push((a, b));
                }
            }
        } else {
            for i in 0..count {
                let pair = connect(transport, i, scratch)?;
                ch.owned.extend([pair.0, pair.1]);
                ch.ends.push(pair);
            }
        }
        Ok(ch)
    }

    /// Add `count` pipe channels after the others: a plan's in-process queues.
    pub fn add_pipes(&mut self, count: usize) -> io::Result<()> {
        for _ in 0..count {
            let pair = crate::sys::pipe()?;
            self.owned.extend([pair.0, pair.1]);
            self.ends.push(pair);
        }
        Ok(())
    }

    /// The descriptor a receiver reads channel `i` from.
    pub fn read_fd(&self, i: usize) -> i32 {
        self.ends[i].0
    }

    /// The descriptor senders write channel `i` to.
    pub fn write_fd(&self, i: usize) -> i32 {
        self.ends[i].1
    }

    /// Number of channels.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no channels.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl Drop for Channels {
    fn drop(&mut self) {
        for &fd in &self.owned {
            crate::sys::close(fd);
        }
    }
}

/// One connected pair for channel `i`: (read end, write end).
fn connect(transport: Transport, i: usize, scratch: &TempDir) -> io::Result<(i32, i32)> {
    Ok(match transport {
        Transport::Pipe => crate::sys::pipe()?,
        Transport::Socketpair => {
            let (a, b) = UnixStream::pair()?;
            (b.into_raw_fd(), a.into_raw_fd())
        }
        Transport::Unix => {
            let path = scratch.path().join(format!("ch{i}.sock"));
            let listener = UnixListener::bind(&path)?;
            let w = UnixStream::connect(&path)?;
            let (r, _) = listener.accept()?;
            std::fs::remove_file(&path)?;
            (r.into_raw_fd(), w.into_raw_fd())
        }
        Transport::Tcp => {
            let listener = TcpListener::bind("127.0.0.1:0")?;
            let w = TcpStream::connect(listener.local_addr()?)?;
            let (r, _) = listener.accept()?;
            w.set_nodelay(true)?;
            r.set_nodelay(true)?;
            (r.into_raw_fd(), w.into_raw_fd())
        }
        Transport::Udp => {
            let r = UdpSocket::bind("127.0.0.1:0")?;
            let w = UdpSocket::bind("127.0.0.1:0")?;
            w.connect(r.local_addr()?)?;
            r.connect(w.local_addr()?)?;
            (r.into_raw_fd(), w.into_raw_fd())
        }
    })
}
