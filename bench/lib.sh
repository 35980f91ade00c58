# Shell helpers the bench scripts share; sourced (`. bench/lib.sh` from the repository's root),
# not run.

# median: the median of the numbers on standard input, one a line (the mean of the middle two
# for an even count; 0 for none).
median() {
  sort -g | awk 'NF { a[++n] = $1 } END {
    if (n == 0) print 0
    else if (n % 2) print a[(n + 1) / 2]
    else print (a[n / 2] + a[n / 2 + 1]) / 2
  }'
}

# load1: the 1-minute load average, for the line each timing script prints with its figures.
load1() { cut -d' ' -f1 /proc/loadavg; }

# whole_in_range SCRIPT NAME VALUE LO HI: unless VALUE is a whole number in LO..HI, say so,
# naming the script and the argument, and exit 2.
whole_in_range() {
  case $3 in
    '' | *[!0-9]*) echo "$1: $2 must be a whole number $4..$5, not '$3'" >&2; exit 2 ;;
  esac
  if [ "$3" -lt "$4" ] || [ "$3" -gt "$5" ]; then
    echo "$1: $2 must be $4..$5, not $3" >&2
    exit 2
  fi
}

# schedlab_bin: SCHEDLAB as given, or this tree's release binary, built first (returns the
# build's failure, for the caller's `|| exit N`).
schedlab_bin() {
  if [ -z "${SCHEDLAB:-}" ]; then
    cargo build --release -q -p schedlab || return
    SCHEDLAB=$PWD/target/release/schedlab
  fi
}

# rtapp_measure_ns DIR: rt-app's loop in ns, as its own passes on CPU 0 took it
# (bench/rtapp.py nsloop): prints "WHOLE FRACTION"; rt-app's output is kept in DIR/nsloop.out
# for the caller's error. SCHED_FIFO (root), so that the passes' wall time is the loop's own
# even while other work shares the CPU (SCHED_OTHER there measured 37-93 ns for a loop of 21).
rtapp_measure_ns() {
  local d="$1/nsloop"
  rm -rf "$d" && mkdir -p "$d"
  cat >"$1/nsloop.json" <<EOF
{ "global": { "duration": 5, "calibration": 20, "logdir": "$d", "log_basename": "rt-app",
              "ftrace": false, "gnuplot": false },
  "tasks": { "ns": { "loop": 1, "cpus": [0], "policy": "SCHED_FIFO", "priority": 10,
                     "phases": { "p": { "loop": 40, "run": 5000, "sleep": 1000 } } } } }
EOF
  rt-app "$1/nsloop.json" >"$d.out" 2>&1 && python3 bench/rtapp.py nsloop "$d"
}
