//! Channels of a plan carried by real file descriptors: a pipe, a socketpair, a UNIX or TCP
//! stream over loopback (TCP_NODELAY), or a connected pair of UDP sockets — one per channel.

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
}

impl Channels {
    /// Create `count` channels carried by `transport`. `scratch` holds UNIX socket paths.
    pub fn create(transport: Transport, count: usize, scratch: &TempDir) -> io::Result<Channels> {
        let mut ch = Channels {
            ends: Vec::with_capacity(count),
        };
        for i in 0..count {
            let pair = match transport {
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
            };
            ch.ends.push(pair);
        }
        Ok(ch)
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
        for &(r, w) in &self.ends {
            crate::sys::close(r);
            crate::sys::close(w);
        }
    }
}
