//! The machine's cost model: what each thing a workload does costs in simulated CPU time and
//! latency, in named profiles with `key=value` overrides (the command line's `--cost`).
//!
//! The figures are order-of-magnitude values of the kind lmbench reports (`lat_syscall null`,
//! `lat_ctx -s 0 2`, `lat_pipe`, `lat_unix`, `lat_tcp`, `bw_mem bcopy`; McVoy & Staelin, "lmbench:
//! Portable tools for performance analysis", USENIX 1996), for two machines:
//!
//! - `modern`: a 2020s x86-64 server under a current kernel (HZ=250, Debian's default); syscall
//!   ≈ 0.15 µs, context switch ≈ 1.2 µs, a pipe/socket message ≈ 0.3 µs of kernel work per side,
//!   TCP loopback ≈ 2.5 µs per side, a remote wakeup IPI ≈ 1.5 µs (virtual machines pay more),
//!   copies at ≈ 10 GB/s.
//! - `piii-700`: the 8-way 700 MHz Pentium III of seeds 000 and 002 under Linux 2.4 (HZ=100; seed
//!   000's 2.5.25 ticked at HZ=1000, which its runs ask for with `--cost hz=1000`);
//!   lmbench on PIII-class machines of 2000–2002 gave null syscall ≈ 0.5 µs, context switch
//!   ≈ 2 µs, pipe latency ≈ 8 µs per round trip, TCP latency ≈ 40–50 µs per round trip, bcopy
//!   ≈ 300 MB/s; a runqueue-lock acquisition that moves the cache line across the shared front-side
//!   bus ≈ 0.3 µs; goodness() ≈ 60 ns per task scanned.
//!
//! They are set from such published figures and never tuned to make a seed's table come out; a
//! user who knows better passes `--cost key=value`. Every cost gets a seeded uniform jitter
//! (`jitter`, ±5 % by default) so that repetitions with different seeds differ the way runs on a
//! real machine do, while one seed always gives the same result.

use std::fmt;

use schedlab_workload::{ChasePattern, MemAccess, MemAccessKind};

use crate::skb::SMALL_TRUESIZE;

/// Why a cost profile or an override was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CostError {
    /// No profile has this name.
    #[error("'{0}' is not known; profiles: {profiles}", profiles = PROFILES.join(", "))]
    UnknownProfile(String),
    /// An override is not of the form `key=value`.
    #[error("'{0}' is not key=value; keys: {COST_KEYS}")]
    NotKeyValue(String),
    /// An override names no cost.
    #[error("unknown key '{0}'; keys: {COST_KEYS}")]
    UnknownKey(String),
    /// An override's value is not accepted for its key.
    #[error("{key}={value}: {accepted}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What the key accepts.
        accepted: &'static str,
    },
    /// The ACK part of a TCP receive would exceed the receive's whole kernel work.
    #[error("net_ack={net_ack}: accepted: at most net_msg ({net_msg} ns), the receive's whole kernel work of which the ACK is a part")]
    AckAboveMsg {
        /// The ACK part, ns.
        net_ack: u64,
        /// The whole per-message work, ns.
        net_msg: u64,
    },
    /// The tick handler would not fit in a tick.
    #[error("the tick handler ({tick} ns) must be shorter than a tick at HZ={hz}")]
    TickTooLong {
        /// The tick handler's cost, ns.
        tick: u64,
        /// Timer interrupts per second.
        hz: u32,
    },
    /// What a task pays each time it is switched in (the switch, a migration, the runqueue lock)
    /// plus the tick handler, at the top of the jitter, would not fit in a tick: a task
    /// preempted at every tick would never finish being switched in, and the run would make no
    /// progress.
    #[error("switch ({switch} ns) + mm_switch ({mm_switch} ns) + migration ({migration} ns) + rq_lock ({rq_lock} ns) + tick ({tick} ns), with jitter {jitter}, must be shorter than a tick at HZ={hz} ({tick_ns} ns): a task preempted at each tick would never finish being switched in")]
    SwitchTooLong {
        /// The context switch's cost, ns.
        switch: u64,
        /// The address-space switch's, ns.
        mm_switch: u64,
        /// The migration's cost, ns.
        migration: u64,
        /// The runqueue lock's cost, ns.
        rq_lock: u64,
        /// The tick handler's cost, ns.
        tick: u64,
        /// The relative jitter.
        jitter: f64,
        /// Timer interrupts per second.
        hz: u32,
        /// The tick's length, ns.
        tick_ns: u64,
    },
}

/// The longest any single cost may be, ns (60 s): simulated time is counted in u64 nanoseconds,
/// and no operation a workload does costs a minute of CPU or device time.
pub const MAX_COST_NS: u64 = 60_000_000_000;

/// Costs of a simulated machine. Times are nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// Profile name.
    pub profile: String,
    /// Timer interrupts per second.
    pub hz: u32,
    /// Entering and leaving the kernel, charged to every context call that is a system call.
    pub syscall: u64,
    /// A context switch (register and address-space switch, `schedule()` bookkeeping).
    pub switch: u64,
    /// Kernel work per message sent or received on a pipe, besides the copy.
    pub msg: u64,
    /// The same on a UNIX-domain socket (socketpair or a connected stream socket). The built-in
    /// profiles charge it as a pipe's (`msg`); `calibrate` measures it (on current kernels an
    /// AF_UNIX message costs more than a pipe's).
    pub sock_msg: u64,
    /// The extra kernel work of a UNIX-domain socket message per doubling of the bytes of skb
    /// queued on all the machine's sockets beyond [`SOCK_QUEUE_FREE`]: each queued write is
    /// one or more skbs of [`crate::skb::unix_write_truesize`] bytes (768 for a small write,
    /// 2,304 for 1,000 bytes), and when megabytes are queued (hackbench's 80 sockets with
    /// dozens each) the ones a send or receive touches are cache-cold — what counts is their
    /// bytes, not their number (`skb.rs`). Charged to each side of a message as
    /// `sock_queue × log2(queued bytes / 49,152)` on top of `sock_msg`. 0 in the built-in
    /// profiles (no published figure); `calibrate` measures it (a write + read of 1 byte with
    /// 5,040 queued on 80 sockets against one on one socket). A profile file without it keeps
    /// its base's 0.
    pub sock_queue: u64,
    /// Small writes (up to 192 bytes) a UNIX-domain stream socket holds before its writer
    /// blocks: the kernel charges each write's skbs, [`crate::skb::unix_write_truesize`] bytes
    /// (768 for a small write), against the sender's `sk_sndbuf` (212,992 bytes by default), so
    /// a socketpair holds 278 writes of 1 or of 100 bytes and 93 of 1,000 — where a
    /// `channel_bytes` of 64 KiB would let 655 of 100 bytes or 65 of 1,000 queue. The simulated
    /// socket takes writes while the truesize queued on it is below `sock_slots × 768` bytes,
    /// and `channel_bytes` does not bound it. 0 = no such limit (the built-in profiles, as
    /// before it); `calibrate` counts it (non-blocking 1-byte writes until EAGAIN).
    pub sock_slots: u64,
    /// Kernel work per message sent or received over loopback TCP/UDP, besides the copy.
    pub net_msg: u64,
    /// What a loopback TCP receive that sleeps for its data costs beyond a pipe read's sleep
    /// and wakeup (`wakeup`, `switch`): `tcp_recvmsg`'s wait in `sk_wait_data` (releasing and
    /// retaking the socket lock, the backlog processed in `release_sock`), the wakeup from
    /// `tcp_v4_rcv` → `sk_data_ready` in the sender's softirq, the ACK the woken reader's
    /// `tcp_cleanup_rbuf` may send. Charged to the reader when its blocked receive resumes
    /// (`machine/tcp_wait.rs`). 0 in both built-in profiles (no published figure was found),
    /// so a profile file without it keeps 0; `calibrate` measures it with a same-CPU ping-pong
    /// over two TCP connections against one over two pipes.
    pub net_wait: u64,
    /// The part of `net_msg` that is the ACK a loopback TCP receive sends — `tcp_recvmsg` →
    /// `tcp_cleanup_rbuf` → `tcp_send_ack`, its processing by the sender's socket running in
    /// the reader's context on loopback — when the read empties the receive queue or more than
    /// a segment's worth (536 bytes) arrived since the last ACK (net/ipv4/tcp.c; the rule is in
    /// `machine/tcp_drain.rs`). A receive that leaves data queued with less unacknowledged
    /// sends none and pays `net_msg − net_ack`; one that ACKs pays `net_msg`. 0 (both built-in
    /// profiles, and a profile file without it) charges every receive `net_msg`, as before the
    /// key; at most `net_msg`. `calibrate` measures it: a TCP read that leaves data queued
    /// against half a one-at-a-time write + read.
    pub net_ack: u64,
    /// Copying one KiB between user and kernel.
    pub copy_per_kib: u64,
    /// `try_to_wake_up` work, charged to the waker.
    pub wakeup: u64,
    /// From sending a reschedule IPI to the target CPU acting on it.
    pub ipi: u64,
    /// CPU the waker spends sending that IPI (an APIC write; on a virtual machine a VM exit,
    /// microseconds). 0 in the built-in profiles, whose `wakeup` includes it; `calibrate`
    /// measures it from a write that wakes a reader on another CPU.
    pub ipi_send: u64,
    /// An idle CPU leaving its idle state.
    pub idle_exit: u64,
    /// Cache refill paid by a task the first time it runs on a CPU other than its last one.
    pub migration: u64,
    /// Holding a runqueue lock for one operation (enqueue, pick).
    pub rq_lock: u64,
    /// A message's extra kernel work when its channel was last used on another CPU: the
    /// socket's or pipe's lock, queue and wait-queue lines move between the CPUs' caches. 0 in
    /// the built-in profiles (their `msg` is an average); `calibrate` measures it with two
    /// threads on two CPUs handing one pipe back and forth.
    pub bounce: u64,
    /// A switch to a task of another process than the one whose address space the CPU has
    /// loaded: `switch_mm` (the page-table base written, and on a CPU that keeps fewer
    /// address-space tags than there are processes — Linux keeps 6 per CPU, `TLB_NR_DYN_ASIDS`
    /// — the TLB flushed and refilled), beyond `switch`. Charged to the task switched in;
    /// a switch between threads of one process pays nothing, and a kernel thread borrows the
    /// address space it finds (lazy TLB), so a switch to it or back from it to the same process
    /// pays nothing either. Which tasks are threads of one process is the plan's
    /// ([`schedlab_workload::Plan::address_space`]). 0 in both built-in profiles (their
    /// `switch` is an average); `calibrate` measures it with a ring of processes on one CPU
    /// against a ring of threads.
    pub mm_switch: u64,
    /// Holding the machine-wide loopback transmit lock for one TCP/UDP message: Linux 2.4/2.5's
    /// `dev_queue_xmit` took the loopback device's `xmit_lock` around `loopback_xmit` (before
    /// the device was made lockless with NETIF_F_LLTX), FreeBSD 6/7's `if_simloop` the netisr
    /// queue's mutex. A sender that finds it held spins, burning its CPU, as on `rq_lock`. 0 in
    /// both profiles (no published hold time was found); `--cost net_lock=1us` turns it on.
    pub net_lock: u64,
    /// A cache-to-cache transfer charged to a task that takes a workload's lock last released
    /// on another CPU, as CPU time at the start of its hold: the lock's line comes from the
    /// releasing CPU's cache, and the first store to the data it protects misses there too.
    /// Scaled by distance as `bounce` is (`smt_pct`, `llc_pct`, `socket_pct`); nothing when the
    /// last holder ran on the same CPU. 0 in both profiles (the machines the seeds ran on were
    /// not measured for it; McKenney's 4-CPU 700 MHz Pentium III gave 113 ns for an atomic
    /// increment whose line comes from another CPU and 361 ns for a cmpxchg that transfers and
    /// invalidates it, against 162 ns for main memory — "Exploiting Deferred Destruction", his
    /// 2004 dissertation); `--cost line=360ns` turns it on.
    pub line: u64,
    /// Per task a scanning scheduler examines (Linux 2.4's goodness loop).
    pub scan: u64,
    /// The timer interrupt handler.
    pub tick: u64,
    /// Bytes a channel buffers before a sender blocks.
    pub channel_bytes: u64,
    /// Writing one 4 KiB page of memory.
    pub page_touch: u64,
    /// Reading 1 KiB one byte at a time (a memory-access step of type read: a loop of
    /// single-byte loads, which the core's pipeline, not the memory, bounds — measured the same
    /// whether the buffer fits a cache or not). 0: the profile has no figure, and a read is
    /// refused until `--cost` gives one.
    pub mem_read_per_kib: u64,
    /// Writing 1 KiB one byte at a time (type write), as `mem_read_per_kib`.
    pub mem_write_per_kib: u64,
    /// 1000 hops of a pointer chase in a buffer no larger than [`CostModel::chase_cache`]:
    /// each load's latency from the cache. 0: no figure (refused, as above).
    pub chase_cached_per_khop: u64,
    /// 1000 hops of a random (bit-reversed) chase in a buffer larger than the cache: each a
    /// load from memory the prefetchers cannot foresee. 0: no figure.
    pub chase_uncached_per_khop: u64,
    /// 1000 hops of a sequential chase in a buffer larger than the cache: the prefetchers
    /// follow the stride. 0: no figure.
    pub chase_sequential_per_khop: u64,
    /// The bytes of cache a chase's buffer must fit to be charged the cached latency (the
    /// last-level cache one task sees). The simulator looks at the one buffer the chase
    /// follows (a shared one once, whatever the number of tasks): other tasks' buffers and
    /// data do not evict it.
    pub chase_cache: u64,
    /// Bytes of RAM the workload's memory lives in (the machine's memory less the kernel's).
    /// Touched memory beyond it is paged out to swap (the machine's `memory.rs`). `modern`:
    /// 16 GiB, a current server's; `piii-700`: 1 GiB, as the 2002 test machines were sized.
    /// Only a workload that touches more than this (interbench's memload at its original
    /// sizing, 110 % of RAM) is affected.
    pub memory: u64,
    /// CPU to reclaim one page (scan the LRU, unmap it, start its swap-out write:
    /// `shrink_page_list` in mm/vmscan.c), charged to kswapd or to a task in direct reclaim.
    /// No published per-page figure was found: the profiles' values are estimates from the few
    /// thousand instructions the path runs (`modern` 1 µs, `piii-700` 5 µs).
    pub reclaim: u64,
    /// Device time per KiB of file I/O (the task sleeps meanwhile).
    pub io_per_kib: u64,
    /// Device latency per I/O request.
    pub io_latency: u64,
    /// Starting a task (`spawn`): fork and, for a job, the exec of its program, charged to the
    /// parent before the child exists. Estimates: `modern` 500 µs (a shared 2-core VM measured
    /// fork+exit+wait at 375 µs and fork+exec(/bin/true)+exit+wait at 1.4–1.6 ms; bare metal is
    /// several times faster), `piii-700` 700 µs (lmbench's fork and exec figures of the era).
    pub fork: u64,
    /// A spawned task's exit (`do_exit`, unmapping, notifying the parent), charged to it after
    /// its body returns. Estimates: `modern` 50 µs, `piii-700` 100 µs.
    pub exit: u64,
    /// `ipi`, `bounce` and `migration` between SMT siblings of one core, in percent of their
    /// value (which is for two cores sharing a last-level cache). Siblings share L1 and L2, so
    /// a migrated task's cache is mostly warm and a bounced line stays in the core; the IPI
    /// still goes through the APIC. Estimate: 50 in both profiles.
    pub smt_pct: u64,
    /// The same between two cores of one socket (one LLC): 100, the profiles' own figures. A
    /// flat machine (no topology) is all such pairs, so it pays exactly `ipi`, `bounce`,
    /// `migration` by default.
    pub llc_pct: u64,
    /// The same between CPUs of different sockets: a cache line or a refill from the other
    /// socket's LLC or memory over the interconnect, roughly twice an on-socket transfer on
    /// current two-socket x86 servers (cross-socket cache-to-cache latency ≈ 100–130 ns
    /// against ≈ 40–50 ns within a socket). Estimate: 200 in both profiles.
    pub socket_pct: u64,
    /// A compute run on a socket other than its task's memory node (the socket of the CPU of
    /// its first compute: Linux's default first-touch placement), in percent of its length on
    /// that node — a distance-dependent factor that only machines with sockets use. Two-socket
    /// x86 firmware reports the remote node at SLIT distance 21 against 10 (remote DRAM
    /// latency about twice local); a compute that spends a third of its time waiting on DRAM
    /// runs about 30 % longer off its node. Estimate: 130 in both profiles (100: no cost).
    pub remote_pct: u64,
    /// Relative uniform jitter applied to every cost (0.05 = ±5 %).
    pub jitter: f64,
}

/// Bytes of skb queued on all sockets at or below which [`CostModel::sock_queue`] adds
/// nothing: 64 small writes of [`SMALL_TRUESIZE`] bytes. On the development VM, write + read of
/// 1 byte costs the same (within 7 %) with 1 or 80 queued, and grows by roughly equal steps per
/// doubling from 640 to 5,040 (`bench/sock-depth.sh`).
pub const SOCK_QUEUE_FREE: u64 = 64 * SMALL_TRUESIZE;

/// How many times `queued` bytes of skb double [`SOCK_QUEUE_FREE`] (0 at or below it): the
/// factor of [`CostModel::sock_queue`] in a socket message's cost.
pub fn sock_queue_doublings(queued: u64) -> f64 {
    if queued <= SOCK_QUEUE_FREE {
        0.0
    } else {
        (queued as f64 / SOCK_QUEUE_FREE as f64).log2()
    }
}

/// `modern`'s memory-access costs: `mem_read_per_kib`, `mem_write_per_kib`,
/// `chase_cached_per_khop`, `chase_uncached_per_khop`, `chase_sequential_per_khop` (ns) and
/// `chase_cache` (bytes), measured on a 2-vCPU AMD EPYC virtual machine with
/// `bench/memrun-costs.sh` (docs/performance.md): reads and writes of a 64 MiB buffer, chases
/// of 256 KiB (in the per-core 512 KiB L2) and of 64 MiB; its L3 did not shorten a chase of
/// 4 MiB (178 ns a hop), so the cache is the L2.
const MODERN_MEM: (u64, u64, u64, u64, u64, u64) = (187, 447, 7_450, 197_630, 6_631, 512 << 10);

/// `piii-700`'s: no published figure for a byte-at-a-time loop or a chase's latency on that
/// machine is at hand, so none is given (a memory access is refused until `--cost` sets
/// them); the cache is the 1 MiB second-level cache of the 700 MHz Pentium III Xeon (Intel's
/// datasheet offers 1 MB and 2 MB).
const PIII_MEM: (u64, u64, u64, u64, u64, u64) = (0, 0, 0, 0, 0, 1 << 20);

/// The named profiles.
pub const PROFILES: [&str; 2] = ["modern", "piii-700"];

/// The keys [`CostModel::with_overrides`] accepts, for help and errors.
pub const COST_KEYS: &str = "hz, syscall, switch, msg, sock_msg, sock_queue, net_msg, net_wait, net_ack, copy_per_kib, wakeup, ipi, ipi_send, idle_exit, migration, rq_lock, bounce, mm_switch, net_lock, line, scan, tick, channel_bytes, page_touch, mem_read_per_kib, mem_write_per_kib, chase_cached_per_khop, chase_uncached_per_khop, chase_sequential_per_khop, reclaim, io_per_kib, io_latency, fork, exit (durations such as 1.5us, or ns), sock_slots (messages, 0 = no limit, up to 1000000), smt_pct, llc_pct, socket_pct (ipi, bounce, line, migration between SMT siblings, cores of one LLC, sockets, in percent: 0..1000), remote_pct (a compute off its task's memory node, in percent of its length: 100..1000), memory (a size such as 1GiB, 64MiB..1TiB), chase_cache (a size, 1B..1TiB), jitter (0..0.5)";

impl CostModel {
    /// A named profile.
    pub fn profile(name: &str) -> Result<CostModel, CostError> {
        match name {
            "modern" => Ok(CostModel {
                profile: name.into(),
                hz: 250,
                syscall: 150,
                switch: 1_200,
                msg: 300,
                sock_msg: 300,
                sock_queue: 0,
                sock_slots: 0,
                net_msg: 2_500,
                net_wait: 0,
                net_ack: 0,
                copy_per_kib: 100,
                wakeup: 400,
                ipi: 1_500,
                ipi_send: 0,
                idle_exit: 1_000,
                migration: 4_000,
                rq_lock: 50,
                bounce: 0,
                mm_switch: 0,
                net_lock: 0,
                line: 0,
                scan: 20,
                tick: 1_000,
                channel_bytes: 65_536,
                page_touch: 100,
                mem_read_per_kib: MODERN_MEM.0,
                mem_write_per_kib: MODERN_MEM.1,
                chase_cached_per_khop: MODERN_MEM.2,
                chase_uncached_per_khop: MODERN_MEM.3,
                chase_sequential_per_khop: MODERN_MEM.4,
                chase_cache: MODERN_MEM.5,
                memory: 16 << 30,
                reclaim: 1_000,
                io_per_kib: 1_000,
                io_latency: 50_000,
                fork: 500_000,
                exit: 50_000,
                smt_pct: 50,
                llc_pct: 100,
                socket_pct: 200,
                remote_pct: 130,
                jitter: 0.05,
            }),
            "piii-700" => Ok(CostModel {
                profile: name.into(),
                hz: 100,
                syscall: 500,
                switch: 2_000,
                msg: 3_000,
                sock_msg: 3_000,
                sock_queue: 0,
                sock_slots: 0,
                net_msg: 12_000,
                net_wait: 0,
                net_ack: 0,
                copy_per_kib: 3_300,
                wakeup: 1_500,
                ipi: 3_000,
                ipi_send: 0,
                idle_exit: 500,
                migration: 30_000,
                rq_lock: 300,
                bounce: 0,
                mm_switch: 0,
                net_lock: 0,
                line: 0,
                scan: 60,
                tick: 3_000,
                channel_bytes: 16_384,
                page_touch: 1_000,
                mem_read_per_kib: PIII_MEM.0,
                mem_write_per_kib: PIII_MEM.1,
                chase_cached_per_khop: PIII_MEM.2,
                chase_uncached_per_khop: PIII_MEM.3,
                chase_sequential_per_khop: PIII_MEM.4,
                chase_cache: PIII_MEM.5,
                memory: 1 << 30,
                reclaim: 5_000,
                io_per_kib: 40_000,
                io_latency: 8_000_000,
                fork: 700_000,
                exit: 100_000,
                smt_pct: 50,
                llc_pct: 100,
                socket_pct: 200,
                remote_pct: 130,
                jitter: 0.05,
            }),
            other => Err(CostError::UnknownProfile(other.into())),
        }
    }

    /// Apply `key=value[,key=value…]` overrides.
    pub fn with_overrides(mut self, overrides: &[String]) -> Result<CostModel, CostError> {
        for item in overrides
            .iter()
            .flat_map(|o| o.split(','))
            .filter(|s| !s.is_empty())
        {
            let Some((key, value)) = item.split_once('=') else {
                return Err(CostError::NotKeyValue(item.into()));
            };
            let bad = |accepted: &'static str| CostError::BadValue {
                key: key.into(),
                value: value.into(),
                accepted,
            };
            let dur = || -> Result<u64, CostError> {
                let ns = match value.parse::<u64>() {
                    Ok(n) => n,
                    Err(_) => schedlab_workload::duration::parse_duration(value)
                        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
                        .map_err(|_| {
                            bad("give a duration such as 1.5us, or nanoseconds, up to 60s")
                        })?,
                };
                if ns > MAX_COST_NS {
                    return Err(bad(
                        "accepted: 0..60s (a duration such as 1.5us, or nanoseconds)",
                    ));
                }
                Ok(ns)
            };
            match key {
                "hz" => {
                    self.hz = value
                        .parse()
                        .ok()
                        .filter(|h| (10..=10_000).contains(h))
                        .ok_or_else(|| bad("accepted: 10..10000"))?
                }
                "jitter" => {
                    self.jitter = value
                        .parse()
                        .ok()
                        .filter(|j| (0.0..=0.5).contains(j))
                        .ok_or_else(|| bad("accepted: 0..0.5"))?
                }
                "channel_bytes" => {
                    self.channel_bytes = value
                        .parse()
                        .ok()
                        .filter(|&b| b >= 4096)
                        .ok_or_else(|| bad("accepted: 4096 or more bytes"))?
                }
                "memory" => {
                    self.memory = schedlab_workload::presets::interbench::parse_size(value)
                        .ok()
                        .map(|b| b as u64)
                        .filter(|b| (64 << 20..=1 << 40).contains(b))
                        .ok_or_else(|| bad("accepted: a size from 64MiB to 1TiB, such as 1GiB"))?
                }
                "smt_pct" | "llc_pct" | "socket_pct" => {
                    let pct = value
                        .parse()
                        .ok()
                        .filter(|p| (0..=1000).contains(p))
                        .ok_or_else(|| bad("accepted: 0..1000 (percent)"))?;
                    match key {
                        "smt_pct" => self.smt_pct = pct,
                        "llc_pct" => self.llc_pct = pct,
                        _ => self.socket_pct = pct,
                    }
                }
                "remote_pct" => {
                    self.remote_pct = value
                        .parse()
                        .ok()
                        .filter(|p| (100..=1000).contains(p))
                        .ok_or_else(|| bad("accepted: 100..1000 (percent)"))?
                }
                "reclaim" => self.reclaim = dur()?,
                "syscall" => self.syscall = dur()?,
                "switch" => self.switch = dur()?,
                "msg" => self.msg = dur()?,
                "sock_msg" => self.sock_msg = dur()?,
                "sock_queue" => self.sock_queue = dur()?,
                "sock_slots" => {
                    self.sock_slots =
                        value
                            .parse()
                            .ok()
                            .filter(|&n| n <= 1_000_000)
                            .ok_or_else(|| {
                                bad("accepted: a count of messages, 0 (no limit) to 1000000")
                            })?
                }
                "ipi_send" => self.ipi_send = dur()?,
                "net_msg" => self.net_msg = dur()?,
                "net_wait" => self.net_wait = dur()?,
                "net_ack" => self.net_ack = dur()?,
                "copy_per_kib" => self.copy_per_kib = dur()?,
                "wakeup" => self.wakeup = dur()?,
                "ipi" => self.ipi = dur()?,
                "idle_exit" => self.idle_exit = dur()?,
                "migration" => self.migration = dur()?,
                "rq_lock" => self.rq_lock = dur()?,
                "bounce" => self.bounce = dur()?,
                "mm_switch" => self.mm_switch = dur()?,
                "net_lock" => self.net_lock = dur()?,
                "line" => self.line = dur()?,
                "scan" => self.scan = dur()?,
                "tick" => self.tick = dur()?,
                "page_touch" => self.page_touch = dur()?,
                "mem_read_per_kib" => self.mem_read_per_kib = dur()?,
                "mem_write_per_kib" => self.mem_write_per_kib = dur()?,
                "chase_cached_per_khop" => self.chase_cached_per_khop = dur()?,
                "chase_uncached_per_khop" => self.chase_uncached_per_khop = dur()?,
                "chase_sequential_per_khop" => self.chase_sequential_per_khop = dur()?,
                "chase_cache" => {
                    self.chase_cache = schedlab_workload::presets::interbench::parse_size(value)
                        .ok()
                        .map(|b| b as u64)
                        .filter(|b| (1..=1 << 40).contains(b))
                        .ok_or_else(|| bad("accepted: a size from 1B to 1TiB, such as 32MiB"))?
                }
                "io_per_kib" => self.io_per_kib = dur()?,
                "io_latency" => self.io_latency = dur()?,
                "fork" => self.fork = dur()?,
                "exit" => self.exit = dur()?,
                _ => return Err(CostError::UnknownKey(key.into())),
            }
        }
        if self.net_ack > self.net_msg {
            return Err(CostError::AckAboveMsg {
                net_ack: self.net_ack,
                net_msg: self.net_msg,
            });
        }
        if self.tick >= 1_000_000_000 / self.hz as u64 {
            return Err(CostError::TickTooLong {
                tick: self.tick,
                hz: self.hz,
            });
        }
        let tick_ns = self.tick_ns();
        let per_switch = self.switch + self.mm_switch + self.migration + self.rq_lock + self.tick;
        if per_switch as f64 * (1.0 + self.jitter) >= tick_ns as f64 {
            return Err(CostError::SwitchTooLong {
                switch: self.switch,
                mm_switch: self.mm_switch,
                migration: self.migration,
                rq_lock: self.rq_lock,
                tick: self.tick,
                jitter: self.jitter,
                hz: self.hz,
                tick_ns,
            });
        }
        Ok(self)
    }

    /// The distance scales (`smt_pct=50 llc_pct=100 socket_pct=200`), for a record of a
    /// machine with a topology (the [`Display`](fmt::Display) form leaves them out, so that
    /// records of flat machines stay as they were).
    pub fn distance_costs(&self) -> String {
        format!(
            "smt_pct={} llc_pct={} socket_pct={}",
            self.smt_pct, self.llc_pct, self.socket_pct
        )
    }

    /// The memory-placement scale (`remote_pct=130`), for a record of a machine with a
    /// topology.
    pub fn numa_costs(&self) -> String {
        format!("remote_pct={}", self.remote_pct)
    }

    /// The extra work of one UNIX-domain socket message sent or received while `queued` bytes
    /// of skb wait on all the machine's sockets: `sock_queue × log2(queued / 49,152)`, 0 at
    /// 49,152 (64 small writes) or fewer (ns, rounded).
    pub fn sock_queue_cost(&self, queued: u64) -> u64 {
        if self.sock_queue == 0 || queued <= SOCK_QUEUE_FREE {
            return 0;
        }
        (self.sock_queue as f64 * sock_queue_doublings(queued)).round() as u64
    }

    /// What `access` costs, ns: `count` bytes at [`CostModel::mem_read_per_kib`] or [`CostModel::mem_write_per_kib`], or `count`
    /// hops at the chase latency its buffer's size and pattern choose; or, where the profile
    /// has no figure, why it is refused.
    pub fn mem_access_ns(&self, access: &MemAccess) -> Result<u64, String> {
        let (key, per, unit) = match access.kind {
            MemAccessKind::Read => ("mem_read_per_kib", self.mem_read_per_kib, 1024),
            MemAccessKind::Write => ("mem_write_per_kib", self.mem_write_per_kib, 1024),
            MemAccessKind::Chase if access.buffer_bytes() <= self.chase_cache => {
                ("chase_cached_per_khop", self.chase_cached_per_khop, 1000)
            }
            MemAccessKind::Chase if access.pattern == ChasePattern::Sequential => (
                "chase_sequential_per_khop",
                self.chase_sequential_per_khop,
                1000,
            ),
            MemAccessKind::Chase => (
                "chase_uncached_per_khop",
                self.chase_uncached_per_khop,
                1000,
            ),
        };
        if per == 0 && access.count > 0 {
            return Err(format!(
                "the cost profile '{}' has no figure for a memory access ({access}): give one with --cost {key}=DURATION",
                self.profile
            ));
        }
        let ns = (u128::from(access.count) * u128::from(per)).div_ceil(unit);
        Ok(u64::try_from(ns).unwrap_or(u64::MAX).min(u64::MAX / 4))
    }

    /// Length of a timer tick.
    pub fn tick_ns(&self) -> u64 {
        1_000_000_000 / self.hz as u64
    }
}

impl fmt::Display for CostModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (hz={} syscall={} switch={} msg={} sock_msg={} net_msg={} copy_per_kib={} wakeup={} ipi={} ipi_send={} idle_exit={} migration={} rq_lock={} bounce={} net_lock={} scan={} tick={} channel_bytes={} page_touch={} memory={} reclaim={} io_per_kib={} io_latency={} fork={} exit={} jitter={}",
            self.profile, self.hz, self.syscall, self.switch, self.msg, self.sock_msg, self.net_msg,
            self.copy_per_kib, self.wakeup, self.ipi, self.ipi_send, self.idle_exit, self.migration,
            self.rq_lock, self.bounce, self.net_lock, self.scan, self.tick, self.channel_bytes, self.page_touch,
            schedlab_workload::presets::interbench::format_size(self.memory as usize),
            self.reclaim, self.io_per_kib, self.io_latency, self.fork, self.exit, self.jitter
        )?;
        // Each shown only when set, so that records of profiles without them stay as they were.
        if self.net_wait != 0 {
            write!(f, " net_wait={}", self.net_wait)?;
        }
        if self.net_ack != 0 {
            write!(f, " net_ack={}", self.net_ack)?;
        }
        if self.sock_queue != 0 {
            write!(f, " sock_queue={}", self.sock_queue)?;
        }
        if self.sock_slots != 0 {
            write!(f, " sock_slots={}", self.sock_slots)?;
        }
        if self.line != 0 {
            write!(f, " line={}", self.line)?;
        }
        if self.mm_switch != 0 {
            write!(f, " mm_switch={}", self.mm_switch)?;
        }
        // The memory-access costs, each when it is not its profile's (a record names the
        // profile, whose values docs/simulator.md gives; records before them stay as they were).
        let named = CostModel::profile(&self.profile).ok();
        let mem = |m: &CostModel| {
            [
                ("mem_read_per_kib", m.mem_read_per_kib),
                ("mem_write_per_kib", m.mem_write_per_kib),
                ("chase_cached_per_khop", m.chase_cached_per_khop),
                ("chase_uncached_per_khop", m.chase_uncached_per_khop),
                ("chase_sequential_per_khop", m.chase_sequential_per_khop),
                ("chase_cache", m.chase_cache),
            ]
        };
        for (i, (key, value)) in mem(self).into_iter().enumerate() {
            if named.as_ref().is_none_or(|n| mem(n)[i].1 != value) {
                write!(f, " {key}={value}")?;
            }
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_and_overrides() {
        let m = CostModel::profile("piii-700").unwrap();
        assert_eq!(m.hz, 100);
        let m = m
            .with_overrides(&["switch=3us,hz=1000".into(), "jitter=0".into()])
            .unwrap();
        assert_eq!((m.switch, m.hz, m.jitter), (3_000, 1_000, 0.0));
        let e = CostModel::profile("vax").unwrap_err();
        assert_eq!(e, CostError::UnknownProfile("vax".into()));
        assert_eq!(
            e.to_string(),
            "'vax' is not known; profiles: modern, piii-700"
        );
        let modern = || CostModel::profile("modern").unwrap();
        let m = modern()
            .with_overrides(&["smt_pct=10,llc_pct=100,socket_pct=350".into()])
            .unwrap();
        assert_eq!(m.distance_costs(), "smt_pct=10 llc_pct=100 socket_pct=350");
        let e = modern()
            .with_overrides(&["socket_pct=1001".into()])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "socket_pct=1001: accepted: 0..1000 (percent)"
        );
        assert!(modern().with_overrides(&["smt_pct=-1".into()]).is_err());
        let e = modern().with_overrides(&["hz=5".into()]).unwrap_err();
        assert_eq!(e.to_string(), "hz=5: accepted: 10..10000");
        let e = modern().with_overrides(&["switch=abc".into()]).unwrap_err();
        assert!(
            matches!(&e, CostError::BadValue { key, value, .. } if key == "switch" && value == "abc"),
            "{e:?}"
        );
        let e = modern().with_overrides(&["warp=1".into()]).unwrap_err();
        assert_eq!(e, CostError::UnknownKey("warp".into()));
        assert!(
            e.to_string().starts_with("unknown key 'warp'; keys: hz, "),
            "{e}"
        );
        let e = modern().with_overrides(&["bogus".into()]).unwrap_err();
        assert_eq!(e, CostError::NotKeyValue("bogus".into()));
        let e = modern()
            .with_overrides(&["hz=1000,tick=2ms".into()])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the tick handler (2000000 ns) must be shorter than a tick at HZ=1000"
        );
        // Costs charged at every switch-in must leave room in a tick (issue 13: switch=20ms
        // made a run that never progressed and grew without bound).
        let e = modern()
            .with_overrides(&["switch=20ms".into()])
            .unwrap_err();
        assert!(
            matches!(
                e,
                CostError::SwitchTooLong {
                    switch: 20_000_000,
                    hz: 250,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("shorter than a tick at HZ=250 (4000000 ns)"),
            "{e}"
        );
        assert!(modern().with_overrides(&["switch=1s".into()]).is_err());
        assert!(modern()
            .with_overrides(&["migration=3ms,jitter=0.5".into()])
            .is_err());
        assert!(modern().with_overrides(&["switch=2ms".into()]).is_ok());
        let e = modern()
            .with_overrides(&["msg=18446744073709551615".into()])
            .unwrap_err();
        assert!(e.to_string().contains("0..60s"), "{e}");
        // No command-line vocabulary in the library's messages.
        for e in [
            CostModel::profile("vax").unwrap_err(),
            modern().with_overrides(&["warp=1".into()]).unwrap_err(),
            modern().with_overrides(&["hz=5".into()]).unwrap_err(),
        ] {
            assert!(!e.to_string().contains("--"), "{e}");
        }
    }

    /// `net_wait` is 0 in both built-in profiles and left out of their description (records
    /// stay as they were); set, it is parsed like every duration and shown.
    #[test]
    fn net_wait_defaults_to_zero_and_is_shown_only_when_set() {
        for name in PROFILES {
            let m = CostModel::profile(name).unwrap();
            assert_eq!(m.net_wait, 0, "{name}");
            assert!(!m.to_string().contains("net_wait"), "{m}");
        }
        let m = CostModel::profile("modern")
            .unwrap()
            .with_overrides(&["net_wait=2.5us".into()])
            .unwrap();
        assert_eq!(m.net_wait, 2_500);
        assert!(m.to_string().ends_with(" net_wait=2500)"), "{m}");
        let e = CostModel::profile("modern")
            .unwrap()
            .with_overrides(&["net_wait=soon".into()])
            .unwrap_err();
        assert!(e.to_string().starts_with("net_wait=soon: "), "{e}");
        assert!(COST_KEYS.contains("net_wait"));
    }

    /// `line` is 0 in both built-in profiles and left out of their description (records stay
    /// as they were); set, it is parsed like every duration and shown.
    #[test]
    fn line_defaults_to_zero_and_is_shown_only_when_set() {
        for name in PROFILES {
            let m = CostModel::profile(name).unwrap();
            assert_eq!(m.line, 0, "{name}");
            assert!(!m.to_string().contains("line="), "{m}");
        }
        let m = CostModel::profile("piii-700")
            .unwrap()
            .with_overrides(&["line=360ns".into()])
            .unwrap();
        assert_eq!(m.line, 360);
        assert!(m.to_string().ends_with(" line=360)"), "{m}");
        let e = CostModel::profile("piii-700")
            .unwrap()
            .with_overrides(&["line=far".into()])
            .unwrap_err();
        assert!(e.to_string().starts_with("line=far: "), "{e}");
        assert!(COST_KEYS.contains("line"));
    }

    /// `mm_switch` is 0 in both built-in profiles and left out of their description (records
    /// stay as they were); set, it is parsed like every duration and shown.
    #[test]
    fn mm_switch_defaults_to_zero_and_is_shown_only_when_set() {
        for name in PROFILES {
            let m = CostModel::profile(name).unwrap();
            assert_eq!(m.mm_switch, 0, "{name}");
            assert!(!m.to_string().contains("mm_switch"), "{m}");
        }
        let m = CostModel::profile("modern")
            .unwrap()
            .with_overrides(&["mm_switch=1.5us".into()])
            .unwrap();
        assert_eq!(m.mm_switch, 1_500);
        assert!(m.to_string().ends_with(" mm_switch=1500)"), "{m}");
        let e = CostModel::profile("modern")
            .unwrap()
            .with_overrides(&["mm_switch=lots".into()])
            .unwrap_err();
        assert!(e.to_string().starts_with("mm_switch=lots: "), "{e}");
        assert!(COST_KEYS.contains("mm_switch"));
    }

    /// `net_ack` is 0 in both built-in profiles and left out of their description; set, it is
    /// shown, and one above `net_msg` is refused with both values named.
    #[test]
    fn net_ack_defaults_to_zero_and_may_not_exceed_net_msg() {
        for name in PROFILES {
            let m = CostModel::profile(name).unwrap();
            assert_eq!(m.net_ack, 0, "{name}");
            assert!(!m.to_string().contains("net_ack"), "{m}");
        }
        let m = CostModel::profile("modern")
            .unwrap()
            .with_overrides(&["net_ack=2us".into()])
            .unwrap();
        assert_eq!(m.net_ack, 2_000);
        assert!(m.to_string().ends_with(" net_ack=2000)"), "{m}");
        let e = CostModel::profile("modern")
            .unwrap()
            .with_overrides(&["net_ack=3us".into()])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "net_ack=3000: accepted: at most net_msg (2500 ns), the receive's whole kernel work of which the ACK is a part"
        );
        // Set together, the order of the keys does not matter.
        assert!(CostModel::profile("modern")
            .unwrap()
            .with_overrides(&["net_ack=3us,net_msg=4us".into()])
            .is_ok());
        assert!(COST_KEYS.contains("net_ack"));
    }
}
