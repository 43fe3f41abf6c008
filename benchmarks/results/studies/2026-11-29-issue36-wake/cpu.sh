#!/bin/bash
# cpu.sh R T prog...: task-clock ns/trip, cs/trip, syscalls/trip, medians over R alternating runs
R=$1; T=$2; shift 2
for r in $(seq $R); do for p in "$@"; do
 perf stat -x, -e task-clock,context-switches,raw_syscalls:sys_enter ./$p $T 5000 1 2>&1 >/dev/null | awk -F, -v p=$p '/task-clock/{c=$1*1e6/10000} /context-sw/{s=$1/10000} /raw_sysc/{y=$1/10000} END{print p, c, s, y}'
done; done | python3 -c '
import sys, statistics as st
d = {}
for l in sys.stdin:
    p, *v = l.split(); d.setdefault(p, []).append([float(x) for x in v])
for p, rows in d.items():
    print("%-8s cpu %5.0f ns  cs %.2f  syscalls %.2f per trip" % (p, *[st.median(c) for c in zip(*rows)]))'
