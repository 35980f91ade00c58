#!/usr/bin/env python3
"""A command's wall time from fork to exit, in seconds (its output discarded): the untraced
side of bench/record-cost.sh, timed the way `schedlab record` times the program it records.

Usage: record-wall.py CMD ARGS...
"""
import subprocess
import sys
import time

t0 = time.monotonic_ns()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
print(f"{(time.monotonic_ns() - t0) / 1e9:.6f}")
