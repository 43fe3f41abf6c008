#!/usr/bin/env python3
"""med.py RUN.tsv...: per T and cell, the median of the process medians
(ns per task), their range, the median task-clock per process (ms), the
load; then each peer / weft (> 1: weft ahead)."""
import collections, statistics as st, sys
d = collections.defaultdict(lambda: ([], [], []))
for path in sys.argv[1:]:
    for l in open(path):
        r, n, t, w, tc, ld = l.rstrip("\n").split("\t")
        d[(t, n)][0].append(float(w)); d[(t, n)][1].append(float(tc)); d[(t, n)][2].append(float(ld))
for (t, n), (w, tc, ld) in sorted(d.items()):
    print("T=%s %-10s n=%2d  %6.1f ns/task (%.1f-%.1f)  cpu %5.0f ms/process  load %.0f-%.0f"
          % (t, n, len(w), st.median(w), min(w), max(w), st.median(tc), min(ld), max(ld)))
for t in sorted({k[0] for k in d}):
    cells = {n: st.median(v[0]) for (tt, n), v in d.items() if tt == t}
    for base in [b for b in cells if b.startswith("weft")]:
        print("T=%s vs %s: " % (t, base) + ", ".join("%s %.2fx" % (n, v / cells[base])
              for n, v in sorted(cells.items()) if n != base))
