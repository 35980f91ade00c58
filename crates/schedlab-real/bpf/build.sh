#!/usr/bin/env bash
# Rebuild wakeups.bpf.o from wakeups.bpf.c. Needs clang and libbpf's headers
# (apt-get install clang libbpf-dev). The object is committed, so building schedlab needs
# neither; run this after changing the C source and commit both.
set -euo pipefail
cd "$(dirname "$0")"
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I/usr/include/"$(uname -m)"-linux-gnu \
  -Wall -Werror -c wakeups.bpf.c -o wakeups.bpf.o
# The debug sections other than BTF are not needed to load it.
llvm-strip -g wakeups.bpf.o 2>/dev/null || true
ls -l wakeups.bpf.o
