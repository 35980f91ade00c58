//! Thin, checked wrappers over the system calls the real backend needs.
//!
//! Where `rustix` has a safe wrapper (thread id and name, clocks, the channels' reads and
//! writes) it is used; the rest is a small libc island with a SAFETY note per call:
//! sched_setattr/sched_getattr (no wrapper in rustix or libc), the raw-descriptor pipe setup
//! the runner shares across `fork()` (descriptors that both processes close on their own
//! paths, so an `OwnedFd` would close them twice; the I/O borrows them for one call), and the
//! C library's `ldexp` in rt-app's busy loop, written out in assembly (`crate::busy_loop`; the libc crate does not
//! declare the math library).

use std::io;

/// The kernel's `struct sched_attr` (SCHED_ATTR_SIZE_VER1, include/uapi/linux/sched/types.h:
/// VER0 and the utilization clamps of Linux 5.3; a kernel before 5.3 accepts it while the
/// clamps are 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SchedAttr {
    /// Size of this structure.
    pub size: u32,
    /// SCHED_* policy.
    pub sched_policy: u32,
    /// SCHED_FLAG_* flags.
    pub sched_flags: u64,
    /// Nice value for fair policies.
    pub sched_nice: i32,
    /// Static priority for FIFO/RR.
    pub sched_priority: u32,
    /// DEADLINE runtime, or the custom slice of a fair task (EEVDF), in ns.
    pub sched_runtime: u64,
    /// DEADLINE relative deadline, ns.
    pub sched_deadline: u64,
    /// DEADLINE period, ns.
    pub sched_period: u64,
    /// Utilization clamp minimum, 0..1024 (with [`SCHED_FLAG_UTIL_CLAMP_MIN`]).
    pub sched_util_min: u32,
    /// Utilization clamp maximum, 0..1024 (with [`SCHED_FLAG_UTIL_CLAMP_MAX`]).
    pub sched_util_max: u32,
}

/// sched_setattr keeps the policy (include/uapi/linux/sched.h).
pub const SCHED_FLAG_KEEP_POLICY: u64 = 0x08;
/// sched_setattr keeps the priority, nice and deadline parameters.
pub const SCHED_FLAG_KEEP_PARAMS: u64 = 0x10;
/// sched_setattr sets `sched_util_min`.
pub const SCHED_FLAG_UTIL_CLAMP_MIN: u64 = 0x20;
/// sched_setattr sets `sched_util_max`.
pub const SCHED_FLAG_UTIL_CLAMP_MAX: u64 = 0x40;

/// SCHED_DEADLINE's policy number.
pub const SCHED_DEADLINE: u32 = 6;

/// The calling thread's kernel id.
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// sched_setattr(2) on thread `tid` (0 = the caller).
pub fn sched_setattr(tid: i32, attr: &SchedAttr) -> io::Result<()> {
    let mut a = *attr;
    a.size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: a valid, sized sched_attr is passed; the kernel reads `size` bytes.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &a as *const SchedAttr, 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// sched_getattr(2) on thread `tid` (0 = the caller).
pub fn sched_getattr(tid: i32) -> io::Result<SchedAttr> {
    let mut a = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: the buffer is `size` bytes long and writable.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut a as *mut SchedAttr,
            size,
            0u32,
        )
    };
    if r == 0 {
        Ok(a)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Set the calling thread's name (its comm, as tracepoints and /proc show it); at most 15 bytes.
pub fn set_thread_name(name: &str) {
    let bytes: Vec<u8> = name.bytes().take(15).take_while(|&b| b != 0).collect();
    if let Ok(name) = std::ffi::CString::new(bytes) {
        let _ = rustix::thread::set_name(&name);
    }
}

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC, shared by all processes of the machine).
pub fn monotonic_ns() -> u64 {
    clock_ns(rustix::time::ClockId::Monotonic)
}

/// CPU time of the calling thread in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(rustix::time::ClockId::ThreadCPUTime)
}

/// The calling thread's CPU time spent in `f`, in nanoseconds: time other tasks took the CPU
/// for while `f` ran is not counted (what the busy loops' calibrations time their batches by).
pub fn thread_cpu_ns_in(f: impl FnOnce()) -> u64 {
    let t0 = thread_cpu_ns();
    f();
    thread_cpu_ns().saturating_sub(t0)
}

fn clock_ns(clock: rustix::time::ClockId) -> u64 {
    let ts = rustix::time::clock_gettime(clock);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[link(name = "m")]
extern "C" {
    fn ldexp(x: f64, exp: libc::c_int) -> f64;
}

/// rt-app's busy loop, `loops` iterations of four calls of the C library's
/// `ldexp(0.95, 31129)` (each overflows to infinity and sets `errno`), as the same instruction
/// sequence rt-app 1.0's `waste_cpu_cycles` compiles to (Debian's binary, disassembled): the
/// constant loaded from memory before each call, and each call a direct call to `ldexp`'s PLT
/// stub, which jumps on through the GOT. How the call reaches `ldexp` is most of what an
/// iteration costs beside `ldexp` itself: called through a register, as rustc compiles a call of
/// an `extern` function, the same iterations took 0.93 of the time (paired 40,000-iteration
/// batches on one pinned CPU), so an assembly loop is what makes a loop count mean rt-app's time.
#[cfg(target_arch = "x86_64")]
pub fn rtapp_waste_cpu_cycles(loops: u64) {
    /// `waste_cpu_cycles`' `param`, loaded from memory before each call as rt-app's binary does.
    static PARAM: f64 = 0.95;
    if loops == 0 {
        return;
    }
    // SAFETY: the loop only calls `ldexp` (which takes its arguments in xmm0 and edi, returns
    // in xmm0, touches no memory of ours beyond `errno`, and may clobber any caller-saved
    // register: `clobber_abi("C")`); the counters are in callee-saved r12 and r13, which the
    // calls preserve; the stack is aligned for a call at the block's start (`nostack` is not
    // given) and the block pushes nothing.
    unsafe {
        std::arch::asm!(
            ".p2align 4",
            "2:",
            "mov rax, qword ptr [rip + {param}]",
            "mov edi, 0x7999",
            "add r12, 1",
            "movq xmm0, rax",
            "call {ldexp}",
            "mov rax, qword ptr [rip + {param}]",
            "mov edi, 0x7999",
            "movq xmm0, rax",
            "call {ldexp}",
            "mov rax, qword ptr [rip + {param}]",
            "mov edi, 0x7999",
            "movq xmm0, rax",
            "call {ldexp}",
            "mov rax, qword ptr [rip + {param}]",
            "mov edi, 0x7999",
            "movq xmm0, rax",
            "call {ldexp}",
            "cmp r13, r12",
            "jne 2b",
            param = sym PARAM,
            ldexp = sym ldexp,
            inout("r12") 0u64 => _,
            in("r13") loops,
            clobber_abi("C"),
        );
    }
}

/// rt-app's busy loop where no assembly copy of it is written: the same calls of the C
/// library's `ldexp`, as the compiler calls them.
#[cfg(not(target_arch = "x86_64"))]
pub fn rtapp_waste_cpu_cycles(loops: u64) {
    for _ in 0..loops {
        for _ in 0..4 {
            // SAFETY: ldexp takes two values and returns one; it touches no memory of ours
            // (only the thread's errno).
            std::hint::black_box(unsafe {
                ldexp(std::hint::black_box(0.95), std::hint::black_box(31129))
            });
        }
    }
}

/// Sleep until CLOCK_MONOTONIC reaches `deadline_ns`, resuming after signals.
pub fn sleep_until_ns(deadline_ns: u64) {
    let ts = rustix::time::Timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as _,
        tv_nsec: (deadline_ns % 1_000_000_000) as _,
    };
    while let Err(rustix::io::Errno::INTR) =
        rustix::thread::clock_nanosleep_absolute(rustix::time::ClockId::Monotonic, &ts)
    {}
}

/// The socket's send buffer in bytes (`SO_SNDBUF`: what the kernel counts queued `sk_buff`s
/// against).
pub fn send_buffer(fd: i32) -> io::Result<usize> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: value and len are valid for writes of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value.max(0) as usize)
}

/// `fd` for one call of rustix's I/O.
///
/// The channel and gate I/O go through rustix rather than libc: rustix makes the system call
/// itself, where glibc's `read` and `write` are cancellation points that, unless glibc
/// thinks the process single-threaded, switch asynchronous cancellation on and off around
/// every call — which `perf record` showed in schedlab's forked tasks (forks of a process that
/// has had threads). A single-threaded C peer (hackbench -P, perf bench) skips that; a pipe
/// message costing both a write and a read, it was 5 % of the CPU samples of
/// `messaging --transport pipe --tasks processes`.
#[inline]
fn borrow(fd: i32) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: every caller passes a descriptor it owns and keeps open until the call that
    // borrows it has returned (the channels outlive the tasks; the gate, its users); the
    // borrow is used for that one call only.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

/// Write all of `data` to `fd`, retrying on EINTR and short writes.
///
/// A message's write is whole in one call almost always (a pipe's up to PIPE_BUF, a UNIX
/// stream socket's while its buffer has room): that call is inlined into the caller and the
/// rest — a short write, EINTR, an error — is a function of its own, kept out of the path a
/// message takes (the pinned ping-pong's user-space instructions a round trip: see
/// docs/performance.md).
#[inline]
pub fn write_all(fd: i32, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    match rustix::io::write(borrow(fd), data) {
        Ok(n) if n == data.len() => Ok(()),
        first => write_rest(fd, data, first),
    }
}

/// What [`write_all`] does after a first write that did not write everything.
#[cold]
#[inline(never)]
fn write_rest(fd: i32, mut data: &[u8], mut last: rustix::io::Result<usize>) -> io::Result<()> {
    loop {
        match last {
            Ok(n) => data = &data[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        if data.is_empty() {
            return Ok(());
        }
        last = rustix::io::write(borrow(fd), data);
    }
}

/// Read exactly `buf.len()` bytes from `fd`; `UnexpectedEof` if the peer closed first.
///
/// As in [`write_all`], the first read, which takes the whole message almost always, is
/// inlined, and the rest is a function of its own.
#[inline]
pub fn read_exact(fd: i32, buf: &mut [u8]) -> io::Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    match rustix::io::read(borrow(fd), &mut *buf) {
        Ok(n) if n == buf.len() => Ok(()),
        first => read_rest(fd, buf, first),
    }
}

/// What [`read_exact`] does after a first read that did not fill `buf`.
#[cold]
#[inline(never)]
fn read_rest(fd: i32, buf: &mut [u8], mut last: rustix::io::Result<usize>) -> io::Result<()> {
    let mut done = 0;
    loop {
        match last {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "peer closed the channel",
                ))
            }
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        if done == buf.len() {
            return Ok(());
        }
        last = rustix::io::read(borrow(fd), &mut buf[done..]);
    }
}

/// Read what has arrived on `fd` (at least one byte, at most `buf.len()`), retrying on EINTR;
/// `UnexpectedEof` if the peer closed first.
pub fn read_some(fd: i32, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match rustix::io::read(borrow(fd), &mut *buf) {
            Ok(0) if !buf.is_empty() => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "peer closed the channel",
                ))
            }
            Ok(n) => return Ok(n),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Make descriptor `target` refer to what `new` does (close-on-exec), then close `new`.
pub fn replace_fd(new: i32, target: i32) -> io::Result<()> {
    // SAFETY: both are descriptors this process owns; dup3 replaces target atomically.
    let r = unsafe { libc::dup3(new, target, libc::O_CLOEXEC) };
    let e = io::Error::last_os_error();
    close(new);
    if r < 0 {
        return Err(e);
    }
    Ok(())
}

/// Wait until `fd` is readable (or hung up), at most `timeout_ms` (-1: forever), resuming after
/// signals. Returns whether it became ready.
pub fn wait_readable(fd: i32, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        match unsafe { libc::poll(&mut pfd, 1, timeout_ms) } {
            r if r > 0 => return true,
            0 => return false,
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            _ => return false,
        }
    }
}

/// Wait until at least one of `fds` is readable (or hung up, or in error: the read that
/// follows says which), or until CLOCK_MONOTONIC reaches `until_ns` (`None`: no time limit),
/// with ppoll(2)'s nanosecond timeout, resuming after signals; each `revents` says which.
pub fn poll_readable(fds: &mut [libc::pollfd], until_ns: Option<u64>) -> io::Result<()> {
    loop {
        let timeout = until_ns.map(|until| {
            let left = until.saturating_sub(monotonic_ns());
            libc::timespec {
                tv_sec: (left / 1_000_000_000) as libc::time_t,
                tv_nsec: (left % 1_000_000_000) as libc::c_long,
            }
        });
        let tp = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `fds` is a valid array of pollfds of its length; `tp` is null or points at
        // a timespec that outlives the call; no signal mask is changed.
        let r = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                tp,
                std::ptr::null(),
            )
        };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether the process behind `pidfd` has ended (the pidfd is readable), waiting at most `wait`.
/// Unlike [`wait_readable`], a signal ends the wait early (false): the caller's loop or grace
/// period decides what then.
pub fn ended_within(pidfd: i32, wait: std::time::Duration) -> bool {
    let mut fd = libc::pollfd {
        fd: pidfd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; an interrupted poll only returns early.
    let r = unsafe { libc::poll(&mut fd, 1, wait.as_millis() as libc::c_int) };
    r > 0 && fd.revents != 0
}

/// A fresh anonymous shared mapping of `bytes` (rounded up to pages by the kernel), zeroed,
/// readable and writable: memory a process shares with the children it forks.
fn shared_zeroed(bytes: usize) -> io::Result<*mut libc::c_void> {
    // SAFETY: a new mapping at an address the kernel picks; no existing memory is touched.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(ptr)
}

/// Atomic types whose all-zero bytes are a valid value (so that a zeroed mapping holds them).
pub trait ZeroIsValid: Sync + private::Sealed {}
impl ZeroIsValid for std::sync::atomic::AtomicBool {}
impl ZeroIsValid for std::sync::atomic::AtomicU64 {}
impl ZeroIsValid for std::sync::atomic::AtomicUsize {}

mod private {
    /// Only the atomics listed above are [`super::ZeroIsValid`].
    pub trait Sealed {}
    impl Sealed for std::sync::atomic::AtomicBool {}
    impl Sealed for std::sync::atomic::AtomicU64 {}
    impl Sealed for std::sync::atomic::AtomicUsize {}
}

/// `len` atomics, zero at first, in a fresh anonymous shared mapping (whole pages): the memory
/// this process shares with the children it forks, which inherit the mapping. Unmapped on drop.
pub struct SharedAtomics<A: ZeroIsValid> {
    ptr: std::ptr::NonNull<A>,
    len: usize,
    bytes: usize,
}

// SAFETY: the mapping belongs to the value and holds atomics only, which are Sync.
unsafe impl<A: ZeroIsValid> Send for SharedAtomics<A> {}
// SAFETY: as above: every access goes through the atomics.
unsafe impl<A: ZeroIsValid> Sync for SharedAtomics<A> {}

impl<A: ZeroIsValid> SharedAtomics<A> {
    /// `len` zeroed atomics (at least one page of them).
    pub fn new(len: usize) -> io::Result<SharedAtomics<A>> {
        let bytes = (len.max(1) * std::mem::size_of::<A>()).next_multiple_of(4096);
        let ptr = shared_zeroed(bytes)?;
        Ok(SharedAtomics {
            ptr: std::ptr::NonNull::new(ptr.cast()).expect("mmap does not return null"),
            len,
            bytes,
        })
    }
}

impl<A: ZeroIsValid> std::ops::Deref for SharedAtomics<A> {
    type Target = [A];

    fn deref(&self) -> &[A] {
        // SAFETY: the mapping is page-aligned, at least `len` atomics long, zeroed (a valid
        // value of each, `ZeroIsValid`) and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<A: ZeroIsValid> Drop for SharedAtomics<A> {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `new`; no reference into it outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.bytes) };
    }
}

/// A pipe as (read end, write end), close-on-exec.
pub fn pipe() -> io::Result<(i32, i32)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid 2-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Close a file descriptor, ignoring errors.
pub fn close(fd: i32) {
    // SAFETY: closing an fd we own.
    unsafe { libc::close(fd) };
}

/// Start `command` in a process group of its own (so that it and everything it starts can be
/// signalled together) that gets SIGTERM when this process dies (PR_SET_PDEATHSIG; and exits at
/// once if we already died between fork and exec).
pub fn own_group_ending_with_us(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as i32;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Send signal `sig` to process `pid` (a negative `pid`: to process group `-pid`).
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A pidfd of our child `pid` (pidfd_open(2), Linux 5.3 or later): readable once it has ended.
pub fn pidfd_open(pid: i32) -> io::Result<i32> {
    // SAFETY: pidfd_open takes plain integers and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Send signal `sig` to the process behind `pidfd` (pidfd_send_signal(2)): unlike a pid, a
/// pidfd cannot name another process once ours is reaped.
pub fn pidfd_kill(pidfd: i32, sig: i32) -> io::Result<()> {
    // SAFETY: no siginfo is passed (null), the rest are plain integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd,
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A pidfd for `pid`, our own child (started with [`own_group_ending_with_us`]) not yet reaped;
/// if none can be opened, the child's group is ended and the child reaped before the error is
/// returned, so that nothing is left running.
pub fn pidfd_of_child(pid: i32) -> io::Result<i32> {
    pidfd_open(pid).inspect_err(|_| {
        let _ = kill(-pid, libc::SIGKILL);
        let _ = waitpid(pid, 0);
    })
}

/// Reap our child `pid` (waitpid(2) with `flags`), resuming after signals: its wait status.
pub fn waitpid(pid: i32, flags: i32) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid int to fill.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r == pid || (pid < 0 && r > 0) {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Reap our child `pid` (wait4(2)), resuming after signals: its wait status and CPU time (its
/// own and that of the descendants it waited for).
pub fn wait4(pid: i32) -> io::Result<(i32, std::time::Duration)> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid out-parameters.
        if unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
    let tv = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok((status, tv(usage.ru_utime) + tv(usage.ru_stime)))
}

/// The calling thread's resource usage (getrusage(RUSAGE_THREAD)).
pub fn thread_rusage() -> libc::rusage {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer to fill.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru
}

/// CPU time (user + system) of this process's threads and of its children that have been
/// waited for: getrusage(RUSAGE_SELF) + getrusage(RUSAGE_CHILDREN).
pub fn own_and_children_cpu_time() -> std::time::Duration {
    let tv = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let mut total = std::time::Duration::ZERO;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: an all-zero rusage is a valid value of this plain C struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: a valid `who` with a valid pointer to fill.
        unsafe { libc::getrusage(who, &mut ru) };
        total += tv(ru.ru_utime) + tv(ru.ru_stime);
    }
    total
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, the unit of /proc's CPU times); at least 1.
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64
}

/// Let a timed sleep of the calling thread end up to `ns` late (its timer slack,
/// PR_SET_TIMERSLACK; the kernel's default is 50 µs); `ns` at the least 1 (0 would mean the
/// thread's default). The kernel ignores it for a real-time thread.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: plain prctl on the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns.max(1) as libc::c_ulong) };
}

/// The calling thread's timer slack, ns (PR_GET_TIMERSLACK).
pub fn timer_slack_ns() -> u64 {
    // SAFETY: plain prctl on the calling thread; it returns the slack.
    let ns = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
    ns.max(0) as u64
}

/// Give up the CPU (sched_yield(2)): rustix's system call, inlined into the yield loop, where
/// libc's is a call through the PLT to a wrapper.
#[inline]
pub fn sched_yield() {
    rustix::thread::sched_yield();
}

/// The CPU the calling thread runs on (sched_getcpu(3)); `None` if the kernel cannot say.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments and touches no memory of ours.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// In a child just forked from process `parent`: get `sig` when the parent dies
/// (PR_SET_PDEATHSIG), and leave at once if it already has.
pub fn die_with_parent(parent: i32, sig: i32) {
    // SAFETY: prctl and getppid on ourselves.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

/// Leave the process at once with `code`, running no destructor or atexit handler (a forked
/// child must not run its parent's).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit ends the process; nothing after it runs.
    unsafe { libc::_exit(code) }
}

/// Wait until one of `fds` has an event, at most `timeout_ms` (-1: forever); how many have one
/// (0: timeout), or the error (EINTR included: the caller decides whether to wait again).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: `fds` is a valid array of pollfds of its length.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// Write `s` to standard error in one write(2), without Rust's stderr lock (another thread may
/// have held it when this process was forked).
pub fn write_stderr(s: &str) {
    // SAFETY: writing our own buffer to fd 2.
    unsafe { libc::write(2, s.as_ptr().cast(), s.len()) };
}

/// The parent's process id, through libc's getppid(2) (the calibration's cheapest system call:
/// it must stay the same call whatever this module uses elsewhere).
pub fn getppid() -> i32 {
    // SAFETY: getppid has no arguments and cannot fail.
    unsafe { libc::getppid() }
}

/// Put process `pid` (0: the caller) in process group `pgid` (setpgid(2); async-signal-safe).
pub fn setpgid(pid: i32, pgid: i32) -> io::Result<()> {
    // SAFETY: setpgid takes plain integers and touches no memory of ours.
    if unsafe { libc::setpgid(pid, pgid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this process is a child subreaper (PR_GET_CHILD_SUBREAPER).
pub fn child_subreaper() -> io::Result<bool> {
    let mut was: libc::c_int = 0;
    // SAFETY: `was` is a valid int for the kernel to fill.
    if unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut was as *mut libc::c_int) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(was != 0)
}

/// Make this process a child subreaper or not (PR_SET_CHILD_SUBREAPER): orphans of its
/// descendants are re-parented to it.
pub fn set_child_subreaper(on: bool) -> io::Result<()> {
    // SAFETY: plain prctl on this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, libc::c_ulong::from(on)) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// How our child `pid` ended, if it has, without reaping it (waitid(2) with `WNOWAIT`), as
/// (`si_code`, status or signal): its pid keeps naming it until it is reaped.
pub fn ended_unreaped(pid: i32) -> Option<(i32, i32)> {
    // SAFETY: an all-zero siginfo_t is valid; waitid only writes into it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: waitid filled in a child's fields (si_pid stays 0 while the child lives).
    let (found, status) = unsafe { (info.si_pid(), info.si_status()) };
    (r == 0 && found == pid).then_some((info.si_code, status))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The channel I/O (rustix's system calls) keeps libc's contract: a message written in
    /// pieces is read whole, a closed peer is an end of file, a closed reader a broken pipe.
    #[test]
    fn channel_io_reads_whole_messages_and_names_a_closed_peer() {
        let (r, w) = pipe().unwrap();
        write_all(w, b"he").unwrap();
        write_all(w, b"llo").unwrap();
        let mut buf = [0u8; 5];
        read_exact(r, &mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        // A message that arrives in two parts: the first read returns part of it, the rest
        // is waited for.
        write_all(w, b"wo").unwrap();
        let late = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            write_all(w, b"rld").unwrap();
        });
        read_exact(r, &mut buf).unwrap();
        assert_eq!(&buf, b"world");
        late.join().unwrap();
        write_all(w, b"abc").unwrap();
        let mut big = [0u8; 16];
        assert_eq!(
            read_some(r, &mut big).unwrap(),
            3,
            "what has arrived, no more"
        );
        assert_eq!(&big[..3], b"abc");
        write_all(w, b"x").unwrap();
        close(w);
        let mut two = [0u8; 2];
        let e = read_exact(r, &mut two).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
        let e = read_some(r, &mut two).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
        close(r);

        let (r, w) = pipe().unwrap();
        close(r);
        // Rust programs ignore SIGPIPE, so the write fails with EPIPE instead.
        let e = write_all(w, b"lost").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPIPE), "{e}");
        close(w);
    }

    #[test]
    fn rtapp_busy_loop_calls_ldexp_with_rt_apps_arguments() {
        // ldexp(0.95, 31129) overflows and sets errno to ERANGE; with another exponent in edi
        // (a wrong register or value) it would not overflow and errno would stay 0. No
        // iteration, no call.
        let errno = || std::io::Error::last_os_error().raw_os_error();
        // SAFETY: the thread's own errno, written before the calls that may set it.
        let clear = || unsafe { *libc::__errno_location() = 0 };
        clear();
        rtapp_waste_cpu_cycles(0);
        assert_eq!(errno(), Some(0), "no iteration calls ldexp");
        rtapp_waste_cpu_cycles(3);
        assert_eq!(errno(), Some(libc::ERANGE), "ldexp(0.95, 31129) overflows");
        // The counters survive the calls: a million iterations end (about 20 ms).
        clear();
        rtapp_waste_cpu_cycles(1_000_000);
        assert_eq!(errno(), Some(libc::ERANGE));
    }
}
