#!/usr/bin/env python3
"""Helpers of bench/rtapp.sh: prepare rt-app example files for a short run, and compare the
per-task logs rt-app and schedlab (--rt-app-logs) wrote.

  rtapp.py prepare SRC DST --duration S --calibration NS|CPU<n> --logdir DIR --basename NAME
                   [--no-fork]
  rtapp.py compare SECONDS [--tally FILE --label NAME] [--file JSON] REF_DIR... -- OTHER_DIR...
                   [-- AA_DIR...]                       (each DIR: one run's *.log files)
  rtapp.py show SECONDS [--file JSON] DIR...             (one side's figures, no reference)
  rtapp.py cpus JSON                                    (CPUs a prepared file's `cpus` name)
  rtapp.py summary FILE                                 (the tally compare appended to)
  rtapp.py nsloop DIR                                   (ns per loop of rt-app's own runs)

prepare reads SRC as rt-app's JSON reader (json-c) and schedlab's do: C comments, trailing
commas and single-quoted strings are accepted, and a key given twice keeps the position of its
first occurrence and the value of its last — which is what a Python dict does when a key is
assigned again. What neither accepts (a key without a value, as in upstream's video-short) is
an error here too. It writes strict
JSON with `global` edited: duration, calibration (`CPU<n>`: rt-app measures its loop at
each run's start, as schedlab's `--run-as loops` does; a whole number: that figure), logdir, log_basename, ftrace false and gnuplot false; `frag`, a
key rt-app never reads, is removed. With --no-fork (for an rt-app that does not run `fork`,
as rt-app 1.0 does not), the file's `fork` events and its tasks of `instance` 0 are removed
too, as that rt-app runs it, and what was removed is printed. The same file is then given to
rt-app and to schedlab.

compare reads rt-app's log format (`#` lines are comments; columns idx perf run period start
end rel_st slack c_duration c_period wu_lat, microseconds) and prints, per thread (file
name), the mean over the runs given of the passes that ended within SECONDS of the run's start
(both stop every task at `duration` and drop the pass it interrupts): periods completed (rows),
mean and max period, mean run, mean slack and mean wake-up latency, for each side and as the
ratio other/reference, and each side's mean run over the mean run the file asked for
(`c_duration`), `run/asked`; then the example's line: the same ratios over all its threads
(passes summed, period and run weighted by passes). With --tally, each thread's period and run ratios
are appended to FILE under NAME, and `summary` counts how many are within 2 % of rt-app's
(the goal of the comparison, on an idle machine).

AA_DIRs are more runs of the reference program (rt-app), alternated with REF_DIRs: the A/A
ratio AA/REF per thread (column `A/A period,run`; `2 % judgeable` names the columns whose A/A
ratio is within 2 % of 1, where a 2 % comparison with rt-app means something) and per example
(the `(A/A)` line) is the reference's own run-to-run spread, the floor under any comparison with it; `summary` then also
counts the threads whose other/reference ratios are within that spread (|other/ref - 1| <=
|AA/ref - 1|, period and run each) and those within 2 % or within the spread. The A and B runs
share the example's calibration, so an error of the calibration is in both and the A/A ratios
cannot show it: with AA_DIRs, an `(rt-app)` line says when rt-app's runs took more than 2 % off
the time asked over the example's threads (with CALIBRATION=CPU<n> each rt-app run calibrates
itself, and a calibration error is in A/A too).

With --file (the prepared JSON both ran), a task without `phases` whose `loop` is N > 0
counts only its first N passes on the reference side: rt-app 1.0 (Debian's) runs such a task
for ever whatever its loop, a bug upstream mended soon after (commit c67aaf6, "fix loop
parsing when no phases are present"); schedlab follows upstream and stops after N passes.

nsloop prints the nanoseconds one iteration of rt-app's loop took in the runs logged in DIR:
the median over the passes of run × 1000 / perf (a pass's wall time over its loop count),
rounded to a whole number, then the figure unrounded — a `calibration` for the next runs
that is rt-app's loop as measured by rt-app's own runs, not by its calibration, which keeps
whole nanoseconds of a figure taken in a second of its own (21 or 22 here, for 21.1).
"""
import json
import os
import re
import sys


def strip_jsonc(text):
    """Strict JSON of what rt-app's json-c and schedlab's reader accept beyond it: // and /* */
    comments outside strings removed, commas before } or ] removed, and single-quoted strings
    written with double quotes. Nothing else (a key without a value, `True`, text after the
    closing brace) is accepted: schedlab's reader refuses those too."""
    out, i, n = [], 0, len(text)
    in_str = None
    while i < n:
        c = text[i]
        if in_str:
            if c == "\\" and i + 1 < n:
                nxt = text[i + 1]
                # In a single-quoted string, \' is a quote and " needs no escape.
                out.append("'" if in_str == "'" and nxt == "'" else c + nxt)
                i += 2
                continue
            if c == in_str:
                in_str = None
                out.append('"')
            elif c == '"':
                out.append('\\"')
            else:
                out.append(c)
            i += 1
            continue
        if c in "\"'":
            in_str = c
            out.append('"')
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        else:
            out.append(c)
        i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def is_event(key, name):
    """Whether `key` is rt-app's event `name`: rt-app matches an event key by its prefix
    (`fork1`, `fork2` are forks)."""
    return key.startswith(name)


def drop_forks(doc):
    """What rt-app 1.0 runs of a file with `fork` events: it knows no such event (its parser
    skips the key) and starts only each task's `instance`s, so a task of instance 0 never
    runs. Removes both from `doc`; returns a description of what was removed (empty if
    nothing was)."""
    tasks = doc.get("tasks", {})
    forks = []
    for tname, task in tasks.items():
        places = [(None, task)] + list(task.get("phases", {}).items())
        for pname, body in places:
            for key in [k for k in body if is_event(k, "fork")]:
                forks.append(f"{tname}{'' if pname is None else ' ' + pname} forks {body.pop(key)}")
    never = [t for t, task in tasks.items() if task.get("instance", 1) == 0]
    for t in never:
        del tasks[t]
    if not forks and not never:
        return ""
    return ("rt-app here does not run `fork` (rt-app 1.0: its reader skips the key; upstream "
            "runs it, as schedlab does): both run this file without its forks ("
            + "; ".join(forks) + ")"
            + (f" and without the tasks of instance 0, which only a fork would start ({', '.join(never)})" if never else ""))


def prepare(src, dst, duration, calibration, logdir, basename, no_fork=False):
    with open(src) as f:
        doc = json.loads(strip_jsonc(f.read()))
    if no_fork:
        note = drop_forks(doc)
        if note:
            print(note)
    g = doc.setdefault("global", {})
    g.pop("frag", None)
    g["duration"] = duration
    g["calibration"] = calibration
    g["logdir"] = logdir
    g["log_basename"] = basename
    g["ftrace"] = False
    g["gnuplot"] = False
    with open(dst, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def read_logs(d, loops=None):
    """{file name without the basename: [rows]} of one run's directory; `loops` ({task: N}),
    when given, keeps a task's first N rows."""
    logs = {}
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not name.endswith(".log"):
            continue
        rows = []
        with open(os.path.join(d, name)) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                r = [float(x) for x in line.split()]
                if r[6] + r[3] <= LIMIT_US:
                    rows.append(r)
        # BASENAME-TASK-IDX.log, with bench/rtapp.sh's basename rt-app.
        thread = name[: -len(".log")].removeprefix("rt-app-")
        n = (loops or {}).get(thread.rsplit("-", 1)[0])
        if n is not None and len(rows) > n:
            TRIMMED.add(thread)
            rows = rows[:n]
        logs[thread] = rows
    return logs


TRIMMED = set()


def phaseless_loops(path):
    """{task: loop} of the tasks of a prepared file that have no `phases` and a loop N > 0."""
    with open(path) as f:
        tasks = json.load(f).get("tasks", {})
    return {
        name: t["loop"]
        for name, t in tasks.items()
        if "phases" not in t and isinstance(t.get("loop"), int) and t["loop"] > 0
    }


LIMIT_US = float("inf")
COLS = {"run": 2, "period": 3, "slack": 7, "c_duration": 8, "wu_lat": 10}


def figures(rows):
    if not rows:
        return None
    mean = lambda c: sum(r[COLS[c]] for r in rows) / len(rows)
    return {
        "passes": len(rows),
        "period": mean("period"),
        "max_period": max(r[COLS["period"]] for r in rows),
        "run": mean("run"),
        "asked": mean("c_duration"),
        "slack": mean("slack"),
        "wu_lat": mean("wu_lat"),
    }


def averaged(dirs, loops=None):
    """{thread: figures} over the runs in `dirs`: passes averaged over every run that wrote the
    thread's log (a run where it finished no pass counts 0), the other figures over the runs
    where it finished some; `blocked` counts the runs where it finished none."""
    per, logged = {}, {}
    for d in dirs:
        for thread, rows in read_logs(d, loops).items():
            logged[thread] = logged.get(thread, 0) + 1
            f = figures(rows)
            if f:
                per.setdefault(thread, []).append(f)
    out = {}
    for t, fs in per.items():
        out[t] = {k: sum(f[k] for f in fs) / len(fs) for k in fs[0]}
        out[t]["passes"] = sum(f["passes"] for f in fs) / logged[t]
        out[t]["blocked"] = logged[t] - len(fs)
    return out, {t: n for t, n in logged.items() if t not in per}


def ratio(a, b):
    """b/a; 1 when both are 0 (a thread without `run` events on both sides), None when only
    the reference is."""
    if not a:
        return 1.0 if not b else None
    return b / a


def overall(figs):
    """An example's figures over its threads: passes summed, period and run weighted by
    passes."""
    n = sum(f["passes"] for f in figs)
    if not n:
        return None
    return {
        "passes": n,
        "period": sum(f["period"] * f["passes"] for f in figs) / n,
        "run": sum(f["run"] * f["passes"] for f in figs) / n,
    }


def compare(ref_dirs, other_dirs, tally=None, label=None, file=None, aa_dirs=None):
    loops = phaseless_loops(file) if file else None
    ref, ref_none = averaged(ref_dirs, loops)
    other, other_none = averaged(other_dirs)
    # rt-app against itself: the same trimming as the reference side's.
    aa = averaged(aa_dirs, loops)[0] if aa_dirs else {}
    if TRIMMED:
        print(f"(rt-app 1.0 ran {', '.join(sorted(TRIMMED))} past its loop, as it does a task without "
              "phases; only the passes the loop asks for are compared)")
    keys = ["passes", "period", "max_period", "run", "slack", "wu_lat"]
    print(f"{'thread':<22}" + "".join(f"{k:>22}" for k in keys) + f"{'run/asked':>16}"
          + (f"{'A/A period,run':>18}{'2 % judgeable':>15}" if aa_dirs else ""))
    rows = []
    for t in sorted(set(ref) | set(other) | set(ref_none) | set(other_none)):
        a, b = ref.get(t), other.get(t)
        cells = []
        for k in keys:
            if a is None or b is None:
                # A log without a pass: the thread never finished its first pass (blocked for
                # the whole run); no log at all: the thread did not run on that side.
                side = lambda f, none: "no pass" if f is None and t in none else f"{f['passes']:.0f} passes" if f else "no log"
                cells.append(f"{side(a, ref_none)}/{side(b, other_none)}".rjust(22))
                continue
            r = ratio(a[k], b[k])
            cells.append(f"{a[k]:9.0f}/{b[k]:<8.0f}{'-' if r is None else f'{r:.3f}':>5}".rjust(22))
        # Each side's run against the run the file asked for (c_duration): how far each is
        # from the request, whatever the other did.
        asked = "" if a is None or b is None or not a["asked"] else f"{a['run'] / a['asked']:.3f}/{b['run'] / b['asked']:.3f}"
        c = aa.get(t)
        aa_period = None if a is None or c is None else ratio(a["period"], c["period"])
        aa_run = None if a is None or c is None else ratio(a["run"], c["run"])
        spread = ""
        if aa_dirs:
            fmt = lambda r: "-" if r is None else f"{r:.3f}"
            spread = f"{fmt(aa_period) + ',' + fmt(aa_run):>18}" if c is not None else "missing".rjust(18)
            # Where rt-app is off itself by more than 2 %, a 2 % comparison with it says nothing.
            steady = [k for k, r in (("period", aa_period), ("run", aa_run)) if r is not None and abs(r - 1) <= 0.02]
            spread += f"{','.join(steady) or 'neither':>15}"
        print(f"{t:<22}" + "".join(cells) + f"{asked:>16}" + spread)
        if a is None and b is None:
            continue
        rows.append({
            "example": label,
            "thread": t,
            "period": None if a is None or b is None else ratio(a["period"], b["period"]),
            "run": None if a is None or b is None else ratio(a["run"], b["run"]),
            "ref_asked": None if a is None or not a["asked"] else a["run"] / a["asked"],
            "other_asked": None if b is None or not b["asked"] else b["run"] / b["asked"],
            "aa_period": aa_period,
            "aa_run": aa_run,
        })
    # Runs where a thread finished no pass (its passes column counts them as 0): every such
    # thread waits for the whole run from its first pass on — a suspend whose resume came
    # before it and was lost, as rt-app loses it (example4 on the simulator: both 10 ms runs
    # end at the same instant and each thread's resume precedes the other's suspend).
    for name, figs, none, dirs in (("reference", ref, ref_none, ref_dirs), ("other", other, other_none, other_dirs)):
        stuck = {t: f["blocked"] for t, f in figs.items() if f["blocked"]} | none
        if stuck:
            print(f"{'(no pass)':<22}{name}: " + ", ".join(f"{t} in {n} of {len(dirs)} run(s)" for t, n in sorted(stuck.items()))
                  + " — finished no pass: waited from its first pass to the end (a suspend or wait that nothing ended: its resume never came, or came first and was lost, as rt-app loses it)")
    both = [t for t in ref if t in other]
    a, b = overall([ref[t] for t in both]), overall([other[t] for t in both])
    if a and b:
        parts = [f"{k} {ratio(a[k], b[k]):.3f}" if a[k] else f"{k} -" for k in ("passes", "period", "run")]
        print(f"{'(example)':<22}ratios other/reference over its threads: " + ", ".join(parts))
    else:
        print(f"{'(example)':<22}no thread logged passes on both sides")
    if aa_dirs:
        both = [t for t in ref if t in aa]
        a, c = overall([ref[t] for t in both]), overall([aa[t] for t in both])
        if a and c:
            parts = [f"{k} {ratio(a[k], c[k]):.3f}" if a[k] else f"{k} -" for k in ("passes", "period", "run")]
            print(f"{'(A/A)':<22}rt-app against itself, ratios over its threads: " + ", ".join(parts))
    # Where rt-app's A and B runs share the example's calibration (a number), an error of it
    # (the loop running faster or slower than when it was measured) is in both and the A/A
    # ratios cannot show it; rt-app's runs against the time asked can.
    asked = [(f["run"], f["asked"], f["passes"]) for f in ref.values() if f["asked"]]
    if aa_dirs and asked:
        took = sum(r * n for r, _, n in asked) / sum(a * n for _, a, n in asked)
        if abs(took - 1) > 0.02:
            print(f"{'(rt-app)':<22}rt-app's runs took {took:.3f} of the time asked, over its threads: its loop "
                  "ran faster or slower than the calibration measured, or it was preempted; against "
                  "schedlab's CPU time this is in the run and period ratios, and, where both rt-app runs are given "
                  "one calibration (CALIBRATION=measure or a number), not in A/A")
    if tally:
        with open(tally, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


def show(dirs, file=None):
    """One side's figures per thread, with no reference to compare with (a file rt-app cannot
    run here, run on a simulated machine with the CPUs it names)."""
    figs, none = averaged(dirs, phaseless_loops(file) if file else None)
    keys = ["passes", "period", "max_period", "run", "slack", "wu_lat"]
    print(f"{'thread':<22}" + "".join(f"{k:>12}" for k in keys) + f"{'run/asked':>12}")
    for t in sorted(set(figs) | set(none)):
        f = figs.get(t)
        if f is None:
            print(f"{t:<22}{'no pass':>12}")
            continue
        asked = f"{f['run'] / f['asked']:.3f}" if f["asked"] else "-"
        print(f"{t:<22}" + "".join(f"{f[k]:>12.0f}" for k in keys) + f"{asked:>12}")


def cpus_needed(path):
    """How many CPUs a prepared file's `cpus` keys (task or phase) name: the highest + 1, or 0."""
    with open(path) as f:
        doc = json.load(f)
    top = -1

    def walk(v):
        nonlocal top
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "cpus" and isinstance(x, list):
                    top = max([top] + [c for c in x if isinstance(c, int)])
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(doc.get("tasks", {}))
    print(top + 1)


def nsloop(d):
    """Median ns per loop of rt-app's passes logged in `d` (run µs × 1000 / perf)."""
    per = sorted(
        r[COLS["run"]] * 1000 / r[1]
        for rows in read_logs(d).values()
        for r in rows
        if r[1] > 0 and r[COLS["c_duration"]] > 0
    )
    if not per:
        raise SystemExit(f"rtapp.py nsloop: no pass with a loop count in {d}")
    m = per[len(per) // 2]
    print(f"{max(1, round(m))} {m:.2f}")


def within(r, tol=0.02):
    return r is not None and abs(r - 1) <= tol


def in_spread(r, aa):
    """Whether ratio `r` (other/reference) is within the reference's own A/A spread `aa`."""
    return r is not None and aa is not None and abs(r - 1) <= abs(aa - 1)


def summary(tally):
    rows = []
    if os.path.exists(tally):
        with open(tally) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    n = len(rows)
    period = sum(within(r["period"]) for r in rows)
    run = sum(within(r["run"]) for r in rows)
    both = sum(within(r["period"]) and within(r["run"]) for r in rows)
    examples = sorted({r["example"] for r in rows})
    good = [e for e in examples if all(within(r["period"]) and within(r["run"]) for r in rows if r["example"] == e)]
    print(f"within 2 % of rt-app: {both} of {n} threads in period and run (period {period}, run {run}); "
          f"{len(good)} of {len(examples)} examples with every thread within 2 %"
          + (f" ({', '.join(good)})" if good else ""))
    aa_rows = [r for r in rows if r.get("aa_period") is not None and r.get("aa_run") is not None]
    if aa_rows:
        m = len(aa_rows)
        ok = lambda r, k: in_spread(r[k], r["aa_" + k])
        close = lambda r, k: within(r[k]) or ok(r, k)
        print(f"rt-app against itself (A/A) within 2 %: {sum(within(r['aa_period']) and within(r['aa_run']) for r in aa_rows)} of {m} threads "
              f"in period and run (period {sum(within(r['aa_period']) for r in aa_rows)}, run {sum(within(r['aa_run']) for r in aa_rows)}; "
              f"A/A ratios period {min(r['aa_period'] for r in aa_rows):.3f}..{max(r['aa_period'] for r in aa_rows):.3f}, "
              f"run {min(r['aa_run'] for r in aa_rows):.3f}..{max(r['aa_run'] for r in aa_rows):.3f})")
        print(f"schedlab within rt-app's own spread (|schedlab/rt-app - 1| <= |A/A - 1|): {sum(ok(r, 'period') and ok(r, 'run') for r in aa_rows)} of {m} threads "
              f"in period and run (period {sum(ok(r, 'period') for r in aa_rows)}, run {sum(ok(r, 'run') for r in aa_rows)}); "
              f"within 2 % or within the spread: {sum(close(r, 'period') and close(r, 'run') for r in aa_rows)} of {m}")
        # The 2 % goal judged where it can be: on the figures rt-app keeps within 2 % of itself.
        judged = {k: [r for r in aa_rows if within(r["aa_" + k])] for k in ("period", "run")}
        print(f"the 2 % goal where rt-app is within 2 % of itself (judgeable): period {sum(within(r['period']) for r in judged['period'])} "
              f"of the {len(judged['period'])} judgeable threads, run {sum(within(r['run']) for r in judged['run'])} of the {len(judged['run'])} judgeable threads"
              + "".join(f"; {k} off: " + ", ".join(f"{r['example']} {r['thread']} {'-' if r[k] is None else format(r[k], '.3f')}" for r in judged[k] if not within(r[k]))
                        for k in ("period", "run") if any(not within(r[k]) for r in judged[k])))
    # Each side's run against what the file asked, over the threads that have runs.
    for side, name in (("ref_asked", "rt-app"), ("other_asked", "schedlab")):
        asked = [r[side] for r in rows if r.get(side) is not None]
        if asked:
            print(f"{name}'s run within 2 % of the run asked: {sum(within(a) for a in asked)} of {len(asked)} threads "
                  f"(run/asked {min(asked):.3f}..{max(asked):.3f})")


def calibration(text):
    """rt-app's `calibration`: "CPU<n>" (measured at each run's start) or whole ns per loop."""
    if re.fullmatch(r"CPU[0-9]+", text):
        return text
    if re.fullmatch(r"[0-9]+", text):
        return int(text)
    raise ValueError(f"calibration {text!r}: accepted: CPU<n> or a whole number of ns per loop")


def main(argv):
    global LIMIT_US
    if len(argv) >= 3 and argv[1] == "prepare":
        import argparse

        p = argparse.ArgumentParser(prog="rtapp.py prepare")
        p.add_argument("src")
        p.add_argument("dst")
        p.add_argument("--duration", type=int, required=True)
        p.add_argument("--calibration", type=calibration, required=True)
        p.add_argument("--logdir", required=True)
        p.add_argument("--basename", default="rt-app")
        p.add_argument("--no-fork", action="store_true")
        a = p.parse_args(argv[2:])
        prepare(a.src, a.dst, a.duration, a.calibration, a.logdir, a.basename, a.no_fork)
    elif len(argv) >= 5 and argv[1] == "compare" and "--" in argv:
        LIMIT_US = float(argv[2]) * 1e6
        cut = argv.index("--")
        refs, opts = argv[3:cut], {"--tally": None, "--label": None, "--file": None}
        while refs[:1] and refs[0] in opts:
            opts[refs[0]] = refs[1]
            refs = refs[2:]
        others, aa = argv[cut + 1 :], None
        if "--" in others:
            cut2 = others.index("--")
            others, aa = others[:cut2], others[cut2 + 1 :]
        compare(refs, others, opts["--tally"], opts["--label"], opts["--file"], aa)
    elif len(argv) >= 4 and argv[1] == "show":
        LIMIT_US = float(argv[2]) * 1e6
        dirs, file = argv[3:], None
        if dirs[:1] == ["--file"]:
            file, dirs = dirs[1], dirs[2:]
        show(dirs, file)
    elif len(argv) == 3 and argv[1] == "cpus":
        cpus_needed(argv[2])
    elif len(argv) == 3 and argv[1] == "summary":
        summary(argv[2])
    elif len(argv) == 3 and argv[1] == "nsloop":
        nsloop(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
