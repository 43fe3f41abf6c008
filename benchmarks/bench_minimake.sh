#!/bin/sh
# minimake -j 64 against make -j 64 on the same generated project: 500
# targets whose commands sleep 10 ms, target i depending on targets
# i - 64 and i - 97 (when they exist), so the build runs in waves of up
# to 64 commands. minimake runs on its default scheduler (one worker per
# CPU: 2 on the CI machine) and awaits each command with weft_pid_wait_for,
# so 64 commands are in flight on 2 workers, as with make. Each tool runs
# 5 times, alternating; the medians are printed. GNU make comes with
# build-essential (tools/build.sh installs it).
#
#   benchmarks/bench_minimake.sh BUILD_DIR [targets [sleep_s [jobs]]]
#                                           defaults: 500 0.01 64
set -eu
build=${1:?usage: bench_minimake.sh BUILD_DIR [targets [sleep_s [jobs]]]}
n=${2:-500}
secs=${3:-0.01}
jobs=${4:-64}
exe=$build/examples/minimake
[ -x "$exe" ] || { echo "bench_minimake: no $exe (build the examples)" >&2; exit 2; }
command -v make >/dev/null || { echo "bench_minimake: no make (apt-get install -y make)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
{
    printf 'all:'
    i=0; while [ $i -lt "$n" ]; do printf ' t%d' $i; i=$((i + 1)); done
    echo
    i=0
    while [ $i -lt "$n" ]; do
        deps=""
        [ $i -ge 64 ] && deps="$deps t$((i - 64))"
        [ $i -ge 97 ] && deps="$deps t$((i - 97))"
        printf 't%d:%s\n\tsleep %s\n' $i "$deps" "$secs"
        i=$((i + 1))
    done
} > "$dir/Makefile"
cp "$dir/Makefile" "$dir/Makefile.mm"
now() { date +%s%N; }
median() { sort -n | sed -n 3p; }
: > "$dir/mm"; : > "$dir/mk"
for run in 1 2 3 4 5; do
    t0=$(now); (cd "$dir" && "$exe" -j "$jobs" Makefile.mm >/dev/null); t1=$(now)
    echo $(((t1 - t0) / 1000000)) >> "$dir/mm"
    t0=$(now); (cd "$dir" && make -s -j "$jobs" -f Makefile >/dev/null); t1=$(now)
    echo $(((t1 - t0) / 1000000)) >> "$dir/mk"
done
echo "minimake vs make: $n targets x sleep $secs s, -j $jobs, $(nproc) CPUs; medians of 5:"
echo "  minimake -j $jobs: $(median < "$dir/mm") ms   (runs: $(tr '\n' ' ' < "$dir/mm"))"
echo "  make -j $jobs:     $(median < "$dir/mk") ms   (runs: $(tr '\n' ' ' < "$dir/mk"))"
