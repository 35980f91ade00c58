#!/usr/bin/env python3
"""The chat row's regime, real against simulated (bench/chat-regime.sh): from the first message
(the first receiver a server wakes), per time bucket, how often the receivers sleep and are woken,
how long a woken receiver waits to run, and how long a server runs at a turn; then, over the whole
run, each kind's turns by how they ended and what ran after a preempted server turn.

    chat_regime.py real PERF_SCRIPT_TEXT USERS [BUCKET_MS]   # perf script -F tid,cpu,time,event,trace
    chat_regime.py sim TIMELINE_EVENTS USERS [BUCKET_MS]     # --timeline's FILE.events/C0-R0.txt

USERS = rooms × users: chat's burst mode has per user a server task (sl-serverI; tasks
0..USERS-1 of the simulator's timeline), a sender and a receiver (sl-clientI with I < USERS,
and I >= USERS; timeline tasks USERS..2·USERS-1 and 2·USERS..3·USERS-1).
"""
import re
import statistics
import sys


def real_events(path, users):
    """(time s, kind, task, what) from perf script text: what is 'wake' (by a server: 'swake'),
    'in', 'out-R' (preempted), 'out-S' (slept)."""
    sw = re.compile(r'\[\d+\]\s+([\d.]+):\s+sched:sched_switch: prev_comm=(\S+) prev_pid=(\d+) '
                    r'prev_prio=\d+ prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)')
    wk = re.compile(r'^\s*(\d+)\s+\[\d+\]\s+([\d.]+):\s+sched:sched_waking: comm=(\S+) pid=(\d+)')
    kinds = {}

    def kind(comm):
        m = re.match(r'sl-(server|client)(\d+)$', comm)
        if not m:
            return None
        if m.group(1) == 'server':
            return 'server'
        return 'sender' if int(m.group(2)) < users else 'receiver'

    for line in open(path):
        m = sw.search(line)
        if m:
            t = float(m[1])
            kinds[int(m[3])] = kind(m[2])
            kinds[int(m[6])] = kind(m[5])
            k = kind(m[2])
            if k:
                yield t, k, int(m[3]), 'out-R' if m[4].startswith('R') else 'out-S'
            k = kind(m[5])
            if k:
                yield t, k, int(m[6]), 'in'
            continue
        m = wk.search(line)
        if m and kind(m[3]):
            by_server = kinds.get(int(m[1])) == 'server'
            yield float(m[2]), kind(m[3]), int(m[4]), 'swake' if by_server else 'wake'


def sim_events(path, users):
    """The same from the simulator's exact timeline (W waiting, R running, - off)."""
    state = {}
    for line in open(path):
        if line.startswith('#'):
            continue
        t, task, _cpu, s = line.split()
        t, task = int(t) / 1e9, int(task)
        k = 'server' if task < users else 'sender' if task < 2 * users else 'receiver'
        prev = state.get(task)
        state[task] = s
        if prev == 'R' and s != 'R':
            yield t, k, task, 'out-R' if s == 'W' else 'out-S'
        if s == 'R' and prev != 'R':
            yield t, k, task, 'in'
        if prev == '-' and s == 'W':
            # Only messages wake a simulated receiver, and only servers send to receivers.
            yield t, k, task, 'swake' if k == 'receiver' else 'wake'


def main():
    source, path, users = sys.argv[1], sys.argv[2], int(sys.argv[3])
    bucket = float(sys.argv[4]) / 1e3 if len(sys.argv) > 4 else 0.025
    events = list((real_events if source == 'real' else sim_events)(path, users))
    events.sort(key=lambda e: e[0])
    # The origin: the first receiver a server wakes, the first message delivered (the real
    # backend's threads also wake at their creation and release, before the run).
    origin = next((t for t, k, _, what in events if k == 'receiver' and what == 'swake'), None)
    if origin is None:
        sys.exit('no receiver woken by a server: is USERS right?')
    end = max(t for t, k, _, what in events if what.startswith('out'))
    rows = {}
    since, woke = {}, {}
    for t, k, task, what in events:
        if t < origin:
            continue
        r = rows.setdefault(int((t - origin) / bucket),
                            {'wake': 0, 'sleep': 0, 'run': [], 'wait': [], 'pre': 0})
        if k == 'receiver':
            if what in ('wake', 'swake'):
                r['wake'] += 1
                woke[task] = t
            elif what == 'out-S':
                r['sleep'] += 1
            elif what == 'in' and task in woke:
                r['wait'].append(t - woke.pop(task))
        elif k == 'server':
            if what == 'in':
                since[task] = t
            elif task in since:
                r['run'].append(t - since.pop(task))
                r['pre'] += what == 'out-R'

    def med(v):
        return f"{1e6 * statistics.median(v):9.1f}" if v else f"{'-':>9}"

    print(f"{source}: {path}, {users} users, {1e3 * (end - origin):.1f} ms from the first message")
    print(f"{'from (ms)':>9} {'rcv wakes':>9} {'rcv sleeps':>10} {'srv runs':>8} "
          f"{'preempted':>9} {'run p50 us':>10} {'wait p50 us':>11}")
    for i in sorted(rows):
        r = rows[i]
        print(f"{i * bucket * 1e3:9.0f} {r['wake']:9d} {r['sleep']:10d} {len(r['run']):8d} "
              f"{r['pre']:9d} {med(r['run']):>10} {med(r['wait']):>11}")
    turns_summary(events, origin)


def turns_summary(events, origin):
    """The whole run from the first message: each kind's turns by how they ended (preempted or
    asleep), their count and median length, and who ran next after a preempted server turn."""
    start, turns, after, preempted = {}, {}, {}, False
    for t, k, task, what in events:
        if what == 'in':
            start[task] = t
            if preempted and t >= origin:
                after[k] = after.get(k, 0) + 1
            preempted = False
        elif what in ('out-R', 'out-S') and task in start:
            began = start.pop(task)
            if began >= origin:
                turns.setdefault((k, what), []).append(t - began)
            preempted = (k, what) == ('server', 'out-R') and began >= origin
    for (k, what), v in sorted(turns.items()):
        end = 'preempted' if what == 'out-R' else 'asleep'
        print(f"  {k:8s} turns ending {end:9s} {len(v):7d}, median {1e6 * statistics.median(v):8.1f} us")
    print("  after a preempted server turn ran: "
          + ", ".join(f"{k} {n}" for k, n in sorted(after.items())))


if __name__ == '__main__':
    main()
