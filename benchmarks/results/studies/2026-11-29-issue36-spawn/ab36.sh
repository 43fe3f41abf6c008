#!/bin/bash
# ab36.sh R "LABEL=COMMAND" ...: R rounds; each round runs every command
# once, in turn (one process per cell, alternating); each process prints
# its median ns per task last on its line. Prints per label the median
# of the process medians and the range.
R=$1; shift
out=$(mktemp)
for r in $(seq "$R"); do
    for cell in "$@"; do
        echo "${cell%%=*} $(${cell#*=} | awk '{print $NF}')" >> "$out"
    done
done
for cell in "$@"; do
    l=${cell%%=*}
    grep "^$l " "$out" | awk '{print $2}' | sort -n |
        awk -v l="$l" '{a[NR]=$1} END{printf "%-14s median %7.1f  range %.1f-%.1f  (n=%d)\n", l, a[int((NR+1)/2)], a[1], a[NR], NR}'
done
rm -f "$out"
