#!/usr/bin/env python3
"""Summarise bench/record-ab.sh's rounds: per program and binary (A, B), the median of the
replayed / recorded CPU time of all tasks and of the tasks within +-5 % of their recorded CPU
time (as a share), each round's figures beside them, and B's medians over A's.

Reads the rounds' bench/record.sh output on standard input, each round after a line
`### SIDE round N load L`.
"""
import re
import statistics
import sys

rows = {}  # (program, side) -> list of (cpu ratio, within, tasks, load)
tasks = {}  # (program, task, side) -> list of replayed / recorded CPU
side = load = program = None
ratio = None
for line in sys.stdin:
    m = re.match(r"### (\w) round \d+ load (\S+)", line)
    if m:
        side, load = m.group(1), m.group(2)
        continue
    m = re.match(r"== ([^:]+):", line)
    if m:
        program, ratio = m.group(1), None
        continue
    m = re.match(r"\s+CPU time s, all tasks\s+\S+\s+\S+\s+(\S+)", line)
    if m:
        ratio = float(m.group(1))
        continue
    m = re.match(r"\s+per-task replayed/recorded CPU: (.*)", line)
    if m and side and program:
        for cell in m.group(1).split(", "):
            name, r = cell.split()[:2]
            tasks.setdefault((program, name, side), []).append(float(r))
        continue
    m = re.search(r"per-task CPU time .*?: (\d+) of (\d+) within 5 %", line)
    if m and side and program and ratio is not None:
        rows.setdefault((program, side), []).append((ratio, int(m.group(1)), int(m.group(2)), load))

if not rows:
    sys.exit("record_ab.py: no rows (did bench/record.sh run? see its output above)")
print(f"{'program':28} {'side':4} {'CPU ratio':>9} {'within 5 %':>10}  rounds (CPU ratio, tasks within, load)")
programs = sorted({p for p, _ in rows})
for p in programs:
    med = {}
    for s in ("A", "B"):
        r = rows.get((p, s), [])
        if not r:
            continue
        c = statistics.median(x[0] for x in r)
        w = statistics.median(x[1] / x[2] for x in r if x[2])
        med[s] = (c, w)
        each = ", ".join(f"{x[0]:.3f} {x[1]}/{x[2]} @{x[3]}" for x in r)
        print(f"{p:28} {s:4} {c:9.3f} {w * 100:9.0f}%  {each}")
    if len(med) == 2:
        print(f"{p:28} {'B/A':4} {med['B'][0] / med['A'][0]:9.3f} {(med['B'][1] - med['A'][1]) * 100:+9.0f}pt")

if tasks:
    print()
    print("per task (the 8 largest of each program by recorded CPU; name#rank among tasks of that name):")
    print(f"{'program':28} {'task':24} {'A median':>9} {'B median':>9}  rounds A | B")
    for p, t in sorted({(p, t) for p, t, _ in tasks}):
        a, b = tasks.get((p, t, "A"), []), tasks.get((p, t, "B"), [])
        fmt = lambda v: f"{statistics.median(v):9.3f}" if v else f"{'-':>9}"
        each = lambda v: " ".join(f"{x:.3f}" for x in v)
        print(f"{p:28} {t:24} {fmt(a)} {fmt(b)}  {each(a)} | {each(b)}")
