#!/usr/bin/env python3
"""What the threads of a simulated `volano` run do between wakeups, from its exact timeline.

Reads the events a `schedlab run|sweep volano --backend sim --timeline FILE.svg` run leaves in
FILE.events/ (one file per configuration and repetition) and prints, per file and per VolanoMark
thread kind (S_R, S_S: the server's receive and send threads; C_R, C_S: the client's), the
figures seed 000's disagreeing rows are explained by:

  wakeups/msg   wakeups per room message
  run/wakeup    CPU time a thread runs from a wakeup until it sleeps again (us)
  off-CPU/wake  times it leaves the CPU still runnable in that span (yields, preemptions, ticks)
  tick sw.      of those, switches at a tick (slice expiry or round robin), per 1000 wakeups
  wait          time from a wakeup to its first run (us)
  back          time from leaving the CPU runnable to running again (us)

and the whole run's mean number of runnable tasks (the seed's 8-way run queue averaged 70); then,
per pair of kinds (the running thread that wakes, the thread it wakes), the wakeups and how many
of them were priority preemptions: the running thread leaves the CPU still runnable at the
instant of the wakeup and the woken thread runs next (the simulator switches at once).

Last, per file, the wakeups 2.5.25's loopback TCP could add through a pure ACK, counted on the
same connection (user u's S_R and S_S on the server, C_R and C_S on the client). In 2.5.25
`tcp_v4_rcv` hands every segment, a pure ACK too, to `tcp_prequeue` while the socket's reader
waits in `tcp_recvmsg`, and the first one queued calls `wake_up_interruptible` (a reader that
waits in `poll` instead is woken only by data: `tcp_rcv_established` calls `data_ready` for
data, not for an ACK). A pure ACK follows a read (`cleanup_rbuf`) unless the reader's side is in
pingpong mode, where it is delayed at least TCP_ATO_MIN (40 ms) and rides on the next write.

  C_R->S_R ack   packets a C_R handles (its yields, one after each packet; a switch at the
                 instant of a wakeup is a preemption and not counted) while its user's S_R
                 sleeps: at most one ACK each (one per read that empties the socket, outside
                 pingpong mode), each a wakeup if S_R waited in recv
  S_R->C_R ack   times an S_R goes back to sleep (its read of the user's message done) while
                 the user's C_R sleeps: at most one ACK each, each a wakeup of C_R in recv
  after 40 ms    of those, the ones whose S_S did not run within 40 ms to carry the ACK on its
                 next write (pingpong mode's delayed ACK then goes out alone)

  bench/volano_why.py --hz 100 --messages 1000 DIR.events/C0-R0.txt ...

--messages is the run's messages per user (a room message is one user's message to its room);
--hz the simulated tick rate (the cost profile's, or --cost hz=...), which places the ticks:
a switch whose time falls on the ticks' phase is counted as a tick's.
"""

import argparse
import collections
import sys

KINDS = ("S_R", "S_S", "C_R", "C_S")


def roles_of(groups):
    """Each task's kind and user: the first half of a group's tasks receive, the second half
    send, user u's thread at index u of its half."""
    by_group = collections.OrderedDict()
    for task, group in groups:
        by_group.setdefault(group, []).append(task)
    kind = {}
    user = {}
    for group, tasks in by_group.items():
        side = "S" if group == "server" else "C"
        half = len(tasks) // 2
        for i, t in enumerate(tasks):
            kind[t] = side + ("_R" if i < half else "_S")
            user[t] = i % half if half else 0
    return kind, user


# TCP_ATO_MIN and TCP_DELACK_MIN in 2.5.25's include/net/tcp.h: HZ/25 jiffies, 40 ms.
DELACK_MIN_NS = 40_000_000


def analyse(path, hz):
    tick = 1_000_000_000 // hz
    groups = []
    state = {}
    woke_at = {}
    ran_since = {}
    awake_run = collections.defaultdict(int)
    awake_off = collections.defaultdict(int)
    first_run_pending = set()
    left_cpu_at = {}
    per = {k: collections.Counter() for k in KINDS}
    # Switches off the CPU while runnable, by their time modulo the tick, to find the tick phase.
    residues = collections.Counter()
    rw_at = []
    # Wakeups per (waker kind, woken kind), and those that preempted the waker.
    pairs = collections.Counter()
    preempting = collections.Counter()
    running = None
    pending = None  # (time, woken, pair) of a wakeup whose next events may show a preemption
    runnable = 0
    area = 0
    last_t = 0
    kind = None
    user = None
    task_of = {}  # (kind, user) -> task
    acks = collections.Counter()
    ack_pending = {}  # user -> times an S_R read ended with the user's C_R asleep
    last_wakeup_t = None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                parts = line.split()
                if parts[1] == "task":
                    groups.append((int(parts[2]), parts[3]))
                continue
            if kind is None:
                kind, user = roles_of(groups)
                task_of = {(kind[t], user[t]): t for t in kind}
            t_s, task_s, _cpu, st = line.split()
            t = int(t_s)
            task = int(task_s)
            area += runnable * (t - last_t)
            last_t = t
            prev = state.get(task)
            k = kind.get(task)
            c = per.get(k)
            if prev in (None, "-") and st != "-":
                runnable += 1
            elif prev in ("W", "R") and st == "-":
                runnable -= 1
            if prev == "R":
                awake_run[task] += t - ran_since.pop(task)
            if st == "R":
                ran_since[task] = t
                if task in left_cpu_at and c is not None:
                    c["back_ns"] += t - left_cpu_at.pop(task)
                    c["backs"] += 1
                if task in first_run_pending:
                    first_run_pending.discard(task)
                    if c is not None:
                        c["wait_ns"] += t - woke_at[task]
            if pending is not None and (t != pending[0] or (st == "R" and task != pending[1])):
                pending = None
            if prev == "-" and st == "W" and running is not None:
                pair = (kind.get(running, "K"), kind.get(task, "K"))
                pairs[pair] += 1
                pending = (t, task, pair, False)
            elif pending is not None and prev == "R" and st == "W" and task == running:
                pending = (pending[0], pending[1], pending[2], True)
            elif pending is not None and st == "R" and task == pending[1]:
                if pending[3]:
                    preempting[pending[2]] += 1
                pending = None
            if st == "R":
                running = task
            elif prev == "R" and task == running:
                running = None
            if prev == "-" and st == "W" and c is not None:
                c["wakeups"] += 1
                woke_at[task] = t
                first_run_pending.add(task)
                awake_run[task] = 0
                awake_off[task] = 0
            if prev == "R" and st == "W":
                awake_off[task] += 1
                left_cpu_at[task] = t
                residues[t % tick] += 1
                rw_at.append((t, k))
            if prev == "R" and st == "-" and c is not None and task in woke_at:
                c["periods"] += 1
                c["run_ns"] += awake_run[task]
                c["off"] += awake_off[task]
            if prev == "-" and st == "W":
                last_wakeup_t = t
            if prev == "R" and st == "W" and k == "C_R" and t != last_wakeup_t:
                if state.get(task_of.get(("S_R", user[task]))) == "-":
                    acks["C_R->S_R"] += 1
            if prev == "R" and st == "-" and k == "S_R":
                if state.get(task_of.get(("C_R", user[task]))) == "-":
                    acks["S_R->C_R"] += 1
                    ack_pending.setdefault(user[task], []).append(t)
            if st == "R" and k == "S_S" and user[task] in ack_pending:
                for t0 in ack_pending.pop(user[task]):
                    if t - t0 >= DELACK_MIN_NS:
                        acks["after 40 ms"] += 1
            state[task] = st
    phase, _ = residues.most_common(1)[0] if residues else (0, 0)
    for t, k in rw_at:
        if t % tick == phase and k in per:
            per[k]["tick_switches"] += 1
    for times in ack_pending.values():
        acks["after 40 ms"] += sum(1 for t0 in times if last_t - t0 >= DELACK_MIN_NS)
    users_total = len(groups) // 4
    return per, (area / last_t if last_t else 0.0), users_total, last_t, pairs, preempting, acks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hz", type=int, default=100)
    ap.add_argument("--messages", type=int, required=True, help="messages each user sent")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    print(
        f"{'file':<24} {'kind':<4} {'wakeups/msg':>11} {'run/wakeup us':>13} "
        f"{'off-CPU/wake':>12} {'tick sw./1000':>13} {'wait us':>9} {'back us':>9}"
    )
    for path in a.files:
        per, mean_runnable, n, end, pairs, preempting, acks = analyse(path, a.hz)
        room_messages = n * a.messages
        total = collections.Counter()
        for k in KINDS:
            c = per[k]
            total.update(c)
            w = max(c["wakeups"], 1)
            p = max(c["periods"], 1)
            print(
                f"{path[-24:]:<24} {k:<4} {c['wakeups'] / room_messages:>11.2f} "
                f"{c['run_ns'] / p / 1e3:>13.1f} {c['off'] / p:>12.2f} "
                f"{1000 * c['tick_switches'] / w:>13.2f} {c['wait_ns'] / w / 1e3:>9.0f}"
                f" {c['back_ns'] / max(c['backs'], 1) / 1e3:>9.0f}"
            )
        w = max(total["wakeups"], 1)
        p = max(total["periods"], 1)
        print(
            f"{path[-24:]:<24} {'all':<4} {total['wakeups'] / room_messages:>11.2f} "
            f"{total['run_ns'] / p / 1e3:>13.1f} {total['off'] / p:>12.2f} "
            f"{1000 * total['tick_switches'] / w:>13.2f} {total['wait_ns'] / w / 1e3:>9.0f}"
            f" {total['back_ns'] / max(total['backs'], 1) / 1e3:>9.0f}"
            f"   mean runnable {mean_runnable:.1f} over {end / 1e9:.1f} s"
        )
        for pair in sorted(pairs):
            w = pairs[pair]
            print(
                f"{path[-24:]:<24} {pair[0]}->{pair[1]} wakeups {w / room_messages:.2f}/msg "
                f"({w}), preempting {preempting[pair]} ({100 * preempting[pair] / w:.1f} %)"
            )
        print(
            f"{path[-24:]:<24} pure ACKs per room message: C_R->S_R ack "
            f"{acks['C_R->S_R'] / room_messages:.2f}, S_R->C_R ack "
            f"{acks['S_R->C_R'] / room_messages:.2f} ({acks['after 40 ms'] / room_messages:.2f} "
            f"after 40 ms)",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
