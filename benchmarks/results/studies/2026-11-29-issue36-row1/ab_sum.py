#!/usr/bin/env python3
"""ab_sum.py OUT: the cells of an ab_rw.sh run: median of the process
medians (range), and each peer's ratio to rwA and rwB (peer / weft, > 1:
weft ahead)."""
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
progs = list(dict.fromkeys(r[0] for r in rows))
load = [float(r[3]) for r in rows]
print("load %.1f-%.1f, %d repetitions" % (min(load), max(load), len([r for r in rows if r[0] == progs[0] and r[1] == "1"])))
for t in ("1", "2"):
    v = {p: [float(r[2]) for r in rows if r[0] == p and r[1] == t] for p in progs}
    med = {p: st.median(x) for p, x in v.items()}
    print("T=%s  " % t + "  ".join("%s %.0f (%.0f-%.0f)" % (p, med[p], min(v[p]), max(v[p])) for p in progs))
    for peer in (p for p in progs if not p.startswith("rw")):
        print("      %s/A %.2f  %s/B %.2f" % (peer, med[peer] / med["rwA"], peer, med[peer] / med["rwB"]))
