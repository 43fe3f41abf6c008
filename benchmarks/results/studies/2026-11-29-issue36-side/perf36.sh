#!/bin/bash
# perf36.sh BIN: kernel round trips behind the rows where weft is behind
# or level: each program once under `perf stat`, T=2, one untimed and one
# timed round; per unit (cycle, round trip, task): CPU time of the whole
# process (task-clock, ns), context switches, futex calls.
BIN=$1
cell() {   # LABEL UNITS PROGRAM ARGS...
    local label=$1 units=$2; shift 2
    perf stat -x, -e task-clock,context-switches,syscalls:sys_enter_futex "$BIN/$@" 2>&1 >/dev/null |
        awk -F, -v l="$label" -v u="$units" '
            /task-clock/ {cpu = $1 * 1e6 / u} /context-switches/ {cs = $1 / u} /sys_enter_futex/ {fx = $1 / u}
            END {printf "%-22s cpu %9.0f ns  cs %6.2f  futex %6.2f  per unit\n", l, cpu, cs, fx}'
}
for t in 1 2; do
    cell "rw T=$t weft" 10000 w_rw $t 5000 1
    cell "rw T=$t weft_bound" 10000 w_rw $t 5000 1 bound
    cell "rw T=$t taskflow" 10000 tf_rw $t 5000 1
    cell "rw T=$t scheduling" 10000 sc_rw $t 5000 1
    cell "rw T=$t oneTBB" 10000 tbb_rw $t 5000 1
    cell "pin T=$t weft" 10000 w_pin $t 5000 1
    cell "pin T=$t enkiTS" 10000 en_pin $t 5000 1
    cell "spawn T=$t weft_bound" 2000000 w_spawn $t 1000000 1 bound
    cell "spawn T=$t enkiTS" 2000000 en_spawn $t 1000000 1
    cell "spawn T=$t oneTBB" 2000000 tbb_spawn $t 1000000 1
done
