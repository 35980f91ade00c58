#!/usr/bin/env bash
# Fuzz run of the simulator (not run by CI): N random simulated commands — the shipped workloads
# with random parameters, policies (and their tunables), CPU counts, topologies, cost profiles
# and --cost overrides (zero costs, extreme HZ), and random workload files built from the
# workload-file grammar (docs/workload-files.md: loops counted and timed, nested, counts,
# timers, computes, busy stretches, sleeps, yields, touches, balanced sends and receives, locks,
# zero and huge durations) — each given `--timeout` of at most 8 s and run under an outer limit
# of 20 s. Every run must end by itself: refused (exit 2), failed with a message (exit 1), timed
# out by its own budget (exit 1) or finished (exit 0). It counts
#   - hangs:  the outer 20 s limit was hit (the command ignored its --timeout),
#   - panics: exit 101 or "panicked" on stderr,
# and keeps each offending command, its workload file and its stderr under OUT/.
#
#   bench/fuzz-sim.sh [N] [OUT]     # default 500 commands, OUT a new temporary directory
#   SEED=7 bench/fuzz-sim.sh 100    # the same commands again (the seed picks everything)
#   JOBS=2 bench/fuzz-sim.sh        # commands run two at a time (default 1; the limits are wall time)
#
# One line per command that hung or panicked, then
#   `N commands in S s: H hangs, P panics; exits: 0=a 1=b 2=c`
# and the exit status is 1 if anything hung or panicked. SCHEDLAB=path uses that binary instead
# of building this tree's.
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:-500}
. bench/lib.sh
whole_in_range bench/fuzz-sim.sh N "$n" 1 1000000
out=${2:-$(mktemp -d "${TMPDIR:-/tmp}/fuzz-sim.XXXXXX")}
mkdir -p "$out" || exit 2
schedlab_bin || exit 1
export SCHEDLAB
exec python3 - "$n" "$out" "${SEED:-$$}" "${JOBS:-1}" <<'PY'
import os, random, shlex, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

n, out, seed, jobs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sl = os.environ["SCHEDLAB"]
LIMIT = 20  # the outer limit, s: a command still running then is a hang
rng = random.Random(seed)

POLICIES = {
    "o1": ["threshold=0", "threshold=40", "threshold=140"],
    "cfs": [],
    "eevdf": ["base_slice=100", "base_slice=100000", "run_to_parity=0", "preempt_short=0"],
    "linux24": [],
    "linux24-prio": [],
    "linux24-mq": ["pools=1", "balance=1", "interval=1", "idle=pool"],
    "bsd4": ["preemption=0", "full=1", "ipiwakeup=0"],
    "staircase": ["interactive=0", "compute=1"],
    "ule": ["preemption=0", "full=1"],
}


def dur(r, zero=0.15, huge=0.05):
    """A duration: sometimes zero, sometimes huge, mostly small."""
    x = r.random()
    if x < zero:
        return r.choice(["0us", "0ms", "0s"])
    if x < zero + huge:
        return r.choice(["1000s", "5000s", "1e6s", "180min", "1e9s"])
    return r.choice([f"{r.randint(1, 999)}us", f"{r.randint(1, 50)}ms", f"{r.randint(1, 20)}ns"])


def machine(r, workload_is_file):
    """Backend, policy, CPUs, profile, costs, seed, --timeout."""
    p = r.choice(sorted(POLICIES))
    tun = POLICIES[p]
    if tun and r.random() < 0.5:
        p += ":" + ",".join(r.sample(tun, r.randint(1, min(2, len(tun)))))
    args = ["--backend", "sim", "--policy", p, "--seed", str(r.randint(0, 1 << 32))]
    topo = r.random() < 0.15
    if topo:
        s, c, t = r.choice([(1, 2, 2), (2, 2, 1), (2, 1, 2), (1, 4, 1)])
        args += ["--topology", f"{s}s:{c}c:{t}t", "--cpus", str(s * c * t)]
    else:
        args += ["--cpus", str(r.choice([1, 1, 2, 2, 3, 4, 8, 16]))]
    if r.random() < 0.3:
        args += ["--profile", "piii-700"]
    if r.random() < 0.3:
        keys = ["syscall", "switch", "msg", "sock_msg", "net_msg", "wakeup", "ipi", "tick",
                "rq_lock", "migration", "idle_exit", "page_touch", "fork", "exit", "scan"]
        costs = [f"{k}={r.choice(['0', '0ns', '1ns', '5us', '2ms'])}" for k in r.sample(keys, r.randint(1, 5))]
        if r.random() < 0.3:
            costs.append(f"hz={r.choice([24, 100, 1000, 10000])}")
        args += ["--cost", ",".join(costs)]
    args += ["--runs", str(r.choice([1, 1, 2])), "--timeout", f"{r.randint(2, 8)}s"]
    return args


def preset(r):
    w = r.choice(["messaging", "chat", "pingpong", "yield", "interbench", "web", "lookup", "build"])
    i = r.randint
    if w == "messaging":
        a = ["--groups", str(i(1, 3)), "--fds", str(i(1, 4)), "--loops", str(r.choice([1, i(1, 60)])),
             "--datasize", str(r.choice([8, 100, 4096])), "--transport", r.choice(["socketpair", "pipe"])]
    elif w == "chat":
        a = ["--rooms", str(i(1, 2)), "--users", str(i(2, 5)), "--messages", str(r.choice([1, i(1, 20)])),
             "--mode", r.choice(["burst", "turns"]), "--server", r.choice(["relay", "volano"]),
             "--transport", r.choice(["tcp", "unix"]),
             "--server-work", r.choice(["0", "0us", "10us", "1ms"]), "--client-work", r.choice(["0", "25us", "2ms"])]
    elif w == "pingpong":
        a = ["--loops", str(r.choice([1, i(1, 3000)])), "--transport", r.choice(["pipe", "socketpair", "unix", "tcp", "udp"])]
    elif w == "yield":
        a = ["--threads", ",".join(str(i(1, 16)) for _ in range(i(1, 2))), "--duration", r.choice(["1ms", "20ms", "100ms", "1000s"])]
    elif w == "interbench":
        a = ["--bench", r.choice(["audio", "video", "x", "gaming"]),
             "--loads", r.choice(["none", "video", "x", "burn", "write", "read", "ring", "compile", "memload"]),
             "--duration", r.choice(["100ms", "300ms", "3600s"])]
    elif w == "web":
        a = ["--connections", str(i(1, 8)), "--server", r.choice(["prefork", "prefork:2", "threads:2", "event", "event:2"]),
             "--client", r.choice(["connections", "event"]), "--duration", r.choice(["50ms", "300ms"]),
             "--dcache", r.choice(["none", "lock", "fastwalk", "rcu"])]
    elif w == "lookup":
        a = ["--threads", str(i(1, 4)), "--lookups", str(i(1, 300)), "--depth", str(i(1, 8)),
             "--dcache", r.choice(["lock", "fastwalk", "rcu"]), "--syscall", r.choice(["stat", "open", "open1", "open2"]),
             "--component", r.choice(["0us", "2us", "50us"]), "--request", r.choice(["0us", "600us"])]
    else:
        u = i(1, 20)
        a = ["--jobs", str(i(1, 4)), "--units", str(u), "--dirs", str(i(1, min(3, u))),
             "--cpu", r.choice(["1ns", "1ms", "40ms", "3600s"]), "--link", r.choice(["1ns", "5ms", "200ms"]),
             "--tasks", r.choice(["processes", "threads"])]
    return w, a


class FileGen:
    """A random workload file: groups of steps, and channels whose sends and receives balance."""

    def __init__(self, r):
        self.r = r
        self.locks = []
        self.channels = []

    def amount(self):
        r = self.r
        if r.random() < 0.2:
            return '{ ' + r.choice([
                f'uniform = ["0us", "{dur(r, 0, 0)}"]',
                f'exponential = "{dur(r)}"',
                f'normal = "{dur(r, 0.1, 0)}", sd = "{dur(r)}"',
                f'lognormal = "{dur(r, 0.1, 0)}", sd = "1us"',
            ]) + ' }'
        if r.random() < 0.1:
            return '"index * ' + dur(r, 0, 0) + '"'
        return '"' + dur(r) + '"'

    def step(self, depth):
        r = self.r
        k = r.random()
        if k < 0.20 and depth < 3:
            body = self.steps(depth + 1)
            rep = r.choice([f'"{r.choice([0, 1, 2, 5, 50, 1000])}"', f'"{dur(r, 0.1, 0.05)}"', '"index"'])
            var = ', var = "i"' if r.random() < 0.2 else ""
            return f'{{ loop = {rep}{var}, steps = [ {body} ] }}'
        if k < 0.27 and depth < 3:
            return f'{{ timer = "t{depth}", steps = [ {self.steps(depth + 1)} ] }}'
        if k < 0.45:
            return f'{{ compute = {self.amount()} }}'
        if k < 0.52:
            return f'{{ sleep = {self.amount()} }}'
        if k < 0.56:
            return f'{{ busy = "{dur(r, 0.2, 0.02)}" }}'
        if k < 0.64:
            return f'{{ count = "c{r.randint(0, 2)}"' + (', by = 2 }' if r.random() < 0.2 else ' }')
        if k < 0.70:
            return '"yield"'
        if k < 0.76:
            return f'{{ touch = "{r.choice(["0KiB", "4KiB", "1MiB", "64MiB"])}" }}'
        if k < 0.80:
            return f'{{ write = "{r.choice(["0B", "4KiB", "1MiB"])}" }}'
        if k < 0.88:
            lock = f"l{r.randint(0, 1)}"
            if lock not in self.locks:
                self.locks.append(lock)
            return f'{{ lock = "{lock}" }}, {{ compute = {self.amount()} }}, {{ unlock = "{lock}" }}'
        return f'{{ compute = {self.amount()} }}'

    def steps(self, depth):
        return ", ".join(self.step(depth) for _ in range(self.r.randint(1, 3)))

    def text(self):
        r = self.r
        groups = []
        for g in range(r.randint(1, 3)):
            count = r.choice([1, 1, 2, 3])
            groups.append(f'[groups.g{g}]\ncount = {count}\nsteps = [ {self.steps(0)} ]\n')
        # A producer and a consumer with the same number of messages, inside or outside a loop.
        if r.random() < 0.4:
            m = r.choice([1, 3, 100])
            size = r.choice(["4B", "100B", "4KiB"])
            groups.append(f'[groups.prod]\nsteps = [ {{ loop = "{m}", steps = [ {{ send = "ch", size = "{size}" }}, {{ compute = "{dur(r)}" }} ] }} ]\n')
            groups.append(f'[groups.cons]\nsteps = [ {{ loop = "{m}", steps = [ {{ recv = "ch", size = "{size}" }} ] }} ]\n')
            self.channels.append("ch")
        head = f'transport = "{r.choice(["pipe", "socketpair", "unix", "tcp", "udp"])}"\n'
        objs = "".join(f"[locks.{l}]\n" + ('kind = "spin"\n' if r.random() < 0.4 else "") for l in self.locks)
        objs += "".join(f"[channels.{c}]\n" for c in self.channels)
        return head + objs + "\n".join(groups)


def command(k):
    r = random.Random(f"{seed}-{k}")
    if r.random() < 0.5:
        w, a = preset(r)
        args = ["run", w] + a + machine(r, False)
        return args, None
    text = FileGen(r).text()
    path = os.path.join(out, f"w{k}.toml")
    with open(path, "w") as f:
        f.write(text)
    verb = "check" if r.random() < 0.1 else "run"
    args = [verb, path] + (machine(r, True) if verb == "run" else [])
    return args, path


def run(k):
    args, path = command(k)
    start = time.monotonic()
    wd = os.path.join(out, f"cwd{k}")
    os.makedirs(wd, exist_ok=True)
    try:
        p = subprocess.run([sl] + args, cwd=wd, capture_output=True, text=True, timeout=LIMIT)
        code, err, hung = p.returncode, p.stderr, False
    except subprocess.TimeoutExpired as e:
        code, hung = None, True
        err = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    took = time.monotonic() - start
    panic = code == 101 or "panicked" in err
    bad = hung or panic
    if bad:
        with open(os.path.join(out, f"bad{k}.txt"), "w") as f:
            f.write("schedlab " + " ".join(shlex.quote(a) for a in args) + "\n")
            f.write(f"exit {code} hung {hung} took {took:.1f}s\n{err}")
    elif path:
        os.remove(path)
    if code not in (0, None):
        # Each refusal or failure's message, for a look at what the commands reached.
        line = next((l for l in err.splitlines() if "error" in l), err.strip()[-300:])
        with open(os.path.join(out, "errors.log"), "a") as f:
            f.write(f"#{k} exit {code}: {line[:400]}\n")
    subprocess.run(["rm", "-rf", wd])
    return k, code, hung, panic, took, args


t0 = time.monotonic()
hangs = panics = 0
exits = {}
slowest = (0, None)
with ThreadPoolExecutor(max_workers=jobs) as ex:
    for k, code, hung, panic, took, args in ex.map(run, range(n)):
        hangs += hung
        panics += panic
        exits[code] = exits.get(code, 0) + 1
        if took > slowest[0]:
            slowest = (took, args)
        if hung or panic:
            what = "HANG" if hung else "PANIC"
            print(f"{what} #{k} ({took:.1f}s): schedlab {' '.join(shlex.quote(a) for a in args)}", flush=True)
elapsed = time.monotonic() - t0
codes = " ".join(f"{'hung' if c is None else c}={v}" for c, v in sorted(exits.items(), key=lambda x: (x[0] is None, x[0] or 0)))
print(f"slowest: {slowest[0]:.1f}s: schedlab {' '.join(shlex.quote(a) for a in slowest[1] or [])}")
print(f"{n} commands in {elapsed:.0f} s: {hangs} hangs, {panics} panics; exits: {codes} (seed {seed}, files and reports in {out})")
sys.exit(1 if hangs or panics else 0)
PY
