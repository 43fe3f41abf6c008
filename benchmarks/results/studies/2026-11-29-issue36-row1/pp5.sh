#!/bin/bash
# pp5.sh N OUT prog...: row 5: a shell busy loop on one core for the whole
# run; N repetitions, each running every prog once with the event (e) and
# channel (c) ping-pong of 10^5 round trips (the side study's w_pp.c);
# OUT: prog, kind, seconds (killed at 60 s: "timeout"), 1-minute load.
# Then per cell: median, worst, worst / median.
N=$1; out=$2; shift 2; : > "$out"
sh -c 'while :; do :; done' & busy=$!
for r in $(seq "$N"); do
    for k in e c; do
        for p in "$@"; do
            v=$(timeout 60 ./"$p" "$k" 100000 | awk '{print $NF}')
            echo "$p $k ${v:-timeout} $(cut -d' ' -f1 /proc/loadavg)" >> "$out"
        done
    done
done
kill "$busy"
python3 - "$out" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
for cell in dict.fromkeys((r[0], r[1]) for r in rows):
    v = [float(r[2]) if r[2] != "timeout" else 60.0 for r in rows if (r[0], r[1]) == cell]
    m = st.median(v)
    print("%s %s: median %.3f s, worst %.3f, worst/median %.1f, best %.3f, n %d" % (cell + (m, max(v), max(v) / m, min(v), len(v))))
print("load %s-%s" % (min(r[3] for r in rows), max(r[3] for r in rows)))
PY
