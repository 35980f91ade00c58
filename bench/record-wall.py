#!/usr/bin/env python3
"""A command's wall time from fork to exit, in seconds (its output discarded): the untraced
side of bench/record-cost.sh, timed the way `schedlab record` times the program it records.
With --cpu, the CPU time (user + system) of the command and the children it waited for
instead (with --both, the wall time and then the CPU time, on one line): what the program's own tasks were charged, which on a loaded machine leaves out the
time other processes held its CPUs (and holds the BPF recorder's programs, which run in the
context of the tasks they record). With --out FILE the figure goes to FILE instead of standard
output (for a run inside `schedlab record`, whose output is discarded).

Usage: record-wall.py [--cpu | --both] [--out FILE] CMD ARGS...
"""
import resource
import subprocess
import sys
import time

args = sys.argv[1:]
cpu = both = out = None
while args and args[0] in ("--cpu", "--both", "--out"):
    if args[0] == "--cpu":
        cpu, args = True, args[1:]
    elif args[0] == "--both":
        both, args = True, args[1:]
    elif len(args) > 1:
        out, args = args[1], args[2:]
    else:
        sys.exit("record-wall.py: --out needs a file name")
if not args:
    sys.exit(__doc__)
t0 = time.monotonic_ns()
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
wall = (time.monotonic_ns() - t0) / 1e9
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu_s = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
if both:
    text = f"{wall:.6f} {cpu_s:.6f}\n"
else:
    text = f"{cpu_s if cpu else wall:.6f}\n"
if out:
    with open(out, "w", encoding="ascii") as f:
        f.write(text)
else:
    sys.stdout.write(text)
