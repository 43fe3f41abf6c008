# medians.py cells.tsv: the median of each cell's processes, and the
# ratios other / branch (> 1: the branch is faster).
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, c, t, v = line.split("\t")
    d[(c, int(t))].append(float(v))
for t in sorted({t for _, t in d}):
    print("threads %d (ns per iteration: median, min-max, processes)" % t)
    for (c, tt), v in sorted(d.items()):
        if tt == t:
            print("  %-17s %8.2f  %7.2f-%-7.2f n=%d" % (c, statistics.median(v), min(v), max(v), len(v)))
    for base, others in (("branch_weft", ("main_weft", "tbb_flow", "taskflow", "branch_chain2")),
                         ("branch_weft_self", ("main_weft_self", "taskflow_self"))):
        b = statistics.median(d[(base, t)])
        for o in others:
            print("  %s / %s: %.2fx" % (o, base, statistics.median(d[(o, t)]) / b))
