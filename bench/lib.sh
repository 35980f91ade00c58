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
