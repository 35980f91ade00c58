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
