#!/bin/bash
# Instructions per item (callgrind), for one build of weft:
#   icount.sh LIBWEFT_A INCLUDE_DIR
# Builds the three programs against the library given and prints
#   subflow fib: per call (fib(16) - fib(12), divided by the calls added)
#   condition loop: per iteration (2000 - 1000 iterations)
#   chain: per task (2000 - 1000 tasks)
# all at 0 workers (this thread bound), the second run counted.
set -e
lib=$1; inc=$2
here=$(cd "$(dirname "$0")" && pwd)
old=$here/../2026-11-29-issue35-subflow
work=$(mktemp -d)
cc -O2 -I"$inc" "$old/subflow_fib_icount.c" "$lib" -lpthread -o "$work/fib"
cc -O2 -I"$inc" "$old/condloop_icount.c" "$lib" -lpthread -o "$work/cond"
cc -O2 -I"$inc" "$here/chain_icount.c" "$lib" -lpthread -o "$work/chain"
ic() {   # VAR prog value
    env "$1=$3" valgrind --tool=callgrind --collect-atstart=no \
        --callgrind-out-file="$work/cg.$2.$3" "$work/$2" > /dev/null 2>&1
    awk '/^totals/ {print $2}' "$work/cg.$2.$3"
}
a=$(ic N fib 12); b=$(ic N fib 16)
python3 -c "
def c(n): return 1 if n < 2 else 1 + c(n - 1) + c(n - 2)
print('subflow fib, per call:', round(($b - $a) / (c(16) - c(12)), 1))"
a=$(ic ITERS cond 1000); b=$(ic ITERS cond 2000)
python3 -c "print('condition loop, per iteration:', ($b - $a) / 1000)"
a=$(ic N chain 1000); b=$(ic N chain 2000)
python3 -c "print('chain, per task:', ($b - $a) / 1000)"
rm -rf "$work"
