#!/bin/bash
# ab.sh OUT REPS T CELL...: runs every CELL ("name:command") once per
# repetition, in turn, REPS times, at nice -15 (the machine is shared: the
# other processes keep running at their priority), under `perf stat`.
# Appends one line per process to OUT: repetition, cell, T, the program's
# figure (the last field it prints: its median ns per task), the task-clock
# of the whole process (ms), the 1-minute load average.
OUT=$1; REPS=$2; T=$3; shift 3
ERR=$(mktemp)
for r in $(seq 1 "$REPS"); do
    for c in "$@"; do
        name=${c%%:*}; cmd=${c#*:}
        line=$(nice -n -15 perf stat -x, -e task-clock $cmd 2>"$ERR")
        tc=$(awk -F, '/task-clock/{print $1}' "$ERR")
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$name" "$T" "$(echo "$line" | awk '{print $NF}')" "$tc" \
            "$(cut -d' ' -f1 /proc/loadavg)" >> "$OUT"
    done
done
rm -f "$ERR"
