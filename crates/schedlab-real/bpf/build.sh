#!/usr/bin/env bash
# Rebuild the BPF objects (wakeups.bpf.o, record.bpf.o) from their C sources, or only those
# named (build.sh record). Needs clang and libbpf's headers (apt-get install clang libbpf-dev).
# The objects are committed, so building schedlab needs neither; run this after changing a C
# source and commit both.
set -euo pipefail
cd "$(dirname "$0")"
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(wakeups record)
for n in "${names[@]}"; do
  clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I/usr/include/"$(uname -m)"-linux-gnu \
    -Wall -Werror -c "$n.bpf.c" -o "$n.bpf.o"
  # The debug sections other than BTF are not needed to load it.
  llvm-strip -g "$n.bpf.o" 2>/dev/null || true
  ls -l "$n.bpf.o"
done
