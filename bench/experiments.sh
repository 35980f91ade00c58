#!/usr/bin/env bash
# Regenerates the tables of docs/experiments.md from their commands, or checks that they are
# what the current code prints.
#
#   bench/experiments.sh                  # run every block's commands and rewrite its output
#   bench/experiments.sh --check          # run them and compare; write nothing
#   bench/experiments.sh --only NAME      # only this block (repeatable, or --only NAME,NAME)
#   bench/experiments.sh --list           # the blocks' names, in the document's order
#
# A generated block in the document is
#
#   <!-- generated: NAME -->
#   ```sh
#   schedlab sweep ... --backend sim --seed 1 ...
#   ```
#
#   ```text
#   (what the commands print on stdout)
#   ```
#   <!-- end generated -->
#
# The sh block is what the reader sees and what runs: `bash -eo pipefail` in an empty temporary
# directory (but for `examples/`, a link to the repository's, so a block can run a workload file
# as a reader at the repository's root would), with this tree's release binary first on PATH as
# `schedlab`. The text block is
# replaced by the commands' stdout, trailing whitespace and trailing blank lines removed.
# Simulated runs are exact for a seed, so --check compares exactly; it exits 1 naming each block
# that differs and its first differing line. Real-kernel tables are not generated: they stay
# outside these markers, marked as measured by hand with their date.
#
# The blocks' simulated sweeps and runs use every CPU this process may run on (schedlab's
# --jobs default), with the same output as with --jobs 1; JOBS=N gives them N instead
# (JOBS=1: one at a time), by a wrapper that adds --jobs N to their command lines.
#
# SCHEDLAB=path/to/schedlab uses that binary instead of building this tree's.
# crates/schedlab/tests/experiments.rs checks a fast subset of the blocks in `cargo test`.
set -uo pipefail
cd "$(dirname "$0")/.."
doc=docs/experiments.md

check=0
list=0
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1 ;;
    --list) list=1 ;;
    --only)
      [ $# -ge 2 ] || { echo "experiments: --only needs a block name" >&2; exit 2; }
      IFS=, read -ra names <<<"$2"
      only+=("${names[@]}")
      shift
      ;;
    -h | --help)
      sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) echo "experiments: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One pass over the document. mode=extract writes NAME.sh (the commands) and NAME.old (the
# printed output) for every block, and the names in order to names; mode=rewrite prints the
# document with the output of every block that has a NAME.new replaced by it.
blocks_awk='
function fail(msg) { printf "%s:%d: %s\n", FILENAME, NR, msg > "/dev/stderr"; bad = 1; exit 1 }
function keep(line) { if (mode == "rewrite") print line }
BEGIN { state = 0 }
{
  line = $0
  if (state == 0) {
    if (line ~ /^<!-- generated: [A-Za-z0-9._-]+ -->$/) {
      name = line; sub(/^<!-- generated: /, "", name); sub(/ -->$/, "", name)
      if (name in seen) fail("block " name " appears twice")
      seen[name] = 1; state = 1
      if (mode == "extract") { print name > (dir "/names"); printf "" > (dir "/" name ".sh"); printf "" > (dir "/" name ".old") }
    } else if (line ~ /^[ \t]*<!-- *(end )?generated/) fail("malformed or unopened marker: " line)
    keep(line); next
  }
  if (state == 1) {
    if (line == "```sh") state = 2; else if (line != "") fail("block " name ": expected ```sh with its commands")
    keep(line); next
  }
  if (state == 2) {
    if (line == "```") state = 3; else if (mode == "extract") print line > (dir "/" name ".sh")
    keep(line); next
  }
  if (state == 3) {
    if (line == "```text") {
      state = 4; keep(line)
      new = dir "/" name ".new"
      replaced = 0
      if (mode == "rewrite" && (r = (getline l < new)) >= 0) {
        replaced = 1
        if (r > 0) { print l; while ((getline l < new) > 0) print l }
        close(new)
      }
    } else if (line != "") fail("block " name ": expected ```text with its output")
    else keep(line)
    next
  }
  if (state == 4) {
    if (line == "```") { state = 5; keep(line) }
    else {
      if (mode == "extract") print line > (dir "/" name ".old")
      if (!replaced) keep(line)
    }
    next
  }
  if (state == 5) {
    if (line == "<!-- end generated -->") state = 0; else if (line != "") fail("block " name ": expected <!-- end generated -->")
    keep(line); next
  }
}
END { if (!bad && state != 0) { printf "%s: block %s is not closed\n", FILENAME, name > "/dev/stderr"; exit 1 } }
'
awk -v mode=extract -v dir="$tmp" "$blocks_awk" "$doc" || exit 2
[ -s "$tmp/names" ] || { echo "experiments: no generated blocks in $doc" >&2; exit 2; }
mapfile -t all <"$tmp/names"

if [ "$list" = 1 ]; then
  printf '%s\n' "${all[@]}"
  exit 0
fi

selected=()
if [ ${#only[@]} -eq 0 ]; then
  selected=("${all[@]}")
else
  for n in "${only[@]}"; do
    [ -f "$tmp/$n.sh" ] || { echo "experiments: no block named '$n' in $doc (--list shows them)" >&2; exit 2; }
    selected+=("$n")
  done
fi

. bench/lib.sh
schedlab_bin || exit 2
bin=$tmp/bin
mkdir -p "$bin"
real_bin="$(cd "$(dirname "$SCHEDLAB")" && pwd)/$(basename "$SCHEDLAB")"
if [ -n "${JOBS:-}" ]; then
  whole_in_range bench/experiments.sh JOBS "$JOBS" 1 1024
  # `schedlab run|sweep ... --backend sim` gets --jobs N (build's option is --sim-jobs).
  cat >"$bin/schedlab" <<WRAP
#!/usr/bin/env bash
case "\$1 \$2 \$*" in
  "run build "*"--backend sim"* | "sweep build "*"--backend sim"*) exec "$real_bin" "\$@" --sim-jobs $JOBS ;;
  "run "*"--backend sim"* | "sweep "*"--backend sim"*) exec "$real_bin" "\$@" --jobs $JOBS ;;
  *) exec "$real_bin" "\$@" ;;
esac
WRAP
  chmod +x "$bin/schedlab"
else
  ln -s "$real_bin" "$bin/schedlab"
fi

# Output as the document keeps it: no trailing whitespace, no trailing blank lines.
normalize() { sed 's/[[:space:]]*$//' | awk 'NF { while (blank > 0) { print ""; blank-- } print; next } { blank++ }'; }

# The first line where two files differ, as "N<TAB>doc line<TAB>new line" (a missing line is "<none>").
first_diff() {
  awk 'NR == FNR { a[++n] = $0; next }
       { m++; if (m > n || a[m] != $0) { printf "%d\t%s\t%s\n", m, (m > n ? "<none>" : a[m]), $0; found = 1; exit } }
       END { if (!found && m < n) printf "%d\t%s\t%s\n", m + 1, a[m + 1], "<none>" }' "$1" "$2"
}

failed=0
start_all=$SECONDS
for n in "${selected[@]}"; do
  work=$tmp/work-$n
  mkdir -p "$work"
  ln -s "$PWD/examples" "$work/examples"
  start=$SECONDS
  if ! (cd "$work" && PATH="$bin:$PATH" bash -eo pipefail "$tmp/$n.sh" >"$tmp/$n.raw" 2>"$tmp/$n.err"); then
    echo "experiments: block $n: its commands failed:" >&2
    sed 's/^/  /' "$tmp/$n.err" >&2
    failed=1
    continue
  fi
  normalize <"$tmp/$n.raw" >"$tmp/$n.new"
  normalize <"$tmp/$n.old" >"$tmp/$n.cur"
  d=$(first_diff "$tmp/$n.cur" "$tmp/$n.new")
  if [ -z "$d" ]; then
    status="unchanged"
  elif [ "$check" = 1 ]; then
    IFS=$'\t' read -r line was now <<<"$d"
    echo "experiments: block $n differs from what the current code prints, first at line $line of its output:" >&2
    echo "  document: $was" >&2
    echo "  now:      $now" >&2
    failed=1
    status="DIFFERS"
  else
    status="regenerated"
  fi
  echo "experiments: $n: $status ($((SECONDS - start)) s)" >&2
done

# Blocks whose commands failed keep their old output.
if [ "$check" = 0 ]; then
  awk -v mode=rewrite -v dir="$tmp" "$blocks_awk" "$doc" >"$tmp/doc" || exit 2
  cmp -s "$tmp/doc" "$doc" || cp "$tmp/doc" "$doc"
fi
echo "experiments: ${#selected[@]} block(s) in $((SECONDS - start_all)) s" >&2
if [ "$failed" = 1 ]; then
  [ "$check" = 1 ] && echo "experiments: bench/experiments.sh --only NAME regenerates a block" >&2
  exit 1
fi
