#!/bin/sh
# Echo servers at 1,000 connections, in the same run, on the same machine,
# alternating, 5 runs each (medians printed at the end):
#
#   weft/both       examples/echo_server's weft mode: server and clients
#                   tasks of one scheduler (each connection a task in
#                   weft_fd_read_for / weft_fd_write_all_for)
#   threads/both    the same exchange with a thread per connection on each
#                   side and blocking sockets
#   weft/server     echo_server's weft server alone (WORKERS workers), ...
#   threads/server  ... its thread-per-connection server alone, ...
#   uv/server       ... and benchmarks/echo_uv (libuv, one loop), if built,
#                   each serving the same clients: echo_server's weft
#                   clients in a process of their own (WORKERS workers).
#
#   benchmarks/bench_echo.sh BUILD_DIR [conns [rounds [size [workers]]]]
#                                       defaults: 1000 50 1024 2
#
# Every run prints round trips per second, MB/s, the 50th and 99th
# percentile round trip and the CPU time (user + system) per round trip
# of the process (with a server alone, also the server's own); the
# summary gives each mode's medians. On a machine shared with other load,
# CPU per round trip is the steadier figure: a thread per connection gets
# the kernel's share of a thousand threads, a scheduler that of its
# workers. BUILD_DIR
# is a release build with examples (examples/echo_server) and benchmarks
# (benchmarks/echo_uv, built where libuv1-dev is installed).
set -eu
build=${1:?usage: bench_echo.sh BUILD_DIR [conns [rounds [size [workers]]]]}
conns=${2:-1000}
rounds=${3:-50}
size=${4:-1024}
workers=${5:-2}
exe=$build/examples/echo_server
uv=$build/benchmarks/echo_uv
[ -x "$exe" ] || { echo "bench_echo: no $exe (build the examples)" >&2; exit 2; }
[ -x "$uv" ] || { echo "bench_echo: no $uv (libuv1-dev missing): uv/server left out" >&2; uv=; }
out=$(mktemp)
portf=$(mktemp)
trap 'rm -f "$out" "$portf"' EXIT

# server MODE CMD...: starts a server, runs the clients against its port,
# waits for the server to exit; the clients' line is tagged MODE.
server() {
    mode=$1
    shift
    : > "$portf"
    "$@" > "$portf" &
    pid=$!
    while [ ! -s "$portf" ]; do sleep 0.05; done
    line=$("$exe" "$conns" "$rounds" "$size" "$workers" 0 "client:$(head -n 1 "$portf")")
    wait "$pid"
    echo "$mode $line, $(tail -n 1 "$portf")" | tee -a "$out"
}

for run in 1 2 3 4 5; do
    "$exe" "$conns" "$rounds" "$size" "$workers" 0 | sed 's|^|weft/both |' | tee -a "$out"
    "$exe" "$conns" "$rounds" "$size" "$workers" 1 | sed 's|^|threads/both |' | tee -a "$out"
    server weft/server "$exe" "$conns" "$rounds" "$size" "$workers" 0 serve
    server threads/server "$exe" "$conns" "$rounds" "$size" "$workers" 1 serve
    [ -z "$uv" ] || server uv/server "$uv" "$conns" "$rounds"
done

python3 - "$out" <<'EOF'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\S+) .*?([0-9.]+) round trips/s.*p50 ([0-9.]+) us p99 ([0-9.]+) us, '
                 r'cpu ([0-9.]+) us per round trip(?:, server cpu ([0-9.]+))?', line)
    if m:
        rows.setdefault(m.group(1), []).append(tuple(float(x or 'nan') for x in m.group(2, 3, 4, 5, 6)))
print("\nmedians of %s runs:" % ", ".join("%d %s" % (len(v), k) for k, v in rows.items()))
print("  %-15s %13s %11s %11s %10s %17s" % ("mode", "round trips/s", "p50 us", "p99 us",
                                           "cpu us/rt", "server cpu us/rt"))
for k, v in rows.items():
    med = [statistics.median(x[i] for x in v) for i in range(5)]
    print("  %-15s %13.0f %11.1f %11.1f %10.2f %17s" % (k, *med[:4],
          "-" if med[4] != med[4] else "%.2f" % med[4]))
EOF
