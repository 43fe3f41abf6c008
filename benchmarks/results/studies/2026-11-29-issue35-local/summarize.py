# summarize.py RUN.tsv: medians over repetitions of each cell's wall ms and CPU ms per round, and the ratios.
import sys, statistics as st, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
d = collections.defaultdict(lambda: {"ms": [], "cpu": [], "load": []})
for rep, cell, T, ms, cpu, load in rows:
    d[(cell, int(T))]["ms"].append(float(ms)); d[(cell, int(T))]["cpu"].append(float(cpu)); d[(cell, int(T))]["load"].append(float(load))
med = {k: (st.median(v["ms"]), st.median(v["cpu"]), min(v["load"]), max(v["load"]), len(v["ms"])) for k, v in d.items()}
print("| cell | T | wall ms | CPU ms / round | load | n |\n|---|---|---:|---:|---|---:|")
for (cell, T), (ms, cpu, l0, l1, n) in sorted(med.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print("| %s | %d | %.2f | %.2f | %.1f-%.1f | %d |" % (cell, T, ms, cpu, l0, l1, n))
pairs = [("main_sum", "branch_sum", "main / branch, sum form"), ("main_join", "branch_join", "main / branch, join"),
         ("main_cpp", "branch_cpp", "main / branch, weft.hpp sum form"),
         ("taskflow_join", "branch_join", "Taskflow join / branch join"), ("taskflow_join", "main_join", "Taskflow join / main join"),
         ("taskflow_sum", "branch_sum", "Taskflow sum / branch sum"), ("taskflow_sum", "main_sum", "Taskflow sum / main sum"),
         ("taskflow_sum", "branch_cpp", "Taskflow sum / branch weft.hpp")]
print("\n| ratio | T = 1 CPU | T = 1 wall | T = 2 CPU | T = 2 wall |\n|---|---:|---:|---:|---:|")
for a, b, label in pairs:
    cells = []
    for T in (1, 2):
        if (a, T) in med and (b, T) in med:
            cells += ["%.2fx" % (med[(a, T)][1] / med[(b, T)][1]), "%.2fx" % (med[(a, T)][0] / med[(b, T)][0])]
        else:
            cells += ["-", "-"]
    print("| %s | %s |" % (label, " | ".join(cells)))
