#!/usr/bin/env python3
"""summarize.py RUN.tsv...: the tables of README.md from run.py's lines.
Rows rw, pin, spawn, cond: per thread count, each cell's median of the
process medians, their range and count, and the ratio peer / weft (> 1:
weft ahead); rw, spawn and cond give it against weft with the main thread bound (one
of the T threads, as enkiTS's thread 0 and the OpenMP and oneTBB
waiters) and never bound (T workers, as Taskflow's, scheduling's and
marl's). Row pp: median, worst and worst / median of the 20 processes.
The load column: the 1-minute load average's range over the cell's
processes."""
import collections, statistics, sys

UNIT = {"rw": "ns per cycle", "pin": "ns per round trip", "spawn": "ns per task (spawn + wait)",
        "cond": "ns per iteration", "pp": "s per process (10^5 round trips)"}
BASE = {"rw": ["weft", "weft_bound"], "pin": ["weft"], "spawn": ["weft_bound", "weft_plain"],
        "cond": ["weft", "weft_bound"]}
d = collections.defaultdict(list)
load = collections.defaultdict(list)
idle = []
order = collections.OrderedDict()
for fn in sys.argv[1:]:
    for line in open(fn):
        f = line.rstrip("\n").split("\t")
        if f[0] == "idle":
            idle.append(f)
            continue
        row, rep, cell, t, v, ld = f[:6]
        order.setdefault((row, cell), None)
        v = float(v.replace("timeout>", ""))
        d[(row, cell, t)].append(v)
        load[(row, cell, t)].append(float(ld))

def fmt(x):
    return "%.0f" % x if x >= 100 else "%.2f" % x if x < 10 else "%.1f" % x

for row in ("rw", "pin", "spawn", "cond"):
    cells = [c for (r, c) in order if r == row]
    if not cells:
        continue
    base = BASE[row]
    print("\n### %s (%s; ratio = peer / %s)\n" % (row, UNIT[row], " and ".join(base)))
    print("| T | cell | median | range | n | load | " + " | ".join("/ " + b for b in base) + " |")
    print("|---|---|---:|---|---:|---|" + "---:|" * len(base))
    for t in ("1", "2"):
        for c in cells:
            v = d.get((row, c, t))
            if not v:
                continue
            m = statistics.median(v)
            ratios = []
            for b in base:
                if (row, b, t) not in d:
                    ratios.append("")
                    continue
                bm = statistics.median(d[(row, b, t)])
                ratios.append("" if c in base else "%.2fx" % (m / bm))
            ld = load[(row, c, t)]
            print("| %s | %s | %s | %s-%s | %d | %.0f-%.0f | %s |" % (
                t, c, fmt(m), fmt(min(v)), fmt(max(v)), len(v), min(ld), max(ld), " | ".join(ratios)))
pp = [c for (r, c) in order if r == "pp"]
if pp:
    print("\n### pp (%s, busy loop on one core)\n" % UNIT["pp"])
    print("| cell | median | worst | worst / median | best | n | load |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for c in pp:
        v = d[("pp", c, "2")]
        m = statistics.median(v)
        ld = load[("pp", c, "2")]
        print("| %s | %.3f | %.3f | %.1f | %.3f | %d | %.0f-%.0f |" % (
            c, m, max(v), max(v) / m, min(v), len(v), min(ld), max(ld)))
for f in idle:
    print("idle:", " ".join(f[1:]))
