#!/bin/sh
# minimake -j 64 against make -j 64 and ninja -j 64 on the same generated
# project (issue 34, item 5): 500 targets, target i depending on targets
# i - 64 and i - 97 (when they exist), so the build runs in waves of up to
# 64 commands. Two command sets: `sleep 0.01` (64 commands in flight: is
# the tool's -j real?) and `true` (the per-command overhead: spawn, wait,
# scheduling). No target makes a file, so every run builds everything, in
# all three tools. minimake runs on its default scheduler (one worker per
# CPU: 2 on the CI machine); each command is started off the worker
# (weft_proc_spawn) and awaited with weft_pid_wait_for.
#
# Each tool runs 5 times per command set, the three alternating within
# each round; medians (and each run) are printed, with ratios against
# make and ninja measured in the same rounds. make and ninja are Debian
# packages (make, ninja-build: tools/build.sh installs them).
#
#   benchmarks/bench_minimake.sh BUILD_DIR [targets [jobs [rounds]]]
#                                           defaults: 500 64 5
set -eu
build=${1:?usage: bench_minimake.sh BUILD_DIR [targets [jobs [rounds]]]}
n=${2:-500}
jobs=${3:-64}
rounds=${4:-5}
exe=$(cd "$build" && pwd)/examples/minimake
[ -x "$exe" ] || { echo "bench_minimake: no $exe (build the examples)" >&2; exit 2; }
command -v make >/dev/null || { echo "bench_minimake: no make (apt-get install -y make)" >&2; exit 2; }
command -v ninja >/dev/null || { echo "bench_minimake: no ninja (apt-get install -y ninja-build)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# gen CMD: Makefile (make and minimake read the same text) and build.ninja.
gen() {
    cmd=$1
    {
        printf 'all:'
        i=0; while [ $i -lt "$n" ]; do printf ' t%d' $i; i=$((i + 1)); done
        echo
        i=0
        while [ $i -lt "$n" ]; do
            deps=""
            [ $i -ge 64 ] && deps="$deps t$((i - 64))"
            [ $i -ge 97 ] && deps="$deps t$((i - 97))"
            printf 't%d:%s\n\t%s\n' $i "$deps" "$cmd"
            i=$((i + 1))
        done
    } > "$dir/Makefile"
    {
        printf 'rule r\n  command = %s\n' "$cmd"
        i=0
        while [ $i -lt "$n" ]; do
            deps=""
            [ $i -ge 64 ] && deps="$deps t$((i - 64))"
            [ $i -ge 97 ] && deps="$deps t$((i - 97))"
            printf 'build t%d: r%s\n' $i "$deps"
            i=$((i + 1))
        done
        printf 'build all: phony'
        i=0; while [ $i -lt "$n" ]; do printf ' t%d' $i; i=$((i + 1)); done
        printf '\ndefault all\n'
    } > "$dir/build.ninja"
}

now() { date +%s%N; }
median() { sort -n | sed -n "$(( (rounds + 1) / 2 ))p"; }
ms() { t0=$(now); "$@" >/dev/null 2>&1 || { echo "bench_minimake: failed: $*" >&2; exit 1; }; t1=$(now); echo $(((t1 - t0) / 1000000)); }

echo "minimake vs make vs ninja: $n targets, -j $jobs, $(nproc) CPUs" \
     "($(lscpu | sed -n 's/^Model name: *//p')); medians of $rounds, alternating"
for cmd in "sleep 0.01" "true"; do
    gen "$cmd"
    : > "$dir/mm"; : > "$dir/mk"; : > "$dir/nj"
    r=0
    while [ $r -lt "$rounds" ]; do
        (cd "$dir" && ms "$exe" -j "$jobs" Makefile) >> "$dir/mm"
        (cd "$dir" && ms make -s -j "$jobs" -f Makefile) >> "$dir/mk"
        rm -f "$dir/.ninja_log" "$dir/.ninja_deps"
        (cd "$dir" && ms ninja -j "$jobs") >> "$dir/nj"
        r=$((r + 1))
    done
    mm=$(median < "$dir/mm"); mk=$(median < "$dir/mk"); nj=$(median < "$dir/nj")
    echo "commands '$cmd':"
    echo "  minimake -j $jobs: $mm ms   (runs: $(tr '\n' ' ' < "$dir/mm"))"
    echo "  make -j $jobs:     $mk ms   (runs: $(tr '\n' ' ' < "$dir/mk"))"
    echo "  ninja -j $jobs:    $nj ms   (runs: $(tr '\n' ' ' < "$dir/nj"))"
    echo "  minimake / make = $(awk "BEGIN { printf \"%.2f\", $mm / $mk }")," \
         "minimake / ninja = $(awk "BEGIN { printf \"%.2f\", $mm / $nj }") (below 1: minimake faster)"
done
