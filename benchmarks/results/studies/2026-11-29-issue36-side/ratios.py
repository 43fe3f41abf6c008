#!/usr/bin/env python3
"""ratios.py ROW BASE RUN.tsv...: one line per (T, peer) with the ratio
peer / BASE (medians of process medians) in each run given, and BASE's
own median (ns; row pp: not used). The README's summary tables."""
import collections, statistics, sys
row, base, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
med = []
cells = []
for fn in runs:
    d = collections.defaultdict(list)
    for line in open(fn):
        f = line.split("\t")
        if f[0] == row:
            d[(f[2], f[3])].append(float(f[4].replace("timeout>", "")))
            if f[2] not in cells:
                cells.append(f[2])
    med.append({k: statistics.median(v) for k, v in d.items()})
print("| T | peer | " + " | ".join("run %s" % fn.split("run")[-1].split(".")[0] for fn in runs) + " |")
print("|---|---|" + "---:|" * len(runs))
for t in ("1", "2"):
    b = ["%.0f ns" % m[(base, t)] if (base, t) in m else "-" for m in med]
    print("| %s | %s (ns) | %s |" % (t, base, " | ".join(b)))
    for c in cells:
        if c == base:
            continue
        r = ["%.2fx" % (m[(c, t)] / m[(base, t)]) if (c, t) in m and (base, t) in m else "-" for m in med]
        print("| %s | %s | %s |" % (t, c, " | ".join(r)))
