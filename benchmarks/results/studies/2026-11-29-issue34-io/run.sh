#!/bin/sh
# Issue 34 (persistent registration, descriptor calls): the figures of
# README.md. A: a release build of main before the change; B: one after.
#
#   run.sh A_BUILD B_BUILD OUT_DIR
#
# 1. strace -c -f of echo_server (1,000 connections x 20 round trips, both
#    sides in one process, 2 workers), A then B: system calls per round trip.
# 2. echo_server in-process, A and B alternating, 5 runs each, with the
#    process's CPU time (/usr/bin/time): A's echo_server has no CPU column.
# 3. benchmarks/bench_echo.sh on B (1,000 connections x 50 round trips,
#    2 workers): weft, thread-per-connection and libuv servers, same clients.
# 4. bench_io's pipe ping-pong on B, 5 repetitions, interleaved at random.
set -eu
a=${1:?usage: run.sh A_BUILD B_BUILD OUT_DIR}
b=${2:?}
out=${3:?}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
lscpu | grep 'Model name' > "$out/machine.txt"
nproc >> "$out/machine.txt"
for v in A B; do
    [ $v = A ] && d=$a || d=$b
    strace -c -f -o "$out/strace_$v.txt" "$d/examples/echo_server" 1000 20 1024 2 0 > /dev/null
done
: > "$out/inprocess.txt"
for run in 1 2 3 4 5; do
    for v in A B; do
        [ $v = A ] && d=$a || d=$b
        /usr/bin/time -f "cpu_s %U %S" "$d/examples/echo_server" 1000 50 1024 2 0 2>&1 | tr '\n' ' ' | sed "s|^|$v |" >> "$out/inprocess.txt"
        echo >> "$out/inprocess.txt"
    done
done
sh "$here/../../../bench_echo.sh" "$b" 1000 50 1024 2 > "$out/bench_echo.txt" 2>&1
"$b/benchmarks/bench_io" --benchmark_filter=pipe --benchmark_repetitions=5 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
    > "$out/pipe_pingpong.txt" 2>&1
