#!/usr/bin/env python3
"""The in-kernel wakeup counters' own run time, by the kernel's accounting: with BPF_ENABLE_STATS
held by this process's file descriptor (no sysctl), run CMD (a schedlab command with its default
counters) and sample `bpftool prog show` 1 s and 3 s after it starts (CMD must run longer than
that); print each new `on_*` program's runs in those 2 s and its nanoseconds a run. The
statistics add about 40 ns a run themselves. Needs root and bpftool (apt-get install bpftool).

Usage: bench/counters-bpf-stats.py CMD ARGS...
  e.g. bench/counters-bpf-stats.py target/release/schedlab run pingpong --loops 400000 \\
         --tasks processes --group ping:cpus=0 --group pong:cpus=1 --runs 1 --quiet
"""
import ctypes, json, os, subprocess, sys, time

if len(sys.argv) < 2:
    sys.exit(__doc__)
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.c_uint32(0)  # BPF_STATS_RUN_TIME
fd = libc.syscall(321, 32, ctypes.byref(attr), 4)  # SYS_bpf, BPF_ENABLE_STATS
if fd < 0:
    sys.exit(f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())} (needs root)")


def progs():
    return json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))


before = {q["id"] for q in progs()}
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def sample():
    return {q["name"]: (q.get("run_cnt", 0), q.get("run_time_ns", 0)) for q in progs()
            if q.get("name", "").startswith("on_") and q["id"] not in before}


time.sleep(1.0)
a = sample()
time.sleep(2.0)
b = sample()
p.wait()
load = open("/proc/loadavg").read().split()[0]
for name in sorted(b):
    dn = b[name][0] - a.get(name, (0, 0))[0]
    dt = b[name][1] - a.get(name, (0, 0))[1]
    print(f"{name:12} {dn:9d} runs in 2 s, {dt / max(dn, 1):6.1f} ns a run (load {load})")
