#!/usr/bin/env python3
"""Accuracy of `schedlab record` (bench/record.sh): a recorded workload file against its replay.

Usage: record.py FILE.toml REPLAY.json [UNTRACED_WALL_S]

From the file: the recorded wall time, context switches and wakeups (its header) and each
group's CPU time (its compute steps, times their loops and the group's count). From the replay's
run record: the median wall time (`time`) over its repetitions, and each group's counters.
Prints one row per quantity: recorded, replayed, replayed/recorded.
"""
import json
import re
import statistics
import sys
import tomllib


def dur_s(text):
    m = re.fullmatch(r"([0-9.]+)(ns|us|ms|s)", text)
    return float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def cpu_of(steps):
    total = 0.0
    for s in steps:
        if isinstance(s, dict) and "compute" in s:
            total += dur_s(s["compute"])
        elif isinstance(s, dict) and "loop" in s:
            total += s["loop"] * cpu_of(s["steps"])
    return total


def main():
    path, replay = sys.argv[1], sys.argv[2]
    untraced = float(sys.argv[3]) if len(sys.argv) > 3 else None
    text = open(path).read()
    f = tomllib.loads(text)
    wall = float(re.search(r", ([0-9.]+) s recorded", text).group(1))
    vol, invol, wake = map(
        int,
        re.search(
            r"# Recorded: (\d+) voluntary and (\d+) involuntary context switches, (\d+) wakeups",
            text,
        ).groups(),
    )
    rec_cpu = {g: cpu_of(d["steps"]) * d.get("count", 1) for g, d in f["groups"].items()}
    r = json.load(open(replay))
    reps = r["configs"][0]["repetitions"]
    time = statistics.median(x["metrics"]["time"] for x in reps)

    def med(group, key):
        vals = [x["counters"][group][key] for x in reps if group in x["counters"]]
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else float("nan")

    groups = list(f["groups"])
    rvol = sum(med(g, "voluntary_switches") for g in groups)
    rinv = sum(med(g, "involuntary_switches") for g in groups)
    rwake = sum(med(g, "wakeups") for g in groups)
    rows = [("wall time s (traced run)", wall, time)]
    if untraced is not None:
        rows.append(("wall time s (untraced runs, median)", untraced, time))
    rows += [
        ("voluntary switches", vol, rvol),
        ("involuntary switches", invol, rinv),
        ("wakeups", wake, rwake),
        ("CPU time s, all tasks", sum(rec_cpu.values()), sum(med(g, "cpu_time_s") for g in groups)),
    ]
    worst = max(
        (abs(med(g, "cpu_time_s") / rec_cpu[g] - 1), g)
        for g in groups
        if rec_cpu[g] > 1e-3
    ) if any(rec_cpu[g] > 1e-3 for g in groups) else (float("nan"), "-")
    print(f"  {'':38} {'recorded':>12} {'replayed':>12} {'ratio':>8}")
    for name, a, b in rows:
        ratio = b / a if a else float("nan")
        print(f"  {name:38} {a:12.4g} {b:12.4g} {ratio:8.3f}")
    print(
        f"  per-task CPU time (tasks over 1 ms): largest deviation {worst[0] * 100:.1f} % ({worst[1]}), {len(reps)} replays"
    )


main()
