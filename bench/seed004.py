#!/usr/bin/env python3
"""Seed 004 (Con Kolivas's interbench tables, 2.6.14 against 2.6.14-ck4) beside the simulation:
per row the seed's and the simulated % of deadlines met for O(1) and staircase, the distance,
and whether the seed's asterisk (the kernel significantly better in that row) is where the
simulation's `*` is.

  bench/seed004.py [NICE19 NICE_5]

NICE19 and NICE_5 are files with what the commands of docs/experiments.md's `seed004-nice19`
and `seed004-nice-5` blocks print (a `schedlab sweep interbench ... --vary
policy=o1,staircase`); without them, the blocks' outputs in docs/experiments.md are read. The
seed's table is read from the same document (the fenced block that starts with the line
`bench nice 19, loads nice 0`).

Printed: one line per (table, row) with both kernels' seed and simulated figures and the
absolute differences in points; per table and policy the mean distance; the four rows the
issue calls outliers; and per table how many of the seed's asterisk rows the simulation marks
on the same side.
"""
import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "experiments.md"
OUTLIERS = [
    ("nice19", "Video", "X", "staircase"),
    ("nice-5", "X", "Memload", "staircase"),
    ("nice-5", "Audio", "Burn", "o1"),
    ("nice-5", "Video", "Burn", "o1"),
    ("nice-5", "X", "Burn", "o1"),
]


def seed_table(doc):
    """{(table, bench, load): {"o1": (pct, star), "staircase": (pct, star)}}"""
    lines = doc.splitlines()
    start = next(i for i, l in enumerate(lines) if "bench nice 19, loads nice 0" in l)
    out = {}
    for line in lines[start + 2:]:
        if line.startswith("```"):
            break
        m = re.match(r"(\w+)\s+(\w+)\s+(.*)$", line)
        if not m:
            continue
        cells = re.findall(r"([\d.]+)( \*)?", m.group(3))
        if len(cells) != 4:
            raise SystemExit(f"seed004.py: cannot read the seed's row: {line!r}")
        vals = [(float(v), bool(s)) for v, s in cells]
        out[("nice19", m.group(1), m.group(2))] = {"o1": vals[0], "staircase": vals[1]}
        out[("nice-5", m.group(1), m.group(2))] = {"o1": vals[2], "staircase": vals[3]}
    return out


def block_output(doc, name):
    m = re.search(
        r"<!-- generated: " + re.escape(name) + r" -->.*?```text\n(.*?)```", doc, re.S
    )
    if not m:
        raise SystemExit(f"seed004.py: no generated block {name} in {DOC}")
    return m.group(1)


def sim_table(text):
    """{(policy, bench, load): (pct, star)} from a sweep's interbench tables, and under "specs"
    each policy's whole spec as the sweep names it (`o1:version=2.6.14`)."""
    out = {}
    policy = bench = None
    for line in text.splitlines():
        m = re.match(r"== policy=((\w+)\S*) ==", line)
        if m:
            policy = m.group(2)
            out.setdefault("specs", {})[policy] = m.group(1)
            continue
        m = re.match(r"--- Benchmarking simulated cpu of (\w+)", line)
        if m:
            bench = m.group(1)
            continue
        tok = line.split()
        if policy and bench and len(tok) >= 12 and tok[3] == "+/-":
            out[(policy, bench, tok[0])] = (float(tok[10]), tok[-1] == "*")
    return out


def main():
    doc = DOC.read_text()
    if len(sys.argv) == 3:
        texts = {"nice19": Path(sys.argv[1]).read_text(), "nice-5": Path(sys.argv[2]).read_text()}
    elif len(sys.argv) == 1:
        texts = {t: block_output(doc, "seed004-" + t) for t in ("nice19", "nice-5")}
    else:
        raise SystemExit("usage: bench/seed004.py [NICE19_OUTPUT NICE_5_OUTPUT]")
    seed = seed_table(doc)
    sims = {t: sim_table(x) for t, x in texts.items()}
    for table, sim in sims.items():
        specs = sim.get("specs", {})
        print(f"{table}: o1 = {specs.get('o1', '?')}, sc = {specs.get('staircase', '?')}")
    print(f"{'table':7} {'bench':6} {'load':8} {'o1 seed':>8} {'sim':>6} {'diff':>5}  "
          f"{'sc seed':>8} {'sim':>6} {'diff':>5}  seed* sim*")
    dist = {}
    agree = {}
    for (table, bench, load), s in sorted(seed.items(), key=lambda kv: kv[0][0] == "nice-5"):
        sim = sims[table]
        row = [f"{table:7} {bench:6} {load:8}"]
        seed_star = sim_star = ""
        for pol in ("o1", "staircase"):
            got = sim.get((pol, bench, load))
            if got is None:
                raise SystemExit(f"seed004.py: no simulated row {pol} {bench} vs {load} in {table}")
            d = abs(got[0] - s[pol][0])
            dist.setdefault((table, pol), []).append(d)
            row.append(f"{s[pol][0]:8.1f} {got[0]:6.1f} {d:5.1f}")
            seed_star += "o1" if (pol == "o1" and s[pol][1]) else ""
            seed_star += "sc" if (pol == "staircase" and s[pol][1]) else ""
            sim_star += "o1" if (pol == "o1" and got[1]) else ""
            sim_star += "sc" if (pol == "staircase" and got[1]) else ""
        if seed_star:
            a = agree.setdefault(table, [0, 0])
            a[1] += 1
            a[0] += seed_star == sim_star
        print("  ".join(row) + f"  {seed_star or '-':5} {sim_star or '-'}")
    print()
    for pol in ("o1", "staircase"):
        both = dist[("nice19", pol)] + dist[("nice-5", pol)]
        print(f"mean distance, {pol:9}: nice 19 {sum(dist[('nice19', pol)]) / len(dist[('nice19', pol)]):.1f}, "
              f"nice -5 {sum(dist[('nice-5', pol)]) / len(dist[('nice-5', pol)]):.1f}, "
              f"all {len(both)} rows {sum(both) / len(both):.1f} points")
    for table, (ok, n) in agree.items():
        print(f"asterisk rows, {table}: {ok} of the seed's {n} marked on the same side")
    print("outliers:")
    for table, bench, load, pol in OUTLIERS:
        got = sims[table][(pol, bench, load)][0]
        want = seed[(table, bench, load)][pol][0]
        print(f"  {pol} {bench} vs {load} at {table}: sim {got:.1f} %, seed {want:.1f} %")


if __name__ == "__main__":
    main()
