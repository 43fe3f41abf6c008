# summ.py RUN.tsv: medians, ranges and ratios of measure.py's lines.
import sys, statistics as st, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
d = collections.defaultdict(lambda: ([], [], []))
for rep, cell, T, ms, cpu, load in rows:
    d[(cell, int(T))][0].append(float(ms)); d[(cell, int(T))][1].append(float(cpu)); d[(cell, int(T))][2].append(float(load))
print("| cell | T | n | wall ms (median) | range | CPU ms/round (median) | range | load |")
print("|---|---|---:|---:|---|---:|---|---|")
for (c, T), (ms, cpu, ld) in sorted(d.items(), key=lambda x: (x[0][1], x[0][0])):
    print("| %s | %d | %d | %.2f | %.2f-%.2f | %.2f | %.2f-%.2f | %.0f-%.0f |" % (c, T, len(ms), st.median(ms), min(ms), max(ms), st.median(cpu), min(cpu), max(cpu), min(ld), max(ld)))
def m(c, T, i): return st.median(d[(c, T)][i])
print()
for T in (1, 2):
    for a, b in (("main", "branch"), ("taskflow_join", "branch"), ("taskflow_join", "main"), ("main_sum", "branch_sum"), ("taskflow_sum", "branch_sum")):
        if (a, T) in d and (b, T) in d:
            print("T=%d %s / %s: wall %.2fx  CPU %.2fx" % (T, a, b, m(a, T, 0) / m(b, T, 0), m(a, T, 1) / m(b, T, 1)))
