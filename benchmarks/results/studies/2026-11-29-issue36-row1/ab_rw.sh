#!/bin/bash
# ab_rw.sh R OUT prog...: R repetitions, each running every prog once at
# T = 1, then every prog at T = 2 (one process per cell, alternating);
# each process: `prog T 10000 5` (one untimed, 5 timed rounds of 10^4 run
# + wait cycles; its median ns per cycle). Run in a folder holding the
# programs: rwA, rwB (the side study's w_rw.c against each libweft.a),
# tf_rw, sc_rw (its build.sh). OUT: prog, T, ns, 1-minute load.
R=$1; out=$2; shift 2; : > "$out"
for r in $(seq "$R"); do
    for t in 1 2; do
        for p in "$@"; do
            echo "$p $t $(./"$p" $t 10000 5 | awk '{print $NF}') $(cut -d' ' -f1 /proc/loadavg)" >> "$out"
        done
    done
done
python3 "$(dirname "$0")/ab_sum.py" "$out"
