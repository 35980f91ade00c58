#!/usr/bin/env python3
"""What the benchmarked task of a simulated `interbench` run waits for, from its exact timeline.

Reads the events a `schedlab run interbench --backend sim --timeline FILE.svg` run leaves in
FILE.events/ (one file per configuration and repetition) and prints, per file:

- per task group (bench, timer, load, loadtimer, kernel: kswapd and the like): tasks, CPU
  time, wakeups, and the wait from a wakeup to the first run (mean and longest, ms);
- for the benchmarked task: the time it was runnable but not running, split by the group that
  ran meanwhile; how many timer ticks fell while it ran, per wakeup (a tick-sampled scheduler
  charges its timeslice by these; the ticks' phase is found from the switches at ticks);
- its waits longer than --long ms: when each began, how long it was, and who ran.

  bench/seed004_why.py --hz 1000 [--long 100] DIR.events/C0-R0.txt ...
"""

import argparse
import collections

KERNEL = "kernel"


def group_names(headers):
    """Each task's group: the header's, or `kernel` for the machine's own threads."""
    out = {}
    for task, group in headers:
        out[task] = KERNEL if group in ("-", "?", "18446744073709551615") else group
    return out


def tick_phase(switches, tick):
    """The most common residue modulo the tick of the times one load task was switched out for
    another (slice expiries and round robins happen at ticks), rounded to 10 us."""
    residues = collections.Counter((t % tick) // 10_000 for t in switches)
    if not residues:
        return 0
    return residues.most_common(1)[0][0] * 10_000


def analyse(path, hz, long_ms):
    tick = 1_000_000_000 // hz
    headers = []
    events = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                parts = line.split()
                if len(parts) >= 4 and parts[1] == "task":
                    headers.append((int(parts[2]), parts[3]))
                continue
            t_s, task_s, _cpu, st = line.split()
            events.append((int(t_s), int(task_s), st))
    group = group_names(headers)
    bench = [t for t, g in group.items() if g == "bench"]
    if len(bench) != 1:
        raise SystemExit(f"seed004_why.py: {path}: expected one task in group bench")
    bench = bench[0]

    state = {}
    since = {}
    cpu_ns = collections.Counter()
    wakeups = collections.Counter()
    waits = collections.defaultdict(list)
    woke_at = {}
    running = None  # the task on the (one) CPU
    bench_wait_start = None
    bench_wait_by = collections.Counter()
    wait_by_now = collections.Counter()
    long_waits = []
    bench_runs = []  # (start, end) of the bench task's runs
    switches_out = []
    load_out_at = None
    last_t = 0

    def credit(t):
        # Time since last_t goes to whoever runs, and to the bench task's wait split.
        if bench_wait_start is not None and running is not None:
            wait_by_now[group[running]] += t - last_t
        elif bench_wait_start is not None:
            wait_by_now["idle"] += t - last_t

    for t, task, st in events:
        credit(t)
        last_t = t
        prev = state.get(task, "-")
        g = group.get(task, KERNEL)
        if prev == "R":
            cpu_ns[g] += t - since[task]
            if task == running:
                running = None
            if task == bench:
                bench_runs.append((since[task], t))
            if st == "W" and g == "load":
                load_out_at = t
        if prev == "-" and st in ("W", "R"):
            wakeups[g] += 1
            woke_at[task] = t
        if st == "R":
            if g == "load" and load_out_at is not None and load_out_at >= t - 20_000:
                # One load task to another: a slice expiry or round robin, at a tick.
                switches_out.append(load_out_at)
            load_out_at = None
            running = task
            if task in woke_at:
                waits[g].append(t - woke_at.pop(task))
        if task == bench:
            if st == "W" and bench_wait_start is None:
                bench_wait_start = t
                wait_by_now.clear()
            elif st != "W" and bench_wait_start is not None:
                length = t - bench_wait_start
                for k, v in wait_by_now.items():
                    bench_wait_by[k] += v
                if length >= long_ms * 1_000_000:
                    long_waits.append((bench_wait_start, length, dict(wait_by_now)))
                bench_wait_start = None
        state[task] = st
        since[task] = t

    phase = tick_phase(switches_out, tick)
    ticks = 0
    for a, b in bench_runs:
        # Ticks at phase + k * tick inside [a, b).
        first = (a - phase + tick - 1) // tick
        last = (b - 1 - phase) // tick
        ticks += max(0, last - first + 1)

    print(f"== {path}")
    print(f"{'group':<10} {'tasks':>5} {'CPU s':>8} {'wakeups':>8} {'wait ms':>8} {'max ms':>8}")
    for g in sorted(set(group.values())):
        n = sum(1 for x in group.values() if x == g)
        w = waits.get(g, [])
        mean = sum(w) / len(w) / 1e6 if w else 0.0
        top = max(w) / 1e6 if w else 0.0
        print(f"{g:<10} {n:>5} {cpu_ns[g] / 1e9:>8.3f} {wakeups[g]:>8} {mean:>8.3f} {top:>8.3f}")
    total_wait = sum(bench_wait_by.values())
    split = ", ".join(
        f"{k} {v / 1e9:.3f} s" for k, v in sorted(bench_wait_by.items(), key=lambda kv: -kv[1])
    )
    print(f"bench runnable, not running: {total_wait / 1e9:.3f} s ({split})")
    nw = wakeups["bench"] or 1
    print(
        f"bench ticks while running: {ticks} in {len(bench_runs)} runs, "
        f"{ticks / nw:.2f} per wakeup (HZ {hz}, tick phase {phase / 1e3:.0f} us)"
    )
    print(f"bench waits of {long_ms} ms or more: {len(long_waits)}")
    for start, length, by in long_waits[:40]:
        who = ", ".join(f"{k} {v / 1e6:.0f}" for k, v in sorted(by.items(), key=lambda kv: -kv[1]))
        print(f"  at {start / 1e9:8.3f} s  {length / 1e6:8.1f} ms  ({who} ms)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hz", type=int, required=True, help="the simulated tick rate")
    ap.add_argument("--long", type=float, default=100.0, help="list waits of this many ms or more")
    ap.add_argument("events", nargs="+")
    a = ap.parse_args()
    if a.hz <= 0 or a.long <= 0:
        raise SystemExit(f"seed004_why.py: --hz and --long must be positive, not {a.hz}, {a.long}")
    for p in a.events:
        analyse(p, a.hz, a.long)


if __name__ == "__main__":
    main()
