#!/usr/bin/env python3
"""summarize.py RUN.tsv: the README's tables from run.py's lines. A
cell's figure is the median of its process medians (ms per round); a
ratio is peer / weft between two such medians of the same run (> 1: weft
ahead). The summary: per row and thread count, weft's C API (weft) and
weft.hpp (weft_cpp) against Taskflow and oneTBB; the fib forms; the
task group fib (row fibgroup: weft_group and weft::task_group against
Taskflow's TaskGroup and oneTBB's task_group); then
every cell with its range, process count and the 1-minute load average's
range over its processes."""
import collections, statistics, sys

d = collections.defaultdict(list)
load = collections.defaultdict(list)
rows, cells = [], collections.defaultdict(list)
for line in open(sys.argv[1]):
    row, rep, cell, t, v, ld = line.rstrip("\n").split("\t")[:6]
    if row not in rows:
        rows.append(row)
    if cell not in cells[row]:
        cells[row].append(cell)
    d[(row, cell, t)].append(float(v))
    load[(row, cell, t)].append(float(ld))
med = {k: statistics.median(v) for k, v in d.items()}


def ratio(row, peer, base, t):
    a, b = med.get((row, peer, t)), med.get((row, base, t))
    return "%.2fx" % (a / b) if a and b else "-"


def ms(x):
    return "-" if x is None else "%.0f" % x if x >= 100 else "%.1f" % x if x >= 10 else "%.2f" % x


print("### Summary (ratio = peer / weft, > 1: weft ahead; ms per round)\n")
print("| row | T | weft ms | weft_cpp ms | Taskflow / weft | Taskflow / weft_cpp | oneTBB / weft | oneTBB / weft_cpp |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for row in rows:
    for t in ("1", "2"):
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row, t, ms(med.get((row, "weft", t))), ms(med.get((row, "weft_cpp", t))),
            ratio(row, "taskflow", "weft", t), ratio(row, "taskflow", "weft_cpp", t),
            ratio(row, "oneTBB", "weft", t), ratio(row, "oneTBB", "weft_cpp", t)))
if "fib" in rows:
    print("\n### fib, form against form (ratio = peer / weft form)\n")
    print("| T | Taskflow join / weft_join | Taskflow sum / weft | Taskflow sum / weft_cpp | Taskflow TaskGroup / weft | oneTBB task_group / weft |")
    print("|---|---:|---:|---:|---:|---:|")
    for t in ("1", "2"):
        print("| %s | %s | %s | %s | %s | %s |" % (
            t, ratio("fib", "taskflow", "weft_join", t), ratio("fib", "taskflow_sum", "weft", t),
            ratio("fib", "taskflow_sum", "weft_cpp", t), ratio("fib", "taskflow_tg", "weft", t),
            ratio("fib", "oneTBB", "weft", t)))
if "fibgroup" in rows:
    print("\n### fib as a task group, group against group (ratio = peer / weft face)\n")
    print("| T | weft group ms | weft::task_group ms | oneTBB task_group / weft group | oneTBB task_group / weft::task_group "
          "| Taskflow TaskGroup / weft group | Taskflow TaskGroup / weft::task_group |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for t in ("1", "2"):
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            t, ms(med.get(("fibgroup", "weft", t))), ms(med.get(("fibgroup", "weft_cpp", t))),
            ratio("fibgroup", "oneTBB", "weft", t), ratio("fibgroup", "oneTBB", "weft_cpp", t),
            ratio("fibgroup", "taskflow", "weft", t), ratio("fibgroup", "taskflow", "weft_cpp", t)))
print("\n### Every cell (ms per round: median of the process medians, range, processes, load)\n")
print("| row | T | cell | median | range | n | load |")
print("|---|---|---|---:|---|---:|---|")
for row in rows:
    for t in ("1", "2"):
        for c in cells[row]:
            v = d.get((row, c, t))
            if v:
                ld = load[(row, c, t)]
                print("| %s | %s | %s | %s | %s-%s | %d | %.0f-%.0f |" % (
                    row, t, c, ms(med[(row, c, t)]), ms(min(v)), ms(max(v)), len(v), min(ld), max(ld)))
