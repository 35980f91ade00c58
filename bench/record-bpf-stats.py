#!/usr/bin/env python3
"""The BPF recorder's programs' own run time, by the kernel's accounting: with BPF_ENABLE_STATS
held by this process's file descriptor (no sysctl), record CMD through BPF and sample
`bpftool prog show` 1 s and 3 s after it starts (CMD must run longer than that). The statistics
add about 40 ns a run themselves. Needs root and bpftool (apt-get install bpftool).

Usage: bench/record-bpf-stats.py SCHEDLAB CMD ARGS...
"""
import ctypes, json, os, subprocess, sys, tempfile, time
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.c_uint32(0)  # BPF_STATS_RUN_TIME
fd = libc.syscall(321, 32, ctypes.byref(attr), 4)  # SYS_bpf, BPF_ENABLE_STATS
if fd < 0:
    sys.exit(f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())} (needs root)")
if len(sys.argv) < 3:
    sys.exit(__doc__)
schedlab, cmd = sys.argv[1], sys.argv[2:]
out = os.path.join(tempfile.mkdtemp(), "stats.toml")
before = {q["id"] for q in json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))}
p = subprocess.Popen([schedlab, "record", "--source", "bpf", "-o", out, "--"] + cmd,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def sample():
    progs = json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))
    return {q["name"]: (q.get("run_cnt", 0), q.get("run_time_ns", 0)) for q in progs
            if q.get("name", "").startswith("on_") and q.get("type") == "tracing" and q["id"] not in before}
time.sleep(1.0)
a = sample(); t0 = time.time()
time.sleep(2.0)
b = sample()
p.wait()
for name in sorted(b):
    dn = b[name][0] - a.get(name, (0, 0))[0]; dt = b[name][1] - a.get(name, (0, 0))[1]
    print(f"{name:12} {dn:9d} runs in 2 s, {dt / max(dn, 1):6.1f} ns a run")
