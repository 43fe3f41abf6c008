#!/bin/bash
# Instructions per item (callgrind), for one build of weft:
#   icount.sh LIBWEFT_A INCLUDE_DIR
# prints chain, tree and wavefront (build + run + wait + destroy, per task:
# ab32.c of study 2026-11-29-issue32-ab, 10 rounds, two sizes), then the
# subflow fib per call, the condition loop per iteration and the chain's
# run per task (icount.sh of study 2026-11-29-issue35-subflow-perf).
set -e
lib=$1; inc=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cc -O2 -I"$inc" "$here/../2026-11-29-issue32-ab/ab32.c" "$lib" -lpthread -o "$work/ab32"
ic() {
    valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$work/cg.out" "$@" > /dev/null 2>&1
    awk '/^totals/ {print $2}' "$work/cg.out" | head -1
}
c1=$(ic "$work/ab32" chain 1024 10); c2=$(ic "$work/ab32" chain 2048 10)
t1=$(ic "$work/ab32" tree 1023 10); t2=$(ic "$work/ab32" tree 2047 10)
w1=$(ic "$work/ab32" wavefront 32 10); w2=$(ic "$work/ab32" wavefront 45 10)
python3 -c "print('build+run+destroy per task: chain %.1f tree %.1f wavefront %.1f' % (($c2-$c1)/10240, ($t2-$t1)/10240, ($w2-$w1)/((45*45-32*32)*10)))"
bash "$here/../2026-11-29-issue35-subflow-perf/icount.sh" "$lib" "$inc"
rm -rf "$work"
