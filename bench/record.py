#!/usr/bin/env python3
"""Accuracy of `schedlab record` (bench/record.sh): a recorded run against its replay.

Usage: record.py ORIGINAL.json REPLAY.json [TRACED_REPLAY.json] [UNTRACED_WALL_S]

ORIGINAL.json is the recorded run's own record (`schedlab record --json`); REPLAY.json the
replay's (`schedlab run FILE.toml --json`: medians over its repetitions); TRACED_REPLAY.json a
replay recorded in turn (`schedlab record --json -- schedlab run FILE.toml`), whose
wakeup-latency distribution is measured the same way as the original's: the Kolmogorov-Smirnov
distance is between those two (exact over their HDR histograms, 1 us resolution below 2 ms).
Prints one row per quantity: recorded, replayed, replayed/recorded; then per-task CPU time.
"""
import json
import statistics
import sys


def pooled(record):
    """The wakeup-latency histogram of a record's first configuration, repetitions pooled."""
    buckets = {}
    for rep in record["configs"][0]["repetitions"]:
        for value, count in (rep.get("wakeup_latency") or {}).get("buckets", []):
            buckets[value] = buckets.get(value, 0) + count
    return sorted(buckets.items())


def ks(a, b):
    """Two-sample Kolmogorov-Smirnov distance between two histograms [(value, count)]."""
    na, nb = sum(c for _, c in a), sum(c for _, c in b)
    if not na or not nb:
        return float("nan")
    values = sorted({v for v, _ in a} | {v for v, _ in b})
    da, db = dict(a), dict(b)
    ca = cb = 0
    d = 0.0
    for v in values:
        ca += da.get(v, 0)
        cb += db.get(v, 0)
        d = max(d, abs(ca / na - cb / nb))
    return d


def main():
    orig = json.load(open(sys.argv[1]))
    replay = json.load(open(sys.argv[2]))
    traced = json.load(open(sys.argv[3])) if len(sys.argv) > 3 and sys.argv[3] != "-" else None
    untraced = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else None
    o = orig["configs"][0]["repetitions"][0]
    reps = replay["configs"][0]["repetitions"]

    def med(group, key):
        vals = [x["counters"][group][key] for x in reps if group in x["counters"]]
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else float("nan")

    ot = o["counters"]["total"]
    rows = [("wall time s (traced run)", o["metrics"]["time"], statistics.median(x["metrics"]["time"] for x in reps))]
    if untraced is not None:
        rows.append(("wall time s (untraced runs, median)", untraced, rows[0][2]))
    rows += [
        ("voluntary switches", ot["voluntary_switches"], med("total", "voluntary_switches")),
        ("involuntary switches", ot["involuntary_switches"], med("total", "involuntary_switches")),
        ("wakeups", ot["wakeups"], med("total", "wakeups")),
        ("CPU time s, all tasks", ot["cpu_time_s"], med("total", "cpu_time_s")),
    ]
    print(f"  {'':38} {'recorded':>12} {'replayed':>12} {'ratio':>8}")
    for name, a, b in rows:
        ratio = b / a if a else float("nan")
        print(f"  {name:38} {a:12.4g} {b:12.4g} {ratio:8.3f}")
    groups = [g for g in o["counters"] if g != "total"]
    big = [(g, o["counters"][g]["cpu_time_s"]) for g in groups if o["counters"][g]["cpu_time_s"] > 1e-3]
    devs = sorted(((med(g, "cpu_time_s") / c - 1) * 100, g) for g, c in big)
    if devs:
        worst = max(devs, key=lambda d: abs(d[0]))
        within = sum(1 for d, _ in devs if abs(d) <= 5)
        print(
            f"  per-task CPU time (groups over 1 ms): {within} of {len(devs)} within 5 %, largest deviation {worst[0]:+.1f} % ({worst[1]}); {len(reps)} replays"
        )
        # Each task's ratio, the largest recorded CPU first (the 8 largest): named by its
        # program's name without the thread id, and its rank among the tasks of that name.
        ranked = sorted(big, key=lambda x: -x[1])[:8]
        seen = {}
        cells = []
        for g, c in ranked:
            name = g.rsplit("_", 1)[0]
            seen[name] = seen.get(name, 0) + 1
            cells.append(f"{name}#{seen[name]} {med(g, 'cpu_time_s') / c:.3f} ({c * 1e3:.1f} ms)")
        print(f"  per-task replayed/recorded CPU: {', '.join(cells)}")
    if traced is not None:
        a, b = pooled(orig), pooled(traced)
        na, nb = sum(c for _, c in a), sum(c for _, c in b)
        print(f"  wakeup latency: Kolmogorov-Smirnov distance {ks(a, b):.3f} (recorded {na} wakeups, traced replay {nb})")


main()
