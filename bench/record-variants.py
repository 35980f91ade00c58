#!/usr/bin/env python3
"""Where the BPF recorder's cost goes, by elimination: variants of
crates/schedlab-real/bpf/record.bpf.c, each with one part of its per-event work taken out,
built in a temp dir and attached by bench/record-floor.c (which seeds the command's tree as
schedlab does and leaves the ring undrained, failing on any lost record), beside the program
untraced and with the empty programs of bench/record-floor.bpf.c (the floor). ROUNDS rounds,
each running every configuration once, in an order that rotates from round to round.

Per configuration: the program's wall time (fork to exit) and CPU time (its tasks' user +
system; the programs run in the traced tasks' context and are charged to them), both from
bench/record-wall.py --both, each as the median of the rounds' ratios to the untraced run of
the same round with its interquartile range. The kernel's BPF run-time statistics are off in
these runs: with them on, the kernel reads sched_clock() before and after every run of every
program and updates a per-CPU counter pair (__bpf_prog_run in include/linux/filter.h, under
bpf_stats_enabled_key), which the traced tasks are charged as well.

With STATS=on, two configurations with the statistics on join the rounds ("floor, stats on",
"recorder, stats on": what the statistics themselves add), and after the rounds a separate
pass of STATS_ROUNDS runs (default 3) of each traced configuration with the statistics on
gives each program's run time per run (BPF_ENABLE_STATS held by the loader's file descriptor
while the command runs, no sysctl); that pass's runs are in no ratio. A program's runs are
those of every task of the machine, the untraced ones' early return included.

The variants (each alone, on this tree's source):
  recorder       the source as it is
  no-registers   bpf_task_pt_regs not called (no system call number read)
  no-clock       bpf_ktime_get_ns not called (time 0)
  no-ring        the full stage is not copied to the ring (nor its fullness asked)
  test-only      the switch and waking programs return after deciding the event is traced
  OLD=REV adds the recorder's source at git revision REV as a variant named "at REV".

Needs root, clang, gcc and libbpf (apt-get install clang libbpf-dev).

Usage: [ROUNDS=N] [STATS=on [STATS_ROUNDS=N]] [OLD=REV] bench/record-variants.py CMD ARGS...
  e.g. ROUNDS=11 bench/record-variants.py taskset -c 0 perf bench sched pipe -l 50000
"""
import os, shutil, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = "crates/schedlab-real/bpf/record.bpf.c"

# Each variant: the edits (text, replacement) of the source, each text found exactly once.
VARIANTS = {
    "recorder": [],
    "no-registers": [("(void *)bpf_task_pt_regs(prev)", "(void *)0")],
    "no-clock": [("r->ts = bpf_ktime_get_ns();", "r->ts = 0;")],
    "no-ring": [(
        "\tst->n = 0;\n\tif (bpf_ringbuf_query(&EVENTS, BPF_RB_AVAIL_DATA) > wake_bytes)\n"
        "\t\tflags = BPF_RB_FORCE_WAKEUP;\n"
        "\tif (bpf_ringbuf_output(&EVENTS, st->recs, sizeof(st->recs), flags)) {",
        "\tst->n = 0;\n\tif (0) {")],
    "test-only": [
        ("\tif (!prev_traced && !traced_here(seen, next, &ns))\n\t\treturn 0;\n",
         "\tif (!prev_traced && !traced_here(seen, next, &ns))\n\t\treturn 0;\n\treturn 0;\n"),
        ("\tif (!traced_here(seen, p, &s) && !traced_here(seen, me, &s))\n\t\treturn 0;\n",
         "\tif (!traced_here(seen, p, &s) && !traced_here(seen, me, &s))\n\t\treturn 0;\n"
         "\treturn 0;\n"),
    ],
}


def fail(msg):
    sys.exit(f"record-variants.py: {msg}")


def run(cmd, **kw):
    return subprocess.run(cmd, check=False, **kw)


def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1:]
    rounds = os.environ.get("ROUNDS", "5")
    if not rounds.isdigit() or not 1 <= int(rounds) <= 200:
        fail(f"ROUNDS={rounds!r}: a whole number from 1 to 200")
    rounds = int(rounds)
    stats = os.environ.get("STATS", "off")
    if stats not in ("on", "off"):
        fail(f"STATS must be on or off, not {stats!r}")
    stats_rounds = os.environ.get("STATS_ROUNDS", "3")
    if not stats_rounds.isdigit() or not 1 <= int(stats_rounds) <= 200:
        fail(f"STATS_ROUNDS={stats_rounds!r}: a whole number from 1 to 200")
    old = os.environ.get("OLD", "")
    if os.geteuid() != 0:
        fail("needs root (BPF)")
    for tool in ("clang", "gcc"):
        if not shutil.which(tool):
            fail(f"needs {tool} (apt-get install clang libbpf-dev)")
    work = tempfile.mkdtemp()
    try:
        configs = build(work, old)
        measure(work, configs, cmd, rounds, stats == "on", int(stats_rounds))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build(work, old):
    """Compile the loader, the floor and the variants; [(name, object or None)]."""
    inc = f"/usr/include/{os.uname().machine}-linux-gnu"
    loader = os.path.join(work, "loader")
    if run(["gcc", "-O2", "-Wall", "-o", loader, os.path.join(ROOT, "bench/record-floor.c"),
            "-lbpf"]).returncode:
        fail("cannot build bench/record-floor.c (apt-get install libbpf-dev)")

    def clang(src, obj):
        # The recorder's flags (crates/schedlab-real/bpf/build.sh), without -Werror: a variant's
        # unreachable code may leave a variable unused.
        if run(["clang", "-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86", f"-I{inc}",
                "-Wall", "-c", src, "-o", obj]).returncode:
            fail(f"cannot compile {src}")
        return obj

    configs = [("untraced", None),
               ("floor", clang(os.path.join(ROOT, "bench/record-floor.bpf.c"),
                               os.path.join(work, "floor.o")))]
    with open(os.path.join(ROOT, SOURCE), encoding="utf-8") as f:
        source = f.read()
    for name, edits in VARIANTS.items():
        text = source
        for old_text, new_text in edits:
            n = text.count(old_text)
            if n != 1:
                fail(f"variant {name}: {old_text!r} found {n} times in {SOURCE} (edit this "
                     "script's VARIANTS to match the source)")
            text = text.replace(old_text, new_text)
        src = os.path.join(work, f"{name}.bpf.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        configs.append((name, clang(src, os.path.join(work, f"{name}.o"))))
    if old:
        shown = run(["git", "-C", ROOT, "show", f"{old}:{SOURCE}"], capture_output=True,
                    text=True)
        if shown.returncode:
            fail(f"OLD={old!r}: no {SOURCE} at that revision")
        src = os.path.join(work, "old.bpf.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(shown.stdout)
        configs.append((f"at {old}", clang(src, os.path.join(work, "old.o"))))
    return configs


def one(work, obj, cmd, stats):
    """(wall seconds, CPU seconds, {program: (runs, ns)}) of one run of cmd under obj (None:
    untraced), the kernel's statistics on if stats."""
    times_file = os.path.join(work, "times")
    stats_file = os.path.join(work, "stats")
    for f in (times_file, stats_file):
        if os.path.exists(f):
            os.unlink(f)
    timed = ["python3", os.path.join(ROOT, "bench/record-wall.py"), "--both", "--out",
             times_file, *cmd]
    if obj is None:
        argv = timed
    else:
        argv = [os.path.join(work, "loader"), *(["--stats", stats_file] if stats else []), obj,
                *timed]
    done = run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        fail(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    with open(times_file, encoding="ascii") as f:
        wall, cpu = (float(x) for x in f.read().split())
    progs = {}
    if stats and obj is not None:
        with open(stats_file, encoding="ascii") as f:
            for line in f:
                name, runs, ns = line.split()
                progs[name] = (int(runs), int(ns))
    return wall, cpu, progs


def ratio_cell(xs, base):
    """The median of the rounds' ratios xs/base and their interquartile range, as text."""
    ratios = [x / b for x, b in zip(xs, base)]
    return (f"{statistics.median(ratios):.3f} ({q(ratios, .25):.3f}-{q(ratios, .75):.3f})")


def measure(work, configs, cmd, rounds, stats, stats_rounds):
    # The timed rounds: every configuration, the statistics off but in the "stats on" ones.
    timed = [(name, obj, False) for name, obj in configs]
    if stats:
        by_name = dict(configs)
        timed[2:2] = [("floor, stats on", by_name["floor"], True),
                      ("recorder, stats on", by_name["recorder"], True)]
    load0 = os.getloadavg()[0]
    wall = {name: [] for name, _, _ in timed}
    cpu = {name: [] for name, _, _ in timed}
    for r in range(rounds):
        for k in range(len(timed)):
            name, obj, on = timed[(r + k) % len(timed)]
            w, c, _ = one(work, obj, cmd, on)
            wall[name].append(w)
            cpu[name].append(c)
    load1 = os.getloadavg()[0]
    print(f"# {' '.join(cmd)}: {rounds} rounds, the kernel's BPF statistics off unless named; "
          f"load average {load0:.2f} before, {load1:.2f} after")
    print(f"  untraced            wall {statistics.median(wall['untraced']):.4f} s, "
          f"CPU {statistics.median(cpu['untraced']):.4f} s")
    for name, _, _ in timed[1:]:
        print(f"  {name:19} wall {statistics.median(wall[name]):.4f} s, ratio "
              f"{ratio_cell(wall[name], wall['untraced'])}; CPU "
              f"{statistics.median(cpu[name]):.4f} s, ratio "
              f"{ratio_cell(cpu[name], cpu['untraced'])}")
    if not stats:
        return
    # What the statistics add, paired by round: the same configuration on and off.
    for name in ("floor", "recorder"):
        print(f"  {name}: statistics on / off, the rounds' median, wall "
              f"{ratio_cell(wall[name + ', stats on'], wall[name])}, CPU "
              f"{ratio_cell(cpu[name + ', stats on'], cpu[name])}")
    # The statistics' own pass: run time per run of each program, in no ratio.
    traced = [(name, obj) for name, obj in configs if obj is not None]
    progs = {name: [] for name, _ in traced}
    for r in range(stats_rounds):
        for k in range(len(traced)):
            name, obj = traced[(r + k) % len(traced)]
            progs[name].append(one(work, obj, cmd, True)[2])
    print(f"# the kernel's statistics, a separate pass of {stats_rounds} runs each (load "
          f"average {os.getloadavg()[0]:.2f} after): ns a run of each program (its runs)")
    for name, _ in traced:
        cells = []
        for prog in sorted({p for run in progs[name] for p in run}):
            per_run = [run[prog][1] / run[prog][0] for run in progs[name]
                       if run.get(prog, (0, 0))[0] > 0]
            runs = [run[prog][0] for run in progs[name] if prog in run]
            if per_run:
                cells.append(f"{prog} {statistics.median(per_run):.1f} "
                             f"({statistics.median(runs):.0f})")
        print(f"  {name:19} " + ", ".join(cells))


if __name__ == "__main__":
    main()
