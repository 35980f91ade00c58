#!/usr/bin/env python3
"""The BPF recorder's programs' own run time, by the kernel's accounting: with BPF_ENABLE_STATS
held by this process's file descriptor (no sysctl), record CMD through BPF and sample
`bpftool prog show` 1 s and 3 s after it starts (CMD must run longer than that). The statistics
add about 40 ns a run themselves. Needs root and bpftool (apt-get install bpftool).

Several binaries (SCHEDLAB separated by colons) are measured in turn, ROUNDS times (default 1),
in an order that rotates from round to round; each program's line then gives every binary's
median ns a run over the rounds and its ratio to the first binary's.

Usage: [ROUNDS=N] [RECORD_FLAGS=--data-flow] bench/record-bpf-stats.py SCHEDLAB[:SCHEDLAB...] CMD ARGS...
"""
import ctypes, json, os, shutil, statistics, subprocess, sys, tempfile, time

# The recorder's program names (bpftool shows the first 15 characters of a name); whole names
# where they are short, so that another tool's programs created meanwhile (an on_wakeup, say)
# are not counted as the recorder's.
PROGRAMS = ("on_switch", "on_waking", "on_fork", "on_exit", "on_migrate", "on_sock_",
            "pipe_read_", "pipe_write_", "unix_recv_", "unix_send_")

libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.c_uint32(0)  # BPF_STATS_RUN_TIME
fd = libc.syscall(321, 32, ctypes.byref(attr), 4)  # SYS_bpf, BPF_ENABLE_STATS
if fd < 0:
    sys.exit(f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())} (needs root)")
if len(sys.argv) < 3:
    sys.exit(__doc__)
binaries, cmd = sys.argv[1].split(":"), sys.argv[2:]
rounds = os.environ.get("ROUNDS", "1")
if not rounds.isdigit() or not 1 <= int(rounds) <= 100:
    sys.exit(f"record-bpf-stats.py: ROUNDS={rounds!r}: a whole number from 1 to 100")
rounds = int(rounds)
for b in binaries:
    if not os.access(b, os.X_OK):
        sys.exit(f"record-bpf-stats.py: {b!r} is not an executable schedlab")
flags = os.environ.get("RECORD_FLAGS", "").split()
work = tempfile.mkdtemp()


def progs():
    return json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))


def one(schedlab):
    """{program: ns a run} over 2 s of one recording of CMD by `schedlab`."""
    out = os.path.join(work, "stats.toml")
    before = {q["id"] for q in progs()}
    p = subprocess.Popen([schedlab, "record", "--source", "bpf", *flags, "-o", out, "--"] + cmd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sample():
        return {q["name"]: (q.get("run_cnt", 0), q.get("run_time_ns", 0)) for q in progs()
                if q.get("name", "").startswith(PROGRAMS) and q.get("type") == "tracing"
                and q["id"] not in before
                and any(x.get("pid") == p.pid for x in q.get("pids", [{"pid": p.pid}]))}

    time.sleep(1.0)
    a = sample()
    time.sleep(2.0)
    b = sample()
    p.wait()
    got = {}
    for name in b:
        dn = b[name][0] - a.get(name, (0, 0))[0]
        dt = b[name][1] - a.get(name, (0, 0))[1]
        if dn > 0:
            got[name] = (dn, dt / dn)
    return got


try:
    results = {b: [] for b in binaries}
    for r in range(rounds):
        for k in range(len(binaries)):
            b = binaries[(r + k) % len(binaries)]
            results[b].append(one(b))
finally:
    shutil.rmtree(work, ignore_errors=True)
print(f"# {' '.join(cmd)}; {rounds} round(s); load average {os.getloadavg()[0]:.2f} at the end")
names = sorted({n for rs in results.values() for r in rs for n in r})
for name in names:
    cells = []
    base = None
    for b in binaries:
        ns = [r[name][1] for r in results[b] if name in r]
        runs = [r[name][0] for r in results[b] if name in r]
        if not ns:
            cells.append(f"{os.path.basename(b)}: not run")
            continue
        m = statistics.median(ns)
        base = m if base is None else base
        cells.append(f"{os.path.basename(b)} {m:6.1f} ns a run ({statistics.median(runs):.0f} runs in 2 s)"
                     + ("" if b == binaries[0] else f" ×{m / base:.3f}"))
    print(f"{name:16} " + "; ".join(cells))
