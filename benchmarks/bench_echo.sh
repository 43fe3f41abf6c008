#!/bin/sh
# Echo server at 1,000 connections: weft tasks (each connection a task
# blocking in weft_fd_wait_for) against a thread per connection on each side
# with blocking sockets, in the same run, on the same machine.
#
#   benchmarks/bench_echo.sh BUILD_DIR [conns [rounds [size]]]
#                                       defaults: 1000 50 1024
#
# Each mode runs 5 times, alternating (take the medians); every line shows round trips per second, MB/s
# and the 50th and 99th percentile round trip. BUILD_DIR is a release
# build with examples (examples/echo_server).
set -eu
build=${1:?usage: bench_echo.sh BUILD_DIR [conns [rounds [size]]]}
conns=${2:-1000}
rounds=${3:-50}
size=${4:-1024}
exe=$build/examples/echo_server
[ -x "$exe" ] || { echo "bench_echo: no $exe (build the examples)" >&2; exit 2; }
for run in 1 2 3 4 5; do
    "$exe" "$conns" "$rounds" "$size" auto 0
    "$exe" "$conns" "$rounds" "$size" auto 1
done
