#!/usr/bin/env python3
"""abtable.py RUN.tsv: ab.py's lines as tables: every cell's median of
process medians (ms per round), range, load and median process CPU
seconds; then each weft build against both peers (peer / weft, > 1: weft
ahead), both faces, by wall and by process CPU."""
import collections, statistics, sys

d, load, cpu, cells = collections.defaultdict(list), collections.defaultdict(list), collections.defaultdict(list), []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    row, rep, cell, t, v, ld = f[:6]
    if len(f) > 7:
        cpu[(cell, t)].append(float(f[7]))
    if cell not in cells:
        cells.append(cell)
    d[(cell, t)].append(float(v))
    load[(cell, t)].append(float(ld))
med = {k: statistics.median(v) for k, v in d.items()}
mcpu = {k: statistics.median(v) for k, v in cpu.items()}
print("| T | cell | median ms | range | n | load | process CPU s |\n|---|---|---:|---|---:|---|---:|")
for t in ("1", "2"):
    for c in cells:
        v = d[(c, t)]
        print("| %s | %s | %.2f | %.2f-%.2f | %d | %.1f-%.1f | %s |" % (
            t, c, med[(c, t)], min(v), max(v), len(v), min(load[(c, t)]), max(load[(c, t)]),
            "%.3f" % mcpu[(c, t)] if (c, t) in mcpu else "-"))

def r(a, b, m):
    return "%.2fx" % (m[a] / m[b]) if a in m and b in m else "-"


print("\n| T | weft cell | oneTBB / it | Taskflow / it | oneTBB / it, CPU | Taskflow / it, CPU |\n|---|---|---:|---:|---:|---:|")
for t in ("1", "2"):
    for c in cells:
        if c.startswith("weft"):
            print("| %s | %s | %s | %s | %s | %s |" % (t, c, r(("oneTBB", t), (c, t), med), r(("taskflow", t), (c, t), med),
                                                     r(("oneTBB", t), (c, t), mcpu), r(("taskflow", t), (c, t), mcpu)))
